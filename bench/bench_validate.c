/* bench_validate.c — throughput of reading + validating a workload, and of etk_info_trace.
 *
 * Builds a synthetic workload (R ranks x N nodes: COMP nodes in chains with a few long-range
 * deps, an all-reduce on all ranks and one on a pair group every 64 nodes, a send/recv exchange
 * with the partner rank every 256 nodes), writes it to a temporary directory, then times etk_workload_open,
 * etk_validate_workload and etk_info_trace over it (best of 3) and reports MB/s of trace
 * bytes per CPU second of this thread (the machines are shared, so wall time is noisy). Also times the real Chakra CNN trace when ../shared is present.
 * With a third argument "mem" it only validates the workload in memory (no files), for rank
 * counts where writing one file per rank would measure the file system.
 * usage: bench_validate [ranks] [nodes_per_rank] [mem]   (default 8 x 250000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "etkit/et.h"
#include "etkit/validate.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the build machine is shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const etk_error *e)
{
    fprintf(stderr, "bench_validate: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

static etk_workload *build(uint32_t R, uint32_t N)
{
    etk_workload *w = calloc(1, sizeof *w);
    w->n_ranks = R;
    w->ranks = calloc(R, sizeof *w->ranks);
    w->groups = etk_groups_new();
    for (uint32_t g = 0; g + 1 < R; g += 2) {
        uint32_t pair[2] = {g, g + 1};
        char id[16];
        snprintf(id, sizeof id, "%u", g / 2 + 1);
        etk_groups_add(w->groups, id, pair, 2);
    }
    for (uint32_t r = 0; r < R; r++) {
        etk_trace *t = w->ranks[r] = etk_trace_new("0.0.4");
        char pg[16];
        snprintf(pg, sizeof pg, "%u", r / 2 + 1);
        uint32_t k_p2p = 0;
        for (uint32_t i = 0; i < N; i++) {
            uint64_t deps[2];
            uint32_t nd = 0;
            if (i)
                deps[nd++] = i; /* previous node (ids are 1-based) */
            if (i >= 100 && i % 7 == 0)
                deps[nd++] = i - 99;
            etk_attr a[4];
            uint32_t na = 0;
            etk_node n = {.id = i + 1, .name = "op", .data_deps = deps, .n_data_deps = nd};
            if (i % 256 == 128 && R % 2 == 0) {
                /* exchange with the partner rank r^1: the lower one sends (tag 2j) then
                 * receives (tag 2j+1), the higher one receives then sends */
                uint32_t k = k_p2p++;
                bool send = (k % 2 == 0) == (r % 2 == 0);
                n.type = send ? ETK_NODE_SEND : ETK_NODE_RECV;
                a[na++] = etk_attr_i32(send ? "comm_dst" : "comm_src", (int32_t)(r ^ 1));
                a[na++] = etk_attr_i32("comm_tag", (int32_t)k);
                a[na++] = etk_attr_i64("comm_size", 1 << 20);
                n.name = send ? "send" : "recv";
            } else if (i % 64 == 32) {
                n.type = ETK_NODE_COLL;
                a[na++] = etk_attr_i64("comm_type", ETK_COLL_ALL_REDUCE);
                a[na++] = etk_attr_i64("comm_size", 1 << 24);
                if ((i / 64) % 2 && R > 1 && R % 2 == 0)
                    a[na++] = etk_attr_str("pg_name", pg);
                n.name = "allreduce";
            } else {
                n.type = ETK_NODE_COMP;
                a[na++] = etk_attr_i64("num_ops", 1000000 + i);
                a[na++] = etk_attr_u64("tensor_size", 4096);
                a[na++] = etk_attr_bool("is_cpu_op", false);
            }
            n.attr = a;
            n.n_attr = na;
            etk_trace_add(t, &n);
        }
    }
    return w;
}

