/* astra.c — ASTRA-sim compatibility, cost side: times collectives the way ASTRA-sim's
 * congestion-unaware analytical backend does, to the nanosecond (chunking, per-algorithm message
 * patterns, endpoint and reduction delays, multi-dimensional phases pipelined over chunks). The
 * semantics and the measured values this reproduces are in ../shared/spec/astra-sim.md and
 * docs/astra-compat.md; select.c dispatches here when cluster->astra_compat is set, and the
 * files are read by astra_load.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/net.h"
#include "net/net_internal.h"

static bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

/* ---------- compatible costs ---------- */

/* net(m) = ⌊hops·L + m/B⌋ with B in bytes/ns. The division is done in long double with an
 * exact numerator so that a whole number of ns (e.g. 2^25 B at 400·2^30 B/s = 78,125 ns) is
 * not floored to one less. */
static uint64_t anet(const etk_net_dim *d, uint32_t hops, uint64_t m)
{
    long double t = (long double)hops * (long double)d->latency_ns +
                    (long double)m * 1e9L / (long double)d->bw_Bps;
    if (!(t < 1.8e19L)) /* zero bandwidth in an unchecked cluster: never */
        return UINT64_MAX / 4;
    return (uint64_t)floorl(t);
}

/* reduction of a received message: 3·⌊m / local-mem-bw(B/ns)⌋ */
static uint64_t ared(const etk_cluster *c, uint64_t m)
{
    if (!(c->astra_local_mem_bw_GBps > 0))
        return 0;
    return 3 * (uint64_t)floorl((long double)m / (long double)c->astra_local_mem_bw_GBps);
}

static uint32_t topo_hops(int topo) { return topo == ETK_TOPO_SWITCH ? 2 : 1; }

static uint32_t ring_dist(uint32_t n, uint64_t k)
{
    k %= n;
    return (uint32_t)(k < n - k ? k : n - k);
}

static uint32_t ilog2(uint32_t n)
{
    uint32_t k = 0;
    while ((1u << (k + 1)) <= n && k < 31)
        k++;
    return k;
}

/* One phase of one chunk on one whole dimension: the chunk-start endpoint delay plus the
 * algorithm's messages. D is the phase's input (for all-gather the per-rank shard). *tail gets
 * a once-per-collective extra (double binary tree). */
static uint64_t phase_ns(const etk_cluster *c, const etk_net_dim *d, etk_coll_type t, int algo,
                         uint64_t D, uint64_t *tail)
{
    uint64_t N = d->size, e = (uint64_t)llround(c->astra_endpoint_delay_ns);
    uint32_t h = topo_hops(d->topo);
    bool ar = t == ETK_COLL_ALL_REDUCE;
    bool rs = t == ETK_COLL_REDUCE_SCATTER || t == ETK_COLL_REDUCE_SCATTER_BLOCK;
    bool ag = t == ETK_COLL_ALL_GATHER;
    if (algo == ETK_ALGO_HALVING_DOUBLING && (!pow2((uint32_t)N) || t == ETK_COLL_ALL_TO_ALL))
        algo = ETK_ALGO_RING;
    if (algo == ETK_ALGO_DOUBLE_BINARY_TREE && !ar)
        algo = ETK_ALGO_RING;
    switch (algo) {
    case ETK_ALGO_DIRECT: {
        /* N-1 messages in flight at once: one network delay (the farthest peer on a Ring),
         * one endpoint delay, one reduction per reducing phase */
        uint32_t hd = d->topo == ETK_TOPO_RING ? (uint32_t)(N / 2) : h;
        if (ag)
            return e + anet(d, hd, D) + e;
        uint64_t m = D / N, one = anet(d, hd, m) + e;
        if (ar)
            return e + 2 * one + ared(c, m);
        if (rs)
            return e + one + ared(c, m);
        return e + one; /* all-to-all */
    }
    case ETK_ALGO_HALVING_DOUBLING: {
        /* log2 N steps, partner distance doubling, messages D/2, D/4, ...; every reducing
         * message but the first pays the reduction (fits all measured values) */
        uint32_t k = ilog2((uint32_t)N);
        uint64_t T = e;
        if (ag) {
            uint64_t m = D;
            for (uint32_t i = 0; i < k; i++, m *= 2) {
                uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << i) : h;
                T += anet(d, hh, m) + e;
            }
            return T;
        }
        uint64_t m = D;
        for (uint32_t i = 0; i < k; i++) {
            m /= 2;
            uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << i) : h;
            T += anet(d, hh, m) + e + (i > 0 ? ared(c, m) : 0);
        }
        if (ar)
            for (uint32_t i = k; i-- > 0; m *= 2) {
                uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << i) : h;
                T += anet(d, hh, m) + e;
            }
        return T;
    }
    case ETK_ALGO_DOUBLE_BINARY_TREE: {
        /* ASTRA-sim's binary tree numbers the ranks in order: a leaf's parent is 1 rank away,
         * the next parent 2, then 4, ..., 2^(k−1) (the top). A chunk's critical path goes up
         * the k edges and down again; consecutive chunks overlap by one leaf message. Fitted
         * to the Switch values (N = 4 … 64, where all edges cost alike): (2k − 1) reduced
         * whole-chunk messages per chunk and one more unreduced leaf message per collective;
         * on a Ring topology each edge costs its ring distance min(2^j, N − 2^j) in hops
         * (dbt_ring_64: 492,196 ns) */
        uint64_t k = ilog2((uint32_t)N) + (pow2((uint32_t)N) ? 0 : 1);
        uint64_t T = e, red = ared(c, D);
        for (uint64_t i = 1; i < 2 * k; i++) { /* edges up 1..k then down k..2, i = 1..2k−1 */
            uint64_t j = i <= k ? i - 1 : 2 * k - i;
            uint32_t hh = d->topo == ETK_TOPO_RING ? ring_dist((uint32_t)N, 1ull << j) : h;
            T += anet(d, hh, D) + e + red;
        }
        *tail += anet(d, h, D) + e; /* the leaf edge: 1 hop on a Ring */
        return T;
    }
    default: { /* ring */
        uint64_t m = D / N;
        if (ar)
            return e + 2 * (N - 1) * (anet(d, h, m) + e) + (N - 1) * ared(c, m);
        if (rs)
            return e + (N - 1) * (anet(d, h, m) + e) + (N - 1) * ared(c, m);
        if (ag)
            return e + (N - 1) * (anet(d, h, D) + e);
        return e + N * (N - 1) / 2 * (anet(d, h, m) + e); /* all-to-all, one after another */
    }
    }
}

