/* rows.c — reading calibration rows (etkit/calib.h, docs/calibrate.md): the JSON format of
 * ../shared/spec/calibration-modern.json turned into a checked plan (etk_gen_config, through
 * etk_gen_set: the same option names as `etkit run`) and a cluster sized for it. A row that
 * cannot be built keeps its reason, naming the file, the row and the field. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etkit/calib.h"
#include "etkit/run.h"
#include "util/jsonfile.h"

static const char *const metric_names[ETK_CALIB_N_METRICS] = {
    "tokens_per_s_per_gpu", "tflops_per_gpu", "out_tokens_per_s_per_gpu", "step_s"};

const char *etk_calib_metric_name(int m)
{
    return m >= 0 && m < ETK_CALIB_N_METRICS ? metric_names[m] : "unknown";
}

/* the row's failure: "FILE: row I 'NAME': " + message */
static int row_fail(const etk_calib_rows *rs, etk_calib_row *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int row_fail(const etk_calib_rows *rs, etk_calib_row *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->reason, sizeof r->reason, "%.200s: row %u '%.100s': %.420s", rs->path, r->index, r->name, msg);
    r->built = false;
    return -1;
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* model file: as given (absolute or relative to the working directory), relative to the rows
 * file's folder and up to three of its parents, then by base name in models_dir */
static bool resolve_model(const char *rows_path, const char *file, const char *models_dir,
                          char *out, size_t size)
{
    if (file[0] == '/' || is_file(file)) {
        snprintf(out, size, "%s", file);
        return is_file(out);
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", rows_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    char up[1100];
    snprintf(up, sizeof up, "%s", dir);
    for (int i = 0; i < 4; i++) {
        int n = snprintf(out, size, "%s/%s", up, file);
        if (n > 0 && (size_t)n < size && is_file(out))
            return true;
        size_t l = strlen(up);
        if (l + 4 >= sizeof up)
            break;
        memcpy(up + l, "/..", 4);
    }
    if (models_dir) {
        const char *b = strrchr(file, '/');
        int n = snprintf(out, size, "%s/%s", models_dir, b ? b + 1 : file);
        if (n > 0 && (size_t)n < size && is_file(out))
            return true;
    }
    return false;
}

/* a JSON scalar as the text of a gen option value; false for other kinds */
static bool scalar_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v)) {
        snprintf(buf, size, "%s", json_string_value(v));
        return true;
    }
    if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9e15)
            snprintf(buf, size, "%.0f", d);
        else
            snprintf(buf, size, "%.17g", d);
        return true;
    }
    return false;
}

/* row key -> gen option name: the plan's short names, then underscores to hyphens */
static void option_name(const char *key, char *out, size_t size)
{
    static const struct { const char *k, *opt; } alias[] = {
        {"mbs", "micro-batch"}, {"gbs", "global-batch"}, {"prompt", "prompt-len"},
        {"micro_batch", "micro-batch"}, {"global_batch", "global-batch"},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(key, alias[i].k)) {
            snprintf(out, size, "%s", alias[i].opt);
            return;
        }
    snprintf(out, size, "%s", key);
    for (char *p = out; *p; p++)
        if (*p == '_')
            *p = '-';
}

