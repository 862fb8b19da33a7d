/* test_net.c — etkit's physical network model (outside ASTRA-sim compatibility) and the
 * roofline: every algorithm on every topology against the α–β closed forms of
 * ../shared/spec/formulas.md and docs/cluster.md, worked by hand with round numbers
 * (B = 100 GB/s = 100 B/ns, α = 1000 ns, S = 8 MB so S/B = 80,000 ns); group placement on the
 * dimensions a group spans; hierarchical collectives; point-to-point; the physical lower
 * bound ASTRA-sim's unaware backend breaks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "etkit/net.h"

static etk_cluster one_dim(int topo, uint32_t n, double GBps, double lat, int algo)
{
    etk_cluster c;
    etk_cluster_init(&c);
    snprintf(c.name, sizeof c.name, "test");
    c.n_dims = 1;
    c.dims[0].size = n;
    c.dims[0].topo = topo;
    c.dims[0].bw_Bps = GBps * 1e9;
    c.dims[0].latency_ns = lat;
    for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
        c.dims[0].algo[t] = algo;
    c.n_npus = n;
    c.gpu.peak_flops[ETK_PREC_BF16] = 900e12;
    c.gpu.hbm_bw_Bps = 1600e9;
    return c;
}

static uint64_t all(const etk_cluster *c, etk_coll_type t, uint64_t S)
{
    uint32_t *r = malloc(sizeof *r * c->n_npus);
    for (uint32_t i = 0; i < c->n_npus; i++)
        r[i] = i;
    uint64_t ns = etk_net_coll_ns(c, t, S, r, c->n_npus);
    free(r);
    return ns;
}

#define S8MB 8000000ull

/* The check: 1e12 FLOPs, 1e9 B on 900 TFLOP/s, 1600 GB/s at efficiency 1:
 * max(1e12/9e14, 1e9/1.6e12) s = 1.1111 ms → 1,111,111 ns (truncated). */
static void test_roofline(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, 0);
    assert_int_equal(etk_hw_compute_ns(&c, 1000000000000ull, 1000000000ull), 1111111);
    c.compute_efficiency = 0.5; /* both roofs halve: 2,222,222 */
    assert_int_equal(etk_hw_compute_ns(&c, 1000000000000ull, 1000000000ull), 2222222);
    c.compute_efficiency = 1;
    /* memory-bound: 1e10 B / 1.6e12 B/s = 6.25 ms */
    assert_int_equal(etk_hw_compute_ns(&c, 1000000000ull, 10000000000ull), 6250000);
    assert_int_equal(etk_hw_compute_ns(&c, 0, 0), 0);
    c.precision = ETK_PREC_FP8; /* no fp8 peak → only memory time counts, and check rejects it */
    etk_error err = {0};
    assert_true(etk_cluster_check(&c, 8, &err) < 0);
    assert_non_null(strstr(err.msg, "no fp8 peak"));
}

/* ring algorithm: formulas.md (n = 8): AR 2(n−1)α + 2(n−1)/n·S/B = 14,000 + 140,000;
 * RS (n−1)α + (n−1)/n·S/B = 7,000 + 70,000; AG (S per rank) (n−1)α + (n−1)·S/B = 7,000 +
 * 560,000; all-to-all (n−1)α + (n−1)/2·S/B = 7,000 + 280,000; broadcast (pipelined chain)
 * (n−1)α + S/B = 87,000. */
static void test_ring(void **state)
{
    (void)state;
    for (int topo = 0; topo < 3; topo++) {
        etk_cluster c = one_dim(topo, 8, 100, 1000, ETK_ALGO_RING);
        assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 154000);
        assert_int_equal(all(&c, ETK_COLL_REDUCE_SCATTER, S8MB), 77000);
        assert_int_equal(all(&c, ETK_COLL_ALL_GATHER, S8MB), 567000);
        assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 287000);
        assert_int_equal(all(&c, ETK_COLL_BROADCAST, S8MB), 87000);
    }
}

/* direct on a Switch: the NPU's one link carries all n−1 messages: AR 2α + 2(n−1)/n·S/B =
 * 2,000 + 140,000; RS and all-to-all α + 70,000; AG α + (n−1)·S/B = 561,000; broadcast as
 * scatter + all-gather = 142,000. On FullyConnected each peer has its own link:
 * AR 2α + 2·S/(nB) = 22,000; RS 11,000; AG α + S/B = 81,000. */
