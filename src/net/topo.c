/* topo.c — the physical fabric under a cluster (NVSwitch per node, one NIC per GPU, rail or
 * top-of-rack leaves, spine per pod with oversubscription, core between pods), its directed
 * links and routes, --link-factor parsing, and the decomposition of collectives and sends into
 * transfers that the max-min fair flow model (sim/flow.c) times: etk_net_flow_run.
 * cost.c calls it for single collectives in the flow network model; docs/network-model.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "etkit/flow.h"
#include "etkit/net.h"
#include "net/net_internal.h"
#include "util/cmp.h"
#include "util/kmap.h"

void etk_fabric_of(const etk_cluster *c, etk_fabric *f)
{
    if (c->fabric.on) {
        *f = c->fabric;
        return;
    }
    memset(f, 0, sizeof *f);
    f->on = true;
    f->rail = true;
    uint32_t G = c->n_dims ? c->dims[0].size : 1;
    f->gpus_per_node = G ? G : 1;
    f->nodes = c->n_npus / f->gpus_per_node;
    if (!f->nodes)
        f->nodes = 1;
    f->leaf_nodes = f->nodes;
    f->pod_nodes = 0;
    f->nvlink_Bps = c->n_dims ? c->dims[0].bw_Bps : 1e9;
    f->nvlink_lat_ns = c->n_dims ? c->dims[0].latency_ns : 0;
    /* the slowest outer dimension stands for the NIC */
    f->nic_Bps = f->nvlink_Bps;
    f->nic_lat_ns = 0;
    for (uint32_t d = 1; d < c->n_dims; d++) {
        if (c->dims[d].size <= 1)
            continue;
        if (f->nic_lat_ns == 0 || c->dims[d].bw_Bps < f->nic_Bps)
            f->nic_Bps = c->dims[d].bw_Bps;
        f->nic_lat_ns += c->dims[d].latency_ns;
    }
    if (c->n_dims > 1 && f->nic_lat_ns == 0) {
        f->nic_Bps = c->dims[c->n_dims - 1].bw_Bps;
        f->nic_lat_ns = c->dims[c->n_dims - 1].latency_ns;
    }
    f->leaf_oversub = f->pod_oversub = 1;
    f->switch_lat_ns = 0;
}

/* Link layout, n = nodes × G GPUs: [0,n) NVLink up (GPU -> NVSwitch), [n,2n) NVLink down,
 * [2n,3n) NIC up, [3n,4n) NIC down, then leaf up, leaf down, pod up, pod down. */
typedef struct lay {
    uint32_t G, n, n_leaf, n_pod, leaf0, pod0;
} lay;

static uint32_t pod_nodes(const etk_fabric *f)
{
    return f->pod_nodes && f->pod_nodes < f->nodes ? f->pod_nodes : f->nodes;
}

static void layout(const etk_fabric *f, lay *L)
{
    L->G = f->gpus_per_node;
    L->n = f->nodes * L->G;
    uint32_t groups = (f->nodes + f->leaf_nodes - 1) / f->leaf_nodes;
    L->n_leaf = f->rail ? groups * L->G : groups;
    L->n_pod = (f->nodes + pod_nodes(f) - 1) / pod_nodes(f);
    L->leaf0 = 4 * L->n;
    L->pod0 = L->leaf0 + 2 * L->n_leaf;
}

static uint32_t leaf_of(const etk_fabric *f, const lay *L, uint32_t gpu)
{
    uint32_t node = gpu / L->G, grp = node / f->leaf_nodes;
    return f->rail ? grp * L->G + gpu % L->G : grp;
}

static double factor_of(const etk_cluster *c, int kind, uint32_t gpu)
{
    double x = 1;
    for (uint32_t i = 0; i < c->n_link_factors; i++)
        if (c->link_factors[i].kind == kind && c->link_factors[i].index == gpu)
            x *= c->link_factors[i].factor;
    return x;
}

