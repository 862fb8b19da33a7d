/* test_sim.c — the simulation engine on hand-built workloads with hand-computed answers:
 * serial and overlapped compute/communication, ASTRA-sim's smallest-id-first issue policy,
 * several streams, send/recv rendezvous, incremental feeding, missing dependencies, deadlocks
 * (each blocked rank named with what it waits for), mismatched collectives, the bus-bandwidth
 * report and the timeline. Costs come from test hooks with simple closed forms so every
 * expected number below follows from the formulas in this file. */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/sim.h"
#include "sim_testlib.h"

/* Test cost model: a collective costs 10,000 ns + 1 ns per byte; a message 2,000 ns + 1 ns per
 * byte; compute 1 ns per 1,000 FLOPs. */
static uint64_t t_coll(void *ctx, const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                       const uint32_t *ranks, uint32_t n)
{
    (void)ctx, (void)c, (void)type, (void)ranks, (void)n;
    return 10000 + bytes;
}
static uint64_t t_p2p(void *ctx, const etk_cluster *c, uint32_t s, uint32_t d, uint64_t bytes)
{
    (void)ctx, (void)c, (void)s, (void)d;
    return 2000 + bytes;
}
static uint64_t t_comp(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx, (void)c, (void)bytes;
    return flops / 1000;
}
static const etk_sim_costs tcosts = {t_coll, t_p2p, t_comp, NULL};

static etk_cluster cl(uint32_t n)
{
    etk_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test");
    c.n_dims = 1;
    c.dims[0].size = n;
    c.dims[0].topo = ETK_TOPO_SWITCH;
    c.dims[0].bw_Bps = 100e9;
    c.dims[0].latency_ns = 1000;
    c.n_npus = n;
    c.gpu.peak_flops[ETK_PREC_BF16] = 1000e12;
    c.gpu.hbm_bw_Bps = 2000e9;
    c.compute_efficiency = 1;
    return c;
}

static etk_sim *run_ok(etk_workload *w, etk_sim_opts *o)
{
    etk_cluster c = cl(w->n_ranks);
    if (!o->costs)
        o->costs = &tcosts;
    etk_sim *s = NULL;
    etk_error err = {0};
    int rc = etk_sim_workload(w, &c, o, &s, &err);
    if (rc)
        fail_msg("simulation failed: %s", err.msg);
    return s;
}

static int run_err(etk_workload *w, etk_sim_opts *o, etk_error *err)
{
    etk_cluster c = cl(w->n_ranks);
    if (!o->costs)
        o->costs = &tcosts;
    etk_sim *s = NULL;
    int rc = etk_sim_workload(w, &c, o, &s, err);
    assert_null(s);
    return rc;
}

/* compute 1 ms -> all-reduce 1 MB -> compute 1 ms on 2 ranks: nothing overlaps, so
 * step = 1,000,000 + (10,000 + 1,000,000) + 1,000,000 = 3,010,000 ns and the collective is all
 * exposed. */
static void test_serial(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(2);
    for (int r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        uint64_t d1 = 1, d2 = 2;
        sb_comp(t, 1, 1000, 0, 0, NULL, 0);
        sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 1000000, NULL, &d1, 1);
        sb_comp(t, 3, 1000, 0, 0, &d2, 1);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {0};
    etk_sim *s = run_ok(w, &o);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 3010000);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r->ranks[k].compute_ns, 2000000);
        assert_int_equal(r->ranks[k].exposed_comm_ns, 1010000);
        assert_int_equal(r->ranks[k].overlapped_comm_ns, 0);
        assert_int_equal(r->ranks[k].idle_ns, 0);
        assert_int_equal(r->ranks[k].n_nodes, 3);
    }
    /* one all-reduce row: 2 ranks, 1e6 bytes in 1,010,000 ns: algbw 0.990 GB/s; busbw =
     * algbw * 2(n-1)/n = algbw * 1 */
    assert_int_equal(r->n_coll, 1);
    assert_int_equal(r->coll[0].type, ETK_COLL_ALL_REDUCE);
    assert_int_equal(r->coll[0].count, 1);
    assert_int_equal(r->coll[0].group_size, 2);
    assert_true(fabs(r->coll[0].algbw_GBps - 1e6 / 1010000.0) < 1e-9);
    assert_true(fabs(r->coll[0].busbw_GBps - 1e6 / 1010000.0) < 1e-9);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* compute A (1 ms) and a 500,000-byte all-reduce (510,000 ns) are independent; compute B needs
 * both: step = max(1,000,000, 510,000) + 1,000,000 = 2,000,000; the collective hides behind A
 * (overlapped 510,000, exposed 0). */
