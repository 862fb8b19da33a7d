/* fold.c — rank folding and the whole-workload driver (etk_sim_workload) behind `etkit sim`
 * and `etkit run`.
 *
 * Folding simulates one representative rank per class of ranks that behave identically and
 * copies its figures to the others. It is exact when (1) the traces of a class are the same up
 * to the renaming of groups and peers, (2) every group a representative uses contains the
 * representative of each class it touches (so collectives can be matched among representatives),
 * (3) corresponding groups of all ranks of a class have the same class make-up and the same
 * network cost, and (4) corresponding point-to-point peers are in the same class, at the same
 * cost, and unique per (direction, peer class, tag). Workloads read from files are checked node
 * by node; generator workloads (class_of set, only representatives' traces present) are checked
 * through group placement (same member-offset pattern and cost for every rank) and peers at the
 * same rank offset. When any check fails nothing is folded. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/internal.h"

/* Group-name index: (hash, group index) sorted by hash, so a lookup is a binary search. */
typedef struct gname {
    uint64_t h;
    uint32_t idx;
} gname;

typedef struct fctx {
    const etk_workload *wl;
    const etk_cluster *c;
    etk_sim_costs costs;
    uint32_t n;
    uint32_t *cls, *rep, ncls;
    /* groups */
    uint32_t ng;
    uint64_t *pattern;  /* member offsets hash per group */
    uint64_t *clsig;    /* class make-up hash per group */
    uint32_t *mem_off;  /* rank -> CSR of groups containing it */
    uint32_t *mem;
    uint8_t *reps_ok;   /* per group: 0 unknown, 1 every touched class's rep inside, 2 not */
    gname *gidx;        /* group names sorted by hash */
    uint32_t n_gidx;
} fctx;

static uint64_t defc_coll(void *ctx, const etk_cluster *c, etk_coll_type t, uint64_t b,
                          const uint32_t *r, uint32_t n)
{
    (void)ctx;
    return etk_net_coll_ns(c, t, b, r, n);
}
static uint64_t defc_p2p(void *ctx, const etk_cluster *c, uint32_t s, uint32_t d, uint64_t b)
{
    (void)ctx;
    return etk_net_p2p_ns(c, s, d, b);
}

static uint64_t hmix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static int cmpu(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_gname(const void *a, const void *b)
{
    const gname *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h ? 1 : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static long find_named(const fctx *f, const char *id)
{
    const etk_groups *gs = f->wl->groups;
    if (!gs)
        return -2;
    if (f->gidx) {
        const gname *g_index = f->gidx;
        uint32_t g_count = f->n_gidx;
        uint64_t h = etk_hash_str(id);
        uint32_t lo = 0, hi = g_count;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (g_index[mid].h < h)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < g_count && g_index[lo].h == h; lo++)
            if (strcmp(gs->groups[g_index[lo].idx].id, id) == 0)
                return g_index[lo].idx;
        return -2;
    }
    const etk_group *g = etk_groups_find(gs, id);
    return g ? g - gs->groups : -2;
}

/* group id of a node's pg_name in the workload's groups: index, -1 = all ranks, -2 unknown */
static long node_group(const fctx *f, const etk_node *e)
{
    const char *pg = etk_node_str(e, "pg_name");
    if (!pg || !pg[0] || strcmp(pg, "0") == 0) {
        long g = find_named(f, pg && pg[0] ? pg : "0");
        if (g == -2 && f->wl->groups)
            g = find_named(f, "");
        return g >= 0 ? g : -1;
    }
    return find_named(f, pg);
}

static void group_ranks(const fctx *f, long gi, const uint32_t **ranks, uint32_t *n,
                        uint32_t *all)
{
    if (gi < 0) {
        *ranks = all;
        *n = f->n;
    } else {
        *ranks = f->wl->groups->groups[gi].ranks;
        *n = f->wl->groups->groups[gi].n_ranks;
    }
}

static uint64_t trace_hash(const etk_trace *t, const fctx *f)
{
    /* ids relative to the first node's: traces whose ids differ by a constant (ASTRA-sim's
     * microbenchmarks number rank r's node r) issue in the same order */
    uint64_t h = t->n_nodes, b = t->n_nodes ? t->nodes[0].id : 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *e = &t->nodes[i];
        h = hmix(h, e->id - b);
        h = hmix(h, (uint64_t)e->type);
        h = hmix(h, e->duration_micros);
        for (uint32_t k = 0; k < e->n_data_deps; k++)
            h = hmix(h, e->data_deps[k] - b);
        h = hmix(h, 77);
        for (uint32_t k = 0; k < e->n_ctrl_deps; k++)
            h = hmix(h, e->ctrl_deps[k] - b);
        int64_t v = 0;
        uint64_t u = 0;
        bool b = false;
        h = hmix(h, etk_node_i64(e, "num_ops", &v) ? (uint64_t)v : 1);
        h = hmix(h, etk_node_u64(e, "tensor_size", &u) ? u : 2);
        h = hmix(h, etk_node_bool(e, "is_cpu_op", &b) ? b : 3);
        if (e->type == ETK_NODE_COLL || e->type == ETK_NODE_SEND || e->type == ETK_NODE_RECV) {
            h = hmix(h, etk_node_i64(e, "comm_type", &v) ? (uint64_t)v : 4);
            h = hmix(h, etk_node_i64(e, "comm_size", &v) ? (uint64_t)v : 5);
            h = hmix(h, etk_node_i64(e, "comm_tag", &v) ? (uint64_t)v : 6);
        }
        if (e->type == ETK_NODE_COLL) {
            long gi = node_group(f, e);
            h = hmix(h, gi >= 0 ? f->wl->groups->groups[gi].n_ranks : gi == -1 ? 0xa11 : 0xbad);
        }
    }
    return h;
}

