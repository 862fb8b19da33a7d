/* count.c — the count baseline (docs/synth.md "Count baseline"): per-layer conditional frequency
 * tables with back-off — layer count; layer size given (position, previous size) -> previous
 * size -> position -> all; token given the main parent's token -> marginal; in-degree and
 * parent-layer distance given token; joint attribute bins given token — fitted by counting and
 * sampled layer by layer. Also the random-DAG baseline of the evaluation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layerdag.h"
#include "synth_internal.h"

/* ---------- sparse histograms ---------- */
int shist_add(shist *h, uint32_t key, uint32_t cnt)
{
    uint32_t lo = 0, hi = h->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (h->key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    h->total += cnt;
    if (lo < h->n && h->key[lo] == key) {
        h->cnt[lo] += cnt;
        return 0;
    }
    if (h->n == h->cap) {
        uint32_t nc = h->cap ? 2 * h->cap : 4;
        uint32_t *k = realloc(h->key, nc * sizeof *k);
        if (!k)
            return ETK_ENOMEM;
        h->key = k;
        uint32_t *c = realloc(h->cnt, nc * sizeof *c);
        if (!c)
            return ETK_ENOMEM;
        h->cnt = c;
        h->cap = nc;
    }
    memmove(h->key + lo + 1, h->key + lo, (h->n - lo) * sizeof *h->key);
    memmove(h->cnt + lo + 1, h->cnt + lo, (h->n - lo) * sizeof *h->cnt);
    h->key[lo] = key;
    h->cnt[lo] = cnt;
    h->n++;
    return 0;
}

uint32_t shist_draw(const shist *h, srng *r, uint32_t dflt)
{
    if (!h || !h->total)
        return dflt;
    uint64_t x = (uint64_t)(srng_unit(r) * (double)h->total);
    for (uint32_t i = 0; i < h->n; i++) {
        if (x < h->cnt[i])
            return h->key[i];
        x -= h->cnt[i];
    }
    return h->key[h->n - 1];
}

uint32_t shist_mode(const shist *h, uint32_t dflt)
{
    uint32_t best = dflt, bc = 0;
    for (uint32_t i = 0; h && i < h->n; i++)
        if (h->cnt[i] > bc)
            bc = h->cnt[i], best = h->key[i];
    return best;
}

void shist_free(shist *h)
{
    free(h->key);
    free(h->cnt);
    memset(h, 0, sizeof *h);
}

/* ---------- layer-size contexts ---------- */
#define PREV_ONLY ((uint32_t)SYN_POS_BUCKETS * (SYN_SIZE_CAP + 1))

uint32_t syn_ctx_key(uint32_t pos, uint32_t prev)
{
    return pos * (SYN_SIZE_CAP + 1) + (prev > SYN_SIZE_CAP ? SYN_SIZE_CAP : prev);
}

uint32_t syn_pos_bucket(uint32_t l, uint32_t n_layers)
{
    uint64_t b = n_layers ? (uint64_t)l * SYN_POS_BUCKETS / n_layers : 0;
    return b >= SYN_POS_BUCKETS ? SYN_POS_BUCKETS - 1 : (uint32_t)b;
}

const shist *syn_ctx_find(const etk_synth_model *m, uint32_t key)
{
    uint32_t lo = 0, hi = m->n_ctx;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->ctx_key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n_ctx && m->ctx_key[lo] == key ? &m->ctx_hist[lo] : NULL;
}

shist *syn_ctx(etk_synth_model *m, uint32_t key, int create)
{
    shist *h = (shist *)syn_ctx_find(m, key);
    if (h || !create)
        return h;
    if (m->n_ctx == m->cap_ctx) {
        uint32_t nc = m->cap_ctx ? 2 * m->cap_ctx : 64;
        uint32_t *k = realloc(m->ctx_key, nc * sizeof *k);
        if (!k)
            return NULL;
        m->ctx_key = k;
        shist *hh = realloc(m->ctx_hist, nc * sizeof *hh);
        if (!hh)
            return NULL;
        m->ctx_hist = hh;
        m->cap_ctx = nc;
    }
    uint32_t i = m->n_ctx;
    while (i > 0 && m->ctx_key[i - 1] > key) {
        m->ctx_key[i] = m->ctx_key[i - 1];
        m->ctx_hist[i] = m->ctx_hist[i - 1];
        i--;
    }
    m->ctx_key[i] = key;
    memset(&m->ctx_hist[i], 0, sizeof m->ctx_hist[i]);
    m->n_ctx++;
    return &m->ctx_hist[i];
}

int syn_wl_rejected(const etk_synth_model *m, uint64_t h)
{
    uint32_t lo = 0, hi = m->n_wl;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->wl[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n_wl && m->wl[lo] == h;
}

void etk_synth_model_free(etk_synth_model *m)
{
    if (!m)
        return;
    shist_free(&m->layer_count);
    for (uint32_t i = 0; i < m->n_ctx; i++)
        shist_free(&m->ctx_hist[i]);
    free(m->ctx_key);
    free(m->ctx_hist);
    for (int p = 0; p < SYN_POS_BUCKETS; p++)
        shist_free(&m->size_pos[p]);
    shist_free(&m->size_all);
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
        shist_free(&m->indeg[t]);
        shist_free(&m->dist[t]);
        shist_free(&m->bins[t]);
        for (int c = 0; c < SYN_SCALE_CLASSES; c++)
            shist_free(&m->sbins[c][t]);
    }
    shist_free(&m->world);
    shist_free(&m->inner);
    free(m->wl);
    syn_ld_free(m->ld);
    free(m);
}

int etk_synth_train_layerdag(etk_synth_model *m, etk_synth_graph *const *gs, size_t n, uint32_t epochs, uint64_t seed,
                             etk_error *err)
{
    return etk_synth_train_layerdag_labeled(m, gs, NULL, n, epochs, seed, err);
}

int etk_synth_train_layerdag_labeled(etk_synth_model *m, etk_synth_graph *const *gs, const double *labels_ns, size_t n,
                                     uint32_t epochs, uint64_t seed, etk_error *err)
{
    return etk_synth_train_layerdag_avg(m, gs, labels_ns, n, epochs, ETK_SYNTH_LD_AVERAGE, seed, err);
}

int etk_synth_train_layerdag_avg(etk_synth_model *m, etk_synth_graph *const *gs, const double *labels_ns, size_t n,
                                 uint32_t epochs, uint32_t average, uint64_t seed, etk_error *err)
{
    if (!n)
        return etk_err(err, ETK_EINVAL, "no rank graphs to train on");
    for (size_t i = 0; labels_ns && i < n; i++)
        if (!(labels_ns[i] > 0 && isfinite(labels_ns[i])))
            return etk_err(err, ETK_EINVAL, "graph %zu: label %g: wanted a positive step time (ns)", i, labels_ns[i]);
    syn_ld_opts o = {.epochs = epochs, .seed = seed, .labels_ns = labels_ns, .average = average};
    return syn_ld_train(m, gs, n, &o, err);
}

bool etk_synth_model_has_layerdag(const etk_synth_model *m) { return m->ld != NULL; }
bool etk_synth_model_labeled(const etk_synth_model *m) { return m->ld && m->ld->labeled; }

bool etk_synth_layerdag_loss(const etk_synth_model *m, double loss[3])
{
    if (!m->ld)
        return false;
    memcpy(loss, m->ld->loss, 3 * sizeof *loss);
    return true;
}

size_t etk_synth_model_n_graphs(const etk_synth_model *m) { return m->n_graphs; }

uint32_t etk_synth_model_default_ranks(const etk_synth_model *m)
{
    uint32_t r = shist_mode(&m->world, 8);
    return r ? r : 8;
}

uint32_t etk_synth_model_inner(const etk_synth_model *m, uint32_t n_ranks)
{
    uint32_t best = 0, bc = 0;
    for (uint32_t i = 0; i < m->inner.n; i++) {
        uint32_t g = m->inner.key[i];
        if (g >= 2 && g < n_ranks && n_ranks % g == 0 && m->inner.cnt[i] > bc)
            bc = m->inner.cnt[i], best = g;
    }
    return best;
}

/* ---------- fit ---------- */
static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---------- the attribute scale ---------- */
double syn_scale_stat(const etk_synth_model *m, const etk_synth_graph *g)
{
    double sum = 0;
    uint64_t k = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        int t = g->tok[i];
        uint32_t code = syn_bin_code(m, t, g->val + (size_t)i * ETK_SYNTH_N_ATTR);
        for (int a = ETK_SYNTH_N_ATTR - 1; a >= 0; a--, code /= SYN_BIN_CODES)
            if (etk_synth_tok_has_attr(t, a)) {
                sum += code % SYN_BIN_CODES;
                k++;
            }
    }
    return k ? sum / (double)k : 0;
}

