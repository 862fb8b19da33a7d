/* etkit/validate.h — inspection of Chakra traces and workloads: validation findings
 * (etk_validate_*), per-rank statistics (etk_info_*) and Graphviz export (etk_dot_*).
 *
 * These sit on top of et.h: they read etk_trace / etk_workload and never modify them (except
 * building the id index with etk_trace_index when it is missing). The generator and the
 * simulator call etk_validate_workload to check their input/output; `etkit validate`,
 * `etkit info` and `etkit dot` are thin layers over these calls. */
#ifndef ETKIT_VALIDATE_H
#define ETKIT_VALIDATE_H

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------- validation findings ---------- */
typedef enum etk_severity {
    ETK_SEV_INFO = 0,    /* something a reader should know (a check was skipped, ...) */
    ETK_SEV_WARNING = 1, /* legal but suspicious; consumers read the same values */
    ETK_SEV_ERROR = 2,   /* consumers would misread, reject or hang on this input */
} etk_severity;

const char *etk_severity_name(int sev); /* "info", "warning", "error" */

/* One finding. Codes are stable strings (catalogue: docs/validate.md), e.g. "duplicate-id",
 * "missing-ctrl-dep", "cycle", "deadlock". A finding may aggregate several occurrences of the
 * same problem in one file: `count` says how many (what is counted is in the catalogue) and
 * the location is the first occurrence. */
typedef struct etk_finding {
    int severity;          /* etk_severity */
    const char *code;      /* static string */
    int64_t rank;          /* rank of the file, -1 when not about one rank */
    const char *file;      /* path of the file ("" for in-memory traces or workload-wide) */
    int64_t node_index;    /* index of the node in the file, -1 when not about one node */
    uint64_t node_id;      /* id of that node (valid when node_index >= 0) */
    uint64_t count;        /* occurrences summarised (>= 1) */
    const char *message;   /* full sentence naming what is wrong and what was expected */
} etk_finding;

typedef struct etk_findings {
    etk_arena *arena;      /* owns messages and the item array */
    etk_finding *items;
    size_t n, cap;
    size_t n_errors, n_warnings, n_infos;
} etk_findings;

etk_findings *etk_findings_new(void);
void etk_findings_free(etk_findings *f);
/* Number of findings with this code (and, if rank >= 0, on that rank); the first one. */
size_t etk_findings_count(const etk_findings *f, const char *code, int64_t rank);
const etk_finding *etk_findings_first(const etk_findings *f, const char *code, int64_t rank);
/* "<file>: rank R: node #I (id X): <severity> [<code>]: <message>" into buf. */
int etk_finding_format(const etk_finding *x, char *buf, size_t len);

typedef struct etk_validate_opts {
    bool skip_cross_rank;   /* only the per-file checks */
    bool skip_deadlock;     /* no global dependency graph (matching checks still run) */
    uint32_t max_ids_listed;/* ids named in aggregated messages; 0: default 5 */
} etk_validate_opts;

/* Per-file checks on one trace: duplicate ids, dependencies on absent ids (data and control
 * separately), self-dependencies, cycles (iterative, with a witness), attribute kinds other
 * tools would misread, attributes a node type requires, zero-size communication.
 * rank: recorded in the findings (-1 if unknown). Builds the trace's id index when it is
 * missing (the only change to t). Returns 0 (whatever was found) or a negative ETK_E* code
 * (out of memory). */
int etk_validate_trace(etk_trace *t, int64_t rank, const etk_validate_opts *opts,
                       etk_findings *out, etk_error *err);

/* Per-file checks on every rank, then the cross-rank ones: communicator groups defined and in
 * range, each group's members issue the same sequence of (comm_type, comm_size), every send
 * has exactly one matching recv (src, dst, tag, size), and no cross-rank deadlock (Kahn's
 * algorithm over the global graph with the k-th collective of each group and each matched
 * send/recv contracted into one node; linear time and memory). Folded workloads (NULL rank
 * traces) get per-file checks on the representatives only (an info finding says so).
 * Returns 0 or a negative ETK_E* code (out of memory, more than 2^32-2 nodes in total). */