static bool same_deps(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb,
                      uint64_t off)
{
    if (na != nb)
        return false;
    for (uint32_t k = 0; k < na; k++)
        if (a[k] - b[k] != off)
            return false;
    return true;
}

/* Same node sequence up to group and peer renaming (the peers and groups are checked later). */
static bool same_trace(const etk_trace *x, const etk_trace *y)
{
    if (x->n_nodes != y->n_nodes)
        return false;
    uint64_t off = x->n_nodes ? x->nodes[0].id - y->nodes[0].id : 0;
    for (size_t i = 0; i < x->n_nodes; i++) {
        const etk_node *a = &x->nodes[i], *b = &y->nodes[i];
        if (a->id - b->id != off || a->type != b->type ||
            a->duration_micros != b->duration_micros ||
            !same_deps(a->data_deps, a->n_data_deps, b->data_deps, b->n_data_deps, off) ||
            !same_deps(a->ctrl_deps, a->n_ctrl_deps, b->ctrl_deps, b->n_ctrl_deps, off))
            return false;
        static const char *keys[] = {"num_ops", "tensor_size", "comm_type", "comm_size",
                                     "comm_tag", "is_cpu_op"};
        for (int k = 0; k < 6; k++) {
            int64_t va = 0, vb = 0;
            bool ha = etk_node_i64(a, keys[k], &va), hb = etk_node_i64(b, keys[k], &vb);
            if (ha != hb || va != vb)
                return false;
        }
    }
    return true;
}

