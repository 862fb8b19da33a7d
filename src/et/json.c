/* json.c — JSON forms of a Chakra trace (see include/etkit/json.h and docs/json.md).
 *
 * Where it sits in the flow: `etkit json` reads a .et with the reader (reader.c), streams it out
 * here as the lossless etkit form or Chakra's feeder form, and `etkit json --to-et` parses the
 * lossless form back into an etk_trace that the writer (writer.c) encodes. The lossless form is
 * the text view of the wire format: et -> json -> et is byte-exact for canonical files.
 *
 * Writing is streaming (one node at a time, no JSON tree); reading uses jansson and checks every
 * value strictly, naming the JSON path of the first thing that is wrong. */
#include "etkit/json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SAFE_INT (UINT64_C(1) << 53) /* largest magnitude written as a JSON number */
#define QNAN_BITS UINT64_C(0x7ff8000000000000)
#define QNAN_BITS_F UINT32_C(0x7fc00000)

/* ===================================================================== base64 */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t etk_base64_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void etk_base64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0, o = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64chars[v >> 18];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = b64chars[(v >> 6) & 63];
        out[o++] = b64chars[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64chars[v >> 18];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64chars[v >> 18];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = b64chars[(v >> 6) & 63];
        out[o++] = '=';
    }
    out[o] = 0;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

long etk_base64_decode(const char *in, size_t len, uint8_t *out)
{
    if (len % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            char c = in[i + k];
            if (c == '=' && i + 4 == len && k >= 2) {
                pad++;
                v[k] = 0;
                continue;
            }
            if (pad) /* data after padding */
                return -1;
            v[k] = b64val(c);
            if (v[k] < 0)
                return -1;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(w >> 8);
        if (pad < 1)
            out[o++] = (uint8_t)w;
        /* canonical: the bits that padding drops must be zero */
        if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
            return -1;
    }
    return (long)o;
}

/* ===================================================================== writing */

/* Strictly valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF): exactly
 * what jansson accepts, so every string written as a JSON string reads back. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

/* Base64 in chunks of 192 input bytes (a multiple of 3, so only the last chunk pads): no
 * allocation, whatever the size. */
static void put_base64(FILE *f, const uint8_t *p, size_t n)
{
    char b[257];
    fputc('"', f);
    for (size_t i = 0; i < n; i += 192) {
        size_t k = n - i < 192 ? n - i : 192;
        etk_base64_encode(p + i, k, b);
        fwrite(b, 1, etk_base64_len(k), f);
    }
    fputc('"', f);
}

/* The body of a JSON string for valid UTF-8 bytes (no quotes). */
static void put_escaped(FILE *f, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = u[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        fwrite(s + run, 1, i - run, f);
        run = i + 1;
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        default: fprintf(f, "\\u%04x", c); break;
        }
    }
    fwrite(s + run, 1, n - run, f);
}

/* A JSON string; bytes that are not valid UTF-8 become {"base64": "..."}. */
static void put_strn(FILE *f, const char *s, size_t n)
{
    if (!utf8_valid((const unsigned char *)s, n)) {
        fputs("{\"base64\": ", f);
        put_base64(f, (const uint8_t *)s, n);
        fputc('}', f);
        return;
    }
    fputc('"', f);
    put_escaped(f, s, n);
    fputc('"', f);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    for (size_t len = 1; len <= 4 && len <= n; len++)
        if (utf8_valid(s, len))
            return len;
    return 0;
}

/* A JSON string that is always a string (the feeder form has no escape hatch): each byte that
 * does not start a valid UTF-8 sequence becomes U+FFFD. */
static void put_str_replacing(FILE *f, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    fputc('"', f);
    while (i < n) {
        size_t run = i;
        size_t k;
        while (run < n && (k = utf8_seq(u + run, n - run)) > 0)
            run += k;
        put_escaped(f, s + i, run - i);
        if (run < n) {
            fputs("\\ufffd", f);
            run++;
        }
        i = run;
    }
    fputc('"', f);
}

void *etk_json_text(const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (j)
        return j;
    /* not UTF-8 (a file name in another encoding): each stray byte as \xNN, so no field is lost */
    size_t n = strlen(s);
    char *b = malloc(4 * n + 1), *o = b;
    if (!b)
        return NULL;
    const unsigned char *end = (const unsigned char *)s + n;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t k = utf8_seq(p, (size_t)(end - p));
        if (k) {
            memcpy(o, p, k);
            o += k;
            p += k;
        } else {
            o += sprintf(o, "\\x%02x", *p++);
        }
    }
    *o = 0;
    j = json_string(b);
    free(b);
    return j;
}

static void put_str(FILE *f, const char *s)
{
    if (!s)
        fputs("null", f);
    else
        put_strn(f, s, strlen(s));
}

static void put_u64(FILE *f, uint64_t v)
{
    if (v <= SAFE_INT)
        fprintf(f, "%" PRIu64, v);
    else
        fprintf(f, "\"%" PRIu64 "\"", v);
}

static void put_i64(FILE *f, int64_t v)
{
    if (v >= -(int64_t)SAFE_INT && v <= (int64_t)SAFE_INT)
        fprintf(f, "%" PRId64, v);
    else
        fprintf(f, "\"%" PRId64 "\"", v);
}