int syn_scale_class(const etk_synth_model *m, double stat)
{
    int c = 0;
    while (c < SYN_SCALE_CLASSES - 1 && stat >= m->scut[c])
        c++;
    return c;
}

int syn_scale_draw(const etk_synth_model *m, srng *r)
{
    uint64_t tot = 0;
    for (int c = 0; c < SYN_SCALE_CLASSES; c++)
        tot += m->scale_graphs[c];
    if (!tot)
        return -1;
    uint64_t u = (uint64_t)(srng_unit(r) * (double)tot);
    for (int c = 0; c < SYN_SCALE_CLASSES; c++) {
        if (u < m->scale_graphs[c])
            return c;
        u -= m->scale_graphs[c];
    }
    return SYN_SCALE_CLASSES - 1;
}

const shist *syn_attr_table(const etk_synth_model *m, int tok, int scale)
{
    if (scale >= 0 && scale < SYN_SCALE_CLASSES && m->sbins[scale][tok].total)
        return &m->sbins[scale][tok];
    return &m->bins[tok];
}

int etk_synth_fit(etk_synth_graph *const *gs, size_t n, const uint32_t *world_sizes, size_t n_world,
                  const uint32_t *inner_sizes, size_t n_inner, etk_synth_model **out, etk_error *err)
{
    *out = NULL;
    if (!n)
        return etk_err(err, ETK_EINVAL, "no rank graphs to fit");
    etk_synth_model *m = calloc(1, sizeof *m);
    double *vals[ETK_SYNTH_N_TOKENS] = {0}, *stat = NULL;
    size_t cnt[ETK_SYNTH_N_TOKENS] = {0}, fillc[ETK_SYNTH_N_TOKENS] = {0};
    uint32_t *lsize = NULL;
    int rc = ETK_ENOMEM;
    if (!m)
        goto fail;
    m->n_graphs = (uint32_t)n;
    m->wl = malloc(n * sizeof *m->wl);
    if (!m->wl)
        goto fail;
    for (size_t k = 0; k < n_world; k++)
        if (shist_add(&m->world, world_sizes[k], 1))
            goto fail;
    for (size_t k = 0; k < n_inner; k++)
        if (inner_sizes[k] > 1 && shist_add(&m->inner, inner_sizes[k], 1))
            goto fail;
    for (size_t gi = 0; gi < n; gi++) {
        const etk_synth_graph *g = gs[gi];
        m->wl[gi] = etk_synth_graph_wl_hash(g);
        if (shist_add(&m->layer_count, g->n_layers, 1))
            goto fail;
        uint32_t *ls = realloc(lsize, ((size_t)g->n_layers + 1) * sizeof *ls);
        if (!ls)
            goto fail;
        lsize = ls;
        memset(lsize, 0, ((size_t)g->n_layers + 1) * sizeof *lsize);
        for (uint32_t i = 0; i < g->n; i++)
            lsize[g->layer[i]]++;
        for (uint32_t l = 0; l < g->n_layers; l++) {
            uint32_t pos = syn_pos_bucket(l, g->n_layers), prev = l ? lsize[l - 1] : 0;
            shist *a = syn_ctx(m, syn_ctx_key(pos, prev), 1);
            if (!a || shist_add(a, lsize[l], 1))
                goto fail;
            shist *b = syn_ctx(m, PREV_ONLY + (prev > SYN_SIZE_CAP ? SYN_SIZE_CAP : prev), 1);
            if (!b || shist_add(b, lsize[l], 1) || shist_add(&m->size_pos[pos], lsize[l], 1) ||
                shist_add(&m->size_all, lsize[l], 1))
                goto fail;
        }
        for (uint32_t i = 0; i < g->n; i++) {
            int t = g->tok[i];
            uint32_t b = g->par_off[i], e = g->par_off[i + 1];
            m->tok_given_parent[b < e ? g->tok[g->par[b]] : ETK_SYNTH_N_TOKENS][t]++;
            m->tok_marginal[t]++;
            cnt[t]++;
            if (g->layer[i] > 0 && shist_add(&m->indeg[t], e - b, 1))
                goto fail;
            for (uint32_t k = b + 1; k < e; k++)
                if (shist_add(&m->dist[t], g->layer[i] - g->layer[g->par[k]], 1))
                    goto fail;
        }
    }
    qsort(m->wl, n, sizeof *m->wl, cmp_u64);
    m->n_wl = (uint32_t)n;
    /* per-token quantile edges of every attribute */
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        if (cnt[t] && !(vals[t] = malloc(cnt[t] * ETK_SYNTH_N_ATTR * sizeof(double))))
            goto fail;
    for (size_t gi = 0; gi < n; gi++) {
        const etk_synth_graph *g = gs[gi];
        for (uint32_t i = 0; i < g->n; i++) {
            int t = g->tok[i];
            for (int a = 0; a < ETK_SYNTH_N_ATTR; a++)
                vals[t][a * cnt[t] + fillc[t]] = g->val[(size_t)i * ETK_SYNTH_N_ATTR + a];
            fillc[t]++;
        }
    }
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        for (int a = 0; a < ETK_SYNTH_N_ATTR && cnt[t]; a++) {
            double *v = vals[t] + a * cnt[t];
            qsort(v, cnt[t], sizeof *v, cmp_dbl);
            for (int k = 0; k <= ETK_SYNTH_N_BINS; k++)
                m->edges[t][a][k] = v[(size_t)((double)k * (double)(cnt[t] - 1) / ETK_SYNTH_N_BINS)];
        }
    for (size_t gi = 0; gi < n; gi++) {
        const etk_synth_graph *g = gs[gi];
        for (uint32_t i = 0; i < g->n; i++)
            if (shist_add(&m->bins[g->tok[i]], syn_bin_code(m, g->tok[i], g->val + (size_t)i * ETK_SYNTH_N_ATTR), 1))
                goto fail;
    }
    /* the attribute scale: class bounds at the c/SYN_SCALE_CLASSES quantiles (c = 1 ... 63) of
     * the graphs' statistic,
     * then every node's bin code given its graph's class and its token */
    if (n && !(stat = malloc(n * sizeof *stat)))
        goto fail;
    for (size_t gi = 0; gi < n; gi++)
        stat[gi] = syn_scale_stat(m, gs[gi]);
    if (n) {
        double *srt = malloc(n * sizeof *srt);
        if (!srt)
            goto fail;
        memcpy(srt, stat, n * sizeof *srt);
        qsort(srt, n, sizeof *srt, cmp_dbl);
        for (int c = 1; c < SYN_SCALE_CLASSES; c++)
            m->scut[c - 1] = srt[(size_t)c * n / SYN_SCALE_CLASSES];
        free(srt);
    }
    for (size_t gi = 0; gi < n; gi++) {
        const etk_synth_graph *g = gs[gi];
        int c = syn_scale_class(m, stat[gi]);
        m->scale_graphs[c]++;
        for (uint32_t i = 0; i < g->n; i++)
            if (shist_add(&m->sbins[c][g->tok[i]], syn_bin_code(m, g->tok[i], g->val + (size_t)i * ETK_SYNTH_N_ATTR), 1))
                goto fail;
    }
    rc = 0;
    *out = m;
    m = NULL;
fail:
    if (rc)
        etk_err(err, rc, "out of memory fitting %zu graphs", n);
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        free(vals[t]);
    free(lsize);
    free(stat);
    etk_synth_model_free(m);
    return rc;
}

