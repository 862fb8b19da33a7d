/* astra_load.c — ASTRA-sim compatibility, input side: reads an ASTRA-sim network YAML + system
 * JSON into an etk_cluster (etk_cluster_load_astra; their units: network GB/s = 2^30 B/s,
 * local-mem-bw GB/s = 10^9 B/s, peak-perf TFLOP/s) with astra_compat set, so that select.c
 * times its collectives with astra.c. Semantics: docs/astra-compat.md. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "etkit/net.h"
#include "net/net_internal.h"
#include "util/check.h"
#include "util/jsonfile.h"

/* ---------- network YAML ---------- */

static bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

static void add_warning(etk_cluster *c, const char *fmt, const char *arg)
{
    size_t o = strlen(c->warnings);
    if (o + 2 >= sizeof c->warnings)
        return;
    if (o)
        c->warnings[o++] = '\n', c->warnings[o] = 0;
    snprintf(c->warnings + o, sizeof c->warnings - o, fmt, arg);
}

/* One list of numbers or names; returns its length or a negative error. */
static int yaml_list(yaml_document_t *doc, yaml_node_t *v, const char *file, const char *key,
                     bool numeric, double *num, const char **str, etk_error *err)
{
    int line = (int)v->start_mark.line + 1;
    /* a single scalar is accepted as a one-dimension list */
    if (v->type != YAML_SCALAR_NODE && v->type != YAML_SEQUENCE_NODE) {
        return etk_err(err, ETK_EFORMAT, "%s:%d: %s: expected a list such as [ 8, 4 ]", file,
                       line, key);
    }
    int n = 0;
    yaml_node_item_t *start = v->type == YAML_SEQUENCE_NODE ? v->data.sequence.items.start : NULL;
    yaml_node_item_t *top = v->type == YAML_SEQUENCE_NODE ? v->data.sequence.items.top : NULL;
    int count = v->type == YAML_SEQUENCE_NODE ? (int)(top - start) : 1;
    for (int i = 0; i < count; i++) {
        yaml_node_t *it = v->type == YAML_SEQUENCE_NODE ? yaml_document_get_node(doc, start[i]) : v;
        if (n >= ETK_MAX_DIMS)
            return etk_err(err, ETK_EINVAL, "%s:%d: %s: at most %d dimensions are supported",
                           file, line, key, ETK_MAX_DIMS);
        if (!it || it->type != YAML_SCALAR_NODE)
            return etk_err(err, ETK_EFORMAT, "%s:%d: %s[%d]: expected a %s", file,
                           it ? (int)it->start_mark.line + 1 : line, key, i,
                           numeric ? "number" : "name");
        const char *s = (const char *)it->data.scalar.value;
        if (numeric) {
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            if (end == s || *end || errno || !isfinite(x))
                return etk_err(err, ETK_EFORMAT, "%s:%d: %s[%d]: expected a number, got '%s'",
                               file, (int)it->start_mark.line + 1, key, i, s);
            num[n] = x;
        } else {
            str[n] = s;
        }
        n++;
    }
    return n;
}

