/* nodes.c — live mode's nodes: each rank's messages become Chakra nodes in a batch the engine
 * takes when it next advances (coord.c); kernels are timed from --kernels once per name, and the
 * run is written as a workload (--record). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/coord_priv.h"
#include "util/kmap.h"

static int add_attr(etk_attr *a, int *na, etk_attr v)
{
    a[(*na)++] = v;
    return 0;
}

/* A rank's nodes go into chunks of LIVE_CHUNK nodes (the engine points into them, so a chunk's node
 * array is allocated once, never moved); the nodes not yet given to the engine are the last chunk's
 * from R->pend on. Until s24 each engine batch was a trace of its own (2 KiB arena block, intern
 * table, node array) and most are two nodes (a polling rank's host time and WAIT): about 1.5 KiB
 * per node, HPCC on 32 ranks took 3.3 GB in 7.5 minutes (bench/RESULTS.md "s25-live"). */
#define LIVE_CHUNK 4096

/* The last chunk with room for one more node: a new one when it is full, into which the nodes
 * not yet given to the engine move (nothing points at them yet). */
static etk_trace *chunk_for_add(lrank *R)
{
    etk_trace *C = R->n_chunk ? R->chunk[R->n_chunk - 1] : NULL;
    if (C && C->n_nodes < C->cap_nodes)
        return C;
    size_t npend = C ? C->n_nodes - R->pend : 0, cap = LIVE_CHUNK;
    while (cap < 2 * (npend + 1))
        cap *= 2;
    if (R->n_chunk == R->cap_chunk) {
        uint32_t nc = R->cap_chunk ? 2 * R->cap_chunk : 8;
        etk_trace **a = realloc(R->chunk, nc * sizeof *a);
        if (!a)
            return NULL;
        R->chunk = a;
        R->cap_chunk = nc;
    }
    etk_trace *t = etk_trace_new(NULL);
    etk_node *nodes = t ? malloc(cap * sizeof *nodes) : NULL;
    if (!nodes) {
        etk_trace_free(t);
        return NULL;
    }
    t->nodes = nodes;
    t->cap_nodes = cap;
    for (size_t k = 0; k < npend; k++) {
        etk_node *p = etk_trace_add(t, &C->nodes[R->pend + k]);
        if (!p) {
            etk_trace_free(t);
            return NULL;
        }
        p->name = C->nodes[R->pend + k].name; /* interned (take_node) */
    }
    if (C) {
        C->n_nodes = R->pend;
        if (!C->n_nodes) { /* nothing of it went to the engine */
            etk_trace_free(C);
            R->n_chunk--;
        }
    }
    R->chunk[R->n_chunk++] = t;
    R->pend = 0;
    return t;
}

/* One copy of each node name and group name for the whole run (nodes.c's only strings per node:
 * "MPI_Send", a kernel's name, "WAIT cudaStreamSynchronize" ...). NULL on out-of-memory. */
static const char *intern(coord *c, const char *s)
{
    if (2 * (c->n_names + 1) > c->cap_names) {
        uint32_t cap = c->cap_names ? 2 * c->cap_names : 256;
        char **t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (uint32_t i = 0; i < c->cap_names; i++)
            if (c->names[i]) {
                uint32_t h = (uint32_t)etk_hash_str(c->names[i]) & (cap - 1);
                while (t[h])
                    h = (h + 1) & (cap - 1);
                t[h] = c->names[i];
            }
        free(c->names);
        c->names = t;
        c->cap_names = cap;
    }
    uint32_t h = (uint32_t)etk_hash_str(s) & (c->cap_names - 1);
    while (c->names[h] && strcmp(c->names[h], s))
        h = (h + 1) & (c->cap_names - 1);
    if (!c->names[h]) {
        if (!(c->names[h] = strdup(s)))
            return NULL;
        c->n_names++;
    }
    return c->names[h];
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

/* A send (+1, node id of the sender) or receive (-1) on channel (src, dst, tag): keeps each
 * receiver's count of channels with a send no receive matches yet (the coordinator's rule for
 * ranks inside a real receive) and each channel's unmatched sends in order (probes, live_query). */
static int chan_count(coord *c, uint32_t src, uint32_t dst, uint32_t tag, int delta, uint64_t id, etk_error *err)
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
    if (delta > 0 && ch->bal >= 0) { /* unmatched: queued */
        if (ch->qh + ch->qn == ch->qcap) {
            if (ch->qh) { /* compact */
                memmove(ch->q, ch->q + ch->qh, ch->qn * sizeof *ch->q);
                ch->qh = 0;
            } else {
                uint32_t cap = ch->qcap ? 2 * ch->qcap : 4;
                uint64_t *q = realloc(ch->q, cap * sizeof *q);
                if (!q)
                    return etk_err(err, ETK_ENOMEM, "out of memory");
                ch->q = q;
                ch->qcap = cap;
            }
        }
        ch->q[ch->qh + ch->qn++] = id;
        c->r[src].unmatched_out++;
    } else if (delta < 0 && ch->bal > 0 && ch->qn) { /* matches the oldest */
        c->r[src].unmatched_out--;
        ch->qh++;
        if (--ch->qn == 0)
            ch->qh = 0;
    }
    ch->bal += delta;
    c->r[dst].unmatched_in += (ch->bal > 0) - was;
    return 0;
}

