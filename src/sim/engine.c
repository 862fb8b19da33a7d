/* engine.c — the discrete-event core of `etkit sim`: takes per-rank traces (etk_trace, fed
 * incrementally), resolves dependencies to node indices once, and advances virtual time in
 * integer ns. Compute is timed by the cluster's roofline (net.h etk_hw_compute_ns), collectives
 * and messages by the network model (etk_net_coll_ns / etk_net_p2p_ns), or by caller hooks.
 *
 * Hot path: an event heap of (time, seq); per rank per stream kind a ready min-heap keyed by node
 * id (ASTRA-sim's smallest-id-first policy); successor lists in CSR arrays; collective instances
 * and point-to-point channels resolved to indices when a trace is added. No malloc and no hash
 * lookup per event. All events of one timestamp are applied before any node is issued, so the
 * result does not depend on the order of simultaneous events (this is what makes folded and
 * unfolded runs identical). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/internal.h"

#define BIG_BYTES ((size_t)2 << 20)

/* ---------- small containers ---------- */

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
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
static bool in_pool(const etk_sim *s, const void *p)
{
    return s->pool && (const char *)p >= s->pool && (const char *)p < s->pool + s->pool_cap;
}

static void *pool_take(etk_sim *s, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!s->pool || s->pool_cap - s->pool_used < bytes)
        return NULL;
    void *p = s->pool + s->pool_used;
    s->pool_used += bytes;
    return p;
}

/* grow() for arrays that may live in the pool */
static int grow_p(etk_sim *s, void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (!*p && (*p = pool_take(s, (size_t)need * elem)) != NULL) {
        *cap = need;
        return 0;
    }
    if (in_pool(s, *p)) {
        void *old = *p;
        uint32_t oc = *cap;
        *p = NULL;
        *cap = 0;
        if (grow(p, cap, need, elem) != 0)
            return -1;
        memcpy(*p, old, (size_t)oc * elem);
        return 0;
    }
    return grow(p, cap, need, elem);
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

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

uint64_t sim_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static int kmap_init(kmap *m, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < n * 2 + 16)
        cap *= 2;
    m->ka = malloc(sizeof(uint64_t) * cap);
    m->kb = malloc(sizeof(uint64_t) * cap);
    m->val = malloc(sizeof(uint32_t) * cap);
    if (!m->ka || !m->kb || !m->val)
        return -1;
    memset(m->val, 0xff, sizeof(uint32_t) * cap);
    m->cap = cap;
    m->n = 0;
    return 0;
}

static void kmap_free(kmap *m)
{
    free(m->ka);
    free(m->kb);
    free(m->val);
    memset(m, 0, sizeof *m);
}

static uint32_t kmap_get(const kmap *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return SIM_NONE;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = (uint32_t)mix64(a * 31 + b) & mask;; i = (i + 1) & mask) {
        if (m->val[i] == SIM_NONE)
            return SIM_NONE;
        if (m->ka[i] == a && m->kb[i] == b)
            return m->val[i];
    }
}

/* Insert when absent; returns the existing value if present, else v. -1 (as SIM_NONE-1) on OOM
 * is signalled through *oom. */
static uint32_t kmap_put(kmap *m, uint64_t a, uint64_t b, uint32_t v, bool *oom)
{
    if (!m->cap && kmap_init(m, 8) != 0) {
        *oom = true;
        return v;
    }
    if ((m->n + 1) * 2 > m->cap) {
        kmap old = *m;
        if (kmap_init(m, old.cap) != 0) {
            *m = old;
            *oom = true;
            return v;
        }
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.val[i] != SIM_NONE) {
                bool o2 = false;
                kmap_put(m, old.ka[i], old.kb[i], old.val[i], &o2);
            }
        kmap_free(&old);
    }
    uint32_t mask = m->cap - 1;
    for (uint32_t i = (uint32_t)mix64(a * 31 + b) & mask;; i = (i + 1) & mask) {
        if (m->val[i] == SIM_NONE) {
            m->ka[i] = a;
            m->kb[i] = b;
            m->val[i] = v;
            m->n++;
            return v;
        }
        if (m->ka[i] == a && m->kb[i] == b)
            return m->val[i];
    }
}

static inline int uheap_push(uheap *h, uint64_t key, uint32_t idx)
{
    if (h->n == h->cap && grow((void **)&h->a, &h->cap, h->n + 1, sizeof(heapent)) != 0)
        return -1;
    uint32_t i = h->n++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (h->a[p].key <= key)
            break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i].key = key;
    h->a[i].idx = idx;
    return 0;
}

static inline uint32_t uheap_pop(uheap *h)
{
    uint32_t top = h->a[0].idx;
    heapent last = h->a[--h->n];
    uint32_t i = 0, n = h->n;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h->a[c + 1].key < h->a[c].key)
            c++;
        if (last.key <= h->a[c].key)
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n)
        h->a[i] = last;
    return top;
}

