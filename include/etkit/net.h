/* etkit/net.h — the cluster model: GPU figures (compute roofline) and the network as an ordered
 * list of dimensions, with analytical collective / point-to-point costs in integer ns.
 * Used by sim/ (the event engine) and by anything that wants a collective's time.
 * Units: bandwidth in bytes/s (10^9 B/s = 1 GB/s), latency in ns, FLOP/s, bytes. */
#ifndef ETKIT_NET_H
#define ETKIT_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum etk_precision {
    ETK_PREC_BF16 = 0,
    ETK_PREC_FP16 = 1,
    ETK_PREC_FP8 = 2,
    ETK_PREC_FP32 = 3,
    ETK_PREC_TF32 = 4,
} etk_precision;
#define ETK_PREC_COUNT 5

/* A compute-model parameter a GPU YAML sets (its `compute:` mapping): the names are those
 * etk_compute_set accepts (etkit/compute.h), checked when the YAML is loaded. */
#define ETK_GPU_MAX_COMPUTE 32
typedef struct etk_gpu_compute_param {
    char name[32];
    double value;
} etk_gpu_compute_param;

typedef struct etk_gpu {
    char name[64];
    double peak_flops[ETK_PREC_COUNT]; /* dense FLOP/s per precision (0: unsupported) */
    double hbm_bw_Bps;                 /* HBM bandwidth, bytes/s */
    uint64_t hbm_bytes;                /* HBM capacity, bytes */
    uint32_t n_compute;                /* compute-model overrides of the built-in defaults */
    etk_gpu_compute_param compute[ETK_GPU_MAX_COMPUTE];
} etk_gpu;

typedef enum etk_topo {
    ETK_TOPO_RING = 0,
    ETK_TOPO_FULLY_CONNECTED = 1,
    ETK_TOPO_SWITCH = 2,
} etk_topo;

typedef enum etk_algo {
    ETK_ALGO_AUTO = 0,
    ETK_ALGO_RING = 1,
    ETK_ALGO_DIRECT = 2,
    ETK_ALGO_HALVING_DOUBLING = 3,
    ETK_ALGO_DOUBLE_BINARY_TREE = 4,
} etk_algo;

#define ETK_MAX_DIMS 8

/* Network model used outside ASTRA-sim compatibility (docs/network-model.md). */
typedef enum etk_net_model {
    ETK_NET_ANALYTICAL = 0, /* α–β per dimension (docs/cluster.md); the default */
    ETK_NET_FLOW = 1,       /* NCCL-like algorithm/protocol choice, transfers on the fabric
                               timed by the max-min fair flow model (flow.h) */
} etk_net_model;

/* The physical fabric under the dimensions, for the flow model: an NVLink/NVSwitch domain per
 * node, one NIC per GPU, leaf switches (rail-optimized: NIC i of `leaf_nodes` nodes on rail
 * switch i; otherwise one top-of-rack switch for all NICs of `leaf_nodes` nodes), a spine
 * joining the leaves of a pod of `pod_nodes` nodes, and a core joining the pods. Oversubscription
 * is downlink:uplink bandwidth (1 = full bisection; Llama 3's 1:7 above the pod is 7). */
typedef struct etk_fabric {
    bool on;                 /* described (else derived from dims by etk_fabric_of) */
    bool rail;               /* rail-optimized leaves */
    uint32_t gpus_per_node;  /* NVSwitch domain */
    uint32_t nodes;
    uint32_t leaf_nodes;     /* nodes under one leaf (group) */
    uint32_t pod_nodes;      /* nodes per pod; 0 = one pod */
    double nvlink_Bps;       /* per GPU per direction */
    double nic_Bps;          /* per NIC per direction */
    double leaf_oversub;     /* leaf downlinks : uplinks (>= 1) */
    double pod_oversub;      /* pod : core (>= 1) */
    double nvlink_lat_ns;    /* GPU -> NVSwitch -> GPU */
    double nic_lat_ns;       /* endpoint cost of a NIC message (both ends) */
    double switch_lat_ns;    /* per switch traversed between nodes */
} etk_fabric;

/* Bandwidth factors (--link-factor): the NVLink or NIC links of one GPU, or a whole dimension. */
typedef enum etk_link_kind { ETK_LINK_NIC = 0, ETK_LINK_NVLINK = 1, ETK_LINK_DIM = 2 } etk_link_kind;
#define ETK_MAX_LINK_FACTORS 16
typedef struct etk_link_factor {
    int32_t kind;   /* etk_link_kind */
    uint32_t index; /* GPU rank (NIC, NVLINK) or dimension (DIM) */
    double factor;  /* multiplies the bandwidth, in (0, 1] usually */
} etk_link_factor;

