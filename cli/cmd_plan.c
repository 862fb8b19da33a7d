/* cmd_plan.c — `etkit plan`: which parallel plan (and which cluster) is fastest for a model and
 * batch. Enumerates the plans (src/plan/), prunes the invalid ones, those over memory and those
 * whose lower bound (compute, communication) cannot reach the top k, simulates the rest folded as `etkit run`
 * does and prints the ranked table; --csv / --json list every candidate with its fate. -j N
 * threads; under mpirun the processes share the work (cli/plan_mpi.c). docs/plan.md. */
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "etkit/compute.h"
#include "etkit/plan.h"
#include "etkit/progress.h"
#include "plan_html.h"
#include "plan_mpi.h"

static void help(void)
{
    printf("usage: etkit plan --model M --global-batch G --cluster C[,C2...] --nodes N[,N2...] [options]\n\n"
           "Searches the parallel plans of a model on a cluster: TP, CP, PP, VPP, DP, EP, micro-batch,\n"
           "ZeRO stage (3: FSDP), recompute and pipeline schedule (inference: TP, PP, EP, micro-batches,\n"
           "DP as replicas). Plans the generator refuses are pruned with its message, plans whose memory\n"
           "estimate exceeds the GPU's HBM x (1 - margin) and plans whose lower bound (compute, or one\n"
           "group's communication) cannot reach the top k are pruned; the rest are simulated (folded,\n"
           "as 'etkit run') and ranked.\n"
           "Several clusters and node counts are searched in one run (a sweep). docs/plan.md.\n\n"
           "space (a given flag fixes the choice; model and plan flags are those of 'etkit gen'):\n"
           "  --model M | --model-file F, --seq S, --precision P, --attention, --mode inference,\n"
           "  --prompt-len P, --decode-steps N ...   the workload, as 'etkit gen'\n"
           "  --global-batch G         sequences per step (inference: requests over all replicas)\n"
           "  --tp N --cp N --pp N --vpp N --dp N --ep N --micro-batch N --zero Z | --fsdp\n"
           "  --recompute none|selective|full --schedule S --micro-batches N (inference)\n"
           "  --max-tp N --max-pp N --max-vpp N --max-cp N --max-ep N --max-micro-batch N\n"
           "                           limits (defaults: TP a node, PP the layers, VPP 8, CP down to\n"
           "                           4096 tokens per rank, micro-batch 8)\n"
           "  --tp-across-nodes        allow TP groups larger than a node\n"
           "  --no-recompute           only plans without activation recompute\n"
           "  --no-partial-recompute   full recompute of every layer only (by default also of N of each\n"
           "                           pipeline stage's c layers, N ~ c/4, c/2, 3c/4, the least that\n"
           "                           fits kept; --recompute-stage-layers N fixes N)\n"
           "  --no-sp                  sequence parallelism off (by default on with every TP > 1)\n"
           "  --even-stages            do not try one layer fewer on the first and last pipeline stage\n"
           "                           (tried when the layers + 2 split evenly over the stages)\n"
           "  --schedules LIST         pipeline schedules to try (default 1f1b,zb-h1; also gpipe)\n"
           "  --zero-stages LIST       ZeRO stages to try (default 1,3; 0 and 2 too)\n"
           "cluster:\n"
           "  -c, --cluster LIST       presets or cluster YAML files, comma-separated (default dgx-h100)\n"
           "  -n, --nodes LIST         node counts, comma-separated (presets)\n"
           "  --compute model|roofline time GPU ops by the compute model (default) or the roofline\n"
           "  --gpu-hour-cost USD | NAME=USD,...  price of one GPU hour (per cluster name)\n"
           "search and output:\n"
           "  --rank-by step|tokens|mfu|cost  (default step; tokens and mfu across a sweep)\n"
           "  --top K                  plans in the table, kept exact by branch and bound (default 10)\n"
           "  --memory-margin F        HBM fraction kept free (default 0.1)\n"
           "  -j, --jobs N             worker threads (default 1); under mpirun the processes share the\n"
           "                           work and each runs N threads (mpirun -np 2 ... -j 2: 4 workers)\n"
           "  --csv FILE, --json FILE  every candidate (simulated or pruned, with the reason); '-' stdout\n"
           "  --html FILE              a page: the ranked table, throughput against memory per GPU with\n"
           "                           the Pareto front, pruned plans by reason (docs/report.md)\n"
           "  -q, --quiet              no progress line (it is shown only when stderr is a terminal)\n\n"
           "examples:\n"
           "  etkit plan --model llama3-70b --global-batch 512 --cluster dgx-h100 --nodes 128 -j 2\n"
           "  etkit plan --model llama3-8b --global-batch 256 --cluster dgx-h100,hgx-h200,dgx-b200 --nodes 4,8\n"
           "             --rank-by cost --gpu-hour-cost dgx-h100=2.5,hgx-h200=3.2,dgx-b200=5 --csv plans.csv\n"
           "  mpirun -np 4 etkit plan --model llama3-405b --global-batch 2048 --cluster dgx-h100 --nodes 2048 --tp 8\n");
}

