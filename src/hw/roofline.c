/* roofline.c — compute time of one trace node on the cluster's GPU when the trace gives no
 * duration: the roofline max(FLOPs / (peak·efficiency), bytes / (HBM bandwidth·efficiency)).
 * sim/ calls it for COMP nodes; the peak is the one of the cluster's precision. In ASTRA-sim
 * compatibility mode it follows ASTRA-sim: efficiency 1, and a node with tensor_size 0 takes
 * 0 ns. Times are truncated to whole ns, as ASTRA-sim does. */
#include <math.h>

#include "etkit/net.h"

uint64_t etk_hw_compute_ns(const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    if (c->astra_compat && bytes == 0)
        return 0;
    int p = (int)c->precision;
    if (p < 0 || p >= ETK_PREC_COUNT)
        p = ETK_PREC_BF16;
    long double eff = c->astra_compat ? 1.0L : (long double)c->compute_efficiency;
    if (!(eff > 0) || eff > 1)
        eff = 1;
    long double peak = (long double)c->gpu.peak_flops[p] * eff;
    long double bw = (long double)c->gpu.hbm_bw_Bps * eff;
    long double t = 0;
    if (flops && peak > 0)
        t = (long double)flops * 1e9L / peak;
    if (bytes && bw > 0) {
        long double tm = (long double)bytes * 1e9L / bw;
        if (tm > t)
            t = tm;
    }
    if (t >= 1.8e19L)
        return UINT64_MAX;
    return (uint64_t)floorl(t);
}
