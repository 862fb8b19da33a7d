/* host.c — the host (CPU) thread that issues a rank's kernels (compute.host_op_ns > 0).
 *
 * Eager PyTorch issues every kernel from one host thread: each op costs the CPU some
 * microseconds (Python, dispatcher, Transformer Engine, cudaLaunchKernel) before the kernel is in
 * the stream's queue. When the GPU's kernels are short the queue drains and the GPU waits for the
 * host. Model: per rank, the host reaches the GPU nodes (compute, copies, collectives, sends and
 * receives; not CPU or metadata nodes) in trace order; node k is issued at
 *     h_k = h_{k-1} + host_op_ns * host_ops_k       (h before the first node: 0)
 * and cannot start before h_k. A node marked host_sync (the generator's MoE token-count copy)
 * makes the host wait for its completion: the next node is issued at end + its cost.
 *
 * Exact and event-driven: h_k depends only on the costs and the completion times of earlier
 * host_sync nodes, so the host's cursor advances lazily, when a node's dependencies are done
 * (sim_host_gate): a node whose h_k has passed is ready at once (no event: the host is ahead);
 * one whose h_k is later gets one EV_HOST event at h_k; one behind an unfinished host_sync waits
 * in a heap by index until that node completes (sim_host_resume). No node's time depends on the
 * order of simultaneous events, so folded and unfolded runs stay identical. */
#include "sim/internal.h"

/* Advance rank R's host cursor through node `to`; false if a host_sync node before `to` has not
 * completed (the host waits there). */
static bool host_reach(srank *R, uint32_t to)
{
    while (R->host_next <= to) {
        if (R->host_wait != SIM_NONE)
            return false;
        snode *n = &R->nodes[R->host_next];
        if (n->host_ns) {
            uint64_t c = SIM_HOST_VAL(n->host_ns);
            /* saturate past the longest simulated time: etk_sim_finish reports it */
            R->host_t = R->host_t > SIM_MAX_NS ? R->host_t : R->host_t + c;
            n->host_ns = (n->host_ns & SIM_HOST_SYNC) | R->host_t;
            if (n->host_ns & SIM_HOST_SYNC)
                R->host_wait = R->host_next;
        }
        R->host_next++;
    }
    return true;
}

/* node i (reached by the host) becomes ready at its issue time */
static void host_release(etk_sim *s, uint32_t r, uint32_t i, uint64_t now)
{
    uint64_t h = SIM_HOST_VAL(s->r[r].nodes[i].host_ns);
    if (h <= now)
        make_ready_now(s, r, i);
    else if (sim_ev_push(s, h, EV_HOST, r, i) != 0)
        s->broken = true;
}

bool sim_host_gate(etk_sim *s, uint32_t r, uint32_t i)
{
    srank *R = &s->r[r];
    if (i >= R->host_next && !host_reach(R, i)) {
        if (uheap_push(&R->host_blocked, i, i) != 0)
            s->broken = true;
        return true;
    }
    if (SIM_HOST_VAL(R->nodes[i].host_ns) <= s->now)
        return false;
    host_release(s, r, i, s->now);
    return true;
}

void sim_host_resume(etk_sim *s, uint32_t r, uint64_t t)
{
    srank *R = &s->r[r];
    R->host_wait = SIM_NONE;
    if (R->host_t < t)
        R->host_t = t;
    while (R->host_blocked.n) {
        uint32_t k = R->host_blocked.a[0].idx;
        if (!host_reach(R, k))
            break;
        uheap_pop(&R->host_blocked);
        host_release(s, r, k, t);
    }
}
