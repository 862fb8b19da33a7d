/* streams.c — stream scheduling: per rank, per stream kind, ready nodes wait in min-heaps by
 * id (ASTRA-sim's smallest-id-first) and are issued to free lanes (compute, comm per group,
 * CPU); issuing a node schedules its completion event or hands it to coll.c for matching.
 * Called from the event loop (engine.c). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/internal.h"

void sim_release_stream(srank *R, snode *n)
{
    if (n->kind == K_COMM && R->lane_busy) /* comm_stream_per_group */
        R->lane_busy[n->lane / 64] &= ~(1ull << (n->lane % 64));
    else if (n->kind < 3)
        R->busy[n->kind] &= ~(1u << n->stream);
    else if (n->kind == K_COPY)
        R->busy_copy &= ~(1u << n->lane);
}

static int start_node(etk_sim *s, uint32_t r, uint32_t i, uint64_t t, etk_error *err)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    n->state = ST_ISSUED;
    n->start_ns = t;
    if (n->mem_alloc)
        sim_mem_alloc(s, R, n, t);
    switch (n->type) {
    case ETK_NODE_COLL:
        return sim_coll_arrive(s, r, i, t, err);
    case ETK_NODE_SEND: {
        schan *c = &s->ch[n->aux];
        acc(R, t);
        R->n_xfer++;
        n->xfer_ns = t;
        R->p2p_count++;
        R->p2p_bytes += n->bytes;
        if (s->nf) { /* flow network model: the send completes when its transfer does */
            uint32_t ends[2] = {c->src, c->dst};
            n->dur_ns = UINT64_MAX; /* unknown until then (sim_flow_pump) */
            n->pos = 0;             /* 1 + index of a receive waiting for it */
            int frc = etk_net_flows_start(s->nf, -1, n->bytes, ends, 2,
                                          1ull << 63 | (uint64_t)r << 32 | i, err);
            if (frc)
                return frc;
        } else {
            R->p2p_time += n->dur_ns;
            if (sim_ev_push(s, t + n->dur_ns, EV_NODE, r, i) != 0)
                return sim_oom(err);
        }
        sim_chan_append(R->nodes, &c->sq_head, &c->sq_tail, i);
        return sim_p2p_try(s, n->aux, t, err);
    }
    case ETK_NODE_RECV: {
        schan *c = &s->ch[n->aux];
        sim_chan_append(R->nodes, &c->rq_head, &c->rq_tail, i);
        return sim_p2p_try(s, n->aux, t, err);
    }
    default:
        if (n->kind == K_COMP || n->kind == K_CPU || n->kind == K_COPY) {
            acc(R, t);
            if (n->kind == K_COMP && R->n_xfer && s->o.compute &&
                s->o.compute->overlap_slowdown > 0 && n->dur_ns < UINT64_MAX / 128)
                /* overlap interference: communication kernels take SMs and HBM bandwidth */
                n->dur_ns = (uint64_t)llround((double)n->dur_ns *
                                              (1.0 + s->o.compute->overlap_slowdown));
            if (n->kind == K_COMP || n->kind == K_COPY) /* a copy keeps the GPU busy as before */
                R->n_comp++;
            else
                R->n_cpu++;
        }
        if (sim_ev_push(s, t + n->dur_ns, EV_NODE, r, i) != 0)
            return sim_oom(err);
        return 0;
    }
}

/* comm_stream_per_group: start every ready communication node whose group's stream is free,
 * smallest id first; those whose stream is busy stay ready. The same for copies (kind K_COPY):
 * one lane per copy engine. */
static int dispatch_lanes(etk_sim *s, uint32_t r, int kind, uint64_t t, etk_error *err)
{
    srank *R = &s->r[r];
    uheap *h = &R->ready[kind];
    uint32_t n_held = 0;
    while (h->n) {
        uint32_t i = uheap_pop(h);
        snode *n = &R->nodes[i];
        uint64_t bit = 1ull << (n->lane % 64), *busy = kind == K_COPY ? NULL : &R->lane_busy[n->lane / 64];
        uint64_t copy_busy = R->busy_copy;
        if (!busy)
            busy = &copy_busy;
        if (*busy & bit) {
            if (sim_grow((void **)&s->held, &s->cap_held, n_held + 1, sizeof(uint32_t)) != 0)
                return sim_oom(err);
            s->held[n_held++] = i;
            continue;
        }
        *busy |= bit;
        if (kind == K_COPY)
            R->busy_copy = (uint32_t)copy_busy;
        n->stream = n->lane;
        int rc = start_node(s, r, i, t, err);
        if (rc)
            return rc;
    }
    for (uint32_t j = 0; j < n_held; j++)
        if (uheap_push(h, R->nodes[s->held[j]].id, s->held[j]) != 0)
            return sim_oom(err);
    return 0;
}

int sim_dispatch(etk_sim *s, uint32_t r, uint64_t t, etk_error *err)
{
    srank *R = &s->r[r];
    R->dirty = false;
    for (int k = 0; k < K_COUNT; k++) {
        uheap *h = &R->ready[k];
        if ((k == K_COMM && s->o.comm_stream_per_group) || k == K_COPY) {
            int rc = dispatch_lanes(s, r, k, t, err);
            if (rc)
                return rc;
            continue;
        }
        while (h->n) {
            uint32_t stream = 0;
            if (k < 3) {
                uint32_t free_mask = ~R->busy[k] & (s->nstreams[k] == 32 ? ~0u
                                                       : ((1u << s->nstreams[k]) - 1));
                if (!free_mask)
                    break;
                stream = (uint32_t)__builtin_ctz(free_mask);
                R->busy[k] |= 1u << stream;
            }
            uint32_t i = uheap_pop(h);
            R->nodes[i].stream = (uint16_t)stream;
            int rc = start_node(s, r, i, t, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}
