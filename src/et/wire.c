/* wire.c — the fast path of the trace codec: a direct canonical encoder for Node messages and a
 * direct decoder for the common shape of Node messages, both without intermediate protobuf-c
 * structs. protobuf-c stays the reference: the decoder hands anything unusual (a repeated
 * nested message, split packed runs, groups, malformed data) back to the protobuf-c path in
 * reader.c, and tests/test_wire.c plus the fuzz target fuzz_node_codec check that both paths
 * agree byte for byte and field for field. Why: per-message struct building and copying in
 * protobuf-c cost 2-3x the decode itself on traces of many small nodes (see bench/RESULTS.md). */
#include <limits.h>
#include <string.h>

#include "trace_priv.h"

/* ------------------------------------------------------------------ encoding */

static inline size_t vsize(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *vput(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t zz32(int32_t v) { return (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)); }
static inline uint64_t zz64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline size_t str_field_size(const char *s) /* tag(1 byte, fields < 16) + len + bytes */
{
    size_t l = s ? strlen(s) : 0;
    return l ? 1 + vsize(l) + l : 0;
}

static inline uint8_t *put_str(uint8_t *p, uint8_t tag, const char *s)
{
    size_t l = s ? strlen(s) : 0;
    if (!l)
        return p;
    *p++ = tag;
    p = vput(p, l);
    memcpy(p, s, l);
    return p + l;
}

/* tag bytes for field numbers 3..32 (they need 1 byte below 16, 2 above) */
static inline size_t tag_size(uint32_t field) { return field < 16 ? 1 : 2; }
static inline uint8_t *put_tag(uint8_t *p, uint32_t field, uint32_t wt)
{
    return vput(p, ((uint64_t)field << 3) | wt);
}

/* size of the packed payload of a numeric list */
static size_t list_payload(const etk_attr *a)
{
    size_t s = 0;
    uint32_t n = a->n;
    switch (a->kind) {
    case ETK_ATTR_DOUBLE_LIST: case ETK_ATTR_FIXED64_LIST: case ETK_ATTR_SFIXED64_LIST: return 8u * n;
    case ETK_ATTR_FLOAT_LIST: case ETK_ATTR_FIXED32_LIST: case ETK_ATTR_SFIXED32_LIST: return 4u * n;
    case ETK_ATTR_BOOL_LIST: return n;
    case ETK_ATTR_INT32_LIST: for (uint32_t i = 0; i < n; i++) s += vsize((uint64_t)(int64_t)a->v.i32[i]); return s;
    case ETK_ATTR_INT64_LIST: for (uint32_t i = 0; i < n; i++) s += vsize((uint64_t)a->v.i64[i]); return s;
    case ETK_ATTR_UINT32_LIST: for (uint32_t i = 0; i < n; i++) s += vsize(a->v.u32[i]); return s;
    case ETK_ATTR_UINT64_LIST: for (uint32_t i = 0; i < n; i++) s += vsize(a->v.u64[i]); return s;
    case ETK_ATTR_SINT32_LIST: for (uint32_t i = 0; i < n; i++) s += vsize(zz32(a->v.i32[i])); return s;
    case ETK_ATTR_SINT64_LIST: for (uint32_t i = 0; i < n; i++) s += vsize(zz64(a->v.i64[i])); return s;
    case ETK_ATTR_STRING_LIST:
        for (uint32_t i = 0; i < n; i++) {
            size_t l = a->v.sl[i] ? strlen(a->v.sl[i]) : 0;
            s += 1 + vsize(l) + l;
        }
        return s;
    case ETK_ATTR_BYTES_LIST:
        for (uint32_t i = 0; i < n; i++)
            s += 1 + vsize(a->v.bytesl[i].len) + a->v.bytesl[i].len;
        return s;
    default: return 0;
    }
}

/* size of the list message body */
static size_t list_body(const etk_attr *a)
{
    size_t pl = list_payload(a);
    if (a->kind == ETK_ATTR_STRING_LIST || a->kind == ETK_ATTR_BYTES_LIST)
        return pl;
    return a->n ? 1 + vsize(pl) + pl : 0;
}

static size_t value_size(const etk_attr *a)
{
    uint32_t f = (uint32_t)a->kind;
    size_t t = tag_size(f);
    switch (a->kind) {
    case ETK_ATTR_NONE: return 0;
    case ETK_ATTR_DOUBLE: case ETK_ATTR_FIXED64: case ETK_ATTR_SFIXED64: return t + 8;
    case ETK_ATTR_FLOAT: case ETK_ATTR_FIXED32: case ETK_ATTR_SFIXED32: return t + 4;
    case ETK_ATTR_INT32: return t + vsize((uint64_t)(int64_t)(int32_t)a->v.i);
    case ETK_ATTR_INT64: return t + vsize((uint64_t)a->v.i);
    case ETK_ATTR_UINT32: return t + vsize((uint32_t)a->v.u);
    case ETK_ATTR_UINT64: return t + vsize(a->v.u);
    case ETK_ATTR_SINT32: return t + vsize(zz32((int32_t)a->v.i));
    case ETK_ATTR_SINT64: return t + vsize(zz64(a->v.i));
    case ETK_ATTR_BOOL: return t + 1;
    case ETK_ATTR_STRING: {
        size_t l = a->v.s ? strlen(a->v.s) : 0;
        return t + vsize(l) + l;
    }
    case ETK_ATTR_BYTES: return t + vsize(a->n) + a->n;
    default: {
        size_t b = list_body(a);
        return t + vsize(b) + b;
    }
    }
}

static size_t attr_size(const etk_attr *a)
{
    return str_field_size(a->name) + str_field_size(a->doc) + value_size(a);
}

static uint8_t *put_fixed(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint8_t *put_list_payload(uint8_t *p, const etk_attr *a)
{
    uint32_t n = a->n;
    switch (a->kind) {
    case ETK_ATTR_DOUBLE_LIST: for (uint32_t i = 0; i < n; i++) p = put_fixed(p, dbits(a->v.dl[i]), 8); break;
    case ETK_ATTR_FIXED64_LIST: case ETK_ATTR_SFIXED64_LIST: for (uint32_t i = 0; i < n; i++) p = put_fixed(p, a->v.u64[i], 8); break;
    case ETK_ATTR_FLOAT_LIST: for (uint32_t i = 0; i < n; i++) p = put_fixed(p, fbits(a->v.fl[i]), 4); break;
    case ETK_ATTR_FIXED32_LIST: case ETK_ATTR_SFIXED32_LIST: for (uint32_t i = 0; i < n; i++) p = put_fixed(p, a->v.u32[i], 4); break;
    case ETK_ATTR_BOOL_LIST: for (uint32_t i = 0; i < n; i++) *p++ = a->v.bl[i] ? 1 : 0; break;
    case ETK_ATTR_INT32_LIST: for (uint32_t i = 0; i < n; i++) p = vput(p, (uint64_t)(int64_t)a->v.i32[i]); break;
    case ETK_ATTR_INT64_LIST: for (uint32_t i = 0; i < n; i++) p = vput(p, (uint64_t)a->v.i64[i]); break;
    case ETK_ATTR_UINT32_LIST: for (uint32_t i = 0; i < n; i++) p = vput(p, a->v.u32[i]); break;
    case ETK_ATTR_UINT64_LIST: for (uint32_t i = 0; i < n; i++) p = vput(p, a->v.u64[i]); break;
    case ETK_ATTR_SINT32_LIST: for (uint32_t i = 0; i < n; i++) p = vput(p, zz32(a->v.i32[i])); break;
    case ETK_ATTR_SINT64_LIST: for (uint32_t i = 0; i < n; i++) p = vput(p, zz64(a->v.i64[i])); break;
    case ETK_ATTR_STRING_LIST:
        for (uint32_t i = 0; i < n; i++) {
            size_t l = a->v.sl[i] ? strlen(a->v.sl[i]) : 0;
            *p++ = 0x0a;
            p = vput(p, l);
            if (l)
                memcpy(p, a->v.sl[i], l);
            p += l;
        }
        break;
    case ETK_ATTR_BYTES_LIST:
        for (uint32_t i = 0; i < n; i++) {
            size_t l = a->v.bytesl[i].len;
            *p++ = 0x0a;
            p = vput(p, l);
            if (l)
                memcpy(p, a->v.bytesl[i].data, l);
            p += l;
        }
        break;
    default: break;
    }
    return p;
}

static uint8_t *put_attr(uint8_t *p, const etk_attr *a)
{
    p = put_str(p, 0x0a, a->name);
    p = put_str(p, 0x12, a->doc);
    uint32_t f = (uint32_t)a->kind;
    switch (a->kind) {
    case ETK_ATTR_NONE: return p;
    case ETK_ATTR_DOUBLE: p = put_tag(p, f, 1); return put_fixed(p, dbits(a->v.d), 8);
    case ETK_ATTR_FIXED64: case ETK_ATTR_SFIXED64: p = put_tag(p, f, 1); return put_fixed(p, a->v.u, 8);
    case ETK_ATTR_FLOAT: p = put_tag(p, f, 5); return put_fixed(p, fbits(a->v.f), 4);
    case ETK_ATTR_FIXED32: case ETK_ATTR_SFIXED32: p = put_tag(p, f, 5); return put_fixed(p, (uint32_t)a->v.u, 4);
    case ETK_ATTR_INT32: p = put_tag(p, f, 0); return vput(p, (uint64_t)(int64_t)(int32_t)a->v.i);
    case ETK_ATTR_INT64: p = put_tag(p, f, 0); return vput(p, (uint64_t)a->v.i);
    case ETK_ATTR_UINT32: p = put_tag(p, f, 0); return vput(p, (uint32_t)a->v.u);
    case ETK_ATTR_UINT64: p = put_tag(p, f, 0); return vput(p, a->v.u);
    case ETK_ATTR_SINT32: p = put_tag(p, f, 0); return vput(p, zz32((int32_t)a->v.i));
    case ETK_ATTR_SINT64: p = put_tag(p, f, 0); return vput(p, zz64(a->v.i));
    case ETK_ATTR_BOOL: p = put_tag(p, f, 0); *p++ = a->v.b ? 1 : 0; return p;
    case ETK_ATTR_STRING: {
        size_t l = a->v.s ? strlen(a->v.s) : 0;
        p = put_tag(p, f, 2);
        p = vput(p, l);
        if (l)
            memcpy(p, a->v.s, l);
        return p + l;
    }
    case ETK_ATTR_BYTES:
        p = put_tag(p, f, 2);
        p = vput(p, a->n);
        if (a->n)
            memcpy(p, a->v.data, a->n);
        return p + a->n;
    default: {
        p = put_tag(p, f, 2);
        p = vput(p, list_body(a));
        if (a->kind != ETK_ATTR_STRING_LIST && a->kind != ETK_ATTR_BYTES_LIST) {
            if (!a->n)
                return p;
            *p++ = 0x0a;
            p = vput(p, list_payload(a));
        }
        return put_list_payload(p, a);
    }
    }
}

static size_t io_size(const etk_io *io)
{
    return str_field_size(io->values) + str_field_size(io->shapes) + str_field_size(io->types);
}

static size_t deps_payload(const uint64_t *d, uint32_t n)
{
    size_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += vsize(d[i]);
    return s;
}

bool etk__attr_kind_valid(int kind) { return kind == ETK_ATTR_NONE || (kind >= 3 && kind <= 32); }

size_t etk__node_encoded_size(const etk_node *n)
{
    size_t s = 0;
    if (n->id)
        s += 1 + vsize(n->id);
    s += str_field_size(n->name);
    if (n->type)
        s += 1 + vsize((uint64_t)(int64_t)n->type);
    if (n->n_ctrl_deps) {
        size_t pl = deps_payload(n->ctrl_deps, n->n_ctrl_deps);
        s += 1 + vsize(pl) + pl;
    }
    if (n->n_data_deps) {
        size_t pl = deps_payload(n->data_deps, n->n_data_deps);
        s += 1 + vsize(pl) + pl;
    }
    if (n->start_time_micros)
        s += 1 + vsize(n->start_time_micros);
    if (n->duration_micros)
        s += 1 + vsize(n->duration_micros);
    if (n->inputs) {
        size_t b = io_size(n->inputs);
        s += 1 + vsize(b) + b;
    }
    if (n->outputs) {
        size_t b = io_size(n->outputs);
        s += 1 + vsize(b) + b;
    }
    for (uint32_t i = 0; i < n->n_attr; i++) {
        size_t b = attr_size(&n->attr[i]);
        s += 1 + vsize(b) + b;
    }
    return s;
}

static uint8_t *put_io(uint8_t *p, uint8_t tag, const etk_io *io)
{
    *p++ = tag;
    p = vput(p, io_size(io));
    p = put_str(p, 0x0a, io->values);
    p = put_str(p, 0x12, io->shapes);
    return put_str(p, 0x1a, io->types);
}

uint8_t *etk__node_encode(const etk_node *n, uint8_t *p)
{
    if (n->id) {
        *p++ = 0x08;
        p = vput(p, n->id);
    }
    p = put_str(p, 0x12, n->name);
    if (n->type) {
        *p++ = 0x18;
        p = vput(p, (uint64_t)(int64_t)n->type);
    }
    if (n->n_ctrl_deps) {
        *p++ = 0x22;
        p = vput(p, deps_payload(n->ctrl_deps, n->n_ctrl_deps));
        for (uint32_t i = 0; i < n->n_ctrl_deps; i++)
            p = vput(p, n->ctrl_deps[i]);
    }
    if (n->n_data_deps) {
        *p++ = 0x2a;
        p = vput(p, deps_payload(n->data_deps, n->n_data_deps));
        for (uint32_t i = 0; i < n->n_data_deps; i++)
            p = vput(p, n->data_deps[i]);
    }
    if (n->start_time_micros) {
        *p++ = 0x30;
        p = vput(p, n->start_time_micros);
    }
    if (n->duration_micros) {
        *p++ = 0x38;
        p = vput(p, n->duration_micros);
    }
    if (n->inputs)
        p = put_io(p, 0x42, n->inputs);
    if (n->outputs)
        p = put_io(p, 0x4a, n->outputs);
    for (uint32_t i = 0; i < n->n_attr; i++) {
        *p++ = 0x52;
        p = vput(p, attr_size(&n->attr[i]));
        p = put_attr(p, &n->attr[i]);
    }
    return p;
}

size_t etk_node_frame_size(const etk_node *n)
{
    size_t b = etk__node_encoded_size(n);
    return vsize(b) + b;
}

size_t etk_node_frame_encode(const etk_node *n, uint8_t *out)
{
    uint8_t *p = vput(out, etk__node_encoded_size(n));
    return (size_t)(etk__node_encode(n, p) - out);
}

size_t etk_meta_frame_size(const char *version)
{
    size_t b = str_field_size(version);
    return vsize(b) + b;
}

size_t etk_meta_frame_encode(const char *version, uint8_t *out)
{
    uint8_t *p = vput(out, str_field_size(version));
    return (size_t)(put_str(p, 0x0a, version) - out);
}

/* ------------------------------------------------------------------ decoding */

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static inline bool rv(rd *r, uint64_t *v)
{
    const uint8_t *p = r->p;
    if (p < r->end && *p < 0x80) { /* one-byte fast case */
        *v = *p;
        r->p = p + 1;
        return true;
    }
    uint64_t x = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        if (p >= r->end)
            return false;
        uint8_t b = *p++;
        if (sh == 63 && b > 1)
            return false;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *v = x;
            r->p = p;
            return true;
        }
    }
    return false;
}

