/* enumerate.c — the candidate plans of a plan search (etkit/plan.h, docs/plan.md "The space"):
 * every combination of the parallel degrees, micro-batch, ZeRO stage, recompute and schedule
 * that meets the structural constraints, in a fixed order; the model's own constraints (heads,
 * KV heads, experts, layers, micro-batches per pipeline) are etk_gen_check's (etk_plan_config),
 * so a candidate they refuse is reported with its message rather than silently left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_priv.h"

void etk_plan_space_init(etk_plan_space *sp)
{
    memset(sp, 0, sizeof *sp);
    etk_gen_config_init(&sp->base);
    sp->zero = -1;
    sp->recompute = -1;
    sp->zero_mask = (1u << 1) | (1u << 3);
    sp->sched_mask = (1u << ETK_SCHED_1F1B) | (1u << ETK_SCHED_ZBH1);
    sp->recompute_mask = (1u << ETK_RECOMPUTE_NONE) | (1u << ETK_RECOMPUTE_SELECTIVE) | (1u << ETK_RECOMPUTE_FULL);
}

/* the defaults of the limits (docs/plan.md): micro-batch 8, VPP 8, CP down to 4,096 tokens per
 * CP rank, PP up to the layers */
static uint32_t lim(uint32_t given, uint64_t dflt)
{
    return given ? given : (uint32_t)(dflt > UINT32_MAX ? UINT32_MAX : dflt);
}

typedef struct {
    etk_plan *v;
    size_t n, cap;
} plan_vec;

static int push(plan_vec *pv, const etk_plan *p)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 256;
        etk_plan *v = realloc(pv->v, cap * sizeof *v);
        if (!v)
            return -1;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = *p;
    return 0;
}

/* x allowed for a degree: fixed (== fix) or, when not fixed, 1..limit */
static bool pick(uint32_t x, uint32_t fix, uint32_t limit)
{
    return fix ? x == fix : x <= limit;
}

/* the limits both modes share: TP within a node unless allowed across, PP the layers, EP the experts */
typedef struct {
    int64_t layers, seq;
    uint32_t tp, pp, ep;
} limits;

static limits common_limits(const etk_plan_space *sp, uint32_t n, uint32_t gpn)
{
    const etk_model *m = &sp->base.model;
    limits l;
    l.layers = sp->base.dims_override[0] ? sp->base.dims_override[0] : m->layers;
    l.seq = sp->base.dims_override[6] ? sp->base.dims_override[6] : m->seq;
    l.tp = lim(sp->max_tp, sp->tp_across_nodes ? n : gpn);
    if (!sp->tp_across_nodes && l.tp > gpn)
        l.tp = gpn;
    l.pp = lim(sp->max_pp, l.layers > 0 ? (uint64_t)l.layers : 1);
    l.ep = lim(sp->max_ep, m->experts > 0 ? (uint64_t)m->experts : 1);
    return l;
}

/* The searched uneven ends: the layers of the first and of the last stage when the middle stages
 * hold q = (layers + 2) / pp each and the ends q - 1 (pp > 2, q - 1 >= 1); 0 when layers + 2 does
 * not divide, or when the ends are given as fixed flags (--first-stage-layers, in sp->base). */
static uint32_t ends_layers(const etk_plan_space *sp, int64_t layers, uint32_t pp)
{
    if (sp->base.first_stage_layers || sp->base.last_stage_layers || sp->no_uneven_ends || pp < 3 ||
        (layers + 2) % pp || (layers + 2) / pp < 2)
        return 0;
    return (uint32_t)((layers + 2) / pp - 1);
}

/* The partial recompute searched for a plan whose largest pipeline stage holds c layers: full
 * recompute of N layers of each stage (--recompute-stage-layers N), N about a quarter, half and
 * three quarters of c (rounded up, distinct, below c; N = c is full recompute), so that plans
 * which do not fit without recompute but need less than all of it are searched (docs/plan.md
 * "The space"; etk_plan_sort drops all but the least recompute that fits). None when recompute
 * is fixed (--recompute full: every layer), with --no-partial-recompute, or when the workload
 * flags fix the partial recompute (--recompute-num-layers / --recompute-stage-layers). */
