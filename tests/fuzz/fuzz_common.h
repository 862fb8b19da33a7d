/* fuzz_common.h — helpers shared by the fuzz targets (tests/fuzz/fuzz_*.c) and the tests that
 * replay their regression inputs (tests/test_fuzz_regressions.c) or compare traces
 * (tests/test_json.c): deep equality of two in-memory traces, and a FUZZ_CHECK that aborts with
 * a message (libFuzzer then saves the input as a crash). Header-only: fuzz targets link with
 * libetkit alone. */
#ifndef ETK_FUZZ_COMMON_H
#define ETK_FUZZ_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etkit/et.h"
#include "etkit/net.h"

#define FUZZ_CHECK(cond, ...)                                                                       \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fprintf(stderr, "\n");                                                                  \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

/* Folder for the scratch files of targets whose API reads or writes paths: /dev/shm (memory,
 * no disk I/O per input) when it is a writable folder, else /tmp. */
static inline const char *fc_scratch_dir(void)
{
    static const char *dir;
    if (!dir) {
        char probe[64];
        snprintf(probe, sizeof probe, "/dev/shm/etk_fuzz_probe.%ld", (long)getpid());
        FILE *f = fopen(probe, "wb");
        dir = f ? "/dev/shm" : "/tmp";
        if (f) {
            fclose(f);
            remove(probe);
        }
    }
    return dir;
}

/* An accepted cluster costed once: every collective type over its first (up to) 16 NPUs, a send
 * across it and a compute node (fuzz_cluster, fuzz_astra). */
static inline void fc_cost_cluster(const etk_cluster *cp)
{
    etk_cluster c = *cp;
    uint32_t ranks[16];
    uint32_t n = c.n_npus < 16 ? c.n_npus : 16;
    for (uint32_t i = 0; i < n; i++)
        ranks[i] = i;
    for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
        (void)etk_net_coll_ns(&c, (etk_coll_type)t, 1 << 20, ranks, n);
    (void)etk_net_p2p_ns(&c, 0, c.n_npus - 1, 4096);
    (void)etk_hw_compute_ns(&c, 1000000, 1000);
}

static inline int fc_streq(const char *a, const char *b)
{
    if (!a || !*a)
        return !b || !*b; /* NULL and "" encode the same (an omitted string field) */
    return b && !strcmp(a, b);
}

/* Doubles compared by bits; floats by the bits of the narrowed value (the writer narrows).
 * Any two NaNs of a float are treated as equal: widening a signalling NaN may quiet it. */
static inline int fc_deq(double a, double b)
{
    return !memcmp(&a, &b, sizeof a);
}
static inline int fc_feq(float a, float b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return !memcmp(&a, &b, sizeof a);
}

static inline int fc_bytes_eq(etk_bytes a, etk_bytes b)
{
    return a.len == b.len && (!a.len || !memcmp(a.data, b.data, a.len));
}

