/* synth_internal.h — shared by the files of src/synth: the deterministic random generator, small
 * histograms (value -> count) and the count model's layout. */
#ifndef ETK_SYNTH_INTERNAL_H
#define ETK_SYNTH_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "etkit/synth.h"

/* xoshiro-like splitmix64 stream: deterministic across platforms */
typedef struct srng {
    uint64_t s;
} srng;
static inline uint64_t srng_next(srng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline double srng_unit(srng *r) { return (double)(srng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static inline uint32_t srng_below(srng *r, uint32_t n) { return n ? (uint32_t)(srng_unit(r) * n) % n : 0; }

/* A sparse histogram: distinct keys (ascending) with counts. */
typedef struct shist {
    uint32_t n, cap;
    uint64_t total;
    uint32_t *key;
    uint32_t *cnt;
} shist;
int shist_add(shist *h, uint32_t key, uint32_t cnt); /* ETK_ENOMEM or 0 */
/* a key drawn in proportion to its count; `dflt` when empty */
uint32_t shist_draw(const shist *h, srng *r, uint32_t dflt);
uint32_t shist_mode(const shist *h, uint32_t dflt);
void shist_free(shist *h);

/* context buckets of the layer-size table */
#define SYN_POS_BUCKETS 8
#define SYN_SIZE_CAP 4096
/* bin codes per attribute: the B + 1 quantile edges (tokens.c bin_of) */
#define SYN_BIN_CODES (ETK_SYNTH_N_BINS + 1) /* previous layer sizes above this share one context */
#define SYN_SCALE_CLASSES 64 /* per-graph attribute scale classes (about 5 graphs each for the 320 of the corpus) */

struct etk_synth_model {
    uint32_t n_graphs;
    shist layer_count;                  /* layers per graph */
    /* layer size given (position bucket, previous size), with back-off to the previous size and
     * to the position: contexts are kept as parallel arrays */
    uint32_t n_ctx, cap_ctx;
    uint32_t *ctx_key;                  /* pos * (SYN_SIZE_CAP + 1) + min(prev, cap); prev + BIG for prev-only */
    shist *ctx_hist;
    shist size_pos[SYN_POS_BUCKETS];
    shist size_all;
    uint32_t tok_given_parent[ETK_SYNTH_N_TOKENS + 1][ETK_SYNTH_N_TOKENS]; /* row N: sources */
    uint32_t tok_marginal[ETK_SYNTH_N_TOKENS];
    shist indeg[ETK_SYNTH_N_TOKENS];    /* in-degree given token (layers > 0) */
    shist dist[ETK_SYNTH_N_TOKENS];     /* parent-layer distance of the extra parents */
    shist bins[ETK_SYNTH_N_TOKENS];     /* joint attribute bin code given token */
    double edges[ETK_SYNTH_N_TOKENS][ETK_SYNTH_N_ATTR][ETK_SYNTH_N_BINS + 1]; /* quantile edges */
    /* the attribute scale (docs/synth.md "Attribute scale"): every training graph's scale
     * statistic (the mean quantile bin of its nodes' attribute values) cut at its 1/64 ... 63/64
     * quantiles over the graphs into SYN_SCALE_CLASSES classes; bin codes given (class, token) */
    double scut[SYN_SCALE_CLASSES - 1];
    uint32_t scale_graphs[SYN_SCALE_CLASSES]; /* training graphs per class (the sampling marginal) */
    shist sbins[SYN_SCALE_CLASSES][ETK_SYNTH_N_TOKENS];
    shist world, inner;                 /* world sizes and inner-group sizes seen */
    uint32_t n_wl;
    uint64_t *wl;                       /* sorted WL hashes of the training graphs */
    struct syn_layerdag *ld;            /* the LayerDAG model (NULL: count baseline only) */
};

/* context lookup (creates when `create`): NULL when absent */
shist *syn_ctx(etk_synth_model *m, uint32_t key, int create);
const shist *syn_ctx_find(const etk_synth_model *m, uint32_t key);
uint32_t syn_ctx_key(uint32_t pos, uint32_t prev);
uint32_t syn_pos_bucket(uint32_t l, uint32_t n_layers);
/* joint bin code of a node's attribute values, and values drawn inside a code's bins */
uint32_t syn_bin_code(const etk_synth_model *m, int tok, const double *val);
void syn_bin_values(const etk_synth_model *m, int tok, uint32_t code, srng *r, double *val);
/* the attribute scale: a graph's statistic (mean bin index of its nodes' carried attributes,
 * 0 .. ETK_SYNTH_N_BINS), its class, a class drawn from the training marginal, and the bin-code
 * table of a token given a class (-1: none; back-off to the token's pooled table when the class
 * never saw the token) */
double syn_scale_stat(const etk_synth_model *m, const etk_synth_graph *g);
int syn_scale_class(const etk_synth_model *m, double stat);
int syn_scale_draw(const etk_synth_model *m, srng *r);
const shist *syn_attr_table(const etk_synth_model *m, int tok, int scale);
/* allocate an empty graph of n nodes and e edges */
etk_synth_graph *syn_graph_alloc(uint32_t n, uint32_t e);
int syn_wl_rejected(const etk_synth_model *m, uint64_t h);
/* forward pair k (0 <= k < n(n-1)/2) of the order (0,1), (0,2), (1,2), (0,3), ... (random DAGs) */
void syn_pair_of(uint64_t k, uint32_t *p, uint32_t *c);

#endif