static void test_direct(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_DIRECT);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 142000);
    assert_int_equal(all(&c, ETK_COLL_REDUCE_SCATTER, S8MB), 71000);
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 71000);
    assert_int_equal(all(&c, ETK_COLL_ALL_GATHER, S8MB), 561000);
    assert_int_equal(all(&c, ETK_COLL_BROADCAST, S8MB), 142000);
    c = one_dim(ETK_TOPO_FULLY_CONNECTED, 8, 100, 1000, ETK_ALGO_DIRECT);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 22000);
    assert_int_equal(all(&c, ETK_COLL_REDUCE_SCATTER, S8MB), 11000);
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 11000);
    assert_int_equal(all(&c, ETK_COLL_ALL_GATHER, S8MB), 81000);
    /* on a Ring topology direct messages would share hops: costed as ring */
    c = one_dim(ETK_TOPO_RING, 8, 100, 1000, ETK_ALGO_DIRECT);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 154000);
}

/* halving-doubling (formulas.md): AR 2·log2(n)·α + 2(n−1)/n·S/B = 6,000 + 140,000; RS
 * 3,000 + 70,000; AG 3,000 + 560,000. n = 6: the 2 extra ranks fold in and out (2α + 2S/B)
 * around a 4-rank exchange: 4,000 + 120,000 + 2,000 + 160,000 = 286,000. */
static void test_halving_doubling(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_HALVING_DOUBLING);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 146000);
    assert_int_equal(all(&c, ETK_COLL_REDUCE_SCATTER, S8MB), 73000);
    assert_int_equal(all(&c, ETK_COLL_ALL_GATHER, S8MB), 563000);
    c = one_dim(ETK_TOPO_SWITCH, 6, 100, 1000, ETK_ALGO_HALVING_DOUBLING);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 286000);
}

/* double binary tree: 2·⌈log2 n⌉·α + 2·S/B = 6,000 + 160,000. */
static void test_double_binary_tree(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_DOUBLE_BINARY_TREE);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 166000);
}

/* auto: all-reduce takes the cheaper of ring and tree (ring for 8 MB: 154,000 < 166,000;
 * tree for 8 kB: 6,000 + 160 = 6,160 < 14,000 + 140), all-to-all direct on a Switch. */
static void test_auto(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_AUTO);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S8MB), 154000);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, 8000), 6160);
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 71000);
    assert_int_equal(all(&c, ETK_COLL_ALL_GATHER, S8MB), 567000);
}

/* Two dimensions: 8 GPUs on a Switch @ 400 GB/s, α 500 × 4 nodes on a Switch @ 50 GB/s,
 * α 2000 (ring everywhere), S = 64 MB. */
static etk_cluster two_dims(void)
{
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 400, 500, ETK_ALGO_RING);
    c.n_dims = 2;
    c.dims[1] = c.dims[0];
    c.dims[1].size = 4;
    c.dims[1].bw_Bps = 50e9;
    c.dims[1].latency_ns = 2000;
    c.n_npus = 32;
    return c;
}

#define S64MB 64000000ull

static void test_hierarchical(void **state)
{
    (void)state;
    etk_cluster c = two_dims();
    /* whole cluster all-reduce: RS in the node (7·500 + 7/8·160,000 = 143,500), AR across
     * nodes on 8 MB (2·3·2000 + 2·3/4·160,000 = 252,000), AG in the node on 8 MB shards
     * (3,500 + 7·20,000 = 143,500): 539,000 */
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S64MB), 539000);
    /* reduce-scatter: 143,500 + (3·2000 + 3/4·160,000 = 126,000) = 269,500 */
    assert_int_equal(all(&c, ETK_COLL_REDUCE_SCATTER, S64MB), 269500);
    /* all-gather of 1 MB per rank, across nodes first (6,000 + 3·20,000 = 66,000), then in the
     * node with 4 MB shards (3,500 + 7·10,000 = 73,500): 139,500 */
    assert_int_equal(all(&c, ETK_COLL_ALL_GATHER, 1000000), 139500);
    /* all-to-all: one ring pass per dimension with the full buffer, the passes pipelined
     * (each dimension's latency once, the slower bandwidth term): 3,500 + 6,000 +
     * max(3.5·160,000, 1.5·1,280,000) = 1,929,500 (in series: 2,489,500) */
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S64MB), 1929500);

    /* a TP group inside node 1 uses only the NVSwitch dimension: 7,000 + 280,000 */
    uint32_t tp[8] = {8, 9, 10, 11, 12, 13, 14, 15};
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, S64MB, tp, 8), 287000);
    /* a DP group across nodes uses only the node dimension: 12,000 + 1.5·1,280,000 */
    uint32_t dp[4] = {3, 11, 19, 27};
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, S64MB, dp, 4), 1932000);
    /* half a node (TP 4): n = 4 on the Switch: 3,000 + 1.5·160,000 */
    uint32_t tp4[4] = {4, 5, 6, 7};
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, S64MB, tp4, 4), 243000);
}

