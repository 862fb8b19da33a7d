/* layerdag.c — the LayerDAG model (see layerdag.h; docs/synth.md "LayerDAG model").
 *
 * The prefix graph (all layers placed so far) is encoded by pooling: the normalized token
 * histogram of the whole prefix and of its last layer, sinusoidal embeddings of the layer index
 * and of log2 of the last layer's size. On it:
 *   size stage   MLP -> softmax over sizes 0..63 (0 stops);
 *   (the token, edge and far-parent stages see the profile's token mix in place of the whole
 *   prefix's histogram, see stage_in)
 *   token stage  discrete diffusion, LD_STEPS steps, each node's token kept with probability
 *                1 - t/T and otherwise replaced by a draw from the marginal; the denoiser sees
 *                the prefix encoding, the histogram of the new layer's noisy tokens (the stage
 *                attends over the new layer by mean pooling), the node's own noisy token and t;
 *                sampled, its logits gain the profile guidance (syn_ld_guide, s31);
 *   edge stage   Bernoulli diffusion over the candidate parents in the last LD_WINDOW layers,
 *                each indicator kept with probability 1 - t/T and otherwise redrawn from the
 *                mean density; the denoiser sees the prefix encoding, the new node's and the
 *                candidate's tokens, their layer distance, the candidate's out-degree so far
 *                (the child direction of the prefix graph), the noisy indicator, the node's
 *                noisy in-degree and t.
 * Attribute values come from the count model's bins given the token and the graph's scale class
 * (one drawn per sampled graph), or for a labeled model sampled with a label from the bins
 * counted on the training graphs of the label's bucket. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layerdag.h"

#define NT ETK_SYNTH_N_TOKENS

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void syn_ld_free(syn_layerdag *ld)
{
    if (!ld)
        return;
    syn_mlp_free(&ld->size);
    syn_mlp_free(&ld->tok);
    syn_mlp_free(&ld->edge);
    syn_mlp_free(&ld->far);
    free(ld->prof);
    for (int q = 0; q < LD_LABEL_BUCKETS; q++)
        for (int t = 0; t < NT; t++)
            shist_free(&ld->lbins[q][t]);
    free(ld);
}

/* the pooled prefix encoding, with the graph's profile: the layers left (its layer count minus
 * l) and its attribute scale class (-1: none) */
static void features(double *f, uint32_t l, uint32_t prev_size, const uint32_t *hist_prev, const uint32_t *hist_all,
                     uint32_t n_prev, uint32_t n_all, double label_ns, double lab_lo, double lab_hi, uint32_t left,
                     int scale)
{
    for (int t = 0; t < NT; t++) {
        f[t] = n_prev ? (double)hist_prev[t] / n_prev : 0;
        f[NT + t] = n_all ? (double)hist_all[t] / n_all : 0;
    }
    syn_sinus((double)l, LD_SIN, f + 2 * NT);
    syn_sinus(log2(1.0 + prev_size) * 4, LD_SIN, f + 2 * NT + LD_SIN);
    syn_sinus(log2(1.0 + n_all) * 4, LD_SIN, f + 2 * NT + 2 * LD_SIN);
    /* the graph label, as LayerDAG: a sinusoidal embedding of z, the label's log position in
     * the training range [0, 1] (sin and cos of pi z 2^j / 2, j = 0..3); zeros without one */
    double *e = f + 2 * NT + 3 * LD_SIN;
    memset(e, 0, LD_SIN * sizeof *f);
    if (label_ns > 0 && lab_hi > lab_lo) {
        double z = (log(label_ns) - log(lab_lo)) / (log(lab_hi) - log(lab_lo));
        for (int j = 0; j < LD_SIN / 2; j++) {
            e[2 * j] = sin(3.14159265358979323846 * z * (1 << j) / 2);
            e[2 * j + 1] = cos(3.14159265358979323846 * z * (1 << j) / 2);
        }
    }
    syn_sinus((double)left, LD_SIN, f + 2 * NT + 4 * LD_SIN);
    syn_sinus(scale + 1.0, LD_SIN, f + 2 * NT + 5 * LD_SIN);
}

/* the edge denoiser's input after the prefix f (edge_input), as the entries that can be non-zero,
 * (index, value) in increasing index order (syn_mlp_forward_sparse): the candidate's and the
 * node's tokens and the distance one-hot, then the parent's out-degree, the noisy edge, the noisy
 * in-degree and the step's sinusoid; returns their count, LD_EDGE_SPARSE */
enum { LD_EDGE_SPARSE = 3 + 3 + 4 };
static int edge_sparse(int *idx, double *val, int tok_v, int tok_u, uint32_t dist, uint32_t outdeg_u, int noisy,
                       uint32_t noisy_indeg, int t)
{
    const int base = LD_F + 2 * NT + LD_WINDOW;
    idx[0] = LD_F + tok_v;
    idx[1] = LD_F + NT + tok_u;
    idx[2] = LD_F + 2 * NT + (int)(dist > LD_WINDOW ? LD_WINDOW : dist) - 1;
    val[0] = val[1] = val[2] = 1;
    for (int q = 0; q < 7; q++)
        idx[3 + q] = base + q;
    val[3] = (double)outdeg_u / (1.0 + outdeg_u);
    val[4] = noisy;
    val[5] = noisy_indeg / 8.0;
    syn_sinus((double)t, 4, val + 6);
    return LD_EDGE_SPARSE;
}

/* the token, edge and far-parent stages see the prefix encoding without the scale class (with it,
 * the token stage fitted the training graphs' token mix per class and its samples' token
 * histograms moved away from the held-out ones: token MMD 0.0128-0.0151 vs 0.0103-0.0112) and,
 * since version 5, with the token shares of the graph's profile (the whole training graph's,
 * the same on every layer) in place of the whole prefix's token histogram. A sample's prefix is
 * made of the stages' own earlier draws: a run of all-reduce layers raised the all-reduce share
 * of that histogram above any training prefix's (at most 0.15), and the token stage, reading
 * it, drew more all-reduces, a feedback loop that turned 3-14 of 106 samples into chains of
 * one-node all-reduce layers (s30; docs/synth.md "The collapse"). The profile's mix carries what
 * the prefix histogram told of the graph (its kind of model and plan) and does not move with the
 * draws. The size stage keeps the prefix histogram. */
