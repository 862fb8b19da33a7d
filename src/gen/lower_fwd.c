/* lower_fwd.c — the forward pass of lowering: one op of the section into compute nodes (GEMMs,
 * FP8 casts, the fused flash-attention kernel, elementwise ops) with the layout conversions its
 * inputs need. Recompute re-runs it at the start of the backward pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/lower.h"
#include "etkit/gen.h"
#include "gen/lower_priv.h"

/* FP8 GEMM (Transformer Engine's linear layers): a GEMM with a weight, outside the attention
 * region and the head (Megatron's output layer is not a TE module: BF16) */
bool low_fp8_gemm(const ctx *c, const gop *op)
{
    if (op->kind != G_MATMUL || c->o->gemm_bytes != 1 || op->region || c->p->sec == G_SEC_HEAD)
        return false;
    for (int i = 0; i < op->nin; i++)
        if (c->g->t[op->in[i]].weight)
            return true;
    return false;
}


/* The fused forward (or recompute) kernel of the region ending at op hi - 1: the FLOPs of all
 * its ops (model FLOPs unchanged), Q, K, V read, O and the log-sum-exp written. With the CP ring,
 * one kernel per K/V block as it arrives (each reads Q and the block, writes a partial O and
 * log-sum-exp, merged in order), 1/cp of the FLOPs each. */