/* ---------- sampling ---------- */
typedef struct gbuild {
    uint32_t n, cap, e, cap_e, n_layers;
    uint16_t *tok;
    uint32_t *layer, *off, *par;
    double *val;
    uint32_t *lstart; /* first node of each layer; [n_layers] = n */
    uint32_t cap_l;
} gbuild;

static int gb_node(gbuild *b, uint32_t layer)
{
    if (b->n == b->cap) {
        uint32_t nc = b->cap ? 2 * b->cap : 256;
        uint16_t *t = realloc(b->tok, nc * sizeof *t);
        if (!t)
            return -1;
        b->tok = t;
        uint32_t *l = realloc(b->layer, nc * sizeof *l), *o;
        if (!l)
            return -1;
        b->layer = l;
        if (!(o = realloc(b->off, ((size_t)nc + 1) * sizeof *o)))
            return -1;
        b->off = o;
        double *v = realloc(b->val, (size_t)nc * ETK_SYNTH_N_ATTR * sizeof *v);
        if (!v)
            return -1;
        b->val = v;
        b->cap = nc;
    }
    b->layer[b->n] = layer;
    b->off[b->n] = b->e;
    b->off[b->n + 1] = b->e;
    return (int)b->n++;
}

static int gb_edge(gbuild *b, uint32_t p)
{
    for (uint32_t k = b->off[b->n - 1]; k < b->e; k++)
        if (b->par[k] == p)
            return 0;
    if (b->e == b->cap_e) {
        uint32_t nc = b->cap_e ? 2 * b->cap_e : 512;
        uint32_t *q = realloc(b->par, nc * sizeof *q);
        if (!q)
            return -1;
        b->par = q;
        b->cap_e = nc;
    }
    b->par[b->e++] = p;
    b->off[b->n] = b->e;
    return 0;
}

