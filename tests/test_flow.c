/* test_flow.c — the max-min fair flow model (src/sim/flow.c) on hand-solved networks, and the
 * fabric decomposition (etk_net_flow_run): a pipeline send and a data-parallel all-reduce
 * crossing the same NIC slow each other by exactly the max-min share. */
#include <math.h>
#include <string.h>

#include "testutil.h"

#include "etkit/flow.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "sim_testlib.h"

static void next_is(etk_flow *f, uint64_t tag, double t)
{
    uint64_t got;
    double at;
    assert_int_equal(etk_flow_next(f, INFINITY, &got, &at), 1);
    assert_int_equal(got, tag);
    assert_true(fabs(at - t) < 1e-6);
}

/* Two flows of 100 B on one 10 B/ns link: 5 B/ns each, both drain at 20 ns; one has a 5 ns
 * latency and completes at 25. */
static void test_two_share(void **st)
{
    (void)st;
    double cap = 10;
    etk_flow *f;
    etk_error err = {0};
    assert_int_equal(etk_flow_new(1, &cap, &f, &err), 0);
    uint32_t l = 0;
    assert_int_equal(etk_flow_start(f, 100, &l, 1, 0, 1, &err), 0);
    assert_true(fabs(etk_flow_rate(f, 1) - 10) < 1e-12); /* alone: the whole link */
    assert_int_equal(etk_flow_start(f, 100, &l, 1, 5, 2, &err), 0);
    assert_true(fabs(etk_flow_rate(f, 1) - 5) < 1e-12);
    assert_true(fabs(etk_flow_rate(f, 2) - 5) < 1e-12);
    next_is(f, 1, 20);
    next_is(f, 2, 25);
    assert_int_equal(etk_flow_active(f), 0);
    assert_true(isinf(etk_flow_next_time(f)));
    etk_flow_free(f);
}

/* The textbook case. Links A (10 B/ns) and B (4 B/ns); f1 on A (80 B), f2 on A and B (20 B),
 * f3 on B (4 B). B is the bottleneck: f2 = f3 = 2, f1 gets the rest of A, 8. f3 drains at 2 ns
 * (4/2); then B has only f2: shares A 10/2 = 5, B 4/1 = 4, so f2 = 4 and f1 = 6; f2 has 16 B left
 * and drains at 2 + 16/4 = 6; f1 has 80 - 8·2 - 6·4 = 40 B left at 6 ns, alone at 10 B/ns: 10 ns. */
static void test_textbook(void **st)
{
    (void)st;
    double cap[2] = {10, 4};
    etk_flow *f;
    etk_error err = {0};
    assert_int_equal(etk_flow_new(2, cap, &f, &err), 0);
    uint32_t a = 0, ab[2] = {0, 1}, b = 1;
    etk_flow_hold(f);
    assert_int_equal(etk_flow_start(f, 80, &a, 1, 0, 1, &err), 0);
    assert_int_equal(etk_flow_start(f, 20, ab, 2, 0, 2, &err), 0);
    assert_int_equal(etk_flow_start(f, 4, &b, 1, 0, 3, &err), 0);
    assert_int_equal(etk_flow_release(f, &err), 0);
    assert_true(fabs(etk_flow_rate(f, 1) - 8) < 1e-12);
    assert_true(fabs(etk_flow_rate(f, 2) - 2) < 1e-12);
    assert_true(fabs(etk_flow_rate(f, 3) - 2) < 1e-12);
    next_is(f, 3, 2);
    assert_true(fabs(etk_flow_rate(f, 1) - 6) < 1e-12);
    assert_true(fabs(etk_flow_rate(f, 2) - 4) < 1e-12);
    next_is(f, 2, 6);
    next_is(f, 1, 10);
    etk_flow_free(f);
}

/* A flow arriving later: f1 100 B alone on 10 B/ns from 0; at 4 ns (60 B left) f2 (30 B) joins:
 * 5 each, f2 drains at 4 + 6 = 10 with f1 at 30 B left, which then takes 3 ns: 13. Flows on a
 * disjoint link are not recomputed (work counter). */
