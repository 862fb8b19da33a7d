/* kineto_only.c — a Kineto trace without a host execution trace (what torch.profiler users
 * have): the host op table is made from the trace's own cpu_op and user_annotation events, so
 * the rest of the converter (GPU nodes by correlation, stream order, stream waits, sync
 * dependencies, NCCL collectives, exclusive durations, threads) runs unchanged.
 *
 * One iteration: the last "ProfilerStep#N" annotation of the trace (the first ones often carry
 * warm-up and initialisation); without one, the whole trace. The ProfilerStep op itself is kept
 * (as the top-level op of its thread), so its exclusive time is the CPU time between the ops
 * (the Python interpreter), which a host trace does not record. Ops get ids in start order;
 * an op's parent is the innermost event of the same thread that encloses it. */
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

typedef struct kix {
    int64_t tid, ts, dur;
    uint32_t ev;
} kix;

static int kix_cmp(const void *a, const void *b)
{
    const kix *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1; /* the outer op first */
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static bool is_step(const char *name)
{
    return !strncmp(name, "ProfilerStep#", 13);
}

int cv_host_from_kineto(conv *c, etk_error *err)
{
    cv_host *h = &c->h;
    cv_dev *d = &c->d;
    const cv_ev *step = NULL;
    size_t n_steps = 0;
    for (size_t i = 0; i < d->n_ev; i++) {
        const cv_ev *e = &d->ev[i];
        if ((e->cat == EV_ANNOT || e->cat == EV_CPU_OP) && is_step(e->name)) {
            n_steps++;
            /* the last step that holds ops (the profiler may close with an empty one) */
            bool ops = false;
            for (size_t j = 0; j < d->n_ev && !ops; j++) {
                const cv_ev *x = &d->ev[j];
                ops = x->cat == EV_CPU_OP && x->ts_ns >= e->ts_ns &&
                      x->ts_ns + x->dur_ns <= e->ts_ns + e->dur_ns;
            }
            if (ops && (!step || e->ts_ns > step->ts_ns))
                step = e;
        }
    }
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (step) {
        lo = step->ts_ns;
        hi = step->ts_ns + step->dur_ns;
        c->st->kineto_step_ns = step->dur_ns;
        snprintf(c->st->kineto_step, sizeof c->st->kineto_step, "%s", step->name);
    }
    c->st->n_kineto_steps = n_steps;
    kix *k = malloc(sizeof *k * (d->n_ev + 1));
    if (!k)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < d->n_ev; i++) {
        const cv_ev *e = &d->ev[i];
        if (e->cat != EV_CPU_OP && e->cat != EV_ANNOT)
            continue;
        if (e->ts_ns < lo || e->ts_ns + e->dur_ns > hi)
            continue;
        if (is_step(e->name) && e != step)
            continue;
        k[n++] = (kix){e->tid, e->ts_ns, e->dur_ns, (uint32_t)i};
    }
    if (n == 0) {
        free(k);
        return etk_err(err, ETK_EFORMAT, "%s: no cpu_op or user_annotation events%s: a Kineto "
                       "trace alone needs the CPU side (torch.profiler with ProfilerActivity.CPU)",
                       c->o->device_path, step ? " inside the last ProfilerStep" : "");
    }
    qsort(k, n, sizeof *k, kix_cmp);
    h->ops = calloc(n, sizeof *h->ops);
    if (!h->ops) {
        free(k);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    h->cap_ops = n;
    /* per-thread stacks of open events (index into h->ops) */
    enum { MAX_T = 64, DEPTH = 256 };
    int64_t tids[MAX_T];
    int32_t stack[MAX_T][DEPTH];
    int depth[MAX_T];
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        cv_ev *e = &d->ev[k[i].ev];
        cv_op *op = &h->ops[i];
        op->id = i + 1;
        op->name = e->name;
        op->kind = OP_NORMAL;
        op->seq_id = -1;
        op->tid = (uint64_t)e->tid;
        op->rf_id = 0;
        op->dev_ts_ns = e->ts_ns;
        op->dev_dur_ns = e->dur_ns;
        op->dev_pg = e->pg_name;
        op->host_excl_ns = op->host_incl_ns = -1;
        op->in_bytes = e->in_bytes;
        op->is = e->in_dims;
        op->it = e->in_types;
        op->parent_ix = -1;
        e->host = (int32_t)i;
        size_t t;
        for (t = 0; t < nt && tids[t] != e->tid; t++)
            ;
        if (t == nt) {
            if (nt == MAX_T) {
                free(k);
                return etk_err(err, ETK_EUNSUPPORTED, "%s: more than %d CPU threads",
                               c->o->device_path, MAX_T);
            }
            tids[nt] = e->tid;
            depth[nt++] = 0;
        }
        while (depth[t] > 0) {
            const cv_op *p = &h->ops[stack[t][depth[t] - 1]];
            if (p->dev_ts_ns + p->dev_dur_ns >= e->ts_ns + e->dur_ns)
                break;
            depth[t]--;
        }
        if (depth[t] > 0) {
            op->parent_ix = stack[t][depth[t] - 1];
            op->parent = h->ops[op->parent_ix].id;
        } else {
            op->parent = op->id;
        }
        if (depth[t] < DEPTH)
            stack[t][depth[t]++] = (int32_t)i;
    }
    h->n_ops = n;
    h->max_id = n;
    free(k);
    /* the process groups of distributedInfo.pg_config */
    if (d->n_pgs) {
        h->pgs = malloc(sizeof *h->pgs * d->n_pgs);
        if (!h->pgs)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        memcpy(h->pgs, d->pgs, sizeof *h->pgs * d->n_pgs);
        h->n_pgs = h->cap_pgs = d->n_pgs;
    }
    c->win_lo = step ? lo : 0;
    c->win_hi = step ? hi : 0;
    return 0;
}