static int gb_layer(gbuild *b)
{
    if (b->n_layers + 2 > b->cap_l) {
        uint32_t nc = b->cap_l ? 2 * b->cap_l : 64;
        uint32_t *l = realloc(b->lstart, nc * sizeof *l);
        if (!l)
            return -1;
        b->lstart = l;
        b->cap_l = nc;
    }
    b->lstart[b->n_layers++] = b->n;
    return 0;
}

static etk_synth_graph *gb_finish(gbuild *b)
{
    etk_synth_graph *g = syn_graph_alloc(b->n, b->e);
    if (g) {
        g->n_layers = b->n_layers;
        memcpy(g->tok, b->tok, b->n * sizeof *g->tok);
        memcpy(g->layer, b->layer, b->n * sizeof *g->layer);
        memcpy(g->par_off, b->off, ((size_t)b->n + 1) * sizeof *g->par_off);
        if (b->e) /* a one-layer graph has no edges and no parent array (b->par is NULL) */
            memcpy(g->par, b->par, b->e * sizeof *g->par);
        memcpy(g->val, b->val, (size_t)b->n * ETK_SYNTH_N_ATTR * sizeof *g->val);
    }
    return g;
}

static void gb_free(gbuild *b)
{
    free(b->tok), free(b->layer), free(b->off), free(b->par), free(b->val), free(b->lstart);
    memset(b, 0, sizeof *b);
}

