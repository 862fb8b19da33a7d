/* stage.c — the per-stage plan of training (struct gen, train.h): layers of each pipeline stage
 * and model chunk, the sections lowered once (lower.c), weights per rank (TP, EP, ZeRO
 * sharding), and the memory of a stage. Used by the summary and the emitters; uses only plan.c
 * and lower.c. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen/fastwrite.h"
#include "gen/infer.h"
#include "gen/lower.h"
#include "util/outset.h"
#include "gen/train.h"

static void gen_layer_split(const etk_gen_config *cfg, uint32_t p, uint32_t v, uint32_t *nl);

/* Node-limited routing (--moe-max-nodes M, DeepSeek-V3): a token's experts lie on at most M
 * nodes and one copy per destination node crosses the network (forwarded inside the node over
 * NVLink, not counted), so of its topk copies at most min(M, N, topk) leave, N the nodes the EP
 * group spans (ranks of rank 0's group; nodes of cfg->gpus_per_node GPUs, the cluster's, 8 when
 * not known); the all-to-all bytes are scaled by min(M, N, topk) / topk. 1 when not set or not
 * binding. */
static double moe_a2a_scale(const etk_gen_config *cfg)
{
    int64_t topk = cfg->model.topk;
    if (!cfg->moe_max_nodes || cfg->ep < 2 || topk <= 0)
        return 1;
    uint32_t per_node = cfg->gpus_per_node ? cfg->gpus_per_node : 8;
    uint32_t nodes = 0, last = UINT32_MAX;
    for (uint32_t e = 0; e < cfg->ep; e++) { /* rank 0's EP group: increasing ranks */
        uint32_t r;
        if (gen_ep_folded(cfg)) {
            uint32_t C = cfg->cp ? cfg->cp : 1;
            r = etk_gen_rank_cp(cfg, e % cfg->tp, e / cfg->tp % C, e / (cfg->tp * C), 0);
        } else {
            r = etk_gen_rank(cfg, 0, e, 0);
        }
        uint32_t node = r / per_node;
        if (node != last)
            nodes++;
        last = node;
    }
    int64_t m = cfg->moe_max_nodes;
    if (m > (int64_t)nodes)
        m = nodes;
    if (m > topk)
        m = topk;
    return (double)m / (double)topk;
}

void gen_free(gen *G)
{
    etk_graph_free(G->g);
    etk_arena_free(G->a);
    free(G->first);
    free(G->nl);
    free(G->memo);
}

