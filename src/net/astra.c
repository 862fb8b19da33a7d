/* astra.c — ASTRA-sim compatibility: reads an ASTRA-sim network YAML + system JSON into an
 * etk_cluster (their units: network GB/s = 2^30 B/s, local-mem-bw GB/s = 10^9 B/s, peak-perf
 * TFLOP/s) and times collectives the way ASTRA-sim's congestion-unaware analytical backend
 * does, to the nanosecond (chunking, per-algorithm message patterns, endpoint and reduction
 * delays, multi-dimensional phases pipelined over chunks). The semantics and the measured
 * values this reproduces are in ../shared/spec/astra-sim.md and docs/astra-compat.md; cost.c
 * dispatches here when cluster->astra_compat is set. */
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
    char *text;
    size_t len;
    int rc = etk_file_read_max(path, ETK_MAX_CONFIG_BYTES, "ASTRA-sim system file", &text, &len, err);
    if (rc)
        return rc;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root)
        return etk_err(err, ETK_EFORMAT, "%s:%d:%d: JSON error: %s", path, je.line, je.column,
                       je.text);
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

/* ---------- compatible costs ---------- */

/* net(m) = ⌊hops·L + m/B⌋ with B in bytes/ns. The division is done in long double with an
 * exact numerator so that a whole number of ns (e.g. 2^25 B at 400·2^30 B/s = 78,125 ns) is
 * not floored to one less. */
static uint64_t anet(const etk_net_dim *d, uint32_t hops, uint64_t m)
{
    long double t = (long double)hops * (long double)d->latency_ns +
                    (long double)m * 1e9L / (long double)d->bw_Bps;
    if (!(t < 1.8e19L)) /* zero bandwidth in an unchecked cluster: never */
        return UINT64_MAX / 4;
    return (uint64_t)floorl(t);
}

/* reduction of a received message: 3·⌊m / local-mem-bw(B/ns)⌋ */
static uint64_t ared(const etk_cluster *c, uint64_t m)
{
    if (!(c->astra_local_mem_bw_GBps > 0))
        return 0;
    return 3 * (uint64_t)floorl((long double)m / (long double)c->astra_local_mem_bw_GBps);
}

static uint32_t topo_hops(int topo) { return topo == ETK_TOPO_SWITCH ? 2 : 1; }

static uint32_t ring_dist(uint32_t n, uint64_t k)
{
    k %= n;
    return (uint32_t)(k < n - k ? k : n - k);
}

static uint32_t ilog2(uint32_t n)
{
    uint32_t k = 0;
    while ((1u << (k + 1)) <= n && k < 31)
        k++;
    return k;
}

/* One phase of one chunk on one whole dimension: the chunk-start endpoint delay plus the
 * algorithm's messages. D is the phase's input (for all-gather the per-rank shard). *tail gets
 * a once-per-collective extra (double binary tree). */
