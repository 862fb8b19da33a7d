/* jscan.c — walks large JSON documents (PyTorch host traces, Kineto traces: hundreds of MB) one
 * element at a time for the converter. A cheap bracket scan finds where each element ends and
 * jansson parses just that slice, so the converter never holds the DOM of the whole document
 * (jansson's DOM is ~10x the text). Also: small readers for the values the converter needs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

void js_ws(jscan *s)
{
    while (s->pos < s->len) {
        char c = s->buf[s->pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
            break;
        s->pos++;
    }
}

size_t js_line(const jscan *s, size_t off)
{
    size_t line = 1;
    if (off > s->len)
        off = s->len;
    for (size_t i = 0; i < off; i++)
        line += s->buf[i] == '\n';
    return line;
}

static int truncated(jscan *s, size_t start, const char *what, etk_error *err)
{
    return etk_err(err, ETK_EFORMAT,
                   "%s: truncated JSON: %s starting at line %zu (byte %zu) is not closed before "
                   "the end of the file (%zu bytes)",
                   s->path, what, js_line(s, start), start, s->len);
}

int js_skip(jscan *s, size_t *start, size_t *end, etk_error *err)
{
    js_ws(s);
    size_t p = s->pos;
    *start = p;
    if (p >= s->len)
        return etk_err(err, ETK_EFORMAT, "%s: truncated JSON: a value was expected at byte %zu "
                       "(line %zu) but the file ends", s->path, p, js_line(s, p));
    char c = s->buf[p];
    if (c == '"') {
        for (p++; p < s->len; p++) {
            if (s->buf[p] == '\\')
                p++;
            else if (s->buf[p] == '"')
                break;
        }
        if (p >= s->len)
            return truncated(s, *start, "a string", err);
        *end = p + 1;
        return 0;
    }
    if (c == '{' || c == '[') {
        size_t depth = 0;
        for (; p < s->len; p++) {
            char d = s->buf[p];
            if (d == '"') {
                for (p++; p < s->len && s->buf[p] != '"'; p++)
                    if (s->buf[p] == '\\')
                        p++;
                if (p >= s->len)
                    break;
            } else if (d == '{' || d == '[') {
                depth++;
            } else if (d == '}' || d == ']') {
                if (--depth == 0) {
                    *end = p + 1;
                    return 0;
                }
            }
        }
        return truncated(s, *start, c == '{' ? "an object" : "an array", err);
    }
    while (p < s->len) {
        char d = s->buf[p];
        if (d == ',' || d == ']' || d == '}' || d == ' ' || d == '\n' || d == '\r' || d == '\t')
            break;
        p++;
    }
    if (p == *start)
        return etk_err(err, ETK_EFORMAT, "%s: line %zu (byte %zu): expected a JSON value, found '%c'",
                       s->path, js_line(s, p), p, c);
    *end = p;
    return 0;
}

int js_value(jscan *s, json_t **out, etk_error *err)
{
    size_t a, b;
    int rc = js_skip(s, &a, &b, err);
    if (rc)
        return rc;
    json_error_t je;
    json_t *v = json_loadb(s->buf + a, b - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v)
        return etk_err(err, ETK_EFORMAT, "%s: line %zu: invalid JSON: %s", s->path,
                       js_line(s, a) + (je.line > 0 ? (size_t)je.line - 1 : 0), je.text);
    s->pos = b;
    *out = v;
    return 0;
}

int js_expect(jscan *s, char c, const char *what, etk_error *err)
{
    js_ws(s);
    if (s->pos >= s->len)
        return etk_err(err, ETK_EFORMAT, "%s: truncated JSON: expected '%c' (%s) at byte %zu but "
                       "the file ends", s->path, c, what, s->pos);
    if (s->buf[s->pos] != c)
        return etk_err(err, ETK_EFORMAT, "%s: line %zu: expected '%c' (%s), found '%c'", s->path,
                       js_line(s, s->pos), c, what, s->buf[s->pos]);
    s->pos++;
    return 0;
}

int js_key(jscan *s, char *key, size_t cap, etk_error *err)
{
    js_ws(s);
    if (s->pos >= s->len || s->buf[s->pos] != '"')
        return etk_err(err, ETK_EFORMAT, "%s: line %zu: expected a quoted object key", s->path,
                       js_line(s, s->pos));
    json_t *k;
    int rc = js_value(s, &k, err);
    if (rc)
        return rc;
    snprintf(key, cap, "%s", json_string_value(k));
    json_decref(k);
    return js_expect(s, ':', "after an object key", err);
}

int js_next(jscan *s, char close, const char *what, etk_error *err)
{
    js_ws(s);
    if (s->pos >= s->len)
        return etk_err(err, ETK_EFORMAT, "%s: truncated JSON: %s is not closed before the end of "
                       "the file (%zu bytes)", s->path, what, s->len);
    char c = s->buf[s->pos++];
    if (c == ',')
        return 1;
    if (c == close)
        return 0;
    return etk_err(err, ETK_EFORMAT, "%s: line %zu: expected ',' or '%c' in %s, found '%c'",
                   s->path, js_line(s, s->pos - 1), close, what, c);
}

bool jv_i64(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d) || fabs(d) > 9.2e18)
            return false;
        *out = (int64_t)d;
        return true;
    }
    if (json_is_string(v)) {
        const char *p = json_string_value(v);
        char *end;
        if (!*p)
            return false;
        long long x = strtoll(p, &end, 10);
        if (*end)
            return false;
        *out = x;
        return true;
    }
    return false;
}

char *jv_dump(etk_arena *a, const json_t *v)
{
    if (!v)
        return NULL;
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return NULL;
    char *r = etk_arena_strdup(a, s);
    free(s);
    return r;
}

static bool is_tensor_tuple(const json_t *v)
{
    if (!json_is_array(v) || json_array_size(v) != 6 || !json_is_string(json_array_get(v, 5)))
        return false;
    for (size_t i = 0; i < 5; i++)
        if (!json_is_integer(json_array_get(v, i)))
            return false;
    return true;
}

uint64_t jv_tensor_bytes(const json_t *v)
{
    if (!json_is_array(v))
        return 0;
    if (is_tensor_tuple(v)) {
        json_int_t n = json_integer_value(json_array_get(v, 3));
        json_int_t b = json_integer_value(json_array_get(v, 4));
        return n > 0 && b > 0 ? (uint64_t)n * (uint64_t)b : 0;
    }
    uint64_t sum = 0;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) sum += jv_tensor_bytes(e);
    return sum;
}