typedef struct etk_net_dim {
    uint32_t size;       /* NPUs along this dimension */
    int32_t topo;        /* etk_topo */
    double bw_Bps;       /* per direction, bytes/s */
    double latency_ns;   /* per hop/link */
    /* all-to-all: the fraction of bw_Bps an all-to-all achieves on this dimension (measured
     * NVLink all-to-alls run below line rate; docs/cluster.md); 0 = unset = line rate */
    double a2a_eff;
    int32_t algo[ETK_COLL_TYPE_COUNT]; /* etk_algo per collective type on this dimension */
} etk_net_dim;

typedef struct etk_cluster {
    char name[64];
    etk_gpu gpu;
    uint32_t n_dims;
    etk_net_dim dims[ETK_MAX_DIMS]; /* dims[0] varies fastest: rank r has coordinate
                                       (r % dims[0].size, r / dims[0].size % dims[1].size, ...) */
    uint32_t n_npus;                /* product of dims[].size */
    double compute_efficiency;      /* roofline efficiency factor in (0, 1], default 1 */
    etk_precision precision;        /* which peak_flops the roofline uses, default bf16 */
    /* ASTRA-sim compatibility mode (--astra-compat): reproduce its congestion-unaware
     * analytical backend to the ns. */
    bool astra_compat;
    uint32_t astra_splits;          /* preferred-dataset-splits (C), default 4 */
    uint32_t astra_active_chunks;   /* active-chunks-per-dimension, default 1 */
    double astra_endpoint_delay_ns; /* endpoint-delay, default 10 */
    double astra_local_mem_bw_GBps; /* local-mem-bw in 10^9 B/s, default 1600 */
    /* Added by the net module (all default to false/0 when zeroed): */
    bool astra_local_bw_aware;      /* collective-optimization: localBWAware (else baseline) */
    bool astra_roofline;            /* roofline-enabled: time COMP nodes by the roofline */
    char warnings[512];             /* loader notes for the user (e.g. ignored ASTRA-sim keys),
                                       "" if none; the library never prints */
    /* Added by the flow model (zero = analytical model, no fabric, no factors): */
    int32_t net_model;              /* etk_net_model */
    etk_fabric fabric;
    uint32_t n_link_factors;
    etk_link_factor link_factors[ETK_MAX_LINK_FACTORS];
} etk_cluster;

/* Defaults for everything but gpu and dims: efficiency 1, bf16, ASTRA-sim defaults
 * (C = 4, active chunks 1, endpoint delay 10 ns, local-mem-bw 1600), compat off. */
void etk_cluster_init(etk_cluster *c);
/* Names of the built-in cluster presets, NULL-terminated ("dgx-a100", ...). */
const char *const *etk_cluster_preset_names(void);
/* Names of the built-in GPU presets, NULL-terminated ("a100", "h100", ...). */
const char *const *etk_gpu_preset_names(void);
/* A built-in GPU by name (presets/gpus/<name>.yaml). */
int etk_gpu_preset(const char *name, etk_gpu *out, etk_error *err);
/* Names used in YAML and messages: "Ring", "ring", "all_reduce", "bf16". Parse returns -1 if
 * unknown (topology names are case-insensitive; algorithm names accept ASTRA-sim's spellings
 * halvingDoubling and doubleBinaryTree). */
const char *etk_topo_name(int topo);
int etk_topo_parse(const char *s);
const char *etk_algo_name(int algo);
int etk_algo_parse(const char *s);
const char *etk_precision_name(int prec);
int etk_precision_parse(const char *s);

/* Where a group sits on the network, computed once per group (O(n_ranks), no allocation) so
 * that etk_net_place_coll_ns is O(dims) per call. A group is "regular" when its ranks form a
 * Cartesian sub-grid (on every dimension an arithmetic progression of coordinates); other
 * groups fall back to one flat ring over their members in the given order (docs/cluster.md). */
