/* cmd_sim.c — `etkit sim`: read a workload (per-rank Chakra traces + comm groups), build the
 * cluster, run the event-driven simulator (src/sim/) and report the step time and where it goes.
 * A thin layer over etk_workload_open, etk_sim_workload and the sim reports. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "etkit/progress.h"
#include "run_mem.h"
#include "sim_cli.h"

static void help(void)
{
    printf("usage: etkit sim WORKLOAD [--groups FILE] (--cluster NAME|FILE [--nodes N] |\n"
           "                 --astra-network NET.yaml --astra-system SYS.json) [options]\n\n"
           "Simulates one step of a workload on a cluster: per-rank CPU, compute and communication\n"
           "streams, dependencies, collectives matched per group, send/recv matched on (src, dst,\n"
           "tag), compute by duration or roofline, communication by the network model. Prints the\n"
           "step time (ns), per rank compute / exposed comm / overlapped comm / idle, TFLOP/s per\n"
           "GPU and MFU, and per collective type and group the count, bytes, time and bus bandwidth.\n"
           "Ranks with identical traces and placement are folded (simulated once).\n\n"
           "WORKLOAD is a trace prefix (<prefix>.<rank>.et) or one rank file; groups default to\n"
           "<prefix>.json.\n\n"
           "  -g, --groups FILE        comm-group JSON\n"
           "  --max-memory BYTES       refuse (before reading the traces) a workload whose estimated\n"
           "                           memory exceeds BYTES (K, M, G, T suffixes; default: the\n"
           "                           memory available)\n"
           "%s\n"
           "exit status: 0 ok, 1 deadlock (each blocked rank and what it waits for is printed),\n"
           "2 bad input or usage.\n\n"
           "examples:\n"
           "  etkit sim ../shared/data/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce \\\n"
           "      --astra-network ring8.yaml --astra-system sys.json\n"
           "  etkit sim out/llama7b --cluster dgx-h100 --nodes 1 --timeline step.json\n"
           "  etkit sim ../shared/data/chakra/converted_cnn_ddp.0.et --cluster c1.yaml --missing-deps=ignore\n",
           sim_cli_help);
}

int cmd_sim(int argc, char **argv)
{
    static const char *cmd = "sim";
    struct option lo[64];
    size_t n = 0;
    while (sim_cli_longopts[n].name) {
        lo[n] = sim_cli_longopts[n];
        n++;
    }
    lo[n++] = (struct option){"groups", required_argument, 0, 'g'};
    lo[n++] = (struct option){"max-memory", required_argument, 0, 'M'};
    lo[n] = (struct option){0, 0, 0, 0};
    sim_cli c;
    memset(&c, 0, sizeof c);
    uint64_t max_memory = 0;
    static char *cmdv[512]; /* the command line as given (getopt_long permutes argv) */
    c.argc = argc < 512 ? argc : 512;
    memcpy(cmdv, argv, (size_t)c.argc * sizeof *argv);
    c.argv = cmdv;
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":c:n:o:g:h", lo, NULL)) != -1) {
        if (opt == 'h') {
            help();
            return 0;
        }
        if (opt == 'g') {
            c.groups = optarg;
            continue;
        }
        if (opt == 'M') {
            if (run_mem_parse(cmd, optarg, &max_memory))
                return 2;
            continue;
        }
        if (opt == '?')
            return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        if (opt == ':')
            return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        int rc = sim_cli_option(cmd, &c, opt, optarg);
        if (rc == 1)
            return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        if (rc)
            return rc;
    }
    if (optind >= argc)
        return cli_usage_error(cmd, "no workload given (a trace prefix or a rank file)");
    if (optind + 1 < argc)
        return cli_usage_error(cmd, "one workload expected, got also '%s'", argv[optind + 1]);
    /* the memory the traces will take, estimated from their sizes before any is read: every
     * option that keeps all ranks simulated (the cluster file's network model is not known
     * yet: --net-model flow only) */
    bool slow = false;
    for (uint32_t r = 0; r < c.n_slow; r++)
        slow |= c.slow_factor[r] != 1.0;
    const char *why = slow                                         ? "--slow-rank"
                      : c.n_link_factor                            ? "--link-factor"
                      : c.o.no_fold                                ? "--no-fold"
                      : c.net_model && !strcmp(c.net_model, "flow") ? "--net-model flow"
                                                                   : NULL;
    int mrc = sim_mem_check(cmd, argv[optind], why, max_memory);
    if (mrc)
        return mrc;
    etk_error err = {0};
    etk_read_opts ro = {.quiet = true};
    etk_workload *wl = NULL;
    if (etk_workload_open(argv[optind], c.groups, &ro, &wl, &err) != 0)
        return cli_fail(cmd, &err);
    sim_cli_stage_detect("etkit sim", &c, wl);
    size_t nw = 0;
    for (uint32_t r = 0; r < wl->n_ranks; r++)
        nw += wl->ranks[r] ? wl->ranks[r]->n_warnings : 0;
    if (nw && !c.o.quiet)
        fprintf(stderr,
                "etkit sim: warning: %zu attribute-kind warnings while reading the traces (read "
                "leniently; 'etkit validate' lists them)\n",
                nw);
    etk_cluster cl;
    int rc = sim_cli_cluster(cmd, &c, wl->n_ranks, &cl);
    if (rc) {
        etk_workload_free(wl);
        return rc;
    }
    etk_sim *s = NULL;
    etk_progress prog;
    etk_progress_begin(&prog, stderr, c.o.quiet, "simulated nodes", 0);
    c.o.progress = &prog;
    rc = etk_sim_workload(wl, &cl, &c.o, &s, &err);
    etk_progress_end(&prog);
    c.o.progress = NULL;
    if (rc != 0) {
        rc = sim_cli_fail(cmd, &err);
        etk_workload_free(wl);
        return rc;
    }
    rc = sim_cli_report(cmd, &c, s);
    etk_sim_free(s);
    etk_workload_free(wl);
    return rc;
}
