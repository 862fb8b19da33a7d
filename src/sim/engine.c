/* engine.c — the discrete-event core of `etkit sim`: takes per-rank traces (etk_trace, fed
 * incrementally), resolves dependencies to node indices once, and advances virtual time in
 * integer ns. Compute is timed by the cluster's roofline (net.h etk_hw_compute_ns), collectives
 * and messages by the network model (etk_net_coll_ns / etk_net_p2p_ns), or by caller hooks.
 *
 * Hot path: an event heap of (time, seq); per rank per stream kind a ready min-heap keyed by node
 * id (ASTRA-sim's smallest-id-first policy); successor lists in CSR arrays; collective instances
 * and point-to-point channels resolved to indices when a trace is added. No malloc and no hash
 * lookup per event. All events of one timestamp are applied before any node is issued, so the
 * result does not depend on the order of simultaneous events (this is what makes folded and
 * unfolded runs identical).
 *
 * This file is the event loop; construction (build.c), node setup (setup.c), stream scheduling
 * (streams.c), collective matching (coll.c) and the containers (pool.c) are its neighbours: the
 * map is at the top of internal.h. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "etkit/progress.h"
#include "sim/internal.h"

#define BIG_BYTES ((size_t)2 << 20)

static void complete(etk_sim *s, uint32_t r, uint32_t i, uint64_t t)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    n->state = ST_DONE;
    n->end_ns = t;
    if (n->mem_free)
        sim_mem_free(R, n);
    R->n_done++;
    R->st.finish_ns = t;
    if (R->st.flops > UINT64_MAX - n->flops) { /* never a wrapped sum */
        R->st.flops = UINT64_MAX;
        if (s->flops_overflow_rank == SIM_NONE)
            s->flops_overflow_rank = r;
    } else {
        R->st.flops += n->flops;
    }
    if ((n->host_ns & SIM_HOST_SYNC) && s->host_on && R->host_wait == i)
        sim_host_resume(s, r, t); /* the host waited for this node: it issues the next ones */
    /* a rank without successor edges has succ == NULL: no pointer arithmetic on it (UB) */
    const uint32_t *sc = n->n_succ ? R->succ + n->succ_begin : NULL;
    for (uint32_t k = 0; k < n->n_succ; k++)
        if (--R->nodes[sc[k]].pending == 0)
            make_ready(s, r, sc[k]);
    for (uint32_t e = n->extra; e != SIM_NONE; e = R->xe[e].next)
        if (--R->nodes[R->xe[e].to].pending == 0)
            make_ready(s, r, R->xe[e].to);
    mark_dirty(s, r);
}

static int handle(etk_sim *s, const sevent *e, etk_error *err)
{
    uint64_t t = e->t;
    switch (e->kind) {
    case EV_NODE: {
        srank *R = &s->r[e->a];
        snode *n = &R->nodes[e->b];
        if (n->kind == K_COMP || n->kind == K_CPU || n->kind == K_COPY) {
            acc(R, t);
            if (n->kind == K_COMP || n->kind == K_COPY)
                R->n_comp--;
            else
                R->n_cpu--;
        } else if (n->type == ETK_NODE_SEND) {
            acc(R, t);
            R->n_xfer--;
            R->st.comm_bytes += n->bytes;
        }
        sim_release_stream(R, n);
        complete(s, e->a, e->b, t);
        return 0;
    }
    case EV_COLL: {
        sgroup *g = &s->g[e->a];
        uint32_t k = e->b;
        sinst *in = g->inst[g->inst_head + (k - g->base)];
        if (s->nf)
            g->stat[in->ctype].time += t - in->xfer_t0;
        for (uint32_t p = 0; p < g->n_sim; p++) {
            uint32_t r = g->simrank[p];
            srank *R = &s->r[r];
            acc(R, t);
            R->n_xfer--;
            snode *n = &R->nodes[in->node[p]];
            R->st.comm_bytes += n->bytes;
            sim_release_stream(R, n);
            complete(s, r, in->node[p], t);
        }
        g->inst[g->inst_head + (k - g->base)] = NULL;
        in->next_free = g->free_inst;
        g->free_inst = in;
        while (g->inst_n && !g->inst[g->inst_head]) {
            g->inst_head++;
            g->inst_n--;
            g->base++;
        }
        return 0;
    }
    case EV_HOST: /* the host thread issues a node whose dependencies are done */
        make_ready_now(s, e->a, e->b);
        return 0;
    case EV_P2P: { /* a receive's message has arrived */
        srank *R = &s->r[e->a];
        snode *n = &R->nodes[e->b];
        if (n->pos) {
            acc(R, t);
            R->n_xfer--;
        }
        complete(s, e->a, e->b, t);
        return 0;
    }
    }
    return etk_err(err, ETK_EINVAL, "simulator: corrupt event");
}

