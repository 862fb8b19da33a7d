/* bench_gen.c — speed and scale of trace synthesis (issue: "Speed and scale"):
 *   1. Llama-2-7B shape, dp = tp = pp = 2, 8 micro-batches: all 8 rank files (target <= 0.5 s;
 *      STAGE needs 136 s of CPU);
 *   2. llama3-405b on 16,384 GPUs (TP 8, PP 16, DP 128, seq 8192, global batch 2048): --summary
 *      (target <= 5 s and <= 1 GB peak memory); 3. the same on 32,768 GPUs (DP 256);
 *   4. all rank files of a 4,096-rank job (target >= 300 MB/s).
 * usage: bench_gen <scratch-dir>   (files are removed after each case) */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "etkit/gen.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void setup(etk_gen_config *c, const char *line)
{
    char buf[512], *argv[64], *rest[64];
    int argc = 0, nrest;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 64; t = strtok(NULL, " "))
        argv[argc++] = t;
    etk_gen_config_init(c);
    etk_error err = {0};
    if (etk_gen_parse_args(argc, argv, c, &nrest, rest, &err) || nrest || etk_gen_check(c, &err)) {
        fprintf(stderr, "bench_gen: %s: %s\n", line, err.msg);
        exit(1);
    }
}

/* total bytes of <dir>/<stem>.* and remove them */
static double sweep(const char *dir, const char *stem)
{
    double total = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, stem, strlen(stem)))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (!stat(p, &st))
            total += (double)st.st_size;
        unlink(p);
    }
    if (d)
        closedir(d);
    return total;
}

static void write_case(const char *dir, const char *label, const char *line, int reps, bool sync)
{
    etk_gen_config c;
    setup(&c, line);
    c.no_sync = !sync;
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/bg", dir);
    double best = 1e30, bytes = 0;
    for (int r = 0; r < reps; r++) {
        etk_error err = {0};
        double t0 = now();
        if (etk_gen_write(&c, prefix, &err)) {
            fprintf(stderr, "bench_gen: %s\n", err.msg);
            exit(1);
        }
        double t = now() - t0;
        bytes = sweep(dir, "bg.");
        if (t < best)
            best = t;
    }
    printf("%s: %u rank files, %.1f MB in %.3f s (best of %d, %s) = %.0f MB/s\n", label, c.n_ranks, bytes / 1e6,
           best, reps, sync ? "synced to disk" : "to the page cache, no final syncfs", bytes / 1e6 / best);
}

static void summary_case(const char *label, const char *line)
{
    etk_gen_config c;
    setup(&c, line);
    etk_gen_summary s;
    etk_error err = {0};
    double t0 = now();
    if (etk_gen_summarize(&c, &s, &err)) {
        fprintf(stderr, "bench_gen: %s\n", err.msg);
        exit(1);
    }
    double t = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s: --summary of %u ranks (%u stages, %u micro-batches) in %.3f s, peak RSS %.1f MB so far\n", label,
           s.n_ranks, s.n_stages, s.micro_batches, t, ru.ru_maxrss / 1024.0);
    etk_gen_summary_free(&s);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_gen <scratch-dir>\n");
        return 2;
    }
    const char *dir = argv[1];
    summary_case("llama3-405b 16,384 GPUs",
                 "--model llama3-405b --tp 8 --pp 16 --dp 128 --seq 8192 --global-batch 2048");
    summary_case("llama3-405b 32,768 GPUs",
                 "--model llama3-405b --tp 8 --pp 16 --dp 256 --seq 8192 --global-batch 2048");
    write_case(dir, "llama2-7b shape dp=tp=pp=2, 8 micro-batches",
               "--model llama2-7b --layers 32 --hidden 4096 --ffn 11008 --heads 32 --vocab 32000 --seq 4096 "
               "--global-batch 32 --micro-batch 2 --dp 2 --tp 2 --pp 2",
               5, true);
    const char *big = "--model llama2-7b --tp 8 --pp 4 --dp 128 --global-batch 256";
    write_case(dir, "4,096-rank job (llama2-7b, tp 8 pp 4 dp 128, 2 micro-batches)", big, 3, false);
    write_case(dir, "4,096-rank job (llama2-7b, tp 8 pp 4 dp 128, 2 micro-batches)", big, 1, true);
    return 0;
}
