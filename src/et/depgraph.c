/* depgraph.c — the dependency graph of one trace (see depgraph.h): successor lists in CSR
 * form built in two linear passes over the nodes' dependency lists (hash lookups through the
 * trace's id index), Kahn's algorithm for a topological order, and a cycle witness found
 * iteratively (no recursion, so deep graphs cannot overflow the stack). validate.c reports
 * cycles from it, info.c computes roots and the longest path over its order. */
#include "et/depgraph.h"

#include <stdlib.h>
#include <string.h>

void etk_dg_free(etk_dg *g)
{
    if (!g)
        return;
    free(g->off);
    free(g->succ);
    free(g->indeg);
    free(g->order);
    memset(g, 0, sizeof *g);
}

/* Index of the node a dependency refers to, or -1 when absent or a self-dependency. */
static ptrdiff_t dep_target(const etk_trace *t, const etk_node *nd, uint64_t d)
{
    if (d == nd->id)
        return -1;
    return etk_trace_find_index(t, d);
}

int32_t *etk_dg_resolve(const etk_trace *t, size_t *n_refs)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_nodes; i++)
        n += (size_t)t->nodes[i].n_ctrl_deps + t->nodes[i].n_data_deps;
    int32_t *res = malloc((n ? n : 1) * sizeof *res);
    if (!res)
        return NULL;
    /* Fast path: most writers number nodes densely in file order, so the node a dependency
     * names usually sits as many places before this one as its id is smaller. When ids are
     * unique a match there is the answer; otherwise (or on a miss) ask the hash index. This
     * avoids a cache miss per dependency on large traces. */
    bool unique = t->n_duplicate_ids == 0;
    size_t k = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *nd = &t->nodes[i];
        for (int pass = 0; pass < 2; pass++) {
            const uint64_t *deps = pass ? nd->data_deps : nd->ctrl_deps;
            uint32_t m = pass ? nd->n_data_deps : nd->n_ctrl_deps;
            for (uint32_t j = 0; j < m; j++) {
                if (deps[j] == nd->id) {
                    res[k++] = ETK_DG_SELF;
                    continue;
                }
                uint64_t back = nd->id - deps[j]; /* wraps when the dep id is larger */
                if (unique && back <= i && t->nodes[i - back].id == deps[j]) {
                    res[k++] = (int32_t)(i - back);
                    continue;
                }
                ptrdiff_t x = etk_trace_find_index(t, deps[j]);
                res[k++] = x < 0 ? ETK_DG_ABSENT : (int32_t)x;
            }
        }
    }
    *n_refs = n;
    return res;
}