/* Non-finite values as strings (protobuf's JSON mapping spelling); NaN payloads kept. */
static bool put_nonfinite(FILE *f, double d)
{
    if (isnan(d)) {
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        if (bits == QNAN_BITS)
            fputs("\"NaN\"", f);
        else
            fprintf(f, "\"NaN:0x%016" PRIx64 "\"", bits);
        return true;
    }
    if (isinf(d)) {
        fputs(d > 0 ? "\"Infinity\"" : "\"-Infinity\"", f);
        return true;
    }
    return false;
}

/* Make sure a number reads back as a real (keeps the sign of -0.0 and the kind). */
static void put_real_text(FILE *f, char *buf)
{
    if (!strpbrk(buf, ".eE"))
        strcat(buf, ".0");
    fputs(buf, f);
}

/* Shortest %.Ng (N in 15..17) that strtod reads back to the same double. */
static void put_double(FILE *f, double d)
{
    if (put_nonfinite(f, d))
        return;
    char buf[40];
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, sizeof buf - 3, "%.*g", p, d);
        if (p == 17 || strtod(buf, NULL) == d)
            break;
    }
    put_real_text(f, buf);
}

/* Shortest %.Ng (N in 6..9) that reads back (strtod, then narrowing) to the same float. NaNs
 * by their float bits ("NaN:0x<8 hex digits>"), so signalling NaNs in float lists survive. */
static void put_float(FILE *f, float x)
{
    if (isnan(x)) {
        uint32_t bits;
        memcpy(&bits, &x, sizeof bits);
        if (bits == QNAN_BITS_F)
            fputs("\"NaN\"", f);
        else
            fprintf(f, "\"NaN:0x%08" PRIx32 "\"", bits);
        return;
    }
    double d = x;
    if (put_nonfinite(f, d))
        return;
    char buf[40];
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, sizeof buf - 3, "%.*g", p, d);
        if (p == 9 || (float)strtod(buf, NULL) == x)
            break;
    }
    put_real_text(f, buf);
}

static void put_u64_list(FILE *f, const uint64_t *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        put_u64(f, v[i]);
    }
    fputc(']', f);
}

static void put_attr_value(FILE *f, const etk_attr *a)
{
    uint32_t n = a->n;
    switch (a->kind) {
    case ETK_ATTR_DOUBLE: put_double(f, a->v.d); return;
    case ETK_ATTR_FLOAT: put_float(f, a->v.f); return;
    case ETK_ATTR_INT32: case ETK_ATTR_INT64: case ETK_ATTR_SINT32: case ETK_ATTR_SINT64:
    case ETK_ATTR_SFIXED32: case ETK_ATTR_SFIXED64:
        put_i64(f, a->v.i);
        return;
    case ETK_ATTR_UINT32: case ETK_ATTR_UINT64: case ETK_ATTR_FIXED32: case ETK_ATTR_FIXED64:
        put_u64(f, a->v.u);
        return;
    case ETK_ATTR_BOOL: fputs(a->v.b ? "true" : "false", f); return;
    case ETK_ATTR_STRING: put_str(f, a->v.s ? a->v.s : ""); return;
    case ETK_ATTR_BYTES: put_base64(f, a->v.data, a->n); return;
    default: break;
    }
    fputc('[', f);
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        switch (a->kind) {
        case ETK_ATTR_DOUBLE_LIST: put_double(f, a->v.dl[i]); break;
        case ETK_ATTR_FLOAT_LIST: put_float(f, a->v.fl[i]); break;
        case ETK_ATTR_INT32_LIST: case ETK_ATTR_SINT32_LIST: case ETK_ATTR_SFIXED32_LIST:
            put_i64(f, a->v.i32[i]);
            break;
        case ETK_ATTR_INT64_LIST: case ETK_ATTR_SINT64_LIST: case ETK_ATTR_SFIXED64_LIST:
            put_i64(f, a->v.i64[i]);
            break;
        case ETK_ATTR_UINT32_LIST: case ETK_ATTR_FIXED32_LIST: put_u64(f, a->v.u32[i]); break;
        case ETK_ATTR_UINT64_LIST: case ETK_ATTR_FIXED64_LIST: put_u64(f, a->v.u64[i]); break;
        case ETK_ATTR_BOOL_LIST: fputs(a->v.bl[i] ? "true" : "false", f); break;
        case ETK_ATTR_STRING_LIST: put_str(f, a->v.sl[i] ? a->v.sl[i] : ""); break;
        case ETK_ATTR_BYTES_LIST: put_base64(f, a->v.bytesl[i].data, a->v.bytesl[i].len); break;
        default: break;
        }
    }
    fputc(']', f);
}

static void put_attrs(FILE *f, const etk_attr *attr, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        const etk_attr *a = &attr[i];
        if (i)
            fputs(", ", f);
        fputs("{\"name\": ", f);
        put_str(f, a->name ? a->name : "");
        if (a->doc) {
            fputs(", \"doc\": ", f);
            put_str(f, a->doc);
        }
        if (a->kind == ETK_ATTR_NONE) {
            fputs(", \"kind\": \"none\"}", f);
            continue;
        }
        fputs(", \"kind\": ", f);
        const char *kn = etk_attr_kind_name(a->kind);
        put_str(f, kn ? kn : "none");
        fputs(", \"value\": ", f);
        put_attr_value(f, a);
        fputc('}', f);
    }
    fputc(']', f);
}

static void put_io(FILE *f, const char *key, const etk_io *io)
{
    fprintf(f, ", \"%s\": {", key);
    const char *sep = "";
    if (io->values) {
        fputs("\"values\": ", f);
        put_str(f, io->values);
        sep = ", ";
    }
    if (io->shapes) {
        fprintf(f, "%s\"shapes\": ", sep);
        put_str(f, io->shapes);
        sep = ", ";
    }
    if (io->types) {
        fprintf(f, "%s\"types\": ", sep);
        put_str(f, io->types);
    }
    fputc('}', f);
}