/* dimension factors: dim 0 scales NVLink, any outer dimension the NICs and above */
static void dim_factors(const etk_cluster *c, double *dim_nvl, double *dim_nic)
{
    *dim_nvl = *dim_nic = 1;
    for (uint32_t i = 0; i < c->n_link_factors; i++)
        if (c->link_factors[i].kind == ETK_LINK_DIM) {
            if (c->link_factors[i].index == 0)
                *dim_nvl *= c->link_factors[i].factor;
            else
                *dim_nic *= c->link_factors[i].factor;
        }
}

/* capacity of one link of the layout (bytes/ns), after link factors */
static double link_cap(const etk_cluster *c, const etk_fabric *f, const lay *L, uint32_t link,
                       double dim_nvl, double dim_nic)
{
    if (link < 2 * L->n) {
        uint32_t g = link % L->n;
        return f->nvlink_Bps / 1e9 * dim_nvl * factor_of(c, ETK_LINK_NVLINK, g);
    }
    if (link < L->leaf0) {
        uint32_t g = link % L->n;
        return f->nic_Bps / 1e9 * dim_nic * factor_of(c, ETK_LINK_NIC, g);
    }
    if (link < L->pod0) {
        double per_leaf = (f->rail ? f->leaf_nodes : f->leaf_nodes * L->G) * f->nic_Bps / 1e9 * dim_nic;
        return per_leaf / f->leaf_oversub;
    }
    double per_pod = (double)pod_nodes(f) * L->G * f->nic_Bps / 1e9 * dim_nic;
    return per_pod / f->pod_oversub;
}

uint64_t net_flow_fabric_links(const etk_cluster *c)
{
    etk_fabric f;
    etk_fabric_of(c, &f);
    uint64_t G = f.gpus_per_node, n = (uint64_t)f.nodes * G;
    uint64_t leaf = f.leaf_nodes ? f.leaf_nodes : 1;
    uint64_t groups = ((uint64_t)f.nodes + leaf - 1) / leaf;
    uint64_t n_leaf = f.rail ? groups * G : groups;
    uint64_t n_pod = ((uint64_t)f.nodes + pod_nodes(&f) - 1) / pod_nodes(&f);
    return 4 * n + 2 * n_leaf + 2 * n_pod;
}

uint32_t etk_fabric_links(const etk_cluster *c, const etk_fabric *f, double *caps)
{
    lay L;
    layout(f, &L);
    uint32_t total = L.pod0 + 2 * L.n_pod;
    if (!caps)
        return total;
    double dim_nvl, dim_nic;
    dim_factors(c, &dim_nvl, &dim_nic);
    for (uint32_t l = 0; l < total; l++)
        caps[l] = link_cap(c, f, &L, l, dim_nvl, dim_nic);
    return total;
}

void etk_fabric_route(const etk_fabric *f, uint32_t src, uint32_t dst, etk_route *r)
{
    lay L;
    layout(f, &L);
    memset(r, 0, sizeof *r);
    src %= L.n;
    dst %= L.n;
    if (src == dst)
        return;
    uint32_t sn = src / L.G, dn = dst / L.G;
    if (sn == dn) {
        r->link[r->n++] = src;
        r->link[r->n++] = L.n + dst;
        r->latency_ns = f->nvlink_lat_ns;
        return;
    }
    uint32_t out = src;
    if (f->rail && src % L.G != dst % L.G) {
        /* PXN: over NVLink to the GPU of this node on the destination's rail */
        out = sn * L.G + dst % L.G;
        r->link[r->n++] = src;
        r->link[r->n++] = L.n + out;
        r->latency_ns += f->nvlink_lat_ns;
    }
    r->crosses_nic = true;
    r->link[r->n++] = 2 * L.n + out;
    uint32_t ls = leaf_of(f, &L, out), ld = leaf_of(f, &L, dst);
    if (ls == ld) {
        r->switch_hops = 1;
    } else {
        uint32_t ps = sn / pod_nodes(f), pd = dn / pod_nodes(f);
        r->link[r->n++] = L.leaf0 + ls;
        if (ps != pd) {
            r->link[r->n++] = L.pod0 + ps;
            r->link[r->n++] = L.pod0 + L.n_pod + pd;
            r->switch_hops = 5;
        } else {
            r->switch_hops = 3;
        }
        r->link[r->n++] = L.leaf0 + L.n_leaf + ld;
    }
    r->link[r->n++] = 3 * L.n + dst;
    r->latency_ns += f->nic_lat_ns + r->switch_hops * f->switch_lat_ns;
}

