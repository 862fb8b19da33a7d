/* etkit/compute.h — the compute model: the time of one GPU kernel (a COMP node) from what the
 * op is, on a cluster's GPU. It replaces the plain roofline (etk_hw_compute_ns) in the simulator
 * when etk_sim_opts.compute is set (the commands set it unless --efficiency, --astra-compat or
 * --compute roofline is given). docs/compute-model.md gives the formulas and where every default
 * comes from.
 *
 *   GEMM (M, N, K):  t = max(FLOPs / (peak * gemm_eff * h / (h + gemm_half_dim)),
 *                            bytes / (HBM * mem_eff)) + launch
 *                    with the shape measure h = 1 / (1/M + 1/N + 1/K) (small or skinny GEMMs
 *                    have a small h and do not reach peak)
 *   elementwise / normalization (memory-bound):  t = bytes / (HBM * mem_eff) + launch
 *                    (over attention scores, attn_scores: HBM * score_mem_eff)
 *   FP8 GEMM (precision: "fp8"):  the same at the FP8 peak with fp8_gemm_eff and
 *                    fp8_gemm_half_dim (without a shape, h = 2/3 num_ops / tensor_size: the
 *                    inputs are 1-byte elements)
 *   attention (FlashAttention-style fused kernel):  t = max(FLOPs / (peak * eff),
 *                    bytes / (HBM * mem_eff)) + launch, FLOPs = 4 b s^2 heads d (forward,
 *                    halved when causal: the kernel skips masked blocks; backward 2.5x the
 *                    forward), eff = attn_eff (attn_bwd_eff backward) times s/(s + attn_half_seq)
 *                    (over attn_ref_seq/(attn_ref_seq + attn_half_seq) when that is set) and (d/(d + attn_half_dim)) / (128/(128 + attn_half_dim)) where the shape
 *                    is known; attention runs at the BF16 peak under FP8 plans.
 *                    A sliding window w (attn_window, causal): the kernel computes the
 *                    etk_window_tiles(s, w, ETK_ATTN_TILE) tiles of ETK_ATTN_TILE^2 pairs
 *                    (FLOPs scaled from the node's 2 x window pairs), at the efficiency of
 *                    s_eq = 2 ETK_ATTN_TILE tiles / ceil(s / ETK_ATTN_TILE) (at most s): the
 *                    causal length whose mean key tiles per query tile are the window's
 *
 * What an op is comes from node attributes when present (op_kind, gemm_m/n/k, attn_*); without
 * them (real traces, the generator's nodes) the op is classified from num_ops and tensor_size:
 * with 2-byte elements a GEMM's FLOPs per byte are exactly h, so h = num_ops / tensor_size, and
 * an op with h below gemm_min_dim is memory-bound. */
#ifndef ETKIT_COMPUTE_H
#define ETKIT_COMPUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "etkit/et.h"
#include "etkit/net.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum etk_op_kind {
    ETK_OP_AUTO = 0,        /* classify from FLOPs and bytes */
    ETK_OP_GEMM = 1,
    ETK_OP_ELEMENTWISE = 2, /* elementwise, normalization, softmax, dropout: memory-bound */
    ETK_OP_ATTENTION = 3,   /* fused FlashAttention-style attention */
} etk_op_kind;

typedef struct etk_op_desc {
    int kind;               /* etk_op_kind */
    uint64_t flops;         /* num_ops */
    uint64_t bytes;         /* tensor_size: bytes read + written */
    int64_t m, n, k;        /* GEMM shape (0: unknown; then h = flops / bytes) */
    int64_t attn_b, attn_s, attn_heads, attn_d; /* attention shape (0: use flops) */
    bool attn_causal;
    int64_t attn_window;    /* a causal sliding window of this many keys (attribute attn_window,
                               0: none): FLOPs given as twice the window's query-key pairs (the
                               s^2 convention), timed at the (ETK_ATTN_TILE)^2 tiles the kernel
                               computes, at the efficiency of the sequence whose causal kernel
                               does as many tiles per query block */
    bool attn_bwd;          /* backward pass (2.5x the forward FLOPs) */
    bool attn_scores;       /* memory-bound op over attention scores (unfused softmax, dropout
                               over b x heads x s^2 elements): timed at score_mem_eff */
    bool grouped;           /* a grouped GEMM over experts (attribute gemm_grouped): its shape
                               measure is one group's, timed with grouped_gemm_half_dim */
    bool fp8;               /* a GEMM run in FP8 (attribute precision: "fp8"): the FP8 peak at
                               fp8_gemm_eff, fp8_gemm_half_dim */
    int prec_plus1;         /* ETK_PREC_* + 1 of another precision the node names (attribute
                               precision: "bf16", "fp16", "fp32", "tf32"; live mode's cuBLAS calls):
                               that peak instead of the cluster's; 0: the cluster's precision */
    bool wgrad;             /* a grouped GEMM's weight gradient (attribute gemm_wgrad): FP8, it
                               takes grouped_fp8_wgrad_factor times as long */
} etk_op_desc;

