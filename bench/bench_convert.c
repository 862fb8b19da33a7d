/* bench_convert.c — memory and speed of `etkit convert pytorch` on large synthetic traces.
 * Writes a host execution trace (schema 1.0.2 layout, nodes shaped like the real
 * pytorch_host_et_1.0.2.json: attrs list, tensor 6-tuples, op_schema strings) of about
 * TARGET_MB megabytes and a matching Kineto trace (one cpu_op per host op, a runtime launch and a
 * kernel for every third op, an NCCL all-reduce every 50th), converts them to a Chakra file, and
 * prints the peak resident memory of the conversion relative to the input size (issue 5 asks
 * for at most 4x; the benchmark fails above that) and the throughput in MB/s.
 * usage: bench_convert [TARGET_MB (default 100)] [TMPDIR (default /tmp)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "etkit/convert.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* current resident set size in bytes (Linux /proc/self/statm) */
static long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : 0;
}

static const char *names[] = {"aten::linear", "aten::addmm", "aten::relu", "aten::copy_",
                              "aten::empty_strided", "aten::mm", "aten::add_", "aten::view"};

static void gen(const char *host, const char *dev, long target)
{
    FILE *h = fopen(host, "w"), *d = fopen(dev, "w");
    if (!h || !d) {
        perror("bench_convert: fopen");
        exit(1);
    }
    fprintf(h, "{\n  \"schema\": \"1.0.2-chakra.0.0.4\", \"pid\": 777, \"time\": \"bench\", "
               "\"start_ts\": 1, \"finish_ts\": 2,\n  \"nodes\": [\n");
    fprintf(h, "    {\"id\": 1, \"name\": \"[pytorch|profiler|execution_trace|process]\", "
               "\"ctrl_deps\": 1, \"inputs\": {\"values\": [], \"shapes\": [], \"types\": []}, "
               "\"outputs\": {\"values\": [], \"shapes\": [], \"types\": []}, \"attrs\": []},\n");
    fprintf(h, "    {\"id\": 2, \"name\": \"[pytorch|profiler|execution_trace|thread]\", "
               "\"ctrl_deps\": 1, \"inputs\": {\"values\": [], \"shapes\": [], \"types\": []}, "
               "\"outputs\": {\"values\": [], \"shapes\": [], \"types\": []}, \"attrs\": [{\"name\": "
               "\"tid\", \"type\": \"uint64\", \"value\": 1}]}");
    fprintf(d, "{\"schemaVersion\": 1, \"traceEvents\": [\n");
    long id = 3, ts = 1000, corr = 1;
    int first_ev = 1;
    while (ftell(h) < target) {
        long top = id++;
        int kids = 2;
        for (int k = -1; k < kids; k++) {
            long nid = k < 0 ? top : id++;
            long parent = k < 0 ? 2 : top;
            const char *nm = names[(nid * 7) % 8];
            if (nid % 50 == 0)
                nm = "nccl:all_reduce";
            fprintf(h, ",\n    {\"id\": %ld, \"name\": \"%s\", \"ctrl_deps\": %ld, "
                       "\"inputs\": {\"values\": [[%ld,%ld,0,4096,4,\"cuda:0\"],[%ld,%ld,0,4096,4,"
                       "\"cuda:0\"],false], \"shapes\": [[64,64],[64,64],[]], \"types\": "
                       "[\"Tensor(float)\",\"Tensor(float)\",\"Bool\"]}, \"outputs\": {\"values\": "
                       "[[%ld,%ld,0,4096,4,\"cuda:0\"]], \"shapes\": [[64,64]], \"types\": "
                       "[\"Tensor(float)\"]}, \"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", "
                       "\"value\": %ld}, {\"name\": \"fw_parent\", \"type\": \"uint64\", \"value\": 0}, "
                       "{\"name\": \"seq_id\", \"type\": \"int64\", \"value\": -1}, {\"name\": "
                       "\"scope\", \"type\": \"uint64\", \"value\": 0}, {\"name\": \"tid\", \"type\": "
                       "\"uint64\", \"value\": 1}, {\"name\": \"fw_tid\", \"type\": \"uint64\", "
                       "\"value\": 0}, {\"name\": \"op_schema\", \"type\": \"string\", \"value\": "
                       "\"%s(Tensor self, Tensor other, bool flag=False) -> Tensor\"}]}",
                    nid, nm, parent, nid, nid, nid + 1, nid + 1, nid + 2, nid + 2, nid, nm);
            long dur = k < 0 ? 30 : 10;
            long start = k < 0 ? ts : ts + 2 + 12 * k;
            fprintf(d, "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 777, "
                       "\"tid\": 1, \"ts\": %ld, \"dur\": %ld, \"args\": {\"External id\": %ld, "
                       "\"Record function id\": %ld}}",
                    first_ev ? "" : ",\n", nm, start, dur, nid, nid);
            first_ev = 0;
            if (k >= 0 && nid % 2 == 0) {
                fprintf(d, ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                           "\"cudaLaunchKernel\", \"pid\": 777, \"tid\": 1, \"ts\": %ld, \"dur\": 3, "
                           "\"args\": {\"External id\": %ld, \"correlation\": %ld}}",
                        start + 1, nid, corr);
                fprintf(d, ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, "
                           "\"tid\": 7, \"ts\": %ld, \"dur\": 8, \"args\": {\"stream\": 7, "
                           "\"correlation\": %ld}}",
                        strstr(nm, "nccl") ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
                                           : "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n",
                        start + 5, corr);
                corr++;
            }
        }
        ts += 40;
    }
    fprintf(h, "\n  ]\n}\n");
    fprintf(d, "\n], \"distributedInfo\": {\"rank\": 0, \"world_size\": 1}}\n");
    fclose(h);
    fclose(d);
}