int etk_link_factor_parse(etk_cluster *c, const char *spec, etk_error *err)
{
    char kind[16];
    unsigned idx;
    double x;
    char tail;
    if (sscanf(spec, "%15[^:]:%u:%lf%c", kind, &idx, &x, &tail) != 3)
        return etk_err(err, ETK_EINVAL, "--link-factor '%s': expected nic:RANK:F, nvlink:RANK:F "
                       "or dim:D:F (e.g. nic:17:0.5)", spec);
    int k = strcasecmp(kind, "nic") == 0      ? ETK_LINK_NIC
            : strcasecmp(kind, "nvlink") == 0 ? ETK_LINK_NVLINK
            : strcasecmp(kind, "dim") == 0    ? ETK_LINK_DIM
                                              : -1;
    if (k < 0)
        return etk_err(err, ETK_EINVAL, "--link-factor '%s': unknown link kind '%s' (expected "
                       "nic, nvlink or dim)", spec, kind);
    /* [0.001, 1000] as --slow-rank's factor: 1e-300 ran into a 1.84e19 ns collective, 1e300 was
     * told it is not "a positive number" (issue #18) */
    if (!(x >= 1e-3 && x <= 1e3))
        return etk_err(err, ETK_EINVAL, "--link-factor '%s': factor %g: expected a number in "
                       "[0.001, 1000] (0.5 = half the bandwidth)", spec, x);
    if (k == ETK_LINK_DIM && idx >= c->n_dims)
        return etk_err(err, ETK_EINVAL, "--link-factor '%s': dimension %u out of range (the "
                       "cluster has %u)", spec, idx, c->n_dims);
    if (k != ETK_LINK_DIM && idx >= c->n_npus)
        return etk_err(err, ETK_EINVAL, "--link-factor '%s': rank %u out of range (the cluster "
                       "has %u GPUs)", spec, idx, c->n_npus);
    if (c->n_link_factors >= ETK_MAX_LINK_FACTORS)
        return etk_err(err, ETK_EINVAL, "--link-factor '%s': at most %d factors", spec,
                       ETK_MAX_LINK_FACTORS);
    c->link_factors[c->n_link_factors++] = (etk_link_factor){k, idx, x};
    return 0;
}

/* ---- decomposition into transfers ---- */

/* The flow network of one run or session: sized by the links its transfers use, not by the
 * fabric (a 6M-GPU cluster has 24M links; a collective over 16 of its GPUs uses a few dozen).
 * A fabric link gets a flow link, with its capacity, the first time a route crosses it. */
typedef struct fnet {
    etk_flow *fl;
    const etk_cluster *c;
    etk_fabric fab;
    lay L;
    uint32_t total;         /* links of the fabric */
    double dim_nvl, dim_nic;
    etk_kmap map;           /* fabric link -> flow link */
} fnet;

static int fnet_init(fnet *F, const etk_cluster *c, etk_error *err)
{
    memset(F, 0, sizeof *F);
    F->c = c;
    uint64_t links = net_flow_fabric_links(c);
    if (links > UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "flow model: cluster '%s': its fabric has %llu links, "
                       "more than the flow model supports (%u, about 1 billion GPUs); use the "
                       "analytical network model", c->name, (unsigned long long)links, UINT32_MAX);
    etk_fabric_of(c, &F->fab);
    layout(&F->fab, &F->L);
    F->total = etk_fabric_links(c, &F->fab, NULL);
    dim_factors(c, &F->dim_nvl, &F->dim_nic);
    return etk_flow_new(0, NULL, &F->fl, err);
}

static void fnet_free(fnet *F)
{
    etk_flow_free(F->fl);
    etk_kmap_free(&F->map);
    F->fl = NULL;
}

