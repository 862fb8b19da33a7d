/* flow.c — the congestion-aware flow model (include/etkit/flow.h): transfers over directed
 * links share bandwidth max-min fairly. The network layer (net/topo.c) turns collectives and
 * sends into transfers with link paths; this file times them.
 *
 * Event driven: a flow arrives (etk_flow_start) or drains its last byte; only then do rates
 * change, and only for the flows connected to the changed links through shared links (the
 * max-min allocation of one connected component does not depend on the others, so
 * recomputing that component is exact). Inside a component, progressive filling with a heap of
 * links keyed by fair share: the smallest share freezes its flows; shares of the other links can
 * only grow when flows freeze (r <= residual/count), so stale heap entries are simply pushed
 * again. Cost per event O((F·P + L) log L) for the F flows and L links of the component.
 * Remaining bytes are updated lazily (remaining at t_upd, rate); completions sit in a heap
 * with version numbers so superseded predictions are skipped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/flow.h"

enum { FS_FREE = 0, FS_DRAIN = 1, FS_TAIL = 2 };
enum { EV_DRAIN = 0, EV_DONE = 1 };

typedef struct flw {
    uint64_t tag;
    double rem, rate, t_upd, lat;
    uint32_t path[ETK_FLOW_MAX_PATH];
    uint32_t slot[ETK_FLOW_MAX_PATH]; /* position in link's flow list */
    uint32_t n, version, mark;
    uint8_t state, frozen;
} flw;

typedef struct lnk {
    double cap, res;
    uint32_t *fl; /* active (draining) flows */
    uint32_t n, capn, mark, cnt;
} lnk;

typedef struct fev {
    double t;
    uint32_t flow, version, kind;
    uint64_t seq;
} fev;

typedef struct hl { /* link heap entry */
    double share;
    uint32_t link;
} hl;

struct etk_flow {
    double now;
    lnk *l;
    uint32_t n_links, cap_links;
    flw *f;
    uint32_t n_f, cap_f;
    uint32_t *freel; /* finished flow slots for reuse */
    uint32_t n_free, cap_free;
    fev *ev;
    uint32_t n_ev, cap_ev;
    uint64_t seq, work;
    uint32_t mark;
    uint32_t active;
    bool held;
    uint32_t *pend; /* links touched while held */
    uint32_t n_pend, cap_pend;
    /* scratch */
    uint32_t *cf, *cl; /* component flows, links */
    uint32_t cap_cf, cap_cl;
    hl *h;
    uint32_t cap_h;
};

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

int etk_flow_new(uint32_t n_links, const double *cap, etk_flow **out, etk_error *err)
{
    *out = NULL;
    for (uint32_t i = 0; i < n_links; i++)
        if (!(cap[i] > 0) || !isfinite(cap[i]))
            return etk_err(err, ETK_EINVAL, "flow model: link %u capacity %g B/ns: expected a "
                           "positive finite bandwidth", i, cap[i]);
    etk_flow *f = calloc(1, sizeof *f);
    if (!f || !(f->l = calloc(n_links ? n_links : 1, sizeof *f->l))) {
        free(f);
        return etk_err(err, ETK_ENOMEM, "flow model: out of memory for %u links", n_links);
    }
    f->cap_links = n_links ? n_links : 1;
    f->n_links = n_links;
    for (uint32_t i = 0; i < n_links; i++)
        f->l[i].cap = cap[i];
    *out = f;
    return 0;
}

int etk_flow_add_link(etk_flow *f, double cap, uint32_t *id, etk_error *err)
{
    if (!(cap > 0) || !isfinite(cap))
        return etk_err(err, ETK_EINVAL, "flow model: link %u capacity %g B/ns: expected a "
                       "positive finite bandwidth", f->n_links, cap);
    if (f->n_links == UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "flow model: too many links");
    uint32_t old = f->cap_links;
    if (grow((void **)&f->l, &f->cap_links, f->n_links + 1, sizeof(lnk)))
        return etk_err(err, ETK_ENOMEM, "flow model: out of memory for %u links", f->n_links + 1);
    if (f->cap_links > old)
        memset(&f->l[old], 0, (size_t)(f->cap_links - old) * sizeof(lnk));
    f->l[f->n_links].cap = cap;
    *id = f->n_links++;
    return 0;
}

void etk_flow_free(etk_flow *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->n_links; i++)
        free(f->l[i].fl);
    free(f->l);
    free(f->f);
    free(f->freel);
    free(f->ev);
    free(f->cf);
    free(f->cl);
    free(f->h);
    free(f->pend);
    free(f);
}