/* Chunks pass the phases in order; each phase works on `active` chunks at a time, so with
 * identical chunks the collective takes Σ phases + (⌈C/active⌉ − 1)·max phase. */
static uint64_t pipeline(const etk_cluster *c, const uint64_t *ph, uint32_t n_ph, uint64_t tail)
{
    uint64_t sum = 0, mx = 0;
    for (uint32_t i = 0; i < n_ph; i++) {
        sum += ph[i];
        if (ph[i] > mx)
            mx = ph[i];
    }
    uint64_t C = c->astra_splits ? c->astra_splits : 1; /* 0: unchecked cluster, treat as 1 */
    uint64_t A = c->astra_active_chunks ? c->astra_active_chunks : 1;
    uint64_t waves = (C + A - 1) / A;
    return sum + (waves - 1) * mx + tail;
}

/* Net delay of a flat-ring link class for message m (first differing dimension counts). */
static uint64_t class_net(const etk_cluster *c, const etk_net_place *p, uint32_t k, uint64_t m)
{
    const etk_net_dim *d = &c->dims[p->class_dim[k]];
    uint32_t h = d->topo == ETK_TOPO_RING ? (p->class_hops[k] ? p->class_hops[k] : 1)
                                           : topo_hops(d->topo);
    return anet(d, h, m);
}

/* Largest sum of net delays over K consecutive links of the logical ring (a message chain):
 * exact when all links are alike, for K ≡ 0, -1, -2 (mod n); otherwise bounded by the worst
 * link (docs/astra-compat.md). */
static uint64_t chain_ns(const etk_cluster *c, const etk_net_place *p, uint64_t K, uint64_t m)
{
    uint64_t n = p->n_ranks, v[ETK_NET_MAX_LINK_CLASSES], total = 0, mx = 0, mn = UINT64_MAX;
    for (uint32_t k = 0; k < p->n_classes; k++) {
        v[k] = class_net(c, p, k, m);
        total += v[k] * p->class_count[k];
        if (v[k] > mx) mx = v[k];
        if (v[k] < mn) mn = v[k];
    }
    uint64_t q = K / n, r = K % n;
    if (p->n_classes == 1 || r == 0)
        return q * total + r * mx;
    if (r == n - 1)
        return q * total + total - mn;
    if (r == n - 2 && n > 2) {
        uint64_t best = UINT64_MAX;
        for (uint32_t a = 0; a < p->n_classes; a++)
            for (uint32_t b = 0; b < p->n_classes; b++)
                if (p->class_pairs & (1ull << (a * 8 + b)) && v[a] + v[b] < best)
                    best = v[a] + v[b];
        if (best != UINT64_MAX)
            return q * total + total - best;
    }
    return q * total + r * mx;
}