static inline bool ev_less(const sevent *x, const sevent *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int ev_push(etk_sim *s, uint64_t t, uint32_t kind, uint32_t a, uint32_t b)
{
    if (s->n_ev == s->cap_ev && grow((void **)&s->ev, &s->cap_ev, s->n_ev + 1, sizeof(sevent)))
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

static sevent ev_pop(etk_sim *s)
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

/* ---------- default costs ---------- */

static uint64_t def_coll(void *ctx, const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                         const uint32_t *ranks, uint32_t n)
{
    (void)ctx;
    return etk_net_coll_ns(c, type, bytes, ranks, n);
}
static uint64_t def_p2p(void *ctx, const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t b)
{
    (void)ctx;
    return etk_net_p2p_ns(c, src, dst, b);
}
static uint64_t def_comp(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx;
    return etk_hw_compute_ns(c, flops, bytes);
}

/* ---------- construction ---------- */

static int oom(etk_error *err)
{
    return etk_err(err, ETK_ENOMEM, "simulator: out of memory");
}

int etk_sim_new(const etk_cluster *c, uint32_t n_ranks, const etk_groups *groups,
                const etk_sim_opts *opts, etk_sim **out, etk_error *err)
{
    *out = NULL;
    if (!c)
        return etk_err(err, ETK_EINVAL, "simulator: no cluster given");
    if (n_ranks == 0)
        return etk_err(err, ETK_EINVAL, "simulator: the workload has no ranks");
    /* sizes, bandwidths, topologies, GPU peak, and NPU count == rank count */
    int crc = etk_cluster_check(c, n_ranks, err);
    if (crc)
        return crc;
    etk_sim *s = calloc(1, sizeof *s);
    if (!s)
        return oom(err);
    s->cl = *c;
    if (opts)
        s->o = *opts;
    s->costs.coll_ns = def_coll;
    s->costs.p2p_ns = def_p2p;
    s->costs.compute_ns = def_comp;
    if (s->o.costs) {
        if (s->o.costs->coll_ns)
            s->costs.coll_ns = s->o.costs->coll_ns;
        if (s->o.costs->p2p_ns)
            s->costs.p2p_ns = s->o.costs->p2p_ns;
        if (s->o.costs->compute_ns)
            s->costs.compute_ns = s->o.costs->compute_ns;
        s->costs.ctx = s->o.costs->ctx;
    }
    s->o.costs = NULL;
    /* flow network model: collectives run as transfers on one shared fabric (net/topo.c), so
     * concurrent collectives on the same links slow each other; only with the model's own
     * costs and every rank simulated (etk_sim_set_classes drops it when folding) */
    if (s->cl.net_model == ETK_NET_FLOW && !s->cl.astra_compat && s->costs.coll_ns == def_coll) {
        int frc = etk_net_flows_new(&s->cl, &s->nf, err);
        if (frc) {
            etk_sim_free(s);
            return frc;
        }
    }
    if (s->o.compute) { /* compute model: keep copies, the caller's may go away */
        int crc2 = etk_compute_check(s->o.compute, err);
        if (crc2) {
            free(s);
            return crc2;
        }
        s->comp = *s->o.compute;
        s->o.compute = &s->comp;
    }
    if (s->o.rank_speed && s->o.n_rank_speed) {
        uint32_t m = s->o.n_rank_speed < n_ranks ? s->o.n_rank_speed : n_ranks;
        for (uint32_t r = 0; r < m; r++)
            if (!(s->o.rank_speed[r] > 0 && s->o.rank_speed[r] <= 1e6)) {
                double v = s->o.rank_speed[r];
                free(s);
                return etk_err(err, ETK_EINVAL,
                               "simulator: speed factor of rank %u: expected a number in "
                               "(0, 1e6], got %g", r, v);
            }
        s->speed = malloc(m * sizeof *s->speed);
        if (!s->speed) {
            free(s);
            return oom(err);
        }
        memcpy(s->speed, s->o.rank_speed, m * sizeof *s->speed);
        s->o.rank_speed = s->speed;
        s->o.n_rank_speed = m;
    } else {
        s->o.rank_speed = NULL;
        s->o.n_rank_speed = 0;
    }
    uint32_t ns[3] = {s->o.cpu_streams, s->o.comp_streams, s->o.comm_streams};
    const char *nsname[3] = {"CPU", "compute", "communication"};
    for (int k = 0; k < 3; k++) {
        if (ns[k] == 0)
            ns[k] = 1;
        if (ns[k] > 32) {
            free(s->speed);
            free(s);
            return etk_err(err, ETK_EINVAL,
                           "simulator: %u %s streams per rank requested; at most 32 are supported",
                           ns[k], nsname[k]);
        }
        s->nstreams[k] = ns[k];
    }
    if (s->o.comm_stream_per_group)
        s->nstreams[2] = 32;
    s->n_ranks = n_ranks;
    s->flops_overflow_rank = SIM_NONE;
    s->eg = groups;
    s->r = calloc(n_ranks, sizeof(srank));
    s->cls = malloc(sizeof(uint32_t) * n_ranks);
    s->rep = malloc(sizeof(uint32_t) * n_ranks);
    s->csize = malloc(sizeof(uint32_t) * n_ranks);
    s->all_ranks = malloc(sizeof(uint32_t) * n_ranks);
    uint32_t ng = 1 + (groups ? (uint32_t)groups->n_groups : 0);
    s->g = calloc(ng, sizeof(sgroup));
    if (!s->r || !s->cls || !s->rep || !s->csize || !s->all_ranks || !s->g) {
        etk_sim_free(s);
        return oom(err);
    }
    for (uint32_t i = 0; i < n_ranks; i++) {
        s->cls[i] = s->rep[i] = s->all_ranks[i] = i;
        s->csize[i] = 1;
        s->r[i].simulated = true;
    }
    s->n_classes = n_ranks;
    /* group 0: all ranks, unless the file gives "0" or "" explicitly */
    s->g[0].name = "";
    s->g[0].ranks = s->all_ranks;
    s->g[0].n = n_ranks;
    s->n_g = 1;
    s->g_all = 0;
    bool o = false;
    for (uint32_t i = 0; groups && i < groups->n_groups; i++) {
        const etk_group *eg = &groups->groups[i];
        for (uint32_t j = 0; j < eg->n_ranks; j++)
            if (eg->ranks[j] >= n_ranks) {
                etk_sim_free(s);
                return etk_err(err, ETK_EINVAL,
                               "comm groups: group \"%s\" lists rank %u but the workload has "
                               "%u ranks (0..%u)",
                               eg->id, eg->ranks[j], n_ranks, n_ranks - 1);
            }
        if (eg->n_ranks == 0) {
            etk_sim_free(s);
            return etk_err(err, ETK_EINVAL, "comm groups: group \"%s\" has no ranks", eg->id);
        }
        uint32_t gi;
        if (strcmp(eg->id, "0") == 0 || eg->id[0] == 0) {
            gi = 0;
        } else {
            gi = s->n_g++;
        }
        s->g[gi].name = eg->id;
        s->g[gi].ranks = eg->ranks;
        s->g[gi].n = eg->n_ranks;
        kmap_put(&s->gnames, sim_hash_str(eg->id), strlen(eg->id), gi, &o);
    }
    if (o) {
        etk_sim_free(s);
        return oom(err);
    }
    *out = s;
    return 0;
}

int etk_sim_set_classes(etk_sim *s, const uint32_t *class_of, const uint32_t *class_rep,
                        uint32_t n_classes, etk_error *err)
{
    for (uint32_t r = 0; r < s->n_ranks; r++)
        if (s->r[r].n)
            return etk_err(err, ETK_EINVAL, "simulator: classes must be set before traces are added");
    if (n_classes < s->n_ranks && s->nf) { /* folded: isolated costs per collective */
        etk_net_flows_free(s->nf);
        s->nf = NULL;
    }
    if (n_classes == 0 || n_classes > s->n_ranks)
        return etk_err(err, ETK_EINVAL, "simulator: %u classes for %u ranks", n_classes,
                       s->n_ranks);
    memset(s->csize, 0, sizeof(uint32_t) * s->n_ranks);
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        if (class_of[r] >= n_classes)
            return etk_err(err, ETK_EINVAL, "simulator: rank %u has class %u of %u", r,
                           class_of[r], n_classes);
        s->cls[r] = class_of[r];
        s->csize[class_of[r]]++;
        s->r[r].simulated = false;
    }
    for (uint32_t c = 0; c < n_classes; c++) {
        uint32_t q = class_rep[c];
        if (q >= s->n_ranks || class_of[q] != c)
            return etk_err(err, ETK_EINVAL,
                           "simulator: representative %u of class %u is not in that class", q, c);
        s->rep[c] = q;
        s->r[q].simulated = true;
    }
    s->n_classes = n_classes;
    s->folded = n_classes < s->n_ranks;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort the members once and number the simulated ones. */
static int prepare_group(etk_sim *s, sgroup *g, etk_error *err)
{
    if (g->prepared)
        return 0;
    g->sorted = malloc(sizeof(uint32_t) * g->n);
    g->simpos = malloc(sizeof(uint32_t) * g->n);
    if (!g->sorted || !g->simpos)
        return oom(err);
    memcpy(g->sorted, g->ranks, sizeof(uint32_t) * g->n);
    qsort(g->sorted, g->n, sizeof(uint32_t), cmp_u32);
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        if (i && g->sorted[i] == g->sorted[i - 1])
            return etk_err(err, ETK_EINVAL, "comm group \"%s\" lists rank %u twice", g->name,
                           g->sorted[i]);
        g->simpos[i] = s->r[g->sorted[i]].simulated ? k++ : SIM_NONE;
    }
    g->n_sim = k;
    g->simrank = malloc(sizeof(uint32_t) * (k ? k : 1));
    g->issued = calloc(k ? k : 1, sizeof(uint32_t));
    if (!g->simrank || !g->issued)
        return oom(err);
    for (uint32_t i = 0; i < g->n; i++)
        if (g->simpos[i] != SIM_NONE)
            g->simrank[g->simpos[i]] = g->sorted[i];
    g->prepared = true;
    return 0;
}

static uint32_t group_pos(const sgroup *g, uint32_t rank)
{
    uint32_t lo = 0, hi = g->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (g->sorted[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n && g->sorted[lo] == rank ? lo : SIM_NONE;
}

static uint32_t find_group(const etk_sim *s, const char *name)
{
    if (!name || !name[0] || strcmp(name, "0") == 0)
        return s->g_all;
    uint32_t gi = kmap_get(&s->gnames, sim_hash_str(name), strlen(name));
    if (gi != SIM_NONE && strcmp(s->g[gi].name, name) == 0)
        return gi;
    for (uint32_t i = 1; i < s->n_g; i++) /* hash collision fallback */
        if (strcmp(s->g[i].name, name) == 0)
            return i;
    return SIM_NONE;
}

static uint32_t get_chan(etk_sim *s, uint32_t src, uint32_t dst, int32_t tag, bool *o)
{
    uint64_t a = ((uint64_t)s->cls[src] << 32) | s->cls[dst];
    uint32_t v = kmap_put(&s->chmap, a, (uint64_t)(uint32_t)tag, s->n_ch, o);
    if (*o)
        return SIM_NONE;
    if (v == s->n_ch) {
        if (grow((void **)&s->ch, &s->cap_ch, s->n_ch + 1, sizeof(schan)) != 0) {
            *o = true;
            return SIM_NONE;
        }
        schan *c = &s->ch[s->n_ch++];
        c->src = s->rep[s->cls[src]];
        c->dst = s->rep[s->cls[dst]];
        c->sq_head = c->sq_tail = c->rq_head = c->rq_tail = SIM_NONE;
    }
    return v;
}

static uint64_t coll_cost(etk_sim *s, uint32_t gi, int ctype, uint64_t bytes, bool *o)
{
    uint64_t a = ((uint64_t)gi << 8) | (uint32_t)ctype;
    uint32_t v = kmap_get(&s->costcache, a, bytes);
    if (v != SIM_NONE)
        return s->costv[v];
    sgroup *g = &s->g[gi];
    uint64_t ns = s->costs.coll_ns(s->costs.ctx, &s->cl, (etk_coll_type)ctype, bytes, g->ranks, g->n);
    if (grow((void **)&s->costv, &s->cap_costv, s->n_costv + 1, sizeof(uint64_t)) != 0) {
        *o = true;
        return ns;
    }
    s->costv[s->n_costv] = ns;
    kmap_put(&s->costcache, a, bytes, s->n_costv++, o);
    return ns;
}

static inline void mark_dirty(etk_sim *s, uint32_t r)
{
    if (s->r[r].dirty)
        return;
    s->r[r].dirty = true;
    if (grow((void **)&s->dirty, &s->cap_dirty, s->n_dirty + 1, sizeof(uint32_t)) != 0) {
        s->broken = true;
        return;
    }
    s->dirty[s->n_dirty++] = r;
}

static inline void make_ready(etk_sim *s, uint32_t r, uint32_t i)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    n->state = ST_READY;
    if (uheap_push(&R->ready[n->kind], n->id, i) != 0)
        s->broken = true;
    mark_dirty(s, r);
}

/* comm_stream_per_group: the stream of a group on a rank (key: the group index, or 2^31 + the
 * destination of a send: the sends to each peer have a stream), numbered in order of first use,
 * so the ranks of a class number them alike */
static uint8_t comm_lane(srank *R, uint32_t key)
{
    for (uint32_t l = 0; l < R->n_lanes; l++)
        if (R->lane_key[l] == key)
            return (uint8_t)l;
    if (R->n_lanes < 32) {
        R->lane_key[R->n_lanes] = key;
        return (uint8_t)R->n_lanes++;
    }
    return (uint8_t)(key % 32);
}

/* Fill one node's timing fields from its Chakra attributes. */
static int setup_node(etk_sim *s, uint32_t rank, snode *n, const etk_node *e, etk_error *err)
{
    const char *tp = e->name && e->name[0] ? e->name : "";
    uint64_t scale = s->o.stage_units ? 2 : 1;
    if (e->duration_micros > ((uint64_t)1 << 40)) /* 2^40 us = 12.7 days: keeps ns sums exact */
        return etk_err(err, ETK_EFORMAT,
                       "rank %u node id %" PRIu64 " (%s): duration_micros %" PRIu64
                       " is implausible (more than 2^40 us)",
                       rank, e->id, tp, e->duration_micros);
    uint64_t dur = e->duration_micros * 1000;
    n->type = (uint8_t)(e->type >= 0 && e->type < ETK_NODE_TYPE_COUNT ? e->type : 0);
    n->dur_ns = dur;
    n->mem_alloc = n->mem_free = 0; /* memory over time (memory.c) */
    bool has_alloc = etk_node_u64(e, "mem_alloc_bytes", &n->mem_alloc);
    bool has_free = etk_node_u64(e, "mem_free_bytes", &n->mem_free);
    if (has_alloc || has_free)
        s->mem_tracked = true;
    bool o = false;
    switch (e->type) {
    case ETK_NODE_COMP: {
        bool cpu = false;
        etk_node_bool(e, "is_cpu_op", &cpu);
        int64_t fl = 0;
        uint64_t tb = 0;
        etk_node_i64(e, "num_ops", &fl);
        etk_node_u64(e, "tensor_size", &tb);
        if (fl < 0) { /* validate reports negative-ops */
            fl = 0;
            s->neg_ops++;
        }
        /* STAGE counts matmuls (op_type "M") in multiply-accumulates; its elementwise,
         * slice and custom ops count operations: only MACs are doubled */
        const char *opt = etk_node_str(e, "op_type");
        uint64_t fscale = opt && strcmp(opt, "M") ? 1 : scale;
        n->flops = cpu ? 0 : (uint64_t)fl * fscale;
        n->bytes = tb * scale;
        n->kind = cpu ? K_CPU : K_COMP;
        if (s->cl.astra_compat) {
            /* ASTRA-sim: roofline for GPU ops when roofline-enabled, else the duration
             * replayed (a zero duration as 1 ns) */
            if (s->cl.astra_roofline && !cpu)
                n->dur_ns = s->costs.compute_ns(s->costs.ctx, &s->cl, n->flops, n->bytes);
            else if (!dur)
                n->dur_ns = 1;
        } else if (!dur && !cpu && (n->flops || n->bytes)) {
            /* a node marked "precision": "fp8" (FP8 GEMMs of etkit gen --precision fp8) runs at
             * the fp8 peak: its FLOPs are charged at peak[cluster precision] / peak[fp8], which
             * makes the compute term exactly flops / peak[fp8] */
            uint64_t fl = n->flops;
            const char *prec = etk_node_str(e, "precision");
            int cp = (int)s->cl.precision;
            if (prec && !strcmp(prec, "fp8") && s->cl.gpu.peak_flops[ETK_PREC_FP8] > 0)
                s->any_fp8 = true;
            if (prec && !strcmp(prec, "fp8") && cp >= 0 && cp < ETK_PREC_COUNT && cp != ETK_PREC_FP8 &&
                s->cl.gpu.peak_flops[ETK_PREC_FP8] > 0 && s->cl.gpu.peak_flops[cp] > 0)
                fl = (uint64_t)((long double)fl * (long double)s->cl.gpu.peak_flops[cp] /
                                (long double)s->cl.gpu.peak_flops[ETK_PREC_FP8] + 0.5L);
            if (s->o.compute && s->costs.compute_ns == def_comp) { /* compute model */
                etk_op_desc op; /* it reads "precision" itself: the FP8 peak and efficiency */
                etk_compute_op_from_node(e, n->flops, n->bytes, &op);
                n->dur_ns = etk_compute_op_ns(&s->cl, s->o.compute, &op);
            } else {
                n->dur_ns = s->costs.compute_ns(s->costs.ctx, &s->cl, fl, n->bytes);
            }
        }
        if (!cpu && rank < s->o.n_rank_speed && s->o.rank_speed[rank] != 1.0 &&
            s->o.rank_speed[rank] > 0) { /* heterogeneity: a slow (or fast) GPU */
            long double d = (long double)n->dur_ns / s->o.rank_speed[rank];
            n->dur_ns = d >= 1.8e19L ? UINT64_MAX : (uint64_t)llroundl(d);
        }
        break;
    }
    case ETK_NODE_MEM_LOAD:
    case ETK_NODE_MEM_STORE: {
        uint64_t tb = 0;
        etk_node_u64(e, "tensor_size", &tb);
        n->bytes = tb * scale;
        n->kind = K_COMP;
        if (!dur && n->bytes)
            n->dur_ns = s->costs.compute_ns(s->costs.ctx, &s->cl, 0, n->bytes);
        break;
    }
    case ETK_NODE_COLL: {
        int64_t ct = 0, cs = 0;
        if (!etk_node_i64(e, "comm_type", &ct)) /* absent: ALL_REDUCE, as other tools read it */
            s->no_type++;
        if (!etk_node_i64(e, "comm_size", &cs)) {
            /* Chakra's converter writes some collectives (e.g. broadcast) without a size:
             * time them as 0 bytes (latency only), like a replay of an unknown size */
            cs = 0;
            s->no_size++;
        }
        if (cs < 0)
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): comm_size %" PRId64
                           " is negative; expected bytes",
                           rank, e->id, tp, cs);
        if (ct < 0 || ct >= ETK_COLL_TYPE_COUNT)
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): comm_type %" PRId64
                           " is not a collective type (0..%d)",
                           rank, e->id, tp, ct, ETK_COLL_TYPE_COUNT - 1);
        const char *pg = etk_node_str(e, "pg_name");
        uint32_t gi = find_group(s, pg);
        if (gi == SIM_NONE)
            return etk_err(err, ETK_ENOTFOUND,
                           "rank %u node id %" PRIu64 " (%s): pg_name \"%s\" is not a group of "
                           "the comm-group file%s",
                           rank, e->id, tp, pg, s->eg ? "" : " (no comm-group file was found)");
        sgroup *g = &s->g[gi];
        int rc = prepare_group(s, g, err);
        if (rc)
            return rc;
        uint32_t p = group_pos(g, rank);
        if (p == SIM_NONE)
            return etk_err(err, ETK_EINVAL,
                           "rank %u node id %" PRIu64 " (%s): the rank is not a member of group "
                           "\"%s\"",
                           rank, e->id, tp, g->name);
        n->kind = K_COMM;
        n->ctype = (uint8_t)ct;
        n->bytes = (uint64_t)cs * scale;
        n->aux = gi;
        n->pos = g->simpos[p];
        n->dur_ns = coll_cost(s, gi, (int)ct, n->bytes, &o);
        break;
    }
    case ETK_NODE_SEND:
    case ETK_NODE_RECV: {
        bool snd = e->type == ETK_NODE_SEND;
        int64_t peer = -1, cs = 0, tag = 0;
        const char *pk = snd ? "comm_dst" : "comm_src";
        if (!etk_node_i64(e, pk, &peer) || peer < 0 || peer >= s->n_ranks)
            return etk_err(err, ETK_EFORMAT,
                           "rank %u node id %" PRIu64 " (%s): %s %s %" PRId64
                           " is not a rank of the workload (0..%u)",
                           rank, e->id, tp, snd ? "send" : "recv", pk, peer, s->n_ranks - 1);
        etk_node_i64(e, "comm_size", &cs);
        etk_node_i64(e, "comm_tag", &tag);
        if (cs < 0)
            cs = 0;
        n->bytes = (uint64_t)cs * scale;
        uint32_t src = snd ? rank : (uint32_t)peer, dst = snd ? (uint32_t)peer : rank;
        n->aux = get_chan(s, src, dst, (int32_t)tag, &o);
        if (snd) {
            n->kind = K_COMM;
            n->dur_ns = s->costs.p2p_ns(s->costs.ctx, &s->cl, src, dst, n->bytes);
        } else {
            n->kind = K_RECV;
            n->dur_ns = 0;
        }
        break;
    }
    default:
        n->kind = K_FREE;
        break;
    }
    if (o)
        return oom(err);
    if (n->kind == K_COMM && s->o.comm_stream_per_group)
        n->lane = comm_lane(&s->r[rank], n->type == ETK_NODE_COLL
                                             ? n->aux
                                             : 0x80000000u | (uint32_t)s->ch[n->aux].dst);
    if (n->dur_ns > SIM_MAX_NS) /* 10^18 ns = 31.7 years: an input out of range, not a step time */
        return etk_err(err, ETK_EINVAL,
                       "rank %u node id %" PRIu64 " (%s): simulated duration %.3g ns is past 1e18 ns (31.7 years): "
                       "a bandwidth, efficiency or size out of range", rank, e->id, tp, (double)n->dur_ns);
    return 0;
}

