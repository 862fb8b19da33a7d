/* predict.c — one calibration row's predicted figure with parameters applied (etkit/calib.h):
 * the row's cluster and the GPU's compute-model defaults, the parameters on top, then the same
 * generate-and-simulate path as `etkit run` (etkit/run.h), folded. The workload is built once
 * per row and kept: only the cluster and compute model change between predictions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "etkit/calib.h"
#include "etkit/run.h"

/* network parameters: the first dimension (NVLink/NVSwitch) and the last (NIC) of the cluster */
enum { NET_NVLINK_BW, NET_NIC_BW, NET_NVLINK_LAT, NET_NIC_LAT, N_NET };
static const char *const net_names[N_NET] = {"nvlink_GBps", "nic_GBps", "nvlink_latency_ns",
                                             "nic_latency_ns"};

static int net_param(const char *name)
{
    for (int i = 0; i < N_NET; i++)
        if (!strcmp(name, net_names[i]))
            return i;
    return -1;
}

void etk_calib_params_merge(etk_calib_params *out, const etk_calib_params *base,
                            const etk_calib_params *over)
{
    etk_calib_params m = {0};
    if (base)
        m = *base;
    for (uint32_t i = 0; over && i < over->n; i++) {
        uint32_t j = 0;
        while (j < m.n && strcmp(m.name[j], over->name[i]))
            j++;
        if (j == ETK_CALIB_MAX_PARAMS)
            continue;
        if (j == m.n) {
            snprintf(m.name[j], sizeof m.name[j], "%s", over->name[i]);
            m.n++;
        }
        m.value[j] = over->value[i];
    }
    *out = m;
}

bool etk_calib_param_is_net(const char *name)
{
    return net_param(name) >= 0;
}

int etk_calib_param_check(const char *name, etk_error *err)
{
    if (net_param(name) >= 0)
        return 0;
    etk_compute_params t;
    etk_compute_defaults(NULL, &t);
    double v;
    if (etk_compute_get(&t, name, &v, NULL) == 0)
        return 0;
    return etk_err(err, ETK_EINVAL, "parameter '%s' is unknown; expected a compute-model "
                   "parameter (%s) or a network parameter (nvlink_GBps, nic_GBps, "
                   "nvlink_latency_ns, nic_latency_ns)", name, etk_compute_param_names());
}

static etk_net_dim *net_dim(etk_cluster *cl, int which)
{
    bool nic = which == NET_NIC_BW || which == NET_NIC_LAT;
    return nic ? &cl->dims[cl->n_dims - 1] : &cl->dims[0];
}

int etk_calib_param_default(const etk_calib_row *row, const char *name, double *out, etk_error *err)
{
    int k = net_param(name);
    if (k >= 0) {
        const etk_net_dim *d = net_dim((etk_cluster *)&row->cluster, k);
        *out = k == NET_NVLINK_BW || k == NET_NIC_BW ? d->bw_Bps / 1e9 : d->latency_ns;
        return 0;
    }
    etk_compute_params cp;
    etk_compute_defaults(&row->cluster.gpu, &cp);
    return etk_compute_get(&cp, name, out, err);
}

int etk_calib_apply(const etk_calib_params *p, etk_cluster *cl, etk_compute_params *cp,
                    etk_error *err)
{
    for (uint32_t i = 0; p && i < p->n; i++) {
        double v = p->value[i];
        int k = net_param(p->name[i]);
        if (k >= 0) {
            bool bw = k == NET_NVLINK_BW || k == NET_NIC_BW;
            if (!isfinite(v) || (bw ? !(v > 0) : v < 0))
                return etk_err(err, ETK_EINVAL, "%s: expected %s, got %g", p->name[i],
                               bw ? "a bandwidth > 0 GB/s" : "a latency >= 0 ns", v);
            if ((k == NET_NIC_BW || k == NET_NIC_LAT) && cl->n_dims < 2)
                continue; /* one node: no NIC on the path */
            etk_net_dim *d = net_dim(cl, k);
            if (bw)
                d->bw_Bps = v * 1e9;
            else
                d->latency_ns = v;
            if (cl->fabric.on) { /* the flow model's fabric follows the dimensions */
                if (k == NET_NVLINK_BW)
                    cl->fabric.nvlink_Bps = v * 1e9;
                else if (k == NET_NIC_BW)
                    cl->fabric.nic_Bps = v * 1e9;
                else if (k == NET_NVLINK_LAT)
                    cl->fabric.nvlink_lat_ns = v;
            }
            continue;
        }
        if (etk_compute_set_value(cp, p->name[i], v, err))
            return -1;
    }
    return 0;
}

int etk_calib_predict(etk_calib_row *row, const etk_calib_params *p, etk_calib_pred *out,
                      etk_error *err)
{
    memset(out, 0, sizeof *out);
    if (!row->built)
        return etk_err(err, ETK_EINVAL, "%s", row->reason);
    etk_cluster cl = row->cluster;
    etk_compute_params cp;
    etk_compute_defaults(&cl.gpu, &cp);
    if (etk_calib_apply(p, &cl, &cp, err))
        return -1;
    etk_sim_opts o;
    memset(&o, 0, sizeof o);
    o.quiet = true;
    o.compute = &cp;
    etk_run_opts_defaults(&cl, &o);
    if (!row->wl && etk_run_workload(&row->cfg, &cl, &o, &row->wl, err))
        return etk_err_prefix(err, "row %u '%s'", row->index, row->name);
    etk_sim *s = NULL;
    if (etk_run_simulate(&row->cfg, row->wl, &cl, &o, &s, err))
        return etk_err_prefix(err, "row %u '%s'", row->index, row->name);
    const etk_sim_result *r = etk_sim_result_get(s);
    double n = r->n_ranks ? r->n_ranks : 1;
    out->step_ns = r->step_ns;
    out->ttft_ns = r->ttft_ns;
    out->tpot_ns = r->tpot_ns;
    out->mem_peak_bytes = r->mem_peak_bytes;
    out->mem_capacity_bytes = r->mem_capacity_bytes;
    out->oom = r->mem_oom_ranks > 0;
    double t_s = r->step_ns / 1e9;
    switch (row->metric) {
    case ETK_CALIB_TOKENS_PER_S_PER_GPU:
        out->value = t_s > 0 ? row->cfg.tokens_per_step / t_s / n : 0;
        break;
    case ETK_CALIB_TFLOPS_PER_GPU:
        out->value = r->tflops_per_gpu;
        break;
    case ETK_CALIB_OUT_TOKENS_PER_S_PER_GPU: {
        /* the whole request: time to first token + the decode steps */
        double req_ns = r->decode_steps && r->phase_end_ns ? (double)r->phase_end_ns[r->decode_steps]
                                                           : (double)r->step_ns;
        if (!(req_ns > 0))
            req_ns = (double)r->step_ns;
        out->value = req_ns > 0 ? row->cfg.tokens_per_step / (req_ns / 1e9) / n : 0;
        break;
    }
    default:
        out->value = t_s;
    }
    etk_sim_free(s);
    if (!(out->value > 0) || !isfinite(out->value))
        return etk_err(err, ETK_EINVAL, "row %u '%s': the simulation gives no %s (step %llu ns)",
                       row->index, row->name, etk_calib_metric_name(row->metric),
                       (unsigned long long)out->step_ns);
    out->err_pct = 100.0 * (out->value - row->measured) / row->measured;
    return 0;
}