static void put_node_lossless(FILE *f, const etk_node *n)
{
    fputs("{\"id\": ", f);
    put_u64(f, n->id);
    fputs(", \"name\": ", f);
    put_str(f, n->name ? n->name : "");
    fputs(", \"type\": ", f);
    if (n->type >= 0 && n->type < ETK_NODE_TYPE_COUNT)
        put_str(f, etk_node_type_name(n->type));
    else
        fprintf(f, "%" PRId32, n->type);
    if (n->n_ctrl_deps) {
        fputs(", \"ctrl_deps\": ", f);
        put_u64_list(f, n->ctrl_deps, n->n_ctrl_deps);
    }
    if (n->n_data_deps) {
        fputs(", \"data_deps\": ", f);
        put_u64_list(f, n->data_deps, n->n_data_deps);
    }
    if (n->start_time_micros) {
        fputs(", \"start_time_micros\": ", f);
        put_u64(f, n->start_time_micros);
    }
    if (n->duration_micros) {
        fputs(", \"duration_micros\": ", f);
        put_u64(f, n->duration_micros);
    }
    if (n->inputs)
        put_io(f, "inputs", n->inputs);
    if (n->outputs)
        put_io(f, "outputs", n->outputs);
    if (n->n_attr) {
        fputs(", \"attr\": ", f);
        put_attrs(f, n->attr, n->n_attr);
    }
    fputc('}', f);
}

static void write_lossless(const etk_trace *t, FILE *f)
{
    fprintf(f, "{\"format\": \"%s\", \"version\": %d,\n\"metadata\": {\"version\": ", ETK_JSON_FORMAT,
            ETK_JSON_VERSION);
    put_str(f, t->version);
    fputs(", \"attr\": ", f);
    put_attrs(f, t->meta_attr, t->n_meta_attr);
    fputs("},\n\"nodes\": [", f);
    for (size_t i = 0; i < t->n_nodes; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_node_lossless(f, &t->nodes[i]);
    }
    fputs("\n]}\n", f);
}

/* Chakra's JSON feeder reads these with nlohmann::json, which handles the full uint64/int64
 * range, so the feeder form writes plain JSON integers. Defaults follow Chakra's ETFeederNode:
 * is_cpu_op true when absent, the others 0. */
static void put_node_feeder(FILE *f, const etk_node *n)
{
    bool cpu = true;
    etk_node_bool(n, "is_cpu_op", &cpu);
    fprintf(f, "{\"Id\": %" PRIu64 ", \"Name\": ", n->id);
    put_str_replacing(f, n->name ? n->name : "");
    fprintf(f, ", \"NodeType\": %" PRId32 ", \"is_cpu_op\": %s, \"runtime\": %" PRIu64
               ", \"data_deps\": [",
            n->type, cpu ? "true" : "false", n->duration_micros);
    for (uint32_t i = 0; i < n->n_data_deps; i++)
        fprintf(f, i ? ", %" PRIu64 : "%" PRIu64, n->data_deps[i]);
    fputc(']', f);
    if (n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV || n->type == ETK_NODE_COLL) {
        uint64_t tensor_size = 0;
        int64_t comm_type = 0, prio = 0, size = 0, src = 0, dst = 0, tag = 0;
        etk_node_u64(n, "tensor_size", &tensor_size);
        etk_node_i64(n, "comm_type", &comm_type);
        etk_node_i64(n, "comm_priority", &prio);
        etk_node_i64(n, "comm_size", &size);
        etk_node_i64(n, "comm_src", &src);
        etk_node_i64(n, "comm_dst", &dst);
        etk_node_i64(n, "comm_tag", &tag);
        fprintf(f,
                ", \"tensor_size\": %" PRIu64 ", \"comm_type\": %" PRId64 ", \"comm_priority\": %" PRId64
                ", \"comm_size\": %" PRId64 ", \"comm_src\": %" PRId64 ", \"comm_dst\": %" PRId64
                ", \"comm_tag\": %" PRId64,
                tensor_size, comm_type, prio, size, src, dst, tag);
    }
    fputc('}', f);
}

static void write_feeder(const etk_trace *t, FILE *f)
{
    fputs("{\"workload_graph\": [", f);
    for (size_t i = 0; i < t->n_nodes; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_node_feeder(f, &t->nodes[i]);
    }
    fputs("\n]}\n", f);
}

int etk_json_write(const etk_trace *t, etk_json_form form, FILE *f, etk_error *err)
{
    if (!t || !f)
        return etk_err(err, ETK_EINVAL, "etk_json_write: no trace or no output stream");
    if (form == ETK_JSON_FEEDER)
        write_feeder(t, f);
    else if (form == ETK_JSON_LOSSLESS)
        write_lossless(t, f);
    else
        return etk_err(err, ETK_EINVAL, "etk_json_write: unknown form %d", (int)form);
    if (fflush(f) != 0 || ferror(f))
        return etk_err(err, ETK_EIO, "writing JSON of %s: %s", t->path && *t->path ? t->path : "trace",
                       strerror(errno));
    return 0;
}

