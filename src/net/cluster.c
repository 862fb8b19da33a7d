/* cluster.c — the cluster description the simulator times work against: built-in GPU and
 * cluster presets (presets/gpus, presets/clusters, embedded data), etkit's cluster YAML
 * (docs/cluster.md) and the consistency check. The cost functions (cost.c, astra.c,
 * roofline in src/hw/) read the etk_cluster filled here.
 *
 * YAML is loaded with libyaml's document API so every node keeps its line number for error
 * messages ("cluster.yaml:7: network[1].bandwidth: expected ... got ..."). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "etkit/compute.h"
#include "etkit/net.h"
#include "etkit/presets.h"
#include "net/net_internal.h"
#include "util/check.h"

static const char *const cluster_presets[] = {"dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200",
                                              "dgx-h100-superpod", "llama3",
                                              NULL};
static const char *const gpu_presets[] = {"a100", "h100", "h200", "b200", "mi300x", NULL};

const char *const *etk_cluster_preset_names(void) { return cluster_presets; }
const char *const *etk_gpu_preset_names(void) { return gpu_presets; }

static const char *const topo_names[] = {"Ring", "FullyConnected", "Switch"};
static const char *const algo_names[] = {"auto", "ring", "direct", "halving-doubling",
                                         "double-binary-tree"};
static const char *const prec_names[] = {"bf16", "fp16", "fp8", "fp32", "tf32"};

const char *etk_topo_name(int t) { return t >= 0 && t < 3 ? topo_names[t] : "unknown"; }
const char *etk_algo_name(int a) { return a >= 0 && a < 5 ? algo_names[a] : "unknown"; }
const char *etk_precision_name(int p)
{
    return p >= 0 && p < ETK_PREC_COUNT ? prec_names[p] : "unknown";
}

int etk_topo_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, topo_names[i]) == 0)
            return i;
    if (strcasecmp(s, "fully-connected") == 0 || strcasecmp(s, "fully_connected") == 0)
        return ETK_TOPO_FULLY_CONNECTED;
    return -1;
}

int etk_algo_parse(const char *s)
{
    for (int i = 0; i < 5; i++)
        if (strcasecmp(s, algo_names[i]) == 0)
            return i;
    if (strcasecmp(s, "halvingDoubling") == 0 || strcasecmp(s, "halving_doubling") == 0 ||
        strcasecmp(s, "hd") == 0)
        return ETK_ALGO_HALVING_DOUBLING;
    if (strcasecmp(s, "doubleBinaryTree") == 0 || strcasecmp(s, "double_binary_tree") == 0 ||
        strcasecmp(s, "dbt") == 0 || strcasecmp(s, "tree") == 0)
        return ETK_ALGO_DOUBLE_BINARY_TREE;
    return -1;
}

int etk_precision_parse(const char *s)
{
    for (int i = 0; i < ETK_PREC_COUNT; i++)
        if (strcasecmp(s, prec_names[i]) == 0)
            return i;
    return -1;
}

void etk_cluster_init(etk_cluster *c)
{
    memset(c, 0, sizeof *c);
    c->compute_efficiency = 1.0;
    c->precision = ETK_PREC_BF16;
    c->astra_splits = 4;
    c->astra_active_chunks = 1;
    c->astra_endpoint_delay_ns = 10;
    c->astra_local_mem_bw_GBps = 1600;
}

/* ---------- YAML helpers ---------- */

typedef struct ydoc {
    yaml_document_t doc;
    const char *file; /* for messages */
    etk_error *err;
} ydoc;

static int yline(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static const char *ykind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static const char *yscalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

#define YFOR_PAIRS(y, map, pair)                                                          \
    for (yaml_node_pair_t *pair = (map)->data.mapping.pairs.start;                        \
         pair < (map)->data.mapping.pairs.top; pair++)
#define YNODE(y, id) yaml_document_get_node(&(y)->doc, (id))

typedef struct {
    const char *key;
    int line;
} ykey;

static int ykey_cmp(const void *a, const void *b)
{
    const ykey *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->line - y->line;
}

/* Duplicate keys in any mapping of the document are errors naming both lines (the last value
 * used to win silently). Sorted, so a hostile mapping of a million keys is not quadratic. */
static int ydups(ydoc *y)
{
    for (yaml_node_t *n = y->doc.nodes.start; n < y->doc.nodes.top; n++) {
        if (n->type != YAML_MAPPING_NODE)
            continue;
        size_t k = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start), m = 0;
        if (k < 2)
            continue;
        ykey *v = malloc(k * sizeof *v);
        if (!v)
            return etk_err(y->err, ETK_ENOMEM, "%s: out of memory", y->file);
        YFOR_PAIRS(y, n, pr) {
            yaml_node_t *kn = YNODE(y, pr->key);
            if (yscalar(kn))
                v[m++] = (ykey){yscalar(kn), yline(kn)};
        }
        qsort(v, m, sizeof *v, ykey_cmp);
        for (size_t i = 1; i < m; i++)
            if (!strcmp(v[i].key, v[i - 1].key)) {
                int rc = etk_err(y->err, ETK_EFORMAT, "%s:%d: duplicate key '%s' (first given on line %d)",
                                 y->file, v[i].line, v[i].key, v[i - 1].line);
                free(v);
                return rc;
            }
        free(v);
    }
    return 0;
}

/* Parse a YAML text into y->doc; syntax errors name the file, line and column; nesting past
 * ETK_YAML_MAX_DEPTH is refused before the document is built (`[` x 80,000 took 19 s). */