static int draw_row(const uint32_t *row, const uint32_t *marg, srng *r)
{
    uint64_t tot = 0;
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        tot += row[t];
    if (!tot) {
        row = marg;
        for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
            tot += row[t];
    }
    uint64_t x = (uint64_t)(srng_unit(r) * (double)tot);
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
        if (x < row[t])
            return t;
        x -= row[t];
    }
    return 0;
}

static uint32_t layer_size(const etk_synth_model *m, uint32_t pos, uint32_t prev, srng *r)
{
    const shist *h = syn_ctx_find(m, syn_ctx_key(pos, prev));
    if (!h || !h->total)
        h = syn_ctx_find(m, PREV_ONLY + (prev > SYN_SIZE_CAP ? SYN_SIZE_CAP : prev));
    if (!h || !h->total)
        h = &m->size_pos[pos];
    if (!h->total)
        h = &m->size_all;
    uint32_t s = shist_draw(h, r, 1);
    return s ? s : 1;
}

/* scale: the graph's scale class, or -1 for the token's pooled bins (the random baselines) */
static int node_attrs(const etk_synth_model *m, gbuild *b, uint32_t i, int tok, int scale, srng *r)
{
    b->tok[i] = (uint16_t)tok;
    syn_bin_values(m, tok, shist_draw(syn_attr_table(m, tok, scale), r, 0), r, b->val + (size_t)i * ETK_SYNTH_N_ATTR);
    return 0;
}

