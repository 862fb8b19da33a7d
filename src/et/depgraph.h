/* depgraph.h — private: the dependency graph of one trace in CSR form (successor lists over
 * node indices, data ∪ ctrl deps, deps on absent ids and self-deps left out) and its Kahn
 * order. Shared by validate.c (cycles), info.c (roots, longest path) and dot.c. */
#ifndef ETK_ET_DEPGRAPH_H
#define ETK_ET_DEPGRAPH_H
#include "etkit/et.h"

typedef struct etk_dg {
    size_t n;                 /* nodes */
    size_t n_edges;           /* edges kept (a dep listed in both ctrl and data counts twice) */
    size_t *off;              /* n + 1: successors of i are succ[off[i] .. off[i+1]) */
    uint32_t *succ;
    uint32_t *indeg;          /* after Kahn: > 0 exactly for the nodes not ordered */
    uint32_t *order;          /* Kahn order (file order among ready nodes) */
    size_t n_order;           /* == n when acyclic */
    uint64_t n_no_deps;       /* nodes with no deps at all */
    uint64_t n_roots;         /* nodes with no kept edge */
    uint64_t n_ctrl, n_data;  /* dependency references */
    uint64_t n_missing_ctrl, n_missing_data; /* references to absent ids */
    uint64_t n_self;          /* references of a node to its own id */
} etk_dg;

/* Every dependency reference resolved once: for each node in file order its ctrl deps, then
 * its data deps; the node index it names, ETK_DG_ABSENT or ETK_DG_SELF. Malloc'ed (caller
 * frees); NULL on out-of-memory. *n_refs gets the length. t must be indexed. */
#define ETK_DG_ABSENT (-1)
#define ETK_DG_SELF (-2)
int32_t *etk_dg_resolve(const etk_trace *t, size_t *n_refs);

/* t must be indexed (etk_trace_index). res: etk_dg_resolve's result, or NULL to resolve here.
 * Returns 0 or ETK_ENOMEM / ETK_EINVAL (too large). */
int etk_dg_build(const etk_trace *t, const int32_t *res, etk_dg *g, etk_error *err);
void etk_dg_free(etk_dg *g);
/* When the graph has a cycle (n_order < n): a cycle as node indices, path[0] depends on
 * path[1], ..., path[len-1] depends on path[0]; via_ctrl[k] is 1 when path[k]'s dependency on
 * the next one is a control dependency. Both malloc'ed (caller frees). Walks
 * dependencies backwards among unordered nodes: every such node has an unordered
 * dependency, so the walk must revisit a node, and that loop is a cycle. */
int etk_dg_cycle(const etk_trace *t, const etk_dg *g, uint32_t **path, uint8_t **via_ctrl,
                 size_t *len, etk_error *err);
#endif