static int yload(ydoc *y, const char *text, size_t len)
{
    int drc = etk_yaml_depth_check(text, len, y->file, ETK_YAML_MAX_DEPTH, y->err);
    if (drc)
        return drc;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return etk_err(y->err, ETK_ENOMEM, "%s: cannot initialise the YAML parser", y->file);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &y->doc)) {
        int rc = etk_err(y->err, ETK_EFORMAT, "%s:%d:%d: YAML syntax error: %s%s%s", y->file,
                         (int)p.problem_mark.line + 1, (int)p.problem_mark.column + 1,
                         p.problem ? p.problem : "unknown problem",
                         p.context ? " " : "", p.context ? p.context : "");
        yaml_parser_delete(&p);
        return rc;
    }
    yaml_parser_delete(&p);
    int rc = ydups(y);
    if (rc)
        yaml_document_delete(&y->doc);
    return rc;
}

/* A non-negative finite number; `what` names the key path for the message. */
static int ynumber(ydoc *y, const yaml_node_t *n, const char *what, const char *unit,
                   double *out)
{
    const char *s = yscalar(n);
    if (!s)
        return etk_err(y->err, ETK_EFORMAT, "%s:%d: %s: expected a number (%s), got %s",
                       y->file, yline(n), what, unit, ykind(n));
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (end == s || *end || errno || !isfinite(v))
        return etk_err(y->err, ETK_EFORMAT, "%s:%d: %s: expected a number (%s), got '%s'",
                       y->file, yline(n), what, unit, s);
    *out = v;
    return 0;
}

static int ypositive(ydoc *y, const yaml_node_t *n, const char *what, const char *unit,
                     double *out)
{
    int rc = ynumber(y, n, what, unit, out);
    if (rc)
        return rc;
    if (!(*out > 0))
        return etk_err(y->err, ETK_EINVAL, "%s:%d: %s: expected a positive number (%s), got %s",
                       y->file, yline(n), what, unit, yscalar(n));
    return 0;
}

/* A number in [lo, hi]: outside it a time or bandwidth is nonsense (bandwidth 1e-14 GB/s or
 * latency 1e300 ns made communication take 0 ns); docs/cluster.md lists the ranges. */
static int yrange(ydoc *y, const yaml_node_t *n, const char *what, const char *unit, double lo,
                  double hi, double *out)
{
    int rc = ynumber(y, n, what, unit, out);
    if (rc)
        return rc;
    if (!(*out >= lo && *out <= hi))
        return etk_err(y->err, ETK_EINVAL, "%s:%d: %s: expected %s in [%g, %g], got %s", y->file,
                       yline(n), what, unit, lo, hi, yscalar(n));
    return 0;
}

static int ycount(ydoc *y, const yaml_node_t *n, const char *what, uint32_t *out)
{
    double v;
    int rc = ynumber(y, n, what, "a count", &v);
    if (rc)
        return rc;
    if (v < 1 || v > 1e9 || v != floor(v))
        return etk_err(y->err, ETK_EINVAL,
                       "%s:%d: %s: expected a whole number >= 1, got %s", y->file, yline(n),
                       what, yscalar(n));
    *out = (uint32_t)v;
    return 0;
}

static int yexpect(ydoc *y, const yaml_node_t *n, yaml_node_type_t t, const char *what)
{
    if (n->type == t)
        return 0;
    const char *want = t == YAML_MAPPING_NODE ? "a mapping" : t == YAML_SEQUENCE_NODE ? "a list"
                                                                                      : "a scalar";
    return etk_err(y->err, ETK_EFORMAT, "%s:%d: %s: expected %s, got %s", y->file, yline(n),
                   what, want, ykind(n));
}

/* Unknown keys are errors: a misspelt key silently ignored is a wrong simulation. `known` is
 * the comma-separated list of the keys of `where`; the closest one is suggested. */
static int yunknown(ydoc *y, const yaml_node_t *k, const char *where, const char *known)
{
    const char *word = yscalar(k) ? yscalar(k) : "?";
    char buf[400], *names[32];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", known);
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t && n < 32; t = strtok_r(NULL, ", ", &save))
        names[n++] = t;
    const char *near = etk_suggest(word, (const char *const *)names, n);
    if (near)
        return etk_err(y->err, ETK_EFORMAT, "%s:%d: unknown key '%s' in %s: did you mean '%s'? (known keys: %s)",
                       y->file, yline(k), word, where, near, known);
    return etk_err(y->err, ETK_EFORMAT, "%s:%d: unknown key '%s' in %s (known keys: %s)",
                   y->file, yline(k), yscalar(k) ? yscalar(k) : "?", where, known);
}


/* The keys each mapping accepts: one table per mapping, checked before the values are read, so
 * adding a key is one line here (plus the code that reads it). */
static const char *const gpu_keys[] = {"name", "peak_tflops", "hbm_bw_GBps", "hbm_GB", "hbm_MiB", "compute"};
static const char *const dim_keys[] = {"size", "topology", "bandwidth", "latency", "algorithm",
                                       "alltoall_efficiency"};
static const char *const fabric_keys[] = {"rail", "leaf_nodes", "pod_nodes", "leaf_oversubscription",
                                          "pod_oversubscription", "nic_latency", "switch_latency"};
static const char *const cluster_keys[] = {"name", "preset", "nodes", "gpu", "network", "compute_efficiency",
                                           "precision", "fabric", "network_model"};
#define YKEYS(y, map, where, keys) ykeys(y, map, where, keys, sizeof keys / sizeof keys[0])