static void test_overlap(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(4);
    for (int r = 0; r < 4; r++) {
        etk_trace *t = etk_trace_new(NULL);
        uint64_t d[2] = {1, 2};
        sb_comp(t, 1, 1000, 0, 0, NULL, 0);
        sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 500000, "", NULL, 0);
        sb_comp(t, 3, 1000, 0, 0, d, 2);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {0};
    etk_sim *s = run_ok(w, &o);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 2000000);
    assert_int_equal(r->ranks[3].compute_ns, 2000000);
    assert_int_equal(r->ranks[3].overlapped_comm_ns, 510000);
    assert_int_equal(r->ranks[3].exposed_comm_ns, 0);
    /* 4 identical ranks on one all-ranks group: one class, one simulated rank */
    assert_true(r->folded);
    assert_int_equal(r->n_simulated, 1);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* Ready nodes issue smallest id first: ids 3 and 5 are ready computes of 1 ms; collective 4
 * (510,000 ns) depends on 3. Node 3 first: the collective runs 1.0-1.51 ms while 5 computes
 * 1-2 ms: step 2,000,000. (Issuing 5 first would give 2,510,000.) File order puts 5 first. */
static void test_smallest_id_first(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(1);
    etk_trace *t = etk_trace_new(NULL);
    uint64_t d = 3;
    sb_comp(t, 5, 1000, 0, 0, NULL, 0);
    sb_coll(t, 4, ETK_COLL_ALL_REDUCE, 500000, NULL, &d, 1);
    sb_comp(t, 3, 1000, 0, 0, NULL, 0);
    w->ranks[0] = t;
    etk_sim_opts o = {0};
    etk_sim *s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 2000000);
    etk_sim_free(s);
    /* with two compute streams both computes run at once: the collective still starts at
     * 1 ms: step = max(1,000,000, 1,000,000 + 510,000) = 1,510,000 */
    o.comp_streams = 2;
    s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 1510000);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* rank 0: compute 1 ms, send 100,000 B to rank 1 (tag 7); rank 1: recv, compute 1 ms.
 * The message costs 2,000 + 100,000 = 102,000 ns: step = 1,000,000 + 102,000 + 1,000,000.
 * Rank 1 waits 1 ms for the sender (idle), then the transfer is exposed. */
static void test_send_recv(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(2);
    etk_trace *t0 = etk_trace_new(NULL), *t1 = etk_trace_new(NULL);
    uint64_t d = 1;
    sb_comp(t0, 1, 1000, 0, 0, NULL, 0);
    sb_p2p(t0, 2, true, 1, 7, 100000, &d, 1);
    sb_p2p(t1, 1, false, 0, 7, 100000, NULL, 0);
    sb_comp(t1, 2, 1000, 0, 0, &d, 1);
    w->ranks[0] = t0;
    w->ranks[1] = t1;
    etk_sim_opts o = {0};
    etk_sim *s = run_ok(w, &o);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 2102000);
    assert_int_equal(r->ranks[1].idle_ns, 1000000);
    assert_int_equal(r->ranks[1].exposed_comm_ns, 102000);
    assert_int_equal(r->ranks[0].finish_ns, 1102000);
    assert_int_equal(r->ranks[0].idle_ns, 1000000); /* tail after its send finished */
    assert_int_equal(r->n_coll, 1);
    assert_int_equal(r->coll[0].type, -1);
    assert_int_equal(r->coll[0].bytes, 100000);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* Incremental: feed a compute, run to 0.5 ms, feed a node depending on it, finish:
 * 1,000,000 + 1,000,000. A node added after 3 ms with no deps starts at 3 ms. */
