/* kineto.c — reads the device side of a PyTorch step for the converter: a Kineto trace
 * (Chrome-trace JSON {"traceEvents": [...]}, categories cpu_op, user_annotation, kernel,
 * gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver) or the bare event list that PyTorch 1.13's
 * CPU profiler exports (no categories, no ids). Only complete events ("ph": "X") are kept, as
 * compact cv_ev records; events are parsed one at a time (jscan.c). Linking them to host ops
 * happens in pytorch.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

static int cat_of(const char *c)
{
    if (!strcmp(c, "cpu_op") || !strcmp(c, "Operator"))
        return EV_CPU_OP;
    if (!strcmp(c, "user_annotation"))
        return EV_ANNOT;
    if (!strcmp(c, "kernel") || !strcmp(c, "Kernel"))
        return EV_KERNEL;
    if (!strcmp(c, "gpu_memcpy") || !strcmp(c, "Memcpy"))
        return EV_MEMCPY;
    if (!strcmp(c, "gpu_memset") || !strcmp(c, "Memset"))
        return EV_MEMSET;
    if (!strcmp(c, "cuda_runtime") || !strcmp(c, "cuda_driver") || !strcmp(c, "Runtime"))
        return EV_RUNTIME;
    return EV_OTHER;
}

static int64_t arg_i64(const json_t *args, const char *key)
{
    int64_t x;
    const json_t *v = json_object_get(args, key);
    return v && jv_i64(v, &x) ? x : -1;
}

static int64_t loose_i64(const json_t *v)
{
    int64_t x;
    return v && jv_i64(v, &x) ? x : 0;
}

typedef struct dstate {
    bool any_cat, any_rf;
} dstate;

static int parse_event(jscan *s, etk_arena *a, cv_dev *d, dstate *ds, const json_t *e, size_t i,
                       size_t off, etk_error *err)
{
    if (!json_is_object(e))
        return etk_err(err, ETK_EFORMAT, "%s: traceEvents[%zu] (line %zu): expected an event "
                       "object", s->path, i, js_line(s, off));
    const json_t *ph = json_object_get(e, "ph");
    if (ph && (!json_is_string(ph) || strcmp(json_string_value(ph), "X")))
        return 0; /* metadata, flows, instants: not timed work */
    const json_t *cat = json_object_get(e, "cat");
    int c;
    if (cat) {
        if (!json_is_string(cat))
            return etk_err(err, ETK_EFORMAT, "%s: traceEvents[%zu] (line %zu): \"cat\" must be a "
                           "string", s->path, i, js_line(s, off));
        ds->any_cat = true;
        c = cat_of(json_string_value(cat));
    } else {
        c = EV_CPU_OP; /* PyTorch 1.13 profiler list: every event is an operator */
    }
    if (c == EV_OTHER)
        return 0;
    const json_t *name = json_object_get(e, "name");
    const json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
    if (!json_is_string(name))
        return etk_err(err, ETK_EFORMAT, "%s: traceEvents[%zu] (line %zu): \"name\" must be a "
                       "string", s->path, i, js_line(s, off));
    if (!json_is_number(ts) || (dur && !json_is_number(dur)))
        return etk_err(err, ETK_EFORMAT, "%s: traceEvents[%zu] \"%s\" (line %zu): \"ts\" and "
                       "\"dur\" must be numbers (microseconds)", s->path, i,
                       json_string_value(name), js_line(s, off));
    if (cv_grow((void **)&d->ev, &d->cap_ev, d->n_ev, sizeof *d->ev))
        return etk_err(err, ETK_ENOMEM, "out of memory");
    cv_ev *ev = &d->ev[d->n_ev++];
    memset(ev, 0, sizeof *ev);
    ev->cat = (uint8_t)c;
    ev->host = -1;
    ev->name = etk_arena_strdup(a, json_string_value(name));
    ev->ts_ns = (int64_t)llround(json_number_value(ts) * 1000.0);
    ev->dur_ns = dur ? (int64_t)llround(json_number_value(dur) * 1000.0) : 0;
    if (ev->dur_ns < 0)
        ev->dur_ns = 0;
    ev->pid = loose_i64(json_object_get(e, "pid"));
    ev->tid = loose_i64(json_object_get(e, "tid"));
    const json_t *args = json_object_get(e, "args");
    ev->ext_id = arg_i64(args, "External id");
    ev->rf_id = arg_i64(args, "Record function id");
    ev->corr = arg_i64(args, "correlation");
    ev->stream = arg_i64(args, "stream");
    if (ev->rf_id >= 0)
        ds->any_rf = true;
    const json_t *pg = json_object_get(args, "Process Group Name");
    if (json_is_string(pg))
        ev->pg_name = etk_arena_strdup(a, json_string_value(pg));
    return 0;
}