static int flush_dirty(etk_sim *s, uint64_t t, etk_error *err)
{
    /* sim_dispatch can mark more ranks dirty (never the same one twice in a row for the same node) */
    for (uint32_t k = 0; k < s->n_dirty; k++) {
        int rc = sim_dispatch(s, s->dirty[k], t, err);
        if (rc)
            return rc;
    }
    s->n_dirty = 0;
    return s->broken ? sim_oom(err) : 0;
}

/* Flow network model: advance the flows to the next engine event (or t_end); a collective whose
 * last transfer completes first becomes an EV_COLL event at that time (rounded up to the ns). */
int sim_flow_pump(etk_sim *s, uint64_t t_end, etk_error *err)
{
    uint64_t lim = s->n_ev && s->ev[0].t < t_end ? s->ev[0].t : t_end;
    if (!etk_net_flows_busy(s->nf) && lim == UINT64_MAX)
        return 0;
    uint64_t tag;
    double tc;
    int got = etk_net_flows_next(s->nf, lim == UINT64_MAX ? INFINITY : (double)lim, &tag, &tc);
    if (got < 0)
        return sim_oom(err);
    if (got) {
        uint64_t te = (uint64_t)ceil(tc);
        if (te < s->now)
            te = s->now;
        if (tag >> 63) { /* a send: it completes, and the receive matched to it arrives */
            uint32_t r = (uint32_t)(tag >> 32) & 0x7fffffffu, i = (uint32_t)tag;
            srank *R = &s->r[r];
            snode *n = &R->nodes[i];
            n->dur_ns = te - n->start_ns;
            R->p2p_time += n->dur_ns;
            if (sim_ev_push(s, te, EV_NODE, r, i) != 0)
                return sim_oom(err);
            if (n->pos && sim_ev_push(s, te, EV_P2P, s->ch[n->aux].dst, n->pos - 1) != 0)
                return sim_oom(err);
            n->pos = 0;
        } else if (sim_ev_push(s, te, EV_COLL, (uint32_t)(tag >> 32), (uint32_t)tag) != 0) {
            return sim_oom(err);
        }
    }
    return 0;
}

/* o.progress: nodes done of the simulated ranks' nodes */
static void progress(etk_sim *s)
{
    uint64_t done = 0, total = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++)
        if (s->r[r].simulated) {
            done += s->r[r].n_done;
            total += s->r[r].n;
        }
    s->o.progress->total = total;
    etk_progress_update(s->o.progress, done);
}

#define PROGRESS(s)                                                                                \
    do {                                                                                           \
        if ((s)->o.progress && (++(s)->progress_tick & 0xfff) == 0)                                \
            progress(s);                                                                           \
    } while (0)

int etk_sim_run_until(etk_sim *s, uint64_t t_end, etk_error *err)
{
    if (s->broken)
        return etk_err(err, ETK_EINVAL, "simulator: unusable after an earlier error");
    int rc = flush_dirty(s, s->now, err);
    while (!rc && s->nf && (rc = sim_flow_pump(s, t_end, err)) == 0 && s->n_ev && s->ev[0].t <= t_end) {
        uint64_t t = s->ev[0].t;
        s->now = t;
        while (!rc && s->n_ev && s->ev[0].t == t) {
            sevent e = sim_ev_pop(s);
            rc = handle(s, &e, err);
            PROGRESS(s);
        }
        if (!rc)
            rc = flush_dirty(s, t, err);
    }
    while (!rc && !s->nf && s->n_ev && s->ev[0].t <= t_end) {
        uint64_t t = s->ev[0].t;
        s->now = t;
        while (!rc && s->n_ev && s->ev[0].t == t) {
            sevent e = sim_ev_pop(s);
            rc = handle(s, &e, err);
            PROGRESS(s);
        }
        if (!rc)
            rc = flush_dirty(s, t, err);
    }
    if (rc) {
        s->broken = true;
        return rc;
    }
    if (t_end != UINT64_MAX && t_end > s->now)
        s->now = t_end;
    return 0;
}