static void run(const char *label, const char *host, const char *dev, const char *prefix)
{
    long in = file_size(host) + (dev ? file_size(dev) : 0);
    long before = rss_bytes();
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);
    double cpu0 = (double)(ru0.ru_utime.tv_sec + ru0.ru_stime.tv_sec) +
                  (double)(ru0.ru_utime.tv_usec + ru0.ru_stime.tv_usec) * 1e-6;
    etk_convert_opts o = {host, dev, 0, true, 0, NULL};
    etk_convert_stats st;
    etk_error err = {0};
    double t0 = now_s();
    if (etk_convert_pytorch_write(&o, prefix, &st, &err)) {
        fprintf(stderr, "bench_convert: %s\n", err.msg);
        exit(1);
    }
    double dt = now_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double peak = (double)ru.ru_maxrss * 1024.0 - (double)before;
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6 - cpu0;
    printf("convert %-13s input %7.1f MB, %8zu nodes (%zu GPU), wall %6.2f s (%5.1f MB/s), "
           "CPU %6.2f s (%5.1f MB/s), peak RSS %7.1f MB = %.2fx input\n",
           label, (double)in / 1e6, st.n_nodes, st.n_gpu_ops, dt, (double)in / 1e6 / dt, cpu,
           (double)in / 1e6 / cpu, peak / 1e6, peak / (double)in);
    if (peak > 4.0 * (double)in) {
        printf("FAIL: peak memory above 4x the input (issue 5)\n");
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long mb = argc > 1 ? atol(argv[1]) : 100;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char host[512], dev[512], out[512];
    snprintf(host, sizeof host, "%s/bench_convert_host.json", dir);
    snprintf(dev, sizeof dev, "%s/bench_convert_kineto.json", dir);
    snprintf(out, sizeof out, "%s/bench_convert_out", dir);
    gen(host, dev, mb * 1000000L);
    /* two processes would isolate the peaks; here the host-only run goes first, so the second
     * peak (host + device) is at least the first and ru_maxrss measures the larger one */
    if (argc > 3 && !strcmp(argv[3], "host")) {
        run("host only", host, NULL, out);
    } else {
        run("host+kineto", host, dev, out);
    }
    char p[600];
    if (getenv("BENCH_KEEP")) return 0;
    unlink(host);
    unlink(dev);
    snprintf(p, sizeof p, "%s.0.et", out);
    unlink(p);
    return 0;
}
