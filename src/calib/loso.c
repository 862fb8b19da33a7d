/* loso.c — leave-one-set-out cross-validation (etkit/calib.h): for each set of the chosen rows,
 * fit the parameters on the other sets (the start given, the same search) and predict the set's rows
 * with the parameters they took no part in. Each fold reports its training objective at the
 * start and fitted, and whether its search converged (etkit calibrate starts the folds from the
 * full fit's values: a fold's fit is then never worse on its rows than the full fit). */
#include <stdlib.h>
#include <string.h>

#include "etkit/calib.h"

int etk_calib_loso(etk_calib_rows *rows, const bool *use, const etk_calib_params *start,
                   const etk_calib_fit_opts *o, etk_calib_eval *held, etk_calib_loso_set *sets,
                   uint32_t cap, uint32_t *n_sets, etk_error *err)
{
    *n_sets = 0;
    bool *train = calloc(rows->n ? rows->n : 1, sizeof *train);
    bool *done = calloc(rows->n ? rows->n : 1, sizeof *done);
    etk_calib_eval *tmp = calloc(rows->n ? rows->n : 1, sizeof *tmp);
    if (!train || !done || !tmp) {
        free(train);
        free(done);
        free(tmp);
        return etk_err(err, ETK_ENOMEM, "leave-one-set-out: out of memory");
    }
    for (uint32_t i = 0; i < rows->n; i++) {
        memset(&held[i], 0, sizeof held[i]);
        snprintf(held[i].error, sizeof held[i].error, "not selected");
    }
    int rc = 0;
    for (uint32_t i = 0; i < rows->n && !rc; i++) {
        if (!use[i] || done[i])
            continue;
        const char *set = rows->rows[i].set;
        bool any = false;
        for (uint32_t j = 0; j < rows->n; j++) {
            train[j] = use[j] && strcmp(rows->rows[j].set, set) != 0;
            any = any || train[j];
        }
        etk_calib_loso_set ls;
        memset(&ls, 0, sizeof ls);
        snprintf(ls.set, sizeof ls.set, "%s", set);
        ls.p = *start;
        etk_error fe = {0};
        etk_calib_fit_opts fo = {0};
        if (o)
            fo = *o;
        fo.start_obj = &ls.start_obj;
        fo.converged = &ls.converged;
        ls.fitted = any && etk_calib_fit(rows, train, &ls.p, &fo, &ls.obj, &ls.evals, &fe) == 0;
        if (any && !ls.fitted && fe.code != ETK_EINVAL) {
            rc = etk_err(err, fe.code, "leave-one-set-out without %s: %s", set, fe.msg);
            break;
        }
        /* the set's rows with the parameters fitted without them */
        for (uint32_t j = 0; j < rows->n; j++)
            train[j] = use[j] && !strcmp(rows->rows[j].set, set);
        if (ls.fitted) {
            etk_calib_params all;
            etk_calib_params_merge(&all, o ? o->fixed : NULL, &ls.p);
            etk_calib_eval_rows(rows, train, &all, o ? o->jobs : 1, tmp);
        }
        for (uint32_t j = 0; j < rows->n; j++) {
            if (!train[j])
                continue;
            done[j] = true;
            if (ls.fitted) {
                held[j] = tmp[j];
                continue;
            }
            memset(&held[j], 0, sizeof held[j]);
            snprintf(held[j].error, sizeof held[j].error, "%.700s",
                     any ? fe.msg : "no other set to fit on");
        }
        if (*n_sets < cap)
            sets[(*n_sets)++] = ls;
    }
    free(train);
    free(done);
    free(tmp);
    return rc;
}
