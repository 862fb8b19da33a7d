/* lower.c — lowers one section of the symbolic block graph (model/graph.h) under tensor
 * parallelism into node templates for one micro-batch: the core of trace synthesis.
 *
 * Every tensor carries a layout over the TP axis: replicated, split along one dimension, or a
 * partial sum (after contracting a split dimension). Weights are split as their block file says
 * (Megatron's column/row parallel linears, vocabulary-parallel embedding). Each op states what
 * layout it needs from its inputs; where the producer's layout differs, the collective follows
 * from a fixed table (split->replicated all-gather, partial->replicated all-reduce,
 * partial->split reduce-scatter, split->other split all-to-all, replicated->split a free slice).
 * Partial sums resolve to the residual-stream layout: replicated, or split along the sequence
 * with sequence parallelism. The backward pass walks the ops in reverse: two gradient GEMMs per
 * weight GEMM, one node per elementwise op, gradients of a tensor summed over its consumers and
 * converted back to the tensor's layout with the same table (so an all-gather in forward gives a
 * reduce-scatter in backward, an all-reduce gives none). With sequence parallelism, tensors that
 * were all-gathered for a GEMM are kept sharded and gathered again for the weight gradient, as
 * Megatron-LM does. Recompute re-emits forward ops (selective: the attention core; full: the
 * whole layer including its collectives; --recompute-modules: the ops of the named modules,
 * whose outputs are then not kept) at the start of the backward pass. The files of
 * lowering and their order: lower_priv.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/lower.h"
#include "etkit/gen.h"
#include "gen/lower_priv.h"

/* Bytes of tensor t kept for op j's backward (once per tensor and form), in the layout op j
 * consumed it (a tensor all-gathered for j is kept sharded). An FP8 GEMM keeps its activation
 * input as the 1-byte FP8 copy it cast (Transformer Engine's linear layers save the cast input
 * for the weight gradient, not the 16-bit tensor); a tensor also saved by a 16-bit consumer is
 * kept in both forms. seen[t]: bit 0 the 16-bit form counted, bit 1 the FP8 form. */
static uint64_t save_one(ctx *c, uint8_t *seen, int j, int t, int per)
{
    const gop *op = &c->S->ops[j];
    int pj = c->prod_op[t];
    if (pj >= 0 && (c->S->ops[pj].rmod & c->rmods))
        return 0; /* made by a recomputed module: discarded, made again before the backward */
    bool fp8 = !per && !c->g->t[t].weight && low_fp8_gemm(c, op);
    uint8_t bit = fp8 ? 2 : 1;
    if (seen[t] & bit)
        return 0;
    seen[t] |= bit;
    lay L = c->ts[0][t].L;
    for (int i = 0; i < op->nin; i++)
        if (op->in[i] == t && !c->via_ag[j][i])
            L = c->used[j][i];
    return (uint64_t)low_elems_rank(c, t, L) * (uint64_t)(fp8 ? 1 : per ? per : c->o->act_bytes);
}

static uint64_t saved_bytes(ctx *c)
{
    const etk_graph *g = c->g;
    if (c->full)
        return (uint64_t)low_elems_rank(c, c->S->input, c->stream) * (uint64_t)c->o->act_bytes;
    uint8_t *seen = calloc((size_t)g->nt, 1);
    uint64_t total = 0;
    for (int j = 0; j < c->S->nops; j++) {
        const gop *op = &c->S->ops[j];
        if (c->o->flash && op->region) {
            /* fused: the region's inputs (Q, K, V), its output O and the log-sum-exp; no
             * probabilities, no dropout mask (regenerated from the RNG state) */
            int lo, hi;
            low_region_span(c, j, &lo, &hi);
            for (int i = 0; i < op->nin; i++)
                if (low_region_input(c, j, i, lo, hi))
                    total += save_one(c, seen, j, op->in[i], 0);
            if (j == hi - 1) {
                total += low_region_lse_bytes(c, lo, hi);
                if (!(seen[op->out] & 1)) {
                    seen[op->out] |= 1;
                    total += low_region_out_bytes(c, hi);
                }
            }
            continue;
        }
        if (op->kind == G_DROPOUT && !(c->selective && op->region))
            total += (uint64_t)low_elems_rank(c, op->out, c->outL[j]); /* 1-byte mask */
        for (int k = 0; k < op->nsave; k++) {
            int t = op->save[k];
            int pj = c->prod_op[t];
            if (c->selective && op->region && pj >= 0 && c->S->ops[pj].region)
                continue; /* made and used inside the recomputed region */
            total += save_one(c, seen, j, t, op->save_bytes[k]);
        }
    }
    free(seen);
    return total;
}

