/* cost.c — analytical network costs for the simulator: where a communicator group sits on the
 * network (placement), the α–β cost of each collective algorithm on one dimension, the
 * hierarchical composition over the dimensions a group spans, and point-to-point messages.
 * sim/ reaches it through select.c (etk_net_coll_ns / etk_net_place_coll_ns / etk_net_p2p_ns),
 * which picks this model, astra.c or topo.c. Formulas: docs/cluster.md.
 *
 * Placement is O(n_ranks) once per group; a cost query is O(dims) (O(log n) loops at most)
 * and never allocates, so a 16,384-rank all-reduce costs microseconds to evaluate. */
#include <math.h>
#include <string.h>

#include "etkit/net.h"
#include "net/net_internal.h"

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Link member[i] -> member[i+1]: first/last differing dimension and hops on the first. */
static void link_of(const etk_cluster *c, uint32_t a, uint32_t b, uint8_t *f, uint8_t *l,
                    uint32_t *hops)
{
    *f = 0;
    *l = 0;
    *hops = 0;
    bool any = false;
    for (uint32_t d = 0; d < c->n_dims; d++) {
        uint32_t sz = c->dims[d].size;
        uint32_t ca = a % sz, cb = b % sz;
        a /= sz;
        b /= sz;
        if (ca == cb)
            continue;
        if (!any) {
            *f = (uint8_t)d;
            uint32_t dist = ca > cb ? ca - cb : cb - ca;
            *hops = dist < sz - dist ? dist : sz - dist;
            any = true;
        }
        *l = (uint8_t)d;
    }
}

/* Index of the link class (f, l, hops), added if new; past ETK_NET_MAX_LINK_CLASSES kinds the
 * link is counted in the most expensive-looking class (highest last dimension). */
static uint32_t class_index(etk_net_place *p, uint8_t f, uint8_t l, uint32_t hops)
{
    for (uint32_t k = 0; k < p->n_classes; k++)
        if (p->class_dim[k] == f && p->class_maxdim[k] == l && p->class_hops[k] == hops)
            return k;
    if (p->n_classes < ETK_NET_MAX_LINK_CLASSES) {
        p->class_dim[p->n_classes] = f;
        p->class_maxdim[p->n_classes] = l;
        p->class_hops[p->n_classes] = hops;
        return p->n_classes++;
    }
    p->classes_overflow = true;
    uint32_t best = 0;
    for (uint32_t k = 1; k < p->n_classes; k++)
        if (p->class_maxdim[k] > p->class_maxdim[best] ||
            (p->class_maxdim[k] == p->class_maxdim[best] && p->class_hops[k] > p->class_hops[best]))
            best = k;
    return best;
}

/* ranks == NULL stands for 0, 1, ..., n-1 */
#define RANK(i) ((ranks ? ranks[(i)] : (uint32_t)(i)) % c->n_npus)

