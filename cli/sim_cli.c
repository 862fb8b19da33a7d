/* sim_cli.c — the options `etkit sim` and `etkit run` share (see sim_cli.h): choosing the
 * cluster (built-in preset with --nodes, etkit cluster YAML, or ASTRA-sim's network YAML +
 * system JSON), engine knobs (streams, lenient dependencies, STAGE units, folding) and the
 * outputs (text, --json, --csv, --timeline), all written atomically. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "etkit/run.h"
#include "report_html.h"
#include "sim_cli.h"

const struct option sim_cli_longopts[] = {
    {"cluster", required_argument, 0, SO_CLUSTER},
    {"nodes", required_argument, 0, SO_NODES},
    {"gpus", required_argument, 0, SO_GPUS},
    {"gpu", required_argument, 0, SO_GPU},
    {"astra-network", required_argument, 0, SO_ASTRA_NET},
    {"astra-system", required_argument, 0, SO_ASTRA_SYS},
    {"astra-compat", no_argument, 0, SO_ASTRA_COMPAT},
    {"efficiency", required_argument, 0, SO_EFF},
    {"net-model", required_argument, 0, SO_NETMODEL},
    {"link-factor", required_argument, 0, SO_LINKF},
    {"precision", required_argument, 0, SO_PREC},
    {"cpu-streams", required_argument, 0, SO_CPU},
    {"comp-streams", required_argument, 0, SO_COMP},
    {"comm-streams", required_argument, 0, SO_COMM},
    {"missing-deps", required_argument, 0, SO_MISSING},
    {"stage-units", no_argument, 0, SO_STAGE},
    {"no-stage-units", no_argument, 0, SO_NOSTAGE},
    {"no-fold", no_argument, 0, SO_NOFOLD},
    {"json", no_argument, 0, SO_JSON},
    {"csv", no_argument, 0, SO_CSV},
    {"timeline", required_argument, 0, SO_TIMELINE},
    {"html", required_argument, 0, SO_HTML},
    {"tokens", required_argument, 0, SO_TOKENS},
    {"model-flops", required_argument, 0, SO_MFLOPS},
    {"quiet", no_argument, 0, SO_QUIET},
    {"compute", required_argument, 0, SO_COMPUTE},
    {"compute-param", required_argument, 0, SO_CPARAM},
    {"slow-rank", required_argument, 0, SO_SLOW},
    {"output", required_argument, 0, SO_OUTPUT},
    {"help", no_argument, 0, SO_HELP},
    {0, 0, 0, 0},
};

const char sim_cli_help[] =
    "cluster:\n"
    "  -c, --cluster NAME|FILE  built-in preset (dgx-a100, dgx-h100, hgx-h200, dgx-b200,\n"
    "                           dgx-h100-superpod, llama3) or an etkit cluster YAML\n"
    "                           (docs/cluster.md)\n"
    "  -n, --nodes N            nodes of 8 GPUs for a preset (default: ranks / 8)\n"
    "  --gpus N                 one node of N (1-8) GPUs of a preset (default for fewer than\n"
    "                           8 ranks: one node with as many GPUs as ranks)\n"
    "  --gpu NAME               replace the cluster's GPU (a100, h100, h200, b200, mi300x)\n"
    "  --astra-network FILE --astra-system FILE\n"
    "                           ASTRA-sim's network YAML and system JSON (their units); implies\n"
    "                           --astra-compat\n"
    "  --astra-compat           reproduce ASTRA-sim's congestion-unaware analytical results\n"
    "  --efficiency F           roofline efficiency in [0.001, 1] (default: the cluster's, 1)\n"
    "  --net-model flow|analytical\n"
    "                           network model (default: the cluster's; docs/network-model.md)\n"
    "  --link-factor nic:R:F|nvlink:R:F|dim:D:F\n"
    "                           scale GPU R's NIC or NVLink bandwidth, or dimension D's, by F\n"
    "                           in [0.001, 1000] (repeatable; forces --no-fold), e.g.\n"
    "                           --link-factor nic:17:0.5\n"
    "  --precision P            bf16 | fp16 | fp8 | fp32 | tf32: which peak the roofline uses\n"
    "  --compute model|roofline time GPU ops by the compute model (default: GEMM efficiency by\n"
    "                           shape, memory-bound elementwise ops, launch overhead, overlap\n"
    "                           interference; docs/compute-model.md) or the plain roofline\n"
    "                           (implied by --efficiency and --astra-compat)\n"
    "  --compute-param NAME=V   override a compute-model default (gemm_eff, gemm_half_dim,\n"
    "                           gemm_min_dim, mem_eff, score_mem_eff, attn_eff, launch_ns,\n"
    "                           overlap_slowdown, fp8_gemm_eff, fp8_gemm_half_dim,\n"
    "                           attn_bwd_eff, attn_half_seq, grouped_gemm_half_dim,\n"
    "                           attn_half_dim, attn_ref_seq, grouped_fp8_wgrad_factor,\n"
    "                           host_op_ns); also a GPU YAML's compute: mapping. host_op_ns:\n"
    "                           the host thread's cost per kernel it issues (eager PyTorch;\n"
    "                           0, the default: the host always runs ahead, as CUDA graphs)\n"
    "  --slow-rank R:F          rank R computes at F times its speed, F in [0.001, 1000] (0.8:\n"
    "                           25% longer kernels); repeatable; forces the unfolded simulation\n"
    "                           (e.g. etkit run --dp 8 --cluster dgx-a100 --nodes 1 --slow-rank 3:0.8)\n"
    "engine:\n"
    "  --cpu-streams N, --comp-streams N, --comm-streams N\n"
    "                           streams per rank (default 1 CPU, 1 compute, and one\n"
    "                           communication stream per process group and send peer, as\n"
    "                           NCCL; --comm-streams N: a pool of N shared by all groups;\n"
    "                           --astra-compat: 1 each, like ASTRA-sim; at most 32)\n"
    "  --missing-deps=error|ignore\n"
    "                           deps on ids absent from a trace: error (default), or treat as\n"
    "                           satisfied and drop control deps closing cycles (converter output)\n"
    "  --stage-units            STAGE traces: sizes in fp16 elements (x2 bytes), matmul num_ops\n"
    "                           in MACs (x2 FLOPs); on by default for STAGE's files\n"
    "  --no-stage-units         read a STAGE trace's sizes and num_ops as they are\n"
    "  --no-fold                simulate every rank even where ranks fold into classes\n"
    "  --tokens N               tokens per step (for tokens/s; 0 to 2^53)\n"
    "  --model-flops F          model FLOPs per step over all ranks (for MFU; default: num_ops sum)\n"
    "output:\n"
    "  --json | --csv           machine-readable report instead of text\n"
    "  -o, --output FILE        write the report to FILE (atomically) instead of stdout\n"
    "  --timeline FILE.json     Chrome trace / Perfetto timeline (ui.perfetto.dev)\n"
    "  --html FILE.html         the HTML report too (etkit report; docs/report.md)\n"
    "  --quiet                  no warnings and no progress line (drawn on a terminal)\n"
    "  -h, --help               this text\n";

static int u32opt(const char *cmd, const char *name, const char *arg, uint32_t *out, uint32_t lo,
                  uint32_t hi)
{
    uint64_t v;
    if (cli_parse_u64(cmd, name, arg, &v) != 0)
        return 2;
    if (v < lo || v > hi)
        return cli_usage_error(cmd, "%s must be between %u and %u, got %s", name, lo, hi, arg);
    *out = (uint32_t)v;
    return 0;
}

int sim_cli_option(const char *cmd, sim_cli *c, int opt, const char *arg)
{
    uint64_t v;
    switch (opt) {
    case SO_CLUSTER:
        c->cluster = arg;
        return 0;
    case SO_NODES:
        if (cli_parse_u64(cmd, "--nodes", arg, &v) != 0)
            return 2;
        if (v == 0 || v > 1000000)
            return cli_usage_error(cmd, "--nodes must be between 1 and 1000000, got %s", arg);
        c->nodes = v;
        c->nodes_set = true;
        return 0;
    case SO_GPUS:
        return u32opt(cmd, "--gpus", arg, &c->gpus, 1, 1024);
    case SO_GPU:
        c->gpu = arg;
        return 0;
    case SO_ASTRA_NET:
        c->astra_net = arg;
        return 0;
    case SO_ASTRA_SYS:
        c->astra_sys = arg;
        return 0;
    case SO_ASTRA_COMPAT:
        c->astra_compat = true;
        return 0;
    case SO_EFF:
        if (cli_parse_double(cmd, "--efficiency", arg, &c->eff) != 0)
            return 2;
        if (!(c->eff >= 1e-3 && c->eff <= 1)) /* 1e-17 made the step faster (overflow) */
            return cli_usage_error(cmd, "--efficiency must be in [0.001, 1], got %s", arg);
        c->eff_set = true;
        return 0;
    case SO_NETMODEL:
        if (strcmp(arg, "flow") && strcmp(arg, "analytical"))
            return cli_usage_error(cmd, "--net-model wants 'flow' or 'analytical', got '%s'", arg);
        c->net_model = arg;
        return 0;
    case SO_LINKF:
        if (c->n_link_factor >= ETK_MAX_LINK_FACTORS)
            return cli_usage_error(cmd, "--link-factor: at most %d", ETK_MAX_LINK_FACTORS);
        c->link_factor[c->n_link_factor++] = arg;
        c->o.no_fold = true; /* per-link factors break the symmetry folding relies on */
        return 0;
    case SO_PREC:
        if (etk_precision_parse(arg) < 0)
            return cli_usage_error(cmd, "--precision: unknown precision '%s' (bf16, fp16, fp8, "
                                        "fp32, tf32)", arg);
        c->precision = arg;
        return 0;
    case SO_CPU:
        return u32opt(cmd, "--cpu-streams", arg, &c->o.cpu_streams, 1, 32);
    case SO_COMP:
        return u32opt(cmd, "--comp-streams", arg, &c->o.comp_streams, 1, 32);
    case SO_COMM:
        return u32opt(cmd, "--comm-streams", arg, &c->o.comm_streams, 1, 32);
    case SO_MISSING:
        if (strcmp(arg, "ignore") == 0)
            c->o.missing_deps_ignore = true;
        else if (strcmp(arg, "error") == 0)
            c->o.missing_deps_ignore = false;
        else
            return cli_usage_error(cmd, "--missing-deps wants 'error' or 'ignore', got '%s'", arg);
        return 0;
    case SO_COMPUTE:
        if (strcmp(arg, "roofline") == 0)
            c->roofline = true;
        else if (strcmp(arg, "model") == 0)
            c->roofline = false;
        else
            return cli_usage_error(cmd, "--compute wants 'model' or 'roofline', got '%s'", arg);
        return 0;
    case SO_CPARAM:
        if (c->n_cparam >= sizeof c->cparam / sizeof c->cparam[0])
            return cli_usage_error(cmd, "--compute-param: at most 32 are supported");
        c->cparam[c->n_cparam++] = arg;
        return 0;
    case SO_SLOW: {
        char *end = NULL;
        unsigned long long r = strtoull(arg, &end, 10);
        double f = 0;
        if (end == arg || *end != ':' || r > 0xffffffffULL || arg[0] == '-')
            return cli_usage_error(cmd, "--slow-rank wants RANK:FACTOR (e.g. 17:0.8), got '%s'",
                                   arg);
        const char *fs = end + 1;
        f = strtod(fs, &end);
        if (end == fs || *end || !(f >= 1e-3 && f <= 1e3)) /* 1e-300 made the step faster */
            return cli_usage_error(cmd, "--slow-rank %s: the factor must be a number in [0.001, 1000] "
                                        "(e.g. 17:0.8), got '%s'", arg, fs);
        if (c->n_slow >= sizeof c->slow_rank / sizeof c->slow_rank[0])
            return cli_usage_error(cmd, "--slow-rank: at most 256 are supported");
        c->slow_rank[c->n_slow] = (uint32_t)r;
        c->slow_factor[c->n_slow++] = f;
        c->o.no_fold = true;
        return 0;
    }
    case SO_STAGE:
        c->o.stage_units = true;
        c->stage_set = true;
        return 0;
    case SO_NOSTAGE:
        c->o.stage_units = false;
        c->stage_set = true;
        return 0;
    case SO_NOFOLD:
        c->o.no_fold = true;
        return 0;
    case SO_JSON:
        c->fmt = 1;
        return 0;
    case SO_CSV:
        c->fmt = 2;
        return 0;
    case SO_TIMELINE:
        c->timeline = arg;
        c->o.timeline = true;
        return 0;
    case SO_HTML: /* the page's Gantt chart and memory over time come from the timeline */
        c->html = arg;
        c->o.timeline = true;
        return 0;
    case SO_TOKENS:
        if (cli_parse_double(cmd, "--tokens", arg, &c->o.tokens_per_step) != 0)
            return 2;
        /* a count of tokens: at most 2^53 (exact in a double; real steps are ~10^7), so that
         * tokens/s is never a 300-digit number (issue #18) */
        if (c->o.tokens_per_step < 0 || c->o.tokens_per_step > 9007199254740992.0)
            return cli_usage_error(cmd, "--tokens must be a number of tokens per step in [0, 2^53 = 9.0e15], got %s",
                                   arg);
        return 0;
    case SO_MFLOPS:
        if (cli_parse_double(cmd, "--model-flops", arg, &c->o.model_flops) != 0)
            return 2;
        if (!(c->o.model_flops > 0))
            return cli_usage_error(cmd, "--model-flops must be a positive number of FLOPs, got %s", arg);
        c->mflops_user = true;
        return 0;
    case SO_QUIET:
        c->o.quiet = true;
        return 0;
    case SO_OUTPUT:
        c->output = arg;
        return 0;
    default:
        return 1;
    }
}

