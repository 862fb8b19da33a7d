/* check.c — checking a plan before anything is emitted: etk_gen_check (every option, the model
 * and the parallel degrees against each other, layers per stage) and, for --mode inference,
 * etk_gen_infer_check (its defaults and limits). Both then fill in the FLOPs per step from the
 * summary (gen.c, infer.c), so this file sits above them: nothing in src/gen calls it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen/infer.h"

static int infer_check(etk_gen_config *c, bool summarize, etk_gen_summary *keep, etk_error *err);

/* The checks; then, when summarize, the summary made for the FLOPs per step, which goes to *keep
 * when keep is not NULL (etk_gen_check_summary), is freed otherwise. */
static int check(etk_gen_config *c, bool summarize, etk_gen_summary *keep, etk_error *err)
{
    if (c->mode == ETK_GEN_MODE_INFERENCE && c->train_flag[0])
        return etk_err(err, ETK_EINVAL,
                       "--%s is a training option: --mode inference has no backward pass, optimizer or "
                       "gradient reduction (plans: --tp, --pp, --ep, --dp as independent replicas)", c->train_flag);
    if (c->mode != ETK_GEN_MODE_INFERENCE && c->infer_flag[0])
        return etk_err(err, ETK_EINVAL, "--%s needs --mode inference", c->infer_flag);
    if (!c->model_set) {
        int rc = etk_model_preset("llama2-7b", &c->model, err);
        if (rc)
            return rc;
        c->model_set = true;
    }
    etk_model *m = &c->model;
    int64_t *d[ETK_GEN_N_DIMS] = {&m->layers, &m->hidden, &m->heads, &m->kv_heads, &m->ffn, &m->vocab, &m->seq};
    bool mha = m->kv_heads == m->heads;
    for (int i = 0; i < ETK_GEN_N_DIMS; i++)
        if (c->dims_override[i])
            *d[i] = c->dims_override[i];
    if (mha && c->dims_override[2] && !c->dims_override[3])
        m->kv_heads = m->heads; /* multi-head attention stays multi-head */
    int rc = etk_model_check(m, err);
    if (rc)
        return rc;
    if (c->tp > 1 && m->heads % c->tp)
        return etk_err(err, ETK_EINVAL, "--tp %u does not divide --heads %" PRId64, c->tp, m->heads);
    /* inference replicates KV heads when TP exceeds them (infer.c) */
    bool kv_rep = c->mode == ETK_GEN_MODE_INFERENCE && c->tp > m->kv_heads && c->tp % m->kv_heads == 0;
    if (c->tp > 1 && m->kv_heads % c->tp && !kv_rep)
        return etk_err(err, ETK_EINVAL, "--tp %u does not divide --kv-heads %" PRId64 " (model %s)%s", c->tp,
                       m->kv_heads, m->name,
                       c->mode == ETK_GEN_MODE_INFERENCE ? "; inference replicates KV heads only when the KV heads divide --tp"
                                                         : "");
    if (c->tp > 1 && m->ffn % c->tp)
        return etk_err(err, ETK_EINVAL, "--tp %u does not divide --ffn %" PRId64, c->tp, m->ffn);
    if (c->tp > 1 && m->experts && m->moe_ffn % c->tp)
        return etk_err(err, ETK_EINVAL, "--tp %u does not divide the expert FFN %" PRId64 " (model %s)", c->tp,
                       m->moe_ffn, m->name);
    if (c->tp > 1 && m->shared_experts && (m->shared_experts * m->moe_ffn) % c->tp)
        return etk_err(err, ETK_EINVAL, "--tp %u does not divide the shared-expert FFN %" PRId64 " (model %s)",
                       c->tp, m->shared_experts * m->moe_ffn, m->name);
    if (c->tp > 1 && m->vocab % c->tp)
        return etk_err(err, ETK_EINVAL, "--tp %u does not divide --vocab %" PRId64
                       " (the embedding is split over TP by vocabulary)", c->tp, m->vocab);
    if (c->fp8_weight_cache && strcmp(c->precision, "fp8"))
        return etk_err(err, ETK_EINVAL, "--fp8-weight-cache needs --precision fp8 (it counts the FP8 copies of "
                       "the weights that FP8 GEMMs read)");
    if (c->tp_comm_overlap && !c->sp)
        return etk_err(err, ETK_EINVAL, "--tp-comm-overlap needs --sp (it overlaps the sequence-parallel all-gathers "
                       "and reduce-scatters of TP with the GEMMs)");
    if (c->sp && c->tp < 2)
        return etk_err(err, ETK_EINVAL, "--sp needs --tp > 1 (sequence parallelism shards along TP)");
    if (c->sp && m->seq % c->tp)
        return etk_err(err, ETK_EINVAL, "--sp: --tp %u does not divide --seq %" PRId64, c->tp, m->seq);
    if (!c->cp)
        c->cp = 1;
    if (c->cp > 1 && m->seq % c->cp)
        return etk_err(err, ETK_EINVAL, "--cp %u does not divide --seq %" PRId64 " (the sequence is split over CP ranks)",
                       c->cp, m->seq);
    if (c->cp > 1 && c->sp && (m->seq / c->cp) % c->tp)
        return etk_err(err, ETK_EINVAL, "--sp: --tp %u does not divide the --seq %" PRId64 " / --cp %u = %" PRId64
                       " tokens of a CP rank", c->tp, m->seq, c->cp, m->seq / c->cp);
    if (c->cp_comm == ETK_CP_RING && c->cp < 2)
        return etk_err(err, ETK_EINVAL, "--cp-comm ring needs --cp > 1 (the ring passes K/V blocks between CP ranks)");
    if (c->cp_comm == ETK_CP_RING && m->window > 0 && m->window < m->seq &&
        etk_model_sliding_layers(m, 0, m->layers) > 0 && c->mode == ETK_GEN_MODE_TRAINING)
        return etk_err(err, ETK_EUNSUPPORTED,
                       "--cp-comm ring: model %s has sliding-window layers (window %" PRId64 "): a ring over a window "
                       "(the blocks beyond it neither sent nor computed) is not modelled; use --cp-comm allgather",
                       m->name, m->window);
    if (!c->ep)
        c->ep = 1;
    if (c->ep > 1 && !m->experts)
        return etk_err(err, ETK_EINVAL, "--ep %u: model %s has no experts (expert parallelism needs a MoE model)", c->ep,
                       m->name);
    if (c->ep > 1 && m->experts % c->ep)
        return etk_err(err, ETK_EINVAL, "--ep %u does not divide the %" PRId64 " experts of model %s", c->ep, m->experts,
                       m->name);
    if (c->mode == ETK_GEN_MODE_TRAINING && m->experts && !c->etp)
        c->etp = 1;
    /* training with --etp 1: EP folded over the tp x cp x dp ranks of a stage (Megatron) */
    uint32_t xw = c->tp * (c->cp ? c->cp : 1) * c->dp;
    if (c->ep > 1 && c->mode == ETK_GEN_MODE_TRAINING && c->etp == 1 && xw % c->ep)
        return etk_err(err, ETK_EINVAL, "--ep %u does not divide --tp x --cp x --dp = %u (with --etp 1 the expert "
                       "parallel ranks are carved from the tensor, context and data parallel ones)", c->ep, xw);
    if (c->ep > 1 && !(c->mode == ETK_GEN_MODE_TRAINING && c->etp == 1) && c->dp % c->ep)
        return etk_err(err, ETK_EINVAL, "--ep %u does not divide --dp %u (expert parallel ranks are carved from the "
                       "data-parallel ones%s)", c->ep, c->dp,
                       c->mode == ETK_GEN_MODE_TRAINING ? "; with --etp 1 from tensor x context x data parallel" : "");
    if (c->mode == ETK_GEN_MODE_TRAINING && m->experts) {
        if (c->etp != 1 && c->etp != c->tp)
            return etk_err(err, ETK_EINVAL, "--etp %u: expert tensor parallelism is 1 or --tp %u", c->etp, c->tp);
        if (c->etp == 1 && c->tp > 1 && !c->sp)
            return etk_err(err, ETK_EINVAL,
                           "--etp 1 (the default) with --tp %u needs --sp: each TP rank routes the tokens of its "
                           "sequence slice (Megatron requires sequence parallelism for MoE with TP); or --etp %u "
                           "(experts split over TP)", c->tp, c->tp);
    } else if ((c->etp > 1 || c->moe_imbalance > 1 || c->moe_max_nodes) && !m->experts) {
        return etk_err(err, ETK_EINVAL, "--%s: model %s has no experts", c->etp > 1 ? "etp" : c->moe_imbalance > 1 ? "moe-imbalance" : "moe-max-nodes", m->name);
    }
    if ((int64_t)c->pp > m->layers)
        return etk_err(err, ETK_EINVAL, "--pp %u: more pipeline stages than --layers %" PRId64, c->pp, m->layers);
    uint64_t per_step = (uint64_t)c->micro_batch * c->dp;
    if (!c->global_batch && per_step > UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "--micro-batch %u x --dp %u = %" PRIu64 " sequences per step: more than "
                       "--global-batch can hold (2^32 - 1)", c->micro_batch, c->dp, per_step);
    if (!c->global_batch)
        c->global_batch = (uint32_t)per_step;
    if (c->global_batch % per_step)
        return etk_err(err, ETK_EINVAL,
                       "--global-batch %u is not divisible by --micro-batch %u x --dp %u = %" PRIu64, c->global_batch,
                       c->micro_batch, c->dp, per_step);
    uint64_t ranks = (uint64_t)c->dp * c->tp, r2 = (uint64_t)c->pp * c->cp;
    if (__builtin_mul_overflow(ranks, r2, &ranks)) /* four 32-bit flags: the product may pass 2^64 */
        ranks = UINT64_MAX;
    if (ranks > (1u << 24))
        return etk_err(err, ETK_EINVAL, "--dp x --tp x --pp x --cp = %" PRIu64 " ranks: more than 16M is not supported",
                       ranks);
    c->n_ranks = (uint32_t)ranks;
    c->micro_batches = (uint32_t)(c->global_batch / per_step);
    if (c->micro_batches > 1u << 20)
        return etk_err(err, ETK_EINVAL, "%u micro-batches per step: at most 1048576", c->micro_batches);
    if (c->vpp > 1) {
        if (c->pp < 2)
            return etk_err(err, ETK_EINVAL, "--vpp %u needs --pp > 1 (interleaving splits each pipeline rank's layers)", c->vpp);
        if (c->schedule != ETK_SCHED_1F1B)
            return etk_err(err, ETK_EINVAL, "--vpp %u: interleaving is a 1f1b schedule, not %s", c->vpp,
                           c->schedule == ETK_SCHED_GPIPE ? "gpipe" : "zb-h1");
        if ((int64_t)c->pp * c->vpp > m->layers)
            return etk_err(err, ETK_EINVAL, "--pp %u x --vpp %u = %u virtual stages: more than --layers %" PRId64, c->pp,
                           c->vpp, c->pp * c->vpp, m->layers);
        if (c->micro_batches % c->pp)
            return etk_err(err, ETK_EINVAL,
                           "--vpp %u: the %u micro-batches per step must be a multiple of --pp %u (interleaved 1F1B)",
                           c->vpp, c->micro_batches, c->pp);
    }
    /* --ep-comm-overlap: Megatron's --overlap-moe-expert-parallel-comm refuses these (recalled
     * from megatron/training/arguments.py, not checked against a release: EP > 1, no full
     * recompute, a virtual pipeline when PP > 1); 1f1b only and no ZeRO-3 are etkit's (the combined
     * schedule is a 1F1B one; ZeRO-3's per-section gathers are not paired) */
    if (c->ep_comm_overlap) {
        if (c->ep < 2)
            return etk_err(err, ETK_EINVAL, "--ep-comm-overlap needs --ep > 1 (it overlaps the expert-parallel "
                           "all-to-alls of one micro-batch with the compute of another)");
        if (c->schedule != ETK_SCHED_1F1B)
            return etk_err(err, ETK_EINVAL, "--ep-comm-overlap runs Megatron's combined 1F1B schedule: not with "
                           "--schedule %s", c->schedule == ETK_SCHED_GPIPE ? "gpipe" : "zb-h1");
        if (c->pp > 1 && c->vpp < 2)
            return etk_err(err, ETK_EINVAL, "--ep-comm-overlap with --pp %u needs --vpp > 1 (Megatron runs the EP "
                           "all-to-all overlap in the interleaved pipeline schedule only)", c->pp);
        if (c->recompute == ETK_RECOMPUTE_FULL)
            return etk_err(err, ETK_EINVAL, "--ep-comm-overlap: not with --recompute full (Megatron refuses full "
                           "recomputation with the EP all-to-all overlap)");
        if (c->zero == 3)
            return etk_err(err, ETK_EINVAL, "--ep-comm-overlap: not with --zero 3 / --fsdp (the per-layer parameter "
                           "gathers of two paired micro-batches are not modelled)");
    }
    if (c->recompute_layers && c->recompute != ETK_RECOMPUTE_FULL)
        return etk_err(err, ETK_EINVAL, "--recompute-num-layers %u needs --recompute full (it says how many layers of "
                       "each model chunk are recomputed in full)", c->recompute_layers);
    if (c->recompute_stage_layers && c->recompute != ETK_RECOMPUTE_FULL)
        return etk_err(err, ETK_EINVAL, "--recompute-stage-layers %u needs --recompute full (it says how many layers "
                       "of each pipeline stage are recomputed in full)", c->recompute_stage_layers);
    if (c->recompute_layers && c->recompute_stage_layers)
        return etk_err(err, ETK_EINVAL, "--recompute-num-layers %u and --recompute-stage-layers %u: give one (layers "
                       "per model chunk, or per pipeline stage)", c->recompute_layers, c->recompute_stage_layers);
    /* pipeline tags 2 (boundary M + j) + 1 must stay below the CP ring's (gen.h) */
    if (c->cp_comm == ETK_CP_RING &&
        2 * (uint64_t)c->pp * (c->vpp > 1 ? c->vpp : 1) * c->micro_batches + 2 > (uint64_t)ETK_GEN_CP_TAG_BASE)
        return etk_err(err, ETK_EINVAL, "--cp-comm ring: %u micro-batches x %u pipeline stages: pipeline tags would reach "
                       "the CP ring's tag range", c->micro_batches, c->pp * (c->vpp > 1 ? c->vpp : 1));
    if (c->first_stage_layers || c->last_stage_layers) {
        /* the layers of the first / last PHYSICAL stage; with --vpp V spread over its V chunks,
         * each of which needs a layer (gen.c gen_layer_split) */
        uint64_t v = c->vpp > 1 ? c->vpp : 1, P = c->pp;
        uint64_t ends = (uint64_t)c->first_stage_layers + c->last_stage_layers;
        uint64_t inner = P - (c->first_stage_layers ? 1 : 0) - (c->last_stage_layers ? 1 : 0);
        if (P < 2)
            return etk_err(err, ETK_EINVAL, "--first-stage-layers/--last-stage-layers need --pp > 1");
        if (ends > (uint64_t)m->layers || (inner && (uint64_t)m->layers - ends < inner * v) ||
            (!inner && ends != (uint64_t)m->layers))
            return etk_err(err, ETK_EINVAL,
                           "--first-stage-layers %u + --last-stage-layers %u: the other %" PRIu64
                           " pipeline stages need at least %" PRIu64 " of the --layers %" PRId64
                           " each (one per --vpp chunk; and all layers placed)",
                           c->first_stage_layers, c->last_stage_layers, inner, v, m->layers);
        uint32_t end[2] = {c->first_stage_layers, c->last_stage_layers};
        for (int i = 0; i < 2; i++)
            if (end[i] && end[i] < v)
                return etk_err(err, ETK_EINVAL,
                               "--%s-stage-layers %u with --vpp %" PRIu64 ": the flag counts the layers of the %s "
                               "pipeline stage (all its model chunks), which cannot give each of its %" PRIu64
                               " chunks a layer; use at least %" PRIu64 " or a smaller --vpp",
                               i ? "last" : "first", end[i], v, i ? "last" : "first", v, v);
    }
    if (c->mode == ETK_GEN_MODE_INFERENCE)
        return infer_check(c, summarize, keep, err);
    c->gpu_bytes = etk_gen_gpu_bytes(c->gpu);
    c->tokens_per_step = (uint64_t)c->global_batch * (uint64_t)m->seq;
    if (!summarize)
        return 0;
    /* FLOPs per step for MFU/HFU: one emission per stage class (milliseconds even at 32K ranks) */
    etk_gen_summary s;
    if ((rc = etk_gen_summarize(c, &s, err)))
        return rc;
    c->model_flops_per_step = s.model_flops;
    c->hw_flops_per_step = s.step_flops;
    if (keep)
        *keep = s;
    else
        etk_gen_summary_free(&s);
    return 0;
}