int etk_json_export(const etk_trace *t, etk_json_form form, const char *path, etk_error *err)
{
    if (!strcmp(path, "-"))
        return etk_json_write(t, form, stdout, err);
    char *tmp = NULL;
    FILE *f = etk_file_begin(path, &tmp, err);
    if (!f)
        return err ? err->code : ETK_EIO;
    int rc = etk_json_write(t, form, f, err);
    if (rc) {
        etk_file_abort(f, tmp);
        return etk_err_prefix(err, "%s", path);
    }
    return etk_file_commit(f, tmp, path, err);
}

/* ===================================================================== reading */

typedef struct imp {
    const char *file;
    etk_error *err;
} imp;

/* JSON paths ("nodes[12].attr[3].kind") are built level by level into fixed buffers; a
 * pathological depth truncates the path in the message, never overflows. */
static void jpath(char *out, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void jpath(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* "<file>: <path>: expected <what>, got <type>[ "<text>"]" */
static int bad(imp *im, const char *path, const char *what, const json_t *got)
{
    if (got && json_is_string(got))
        return etk_err(im->err, ETK_EFORMAT, "%s: %s: expected %s, got the string \"%.60s\"", im->file, path,
                       what, json_string_value(got));
    if (got && json_is_integer(got))
        return etk_err(im->err, ETK_EFORMAT, "%s: %s: expected %s, got the integer %" JSON_INTEGER_FORMAT,
                       im->file, path, what, json_integer_value(got));
    return etk_err(im->err, ETK_EFORMAT, "%s: %s: expected %s, got %s", im->file, path, what,
                   got ? jtype(got) : "nothing (the key is missing)");
}

/* Reject keys outside `allowed` (NULL-terminated) so that typos do not pass silently. */
static int check_keys(imp *im, const char *path, json_t *obj, const char *const *allowed, const char *list)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(key, *a))
                ok = true;
        if (!ok)
            return etk_err(im->err, ETK_EFORMAT, "%s: %s: unknown key \"%.60s\" (expected %s)", im->file,
                           path, key, list);
    }
    return 0;
}

static int parse_decimal_u64(const char *s, uint64_t *out)
{
    if (!*s)
        return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int get_u64(imp *im, json_t *v, const char *path, uint64_t max, uint64_t *out)
{
    char what[96];
    snprintf(what, sizeof what, "an integer in [0, %" PRIu64 "] (a number or a decimal string)", max);
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x > max)
            return bad(im, path, what, v);
        *out = (uint64_t)x;
        return 0;
    }
    if (json_is_string(v)) {
        uint64_t x;
        if (strlen(json_string_value(v)) != json_string_length(v) ||
            parse_decimal_u64(json_string_value(v), &x) || x > max)
            return bad(im, path, what, v);
        *out = x;
        return 0;
    }
    return bad(im, path, what, v);
}

static int get_i64(imp *im, json_t *v, const char *path, int64_t lo, int64_t hi, int64_t *out)
{
    char what[128];
    snprintf(what, sizeof what, "an integer in [%" PRId64 ", %" PRId64 "] (a number or a decimal string)", lo,
             hi);
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < lo || x > hi)
            return bad(im, path, what, v);
        *out = x;
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        bool neg = *s == '-';
        uint64_t m;
        if (strlen(s) != json_string_length(v) || parse_decimal_u64(s + neg, &m))
            return bad(im, path, what, v);
        int64_t x;
        if (neg) {
            if (m > (uint64_t)INT64_MAX + 1)
                return bad(im, path, what, v);
            x = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
        } else {
            if (m > (uint64_t)INT64_MAX)
                return bad(im, path, what, v);
            x = (int64_t)m;
        }
        if (x < lo || x > hi)
            return bad(im, path, what, v);
        *out = x;
        return 0;
    }
    return bad(im, path, what, v);
}

/* "NaN:0x" followed by exactly `digits` lowercase hex digits; false if not that form. */
static bool parse_nan_bits(const char *s, int digits, uint64_t *bits)
{
    if (strncmp(s, "NaN:0x", 6) || strlen(s) != (size_t)(6 + digits))
        return false;
    uint64_t b = 0;
    for (const char *p = s + 6; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            return false;
        b = b << 4 | (uint64_t)d;
    }
    *bits = b;
    return true;
}

static int get_double(imp *im, json_t *v, const char *path, double *out)
{
    static const char what[] =
        "a number or one of \"NaN\", \"Infinity\", \"-Infinity\", \"NaN:0x<16 hex digits of a NaN>\"";
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        uint64_t bits;
        if (!strcmp(s, "NaN")) {
            bits = QNAN_BITS;
            memcpy(out, &bits, sizeof *out);
            return 0;
        }
        if (!strcmp(s, "Infinity") || !strcmp(s, "-Infinity")) {
            *out = *s == '-' ? -INFINITY : INFINITY;
            return 0;
        }
        double d;
        if (parse_nan_bits(s, 16, &bits)) {
            memcpy(&d, &bits, sizeof d);
            if (isnan(d)) {
                *out = d;
                return 0;
            }
        }
    }
    return bad(im, path, what, v);
}

/* Floats: numbers are narrowed; NaNs are given by their 32-bit pattern. */
static int get_float(imp *im, json_t *v, const char *path, float *out)
{
    static const char what[] =
        "a number or one of \"NaN\", \"Infinity\", \"-Infinity\", \"NaN:0x<8 hex digits of a float NaN>\"";
    if (json_is_number(v)) {
        *out = (float)json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        uint64_t bits;
        uint32_t b32;
        if (!strcmp(s, "NaN")) {
            b32 = QNAN_BITS_F;
            memcpy(out, &b32, sizeof *out);
            return 0;
        }
        if (!strcmp(s, "Infinity") || !strcmp(s, "-Infinity")) {
            *out = *s == '-' ? -INFINITY : INFINITY;
            return 0;
        }
        if (parse_nan_bits(s, 8, &bits)) {
            float x;
            b32 = (uint32_t)bits;
            memcpy(&x, &b32, sizeof x);
            if (isnan(x)) {
                *out = x;
                return 0;
            }
        }
    }
    return bad(im, path, what, v);
}