static uint32_t partial_layers(const etk_plan_space *sp, uint32_t c, uint32_t out[3])
{
    uint32_t k = 0;
    if (sp->no_partial_recompute || sp->recompute >= 0 || sp->base.recompute_layers ||
        sp->base.recompute_stage_layers)
        return 0;
    for (uint32_t q = 1; q <= 3; q++) {
        uint32_t x = (c * q + 3) / 4;
        if (x >= 1 && x < c && (!k || out[k - 1] != x))
            out[k++] = x;
    }
    return k;
}

static int training(const etk_plan_space *sp, uint32_t n, uint32_t gpn, plan_vec *pv)
{
    const etk_model *m = &sp->base.model;
    limits l = common_limits(sp, n, gpn);
    int64_t layers = l.layers, seq = l.seq;
    uint32_t max_tp = l.tp, max_pp = l.pp, max_ep = l.ep;
    uint32_t max_cp = lim(sp->max_cp, seq >= 8192 ? (uint64_t)seq / 4096 : 1);
    uint32_t max_vpp = lim(sp->max_vpp, 8), max_mb = lim(sp->max_micro_batch, 8);
    uint32_t G = sp->global_batch;
    for (uint32_t tp = 1; tp <= n; tp++) {
        if (n % tp || !pick(tp, sp->tp, max_tp) || tp > max_tp)
            continue;
        for (uint32_t cp = 1; cp <= n / tp; cp++) {
            if ((n / tp) % cp || !pick(cp, sp->cp, max_cp))
                continue;
            for (uint32_t pp = 1; pp <= n / tp / cp; pp++) {
                if ((n / tp / cp) % pp || !pick(pp, sp->pp, max_pp))
                    continue;
                uint32_t dp = n / tp / cp / pp;
                if (sp->dp && dp != sp->dp)
                    continue;
                if (!G || G % dp)
                    continue; /* the batch splits over the DP ranks */
                /* VPP: 1, or with PP > 1 a divisor of the layers per stage; ends: even, or (when
                 * layers + 2 splits over more than 2 stages) one layer fewer on the first and the
                 * last stage (Meta's Llama 3 405B: 7 + 14 x 8 + 7), the middle stages' layers
                 * then what VPP divides */
                uint32_t vpp_hi = sp->vpp ? sp->vpp : max_vpp;
                uint32_t q_end = ends_layers(sp, layers, pp);
                for (uint32_t vpp = 1; vpp <= vpp_hi; vpp++) {
                  for (int e = 0; e < 2; e++) {
                    if (sp->vpp && vpp != sp->vpp)
                        continue;
                    if (e ? !q_end || (vpp > 1 && ((q_end + 1) % vpp || q_end < vpp))
                          : vpp > 1 && (pp < 2 || layers % pp || (layers / pp) % vpp))
                        continue;
                    for (uint32_t ep = 1; ep <= dp; ep++) {
                        if (dp % ep || !pick(ep, sp->ep, max_ep) || (ep > 1 && !m->experts))
                            continue;
                        for (uint32_t mb = 1; mb <= G / dp; mb++) {
                            if ((G / dp) % mb || !pick(mb, sp->micro_batch, max_mb))
                                continue;
                            for (int z = 0; z <= 3; z++) {
                                /* ZeRO shards over DP: with DP 1 only stage 0 */
                                bool zok = dp == 1 ? z == 0
                                           : sp->zero >= 0 ? z == sp->zero
                                                           : (sp->zero_mask >> z) & 1;
                                if (!zok)
                                    continue;
                                for (int r = 0; r <= 2; r++) {
                                    if (sp->recompute >= 0 ? r != sp->recompute : !((sp->recompute_mask >> r) & 1))
                                        continue;
                                    /* selective recompute is a no-op with fused attention (docs/gen.md) */
                                    if (r == ETK_RECOMPUTE_SELECTIVE && sp->recompute < 0 &&
                                        sp->base.attention == ETK_ATTN_FLASH)
                                        continue;
                                    /* with full recompute: every layer (N = 0), then N of the
                                     * largest stage's layers */
                                    uint32_t nl[4] = {0}, nn = 1;
                                    if (r == ETK_RECOMPUTE_FULL)
                                        nn += partial_layers(sp, e ? q_end + 1 : (uint32_t)((layers + pp - 1) / pp),
                                                             nl + 1);
                                    else if (sp->base.recompute_layers || sp->base.recompute_stage_layers)
                                        continue; /* partial recompute flags: full recompute only */
                                    for (uint32_t ni = 0; ni < nn; ni++)
                                    for (int s = 0; s <= 2; s++) {
                                        /* one schedule without a pipeline; interleaving is 1F1B */
                                        bool sok = pp == 1 ? s == ETK_SCHED_1F1B
                                                   : vpp > 1 ? s == ETK_SCHED_1F1B && ((sp->sched_mask >> s) & 1)
                                                             : (sp->sched_mask >> s) & 1;
                                        if (!sok)
                                            continue;
                                        etk_plan p = {.tp = tp, .cp = cp, .pp = pp, .vpp = vpp, .dp = dp, .ep = ep,
                                                      .first_layers = e ? q_end : 0,
                                                      .last_layers = e ? q_end : 0, .micro_batch = mb, .zero = (int8_t)z,
                                                      .recompute = (int8_t)r,
                                                      .recompute_stage_layers = (uint16_t)nl[ni], .schedule = (int8_t)s,
                                                      .sp = tp > 1 && !sp->no_sp};
                                        if (push(pv, &p))
                                            return -1;
                                    }
                                }
                            }
                        }
                    }
                  }
                }
            }
        }
    }
    return 0;
}