static inline uint32_t id_get(const srank *R, uint64_t id)
{
    if (id - R->dense_lo < R->dense_n)
        return R->dense[id - R->dense_lo];
    return kmap_get(&R->ids, id, 0);
}

/* Warnings for the user (the library never prints): "; "-separated, the first few kept. */
static void note(etk_sim *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void note(etk_sim *s, const char *fmt, ...)
{
    size_t off = strlen(s->notes);
    if (off + 8 >= sizeof s->notes) {
        s->notes_dropped++;
        return;
    }
    if (off)
        off += (size_t)snprintf(s->notes + off, sizeof s->notes - off, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes + off, sizeof s->notes - off, fmt, ap);
    va_end(ap);
}

static bool has_dep(const uint64_t *d, uint32_t n, uint64_t id)
{
    for (uint32_t k = 0; k < n; k++)
        if (d[k] == id)
            return true;
    return false;
}

/* Kahn's algorithm over the chunk's internal edges; with data_only, control-only edges are
 * skipped. Fills pos[] with the topological position (SIM_NONE for nodes on a cycle); returns
 * the number of nodes ordered. Ties go to the smallest index. */
static uint32_t topo_order(const srank *R, uint32_t base, uint32_t m, const etk_trace *t,
                           bool data_only, uint32_t *indeg, uint32_t *queue, uint32_t *pos)
{
    memset(indeg, 0, sizeof(uint32_t) * m);
    for (uint32_t u = 0; u < m; u++) {
        const snode *n = &R->nodes[base + u];
        pos[u] = SIM_NONE;
        for (uint32_t k = 0; k < n->n_succ; k++) {
            uint32_t v = R->succ[n->succ_begin + k] - base;
            const etk_node *e = &t->nodes[v];
            if (!data_only || has_dep(e->data_deps, e->n_data_deps, n->id))
                indeg[v]++;
        }
    }
    uint32_t qh = 0, qt = 0;
    for (uint32_t u = 0; u < m; u++)
        if (!indeg[u])
            queue[qt++] = u;
    while (qh < qt) {
        uint32_t u = queue[qh];
        pos[u] = qh++;
        const snode *n = &R->nodes[base + u];
        for (uint32_t k = 0; k < n->n_succ; k++) {
            uint32_t v = R->succ[n->succ_begin + k] - base;
            const etk_node *e = &t->nodes[v];
            if ((!data_only || has_dep(e->data_deps, e->n_data_deps, n->id)) && --indeg[v] == 0)
                queue[qt++] = v;
        }
    }
    return qt;
}

/* Chakra's PyTorch converter writes control dependencies that close cycles with data
 * dependencies (converted_cnn_ddp.0.et: node 3317 ctrl-depends on its own kernel 3318). In the
 * lenient mode (missing_deps_ignore) such control edges are dropped: the ones that go against
 * a topological order of the data edges (self-loops included). Returns the number dropped. */
static uint64_t break_ctrl_cycles(srank *R, uint32_t base, uint32_t m, const etk_trace *t,
                                  bool *oom_flag)
{
    uint32_t *buf = malloc(sizeof(uint32_t) * 3 * ((size_t)m + 1));
    if (!buf) {
        *oom_flag = true;
        return 0;
    }
    uint32_t *indeg = buf, *queue = buf + m + 1, *pos = buf + 2 * (m + 1);
    uint64_t dropped = 0;
    if (topo_order(R, base, m, t, false, indeg, queue, pos) < m &&
        topo_order(R, base, m, t, true, indeg, queue, pos) == m) {
        for (uint32_t u = 0; u < m; u++) {
            snode *n = &R->nodes[base + u];
            uint32_t keep = 0;
            for (uint32_t k = 0; k < n->n_succ; k++) {
                uint32_t v = R->succ[n->succ_begin + k];
                const etk_node *e = &t->nodes[v - base];
                if (pos[u] >= pos[v - base] && !has_dep(e->data_deps, e->n_data_deps, n->id)) {
                    R->nodes[v].pending--;
                    dropped++;
                } else {
                    R->succ[n->succ_begin + keep++] = v;
                }
            }
            n->n_succ = keep;
        }
    }
    free(buf);
    return dropped;
}

int etk_sim_add_rank_trace(etk_sim *s, uint32_t rank, const etk_trace *t, etk_error *err)
{
    if (s->broken)
        return etk_err(err, ETK_EINVAL, "simulator: unusable after an earlier error");
    if (rank >= s->n_ranks)
        return etk_err(err, ETK_EINVAL, "simulator: rank %u out of range (%u ranks)", rank,
                       s->n_ranks);
    srank *R = &s->r[rank];
    const char *path = t->path && t->path[0] ? t->path : "(in memory)";
    if (!R->simulated)
        return etk_err(err, ETK_EINVAL,
                       "simulator: rank %u is folded into class %u (representative rank %u); "
                       "only representatives take traces",
                       rank, s->cls[rank], s->rep[s->cls[rank]]);
    if (t->n_nodes > UINT32_MAX / 2 - R->n)
        return etk_err(err, ETK_EINVAL, "%s: too many nodes", path);
    uint32_t base = R->n, m = (uint32_t)t->n_nodes;
    s->broken = true; /* until this function succeeds */
    if (grow_p(s, (void **)&R->nodes, &R->cap, base + m, sizeof(snode)) != 0)
        return oom(err);
    bool o = false;
    uint64_t dup_ids = 0; /* validate reports duplicate-id */
    if (base == 0 && m && !R->dense) {
        /* dense ids (generators number nodes 0..n or 1..n): a direct table, 4 bytes per id */
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint32_t i = 0; i < m; i++) {
            lo = t->nodes[i].id < lo ? t->nodes[i].id : lo;
            hi = t->nodes[i].id > hi ? t->nodes[i].id : hi;
        }
        if (hi - lo < 4 * (uint64_t)m + 64) {
            R->dense_lo = lo;
            R->dense_n = (uint32_t)(hi - lo + 1);
            R->dense = pool_take(s, sizeof(uint32_t) * R->dense_n);
            if (!R->dense)
                R->dense = malloc(sizeof(uint32_t) * R->dense_n);
            if (!R->dense)
                return oom(err);
            memset(R->dense, 0xff, sizeof(uint32_t) * R->dense_n);
        }
    }
    for (uint32_t i = 0; i < m; i++) {
        const etk_node *e = &t->nodes[i];
        snode *n = &R->nodes[base + i];
        memset(n, 0, sizeof *n);
        n->id = e->id;
        n->src = e;
        n->extra = n->qnext = SIM_NONE;
        if (e->id - R->dense_lo < R->dense_n) {
            if (R->dense[e->id - R->dense_lo] == SIM_NONE)
                R->dense[e->id - R->dense_lo] = base + i;
            else
                dup_ids++;
        } else {
            dup_ids += kmap_put(&R->ids, e->id, 0, base + i, &o) != base + i; /* keeps the first */
        }
    }
    if (o)
        return oom(err);
    /* pass 1: count successors inside the chunk, overflow edges to older nodes, missing ids */
    uint32_t *cnt = calloc((size_t)m + 1, sizeof(uint32_t));
    if (!cnt)
        return oom(err);
    uint64_t missing = 0, shown[5];
    for (uint32_t i = 0; i < m; i++) {
        const etk_node *e = &t->nodes[i];
        snode *n = &R->nodes[base + i];
        for (int l = 0; l < 2; l++) {
            const uint64_t *d = l ? e->ctrl_deps : e->data_deps;
            uint32_t nd = l ? e->n_ctrl_deps : e->n_data_deps;
            for (uint32_t k = 0; k < nd; k++) {
                uint32_t j = id_get(R, d[k]);
                if (j == SIM_NONE) {
                    if (missing < 5)
                        shown[missing] = d[k];
                    missing++;
                } else if (j >= base) {
                    cnt[j - base]++;
                    n->pending++;
                } else if (R->nodes[j].state != ST_DONE) {
                    if (grow((void **)&R->xe, &R->cap_xe, R->n_xe + 1, sizeof(xedge)) != 0) {
                        free(cnt);
                        return oom(err);
                    }
                    R->xe[R->n_xe] = (xedge){base + i, R->nodes[j].extra};
                    R->nodes[j].extra = R->n_xe++;
                    n->pending++;
                }
            }
        }
    }
    if (missing && !s->o.missing_deps_ignore) {
        free(cnt);
        char ids[128] = "";
        size_t off = 0;
        for (uint64_t k = 0; k < missing && k < 5; k++)
            off += (size_t)snprintf(ids + off, sizeof ids - off, "%s%" PRIu64, k ? ", " : "",
                                    shown[k]);
        return etk_err(err, ETK_EFORMAT,
                       "%s (rank %u): %" PRIu64 " dependencies on node ids absent from the trace "
                       "(first: %s%s); run with --missing-deps=ignore to treat them as satisfied",
                       path, rank, missing, ids, missing > 5 ? ", ..." : "");
    }
    if (missing) {
        R->missing += missing;
        s->missing_total += missing;
        note(s, "%s (rank %u): %" PRIu64 " dependencies on absent node ids treated as "
                "satisfied (first: %" PRIu64 ")",
             path, rank, missing, shown[0]);
    }
    /* pass 2: CSR successor lists for the chunk */
    uint64_t total = 0;
    for (uint32_t i = 0; i < m; i++)
        total += cnt[i];
    if (total > UINT32_MAX - R->n_succ) {
        free(cnt);
        return etk_err(err, ETK_EINVAL, "%s: too many dependencies", path);
    }
    if (grow_p(s, (void **)&R->succ, &R->cap_succ, R->n_succ + (uint32_t)total,
               sizeof(uint32_t))) {
        free(cnt);
        return oom(err);
    }
    uint32_t off = R->n_succ;
    for (uint32_t i = 0; i < m; i++) {
        R->nodes[base + i].succ_begin = off;
        off += cnt[i];
        cnt[i] = 0;
    }
    for (uint32_t i = 0; i < m; i++) {
        const etk_node *e = &t->nodes[i];
        for (int l = 0; l < 2; l++) {
            const uint64_t *d = l ? e->ctrl_deps : e->data_deps;
            uint32_t nd = l ? e->n_ctrl_deps : e->n_data_deps;
            for (uint32_t k = 0; k < nd; k++) {
                uint32_t j = id_get(R, d[k]);
                if (j != SIM_NONE && j >= base) {
                    snode *p = &R->nodes[j];
                    R->succ[p->succ_begin + cnt[j - base]++] = base + i;
                }
            }
        }
    }
    for (uint32_t i = 0; i < m; i++)
        R->nodes[base + i].n_succ = cnt[i];
    R->n_succ = off;
    free(cnt);
    R->n = base + m;
    if (s->o.missing_deps_ignore) {
        uint64_t dropped = break_ctrl_cycles(R, base, m, t, &o);
        if (o)
            return oom(err);
        if (dropped)
            note(s, "%s (rank %u): %" PRIu64 " control dependencies that close cycles with "
                    "data dependencies dropped",
                 path, rank, dropped);
        R->ctrl_dropped += dropped;
    }
    for (uint32_t i = 0; i < m; i++) {
        int rc = setup_node(s, rank, &R->nodes[base + i], &t->nodes[i], err);
        if (rc) {
            etk_err_prefix(err, "%s", path);
            return rc;
        }
    }
    if (s->no_size)
        note(s, "%s (rank %u): %" PRIu64 " collectives without comm_size, timed as 0 bytes",
             path, rank, s->no_size);
    if (s->no_type)
        note(s, "%s (rank %u): %" PRIu64 " collectives without comm_type, timed as ALL_REDUCE", path, rank,
             s->no_type);
    if (s->neg_ops)
        note(s, "%s (rank %u): %" PRIu64 " compute nodes with a negative num_ops, timed as 0 FLOPs", path, rank,
             s->neg_ops);
    if (dup_ids)
        note(s, "%s (rank %u): %" PRIu64 " nodes repeat the id of an earlier node (dependencies go to the "
             "first)", path, rank, dup_ids);
    s->no_size = s->no_type = s->neg_ops = 0;
    s->broken = false;
    s->finished = false;
    for (uint32_t i = 0; i < m; i++)
        if (R->nodes[base + i].pending == 0)
            make_ready(s, rank, base + i);
    return s->broken ? oom(err) : 0;
}

