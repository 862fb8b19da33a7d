/* gpu.c — the GPU side of a converted rank: kernels, memcpys and memsets become GPU nodes linked
 * to their launching host op (correlation -> runtime call -> External id -> cpu_op -> host op),
 * NCCL kernels become collectives or point-to-point nodes, each stream is ordered, a stream that
 * waits for another (cuda_sync "Stream Wait Event", cudaStreamWaitEvent) depends on it, and a
 * host op that synchronizes waits for the GPU work launched before it. GPU work outside the
 * window of the matched host ops (a device trace covering more iterations) is dropped. */
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"

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
        ptrdiff_t k = cv_kv_find(L->ext, L->n_ext, r->ext_id);
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
    /* cuda/hip Device/Stream/Event Synchronize; a plain cudaMemcpy blocks the same way */
    return strstr(name, "Synchronize") != NULL || !strcmp(name, "cudaMemcpy") ||
           !strcmp(name, "hipMemcpy");
}

/* The GPU node on stream s launched last at or before time t (NULL). */
static gpu_node *last_launched(conv *c, int64_t s, int64_t t, bool other)
{
    gpu_node *best = NULL;
    for (size_t k = 0; k < c->n_gpu; k++) {
        gpu_node *g = &c->gpu[k];
        if ((other ? g->stream != s : g->stream == s) && g->launch_ts <= t &&
            (!best || g->launch_ts >= best->launch_ts))
            best = g;
    }
    return best;
}

/* The GPU node on stream s (any stream: s < 0, launched by thread tid) launched first at or
 * after time t (NULL). */
static gpu_node *first_launched(conv *c, int64_t s, int64_t tid, int64_t t)
{
    gpu_node *best = NULL;
    for (size_t k = 0; k < c->n_gpu; k++) {
        gpu_node *g = &c->gpu[k];
        if ((s >= 0 ? g->stream == s : g->launch_tid == tid) && g->launch_ts >= t &&
            (!best || g->launch_ts < best->launch_ts))
            best = g;
    }
    return best;
}

static void add_wait(conv *c, gpu_node *waiting, const gpu_node *waited)
{
    /* the waited-for op started first on the GPU, so its id is smaller: acyclic */
    if (!waiting || !waited || waited->id >= waiting->id || waited->stream == waiting->stream ||
        waiting->wait >= waited->id)
        return;
    if (!waiting->wait)
        c->st->n_stream_wait_deps++;
    waiting->wait = waited->id;
}

/* Stream-to-stream dependencies. Kineto's cuda_sync "Stream Wait Event" names the waiting
 * stream, the stream waited for and the correlation id of the cudaEventRecord: the first op
 * launched on the waiting stream after the cudaStreamWaitEvent call depends on the last op
 * launched on the other stream before the record. Older traces only have the
 * cudaStreamWaitEvent runtime call: the next op its thread launches waits for the op launched
 * last on any other stream before the call (ProcessGroupNCCL's pattern: the NCCL stream waits
 * for the compute stream before a collective, the compute stream for the NCCL stream after). */
static int stream_waits(conv *c, const kv *corr, size_t n_corr, etk_error *err)
{
    const cv_ev *ev = c->d.ev;
    kv *synced = malloc(sizeof(kv) * (c->d.n_ev + 1));
    size_t n_synced = 0;
    if (!synced)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->d.n_ev; i++) {
        const cv_ev *e = &ev[i];
        if (e->cat != EV_SYNC || e->wait_stream < 0 || e->stream < 0)
            continue;
        ptrdiff_t k = e->corr >= 0 ? cv_kv_find(corr, n_corr, e->corr) : -1;
        int64_t call = k >= 0 ? ev[corr[k].ix].ts_ns : e->ts_ns;
        ptrdiff_t q = e->wait_corr >= 0 ? cv_kv_find(corr, n_corr, e->wait_corr) : -1;
        int64_t rec = q >= 0 ? ev[corr[q].ix].ts_ns : call;
        add_wait(c, first_launched(c, e->stream, -1, call),
                 last_launched(c, e->wait_stream, rec, false));
        if (e->corr >= 0)
            synced[n_synced++] = (kv){e->corr, (uint32_t)i};
    }
    qsort(synced, n_synced, sizeof(kv), cv_kv_cmp);
    for (size_t i = 0; i < c->d.n_ev; i++) {
        const cv_ev *e = &ev[i];
        if (e->cat != EV_RUNTIME || strcmp(e->name, "cudaStreamWaitEvent") ||
            (e->corr >= 0 && cv_kv_find(synced, n_synced, e->corr) >= 0))
            continue;
        gpu_node *waiting = first_launched(c, -1, e->tid, e->ts_ns);
        if (waiting)
            add_wait(c, waiting, last_launched(c, waiting->stream, e->ts_ns, true));
    }
    free(synced);
    return 0;
}

