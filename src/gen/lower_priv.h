/* lower_priv.h — private to lowering (src/gen/lower*.c). Module map (arrows point down):
 *   lower.c       etk_lower_section: walks a section's ops forward, then backward; saved bytes
 *   lower_fwd.c   the forward pass of one op (also recompute)
 *   lower_bwd.c   the backward pass of one op, gradients summed per tensor
 *   lower_cp.c    CP all-gathers and ring, attention regions, MoE routing and EP all-to-alls
 *   lower_emit.c  instructions, tensor sizes per rank, layout conversions
 * lower -> (lower_fwd, lower_bwd) -> lower_cp -> lower_emit. */
#ifndef ETK_GEN_LOWER_PRIV_H
#define ETK_GEN_LOWER_PRIV_H
#include <stdbool.h>
#include <stdint.h>

#include "gen/lower.h"
#include "etkit/gen.h"

#define EXPERT_DIM ('e' - 'a')   /* block files name the expert dimension 'e' */
/* Transformer Engine's FP8 casts (delayed scaling: the amax is taken during the cast): every
 * cast reads the 2-byte tensor and writes the 1-byte FP8 copy and its 1-byte transpose (the
 * other operand layout of a backward GEMM): 4 bytes per element. */
#define FP8_CAST_BYTES 4
#define CAPACITY_DIM ('c' - 'a') /* and the tokens per expert 'c' */

typedef struct {
    int8_t split;  /* dimension letter split over TP, -1: none */
    bool partial;
} lay;

static const lay REP = {-1, false};

static inline bool lay_eq(lay a, lay b) { return a.split == b.split && a.partial == b.partial; }

#define MAX_CONV 4
typedef struct {
    int32_t inst;   /* producer instruction, DEP_IN, or NONE */
    lay L;
    int nconv;
    lay cto[MAX_CONV];
    int32_t cinst[MAX_CONV];
} tstate;

#define NONE (-100)
#define ERRV (-1000) /* emit failed: ctx.rc holds the error */
#define MAX_CONTRIB 8

typedef struct {
    int n;
    int32_t inst[MAX_CONTRIB];
    lay L[MAX_CONTRIB];
} contrib;

/* --tp-comm-overlap: a weight gradient GEMM held back until the reduce-scatter of its op's input
 * gradient is issued (Transformer Engine's bulk overlap of that reduce-scatter with wgrad) */
typedef struct {
    int j, ngo;
    int32_t go[MAX_CONTRIB * 2];
    int32_t av, aglast;
    uint64_t bytes;
    uint8_t fp8, grouped;
} tpwgrad;

typedef struct {
    const etk_graph *g;
    const gsection *S;
    const glower_opts *o;
    etk_arena *a;
    gprog *p;
    etk_error *err;
    bool full;           /* full recompute of this section */
    bool selective;
    uint32_t rmods;      /* recompute modules of this section (not with full recompute) */
    lay stream;
    tstate *ts[2];       /* [0] forward, [1] recompute */
    int *prod_op;        /* tensor -> op index producing it, -1 */
    /* per op, per input: layout consumed, instruction giving that version (per pass), whether
     * it came through an all-gather of a split source */
    lay (*used)[G_MAX_IN];
    int32_t (*uinst[2])[G_MAX_IN];
    bool (*via_ag)[G_MAX_IN];
    lay *outL;
    contrib *grad;       /* per tensor */
    int rc;
    int32_t *regather;   /* per tensor: bwd all-gather of a saved sharded tensor */
    int32_t *cpg[2];     /* per tensor, per pass: its CP all-gather (K, V), NONE */
    bool (*cpmark)[G_MAX_IN]; /* per op, per input: consumed CP-gathered */
    bool *fp8done[3];    /* per tensor, per pass (forward, recompute, backward): cast to FP8 already
                          * (by an earlier GEMM reading it in the layout fp8L: Megatron's fused QKV
                          * and fc1 read one cast copy) */
    lay *fp8L[3];
    int32_t **ring[3];   /* --cp-comm ring, per pass (forward, recompute, backward), per tensor: the
                          * instructions holding K/V block r = 0..cp-1 ([0] the rank's own), NULL */
    int8_t *ringk;       /* per tensor: its index among the circulated tensors (tags), -1 */
    int nring;
    int64_t rows;        /* glower_opts.routed: the routed token rows b s topk (0: capacity model) */
    double experts_read; /* glower_opts.routed: expected distinct experts of this rank selected */
    double wscale;       /* glower_opts.window with flash: the attention region's FLOPs times this
                          * (2 etk_window_pairs(t, window) / t^2), else 1 */
    double *fflops;      /* per op: forward FLOPs per rank (the fused attention sums its region's) */
    int32_t fz_deps[G_MAX_IN * 8 + 8]; /* --attention flash: dependencies of the region's fused node */
    int fz_nd;
    int32_t *fz_blk[G_MAX_IN * 2]; /* and, with --cp-comm ring, the K/V blocks it works through */
    int fz_nblk;
    int32_t **tpag[2];   /* --tp-comm-overlap, per pass (forward, recompute), per tensor: its TP
                          * all-gather in chunks ([0] the local shard, [1..tp-1] the chunks), NULL */
    tpwgrad *tpw;        /* --tp-comm-overlap: held-back weight gradients (one per op at most) */
    int ntpw;
} ctx;