static void stage_in(double *f, const syn_ld_profile *pf)
{
    uint64_t tot = 0;
    for (int t = 0; t < NT; t++)
        tot += pf->tok[t];
    for (int t = 0; t < NT; t++)
        f[NT + t] = tot ? (double)pf->tok[t] / (double)tot : 0;
    memset(f + 2 * NT + 5 * LD_SIN, 0, LD_SIN * sizeof *f);
}

static void tok_input(double *x, const double *f, const uint32_t *noisy_hist, uint32_t n_layer, int own, int t)
{
    memcpy(x, f, LD_F * sizeof *x);
    double *p = x + LD_F;
    for (int k = 0; k < NT; k++)
        p[k] = n_layer ? (double)noisy_hist[k] / n_layer : 0;
    memset(p + NT, 0, NT * sizeof *p);
    p[NT + own] = 1;
    syn_sinus((double)t, 4, p + 2 * NT);
}

/* the edge denoiser's whole input (training): f, then edge_sparse's entries over zeros, so that
 * training and the sampler's sparse pass read one encoding */
static void edge_input(double *x, const double *f, int tok_v, int tok_u, uint32_t dist, uint32_t outdeg_u, int noisy,
                       uint32_t noisy_indeg, int t)
{
    int idx[LD_EDGE_SPARSE];
    double val[LD_EDGE_SPARSE];
    int k = edge_sparse(idx, val, tok_v, tok_u, dist, outdeg_u, noisy, noisy_indeg, t);
    memcpy(x, f, LD_F * sizeof *x);
    memset(x + LD_F, 0, (LD_EDGE_IN - LD_F) * sizeof *x);
    for (int q = 0; q < k; q++)
        x[idx[q]] = val[q];
}

/* far parents: the distance bucket of a layer distance d > LD_WINDOW (9-16: 0, 17-32: 1, ...) and
 * the distances of bucket b */
static int far_bucket(uint32_t d)
{
    int b = 0;
    for (uint32_t x = (d - 1) >> 4; x && b < LD_FAR_BUCKETS - 1; x >>= 1)
        b++;
    return b;
}
static void far_range(int b, uint32_t *lo, uint32_t *hi)
{
    *lo = (1u << (b + 3)) + 1;
    *hi = b == LD_FAR_BUCKETS - 1 ? UINT32_MAX : 1u << (b + 4);
}

/* the far-parent classifier's input: prefix encoding, the node's token, how many far parents it
 * has so far (one-hot), its in-degree inside the window, the bucket of its last far parent */
static void far_input(double *x, const double *f, int tok_v, uint32_t k, uint32_t win_deg, int last_bucket)
{
    memcpy(x, f, LD_F * sizeof *x);
    double *p = x + LD_F;
    memset(p, 0, (NT + LD_FAR_MAX + 1 + LD_FAR_BUCKETS) * sizeof *p);
    p[tok_v] = 1;
    p[NT + (k < LD_FAR_MAX ? k : LD_FAR_MAX - 1)] = 1;
    p[NT + LD_FAR_MAX] = win_deg / 8.0;
    if (last_bucket >= 0)
        p[NT + LD_FAR_MAX + 1 + last_bucket] = 1;
}