/* A key of the table that no branch reads: a programming error, never silently ignored. */
static int yunread(ydoc *y, const yaml_node_t *k, const char *where)
{
    return etk_err(y->err, ETK_EINVAL, "%s:%d: %s: key '%s' is accepted but not read (internal error)", y->file,
                   yline(k), where, yscalar(k) ? yscalar(k) : "?");
}

/* Every key of `map` is a scalar from keys[0..n); else an error with the closest one. */
static int ykeys(ydoc *y, const yaml_node_t *map, const char *where, const char *const *keys, size_t n)
{
    if (map->type != YAML_MAPPING_NODE)
        return 0; /* the caller's yexpect reports it */
    YFOR_PAIRS(y, map, pr) {
        yaml_node_t *k = YNODE(y, pr->key);
        const char *key = yscalar(k);
        if (!key)
            return etk_err(y->err, ETK_EFORMAT, "%s:%d: %s: keys must be scalars", y->file, yline(k), where);
        size_t i = 0;
        while (i < n && strcmp(key, keys[i]))
            i++;
        if (i < n)
            continue;
        char list[300] = "";
        for (i = 0; i < n; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", keys[i]);
        }
        return yunknown(y, k, where, list);
    }
    return 0;
}

/* ---------- GPU ---------- */

/* compute: {NAME: VALUE, ...}: compute-model parameters of this GPU; the names and ranges are
 * etk_compute_set's (one table), so a name it does not know is an error here, with the file and
 * the line */
static int parse_gpu_compute(ydoc *y, const yaml_node_t *map, const char *where, etk_gpu *g)
{
    char what[160], w2[240];
    snprintf(what, sizeof what, "%s.compute", where);
    int rc = yexpect(y, map, YAML_MAPPING_NODE, what);
    if (rc)
        return rc;
    etk_compute_params chk;
    etk_compute_defaults(NULL, &chk);
    YFOR_PAIRS(y, map, pr) {
        yaml_node_t *k = YNODE(y, pr->key), *v = YNODE(y, pr->value);
        const char *name = yscalar(k);
        if (!name)
            return etk_err(y->err, ETK_EFORMAT, "%s:%d: %s: keys must be parameter names (%s)",
                           y->file, yline(k), what, etk_compute_param_names());
        snprintf(w2, sizeof w2, "%s.%s", what, name);
        double x;
        if ((rc = ynumber(y, v, w2, "a number", &x)))
            return rc;
        etk_error e2 = {0};
        if (etk_compute_set_value(&chk, name, x, &e2) != 0) {
            bool known = strstr(e2.msg, "is unknown") == NULL;
            return etk_err(y->err, known ? ETK_EINVAL : ETK_EFORMAT, "%s:%d: %s: %s", y->file,
                           yline(known ? v : k), w2, e2.msg);
        }
        uint32_t i = 0;
        while (i < g->n_compute && strcmp(g->compute[i].name, name) != 0)
            i++;
        if (i == ETK_GPU_MAX_COMPUTE)
            return etk_err(y->err, ETK_EINVAL, "%s:%d: %s: at most %d parameters", y->file,
                           yline(k), what, ETK_GPU_MAX_COMPUTE);
        snprintf(g->compute[i].name, sizeof g->compute[i].name, "%s", name);
        g->compute[i].value = x;
        if (i == g->n_compute)
            g->n_compute++;
    }
    return 0;
}

static int parse_gpu_map(ydoc *y, const yaml_node_t *map, const char *where, etk_gpu *g)
{
    int rc = yexpect(y, map, YAML_MAPPING_NODE, where);
    if (rc || (rc = YKEYS(y, map, where, gpu_keys)))
        return rc;
    memset(g, 0, sizeof *g);
    bool have_peak = false, have_bw = false;
    char what[160];
    YFOR_PAIRS(y, map, pr) {
        yaml_node_t *k = YNODE(y, pr->key), *v = YNODE(y, pr->value);
        const char *key = yscalar(k);
        if (!key)
            return etk_err(y->err, ETK_EFORMAT, "%s:%d: %s: keys must be scalars", y->file,
                           yline(k), where);
        if (strcmp(key, "name") == 0) {
            if (!yscalar(v))
                return yexpect(y, v, YAML_SCALAR_NODE, "gpu.name");
            snprintf(g->name, sizeof g->name, "%s", yscalar(v));
        } else if (strcmp(key, "peak_tflops") == 0) {
            snprintf(what, sizeof what, "%s.peak_tflops", where);
            if ((rc = yexpect(y, v, YAML_MAPPING_NODE, what)))
                return rc;
            YFOR_PAIRS(y, v, pp) {
                yaml_node_t *pk = YNODE(y, pp->key), *pv = YNODE(y, pp->value);
                int prec = yscalar(pk) ? etk_precision_parse(yscalar(pk)) : -1;
                if (prec < 0)
                    return yunknown(y, pk, what, "bf16, fp16, fp8, fp32, tf32");
                char w2[200];
                snprintf(w2, sizeof w2, "%s.%s", what, yscalar(pk));
                double tf;
                if ((rc = ynumber(y, pv, w2, "TFLOP/s, 10^12 FLOP/s", &tf)))
                    return rc;
                if (tf < 0 || (tf > 0 && tf < 1e-3) || tf > 1e6)
                    return etk_err(y->err, ETK_EINVAL,
                                   "%s:%d: %s: expected TFLOP/s in [0.001, 1e6] or 0 (0: unsupported), "
                                   "got %s", y->file, yline(pv), w2, yscalar(pv));
                g->peak_flops[prec] = tf * 1e12;
                have_peak = have_peak || tf > 0;
            }
        } else if (strcmp(key, "hbm_bw_GBps") == 0) {
            snprintf(what, sizeof what, "%s.hbm_bw_GBps", where);
            double v2;
            if ((rc = yrange(y, v, what, "GB/s, 10^9 B/s,", 1e-3, 1e6, &v2)))
                return rc;
            g->hbm_bw_Bps = v2 * 1e9;
            have_bw = true;
        } else if (strcmp(key, "hbm_GB") == 0 || strcmp(key, "hbm_MiB") == 0) {
            /* capacity in GB as vendors state it, or in MiB as the device reports it
             * (nvidia-smi's total) */
            bool mib = key[4] == 'M';
            snprintf(what, sizeof what, "%s.%s", where, key);
            double v2;
            if ((rc = yrange(y, v, what, mib ? "MiB, 2^20 B," : "GB, 10^9 B,", 1e-3, mib ? 1e9 : 1e6, &v2)))
                return rc;
            g->hbm_bytes = (uint64_t)(v2 * (mib ? 1048576.0 : 1e9));
        } else if (strcmp(key, "compute") == 0) {
            if ((rc = parse_gpu_compute(y, v, where, g)))
                return rc;
        } else {
            return yunread(y, k, where);
        }
    }
    if (!have_peak)
        return etk_err(y->err, ETK_EINVAL,
                       "%s:%d: %s: missing peak_tflops (e.g. {bf16: 989}) with a positive value",
                       y->file, yline(map), where);
    if (!have_bw)
        return etk_err(y->err, ETK_EINVAL, "%s:%d: %s: missing hbm_bw_GBps (GB/s, 10^9 B/s)",
                       y->file, yline(map), where);
    if (!g->name[0])
        snprintf(g->name, sizeof g->name, "custom");
    return 0;
}