static int load_network_yaml(const char *path, etk_cluster *c, etk_error *err)
{
    char *text;
    size_t len;
    int rc = etk_file_read_max(path, ETK_MAX_CONFIG_BYTES, "ASTRA-sim network file", &text, &len, err);
    if (rc)
        return rc;
    if ((rc = etk_yaml_depth_check(text, len, path, ETK_YAML_MAX_DEPTH, err))) {
        free(text);
        return rc;
    }
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) {
        free(text);
        return etk_err(err, ETK_ENOMEM, "%s: cannot initialise the YAML parser", path);
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &doc)) {
        rc = etk_err(err, ETK_EFORMAT, "%s:%d:%d: YAML syntax error: %s", path,
                     (int)p.problem_mark.line + 1, (int)p.problem_mark.column + 1,
                     p.problem ? p.problem : "unknown problem");
        yaml_parser_delete(&p);
        free(text);
        return rc;
    }
    yaml_parser_delete(&p);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    const char *topo[ETK_MAX_DIMS] = {0};
    double npus[ETK_MAX_DIMS], bw[ETK_MAX_DIMS], lat[ETK_MAX_DIMS];
    int n_topo = -1, n_npus = -1, n_bw = -1, n_lat = -1;
    if (!root || root->type != YAML_MAPPING_NODE) {
        rc = etk_err(err, ETK_EFORMAT,
                     "%s: expected a mapping with topology, npus_count, bandwidth, latency", path);
        goto out;
    }
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(&doc, pr->value);
        const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
        int r;
        if (strcmp(key, "topology") == 0)
            r = n_topo = yaml_list(&doc, v, path, key, false, NULL, topo, err);
        else if (strcmp(key, "npus_count") == 0)
            r = n_npus = yaml_list(&doc, v, path, key, true, npus, NULL, err);
        else if (strcmp(key, "bandwidth") == 0)
            r = n_bw = yaml_list(&doc, v, path, key, true, bw, NULL, err);
        else if (strcmp(key, "latency") == 0)
            r = n_lat = yaml_list(&doc, v, path, key, true, lat, NULL, err);
        else {
            add_warning(c, "ASTRA-sim network key '%s' ignored", key);
            continue;
        }
        if (r < 0) {
            rc = r;
            goto out;
        }
    }
    const char *miss = n_topo < 0 ? "topology" : n_npus < 0 ? "npus_count" : n_bw < 0 ? "bandwidth"
                                                             : n_lat < 0 ? "latency" : NULL;
    if (miss) {
        rc = etk_err(err, ETK_EINVAL, "%s: missing '%s' (one entry per network dimension)", path,
                     miss);
        goto out;
    }
    if (n_topo == 0 || n_npus != n_topo || n_bw != n_topo || n_lat != n_topo) {
        rc = etk_err(err, ETK_EINVAL,
                     "%s: topology, npus_count, bandwidth and latency must have one entry per "
                     "dimension (got %d, %d, %d, %d)",
                     path, n_topo, n_npus, n_bw, n_lat);
        goto out;
    }
    for (int i = 0; i < n_topo; i++) {
        int t = etk_topo_parse(topo[i]);
        if (t < 0) {
            rc = etk_err(err, ETK_EINVAL,
                         "%s: topology[%d]: unknown topology '%s' (expected Ring, "
                         "FullyConnected or Switch)",
                         path, i, topo[i]);
            goto out;
        }
        if (npus[i] < 1 || npus[i] != floor(npus[i]) || npus[i] > 1e8) {
            rc = etk_err(err, ETK_EINVAL, "%s: npus_count[%d]: expected a whole number >= 1, got %g",
                         path, i, npus[i]);
            goto out;
        }
        if (!(bw[i] > 0)) {
            rc = etk_err(err, ETK_EINVAL,
                         "%s: bandwidth[%d]: expected a positive GB/s (2^30 B/s), got %g", path, i,
                         bw[i]);
            goto out;
        }
        if (!(lat[i] >= 0)) {
            rc = etk_err(err, ETK_EINVAL, "%s: latency[%d]: expected ns >= 0, got %g", path, i,
                         lat[i]);
            goto out;
        }
        etk_net_dim *d = &c->dims[i];
        d->size = (uint32_t)npus[i];
        d->topo = t;
        d->bw_Bps = bw[i] * 1073741824.0; /* ASTRA-sim: 1 GB = 2^30 bytes */
        d->latency_ns = lat[i];
    }
    c->n_dims = (uint32_t)n_topo;
    rc = 0;
out:
    yaml_document_delete(&doc);
    free(text);
    return rc;
}

/* ---------- system JSON ---------- */

static int json_number(json_t *v, const char *file, const char *key, double *out, etk_error *err)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) { /* ASTRA-sim's examples sometimes quote numbers */
        char *end;
        const char *s = json_string_value(v);
        double x = strtod(s, &end);
        if (end != s && !*end && isfinite(x)) {
            *out = x;
            return 0;
        }
    }
    return etk_err(err, ETK_EFORMAT, "%s: \"%s\": expected a number", file, key);
}