int etk_net_place_group(const etk_cluster *c, const uint32_t *ranks, uint32_t n,
                        etk_net_place *p, etk_error *err)
{
    memset(p, 0, sizeof *p);
    p->n_ranks = n;
    if (c->n_dims < 1 || c->n_dims > ETK_MAX_DIMS || c->n_npus < 1)
        return etk_err(err, ETK_EINVAL, "cluster '%s' has no valid network dimensions", c->name);
    if (n <= 1) {
        p->regular = true;
        p->whole = n == c->n_npus;
        return 0;
    }
    uint32_t mn[ETK_MAX_DIMS], mx[ETK_MAX_DIMS], first[ETK_MAX_DIMS];
    uint64_t g[ETK_MAX_DIMS] = {0};
    long double sum_c[ETK_MAX_DIMS] = {0}, sum_c2[ETK_MAX_DIMS] = {0};
    uint32_t prev = 0, class0 = 0;
    uint64_t sum_r2 = 0, sum_r3 = 0; /* mod 2^64 */
    bool increasing = true;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = RANK(i);
        if (i && r <= RANK(i - 1))
            increasing = false;
        sum_r2 += (uint64_t)r * r;
        sum_r3 += (uint64_t)r * r * r;
        for (uint32_t d = 0; d < c->n_dims; d++) {
            uint32_t x = r % c->dims[d].size;
            r /= c->dims[d].size;
            if (i == 0) {
                mn[d] = mx[d] = first[d] = x;
            } else {
                if (x < mn[d]) mn[d] = x;
                if (x > mx[d]) mx[d] = x;
                g[d] = gcd64(g[d], x > first[d] ? x - first[d] : first[d] - x);
            }
            sum_c[d] += x;
            sum_c2[d] += (long double)x * x;
        }
        /* flat-ring link classes: link i goes member[i] -> member[i+1 mod n] */
        uint8_t f, l;
        uint32_t hops;
        link_of(c, RANK(i), RANK((i + 1) % n), &f, &l, &hops);
        uint32_t k = class_index(p, f, l, hops);
        p->class_count[k]++;
        if (p->n_runs && p->run_class[p->n_runs - 1] == k)
            p->run_len[p->n_runs - 1]++;
        else if (p->n_runs < ETK_NET_MAX_RING_RUNS)
            p->run_class[p->n_runs] = (uint8_t)k, p->run_len[p->n_runs++] = 1;
        else
            p->runs_overflow = true;
        if (i == 0)
            class0 = k;
        else
            p->class_pairs |= 1ull << (prev * 8 + k);
        if (i == n - 1)
            p->class_pairs |= 1ull << (k * 8 + class0);
        prev = k;
    }
    /* Regular sub-grid: per dimension an arithmetic progression of k_d coordinates and the
     * product of the k_d equal to n. Then the group is the whole product set if its ranks are
     * distinct: certain when they are listed in increasing order (the usual case); otherwise
     * checked by a fingerprint — per-dimension sums of coordinates and of their squares, and
     * the sums of rank² and rank³ (mod 2^64), compared with those of the product set — which
     * rejects duplicates and holes without allocating. */
    uint64_t prod = 1;
    uint32_t k_d[ETK_MAX_DIMS];
    for (uint32_t d = 0; d < c->n_dims; d++) {
        k_d[d] = g[d] ? (uint32_t)((mx[d] - mn[d]) / g[d] + 1) : 1;
        prod *= k_d[d];
    }
    bool regular = prod == n;
    for (uint32_t d = 0; regular && !increasing && d < c->n_dims; d++) {
        long double s = 0, s2 = 0;
        for (uint32_t j = 0; j < k_d[d]; j++) {
            long double x = (long double)mn[d] + (long double)j * (long double)g[d];
            s += x;
            s2 += x * x;
        }
        long double rep = (long double)n / k_d[d];
        if (s * rep != sum_c[d] || s2 * rep != sum_c2[d])
            regular = false;
    }
    if (regular && !increasing) {
        /* enumerate the product set with an odometer: O(n·dims) */
        uint32_t idx[ETK_MAX_DIMS] = {0};
        uint64_t e2 = 0, e3 = 0;
        for (uint64_t i = 0; i < prod; i++) {
            uint64_t r = 0, w = 1;
            for (uint32_t d = 0; d < c->n_dims; d++) {
                r += (mn[d] + (uint64_t)idx[d] * g[d]) * w;
                w *= c->dims[d].size;
            }
            e2 += r * r;
            e3 += r * r * r;
            for (uint32_t d = 0; d < c->n_dims; d++) {
                if (++idx[d] < k_d[d])
                    break;
                idx[d] = 0;
            }
        }
        if (e2 != sum_r2 || e3 != sum_r3)
            regular = false;
    }
    p->regular = regular;
    if (regular) {
        bool whole = true;
        for (uint32_t d = 0; d < c->n_dims; d++) {
            if (k_d[d] != c->dims[d].size)
                whole = false;
            if (k_d[d] > 1) {
                p->span_dim[p->n_spans] = (uint8_t)d;
                p->span_size[p->n_spans] = k_d[d];
                p->span_stride[p->n_spans] = (uint32_t)g[d];
                p->n_spans++;
            }
        }
        p->whole = whole;
    }
    return 0;
}

/* ---------- one dimension, α–β ---------- */

typedef struct dimp {
    int topo;
    double a;  /* α: latency of one message between neighbours, ns */
    double B;  /* bytes per ns, per direction */
    double n;  /* ranks on this dimension in the group */
} dimp;

static double ceil_log2(double n) { return ceil(log2(n) - 1e-12); }
static bool is_pow2(uint32_t n) { return n && !(n & (n - 1)); }