static int prep_groups(fctx *f)
{
    const etk_groups *gs = f->wl->groups;
    f->ng = gs ? (uint32_t)gs->n_groups : 0;
    f->pattern = calloc(f->ng + 1, sizeof(uint64_t));
    f->clsig = calloc(f->ng + 1, sizeof(uint64_t));
    f->mem_off = calloc((size_t)f->n + 1, sizeof(uint32_t));
    f->reps_ok = calloc(f->ng + 1, 1);
    if (!f->pattern || !f->clsig || !f->mem_off || !f->reps_ok)
        return -1;
    size_t tot = 0;
    for (uint32_t g = 0; g < f->ng; g++) {
        for (uint32_t k = 0; k < gs->groups[g].n_ranks; k++)
            if (gs->groups[g].ranks[k] < f->n)
                f->mem_off[gs->groups[g].ranks[k] + 1]++;
        tot += gs->groups[g].n_ranks;
    }
    for (uint32_t r = 0; r < f->n; r++)
        f->mem_off[r + 1] += f->mem_off[r];
    f->mem = malloc(sizeof(uint32_t) * (tot + 1));
    uint32_t *fill = calloc((size_t)f->n + 1, sizeof(uint32_t));
    uint32_t maxn = 1;
    for (uint32_t g = 0; g < f->ng; g++)
        if (gs->groups[g].n_ranks > maxn)
            maxn = gs->groups[g].n_ranks;
    uint32_t *tmp = malloc(sizeof(uint32_t) * maxn);
    uint32_t *ctmp = malloc(sizeof(uint32_t) * maxn);
    if (!f->mem || !fill || !tmp || !ctmp) {
        free(fill);
        free(tmp);
        free(ctmp);
        return -1;
    }
    for (uint32_t g = 0; g < f->ng; g++) {
        const etk_group *G = &gs->groups[g];
        for (uint32_t k = 0; k < G->n_ranks; k++) {
            uint32_t r = G->ranks[k];
            if (r < f->n)
                f->mem[f->mem_off[r] + fill[r]++] = g;
            tmp[k] = r;
        }
        qsort(tmp, G->n_ranks, sizeof(uint32_t), cmpu);
        uint64_t h = G->n_ranks;
        for (uint32_t k = 0; k < G->n_ranks; k++) {
            h = hmix(h, tmp[k] - tmp[0]);
            ctmp[k] = tmp[k] < f->n ? f->cls[tmp[k]] : UINT32_MAX;
        }
        f->pattern[g] = h;
        qsort(ctmp, G->n_ranks, sizeof(uint32_t), cmpu);
        uint64_t c = G->n_ranks;
        for (uint32_t k = 0; k < G->n_ranks; k++)
            c = hmix(c, ctmp[k]);
        f->clsig[g] = c;
    }
    free(fill);
    free(tmp);
    free(ctmp);
    return 0;
}

static bool has_rank(const etk_group *G, uint32_t r)
{
    for (uint32_t k = 0; k < G->n_ranks; k++)
        if (G->ranks[k] == r)
            return true;
    return false;
}

/* Condition (2): every class touched by group gi has its representative in it. */
static bool reps_inside(const fctx *f, long gi)
{
    if (gi < 0)
        return true; /* all ranks: every representative is a member */
    if (f->reps_ok[gi])
        return f->reps_ok[gi] == 1;
    const etk_group *G = &f->wl->groups->groups[gi];
    bool ok = true;
    /* members sorted once: O(n log n) per group */
    uint32_t *m = malloc(sizeof(uint32_t) * (G->n_ranks ? G->n_ranks : 1));
    if (!m) {
        for (uint32_t k = 0; k < G->n_ranks && ok; k++)
            ok = has_rank(G, f->rep[f->cls[G->ranks[k]]]);
    } else {
        memcpy(m, G->ranks, sizeof(uint32_t) * G->n_ranks);
        qsort(m, G->n_ranks, sizeof(uint32_t), cmpu);
        for (uint32_t k = 0; k < G->n_ranks && ok; k++) {
            uint32_t want = G->ranks[k] < f->n ? f->rep[f->cls[G->ranks[k]]] : UINT32_MAX;
            ok = bsearch(&want, m, G->n_ranks, sizeof(uint32_t), cmpu) != NULL;
        }
        free(m);
    }
    f->reps_ok[gi] = ok ? 1 : 2;
    return ok;
}

static uint64_t scale_of(const etk_sim_opts *o) { return o && o->stage_units ? 2 : 1; }

/* Members of one class must use a group at the same node positions (else the k-th collective
 * of one member is not the k-th of another and matching among representatives is wrong). */
typedef struct useseq {
    uint64_t *h;     /* [ng+1] running hash of node positions for the current rank */
    uint32_t *stamp; /* [ng+1] rank+1 that last touched the slot */
    uint32_t *touched;
    uint32_t n_touched;
    uint32_t (*cls)[8];
    uint64_t (*ch)[8];
    uint8_t *nc;
} useseq;