int cv_build_gpu(conv *c, etk_error *err)
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
    qsort(L.ext, L.n_ext, sizeof(kv), cv_kv_cmp);
    qsort(L.cpu_tid, L.n_cpu, sizeof(tev), tev_cmp);
    qsort(corr, n_corr, sizeof(kv), cv_kv_cmp);

    size_t n = 0;
    for (size_t i = 0; i < d->n_ev; i++) {
        if (ev[i].cat != EV_KERNEL && ev[i].cat != EV_MEMCPY && ev[i].cat != EV_MEMSET)
            continue;
        gpu_node *g = &c->gpu[n];
        memset(g, 0, sizeof *g);
        g->ev = (uint32_t)i;
        g->ts = ev[i].ts_ns;
        g->launch = -1;
        g->launch_ts = ev[i].ts_ns;
        g->launch_tid = -1;
        g->stream = ev[i].stream >= 0 ? ev[i].stream : ev[i].tid;
        g->peer = g->tag = -1;
        ptrdiff_t k = ev[i].corr >= 0 ? cv_kv_find(corr, n_corr, ev[i].corr) : -1;
        const cv_ev *r = k >= 0 ? &ev[corr[k].ix] : NULL;
        if (r) {
            g->launch_ts = r->ts_ns;
            g->launch_tid = r->tid;
            g->launch = launcher(c, &L, r);
        }
        /* a device trace covering more than the host ops (more iterations, or outside the
         * chosen ProfilerStep): keep only the GPU work launched inside the ops' window */
        if (c->win_hi > c->win_lo && g->launch < 0 &&
            (g->launch_ts < c->win_lo || g->launch_ts > c->win_hi)) {
            c->st->n_dropped_gpu++;
            continue;
        }
        n++;
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
    size_t n_streams = 0, n_unnamed = 0;
    char unnamed[200] = "";
    for (size_t i = 0; i < n; i++) {
        gpu_node *g = &c->gpu[i];
        const cv_ev *e = &ev[g->ev];
        g->id = c->h.max_id + 1 + i;
        g->type = ETK_NODE_COMP;
        g->coll = -1;
        if (e->cat == EV_KERNEL && is_nccl_kernel(e->name)) {
            const char *lname = g->launch >= 0 ? c->h.ops[g->launch].name : "";
            int coll = etk_convert_coll_from_name(e->name);
            if (coll < 0 || strstr(e->name, "SendRecv")) {
                /* SendRecv kernels implement all-to-all and point-to-point alike: the launching
                 * op (or an ancestor) says which: nccl:all_to_all -> ALL_TO_ALL, send/recv ->
                 * SEND/RECV with the peer and tag of its integer inputs */
                coll = -1;
                int32_t a = g->launch;
                for (int depth = 0; a >= 0 && depth < 8; depth++, a = c->h.ops[a].parent_ix) {
                    const cv_op *op = &c->h.ops[a];
                    int oc = etk_convert_coll_from_name(op->name);
                    if (oc >= 0) {
                        coll = oc;
                        break;
                    }
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
                if (g->type == ETK_NODE_COMP && coll < 0 && e->coll_name)
                    coll = etk_convert_coll_from_name(e->coll_name);
                if (g->type == ETK_NODE_COMP && coll < 0) {
                    coll = ETK_COLL_ALL_REDUCE; /* unknown NCCL kernel: keep it a collective */
                    if (n_unnamed++ == 0)
                        snprintf(unnamed, sizeof unnamed, "\"%s\" (launched by \"%s\")", e->name,
                                 lname);
                }
            }
            if (g->type == ETK_NODE_COMP) {
                g->type = ETK_NODE_COLL;
                g->coll = coll;
            }
            if (e->msg_bytes >= 0)
                g->comm_size = e->msg_bytes; /* the kernel's own args (PyTorch 2.1+) */
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

    if (n_unnamed)
        cv_warn(c->st, c->o->quiet, "%zu NCCL kernels name no collective and neither does their "
                "launching op; written as ALL_REDUCE (the first: %s)", n_unnamed, unnamed);
    if ((rc = stream_waits(c, corr, n_corr, err)))
        goto out;

    /* synchronizing runtime calls: the issuing host op waits for the GPU work launched before
     * it. Only edges whose GPU side depends on strictly older host ops are kept (acyclic). */
    for (size_t i = 0; i < d->n_ev; i++) {
        if (ev[i].cat != EV_RUNTIME || !is_sync(ev[i].name))
            continue;
        int32_t hix = launcher(c, &L, &ev[i]);
        if (hix < 0)
            continue;
        uint64_t hid = c->h.ops[hix].id;
        int64_t gpu_end = INT64_MIN;
        for (size_t s = 0; s < n_streams; s++) {
            const gpu_node *best = NULL;
            for (size_t k = 0; k < n; k++)
                if (c->gpu[k].stream == streams[s].stream && c->gpu[k].launch_ts < ev[i].ts_ns)
                    best = &c->gpu[k];
            if (best && best->max_launch_id < hid) {
                if (cv_add_edge(c, (uint32_t)hix, best->id)) {
                    rc = etk_err(err, ETK_ENOMEM, "out of memory");
                    goto out;
                }
                c->st->n_sync_deps++;
                const cv_ev *b = &ev[best->ev];
                if (b->ts_ns + b->dur_ns > gpu_end)
                    gpu_end = b->ts_ns + b->dur_ns;
            }
        }
        /* the part of the time blocked in the call that the GPU work explains (until that work
         * ended) is the wait the dependency models: it is not the op's own work (replaying
         * both would count it twice). The rest (GPU initialisation, lazy loading: nothing the
         * trace records) stays the op's time. */
        if (gpu_end > ev[i].ts_ns) {
            int64_t w = gpu_end - ev[i].ts_ns;
            c->h.ops[hix].sync_ns += w < ev[i].dur_ns ? w : ev[i].dur_ns;
        }
    }
out:
    free(L.ext);
    free(L.cpu_tid);
    free(corr);
    return rc;
}
