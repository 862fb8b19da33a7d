/* fit.c — fitting calibration parameters (etkit/calib.h): a deterministic Nelder–Mead search
 * over the logarithms of the parameters (so a parameter moves by ratios and stays positive),
 * minimising the mean |log(predicted / measured)| over the chosen rows, with a fixed start
 * simplex (each parameter 25% up), fixed coefficients, ties broken by vertex order, an
 * evaluation cap, and restarts from the best vertex until a restart gains nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib_internal.h"
#include "etkit/calib.h"

#define BAD_OBJ 1e9 /* a point the parameters' ranges refuse, or a failed prediction */

typedef struct fit_ctx {
    etk_calib_rows *rows;
    const bool *use;
    etk_calib_params p;
    uint32_t evals;
    etk_error *err;
    int fatal;        /* a prediction failed for another reason than a parameter's range */
    uint32_t jobs;
    const etk_calib_params *fixed;
    bool *no_effect;  /* out: the first simplex found the parameter flat */
    bool first_simplex_done;
    bool capped;      /* a Nelder-Mead run stopped on the evaluation cap */
    double *logerr;   /* per row scratch */
    etk_error *errs;
    int *codes;
} fit_ctx;

typedef struct obj_ctx {
    fit_ctx *c;
    const etk_calib_params *p;
    double *logerr;   /* per row; NAN: refused point */
    etk_error *errs;  /* per row */
    int *codes;
} obj_ctx;

static void obj_row(void *arg, uint32_t r)
{
    obj_ctx *o = arg;
    o->codes[r] = 0;
    if (!o->c->use[r])
        return;
    etk_calib_row *row = &o->c->rows->rows[r];
    /* a value outside a parameter's range: a refused point, not a failure */
    etk_cluster cl = row->cluster;
    etk_compute_params cp;
    etk_compute_defaults(&cl.gpu, &cp);
    etk_error e = {0};
    if (etk_calib_apply(o->p, &cl, &cp, &e)) {
        o->logerr[r] = NAN;
        return;
    }
    etk_calib_pred pr;
    if (etk_calib_predict(row, o->p, &pr, &o->errs[r])) {
        o->codes[r] = o->errs[r].code ? o->errs[r].code : ETK_EINVAL;
        return;
    }
    o->logerr[r] = fabs(log(pr.value / row->measured));
}

static double objective(fit_ctx *c, const double *u)
{
    etk_calib_params q = c->p;
    for (uint32_t i = 0; i < q.n; i++)
        q.value[i] = exp(u[i]);
    etk_calib_params p;
    etk_calib_params_merge(&p, c->fixed, &q);
    c->evals++;
    obj_ctx o = {c, &p, c->logerr, c->errs, c->codes};
    calib_parallel(c->rows->n, c->jobs, obj_row, &o);
    double sum = 0;
    uint32_t n = 0;
    bool refused = false;
    for (uint32_t r = 0; r < c->rows->n; r++) {
        if (!c->use[r])
            continue;
        if (c->codes[r]) {
            if (!c->fatal) {
                c->fatal = c->codes[r];
                *c->err = c->errs[r];
            }
            return BAD_OBJ;
        }
        if (isnan(c->logerr[r])) {
            refused = true;
            continue;
        }
        sum += c->logerr[r];
        n++;
    }
    return refused || !n ? BAD_OBJ : sum / n;
}

/* one Nelder–Mead run from u (n dims) with initial step `step`; returns the best value */
static double nelder_mead(fit_ctx *c, double *u, uint32_t n, double step, uint32_t max_evals,
                          double tol)
{
    enum { MAXN = ETK_CALIB_MAX_PARAMS };
    double v[MAXN + 1][MAXN], f[MAXN + 1], xo[MAXN], xr[MAXN], xe[MAXN], xc[MAXN];
    for (uint32_t i = 0; i <= n; i++) {
        memcpy(v[i], u, n * sizeof *u);
        if (i)
            v[i][i - 1] += step;
        f[i] = objective(c, v[i]);
        if (c->fatal)
            return BAD_OBJ;
    }
    if (!c->first_simplex_done && c->no_effect)
        for (uint32_t i = 1; i <= n; i++)
            c->no_effect[i - 1] = f[i] == f[0];
    c->first_simplex_done = true;
    for (;;) {
        /* order vertices by value (insertion sort: stable, ties keep their order) */
        for (uint32_t i = 1; i <= n; i++)
            for (uint32_t j = i; j > 0 && f[j] < f[j - 1]; j--) {
                double tf = f[j];
                f[j] = f[j - 1];
                f[j - 1] = tf;
                for (uint32_t k = 0; k < n; k++) {
                    double t = v[j][k];
                    v[j][k] = v[j - 1][k];
                    v[j - 1][k] = t;
                }
            }
        double size = 0;
        for (uint32_t i = 1; i <= n; i++)
            for (uint32_t k = 0; k < n; k++)
                size = fmax(size, fabs(v[i][k] - v[0][k]));
        if (f[n] - f[0] <= tol && size <= tol)
            break;
        if (c->evals >= max_evals) {
            c->capped = true;
            break;
        }
        for (uint32_t k = 0; k < n; k++) {
            xo[k] = 0;
            for (uint32_t i = 0; i < n; i++)
                xo[k] += v[i][k];
            xo[k] /= n;
            xr[k] = xo[k] + (xo[k] - v[n][k]);
        }
        double fr = objective(c, xr);
        if (c->fatal)
            return BAD_OBJ;
        if (fr < f[0]) {
            for (uint32_t k = 0; k < n; k++)
                xe[k] = xo[k] + 2 * (xr[k] - xo[k]);
            double fe = objective(c, xe);
            if (c->fatal)
                return BAD_OBJ;
            if (fe < fr) {
                memcpy(v[n], xe, n * sizeof *xe);
                f[n] = fe;
            } else {
                memcpy(v[n], xr, n * sizeof *xr);
                f[n] = fr;
            }
            continue;
        }
        if (fr < f[n - 1]) {
            memcpy(v[n], xr, n * sizeof *xr);
            f[n] = fr;
            continue;
        }
        /* contraction: outside when the reflection beat the worst, else inside */
        bool outside = fr < f[n];
        for (uint32_t k = 0; k < n; k++)
            xc[k] = outside ? xo[k] + 0.5 * (xr[k] - xo[k]) : xo[k] + 0.5 * (v[n][k] - xo[k]);
        double fc = objective(c, xc);
        if (c->fatal)
            return BAD_OBJ;
        if (fc < (outside ? fr : f[n])) {
            memcpy(v[n], xc, n * sizeof *xc);
            f[n] = fc;
            continue;
        }
        for (uint32_t i = 1; i <= n; i++) { /* shrink towards the best */
            for (uint32_t k = 0; k < n; k++)
                v[i][k] = v[0][k] + 0.5 * (v[i][k] - v[0][k]);
            f[i] = objective(c, v[i]);
            if (c->fatal)
                return BAD_OBJ;
        }
    }
    uint32_t best = 0;
    for (uint32_t i = 1; i <= n; i++)
        if (f[i] < f[best])
            best = i;
    memcpy(u, v[best], n * sizeof *u);
    return f[best];
}