/* Start a transfer over the fabric links path[0..n-1]. */
static int fnet_start(fnet *F, uint64_t bytes, const uint32_t *path, uint32_t n, double lat,
                      uint64_t tag, etk_error *err)
{
    uint32_t p[ETK_FLOW_MAX_PATH];
    if (n > ETK_FLOW_MAX_PATH)
        return etk_flow_start(F->fl, bytes, path, n, lat, tag, err); /* refused there */
    for (uint32_t i = 0; i < n; i++) {
        if (path[i] >= F->total)
            return etk_err(err, ETK_EINVAL, "flow model: link %u out of range (the fabric has "
                           "%u links)", path[i], F->total);
        uint32_t id = etk_kmap_get(&F->map, path[i], 0);
        if (id == ETK_KMAP_NONE) {
            double cap = link_cap(F->c, &F->fab, &F->L, path[i], F->dim_nvl, F->dim_nic);
            if (!(cap > 0) || !isfinite(cap))
                return etk_err(err, ETK_EINVAL, "flow model: fabric link %u capacity %g B/ns: "
                               "expected a positive finite bandwidth", path[i], cap);
            int rc = etk_flow_add_link(F->fl, cap, &id, err);
            if (rc)
                return rc;
            bool oom = false;
            etk_kmap_put(&F->map, path[i], 0, id, &oom);
            if (oom)
                return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
        }
        p[i] = id;
    }
    return etk_flow_start(F->fl, bytes, p, n, lat, tag, err);
}


/* bytes each rank sends along its ring edge (Chakra sizes: all-gather S per rank) */
static double ring_wire(etk_coll_type t, double n, double S)
{
    switch (t) {
    case ETK_COLL_ALL_REDUCE: return 2 * (n - 1) / n * S;
    case ETK_COLL_ALL_GATHER: return (n - 1) * S;
    case ETK_COLL_BROADCAST:
    case ETK_COLL_REDUCE: return S;
    case ETK_COLL_BARRIER: return 0;
    default: return (n - 1) / n * S; /* reduce-scatter, gather, scatter */
    }
}

static int start_route(fnet *F, uint32_t a, uint32_t b, double bytes, double lat, uint64_t tag,
                       uint32_t *count, etk_error *err)
{
    etk_route r;
    etk_fabric_route(&F->fab, a, b, &r);
    (*count)++;
    return fnet_start(F, (uint64_t)llround(bytes), r.link, r.n, lat + r.latency_ns, tag, err);
}

