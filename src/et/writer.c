/* writer.c — streaming Chakra trace writer: each node is converted to protobuf-c structs in a
 * scratch arena and packed by protobuf-c, which emits canonical proto3 (fields in number order,
 * zero scalars omitted, repeated numbers packed, the set oneof member always written). Output
 * goes to a temporary file that is fsynced and renamed on close, so an interrupted run never
 * leaves a half-written trace. Round trip of every canonical trace is byte-exact. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "et_def.pb-c.h"
#include "trace_priv.h"

struct etk_writer {
    FILE *f;
    char *tmp;       /* NULL for stdout */
    char *path;
    etk_arena *scratch;
    ProtobufCAllocator alloc;
    uint8_t *buf;
    size_t cap;
    uint64_t bytes;
    size_t n_nodes;
    char *iobuf;
};

static char *xstr(const char *s) { return (char *)(s ? s : ""); }

/* list message of a numeric kind: {base, n_values, values} — all share that layout */
typedef struct anylist {
    ProtobufCMessage base;
    size_t n_values;
    void *values;
} anylist;

static const ProtobufCMessageDescriptor *list_desc(int kind)
{
    switch (kind) {
    case ETK_ATTR_DOUBLE_LIST: return &chakra_proto_msg__double_list__descriptor;
    case ETK_ATTR_FLOAT_LIST: return &chakra_proto_msg__float_list__descriptor;
    case ETK_ATTR_INT32_LIST: return &chakra_proto_msg__int32_list__descriptor;
    case ETK_ATTR_INT64_LIST: return &chakra_proto_msg__int64_list__descriptor;
    case ETK_ATTR_UINT32_LIST: return &chakra_proto_msg__uint32_list__descriptor;
    case ETK_ATTR_UINT64_LIST: return &chakra_proto_msg__uint64_list__descriptor;
    case ETK_ATTR_SINT32_LIST: return &chakra_proto_msg__sint32_list__descriptor;
    case ETK_ATTR_SINT64_LIST: return &chakra_proto_msg__sint64_list__descriptor;
    case ETK_ATTR_FIXED32_LIST: return &chakra_proto_msg__fixed32_list__descriptor;
    case ETK_ATTR_FIXED64_LIST: return &chakra_proto_msg__fixed64_list__descriptor;
    case ETK_ATTR_SFIXED32_LIST: return &chakra_proto_msg__sfixed32_list__descriptor;
    case ETK_ATTR_SFIXED64_LIST: return &chakra_proto_msg__sfixed64_list__descriptor;
    case ETK_ATTR_BOOL_LIST: return &chakra_proto_msg__bool_list__descriptor;
    case ETK_ATTR_STRING_LIST: return &chakra_proto_msg__string_list__descriptor;
    case ETK_ATTR_BYTES_LIST: return &chakra_proto_msg__bytes_list__descriptor;
    default: return NULL;
    }
}