/* flags that fix one choice of the space (consumed here, not by the generator) */
static const char *const fixed_flags[] = {"tp", "cp", "pp", "vpp", "dp", "ep", "micro-batch", "zero", "recompute",
                                          "schedule", "global-batch", "micro-batches", "fsdp", "sp", "batch", NULL};

static int parse_u32(const char *cmd, const char *opt, const char *v, uint32_t *out)
{
    uint64_t x;
    if (cli_parse_u64(cmd, opt, v, &x))
        return 2;
    if (!x || x > UINT32_MAX)
        return cli_usage_error(cmd, "%s wants a positive integer below 2^32, got '%s'", opt, v);
    *out = (uint32_t)x;
    return 0;
}

static int set_fixed(const char *cmd, etk_plan_space *sp, const char *name, const char *v)
{
    char opt[40];
    snprintf(opt, sizeof opt, "--%s", name);
    if (!strcmp(name, "fsdp")) {
        sp->zero = 3;
        return 0;
    }
    if (!strcmp(name, "sp"))
        return cli_usage_error(cmd, "--sp: the search turns sequence parallelism on with every TP > 1 "
                                    "(--no-sp turns it off)");
    if (!strcmp(name, "batch"))
        return cli_usage_error(cmd, "--batch: give --global-batch (requests over all replicas); the search "
                                    "divides it by the replicas");
    if (!v)
        return cli_usage_error(cmd, "option '%s' needs a value", opt);
    if (!strcmp(name, "zero")) {
        if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
            return cli_usage_error(cmd, "--zero wants 0, 1, 2 or 3, got '%s'", v);
        sp->zero = v[0] - '0';
        return 0;
    }
    if (!strcmp(name, "recompute")) {
        static const char *const r[] = {"none", "selective", "full"};
        for (int i = 0; i < 3; i++)
            if (!strcmp(v, r[i])) {
                sp->recompute = i;
                return 0;
            }
        return cli_usage_error(cmd, "--recompute wants none, selective or full, got '%s'", v);
    }
    if (!strcmp(name, "schedule")) {
        static const char *const s[] = {"1f1b", "gpipe", "zb-h1"};
        for (int i = 0; i < 3; i++)
            if (!strcmp(v, s[i])) {
                sp->sched_mask = 1u << i;
                return 0;
            }
        return cli_usage_error(cmd, "--schedule wants 1f1b, gpipe or zb-h1, got '%s'", v);
    }
    uint32_t *dst = !strcmp(name, "tp")             ? &sp->tp
                    : !strcmp(name, "cp")           ? &sp->cp
                    : !strcmp(name, "pp")           ? &sp->pp
                    : !strcmp(name, "vpp")          ? &sp->vpp
                    : !strcmp(name, "dp")           ? &sp->dp
                    : !strcmp(name, "ep")           ? &sp->ep
                    : !strcmp(name, "micro-batch")  ? &sp->micro_batch
                    : !strcmp(name, "micro-batches") ? &sp->infer_mb
                                                    : &sp->global_batch;
    return parse_u32(cmd, opt, v, dst);
}

/* "a,b,c" names into a mask by their index in names[] */
static int parse_mask(const char *cmd, const char *opt, const char *v, const char *const *names, uint32_t *mask)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    *mask = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; names[i]; i++)
            if (!strcmp(t, names[i]))
                k = i;
        if (k < 0)
            return cli_usage_error(cmd, "%s: unknown '%s' (one of: %s%s%s%s%s)", opt, t, names[0],
                                   names[1] ? ", " : "", names[1] ? names[1] : "", names[2] ? ", " : "",
                                   names[2] ? names[2] : "");
        *mask |= 1u << k;
    }
    if (!*mask)
        return cli_usage_error(cmd, "%s: empty list", opt);
    return 0;
}

