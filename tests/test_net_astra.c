/* test_net_astra.c — ASTRA-sim compatibility mode against ASTRA-sim itself: every
 * congestion-unaware analytical value measured in ../shared/spec/astra-sim.md (and the issue)
 * must come out to the nanosecond, plus the closed forms worked by hand, and the loader for
 * ASTRA-sim's network YAML + system JSON (units 2^30 B/s vs 10^9 B/s) with its errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "etkit/net.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)
#define GiB (1024ull * 1024 * 1024)

/* A compat cluster as ASTRA-sim's inputs describe it: bandwidth in its GB/s (2^30 B/s). */
static etk_cluster astra(uint32_t nd, const int *topo, const uint32_t *size, const double *gbps,
                         const double *lat, int algo)
{
    etk_cluster c;
    etk_cluster_init(&c);
    c.astra_compat = true;
    c.n_dims = nd;
    c.n_npus = 1;
    for (uint32_t i = 0; i < nd; i++) {
        c.dims[i].size = size[i];
        c.dims[i].topo = topo[i];
        c.dims[i].bw_Bps = gbps[i] * 1073741824.0;
        c.dims[i].latency_ns = lat[i];
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            c.dims[i].algo[t] = algo;
        c.n_npus *= size[i];
    }
    c.gpu.peak_flops[ETK_PREC_BF16] = 900e12;
    c.gpu.hbm_bw_Bps = 1600e9;
    return c;
}

static etk_cluster ring1(uint32_t n)
{
    int t = ETK_TOPO_RING;
    double bw = 50, lat = 500;
    return astra(1, &t, &n, &bw, &lat, ETK_ALGO_RING);
}

static etk_cluster switch1(uint32_t n, int algo)
{
    int t = ETK_TOPO_SWITCH;
    double bw = 400, lat = 936.25;
    return astra(1, &t, &n, &bw, &lat, algo);
}

/* Cost over the whole cluster (the group of every rank, as ASTRA-sim's measurements). */
static uint64_t whole(const etk_cluster *c, etk_coll_type t, uint64_t bytes)
{
    uint32_t *r = malloc(sizeof *r * c->n_npus);
    for (uint32_t i = 0; i < c->n_npus; i++)
        r[i] = i;
    uint64_t ns = etk_net_coll_ns(c, t, bytes, r, c->n_npus);
    free(r);
    return ns;
}

/* The worked example of astra-sim.md: c/N = 32768 B, net = ⌊500 + 610.35⌋ = 1110,
 * red = 3·⌊32768/1600⌋ = 60 → 4·(10 + 14·1120 + 7·60) = 64,440 ns. */
static void test_worked_example(void **state)
{
    (void)state;
    etk_cluster c = ring1(8);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 4 * (10 + 14 * 1120 + 7 * 60));
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 64440);
}

/* Ring topology 50 GB/s, 500 ns, ring algorithms: the table of astra-sim.md. */
static void test_ring_table(void **state)
{
    (void)state;
    static const struct { etk_coll_type t; uint32_t n; uint64_t mib, gib; } rows[] = {
        {ETK_COLL_ALL_REDUCE, 8, 64440, 36790164},
        {ETK_COLL_ALL_REDUCE, 64, 296896, 41613556},
        {ETK_COLL_ALL_REDUCE, 512, 2121712, 44009404},
        {ETK_COLL_ALL_GATHER, 8, 151016, 140014320},
        {ETK_COLL_ALL_GATHER, 64, 1358824, 1260128560},
        {ETK_COLL_REDUCE_SCATTER, 8, 33080, 19275884},
        {ETK_COLL_REDUCE_SCATTER, 64, 149224, 21797536},
        {ETK_COLL_ALL_TO_ALL, 8, 125480, 70057160},
        {ETK_COLL_ALL_TO_ALL, 64, 4725544, 634112680},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        etk_cluster c = ring1(rows[i].n);
        uint64_t a = whole(&c, rows[i].t, MiB), b = whole(&c, rows[i].t, GiB);
        if (a != rows[i].mib || b != rows[i].gib)
            fail_msg("%s N=%u: got %llu / %llu ns, ASTRA-sim measured %llu / %llu",
                     etk_coll_type_name(rows[i].t), rows[i].n, (unsigned long long)a,
                     (unsigned long long)b, (unsigned long long)rows[i].mib,
                     (unsigned long long)rows[i].gib);
    }
}