/* MoE: mark the nodes of the experts' work (ops reading and writing the [e, c, ...] expert
 * layout: the expert GEMMs and their activation, forward, recompute and backward), give the
 * expert GEMMs the shape of one expert's GEMM (gemm_m/n/k: tokens per expert x the weight's two
 * dims per rank; gemm_groups: the rank's experts), and size them for the busiest rank
 * (moe_imbalance: FLOPs and bytes x F, the extra F - 1 not model FLOPs). */
static bool has_ec(const gtensor *T) { return !T->weight && low_has_dim(T, EXPERT_DIM) && low_has_dim(T, CAPACITY_DIM); }

static void moe_mark(ctx *c, const gsection *S, gprog *p)
{
    const etk_graph *g = c->g;
    if (g->experts <= 0)
        return;
    int64_t el = g->experts / (c->o->ep > 1 ? c->o->ep : 1);
    for (int k = 0; k < p->n; k++) {
        ginst *I = &p->v[k];
        if (I->type != ETK_NODE_COMP)
            continue;
        const char *nm = I->name;
        if (!strncmp(nm, "recompute.", 10))
            nm += 10;
        size_t len = strcspn(nm, ".");
        const gop *op = NULL;
        for (int j = 0; j < S->nops && !op; j++)
            if (strlen(S->ops[j].name) == len && !strncmp(S->ops[j].name, nm, len))
                op = &S->ops[j];
        if (!op || !has_ec(&g->t[op->out]))
            continue;
        bool act_in = false;
        for (int i = 0; i < op->nin; i++)
            act_in |= has_ec(&g->t[op->in[i]]);
        if (!act_in)
            continue;
        I->expert = true;
        int wi = -1;
        for (int i = 0; op->kind == G_MATMUL && i < op->nin; i++)
            if (g->t[op->in[i]].weight && low_has_dim(&g->t[op->in[i]], EXPERT_DIM))
                wi = i;
        if (wi >= 0 && el > 0) {
            const gtensor *W = &g->t[op->in[wi]], *A = &g->t[op->in[1 - wi]];
            int64_t kd = 0, nd = 0;
            for (int d = 0; d < W->nd; d++) {
                if (W->dims[d] == EXPERT_DIM)
                    continue;
                int64_t sz = g->dim[W->dims[d]];
                if (W->split == W->dims[d] && low_tp_of(c) > 1)
                    sz /= low_tp_of(c);
                if (low_has_dim(A, W->dims[d]))
                    kd = sz;
                else
                    nd = sz;
            }
            if (kd > 0 && nd > 0) {
                int64_t tok = llround(I->flops / (2.0 * (double)el * (double)kd * (double)nd));
                if (c->o->moe_imbalance > 1)
                    tok = llround((double)tok * c->o->moe_imbalance);
                const char *sfx = nm + len;
                I->gemm_groups = el;
                if (!strcmp(sfx, ".wgrad")) {
                    I->wgrad = 1;
                    I->gemm_m = kd;
                    I->gemm_n = nd;
                    I->gemm_k = tok;
                } else if (!strcmp(sfx, ".dgrad")) {
                    I->gemm_m = tok;
                    I->gemm_n = kd;
                    I->gemm_k = nd;
                } else {
                    I->gemm_m = tok;
                    I->gemm_n = nd;
                    I->gemm_k = kd;
                }
            }
        }
        if (c->o->moe_imbalance > 1) {
            I->recomp_flops += I->flops * (c->o->moe_imbalance - 1);
            I->flops *= c->o->moe_imbalance;
            I->bytes = (uint64_t)llround((double)I->bytes * c->o->moe_imbalance);
        }
    }
}

