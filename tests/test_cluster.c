/* test_cluster.c — cluster descriptions: the built-in GPU and cluster presets (figures of
 * ../shared/spec/hardware.md), etkit's cluster YAML (docs/cluster.md) and every kind of bad
 * input, each asserting that the message names the file, the key/line and what was wanted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "etkit/net.h"

static const char *write_tmp(const char *text)
{
    static char path[512];
    static int k;
    snprintf(path, sizeof path, "%s/cluster%d.yaml", tu_tmpdir(), k++);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* hardware.md: H100 SXM 989 / 1979 TFLOP/s dense, 3.35 TB/s, 80 GB; NVLink 4 900 GB/s
 * bidirectional = 450 GB/s per direction; one 400 Gb/s NIC per GPU = 50 GB/s. */
static void test_presets(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 8, &c, &err), 0);
    assert_int_equal(c.n_npus, 64);
    assert_int_equal(c.n_dims, 2);
    assert_int_equal(c.dims[0].size, 8);
    assert_int_equal(c.dims[0].topo, ETK_TOPO_SWITCH);
    assert_true(c.dims[0].bw_Bps == 450e9);
    assert_int_equal(c.dims[1].size, 8);
    assert_true(c.dims[1].bw_Bps == 50e9);
    assert_true(c.gpu.peak_flops[ETK_PREC_BF16] == 989e12);
    assert_true(c.gpu.peak_flops[ETK_PREC_FP8] == 1979e12);
    assert_true(c.gpu.hbm_bw_Bps == 3350e9);
    assert_int_equal(c.gpu.hbm_bytes, 81559ull << 20); /* nvidia-smi total, MiB */
    assert_false(c.astra_compat);
    /* A100: 312 TFLOP/s, 2.04 TB/s, HDR 200 Gb/s = 25 GB/s, NVLink 3 600/2 = 300 GB/s */
    assert_int_equal(etk_cluster_preset("dgx-a100", 2, &c, &err), 0);
    assert_true(c.gpu.peak_flops[ETK_PREC_BF16] == 312e12);
    assert_true(c.gpu.hbm_bw_Bps == 2040e9);
    assert_true(c.dims[0].bw_Bps == 300e9 && c.dims[1].bw_Bps == 25e9);
    assert_int_equal(etk_cluster_preset("hgx-h200", 1, &c, &err), 0);
    assert_true(c.gpu.hbm_bw_Bps == 4800e9);
    assert_int_equal(c.gpu.hbm_bytes, 143771ull << 20); /* nvidia-smi total, MiB */
    assert_int_equal(etk_cluster_preset("dgx-b200", 4, &c, &err), 0);
    assert_true(c.gpu.peak_flops[ETK_PREC_BF16] == 2250e12);
    assert_true(c.dims[0].bw_Bps == 900e9);
    assert_int_equal(c.n_npus, 32);
    /* every listed preset loads and checks */
    for (const char *const *n = etk_cluster_preset_names(); *n; n++) {
        assert_int_equal(etk_cluster_preset(*n, 3, &c, &err), 0);
        assert_int_equal(etk_cluster_check(&c, 24, &err), 0);
        assert_string_equal(c.name, *n);
    }
    etk_gpu g;
    for (const char *const *n = etk_gpu_preset_names(); *n; n++)
        assert_int_equal(etk_gpu_preset(*n, &g, &err), 0);
    assert_int_equal(etk_gpu_preset("mi300x", &g, &err), 0);
    assert_true(g.peak_flops[ETK_PREC_BF16] == 1307e12 && g.hbm_bw_Bps == 5300e9);
}

static void test_preset_errors(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h900", 8, &c, &err), ETK_ENOTFOUND);
    assert_non_null(strstr(err.msg, "unknown cluster preset 'dgx-h900'"));
    assert_non_null(strstr(err.msg, "dgx-h100"));
    assert_int_equal(etk_cluster_preset("dgx-h100", 0, &c, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "--nodes must be"));
    etk_gpu g;
    assert_int_equal(etk_gpu_preset("v100", &g, &err), ETK_ENOTFOUND);
    assert_non_null(strstr(err.msg, "unknown GPU preset 'v100'"));
}

