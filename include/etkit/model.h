/* etkit/model.h — transformer models for trace synthesis: named presets with their published
 * dimensions (presets/models/<name>.yaml, embedded), overrides, and the symbolic tensor graph of
 * the model's blocks (presets/models/blocks/<arch>.yaml: ops over named dimensions with shapes
 * as expressions over the model symbols). gen/ lowers that graph under a parallel plan.
 *
 * Model symbols usable in block files: batch (sequences per micro-batch), seq, hidden, heads,
 * kv_heads, head_dim, ffn, vocab, layers; mixture of experts: experts, topk, shared_experts, moe_ffn,
 * capacity (tokens each expert processes per micro-batch: ceil(cf * batch * seq * topk /
 * experts), cf = capacity_factor or 1 when 0); multi-head latent attention: q_lora, kv_lora,
 * qk_nope, qk_rope, v_head. */
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
    char arch[16];   /* "gpt", "llama", "qwen2", "neox", "moe", "moe-shared" or "deepseek":
                      * selects presets/models/blocks/<arch>.yaml */
    int64_t layers, hidden, heads, kv_heads, ffn, vocab, seq;
    int64_t head_dim; /* per-head dimension when not hidden / heads (Qwen3, Mistral); 0: hidden / heads */
    /* mixture of experts (experts == 0: dense). ffn is the FFN of dense layers; moe_ffn the
     * intermediate size of one expert; the first dense_layers layers are dense (DeepSeek's
     * first_k_dense_replace). capacity_factor 0: no token dropping (capacity = mean load). */
    int64_t experts, topk, shared_experts, moe_ffn, dense_layers;
    double capacity_factor;
    /* multi-head latent attention (arch deepseek): ranks of the query and key/value
     * compressions, per-head dims of the non-rotary and rotary query/key parts and of values */
    int64_t q_lora, kv_lora, qk_nope, qk_rope, v_head;
    bool tie_embeddings; /* the output layer is the token embedding table (Hugging Face
                          * tie_word_embeddings, preset key tie_embeddings): one weight, counted
                          * and reduced once; blocks whose head has its own table use the
                          * embedding's instead */
    int64_t max_positions; /* context the model supports (max_position_embeddings), 0: unknown;
                            * a Hugging Face config trains at seq = min(4096, this) by default */
    /* sliding-window attention (0: none): a sliding layer's query i attends to keys
     * max(0, i - window + 1) .. i. Layer l slides when window > 0, l >= window_from and, with
     * window_period > 0, bit (l - window_from) % window_period of window_mask is set (period 0:
     * every layer from window_from on). etk_model_layer_sliding applies the rule. */
    int64_t window, window_from;
    uint32_t window_period;  /* 0..64 */
    uint64_t window_mask;
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
 * `layers` transformer layers (the first dense_layers of them from the block file's
 * dense_layer section when it has one), head; tied weights counted once). */
int etk_model_params(const etk_model *m, uint64_t *out, etk_error *err);
/* Parameters used per token: as etk_model_params, but weights over the expert dimension `e`
 * count topk/experts of their elements (the routed experts a token visits). */
int etk_model_active_params(const etk_model *m, uint64_t *out, etk_error *err);
/* KV-cache bytes per token of context over all layers at `bytes` per element (inference):
 * 2 * layers * kv_heads * head_dim * bytes (keys and values of every KV head), or for MLA
 * (arch deepseek) layers * (kv_lora + qk_rope) * bytes: the compressed latent and the shared
 * rotary key, which is all MLA caches (DeepSeek-V2 paper, section 2.1.4). */
uint64_t etk_model_kv_bytes_per_token(const etk_model *m, int bytes);
/* Whether layer l (0-based) of m uses sliding-window attention. */
bool etk_model_layer_sliding(const etk_model *m, int64_t l);
/* Sliding layers among layers [lo, lo + n). */
int64_t etk_model_sliding_layers(const etk_model *m, int64_t lo, int64_t n);
/* Query-key pairs a causal sliding window of w keys attends over a sequence of s: query i sees
 * min(i + 1, w) keys, so w s - w (w - 1) / 2 for s >= w (s (s + 1) / 2 when w >= s). */
double etk_window_pairs(int64_t s, int64_t w);
/* The (query block, key block) tiles of size blk x blk a FlashAttention kernel computes for a
 * causal window w over s (blocks wholly outside the window skipped): with n = ceil(s / blk),
 * k = ceil((w - 1) / blk) and i0 = min(n, k): i0 (i0 + 1) / 2 + (n - i0) (k + 1). */
double etk_window_tiles(int64_t s, int64_t w, int64_t blk);
/* KV-cache bytes of a context of `tokens` tokens over all layers (etk_model_kv_bytes_per_token
 * per token), a sliding layer holding at most `window` of them. */
uint64_t etk_model_kv_bytes(const etk_model *m, int bytes, int64_t tokens);
/* Tokens one expert processes per micro-batch of `batch` sequences (the `capacity` symbol):
 * ceil(cf * batch * seq * topk / experts), cf = capacity_factor (1 when 0); 0 for dense models. */
int64_t etk_model_capacity(const etk_model *m, int64_t batch);

#ifdef __cplusplus
}
#endif
#endif
