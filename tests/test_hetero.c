/* test_hetero.c — heterogeneity and the compute model inside the simulator: per-rank speed
 * factors (--slow-rank) force the unfolded simulation and slow the whole step by the amount a
 * hand computation gives; GPU nodes without duration are timed by the compute model (shape
 * attributes honoured); overlap interference stretches compute that runs beside a transfer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "etkit/compute.h"
#include "etkit/sim.h"
#include "sim_testlib.h"
#include "testutil.h"

static uint64_t t_coll(void *ctx, const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                       const uint32_t *ranks, uint32_t n)
{
    (void)ctx, (void)c, (void)type, (void)bytes, (void)ranks, (void)n;
    return 10000; /* every collective: 10 us */
}
/* collectives fixed, compute left to the simulator (compute model or roofline) */
static const etk_sim_costs ccosts = {t_coll, NULL, NULL, NULL};

static etk_cluster cl(uint32_t n)
{
    etk_cluster c;
    etk_cluster_init(&c);
    snprintf(c.name, sizeof c.name, "test");
    c.n_dims = 1;
    c.dims[0].size = n;
    c.dims[0].topo = ETK_TOPO_SWITCH;
    c.dims[0].bw_Bps = 100e9;
    c.dims[0].latency_ns = 1000;
    c.n_npus = n;
    c.gpu.peak_flops[ETK_PREC_BF16] = 1000e12;
    c.gpu.hbm_bw_Bps = 2000e9;
    c.gpu.hbm_bytes = 80000000000ull;
    return c;
}

static etk_compute_params P(void)
{
    etk_compute_params p = {.gemm_eff = 0.8, .gemm_half_dim = 64, .gemm_min_dim = 16,
                            .mem_eff = 0.8, .score_mem_eff = 0.8, .attn_eff = 0.5, .launch_ns = 2000,
                            .overlap_slowdown = 0.1};
    return p;
}

/* n ranks (data parallel): compute A (a_us), all-reduce over all, compute B (b_us) */
static etk_workload *dp_step(uint32_t n, uint64_t a_us, uint64_t b_us)
{
    etk_workload *w = sb_workload(n);
    for (uint32_t r = 0; r < n; r++) {
        etk_trace *t = etk_trace_new("0.0.4");
        uint64_t d1 = 1, d2 = 2;
        sb_comp(t, 1, a_us, 0, 0, NULL, 0);
        sb_coll(t, 2, ETK_COLL_ALL_REDUCE, 1 << 20, NULL, &d1, 1);
        sb_comp(t, 3, b_us, 0, 0, &d2, 1);
        w->ranks[r] = t;
    }
    return w;
}

static etk_sim *run(etk_workload *w, etk_sim_opts *o)
{
    etk_cluster c = cl(w->n_ranks);
    o->costs = &ccosts;
    etk_sim *s = NULL;
    etk_error err = {0};
    if (etk_sim_workload(w, &c, o, &s, &err) != 0)
        fail_msg("simulation failed: %s", err.msg);
    return s;
}

static void slow_rank_slows_the_step(void **st)
{
    (void)st;
    /* 8 ranks: A = 100 us, all-reduce 10 us, B = 50 us: 160,000 ns, folded into one class.
     * Rank 5 at speed 0.8: its A takes 125 us, the all-reduce waits for it (every rank) and ends
     * at 135 us, its B takes 62.5 us: step 197,500 ns; the other ranks finish at 185 us and idle
     * 25 us waiting for rank 5. */
    etk_workload *w = dp_step(8, 100, 50);
    etk_sim_opts o = {0};
    etk_sim *s = run(w, &o);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 160000);
    assert_true(r->folded);
    etk_sim_free(s);

    double speed[8] = {1, 1, 1, 1, 1, 0.8, 1, 1};
    etk_sim_opts o2 = {.rank_speed = speed, .n_rank_speed = 8};
    s = run(w, &o2);
    r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 197500);
    assert_false(r->folded);                /* forced unfolded */
    assert_int_equal(r->n_simulated, 8);
    assert_int_equal(r->ranks[5].finish_ns, 197500);
    assert_int_equal(r->ranks[0].finish_ns, 185000);
    assert_int_equal(r->ranks[0].compute_ns, 150000);
    assert_int_equal(r->ranks[5].compute_ns, 187500);
    etk_sim_free(s);
    etk_workload_free(w);
}

static void straggler_pipeline(void **st)
{
    (void)st;
    /* Two slow ranks: the step is set by the slowest one. Speeds 0.5 (rank 2) and 0.9 (rank 6):
     * rank 2's A takes 200 us, all-reduce ends at 210 us, its B 100 us: 310,000 ns. */
    etk_workload *w = dp_step(8, 100, 50);
    double speed[8] = {1, 1, 0.5, 1, 1, 1, 0.9, 1};
    etk_sim_opts o = {.rank_speed = speed, .n_rank_speed = 8};
    etk_sim *s = run(w, &o);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 310000);
    assert_int_equal(r->ranks[6].finish_ns, 210000 + 55556); /* 50 / 0.9 = 55.556 us */
    etk_sim_free(s);
    etk_workload_free(w);
}