int etk_lower_section(const etk_graph *g, int sec, const glower_opts *o, etk_arena *a, gprog *p,
                      etk_error *err)
{
    memset(p, 0, sizeof *p);
    p->sec = sec;
    const gsection *S = etk_graph_section(g, sec); /* dense_layer and the decode forms: layers too */
    int nops = S->nops, nt = g->nt;
    ctx c = {.g = g, .S = S, .o = o, .a = a, .p = p, .err = err};
    c.full = o->recompute == ETK_RECOMPUTE_FULL && sec != G_SEC_EMBED && sec != G_SEC_HEAD;
    /* selective recompute recomputes the attention region: fused, it keeps nothing to recompute */
    c.selective = o->recompute == ETK_RECOMPUTE_SELECTIVE && !o->flash;
    c.rmods = c.full ? 0 : o->rmods;
    for (int j = 0; o->flash && j < S->nops; j++) {
        const gop *op = &S->ops[j];
        for (int i = 0; i < op->nin; i++) {
            int pj = -1;
            for (int k = 0; k < j; k++)
                if (S->ops[k].out == op->in[i])
                    pj = k;
            if (op->region && g->t[op->in[i]].weight)
                return etk_err(err, ETK_EFORMAT, "%s: op %s: --attention flash: an attention-region op reads "
                               "weight %s (cannot be fused)", g->file, op->name, g->t[op->in[i]].name);
            if (!op->region && pj >= 0 && S->ops[pj].region && pj + 1 < S->nops && S->ops[pj + 1].region)
                return etk_err(err, ETK_EFORMAT, "%s: op %s: --attention flash: reads %s from inside the attention "
                               "region (only its last op's output leaves a fused kernel)", g->file, op->name,
                               g->t[op->in[i]].name);
        }
    }
    c.stream = REP;
    if (o->sp && o->tp > 1)
        c.stream.split = (int8_t)g->stream_seq;
    c.ts[0] = etk_arena_alloc(a, sizeof(tstate) * (size_t)nt);
    c.ts[1] = etk_arena_alloc(a, sizeof(tstate) * (size_t)nt);
    c.prod_op = etk_arena_alloc(a, sizeof(int) * (size_t)nt);
    c.used = etk_arena_alloc(a, sizeof(*c.used) * (size_t)nops);
    c.uinst[0] = etk_arena_alloc(a, sizeof(*c.uinst[0]) * (size_t)nops);
    c.uinst[1] = etk_arena_alloc(a, sizeof(*c.uinst[1]) * (size_t)nops);
    c.via_ag = etk_arena_alloc(a, sizeof(*c.via_ag) * (size_t)nops);
    c.outL = etk_arena_alloc(a, sizeof(lay) * (size_t)nops);
    c.grad = etk_arena_alloc(a, sizeof(contrib) * (size_t)nt);
    c.regather = etk_arena_alloc(a, sizeof(int32_t) * (size_t)nt);
    c.cpg[0] = etk_arena_alloc(a, sizeof(int32_t) * (size_t)nt);
    c.cpg[1] = etk_arena_alloc(a, sizeof(int32_t) * (size_t)nt);
    c.cpmark = etk_arena_alloc(a, sizeof(*c.cpmark) * (size_t)nops);
    for (int k = 0; k < 3; k++) {
        c.fp8done[k] = etk_arena_alloc(a, sizeof(bool) * (size_t)nt);
        c.fp8L[k] = etk_arena_alloc(a, sizeof(lay) * (size_t)nt);
    }
    for (int k = 0; k < 3; k++)
        c.ring[k] = etk_arena_alloc(a, sizeof(int32_t *) * (size_t)nt);
    c.ringk = etk_arena_alloc(a, (size_t)nt);
    c.fflops = etk_arena_alloc(a, sizeof(double) * (size_t)(nops ? nops : 1));
    c.tpag[0] = etk_arena_alloc(a, sizeof(int32_t *) * (size_t)nt);
    c.tpag[1] = etk_arena_alloc(a, sizeof(int32_t *) * (size_t)nt);
    c.tpw = etk_arena_alloc(a, sizeof(tpwgrad) * (size_t)(nops ? nops : 1));
    if (!c.fflops || !c.ts[0] || !c.ts[1] || !c.prod_op || !c.used || !c.uinst[0] || !c.uinst[1] || !c.via_ag || !c.outL ||
        !c.grad || !c.regather || !c.cpg[0] || !c.cpg[1] || !c.cpmark || !c.ring[0] || !c.ring[1] || !c.ring[2] ||
        !c.ringk || !c.fp8done[0] || !c.fp8done[1] || !c.fp8done[2] || !c.fp8L[0] || !c.fp8L[1] || !c.fp8L[2] || !c.tpag[0] || !c.tpag[1] || !c.tpw)
        return etk_err(err, ETK_ENOMEM, "out of memory lowering %s", S->name);
    for (int t = 0; t < nt; t++) {
        c.ts[0][t].inst = NONE;
        c.ts[0][t].L = g->t[t].weight ? low_weight_lay(&c, t) : REP;
        c.prod_op[t] = -1;
        c.regather[t] = NONE;
        c.cpg[0][t] = c.cpg[1][t] = NONE;
        c.ring[0][t] = c.ring[1][t] = c.ring[2][t] = NULL;
        c.ringk[t] = -1;
        c.tpag[0][t] = c.tpag[1][t] = NULL;
        c.fp8done[0][t] = c.fp8done[1][t] = c.fp8done[2][t] = false;
    }
    memset(c.cpmark, 0, sizeof(*c.cpmark) * (size_t)nops);
    /* a sliding-window layer under FlashAttention: the attention region's FLOPs are twice the
     * window's query-key pairs over the key sequence t (the causal s^2 convention: the kernel
     * is timed at half, at the tiles it computes: etkit/compute.h); with CP each rank's query
     * slice counts the mean (ranks differ by at most the first w (w - 1) / 2 pairs) */
    c.wscale = 1;
    if (o->window > 0 && o->flash && sec != G_SEC_DECODE && sec != G_SEC_DECODE_DENSE) {
        int64_t t = g->dim['t' - 'a'] > 0 ? g->dim['t' - 'a'] : g->dim[g->stream_seq] * (o->cp > 1 ? o->cp : 1);
        if (t > o->window)
            c.wscale = 2 * etk_window_pairs(t, o->window) / ((double)t * (double)t);
    }
    low_routing(&c);
    for (int j = 0; j < nops; j++)
        c.prod_op[S->ops[j].out] = j;
    c.ts[0][S->input].inst = DEP_IN;
    c.ts[0][S->input].L = sec == G_SEC_EMBED ? REP : c.stream;
    int rc;
    for (int j = 0; j < nops; j++)
        if ((rc = low_lower_op_fwd(&c, 0, j, P_FWD)))
            return c.rc ? c.rc : rc;
    /* section output in the residual-stream layout */
    p->fwd_out = c.ts[0][S->output].inst;
    lay outl = c.ts[0][S->output].L;
    if (sec != G_SEC_HEAD) {
        p->fwd_out = low_convert_fwd(&c, 0, S->output, c.stream, P_FWD);
        outl = c.stream;
    }
    if (c.rc)
        return c.rc;
    p->out_bytes = (uint64_t)low_elems_rank(&c, S->output, outl) * (uint64_t)o->act_bytes;
    p->nfwd = p->n;
    p->saved_bytes = saved_bytes(&c);
    /* recompute pass */
    if (c.full || c.selective || c.rmods) {
        memcpy(c.ts[1], c.ts[0], sizeof(tstate) * (size_t)nt);
        for (int t = 0; t < nt; t++)
            c.ts[1][t].nconv = 0;
        for (int j = 0; j < nops; j++)
            if (low_recomputed(&c, &S->ops[j]))
                if ((rc = low_lower_op_fwd(&c, 1, j, P_RECOMP)))
                    return c.rc ? c.rc : rc;
    } else {
        memcpy(c.uinst[1], c.uinst[0], sizeof(*c.uinst[0]) * (size_t)nops);
    }
    /* backward */
    if (sec == G_SEC_HEAD)
        low_add_contrib(&c, S->output, DEP_GRAD, c.ts[0][S->output].L);
    else
        low_add_contrib(&c, S->output, DEP_GRAD, c.stream);
    for (int j = nops - 1; j >= 0; j--)
        if ((rc = low_lower_op_bwd(&c, j)))
            return c.rc ? c.rc : rc;
    if (c.ntpw && (rc = low_tp_flush_wgrad(&c, -1))) /* any held back whose input has no gradient */
        return c.rc ? c.rc : rc;
    if (sec != G_SEC_EMBED) {
        lay L;
        int32_t tmp[MAX_CONTRIB * 2];
        int n = low_get_grad(&c, S->input, tmp, &L);
        if (c.rc || n < 0)
            return c.rc ? c.rc : ETK_EINVAL;
        memcpy(p->bwd_out, tmp, sizeof(int32_t) * (size_t)(n < 8 ? n : 8));
        n = n < 8 ? n : 8;
        p->nbwd_out = n;
    }
    moe_mark(&c, S, p);
    return 0;
}
