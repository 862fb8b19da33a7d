/* etkit/run.h — generate a plan's workload in memory and simulate it on a cluster, the way
 * `etkit run` does (cli/cmd_run.c) and `etkit calibrate` predicts its rows (src/calib/): one
 * code path, so a calibrated parameter means the same in both.
 *
 *     etk_gen_check(&cfg, &err);                     (the plan)
 *     etk_cluster cl = ...;                          (preset, YAML; etk_run_cluster_defaults)
 *     etk_run_set_precision(&cfg, &cl);              (unless --precision was given)
 *     etk_run_opts_defaults(&cl, &opts);             (streams)
 *     etk_run_workload(&cfg, &cl, &opts, &wl, &err); (folded unless the flow model runs)
 *     etk_run_simulate(&cfg, wl, &cl, &opts, &s, &err);
 */
#ifndef ETKIT_RUN_H
#define ETKIT_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "etkit/gen.h"
#include "etkit/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* above this many ranks a preset's default flow model gives way to the analytical one */
#define ETK_RUN_FLOW_AUTO_MAX_RANKS 1024u

/* A cluster whose network model was not chosen by the user: the flow model simulates every rank
 * (no folding), which above ETK_RUN_FLOW_AUTO_MAX_RANKS costs minutes and tens of GB, so the
 * analytical model (folded) is used instead. Returns true when it switched (callers warn). */
bool etk_run_flow_auto(etk_cluster *cl, uint32_t n_ranks);
/* The cluster's roofline precision for the plan: fp8 plans run their GEMMs in FP8 (nodes marked
 * "precision": "fp8") and the rest in BF16, so the roofline precision stays bf16. */
void etk_run_set_precision(const etk_gen_config *cfg, etk_cluster *cl);
/* The plan's GPUs per node (--moe-max-nodes counts nodes) from the cluster's first dimension,
 * its NVLink domain, unless given (--gpus-per-node); etk_run_workload applies it. */
void etk_run_set_node(etk_gen_config *cfg, const etk_cluster *cl);
/* Engine defaults: one communication stream per communicator group (and per send peer) unless
 * o->comm_streams is given (none in ASTRA-sim compatibility, which keeps ASTRA-sim's one): NCCL
 * runs each communicator's kernels on its own stream (docs/sim.md "Streams"). */
void etk_run_opts_defaults(const etk_cluster *cl, etk_sim_opts *o);
/* The plan's workload, folded into one rank per class unless o->no_fold or the flow network
 * model (which simulates every rank, docs/network-model.md). */
int etk_run_workload(const etk_gen_config *cfg, const etk_cluster *cl, const etk_sim_opts *o,
                     etk_workload **out, etk_error *err);
/* Simulate it. Model FLOPs and tokens per step default to the plan's (o's when set). */
int etk_run_simulate(const etk_gen_config *cfg, const etk_workload *wl, const etk_cluster *cl,
                     const etk_sim_opts *o, etk_sim **out, etk_error *err);

#ifdef __cplusplus
}
#endif
#endif
