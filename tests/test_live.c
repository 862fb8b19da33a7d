/* test_live.c — live mode's library parts without running a program: the --kernels table
 * (fixed times, roofline entries computed by hand, first match wins, errors naming file and
 * line), the GPU figures, and the engine entry points live mode drives (etk_sim_add_group,
 * etk_sim_next_event_ns, etk_sim_node_end, duration_ns) on a two-rank trace built here. */
#include <string.h>

#include "testutil.h"

#include "etkit/live.h"

static void test_kernels(void **st)
{
    (void)st;
    etk_error err = {0};
    etk_live_kernels *k = NULL;
    assert_int_equal(etk_live_kernels_parse("# times\n*gemm*  ns 1500\n\n_Z4fill*  flops 1e12 bytes 1e9 # roofline\n"
                                            "*  ns 7\n",
                                            "k.txt", &k, &err),
                     0);
    etk_cluster c;
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &c, &err), 0);
    uint64_t ns = 0;
    assert_int_equal(etk_live_kernel_ns(k, &c, "my_gemm_kernel", &ns), 1);
    assert_int_equal(ns, 1500);
    /* 1e12 FLOPs at 989 TFLOP/s = 1,011,122.35 ns; 1e9 B at 3,350 GB/s = 298,507 ns: ceil -> */
    assert_int_equal(etk_live_kernel_ns(k, &c, "_Z4fillPcm", &ns), 1);
    assert_int_equal(ns, 1011123);
    assert_int_equal(etk_live_kernel_ns(k, &c, "other", &ns), 1); /* the catch-all, last */
    assert_int_equal(ns, 7);
    etk_live_kernels_free(k);
    assert_int_equal(etk_live_kernels_parse("a ns 5\n", "k.txt", &k, &err), 0);
    assert_int_equal(etk_live_kernel_ns(k, &c, "b", &ns), 0);
    etk_live_kernels_free(k);
    const char *bad[] = {"x ns\n", "x ns 0\n", "x nsx 3\n", "x flops 1 bytes\n", "x flops -1 bytes 5\n",
                         "ok ns 1\nx ns nan\n"};
    const char *line[] = {"k.txt:1:", "k.txt:1:", "k.txt:1:", "k.txt:1:", "k.txt:1:", "k.txt:2:"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        k = NULL;
        assert_int_equal(etk_live_kernels_parse(bad[i], "k.txt", &k, &err), ETK_EFORMAT);
        assert_null(k);
        assert_non_null(strstr(err.msg, line[i]));
        assert_non_null(strstr(err.msg, "wanted 'PATTERN ns N'"));
    }
}

static void test_gpu_info(void **st)
{
    (void)st;
    etk_gpu g;
    etk_error err = {0};
    etk_live_gpu_info i;
    assert_int_equal(etk_gpu_preset("h100", &g, &err), 0);
    etk_live_gpu_info_of(&g, &i);
    assert_int_equal(i.sms, 132);
    assert_int_equal(i.cc_major, 9);
    assert_true(i.pcie_Bps == 64e9);
    assert_int_equal(etk_gpu_preset("a100", &g, &err), 0);
    etk_live_gpu_info_of(&g, &i);
    assert_int_equal(i.sms, 108);
    assert_int_equal(i.cc_major, 8);
}

/* Rank r: CPU node 1 (duration_ns 100 + r), a collective 2 of 1 MiB on group "g" after it. */
static etk_trace *two_nodes(uint32_t r)
{
    etk_trace *t = etk_trace_new(NULL);
    etk_attr a1[] = {etk_attr_bool("is_cpu_op", true), etk_attr_u64("duration_ns", 100 + r)};
    etk_node n1 = {.id = 1, .name = "host", .type = ETK_NODE_COMP, .n_attr = 2, .attr = a1};
    assert_non_null(etk_trace_add(t, &n1));
    uint64_t dep = 1;
    etk_attr a2[] = {etk_attr_i64("comm_type", ETK_COLL_ALL_REDUCE), etk_attr_i64("comm_size", 1 << 20),
                     etk_attr_str("pg_name", "g")};
    etk_node n2 = {.id = 2, .name = "ar", .type = ETK_NODE_COLL, .n_data_deps = 1, .data_deps = &dep, .n_attr = 3,
                   .attr = a2};
    assert_non_null(etk_trace_add(t, &n2));
    return t;
}

static void test_engine_entry_points(void **st)
{
    (void)st;
    etk_error err = {0};
    etk_cluster c;
    assert_int_equal(etk_cluster_preset_gpus("dgx-h100", 1, 2, &c, &err), 0);
    etk_sim_opts o = {0};
    etk_sim *s = NULL;
    assert_int_equal(etk_sim_new(&c, 2, NULL, &o, &s, &err), 0);
    uint32_t ranks[] = {0, 1};
    etk_group g = {.id = "g", .n_ranks = 2, .ranks = ranks};
    assert_int_equal(etk_sim_add_group(s, &g, &err), 0);
    assert_int_equal(etk_sim_add_group(s, &g, &err), ETK_EINVAL); /* twice */
    etk_trace *t0 = two_nodes(0), *t1 = two_nodes(1);
    assert_int_equal(etk_sim_add_rank_trace(s, 0, t0, &err), 0);
    uint64_t end = 0;
    assert_int_equal(etk_sim_node_end(s, 0, 1, &end), 0);            /* not yet */
    assert_int_equal(etk_sim_node_end(s, 0, 9, &end), ETK_ENOTFOUND); /* no such node */
    assert_int_equal(etk_sim_next_event_ns(s), 100);                  /* rank 0's CPU node */
    assert_int_equal(etk_sim_run_until(s, 100, &err), 0);
    assert_int_equal(etk_sim_node_end(s, 0, 1, &end), 1);
    assert_int_equal(end, 100);
    /* the collective waits for rank 1: nothing pending */
    assert_int_equal(etk_sim_next_event_ns(s), UINT64_MAX);
    char buf[512];
    etk_sim_blocked_report(s, buf, sizeof buf);
    assert_non_null(strstr(buf, "waits for rank(s) 1"));
    /* rank 1 arrives at t = 100: its CPU node ends at 201, the collective starts then */
    assert_int_equal(etk_sim_add_rank_trace(s, 1, t1, &err), 0);
    assert_int_equal(etk_sim_next_event_ns(s), 201);
    assert_int_equal(etk_sim_finish(s, &err), 0);
    uint32_t both[] = {0, 1};
    uint64_t ar = etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 1 << 20, both, 2);
    assert_int_equal(etk_sim_node_end(s, 0, 2, &end), 1);
    assert_int_equal(end, 201 + ar);
    assert_int_equal(etk_sim_node_end(s, 1, 2, &end), 1);
    assert_int_equal(end, 201 + ar);
    etk_sim_free(s);
    etk_trace_free(t0);
    etk_trace_free(t1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_gpu_info),
        cmocka_unit_test(test_engine_entry_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
