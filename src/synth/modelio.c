/* modelio.c — the synth model file: one JSON document, format "etkit-synth-model", version 5
 * (docs/synth.md "Model file"), written atomically; the reader checks every field and names the
 * file and the field in its errors. */
#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/jsonfile.h"
#include "layerdag.h"
#include "synth_internal.h"

#define FORMAT "etkit-synth-model"
#define VERSION 5 /* 2: the LayerDAG part gained the far-parent classifier; 3: the attribute scale classes;
                   * 4: the LayerDAG graph profiles (layer count and scale class per training graph);
                   * 5: the LayerDAG token, edge and far-parent nets no longer read the whole prefix's
                   *    token histogram (same layout, other meaning: a version-4 net would be fed zeros) */
static const char *attr_names[ETK_SYNTH_N_ATTR] = {"flops", "tensor_bytes", "comm_bytes", "duration_us"};

static json_t *hist_json(const shist *h)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < h->n; i++)
        json_array_append_new(a, json_pack("[I,I]", (json_int_t)h->key[i], (json_int_t)h->cnt[i]));
    return a;
}

static json_t *tok_hists(const shist *h)
{
    json_t *o = json_object();
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        if (h[t].n)
            json_object_set_new(o, etk_synth_tok_name(t), hist_json(&h[t]));
    return o;
}

int etk_synth_model_save(const etk_synth_model *m, const char *path, etk_error *err)
{
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string(FORMAT));
    json_object_set_new(root, "version", json_integer(VERSION));
    json_object_set_new(root, "kind", json_string(m->ld ? "layerdag" : "count"));
    json_object_set_new(root, "graphs", json_integer(m->n_graphs));
    json_object_set_new(root, "bins", json_integer(ETK_SYNTH_N_BINS));
    json_object_set_new(root, "position_buckets", json_integer(SYN_POS_BUCKETS));
    json_object_set_new(root, "size_cap", json_integer(SYN_SIZE_CAP));
    json_t *toks = json_array();
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        json_array_append_new(toks, json_string(etk_synth_tok_name(t)));
    json_object_set_new(root, "tokens", toks);
    json_object_set_new(root, "layer_count", hist_json(&m->layer_count));
    json_t *ctx = json_array();
    for (uint32_t i = 0; i < m->n_ctx; i++)
        json_array_append_new(ctx, json_pack("[I,o]", (json_int_t)m->ctx_key[i], hist_json(&m->ctx_hist[i])));
    json_t *bypos = json_array();
    for (int p = 0; p < SYN_POS_BUCKETS; p++)
        json_array_append_new(bypos, hist_json(&m->size_pos[p]));
    json_object_set_new(root, "layer_size",
                        json_pack("{s:o,s:o,s:o}", "contexts", ctx, "by_position", bypos, "all", hist_json(&m->size_all)));
    json_t *tp = json_array();
    for (int p = 0; p <= ETK_SYNTH_N_TOKENS; p++)
        for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
            if (m->tok_given_parent[p][t])
                json_array_append_new(tp, json_pack("[i,i,I]", p, t, (json_int_t)m->tok_given_parent[p][t]));
    json_object_set_new(root, "token_given_parent", tp);
    json_t *marg = json_array();
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        json_array_append_new(marg, json_integer(m->tok_marginal[t]));
    json_object_set_new(root, "token_marginal", marg);
    json_object_set_new(root, "in_degree", tok_hists(m->indeg));
    json_object_set_new(root, "parent_distance", tok_hists(m->dist));
    json_object_set_new(root, "attr_bins", tok_hists(m->bins));
    json_t *edges = json_object();
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
        if (!m->tok_marginal[t])
            continue;
        json_t *e = json_object();
        for (int a = 0; a < ETK_SYNTH_N_ATTR; a++) {
            json_t *row = json_array();
            for (int k = 0; k <= ETK_SYNTH_N_BINS; k++)
                json_array_append_new(row, json_real(m->edges[t][a][k]));
            json_object_set_new(e, attr_names[a], row);
        }
        json_object_set_new(edges, etk_synth_tok_name(t), e);
    }
    json_object_set_new(root, "attr_edges", edges);
    json_t *sb = json_array(), *scut = json_array(), *sg = json_array();
    for (int c = 0; c < SYN_SCALE_CLASSES; c++) {
        json_array_append_new(sb, tok_hists(m->sbins[c]));
        json_array_append_new(sg, json_integer(m->scale_graphs[c]));
    }
    for (int c = 0; c < SYN_SCALE_CLASSES - 1; c++)
        json_array_append_new(scut, json_real(m->scut[c]));
    json_object_set_new(root, "attr_bins_by_scale", json_pack("{s:o,s:o,s:o}", "bounds", scut, "graphs", sg, "bins", sb));
    json_object_set_new(root, "world_sizes", hist_json(&m->world));
    json_object_set_new(root, "inner_sizes", hist_json(&m->inner));
    json_t *wl = json_array();
    for (uint32_t i = 0; i < m->n_wl; i++) {
        char hex[20];
        snprintf(hex, sizeof hex, "%016" PRIx64, m->wl[i]);
        json_array_append_new(wl, json_string(hex));
    }
    json_object_set_new(root, "wl_hashes", wl);
    if (m->ld)
        json_object_set_new(root, "layerdag", syn_ld_json(m->ld));
    if (m->ld && m->ld->labeled) {
        json_t *lb = json_array(), *cut = json_array();
        for (int q = 0; q < LD_LABEL_BUCKETS; q++)
            json_array_append_new(lb, tok_hists(m->ld->lbins[q]));
        for (int q = 0; q < LD_LABEL_BUCKETS - 1; q++)
            json_array_append_new(cut, json_real(m->ld->lcut_ns[q]));
        json_object_set_new(root, "attr_bins_by_label", json_pack("{s:o,s:o}", "bounds_ns", cut, "bins", lb));
    }
    char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text)
        return etk_err(err, ETK_ENOMEM, "out of memory writing %s", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps' NUL replaced: the file ends in a newline */
    int rc = etk_file_write_all(path, text, len + 1, err);
    free(text);
    return rc;
}