typedef struct etk_compute_params {
    double gemm_eff;         /* fraction of the dense peak a large GEMM reaches, (0, 1] */
    double gemm_half_dim;    /* shape measure h at which a GEMM reaches half of gemm_eff */
    double gemm_min_dim;     /* ops with h below this are memory-bound (AUTO classification) */
    double mem_eff;          /* fraction of the HBM bandwidth memory-bound kernels reach, (0, 1] */
    double score_mem_eff;    /* the same for memory-bound ops over attention scores, (0, 1] */
    double attn_eff;         /* fraction of the dense peak a fused attention kernel reaches */
    double launch_ns;        /* per-kernel overhead (launch latency and ramp) */
    double overlap_slowdown; /* compute that starts while a transfer of its rank is in flight
                                takes (1 + overlap_slowdown) times longer (>= 0) */
    double fp8_gemm_eff;     /* fraction of the FP8 peak a large FP8 GEMM reaches, [0, 1]
                                (0: gemm_eff) */
    double fp8_gemm_half_dim; /* gemm_half_dim of FP8 GEMMs */
    double attn_bwd_eff;     /* attn_eff of the attention backward kernel (0: attn_eff) */
    double attn_half_seq;    /* sequence length at which attention reaches half of attn_eff
                                (0: no dependence on the length) */
    double grouped_gemm_half_dim; /* gemm_half_dim of grouped expert GEMMs */
    double attn_half_dim;    /* head dimension d: efficiency scales as d/(d + attn_half_dim),
                                relative to d = 128 (0: no dependence) */
    double attn_ref_seq;     /* the sequence length attn_eff holds at: with attn_half_seq the
                                factor is s/(s + half) over ref/(ref + half) (0: absolute) */
    double grouped_fp8_wgrad_factor; /* an FP8 grouped GEMM's weight gradient (gemm_wgrad: the
                                experts' wgrad, scaled along the token dimension) takes this
                                times the time of its forward at the same FLOPs (0: 1) */
    double host_op_ns;       /* the host (CPU) thread's cost to issue one kernel (eager PyTorch:
                                the Python op, dispatcher, Transformer Engine and launch), ns;
                                each GPU node of a rank is issued in trace order by one host
                                thread at this cost (times its host_ops attribute, default 1) and
                                cannot start before; a node marked host_sync makes the host wait
                                for its completion (the MoE token-count copy). 0: the host is
                                always ahead (CUDA graphs; the simulator's old behaviour) */
} etk_compute_params;

/* FlashAttention's tile (query and key block), for sliding windows: FA2/FA3 tiles are 64-192
 * queries by 64-176 keys by head dimension; 128 x 128 taken for both. */
#define ETK_ATTN_TILE 128

/* The documented defaults for a GPU (by its preset name; unknown GPUs get the A100 figures). */
void etk_compute_defaults(const etk_gpu *gpu, etk_compute_params *out);
/* Check every field; the message names the field and the expected range. */
int etk_compute_check(const etk_compute_params *p, etk_error *err);
/* Set one parameter by name ("gemm_eff", ...) from text; for --compute-param NAME=VALUE.
 * etk_compute_set_value: the same from a name and a number (a GPU YAML's compute: mapping).
 * The one table of names and ranges; p is unchanged on error. */
int etk_compute_set(etk_compute_params *p, const char *name_eq_value, etk_error *err);
int etk_compute_set_value(etk_compute_params *p, const char *name, double value, etk_error *err);
/* The accepted parameter names, comma-separated ("gemm_eff, gemm_half_dim, ..."). */
const char *etk_compute_param_names(void);
/* The value of one parameter by name (the names etk_compute_set accepts). */
int etk_compute_get(const etk_compute_params *p, const char *name, double *out, etk_error *err);
/* Describe a trace node as an op: attributes op_kind ("gemm" | "elementwise" | "attention"),
 * gemm_m/gemm_n/gemm_k, attn_b/attn_s/attn_heads/attn_d, attn_causal, attn_bwd, attn_scores; flops and bytes
 * as given (already scaled by the caller). */
void etk_compute_op_from_node(const etk_node *e, uint64_t flops, uint64_t bytes, etk_op_desc *op);
/* Kernel time in ns on c's GPU at c's precision (UINT64_MAX if it overflows). */
uint64_t etk_compute_op_ns(const etk_cluster *c, const etk_compute_params *p, const etk_op_desc *op);
/* The resolved kind of an op (AUTO classified), for reports and tests. */
int etk_compute_op_kind(const etk_compute_params *p, const etk_op_desc *op);

#ifdef __cplusplus
}
#endif
#endif
