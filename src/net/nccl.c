/* nccl.c — NCCL-like choice of algorithm (ring, tree, NVLink SHARP) and protocol (LL, LL128,
 * Simple) per collective and size, with per-message latency and protocol overhead so that small
 * messages are latency-bound. The flow model (topo.c) executes the chosen algorithm's transfers
 * with the chosen efficiency; etk_nccl_choose alone is the congestion-free prediction.
 *
 * Every constant below says where it comes from (docs/network-model.md has the table). */
#include <math.h>

#include "etkit/net.h"
#include "net/net_internal.h"

/* Bandwidth efficiencies of the Simple protocol at large sizes, as fractions of the per-
 * direction link bandwidth of the bottleneck:
 * - NVLink ring: 365 of 450 GB/s bus bandwidth, the middle of "360–370 GB/s without NVLink
 *   SHARP" on 8 × H100 (../shared/spec/hardware.md, achieved figures).
 * - NVLink SHARP all-reduce: 476 GB/s bus bandwidth on 8 × H100 (calibration.md, the only
 *   fitted constant): each GPU moves S up and S down, so busbw = 2(n-1)/n · 450 · e = 476,
 *   e = 476 / 787.5.
 * - NIC: 47 of 50 GB/s, the middle of "NDR 400 Gb/s: 46–48 GB/s per NIC" (calibration.md). */
#define EFF_NVL_RING (365.0 / 450.0)
#define EFF_NVLS (476.0 / (2.0 * 7.0 / 8.0 * 450.0))
#define EFF_NIC (47.0 / 50.0)

/* Protocols (NCCL's design, not fitted): LL sends 8-byte words of 4 data bytes + 4 flag bytes
 * (half the bandwidth) with no fences; LL128 sends 128-byte lines of 120 data bytes; Simple
 * moves whole buffers at full bandwidth but synchronises each step with a flag round trip
 * (twice the per-hop latency). Base latencies (kernel launch and set-up per collective) are
 * etkit's assumptions of the order of NCCL's tuning table: no small-message row exists in
 * calibration.md to fit them, so the small-size shape is qualitative. */
static const double proto_eff[3] = {0.5, 120.0 / 128.0, 1.0};
static const double proto_base_ns[3] = {4000, 6000, 10000};
static const double proto_hop_mult[3] = {1.0, 1.0, 2.0};
/* Tree pipelines less well than the ring at large sizes (NCCL's tuner also scales tree
 * bandwidth down): etkit assumption 0.9, not fitted (no multi-node size sweep in
 * calibration.md). It makes the ring win at large sizes and the tree at small ones. */
#define TREE_EFF 0.9

double etk_nccl_link_eff(bool crosses_nic) { return crosses_nic ? EFF_NIC : EFF_NVL_RING; }

const char *etk_nccl_algo_name(int a)
{
    return a == ETK_NCCL_RING ? "ring" : a == ETK_NCCL_TREE ? "tree" : a == ETK_NCCL_NVLS ? "nvls" : "?";
}

const char *etk_nccl_proto_name(int p)
{
    return p == ETK_NCCL_LL ? "LL" : p == ETK_NCCL_LL128 ? "LL128" : p == ETK_NCCL_SIMPLE ? "Simple" : "?";
}

double etk_busbw_factor(etk_coll_type t, uint32_t n)
{
    double x = n;
    if (n <= 1)
        return 0;
    switch (t) {
    case ETK_COLL_ALL_REDUCE: return 2 * (x - 1) / x;
    case ETK_COLL_ALL_GATHER: return x - 1; /* Chakra S is per rank: total n·S, × (n-1)/n */
    case ETK_COLL_BROADCAST:
    case ETK_COLL_REDUCE: return 1;
    case ETK_COLL_BARRIER: return 0;
    default: return (x - 1) / x;
    }
}

static double ceil_log2(double n) { return n <= 1 ? 0 : ceil(log2(n) - 1e-12); }