typedef struct peerkey {
    uint64_t key; /* direction, tag, peer class */
    int64_t peer;
} peerkey;

static int cmp_peerkey(const void *a, const void *b)
{
    const peerkey *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Each (direction, tag, peer class) of a trace goes to one peer only (sorting: O(n log n)). */
static bool peers_unique(const fctx *f, const etk_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_nodes; i++)
        n += t->nodes[i].type == ETK_NODE_SEND || t->nodes[i].type == ETK_NODE_RECV;
    if (n < 2)
        return true;
    peerkey *k = malloc(sizeof *k * n);
    if (!k)
        return false;
    size_t m = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *e = &t->nodes[i];
        if (e->type != ETK_NODE_SEND && e->type != ETK_NODE_RECV)
            continue;
        int64_t p = -1, tag = 0;
        etk_node_i64(e, e->type == ETK_NODE_SEND ? "comm_dst" : "comm_src", &p);
        etk_node_i64(e, "comm_tag", &tag);
        uint64_t pc = p >= 0 && p < f->n ? f->cls[p] : UINT32_MAX;
        k[m++] = (peerkey){hmix(hmix((uint64_t)e->type, (uint64_t)tag), pc), p};
    }
    qsort(k, m, sizeof *k, cmp_peerkey);
    bool ok = true;
    for (size_t i = 1; i < m && ok; i++)
        ok = k[i].key != k[i - 1].key || k[i].peer == k[i - 1].peer;
    free(k);
    return ok;
}

static const char *check_rank(fctx *f, uint64_t sc, uint32_t *all, uint32_t r, struct useseq *u);

static const char *useseq_flush(useseq *u, uint32_t c)
{
    for (uint32_t k = 0; k < u->n_touched; k++) {
        uint32_t g = u->touched[k], j = 0;
        while (j < u->nc[g] && u->cls[g][j] != c)
            j++;
        if (j < u->nc[g]) {
            if (u->ch[g][j] != u->h[g])
                return "members of one class use a group in a different order";
        } else if (j == 8) {
            return "a group spans too many classes";
        } else {
            u->cls[g][j] = c;
            u->ch[g][j] = u->h[g];
            u->nc[g]++;
        }
    }
    u->n_touched = 0;
    return NULL;
}

/* File workloads: every rank against its representative, node by node. */
static const char *check_files(fctx *f, const etk_sim_opts *o, uint32_t *all)
{
    uint64_t sc = scale_of(o);
    useseq u = {0};
    const char *bad = NULL;
    u.h = calloc(f->ng + 1, sizeof(uint64_t));
    u.stamp = calloc(f->ng + 1, sizeof(uint32_t));
    u.touched = calloc(f->ng + 1, sizeof(uint32_t));
    u.cls = calloc(f->ng + 1, sizeof *u.cls);
    u.ch = calloc(f->ng + 1, sizeof *u.ch);
    u.nc = calloc(f->ng + 1, 1);
    if (!u.h || !u.stamp || !u.touched || !u.cls || !u.ch || !u.nc) {
        bad = "out of memory";
        goto out;
    }
    for (uint32_t r = 0; r < f->n && !bad; r++) {
        bad = check_rank(f, sc, all, r, &u);
        if (!bad)
            bad = useseq_flush(&u, f->cls[r]);
    }
out:
    free(u.h);
    free(u.stamp);
    free(u.touched);
    free(u.cls);
    free(u.ch);
    free(u.nc);
    return bad;
}

