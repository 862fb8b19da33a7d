/* graph.h — the in-memory symbolic tensor graph of a model's blocks (private to model/ and
 * gen/). Loaded from presets/models/blocks/<arch>.yaml by graph.c with every dimension
 * evaluated; gen/lower.c shards it over TP, infers collectives and derives the backward pass. */
#ifndef ETK_MODEL_GRAPH_H
#define ETK_MODEL_GRAPH_H
#include "etkit/model.h"

#define G_MAX_DIMS 26   /* dimension names are single letters a..z */
#define G_MAX_IN 4
#define G_MAX_SAVE 4
#define G_MAX_RANK 6
#define G_MAX_TENSORS 512
/* The largest tensor a graph may hold (elements): 2^52, so FLOPs and bytes formed from it stay
 * far inside 64 bits. */
#define ETK_MAX_TENSOR_ELEMS ((int64_t)1 << 52)

enum { G_MATMUL, G_ELEMENTWISE, G_NORM, G_SOFTMAX, G_DROPOUT, G_EMBEDDING, G_LOSS };
enum { G_SEC_EMBED, G_SEC_LAYER, G_SEC_HEAD, G_N_SEC };
#define G_SEC_DENSE G_N_SEC /* section id of the optional dense_layer section's tensors */
/* optional sections the inference decode steps compute the layer (dense_layer) with instead,
 * e.g. MLA's absorbed form: the same weights as layer (dense_layer), not counted as parameters */
#define G_SEC_DECODE (G_N_SEC + 1)       /* decode_layer */
#define G_SEC_DECODE_DENSE (G_N_SEC + 2) /* decode_dense_layer */
#define G_N_SEC_ALL (G_N_SEC + 3)

/* Megatron's selective recompute modules (--recompute-modules; `recompute:` of a block op):
 * the ops of a module are run again at the start of the backward pass and the tensors they
 * produce are not kept (Megatron's checkpoint / CheckpointWithoutOutput around the module) */
#define G_RMOD_MLA_UP_PROJ 1u /* MLA: q/kv norms, up-projections, RoPE (their outputs Q, K, V) */
#define G_RMOD_MLP 2u         /* a dense layer's MLP (GEMMs and activation; input kept) */
#define G_RMOD_MOE_ACT 4u     /* the experts' activation (SwiGLU) */
#define G_RMOD_NAMES "mla_up_proj, mlp, moe_act"
/* the bit of module NAME, 0 when unknown */
uint32_t etk_graph_rmod_bit(const char *name);
/* the name of module bit b (1, 2, 4, ...), NULL when not one */
const char *etk_graph_rmod_name(uint32_t b);

typedef struct gtensor {
    const char *name;      /* "<section>.<name>" */
    int section;
    int nd;
    int dims[G_MAX_RANK];  /* dimension letters - 'a' */
    bool weight;
    int split;             /* weights: dimension letter split over TP, or -1 */
} gtensor;

typedef struct gop {
    const char *name;
    int kind;
    int nin;
    int in[G_MAX_IN];      /* tensor indices (activations and weights) */
    int out;
    int bias;              /* matmul: bias weight added to the output, or -1 */
    int over;              /* norm/softmax/loss: dimension reduced over, or -1 */
    double flops;          /* FLOPs per output element (elementwise kinds) */
    double bwd;            /* backward FLOPs / forward FLOPs (elementwise kinds) */
    int nsave;
    int save[G_MAX_SAVE];        /* tensors kept for the backward pass */
    int save_bytes[G_MAX_SAVE];  /* bytes per element (0: activation precision) */
    bool region;           /* part of the selectively recomputed region (attention core) */
    uint32_t rmod;         /* the recompute module it belongs to (`recompute: NAME`, one bit of
                            * G_RMOD_*; --recompute-modules): 0 none */
    bool shared_kv;        /* matmul: its operands read over the key sequence (the KV cache) were
                            * read by an earlier op of the same fused attention kernel (`shared_kv:
                            * true`; MLA's absorbed decode: the values are the cached latent the
                            * scores read): their bytes are not counted again */
    int reductions;        /* loss over a split dimension: all-reduces of [b,s] fp32 */
    int eqn[2];            /* matmul: the eq's labels of each operand (size of the loop nest) */
    int eq[2][G_MAX_RANK];
} gop;

typedef struct gsection {
    const char *name;      /* "embed", "layer", "head" */
    int input;             /* tensor index of the section input */
    int output;            /* tensor index of the section output */
    gop *ops;
    int nops;
} gsection;

struct etk_graph {
    etk_arena *arena;
    const char *file;      /* "models/blocks/gpt.yaml" */
    int64_t dim[G_MAX_DIMS];  /* size per letter, 0 = undefined */
    int stream_nd;
    int stream[G_MAX_RANK];   /* residual-stream dims (layer input/output) */
    int stream_seq;           /* the dim split by sequence parallelism */
    gtensor *t;
    int nt;
    gsection sec[G_N_SEC];
    gsection dense;           /* optional `dense_layer` section (nops 0: none): the first
                               * model.dense_layers layers of a MoE model */
    gsection decode, decode_dense; /* optional decode_layer / decode_dense_layer (nops 0: none) */
    int64_t layers;
    int64_t batch, seq, topk, experts; /* sequences per micro-batch and the model's (routing) */
};

/* Section sec (G_SEC_*, G_SEC_DENSE, G_SEC_DECODE, G_SEC_DECODE_DENSE) of g. */
static inline const gsection *etk_graph_section(const etk_graph *g, int sec)
{
    return sec == G_SEC_DENSE ? &g->dense : sec == G_SEC_DECODE ? &g->decode
           : sec == G_SEC_DECODE_DENSE ? &g->decode_dense : &g->sec[sec];
}

/* Elements of tensor i (all dims). */
int64_t etk_graph_elems(const etk_graph *g, int i);
#endif
