/* report.c — the plan search's reports (docs/plan.md "Output"): the ranked table (top k with the
 * flags to paste into `etkit run`, and per cluster the best plan's tokens per hour and per
 * dollar), and every candidate as CSV or JSON, simulated or pruned with its reason. Rows are
 * printed in (job, index) order and numbers in fixed formats, so the files are byte-identical
 * whatever the threads or processes. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_priv.h"

#define GIB (1024.0 * 1024.0 * 1024.0)


static const char *metric_name(int rank_by)
{
    static const char *const n[] = {"step", "tokens", "mfu", "cost"};
    return n[rank_by < 0 || rank_by > 3 ? 0 : rank_by];
}

void etk_plan_print_table(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs,
                          const etk_plan_opts *o, const etk_plan_result *r, FILE *f)
{
    bool inf = sp->base.mode == ETK_GEN_MODE_INFERENCE, cost = false;
    for (uint32_t j = 0; j < n_jobs; j++)
        cost |= jobs[j].gpu_hour_usd > 0;
    char dom[64] = "";
    if (r->n_dominated)
        snprintf(dom, sizeof dom, ", %zu dominated (less recompute fits)", r->n_dominated);
    fprintf(f, "plans: %zu candidates: %zu invalid, %zu over memory%s, %zu pruned by the lower bound, %zu simulated%s",
            r->n_rows, r->n_invalid, r->n_memory, dom, r->n_bound, r->n_simulated, r->n_failed ? "" : "\n");
    if (r->n_failed)
        fprintf(f, ", %zu failed\n", r->n_failed);
    fprintf(f, "ranked by %s; top %u\n\n", metric_name(o->rank_by), o->top);
    if (!r->n_simulated) {
        fprintf(f, "no plan was simulated\n");
        return;
    }
    fprintf(f, "%4s  %-24s %12s %12s %6s %9s %9s  %s\n", "rank", "cluster", inf ? "batch ms" : "step ms",
            "tokens/s", "MFU%", cost ? "USD/Mtok" : "", "mem GiB", "etkit run flags");
    for (size_t k = 0; k < r->n_simulated && k < o->top; k++) {
        const etk_plan_row *w = &r->rows[r->ranked[k]];
        char flags[320], usd[24] = "";
        etk_plan_flags(sp, &w->plan, flags, sizeof flags);
        if (w->usd_per_mtok > 0)
            snprintf(usd, sizeof usd, "%.4f", w->usd_per_mtok);
        fprintf(f, "%4u  %-24s %12.3f %12.0f %6.1f %9s %9.2f  %s\n", w->rank, jobs[w->job].label, w->step_ns / 1e6,
                w->tokens_per_s, w->mfu * 100, usd, w->mem_bytes / GIB, flags);
    }
    if (n_jobs < 2)
        return;
    fprintf(f, "\nper cluster, its best plan:\n%-24s %12s %16s %16s  %s\n", "cluster", "tokens/s", "tokens/hour",
            cost ? "tokens/USD" : "", "best rank");
    /* tokens per step: the same for every plan of the search (one model, one global batch) */
    const etk_plan_row *r1 = &r->rows[r->ranked[0]];
    double tok_step = r1->tokens_per_s * (double)r1->step_ns / 1e9;
    for (uint32_t j = 0; j < n_jobs; j++) {
        const etk_plan_row *b = NULL, *lb = NULL;
        for (size_t k = 0; k < r->n_simulated && !b; k++)
            if (r->rows[r->ranked[k]].job == j)
                b = &r->rows[r->ranked[k]];
        for (size_t i = 0; i < r->n_rows && !b; i++)
            if (r->rows[i].job == j && r->rows[i].status == ETK_PLAN_BOUND && r->rows[i].lb_ns &&
                (!lb || r->rows[i].lb_ns < lb->lb_ns))
                lb = &r->rows[i];
        if (!b && lb) {
            /* none of the cluster's plans that fit can reach the top k: its best lower bound caps
             * what the cluster can do (--top larger, or the cluster alone, simulates its best) */
            double tps = tok_step / ((double)lb->lb_ns / 1e9);
            char a[32], h[32], u[32] = "";
            snprintf(a, sizeof a, "<= %.0f", tps);
            snprintf(h, sizeof h, "<= %.4g", tps * 3600.0);
            if (jobs[j].gpu_hour_usd > 0)
                snprintf(u, sizeof u, "<= %.0f", tps * 3600.0 / (jobs[j].gpu_hour_usd * jobs[j].cluster.n_npus));
            fprintf(f, "%-24s %12s %16s %16s  none in the top %u (lower bound)\n", jobs[j].label, a, h, u, o->top);
            continue;
        }
        if (!b) {
            fprintf(f, "%-24s %12s %16s %16s  no plan fits\n", jobs[j].label, "-", "-", "");
            continue;
        }
        char tpd[32] = "";
        if (jobs[j].gpu_hour_usd > 0)
            snprintf(tpd, sizeof tpd, "%.0f", b->tokens_per_s * 3600.0 / (jobs[j].gpu_hour_usd * jobs[j].cluster.n_npus));
        fprintf(f, "%-24s %12.0f %16.4g %16s  %u\n", jobs[j].label, b->tokens_per_s, b->tokens_per_s * 3600.0, tpd,
                b->rank);
    }
}

