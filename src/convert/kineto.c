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
#include "etkit/progress.h"

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
    if (!strcmp(c, "cuda_sync"))
        return EV_SYNC;
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

/* Bytes of one element of a Kineto "Input type" entry; 0 for non-tensors. */
static uint64_t elem_bytes(const char *t)
{
    static const struct {
        const char *name;
        uint64_t bytes;
    } tab[] = {{"float", 4},        {"double", 8},       {"c10::Half", 2},   {"c10::BFloat16", 2},
               {"long int", 8},     {"long", 8},         {"int", 4},         {"short int", 2},
               {"bool", 1},         {"unsigned char", 1}, {"signed char", 1}, {"char", 1},
               {"c10::complex<float>", 8}, {"c10::complex<double>", 16},
               {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1}, {"Float", 4},
               {"Half", 2},         {"BFloat16", 2},     {"Int", 4},         {"Long", 8}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(t, tab[i].name))
            return tab[i].bytes;
    return 0;
}

/* Sum over the inputs of prod(dims) x element bytes. */
static uint64_t dims_bytes(const json_t *dims, const json_t *types)
{
    uint64_t sum = 0;
    size_t i;
    const json_t *d;
    json_array_foreach(dims, i, d) {
        const json_t *t = json_array_get(types, i);
        if (!json_is_array(d) || !json_is_string(t) || json_array_size(d) == 0)
            continue;
        uint64_t eb = elem_bytes(json_string_value(t)), n = 1;
        size_t k;
        const json_t *x;
        json_array_foreach(d, k, x) {
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) > (json_int_t)1 << 40) {
                n = 0;
                break;
            }
            n *= (uint64_t)json_integer_value(x);
            if (n > (uint64_t)1 << 50) {
                n = 0;
                break;
            }
        }
        sum += n * eb;
    }
    return sum;
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
    double tsv = json_number_value(ts) * 1000.0, durv = dur ? json_number_value(dur) * 1000.0 : 0;
    if (!isfinite(tsv) || fabs(tsv) > 9.0e18 || !isfinite(durv) || durv > 9.0e18)
        return etk_err(err, ETK_EFORMAT, "%s: traceEvents[%zu] \"%s\" (line %zu): \"ts\" %g / "
                       "\"dur\" %g us do not fit a 64-bit nanosecond time (at most ~9.2e15 us)",
                       s->path, i, json_string_value(name), js_line(s, off),
                       json_number_value(ts), dur ? json_number_value(dur) : 0.0);
    if (durv < 0)
        return etk_err(err, ETK_EFORMAT, "%s: traceEvents[%zu] \"%s\" (line %zu): \"dur\" is "
                       "negative (%g us); a duration must be >= 0", s->path, i,
                       json_string_value(name), js_line(s, off), json_number_value(dur));
    if (cv_grow((void **)&d->ev, &d->cap_ev, d->n_ev, sizeof *d->ev))
        return etk_err(err, ETK_ENOMEM, "out of memory");
    cv_ev *ev = &d->ev[d->n_ev++];
    memset(ev, 0, sizeof *ev);
    ev->cat = (uint8_t)c;
    ev->host = -1;
    ev->name = etk_arena_strdup(a, json_string_value(name));
    ev->ts_ns = (int64_t)llround(tsv);
    ev->dur_ns = (int64_t)llround(durv);
    ev->pid = loose_i64(json_object_get(e, "pid"));
    ev->tid = loose_i64(json_object_get(e, "tid"));
    const json_t *args = json_object_get(e, "args");
    ev->ext_id = arg_i64(args, "External id");
    ev->rf_id = arg_i64(args, "Record function id");
    ev->corr = arg_i64(args, "correlation");
    ev->stream = arg_i64(args, "stream");
    if (ev->rf_id >= 0)
        ds->any_rf = true;
    ev->wait_stream = arg_i64(args, "wait_on_stream");
    ev->wait_corr = arg_i64(args, "wait_on_cuda_event_record_corr_id");
    ev->msg_bytes = -1;
    const json_t *pg = json_object_get(args, "Process Group Name");
    if (json_is_string(pg))
        ev->pg_name = etk_arena_strdup(a, json_string_value(pg));
    const json_t *cn = json_object_get(args, "Collective name");
    if (json_is_string(cn))
        ev->coll_name = etk_arena_strdup(a, json_string_value(cn));
    if (c == EV_KERNEL) {
        /* NCCL kernels of PyTorch 2.1+: message sizes in elements and the dtype */
        int64_t in = arg_i64(args, "In msg nelems"), out = arg_i64(args, "Out msg nelems");
        const json_t *dt = json_object_get(args, "dtype");
        uint64_t eb = json_is_string(dt) ? elem_bytes(json_string_value(dt)) : 0;
        int64_t ne = in > out ? in : out;
        if (ne >= 0 && eb && ne < ((int64_t)1 << 50))
            ev->msg_bytes = ne * (int64_t)eb;
    }
    if (c == EV_CPU_OP || c == EV_ANNOT) {
        const json_t *dims = json_object_get(args, "Input Dims");
        const json_t *types = json_object_get(args, "Input type");
        if (json_is_array(dims)) {
            ev->in_bytes = dims_bytes(dims, types);
            ev->in_dims = jv_dump(a, dims);
            ev->in_types = jv_dump(a, types);
        }
    }
    return 0;
}

