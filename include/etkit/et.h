/* etkit/et.h — the Chakra execution-trace layer: errors, arenas, the in-memory trace model,
 * the streaming reader and writer, communicator groups and workloads (per-rank traces + groups).
 *
 * Everything else in etkit (gen, sim, convert) produces or consumes these types. Units are the
 * Chakra ones: bytes for tensor_size/comm_size, FLOPs for num_ops, microseconds for the
 * *_micros node fields (the simulator converts to integer nanoseconds). */
#ifndef ETKIT_ET_H
#define ETKIT_ET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------- errors ---------- */
enum {
    ETK_OK = 0,
    ETK_EIO = -1,          /* file cannot be opened/read/written */
    ETK_EFORMAT = -2,      /* malformed input (protobuf, JSON, YAML) */
    ETK_EINVAL = -3,       /* invalid argument / impossible request */
    ETK_ENOMEM = -4,       /* allocation failed */
    ETK_ENOTFOUND = -5,    /* a named thing does not exist */
    ETK_EUNSUPPORTED = -6, /* valid but not supported */
    ETK_EVALIDATE = -7,    /* validation found errors */
};

/* Every fallible library call fills one of these: the message names the file, the place
 * (byte offset, node index/id, JSON path) and what was expected. */
typedef struct etk_error {
    int code;
    char msg[1024];
} etk_error;

