/* yamljson.c — reads a YAML document (block or flow style) into a jansson tree, so model
 * presets and block graphs (presets/models/ files) are processed with one JSON API. Scalars
 * become integers, reals, booleans or strings; errors name the file and line: nesting deeper than
 * ETK_YAML_MAX_DEPTH, a duplicate key (both lines), a number out of range. Used by model.c and graph.c. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "model/yamljson.h"
#include "util/check.h"

/* A scalar: integer, real, boolean, null or string. A number out of range is an error (NULL
 * with *err set and *said true), never a saturated or infinite value. */
static json_t *scalar_value(const yaml_event_t *ev, const char *name, bool *said, etk_error *err)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    size_t line = (size_t)ev->start_mark.line + 1;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && n > 0) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if ((size_t)(end - s) == n) {
            if (errno == ERANGE) {
                etk_err(err, ETK_EFORMAT, "%s:%zu: integer %s is out of range (at most %lld)", name, line, s,
                        LLONG_MAX);
                *said = true;
                return NULL;
            }
            return json_integer(v);
        }
        errno = 0;
        double d = strtod(s, &end);
        if ((size_t)(end - s) == n) {
            if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) {
                etk_err(err, ETK_EFORMAT, "%s:%zu: number %s is out of range (at most %g)", name, line, s,
                        DBL_MAX);
                *said = true;
                return NULL;
            }
            if (isfinite(d))
                return json_real(d);
            /* nan, inf: kept as the string written */
        }
        if (!strcmp(s, "true"))
            return json_true();
        if (!strcmp(s, "false"))
            return json_false();
        if (!strcmp(s, "null") || !strcmp(s, "~"))
            return json_null();
    }
    return json_stringn(s, n);
}

static json_t *scalar(const yaml_event_t *ev, const char *name, etk_error *err)
{
    bool said = false;
    json_t *out = scalar_value(ev, name, &said, err);
    if (!out && !said)
        etk_err(err, ETK_EFORMAT, "%s:%zu: scalar is not valid UTF-8 (or out of memory)", name,
                (size_t)ev->start_mark.line + 1);
    return out;
}

/* Recursive descent over parser events; *ev holds the event that starts the node. The depth is
 * bounded by etk_yaml_depth_check before the descent starts. Duplicate keys are errors naming
 * both lines (`lines` maps each key of this mapping to its line). */
static json_t *node(yaml_parser_t *p, yaml_event_t *ev, const char *name, json_t **lines_out, etk_error *err)
{
    if (ev->type == YAML_SCALAR_EVENT)
        return scalar(ev, name, err);
    if (ev->type == YAML_ALIAS_EVENT) {
        etk_err(err, ETK_EFORMAT, "%s:%zu: YAML aliases are not supported", name,
                (size_t)ev->start_mark.line + 1);
        return NULL;
    }
    bool is_map = ev->type == YAML_MAPPING_START_EVENT;
    if (!is_map && ev->type != YAML_SEQUENCE_START_EVENT) {
        etk_err(err, ETK_EFORMAT, "%s:%zu: unexpected YAML event", name, (size_t)ev->start_mark.line + 1);
        return NULL;
    }
    json_t *out = is_map ? json_object() : json_array();
    json_t *lines = is_map ? json_object() : NULL;
    if (!out || (is_map && !lines)) {
        json_decref(out);
        json_decref(lines);
        etk_err(err, ETK_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    for (;;) {
        yaml_event_t k;
        if (!yaml_parser_parse(p, &k)) {
            etk_err(err, ETK_EFORMAT, "%s:%zu: %s", name, (size_t)p->problem_mark.line + 1,
                    p->problem ? p->problem : "YAML syntax error");
            json_decref(out);
            json_decref(lines);
            return NULL;
        }
        if (k.type == YAML_MAPPING_END_EVENT || k.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&k);
            if (lines_out && lines)
                *lines_out = lines;
            else
                json_decref(lines);
            return out;
        }
        if (!is_map) {
            json_t *v = node(p, &k, name, NULL, err);
            yaml_event_delete(&k);
            if (!v) {
                json_decref(out);
                return NULL;
            }
            json_array_append_new(out, v);
            continue;
        }
        if (k.type != YAML_SCALAR_EVENT) {
            etk_err(err, ETK_EFORMAT, "%s:%zu: mapping keys must be plain scalars", name,
                    (size_t)k.start_mark.line + 1);
            yaml_event_delete(&k);
            json_decref(out);
            json_decref(lines);
            return NULL;
        }
        char *key = strndup((const char *)k.data.scalar.value, k.data.scalar.length);
        size_t key_line = (size_t)k.start_mark.line + 1;
        yaml_event_delete(&k);
        json_t *seen = key ? json_object_get(lines, key) : NULL;
        if (seen) {
            etk_err(err, ETK_EFORMAT, "%s:%zu: duplicate key '%s' (first given on line %lld)", name, key_line,
                    key, (long long)json_integer_value(seen));
            free(key);
            json_decref(out);
            json_decref(lines);
            return NULL;
        }
        yaml_event_t v;
        if (!key || !yaml_parser_parse(p, &v)) {
            etk_err(err, ETK_EFORMAT, "%s:%zu: %s", name, (size_t)p->problem_mark.line + 1,
                    p->problem ? p->problem : "YAML syntax error");
            free(key);
            json_decref(out);
            json_decref(lines);
            return NULL;
        }
        json_t *jv = node(p, &v, name, NULL, err);
        yaml_event_delete(&v);
        bool bad = !jv;
        if (jv && (json_object_set_new(out, key, jv) ||
                   json_object_set_new(lines, key, json_integer((json_int_t)key_line)))) {
            etk_err(err, ETK_EFORMAT, "%s:%zu: key is not valid UTF-8 (or out of memory)", name, key_line);
            bad = true;
        }
        if (bad) {
            free(key);
            json_decref(out);
            json_decref(lines);
            return NULL;
        }
        free(key);
    }
}

int etk_yaml_to_json(const char *text, size_t len, const char *name, json_t **out, etk_error *err)
{
    return etk_yaml_to_json_lines(text, len, name, out, NULL, err);
}

int etk_yaml_to_json_lines(const char *text, size_t len, const char *name, json_t **out, json_t **key_lines,
                           etk_error *err)
{
    *out = NULL;
    json_t *kl = NULL;
    int drc = etk_yaml_depth_check(text, len, name, ETK_YAML_MAX_DEPTH, err);
    if (drc)
        return drc;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return etk_err(err, ETK_ENOMEM, "%s: cannot initialize the YAML parser", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0;
    json_t *root = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = etk_err(err, ETK_EFORMAT, "%s:%zu: %s", name, (size_t)p.problem_mark.line + 1,
                         p.problem ? p.problem : "YAML syntax error");
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT || t == YAML_SCALAR_EVENT) {
            if (root) {
                yaml_event_delete(&ev);
                rc = etk_err(err, ETK_EFORMAT, "%s: more than one YAML document", name);
                break;
            }
            root = node(&p, &ev, name, &kl, err);
            yaml_event_delete(&ev);
            if (!root) {
                rc = err ? err->code : ETK_EFORMAT;
                break;
            }
            continue;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    if (rc || !key_lines || !root || !json_is_object(root))
        json_decref(kl);
    else
        *key_lines = kl;
    if (rc) {
        json_decref(root);
        return rc;
    }
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return etk_err(err, ETK_EFORMAT, "%s: expected a YAML mapping at the top level", name);
    }
    *out = root;
    return 0;
}