static void bad_speed_factor(void **st)
{
    (void)st;
    etk_workload *w = dp_step(2, 100, 50);
    double speed[2] = {1, -0.5};
    etk_sim_opts o = {.rank_speed = speed, .n_rank_speed = 2, .costs = &ccosts};
    etk_cluster c = cl(2);
    etk_sim *s = NULL;
    etk_error err = {0};
    assert_int_equal(etk_sim_workload(w, &c, &o, &s, &err), ETK_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.msg, "speed factor of rank 1: expected a number in (0, 1e6], got -0.5"));
    etk_workload_free(w);
}

static void compute_model_times_nodes(void **st)
{
    (void)st;
    /* one rank, three GPU nodes without duration, in a chain:
     *   GEMM 4096^3 with gemm_m/n/k: h = 4096/3 = 1365.33, eff 0.8*1365.33/1429.33 = 0.764179,
     *     1.37439e11 FLOPs / (1000e12 * 0.764179) = 179,852 ns + 2,000 = 181,852 ns
     *   elementwise (op_kind), 64 MiB: 67108864 / 1.6e12 = 41,943 ns + 2,000 = 43,943 ns
     *   no attributes, 1e9 FLOPs over 4e9 bytes (0.25 FLOP/byte: memory-bound):
     *     4e9 / 1.6e12 = 2,500,000 + 2,000 = 2,502,000 ns
     * step 181,852 + 43,943 + 2,502,000 = 2,727,795 ns (the roofline would give
     * 137,439 + 33,554 + 2,000,000). */
    etk_workload *w = sb_workload(1);
    etk_trace *t = etk_trace_new("0.0.4");
    sb_node b;
    sb_begin(&b, 1, ETK_NODE_COMP, "gemm");
    sb_attr(&b, etk_attr_i64("num_ops", 2ll * 4096 * 4096 * 4096));
    sb_attr(&b, etk_attr_u64("tensor_size", 2ull * 3 * 4096 * 4096));
    sb_attr(&b, etk_attr_str("op_kind", "gemm"));
    sb_attr(&b, etk_attr_i64("gemm_m", 4096));
    sb_attr(&b, etk_attr_i64("gemm_n", 4096));
    sb_attr(&b, etk_attr_i64("gemm_k", 4096));
    etk_trace_add(t, &b.n);
    sb_begin(&b, 2, ETK_NODE_COMP, "gelu");
    sb_dep(&b, 1);
    sb_attr(&b, etk_attr_i64("num_ops", 8 << 20));
    sb_attr(&b, etk_attr_u64("tensor_size", 64 << 20));
    sb_attr(&b, etk_attr_str("op_kind", "elementwise"));
    etk_trace_add(t, &b.n);
    uint64_t d2 = 2;
    sb_comp(t, 3, 0, 1000000000ull, 4000000000ull, &d2, 1);
    w->ranks[0] = t;
    etk_compute_params p = P();
    etk_sim_opts o = {.compute = &p};
    etk_sim *s = run(w, &o);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 181852 + 43943 + 2502000);
    etk_sim_free(s);
    etk_sim_opts o2 = {0}; /* roofline, efficiency 1 */
    s = run(w, &o2);
    assert_int_equal(etk_sim_result_get(s)->step_ns, 137438 + 33554 + 2000000);
    etk_sim_free(s);
    etk_workload_free(w);
}

static void overlap_interference(void **st)
{
    (void)st;
    /* two ranks: an all-reduce (10 us, from t = 0) and beside it a 1 us kernel (issued at t = 0,
     * before the transfer starts: not stretched) followed by a 5 us kernel. With overlap_slowdown
     * 0.1 the second kernel, starting at 1 us while the transfer is in flight, takes 5.5 us
     * (compute 6.5 us); with 0 it takes 5 us. The step stays 10 us (the all-reduce). */
    etk_workload *w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = etk_trace_new("0.0.4");
        uint64_t d2 = 2;
        sb_coll(t, 1, ETK_COLL_ALL_REDUCE, 1 << 20, NULL, NULL, 0);
        sb_comp(t, 2, 1, 0, 0, NULL, 0);
        sb_comp(t, 3, 5, 0, 0, &d2, 1);
        w->ranks[r] = t;
    }
    etk_compute_params p = P();
    etk_sim_opts o = {.compute = &p};
    etk_sim *s = run(w, &o);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 10000);
    assert_int_equal(r->ranks[0].compute_ns, 6500);
    assert_int_equal(r->ranks[0].overlapped_comm_ns, 6500);
    etk_sim_free(s);
    p.overlap_slowdown = 0;
    s = run(w, &o);
    assert_int_equal(etk_sim_result_get(s)->ranks[1].compute_ns, 6000);
    etk_sim_free(s);
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slow_rank_slows_the_step),
        cmocka_unit_test(straggler_pipeline),
        cmocka_unit_test(bad_speed_factor),
        cmocka_unit_test(compute_model_times_nodes),
        cmocka_unit_test(overlap_interference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
