/* bench_net.c — speed of the network model: one 1 MiB halving-doubling all-reduce on 4,096
 * and 16,384 ranks (set-up: cluster, group, placement; then the cost), in ASTRA-sim
 * compatibility mode (ASTRA-sim itself needs 45–120 s and 5.6 GB at 4,096 ranks and does not
 * finish 16,384) and in etkit's physical mode on dgx-h100 nodes; then the rate of cost queries
 * on a placed group (what sim/ pays per collective). Prints one line per figure. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "etkit/net.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long max_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* One set-up + cost; returns seconds and the result. */
static double one_run(uint32_t n, bool compat, uint64_t *result)
{
    double t0 = now();
    etk_cluster c;
    etk_error err = {0};
    if (compat) {
        etk_cluster_init(&c);
        c.astra_compat = true;
        c.n_dims = 1;
        c.dims[0].size = n;
        c.dims[0].topo = ETK_TOPO_SWITCH;
        c.dims[0].bw_Bps = 400.0 * 1073741824.0;
        c.dims[0].latency_ns = 936.25;
        c.dims[0].algo[ETK_COLL_ALL_REDUCE] = ETK_ALGO_HALVING_DOUBLING;
        c.n_npus = n;
        c.gpu.peak_flops[ETK_PREC_BF16] = 1e15;
        c.gpu.hbm_bw_Bps = 1.6e12;
    } else if (etk_cluster_preset("dgx-h100", n / 8, &c, &err)) {
        fprintf(stderr, "bench_net: %s\n", err.msg);
        exit(1);
    } else {
        for (uint32_t d = 0; d < c.n_dims; d++)
            c.dims[d].algo[ETK_COLL_ALL_REDUCE] = ETK_ALGO_HALVING_DOUBLING;
    }
    uint32_t *ranks = malloc(sizeof *ranks * n);
    for (uint32_t i = 0; i < n; i++)
        ranks[i] = i;
    *result = etk_net_coll_ns(&c, ETK_COLL_ALL_REDUCE, 1048576, ranks, n);
    double t1 = now();
    free(ranks);
    return t1 - t0;
}

/* Five runs (the machine is shared: the median resists other users' bursts). */
static void one(const char *mode, uint32_t n, bool compat)
{
    double t[5];
    uint64_t ns = 0;
    for (int i = 0; i < 5; i++) {
        t[i] = one_run(n, compat, &ns);
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    }
    printf("hd_allreduce_1MiB mode=%s ranks=%u result_ns=%llu setup_plus_cost_us min=%.1f "
           "median=%.1f max=%.1f max_rss_MB=%.1f\n",
           mode, n, (unsigned long long)ns, t[0] * 1e6, t[2] * 1e6, t[4] * 1e6,
           max_rss_kb() / 1024.0);
}

static void rate(void)
{
    etk_cluster c;
    etk_error err = {0};
    if (etk_cluster_preset("dgx-h100", 2048, &c, &err))
        exit(1);
    uint32_t *ranks = malloc(sizeof *ranks * 2048);
    for (uint32_t i = 0; i < 2048; i++)
        ranks[i] = 3 + 8 * i; /* a DP group across all nodes */
    etk_net_place p;
    etk_net_place_group(&c, ranks, 2048, &p, &err);
    free(ranks);
    const etk_coll_type types[4] = {ETK_COLL_ALL_REDUCE, ETK_COLL_ALL_GATHER,
                                    ETK_COLL_REDUCE_SCATTER, ETK_COLL_ALL_TO_ALL};
    uint64_t sink = 0;
    long iters = 4000000;
    double t0 = now();
    for (long i = 0; i < iters; i++)
        sink += etk_net_place_coll_ns(&c, &p, types[i & 3], 1048576 + (uint64_t)(i & 1023));
    double t1 = now();
    printf("placed_cost_queries group=2048-rank-DP calls_per_s=%.3g ns_per_call=%.1f (sink %llu)\n",
           iters / (t1 - t0), (t1 - t0) * 1e9 / iters, (unsigned long long)(sink & 1));
}

int main(void)
{
    one("astra-compat", 4096, true);
    one("astra-compat", 16384, true);
    one("physical-dgx-h100", 4096, false);
    one("physical-dgx-h100", 16384, false);
    rate();
    return 0;
}