/* Switch 400 GB/s, 936.25 ns, 1 GiB: every algorithm of the table, N = 8 and 64. */
static void test_switch_table(void **state)
{
    (void)state;
    static const struct { int algo; etk_coll_type t; uint64_t n8, n64; } rows[] = {
        {ETK_ALGO_RING, ETK_COLL_ALL_REDUCE, 6241996, 7852108},
        {ETK_ALGO_RING, ETK_COLL_ALL_GATHER, 17552736, 157974304},
        {ETK_ALGO_RING, ETK_COLL_REDUCE_SCATTER, 4001800, 4916812},
        {ETK_ALGO_RING, ETK_COLL_ALL_TO_ALL, 8960824, 93929512},
        {ETK_ALGO_DIRECT, ETK_COLL_ALL_REDUCE, 891748, 124676},
        {ETK_ALGO_DIRECT, ETK_COLL_ALL_GATHER, 2507568, 2507568},
        {ETK_ALGO_DIRECT, ETK_COLL_REDUCE_SCATTER, 571720, 78084},
        {ETK_ALGO_DIRECT, ETK_COLL_ALL_TO_ALL, 320068, 46632},
        {ETK_ALGO_HALVING_DOUBLING, ETK_COLL_ALL_REDUCE, 5175176, 5987400},
        {ETK_ALGO_DOUBLE_BINARY_TREE, ETK_COLL_ALL_REDUCE, 23230882, 50355634},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        etk_cluster c8 = switch1(8, rows[i].algo), c64 = switch1(64, rows[i].algo);
        uint64_t a = whole(&c8, rows[i].t, GiB), b = whole(&c64, rows[i].t, GiB);
        if (a != rows[i].n8 || b != rows[i].n64)
            fail_msg("%s %s: got %llu / %llu ns, ASTRA-sim measured %llu / %llu",
                     etk_algo_name(rows[i].algo), etk_coll_type_name(rows[i].t),
                     (unsigned long long)a, (unsigned long long)b,
                     (unsigned long long)rows[i].n8, (unsigned long long)rows[i].n64);
    }
}

/* Switch 1 MiB: ring all-reduce, halving-doubling up to 4,096 ranks, and C = 1. */
static void test_switch_mib(void **state)
{
    (void)state;
    etk_cluster c = switch1(8, ETK_ALGO_RING);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 111368);
    c = switch1(64, ETK_ALGO_RING);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 955120);
    static const uint32_t n[] = {512, 1024, 4096};
    static const uint64_t hd[] = {141352, 156416, 186528}, ring_c1[] = {1930057, 3854674, 15421780};
    for (int i = 0; i < 3; i++) {
        c = switch1(n[i], ETK_ALGO_HALVING_DOUBLING);
        assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), hd[i]);
        c = switch1(n[i], ETK_ALGO_RING);
        c.astra_splits = 1;
        assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), ring_c1[i]);
    }
    /* 16,384 ranks (ASTRA-sim could not finish it): the same halving-doubling form, 14 steps;
     * independently evaluated from the closed form of docs/astra-compat.md in Python */
    c = switch1(16384, ETK_ALGO_HALVING_DOUBLING);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 216640);
    /* hand check of C = 1, 4,096 ranks: c/N = 256 B, net = ⌊1872.5 + 0.596⌋ = 1873, red = 0:
     * 10 + 2·4095·(1873 + 10) = 15,421,780 */
    assert_int_equal(10 + 2 * 4095 * (1873 + 10), 15421780);
}

/* Two dimensions [Ring 8 @ 400 GB/s 500 ns, Switch 8 @ 50 GB/s 1000 ns], 64 ranks, 1 GiB. */
static void test_two_dims(void **state)
{
    (void)state;
    int topo[2] = {ETK_TOPO_RING, ETK_TOPO_SWITCH};
    uint32_t size[2] = {8, 8};
    double bw[2] = {400, 50}, lat[2] = {500, 1000};
    etk_cluster c = astra(2, topo, size, bw, lat, ETK_ALGO_RING);
    c.astra_local_bw_aware = true;
    /* localBWAware: phases RS dim0 (990,846 ns per chunk), AR dim1 (1,176,941), AG dim0
     * (550,455); four chunks pipelined: sum + 3·max = 6,249,065 */
    assert_int_equal(990846 + 1176941 + 550455 + 3 * 1176941, 6249065);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 6249065);
    c.astra_local_bw_aware = false;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 38415455);
    assert_int_equal(whole(&c, ETK_COLL_ALL_GATHER, GiB), 175059900);
    assert_int_equal(whole(&c, ETK_COLL_REDUCE_SCATTER, GiB), 4579380);
    assert_int_equal(whole(&c, ETK_COLL_ALL_TO_ALL, GiB), 72426950);
}