static int cmp_u32d(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int draw_marginal(const etk_synth_model *m, srng *r)
{
    uint64_t tot = 0;
    for (int t = 0; t < NT; t++)
        tot += m->tok_marginal[t];
    uint64_t x = (uint64_t)(srng_unit(r) * (double)tot);
    for (int t = 0; t < NT; t++) {
        if (x < m->tok_marginal[t])
            return t;
        x -= m->tok_marginal[t];
    }
    return 0;
}

static int draw_p(const double *p, int n, srng *r)
{
    double u = srng_unit(r), c = 0;
    for (int k = 0; k < n; k++)
        if (u < (c += p[k]))
            return k;
    return n - 1;
}

/* ---------- training ---------- */
int syn_ld_train(etk_synth_model *m, etk_synth_graph *const *gs, size_t n, const syn_ld_opts *o, etk_error *err)
{
    syn_layerdag *ld = calloc(1, sizeof *ld);
    srng r = {o->seed * 0x9e3779b97f4a7c15ULL + 3};
    uint32_t epochs = o->epochs ? o->epochs : 8, max_n = 1, max_l = 1;
    for (size_t gi = 0; gi < n; gi++) {
        max_n = gs[gi]->n > max_n ? gs[gi]->n : max_n;
        max_l = gs[gi]->n_layers > max_l ? gs[gi]->n_layers : max_l;
    }
    uint32_t *lstart = malloc(((size_t)max_l + 1) * sizeof *lstart), *outdeg = malloc(max_n * sizeof *outdeg);
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    double *x = malloc(LD_EDGE_IN * sizeof *x), f[LD_F], h[LD_HIDDEN], y[LD_FAR_OUT], dy[LD_FAR_OUT];
    double *avg[4] = {NULL, NULL, NULL, NULL}, n_avg = 0;
    syn_mlp *nets[4] = {NULL, NULL, NULL, NULL};
    uint32_t avg_from = epochs - (o->average < epochs ? o->average : epochs);
    int rc = ETK_ENOMEM;
    if (!ld || !lstart || !outdeg || !order || !x || syn_mlp_init(&ld->size, LD_F, LD_HIDDEN, LD_SIZES, &r) ||
        syn_mlp_init(&ld->tok, LD_TOK_IN, LD_HIDDEN, NT, &r) || syn_mlp_init(&ld->edge, LD_EDGE_IN, LD_HIDDEN, 1, &r) ||
        syn_mlp_init(&ld->far, LD_FAR_IN, LD_HIDDEN, LD_FAR_OUT, &r))
        goto done;
    nets[0] = &ld->size, nets[1] = &ld->tok, nets[2] = &ld->edge, nets[3] = &ld->far;
    for (int k = 0; k < 4 && o->average; k++)
        if (!(avg[k] = calloc(nets[k]->n_par, sizeof *avg[k])))
            goto done;
    ld->max_layers = 2 * max_l;
    ld->labeled = o->labels_ns != NULL;
    for (size_t i = 0; ld->labeled && i < n; i++) {
        double t = o->labels_ns[i];
        if (!i || t < ld->label_min_ns)
            ld->label_min_ns = t;
        if (!i || t > ld->label_max_ns)
            ld->label_max_ns = t;
    }
    ld->epochs = epochs;
    /* every training graph's profile: layer count, scale class, label bucket (below) */
    if (!(ld->prof = calloc(n ? n : 1, sizeof *ld->prof)))
        goto done;
    ld->n_prof = (uint32_t)n;
    for (size_t gi = 0; gi < n; gi++) {
        ld->prof[gi].layers = gs[gi]->n_layers;
        ld->prof[gi].scale = syn_scale_class(m, syn_scale_stat(m, gs[gi]));
        for (uint32_t i = 0; i < gs[gi]->n; i++)
            ld->prof[gi].tok[gs[gi]->tok[i]]++;
    }
    /* labeled: the bucket bounds (label quantiles over the graphs), then the attribute bin codes
     * of every node given its graph's label bucket and token */
    if (ld->labeled) {
        double *srt = malloc(n * sizeof *srt);
        if (!srt)
            goto done;
        memcpy(srt, o->labels_ns, n * sizeof *srt);
        qsort(srt, n, sizeof *srt, cmp_double);
        for (int q = 1; q < LD_LABEL_BUCKETS; q++)
            ld->lcut_ns[q - 1] = srt[(size_t)q * n / LD_LABEL_BUCKETS];
        free(srt);
    }
    for (size_t gi = 0; ld->labeled && gi < n; gi++) {
        int q = syn_ld_label_bucket(ld, o->labels_ns[gi]);
        ld->prof[gi].bucket = q;
        const etk_synth_graph *g = gs[gi];
        for (uint32_t i = 0; i < g->n; i++)
            if (shist_add(&ld->lbins[q][g->tok[i]], syn_bin_code(m, g->tok[i], g->val + (size_t)i * ETK_SYNTH_N_ATTR), 1))
                goto done;
    }
    /* the edge prior: parents among the window candidates */
    double cand = 0, pos = 0;
    for (size_t gi = 0; gi < n; gi++) {
        const etk_synth_graph *g = gs[gi];
        memset(lstart, 0, ((size_t)g->n_layers + 1) * sizeof *lstart);
        for (uint32_t i = 0; i < g->n; i++)
            lstart[g->layer[i] + 1]++;
        for (uint32_t l = 0; l < g->n_layers; l++)
            lstart[l + 1] += lstart[l];
        for (uint32_t i = 0; i < g->n; i++) {
            uint32_t l = g->layer[i];
            cand += lstart[l] - (l > LD_WINDOW ? lstart[l - LD_WINDOW] : 0);
            for (uint32_t k = g->par_off[i]; k < g->par_off[i + 1]; k++)
                pos += l - g->layer[g->par[k]] <= LD_WINDOW;
        }
    }
    ld->edge_prior = cand > 0 ? pos / cand : 0.1;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    int step = 0, size_step = 0;
    for (uint32_t ep = 0; ep < epochs; ep++) {
        double ls[4] = {0}, cnt[4] = {0};
        for (size_t i = n; i > 1; i--) { /* deterministic shuffle */
            uint32_t j = srng_below(&r, (uint32_t)i), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (size_t oi = 0; oi < n; oi++) {
            const etk_synth_graph *g = gs[order[oi]];
            uint32_t L = g->n_layers, hist_prev[NT] = {0}, hist_all[NT] = {0}, n_prev = 0, n_all = 0;
            memset(lstart, 0, ((size_t)L + 1) * sizeof *lstart);
            for (uint32_t i = 0; i < g->n; i++)
                lstart[g->layer[i] + 1]++;
            for (uint32_t l = 0; l < L; l++)
                lstart[l + 1] += lstart[l];
            memset(outdeg, 0, g->n * sizeof *outdeg);
            /* token and edge examples on at most 16 layers per graph and epoch */
            double pick = L > 16 ? 16.0 / L : 1.0;
            double nex[4] = {0};
            for (uint32_t l = 0; l <= L; l++) {
                features(f, l, n_prev, hist_prev, hist_all, n_prev, n_all, o->labels_ns ? o->labels_ns[order[oi]] : 0,
                         ld->label_min_ns, ld->label_max_ns, L - l, ld->prof[order[oi]].scale);
                uint32_t size = l < L ? lstart[l + 1] - lstart[l] : 0;
                syn_mlp_forward(&ld->size, f, h, y);
                ls[0] += syn_softmax_ce(y, LD_SIZES, size < LD_SIZES ? (int)size : LD_SIZES - 1, dy);
                cnt[0]++, nex[0]++;
                syn_mlp_backward(&ld->size, f, h, dy);
                stage_in(f, &ld->prof[order[oi]]); /* the token, edge and far stages' encoding */
                /* the size stage steps every LD_SIZE_CHUNK layers (one example per layer: a
                 * step per graph averaged hundreds of them, and 8 epochs left it underfit) */
                if (nex[0] >= LD_SIZE_CHUNK) {
                    syn_mlp_adam(&ld->size, 3e-3, ++size_step, 1.0 / nex[0]);
                    nex[0] = 0;
                }
                if (l == L)
                    break;
                uint32_t a = lstart[l], b = lstart[l + 1];
                if (srng_unit(&r) < pick) {
                    /* tokens: one noise level for the layer */
                    int t = 1 + (int)srng_below(&r, LD_STEPS);
                    double keep = 1.0 - (double)t / LD_STEPS;
                    uint32_t nh[NT] = {0};
                    int *noisy = malloc((b - a) * sizeof *noisy);
                    if (!noisy)
                        goto done;
                    for (uint32_t i = a; i < b; i++)
                        nh[noisy[i - a] = srng_unit(&r) < keep ? g->tok[i] : draw_marginal(m, &r)]++;
                    for (uint32_t i = a; i < b; i++) {
                        if (b - a > 8 && srng_unit(&r) >= 8.0 / (b - a))
                            continue;
                        tok_input(x, f, nh, b - a, noisy[i - a], t);
                        syn_mlp_forward(&ld->tok, x, h, y);
                        ls[1] += syn_softmax_ce(y, NT, g->tok[i], dy);
                        cnt[1]++, nex[1]++;
                        syn_mlp_backward(&ld->tok, x, h, dy);
                    }
                    free(noisy);
                    /* far parents of up to 8 nodes: one example per far parent (its bucket and
                     * token, nearest first) and one for the stop */
                    for (uint32_t v = a; v < b && l > LD_WINDOW; v++) {
                        if (b - a > 8 && srng_unit(&r) >= 8.0 / (b - a))
                            continue;
                        uint32_t fd[LD_FAR_MAX + 1], nf = 0, wd = 0;
                        uint32_t key[64];
                        for (uint32_t k = g->par_off[v]; k < g->par_off[v + 1]; k++) {
                            uint32_t d = l - g->layer[g->par[k]];
                            if (d <= LD_WINDOW)
                                wd++;
                            else if (nf < 64)
                                key[nf++] = d * 64u + g->tok[g->par[k]];
                        }
                        qsort(key, nf, sizeof *key, cmp_u32d);
                        if (nf > LD_FAR_MAX)
                            nf = LD_FAR_MAX;
                        for (uint32_t k = 0; k < nf; k++)
                            fd[k] = key[k];
                        int last = -1;
                        for (uint32_t k = 0; k <= nf && k < LD_FAR_MAX; k++) {
                            int target = 0;
                            if (k < nf) {
                                int bk = far_bucket(fd[k] / 64u);
                                target = 1 + bk * NT + (int)(fd[k] % 64u);
                            }
                            far_input(x, f, g->tok[v], k, wd, last);
                            syn_mlp_forward(&ld->far, x, h, y);
                            ls[3] += syn_softmax_ce(y, LD_FAR_OUT, target, dy);
                            cnt[3]++, nex[3]++;
                            syn_mlp_backward(&ld->far, x, h, dy);
                            if (k < nf)
                                last = far_bucket(fd[k] / 64u);
                        }
                    }
                    /* edges of up to 2 nodes: their window candidates (all parents, about 8
                     * non-parents, importance-weighted) */
                    uint32_t lo = l > LD_WINDOW ? lstart[l - LD_WINDOW] : 0;
                    for (int rep = 0; rep < 2 && l > 0; rep++) {
                        uint32_t v = a + srng_below(&r, b - a);
                        int t2 = 1 + (int)srng_below(&r, LD_STEPS);
                        double keep2 = 1.0 - (double)t2 / LD_STEPS;
                        uint32_t nc = a - lo, noisy_deg = 0;
                        /* noisy indicators of every candidate (for the in-degree) */
                        uint8_t *is = calloc(nc, 1), *nz = calloc(nc, 1);
                        if (!is || !nz) {
                            free(is), free(nz);
                            goto done;
                        }
                        for (uint32_t k = g->par_off[v]; k < g->par_off[v + 1]; k++)
                            if (g->par[k] >= lo)
                                is[g->par[k] - lo] = 1;
                        for (uint32_t c = 0; c < nc; c++) {
                            nz[c] = srng_unit(&r) < keep2 ? is[c] : srng_unit(&r) < ld->edge_prior;
                            noisy_deg += nz[c];
                        }
                        double negp = nc > 8 ? 8.0 / nc : 1.0;
                        for (uint32_t c = 0; c < nc; c++) {
                            if (!is[c] && srng_unit(&r) >= negp)
                                continue;
                            uint32_t u = lo + c;
                            edge_input(x, f, g->tok[v], g->tok[u], l - g->layer[u], outdeg[u], nz[c], noisy_deg, t2);
                            syn_mlp_forward(&ld->edge, x, h, y);
                            /* a non-parent kept with probability negp stands for 1 / negp of
                             * them (importance weight): the denoiser learns the true edge
                             * probability, not one inflated by the subsampling */
                            double wgt = is[c] ? 1.0 : 1.0 / negp;
                            ls[2] += wgt * syn_bce(y[0], is[c], dy);
                            dy[0] *= wgt;
                            cnt[2] += wgt, nex[2] += wgt;
                            syn_mlp_backward(&ld->edge, x, h, dy);
                        }
                        free(is), free(nz);
                    }
                }
                /* the layer joins the prefix */
                memset(hist_prev, 0, sizeof hist_prev);
                for (uint32_t i = a; i < b; i++) {
                    hist_prev[g->tok[i]]++;
                    hist_all[g->tok[i]]++;
                    for (uint32_t k = g->par_off[i]; k < g->par_off[i + 1]; k++)
                        outdeg[g->par[k]]++;
                }
                n_prev = b - a;
                n_all += b - a;
            }
            step++;
            if (nex[0])
                syn_mlp_adam(&ld->size, 3e-3, ++size_step, 1.0 / nex[0]);
            syn_mlp_adam(&ld->tok, 3e-3, step, nex[1] ? 1.0 / nex[1] : 0);
            syn_mlp_adam(&ld->edge, 3e-3, step, nex[2] ? 1.0 / nex[2] : 0);
            syn_mlp_adam(&ld->far, 3e-3, step, nex[3] ? 1.0 / nex[3] : 0);
            if (o->average && ep >= avg_from) { /* Polyak: sum the iterates of the tail */
                for (int k = 0; k < 4; k++)
                    for (size_t i = 0; i < nets[k]->n_par; i++)
                        avg[k][i] += nets[k]->w[i];
                n_avg++;
            }
        }
        for (int k = 0; k < 4; k++)
            ld->loss[k] = cnt[k] ? ls[k] / cnt[k] : 0;
    }
    for (int k = 0; k < 4 && n_avg > 0; k++)
        for (size_t i = 0; i < nets[k]->n_par; i++)
            nets[k]->w[i] = avg[k][i] / n_avg;
    syn_ld_free(m->ld);
    m->ld = ld;
    ld = NULL;
    rc = 0;
done:
    if (rc)
        etk_err(err, rc, "out of memory training the LayerDAG model");
    syn_ld_free(ld);
    for (int k = 0; k < 4; k++)
        free(avg[k]);
    free(lstart), free(outdeg), free(order), free(x);
    return rc;
}

/* ---------- sampling ---------- */
typedef struct vec {
    uint32_t n, cap;
    uint32_t *v;
} vec;
static int vpush(vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        uint32_t nc = a->cap ? 2 * a->cap : 256;
        uint32_t *p = realloc(a->v, nc * sizeof *p);
        if (!p)
            return -1;
        a->v = p, a->cap = nc;
    }
    a->v[a->n++] = x;
    return 0;
}

/* The token stage under-follows the profile: its samples' token mixes sit between the profile's
 * and the training marginal (s31, validation split: mean total-variation distance to the
 * marginal 0.074 for the samples, 0.107 for the profiles they drew and 0.109 for the held-out
 * graphs; to their own profile 0.10-0.12, where i.i.d. draws from the profile's mix give
 * 0.05), although the profile's shares are among its inputs. A product of experts corrects it
 * as Bayes would a classifier fitted to the pooled prior: the net's logits plus LD_GUIDE times
 * the log ratio of the profile's share to the marginal's (1: the net's output taken as
 * unconditioned; 0: version 5's sampler). The nets and the model file are unchanged. LD_GUIDE
 * was chosen on the validation split (fit on 214 llama2 / PyTorch graphs, evaluated on 49
 * llama3-8b workloads; fit seeds 1-3 x eval seeds 1, 1001): token MMD^2 0.0026-0.0038 at 0,
 * 0.0017-0.0036 at 1/4, 0.0013-0.0027 at 1/2, 0.0010-0.0039 at 3/4, 0.0028-0.0042 at 1 (fits
 * 1-2); at 1/2 the samples' spread around the marginal (0.107-0.113) meets their profiles'. */
void syn_ld_guide(const etk_synth_model *m, const syn_ld_profile *pf, double *g)
{
    double cp = 0, cm = 0;
    for (int t = 0; t < NT; t++)
        cp += pf->tok[t], cm += m->tok_marginal[t];
    for (int t = 0; t < NT; t++)
        g[t] = LD_GUIDE * log(((pf->tok[t] + 0.5) / (cp + 0.5 * NT)) / ((m->tok_marginal[t] + 0.5) / (cm + 0.5 * NT)));
}

const syn_ld_profile *syn_ld_profile_draw(const syn_layerdag *ld, int bucket, srng *r)
{
    uint32_t k = 0;
    for (uint32_t i = 0; bucket >= 0 && i < ld->n_prof; i++)
        k += ld->prof[i].bucket == bucket;
    if (!k) /* no label, or no training graph in the bucket: any graph */
        return &ld->prof[srng_below(r, ld->n_prof)];
    for (uint32_t i = 0, pick = srng_below(r, k);; i++)
        if (ld->prof[i].bucket == bucket && !pick--)
            return &ld->prof[i];
}

uint32_t syn_ld_prof_nodes(const syn_ld_profile *pf)
{
    uint32_t s = 0;
    for (int t = 0; t < NT; t++)
        s += pf->tok[t];
    return s;
}

int syn_ld_label_bucket(const syn_layerdag *ld, double label_ns)
{
    int q = 0;
    while (q < LD_LABEL_BUCKETS - 1 && label_ns >= ld->lcut_ns[q])
        q++;
    return q;
}


void syn_ld_attr_values(const etk_synth_model *m, int tok, double label_ns, int scale, srng *r, double *val)
{
    const shist *h = syn_attr_table(m, tok, scale);
    if (m->ld && m->ld->labeled && label_ns > 0) {
        const shist *lq = &m->ld->lbins[syn_ld_label_bucket(m->ld, label_ns)][tok];
        if (lq->total)
            h = lq;
    }
    syn_bin_values(m, tok, shist_draw(h, r, 0), r, val);
}

int syn_ld_sample(const etk_synth_model *m, uint32_t max_nodes, uint32_t nodes, double label_ns, srng *r,
                  etk_synth_graph **out)
{
    const syn_layerdag *ld = m->ld;
    vec tok = {0}, lay = {0}, off = {0}, par = {0}, lstart = {0}, outdeg = {0};
    double *val = NULL, *x = malloc(LD_EDGE_IN * sizeof *x), f[LD_F], h[LD_HIDDEN], y[LD_FAR_OUT], p[LD_FAR_OUT],
           pre_edge[LD_HIDDEN];
    uint32_t hist_prev[NT] = {0}, hist_all[NT] = {0}, n_prev = 0, n = 0;
    int *noisy = NULL, *clean = NULL;
    double *prob = NULL;
    uint8_t *nz = NULL;
    int rc = ETK_ENOMEM;
    if (!x)
        goto done;
    /* the graph's profile: one training graph's layer count and scale class (a labeled model
     * given a label: one of the label bucket's graphs) */
    const syn_ld_profile *pf = syn_ld_profile_draw(ld, ld->labeled && label_ns > 0 ? syn_ld_label_bucket(ld, label_ns) : -1, r);
    double guide[NT];
    syn_ld_guide(m, pf, guide);
    /* same-size sampling (docs/synth.md "Same-size sampling"): the profile's layer count scaled
     * by nodes / (the profile's node count), so that its program is laid out over a graph of that
     * size, and layers added until the graph has `nodes` nodes (the last one cut; past the scaled
     * count the layers-left feature is held at 1, the last layer's context). The stages see the
     * profile's program phase: layer index, layers left and prefix node count stretched back by
     * (profile layers / scaled layers) and (profile nodes / nodes), as a full-length graph of the
     * profile would present them at that point */
    uint32_t L = pf->layers;
    const double pn = (double)syn_ld_prof_nodes(pf);
    if (nodes)
        L = (uint32_t)fmax(1.0, round(pf->layers * (double)nodes / (pn > 0 ? pn : 1.0)));
    for (uint32_t l = 0; nodes ? n < nodes : l < L; l++) {
        uint32_t fl = l, fleft = L > l ? L - l : nodes ? 1 : 0, fn = n;
        if (nodes) {
            double w = (double)pf->layers / L;
            fl = (uint32_t)lround(l * w);
            fleft = L > l ? (uint32_t)fmax(1.0, round((L - l) * w)) : 1;
            fn = (uint32_t)lround(n * pn / nodes);
        }
        features(f, fl, n_prev, hist_prev, hist_all, n_prev, fn, ld->labeled ? label_ns : 0, ld->label_min_ns,
                 ld->label_max_ns, fleft, pf->scale);
        syn_mlp_forward(&ld->size, f, h, y);
        stage_in(f, pf);
        syn_mlp_prefix(&ld->edge, f, LD_F, pre_edge); /* f is the layer's: the edge stage's prefix */
        syn_softmax(y, LD_SIZES, p);
        /* the profile's layer count decides the stop: none before it (a graph has a first
         * layer), stop at it */
        p[0] = 0;
        double s = 0;
        for (int k = 0; k < LD_SIZES; k++)
            s += p[k];
        for (int k = 0; k < LD_SIZES; k++)
            p[k] /= s;
        uint32_t size = (uint32_t)draw_p(p, LD_SIZES, r);
        if (nodes && n + size > nodes)
            size = nodes - n;
        else if (!nodes && max_nodes && n + size > max_nodes) {
            if (n)
                break;
            size = max_nodes;
        }
        uint32_t a = n, b = n + size;
        if (vpush(&lstart, a))
            goto done;
        int *nn = realloc(noisy, size * sizeof *nn), *cc = realloc(clean, size * sizeof *cc);
        if (nn)
            noisy = nn;
        if (cc)
            clean = cc;
        if (!nn || !cc)
            goto done;
        /* tokens: discrete diffusion from the marginal prior */
        for (uint32_t i = 0; i < size; i++)
            noisy[i] = draw_marginal(m, r);
        for (int t = LD_STEPS; t >= 1; t--) {
            uint32_t nh[NT] = {0};
            for (uint32_t i = 0; i < size; i++)
                nh[noisy[i]]++;
            for (uint32_t i = 0; i < size; i++) {
                tok_input(x, f, nh, size, noisy[i], t);
                syn_mlp_forward(&ld->tok, x, h, y);
                for (int k = 0; k < NT; k++) /* profile guidance */
                    y[k] += guide[k];
                syn_softmax(y, NT, p);
                clean[i] = draw_p(p, NT, r);
            }
            double keep = 1.0 - (double)(t - 1) / LD_STEPS;
            for (uint32_t i = 0; i < size; i++)
                noisy[i] = t == 1 || srng_unit(r) < keep ? clean[i] : draw_marginal(m, r);
        }
        uint32_t lo = l > LD_WINDOW ? lstart.v[l - LD_WINDOW] : 0, nc = a - lo, pl = l ? lstart.v[l - 1] : 0;
        double *pr = realloc(prob, (nc ? nc : 1) * sizeof *pr);
        uint8_t *z = realloc(nz, nc ? nc : 1);
        if (pr)
            prob = pr;
        if (z)
            nz = z;
        if (!pr || !z)
            goto done;
        for (uint32_t i = 0; i < size; i++) {
            uint32_t v = a + i;
            if (vpush(&tok, (uint32_t)noisy[i]) || vpush(&lay, l) || vpush(&off, par.n) || vpush(&outdeg, 0))
                goto done;
            if (!l)
                continue;
            /* edges: Bernoulli diffusion from the density prior */
            uint32_t deg = 0;
            for (uint32_t c = 0; c < nc; c++)
                deg += nz[c] = srng_unit(r) < ld->edge_prior;
            for (int t = LD_STEPS; t >= 1; t--) {
                for (uint32_t c = 0; c < nc; c++) {
                    /* edge_input's x through the edge net, its prefix f summed once per layer */
                    uint32_t u = lo + c;
                    int ix[LD_EDGE_SPARSE];
                    double xv[LD_EDGE_SPARSE];
                    int k = edge_sparse(ix, xv, (int)tok.v[v], (int)tok.v[u], l - lay.v[u], outdeg.v[u], nz[c], deg, t);
                    syn_mlp_forward_sparse(&ld->edge, pre_edge, ix, xv, k, h, y);
                    prob[c] = syn_sigmoid(y[0]);
                }
                double keep = 1.0 - (double)(t - 1) / LD_STEPS;
                deg = 0;
                for (uint32_t c = 0; c < nc; c++) {
                    int e = srng_unit(r) < prob[c];
                    if (t > 1 && srng_unit(r) >= keep)
                        e = srng_unit(r) < ld->edge_prior;
                    deg += nz[c] = (uint8_t)e;
                }
            }
            /* the main parent: the chosen one of the layer before, or its likeliest */
            uint32_t main = UINT32_MAX;
            for (uint32_t c = pl - lo; c < nc && main == UINT32_MAX; c++)
                if (nz[c])
                    main = lo + c;
            double best = -1;
            if (main == UINT32_MAX)
                for (uint32_t c = pl - lo; c < nc; c++)
                    if (prob[c] > best)
                        best = prob[c], main = lo + c;
            uint32_t first = par.n;
            if (vpush(&par, main))
                goto done;
            outdeg.v[main]++;
            for (uint32_t c = 0; c < nc; c++)
                if (nz[c] && lo + c != main) {
                    if (vpush(&par, lo + c))
                        goto done;
                    outdeg.v[lo + c]++;
                }
            /* far parents, one at a time: stop, or a distance bucket and a token; the parent is
             * drawn uniformly among the nodes of that token in the bucket's layers (any node of
             * those layers when none has the token) */
            int last = -1;
            for (uint32_t k = 0; k < LD_FAR_MAX && l > LD_WINDOW; k++) {
                far_input(x, f, (int)tok.v[v], k, par.n - first, last);
                syn_mlp_forward(&ld->far, x, h, y);
                syn_softmax(y, LD_FAR_OUT, p);
                int cls = draw_p(p, LD_FAR_OUT, r);
                if (!cls)
                    break;
                int bk = (cls - 1) / NT, want = (cls - 1) % NT;
                uint32_t dlo, dhi;
                far_range(bk, &dlo, &dhi);
                if (dlo > l)
                    break;
                uint32_t l_hi = l - dlo, l_lo = dhi >= l ? 0 : l - dhi;
                uint32_t s0 = lstart.v[l_lo], s1 = l_hi + 1 < lstart.n ? lstart.v[l_hi + 1] : a, n_tok = 0;
                for (uint32_t u = s0; u < s1; u++)
                    n_tok += tok.v[u] == (uint32_t)want;
                uint32_t pick = srng_below(r, n_tok ? n_tok : s1 - s0), u = s0;
                for (; u < s1; u++)
                    if (!n_tok || tok.v[u] == (uint32_t)want) {
                        if (!pick)
                            break;
                        pick--;
                    }
                bool dup = false;
                for (uint32_t q = first; q < par.n; q++)
                    dup |= par.v[q] == u;
                if (!dup) {
                    if (vpush(&par, u))
                        goto done;
                    outdeg.v[u]++;
                }
                last = bk;
            }
        }
        memset(hist_prev, 0, sizeof hist_prev);
        for (uint32_t i = a; i < b; i++) {
            hist_prev[tok.v[i]]++;
            hist_all[tok.v[i]]++;
        }
        n_prev = size;
        n = b;
    }
    if (vpush(&off, par.n))
        goto done;
    etk_synth_graph *g = syn_graph_alloc(n, par.n);
    if (!g)
        goto done;
    g->n_layers = lstart.n;
    /* one attribute scale class for the whole graph, drawn from the training graphs' classes
     * (a labeled model given a label: the label bucket's table instead) */
    int scale = ld->labeled && label_ns > 0 ? -1 : pf->scale;
    g->scale = (uint32_t)(scale + 1);
    for (uint32_t i = 0; i < n; i++) {
        g->tok[i] = (uint16_t)tok.v[i];
        g->layer[i] = lay.v[i];
        /* attribute values from the bins given the scale class and the token (or the label
         * bucket and the token) */
        syn_ld_attr_values(m, g->tok[i], ld->labeled ? label_ns : 0, scale, r, g->val + (size_t)i * ETK_SYNTH_N_ATTR);
    }
    memcpy(g->par_off, off.v, ((size_t)n + 1) * sizeof *g->par_off);
    if (par.n) /* a one-layer graph has no edges (par.v is NULL) */
        memcpy(g->par, par.v, par.n * sizeof *g->par);
    *out = g;
    rc = 0;
done:
    free(tok.v), free(lay.v), free(off.v), free(par.v), free(lstart.v), free(outdeg.v);
    free(val), free(x), free(noisy), free(clean), free(prob), free(nz);
    return rc;
}

/* ---------- model file ---------- */
static json_t *net_json(const syn_mlp *m)
{
    json_t *a = json_array();
    for (size_t i = 0; i < m->n_par; i++)
        json_array_append_new(a, json_real(m->w[i]));
    return json_pack("{s:i,s:i,s:i,s:o}", "inputs", m->n_in, "hidden", m->n_hid, "outputs", m->n_out, "params", a);
}

json_t *syn_ld_json(const syn_layerdag *ld)
{
    json_t *pa = json_array();
    for (uint32_t i = 0; i < ld->n_prof; i++) { /* [layers, scale class, label bucket, token counts] */
        json_t *tc = json_array();
        for (int t = 0; t < NT; t++)
            json_array_append_new(tc, json_integer((json_int_t)ld->prof[i].tok[t]));
        json_array_append_new(pa, json_pack("[I,i,i,o]", (json_int_t)ld->prof[i].layers, ld->prof[i].scale,
                                            ld->prof[i].bucket, tc));
    }
    json_t *o = json_pack("{s:i,s:i,s:i,s:i,s:b,s:[f,f],s:I,s:f,s:I,s:[f,f,f],s:f,s:o,s:o,s:o,s:o}", "window", LD_WINDOW,
                     "size_classes", LD_SIZES, "steps", LD_STEPS, "far_buckets", LD_FAR_BUCKETS, "labeled", (int)ld->labeled, "label_range_ns",
                     ld->label_min_ns, ld->label_max_ns, "max_layers", (json_int_t)ld->max_layers,
                     "edge_prior", ld->edge_prior, "epochs", (json_int_t)ld->epochs, "final_loss", ld->loss[0],
                     ld->loss[1], ld->loss[2], "far_loss", ld->loss[3], "size_net", net_json(&ld->size), "token_net",
                     net_json(&ld->tok), "edge_net", net_json(&ld->edge), "far_net", net_json(&ld->far));
    json_object_set_new(o, "profiles", pa);
    return o;
}

static int net_from(json_t *o, const char *field, const char *path, int in, int out, syn_mlp *m, etk_error *err)
{
    srng r = {1};
    json_t *p = json_object_get(o, "params");
    if (json_integer_value(json_object_get(o, "inputs")) != in || json_integer_value(json_object_get(o, "outputs")) != out ||
        json_integer_value(json_object_get(o, "hidden")) != LD_HIDDEN || !json_is_array(p))
        return etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.%s': wanted {\"inputs\": %d, \"hidden\": %d, \"outputs\": %d, "
                       "\"params\": [...]}", path, field, in, LD_HIDDEN, out);
    if (syn_mlp_init(m, in, LD_HIDDEN, out, &r))
        return etk_err(err, ETK_ENOMEM, "out of memory");
    if (json_array_size(p) != m->n_par)
        return etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.%s.params': wanted %zu numbers, got %zu", path, field,
                       m->n_par, json_array_size(p));
    for (size_t i = 0; i < m->n_par; i++) {
        json_t *x = json_array_get(p, i);
        double d = json_number_value(x);
        if (!json_is_number(x) || !isfinite(d))
            return etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.%s.params[%zu]': wanted a finite number", path, field, i);
        m->w[i] = d;
    }
    return 0;
}