int etk_flow_set_capacity(etk_flow *f, uint32_t link, double cap, etk_error *err)
{
    if (link >= f->n_links)
        return etk_err(err, ETK_EINVAL, "flow model: link %u out of range (%u links)", link,
                       f->n_links);
    if (!(cap > 0) || !isfinite(cap))
        return etk_err(err, ETK_EINVAL, "flow model: link %u capacity %g B/ns: expected a "
                       "positive finite bandwidth", link, cap);
    if (f->l[link].n)
        return etk_err(err, ETK_EINVAL, "flow model: link %u has flows in flight; set "
                       "capacities before starting flows", link);
    f->l[link].cap = cap;
    return 0;
}

/* ---- event heap ---- */
static bool ev_less(const fev *a, const fev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int ev_push(etk_flow *f, double t, uint32_t flow, uint32_t kind)
{
    if (grow((void **)&f->ev, &f->cap_ev, f->n_ev + 1, sizeof(fev)))
        return -1;
    fev e = {t, flow, f->f[flow].version, kind, f->seq++};
    uint32_t i = f->n_ev++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (!ev_less(&e, &f->ev[p]))
            break;
        f->ev[i] = f->ev[p];
        i = p;
    }
    f->ev[i] = e;
    return 0;
}

static fev ev_pop(etk_flow *f)
{
    fev top = f->ev[0], last = f->ev[--f->n_ev];
    uint32_t i = 0, n = f->n_ev;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_less(&f->ev[c + 1], &f->ev[c]))
            c++;
        if (!ev_less(&f->ev[c], &last))
            break;
        f->ev[i] = f->ev[c];
        i = c;
    }
    if (n)
        f->ev[i] = last;
    return top;
}

static bool ev_stale(const etk_flow *f, const fev *e)
{
    const flw *x = &f->f[e->flow];
    if (x->version != e->version)
        return true;
    return e->kind == EV_DRAIN ? x->state != FS_DRAIN : x->state != FS_TAIL;
}

/* Drop superseded predictions when they outnumber the live ones (each recomputation pushes a
 * fresh prediction per flow): keeps the heap O(active flows). */
static void ev_compact(etk_flow *f)
{
    if (f->n_ev < 4u * f->active + 64)
        return;
    uint32_t m = 0;
    for (uint32_t i = 0; i < f->n_ev; i++)
        if (!ev_stale(f, &f->ev[i]))
            f->ev[m++] = f->ev[i];
    f->n_ev = m;
    /* heapify */
    for (uint32_t k = m / 2; k-- > 0;) {
        fev e = f->ev[k];
        uint32_t i = k;
        for (;;) {
            uint32_t c = 2 * i + 1;
            if (c >= m)
                break;
            if (c + 1 < m && ev_less(&f->ev[c + 1], &f->ev[c]))
                c++;
            if (!ev_less(&f->ev[c], &e))
                break;
            f->ev[i] = f->ev[c];
            i = c;
        }
        f->ev[i] = e;
    }
}

static void ev_clean(etk_flow *f)
{
    while (f->n_ev && ev_stale(f, &f->ev[0]))
        (void)ev_pop(f);
}