static void test_placement(void **state)
{
    (void)state;
    etk_cluster c = two_dims();
    etk_net_place p;
    uint32_t dp[4] = {27, 3, 19, 11}; /* order does not matter for regularity */
    assert_int_equal(etk_net_place_group(&c, dp, 4, &p, NULL), 0);
    assert_true(p.regular && !p.whole);
    assert_int_equal(p.n_spans, 1);
    assert_int_equal(p.span_dim[0], 1);
    assert_int_equal(p.span_size[0], 4);
    uint32_t dup[4] = {0, 1, 8, 8}; /* duplicates: right shape, wrong set */
    assert_int_equal(etk_net_place_group(&c, dup, 4, &p, NULL), 0);
    assert_false(p.regular);
    uint32_t dup2[4] = {0, 0, 9, 9}; /* same per-dimension coordinate sums as {0, 1, 8, 9} */
    assert_int_equal(etk_net_place_group(&c, dup2, 4, &p, NULL), 0);
    assert_false(p.regular);
    uint32_t shuffled[4] = {9, 0, 8, 1}; /* not increasing: checked by the fingerprint */
    assert_int_equal(etk_net_place_group(&c, shuffled, 4, &p, NULL), 0);
    assert_true(p.regular);
    uint32_t two_by_two[4] = {0, 1, 8, 9};
    assert_int_equal(etk_net_place_group(&c, two_by_two, 4, &p, NULL), 0);
    assert_true(p.regular);
    assert_int_equal(p.n_spans, 2);
    /* 2×2 sub-grid all-reduce: RS on 2 GPUs (500 + 1/2·160,000) + AR on 2 nodes with 32 MB
     * (2·2000 + 640,000) + AG back (500 + 80,000) = 80,500 + 644,000 + 80,500 */
    assert_int_equal(etk_net_place_coll_ns(&c, &p, ETK_COLL_ALL_REDUCE, S64MB), 805000);
}

/* Irregular group {0, 1, 9}: a flat ring 0→1 (node: α 500), 1→9 (across: α 2000),
 * 9→0 (both dimensions: α 2500, 50 GB/s) runs at its slowest link, α 2500, B 50:
 * AR of 3 MB = 2·2·2500 + 2·2/3·60,000 = 90,000. */
/* alltoall_efficiency (docs/cluster.md): an all-to-all on a dimension runs at that fraction of
 * its bandwidth; every other collective at line rate. One Switch of 8 at 100 B/ns, direct,
 * 0.5: 1,000 + 7/8·8,000,000/50 = 141,000 (line rate 71,000); reduce-scatter stays 71,000.
 * Two dimensions (ring passes, pipelined): the NVLink pass at 0.5 of 400 B/ns, 3.5·320,000 =
 * 1,120,000, stays under the NIC pass (1.5·1,280,000 = 1,920,000): 1,929,500 as at line rate;
 * at 0.25 it is 2,240,000 and sets the time: 3,500 + 6,000 + 2,240,000 = 2,249,500. The
 * presets: dgx-b200 (0.81, DeepEP V2 SM100 EP 8, 733 of 900 GB/s) 8 MB on 8 ranks: 500 +
 * 7,000,000/729 = 10,102 ns; dgx-h100 (0.78, DeepEP H800 EP 8, 155.5 of 200 GB/s): 500 +
 * 7,000,000/351 = 20,443 ns; dgx-a100 has no measured all-to-all: line rate, 500 +
 * 7,000,000/300 = 23,833 ns. */