int syn_ld_from_json(json_t *o, const char *path, syn_layerdag **out, etk_error *err)
{
    *out = NULL;
    syn_layerdag *ld = calloc(1, sizeof *ld);
    if (!ld)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    json_int_t ml = json_integer_value(json_object_get(o, "max_layers"));
    double ep = json_number_value(json_object_get(o, "edge_prior"));
    int rc = 0;
    if (json_integer_value(json_object_get(o, "window")) != LD_WINDOW ||
        json_integer_value(json_object_get(o, "size_classes")) != LD_SIZES ||
        json_integer_value(json_object_get(o, "steps")) != LD_STEPS ||
        json_integer_value(json_object_get(o, "far_buckets")) != LD_FAR_BUCKETS)
        rc = etk_err(err, ETK_EFORMAT,
                     "%s: field 'layerdag': wanted window 8, size_classes 64, steps 4, far_buckets 7 (version 5)", path);
    else if (ml < 1 || ml > 100000000)
        rc = etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.max_layers': wanted a positive integer", path);
    else if (!(ep >= 0 && ep <= 1))
        rc = etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.edge_prior': wanted a number in [0, 1]", path);
    if (!rc) {
        ld->max_layers = (uint32_t)ml;
        ld->edge_prior = ep;
        ld->labeled = json_is_true(json_object_get(o, "labeled"));
        json_t *lr = json_object_get(o, "label_range_ns");
        ld->label_min_ns = json_number_value(json_array_get(lr, 0));
        ld->label_max_ns = json_number_value(json_array_get(lr, 1));
        ld->epochs = (uint32_t)json_integer_value(json_object_get(o, "epochs"));
        rc = net_from(json_object_get(o, "size_net"), "size_net", path, LD_F, LD_SIZES, &ld->size, err);
    }
    /* the profiles: [layers, scale class, label bucket] per training graph */
    json_t *pa = json_object_get(o, "profiles");
    if (!rc && (!json_is_array(pa) || !json_array_size(pa) || json_array_size(pa) > UINT32_MAX))
        rc = etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.profiles': wanted a non-empty array of "
                     "[layers, scale class, label bucket, token counts]", path);
    if (!rc && !(ld->prof = calloc(json_array_size(pa), sizeof *ld->prof)))
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < json_array_size(pa); i++) {
        json_t *e = json_array_get(pa, i), *a = json_array_get(e, 0), *b = json_array_get(e, 1), *c = json_array_get(e, 2);
        json_t *tc = json_array_get(e, 3);
        json_int_t L = json_integer_value(a), sc = json_integer_value(b), q = json_integer_value(c);
        bool counts_ok = json_is_array(tc) && json_array_size(tc) == NT;
        for (int t = 0; counts_ok && t < NT; t++) {
            json_t *x = json_array_get(tc, (size_t)t);
            counts_ok = json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= UINT32_MAX;
        }
        if (!json_is_array(e) || json_array_size(e) != 4 || !json_is_integer(a) || !json_is_integer(b) ||
            !json_is_integer(c) || L < 1 || L > ml || sc < 0 || sc >= SYN_SCALE_CLASSES || q < 0 ||
            q >= LD_LABEL_BUCKETS || !counts_ok)
            rc = etk_err(err, ETK_EFORMAT, "%s: field 'layerdag.profiles[%zu]': wanted [layers 1 to max_layers, "
                         "scale class 0 to %d, label bucket 0 to %d, [%d token counts]]", path, i,
                         SYN_SCALE_CLASSES - 1, LD_LABEL_BUCKETS - 1, NT);
        else {
            ld->prof[i] = (syn_ld_profile){(uint32_t)L, (int32_t)sc, (int32_t)q, {0}};
            for (int t = 0; t < NT; t++)
                ld->prof[i].tok[t] = (uint32_t)json_integer_value(json_array_get(tc, (size_t)t));
            ld->n_prof = (uint32_t)i + 1;
        }
    }
    if (!rc)
        rc = net_from(json_object_get(o, "token_net"), "token_net", path, LD_TOK_IN, NT, &ld->tok, err);
    if (!rc)
        rc = net_from(json_object_get(o, "edge_net"), "edge_net", path, LD_EDGE_IN, 1, &ld->edge, err);
    if (!rc)
        rc = net_from(json_object_get(o, "far_net"), "far_net", path, LD_FAR_IN, LD_FAR_OUT, &ld->far, err);
    if (rc) {
        syn_ld_free(ld);
        return rc;
    }
    *out = ld;
    return 0;
}
