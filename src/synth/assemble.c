/* assemble.c — multi-rank workloads from one sampled rank graph (docs/synth.md "Multi-rank
 * assembly"): every rank runs the graph (one rank class); collectives go to the world group, the
 * rank's inner group (consecutive ranks) or its outer group (strided) by their role, chained per
 * group in program order; each point-to-point node gets a twin of the same parents in the other
 * direction around the ring, so every send meets its recv with the same tag and size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"
#include "util/outset.h"

/* an attribute value as an integer: a model file may hold edges up to 1e30, beyond int64 */
static int64_t as_i64(double v) { return v >= 9.2e18 ? INT64_C(9200000000000000000) : v > 0 ? (int64_t)v : 0; }

static etk_node comm_node(uint64_t id, const char *name, int type)
{
    etk_node n = {0};
    n.id = id;
    n.name = name;
    n.type = type;
    return n;
}

int etk_synth_assemble(const etk_synth_graph *g, uint32_t n_ranks, uint32_t inner, etk_workload **out,
                       etk_error *err)
{
    *out = NULL;
    if (!n_ranks)
        return etk_err(err, ETK_EINVAL, "--ranks must be at least 1");
    if (n_ranks > 1u << 20)
        return etk_err(err, ETK_EINVAL, "--ranks %u: at most 1048576 ranks", n_ranks);
    bool sub = inner >= 2 && inner < n_ranks && n_ranks % inner == 0; /* inner/outer groups exist */
    etk_workload *w = calloc(1, sizeof *w);
    uint64_t *deps = malloc(((size_t)g->n_edges + 2) * sizeof *deps);
    int rc = ETK_ENOMEM;
    if (!w || !deps || !(w->ranks = calloc(n_ranks, sizeof *w->ranks)) || !(w->groups = etk_groups_new()))
        goto fail;
    w->n_ranks = n_ranks;
    w->prefix = strdup("synth");
    /* groups: "1" world, "2".. inner blocks, then outer strides */
    uint32_t n_inner = sub ? n_ranks / inner : 0, n_outer = sub ? inner : 0;
    uint32_t *rk = malloc(n_ranks * sizeof *rk);
    if (!rk)
        goto fail;
    for (uint32_t r = 0; r < n_ranks; r++)
        rk[r] = r;
    if (etk_groups_add(w->groups, "1", rk, n_ranks)) {
        free(rk);
        goto fail;
    }
    char id[16];
    for (uint32_t b = 0; b < n_inner; b++) {
        snprintf(id, sizeof id, "%u", 2 + b);
        if (etk_groups_add(w->groups, id, rk + (size_t)b * inner, inner)) {
            free(rk);
            goto fail;
        }
    }
    for (uint32_t j = 0; j < n_outer; j++) {
        uint32_t k = 0;
        for (uint32_t r = j; r < n_ranks; r += inner)
            rk[k++] = r;
        snprintf(id, sizeof id, "%u", 2 + n_inner + j);
        if (etk_groups_add(w->groups, id, rk, k)) {
            free(rk);
            goto fail;
        }
    }
    free(rk);
    for (uint32_t r = 0; r < n_ranks; r++) {
        etk_trace *t = etk_trace_new(NULL);
        if (!t)
            goto fail;
        w->ranks[r] = t;
        char inner_id[16], outer_id[16];
        snprintf(inner_id, sizeof inner_id, "%u", sub ? 2 + r / inner : 1);
        snprintf(outer_id, sizeof outer_id, "%u", sub ? 2 + n_inner + r % inner : 1);
        const char *pg_of[ETK_SYNTH_N_ROLES] = {"1", inner_id, outer_id};
        int chain_of[ETK_SYNTH_N_ROLES] = {0, sub ? 1 : 0, sub ? 2 : 0};
        uint64_t last_coll[3] = {0, 0, 0};
        uint32_t next = (r + 1) % n_ranks, prev = (r + n_ranks - 1) % n_ranks, twin = 0;
        for (uint32_t i = 0; i < g->n; i++) {
            int tok = g->tok[i], ty = etk_synth_tok_type(tok);
            const double *v = g->val + (size_t)i * ETK_SYNTH_N_ATTR;
            uint32_t nd = 0;
            for (uint32_t k = g->par_off[i]; k < g->par_off[i + 1]; k++)
                deps[nd++] = (uint64_t)g->par[k] + 1;
            etk_node n = comm_node((uint64_t)i + 1, etk_synth_tok_name(tok), ty);
            n.data_deps = deps;
            n.n_data_deps = nd;
            n.duration_micros = (uint64_t)as_i64(v[ETK_SYNTH_A_DUR]);
            int64_t comm = v[ETK_SYNTH_A_COMM] >= 1 ? as_i64(v[ETK_SYNTH_A_COMM]) : 1;
            etk_attr a[6];
            uint32_t na = 0;
            a[na++] = etk_attr_bool("is_cpu_op", false);
            if (n_ranks == 1 && ty != ETK_NODE_COMP) { /* nobody to talk to: a local copy */
                n.type = ETK_NODE_COMP;
                ty = ETK_NODE_COMP;
                a[na++] = etk_attr_i64("num_ops", 1);
                a[na++] = etk_attr_u64("tensor_size", (uint64_t)comm);
            } else if (ty == ETK_NODE_COMP) {
                a[na++] = etk_attr_i64("num_ops", as_i64(v[ETK_SYNTH_A_FLOPS]));
                a[na++] = etk_attr_u64("tensor_size", (uint64_t)as_i64(v[ETK_SYNTH_A_TENSOR]));
            } else if (ty == ETK_NODE_COLL) {
                int role = etk_synth_tok_role(tok), ch = chain_of[role];
                a[na++] = etk_attr_i64("comm_type", etk_synth_tok_coll_type(tok));
                a[na++] = etk_attr_i64("comm_size", comm);
                a[na++] = etk_attr_str("pg_name", pg_of[role]);
                /* same order on every member: after the previous collective of the group */
                if (last_coll[ch]) {
                    n.ctrl_deps = &last_coll[ch];
                    n.n_ctrl_deps = 1;
                    for (uint32_t k = 0; k < nd; k++)
                        if (deps[k] == last_coll[ch])
                            n.n_ctrl_deps = 0;
                }
                n.attr = a;
                n.n_attr = na;
                if (!etk_trace_add(t, &n))
                    goto fail;
                last_coll[ch] = n.id;
                continue;
            } else {
                /* point-to-point: the node and its twin in the other direction, tag = position */
                bool send = ty == ETK_NODE_SEND, to_next = etk_synth_tok_role(tok) == ETK_SYNTH_PEER_NEXT;
                uint32_t peer = to_next ? next : prev, other = to_next ? prev : next;
                a[na++] = etk_attr_i32(send ? "comm_dst" : "comm_src", (int32_t)peer);
                a[na++] = etk_attr_i64("comm_size", comm);
                a[na++] = etk_attr_i32("comm_tag", (int32_t)i);
                n.attr = a;
                n.n_attr = na;
                if (!etk_trace_add(t, &n))
                    goto fail;
                etk_node tw = comm_node((uint64_t)g->n + 1 + twin++, send ? "RECV:twin" : "SEND:twin",
                                        send ? ETK_NODE_RECV : ETK_NODE_SEND);
                tw.data_deps = deps;
                tw.n_data_deps = nd;
                etk_attr b[4];
                b[0] = etk_attr_bool("is_cpu_op", false);
                b[1] = etk_attr_i32(send ? "comm_src" : "comm_dst", (int32_t)other);
                b[2] = etk_attr_i64("comm_size", comm);
                b[3] = etk_attr_i32("comm_tag", (int32_t)i);
                tw.attr = b;
                tw.n_attr = 4;
                if (!etk_trace_add(t, &tw))
                    goto fail;
                continue;
            }
            n.attr = a;
            n.n_attr = na;
            if (!etk_trace_add(t, &n))
                goto fail;
        }
    }
    free(deps);
    *out = w;
    return 0;
fail:
    free(deps);
    etk_workload_free(w);
    return etk_err(err, rc, "out of memory assembling %u ranks of %u nodes", n_ranks, g->n);
}

int etk_synth_write(const etk_workload *w, const char *prefix, etk_error *err)
{
    etk_outset os;
    int rc = etk_outset_begin(&os, prefix, err);
    if (rc)
        return rc;
    rc = etk_workload_write(w, os.tprefix, err);
    if (rc) {
        etk_outset_abort(&os);
        return rc;
    }
    return etk_outset_commit(&os, w->n_ranks, err);
}