/* Set err (may be NULL) and return code. printf-style. */
int etk_err(etk_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Prefix an existing message: "<prefix>: <old message>". Returns err->code. */
int etk_err_prefix(etk_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---------- arena ---------- */
/* Bump allocator: many small allocations, one free. Memory is 8-byte aligned and zeroed. */
typedef struct etk_arena etk_arena;
etk_arena *etk_arena_new(size_t block_bytes /* 0: default 1 MiB */);
void *etk_arena_alloc(etk_arena *a, size_t n);          /* NULL only on out-of-memory */
void *etk_arena_alloc_uninit(etk_arena *a, size_t n);   /* same, not zeroed */
char *etk_arena_strdup(etk_arena *a, const char *s);
char *etk_arena_strndup(etk_arena *a, const char *s, size_t n);
void *etk_arena_memdup(etk_arena *a, const void *p, size_t n);
size_t etk_arena_bytes(const etk_arena *a);             /* bytes reserved from the system */
void etk_arena_reset(etk_arena *a);                     /* forget everything; keep the largest block */
void etk_arena_free(etk_arena *a);

/* ---------- Chakra enums ---------- */
typedef enum etk_node_type {
    ETK_NODE_INVALID = 0,
    ETK_NODE_METADATA = 1,
    ETK_NODE_MEM_LOAD = 2,
    ETK_NODE_MEM_STORE = 3,
    ETK_NODE_COMP = 4,
    ETK_NODE_SEND = 5,
    ETK_NODE_RECV = 6,
    ETK_NODE_COLL = 7,
} etk_node_type;
#define ETK_NODE_TYPE_COUNT 8

typedef enum etk_coll_type {
    ETK_COLL_ALL_REDUCE = 0,
    ETK_COLL_REDUCE = 1,
    ETK_COLL_ALL_GATHER = 2,
    ETK_COLL_GATHER = 3,
    ETK_COLL_SCATTER = 4,
    ETK_COLL_BROADCAST = 5,
    ETK_COLL_ALL_TO_ALL = 6,
    ETK_COLL_REDUCE_SCATTER = 7,
    ETK_COLL_REDUCE_SCATTER_BLOCK = 8,
    ETK_COLL_BARRIER = 9,
} etk_coll_type;
#define ETK_COLL_TYPE_COUNT 10

const char *etk_node_type_name(int type);   /* "COMP_NODE", ...; "UNKNOWN_NODE" if out of range */
const char *etk_coll_type_name(int type);   /* "ALL_REDUCE", ...; "UNKNOWN" if out of range */
int etk_node_type_parse(const char *name);  /* inverse of etk_node_type_name; -1 if unknown */
int etk_coll_type_parse(const char *name);  /* inverse of etk_coll_type_name; -1 if unknown */

/* ---------- attributes ---------- */
/* Value kinds are the protobuf field numbers of AttributeProto's `value` oneof. */
typedef enum etk_attr_kind {
    ETK_ATTR_NONE = 0, /* no value set */
    ETK_ATTR_DOUBLE = 3, ETK_ATTR_DOUBLE_LIST = 4,
    ETK_ATTR_FLOAT = 5, ETK_ATTR_FLOAT_LIST = 6,
    ETK_ATTR_INT32 = 7, ETK_ATTR_INT32_LIST = 8,
    ETK_ATTR_INT64 = 9, ETK_ATTR_INT64_LIST = 10,
    ETK_ATTR_UINT32 = 11, ETK_ATTR_UINT32_LIST = 12,
    ETK_ATTR_UINT64 = 13, ETK_ATTR_UINT64_LIST = 14,
    ETK_ATTR_SINT32 = 15, ETK_ATTR_SINT32_LIST = 16,
    ETK_ATTR_SINT64 = 17, ETK_ATTR_SINT64_LIST = 18,
    ETK_ATTR_FIXED32 = 19, ETK_ATTR_FIXED32_LIST = 20,
    ETK_ATTR_FIXED64 = 21, ETK_ATTR_FIXED64_LIST = 22,
    ETK_ATTR_SFIXED32 = 23, ETK_ATTR_SFIXED32_LIST = 24,
    ETK_ATTR_SFIXED64 = 25, ETK_ATTR_SFIXED64_LIST = 26,
    ETK_ATTR_BOOL = 27, ETK_ATTR_BOOL_LIST = 28,
    ETK_ATTR_STRING = 29, ETK_ATTR_STRING_LIST = 30,
    ETK_ATTR_BYTES = 31, ETK_ATTR_BYTES_LIST = 32,
} etk_attr_kind;

const char *etk_attr_kind_name(int kind);  /* "int64_val", "bool_list", ... */
int etk_attr_kind_parse(const char *name); /* inverse; -1 if unknown */
bool etk_attr_kind_is_list(int kind);

typedef struct etk_bytes {
    const uint8_t *data;
    size_t len;
} etk_bytes;

/* One attribute. Scalars: signed integer kinds (int32, int64, sint*, sfixed*) in v.i,
 * unsigned ones (uint*, fixed*) in v.u, bool in v.b, double in v.d, float in v.f (its bits
 * kept exactly, signalling NaNs included), string in v.s, bytes in v.data with the length in
 * n (so an attribute is 32 bytes: traces carry millions of them). Lists: n elements in the typed array matching the kind
 * (int32/sint32/sfixed32 -> i32, int64/sint64/sfixed64 -> i64, uint32/fixed32 -> u32,
 * uint64/fixed64 -> u64, double -> dl, float -> fl, bool -> bl (0/1 bytes), string -> sl,
 * bytes -> bytesl). */
typedef struct etk_attr {
    const char *name;  /* never NULL ("" if unnamed) */
    const char *doc;   /* doc_string; NULL if empty */
    int32_t kind;      /* etk_attr_kind */
    uint32_t n;        /* list length; byte count of a bytes_val */
    union {
        int64_t i;
        uint64_t u;
        double d;
        float f;
        bool b;
        const char *s;
        const uint8_t *data; /* bytes_val: n bytes */
        const int32_t *i32;
        const int64_t *i64;
        const uint32_t *u32;
        const uint64_t *u64;
        const double *dl;
        const float *fl;
        const uint8_t *bl;
        const char *const *sl;
        const etk_bytes *bytesl;
    } v;
} etk_attr;

/* Constructors for writers (name is borrowed, not copied). */
etk_attr etk_attr_i64(const char *name, int64_t v);   /* int64_val */
etk_attr etk_attr_u64(const char *name, uint64_t v);  /* uint64_val */
etk_attr etk_attr_i32(const char *name, int32_t v);   /* int32_val */
etk_attr etk_attr_bool(const char *name, bool v);     /* bool_val */
etk_attr etk_attr_str(const char *name, const char *v); /* string_val */

/* The kind the Chakra conventions prescribe for a well-known attribute name
 * (is_cpu_op: BOOL, num_ops: INT64, tensor_size: UINT64, comm_type/comm_size: INT64,
 * comm_src/dst/tag/priority: INT32, pg_name: STRING, involved_dim: BOOL_LIST,
 * inputs/outputs: STRING_LIST); ETK_ATTR_NONE for names without a convention. */
int etk_attr_expected_kind(const char *name);

/* Lenient numeric reads: any integer kind, bool (0/1) or a double/float holding an integral
 * value. Return true and set *out on success; false if the attribute is not a scalar number
 * or the value does not fit. */
bool etk_attr_as_i64(const etk_attr *a, int64_t *out);
bool etk_attr_as_u64(const etk_attr *a, uint64_t *out);
bool etk_attr_as_bool(const etk_attr *a, bool *out);

/* ---------- nodes ---------- */
typedef struct etk_io {
    const char *values; /* NULL when empty */
    const char *shapes;
    const char *types;
} etk_io;

typedef struct etk_node {
    uint64_t id;
    const char *name;         /* never NULL in a read trace ("" if absent) */
    int32_t type;             /* etk_node_type (unknown numbers are kept as read) */
    uint32_t n_ctrl_deps;
    uint32_t n_data_deps;
    uint32_t n_attr;
    const uint64_t *ctrl_deps;
    const uint64_t *data_deps;
    uint64_t start_time_micros;
    uint64_t duration_micros;
    const etk_io *inputs;     /* NULL when the field is absent */
    const etk_io *outputs;
    const etk_attr *attr;
} etk_node;

/* First attribute with that name, or NULL. */
const etk_attr *etk_node_attr(const etk_node *n, const char *name);
/* Lenient typed getters: false if absent or not convertible. */
bool etk_node_i64(const etk_node *n, const char *name, int64_t *out);
bool etk_node_u64(const etk_node *n, const char *name, uint64_t *out);
bool etk_node_bool(const etk_node *n, const char *name, bool *out);
const char *etk_node_str(const etk_node *n, const char *name); /* string_val or NULL */

/* ---------- traces ---------- */
/* A warning the reader noted (lenient reads): an attribute whose kind differs from the
 * convention. Only the first ETK_MAX_WARN are kept; n_warnings counts them all. */
#define ETK_MAX_WARN 16

typedef struct etk_trace {
    etk_arena *arena;         /* owns everything below */
    const char *path;         /* file it was read from ("" if built in memory) */
    const char *version;      /* GlobalMetadata.version (NULL if empty) */
    bool has_metadata;        /* the first message was a GlobalMetadata */
    uint32_t n_meta_attr;
    const etk_attr *meta_attr;
    etk_node *nodes;          /* file order */
    size_t n_nodes;
    size_t cap_nodes;
    uint64_t file_bytes;      /* bytes of the trace after decompression */
    bool gzipped;
    size_t n_warnings;
    const char *warnings[ETK_MAX_WARN];
    size_t n_reference_decoded; /* nodes the direct decoder handed to protobuf-c */
    /* id -> index lookup, built by etk_trace_index() */
    uint32_t *index_slots;    /* open addressing: node index + 1, 0 = empty */
    size_t index_mask;
    size_t n_duplicate_ids;   /* found while indexing (the first occurrence wins) */
    bool partial;             /* read stopped at etk_read_opts.max_nodes with more file left */
} etk_trace;

typedef struct etk_read_opts {
    uint64_t max_message_bytes; /* sane bound for one message; 0: default 64 MiB */
    bool quiet;                 /* do not print warnings to stderr */
    bool reference_decoder;     /* decode every node with protobuf-c (the reference path; the
                                   default direct decoder must give identical results) */
    size_t max_nodes;           /* 0: all; else stop after the first max_nodes nodes: the rest of
                                   the file is not read (nor checked) and t->partial is set */
} etk_read_opts;

/* Read a whole trace (plain or gzip). On error *out is NULL and err names the file, the byte
 * offset and the node index. Unknown fields are skipped; packed and unpacked repeated
 * fields are both accepted. */
int etk_trace_read(const char *path, const etk_read_opts *opts, etk_trace **out, etk_error *err);
/* When `path` is a JSON file (PyTorch host ET, Kineto, etkit or Chakra-feeder JSON): sets err to
 * a message naming its kind and the converting command and returns ETK_EFORMAT; 0 otherwise.
 * etk_trace_read calls it when a file does not parse as protobuf. */
int etk_trace_json_hint(const char *path, etk_error *err);
/* Same from memory (name is used in messages). */
int etk_trace_read_mem(const void *data, size_t len, const char *name, const etk_read_opts *opts,
                       etk_trace **out, etk_error *err);
void etk_trace_free(etk_trace *t);

/* Build a trace in memory: etk_trace_new, then etk_trace_add (copies the node, its strings,
 * deps and attributes into the trace's arena). */
etk_trace *etk_trace_new(const char *version);
etk_node *etk_trace_add(etk_trace *t, const etk_node *n); /* NULL on out-of-memory */

/* id -> node. etk_trace_index must be called (once) before etk_trace_find; it counts
 * duplicate ids into t->n_duplicate_ids. */
int etk_trace_index(etk_trace *t, etk_error *err);
const etk_node *etk_trace_find(const etk_trace *t, uint64_t id);
/* index in t->nodes, or -1 */
ptrdiff_t etk_trace_find_index(const etk_trace *t, uint64_t id);

/* ---------- writer ---------- */
/* Streaming writer: canonical proto3 encoding (fields in number order, zero scalars omitted,
 * repeated numbers packed, oneof members always written), deterministic. Writes to
 * "<path>.tmp.<pid>", fsyncs and renames to path on etk_writer_close; etk_writer_abort removes
 * the temporary file. path "-" writes to stdout. */
typedef struct etk_writer etk_writer;
/* Opens the file and writes the GlobalMetadata message (version may be NULL). */
int etk_writer_open(const char *path, const char *version, const etk_attr *meta_attr,
                    size_t n_meta_attr, etk_writer **out, etk_error *err);
int etk_writer_put(etk_writer *w, const etk_node *n, etk_error *err);
int etk_writer_close(etk_writer *w, etk_error *err); /* frees w in every case */
void etk_writer_abort(etk_writer *w);                  /* frees w */
uint64_t etk_writer_bytes(const etk_writer *w);        /* bytes written so far */

/* Canonical frames for writers that assemble files themselves (e.g. the generator, which
 * encodes a pipeline stage once and splices in the few rank-specific nodes): exactly the bytes
 * etk_writer_put / etk_writer_open write. *_frame_size is the exact size. */
size_t etk_node_frame_size(const etk_node *n);
size_t etk_node_frame_encode(const etk_node *n, uint8_t *out); /* returns bytes written */
size_t etk_meta_frame_size(const char *version);
size_t etk_meta_frame_encode(const char *version, uint8_t *out); /* no attributes */

/* Write a whole trace (metadata + nodes in order). Byte-identical to the input for canonical
 * input files. */
int etk_trace_write(const etk_trace *t, const char *path, etk_error *err);
/* Encode into a malloc'ed buffer (caller frees). */
int etk_trace_encode(const etk_trace *t, uint8_t **buf, size_t *len, etk_error *err);

/* ---------- communicator groups ---------- */
typedef struct etk_group {
    const char *id;         /* key in the comm-group JSON ("" or "0": all ranks) */
    uint32_t n_ranks;
    const uint32_t *ranks;  /* in file order */
} etk_group;

typedef struct etk_groups {
    etk_arena *arena;
    etk_group *groups;
    size_t n_groups;
    size_t cap;
} etk_groups;

/* Parse {"<id>": [rank, ...], ...}. Errors name the file, the key and what was expected. */
int etk_groups_read(const char *path, etk_groups **out, etk_error *err);
int etk_groups_parse(const char *json, size_t len, const char *name, etk_groups **out,
                     etk_error *err);
etk_groups *etk_groups_new(void);
int etk_groups_add(etk_groups *g, const char *id, const uint32_t *ranks, uint32_t n);
const etk_group *etk_groups_find(const etk_groups *g, const char *id);
/* Written atomically (tmp + rename), keys in insertion order. */
int etk_groups_write(const etk_groups *g, const char *path, etk_error *err);
void etk_groups_free(etk_groups *g);

/* ---------- workloads ---------- */
typedef struct etk_workload {
    const char *prefix;     /* "<dir>/<name>" such that files are <prefix>.<rank>.et */
    uint32_t n_ranks;
    etk_trace **ranks;      /* ranks[r] for r in [0, n_ranks) */
    etk_groups *groups;     /* NULL when no comm-group file was found or given */
    const char *groups_path;
    /* Rank classes (optional; set by the generator, NULL for workloads read from files):
     * class_of[r] is rank r's class; all ranks of a class have the same trace up to the
     * renaming of communicator groups and point-to-point peers. class_rep[c] is the class's
     * representative rank. In a folded in-memory workload only ranks[class_rep[c]] are
     * non-NULL; the other ranks[r] are NULL. */
    uint32_t n_classes;
    uint32_t *class_of;
    uint32_t *class_rep;
    void (*free_extra)(void *); /* called with `extra` by etk_workload_free (owner hook) */
    void *extra;
} etk_workload;

/* Open a workload. `spec` is either a prefix (files <prefix>.0.et, <prefix>.1.et, ... are read
 * until the first missing rank), or one rank file "<prefix>.<r>.et" (its prefix is used), or a
 * single .et file that does not follow the pattern (a one-rank workload). groups_path: a
 * comm-group JSON, or NULL to use <prefix>.json when it exists. */
int etk_workload_open(const char *spec, const char *groups_path, const etk_read_opts *opts,
                      etk_workload **out, etk_error *err);
/* Before opening a workload: the rank files etk_workload_open(spec) would read, counted
 * (*n_ranks) and sized (*trace_bytes: their encoded bytes, a gzip file's by its trailer's
 * uncompressed size, modulo 4 GiB as gzip records it, at least its size on disk; *largest: the
 * largest file's). Reads no trace; files that cannot be sized count as empty
 * (etk_workload_open reports them). */
void etk_workload_size(const char *spec, uint32_t *n_ranks, uint64_t *trace_bytes, uint64_t *largest);
/* Write <prefix>.<r>.et for every rank and <prefix>.json if groups are set. */
int etk_workload_write(const etk_workload *w, const char *prefix, etk_error *err);
void etk_workload_free(etk_workload *w);

/* ---------- small utilities shared by modules ---------- */
/* Atomic output: open "<path>.tmp.<pid>" for writing; etk_file_commit fsyncs, closes and renames.
 * A path that is a device or pipe (/dev/null, /dev/stdout, a FIFO) is written in place. */
FILE *etk_file_begin(const char *path, char **tmp_path_out, etk_error *err);
/* Create the missing parent folders of an output path (mkdir -p of its directory part). */
int etk_file_mkdirs(const char *path, etk_error *err);
int etk_file_commit(FILE *f, char *tmp_path, const char *path, etk_error *err); /* frees tmp_path */
void etk_file_abort(FILE *f, char *tmp_path);                                  /* frees tmp_path */
/* Before any work: an output file (or the prefix of a file set) can be created — its folder
 * exists and is writable. "-", devices and pipes pass. The message names the folder. */
int etk_output_check(const char *path, etk_error *err);
/* Write a whole buffer atomically. */
int etk_file_write_all(const char *path, const void *data, size_t len, etk_error *err);
/* Read a whole regular file (transparently gunzipped when it starts with 1f 8b) into a malloc'ed,
 * NUL-terminated buffer of at most max_bytes (after decompression); a directory, FIFO or device
 * and a larger file are errors naming `what` ("model file") and the limit. */
int etk_file_read_max(const char *path, size_t max_bytes, const char *what, char **data, size_t *len,
                      etk_error *err);
/* The same with the limit for a large input (a JSON trace): ETK_MAX_INPUT_BYTES. */
#define ETK_MAX_INPUT_BYTES ((size_t)8 << 30)
/* model, cluster, GPU and ASTRA-sim configuration files */
#define ETK_MAX_CONFIG_BYTES ((size_t)8 << 20)
int etk_file_read_all(const char *path, char **data, size_t *len, etk_error *err);
/* "is a directory", "is a FIFO (named pipe), not a regular file", ... for a stat() st_mode. */
const char *etk_file_kind(unsigned mode);

#ifdef __cplusplus
}
#endif
#endif