static int to_pb_attr(etk_arena *a, ChakraProtoMsg__AttributeProto *d, const etk_attr *s)
{
    chakra_proto_msg__attribute_proto__init(d);
    d->name = xstr(s->name);
    d->doc_string = xstr(s->doc);
    d->value_case = (ChakraProtoMsg__AttributeProto__ValueCase)s->kind;
    switch (s->kind) {
    case ETK_ATTR_NONE: d->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE__NOT_SET; break;
    case ETK_ATTR_DOUBLE: d->double_val = s->v.d; break;
    case ETK_ATTR_FLOAT: d->float_val = s->v.f; break;
    case ETK_ATTR_INT32: d->int32_val = (int32_t)s->v.i; break;
    case ETK_ATTR_INT64: d->int64_val = s->v.i; break;
    case ETK_ATTR_UINT32: d->uint32_val = (uint32_t)s->v.u; break;
    case ETK_ATTR_UINT64: d->uint64_val = s->v.u; break;
    case ETK_ATTR_SINT32: d->sint32_val = (int32_t)s->v.i; break;
    case ETK_ATTR_SINT64: d->sint64_val = s->v.i; break;
    case ETK_ATTR_FIXED32: d->fixed32_val = (uint32_t)s->v.u; break;
    case ETK_ATTR_FIXED64: d->fixed64_val = s->v.u; break;
    case ETK_ATTR_SFIXED32: d->sfixed32_val = (int32_t)s->v.i; break;
    case ETK_ATTR_SFIXED64: d->sfixed64_val = s->v.i; break;
    case ETK_ATTR_BOOL: d->bool_val = s->v.b; break;
    case ETK_ATTR_STRING: d->string_val = xstr(s->v.s); break;
    case ETK_ATTR_BYTES:
        d->bytes_val.len = s->v.bytes.len;
        d->bytes_val.data = (uint8_t *)s->v.bytes.data;
        break;
    default: {
        const ProtobufCMessageDescriptor *desc = list_desc(s->kind);
        if (!desc)
            return ETK_EINVAL;
        anylist *l = etk_arena_alloc(a, desc->sizeof_message);
        if (!l)
            return ETK_ENOMEM;
        protobuf_c_message_init(desc, l);
        l->n_values = s->n;
        if (s->kind == ETK_ATTR_BOOL_LIST) {
            protobuf_c_boolean *b = etk_arena_alloc(a, (s->n ? s->n : 1) * sizeof *b);
            if (!b)
                return ETK_ENOMEM;
            for (uint32_t i = 0; i < s->n; i++)
                b[i] = s->v.bl[i] != 0;
            l->values = b;
        } else if (s->kind == ETK_ATTR_BYTES_LIST) {
            ProtobufCBinaryData *b = etk_arena_alloc(a, (s->n ? s->n : 1) * sizeof *b);
            if (!b)
                return ETK_ENOMEM;
            for (uint32_t i = 0; i < s->n; i++) {
                b[i].len = s->v.bytesl[i].len;
                b[i].data = (uint8_t *)s->v.bytesl[i].data;
            }
            l->values = b;
        } else {
            l->values = (void *)s->v.i64; /* string list: char ** ; numbers: plain arrays */
        }
        /* every list field of the oneof sits at the same union offset */
        d->double_list = (ChakraProtoMsg__DoubleList *)l;
        break;
    }
    }
    return 0;
}

static int to_pb_attrs(etk_arena *a, const etk_attr *in, size_t n,
                       ChakraProtoMsg__AttributeProto ***out)
{
    *out = NULL;
    if (!n)
        return 0;
    ChakraProtoMsg__AttributeProto *arr = etk_arena_alloc(a, n * sizeof *arr);
    ChakraProtoMsg__AttributeProto **ptrs = etk_arena_alloc(a, n * sizeof *ptrs);
    if (!arr || !ptrs)
        return ETK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int rc = to_pb_attr(a, &arr[i], &in[i]);
        if (rc)
            return rc;
        ptrs[i] = &arr[i];
    }
    *out = ptrs;
    return 0;
}

static ChakraProtoMsg__IOInfo *to_pb_io(etk_arena *a, const etk_io *io)
{
    if (!io)
        return NULL;
    ChakraProtoMsg__IOInfo *d = etk_arena_alloc(a, sizeof *d);
    if (!d)
        return NULL;
    chakra_proto_msg__ioinfo__init(d);
    d->values = xstr(io->values);
    d->shapes = xstr(io->shapes);
    d->types = xstr(io->types);
    return d;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        p[n++] = b | (v ? 0x80 : 0);
    } while (v);
    return n;
}