/* ring algorithm (any topology; neighbours one hop apart) */
static double t_ring(etk_coll_type t, const dimp *d, double S)
{
    double n = d->n, a = d->a, B = d->B;
    switch (t) {
    case ETK_COLL_ALL_REDUCE: return 2 * (n - 1) * a + 2 * (n - 1) / n * S / B;
    case ETK_COLL_REDUCE_SCATTER:
    case ETK_COLL_REDUCE_SCATTER_BLOCK: return (n - 1) * a + (n - 1) / n * S / B;
    case ETK_COLL_ALL_GATHER: return (n - 1) * a + (n - 1) * S / B;
    case ETK_COLL_ALL_TO_ALL: return (n - 1) * a + (n - 1) / 2 * S / B;
    case ETK_COLL_BROADCAST:
    case ETK_COLL_REDUCE: return (n - 1) * a + S / B;
    case ETK_COLL_GATHER:
    case ETK_COLL_SCATTER: return (n - 1) * a + (n - 1) / n * S / B;
    case ETK_COLL_BARRIER: return 2 * (n - 1) * a;
    }
    return 0;
}

/* direct: every peer at once. Switch: one link of B per NPU carries all of them;
 * FullyConnected: a link of B to every peer. */
static double t_direct(etk_coll_type t, const dimp *d, double S)
{
    double n = d->n, a = d->a, B = d->B;
    bool fc = d->topo == ETK_TOPO_FULLY_CONNECTED;
    double share = fc ? S / n / B : (n - 1) / n * S / B; /* S split over the n-1 peers */
    switch (t) {
    case ETK_COLL_ALL_REDUCE: return 2 * a + 2 * share;
    case ETK_COLL_REDUCE_SCATTER:
    case ETK_COLL_REDUCE_SCATTER_BLOCK:
    case ETK_COLL_ALL_TO_ALL:
    case ETK_COLL_GATHER:
    case ETK_COLL_SCATTER: return a + share;
    case ETK_COLL_ALL_GATHER: return a + (fc ? S / B : (n - 1) * S / B);
    case ETK_COLL_BROADCAST:
    case ETK_COLL_REDUCE: return 2 * a + 2 * share; /* scatter + all-gather (van de Geijn) */
    case ETK_COLL_BARRIER: return 2 * a;
    }
    return 0;
}

/* halving-doubling (Rabenseifner); n not a power of two: the extra ranks fold into partners
 * first and get the result back after (two more steps of the full buffer). */
static double t_hd(etk_coll_type t, const dimp *d, double S)
{
    double n = d->n, a = d->a, B = d->B;
    uint32_t ni = (uint32_t)n;
    double p2 = is_pow2(ni) ? n : exp2(floor(log2(n)));
    double k = log2(p2);
    double extra_ar = is_pow2(ni) ? 0 : 2 * a + 2 * S / B;
    switch (t) {
    case ETK_COLL_ALL_REDUCE: return 2 * k * a + 2 * (p2 - 1) / p2 * S / B + extra_ar;
    case ETK_COLL_REDUCE_SCATTER:
    case ETK_COLL_REDUCE_SCATTER_BLOCK:
        return k * a + (p2 - 1) / p2 * S / B + (is_pow2(ni) ? 0 : a + S / B);
    case ETK_COLL_ALL_GATHER:
        return k * a + (p2 - 1) * S / B + (is_pow2(ni) ? 0 : a + n * S / B);
    case ETK_COLL_BARRIER: return 2 * ceil_log2(n) * a;
    default: return t_ring(t, d, S);
    }
}

/* double binary tree (NCCL): two pipelined trees, each with half the buffer; every NPU sends
 * and receives about 2S in total, and the pipeline fill is 2·depth messages. */
static double t_dbt(etk_coll_type t, const dimp *d, double S)
{
    if (t == ETK_COLL_ALL_REDUCE)
        return 2 * ceil_log2(d->n) * d->a + 2 * S / d->B;
    if (t == ETK_COLL_BARRIER)
        return 2 * ceil_log2(d->n) * d->a;
    return t_ring(t, d, S);
}

/* The algorithm a dimension uses for a type. AUTO picks what NCCL would: the cheaper of ring
 * and double binary tree for all-reduce, direct for all-to-all on Switch/FullyConnected, ring
 * otherwise. On a Ring topology only the ring algorithm is physically efficient (direct and
 * halving-doubling messages would cross and share several hops): it is used for every
 * request there. */