void etk_nccl_choose(const etk_cluster *c, const etk_fabric *f, etk_coll_type t, uint64_t bytes,
                     uint32_t n, uint32_t nodes, etk_nccl_choice *out)
{
    (void)c;
    double S = (double)bytes;
    uint32_t G = nodes ? n / nodes : n;
    if (G < 1)
        G = 1;
    out->algo = ETK_NCCL_RING;
    out->proto = ETK_NCCL_SIMPLE;
    out->time_ns = 0;
    out->busbw_GBps = 0;
    out->eff = nodes > 1 ? EFF_NIC : EFF_NVL_RING;
    out->lat_ns = 0;
    if (n <= 1)
        return;
    double wire = S * etk_busbw_factor(t, n); /* bytes each rank sends in a ring */
    if (t == ETK_COLL_ALL_TO_ALL)
        wire = S * (n - 1) / n;
    /* bottleneck bandwidth per rank (bytes/ns): NVLink inside a node; across nodes each node's
     * G NICs carry G ring channels, so a rank's ring traffic moves at one NIC's bandwidth */
    double B = nodes > 1 ? f->nic_Bps / 1e9 : f->nvlink_Bps / 1e9;
    double hop = nodes > 1 ? f->nic_lat_ns + 3 * f->switch_lat_ns : f->nvlink_lat_ns;
    double steps = t == ETK_COLL_ALL_REDUCE ? 2.0 * (n - 1) : (double)(n - 1);
    if (t == ETK_COLL_ALL_TO_ALL)
        steps = 1;
    double best = INFINITY;
    for (int p = 0; p < 3; p++) {
        double eff = (nodes > 1 ? EFF_NIC : EFF_NVL_RING) * proto_eff[p];
        /* ring: across nodes, the n-1 steps are nodes-1 NIC hops and the rest NVLink hops */
        double hops_lat = nodes > 1 ? (steps / (n - 1)) * ((nodes - 1) * hop +
                                       (n - nodes) * f->nvlink_lat_ns)
                                    : steps * hop;
        if (t == ETK_COLL_ALL_TO_ALL)
            hops_lat = hop;
        double lat = proto_base_ns[p] + proto_hop_mult[p] * hops_lat;
        double tt = lat + wire / (B * eff);
        if (tt < best) {
            best = tt;
            *out = (etk_nccl_choice){ETK_NCCL_RING, p, tt, 0, eff, lat};
        }
        if (t == ETK_COLL_ALL_REDUCE && nodes > 1) {
            /* tree: a chain inside each node, double binary tree between nodes; every rank
             * sends and receives about the whole buffer twice (reduce up, broadcast down) */
            double tl = proto_base_ns[p] +
                        proto_hop_mult[p] * (2 * ceil_log2(nodes) * hop +
                                             2 * (G - 1) * f->nvlink_lat_ns);
            double tb = tl + 2 * S / (B * eff * TREE_EFF);
            if (tb < best) {
                best = tb;
                *out = (etk_nccl_choice){ETK_NCCL_TREE, p, tb, 0, eff * TREE_EFF, tl};
            }
        }
    }
    /* NVLink SHARP: one node, NVLink 4 or later (450 GB/s per direction and up: H100, H200,
     * B200 NVSwitch), all-reduce / reduce-scatter / all-gather, Simple protocol only */
    if (nodes == 1 && f->nvlink_Bps >= 450e9 &&
        (t == ETK_COLL_ALL_REDUCE || t == ETK_COLL_REDUCE_SCATTER || t == ETK_COLL_ALL_GATHER)) {
        double v = t == ETK_COLL_ALL_GATHER ? n * S : S; /* bytes through a GPU's busiest port */
        double lat = proto_base_ns[ETK_NCCL_SIMPLE] + 2 * proto_hop_mult[ETK_NCCL_SIMPLE] *
                                                          f->nvlink_lat_ns;
        double tt = lat + v / (f->nvlink_Bps / 1e9 * EFF_NVLS);
        if (tt < best) {
            best = tt;
            *out = (etk_nccl_choice){ETK_NCCL_NVLS, ETK_NCCL_SIMPLE, tt, 0, EFF_NVLS, lat};
        }
    }
    out->busbw_GBps = out->time_ns > 0 ? S * etk_busbw_factor(t, n) / out->time_ns : 0;
}
