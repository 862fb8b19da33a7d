/* setup.c — node setup: etk_sim_add_rank_trace turns one rank's etk_trace into snode arrays
 * (timing from the Chakra attributes, stream kinds, dependencies resolved to indices, control
 * cycles broken, collectives bound to group instances via coll.c). Runs before engine.c. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/internal.h"

/* comm_stream_per_group: the stream of a group on a rank (key: the group index, or 2^31 + the
 * destination of a send: the sends to each peer have a stream), numbered in order of first use,
 * so the ranks of a class number them alike */
static uint16_t comm_lane(srank *R, uint32_t key, bool *oom)
{
    for (uint32_t l = 0; l < R->n_lanes; l++)
        if (R->lane_key[l] == key)
            return (uint16_t)l;
    if (R->n_lanes == SIM_MAX_LANES)
        return (uint16_t)(key % SIM_MAX_LANES);
    if (R->n_lanes == R->cap_lanes) {
        uint32_t cap = R->cap_lanes ? 2 * R->cap_lanes : 64;
        uint32_t *k = realloc(R->lane_key, cap * sizeof *k);
        if (!k) {
            *oom = true;
            return 0;
        }
        R->lane_key = k;
        uint64_t *b = realloc(R->lane_busy, cap / 64 * sizeof *b);
        if (!b) {
            *oom = true;
            return 0;
        }
        memset(b + R->cap_lanes / 64, 0, (cap - R->cap_lanes) / 64 * sizeof *b);
        R->lane_busy = b;
        R->cap_lanes = cap;
    }
    R->lane_key[R->n_lanes] = key;
    return (uint16_t)R->n_lanes++;
}

