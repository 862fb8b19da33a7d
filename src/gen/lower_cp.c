/* lower_cp.c — context-parallel and MoE helpers of lowering: MoE routing and the expert-parallel
 * all-to-alls, CP key/value all-gathers and the CP ring (send/recv around the ring with tags),
 * and the attention regions (inputs, outputs, causal masks) those act on. Used by the forward
 * and backward passes (lower_fwd.c, lower_bwd.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/lower.h"
#include "etkit/gen.h"
#include "gen/lower_priv.h"

/* Routed experts (glower_opts.routed): a token selects topk distinct experts of E uniformly at
 * random, tokens independently (no load imbalance, no correlation between tokens). The ep ranks
 * of an EP group route T = ep b s tokens; each of this rank's E/ep experts is selected by a token
 * with probability topk / E, so the rank reads the weights of
 *     (E / ep) (1 - (1 - topk / E)^T)
 * experts in expectation: topk of them for one token (ep 1), all E / ep for many tokens. */
void low_routing(ctx *c)
{
    const etk_graph *g = c->g;
    if (!c->o->routed || g->experts <= 0 || g->topk <= 0)
        return;
    double E = (double)g->experts, ep = (double)(c->o->ep > 1 ? c->o->ep : 1);
    double T = ep * (double)g->batch * (double)g->dim[g->stream_seq];
    c->rows = g->batch * g->dim[g->stream_seq] * g->topk;
    c->experts_read = E / ep * (1 - pow(1 - (double)g->topk / E, T));
}

/* Expert parallelism: op j moves tokens into the expert layout (dispatch: output has the expert
 * dim, no input has) or input i out of it (combine). The tokens of a rank's [e, c, h] buffer go
 * to the ranks holding their experts: an all-to-all over EP (comm_size = the per-rank buffer). */
bool low_is_dispatch(const ctx *c, const gop *op)
{
    if (c->o->ep < 2 || op->kind == G_MATMUL || !low_has_dim(&c->g->t[op->out], EXPERT_DIM))
        return false;
    for (int i = 0; i < op->nin; i++)
        if (low_has_dim(&c->g->t[op->in[i]], EXPERT_DIM))
            return false;
    return true;
}
/* The same op with or without expert parallelism: Megatron's dropless dispatchers copy the
 * per-expert token counts to the host before they permute (all-to-all split sizes, the grouped
 * GEMM's m_splits), so the host waits for the routing to finish in every MoE layer's forward:
 * the dispatch node is marked host_sync (the host model, compute.host_op_ns). */
bool low_is_moe_dispatch(const ctx *c, const gop *op)
{
    if (op->kind == G_MATMUL || !low_has_dim(&c->g->t[op->out], EXPERT_DIM))
        return false;
    for (int i = 0; i < op->nin; i++)
        if (low_has_dim(&c->g->t[op->in[i]], EXPERT_DIM))
            return false;
    return true;
}
bool low_is_combine_in(const ctx *c, const gop *op, int i)
{
    return c->o->ep > 1 && op->kind != G_MATMUL && !c->g->t[op->in[i]].weight &&
           low_has_dim(&c->g->t[op->in[i]], EXPERT_DIM) && !low_has_dim(&c->g->t[op->out], EXPERT_DIM);
}
/* The all-to-all carries this rank's share of the routed tokens: with sequence parallelism the
 * [e, c, h] buffer is split over TP along c (each TP rank dispatches the tokens of its sequence
 * slice, as Megatron's all-to-all dispatcher: the tokens are not all-gathered first), so the
 * per-rank buffer is the tensor's elements / tp in that layout; moe_a2a_scale (node-limited
 * routing, --moe-max-nodes) bounds the bytes that cross nodes. */