static void test_incremental(void **st)
{
    (void)st;
    etk_cluster c = cl(1);
    etk_sim_opts o = {.costs = &tcosts};
    etk_sim *s = NULL;
    etk_error err = {0};
    assert_int_equal(etk_sim_new(&c, 1, NULL, &o, &s, &err), 0);
    etk_trace *a = etk_trace_new(NULL), *b = etk_trace_new(NULL), *x = etk_trace_new(NULL);
    sb_comp(a, 1, 1000, 0, 0, NULL, 0);
    uint64_t d = 1;
    sb_comp(b, 2, 1000, 0, 0, &d, 1);
    sb_comp(x, 3, 0, 5000000, 0, NULL, 0); /* roofline hook: 5e6 FLOPs / 1000 = 5,000 ns */
    assert_int_equal(etk_sim_add_rank_trace(s, 0, a, &err), 0);
    assert_int_equal(etk_sim_run_until(s, 500000, &err), 0);
    assert_int_equal(etk_sim_add_rank_trace(s, 0, b, &err), 0);
    assert_int_equal(etk_sim_run_until(s, 3000000, &err), 0);
    assert_int_equal(etk_sim_now(s), 3000000);
    assert_int_equal(etk_sim_add_rank_trace(s, 0, x, &err), 0);
    assert_int_equal(etk_sim_finish(s, &err), 0);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 3005000);
    assert_int_equal(r->ranks[0].compute_ns, 2005000);
    assert_int_equal(r->ranks[0].flops, 5000000);
    etk_sim_free(s);
    etk_trace_free(a);
    etk_trace_free(b);
    etk_trace_free(x);
}

static void test_missing_deps(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(1);
    etk_trace *t = etk_trace_new(NULL);
    uint64_t d[3] = {77, 78, 1};
    sb_comp(t, 1, 1000, 0, 0, NULL, 0);
    sb_comp(t, 2, 1000, 0, 0, d, 3);
    w->ranks[0] = t;
    etk_sim_opts o = {0};
    etk_error err = {0};
    assert_int_equal(run_err(w, &o, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "2 dependencies on node ids absent"));
    assert_non_null(strstr(err.msg, "77, 78"));
    assert_non_null(strstr(err.msg, "--missing-deps=ignore"));
    /* ignored: 77 and 78 count as done, node 2 still waits for node 1: 2 ms */
    o.missing_deps_ignore = true;
    o.quiet = true;
    etk_sim *s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 2000000);
    assert_int_equal(etk_sim_result_get(s)->missing_deps, 2);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* Both ranks receive before they send: nobody can move. */
static void test_deadlock_p2p(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        uint64_t d = 10;
        sb_p2p(t, 10, false, 1 - r, 5, 64, NULL, 0);
        sb_p2p(t, 11, true, 1 - r, 5, 64, &d, 1);
        w->ranks[r] = t;
    }
    /* folded (both ranks are one class) the representative alone shows the deadlock */
    etk_sim_opts o = {0};
    etk_error err = {0};
    assert_int_equal(run_err(w, &o, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "deadlock at t = 0 ns: 1 simulated rank(s)"));
    o.no_fold = true;
    assert_int_equal(run_err(w, &o, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "deadlock at t = 0 ns: 2 rank(s)"));
    assert_non_null(strstr(err.msg, "Rank 0 (0 of 2 nodes done)"));
    assert_non_null(strstr(err.msg, "recv from rank 1 tag 5 (node id 10) waits for the matching send"));
    assert_non_null(strstr(err.msg, "Rank 1"));
    etk_workload_free(w);
}

/* Two ranks and two groups "1" and "2" of both. */
static etk_workload *two_groups(void)
{
    etk_workload *w = sb_workload(2);
    uint32_t both[2] = {0, 1};
    etk_groups_add(w->groups, "1", both, 2);
    etk_groups_add(w->groups, "2", both, 2);
    return w;
}

/* Rank 0 issues collectives on groups 1 then 2, rank 1 on 2 then 1 (one comm stream each). */
static void test_deadlock_coll_order(void **st)
{
    (void)st;
    etk_workload *w = two_groups();
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        sb_coll(t, 1, ETK_COLL_ALL_REDUCE, 100, r ? "2" : "1", NULL, 0);
        sb_coll(t, 2, ETK_COLL_ALL_GATHER, 100, r ? "1" : "2", NULL, 0);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {0};
    etk_error err = {0};
    assert_int_equal(run_err(w, &o, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "deadlock at t = 0 ns: 2 rank(s)"));
    assert_non_null(strstr(err.msg, "collective #0 ALL_REDUCE of 100 bytes on group \"1\" (node id 1) waits for rank(s) 1"));
    etk_workload_free(w);
}

/* comm_stream_per_group: each group (and the sends to each peer) has its own stream, as NCCL
 * runs one stream per communicator. Two ranks, all nodes independent: all-reduces A and B of
 * 1,000,000 B on group "1" (1,010,000 ns each), C on group "2", and rank 0 sends 100,000 B to
 * rank 1 (102,000 ns). Per group: A then B on group 1's stream, C and the send beside them:
 * step 2,020,000. One pooled stream: 3 x 1,010,000 + 102,000 = 3,132,000 on rank 0. Three
 * pooled streams: A, B, C at once, the send after the first of them: 1,112,000 (what a pool
 * gets wrong: two collectives of one communicator overlapping). */
