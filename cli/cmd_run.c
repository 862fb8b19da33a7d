/* cmd_run.c — `etkit run`: synthesize a training step in memory (trace synthesis, gen.h) and
 * simulate it on a cluster (src/sim/) in one go, folded into one rank per pipeline stage; no
 * trace is written unless --write-traces is given. With no model or plan flags it runs the
 * built-in default: llama3-8b training on 8 DGX H100 nodes (64 GPUs, TP 4 x PP 2 x DP 8,
 * sequence parallelism, FlashAttention, global batch 256 sequences of 8192 tokens, 1F1B). With
 * --mode inference the workload is a batch of requests and the report adds TTFT and TPOT. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "etkit/gen.h"
#include "etkit/run.h"
#include "sim_cli.h"

static const char *const default_plan[] = {"--model", "llama3-8b", "--tp", "4", "--pp", "2",
                                           "--dp", "8", "--sp", "--micro-batch", "1",
                                           "--global-batch", "256", "--attention", "flash", NULL};

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
           "--cluster dgx-h100 --nodes 8 ('etkit run --attention unfused': the same job unfused). Any\n"
           "other model/plan flag replaces the whole default plan.\n\n"
           "%s"
           "%s"
           "  --write-traces PREFIX    also write the per-rank traces and comm groups\n"
           "The cluster defaults to dgx-h100 with ranks / 8 nodes.\n\n"
           "examples:\n"
           "  etkit run\n"
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
    /* the default plan when no gen option is given */
    bool any_gen = false;
    for (int i = 1; i < argc && !any_gen; i++) {
        bool tv;
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-') {
            char name[64];
            snprintf(name, sizeof name, "%s", a + 2);
            char *eq = strchr(name, '=');
            if (eq)
                *eq = 0;
            /* --attention alone keeps the default job (etkit run --attention unfused) */
            any_gen = etk_gen_is_option(name, &tv) && strcmp(name, "attention");
        }
    }
    if (!any_gen) {
        int n = 0;
        while (default_plan[n])
            n++;
        char *dv[32];
        for (int i = 0; i < n; i++)
            dv[i] = (char *)default_plan[i];
        char *drest[32];
        int dn = 0;
        if (etk_gen_parse_args(n, dv, &cfg, &dn, drest, &err) != 0)
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
    lo[n] = (struct option){0, 0, 0, 0};
    sim_cli c;
    memset(&c, 0, sizeof c);
    const char *write_prefix = NULL;
    int opt, rc = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(rargc, rest, ":c:n:o:h", lo, NULL)) != -1) {
        if (opt == 'w') {
            write_prefix = optarg;
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
    if (etk_gen_check(&cfg, &err) != 0)
        return cli_fail(cmd, &err);
    if (!c.cluster && !c.astra_net)
        c.cluster = "dgx-h100";
    etk_cluster cl;
    rc = sim_cli_cluster(cmd, &c, cfg.n_ranks, &cl);
    if (rc)
        return rc;
    if (!c.precision)
        etk_run_set_precision(&cfg, &cl);
    if (write_prefix && etk_gen_write(&cfg, write_prefix, &err) != 0)
        return cli_fail(cmd, &err);
    etk_workload *wl = NULL;
    if (etk_run_workload(&cfg, &cl, &c.o, &wl, &err) != 0)
        return cli_fail(cmd, &err);
    etk_sim *s = NULL;
    if (etk_run_simulate(&cfg, wl, &cl, &c.o, &s, &err) != 0) {
        rc = sim_cli_fail(cmd, &err);
        etk_workload_free(wl);
        return rc;
    }
    char label[256];
    if (cfg.mode == ETK_GEN_MODE_INFERENCE)
        snprintf(label, sizeof label,
                 "%s inference: tp %u x pp %u x dp %u (ep %u), batch %u per replica (%u micro-batches), prompt %u "
                 "tokens, %u decode steps", cfg.model.name, cfg.tp, cfg.pp, cfg.dp, cfg.ep, cfg.batch,
                 cfg.infer_micro_batches, cfg.prompt_len, cfg.decode_steps);
    else
        snprintf(label, sizeof label, "%s: tp %u x pp %u x dp %u%s, global batch %u, micro-batch %u, %s%s",
             cfg.model.name, cfg.tp, cfg.pp, cfg.dp, cfg.sp ? " (sp)" : "", cfg.global_batch,
             cfg.micro_batch, cfg.schedule == ETK_SCHED_GPIPE ? "gpipe" : cfg.schedule == ETK_SCHED_ZBH1 ? "zb-h1" : "1f1b",
             cfg.attention == ETK_ATTN_FLASH ? ", flash attention" : ", unfused attention");
    ((etk_sim_result *)etk_sim_result_get(s))->workload = label;
    rc = sim_cli_report(cmd, &c, s);
    etk_sim_free(s);
    etk_workload_free(wl);
    return rc;
}