static const char *check_rank(fctx *f, uint64_t sc, uint32_t *all, uint32_t r, useseq *u)
{
    {
        uint32_t q = f->rep[f->cls[r]];
        const etk_trace *T = f->wl->ranks[r], *Q = f->wl->ranks[q];
        /* (4) uniqueness of peers per (direction, peer class, tag), checked on every rank */
        for (size_t i = 0; i < T->n_nodes; i++) {
            const etk_node *a = &T->nodes[i], *b = &Q->nodes[i];
            if (a->type == ETK_NODE_COLL) {
                long ga = node_group(f, a), gb = node_group(f, b);
                if (ga == -2 || gb == -2)
                    return "a collective names a group that does not exist";
                if (!reps_inside(f, gb))
                    return "a group spans classes without containing their representatives";
                if ((ga < 0) != (gb < 0) || (ga >= 0 && f->clsig[ga] != f->clsig[gb]))
                    return "corresponding groups have different class make-up";
                if (ga >= 0 && !has_rank(&f->wl->groups->groups[ga], r))
                    return "a rank issues a collective on a group it is not in";
                uint32_t gs = ga < 0 ? f->ng : (uint32_t)ga;
                if (u->stamp[gs] != r + 1) {
                    u->stamp[gs] = r + 1;
                    u->h[gs] = 0;
                    u->touched[u->n_touched++] = gs;
                }
                u->h[gs] = hmix(u->h[gs], i);
                int64_t ct = 0, cs = 0;
                etk_node_i64(a, "comm_type", &ct);
                etk_node_i64(a, "comm_size", &cs);
                if (ga != gb && ct >= 0 && ct < ETK_COLL_TYPE_COUNT && cs >= 0) {
                    const uint32_t *ra, *rb;
                    uint32_t na, nb;
                    group_ranks(f, ga, &ra, &na, all);
                    group_ranks(f, gb, &rb, &nb, all);
                    uint64_t x = f->costs.coll_ns(f->costs.ctx, f->c, (etk_coll_type)ct,
                                                  (uint64_t)cs * sc, ra, na);
                    uint64_t y = f->costs.coll_ns(f->costs.ctx, f->c, (etk_coll_type)ct,
                                                  (uint64_t)cs * sc, rb, nb);
                    if (x != y)
                        return "corresponding groups are placed differently on the network";
                }
            } else if (a->type == ETK_NODE_SEND || a->type == ETK_NODE_RECV) {
                const char *k = a->type == ETK_NODE_SEND ? "comm_dst" : "comm_src";
                int64_t pa = -1, pb = -1, cs = 0;
                etk_node_i64(a, k, &pa);
                etk_node_i64(b, k, &pb);
                if (pa < 0 || pb < 0 || pa >= f->n || pb >= f->n)
                    return "a send or recv names a peer outside the workload";
                if (f->cls[pa] != f->cls[pb])
                    return "corresponding peers are in different classes";
                etk_node_i64(a, "comm_size", &cs);
                if (a->type == ETK_NODE_SEND &&
                    f->costs.p2p_ns(f->costs.ctx, f->c, r, (uint32_t)pa, (uint64_t)cs * sc) !=
                        f->costs.p2p_ns(f->costs.ctx, f->c, q, (uint32_t)pb, (uint64_t)cs * sc))
                    return "corresponding messages are placed differently on the network";
            }
        }
    }
    return peers_unique(f, f->wl->ranks[r]) ? NULL
                                             : "a rank talks to two peers of one class with the "
                                               "same tag";
}

/* Generator workloads: only representatives have traces. */
/* Cost of one collective on group g, memoized per (type, size) key: every group is placed at
 * most once per key (stamp = the key's number), so a class of N ranks costs O(N) placements'
 * worth of work instead of one O(group size) placement per rank (quadratic for DP-only plans). */
typedef struct gcache {
    uint64_t *ns;
    uint32_t *stamp;
} gcache;

static uint64_t group_cost(fctx *f, gcache *gc, uint32_t stamp, uint32_t g, etk_coll_type ct, uint64_t bytes)
{
    if (gc->ns && gc->stamp[g] == stamp)
        return gc->ns[g];
    const etk_group *G = &f->wl->groups->groups[g];
    uint64_t ns = f->costs.coll_ns(f->costs.ctx, f->c, ct, bytes, G->ranks, G->n_ranks);
    if (gc->ns) {
        gc->ns[g] = ns;
        gc->stamp[g] = stamp;
    }
    return ns;
}

static const char *check_classes_cached(fctx *f, const etk_sim_opts *o, gcache *gc);