static int gpu_from_text(const char *file, const char *text, size_t len, etk_gpu *g,
                         etk_error *err)
{
    ydoc y = {.file = file, .err = err};
    int rc = yload(&y, text, len);
    if (rc)
        return rc;
    yaml_node_t *root = yaml_document_get_root_node(&y.doc);
    if (!root)
        rc = etk_err(err, ETK_EFORMAT, "%s: empty GPU file", file);
    else
        rc = parse_gpu_map(&y, root, "gpu", g);
    yaml_document_delete(&y.doc);
    return rc;
}

int etk_gpu_preset(const char *name, etk_gpu *out, etk_error *err)
{
    char rel[128];
    snprintf(rel, sizeof rel, "gpus/%s.yaml", name);
    const etk_embedded *e = strlen(name) < 64 ? etk_preset_file(rel) : NULL;
    if (!e)
        return etk_err(err, ETK_ENOTFOUND,
                       "unknown GPU preset '%s' (known: a100, h100, h200, b200, mi300x)", name);
    return gpu_from_text(rel, (const char *)e->data, e->len, out, err);
}

/* ---------- network dimensions ---------- */

static int coll_key(const char *s)
{
    static const struct { const char *k; int t; } keys[] = {
        {"all_reduce", ETK_COLL_ALL_REDUCE}, {"reduce", ETK_COLL_REDUCE},
        {"all_gather", ETK_COLL_ALL_GATHER}, {"gather", ETK_COLL_GATHER},
        {"scatter", ETK_COLL_SCATTER}, {"broadcast", ETK_COLL_BROADCAST},
        {"all_to_all", ETK_COLL_ALL_TO_ALL}, {"reduce_scatter", ETK_COLL_REDUCE_SCATTER},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(s, keys[i].k) == 0)
            return keys[i].t;
    return -1;
}