int32_t low_ep_a2a(ctx *c, const char *what, int t, lay L, int phase, int ndeps, const int32_t *deps)
{
    char name[160]; /* tensor names are short; %.100s bounds the name for the compiler */
    snprintf(name, sizeof name, "%s%.100s.ep_all_to_all", phase == P_RECOMP ? "recompute." : "", what);
    int i = low_emit(c, name, ETK_NODE_COLL, phase, ndeps, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->coll = ETK_COLL_ALL_TO_ALL;
    I->grp = GRP_EP;
    int64_t n = low_t_elems(c, t);
    if (L.split >= 0 && !L.partial && low_tp_of(c) > 1)
        n /= low_tp_of(c);
    I->comm_bytes = n * c->o->act_bytes;
    if (c->o->moe_imbalance > 1)
        I->comm_bytes = (int64_t)llround((double)I->comm_bytes * c->o->moe_imbalance);
    if (c->o->moe_a2a_scale > 0 && c->o->moe_a2a_scale < 1)
        I->comm_bytes = (int64_t)llround((double)I->comm_bytes * c->o->moe_a2a_scale);
    return i;
}

/* Context parallelism: operand i of op j is an activation whose sequence dimension (the stream's
 * s, seq / cp per rank) the op's equation reads under another letter (the key sequence t, whole):
 * attention scores and attention over V read all of K and V. */
bool low_needs_cp(const ctx *c, const gop *op, int i)
{
    const etk_graph *g = c->g;
    const gtensor *T = &g->t[op->in[i]];
    if (c->o->cp < 2 || op->kind != G_MATMUL || T->weight || op->eqn[i] != T->nd)
        return false;
    for (int k = 0; k < T->nd; k++)
        if (T->dims[k] == g->stream_seq && op->eq[i][k] != g->stream_seq)
            return true;
    return false;
}

/* Operand i of op j read over the key sequence: the elements it reads are those of the tensor
 * (the local query sequence s) times t / s. With context parallelism t / s = cp (the gathered
 * K and V); in inference decode s = 1 new token and t = the cached context (the KV cache is
 * read); otherwise 1. */
int64_t low_key_seq_factor(const ctx *c, const gop *op, int i)
{
    const etk_graph *g = c->g;
    const gtensor *T = &g->t[op->in[i]];
    if (op->kind != G_MATMUL || T->weight || op->eqn[i] != T->nd || g->dim[g->stream_seq] <= 0)
        return 1;
    for (int k = 0; k < T->nd; k++)
        if (T->dims[k] == g->stream_seq && op->eq[i][k] != g->stream_seq) {
            int64_t f = g->dim[op->eq[i][k]] / g->dim[g->stream_seq];
            return f > 1 ? f : 1;
        }
    return 1;
}

/* CP all-gather of tensor t (Llama 3's context parallelism: K and V gathered over the CP group;
 * comm_size = the per-rank shard). Shared by the consumers of one pass. */
int32_t low_cp_gather(ctx *c, int pass, int t, int32_t d, lay L, int phase)
{
    if (c->cpg[pass][t] != NONE)
        return c->cpg[pass][t];
    char name[96];
    snprintf(name, sizeof name, "%s%s.cp_all_gather", phase == P_RECOMP ? "recompute." : "", low_shortname(c->g->t[t].name));
    int32_t deps[2] = {d, DEP_GRAD};
    int i = low_emit(c, name, ETK_NODE_COLL, phase, phase == P_RECOMP ? 2 : 1, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->coll = ETK_COLL_ALL_GATHER;
    I->grp = GRP_CP;
    I->comm_bytes = low_elems_rank(c, t, L) * c->o->act_bytes;
    c->cpg[pass][t] = i;
    return i;
}

/* One send (to the next CP rank) or receive (from the previous one) of the ring. */
int32_t low_ring_p2p(ctx *c, const char *name, bool send, int64_t bytes, int32_t tag, int phase, int ndeps,
                     const int32_t *deps)
{
    int i = low_emit(c, name, send ? ETK_NODE_SEND : ETK_NODE_RECV, phase, ndeps, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->peer = send ? PEER_CP_NEXT : PEER_CP_PREV;
    I->tag = tag;
    I->comm_bytes = bytes;
    return i;
}

/* gen.h's tag scheme: ETK_GEN_CP_TAG_BASE + 16 r + 4 kind + the tensor's index in the layer */
int32_t low_ring_tag(ctx *c, int t, int64_t r, int kind)
{
    if (c->ringk[t] < 0)
        c->ringk[t] = (int8_t)(c->nring++ & 3);
    return (int32_t)(ETK_GEN_CP_TAG_BASE + 16 * r + 4 * kind + c->ringk[t]);
}

/* The blocks of tensor t (K or V) passed around the CP ring: cp - 1 steps; at step r every rank
 * sends the block it holds (its own at step 1) to the next CP rank and receives block r from the
 * previous one. The send and the receive of a step are posted together (both wait for the block
 * of step r - 1 only), so rendezvous sends cannot deadlock the ring. Shared by the consumers of
 * one pass. kind: 0 forward, 1 recompute, 2 backward; `first`: more dependencies of step 1 (the
 * output gradient in recompute and backward). Returns the cp instructions holding the blocks. */
int32_t *low_cp_ring(ctx *c, int pass, int t, int32_t local, lay L, int phase, int kind, int nfirst,
                     const int32_t *first)
{
    if (c->ring[pass][t])
        return c->ring[pass][t];
    int64_t C = c->o->cp;
    int32_t *blk = etk_arena_alloc(c->a, sizeof(int32_t) * (size_t)C);
    if (!blk) {
        c->rc = etk_err(c->err, ETK_ENOMEM, "out of memory lowering %s", c->S->name);
        return NULL;
    }
    blk[0] = local;
    int64_t bytes = low_elems_rank(c, t, L) * c->o->act_bytes;
    const char *pre = phase == P_RECOMP ? "recompute." : "", *what = kind == 2 ? "cp_ring_bwd" : "cp_ring";
    for (int64_t r = 1; r < C; r++) {
        int32_t deps[MAX_CONTRIB * 2 + 1];
        int nd = 0;
        deps[nd++] = blk[r - 1];
        for (int f = 0; r == 1 && f < nfirst && nd < MAX_CONTRIB * 2 + 1; f++)
            deps[nd++] = first[f];
        char name[96];
        int32_t tag = low_ring_tag(c, t, r, kind);
        snprintf(name, sizeof name, "%s%s.%s_send%lld", pre, low_shortname(c->g->t[t].name), what, (long long)r);
        if (low_ring_p2p(c, name, true, bytes, tag, phase, nd, deps) < 0)
            return NULL;
        snprintf(name, sizeof name, "%s%s.%s_recv%lld", pre, low_shortname(c->g->t[t].name), what, (long long)r);
        if ((blk[r] = low_ring_p2p(c, name, false, bytes, tag, phase, nd, deps)) < 0)
            return NULL;
    }
    c->ring[pass][t] = blk;
    return blk;
}

/* The attention region of op j (the consecutive ops with `region` set around it): [*lo, *hi). */
void low_region_span(const ctx *c, int j, int *lo, int *hi)
{
    int a = j, b = j + 1;
    while (a > 0 && c->S->ops[a - 1].region)
        a--;
    while (b < c->S->nops && c->S->ops[b].region)
        b++;
    *lo = a;
    *hi = b;
}

/* Tensor t is made and consumed inside the region [lo, hi): never materialized when fused. */
static bool region_internal(const ctx *c, int t, int lo, int hi)
{
    int pj = c->prod_op[t];
    return pj >= lo && pj < hi - 1;
}

/* Input i of region op k is a region input (Q, K, V) seen for the first time in [lo, k]. */
bool low_region_input(const ctx *c, int k, int i, int lo, int hi)
{
    int t = c->S->ops[k].in[i];
    if (c->g->t[t].weight || region_internal(c, t, lo, hi))
        return false;
    for (int kk = lo; kk <= k; kk++)
        for (int ii = 0; ii < c->S->ops[kk].nin; ii++)
            if (c->S->ops[kk].in[ii] == t)
                return kk == k && ii == i;
    return false;
}

/* Bytes of the region's inputs as the fused kernel reads them: K and V whole under CP when
 * `whole`, else one block (the CP ring's kernel per block). */
uint64_t low_region_in_bytes(const ctx *c, int lo, int hi, bool whole)
{
    uint64_t b = 0;
    for (int k = lo; k < hi; k++)
        for (int i = 0; i < c->S->ops[k].nin; i++)
            if (low_region_input(c, k, i, lo, hi))
                b += (uint64_t)low_elems_rank(c, c->S->ops[k].in[i], c->used[k][i]) * (uint64_t)c->o->act_bytes *
                     (uint64_t)(whole && c->cpmark[k][i] ? c->o->cp : 1);
    return b;
}

/* The fp32 log-sum-exp the fused forward keeps per query row (the softmax output without the
 * dimension it normalizes over: b heads s per rank), in bytes. */
uint64_t low_region_lse_bytes(const ctx *c, int lo, int hi)
{
    for (int k = lo; k < hi; k++) {
        const gop *op = &c->S->ops[k];
        if (op->kind == G_SOFTMAX && op->over >= 0 && c->g->dim[op->over] > 0)
            return (uint64_t)(low_elems_rank(c, op->out, c->outL[k]) / c->g->dim[op->over]) * 4;
    }
    return 0;
}

uint64_t low_region_out_bytes(const ctx *c, int hi)
{
    return (uint64_t)low_elems_rank(c, c->S->ops[hi - 1].out, c->outL[hi - 1]) * (uint64_t)c->o->act_bytes;
}

/* The shape a fused attention kernel of the region starting at op lo runs at, for the compute
 * model's sequence- and head-dimension-dependent efficiency: the key length (t; with the CP ring
 * each kernel sees one K/V block of t / cp) and the head dimension (the dims of the first GEMM's
 * (QK^T) left operand that its output lacks). */
void low_attn_shape(const ctx *c, int lo, bool ring, int64_t *s, int64_t *d)
{
    const etk_graph *g = c->g;
    const gop *op = &c->S->ops[lo];
    int64_t t = g->dim['t' - 'a'] > 0 ? g->dim['t' - 'a'] : g->dim[g->stream_seq];
    *s = ring && c->o->cp > 1 ? t / c->o->cp : t;
    *d = 0;
    if (op->kind != G_MATMUL || op->nin < 1)
        return;
    const gtensor *A = &g->t[op->in[0]], *O = &g->t[op->out];
    int64_t hd = 1;
    for (int k = 0; k < A->nd; k++)
        if (!low_has_dim(O, A->dims[k]) && g->dim[A->dims[k]] > 0)
            hd *= g->dim[A->dims[k]];
    *d = hd > 1 ? hd : 0;
}

/* decoder attention is causal except in a decode step (one query sees every cached key) */
bool low_is_causal(const ctx *c)
{
    return c->p->sec != G_SEC_DECODE && c->p->sec != G_SEC_DECODE_DENSE;
}