/* ---------- reading ---------- */
typedef struct rd {
    const char *path;
    etk_error *err;
} rd;

static int bad(rd *r, const char *field, const char *want)
{
    return etk_err(r->err, ETK_EFORMAT, "%s: field '%s': %s", r->path, field, want);
}

static int read_hist(rd *r, json_t *a, const char *field, shist *h)
{
    if (!json_is_array(a))
        return bad(r, field, "wanted an array of [value, count] pairs");
    size_t i;
    json_t *p;
    json_array_foreach(a, i, p)
    {
        json_t *k = json_array_get(p, 0), *c = json_array_get(p, 1);
        if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_integer(k) || !json_is_integer(c) ||
            json_integer_value(k) < 0 || json_integer_value(k) > UINT32_MAX || json_integer_value(c) < 1 ||
            json_integer_value(c) > UINT32_MAX)
            return bad(r, field, "wanted [value, count] pairs of non-negative integers with count >= 1");
        if (shist_add(h, (uint32_t)json_integer_value(k), (uint32_t)json_integer_value(c)))
            return etk_err(r->err, ETK_ENOMEM, "out of memory reading %s", r->path);
    }
    return 0;
}

static int read_tok_hists_obj(rd *r, json_t *o, const char *field, shist *h)
{
    if (!json_is_object(o))
        return bad(r, field, "wanted an object keyed by token names");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        int t = etk_synth_tok_parse(key);
        char f[128];
        snprintf(f, sizeof f, "%s.%s", field, key);
        if (t < 0)
            return bad(r, f, "unknown token name (see docs/synth.md \"Tokens\")");
        int rc = read_hist(r, v, f, &h[t]);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_tok_hists(rd *r, json_t *root, const char *field, shist *h)
{
    return read_tok_hists_obj(r, json_object_get(root, field), field, h);
}

int etk_synth_model_load(const char *path, etk_synth_model **out, etk_error *err)
{
    *out = NULL;
    json_t *root = NULL;
    int rc = etk_json_file_load(path, (size_t)1 << 30, "synth model file", 0, &root, err);
    if (rc)
        return rc;
    rd r = {path, err};
    etk_synth_model *m = calloc(1, sizeof *m);
    if (!m) {
        json_decref(root);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    json_t *f = json_object_get(root, "format"), *v = json_object_get(root, "version");
    if (!json_is_string(f) || strcmp(json_string_value(f), FORMAT)) {
        rc = bad(&r, "format", "wanted \"" FORMAT "\" (a file written by 'etkit synth fit')");
        goto done;
    }
    if (!json_is_integer(v) || json_integer_value(v) != VERSION) {
        rc = bad(&r, "version", "wanted 5 (this etkit reads synth model files of version 5; version 5 changed the "
                 "inputs of the LayerDAG nets; refit older files with 'etkit synth fit')");
        goto done;
    }
    json_t *kind = json_object_get(root, "kind");
    bool has_ld = json_is_string(kind) && !strcmp(json_string_value(kind), "layerdag");
    if (!json_is_string(kind) || (strcmp(json_string_value(kind), "count") && !has_ld)) {
        rc = bad(&r, "kind", "wanted \"count\" or \"layerdag\"");
        goto done;
    }
    json_t *ng = json_object_get(root, "graphs"), *nb = json_object_get(root, "bins");
    json_t *npb = json_object_get(root, "position_buckets"), *cap = json_object_get(root, "size_cap");
    if (!json_is_integer(ng) || json_integer_value(ng) < 1 || json_integer_value(ng) > UINT32_MAX) {
        rc = bad(&r, "graphs", "wanted a positive integer");
        goto done;
    }
    m->n_graphs = (uint32_t)json_integer_value(ng);
    if (!json_is_integer(nb) || json_integer_value(nb) != ETK_SYNTH_N_BINS || !json_is_integer(npb) ||
        json_integer_value(npb) != SYN_POS_BUCKETS || !json_is_integer(cap) || json_integer_value(cap) != SYN_SIZE_CAP) {
        rc = bad(&r, "bins", "wanted bins 8, position_buckets 8, size_cap 4096 (the constants of version 5)");
        goto done;
    }
    json_t *toks = json_object_get(root, "tokens");
    if (!json_is_array(toks) || json_array_size(toks) != ETK_SYNTH_N_TOKENS) {
        rc = bad(&r, "tokens", "wanted the 43 token names of version 5");
        goto done;
    }
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
        json_t *s = json_array_get(toks, (size_t)t);
        if (!json_is_string(s) || strcmp(json_string_value(s), etk_synth_tok_name(t))) {
            rc = bad(&r, "tokens", "wanted the token names of version 5 in their order");
            goto done;
        }
    }
    if ((rc = read_hist(&r, json_object_get(root, "layer_count"), "layer_count", &m->layer_count)))
        goto done;
    if (!m->layer_count.total) {
        rc = bad(&r, "layer_count", "wanted at least one entry");
        goto done;
    }
    json_t *ls = json_object_get(root, "layer_size");
    json_t *ctx = json_object_get(ls, "contexts"), *bypos = json_object_get(ls, "by_position");
    if (!json_is_array(ctx) || !json_is_array(bypos) || json_array_size(bypos) != SYN_POS_BUCKETS) {
        rc = bad(&r, "layer_size", "wanted {\"contexts\": [...], \"by_position\": [8 histograms], \"all\": [...]}");
        goto done;
    }
    size_t i;
    json_t *c;
    json_array_foreach(ctx, i, c)
    {
        json_t *k = json_array_get(c, 0);
        if (!json_is_integer(k) || json_integer_value(k) < 0 || json_integer_value(k) > UINT32_MAX) {
            rc = bad(&r, "layer_size.contexts", "wanted [key, histogram] pairs");
            goto done;
        }
        shist *h = syn_ctx(m, (uint32_t)json_integer_value(k), 1);
        if (!h) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
            goto done;
        }
        if ((rc = read_hist(&r, json_array_get(c, 1), "layer_size.contexts", h)))
            goto done;
    }
    for (int p = 0; p < SYN_POS_BUCKETS; p++)
        if ((rc = read_hist(&r, json_array_get(bypos, (size_t)p), "layer_size.by_position", &m->size_pos[p])))
            goto done;
    if ((rc = read_hist(&r, json_object_get(ls, "all"), "layer_size.all", &m->size_all)))
        goto done;
    json_t *tp = json_object_get(root, "token_given_parent");
    if (!json_is_array(tp)) {
        rc = bad(&r, "token_given_parent", "wanted an array of [parent, token, count]");
        goto done;
    }
    json_array_foreach(tp, i, c)
    {
        json_int_t p = json_integer_value(json_array_get(c, 0)), t = json_integer_value(json_array_get(c, 1));
        json_int_t n = json_integer_value(json_array_get(c, 2));
        if (json_array_size(c) != 3 || p < 0 || p > ETK_SYNTH_N_TOKENS || t < 0 || t >= ETK_SYNTH_N_TOKENS || n < 1 ||
            n > UINT32_MAX) {
            rc = bad(&r, "token_given_parent", "wanted [parent 0..43, token 0..42, count >= 1] triples");
            goto done;
        }
        m->tok_given_parent[p][t] = (uint32_t)n;
    }
    json_t *marg = json_object_get(root, "token_marginal");
    if (!json_is_array(marg) || json_array_size(marg) != ETK_SYNTH_N_TOKENS) {
        rc = bad(&r, "token_marginal", "wanted 43 counts");
        goto done;
    }
    uint64_t mt = 0;
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
        json_int_t n = json_integer_value(json_array_get(marg, (size_t)t));
        if (!json_is_integer(json_array_get(marg, (size_t)t)) || n < 0 || n > UINT32_MAX) {
            rc = bad(&r, "token_marginal", "wanted 43 non-negative counts");
            goto done;
        }
        m->tok_marginal[t] = (uint32_t)n;
        mt += (uint64_t)n;
    }
    if (!mt) {
        rc = bad(&r, "token_marginal", "wanted some token with a count");
        goto done;
    }
    if ((rc = read_tok_hists(&r, root, "in_degree", m->indeg)) ||
        (rc = read_tok_hists(&r, root, "parent_distance", m->dist)) ||
        (rc = read_tok_hists(&r, root, "attr_bins", m->bins)))
        goto done;
    json_t *edges = json_object_get(root, "attr_edges");
    if (!json_is_object(edges)) {
        rc = bad(&r, "attr_edges", "wanted an object keyed by token names");
        goto done;
    }
    const char *key;
    json_object_foreach(edges, key, c)
    {
        int t = etk_synth_tok_parse(key);
        if (t < 0) {
            rc = bad(&r, "attr_edges", "unknown token name");
            goto done;
        }
        for (int a = 0; a < ETK_SYNTH_N_ATTR; a++) {
            json_t *row = json_object_get(c, attr_names[a]);
            if (!json_is_array(row) || json_array_size(row) != ETK_SYNTH_N_BINS + 1) {
                rc = bad(&r, "attr_edges", "wanted 9 ascending bin edges per attribute");
                goto done;
            }
            for (int k = 0; k <= ETK_SYNTH_N_BINS; k++) {
                json_t *x = json_array_get(row, (size_t)k);
                double d = json_number_value(x);
                if (!json_is_number(x) || d < 0 || d > 1e30 || (k && d < m->edges[t][a][k - 1])) {
                    rc = bad(&r, "attr_edges", "wanted 9 ascending non-negative bin edges per attribute");
                    goto done;
                }
                m->edges[t][a][k] = d;
            }
        }
    }
    /* the attribute scale classes (version 3) */
    json_t *so = json_object_get(root, "attr_bins_by_scale"), *sb = json_object_get(so, "bins"),
           *scut = json_object_get(so, "bounds"), *sg = json_object_get(so, "graphs");
    if (!json_is_array(sb) || json_array_size(sb) != SYN_SCALE_CLASSES || !json_is_array(scut) ||
        json_array_size(scut) != SYN_SCALE_CLASSES - 1 || !json_is_array(sg) || json_array_size(sg) != SYN_SCALE_CLASSES) {
        rc = bad(&r, "attr_bins_by_scale", "wanted {\"bounds\": [63 ascending numbers], \"graphs\": [64 counts], \"bins\": "
                 "[64 objects keyed by token names]}");
        goto done;
    }
    uint64_t sgt = 0;
    for (int c = 0; c < SYN_SCALE_CLASSES; c++) {
        json_t *x = json_array_get(sg, (size_t)c);
        json_int_t k = json_integer_value(x);
        if (!json_is_integer(x) || k < 0 || k > UINT32_MAX) {
            rc = bad(&r, "attr_bins_by_scale.graphs", "wanted 64 non-negative counts");
            goto done;
        }
        m->scale_graphs[c] = (uint32_t)k;
        sgt += (uint64_t)k;
        if (c == SYN_SCALE_CLASSES - 1)
            break;
        x = json_array_get(scut, (size_t)c);
        double d = json_number_value(x);
        if (!json_is_number(x) || !(d >= 0 && d <= ETK_SYNTH_N_BINS) || (c && d < m->scut[c - 1])) {
            rc = bad(&r, "attr_bins_by_scale.bounds", "wanted 63 ascending numbers in [0, 8] (mean bin indices)");
            goto done;
        }
        m->scut[c] = d;
    }
    if (!sgt) {
        rc = bad(&r, "attr_bins_by_scale.graphs", "wanted some class with a graph");
        goto done;
    }
    for (int c = 0; c < SYN_SCALE_CLASSES; c++) {
        char f[64];
        snprintf(f, sizeof f, "attr_bins_by_scale.bins[%d]", c);
        if ((rc = read_tok_hists_obj(&r, json_array_get(sb, (size_t)c), f, m->sbins[c])))
            goto done;
    }
    if ((rc = read_hist(&r, json_object_get(root, "world_sizes"), "world_sizes", &m->world)) ||
        (rc = read_hist(&r, json_object_get(root, "inner_sizes"), "inner_sizes", &m->inner)))
        goto done;
    json_t *wl = json_object_get(root, "wl_hashes");
    if (!json_is_array(wl)) {
        rc = bad(&r, "wl_hashes", "wanted an array of 16-digit hex strings");
        goto done;
    }
    m->wl = malloc((json_array_size(wl) + 1) * sizeof *m->wl);
    if (!m->wl) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto done;
    }
    json_array_foreach(wl, i, c)
    {
        const char *s = json_string_value(c);
        char *end;
        if (!s || strlen(s) != 16) {
            rc = bad(&r, "wl_hashes", "wanted 16-digit hex strings");
            goto done;
        }
        m->wl[i] = strtoull(s, &end, 16);
        if (*end || (i && m->wl[i] < m->wl[i - 1])) {
            rc = bad(&r, "wl_hashes", "wanted ascending 16-digit hex strings");
            goto done;
        }
    }
    m->n_wl = (uint32_t)json_array_size(wl);
    if (has_ld && (rc = syn_ld_from_json(json_object_get(root, "layerdag"), path, &m->ld, err)))
        goto done;
    /* labeled models (s23 on): attribute bins given the label bucket; absent (older labeled
     * files): the token's bins serve every label */
    json_t *lo = json_object_get(root, "attr_bins_by_label"), *lb = json_object_get(lo, "bins"),
           *cut = json_object_get(lo, "bounds_ns");
    if (lo && (!m->ld || !m->ld->labeled || !json_is_array(lb) || json_array_size(lb) != LD_LABEL_BUCKETS ||
               !json_is_array(cut) || json_array_size(cut) != LD_LABEL_BUCKETS - 1)) {
        rc = bad(&r, "attr_bins_by_label", "wanted {\"bounds_ns\": [7 ascending numbers], \"bins\": [8 objects keyed by "
                 "token names]}, in a labeled LayerDAG model only");
        goto done;
    }
    for (int q = 0; lo && q < LD_LABEL_BUCKETS - 1; q++) {
        json_t *x = json_array_get(cut, (size_t)q);
        double d = json_number_value(x);
        if (!json_is_number(x) || !(d > 0) || !isfinite(d) || (q && d < m->ld->lcut_ns[q - 1])) {
            rc = bad(&r, "attr_bins_by_label.bounds_ns", "wanted 7 ascending positive numbers (ns)");
            goto done;
        }
        m->ld->lcut_ns[q] = d;
    }
    for (int q = 0; lo && q < LD_LABEL_BUCKETS; q++) {
        char f[64];
        snprintf(f, sizeof f, "attr_bins_by_label.bins[%d]", q);
        if ((rc = read_tok_hists_obj(&r, json_array_get(lb, (size_t)q), f, m->ld->lbins[q])))
            goto done;
    }
    *out = m;
    m = NULL;
done:
    json_decref(root);
    etk_synth_model_free(m);
    return rc;
}