/* ---------- running ---------- */

static inline void acc(srank *R, uint64_t t)
{
    uint64_t d = t - R->last_t;
    if (!d)
        return;
    if (R->n_comp) {
        R->st.compute_ns += d;
        if (R->n_xfer)
            R->st.overlapped_comm_ns += d;
    } else if (R->n_xfer) {
        R->st.exposed_comm_ns += d;
    } else if (R->n_cpu) {
        R->st.cpu_ns += d;
    } else {
        R->st.idle_ns += d;
    }
    R->last_t = t;
}

static void complete(etk_sim *s, uint32_t r, uint32_t i, uint64_t t)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    n->state = ST_DONE;
    n->end_ns = t;
    if (n->mem_free)
        sim_mem_free(R, n);
    R->n_done++;
    R->st.finish_ns = t;
    if (R->st.flops > UINT64_MAX - n->flops) { /* never a wrapped sum */
        R->st.flops = UINT64_MAX;
        if (s->flops_overflow_rank == SIM_NONE)
            s->flops_overflow_rank = r;
    } else {
        R->st.flops += n->flops;
    }
    /* a rank without successor edges has succ == NULL: no pointer arithmetic on it (UB) */
    const uint32_t *sc = n->n_succ ? R->succ + n->succ_begin : NULL;
    for (uint32_t k = 0; k < n->n_succ; k++)
        if (--R->nodes[sc[k]].pending == 0)
            make_ready(s, r, sc[k]);
    for (uint32_t e = n->extra; e != SIM_NONE; e = R->xe[e].next)
        if (--R->nodes[R->xe[e].to].pending == 0)
            make_ready(s, r, R->xe[e].to);
    mark_dirty(s, r);
}