int etk_dg_build(const etk_trace *t, const int32_t *res_in, etk_dg *g, etk_error *err)
{
    memset(g, 0, sizeof *g);
    size_t n = t->n_nodes;
    if (n >= INT32_MAX)
        return etk_err(err, ETK_EINVAL, "%s: %zu nodes: more than the 2^31-1 supported",
                       t->path ? t->path : "", n);
    size_t n_refs;
    int32_t *own = NULL;
    const int32_t *res = res_in;
    if (!res && !(res = own = etk_dg_resolve(t, &n_refs)))
        goto oom;
    g->n = n;
    g->off = calloc(n + 1, sizeof *g->off);
    g->indeg = calloc(n ? n : 1, sizeof *g->indeg);
    g->order = malloc((n ? n : 1) * sizeof *g->order);
    if (!g->off || !g->indeg || !g->order)
        goto oom;
    /* pass 1: out-degrees (into off[j+1]) and in-degrees */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const etk_node *nd = &t->nodes[i];
        g->n_ctrl += nd->n_ctrl_deps;
        g->n_data += nd->n_data_deps;
        if (nd->n_ctrl_deps + nd->n_data_deps == 0)
            g->n_no_deps++;
        for (uint32_t j = 0; j < nd->n_ctrl_deps + nd->n_data_deps; j++, k++) {
            int32_t x = res[k];
            if (x == ETK_DG_SELF) {
                g->n_self++;
            } else if (x == ETK_DG_ABSENT) {
                if (j >= nd->n_ctrl_deps)
                    g->n_missing_data++;
                else
                    g->n_missing_ctrl++;
            } else {
                g->off[x + 1]++;
                g->indeg[i]++;
                g->n_edges++;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        g->off[i + 1] += g->off[i];
    g->succ = malloc((g->n_edges ? g->n_edges : 1) * sizeof *g->succ);
    size_t *fill = malloc((n ? n : 1) * sizeof *fill);
    if (!g->succ || !fill) {
        free(fill);
        goto oom;
    }
    if (n)
        memcpy(fill, g->off, n * sizeof *fill);
    /* pass 2: successor lists */
    k = 0;
    for (size_t i = 0; i < n; i++) {
        const etk_node *nd = &t->nodes[i];
        for (uint32_t j = 0; j < nd->n_ctrl_deps + nd->n_data_deps; j++, k++)
            if (res[k] >= 0)
                g->succ[fill[res[k]]++] = (uint32_t)i;
    }
    free(fill);
    free(own);
    own = NULL;
    /* Kahn: ready nodes in file order, then in the order they become ready */
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (g->indeg[i] == 0) {
            g->order[tail++] = (uint32_t)i;
            g->n_roots++;
        }
    while (head < tail) {
        uint32_t i = g->order[head++];
        for (size_t e = g->off[i]; e < g->off[i + 1]; e++) {
            uint32_t s = g->succ[e];
            if (--g->indeg[s] == 0)
                g->order[tail++] = s;
        }
    }
    g->n_order = tail;
    return 0;
oom:
    free(own);
    etk_dg_free(g);
    return etk_err(err, ETK_ENOMEM, "%s: out of memory building the dependency graph",
                   t->path ? t->path : "");
}

int etk_dg_cycle(const etk_trace *t, const etk_dg *g, uint32_t **path, uint8_t **via_ctrl,
                 size_t *len, etk_error *err)
{
    *path = NULL;
    *via_ctrl = NULL;
    *len = 0;
    if (g->n_order >= g->n)
        return 0;
    /* pos[i]: 1 + position of i on the walk, 0 if not visited */
    uint32_t *pos = calloc(g->n, sizeof *pos);
    uint32_t *walk = malloc(g->n * sizeof *walk);
    uint8_t *ctrl = malloc(g->n);
    if (!pos || !walk || !ctrl) {
        free(pos);
        free(walk);
        free(ctrl);
        return etk_err(err, ETK_ENOMEM, "out of memory looking for a cycle");
    }
    size_t cur = 0;
    while (g->indeg[cur] == 0)
        cur++;
    size_t steps = 0;
    bool stuck = false;
    while (!pos[cur]) {
        pos[cur] = (uint32_t)++steps;
        walk[steps - 1] = (uint32_t)cur;
        const etk_node *nd = &t->nodes[cur];
        ptrdiff_t next = -1;
        for (int pass = 0; pass < 2 && next < 0; pass++) {
            const uint64_t *deps = pass ? nd->data_deps : nd->ctrl_deps;
            uint32_t nd_n = pass ? nd->n_data_deps : nd->n_ctrl_deps;
            for (uint32_t k = 0; k < nd_n; k++) {
                ptrdiff_t j = dep_target(t, nd, deps[k]);
                if (j >= 0 && g->indeg[j] > 0) {
                    next = j;
                    ctrl[steps - 1] = pass == 0;
                    break;
                }
            }
        }
        if (next < 0) { /* cannot happen for a node Kahn left unordered */
            stuck = true;
            break;
        }
        cur = (size_t)next;
    }
    if (!stuck) {
        size_t start = pos[cur] - 1;
        *len = steps - start;
        memmove(walk, walk + start, *len * sizeof *walk);
        memmove(ctrl, ctrl + start, *len);
        *path = walk;
        *via_ctrl = ctrl;
    } else {
        free(walk);
        free(ctrl);
    }
    free(pos);
    return 0;
}