static int parse_dim(ydoc *y, const yaml_node_t *map, uint32_t idx, etk_net_dim *d)
{
    char where[64], what[128];
    snprintf(where, sizeof where, "network[%u]", idx);
    int rc = yexpect(y, map, YAML_MAPPING_NODE, where);
    if (rc || (rc = YKEYS(y, map, where, dim_keys)))
        return rc;
    memset(d, 0, sizeof *d);
    bool have[4] = {false, false, false, false};
    YFOR_PAIRS(y, map, pr) {
        yaml_node_t *k = YNODE(y, pr->key), *v = YNODE(y, pr->value);
        const char *key = yscalar(k) ? yscalar(k) : "";
        snprintf(what, sizeof what, "%s.%s", where, key);
        if (strcmp(key, "size") == 0) {
            if ((rc = ycount(y, v, what, &d->size)))
                return rc;
            have[0] = true;
        } else if (strcmp(key, "topology") == 0) {
            int t = yscalar(v) ? etk_topo_parse(yscalar(v)) : -1;
            if (t < 0)
                return etk_err(y->err, ETK_EINVAL,
                               "%s:%d: %s: unknown topology '%s' (expected Ring, "
                               "FullyConnected or Switch)",
                               y->file, yline(v), what, yscalar(v) ? yscalar(v) : ykind(v));
            d->topo = t;
            have[1] = true;
        } else if (strcmp(key, "bandwidth") == 0) {
            double bw;
            if ((rc = yrange(y, v, what, "GB/s per direction, 10^9 B/s,", 1e-3, 1e6, &bw)))
                return rc;
            d->bw_Bps = bw * 1e9;
            have[2] = true;
        } else if (strcmp(key, "latency") == 0) {
            if ((rc = yrange(y, v, what, "ns", 0, 1e9, &d->latency_ns)))
                return rc;
            have[3] = true;
        } else if (strcmp(key, "alltoall_efficiency") == 0) {
            if ((rc = yrange(y, v, what, "a fraction of the bandwidth", 0.01, 1, &d->a2a_eff)))
                return rc;
        } else if (strcmp(key, "algorithm") == 0) {
            if ((rc = yexpect(y, v, YAML_MAPPING_NODE, what)))
                return rc;
            YFOR_PAIRS(y, v, ap) {
                yaml_node_t *ak = YNODE(y, ap->key), *av = YNODE(y, ap->value);
                int ct = yscalar(ak) ? coll_key(yscalar(ak)) : -1;
                if (ct < 0)
                    return yunknown(y, ak, what,
                                    "all_reduce, reduce, all_gather, gather, scatter, "
                                    "broadcast, all_to_all, reduce_scatter");
                int a = yscalar(av) ? etk_algo_parse(yscalar(av)) : -1;
                if (a < 0)
                    return etk_err(y->err, ETK_EINVAL,
                                   "%s:%d: %s.%s: unknown algorithm '%s' (expected auto, ring, "
                                   "direct, halving-doubling or double-binary-tree)",
                                   y->file, yline(av), what, yscalar(ak),
                                   yscalar(av) ? yscalar(av) : ykind(av));
                if (a == ETK_ALGO_DOUBLE_BINARY_TREE && ct != ETK_COLL_ALL_REDUCE)
                    return etk_err(y->err, ETK_EINVAL,
                                   "%s:%d: %s.%s: double-binary-tree is only defined for "
                                   "all_reduce",
                                   y->file, yline(av), what, yscalar(ak));
                d->algo[ct] = a;
                if (ct == ETK_COLL_REDUCE_SCATTER)
                    d->algo[ETK_COLL_REDUCE_SCATTER_BLOCK] = a;
            }
        } else {
            return yunread(y, k, where);
        }
    }
    static const char *const names[4] = {"size", "topology", "bandwidth (GB/s)",
                                         "latency (ns)"};
    for (int i = 0; i < 4; i++)
        if (!have[i])
            return etk_err(y->err, ETK_EINVAL, "%s:%d: %s: missing %s", y->file, yline(map),
                           where, names[i]);
    return 0;
}

/* fabric: {rail, leaf_nodes, pod_nodes, leaf_oversubscription, pod_oversubscription,
 * nic_latency, switch_latency} (docs/network-model.md); the bandwidths and the NVLink latency come
 * from network[0] and the last dimension when the cluster is finished */
static int parse_fabric(ydoc *y, const yaml_node_t *map, etk_fabric *f)
{
    int rc = yexpect(y, map, YAML_MAPPING_NODE, "fabric");
    if (rc || (rc = YKEYS(y, map, "fabric", fabric_keys)))
        return rc;
    f->on = true;
    f->leaf_oversub = f->pod_oversub = 1;
    YFOR_PAIRS(y, map, pr) {
        yaml_node_t *k = YNODE(y, pr->key), *v = YNODE(y, pr->value);
        const char *key = yscalar(k) ? yscalar(k) : "";
        if (strcmp(key, "rail") == 0) {
            const char *s = yscalar(v);
            if (!s || (strcmp(s, "true") && strcmp(s, "false")))
                return etk_err(y->err, ETK_EINVAL, "%s:%d: fabric.rail: expected true or false, "
                               "got %s", y->file, yline(v), s ? s : ykind(v));
            f->rail = strcmp(s, "true") == 0;
        } else if (strcmp(key, "leaf_nodes") == 0) {
            if ((rc = ycount(y, v, "fabric.leaf_nodes", &f->leaf_nodes)))
                return rc;
        } else if (strcmp(key, "pod_nodes") == 0) {
            if ((rc = ycount(y, v, "fabric.pod_nodes", &f->pod_nodes)))
                return rc;
        } else if (strcmp(key, "leaf_oversubscription") == 0 ||
                   strcmp(key, "pod_oversubscription") == 0) {
            double *dst = key[0] == 'l' ? &f->leaf_oversub : &f->pod_oversub;
            if ((rc = ypositive(y, v, key, "a ratio >= 1 (7 for 1:7)", dst)))
                return rc;
            if (*dst < 1 || *dst > 1e4)
                return etk_err(y->err, ETK_EINVAL, "%s:%d: fabric.%s: expected a ratio >= 1 and <= 10000 "
                               "(downlink:uplink, 7 for 1:7), got %s", y->file, yline(v), key,
                               yscalar(v));
        } else if (strcmp(key, "nic_latency") == 0) {
            if ((rc = yrange(y, v, "fabric.nic_latency", "ns", 0, 1e9, &f->nic_lat_ns)))
                return rc;
        } else if (strcmp(key, "switch_latency") == 0) {
            if ((rc = yrange(y, v, "fabric.switch_latency", "ns", 0, 1e9, &f->switch_lat_ns)))
                return rc;
        } else {
            return yunread(y, k, "fabric");
        }
    }
    if (!f->leaf_nodes)
        return etk_err(y->err, ETK_EINVAL, "%s:%d: fabric: missing leaf_nodes (nodes under one "
                       "leaf switch)", y->file, yline(map));
    if (f->nic_lat_ns < 0 || f->switch_lat_ns < 0)
        return etk_err(y->err, ETK_EINVAL, "%s:%d: fabric: latencies must be >= 0 ns", y->file,
                       yline(map));
    return 0;
}

