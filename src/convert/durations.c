/* durations.c — the time each host op is written with: its exclusive time (the device trace's
 * duration minus its children's), less the time the dependencies already model (synchronising
 * waits the GPU explains, time blocked on another thread), plus the CPU gaps between top-level
 * ops that no op records (docs/convert.md, "Durations"); and FLOPs from shapes per op. */
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

/* the ProfilerStep annotation that encloses a Kineto-only iteration */
bool cv_is_step_op(const conv *c, const cv_op *op)
{
    return c->kineto_only && op->parent_ix < 0 && !strncmp(op->name, "ProfilerStep#", 13);
}

bool cv_top_level(const conv *c, const cv_op *op)
{
    if (op->kind != OP_NORMAL || cv_is_step_op(c, op))
        return false;
    if (op->parent_ix < 0)
        return true;
    const cv_op *p = &c->h.ops[op->parent_ix];
    /* the ops of a ProfilerStep (Kineto alone) are the top level of the iteration */
    return p->kind != OP_NORMAL || cv_is_step_op(c, p);
}

/* ---------- durations ---------- */


/* Time a top-level op spent blocked on other threads: the part of its span that other threads'
 * top-level ops cover, outside its own children (the main thread inside backward() while the
 * autograd thread works). The cross-thread dependencies model that wait. */
typedef struct ivl {
    int64_t s, e, tid;
} ivl;