static int get_bool(imp *im, json_t *v, const char *path, bool *out)
{
    if (!json_is_boolean(v))
        return bad(im, path, "true or false", v);
    *out = json_is_true(v);
    return 0;
}

/* base64 text of v (a JSON string) decoded into the arena. */
static int get_base64(imp *im, etk_arena *a, json_t *v, const char *path, etk_bytes *out)
{
    if (!json_is_string(v))
        return bad(im, path, "a base64 string", v);
    size_t len = json_string_length(v);
    uint8_t *buf = etk_arena_alloc(a, len / 4 * 3 + 1);
    if (!buf)
        return etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, path);
    long n = etk_base64_decode(json_string_value(v), len, buf);
    if (n < 0)
        return bad(im, path, "canonical base64 (RFC 4648, '=' padding)", v);
    out->data = buf;
    out->len = (size_t)n;
    return 0;
}

/* A string: a JSON string, or {"base64": "..."} for bytes that are not UTF-8, copied into the
 * arena (the JSON tree is freed before the trace is used). null gives NULL when allow_null. */
static int get_string(imp *im, etk_arena *a, json_t *v, const char *path, bool allow_null, const char **out)
{
    if (allow_null && json_is_null(v)) {
        *out = NULL;
        return 0;
    }
    if (json_is_string(v)) {
        *out = etk_arena_strndup(a, json_string_value(v), json_string_length(v));
        if (!*out)
            return etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, path);
        return 0;
    }
    if (json_is_object(v) && json_object_size(v) == 1 && json_object_get(v, "base64")) {
        char p[256];
        jpath(p, sizeof p, "%s.base64", path);
        etk_bytes b;
        int rc = get_base64(im, a, json_object_get(v, "base64"), p, &b);
        if (rc)
            return rc;
        if (memchr(b.data, 0, b.len))
            return etk_err(im->err, ETK_EFORMAT, "%s: %s: the string contains a NUL byte (not supported)",
                           im->file, p);
        ((uint8_t *)b.data)[b.len] = 0; /* buffer has room: len/4*3+1 >= n+1 */
        *out = (const char *)b.data;
        return 0;
    }
    return bad(im, path, allow_null ? "a string, {\"base64\": \"...\"} or null" : "a string or {\"base64\": \"...\"}",
               v);
}

static int get_u64_array(imp *im, etk_arena *a, json_t *v, const char *path, const uint64_t **out, uint32_t *n)
{
    if (!json_is_array(v))
        return bad(im, path, "an array of integers", v);
    size_t len = json_array_size(v);
    if (len > UINT32_MAX)
        return etk_err(im->err, ETK_EFORMAT, "%s: %s: too many elements", im->file, path);
    uint64_t *arr = len ? etk_arena_alloc(a, len * sizeof *arr) : NULL;
    if (len && !arr)
        return etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, path);
    for (size_t i = 0; i < len; i++) {
        char p[256];
        jpath(p, sizeof p, "%s[%zu]", path, i);
        int rc = get_u64(im, json_array_get(v, i), p, UINT64_MAX, &arr[i]);
        if (rc)
            return rc;
    }
    *out = arr;
    *n = (uint32_t)len;
    return 0;
}

/* Value bounds per integer kind. */
static void int_range(int kind, int64_t *lo, int64_t *hi, uint64_t *umax, bool *is_unsigned)
{
    *is_unsigned = false;
    *lo = INT64_MIN;
    *hi = INT64_MAX;
    *umax = UINT64_MAX;
    switch (kind) {
    case ETK_ATTR_INT32: case ETK_ATTR_INT32_LIST: case ETK_ATTR_SINT32: case ETK_ATTR_SINT32_LIST:
    case ETK_ATTR_SFIXED32: case ETK_ATTR_SFIXED32_LIST:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    case ETK_ATTR_UINT32: case ETK_ATTR_UINT32_LIST: case ETK_ATTR_FIXED32: case ETK_ATTR_FIXED32_LIST:
        *is_unsigned = true;
        *umax = UINT32_MAX;
        break;
    case ETK_ATTR_UINT64: case ETK_ATTR_UINT64_LIST: case ETK_ATTR_FIXED64: case ETK_ATTR_FIXED64_LIST:
        *is_unsigned = true;
        break;
    default:
        break;
    }
}

static int get_attr_scalar(imp *im, etk_arena *ar, int kind, json_t *v, const char *path, etk_attr *a)
{
    int64_t lo, hi;
    uint64_t umax;
    bool uns;
    switch (kind) {
    case ETK_ATTR_DOUBLE: return get_double(im, v, path, &a->v.d);
    case ETK_ATTR_FLOAT: {
        return get_float(im, v, path, &a->v.f);
    }
    case ETK_ATTR_BOOL: return get_bool(im, v, path, &a->v.b);
    case ETK_ATTR_STRING: return get_string(im, ar, v, path, false, &a->v.s);
    case ETK_ATTR_BYTES: {
        etk_bytes b = {NULL, 0};
        int rc = get_base64(im, ar, v, path, &b);
        if (rc == 0 && b.len > UINT32_MAX)
            return etk_err(im->err, ETK_EFORMAT, "%s: %s: bytes_val of %zu bytes exceeds the 4 GiB limit", im->file, path, b.len);
        a->v.data = b.data;
        a->n = (uint32_t)b.len;
        return rc;
    }
    default:
        int_range(kind, &lo, &hi, &umax, &uns);
        if (uns)
            return get_u64(im, v, path, umax, &a->v.u);
        return get_i64(im, v, path, lo, hi, &a->v.i);
    }
}