static inline void release_stream(srank *R, snode *n)
{
    if (n->kind < 3)
        R->busy[n->kind] &= ~(1u << n->stream);
}

static sinst *get_inst(etk_sim *s, sgroup *g, uint32_t k)
{
    (void)s;
    while (k >= g->base + g->inst_n) {
        if (g->inst_head + g->inst_n == g->inst_cap) {
            if (g->inst_head > 0 && g->inst_head >= g->inst_cap / 2) {
                memmove(g->inst, g->inst + g->inst_head, sizeof(sinst *) * g->inst_n);
                g->inst_head = 0;
            } else if (grow((void **)&g->inst, &g->inst_cap, g->inst_cap + 1, sizeof(sinst *))) {
                return NULL;
            }
        }
        sinst *in = g->free_inst;
        if (in) {
            g->free_inst = in->next_free;
        } else {
            in = calloc(1, sizeof *in);
            if (!in)
                return NULL;
            in->node = malloc(sizeof(uint32_t) * (g->n_sim ? g->n_sim : 1));
            if (!in->node) {
                free(in);
                return NULL;
            }
        }
        in->arrived = 0;
        in->ctype = -1;
        memset(in->node, 0xff, sizeof(uint32_t) * g->n_sim);
        g->inst[g->inst_head + g->inst_n++] = in;
    }
    return g->inst[g->inst_head + (k - g->base)];
}

