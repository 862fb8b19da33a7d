/* cv.h — private to src/convert/: the JSON slicer (jscan.c), the compact host-op and device-event
 * models built by host.c and kineto.c, and the assembly into Chakra nodes (pytorch.c). */
#ifndef ETK_CONVERT_CV_H
#define ETK_CONVERT_CV_H

#include <jansson.h>
#include <stddef.h>

#include "etkit/convert.h"
#include "etkit/et.h"

/* ---------- jscan.c: walk a large JSON text one element at a time ----------
 * The whole text stays one buffer; each top-level value (one host node, one trace event) is
 * located by a cheap bracket scan and parsed alone by jansson, so peak memory is the text plus
 * one element's DOM instead of the DOM of the whole document. */
typedef struct jscan {
    const char *buf;
    size_t len, pos;
    const char *path; /* for messages */
} jscan;

void js_ws(jscan *s);
/* Line number (1-based) of byte offset off. */
size_t js_line(const jscan *s, size_t off);
/* Find the end of the value starting at s->pos (after whitespace); sets *start and *end. */
int js_skip(jscan *s, size_t *start, size_t *end, etk_error *err);
/* MiB of a text, rounded up (the unit of the parse phases' progress lines) */
static inline uint64_t js_mib(size_t bytes) { return ((uint64_t)bytes + (1u << 20) - 1) >> 20; }
/* Parse the value at s->pos with jansson and advance past it. */
int js_value(jscan *s, json_t **out, etk_error *err);
/* Read a string key and the ':' after it (object walking). */
int js_key(jscan *s, char *key, size_t cap, etk_error *err);
/* After an element: ',' (returns 1: more), closing char (returns 0), else error. */
int js_next(jscan *s, char close, const char *what, etk_error *err);
/* Expect the character c (after whitespace). */
int js_expect(jscan *s, char c, const char *what, etk_error *err);

/* Integer from a JSON number (integer or integral real) or a decimal string. */
bool jv_i64(const json_t *v, int64_t *out);
/* Compact JSON text in the arena (NULL for NULL). */
char *jv_dump(etk_arena *a, const json_t *v);
/* Bytes of all tensor 6-tuples [id, storage, offset, numel, elem_bytes, device] inside v. */
uint64_t jv_tensor_bytes(const json_t *v);

/* ---------- host.c ---------- */
enum { OP_NORMAL = 0, OP_PROCESS_ROOT, OP_THREAD_ROOT, OP_PG_INIT };

typedef struct cv_op {
    uint64_t id, parent, rf_id, fw_parent, tid, fw_tid, scope;
    int64_t seq_id;
    const char *name, *op_schema;
    const char *iv, *is, *it, *ov, *os, *ot; /* inputs/outputs values, shapes, types (JSON) */
    uint64_t in_bytes;
    int64_t host_excl_ns, host_incl_ns;      /* from the host trace, -1 when absent */
    int kind;
    /* record_param_comms and c10d point-to-point hints from the inputs */
    const char *attr_pg;   /* "pg_name" attribute (PyTorch 2.4+ comms ops), NULL */
    const char *strs[4];   /* first string inputs (group name, collective name) */
    int n_strs;
    int64_t ints[4];       /* first integer inputs (backend id, peer, tag) */
    int n_ints;
    /* filled by linking */
    int32_t parent_ix;     /* index of the parent op, -1 */
    int64_t dev_ts_ns, dev_dur_ns; /* matched device event, dev_dur_ns < 0: none */
    const char *dev_pg;    /* "Process Group Name" of the matched Kineto op */
    uint64_t flops, flop_bytes; /* from the input shapes (flops.c), 0 when unknown */
    bool flop_child;       /* a descendant carries the FLOPs (they are written there once) */
    int64_t sync_ns;       /* time blocked in synchronizing calls modelled as dependencies */
    uint64_t dur_us;       /* final exclusive duration */
    uint64_t start_us;
} cv_op;

typedef struct cv_pg {
    const char *name;
    int64_t backend_id;    /* -1 if absent */
    uint32_t *ranks;
    uint32_t n_ranks;
} cv_pg;

typedef struct cv_host {
    etk_arena *arena;
    cv_op *ops;
    size_t n_ops, cap_ops;
    cv_pg *pgs;
    size_t n_pgs, cap_pgs;
    const char *schema, *time;
    int64_t pid, start_ts, finish_ts;
    bool has_pid, has_start, has_finish;
    uint64_t max_id;
} cv_host;

/* prog: the progress line's stream (etk_convert_opts.progress), NULL: none */
int cv_host_parse(const char *path, cv_host *h, etk_convert_stats *st, FILE *prog, etk_error *err);

/* ---------- kineto.c ---------- */
enum { EV_OTHER = 0, EV_CPU_OP, EV_ANNOT, EV_KERNEL, EV_MEMCPY, EV_MEMSET, EV_RUNTIME, EV_SYNC };