static void test_load_yaml(void **state)
{
    (void)state;
    const char *p = write_tmp("# two levels\n"
                              "name: lab\n"
                              "gpu:\n"
                              "  name: X1\n"
                              "  peak_tflops: {bf16: 500, fp8: 1000}\n"
                              "  hbm_bw_GBps: 2000\n"
                              "  hbm_GB: 96\n"
                              "compute_efficiency: 0.6\n"
                              "precision: fp8\n"
                              "network:\n"
                              "  - size: 4\n"
                              "    topology: FullyConnected\n"
                              "    bandwidth: 200\n"
                              "    latency: 300\n"
                              "    alltoall_efficiency: 0.8\n"
                              "    algorithm: {all_reduce: direct, reduce_scatter: halvingDoubling}\n"
                              "  - {size: 16, topology: ring, bandwidth: 25.5, latency: 1500}\n");
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_load(p, &c, &err), 0);
    assert_string_equal(c.name, "lab");
    assert_string_equal(c.gpu.name, "X1");
    assert_true(c.gpu.peak_flops[ETK_PREC_FP8] == 1000e12);
    assert_int_equal(c.gpu.hbm_bytes, 96000000000ull);
    assert_true(c.compute_efficiency == 0.6);
    assert_int_equal(c.precision, ETK_PREC_FP8);
    assert_int_equal(c.n_npus, 64);
    assert_int_equal(c.dims[0].topo, ETK_TOPO_FULLY_CONNECTED);
    assert_int_equal(c.dims[0].algo[ETK_COLL_ALL_REDUCE], ETK_ALGO_DIRECT);
    assert_int_equal(c.dims[0].algo[ETK_COLL_REDUCE_SCATTER], ETK_ALGO_HALVING_DOUBLING);
    assert_int_equal(c.dims[0].algo[ETK_COLL_ALL_GATHER], ETK_ALGO_AUTO);
    assert_int_equal(c.dims[1].topo, ETK_TOPO_RING);
    assert_true(c.dims[1].bw_Bps == 25.5e9 && c.dims[1].latency_ns == 1500);
    assert_true(c.dims[0].a2a_eff == 0.8 && c.dims[1].a2a_eff == 0); /* 0: unset, line rate */
    /* fp8 at 0.6 efficiency: 1.2e15 FLOPs / (1e15 · 0.6) = 2 ms */
    assert_int_equal(etk_hw_compute_ns(&c, 1200000000000ull, 0), 2000000);
    /* gpu by preset name */
    p = write_tmp("gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\n");
    assert_int_equal(etk_cluster_load(p, &c, &err), 0);
    assert_true(c.gpu.peak_flops[ETK_PREC_BF16] == 989e12);
    assert_true(c.compute_efficiency == 1.0);
}

/* `preset:` + `nodes:` with overrides; parsing from memory; the one-line description. */
static void test_preset_in_yaml(void **state)
{
    (void)state;
    const char *p = write_tmp("compute_efficiency: 0.5\npreset: dgx-h100\nnodes: 16\nname: mine\n");
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_load(p, &c, &err), 0);
    assert_int_equal(c.n_npus, 128);
    assert_true(c.compute_efficiency == 0.5);
    assert_string_equal(c.name, "mine");
    assert_true(c.dims[1].bw_Bps == 50e9);
    const char *txt = "gpu: b200\nnetwork:\n  - {size: 4, topology: Ring, bandwidth: 100, latency: 10}\n";
    assert_int_equal(etk_cluster_parse(txt, strlen(txt), "mem", &c, &err), 0);
    assert_int_equal(c.n_npus, 4);
    char buf[512];
    assert_int_equal(etk_cluster_preset("dgx-h100", 8, &c, &err), 0);
    assert_string_equal(etk_cluster_describe(&c, buf, sizeof buf),
                        "dgx-h100: 64 x H100-SXM (989 TFLOP/s bf16, 3350 GB/s HBM); network "
                        "8 Switch 450 GB/s 500 ns x 8 Switch 50 GB/s 2000 ns");
    txt = "preset: dgx-h900\n";
    assert_true(etk_cluster_parse(txt, strlen(txt), "mem.yaml", &c, &err) < 0);
    assert_non_null(strstr(err.msg, "mem.yaml:1: preset: unknown cluster preset 'dgx-h900'"));
    txt = "preset: dgx-h100\nnodes: 0\n";
    assert_true(etk_cluster_parse(txt, strlen(txt), "mem.yaml", &c, &err) < 0);
    assert_non_null(strstr(err.msg, "mem.yaml:2: nodes: expected a whole number >= 1, got 0"));
}