/* progress on a terminal (etkit/progress.h): plans decided / total, rate, time left, and the best
 * plan so far in the line's label. The search calls back one call at a time (under its lock), so
 * the label is rewritten only between draws. */
typedef struct {
    etk_progress p;
    bool quiet, begun;
    char what[128];
    const etk_plan_row *best;
} progress_state;

static void progress(void *ctx, size_t done, size_t total, const etk_plan_row *best)
{
    progress_state *ps = ctx;
    if (!ps->begun) {
        snprintf(ps->what, sizeof ps->what, "plans decided");
        etk_progress_begin(&ps->p, stderr, ps->quiet, ps->what, total);
        ps->begun = true;
    }
    if (best && best != ps->best) {
        ps->best = best;
        snprintf(ps->what, sizeof ps->what, "plans decided (best %.3f ms: tp %u cp %u pp %u dp %u)",
                 best->step_ns / 1e6, best->plan.tp, best->plan.cp, best->plan.pp, best->plan.dp);
    }
    etk_progress_update(&ps->p, done);
}

static int write_out(const char *cmd, const char *path, const etk_plan_space *sp, const etk_plan_job *jobs,
                     uint32_t n_jobs, const etk_plan_opts *o, const etk_plan_result *r, bool json)
{
    etk_error err = {0};
    if (!strcmp(path, "-")) {
        if (json)
            etk_plan_print_json(sp, jobs, n_jobs, o, r, stdout);
        else
            etk_plan_print_csv(sp, jobs, r, stdout);
        return fflush(stdout) ? cli_usage_error(cmd, "writing stdout failed") : 0;
    }
    char *tmp = NULL;
    FILE *f = etk_file_begin(path, &tmp, &err);
    if (!f)
        return cli_fail(cmd, &err);
    if (json)
        etk_plan_print_json(sp, jobs, n_jobs, o, r, f);
    else
        etk_plan_print_csv(sp, jobs, r, f);
    if (etk_file_commit(f, tmp, path, &err))
        return cli_fail(cmd, &err);
    return 0;
}

/* the page (cli/plan_html.c) from the document of --json, read back */
static int write_html(const char *cmd, const char *path, const etk_plan_space *sp, const etk_plan_job *jobs,
                      uint32_t n_jobs, const etk_plan_opts *o, const etk_plan_result *r)
{
    FILE *t = tmpfile();
    if (!t || etk_plan_print_json(sp, jobs, n_jobs, o, r, t) || fflush(t) || fseek(t, 0, SEEK_SET)) {
        if (t)
            fclose(t);
        return cli_usage_error(cmd, "--html %s: no temporary file for the plans' JSON", path);
    }
    json_error_t je;
    json_t *doc = json_loadf(t, 0, &je);
    fclose(t);
    if (!doc)
        return cli_usage_error(cmd, "--html %s: the plans' JSON does not read back: %s", path, je.text);
    int rc = plan_html_file(cmd, path, doc);
    json_decref(doc);
    return rc;
}

/* nothing could be simulated: say why and what to relax */
static int impossible(const char *cmd, const etk_plan_space *sp, const etk_plan_result *r, const etk_plan_opts *o)
{
    if (!r->n_rows) {
        fprintf(stderr, "etkit %s: error: no candidate plan: --global-batch %u must be divisible by the data-parallel "
                        "degree (GPUs / (TP x CP x PP)) of some plan within the fixed choices and limits; relax: a "
                        "global batch with more factors of two, other node counts, or fewer fixed flags\n",
                cmd, sp->global_batch);
        return 2;
    }
    const etk_plan_row *least = NULL;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].status == ETK_PLAN_MEMORY && (!least || r->rows[i].mem_bytes < least->mem_bytes))
            least = &r->rows[i];
    if (least) {
        char flags[320];
        etk_plan_flags(sp, &least->plan, flags, sizeof flags);
        fprintf(stderr, "etkit %s: error: no plan fits in memory (%zu over memory, %zu invalid): the smallest "
                        "estimate is %s: %s; relax: more nodes, a GPU with more memory, --memory-margin below %g, or "
                        "allow recompute / ZeRO-3 / more PP if fixed\n",
                cmd, r->n_memory, r->n_invalid, flags, least->reason, o->memory_margin);
        return 2;
    }
    const etk_plan_row *w = &r->rows[0];
    fprintf(stderr, "etkit %s: error: no valid plan among %zu candidates (%zu invalid, %zu failed); the first: %s\n",
            cmd, r->n_rows, r->n_invalid, r->n_failed, w->reason);
    return 2;
}

