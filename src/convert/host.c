/* host.c — reads a PyTorch host execution trace (ExecutionTraceObserver JSON, schemas 1.0.1 to
 * 1.1.1) into the converter's compact op table (cv_host). Both node layouts are read: 1.0.1
 * (PyTorch 1.13: `parent`, flat input/output lists, attributes as node keys) and 1.0.2+
 * (`ctrl_deps`, {values, shapes, types} objects, `attrs` list). Nodes are parsed one at a time
 * (jscan.c), so memory stays near the size of the text. Process groups declared by the
 * `## process_group:init ##` node are collected for the comm-group JSON. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"
#include "etkit/progress.h"

static const char *const known_schemas[] = {"1.0.1", "1.0.2", "1.0.3", "1.1.0", "1.1.1"};

int cv_grow(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, nc * sz);
    if (!p)
        return ETK_ENOMEM;
    *arr = p;
    *cap = nc;
    return 0;
}

void cv_warn(etk_convert_stats *st, bool quiet, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!quiet)
        fprintf(stderr, "etkit convert: warning: %s\n", msg);
    if (st) {
        if (st->n_warnings < ETK_CONVERT_MAX_WARN)
            snprintf(st->warnings[st->n_warnings], sizeof st->warnings[0], "%s", msg);
        st->n_warnings++;
    }
}

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Context for messages about one node. */
typedef struct nctx {
    jscan *s;
    size_t index, off;
    int64_t id;
} nctx;

static int node_err(const nctx *c, etk_error *err, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->id >= 0)
        return etk_err(err, ETK_EFORMAT, "%s: nodes[%zu] (id %lld, line %zu): %s", c->s->path,
                       c->index, (long long)c->id, js_line(c->s, c->off), what);
    return etk_err(err, ETK_EFORMAT, "%s: nodes[%zu] (line %zu): %s", c->s->path, c->index,
                   js_line(c->s, c->off), what);
}

static int get_uint(const nctx *c, const json_t *v, const char *key, uint64_t *out, etk_error *err)
{
    int64_t x;
    if (!jv_i64(v, &x) || x < 0)
        return node_err(c, err, "\"%s\" must be a non-negative integer, got %s", key, jtype(v));
    *out = (uint64_t)x;
    return 0;
}

/* One of the per-op attributes (1.0.1: node keys; 1.0.2+: entries of "attrs"). */
static int set_attr(const nctx *c, cv_op *op, etk_arena *a, const char *name, const json_t *v,
                    etk_error *err)
{
    uint64_t *dst = NULL;
    if (!strcmp(name, "rf_id"))
        dst = &op->rf_id;
    else if (!strcmp(name, "fw_parent"))
        dst = &op->fw_parent;
    else if (!strcmp(name, "tid"))
        dst = &op->tid;
    else if (!strcmp(name, "fw_tid"))
        dst = &op->fw_tid;
    else if (!strcmp(name, "scope"))
        dst = &op->scope;
    if (dst) {
        int64_t x;
        if (!jv_i64(v, &x))
            return node_err(c, err, "attribute \"%s\" must be an integer, got %s", name, jtype(v));
        *dst = (uint64_t)x;
    } else if (!strcmp(name, "seq_id")) {
        if (!jv_i64(v, &op->seq_id))
            return node_err(c, err, "attribute \"seq_id\" must be an integer, got %s", jtype(v));
    } else if (!strcmp(name, "pg_name") && json_is_string(v)) {
        /* PyTorch 2.4+ record_param_comms attrs name the group directly */
        op->attr_pg = etk_arena_strdup(a, json_string_value(v));
    } else if (!strcmp(name, "op_schema")) {
        if (!json_is_string(v))
            return node_err(c, err, "attribute \"op_schema\" must be a string, got %s", jtype(v));
        op->op_schema = etk_arena_strdup(a, json_string_value(v));
    }
    return 0;
}

static int64_t us_to_ns(const json_t *v)
{
    if (!json_is_number(v))
        return -1;
    double d = json_number_value(v);
    return d >= 0 ? (int64_t)llround(d * 1000.0) : -1;
}

/* "## process_group:init ##": inputs.values[0] is a string holding a JSON list of
 * {pg_name, backend_id, ranks, group_size, ...}. */