static char *errbuf_node(const etk_sim *s, uint32_t r, uint32_t i, char *buf, size_t len)
{
    const snode *n = &s->r[r].nodes[i];
    snprintf(buf, len, "rank %u node id %" PRIu64 "%s%s%s", r, n->id,
             n->src && n->src->name && n->src->name[0] ? " (" : "",
             n->src && n->src->name ? n->src->name : "",
             n->src && n->src->name && n->src->name[0] ? ")" : "");
    return buf;
}

static int coll_arrive(etk_sim *s, uint32_t r, uint32_t i, uint64_t t, etk_error *err)
{
    snode *n = &s->r[r].nodes[i];
    sgroup *g = &s->g[n->aux];
    uint32_t k = g->issued[n->pos]++;
    n->seq = k;
    sinst *in = get_inst(s, g, k);
    if (!in)
        return oom(err);
    if (in->ctype < 0) {
        in->ctype = n->ctype;
        in->bytes = n->bytes;
        in->dur = n->dur_ns;
        in->first_rank = r;
        in->first_node = i;
        in->issue_first = t;
    } else if (in->ctype != n->ctype || in->bytes != n->bytes) {
        char a[160], b[160];
        return etk_err(err, ETK_EINVAL,
                       "collective #%u on group \"%s\" does not match across ranks: %s issued %s "
                       "of %" PRIu64 " bytes, %s issued %s of %" PRIu64 " bytes",
                       k, g->name[0] ? g->name : "(all ranks)",
                       errbuf_node(s, in->first_rank, in->first_node, a, sizeof a),
                       etk_coll_type_name(in->ctype), in->bytes, errbuf_node(s, r, i, b, sizeof b),
                       etk_coll_type_name(n->ctype), n->bytes);
    }
    in->node[n->pos] = i;
    if (++in->arrived < g->n_sim)
        return 0;
    /* everyone is here: the transfer starts now */
    for (uint32_t p = 0; p < g->n_sim; p++) {
        srank *R = &s->r[g->simrank[p]];
        acc(R, t);
        R->n_xfer++;
        R->nodes[in->node[p]].xfer_ns = t;
    }
    scollstat *st = &g->stat[in->ctype];
    st->count++;
    st->bytes += in->bytes;
    if (s->nf) { /* completion comes from the flow model (flow_pump) */
        in->xfer_t0 = t;
        return etk_net_flows_start(s->nf, in->ctype, in->bytes, g->ranks, g->n,
                                   (uint64_t)n->aux << 32 | k, err);
    }
    st->time += in->dur;
    if (ev_push(s, t + in->dur, EV_COLL, n->aux, k) != 0)
        return oom(err);
    return 0;
}

/* Match posted sends and receives of a channel in order. Sends are eager (like ASTRA-sim's):
 * the transfer starts when the send is issued and the send completes after the message time,
 * whether or not the receive is posted; a receive completes when its message has arrived. */
static int p2p_try(etk_sim *s, uint32_t c, uint64_t t, etk_error *err)
{
    schan *ch = &s->ch[c];
    while (ch->sq_head != SIM_NONE && ch->rq_head != SIM_NONE) {
        uint32_t si = ch->sq_head, ri = ch->rq_head;
        srank *S = &s->r[ch->src], *R = &s->r[ch->dst];
        snode *sn = &S->nodes[si], *rn = &R->nodes[ri];
        ch->sq_head = sn->qnext;
        if (ch->sq_head == SIM_NONE)
            ch->sq_tail = SIM_NONE;
        ch->rq_head = rn->qnext;
        if (ch->rq_head == SIM_NONE)
            ch->rq_tail = SIM_NONE;
        if (rn->bytes != sn->bytes && !s->p2p_mismatch++) { /* validate: size-mismatch */
            uint64_t f[4] = {ch->src, sn->id, ch->dst, rn->id}, b[2] = {sn->bytes, rn->bytes};
            memcpy(s->p2p_first, f, sizeof f);
            memcpy(s->p2p_first_b, b, sizeof b);
        }
        rn->bytes = sn->bytes;
        rn->xfer_ns = sn->start_ns > rn->start_ns ? sn->start_ns : rn->start_ns;
        rn->pos = 0;
        if (sn->dur_ns == UINT64_MAX && s->nf) {
            /* flow model, send still in flight: the receive completes with it (flow_pump) */
            acc(R, t);
            R->n_xfer++;
            rn->pos = 1;
            sn->pos = ri + 1;
            continue;
        }
        uint64_t arrive = sn->start_ns + sn->dur_ns;
        if (arrive > t) { /* still in flight: the receiver waits on the transfer */
            acc(R, t);
            R->n_xfer++;
            rn->pos = 1;
        }
        if (ev_push(s, arrive > t ? arrive : t, EV_P2P, ch->dst, ri) != 0)
            return oom(err);
    }
    return 0;
}

static void chan_append(snode *nodes, uint32_t *head, uint32_t *tail, uint32_t i)
{
    nodes[i].qnext = SIM_NONE;
    if (*tail == SIM_NONE)
        *head = i;
    else
        nodes[*tail].qnext = i;
    *tail = i;
}

