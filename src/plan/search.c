/* search.c — the plan search (etkit/plan.h, docs/plan.md): rows for every job's candidates,
 * phase 1 (assess.c) on all of them, the survivors ordered by (lower-bound score, job, index),
 * phase 2 (simulation) along that order while a candidate can still reach the top k, then the
 * deterministic cut and the ranking. Threads (-j) here; MPI in cli/plan_mpi.c on the same steps.
 *
 * Determinism: the cut is the first position p of the order whose lower-bound score exceeds the
 * k-th best score among the rows simulated before p. It depends only on the order and the
 * simulated scores, not on which worker finished first: a worker stops taking positions when a
 * position's bound exceeds the k-th best of the rows finished so far, which is never below the
 * k-th best of all rows before it, so every row before the cut is simulated; rows past the cut
 * that a worker simulated anyway are reported as pruned by the bound like the others. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_priv.h"

void etk_plan_opts_defaults(etk_plan_opts *o)
{
    memset(o, 0, sizeof *o);
    o->top = 10;
    o->memory_margin = 0.1;
    o->threads = 1;
}

const char *plan_metric_name(int rank_by)
{
    switch (rank_by) {
    case ETK_PLAN_RANK_TOKENS: return "tokens/s";
    case ETK_PLAN_RANK_MFU: return "MFU %";
    case ETK_PLAN_RANK_COST: return "USD per 1M tokens";
    default: return "step ms";
    }
}

double plan_score(const etk_plan_search_state *s, uint32_t job, double step_ns)
{
    return step_ns * s->job_factor[job];
}

double plan_metric(const etk_plan_search_state *s, double score)
{
    switch (s->o.rank_by) {
    case ETK_PLAN_RANK_TOKENS:
    case ETK_PLAN_RANK_MFU: return score > 0 ? 1.0 / score : INFINITY;
    default: return score;
    }
}

/* the factor per job: step (ms) | seconds per token (1 / tokens/s) | 1 / MFU (fraction) |
 * USD per 1M tokens; all proportional to the step time of the job's plans */
static int job_factors(etk_plan_search_state *s, etk_error *err)
{
    const etk_gen_config *b = &s->sp.base;
    double tokens = b->mode == ETK_GEN_MODE_INFERENCE
                        ? (double)s->sp.global_batch * ((double)(b->decode_steps ? b->decode_steps : 128) + 1)
                        : (double)s->sp.global_batch * (double)(b->dims_override[6] ? b->dims_override[6] : b->model.seq);
    for (uint32_t j = 0; j < s->n_jobs; j++) {
        const etk_plan_job *job = &s->jobs[j];
        double n = job->cluster.n_npus, f;
        switch (s->o.rank_by) {
        case ETK_PLAN_RANK_TOKENS:
            f = 1e-9 / tokens;
            break;
        case ETK_PLAN_RANK_MFU: {
            /* MFU = model FLOPs / (n peak step): the model FLOPs of the first valid row */
            double mf = 0;
            for (size_t i = 0; i < s->n_rows && mf <= 0; i++)
                if (s->rows[i].job == j) {
                    etk_gen_config cfg;
                    etk_error e2 = {0};
                    if (!etk_plan_config(&s->sp, &s->rows[i].plan, NULL, &cfg, &e2))
                        mf = cfg.model_flops_per_step;
                }
            double peak = job->cluster.gpu.peak_flops[ETK_PREC_BF16];
            if (!strcmp(b->precision, "fp8") && job->cluster.gpu.peak_flops[ETK_PREC_FP8] > 0)
                peak = job->cluster.gpu.peak_flops[ETK_PREC_FP8];
            f = mf > 0 && peak > 0 ? n * peak * 1e-9 / mf : 1;
            break;
        }
        case ETK_PLAN_RANK_COST:
            if (!(job->gpu_hour_usd > 0))
                return etk_err(err, ETK_EINVAL, "--rank-by cost: no --gpu-hour-cost for %s", job->label);
            f = job->gpu_hour_usd * n / 3600.0 * 1e-9 / tokens * 1e6;
            break;
        default:
            f = 1e-6; /* ms */
        }
        s->job_factor[j] = f;
    }
    return 0;
}