/* A field tag: at most 5 bytes and a field number in 1..2^29-1, as protobuf-c requires;
 * anything else goes to the reference path, which reports it. */
static inline bool rtag(rd *r, uint64_t *tag)
{
    const uint8_t *start = r->p;
    if (!rv(r, tag) || r->p - start > 5 || (*tag >> 3) == 0 || (*tag >> 3) > 0x1fffffff)
        return false;
    return true;
}

static inline bool rlen(rd *r, rd *sub)
{
    uint64_t l;
    const uint8_t *start = r->p;
    /* as protobuf-c 1.4 (the reference decoder): a length prefix has at most 5 bytes (an
     * overlong "80 80 80 80 80 80 80 80 00" is malformed there, so here too), its 35 bits are
     * read whole, and a length past INT_MAX is malformed ("80 80 80 80 50" is 80 x 2^28, not the
     * 0 its low 32 bits would give) */
    if (!rv(r, &l) || r->p - start > 5 || l > INT_MAX)
        return false;
    if (l > (uint64_t)(r->end - r->p))
        return false;
    sub->p = r->p;
    sub->end = r->p + l;
    r->p += l;
    return true;
}

static bool skip(rd *r, int wt)
{
    uint64_t v;
    rd s = {NULL, NULL};
    switch (wt) {
    case 0: return rv(r, &v);
    case 1: if (r->end - r->p < 8) return false; r->p += 8; return true;
    case 5: if (r->end - r->p < 4) return false; r->p += 4; return true;
    case 2: return rlen(r, &s);
    default: return false; /* groups and invalid types: slow path */
    }
}

