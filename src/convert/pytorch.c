/* pytorch.c — `etkit convert pytorch`: turns the host op table (host.c) and the device events
 * (kineto.c) of one rank into Chakra nodes and communicator groups (the "◄── convert/" arrow of
 * DESIGN.md's data flow).
 *
 * Linking: host op ↔ Kineto cpu_op by rf_id == "Record function id"; a GPU kernel ↔ its
 * launching runtime call by "correlation", the runtime call ↔ its cpu_op by "External id" (or,
 * when absent, the innermost cpu_op enclosing it on its thread), then ↔ the host op by rf_id.
 * PyTorch 1.13's profiler list has no ids: host ops and events are aligned by name in start
 * order.
 *
 * Node classes: process-group init → METADATA; NCCL kernels → COMM_COLL (type from the name) or
 * SEND/RECV (from the launching op); every other op → COMP (is_cpu_op true for host ops).
 * Host ops keep their ids; GPU nodes get ids after the largest host id.
 *
 * Dependencies (all point to smaller ids, so the graph is acyclic by construction, and every
 * referenced id is written): host ops in program order (pre-order = id order) per thread as
 * data deps, the parent as a ctrl dep, thread switches as ctrl deps; GPU ops after their launch
 * and after the previous op on their stream; a host op that synchronizes (cuda*Synchronize)
 * after the GPU work launched before it.
 *
 * Durations: host ops get their exclusive time (Kineto duration minus the durations of their
 * matched children), so replaying the per-thread chain reproduces the nested timeline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

/* ---------- small sorted indexes ---------- */
typedef struct kv {
    int64_t key;
    uint32_t ix;
} kv;

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->ix < y->ix ? -1 : x->ix > y->ix;
}

/* First entry with that key, or -1. */
static ptrdiff_t kv_find(const kv *t, size_t n, int64_t key)
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

