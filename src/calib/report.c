/* report.c — calibration reports (etkit/calib.h): every row's measured and predicted figure
 * with the signed error and the memory verdict, the rows not predicted with their reason, and
 * mean / worst |error| per set, per GPU and overall, for one or more evaluations side by side
 * (defaults, fitted, held out). Text and JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib/calib_internal.h"
#include "etkit/calib.h"

typedef struct eval_ctx {
    etk_calib_rows *rows;
    const bool *use;
    const etk_calib_params *p;
    etk_calib_eval *out;
} eval_ctx;

static void eval_one(void *arg, uint32_t i)
{
    eval_ctx *c = arg;
    etk_calib_row *r = &c->rows->rows[i];
    etk_calib_eval *e = &c->out[i];
    memset(e, 0, sizeof *e);
    if (c->use && !c->use[i]) {
        snprintf(e->error, sizeof e->error, "not selected");
        return;
    }
    if (!r->expressible) {
        snprintf(e->error, sizeof e->error, "not expressible: %.700s", r->reason);
        return;
    }
    if (!r->built) {
        snprintf(e->error, sizeof e->error, "%.760s", r->reason);
        return;
    }
    etk_error err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = etk_calib_predict(r, c->p, &e->pred, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (c->rows->drop_workloads) {
        etk_workload_free(r->wl);
        r->wl = NULL;
    }
    e->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (rc)
        snprintf(e->error, sizeof e->error, "%.700s", err.msg);
    else
        e->ok = true;
}

uint32_t etk_calib_eval_rows(etk_calib_rows *rows, const bool *use, const etk_calib_params *p,
                             uint32_t jobs, etk_calib_eval *out)
{
    eval_ctx c = {rows, use, p, out};
    calib_parallel(rows->n, jobs ? jobs : 1, eval_one, &c);
    uint32_t failed = 0;
    for (uint32_t i = 0; i < rows->n; i++)
        failed += (!use || use[i]) && rows->rows[i].expressible && !out[i].ok;
    return failed;
}

/* ---------- summaries ---------- */
typedef struct agg {
    const char *key;
    uint32_t n;
    double sum_abs, sum_signed, worst;
    const char *worst_row;
} agg;

/* groups of rows by set (kind 0), GPU (1), or all (2), per evaluation */
static uint32_t groups(const etk_calib_rows *rows, const bool *use, const etk_calib_eval *ev,
                       int kind, agg *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < rows->n; i++) {
        if ((use && !use[i]) || !rows->rows[i].expressible)
            continue;
        const etk_calib_row *r = &rows->rows[i];
        const char *key = kind == 0 ? r->set : kind == 1 ? r->gpu : "all";
        uint32_t g = 0;
        while (g < n && strcmp(out[g].key, key))
            g++;
        if (g == n) {
            if (n == cap)
                continue;
            memset(&out[n], 0, sizeof out[n]);
            out[n++].key = key;
        }
        if (!ev[i].ok)
            continue;
        double e = ev[i].pred.err_pct;
        out[g].n++;
        out[g].sum_abs += fabs(e);
        out[g].sum_signed += e;
        if (!out[g].worst_row || fabs(e) > out[g].worst) {
            out[g].worst = fabs(e);
            out[g].worst_row = r->name;
        }
    }
    return n;
}

static void mem_text(const etk_calib_pred *p, char *buf, size_t size)
{
    const double GiB = 1024.0 * 1024.0 * 1024.0;
    if (!p->mem_capacity_bytes || !p->mem_peak_bytes)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%s %.1f/%.1f GiB", p->oom ? "OOM" : "fits",
                 p->mem_peak_bytes / GiB, p->mem_capacity_bytes / GiB);
}

/* the last evaluation that predicted row i (-1: none did) */
static int last_ok(const etk_calib_eval *const *evals, uint32_t n_eval, uint32_t i)
{
    for (int k = (int)n_eval - 1; k >= 0; k--)
        if (evals[k][i].ok)
            return k;
    return -1;
}