static int parse_pg_init(const nctx *c, cv_host *h, const json_t *values, etk_error *err)
{
    const json_t *s = json_array_get(values, 0);
    if (!json_is_string(s))
        return node_err(c, err, "process_group:init: inputs.values[0] must be a string holding "
                        "the JSON list of process groups, got %s", s ? jtype(s) : "nothing");
    json_error_t je;
    json_t *list = json_loads(json_string_value(s), JSON_DECODE_ANY, &je);
    if (!list || !json_is_array(list)) {
        json_decref(list);
        return node_err(c, err, "process_group:init: inputs.values[0] is not a JSON list of "
                        "process groups (%s)", list ? "not a list" : je.text);
    }
    size_t i;
    json_t *g;
    json_array_foreach(list, i, g) {
        const json_t *nm = json_object_get(g, "pg_name");
        char namebuf[64];
        int64_t x;
        if (json_is_string(nm))
            snprintf(namebuf, sizeof namebuf, "%s", json_string_value(nm));
        else if (jv_i64(nm, &x))
            snprintf(namebuf, sizeof namebuf, "%lld", (long long)x);
        else {
            json_decref(list);
            return node_err(c, err, "process_group:init: group %zu has no \"pg_name\" string", i);
        }
        if (cv_grow((void **)&h->pgs, &h->cap_pgs, h->n_pgs, sizeof *h->pgs)) {
            json_decref(list);
            return etk_err(err, ETK_ENOMEM, "out of memory");
        }
        cv_pg *pg = &h->pgs[h->n_pgs];
        memset(pg, 0, sizeof *pg);
        pg->name = etk_arena_strdup(h->arena, namebuf);
        pg->backend_id = jv_i64(json_object_get(g, "backend_id"), &x) ? x : -1;
        const json_t *ranks = json_object_get(g, "ranks");
        int64_t gsize = 0;
        jv_i64(json_object_get(g, "group_size"), &gsize);
        size_t nr = json_is_array(ranks) ? json_array_size(ranks) : 0;
        if (nr == 0 && gsize > 0 && gsize < (1 << 24)) {
            /* PyTorch writes ranks [] for the default group: all group_size ranks */
            pg->n_ranks = (uint32_t)gsize;
            pg->ranks = etk_arena_alloc(h->arena, sizeof(uint32_t) * (size_t)gsize);
            for (int64_t r = 0; r < gsize; r++)
                pg->ranks[r] = (uint32_t)r;
        } else if (nr > 0) {
            pg->n_ranks = (uint32_t)nr;
            pg->ranks = etk_arena_alloc(h->arena, sizeof(uint32_t) * nr);
            for (size_t k = 0; k < nr; k++) {
                if (!jv_i64(json_array_get(ranks, k), &x) || x < 0 || x > UINT32_MAX) {
                    json_decref(list);
                    return node_err(c, err, "process_group:init: group \"%s\" ranks[%zu] is not a "
                                    "rank number", namebuf, k);
                }
                pg->ranks[k] = (uint32_t)x;
            }
        }
        h->n_pgs++;
    }
    json_decref(list);
    return 0;
}

static bool is_root(const char *name, const char *what)
{
    size_t n = strlen(name), w = strlen(what);
    return !strncmp(name, "[pytorch|profiler|execution_", 28) && n > w &&
           !strcmp(name + n - w, what);
}

/* Names whose inputs hold collective/point-to-point hints (group, peer, tag). */
static bool wants_hints(const char *name)
{
    return strstr(name, "record_param_comms") || strstr(name, "c10d::") || strstr(name, "nccl:") ||
           strstr(name, "send") || strstr(name, "recv");
}

/* Top-level scalar inputs, and strings one list deep (PyTorch 2.x passes the group as a
 * (pg_name, pg_desc) tuple). */
static void collect_hints(cv_op *op, etk_arena *a, const json_t *values, int depth)
{
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v) {
        if (json_is_string(v) && op->n_strs < 4)
            op->strs[op->n_strs++] = etk_arena_strdup(a, json_string_value(v));
        else if (depth == 0 && json_is_integer(v) && op->n_ints < 4)
            op->ints[op->n_ints++] = (int64_t)json_integer_value(v);
        else if (depth == 0 && json_is_array(v) && json_array_size(v) <= 4)
            collect_hints(op, a, v, 1);
    }
}

