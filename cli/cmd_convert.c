/* cmd_convert.c — `etkit convert pytorch`: PyTorch host execution traces (+ Kineto device traces)
 * to Chakra, one rank per trace pair. A thin layer over etk_convert_pytorch_write (convert.h):
 * parses flags, expands %d patterns for --ranks, prints a summary (text or --json). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etkit/progress.h"
#include "cmd.h"
#include "etkit/convert.h"

static void help(FILE *f)
{
    fprintf(f,
            "usage: etkit convert pytorch --host HOST.json [--device KINETO.json] [--rank R] -o PREFIX\n"
            "       etkit convert pytorch --host 'host_%%d.json' [--device 'kineto_%%d.json'] --ranks N -o PREFIX\n"
            "       etkit convert pytorch --device KINETO.json -o PREFIX     (a Kineto trace alone)\n"
            "\n"
            "Converts a PyTorch execution trace (schemas 1.0.1 to 1.1.1; PyTorch 1.13's\n"
            "ExecutionGraphObserver included) and optionally the Kineto trace of the same step into\n"
            "a Chakra trace PREFIX.<rank>.et, plus PREFIX.json with the process groups. Host ops are\n"
            "linked to Kineto ops by rf_id, kernels to their launch by correlation; durations are\n"
            "exclusive times in microseconds. NCCL kernels become COMM_COLL/SEND/RECV nodes with\n"
            "comm_size in bytes. A PyTorch 1.13 CPU-profiler export (a bare event list) is accepted\n"
            "as --device and matched by op name in start order, per thread. A Kineto trace alone\n"
            "(--device without --host) converts its last ProfilerStep: host ops from its cpu_ops.\n"
            "One rank of a larger job alone is written as rank 0 of a 1-rank workload (groups cut\n"
            "to it, NCCL kernels as timed GPU work); --ranks N checks every input first.\n"
            "Ops whose FLOPs follow from their shapes (mm, addmm, bmm, matmul, linear, conv,\n"
            "attention) get num_ops and tensor_size.\n"
            "\n"
            "options:\n"
            "  --host FILE      host execution trace JSON (plain or gzip)\n"
            "  --device FILE    Kineto trace JSON or profiler event list (alone: Kineto only)\n"
            "  --rank R         rank of this trace (default: the Kineto trace's\n"
            "                   distributedInfo.rank, else 0); output PREFIX.R.et, or PREFIX.0.et\n"
            "                   when the job has more ranks than this one\n"
            "  --ranks N        convert ranks 0..N-1; --host/--device contain %%d for the rank;\n"
            "                   the set is published only when every rank is converted\n"
            "                   (written under a temporary folder; PREFIX.lock keeps a second\n"
            "                   writer out; ranks >= N of an earlier run are removed)\n"
            "  -o, --output P   output prefix                                      (required)\n"
            "  --json           print the summary as JSON\n"
            "  -q, --quiet      no warnings and no progress line on stderr\n"
            "  -h, --help       this help\n"
            "\n"
            "example:\n"
            "  etkit convert pytorch --host tests/pytorch/mlp_host_et.json \\\n"
            "      --device tests/pytorch/mlp_profiler.json -o /tmp/mlp\n"
            "  etkit validate /tmp/mlp\n");
}

/* Expand the single %d of pat with r (patterns without %d are used as they are). */
static int expand(const char *pat, long long r, char *out, size_t cap)
{
    const char *p = strstr(pat, "%d");
    if (!p)
        return snprintf(out, cap, "%s", pat) >= (int)cap ? -1 : 0;
    if (strstr(p + 2, "%d"))
        return -1;
    int n = snprintf(out, cap, "%.*s%lld%s", (int)(p - pat), pat, r, p + 2);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static void print_stats(FILE *f, const etk_convert_stats *st, long long rank, const char *out, bool json,
                        bool first, bool last)
{
    if (json) {
        /* a file name that is not UTF-8 was written as raw bytes: not JSON (issue #18) */
        char *eo = cli_json_quote(out), *es = cli_json_quote(st->schema);
        fprintf(f, "%s{\"rank\": %lld, \"output\": %s, \"schema\": %s, \"schema_known\": %s, "
               "\"host_nodes\": %zu, \"nodes\": %zu, \"comp\": %zu, \"metadata\": %zu, "
               "\"comm_coll\": %zu, \"send\": %zu, \"recv\": %zu, \"cpu_ops\": %zu, "
               "\"gpu_ops\": %zu, \"matched_host_ops\": %zu, \"zero_duration_ops\": %zu, "
               "\"unlinked_gpu_ops\": %zu, \"dropped_gpu_ops\": %zu, \"cross_thread_deps\": %zu, "
               "\"sync_deps\": %zu, \"stream_wait_deps\": %zu, "
               "\"groups\": %zu, \"host_threads\": %zu, \"flop_ops\": %zu, "
               "\"trace_span_us\": %llu, \"input_bytes\": %llu, "
               "\"warnings\": %zu}%s\n",
               first ? "[" : " ", rank, eo ? eo : "null", es ? es : "null",
               st->schema_known ? "true" : "false",
               st->n_host_nodes, st->n_nodes, st->n_type[ETK_NODE_COMP],
               st->n_type[ETK_NODE_METADATA], st->n_type[ETK_NODE_COLL],
               st->n_type[ETK_NODE_SEND], st->n_type[ETK_NODE_RECV], st->n_cpu_ops,
               st->n_gpu_ops, st->n_matched, st->n_zero_dur, st->n_unlinked_kernels,
               st->n_dropped_gpu, st->n_cross_thread_deps, st->n_sync_deps,
               st->n_stream_wait_deps, st->n_groups, st->n_threads, st->n_flop_ops,
               (unsigned long long)st->trace_span_us, (unsigned long long)st->input_bytes,
               st->n_warnings, last ? "]" : ",");
        free(eo);
        free(es);
        return;
    }
    fprintf(f, "rank %lld: %s (schema %s%s): %zu host nodes -> %zu nodes (%zu COMP, %zu METADATA, "
           "%zu COMM_COLL, %zu SEND, %zu RECV; %zu CPU, %zu GPU)\n",
           rank, out, st->schema[0] ? st->schema : "?", st->schema_known ? "" : ", unknown",
           st->n_host_nodes, st->n_nodes, st->n_type[ETK_NODE_COMP],
           st->n_type[ETK_NODE_METADATA], st->n_type[ETK_NODE_COLL], st->n_type[ETK_NODE_SEND],
           st->n_type[ETK_NODE_RECV], st->n_cpu_ops, st->n_gpu_ops);
    fprintf(f, "  durations: %zu host ops matched to the device trace, %zu without duration; "
           "trace span %llu us\n",
           st->n_matched, st->n_zero_dur, (unsigned long long)st->trace_span_us);
    fprintf(f, "  dependencies: %zu cross-thread, %zu sync, %zu stream-wait; %zu process groups\n",
           st->n_cross_thread_deps, st->n_sync_deps, st->n_stream_wait_deps, st->n_groups);
    if (st->n_flop_ops)
        fprintf(f, "  FLOPs from shapes: %zu ops (%zu written as GPU work)\n", st->n_flop_ops,
               st->n_flop_gpu_ops);
    if (st->n_threads > 1)
        fprintf(f, "  %zu host threads: simulate with 'etkit sim --cpu-streams %zu' so they run "
               "concurrently\n", st->n_threads, st->n_threads);
}


/* What a conversion changed or left out, on stderr. */
static void notes(const etk_convert_stats *st, const char *device, uint64_t count, bool *warned)
{
    if (count == 1 && st->job_ranks > 1)
        fprintf(stderr, "etkit convert: note: rank %lld of a %lld-rank job converted alone: "
                "written as rank 0 of a 1-rank workload; %zu process groups cut to it, %zu "
                "without it dropped; %zu NCCL kernels kept as GPU work with their measured "
                "durations (a 1-rank collective moves no data)\n",
                (long long)st->orig_rank, (long long)st->job_ranks, st->n_groups,
                st->n_groups_dropped, st->n_comm_replayed);
    if (count > 1 && !*warned && st->world_size > 0 && (uint64_t)st->world_size != count) {
        fprintf(stderr, "etkit convert: warning: %s: distributedInfo.world_size is %lld but "
                "--ranks is %llu%s\n", device ? device : "?", (long long)st->world_size,
                (unsigned long long)count, (uint64_t)st->world_size > count ? ": process groups "
                "keep only ranks below --ranks" : "");
        *warned = true;
    }
    if (count > 1 && st->n_group_ranks_dropped && !*warned) {
        fprintf(stderr, "etkit convert: warning: the process groups name ranks up to %lld; %zu "
                "members >= --ranks %llu were left out\n", (long long)st->job_ranks - 1,
                st->n_group_ranks_dropped, (unsigned long long)count);
        *warned = true;
    }
}

/* one conversion run: the %d patterns and the output */
typedef struct job {
    const char *host, *device, *prefix;
    uint64_t count;
    bool quiet, json, warned_world;
    char hp[4096], dp[4096]; /* the current rank's files */
    FILE *out;               /* the summaries: held until the set is published (--ranks) */
    etk_progress *prog;      /* ranks converted (--ranks, on a terminal) */
    uint64_t done;
} job;

/* etk_convert_rank_opts_fn: rank r's files from the patterns */
static int rank_opts(void *ctx, uint64_t r, etk_convert_opts *o, etk_error *err)
{
    job *j = ctx;
    if ((j->host && expand(j->host, (long long)r, j->hp, sizeof j->hp)) ||
        (j->device && expand(j->device, (long long)r, j->dp, sizeof j->dp)))
        return etk_err(err, ETK_EINVAL, "--host/--device may contain one %%d (the rank)");
    *o = (etk_convert_opts){j->host ? j->hp : NULL, j->device ? j->dp : NULL, (int64_t)r, j->quiet,
                            (int64_t)j->count, NULL};
    /* one trace: a progress line per phase of its conversion (many: one line counts the ranks) */
    if (j->count == 1 && !j->quiet)
        o->progress = stderr;
    return 0;
}

/* etk_convert_rank_done_fn: notes on stderr, the summary of the rank on stdout */
static void rank_done(void *ctx, uint64_t r, const etk_convert_stats *st)
{
    job *j = ctx;
    if (!j->quiet)
        notes(st, j->device ? j->dp : NULL, j->count, &j->warned_world);
    char out[4200];
    snprintf(out, sizeof out, "%s.%lld.et", j->prefix, (long long)st->rank);
    print_stats(j->out, st, (long long)st->rank, out, j->json, r == 0 || j->count == 1,
                r + 1 == j->count || j->count == 1);
    if (j->prog)
        etk_progress_update(j->prog, ++j->done);
}

int cmd_convert(int argc, char **argv)
{
    const char *cmd = "convert";
    if (argc < 2) {
        help(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        help(stdout);
        return 0;
    }
    if (strcmp(argv[1], "pytorch"))
        return cli_usage_error(cmd, "unknown input format '%s' (supported: pytorch)", argv[1]);
    argc--;
    argv++;
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'},  {"device", required_argument, NULL, 'D'},
        {"rank", required_argument, NULL, 'r'},  {"ranks", required_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'}, {"json", no_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *host = NULL, *device = NULL, *prefix = NULL;
    uint64_t rank = 0, nranks = 0;
    bool have_rank = false, have_ranks = false, json = false, quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'H': host = optarg; break;
        case 'D': device = optarg; break;
        case 'o': prefix = optarg; break;
        case 'j': json = true; break;
        case 'q': quiet = true; break;
        case 'h': help(stdout); return 0;
        case 'r':
            if (cli_parse_u64(cmd, "--rank", optarg, &rank))
                return 2;
            have_rank = true;
            break;
        case 'n':
            if (cli_parse_u64(cmd, "--ranks", optarg, &nranks))
                return 2;
            if (nranks == 0 || nranks > 1000000)
                return cli_usage_error(cmd, "--ranks wants 1 to 1000000 ranks, got %s", optarg);
            have_ranks = true;
            break;
        default:
            return cli_getopt_error(cmd, c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!host && !device)
        return cli_usage_error(cmd, "--host HOST.json or --device KINETO.json (a Kineto trace "
                               "alone) is required");
    if (!prefix)
        return cli_usage_error(cmd, "-o PREFIX is required");
    if (have_rank && have_ranks)
        return cli_usage_error(cmd, "--rank and --ranks exclude each other");
    const char *pat = host ? host : device;
    if (have_ranks && !strstr(pat, "%d"))
        return cli_usage_error(cmd, "--ranks needs a %%d in %s for the rank number (got '%s')",
                               host ? "--host" : "--device", pat);
    etk_error oerr = {0};
    if (etk_output_check(prefix, &oerr)) /* before any work (issue #18) */
        return cli_fail(cmd, &oerr);
    uint64_t first = have_ranks ? 0 : rank, count = have_ranks ? nranks : 1;
    /* every input first: a missing rank file must not leave a partial workload behind */
    for (uint64_t r = first; r < first + count; r++) {
        char p[4096];
        for (int k = 0; k < 2; k++) {
            const char *pt = k ? device : host;
            if (!pt)
                continue;
            if (expand(pt, (long long)r, p, sizeof p))
                return cli_usage_error(cmd, "--host/--device may contain one %%d (the rank)");
            /* stat first: fopen of a FIFO blocks until a writer comes (issue #18) */
            struct stat st;
            FILE *f = NULL;
            if (stat(p, &st) == 0 && !S_ISREG(st.st_mode))
                return cli_usage_error(cmd, "%s: %s, expected a %s trace (JSON): nothing written", p,
                                       etk_file_kind(st.st_mode), k ? "Kineto device" : "PyTorch host");
            if (!(f = fopen(p, "rb")))
                return cli_usage_error(cmd, "%s: cannot open (%s)%s: nothing written", p,
                                       strerror(errno), have_ranks ? "; --ranks N needs the "
                                       "files of ranks 0..N-1" : "");
            fclose(f);
        }
    }
    etk_progress prog;
    job jb = {host, device, prefix, count, quiet, json, false, "", "", stdout, NULL, 0};
    etk_error err = {0};
    if (have_ranks) {
        /* the rank set all or nothing: written under a temporary folder, published whole; the
         * summaries are printed once it is (none for a set that was not written) */
        char *text = NULL;
        size_t len = 0;
        if (!(jb.out = open_memstream(&text, &len)))
            return cli_fail(cmd, &(etk_error){ETK_ENOMEM, "out of memory"});
        etk_progress_begin(&prog, stderr, quiet || count == 1, "ranks converted", count);
        jb.prog = &prog;
        int rc = etk_convert_pytorch_write_ranks(count, rank_opts, rank_done, &jb, prefix, &err);
        etk_progress_end(&prog);
        fclose(jb.out);
        if (!rc)
            fwrite(text, 1, len, stdout);
        free(text);
        return rc ? cli_fail(cmd, &err) : 0;
    }
    etk_convert_opts o;
    if (rank_opts(&jb, rank, &o, &err))
        return cli_fail(cmd, &err);
    o.rank = have_rank ? (int64_t)rank : -1;
    etk_convert_stats st;
    if (etk_convert_pytorch_write(&o, prefix, &st, &err))
        return cli_fail(cmd, &err);
    rank_done(&jb, (uint64_t)st.rank, &st);
    return 0;
}