static void test_arrival(void **st)
{
    (void)st;
    double cap[2] = {10, 10};
    etk_flow *f;
    etk_error err = {0};
    assert_int_equal(etk_flow_new(2, cap, &f, &err), 0);
    uint32_t l0 = 0, l1 = 1;
    assert_int_equal(etk_flow_start(f, 100, &l0, 1, 0, 1, &err), 0);
    uint64_t tag;
    double t;
    assert_int_equal(etk_flow_next(f, 4, &tag, &t), 0);
    assert_true(fabs(etk_flow_now(f) - 4) < 1e-12);
    uint64_t w = etk_flow_work(f);
    assert_int_equal(etk_flow_start(f, 1000, &l1, 1, 0, 9, &err), 0);
    assert_int_equal(etk_flow_work(f) - w, 1); /* only the new flow: its link is disjoint */
    assert_int_equal(etk_flow_start(f, 30, &l0, 1, 0, 2, &err), 0);
    assert_int_equal(etk_flow_work(f) - w, 3); /* f1 and f2 */
    next_is(f, 2, 10);
    next_is(f, 1, 13);
    next_is(f, 9, 104);
    etk_flow_free(f);
}

static void test_errors(void **st)
{
    (void)st;
    double bad[2] = {10, 0};
    etk_flow *f = NULL;
    etk_error err = {0};
    assert_int_equal(etk_flow_new(2, bad, &f, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "link 1 capacity 0"));
    double cap[2] = {10, 10};
    assert_int_equal(etk_flow_new(2, cap, &f, &err), 0);
    uint32_t p[2] = {0, 5};
    assert_int_equal(etk_flow_start(f, 1, p, 2, 0, 1, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "path[1] = link 5 out of range (2 links)"));
    uint32_t d[2] = {1, 1};
    assert_int_equal(etk_flow_start(f, 1, d, 2, 0, 1, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "uses link 1 twice"));
    assert_int_equal(etk_flow_start(f, 1, d, 1, -1, 1, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "latency -1"));
    assert_int_equal(etk_flow_set_capacity(f, 7, 1, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "link 7 out of range"));
    etk_flow_free(f);
}

/* Links added one by one (etk_flow_add_link, how net/topo.c sizes the network by the links its
 * routes use): ids follow the existing ones; a flow over links of 10 and 4 B/ns drains 400 bytes
 * at 4 B/ns: done at 100 + 5 ns latency; a second link added after a flow finished is usable;
 * a bad capacity is refused with the link's would-be id. */
