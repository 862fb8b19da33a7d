/* pytorch.c — `etkit convert pytorch`: turns the host op table (host.c) and the device events
 * (kineto.c) of one rank into Chakra nodes and communicator groups (the "◄── convert/" arrow of
 * DESIGN.md's data flow).
 *
 * The driver: host trace (host.c) or Kineto trace alone (kineto_only.c), device events
 * (kineto.c), linking (match.c), GPU nodes (gpu.c), durations (durations.c), then the host
 * dependencies across threads, the process groups (cut to the ranks written) and the writing.
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
 * Durations: durations.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"
#include "etkit/progress.h"

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

/* ---------- the conversion state ---------- */
int cv_add_edge(conv *c, uint32_t from, uint64_t to)
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
    free(c->d.pgs);
    free(c->gpu);
    free(c->edges);
    etk_arena_free(c->h.arena);
}

static bool emitted(const cv_op *op)
{
    return op->kind != OP_PROCESS_ROOT;
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
        if (!cv_top_level(c, op)) {
            /* a dependency on a top-level op means on its whole subtree: its last node */
            if (th[t].n_top && op->parent_ix >= 0)
                th[t].top_id[th[t].n_top - 1] = op->id;
            continue;
        }
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
                    if ((rc = cv_add_edge(c, (uint32_t)i, dep))) {
                        rc = etk_err(err, rc, "out of memory");
                        goto out;
                    }
                    c->st->n_cross_thread_deps++;
                }
            }
        } else if (last_top_thread >= 0 && last_top_thread != t) {
            if ((rc = cv_add_edge(c, (uint32_t)i, last_top_id))) {
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
    c->st->n_threads = nth;
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

static int emit_nodes(conv *c, const uint64_t *prev, emit_fn emit, void *ctx, etk_progress *pr,
                      etk_error *err)
{
    cv_host *h = &c->h;
    etk_attr at[16];
    uint64_t deps[1 + MAX_THREADS + 64]; /* parent, one per other thread, one per stream */
    size_t e = 0;
    int rc;
    for (size_t i = 0; i < h->n_ops; i++) {
        const cv_op *op = &h->ops[i];
        etk_progress_update(pr, i);
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
        bool cpu = true;
        if (op->flops && !op->flop_child) {
            at[na++] = etk_attr_i64("num_ops", (int64_t)op->flops);
            at[na++] = etk_attr_u64("tensor_size", op->flop_bytes);
            /* host trace alone: the op's GPU work, timed by the compute model */
            cpu = c->have_dev || op->dur_us > 0;
            c->st->n_flop_gpu_ops += !cpu;
        }
        at[na++] = etk_attr_bool("is_cpu_op", cpu);
        n.attr = at;
        n.n_attr = (uint32_t)na;
        if ((rc = emit(ctx, &n, err)))
            return rc;
        count_node(c->st, &n, cpu);
    }
    for (size_t i = 0; i < c->n_gpu; i++) {
        const gpu_node *g = &c->gpu[i];
        const cv_ev *ev = &c->d.ev[g->ev];
        etk_progress_update(pr, h->n_ops + i);
        etk_node n;
        memset(&n, 0, sizeof n);
        n.id = g->id;
        n.name = ev->name;
        n.type = g->type;
        if (c->alone && g->type != ETK_NODE_COMP) {
            /* one rank of a larger job: a 1-rank collective moves nothing, so the measured
             * kernel time is kept as GPU work */
            n.type = ETK_NODE_COMP;
            c->st->n_comm_replayed++;
        }
        uint64_t dd[3];
        size_t nd = 0;
        if (g->launch >= 0)
            dd[nd++] = h->ops[g->launch].id;
        if (g->prev)
            dd[nd++] = g->prev;
        if (g->wait)
            dd[nd++] = g->wait;
        n.data_deps = dd;
        n.n_data_deps = (uint32_t)nd;
        n.duration_micros = (uint64_t)((ev->dur_ns + 500) / 1000);
        n.start_time_micros = (uint64_t)(ev->ts_ns / 1000);
        size_t na = 0;
        at[na++] = etk_attr_bool("is_cpu_op", false);
        at[na++] = etk_attr_i64("stream", g->stream);
        if (n.type == ETK_NODE_COMP) {
        } else if (g->type == ETK_NODE_COLL) {
            at[na++] = etk_attr_i64("comm_type", g->coll);
            at[na++] = etk_attr_i64("comm_size", g->comm_size);
        } else if (g->type == ETK_NODE_SEND || g->type == ETK_NODE_RECV) {
            at[na++] = etk_attr_i64("comm_size", g->comm_size);
            if (g->peer >= 0)
                at[na++] = etk_attr_i32(g->type == ETK_NODE_SEND ? "comm_dst" : "comm_src",
                                        (int32_t)g->peer);
            at[na++] = etk_attr_i32("comm_tag", g->tag >= 0 ? (int32_t)g->tag : 0);
        }
        if (g->pg && n.type != ETK_NODE_COMP)
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

/* every node to emit, with the progress line of the phase */
static int emit_all(conv *c, const uint64_t *prev, emit_fn emit, void *ctx, etk_error *err)
{
    etk_progress pr;
    etk_progress_begin(&pr, c->o->progress, !c->o->progress, "host ops and GPU events written",
                       c->h.n_ops + c->n_gpu);
    int rc = emit_nodes(c, prev, emit, ctx, &pr, err);
    etk_progress_end(&pr);
    return rc;
}

/* ---------- driver ---------- */
/* The ranks of the job the trace belongs to: the Kineto world_size, else the largest rank a
 * process group names, plus one. */
static int64_t job_ranks(const conv *c)
{
    int64_t n = c->d.world_size > 0 ? c->d.world_size : 1;
    for (size_t i = 0; i < c->h.n_pgs; i++)
        for (uint32_t k = 0; k < c->h.pgs[i].n_ranks; k++)
            if ((int64_t)c->h.pgs[i].ranks[k] + 1 > n)
                n = (int64_t)c->h.pgs[i].ranks[k] + 1;
    return n;
}

/* Decide how the groups are written: all of them as declared (n_ranks 0: unknown), restricted
 * to ranks < n_ranks (a --ranks N run short of the job), or, for one rank converted alone, the
 * groups holding that rank as 1-rank groups of rank 0 (the rank itself is written as 0). */
static void plan_ranks(conv *c)
{
    etk_convert_stats *st = c->st;
    st->job_ranks = job_ranks(c);
    st->orig_rank = st->rank;
    if (c->o->n_ranks == 1 && st->job_ranks > 1) {
        c->alone = true;
        st->rank = 0;
    }
}

/* Durations, FLOPs and the host dependencies (program order, threads), edges sorted. */
static int assemble(conv *c, uint64_t **prev, etk_error *err)
{
    cv_durations(c);
    cv_shape_flops(c);
    int rc = cross_thread(c, prev, err);
    if (!rc && c->n_edges)
        qsort(c->edges, c->n_edges, sizeof *c->edges, edge_cmp);
    return rc;
}

static void finish_stats(conv *c)
{
    etk_convert_stats *st = c->st;
    st->n_groups = c->h.n_pgs;
    st->rank = c->o->rank >= 0 ? c->o->rank : c->d.rank >= 0 ? c->d.rank : 0;
    st->world_size = c->d.world_size;
    plan_ranks(c);
    st->arena_bytes = etk_arena_bytes(c->h.arena) + c->h.cap_ops * sizeof *c->h.ops +
                      c->d.cap_ev * sizeof *c->d.ev;
}

static void gpu_span(conv *c, int64_t lo, int64_t hi)
{
    for (size_t i = 0; i < c->n_gpu; i++) {
        const cv_ev *e = &c->d.ev[c->gpu[i].ev];
        if (e->ts_ns < lo)
            lo = e->ts_ns;
        if (e->ts_ns + e->dur_ns > hi)
            hi = e->ts_ns + e->dur_ns;
    }
    c->st->trace_span_us = hi > lo ? (uint64_t)((hi - lo + 500) / 1000) : 0;
}

/* A Kineto trace alone: host ops from its cpu_ops (kineto_only.c), then the same pipeline. */
static int convert_kineto_only(conv *c, uint64_t **prev, etk_error *err)
{
    const etk_convert_opts *o = c->o;
    etk_convert_stats *st = c->st;
    int rc;
    c->have_dev = true;
    c->kineto_only = true;
    if ((rc = cv_dev_parse(o->device_path, c->h.arena, &c->d, &st->input_bytes, o->progress, err)))
        return rc;
    if (c->d.profiler_list)
        return etk_err(err, ETK_EINVAL, "%s: a PyTorch 1.13 profiler list has no GPU events and "
                       "no ids: convert it with its host trace (--host)", o->device_path);
    if (c->d.rank >= 0 && o->rank >= 0 && c->d.rank != o->rank)
        return etk_err(err, ETK_EINVAL, "%s is the trace of rank %lld (distributedInfo.rank) but "
                       "--rank is %lld", o->device_path, (long long)c->d.rank,
                       (long long)o->rank);
    if ((rc = cv_host_from_kineto(c, err)))
        return rc;
    snprintf(st->schema, sizeof st->schema, "kineto");
    st->schema_known = true;
    st->n_host_nodes = c->h.n_ops;
    st->n_matched = c->h.n_ops;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < c->h.n_ops; i++) {
        const cv_op *op = &c->h.ops[i];
        if (op->dev_ts_ns < lo)
            lo = op->dev_ts_ns;
        if (op->dev_ts_ns + op->dev_dur_ns > hi)
            hi = op->dev_ts_ns + op->dev_dur_ns;
    }
    if ((rc = cv_build_gpu(c, err)))
        return rc;
    gpu_span(c, lo, hi);
    if (st->n_kineto_steps > 1 && !o->quiet)
        fprintf(stderr, "etkit convert: note: %s holds %zu ProfilerSteps; converting the last, "
                "%s (%.3f ms)\n", o->device_path, st->n_kineto_steps, st->kineto_step,
                (double)st->kineto_step_ns / 1e6);
    if (st->n_dropped_gpu && !o->quiet)
        fprintf(stderr, "etkit convert: note: %zu GPU events launched outside %s were left "
                "out\n", st->n_dropped_gpu, st->kineto_step);
    if ((rc = assemble(c, prev, err)))
        return rc;
    finish_stats(c);
    return 0;
}

static int convert(const etk_convert_opts *o, etk_convert_stats *st, conv *c, uint64_t **prev,
                   etk_error *err)
{
    memset(c, 0, sizeof *c);
    memset(st, 0, sizeof *st);
    c->o = o;
    c->st = st;
    if (!o || (!o->host_path && !o->device_path))
        return etk_err(err, ETK_EINVAL, "convert pytorch: a host execution trace (--host) or a "
                       "Kineto trace (--device) is required");
    c->h.arena = etk_arena_new(0);
    if (!c->h.arena)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    int rc;
    if (!o->host_path)
        return convert_kineto_only(c, prev, err);
    if ((rc = cv_host_parse(o->host_path, &c->h, st, o->progress, err)))
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
        if ((rc = cv_dev_parse(o->device_path, h->arena, &c->d, &st->input_bytes, o->progress, err)))
            return rc;
        st->device_is_profiler_list = c->d.profiler_list;
        if ((rc = c->d.has_rf ? cv_match_by_rf(c, err) : cv_match_by_name(c, err)))
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
        if ((rc = cv_check_pair(c, matchable, err)))
            return rc;
        c->win_lo = lo;
        c->win_hi = hi;
        if (!c->d.profiler_list && (rc = cv_build_gpu(c, err)))
            return rc;
        gpu_span(c, lo, hi);
        if (st->n_dropped_gpu)
            cv_warn(st, o->quiet, "%s covers more than the host trace: %zu GPU events launched "
                    "outside the matched host ops' window (%.3f ms) were dropped",
                    o->device_path, st->n_dropped_gpu, (double)(c->win_hi - c->win_lo) / 1e6);
        if (st->n_unlinked_kernels)
            cv_warn(st, o->quiet, "%zu GPU events of %s have no launching host op (kept, "
                    "ordered on their stream only)", st->n_unlinked_kernels, o->device_path);
    }
    if ((rc = assemble(c, prev, err)))
        return rc;
    if (st->n_zero_dur)
        cv_warn(st, o->quiet, "%zu host ops have no duration in %s (written as 0 us)",
                st->n_zero_dur, o->device_path ? "the device trace" : "the host trace");
    finish_stats(c);
    return 0;
}

static etk_groups *make_groups(conv *c)
{
    if (c->h.n_pgs == 0)
        return NULL;
    etk_groups *g = etk_groups_new();
    if (!g)
        return NULL;
    uint32_t me = (uint32_t)c->st->orig_rank, zero = 0;
    int64_t lim = c->o->n_ranks;
    uint32_t *keep = malloc(sizeof(uint32_t) * (job_ranks(c) + 1));
    c->st->n_groups = 0;
    c->st->n_groups_dropped = 0;
    for (size_t i = 0; keep && i < c->h.n_pgs; i++) {
        const cv_pg *pg = &c->h.pgs[i];
        if (etk_groups_find(g, pg->name))
            continue;
        const uint32_t *r = pg->ranks;
        uint32_t n = pg->n_ranks;
        if (c->alone) {
            bool has = false;
            for (uint32_t k = 0; k < n && !has; k++)
                has = r[k] == me;
            r = &zero;
            n = has ? 1 : 0;
        } else if (lim > 0) {
            uint32_t m = 0;
            for (uint32_t k = 0; k < n; k++)
                if ((int64_t)r[k] < lim)
                    keep[m++] = r[k];
            if (m < n)
                c->st->n_group_ranks_dropped += n - m;
            r = keep;
            n = m;
        }
        if (n == 0) {
            c->st->n_groups_dropped++;
            continue;
        }
        if (etk_groups_add(g, pg->name, r, n)) {
            etk_groups_free(g);
            free(keep);
            return NULL;
        }
        c->st->n_groups++;
    }
    if (!keep) {
        etk_groups_free(g);
        return NULL;
    }
    free(keep);
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