static double t_dim(etk_coll_type t, int algo, const dimp *d, double S)
{
    if (d->n <= 1)
        return 0;
    if (d->topo == ETK_TOPO_RING)
        return t_ring(t, d, S);
    switch (algo) {
    case ETK_ALGO_RING: return t_ring(t, d, S);
    case ETK_ALGO_DIRECT: return t_direct(t, d, S);
    case ETK_ALGO_HALVING_DOUBLING: return t_hd(t, d, S);
    case ETK_ALGO_DOUBLE_BINARY_TREE: return t_dbt(t, d, S);
    default:
        if (t == ETK_COLL_ALL_REDUCE) {
            double r = t_ring(t, d, S), b = t_dbt(t, d, S);
            return r < b ? r : b;
        }
        if (t == ETK_COLL_ALL_TO_ALL)
            return t_direct(t, d, S);
        return t_ring(t, d, S);
    }
}

/* The bandwidth (bytes per ns) a collective of type t achieves on a dimension: line rate, except
 * an all-to-all on a dimension with a measured all-to-all efficiency (alltoall_efficiency in the
 * cluster YAML: NVLink all-to-alls run at 78-81% of line rate, DeepEP intranode EP 8 on H800
 * and B200, kernels-measured.md section 2; docs/cluster.md). */
static double dim_Bpns(const etk_net_dim *nd, etk_coll_type t)
{
    double B = nd->bw_Bps / 1e9;
    if (t == ETK_COLL_ALL_TO_ALL && nd->a2a_eff > 0 && nd->a2a_eff <= 1)
        B *= nd->a2a_eff;
    return B;
}

static dimp span_params(const etk_cluster *c, const etk_net_place *p, uint32_t i, etk_coll_type t)
{
    const etk_net_dim *nd = &c->dims[p->span_dim[i]];
    dimp d;
    d.topo = nd->topo;
    /* on a Ring, group neighbours `stride` coordinates apart are that many hops apart */
    d.a = nd->latency_ns * (nd->topo == ETK_TOPO_RING ? (double)p->span_stride[i] : 1.0);
    d.B = dim_Bpns(nd, t);
    d.n = p->span_size[i];
    return d;
}

static uint64_t to_ns(double t)
{
    if (!(t > 0))
        return 0;
    if (t > 1.8e19)
        return UINT64_MAX;
    return (uint64_t)llround(t);
}

/* Irregular groups: one flat ring over the members in the given order, each link costed on
 * the slowest dimension it crosses (min bandwidth, sum of latencies of the dimensions between
 * its first and last differing one); the ring runs at its slowest link. */
static double t_flat(const etk_cluster *c, const etk_net_place *p, etk_coll_type t, double S)
{
    double a = 0, B = INFINITY;
    for (uint32_t k = 0; k < p->n_classes; k++) {
        double la = 0, lb = INFINITY;
        for (uint32_t d = p->class_dim[k]; d <= p->class_maxdim[k]; d++) {
            const etk_net_dim *nd = &c->dims[d];
            double h = (d == p->class_dim[k] && nd->topo == ETK_TOPO_RING) ? p->class_hops[k] : 1;
            la += nd->latency_ns * (h > 0 ? h : 1);
            if (dim_Bpns(nd, t) < lb)
                lb = dim_Bpns(nd, t);
        }
        if (la > a) a = la;
        if (lb < B) B = lb;
    }
    if (!isfinite(B))
        return 0;
    dimp d = {ETK_TOPO_RING, a, B, p->n_ranks};
    return t_ring(t, &d, S);
}