static int inference(const etk_plan_space *sp, uint32_t n, uint32_t gpn, plan_vec *pv)
{
    const etk_model *m = &sp->base.model;
    limits l = common_limits(sp, n, gpn);
    uint32_t max_tp = l.tp, max_pp = l.pp, max_ep = l.ep;
    uint32_t G = sp->global_batch;
    for (uint32_t tp = 1; tp <= n; tp++) {
        if (n % tp || !pick(tp, sp->tp, max_tp) || tp > max_tp)
            continue;
        for (uint32_t pp = 1; pp <= n / tp; pp++) {
            if ((n / tp) % pp || !pick(pp, sp->pp, max_pp))
                continue;
            uint32_t dp = n / tp / pp;
            if ((sp->dp && dp != sp->dp) || !G || G % dp)
                continue;
            uint32_t batch = G / dp;
            for (uint32_t ep = 1; ep <= dp; ep++) {
                if (dp % ep || !pick(ep, sp->ep, max_ep) || (ep > 1 && !m->experts))
                    continue;
                /* micro-batches: 1, and PP of them when the batch splits so */
                for (uint32_t k = 0; k < 2; k++) {
                    uint32_t mb = k ? pp : 1;
                    if (k && (pp == 1 || batch % pp))
                        continue;
                    if (sp->infer_mb && mb != sp->infer_mb)
                        continue;
                    etk_plan p = {.tp = tp, .cp = 1, .pp = pp, .vpp = 1, .dp = dp, .ep = ep, .infer_mb = mb};
                    if (push(pv, &p))
                        return -1;
                }
            }
        }
    }
    return 0;
}

int etk_plan_enumerate(const etk_plan_space *sp, uint32_t n_gpus, uint32_t gpus_per_node, etk_plan **out,
                       size_t *n, etk_error *err)
{
    plan_vec pv = {0};
    *out = NULL;
    *n = 0;
    if (!n_gpus || !gpus_per_node)
        return etk_err(err, ETK_EINVAL, "plan search: no GPUs (%u GPUs in nodes of %u)", n_gpus, gpus_per_node);
    int rc = sp->base.mode == ETK_GEN_MODE_INFERENCE ? inference(sp, n_gpus, gpus_per_node, &pv)
                                                     : training(sp, n_gpus, gpus_per_node, &pv);
    if (rc) {
        free(pv.v);
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory enumerating plans");
    }
    *out = pv.v;
    *n = pv.n;
    return 0;
}

