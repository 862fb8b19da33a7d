/* match.c — links host ops to device-trace events for the converter: by rf_id == "Record
 * function id" when the device trace has them, else by name in start order, per host thread
 * (the ops of one host thread against the events of the Kineto thread that matches them best:
 * DLRM's forward and autograd threads interleave in time). Then checks that host and device
 * trace belong together. */
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

/* ---------- small sorted indexes ---------- */

int cv_kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->ix < y->ix ? -1 : x->ix > y->ix;
}

/* First entry with that key, or -1. */
ptrdiff_t cv_kv_find(const kv *t, size_t n, int64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && t[lo].key == key ? (ptrdiff_t)lo : -1;
}

/* ---------- linking host ops to device events ---------- */
static int ev_ts_cmp(const void *a, const void *b)
{
    const cv_ev *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns; /* outer op first */
}

/* Align the host ops of one host thread (id order = start order) with the cpu_op events of one
 * device thread (start order, outer op first) by name; an event missing on either side is
 * skipped by a short look-ahead. commit: record the matches; else only count them. */
static size_t align(conv *c, uint64_t htid, const uint32_t *cpu, size_t n, bool commit)
{
    cv_host *h = &c->h;
    cv_dev *d = &c->d;
    size_t j = 0, matched = 0;
    /* a few events behind the cursor are searched too: events that start in the same
     * microsecond (a zero-duration op and its sibling) may be in either order */
    enum { LOOKAHEAD = 16, LOOKBACK = 4 };
    for (size_t i = 0; i < h->n_ops && j < n; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind != OP_NORMAL || op->tid != htid)
            continue;
        for (size_t k = j > LOOKBACK ? j - LOOKBACK : 0; k < n && k < j + LOOKAHEAD; k++) {
            cv_ev *e = &d->ev[cpu[k]];
            if (e->host == -1 && !strcmp(e->name, op->name)) {
                if (commit) {
                    op->dev_ts_ns = e->ts_ns;
                    op->dev_dur_ns = e->dur_ns;
                    op->dev_pg = e->pg_name;
                }
                e->host = commit ? (int32_t)i : -2; /* -2: taken while scoring */
                matched++;
                if (k + 1 > j)
                    j = k + 1;
                break;
            }
        }
    }
    if (!commit)
        for (size_t k = 0; k < n; k++)
            if (d->ev[cpu[k]].host == -2)
                d->ev[cpu[k]].host = -1;
    return matched;
}

#define MAX_MATCH_THREADS 64

/* Device traces without Record function ids (PyTorch 1.13's profiler list, Kineto before
 * PyTorch 2.0): each host thread is aligned by name with the device thread whose events it
 * matches best (pairs taken greedily, most matches first; each thread used once). Matching all
 * threads at once pairs the ops of one thread with the interleaved events of another. */