static int op_cmp(const void *a, const void *b)
{
    const cv_op *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int op_index(const cv_host *h, uint64_t id)
{
    size_t lo = 0, hi = h->n_ops;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->ops[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < h->n_ops && h->ops[lo].id == id ? (int)lo : -1;
}

int etk_convert_coll_from_name(const char *name)
{
    char low[256];
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < sizeof low; p++) {
        if (*p == '_' || *p == '-')
            continue;
        low[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    }
    low[k] = 0;
    if (strstr(low, "allreduce"))
        return ETK_COLL_ALL_REDUCE;
    if (strstr(low, "alltoall"))
        return ETK_COLL_ALL_TO_ALL;
    if (strstr(low, "allgather"))
        return ETK_COLL_ALL_GATHER;
    if (strstr(low, "reducescatter"))
        return ETK_COLL_REDUCE_SCATTER;
    if (strstr(low, "broadcast"))
        return ETK_COLL_BROADCAST;
    if (strstr(low, "barrier"))
        return ETK_COLL_BARRIER;
    if (strstr(low, "reduce"))
        return ETK_COLL_REDUCE;
    return -1;
}

static bool is_nccl_kernel(const char *name)
{
    return !strncmp(name, "ncclKernel", 10) || !strncmp(name, "ncclDevKernel", 13);
}

/* ---------- the conversion state ---------- */
typedef struct gpu_node {
    uint64_t id;
    uint32_t ev;      /* index in dev.ev */
    int64_t ts;       /* start on the GPU */
    int32_t launch;   /* host op index, -1 */
    int64_t launch_ts;
    int64_t stream;
    uint64_t prev;    /* previous node id on the stream, 0 */
    uint64_t max_launch_id; /* max launch-op id over this node and its stream predecessors */
    int type;
    int coll;
    int64_t comm_size;
    const char *pg;
    int64_t peer, tag;
} gpu_node;

typedef struct edge {
    uint32_t from; /* host op index */
    uint64_t to;   /* node id */
} edge;

typedef struct conv {
    const etk_convert_opts *o;
    etk_convert_stats *st;
    cv_host h;
    cv_dev d;
    bool have_dev;
    gpu_node *gpu;
    size_t n_gpu;
    edge *edges; /* extra ctrl deps of host ops (cross-thread, sync), sorted by from */
    size_t n_edges, cap_edges;
} conv;

static int add_edge(conv *c, uint32_t from, uint64_t to)
{
    if (cv_grow((void **)&c->edges, &c->cap_edges, c->n_edges, sizeof *c->edges))
        return ETK_ENOMEM;
    c->edges[c->n_edges].from = from;
    c->edges[c->n_edges].to = to;
    c->n_edges++;
    return 0;
}

static void conv_free(conv *c)
{
    free(c->h.ops);
    free(c->h.pgs);
    free(c->d.ev);
    free(c->gpu);
    free(c->edges);
    etk_arena_free(c->h.arena);
}

static bool emitted(const cv_op *op)
{
    return op->kind != OP_PROCESS_ROOT;
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
static int match_by_name(conv *c, etk_error *err)
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

static int match_by_rf(conv *c, etk_error *err)
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
    qsort(t, n, sizeof *t, kv_cmp);
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind != OP_NORMAL && op->kind != OP_PG_INIT)
            continue;
        ptrdiff_t k = kv_find(t, n, (int64_t)op->rf_id);
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

static int check_pair(conv *c, size_t n_matchable, etk_error *err)
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

/* cpu_op events of one thread in start order (outer op first on ties) */
typedef struct tev {
    int64_t tid, ts, dur;
    uint32_t ix;
} tev;

static int tev_cmp(const void *a, const void *b)
{
    const tev *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

/* Host op index of the op that issued runtime event r (External id, else enclosing cpu_op). */
typedef struct link_ix {
    kv *ext;      /* cpu_op External id -> event index */
    size_t n_ext;
    tev *cpu_tid; /* cpu_op events sorted by (tid, start) */
    size_t n_cpu;
} link_ix;

static int32_t launcher(const conv *c, const link_ix *L, const cv_ev *r)
{
    const cv_ev *ev = c->d.ev;
    if (r->ext_id >= 0) {
        ptrdiff_t k = kv_find(L->ext, L->n_ext, r->ext_id);
        if (k >= 0 && ev[L->ext[k].ix].host >= 0)
            return ev[L->ext[k].ix].host;
    }
    /* innermost cpu_op on the same thread that encloses the runtime call */
    size_t lo = 0, hi = L->n_cpu;
    while (lo < hi) { /* first entry after (tid, ts) */
        size_t mid = (lo + hi) / 2;
        const tev *t = &L->cpu_tid[mid];
        if (t->tid < r->tid || (t->tid == r->tid && t->ts <= r->ts_ns))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i > 0 && lo - i < 256; i--) {
        const tev *t = &L->cpu_tid[i - 1];
        if (t->tid != r->tid)
            break;
        const cv_ev *e = &ev[t->ix];
        if (e->ts_ns + e->dur_ns >= r->ts_ns + r->dur_ns && e->host >= 0)
            return e->host;
    }
    return -1;
}

static const char *pg_of(const conv *c, int32_t hix, const cv_ev *kernel)
{
    if (kernel->pg_name)
        return kernel->pg_name;
    for (int depth = 0; hix >= 0 && depth < 8; depth++) {
        const cv_op *op = &c->h.ops[hix];
        if (op->dev_pg)
            return op->dev_pg;
        if (op->attr_pg)
            return op->attr_pg;
        for (size_t g = 0; g < c->h.n_pgs; g++) {
            const cv_pg *pg = &c->h.pgs[g];
            for (int s = 0; s < op->n_strs; s++)
                if (!strcmp(op->strs[s], pg->name))
                    return pg->name;
            for (int s = 0; s < op->n_ints; s++)
                if (pg->backend_id >= 0 && op->ints[s] == pg->backend_id)
                    return pg->name;
        }
        /* record_param_comms is often a child of the c10d op that launches */
        for (size_t ch = (size_t)hix + 1; ch < c->h.n_ops && ch < (size_t)hix + 8; ch++) {
            const cv_op *k = &c->h.ops[ch];
            if (k->parent_ix != hix || !strstr(k->name, "record_param_comms"))
                continue;
            if (k->attr_pg)
                return k->attr_pg;
            for (size_t g = 0; g < c->h.n_pgs; g++)
                for (int s = 0; s < k->n_strs; s++)
                    if (!strcmp(k->strs[s], c->h.pgs[g].name))
                        return c->h.pgs[g].name;
            for (size_t g = 0; g < c->h.n_pgs; g++)
                for (int s = 0; s < k->n_ints; s++)
                    if (c->h.pgs[g].backend_id >= 0 && k->ints[s] == c->h.pgs[g].backend_id)
                        return c->h.pgs[g].name;
        }
        hix = op->parent_ix;
    }
    return NULL;
}

static int gpu_cmp(const void *a, const void *b)
{
    const gpu_node *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static bool is_sync(const char *name)
{
    return strstr(name, "Synchronize") != NULL;
}

static int build_gpu(conv *c, etk_error *err)
{
    cv_dev *d = &c->d;
    cv_ev *ev = d->ev;
    link_ix L = {0};
    kv *corr = NULL;
    size_t n_corr = 0;
    int rc = 0;
    L.ext = malloc(sizeof(kv) * (d->n_ev + 1));
    L.cpu_tid = malloc(sizeof(tev) * (d->n_ev + 1));
    corr = malloc(sizeof(kv) * (d->n_ev + 1));
    c->gpu = malloc(sizeof(gpu_node) * (d->n_ev + 1));
    if (!L.ext || !L.cpu_tid || !corr || !c->gpu) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < d->n_ev; i++) {
        if (ev[i].cat == EV_CPU_OP || ev[i].cat == EV_ANNOT) {
            if (ev[i].ext_id >= 0)
                L.ext[L.n_ext++] = (kv){ev[i].ext_id, (uint32_t)i};
            L.cpu_tid[L.n_cpu++] = (tev){ev[i].tid, ev[i].ts_ns, ev[i].dur_ns, (uint32_t)i};
        } else if (ev[i].cat == EV_RUNTIME && ev[i].corr >= 0) {
            corr[n_corr++] = (kv){ev[i].corr, (uint32_t)i};
        }
    }
    qsort(L.ext, L.n_ext, sizeof(kv), kv_cmp);
    qsort(L.cpu_tid, L.n_cpu, sizeof(tev), tev_cmp);
    qsort(corr, n_corr, sizeof(kv), kv_cmp);

    size_t n = 0;
    for (size_t i = 0; i < d->n_ev; i++) {
        if (ev[i].cat != EV_KERNEL && ev[i].cat != EV_MEMCPY && ev[i].cat != EV_MEMSET)
            continue;
        gpu_node *g = &c->gpu[n++];
        memset(g, 0, sizeof *g);
        g->ev = (uint32_t)i;
        g->ts = ev[i].ts_ns;
        g->launch = -1;
        g->launch_ts = ev[i].ts_ns;
        g->stream = ev[i].stream >= 0 ? ev[i].stream : ev[i].tid;
        g->peer = g->tag = -1;
        ptrdiff_t k = ev[i].corr >= 0 ? kv_find(corr, n_corr, ev[i].corr) : -1;
        if (k >= 0) {
            const cv_ev *r = &ev[corr[k].ix];
            g->launch_ts = r->ts_ns;
            g->launch = launcher(c, &L, r);
        }
        if (g->launch < 0)
            c->st->n_unlinked_kernels++;
    }
    c->n_gpu = n;
    qsort(c->gpu, n, sizeof *c->gpu, gpu_cmp);

    /* ids, classes, stream order */
    typedef struct sstate {
        int64_t stream;
        uint64_t last_id, max_launch;
    } sstate;
    sstate streams[64];
    size_t n_streams = 0;
    for (size_t i = 0; i < n; i++) {
        gpu_node *g = &c->gpu[i];
        const cv_ev *e = &ev[g->ev];
        g->id = c->h.max_id + 1 + i;
        g->type = ETK_NODE_COMP;
        g->coll = -1;
        if (e->cat == EV_KERNEL && is_nccl_kernel(e->name)) {
            const char *lname = g->launch >= 0 ? c->h.ops[g->launch].name : "";
            int coll = etk_convert_coll_from_name(e->name);
            bool p2p = strstr(e->name, "SendRecv") || strstr(e->name, "Send") ||
                       strstr(e->name, "Recv");
            if (coll >= 0 && !strstr(e->name, "SendRecv")) {
                g->type = ETK_NODE_COLL;
                g->coll = coll;
            } else if (p2p || coll < 0) {
                /* direction from the launching op or its ancestors */
                int32_t a = g->launch;
                for (int depth = 0; a >= 0 && depth < 8; depth++, a = c->h.ops[a].parent_ix) {
                    const cv_op *op = &c->h.ops[a];
                    bool s = strstr(op->name, "send") != NULL, r = strstr(op->name, "recv") != NULL;
                    if (s || r) {
                        g->type = s ? ETK_NODE_SEND : ETK_NODE_RECV;
                        if (op->n_ints >= 1)
                            g->peer = op->ints[0];
                        if (op->n_ints >= 2)
                            g->tag = op->ints[1];
                        break;
                    }
                }
                if (g->type == ETK_NODE_COMP) {
                    g->type = ETK_NODE_COLL; /* unknown NCCL kernel: keep it a collective */
                    g->coll = coll >= 0 ? coll : ETK_COLL_ALL_REDUCE;
                    cv_warn(c->st, c->o->quiet, "NCCL kernel \"%s\" (launched by \"%s\") names "
                            "no collective; written as ALL_REDUCE", e->name, lname);
                }
            }
            int32_t a = g->launch;
            for (int depth = 0; a >= 0 && depth < 8 && g->comm_size == 0;
                 depth++, a = c->h.ops[a].parent_ix)
                g->comm_size = (int64_t)c->h.ops[a].in_bytes;
            g->pg = pg_of(c, g->launch, e);
        }
        size_t s;
        for (s = 0; s < n_streams && streams[s].stream != g->stream; s++)
            ;
        if (s == n_streams) {
            if (n_streams == 64) {
                rc = etk_err(err, ETK_EUNSUPPORTED, "%s: more than 64 GPU streams",
                             c->o->device_path);
                goto out;
            }
            streams[n_streams++] = (sstate){g->stream, 0, 0};
        }
        uint64_t lid = g->launch >= 0 ? c->h.ops[g->launch].id : 0;
        g->prev = streams[s].last_id;
        streams[s].last_id = g->id;
        if (lid > streams[s].max_launch)
            streams[s].max_launch = lid;
        g->max_launch_id = streams[s].max_launch;
    }

    /* synchronizing runtime calls: the issuing host op waits for the GPU work launched before
     * it. Only edges whose GPU side depends on strictly older host ops are kept (acyclic). */
    for (size_t i = 0; i < d->n_ev; i++) {
        if (ev[i].cat != EV_RUNTIME || !is_sync(ev[i].name))
            continue;
        int32_t hix = launcher(c, &L, &ev[i]);
        if (hix < 0)
            continue;
        uint64_t hid = c->h.ops[hix].id;
        for (size_t s = 0; s < n_streams; s++) {
            const gpu_node *best = NULL;
            for (size_t k = 0; k < n; k++)
                if (c->gpu[k].stream == streams[s].stream && c->gpu[k].launch_ts < ev[i].ts_ns)
                    best = &c->gpu[k];
            if (best && best->max_launch_id < hid) {
                if (add_edge(c, (uint32_t)hix, best->id)) {
                    rc = etk_err(err, ETK_ENOMEM, "out of memory");
                    goto out;
                }
                c->st->n_sync_deps++;
            }
        }
    }
out:
    free(L.ext);
    free(L.cpu_tid);
    free(corr);
    return rc;
}

/* ---------- durations ---------- */
static void durations(conv *c)
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
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        if (op->kind != OP_NORMAL)
            continue;
        int64_t excl = -1;
        if (dev) {
            if (op->dev_dur_ns >= 0)
                excl = op->dev_dur_ns - (child ? child[i] : 0);
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
    free(child);
}

/* ---------- host dependencies across threads ---------- */
typedef struct tstate {
    uint64_t tid;
    uint64_t last_id;       /* last emitted node on the thread */
    uint64_t *top_id;       /* top-level ops so far (id order) */
    int64_t *top_end;       /* and their device end times */
    size_t n_top, cap_top;
    uint64_t dep_from[16];  /* latest cross-thread dep taken from thread k */
} tstate;

#define MAX_THREADS 16

static int thread_of(tstate *t, size_t *n, uint64_t tid)
{
    for (size_t i = 0; i < *n; i++)
        if (t[i].tid == tid)
            return (int)i;
    if (*n == MAX_THREADS)
        return -1;
    memset(&t[*n], 0, sizeof t[*n]);
    t[*n].tid = tid;
    return (int)(*n)++;
}

static bool top_level(const conv *c, const cv_op *op)
{
    return op->kind == OP_NORMAL &&
           (op->parent_ix < 0 || c->h.ops[op->parent_ix].kind != OP_NORMAL);
}

/* ctrl deps between threads: with device times, a top-level op waits for the latest top-level
 * op of each other thread that ended before it started; without, a top-level op that follows
 * (in start order) one of another thread waits for it. */
static int cross_thread(conv *c, uint64_t **prev_out, etk_error *err)
{
    cv_host *h = &c->h;
    tstate th[MAX_THREADS];
    size_t nth = 0;
    int rc = 0;
    uint64_t *prev = calloc(h->n_ops + 1, sizeof *prev);
    if (!prev)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    int last_top_thread = -1;
    uint64_t last_top_id = 0;
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        if (!emitted(op))
            continue;
        int t = thread_of(th, &nth, op->tid);
        if (t < 0) {
            rc = etk_err(err, ETK_EUNSUPPORTED, "%s: more than %d threads", c->o->host_path,
                         MAX_THREADS);
            break;
        }
        prev[i] = th[t].last_id;
        th[t].last_id = op->id;
        if (!top_level(c, op))
            continue;
        if (c->have_dev && op->dev_dur_ns >= 0) {
            for (size_t u = 0; u < nth; u++) {
                if ((int)u == t || th[u].n_top == 0)
                    continue;
                /* latest top-level op of thread u with end <= start (ends are increasing) */
                size_t lo = 0, hi = th[u].n_top;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (th[u].top_end[mid] <= op->dev_ts_ns)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo == 0)
                    continue;
                uint64_t dep = th[u].top_id[lo - 1];
                if (dep > th[t].dep_from[u] && dep < op->id) {
                    th[t].dep_from[u] = dep;
                    if ((rc = add_edge(c, (uint32_t)i, dep))) {
                        rc = etk_err(err, rc, "out of memory");
                        goto out;
                    }
                    c->st->n_cross_thread_deps++;
                }
            }
        } else if (last_top_thread >= 0 && last_top_thread != t) {
            if ((rc = add_edge(c, (uint32_t)i, last_top_id))) {
                rc = etk_err(err, rc, "out of memory");
                goto out;
            }
            c->st->n_cross_thread_deps++;
        }
        last_top_thread = t;
        last_top_id = op->id;
        if (c->have_dev && op->dev_dur_ns >= 0) {
            if (cv_grow((void **)&th[t].top_id, &th[t].cap_top, th[t].n_top, sizeof(uint64_t))) {
                rc = etk_err(err, ETK_ENOMEM, "out of memory");
                goto out;
            }
            /* top_end has the capacity of top_id */
            int64_t *e = realloc(th[t].top_end, sizeof(int64_t) * th[t].cap_top);
            if (!e) {
                rc = etk_err(err, ETK_ENOMEM, "out of memory");
                goto out;
            }
            th[t].top_end = e;
            int64_t end = op->dev_ts_ns + op->dev_dur_ns;
            if (th[t].n_top && end < th[t].top_end[th[t].n_top - 1])
                end = th[t].top_end[th[t].n_top - 1];
            th[t].top_id[th[t].n_top] = op->id;
            th[t].top_end[th[t].n_top++] = end;
        }
    }
out:
    for (size_t u = 0; u < nth; u++) {
        free(th[u].top_id);
        free(th[u].top_end);
    }
    if (rc) {
        free(prev);
        return rc;
    }
    *prev_out = prev;
    return 0;
}

static int edge_cmp(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

/* ---------- emitting ---------- */
typedef int (*emit_fn)(void *ctx, const etk_node *n, etk_error *err);

static void count_node(etk_convert_stats *st, const etk_node *n, bool cpu)
{
    st->n_nodes++;
    if (n->type >= 0 && n->type < ETK_NODE_TYPE_COUNT)
        st->n_type[n->type]++;
    st->n_cpu_ops += cpu;
}

static int emit_all(conv *c, const uint64_t *prev, emit_fn emit, void *ctx, etk_error *err)
{
    cv_host *h = &c->h;
    etk_attr at[16];
    uint64_t deps[1 + MAX_THREADS + 64]; /* parent, one per other thread, one per stream */
    size_t e = 0;
    int rc;
    for (size_t i = 0; i < h->n_ops; i++) {
        const cv_op *op = &h->ops[i];
        while (e < c->n_edges && c->edges[e].from < i)
            e++;
        if (!emitted(op))
            continue;
        etk_node n;
        memset(&n, 0, sizeof n);
        n.id = op->id;
        n.name = op->name;
        n.type = op->kind == OP_PG_INIT ? ETK_NODE_METADATA : ETK_NODE_COMP;
        uint64_t data = prev[i];
        n.data_deps = &data;
        n.n_data_deps = data ? 1 : 0;
        size_t nd = 0;
        if (op->parent_ix >= 0 && emitted(&h->ops[op->parent_ix]) &&
            h->ops[op->parent_ix].id != data)
            deps[nd++] = h->ops[op->parent_ix].id;
        for (; e < c->n_edges && c->edges[e].from == i; e++)
            if (nd < sizeof deps / sizeof deps[0] && c->edges[e].to != data &&
                (nd == 0 || deps[nd - 1] != c->edges[e].to))
                deps[nd++] = c->edges[e].to;
        n.ctrl_deps = deps;
        n.n_ctrl_deps = (uint32_t)nd;
        n.duration_micros = op->dur_us;
        n.start_time_micros = op->start_us;
        etk_io in = {op->iv, op->is, op->it}, out = {op->ov, op->os, op->ot};
        if (op->kind == OP_PG_INIT && op->iv) {
            /* the process-group list itself, as JSON (Chakra's METADATA convention) */
            json_t *v = json_loads(op->iv, 0, NULL);
            const json_t *s = json_array_get(v, 0);
            in.values = json_is_string(s) ? etk_arena_strdup(h->arena, json_string_value(s))
                                          : op->iv;
            json_decref(v);
        }
        n.inputs = in.values || in.shapes || in.types ? &in : NULL;
        n.outputs = out.values || out.shapes || out.types ? &out : NULL;
        size_t na = 0;
        at[na++] = etk_attr_i64("rf_id", (int64_t)op->rf_id);
        at[na++] = etk_attr_i64("fw_parent", (int64_t)op->fw_parent);
        at[na++] = etk_attr_i64("seq_id", op->seq_id);
        at[na++] = etk_attr_i64("scope", (int64_t)op->scope);
        at[na++] = etk_attr_i64("tid", (int64_t)op->tid);
        at[na++] = etk_attr_i64("fw_tid", (int64_t)op->fw_tid);
        at[na++] = etk_attr_str("op_schema", op->op_schema ? op->op_schema : "");
        at[na++] = etk_attr_bool("is_cpu_op", true);
        n.attr = at;
        n.n_attr = (uint32_t)na;
        if ((rc = emit(ctx, &n, err)))
            return rc;
        count_node(c->st, &n, true);
    }
    for (size_t i = 0; i < c->n_gpu; i++) {
        const gpu_node *g = &c->gpu[i];
        const cv_ev *ev = &c->d.ev[g->ev];
        etk_node n;
        memset(&n, 0, sizeof n);
        n.id = g->id;
        n.name = ev->name;
        n.type = g->type;
        uint64_t dd[2];
        size_t nd = 0;
        if (g->launch >= 0)
            dd[nd++] = h->ops[g->launch].id;
        if (g->prev)
            dd[nd++] = g->prev;
        n.data_deps = dd;
        n.n_data_deps = (uint32_t)nd;
        n.duration_micros = (uint64_t)((ev->dur_ns + 500) / 1000);
        n.start_time_micros = (uint64_t)(ev->ts_ns / 1000);
        size_t na = 0;
        at[na++] = etk_attr_bool("is_cpu_op", false);
        at[na++] = etk_attr_i64("stream", g->stream);
        if (g->type == ETK_NODE_COLL) {
            at[na++] = etk_attr_i64("comm_type", g->coll);
            at[na++] = etk_attr_i64("comm_size", g->comm_size);
        } else if (g->type == ETK_NODE_SEND || g->type == ETK_NODE_RECV) {
            at[na++] = etk_attr_i64("comm_size", g->comm_size);
            if (g->peer >= 0)
                at[na++] = etk_attr_i32(g->type == ETK_NODE_SEND ? "comm_dst" : "comm_src",
                                        (int32_t)g->peer);
            at[na++] = etk_attr_i32("comm_tag", g->tag >= 0 ? (int32_t)g->tag : 0);
        }
        if (g->pg && g->type != ETK_NODE_COMP)
            at[na++] = etk_attr_str("pg_name", g->pg);
        n.attr = at;
        n.n_attr = (uint32_t)na;
        if ((rc = emit(ctx, &n, err)))
            return rc;
        count_node(c->st, &n, false);
        c->st->n_gpu_ops++;
    }
    return 0;
}

/* ---------- driver ---------- */
static int convert(const etk_convert_opts *o, etk_convert_stats *st, conv *c, uint64_t **prev,
                   etk_error *err)
{
    memset(c, 0, sizeof *c);
    memset(st, 0, sizeof *st);
    c->o = o;
    c->st = st;
    if (!o || !o->host_path)
        return etk_err(err, ETK_EINVAL, "convert pytorch: a host execution trace is required");
    c->h.arena = etk_arena_new(0);
    if (!c->h.arena)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    int rc = cv_host_parse(o->host_path, &c->h, st, err);
    if (rc)
        return rc;
    cv_host *h = &c->h;
    if (!h->schema)
        cv_warn(st, o->quiet, "%s: no \"schema\" key; nodes read by their layout", o->host_path);
    else if (!st->schema_known)
        cv_warn(st, o->quiet, "%s: unknown schema \"%s\" (known: 1.0.1, 1.0.2, 1.0.3, 1.1.0, "
                "1.1.1); attempting to read it by its node layout", o->host_path, h->schema);

    if (h->n_ops)
        qsort(h->ops, h->n_ops, sizeof *h->ops, op_cmp);
    for (size_t i = 1; i < h->n_ops; i++)
        if (h->ops[i].id == h->ops[i - 1].id)
            return etk_err(err, ETK_EFORMAT, "%s: node id %llu appears twice (\"%s\" and \"%s\")",
                           o->host_path, (unsigned long long)h->ops[i].id, h->ops[i - 1].name,
                           h->ops[i].name);
    for (size_t i = 0; i < h->n_ops; i++) {
        cv_op *op = &h->ops[i];
        int p = op->parent == op->id ? -1 : op_index(h, op->parent);
        /* a parent must start before its child (ids are assigned in start order) */
        op->parent_ix = p >= 0 && (size_t)p < i ? p : -1;
    }

    if (o->device_path) {
        c->have_dev = true;
        if ((rc = cv_dev_parse(o->device_path, h->arena, &c->d, &st->input_bytes, err)))
            return rc;
        st->device_is_profiler_list = c->d.profiler_list;
        if ((rc = c->d.has_rf ? match_by_rf(c, err) : match_by_name(c, err)))
            return rc;
        size_t matchable = 0;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (size_t i = 0; i < h->n_ops; i++) {
            const cv_op *op = &h->ops[i];
            if (op->kind != OP_NORMAL)
                continue;
            matchable++;
            if (op->dev_dur_ns >= 0) {
                st->n_matched++;
                if (op->dev_ts_ns < lo)
                    lo = op->dev_ts_ns;
                if (op->dev_ts_ns + op->dev_dur_ns > hi)
                    hi = op->dev_ts_ns + op->dev_dur_ns;
            }
        }
        if ((rc = check_pair(c, matchable, err)))
            return rc;
        if (!c->d.profiler_list && (rc = build_gpu(c, err)))
            return rc;
        for (size_t i = 0; i < c->n_gpu; i++) {
            const cv_ev *e = &c->d.ev[c->gpu[i].ev];
            if (e->ts_ns < lo)
                lo = e->ts_ns;
            if (e->ts_ns + e->dur_ns > hi)
                hi = e->ts_ns + e->dur_ns;
        }
        st->trace_span_us = hi > lo ? (uint64_t)((hi - lo + 500) / 1000) : 0;
        if (st->n_unlinked_kernels)
            cv_warn(st, o->quiet, "%zu GPU events of %s have no launching host op (kept, "
                    "ordered on their stream only)", st->n_unlinked_kernels, o->device_path);
    }
    durations(c);
    if ((rc = cross_thread(c, prev, err)))
        return rc;
    if (c->n_edges)
        qsort(c->edges, c->n_edges, sizeof *c->edges, edge_cmp);
    if (st->n_zero_dur)
        cv_warn(st, o->quiet, "%zu host ops have no duration in %s (written as 0 us)",
                st->n_zero_dur, o->device_path ? "the device trace" : "the host trace");
    st->n_groups = h->n_pgs;
    st->rank = o->rank >= 0 ? o->rank : c->d.rank >= 0 ? c->d.rank : 0;
    st->arena_bytes = etk_arena_bytes(h->arena) + h->cap_ops * sizeof *h->ops +
                      c->d.cap_ev * sizeof *c->d.ev;
    return 0;
}

static etk_groups *make_groups(const conv *c)
{
    if (c->h.n_pgs == 0)
        return NULL;
    etk_groups *g = etk_groups_new();
    if (!g)
        return NULL;
    for (size_t i = 0; i < c->h.n_pgs; i++) {
        const cv_pg *pg = &c->h.pgs[i];
        if (etk_groups_find(g, pg->name))
            continue;
        if (etk_groups_add(g, pg->name, pg->ranks, pg->n_ranks)) {
            etk_groups_free(g);
            return NULL;
        }
    }
    return g;
}

static int emit_to_trace(void *ctx, const etk_node *n, etk_error *err)
{
    return etk_trace_add(ctx, n) ? 0 : etk_err(err, ETK_ENOMEM, "out of memory");
}

static int emit_to_writer(void *ctx, const etk_node *n, etk_error *err)
{
    return etk_writer_put(ctx, n, err);
}

static etk_convert_stats *stats_or(etk_convert_stats *st, etk_convert_stats *tmp)
{
    return st ? st : tmp;
}

int etk_convert_pytorch(const etk_convert_opts *o, etk_trace **out_trace, etk_groups **out_groups,
                        etk_convert_stats *stats, etk_error *err)
{
    etk_convert_stats tmp;
    etk_convert_stats *st = stats_or(stats, &tmp);
    conv c;
    uint64_t *prev = NULL;
    *out_trace = NULL;
    if (out_groups)
        *out_groups = NULL;
    int rc = convert(o, st, &c, &prev, err);
    etk_trace *t = NULL;
    etk_groups *g = NULL;
    if (!rc) {
        t = etk_trace_new("0.0.4");
        if (!t)
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
    }
    if (!rc)
        rc = emit_all(&c, prev, emit_to_trace, t, err);
    if (!rc && out_groups && c.h.n_pgs) {
        g = make_groups(&c);
        if (!g)
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
    }
    free(prev);
    conv_free(&c);
    if (rc) {
        etk_trace_free(t);
        etk_groups_free(g);
        return rc;
    }
    *out_trace = t;
    if (out_groups)
        *out_groups = g;
    return 0;
}

int etk_convert_pytorch_write(const etk_convert_opts *o, const char *prefix,
                              etk_convert_stats *stats, etk_error *err)
{
    etk_convert_stats tmp;
    etk_convert_stats *st = stats_or(stats, &tmp);
    conv c;
    uint64_t *prev = NULL;
    int rc = convert(o, st, &c, &prev, err);
    etk_writer *w = NULL;
    char *path = NULL;
    if (!rc) {
        size_t len = strlen(prefix) + 32;
        path = malloc(len);
        if (!path)
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
        else
            snprintf(path, len, "%s.%lld.et", prefix, (long long)st->rank);
    }
    if (!rc) {
        /* the host trace's header, as Chakra's converter keeps it */
        etk_attr meta[5];
        size_t nm = 0;
        if (c.h.schema)
            meta[nm++] = etk_attr_str("schema", c.h.schema);
        if (c.h.has_pid)
            meta[nm++] = etk_attr_u64("pid", (uint64_t)c.h.pid);
        if (c.h.time)
            meta[nm++] = etk_attr_str("time", c.h.time);
        if (c.h.has_start)
            meta[nm++] = etk_attr_u64("start_ts", (uint64_t)c.h.start_ts);
        if (c.h.has_finish)
            meta[nm++] = etk_attr_u64("finish_ts", (uint64_t)c.h.finish_ts);
        rc = etk_writer_open(path, "0.0.4", meta, nm, &w, err);
    }
    if (!rc) {
        rc = emit_all(&c, prev, emit_to_writer, w, err);
        if (rc) {
            etk_writer_abort(w);
        } else {
            rc = etk_writer_close(w, err);
        }
    }
    if (!rc && c.h.n_pgs) {
        etk_groups *g = make_groups(&c);
        if (!g) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
        } else {
            size_t len = strlen(prefix) + 8;
            char *gp = malloc(len);
            if (!gp) {
                rc = etk_err(err, ETK_ENOMEM, "out of memory");
            } else {
                snprintf(gp, len, "%s.json", prefix);
                rc = etk_groups_write(g, gp, err);
                free(gp);
            }
            etk_groups_free(g);
        }
    }
    free(path);
    free(prev);
    conv_free(&c);
    return rc;
}
