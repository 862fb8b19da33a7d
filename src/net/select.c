/* select.c — the network cost entry points the simulator calls (etk_net_coll_ns,
 * etk_net_place_coll_ns, etk_net_p2p_ns): each picks the model the cluster asks for — ASTRA-sim
 * compatibility (astra.c), the flow model (topo.c) or the analytical α–β model (cost.c) — after
 * applying --link-factor slowdowns (net_factored). It sits above all three, so they never call
 * each other through it. */
#include <math.h>
#include <string.h>

#include "etkit/net.h"
#include "net/net_internal.h"

uint64_t etk_net_place_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type type,
                               uint64_t bytes)
{
    if (p->n_ranks <= 1 || (int)type < 0 || (int)type >= ETK_COLL_TYPE_COUNT)
        return 0;
    for (uint32_t d = 0; d < c->n_dims && d < ETK_MAX_DIMS; d++)
        if (!(c->dims[d].bw_Bps > 0) && c->dims[d].size > 1)
            return UINT64_MAX; /* unchecked cluster with a dead dimension: never finishes */
    if (c->astra_compat)
        return net_astra_coll_ns(c, p, type, bytes);
    return net_phys_coll_ns(c, p, type, bytes);
}

void net_factored(const etk_cluster *c, const uint32_t *ranks, uint32_t n, etk_cluster *out)
{
    *out = *c;
    for (uint32_t i = 0; i < c->n_link_factors; i++) {
        const etk_link_factor *lf = &c->link_factors[i];
        if (lf->kind == ETK_LINK_DIM) {
            if (lf->index < out->n_dims)
                out->dims[lf->index].bw_Bps *= lf->factor;
            continue;
        }
        bool member = false;
        for (uint32_t j = 0; j < n && !member; j++)
            member = (ranks ? ranks[j] : j) % (c->n_npus ? c->n_npus : 1) == lf->index;
        if (!member)
            continue;
        /* a ring or message through that GPU's link runs at the slowed link */
        if (lf->kind == ETK_LINK_NVLINK)
            out->dims[0].bw_Bps *= lf->factor;
        else
            for (uint32_t d = 1; d < out->n_dims; d++)
                out->dims[d].bw_Bps *= lf->factor;
    }
    out->n_link_factors = 0;
}

uint64_t etk_net_coll_ns(const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                         const uint32_t *ranks, uint32_t n_ranks)
{
    if (!c->astra_compat && c->net_model == ETK_NET_FLOW)
        return n_ranks <= 1 ? 0 : net_flow_coll_ns(c, type, bytes, ranks, n_ranks);
    if (!c->astra_compat && c->n_link_factors) {
        etk_cluster f;
        net_factored(c, ranks, n_ranks, &f);
        return etk_net_coll_ns(&f, type, bytes, ranks, n_ranks);
    }
    etk_net_place p;
    if (etk_net_place_group(c, ranks, n_ranks, &p, NULL))
        return 0;
    return etk_net_place_coll_ns(c, &p, type, bytes);
}

uint64_t etk_net_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes)
{
    if (c->n_npus == 0)
        return 0;
    src %= c->n_npus;
    dst %= c->n_npus;
    if (src == dst)
        return 0;
    if (c->astra_compat)
        return net_astra_p2p_ns(c, src, dst, bytes);
    if (c->net_model == ETK_NET_FLOW)
        return net_flow_p2p_ns(c, src, dst, bytes);
    if (c->n_link_factors) {
        etk_cluster f;
        uint32_t r[2] = {src, dst};
        net_factored(c, r, 2, &f);
        return etk_net_p2p_ns(&f, src, dst, bytes);
    }
    return net_phys_p2p_ns(c, src, dst, bytes);
}