int cmd_plan(int argc, char **argv)
{
    static const char *cmd = "plan";
    plan_mpi_mark(PLAN_MPI_MAIN);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return 0;
        }
#ifdef __GLIBC__
    /* hundreds of simulations each allocate and free a workload of tens of MB: keep the memory
     * in the heap rather than mapping and unmapping it each time (glibc's dynamic threshold
     * lets it go back to mmap); measured: system time 0.96 -> 0.15 s on a 44-plan search */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 << 20);
#endif
    etk_plan_space sp;
    etk_plan_space_init(&sp);
    etk_error err = {0};
    int rc = 0;
    /* 1. the flags that fix a choice; the others go on */
    char **pass = calloc((size_t)argc + 1, sizeof *pass);
    char **rest = calloc((size_t)argc + 2, sizeof *rest);
    if (!pass || !rest) {
        free(pass);
        free(rest);
        return 2;
    }
    int np = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        bool fixed = false;
        if (a[0] == '-' && a[1] == '-')
            for (int k = 0; fixed_flags[k] && !fixed; k++) {
                size_t l = strlen(fixed_flags[k]);
                if (strncmp(a + 2, fixed_flags[k], l) || (a[2 + l] && a[2 + l] != '='))
                    continue;
                fixed = true;
                bool takes = strcmp(fixed_flags[k], "fsdp") && strcmp(fixed_flags[k], "sp");
                const char *v = a[2 + l] == '=' ? a + 3 + l : takes && i + 1 < argc ? argv[++i] : NULL;
                rc = set_fixed(cmd, &sp, fixed_flags[k], takes ? v : NULL);
            }
        if (!fixed)
            pass[np++] = argv[i];
    }
    /* 2. the workload (gen flags), then ours */
    int n_rest = 0;
    if (!rc && etk_gen_parse_args(np, pass, &sp.base, &n_rest, rest + 1, &err))
        rc = cli_fail(cmd, &err);
    rest[0] = argv[0];
    enum { O_HOUR = 2000, O_RANK, O_TOP, O_MARGIN, O_MAXTP, O_MAXPP, O_MAXVPP, O_MAXCP, O_MAXEP, O_MAXMB, O_TPX,
           O_NOREC, O_SCHEDS, O_ZEROS, O_CSV, O_JSON, O_COMPUTE, O_HTML, O_EVEN, O_NOPART, O_NOSP };
    static const struct option lo[] = {
        {"cluster", required_argument, 0, 'c'}, {"nodes", required_argument, 0, 'n'},
        {"jobs", required_argument, 0, 'j'}, {"quiet", no_argument, 0, 'q'},
        {"gpu-hour-cost", required_argument, 0, O_HOUR}, {"rank-by", required_argument, 0, O_RANK},
        {"top", required_argument, 0, O_TOP}, {"memory-margin", required_argument, 0, O_MARGIN},
        {"max-tp", required_argument, 0, O_MAXTP}, {"max-pp", required_argument, 0, O_MAXPP},
        {"max-vpp", required_argument, 0, O_MAXVPP}, {"max-cp", required_argument, 0, O_MAXCP},
        {"max-ep", required_argument, 0, O_MAXEP}, {"max-micro-batch", required_argument, 0, O_MAXMB},
        {"tp-across-nodes", no_argument, 0, O_TPX}, {"no-recompute", no_argument, 0, O_NOREC},
        {"schedules", required_argument, 0, O_SCHEDS}, {"zero-stages", required_argument, 0, O_ZEROS},
        {"csv", required_argument, 0, O_CSV}, {"json", required_argument, 0, O_JSON},
        {"compute", required_argument, 0, O_COMPUTE}, {"html", required_argument, 0, O_HTML},
        {"even-stages", no_argument, 0, O_EVEN}, {"no-partial-recompute", no_argument, 0, O_NOPART},
        {"no-sp", no_argument, 0, O_NOSP}, {0, 0, 0, 0}};
    etk_plan_opts o;
    etk_plan_opts_defaults(&o);
    const char *clusters = "dgx-h100", *nodes = NULL, *hour = NULL, *csv = NULL, *json = NULL, *html = NULL;
    bool quiet = false, roofline = false;
    optind = 1;
    opterr = 0;
    int opt;
    while (!rc && (opt = getopt_long(n_rest + 1, rest, ":c:n:j:q", lo, NULL)) != -1) {
        switch (opt) {
        case 'c': clusters = optarg; break;
        case 'n': nodes = optarg; break;
        case 'j': rc = parse_u32(cmd, "--jobs", optarg, &o.threads); break;
        case 'q': quiet = true; break;
        case O_HOUR: hour = optarg; break;
        case O_RANK: {
            static const char *const r[] = {"step", "tokens", "mfu", "cost"};
            o.rank_by = -1;
            for (int i = 0; i < 4; i++)
                if (!strcmp(optarg, r[i]))
                    o.rank_by = i;
            if (o.rank_by < 0)
                rc = cli_usage_error(cmd, "--rank-by wants step, tokens, mfu or cost, got '%s'", optarg);
            break;
        }
        case O_TOP: rc = parse_u32(cmd, "--top", optarg, &o.top); break;
        case O_MARGIN:
            if (cli_parse_double(cmd, "--memory-margin", optarg, &o.memory_margin))
                rc = 2;
            else if (!(o.memory_margin >= 0 && o.memory_margin < 1))
                rc = cli_usage_error(cmd, "--memory-margin wants a fraction in [0, 1), got '%s'", optarg);
            break;
        case O_MAXTP: rc = parse_u32(cmd, "--max-tp", optarg, &sp.max_tp); break;
        case O_MAXPP: rc = parse_u32(cmd, "--max-pp", optarg, &sp.max_pp); break;
        case O_MAXVPP: rc = parse_u32(cmd, "--max-vpp", optarg, &sp.max_vpp); break;
        case O_MAXCP: rc = parse_u32(cmd, "--max-cp", optarg, &sp.max_cp); break;
        case O_MAXEP: rc = parse_u32(cmd, "--max-ep", optarg, &sp.max_ep); break;
        case O_MAXMB: rc = parse_u32(cmd, "--max-micro-batch", optarg, &sp.max_micro_batch); break;
        case O_TPX: sp.tp_across_nodes = true; break;
        case O_EVEN: sp.no_uneven_ends = true; break;
        case O_NOREC: sp.recompute = ETK_RECOMPUTE_NONE; break;
        case O_NOPART: sp.no_partial_recompute = true; break;
        case O_NOSP: sp.no_sp = true; break;
        case O_SCHEDS: {
            static const char *const s[] = {"1f1b", "gpipe", "zb-h1", NULL};
            rc = parse_mask(cmd, "--schedules", optarg, s, &sp.sched_mask);
            break;
        }
        case O_ZEROS: {
            static const char *const z[] = {"0", "1", "2", "3", NULL};
            rc = parse_mask(cmd, "--zero-stages", optarg, z, &sp.zero_mask);
            break;
        }
        case O_CSV: csv = optarg; break;
        case O_JSON: json = optarg; break;
        case O_HTML: html = optarg; break;
        case O_COMPUTE:
            if (!strcmp(optarg, "roofline") || !strcmp(optarg, "model"))
                roofline = !strcmp(optarg, "roofline");
            else
                rc = cli_usage_error(cmd, "--compute wants 'model' or 'roofline', got '%s'", optarg);
            break;
        default: rc = cli_getopt_error(cmd, opt, rest); break;
        }
    }
    if (!rc && optind < n_rest + 1)
        rc = cli_usage_error(cmd, "unexpected argument '%s'", rest[optind]);
    free(pass);
    free(rest);
    if (rc)
        return rc;
    if (!sp.base.model_set)
        return cli_usage_error(cmd, "no model: give --model NAME (etkit models) or --model-file FILE");
    if (!sp.global_batch)
        return cli_usage_error(cmd, "no batch: give --global-batch G (sequences per step; inference: requests)");
    if (sp.base.mode == ETK_GEN_MODE_INFERENCE && (sp.cp > 1 || sp.vpp > 1 || sp.micro_batch || sp.zero >= 0 ||
                                                   sp.recompute > 0))
        return cli_usage_error(cmd, "--mode inference searches TP, PP, EP and micro-batches: drop the training flags");
    if ((sp.base.recompute_layers || sp.base.recompute_stage_layers) && sp.recompute >= 0 &&
        sp.recompute != ETK_RECOMPUTE_FULL)
        return cli_usage_error(cmd, "--%s %u is partial full recompute: not with --recompute %s / --no-recompute",
                               sp.base.recompute_layers ? "recompute-num-layers" : "recompute-stage-layers",
                               sp.base.recompute_layers ? sp.base.recompute_layers : sp.base.recompute_stage_layers,
                               sp.recompute ? "selective" : "none");
    if ((csv && etk_output_check(csv, &err)) || (json && etk_output_check(json, &err)) ||
        (html && etk_output_check(html, &err)))
        return cli_fail(cmd, &err);

    /* 3. the jobs: every cluster x node count */
    etk_plan_job *jobs = NULL;
    etk_compute_params *comp = NULL;
    uint32_t n_jobs = 0;
    char cbuf[1024], nbuf[512];
    snprintf(cbuf, sizeof cbuf, "%s", clusters);
    snprintf(nbuf, sizeof nbuf, "%s", nodes ? nodes : "");
    uint32_t node_list[64], n_nodes = 0;
    for (char *s = NULL, *t = strtok_r(nbuf, ",", &s); t; t = strtok_r(NULL, ",", &s)) {
        if (n_nodes == 64)
            return cli_usage_error(cmd, "--nodes: at most 64 node counts");
        if ((rc = parse_u32(cmd, "--nodes", t, &node_list[n_nodes++])))
            return rc;
    }
    for (char *s = NULL, *t = strtok_r(cbuf, ",", &s); t && !rc; t = strtok_r(NULL, ",", &s)) {
        /* as run/sim: an existing file that is not a folder is a cluster file too (a FIFO or a
         * file without .yaml was taken for a preset name: "--cluster fifo is a preset") */
        struct stat cst;
        bool file = strchr(t, '/') || strstr(t, ".yaml") || strstr(t, ".yml") ||
                    (stat(t, &cst) == 0 && !S_ISDIR(cst.st_mode));
        if (!file && !n_nodes) {
            rc = cli_usage_error(cmd, "--cluster %s is a preset: give --nodes N (a list sweeps node counts)", t);
            break;
        }
        if (file && n_nodes) {
            rc = cli_usage_error(cmd, "--nodes applies to presets; %s sets its own size", t);
            break;
        }
        for (uint32_t k = 0; k < (file ? 1 : n_nodes) && !rc; k++) {
            etk_plan_job *nj = realloc(jobs, (n_jobs + 1) * sizeof *jobs);
            etk_compute_params *nc = realloc(comp, (n_jobs + 1) * sizeof *comp);
            if (nj)
                jobs = nj;
            if (nc)
                comp = nc;
            if (!nj || !nc) {
                rc = cli_usage_error(cmd, "out of memory");
                break;
            }
            etk_plan_job *j = &jobs[n_jobs];
            memset(j, 0, sizeof *j);
            if ((file ? etk_cluster_load(t, &j->cluster, &err) : etk_cluster_preset(t, node_list[k], &j->cluster, &err))) {
                rc = cli_fail(cmd, &err);
                break;
            }
            j->gpus_per_node = j->cluster.n_dims > 1 ? j->cluster.dims[0].size : j->cluster.n_npus;
            if (file)
                snprintf(j->label, sizeof j->label, "%.60s", t);
            else
                snprintf(j->label, sizeof j->label, "%.40s x %u", t, node_list[k]);
            if (!roofline && j->cluster.compute_efficiency == 1.0) {
                etk_compute_defaults(&j->cluster.gpu, &comp[n_jobs]);
                j->compute = NULL; /* pointer set below, after the last realloc */
            }
            n_jobs++;
        }
    }
    if (!rc && hour) { /* one price, or NAME=USD per cluster name (the preset or file given) */
        char hb[512];
        snprintf(hb, sizeof hb, "%s", hour);
        for (char *s = NULL, *t = strtok_r(hb, ",", &s); t && !rc; t = strtok_r(NULL, ",", &s)) {
            char *eq = strchr(t, '=');
            double v;
            if (cli_parse_double(cmd, "--gpu-hour-cost", eq ? eq + 1 : t, &v) || !(v > 0)) {
                rc = rc ? rc : cli_usage_error(cmd, "--gpu-hour-cost wants USD > 0 or NAME=USD, got '%s'", t);
                break;
            }
            bool hit = false;
            for (uint32_t i = 0; i < n_jobs; i++) {
                if (eq) {
                    *eq = 0;
                    size_t l = strlen(t);
                    bool m = !strncmp(jobs[i].label, t, l) && (jobs[i].label[l] == 0 || jobs[i].label[l] == ' ');
                    *eq = '=';
                    if (!m)
                        continue;
                }
                jobs[i].gpu_hour_usd = v;
                hit = true;
            }
            if (!hit)
                rc = cli_usage_error(cmd, "--gpu-hour-cost %s: no such cluster in --cluster %s", t, clusters);
        }
    }
    for (uint32_t i = 0; !rc && i < n_jobs; i++) {
        if (!roofline && jobs[i].cluster.compute_efficiency == 1.0)
            jobs[i].compute = &comp[i];
        if (sp.tp > jobs[i].gpus_per_node && !sp.tp_across_nodes)
            rc = cli_usage_error(cmd, "--tp %u is larger than a node of %s (%u GPUs): give --tp-across-nodes to "
                                      "search TP groups across nodes", sp.tp, jobs[i].label, jobs[i].gpus_per_node);
    }
    if (!rc && o.rank_by == ETK_PLAN_RANK_COST)
        for (uint32_t i = 0; i < n_jobs && !rc; i++)
            if (!(jobs[i].gpu_hour_usd > 0))
                rc = cli_usage_error(cmd, "--rank-by cost: give --gpu-hour-cost for %s", jobs[i].label);

    /* 4. the search: threads, or the MPI processes */
    etk_plan_result res;
    memset(&res, 0, sizeof res);
    int mrank = 0, msize = 1;
    bool mpi = !rc && plan_mpi_launched();
    plan_mpi_mark(PLAN_MPI_PARSED);
    if (mpi && (mrank = plan_mpi_early_rank()) < 0) /* else plan_mpi_search calls MPI_Init */
        rc = plan_mpi_init(&mrank, &msize);
    progress_state ps;
    memset(&ps, 0, sizeof ps);
    ps.quiet = quiet || mrank != 0;
    o.progress = progress;
    o.progress_ctx = &ps;
    if (!rc) {
        int src = mpi ? plan_mpi_search(&sp, jobs, n_jobs, &o, &res, &err) : etk_plan_search(&sp, jobs, n_jobs, &o, &res, &err);
        if (ps.begun)
            etk_progress_end(&ps.p);
        if (src)
            rc = cli_fail(cmd, &err);
    }
    if (!rc && mrank == 0) {
        if (!res.n_simulated)
            rc = impossible(cmd, &sp, &res, &o);
        if (csv)
            rc = write_out(cmd, csv, &sp, jobs, n_jobs, &o, &res, false) ? 2 : rc;
        if (json)
            rc = write_out(cmd, json, &sp, jobs, n_jobs, &o, &res, true) ? 2 : rc;
        if (html && res.n_simulated)
            rc = write_html(cmd, html, &sp, jobs, n_jobs, &o, &res) ? 2 : rc;
        bool table_on_stdout = !(csv && !strcmp(csv, "-")) && !(json && !strcmp(json, "-"));
        if (res.n_simulated && table_on_stdout)
            etk_plan_print_table(&sp, jobs, n_jobs, &o, &res, stdout);
    }
    etk_plan_result_free(&res);
    free(jobs);
    free(comp);
    plan_mpi_mark(PLAN_MPI_OUTPUT);
    if (mpi) {
        fflush(stdout); /* the table is out before MPI_Finalize and mpirun's teardown */
        plan_mpi_finalize();
    }
    return rc;
}
