/* bench_io.c — throughput and peak memory of the trace I/O layer (reader, writer, index,
 * dependency check) on one core. Run by bench/io.sh; figures go to bench/RESULTS.md.
 *
 * Workloads: the real Chakra trace ../shared/data/chakra/converted_cnn_ddp.0.et (2.98 MB,
 * 3664 nodes, repeated to get stable timings) and a synthetic trace of N nodes (default one
 * million) built here: COMP nodes with num_ops/tensor_size/is_cpu_op and 1-2 data deps, one
 * COLL node in 20 with comm_type/comm_size/pg_name, names like PyTorch's.
 *
 * Phases, each in its own loop, timed as the best of R repetitions, both wall clock
 * (CLOCK_MONOTONIC) and CPU time of the process (CLOCK_PROCESS_CPUTIME_ID; the build machine
 * is shared, so CPU time is the fairer one-core figure; it leaves out time blocked on fsync):
 *   read      etk_trace_read of the file (page cache warm)
 *   check     etk_trace_index + etk_validate_trace when etkit/validate.h is present (branch
 *             io-tools), else a dependency check: every data/ctrl dep looked up in the index
 *   encode    etk_trace_encode into memory
 *   write     etk_trace_write to a file (tmp + fsync + rename)
 * MB/s = trace bytes / time (1 MB = 10^6 bytes). Peak memory: each read is also run in a fresh
 * child process (fork + exec of this binary with --child-read FILE) that reports the growth of
 * its ru_maxrss across the read (+ index + check); printed as a multiple of the file size.
 *
 * usage: bench_io [--nodes N] [--reps R] [--tmp DIR] [SHARED_DIR]
 *        bench_io --profile read|check|encode|write FILE [--reps R]   (one phase in a loop, for perf) */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etkit/et.h"
#if defined(__has_include)
#if __has_include("etkit/validate.h")
#include "etkit/validate.h"
#define HAVE_VALIDATE 1
#endif
#endif
#ifndef HAVE_VALIDATE
#define HAVE_VALIDATE 0
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this process: what one core spent, less sensitive than wall time to other
 * processes on a shared machine (both are printed). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const etk_error *err)
{
    fprintf(stderr, "bench_io: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

/* index + validation (or the dependency check); returns a number so it is not optimised away */
static uint64_t check(etk_trace *t)
{
    etk_error err = {0};
#if HAVE_VALIDATE
    etk_findings *f = etk_findings_new();
    if (!f || etk_validate_trace(t, 0, NULL, f, &err))
        die("validate", &err);
    uint64_t r = f->n;
    etk_findings_free(f);
    return r;
#else
    if (etk_trace_index(t, &err))
        die("index", &err);
    uint64_t missing = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        for (uint32_t k = 0; k < n->n_data_deps; k++)
            missing += etk_trace_find_index(t, n->data_deps[k]) < 0;
        for (uint32_t k = 0; k < n->n_ctrl_deps; k++)
            missing += etk_trace_find_index(t, n->ctrl_deps[k]) < 0;
    }
    return missing;
#endif
}

static long maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Child mode: read (+ check) one file in a fresh process, print the ru_maxrss growth in KiB
 * and the wall and CPU seconds of that first (cold allocator, warm page cache) read + check. */
static int child_read(const char *path)
{
    long before = maxrss_kib();
    etk_read_opts o = {.quiet = true};
    etk_trace *t;
    etk_error err = {0};
    double w0 = now_s(), c0 = cpu_s();
    if (etk_trace_read(path, &o, &t, &err))
        die("read", &err);
    check(t);
    double w1 = now_s(), c1 = cpu_s();
    long after = maxrss_kib();
    printf("%ld %.6f %.6f\n", after - before, w1 - w0, c1 - c0);
    etk_trace_free(t);
    return 0;
}

/* One phase R times on FILE, nothing else, so `perf record` shows where that phase's time goes. */
static int profile_phase(const char *phase, const char *path, int reps)
{
    etk_read_opts o = {.quiet = true};
    etk_error err = {0};
    etk_trace *t = NULL;
    if (strcmp(phase, "read") && etk_trace_read(path, &o, &t, &err))
        die("read", &err);
    double t0 = now_s();
    for (int i = 0; i < reps; i++) {
        if (!strcmp(phase, "read")) {
            if (etk_trace_read(path, &o, &t, &err))
                die("read", &err);
            etk_trace_free(t);
            t = NULL;
        } else if (!strcmp(phase, "check")) {
            etk_trace_free(t);
            if (etk_trace_read(path, &o, &t, &err)) /* a fresh index each time */
                die("read", &err);
            check(t);
        } else if (!strcmp(phase, "encode")) {
            uint8_t *b;
            size_t n;
            if (etk_trace_encode(t, &b, &n, &err))
                die("encode", &err);
            free(b);
        } else if (!strcmp(phase, "write")) {
            if (etk_trace_write(t, "/tmp/bench_io_profile.et", &err))
                die("write", &err);
        } else {
            fprintf(stderr, "bench_io: unknown phase '%s' (read, check, encode, write)\n", phase);
            return 2;
        }
    }
    printf("%s x%d: %.3f s\n", phase, reps, now_s() - t0);
    etk_trace_free(t);
    unlink("/tmp/bench_io_profile.et");
    return 0;
}

static char self_path[4096];

static long peak_read_kib(const char *path, double *cold_w, double *cold_c)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --child-read '%s'", self_path, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        die("popen", NULL);
    long kib = -1;
    if (fscanf(p, "%ld %lf %lf", &kib, cold_w, cold_c) != 3)
        kib = -1;
    pclose(p);
    return kib;
}