/* Sensitivity rows: C = 1, 16; active chunks 2, 4; endpoint delay 1000; local-mem-bw 100. */
static void test_sensitivity(void **state)
{
    (void)state;
    etk_cluster c = ring1(8);
    c.astra_splits = 1;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 36768756);
    c.astra_splits = 16;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 36875712);
    c = ring1(8);
    c.astra_active_chunks = 2;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 18395082);
    c.astra_active_chunks = 4;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 9197541);
    c = ring1(8);
    c.astra_endpoint_delay_ns = 1000;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 36849564);
    c = ring1(8);
    c.astra_local_mem_bw_GBps = 100;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 63214296);
}

/* Compute: roofline 1e12 FLOPs, 1e9 B at 900 TFLOP/s, 1600 GB/s = ⌊1e12/9e14 s⌋ = 1,111,111 ns;
 * ASTRA-sim measured it followed by a dependent 1 MiB all-reduce (64,440) as 1,175,551. */
static void test_compute(void **state)
{
    (void)state;
    etk_cluster c = ring1(8);
    c.astra_roofline = true;
    uint64_t comp = etk_hw_compute_ns(&c, 1000000000000ull, 1000000000ull);
    assert_int_equal(comp, 1111111);
    assert_int_equal(comp + whole(&c, ETK_COLL_ALL_REDUCE, MiB), 1175551);
    assert_int_equal(etk_hw_compute_ns(&c, 1000000, 0), 0); /* tensor_size 0 → 0 ns */
}

/* Chunk raised to N: 64 B all-reduce on 64 ranks: chunk 16 B < 64 → 64 B, messages of 1 B:
 * net = ⌊500 + 1/53.687⌋ = 500, red = 0 → 4·(10 + 126·510) = 257,080 ns. */
static void test_chunk_padding(void **state)
{
    (void)state;
    etk_cluster c = ring1(64);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, 64), 4 * (10 + 126 * 510));
}

/* A sub-group is one flat logical ring with a 10 ns hand-off: a DP group of 8 across the
 * Switch dimension of the two-dimensional network (stride 8) behaves like the 1-D Switch
 * 50 GB/s 1000 ns ring: 1 MiB all-reduce, c/N = 32768 B, net = ⌊2000 + 610.35⌋ = 2610,
 * red = 60 → 4·(10 + 14·2620 + 7·60) = 148,440 ns. A TP group of 8 on the Ring dimension:
 * net = ⌊500 + 76.29⌋ = 576 → 4·(10 + 14·586 + 420) = 34,536 ns. */
static void test_subgroup(void **state)
{
    (void)state;
    int topo[2] = {ETK_TOPO_RING, ETK_TOPO_SWITCH};
    uint32_t size[2] = {8, 8};
    double bw[2] = {400, 50}, lat[2] = {500, 1000};
    etk_cluster c = astra(2, topo, size, bw, lat, ETK_ALGO_RING);
    uint32_t dp[8], tp[8];
    for (uint32_t i = 0; i < 8; i++)
        dp[i] = 3 + 8 * i, tp[i] = 16 + i;
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, dp, 8), 148440);
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, tp, 8), 34536);
    /* 1-D equivalents agree (same formula, 10 ns hand-off = default endpoint delay) */
    int sw = ETK_TOPO_SWITCH;
    uint32_t n8 = 8;
    double b50 = 50, l1000 = 1000;
    etk_cluster s = astra(1, &sw, &n8, &b50, &l1000, ETK_ALGO_RING);
    assert_int_equal(whole(&s, ETK_COLL_ALL_REDUCE, MiB), 148440);
}

