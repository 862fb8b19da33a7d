/* vdeadlock.c — the deadlock check of a workload: Kahn's algorithm over the global graph in
 * which matched collectives and send/recv pairs (vcoll.c) are contracted to one node; what is
 * left names the blocked ranks and nodes. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"
#include "et/validate_priv.h"

static uint32_t rank_of(const xstate *x, uint32_t gid)
{
    size_t lo = 0, hi = x->w->n_ranks; /* last r with off[r] <= gid */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (x->off[mid] <= gid)
            lo = mid;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

/* Kahn's algorithm over the contracted global graph; a cycle witness if it stalls. */
int val_check_deadlock(xstate *x, etk_error *err)
{
    etk_workload *w = x->w;
    size_t N = x->off[w->n_ranks];
    uint32_t *rep = x->uf; /* compressed in place: rep[v] = root */
    for (size_t v = 0; v < N; v++)
        rep[v] = val_uf_find(rep, (uint32_t)v);
    uint32_t *indeg = calloc(N ? N : 1, sizeof *indeg);
    size_t *start = calloc(N + 1, sizeof *start);
    uint32_t *succ = NULL, *queue = NULL, *next = NULL, *head = NULL, *pos = NULL;
    uint32_t *walk_from = NULL, *walk_to = NULL;
    int rc = ETK_ENOMEM;
    if (!indeg || !start)
        goto out;
    size_t E = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const etk_trace *t = w->ranks[r];
        const int32_t *res = x->res[r];
        const uint32_t *rp = rep + x->off[r];
        size_t k = 0;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            uint32_t v = rp[i], m = n->n_ctrl_deps + n->n_data_deps;
            for (uint32_t q = 0; q < m; q++, k++) {
                if (res[k] < 0)
                    continue;
                start[rp[res[k]] + 1]++;
                indeg[v]++;
                E++;
            }
        }
    }
    for (size_t v = 0; v < N; v++)
        start[v + 1] += start[v];
    succ = malloc((E ? E : 1) * sizeof *succ);
    queue = malloc((N ? N : 1) * sizeof *queue);
    if (!succ || !queue)
        goto out;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const etk_trace *t = w->ranks[r];
        const int32_t *res = x->res[r];
        const uint32_t *rp = rep + x->off[r];
        size_t k = 0;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            uint32_t v = rp[i], m = n->n_ctrl_deps + n->n_data_deps;
            for (uint32_t q = 0; q < m; q++, k++)
                if (res[k] >= 0)
                    succ[start[rp[res[k]]]++] = v;
        }
    }
    /* start[u] now points at the end of u's list: shift back */
    for (size_t v = N; v > 0; v--)
        start[v] = start[v - 1];
    start[0] = 0;
    size_t qh = 0, qt = 0, n_rep = 0;
    for (size_t v = 0; v < N; v++)
        if (rep[v] == v) {
            n_rep++;
            if (!indeg[v])
                queue[qt++] = (uint32_t)v;
        }
    while (qh < qt) {
        uint32_t u = queue[qh++];
        for (size_t e = start[u]; e < start[u + 1]; e++)
            if (--indeg[succ[e]] == 0)
                queue[qt++] = succ[e];
    }
    rc = 0;
    if (qt == n_rep)
        goto out;
    /* Witness: walk dependencies backwards among the stalled contracted nodes. next/head list
     * the members of each contracted node. */
    rc = ETK_ENOMEM;
    next = malloc(N * sizeof *next);
    head = malloc(N * sizeof *head);
    pos = calloc(N, sizeof *pos);
    walk_from = malloc(N * sizeof *walk_from);
    walk_to = malloc(N * sizeof *walk_to);
    if (!next || !head || !pos || !walk_from || !walk_to)
        goto out;
    for (size_t v = 0; v < N; v++)
        head[v] = UINT32_MAX;
    for (size_t v = N; v-- > 0;) {
        next[v] = head[rep[v]];
        head[rep[v]] = (uint32_t)v;
    }
    uint32_t cur = 0;
    while (rep[cur] != cur || indeg[cur] == 0)
        cur++;
    size_t steps = 0;
    while (!pos[cur]) {
        pos[cur] = (uint32_t)++steps;
        bool found = false;
        for (uint32_t m = head[cur]; m != UINT32_MAX && !found; m = next[m]) {
            uint32_t r = rank_of(x, m);
            const etk_trace *t = w->ranks[r];
            const etk_node *n = &t->nodes[m - x->off[r]];
            for (int pass = 0; pass < 2 && !found; pass++) {
                const uint64_t *d = pass ? n->data_deps : n->ctrl_deps;
                uint32_t nd = pass ? n->n_data_deps : n->n_ctrl_deps;
                for (uint32_t k = 0; k < nd; k++) {
                    ptrdiff_t j = d[k] == n->id ? -1 : etk_trace_find_index(t, d[k]);
                    if (j < 0)
                        continue;
                    uint32_t y = rep[x->off[r] + (size_t)j];
                    if (indeg[y] > 0) {
                        walk_from[steps - 1] = m;
                        walk_to[steps - 1] = (uint32_t)(x->off[r] + (size_t)j);
                        cur = y;
                        found = true;
                        break;
                    }
                }
            }
        }
        if (!found) { /* cannot happen for a stalled node; report without a witness */
            steps = 0;
            break;
        }
    }
    size_t s0 = steps ? pos[cur] - 1 : 0, len = steps - s0;
    sbuf b = {0}, rk = {0};
    /* ranks involved, in order of first appearance */
    uint32_t listed[WITNESS_MAX];
    size_t n_listed = 0;
    /* start the written cycle at its lowest (rank, node): global numbers order exactly so */
    size_t best = s0;
    for (size_t k = s0; k < steps; k++)
        if (walk_from[k] < walk_from[best])
            best = k;
    for (size_t q = 0; q < len; q++) {
        size_t k = s0 + (best - s0 + q) % len;
        uint32_t gm = walk_from[k], gd = walk_to[k];
        uint32_t r = rank_of(x, gm);
        const etk_trace *t = w->ranks[r];
        const etk_node *nm = &t->nodes[gm - x->off[r]], *ndp = &t->nodes[gd - x->off[r]];
        bool seen = false;
        for (size_t q = 0; q < n_listed; q++)
            seen |= listed[q] == r;
        if (!seen && n_listed < WITNESS_MAX) {
            listed[n_listed++] = r;
            val_sb_printf(&rk, "%s%" PRIu32, n_listed > 1 ? ", " : "", r);
        }
        if (q < WITNESS_MAX)
            val_sb_printf(&b, "%srank %" PRIu32 " node id %" PRIu64 " (%s '%.*s') waits for id %" PRIu64
                      " (%s '%.*s')",
                      q ? "; " : "", r, nm->id, etk_node_type_name(nm->type), NAME_MAX_SHOWN,
                      val_nname(nm), ndp->id, etk_node_type_name(ndp->type), NAME_MAX_SHOWN,
                      val_nname(ndp));
    }
    if (len > WITNESS_MAX)
        val_sb_printf(&b, "; ...");
    uint32_t where = len ? walk_from[best] : cur;
    uint32_t r0 = rank_of(x, where);
    const etk_trace *t0 = w->ranks[r0];
    rc = val_add(x->out, ETK_SEV_ERROR, "deadlock", r0, t0->path, where - x->off[r0],
             t0->nodes[where - x->off[r0]].id, n_rep - qt,
             "cross-rank deadlock: a cycle of %zu waits over ranks %s%s: %s. (A collective waits "
             "for every member of its group, a send for its matching recv.) %zu operations can "
             "never run",
             len, val_sb_str(&rk), n_listed == WITNESS_MAX ? ", ..." : "", val_sb_str(&b), n_rep - qt);
    free(b.p);
    free(rk.p);
out:
    free(indeg);
    free(start);
    free(succ);
    free(queue);
    free(next);
    free(head);
    free(pos);
    free(walk_from);
    free(walk_to);
    if (rc == ETK_ENOMEM)
        return etk_err(err, rc, "%s: out of memory checking for deadlock",
                       w->prefix ? w->prefix : "");
    return rc;
}