static uint64_t phase_ns(const etk_cluster *c, const etk_net_dim *d, etk_coll_type t, int algo,
                         uint64_t D, uint64_t *tail)
{
    uint64_t N = d->size, e = (uint64_t)llround(c->astra_endpoint_delay_ns);
    uint32_t h = topo_hops(d->topo);
    bool ar = t == ETK_COLL_ALL_REDUCE;
    bool rs = t == ETK_COLL_REDUCE_SCATTER || t == ETK_COLL_REDUCE_SCATTER_BLOCK;
    bool ag = t == ETK_COLL_ALL_GATHER;
    if (algo == ETK_ALGO_HALVING_DOUBLING && (!pow2((uint32_t)N) || t == ETK_COLL_ALL_TO_ALL))
        algo = ETK_ALGO_RING;
    if (algo == ETK_ALGO_DOUBLE_BINARY_TREE && !ar)
        algo = ETK_ALGO_RING;
    switch (algo) {
    case ETK_ALGO_DIRECT: {
        /* N-1 messages in flight at once: one network delay (the farthest peer on a Ring),
         * one endpoint delay, one reduction per reducing phase */
        uint32_t hd = d->topo == ETK_TOPO_RING ? (uint32_t)(N / 2) : h;
        if (ag)
            return e + anet(d, hd, D) + e;
        uint64_t m = D / N, one = anet(d, hd, m) + e;
        if (ar)
            return e + 2 * one + ared(c, m);
        if (rs)
            return e + one + ared(c, m);
        return e + one; /* all-to-all */
    }
    case ETK_ALGO_HALVING_DOUBLING: {
        /* log2 N steps, partner distance doubling, messages D/2, D/4, ...; every reducing
         * message but the first pays the reduction (fits all measured values) */
        uint32_t k = ilog2((uint32_t)N);
        uint64_t T = e;
        if (ag) {
            uint64_t m = D;
            for (uint32_t i = 0; i < k; i++, m *= 2) {
                uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << i) : h;
                T += anet(d, hh, m) + e;
            }
            return T;
        }
        uint64_t m = D;
        for (uint32_t i = 0; i < k; i++) {
            m /= 2;
            uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << i) : h;
            T += anet(d, hh, m) + e + (i > 0 ? ared(c, m) : 0);
        }
        if (ar)
            for (uint32_t i = k; i-- > 0; m *= 2) {
                uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << i) : h;
                T += anet(d, hh, m) + e;
            }
        return T;
    }
    case ETK_ALGO_DOUBLE_BINARY_TREE: {
        /* ASTRA-sim's binary tree numbers the ranks in order: a leaf's parent is 1 rank away,
         * the next parent 2, then 4, ..., 2^(k−1) (the top). A chunk's critical path goes up
         * the k edges and down again; consecutive chunks overlap by one leaf message. Fitted
         * to the Switch values (N = 4 … 64, where all edges cost alike): (2k − 1) reduced
         * whole-chunk messages per chunk and one more unreduced leaf message per collective;
         * on a Ring topology each edge costs its ring distance min(2^j, N − 2^j) in hops
         * (dbt_ring_64: 492,196 ns) */
        uint64_t k = ilog2((uint32_t)N) + (pow2((uint32_t)N) ? 0 : 1);
        uint64_t T = e, red = ared(c, D);
        for (uint64_t i = 1; i < 2 * k; i++) { /* edges up 1..k then down k..2, i = 1..2k−1 */
            uint64_t j = i <= k ? i - 1 : 2 * k - i;
            uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << j) : h;
            T += anet(d, hh, D) + e + red;
        }
        *tail += anet(d, h, D) + e; /* the leaf edge: 1 hop on a Ring */
        return T;
    }
    default: { /* ring */
        uint64_t m = D / N;
        if (ar)
            return e + 2 * (N - 1) * (anet(d, h, m) + e) + (N - 1) * ared(c, m);
        if (rs)
            return e + (N - 1) * (anet(d, h, m) + e) + (N - 1) * ared(c, m);
        if (ag)
            return e + (N - 1) * (anet(d, h, D) + e);
        return e + N * (N - 1) / 2 * (anet(d, h, m) + e); /* all-to-all, one after another */
    }
    }
}

/* Chunks pass the phases in order; each phase works on `active` chunks at a time, so with
 * identical chunks the collective takes Σ phases + (⌈C/active⌉ − 1)·max phase. */
static uint64_t pipeline(const etk_cluster *c, const uint64_t *ph, uint32_t n_ph, uint64_t tail)
{
    uint64_t sum = 0, mx = 0;
    for (uint32_t i = 0; i < n_ph; i++) {
        sum += ph[i];
        if (ph[i] > mx)
            mx = ph[i];
    }
    uint64_t C = c->astra_splits ? c->astra_splits : 1; /* 0: unchecked cluster, treat as 1 */
    uint64_t A = c->astra_active_chunks ? c->astra_active_chunks : 1;
    uint64_t waves = (C + A - 1) / A;
    return sum + (waves - 1) * mx + tail;
}

/* Net delay of a flat-ring link class for message m (first differing dimension counts). */
static uint64_t class_net(const etk_cluster *c, const etk_net_place *p, uint32_t k, uint64_t m)
{
    const etk_net_dim *d = &c->dims[p->class_dim[k]];
    uint32_t h = d->topo == ETK_TOPO_RING ? (p->class_hops[k] ? p->class_hops[k] : 1)
                                           : topo_hops(d->topo);
    return anet(d, h, m);
}

/* Largest sum of net delays over K consecutive links of the logical ring (a message chain):
 * exact when all links are alike, for K ≡ 0, -1, -2 (mod n); otherwise bounded by the worst
 * link (docs/astra-compat.md). */