static int impl_list(json_t *v, const char *file, const char *key, etk_cluster *c, int type,
                     etk_error *err)
{
    if (!json_is_array(v))
        return etk_err(err, ETK_EFORMAT, "%s: \"%s\": expected a list such as [\"ring\"]", file,
                       key);
    size_t n = json_array_size(v);
    if (n != c->n_dims)
        return etk_err(err, ETK_EINVAL,
                       "%s: \"%s\": expected one entry per network dimension (%u), got %zu", file,
                       key, c->n_dims, n);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s))
            return etk_err(err, ETK_EFORMAT, "%s: \"%s\"[%zu]: expected a name", file, key, i);
        const char *name = json_string_value(s);
        int a = etk_algo_parse(name);
        if (a <= 0) {
            bool variant = strncmp(name, "one", 3) == 0 || strncmp(name, "direct", 6) == 0;
            return etk_err(err, variant ? ETK_EUNSUPPORTED : ETK_EINVAL,
                           "%s: \"%s\"[%zu]: %s algorithm '%s' (expected ring, direct, "
                           "halvingDoubling or doubleBinaryTree)",
                           file, key, i, variant ? "unsupported" : "unknown", name);
        }
        if (a == ETK_ALGO_DOUBLE_BINARY_TREE && type != ETK_COLL_ALL_REDUCE)
            return etk_err(err, ETK_EINVAL,
                           "%s: \"%s\"[%zu]: doubleBinaryTree is only defined for all-reduce",
                           file, key, i);
        c->dims[i].algo[type] = a;
        if (type == ETK_COLL_REDUCE_SCATTER)
            c->dims[i].algo[ETK_COLL_REDUCE_SCATTER_BLOCK] = a;
    }
    return 0;
}

static int load_system_json(const char *path, etk_cluster *c, etk_error *err)
{
    json_t *root;
    int rc = etk_json_file_load(path, ETK_MAX_CONFIG_BYTES, "ASTRA-sim system file", 0, &root, err);
    if (rc)
        return rc;
    if (!json_is_object(root)) {
        json_decref(root);
        return etk_err(err, ETK_EFORMAT, "%s: expected a JSON object of system settings", path);
    }
    bool have_splits = false, have_peak = false;
    double peak = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        double x = 0;
        if (strcmp(key, "endpoint-delay") == 0) {
            if ((rc = json_number(v, path, key, &x, err)))
                break;
            if (x < 0) {
                rc = etk_err(err, ETK_EINVAL, "%s: \"endpoint-delay\": expected ns >= 0, got %g",
                             path, x);
                break;
            }
            c->astra_endpoint_delay_ns = x;
        } else if (strcmp(key, "active-chunks-per-dimension") == 0 ||
                   strcmp(key, "preferred-dataset-splits") == 0) {
            if ((rc = json_number(v, path, key, &x, err)))
                break;
            if (x < 1 || x != floor(x) || x > 1e6) {
                rc = etk_err(err, ETK_EINVAL, "%s: \"%s\": expected a whole number >= 1, got %g",
                             path, key, x);
                break;
            }
            if (key[0] == 'a')
                c->astra_active_chunks = (uint32_t)x;
            else
                c->astra_splits = (uint32_t)x, have_splits = true;
        } else if (strcmp(key, "local-mem-bw") == 0) {
            if ((rc = json_number(v, path, key, &x, err)))
                break;
            if (!(x > 0)) {
                rc = etk_err(err, ETK_EINVAL,
                             "%s: \"local-mem-bw\": expected a positive GB/s (10^9 B/s), got %g",
                             path, x);
                break;
            }
            c->astra_local_mem_bw_GBps = x;
        } else if (strcmp(key, "peak-perf") == 0) {
            if ((rc = json_number(v, path, key, &peak, err)))
                break;
            if (!(peak > 0)) {
                rc = etk_err(err, ETK_EINVAL,
                             "%s: \"peak-perf\": expected a positive TFLOP/s, got %g", path, peak);
                break;
            }
            have_peak = true;
        } else if (strcmp(key, "roofline-enabled") == 0 || strcmp(key, "replay-only") == 0) {
            if ((rc = json_number(v, path, key, &x, err)))
                break;
            if (key[0] == 'r' && key[1] == 'o')
                c->astra_roofline = x != 0;
        } else if (strcmp(key, "collective-optimization") == 0) {
            const char *s = json_string_value(v);
            if (s && strcmp(s, "localBWAware") == 0)
                c->astra_local_bw_aware = true;
            else if (s && strcmp(s, "baseline") == 0)
                c->astra_local_bw_aware = false;
            else {
                rc = etk_err(err, ETK_EINVAL,
                             "%s: \"collective-optimization\": expected \"baseline\" or "
                             "\"localBWAware\"",
                             path);
                break;
            }
        } else if (strcmp(key, "scheduling-policy") == 0) {
            const char *s = json_string_value(v);
            if (!s || (strcmp(s, "LIFO") && strcmp(s, "FIFO") && strcmp(s, "EXPLICIT"))) {
                rc = etk_err(err, ETK_EINVAL,
                             "%s: \"scheduling-policy\": expected \"LIFO\", \"FIFO\" or "
                             "\"EXPLICIT\"",
                             path);
                break;
            }
        } else if (strcmp(key, "all-reduce-implementation") == 0) {
            if ((rc = impl_list(v, path, key, c, ETK_COLL_ALL_REDUCE, err)))
                break;
        } else if (strcmp(key, "all-gather-implementation") == 0) {
            if ((rc = impl_list(v, path, key, c, ETK_COLL_ALL_GATHER, err)))
                break;
        } else if (strcmp(key, "reduce-scatter-implementation") == 0) {
            if ((rc = impl_list(v, path, key, c, ETK_COLL_REDUCE_SCATTER, err)))
                break;
        } else if (strcmp(key, "all-to-all-implementation") == 0) {
            if ((rc = impl_list(v, path, key, c, ETK_COLL_ALL_TO_ALL, err)))
                break;
        } else {
            add_warning(c, "ASTRA-sim system key '%s' ignored by etkit", key);
        }
    }
    json_decref(root);
    if (rc)
        return rc;
    if (!have_splits)
        return etk_err(err, ETK_EINVAL,
                       "%s: missing \"preferred-dataset-splits\" (chunks per collective; "
                       "ASTRA-sim requires it)",
                       path);
    /* The GPU: peak-perf for every precision, local-mem-bw as the memory bandwidth. */
    snprintf(c->gpu.name, sizeof c->gpu.name, "astra-sim");
    if (!have_peak) {
        peak = 1000;
        add_warning(c, "%s: no \"peak-perf\": roofline uses 1000 TFLOP/s", path);
    }
    for (int p = 0; p < ETK_PREC_COUNT; p++)
        c->gpu.peak_flops[p] = peak * 1e12;
    c->gpu.hbm_bw_Bps = c->astra_local_mem_bw_GBps * 1e9;
    return 0;
}