int gen_init(gen *G, const etk_gen_config *cfg, etk_error *err)
{
    memset(G, 0, sizeof *G);
    G->cfg = cfg;
    if (!cfg->n_ranks || !cfg->micro_batches)
        return etk_err(err, ETK_EINVAL, "plan not checked: call etk_gen_check first");
    int rc = etk_graph_load(&cfg->model, cfg->micro_batch, &G->g, err);
    if (rc)
        return rc;
    /* each recompute module asked for must be in the model's layers: one that is not would
     * silently change nothing */
    uint32_t have = 0;
    for (int s = 0; s < G_N_SEC + 1; s++) {
        const gsection *S = etk_graph_section(G->g, s);
        for (int j = 0; S && j < S->nops; j++)
            have |= S->ops[j].rmod;
    }
    for (uint32_t b = 1; b && etk_graph_rmod_name(b); b <<= 1)
        if ((cfg->recompute_modules & b) && !(have & b)) {
            etk_err(err, ETK_EINVAL, "--recompute-modules %s: model %s (%s) has no op of this module (ops "
                    "marked `recompute: %s` in its block file)", etk_graph_rmod_name(b), cfg->model.name,
                    G->g->file, etk_graph_rmod_name(b));
            etk_graph_free(G->g);
            G->g = NULL;
            return ETK_EINVAL;
        }
    G->a = etk_arena_new(0);
    G->act_bytes = 2;
    G->cp = cfg->cp ? cfg->cp : 1;
    G->dpw = cfg->dp * G->cp;
    G->ep = cfg->ep ? cfg->ep : 1;
    G->edp = (gen_ep_folded(cfg) ? cfg->tp * G->dpw : G->dpw) / G->ep;
    /* context parallelism: each rank holds seq / cp of the query sequence (the stream's s); the
     * key sequence (t) stays whole, K and V are all-gathered (lower.c) */
    G->g->dim[G->g->stream_seq] /= G->cp;
    if (cfg->model.experts && G->cp > 1) /* expert capacity: tokens of the local sequence */
        G->g->dim['c' - 'a'] = (G->g->dim['c' - 'a'] + G->cp - 1) / G->cp;
    /* --etp 1 (training): whole experts on every TP rank (their weights not split over TP), so
     * the expert GEMMs run on the rank's own sequence slice; their gradients are summed over TP
     * with the other TP-replicated weights' (sp_replicated_grads) */
    if (cfg->mode == ETK_GEN_MODE_TRAINING && cfg->model.experts && cfg->etp == 1 && cfg->tp > 1)
        for (int t = 0; t < G->g->nt; t++) {
            gtensor *T = &G->g->t[t];
            for (int k = 0; T->weight && k < T->nd; k++)
                if (T->dims[k] == 'e' - 'a')
                    T->split = -1;
        }
    glower_opts o = {.tp = cfg->tp, .moe_imbalance = cfg->moe_imbalance, .moe_a2a_scale = moe_a2a_scale(cfg), .cp = G->cp, .cp_ring = cfg->cp_comm == ETK_CP_RING && G->cp > 1,
                     .flash = cfg->attention == ETK_ATTN_FLASH, .ep = G->ep, .sp = cfg->sp, .tp_overlap = cfg->tp_comm_overlap && cfg->sp && cfg->tp > 1, .recompute = cfg->recompute,
                     .rmods = cfg->recompute_modules, .act_bytes = G->act_bytes, .unfused_loss = cfg->unfused_loss,
                     .gemm_bytes = !strcmp(cfg->precision, "fp8") ? 1 : 0,
                     .fp8_cast_mb = !strcmp(cfg->precision, "fp8") ? (int64_t)cfg->micro_batches : 0};
    /* DeepSeek's first_k_dense_replace: the first dense_layers layers from the dense_layer section */
    G->dense = G->g->dense.nops && cfg->model.dense_layers > 0 ? (uint32_t)cfg->model.dense_layers : 0;
    for (int s = 0; s < G_N_SEC + (G->dense ? 1 : 0); s++)
        if ((rc = etk_lower_section(G->g, s, &o, G->a, &G->prog[s], err))) {
            gen_free(G);
            return rc;
        }
    /* --recompute-num-layers N: the layers of a chunk after its first N keep their activations
     * (lowered without full recompute; the recompute modules, if any, still apply to them) */
    if (cfg->recompute == ETK_RECOMPUTE_FULL && (cfg->recompute_layers || cfg->recompute_stage_layers)) {
        glower_opts k = o;
        k.recompute = ETK_RECOMPUTE_NONE;
        G->partial = true;
        if ((rc = etk_lower_section(G->g, G_SEC_LAYER, &k, G->a, &G->kept[G_SEC_LAYER], err)) ||
            (G->dense && (rc = etk_lower_section(G->g, G_SEC_DENSE, &k, G->a, &G->kept[G_SEC_DENSE], err)))) {
            gen_free(G);
            return rc;
        }
    }
    /* sliding-window layers (docs/models.md): the layer sections lowered again with the window;
     * unfused attention computes the whole masked score matrix (nothing to lower again) */
    if (cfg->model.window > 0 && cfg->model.window < cfg->model.seq && o.flash &&
        etk_model_sliding_layers(&cfg->model, 0, cfg->model.layers) > 0) {
        glower_opts w = o;
        w.window = cfg->model.window;
        G->win = true;
        for (int s = G_SEC_LAYER; s <= G_SEC_DENSE; s++) {
            if (s != G_SEC_LAYER && !(s == G_SEC_DENSE && G->dense))
                continue;
            if ((rc = etk_lower_section(G->g, s, &w, G->a, &G->wprog[s], err))) {
                gen_free(G);
                return rc;
            }
            if (G->partial) {
                glower_opts k = w;
                k.recompute = ETK_RECOMPUTE_NONE;
                if ((rc = etk_lower_section(G->g, s, &k, G->a, &G->wkept[s], err))) {
                    gen_free(G);
                    return rc;
                }
            }
        }
    }
    G->p = cfg->pp;
    G->m = cfg->micro_batches;
    G->v = cfg->vpp ? cfg->vpp : 1;
    uint32_t V = G->p * G->v;
    G->first = calloc(V, sizeof(uint32_t));
    G->nl = calloc(V, sizeof(uint32_t));
    if (!G->first || !G->nl) {
        gen_free(G);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    gen_layer_split(cfg, G->p, G->v, G->nl);
    for (uint32_t s = 0, f = 0; s < V; s++) {
        G->first[s] = f;
        f += G->nl[s];
    }
    const gsection *H = &G->g->sec[G_SEC_HEAD];
    for (int j = 0; j < H->nops; j++)
        for (int i = 0; i < H->ops[j].nin; i++)
            if (G->g->t[H->ops[j].in[i]].weight && G->g->t[H->ops[j].in[i]].section == G_SEC_EMBED)
                G->tied = true;
    G->emb_group = G->tied && G->p > 1;
    G->z3 = cfg->zero == 3 && G->dpw > 1;
    if (G->z3 && G->emb_group) {
        gen_free(G);
        return etk_err(err, ETK_EINVAL,
                       "--zero 3 with --pp %u: model %s ties its output layer to the embedding on another stage "
                       "(not supported; use --pp 1 or --zero 1|2)", cfg->pp, cfg->model.name);
    }
    for (int t = 0; t < G->g->nt; t++)
        if (G->g->t[t].weight && (G->g->t[t].section < G_N_SEC || (G->g->t[t].section == G_SEC_DENSE && G->dense))) {
            int sec = G->g->t[t].section;
            uint64_t n = gen_weight_elems_rank(G, t);
            G->sec_own[sec] += n;
            G->sec_elems[sec] += n;
            if (G->ep > 1 && gen_is_expert(G, t))
                G->sec_x[sec] += n;
            /* a tied output layer gathers the table again for the head */
            bool used_by_head = false;
            for (int j = 0; j < H->nops; j++)
                for (int i = 0; i < H->ops[j].nin; i++)
                    used_by_head |= H->ops[j].in[i] == t;
            if (sec != G_SEC_HEAD && used_by_head)
                G->sec_elems[G_SEC_HEAD] += n;
        }
    G->bucket_bytes = (uint64_t)(cfg->dp_bucket_mb * 1024 * 1024);
    if (!G->bucket_bytes)
        G->bucket_bytes = 1;
    return 0;
}

/* Layers per virtual stage nl[c*p + s] (chunk c of pipeline stage s). Without fixed ends: l =
 * V*q + r over the V = p*v virtual stages, the first r hold one more. With
 * --first-stage-layers A / --last-stage-layers Z: A and Z are the layers of the first and last
 * PHYSICAL stage (Meta's "one layer fewer on the first and last stage"), the other stages split
 * the rest (the first ones one more when it does not divide), and each stage's layers are spread
 * over its v chunks as evenly as possible: the extra layers go to the later chunks on the first
 * stage (chunk 0 holds the embedding) and to the earlier chunks elsewhere (the last stage's last
 * chunk holds the output layer and the loss). etk_gen_check guarantees one layer per chunk. */
static void gen_layer_split(const etk_gen_config *cfg, uint32_t p, uint32_t v, uint32_t *nl)
{
    uint32_t l = (uint32_t)cfg->model.layers, V = p * v;
    uint32_t a = cfg->first_stage_layers, z = cfg->last_stage_layers;
    if (!a && !z) {
        for (uint32_t k = 0; k < V; k++)
            nl[k] = l / V + (k < l % V ? 1 : 0);
        return;
    }
    uint32_t s0 = a ? 1 : 0, s1 = z ? p - 1 : p, inner = s1 - s0, rest = l - a - z;
    uint32_t q = inner ? rest / inner : 0, r = inner ? rest % inner : 0;
    for (uint32_t s = 0; s < p; s++) {
        uint32_t n = s < s0 ? a : s >= s1 ? z : q + (s - s0 < r ? 1 : 0);
        uint32_t cq = n / v, cr = n % v;
        for (uint32_t c = 0; c < v; c++)
            nl[c * p + s] = cq + (s < s0 ? (c >= v - cr ? 1 : 0) : (c < cr ? 1 : 0));
    }
}

uint32_t gen_stage_layers(const gen *G, uint32_t s)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < G->v; c++)
        n += G->nl[c * G->p + s];
    return n;
}

