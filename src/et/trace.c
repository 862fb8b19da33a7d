/* trace.c — the in-memory trace: arena-backed nodes built by the reader or by generators
 * (etk_trace_add deep-copies into the arena), interned attribute names, and the id -> node
 * index (open addressing) used by validation, the simulator and dependency resolution. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_priv.h"

typedef struct trace_priv {
    etk_trace pub;
    /* intern table for attribute names */
    const char **names;
    size_t n_names, cap_names;
} trace_priv;

etk_trace *etk_trace_new(const char *version)
{
    trace_priv *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    etk_trace *t = &p->pub;
    t->arena = etk_arena_new(0);
    if (!t->arena) {
        free(p);
        return NULL;
    }
    t->path = "";
    if (version && *version)
        t->version = etk_arena_strdup(t->arena, version);
    return t;
}

void etk_trace_free(etk_trace *t)
{
    if (!t)
        return;
    trace_priv *p = (trace_priv *)t;
    etk_arena_free(t->arena);
    free(t->nodes);
    free(t->index_slots);
    free(p->names);
    free(p);
}

const char *etk__intern(etk_trace *t, const char *s, size_t len)
{
    trace_priv *p = (trace_priv *)t;
    /* a name is a C string: it ends at an embedded NUL, as protobuf-c's copies do */
    len = strnlen(s, len);
    /* linear probe over a handful of names: traces carry ~10 distinct attribute names */
    for (size_t i = 0; i < p->n_names; i++)
        if (strlen(p->names[i]) == len && memcmp(p->names[i], s, len) == 0)
            return p->names[i];
    char *c = etk_arena_strndup(t->arena, s, len);
    if (!c)
        return NULL;
    if (p->n_names < 64) { /* bound the table: odd traces with many names just copy */
        if (p->n_names == p->cap_names) {
            size_t nc = p->cap_names ? p->cap_names * 2 : 16;
            const char **nn = realloc(p->names, nc * sizeof *nn);
            if (!nn)
                return c;
            p->names = nn;
            p->cap_names = nc;
        }
        p->names[p->n_names++] = c;
    }
    return c;
}

void etk__trace_warn(etk_trace *t, const char *fmt, ...)
{
    if (t->n_warnings < ETK_MAX_WARN) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        t->warnings[t->n_warnings] = etk_arena_strdup(t->arena, buf);
    }
    t->n_warnings++;
}

etk_node *etk__trace_push(etk_trace *t)
{
    if (t->n_nodes == t->cap_nodes) {
        size_t nc = t->cap_nodes ? t->cap_nodes + t->cap_nodes / 2 : 64;
        etk_node *nn = realloc(t->nodes, nc * sizeof *nn);
        if (!nn)
            return NULL;
        t->nodes = nn;
        t->cap_nodes = nc;
    }
    etk_node *n = &t->nodes[t->n_nodes++];
    memset(n, 0, sizeof *n);
    return n;
}

etk_trace *etk__trace_new_hint(uint64_t bytes)
{
    etk_trace *t = etk_trace_new(NULL);
    if (!t || bytes < (1u << 20))
        return t;
    /* arena blocks of about the encoded size (the decoded strings, deps and attributes take
     * roughly as much again), in huge pages; the node array grows by realloc, which moves
     * large blocks with mremap rather than copying */
    etk_arena *a = etk_arena_new((size_t)bytes / 2);
    if (a) {
        etk_arena_free(t->arena);
        t->arena = a;
    }
    /* the node array is written once, front to back: reserve it in huge pages for one node
     * per 40 bytes of trace (pages never touched cost nothing); realloc grows it if needed */
    size_t cap = (size_t)(bytes / 40);
    etk_node *n = bytes >= (32u << 20) ? etk__big_alloc(cap * sizeof *n) : NULL; /* small traces:
                                   a 2 MiB huge page would outweigh the nodes themselves */
    if (n) {
        t->nodes = n;
        t->cap_nodes = cap;
    }
    return t;
}

size_t etk__list_elem_size(int kind)
{
    switch (kind) {
    case ETK_ATTR_DOUBLE_LIST: case ETK_ATTR_INT64_LIST: case ETK_ATTR_UINT64_LIST:
    case ETK_ATTR_SINT64_LIST: case ETK_ATTR_FIXED64_LIST: case ETK_ATTR_SFIXED64_LIST:
        return 8;
    case ETK_ATTR_FLOAT_LIST: case ETK_ATTR_INT32_LIST: case ETK_ATTR_UINT32_LIST:
    case ETK_ATTR_SINT32_LIST: case ETK_ATTR_FIXED32_LIST: case ETK_ATTR_SFIXED32_LIST:
        return 4;
    case ETK_ATTR_BOOL_LIST:
        return 1;
    default:
        return 0;
    }
}