typedef struct row {
    double read_s, check_s, encode_s, write_s;      /* wall, best of R */
    double read_c, check_c, encode_c, write_c;      /* CPU, best of R */
    uint64_t bytes, nodes, found;
    long peak_kib;
    double cold_s, cold_c; /* read + check in a fresh process */
} row;

static void best(double *w, double *c, double w0, double c0)
{
    double dw = now_s() - w0, dc = cpu_s() - c0;
    if (dw < *w)
        *w = dw;
    if (dc < *c)
        *c = dc;
}

/* Each phase in its own loop (a phase's allocations do not disturb the next one's timing). */
static row measure(const char *path, const char *tmpdir, int reps)
{
    row r = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 0, 0, 0, 0, 0, 0};
    etk_error err = {0};
    etk_read_opts o = {.quiet = true};
    char out[4200];
    snprintf(out, sizeof out, "%s/bench_io_out.et", tmpdir);
    etk_trace *t;
    for (int i = 0; i < reps; i++) { /* read */
        double w0 = now_s(), c0 = cpu_s();
        if (etk_trace_read(path, &o, &t, &err))
            die("read", &err);
        best(&r.read_s, &r.read_c, w0, c0);
        etk_trace_free(t);
    }
    for (int i = 0; i < reps; i++) { /* index + check on a fresh trace each time */
        if (etk_trace_read(path, &o, &t, &err))
            die("read", &err);
        double w0 = now_s(), c0 = cpu_s();
        r.found = check(t);
        best(&r.check_s, &r.check_c, w0, c0);
        etk_trace_free(t);
    }
    if (etk_trace_read(path, &o, &t, &err))
        die("read", &err);
    r.bytes = t->file_bytes;
    r.nodes = t->n_nodes;
    for (int i = 0; i < reps; i++) { /* encode into memory */
        uint8_t *buf;
        size_t len;
        double w0 = now_s(), c0 = cpu_s();
        if (etk_trace_encode(t, &buf, &len, &err))
            die("encode", &err);
        best(&r.encode_s, &r.encode_c, w0, c0);
        free(buf);
    }
    for (int i = 0; i < reps; i++) { /* write a file: tmp, fsync, rename */
        double w0 = now_s(), c0 = cpu_s();
        if (etk_trace_write(t, out, &err))
            die("write", &err);
        best(&r.write_s, &r.write_c, w0, c0);
    }
    etk_trace_free(t);
    unlink(out);
    r.peak_kib = peak_read_kib(path, &r.cold_s, &r.cold_c);
    return r;
}

static void print_row(const char *name, const row *r)
{
    double mb = (double)r->bytes / 1e6;
    double peak_x = r->peak_kib >= 0 ? (double)r->peak_kib * 1024.0 / (double)r->bytes : -1;
    const char *chk = HAVE_VALIDATE ? "validate" : "depcheck";
    printf("%s: %.2f MB, %" PRIu64 " nodes, peak memory of read+%s %.1f MB = %.2fx the file\n", name, mb, r->nodes,
           chk, (double)r->peak_kib * 1024 / 1e6, peak_x);
    printf("  %-6s MB/s   read %7.1f   read+%s %7.1f   encode %7.1f   write %7.1f\n", "wall", mb / r->read_s, chk,
           mb / (r->read_s + r->check_s), mb / r->encode_s, mb / r->write_s);
    printf("  %-6s MB/s   read %7.1f   read+%s %7.1f   encode %7.1f   write %7.1f\n", "cpu", mb / r->read_c, chk,
           mb / (r->read_c + r->check_c), mb / r->encode_c, mb / r->write_c);
    printf("  fresh process, read+%s once: %.1f MB/s wall, %.1f MB/s cpu\n", chk, mb / r->cold_s, mb / r->cold_c);
    double rd = mb / (r->read_c + r->check_c), wr = mb / r->write_c;
    printf("  targets (cpu): read+%s >= 200 MB/s %s, write >= 300 MB/s %s, peak <= 3x %s\n", chk,
           rd >= 200 ? "ok" : "MISSED", wr >= 300 ? "ok" : "MISSED", peak_x <= 3.0 ? "ok" : "MISSED");
}