static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void etk_plan_print_csv(const etk_plan_space *sp, const etk_plan_job *jobs, const etk_plan_result *r, FILE *f)
{
    fputs("cluster,gpus,index,status,rank,tp,cp,pp,vpp,first_stage_layers,last_stage_layers,dp,ep,micro_batch,micro_batches_infer,zero,recompute,"
          "recompute_stage_layers,schedule,sp,mem_bytes,lower_bound_ns,step_ns,mfu,tokens_per_s,usd_per_mtok,flags,reason\n", f);
    for (size_t i = 0; i < r->n_rows; i++) {
        const etk_plan_row *w = &r->rows[i];
        const etk_plan *p = &w->plan;
        csv_str(f, jobs[w->job].label);
        fprintf(f, ",%u,%u,%s,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%d,%s,%u,%s,%s,%llu,%llu,%llu,%.6f,%.1f,%.6f,",
                jobs[w->job].cluster.n_npus, w->index, etk_plan_status_name(w->status), w->rank, p->tp, p->cp, p->pp,
                p->vpp, p->first_layers, p->last_layers, p->dp, p->ep, p->micro_batch, p->infer_mb, p->zero, plan_recompute_name(p->recompute), p->recompute_stage_layers, plan_sched_name(p->schedule),
                p->sp ? "true" : "false", (unsigned long long)w->mem_bytes, (unsigned long long)w->lb_ns,
                (unsigned long long)w->step_ns, w->mfu, w->tokens_per_s, w->usd_per_mtok);
        char flags[320];
        etk_plan_flags(sp, p, flags, sizeof flags);
        csv_str(f, flags);
        fputc(',', f);
        csv_str(f, w->reason);
        fputc('\n', f);
    }
}