const gprog *gen_si_prog(const emitter *E, int si)
{
    int sec = E->si_sec[si];
    const gen *G = E->G;
    bool w = G->win && (sec == G_SEC_LAYER || sec == G_SEC_DENSE) &&
             etk_model_layer_sliding(&G->cfg->model, E->si_layer[si]);
    if (E->si_kept && E->si_kept[si])
        return w ? &G->wkept[sec] : &G->kept[sec];
    return w ? &G->wprog[sec] : &G->prog[sec];
}

uint32_t gen_chunk_recomputed(const gen *G, uint32_t q)
{
    const etk_gen_config *c = G->cfg;
    uint32_t n = G->nl[q], k = n;
    if (c->recompute != ETK_RECOMPUTE_FULL)
        return 0;
    if (c->recompute_layers)
        k = c->recompute_layers;
    else if (c->recompute_stage_layers)
        k = c->recompute_stage_layers / G->v + (q / G->p < c->recompute_stage_layers % G->v ? 1 : 0);
    return k < n ? k : n;
}

uint32_t gen_stage_recomputed(const gen *G, uint32_t s, uint32_t *dense)
{
    uint32_t n = 0, d = 0;
    *dense = 0;
    if (G->cfg->recompute != ETK_RECOMPUTE_FULL)
        return 0;
    for (uint32_t c = 0; c < G->v; c++) {
        uint32_t q = c * G->p + s, a = G->first[q], k = gen_chunk_recomputed(G, q);
        n += k;
        if (a < G->dense)
            d += (a + k < G->dense ? a + k : G->dense) - a;
    }
    *dense = d;
    return n;
}