static int emit(etk_writer *w, const ProtobufCMessage *m, etk_error *err)
{
    size_t sz = protobuf_c_message_get_packed_size(m);
    if (sz + 10 > w->cap) {
        size_t nc = w->cap ? w->cap : 4096;
        while (nc < sz + 10)
            nc *= 2;
        uint8_t *nb = realloc(w->buf, nc);
        if (!nb)
            return etk_err(err, ETK_ENOMEM, "%s: out of memory encoding a %zu-byte message",
                           w->path, sz);
        w->buf = nb;
        w->cap = nc;
    }
    size_t h = put_varint(w->buf, sz);
    protobuf_c_message_pack(m, w->buf + h);
    if (fwrite(w->buf, 1, h + sz, w->f) != h + sz)
        return etk_err(err, ETK_EIO, "%s: write failed: %s", w->path, strerror(errno));
    w->bytes += h + sz;
    return 0;
}

static void writer_free(etk_writer *w)
{
    etk_arena_free(w->scratch);
    free(w->buf);
    free(w->path);
    free(w->iobuf);
    free(w);
}

int etk_writer_open(const char *path, const char *version, const etk_attr *meta_attr,
                    size_t n_meta_attr, etk_writer **out, etk_error *err)
{
    *out = NULL;
    etk_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->scratch = etk_arena_new(64u << 10))) {
        if (w)
            writer_free(w);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    if (!strcmp(path, "-")) {
        w->f = stdout;
    } else {
        w->f = etk_file_begin(path, &w->tmp, err);
        if (!w->f) {
            writer_free(w);
            return err ? err->code : ETK_EIO;
        }
        w->iobuf = malloc(1u << 20);
        if (w->iobuf)
            setvbuf(w->f, w->iobuf, _IOFBF, 1u << 20);
    }
    ChakraProtoMsg__GlobalMetadata m;
    chakra_proto_msg__global_metadata__init(&m);
    m.version = xstr(version);
    int rc = to_pb_attrs(w->scratch, meta_attr, n_meta_attr, &m.attr);
    m.n_attr = n_meta_attr;
    if (rc)
        rc = etk_err(err, rc, "%s: GlobalMetadata: an attribute has an invalid kind", path);
    else
        rc = emit(w, &m.base, err);
    etk_arena_reset(w->scratch);
    if (rc) {
        etk_writer_abort(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* The reference encoding through protobuf-c structs (tests compare the direct encoder in
 * wire.c with it). Returns a malloc'ed message without length prefix. */
int etk__node_pack_pbc(const etk_node *n, uint8_t **out, size_t *len)
{
    etk_arena *a = etk_arena_new(0);
    if (!a)
        return ETK_ENOMEM;
    ChakraProtoMsg__Node m;
    chakra_proto_msg__node__init(&m);
    m.id = n->id;
    m.name = xstr(n->name);
    m.type = (ChakraProtoMsg__NodeType)n->type;
    m.n_ctrl_deps = n->n_ctrl_deps;
    m.ctrl_deps = (uint64_t *)n->ctrl_deps;
    m.n_data_deps = n->n_data_deps;
    m.data_deps = (uint64_t *)n->data_deps;
    m.start_time_micros = n->start_time_micros;
    m.duration_micros = n->duration_micros;
    m.inputs = to_pb_io(a, n->inputs);
    m.outputs = to_pb_io(a, n->outputs);
    int rc = to_pb_attrs(a, n->attr, n->n_attr, &m.attr);
    m.n_attr = n->n_attr;
    if (rc == 0) {
        *len = protobuf_c_message_get_packed_size(&m.base);
        *out = malloc(*len ? *len : 1);
        if (*out)
            protobuf_c_message_pack(&m.base, *out);
        else
            rc = ETK_ENOMEM;
    }
    etk_arena_free(a);
    return rc;
}

int etk_writer_put(etk_writer *w, const etk_node *n, etk_error *err)
{
    for (uint32_t i = 0; i < n->n_attr; i++)
        if (!etk__attr_kind_valid(n->attr[i].kind))
            return etk_err(err, ETK_EINVAL, "%s: node index %zu (id %llu): attribute '%s' has invalid kind %d",
                           w->path, w->n_nodes, (unsigned long long)n->id,
                           n->attr[i].name ? n->attr[i].name : "", (int)n->attr[i].kind);
    size_t sz = etk__node_encoded_size(n);
    if (sz + 10 > w->cap) {
        size_t nc = w->cap ? w->cap : 4096;
        while (nc < sz + 10)
            nc *= 2;
        uint8_t *nb = realloc(w->buf, nc);
        if (!nb)
            return etk_err(err, ETK_ENOMEM, "%s: out of memory encoding a %zu-byte node", w->path, sz);
        w->buf = nb;
        w->cap = nc;
    }
    size_t h = put_varint(w->buf, sz);
    uint8_t *end = etk__node_encode(n, w->buf + h);
    size_t total = (size_t)(end - w->buf);
    if (fwrite(w->buf, 1, total, w->f) != total)
        return etk_err(err, ETK_EIO, "%s: write failed: %s", w->path, strerror(errno));
    w->bytes += total;
    w->n_nodes++;
    return 0;
}

uint64_t etk_writer_bytes(const etk_writer *w) { return w->bytes; }

int etk_writer_close(etk_writer *w, etk_error *err)
{
    int rc = 0;
    if (w->f == stdout) {
        if (fflush(stdout) != 0)
            rc = etk_err(err, ETK_EIO, "<stdout>: write failed: %s", strerror(errno));
    } else {
        rc = etk_file_commit(w->f, w->tmp, w->path, err);
        w->tmp = NULL;
    }
    writer_free(w);
    return rc;
}

void etk_writer_abort(etk_writer *w)
{
    if (!w)
        return;
    if (w->f && w->f != stdout)
        etk_file_abort(w->f, w->tmp);
    writer_free(w);
}

int etk_trace_write(const etk_trace *t, const char *path, etk_error *err)
{
    etk_writer *w;
    int rc = etk_writer_open(path, t->version, t->meta_attr, t->n_meta_attr, &w, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < t->n_nodes; i++)
        if ((rc = etk_writer_put(w, &t->nodes[i], err)) != 0) {
            etk_writer_abort(w);
            return rc;
        }
    return etk_writer_close(w, err);
}

int etk_trace_encode(const etk_trace *t, uint8_t **buf, size_t *len, etk_error *err)
{
    /* metadata through protobuf-c (it may carry attributes), nodes through the direct encoder,
     * into one buffer of the exact size */
    ChakraProtoMsg__GlobalMetadata m;
    chakra_proto_msg__global_metadata__init(&m);
    m.version = xstr(t->version);
    etk_arena *a = etk_arena_new(0);
    if (!a)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    int rc = to_pb_attrs(a, t->meta_attr, t->n_meta_attr, &m.attr);
    m.n_attr = t->n_meta_attr;
    if (rc) {
        etk_arena_free(a);
        return etk_err(err, rc, "GlobalMetadata: an attribute has an invalid kind");
    }
    size_t msz = protobuf_c_message_get_packed_size(&m.base);
    size_t total = 10 + msz;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        for (uint32_t k = 0; k < n->n_attr; k++)
            if (!etk__attr_kind_valid(n->attr[k].kind)) {
                etk_arena_free(a);
                return etk_err(err, ETK_EINVAL, "node index %zu (id %llu): attribute '%s' has invalid kind %d",
                               i, (unsigned long long)n->id, n->attr[k].name ? n->attr[k].name : "",
                               (int)n->attr[k].kind);
            }
        total += etk_node_frame_size(n);
    }
    uint8_t *out = malloc(total);
    if (!out) {
        etk_arena_free(a);
        return etk_err(err, ETK_ENOMEM, "out of memory (%zu bytes)", total);
    }
    size_t p = put_varint(out, msz);
    protobuf_c_message_pack(&m.base, out + p);
    p += msz;
    etk_arena_free(a);
    for (size_t i = 0; i < t->n_nodes; i++)
        p += etk_node_frame_encode(&t->nodes[i], out + p);
    *buf = out;
    *len = p;
    return 0;
}
