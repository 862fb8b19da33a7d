/* build.c — constructing and freeing a simulator (etk_sim_new, etk_sim_set_classes,
 * etk_sim_free): copies the cluster and options, builds the communicator groups and the default
 * cost hooks. Traces are added afterwards by setup.c; engine.c runs the result. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/internal.h"

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
uint64_t sim_def_comp(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx;
    return etk_hw_compute_ns(c, flops, bytes);
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
        return sim_oom(err);
    s->cl = *c;
    if (opts)
        s->o = *opts;
    s->costs.coll_ns = def_coll;
    s->costs.p2p_ns = def_p2p;
    s->costs.compute_ns = sim_def_comp;
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
        s->host_on = s->comp.host_op_ns > 0; /* host.c */
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
            return sim_oom(err);
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
        return sim_oom(err);
    }
    for (uint32_t i = 0; i < n_ranks; i++) {
        s->cls[i] = s->rep[i] = s->all_ranks[i] = i;
        s->csize[i] = 1;
        s->r[i].simulated = true;
        s->r[i].host_wait = SIM_NONE;
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
        etk_kmap_put(&s->gnames, etk_hash_str(eg->id), strlen(eg->id), gi, &o);
    }
    if (o) {
        etk_sim_free(s);
        return sim_oom(err);
    }
    *out = s;
    return 0;
}

int etk_sim_add_group(etk_sim *s, const etk_group *eg, etk_error *err)
{
    if (!eg->id[0] || strcmp(eg->id, "0") == 0 || sim_find_group(s, eg->id) != SIM_NONE)
        return etk_err(err, ETK_EINVAL, "comm groups: group \"%s\" exists already", eg->id);
    if (!eg->n_ranks)
        return etk_err(err, ETK_EINVAL, "comm groups: group \"%s\" has no ranks", eg->id);
    for (uint32_t j = 0; j < eg->n_ranks; j++)
        if (eg->ranks[j] >= s->n_ranks)
            return etk_err(err, ETK_EINVAL, "comm groups: group \"%s\" lists rank %u of %u", eg->id,
                           eg->ranks[j], s->n_ranks);
    sgroup *g = realloc(s->g, sizeof(sgroup) * (s->n_g + 1));
    if (!g)
        return sim_oom(err);
    s->g = g;
    uint32_t gi = s->n_g;
    memset(&s->g[gi], 0, sizeof(sgroup));
    s->g[gi].name = eg->id;
    s->g[gi].ranks = eg->ranks;
    s->g[gi].n = eg->n_ranks;
    bool o = false;
    etk_kmap_put(&s->gnames, etk_hash_str(eg->id), strlen(eg->id), gi, &o);
    if (o)
        return sim_oom(err);
    s->n_g++;
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

void etk_sim_free(etk_sim *s)
{
    if (!s)
        return;
    for (uint32_t r = 0; s->r && r < s->n_ranks; r++) {
        srank *R = &s->r[r];
        if (!sim_in_pool(s, R->nodes))
            free(R->nodes);
        if (!sim_in_pool(s, R->succ))
            free(R->succ);
        free(R->xe);
        etk_kmap_free(&R->ids);
        if (!sim_in_pool(s, R->dense))
            free(R->dense);
        for (int k = 0; k < K_COUNT; k++)
            free(R->ready[k].a);
        free(R->host_blocked.a);
        free(R->lane_key);
        free(R->lane_busy);
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
    etk_kmap_free(&s->gnames);
    etk_kmap_free(&s->costcache);
    etk_kmap_free(&s->chmap);
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