#define ETK_NET_MAX_LINK_CLASSES 8
#define ETK_NET_MAX_RING_RUNS 32
typedef struct etk_net_place {
    uint32_t n_ranks;
    bool whole;                         /* every NPU of the cluster, in any order */
    bool regular;                       /* Cartesian sub-grid */
    uint32_t n_spans;                   /* dimensions along which the group varies */
    uint8_t span_dim[ETK_MAX_DIMS];     /* ascending */
    uint32_t span_size[ETK_MAX_DIMS];   /* distinct coordinates along that dimension */
    uint32_t span_stride[ETK_MAX_DIMS]; /* coordinate step between neighbours */
    /* flat-ring view (irregular groups, and ASTRA-sim's logical ring for sub-groups): the
     * links member[i] -> member[i+1 mod n] grouped into classes of equal cost */
    uint32_t n_classes;
    uint8_t class_dim[ETK_NET_MAX_LINK_CLASSES];   /* first differing dimension */
    uint8_t class_maxdim[ETK_NET_MAX_LINK_CLASSES];/* last differing dimension */
    uint32_t class_hops[ETK_NET_MAX_LINK_CLASSES]; /* hops on class_dim (Ring distance) */
    uint32_t class_count[ETK_NET_MAX_LINK_CLASSES];
    uint64_t class_pairs;              /* bit a*8+b: a link of class a followed by class b */
    bool classes_overflow;             /* more than ETK_NET_MAX_LINK_CLASSES kinds of link */
    /* the same links in ring order, run-length encoded (class, count); kept up to
     * ETK_NET_MAX_RING_RUNS runs (runs_overflow past that). ASTRA-sim compatibility times a
     * sub-group ring link by link from it (net/astra.c). */
    uint32_t n_runs;
    uint8_t run_class[ETK_NET_MAX_RING_RUNS];
    uint32_t run_len[ETK_NET_MAX_RING_RUNS];
    bool runs_overflow;
} etk_net_place;

int etk_net_place_group(const etk_cluster *c, const uint32_t *ranks, uint32_t n_ranks,
                        etk_net_place *out, etk_error *err);
/* etk_net_coll_ns for a group placed on the same cluster: O(dims) (O(log n) for halving-doubling), no allocation. */
uint64_t etk_net_place_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type type,
                               uint64_t bytes);

/* Built-in presets "dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200" (figures from
 * ../shared/spec/hardware.md) with `nodes` nodes of 8 GPUs. */
int etk_cluster_preset(const char *name, uint32_t nodes, etk_cluster *out, etk_error *err);
/* The same with one node of `gpus` GPUs (1 to the preset's node size; nodes must be 1), e.g. one
 * DGX H100 with 2 GPUs; gpus 0: the preset's node. */
int etk_cluster_preset_gpus(const char *name, uint32_t nodes, uint32_t gpus, etk_cluster *out, etk_error *err);
/* etkit cluster YAML (docs/cluster.md). */
int etk_cluster_load(const char *path, etk_cluster *out, etk_error *err);
/* Same from text in memory (`name` is used in messages). */
int etk_cluster_parse(const char *text, size_t len, const char *name, etk_cluster *out,
                      etk_error *err);
/* One line for reports, e.g. "dgx-h100: 64 x H100-SXM (989 TFLOP/s bf16, 3350 GB/s HBM);
 * network 8 Switch 450 GB/s 500 ns x 8 Switch 50 GB/s 2000 ns". Returns buf. */
char *etk_cluster_describe(const etk_cluster *c, char *buf, size_t size);
/* ASTRA-sim network YAML + system JSON (their units: network GB/s = 2^30 B/s, local-mem-bw
 * GB/s = 10^9 B/s, peak-perf TFLOP/s). Sets astra_compat. */
int etk_cluster_load_astra(const char *network_yaml, const char *system_json, etk_cluster *out,
                           etk_error *err);
/* Check internal consistency (sizes > 0, bandwidth > 0, known topology) and that the cluster
 * has exactly n_ranks NPUs; the message says what is wrong. */
int etk_cluster_check(const etk_cluster *c, uint32_t n_ranks, etk_error *err);

/* Time of one collective of `bytes` (the Chakra comm_size convention: all-gather = per-rank
 * input, others = full buffer) over the given group of ranks, placed on the dimensions the
 * group actually spans. This places the group on every call: O(n_ranks); callers that
 * issue many collectives on one group should place it once with etk_net_place_group.
 * ranks == NULL means ranks 0..n_ranks-1 (e.g. no comm-group file: the whole cluster). Ranks out of range
 * count as rank % n_npus; an empty or one-rank group costs 0; a cluster that fails
 * etk_cluster_check with a zero bandwidth gives UINT64_MAX (never finishes). */
uint64_t etk_net_coll_ns(const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                         const uint32_t *ranks, uint32_t n_ranks);
/* Time of one point-to-point message. */
uint64_t etk_net_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes);
/* ---- fabric and flow model (topo.c, nccl.c; docs/network-model.md) ---- */

/* The fabric of a cluster: c->fabric if described, else one derived from the dimensions
 * (dims[0] = NVSwitch node, the product of the others = nodes on one full-bisection switch). */
