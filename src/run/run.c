/* run.c — generate-and-simulate as `etkit run` does it (etkit/run.h): the cluster and engine
 * defaults, the folding decision and the plan's FLOPs and tokens for MFU and tokens/s. Shared by
 * cli/cmd_run.c and the calibration (src/calib/). */
#include <string.h>

#include "etkit/run.h"

bool etk_run_flow_auto(etk_cluster *cl, uint32_t n_ranks)
{
    if (cl->net_model != ETK_NET_FLOW || n_ranks <= ETK_RUN_FLOW_AUTO_MAX_RANKS)
        return false;
    cl->net_model = ETK_NET_ANALYTICAL;
    return true;
}

void etk_run_set_precision(const etk_gen_config *cfg, etk_cluster *cl)
{
    int p = etk_precision_parse(strcmp(cfg->precision, "fp8") ? cfg->precision : "bf16");
    if (p >= 0)
        cl->precision = (etk_precision)p;
}

void etk_run_opts_defaults(const etk_cluster *cl, etk_sim_opts *o)
{
    if (!o->comm_streams && !cl->astra_compat)
        o->comm_stream_per_group = true;
}

void etk_run_set_node(etk_gen_config *cfg, const etk_cluster *cl)
{
    if (!cfg->gpus_per_node && cl->n_dims > 1 && cl->dims[0].size) /* one dimension: one node */
        cfg->gpus_per_node = cl->dims[0].size;
}

int etk_run_workload(const etk_gen_config *cfg, const etk_cluster *cl, const etk_sim_opts *o,
                     etk_workload **out, etk_error *err)
{
    bool flow = cl->net_model == ETK_NET_FLOW && !cl->astra_compat;
    etk_gen_config c = *cfg; /* node-limited routing counts the cluster's nodes */
    etk_run_set_node(&c, cl);
    return etk_gen_workload(&c, !o->no_fold && !flow, out, err);
}

int etk_run_simulate(const etk_gen_config *cfg, const etk_workload *wl, const etk_cluster *cl,
                     const etk_sim_opts *o, etk_sim **out, etk_error *err)
{
    etk_sim_opts so = *o;
    if (so.model_flops <= 0)
        so.model_flops = cfg->model_flops_per_step;
    if (so.model_flops <= 0) { /* model FLOPs (no recompute) from the generator's summary */
        etk_gen_summary sum;
        etk_error e2 = {0};
        if (etk_gen_summarize(cfg, &sum, &e2) == 0) {
            so.model_flops = sum.model_flops;
            etk_gen_summary_free(&sum);
        }
    }
    if (so.tokens_per_step <= 0)
        so.tokens_per_step = (double)cfg->tokens_per_step;
    return etk_sim_workload(wl, cl, &so, out, err);
}