static int parse_events(jscan *s, etk_arena *a, cv_dev *d, dstate *ds, etk_error *err)
{
    int rc = js_expect(s, '[', "start of the event list", err);
    if (rc)
        return rc;
    js_ws(s);
    if (s->pos < s->len && s->buf[s->pos] == ']') {
        s->pos++;
        return 0;
    }
    for (size_t i = 0;; i++) {
        js_ws(s);
        size_t off = s->pos;
        json_t *e;
        if ((rc = js_value(s, &e, err)))
            return rc;
        rc = parse_event(s, a, d, ds, e, i, off, err);
        json_decref(e);
        if (rc)
            return rc;
        rc = js_next(s, ']', "the event list", err);
        if (rc <= 0)
            return rc;
    }
}

int cv_dev_parse(const char *path, etk_arena *a, cv_dev *d, uint64_t *bytes, etk_error *err)
{
    char *buf;
    size_t len;
    int rc = etk_file_read_all(path, &buf, &len, err);
    if (rc)
        return rc;
    *bytes += len;
    jscan s = {buf, len, 0, path};
    dstate ds = {false, false};
    bool have_events = false;
    d->rank = -1;
    js_ws(&s);
    if (s.pos >= len) {
        rc = etk_err(err, ETK_EFORMAT, "%s: empty file: expected a Kineto trace "
                     "({\"traceEvents\": [...]}) or a profiler event list", path);
        goto out;
    }
    if (buf[s.pos] == '[') {
        have_events = true;
        if ((rc = parse_events(&s, a, d, &ds, err)))
            goto out;
    } else if (buf[s.pos] == '{') {
        s.pos++;
        js_ws(&s);
        if (s.pos < len && buf[s.pos] == '}') {
            s.pos++;
        } else {
            for (;;) {
                char key[64];
                if ((rc = js_key(&s, key, sizeof key, err)))
                    goto out;
                if (!strcmp(key, "traceEvents")) {
                    have_events = true;
                    js_ws(&s);
                    if (s.pos < len && buf[s.pos] != '[') {
                        rc = etk_err(err, ETK_EFORMAT, "%s: line %zu: \"traceEvents\" must be a "
                                     "list of events", path, js_line(&s, s.pos));
                        goto out;
                    }
                    if ((rc = parse_events(&s, a, d, &ds, err)))
                        goto out;
                } else if (!strcmp(key, "distributedInfo")) {
                    json_t *v;
                    if ((rc = js_value(&s, &v, err)))
                        goto out;
                    int64_t r;
                    if (jv_i64(json_object_get(v, "rank"), &r))
                        d->rank = r;
                    json_decref(v);
                } else {
                    size_t x, y;
                    if ((rc = js_skip(&s, &x, &y, err)))
                        goto out;
                    s.pos = y;
                }
                rc = js_next(&s, '}', "the top-level object", err);
                if (rc < 0)
                    goto out;
                if (rc == 0)
                    break;
            }
        }
    } else {
        rc = etk_err(err, ETK_EFORMAT, "%s: line %zu: expected a Kineto trace ({\"traceEvents\": "
                     "[...]}) or a profiler event list, found '%c'", path, js_line(&s, s.pos),
                     buf[s.pos]);
        goto out;
    }
    rc = 0;
    if (!have_events) {
        rc = etk_err(err, ETK_EFORMAT, "%s: no \"traceEvents\" list: not a Kineto/profiler trace",
                     path);
        goto out;
    }
    d->profiler_list = !ds.any_cat && !ds.any_rf;
    d->has_rf = ds.any_rf;
out:
    free(buf);
    return rc;
}