static const char *check_classes(fctx *f, const etk_sim_opts *o)
{
    gcache gc = {calloc(f->ng + 1, sizeof(uint64_t)), calloc(f->ng + 1, sizeof(uint32_t))};
    if (!gc.ns || !gc.stamp) { /* no memo: the same answers, slower */
        free(gc.ns);
        free(gc.stamp);
        gc.ns = NULL;
        gc.stamp = NULL;
    }
    const char *why = check_classes_cached(f, o, &gc);
    free(gc.ns);
    free(gc.stamp);
    return why;
}

static const char *check_classes_cached(fctx *f, const etk_sim_opts *o, gcache *gc)
{
    uint64_t sc = scale_of(o);
    uint32_t stamp = 0;
    for (uint32_t c = 0; c < f->ncls; c++) {
        uint32_t q = f->rep[c];
        const etk_trace *Q = f->wl->ranks[q];
        uint64_t seen_keys[256];
        uint32_t n_seen = 0;
        if (!Q)
            return "a class representative has no trace";
        if (!peers_unique(f, Q))
            return "a rank talks to two peers of one class with the same tag";
        for (size_t i = 0; i < Q->n_nodes; i++) {
            const etk_node *b = &Q->nodes[i];
            if (b->type == ETK_NODE_COLL) {
                long gb = node_group(f, b);
                if (gb == -2)
                    return "a collective names a group that does not exist";
                if (!reps_inside(f, gb))
                    return "a group spans classes without containing their representatives";
                if (gb < 0)
                    continue;
                /* each (group, type, size) is checked once per class */
                int64_t t1 = 0, s1 = 0;
                etk_node_i64(b, "comm_type", &t1);
                etk_node_i64(b, "comm_size", &s1);
                uint64_t key = hmix(hmix(hmix(c, (uint64_t)gb), (uint64_t)t1), (uint64_t)s1);
                bool seen = false;
                for (uint32_t j = 0; j < n_seen && !seen; j++)
                    seen = seen_keys[j] == key;
                if (seen)
                    continue;
                if (n_seen < 256)
                    seen_keys[n_seen++] = key;
                int64_t ct = 0, cs = 0;
                etk_node_i64(b, "comm_type", &ct);
                etk_node_i64(b, "comm_size", &cs);
                if (ct < 0 || ct >= ETK_COLL_TYPE_COUNT || cs < 0)
                    return "a collective has an invalid type or size";
                stamp++;
                uint64_t want = group_cost(f, gc, stamp, (uint32_t)gb, (etk_coll_type)ct, (uint64_t)cs * sc);
                for (uint32_t r = 0; r < f->n; r++) {
                    if (f->cls[r] != c || r == q)
                        continue;
                    bool ok = false;
                    for (uint32_t m = f->mem_off[r]; m < f->mem_off[r + 1] && !ok; m++) {
                        uint32_t g2 = f->mem[m];
                        if (f->pattern[g2] != f->pattern[gb] || f->clsig[g2] != f->clsig[gb])
                            continue;
                        ok = group_cost(f, gc, stamp, g2, (etk_coll_type)ct, (uint64_t)cs * sc) == want;
                    }
                    if (!ok)
                        return "some rank has no group placed like its representative's";
                }
            } else if (b->type == ETK_NODE_SEND || b->type == ETK_NODE_RECV) {
                const char *k = b->type == ETK_NODE_SEND ? "comm_dst" : "comm_src";
                int64_t p = -1, cs = 0;
                etk_node_i64(b, k, &p);
                etk_node_i64(b, "comm_size", &cs);
                if (p < 0 || p >= f->n)
                    return "a send or recv names a peer outside the workload";
                int64_t d = p - (int64_t)q;
                uint64_t want = f->costs.p2p_ns(f->costs.ctx, f->c, q, (uint32_t)p,
                                                (uint64_t)cs * sc);
                for (uint32_t r = 0; r < f->n; r++) {
                    if (f->cls[r] != c || r == q)
                        continue;
                    int64_t pr = (int64_t)r + d;
                    if (pr < 0 || pr >= f->n || f->cls[pr] != f->cls[p])
                        return "peers of a class are not at a common rank offset";
                    if (b->type == ETK_NODE_SEND &&
                        f->costs.p2p_ns(f->costs.ctx, f->c, r, (uint32_t)pr, (uint64_t)cs * sc) !=
                            want)
                        return "corresponding messages are placed differently on the network";
                }
            }
        }
    }
    return NULL;
}