/* the search from u (log values of p's parameters) */
static int fit_run(fit_ctx *c, etk_calib_params *p, const etk_calib_fit_opts *o, double *u,
                   double *obj, uint32_t *evals, etk_error *err)
{
    uint32_t max_evals = o && o->max_evals ? o->max_evals : 60 * (p->n + 1);
    double tol = o && o->tol > 0 ? o->tol : 1e-6;
    double best = objective(c, u);
    if (c->fatal)
        return c->fatal;
    if (best >= BAD_OBJ)
        return etk_err(err, ETK_EINVAL, "fit: the start values are outside the parameters' ranges");
    if (o && o->start_obj)
        *o->start_obj = best;
    bool converged = false;
    /* restarts from the best vertex (a collapsed simplex can stall on this non-smooth objective)
     * until one gains less than tol */
    for (int restart = 0; restart < 8 && c->evals < max_evals; restart++) {
        double w[ETK_CALIB_MAX_PARAMS];
        memcpy(w, u, sizeof w);
        double f = nelder_mead(c, w, p->n, log(1.25), max_evals, tol);
        if (c->fatal)
            return c->fatal;
        bool gained = f < best - tol;
        if (f < best) {
            best = f;
            memcpy(u, w, sizeof w);
        }
        if (!gained) {
            converged = !c->capped;
            break;
        }
        c->capped = false;
    }
    for (uint32_t i = 0; i < p->n; i++)
        p->value[i] = exp(u[i]);
    if (obj)
        *obj = best;
    if (evals)
        *evals = c->evals;
    if (o && o->converged)
        *o->converged = converged;
    return 0;
}

int etk_calib_fit(etk_calib_rows *rows, const bool *use, etk_calib_params *p,
                  const etk_calib_fit_opts *o, double *obj, uint32_t *evals, etk_error *err)
{
    if (p->n == 0 || p->n > ETK_CALIB_MAX_PARAMS)
        return etk_err(err, ETK_EINVAL, "fit: between 1 and %d parameters, got %u",
                       ETK_CALIB_MAX_PARAMS, p->n);
    uint32_t n_use = 0;
    for (uint32_t r = 0; r < rows->n; r++)
        if (use[r]) {
            if (!rows->rows[r].built)
                return etk_err(err, ETK_EINVAL, "fit: %s", rows->rows[r].reason);
            n_use++;
        }
    if (!n_use)
        return etk_err(err, ETK_EINVAL, "fit: no rows to fit to");
    double u[ETK_CALIB_MAX_PARAMS];
    for (uint32_t i = 0; i < p->n; i++) {
        if (etk_calib_param_check(p->name[i], err))
            return -1;
        if (!(p->value[i] > 0) || !isfinite(p->value[i]))
            return etk_err(err, ETK_EINVAL, "fit: %s starts at %g; the search moves parameters by "
                           "ratios and needs a positive start", p->name[i], p->value[i]);
        u[i] = log(p->value[i]);
    }
    fit_ctx c = {.rows = rows, .use = use, .p = *p, .err = err,
                 .jobs = o && o->jobs ? o->jobs : 1, .fixed = o ? o->fixed : NULL,
                 .no_effect = o ? o->no_effect : NULL};
    c.logerr = calloc(rows->n, sizeof *c.logerr);
    c.errs = calloc(rows->n, sizeof *c.errs);
    c.codes = calloc(rows->n, sizeof *c.codes);
    int rc = c.logerr && c.errs && c.codes ? fit_run(&c, p, o, u, obj, evals, err)
                                           : etk_err(err, ETK_ENOMEM, "fit: out of memory");
    free(c.logerr);
    free(c.errs);
    free(c.codes);
    return rc;
}