/* a cluster file: a regular file, or any existing path with a '/' (/dev/zero, a FIFO or a
 * directory are then refused by the reader naming what they are) */
static bool is_file(const char *p)
{
    struct stat st;
    /* a FIFO or device is a file too (the reader says what it is; it was taken for a preset
     * name: "unknown cluster preset 'fifo'"); a folder only when named as a path */
    return stat(p, &st) == 0 && (!S_ISDIR(st.st_mode) || strchr(p, '/'));
}

/* per-rank speeds of --slow-rank; kept reachable until exit (one simulation per process) */
static double *speed_buf;

static int compute_setup(const char *cmd, sim_cli *c, uint32_t n_ranks, const etk_cluster *cl)
{
    etk_error err = {0};
    bool roofline = c->roofline || c->eff_set || cl->astra_compat ||
                    cl->compute_efficiency != 1.0;
    if (roofline && c->n_cparam)
        return cli_usage_error(cmd, "--compute-param applies to the compute model, not the "
                                    "roofline (drop --compute roofline / --efficiency / "
                                    "--astra-compat, or the cluster's compute_efficiency)");
    if (!roofline) {
        etk_compute_defaults(&cl->gpu, &c->comp);
        for (uint32_t i = 0; i < c->n_cparam; i++)
            if (etk_compute_set(&c->comp, c->cparam[i], &err) != 0)
                return cli_usage_error(cmd, "--compute-param: %s", err.msg);
        c->o.compute = &c->comp;
    }
    /* one communication stream per communicator group (and one for point-to-point sends) unless
     * --comm-streams is given (or ASTRA-sim compatibility: one, as ASTRA-sim): NCCL runs each
     * communicator's kernels on its own stream (docs/sim.md "Streams") */
    if (!c->astra_compat)
        etk_run_opts_defaults(cl, &c->o);
    if (c->n_slow) {
        free(speed_buf);
        speed_buf = malloc((size_t)n_ranks * sizeof *speed_buf);
        if (!speed_buf)
            return cli_usage_error(cmd, "out of memory");
        for (uint32_t r = 0; r < n_ranks; r++)
            speed_buf[r] = 1.0;
        for (uint32_t i = 0; i < c->n_slow; i++) {
            if (c->slow_rank[i] >= n_ranks)
                return cli_usage_error(cmd, "--slow-rank %u:%g: rank %u does not exist (the "
                                            "workload has ranks 0..%u)", c->slow_rank[i],
                                       c->slow_factor[i], c->slow_rank[i], n_ranks - 1);
            speed_buf[c->slow_rank[i]] = c->slow_factor[i];
        }
        c->o.rank_speed = speed_buf;
        c->o.n_rank_speed = n_ranks;
    }
    return 0;
}