/* 0 when equal, else writes what differs into why. */
static inline int fc_attr_diff(const etk_attr *a, const etk_attr *b, char *why, size_t wn)
{
    if (!fc_streq(a->name, b->name) || !fc_streq(a->doc, b->doc) || a->kind != b->kind) {
        snprintf(why, wn, "attr name/doc/kind: '%s'/%d vs '%s'/%d", a->name, a->kind, b->name, b->kind);
        return 1;
    }
    int ok = 1;
    switch (a->kind) {
    case ETK_ATTR_NONE: break;
    case ETK_ATTR_DOUBLE: ok = fc_deq(a->v.d, b->v.d); break;
    case ETK_ATTR_FLOAT: ok = fc_feq(a->v.f, b->v.f); break;
    case ETK_ATTR_INT32: case ETK_ATTR_INT64: case ETK_ATTR_SINT32: case ETK_ATTR_SINT64:
    case ETK_ATTR_SFIXED32: case ETK_ATTR_SFIXED64: ok = a->v.i == b->v.i; break;
    case ETK_ATTR_UINT32: case ETK_ATTR_UINT64: case ETK_ATTR_FIXED32: case ETK_ATTR_FIXED64:
        ok = a->v.u == b->v.u;
        break;
    case ETK_ATTR_BOOL: ok = a->v.b == b->v.b; break;
    case ETK_ATTR_STRING: ok = fc_streq(a->v.s, b->v.s); break;
    case ETK_ATTR_BYTES: ok = fc_bytes_eq((etk_bytes){a->v.data, a->n}, (etk_bytes){b->v.data, b->n}); break;
    default:
        if (a->n != b->n) {
            ok = 0;
            break;
        }
        for (uint32_t i = 0; i < a->n && ok; i++) {
            switch (a->kind) {
            case ETK_ATTR_DOUBLE_LIST: ok = fc_deq(a->v.dl[i], b->v.dl[i]); break;
            case ETK_ATTR_FLOAT_LIST: ok = fc_feq(a->v.fl[i], b->v.fl[i]); break;
            case ETK_ATTR_INT32_LIST: case ETK_ATTR_SINT32_LIST: case ETK_ATTR_SFIXED32_LIST:
                ok = a->v.i32[i] == b->v.i32[i];
                break;
            case ETK_ATTR_INT64_LIST: case ETK_ATTR_SINT64_LIST: case ETK_ATTR_SFIXED64_LIST:
                ok = a->v.i64[i] == b->v.i64[i];
                break;
            case ETK_ATTR_UINT32_LIST: case ETK_ATTR_FIXED32_LIST: ok = a->v.u32[i] == b->v.u32[i]; break;
            case ETK_ATTR_UINT64_LIST: case ETK_ATTR_FIXED64_LIST: ok = a->v.u64[i] == b->v.u64[i]; break;
            case ETK_ATTR_BOOL_LIST: ok = !a->v.bl[i] == !b->v.bl[i]; break;
            case ETK_ATTR_STRING_LIST: ok = fc_streq(a->v.sl[i], b->v.sl[i]); break;
            case ETK_ATTR_BYTES_LIST: ok = fc_bytes_eq(a->v.bytesl[i], b->v.bytesl[i]); break;
            default: break;
            }
        }
    }
    if (!ok)
        snprintf(why, wn, "attr '%s' (%d): values differ", a->name, a->kind);
    return !ok;
}

static inline int fc_io_eq(const etk_io *a, const etk_io *b)
{
    if (!a || !b)
        return !a && !b;
    return fc_streq(a->values, b->values) && fc_streq(a->shapes, b->shapes) && fc_streq(a->types, b->types);
}

static inline int fc_node_diff(const etk_node *a, const etk_node *b, char *why, size_t wn)
{
    if (a->id != b->id || !fc_streq(a->name, b->name) || a->type != b->type ||
        a->start_time_micros != b->start_time_micros || a->duration_micros != b->duration_micros) {
        snprintf(why, wn, "node fields (id %llu vs %llu)", (unsigned long long)a->id, (unsigned long long)b->id);
        return 1;
    }
    if (a->n_ctrl_deps != b->n_ctrl_deps || a->n_data_deps != b->n_data_deps || a->n_attr != b->n_attr ||
        (a->n_ctrl_deps && memcmp(a->ctrl_deps, b->ctrl_deps, a->n_ctrl_deps * sizeof(uint64_t))) ||
        (a->n_data_deps && memcmp(a->data_deps, b->data_deps, a->n_data_deps * sizeof(uint64_t)))) {
        snprintf(why, wn, "node %llu: deps or attribute count", (unsigned long long)a->id);
        return 1;
    }
    if (!fc_io_eq(a->inputs, b->inputs) || !fc_io_eq(a->outputs, b->outputs)) {
        snprintf(why, wn, "node %llu: inputs/outputs", (unsigned long long)a->id);
        return 1;
    }
    for (uint32_t i = 0; i < a->n_attr; i++)
        if (fc_attr_diff(&a->attr[i], &b->attr[i], why, wn))
            return 1;
    return 0;
}

/* Deep equality of what the wire format carries: 0 when equal. */
static inline int fc_trace_diff(const etk_trace *a, const etk_trace *b, char *why, size_t wn)
{
    if (!fc_streq(a->version, b->version) || a->n_meta_attr != b->n_meta_attr || a->n_nodes != b->n_nodes) {
        snprintf(why, wn, "version/metadata attributes/node count (%zu vs %zu nodes)", a->n_nodes, b->n_nodes);
        return 1;
    }
    for (uint32_t i = 0; i < a->n_meta_attr; i++)
        if (fc_attr_diff(&a->meta_attr[i], &b->meta_attr[i], why, wn))
            return 1;
    for (size_t i = 0; i < a->n_nodes; i++)
        if (fc_node_diff(&a->nodes[i], &b->nodes[i], why, wn)) {
            size_t l = strlen(why);
            snprintf(why + l, wn - l, " (node index %zu)", i);
            return 1;
        }
    return 0;
}
#endif