static int start_node(etk_sim *s, uint32_t r, uint32_t i, uint64_t t, etk_error *err)
{
    srank *R = &s->r[r];
    snode *n = &R->nodes[i];
    n->state = ST_ISSUED;
    n->start_ns = t;
    if (n->mem_alloc)
        sim_mem_alloc(s, R, n, t);
    switch (n->type) {
    case ETK_NODE_COLL:
        return coll_arrive(s, r, i, t, err);
    case ETK_NODE_SEND: {
        schan *c = &s->ch[n->aux];
        acc(R, t);
        R->n_xfer++;
        n->xfer_ns = t;
        R->p2p_count++;
        R->p2p_bytes += n->bytes;
        if (s->nf) { /* flow network model: the send completes when its transfer does */
            uint32_t ends[2] = {c->src, c->dst};
            n->dur_ns = UINT64_MAX; /* unknown until then (flow_pump) */
            n->pos = 0;             /* 1 + index of a receive waiting for it */
            int frc = etk_net_flows_start(s->nf, -1, n->bytes, ends, 2,
                                          1ull << 63 | (uint64_t)r << 32 | i, err);
            if (frc)
                return frc;
        } else {
            R->p2p_time += n->dur_ns;
            if (ev_push(s, t + n->dur_ns, EV_NODE, r, i) != 0)
                return oom(err);
        }
        chan_append(R->nodes, &c->sq_head, &c->sq_tail, i);
        return p2p_try(s, n->aux, t, err);
    }
    case ETK_NODE_RECV: {
        schan *c = &s->ch[n->aux];
        chan_append(R->nodes, &c->rq_head, &c->rq_tail, i);
        return p2p_try(s, n->aux, t, err);
    }
    default:
        if (n->kind == K_COMP || n->kind == K_CPU) {
            acc(R, t);
            if (n->kind == K_COMP && R->n_xfer && s->o.compute &&
                s->o.compute->overlap_slowdown > 0 && n->dur_ns < UINT64_MAX / 128)
                /* overlap interference: communication kernels take SMs and HBM bandwidth */
                n->dur_ns = (uint64_t)llround((double)n->dur_ns *
                                              (1.0 + s->o.compute->overlap_slowdown));
            if (n->kind == K_COMP)
                R->n_comp++;
            else
                R->n_cpu++;
        }
        if (ev_push(s, t + n->dur_ns, EV_NODE, r, i) != 0)
            return oom(err);
        return 0;
    }
}

/* comm_stream_per_group: start every ready communication node whose group's stream is free,
 * smallest id first; those whose stream is busy stay ready */
static int dispatch_lanes(etk_sim *s, uint32_t r, uint64_t t, etk_error *err)
{
    srank *R = &s->r[r];
    uheap *h = &R->ready[K_COMM];
    uint32_t n_held = 0;
    while (h->n) {
        uint32_t i = uheap_pop(h);
        snode *n = &R->nodes[i];
        uint32_t bit = 1u << n->lane;
        if (R->busy[K_COMM] & bit) {
            if (grow((void **)&s->held, &s->cap_held, n_held + 1, sizeof(uint32_t)) != 0)
                return oom(err);
            s->held[n_held++] = i;
            continue;
        }
        R->busy[K_COMM] |= bit;
        n->stream = n->lane;
        int rc = start_node(s, r, i, t, err);
        if (rc)
            return rc;
    }
    for (uint32_t j = 0; j < n_held; j++)
        if (uheap_push(h, R->nodes[s->held[j]].id, s->held[j]) != 0)
            return oom(err);
    return 0;
}

