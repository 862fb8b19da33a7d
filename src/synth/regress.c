/* regress.c — the step-time regressor of LayerDAG's benchmark protocol (docs/synth.md
 * "Regressor protocol"): a one-hidden-layer MLP (src/synth/nn.c) on graph features predicting
 * log step time, trained full-batch with Adam; Pearson and Spearman correlations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"

#define NT ETK_SYNTH_N_TOKENS
#define RF (NT + 3 + 2 * ETK_SYNTH_N_ATTR)
#define RH 16
#define R_EPOCHS 2000

struct etk_synth_regressor {
    double mu[RF], sd[RF], y_mu, y_sd;
    syn_mlp net;
};

/* log1p of: the node count of every token, nodes, edges, layers, and per attribute its sum and
 * its largest value */
static void graph_features(const etk_synth_graph *g, double *x)
{
    double cnt[NT] = {0}, sum[ETK_SYNTH_N_ATTR] = {0}, mx[ETK_SYNTH_N_ATTR] = {0};
    for (uint32_t i = 0; i < g->n; i++) {
        cnt[g->tok[i]]++;
        for (int a = 0; a < ETK_SYNTH_N_ATTR; a++) {
            double v = g->val[(size_t)i * ETK_SYNTH_N_ATTR + a];
            v = v > 0 && isfinite(v) ? v : 0;
            sum[a] += v;
            mx[a] = v > mx[a] ? v : mx[a];
        }
    }
    for (int t = 0; t < NT; t++)
        x[t] = log1p(cnt[t]);
    x[NT] = log1p(g->n), x[NT + 1] = log1p(g->n_edges), x[NT + 2] = log1p(g->n_layers);
    for (int a = 0; a < ETK_SYNTH_N_ATTR; a++) {
        x[NT + 3 + a] = log1p(sum[a]);
        x[NT + 3 + ETK_SYNTH_N_ATTR + a] = log1p(mx[a]);
    }
}

int etk_synth_regress_fit(etk_synth_graph *const *gs, const double *y_ns, size_t n, uint64_t seed,
                          etk_synth_regressor **out, etk_error *err)
{
    *out = NULL;
    if (n < 2)
        return etk_err(err, ETK_EINVAL, "the regressor wants at least 2 graphs, got %zu", n);
    for (size_t i = 0; i < n; i++)
        if (!(y_ns[i] > 0 && isfinite(y_ns[i])))
            return etk_err(err, ETK_EINVAL, "graph %zu: step time %g: wanted a positive number of ns", i, y_ns[i]);
    etk_synth_regressor *r = calloc(1, sizeof *r);
    double *x = malloc(n * RF * sizeof *x), *y = malloc(n * sizeof *y);
    srng rng = {seed * 0x9e3779b97f4a7c15ULL + 5};
    if (!r || !x || !y || syn_mlp_init(&r->net, RF, RH, 1, &rng)) {
        if (r)
            syn_mlp_free(&r->net);
        free(r), free(x), free(y);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        graph_features(gs[i], x + i * RF);
        y[i] = log(y_ns[i]);
        r->y_mu += y[i] / n;
    }
    for (size_t i = 0; i < n; i++)
        r->y_sd += (y[i] - r->y_mu) * (y[i] - r->y_mu) / n;
    r->y_sd = r->y_sd > 1e-24 ? sqrt(r->y_sd) : 1;
    for (int k = 0; k < RF; k++) {
        double s = 0, q = 0;
        for (size_t i = 0; i < n; i++)
            s += x[i * RF + k];
        r->mu[k] = s / n;
        for (size_t i = 0; i < n; i++)
            q += (x[i * RF + k] - r->mu[k]) * (x[i * RF + k] - r->mu[k]);
        r->sd[k] = q / n > 1e-24 ? sqrt(q / n) : 1;
        for (size_t i = 0; i < n; i++)
            x[i * RF + k] = (x[i * RF + k] - r->mu[k]) / r->sd[k];
    }
    /* full-batch Adam on the squared error of the standardized log step time */
    double h[RH], o, dy;
    for (int ep = 1; ep <= R_EPOCHS; ep++) {
        for (size_t i = 0; i < n; i++) {
            syn_mlp_forward(&r->net, x + i * RF, h, &o);
            dy = o - (y[i] - r->y_mu) / r->y_sd;
            syn_mlp_backward(&r->net, x + i * RF, h, &dy);
        }
        syn_mlp_adam(&r->net, 3e-3, ep, 1.0 / n);
    }
    free(x), free(y);
    *out = r;
    return 0;
}

double etk_synth_regress_predict(const etk_synth_regressor *r, const etk_synth_graph *g)
{
    double x[RF], h[RH], o;
    graph_features(g, x);
    for (int k = 0; k < RF; k++)
        x[k] = (x[k] - r->mu[k]) / r->sd[k];
    syn_mlp_forward(&r->net, x, h, &o);
    return exp(o * r->y_sd + r->y_mu);
}

void etk_synth_regress_free(etk_synth_regressor *r)
{
    if (!r)
        return;
    syn_mlp_free(&r->net);
    free(r);
}

double etk_synth_pearson(const double *a, const double *b, size_t n)
{
    if (n < 2)
        return NAN;
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; i++)
        ma += a[i] / n, mb += b[i] / n;
    for (size_t i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

static const double *rank_key;
static int cmp_rank(const void *x, const void *y)
{
    double a = rank_key[*(const size_t *)x], b = rank_key[*(const size_t *)y];
    return (a > b) - (a < b);
}

/* ranks 1..n, ties given their mean rank */
static int ranks_of(const double *v, size_t n, double *rk)
{
    size_t *ix = malloc(n * sizeof *ix);
    if (!ix)
        return -1;
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    rank_key = v;
    qsort(ix, n, sizeof *ix, cmp_rank);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && v[ix[j + 1]] == v[ix[i]])
            j++;
        for (size_t k = i; k <= j; k++)
            rk[ix[k]] = (double)(i + j) / 2.0 + 1;
        i = j + 1;
    }
    free(ix);
    return 0;
}

double etk_synth_spearman(const double *a, const double *b, size_t n)
{
    if (n < 2)
        return NAN;
    double *ra = malloc(n * sizeof *ra), *rb = malloc(n * sizeof *rb), r = NAN;
    if (ra && rb && !ranks_of(a, n, ra) && !ranks_of(b, n, rb))
        r = etk_synth_pearson(ra, rb, n);
    free(ra), free(rb);
    return r;
}