uint64_t net_phys_coll_ns(const etk_cluster *c, const etk_net_place *p, etk_coll_type t,
                          uint64_t bytes)
{
    if (p->n_ranks <= 1)
        return 0;
    double S = (double)bytes;
    if (!p->regular)
        return to_ns(t_flat(c, p, t, S));
    uint32_t k = p->n_spans;
    if (k == 0)
        return 0;
    dimp d[ETK_MAX_DIMS];
    int al[ETK_MAX_DIMS];
    for (uint32_t i = 0; i < k; i++) {
        d[i] = span_params(c, p, i, t);
        al[i] = (int)t < ETK_COLL_TYPE_COUNT ? c->dims[p->span_dim[i]].algo[t] : 0;
    }
    if (k == 1)
        return to_ns(t_dim(t, al[0], &d[0], S));
    double T = 0, cur = S;
    switch (t) {
    case ETK_COLL_ALL_REDUCE:
        /* reduce-scatter inside (fast dimensions first), all-reduce across the outermost,
         * all-gather back inside */
        for (uint32_t i = 0; i + 1 < k; i++) {
            T += t_dim(ETK_COLL_REDUCE_SCATTER, c->dims[p->span_dim[i]].algo[ETK_COLL_REDUCE_SCATTER],
                       &d[i], cur);
            cur /= d[i].n;
        }
        T += t_dim(ETK_COLL_ALL_REDUCE, al[k - 1], &d[k - 1], cur);
        for (uint32_t i = k - 1; i-- > 0;) {
            T += t_dim(ETK_COLL_ALL_GATHER, c->dims[p->span_dim[i]].algo[ETK_COLL_ALL_GATHER],
                       &d[i], cur);
            cur *= d[i].n;
        }
        break;
    case ETK_COLL_REDUCE_SCATTER:
    case ETK_COLL_REDUCE_SCATTER_BLOCK:
        for (uint32_t i = 0; i < k; i++) {
            T += t_dim(t, al[i], &d[i], cur);
            cur /= d[i].n;
        }
        break;
    case ETK_COLL_ALL_GATHER:
        /* outermost first, so the slow dimension carries the smallest shard */
        for (uint32_t i = k; i-- > 0;) {
            T += t_dim(t, al[i], &d[i], cur);
            cur *= d[i].n;
        }
        break;
    case ETK_COLL_GATHER:
    case ETK_COLL_SCATTER: {
        double frac = S / (double)p->n_ranks;
        for (uint32_t i = 0; i < k; i++) {
            frac *= d[i].n;
            T += t_dim(t, al[i], &d[i], frac);
        }
        break;
    }
    case ETK_COLL_BARRIER:
        for (uint32_t i = 0; i < k; i++)
            T += t_dim(t, al[i], &d[i], 0);
        break;
    case ETK_COLL_ALL_TO_ALL: {
        /* one pass per dimension with the full buffer (two-phase: the outer phase moves
         * (k-1)/k of the buffer through the NIC), the phases pipelined: every peer's share is
         * in flight at once, so the NVLink phase (PXN / DeepEP's forwarding to the rail-local
         * GPU) runs under the NIC phase. Each dimension's latency is paid once; the bandwidth
         * terms overlap and the slowest sets the time. Measured: DeepEP's internode dispatch
         * runs at the NIC's rate, 43-58 GB/s RDMA per GPU over 400 Gb/s IB at EP 16-64
         * (kernels-measured.md section 2), its NVLink forwarding hidden. */
        double lat = 0, bw = 0;
        for (uint32_t i = 0; i < k; i++) {
            double a = t_dim(t, al[i], &d[i], 0), b = t_dim(t, al[i], &d[i], S) - a;
            lat += a;
            if (b > bw)
                bw = b;
        }
        T = lat + bw;
        break;
    }
    default: /* broadcast, reduce: one pass per dimension with the full buffer */
        for (uint32_t i = 0; i < k; i++)
            T += t_dim(t, al[i], &d[i], S);
        break;
    }
    return to_ns(T);
}

/* A message crosses every dimension in which src and dst differ: it pays each one's latency
 * (a Ring dimension per hop) and moves at the slowest one's bandwidth. */
uint64_t net_phys_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes)
{
    double a = 0, B = INFINITY;
    for (uint32_t d = 0; d < c->n_dims; d++) {
        uint32_t sz = c->dims[d].size;
        uint32_t x = src % sz, y = dst % sz;
        src /= sz;
        dst /= sz;
        if (x == y)
            continue;
        uint32_t dist = x > y ? x - y : y - x;
        if (sz - dist < dist)
            dist = sz - dist;
        a += c->dims[d].latency_ns * (c->dims[d].topo == ETK_TOPO_RING ? dist : 1);
        if (c->dims[d].bw_Bps / 1e9 < B)
            B = c->dims[d].bw_Bps / 1e9;
    }
    return to_ns(a + (double)bytes / B);
}