static int get_attr_list(imp *im, etk_arena *ar, int kind, json_t *v, const char *path, etk_attr *a)
{
    if (!json_is_array(v))
        return bad(im, path, "an array (the kind is a list)", v);
    size_t n = json_array_size(v);
    if (n > UINT32_MAX)
        return etk_err(im->err, ETK_EFORMAT, "%s: %s: too many elements", im->file, path);
    size_t elem;
    switch (kind) {
    case ETK_ATTR_DOUBLE_LIST: elem = sizeof(double); break;
    case ETK_ATTR_FLOAT_LIST: elem = sizeof(float); break;
    case ETK_ATTR_INT32_LIST: case ETK_ATTR_SINT32_LIST: case ETK_ATTR_SFIXED32_LIST: elem = 4; break;
    case ETK_ATTR_UINT32_LIST: case ETK_ATTR_FIXED32_LIST: elem = 4; break;
    case ETK_ATTR_BOOL_LIST: elem = 1; break;
    case ETK_ATTR_STRING_LIST: elem = sizeof(char *); break;
    case ETK_ATTR_BYTES_LIST: elem = sizeof(etk_bytes); break;
    default: elem = 8; break;
    }
    void *arr = etk_arena_alloc(ar, n ? n * elem : 1);
    if (!arr)
        return etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, path);
    int64_t lo, hi;
    uint64_t umax;
    bool uns;
    int_range(kind, &lo, &hi, &umax, &uns);
    for (size_t i = 0; i < n; i++) {
        char p[256];
        jpath(p, sizeof p, "%s[%zu]", path, i);
        json_t *e = json_array_get(v, i);
        int rc = 0;
        bool b = false;
        uint64_t u = 0;
        int64_t x = 0;
        switch (kind) {
        case ETK_ATTR_DOUBLE_LIST: rc = get_double(im, e, p, &((double *)arr)[i]); break;
        case ETK_ATTR_FLOAT_LIST: rc = get_float(im, e, p, &((float *)arr)[i]); break;
        case ETK_ATTR_BOOL_LIST:
            rc = get_bool(im, e, p, &b);
            ((uint8_t *)arr)[i] = b;
            break;
        case ETK_ATTR_STRING_LIST: rc = get_string(im, ar, e, p, false, &((const char **)arr)[i]); break;
        case ETK_ATTR_BYTES_LIST: rc = get_base64(im, ar, e, p, &((etk_bytes *)arr)[i]); break;
        default:
            if (uns) {
                rc = get_u64(im, e, p, umax, &u);
                if (elem == 4)
                    ((uint32_t *)arr)[i] = (uint32_t)u;
                else
                    ((uint64_t *)arr)[i] = u;
            } else {
                rc = get_i64(im, e, p, lo, hi, &x);
                if (elem == 4)
                    ((int32_t *)arr)[i] = (int32_t)x;
                else
                    ((int64_t *)arr)[i] = x;
            }
            break;
        }
        if (rc)
            return rc;
    }
    a->n = (uint32_t)n;
    switch (kind) {
    case ETK_ATTR_DOUBLE_LIST: a->v.dl = arr; break;
    case ETK_ATTR_FLOAT_LIST: a->v.fl = arr; break;
    case ETK_ATTR_INT32_LIST: case ETK_ATTR_SINT32_LIST: case ETK_ATTR_SFIXED32_LIST: a->v.i32 = arr; break;
    case ETK_ATTR_INT64_LIST: case ETK_ATTR_SINT64_LIST: case ETK_ATTR_SFIXED64_LIST: a->v.i64 = arr; break;
    case ETK_ATTR_UINT32_LIST: case ETK_ATTR_FIXED32_LIST: a->v.u32 = arr; break;
    case ETK_ATTR_UINT64_LIST: case ETK_ATTR_FIXED64_LIST: a->v.u64 = arr; break;
    case ETK_ATTR_BOOL_LIST: a->v.bl = arr; break;
    case ETK_ATTR_STRING_LIST: a->v.sl = arr; break;
    case ETK_ATTR_BYTES_LIST: a->v.bytesl = arr; break;
    default: break;
    }
    return 0;
}

static const char *const attr_keys[] = {"name", "doc", "kind", "value", NULL};

