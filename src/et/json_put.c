/* json_put.c — the output side of the JSON forms: base64 (etk_base64_*), UTF-8 checks, and
 * writing JSON text (escaped strings, integers past 2^53 as strings, non-finite and exact
 * doubles, attribute values, io tensors) to a FILE. json_write.c writes whole traces with it;
 * etk_json_text is the public escaper. */
#include "etkit/json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/json_priv.h"

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
void json_put_str_replacing(FILE *f, const char *s)
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

void *etk_json_count(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
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

void json_put_str(FILE *f, const char *s)
{
    if (!s)
        fputs("null", f);
    else
        put_strn(f, s, strlen(s));
}

void json_put_u64(FILE *f, uint64_t v)
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

void json_put_u64_list(FILE *f, const uint64_t *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        json_put_u64(f, v[i]);
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
        json_put_u64(f, a->v.u);
        return;
    case ETK_ATTR_BOOL: fputs(a->v.b ? "true" : "false", f); return;
    case ETK_ATTR_STRING: json_put_str(f, a->v.s ? a->v.s : ""); return;
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
        case ETK_ATTR_UINT32_LIST: case ETK_ATTR_FIXED32_LIST: json_put_u64(f, a->v.u32[i]); break;
        case ETK_ATTR_UINT64_LIST: case ETK_ATTR_FIXED64_LIST: json_put_u64(f, a->v.u64[i]); break;
        case ETK_ATTR_BOOL_LIST: fputs(a->v.bl[i] ? "true" : "false", f); break;
        case ETK_ATTR_STRING_LIST: json_put_str(f, a->v.sl[i] ? a->v.sl[i] : ""); break;
        case ETK_ATTR_BYTES_LIST: put_base64(f, a->v.bytesl[i].data, a->v.bytesl[i].len); break;
        default: break;
        }
    }
    fputc(']', f);
}

void json_put_attrs(FILE *f, const etk_attr *attr, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        const etk_attr *a = &attr[i];
        if (i)
            fputs(", ", f);
        fputs("{\"name\": ", f);
        json_put_str(f, a->name ? a->name : "");
        if (a->doc) {
            fputs(", \"doc\": ", f);
            json_put_str(f, a->doc);
        }
        if (a->kind == ETK_ATTR_NONE) {
            fputs(", \"kind\": \"none\"}", f);
            continue;
        }
        fputs(", \"kind\": ", f);
        const char *kn = etk_attr_kind_name(a->kind);
        json_put_str(f, kn ? kn : "none");
        fputs(", \"value\": ", f);
        put_attr_value(f, a);
        fputc('}', f);
    }
    fputc(']', f);
}

void json_put_io(FILE *f, const char *key, const etk_io *io)
{
    fprintf(f, ", \"%s\": {", key);
    const char *sep = "";
    if (io->values) {
        fputs("\"values\": ", f);
        json_put_str(f, io->values);
        sep = ", ";
    }
    if (io->shapes) {
        fprintf(f, "%s\"shapes\": ", sep);
        json_put_str(f, io->shapes);
        sep = ", ";
    }
    if (io->types) {
        fprintf(f, "%s\"types\": ", sep);
        json_put_str(f, io->types);
    }
    fputc('}', f);
}
