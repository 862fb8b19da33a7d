/* nn.h — tiny dense networks for the LayerDAG model (private to src/synth): a one-hidden-layer
 * MLP (ReLU) with hand-written backpropagation, Adam, softmax cross-entropy and logistic loss.
 * Deterministic: fixed initialisation from a seed, plain loops in a fixed order. */
#ifndef ETK_SYNTH_NN_H
#define ETK_SYNTH_NN_H

#include <stddef.h>

#include "synth_internal.h"

typedef struct syn_mlp {
    int n_in, n_hid, n_out;
    size_t n_par;
    double *w; /* W1[n_hid][n_in], b1[n_hid], W2[n_out][n_hid], b2[n_out] */
    double *g; /* gradients, same layout */
    double *m, *v; /* Adam moments */
} syn_mlp;

int syn_mlp_init(syn_mlp *m, int n_in, int n_hid, int n_out, srng *r); /* ETK_ENOMEM or 0 */
void syn_mlp_free(syn_mlp *m);
/* h[n_hid]: hidden activations after ReLU; y[n_out]: outputs (logits) */
void syn_mlp_forward(const syn_mlp *m, const double *x, double *h, double *y);
/* The first layer's sums over x[0, n), bias first, in syn_mlp_forward's order: pre[n_hid]. */
void syn_mlp_prefix(const syn_mlp *m, const double *x, int n, double *pre);
/* syn_mlp_forward of an input whose entries [0, n) gave pre (syn_mlp_prefix) and whose other
 * entries are zero but for the k at idx[] (increasing, each >= n) with values val[]. The sums
 * are the same in the same order less the zero entries, whose products (+0 or -0) leave a sum
 * as it is, so h and y equal syn_mlp_forward's bit for bit (tests/test_synth.c). */
void syn_mlp_forward_sparse(const syn_mlp *m, const double *pre, const int *idx, const double *val, int k, double *h,
                            double *y);
/* add d(loss)/d(params) for one example to m->g, given the forward's h and dy = d(loss)/dy */
void syn_mlp_backward(syn_mlp *m, const double *x, const double *h, const double *dy);
/* one Adam step (beta1 0.9, beta2 0.999, eps 1e-8) on the gradients times `scale`; step t >= 1;
 * the gradients are cleared */
void syn_mlp_adam(syn_mlp *m, double lr, int t, double scale);
/* softmax of y[n] into p (p may equal y) */
void syn_softmax(const double *y, int n, double *p);
/* cross-entropy of softmax(y) against `target`; dy = softmax(y) - onehot(target) */
double syn_softmax_ce(const double *y, int n, int target, double *dy);
/* logistic loss of sigmoid(y) against target 0/1; *dy = sigmoid(y) - target */
double syn_bce(double y, int target, double *dy);
double syn_sigmoid(double y);
/* sinusoidal embedding of x into d values (d even): sin/cos of x / 10000^(2i/d) */
void syn_sinus(double x, int d, double *out);
#endif