int etk_gen_check(etk_gen_config *c, etk_error *err)
{
    return check(c, true, NULL, err);
}

int etk_gen_validate(etk_gen_config *c, etk_error *err)
{
    return check(c, false, NULL, err);
}

int etk_gen_check_summary(etk_gen_config *c, etk_gen_summary *sum, etk_error *err)
{
    memset(sum, 0, sizeof *sum);
    return check(c, true, sum, err);
}

int etk_gen_infer_check(etk_gen_config *c, etk_error *err)
{
    return infer_check(c, true, NULL, err);
}

static int infer_check(etk_gen_config *c, bool summarize, etk_gen_summary *keep, etk_error *err)
{
    const etk_model *m = &c->model;
    /* library callers may set the fields without etk_gen_set (which refuses the flags) */
    const char *train = c->zero ? "--zero" : c->sp ? "--sp" : c->cp > 1 ? "--cp" : c->recompute ? "--recompute"
                        : c->vpp > 1 ? "--vpp" : c->ep_comm_overlap ? "--ep-comm-overlap" : c->schedule != ETK_SCHED_1F1B ? "--schedule"
                        : c->micro_batches != 1 ? "--micro-batch/--global-batch" : NULL;
    if (train)
        return etk_err(err, ETK_EINVAL, "%s is a training option: not with --mode inference", train);
    if (!c->batch)
        c->batch = 1;
    if (!c->decode_steps)
        c->decode_steps = 128;
    if (!c->prompt_len) {
        if (m->seq > INT32_MAX)
            return etk_err(err, ETK_EINVAL, "--prompt-len: the model's seq %" PRId64 " is too long", m->seq);
        c->prompt_len = (uint32_t)m->seq;
    }
    if (!c->infer_micro_batches)
        c->infer_micro_batches = 1;
    if (!c->kv_bytes)
        c->kv_bytes = 2;
    if (c->batch % c->infer_micro_batches)
        return etk_err(err, ETK_EINVAL, "--micro-batches %u does not divide --batch %u (sequences per DP replica)",
                       c->infer_micro_batches, c->batch);
    if ((uint64_t)c->prompt_len + c->decode_steps > INT32_MAX)
        return etk_err(err, ETK_EINVAL, "--prompt-len %u + --decode-steps %u: context longer than 2^31 tokens",
                       c->prompt_len, c->decode_steps);
    if (((uint64_t)c->decode_steps + 1) * c->infer_micro_batches * c->pp * 2 > INT32_MAX)
        return etk_err(err, ETK_EINVAL, "--decode-steps %u x --micro-batches %u x --pp %u: too many pipeline messages "
                       "to tag", c->decode_steps, c->infer_micro_batches, c->pp);
    c->micro_batches = c->infer_micro_batches;
    c->gpu_bytes = etk_gen_gpu_bytes(c->gpu);
    c->tokens_per_step = (uint64_t)c->dp * c->batch * ((uint64_t)c->decode_steps + 1);
    if (!summarize)
        return 0;
    etk_gen_summary s;
    int rc = etk_gen_summarize(c, &s, err);
    if (rc)
        return rc;
    c->model_flops_per_step = s.model_flops;
    c->hw_flops_per_step = s.step_flops;
    if (keep)
        *keep = s;
    else
        etk_gen_summary_free(&s);
    return 0;
}