static int start_op(fnet *F, etk_flow_op *op, uint64_t tag, uint32_t *count, etk_error *err)
{
    const etk_cluster *c = F->c;
    const etk_fabric *fab = &F->fab;
    uint32_t G = fab->gpus_per_node, n = op->n_ranks;
    uint32_t N = fab->nodes * G;
    int rc = 0;
    if (op->type < 0) {
        if (n != 2)
            return etk_err(err, ETK_EINVAL, "flow op: a send needs ranks {src, dst}, got %u", n);
        etk_route r;
        etk_fabric_route(fab, op->ranks[0], op->ranks[1], &r);
        double eff = etk_nccl_link_eff(r.crosses_nic);
        (*count)++;
        return fnet_start(F, (uint64_t)llround((double)op->bytes / eff), r.link, r.n,
                              r.latency_ns, tag, err);
    }
    if (n <= 1) {
        (*count)++;
        return etk_flow_start(F->fl, 0, NULL, 0, 0, tag, err);
    }
    uint32_t *rk = malloc(sizeof *rk * n);
    if (!rk)
        return etk_err(err, ETK_ENOMEM, "flow op: out of memory");
    for (uint32_t i = 0; i < n; i++)
        rk[i] = op->ranks ? op->ranks[i] % N : i % N;
    qsort(rk, n, sizeof *rk, etk_cmp_u32);
    uint32_t nodes = 1;
    for (uint32_t i = 1; i < n; i++)
        if (rk[i] / G != rk[i - 1] / G)
            nodes++;
    etk_nccl_choose(c, fab, (etk_coll_type)op->type, op->bytes, n, nodes, &op->choice);
    double eff = op->choice.eff, lat = op->choice.lat_ns, S = (double)op->bytes;
    etk_coll_type t = (etk_coll_type)op->type;
    if (op->choice.algo == ETK_NCCL_NVLS) {
        /* every GPU sends its buffer into the switch and gets the result back (all-reduce),
         * or its share (reduce-scatter / all-gather) */
        double up = t == ETK_COLL_ALL_GATHER ? S : t == ETK_COLL_REDUCE_SCATTER ? S : S;
        double down = t == ETK_COLL_ALL_GATHER ? n * S : t == ETK_COLL_REDUCE_SCATTER ? S / n : S;
        for (uint32_t i = 0; i < n && !rc; i++) {
            uint32_t g = rk[i], l1 = g, l2 = N + g;
            (*count) += 2;
            rc = fnet_start(F, (uint64_t)llround(up / eff), &l1, 1, lat, tag, err);
            if (!rc)
                rc = fnet_start(F, (uint64_t)llround(down / eff), &l2, 1, lat, tag, err);
        }
    } else if (t == ETK_COLL_ALL_TO_ALL) {
        for (uint32_t i = 0; i < n && !rc; i++)
            for (uint32_t j = 0; j < n && !rc; j++)
                if (i != j)
                    rc = start_route(F, rk[i], rk[j], S / n / eff, lat, tag, count, err);
    } else {
        /* rings; across nodes one channel per GPU of a node, channel k entering every node at
         * local GPU k so that each NIC carries one channel (NCCL's rings on rail fabrics) */
        uint32_t per = n / nodes;
        bool even = per * nodes == n && per > 1 && nodes > 1;
        uint32_t ch = even ? per : 1;
        double wire = ring_wire(t, n, S) / ch / eff;
        for (uint32_t k = 0; k < ch && !rc; k++)
            for (uint32_t i = 0; i < n && !rc; i++) {
                uint32_t a, b;
                if (even) {
                    uint32_t node = i / per, pos = i % per, nx = (i + 1) % n;
                    a = rk[node * per + (pos + k) % per];
                    b = rk[(nx / per) * per + (nx % per + k) % per];
                } else {
                    a = rk[i];
                    b = rk[(i + 1) % n];
                }
                rc = start_route(F, a, b, wire, lat, tag, count, err);
            }
    }
    free(rk);
    return rc;
}

typedef struct opref {
    uint64_t start;
    uint32_t i;
} opref;