static int sample_once(const etk_synth_model *m, const etk_synth_sample_opts *o, srng *r, etk_synth_graph **out)
{
    gbuild b = {0};
    uint32_t L = shist_draw(&m->layer_count, r, 1), prev = 0;
    int scale = syn_scale_draw(m, r); /* one attribute scale for the whole graph */
    if (!L)
        L = 1;
    for (uint32_t l = 0; l < L; l++) {
        uint32_t s = layer_size(m, syn_pos_bucket(l, L), prev, r);
        if (o->max_nodes && b.n + s > o->max_nodes) {
            if (b.n)
                break;
            s = o->max_nodes;
        }
        if (gb_layer(&b))
            goto oom;
        for (uint32_t j = 0; j < s; j++) {
            int i = gb_node(&b, l);
            if (i < 0)
                goto oom;
            int tok;
            if (!l)
                tok = draw_row(m->tok_given_parent[ETK_SYNTH_N_TOKENS], m->tok_marginal, r);
            else {
                uint32_t p0 = b.lstart[l - 1], np = b.lstart[l] - p0;
                uint32_t mp = p0 + srng_below(r, np);
                if (gb_edge(&b, mp))
                    goto oom;
                tok = draw_row(m->tok_given_parent[b.tok[mp]], m->tok_marginal, r);
                uint32_t deg = shist_draw(&m->indeg[tok], r, 1);
                for (uint32_t k = 1; k < deg; k++) {
                    uint32_t d = shist_draw(&m->dist[tok], r, 1);
                    if (d < 1)
                        d = 1;
                    if (d > l)
                        d = l;
                    uint32_t q0 = b.lstart[l - d], nq = b.lstart[l - d + 1] - q0;
                    if (gb_edge(&b, q0 + srng_below(r, nq)))
                        goto oom;
                }
            }
            node_attrs(m, &b, (uint32_t)i, tok, scale, r);
        }
        prev = s;
    }
    b.lstart[b.n_layers] = b.n;
    *out = gb_finish(&b);
    gb_free(&b);
    if (*out)
        (*out)->scale = (uint32_t)(scale + 1);
    return *out ? 0 : ETK_ENOMEM;
oom:
    gb_free(&b);
    return ETK_ENOMEM;
}

int etk_synth_sample_graph(const etk_synth_model *m, const etk_synth_sample_opts *o, etk_synth_graph **out,
                           uint32_t *rejected, etk_error *err)
{
    etk_synth_sample_opts d = {0};
    if (!o)
        o = &d;
    uint32_t tries = o->max_tries ? o->max_tries : 100;
    if (rejected)
        *rejected = 0;
    *out = NULL;
    srng r = {o->seed * 0x2545f4914f6cdd1dULL + 1};
    for (uint32_t k = 0; k < tries; k++) {
        etk_synth_graph *g = NULL;
        /* (a LayerDAG sample ends at its drawn profile's layer count since version 4: no
         * autoregressive runaway to reject) */
        if (m->ld && !o->count_only ? syn_ld_sample(m, o->max_nodes, o->nodes, o->label_ns, &r, &g) : sample_once(m, o, &r, &g))
            return etk_err(err, ETK_ENOMEM, "out of memory sampling a graph");
        if (!syn_wl_rejected(m, etk_synth_graph_wl_hash(g))) {
            *out = g;
            return 0;
        }
        etk_synth_graph_free(g);
        if (rejected)
            (*rejected)++;
    }
    return etk_err(err, ETK_EINVAL,
                   "all %u samples were isomorphic to a training graph (the model memorised its corpus: fit "
                   "more, more varied workloads)",
                   tries);
}

void etk_synth_redraw_attrs(const etk_synth_model *m, etk_synth_graph *g, double label_ns, uint64_t seed)
{
    srng r = {seed * 0xd1b54a32d192ed03ULL + 11};
    /* a new scale class too (unless the label's bucket table decides) */
    int scale = m->ld && m->ld->labeled && label_ns > 0 ? -1 : syn_scale_draw(m, &r);
    g->scale = (uint32_t)(scale + 1);
    for (uint32_t i = 0; i < g->n; i++)
        syn_ld_attr_values(m, g->tok[i], label_ns, scale, &r, g->val + (size_t)i * ETK_SYNTH_N_ATTR);
}

void etk_synth_redraw_node_attrs(const etk_synth_model *m, etk_synth_graph *g, uint32_t node, double label_ns,
                                 uint64_t seed)
{
    srng r = {seed * 0xd1b54a32d192ed03ULL + 13};
    if (node < g->n)
        syn_ld_attr_values(m, g->tok[node], label_ns, (int)g->scale - 1, &r, g->val + (size_t)node * ETK_SYNTH_N_ATTR);
}