/* Each bad input: the loader fails and the message contains every expected fragment. */
static void expect_error(const char *yaml, const char *want1, const char *want2)
{
    const char *p = write_tmp(yaml);
    etk_cluster c;
    etk_error err = {0};
    int rc = etk_cluster_load(p, &c, &err);
    if (rc >= 0 || !strstr(err.msg, p) || !strstr(err.msg, want1) ||
        (want2 && !strstr(err.msg, want2)))
        fail_msg("YAML:\n%s\nexpected an error with '%s' / '%s' and the file name, got rc %d: %s",
                 yaml, want1, want2 ? want2 : "", rc, err.msg);
}

#define NET1 "network:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\n"

static void test_yaml_errors(void **state)
{
    (void)state;
    expect_error("gpu: h100\n" NET1 "colour: blue\n", ":4: unknown key 'colour'", "known keys");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Torus, bandwidth: 4, latency: 5}\n",
                 ":3: network[0].topology: unknown topology 'Torus'", "Ring, FullyConnected or Switch");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: 0, latency: 5}\n",
                 "network[0].bandwidth: expected GB/s per direction, 10^9 B/s, in [0.001, 1e+06]", "got 0");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: -5, latency: 5}\n",
                 "network[0].bandwidth: expected GB/s per direction, 10^9 B/s, in [0.001, 1e+06]", "got -5");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: fast, latency: 5}\n",
                 "network[0].bandwidth: expected a number", "'fast'");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: [1], latency: 5}\n",
                 "network[0].bandwidth: expected a number", "got a list");
    expect_error("gpu: h100\nnetwork:\n  - {size: 2.5, topology: Ring, bandwidth: 5, latency: 5}\n",
                 "network[0].size: expected a whole number >= 1", "2.5");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: 5, latency: -1}\n",
                 "network[0].latency: expected ns in [0, 1e+09]", "got -1");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, latency: 5}\n",
                 "network[0]: missing bandwidth", NULL);
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: 5, latency: 5, mtu: 9}\n",
                 "unknown key 'mtu' in network[0]", NULL);
    expect_error("gpu: h100\nnetwork: 5\n", ":2: network: expected a list", "got a scalar");
    expect_error("gpu: h100\nnetwork: []\n", "network: expected at least one dimension", NULL);
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: 5, latency: 5,"
                 " algorithm: {all_reduce: zigzag}}\n",
                 "network[0].algorithm.all_reduce: unknown algorithm 'zigzag'", NULL);
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: 5, latency: 5,"
                 " algorithm: {all_gather: double-binary-tree}}\n",
                 "only defined for all_reduce", NULL);
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring, bandwidth: 5, latency: 5,"
                 " algorithm: {all_sum: ring}}\n",
                 "unknown key 'all_sum'", NULL);
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500, "
                 "alltoall_efficiency: 1.5}\n",
                 "network[0].alltoall_efficiency: expected a fraction of the bandwidth in [0.01, 1]",
                 "got 1.5");
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500, "
                 "alltoall_efficiency: high}\n",
                 "network[0].alltoall_efficiency", NULL);
    expect_error(NET1, "missing 'gpu'", NULL);
    expect_error("gpu: h100\n", "missing 'network'", NULL);
    expect_error("gpu: v100\n" NET1, ":1: gpu: unknown GPU preset 'v100'", NULL);
    expect_error("gpu: {name: X, hbm_bw_GBps: 100}\n" NET1, "gpu: missing peak_tflops", NULL);
    expect_error("gpu: {name: X, peak_tflops: {bf17: 3}, hbm_bw_GBps: 100}\n" NET1,
                 "unknown key 'bf17' in gpu.peak_tflops", NULL);
    expect_error("gpu: a100\nprecision: fp8\n" NET1, "has no fp8 peak", NULL);
    expect_error("gpu: h100\ncompute_efficiency: 1.5\n" NET1,
                 "compute_efficiency: expected a fraction in [0.001, 1]", NULL);
    expect_error("gpu: h100\nprecision: int4\n" NET1, "precision: expected bf16", NULL);
    /* syntax error: line and column */
    expect_error("gpu: h100\nnetwork:\n  - {size: 8, topology: Ring\n  bandwidth: 5\n",
                 "YAML syntax error", ":4:");
    expect_error("", "empty cluster file", NULL);
    expect_error("- 1\n- 2\n", "top level: expected a mapping", NULL);
    etk_cluster c;
    etk_error err = {0};
    assert_true(etk_cluster_load("/nonexistent/c.yaml", &c, &err) < 0);
    assert_non_null(strstr(err.msg, "/nonexistent/c.yaml"));
}