static int cmp_start(const void *a, const void *b)
{
    const opref *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int etk_net_flow_run(const etk_cluster *c, etk_flow_op *ops, uint32_t n_ops, etk_error *err)
{
    fnet F;
    uint32_t *left = calloc(n_ops ? n_ops : 1, sizeof *left);
    opref *ord = malloc(sizeof *ord * (n_ops ? n_ops : 1));
    int rc = fnet_init(&F, c, err);
    etk_flow *fl = F.fl;
    if (rc)
        goto done;
    if (!left || !ord) {
        rc = etk_err(err, ETK_ENOMEM, "flow model: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n_ops; i++) {
        ord[i] = (opref){ops[i].start_ns, i};
        ops[i].finish_ns = 0;
        memset(&ops[i].choice, 0, sizeof ops[i].choice);
    }
    qsort(ord, n_ops, sizeof *ord, cmp_start);
    uint32_t next = 0, done_ops = 0;
    while (done_ops < n_ops) {
        double lim = next < n_ops ? (double)ord[next].start : INFINITY;
        uint64_t tag;
        double t;
        int got = etk_flow_next(fl, lim, &tag, &t);
        if (got < 0) {
            rc = etk_err(err, ETK_ENOMEM, "flow model: out of memory");
            goto done;
        }
        if (got) {
            if (t > ops[tag].finish_ns)
                ops[tag].finish_ns = t;
            if (--left[tag] == 0)
                done_ops++;
            continue;
        }
        if (next >= n_ops) {
            rc = etk_err(err, ETK_EINVAL, "flow model: operations never finish");
            goto done;
        }
        etk_flow_hold(fl);
        uint64_t t0 = ord[next].start;
        while (next < n_ops && ord[next].start == t0) {
            uint32_t i = ord[next++].i;
            if ((rc = start_op(&F, &ops[i], i, &left[i], err)))
                goto done;
            ops[i].finish_ns = (double)t0;
        }
        if ((rc = etk_flow_release(fl, err)))
            goto done;
    }
done:
    fnet_free(&F);
    free(left);
    free(ord);
    return rc;
}

/* ---- session for the simulator ---- */

typedef struct fop {
    uint64_t tag;
    uint32_t left;
} fop;

struct etk_net_flows {
    fnet F; /* over the simulator's copy of the cluster, which outlives the session */
    fop *ops;
    uint32_t n_ops, cap_ops, n_busy;
    uint32_t *free_ops;
    uint32_t n_free;
};

int etk_net_flows_new(const etk_cluster *c, etk_net_flows **out, etk_error *err)
{
    *out = NULL;
    etk_net_flows *s = calloc(1, sizeof *s);
    if (!s)
        return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
    int rc = fnet_init(&s->F, c, err);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void etk_net_flows_free(etk_net_flows *s)
{
    if (!s)
        return;
    fnet_free(&s->F);
    free(s->ops);
    free(s->free_ops);
    free(s);
}

bool etk_net_flows_busy(const etk_net_flows *s) { return s->n_busy > 0; }

uint32_t etk_net_flows_links(const etk_net_flows *s) { return s->F.map.n; }

int etk_net_flows_start(etk_net_flows *s, int32_t type, uint64_t bytes, const uint32_t *ranks,
                        uint32_t n_ranks, uint64_t tag, etk_error *err)
{
    uint32_t i;
    if (s->n_free) {
        i = s->free_ops[--s->n_free];
    } else {
        if (s->n_ops == s->cap_ops) {
            uint32_t nc = s->cap_ops ? 2 * s->cap_ops : 64;
            fop *o = realloc(s->ops, sizeof *o * nc);
            uint32_t *fr = o ? realloc(s->free_ops, sizeof *fr * nc) : NULL;
            if (o)
                s->ops = o;
            if (!o || !fr)
                return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
            s->free_ops = fr;
            s->cap_ops = nc;
        }
        i = s->n_ops++;
    }
    s->ops[i] = (fop){tag, 0};
    etk_flow_op op = {.type = type, .bytes = bytes, .ranks = ranks, .n_ranks = n_ranks};
    etk_flow_hold(s->F.fl);
    int rc = start_op(&s->F, &op, i, &s->ops[i].left, err);
    int rc2 = etk_flow_release(s->F.fl, err);
    s->n_busy++;
    return rc ? rc : rc2;
}

int etk_net_flows_next(etk_net_flows *s, double t_limit, uint64_t *tag, double *t_ns)
{
    for (;;) {
        uint64_t fi;
        int got = etk_flow_next(s->F.fl, t_limit, &fi, t_ns);
        if (got <= 0)
            return got;
        fop *o = &s->ops[fi];
        if (--o->left)
            continue;
        *tag = o->tag;
        s->free_ops[s->n_free++] = (uint32_t)fi;
        s->n_busy--;
        return 1;
    }
}

uint64_t net_flow_coll_ns(const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                          const uint32_t *ranks, uint32_t n_ranks)
{
    etk_flow_op op = {.type = (int32_t)type, .bytes = bytes, .ranks = ranks, .n_ranks = n_ranks};
    if (etk_net_flow_run(c, &op, 1, NULL))
        return UINT64_MAX;
    return (uint64_t)llround(op.finish_ns);
}

uint64_t net_flow_p2p_ns(const etk_cluster *c, uint32_t src, uint32_t dst, uint64_t bytes)
{
    uint32_t r[2] = {src, dst};
    etk_flow_op op = {.type = -1, .bytes = bytes, .ranks = r, .n_ranks = 2};
    if (etk_net_flow_run(c, &op, 1, NULL))
        return UINT64_MAX;
    return (uint64_t)llround(op.finish_ns);
}
