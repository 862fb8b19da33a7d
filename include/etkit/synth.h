/* etkit/synth.h — learned synthetic workloads (`etkit synth`, docs/synth.md): rank graphs read
 * from Chakra workloads are turned into token graphs (node type x operator class x collective
 * type x group role, numeric attributes in per-token quantile bins), peeled into layers
 * (LayerDAG: layer 1 = the sources, layer l+1 = the nodes whose parents are all placed), and a
 * generative model learned from them samples new rank graphs, assembled into multi-rank
 * workloads that are valid and deadlock-free by construction.
 *
 * Models: the count baseline (conditional frequency tables with back-off) and the LayerDAG model
 * (small dense networks trained with Adam; src/synth/layerdag.c). The model file is one versioned JSON document ("etkit-synth-model", version 3; docs/synth.md). */
#ifndef ETKIT_SYNTH_H
#define ETKIT_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------- tokens ---------- */
/* Operator classes of compute nodes (the operator name is replaced by its class: privacy). */
enum {
    ETK_SYNTH_OP_GEMM = 0,
    ETK_SYNTH_OP_ATTENTION,
    ETK_SYNTH_OP_NORM,
    ETK_SYNTH_OP_ELEMENTWISE,
    ETK_SYNTH_OP_EMBEDDING,
    ETK_SYNTH_OP_LOSS,
    ETK_SYNTH_OP_OPTIMIZER,
    ETK_SYNTH_OP_MEMORY, /* copies, casts, memory load/store/metadata nodes */
    ETK_SYNTH_OP_OTHER,
};
#define ETK_SYNTH_N_OPS 9
/* Group roles of a collective: the whole world, a group of consecutive ranks (TP-like), a
 * strided group (DP/PP-like). Point-to-point: the peer is the next or the previous rank. */
enum { ETK_SYNTH_ROLE_WORLD = 0, ETK_SYNTH_ROLE_INNER, ETK_SYNTH_ROLE_OUTER };
#define ETK_SYNTH_N_ROLES 3
enum { ETK_SYNTH_PEER_NEXT = 0, ETK_SYNTH_PEER_PREV };

/* The token vocabulary (fixed): COMP x op class, COLL x collective type x role, SEND x peer,
 * RECV x peer. */
#define ETK_SYNTH_TOK_COLL0 ETK_SYNTH_N_OPS
#define ETK_SYNTH_TOK_SEND0 (ETK_SYNTH_TOK_COLL0 + ETK_COLL_TYPE_COUNT * ETK_SYNTH_N_ROLES)
#define ETK_SYNTH_TOK_RECV0 (ETK_SYNTH_TOK_SEND0 + 2)
#define ETK_SYNTH_N_TOKENS (ETK_SYNTH_TOK_RECV0 + 2)

int etk_synth_tok_comp(int op);
int etk_synth_tok_coll(int coll_type, int role);
int etk_synth_tok_p2p(bool send, int peer);
int etk_synth_tok_type(int tok);      /* etk_node_type of the token */
int etk_synth_tok_coll_type(int tok); /* collective type, -1 if not a collective */
int etk_synth_tok_role(int tok);      /* role (collective) or peer (p2p), -1 for COMP */
/* "COMP:gemm", "COLL:ALL_REDUCE:inner", "SEND:next", ... (static strings) */
const char *etk_synth_tok_name(int tok);
int etk_synth_tok_parse(const char *name); /* inverse; -1 if unknown */
/* Operator class of a node name (+ op_kind attribute, may be NULL): lower-case substrings. */
int etk_synth_op_class(const char *name, const char *op_kind);
const char *etk_synth_op_name(int op);

/* Numeric attributes of a node: FLOPs (num_ops), tensor bytes (tensor_size), communication
 * bytes (comm_size), duration (duration_micros). */
enum { ETK_SYNTH_A_FLOPS = 0, ETK_SYNTH_A_TENSOR, ETK_SYNTH_A_COMM, ETK_SYNTH_A_DUR };
#define ETK_SYNTH_N_ATTR 4
#define ETK_SYNTH_N_BINS 8
/* true for the attributes a token carries (COMP: flops, tensor, duration; others: comm, dur) */
bool etk_synth_tok_has_attr(int tok, int a);

/* ---------- rank graphs ---------- */
/* One rank's program as a token graph, nodes in layer order (layer[i] non-decreasing, 0-based:
 * layer 0 = the sources). Parents in CSR form: par[par_off[i] .. par_off[i+1]), all of earlier
 * layers, the first one (the main parent) in the layer just before. */
typedef struct etk_synth_graph {
    uint32_t n, n_edges, n_layers;
    uint16_t *tok;
    uint32_t *layer;
    uint32_t *par_off; /* [n + 1] */
    uint32_t *par;     /* [n_edges] */
    double *val;       /* [n * ETK_SYNTH_N_ATTR] attribute values */
    uint32_t scale;    /* a sampled graph: its scale class + 1 (docs/synth.md "Attribute scale"); 0: none */
} etk_synth_graph;

