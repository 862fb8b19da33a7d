/* reader.c — streaming Chakra trace reader: varint-framed protobuf messages (GlobalMetadata,
 * then Node until EOF), plain or gzip, decoded with protobuf-c into a scratch arena and copied
 * into the compact arena-backed model of et.h. Unknown fields are skipped and packed/unpacked
 * repeated fields both accepted (protobuf-c does both). Every failure names the file, the byte
 * offset and the node index; a length prefix is bounded by the file size and a sane limit, so
 * corrupt input never causes an unbounded allocation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "et_def.pb-c.h"
#include "trace_priv.h"

#define DEFAULT_MAX_MSG (64u << 20)
/* Bounds on what a trace may grow to (issue #18: a 510 KB gzip of empty frames grew to 7.5 GB
 * before failing). deflate expands at most 1032:1, so more decompressed bytes than
 * GZ_MAX_RATIO x the compressed size (+ 1 MiB) is not a gzip stream a writer produced; a real
 * Chakra node is 20 to 300 bytes (id, name, type, attributes), so fewer than MIN_NODE_BYTES per
 * node on average over a million nodes is not a trace either (each node costs ~88 bytes of
 * memory, whatever its size on disk). */
#define GZ_MAX_RATIO 1100u
#define MAX_TRACE_BYTES ((uint64_t)64 << 30)
#define MAX_TRACE_NODES ((uint64_t)1 << 30)
#define MIN_NODE_BYTES 8u
#define NODE_CHECK_EVERY ((size_t)1 << 20)

/* ---- protobuf-c allocator over a scratch arena, reset per message ---- */
static void *scratch_alloc(void *data, size_t n) { return etk_arena_alloc_uninit(data, n); }
static void scratch_free(void *data, void *p)
{
    (void)data;
    (void)p;
}

/* ---- input source: a memory buffer, or a (possibly gzip) file read in chunks ---- */
typedef struct src {
    const char *name;
    gzFile gz;            /* NULL for memory input */
    uint8_t *buf;         /* file input: owned buffer */
    const uint8_t *data;  /* window start */
    size_t len;           /* bytes in window */
    size_t pos;           /* read position in window */
    size_t cap;
    uint64_t base;        /* file offset of data[0] */
    bool eof;
    uint64_t file_size;   /* plain files: known size; 0 if unknown */
    bool gz_direct;
    uint64_t gz_size;     /* gzip files: the compressed size (for the expansion bound) */
} src;

/* Make at least `need` bytes available from pos (or all that remain). 0 ok, <0 I/O error. */
static int src_fill(src *s, size_t need, etk_error *err)
{
    if (!s->gz || s->len - s->pos >= need || s->eof)
        return 0;
    /* compact */
    if (s->pos) {
        memmove(s->buf, s->buf + s->pos, s->len - s->pos);
        s->base += s->pos;
        s->len -= s->pos;
        s->pos = 0;
    }
    if (need > s->cap) {
        size_t nc = s->cap;
        while (nc < need)
            nc *= 2;
        uint8_t *nb = realloc(s->buf, nc);
        if (!nb)
            return etk_err(err, ETK_ENOMEM, "%s: out of memory (buffer of %zu bytes)", s->name, nc);
        s->buf = nb;
        s->cap = nc;
    }
    s->data = s->buf;
    while (s->len < need && !s->eof) {
        size_t want = s->cap - s->len;
        if (want > (1u << 30))
            want = 1u << 30;
        int r = gzread(s->gz, s->buf + s->len, (unsigned)want);
        if (r < 0) {
            int zerr;
            const char *m = gzerror(s->gz, &zerr);
            return etk_err(err, ETK_EFORMAT, "%s: byte offset %llu: %s (%s)", s->name,
                           (unsigned long long)(s->base + s->len),
                           zerr == Z_ERRNO ? "read error" : "corrupt gzip data",
                           zerr == Z_ERRNO ? strerror(errno) : m);
        }
        if (r == 0) {
            int zerr;
            gzerror(s->gz, &zerr);
            if (zerr == Z_BUF_ERROR) /* gzip stream ended early */
                return etk_err(err, ETK_EFORMAT,
                               "%s: truncated gzip stream after %llu decompressed bytes", s->name,
                               (unsigned long long)(s->base + s->len));
            s->eof = true;
        }
        s->len += (size_t)r;
        uint64_t got = s->base + s->len;
        uint64_t lim = s->gz_size ? s->gz_size * GZ_MAX_RATIO + (1u << 20) : MAX_TRACE_BYTES;
        if (lim > MAX_TRACE_BYTES)
            lim = MAX_TRACE_BYTES;
        if (got > lim && s->gz_size)
            return etk_err(err, ETK_EFORMAT,
                           "%s: more than %llu bytes decompressed from a %llu-byte gzip file (at most %u times "
                           "the compressed size + 1 MiB, and %llu GiB): a gzip bomb or not a trace",
                           s->name, (unsigned long long)lim, (unsigned long long)s->gz_size, GZ_MAX_RATIO,
                           (unsigned long long)(MAX_TRACE_BYTES >> 30));
        if (got > lim)
            return etk_err(err, ETK_EFORMAT, "%s: more than %llu bytes: a trace is at most %llu GiB", s->name,
                           (unsigned long long)lim, (unsigned long long)(MAX_TRACE_BYTES >> 30));
    }
    return 0;
}