static int flash_fwd(ctx *c, int pass, int lo, int hi, int phase)
{
    double flops = 0;
    for (int k = lo; k < hi; k++)
        flops += c->fflops[k];
    bool ring = c->fz_nblk > 0;
    int64_t nchunk = ring ? c->o->cp : 1;
    uint64_t bytes = low_region_in_bytes(c, lo, hi, !ring) + low_region_out_bytes(c, hi) + low_region_lse_bytes(c, lo, hi);
    int64_t as, ad;
    low_attn_shape(c, lo, ring, &as, &ad);
    /* the CP ring: after each block's kernel but the first, the partial output is merged into
     * the running one by its log-sum-exp (TE's softmax-LSE correction): memory-bound, reading
     * both outputs and log-sum-exps and writing the merged ones */
    uint64_t merge = 3 * (low_region_out_bytes(c, hi) + low_region_lse_bytes(c, lo, hi));
    int32_t i = NONE, last = NONE;
    for (int64_t r = 0; r < nchunk; r++) {
        char name[96];
        snprintf(name, sizeof name, "%sflash_attn", phase == P_RECOMP ? "recompute." : "");
        if (ring)
            snprintf(name + strlen(name), sizeof name - strlen(name), ".cp%lld", (long long)r);
        int nd = c->fz_nd;
        for (int b = 0; b < c->fz_nblk; b++)
            c->fz_deps[nd++] = c->fz_blk[b][r];
        c->fz_deps[nd++] = i;
        if ((i = low_emit(c, name, ETK_NODE_COMP, phase, nd, c->fz_deps)) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        ginst *I = &c->p->v[i];
        I->flops = flops / (double)nchunk;
        I->bytes = bytes;
        I->attn = 1;
        I->causal = low_is_causal(c);
        I->attn_w = I->causal && c->wscale < 1 ? c->o->window : 0;
        I->attn_s = as;
        I->attn_d = ad;
        if (r == 0) {
            last = i;
        } else { /* after this block's kernel and the previous merge */
            int32_t md[2] = {i, r > 1 ? last : NONE};
            snprintf(name + strlen(name), sizeof name - strlen(name), ".lse_merge");
            if ((last = low_emit(c, name, ETK_NODE_COMP, phase, 2, md)) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
            c->p->v[last].bytes = merge;
        }
    }
    c->ts[pass][c->S->ops[hi - 1].out].inst = last;
    return 0;
}

/* --tp-comm-overlap: the chunked all-gather of tensor t for a column-parallel GEMM (made once per
 * pass, shared by the GEMMs reading it: Megatron's fused linear_qkv and linear_fc1); NULL with
 * c->rc 0 when t was already gathered whole for another consumer (the GEMM then reads that) */
static int32_t *tp_ag_fwd(ctx *c, int pass, int t, lay want, int phase)
{
    if (c->tpag[pass][t])
        return c->tpag[pass][t];
    tstate *s = &c->ts[pass][t];
    for (int k = 0; k < s->nconv; k++)
        if (lay_eq(s->cto[k], want))
            return NULL;
    int32_t deps[2] = {s->inst, phase == P_RECOMP ? DEP_GRAD : NONE};
    int32_t *a = low_tp_ag_chunks(c, phase == P_RECOMP ? "recompute." : "", t, phase, 2, deps);
    if (!a)
        return NULL;
    a[0] = s->inst;
    /* whole once the last chunk has arrived (the chunks are chained) */
    if (s->nconv < MAX_CONV) {
        s->cto[s->nconv] = want;
        s->cinst[s->nconv++] = a[low_tp_of(c) - 1];
    }
    c->tpag[pass][t] = a;
    return a;
}

/* --unfused-loss: bytes per rank of the cross-entropy loss over its logits, as Megatron-LM
 * computes it (tensor_parallel.vocab_parallel_cross_entropy on the logits cast to FP32 by
 * GPTModel's `output.float()`: Megatron's default, --fp16-lm-cross-entropy off, no loss fusion).
 * With e the loss's precision (the bytes of its saved input, `save: ["z:4"]`: 4; else the
 * activation's) and a the logits' (act_bytes), per logit: forward the cast (a + e, when e != a),
 * max (e), subtract the max (2e), exp in place (2e), sum (e), divide by the sum in place (2e):
 * 8e (+ a + e); backward grad_input.mul_(grad_output) (2e) and the cast back (e + a). The [b, s]
 * statistics and the target's logit (one element per token) are negligible. FP32 on BF16
 * logits: 38 + 14 = 52 bytes per logit (the default: one read of the logits each way, 2 + 2).
 * The passes are those etkit live recorded of Megatron's function (docs/live.md, s24). */
uint64_t low_loss_bytes(const ctx *c, const gop *op, lay L, bool bwd)
{
    int a = c->o->act_bytes, e = a;
    for (int k = 0; k < op->nsave; k++)
        if (op->save[k] == op->in[0] && op->save_bytes[k] > 0)
            e = op->save_bytes[k];
    uint64_t n = (uint64_t)low_elems_rank(c, op->in[0], L);
    uint64_t cast = e != a ? (uint64_t)(a + e) : 0;
    return n * ((bwd ? 2 * (uint64_t)e : 8 * (uint64_t)e) + cast);
}

/* Forward (or recompute) lowering of op j. */
int low_lower_op_fwd(ctx *c, int pass, int j, int phase)
{
    const gop *op = &c->S->ops[j];
    const etk_graph *g = c->g;
    tstate *ts = c->ts[pass];
    lay want[G_MAX_IN];
    lay out = REP;
    if (c->o->flash && op->region && (j == 0 || !c->S->ops[j - 1].region))
        c->fz_nd = c->fz_nblk = 0; /* a fused attention region starts */
    int wi = -1, act[G_MAX_IN], nact = 0;
    for (int i = 0; i < op->nin; i++) {
        want[i] = REP;
        if (g->t[op->in[i]].weight) {
            if (wi < 0)
                wi = i;
            want[i] = low_weight_lay(c, op->in[i]);
        } else {
            act[nact++] = i;
        }
    }
    switch (op->kind) {
    case G_MATMUL: {
        const gtensor *O = &g->t[op->out];
        if (wi >= 0 && nact == 1) {
            int ai = act[0];
            const gtensor *A = &g->t[op->in[ai]];
            lay W = want[wi];
            lay have = ts[op->in[ai]].L;
            if (W.split >= 0 && low_has_dim(A, W.split)) {
                want[ai].split = W.split; /* row parallel: input split on the contracted dim */
            } else if (W.split >= 0) {
                want[ai] = REP;           /* column parallel: full input */
            } else {
                want[ai] = have.partial ? low_resolve_default(c, op->in[ai]) : have;
                if (want[ai].split >= 0 && !low_has_dim(O, want[ai].split) && !low_token_share(c, want[ai].split, O))
                    want[ai] = REP;
            }
            out = low_einsum_lay_c(c, want[ai], W, O);
        } else if (nact == 2) {
            lay h0 = ts[op->in[0]].L;
            if (h0.partial)
                h0 = low_resolve_default(c, op->in[0]);
            want[0] = h0;
            const gtensor *B = &g->t[op->in[1]];
            want[1] = REP;
            if (h0.split >= 0 && low_has_dim(B, h0.split))
                want[1].split = h0.split;
            else if (h0.split < 0) {
                lay h1 = ts[op->in[1]].L;
                if (!h1.partial && h1.split >= 0 && low_has_dim(O, h1.split))
                    want[1] = h1;
            }
            out = low_einsum_lay_c(c, want[0], want[1], O);
        } else {
            return etk_err(c->err, ETK_EFORMAT, "%s: op %s: matmul needs one weight and one activation or two activations",
                           g->file, op->name);
        }
        break;
    }
    case G_EMBEDDING:
        want[0] = REP;
        out = REP;
        if (wi >= 0 && want[wi].split >= 0)
            out.partial = true; /* vocabulary-parallel lookup: each rank holds its vocab rows */
        break;
    case G_NORM:
    case G_SOFTMAX:
    case G_LOSS: {
        lay h = ts[op->in[act[0]]].L;
        if (h.partial)
            h = low_resolve_default(c, op->in[act[0]]);
        if (h.split >= 0 && h.split == op->over && op->kind != G_LOSS)
            h = REP;
        want[act[0]] = h;
        out = h;
        if (op->kind == G_LOSS)
            out = REP;
        break;
    }
    default: { /* elementwise, dropout */
        lay target = REP;
        bool found = false;
        for (int k = 0; k < nact && !found; k++)
            if (!ts[op->in[act[k]]].L.partial) {
                target = ts[op->in[act[k]]].L;
                found = true;
            }
        if (!found)
            target = low_resolve_default(c, op->out);
        for (int k = 0; k < nact; k++)
            want[act[k]] = target;
        for (int i = 0; i < op->nin; i++)
            if (g->t[op->in[i]].weight && want[i].split >= 0 && want[i].split != target.split)
                return etk_err(c->err, ETK_EFORMAT,
                               "%s: op %s: weight %s is split on '%c' but the op's output is not", g->file,
                               op->name, g->t[op->in[i]].name, 'a' + want[i].split);
        out = target;
        break;
    }
    }
    /* conversions and the compute node; FP8 GEMMs read 1-byte operands (output in BF16) */
    bool fp8 = low_fp8_gemm(c, op);
    int in_bytes = fp8 ? 1 : c->o->act_bytes;
    int32_t deps[G_MAX_IN + 3];
    int nd = 0;
    uint64_t bytes = 0;
    int32_t *rblk = NULL; /* --cp-comm ring: the K/V blocks this op works through */
    /* --tp-comm-overlap (Transformer Engine's userbuffers): a weight GEMM of a layer (not the
     * head: Megatron's output layer is no TE module; not the experts' grouped GEMMs) runs as tp
     * chunks when its input is all-gathered (column parallel: chunk r after shard r arrives) or
     * its partial output reduce-scattered (row parallel: chunk r's partial sums exchanged beside
     * chunk r + 1's GEMM) */
    bool tpo = c->o->tp_overlap && op->kind == G_MATMUL && wi >= 0 && nact == 1 && c->p->sec != G_SEC_HEAD &&
               !low_has_dim(&g->t[op->in[wi]], EXPERT_DIM) && !op->region;
    int32_t *agc = NULL;
    int adi = -1;
    for (int k = 0; k < nact; k++) {
        int i = act[k], t = op->in[i];
        lay have = ts[t].L;
        if (op->kind == G_EMBEDDING) {
            c->used[j][i] = REP;
            c->uinst[pass][j][i] = ts[t].inst;
            deps[nd++] = ts[t].inst;
            continue;
        }
        if (c->o->flash && op->region && c->prod_op[t] >= 0 && c->S->ops[c->prod_op[t]].region &&
            low_coll_for(have, want[i]) >= 0)
            return etk_err(c->err, ETK_EFORMAT, "%s: op %s: --attention flash: tensor %s changes layout inside the "
                           "attention region (it cannot be fused)", g->file, op->name, g->t[t].name);
        int32_t d;
        if (tpo && !have.partial && have.split >= 0 && low_coll_for(have, want[i]) == ETK_COLL_ALL_GATHER &&
            !low_needs_cp(c, op, i) && (agc = tp_ag_fwd(c, pass, t, want[i], phase))) {
            d = agc[low_tp_of(c) - 1];
            adi = nd;
        } else if (c->rc) {
            return c->rc;
        } else {
            d = low_convert_fwd(c, pass, t, want[i], phase);
        }
        if (d < 0 && d != NONE && d != DEP_IN && d != DEP_GRAD)
            return d;
        bool cpg = low_needs_cp(c, op, i);
        c->cpmark[j][i] = cpg;
        if (cpg && c->o->cp_ring) {
            int32_t first = DEP_GRAD;
            if (!(rblk = low_cp_ring(c, pass, t, d, want[i], phase, phase == P_RECOMP ? 1 : 0, phase == P_RECOMP, &first)))
                return c->rc ? c->rc : ETK_ENOMEM;
            if (c->o->flash && op->region && c->fz_nblk < (int)(sizeof c->fz_blk / sizeof c->fz_blk[0]))
                c->fz_blk[c->fz_nblk++] = rblk;
        } else if (cpg && (d = low_cp_gather(c, pass, t, d, want[i], phase)) < 0) {
            return c->rc ? c->rc : ETK_ENOMEM;
        }
        if (low_is_combine_in(c, op, i)) {
            /* expert outputs back to the ranks that own the tokens */
            int32_t dd[2] = {d, DEP_GRAD};
            if ((d = low_ep_a2a(c, low_shortname(g->t[t].name), t, want[i], phase, phase == P_RECOMP ? 2 : 1, dd)) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
        }
        c->used[j][i] = want[i];
        c->uinst[pass][j][i] = d;
        c->via_ag[j][i] = !have.partial && have.split >= 0 && want[i].split < 0;
        deps[nd++] = d;
        int64_t kf = low_key_seq_factor(c, op, i);
        if (kf > 1 && op->shared_kv)
            continue; /* the cache an earlier op of the fused kernel read */
        bytes += (uint64_t)low_elems_rank(c, t, want[i]) * (uint64_t)(kf > 1 && c->o->kv_bytes ? c->o->kv_bytes : in_bytes) *
                 (uint64_t)kf;
    }
    uint64_t wbytes = 0; /* the weights' share of bytes (a TP chunk reads them whole) */
    for (int i = 0; i < op->nin; i++)
        if (g->t[op->in[i]].weight) {
            c->used[j][i] = want[i];
            wbytes += (uint64_t)low_elems_rank(c, op->in[i], want[i]) * (uint64_t)in_bytes;
        }
    bytes += wbytes;
    if (phase == P_RECOMP)
        deps[nd++] = DEP_GRAD;
    if (fp8 && c->o->fp8_cast_mb > 0) {
        /* the FP8 casts before the GEMM: its activation input (forward and recompute) and, once
         * per step, its weight (cached over the step's micro-batches: the share of one) */
        uint64_t cb = 0;
        for (int k = 0; k < nact; k++) {
            /* an input an earlier GEMM of this pass cast in the same layout is read as that copy:
             * Megatron runs Q, K, V as one GEMM (linear_qkv) and gate, up as one (linear_fc1),
             * Transformer Engine casting their input once; etkit's separate GEMMs share it */
            int t = op->in[act[k]];
            if (c->fp8done[pass][t] && lay_eq(c->fp8L[pass][t], want[act[k]]))
                continue;
            c->fp8done[pass][t] = true;
            c->fp8L[pass][t] = want[act[k]];
            cb += (uint64_t)low_elems_rank(c, t, want[act[k]]) * FP8_CAST_BYTES;
        }
        if (phase == P_FWD && wi >= 0)
            cb += (uint64_t)low_elems_rank(c, op->in[wi], want[wi]) * FP8_CAST_BYTES / (uint64_t)c->o->fp8_cast_mb;
        if (agc)
            deps[adi] = agc[0]; /* the local shard is cast (then each chunk as it arrives) */
        char cn[104];
        snprintf(cn, sizeof cn, "%s%s.fp8_cast", phase == P_RECOMP ? "recompute." : "", op->name);
        int32_t ci = low_emit(c, cn, ETK_NODE_COMP, phase, nd, deps);
        if (ci < 0)
            return ci;
        c->p->v[ci].bytes = cb;
        deps[nd++] = ci;
    }
    int64_t oel = low_elems_rank(c, op->out, out);
    if (op->kind == G_LOSS && c->o->unfused_loss) /* Megatron's cross-entropy passes (low_loss_bytes) */
        bytes = low_loss_bytes(c, op, want[act[0]], false);
    bytes += (uint64_t)oel * (uint64_t)c->o->act_bytes;
    if (op->kind == G_DROPOUT)
        bytes += (uint64_t)oel; /* writes its 1-byte mask (read back by the backward node) */
    double flops;
    if (op->kind == G_MATMUL) {
        flops = low_matmul_flops(c, op, want[0], want[1]);
        if (op->bias >= 0)
            flops += (double)oel;
    } else if (op->kind == G_EMBEDDING) {
        flops = 0;
    } else if (op->kind == G_LOSS) {
        flops = op->flops * (double)low_elems_rank(c, op->in[act[0]], want[act[0]]);
    } else {
        flops = op->flops * (double)oel;
    }
    if (op->region)
        flops *= c->wscale;
    c->fflops[j] = flops;
    if (c->o->flash && op->region) {
        /* one fused kernel for the region: gather the dependencies of its ops, emit at the last;
         * the tensors made inside it (scores, probabilities) are never materialized */
        int lo, hi;
        low_region_span(c, j, &lo, &hi);
        for (int k = 0; k < nd && c->fz_nd < (int)(sizeof c->fz_deps / sizeof c->fz_deps[0]) - G_MAX_IN * 2 - 1; k++)
            c->fz_deps[c->fz_nd++] = deps[k];
        ts[op->out].inst = NONE;
        ts[op->out].L = out;
        ts[op->out].nconv = 0;
        c->outL[j] = out;
        return j == hi - 1 ? flash_fwd(c, pass, lo, hi, phase) : 0;
    }
    char name[96];
    /* with the CP ring, one partial product per K/V block as it arrives (blockwise attention:
     * the online softmax accumulates them in order); the FLOPs and bytes split evenly */
    bool rsc = tpo && !rblk && out.partial && c->stream.split >= 0 && lay_eq(low_resolve_default(c, op->out), c->stream);
    int64_t nchunk = rblk ? c->o->cp : agc || rsc ? low_tp_of(c) : 1;
    int32_t *gch = NULL; /* --tp-comm-overlap: the GEMM's chunks */
    if (nchunk > 1 && !rblk && !(gch = etk_arena_alloc(c->a, sizeof(int32_t) * (size_t)nchunk)))
        return c->rc = etk_err(c->err, ETK_ENOMEM, "out of memory lowering %s", c->S->name);
    int32_t i = NONE;
    for (int64_t r = 0; r < nchunk; r++) {
        if (rblk) {
            deps[nd] = rblk[r];
            deps[nd + 1] = i;
            snprintf(name, sizeof name, "%s%s.cp%lld", phase == P_RECOMP ? "recompute." : "", op->name, (long long)r);
        } else if (gch) {
            if (agc)
                deps[adi] = r ? agc[r] : agc[0];
            deps[nd] = i; /* chunks in order */
            deps[nd + 1] = NONE;
            snprintf(name, sizeof name, "%s%s.tp%lld", phase == P_RECOMP ? "recompute." : "", op->name, (long long)r);
        } else {
            snprintf(name, sizeof name, "%s%s", phase == P_RECOMP ? "recompute." : "", op->name);
        }
        i = low_emit(c, name, ETK_NODE_COMP, phase, nd + (nchunk > 1 ? 2 : 0), deps);
        if (i < 0)
            return i;
        if (gch)
            gch[r] = i;
        c->p->v[i].flops = flops / (double)nchunk;
        c->p->v[i].bytes = rblk ? bytes / (uint64_t)nchunk
                           : gch ? low_tp_chunk_bytes(bytes, wbytes, nchunk, r) : low_chunk_u64(bytes, nchunk, r);
        c->p->v[i].fp8 = fp8;
        c->p->v[i].grouped = op->kind == G_MATMUL && wi >= 0 && low_has_dim(&g->t[op->in[wi]], EXPERT_DIM);
        /* the attention core's non-GEMM ops (softmax, dropout) work on the b heads s^2 scores */
        c->p->v[i].scores = op->region && op->kind != G_MATMUL;
        for (int k = 0; k < op->nin; k++)
            c->p->v[i].uses_w |= g->t[op->in[k]].weight;
    }
    if (low_is_moe_dispatch(c, op))
        c->p->v[i].host_sync = 1;
    int32_t last = i;
    /* vocabulary-parallel cross entropy: all-reduces of [b, s] fp32 statistics (max, sum of
     * exponentials, target logit) over the TP group */
    if (op->kind == G_LOSS && want[act[0]].split >= 0 && want[act[0]].split == op->over) {
        for (int r = 0; r < op->reductions; r++) {
            snprintf(name, sizeof name, "%s%s.all_reduce%d", phase == P_RECOMP ? "recompute." : "", op->name, r);
            int k = low_emit(c, name, ETK_NODE_COLL, phase, 1, &last);
            if (k < 0)
                return k;
            c->p->v[k].coll = ETK_COLL_ALL_REDUCE;
            c->p->v[k].comm_bytes = low_t_elems(c, op->out) * 4;
            last = k;
        }
    }
    if (low_is_dispatch(c, op)) {
        /* tokens to the ranks holding their experts */
        int32_t dd[1] = {last};
        if ((last = low_ep_a2a(c, low_shortname(g->t[op->out].name), op->out, out, phase, 1, dd)) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
    }
    ts[op->out].inst = last;
    ts[op->out].L = out;
    ts[op->out].nconv = 0;
    c->outL[j] = out;
    if (rsc) { /* the reduce-scatter to the residual stream's layout, chunk by chunk */
        int32_t rs = low_tp_rs_chunks(c, phase == P_RECOMP ? "recompute." : "", op->out, phase, gch);
        if (rs < 0)
            return c->rc ? c->rc : rs;
        ts[op->out].cto[0] = c->stream;
        ts[op->out].cinst[0] = rs;
        ts[op->out].nconv = 1;
    }
    return 0;
}