static void test_stream_per_group(void **st)
{
    (void)st;
    etk_workload *w = two_groups();
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        sb_coll(t, 1, ETK_COLL_ALL_REDUCE, 1000000, "1", NULL, 0);
        sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 1000000, "1", NULL, 0);
        sb_coll(t, 3, ETK_COLL_ALL_REDUCE, 1000000, "2", NULL, 0);
        sb_p2p(t, 4, r == 0, r == 0 ? 1 : 0, 5, 100000, NULL, 0);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {.comm_stream_per_group = true};
    etk_sim *s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 2020000);
    assert_int_equal(etk_sim_result_get(s)->ranks[0].exposed_comm_ns, 2020000);
    etk_sim_free(s);
    o = (etk_sim_opts){.comm_streams = 1};
    s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 3132000);
    etk_sim_free(s);
    o = (etk_sim_opts){.comm_streams = 3};
    s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 1112000);
    etk_sim_free(s);
    /* per group with comm_streams set too: comm_streams is ignored */
    o = (etk_sim_opts){.comm_streams = 3, .comm_stream_per_group = true};
    s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 2020000);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* comm_stream_per_group with a rank that talks to more peers than there were streams until s27
 * (32): rank 0 sends 1,000 B to each of 39 peers at once, each send on a stream of its own, so
 * all end at 2,000 + 1,000 = 3,000 ns. With 32 streams the sends to peers 33..39 shared the
 * streams of peers 2..8 (key % 32): 6,000 ns. (A 64-rank HPCC under etkit live: the ring's two
 * messages per rank shared a stream, ring latency 2x; docs/live.md.) */
static void test_stream_per_peer_many(void **st)
{
    (void)st;
    enum { N = 40 };
    etk_workload *w = sb_workload(N);
    etk_trace *t0 = etk_trace_new(NULL);
    for (uint32_t p = 1; p < N; p++) {
        sb_p2p(t0, p, true, p, (int)p, 1000, NULL, 0);
        etk_trace *t = etk_trace_new(NULL);
        sb_p2p(t, 1, false, 0, (int)p, 1000, NULL, 0);
        w->ranks[p] = t;
    }
    w->ranks[0] = t0;
    etk_sim_opts o = {.comm_stream_per_group = true};
    etk_sim *s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 3000);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* A node that depends on itself never becomes ready. */
static void test_deadlock_cycle(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(1);
    etk_trace *t = etk_trace_new(NULL);
    uint64_t d = 4;
    sb_comp(t, 4, 10, 0, 0, &d, 1);
    w->ranks[0] = t;
    etk_sim_opts o = {0};
    etk_error err = {0};
    assert_int_equal(run_err(w, &o, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "node id 4 waits for 1 unfinished dependency (e.g. node id 4: itself)"));
    etk_workload_free(w);
}

static void test_coll_mismatch(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        sb_coll(t, 1, ETK_COLL_ALL_REDUCE, r ? 200 : 100, NULL, NULL, 0);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {0};
    etk_error err = {0};
    assert_int_equal(run_err(w, &o, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "collective #0 on group \"(all ranks)\" does not match"));
    assert_non_null(strstr(err.msg, "ALL_REDUCE of 100 bytes"));
    assert_non_null(strstr(err.msg, "ALL_REDUCE of 200 bytes"));
    etk_workload_free(w);
}