static int parse_cluster(ydoc *y, const yaml_node_t *root, etk_cluster *c)
{
    int rc = yexpect(y, root, YAML_MAPPING_NODE, "top level");
    if (rc || (rc = YKEYS(y, root, "the cluster", cluster_keys)))
        return rc;
    bool have_gpu = false, have_net = false;
    uint32_t nodes = 0;
    const yaml_node_t *nodes_node = NULL;
    /* `preset:` first, whatever its position: the other keys override the preset */
    YFOR_PAIRS(y, root, pr) {
        yaml_node_t *k = YNODE(y, pr->key), *v = YNODE(y, pr->value);
        if (!yscalar(k) || strcmp(yscalar(k), "preset") != 0)
            continue;
        etk_error e2 = {0};
        if (!yscalar(v) || etk_cluster_preset(yscalar(v), 1, c, &e2))
            return etk_err(y->err, yscalar(v) ? e2.code : ETK_EFORMAT, "%s:%d: preset: %s",
                           y->file, yline(v),
                           yscalar(v) ? e2.msg : "expected a preset name such as dgx-h100");
        have_gpu = have_net = true;
    }
    YFOR_PAIRS(y, root, pr) {
        yaml_node_t *k = YNODE(y, pr->key), *v = YNODE(y, pr->value);
        const char *key = yscalar(k) ? yscalar(k) : "";
        if (strcmp(key, "preset") == 0) {
            continue;
        } else if (strcmp(key, "nodes") == 0) {
            if ((rc = ycount(y, v, "nodes", &nodes)))
                return rc;
            nodes_node = v;
        } else if (strcmp(key, "name") == 0) {
            if ((rc = yexpect(y, v, YAML_SCALAR_NODE, "name")))
                return rc;
            snprintf(c->name, sizeof c->name, "%s", yscalar(v));
        } else if (strcmp(key, "gpu") == 0) {
            if (yscalar(v)) {
                etk_error e2 = {0};
                if (etk_gpu_preset(yscalar(v), &c->gpu, &e2))
                    return etk_err(y->err, e2.code, "%s:%d: gpu: %s", y->file, yline(v),
                                   e2.msg);
            } else if ((rc = parse_gpu_map(y, v, "gpu", &c->gpu))) {
                return rc;
            }
            have_gpu = true;
        } else if (strcmp(key, "network") == 0) {
            if ((rc = yexpect(y, v, YAML_SEQUENCE_NODE, "network")))
                return rc;
            uint32_t n = 0;
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++, n++) {
                if (n >= ETK_MAX_DIMS)
                    return etk_err(y->err, ETK_EINVAL,
                                   "%s:%d: network: at most %d dimensions are supported",
                                   y->file, yline(v), ETK_MAX_DIMS);
                if ((rc = parse_dim(y, YNODE(y, *it), n, &c->dims[n])))
                    return rc;
            }
            if (n == 0)
                return etk_err(y->err, ETK_EINVAL,
                               "%s:%d: network: expected at least one dimension", y->file,
                               yline(v));
            c->n_dims = n;
            have_net = true;
        } else if (strcmp(key, "compute_efficiency") == 0) {
            if ((rc = ypositive(y, v, "compute_efficiency", "a fraction in [0.001, 1]",
                                &c->compute_efficiency)))
                return rc;
            if (c->compute_efficiency > 1 || c->compute_efficiency < 1e-3)
                return etk_err(y->err, ETK_EINVAL,
                               "%s:%d: compute_efficiency: expected a fraction in [0.001, 1], got %s",
                               y->file, yline(v), yscalar(v));
        } else if (strcmp(key, "precision") == 0) {
            int p = yscalar(v) ? etk_precision_parse(yscalar(v)) : -1;
            if (p < 0)
                return etk_err(y->err, ETK_EINVAL,
                               "%s:%d: precision: expected bf16, fp16, fp8, fp32 or tf32, got %s",
                               y->file, yline(v), yscalar(v) ? yscalar(v) : ykind(v));
            c->precision = (etk_precision)p;
        } else if (strcmp(key, "fabric") == 0) {
            if ((rc = parse_fabric(y, v, &c->fabric)))
                return rc;
        } else if (strcmp(key, "network_model") == 0) {
            const char *s = yscalar(v);
            if (s && strcmp(s, "flow") == 0)
                c->net_model = ETK_NET_FLOW;
            else if (s && strcmp(s, "analytical") == 0)
                c->net_model = ETK_NET_ANALYTICAL;
            else
                return etk_err(y->err, ETK_EINVAL, "%s:%d: network_model: expected flow or "
                               "analytical, got %s", y->file, yline(v), s ? s : ykind(v));
        } else {
            return yunread(y, k, "the cluster");
        }
    }
    if (!have_gpu)
        return etk_err(y->err, ETK_EINVAL,
                       "%s: missing 'gpu' (a preset name such as h100, or a mapping)", y->file);
    if (!have_net)
        return etk_err(y->err, ETK_EINVAL,
                       "%s: missing 'network' (a list of {size, topology, bandwidth, latency})",
                       y->file);
    if (nodes_node) {
        if (nodes > (1u << 24))
            return etk_err(y->err, ETK_EINVAL, "%s:%d: nodes: expected at most 16777216, got %u",
                           y->file, yline(nodes_node), nodes);
        c->dims[c->n_dims - 1].size = nodes; /* the last dimension is the node dimension */
    }
    net_cluster_finish(c);
    return 0;
}