/* A graph from parent lists in any topological or non-topological order (nodes 0..n-1,
 * parents given by index; duplicates and self loops dropped): peels it into layers and reorders
 * the nodes by layer (stable: file order inside a layer). `order` (may be NULL) gets, for each
 * new index, the old one. ETK_EINVAL on a cycle. */
int etk_synth_graph_build(uint32_t n, const uint16_t *tok, const double *val, const uint32_t *par_off,
                          const uint32_t *par, etk_synth_graph **out, uint32_t *order, etk_error *err);
void etk_synth_graph_free(etk_synth_graph *g);
/* Weisfeiler-Lehman hash (3 rounds over parents and children, token labels): isomorphic token
 * graphs hash equal. */
uint64_t etk_synth_graph_wl_hash(const etk_synth_graph *g);

/* The rank graphs of a workload, one per rank class (ranks whose token graphs and attribute
 * values are identical count once). Appends to *gs (realloc'ed; *n counts). Collective roles
 * from the workload's groups (a collective on an unknown group: world). *inner_size (may be
 * NULL): the size of the workload's groups of consecutive ranks used by a collective (0: none). */
int etk_synth_workload_graphs(const etk_workload *w, etk_synth_graph ***gs, size_t *n, uint32_t *inner_size,
                              etk_error *err);

/* ---------- the model ---------- */
typedef struct etk_synth_model etk_synth_model;

/* Fit the count baseline to n graphs (n >= 1). world_sizes / inner_sizes: ranks of the training
 * workloads and sizes of their inner (consecutive) groups, for the default of --ranks and the
 * inner group size at sampling (may be NULL / 0). */
int etk_synth_fit(etk_synth_graph *const *gs, size_t n, const uint32_t *world_sizes, size_t n_world,
                  const uint32_t *inner_sizes, size_t n_inner, etk_synth_model **out, etk_error *err);
void etk_synth_model_free(etk_synth_model *m);
int etk_synth_model_save(const etk_synth_model *m, const char *path, etk_error *err);
int etk_synth_model_load(const char *path, etk_synth_model **out, etk_error *err);
size_t etk_synth_model_n_graphs(const etk_synth_model *m);
uint32_t etk_synth_model_default_ranks(const etk_synth_model *m);
/* the most common inner-group size of the corpus that divides n_ranks (0: none) */
uint32_t etk_synth_model_inner(const etk_synth_model *m, uint32_t n_ranks);

/* Train the LayerDAG model on the graphs (m, the count model fitted to them, supplies the token
 * marginal and the attribute bins) for `epochs` passes (0: 8), deterministic for the seed; it is
 * saved with m and used by etk_synth_sample_graph from then on. */
int etk_synth_train_layerdag(etk_synth_model *m, etk_synth_graph *const *gs, size_t n, uint32_t epochs, uint64_t seed,
                             etk_error *err);
/* The same conditioned on a label per graph (its step time in ns, > 0), embedded sinusoidally
 * as LayerDAG does; samples then take etk_synth_sample_opts.label_ns. */
int etk_synth_train_layerdag_labeled(etk_synth_model *m, etk_synth_graph *const *gs, const double *labels_ns, size_t n,
                                     uint32_t epochs, uint64_t seed, etk_error *err);
/* Polyak averaging (docs/synth.md "Fit-to-fit stability"): the default number of final epochs
 * whose iterates (one per graph's Adam step) are averaged into the saved weights */
#define ETK_SYNTH_LD_AVERAGE 4
/* The same with the averaged tail given: `average` final epochs (0: off, the last iterate; more
 * than `epochs` averages them all). The two functions above use ETK_SYNTH_LD_AVERAGE. */
int etk_synth_train_layerdag_avg(etk_synth_model *m, etk_synth_graph *const *gs, const double *labels_ns, size_t n,
                                 uint32_t epochs, uint32_t average, uint64_t seed, etk_error *err);
/* true when the LayerDAG part was trained with labels */
bool etk_synth_model_labeled(const etk_synth_model *m);
bool etk_synth_model_has_layerdag(const etk_synth_model *m);
/* final mean training losses (size, token, edge); false without a LayerDAG model */
bool etk_synth_layerdag_loss(const etk_synth_model *m, double loss[3]);

typedef struct etk_synth_sample_opts {
    uint64_t seed;
    bool count_only;      /* the count baseline even when the model has a LayerDAG part */
    uint32_t max_nodes;   /* 0: no limit; else layers are added until the graph would exceed it */
    uint32_t max_tries;   /* WL-hash rejection: re-sample at most this often (0: 100) */
    double label_ns;      /* > 0: the target label (step time, ns) of a labeled LayerDAG model */
    /* > 0 (LayerDAG only): a graph of exactly this many nodes ("the same sizes", docs/synth.md
     * "Same-size sampling"): the drawn profile's layer count scaled by nodes / the profile's node
     * count, layers added until the graph has this many nodes, the last one cut; max_nodes is
     * ignored */
    uint32_t nodes;
} etk_synth_sample_opts;

/* Sample one rank graph (deterministic for the seed); a graph isomorphic to a training graph
 * (WL hash) is rejected and re-sampled; *rejected (may be NULL) counts the rejections. */