int etk_synth_random_like(const etk_synth_model *m, const etk_synth_graph *g, uint64_t seed, etk_synth_graph **out,
                          etk_error *err)
{
    gbuild b = {0};
    srng r = {seed * 0x9e3779b97f4a7c15ULL + 7};
    for (uint32_t i = 0; i < g->n; i++) {
        uint32_t l = g->layer[i];
        if (l == b.n_layers && gb_layer(&b))
            goto oom;
        if (gb_node(&b, l) < 0)
            goto oom;
        uint32_t deg = g->par_off[i + 1] - g->par_off[i];
        if (l) {
            uint32_t p0 = b.lstart[l - 1];
            if (gb_edge(&b, p0 + srng_below(&r, b.lstart[l] - p0)))
                goto oom;
            for (uint32_t k = 1; k < deg; k++)
                if (gb_edge(&b, srng_below(&r, b.lstart[l])))
                    goto oom;
        }
        node_attrs(m, &b, i, draw_row(m->tok_marginal, m->tok_marginal, &r), -1, &r);
    }
    if (gb_layer(&b))
        goto oom;
    b.n_layers--;
    *out = gb_finish(&b);
    gb_free(&b);
    return *out ? 0 : etk_err(err, ETK_ENOMEM, "out of memory");
oom:
    gb_free(&b);
    return etk_err(err, ETK_ENOMEM, "out of memory building a random graph");
}

/* Uniform forward pair k of n nodes (0 <= k < n(n-1)/2): the pairs (p, c), p < c, in the order
 * (0,1), (0,2), (1,2), (0,3), ...: c is the largest with c(c-1)/2 <= k. */
void syn_pair_of(uint64_t k, uint32_t *p, uint32_t *c)
{
    uint64_t cc = (uint64_t)((1.0 + sqrt(1.0 + 8.0 * (double)k)) / 2.0);
    while (cc * (cc - 1) / 2 > k)
        cc--;
    while ((cc + 1) * cc / 2 <= k)
        cc++;
    *c = (uint32_t)cc;
    *p = (uint32_t)(k - cc * (cc - 1) / 2);
}

int etk_synth_random_er(const etk_synth_model *m, const etk_synth_graph *g, uint64_t seed, etk_synth_graph **out,
                        etk_error *err)
{
    *out = NULL;
    srng r = {seed * 0x9e3779b97f4a7c15ULL + 11};
    uint32_t n = g->n, e = n > 1 ? g->n_edges : 0;
    uint64_t pairs = n > 1 ? (uint64_t)n * (n - 1) / 2 : 0;
    if (e > pairs)
        e = (uint32_t)pairs;
    uint16_t *tok = malloc((n ? n : 1) * sizeof *tok);
    double *val = malloc((size_t)(n ? n : 1) * ETK_SYNTH_N_ATTR * sizeof *val);
    uint32_t *pc = malloc((e ? e : 1) * 2 * sizeof *pc), *off = calloc((size_t)n + 1, sizeof *off);
    uint32_t *par = malloc((e ? e : 1) * sizeof *par);
    int rc = 0;
    if (!tok || !val || !pc || !off || !par) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory building a random graph");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        int t = draw_row(m->tok_marginal, m->tok_marginal, &r);
        tok[i] = (uint16_t)t;
        syn_bin_values(m, t, shist_draw(&m->bins[t], &r, 0), &r, val + (size_t)i * ETK_SYNTH_N_ATTR);
    }
    /* e pairs uniform over the forward pairs (repeats are dropped by the build) */
    for (uint32_t k = 0; k < e; k++) {
        uint64_t x = (uint64_t)(srng_unit(&r) * (double)pairs);
        syn_pair_of(x < pairs ? x : pairs - 1, &pc[2 * k], &pc[2 * k + 1]);
        off[pc[2 * k + 1] + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
    if (!fill) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory building a random graph");
        goto done;
    }
    for (uint32_t k = 0; k < e; k++) {
        uint32_t c = pc[2 * k + 1];
        par[off[c] + fill[c]++] = pc[2 * k];
    }
    free(fill);
    rc = etk_synth_graph_build(n, tok, val, off, par, out, NULL, err);
done:
    free(tok), free(val), free(pc), free(off), free(par);
    return rc;
}