void net_cluster_finish(etk_cluster *c)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < c->n_dims; i++)
        if (__builtin_mul_overflow(n, (uint64_t)c->dims[i].size, &n)) /* sizes up to 1e9 each */
            n = UINT64_MAX;
    c->n_npus = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    if (c->fabric.on && c->n_dims >= 1) {
        /* a described fabric takes its sizes and bandwidths from the dimensions:
         * network[0] is the NVSwitch node, the product of the others the nodes, the last one
         * the NIC */
        etk_fabric *f = &c->fabric;
        f->gpus_per_node = c->dims[0].size ? c->dims[0].size : 1;
        f->nodes = c->n_npus / f->gpus_per_node ? c->n_npus / f->gpus_per_node : 1;
        f->nvlink_Bps = c->dims[0].bw_Bps;
        f->nvlink_lat_ns = c->dims[0].latency_ns;
        f->nic_Bps = c->n_dims > 1 ? c->dims[c->n_dims - 1].bw_Bps : c->dims[0].bw_Bps;
        if (!f->leaf_nodes)
            f->leaf_nodes = 1;
    }
}

static int cluster_from_text(const char *file, const char *text, size_t len, etk_cluster *out,
                             etk_error *err)
{
    etk_cluster c;
    etk_cluster_init(&c);
    ydoc y = {.file = file, .err = err};
    int rc = yload(&y, text, len);
    if (rc)
        return rc;
    yaml_node_t *root = yaml_document_get_root_node(&y.doc);
    if (!root)
        rc = etk_err(err, ETK_EFORMAT, "%s: empty cluster file (expected gpu: and network:)",
                     file);
    else
        rc = parse_cluster(&y, root, &c);
    yaml_document_delete(&y.doc);
    if (rc)
        return rc;
    if ((rc = etk_cluster_check(&c, 0, err)))
        return etk_err_prefix(err, "%s", file);
    *out = c;
    return 0;
}

int etk_cluster_parse(const char *text, size_t len, const char *name, etk_cluster *out,
                      etk_error *err)
{
    return cluster_from_text(name ? name : "<cluster>", text, len, out, err);
}

char *etk_cluster_describe(const etk_cluster *c, char *buf, size_t size)
{
    if (!size)
        return buf;
    int p = (int)c->precision >= 0 && c->precision < ETK_PREC_COUNT ? (int)c->precision : 0;
    size_t o = (size_t)snprintf(buf, size, "%s: %u x %s (%g TFLOP/s %s, %g GB/s HBM); network ",
                                c->name, c->n_npus, c->gpu.name, c->gpu.peak_flops[p] / 1e12,
                                etk_precision_name(p), c->gpu.hbm_bw_Bps / 1e9);
    for (uint32_t i = 0; i < c->n_dims && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%u %s %g GB/s %g ns", i ? " x " : "",
                              c->dims[i].size, etk_topo_name(c->dims[i].topo),
                              c->dims[i].bw_Bps / 1e9, c->dims[i].latency_ns);
    if (c->astra_compat && o < size)
        snprintf(buf + o, size - o, "; ASTRA-sim compat (C=%u, e=%g ns)", c->astra_splits,
                 c->astra_endpoint_delay_ns);
    return buf;
}

int etk_cluster_load(const char *path, etk_cluster *out, etk_error *err)
{
    char *text;
    size_t len;
    int rc = etk_file_read_max(path, ETK_MAX_CONFIG_BYTES, "cluster file", &text, &len, err);
    if (rc)
        return rc;
    rc = cluster_from_text(path, text, len, out, err);
    free(text);
    if (rc == 0 && !out->name[0]) {
        const char *b = strrchr(path, '/');
        snprintf(out->name, sizeof out->name, "%s", b ? b + 1 : path);
    }
    return rc;
}

int etk_cluster_preset(const char *name, uint32_t nodes, etk_cluster *out, etk_error *err)
{
    return etk_cluster_preset_gpus(name, nodes, 0, out, err);
}

int etk_cluster_preset_gpus(const char *name, uint32_t nodes, uint32_t gpus, etk_cluster *out, etk_error *err)
{
    char rel[128];
    snprintf(rel, sizeof rel, "clusters/%s.yaml", name);
    const etk_embedded *e = strlen(name) < 64 ? etk_preset_file(rel) : NULL;
    if (!e)
        return etk_err(err, ETK_ENOTFOUND,
                       "unknown cluster preset '%s' (known: dgx-a100, dgx-h100, hgx-h200, "
                       "dgx-b200, dgx-h100-superpod, llama3)",
                       name);
    if (nodes < 1 || nodes > (1u << 24))
        return etk_err(err, ETK_EINVAL,
                       "cluster preset %s: --nodes must be between 1 and 16777216, got %u", name,
                       nodes);
    etk_cluster c;
    int rc = cluster_from_text(rel, (const char *)e->data, e->len, &c, err);
    if (rc)
        return rc;
    c.dims[c.n_dims - 1].size = nodes; /* the node dimension */
    if (gpus) { /* one node with fewer GPUs than the preset's (--gpus N) */
        if (c.n_dims < 2 || gpus > c.dims[0].size || nodes != 1)
            return etk_err(err, ETK_EINVAL,
                           "cluster preset %s: --gpus %u: one node of 1 to %u GPUs (for more GPUs use "
                           "--nodes, whole nodes of %u)", name, gpus, c.n_dims < 2 ? 1 : c.dims[0].size,
                           c.dims[0].size);
        c.dims[0].size = gpus;
    }
    net_cluster_finish(&c);
    *out = c;
    return 0;
}

