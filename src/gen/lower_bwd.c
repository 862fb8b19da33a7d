/* lower_bwd.c — the backward pass of lowering: gradients of an op's inputs and weights (two
 * gradient GEMMs per weight GEMM, the flash-attention backward, the CP ring backward), summed
 * over a tensor's consumers and converted back to its layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/lower.h"
#include "etkit/gen.h"
#include "gen/lower_priv.h"

void low_add_contrib(ctx *c, int t, int32_t inst, lay L)
{
    contrib *g = &c->grad[t];
    if (g->n < MAX_CONTRIB) {
        g->inst[g->n] = inst;
        g->L[g->n++] = L;
    }
}

static int get_grad(ctx *c, int t, int32_t *out, lay *L);

/* The gradient of tensor t in t's own layout: deps into out[], returns count (0: no gradient).
 * With --tp-comm-overlap the weight gradients held back for t's reduce-scatter follow it. */
int low_get_grad(ctx *c, int t, int32_t *out, lay *L)
{
    int n = get_grad(c, t, out, L);
    if (n >= 0 && c->ntpw && low_tp_flush_wgrad(c, t))
        return -1;
    return n;
}

static int get_grad(ctx *c, int t, int32_t *out, lay *L)
{
    contrib *g = &c->grad[t];
    if (g->n == 0)
        return 0;
    lay T = c->ts[0][t].L;
    if (T.partial)
        T = REP;
    *L = T;
    bool same = true;
    for (int k = 1; k < g->n; k++)
        same &= lay_eq(g->L[k], g->L[0]);
    int n = 0;
    if (same) {
        if (low_coll_for(g->L[0], T) < 0) {
            for (int k = 0; k < g->n; k++)
                out[n++] = g->inst[k];
            return n;
        }
        int32_t i = low_convert(c, t, g->L[0], T, P_BWD, "d", g->n, g->inst, -1);
        out[0] = i;
        return i == ERRV ? -1 : 1;
    }
    for (int k = 0; k < g->n; k++) {
        int32_t i = low_coll_for(g->L[k], T) < 0 ? g->inst[k] : low_convert(c, t, g->L[k], T, P_BWD, "d", 1, &g->inst[k], -1);
        out[n++] = i;
    }
    return n;
}

/* The instruction holding op j's input i for the backward pass. */
static int32_t avail(ctx *c, int j, int i)
{
    const gop *op = &c->S->ops[j];
    int t = op->in[i];
    if (c->g->t[t].weight)
        return NONE;
    int pass = low_recomputed(c, op) ? 1 : 0;
    /* full recompute too: Megatron's recomputed forward runs the same linear layers, which save
     * their sharded input again and all-gather it again in backward (8 all-gathers per layer
     * per micro-batch with SP, not 6) */
    if ((pass == 0 || c->full) && c->via_ag[j][i] && c->o->sp) {
        if (c->regather[t] == NONE) {
            /* kept sharded (sequence parallelism), gathered again for the weight gradient */
            int32_t deps[2] = {c->ts[pass][t].inst, DEP_GRAD};
            char name[96];
            snprintf(name, sizeof name, "%s.regather", low_shortname(c->g->t[t].name));
            int k = low_emit(c, name, ETK_NODE_COLL, P_BWD, 2, deps);
            if (k < 0)
                return k;
            c->p->v[k].coll = ETK_COLL_ALL_GATHER;
            c->p->v[k].comm_bytes = low_t_elems(c, t) * c->o->act_bytes / low_tp_of(c);
            c->regather[t] = k;
        }
        return c->regather[t];
    }
    return c->uinst[pass][j][i];
}

/* --cp-comm ring, backward of activation x activation matmul j for its input i (the operand
 * `other` or i itself is a whole K/V read block by block): one gradient GEMM per block, of 1/cp
 * of the FLOPs. When `other` is circulated (dQ = dS K, dP = dO V^T) the blocks go around the ring
 * again and the partial products accumulate in order. When i is (dK = dS^T Q, dV = P^T dO) the
 * gradient of block r is a partial sum over the CP ranks: the accumulator of each block follows
 * it around the ring (received from the previous rank, this rank's share added, sent to the
 * next) and arrives back at the block's owner after cp - 1 steps, where the owner's own share
 * is added. */
