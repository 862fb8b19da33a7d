/* pool.c — the simulator's small containers: growable arrays, and the one huge-page block the
 * ranks' first node/successor/id arrays are carved from (sim_reserve). Used by every part of
 * the engine (build.c, setup.c, coll.c, streams.c, engine.c). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/internal.h"

#define BIG_BYTES ((size_t)2 << 20)

int sim_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX)
        return -1;
    size_t bytes = (size_t)nc * elem;
    void *q;
    if (bytes >= BIG_BYTES) {
        /* big arrays (nodes, successors of long traces): 2 MiB-aligned and advised as huge
         * pages, since first-touch page faults otherwise dominate setting a trace up */
        if (posix_memalign(&q, BIG_BYTES, bytes) != 0)
            return -1;
#ifdef MADV_HUGEPAGE
        madvise(q, bytes, MADV_HUGEPAGE);
#endif
        if (*p)
            memcpy(q, *p, (size_t)*cap * elem);
        free(*p);
    } else {
        q = realloc(*p, bytes);
        if (!q)
            return -1;
    }
    *p = q;
    *cap = (uint32_t)nc;
    return 0;
}

/* One big huge-page block carved into the first arrays of each rank (etk_sim_workload knows all
 * traces up front): thousands of ranks then cost one allocation instead of thousands of
 * separately faulted-in mmaps. Arrays that outgrow their slice move to the heap. */
bool sim_in_pool(const etk_sim *s, const void *p)
{
    return s->pool && (const char *)p >= s->pool && (const char *)p < s->pool + s->pool_cap;
}

void *sim_pool_take(etk_sim *s, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!s->pool || s->pool_cap - s->pool_used < bytes)
        return NULL;
    void *p = s->pool + s->pool_used;
    s->pool_used += bytes;
    return p;
}

/* sim_grow() for arrays that may live in the pool */
int sim_grow_p(etk_sim *s, void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (!*p && (*p = sim_pool_take(s, (size_t)need * elem)) != NULL) {
        *cap = need;
        return 0;
    }
    if (sim_in_pool(s, *p)) {
        void *old = *p;
        uint32_t oc = *cap;
        *p = NULL;
        *cap = 0;
        if (sim_grow(p, cap, need, elem) != 0)
            return -1;
        memcpy(*p, old, (size_t)oc * elem);
        return 0;
    }
    return sim_grow(p, cap, need, elem);
}

void etk_sim_reserve(etk_sim *s, uint64_t nodes, uint64_t deps)
{
    uint32_t n_sim = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++)
        n_sim += s->r[r].simulated;
    sim_reserve(s, nodes * (sizeof(snode) + 4 * sizeof(uint32_t)) + deps * sizeof(uint32_t) +
                       (size_t)n_sim * 512);
}

int sim_reserve(etk_sim *s, size_t bytes)
{
    if (s->pool || bytes < BIG_BYTES)
        return 0;
    bytes = (bytes + BIG_BYTES - 1) & ~(BIG_BYTES - 1);
    void *q;
    if (posix_memalign(&q, BIG_BYTES, bytes) != 0)
        return 0; /* not fatal: ranks allocate separately */
#ifdef MADV_HUGEPAGE
    madvise(q, bytes, MADV_HUGEPAGE);
#endif
    s->pool = q;
    s->pool_cap = bytes;
    s->pool_used = 0;
    return 0;
}

int sim_oom(etk_error *err)
{
    return etk_err(err, ETK_ENOMEM, "simulator: out of memory");
}

/* the global event heap, ordered by (time, seq) */
static inline bool ev_less(const sevent *x, const sevent *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

int sim_ev_push(etk_sim *s, uint64_t t, uint32_t kind, uint32_t a, uint32_t b)
{
    if (s->n_ev == s->cap_ev && sim_grow((void **)&s->ev, &s->cap_ev, s->n_ev + 1, sizeof(sevent)))
        return -1;
    sevent e = {t, s->seq++, a, b, kind};
    uint32_t i = s->n_ev++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (!ev_less(&e, &s->ev[p]))
            break;
        s->ev[i] = s->ev[p];
        i = p;
    }
    s->ev[i] = e;
    return 0;
}

sevent sim_ev_pop(etk_sim *s)
{
    sevent top = s->ev[0];
    sevent last = s->ev[--s->n_ev];
    uint32_t i = 0, n = s->n_ev;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_less(&s->ev[c + 1], &s->ev[c]))
            c++;
        if (!ev_less(&s->ev[c], &last))
            break;
        s->ev[i] = s->ev[c];
        i = c;
    }
    if (n)
        s->ev[i] = last;
    return top;
}