/* Most steps (chunks · ranks · messages) a sub-group ring is simulated message by message;
 * past it (or with more link kinds than the placement keeps) the chain bound is used. The fuzz
 * build (ETK_FUZZ, CMakeLists.txt) sets a far lower bound: both paths are still taken, and an
 * input no longer spends up to 2^25 steps per collective (fuzz_astra ran at 172 inputs/s). */
#ifdef ETK_RING_SIM_MAX_STEPS
#define RING_SIM_MAX_STEPS ((unsigned long long)(ETK_RING_SIM_MAX_STEPS))
#else
#define RING_SIM_MAX_STEPS (1ull << 25)
#endif

/* A sub-group ring with links of unequal cost, message by message, as ASTRA-sim runs it: rank
 * r sends its first message of a chunk h ns after the chunk starts; each later message leaves
 * h ns (plus the reduction of the received one) after both the message from r−1 arrived and r
 * sent its previous one; a rank finishes a chunk on receiving its K-th message and starts its
 * own next chunk then (with A active chunks: when its chunk k−A finished), whatever the other
 * ranks do. Returns the last finish, or UINT64_MAX when it would cost too much or memory is
 * short. With equal links this is exactly the closed form. */
static uint64_t ring_sim_ns(const etk_cluster *c, const etk_net_place *p, uint64_t K,
                            uint64_t n_red, uint64_t m, uint64_t h)
{
    uint64_t N = p->n_ranks, C = c->astra_splits ? c->astra_splits : 1;
    uint64_t A = c->astra_active_chunks ? c->astra_active_chunks : 1;
    if (A > C)
        A = C;
    if (p->runs_overflow || p->classes_overflow || N < 2 || K > RING_SIM_MAX_STEPS ||
        C * N > RING_SIM_MAX_STEPS / K || A * N > (1u << 20)) /* at most 8 MB of finishes */
        return UINT64_MAX;
    uint64_t *net = malloc(sizeof *net * N * (3 + A));
    if (!net)
        return UINT64_MAX;
    uint64_t *prev = net + N, *cur = prev + N, *fin = cur + N; /* fin: A rows of finishes */
    uint64_t v[ETK_NET_MAX_LINK_CLASSES], red = ared(c, m), i = 0;
    for (uint32_t k = 0; k < p->n_classes; k++)
        v[k] = class_net(c, p, k, m);
    for (uint32_t r = 0; r < p->n_runs; r++) /* net[i]: link member i -> member i+1 */
        for (uint32_t j = 0; j < p->run_len[r] && i < N; j++)
            net[i++] = v[p->run_class[r]];
    if (i != N) { /* the runs do not cover the ring: not a placement of this group */
        free(net);
        return UINT64_MAX;
    }
    memset(fin, 0, sizeof *fin * N * A);
    uint64_t last = 0;
    for (uint64_t k = 0; k < C; k++) {
        uint64_t *f = fin + (k % A) * N; /* finishes of chunk k − A, overwritten by chunk k's */
        for (uint64_t r = 0; r < N; r++)
            prev[r] = f[r] + h; /* first send: the chunk start */
        for (uint64_t s = 1; s <= K; s++) {
            uint64_t add = h + (s - 1 < n_red ? red : 0);
            for (uint64_t r = 0; r < N; r++) {
                uint64_t q = r ? r - 1 : N - 1, in = prev[q] + net[q];
                cur[r] = (in > prev[r] ? in : prev[r]) + add;
            }
            uint64_t *t = prev;
            prev = cur;
            cur = t;
        }
        for (uint64_t r = 0; r < N; r++) {
            f[r] = prev[r]; /* after K receipts: the finish */
            if (prev[r] > last)
                last = prev[r];
        }
    }
    free(net);
    return last;
}

/* A group that is not every NPU: ASTRA-sim runs it as one flat logical ring over the members,
 * with a fixed 10 ns hand-off per message and at the start of each chunk (whatever
 * endpoint-delay says; measured: pair_ar_sw8_e1000 18,508 ns). Equal links: the closed form;
 * unequal links: message by message (ring_sim_ns), or the chain bound when too large. */
