/* cmd_run.c — `etkit run`: synthesize a training step in memory (trace synthesis, gen.h) and
 * simulate it on a cluster (src/sim/) in one go, folded into one rank per pipeline stage; no
 * trace is written unless --write-traces is given. With no model or plan flags it runs the
 * built-in default: llama3-8b training on 8 DGX H100 nodes (64 GPUs, TP 4 x PP 2 x DP 8,
 * sequence parallelism, FlashAttention, global batch 256 sequences of 8192 tokens, 1F1B). With
 * --mode inference the workload is a batch of requests and the report adds TTFT and TPOT. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "run_mem.h"
#include "etkit/gen.h"
#include "plan_warn.h"
#include "etkit/run.h"
#include "etkit/progress.h"
#include "sim_cli.h"

/* the default job, in three parts applied independently: the model unless --model or
 * --model-file is given; the plan's degrees (and SP) unless one of --tp --pp --dp --cp is given;
 * the batch unless --micro-batch / --global-batch (each on its own). Every other flag (--seq,
 * --layers, --attention, --recompute, --zero, --vpp, --ep, --precision, ...) changes only
 * itself. With --mode inference only the model is defaulted. */
static const char *const default_model[] = {"--model", "llama3-8b", NULL};
static const char *const default_degrees[] = {"--tp", "4", "--pp", "2", "--dp", "8", "--sp", NULL};
static const char *const default_mb[] = {"--micro-batch", "1", NULL};
static const char *const default_gb[] = {"--global-batch", "256", NULL};

/* true if one of the long options `names` (without "--") appears in argv */
static bool given(int argc, char **argv, const char *const *names)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] != '-')
            continue;
        for (int k = 0; names[k]; k++) {
            size_t l = strlen(names[k]);
            if (!strncmp(a + 2, names[k], l) && (a[2 + l] == 0 || a[2 + l] == '='))
                return true;
        }
    }
    return false;
}

static bool inference_mode(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if ((!strcmp(argv[i], "--mode") && i + 1 < argc && !strcmp(argv[i + 1], "inference")) ||
            !strcmp(argv[i], "--mode=inference"))
            return true;
    return false;
}

static void append(const char **v, int *n, const char *const *add, char *note, size_t cap)
{
    for (int i = 0; add[i]; i++) {
        v[(*n)++] = add[i];
        size_t l = strlen(note);
        snprintf(note + l, cap - l, "%s%s", l ? " " : "", add[i]);
    }
}

static const char *sched_name(int s)
{
    return s == ETK_SCHED_GPIPE ? "gpipe" : s == ETK_SCHED_ZBH1 ? "zb-h1" : "1f1b";
}

