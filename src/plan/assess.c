/* assess.c — one candidate of a plan search (docs/plan.md "Pruning"): its configuration checked
 * by etk_gen_check (invalid: the check's message), its memory estimate (the generator's summary:
 * weights, gradients, optimizer, activations in flight, buffers) against the GPU's capacity less
 * the margin, the lower bound of its step (compute, communication), and the simulation of a survivor, folded,
 * through etkit/run.h as `etkit run` does it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/run.h"
#include "plan/plan_priv.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The peak the bound divides by: the highest a GEMM of the plan can run at (FP8 plans: the
 * FP8 peak, which the compute model uses for FP8 GEMMs), so no kernel beats it. */
static double bound_peak(const etk_gen_config *cfg, const etk_cluster *cl)
{
    double peak = cl->gpu.peak_flops[cl->precision < ETK_PREC_COUNT ? cl->precision : ETK_PREC_BF16];
    if (!strcmp(cfg->precision, "fp8") && cl->gpu.peak_flops[ETK_PREC_FP8] > peak)
        peak = cl->gpu.peak_flops[ETK_PREC_FP8];
    if (cl->gpu.peak_flops[ETK_PREC_BF16] > peak)
        peak = cl->gpu.peak_flops[ETK_PREC_BF16];
    return peak;
}

/* An upper bound on the attention-core FLOPs (QK^T and AV) one rank of a stage counts per
 * step: the compute model times a causal attention kernel at half its counted FLOPs (it skips
 * masked blocks), so the bound may only count these at half. Per layer and micro-batch the
 * forward core is 4 b (s/cp) s (heads/tp) d with d the widest head dimension; forward, backward
 * (2x) make 3x that, 4x with a recomputed forward. Inference: the prefill's, once. */
static double attn_flops_bound(const etk_gen_config *c, uint32_t layers)
{
    const etk_model *m = &c->model;
    double d = m->head_dim ? (double)m->head_dim : (double)m->hidden / (double)m->heads;
    if ((double)(m->qk_nope + m->qk_rope) > d)
        d = (double)(m->qk_nope + m->qk_rope);
    if ((double)m->v_head > d)
        d = (double)m->v_head;
    double heads = (double)m->heads / (double)c->tp;
    if (heads < 1)
        heads = 1;
    if (c->mode == ETK_GEN_MODE_INFERENCE) {
        double P = (double)c->prompt_len;
        return 4.0 * (double)c->batch * P * P * heads * d * layers;
    }
    double s = (double)m->seq;
    double passes = c->recompute == ETK_RECOMPUTE_NONE ? 3.0 : 4.0;
    return passes * 4.0 * (double)c->micro_batch * (s / (double)c->cp) * s * heads * d * layers *
           (double)c->micro_batches;
}

/* The efficiency no GEMM can beat: the compute model's gemm_eff (fp8_gemm_eff when larger), or
 * the roofline's compute_efficiency. A memory-bound op (FLOPs per byte below gemm_min_dim) takes
 * bytes / (HBM x mem_eff), no less than its FLOPs at this efficiency while gemm_min_dim <= peak x
 * eff / (HBM x mem_eff) (true of every GPU preset); otherwise 1. */
static double bound_eff(const etk_cluster *cl, const etk_compute_params *cp, double peak)
{
    if (!cp)
        return cl->compute_efficiency > 0 && cl->compute_efficiency <= 1 ? cl->compute_efficiency : 1;
    double e = cp->gemm_eff > cp->fp8_gemm_eff ? cp->gemm_eff : cp->fp8_gemm_eff;
    if (!(e > 0 && e <= 1))
        return 1;
    double bw = cl->gpu.hbm_bw_Bps * cp->mem_eff;
    if (!(bw > 0) || cp->gemm_min_dim > peak * e / bw)
        return 1;
    return e;
}

/* A compute node's time as the simulator gives it (src/sim/setup.c: a GPU node without a
 * duration, timed by the compute model from num_ops and tensor_size; generated traces carry no
 * durations and count FLOPs, not MACs), for the summary's per-stage compute_ns. */
