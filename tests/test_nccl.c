/* test_nccl.c — NCCL-like algorithm/protocol choice (src/net/nccl.c) and its execution on the
 * flow model against the nccl-tests figures of ../shared/spec/calibration.md: 8 x H100 all-reduce
 * about 476 GB/s bus bandwidth at large sizes (NVLink SHARP); NDR 400 Gb/s 46–48 GB/s per NIC
 * across nodes; within 5% at large sizes, latency-bound at small sizes. */
#include <math.h>
#include <string.h>

#include "testutil.h"

#include "etkit/net.h"

static void choose(const etk_cluster *c, etk_coll_type t, uint64_t S, uint32_t n, uint32_t nodes,
                   etk_nccl_choice *ch)
{
    etk_fabric f;
    etk_fabric_of(c, &f);
    etk_nccl_choose(c, &f, t, S, n, nodes, ch);
}

/* busbw of an all-reduce over ranks 0..n-1 run on the flow model */
static double flow_busbw(const etk_cluster *c, uint32_t n, uint64_t S, etk_nccl_choice *ch)
{
    etk_flow_op op = {.type = ETK_COLL_ALL_REDUCE, .bytes = S, .ranks = NULL, .n_ranks = n};
    etk_error err = {0};
    assert_int_equal(etk_net_flow_run(c, &op, 1, &err), 0);
    if (ch)
        *ch = op.choice;
    return (double)S * 2 * (n - 1) / n / op.finish_ns;
}

static void test_h100_node_large(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &c, &err), 0);
    /* 256 MiB .. 8 GiB: NVLink SHARP, Simple, busbw within 5% of 476 GB/s (calibration.md) */
    for (uint64_t S = 256ull << 20; S <= 8ull << 30; S <<= 1) {
        etk_nccl_choice ch;
        choose(&c, ETK_COLL_ALL_REDUCE, S, 8, 1, &ch);
        assert_int_equal(ch.algo, ETK_NCCL_NVLS);
        assert_int_equal(ch.proto, ETK_NCCL_SIMPLE);
        assert_true(fabs(ch.busbw_GBps - 476) / 476 < 0.05);
        etk_nccl_choice fc;
        double fb = flow_busbw(&c, 8, S, &fc);
        assert_int_equal(fc.algo, ETK_NCCL_NVLS);
        assert_true(fabs(fb - 476) / 476 < 0.05);
        /* the flow model and the closed form agree when nothing else runs */
        assert_true(fabs(fb - ch.busbw_GBps) / ch.busbw_GBps < 1e-3);
    }
    /* at 8 GiB the latency part is negligible: 476 to 0.1% (the fitted efficiency) */
    etk_nccl_choice ch;
    choose(&c, ETK_COLL_ALL_REDUCE, 8ull << 30, 8, 1, &ch);
    assert_true(fabs(ch.busbw_GBps - 476) < 0.5);
}

/* Small sizes are latency-bound: at 8 B the LL protocol on a ring wins (4,000 ns base + 14 hops
 * of 500 ns = 11,000 ns) and busbw is ~0; bus bandwidth grows with size; protocols move from LL
 * to LL128/Simple to NVLink SHARP as in nccl-tests' tuning. */
static void test_h100_node_shape(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &c, &err), 0);
    etk_nccl_choice ch;
    choose(&c, ETK_COLL_ALL_REDUCE, 8, 8, 1, &ch);
    assert_int_equal(ch.algo, ETK_NCCL_RING);
    assert_int_equal(ch.proto, ETK_NCCL_LL);
    assert_true(fabs(ch.lat_ns - 11000) < 1e-6);
    assert_true(ch.busbw_GBps < 0.01);
    double prev = 0;
    int prev_proto = -1;
    for (uint64_t S = 8; S <= 4ull << 30; S <<= 1) {
        choose(&c, ETK_COLL_ALL_REDUCE, S, 8, 1, &ch);
        assert_true(ch.busbw_GBps >= prev);
        prev = ch.busbw_GBps;
        int rankp = ch.algo == ETK_NCCL_NVLS ? 3 : ch.proto;
        assert_true(rankp >= prev_proto); /* LL -> LL128 -> Simple -> NVLS, never back */
        prev_proto = rankp;
    }
    assert_int_equal(prev_proto, 3);
    /* 1 MiB: still well below the large-size figure (latency matters) */
    choose(&c, ETK_COLL_ALL_REDUCE, 1 << 20, 8, 1, &ch);
    assert_true(ch.busbw_GBps < 0.6 * 476);
}

/* Two DGX H100 nodes, 16 ranks: 8 ring channels, channel k crossing nodes on NIC k; the NICs are
 * the bottleneck at 47 GB/s each (NVLink carries 8 flows per GPU at 450 GB/s, more than 8 x 47),
 * so busbw = 8 x 47 = 376 GB/s: 47 per NIC, inside the published 46–48 (calibration.md). */
static void test_two_nodes_per_nic(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 2, &c, &err), 0);
    for (uint64_t S = 1ull << 30; S <= 4ull << 30; S <<= 1) {
        etk_nccl_choice ch;
        double b = flow_busbw(&c, 16, S, &ch) / 8;
        assert_int_equal(ch.algo, ETK_NCCL_RING);
        assert_true(b > 46 * 0.95 && b < 48 * 1.05);
        assert_true(fabs(b - 47) / 47 < 0.02);
    }
    /* SuperPOD preset, 32 nodes (one scalable unit): still 47 per NIC at 4 GiB */
    assert_int_equal(etk_cluster_preset("dgx-h100-superpod", 32, &c, &err), 0);
    double b = flow_busbw(&c, 256, 4ull << 30, NULL) / 8;
    assert_true(fabs(b - 47) / 47 < 0.05);
}

/* Across many nodes small all-reduces use the tree (2·log2(64) = 12 NIC hops instead of the
 * ring's 2·63), large ones the ring (the tree moves 2S per rank, the ring 2(n-1)/n·S). */
static void test_tree_vs_ring(void **st)
{
    (void)st;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 64, &c, &err), 0);
    etk_nccl_choice ch;
    choose(&c, ETK_COLL_ALL_REDUCE, 64 << 10, 512, 64, &ch);
    assert_int_equal(ch.algo, ETK_NCCL_TREE);
    choose(&c, ETK_COLL_ALL_REDUCE, 4ull << 30, 512, 64, &ch);
    assert_int_equal(ch.algo, ETK_NCCL_RING);
    /* no NVLink SHARP on A100 (NVLink 3, 300 GB/s): ring at 300 · 365/450 = 243 GB/s */
    assert_int_equal(etk_cluster_preset("dgx-a100", 1, &c, &err), 0);
    choose(&c, ETK_COLL_ALL_REDUCE, 8ull << 30, 8, 1, &ch);
    assert_int_equal(ch.algo, ETK_NCCL_RING);
    assert_true(fabs(ch.busbw_GBps - 243.3) < 1);
    assert_string_equal(etk_nccl_algo_name(ETK_NCCL_NVLS), "nvls");
    assert_string_equal(etk_nccl_proto_name(ETK_NCCL_LL128), "LL128");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_node_large),
        cmocka_unit_test(test_h100_node_shape),
        cmocka_unit_test(test_two_nodes_per_nic),
        cmocka_unit_test(test_tree_vs_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