/* Fill one node's timing fields from its Chakra attributes. */
static int setup_node(etk_sim *s, uint32_t rank, snode *n, const etk_node *e, etk_error *err)
{
    const char *tp = e->name && e->name[0] ? e->name : "";
    uint64_t scale = s->o.stage_units ? 2 : 1;
    if (e->duration_micros > ((uint64_t)1 << 40)) /* 2^40 us = 12.7 days: keeps ns sums exact */
        return etk_err(err, ETK_EFORMAT,
                       "rank %u node id %" PRIu64 " (%s): duration_micros %" PRIu64
                       " is implausible (more than 2^40 us)",
                       rank, e->id, tp, e->duration_micros);
    uint64_t dur = e->duration_micros * 1000;
    uint64_t dur_ns_attr = 0; /* duration_ns (live mode's records): the duration to the ns */
    if (etk_node_u64(e, "duration_ns", &dur_ns_attr) && dur_ns_attr) {
        if (dur_ns_attr > SIM_MAX_NS)
            return etk_err(err, ETK_EFORMAT, "rank %u node id %" PRIu64 " (%s): duration_ns %" PRIu64
                           " is past 1e18 ns", rank, e->id, tp, dur_ns_attr);
        dur = dur_ns_attr;
    }
    n->type = (uint8_t)(e->type >= 0 && e->type < ETK_NODE_TYPE_COUNT ? e->type : 0);
    n->dur_ns = dur;
    n->mem_alloc = n->mem_free = 0; /* memory over time (memory.c) */
    bool has_alloc = etk_node_u64(e, "mem_alloc_bytes", &n->mem_alloc);
    bool has_free = etk_node_u64(e, "mem_free_bytes", &n->mem_free);
    if (has_alloc || has_free)
        s->mem_tracked = true;
    bool o = false;
    switch (e->type) {
    case ETK_NODE_COMP: {
        bool cpu = false;
        etk_node_bool(e, "is_cpu_op", &cpu);
        int64_t fl = 0;
        uint64_t tb = 0;
        etk_node_i64(e, "num_ops", &fl);
        etk_node_u64(e, "tensor_size", &tb);
        if (fl < 0) { /* validate reports negative-ops */
            fl = 0;
            s->neg_ops++;
        }
        /* STAGE counts matmuls (op_type "M") in multiply-accumulates; its elementwise,
         * slice and custom ops count operations: only MACs are doubled */
        const char *opt = etk_node_str(e, "op_type");
        uint64_t fscale = opt && strcmp(opt, "M") ? 1 : scale;
        n->flops = cpu ? 0 : (uint64_t)fl * fscale;
        n->bytes = tb * scale;
        n->kind = cpu ? K_CPU : K_COMP;
        if (s->cl.astra_compat) {
            /* ASTRA-sim: roofline for GPU ops when roofline-enabled, else the duration
             * replayed (a zero duration as 1 ns) */
            if (s->cl.astra_roofline && !cpu)
                n->dur_ns = s->costs.compute_ns(s->costs.ctx, &s->cl, n->flops, n->bytes);
            else if (!dur)
                n->dur_ns = 1;
        } else if (!dur && !cpu && (n->flops || n->bytes)) {
            /* a node marked "precision": "fp8" (FP8 GEMMs of etkit gen --precision fp8) runs at
             * the fp8 peak: its FLOPs are charged at peak[cluster precision] / peak[fp8], which
             * makes the compute term exactly flops / peak[fp8] */
            uint64_t fl = n->flops;
            const char *prec = etk_node_str(e, "precision");
            int cp = (int)s->cl.precision;
            if (prec && !strcmp(prec, "fp8") && s->cl.gpu.peak_flops[ETK_PREC_FP8] > 0)
                s->any_fp8 = true;
            /* any other precision the node names (live mode's cuBLAS calls: "fp32", "tf32", ...)
             * likewise at its own peak */
            int np = prec ? etk_precision_parse(prec) : -1;
            if (np >= 0 && cp >= 0 && cp < ETK_PREC_COUNT && cp != np && s->cl.gpu.peak_flops[np] > 0 &&
                s->cl.gpu.peak_flops[cp] > 0)
                fl = (uint64_t)((long double)fl * (long double)s->cl.gpu.peak_flops[cp] /
                                (long double)s->cl.gpu.peak_flops[np] + 0.5L);
            if (s->o.compute && s->costs.compute_ns == sim_def_comp) { /* compute model */
                etk_op_desc op; /* it reads "precision" itself: the FP8 peak and efficiency */
                etk_compute_op_from_node(e, n->flops, n->bytes, &op);
                n->dur_ns = etk_compute_op_ns(&s->cl, s->o.compute, &op);
            } else {
                n->dur_ns = s->costs.compute_ns(s->costs.ctx, &s->cl, fl, n->bytes);
            }
        }
        if (!cpu && rank < s->o.n_rank_speed && s->o.rank_speed[rank] != 1.0 &&
            s->o.rank_speed[rank] > 0) { /* heterogeneity: a slow (or fast) GPU */
            long double d = (long double)n->dur_ns / s->o.rank_speed[rank];
            n->dur_ns = d >= 1.8e19L ? UINT64_MAX : (uint64_t)llroundl(d);
        }
        break;
    }
    case ETK_NODE_MEM_LOAD:
    case ETK_NODE_MEM_STORE: {
        uint64_t tb = 0;
        etk_node_u64(e, "tensor_size", &tb);
        n->bytes = tb * scale;
        n->kind = K_COMP;
        int64_t ce = 0; /* live mode: a copy engine of its direction, beside the compute stream */
        if (etk_node_i64(e, "copy_engine", &ce) && (ce == 1 || ce == 2)) {
            n->kind = K_COPY;
            n->lane = (uint16_t)(ce - 1);
        }
        if (!dur && n->bytes)
            n->dur_ns = s->costs.compute_ns(s->costs.ctx, &s->cl, 0, n->bytes);
        break;
    }
    case ETK_NODE_COLL: {
        int64_t ct = 0, cs = 0;
        if (!etk_node_i64(e, "comm_type", &ct)) /* absent: ALL_REDUCE, as other tools read it */
            s->no_type++;
        if (!etk_node_i64(e, "comm_size", &cs)) {
            /* Chakra's converter writes some collectives (e.g. broadcast) without a size:
             * time them as 0 bytes (latency only), like a replay of an unknown size */
            cs = 0;
            s->no_size++;
        }
        if (cs < 0)
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): comm_size %" PRId64
                           " is negative; expected bytes",
                           rank, e->id, tp, cs);
        if (ct < 0 || ct >= ETK_COLL_TYPE_COUNT)
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): comm_type %" PRId64
                           " is not a collective type (0..%d)",
                           rank, e->id, tp, ct, ETK_COLL_TYPE_COUNT - 1);
        const char *pg = etk_node_str(e, "pg_name");
        uint32_t gi = sim_find_group(s, pg);
        if (gi == SIM_NONE)
            return etk_err(err, ETK_ENOTFOUND,
                           "rank %u node id %" PRIu64 " (%s): pg_name \"%s\" is not a group of "
                           "the comm-group file%s",
                           rank, e->id, tp, pg, s->eg ? "" : " (no comm-group file was found)");
        sgroup *g = &s->g[gi];
        int rc = sim_prepare_group(s, g, err);
        if (rc)
            return rc;
        uint32_t p = sim_group_pos(g, rank);
        if (p == SIM_NONE)
            return etk_err(err, ETK_EINVAL,
                           "rank %u node id %" PRIu64 " (%s): the rank is not a member of group "
                           "\"%s\"",
                           rank, e->id, tp, g->name);
        n->kind = K_COMM;
        n->ctype = (uint8_t)ct;
        n->bytes = (uint64_t)cs * scale;
        n->aux = gi;
        n->pos = g->simpos[p];
        n->dur_ns = sim_coll_cost(s, gi, (int)ct, n->bytes, &o);
        break;
    }
    case ETK_NODE_SEND:
    case ETK_NODE_RECV: {
        bool snd = e->type == ETK_NODE_SEND;
        int64_t peer = -1, cs = 0, tag = 0;
        const char *pk = snd ? "comm_dst" : "comm_src";
        if (!etk_node_i64(e, pk, &peer) || peer < 0 || peer >= s->n_ranks)
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): %s %s %" PRId64
                           " is not a rank of the workload (0..%u)",
                           rank, e->id, tp, snd ? "send" : "recv", pk, peer, s->n_ranks - 1);
        etk_node_i64(e, "comm_size", &cs);
        etk_node_i64(e, "comm_tag", &tag);
        if (cs < 0)
            cs = 0;
        n->bytes = (uint64_t)cs * scale;
        uint32_t src = snd ? rank : (uint32_t)peer, dst = snd ? (uint32_t)peer : rank;
        n->aux = sim_get_chan(s, src, dst, (int32_t)tag, &o);
        if (snd) {
            n->kind = K_COMM;
            n->dur_ns = s->costs.p2p_ns(s->costs.ctx, &s->cl, src, dst, n->bytes);
        } else {
            n->kind = K_RECV;
            n->dur_ns = 0;
        }
        break;
    }
    default:
        n->kind = K_FREE;
        break;
    }
    if (o)
        return sim_oom(err);
    if (n->kind == K_COMM && s->o.comm_stream_per_group) {
        n->lane = comm_lane(&s->r[rank], n->type == ETK_NODE_COLL ? n->aux : 0x80000000u | (uint32_t)s->ch[n->aux].dst,
                            &o);
        if (o)
            return sim_oom(err);
    }
    if (s->host_on && n->kind != K_CPU && n->kind != K_FREE) {
        /* host model (host.c): the host thread's cost to issue this node: host_op_ns times the
         * kernels it stands for (attribute host_ops, default 1; 0: not issued by the host) */
        int64_t ops = 1;
        if (etk_node_i64(e, "host_ops", &ops) && (ops < 0 || ops > 1000000))
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): host_ops %" PRId64 " is not a kernel count in [0, 1e6]",
                           rank, e->id, tp, ops);
        n->host_ns = (uint64_t)llround(s->comp.host_op_ns * (double)ops);
        bool hs = false;
        if (etk_node_bool(e, "host_sync", &hs) && hs)
            n->host_ns |= SIM_HOST_SYNC;
    }
    if (n->dur_ns > SIM_MAX_NS) /* 10^18 ns = 31.7 years: an input out of range, not a step time */
        return etk_err(err, ETK_EINVAL,
                       "rank %u node id %" PRIu64 " (%s): simulated duration %.3g ns is past 1e18 ns (31.7 years): "
                       "a bandwidth, efficiency or size out of range", rank, e->id, tp, (double)n->dur_ns);
    return 0;
}

