/* lower.h — a section of the block graph (embedding, transformer layer, head) lowered under a
 * TP degree, sequence parallelism and recompute policy into a program of node templates for one
 * micro-batch (forward, recompute, backward). Private to gen/. */
#ifndef ETK_GEN_LOWER_H
#define ETK_GEN_LOWER_H
#include "model/graph.h"

enum { P_FWD = 0, P_RECOMP = 1, P_BWD = 2, P_OPT = 3 /* optimizer step: not model FLOPs */ };
#define DEP_IN (-1)   /* the section input (forward) */
#define DEP_GRAD (-2) /* the gradient of the section output (backward) */
#define GRP_TP 0
#define GRP_CP 1
#define GRP_EP 2
/* SEND/RECV peers of the CP ring (ginst.peer) */
#define PEER_CP_NEXT 1
#define PEER_CP_PREV 2

typedef struct ginst {
    const char *name;   /* "fc1", "fc1.dgrad", "xn1.all_gather", ... */
    uint8_t type;       /* ETK_NODE_COMP, ETK_NODE_COLL, or ETK_NODE_SEND/RECV (CP ring) */
    uint8_t coll;       /* etk_coll_type */
    uint8_t phase;      /* P_* */
    uint8_t fp8;        /* a GEMM run in FP8 (--precision fp8): the roofline uses the fp8 peak */
    uint8_t scores;     /* COMP: memory-bound op over the attention scores (attn_scores) */
    uint8_t attn;       /* COMP: a fused attention kernel (--attention flash): op_kind "attention" */
    uint8_t grouped;    /* COMP: a grouped GEMM over this rank's experts (gemm_grouped) */
    uint8_t wgrad;      /* COMP: that grouped GEMM is the experts' weight gradient (gemm_wgrad) */
    uint8_t causal;     /* COMP: that kernel under a causal mask (attn_causal: the kernel skips the
                           masked half of the s^2 work; every section but decode) */
    uint8_t host_sync;  /* COMP: the host waits for its completion (host_sync: the MoE dispatch,
                           after which Megatron copies the per-expert token counts to the host) */
    uint8_t grp;        /* COLL: GRP_TP, GRP_CP or GRP_EP */
    uint8_t peer;       /* SEND/RECV: PEER_CP_NEXT or PEER_CP_PREV */
    int32_t tag;        /* SEND/RECV: comm_tag (ETK_GEN_CP_TAG_BASE + ..., gen.h) */
    double flops;       /* per rank */
    double recomp_flops; /* the part of flops that recomputes forward work (hardware, not model
                          * FLOPs: the fused attention backward's QK^T) */
    uint64_t bytes;     /* COMP: bytes read + written per rank (tensor_size) */
    int64_t comm_bytes; /* COLL: buffer (all-gather: the per-rank input shard); SEND/RECV: message */
    int ndeps;
    int32_t *deps;      /* instruction indices, DEP_IN or DEP_GRAD */
    int nw;
    int w[4];           /* weights whose gradient this node produces (tensor indices) */
    bool uses_w;        /* reads a weight (forward or recompute of an op with weights; dgrad) */
    bool wgrad_name, dgrad_name; /* the name holds ".wgrad" / ".dgrad" (set by low_emit;
                                    the generator asks per node emitted: a strstr each was ~4% of
                                    a plan search's phase 1, s35) */
    bool expert;        /* COMP: work of the experts on their tokens (expert GEMMs, their activation) */
    int64_t gemm_m, gemm_n, gemm_k; /* expert GEMMs: the shape of one expert's GEMM (m tokens per
                                     * expert forward and dgrad; k tokens for wgrad), 0: not set */
    int64_t gemm_groups;            /* and the experts of the rank (one grouped GEMM) */
    int64_t attn_w;                 /* fused attention under a causal sliding window of attn_w keys
                                     * (attn_window), 0: none */
    int64_t attn_s, attn_d;         /* fused attention: the kernel's key length (the K/V block's
                                     * with the CP ring) and head dimension (attn_s, attn_d), 0: unset */
} ginst;

typedef struct gprog {
    int sec;
    ginst *v;
    int n, cap;
    int nfwd;           /* v[0, nfwd): forward; then recompute and backward */
    int32_t fwd_out;    /* instruction giving the section output in stream layout (or DEP_IN) */
    int nbwd_out;       /* instructions giving the gradient of the section input (0: none) */
    int32_t bwd_out[8];
    uint64_t saved_bytes; /* activations kept per micro-batch for the backward pass */
    uint64_t out_bytes;   /* section output per rank (pipeline message) */
} gprog;

typedef struct glower_opts {
    int64_t tp;
    int64_t cp;         /* context parallel degree: the graph's query dim s is already seq / cp */
    bool cp_ring;       /* CP by send/recv around the ring (blockwise attention) instead of all-gathers */
    double moe_imbalance; /* > 1: the busiest EP rank's expert tokens over the mean (the expert
                           * nodes and the all-to-alls sized for it; the extra is not model FLOPs) */
    double moe_a2a_scale; /* (0, 1): the EP all-to-all bytes scaled by node-limited routing
                           * (--moe-max-nodes, gen.c); 0 or 1: none */
    int64_t window;     /* > 0: a sliding-window layer (query i attends to keys i - window + 1 .. i);
                         * with flash, the attention region's FLOPs are twice the window's
                         * query-key pairs (the s^2 convention) and the fused kernels carry it;
                         * unfused attention computes the whole masked score matrix, unchanged */
    bool flash;         /* each attention region (ops with region: attn) as one fused kernel forward
                         * and one backward (FlashAttention); not with cp_ring */
    int64_t ep;         /* expert parallel degree: weights with the expert dim 'e' hold 1/ep */
    bool sp;
    bool tp_overlap;    /* --tp-comm-overlap: TE userbuffers TP overlap (lower_emit.c low_tp_*) */
    int recompute;      /* ETK_RECOMPUTE_* (full applies to transformer layers) */
    uint32_t rmods;     /* recompute modules (G_RMOD_*): their ops re-run, their outputs not kept */
    int act_bytes;      /* bytes per activation element (2) */
    bool unfused_loss;  /* --unfused-loss: the loss's bytes are Megatron's FP32 vocab-parallel
                         * cross-entropy passes (lower_fwd.c low_loss_bytes) */
    int gemm_bytes;     /* bytes per GEMM input element: 1 for FP8 GEMMs (0: act_bytes); FP8
                         * applies to the GEMMs with a weight outside the attention region and
                         * the head (Transformer Engine's linear layers) */
    int64_t fp8_cast_mb; /* FP8 training (Transformer Engine): emit the casts (amax/scale, cast
                          * and transposed copy) of GEMM inputs, output gradients and weights;
                          * weights are cast once per step, spread over this many micro-batches
                          * (0: no casts, e.g. inference with weights stored in FP8) */
    int kv_bytes;       /* bytes per element of K/V read over a longer key sequence (inference
                         * decode: the KV cache; 0: as the other GEMM inputs) */
    bool routed;        /* inference, dropless routing: an activation in the expert layout
                         * [e, c, ...] holds exactly the b s topk routed token rows (not E x
                         * capacity), and an expert weight is read for the expected number of
                         * distinct experts of the rank those tokens select (see lower.c) */
} glower_opts;

/* sec: G_SEC_* or G_SEC_DENSE (the dense_layer section, lowered like a layer) */
int etk_lower_section(const etk_graph *g, int sec, const glower_opts *o, etk_arena *a, gprog *out,
                      etk_error *err);
#endif