/* layers of stage s from the dense_layer section (global index below G->dense) */
uint32_t gen_stage_dense(const gen *G, uint32_t s)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < G->v; c++) {
        uint32_t q = c * G->p + s, a = G->first[q], b = a + G->nl[q];
        if (a < G->dense)
            n += (b < G->dense ? b : G->dense) - a;
    }
    return n;
}

#define EXPERT_DIM ('e' - 'a') /* block files name the expert dimension 'e' */

bool gen_is_expert(const gen *G, int t)
{
    const gtensor *T = &G->g->t[t];
    for (int k = 0; k < T->nd; k++)
        if (T->dims[k] == EXPERT_DIM)
            return G->cfg->model.experts > 0;
    return false;
}

uint64_t gen_weight_elems_rank(const gen *G, int t)
{
    uint64_t n = (uint64_t)etk_graph_elems(G->g, t);
    if (G->ep > 1 && gen_is_expert(G, t))
        n /= G->ep; /* this rank's experts */
    return (G->g->t[t].split >= 0 && G->cfg->tp > 1) ? n / G->cfg->tp : n;
}


/* Weight elements of this rank that section sec's FP8 GEMMs read (lower_fwd.c low_fp8_gemm: a
 * GEMM with a weight outside the attention region; the head is BF16, so the layers only). */