typedef struct cv_ev {
    uint8_t cat;
    const char *name;
    int64_t ts_ns, dur_ns;
    int64_t pid, tid;
    int64_t ext_id, rf_id, corr, stream; /* -1 when absent */
    const char *pg_name;
    const char *coll_name;               /* NCCL kernel "Collective name" arg, NULL */
    int64_t msg_bytes;                   /* NCCL kernel message bytes from its args, -1 */
    uint64_t in_bytes;                   /* cpu_op "Input Dims" x "Input type" bytes, 0 */
    const char *in_dims, *in_types;      /* cpu_op "Input Dims"/"Input type" JSON, NULL */
    int64_t wait_stream, wait_corr;      /* cuda_sync Stream Wait Event, -1 */
    int32_t host;                        /* matched host op index, -1 */
} cv_ev;

typedef struct cv_dev {
    cv_ev *ev;
    size_t n_ev, cap_ev;
    bool profiler_list; /* bare list without cat / Record function id (PyTorch 1.13) */
    bool has_rf;        /* some event has a Record function id (else: match by name) */
    int64_t rank;       /* distributedInfo.rank, -1 */
    int64_t world_size; /* distributedInfo.world_size, -1 */
    cv_pg *pgs;         /* distributedInfo.pg_config groups */
    size_t n_pgs, cap_pgs;
} cv_dev;

int cv_dev_parse(const char *path, etk_arena *a, cv_dev *d, uint64_t *bytes, FILE *prog, etk_error *err);

/* ---------- the conversion state (pytorch.c, match.c, gpu.c, kineto_only.c) ---------- */
typedef struct kv {
    int64_t key;
    uint32_t ix;
} kv;
int cv_kv_cmp(const void *a, const void *b);
/* First entry with that key in a sorted kv table, or -1. */
ptrdiff_t cv_kv_find(const kv *t, size_t n, int64_t key);

typedef struct gpu_node {
    uint64_t id;
    uint32_t ev;      /* index in dev.ev */
    int64_t ts;       /* start on the GPU */
    int32_t launch;   /* host op index, -1 */
    int64_t launch_ts;
    int64_t launch_tid; /* thread of the launching runtime call, -1 */
    int64_t stream;
    uint64_t prev;    /* previous node id on the stream, 0 */
    uint64_t wait;    /* GPU node of another stream this one waits for (stream wait event), 0 */
    uint64_t max_launch_id; /* max launch-op id over this node and its stream predecessors */
    int type;
    int coll;
    int64_t comm_size;
    const char *pg;
    int64_t peer, tag;
} gpu_node;

typedef struct edge {
    uint32_t from; /* host op index */
    uint64_t to;   /* node id */
} edge;

typedef struct conv {
    const etk_convert_opts *o;
    etk_convert_stats *st;
    cv_host h;
    cv_dev d;
    bool have_dev;
    bool kineto_only; /* host ops made from the Kineto cpu_ops (no host trace) */
    bool alone;       /* one rank of a larger job: written as rank 0 of a 1-rank workload */
    int64_t win_lo, win_hi; /* window of the matched host ops (ns); GPU work outside is dropped */
    gpu_node *gpu;
    size_t n_gpu;
    edge *edges; /* extra ctrl deps of host ops (cross-thread, sync), sorted by from */
    size_t n_edges, cap_edges;
} conv;

int cv_add_edge(conv *c, uint32_t from, uint64_t to);

/* match.c: host op <-> device event linking */
int cv_match_by_name(conv *c, etk_error *err);
int cv_match_by_rf(conv *c, etk_error *err);
int cv_check_pair(conv *c, size_t n_matchable, etk_error *err);

/* gpu.c: GPU nodes (kernels, memcpys, NCCL), stream order, stream waits, synchronisation */
int cv_build_gpu(conv *c, etk_error *err);

/* durations.c: exclusive durations (less modelled waits, plus unrecorded gaps), FLOPs from
 * shapes; the top level of a thread (a ProfilerStep's children in a Kineto-only iteration) */
void cv_durations(conv *c);
void cv_shape_flops(conv *c);
bool cv_top_level(const conv *c, const cv_op *op);
bool cv_is_step_op(const conv *c, const cv_op *op);

/* kineto_only.c: the host op table made from a Kineto trace's cpu_op events */
int cv_host_from_kineto(conv *c, etk_error *err);

/* flops.c: FLOPs and tensor bytes of an op from its input shapes (mm, addmm, bmm, matmul,
 * linear, baddbmm, conv, attention); false when the op's FLOPs do not follow from its shapes. */
bool cv_flops_from_shapes(const char *name, const char *shapes_json, const char *types_json,
                          const char *values_json, uint64_t *flops, uint64_t *bytes);

/* ---------- shared helpers ---------- */
void cv_warn(etk_convert_stats *st, bool quiet, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Grow *arr (element size sz) to hold at least n+1 elements. */
int cv_grow(void **arr, size_t *cap, size_t n, size_t sz);

#endif