/* Warnings for the user (the library never prints): "; "-separated, the first few kept. */
void sim_note(etk_sim *s, const char *fmt, ...)
{
    size_t off = strlen(s->notes);
    if (off + 8 >= sizeof s->notes) {
        s->notes_dropped++;
        return;
    }
    if (off)
        off += (size_t)snprintf(s->notes + off, sizeof s->notes - off, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes + off, sizeof s->notes - off, fmt, ap);
    va_end(ap);
}

static bool has_dep(const uint64_t *d, uint32_t n, uint64_t id)
{
    for (uint32_t k = 0; k < n; k++)
        if (d[k] == id)
            return true;
    return false;
}

/* Kahn's algorithm over the chunk's internal edges; with data_only, control-only edges are
 * skipped. Fills pos[] with the topological position (SIM_NONE for nodes on a cycle); returns
 * the number of nodes ordered. Ties go to the smallest index. */
static uint32_t topo_order(const srank *R, uint32_t base, uint32_t m, const etk_trace *t,
                           bool data_only, uint32_t *indeg, uint32_t *queue, uint32_t *pos)
{
    memset(indeg, 0, sizeof(uint32_t) * m);
    for (uint32_t u = 0; u < m; u++) {
        const snode *n = &R->nodes[base + u];
        pos[u] = SIM_NONE;
        for (uint32_t k = 0; k < n->n_succ; k++) {
            uint32_t v = R->succ[n->succ_begin + k] - base;
            const etk_node *e = &t->nodes[v];
            if (!data_only || has_dep(e->data_deps, e->n_data_deps, n->id))
                indeg[v]++;
        }
    }
    uint32_t qh = 0, qt = 0;
    for (uint32_t u = 0; u < m; u++)
        if (!indeg[u])
            queue[qt++] = u;
    while (qh < qt) {
        uint32_t u = queue[qh];
        pos[u] = qh++;
        const snode *n = &R->nodes[base + u];
        for (uint32_t k = 0; k < n->n_succ; k++) {
            uint32_t v = R->succ[n->succ_begin + k] - base;
            const etk_node *e = &t->nodes[v];
            if ((!data_only || has_dep(e->data_deps, e->n_data_deps, n->id)) && --indeg[v] == 0)
                queue[qt++] = v;
        }
    }
    return qt;
}

