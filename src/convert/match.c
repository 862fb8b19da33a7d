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

/* Device traces without Record function ids (PyTorch 1.13's profiler list, Kineto before
 * PyTorch 2.0): align host ops (id order = start order) and cpu_op events (start order, outer
 * first) by name; an event missing on either side is skipped by a short look-ahead. */
int cv_match_by_name(conv *c, etk_error *err)
{
    cv_host *h = &c->h;
    cv_dev *d = &c->d;
    if (d->n_ev)
        qsort(d->ev, d->n_ev, sizeof *d->ev, ev_ts_cmp);
    uint32_t *cpu = malloc(sizeof *cpu * (d->n_ev + 1));
    if (!cpu)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < d->n_ev; i++)
        if (d->ev[i].cat == EV_CPU_OP || d->ev[i].cat == EV_ANNOT)
            cpu[n++] = (uint32_t)i;
    size_t j = 0;
    enum { LOOKAHEAD = 16 };
    for (size_t i = 0; i < h->n_ops && j < n; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind != OP_NORMAL)
            continue;
        for (size_t k = j; k < n && k < j + LOOKAHEAD; k++) {
            cv_ev *e = &d->ev[cpu[k]];
            if (!strcmp(e->name, op->name)) {
                op->dev_ts_ns = e->ts_ns;
                op->dev_dur_ns = e->dur_ns;
                op->dev_pg = e->pg_name;
                e->host = (int32_t)i;
                j = k + 1;
                break;
            }
        }
    }
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