const char *low_shortname(const char *n);
int64_t low_tp_of(const ctx *c);
bool low_has_dim(const gtensor *t, int d);
int64_t low_t_elems(const ctx *c, int t);
int64_t low_elems_rank(const ctx *c, int t, lay L);
uint64_t low_loss_bytes(const ctx *c, const gop *op, lay L, bool bwd);
lay low_weight_lay(const ctx *c, int t);
int low_emit(ctx *c, const char *name, int type, int phase, int ndeps, const int32_t *deps);
int low_coll_for(lay a, lay b);
int32_t low_convert(ctx *c, int t, lay a, lay b, int phase, const char *prefix, int ndeps,
                    const int32_t *deps, int forced_coll);
int32_t low_convert_fwd(ctx *c, int pass, int t, lay want, int phase);
int32_t *low_tp_ag_chunks(ctx *c, const char *prefix, int t, int phase, int ndeps, const int32_t *deps);
int32_t low_tp_rs_chunks(ctx *c, const char *prefix, int t, int phase, const int32_t *gemm);
uint64_t low_chunk_u64(uint64_t total, int64_t n, int64_t r);
uint64_t low_tp_chunk_bytes(uint64_t total, uint64_t wbytes, int64_t n, int64_t r);
int low_tp_flush_wgrad(ctx *c, int t);
bool low_token_share(const ctx *c, int s, const gtensor *O);
lay low_einsum_lay_c(const ctx *c, lay LP, lay LQ, const gtensor *O);
double low_matmul_flops(const ctx *c, const gop *op, lay LA, lay LB);
lay low_resolve_default(const ctx *c, int t);
void low_routing(ctx *c);
bool low_is_dispatch(const ctx *c, const gop *op);
bool low_is_moe_dispatch(const ctx *c, const gop *op);
bool low_is_combine_in(const ctx *c, const gop *op, int i);
int32_t low_ep_a2a(ctx *c, const char *what, int t, lay L, int phase, int ndeps, const int32_t *deps);
bool low_needs_cp(const ctx *c, const gop *op, int i);
int64_t low_key_seq_factor(const ctx *c, const gop *op, int i);
int32_t low_cp_gather(ctx *c, int pass, int t, int32_t d, lay L, int phase);
int32_t low_ring_p2p(ctx *c, const char *name, bool send, int64_t bytes, int32_t tag, int phase, int ndeps,
                     const int32_t *deps);
int32_t low_ring_tag(ctx *c, int t, int64_t r, int kind);
int32_t *low_cp_ring(ctx *c, int pass, int t, int32_t local, lay L, int phase, int kind, int nfirst,
                     const int32_t *first);
void low_region_span(const ctx *c, int j, int *lo, int *hi);
bool low_region_input(const ctx *c, int k, int i, int lo, int hi);
uint64_t low_region_in_bytes(const ctx *c, int lo, int hi, bool whole);
uint64_t low_region_lse_bytes(const ctx *c, int lo, int hi);
uint64_t low_region_out_bytes(const ctx *c, int hi);
bool low_is_causal(const ctx *c);
void low_attn_shape(const ctx *c, int lo, bool ring, int64_t *s, int64_t *d);
int low_lower_op_fwd(ctx *c, int pass, int j, int phase);
void low_add_contrib(ctx *c, int t, int32_t inst, lay L);
int low_get_grad(ctx *c, int t, int32_t *out, lay *L);
int low_lower_op_bwd(ctx *c, int j);

/* op re-run in the recompute pass: full recompute, the selective attention region, or an op of
 * a --recompute-modules module */
static inline bool low_recomputed(const ctx *c, const gop *op)
{
    return c->full || (c->selective && op->region) || (op->rmod & c->rmods);
}

/* lower_fwd.c: an FP8 GEMM (a weight GEMM outside attention and the head, --precision fp8) */
bool low_fp8_gemm(const ctx *c, const gop *op);

#endif