typedef struct {
    const etk_cluster *cl;
    const etk_compute_params *cp;
} comp_time;

static double comp_node_ns(void *u, const etk_node *n)
{
    const comp_time *c = u;
    bool cpu = false;
    int64_t fl = 0;
    uint64_t tb = 0;
    etk_node_bool(n, "is_cpu_op", &cpu);
    etk_node_i64(n, "num_ops", &fl);
    etk_node_u64(n, "tensor_size", &tb);
    if (fl < 0)
        fl = 0;
    if (cpu || (!fl && !tb))
        return 0;
    etk_op_desc op;
    etk_compute_op_from_node(n, (uint64_t)fl, tb, &op);
    uint64_t t = etk_compute_op_ns(c->cl, c->cp, &op);
    return t == UINT64_MAX ? 0 : (double)t; /* an overflow: no bound from it (0 is always below) */
}

/* The compute-only lower bound of the step (docs/plan.md "Lower bound"): a stage's kernels run
 * one after another on its compute stream (the search simulates one compute stream per rank),
 * so its compute takes at least the sum of their compute-model times (sum->stages[i].compute_ns,
 * when the summary was timed: job->compute set) and at least the FLOP bound below, each kernel
 * no faster than its FLOPs at the peak x bound_eff (causal attention at half its counted FLOPs,
 * at most the peak): T_i the larger. With 1F1B or GPipe a
 * stage i also waits for micro-batch 1's forward through the stages before it and, after its
 * last backward, for the last backward through them: one micro-batch chunk of each, T_j / (m v),
 * counted for the stages j < i without the embedding or the head (so the chunks are alike). */
static uint64_t lower_bound_ns(const etk_gen_config *cfg, const etk_gen_summary *sum, const etk_cluster *cl,
                               const etk_compute_params *cp)
{
    double peak = bound_peak(cfg, cl);
    if (!(peak > 0))
        return 0;
    double eff = bound_eff(cl, cp, peak), best = 0, chain = 0, chain_f = 0;
    double mv = (double)sum->micro_batches * (cfg->vpp > 1 ? cfg->vpp : 1);
    bool train = cfg->mode != ETK_GEN_MODE_INFERENCE && mv > 0;
    bool pipe = train && cfg->schedule != ETK_SCHED_ZBH1;
    for (uint32_t i = 0; i < sum->n_stages; i++) {
        const etk_gen_stage *st = &sum->stages[i];
        double a = attn_flops_bound(cfg, st->layers);
        if (a > st->flops)
            a = st->flops;
        double t = (st->flops - a) / (peak * eff) + 0.5 * a / peak; /* seconds */
        double tk = st->compute_ns / 1e9 > t ? st->compute_ns / 1e9 : t;
        double wait = chain > chain_f ? chain : chain_f;
        if (tk + wait > best)
            best = tk + wait;
        /* the chain stays the FLOP bound's: a micro-batch chunk is 1/(m v) of the stage's
         * FLOPs, while the timed sum also holds once-a-step kernels (the optimizer) */
        if (pipe && !st->has_embed && !st->has_head)
            chain += t / mv;
        /* every schedule, zb-h1 too: the stage's first kernel waits for micro-batch 1's forward
         * on each stage before it, 1/m of that stage's timed forward passes (every micro-batch's
         * forward runs the same kernels). Without interleaving only: a stage's model chunks may
         * differ in layers (uneven ends), and the first chunk's share is not 1/v */
        if (train && cfg->vpp <= 1 && !st->has_embed && !st->has_head)
            chain_f += st->fwd_compute_ns / 1e9 / mv;
    }
    return (uint64_t)floor(best * 1e9);
}

/* Time of the collectives of one group kind of stage i's rank: each communicator group has a
 * communication stream of its own (one stream for all with ASTRA-sim compatibility), on which
 * its collectives run one after another, so the step is at least their sum. The summary gives
 * the bytes per collective type; the analytical time of one collective of all of them,
 * t(sum b_k), is at most sum t(b_k) since t is subadditive in the bytes (a latency plus a
 * bandwidth term per algorithm, the fastest algorithm taken: a minimum of affine functions with
 * non-negative intercepts). ranks: the group of (tp 0, cp 0, dp 0, stage i) as the generator
 * forms it (gen/groups.c: TP over tp; CP over cp; DP over cp and dp). */