void etk_calib_print_text(const etk_calib_rows *rows, const bool *use, uint32_t n_eval,
                          const char *const *labels, const etk_calib_eval *const *evals, FILE *f)
{
    uint32_t shown = 0, pred = 0, notex = 0, failed = 0;
    for (uint32_t i = 0; i < rows->n; i++) {
        if (use && !use[i])
            continue;
        shown++;
        if (!rows->rows[i].expressible)
            notex++;
        else if (last_ok(evals, n_eval, i) >= 0)
            pred++;
        else
            failed++;
    }
    fprintf(f, "calibration rows %s: %u rows, %u predicted, %u not expressible, %u failed\n",
            rows->path, shown, pred, notex, failed);
    fprintf(f, "%-42s %-26s %-5s %-24s %11s", "row", "set", "GPU", "metric", "measured");
    for (uint32_t k = 0; k < n_eval; k++)
        fprintf(f, " %11.11s %8s", labels[k], "err%");
    fprintf(f, "  memory\n");
    for (uint32_t i = 0; i < rows->n; i++) {
        const etk_calib_row *r = &rows->rows[i];
        int lk = last_ok(evals, n_eval, i);
        if ((use && !use[i]) || !r->expressible || lk < 0)
            continue;
        fprintf(f, "%-42s %-26s %-5s %-24s %11.2f", r->name, r->set, r->gpu,
                etk_calib_metric_name(r->metric), r->measured);
        for (uint32_t k = 0; k < n_eval; k++) {
            const etk_calib_eval *e = &evals[k][i];
            if (e->ok)
                fprintf(f, " %11.2f %+8.2f", e->pred.value, e->pred.err_pct);
            else
                fprintf(f, " %11s %8s", "-", "-");
        }
        char mem[64];
        mem_text(&evals[lk][i].pred, mem, sizeof mem);
        fprintf(f, "  %s\n", mem);
    }
    for (uint32_t i = 0; i < rows->n; i++)
        if ((!use || use[i]) && rows->rows[i].by_extra)
            fprintf(f, "%s: marked not expressible in the rows file, expressed by the plan-extra file\n",
                    rows->rows[i].name);
    bool header = false;
    for (uint32_t i = 0; i < rows->n; i++) {
        const etk_calib_row *r = &rows->rows[i];
        if (use && !use[i])
            continue;
        for (uint32_t k = 0; k < n_eval; k++) {
            const etk_calib_eval *e = &evals[k][i];
            if (r->expressible && e->ok)
                continue;
            if (r->expressible && k > 0 && !strcmp(e->error, evals[k - 1][i].error))
                continue; /* the same reason as the previous column */
            if (!header)
                fprintf(f, "not predicted:\n");
            header = true;
            if (!r->expressible) {
                fprintf(f, "  %s (%s, %s): not expressible: %s\n", r->name, r->set, r->gpu,
                        r->reason);
                break;
            }
            fprintf(f, "  %s (%s, %s)%s%s: %s\n", r->name, r->set, r->gpu, n_eval > 1 ? ", " : "",
                    n_eval > 1 ? labels[k] : "", e->error);
        }
    }
    static const char *const kinds[] = {"set", "GPU", "all rows"};
    for (int kind = 0; kind < 3; kind++) {
        fprintf(f, "|error| by %-27s %5s", kinds[kind], "rows");
        for (uint32_t k = 0; k < n_eval; k++)
            fprintf(f, " %9.9s %7s", labels[k], "worst");
        fprintf(f, "  worst row (last column)\n");
        agg g[64][8];
        uint32_t ng = 0;
        for (uint32_t k = 0; k < n_eval && k < 8; k++) {
            agg tmp[64];
            uint32_t n = groups(rows, use, evals[k], kind, tmp, 64);
            ng = n;
            for (uint32_t j = 0; j < n; j++)
                g[j][k] = tmp[j];
        }
        for (uint32_t j = 0; j < ng; j++) {
            uint32_t nmax = 0, kw = 0;
            for (uint32_t k = 0; k < n_eval && k < 8; k++) {
                nmax = g[j][k].n > nmax ? g[j][k].n : nmax;
                if (g[j][k].n)
                    kw = k;
            }
            fprintf(f, "  %-35s %5u", g[j][0].key, nmax);
            for (uint32_t k = 0; k < n_eval && k < 8; k++) {
                if (g[j][k].n)
                    fprintf(f, " %8.2f%% %6.2f%%", g[j][k].sum_abs / g[j][k].n, g[j][k].worst);
                else
                    fprintf(f, " %9s %7s", "-", "-");
            }
            fprintf(f, "  %s\n", g[j][kw].worst_row ? g[j][kw].worst_row : "-");
        }
    }
}