static void test_add_link(void **st)
{
    (void)st;
    etk_flow *f = NULL;
    etk_error err = {0};
    assert_int_equal(etk_flow_new(0, NULL, &f, &err), 0);
    uint32_t a = 9, b = 9, c = 9;
    assert_int_equal(etk_flow_add_link(f, 10, &a, &err), 0);
    assert_int_equal(etk_flow_add_link(f, 4, &b, &err), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(etk_flow_add_link(f, 0, &c, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "link 2 capacity 0 B/ns"));
    assert_int_equal(etk_flow_add_link(f, NAN, &c, &err), ETK_EINVAL);
    uint32_t p[2] = {a, b};
    assert_int_equal(etk_flow_start(f, 400, p, 2, 5, 1, &err), 0);
    next_is(f, 1, 105);
    for (int i = 0; i < 40; i++) /* grows past the first allocation */
        assert_int_equal(etk_flow_add_link(f, 1 + i, &c, &err), 0);
    assert_int_equal(c, 41);
    assert_int_equal(etk_flow_start(f, 400, &c, 1, 0, 2, &err), 0); /* 40 B/ns */
    next_is(f, 2, 105 + 10);
    etk_flow_free(f);
}

/* Two DGX H100 nodes (dgx-h100 preset: NIC 50 GB/s, 2,000 ns; NVLink 450 GB/s, 500 ns). A
 * data-parallel all-reduce over {0, 8} (one GPU per node, same rail) is a ring of two flows,
 * 0->8 and 8->0, each carrying 2(n-1)/n·S = S bytes, inflated by the NIC efficiency 47/50: with
 * S = 47 MB that is 50 MB, 1,000,000 ns at 50 B/ns. A pipeline send 0->8 of 47 MB is the same
 * 50 MB on the same NIC (up at GPU 0, down at GPU 8). Together the 0->8 all-reduce flow and the
 * send get 25 B/ns each (max-min on one link): both need 2,000,000 ns of transfer, so each takes
 * exactly 1,000,000 ns longer than alone (the 8->0 flow is not slowed, but the all-reduce waits
 * for its slowest flow). */
static void test_send_and_allreduce_share_nic(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 2, &c, &err), 0);
    uint32_t dp[2] = {0, 8}, pp[2] = {0, 8};
    etk_flow_op ar = {.type = ETK_COLL_ALL_REDUCE, .bytes = 47000000, .ranks = dp, .n_ranks = 2};
    etk_flow_op sd = {.type = -1, .bytes = 47000000, .ranks = pp, .n_ranks = 2};
    etk_flow_op alone[1] = {ar};
    assert_int_equal(etk_net_flow_run(&c, alone, 1, &err), 0);
    assert_int_equal(alone[0].choice.algo, ETK_NCCL_RING);
    assert_int_equal(alone[0].choice.proto, ETK_NCCL_SIMPLE);
    double ar_alone = alone[0].finish_ns;
    assert_true(fabs(ar_alone - alone[0].choice.lat_ns - 2000 - 1e6) < 2);
    etk_flow_op s1[1] = {sd};
    assert_int_equal(etk_net_flow_run(&c, s1, 1, &err), 0);
    assert_true(fabs(s1[0].finish_ns - (2000 + 1e6)) < 2);
    etk_flow_op both[2] = {ar, sd};
    assert_int_equal(etk_net_flow_run(&c, both, 2, &err), 0);
    assert_true(fabs(both[0].finish_ns - (ar_alone + 1e6)) < 2);
    assert_true(fabs(both[1].finish_ns - (2000 + 2e6)) < 2);
    /* a send on another rail (GPU 1 -> 9) shares nothing: nobody is slowed */
    uint32_t other[2] = {1, 9};
    etk_flow_op apart[2] = {ar, sd};
    apart[1].ranks = other;
    assert_int_equal(etk_net_flow_run(&c, apart, 2, &err), 0);
    assert_true(fabs(apart[0].finish_ns - ar_alone) < 2);
    assert_true(fabs(apart[1].finish_ns - (2000 + 1e6)) < 2);
    /* the send starting when the all-reduce is half done: the all-reduce's 0->8 flow has
     * 25 MB left and shares from 500,000 ns: both at 25 B/ns, the all-reduce finishes 500,000 ns
     * later than alone */
    etk_flow_op late[2] = {ar, sd};
    late[1].start_ns = 500000;
    assert_int_equal(etk_net_flow_run(&c, late, 2, &err), 0);
    assert_true(fabs(late[0].finish_ns - (ar_alone + 5e5)) < 2);
}

/* The same sharing inside the simulator. Two DGX H100 nodes on the flow model; ranks 0 and 8
 * all-reduce 47 MB on group A = {0, 8} and, on a second communication stream at the same time,
 * on group B = {0, 8}. Alone, one all-reduce takes its NCCL-like latency (Simple ring: 10,000 ns
 * base + 2 x 2 NIC hops of 2,000 ns = 18,000 ns) + the 2,000 ns route + 50 MB / 50 GB/s =
 * 1,020,000 ns. Together the two 0->8 flows (and the two 8->0 flows) share each NIC at 25 GB/s:
 * both finish at 18,000 + 2,000 + 2,000,000 = 2,020,000 ns. Folding is off in the flow model. */
