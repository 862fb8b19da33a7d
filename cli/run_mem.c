/* run_mem.c — memory estimate of an unfolded `etkit run` before any allocation (issue #18: an
 * unfolded 512-rank 70B run failed "out of memory" after 58 s at 4.9 GB; 405B on 16,384 ranks
 * with --slow-rank after 90 s at 6.8 GB). Folded runs simulate one rank per pipeline stage and
 * are not checked. The estimate is nodes x RUN_MEM_BYTES_PER_NODE + a base; the constant is the
 * measured slope (bench/RESULTS.md), checked against a measured peak in tests/faults.sh. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cmd.h"
#include "run_mem.h"

int run_mem_parse(const char *cmd, const char *arg, uint64_t *out)
{
    char *end;
    if (!arg || *arg < '0' || *arg > '9')
        return cli_usage_error(cmd, "--max-memory wants bytes with an optional K, M, G or T suffix, got '%s'",
                               arg ? arg : "");
    double v = strtod(arg, &end);
    double mul = 1;
    if (*end && !end[1]) {
        const char *u = strchr("KMGT", *end == 'k' ? 'K' : *end);
        if (!u)
            goto bad;
        for (const char *p = "KMGT"; p <= u; p++)
            mul *= 1024;
        end++;
    }
    if (*end || !(v * mul >= 1) || v * mul > 1e18)
        goto bad;
    *out = (uint64_t)(v * mul);
    return 0;
bad:
    return cli_usage_error(cmd, "--max-memory wants bytes with an optional K, M, G or T suffix (1 to 10^18), got '%s'",
                           arg);
}

int run_mem_estimate(const etk_gen_config *cfg, uint64_t *nodes, uint64_t *bytes, etk_error *err)
{
    etk_gen_summary s;
    int rc = etk_gen_summarize(cfg, &s, err);
    if (rc)
        return rc;
    uint64_t n = 0;
    uint64_t per_stage = s.n_stages ? s.n_ranks / s.n_stages : 0;
    for (uint32_t i = 0; i < s.n_stages; i++)
        n += s.stages[i].nodes * per_stage;
    etk_gen_summary_free(&s);
    *nodes = n;
    *bytes = n > (UINT64_MAX - RUN_MEM_BASE_BYTES) / RUN_MEM_BYTES_PER_NODE
                 ? UINT64_MAX
                 : n * RUN_MEM_BYTES_PER_NODE + RUN_MEM_BASE_BYTES;
    return 0;
}

/* a number from a file's first line ("max" or absent: UINT64_MAX) */
static uint64_t file_u64(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v;
    uint64_t r = UINT64_MAX;
    if (f) {
        if (fscanf(f, "%llu", &v) == 1)
            r = v;
        fclose(f);
    }
    return r;
}

uint64_t run_mem_available(void)
{
    uint64_t avail = UINT64_MAX;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
                avail = (uint64_t)kb * 1024;
        fclose(f);
    }
    uint64_t max = file_u64("/sys/fs/cgroup/memory.max"), cur = file_u64("/sys/fs/cgroup/memory.current");
    if (max != UINT64_MAX && cur != UINT64_MAX) {
        uint64_t left = max > cur ? max - cur : 0;
        if (left < avail)
            avail = left;
    }
    int res[] = {RLIMIT_AS, RLIMIT_DATA};
    for (int i = 0; i < 2; i++) {
        struct rlimit rl;
        if (getrlimit(res[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < avail)
            avail = (uint64_t)rl.rlim_cur;
    }
    return avail;
}

int run_mem_check(const char *cmd, const etk_gen_config *cfg, uint64_t max_bytes, const char *why_unfolded)
{
    uint64_t nodes, need;
    etk_error err = {0};
    if (run_mem_estimate(cfg, &nodes, &need, &err))
        return cli_fail(cmd, &err);
    uint64_t have = max_bytes ? max_bytes : run_mem_available();
    if (need <= have)
        return 0;
    fprintf(stderr,
            "etkit %s: error: simulating all %u ranks unfolded (%s) needs about %.2f GB (%" PRIu64
            " nodes x %u bytes, estimated before any work); %.2f GB %s. Let the ranks fold (drop --no-fold, "
            "--slow-rank or --link-factor; use --net-model analytical instead of the flow model), or use fewer "
            "ranks or micro-batches\n",
            cmd, cfg->n_ranks, why_unfolded, need / 1e9, nodes, RUN_MEM_BYTES_PER_NODE, have / 1e9,
            max_bytes ? "allowed by --max-memory" : "available");
    return 2;
}

int sim_mem_check(const char *cmd, const char *spec, const char *why_unfolded, uint64_t max_bytes)
{
    uint32_t n_ranks;
    uint64_t bytes, largest;
    etk_workload_size(spec, &n_ranks, &bytes, &largest);
    if (!n_ranks) /* nothing to size: etk_workload_open says what is wrong */
        return 0;
    uint64_t simmed = why_unfolded ? bytes : largest;
    double need = (double)bytes * SIM_MEM_LOAD_PER_BYTE + (double)simmed * SIM_MEM_SIM_PER_BYTE + RUN_MEM_BASE_BYTES;
    uint64_t have = max_bytes ? max_bytes : run_mem_available();
    if (need <= (double)have)
        return 0;
    fprintf(stderr,
            "etkit %s: error: %s: %u rank traces of %.3f GB (encoded) need about %.2f GB to simulate (%.2f bytes "
            "per trace byte held + %.2f per byte simulated%s%s; estimated from the file sizes before reading "
            "them); %.2f GB %s. %s",
            cmd, spec, n_ranks, bytes / 1e9, need / 1e9, SIM_MEM_LOAD_PER_BYTE, SIM_MEM_SIM_PER_BYTE,
            why_unfolded ? ", every rank simulated: " : ", the largest rank simulated (folded)", why_unfolded ? why_unfolded : "", have / 1e9,
            max_bytes ? "allowed by --max-memory" : "available",
            why_unfolded ? "Let the ranks fold (drop --no-fold, --slow-rank or --link-factor; --net-model analytical), "
                           "or simulate fewer ranks\n"
                         : "Simulate fewer ranks or shorter traces (etkit gen: fewer micro-batches or layers; "
                           "etkit run simulates a generated plan without writing its traces)\n");
    return 2;
}