int etk_cluster_check(const etk_cluster *c, uint32_t n_ranks, etk_error *err)
{
    if (c->n_dims < 1 || c->n_dims > ETK_MAX_DIMS)
        return etk_err(err, ETK_EINVAL, "cluster '%s': expected 1 to %d network dimensions, got %u",
                       c->name, ETK_MAX_DIMS, c->n_dims);
    uint64_t n = 1;
    double prod = 1; /* for the message when n saturates */
    for (uint32_t i = 0; i < c->n_dims; i++) {
        const etk_net_dim *d = &c->dims[i];
        if (d->size < 1)
            return etk_err(err, ETK_EINVAL, "cluster '%s': network[%u].size: expected >= 1, got %u",
                           c->name, i, d->size);
        if (d->topo < 0 || d->topo > ETK_TOPO_SWITCH)
            return etk_err(err, ETK_EINVAL,
                           "cluster '%s': network[%u].topology: unknown topology %d (expected "
                           "Ring, FullyConnected or Switch)",
                           c->name, i, d->topo);
        if (!(d->bw_Bps > 0) || !isfinite(d->bw_Bps))
            return etk_err(err, ETK_EINVAL,
                           "cluster '%s': network[%u].bandwidth: expected a positive GB/s, got %g",
                           c->name, i, d->bw_Bps / 1e9);
        if (!(d->latency_ns >= 0) || !isfinite(d->latency_ns))
            return etk_err(err, ETK_EINVAL,
                           "cluster '%s': network[%u].latency: expected ns >= 0, got %g", c->name,
                           i, d->latency_ns);
        if (!(d->a2a_eff == 0 || (d->a2a_eff >= 0.01 && d->a2a_eff <= 1)))
            return etk_err(err, ETK_EINVAL,
                           "cluster '%s': network[%u].alltoall_efficiency: expected a fraction in "
                           "[0.01, 1] (0: unset, line rate), got %g",
                           c->name, i, d->a2a_eff);
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            if (d->algo[t] < 0 || d->algo[t] > ETK_ALGO_DOUBLE_BINARY_TREE)
                return etk_err(err, ETK_EINVAL,
                               "cluster '%s': network[%u]: unknown algorithm %d for %s", c->name,
                               i, d->algo[t], etk_coll_type_name(t));
        if (__builtin_mul_overflow(n, (uint64_t)d->size, &n))
            n = UINT64_MAX;
        prod *= d->size;
    }
    if (n > UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "cluster '%s': the dimension sizes multiply to %.3g NPUs, more than "
                       "etkit supports (4294967295)", c->name, prod);
    if (c->n_npus != n)
        return etk_err(err, ETK_EINVAL,
                       "cluster '%s': n_npus is %u but the dimensions multiply to %llu", c->name,
                       c->n_npus, (unsigned long long)n);
    if (c->net_model == ETK_NET_FLOW && !c->astra_compat && net_flow_fabric_links(c) > UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "cluster '%s': network_model: flow: the fabric of %u GPUs "
                       "has %llu links, more than the flow model supports (%u, about 1 billion "
                       "GPUs); use network_model: analytical", c->name, c->n_npus,
                       (unsigned long long)net_flow_fabric_links(c), UINT32_MAX);
    if (!(c->compute_efficiency >= 1e-3 && c->compute_efficiency <= 1)) /* as the YAML and --efficiency */
        return etk_err(err, ETK_EINVAL,
                       "cluster '%s': compute_efficiency: expected a fraction in [0.001, 1], got %g",
                       c->name, c->compute_efficiency);
    if ((int)c->precision < 0 || c->precision >= ETK_PREC_COUNT)
        return etk_err(err, ETK_EINVAL, "cluster '%s': unknown precision %d", c->name,
                       (int)c->precision);
    if (!(c->gpu.peak_flops[c->precision] > 0))
        return etk_err(err, ETK_EINVAL,
                       "cluster '%s': gpu %s has no %s peak (set gpu.peak_tflops.%s or choose "
                       "another precision)",
                       c->name, c->gpu.name, etk_precision_name(c->precision),
                       etk_precision_name(c->precision));
    if (!(c->gpu.hbm_bw_Bps > 0))
        return etk_err(err, ETK_EINVAL, "cluster '%s': gpu %s: HBM bandwidth must be positive",
                       c->name, c->gpu.name);
    if (c->astra_compat) {
        if (c->astra_splits < 1)
            return etk_err(err, ETK_EINVAL,
                           "cluster '%s': preferred-dataset-splits must be >= 1", c->name);
        if (c->astra_active_chunks < 1)
            return etk_err(err, ETK_EINVAL,
                           "cluster '%s': active-chunks-per-dimension must be >= 1", c->name);
        if (!(c->astra_local_mem_bw_GBps > 0))
            return etk_err(err, ETK_EINVAL, "cluster '%s': local-mem-bw must be positive",
                           c->name);
        if (!(c->astra_endpoint_delay_ns >= 0))
            return etk_err(err, ETK_EINVAL, "cluster '%s': endpoint-delay must be >= 0",
                           c->name);
    }
    if (n_ranks && n != n_ranks)
        return etk_err(err, ETK_EINVAL,
                       "cluster '%s' has %llu NPUs (%s) but the workload has %u ranks: the "
                       "sizes must be equal",
                       c->name, (unsigned long long)n, net_dims_str(c), n_ranks);
    return 0;
}

const char *net_dims_str(const etk_cluster *c)
{
    static _Thread_local char buf[256];
    size_t o = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < c->n_dims && o < sizeof buf - 32; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%u %s", i ? " x " : "", c->dims[i].size,
                              etk_topo_name(c->dims[i].topo));
    return buf;
}