int etk_plan_print_json(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                        const etk_plan_result *r, FILE *f)
{
    json_t *root = json_object(), *jj = json_array(), *rows = json_array();
    if (!root || !jj || !rows) {
        json_decref(root);
        json_decref(jj);
        json_decref(rows);
        return -1;
    }
    json_object_set_new(root, "model", json_string(sp->base.model.name));
    json_object_set_new(root, "mode", json_string(sp->base.mode == ETK_GEN_MODE_INFERENCE ? "inference" : "training"));
    json_object_set_new(root, "global_batch", json_integer(sp->global_batch));
    json_object_set_new(root, "rank_by", json_string(metric_name(o->rank_by)));
    json_object_set_new(root, "top", json_integer(o->top));
    json_object_set_new(root, "memory_margin", json_real(o->memory_margin));
    for (uint32_t j = 0; j < n_jobs; j++) {
        json_t *x = json_object();
        json_object_set_new(x, "cluster", json_string(jobs[j].label));
        json_object_set_new(x, "gpus", json_integer(jobs[j].cluster.n_npus));
        json_object_set_new(x, "gpu_hour_usd", json_real(jobs[j].gpu_hour_usd));
        json_array_append_new(jj, x);
    }
    json_object_set_new(root, "clusters", jj);
    json_t *counts = json_object();
    json_object_set_new(counts, "candidates", json_integer((json_int_t)r->n_rows));
    json_object_set_new(counts, "invalid", json_integer((json_int_t)r->n_invalid));
    json_object_set_new(counts, "memory", json_integer((json_int_t)r->n_memory));
    json_object_set_new(counts, "dominated", json_integer((json_int_t)r->n_dominated));
    json_object_set_new(counts, "bound", json_integer((json_int_t)r->n_bound));
    json_object_set_new(counts, "simulated", json_integer((json_int_t)r->n_simulated));
    json_object_set_new(counts, "failed", json_integer((json_int_t)r->n_failed));
    json_object_set_new(root, "counts", counts);
    for (size_t i = 0; i < r->n_rows; i++) {
        const etk_plan_row *w = &r->rows[i];
        const etk_plan *p = &w->plan;
        char flags[320];
        etk_plan_flags(sp, p, flags, sizeof flags);
        json_t *x = json_object();
        json_object_set_new(x, "cluster", json_string(jobs[w->job].label));
        json_object_set_new(x, "index", json_integer(w->index));
        json_object_set_new(x, "status", json_string(etk_plan_status_name(w->status)));
        json_object_set_new(x, "rank", json_integer(w->rank));
        json_object_set_new(x, "tp", json_integer(p->tp));
        json_object_set_new(x, "cp", json_integer(p->cp));
        json_object_set_new(x, "pp", json_integer(p->pp));
        json_object_set_new(x, "vpp", json_integer(p->vpp));
        json_object_set_new(x, "first_stage_layers", json_integer(p->first_layers));
        json_object_set_new(x, "last_stage_layers", json_integer(p->last_layers));
        json_object_set_new(x, "dp", json_integer(p->dp));
        json_object_set_new(x, "ep", json_integer(p->ep));
        json_object_set_new(x, "micro_batch", json_integer(p->micro_batch));
        json_object_set_new(x, "micro_batches_infer", json_integer(p->infer_mb));
        json_object_set_new(x, "zero", json_integer(p->zero));
        json_object_set_new(x, "recompute", json_string(plan_recompute_name(p->recompute)));
        json_object_set_new(x, "recompute_stage_layers", json_integer(p->recompute_stage_layers));
        json_object_set_new(x, "schedule", json_string(plan_sched_name(p->schedule)));
        json_object_set_new(x, "sp", json_boolean(p->sp));
        json_object_set_new(x, "flags", json_string(flags));
        json_object_set_new(x, "mem_bytes", json_integer((json_int_t)w->mem_bytes));
        json_object_set_new(x, "lower_bound_ns", json_integer((json_int_t)w->lb_ns));
        if (w->status == ETK_PLAN_SIMULATED) {
            json_object_set_new(x, "step_ns", json_integer((json_int_t)w->step_ns));
            json_object_set_new(x, "mfu", json_real(w->mfu));
            json_object_set_new(x, "tokens_per_s", json_real(w->tokens_per_s));
            if (w->usd_per_mtok > 0)
                json_object_set_new(x, "usd_per_mtok", json_real(w->usd_per_mtok));
        } else {
            json_object_set_new(x, "reason", json_string(w->reason));
        }
        json_array_append_new(rows, x);
    }
    json_object_set_new(root, "plans", rows);
    int rc = json_dumpf(root, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref(root);
    return rc ? -1 : 0;
}
