/* eval.c — realism metrics of generated graphs (docs/synth.md "Evaluation"): MMD^2 of
 * descriptor histograms with a Gaussian kernel on total-variation distance (as LayerDAG's
 * evaluation and GraphRNN's before it), and the Kolmogorov-Smirnov distance of two samples. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

static const char *desc_names[ETK_SYNTH_N_DESC] = {"in_degree", "out_degree", "layer_size", "token",
                                                   "edge_token_pair", "layer_skip", "attr_bin"};
const char *etk_synth_desc_name(int d) { return d >= 0 && d < ETK_SYNTH_N_DESC ? desc_names[d] : "?"; }

static uint32_t capv(uint32_t v, uint32_t cap) { return v > cap ? cap : v; }

/* the histogram of descriptor d of g */
static int describe(const etk_synth_model *m, const etk_synth_graph *g, int d, shist *h)
{
    switch (d) {
    case ETK_SYNTH_D_INDEG:
        for (uint32_t i = 0; i < g->n; i++)
            if (shist_add(h, capv(g->par_off[i + 1] - g->par_off[i], 64), 1))
                return -1;
        return 0;
    case ETK_SYNTH_D_OUTDEG: {
        uint32_t *od = calloc(g->n ? g->n : 1, sizeof *od);
        if (!od)
            return -1;
        for (uint32_t k = 0; k < g->n_edges; k++)
            od[g->par[k]]++;
        int rc = 0;
        for (uint32_t i = 0; i < g->n && !rc; i++)
            rc = shist_add(h, capv(od[i], 64), 1);
        free(od);
        return rc;
    }
    case ETK_SYNTH_D_LAYERSIZE: {
        uint32_t run = 0;
        for (uint32_t i = 0; i < g->n; i++) {
            run++;
            if (i + 1 == g->n || g->layer[i + 1] != g->layer[i]) {
                if (shist_add(h, capv(run, 1024), 1))
                    return -1;
                run = 0;
            }
        }
        return 0;
    }
    case ETK_SYNTH_D_TOKEN:
        for (uint32_t i = 0; i < g->n; i++)
            if (shist_add(h, g->tok[i], 1))
                return -1;
        return 0;
    case ETK_SYNTH_D_EDGEPAIR:
    case ETK_SYNTH_D_SKIP:
        for (uint32_t i = 0; i < g->n; i++)
            for (uint32_t k = g->par_off[i]; k < g->par_off[i + 1]; k++) {
                uint32_t p = g->par[k];
                uint32_t key = d == ETK_SYNTH_D_SKIP ? capv(g->layer[i] - g->layer[p], 64)
                                                     : (uint32_t)g->tok[p] * ETK_SYNTH_N_TOKENS + g->tok[i];
                if (shist_add(h, key, 1))
                    return -1;
            }
        return 0;
    case ETK_SYNTH_D_ATTRBIN:
        for (uint32_t i = 0; i < g->n && m; i++)
            if (shist_add(h, (uint32_t)g->tok[i] * 6561u + syn_bin_code(m, g->tok[i], g->val + (size_t)i * ETK_SYNTH_N_ATTR),
                          1))
                return -1;
        return 0;
    }
    return 0;
}

/* total-variation distance of two normalized sparse histograms (keys ascending) */
static double tv(const shist *a, const shist *b)
{
    if (!a->total && !b->total)
        return 0;
    if (!a->total || !b->total)
        return 1;
    double s = 0, ta = (double)a->total, tb = (double)b->total;
    uint32_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        if (j >= b->n || (i < a->n && a->key[i] < b->key[j]))
            s += a->cnt[i++] / ta;
        else if (i >= a->n || b->key[j] < a->key[i])
            s += b->cnt[j++] / tb;
        else {
            s += fabs(a->cnt[i] / ta - b->cnt[j] / tb);
            i++, j++;
        }
    }
    return 0.5 * s;
}

static double kern(const shist *a, const shist *b)
{
    double d = tv(a, b);
    return exp(-d * d / 2.0);
}

double etk_synth_mmd2(const etk_synth_model *m, etk_synth_graph *const *a, size_t na, etk_synth_graph *const *b,
                      size_t nb, int d)
{
    if (!na || !nb)
        return NAN;
    shist *ha = calloc(na, sizeof *ha), *hb = calloc(nb, sizeof *hb);
    double r = NAN;
    if (!ha || !hb)
        goto done;
    for (size_t i = 0; i < na; i++)
        if (describe(m, a[i], d, &ha[i]))
            goto done;
    for (size_t i = 0; i < nb; i++)
        if (describe(m, b[i], d, &hb[i]))
            goto done;
    double saa = 0, sbb = 0, sab = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < na; j++)
            saa += kern(&ha[i], &ha[j]);
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nb; j++)
            sbb += kern(&hb[i], &hb[j]);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            sab += kern(&ha[i], &hb[j]);
    r = saa / ((double)na * na) + sbb / ((double)nb * nb) - 2 * sab / ((double)na * nb);
    if (r < 0 && r > -1e-12)
        r = 0;
done:
    for (size_t i = 0; ha && i < na; i++)
        shist_free(&ha[i]);
    for (size_t i = 0; hb && i < nb; i++)
        shist_free(&hb[i]);
    free(ha);
    free(hb);
    return r;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double etk_synth_ks(const double *a, size_t na, const double *b, size_t nb)
{
    if (!na || !nb)
        return NAN;
    double *x = malloc(na * sizeof *x), *y = malloc(nb * sizeof *y), d = 0;
    if (!x || !y) {
        free(x);
        free(y);
        return NAN;
    }
    memcpy(x, a, na * sizeof *x);
    memcpy(y, b, nb * sizeof *y);
    qsort(x, na, sizeof *x, cmp_d);
    qsort(y, nb, sizeof *y, cmp_d);
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        double v = x[i] < y[j] ? x[i] : y[j];
        while (i < na && x[i] <= v)
            i++;
        while (j < nb && y[j] <= v)
            j++;
        double diff = fabs((double)i / na - (double)j / nb);
        if (diff > d)
            d = diff;
    }
    free(x);
    free(y);
    return d;
}
