/* nn.c — tiny dense networks (see nn.h): forward, backpropagation, Adam. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"

int syn_mlp_init(syn_mlp *m, int n_in, int n_hid, int n_out, srng *r)
{
    memset(m, 0, sizeof *m);
    m->n_in = n_in, m->n_hid = n_hid, m->n_out = n_out;
    m->n_par = (size_t)n_hid * n_in + n_hid + (size_t)n_out * n_hid + n_out;
    m->w = calloc(m->n_par, sizeof *m->w);
    m->g = calloc(m->n_par, sizeof *m->g);
    m->m = calloc(m->n_par, sizeof *m->m);
    m->v = calloc(m->n_par, sizeof *m->v);
    if (!m->w || !m->g || !m->m || !m->v) {
        syn_mlp_free(m);
        return ETK_ENOMEM;
    }
    /* He initialisation (uniform with the same variance), biases 0 */
    double s1 = sqrt(6.0 / n_in), s2 = sqrt(6.0 / n_hid);
    double *w1 = m->w, *w2 = m->w + (size_t)n_hid * n_in + n_hid;
    for (size_t i = 0; i < (size_t)n_hid * n_in; i++)
        w1[i] = (2 * srng_unit(r) - 1) * s1;
    for (size_t i = 0; i < (size_t)n_out * n_hid; i++)
        w2[i] = (2 * srng_unit(r) - 1) * s2 * 0.5;
    return 0;
}

void syn_mlp_free(syn_mlp *m)
{
    free(m->w), free(m->g), free(m->m), free(m->v);
    memset(m, 0, sizeof *m);
}

/* the output layer: y = W2 h + b2 */
static void mlp_out(const syn_mlp *m, const double *h, double *y)
{
    const double *w2 = m->w + (size_t)m->n_hid * m->n_in + m->n_hid, *b2 = w2 + (size_t)m->n_out * m->n_hid;
    for (int k = 0; k < m->n_out; k++) {
        const double *row = w2 + (size_t)k * m->n_hid;
        double s = b2[k];
        for (int j = 0; j < m->n_hid; j++)
            s += row[j] * h[j];
        y[k] = s;
    }
}

void syn_mlp_prefix(const syn_mlp *m, const double *x, int n, double *pre)
{
    const double *w1 = m->w, *b1 = w1 + (size_t)m->n_hid * m->n_in;
    for (int j = 0; j < m->n_hid; j++) {
        const double *row = w1 + (size_t)j * m->n_in;
        double s = b1[j];
        for (int i = 0; i < n; i++)
            s += row[i] * x[i];
        pre[j] = s;
    }
}

void syn_mlp_forward(const syn_mlp *m, const double *x, double *h, double *y)
{
    syn_mlp_prefix(m, x, m->n_in, h); /* the whole input: the first layer's sums */
    for (int j = 0; j < m->n_hid; j++)
        h[j] = h[j] > 0 ? h[j] : 0;
    mlp_out(m, h, y);
}

void syn_mlp_forward_sparse(const syn_mlp *m, const double *pre, const int *idx, const double *val, int k, double *h,
                            double *y)
{
    const double *w1 = m->w;
    for (int j = 0; j < m->n_hid; j++) {
        const double *row = w1 + (size_t)j * m->n_in;
        double s = pre[j];
        for (int q = 0; q < k; q++)
            s += row[idx[q]] * val[q];
        h[j] = s > 0 ? s : 0;
    }
    mlp_out(m, h, y);
}

void syn_mlp_backward(syn_mlp *m, const double *x, const double *h, const double *dy)
{
    double *g1 = m->g, *gb1 = g1 + (size_t)m->n_hid * m->n_in, *g2 = gb1 + m->n_hid,
           *gb2 = g2 + (size_t)m->n_out * m->n_hid;
    const double *w2 = m->w + (size_t)m->n_hid * m->n_in + m->n_hid;
    for (int j = 0; j < m->n_hid; j++) {
        double dh = 0;
        for (int k = 0; k < m->n_out; k++)
            dh += w2[(size_t)k * m->n_hid + j] * dy[k];
        if (h[j] <= 0)
            continue; /* ReLU: no gradient where the unit is off */
        gb1[j] += dh;
        double *row = g1 + (size_t)j * m->n_in;
        for (int i = 0; i < m->n_in; i++)
            row[i] += dh * x[i];
    }
    for (int k = 0; k < m->n_out; k++) {
        gb2[k] += dy[k];
        double *row = g2 + (size_t)k * m->n_hid;
        for (int j = 0; j < m->n_hid; j++)
            row[j] += dy[k] * h[j];
    }
}

void syn_mlp_adam(syn_mlp *m, double lr, int t, double scale)
{
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1 - pow(b1, t), c2 = 1 - pow(b2, t);
    for (size_t i = 0; i < m->n_par; i++) {
        double g = m->g[i] * scale;
        m->m[i] = b1 * m->m[i] + (1 - b1) * g;
        m->v[i] = b2 * m->v[i] + (1 - b2) * g * g;
        m->w[i] -= lr * (m->m[i] / c1) / (sqrt(m->v[i] / c2) + eps);
        m->g[i] = 0;
    }
}

void syn_softmax(const double *y, int n, double *p)
{
    double mx = y[0], s = 0;
    for (int k = 1; k < n; k++)
        mx = y[k] > mx ? y[k] : mx;
    for (int k = 0; k < n; k++)
        s += (p[k] = exp(y[k] - mx));
    for (int k = 0; k < n; k++)
        p[k] /= s;
}

double syn_softmax_ce(const double *y, int n, int target, double *dy)
{
    syn_softmax(y, n, dy);
    double loss = -log(dy[target] > 1e-300 ? dy[target] : 1e-300);
    dy[target] -= 1;
    return loss;
}

double syn_sigmoid(double y) { return y >= 0 ? 1 / (1 + exp(-y)) : exp(y) / (1 + exp(y)); }

double syn_bce(double y, int target, double *dy)
{
    double p = syn_sigmoid(y);
    *dy = p - target;
    /* log(1 + e^-|y|) form: stable */
    return (y > 0 ? y : 0) - y * target + log1p(exp(-fabs(y)));
}

void syn_sinus(double x, int d, double *out)
{
    for (int i = 0; i < d / 2; i++) {
        double f = x / pow(10000.0, 2.0 * i / d);
        out[2 * i] = sin(f);
        out[2 * i + 1] = cos(f);
    }
}