static int get_attr(imp *im, etk_arena *ar, json_t *v, const char *path, etk_attr *a)
{
    char p[256];
    if (!json_is_object(v))
        return bad(im, path, "an attribute object {\"name\", \"kind\", \"value\"}", v);
    int rc = check_keys(im, path, v, attr_keys, "name, doc, kind, value");
    if (rc)
        return rc;
    memset(a, 0, sizeof *a);
    jpath(p, sizeof p, "%s.name", path);
    json_t *name = json_object_get(v, "name");
    if ((rc = get_string(im, ar, name, p, false, &a->name)))
        return rc;
    json_t *doc = json_object_get(v, "doc");
    if (doc) {
        jpath(p, sizeof p, "%s.doc", path);
        if ((rc = get_string(im, ar, doc, p, true, &a->doc)))
            return rc;
    }
    jpath(p, sizeof p, "%s.kind", path);
    json_t *kind = json_object_get(v, "kind");
    if (!json_is_string(kind))
        return bad(im, p, "an attribute kind name such as \"int64_val\" or \"bool_list\"", kind);
    int k = strcmp(json_string_value(kind), "none") ? etk_attr_kind_parse(json_string_value(kind)) : ETK_ATTR_NONE;
    if (k < 0)
        return bad(im, p, "an attribute kind name (double_val, float_val, int32_val, int64_val, uint32_val, "
                          "uint64_val, sint32_val, sint64_val, fixed32_val, fixed64_val, sfixed32_val, "
                          "sfixed64_val, bool_val, string_val, bytes_val, the *_list forms, or none)",
                   kind);
    a->kind = k;
    json_t *val = json_object_get(v, "value");
    jpath(p, sizeof p, "%s.value", path);
    if (k == ETK_ATTR_NONE) {
        if (val)
            return etk_err(im->err, ETK_EFORMAT, "%s: %s: kind \"none\" takes no value", im->file, p);
        return 0;
    }
    if (!val)
        return bad(im, p, "the attribute's value", NULL);
    return etk_attr_kind_is_list(k) ? get_attr_list(im, ar, k, val, p, a) : get_attr_scalar(im, ar, k, val, p, a);
}

static int get_attrs(imp *im, etk_arena *ar, json_t *v, const char *path, const etk_attr **out, uint32_t *n)
{
    if (!json_is_array(v))
        return bad(im, path, "an array of attributes", v);
    size_t len = json_array_size(v);
    if (len > UINT32_MAX)
        return etk_err(im->err, ETK_EFORMAT, "%s: %s: too many attributes", im->file, path);
    etk_attr *arr = len ? etk_arena_alloc(ar, len * sizeof *arr) : NULL;
    if (len && !arr)
        return etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, path);
    for (size_t i = 0; i < len; i++) {
        char p[256];
        jpath(p, sizeof p, "%s[%zu]", path, i);
        int rc = get_attr(im, ar, json_array_get(v, i), p, &arr[i]);
        if (rc)
            return rc;
    }
    *out = arr;
    *n = (uint32_t)len;
    return 0;
}

static const char *const io_keys[] = {"values", "shapes", "types", NULL};

static int get_io(imp *im, etk_arena *ar, json_t *v, const char *path, const etk_io **out)
{
    if (!json_is_object(v))
        return bad(im, path, "an object {\"values\", \"shapes\", \"types\"}", v);
    int rc = check_keys(im, path, v, io_keys, "values, shapes, types");
    if (rc)
        return rc;
    etk_io *io = etk_arena_alloc(ar, sizeof *io);
    if (!io)
        return etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, path);
    const char **dst[3] = {&io->values, &io->shapes, &io->types};
    for (int i = 0; i < 3; i++) {
        json_t *s = json_object_get(v, io_keys[i]);
        if (!s)
            continue;
        char p[256];
        jpath(p, sizeof p, "%s.%s", path, io_keys[i]);
        if ((rc = get_string(im, ar, s, p, true, dst[i])))
            return rc;
    }
    *out = io;
    return 0;
}

static const char *const node_keys[] = {"id", "name", "type", "ctrl_deps", "data_deps", "start_time_micros",
                                        "duration_micros", "inputs", "outputs", "attr", NULL};

static int get_node(imp *im, etk_arena *ar, json_t *v, const char *path, etk_node *n)
{
    char p[256];
    int rc;
    memset(n, 0, sizeof *n);
    if (!json_is_object(v))
        return bad(im, path, "a node object", v);
    if ((rc = check_keys(im, path, v, node_keys,
                         "id, name, type, ctrl_deps, data_deps, start_time_micros, duration_micros, inputs, "
                         "outputs, attr")))
        return rc;
    jpath(p, sizeof p, "%s.id", path);
    if ((rc = get_u64(im, json_object_get(v, "id"), p, UINT64_MAX, &n->id)))
        return rc;
    json_t *x;
    n->name = "";
    if ((x = json_object_get(v, "name"))) {
        jpath(p, sizeof p, "%s.name", path);
        if ((rc = get_string(im, ar, x, p, false, &n->name)))
            return rc;
    }
    jpath(p, sizeof p, "%s.type", path);
    x = json_object_get(v, "type");
    if (json_is_string(x)) {
        int t = etk_node_type_parse(json_string_value(x));
        if (t < 0)
            return bad(im, p,
                       "a node type (INVALID_NODE, METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, COMP_NODE, "
                       "COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE) or an integer",
                       x);
        n->type = t;
    } else {
        int64_t t;
        if (!json_is_integer(x))
            return bad(im, p, "a node type name such as \"COMP_NODE\" or an integer", x);
        if ((rc = get_i64(im, x, p, INT32_MIN, INT32_MAX, &t)))
            return rc;
        n->type = (int32_t)t;
    }
    if ((x = json_object_get(v, "ctrl_deps"))) {
        jpath(p, sizeof p, "%s.ctrl_deps", path);
        if ((rc = get_u64_array(im, ar, x, p, &n->ctrl_deps, &n->n_ctrl_deps)))
            return rc;
    }
    if ((x = json_object_get(v, "data_deps"))) {
        jpath(p, sizeof p, "%s.data_deps", path);
        if ((rc = get_u64_array(im, ar, x, p, &n->data_deps, &n->n_data_deps)))
            return rc;
    }
    if ((x = json_object_get(v, "start_time_micros"))) {
        jpath(p, sizeof p, "%s.start_time_micros", path);
        if ((rc = get_u64(im, x, p, UINT64_MAX, &n->start_time_micros)))
            return rc;
    }
    if ((x = json_object_get(v, "duration_micros"))) {
        jpath(p, sizeof p, "%s.duration_micros", path);
        if ((rc = get_u64(im, x, p, UINT64_MAX, &n->duration_micros)))
            return rc;
    }
    if ((x = json_object_get(v, "inputs"))) {
        jpath(p, sizeof p, "%s.inputs", path);
        if ((rc = get_io(im, ar, x, p, &n->inputs)))
            return rc;
    }
    if ((x = json_object_get(v, "outputs"))) {
        jpath(p, sizeof p, "%s.outputs", path);
        if ((rc = get_io(im, ar, x, p, &n->outputs)))
            return rc;
    }
    if ((x = json_object_get(v, "attr"))) {
        jpath(p, sizeof p, "%s.attr", path);
        if ((rc = get_attrs(im, ar, x, p, &n->attr, &n->n_attr)))
            return rc;
    }
    return 0;
}