static void test_bad_group_and_peer(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        sb_coll(t, 1, ETK_COLL_ALL_REDUCE, 100, "42", NULL, 0);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {.no_fold = true};
    etk_error err = {0};
    assert_int_equal(run_err(w, &o, &err), ETK_ENOTFOUND);
    assert_non_null(strstr(err.msg, "pg_name \"42\" is not a group"));
    etk_workload_free(w);

    w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        sb_p2p(t, 1, true, 9, 0, 100, NULL, 0);
        w->ranks[r] = t;
    }
    assert_int_equal(run_err(w, &o, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "comm_dst 9 is not a rank of the workload (0..1)"));
    etk_workload_free(w);

    /* a collective type outside Chakra's enum, a negative size */
    w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        sb_coll(t, 7, 42, 100, NULL, NULL, 0);
        w->ranks[r] = t;
    }
    assert_int_equal(run_err(w, &o, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "node id 7 (coll): comm_type 42 is not a collective type (0..9)"));
    etk_workload_free(w);
    w = sb_workload(1);
    w->ranks[0] = etk_trace_new(NULL);
    sb_coll(w->ranks[0], 8, ETK_COLL_ALL_REDUCE, (uint64_t)-5, NULL, NULL, 0);
    assert_int_equal(run_err(w, &o, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "node id 8 (coll): comm_size -5 is negative; expected bytes"));
    etk_workload_free(w);

    /* a duration that would overflow the ns clock */
    w = sb_workload(1);
    w->ranks[0] = etk_trace_new(NULL);
    sb_comp(w->ranks[0], 9, (uint64_t)1 << 62, 0, 0, NULL, 0);
    assert_int_equal(run_err(w, &o, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "node id 9 (comp): duration_micros 4611686018427387904 is implausible"));
    etk_workload_free(w);

    /* rank count != cluster size */
    w = sb_workload(2);
    w->ranks[0] = etk_trace_new(NULL);
    w->ranks[1] = etk_trace_new(NULL);
    etk_cluster c = cl(8);
    etk_sim *s = NULL;
    assert_true(etk_sim_workload(w, &c, &o, &s, &err) < 0);
    assert_null(s);
    assert_non_null(strstr(err.msg, "8"));
    assert_non_null(strstr(err.msg, "2"));
    etk_workload_free(w);
}

/* STAGE units: num_ops are MACs and sizes fp16 elements: 1e6 MACs = 2e6 FLOPs -> 2,000 ns with
 * the 1-ns-per-1000-FLOPs hook; a collective of 1000 elements = 2000 bytes -> 12,000 ns. */
static void test_stage_units(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(1);
    etk_trace *t = etk_trace_new(NULL);
    uint64_t d = 1;
    sb_comp(t, 1, 0, 1000000, 10, NULL, 0);
    sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 1000, NULL, &d, 1);
    w->ranks[0] = t;
    etk_sim_opts o = {.stage_units = true};
    etk_sim *s = run_ok(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 2000 + 12000);
    assert_int_equal(etk_sim_result_get(s)->ranks[0].flops, 2000000);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* Timeline: valid JSON, one X event per executed node (3 nodes x 2 ranks, unfolded), times in
 * us, the collective named with type and bytes. */
static void test_timeline(void **st)
{
    (void)st;
    etk_workload *w = sb_workload(2);
    for (int r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new(NULL);
        uint64_t d1 = 1, d2 = 2;
        sb_comp(t, 1, 1000, 0, 0, NULL, 0);
        sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 1000000, NULL, &d1, 1);
        sb_comp(t, 3, 1000, 0, 0, &d2, 1);
        w->ranks[r] = t;
    }
    etk_sim_opts o = {.timeline = true, .no_fold = true};
    etk_sim *s = run_ok(w, &o);
    char path[512];
    snprintf(path, sizeof path, "%s/tl.json", tu_tmpdir());
    etk_error err = {0};
    assert_int_equal(etk_sim_write_timeline(s, path, &err), 0);
    assert_int_equal(etk_sim_timeline_events(s), 6);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        fail_msg("timeline is not valid JSON: %s line %d", je.text, je.line);
    json_t *ev = json_object_get(root, "traceEvents");
    size_t i, nx = 0;
    json_t *e;
    bool found = false;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
            continue;
        nx++;
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (strcmp(nm, "ALL_REDUCE 1000000 B") == 0) {
            found = true;
            /* issued at 1 ms, done at 2.01 ms */
            assert_true(fabs(json_real_value(json_object_get(e, "ts")) - 1000.0) < 1e-9);
            assert_true(fabs(json_real_value(json_object_get(e, "dur")) - 1010.0) < 1e-9);
        }
    }
    assert_int_equal(nx, 6);
    assert_true(found);
    json_decref(root);
    etk_sim_free(s);
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_smallest_id_first),
        cmocka_unit_test(test_send_recv),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_missing_deps),
        cmocka_unit_test(test_deadlock_p2p),
        cmocka_unit_test(test_deadlock_coll_order),
        cmocka_unit_test(test_deadlock_cycle),
        cmocka_unit_test(test_coll_mismatch),
        cmocka_unit_test(test_bad_group_and_peer),
        cmocka_unit_test(test_stage_units),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_stream_per_group),
        cmocka_unit_test(test_stream_per_peer_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