static int parse_events(jscan *s, etk_arena *a, cv_dev *d, dstate *ds, etk_progress *pr, etk_error *err)
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
        etk_progress_update(pr, s->pos >> 20);
        if (rc)
            return rc;
        rc = js_next(s, ']', "the event list", err);
        if (rc <= 0)
            return rc;
    }
}

/* distributedInfo: rank in [0, world_size), and the process groups of pg_config. */
static int dist_info(jscan *s, etk_arena *a, cv_dev *d, const json_t *v, etk_error *err)
{
    int64_t r, w;
    const json_t *jr = json_object_get(v, "rank"), *jw = json_object_get(v, "world_size");
    if (!json_is_object(v))
        return etk_err(err, ETK_EFORMAT, "%s: \"distributedInfo\" must be an object", s->path);
    if (jw) {
        if (!jv_i64(jw, &w) || w < 1 || w > (1 << 24))
            return etk_err(err, ETK_EFORMAT, "%s: distributedInfo.world_size must be an integer "
                           "from 1 to 16777216", s->path);
        d->world_size = w;
    }
    if (jr) {
        if (!jv_i64(jr, &r) || r < 0 || r >= (jw ? w : (1 << 24)))
            return etk_err(err, ETK_EFORMAT, "%s: distributedInfo.rank must be an integer in "
                           "[0, %lld) (the world_size%s)", s->path,
                           (long long)(jw ? w : (1 << 24)), jw ? "" : " limit; no world_size given");
        d->rank = r;
    }
    const json_t *pgc = json_object_get(v, "pg_config");
    size_t i;
    const json_t *g;
    json_array_foreach(pgc, i, g) {
        const json_t *nm = json_object_get(g, "pg_name"), *ranks = json_object_get(g, "ranks");
        if (!json_is_string(nm) || !json_is_array(ranks) || json_array_size(ranks) == 0 ||
            json_array_size(ranks) > (1 << 24))
            continue;
        if (cv_grow((void **)&d->pgs, &d->cap_pgs, d->n_pgs, sizeof *d->pgs))
            return etk_err(err, ETK_ENOMEM, "out of memory");
        cv_pg *pg = &d->pgs[d->n_pgs];
        memset(pg, 0, sizeof *pg);
        pg->name = etk_arena_strdup(a, json_string_value(nm));
        pg->backend_id = -1;
        pg->n_ranks = (uint32_t)json_array_size(ranks);
        pg->ranks = etk_arena_alloc(a, sizeof(uint32_t) * pg->n_ranks);
        for (size_t k = 0; k < pg->n_ranks; k++) {
            int64_t x;
            if (!jv_i64(json_array_get(ranks, k), &x) || x < 0 || x >= (1 << 24))
                return etk_err(err, ETK_EFORMAT, "%s: distributedInfo.pg_config[%zu].ranks[%zu] "
                               "is not a rank number", s->path, i, k);
            pg->ranks[k] = (uint32_t)x;
        }
        d->n_pgs++;
    }
    return 0;
}

int cv_dev_parse(const char *path, etk_arena *a, cv_dev *d, uint64_t *bytes, FILE *prog, etk_error *err)
{
    char *buf;
    size_t len;
    int rc = etk_file_read_all(path, &buf, &len, err);
    if (rc)
        return rc;
    *bytes += len;
    etk_progress pr;
    etk_progress_begin(&pr, prog, !prog, "device trace MiB parsed", js_mib(len));
    jscan s = {buf, len, 0, path};
    dstate ds = {false, false};
    bool have_events = false;
    d->rank = -1;
    d->world_size = -1;
    js_ws(&s);
    if (s.pos >= len) {
        rc = etk_err(err, ETK_EFORMAT, "%s: empty file: expected a Kineto trace "
                     "({\"traceEvents\": [...]}) or a profiler event list", path);
        goto out;
    }
    if (buf[s.pos] == '[') {
        have_events = true;
        if ((rc = parse_events(&s, a, d, &ds, &pr, err)))
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
                    if ((rc = parse_events(&s, a, d, &ds, &pr, err)))
                        goto out;
                } else if (!strcmp(key, "distributedInfo")) {
                    json_t *v;
                    if ((rc = js_value(&s, &v, err)))
                        goto out;
                    rc = dist_info(&s, a, d, v, err);
                    json_decref(v);
                    if (rc)
                        goto out;
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
    etk_progress_end(&pr);
    free(buf);
    return rc;
}