/* Node id of rank is a send no receive matches yet. */
static bool unmatched_send(const coord *c, uint32_t rank, uint64_t id)
{
    for (uint32_t h = 0; c->r[rank].unmatched_out && h < c->cap_chans; h++) {
        const lchan *ch = &c->chans[h];
        if (ch->used && ch->src == rank)
            for (uint32_t k = 0; k < ch->qn; k++)
                if (ch->q[ch->qh + k] == id)
                    return true;
    }
    return false;
}

uint64_t live_query(coord *c, uint32_t rank, uint64_t t)
{
    const lrank *R = &c->r[rank];
    uint64_t bits = 0, end;
    for (uint32_t k = 0; k < R->n_q; k++)
        if (etk_sim_node_end(c->s, rank, R->q_ids[k], &end) == 1 && end <= t && !unmatched_send(c, rank, R->q_ids[k]))
            bits |= 1ull << k;
    if (!R->probe || !R->unmatched_in)
        return bits;
    /* a probe: the oldest unmatched send of each channel into the rank that it matches (MPI
     * matches a channel's messages in order) */
    for (uint32_t h = 0; h < c->cap_chans; h++) {
        const lchan *ch = &c->chans[h];
        if (!ch->used || ch->dst != rank || !ch->qn || ch->tag >> 16 != R->probe_comm ||
            (R->probe_src >= 0 && ch->src != (uint64_t)R->probe_src) ||
            (R->probe_tag >= 0 && (int64_t)(ch->tag & 0xffff) != (R->probe_tag & 0xffff)))
            continue;
        if (etk_sim_node_end(c->s, ch->src, ch->q[ch->qh], &end) == 1 && end <= t)
            return bits | 1ull << R->n_q;
    }
    return bits;
}

/* One message's node into the rank's pending batch. */
int live_take_node(coord *c, uint32_t rank, const etk_live_msg *m, etk_error *err)
{
    lrank *R = &c->r[rank];
    etk_attr a[16];
    int na = 0, pg = -1;
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
        add_attr(a, &na, etk_attr_str("pg_name", "")); /* interned below */
        pg = na - 1;
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
        int rc = m->type == ETK_NODE_SEND ? chan_count(c, rank, peer, tag, +1, m->id, err)
                                          : chan_count(c, peer, rank, tag, -1, 0, err);
        if (rc)
            return rc;
    } else if (m->bytes) {
        add_attr(a, &na, etk_attr_u64("tensor_size", m->bytes));
    }
    if (m->type == ETK_NODE_MEM_LOAD || m->type == ETK_NODE_MEM_STORE) /* host<->device: the copy engine
                                                                           of its direction (engine: K_COPY) */
        add_attr(a, &na, etk_attr_i64("copy_engine", m->type == ETK_NODE_MEM_LOAD ? 1 : 2));
    if (m->mem_alloc > 0)
        add_attr(a, &na, etk_attr_u64("mem_alloc_bytes", (uint64_t)m->mem_alloc));
    if (m->mem_free > 0)
        add_attr(a, &na, etk_attr_u64("mem_free_bytes", (uint64_t)m->mem_free));
    char name[sizeof m->name + 1], group[sizeof m->group + 1];
    memcpy(name, m->name, sizeof m->name);
    name[sizeof m->name] = 0;
    memcpy(group, m->group, sizeof m->group);
    group[sizeof m->group] = 0;
    const char *iname = intern(c, name), *igroup = pg >= 0 ? intern(c, group) : NULL;
    etk_trace *C = chunk_for_add(R);
    if (!iname || (pg >= 0 && !igroup) || !C)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    etk_node n = {
        .id = m->id,
        .name = "", /* interned below */
        .type = m->type,
        .n_data_deps = m->n_deps <= ETK_LIVE_MAX_DEPS ? m->n_deps : ETK_LIVE_MAX_DEPS,
        .data_deps = m->deps,
        .n_attr = (uint32_t)na,
        .attr = a,
    };
    etk_node *p = etk_trace_add(C, &n);
    if (!p)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    p->name = iname;
    if (pg >= 0)
        ((etk_attr *)p->attr)[pg].v.s = igroup;
    return 0;
}

/* Full chunks whose nodes are all done lose their arena (attributes, dependencies): the engine
 * reads a done node's name only (timeline, report; the names are interned, outside the chunk),
 * and the record has been written. */