int etk_sim_classes(const etk_workload *wl, const etk_cluster *c, const etk_sim_opts *opts,
                    uint32_t **class_of, uint32_t **class_rep, const char **why, etk_error *err)
{
    *class_of = *class_rep = NULL;
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    fctx f = {.wl = wl, .c = c, .n = wl->n_ranks};
    f.costs.coll_ns = defc_coll;
    f.costs.p2p_ns = defc_p2p;
    if (opts && opts->costs) {
        if (opts->costs->coll_ns)
            f.costs.coll_ns = opts->costs->coll_ns;
        if (opts->costs->p2p_ns)
            f.costs.p2p_ns = opts->costs->p2p_ns;
        f.costs.ctx = opts->costs->ctx;
    }
    f.cls = malloc(sizeof(uint32_t) * f.n);
    f.rep = malloc(sizeof(uint32_t) * f.n);
    uint32_t *all = malloc(sizeof(uint32_t) * f.n);
    uint64_t *h = NULL;
    int rc = 0;
    if (!f.cls || !f.rep || !all) {
        rc = etk_err(err, ETK_ENOMEM, "folding: out of memory");
        goto out;
    }
    for (uint32_t r = 0; r < f.n; r++)
        all[r] = r;
    if (wl->groups && wl->groups->n_groups) {
        f.n_gidx = (uint32_t)wl->groups->n_groups;
        f.gidx = malloc(sizeof(gname) * f.n_gidx);
        if (f.gidx) { /* else lookups fall back to etk_groups_find */
            for (uint32_t i = 0; i < f.n_gidx; i++)
                f.gidx[i] = (gname){etk_hash_str(wl->groups->groups[i].id), i};
            qsort(f.gidx, f.n_gidx, sizeof(gname), cmp_gname);
        }
    }
    bool from_gen = wl->class_of && wl->class_rep && wl->n_classes;
    if (from_gen) {
        f.ncls = wl->n_classes;
        memcpy(f.cls, wl->class_of, sizeof(uint32_t) * f.n);
        memcpy(f.rep, wl->class_rep, sizeof(uint32_t) * f.ncls);
    } else {
        /* classes by trace hash, confirmed by comparing with the first rank of the class */
        h = malloc(sizeof(uint64_t) * f.n);
        if (!h) {
            rc = etk_err(err, ETK_ENOMEM, "folding: out of memory");
            goto out;
        }
        for (uint32_t r = 0; r < f.n; r++) {
            if (!wl->ranks[r]) {
                *why = "a rank has no trace";
                goto nofold;
            }
            h[r] = trace_hash(wl->ranks[r], &f);
        }
        /* O(n * classes) grouping; classes are few when folding pays off */
        f.ncls = 0;
        for (uint32_t r = 0; r < f.n; r++) {
            uint32_t k = 0;
            while (k < f.ncls && h[f.rep[k]] != h[r])
                k++;
            if (k == f.ncls) {
                if (f.ncls >= 64 && f.ncls * 2 > r) { /* too many classes to be worth it */
                    *why = "too many distinct traces";
                    goto nofold;
                }
                f.rep[f.ncls++] = r;
            } else if (!same_trace(wl->ranks[f.rep[k]], wl->ranks[r])) {
                *why = "traces with equal hashes differ";
                goto nofold;
            }
            f.cls[r] = k;
        }
    }
    if (f.ncls >= f.n) {
        *why = "every rank is its own class";
        goto nofold;
    }
    if (prep_groups(&f) != 0) {
        rc = etk_err(err, ETK_ENOMEM, "folding: out of memory");
        goto out;
    }
    *why = from_gen ? check_classes(&f, opts) : check_files(&f, opts, all);
    if (*why)
        goto nofold;
    *class_of = f.cls;
    *class_rep = f.rep;
    f.cls = f.rep = NULL;
    rc = (int)f.ncls;
    goto out;
nofold:
    for (uint32_t r = 0; r < f.n; r++)
        f.cls[r] = f.rep[r] = r;
    *class_of = f.cls;
    *class_rep = f.rep;
    f.cls = f.rep = NULL;
    rc = (int)f.n;
out:
    free(f.cls);
    free(f.rep);
    free(all);
    free(h);
    free(f.pattern);
    free(f.clsig);
    free(f.mem_off);
    free(f.mem);
    free(f.reps_ok);
    free(f.gidx);
    return rc;
}

