/* memory.c — memory over time in the simulator: nodes carrying mem_alloc_bytes (allocated when
 * the node starts) and mem_free_bytes (released when it ends) — the generator writes them from
 * tensor lifetimes (weights, gradients and optimizer state at the start, a micro-batch's saved
 * activations from its forward to its backward) — give each rank's allocated bytes over
 * simulated time. engine.c calls sim_mem_alloc/free as nodes start and end; report.c gets the
 * per-rank peak (moment and op) and the out-of-memory verdict against the GPU's HBM; timeline.c
 * gets a Perfetto counter track. docs/compute-model.md describes the attributes. */
#include <inttypes.h>
#include <stdlib.h>

#include "sim/internal.h"

void sim_mem_alloc(etk_sim *s, srank *R, const snode *n, uint64_t t)
{
    (void)s;
    R->mem_cur = n->mem_alloc > UINT64_MAX - R->mem_cur ? UINT64_MAX : R->mem_cur + n->mem_alloc;
    if (R->mem_cur > R->st.mem_peak_bytes) {
        R->st.mem_peak_bytes = R->mem_cur;
        R->st.mem_peak_ns = t;
        R->st.mem_peak_node = n->id;
    }
}

void sim_mem_free(srank *R, const snode *n)
{
    R->mem_cur = n->mem_free > R->mem_cur ? 0 : R->mem_cur - n->mem_free;
}

void sim_mem_result(etk_sim *s)
{
    etk_sim_result *res = &s->res;
    res->mem_tracked = s->mem_tracked;
    res->mem_capacity_bytes = s->cl.gpu.hbm_bytes;
    res->mem_peak_op = "";
    if (!s->mem_tracked)
        return;
    for (uint32_t r = 0; r < res->n_ranks; r++) {
        const etk_sim_rank_stats *a = &res->ranks[r];
        if (a->mem_peak_bytes > res->mem_peak_bytes) {
            res->mem_peak_bytes = a->mem_peak_bytes;
            res->mem_peak_rank = r;
        }
        if (res->mem_capacity_bytes && a->mem_peak_bytes > res->mem_capacity_bytes)
            res->mem_oom_ranks++;
    }
    /* the op's name, from the simulated rank that stands for the peak rank */
    const srank *R = &s->r[s->rep[s->cls[res->mem_peak_rank]]];
    uint64_t id = res->ranks[res->mem_peak_rank].mem_peak_node;
    for (uint32_t i = 0; i < R->n; i++)
        if (R->nodes[i].id == id && R->nodes[i].mem_alloc) {
            res->mem_peak_op = R->nodes[i].src && R->nodes[i].src->name ? R->nodes[i].src->name : "";
            break;
        }
}

typedef struct mev {
    uint64_t t;
    int64_t d; /* + alloc, - free */
} mev;

static int mev_cmp(const void *a, const void *b)
{
    const mev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->d < y->d ? 1 : x->d > y->d ? -1 : 0; /* allocations first at equal times */
}

int sim_mem_timeline(const etk_sim *s, uint32_t r, FILE *f)
{
    if (!s->mem_tracked)
        return 0;
    const srank *R = &s->r[r];
    size_t n = 0;
    for (uint32_t i = 0; i < R->n; i++)
        n += (R->nodes[i].mem_alloc != 0) + (R->nodes[i].mem_free != 0);
    if (!n)
        return 0;
    mev *v = malloc(n * sizeof *v);
    if (!v)
        return ETK_ENOMEM;
    size_t k = 0;
    for (uint32_t i = 0; i < R->n; i++) {
        const snode *x = &R->nodes[i];
        if (x->state != ST_DONE)
            continue;
        if (x->mem_alloc)
            v[k++] = (mev){x->start_ns, (int64_t)x->mem_alloc};
        if (x->mem_free)
            v[k++] = (mev){x->end_ns, -(int64_t)x->mem_free};
    }
    qsort(v, k, sizeof *v, mev_cmp);
    int64_t cur = 0;
    for (size_t i = 0; i < k; i++) {
        cur += v[i].d;
        if (cur < 0)
            cur = 0;
        if (i + 1 < k && v[i + 1].t == v[i].t)
            continue; /* one sample per moment */
        fprintf(f, ",\n{\"ph\":\"C\",\"pid\":%u,\"name\":\"memory\",\"ts\":%.3f,"
                   "\"args\":{\"allocated_bytes\":%" PRId64 "}}",
                r, v[i].t / 1e3, cur);
    }
    free(v);
    return 0;
}