int etk_cluster_load_astra(const char *network_yaml, const char *system_json, etk_cluster *out,
                           etk_error *err)
{
    etk_cluster c;
    etk_cluster_init(&c);
    c.astra_compat = true;
    int rc = load_network_yaml(network_yaml, &c, err);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < c.n_dims; i++)
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            c.dims[i].algo[t] = ETK_ALGO_RING; /* ASTRA-sim's examples default to ring */
    if ((rc = load_system_json(system_json, &c, err)))
        return rc;
    net_cluster_finish(&c);
    /* ASTRA-sim itself never finishes halving-doubling on a dimension whose size is not a power
     * of two (it hangs) and crashes on double binary tree there (segmentation fault); etkit
     * still gives a figure, its own extension, and says so */
    for (uint32_t i = 0; i < c.n_dims; i++) {
        uint32_t n = c.dims[i].size;
        if (pow2(n) || n < 2)
            continue;
        bool hd = false, dbt = false;
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++) {
            hd |= c.dims[i].algo[t] == ETK_ALGO_HALVING_DOUBLING;
            dbt |= c.dims[i].algo[t] == ETK_ALGO_DOUBLE_BINARY_TREE;
        }
        char what[96];
        snprintf(what, sizeof what, "%u NPUs on dimension %u (not a power of two)", n, i);
        if (hd)
            add_warning(&c, "ASTRA-sim hangs on halvingDoubling with %s and never finishes; "
                            "etkit costs it as ring there", what);
        if (dbt)
            add_warning(&c, "ASTRA-sim crashes (segmentation fault) on doubleBinaryTree with %s; "
                            "etkit uses a tree of depth ceil(log2 N) there", what);
    }
    const char *b = strrchr(network_yaml, '/');
    snprintf(c.name, sizeof c.name, "%s", b ? b + 1 : network_yaml);
    if ((rc = etk_cluster_check(&c, 0, err)))
        return rc;
    *out = c;
    return 0;
}