int sim_cli_cluster(const char *cmd, sim_cli *c, uint32_t n_ranks, etk_cluster *out)
{
    etk_error err = {0};
    int rc;
    /* outputs are checked before the simulation runs (issue #18) */
    if ((c->timeline && etk_output_check(c->timeline, &err)) || (c->output && etk_output_check(c->output, &err)) ||
        (c->html && etk_output_check(c->html, &err))) /* --html was found only after the run */
        return sim_cli_fail(cmd, &err);
    if (c->astra_net || c->astra_sys) {
        if (!c->astra_net || !c->astra_sys)
            return cli_usage_error(cmd, "--astra-network and --astra-system go together");
        if (c->cluster)
            return cli_usage_error(cmd, "give either --cluster or the ASTRA-sim inputs, not both");
        rc = etk_cluster_load_astra(c->astra_net, c->astra_sys, out, &err);
    } else if (!c->cluster) {
        return cli_usage_error(cmd, "no cluster: give --cluster NAME|FILE (presets: dgx-a100, "
                                    "dgx-h100, hgx-h200, dgx-b200, dgx-h100-superpod, llama3) or --astra-network and "
                                    "--astra-system");
    } else if (is_file(c->cluster) || strstr(c->cluster, ".yaml") || strstr(c->cluster, ".yml")) {
        if (c->nodes_set || c->gpus)
            return cli_usage_error(cmd, "%s applies to presets; %s sets its own sizes",
                                   c->nodes_set ? "--nodes" : "--gpus", c->cluster);
        rc = etk_cluster_load(c->cluster, out, &err);
    } else {
        if (c->gpus && c->nodes_set && c->nodes != 1)
            return cli_usage_error(cmd, "--gpus N is one node of N GPUs: drop --nodes %llu (whole "
                                        "nodes) or --gpus", (unsigned long long)c->nodes);
        /* fewer ranks than a node: one node with as many GPUs as ranks */
        uint32_t gpus = c->gpus ? c->gpus : !c->nodes_set && n_ranks && n_ranks < 8 ? n_ranks : 0;
        uint32_t nodes = c->nodes_set ? (uint32_t)c->nodes : gpus ? 1 : (n_ranks + 7) / 8;
        rc = etk_cluster_preset_gpus(c->cluster, nodes ? nodes : 1, gpus, out, &err);
    }
    if (rc)
        return cli_fail(cmd, &err);
    if (out->warnings[0] && !c->o.quiet)
        fprintf(stderr, "etkit %s: warning: %s\n", cmd, out->warnings);
    if (c->gpu) { /* etkit run --gpu NAME: the cluster's GPU replaced */
        etk_gpu g;
        if (etk_gpu_preset(c->gpu, &g, &err) != 0)
            return cli_fail(cmd, &err);
        if (strcmp(g.name, out->gpu.name) && !c->o.quiet)
            fprintf(stderr, "etkit %s: note: cluster %s with its GPU %s replaced by %s (--gpu)\n", cmd,
                    out->name, out->gpu.name, g.name);
        out->gpu = g;
    }
    if (c->astra_compat)
        out->astra_compat = true;
    if (c->eff_set)
        out->compute_efficiency = c->eff;
    if (c->precision)
        out->precision = (etk_precision)etk_precision_parse(c->precision);
    if (c->net_model)
        out->net_model = strcmp(c->net_model, "flow") == 0 ? ETK_NET_FLOW : ETK_NET_ANALYTICAL;
    /* a preset's flow model simulates every rank (no folding): above ETK_RUN_FLOW_AUTO_MAX_RANKS that
     * costs minutes and tens of GB (llama3-405b on 16,384 GPUs: > 23 GB), so unless asked for it
     * the analytical model (folded) is used, with a warning saying what is lost */
    if (!c->net_model && !c->n_link_factor && etk_run_flow_auto(out, n_ranks)) {
        if (!c->o.quiet)
            fprintf(stderr, "etkit %s: warning: cluster %s: the flow network model simulates every rank "
                            "(no folding); with %u ranks (more than %u) the analytical model is used instead, "
                            "which does not model contention or the fabric's oversubscription "
                            "(--net-model flow forces the flow model)\n",
                    cmd, out->name, n_ranks, ETK_RUN_FLOW_AUTO_MAX_RANKS);
    }
    rc = etk_cluster_check(out, n_ranks, &err);
    if (rc)
        return cli_fail(cmd, &err);
    if (c->n_link_factor && out->astra_compat)
        return cli_usage_error(cmd, "--link-factor does not apply in ASTRA-sim compatibility mode "
                                    "(it reproduces ASTRA-sim's uniform links)");
    for (uint32_t i = 0; i < c->n_link_factor; i++)
        if (etk_link_factor_parse(out, c->link_factor[i], &err))
            return cli_usage_error(cmd, "%s", err.msg);
    if (rc)
        return cli_fail(cmd, &err);
    return compute_setup(cmd, c, n_ranks, out);
}