int etk_plan_begin(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                   etk_plan_search_state **out, etk_error *err)
{
    *out = NULL;
    etk_plan_search_state *s = calloc(1, sizeof *s);
    if (!s)
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    s->sp = *sp;
    s->o = *o;
    if (!s->o.top)
        s->o.top = 10;
    s->n_jobs = n_jobs;
    s->jobs = malloc((n_jobs ? n_jobs : 1) * sizeof *s->jobs);
    s->job_factor = calloc(n_jobs ? n_jobs : 1, sizeof *s->job_factor);
    if (!s->jobs || !s->job_factor) {
        etk_plan_state_free(s);
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    }
    memcpy(s->jobs, jobs, n_jobs * sizeof *jobs);
    for (uint32_t j = 0; j < n_jobs; j++) {
        etk_plan *v = NULL;
        size_t n = 0;
        int rc = etk_plan_enumerate(sp, jobs[j].cluster.n_npus, jobs[j].gpus_per_node, &v, &n, err);
        if (rc) {
            etk_plan_state_free(s);
            return rc;
        }
        etk_plan_row *rows = n ? realloc(s->rows, (s->n_rows + n) * sizeof *rows) : s->rows;
        if (n && !rows) {
            size_t want = s->n_rows + n;
            free(v);
            etk_plan_state_free(s);
            return etk_err(err, ETK_ENOMEM, "plan search: out of memory (%zu plans)", want);
        }
        s->rows = rows;
        for (size_t i = 0; i < n; i++) {
            etk_plan_row *r = &s->rows[s->n_rows + i];
            memset(r, 0, sizeof *r);
            r->job = j;
            r->index = (uint32_t)i;
            r->plan = v[i];
            r->status = -1;
        }
        s->n_rows += n;
        free(v);
    }
    int rc = job_factors(s, err);
    if (rc) {
        etk_plan_state_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

size_t etk_plan_n_rows(const etk_plan_search_state *s) { return s->n_rows; }
etk_plan_row *etk_plan_rows(etk_plan_search_state *s) { return s->rows; }
const uint32_t *etk_plan_order(const etk_plan_search_state *s) { return s->order; }

static const etk_plan_row *sort_rows;
static int by_bound(const void *a, const void *b)
{
    const etk_plan_row *x = &sort_rows[*(const uint32_t *)a], *y = &sort_rows[*(const uint32_t *)b];
    if (x->lb_score != y->lb_score)
        return x->lb_score < y->lb_score ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : *(const uint32_t *)a > *(const uint32_t *)b;
}

static int by_score(const void *a, const void *b)
{
    const etk_plan_row *x = &sort_rows[*(const uint32_t *)a], *y = &sort_rows[*(const uint32_t *)b];
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : *(const uint32_t *)a > *(const uint32_t *)b;
}

/* qsort with a comparator over s->rows (sort_rows is set under a lock: one sort at a time) */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;
static void sort_idx(const etk_plan_row *rows, uint32_t *idx, size_t n, int (*cmp)(const void *, const void *))
{
    pthread_mutex_lock(&sort_lock);
    sort_rows = rows;
    qsort(idx, n, sizeof *idx, cmp);
    pthread_mutex_unlock(&sort_lock);
}

/* Recompute of a row as an order: none 0, full recompute of N layers per stage N, of every layer
 * UINT32_MAX; -1 (not comparable) for selective. */
static int64_t recompute_amount(const etk_plan *p)
{
    if (p->recompute == ETK_RECOMPUTE_NONE)
        return 0;
    if (p->recompute == ETK_RECOMPUTE_FULL)
        return p->recompute_stage_layers ? p->recompute_stage_layers : UINT32_MAX;
    return -1;
}

/* the same plan but for the recompute */
static bool same_but_recompute(const etk_plan *a, const etk_plan *b)
{
    return a->tp == b->tp && a->cp == b->cp && a->pp == b->pp && a->vpp == b->vpp && a->dp == b->dp &&
           a->ep == b->ep && a->first_layers == b->first_layers && a->last_layers == b->last_layers &&
           a->micro_batch == b->micro_batch && a->infer_mb == b->infer_mb && a->zero == b->zero &&
           a->schedule == b->schedule && a->sp == b->sp;
}

/* Dominance (docs/plan.md "Pruning"): a plan with full recompute (of N layers per stage, or of
 * every layer) whose twin with less recompute (none, or fewer layers) fits in memory only adds
 * work to it; of the recompute variants that fit, the least is kept. Not with ZeRO-3, whose
 * per-layer parameter gathers the recomputed forward can hide better (measured: up to 2.6%
 * faster with recompute, docs/plan.md), so there it is left to the simulation. The variants of a plan lie
 * within a few rows of one another in the enumeration (the recompute and schedule loops are the
 * innermost), so the scan looks DOM_WINDOW rows each way. Decided on phase 1's results alone:
 * the same whatever the workers. */
#define DOM_WINDOW 48
static void mark_dominated(etk_plan_search_state *s)
{
    for (size_t i = 0; i < s->n_rows; i++) {
        etk_plan_row *r = &s->rows[i];
        int64_t amt = recompute_amount(&r->plan);
        if (r->status >= 0 || amt <= 0 || r->plan.zero >= 3)
            continue;
        const etk_plan_row *best = NULL;
        size_t lo = i > DOM_WINDOW ? i - DOM_WINDOW : 0, hi = i + DOM_WINDOW < s->n_rows ? i + DOM_WINDOW : s->n_rows;
        for (size_t j = lo; j < hi; j++) {
            const etk_plan_row *o = &s->rows[j];
            int64_t a = recompute_amount(&o->plan);
            /* o fits: pending after phase 1 (its status may not be ETK_PLAN_DOMINATED yet: rows
             * are marked in this pass, but a dominated row's own dominator has less still) */
            if (j == i || o->job != r->job || a < 0 || a >= amt || !(o->status < 0 || o->status == ETK_PLAN_DOMINATED) ||
                !same_but_recompute(&o->plan, &r->plan))
                continue;
            if (!best || a < recompute_amount(&best->plan))
                best = o;
        }
        if (best) {
            char what[64];
            if (best->plan.recompute == ETK_RECOMPUTE_NONE)
                snprintf(what, sizeof what, "--recompute none");
            else
                snprintf(what, sizeof what, "--recompute full --recompute-stage-layers %u",
                         best->plan.recompute_stage_layers);
            r->status = ETK_PLAN_DOMINATED;
            snprintf(r->reason, sizeof r->reason, "the same plan with %s fits in memory (%.2f GiB per GPU): less "
                     "recompute, less work", what, (double)best->mem_bytes / (1024.0 * 1024.0 * 1024.0));
        }
    }
}

size_t etk_plan_sort(etk_plan_search_state *s)
{
    mark_dominated(s);
    free(s->order);
    s->order = malloc((s->n_rows ? s->n_rows : 1) * sizeof *s->order);
    s->n_order = 0;
    if (!s->order)
        return 0;
    for (size_t i = 0; i < s->n_rows; i++)
        if (s->rows[i].status < 0)
            s->order[s->n_order++] = (uint32_t)i;
    sort_idx(s->rows, s->order, s->n_order, by_bound);
    return s->n_order;
}

bool etk_plan_worth(const etk_plan_search_state *s, size_t pos, double kth_best)
{
    return pos < s->n_order && !(s->rows[s->order[pos]].lb_score > kth_best);
}

/* ---- top k ---- */
int etk_plan_topk_init(etk_plan_topk *t, uint32_t k)
{
    t->k = k ? k : 1;
    t->n = 0;
    t->v = malloc(t->k * sizeof *t->v);
    return t->v ? 0 : -1;
}

void etk_plan_topk_add(etk_plan_topk *t, double score)
{
    if (t->n == t->k && !(score < t->v[t->n - 1]))
        return;
    uint32_t i = t->n < t->k ? t->n++ : t->n - 1;
    while (i > 0 && t->v[i - 1] > score) {
        t->v[i] = t->v[i - 1];
        i--;
    }
    t->v[i] = score;
}

double etk_plan_topk_kth(const etk_plan_topk *t)
{
    return t->n < t->k ? INFINITY : t->v[t->k - 1];
}

void etk_plan_topk_free(etk_plan_topk *t)
{
    free(t->v);
    t->v = NULL;
}

int etk_plan_finish(etk_plan_search_state *s, etk_plan_result *res, etk_error *err)
{
    memset(res, 0, sizeof *res);
    etk_plan_topk tk;
    if (etk_plan_topk_init(&tk, s->o.top))
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    size_t cut = s->n_order;
    for (size_t p = 0; p < s->n_order; p++) {
        etk_plan_row *r = &s->rows[s->order[p]];
        double kth = etk_plan_topk_kth(&tk);
        if (r->lb_score > kth) {
            cut = p;
            break;
        }
        if (r->status < 0) {
            etk_plan_topk_free(&tk);
            return etk_err(err, ETK_EINVAL, "plan search: internal error: row %zu before the cut was not simulated",
                           (size_t)s->order[p]);
        }
        if (r->status == ETK_PLAN_SIMULATED)
            etk_plan_topk_add(&tk, r->score);
    }
    double kth = etk_plan_topk_kth(&tk);
    for (size_t p = cut; p < s->n_order; p++) {
        etk_plan_row *r = &s->rows[s->order[p]];
        r->status = ETK_PLAN_BOUND;
        r->step_ns = 0;
        r->mfu = r->tokens_per_s = r->usd_per_mtok = r->score = 0;
        snprintf(r->reason, sizeof r->reason,
                 "lower bound %.3f ms per step (%s %.4g) cannot reach the top %u (cut-off %.4g)",
                 r->lb_ns / 1e6, plan_metric_name(s->o.rank_by), plan_metric(s, r->lb_score), s->o.top,
                 plan_metric(s, kth));
    }
    etk_plan_topk_free(&tk);
    res->ranked = malloc((s->n_rows ? s->n_rows : 1) * sizeof *res->ranked);
    if (!res->ranked)
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    for (size_t i = 0; i < s->n_rows; i++) {
        etk_plan_row *r = &s->rows[i];
        r->rank = 0;
        switch (r->status) {
        case ETK_PLAN_SIMULATED: res->ranked[res->n_simulated++] = (uint32_t)i; break;
        case ETK_PLAN_INVALID: res->n_invalid++; break;
        case ETK_PLAN_MEMORY: res->n_memory++; break;
        case ETK_PLAN_BOUND: res->n_bound++; break;
        case ETK_PLAN_DOMINATED: res->n_dominated++; break;
        default: res->n_failed++; break;
        }
    }
    sort_idx(s->rows, res->ranked, res->n_simulated, by_score);
    for (size_t i = 0; i < res->n_simulated; i++)
        s->rows[res->ranked[i]].rank = (uint32_t)i + 1;
    res->rows = s->rows;
    res->n_rows = s->n_rows;
    s->rows = NULL;
    s->n_rows = 0;
    return 0;
}

void etk_plan_state_free(etk_plan_search_state *s)
{
    if (!s)
        return;
    free(s->rows);
    free(s->order);
    free(s->jobs);
    free(s->job_factor);
    free(s);
}

void etk_plan_result_free(etk_plan_result *r)
{
    free(r->rows);
    free(r->ranked);
    memset(r, 0, sizeof *r);
}

/* ---- threads ---- */
typedef struct {
    etk_plan_search_state *s;
    pthread_mutex_t mu;
    size_t next, done, total;
    bool stop;
    int phase;
    etk_plan_topk tk;
    const etk_plan_row *best;
} pool;

static void progress(pool *p)
{
    if (p->s->o.progress)
        p->s->o.progress(p->s->o.progress_ctx, p->done, p->total, p->best);
}

static void *worker(void *arg)
{
    pool *p = arg;
    etk_plan_search_state *s = p->s;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next;
        bool go = !p->stop && (p->phase == 1 ? i < s->n_rows : etk_plan_worth(s, i, etk_plan_topk_kth(&p->tk)));
        if (go)
            p->next++;
        else
            p->stop = true;
        pthread_mutex_unlock(&p->mu);
        if (!go)
            return NULL;
        etk_plan_row *r = p->phase == 1 ? &s->rows[i] : &s->rows[s->order[i]];
        if (p->phase == 1)
            etk_plan_assess(s, r);
        else
            etk_plan_simulate(s, r);
        pthread_mutex_lock(&p->mu);
        p->done++;
        if (p->phase == 2 && r->status == ETK_PLAN_SIMULATED) {
            etk_plan_topk_add(&p->tk, r->score);
            if (!p->best || r->score < p->best->score)
                p->best = r;
        }
        progress(p);
        pthread_mutex_unlock(&p->mu);
    }
}

static int run_pool(pool *p, uint32_t threads)
{
    pthread_t th[64];
    uint32_t n = threads < 1 ? 1 : threads > 64 ? 64 : threads, started = 0;
    for (uint32_t i = 1; i < n; i++) {
        if (pthread_create(&th[started], NULL, worker, p) != 0)
            break;
        started++;
    }
    worker(p);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return 0;
}

int etk_plan_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err)
{
    etk_plan_search_state *s;
    memset(res, 0, sizeof *res);
    int rc = etk_plan_begin(sp, jobs, n_jobs, o, &s, err);
    if (rc)
        return rc;
    pool p;
    memset(&p, 0, sizeof p);
    p.s = s;
    pthread_mutex_init(&p.mu, NULL);
    if (etk_plan_topk_init(&p.tk, s->o.top)) {
        etk_plan_state_free(s);
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    }
    p.phase = 1;
    p.total = s->n_rows;
    run_pool(&p, s->o.threads);
    size_t n = etk_plan_sort(s);
    if (s->n_rows && !s->order) {
        rc = etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    } else {
        p.phase = 2;
        p.next = 0;
        p.stop = false;
        p.done = s->n_rows - n;
        run_pool(&p, s->o.threads);
        rc = etk_plan_finish(s, res, err);
    }
    etk_plan_topk_free(&p.tk);
    pthread_mutex_destroy(&p.mu);
    etk_plan_state_free(s);
    return rc;
}
