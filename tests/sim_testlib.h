/* sim_testlib.h — builders for in-memory workloads used by the simulator tests and benchmark
 * (tests/test_sim*.c, bench/bench_sim.c): nodes with Chakra attributes, and a DP x TP x PP
 * training-like workload whose ranks fall into one class per pipeline stage. Header-only. */
#ifndef ETK_SIM_TESTLIB_H
#define ETK_SIM_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"
#include "etkit/sim.h"

typedef struct sb_node {
    etk_node n;
    etk_attr a[8];
    uint64_t deps[16];
    char pg[32];
} sb_node;

/* a one-dimension switch of n GPUs: 100 GB/s links of 1 ns, 10^15 FLOP/s, 1 TB/s HBM, efficiency 1
 * (the hand-computed cases of test_sim_fold and test_sim_host) */
static inline etk_cluster sb_cluster(uint32_t n)
{
    etk_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test");
    c.n_dims = 1;
    c.dims[0] = (etk_net_dim){.size = n, .topo = ETK_TOPO_SWITCH, .bw_Bps = 1e11, .latency_ns = 1};
    c.n_npus = n;
    c.gpu.peak_flops[0] = 1e15;
    c.gpu.hbm_bw_Bps = 1e12;
    c.compute_efficiency = 1;
    return c;
}

static inline sb_node *sb_begin(sb_node *b, uint64_t id, int type, const char *name)
{
    memset(b, 0, sizeof *b);
    b->n.id = id;
    b->n.type = type;
    b->n.name = name ? name : "";
    b->n.attr = b->a;
    b->n.data_deps = b->deps;
    return b;
}
static inline void sb_dep(sb_node *b, uint64_t id) { b->deps[b->n.n_data_deps++] = id; }
static inline void sb_attr(sb_node *b, etk_attr a) { b->a[b->n.n_attr++] = a; }

/* COMP node: duration in us (0: roofline from flops/bytes) */
static inline etk_node *sb_comp(etk_trace *t, uint64_t id, uint64_t dur_us, uint64_t flops,
                                uint64_t bytes, const uint64_t *deps, int nd)
{
    sb_node b;
    sb_begin(&b, id, ETK_NODE_COMP, "comp");
    b.n.duration_micros = dur_us;
    for (int i = 0; i < nd; i++)
        sb_dep(&b, deps[i]);
    if (flops)
        sb_attr(&b, etk_attr_i64("num_ops", (int64_t)flops));
    if (bytes)
        sb_attr(&b, etk_attr_u64("tensor_size", bytes));
    sb_attr(&b, etk_attr_bool("is_cpu_op", false));
    return etk_trace_add(t, &b.n);
}

static inline etk_node *sb_coll(etk_trace *t, uint64_t id, int ctype, uint64_t bytes,
                                const char *pg, const uint64_t *deps, int nd)
{
    sb_node b;
    sb_begin(&b, id, ETK_NODE_COLL, "coll");
    for (int i = 0; i < nd; i++)
        sb_dep(&b, deps[i]);
    sb_attr(&b, etk_attr_i64("comm_type", ctype));
    sb_attr(&b, etk_attr_i64("comm_size", (int64_t)bytes));
    if (pg)
        sb_attr(&b, etk_attr_str("pg_name", pg));
    return etk_trace_add(t, &b.n);
}

static inline etk_node *sb_p2p(etk_trace *t, uint64_t id, bool send, uint32_t peer, int tag,
                               uint64_t bytes, const uint64_t *deps, int nd)
{
    sb_node b;
    sb_begin(&b, id, send ? ETK_NODE_SEND : ETK_NODE_RECV, send ? "send" : "recv");
    for (int i = 0; i < nd; i++)
        sb_dep(&b, deps[i]);
    sb_attr(&b, etk_attr_i32(send ? "comm_dst" : "comm_src", (int32_t)peer));
    sb_attr(&b, etk_attr_i32("comm_tag", tag));
    sb_attr(&b, etk_attr_i64("comm_size", (int64_t)bytes));
    return etk_trace_add(t, &b.n);
}