/* ---- diagnosis of a message protobuf-c rejected: find the first bad field ---- */
static bool read_varint(const uint8_t *p, size_t n, size_t *o, uint64_t *v)
{
    uint64_t r = 0;
    for (int sh = 0; sh < 70 && *o < n; sh += 7) {
        uint8_t b = p[(*o)++];
        if (sh == 63 && b > 1)
            return false;
        r |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* expected wire type per field number; -1 unknown field (any type ok); -2 varint or packed */
static int node_wire(uint64_t f)
{
    switch (f) {
    case 1: case 3: case 6: case 7: return 0;
    case 4: case 5: return -2;
    case 2: case 8: case 9: case 10: return 2;
    default: return -1;
    }
}
static int meta_wire(uint64_t f) { return (f == 1 || f == 2) ? 2 : -1; }
static int attr_wire(uint64_t f)
{
    if (f == 1 || f == 2) return 2;
    if (f < 3 || f > 32) return -1;
    if (f % 2 == 0) return 2;                 /* lists are messages */
    switch (f) {
    case 3: case 21: case 25: return 1;       /* double, fixed64, sfixed64 */
    case 5: case 19: case 23: return 5;       /* float, fixed32, sfixed32 */
    case 29: case 31: return 2;               /* string, bytes */
    default: return 0;
    }
}
static const char *node_field_name(uint64_t f)
{
    static const char *const names[] = {"?", "id", "name", "type", "ctrl_deps", "data_deps",
                                        "start_time_micros", "duration_micros", "inputs",
                                        "outputs", "attr"};
    return f <= 10 ? names[f] : "unknown";
}

/* Walk fields; on the first problem write a description into why and return false. */
static bool walk(const uint8_t *p, size_t n, int (*wire)(uint64_t), const char *what,
                 uint64_t base, char *why, size_t whysz, int depth)
{
    size_t o = 0;
    while (o < n) {
        size_t at = o;
        uint64_t tag, v;
        if (!read_varint(p, n, &o, &tag)) {
            snprintf(why, whysz, "%s: truncated or invalid field tag at byte offset %llu", what,
                     (unsigned long long)(base + at));
            return false;
        }
        uint64_t f = tag >> 3;
        int wt = (int)(tag & 7);
        if (f == 0 || wt == 3 || wt == 4 || wt > 5) {
            snprintf(why, whysz, "%s: invalid field tag 0x%llx (field %llu, wire type %d) at byte offset %llu",
                     what, (unsigned long long)tag, (unsigned long long)f, wt,
                     (unsigned long long)(base + at));
            return false;
        }
        int exp = wire(f);
        if (exp >= 0 && exp != wt) {
            snprintf(why, whysz, "%s: field %llu%s%s%s has wire type %d, expected %d, at byte offset %llu",
                     what, (unsigned long long)f, wire == node_wire ? " (" : "",
                     wire == node_wire ? node_field_name(f) : "", wire == node_wire ? ")" : "", wt,
                     exp, (unsigned long long)(base + at));
            return false;
        }
        if (exp == -2 && wt != 0 && wt != 2) {
            snprintf(why, whysz, "%s: field %llu (%s) has wire type %d, expected varint or packed, at byte offset %llu",
                     what, (unsigned long long)f, node_field_name(f), wt,
                     (unsigned long long)(base + at));
            return false;
        }
        size_t len = 0;
        switch (wt) {
        case 0:
            if (!read_varint(p, n, &o, &v)) {
                snprintf(why, whysz, "%s: truncated or invalid varint in field %llu at byte offset %llu",
                         what, (unsigned long long)f, (unsigned long long)(base + at));
                return false;
            }
            continue;
        case 1: len = 8; break;
        case 5: len = 4; break;
        case 2:
            if (!read_varint(p, n, &o, &v)) {
                snprintf(why, whysz, "%s: truncated length of field %llu at byte offset %llu", what,
                         (unsigned long long)f, (unsigned long long)(base + at));
                return false;
            }
            if (v > n - o) {
                snprintf(why, whysz, "%s: field %llu at byte offset %llu claims %llu bytes but only %zu remain in the message",
                         what, (unsigned long long)f, (unsigned long long)(base + at),
                         (unsigned long long)v, n - o);
                return false;
            }
            len = (size_t)v;
            if (depth == 0 && wire == node_wire && f == 10 &&
                !walk(p + o, len, attr_wire, "attribute", base + o, why, whysz, 1))
                return false;
            if (depth == 0 && wire == meta_wire && f == 2 &&
                !walk(p + o, len, attr_wire, "metadata attribute", base + o, why, whysz, 1))
                return false;
            break;
        }
        if (len > n - o) {
            snprintf(why, whysz, "%s: field %llu at byte offset %llu is truncated", what,
                     (unsigned long long)f, (unsigned long long)(base + at));
            return false;
        }
        o += len;
    }
    return true;
}

/* ---- conversion protobuf-c -> etk model ---- */
static const char *copy_str(etk_arena *a, const char *s)
{
    return (s && *s) ? etk_arena_strdup(a, s) : NULL;
}

static const etk_io *conv_io(etk_arena *a, const ChakraProtoMsg__IOInfo *io)
{
    if (!io)
        return NULL;
    etk_io *c = etk_arena_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    c->values = copy_str(a, io->values);
    c->shapes = copy_str(a, io->shapes);
    c->types = copy_str(a, io->types);
    return c;
}

/* All list messages share the layout {base, size_t n_values, T *values}. */
typedef struct anylist {
    ProtobufCMessage base;
    size_t n_values;
    void *values;
} anylist;

static int conv_attr(etk_trace *t, etk_attr *d, const ChakraProtoMsg__AttributeProto *s)
{
    etk_arena *a = t->arena;
    const char *nm = s->name ? s->name : "";
    d->name = etk__intern(t, nm, strlen(nm));
    if (!d->name)
        return ETK_ENOMEM;
    d->doc = copy_str(a, s->doc_string);
    d->kind = (int32_t)s->value_case;
    switch (s->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE__NOT_SET: d->kind = ETK_ATTR_NONE; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL: d->v.d = s->double_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL: d->v.f = s->float_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: d->v.i = s->int32_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: d->v.i = s->int64_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: d->v.u = s->uint32_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: d->v.u = s->uint64_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: d->v.i = s->sint32_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: d->v.i = s->sint64_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: d->v.u = s->fixed32_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL: d->v.u = s->fixed64_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: d->v.i = s->sfixed32_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: d->v.i = s->sfixed64_val; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: d->v.b = s->bool_val != 0; break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL:
        d->v.s = etk_arena_strdup(a, s->string_val ? s->string_val : "");
        if (!d->v.s)
            return ETK_ENOMEM;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BYTES_VAL:
        d->n = (uint32_t)s->bytes_val.len; /* messages are bounded well below 4 GiB */
        /* empty: a non-NULL zeroed byte (protobuf-c leaves data NULL: nothing to copy) */
        d->v.data = s->bytes_val.len ? etk_arena_memdup(a, s->bytes_val.data, s->bytes_val.len) : etk_arena_alloc(a, 1);
        if (!d->v.data)
            return ETK_ENOMEM;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST: {
        const ChakraProtoMsg__StringList *l = s->string_list;
        d->n = (uint32_t)l->n_values;
        const char **sl = etk_arena_alloc(a, (l->n_values ? l->n_values : 1) * sizeof *sl);
        if (!sl)
            return ETK_ENOMEM;
        for (size_t i = 0; i < l->n_values; i++)
            if (!(sl[i] = etk_arena_strdup(a, l->values[i] ? l->values[i] : "")))
                return ETK_ENOMEM;
        d->v.sl = sl;
        break;
    }
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BYTES_LIST: {
        const ChakraProtoMsg__BytesList *l = s->bytes_list;
        d->n = (uint32_t)l->n_values;
        etk_bytes *bl = etk_arena_alloc(a, (l->n_values ? l->n_values : 1) * sizeof *bl);
        if (!bl)
            return ETK_ENOMEM;
        for (size_t i = 0; i < l->n_values; i++) {
            bl[i].len = l->values[i].len;
            if (!(bl[i].data = etk_arena_memdup(a, l->values[i].data, bl[i].len)))
                return ETK_ENOMEM;
        }
        d->v.bytesl = bl;
        break;
    }
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST: {
        const ChakraProtoMsg__BoolList *l = s->bool_list;
        d->n = (uint32_t)l->n_values;
        uint8_t *bl = etk_arena_alloc(a, l->n_values ? l->n_values : 1);
        if (!bl)
            return ETK_ENOMEM;
        for (size_t i = 0; i < l->n_values; i++)
            bl[i] = l->values[i] ? 1 : 0;
        d->v.bl = bl;
        break;
    }
    default: {
        /* numeric lists: protobuf-c stores them as plain C arrays of the element type */
        const anylist *l = NULL;
        switch (s->value_case) {
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_LIST: l = (const anylist *)s->double_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_LIST: l = (const anylist *)s->float_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_LIST: l = (const anylist *)s->int32_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST: l = (const anylist *)s->int64_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_LIST: l = (const anylist *)s->uint32_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_LIST: l = (const anylist *)s->uint64_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_LIST: l = (const anylist *)s->sint32_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_LIST: l = (const anylist *)s->sint64_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_LIST: l = (const anylist *)s->fixed32_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_LIST: l = (const anylist *)s->fixed64_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_LIST: l = (const anylist *)s->sfixed32_list; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_LIST: l = (const anylist *)s->sfixed64_list; break;
        default: d->kind = ETK_ATTR_NONE; return 0;
        }
        size_t es = etk__list_elem_size(d->kind);
        d->n = (uint32_t)l->n_values;
        void *p = etk_arena_memdup(a, l->values, l->n_values * es);
        if (!p)
            return ETK_ENOMEM;
        d->v.i64 = p;
        break;
    }
    }
    return 0;
}

/* Lenient kinds: record a warning when a well-known attribute has another kind. */
static void check_kind(etk_trace *t, const etk_attr *a, size_t node_index, uint64_t id)
{
    int want = etk_attr_expected_kind(a->name);
    if (want != ETK_ATTR_NONE && a->kind != want)
        etk__trace_warn(t, "%s: node index %zu (id %llu): attribute '%s' is %s, the convention is %s",
                        t->path, node_index, (unsigned long long)id, a->name,
                        etk_attr_kind_name(a->kind), etk_attr_kind_name(want));
}

static int conv_attrs(etk_trace *t, ChakraProtoMsg__AttributeProto **in, size_t n,
                      const etk_attr **out, uint32_t *n_out, size_t node_index, uint64_t id,
                      bool is_node)
{
    *n_out = (uint32_t)n;
    if (!n) {
        *out = NULL;
        return 0;
    }
    etk_attr *at = etk_arena_alloc(t->arena, n * sizeof *at);
    if (!at)
        return ETK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (conv_attr(t, &at[i], in[i]) != 0)
            return ETK_ENOMEM;
        if (is_node)
            check_kind(t, &at[i], node_index, id);
    }
    *out = at;
    return 0;
}

/* The reference path: protobuf-c decodes into the scratch arena, then the message is copied
 * into the trace. Used for what the direct decoder does not handle, and for diagnosis. */
static int decode_pbc(etk_trace *t, src *s, ProtobufCAllocator *alloc, const uint8_t *msg,
                      uint64_t L, uint64_t at, uint64_t hdr, size_t ni, etk_error *err)
{
    etk_arena_reset(alloc->allocator_data);
    ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(alloc, (size_t)L, msg);
    if (!m) {
        char why[400] = "malformed message (a nested message, string or varint is invalid)";
        walk(msg, (size_t)L, node_wire, "node", at + hdr, why, sizeof why, 0);
        return etk_err(err, ETK_EFORMAT, "%s: byte offset %llu: node index %zu (%llu bytes) is not valid protobuf: %s",
                       s->name, (unsigned long long)at, ni, (unsigned long long)L, why);
    }
    etk_node *n = etk__trace_push(t);
    if (!n)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory at node index %zu", s->name, ni);
    t->n_reference_decoded++;
    etk_arena *a = t->arena;
    n->id = m->id;
    n->name = m->name && *m->name ? etk_arena_strdup(a, m->name) : "";
    n->type = (int32_t)m->type;
    n->n_ctrl_deps = (uint32_t)m->n_ctrl_deps;
    n->n_data_deps = (uint32_t)m->n_data_deps;
    n->ctrl_deps = m->n_ctrl_deps ? etk_arena_memdup(a, m->ctrl_deps, m->n_ctrl_deps * 8) : NULL;
    n->data_deps = m->n_data_deps ? etk_arena_memdup(a, m->data_deps, m->n_data_deps * 8) : NULL;
    n->start_time_micros = m->start_time_micros;
    n->duration_micros = m->duration_micros;
    n->inputs = conv_io(a, m->inputs);
    n->outputs = conv_io(a, m->outputs);
    if (!n->name || (m->n_ctrl_deps && !n->ctrl_deps) || (m->n_data_deps && !n->data_deps) ||
        (m->inputs && !n->inputs) || (m->outputs && !n->outputs) ||
        conv_attrs(t, m->attr, m->n_attr, &n->attr, &n->n_attr, ni, n->id, true))
        return etk_err(err, ETK_ENOMEM, "%s: out of memory at node index %zu", s->name, ni);
    return 0;
}

static const char *where_str(char *buf, size_t n, size_t msg_index)
{
    if (msg_index)
        snprintf(buf, n, "node index %zu", msg_index - 1);
    else
        snprintf(buf, n, "GlobalMetadata");
    return buf;
}

static int read_stream(src *s, const etk_read_opts *opts, etk_trace *t, etk_error *err)
{
    uint64_t max_msg = (opts && opts->max_message_bytes) ? opts->max_message_bytes : DEFAULT_MAX_MSG;
    etk_arena *scratch = etk_arena_new(16u << 10); /* grows to fit the largest message */
    if (!scratch)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", s->name);
    ProtobufCAllocator alloc = {scratch_alloc, scratch_free, scratch};
    int rc = 0;
    size_t msg_index = 0;
    for (;;) {
        if ((rc = src_fill(s, 10, err)) != 0)
            break;
        if (s->pos == s->len) /* clean end of file */
            break;
        if (msg_index > 0 && opts && opts->max_nodes && t->n_nodes >= opts->max_nodes) {
            t->partial = true; /* the caller wants the head only: the rest stays unread */
            break;
        }
        uint64_t at = s->base + s->pos;
        size_t o = s->pos;
        uint64_t L;
        if (!read_varint(s->data, s->len, &o, &L)) {
            bool trunc = s->len - s->pos < 10;
            if (msg_index == 0)
                rc = etk_err(err, ETK_EFORMAT, "%s: byte offset %llu: %s length prefix of the GlobalMetadata message",
                             s->name, (unsigned long long)at, trunc ? "truncated" : "invalid");
            else
                rc = etk_err(err, ETK_EFORMAT, "%s: byte offset %llu: %s length prefix of node index %zu (after %zu complete nodes)",
                             s->name, (unsigned long long)at, trunc ? "truncated" : "invalid",
                             msg_index - 1, msg_index - 1);
            break;
        }
        uint64_t hdr = o - s->pos;
        char where[64]; /* filled by WHERE() only when an error needs it */
#define WHERE() where_str(where, sizeof where, msg_index)
        if (L > max_msg) {
            rc = etk_err(err, ETK_EFORMAT,
                         "%s: byte offset %llu: %s: length prefix %llu exceeds the limit of %llu bytes per message (corrupt or not a Chakra trace)",
                         s->name, (unsigned long long)at, WHERE(), (unsigned long long)L,
                         (unsigned long long)max_msg);
            break;
        }
        if (s->file_size && at + hdr + L > s->file_size) {
            rc = etk_err(err, ETK_EFORMAT,
                         "%s: byte offset %llu: %s: length prefix %llu exceeds the %llu bytes left in the file (truncated or not a Chakra trace)",
                         s->name, (unsigned long long)at, WHERE(), (unsigned long long)L,
                         (unsigned long long)(s->file_size - at - hdr));
            break;
        }
        if ((rc = src_fill(s, (size_t)(hdr + L), err)) != 0)
            break;
        if (s->len - s->pos < hdr + L) {
            rc = etk_err(err, ETK_EFORMAT,
                         "%s: byte offset %llu: %s is truncated: %llu bytes announced, %zu present",
                         s->name, (unsigned long long)at, WHERE(), (unsigned long long)L,
                         (size_t)(s->len - s->pos - hdr));
            break;
        }
        const uint8_t *msg = s->data + s->pos + hdr;
        if (msg_index == 0) {
            etk_arena_reset(scratch);
            ChakraProtoMsg__GlobalMetadata *m =
                chakra_proto_msg__global_metadata__unpack(&alloc, (size_t)L, msg);
            if (!m) {
                char why[400] = "malformed message";
                walk(msg, (size_t)L, meta_wire, "GlobalMetadata", at + hdr, why, sizeof why, 0);
                rc = etk_err(err, ETK_EFORMAT, "%s: byte offset %llu: GlobalMetadata (message 0, %llu bytes) is not valid protobuf: %s",
                             s->name, (unsigned long long)at, (unsigned long long)L, why);
                break;
            }
            t->has_metadata = true;
            t->version = copy_str(t->arena, m->version);
            if (conv_attrs(t, m->attr, m->n_attr, &t->meta_attr, &t->n_meta_attr, 0, 0, false)) {
                rc = etk_err(err, ETK_ENOMEM, "%s: out of memory", s->name);
                break;
            }
        } else {
            size_t ni = msg_index - 1;
            etk_node tmp;
            if (!(opts && opts->reference_decoder) && etk__node_decode_fast(t, msg, (size_t)L, &tmp) == 0) {
                etk_node *n = etk__trace_push(t);
                if (!n) {
                    rc = etk_err(err, ETK_ENOMEM, "%s: out of memory at node index %zu", s->name, ni);
                    break;
                }
                *n = tmp;
                for (uint32_t i = 0; i < n->n_attr; i++)
                    check_kind(t, &n->attr[i], ni, n->id);
            } else if ((rc = decode_pbc(t, s, &alloc, msg, L, at, hdr, ni, err)) != 0) {
                break;
            }
        }
        s->pos += (size_t)(hdr + L);
        msg_index++;
        if (msg_index % NODE_CHECK_EVERY == 0) {
            uint64_t used = s->base + s->pos;
            if (used < (uint64_t)MIN_NODE_BYTES * (msg_index - 1) || msg_index > MAX_TRACE_NODES) {
                rc = etk_err(err, ETK_EFORMAT,
                             "%s: %zu nodes in %llu bytes (%.1f bytes per node; a Chakra node takes at least %u, "
                             "and a trace at most %llu nodes): not a trace (empty or padding messages)",
                             s->name, msg_index - 1, (unsigned long long)used,
                             (double)used / (double)(msg_index - 1), MIN_NODE_BYTES,
                             (unsigned long long)MAX_TRACE_NODES);
                break;
            }
        }
    }
    t->file_bytes = s->base + s->pos;
    etk_arena_free(scratch);
    if (rc == 0 && msg_index == 0)
        rc = etk_err(err, ETK_EFORMAT,
                     "%s: empty file: a Chakra trace starts with a GlobalMetadata message", s->name);
    return rc;
}

static int finish(etk_trace *t, int rc, const etk_read_opts *opts, etk_trace **out)
{
    if (rc) {
        etk_trace_free(t);
        *out = NULL;
        return rc;
    }
    if (t->n_warnings && !(opts && opts->quiet)) {
        for (size_t i = 0; i < t->n_warnings && i < 3; i++)
            fprintf(stderr, "warning: %s\n", t->warnings[i]);
        if (t->n_warnings > 3)
            fprintf(stderr, "warning: %s: %zu more attribute-kind warnings\n", t->path,
                    t->n_warnings - 3);
    }
    *out = t;
    return 0;
}

int etk_trace_read_mem(const void *data, size_t len, const char *name, const etk_read_opts *opts,
                       etk_trace **out, etk_error *err)
{
    *out = NULL;
    etk_trace *t = etk_trace_new(NULL);
    if (!t)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", name);
    t->path = etk_arena_strdup(t->arena, name ? name : "<memory>");
    src s = {.name = t->path, .data = data, .len = len, .file_size = len};
    return finish(t, read_stream(&s, opts, t, err), opts, out);
}

int etk_trace_read(const char *path, const etk_read_opts *opts, etk_trace **out, etk_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return etk_err(err, ETK_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return etk_err(err, ETK_EIO, "%s: %s, expected a .et trace file", path, etk_file_kind(st.st_mode));
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return etk_err(err, ETK_EIO, "%s: cannot open: %s", path, strerror(errno));
    gzbuffer(gz, 128u << 10);
    src s = {.name = path, .gz = gz, .cap = 256u << 10};
    s.buf = malloc(s.cap);
    if (!s.buf) {
        gzclose(gz);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    s.data = s.buf;
    int rc = src_fill(&s, 2, err);
    etk_trace *t = NULL;
    if (rc == 0) {
        s.gz_direct = gzdirect(gz) != 0;
        if (s.gz_direct)
            s.file_size = (uint64_t)st.st_size;
        else
            s.gz_size = (uint64_t)st.st_size;
        /* gzip: assume ~4x compression for the size hint */
        t = etk__trace_new_hint(s.gz_direct ? (uint64_t)st.st_size : (uint64_t)st.st_size * 4);
        if (!t || !(t->path = etk_arena_strdup(t->arena, path)))
            rc = etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    if (rc == 0) {
        t->gzipped = !s.gz_direct;
        s.name = t->path;
        rc = read_stream(&s, opts, t, err);
    }
    free(s.buf);
    gzclose(gz);
    if (rc && rc != ETK_ENOMEM)
        etk_trace_json_hint(path, err); /* a JSON trace: say which and how to convert it */
    if (!t)
        return rc;
    return finish(t, rc, opts, out);
}