/* Sub-groups spanning both dimensions. {0..15}: every link's first differing dimension is the
 * Ring one (7→8 is (7,0)→(0,1): ring distance 1), so it is a 16-rank ring at 400 GB/s, 500 ns:
 * 1 MiB, m = 16384 B, net = ⌊500 + 38.15⌋ = 538, red = 3·⌊10.24⌋ = 30 →
 * 4·(10 + 30·548 + 15·30) = 67,600. {0, 8, 9, 1}: links alternate Switch (⌊2000 + 1220.7⌋ =
 * 3220 for m = 65536 B) and Ring (⌊500 + 152.6⌋ = 652); every chain of 2(N−1) = 6 links holds
 * three of each: 4·(10 + 3·652 + 3·3220 + 6·10 + 3·120) = 48,184. */
static void test_subgroup_mixed(void **state)
{
    (void)state;
    int topo[2] = {ETK_TOPO_RING, ETK_TOPO_SWITCH};
    uint32_t size[2] = {8, 8};
    double bw[2] = {400, 50}, lat[2] = {500, 1000};
    etk_cluster c = astra(2, topo, size, bw, lat, ETK_ALGO_RING);
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, NULL, 16), 67600);
    uint32_t g[4] = {0, 8, 9, 1};
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, g, 4), 48184);
    /* NULL ranks = 0..n-1: the whole cluster → ASTRA-sim's multi-dimensional path */
    c.astra_local_bw_aware = true;
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, GiB, NULL, 64), 6249065);
}

/* Point-to-point: one unchunked message on the first differing dimension and no endpoint
 * delay. ASTRA-sim (cases.tsv p2p1_sw8*): a 1 MiB send then a dependent 1 MiB receive on
 * Switch 8 @ 400 GB/s, 936.25 ns took 8,626 ns with endpoint-delay 10 and 1000 =
 * 2·⌊1872.5 + 2441.41⌋. Here: 1 MiB from rank 0 to rank 3 on Ring 8 @ 50 GB/s, 500 ns:
 * 3 hops → ⌊1500 + 19531.25⌋ = 21,031, whatever the endpoint delay. */
static void test_p2p(void **state)
{
    (void)state;
    etk_cluster c = ring1(8);
    assert_int_equal(etk_net_p2p_ns(&c, 0, 3, MiB), 21031);
    assert_int_equal(etk_net_p2p_ns(&c, 0, 7, MiB), 20031); /* wraps: 1 hop */
    assert_int_equal(etk_net_p2p_ns(&c, 5, 5, MiB), 0);
    etk_cluster sw = switch1(8, ETK_ALGO_RING);
    assert_int_equal(2 * etk_net_p2p_ns(&sw, 0, 4, MiB), 8626);
    c.astra_endpoint_delay_ns = 1000; /* regression: it used to add e (22,031) */
    assert_int_equal(etk_net_p2p_ns(&c, 0, 3, MiB), 21031);
}

/* A sub-group collective's chunk start costs a fixed 10 ns, like its hand-offs, whatever
 * endpoint-delay says. ASTRA-sim, pair_ar_sw8_e1000 (groups {0,1} {2,3} ... on Switch 8 @ 400
 * GB/s, 936.25 ns, endpoint-delay 1000): 18,508 ns. By hand: chunk 262,144 B, m = 131,072 B,
 * net = ⌊1872.5 + 305.18⌋ = 2177, red = 3·⌊81.92⌋ = 243 → 4·(10 + 2·(2177 + 10) + 243). */
static void test_subgroup_chunk_start(void **state)
{
    (void)state;
    etk_cluster c = switch1(8, ETK_ALGO_RING);
    c.astra_endpoint_delay_ns = 1000;
    uint32_t g[2] = {2, 3};
    assert_int_equal(4 * (10 + 2 * (2177 + 10) + 243), 18508);
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, g, 2), 18508);
    /* a whole-cluster collective keeps paying endpoint-delay at its chunk starts and
     * messages: m = 32,768 B, net = ⌊1872.5 + 76.29⌋ = 1948, red = 60 */
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 4 * (1000 + 14 * (1948 + 1000) + 7 * 60));
}

/* Sub-group rings with links of unequal length, more chunks than active chunks: each rank
 * starts its next chunk when it finishes its own. ASTRA-sim, grp_half8_Ring8 (group {0,1,2,3}
 * on Ring 8 @ 50 GB/s, 500 ns; the link 3 -> 0 is 3 hops): 49,000 ns. By hand: with four
 * 1-hop links it is the 4-rank ring all-reduce, 4·(10 + 6·(1720 + 10) + 3·120) = 43,000 (also
 * measured: mb_all_reduce_4_ring_RingTopo); the 3-hop link costs 1,000 ns more per crossing
 * and the critical path crosses it 6 times in the 4 chunks (chained chunk by chunk it would
 * be 8: 51,000, the old figure). grp_mixed8_2x4 (groups {0,2,3} and {1,4,5,6,7} on
 * [Ring 2 @ 400, Switch 4 @ 50]): 38,278 ns measured. */