uint64_t etk_sim_now(const etk_sim *s) { return s->now; }

uint64_t etk_sim_next_event_ns(etk_sim *s)
{
    if (s->broken || flush_dirty(s, s->now, NULL) != 0)
        return UINT64_MAX;
    /* flow model: the next transfer to complete becomes an event first */
    if (s->nf && sim_flow_pump(s, UINT64_MAX, NULL) != 0)
        return UINT64_MAX;
    return s->n_ev ? s->ev[0].t : UINT64_MAX;
}

int etk_sim_node_end(const etk_sim *s, uint32_t rank, uint64_t id, uint64_t *end_ns)
{
    if (rank >= s->n_ranks)
        return ETK_ENOTFOUND;
    const srank *R = &s->r[rank];
    uint32_t i = id_get(R, id);
    if (i == SIM_NONE || i >= R->n)
        return ETK_ENOTFOUND;
    if (R->nodes[i].state != ST_DONE)
        return 0;
    *end_ns = R->nodes[i].end_ns;
    return 1;
}

static size_t describe_block(const etk_sim *s, uint32_t r, char *buf, size_t len)
{
    const srank *R = &s->r[r];
    size_t off = 0;
    int shown = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (off < len)                                                                             \
            off += (size_t)snprintf(buf + off, len - off, __VA_ARGS__);                            \
    } while (0)
    for (uint32_t i = 0; i < R->n && shown < 3; i++) {
        const snode *n = &R->nodes[i];
        if (n->state != ST_ISSUED)
            continue;
        const sgroup *g = n->type == ETK_NODE_COLL ? &s->g[n->aux] : NULL;
        const sinst *in = g && n->seq >= g->base && n->seq - g->base < g->inst_n
                              ? g->inst[g->inst_head + (n->seq - g->base)]
                              : NULL;
        if (in && in->arrived < g->n_sim) {
            PUT("%s collective #%u %s of %" PRIu64 " bytes on group \"%s\" (node id %" PRIu64
                ") waits for rank(s)",
                shown ? ";" : "", n->seq, etk_coll_type_name(n->ctype), n->bytes,
                g->name[0] ? g->name : "all ranks", n->id);
            int w = 0;
            for (uint32_t p = 0; p < g->n_sim; p++)
                if (in->node[p] == SIM_NONE) {
                    if (w < 8)
                        PUT(" %u", g->simrank[p]);
                    w++;
                }
            if (w > 8)
                PUT(" ... (%d in all)", w);
            shown++;
        } else if (n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV) {
            bool snd = n->type == ETK_NODE_SEND;
            int64_t peer = -1, tag = 0;
            etk_node_i64(n->src, snd ? "comm_dst" : "comm_src", &peer);
            etk_node_i64(n->src, "comm_tag", &tag);
            PUT("%s %s rank %" PRId64 " tag %" PRId64 " (node id %" PRIu64
                ") waits for the matching %s",
                shown ? ";" : "", snd ? "send to" : "recv from", peer, tag, n->id,
                snd ? "recv" : "send");
            shown++;
        }
    }
    if (!shown && R->host_blocked.n && R->host_wait != SIM_NONE) {
        /* host.c: ready nodes behind a host_sync node that cannot complete */
        PUT(" node id %" PRIu64 " waits for the host thread, which waits for host_sync node id %" PRIu64
            " (a host_sync node that depends on a later node in trace order never completes)",
            R->nodes[R->host_blocked.a[0].idx].id, R->nodes[R->host_wait].id);
        shown++;
    }
    if (!shown) {
        /* nothing issued: name the first waiting node and an unfinished dependency */
        for (uint32_t i = 0; i < R->n; i++) {
            const snode *n = &R->nodes[i];
            if (n->state != ST_WAIT)
                continue;
            PUT(" node id %" PRIu64 " waits for %u unfinished dependenc%s", n->id, n->pending,
                n->pending == 1 ? "y" : "ies");
            const etk_node *e = n->src;
            for (int l = 0; l < 2; l++) {
                const uint64_t *d = l ? e->ctrl_deps : e->data_deps;
                uint32_t nd = l ? e->n_ctrl_deps : e->n_data_deps;
                for (uint32_t k = 0; k < nd; k++) {
                    uint32_t j = id_get(R, d[k]);
                    if (j != SIM_NONE && R->nodes[j].state != ST_DONE) {
                        PUT(" (e.g. node id %" PRIu64 "%s)", d[k],
                            j == i ? ": itself" : R->nodes[j].state == ST_WAIT ? ", also waiting" : "");
                        l = 2;
                        break;
                    }
                }
            }
            break;
        }
    }