int sim_cli_fail(const char *cmd, const etk_error *err)
{
    fprintf(stderr, "etkit %s: error: %s\n", cmd, err->msg);
    return strncmp(err->msg, "deadlock", 8) == 0 ? 1 : 2;
}

/* --html: the page from the JSON report and the timeline (--timeline's file, else a temporary
 * one), as `etkit report` makes it */
static int html_report(const char *cmd, const sim_cli *c, etk_sim *s, const etk_sim_result *r)
{
    etk_error err = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m || etk_sim_print_json(r, m) != 0 || fclose(m) != 0) {
        free(buf);
        fprintf(stderr, "etkit %s: error: %s: out of memory for the report\n", cmd, c->html);
        return 2;
    }
    json_error_t je;
    json_t *run = json_loadb(buf, len, 0, &je), *tl = NULL;
    free(buf);
    if (!run) {
        fprintf(stderr, "etkit %s: error: %s: the JSON report does not parse: %s\n", cmd, c->html, je.text);
        return 2;
    }
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/etkit-timeline-XXXXXX", dir && *dir ? dir : "/tmp");
    if (c->timeline)
        tl = json_load_file(c->timeline, 0, &je);
    else {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            fprintf(stderr, "etkit %s: error: %s: cannot create a temporary file for the timeline\n", cmd, tmp);
            json_decref(run);
            return 2;
        }
        close(fd);
        if (etk_sim_write_timeline(s, tmp, &err) == 0)
            tl = json_load_file(tmp, 0, &je);
        unlink(tmp);
    }
    if (!tl) {
        fprintf(stderr, "etkit %s: error: %s: the timeline could not be %s (%s)\n", cmd, c->html,
                err.msg[0] ? "written" : "read", err.msg[0] ? err.msg : je.text);
        json_decref(run);
        return 2;
    }
    int rc = report_html_file(cmd, c->html, run, tl, c->html);
    json_decref(run);
    json_decref(tl);
    return rc;
}

