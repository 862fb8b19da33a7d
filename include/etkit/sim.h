/* etkit/sim.h — the event-driven simulator: per-rank traces (or a workload) on a modelled
 * cluster (net.h) give the step time and where the time goes.
 *
 * Time is integer nanoseconds. Each simulated rank has CPU, compute and communication streams
 * (one of each by default, like ASTRA-sim); a node runs when all its data and control
 * dependencies are done and a stream of its kind is free, smallest node id first. Collectives are
 * matched per communicator group in issue order and start when every member has issued them;
 * send/recv pairs are matched on (src, dst, tag) in order and transfer when both are posted.
 *
 * The engine is incremental: etk_sim_new, then feed traces (etk_sim_add_rank_trace, any number
 * of times per rank, also after the run has started), advance virtual time with
 * etk_sim_run_until, and finish with etk_sim_finish (which reports deadlocks). etk_sim_workload
 * does all of it for a whole workload, with rank folding. docs/sim.md describes the semantics. */
#ifndef ETKIT_SIM_H
#define ETKIT_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "etkit/compute.h"
#include "etkit/et.h"
#include "etkit/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Cost hooks: replace the net.h model (for tests, live mode, calibrated models). */
typedef struct etk_sim_costs {
    uint64_t (*coll_ns)(void *ctx, const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                        const uint32_t *ranks, uint32_t n_ranks);
    uint64_t (*p2p_ns)(void *ctx, const etk_cluster *c, uint32_t src, uint32_t dst,
                       uint64_t bytes);
    uint64_t (*compute_ns)(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes);
    void *ctx;
} etk_sim_costs;

typedef struct etk_sim_opts {
    uint32_t cpu_streams;       /* per rank; 0 means 1 */
    uint32_t comp_streams;      /* GPU compute streams per rank; 0 means 1 (at most 32) */
    uint32_t comm_streams;      /* GPU communication streams per rank; 0 means 1 (at most 32) */
    bool comm_stream_per_group; /* each communicator group a rank uses (and its point-to-point
                                   sends) has a stream of its own, as NCCL runs one stream per
                                   communicator; comm_streams is then ignored. A rank with more
                                   than 32 groups shares streams (group index mod 32) */
    bool missing_deps_ignore;   /* lenient dependencies (converter output): deps on ids absent
                                   from the trace count as satisfied, and control deps that
                                   close a cycle with data deps are dropped; both warned */
    bool stage_units;           /* STAGE traces: sizes in fp16 elements (x2 bytes), MACs (x2) */
    bool no_fold;               /* etk_sim_workload: simulate every rank */
    bool timeline;              /* keep per-node times for etk_sim_write_timeline */
    bool quiet;                 /* (for callers) no warnings; the library itself never prints */
    double model_flops;         /* FLOPs of one step over all ranks; 0: sum of num_ops */
    double tokens_per_step;     /* tokens processed per step; 0: unknown */
    const etk_sim_costs *costs; /* NULL: etk_net_coll_ns, etk_net_p2p_ns, etk_hw_compute_ns */
    /* Compute model and heterogeneity (compute.h, docs/compute-model.md); zero: off */
    const etk_compute_params *compute; /* GPU nodes without a duration timed by the compute
                                          model instead of the roofline (unless costs->compute_ns
                                          is set); its overlap_slowdown stretches compute that
                                          starts while a transfer of its rank is in flight */
    const double *rank_speed;   /* [n_rank_speed]: compute speed of each rank (1 nominal, 0.8 =
                                   every GPU node takes 1/0.8 as long); ranks beyond are 1.
                                   etk_sim_workload does not fold when a factor differs from 1 */
    uint32_t n_rank_speed;
    struct etk_progress *progress; /* nodes executed of the simulated ranks' nodes, updated every
                                      4096 events (etkit/progress.h); NULL: none */
} etk_sim_opts;

/* Where one rank's time goes. compute + exposed_comm + cpu + idle = step time (the slowest
 * rank's finish); overlapped_comm runs while compute runs and is not part of the sum. idle covers
 * waiting for peers (pipeline bubble, stragglers) and the tail after the rank finished. */