static double group_comm_s(const etk_gen_config *cfg, const etk_gen_stage *st, const etk_cluster *cl, int kind,
                           uint32_t *ranks)
{
    uint32_t n = 0, C = cfg->cp ? cfg->cp : 1, pp = st->stage;
    if (kind == ETK_GEN_GROUP_TP)
        for (uint32_t t = 0; t < cfg->tp; t++)
            ranks[n++] = etk_gen_rank_cp(cfg, t, 0, 0, pp);
    else if (kind == ETK_GEN_GROUP_CP)
        for (uint32_t c = 0; c < C; c++)
            ranks[n++] = etk_gen_rank_cp(cfg, 0, c, 0, pp);
    else
        for (uint32_t d = 0; d < cfg->dp; d++)
            for (uint32_t c = 0; c < C; c++)
                ranks[n++] = etk_gen_rank_cp(cfg, 0, c, d, pp);
    if (n < 2)
        return 0;
    etk_net_place place;
    etk_error err = {0};
    if (etk_net_place_group(cl, ranks, n, &place, &err))
        return 0;
    double t = 0;
    for (int c = 0; c < ETK_COLL_TYPE_COUNT; c++)
        if (st->coll_bytes[kind][c])
            t += (double)etk_net_place_coll_ns(cl, &place, (etk_coll_type)c, st->coll_bytes[kind][c]) / 1e9;
    return t;
}

/* The communication lower bound (docs/plan.md "Lower bound"): the largest over the stages and
 * the TP, CP and DP groups of a group's collectives per step, in seconds. Expert-parallel
 * groups (whose membership folds over TP x CP x DP) are left out, so a MoE plan's bound may be
 * lower than it could be, never higher. */
static double comm_bound_s(const etk_gen_config *cfg, const etk_gen_summary *sum, const etk_cluster *cl)
{
    if (cfg->mode == ETK_GEN_MODE_INFERENCE || cfg->model.experts)
        return 0;
    uint32_t C = cfg->cp ? cfg->cp : 1;
    size_t n = (size_t)cfg->dp * C > cfg->tp ? (size_t)cfg->dp * C : cfg->tp;
    uint32_t *ranks = malloc(n * sizeof *ranks);
    if (!ranks)
        return 0;
    double best = 0;
    static const int kinds[] = {ETK_GEN_GROUP_TP, ETK_GEN_GROUP_CP, ETK_GEN_GROUP_DP};
    for (uint32_t i = 0; i < sum->n_stages; i++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            double t = group_comm_s(cfg, &sum->stages[i], cl, kinds[k], ranks);
            if (t > best)
                best = t;
        }
    free(ranks);
    return best;
}

static void reason(etk_plan_row *row, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void reason(etk_plan_row *row, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->reason, sizeof row->reason, fmt, ap);
    va_end(ap);
}