static const char *dup_sub(etk_arena *a, const rd *s)
{
    return etk_arena_strndup(a, (const char *)s->p, (size_t)(s->end - s->p));
}

static uint64_t get_fixed(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* packed deps: count, then copy */
static bool read_deps(etk_arena *a, rd s, const uint64_t **out, uint32_t *n)
{
    uint32_t c = 0;
    for (const uint8_t *q = s.p; q < s.end; q++)
        if (!(*q & 0x80))
            c++;
    if (s.p < s.end && (s.end[-1] & 0x80))
        return false;
    uint64_t *d = etk_arena_alloc_uninit(a, (c ? c : 1) * sizeof *d);
    if (!d)
        return false;
    for (uint32_t i = 0; i < c; i++)
        if (!rv(&s, &d[i]))
            return false;
    *out = d;
    *n = c;
    return true;
}

static bool read_io(etk_arena *a, rd s, const etk_io **out)
{
    etk_io *io = etk_arena_alloc(a, sizeof *io);
    if (!io)
        return false;
    while (s.p < s.end) {
        uint64_t tag;
        if (!rtag(&s, &tag))
            return false;
        uint64_t f = tag >> 3;
        int wt = (int)(tag & 7);
        if (f >= 1 && f <= 3) {
            rd v = {NULL, NULL};
            if (wt != 2 || !rlen(&s, &v))
                return false;
            const char *str = v.p == v.end ? NULL : dup_sub(a, &v);
            if (v.p != v.end && !str)
                return false;
            if (f == 1) io->values = str;
            else if (f == 2) io->shapes = str;
            else io->types = str;
        } else if (f == 0 || !skip(&s, wt)) {
            return false;
        }
    }
    *out = io;
    return true;
}

static int list_wt(int kind)
{
    switch (kind) {
    case ETK_ATTR_DOUBLE_LIST: case ETK_ATTR_FIXED64_LIST: case ETK_ATTR_SFIXED64_LIST: return 1;
    case ETK_ATTR_FLOAT_LIST: case ETK_ATTR_FIXED32_LIST: case ETK_ATTR_SFIXED32_LIST: return 5;
    case ETK_ATTR_STRING_LIST: case ETK_ATTR_BYTES_LIST: return 2;
    default: return 0;
    }
}

/* A list message with field 1 either one packed run (numbers) or repeated (strings/bytes).
 * Anything else (unpacked numbers, several packed runs, unknown fields) -> slow path. */
static bool read_list(etk_arena *a, rd s, etk_attr *at)
{
    int kind = at->kind;
    int ewt = list_wt(kind);
    if (kind == ETK_ATTR_STRING_LIST || kind == ETK_ATTR_BYTES_LIST) {
        uint32_t c = 0;
        rd q = s;
        while (q.p < q.end) {
            uint64_t tag;
            rd v = {NULL, NULL};
            if (!rtag(&q, &tag) || tag != 0x0a || !rlen(&q, &v))
                return false;
            c++;
        }
        at->n = c;
        if (kind == ETK_ATTR_STRING_LIST) {
            const char **sl = etk_arena_alloc_uninit(a, (c ? c : 1) * sizeof *sl);
            if (!sl)
                return false;
            for (uint32_t i = 0; i < c; i++) {
                uint64_t tag;
                rd v = {NULL, NULL};
                rtag(&s, &tag);
                rlen(&s, &v);
                if (!(sl[i] = dup_sub(a, &v)))
                    return false;
            }
            at->v.sl = sl;
        } else {
            etk_bytes *bl = etk_arena_alloc_uninit(a, (c ? c : 1) * sizeof *bl);
            if (!bl)
                return false;
            for (uint32_t i = 0; i < c; i++) {
                uint64_t tag;
                rd v = {NULL, NULL};
                rtag(&s, &tag);
                rlen(&s, &v);
                bl[i].len = (size_t)(v.end - v.p);
                if (!(bl[i].data = bl[i].len ? etk_arena_memdup(a, v.p, bl[i].len) : etk_arena_alloc(a, 1)))
                    return false;
            }
            at->v.bytesl = bl;
        }
        return true;
    }
    at->n = 0;
    at->v.i64 = NULL;
    size_t es = etk__list_elem_size(kind);
    if (s.p == s.end) {
        at->v.i64 = etk_arena_alloc(a, 8);
        return at->v.i64 != NULL;
    }
    uint64_t tag;
    rd v = {NULL, NULL};
    if (!rtag(&s, &tag) || tag != 0x0a || !rlen(&s, &v) || s.p != s.end)
        return false; /* unpacked or several runs: slow path */
    size_t c;
    if (ewt == 1 || ewt == 5) {
        size_t w = ewt == 1 ? 8 : 4;
        if ((size_t)(v.end - v.p) % w)
            return false;
        c = (size_t)(v.end - v.p) / w;
    } else {
        c = 0;
        for (const uint8_t *q = v.p; q < v.end; q++)
            if (!(*q & 0x80))
                c++;
        if (v.end[-1] & 0x80)
            return false;
    }
    if (c > UINT32_MAX)
        return false;
    void *arr = etk_arena_alloc_uninit(a, (c ? c : 1) * es);
    if (!arr)
        return false;
    for (size_t i = 0; i < c; i++) {
        uint64_t x;
        if (ewt == 1) {
            x = get_fixed(v.p, 8);
            v.p += 8;
        } else if (ewt == 5) {
            x = get_fixed(v.p, 4);
            v.p += 4;
        } else if (!rv(&v, &x)) {
            return false;
        }
        switch (kind) {
        case ETK_ATTR_DOUBLE_LIST: case ETK_ATTR_FIXED64_LIST: case ETK_ATTR_SFIXED64_LIST:
        case ETK_ATTR_INT64_LIST: case ETK_ATTR_UINT64_LIST:
            memcpy((uint8_t *)arr + 8 * i, &x, 8);
            break;
        case ETK_ATTR_SINT64_LIST: {
            int64_t y = (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
            memcpy((uint8_t *)arr + 8 * i, &y, 8);
            break;
        }
        case ETK_ATTR_FLOAT_LIST: case ETK_ATTR_FIXED32_LIST: case ETK_ATTR_SFIXED32_LIST:
        case ETK_ATTR_INT32_LIST: case ETK_ATTR_UINT32_LIST: {
            uint32_t y = (uint32_t)x;
            memcpy((uint8_t *)arr + 4 * i, &y, 4);
            break;
        }
        case ETK_ATTR_SINT32_LIST: {
            uint32_t u = (uint32_t)x;
            int32_t y = (int32_t)((u >> 1) ^ (0u - (u & 1)));
            memcpy((uint8_t *)arr + 4 * i, &y, 4);
            break;
        }
        case ETK_ATTR_BOOL_LIST:
            ((uint8_t *)arr)[i] = x != 0;
            break;
        default:
            return false;
        }
    }
    at->n = (uint32_t)c;
    at->v.i64 = arr;
    return true;
}

static int scalar_wt(int f)
{
    switch (f) {
    case 3: case 21: case 25: return 1;
    case 5: case 19: case 23: return 5;
    case 29: case 31: return 2;
    default: return (f % 2 == 0) ? 2 : 0;
    }
}

static bool read_attr(etk_trace *t, rd s, etk_attr *at)
{
    etk_arena *a = t->arena;
    memset(at, 0, sizeof *at);
    at->name = "";
    bool named = false;
    while (s.p < s.end) {
        uint64_t tag;
        if (!rtag(&s, &tag))
            return false;
        uint64_t f = tag >> 3;
        int wt = (int)(tag & 7);
        if (f == 1 || f == 2) {
            rd v = {NULL, NULL};
            if (wt != 2 || !rlen(&s, &v))
                return false;
            if (f == 1) {
                if (!(at->name = etk__intern(t, (const char *)v.p, (size_t)(v.end - v.p))))
                    return false;
                named = true;
            } else {
                at->doc = v.p == v.end ? NULL : dup_sub(a, &v);
            }
            continue;
        }
        if (f == 0)
            return false; /* field number 0 is invalid (protobuf-c rejects it) */
        if (f < 3 || f > 32) {
            if (!skip(&s, wt))
                return false;
            continue;
        }
        if (at->kind != ETK_ATTR_NONE || wt != scalar_wt((int)f))
            return false; /* a second oneof member, or another wire type: slow path */
        at->kind = (int32_t)f;
        uint64_t x;
        rd v = {NULL, NULL};
        switch (wt) {
        case 0:
            if (!rv(&s, &x))
                return false;
            break;
        case 1:
            if (s.end - s.p < 8)
                return false;
            x = get_fixed(s.p, 8);
            s.p += 8;
            break;
        case 5:
            if (s.end - s.p < 4)
                return false;
            x = get_fixed(s.p, 4);
            s.p += 4;
            break;
        default:
            if (!rlen(&s, &v))
                return false;
            x = 0;
            break;
        }
        switch (f) {
        case ETK_ATTR_DOUBLE: memcpy(&at->v.d, &x, 8); break;
        case ETK_ATTR_FLOAT: {
            uint32_t u = (uint32_t)x;
            memcpy(&at->v.f, &u, 4); /* bits kept: signalling NaNs stay signalling */
            break;
        }
        case ETK_ATTR_INT32: case ETK_ATTR_SFIXED32: at->v.i = (int32_t)(uint32_t)x; break;
        case ETK_ATTR_INT64: case ETK_ATTR_SFIXED64: at->v.i = (int64_t)x; break;
        case ETK_ATTR_UINT32: case ETK_ATTR_FIXED32: at->v.u = (uint32_t)x; break;
        case ETK_ATTR_UINT64: case ETK_ATTR_FIXED64: at->v.u = x; break;
        case ETK_ATTR_SINT32: {
            uint32_t u = (uint32_t)x;
            at->v.i = (int32_t)((u >> 1) ^ (0u - (u & 1)));
            break;
        }
        case ETK_ATTR_SINT64: at->v.i = (int64_t)(x >> 1) ^ -(int64_t)(x & 1); break;
        case ETK_ATTR_BOOL: at->v.b = x != 0; break;
        case ETK_ATTR_STRING:
            if (!(at->v.s = dup_sub(a, &v)))
                return false;
            break;
        case ETK_ATTR_BYTES:
            if ((size_t)(v.end - v.p) > UINT32_MAX)
                return false;
            at->n = (uint32_t)(v.end - v.p);
            if (!(at->v.data = at->n ? etk_arena_memdup(a, v.p, at->n) : etk_arena_alloc(a, 1))) /* empty: read no byte */
                return false;
            break;
        default:
            if (!read_list(a, v, at))
                return false;
            break;
        }
    }
    (void)named;
    return true;
}

#define FAST_MAX_ATTR 256 /* more attributes than this: protobuf-c path */

int etk__node_decode_fast(etk_trace *t, const uint8_t *msg, size_t len, etk_node *n)
{
    etk_arena *a = t->arena;
    rd r = {msg, msg + len};
    rd attrs[FAST_MAX_ATTR];
    uint32_t na = 0;
    bool seen_ctrl = false, seen_data = false, seen_in = false, seen_out = false;
    memset(n, 0, sizeof *n);
    n->name = "";
    while (r.p < r.end) {
        uint64_t tag, v;
        if (!rtag(&r, &tag))
            return 1;
        switch (tag) {
        case 0x08: if (!rv(&r, &n->id)) return 1; break;
        case 0x18: if (!rv(&r, &v)) return 1; n->type = (int32_t)(uint32_t)v; break;
        case 0x30: if (!rv(&r, &n->start_time_micros)) return 1; break;
        case 0x38: if (!rv(&r, &n->duration_micros)) return 1; break;
        case 0x12: {
            rd s = {NULL, NULL};
            if (!rlen(&r, &s))
                return 1;
            n->name = s.p == s.end ? "" : dup_sub(a, &s);
            if (!n->name)
                return 1;
            break;
        }
        case 0x22: case 0x2a: {
            rd s = {NULL, NULL};
            bool *seen = tag == 0x22 ? &seen_ctrl : &seen_data;
            if (*seen || !rlen(&r, &s))
                return 1;
            *seen = true;
            if (tag == 0x22 ? !read_deps(a, s, &n->ctrl_deps, &n->n_ctrl_deps)
                            : !read_deps(a, s, &n->data_deps, &n->n_data_deps))
                return 1;
            if (!(tag == 0x22 ? n->n_ctrl_deps : n->n_data_deps)) {
                if (tag == 0x22) n->ctrl_deps = NULL;
                else n->data_deps = NULL;
            }
            break;
        }
        case 0x42: case 0x4a: {
            rd s = {NULL, NULL};
            bool *seen = tag == 0x42 ? &seen_in : &seen_out;
            if (*seen || !rlen(&r, &s))
                return 1;
            *seen = true;
            if (!read_io(a, s, tag == 0x42 ? &n->inputs : &n->outputs))
                return 1;
            break;
        }
        case 0x52:
            if (na == FAST_MAX_ATTR || !rlen(&r, &attrs[na]))
                return 1;
            na++;
            break;
        default: {
            uint64_t f = tag >> 3;
            if (f >= 1 && f <= 10)
                return 1; /* known field with another wire type (e.g. unpacked deps) */
            if (f == 0 || !skip(&r, (int)(tag & 7)))
                return 1;
            break;
        }
        }
    }
    if (na) {
        etk_attr *at = etk_arena_alloc_uninit(a, na * sizeof *at);
        if (!at)
            return 1;
        for (uint32_t i = 0; i < na; i++)
            if (!read_attr(t, attrs[i], &at[i]))
                return 1;
        n->attr = at;
        n->n_attr = na;
    }
    return 0;
}