static uint64_t subgroup_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type t,
                            uint64_t chunk)
{
    uint64_t N = p->n_ranks, h = 10;
    bool ar = t == ETK_COLL_ALL_REDUCE;
    bool rs = t == ETK_COLL_REDUCE_SCATTER || t == ETK_COLL_REDUCE_SCATTER_BLOCK;
    bool ag = t == ETK_COLL_ALL_GATHER;
    uint64_t m = ag ? chunk : chunk / N;
    uint64_t K = ar ? 2 * (N - 1) : rs || ag ? N - 1 : N * (N - 1) / 2;
    uint64_t n_red = ar || rs ? N - 1 : 0;
    if (p->n_classes > 1) {
        uint64_t T = ring_sim_ns(c, p, K, n_red, m, h);
        if (T != UINT64_MAX)
            return T;
    }
    uint64_t ph = h + chain_ns(c, p, K, m) + K * h + n_red * ared(c, m);
    return pipeline(c, &ph, 1, 0);
}

uint64_t net_astra_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type t,
                           uint64_t S)
{
    /* ASTRA-sim simulates only these four; others get etkit's physical model */
    if (t != ETK_COLL_ALL_REDUCE && t != ETK_COLL_ALL_GATHER && t != ETK_COLL_REDUCE_SCATTER &&
        t != ETK_COLL_REDUCE_SCATTER_BLOCK && t != ETK_COLL_ALL_TO_ALL)
        return net_phys_coll_ns(c, p, t, S);
    uint64_t N = p->n_ranks;
    if (N <= 1)
        return 0;
    uint64_t chunk = S / (c->astra_splits ? c->astra_splits : 1);
    if (t != ETK_COLL_ALL_GATHER && chunk < N)
        chunk = N; /* raised to the rank count (padded) */
    if (!p->whole)
        return subgroup_ns(c, p, t, chunk);
    uint32_t dims[ETK_MAX_DIMS], nd = 0;
    for (uint32_t i = 0; i < c->n_dims; i++)
        if (c->dims[i].size > 1)
            dims[nd++] = i;
    uint64_t ph[3 * ETK_MAX_DIMS], tail = 0, D = chunk;
    uint32_t np = 0;
#define ALGO(i, ty) (c->dims[dims[i]].algo[ty] ? c->dims[dims[i]].algo[ty] : ETK_ALGO_RING)
    switch (t) {
    case ETK_COLL_ALL_REDUCE:
        if (c->astra_local_bw_aware && nd > 1) {
            /* ASTRA-sim takes every phase's algorithm from the all-reduce list (its result
             * does not change with the reduce-scatter / all-gather lists: 2d_*_hd_lbw) */
            for (uint32_t i = 0; i + 1 < nd; i++) {
                const etk_net_dim *d = &c->dims[dims[i]];
                ph[np++] = phase_ns(c, d, ETK_COLL_REDUCE_SCATTER, ALGO(i, t), D, &tail);
                D /= d->size;
            }
            ph[np++] = phase_ns(c, &c->dims[dims[nd - 1]], t, ALGO(nd - 1, t), D, &tail);
            for (uint32_t i = nd - 1; i-- > 0;) {
                const etk_net_dim *d = &c->dims[dims[i]];
                ph[np++] = phase_ns(c, d, ETK_COLL_ALL_GATHER, ALGO(i, t), D, &tail);
                D *= d->size;
            }
        } else {
            for (uint32_t i = 0; i < nd; i++)
                ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
        }
        break;
    case ETK_COLL_ALL_GATHER:
        for (uint32_t i = nd; i-- > 0;) {
            ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
            D *= c->dims[dims[i]].size;
        }
        break;
    case ETK_COLL_ALL_TO_ALL:
        for (uint32_t i = 0; i < nd; i++)
            ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
        break;
    default: /* reduce-scatter */
        for (uint32_t i = 0; i < nd; i++) {
            ph[np++] = phase_ns(c, &c->dims[dims[i]], t, ALGO(i, t), D, &tail);
            D /= c->dims[dims[i]].size;
        }
        break;
    }
#undef ALGO
    return pipeline(c, ph, np, tail);
}

/* SEND/RECV: one unchunked message on the first differing dimension. ASTRA-sim charges no
 * endpoint delay here (measured: p2p1_sw8 8,626 ns with endpoint-delay 10 and 1000). */
uint64_t net_astra_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes)
{
    for (uint32_t d = 0; d < c->n_dims; d++) {
        uint32_t sz = c->dims[d].size, x = src % sz, y = dst % sz;
        src /= sz;
        dst /= sz;
        if (x == y)
            continue;
        const etk_net_dim *nd = &c->dims[d];
        uint32_t h = nd->topo == ETK_TOPO_RING ? ring_dist(sz, x > y ? x - y : y - x)
                                               : topo_hops(nd->topo);
        return anet(nd, h, bytes); /* ASTRA-sim: no endpoint delay on SEND/RECV */
    }
    return 0;
}