/* ---- link heap for progressive filling ---- */
static void h_push(hl *h, uint32_t *n, hl e)
{
    uint32_t i = (*n)++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (!(e.share < h[p].share))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static hl h_pop(hl *h, uint32_t *n)
{
    hl top = h[0], last = h[--*n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1].share < h[c].share)
            c++;
        if (!(h[c].share < last.share))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

/* Recompute the rates of every flow connected to the links seed[0..n-1]. */
static int refill(etk_flow *f, const uint32_t *seed, uint32_t n_seed)
{
    uint32_t m = ++f->mark;
    uint32_t ncl = 0, ncf = 0;
    for (uint32_t i = 0; i < n_seed; i++) {
        lnk *L = &f->l[seed[i]];
        if (L->mark == m)
            continue;
        L->mark = m;
        if (grow((void **)&f->cl, &f->cap_cl, ncl + 1, sizeof(uint32_t)))
            return -1;
        f->cl[ncl++] = seed[i];
    }
    /* breadth-first over links and flows */
    for (uint32_t q = 0; q < ncl; q++) {
        lnk *L = &f->l[f->cl[q]];
        for (uint32_t j = 0; j < L->n; j++) {
            uint32_t fi = L->fl[j];
            flw *x = &f->f[fi];
            if (x->mark == m)
                continue;
            x->mark = m;
            if (grow((void **)&f->cf, &f->cap_cf, ncf + 1, sizeof(uint32_t)))
                return -1;
            f->cf[ncf++] = fi;
            for (uint32_t k = 0; k < x->n; k++) {
                lnk *L2 = &f->l[x->path[k]];
                if (L2->mark == m)
                    continue;
                L2->mark = m;
                if (grow((void **)&f->cl, &f->cap_cl, ncl + 1, sizeof(uint32_t)))
                    return -1;
                f->cl[ncl++] = x->path[k];
            }
        }
    }
    f->work += ncf;
    for (uint32_t i = 0; i < ncf; i++) {
        flw *x = &f->f[f->cf[i]];
        x->rem -= x->rate * (f->now - x->t_upd);
        if (x->rem < 0)
            x->rem = 0;
        x->t_upd = f->now;
        x->frozen = 0;
    }
    if (grow((void **)&f->h, &f->cap_h, ncl + 1, sizeof(hl)))
        return -1;
    uint32_t nh = 0;
    for (uint32_t i = 0; i < ncl; i++) {
        lnk *L = &f->l[f->cl[i]];
        L->res = L->cap;
        L->cnt = L->n;
        if (L->cnt)
            h_push(f->h, &nh, (hl){L->res / L->cnt, f->cl[i]});
    }
    while (nh) {
        hl e = h_pop(f->h, &nh);
        lnk *L = &f->l[e.link];
        if (!L->cnt)
            continue;
        double share = L->res / L->cnt;
        if (share > e.share * (1 + 1e-12) + 1e-300) { /* stale: share grew since pushed */
            h_push(f->h, &nh, (hl){share, e.link});
            continue;
        }
        /* freeze every unfrozen flow of this bottleneck at `share` */
        for (uint32_t j = 0; j < L->n; j++) {
            flw *x = &f->f[L->fl[j]];
            if (x->frozen)
                continue;
            x->frozen = 1;
            x->rate = share;
            for (uint32_t k = 0; k < x->n; k++) {
                lnk *L2 = &f->l[x->path[k]];
                L2->res -= share;
                if (L2->res < 0)
                    L2->res = 0;
                L2->cnt--;
            }
        }
    }
    for (uint32_t i = 0; i < ncf; i++) {
        uint32_t fi = f->cf[i];
        flw *x = &f->f[fi];
        x->version++;
        double t = x->rate > 0 ? f->now + x->rem / x->rate : INFINITY;
        if (ev_push(f, t, fi, EV_DRAIN))
            return -1;
    }
    ev_compact(f);
    return 0;
}

static uint32_t new_flow(etk_flow *f)
{
    if (f->n_free)
        return f->freel[--f->n_free];
    if (grow((void **)&f->f, &f->cap_f, f->n_f + 1, sizeof(flw)))
        return UINT32_MAX;
    memset(&f->f[f->n_f], 0, sizeof(flw));
    return f->n_f++;
}

int etk_flow_start(etk_flow *f, uint64_t bytes, const uint32_t *path, uint32_t n,
                   double latency_ns, uint64_t tag, etk_error *err)
{
    if (n > ETK_FLOW_MAX_PATH)
        return etk_err(err, ETK_EINVAL, "flow model: path of %u links (at most %d)", n,
                       ETK_FLOW_MAX_PATH);
    if (!(latency_ns >= 0) || !isfinite(latency_ns))
        return etk_err(err, ETK_EINVAL, "flow model: latency %g ns: expected >= 0", latency_ns);
    for (uint32_t i = 0; i < n; i++) {
        if (path[i] >= f->n_links)
            return etk_err(err, ETK_EINVAL, "flow model: path[%u] = link %u out of range (%u "
                           "links)", i, path[i], f->n_links);
        for (uint32_t j = 0; j < i; j++)
            if (path[j] == path[i])
                return etk_err(err, ETK_EINVAL, "flow model: path uses link %u twice", path[i]);
    }
    uint32_t fi = new_flow(f);
    if (fi == UINT32_MAX)
        return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
    flw *x = &f->f[fi];
    uint32_t ver = x->version + 1;
    memset(x, 0, sizeof *x);
    x->version = ver;
    x->tag = tag;
    x->lat = latency_ns;
    x->t_upd = f->now;
    x->rem = (double)bytes;
    f->active++;
    if (bytes == 0 || n == 0) {
        x->state = FS_TAIL;
        if (ev_push(f, f->now + latency_ns, fi, EV_DONE))
            return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
        return 0;
    }
    x->state = FS_DRAIN;
    x->n = n;
    memcpy(x->path, path, n * sizeof *path);
    for (uint32_t i = 0; i < n; i++) {
        lnk *L = &f->l[path[i]];
        if (grow((void **)&L->fl, &L->capn, L->n + 1, sizeof(uint32_t)))
            return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
        x->slot[i] = L->n;
        L->fl[L->n++] = fi;
    }
    if (f->held) {
        if (grow((void **)&f->pend, &f->cap_pend, f->n_pend + n, sizeof(uint32_t)))
            return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
        memcpy(f->pend + f->n_pend, path, n * sizeof *path);
        f->n_pend += n;
        return 0;
    }
    if (refill(f, path, n))
        return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
    return 0;
}

void etk_flow_hold(etk_flow *f) { f->held = true; }

int etk_flow_release(etk_flow *f, etk_error *err)
{
    f->held = false;
    uint32_t n = f->n_pend;
    f->n_pend = 0;
    if (n && refill(f, f->pend, n))
        return etk_err(err, ETK_ENOMEM, "flow model: out of memory");
    return 0;
}

/* flow fi drained: leave its links, recompute its neighbours, complete after the latency */
static int drained(etk_flow *f, uint32_t fi)
{
    flw *x = &f->f[fi];
    for (uint32_t i = 0; i < x->n; i++) {
        lnk *L = &f->l[x->path[i]];
        uint32_t s = x->slot[i];
        uint32_t last = L->fl[--L->n];
        if (s != L->n) {
            L->fl[s] = last;
            flw *y = &f->f[last];
            for (uint32_t k = 0; k < y->n; k++)
                if (y->path[k] == x->path[i]) {
                    y->slot[k] = s;
                    break;
                }
        }
    }
    x->state = FS_TAIL;
    x->rate = 0;
    x->rem = 0;
    x->version++;
    if (ev_push(f, f->now + x->lat, fi, EV_DONE))
        return -1;
    if (grow((void **)&f->pend, &f->cap_pend, f->n_pend + x->n, sizeof(uint32_t)))
        return -1;
    memcpy(f->pend + f->n_pend, x->path, x->n * sizeof *x->path);
    f->n_pend += x->n;
    return 0;
}

double etk_flow_next_time(etk_flow *f)
{
    ev_clean(f);
    return f->n_ev ? f->ev[0].t : INFINITY;
}

int etk_flow_next(etk_flow *f, double t_limit, uint64_t *tag, double *t_ns)
{
    for (;;) {
        ev_clean(f);
        if (!f->n_ev || f->ev[0].t > t_limit) {
            if (isfinite(t_limit) && t_limit > f->now)
                f->now = t_limit;
            return 0;
        }
        fev e = ev_pop(f);
        if (e.t > f->now)
            f->now = e.t;
        if (e.kind == EV_DRAIN) {
            /* every flow draining at this instant leaves first, then one recomputation */
            if (drained(f, e.flow))
                return -1;
            for (;;) {
                ev_clean(f);
                /* same instant up to rounding (1e-9 relative): symmetric flows drain together */
                if (!f->n_ev || f->ev[0].kind != EV_DRAIN ||
                    f->ev[0].t > f->now + 1e-9 * (f->now > 1 ? f->now : 1))
                    break;
                fev e2 = ev_pop(f);
                if (drained(f, e2.flow))
                    return -1;
            }
            uint32_t n = f->n_pend;
            f->n_pend = 0;
            if (refill(f, f->pend, n))
                return -1;
            continue;
        }
        flw *x = &f->f[e.flow];
        x->state = FS_FREE;
        x->version++;
        f->active--;
        if (grow((void **)&f->freel, &f->cap_free, f->n_free + 1, sizeof(uint32_t)) == 0)
            f->freel[f->n_free++] = e.flow;
        *tag = x->tag;
        *t_ns = f->now;
        return 1;
    }
}

double etk_flow_now(const etk_flow *f) { return f->now; }
uint32_t etk_flow_active(const etk_flow *f) { return f->active; }
uint64_t etk_flow_work(const etk_flow *f) { return f->work; }

double etk_flow_rate(const etk_flow *f, uint64_t tag)
{
    for (uint32_t i = 0; i < f->n_f; i++)
        if (f->f[i].state == FS_DRAIN && f->f[i].tag == tag)
            return f->f[i].rate;
    return 0;
}
