/* net_internal.h — helpers shared by the files of src/net/ (not public API).
 * Module map (arrows point down): select.c (cost entry points: etk_net_coll_ns, etk_net_p2p_ns)
 * -> astra.c (ASTRA-sim compatibility costs), topo.c (flow model) -> nccl.c, cost.c (placement,
 * α–β analytical model); astra.c -> cost.c for the types compat mode does not simulate;
 * astra_load.c (ASTRA-sim network/system files) and cluster.c (cluster files) load clusters. */
#ifndef ETK_NET_INTERNAL_H
#define ETK_NET_INTERNAL_H
#include "etkit/net.h"

/* Recompute n_npus from the dimensions. */
void net_cluster_finish(etk_cluster *c);
/* "8 Switch x 16 Switch" (thread-local buffer) for messages. */
const char *net_dims_str(const etk_cluster *c);
/* Coordinate of rank r along dimension d. */
static inline uint32_t net_coord(const etk_cluster *c, uint32_t r, uint32_t d)
{
    for (uint32_t i = 0; i < d; i++)
        r /= c->dims[i].size;
    return r % c->dims[d].size;
}
/* ASTRA-sim compatibility costs (astra.c). */
uint64_t net_astra_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type type,
                           uint64_t bytes);
uint64_t net_astra_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes);
/* Physical-model cost of one collective (cost.c), used for the types compat mode does not
 * simulate. */
uint64_t net_phys_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type type,
                          uint64_t bytes);
/* Physical-model cost of a message between distinct NPUs src, dst < n_npus (cost.c). */
uint64_t net_phys_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes);
/* Flow network model (topo.c): one operation alone on the fabric, UINT64_MAX on failure. */
uint64_t net_flow_coll_ns(const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                          const uint32_t *ranks, uint32_t n_ranks);
/* Directed links of the cluster's fabric, counted in 64 bits: the flow model numbers them in 32
 * (etk_fabric_links) and refuses a fabric past UINT32_MAX links (about 1 billion GPUs). */
uint64_t net_flow_fabric_links(const etk_cluster *c);
uint64_t net_flow_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes);
/* The cluster with --link-factor factors applied to the dimensions, as the analytical model
 * sees them for an operation over `ranks` (NULL = 0..n-1). */
void net_factored(const etk_cluster *c, const uint32_t *ranks, uint32_t n, etk_cluster *out);
#endif
