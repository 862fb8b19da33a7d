/* etkit/convert.h — PyTorch execution traces (+ Kineto device traces) to Chakra.
 *
 * One rank per call: the host execution trace (JSON written by PyTorch's ExecutionTraceObserver,
 * or ExecutionGraphObserver in PyTorch 1.13) and optionally the Kineto/profiler trace of the same
 * step become one Chakra trace (nodes in id order) plus the communicator groups the host trace
 * declares. Linking host ops to Kineto events (rf_id, correlation, External id) is built in.
 * Units: Kineto microseconds become integer duration_micros; comm_size is bytes.
 * See docs/convert.md for the node classes, dependencies and every field used. */
#ifndef ETKIT_CONVERT_H
#define ETKIT_CONVERT_H

#include <stdio.h>

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etk_convert_opts {
    const char *host_path;   /* host execution trace JSON (plain or gzip); NULL: convert the
                                Kineto trace alone (its cpu_ops become the host ops) */
    const char *device_path; /* Kineto trace JSON or PyTorch 1.13 profiler trace; NULL: none */
    int64_t rank;            /* rank of this trace; -1: unknown (checked against the Kineto
                                distributedInfo when both are known) */
    bool quiet;              /* do not print warnings to stderr */
    int64_t n_ranks;         /* ranks of the workload being written (1: this rank alone, N: a
                                --ranks N run); 0: unknown, groups kept as declared. One rank
                                of a larger job alone is written as rank 0 with its groups cut
                                to it and its NCCL kernels as timed GPU work; with N short of
                                the job, groups keep only ranks < N */
    FILE *progress;          /* long conversions: one progress line per phase (host trace parsed,
                                device trace parsed, nodes written) on this stream when it is a
                                terminal (etkit/progress.h); NULL: none */
} etk_convert_opts;

#define ETK_CONVERT_MAX_WARN 8

/* What a conversion found; every count is exact. */
typedef struct etk_convert_stats {
    int64_t rank;               /* rank written: opts.rank, else the Kineto distributedInfo
                                   rank, else 0; 0 for one rank of a larger job alone */
    char schema[64];            /* the host trace's "schema" */
    bool schema_known;          /* one of 1.0.1, 1.0.2, 1.0.3, 1.1.0, 1.1.1 (any suffix) */
    bool old_layout;            /* nodes used the 1.0.1 layout (parent, flat inputs) */
    size_t n_host_nodes;        /* nodes in the host trace, roots included */
    size_t n_nodes;             /* nodes written */
    size_t n_type[ETK_NODE_TYPE_COUNT]; /* nodes written per Chakra node type */
    size_t n_cpu_ops;           /* nodes with is_cpu_op true */
    size_t n_gpu_ops;           /* nodes made from device-trace kernels/memcpys */
    size_t n_matched;           /* host ops matched to a device-trace event */
    size_t n_zero_dur;          /* host ops left with duration 0 (no duration known) */
    size_t n_unlinked_kernels;  /* GPU events whose launching host op was not found */
    size_t n_cross_thread_deps; /* dependencies added between threads */
    size_t n_threads;           /* host threads with ops (etkit sim --cpu-streams N overlaps them) */
    size_t n_sync_deps;         /* host op after GPU work (device/stream synchronize) */
    size_t n_stream_wait_deps;  /* GPU op after a GPU op of another stream (stream wait event) */
    size_t n_dropped_gpu;       /* GPU events outside the matched ops' window (not written) */
    size_t n_groups;            /* process groups found */
    bool device_is_profiler_list; /* the device trace was a bare PyTorch 1.13 profiler list */
    uint64_t trace_span_us;     /* span of the matched device events (0 without device trace) */
    uint64_t input_bytes;       /* host + device JSON bytes read */
    uint64_t arena_bytes;       /* converter memory reserved for the compact model (peak) */
    int64_t world_size;         /* Kineto distributedInfo.world_size, -1 */
    int64_t job_ranks;          /* ranks of the job (world_size, or the groups' largest + 1) */
    int64_t orig_rank;          /* the trace's own rank (rank differs when converted alone) */
    size_t n_groups_dropped;    /* groups left out (none of their ranks is written) */
    size_t n_group_ranks_dropped; /* group members >= n_ranks left out */
    size_t n_flop_ops;          /* ops given num_ops/tensor_size from their input shapes */
    size_t n_flop_gpu_ops;      /* of them, written as GPU work (host trace alone, no duration) */
    size_t n_comm_replayed;     /* NCCL kernels written as timed GPU work (rank alone) */
    size_t n_kineto_steps;      /* Kineto-only: ProfilerStep annotations in the trace */
    char kineto_step[64];       /* Kineto-only: the one converted (the last), "" if none */
    int64_t kineto_step_ns;     /* and its span (the measured iteration) */
    size_t n_warnings;
    char warnings[ETK_CONVERT_MAX_WARN][256];
} etk_convert_stats;

/* Convert into memory: *out_trace (nodes in id order) and *out_groups (NULL when the host trace
 * declares no process group). stats may be NULL. On error nothing is returned and err names the
 * file, the place (node index and id, JSON key, line) and what was expected. */
int etk_convert_pytorch(const etk_convert_opts *o, etk_trace **out_trace, etk_groups **out_groups,
                        etk_convert_stats *stats, etk_error *err);

/* Convert and write <prefix>.<rank>.et (rank: stats->rank) and, when the host trace
 * declares process groups, <prefix>.json. Streams nodes to the writer (no in-memory trace). */
int etk_convert_pytorch_write(const etk_convert_opts *o, const char *prefix,
                              etk_convert_stats *stats, etk_error *err);

/* A job's ranks 0..n-1 into one rank set, all or nothing: every rank is converted (with the
 * options opts(ctx, r, &o) fills in for rank r, which must come out as rank r) into a temporary
 * folder next to the prefix, and the set <prefix>.<r>.et + <prefix>.json is published by renames
 * only when all n are written; <prefix>.lock keeps a second writer out, ranks >= n of an earlier
 * run and temporary files of dead writers are removed (as `etkit gen` does). done(ctx, r,
 * stats), when not NULL, is called after rank r is converted (before the set is published). On
 * error the final names are untouched and err reads "<prefix>: nothing written: <why>". */
typedef int (*etk_convert_rank_opts_fn)(void *ctx, uint64_t r, etk_convert_opts *o, etk_error *err);
typedef void (*etk_convert_rank_done_fn)(void *ctx, uint64_t r, const etk_convert_stats *st);
int etk_convert_pytorch_write_ranks(uint64_t n, etk_convert_rank_opts_fn opts, etk_convert_rank_done_fn done,
                                    void *ctx, const char *prefix, etk_error *err);

/* Name of a collective from an NCCL kernel or op name (lower-cased, '_' and '-' removed,
 * then "allreduce", "alltoall", "allgather", "reducescatter", "broadcast", "reduce",
 * "barrier" in that order); -1 when it names none. */
int etk_convert_coll_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
