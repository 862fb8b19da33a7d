/* coll.c — collective and point-to-point matching: communicator groups (sorted members,
 * simulated positions), collective instances that start when the last member arrives, send/recv
 * channels paired in order, and the cached cost of each (group, type, size). Called by setup.c
 * when nodes are added and by streams.c/engine.c when they are issued. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/internal.h"
#include "util/cmp.h"

/* Sort the members once and number the simulated ones. */
int sim_prepare_group(etk_sim *s, sgroup *g, etk_error *err)
{
    if (g->prepared)
        return 0;
    g->sorted = malloc(sizeof(uint32_t) * g->n);
    g->simpos = malloc(sizeof(uint32_t) * g->n);
    if (!g->sorted || !g->simpos)
        return sim_oom(err);
    memcpy(g->sorted, g->ranks, sizeof(uint32_t) * g->n);
    qsort(g->sorted, g->n, sizeof(uint32_t), etk_cmp_u32);
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
        return sim_oom(err);
    for (uint32_t i = 0; i < g->n; i++)
        if (g->simpos[i] != SIM_NONE)
            g->simrank[g->simpos[i]] = g->sorted[i];
    g->prepared = true;
    return 0;
}

uint32_t sim_group_pos(const sgroup *g, uint32_t rank)
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

uint32_t sim_find_group(const etk_sim *s, const char *name)
{
    if (!name || !name[0] || strcmp(name, "0") == 0)
        return s->g_all;
    uint32_t gi = etk_kmap_get(&s->gnames, etk_hash_str(name), strlen(name));
    if (gi != SIM_NONE && strcmp(s->g[gi].name, name) == 0)
        return gi;
    for (uint32_t i = 1; i < s->n_g; i++) /* hash collision fallback */
        if (strcmp(s->g[i].name, name) == 0)
            return i;
    return SIM_NONE;
}

uint32_t sim_get_chan(etk_sim *s, uint32_t src, uint32_t dst, int32_t tag, bool *o)
{
    uint64_t a = ((uint64_t)s->cls[src] << 32) | s->cls[dst];
    uint32_t v = etk_kmap_put(&s->chmap, a, (uint64_t)(uint32_t)tag, s->n_ch, o);
    if (*o)
        return SIM_NONE;
    if (v == s->n_ch) {
        if (sim_grow((void **)&s->ch, &s->cap_ch, s->n_ch + 1, sizeof(schan)) != 0) {
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

uint64_t sim_coll_cost(etk_sim *s, uint32_t gi, int ctype, uint64_t bytes, bool *o)
{
    uint64_t a = ((uint64_t)gi << 8) | (uint32_t)ctype;
    uint32_t v = etk_kmap_get(&s->costcache, a, bytes);
    if (v != SIM_NONE)
        return s->costv[v];
    sgroup *g = &s->g[gi];
    uint64_t ns = s->costs.coll_ns(s->costs.ctx, &s->cl, (etk_coll_type)ctype, bytes, g->ranks, g->n);
    if (sim_grow((void **)&s->costv, &s->cap_costv, s->n_costv + 1, sizeof(uint64_t)) != 0) {
        *o = true;
        return ns;
    }
    s->costv[s->n_costv] = ns;
    etk_kmap_put(&s->costcache, a, bytes, s->n_costv++, o);
    return ns;
}

static sinst *get_inst(etk_sim *s, sgroup *g, uint32_t k)
{
    (void)s;
    while (k >= g->base + g->inst_n) {
        if (g->inst_head + g->inst_n == g->inst_cap) {
            if (g->inst_head > 0 && g->inst_head >= g->inst_cap / 2) {
                memmove(g->inst, g->inst + g->inst_head, sizeof(sinst *) * g->inst_n);
                g->inst_head = 0;
            } else if (sim_grow((void **)&g->inst, &g->inst_cap, g->inst_cap + 1, sizeof(sinst *))) {
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

int sim_coll_arrive(etk_sim *s, uint32_t r, uint32_t i, uint64_t t, etk_error *err)
{
    snode *n = &s->r[r].nodes[i];
    sgroup *g = &s->g[n->aux];
    uint32_t k = g->issued[n->pos]++;
    n->seq = k;
    sinst *in = get_inst(s, g, k);
    if (!in)
        return sim_oom(err);
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
    if (s->nf) { /* completion comes from the flow model (sim_flow_pump) */
        in->xfer_t0 = t;
        return etk_net_flows_start(s->nf, in->ctype, in->bytes, g->ranks, g->n,
                                   (uint64_t)n->aux << 32 | k, err);
    }
    st->time += in->dur;
    if (sim_ev_push(s, t + in->dur, EV_COLL, n->aux, k) != 0)
        return sim_oom(err);
    return 0;
}

/* Match posted sends and receives of a channel in order. Sends are eager (like ASTRA-sim's):
 * the transfer starts when the send is issued and the send completes after the message time,
 * whether or not the receive is posted; a receive completes when its message has arrived. */
int sim_p2p_try(etk_sim *s, uint32_t c, uint64_t t, etk_error *err)
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
            /* flow model, send still in flight: the receive completes with it (sim_flow_pump) */
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
        if (sim_ev_push(s, arrive > t ? arrive : t, EV_P2P, ch->dst, ri) != 0)
            return sim_oom(err);
    }
    return 0;
}

void sim_chan_append(snode *nodes, uint32_t *head, uint32_t *tail, uint32_t i)
{
    nodes[i].qnext = SIM_NONE;
    if (*tail == SIM_NONE)
        *head = i;
    else
        nodes[*tail].qnext = i;
    *tail = i;
}