static void test_subgroup_unequal_links(void **state)
{
    (void)state;
    etk_cluster c = ring1(8);
    uint32_t g[4] = {0, 1, 2, 3};
    assert_int_equal(4 * (10 + 6 * (1720 + 10) + 3 * 120) + 6 * 1000, 49000);
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, g, 4), 49000);
    int topo[2] = {ETK_TOPO_RING, ETK_TOPO_SWITCH};
    uint32_t size[2] = {2, 4};
    double bw[2] = {400, 50}, lat[2] = {500, 1000};
    etk_cluster m = astra(2, topo, size, bw, lat, ETK_ALGO_RING);
    uint32_t g2[5] = {1, 4, 5, 6, 7};
    assert_int_equal(etk_net_coll_ns(&m, ETK_COLL_ALL_REDUCE, MiB, g2, 5), 38278);
    /* one chunk (C = 1): no pipelining, the worst chain of 2(N−1) = 6 links, 3-hop link
     * twice: 10 + 6·(4·1720 + ... ) by hand: chunk 1 MiB, m = 262,144 B, net 1 hop =
     * ⌊500 + 4882.8⌋ = 5382, 3 hops 6382, red = 3·163 = 489:
     * 10 + 6·(5382 + 10) + 2·1000 + 3·489 */
    c.astra_splits = 1;
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, g, 4),
                     10 + 6 * (5382 + 10) + 2 * 1000 + 3 * 489);
    /* four chunks, four active: they run side by side, the time of one 262,144 B chunk
     * (m = 65,536 B: net 1720 per hop-1 link, red 120), the 3-hop link twice on the chain */
    c.astra_splits = 4;
    c.astra_active_chunks = 4;
    assert_int_equal(etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, MiB, g, 4),
                     10 + 6 * (1720 + 10) + 2 * 1000 + 3 * 120);
}

/* Multi-dimensional localBWAware all-reduce takes every phase's algorithm from the all-reduce
 * list. ASTRA-sim, 2d_4x4_ar_halvingDoubling_lbw ([Ring 4 @ 400 GB/s 500 ns, Switch 4 @ 50
 * GB/s 1000 ns], 1 MiB, all-reduce list halvingDoubling, RS/AG lists ring): 43,734 ns. By hand
 * (chunk 262,144 B): RS dim 0 halving-doubling 10 + (805 + 10) + (1152 + 10 + 120) = 2,107;
 * AR dim 1 on 65,536 B: 10 + 2620 + (2305 + 10 + 30) + (2305 + 10) + 2620 = 9,910; AG dim 0
 * halving-doubling 10 + (652 + 10) + (1305 + 10) = 1,987; pipelined: sum + 3·9,910. */
static void test_lbw_uses_allreduce_list(void **state)
{
    (void)state;
    int topo[2] = {ETK_TOPO_RING, ETK_TOPO_SWITCH};
    uint32_t size[2] = {4, 4};
    double bw[2] = {400, 50}, lat[2] = {500, 1000};
    etk_cluster c = astra(2, topo, size, bw, lat, ETK_ALGO_RING);
    c.astra_local_bw_aware = true;
    for (int i = 0; i < 2; i++)
        c.dims[i].algo[ETK_COLL_ALL_REDUCE] = ETK_ALGO_HALVING_DOUBLING;
    assert_int_equal(2107 + 9910 + 1987 + 3 * 9910, 43734);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 43734);
    /* the RS/AG lists do not matter (ASTRA-sim's result does not change with them) */
    for (int i = 0; i < 2; i++)
        c.dims[i].algo[ETK_COLL_REDUCE_SCATTER] = c.dims[i].algo[ETK_COLL_ALL_GATHER] =
            ETK_ALGO_DIRECT;
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 43734);
}