static void test_alltoall_efficiency(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_DIRECT);
    c.dims[0].a2a_eff = 0.5;
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 141000);
    assert_int_equal(all(&c, ETK_COLL_REDUCE_SCATTER, S8MB), 71000);
    c = two_dims();
    c.dims[0].a2a_eff = 0.5;
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S64MB), 1929500);
    assert_int_equal(all(&c, ETK_COLL_ALL_REDUCE, S64MB), 539000);
    c.dims[0].a2a_eff = 0.25;
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S64MB), 2249500);
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-b200", 1, &c, &err), 0);
    assert_true(c.dims[0].a2a_eff == 0.81);
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 10102);
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &c, &err), 0);
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 20443);
    assert_int_equal(etk_cluster_preset("dgx-a100", 1, &c, &err), 0);
    assert_int_equal(all(&c, ETK_COLL_ALL_TO_ALL, S8MB), 23833);
}

static void test_irregular(void **state)
{
    (void)state;
    etk_cluster c = two_dims();
    uint32_t g[3] = {0, 1, 9};
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 3000000, g, 3), 90000);
}

/* A Ring dimension with a strided group: {0, 2, 4, 6} of a ring of 8 are 2 hops apart:
 * α = 2·100; AR of 400 kB at 100 B/ns: 2·3·200 + 1.5·4,000 = 7,200. */
static void test_ring_stride(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_RING, 8, 100, 100, ETK_ALGO_RING);
    uint32_t g[4] = {0, 2, 4, 6};
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 400000, g, 4), 7200);
}

/* p2p on dgx-h100 × 2: in a node 500 ns + 1 MB/450 B/ns = 2,722 ns; across nodes 2000 +
 * 1e6/50 = 22,000; GPU 1 of node 0 to GPU 0 of node 1 crosses both: 2,500 + 20,000. */
static void test_p2p(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 2, &c, &err), 0);
    assert_int_equal(etk_net_p2p_ns(&c, 0, 1, 1000000), 2722);
    assert_int_equal(etk_net_p2p_ns(&c, 0, 8, 1000000), 22000);
    assert_int_equal(etk_net_p2p_ns(&c, 1, 8, 1000000), 22500);
    assert_int_equal(etk_net_p2p_ns(&c, 4, 4, 1000000), 0);
}

/* ASTRA-sim's unaware backend "finishes" a 1 GiB all-to-all on 512 ranks in 0.55 ms. Every
 * rank's shares for the other 63 nodes, (N−8)/N of its buffer, must leave through a 50 GB/s
 * NIC (the 7 peers in its node are reached over NVLink): at least 21.14 ms. */
static void test_all_to_all_lower_bound(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 64, &c, &err), 0);
    double S = 1073741824.0, bound = S * 504 / 512 / 50e9 * 1e9;
    uint64_t t = all(&c, ETK_COLL_ALL_TO_ALL, 1073741824ull);
    if ((double)t < bound || t < 550000)
        fail_msg("all-to-all 1 GiB on 512 ranks took %llu ns, below the %g ns bound",
                 (unsigned long long)t, bound);
}

/* 16,384 ranks (dgx-h100 × 2,048): a whole-cluster all-reduce and a DP group cost is
 * evaluated without trouble and follows the hierarchical formula: RS in node (7·500 +
 * 7/8·S/450), AR across 2,048 nodes (AUTO: tree, 2·11·2000 + 2·(S/8)/50), AG in node. */
static void test_large(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 2048, &c, &err), 0);
    assert_int_equal(c.n_npus, 16384);
    double S = 1048576;
    double rs = 3500 + 7.0 / 8 * S / 450, ag = 3500 + 7 * (S / 8) / 450;
    double ring = 2 * 2047 * 2000 + 2 * 2047.0 / 2048 * (S / 8) / 50;
    double tree = 2 * 11 * 2000 + 2 * (S / 8) / 50;
    double want = rs + (ring < tree ? ring : tree) + ag;
    uint64_t got = all(&c, ETK_COLL_ALL_REDUCE, 1048576);
    assert_true(got == (uint64_t)llround(want));
}