void etk_plan_assess(const etk_plan_search_state *s, etk_plan_row *row)
{
    const etk_plan_job *job = &s->jobs[row->job];
    etk_gen_config cfg;
    etk_error err = {0};
    etk_gen_summary sum; /* the check's own (it makes one for the FLOPs per step) */
    etk_cluster cl = job->cluster;
    etk_run_set_precision(&s->sp.base, &cl); /* the precision is the space's, the same for every plan */
    /* the summary times each stage's kernels as the simulation will (compute model only: with
     * the roofline or ASTRA-sim compatibility the FLOP bound stays) */
    comp_time ct = {&cl, job->compute};
    bool timed = job->compute && !cl.astra_compat;
    if (plan_config_summary(&s->sp, &row->plan, timed ? comp_node_ns : NULL, &ct, &cfg, &sum, &err)) {
        row->status = ETK_PLAN_INVALID;
        reason(row, "%s", err.msg);
        return;
    }
    row->mem_bytes = sum.peak_bytes;
    const etk_gen_stage *pk = &sum.stages[sum.peak_stage];
    double cap = (double)job->cluster.gpu.hbm_bytes * (1.0 - s->o.memory_margin);
    row->lb_ns = lower_bound_ns(&cfg, &sum, &cl, job->compute);
    /* the network the simulation uses (etk_plan_simulate: the flow model's presets analytically) */
    if (cl.net_model == ETK_NET_FLOW)
        cl.net_model = ETK_NET_ANALYTICAL;
    uint64_t comm_ns = (uint64_t)floor(comm_bound_s(&cfg, &sum, &cl) * 1e9);
    if (comm_ns > row->lb_ns)
        row->lb_ns = comm_ns;
    row->lb_score = plan_score(s, row->job, (double)row->lb_ns);
    if ((double)sum.peak_bytes > cap) {
        row->status = ETK_PLAN_MEMORY;
        if (cfg.mode == ETK_GEN_MODE_INFERENCE)
            reason(row, "memory estimate %.2f GiB per GPU (stage %u: weights %.2f, KV cache %.2f GiB) > %.2f GiB "
                   "= %.2f GiB HBM x (1 - margin %g)", sum.peak_bytes / GIB, pk->stage, pk->weight_bytes / GIB,
                   pk->kv_cache_bytes / GIB, cap / GIB, job->cluster.gpu.hbm_bytes / GIB, s->o.memory_margin);
        else
            reason(row, "memory estimate %.2f GiB per GPU (stage %u: weights %.2f, gradients %.2f, optimizer %.2f, "
                   "activations %.2f GiB) > %.2f GiB = %.2f GiB HBM x (1 - margin %g)", sum.peak_bytes / GIB,
                   pk->stage, pk->weight_bytes / GIB, pk->grad_bytes / GIB, pk->optimizer_bytes / GIB,
                   pk->act_bytes / GIB, cap / GIB, job->cluster.gpu.hbm_bytes / GIB, s->o.memory_margin);
    }
    etk_gen_summary_free(&sum);
}

void etk_plan_simulate(const etk_plan_search_state *s, etk_plan_row *row)
{
    const etk_plan_job *job = &s->jobs[row->job];
    etk_gen_config cfg;
    etk_error err = {0};
    etk_workload *wl = NULL;
    etk_sim *sim = NULL;
    row->status = ETK_PLAN_FAILED;
    if (etk_plan_config(&s->sp, &row->plan, NULL, &cfg, &err))
        goto fail;
    cfg.no_names = true; /* the step, MFU and tokens/s need no node names (inference keeps them) */
    etk_cluster cl = job->cluster;
    /* folded: the flow model simulates every rank, so the search uses the analytical one */
    if (cl.net_model == ETK_NET_FLOW)
        cl.net_model = ETK_NET_ANALYTICAL;
    etk_run_set_precision(&cfg, &cl);
    etk_sim_opts o;
    memset(&o, 0, sizeof o);
    o.quiet = true;
    o.compute = job->compute;
    etk_run_opts_defaults(&cl, &o);
    if (etk_run_workload(&cfg, &cl, &o, &wl, &err) || etk_run_simulate(&cfg, wl, &cl, &o, &sim, &err))
        goto fail;
    const etk_sim_result *r = etk_sim_result_get(sim);
    row->status = ETK_PLAN_SIMULATED;
    row->step_ns = r->step_ns;
    row->mfu = r->mfu;
    row->tokens_per_s = r->tokens_per_s;
    row->score = plan_score(s, row->job, (double)r->step_ns);
    row->usd_per_mtok = job->gpu_hour_usd > 0 && r->tokens_per_s > 0
                            ? job->gpu_hour_usd * r->n_ranks / 3600.0 / r->tokens_per_s * 1e6
                            : 0;
    row->reason[0] = 0;
    etk_sim_free(sim);
    etk_workload_free(wl);
    return;
fail:
    reason(row, "simulation failed: %s", err.msg);
    etk_sim_free(sim);
    etk_workload_free(wl);
}
