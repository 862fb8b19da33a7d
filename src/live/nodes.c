/* nodes.c — live mode's nodes: each rank's messages become Chakra nodes in a batch the engine
 * takes when it next advances (coord.c); kernels are timed from --kernels once per name, and the
 * run is written as a workload (--record). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/coord_priv.h"

static int add_attr(etk_attr *a, int *na, etk_attr v)
{
    a[(*na)++] = v;
    return 0;
}

/* Batches are many and most are small (a polling rank's is two nodes: its host time and its
 * WAIT), and each is kept as long as the run: 2 KiB arena blocks and room for 4 nodes at first
 * (the defaults, 16 KiB and 64 nodes, made ~23 KiB per batch: HPCC's polling loops on 4 ranks
 * took 11 GB in 10 minutes). */
static etk_trace *new_batch(void)
{
    etk_trace *t = etk_trace_new(NULL);
    if (!t)
        return NULL;
    etk_arena *a = etk_arena_new(2 << 10);
    etk_node *nodes = malloc(4 * sizeof *nodes);
    if (!a || !nodes) {
        etk_arena_free(a);
        free(nodes);
        etk_trace_free(t);
        return NULL;
    }
    etk_arena_free(t->arena);
    t->arena = a;
    t->nodes = nodes;
    t->cap_nodes = 4;
    return t;
}

static kstat *kernel_stat(coord *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_ks; i++)
        if (!strcmp(c->ks[i].name, name))
            return &c->ks[i];
    kstat *k = realloc(c->ks, (c->n_ks + 1) * sizeof *k);
    if (!k)
        return NULL;
    c->ks = k;
    k = &c->ks[c->n_ks];
    memset(k, 0, sizeof *k);
    k->name = strdup(name);
    if (!k->name)
        return NULL;
    if (!etk_live_kernel_ns(c->o->kernels, c->cl, name, &k->ns)) {
        k->ns = c->o->kernel_default_ns;
        k->guessed = true;
    }
    c->n_ks++;
    return k;
}

/* A send (+1) or receive (-1) on channel (src, dst, tag): keeps each receiver's count of channels
 * with a send no receive matches yet (the coordinator's rule for ranks inside a real receive). */
static int chan_count(coord *c, uint32_t src, uint32_t dst, uint32_t tag, int delta, etk_error *err)
{
    if (2 * (c->n_chans + 1) > c->cap_chans) {
        uint32_t cap = c->cap_chans ? 2 * c->cap_chans : 1024;
        lchan *nc = calloc(cap, sizeof *nc);
        if (!nc)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < c->cap_chans; i++)
            if (c->chans[i].used) {
                const lchan *o = &c->chans[i];
                uint32_t h = (o->src * 2654435761u ^ o->dst * 40503u ^ o->tag * 97u) & (cap - 1);
                while (nc[h].used)
                    h = (h + 1) & (cap - 1);
                nc[h] = *o;
            }
        free(c->chans);
        c->chans = nc;
        c->cap_chans = cap;
    }
    uint32_t h = (src * 2654435761u ^ dst * 40503u ^ tag * 97u) & (c->cap_chans - 1);
    while (c->chans[h].used && !(c->chans[h].src == src && c->chans[h].dst == dst && c->chans[h].tag == tag))
        h = (h + 1) & (c->cap_chans - 1);
    lchan *ch = &c->chans[h];
    if (!ch->used) {
        *ch = (lchan){.src = src, .dst = dst, .tag = tag, .used = true};
        c->n_chans++;
    }
    bool was = ch->bal > 0;
    ch->bal += delta;
    c->r[dst].unmatched_in += (ch->bal > 0) - was;
    return 0;
}