#undef PUT
    return off;
}

size_t etk_sim_blocked_report(const etk_sim *s, char *buf, size_t len)
{
    size_t off = 0;
    if (len)
        buf[0] = 0;
    for (uint32_t r = 0; r < s->n_ranks && off + 1 < len; r++) {
        const srank *R = &s->r[r];
        if (!R->simulated || R->n_done == R->n)
            continue;
        off += (size_t)snprintf(buf + off, len - off, "%sRank %u (%u of %u nodes done):", off ? " " : "", r,
                                R->n_done, R->n);
        if (off < len)
            off += describe_block(s, r, buf + off, len - off);
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, ".");
    }
    return off < len ? off : (len ? len - 1 : 0);
}

int etk_sim_finish(etk_sim *s, etk_error *err)
{
    int rc = etk_sim_run_until(s, UINT64_MAX, err);
    if (rc)
        return rc;
    if (s->flops_overflow_rank != SIM_NONE)
        return etk_err(err, ETK_EINVAL,
                       "rank %u: the sum of num_ops passes 1.8e19 FLOPs (nodes with num_ops near 2^63: saturated or "
                       "corrupt values); FLOPs/step and MFU would be wrong", s->flops_overflow_rank);
    if (s->now > SIM_MAX_NS)
        return etk_err(err, ETK_EINVAL, "simulated step time %.3g ns is past 1e18 ns (31.7 years): an input out of range",
                       (double)s->now);
    uint32_t blocked = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++)
        if (s->r[r].simulated && s->r[r].n_done < s->r[r].n)
            blocked++;
    if (blocked) {
        char msg[900];
        size_t off = (size_t)snprintf(msg, sizeof msg,
                                      "deadlock at t = %" PRIu64 " ns: %u %srank(s) cannot proceed.",
                                      s->now, blocked, s->folded ? "simulated " : "");
        uint32_t shown = 0;
        for (uint32_t r = 0; r < s->n_ranks && off < sizeof msg; r++) {
            const srank *R = &s->r[r];
            if (!R->simulated || R->n_done == R->n)
                continue;
            if (shown == 6) {
                off += (size_t)snprintf(msg + off, sizeof msg - off, " ... (%u more ranks)",
                                        blocked - shown);
                break;
            }
            off += (size_t)snprintf(msg + off, sizeof msg - off, " Rank %u (%u of %u nodes done):",
                                    r, R->n_done, R->n);
            if (off < sizeof msg)
                off += describe_block(s, r, msg + off, sizeof msg - off);
            if (off < sizeof msg)
                off += (size_t)snprintf(msg + off, sizeof msg - off, ".");
            shown++;
        }
        s->broken = true;
        return etk_err(err, ETK_EINVAL, "%s", msg);
    }
    if (s->p2p_mismatch)
        sim_note(s, "%" PRIu64 " send/recv pairs of different comm_size, timed at the send's size (the first: "
             "rank %" PRIu64 " id %" PRIu64 " sends %" PRIu64 " B, rank %" PRIu64 " id %" PRIu64 " expects %" PRIu64 " B)",
             s->p2p_mismatch, s->p2p_first[0], s->p2p_first[1], s->p2p_first_b[0], s->p2p_first[2],
             s->p2p_first[3], s->p2p_first_b[1]);
    rc = sim_build_result(s, err);
    if (rc)
        return rc;
    s->finished = true;
    return 0;
}

const etk_sim_result *etk_sim_result_get(etk_sim *s) { return s->finished ? &s->res : NULL; }