int cv_match_by_name(conv *c, etk_error *err)
{
    cv_host *h = &c->h;
    cv_dev *d = &c->d;
    if (d->n_ev)
        qsort(d->ev, d->n_ev, sizeof *d->ev, ev_ts_cmp);
    uint32_t *cpu = malloc(sizeof *cpu * (d->n_ev + 1));
    if (!cpu)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    /* device threads: cpu_op events grouped by tid (stable: start order inside a thread) */
    int64_t dtid[MAX_MATCH_THREADS];
    size_t dstart[MAX_MATCH_THREADS + 1], dn = 0, n = 0;
    for (size_t pass = 0; pass < MAX_MATCH_THREADS; pass++) {
        int64_t t = 0;
        bool found = false;
        for (size_t i = 0; i < d->n_ev && !found; i++) {
            if (d->ev[i].cat != EV_CPU_OP && d->ev[i].cat != EV_ANNOT)
                continue;
            bool seen = false;
            for (size_t k = 0; k < dn && !seen; k++)
                seen = dtid[k] == d->ev[i].tid;
            if (!seen) {
                t = d->ev[i].tid;
                found = true;
            }
        }
        if (!found)
            break;
        dtid[dn] = t;
        dstart[dn] = n;
        for (size_t i = 0; i < d->n_ev; i++)
            if ((d->ev[i].cat == EV_CPU_OP || d->ev[i].cat == EV_ANNOT) && d->ev[i].tid == t)
                cpu[n++] = (uint32_t)i;
        dn++;
    }
    dstart[dn] = n;
    /* host threads */
    uint64_t htid[MAX_MATCH_THREADS];
    size_t hn = 0;
    for (size_t i = 0; i < h->n_ops; i++) {
        if (h->ops[i].kind != OP_NORMAL)
            continue;
        size_t k;
        for (k = 0; k < hn && htid[k] != h->ops[i].tid; k++)
            ;
        if (k == hn && hn < MAX_MATCH_THREADS)
            htid[hn++] = h->ops[i].tid;
    }
    /* score every pair, then take the best pairs greedily */
    size_t *score = calloc(hn * dn + 1, sizeof *score);
    if (!score) {
        free(cpu);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    for (size_t a = 0; a < hn; a++)
        for (size_t b = 0; b < dn; b++)
            score[a * dn + b] = align(c, htid[a], cpu + dstart[b], dstart[b + 1] - dstart[b],
                                      false);
    bool hused[MAX_MATCH_THREADS] = {false}, dused[MAX_MATCH_THREADS] = {false};
    for (;;) {
        size_t best = 0, ba = 0, bb = 0;
        for (size_t a = 0; a < hn; a++)
            for (size_t b = 0; b < dn; b++)
                if (!hused[a] && !dused[b] && score[a * dn + b] > best) {
                    best = score[a * dn + b];
                    ba = a;
                    bb = b;
                }
        if (best == 0)
            break;
        hused[ba] = dused[bb] = true;
        align(c, htid[ba], cpu + dstart[bb], dstart[bb + 1] - dstart[bb], true);
    }
    free(score);
    free(cpu);
    return 0;
}

int cv_match_by_rf(conv *c, etk_error *err)
{
    cv_host *h = &c->h;
    cv_dev *d = &c->d;
    size_t n = 0;
    kv *t = malloc(sizeof *t * (d->n_ev + 1));
    if (!t)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    for (size_t i = 0; i < d->n_ev; i++)
        if ((d->ev[i].cat == EV_CPU_OP || d->ev[i].cat == EV_ANNOT) && d->ev[i].rf_id >= 0)
            t[n++] = (kv){d->ev[i].rf_id, (uint32_t)i};
    qsort(t, n, sizeof *t, cv_kv_cmp);
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind != OP_NORMAL && op->kind != OP_PG_INIT)
            continue;
        ptrdiff_t k = cv_kv_find(t, n, (int64_t)op->rf_id);
        if (k < 0)
            continue;
        cv_ev *e = &d->ev[t[k].ix];
        op->dev_ts_ns = e->ts_ns;
        op->dev_dur_ns = e->dur_ns;
        op->dev_pg = e->pg_name;
        e->host = (int32_t)i;
    }
    free(t);
    return 0;
}

int cv_check_pair(conv *c, size_t n_matchable, etk_error *err)
{
    const etk_convert_opts *o = c->o;
    if (c->d.rank >= 0 && o->rank >= 0 && c->d.rank != o->rank)
        return etk_err(err, ETK_EINVAL, "%s is the device trace of rank %lld (distributedInfo."
                       "rank) but --rank is %lld", o->device_path, (long long)c->d.rank,
                       (long long)o->rank);
    if (c->h.has_pid && !c->d.profiler_list) {
        size_t same = 0, cpu = 0;
        int64_t first_pid = 0;
        for (size_t i = 0; i < c->d.n_ev; i++)
            if (c->d.ev[i].cat == EV_CPU_OP) {
                if (cpu++ == 0)
                    first_pid = c->d.ev[i].pid;
                same += c->d.ev[i].pid == c->h.pid;
            }
        if (cpu > 0 && same == 0)
            return etk_err(err, ETK_EINVAL, "%s and %s do not belong together: the host trace "
                           "is from pid %lld but no cpu_op of the device trace is (first one: "
                           "pid %lld)", o->host_path, o->device_path, (long long)c->h.pid,
                           (long long)first_pid);
    }
    size_t matched = c->st->n_matched;
    if (n_matchable >= 4 && matched * 2 < n_matchable)
        return etk_err(err, ETK_EINVAL, "%s and %s do not belong together: only %zu of %zu host "
                       "ops found a device-trace event (%s)", o->host_path, o->device_path,
                       matched, n_matchable,
                       !c->d.has_rf ? "by name in start order" : "by rf_id = Record "
                       "function id");
    return 0;
}