int etk_sim_workload(const etk_workload *wl, const etk_cluster *c, const etk_sim_opts *opts,
                     etk_sim **out, etk_error *err)
{
    *out = NULL;
    int rc = etk_cluster_check(c, wl->n_ranks, err);
    if (rc) {
        etk_err_prefix(err, "cluster %s for workload %s", c->name,
                       wl->prefix ? wl->prefix : "(in memory)");
        return rc;
    }
    bool folded_input = false;
    for (uint32_t r = 0; r < wl->n_ranks; r++)
        if (!wl->ranks[r])
            folded_input = true;
    uint32_t *cls = NULL, *rep = NULL;
    const char *why = NULL;
    int ncls = (int)wl->n_ranks;
    bool hetero = false; /* per-rank speed factors break the symmetry folding relies on */
    for (uint32_t r = 0; opts && opts->rank_speed && r < opts->n_rank_speed; r++)
        if (opts->rank_speed[r] != 1.0)
            hetero = true;
    /* flow network model: transfers of every rank share the fabric, so every rank is simulated
     * (a folded run would leave the other classes' traffic off the links) */
    bool flow = c->net_model == ETK_NET_FLOW && !c->astra_compat;
    if (!(opts && opts->no_fold) && !hetero && !flow) {
        ncls = etk_sim_classes(wl, c, opts, &cls, &rep, &why, err);
        if (ncls < 0)
            return ncls;
    }
    if (folded_input && ncls == (int)wl->n_ranks) {
        free(cls);
        free(rep);
        return etk_err(err, ETK_EUNSUPPORTED,
                       "workload %s holds only class representatives but %s; generate it "
                       "unfolded to simulate every rank",
                       wl->prefix ? wl->prefix : "(in memory)",
                       hetero ? "per-rank speed factors (--slow-rank) are given"
                       : flow ? "the flow network model simulates every rank"
                       : opts && opts->no_fold ? "--no-fold was given"
                                             : why ? why : "it cannot be folded");
    }
    etk_sim *s = NULL;
    rc = etk_sim_new(c, wl->n_ranks, wl->groups, opts, &s, err);
    if (!rc && ncls < (int)wl->n_ranks)
        rc = etk_sim_set_classes(s, cls, rep, (uint32_t)ncls, err);
    free(cls);
    free(rep);
    if (!rc) { /* one block for all simulated ranks' arrays */
        uint64_t nodes = 0, deps = 0;
        for (uint32_t r = 0; r < wl->n_ranks; r++) {
            const etk_trace *t = wl->ranks[r];
            if (!s->r[r].simulated || !t)
                continue;
            nodes += t->n_nodes;
            for (size_t i = 0; i < t->n_nodes; i++)
                deps += t->nodes[i].n_data_deps + t->nodes[i].n_ctrl_deps;
        }
        etk_sim_reserve(s, nodes, deps);
    }
    for (uint32_t r = 0; !rc && r < wl->n_ranks; r++)
        if (s->r[r].simulated)
            rc = etk_sim_add_rank_trace(s, r, wl->ranks[r], err);
    if (!rc)
        rc = etk_sim_finish(s, err);
    if (rc) {
        etk_sim_free(s);
        return rc;
    }
    s->res.workload = wl->prefix;
    *out = s;
    return 0;
}