/* The raw text of a node's input/output values, shapes and types, found by walking the node's
 * text (already validated by jansson): kept byte for byte, so numbers keep their spelling
 * (jansson would print 0.1 as 0.10000000000000001) and nothing is re-serialized.
 * slot: 0..2 inputs values/shapes/types, 3..5 outputs. Returns false if the walk fails. */
static bool raw_io(const jscan *s, size_t a, size_t b, etk_arena *ar, const char *out[6])
{
    static const char *const flat[6] = {"inputs", "input_shapes", "input_types",
                                        "outputs", "output_shapes", "output_types"};
    static const char *const sub[3] = {"values", "shapes", "types"};
    jscan n = {s->buf + a, b - a, 0, s->path};
    etk_error e;
    if (js_expect(&n, '{', "node", &e))
        return false;
    js_ws(&n);
    if (n.pos < n.len && n.buf[n.pos] == '}')
        return true;
    for (;;) {
        char key[32];
        size_t x, y;
        if (js_key(&n, key, sizeof key, &e) || js_skip(&n, &x, &y, &e))
            return false;
        int io = !strcmp(key, "inputs") ? 0 : !strcmp(key, "outputs") ? 3 : -1;
        if (io >= 0 && n.buf[x] == '{') {
            jscan m = {n.buf + x, y - x, 1, s->path};
            js_ws(&m);
            while (m.pos < m.len && m.buf[m.pos] != '}') {
                char k2[16];
                size_t u, v;
                if (js_key(&m, k2, sizeof k2, &e) || js_skip(&m, &u, &v, &e))
                    return false;
                m.pos = v;
                for (int k = 0; k < 3; k++)
                    if (!strcmp(k2, sub[k]))
                        out[io + k] = etk_arena_strndup(ar, m.buf + u, v - u);
                if (js_next(&m, '}', "inputs", &e) <= 0)
                    break;
                js_ws(&m);
            }
        } else {
            for (int k = 0; k < 6; k++)
                if (!strcmp(key, flat[k]))
                    out[k] = etk_arena_strndup(ar, n.buf + x, y - x);
        }
        n.pos = y;
        int more = js_next(&n, '}', "node", &e);
        if (more < 0)
            return false;
        if (more == 0)
            return true;
    }
}