/* One message's node into the rank's pending batch. */
int live_take_node(coord *c, uint32_t rank, const etk_live_msg *m, etk_error *err)
{
    lrank *R = &c->r[rank];
    if (!R->batch && !(R->batch = new_batch()))
        return etk_err(err, ETK_ENOMEM, "out of memory");
    etk_attr a[16];
    int na = 0;
    uint64_t dur = m->dur_ns;
    if (m->flags & ETK_LF_CPU)
        add_attr(a, &na, etk_attr_bool("is_cpu_op", true));
    if (m->flags & ETK_LF_KERNEL) {
        kstat *k = kernel_stat(c, m->name);
        if (!k)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        k->count++;
        dur = k->ns;
    }
    if (dur)
        add_attr(a, &na, etk_attr_u64("duration_ns", dur));
    if (m->flags & ETK_LF_GEMM) {
        add_attr(a, &na, etk_attr_str("op_kind", "gemm"));
        add_attr(a, &na, etk_attr_i64("gemm_m", m->m));
        add_attr(a, &na, etk_attr_i64("gemm_n", m->n));
        add_attr(a, &na, etk_attr_i64("gemm_k", m->k));
        add_attr(a, &na, etk_attr_i64("num_ops", (int64_t)m->flops));
        if (m->coll > 0 && m->coll <= ETK_PREC_COUNT) { /* the dtype the call names */
            add_attr(a, &na, etk_attr_str("precision", etk_precision_name(m->coll - 1)));
            /* a GPU without that peak: the cluster's precision (said once per precision) */
            if (c->cl->gpu.peak_flops[m->coll - 1] <= 0 && !(c->prec_warned & (1u << (m->coll - 1)))) {
                c->prec_warned |= 1u << (m->coll - 1);
                fprintf(stderr, "etkit live: %.64s runs in %s, but the GPU %s has no %s peak: timed at the %s peak "
                        "(give gpu.peak_tflops.%s in a cluster file)\n", m->name, etk_precision_name(m->coll - 1),
                        c->cl->gpu.name, etk_precision_name(m->coll - 1), etk_precision_name((int)c->cl->precision),
                        etk_precision_name(m->coll - 1));
            }
        }
    }
    if (m->type == ETK_NODE_COLL) {
        add_attr(a, &na, etk_attr_i64("comm_type", m->coll));
        add_attr(a, &na, etk_attr_i64("comm_size", (int64_t)m->bytes));
        add_attr(a, &na, etk_attr_str("pg_name", m->group));
    } else if (m->type == ETK_NODE_SEND || m->type == ETK_NODE_RECV) {
        /* peer: a rank of the communicator; tag: the communicator's index and the program's tag
         * (one channel per pair, communicator and tag, matched in order) */
        const lcomm *cm = live_find_comm(c, m->group);
        if (!cm || m->peer < 0 || (uint32_t)m->peer >= cm->n)
            return etk_err(err, ETK_EINVAL, "rank %u: %.64s to peer %d of communicator %.64s: no such member", rank,
                           m->name, m->peer, m->group);
        uint32_t peer = cm->ranks[m->peer], tag = ((uint32_t)(cm - c->comms) << 16) | (m->tag & 0xffff);
        add_attr(a, &na, etk_attr_i64("comm_size", (int64_t)m->bytes));
        add_attr(a, &na, etk_attr_i32(m->type == ETK_NODE_SEND ? "comm_dst" : "comm_src", (int32_t)peer));
        add_attr(a, &na, etk_attr_i32("comm_tag", (int32_t)tag));
        int rc = m->type == ETK_NODE_SEND ? chan_count(c, rank, peer, tag, +1, err)
                                          : chan_count(c, peer, rank, tag, -1, err);
        if (rc)
            return rc;
    } else if (m->bytes) {
        add_attr(a, &na, etk_attr_u64("tensor_size", m->bytes));
    }
    if (m->mem_alloc > 0)
        add_attr(a, &na, etk_attr_u64("mem_alloc_bytes", (uint64_t)m->mem_alloc));
    if (m->mem_free > 0)
        add_attr(a, &na, etk_attr_u64("mem_free_bytes", (uint64_t)m->mem_free));
    char name[sizeof m->name + 1];
    memcpy(name, m->name, sizeof m->name);
    name[sizeof m->name] = 0;
    etk_node n = {
        .id = m->id,
        .name = name,
        .type = m->type,
        .n_data_deps = m->n_deps <= ETK_LIVE_MAX_DEPS ? m->n_deps : ETK_LIVE_MAX_DEPS,
        .data_deps = m->deps,
        .n_attr = (uint32_t)na,
        .attr = a,
    };
    if (!etk_trace_add(R->batch, &n))
        return etk_err(err, ETK_ENOMEM, "out of memory");
    return 0;
}

int live_flush(coord *c, etk_error *err)
{
    for (uint32_t i = 0; i < c->n; i++) {
        lrank *R = &c->r[i];
        if (!R->batch || !R->batch->n_nodes)
            continue;
        if (R->n_tr == R->cap_tr) {
            uint32_t cap = R->cap_tr ? 2 * R->cap_tr : 16;
            etk_trace **t = realloc(R->tr, cap * sizeof *t);
            if (!t)
                return etk_err(err, ETK_ENOMEM, "out of memory");
            R->tr = t;
            R->cap_tr = cap;
        }
        R->tr[R->n_tr++] = R->batch;
        etk_trace *b = R->batch;
        R->batch = NULL;
        if (etk_sim_add_rank_trace(c->s, i, b, err) != 0)
            return etk_err_prefix(err, "rank %u", i);
    }
    return 0;
}

int live_write_record(coord *c, etk_error *err)
{
    etk_workload w;
    memset(&w, 0, sizeof w);
    w.prefix = c->o->record_prefix;
    w.n_ranks = c->n;
    w.ranks = calloc(c->n, sizeof *w.ranks);
    if (!w.ranks)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    int rc = 0;
    for (uint32_t i = 0; i < c->n && !rc; i++) {
        etk_trace *t = etk_trace_new("etkit-live");
        if (!t) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
            break;
        }
        w.ranks[i] = t;
        for (uint32_t b = 0; b < c->r[i].n_tr && !rc; b++)
            for (size_t k = 0; k < c->r[i].tr[b]->n_nodes && !rc; k++)
                if (!etk_trace_add(t, &c->r[i].tr[b]->nodes[k]))
                    rc = etk_err(err, ETK_ENOMEM, "out of memory");
    }
    w.groups = c->groups->n_groups ? c->groups : NULL;
    if (!rc)
        rc = etk_workload_write(&w, c->o->record_prefix, err);
    for (uint32_t i = 0; i < c->n; i++)
        etk_trace_free(w.ranks[i]);
    free(w.ranks);
    return rc;
}

void live_kernel_report(coord *c)
{
    FILE *f = c->o->log ? c->o->log : stderr;
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->n_ks; i++)
        n += c->ks[i].guessed;
    if (!n)
        return;
    fprintf(f, "etkit live: %u kernel(s) in no --kernels entry, timed at --kernel-default-ns %" PRIu64 " ns:\n", n,
            c->o->kernel_default_ns);
    for (uint32_t i = 0; i < c->n_ks; i++)
        if (c->ks[i].guessed)
            fprintf(f, "  %s  launches %" PRIu64 "\n", c->ks[i].name, c->ks[i].count);
}