int etk__attr_copy(etk_trace *t, etk_attr *dst, const etk_attr *src)
{
    etk_arena *a = t->arena;
    *dst = *src;
    const char *name = src->name ? src->name : "";
    dst->name = etk__intern(t, name, strlen(name));
    if (!dst->name)
        return ETK_ENOMEM;
    dst->doc = NULL; /* "" too: never keep the caller's pointer (et.h: NULL if empty) */
    if (src->doc && *src->doc && !(dst->doc = etk_arena_strdup(a, src->doc)))
        return ETK_ENOMEM;
    switch (src->kind) {
    case ETK_ATTR_STRING:
        dst->v.s = etk_arena_strdup(a, src->v.s ? src->v.s : "");
        return dst->v.s ? 0 : ETK_ENOMEM;
    case ETK_ATTR_BYTES:
        dst->v.data = src->n ? etk_arena_memdup(a, src->v.data, src->n) : etk_arena_alloc(a, 1); /* empty: nothing to read */
        return dst->v.data ? 0 : ETK_ENOMEM;
    case ETK_ATTR_STRING_LIST: {
        const char **sl = etk_arena_alloc(a, (src->n ? src->n : 1) * sizeof *sl);
        if (!sl)
            return ETK_ENOMEM;
        for (uint32_t i = 0; i < src->n; i++)
            if (!(sl[i] = etk_arena_strdup(a, src->v.sl[i] ? src->v.sl[i] : "")))
                return ETK_ENOMEM;
        dst->v.sl = sl;
        return 0;
    }
    case ETK_ATTR_BYTES_LIST: {
        etk_bytes *bl = etk_arena_alloc(a, (src->n ? src->n : 1) * sizeof *bl);
        if (!bl)
            return ETK_ENOMEM;
        for (uint32_t i = 0; i < src->n; i++) {
            bl[i].len = src->v.bytesl[i].len;
            if (!(bl[i].data = etk_arena_memdup(a, src->v.bytesl[i].data, bl[i].len)))
                return ETK_ENOMEM;
        }
        dst->v.bytesl = bl;
        return 0;
    }
    default:
        if (etk_attr_kind_is_list(src->kind)) {
            size_t es = etk__list_elem_size(src->kind);
            void *p = etk_arena_memdup(a, src->v.i64, (size_t)src->n * es);
            if (!p)
                return ETK_ENOMEM;
            dst->v.i64 = p;
        }
        return 0;
    }
}

static const char *dup_or_null(etk_arena *a, const char *s)
{
    return (s && *s) ? etk_arena_strdup(a, s) : NULL;
}

static const etk_io *copy_io(etk_arena *a, const etk_io *io)
{
    if (!io)
        return NULL;
    etk_io *c = etk_arena_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    c->values = dup_or_null(a, io->values);
    c->shapes = dup_or_null(a, io->shapes);
    c->types = dup_or_null(a, io->types);
    return c;
}

etk_node *etk_trace_add(etk_trace *t, const etk_node *src)
{
    etk_arena *a = t->arena;
    etk_node c = *src;
    c.name = etk_arena_strdup(a, src->name ? src->name : "");
    c.ctrl_deps = src->n_ctrl_deps ? etk_arena_memdup(a, src->ctrl_deps, src->n_ctrl_deps * 8u) : NULL;
    c.data_deps = src->n_data_deps ? etk_arena_memdup(a, src->data_deps, src->n_data_deps * 8u) : NULL;
    c.inputs = copy_io(a, src->inputs);
    c.outputs = copy_io(a, src->outputs);
    if (!c.name || (src->n_ctrl_deps && !c.ctrl_deps) || (src->n_data_deps && !c.data_deps) ||
        (src->inputs && !c.inputs) || (src->outputs && !c.outputs))
        return NULL;
    if (src->n_attr) {
        etk_attr *at = etk_arena_alloc(a, src->n_attr * sizeof *at);
        if (!at)
            return NULL;
        for (uint32_t i = 0; i < src->n_attr; i++)
            if (etk__attr_copy(t, &at[i], &src->attr[i]) != 0)
                return NULL;
        c.attr = at;
    } else {
        c.attr = NULL;
    }
    etk_node *n = etk__trace_push(t);
    if (!n)
        return NULL;
    *n = c;
    if (t->index_slots) { /* adding invalidates the index: call etk_trace_index again */
        free(t->index_slots);
        t->index_slots = NULL;
    }
    return n;
}

static inline size_t hash_id(uint64_t id, size_t mask)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

int etk_trace_index(etk_trace *t, etk_error *err)
{
    if (t->n_nodes >= UINT32_MAX - 1)
        return etk_err(err, ETK_EUNSUPPORTED, "%s: %zu nodes exceed the index limit", t->path,
                       t->n_nodes);
    size_t cap = 16;
    while (cap < t->n_nodes * 2)
        cap *= 2;
    free(t->index_slots);
    t->index_slots = calloc(cap, sizeof *t->index_slots);
    if (!t->index_slots)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory indexing %zu nodes", t->path, t->n_nodes);
    t->index_mask = cap - 1;
    t->n_duplicate_ids = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        uint64_t id = t->nodes[i].id;
        size_t h = hash_id(id, t->index_mask);
        for (;;) {
            uint32_t s = t->index_slots[h];
            if (!s) {
                t->index_slots[h] = (uint32_t)i + 1;
                break;
            }
            if (t->nodes[s - 1].id == id) {
                t->n_duplicate_ids++;
                break;
            }
            h = (h + 1) & t->index_mask;
        }
    }
    return 0;
}

ptrdiff_t etk_trace_find_index(const etk_trace *t, uint64_t id)
{
    if (!t->index_slots)
        return -1;
    size_t h = hash_id(id, t->index_mask);
    for (;;) {
        uint32_t s = t->index_slots[h];
        if (!s)
            return -1;
        if (t->nodes[s - 1].id == id)
            return (ptrdiff_t)s - 1;
        h = (h + 1) & t->index_mask;
    }
}

const etk_node *etk_trace_find(const etk_trace *t, uint64_t id)
{
    ptrdiff_t i = etk_trace_find_index(t, id);
    return i < 0 ? NULL : &t->nodes[i];
}