/* one "where.key": value pair through etk_gen_set */
static int set_option(const etk_calib_rows *rs, etk_calib_row *r, const char *where,
                      const char *key, const json_t *v)
{
    char opt[64], val[128];
    option_name(key, opt, sizeof opt);
    bool takes = false;
    if (!etk_gen_is_option(opt, &takes))
        return row_fail(rs, r, "%s.%s: not a plan option etkit knows (as --%s)", where, key, opt);
    etk_error e = {0};
    if (!takes) {
        if (!json_is_boolean(v))
            return row_fail(rs, r, "%s.%s: expected true or false", where, key);
        if (json_is_false(v))
            return 0;
        if (etk_gen_set(&r->cfg, opt, NULL, &e))
            return row_fail(rs, r, "%s.%s: %s", where, key, e.msg);
        return 0;
    }
    if (!scalar_text(v, val, sizeof val))
        return row_fail(rs, r, "%s.%s: expected a number or a string", where, key);
    if (etk_gen_set(&r->cfg, opt, val, &e))
        return row_fail(rs, r, "%s.%s: %s", where, key, e.msg);
    return 0;
}

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int build_model(const etk_calib_rows *rs, etk_calib_row *r, const json_t *m,
                       const char *models_dir)
{
    if (!json_is_object(m))
        return row_fail(rs, r, "model: expected an object with 'preset' or 'file'");
    const char *preset = jstr(m, "preset"), *file = jstr(m, "file");
    etk_error e = {0};
    if (preset && file)
        return row_fail(rs, r, "model: give 'preset' or 'file', not both");
    if (preset) {
        if (etk_gen_set(&r->cfg, "model", preset, &e))
            return row_fail(rs, r, "model.preset: %s", e.msg);
    } else if (file) {
        char path[2048];
        if (!resolve_model(rs->path, file, models_dir, path, sizeof path))
            return row_fail(rs, r, "model.file: '%s' not found (looked as given, next to the rows "
                            "file and its parents%s%s)", file, models_dir ? ", and in " : "",
                            models_dir ? models_dir : "");
        if (etk_gen_set(&r->cfg, "model-file", path, &e))
            return row_fail(rs, r, "model.file: %s", e.msg);
    } else {
        return row_fail(rs, r, "model: expected 'preset' (a built-in model) or 'file'");
    }
    const json_t *ov = json_object_get(m, "overrides");
    if (ov && !json_is_object(ov))
        return row_fail(rs, r, "model.overrides: expected an object of dimensions");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ov, k, v) {
        static const char *const dims[] = {"layers", "hidden", "heads", "kv_heads", "ffn",
                                           "vocab", "seq", NULL};
        bool ok = false;
        for (int i = 0; dims[i]; i++)
            ok = ok || !strcmp(k, dims[i]);
        if (!ok)
            return row_fail(rs, r, "model.overrides.%s: unknown dimension (layers, hidden, heads, "
                            "kv_heads, ffn, vocab, seq)", k);
        if (set_option(rs, r, "model.overrides", k, v))
            return -1;
    }
    return 0;
}

/* the cluster preset for a GPU name ("h100"): the first built-in preset whose GPU is that one */
static int preset_for_gpu(const char *gpu, etk_cluster *out, etk_error *err)
{
    etk_gpu g;
    if (etk_gpu_preset(gpu, &g, err))
        return -1;
    for (const char *const *n = etk_cluster_preset_names(); *n; n++) {
        etk_cluster c;
        etk_error e2 = {0};
        if (etk_cluster_preset(*n, 1, &c, &e2) == 0 && !strcmp(c.gpu.name, g.name) &&
            c.net_model == ETK_NET_ANALYTICAL) {
            *out = c;
            return 0;
        }
    }
    return etk_err(err, ETK_ENOTFOUND, "no built-in cluster preset has GPU '%s'", gpu);
}

/* a preset sized for `gpus`: gpus / (GPUs per node) nodes, or one node holding exactly `gpus`
 * GPUs when fewer than a node (single-<gpu>, or a preset named with fewer GPUs than a node) */
static int size_preset(const etk_calib_rows *rs, etk_calib_row *r, const char *name, uint32_t gpus)
{
    etk_cluster *cl = &r->cluster;
    uint32_t per_node = cl->dims[0].size;
    if (gpus < per_node) {
        cl->dims[0].size = gpus;
        cl->dims[cl->n_dims - 1].size = 1;
        if (cl->fabric.on) {
            cl->fabric.gpus_per_node = gpus;
            cl->fabric.nodes = 1;
        }
    } else if (gpus % per_node) {
        return row_fail(rs, r, "gpus: %u is not a whole number of %u-GPU nodes of %s", gpus,
                        per_node, name);
    }
    uint64_t n = 1;
    for (uint32_t i = 0; i < cl->n_dims; i++)
        n *= cl->dims[i].size;
    cl->n_npus = (uint32_t)n;
    return 0;
}