/* the gen configuration of a candidate, not yet checked */
static void plan_fill(const etk_plan_space *sp, const etk_plan *p, const char *gpu, etk_gen_config *cfg)
{
    *cfg = sp->base;
    cfg->tp = p->tp;
    cfg->pp = p->pp;
    cfg->dp = p->dp;
    cfg->ep = p->ep;
    if (gpu && gpu[0])
        snprintf(cfg->gpu, sizeof cfg->gpu, "%s", gpu);
    if (sp->base.mode == ETK_GEN_MODE_INFERENCE) {
        cfg->batch = sp->global_batch / p->dp;
        cfg->infer_micro_batches = p->infer_mb;
    } else {
        cfg->cp = p->cp;
        /* --cp-comm ring says how CP ranks exchange K/V: it applies to the plans with CP > 1 */
        if (p->cp <= 1)
            cfg->cp_comm = ETK_CP_ALLGATHER;
        cfg->vpp = p->vpp;
        if (p->first_layers || p->last_layers) {
            cfg->first_stage_layers = p->first_layers;
            cfg->last_stage_layers = p->last_layers;
        }
        cfg->sp = p->sp;
        cfg->micro_batch = p->micro_batch;
        cfg->global_batch = sp->global_batch;
        cfg->zero = p->zero;
        cfg->recompute = p->recompute;
        if (p->recompute == ETK_RECOMPUTE_FULL && p->recompute_stage_layers)
            cfg->recompute_stage_layers = p->recompute_stage_layers;
        cfg->schedule = p->schedule;
    }
}

int etk_plan_config(const etk_plan_space *sp, const etk_plan *p, const char *gpu, etk_gen_config *cfg,
                    etk_error *err)
{
    plan_fill(sp, p, gpu, cfg);
    return etk_gen_check(cfg, err);
}

int plan_config_summary(const etk_plan_space *sp, const etk_plan *p, double (*node_ns)(void *, const etk_node *),
                        void *node_ns_ctx, etk_gen_config *cfg, etk_gen_summary *sum, etk_error *err)
{
    plan_fill(sp, p, NULL, cfg);
    cfg->comp_node_ns = node_ns;
    cfg->comp_node_ns_ctx = node_ns_ctx;
    int rc = etk_gen_check_summary(cfg, sum, err);
    cfg->comp_node_ns = NULL; /* the context is the caller's, for this call only */
    cfg->comp_node_ns_ctx = NULL;
    return rc;
}

const char *plan_sched_name(int s)
{
    return s == ETK_SCHED_GPIPE ? "gpipe" : s == ETK_SCHED_ZBH1 ? "zb-h1" : "1f1b";
}

const char *plan_recompute_name(int r)
{
    return r == ETK_RECOMPUTE_FULL ? "full" : r == ETK_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

void etk_plan_flags(const etk_plan_space *sp, const etk_plan *p, char *buf, size_t n)
{
    if (sp->base.mode == ETK_GEN_MODE_INFERENCE) {
        char ep[24] = "";
        if (p->ep > 1)
            snprintf(ep, sizeof ep, " --ep %u", p->ep);
        snprintf(buf, n, "--tp %u --pp %u --dp %u%s --batch %u --micro-batches %u", p->tp, p->pp, p->dp, ep,
                 sp->global_batch / p->dp, p->infer_mb);
        return;
    }
    char vpp[80] = "", cp[24] = "", ep[24] = "", rl[40] = "";
    if (p->recompute == ETK_RECOMPUTE_FULL && p->recompute_stage_layers)
        snprintf(rl, sizeof rl, " --recompute-stage-layers %u", p->recompute_stage_layers);
    int k = 0;
    if (p->vpp > 1)
        k = snprintf(vpp, sizeof vpp, " --vpp %u", p->vpp);
    if (p->first_layers || p->last_layers)
        snprintf(vpp + k, sizeof vpp - (size_t)k, " --first-stage-layers %u --last-stage-layers %u", p->first_layers,
                 p->last_layers);
    if (p->cp > 1)
        snprintf(cp, sizeof cp, " --cp %u", p->cp);
    if (p->ep > 1)
        snprintf(ep, sizeof ep, " --ep %u", p->ep);
    snprintf(buf, n, "--tp %u%s --pp %u%s --dp %u%s%s --micro-batch %u --global-batch %u --zero %d --recompute %s%s "
             "--schedule %s", p->tp, cp, p->pp, vpp, p->dp, ep, p->sp ? " --sp" : "", p->micro_batch,
             sp->global_batch, p->zero, plan_recompute_name(p->recompute), rl, plan_sched_name(p->schedule));
}

const char *etk_plan_status_name(int status)
{
    switch (status) {
    case ETK_PLAN_SIMULATED: return "simulated";
    case ETK_PLAN_INVALID: return "invalid";
    case ETK_PLAN_MEMORY: return "memory";
    case ETK_PLAN_BOUND: return "bound";
    case ETK_PLAN_FAILED: return "failed";
    case ETK_PLAN_DOMINATED: return "dominated";
    default: return "pending";
    }
}