int etk_synth_sample_graph(const etk_synth_model *m, const etk_synth_sample_opts *o, etk_synth_graph **out,
                           uint32_t *rejected, etk_error *err);
/* Redraw the attribute values of every node of g (tokens and edges kept), deterministic for the
 * seed: bins from the token's table, or for a labeled LayerDAG model and label_ns > 0 from the
 * table of the label's bucket (as etk_synth_sample_graph draws them). The sampler's search under
 * --label: several attribute draws per sampled structure. */
void etk_synth_redraw_attrs(const etk_synth_model *m, etk_synth_graph *g, double label_ns, uint64_t seed);
/* The same for one node (node < g->n) of g (the sampler's refinement under --label). */
void etk_synth_redraw_node_attrs(const etk_synth_model *m, etk_synth_graph *g, uint32_t node, double label_ns,
                                 uint64_t seed);
/* The layer-copy baseline of g (an oracle on structure: it sees the real graph): layer sizes and
 * in-degrees of g kept, each node's main parent and extra parents uniform over earlier layers,
 * tokens and attributes from the marginals of m. */
int etk_synth_random_like(const etk_synth_model *m, const etk_synth_graph *g, uint64_t seed, etk_synth_graph **out,
                          etk_error *err);
/* The random-DAG baseline of the same size as g (issue #13): g's node count, g's edge count
 * drawn uniformly over the forward pairs (i < j) of a random order (repeats dropped), tokens and
 * attributes from the marginals of m; peeled into layers as any graph. */
int etk_synth_random_er(const etk_synth_model *m, const etk_synth_graph *g, uint64_t seed, etk_synth_graph **out,
                        etk_error *err);

/* ---------- the step-time regressor (LayerDAG's benchmark protocol) ---------- */
/* An MLP (16 hidden ReLU units) on graph features (log1p of per-token node counts, nodes, edges,
 * layers, per-attribute sums and maxima; standardized) predicting the log step time, trained
 * full-batch with Adam (2,000 passes), deterministic for the seed. */
typedef struct etk_synth_regressor etk_synth_regressor;
int etk_synth_regress_fit(etk_synth_graph *const *gs, const double *y_ns, size_t n, uint64_t seed,
                          etk_synth_regressor **out, etk_error *err);
double etk_synth_regress_predict(const etk_synth_regressor *r, const etk_synth_graph *g); /* ns */
void etk_synth_regress_free(etk_synth_regressor *r);
/* correlation coefficients of two samples (NAN for n < 2 or a constant sample); Spearman ranks
 * ties by their mean rank */
double etk_synth_pearson(const double *a, const double *b, size_t n);
double etk_synth_spearman(const double *a, const double *b, size_t n);

/* ---------- multi-rank assembly ---------- */
/* The workload of n_ranks ranks all running g (one rank class): inner groups of inner_size
 * consecutive ranks (0: the model's most common size dividing n_ranks), outer groups strided,
 * the world group; collectives of one role chained in program order (same order on every
 * member, equal sizes); every point-to-point node paired with a twin of the same parents in the
 * other direction so that each send to rank r+1 meets the recv of r+1 from r (tag = the node's
 * program position): valid and deadlock-free by construction. With one rank, point-to-point
 * nodes become empty compute nodes. Node names are token names (privacy). */
int etk_synth_assemble(const etk_synth_graph *g, uint32_t n_ranks, uint32_t inner_size, etk_workload **out,
                       etk_error *err);

/* Write a workload as <prefix>.<rank>.et + <prefix>.json, all or nothing (a temporary folder
 * published by renames; a second writer of the same prefix is refused). */
int etk_synth_write(const etk_workload *w, const char *prefix, etk_error *err);

/* ---------- evaluation ---------- */
/* Descriptor histograms of a set of graphs (docs/synth.md "Evaluation"). */
enum {
    ETK_SYNTH_D_INDEG = 0,
    ETK_SYNTH_D_OUTDEG,
    ETK_SYNTH_D_LAYERSIZE,
    ETK_SYNTH_D_TOKEN,
    ETK_SYNTH_D_EDGEPAIR,
    ETK_SYNTH_D_SKIP,
    ETK_SYNTH_D_ATTRBIN,
};
#define ETK_SYNTH_N_DESC 7
const char *etk_synth_desc_name(int d);
/* MMD^2 between two sets of graphs for descriptor d: Gaussian kernel exp(-TV^2 / (2 sigma^2)),
 * sigma 1, TV the total-variation distance of the normalized histograms (biased estimator).
 * Attribute bins need the model's quantile edges (m; NULL: 0 for that descriptor). */
double etk_synth_mmd2(const etk_synth_model *m, etk_synth_graph *const *a, size_t na, etk_synth_graph *const *b,
                      size_t nb, int d);
/* Kolmogorov-Smirnov distance of two samples (sorted copies are made). */
double etk_synth_ks(const double *a, size_t na, const double *b, size_t nb);

#ifdef __cplusplus
}
#endif
#endif