static uint64_t run_two(bool both, bool *folded)
{
    etk_workload *w = sb_workload(16);
    uint32_t ab[2] = {0, 8};
    etk_groups_add(w->groups, "A", ab, 2);
    etk_groups_add(w->groups, "B", ab, 2);
    for (uint32_t r = 0; r < 16; r++) {
        etk_trace *t = etk_trace_new(NULL);
        if (r == 0 || r == 8) {
            sb_coll(t, 1, ETK_COLL_ALL_REDUCE, 47000000, "A", NULL, 0);
            if (both)
                sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 47000000, "B", NULL, 0);
        }
        w->ranks[r] = t;
    }
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 2, &c, &err), 0);
    c.net_model = ETK_NET_FLOW;
    etk_sim_opts o = {0};
    o.comm_streams = 2;
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &c, &o, &s, &err))
        fail_msg("%s", err.msg);
    const etk_sim_result *r = etk_sim_result_get(s);
    uint64_t step = r->step_ns;
    *folded = r->folded;
    etk_sim_free(s);
    etk_workload_free(w);
    return step;
}

static void test_engine_concurrent_collectives(void **st)
{
    (void)st;
    bool folded;
    assert_int_equal(run_two(false, &folded), 1020000);
    assert_false(folded);
    assert_int_equal(run_two(true, &folded), 2020000);
}

/* A pipeline send and a DP all-reduce crossing the same NIC inside the simulator (flow model):
 * rank 0 all-reduces 47 MB with rank 8 (group A) and, on its second communication stream, sends
 * 47 MB to rank 8. Alone: all-reduce 1,020,000 ns (as above), send 2,000 + 1,000,000 ns. Together
 * the send and the all-reduce's 0->8 flow get 25 GB/s each on GPU 0's NIC: the send takes
 * 2,000 + 2,000,000 ns and the all-reduce 2,020,000 ns; rank 8's receive completes with the
 * send. */
static uint64_t run_send(bool ar, bool send, uint64_t *p2p_ns)
{
    etk_workload *w = sb_workload(16);
    uint32_t ab[2] = {0, 8};
    etk_groups_add(w->groups, "A", ab, 2);
    for (uint32_t r = 0; r < 16; r++) {
        etk_trace *t = etk_trace_new(NULL);
        if (r == 0 || r == 8) {
            if (ar)
                sb_coll(t, 1, ETK_COLL_ALL_REDUCE, 47000000, "A", NULL, 0);
            if (send)
                sb_p2p(t, 2, r == 0, r == 0 ? 8 : 0, 7, 47000000, NULL, 0);
        }
        w->ranks[r] = t;
    }
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 2, &c, &err), 0);
    c.net_model = ETK_NET_FLOW;
    etk_sim_opts o = {0};
    o.comm_streams = 2;
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &c, &o, &s, &err))
        fail_msg("%s", err.msg);
    const etk_sim_result *r = etk_sim_result_get(s);
    uint64_t step = r->step_ns;
    *p2p_ns = 0;
    for (size_t k = 0; k < r->n_coll; k++)
        if (r->coll[k].type == -1)
            *p2p_ns = r->coll[k].time_ns;
    assert_int_equal(r->ranks[8].finish_ns, step);
    etk_sim_free(s);
    etk_workload_free(w);
    return step;
}

static void test_engine_send_and_allreduce(void **st)
{
    (void)st;
    uint64_t p2p;
    assert_int_equal(run_send(false, true, &p2p), 1002000);
    assert_int_equal(p2p, 1002000);
    assert_int_equal(run_send(true, false, &p2p), 1020000);
    assert_int_equal(run_send(true, true, &p2p), 2020000);
    assert_int_equal(p2p, 2002000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_share),
        cmocka_unit_test(test_add_link),
        cmocka_unit_test(test_textbook),
        cmocka_unit_test(test_arrival),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_send_and_allreduce_share_nic),
        cmocka_unit_test(test_engine_concurrent_collectives),
        cmocka_unit_test(test_engine_send_and_allreduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