static int parse_node(cv_host *h, jscan *s, const json_t *n, size_t index, size_t off, size_t end,
                      etk_convert_stats *st, etk_error *err)
{
    nctx c = {s, index, off, -1};
    if (!json_is_object(n))
        return node_err(&c, err, "expected a node object, got %s", jtype(n));
    if (cv_grow((void **)&h->ops, &h->cap_ops, h->n_ops, sizeof *h->ops))
        return etk_err(err, ETK_ENOMEM, "out of memory");
    cv_op *op = &h->ops[h->n_ops];
    memset(op, 0, sizeof *op);
    op->seq_id = -1;
    op->parent_ix = -1;
    op->dev_dur_ns = -1;
    etk_arena *a = h->arena;
    int rc;

    const json_t *v = json_object_get(n, "id");
    if (!v)
        return node_err(&c, err, "missing \"id\"");
    if ((rc = get_uint(&c, v, "id", &op->id, err)))
        return rc;
    c.id = (int64_t)op->id;
    v = json_object_get(n, "name");
    if (!json_is_string(v))
        return node_err(&c, err, "\"name\" must be a string, got %s", v ? jtype(v) : "nothing");
    op->name = etk_arena_strdup(a, json_string_value(v));
    const json_t *kcat = json_object_get(n, "cat");
    if (json_is_string(kcat) && json_object_get(n, "ph"))
        return node_err(&c, err, "\"%s\" carries Kineto keys (\"cat\": \"%s\", \"ph\", "
                        "\"ts\", \"dur\"): this is an \"ET+\" file, a host trace already merged "
                        "with its Kineto trace by Chakra's old trace_link, whose kernel nodes "
                        "cannot be told from CPU ops reliably. Convert the two original files "
                        "instead: --host HOST_ET.json --device KINETO.json (or the Kineto trace "
                        "alone: --device KINETO.json)", op->name, json_string_value(kcat));

    const json_t *attrs = json_object_get(n, "attrs");
    bool old = json_object_get(n, "parent") != NULL && !attrs;
    if (old)
        st->old_layout = true;
    v = json_object_get(n, "ctrl_deps");
    if (!v)
        v = json_object_get(n, "parent");
    if (json_is_array(v))
        v = json_array_get(v, 0);
    if (!v)
        return node_err(&c, err, "missing the parent reference (\"ctrl_deps\" in schema 1.0.2+, "
                        "\"parent\" in 1.0.1)");
    if ((rc = get_uint(&c, v, old ? "parent" : "ctrl_deps", &op->parent, err)))
        return rc;

    if (attrs) {
        if (!json_is_array(attrs))
            return node_err(&c, err, "\"attrs\" must be a list of {name, type, value}, got %s",
                            jtype(attrs));
        size_t i;
        json_t *at;
        json_array_foreach(attrs, i, at) {
            const json_t *an = json_object_get(at, "name");
            if (!json_is_string(an))
                return node_err(&c, err, "attrs[%zu] has no \"name\" string", i);
            const json_t *av = json_object_get(at, "value");
            if (av && (rc = set_attr(&c, op, a, json_string_value(an), av, err)))
                return rc;
        }
    } else {
        static const char *const keys[] = {"rf_id", "fw_parent", "seq_id", "scope",
                                           "tid", "fw_tid", "op_schema"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if ((v = json_object_get(n, keys[i])) && (rc = set_attr(&c, op, a, keys[i], v, err)))
                return rc;
    }

    /* inputs / outputs */
    const json_t *iv = NULL, *is = NULL, *it = NULL, *ov = NULL, *os = NULL, *ot = NULL;
    const json_t *in = json_object_get(n, "inputs"), *out = json_object_get(n, "outputs");
    if (json_is_object(in)) {
        iv = json_object_get(in, "values");
        is = json_object_get(in, "shapes");
        it = json_object_get(in, "types");
    } else if (json_is_array(in)) {
        iv = in;
        is = json_object_get(n, "input_shapes");
        it = json_object_get(n, "input_types");
    } else if (in) {
        return node_err(&c, err, "\"inputs\" must be an object {values, shapes, types} or a list, "
                        "got %s", jtype(in));
    }
    if (json_is_object(out)) {
        ov = json_object_get(out, "values");
        os = json_object_get(out, "shapes");
        ot = json_object_get(out, "types");
    } else if (json_is_array(out)) {
        ov = out;
        os = json_object_get(n, "output_shapes");
        ot = json_object_get(n, "output_types");
    } else if (out) {
        return node_err(&c, err, "\"outputs\" must be an object {values, shapes, types} or a "
                        "list, got %s", jtype(out));
    }
    if (iv && !json_is_array(iv))
        return node_err(&c, err, "input values must be a list, got %s", jtype(iv));
    const char *raw[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (raw_io(s, off, end, a, raw)) {
        op->iv = raw[0];
        op->is = raw[1];
        op->it = raw[2];
        op->ov = raw[3];
        op->os = raw[4];
        op->ot = raw[5];
    } else { /* cannot happen on text jansson accepted; re-serialize then */
        op->iv = jv_dump(a, iv);
        op->is = jv_dump(a, is);
        op->it = jv_dump(a, it);
        op->ov = jv_dump(a, ov);
        op->os = jv_dump(a, os);
        op->ot = jv_dump(a, ot);
    }
    op->in_bytes = jv_tensor_bytes(iv);

    op->host_excl_ns = us_to_ns(json_object_get(n, "exclusive_dur"));
    op->host_incl_ns = us_to_ns(json_object_get(n, "inclusive_dur"));
    if (op->host_incl_ns < 0)
        op->host_incl_ns = us_to_ns(json_object_get(n, "dur"));

    if (is_root(op->name, "|process]"))
        op->kind = OP_PROCESS_ROOT;
    else if (is_root(op->name, "|thread]"))
        op->kind = OP_THREAD_ROOT;
    else if (!strcmp(op->name, "## process_group:init ##")) {
        op->kind = OP_PG_INIT;
        if ((rc = parse_pg_init(&c, h, iv, err)))
            return rc;
    }
    if (iv && wants_hints(op->name))
        collect_hints(op, a, iv, 0);
    if (op->id > h->max_id)
        h->max_id = op->id;
    h->n_ops++;
    return 0;
}

static int top_value(cv_host *h, jscan *s, const char *key, etk_convert_stats *st, etk_error *err)
{
    json_t *v;
    int rc = js_value(s, &v, err);
    if (rc)
        return rc;
    int64_t x;
    if (!strcmp(key, "schema")) {
        if (!json_is_string(v)) {
            json_decref(v);
            return etk_err(err, ETK_EFORMAT, "%s: \"schema\" must be a string like \"1.0.2\"",
                           s->path);
        }
        h->schema = etk_arena_strdup(h->arena, json_string_value(v));
        snprintf(st->schema, sizeof st->schema, "%s", h->schema);
    } else if (!strcmp(key, "time") && json_is_string(v)) {
        h->time = etk_arena_strdup(h->arena, json_string_value(v));
    } else if (!strcmp(key, "pid") && jv_i64(v, &x)) {
        h->pid = x;
        h->has_pid = true;
    } else if (!strcmp(key, "start_ts") && jv_i64(v, &x)) {
        h->start_ts = x;
        h->has_start = true;
    } else if (!strcmp(key, "finish_ts") && jv_i64(v, &x)) {
        h->finish_ts = x;
        h->has_finish = true;
    }
    json_decref(v);
    return 0;
}

int cv_host_parse(const char *path, cv_host *h, etk_convert_stats *st, FILE *prog, etk_error *err)
{
    char *buf;
    size_t len;
    int rc = etk_file_read_all(path, &buf, &len, err);
    if (rc)
        return rc;
    st->input_bytes += len;
    etk_progress pr;
    etk_progress_begin(&pr, prog, !prog, "host trace MiB parsed", js_mib(len));
    jscan s = {buf, len, 0, path};
    bool have_nodes = false;
    js_ws(&s);
    if (s.pos >= len) {
        rc = etk_err(err, ETK_EFORMAT, "%s: empty file: expected a PyTorch host execution trace "
                     "(a JSON object with \"schema\" and \"nodes\")", path);
        goto out;
    }
    if (buf[s.pos] != '{') {
        rc = etk_err(err, ETK_EFORMAT, "%s: line %zu: expected a PyTorch host execution trace "
                     "(a JSON object with \"schema\" and \"nodes\"), found '%c'", path,
                     js_line(&s, s.pos), buf[s.pos]);
        goto out;
    }
    s.pos++;
    js_ws(&s);
    if (s.pos < len && buf[s.pos] == '}') {
        s.pos++;
    } else {
        for (;;) {
            char key[64];
            if ((rc = js_key(&s, key, sizeof key, err)))
                goto out;
            if (!strcmp(key, "nodes")) {
                have_nodes = true;
                js_ws(&s);
                if (s.pos < len && buf[s.pos] != '[') {
                    rc = etk_err(err, ETK_EFORMAT, "%s: line %zu: \"nodes\" must be a list of "
                                 "node objects", path, js_line(&s, s.pos));
                    goto out;
                }
                if ((rc = js_expect(&s, '[', "start of \"nodes\"", err)))
                    goto out;
                js_ws(&s);
                if (s.pos < len && buf[s.pos] == ']') {
                    s.pos++;
                } else {
                    for (size_t i = 0;; i++) {
                        js_ws(&s);
                        size_t off = s.pos;
                        json_t *n;
                        if ((rc = js_value(&s, &n, err)))
                            goto out;
                        rc = parse_node(h, &s, n, i, off, s.pos, st, err);
                        json_decref(n);
                        etk_progress_update(&pr, s.pos >> 20);
                        if (rc)
                            goto out;
                        rc = js_next(&s, ']', "the \"nodes\" list", err);
                        if (rc < 0)
                            goto out;
                        if (rc == 0)
                            break;
                    }
                }
            } else if ((rc = top_value(h, &s, key, st, err))) {
                goto out;
            }
            rc = js_next(&s, '}', "the top-level object", err);
            if (rc < 0)
                goto out;
            if (rc == 0)
                break;
        }
    }
    rc = 0;
    if (!have_nodes) {
        rc = etk_err(err, ETK_EFORMAT, "%s: no \"nodes\" list at the top level: not a PyTorch host "
                     "execution trace (expected {\"schema\": ..., \"nodes\": [...]})", path);
        goto out;
    }
    st->n_host_nodes = h->n_ops;
    if (h->schema) {
        for (size_t i = 0; i < sizeof known_schemas / sizeof known_schemas[0]; i++) {
            size_t k = strlen(known_schemas[i]);
            if (!strncmp(h->schema, known_schemas[i], k) &&
                (h->schema[k] == 0 || h->schema[k] == '-'))
                st->schema_known = true;
        }
    }
out:
    etk_progress_end(&pr);
    free(buf);
    return rc;
}
