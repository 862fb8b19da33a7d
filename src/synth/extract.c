/* extract.c — the token graphs of a workload's ranks, one per rank class: node types, operator
 * classes from names, collective roles from the communicator groups, point-to-point peers as
 * next/previous rank; numeric attributes FLOPs, tensor bytes, comm bytes, duration. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

static int group_role(const etk_workload *w, const char *pg, uint32_t *size)
{
    *size = 0;
    if (!pg || !w->groups)
        return ETK_SYNTH_ROLE_WORLD;
    const etk_group *g = etk_groups_find(w->groups, pg);
    if (!g || g->n_ranks >= w->n_ranks || g->n_ranks < 2)
        return ETK_SYNTH_ROLE_WORLD;
    *size = g->n_ranks;
    for (uint32_t i = 1; i < g->n_ranks; i++)
        if (g->ranks[i] != g->ranks[i - 1] + 1)
            return ETK_SYNTH_ROLE_OUTER;
    return ETK_SYNTH_ROLE_INNER;
}

static int node_token(const etk_workload *w, uint32_t rank, const etk_node *nd, uint32_t *inner)
{
    int64_t v = 0;
    switch (nd->type) {
    case ETK_NODE_COLL: {
        int ct = etk_node_i64(nd, "comm_type", &v) && v >= 0 && v < ETK_COLL_TYPE_COUNT ? (int)v : 0;
        uint32_t size;
        int role = group_role(w, etk_node_str(nd, "pg_name"), &size);
        if (role == ETK_SYNTH_ROLE_INNER)
            *inner = size;
        return etk_synth_tok_coll(ct, role);
    }
    case ETK_NODE_SEND:
    case ETK_NODE_RECV: {
        bool send = nd->type == ETK_NODE_SEND;
        int64_t peer = 0;
        etk_node_i64(nd, send ? "comm_dst" : "comm_src", &peer);
        return etk_synth_tok_p2p(send, peer >= (int64_t)rank ? ETK_SYNTH_PEER_NEXT : ETK_SYNTH_PEER_PREV);
    }
    case ETK_NODE_COMP:
        return etk_synth_tok_comp(etk_synth_op_class(nd->name, etk_node_str(nd, "op_kind")));
    default:
        return etk_synth_tok_comp(ETK_SYNTH_OP_MEMORY);
    }
}

static uint64_t mixh(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

int etk_synth_workload_graphs(const etk_workload *w, etk_synth_graph ***gs, size_t *n, uint32_t *inner_size,
                              etk_error *err)
{
    uint64_t *sigs = calloc(w->n_ranks ? w->n_ranks : 1, sizeof *sigs);
    uint32_t n_sigs = 0, inner = 0;
    int rc = 0;
    if (!sigs)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    for (uint32_t r = 0; r < w->n_ranks && !rc; r++) {
        etk_trace *t = w->ranks[r];
        if (!t)
            continue; /* folded in-memory workloads: representatives only */
        if ((rc = etk_trace_index(t, err)))
            break;
        uint32_t nn = (uint32_t)t->n_nodes;
        uint16_t *tok = malloc((nn ? nn : 1) * sizeof *tok);
        double *val = calloc(nn ? (size_t)nn * ETK_SYNTH_N_ATTR : 1, sizeof *val);
        uint32_t *off = malloc(((size_t)nn + 1) * sizeof *off), ne = 0;
        for (uint32_t i = 0; i < nn; i++)
            ne += t->nodes[i].n_data_deps + t->nodes[i].n_ctrl_deps;
        uint32_t *par = malloc((ne ? ne : 1) * sizeof *par);
        if (!tok || !val || !off || !par) {
            free(tok), free(val), free(off), free(par);
            rc = etk_err(err, ETK_ENOMEM, "out of memory reading rank %u", r);
            break;
        }
        uint64_t sig = mixh(nn, ne);
        uint32_t e = 0;
        for (uint32_t i = 0; i < nn; i++) {
            const etk_node *nd = &t->nodes[i];
            tok[i] = (uint16_t)node_token(w, r, nd, &inner);
            double *x = val + (size_t)i * ETK_SYNTH_N_ATTR;
            int64_t v = 0;
            uint64_t u = 0;
            if (etk_node_i64(nd, "num_ops", &v) && v > 0)
                x[ETK_SYNTH_A_FLOPS] = (double)v;
            if (etk_node_u64(nd, "tensor_size", &u))
                x[ETK_SYNTH_A_TENSOR] = (double)u;
            if (etk_node_i64(nd, "comm_size", &v) && v > 0)
                x[ETK_SYNTH_A_COMM] = (double)v;
            x[ETK_SYNTH_A_DUR] = (double)nd->duration_micros;
            off[i] = e;
            for (int kind = 0; kind < 2; kind++) {
                uint32_t nd_ = kind ? nd->n_ctrl_deps : nd->n_data_deps;
                const uint64_t *d = kind ? nd->ctrl_deps : nd->data_deps;
                for (uint32_t k = 0; k < nd_; k++) {
                    ptrdiff_t p = etk_trace_find_index(t, d[k]);
                    if (p >= 0)
                        par[e++] = (uint32_t)p;
                }
            }
            sig = mixh(sig, tok[i]);
            for (int a = 0; a < ETK_SYNTH_N_ATTR; a++) {
                uint64_t bits;
                memcpy(&bits, &x[a], sizeof bits);
                sig = mixh(sig, bits);
            }
            for (uint32_t k = off[i]; k < e; k++)
                sig = mixh(sig, par[k] + 1);
        }
        off[nn] = e;
        bool seen = false;
        for (uint32_t k = 0; k < n_sigs && !seen; k++)
            seen = sigs[k] == sig;
        if (!seen) {
            sigs[n_sigs++] = sig;
            etk_synth_graph *g = NULL;
            rc = etk_synth_graph_build(nn, tok, val, off, par, &g, NULL, err);
            if (rc)
                etk_err_prefix(err, "%s: rank %u", t->path && *t->path ? t->path : "workload", r);
            else {
                etk_synth_graph **ng = realloc(*gs, (*n + 1) * sizeof **gs);
                if (!ng) {
                    etk_synth_graph_free(g);
                    rc = etk_err(err, ETK_ENOMEM, "out of memory");
                } else {
                    *gs = ng;
                    ng[(*n)++] = g;
                }
            }
        }
        free(tok), free(val), free(off), free(par);
    }
    free(sigs);
    if (inner_size)
        *inner_size = inner;
    return rc;
}