static const char *recompute_str(int r)
{
    return r == ETK_RECOMPUTE_FULL ? "full" : r == ETK_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

/* the plan as key/value text for the JSON and CSV reports (etk_sim_result.plan_*) */
enum { PLAN_MAX = 32 };
static const char *plan_keys[PLAN_MAX], *plan_vals[PLAN_MAX];
static char plan_buf[PLAN_MAX][72];
static uint32_t n_plan;

static void plan_kv(const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void plan_kv(const char *key, const char *fmt, ...)
{
    if (n_plan >= PLAN_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(plan_buf[n_plan], sizeof plan_buf[n_plan], fmt, ap);
    va_end(ap);
    plan_keys[n_plan] = key;
    plan_vals[n_plan] = plan_buf[n_plan];
    n_plan++;
}

static void plan_fields(const etk_gen_config *c)
{
    bool inf = c->mode == ETK_GEN_MODE_INFERENCE;
    n_plan = 0;
    plan_kv("model", "%s", c->model.name);
    plan_kv("mode", "%s", inf ? "inference" : "training");
    plan_kv("ranks", "%u", c->n_ranks);
    plan_kv("tp", "%u", c->tp);
    plan_kv("cp", "%u", c->cp);
    plan_kv("pp", "%u", c->pp);
    plan_kv("vpp", "%u", c->vpp ? c->vpp : 1);
    plan_kv("dp", "%u", c->dp);
    plan_kv("ep", "%u", c->ep);
    plan_kv("sp", "%s", c->sp ? "true" : "false");
    plan_kv("zero", "%d", c->zero);
    plan_kv("recompute", "%s", recompute_str(c->recompute));
    plan_kv("seq", "%lld", (long long)c->model.seq);
    plan_kv("precision", "%s", c->precision);
    plan_kv("grad_precision", "%s", c->grad_bytes == 4 ? "fp32" : "16-bit");
    plan_kv("global_batch", "%u", inf ? c->batch * c->dp : c->global_batch);
    plan_kv("micro_batch", "%u", inf ? 0 : c->micro_batch);
    plan_kv("micro_batches", "%u", inf ? c->infer_micro_batches : c->micro_batches);
    plan_kv("schedule", "%s", inf ? "" : sched_name(c->schedule));
    plan_kv("attention", "%s", c->attention == ETK_ATTN_FLASH ? "flash" : "unfused");
    plan_kv("cp_comm", "%s", c->cp_comm == ETK_CP_RING ? "ring" : "allgather");
    plan_kv("prompt_len", "%u", inf ? c->prompt_len : 0);
    plan_kv("decode_steps", "%u", inf ? c->decode_steps : 0);
}

/* the workload line: the whole plan */
static void plan_label(const etk_gen_config *c, char *label, size_t n)
{
    char cp[48] = "", vpp[24] = "", rms[112];
    if (c->cp_comm == ETK_CP_RING)
        snprintf(cp, sizeof cp, " (ring)");
    if (c->vpp > 1)
        snprintf(vpp, sizeof vpp, " (vpp %u)", c->vpp);
    if (c->mode == ETK_GEN_MODE_INFERENCE)
        snprintf(label, n,
                 "%s inference: tp %u x pp %u x dp %u (ep %u) = %u ranks, batch %u per replica (%u micro-batches), "
                 "prompt %u tokens, %u decode steps, %s, KV cache %s, %s attention",
                 c->model.name, c->tp, c->pp, c->dp, c->ep, c->n_ranks, c->batch, c->infer_micro_batches,
                 c->prompt_len, c->decode_steps, c->precision, c->kv_bytes == 1 ? "fp8" : "16-bit",
                 c->attention == ETK_ATTN_FLASH ? "flash" : "prefill unfused");
    else
        snprintf(label, n,
                 "%s: tp %u x cp %u%s x pp %u%s x dp %u = %u ranks, ep %u, sp %s, zero %d, recompute %s%s, "
                 "seq %lld, %s, global batch %u, micro-batch %u, %s, %s attention",
                 c->model.name, c->tp, c->cp, cp, c->pp, vpp, c->dp, c->n_ranks, c->ep, c->sp ? "on" : "off",
                 c->zero, recompute_str(c->recompute), etk_gen_recompute_modules_str(c, rms, sizeof rms),
                 (long long)c->model.seq, c->precision, c->global_batch,
                 c->micro_batch, sched_name(c->schedule), c->attention == ETK_ATTN_FLASH ? "flash" : "unfused");
}

static void help(void)
{
    printf("usage: etkit run [model and plan options] [--cluster NAME|FILE [--nodes N]] [options]\n\n"
           "Generates one training step (the same model and plan flags as 'etkit gen') in memory and\n"
           "simulates it: step time, where each rank's time goes, TFLOP/s per GPU, MFU (model\n"
           "FLOPs without recompute), tokens/s, and per collective type and group the bus bandwidth.\n"
           "With --mode inference: one batch of requests (prefill + decode steps), reporting TTFT (time\n"
           "to first token), TPOT (time per output token: mean, min and max decode step) and tokens/s.\n"
           "Ranks of one pipeline stage are simulated once (folding) unless --no-fold.\n"
           "Without model/plan flags: --model llama3-8b --tp 4 --pp 2 --dp 8 --sp --micro-batch 1\n"
           "--global-batch 256 --attention flash (fused FlashAttention kernels, as Llama 3 trains) on\n"
           "--cluster dgx-h100 --nodes 8 ('etkit run --attention unfused': the same job unfused).\n"
           "A flag changes only itself ('etkit run --seq 4096': the default job at 4096 tokens), except\n"
           "that --model/--model-file replace the default model, any of --tp --pp --dp --cp the default\n"
           "degrees and SP (the others 1), --micro-batch / --global-batch the default batch. --gpu NAME\n"
           "replaces the cluster's GPU. Warns (stderr) on fewer micro-batches than pipeline stages, a\n"
           "bubble over 25%% and unbalanced stages. Missing output folders are created.\n\n"
           "%s"
           "%s"
           "  --write-traces PREFIX    also write the per-rank traces and comm groups\n"
           "  --max-memory BYTES       refuse an unfolded run (--no-fold, --slow-rank, flow model)\n"
           "                           whose estimated memory exceeds BYTES (K, M, G, T suffixes;\n"
           "                           default: the memory available); checked before any work\n"
           "The cluster defaults to dgx-h100 with ranks / 8 nodes (one node of as many GPUs as ranks\n"
           "below 8). --csv: one 'run' row (plan + results), then the per-rank and communication\n"
           "tables; --json adds the plan, the cluster, the etkit version and the command line\n"
           "(docs/sim.md).\n\n"
           "examples:\n"
           "  etkit run\n"
           "  etkit run --seq 4096 --global-batch 512 --csv\n"
           "  etkit run --model llama3-405b --tp 8 --pp 16 --dp 128 --sp --global-batch 2048 --cluster dgx-h100\n"
           "  etkit run --model llama2-7b --dp 8 --cluster hgx-h200 --nodes 1 --json\n"
           "  etkit run --mode inference --model llama3-70b --tp 8 --batch 16 --prompt-len 2048 --decode-steps 256\n"
           "            --cluster hgx-h200 --nodes 1\n",
           etk_gen_options_help(), sim_cli_help);
}

int cmd_run(int argc, char **argv)
{
    static const char *cmd = "run";
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return 0;
        }
    etk_error err = {0};
    etk_gen_config cfg;
    etk_gen_config_init(&cfg);
    /* the default job's parts the flags leave in place, parsed first so flags override */
    const char *dv[32];
    int dn = 0;
    char defaults[256] = "";
    static const char *const model_flags[] = {"model", "model-file", NULL};
    static const char *const degree_flags[] = {"tp", "pp", "dp", "cp", NULL};
    static const char *const mb_flag[] = {"micro-batch", NULL}, *const gb_flag[] = {"global-batch", NULL};
    if (!given(argc, argv, model_flags))
        append(dv, &dn, default_model, defaults, sizeof defaults);
    if (!inference_mode(argc, argv) && !given(argc, argv, degree_flags)) {
        append(dv, &dn, default_degrees, defaults, sizeof defaults);
        if (!given(argc, argv, mb_flag))
            append(dv, &dn, default_mb, defaults, sizeof defaults);
        if (!given(argc, argv, gb_flag))
            append(dv, &dn, default_gb, defaults, sizeof defaults);
    }
    if (dn) {
        char *drest[32];
        int dr = 0;
        if (etk_gen_parse_args(dn, (char **)dv, &cfg, &dr, drest, &err) != 0)
            return cli_fail(cmd, &err);
    }
    char **rest = calloc((size_t)argc + 2, sizeof(char *));
    if (!rest)
        return 2;
    int n_rest = 0;
    if (etk_gen_parse_args(argc - 1, argv + 1, &cfg, &n_rest, rest + 1, &err) != 0) {
        free(rest);
        return cli_fail(cmd, &err);
    }
    rest[0] = argv[0];
    int rargc = n_rest + 1;

    struct option lo[64];
    size_t n = 0;
    while (sim_cli_longopts[n].name) {
        lo[n] = sim_cli_longopts[n];
        n++;
    }
    lo[n++] = (struct option){"write-traces", required_argument, 0, 'w'};
    lo[n++] = (struct option){"max-memory", required_argument, 0, 'M'};
    lo[n] = (struct option){0, 0, 0, 0};
    sim_cli c;
    memset(&c, 0, sizeof c);
    const char *write_prefix = NULL;
    uint64_t max_memory = 0;
    int opt, rc = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(rargc, rest, ":c:n:o:h", lo, NULL)) != -1) {
        if (opt == 'w') {
            write_prefix = optarg;
            continue;
        }
        if (opt == 'M') {
            if ((rc = run_mem_parse(cmd, optarg, &max_memory)))
                break;
            continue;
        }
        if (opt == '?' || opt == 1 || opt == 'h') {
            rc = cli_usage_error(cmd, "unknown option '%s'", rest[optind - 1]);
            break;
        }
        if (opt == ':') {
            rc = cli_usage_error(cmd, "option '%s' needs a value", rest[optind - 1]);
            break;
        }
        rc = sim_cli_option(cmd, &c, opt, optarg);
        if (rc == 1)
            rc = cli_usage_error(cmd, "unknown option '%s'", rest[optind - 1]);
        if (rc)
            break;
    }
    if (!rc && optind < rargc)
        rc = cli_usage_error(cmd, "unexpected argument '%s' (run takes no workload; use "
                                  "'etkit sim' for trace files)", rest[optind]);
    free(rest);
    if (rc)
        return rc;
    if (etk_gen_check(&cfg, &err) != 0) {
        fprintf(stderr, "etkit %s: error: %s\n", cmd, err.msg);
        if (defaults[0])
            fprintf(stderr, "etkit %s: note: the default job supplied %s (give a flag to change it; "
                            "--tp/--pp/--dp/--cp replace the default degrees)\n", cmd, defaults);
        return 2;
    }
    if (!c.o.quiet && cfg.mode != ETK_GEN_MODE_INFERENCE && cfg.pp > 1) { /* wasteful plans */
        etk_gen_summary ws;
        bool have = etk_gen_summarize(&cfg, &ws, &err) == 0;
        plan_warnings(cmd, &cfg, have ? &ws : NULL);
        if (have)
            etk_gen_summary_free(&ws);
    }
    if (!c.cluster && !c.astra_net)
        c.cluster = "dgx-h100";
    if (given(argc, argv, (const char *const[]){"gpu", NULL}))
        c.gpu = cfg.gpu; /* --gpu: the cluster's GPU replaced (and the memory verdict's) */
    etk_cluster cl;
    rc = sim_cli_cluster(cmd, &c, cfg.n_ranks, &cl);
    if (rc)
        return rc;
    if (!c.precision)
        etk_run_set_precision(&cfg, &cl);
    etk_run_set_node(&cfg, &cl);
    if (write_prefix && (etk_file_mkdirs(write_prefix, &err) != 0 || etk_gen_write(&cfg, write_prefix, &err) != 0))
        return cli_fail(cmd, &err);
    etk_workload *wl = NULL;
    /* the flow network model simulates every rank (docs/network-model.md) */
    bool flow = cl.net_model == ETK_NET_FLOW && !cl.astra_compat;
    /* an unfolded simulation's memory is estimated before any of it is allocated */
    bool slow = false;
    for (uint32_t r = 0; r < c.o.n_rank_speed && c.o.rank_speed; r++)
        slow |= c.o.rank_speed[r] != 1.0;
    if (c.o.no_fold || flow || slow) {
        const char *why = slow                ? "--slow-rank"
                          : c.n_link_factor     ? "--link-factor"
                          : c.o.no_fold         ? "--no-fold"
                                                : "the flow network model";
        if ((rc = run_mem_check(cmd, &cfg, max_memory, why)))
            return rc;
    }
    if (etk_run_workload(&cfg, &cl, &c.o, &wl, &err) != 0)
        return cli_fail(cmd, &err);
    etk_sim *s = NULL;
    etk_progress prog;
    etk_progress_begin(&prog, stderr, c.o.quiet, "simulated nodes", 0);
    c.o.progress = &prog;
    rc = etk_run_simulate(&cfg, wl, &cl, &c.o, &s, &err);
    etk_progress_end(&prog);
    c.o.progress = NULL;
    if (rc != 0) {
        rc = sim_cli_fail(cmd, &err);
        etk_workload_free(wl);
        return rc;
    }
    char label[512];
    plan_label(&cfg, label, sizeof label);
    plan_fields(&cfg);
    etk_sim_result *res = (etk_sim_result *)etk_sim_result_get(s);
    res->plan_keys = plan_keys;
    res->plan_values = plan_vals;
    res->n_plan = n_plan;
    ((etk_sim_result *)etk_sim_result_get(s))->workload = label;
    c.argc = argc;
    c.argv = argv;
    rc = sim_cli_report(cmd, &c, s);
    etk_sim_free(s);
    etk_workload_free(wl);
    return rc;
}