void etk_fabric_of(const etk_cluster *c, etk_fabric *out);
/* Number of directed links of the fabric and their capacities (bytes/ns) after link factors;
 * caps may be NULL to get the count only. */
uint32_t etk_fabric_links(const etk_cluster *c, const etk_fabric *f, double *caps);
/* Route of a message src -> dst: the links it crosses (at most 8), its latency, and the number
 * of switches between nodes (0 inside a node, 1 same leaf, 3 same pod, 5 across pods). A message
 * between rails first moves over NVLink to the GPU on the destination's rail (NCCL's PXN). */
typedef struct etk_route {
    uint32_t n;
    uint32_t link[8];
    double latency_ns;
    uint32_t switch_hops;
    bool crosses_nic;
} etk_route;
void etk_fabric_route(const etk_fabric *f, uint32_t src, uint32_t dst, etk_route *out);

/* NCCL-like algorithm and protocol choice (nccl.c). */
typedef enum etk_nccl_algo { ETK_NCCL_RING = 0, ETK_NCCL_TREE = 1, ETK_NCCL_NVLS = 2 } etk_nccl_algo;
typedef enum etk_nccl_proto { ETK_NCCL_LL = 0, ETK_NCCL_LL128 = 1, ETK_NCCL_SIMPLE = 2 } etk_nccl_proto;
typedef struct etk_nccl_choice {
    int32_t algo, proto;
    double time_ns;     /* predicted, no congestion */
    double busbw_GBps;  /* nccl-tests bus bandwidth of that time */
    double eff;         /* fraction of link bandwidth the algorithm and protocol reach */
    double lat_ns;      /* latency part of time_ns */
} etk_nccl_choice;
/* Choice for one collective of `bytes` (Chakra convention) over n_ranks GPUs spread over
 * n_nodes nodes of the fabric (n_ranks / n_nodes per node). */
void etk_nccl_choose(const etk_cluster *c, const etk_fabric *f, etk_coll_type type, uint64_t bytes,
                     uint32_t n_ranks, uint32_t n_nodes, etk_nccl_choice *out);
/* Simple-protocol efficiency of a point-to-point path (NIC or NVLink). */
double etk_nccl_link_eff(bool crosses_nic);
const char *etk_nccl_algo_name(int a);
const char *etk_nccl_proto_name(int p);
/* nccl-tests bus bandwidth factor of a collective on n ranks (all-reduce 2(n-1)/n, ...). */
double etk_busbw_factor(etk_coll_type type, uint32_t n);

/* Concurrent operations on the flow model: each op a collective over `ranks` or a send
 * (type < 0, ranks = {src, dst}), started at start_ns; finish_ns gets when it completes. */
typedef struct etk_flow_op {
    int32_t type;            /* etk_coll_type, or -1 for a point-to-point send */
    uint64_t bytes;
    const uint32_t *ranks;
    uint32_t n_ranks;
    uint64_t start_ns;
    double finish_ns;        /* out */
    etk_nccl_choice choice;  /* out: the algorithm used (collectives) */
} etk_flow_op;
int etk_net_flow_run(const etk_cluster *c, etk_flow_op *ops, uint32_t n_ops, etk_error *err);
/* The same as a session the simulator drives event by event (sim/engine.c): operations start at
 * the session's clock; etk_net_flows_next advances to the next completed operation (returns 1
 * with its tag and time) or to t_limit (returns 0; the clock then stands at t_limit). */
typedef struct etk_net_flows etk_net_flows;
int etk_net_flows_new(const etk_cluster *c, etk_net_flows **out, etk_error *err);
int etk_net_flows_start(etk_net_flows *s, int32_t type, uint64_t bytes, const uint32_t *ranks,
                        uint32_t n_ranks, uint64_t tag, etk_error *err);
int etk_net_flows_next(etk_net_flows *s, double t_limit, uint64_t *tag, double *t_ns);
bool etk_net_flows_busy(const etk_net_flows *s);
/* Links of the fabric the session's transfers have crossed so far: the flow state is sized by
 * these, not by the fabric (for tests). */
uint32_t etk_net_flows_links(const etk_net_flows *s);
void etk_net_flows_free(etk_net_flows *s);
/* Parse a --link-factor spec: "nic:RANK:F", "nvlink:RANK:F" or "dim:D:F" (appended to c). */
int etk_link_factor_parse(etk_cluster *c, const char *spec, etk_error *err);

/* Roofline time of a compute node: max(flops / (peak * eff), bytes / (hbm_bw * eff)). */
uint64_t etk_hw_compute_ns(const etk_cluster *c, uint64_t flops, uint64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