/* Consistency of an in-memory cluster against a workload's rank count. */
static void test_check(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 8, &c, &err), 0);
    assert_int_equal(etk_cluster_check(&c, 64, &err), 0);
    assert_int_equal(etk_cluster_check(&c, 63, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "has 64 NPUs (8 Switch x 8 Switch) but the workload has 63 ranks"));
    etk_cluster bad = c;
    bad.dims[1].bw_Bps = 0;
    assert_int_equal(etk_cluster_check(&bad, 64, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "network[1].bandwidth: expected a positive GB/s"));
    bad = c;
    bad.dims[0].topo = 7;
    assert_int_equal(etk_cluster_check(&bad, 64, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "network[0].topology: unknown topology 7"));
    bad = c;
    bad.dims[0].size = 0;
    assert_int_equal(etk_cluster_check(&bad, 0, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "network[0].size"));
    bad = c;
    bad.n_npus = 10;
    assert_int_equal(etk_cluster_check(&bad, 0, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "n_npus is 10"));
    bad = c;
    bad.astra_compat = true;
    bad.astra_splits = 0;
    assert_int_equal(etk_cluster_check(&bad, 0, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "preferred-dataset-splits"));
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(etk_topo_parse("switch"), ETK_TOPO_SWITCH);
    assert_int_equal(etk_topo_parse("FullyConnected"), ETK_TOPO_FULLY_CONNECTED);
    assert_int_equal(etk_topo_parse("mesh"), -1);
    assert_int_equal(etk_algo_parse("halvingDoubling"), ETK_ALGO_HALVING_DOUBLING);
    assert_int_equal(etk_algo_parse("doubleBinaryTree"), ETK_ALGO_DOUBLE_BINARY_TREE);
    assert_int_equal(etk_algo_parse("ring"), ETK_ALGO_RING);
    assert_int_equal(etk_algo_parse("oneRing"), -1);
    assert_string_equal(etk_topo_name(ETK_TOPO_RING), "Ring");
    assert_string_equal(etk_algo_name(ETK_ALGO_HALVING_DOUBLING), "halving-doubling");
    assert_string_equal(etk_precision_name(ETK_PREC_FP8), "fp8");
    assert_int_equal(etk_precision_parse("TF32"), ETK_PREC_TF32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),     cmocka_unit_test(test_preset_errors),
        cmocka_unit_test(test_load_yaml),   cmocka_unit_test(test_yaml_errors),
        cmocka_unit_test(test_check),       cmocka_unit_test(test_names),
        cmocka_unit_test(test_preset_in_yaml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
