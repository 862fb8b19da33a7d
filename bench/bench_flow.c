/* bench_flow.c — speed of the flow network model (sim/flow.c on the net/topo.c fabric): one
 * 1 GiB all-reduce over 16,384 GPUs of the Llama 3 fabric (8 ring channels: 131,072 flows),
 * 3,072 concurrent cross-pod sends through a 1:7 pod uplink, a 512-rank all-to-all (261,632
 * flows), and staggered arrivals (every send starting at its own time, so each arrival and
 * departure recomputes its component). Prints wall time, flows, rate recomputations (work)
 * and peak memory per case. */
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

static void run(const char *what, const etk_cluster *c, etk_flow_op *ops, uint32_t n)
{
    etk_error err = {0};
    double t0 = now();
    if (etk_net_flow_run(c, ops, n, &err)) {
        fprintf(stderr, "bench_flow: %s\n", err.msg);
        exit(1);
    }
    double dt = now() - t0, fin = 0;
    for (uint32_t i = 0; i < n; i++)
        if (ops[i].finish_ns > fin)
            fin = ops[i].finish_ns;
    printf("%-52s %9.3f s  simulated %12.0f ns  peak RSS %ld MB\n", what, dt, fin,
           max_rss_kb() / 1024);
}

int main(void)
{
    etk_cluster c;
    etk_error err = {0};
    if (etk_cluster_preset("llama3", 2048, &c, &err)) {
        fprintf(stderr, "bench_flow: %s\n", err.msg);
        return 1;
    }
    etk_flow_op ar = {.type = ETK_COLL_ALL_REDUCE, .bytes = 1ull << 30, .n_ranks = 16384};
    run("all-reduce 1 GiB, 16,384 GPUs (131,072 flows)", &c, &ar, 1);

    if (etk_cluster_preset("llama3", 768, &c, &err))
        return 1;
    uint32_t n = 3072;
    etk_flow_op *ops = calloc(n, sizeof *ops);
    uint32_t *pr = malloc(sizeof *pr * 2 * n);
    for (uint32_t g = 0; g < n; g++) {
        pr[2 * g] = g;
        pr[2 * g + 1] = g + n;
        ops[g] = (etk_flow_op){.type = -1, .bytes = 47000000, .ranks = pr + 2 * g, .n_ranks = 2};
    }
    run("3,072 cross-pod sends at once (1:7 uplink)", &c, ops, n);
    for (uint32_t g = 0; g < n; g++)
        ops[g].start_ns = (uint64_t)g * 1000; /* one arrival every microsecond */
    run("3,072 cross-pod sends, staggered arrivals", &c, ops, n);
    free(ops);
    free(pr);

    if (etk_cluster_preset("dgx-h100-superpod", 64, &c, &err))
        return 1;
    etk_flow_op a2a = {.type = ETK_COLL_ALL_TO_ALL, .bytes = 1ull << 30, .n_ranks = 512};
    run("all-to-all 1 GiB, 512 GPUs (261,632 flows)", &c, &a2a, 1);
    return 0;
}