static int ring_dgrad(ctx *c, int j, int i, const char *name, const int32_t *go, int ngo, lay goL, int32_t av,
                      double mm, uint64_t fbytes, uint8_t fp8)
{
    const gop *op = &c->S->ops[j];
    const etk_graph *g = c->g;
    int other = 1 - i, ti = op->in[i];
    int64_t C = c->o->cp;
    int32_t *ob = NULL;
    if (c->cpmark[j][other] &&
        !(ob = low_cp_ring(c, 2, op->in[other], av, c->used[j][other], P_BWD, 2, ngo, go)))
        return c->rc ? c->rc : ETK_ENOMEM;
    bool acc = c->cpmark[j][i];
    lay gl = low_einsum_lay_c(c, goL, c->used[j][other], &g->t[ti]);
    int64_t gbytes = low_elems_rank(c, ti, gl) * c->o->act_bytes;
    int32_t prev = NONE, own = NONE, accr = NONE;
    char cn[160];
    for (int64_t r = 0; r < C; r++) {
        int32_t deps[MAX_CONTRIB * 2 + 4];
        int nd = 0;
        for (int k = 0; k < ngo; k++)
            deps[nd++] = go[k];
        deps[nd++] = av;
        deps[nd++] = ob ? ob[r] : NONE;
        deps[nd++] = acc ? (r >= 2 ? accr : NONE) : prev;
        snprintf(cn, sizeof cn, "%s.cp%lld", name, (long long)r);
        int32_t k = low_emit(c, cn, ETK_NODE_COMP, P_BWD, nd, deps);
        if (k < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        c->p->v[k].flops = mm / (double)C;
        c->p->v[k].bytes = fbytes / (uint64_t)C;
        c->p->v[k].fp8 = fp8;
        if (!acc) {
            prev = k;
            continue;
        }
        if (r == 0) {
            own = k;
            continue;
        }
        /* the accumulator of block r (owner: r ranks back) to the next rank; the one of the next
         * block (or, after the last step, this rank's own) from the previous rank */
        int32_t tag = low_ring_tag(c, ti, r, 3);
        snprintf(cn, sizeof cn, "d%s.cp_ring_send%lld", low_shortname(g->t[ti].name), (long long)r);
        if (low_ring_p2p(c, cn, true, gbytes, tag, P_BWD, 1, &k) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        snprintf(cn, sizeof cn, "d%s.cp_ring_recv%lld", low_shortname(g->t[ti].name), (long long)r + 1);
        if ((accr = accr == NONE ? low_ring_p2p(c, cn, false, gbytes, tag, P_BWD, ngo, go)
                                 : low_ring_p2p(c, cn, false, gbytes, tag, P_BWD, 1, &accr)) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
    }
    if (acc) {
        low_add_contrib(c, ti, own, gl);
        low_add_contrib(c, ti, accr, gl);
    } else {
        low_add_contrib(c, ti, prev, gl);
    }
    return 0;
}

/* CP all-gather backward: the gradient of the whole K (V), made by instruction k, summed back
 * to its owners over CP; returns the reduce-scatter. */
static int32_t cp_reduce_scatter(ctx *c, int t, int32_t k, lay gl)
{
    char name[96];
    snprintf(name, sizeof name, "d%s.cp_reduce_scatter", low_shortname(c->g->t[t].name));
    int r = low_emit(c, name, ETK_NODE_COLL, P_BWD, 1, &k);
    if (r < 0)
        return r;
    c->p->v[r].coll = ETK_COLL_REDUCE_SCATTER;
    c->p->v[r].grp = GRP_CP;
    c->p->v[r].comm_bytes = low_elems_rank(c, t, gl) * c->o->act_bytes * c->o->cp;
    return r;
}

/* The fused backward kernel of the attention region [lo, hi) (FlashAttention: recomputes the
 * scores from Q, K and the log-sum-exp): the backward FLOPs of the region's ops plus the
 * recomputed QK^T (hardware, not model, FLOPs: recomp_flops); reads Q, K, V, O, dO and the
 * log-sum-exp, writes dQ, dK, dV. With the CP ring, one kernel per K/V block: the blocks go
 * around the ring again, dQ accumulates in place from kernel to kernel, and the dK, dV of block r
 * are partial sums over the CP ranks whose accumulators follow the block around the ring back to
 * its owner (as ring_dgrad does for the unfused GEMMs). */
static int flash_bwd(ctx *c, int lo, int hi)
{
    const etk_graph *g = c->g;
    enum { NIN = G_MAX_IN * 2 };
    int32_t go[MAX_CONTRIB * 2];
    lay goL;
    int ngo = low_get_grad(c, c->S->ops[hi - 1].out, go, &goL);
    if (ngo < 0)
        return c->err->code;
    if (ngo == 0)
        return 0;
    int nin = 0, ink[NIN], ini[NIN];
    int32_t av[NIN], *blk[NIN], own[NIN], accr[NIN];
    bool ring = false;
    double flops = 0, recomp = 0;
    for (int k = lo; k < hi; k++) {
        const gop *op = &c->S->ops[k];
        for (int i = 0; i < op->nin && nin < NIN; i++)
            if (low_region_input(c, k, i, lo, hi)) {
                int32_t a = avail(c, k, i);
                if (a < 0 && a != NONE && a != DEP_IN && a != DEP_GRAD)
                    return a;
                ink[nin] = k;
                ini[nin] = i;
                av[nin] = a;
                own[nin] = accr[nin] = NONE;
                blk[nin] = NULL;
                if (c->o->cp_ring && c->cpmark[k][i]) {
                    if (!(blk[nin] = low_cp_ring(c, 2, op->in[i], a, c->used[k][i], P_BWD, 2, ngo, go)))
                        return c->rc ? c->rc : ETK_ENOMEM;
                    ring = true;
                }
                nin++;
            }
        if (op->kind == G_MATMUL) {
            double mm = low_matmul_flops(c, op, c->used[k][0], c->used[k][1]) * c->wscale;
            for (int i = 0; i < op->nin; i++)
                flops += g->t[op->in[i]].weight ? 0 : mm; /* one gradient GEMM per operand */
            if (k < hi - 1)
                recomp += c->fflops[k]; /* the scores again */
        } else {
            flops += op->bwd * c->fflops[k];
        }
    }
    int64_t C = ring ? c->o->cp : 1;
    uint64_t bytes = 2 * low_region_in_bytes(c, lo, hi, !ring) + 2 * low_region_out_bytes(c, hi) + low_region_lse_bytes(c, lo, hi);
    int32_t prev = NONE, merged = NONE;
    int64_t as, ad;
    low_attn_shape(c, lo, ring, &as, &ad);
    /* the CP ring: each block's dQ is added into the running dQ (read both, write one, fp32 as
     * TE accumulates it) after every kernel but the first */
    uint64_t dq = 0;
    for (int n = 0; n < nin; n++)
        if (!blk[n] && ink[n] == lo && ini[n] == 0)
            dq = (uint64_t)low_elems_rank(c, c->S->ops[lo].in[0], c->used[lo][0]) * 4 * 3;
    for (int64_t r = 0; r < C; r++) {
        int32_t deps[MAX_CONTRIB * 2 + NIN * 3 + 1];
        int nd = 0;
        for (int k = 0; k < ngo; k++)
            deps[nd++] = go[k];
        for (int n = 0; n < nin; n++) {
            deps[nd++] = av[n];
            if (blk[n]) {
                deps[nd++] = blk[n][r];
                deps[nd++] = r >= 2 ? accr[n] : NONE;
            }
        }
        deps[nd++] = prev;
        char name[96];
        snprintf(name, sizeof name, "flash_attn.bwd");
        if (ring)
            snprintf(name + strlen(name), sizeof name - strlen(name), ".cp%lld", (long long)r);
        int32_t b = low_emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
        if (b < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        ginst *I = &c->p->v[b];
        I->flops = (flops + recomp) / (double)C;
        I->recomp_flops = recomp / (double)C;
        I->bytes = bytes;
        I->attn = 1;
        I->causal = low_is_causal(c);
        I->attn_w = I->causal && c->wscale < 1 ? c->o->window : 0;
        I->attn_s = as;
        I->attn_d = ad;
        prev = b;
        if (r > 0 && dq) {
            int32_t md[2] = {b, merged};
            snprintf(name + strlen(name), sizeof name - strlen(name), ".dq_add");
            if ((merged = low_emit(c, name, ETK_NODE_COMP, P_BWD, 2, md)) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
            c->p->v[merged].bytes = dq;
        }
        for (int n = 0; n < nin; n++) {
            if (!blk[n])
                continue;
            if (r == 0) {
                own[n] = b;
                continue;
            }
            /* the dK (dV) accumulator of block r to the next rank; the next block's (after the
             * last step, this rank's own) from the previous rank */
            int t = c->S->ops[ink[n]].in[ini[n]];
            int64_t gbytes = low_elems_rank(c, t, c->used[ink[n]][ini[n]]) * c->o->act_bytes;
            int32_t tag = low_ring_tag(c, t, r, 3);
            snprintf(name, sizeof name, "d%s.cp_ring_send%lld", low_shortname(g->t[t].name), (long long)r);
            if (low_ring_p2p(c, name, true, gbytes, tag, P_BWD, 1, &b) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
            snprintf(name, sizeof name, "d%s.cp_ring_recv%lld", low_shortname(g->t[t].name), (long long)r + 1);
            if ((accr[n] = accr[n] == NONE ? low_ring_p2p(c, name, false, gbytes, tag, P_BWD, ngo, go)
                                           : low_ring_p2p(c, name, false, gbytes, tag, P_BWD, 1, &accr[n])) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
        }
    }
    for (int n = 0; n < nin; n++) {
        int k = ink[n], i = ini[n], t = c->S->ops[k].in[i];
        if (blk[n]) {
            low_add_contrib(c, t, own[n], c->used[k][i]);
            low_add_contrib(c, t, accr[n], c->used[k][i]);
            continue;
        }
        int32_t gi = merged != NONE ? merged : prev; /* the ring's dQ: after its last add */
        if (c->cpmark[k][i] && (gi = cp_reduce_scatter(c, t, prev, c->used[k][i])) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        low_add_contrib(c, t, gi, c->used[k][i]);
    }
    return 0;
}

/* The weight gradient GEMM of op w->j (grouped over the experts as its forward). */
static int emit_wgrad(ctx *c, const tpwgrad *w)
{
    const gop *op = &c->S->ops[w->j];
    int wi = c->g->t[op->in[0]].weight ? 0 : 1;
    int32_t deps[MAX_CONTRIB * 2 + 2];
    int nd = 0;
    for (int k = 0; k < w->ngo; k++)
        deps[nd++] = w->go[k];
    deps[nd++] = w->av;
    deps[nd++] = w->aglast; /* --tp-comm-overlap: the whole gathered output gradient */
    char name[96];
    snprintf(name, sizeof name, "%s.wgrad", op->name);
    int k = low_emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
    if (k < 0)
        return k;
    ginst *I = &c->p->v[k];
    I->flops = low_matmul_flops(c, op, c->used[w->j][0], c->used[w->j][1]) +
               (op->bias >= 0 ? (double)low_elems_rank(c, op->out, c->outL[w->j]) : 0);
    I->bytes = w->bytes;
    I->fp8 = w->fp8;
    I->grouped = w->grouped;
    I->w[I->nw++] = op->in[wi];
    if (op->bias >= 0)
        I->w[I->nw++] = op->bias;
    return 0;
}

/* --tp-comm-overlap: emit the held-back weight gradients of the ops reading tensor t (all of
 * them with t < 0), in the order their backward ran. */
int low_tp_flush_wgrad(ctx *c, int t)
{
    int n = 0;
    for (int k = 0; k < c->ntpw; k++) {
        const gop *op = &c->S->ops[c->tpw[k].j];
        bool mine = t < 0;
        for (int i = 0; i < op->nin && !mine; i++)
            mine = op->in[i] == t;
        if (!mine) {
            c->tpw[n++] = c->tpw[k];
            continue;
        }
        int rc = emit_wgrad(c, &c->tpw[k]);
        if (rc)
            return rc;
    }
    c->ntpw = n;
    return 0;
}

int low_lower_op_bwd(ctx *c, int j)
{
    const gop *op = &c->S->ops[j];
    const etk_graph *g = c->g;
    if (c->o->flash && op->region) {
        int lo, hi;
        low_region_span(c, j, &lo, &hi);
        return j == hi - 1 ? flash_bwd(c, lo, hi) : 0;
    }
    int32_t go[MAX_CONTRIB * 2];
    lay goL;
    int ngo;
    /* --tp-comm-overlap: the output gradient of a row-parallel GEMM (attention projection, fc2)
     * is all-gathered from the sequence-parallel shards in chunks, the dgrad GEMM chunk by chunk
     * beside it (Transformer Engine's all-gather+GEMM, as in the forward) */
    int32_t *bag = NULL, loc[MAX_CONTRIB];
    int nloc = 0, wi0 = -1;
    for (int i = 0; op->kind == G_MATMUL && i < op->nin; i++)
        if (g->t[op->in[i]].weight)
            wi0 = i;
    const contrib *gc = &c->grad[op->out];
    if (c->o->tp_overlap && wi0 >= 0 && op->nin == 2 && c->p->sec != G_SEC_HEAD && gc->n > 0 &&
        !low_has_dim(&g->t[op->in[wi0]], EXPERT_DIM) && c->ts[0][op->out].L.partial &&
        c->used[j][1 - wi0].split >= 0 && !low_is_dispatch(c, op)) {
        bool same = true;
        for (int k = 1; k < gc->n; k++)
            same &= lay_eq(gc->L[k], gc->L[0]);
        if (same && low_coll_for(gc->L[0], REP) == ETK_COLL_ALL_GATHER) {
            nloc = gc->n;
            memcpy(loc, gc->inst, sizeof(int32_t) * (size_t)nloc);
            if (!(bag = low_tp_ag_chunks(c, "d", op->out, P_BWD, nloc, loc)))
                return c->rc ? c->rc : ETK_ENOMEM;
        }
    }
    if (bag) {
        go[0] = bag[low_tp_of(c) - 1];
        ngo = 1;
        goL = REP;
    } else {
        ngo = low_get_grad(c, op->out, go, &goL);
    }
    if (ngo < 0)
        return c->err->code;
    if (ngo == 0)
        return 0;
    if (low_is_dispatch(c, op)) {
        /* gradients of the dispatched tokens back from the expert ranks */
        char dn[96];
        snprintf(dn, sizeof dn, "d%s", low_shortname(g->t[op->out].name));
        int32_t k = low_ep_a2a(c, dn, op->out, goL, P_BWD, ngo, go);
        if (k < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        go[0] = k;
        ngo = 1;
    }
    /* forward node of this op (for flops/bytes): find by name in the forward part */
    const ginst *F = NULL;
    uint64_t fbytes = 0; /* the forward op's bytes (all its CP-ring chunks) */
    char cp0[104];
    snprintf(cp0, sizeof cp0, "%s.cp0", op->name);
    char tp0[104];
    snprintf(tp0, sizeof tp0, "%s.tp", op->name);
    size_t tpl = strlen(tp0);
    bool tpchunks = false; /* --tp-comm-overlap: the forward GEMM ran in TP chunks */
    for (int k = 0; k < c->p->nfwd; k++)
        if (c->p->v[k].type == ETK_NODE_COMP && !strcmp(c->p->v[k].name, op->name)) {
            F = &c->p->v[k];
            fbytes = F->bytes;
        } else if (c->p->v[k].type == ETK_NODE_COMP && !strcmp(c->p->v[k].name, cp0)) {
            F = &c->p->v[k];
            fbytes = F->bytes * (uint64_t)c->o->cp;
        } else if (c->o->tp_overlap && c->p->v[k].type == ETK_NODE_COMP && !strncmp(c->p->v[k].name, tp0, tpl) &&
                   c->p->v[k].name[tpl] >= '0' && c->p->v[k].name[tpl] <= '9') {
            if (!tpchunks)
                fbytes = 0;
            tpchunks = true;
            F = &c->p->v[k];
            fbytes += F->bytes; /* all the chunks' */
        }
    /* the chunks read the weight once each (low_tp_chunk_bytes): the unchunked GEMM's bytes are
     * their sum less n - 1 weights */
    uint64_t tpw = 0;
    if (tpchunks)
        for (int i = 0; i < op->nin; i++)
            if (g->t[op->in[i]].weight)
                tpw += (uint64_t)low_elems_rank(c, op->in[i], c->used[j][i]) * (uint64_t)(F->fp8 ? 1 : c->o->act_bytes);
    if (tpchunks && tpw <= fbytes / (uint64_t)low_tp_of(c))
        fbytes -= (uint64_t)(low_tp_of(c) - 1) * tpw;
    int32_t deps[MAX_CONTRIB * 2 + G_MAX_IN + 2];
    char name[96];
    if (op->kind == G_MATMUL && F && F->fp8 && c->o->fp8_cast_mb > 0) {
        /* the backward GEMMs' FP8 operands, as Transformer Engine's GEMM benchmark measures them
         * (kernels-measured.md section 1: its backward quantization costs 2.7x the forward's, the
         * elements of these operands 2.8x): every GEMM call quantizes its two operands (cast and
         * transposed copy, FP8_CAST_BYTES per element). The dgrad: the output gradient and the
         * weight (once per step, cached over the micro-batches as in the forward); the wgrad: the
         * output gradient again and the activation input (once per backward pass: Megatron's
         * fused linear_qkv and linear_fc1 read one copy, as in the forward) */
        snprintf(name, sizeof name, "%s.fp8_cast_grad", op->name);
        int32_t k = bag ? low_emit(c, name, ETK_NODE_COMP, P_BWD, nloc, loc) : low_emit(c, name, ETK_NODE_COMP, P_BWD, ngo, go);
        if (k < 0)
            return k;
        uint64_t cb = 2 * (uint64_t)low_elems_rank(c, op->out, goL) * FP8_CAST_BYTES;
        for (int i = 0; i < 2; i++) {
            int t = op->in[i];
            lay L = c->used[j][i];
            if (g->t[t].weight)
                cb += (uint64_t)low_elems_rank(c, t, L) * FP8_CAST_BYTES / (uint64_t)c->o->fp8_cast_mb;
            else if (!(c->fp8done[2][t] && lay_eq(c->fp8L[2][t], L))) {
                c->fp8done[2][t] = true;
                c->fp8L[2][t] = L;
                cb += (uint64_t)low_elems_rank(c, t, L) * FP8_CAST_BYTES;
            }
        }
        c->p->v[k].bytes = cb;
        go[0] = k;
        ngo = 1;
    }
    if (op->kind == G_MATMUL) {
        int wi = -1;
        for (int i = 0; i < 2; i++)
            if (g->t[op->in[i]].weight)
                wi = i;
        double mm = low_matmul_flops(c, op, c->used[j][0], c->used[j][1]);
        int32_t aglast = bag ? bag[low_tp_of(c) - 1] : NONE;
        /* --tp-comm-overlap: a column-parallel GEMM with a sequence-parallel input (QKV, fc1):
         * Transformer Engine all-gathers the saved input for the wgrad beside the dgrad, and
         * reduce-scatters the dgrad's output beside the wgrad (bulk overlaps): the input's
         * all-gather is issued before the dgrad, the wgrad held back until that reduce-scatter
         * is issued (low_tp_flush_wgrad) */
        bool bulk = c->o->tp_overlap && wi >= 0 && c->p->sec != G_SEC_HEAD && c->via_ag[j][1 - wi] &&
                    !low_has_dim(&g->t[op->in[wi]], EXPERT_DIM) && c->ntpw < c->S->nops;
        int32_t avw = NONE;
        if (bulk && (avw = avail(c, j, 1 - wi)) < 0 && avw != NONE && avw != DEP_IN && avw != DEP_GRAD)
            return avw;
        for (int i = 0; i < 2; i++) {
            if (i == wi)
                continue;
            int other = 1 - i;
            int nd = 0;
            for (int k = 0; k < ngo; k++)
                deps[nd++] = go[k];
            int32_t av = avail(c, j, other);
            if (av < 0 && av != NONE && av != DEP_IN && av != DEP_GRAD)
                return av;
            deps[nd++] = av;
            if (wi >= 0)
                snprintf(name, sizeof name, "%s.dgrad", op->name);
            else
                snprintf(name, sizeof name, "%s.dgrad_%s", op->name, low_shortname(g->t[op->in[i]].name));
            if (c->o->cp_ring && (c->cpmark[j][i] || c->cpmark[j][other])) {
                int rc = ring_dgrad(c, j, i, name, go, ngo, goL, av, mm, fbytes, F ? F->fp8 : 0);
                if (rc)
                    return rc;
                continue;
            }
            if (bag && wi >= 0) {
                /* chunk r after gradient shard r (chunk 0: the local one; the FP8 cast of it) */
                int64_t n = low_tp_of(c);
                int32_t prev = NONE, k = NONE;
                /* each chunk reads the whole weight (low_tp_chunk_bytes) */
                uint64_t dw = (uint64_t)low_elems_rank(c, op->in[wi], c->used[j][wi]) *
                              (uint64_t)(F && F->fp8 ? 1 : c->o->act_bytes);
                char cn[128];
                for (int64_t r = 0; r < n; r++) {
                    int cd = 0;
                    int32_t cdeps[MAX_CONTRIB + 4];
                    if (ngo == 1 && go[0] != aglast)
                        cdeps[cd++] = go[0]; /* the FP8 cast */
                    if (r == 0)
                        for (int q = 0; q < nloc; q++)
                            cdeps[cd++] = loc[q];
                    else
                        cdeps[cd++] = bag[r];
                    cdeps[cd++] = av;
                    cdeps[cd++] = prev;
                    snprintf(cn, sizeof cn, "%s.tp%lld", name, (long long)r);
                    if ((k = low_emit(c, cn, ETK_NODE_COMP, P_BWD, cd, cdeps)) < 0)
                        return k;
                    c->p->v[k].flops = mm / (double)n;
                    c->p->v[k].bytes = low_tp_chunk_bytes(fbytes, dw, n, r);
                    c->p->v[k].fp8 = F ? F->fp8 : 0;
                    prev = k;
                }
                lay gl = low_einsum_lay_c(c, goL, c->used[j][other], &g->t[op->in[i]]);
                low_add_contrib(c, op->in[i], k, gl);
                continue;
            }
            int k = low_emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
            if (k < 0)
                return k;
            c->p->v[k].flops = mm;
            c->p->v[k].bytes = fbytes;
            c->p->v[k].fp8 = F ? F->fp8 : 0;
            c->p->v[k].grouped = F ? F->grouped : 0;
            lay gl = low_einsum_lay_c(c, goL, c->used[j][other], &g->t[op->in[i]]);
            if (c->cpmark[j][i] && (k = cp_reduce_scatter(c, op->in[i], k, gl)) < 0)
                return k;
            low_add_contrib(c, op->in[i], k, gl);
        }
        if (wi >= 0) {
            int ai = 1 - wi;
            int32_t av = bulk ? avw : avail(c, j, ai);
            if (av < 0 && av != NONE && av != DEP_IN && av != DEP_GRAD)
                return av;
            tpwgrad w = {.j = j, .ngo = ngo, .av = av, .aglast = aglast,
                         .bytes = tpchunks ? fbytes : F ? F->bytes : 0, .fp8 = F ? F->fp8 : 0,
                         .grouped = F ? F->grouped : 0};
            memcpy(w.go, go, sizeof(int32_t) * (size_t)ngo);
            if (bulk) {
                c->tpw[c->ntpw++] = w;
                return 0;
            }
            return emit_wgrad(c, &w);
        }
        return 0;
    }
    int nd = 0;
    for (int k = 0; k < ngo; k++)
        deps[nd++] = go[k];
    for (int i = 0; i < op->nin; i++) {
        int32_t av = avail(c, j, i);
        if (av < 0 && av != NONE && av != DEP_IN && av != DEP_GRAD)
            return av;
        deps[nd++] = av;
    }
    snprintf(name, sizeof name, "%s.bwd", op->name);
    int k = low_emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
    if (k < 0)
        return k;
    ginst *I = &c->p->v[k];
    I->bytes = F ? F->bytes : 0;
    if (op->kind == G_LOSS && c->o->unfused_loss)
        I->bytes = low_loss_bytes(c, op, c->used[j][0], true);
    I->scores = F ? F->scores : 0;
    if (op->kind == G_EMBEDDING)
        I->flops = (double)low_elems_rank(c, op->out, c->outL[j]); /* scatter-add of the gradient */
    else
        I->flops = op->bwd * (F ? F->flops : 0);
    for (int i = 0; i < op->nin && I->nw < 4; i++)
        if (g->t[op->in[i]].weight)
            I->w[I->nw++] = op->in[i];
    if (op->kind != G_EMBEDDING)
        for (int i = 0; i < op->nin; i++)
            if (!g->t[op->in[i]].weight) {
                int32_t gi = k, kk = k;
                if (low_is_combine_in(c, op, i)) {
                    /* gradients of the expert outputs to the expert ranks */
                    char dn[96];
                    snprintf(dn, sizeof dn, "d%s", low_shortname(g->t[op->in[i]].name));
                    if ((gi = low_ep_a2a(c, dn, op->in[i], c->used[j][i], P_BWD, 1, &kk)) < 0)
                        return c->rc ? c->rc : ETK_ENOMEM;
                }
                low_add_contrib(c, op->in[i], gi, c->used[j][i]);
            }
    return 0;
}
