/* sim_cli.h — options shared by `etkit sim` and `etkit run` (cli/cmd_sim.c, cli/cmd_run.c):
 * the cluster (preset, YAML, or ASTRA-sim inputs), engine options and the report outputs. */
#ifndef ETKIT_CLI_SIM_CLI_H
#define ETKIT_CLI_SIM_CLI_H

#include <getopt.h>

#include "etkit/sim.h"

enum {
    SO_CLUSTER = 'c', SO_NODES = 'n', SO_OUTPUT = 'o', SO_HELP = 'h',
    SO_ASTRA_NET = 1000, SO_ASTRA_SYS, SO_ASTRA_COMPAT, SO_EFF, SO_PREC, SO_CPU, SO_COMP, SO_COMM,
    SO_MISSING, SO_STAGE, SO_NOSTAGE, SO_NOFOLD, SO_JSON, SO_CSV, SO_TIMELINE, SO_TOKENS, SO_MFLOPS, SO_GROUPS,
    SO_QUIET, SO_NETMODEL, SO_LINKF, SO_COMPUTE = 1100, SO_CPARAM, SO_SLOW, SO_GPUS, SO_GPU, SO_HTML,
};

typedef struct sim_cli {
    const char *cluster, *astra_net, *astra_sys, *timeline, *output, *groups, *precision;
    const char *html;              /* --html FILE: the HTML report (cli/report_html.c) */
    uint64_t nodes;
    uint32_t gpus;                 /* --gpus N: one node of N GPUs of a preset (0: whole nodes) */
    int argc;                      /* the command line, for --json / --csv */
    char **argv;
    const char *gpu;               /* run's --gpu NAME: replaces the cluster's GPU (NULL: keep) */
    bool nodes_set, astra_compat, eff_set;
    bool stage_set;                /* --stage-units or --no-stage-units given */
    bool mflops_user;              /* --model-flops given (not run's generator figure) */
    double eff;
    int fmt; /* 0 text, 1 json, 2 csv */
    const char *net_model;              /* --net-model, NULL: the cluster's */
    const char *link_factor[16];        /* --link-factor specs (ETK_MAX_LINK_FACTORS) */
    uint32_t n_link_factor;
    etk_sim_opts o;
    /* compute model and heterogeneity (docs/compute-model.md) */
    bool roofline;                 /* --compute roofline */
    const char *cparam[32];        /* --compute-param NAME=VALUE, in order */
    uint32_t n_cparam;
    uint32_t slow_rank[256];       /* --slow-rank R:F */
    double slow_factor[256];
    uint32_t n_slow;
    etk_compute_params comp;       /* o.compute points here when the model is on */
} sim_cli;

/* The getopt_long table entries of the shared options (terminated by a zero entry). */
extern const struct option sim_cli_longopts[];
/* Help text of the shared options. */
extern const char sim_cli_help[];
/* Handle one getopt result; returns 0 if handled, 1 if not a shared option, 2 on error
 * (message printed). */
int sim_cli_option(const char *cmd, sim_cli *c, int opt, const char *arg);
/* Build the cluster for n_ranks ranks, and the compute model and per-rank speeds for it (set in
 * c->o); prints the error and returns 2 on failure. */
int sim_cli_cluster(const char *cmd, sim_cli *c, uint32_t n_ranks, etk_cluster *out);
/* Print the report (and write the timeline); returns the exit status. */
int sim_cli_report(const char *cmd, const sim_cli *c, etk_sim *s);
/* STAGE's traces (GlobalMetadata schema "symbolic_tensor_network") get --stage-units unless
 * --stage-units/--no-stage-units was given; prints a note on stderr when it applies them. */
void sim_cli_stage_detect(const char *cmd, sim_cli *c, const etk_workload *wl);
/* Exit status for a failed simulation: 1 for a deadlock (a finding), 2 otherwise. */
int sim_cli_fail(const char *cmd, const etk_error *err);
#endif