/* Physics, for every algorithm, type, size and rank count on a Switch (one link of B per NPU):
 * no collective can beat the bytes its busiest NPU must move through that link — all-reduce
 * 2(n−1)/n·S, reduce-scatter and all-to-all (n−1)/n·S, all-gather (n−1)·S (S per rank),
 * broadcast S (every receiver gets S); plus at least one latency. On FullyConnected the NPU has
 * n−1 links, so the bounds divide by n−1. Costs also grow with the size. */
static void test_lower_bounds(void **state)
{
    (void)state;
    static const uint32_t ns[] = {2, 3, 6, 8, 64, 1000};
    static const uint64_t sizes[] = {0, 1, 4096, 1000000, 1ull << 30};
    static const etk_coll_type types[] = {ETK_COLL_ALL_REDUCE, ETK_COLL_REDUCE_SCATTER,
                                          ETK_COLL_ALL_GATHER, ETK_COLL_ALL_TO_ALL,
                                          ETK_COLL_BROADCAST};
    for (int topo = ETK_TOPO_FULLY_CONNECTED; topo <= ETK_TOPO_SWITCH; topo++)
        for (int algo = 0; algo <= ETK_ALGO_DOUBLE_BINARY_TREE; algo++)
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
                    etk_cluster c = one_dim(topo, ns[i], 100, 1000, algo);
                    double n = ns[i], links = topo == ETK_TOPO_SWITCH ? 1 : n - 1;
                    uint64_t prev = 0;
                    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                        double S = (double)sizes[k], bytes;
                        switch (types[t]) {
                        case ETK_COLL_ALL_REDUCE: bytes = 2 * (n - 1) / n * S; break;
                        case ETK_COLL_ALL_GATHER: bytes = (n - 1) * S; break;
                        case ETK_COLL_BROADCAST: bytes = S; break;
                        default: bytes = (n - 1) / n * S; break;
                        }
                        double bound = 1000 + bytes / links / 100;
                        uint64_t got = all(&c, types[t], sizes[k]);
                        if ((double)got + 0.5 < bound || got < prev)
                            fail_msg("%s %s on %s n=%u S=%llu: %llu ns (bound %.0f, smaller size "
                                     "%llu)",
                                     etk_algo_name(algo), etk_coll_type_name(types[t]),
                                     etk_topo_name(topo), ns[i], (unsigned long long)sizes[k],
                                     (unsigned long long)got, bound, (unsigned long long)prev);
                        prev = got;
                    }
                }
}

/* Clusters built in memory and never checked must not crash the cost functions: zero
 * bandwidth gives an "infinite" time, zero splits/active chunks count as 1. */
static void test_unchecked(void **state)
{
    (void)state;
    etk_cluster c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_RING);
    c.dims[0].bw_Bps = 0;
    assert_true(all(&c, ETK_COLL_ALL_REDUCE, 1000) == UINT64_MAX);
    assert_true(etk_net_p2p_ns(&c, 0, 1, 1000) == UINT64_MAX);
    c.astra_compat = true;
    assert_true(all(&c, ETK_COLL_ALL_REDUCE, 1000) == UINT64_MAX);
    c = one_dim(ETK_TOPO_SWITCH, 8, 100, 1000, ETK_ALGO_RING);
    c.astra_compat = true;
    c.astra_splits = 0;
    c.astra_active_chunks = 0;
    assert_true(all(&c, ETK_COLL_ALL_REDUCE, 1000) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roofline),          cmocka_unit_test(test_ring),
        cmocka_unit_test(test_direct),            cmocka_unit_test(test_halving_doubling),
        cmocka_unit_test(test_double_binary_tree), cmocka_unit_test(test_auto),
        cmocka_unit_test(test_hierarchical),      cmocka_unit_test(test_placement),
        cmocka_unit_test(test_irregular),         cmocka_unit_test(test_ring_stride),
        cmocka_unit_test(test_p2p),               cmocka_unit_test(test_all_to_all_lower_bound),
        cmocka_unit_test(test_large),             cmocka_unit_test(test_lower_bounds),
        cmocka_unit_test(test_unchecked),         cmocka_unit_test(test_alltoall_efficiency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