static uint64_t chain_ns(const etk_cluster *c, const etk_net_place *p, uint64_t K, uint64_t m)
{
    uint64_t n = p->n_ranks, v[ETK_NET_MAX_LINK_CLASSES], total = 0, mx = 0, mn = UINT64_MAX;
    for (uint32_t k = 0; k < p->n_classes; k++) {
        v[k] = class_net(c, p, k, m);
        total += v[k] * p->class_count[k];
        if (v[k] > mx) mx = v[k];
        if (v[k] < mn) mn = v[k];
    }
    uint64_t q = K / n, r = K % n;
    if (p->n_classes == 1 || r == 0)
        return q * total + r * mx;
    if (r == n - 1)
        return q * total + total - mn;
    if (r == n - 2 && n > 2) {
        uint64_t best = UINT64_MAX;
        for (uint32_t a = 0; a < p->n_classes; a++)
            for (uint32_t b = 0; b < p->n_classes; b++)
                if (p->class_pairs & (1ull << (a * 8 + b)) && v[a] + v[b] < best)
                    best = v[a] + v[b];
        if (best != UINT64_MAX)
            return q * total + total - best;
    }
    return q * total + r * mx;
}

/* Most steps (chunks · ranks · messages) a sub-group ring is simulated message by message;
 * past it (or with more link kinds than the placement keeps) the chain bound is used. */
#define RING_SIM_MAX_STEPS (1ull << 25)

/* A sub-group ring with links of unequal cost, message by message, as ASTRA-sim runs it: rank
 * r sends its first message of a chunk h ns after the chunk starts; each later message leaves
 * h ns (plus the reduction of the received one) after both the message from r−1 arrived and r
 * sent its previous one; a rank finishes a chunk on receiving its K-th message and starts its
 * own next chunk then (with A active chunks: when its chunk k−A finished), whatever the other
 * ranks do. Returns the last finish, or UINT64_MAX when it would cost too much or memory is
 * short. With equal links this is exactly the closed form. */
static uint64_t ring_sim_ns(const etk_cluster *c, const etk_net_place *p, uint64_t K,
                            uint64_t n_red, uint64_t m, uint64_t h)
{
    uint64_t N = p->n_ranks, C = c->astra_splits ? c->astra_splits : 1;
    uint64_t A = c->astra_active_chunks ? c->astra_active_chunks : 1;
    if (A > C)
        A = C;
    if (p->runs_overflow || p->classes_overflow || N < 2 || K > RING_SIM_MAX_STEPS ||
        C * N > RING_SIM_MAX_STEPS / K || A * N > (1u << 20)) /* at most 8 MB of finishes */
        return UINT64_MAX;
    uint64_t *net = malloc(sizeof *net * N * (3 + A));
    if (!net)
        return UINT64_MAX;
    uint64_t *prev = net + N, *cur = prev + N, *fin = cur + N; /* fin: A rows of finishes */
    uint64_t v[ETK_NET_MAX_LINK_CLASSES], red = ared(c, m), i = 0;
    for (uint32_t k = 0; k < p->n_classes; k++)
        v[k] = class_net(c, p, k, m);
    for (uint32_t r = 0; r < p->n_runs; r++) /* net[i]: link member i -> member i+1 */
        for (uint32_t j = 0; j < p->run_len[r] && i < N; j++)
            net[i++] = v[p->run_class[r]];
    if (i != N) { /* the runs do not cover the ring: not a placement of this group */
        free(net);
        return UINT64_MAX;
    }
    memset(fin, 0, sizeof *fin * N * A);
    uint64_t last = 0;
    for (uint64_t k = 0; k < C; k++) {
        uint64_t *f = fin + (k % A) * N; /* finishes of chunk k − A, overwritten by chunk k's */
        for (uint64_t r = 0; r < N; r++)
            prev[r] = f[r] + h; /* first send: the chunk start */
        for (uint64_t s = 1; s <= K; s++) {
            uint64_t add = h + (s - 1 < n_red ? red : 0);
            for (uint64_t r = 0; r < N; r++) {
                uint64_t q = r ? r - 1 : N - 1, in = prev[q] + net[q];
                cur[r] = (in > prev[r] ? in : prev[r]) + add;
            }
            uint64_t *t = prev;
            prev = cur;
            cur = t;
        }
        for (uint64_t r = 0; r < N; r++) {
            f[r] = prev[r]; /* after K receipts: the finish */
            if (prev[r] > last)
                last = prev[r];
        }
    }
    free(net);
    return last;
}

/* A group that is not every NPU: ASTRA-sim runs it as one flat logical ring over the members,
 * with a fixed 10 ns hand-off per message and at the start of each chunk (whatever
 * endpoint-delay says; measured: pair_ar_sw8_e1000 18,508 ns). Equal links: the closed form;
 * unequal links: message by message (ring_sim_ns), or the chain bound when too large. */