static int ivl_cmp(const void *a, const void *b)
{
    const ivl *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* measure of [s, e) covered by intervals of threads other than tid */
static int64_t covered(const ivl *v, size_t n, int64_t maxlen, int64_t s, int64_t e, int64_t tid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first interval starting at or after s - maxlen */
        size_t mid = (lo + hi) / 2;
        if (v[mid].s < s - maxlen)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t total = 0, cur_s = 0, cur_e = INT64_MIN;
    for (size_t k = lo; k < n && v[k].s < e; k++) {
        if (v[k].tid == tid || v[k].e <= s)
            continue;
        int64_t a = v[k].s > s ? v[k].s : s, b = v[k].e < e ? v[k].e : e;
        if (a > cur_e) {
            if (cur_e > cur_s)
                total += cur_e - cur_s;
            cur_s = a;
            cur_e = b;
        } else if (b > cur_e) {
            cur_e = b;
        }
    }
    if (cur_e > cur_s)
        total += cur_e - cur_s;
    return total;
}

static int64_t *blocked_times(const conv *c)
{
    const cv_host *h = &c->h;
    ivl *v = malloc(sizeof *v * (h->n_ops + 1));
    int64_t *bl = calloc(h->n_ops + 1, sizeof *bl);
    if (!v || !bl) {
        free(v);
        free(bl);
        return NULL;
    }
    size_t n = 0;
    int64_t maxlen = 0;
    for (size_t i = 0; i < h->n_ops; i++) {
        const cv_op *op = &h->ops[i];
        if (cv_top_level(c, op) && op->dev_dur_ns > 0) {
            v[n++] = (ivl){op->dev_ts_ns, op->dev_ts_ns + op->dev_dur_ns, (int64_t)op->tid};
            if (op->dev_dur_ns > maxlen)
                maxlen = op->dev_dur_ns;
        }
    }
    if (n < 2) {
        free(v);
        return bl;
    }
    qsort(v, n, sizeof *v, ivl_cmp);
    for (size_t i = 0; i < h->n_ops; i++) {
        const cv_op *op = &h->ops[i];
        if (op->dev_dur_ns <= 0)
            continue;
        int64_t ov = covered(v, n, maxlen, op->dev_ts_ns, op->dev_ts_ns + op->dev_dur_ns,
                             (int64_t)op->tid);
        if (cv_top_level(c, op))
            bl[i] += ov;
        else if (op->parent_ix >= 0 && cv_top_level(c, &h->ops[op->parent_ix]))
            bl[op->parent_ix] -= ov;
    }
    free(v);
    return bl;
}


/* Gaps before top-level ops (see durations()); blk: blocked time per op (blocked_times). */
static int64_t *thread_gaps(const conv *c, const int64_t *blk)
{
    const cv_host *h = &c->h;
    int64_t *gap = calloc(h->n_ops + 1, sizeof *gap);
    ivl *w = malloc(sizeof *w * (h->n_ops + 1));
    if (!gap || !w || !blk) {
        free(gap);
        free(w);
        return NULL;
    }
    /* work: top-level ops not mostly blocked on other threads */
    size_t n = 0;
    int64_t maxlen = 0;
    uint64_t first_tid = 0;
    bool have_first = false;
    for (size_t i = 0; i < h->n_ops; i++) {
        const cv_op *op = &h->ops[i];
        if (!cv_top_level(c, op) || op->dev_dur_ns < 0)
            continue;
        if (!have_first) {
            first_tid = op->tid;
            have_first = true;
        }
        if (blk[i] * 2 > op->dev_dur_ns)
            continue;
        w[n++] = (ivl){op->dev_ts_ns, op->dev_ts_ns + op->dev_dur_ns, (int64_t)op->tid};
        if (op->dev_dur_ns > maxlen)
            maxlen = op->dev_dur_ns;
    }
    qsort(w, n, sizeof *w, ivl_cmp);
    /* previous top-level op per thread (ops are in start order) */
    enum { T = 64 };
    uint64_t tids[T];
    int64_t prev_end[T];
    size_t nt = 0;
    for (size_t i = 0; i < h->n_ops; i++) {
        const cv_op *op = &h->ops[i];
        if (!cv_top_level(c, op) || op->dev_dur_ns < 0)
            continue;
        size_t t;
        for (t = 0; t < nt && tids[t] != op->tid; t++)
            ;
        if (t == nt) {
            if (nt == T)
                continue;
            tids[nt] = op->tid;
            prev_end[nt++] = INT64_MIN;
        }
        bool count = c->kineto_only || op->tid != first_tid;
        if (count && prev_end[t] != INT64_MIN && op->dev_ts_ns > prev_end[t]) {
            int64_t g = op->dev_ts_ns - prev_end[t] -
                        covered(w, n, maxlen, prev_end[t], op->dev_ts_ns, (int64_t)op->tid);
            if (g > 0)
                gap[i] += g;
        }
        int64_t e = op->dev_ts_ns + op->dev_dur_ns;
        if (e > prev_end[t])
            prev_end[t] = e;
    }
    free(w);
    return gap;
}

void cv_durations(conv *c)
{
    cv_host *h = &c->h;
    int64_t *child = calloc(h->n_ops + 1, sizeof *child);
    bool dev = c->have_dev;
    /* children come after their parent (parent_ix < i): in reverse order each op's child sum
     * is complete when it is reached. An op without a duration passes its children's time up,
     * so a matched ancestor does not count it twice. */
    for (size_t i = h->n_ops; child && i-- > 0;) {
        const cv_op *op = &h->ops[i];
        int64_t incl = dev ? op->dev_dur_ns : op->host_incl_ns;
        if (incl < 0)
            incl = child[i];
        if (op->parent_ix >= 0)
            child[op->parent_ix] += incl;
    }
    /* Gaps between consecutive top-level ops of a thread are CPU time no op records (Python,
     * the autograd engine). Each gap goes to the op after it (the time spent getting to it),
     * less the part other threads' work covers (a thread blocked while another one works:
     * the cross-thread dependency models that wait). With a host trace this is done for every
     * thread but the first (whose gaps the host trace's replay has always left out); with a
     * Kineto trace alone for every thread, and the ProfilerStep keeps the gap before its first
     * op and gives the tail after its last op to that op. */
    int64_t *blk = dev ? blocked_times(c) : NULL;
    int64_t *gap = dev ? thread_gaps(c, blk) : NULL;
    int32_t step = -1, last = -1;
    int64_t step_excl = 0;
    for (size_t i = 0; c->kineto_only && i < h->n_ops; i++)
        if (cv_is_step_op(c, &h->ops[i]))
            step = (int32_t)i;
    for (size_t i = 0; gap && step >= 0 && i < h->n_ops; i++) {
        if (h->ops[i].parent_ix != step)
            continue;
        if (last < 0)
            step_excl = h->ops[i].dev_ts_ns - h->ops[step].dev_ts_ns;
        last = (int32_t)i;
    }
    if (gap && last >= 0) { /* the tail after the last op */
        int64_t end = h->ops[step].dev_ts_ns + h->ops[step].dev_dur_ns,
                lend = h->ops[last].dev_ts_ns + h->ops[last].dev_dur_ns;
        if (end > lend)
            gap[last] += end - lend;
    }
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind != OP_NORMAL)
            continue;
        int64_t excl = -1;
        if (dev) {
            if (op->dev_dur_ns >= 0) {
                excl = op->dev_dur_ns - (child ? child[i] : 0) - op->sync_ns;
                if (blk && blk[i] > 0)
                    excl -= blk[i];
                if ((int32_t)i == step)
                    excl = step_excl;
                else if (gap)
                    excl += gap[i];
                if (excl < 0)
                    excl = 0;
            }
        } else if (op->host_excl_ns >= 0) {
            excl = op->host_excl_ns;
        } else if (op->host_incl_ns >= 0) {
            excl = op->host_incl_ns - (child ? child[i] : 0);
        }
        if (excl < 0 && (dev ? op->dev_dur_ns < 0 : op->host_incl_ns < 0)) {
            c->st->n_zero_dur++;
            excl = 0;
        }
        if (excl < 0)
            excl = 0;
        op->dur_us = (uint64_t)((excl + 500) / 1000);
        if (dev && op->dev_dur_ns >= 0)
            op->start_us = (uint64_t)(op->dev_ts_ns / 1000);
    }
    free(gap);
    free(blk);
    free(child);
}

/* ---------- FLOPs from shapes ---------- */
/* FLOPs of the ops whose work follows from their input shapes; written on the innermost such
 * op only (aten::linear calls aten::addmm: the FLOPs are counted once). */
void cv_shape_flops(conv *c)
{
    cv_host *h = &c->h;
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind == OP_NORMAL)
            cv_flops_from_shapes(op->name, op->is, op->it, op->iv, &op->flops, &op->flop_bytes);
    }
    for (size_t i = h->n_ops; i-- > 0;) {
        const cv_op *op = &h->ops[i];
        if ((op->flops || op->flop_child) && op->parent_ix >= 0)
            h->ops[op->parent_ix].flop_child = true;
    }
    for (size_t i = 0; i < h->n_ops; i++)
        if (h->ops[i].flops && !h->ops[i].flop_child)
            c->st->n_flop_ops++;
}