int etk_validate_workload(etk_workload *w, const etk_validate_opts *opts, etk_findings *out,
                          etk_error *err);

/* ---------- statistics (etkit info) ---------- */
typedef struct etk_info_coll {
    const char *pg_name;   /* "" when the nodes have no pg_name (all ranks) */
    int32_t comm_type;     /* etk_coll_type; -1: missing, unreadable or out of range */
    uint64_t count;
    uint64_t bytes;        /* sum of comm_size */
} etk_info_coll;

typedef struct etk_info_peer {
    int64_t peer;          /* the other rank (comm_dst of sends, comm_src of recvs; -1 unknown) */
    uint64_t send_count, send_bytes;
    uint64_t recv_count, recv_bytes;
} etk_info_peer;

typedef struct etk_trace_info {
    etk_arena *arena;      /* owns colls and peers */
    const char *path;
    const char *version;   /* NULL if none */
    uint64_t file_bytes;
    uint64_t n_nodes;
    uint64_t by_type[ETK_NODE_TYPE_COUNT];
    uint64_t n_unknown_type;         /* type numbers outside 0..7 */
    /* compute (COMP_NODE) */
    uint64_t comp_flops;             /* sum of num_ops */
    uint64_t comp_bytes;             /* sum of tensor_size */
    uint64_t comp_duration_micros;   /* sum of duration_micros */
    uint64_t mem_bytes;              /* tensor_size of MEM_LOAD/MEM_STORE nodes */
    /* collectives per type (index = comm_type); nodes whose comm_type is missing, unreadable
     * or out of range in coll_unknown_* (other tools would read a missing one as ALL_REDUCE) */
    uint64_t coll_count[ETK_COLL_TYPE_COUNT], coll_bytes[ETK_COLL_TYPE_COUNT];
    uint64_t coll_unknown_count, coll_unknown_bytes;
    size_t n_colls;                  /* per (pg_name, comm_type), sorted by pg_name then type */
    etk_info_coll *colls;
    size_t n_peers;                  /* sorted by peer */
    etk_info_peer *peers;
    /* dependencies: data ∪ ctrl, deps on absent ids ignored */
    uint64_t n_data_deps, n_ctrl_deps;
    uint64_t n_missing_data_deps, n_missing_ctrl_deps; /* references to absent ids */
    uint64_t n_no_deps;              /* nodes without any dependency */
    uint64_t n_roots;                /* nodes without a dependency on a present node */
    uint64_t depth;                  /* nodes on the longest dependency path */
    uint64_t n_unordered;            /* nodes on or after a cycle (excluded from depth) */
} etk_trace_info;

/* Fill *out (zeroed first; free with etk_info_free). Builds t's id index when missing. */
int etk_info_trace(etk_trace *t, etk_trace_info *out, etk_error *err);
void etk_info_free(etk_trace_info *info);
/* JSON object of one trace's statistics (jansson json_t *, caller decrefs). Declared as void *
 * so this header does not need jansson.h. NULL on out-of-memory. */
void *etk_info_to_json(const etk_trace_info *info, int64_t rank);
/* Readable text with units. */
int etk_info_print(FILE *f, const etk_trace_info *info, int64_t rank);

/* ---------- Graphviz ---------- */
typedef struct etk_dot_opts {
    size_t max_nodes;      /* 0: all; otherwise the first max_nodes nodes in file order */
} etk_dot_opts;

/* DOT digraph: one box per node (id, name, type, FLOPs/bytes where set), data edges solid,
 * control edges dashed; edges to absent ids or to nodes beyond max_nodes are omitted (a
 * comment in the output counts them). *n_edges (may be NULL) gets the edges written. */
int etk_dot_write(FILE *f, etk_trace *t, const etk_dot_opts *opts, size_t *n_edges,
                  etk_error *err);

#ifdef __cplusplus
}
#endif
#endif