int sim_cli_report(const char *cmd, const sim_cli *c, etk_sim *s)
{
    etk_error err = {0};
    etk_sim_result *r = (etk_sim_result *)etk_sim_result_get(s);
    /* the version and the command line, quoted where needed, for --json and --csv */
    static char cmdline[4096];
    size_t l = 0;
    cmdline[0] = 0;
    for (int i = 0; i < c->argc && l + 8 < sizeof cmdline; i++) {
        const char *a = c->argv[i];
        bool q = !a[0] || strpbrk(a, " \t\"'\\$*?;&|<>()") != NULL;
        l += (size_t)snprintf(cmdline + l, sizeof cmdline - l, "%s%s%s%s", i ? " " : "etkit ", q ? "'" : "", a,
                              q ? "'" : "");
    }
    if (l >= sizeof cmdline)
        l = sizeof cmdline - 1;
    r->command_line = c->argc ? cmdline : NULL;
    r->etkit_version = ETK_VERSION;
    if (r->warnings && r->warnings[0] && !c->o.quiet)
        fprintf(stderr, "etkit %s: warning: %s\n", cmd, r->warnings);
    /* MFU past 100% cannot be: --model-flops 1e30 printed "MFU 151879834820254112.0%" without a
     * word (issue #18's --model-flops inf / nan, one step further) */
    if (c->mflops_user && r->mfu > 1 && !c->o.quiet)
        fprintf(stderr,
                "etkit %s: warning: --model-flops %.4g gives MFU %.4g%%, past 100%%: more than the %u GPUs can do "
                "at their %.0f TFLOP/s %s peak in the simulated step of %.4g s (%.4g FLOPs); --model-flops is "
                "the model's FLOPs over all ranks for one step\n",
                cmd, r->flops_per_step, 100 * r->mfu, r->n_ranks, r->peak_tflops,
                etk_precision_name(r->peak_precision), r->step_ns / 1e9,
                r->peak_tflops * 1e12 * r->n_ranks * (r->step_ns / 1e9));
    if (c->timeline && etk_sim_write_timeline(s, c->timeline, &err) != 0)
        return cli_fail(cmd, &err);
    FILE *f = stdout;
    char *tmp = NULL;
    struct stat st;
    /* a device or pipe (/dev/stdout): write in place; a file: tmp name, then rename */
    bool special = c->output && stat(c->output, &st) == 0 && !S_ISREG(st.st_mode);
    if (special) {
        f = fopen(c->output, "w");
        if (!f) {
            fprintf(stderr, "etkit %s: error: %s: cannot open for writing\n", cmd, c->output);
            return 2;
        }
    } else if (c->output) {
        f = etk_file_begin(c->output, &tmp, &err);
        if (!f)
            return cli_fail(cmd, &err);
    }
    if (c->fmt == 1)
        etk_sim_print_json(r, f);
    else if (c->fmt == 2)
        etk_sim_print_csv(r, f);
    else
        etk_sim_print_text(r, f);
    if (c->timeline && c->fmt == 0)
        fprintf(f, "\ntimeline       %s (%llu events; open in ui.perfetto.dev)\n", c->timeline,
                (unsigned long long)etk_sim_timeline_events(s));
    if (special)
        fclose(f);
    else if (c->output && etk_file_commit(f, tmp, c->output, &err) != 0)
        return cli_fail(cmd, &err);
    return c->html ? html_report(cmd, c, s, r) : 0;
}

void sim_cli_stage_detect(const char *cmd, sim_cli *c, const etk_workload *wl)
{
    const etk_trace *t = NULL;
    for (uint32_t r = 0; wl && r < wl->n_ranks && !t; r++)
        t = wl->ranks[r];
    bool stage = false;
    for (uint32_t i = 0; t && i < t->n_meta_attr && !stage; i++) {
        const etk_attr *a = &t->meta_attr[i];
        stage = a->name && !strcmp(a->name, "schema") && a->kind == ETK_ATTR_STRING &&
                a->v.s && !strcmp(a->v.s, "symbolic_tensor_network");
    }
    if (!stage || c->stage_set)
        return;
    c->o.stage_units = true;
    if (!c->o.quiet)
        fprintf(stderr, "%s: note: %s is a STAGE trace (GlobalMetadata schema "
                "\"symbolic_tensor_network\"): its sizes are read as fp16 elements (x2 bytes) and "
                "its matmul num_ops as multiply-accumulates (x2 FLOPs), as --stage-units; "
                "--no-stage-units reads them as they are\n", cmd, wl->prefix);
}