/* Double binary tree on a Ring topology: tree edges join ranks 1, 2, 4, ..., 32 apart, each
 * costing its ring distance in hops. ASTRA-sim, dbt_ring_64 (Ring 64 @ 50 GB/s, 500 ns, 1 MiB):
 * 492,196 ns. By hand: chunk 262,144 B, net = 500·hops + ⌊4882.8⌋, red = 489; per chunk the
 * 2k − 1 = 11 edges up 1..32 and down 32..2 (125 hops): 10 + 11·(4882 + 10 + 489) + 500·125;
 * four chunks plus one 1-hop leaf message (5382 + 10). */
static void test_dbt_ring(void **state)
{
    (void)state;
    int t = ETK_TOPO_RING;
    uint32_t n = 64;
    double bw = 50, lat = 500;
    etk_cluster c = astra(1, &t, &n, &bw, &lat, ETK_ALGO_DOUBLE_BINARY_TREE);
    assert_int_equal(4 * (10 + 11 * (4882 + 10 + 489) + 500 * 125) + 5392, 492196);
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, MiB), 492196);
}

/* ---------- loader ---------- */

static const char *write_tmp(const char *name, const char *text)
{
    static char path[8][512];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, 512, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const char *SYS =
    "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10, \"active-chunks-per-dimension\": 1,"
    " \"preferred-dataset-splits\": 4, \"all-reduce-implementation\": [\"ring\", \"ring\"],"
    " \"all-gather-implementation\": [\"ring\", \"ring\"],"
    " \"reduce-scatter-implementation\": [\"ring\", \"ring\"],"
    " \"all-to-all-implementation\": [\"ring\", \"ring\"],"
    " \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600,"
    " \"peak-perf\": 900, \"roofline-enabled\": 1, \"boost-mode\": 0}";

static void test_load_astra(void **state)
{
    (void)state;
    const char *net = write_tmp("net.yml", "topology: [ Ring, Switch ]\nnpus_count: [ 8, 8 ]\n"
                                           "bandwidth: [ 400.0, 50.0 ]\nlatency: [ 500.0, 1000.0 ]\n");
    const char *sys = write_tmp("sys.json", SYS);
    etk_cluster c;
    etk_error err = {0};
    assert_int_equal(etk_cluster_load_astra(net, sys, &c, &err), 0);
    assert_true(c.astra_compat && c.astra_local_bw_aware && c.astra_roofline);
    assert_int_equal(c.n_npus, 64);
    /* units: 400 GB/s in ASTRA-sim is 400·2^30 B/s */
    assert_true(c.dims[0].bw_Bps == 400.0 * 1073741824.0);
    assert_true(c.gpu.hbm_bw_Bps == 1600e9);
    assert_true(c.gpu.peak_flops[ETK_PREC_BF16] == 900e12);
    assert_non_null(strstr(c.warnings, "boost-mode"));
    assert_int_equal(whole(&c, ETK_COLL_ALL_REDUCE, GiB), 6249065);
}

static void expect_astra_error(const char *net_text, const char *sys_text, const char *want)
{
    const char *net = write_tmp("bad.yml", net_text);
    const char *sys = write_tmp("bad.json", sys_text);
    etk_cluster c;
    etk_error err = {0};
    int rc = etk_cluster_load_astra(net, sys, &c, &err);
    if (rc >= 0 || !strstr(err.msg, want))
        fail_msg("expected an error containing '%s', got rc %d: %s", want, rc, err.msg);
}

static void test_astra_errors(void **state)
{
    (void)state;
    const char *ok_net = "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n";
    const char *ok_sys = "{\"preferred-dataset-splits\": 4}";
    expect_astra_error("topology: [ Torus ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n",
                       ok_sys, "topology[0]: unknown topology 'Torus'");
    expect_astra_error("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 0 ]\nlatency: [ 5 ]\n",
                       ok_sys, "bandwidth[0]: expected a positive GB/s");
    expect_astra_error("topology: [ Ring, Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 5 ]\nlatency: [ 5 ]\n",
                       ok_sys, "one entry per dimension");
    expect_astra_error("topology: [ Ring ]\nnpus_count: [ 8 ]\nlatency: [ 5 ]\n", ok_sys,
                       "missing 'bandwidth'");
    expect_astra_error("topology: [ Ring\nnpus_count: [ 8 ]\n", ok_sys, "YAML syntax error");
    expect_astra_error(ok_net, "{\"endpoint-delay\": 10}", "missing \"preferred-dataset-splits\"");
    expect_astra_error(ok_net, "{\"preferred-dataset-splits\": 0}",
                       "\"preferred-dataset-splits\": expected a whole number >= 1");
    expect_astra_error(ok_net, "{\"preferred-dataset-splits\": 4, \"all-reduce-implementation\": [\"zigzag\"]}",
                       "unknown algorithm 'zigzag'");
    expect_astra_error(ok_net, "{\"preferred-dataset-splits\": 4, \"all-reduce-implementation\": [\"ring\", \"ring\"]}",
                       "expected one entry per network dimension (1), got 2");
    expect_astra_error(ok_net, "{\"preferred-dataset-splits\": 4, \"local-mem-bw\": \"fast\"}",
                       "\"local-mem-bw\": expected a number");
    expect_astra_error(ok_net, "{\"preferred-dataset-splits\": 4,", "malformed JSON");
    expect_astra_error(ok_net, "{\"preferred-dataset-splits\": 4, \"collective-optimization\": \"smart\"}",
                       "expected \"baseline\" or \"localBWAware\"");
    etk_cluster c;
    etk_error err = {0};
    /* halving-doubling on 6 NPUs is accepted with a warning that ASTRA-sim itself hangs there,
     * and what etkit does instead */
    const char *n6 = write_tmp("n6.yml", "topology: [ Switch ]\nnpus_count: [ 6 ]\n"
                                         "bandwidth: [ 50 ]\nlatency: [ 500 ]\n");
    assert_int_equal(etk_cluster_load_astra(
                         n6,
                         write_tmp("s6.json", "{\"preferred-dataset-splits\": 4, "
                                              "\"all-reduce-implementation\": [\"halvingDoubling\"]}"),
                         &c, &err),
                     0);
    assert_non_null(strstr(c.warnings, "ASTRA-sim hangs on halvingDoubling with 6 NPUs on "
                                       "dimension 0 (not a power of two)"));
    assert_null(strstr(c.warnings, "doubleBinaryTree"));
    /* double binary tree there: ASTRA-sim crashes */
    assert_int_equal(etk_cluster_load_astra(
                         n6,
                         write_tmp("s6t.json", "{\"preferred-dataset-splits\": 4, "
                                               "\"all-reduce-implementation\": [\"doubleBinaryTree\"]}"),
                         &c, &err),
                     0);
    assert_non_null(strstr(c.warnings, "ASTRA-sim crashes (segmentation fault) on doubleBinaryTree "
                                       "with 6 NPUs on dimension 0"));
    assert_null(strstr(c.warnings, "halvingDoubling"));
    /* a power of two, or ring on 6: no such warning */
    assert_int_equal(etk_cluster_load_astra(n6, write_tmp("s6r.json", ok_sys), &c, &err), 0);
    assert_null(strstr(c.warnings, "ASTRA-sim"));
    assert_int_equal(etk_cluster_load_astra(
                         write_tmp("n8.yml", "topology: [ Switch ]\nnpus_count: [ 8 ]\n"
                                             "bandwidth: [ 50 ]\nlatency: [ 500 ]\n"),
                         write_tmp("s8.json", "{\"preferred-dataset-splits\": 4, "
                                              "\"all-reduce-implementation\": [\"halvingDoubling\"]}"),
                         &c, &err),
                     0);
    assert_null(strstr(c.warnings, "ASTRA-sim"));
    assert_true(etk_cluster_load_astra("/nonexistent/net.yml", write_tmp("s.json", ok_sys), &c,
                                       &err) < 0);
    assert_non_null(strstr(err.msg, "/nonexistent/net.yml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example), cmocka_unit_test(test_ring_table),
        cmocka_unit_test(test_switch_table),   cmocka_unit_test(test_switch_mib),
        cmocka_unit_test(test_two_dims),       cmocka_unit_test(test_sensitivity),
        cmocka_unit_test(test_compute),        cmocka_unit_test(test_chunk_padding),
        cmocka_unit_test(test_subgroup),       cmocka_unit_test(test_subgroup_mixed),
        cmocka_unit_test(test_p2p),
        cmocka_unit_test(test_subgroup_chunk_start), cmocka_unit_test(test_subgroup_unequal_links),
        cmocka_unit_test(test_lbw_uses_allreduce_list), cmocka_unit_test(test_dbt_ring),
        cmocka_unit_test(test_load_astra),     cmocka_unit_test(test_astra_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