static uint64_t subgroup_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type t,
                            uint64_t chunk)
{
    uint64_t N = p->n_ranks, h = 10;
    bool ar = t == ETK_COLL_ALL_REDUCE;
    bool rs = t == ETK_COLL_REDUCE_SCATTER || t == ETK_COLL_REDUCE_SCATTER_BLOCK;
    bool ag = t == ETK_COLL_ALL_GATHER;
    uint64_t m = ag ? chunk : chunk / N;
    uint64_t K = ar ? 2 * (N - 1) : rs || ag ? N - 1 : N * (N - 1) / 2;
    uint64_t n_red = ar || rs ? N - 1 : 0;
    if (p->n_classes > 1) {
        uint64_t T = ring_sim_ns(c, p, K, n_red, m, h);
        if (T != UINT64_MAX)
            return T;
    }
    uint64_t ph = h + chain_ns(c, p, K, m) + K * h + n_red * ared(c, m);
    return pipeline(c, &ph, 1, 0);
}

uint64_t net_astra_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type t,
                           uint64_t S)
{
    /* ASTRA-sim simulates only these four; others get etkit's physical model */
    if (t != ETK_COLL_ALL_REDUCE && t != ETK_COLL_ALL_GATHER && t != ETK_COLL_REDUCE_SCATTER &&
        t != ETK_COLL_REDUCE_SCATTER_BLOCK && t != ETK_COLL_ALL_TO_ALL)
        return net_phys_coll_ns(c, p, t, S);
    uint64_t N = p->n_ranks;
    if (N <= 1)
        return 0;
    uint64_t chunk = S / (c->astra_splits ? c->astra_splits : 1);
    if (t != ETK_COLL_ALL_GATHER && chunk < N)
        chunk = N; /* raised to the rank count (padded) */
    if (!p->whole)
        return subgroup_ns(c, p, t, chunk);
    uint32_t dims[ETK_MAX_DIMS], nd = 0;
    for (uint32_t i = 0; i < c->n_dims; i++)
        if (c->dims[i].size > 1)
            dims[nd++] = i;
    uint64_t ph[3 * ETK_MAX_DIMS], tail = 0, D = chunk;
    uint32_t np = 0;
#define ALGO(i, ty) (c->dims[dims[i]].algo[ty] ? c->dims[dims[i]].algo[ty] : ETK_ALGO_RING)
    switch (t) {
    case ETK_COLL_ALL_REDUCE:
        if (c->astra_local_bw_aware && nd > 1) {
            /* ASTRA-sim takes every phase's algorithm from the all-reduce list (its result
             * does not change with the reduce-scatter / all-gather lists: 2d_*_hd_lbw) */
            for (uint32_t i = 0; i + 1 < nd; i++) {
                const etk_net_dim *d = &c->dims[dims[i]];
                ph[np++] = phase_ns(c, d, ETK_COLL_REDUCE_SCATTER, ALGO(i, t), D, &tail);
                D /= d->size;
            }
            ph[np++] = phase_ns(c, &c->dims[dims[nd - 1]], t, ALGO(nd - 1, t), D, &tail);
            for (uint32_t i = nd - 1; i-- > 0;) {
                const etk_net_dim *d = &c->dims[dims[i]];
                ph[np++] = phase_ns(c, d, ETK_COLL_ALL_GATHER, ALGO(i, t), D, &tail);
                D *= d->size;
            }
        } else {
            for (uint32_t i = 0; i < nd; i++)
                ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
        }
        break;
    case ETK_COLL_ALL_GATHER:
        for (uint32_t i = nd; i-- > 0;) {
            ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
            D *= c->dims[dims[i]].size;
        }
        break;
    case ETK_COLL_ALL_TO_ALL:
        for (uint32_t i = 0; i < nd; i++)
            ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
        break;
    default: /* reduce-scatter */
        for (uint32_t i = 0; i < nd; i++) {
            ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
            D /= c->dims[dims[i]].size;
        }
        break;
    }
#undef ALGO
    return pipeline(c, ph, np, tail);
}

/* SEND/RECV: one unchunked message on the first differing dimension. ASTRA-sim charges no
 * endpoint delay here (measured: p2p1_sw8 8,626 ns with endpoint-delay 10 and 1000). */
uint64_t net_astra_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes)
{
    for (uint32_t d = 0; d < c->n_dims; d++) {
        uint32_t sz = c->dims[d].size, x = src % sz, y = dst % sz;
        src /= sz;
        dst /= sz;
        if (x == y)
            continue;
        const etk_net_dim *nd = &c->dims[d];
        uint32_t h = nd->topo == ETK_TOPO_RING ? ring_dist(sz, x > y ? x - y : y - x)
                                               : topo_hops(nd->topo);
        return anet(nd, h, bytes); /* ASTRA-sim: no endpoint delay on SEND/RECV */
    }
    return 0;
}