static int build_cluster(const etk_calib_rows *rs, etk_calib_row *r, const char *name,
                         uint32_t gpus)
{
    etk_error e = {0};
    etk_cluster *cl = &r->cluster;
    if (!strncmp(name, "single-", 7)) {
        char g[32];
        snprintf(g, sizeof g, "%s", name + 7);
        for (char *p = g; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        if (preset_for_gpu(g, cl, &e))
            return row_fail(rs, r, "cluster: %s: %s", name, e.msg);
        if (gpus > cl->dims[0].size)
            return row_fail(rs, r, "cluster: %s is one node of at most %u GPUs, the row has "
                            "gpus %u", name, cl->dims[0].size, gpus);
        if (size_preset(rs, r, name, gpus))
            return -1;
        snprintf(cl->name, sizeof cl->name, "%s", name);
    } else if (strstr(name, ".yaml") || strstr(name, ".yml")) {
        char path[2048];
        if (!resolve_model(rs->path, name, NULL, path, sizeof path))
            return row_fail(rs, r, "cluster: '%s' not found", name);
        if (etk_cluster_load(path, cl, &e))
            return row_fail(rs, r, "cluster: %s", e.msg);
    } else {
        if (etk_cluster_preset(name, 1, cl, &e))
            return row_fail(rs, r, "cluster: %s", e.msg);
        uint32_t per_node = cl->dims[0].size ? cl->dims[0].size : 1;
        if (gpus > per_node && etk_cluster_preset(name, gpus / per_node, cl, &e))
            return row_fail(rs, r, "cluster: %s", e.msg);
        if (size_preset(rs, r, name, gpus))
            return -1;
    }
    etk_run_flow_auto(cl, r->cfg.n_ranks);
    if (etk_cluster_check(cl, r->cfg.n_ranks, &e))
        return row_fail(rs, r, "cluster: %s (the plan has %u ranks, gpus %u)", e.msg,
                        r->cfg.n_ranks, gpus);
    etk_run_set_precision(&r->cfg, cl);
    return 0;
}

static int build_row(const etk_calib_rows *rs, etk_calib_row *r, const json_t *o,
                     const char *models_dir, const json_t *extra)
{
    etk_gen_config_init(&r->cfg);
    const char *mode = jstr(o, "mode");
    const json_t *inf = json_object_get(o, "inference");
    if (!mode)
        mode = inf ? "inference" : "training";
    etk_error e = {0};
    if (etk_gen_set(&r->cfg, "mode", mode, &e))
        return row_fail(rs, r, "mode: %s", e.msg);
    if (build_model(rs, r, json_object_get(o, "model"), models_dir))
        return -1;
    const json_t *plan = json_object_get(o, "plan");
    if (!json_is_object(plan))
        return row_fail(rs, r, "plan: expected an object (tp, pp, dp, mbs, gbs, ...)");
    const char *k;
    json_t *v;
    const json_t *cpv = json_object_get(plan, "cp");
    bool cp1 = !cpv || (json_is_integer(cpv) && json_integer_value(cpv) <= 1);
    json_object_foreach((json_t *)plan, k, v) {
        /* cp_comm says how CP ranks exchange K/V: without CP there is nothing to say (the
         * shared rows name it on every row) */
        if (!strcmp(k, "cp_comm") && cp1)
            continue;
        if (set_option(rs, r, "plan", k, v))
            return -1;
    }
    json_object_foreach((json_t *)extra, k, v)
        if (set_option(rs, r, "plan-extra plan", k, v))
            return -1;
    if (inf) {
        if (!json_is_object(inf))
            return row_fail(rs, r, "inference: expected an object (batch, prompt, decode_steps)");
        json_object_foreach((json_t *)inf, k, v) {
            if (!strcmp(k, "output_len")) { /* = decode_steps + 1, checked below */
                const json_t *d = json_object_get(inf, "decode_steps");
                if (!json_is_integer(v) || (d && json_is_integer(d) &&
                                            json_integer_value(v) != json_integer_value(d) + 1))
                    return row_fail(rs, r, "inference.output_len: expected decode_steps + 1");
                continue;
            }
            if (set_option(rs, r, "inference", k, v))
                return -1;
        }
    }
    if (rs->validate_only ? etk_gen_validate(&r->cfg, &e) : etk_gen_check(&r->cfg, &e))
        return row_fail(rs, r, "plan: %s", e.msg);
    const json_t *g = json_object_get(o, "gpus");
    if (!json_is_integer(g) || json_integer_value(g) < 1 || json_integer_value(g) > (1 << 24))
        return row_fail(rs, r, "gpus: expected a positive integer");
    uint32_t gpus = (uint32_t)json_integer_value(g);
    if (gpus != r->cfg.n_ranks)
        return row_fail(rs, r, "plan: tp x cp x pp x dp = %u ranks, but gpus is %u",
                        r->cfg.n_ranks, gpus);
    const char *cname = jstr(o, "cluster");
    if (!cname)
        return row_fail(rs, r, "cluster: expected a preset name, a cluster YAML or single-<gpu>");
    if (build_cluster(rs, r, cname, gpus))
        return -1;
    r->built = true;
    return 0;
}

static void read_row(const etk_calib_rows *rs, etk_calib_row *r, const json_t *o,
                     const char *models_dir, const json_t *xe)
{
    const char *s;
    r->expressible = true;
    if ((s = jstr(o, "name")))
        snprintf(r->name, sizeof r->name, "%s", s);
    else
        snprintf(r->name, sizeof r->name, "#%u", r->index);
    snprintf(r->set, sizeof r->set, "%s", (s = jstr(o, "set")) ? s : "-");
    snprintf(r->gpu, sizeof r->gpu, "%s", (s = jstr(o, "gpu_type")) ? s : "-");
    const json_t *ex = json_object_get(o, "expressible");
    if (ex && !json_is_boolean(ex)) {
        row_fail(rs, r, "expressible: expected true or false");
        return;
    }
    const json_t *plan_extra = xe ? json_object_get(xe, "plan") : NULL;
    bool express = xe && json_object_get(xe, "model");
    if (xe && !express && json_object_get(xe, "cluster")) {
        row_fail(rs, r, "plan-extra entry: 'cluster' without 'model' (an entry expressing a row gives model, "
                        "cluster and plan)");
        return;
    }
    if (express && !json_is_false(ex)) {
        row_fail(rs, r, "plan-extra entry: gives a model, but the row is expressible (the entry may add plan options "
                        "only)");
        return;
    }
    if (express) {
        /* the extra file expresses the row: its model, cluster and complete plan replace the
         * row's, traced to the row by its description */
        const char *desc = jstr(o, "description"), *src = jstr(xe, "source");
        if (!desc || !src || !strstr(src, desc)) {
            row_fail(rs, r, "plan-extra entry: its 'source' must quote the row's description (\"%s\")",
                     desc ? desc : "the row has none");
            return;
        }
        if (!jstr(xe, "cluster")) {
            row_fail(rs, r, "plan-extra entry: 'cluster' (a preset name) is needed to express the row");
            return;
        }
        json_t *m = json_deep_copy(o);
        if (!m) {
            row_fail(rs, r, "out of memory");
            return;
        }
        json_object_del(m, "expressible");
        json_object_del(m, "why_not");
        json_object_set(m, "model", json_object_get(xe, "model"));
        json_object_set(m, "cluster", json_object_get(xe, "cluster"));
        json_object_set(m, "plan", (json_t *)plan_extra);
        r->by_extra = true;
        read_row(rs, r, m, models_dir, NULL);
        json_decref(m);
        return;
    }
    if (json_is_false(ex)) {
        r->expressible = false;
        snprintf(r->reason, sizeof r->reason, "%s",
                 (s = jstr(o, "why_not")) && *s ? s : "marked not expressible (no why_not given)");
        return;
    }
    if (!jstr(o, "name")) {
        row_fail(rs, r, "name: expected a string");
        return;
    }
    const json_t *m = json_object_get(o, "measured");
    const char *metric = json_is_object(m) ? jstr(m, "metric") : NULL;
    if (!metric) {
        row_fail(rs, r, "measured.metric: expected one of tokens_per_s_per_gpu, tflops_per_gpu, "
                        "out_tokens_per_s_per_gpu, step_s");
        return;
    }
    r->metric = -1;
    for (int i = 0; i < ETK_CALIB_N_METRICS; i++)
        if (!strcmp(metric, metric_names[i]))
            r->metric = i;
    if (r->metric < 0) {
        row_fail(rs, r, "measured.metric: '%s' is unknown; expected tokens_per_s_per_gpu, "
                        "tflops_per_gpu, out_tokens_per_s_per_gpu or step_s", metric);
        return;
    }
    const json_t *val = json_object_get(m, "value");
    if (!json_is_number(val) || !(json_number_value(val) > 0) ||
        !isfinite(json_number_value(val))) {
        row_fail(rs, r, "measured.value: expected a positive number");
        return;
    }
    r->measured = json_number_value(val);
    if (build_row(rs, r, o, models_dir, r->by_extra ? NULL : plan_extra))
        return;
    bool inf = r->cfg.mode == ETK_GEN_MODE_INFERENCE;
    if (inf != (r->metric == ETK_CALIB_OUT_TOKENS_PER_S_PER_GPU))
        row_fail(rs, r, "measured.metric: %s does not apply to a %s row", metric,
                 inf ? "an inference" : "a training");
}

/* the plan-extra file: an object of {"plan": {...}, "source": "..."} per row name */
static int load_extra(const char *path, json_t **out, etk_error *err)
{
    *out = NULL;
    if (!path)
        return 0;
    json_t *x;
    int rc = etk_json_file_load(path, ETK_MAX_INPUT_BYTES, "plan-extra file", 0, &x, err);
    if (rc)
        return rc;
    if (!json_is_object(x)) {
        json_decref(x);
        return etk_err(err, ETK_EFORMAT, "%s: expected a JSON object {\"ROW NAME\": {\"plan\": {...}, "
                       "\"source\": \"...\"}}", path);
    }
    const char *k;
    json_t *v;
    json_object_foreach(x, k, v) {
        const json_t *p = json_is_object(v) ? json_object_get(v, "plan") : NULL;
        if (!json_is_object(p) || !json_is_string(json_object_get(v, "source"))) {
            /* the message first: k belongs to x */
            etk_err(err, ETK_EFORMAT, "%s: '%s': expected {\"plan\": {plan options}, \"source\": "
                    "\"where the run's recipe sets them\"}", path, k);
            json_decref(x);
            return ETK_EFORMAT;
        }
    }
    *out = x;
    return 0;
}

int etk_calib_load(const char *path, const char *models_dir, etk_calib_rows **out, etk_error *err)
{
    return etk_calib_load_extra(path, models_dir, NULL, out, err);
}

int etk_calib_load_extra(const char *path, const char *models_dir, const char *extra_path,
                         etk_calib_rows **out, etk_error *err)
{
    return etk_calib_load_with(path, models_dir, extra_path, false, out, err);
}

int etk_calib_load_with(const char *path, const char *models_dir, const char *extra_path, bool validate_only,
                        etk_calib_rows **out, etk_error *err)
{
    *out = NULL;
    json_t *root, *extra;
    int rc = load_extra(extra_path, &extra, err);
    if (rc)
        return rc;
    if ((rc = etk_json_file_load(path, ETK_MAX_INPUT_BYTES, "calibration file", 0, &root, err))) {
        json_decref(extra);
        return rc;
    }
    if (!json_is_array(root) || json_array_size(root) == 0) {
        json_decref(root);
        json_decref(extra);
        return etk_err(err, ETK_EFORMAT, "%s: expected a JSON array of rows (objects with name, "
                       "model, plan, cluster, gpus, measured)", path);
    }
    const char *k;
    json_t *v;
    json_object_foreach(extra, k, v) { /* every entry names a row of the file */
        size_t i = 0;
        const char *nm = NULL;
        for (; i < json_array_size(root); i++)
            if ((nm = jstr(json_array_get(root, i), "name")) && !strcmp(nm, k))
                break;
        if (i == json_array_size(root)) {
            rc = etk_err(err, ETK_EFORMAT, "%s: '%s': no row of that name in %s", extra_path, k, path);
            json_decref(extra);
            json_decref(root);
            return rc;
        }
    }
    size_t n = json_array_size(root);
    etk_calib_rows *rs = calloc(1, sizeof *rs);
    if (rs)
        rs->rows = calloc(n, sizeof *rs->rows);
    if (!rs || !rs->rows) {
        free(rs);
        json_decref(root);
        json_decref(extra);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    snprintf(rs->path, sizeof rs->path, "%s", path);
    rs->n = (uint32_t)n;
    rs->validate_only = validate_only;
    for (size_t i = 0; i < n; i++) {
        etk_calib_row *r = &rs->rows[i];
        r->index = (uint32_t)i;
        const json_t *o = json_array_get(root, i);
        if (!json_is_object(o)) {
            snprintf(r->name, sizeof r->name, "#%zu", i);
            snprintf(r->set, sizeof r->set, "-");
            snprintf(r->gpu, sizeof r->gpu, "-");
            r->expressible = true;
            row_fail(rs, r, "expected an object");
            continue;
        }
        const char *nm = jstr(o, "name");
        const json_t *xe = nm && extra ? json_object_get(extra, nm) : NULL;
        read_row(rs, r, o, models_dir, xe);
    }
    json_decref(root);
    json_decref(extra);
    *out = rs;
    return 0;
}

void etk_calib_free(etk_calib_rows *rs)
{
    if (!rs)
        return;
    for (uint32_t i = 0; i < rs->n; i++)
        etk_workload_free(rs->rows[i].wl);
    free(rs->rows);
    free(rs);
}