static json_t *summary_json(const etk_calib_rows *rows, const bool *use, const etk_calib_eval *ev,
                            int kind)
{
    agg g[64];
    uint32_t n = groups(rows, use, ev, kind, g, 64);
    json_t *a = json_array();
    for (uint32_t j = 0; j < n; j++) {
        json_t *o = json_object();
        json_object_set_new(o, kind == 0 ? "set" : kind == 1 ? "gpu" : "name", json_string(g[j].key));
        json_object_set_new(o, "rows", json_integer(g[j].n));
        json_object_set_new(o, "mean_abs_err_pct", json_real(g[j].n ? g[j].sum_abs / g[j].n : 0));
        json_object_set_new(o, "mean_signed_err_pct",
                            json_real(g[j].n ? g[j].sum_signed / g[j].n : 0));
        json_object_set_new(o, "worst_abs_err_pct", json_real(g[j].worst));
        json_object_set_new(o, "worst_row", g[j].worst_row ? json_string(g[j].worst_row) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

int etk_calib_print_json(const etk_calib_rows *rows, const bool *use, uint32_t n_eval,
                         const char *const *labels, const etk_calib_eval *const *evals,
                         const etk_calib_params *params, FILE *f)
{
    json_t *root = json_object();
    json_object_set_new(root, "file", json_string(rows->path));
    if (params) {
        json_t *p = json_object();
        for (uint32_t i = 0; i < params->n; i++)
            json_object_set_new(p, params->name[i], json_real(params->value[i]));
        json_object_set_new(root, "params", p);
    }
    json_t *ra = json_array();
    for (uint32_t i = 0; i < rows->n; i++) {
        const etk_calib_row *r = &rows->rows[i];
        if (use && !use[i])
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(r->name));
        json_object_set_new(o, "set", json_string(r->set));
        json_object_set_new(o, "gpu", json_string(r->gpu));
        int lk = last_ok(evals, n_eval, i);
        const etk_calib_eval *last = &evals[lk >= 0 ? lk : (int)n_eval - 1][i];
        const char *status = !r->expressible ? "not_expressible" : last->ok ? "ok" : "failed";
        json_object_set_new(o, "status", json_string(status));
        if (r->by_extra)
            json_object_set_new(o, "expressed_by", json_string("plan-extra"));
        if (!r->expressible || !last->ok)
            json_object_set_new(o, "reason", json_string(r->expressible ? last->error : r->reason));
        if (r->expressible && r->built) {
            json_object_set_new(o, "metric", json_string(etk_calib_metric_name(r->metric)));
            json_object_set_new(o, "measured", json_real(r->measured));
        }
        for (uint32_t k = 0; k < n_eval; k++) {
            const etk_calib_eval *e = &evals[k][i];
            if (!e->ok)
                continue;
            json_t *p = json_object();
            json_object_set_new(p, "predicted", json_real(e->pred.value));
            json_object_set_new(p, "err_pct", json_real(e->pred.err_pct));
            json_object_set_new(p, "step_ns", json_integer((json_int_t)e->pred.step_ns));
            if (r->cfg.mode == ETK_GEN_MODE_INFERENCE) {
                json_object_set_new(p, "ttft_ns", json_integer((json_int_t)e->pred.ttft_ns));
                json_object_set_new(p, "tpot_ns", json_real(e->pred.tpot_ns));
            }
            json_object_set_new(p, "mem_peak_bytes", json_integer((json_int_t)e->pred.mem_peak_bytes));
            json_object_set_new(p, "mem_capacity_bytes",
                                json_integer((json_int_t)e->pred.mem_capacity_bytes));
            json_object_set_new(p, "oom", json_boolean(e->pred.oom));
            json_object_set_new(o, labels[k], p);
        }
        json_array_append_new(ra, o);
    }
    json_object_set_new(root, "rows", ra);
    json_t *sum = json_object();
    for (uint32_t k = 0; k < n_eval; k++) {
        json_t *s = json_object();
        json_object_set_new(s, "sets", summary_json(rows, use, evals[k], 0));
        json_object_set_new(s, "gpus", summary_json(rows, use, evals[k], 1));
        json_t *all = summary_json(rows, use, evals[k], 2);
        json_object_set(s, "overall", json_array_size(all) ? json_array_get(all, 0) : json_null());
        json_decref(all);
        json_object_set_new(sum, labels[k], s);
    }
    json_object_set_new(root, "summary", sum);
    int rc = json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref(root);
    return rc ? -1 : 0;
}