typedef struct etk_sim_rank_stats {
    uint64_t finish_ns;          /* when the rank's last node completed */
    uint64_t compute_ns;         /* some GPU compute stream busy */
    uint64_t exposed_comm_ns;    /* a transfer in flight and no compute */
    uint64_t overlapped_comm_ns; /* a transfer in flight during compute */
    uint64_t cpu_ns;             /* only CPU ops running */
    uint64_t idle_ns;            /* nothing running (includes waiting for peers) */
    uint64_t flops;              /* num_ops executed on the GPU */
    uint64_t comm_bytes;         /* collective + send bytes issued */
    uint64_t n_nodes;            /* nodes executed */
    /* memory over time, from nodes with mem_alloc_bytes (allocated when the node starts) and
     * mem_free_bytes (released when it ends) attributes; all 0 when the trace has none */
    uint64_t mem_peak_bytes;     /* highest allocated total */
    uint64_t mem_peak_ns;        /* first moment it is reached */
    uint64_t mem_peak_node;      /* id of the node whose allocation reached it */
} etk_sim_rank_stats;

/* One row per collective type and group; groups with identical figures are merged (n_groups).
 * type is an etk_coll_type, or -1 for point-to-point sends. */
typedef struct etk_sim_coll_stats {
    int32_t type;
    const char *group;   /* id of the first group of the row ("p2p" for sends) */
    uint32_t group_size; /* ranks in each group */
    uint32_t n_groups;   /* groups merged into this row */
    uint64_t count;      /* operations per group */
    uint64_t bytes;      /* comm_size summed over those operations (per group) */
    uint64_t time_ns;    /* transfer time summed (per group) */
    double algbw_GBps;   /* bytes / time, 10^9 B/s */
    double busbw_GBps;   /* nccl-tests bus bandwidth (docs/sim.md) */
} etk_sim_coll_stats;

typedef struct etk_sim_result {
    uint32_t n_ranks;
    uint32_t n_simulated;      /* ranks actually simulated (one per class when folded) */
    uint32_t n_classes;
    bool folded;
    uint64_t step_ns;          /* max finish over ranks */
    uint64_t n_events;         /* nodes executed by the simulated ranks */
    uint64_t missing_deps;     /* dependency ids absent from their trace (ignored) */
    uint64_t ctrl_deps_dropped;/* control deps closing cycles, dropped (missing_deps_ignore) */
    etk_sim_rank_stats *ranks; /* [n_ranks] */
    etk_sim_coll_stats *coll;
    size_t n_coll;
    double flops_per_step;     /* model FLOPs of the step over all ranks */
    bool model_flops_given;    /* true: from the caller (generator); false: sum of num_ops */
    double tflops_per_gpu;     /* flops_per_step / n_ranks / step time, in TFLOP/s */
    double peak_tflops;        /* the GPU's peak at the precision used: the cluster's, or FP8
                                  where GEMMs ran in FP8 (peak_precision) */
    double mfu;                /* tflops_per_gpu / peak_tflops (0 if unknown) */
    int peak_precision;        /* etk_precision of peak_tflops */
    double mfu_bf16;           /* tflops_per_gpu / the BF16 peak (0 if unknown) */
    double tokens_per_step;
    double tokens_per_s;       /* 0 if unknown */
    const char *cluster;
    const char *workload;
    const char *warnings;      /* "" or "; "-separated notes (lenient reads); never printed by
                                  the library */
    /* memory over time (see etk_sim_rank_stats.mem_*): */
    bool mem_tracked;          /* some node carries mem_alloc_bytes / mem_free_bytes */
    uint64_t mem_peak_bytes;   /* highest per-rank peak */
    uint32_t mem_peak_rank;    /* the rank where it happens (lowest such rank) */
    const char *mem_peak_op;   /* name of the node that reached it there ("" if none) */
    uint64_t mem_capacity_bytes; /* the GPU's HBM (0: unknown) */
    uint32_t mem_oom_ranks;    /* ranks whose peak exceeds the capacity: predicted OOM */
    /* inference traces: nodes named "prefill/..." and "decode<i>/..." (etkit gen --mode
     * inference; docs/sim.md). phase_end_ns[0] is the end of the last prefill node (time to
     * first token), phase_end_ns[i] the end of the last node of decode step i (0 if the trace
     * has none); decode step i takes phase_end_ns[i] - phase_end_ns[i - 1]. */
    bool inference;
    uint32_t decode_steps;     /* N: highest decode step seen */
    uint64_t *phase_end_ns;    /* [decode_steps + 1] */
    uint64_t ttft_ns;          /* time to first token = phase_end_ns[0] */
    double tpot_ns;            /* time per output token: mean decode step, (end N - ttft) / N */
    uint64_t tpot_min_ns, tpot_max_ns; /* shortest and longest decode step */
    /* for the JSON and CSV reports (docs/sim.md "Machine-readable reports"): the cluster
     * simulated (set by the simulator), and, set by the caller after the run (NULL / 0: none),
     * the etkit version, the command line and the plan as key/value text (etkit run: model,
     * mode, ranks, tp, cp, pp, vpp, dp, ep, sp, zero, recompute, seq, precision, ...) */
    const etk_cluster *cluster_spec;
    const char *etkit_version;
    const char *command_line;
    const char *const *plan_keys;
    const char *const *plan_values;
    uint32_t n_plan;
} etk_sim_result;

