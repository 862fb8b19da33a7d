/* etkit/model.h — transformer models for trace synthesis: named presets with their published
 * dimensions (presets/models/<name>.yaml, embedded), overrides, and the symbolic tensor graph of
 * the model's blocks (presets/models/blocks/<arch>.yaml: ops over named dimensions with shapes
 * as expressions over the model symbols). gen/ lowers that graph under a parallel plan.
 *
 * Model symbols usable in block files: batch (sequences per micro-batch), seq, hidden, heads,
 * kv_heads, ffn, vocab, layers. */
#ifndef ETKIT_MODEL_H
#define ETKIT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etk_model {
    char name[64];
    char arch[16];   /* "gpt" or "llama": selects presets/models/blocks/<arch>.yaml */
    int64_t layers, hidden, heads, kv_heads, ffn, vocab, seq;
    char source[256]; /* where the dimensions were published */
} etk_model;

/* A built-in preset by name ("llama2-7b", "gpt3-175b", ...). ETK_ENOTFOUND lists the names. */
int etk_model_preset(const char *name, etk_model *out, etk_error *err);
/* A model file in the preset format (YAML: name, arch, layers, hidden, heads, kv_heads, ffn,
 * vocab, seq). */
int etk_model_parse(const char *text, size_t len, const char *fname, etk_model *out, etk_error *err);
int etk_model_load(const char *path, etk_model *out, etk_error *err);
/* Names of the built-in presets in file-name order; returns their count (writes at most cap). */
size_t etk_model_preset_names(const char **names, size_t cap);
/* Positive dimensions, heads divide hidden, kv_heads divide heads, known arch. */
int etk_model_check(const etk_model *m, etk_error *err);

/* ---------- symbolic tensor graph ---------- */
typedef struct etk_graph etk_graph; /* layout in src/model/graph.h (used by gen/) */

/* Load the block graph of m's arch with every dimension evaluated for m and `batch` sequences
 * per micro-batch. Errors name the block file, the op and the field. */
int etk_graph_load(const etk_model *m, int64_t batch, etk_graph **out, etk_error *err);
void etk_graph_free(etk_graph *g);

/* Parameter count of the whole model, summed over the weights of the block graph (embedding,
 * `layers` transformer layers, head; tied weights counted once). */
int etk_model_params(const etk_model *m, uint64_t *out, etk_error *err);

#ifdef __cplusplus
}
#endif
#endif