static inline etk_workload *sb_workload(uint32_t n)
{
    etk_workload *w = calloc(1, sizeof *w);
    w->n_ranks = n;
    w->ranks = calloc(n, sizeof(etk_trace *));
    w->groups = etk_groups_new();
    return w;
}

/* A pipeline-parallel training step: rank = tp + T*(dp + D*pp). Per micro-batch: forward
 * (recv activation from the previous stage, compute, TP all-reduce, send to the next stage), then
 * backward in reverse with its own tags, then one DP all-reduce of the gradients overlapped with
 * an independent optimizer-like compute. Stage s's compute lasts (1 + s % 2) * fwd_us so the
 * stages differ (two and more classes). When only_reps is set, only the first rank of each stage
 * gets a trace and class_of/class_rep are filled (what the generator produces).
 * dp_perm: if non-NULL, DP group of (pp, tp) lists its ranks in this permuted DP order (used to
 * make placement asymmetric). */
static inline etk_workload *sb_pipeline(uint32_t T, uint32_t D, uint32_t P, uint32_t M,
                                        uint64_t fwd_us, uint64_t act_bytes, uint64_t grad_bytes,
                                        bool only_reps)
{
    uint32_t n = T * D * P;
    etk_workload *w = sb_workload(n);
    char name[64];
    uint32_t *mem = malloc(sizeof(uint32_t) * (T > D ? T : D));
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t d = 0; d < D; d++) {
            for (uint32_t k = 0; k < T; k++)
                mem[k] = k + T * (d + D * p);
            snprintf(name, sizeof name, "%u", 1 + d + D * p);
            etk_groups_add(w->groups, name, mem, T);
        }
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t k = 0; k < T; k++) {
            for (uint32_t d = 0; d < D; d++)
                mem[d] = k + T * (d + D * p);
            snprintf(name, sizeof name, "%u", 100000 + k + T * p);
            etk_groups_add(w->groups, name, mem, D);
        }
    free(mem);
    if (only_reps) {
        w->n_classes = P;
        w->class_of = malloc(sizeof(uint32_t) * n);
        w->class_rep = malloc(sizeof(uint32_t) * P);
        for (uint32_t r = 0; r < n; r++)
            w->class_of[r] = r / (T * D);
        for (uint32_t p = 0; p < P; p++)
            w->class_rep[p] = p * T * D;
    }
    for (uint32_t r = 0; r < n; r++) {
        uint32_t k = r % T, d = r / T % D, p = r / (T * D);
        if (only_reps && (k || d))
            continue;
        etk_trace *t = etk_trace_new("0.0.4");
        char tp[32], dp[32];
        snprintf(tp, sizeof tp, "%u", 1 + d + D * p);
        snprintf(dp, sizeof dp, "%u", 100000 + k + T * p);
        uint64_t id = 1, last = 0;
        uint64_t dur = fwd_us * (1 + p % 2);
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t m = 0; m < M; m++) {
                bool fwd = pass == 0;
                bool has_prev = fwd ? p > 0 : p + 1 < P;
                bool has_next = fwd ? p + 1 < P : p > 0;
                uint32_t prev = fwd ? r - T * D : r + T * D, next = fwd ? r + T * D : r - T * D;
                int tag = (int)(fwd ? m : 1000 + m);
                if (has_prev) {
                    sb_p2p(t, id, false, prev, tag, act_bytes, last ? &last : NULL, last ? 1 : 0);
                    last = id++;
                }
                sb_comp(t, id, fwd ? dur : 2 * dur, 0, 0, last ? &last : NULL, last ? 1 : 0);
                last = id++;
                if (T > 1) {
                    sb_coll(t, id, ETK_COLL_ALL_REDUCE, act_bytes, tp, &last, 1);
                    last = id++;
                }
                if (has_next) {
                    sb_p2p(t, id, true, next, tag, act_bytes, &last, 1);
                    last = id++;
                }
            }
        uint64_t opt = id++;
        sb_comp(t, opt, dur, 0, 0, &last, 1); /* runs alongside the DP all-reduce */
        if (D > 1)
            sb_coll(t, id++, ETK_COLL_ALL_REDUCE, grad_bytes, dp, &last, 1);
        w->ranks[r] = t;
    }
    return w;
}

#endif