static void timed(const char *spec, uint64_t *bytes, double *t_read, double *t_val, double *t_info,
                  size_t *n_err)
{
    *t_read = *t_val = *t_info = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        etk_error err = {0};
        etk_read_opts o = {.quiet = true};
        etk_workload *w;
        double t0 = now();
        if (etk_workload_open(spec, NULL, &o, &w, &err))
            die(spec, &err);
        double t1 = now();
        etk_findings *f = etk_findings_new();
        if (etk_validate_workload(w, NULL, f, &err))
            die("validate", &err);
        double t2 = now();
        for (uint32_t r = 0; r < w->n_ranks; r++) {
            etk_trace_info in;
            if (etk_info_trace(w->ranks[r], &in, &err))
                die("info", &err);
            etk_info_free(&in);
        }
        double t3 = now();
        *bytes = 0;
        for (uint32_t r = 0; r < w->n_ranks; r++)
            *bytes += w->ranks[r]->file_bytes;
        *n_err = f->n_errors;
        etk_findings_free(f);
        etk_workload_free(w);
        if (t1 - t0 < *t_read)
            *t_read = t1 - t0;
        if (t2 - t1 < *t_val)
            *t_val = t2 - t1;
        if (t3 - t2 < *t_info)
            *t_info = t3 - t2;
    }
}

static void report(const char *what, uint64_t bytes, double tr, double tv, double ti, size_t n_err)
{
    double mb = (double)bytes / 1e6;
    printf("%s: %.1f MB; read %.3f s (%.0f MB/s); validate %.3f s (%.0f MB/s); "
           "read+validate %.0f MB/s; info %.3f s (%.0f MB/s); %zu errors\n",
           what, mb, tr, mb / tr, tv, mb / tv, mb / (tr + tv), ti, mb / ti, n_err);
}

int main(int argc, char **argv)
{
    uint32_t R = argc > 1 ? (uint32_t)atoi(argv[1]) : 8;
    uint32_t N = argc > 2 ? (uint32_t)atoi(argv[2]) : 250000;
    char dir[] = "/tmp/etk_bench_validate_XXXXXX";
    if (!mkdtemp(dir))
        die("mkdtemp", NULL);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/w", dir);
    etk_workload *w = build(R, N);
    etk_error err = {0};
    if (argc > 3 && !strcmp(argv[3], "mem")) {
        double best = 1e30;
        size_t ne = 0;
        for (int rep = 0; rep < 3; rep++) {
            etk_findings *f = etk_findings_new();
            double t0 = now();
            if (etk_validate_workload(w, NULL, f, &err))
                die("validate", &err);
            double t1 = now();
            ne = f->n_errors;
            etk_findings_free(f);
            if (t1 - t0 < best)
                best = t1 - t0;
        }
        printf("in memory %u ranks x %u nodes: validate %.3f s (%.0f ns per node); %zu errors\n", R,
               N, best, best * 1e9 / ((double)R * N), ne);
        etk_workload_free(w);
        rmdir(dir);
        return 0;
    }
    if (etk_workload_write(w, prefix, &err))
        die("write", &err);
    etk_workload_free(w);
    uint64_t bytes;
    double tr, tv, ti;
    size_t ne;
    timed(prefix, &bytes, &tr, &tv, &ti, &ne);
    char what[256];
    snprintf(what, sizeof what, "synthetic %u ranks x %u nodes", R, N);
    report(what, bytes, tr, tv, ti, ne);
    for (uint32_t r = 0; r < R; r++) {
        char p[160];
        snprintf(p, sizeof p, "%s.%u.et", prefix, r);
        unlink(p);
    }
    snprintf(what, sizeof what, "%s.json", prefix);
    unlink(what);
    rmdir(dir);
#ifdef ETK_SHARED_DIR
    char cnn[1024];
    snprintf(cnn, sizeof cnn, "%s/data/chakra/converted_cnn_ddp.0.et", ETK_SHARED_DIR);
    struct stat st;
    if (stat(cnn, &st) == 0) {
        timed(cnn, &bytes, &tr, &tv, &ti, &ne);
        report("chakra converted_cnn_ddp.0.et", bytes, tr, tv, ti, ne);
    }
#endif
    return 0;
}