static const char *const top_keys[] = {"format", "version", "metadata", "nodes", NULL};
static const char *const meta_keys[] = {"version", "attr", NULL};

static int import_doc(imp *im, json_t *root, etk_trace **out)
{
    int rc;
    if (!json_is_object(root))
        return bad(im, "(top level)", "an object {\"format\": \"" ETK_JSON_FORMAT "\", ...}", root);
    if (json_object_get(root, "workload_graph") && !json_object_get(root, "format"))
        return etk_err(im->err, ETK_EUNSUPPORTED,
                       "%s: (top level): this is Chakra's JSON-feeder form (\"workload_graph\"), which etkit "
                       "writes but does not import (it lacks attributes and control deps); expected the "
                       "lossless form {\"format\": \"" ETK_JSON_FORMAT "\", ...} written by 'etkit json'",
                       im->file);
    if ((rc = check_keys(im, "(top level)", root, top_keys, "format, version, metadata, nodes")))
        return rc;
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), ETK_JSON_FORMAT))
        return bad(im, "format", "\"" ETK_JSON_FORMAT "\" (the lossless form written by 'etkit json')", fmt);
    json_t *ver = json_object_get(root, "version");
    if (!json_is_integer(ver))
        return bad(im, "version", "the integer 1", ver);
    if (json_integer_value(ver) != ETK_JSON_VERSION)
        return etk_err(im->err, ETK_EUNSUPPORTED, "%s: version: this etkit reads version %d, the file is version %"
                       JSON_INTEGER_FORMAT, im->file, ETK_JSON_VERSION, json_integer_value(ver));
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes))
        return bad(im, "nodes", "an array of node objects", nodes);

    etk_arena *scratch = etk_arena_new(0);
    if (!scratch)
        return etk_err(im->err, ETK_ENOMEM, "%s: out of memory", im->file);
    const char *version = NULL;
    json_t *meta = json_object_get(root, "metadata");
    if (meta) {
        if (!json_is_object(meta)) {
            rc = bad(im, "metadata", "an object {\"version\", \"attr\"}", meta);
            goto out_scratch;
        }
        if ((rc = check_keys(im, "metadata", meta, meta_keys, "version, attr")))
            goto out_scratch;
        json_t *mv = json_object_get(meta, "version");
        if (mv && (rc = get_string(im, scratch, mv, "metadata.version", true, &version)))
            goto out_scratch;
        if (version && !*version)
            version = NULL;
    }
    etk_trace *t = etk_trace_new(version);
    if (!t) {
        rc = etk_err(im->err, ETK_ENOMEM, "%s: out of memory", im->file);
        goto out_scratch;
    }
    t->has_metadata = true;
    json_t *mattr = meta ? json_object_get(meta, "attr") : NULL;
    if (mattr && (rc = get_attrs(im, t->arena, mattr, "metadata.attr", &t->meta_attr, &t->n_meta_attr)))
        goto out_trace;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        char p[64];
        jpath(p, sizeof p, "nodes[%zu]", i);
        etk_node n;
        etk_arena_reset(scratch);
        if ((rc = get_node(im, scratch, json_array_get(nodes, i), p, &n)))
            goto out_trace;
        if (!etk_trace_add(t, &n)) {
            rc = etk_err(im->err, ETK_ENOMEM, "%s: %s: out of memory", im->file, p);
            goto out_trace;
        }
    }
    etk_arena_free(scratch);
    *out = t;
    return 0;
out_trace:
    etk_trace_free(t);
out_scratch:
    etk_arena_free(scratch);
    return rc;
}

int etk_json_import(const char *json, size_t len, const char *name, etk_trace **out, etk_error *err)
{
    *out = NULL;
    imp im = {name ? name : "<json>", err};
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return etk_err(err, ETK_EFORMAT, "%s: line %d, column %d: malformed JSON: %s", im.file, jerr.line,
                       jerr.column, jerr.text);
    int rc = import_doc(&im, root, out);
    json_decref(root);
    return rc;
}

int etk_json_import_file(const char *path, etk_trace **out, etk_error *err)
{
    *out = NULL;
    char *data;
    size_t len;
    int rc = etk_file_read_all(path, &data, &len, err);
    if (rc)
        return rc;
    rc = etk_json_import(data, len, path, out, err);
    free(data);
    if (!rc)
        (*out)->path = etk_arena_strdup((*out)->arena, path);
    return rc;
}