/* Chakra's PyTorch converter writes control dependencies that close cycles with data
 * dependencies (converted_cnn_ddp.0.et: node 3317 ctrl-depends on its own kernel 3318). In the
 * lenient mode (missing_deps_ignore) such control edges are dropped: the ones that go against
 * a topological order of the data edges (self-loops included). Returns the number dropped. */
static uint64_t break_ctrl_cycles(srank *R, uint32_t base, uint32_t m, const etk_trace *t,
                                  bool *oom_flag)
{
    uint32_t *buf = malloc(sizeof(uint32_t) * 3 * ((size_t)m + 1));
    if (!buf) {
        *oom_flag = true;
        return 0;
    }
    uint32_t *indeg = buf, *queue = buf + m + 1, *pos = buf + 2 * (m + 1);
    uint64_t dropped = 0;
    if (topo_order(R, base, m, t, false, indeg, queue, pos) < m &&
        topo_order(R, base, m, t, true, indeg, queue, pos) == m) {
        for (uint32_t u = 0; u < m; u++) {
            snode *n = &R->nodes[base + u];
            uint32_t keep = 0;
            for (uint32_t k = 0; k < n->n_succ; k++) {
                uint32_t v = R->succ[n->succ_begin + k];
                const etk_node *e = &t->nodes[v - base];
                if (pos[u] >= pos[v - base] && !has_dep(e->data_deps, e->n_data_deps, n->id)) {
                    R->nodes[v].pending--;
                    dropped++;
                } else {
                    R->succ[n->succ_begin + keep++] = v;
                }
            }
            n->n_succ = keep;
        }
    }
    free(buf);
    return dropped;
}