static void slim_chunks(coord *c, lrank *R, uint32_t rank)
{
    while (R->n_slim + 1 < R->n_chunk) {
        etk_trace *C = R->chunk[R->n_slim];
        uint64_t end;
        for (; R->slim_pos < C->n_nodes; R->slim_pos++)
            if (etk_sim_node_end(c->s, rank, C->nodes[R->slim_pos].id, &end) != 1)
                return;
        etk_arena_free(C->arena);
        C->arena = NULL;
        for (size_t k = 0; k < C->n_nodes; k++) {
            etk_node *n = &C->nodes[k];
            n->n_attr = n->n_data_deps = n->n_ctrl_deps = 0;
            n->attr = NULL;
            n->data_deps = n->ctrl_deps = NULL;
        }
        R->n_slim++;
        R->slim_pos = 0;
    }
}

/* The nodes received since the last flush go to the engine and, with --record, to the rank's file. */
int live_flush(coord *c, etk_error *err)
{
    for (uint32_t i = 0; i < c->n; i++) {
        lrank *R = &c->r[i];
        slim_chunks(c, R, i);
        etk_trace *C = R->n_chunk ? R->chunk[R->n_chunk - 1] : NULL;
        if (!C || C->n_nodes == R->pend)
            continue;
        etk_trace view = *C; /* the new nodes, in place */
        view.nodes = C->nodes + R->pend;
        view.n_nodes = C->n_nodes - R->pend;
        view.cap_nodes = view.n_nodes;
        R->pend = C->n_nodes;
        R->n_given += view.n_nodes;
        if (etk_sim_add_rank_trace(c->s, i, &view, err) != 0)
            return etk_err_prefix(err, "rank %u", i);
        for (size_t k = 0; R->rec && k < view.n_nodes; k++)
            if (etk_writer_put(R->rec, &view.nodes[k], err) != 0)
                return etk_err_prefix(err, "--record");
    }
    return 0;
}

/* A superseded connection's nodes not yet given to the engine (host time: ids of another process). */
void live_drop_pending(coord *c, uint32_t rank)
{
    lrank *R = &c->r[rank];
    if (R->n_chunk)
        R->chunk[R->n_chunk - 1]->n_nodes = R->pend;
}

/* --record: each rank's file is written as its nodes go to the engine (live_flush), so the
 * coordinator keeps no copy of the run for the end. The set is all-or-nothing (util/outset.c,
 * as gen's, issue #18): the files go to a temporary folder next to the prefix, under a lock on
 * it, and are published only when every one is complete; a failed or killed run leaves the
 * earlier set as it was, and stale ranks of an earlier, larger run are removed. */
int live_record_open(coord *c, etk_error *err)
{
    int rc = etk_outset_begin(&c->rec_set, c->o->record_prefix, err);
    if (rc)
        return rc;
    c->rec_open = true;
    const char *prefix = c->rec_set.tprefix;
    size_t plen = strlen(prefix) + 32;
    char *path = malloc(plen);
    if (!path)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < c->n && !rc; i++) {
        snprintf(path, plen, "%s.%u.et", prefix, i);
        rc = etk_writer_open(path, "etkit-live", NULL, 0, &c->r[i].rec, err);
    }
    free(path);
    return rc;
}

/* Closes the rank files, writes the communicators (PREFIX.json) and publishes the set. */
int live_write_record(coord *c, etk_error *err)
{
    int rc = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        etk_writer *w = c->r[i].rec;
        c->r[i].rec = NULL;
        if (w && !rc)
            rc = etk_writer_close(w, err);
        else if (w)
            etk_writer_abort(w);
    }
    if (!rc && c->groups->n_groups) {
        const char *prefix = c->rec_set.tprefix;
        size_t plen = strlen(prefix) + 8;
        char *path = malloc(plen);
        if (!path)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        snprintf(path, plen, "%s.json", prefix);
        rc = etk_groups_write(c->groups, path, err);
        free(path);
    }
    if (c->rec_open) {
        c->rec_open = false;
        if (!rc)
            rc = etk_outset_commit(&c->rec_set, c->n, err); /* aborts the set on error */
        else
            etk_outset_abort(&c->rec_set);
    }
    return rc;
}

void live_nodes_free(coord *c)
{
    for (uint32_t i = 0; c->r && i < c->n; i++) {
        lrank *R = &c->r[i];
        for (uint32_t b = 0; b < R->n_chunk; b++)
            etk_trace_free(R->chunk[b]);
        free(R->chunk);
        R->chunk = NULL;
        R->n_chunk = 0;
        if (R->rec)
            etk_writer_abort(R->rec);
        R->rec = NULL;
    }
    if (c->rec_open) { /* a failed run: the temporary folder and the lock go, the old set stays */
        etk_outset_abort(&c->rec_set);
        c->rec_open = false;
    }
    for (uint32_t i = 0; i < c->cap_names; i++)
        free(c->names[i]);
    free(c->names);
    c->names = NULL;
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
