/* etkit/flow.h — congestion-aware flow model: transfers (flows) over directed links of given
 * capacity share bandwidth max-min fairly; the model is event driven (flows arrive, drain,
 * finish) and recomputes rates only for the flows connected to the links that changed.
 * Used with the fabric routes of net.h (etk_fabric_route) to time concurrent collectives and
 * sends; docs/network-model.md.
 * Units: bytes, ns, capacities in bytes per ns (1 B/ns = 1 GB/s). */
#ifndef ETKIT_FLOW_H
#define ETKIT_FLOW_H

#include <stdint.h>

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETK_FLOW_MAX_PATH 16

typedef struct etk_flow etk_flow;

/* A network of n_links directed links with capacities cap_Bpns[i] > 0 (copied). */
int etk_flow_new(uint32_t n_links, const double *cap_Bpns, etk_flow **out, etk_error *err);
void etk_flow_free(etk_flow *f);
/* Add one link of capacity cap_Bpns > 0; *id gets its index (the next after the existing ones).
 * Lets a caller size the network by the links its transfers use (net/topo.c maps a large
 * fabric's links to these on first use), not by the whole fabric. */
int etk_flow_add_link(etk_flow *f, double cap_Bpns, uint32_t *id, etk_error *err);
/* Scale the capacity of one link (e.g. --link-factor); only before flows are added. */
int etk_flow_set_capacity(etk_flow *f, uint32_t link, double cap_Bpns, etk_error *err);

/* Start a transfer of `bytes` at the current time over the links path[0..n-1] (at most
 * ETK_FLOW_MAX_PATH, each link once). It drains at its max-min fair rate and completes
 * latency_ns after its last byte left. tag is returned by etk_flow_next. A flow with an empty
 * path or zero bytes completes after latency_ns. */
int etk_flow_start(etk_flow *f, uint64_t bytes, const uint32_t *path, uint32_t n,
                   double latency_ns, uint64_t tag, etk_error *err);
/* Start many flows at one instant: between hold and release, etk_flow_start only records the
 * flows; release computes the rates once (O(F log L) instead of O(F²) for F connected flows). */
void etk_flow_hold(etk_flow *f);
int etk_flow_release(etk_flow *f, etk_error *err);
/* Time of the next event (a flow draining or completing), INFINITY if none is in flight. A
 * flow's completion can only move later than this when flows are added before it. */
double etk_flow_next_time(etk_flow *f);
/* Advance the clock to the next completion (at most up to t_limit) and return 1 with the
 * completed flow's tag and time; 0 if none completes by t_limit (the clock then stands at
 * t_limit, so new flows start there). */
int etk_flow_next(etk_flow *f, double t_limit, uint64_t *tag, double *t_ns);
double etk_flow_now(const etk_flow *f);
/* Current rate of the flow with this tag in B/ns (0 if not draining); for tests. */
double etk_flow_rate(const etk_flow *f, uint64_t tag);
uint32_t etk_flow_active(const etk_flow *f);
/* Work counters for benchmarks: flows whose rate was recomputed, summed over events. */
uint64_t etk_flow_work(const etk_flow *f);

#ifdef __cplusplus
}
#endif
#endif