int etk_sim_add_rank_trace(etk_sim *s, uint32_t rank, const etk_trace *t, etk_error *err)
{
    if (s->broken)
        return etk_err(err, ETK_EINVAL, "simulator: unusable after an earlier error");
    if (rank >= s->n_ranks)
        return etk_err(err, ETK_EINVAL, "simulator: rank %u out of range (%u ranks)", rank,
                       s->n_ranks);
    srank *R = &s->r[rank];
    const char *path = t->path && t->path[0] ? t->path : "(in memory)";
    if (!R->simulated)
        return etk_err(err, ETK_EINVAL,
                       "simulator: rank %u is folded into class %u (representative rank %u); "
                       "only representatives take traces",
                       rank, s->cls[rank], s->rep[s->cls[rank]]);
    if (t->n_nodes > UINT32_MAX / 2 - R->n)
        return etk_err(err, ETK_EINVAL, "%s: too many nodes", path);
    uint32_t base = R->n, m = (uint32_t)t->n_nodes;
    s->broken = true; /* until this function succeeds */
    if (sim_grow_p(s, (void **)&R->nodes, &R->cap, base + m, sizeof(snode)) != 0)
        return sim_oom(err);
    bool o = false;
    uint64_t dup_ids = 0; /* validate reports duplicate-id */
    if (base == 0 && m && !R->dense) {
        /* dense ids (generators number nodes 0..n or 1..n): a direct table, 4 bytes per id */
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint32_t i = 0; i < m; i++) {
            lo = t->nodes[i].id < lo ? t->nodes[i].id : lo;
            hi = t->nodes[i].id > hi ? t->nodes[i].id : hi;
        }
        if (hi - lo < 4 * (uint64_t)m + 64) {
            R->dense_lo = lo;
            R->dense_n = (uint32_t)(hi - lo + 1);
            R->dense = sim_pool_take(s, sizeof(uint32_t) * R->dense_n);
            if (!R->dense)
                R->dense = malloc(sizeof(uint32_t) * R->dense_n);
            if (!R->dense)
                return sim_oom(err);
            memset(R->dense, 0xff, sizeof(uint32_t) * R->dense_n);
        }
    }
    for (uint32_t i = 0; i < m; i++) {
        const etk_node *e = &t->nodes[i];
        snode *n = &R->nodes[base + i];
        memset(n, 0, sizeof *n);
        n->id = e->id;
        n->src = e;
        n->extra = n->qnext = SIM_NONE;
        if (e->id - R->dense_lo < R->dense_n) {
            if (R->dense[e->id - R->dense_lo] == SIM_NONE)
                R->dense[e->id - R->dense_lo] = base + i;
            else
                dup_ids++;
        } else {
            dup_ids += etk_kmap_put(&R->ids, e->id, 0, base + i, &o) != base + i; /* keeps the first */
        }
    }
    if (o)
        return sim_oom(err);
    /* pass 1: count successors inside the chunk, overflow edges to older nodes, missing ids */
    uint32_t *cnt = calloc((size_t)m + 1, sizeof(uint32_t));
    if (!cnt)
        return sim_oom(err);
    uint64_t missing = 0, shown[5];
    for (uint32_t i = 0; i < m; i++) {
        const etk_node *e = &t->nodes[i];
        snode *n = &R->nodes[base + i];
        for (int l = 0; l < 2; l++) {
            const uint64_t *d = l ? e->ctrl_deps : e->data_deps;
            uint32_t nd = l ? e->n_ctrl_deps : e->n_data_deps;
            for (uint32_t k = 0; k < nd; k++) {
                uint32_t j = id_get(R, d[k]);
                if (j == SIM_NONE) {
                    if (missing < 5)
                        shown[missing] = d[k];
                    missing++;
                } else if (j >= base) {
                    cnt[j - base]++;
                    n->pending++;
                } else if (R->nodes[j].state != ST_DONE) {
                    if (sim_grow((void **)&R->xe, &R->cap_xe, R->n_xe + 1, sizeof(xedge)) != 0) {
                        free(cnt);
                        return sim_oom(err);
                    }
                    R->xe[R->n_xe] = (xedge){base + i, R->nodes[j].extra};
                    R->nodes[j].extra = R->n_xe++;
                    n->pending++;
                }
            }
        }
    }
    if (missing && !s->o.missing_deps_ignore) {
        free(cnt);
        char ids[128] = "";
        size_t off = 0;
        for (uint64_t k = 0; k < missing && k < 5; k++)
            off += (size_t)snprintf(ids + off, sizeof ids - off, "%s%" PRIu64, k ? ", " : "",
                                    shown[k]);
        return etk_err(err, ETK_EFORMAT,
                       "%s (rank %u): %" PRIu64 " dependencies on node ids absent from the trace "
                       "(first: %s%s); run with --missing-deps=ignore to treat them as satisfied",
                       path, rank, missing, ids, missing > 5 ? ", ..." : "");
    }
    if (missing) {
        R->missing += missing;
        s->missing_total += missing;
        sim_note(s, "%s (rank %u): %" PRIu64 " dependencies on absent node ids treated as "
                "satisfied (first: %" PRIu64 ")",
             path, rank, missing, shown[0]);
    }
    /* pass 2: CSR successor lists for the chunk */
    uint64_t total = 0;
    for (uint32_t i = 0; i < m; i++)
        total += cnt[i];
    if (total > UINT32_MAX - R->n_succ) {
        free(cnt);
        return etk_err(err, ETK_EINVAL, "%s: too many dependencies", path);
    }
    if (sim_grow_p(s, (void **)&R->succ, &R->cap_succ, R->n_succ + (uint32_t)total,
               sizeof(uint32_t))) {
        free(cnt);
        return sim_oom(err);
    }
    uint32_t off = R->n_succ;
    for (uint32_t i = 0; i < m; i++) {
        R->nodes[base + i].succ_begin = off;
        off += cnt[i];
        cnt[i] = 0;
    }
    for (uint32_t i = 0; i < m; i++) {
        const etk_node *e = &t->nodes[i];
        for (int l = 0; l < 2; l++) {
            const uint64_t *d = l ? e->ctrl_deps : e->data_deps;
            uint32_t nd = l ? e->n_ctrl_deps : e->n_data_deps;
            for (uint32_t k = 0; k < nd; k++) {
                uint32_t j = id_get(R, d[k]);
                if (j != SIM_NONE && j >= base) {
                    snode *p = &R->nodes[j];
                    R->succ[p->succ_begin + cnt[j - base]++] = base + i;
                }
            }
        }
    }
    for (uint32_t i = 0; i < m; i++)
        R->nodes[base + i].n_succ = cnt[i];
    R->n_succ = off;
    free(cnt);
    R->n = base + m;
    if (s->o.missing_deps_ignore) {
        uint64_t dropped = break_ctrl_cycles(R, base, m, t, &o);
        if (o)
            return sim_oom(err);
        if (dropped)
            sim_note(s, "%s (rank %u): %" PRIu64 " control dependencies that close cycles with "
                    "data dependencies dropped",
                 path, rank, dropped);
        R->ctrl_dropped += dropped;
    }
    for (uint32_t i = 0; i < m; i++) {
        int rc = setup_node(s, rank, &R->nodes[base + i], &t->nodes[i], err);
        if (rc) {
            etk_err_prefix(err, "%s", path);
            return rc;
        }
    }
    if (s->no_size)
        sim_note(s, "%s (rank %u): %" PRIu64 " collectives without comm_size, timed as 0 bytes",
             path, rank, s->no_size);
    if (s->no_type)
        sim_note(s, "%s (rank %u): %" PRIu64 " collectives without comm_type, timed as ALL_REDUCE", path, rank,
             s->no_type);
    if (s->neg_ops)
        sim_note(s, "%s (rank %u): %" PRIu64 " compute nodes with a negative num_ops, timed as 0 FLOPs", path, rank,
             s->neg_ops);
    if (dup_ids)
        sim_note(s, "%s (rank %u): %" PRIu64 " nodes repeat the id of an earlier node (dependencies go to the "
             "first)", path, rank, dup_ids);
    s->no_size = s->no_type = s->neg_ops = 0;
    s->broken = false;
    s->finished = false;
    for (uint32_t i = 0; i < m; i++)
        if (R->nodes[base + i].pending == 0)
            make_ready(s, rank, base + i);
    return s->broken ? sim_oom(err) : 0;
}
