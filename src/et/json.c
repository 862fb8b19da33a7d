/* json.c — JSON forms of a Chakra trace (see include/etkit/json.h and docs/json.md).
 *
 * Where it sits in the flow: `etkit json` reads a .et with the reader (reader.c), streams it out
 * here as the lossless etkit form or Chakra's feeder form, and `etkit json --to-et` parses the
 * lossless form back into an etk_trace that the writer (writer.c) encodes. The lossless form is
 * the text view of the wire format: et -> json -> et is byte-exact for canonical files.
 *
 * Writing is streaming (one node at a time, no JSON tree); reading uses jansson and checks every
 * value strictly, naming the JSON path of the first thing that is wrong. This file is the
 * reading side; json_write.c and json_put.c write (module map: json_priv.h). */
#include "etkit/json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SAFE_INT (UINT64_C(1) << 53) /* largest magnitude written as a JSON number */
#define QNAN_BITS UINT64_C(0x7ff8000000000000)
#define QNAN_BITS_F UINT32_C(0x7fc00000)

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
        /* a finite number past the float range would become Infinity: an error, never a silent
         * change of value (infinity is written "Infinity") */
        double d = json_number_value(v);
        if (fabs(d) >= (double)FLT_MAX + ldexp(1, 103)) /* rounds past FLT_MAX (half an ulp) */
            return etk_err(im->err, ETK_EFORMAT, "%s: %s: expected a number that fits a 32-bit float "
                           "(|x| <= 3.4028235e38; \"Infinity\" for infinity), got %g", im->file, path, d);
        *out = (float)d;
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