static uint64_t fp8_weight_elems(const gen *G, int sec)
{
    const gsection *S = etk_graph_section(G->g, sec);
    uint64_t n = 0;
    for (int j = 0; j < S->nops; j++) {
        const gop *op = &S->ops[j];
        if (op->kind != G_MATMUL || op->region)
            continue;
        for (int i = 0; i < op->nin; i++)
            if (G->g->t[op->in[i]].weight)
                n += gen_weight_elems_rank(G, op->in[i]);
    }
    return n;
}

void gen_stage_memory(gen *G, uint32_t s, etk_gen_stage *st)
{
    const etk_gen_config *c = G->cfg;
    const etk_graph *g = G->g;
    uint64_t params = 0, xparams = 0; /* all, and expert weights among them */
    uint32_t nd = gen_stage_dense(G, s), nmoe = gen_stage_layers(G, s) - nd;
    for (int t = 0; t < g->nt; t++) {
        if (!g->t[t].weight)
            continue;
        int sec = g->t[t].section;
        if (sec == G_SEC_LAYER && gen_is_expert(G, t))
            xparams += gen_weight_elems_rank(G, t) * nmoe;
        if (sec == G_SEC_LAYER)
            params += gen_weight_elems_rank(G, t) * nmoe;
        else if (sec == G_SEC_DENSE)
            params += gen_weight_elems_rank(G, t) * nd;
        else if (sec == G_SEC_EMBED && s == 0)
            params += gen_weight_elems_rank(G, t);
        else if (sec == G_SEC_HEAD && s == G->p - 1)
            params += gen_weight_elems_rank(G, t);
    }
    /* a tied output layer on a stage without the embedding holds its own copy */
    if (s == G->p - 1 && s != 0) {
        const gsection *H = &g->sec[G_SEC_HEAD];
        for (int j = 0; j < H->nops; j++)
            for (int i = 0; i < H->ops[j].nin; i++) {
                int t = H->ops[j].in[i];
                if (g->t[t].weight && g->t[t].section == G_SEC_EMBED)
                    params += gen_weight_elems_rank(G, t);
            }
    }
    st->params = params;
    uint64_t d = G->dpw;
    /* ZeRO-2 shards the gradients, ZeRO-3 the parameters too (over DP, equal padded shards) */
    /* expert weights are sharded over their EDP group (dp x cp / ep ranks), the rest over DP x CP */
    uint64_t xd = G->edp, dense = params - xparams;
    uint64_t held = (dense + d - 1) / d + (xparams + xd - 1) / xd;
    /* --fp8-weight-cache: Transformer Engine's linear layers with BF16 primary weights cast each
     * weight to FP8 on the step's first micro-batch and keep the FP8 copy and its transpose (the
     * dgrad GEMM's operand: Hopper's FP8 GEMMs take the TN layout only) for the rest of the step:
     * 2 bytes per weight element of an FP8 GEMM on top of the BF16 weight. Without it the 2 bytes
     * per element counted are also those of FP8 primary weights (Megatron's --fp8-param-gather:
     * 1-byte weight + 1-byte transpose, no BF16 copy). Not with ZeRO-3 (weights gathered per layer
     * and freed; not modelled). docs/models.md "Precision fp8". */
    uint64_t fp8w = 0;
    if (c->fp8_weight_cache && !strcmp(c->precision, "fp8") && c->zero != 3)
        fp8w = fp8_weight_elems(G, G_SEC_LAYER) * nmoe + (nd ? fp8_weight_elems(G, G_SEC_DENSE) * nd : 0);
    st->fp8_cache_bytes = 2 * fp8w;
    st->weight_bytes = (c->zero == 3 ? held * 2 : params * 2) + st->fp8_cache_bytes;
    st->grad_bytes = c->zero >= 2 ? held * c->grad_bytes : params * c->grad_bytes;
    /* fp32 master weights + Adam m and v (12 bytes), held all step; the fp32 copy of 16-bit
     * gradients (4 bytes) exists only during the optimizer step: Megatron's optimizer makes it
     * from the gradient buffer in step() and zero_grad() sets it to None before the next
     * forward, so it never coexists with saved activations */
    uint64_t sb = c->grad_bytes == 2 ? 4 : 0;
    st->optimizer_bytes = c->zero ? ((dense * 12 + d - 1) / d + (xparams * 12 + xd - 1) / xd) : params * 12;
    st->optimizer_step_bytes = c->zero ? ((dense * sb + d - 1) / d + (xparams * sb + xd - 1) / xd) : params * sb;
    uint64_t act_layers = G->prog[G_SEC_LAYER].saved_bytes * nmoe + (nd ? G->prog[G_SEC_DENSE].saved_bytes * nd : 0);
    if (G->partial) { /* the recomputed layers as prog[], the others as kept[] */
        uint32_t rd, r = gen_stage_recomputed(G, s, &rd), rm = r - rd;
        act_layers = G->prog[G_SEC_LAYER].saved_bytes * rm + G->kept[G_SEC_LAYER].saved_bytes * (nmoe - rm) +
                     (nd ? G->prog[G_SEC_DENSE].saved_bytes * rd + G->kept[G_SEC_DENSE].saved_bytes * (nd - rd) : 0);
    }
    uint64_t act = act_layers, head = s == G->p - 1 ? G->prog[G_SEC_HEAD].saved_bytes : 0;
    if (s == 0)
        act += G->prog[G_SEC_EMBED].saved_bytes;
    st->act_per_mb_bytes = act + head;
    /* units (micro-batch chunks) whose activations are held at the peak: the warm-up plus the
     * one in its forward; each holds 1/v of the stage's layers */
    uint32_t total = G->m * G->v, warm;
    if (c->schedule == ETK_SCHED_GPIPE)
        warm = total - 1;
    else if (c->schedule == ETK_SCHED_ZBH1)
        warm = G->p - 1; /* stage s: p - s - 1 warm-up, s micro-batches awaiting their W */
    else if (G->v == 1)
        warm = G->p - s - 1;
    else
        warm = (G->p - s - 1) * 2 + (G->v - 1) * G->p;
    /* --ep-comm-overlap: one more warm-up forward (emit.c), one more unit held */
    bool epo = c->ep_comm_overlap && c->schedule == ETK_SCHED_1F1B;
    if (epo)
        warm++;
    st->in_flight = warm + 1 < total ? warm + 1 : total;
    /* the head is in the last chunk of the last stage: interleaved 1F1B runs that chunk's
     * forward and backward back to back in the steady state (its warm-up, (v - 1) p units, fills
     * the earlier chunks), so one micro-batch of it is held, not in_flight / v; two with
     * --ep-comm-overlap (the next micro-batch's forward before this one's backward) */
    bool head1 = c->schedule == ETK_SCHED_1F1B && G->v > 1;
    uint64_t nhead = epo && st->in_flight > 1 ? 2 : 1;
    st->act_bytes = act * st->in_flight / G->v + (head1 ? head * nhead : head * st->in_flight / G->v);
    st->act_layers_bytes = act_layers * st->in_flight / G->v;
    uint64_t msg = G->prog[G_SEC_LAYER].out_bytes;
    st->comm_buffer_bytes = (s > 0 ? msg : 0) + (s + 1 < G->p ? msg : 0);
    if (G->z3) /* gathered parameters: the layer computing and the one prefetched */
        st->comm_buffer_bytes += 2 * 2 * (nd && G->sec_elems[G_SEC_DENSE] > G->sec_elems[G_SEC_LAYER]
                                               ? G->sec_elems[G_SEC_DENSE] : G->sec_elems[G_SEC_LAYER]);
    /* the peak: the activations at the end of the warm-up, or the optimizer step's fp32
     * gradient copy (activations all freed by then) */
    st->total_bytes = st->weight_bytes + st->grad_bytes + st->optimizer_bytes + st->comm_buffer_bytes +
                      (st->act_bytes > st->optimizer_step_bytes ? st->act_bytes : st->optimizer_step_bytes);
}