/* Deterministic xorshift so the synthetic trace is the same on every run. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void build_synthetic(const char *path, size_t n_nodes)
{
    static const char *ops[] = {"aten::mm", "aten::addmm", "aten::add_", "aten::gelu", "aten::layer_norm",
                                "aten::_softmax", "aten::bmm", "aten::mul", "aten::copy_", "aten::view"};
    etk_error err = {0};
    etk_writer *w;
    if (etk_writer_open(path, "0.0.4", NULL, 0, &w, &err))
        die("writer_open", &err);
    char name[64];
    uint64_t deps[2];
    for (size_t i = 0; i < n_nodes; i++) {
        etk_node n = {.id = i + 1, .name = name};
        uint32_t nd = i == 0 ? 0 : i == 1 ? 1 : 1 + (uint32_t)(rnd() & 1);
        for (uint32_t k = 0; k < nd; k++)
            deps[k] = i - (rnd() % (i < 8 ? i : 8)); /* one of the 8 previous ids */
        n.data_deps = deps;
        n.n_data_deps = nd;
        etk_attr a[3];
        if (i % 20 == 19) {
            snprintf(name, sizeof name, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(%zu)", i);
            n.type = ETK_NODE_COLL;
            a[0] = etk_attr_i64("comm_type", ETK_COLL_ALL_REDUCE);
            a[1] = etk_attr_i64("comm_size", (int64_t)(1 + rnd() % 64) << 20);
            a[2] = etk_attr_str("pg_name", (i / 20) % 2 ? "1" : "2");
        } else {
            snprintf(name, sizeof name, "%s(%zu)", ops[rnd() % 10], i);
            n.type = ETK_NODE_COMP;
            uint64_t m = 1024 + rnd() % 8192;
            a[0] = etk_attr_i64("num_ops", (int64_t)(2 * m * m * 4096));
            a[1] = etk_attr_u64("tensor_size", 2 * (m * 4096 * 2 + m * m));
            a[2] = etk_attr_bool("is_cpu_op", false);
        }
        n.duration_micros = 1 + rnd() % 5000;
        n.attr = a;
        n.n_attr = 3;
        if (etk_writer_put(w, &n, &err))
            die("writer_put", &err);
    }
    if (etk_writer_close(w, &err))
        die("writer_close", &err);
}

int main(int argc, char **argv)
{
    size_t n_nodes = 1000000;
    int reps = 5;
    const char *shared = ETK_SHARED_DIR;
    const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const char *prof = NULL, *prof_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--profile") && i + 2 < argc) {
            prof = argv[++i];
            prof_file = argv[++i];
        } else if (!strcmp(argv[i], "--child-read") && i + 1 < argc)
            return child_read(argv[i + 1]);
        else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            n_nodes = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tmp") && i + 1 < argc)
            tmpdir = argv[++i];
        else if (argv[i][0] != '-')
            shared = argv[i];
        else {
            fprintf(stderr, "usage: bench_io [--nodes N] [--reps R] [--tmp DIR] [SHARED_DIR]\n");
            return 2;
        }
    }
    if (prof)
        return profile_phase(prof, prof_file, reps);
    ssize_t sl = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (sl <= 0)
        die("readlink /proc/self/exe", NULL);
    self_path[sl] = 0;
    printf("bench_io: best of %d, one thread, check = %s\n", reps,
           HAVE_VALIDATE ? "etk_trace_index + etk_validate_trace" : "etk_trace_index + lookup of every dep");

    char cnn[4096];
    snprintf(cnn, sizeof cnn, "%s/data/chakra/converted_cnn_ddp.0.et", shared);
    row r = measure(cnn, tmpdir, reps * 10);
    print_row("converted_cnn_ddp.0.et", &r);

    char syn[4200];
    snprintf(syn, sizeof syn, "%s/bench_io_synthetic.et", tmpdir);
    double t0 = now_s();
    build_synthetic(syn, n_nodes);
    double t1 = now_s();
    struct stat st;
    stat(syn, &st);
    printf("synthetic: %zu nodes, %.2f MB, built and written in %.2f s\n", n_nodes, (double)st.st_size / 1e6,
           t1 - t0);
    r = measure(syn, tmpdir, reps);
    char label[64];
    snprintf(label, sizeof label, "synthetic_%zu", n_nodes);
    print_row(label, &r);
    if (!getenv("BENCH_IO_KEEP"))
        unlink(syn);
    else
        printf("kept %s\n", syn);
    return 0;
}