typedef struct etk_sim etk_sim;

/* A simulator for n_ranks ranks on cluster c (copied). groups may be NULL (then only the
 * all-ranks group exists); it must outlive the simulator. */
int etk_sim_new(const etk_cluster *c, uint32_t n_ranks, const etk_groups *groups,
                const etk_sim_opts *opts, etk_sim **out, etk_error *err);
/* Fold: only class representatives get traces; every other rank reports its class's figures.
 * Collectives are matched among simulated members, sends/recvs on (class(src), class(dst), tag).
 * Call before adding traces. The caller guarantees the symmetry (etk_sim_workload checks it). */
int etk_sim_set_classes(etk_sim *s, const uint32_t *class_of, const uint32_t *class_rep,
                        uint32_t n_classes, etk_error *err);
/* Live mode: a communicator group created during the run (its id and ranks must outlive the
 * simulator); before any node names it. */
int etk_sim_add_group(etk_sim *s, const etk_group *g, etk_error *err);
/* Append a trace's nodes to a rank (the trace must outlive the simulator). Dependencies resolve
 * against the nodes this rank already has and the new ones; nodes may be added while the run
 * is in progress (they become ready at the current time). */
int etk_sim_add_rank_trace(etk_sim *s, uint32_t rank, const etk_trace *t, etk_error *err);
/* Optional hint before adding traces: about how many nodes and dependencies the simulated ranks
 * will get in all, so their first arrays come from one huge-page block (faster set-up). */
void etk_sim_reserve(etk_sim *s, uint64_t nodes, uint64_t deps);
/* Process every event up to and including time t_ns. */
int etk_sim_run_until(etk_sim *s, uint64_t t_ns, etk_error *err);
uint64_t etk_sim_now(const etk_sim *s);
/* Live mode (src/live/): the time of the next pending event (UINT64_MAX when none), after
 * issuing what became ready; and whether node `id` of `rank` has completed (1, with *end_ns its
 * end time), not yet (0), or does not exist (ETK_ENOTFOUND). */
uint64_t etk_sim_next_event_ns(etk_sim *s);
int etk_sim_node_end(const etk_sim *s, uint32_t rank, uint64_t id, uint64_t *end_ns);
/* Live mode: the deadlock report of etk_sim_finish for the current state (every rank blocked,
 * no event pending), without finishing the run. Returns the message length. */
size_t etk_sim_blocked_report(const etk_sim *s, char *buf, size_t len);
/* Run to the end. If nodes remain that can never run, returns ETK_EINVAL with a deadlock
 * report: each blocked rank and what it waits for. */
int etk_sim_finish(etk_sim *s, etk_error *err);
/* The result (valid until etk_sim_free); NULL before etk_sim_finish succeeded. */
const etk_sim_result *etk_sim_result_get(etk_sim *s);
/* Chrome trace / Perfetto JSON of the simulated ranks (opts.timeline must be set). Written
 * atomically. pid = rank, tid = stream, one complete event per node. */
int etk_sim_write_timeline(const etk_sim *s, const char *path, etk_error *err);
/* Number of complete ("X") events etk_sim_write_timeline writes. */
uint64_t etk_sim_timeline_events(const etk_sim *s);
void etk_sim_free(etk_sim *s);

/* Whole-workload driver: checks the cluster size, detects or takes the workload's rank classes,
 * folds when that cannot change the answer (unless opts->no_fold), runs to the end.
 * On success *out holds the finished simulator (query etk_sim_result_get). */
int etk_sim_workload(const etk_workload *wl, const etk_cluster *c, const etk_sim_opts *opts,
                     etk_sim **out, etk_error *err);

/* Rank classes of a workload for folding: identical traces up to group/peer renaming, every
 * group inside one class, group and peer placements giving identical costs. Returns the number
 * of classes (n_ranks when nothing folds) with class_of/class_rep malloc'ed (caller frees),
 * or a negative code. *why (may be NULL) gets a static string saying why folding was refused. */
int etk_sim_classes(const etk_workload *wl, const etk_cluster *c, const etk_sim_opts *opts,
                    uint32_t **class_of, uint32_t **class_rep, const char **why, etk_error *err);

/* Reports. */
void etk_sim_print_text(const etk_sim_result *r, FILE *f);
int etk_sim_print_json(const etk_sim_result *r, FILE *f);
void etk_sim_print_csv(const etk_sim_result *r, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