static int dispatch(etk_sim *s, uint32_t r, uint64_t t, etk_error *err)
{
    srank *R = &s->r[r];
    R->dirty = false;
    for (int k = 0; k < K_COUNT; k++) {
        uheap *h = &R->ready[k];
        if (k == K_COMM && s->o.comm_stream_per_group) {
            int rc = dispatch_lanes(s, r, t, err);
            if (rc)
                return rc;
            continue;
        }
        while (h->n) {
            uint32_t stream = 0;
            if (k < 3) {
                uint32_t free_mask = ~R->busy[k] & (s->nstreams[k] == 32 ? ~0u
                                                       : ((1u << s->nstreams[k]) - 1));
                if (!free_mask)
                    break;
                stream = (uint32_t)__builtin_ctz(free_mask);
                R->busy[k] |= 1u << stream;
            }
            uint32_t i = uheap_pop(h);
            R->nodes[i].stream = (uint8_t)stream;
            int rc = start_node(s, r, i, t, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int handle(etk_sim *s, const sevent *e, etk_error *err)
{
    uint64_t t = e->t;
    switch (e->kind) {
    case EV_NODE: {
        srank *R = &s->r[e->a];
        snode *n = &R->nodes[e->b];
        if (n->kind == K_COMP || n->kind == K_CPU) {
            acc(R, t);
            if (n->kind == K_COMP)
                R->n_comp--;
            else
                R->n_cpu--;
        } else if (n->type == ETK_NODE_SEND) {
            acc(R, t);
            R->n_xfer--;
            R->st.comm_bytes += n->bytes;
        }
        release_stream(R, n);
        complete(s, e->a, e->b, t);
        return 0;
    }
    case EV_COLL: {
        sgroup *g = &s->g[e->a];
        uint32_t k = e->b;
        sinst *in = g->inst[g->inst_head + (k - g->base)];
        if (s->nf)
            g->stat[in->ctype].time += t - in->xfer_t0;
        for (uint32_t p = 0; p < g->n_sim; p++) {
            uint32_t r = g->simrank[p];
            srank *R = &s->r[r];
            acc(R, t);
            R->n_xfer--;
            snode *n = &R->nodes[in->node[p]];
            R->st.comm_bytes += n->bytes;
            release_stream(R, n);
            complete(s, r, in->node[p], t);
        }
        g->inst[g->inst_head + (k - g->base)] = NULL;
        in->next_free = g->free_inst;
        g->free_inst = in;
        while (g->inst_n && !g->inst[g->inst_head]) {
            g->inst_head++;
            g->inst_n--;
            g->base++;
        }
        return 0;
    }
    case EV_P2P: { /* a receive's message has arrived */
        srank *R = &s->r[e->a];
        snode *n = &R->nodes[e->b];
        if (n->pos) {
            acc(R, t);
            R->n_xfer--;
        }
        complete(s, e->a, e->b, t);
        return 0;
    }
    }
    return etk_err(err, ETK_EINVAL, "simulator: corrupt event");
}

static int flush_dirty(etk_sim *s, uint64_t t, etk_error *err)
{
    /* dispatch can mark more ranks dirty (never the same one twice in a row for the same node) */
    for (uint32_t k = 0; k < s->n_dirty; k++) {
        int rc = dispatch(s, s->dirty[k], t, err);
        if (rc)
            return rc;
    }
    s->n_dirty = 0;
    return s->broken ? oom(err) : 0;
}

/* Flow network model: advance the flows to the next engine event (or t_end); a collective whose
 * last transfer completes first becomes an EV_COLL event at that time (rounded up to the ns). */
static int flow_pump(etk_sim *s, uint64_t t_end, etk_error *err)
{
    uint64_t lim = s->n_ev && s->ev[0].t < t_end ? s->ev[0].t : t_end;
    if (!etk_net_flows_busy(s->nf) && lim == UINT64_MAX)
        return 0;
    uint64_t tag;
    double tc;
    int got = etk_net_flows_next(s->nf, lim == UINT64_MAX ? INFINITY : (double)lim, &tag, &tc);
    if (got < 0)
        return oom(err);
    if (got) {
        uint64_t te = (uint64_t)ceil(tc);
        if (te < s->now)
            te = s->now;
        if (tag >> 63) { /* a send: it completes, and the receive matched to it arrives */
            uint32_t r = (uint32_t)(tag >> 32) & 0x7fffffffu, i = (uint32_t)tag;
            srank *R = &s->r[r];
            snode *n = &R->nodes[i];
            n->dur_ns = te - n->start_ns;
            R->p2p_time += n->dur_ns;
            if (ev_push(s, te, EV_NODE, r, i) != 0)
                return oom(err);
            if (n->pos && ev_push(s, te, EV_P2P, s->ch[n->aux].dst, n->pos - 1) != 0)
                return oom(err);
            n->pos = 0;
        } else if (ev_push(s, te, EV_COLL, (uint32_t)(tag >> 32), (uint32_t)tag) != 0) {
            return oom(err);
        }
    }
    return 0;
}

int etk_sim_run_until(etk_sim *s, uint64_t t_end, etk_error *err)
{
    if (s->broken)
        return etk_err(err, ETK_EINVAL, "simulator: unusable after an earlier error");
    int rc = flush_dirty(s, s->now, err);
    while (!rc && s->nf && (rc = flow_pump(s, t_end, err)) == 0 && s->n_ev && s->ev[0].t <= t_end) {
        uint64_t t = s->ev[0].t;
        s->now = t;
        while (!rc && s->n_ev && s->ev[0].t == t) {
            sevent e = ev_pop(s);
            rc = handle(s, &e, err);
        }
        if (!rc)
            rc = flush_dirty(s, t, err);
    }
    while (!rc && !s->nf && s->n_ev && s->ev[0].t <= t_end) {
        uint64_t t = s->ev[0].t;
        s->now = t;
        while (!rc && s->n_ev && s->ev[0].t == t) {
            sevent e = ev_pop(s);
            rc = handle(s, &e, err);
        }
        if (!rc)
            rc = flush_dirty(s, t, err);
    }
    if (rc) {
        s->broken = true;
        return rc;
    }
    if (t_end != UINT64_MAX && t_end > s->now)
        s->now = t_end;
    return 0;
}

uint64_t etk_sim_now(const etk_sim *s) { return s->now; }

/* ---------- deadlock report ---------- */

static size_t describe_block(const etk_sim *s, uint32_t r, char *buf, size_t len)
{
    const srank *R = &s->r[r];
    size_t off = 0;
    int shown = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (off < len)                                                                             \
            off += (size_t)snprintf(buf + off, len - off, __VA_ARGS__);                            \
    } while (0)
    for (uint32_t i = 0; i < R->n && shown < 3; i++) {
        const snode *n = &R->nodes[i];
        if (n->state != ST_ISSUED)
            continue;
        const sgroup *g = n->type == ETK_NODE_COLL ? &s->g[n->aux] : NULL;
        const sinst *in = g && n->seq >= g->base && n->seq - g->base < g->inst_n
                              ? g->inst[g->inst_head + (n->seq - g->base)]
                              : NULL;
        if (in && in->arrived < g->n_sim) {
            PUT("%s collective #%u %s of %" PRIu64 " bytes on group \"%s\" (node id %" PRIu64
                ") waits for rank(s)",
                shown ? ";" : "", n->seq, etk_coll_type_name(n->ctype), n->bytes,
                g->name[0] ? g->name : "all ranks", n->id);
            int w = 0;
            for (uint32_t p = 0; p < g->n_sim; p++)
                if (in->node[p] == SIM_NONE) {
                    if (w < 8)
                        PUT(" %u", g->simrank[p]);
                    w++;
                }
            if (w > 8)
                PUT(" ... (%d in all)", w);
            shown++;
        } else if (n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV) {
            bool snd = n->type == ETK_NODE_SEND;
            int64_t peer = -1, tag = 0;
            etk_node_i64(n->src, snd ? "comm_dst" : "comm_src", &peer);
            etk_node_i64(n->src, "comm_tag", &tag);
            PUT("%s %s rank %" PRId64 " tag %" PRId64 " (node id %" PRIu64
                ") waits for the matching %s",
                shown ? ";" : "", snd ? "send to" : "recv from", peer, tag, n->id,
                snd ? "recv" : "send");
            shown++;
        }
    }
    if (!shown) {
        /* nothing issued: name the first waiting node and an unfinished dependency */
        for (uint32_t i = 0; i < R->n; i++) {
            const snode *n = &R->nodes[i];
            if (n->state != ST_WAIT)
                continue;
            PUT(" node id %" PRIu64 " waits for %u unfinished dependenc%s", n->id, n->pending,
                n->pending == 1 ? "y" : "ies");
            const etk_node *e = n->src;
            for (int l = 0; l < 2; l++) {
                const uint64_t *d = l ? e->ctrl_deps : e->data_deps;
                uint32_t nd = l ? e->n_ctrl_deps : e->n_data_deps;
                for (uint32_t k = 0; k < nd; k++) {
                    uint32_t j = id_get(R, d[k]);
                    if (j != SIM_NONE && R->nodes[j].state != ST_DONE) {
                        PUT(" (e.g. node id %" PRIu64 "%s)", d[k],
                            j == i ? ": itself" : R->nodes[j].state == ST_WAIT ? ", also waiting" : "");
                        l = 2;
                        break;
                    }
                }
            }
            break;
        }
    }
#undef PUT
    return off;
}

int etk_sim_finish(etk_sim *s, etk_error *err)
{
    int rc = etk_sim_run_until(s, UINT64_MAX, err);
    if (rc)
        return rc;
    if (s->flops_overflow_rank != SIM_NONE)
        return etk_err(err, ETK_EINVAL,
                       "rank %u: the sum of num_ops passes 1.8e19 FLOPs (nodes with num_ops near 2^63: saturated or "
                       "corrupt values); FLOPs/step and MFU would be wrong", s->flops_overflow_rank);
    if (s->now > SIM_MAX_NS)
        return etk_err(err, ETK_EINVAL, "simulated step time %.3g ns is past 1e18 ns (31.7 years): an input out of range",
                       (double)s->now);
    uint32_t blocked = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++)
        if (s->r[r].simulated && s->r[r].n_done < s->r[r].n)
            blocked++;
    if (blocked) {
        char msg[900];
        size_t off = (size_t)snprintf(msg, sizeof msg,
                                      "deadlock at t = %" PRIu64 " ns: %u %srank(s) cannot proceed.",
                                      s->now, blocked, s->folded ? "simulated " : "");
        uint32_t shown = 0;
        for (uint32_t r = 0; r < s->n_ranks && off < sizeof msg; r++) {
            const srank *R = &s->r[r];
            if (!R->simulated || R->n_done == R->n)
                continue;
            if (shown == 6) {
                off += (size_t)snprintf(msg + off, sizeof msg - off, " ... (%u more ranks)",
                                        blocked - shown);
                break;
            }
            off += (size_t)snprintf(msg + off, sizeof msg - off, " Rank %u (%u of %u nodes done):",
                                    r, R->n_done, R->n);
            if (off < sizeof msg)
                off += describe_block(s, r, msg + off, sizeof msg - off);
            if (off < sizeof msg)
                off += (size_t)snprintf(msg + off, sizeof msg - off, ".");
            shown++;
        }
        s->broken = true;
        return etk_err(err, ETK_EINVAL, "%s", msg);
    }
    if (s->p2p_mismatch)
        note(s, "%" PRIu64 " send/recv pairs of different comm_size, timed at the send's size (the first: "
             "rank %" PRIu64 " id %" PRIu64 " sends %" PRIu64 " B, rank %" PRIu64 " id %" PRIu64 " expects %" PRIu64 " B)",
             s->p2p_mismatch, s->p2p_first[0], s->p2p_first[1], s->p2p_first_b[0], s->p2p_first[2],
             s->p2p_first[3], s->p2p_first_b[1]);
    rc = sim_build_result(s, err);
    if (rc)
        return rc;
    s->finished = true;
    return 0;
}

const etk_sim_result *etk_sim_result_get(etk_sim *s) { return s->finished ? &s->res : NULL; }

void etk_sim_free(etk_sim *s)
{
    if (!s)
        return;
    for (uint32_t r = 0; s->r && r < s->n_ranks; r++) {
        srank *R = &s->r[r];
        if (!in_pool(s, R->nodes))
            free(R->nodes);
        if (!in_pool(s, R->succ))
            free(R->succ);
        free(R->xe);
        kmap_free(&R->ids);
        if (!in_pool(s, R->dense))
            free(R->dense);
        for (int k = 0; k < K_COUNT; k++)
            free(R->ready[k].a);
    }
    for (uint32_t i = 0; s->g && i < s->n_g; i++) {
        sgroup *g = &s->g[i];
        free(g->sorted);
        free(g->simpos);
        free(g->simrank);
        free(g->issued);
        for (uint32_t k = 0; k < g->inst_n; k++) {
            sinst *in = g->inst[g->inst_head + k];
            if (in) {
                free(in->node);
                free(in);
            }
        }
        free(g->inst);
        while (g->free_inst) {
            sinst *in = g->free_inst;
            g->free_inst = in->next_free;
            free(in->node);
            free(in);
        }
    }
    free(s->g);
    free(s->r);
    free(s->speed);
    free(s->cls);
    free(s->rep);
    free(s->csize);
    free(s->all_ranks);
    etk_net_flows_free(s->nf);
    kmap_free(&s->gnames);
    kmap_free(&s->costcache);
    kmap_free(&s->chmap);
    free(s->costv);
    free(s->ch);
    free(s->ev);
    free(s->dirty);
    free(s->held);
    free(s->res.ranks);
    free(s->res.coll);
    free(s->res.phase_end_ns);
    free(s->pool);
    free(s);
}
