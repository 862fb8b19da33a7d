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
 * whole layer including its collectives) at the start of the backward pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/lower.h"
#include "etkit/gen.h"

typedef struct {
    int8_t split;  /* dimension letter split over TP, -1: none */
    bool partial;
} lay;

static const lay REP = {-1, false};

static bool lay_eq(lay a, lay b) { return a.split == b.split && a.partial == b.partial; }

#define MAX_CONV 4
typedef struct {
    int32_t inst;   /* producer instruction, DEP_IN, or NONE */
    lay L;
    int nconv;
    lay cto[MAX_CONV];
    int32_t cinst[MAX_CONV];
} tstate;

#define NONE (-100)
#define ERRV (-1000) /* emit failed: ctx.rc holds the error */
#define MAX_CONTRIB 8

typedef struct {
    int n;
    int32_t inst[MAX_CONTRIB];
    lay L[MAX_CONTRIB];
} contrib;

typedef struct {
    const etk_graph *g;
    const gsection *S;
    const glower_opts *o;
    etk_arena *a;
    gprog *p;
    etk_error *err;
    bool full;           /* full recompute of this section */
    bool selective;
    lay stream;
    tstate *ts[2];       /* [0] forward, [1] recompute */
    int *prod_op;        /* tensor -> op index producing it, -1 */
    /* per op, per input: layout consumed, instruction giving that version (per pass), whether
     * it came through an all-gather of a split source */
    lay (*used)[G_MAX_IN];
    int32_t (*uinst[2])[G_MAX_IN];
    bool (*via_ag)[G_MAX_IN];
    lay *outL;
    contrib *grad;       /* per tensor */
    int rc;
    int32_t *regather;   /* per tensor: bwd all-gather of a saved sharded tensor */
    int32_t *cpg[2];     /* per tensor, per pass: its CP all-gather (K, V), NONE */
    bool (*cpmark)[G_MAX_IN]; /* per op, per input: consumed CP-gathered */
    int32_t **ring[3];   /* --cp-comm ring, per pass (forward, recompute, backward), per tensor: the
                          * instructions holding K/V block r = 0..cp-1 ([0] the rank's own), NULL */
    int8_t *ringk;       /* per tensor: its index among the circulated tensors (tags), -1 */
    int nring;
    int64_t rows;        /* glower_opts.routed: the routed token rows b s topk (0: capacity model) */
    double experts_read; /* glower_opts.routed: expected distinct experts of this rank selected */
    double *fflops;      /* per op: forward FLOPs per rank (the fused attention sums its region's) */
    int32_t fz_deps[G_MAX_IN * 8 + 8]; /* --attention flash: dependencies of the region's fused node */
    int fz_nd;
    int32_t *fz_blk[G_MAX_IN * 2]; /* and, with --cp-comm ring, the K/V blocks it works through */
    int fz_nblk;
} ctx;

static const char *shortname(const char *n)
{
    const char *d = strchr(n, '.');
    return d ? d + 1 : n;
}

static int64_t tp_of(const ctx *c) { return c->o->tp; }

static bool has_dim(const gtensor *t, int d)
{
    for (int k = 0; k < t->nd; k++)
        if (t->dims[k] == d)
            return true;
    return false;
}

static int emit(ctx *c, const char *name, int type, int phase, int ndeps, const int32_t *deps);

#define EXPERT_DIM ('e' - 'a')   /* block files name the expert dimension 'e' */
#define CAPACITY_DIM ('c' - 'a') /* and the tokens per expert 'c' */

/* Elements of tensor t. With routed experts (inference) an activation in the expert layout
 * [e, c, ...] holds the b s topk routed rows instead of E x capacity: no padding to the
 * capacity, no dropping (the rows of all E experts, or after the EP all-to-all those routed to
 * this rank's E/ep experts by the ep ranks: as many under uniform routing). */
static int64_t t_elems(const ctx *c, int t)
{
    int64_t n = etk_graph_elems(c->g, t);
    const gtensor *T = &c->g->t[t];
    if (c->rows > 0 && !T->weight && has_dim(T, EXPERT_DIM) && has_dim(T, CAPACITY_DIM))
        n = n / (c->g->dim[EXPERT_DIM] * c->g->dim[CAPACITY_DIM]) * c->rows;
    return n;
}

static int64_t elems_rank(const ctx *c, int t, lay L)
{
    int64_t n = t_elems(c, t);
    if (c->g->t[t].weight && has_dim(&c->g->t[t], EXPERT_DIM)) {
        if (c->rows > 0) { /* the experts the tokens select: one expert's elements each */
            int64_t one = n / c->g->dim[EXPERT_DIM];
            return llround(c->experts_read * (double)(L.split >= 0 ? one / tp_of(c) : one));
        }
        if (c->o->ep > 1)
            n /= c->o->ep; /* this rank's experts */
    }
    return L.split >= 0 ? n / tp_of(c) : n;
}

/* Routed experts (glower_opts.routed): a token selects topk distinct experts of E uniformly at
 * random, tokens independently (no load imbalance, no correlation between tokens). The ep ranks
 * of an EP group route T = ep b s tokens; each of this rank's E/ep experts is selected by a token
 * with probability topk / E, so the rank reads the weights of
 *     (E / ep) (1 - (1 - topk / E)^T)
 * experts in expectation: topk of them for one token (ep 1), all E / ep for many tokens. */
static void routing(ctx *c)
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
static bool is_dispatch(const ctx *c, const gop *op)
{
    if (c->o->ep < 2 || op->kind == G_MATMUL || !has_dim(&c->g->t[op->out], EXPERT_DIM))
        return false;
    for (int i = 0; i < op->nin; i++)
        if (has_dim(&c->g->t[op->in[i]], EXPERT_DIM))
            return false;
    return true;
}
static bool is_combine_in(const ctx *c, const gop *op, int i)
{
    return c->o->ep > 1 && op->kind != G_MATMUL && !c->g->t[op->in[i]].weight &&
           has_dim(&c->g->t[op->in[i]], EXPERT_DIM) && !has_dim(&c->g->t[op->out], EXPERT_DIM);
}
/* The all-to-all carries this rank's share of the routed tokens: with sequence parallelism the
 * [e, c, h] buffer is split over TP along c (each TP rank dispatches the tokens of its sequence
 * slice, as Megatron's all-to-all dispatcher: the tokens are not all-gathered first), so the
 * per-rank buffer is the tensor's elements / tp in that layout; moe_a2a_scale (node-limited
 * routing, --moe-max-nodes) bounds the bytes that cross nodes. */
static int32_t ep_a2a(ctx *c, const char *what, int t, lay L, int phase, int ndeps, const int32_t *deps)
{
    char name[160]; /* tensor names are short; %.100s bounds the name for the compiler */
    snprintf(name, sizeof name, "%s%.100s.ep_all_to_all", phase == P_RECOMP ? "recompute." : "", what);
    int i = emit(c, name, ETK_NODE_COLL, phase, ndeps, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->coll = ETK_COLL_ALL_TO_ALL;
    I->grp = GRP_EP;
    int64_t n = t_elems(c, t);
    if (L.split >= 0 && !L.partial && tp_of(c) > 1)
        n /= tp_of(c);
    I->comm_bytes = n * c->o->act_bytes;
    if (c->o->moe_imbalance > 1)
        I->comm_bytes = (int64_t)llround((double)I->comm_bytes * c->o->moe_imbalance);
    if (c->o->moe_a2a_scale > 0 && c->o->moe_a2a_scale < 1)
        I->comm_bytes = (int64_t)llround((double)I->comm_bytes * c->o->moe_a2a_scale);
    return i;
}

static lay weight_lay(const ctx *c, int t)
{
    lay L = REP;
    if (tp_of(c) > 1)
        L.split = (int8_t)c->g->t[t].split;
    return L;
}

static int emit(ctx *c, const char *name, int type, int phase, int ndeps, const int32_t *deps)
{
    gprog *p = c->p;
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 64;
        ginst *v = etk_arena_alloc(c->a, sizeof(ginst) * (size_t)cap);
        if (!v) {
            c->rc = etk_err(c->err, ETK_ENOMEM, "out of memory lowering %s", c->S->name);
            return ERRV;
        }
        if (p->n)
            memcpy(v, p->v, sizeof(ginst) * (size_t)p->n);
        p->v = v;
        p->cap = cap;
    }
    ginst *I = &p->v[p->n];
    memset(I, 0, sizeof *I);
    I->name = etk_arena_strdup(c->a, name);
    I->type = (uint8_t)type;
    I->phase = (uint8_t)phase;
    /* keep deps unique and drop NONE */
    I->deps = etk_arena_alloc(c->a, sizeof(int32_t) * (size_t)(ndeps + 1));
    if (!I->deps) {
        c->rc = etk_err(c->err, ETK_ENOMEM, "out of memory lowering %s", c->S->name);
        return ERRV;
    }
    for (int i = 0; i < ndeps; i++) {
        if (deps[i] == NONE)
            continue;
        bool dup = false;
        for (int k = 0; k < I->ndeps; k++)
            dup |= I->deps[k] == deps[i];
        if (!dup)
            I->deps[I->ndeps++] = deps[i];
    }
    return p->n++;
}

/* The collective turning layout a into b for tensor t; -1 when none is needed. */
static int coll_for(lay a, lay b)
{
    if (lay_eq(a, b))
        return -1;
    if (a.partial)
        return b.split < 0 ? ETK_COLL_ALL_REDUCE : ETK_COLL_REDUCE_SCATTER;
    if (a.split >= 0)
        return b.split < 0 ? ETK_COLL_ALL_GATHER : ETK_COLL_ALL_TO_ALL;
    return -1; /* replicated -> split: local slice */
}

/* Emit the conversion of tensor t (elements per layout) from a to b; returns the instruction
 * holding the converted value (or the source when no communication is needed). */
static int32_t convert(ctx *c, int t, lay a, lay b, int phase, const char *prefix, int ndeps,
                       const int32_t *deps, int forced_coll)
{
    int coll = forced_coll >= 0 ? forced_coll : coll_for(a, b);
    if (coll < 0)
        return ndeps == 1 ? deps[0] : NONE;
    char name[96];
    snprintf(name, sizeof name, "%s%s.%s", prefix, shortname(c->g->t[t].name),
             coll == ETK_COLL_ALL_REDUCE ? "all_reduce" : coll == ETK_COLL_REDUCE_SCATTER ? "reduce_scatter"
             : coll == ETK_COLL_ALL_GATHER ? "all_gather" : "all_to_all");
    int i = emit(c, name, ETK_NODE_COLL, phase, ndeps, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->coll = (uint8_t)coll;
    int64_t full = t_elems(c, t) * c->o->act_bytes;
    /* ASTRA-sim convention: all-gather and all-to-all carry the per-rank shard, all-reduce and
     * reduce-scatter the full buffer */
    I->comm_bytes = (coll == ETK_COLL_ALL_GATHER || coll == ETK_COLL_ALL_TO_ALL) ? full / tp_of(c) : full;
    return i;
}

static int32_t convert_fwd(ctx *c, int pass, int t, lay want, int phase)
{
    tstate *s = &c->ts[pass][t];
    if (lay_eq(s->L, want) || coll_for(s->L, want) < 0)
        return s->inst;
    for (int k = 0; k < s->nconv; k++)
        if (lay_eq(s->cto[k], want))
            return s->cinst[k];
    int32_t d = s->inst;
    int32_t i = convert(c, t, s->L, want, phase, phase == P_RECOMP ? "recompute." : "", 1, &d, -1);
    if (i < 0 && i != NONE)
        return i;
    if (phase == P_RECOMP && i >= 0) {
        /* recomputation happens in the backward pass: also wait for the output gradient
         * (emit() leaves room for one more dependency) */
        ginst *I = &c->p->v[i];
        I->deps[I->ndeps++] = DEP_GRAD;
    }
    if (s->nconv < MAX_CONV) {
        s->cto[s->nconv] = want;
        s->cinst[s->nconv++] = i;
    }
    return i;
}

/* Layout of einsum(P, Q) -> O given the operands' layouts (neither partial; where both are
 * split it is along the same dimension): split along a dimension O keeps stays split, a split
 * dimension that is contracted makes O a partial sum. */
/* A tensor in the expert layout [e, c, ...] "split" along the sequence letter holds this TP
 * rank's share of the routed tokens (those of its sequence slice, with SP): its GEMMs with
 * TP-replicated experts (--etp 1) keep that share (token_share). */
static bool token_share(const ctx *c, int s, const gtensor *O)
{
    return s >= 0 && s == c->g->stream_seq && !has_dim(O, s) && has_dim(O, CAPACITY_DIM);
}

static lay einsum_lay_c(const ctx *c, lay LP, lay LQ, const gtensor *O)
{
    int s = LP.split >= 0 ? LP.split : LQ.split;
    if (s < 0)
        return REP;
    lay r = REP;
    if (has_dim(O, s) || token_share(c, s, O))
        r.split = (int8_t)s;
    else
        r.partial = true;
    return r;
}

static double matmul_flops(const ctx *c, const gop *op, lay LA, lay LB)
{
    bool seen[G_MAX_DIMS] = {0};
    double f = 2;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < op->eqn[i]; k++) {
            int l = op->eq[i][k];
            if (!seen[l]) {
                seen[l] = true;
                f *= (double)c->g->dim[l];
            }
        }
    if (c->rows > 0 && seen[EXPERT_DIM] && seen[CAPACITY_DIM]) /* routed experts: the routed rows */
        f = f / ((double)c->g->dim[EXPERT_DIM] * (double)c->g->dim[CAPACITY_DIM]) * (double)c->rows;
    if (LA.split >= 0 || LB.split >= 0)
        f /= (double)tp_of(c);
    return f;
}

static lay resolve_default(const ctx *c, int t)
{
    const gtensor *T = &c->g->t[t];
    bool stream = T->nd == c->g->stream_nd;
    for (int k = 0; stream && k < T->nd; k++)
        stream = T->dims[k] == c->g->stream[k];
    return stream ? c->stream : REP;
}

/* Context parallelism: operand i of op j is an activation whose sequence dimension (the stream's
 * s, seq / cp per rank) the op's equation reads under another letter (the key sequence t, whole):
 * attention scores and attention over V read all of K and V. */
static bool needs_cp(const ctx *c, const gop *op, int i)
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
static int64_t key_seq_factor(const ctx *c, const gop *op, int i)
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
static int32_t cp_gather(ctx *c, int pass, int t, int32_t d, lay L, int phase)
{
    if (c->cpg[pass][t] != NONE)
        return c->cpg[pass][t];
    char name[96];
    snprintf(name, sizeof name, "%s%s.cp_all_gather", phase == P_RECOMP ? "recompute." : "", shortname(c->g->t[t].name));
    int32_t deps[2] = {d, DEP_GRAD};
    int i = emit(c, name, ETK_NODE_COLL, phase, phase == P_RECOMP ? 2 : 1, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->coll = ETK_COLL_ALL_GATHER;
    I->grp = GRP_CP;
    I->comm_bytes = elems_rank(c, t, L) * c->o->act_bytes;
    c->cpg[pass][t] = i;
    return i;
}

/* ---------- CP ring (--cp-comm ring) ---------- */
/* One send (to the next CP rank) or receive (from the previous one) of the ring. */
static int32_t ring_p2p(ctx *c, const char *name, bool send, int64_t bytes, int32_t tag, int phase, int ndeps,
                        const int32_t *deps)
{
    int i = emit(c, name, send ? ETK_NODE_SEND : ETK_NODE_RECV, phase, ndeps, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->peer = send ? PEER_CP_NEXT : PEER_CP_PREV;
    I->tag = tag;
    I->comm_bytes = bytes;
    return i;
}

/* gen.h's tag scheme: ETK_GEN_CP_TAG_BASE + 16 r + 4 kind + the tensor's index in the layer */
static int32_t ring_tag(ctx *c, int t, int64_t r, int kind)
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
static int32_t *cp_ring(ctx *c, int pass, int t, int32_t local, lay L, int phase, int kind, int nfirst,
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
    int64_t bytes = elems_rank(c, t, L) * c->o->act_bytes;
    const char *pre = phase == P_RECOMP ? "recompute." : "", *what = kind == 2 ? "cp_ring_bwd" : "cp_ring";
    for (int64_t r = 1; r < C; r++) {
        int32_t deps[MAX_CONTRIB * 2 + 1];
        int nd = 0;
        deps[nd++] = blk[r - 1];
        for (int f = 0; r == 1 && f < nfirst && nd < MAX_CONTRIB * 2 + 1; f++)
            deps[nd++] = first[f];
        char name[96];
        int32_t tag = ring_tag(c, t, r, kind);
        snprintf(name, sizeof name, "%s%s.%s_send%lld", pre, shortname(c->g->t[t].name), what, (long long)r);
        if (ring_p2p(c, name, true, bytes, tag, phase, nd, deps) < 0)
            return NULL;
        snprintf(name, sizeof name, "%s%s.%s_recv%lld", pre, shortname(c->g->t[t].name), what, (long long)r);
        if ((blk[r] = ring_p2p(c, name, false, bytes, tag, phase, nd, deps)) < 0)
            return NULL;
    }
    c->ring[pass][t] = blk;
    return blk;
}


/* ---------- fused attention (--attention flash) ---------- */
/* The attention region of op j (the consecutive ops with `region` set around it): [*lo, *hi). */
static void region_span(const ctx *c, int j, int *lo, int *hi)
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
static bool region_input(const ctx *c, int k, int i, int lo, int hi)
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
static uint64_t region_in_bytes(const ctx *c, int lo, int hi, bool whole)
{
    uint64_t b = 0;
    for (int k = lo; k < hi; k++)
        for (int i = 0; i < c->S->ops[k].nin; i++)
            if (region_input(c, k, i, lo, hi))
                b += (uint64_t)elems_rank(c, c->S->ops[k].in[i], c->used[k][i]) * (uint64_t)c->o->act_bytes *
                     (uint64_t)(whole && c->cpmark[k][i] ? c->o->cp : 1);
    return b;
}

/* The fp32 log-sum-exp the fused forward keeps per query row (the softmax output without the
 * dimension it normalizes over: b heads s per rank), in bytes. */
static uint64_t region_lse_bytes(const ctx *c, int lo, int hi)
{
    for (int k = lo; k < hi; k++) {
        const gop *op = &c->S->ops[k];
        if (op->kind == G_SOFTMAX && op->over >= 0 && c->g->dim[op->over] > 0)
            return (uint64_t)(elems_rank(c, op->out, c->outL[k]) / c->g->dim[op->over]) * 4;
    }
    return 0;
}

static uint64_t region_out_bytes(const ctx *c, int hi)
{
    return (uint64_t)elems_rank(c, c->S->ops[hi - 1].out, c->outL[hi - 1]) * (uint64_t)c->o->act_bytes;
}

/* decoder attention is causal except in a decode step (one query sees every cached key) */
static bool is_causal(const ctx *c)
{
    return c->p->sec != G_SEC_DECODE && c->p->sec != G_SEC_DECODE_DENSE;
}

/* FP8 GEMM (Transformer Engine's linear layers): a GEMM with a weight, outside the attention
 * region and the head (Megatron's output layer is not a TE module: BF16) */
static bool fp8_gemm(const ctx *c, const gop *op)
{
    if (op->kind != G_MATMUL || c->o->gemm_bytes != 1 || op->region || c->p->sec == G_SEC_HEAD)
        return false;
    for (int i = 0; i < op->nin; i++)
        if (c->g->t[op->in[i]].weight)
            return true;
    return false;
}

/* Transformer Engine's FP8 casts (delayed scaling: the amax is taken during the cast): every
 * cast reads the 2-byte tensor and writes the 1-byte FP8 copy and its 1-byte transpose (the
 * other operand layout of a backward GEMM): 4 bytes per element. */
#define FP8_CAST_BYTES 4

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
    uint64_t bytes = region_in_bytes(c, lo, hi, !ring) + region_out_bytes(c, hi) + region_lse_bytes(c, lo, hi);
    int32_t i = NONE;
    for (int64_t r = 0; r < nchunk; r++) {
        char name[96];
        snprintf(name, sizeof name, "%sflash_attn", phase == P_RECOMP ? "recompute." : "");
        if (ring)
            snprintf(name + strlen(name), sizeof name - strlen(name), ".cp%lld", (long long)r);
        int nd = c->fz_nd;
        for (int b = 0; b < c->fz_nblk; b++)
            c->fz_deps[nd++] = c->fz_blk[b][r];
        c->fz_deps[nd++] = i;
        if ((i = emit(c, name, ETK_NODE_COMP, phase, nd, c->fz_deps)) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        ginst *I = &c->p->v[i];
        I->flops = flops / (double)nchunk;
        I->bytes = bytes;
        I->attn = 1;
        I->causal = is_causal(c);
    }
    c->ts[pass][c->S->ops[hi - 1].out].inst = i;
    return 0;
}

/* Forward (or recompute) lowering of op j. */
static int lower_op_fwd(ctx *c, int pass, int j, int phase)
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
            want[i] = weight_lay(c, op->in[i]);
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
            if (W.split >= 0 && has_dim(A, W.split)) {
                want[ai].split = W.split; /* row parallel: input split on the contracted dim */
            } else if (W.split >= 0) {
                want[ai] = REP;           /* column parallel: full input */
            } else {
                want[ai] = have.partial ? resolve_default(c, op->in[ai]) : have;
                if (want[ai].split >= 0 && !has_dim(O, want[ai].split) && !token_share(c, want[ai].split, O))
                    want[ai] = REP;
            }
            out = einsum_lay_c(c, want[ai], W, O);
        } else if (nact == 2) {
            lay h0 = ts[op->in[0]].L;
            if (h0.partial)
                h0 = resolve_default(c, op->in[0]);
            want[0] = h0;
            const gtensor *B = &g->t[op->in[1]];
            want[1] = REP;
            if (h0.split >= 0 && has_dim(B, h0.split))
                want[1].split = h0.split;
            else if (h0.split < 0) {
                lay h1 = ts[op->in[1]].L;
                if (!h1.partial && h1.split >= 0 && has_dim(O, h1.split))
                    want[1] = h1;
            }
            out = einsum_lay_c(c, want[0], want[1], O);
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
            h = resolve_default(c, op->in[act[0]]);
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
            target = resolve_default(c, op->out);
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
    bool fp8 = fp8_gemm(c, op);
    int in_bytes = fp8 ? 1 : c->o->act_bytes;
    int32_t deps[G_MAX_IN + 3];
    int nd = 0;
    uint64_t bytes = 0;
    int32_t *rblk = NULL; /* --cp-comm ring: the K/V blocks this op works through */
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
            coll_for(have, want[i]) >= 0)
            return etk_err(c->err, ETK_EFORMAT, "%s: op %s: --attention flash: tensor %s changes layout inside the "
                           "attention region (it cannot be fused)", g->file, op->name, g->t[t].name);
        int32_t d = convert_fwd(c, pass, t, want[i], phase);
        if (d < 0 && d != NONE && d != DEP_IN && d != DEP_GRAD)
            return d;
        bool cpg = needs_cp(c, op, i);
        c->cpmark[j][i] = cpg;
        if (cpg && c->o->cp_ring) {
            int32_t first = DEP_GRAD;
            if (!(rblk = cp_ring(c, pass, t, d, want[i], phase, phase == P_RECOMP ? 1 : 0, phase == P_RECOMP, &first)))
                return c->rc ? c->rc : ETK_ENOMEM;
            if (c->o->flash && op->region && c->fz_nblk < (int)(sizeof c->fz_blk / sizeof c->fz_blk[0]))
                c->fz_blk[c->fz_nblk++] = rblk;
        } else if (cpg && (d = cp_gather(c, pass, t, d, want[i], phase)) < 0) {
            return c->rc ? c->rc : ETK_ENOMEM;
        }
        if (is_combine_in(c, op, i)) {
            /* expert outputs back to the ranks that own the tokens */
            int32_t dd[2] = {d, DEP_GRAD};
            if ((d = ep_a2a(c, shortname(g->t[t].name), t, want[i], phase, phase == P_RECOMP ? 2 : 1, dd)) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
        }
        c->used[j][i] = want[i];
        c->uinst[pass][j][i] = d;
        c->via_ag[j][i] = !have.partial && have.split >= 0 && want[i].split < 0;
        deps[nd++] = d;
        int64_t kf = key_seq_factor(c, op, i);
        if (kf > 1 && op->shared_kv)
            continue; /* the cache an earlier op of the fused kernel read */
        bytes += (uint64_t)elems_rank(c, t, want[i]) * (uint64_t)(kf > 1 && c->o->kv_bytes ? c->o->kv_bytes : in_bytes) *
                 (uint64_t)kf;
    }
    for (int i = 0; i < op->nin; i++)
        if (g->t[op->in[i]].weight) {
            c->used[j][i] = want[i];
            bytes += (uint64_t)elems_rank(c, op->in[i], want[i]) * (uint64_t)in_bytes;
        }
    if (phase == P_RECOMP)
        deps[nd++] = DEP_GRAD;
    if (fp8 && c->o->fp8_cast_mb > 0) {
        /* the FP8 casts before the GEMM: its activation input (forward and recompute) and, once
         * per step, its weight (cached over the step's micro-batches: the share of one) */
        uint64_t cb = 0;
        for (int k = 0; k < nact; k++)
            cb += (uint64_t)elems_rank(c, op->in[act[k]], want[act[k]]) * FP8_CAST_BYTES;
        if (phase == P_FWD && wi >= 0)
            cb += (uint64_t)elems_rank(c, op->in[wi], want[wi]) * FP8_CAST_BYTES / (uint64_t)c->o->fp8_cast_mb;
        char cn[104];
        snprintf(cn, sizeof cn, "%s%s.fp8_cast", phase == P_RECOMP ? "recompute." : "", op->name);
        int32_t ci = emit(c, cn, ETK_NODE_COMP, phase, nd, deps);
        if (ci < 0)
            return ci;
        c->p->v[ci].bytes = cb;
        deps[nd++] = ci;
    }
    int64_t oel = elems_rank(c, op->out, out);
    bytes += (uint64_t)oel * (uint64_t)c->o->act_bytes;
    if (op->kind == G_DROPOUT)
        bytes += (uint64_t)oel; /* writes its 1-byte mask (read back by the backward node) */
    double flops;
    if (op->kind == G_MATMUL) {
        flops = matmul_flops(c, op, want[0], want[1]);
        if (op->bias >= 0)
            flops += (double)oel;
    } else if (op->kind == G_EMBEDDING) {
        flops = 0;
    } else if (op->kind == G_LOSS) {
        flops = op->flops * (double)elems_rank(c, op->in[act[0]], want[act[0]]);
    } else {
        flops = op->flops * (double)oel;
    }
    c->fflops[j] = flops;
    if (c->o->flash && op->region) {
        /* one fused kernel for the region: gather the dependencies of its ops, emit at the last;
         * the tensors made inside it (scores, probabilities) are never materialized */
        int lo, hi;
        region_span(c, j, &lo, &hi);
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
    int64_t nchunk = rblk ? c->o->cp : 1;
    int32_t i = NONE;
    for (int64_t r = 0; r < nchunk; r++) {
        if (rblk) {
            deps[nd] = rblk[r];
            deps[nd + 1] = i;
            snprintf(name, sizeof name, "%s%s.cp%lld", phase == P_RECOMP ? "recompute." : "", op->name, (long long)r);
        } else {
            snprintf(name, sizeof name, "%s%s", phase == P_RECOMP ? "recompute." : "", op->name);
        }
        i = emit(c, name, ETK_NODE_COMP, phase, nd + (rblk ? 2 : 0), deps);
        if (i < 0)
            return i;
        c->p->v[i].flops = flops / (double)nchunk;
        c->p->v[i].bytes = bytes / (uint64_t)nchunk;
        c->p->v[i].fp8 = fp8;
        c->p->v[i].grouped = op->kind == G_MATMUL && wi >= 0 && has_dim(&g->t[op->in[wi]], EXPERT_DIM);
        /* the attention core's non-GEMM ops (softmax, dropout) work on the b heads s^2 scores */
        c->p->v[i].scores = op->region && op->kind != G_MATMUL;
        for (int k = 0; k < op->nin; k++)
            c->p->v[i].uses_w |= g->t[op->in[k]].weight;
    }
    int32_t last = i;
    /* vocabulary-parallel cross entropy: all-reduces of [b, s] fp32 statistics (max, sum of
     * exponentials, target logit) over the TP group */
    if (op->kind == G_LOSS && want[act[0]].split >= 0 && want[act[0]].split == op->over) {
        for (int r = 0; r < op->reductions; r++) {
            snprintf(name, sizeof name, "%s%s.all_reduce%d", phase == P_RECOMP ? "recompute." : "", op->name, r);
            int k = emit(c, name, ETK_NODE_COLL, phase, 1, &last);
            if (k < 0)
                return k;
            c->p->v[k].coll = ETK_COLL_ALL_REDUCE;
            c->p->v[k].comm_bytes = t_elems(c, op->out) * 4;
            last = k;
        }
    }
    if (is_dispatch(c, op)) {
        /* tokens to the ranks holding their experts */
        int32_t dd[1] = {last};
        if ((last = ep_a2a(c, shortname(g->t[op->out].name), op->out, out, phase, 1, dd)) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
    }
    ts[op->out].inst = last;
    ts[op->out].L = out;
    ts[op->out].nconv = 0;
    c->outL[j] = out;
    return 0;
}

/* ---------- saved activations ---------- */
/* Bytes of tensor t kept for op j's backward (once per tensor), in the layout op j consumed it
 * (a tensor all-gathered for j is kept sharded). */
static uint64_t save_one(ctx *c, bool *seen, int j, int t, int per)
{
    const gop *op = &c->S->ops[j];
    if (seen[t])
        return 0;
    seen[t] = true;
    lay L = c->ts[0][t].L;
    for (int i = 0; i < op->nin; i++)
        if (op->in[i] == t && !c->via_ag[j][i])
            L = c->used[j][i];
    return (uint64_t)elems_rank(c, t, L) * (uint64_t)(per ? per : c->o->act_bytes);
}

static uint64_t saved_bytes(ctx *c)
{
    const etk_graph *g = c->g;
    if (c->full)
        return (uint64_t)elems_rank(c, c->S->input, c->stream) * (uint64_t)c->o->act_bytes;
    bool *seen = calloc((size_t)g->nt, 1);
    uint64_t total = 0;
    for (int j = 0; j < c->S->nops; j++) {
        const gop *op = &c->S->ops[j];
        if (c->o->flash && op->region) {
            /* fused: the region's inputs (Q, K, V), its output O and the log-sum-exp; no
             * probabilities, no dropout mask (regenerated from the RNG state) */
            int lo, hi;
            region_span(c, j, &lo, &hi);
            for (int i = 0; i < op->nin; i++)
                if (region_input(c, j, i, lo, hi))
                    total += save_one(c, seen, j, op->in[i], 0);
            if (j == hi - 1) {
                total += region_lse_bytes(c, lo, hi);
                if (!seen[op->out]) {
                    seen[op->out] = true;
                    total += region_out_bytes(c, hi);
                }
            }
            continue;
        }
        if (op->kind == G_DROPOUT && !(c->selective && op->region))
            total += (uint64_t)elems_rank(c, op->out, c->outL[j]); /* 1-byte mask */
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

/* ---------- backward ---------- */
static void add_contrib(ctx *c, int t, int32_t inst, lay L)
{
    contrib *g = &c->grad[t];
    if (g->n < MAX_CONTRIB) {
        g->inst[g->n] = inst;
        g->L[g->n++] = L;
    }
}

/* The gradient of tensor t in t's own layout: deps into out[], returns count (0: no gradient). */
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
        if (coll_for(g->L[0], T) < 0) {
            for (int k = 0; k < g->n; k++)
                out[n++] = g->inst[k];
            return n;
        }
        int32_t i = convert(c, t, g->L[0], T, P_BWD, "d", g->n, g->inst, -1);
        out[0] = i;
        return i == ERRV ? -1 : 1;
    }
    for (int k = 0; k < g->n; k++) {
        int32_t i = coll_for(g->L[k], T) < 0 ? g->inst[k] : convert(c, t, g->L[k], T, P_BWD, "d", 1, &g->inst[k], -1);
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
    int pass = (c->full || (c->selective && op->region)) ? 1 : 0;
    /* full recompute too: Megatron's recomputed forward runs the same linear layers, which save
     * their sharded input again and all-gather it again in backward (8 all-gathers per layer
     * per micro-batch with SP, not 6) */
    if ((pass == 0 || c->full) && c->via_ag[j][i] && c->o->sp) {
        if (c->regather[t] == NONE) {
            /* kept sharded (sequence parallelism), gathered again for the weight gradient */
            int32_t deps[2] = {c->ts[pass][t].inst, DEP_GRAD};
            char name[96];
            snprintf(name, sizeof name, "%s.regather", shortname(c->g->t[t].name));
            int k = emit(c, name, ETK_NODE_COLL, P_BWD, 2, deps);
            if (k < 0)
                return k;
            c->p->v[k].coll = ETK_COLL_ALL_GATHER;
            c->p->v[k].comm_bytes = t_elems(c, t) * c->o->act_bytes / tp_of(c);
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
        !(ob = cp_ring(c, 2, op->in[other], av, c->used[j][other], P_BWD, 2, ngo, go)))
        return c->rc ? c->rc : ETK_ENOMEM;
    bool acc = c->cpmark[j][i];
    lay gl = einsum_lay_c(c, goL, c->used[j][other], &g->t[ti]);
    int64_t gbytes = elems_rank(c, ti, gl) * c->o->act_bytes;
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
        int32_t k = emit(c, cn, ETK_NODE_COMP, P_BWD, nd, deps);
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
        int32_t tag = ring_tag(c, ti, r, 3);
        snprintf(cn, sizeof cn, "d%s.cp_ring_send%lld", shortname(g->t[ti].name), (long long)r);
        if (ring_p2p(c, cn, true, gbytes, tag, P_BWD, 1, &k) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        snprintf(cn, sizeof cn, "d%s.cp_ring_recv%lld", shortname(g->t[ti].name), (long long)r + 1);
        if ((accr = accr == NONE ? ring_p2p(c, cn, false, gbytes, tag, P_BWD, ngo, go)
                                 : ring_p2p(c, cn, false, gbytes, tag, P_BWD, 1, &accr)) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
    }
    if (acc) {
        add_contrib(c, ti, own, gl);
        add_contrib(c, ti, accr, gl);
    } else {
        add_contrib(c, ti, prev, gl);
    }
    return 0;
}

/* CP all-gather backward: the gradient of the whole K (V), made by instruction k, summed back
 * to its owners over CP; returns the reduce-scatter. */
static int32_t cp_reduce_scatter(ctx *c, int t, int32_t k, lay gl)
{
    char name[96];
    snprintf(name, sizeof name, "d%s.cp_reduce_scatter", shortname(c->g->t[t].name));
    int r = emit(c, name, ETK_NODE_COLL, P_BWD, 1, &k);
    if (r < 0)
        return r;
    c->p->v[r].coll = ETK_COLL_REDUCE_SCATTER;
    c->p->v[r].grp = GRP_CP;
    c->p->v[r].comm_bytes = elems_rank(c, t, gl) * c->o->act_bytes * c->o->cp;
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
    int ngo = get_grad(c, c->S->ops[hi - 1].out, go, &goL);
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
            if (region_input(c, k, i, lo, hi)) {
                int32_t a = avail(c, k, i);
                if (a < 0 && a != NONE && a != DEP_IN && a != DEP_GRAD)
                    return a;
                ink[nin] = k;
                ini[nin] = i;
                av[nin] = a;
                own[nin] = accr[nin] = NONE;
                blk[nin] = NULL;
                if (c->o->cp_ring && c->cpmark[k][i]) {
                    if (!(blk[nin] = cp_ring(c, 2, op->in[i], a, c->used[k][i], P_BWD, 2, ngo, go)))
                        return c->rc ? c->rc : ETK_ENOMEM;
                    ring = true;
                }
                nin++;
            }
        if (op->kind == G_MATMUL) {
            double mm = matmul_flops(c, op, c->used[k][0], c->used[k][1]);
            for (int i = 0; i < op->nin; i++)
                flops += g->t[op->in[i]].weight ? 0 : mm; /* one gradient GEMM per operand */
            if (k < hi - 1)
                recomp += c->fflops[k]; /* the scores again */
        } else {
            flops += op->bwd * c->fflops[k];
        }
    }
    int64_t C = ring ? c->o->cp : 1;
    uint64_t bytes = 2 * region_in_bytes(c, lo, hi, !ring) + 2 * region_out_bytes(c, hi) + region_lse_bytes(c, lo, hi);
    int32_t prev = NONE;
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
        int32_t b = emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
        if (b < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        ginst *I = &c->p->v[b];
        I->flops = (flops + recomp) / (double)C;
        I->recomp_flops = recomp / (double)C;
        I->bytes = bytes;
        I->attn = 1;
        I->causal = is_causal(c);
        prev = b;
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
            int64_t gbytes = elems_rank(c, t, c->used[ink[n]][ini[n]]) * c->o->act_bytes;
            int32_t tag = ring_tag(c, t, r, 3);
            snprintf(name, sizeof name, "d%s.cp_ring_send%lld", shortname(g->t[t].name), (long long)r);
            if (ring_p2p(c, name, true, gbytes, tag, P_BWD, 1, &b) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
            snprintf(name, sizeof name, "d%s.cp_ring_recv%lld", shortname(g->t[t].name), (long long)r + 1);
            if ((accr[n] = accr[n] == NONE ? ring_p2p(c, name, false, gbytes, tag, P_BWD, ngo, go)
                                           : ring_p2p(c, name, false, gbytes, tag, P_BWD, 1, &accr[n])) < 0)
                return c->rc ? c->rc : ETK_ENOMEM;
        }
    }
    for (int n = 0; n < nin; n++) {
        int k = ink[n], i = ini[n], t = c->S->ops[k].in[i];
        if (blk[n]) {
            add_contrib(c, t, own[n], c->used[k][i]);
            add_contrib(c, t, accr[n], c->used[k][i]);
            continue;
        }
        int32_t gi = prev;
        if (c->cpmark[k][i] && (gi = cp_reduce_scatter(c, t, prev, c->used[k][i])) < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        add_contrib(c, t, gi, c->used[k][i]);
    }
    return 0;
}

static int lower_op_bwd(ctx *c, int j)
{
    const gop *op = &c->S->ops[j];
    const etk_graph *g = c->g;
    if (c->o->flash && op->region) {
        int lo, hi;
        region_span(c, j, &lo, &hi);
        return j == hi - 1 ? flash_bwd(c, lo, hi) : 0;
    }
    int32_t go[MAX_CONTRIB * 2];
    lay goL;
    int ngo = get_grad(c, op->out, go, &goL);
    if (ngo < 0)
        return c->err->code;
    if (ngo == 0)
        return 0;
    if (is_dispatch(c, op)) {
        /* gradients of the dispatched tokens back from the expert ranks */
        char dn[96];
        snprintf(dn, sizeof dn, "d%s", shortname(g->t[op->out].name));
        int32_t k = ep_a2a(c, dn, op->out, goL, P_BWD, ngo, go);
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
    for (int k = 0; k < c->p->nfwd; k++)
        if (c->p->v[k].type == ETK_NODE_COMP && !strcmp(c->p->v[k].name, op->name)) {
            F = &c->p->v[k];
            fbytes = F->bytes;
        } else if (c->p->v[k].type == ETK_NODE_COMP && !strcmp(c->p->v[k].name, cp0)) {
            F = &c->p->v[k];
            fbytes = F->bytes * (uint64_t)c->o->cp;
        }
    int32_t deps[MAX_CONTRIB * 2 + G_MAX_IN + 2];
    char name[96];
    if (op->kind == G_MATMUL && F && F->fp8 && c->o->fp8_cast_mb > 0) {
        /* the output gradient cast to FP8 (and transposed) for the dgrad and wgrad GEMMs */
        snprintf(name, sizeof name, "%s.fp8_cast_grad", op->name);
        int32_t k = emit(c, name, ETK_NODE_COMP, P_BWD, ngo, go);
        if (k < 0)
            return k;
        c->p->v[k].bytes = (uint64_t)elems_rank(c, op->out, goL) * FP8_CAST_BYTES;
        go[0] = k;
        ngo = 1;
    }
    if (op->kind == G_MATMUL) {
        int wi = -1;
        for (int i = 0; i < 2; i++)
            if (g->t[op->in[i]].weight)
                wi = i;
        double mm = matmul_flops(c, op, c->used[j][0], c->used[j][1]);
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
                snprintf(name, sizeof name, "%s.dgrad_%s", op->name, shortname(g->t[op->in[i]].name));
            if (c->o->cp_ring && (c->cpmark[j][i] || c->cpmark[j][other])) {
                int rc = ring_dgrad(c, j, i, name, go, ngo, goL, av, mm, fbytes, F ? F->fp8 : 0);
                if (rc)
                    return rc;
                continue;
            }
            int k = emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
            if (k < 0)
                return k;
            c->p->v[k].flops = mm;
            c->p->v[k].bytes = fbytes;
            c->p->v[k].fp8 = F ? F->fp8 : 0;
            c->p->v[k].grouped = F ? F->grouped : 0;
            lay gl = einsum_lay_c(c, goL, c->used[j][other], &g->t[op->in[i]]);
            if (c->cpmark[j][i] && (k = cp_reduce_scatter(c, op->in[i], k, gl)) < 0)
                return k;
            add_contrib(c, op->in[i], k, gl);
        }
        if (wi >= 0) {
            int ai = 1 - wi, nd = 0;
            for (int k = 0; k < ngo; k++)
                deps[nd++] = go[k];
            int32_t av = avail(c, j, ai);
            if (av < 0 && av != NONE && av != DEP_IN && av != DEP_GRAD)
                return av;
            deps[nd++] = av;
            snprintf(name, sizeof name, "%s.wgrad", op->name);
            int k = emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
            if (k < 0)
                return k;
            ginst *I = &c->p->v[k];
            I->flops = mm + (op->bias >= 0 ? (double)elems_rank(c, op->out, c->outL[j]) : 0);
            I->bytes = F ? F->bytes : 0;
            I->fp8 = F ? F->fp8 : 0;
            I->grouped = F ? F->grouped : 0;
            I->w[I->nw++] = op->in[wi];
            if (op->bias >= 0)
                I->w[I->nw++] = op->bias;
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
    int k = emit(c, name, ETK_NODE_COMP, P_BWD, nd, deps);
    if (k < 0)
        return k;
    ginst *I = &c->p->v[k];
    I->bytes = F ? F->bytes : 0;
    I->scores = F ? F->scores : 0;
    if (op->kind == G_EMBEDDING)
        I->flops = (double)elems_rank(c, op->out, c->outL[j]); /* scatter-add of the gradient */
    else
        I->flops = op->bwd * (F ? F->flops : 0);
    for (int i = 0; i < op->nin && I->nw < 4; i++)
        if (g->t[op->in[i]].weight)
            I->w[I->nw++] = op->in[i];
    if (op->kind != G_EMBEDDING)
        for (int i = 0; i < op->nin; i++)
            if (!g->t[op->in[i]].weight) {
                int32_t gi = k, kk = k;
                if (is_combine_in(c, op, i)) {
                    /* gradients of the expert outputs to the expert ranks */
                    char dn[96];
                    snprintf(dn, sizeof dn, "d%s", shortname(g->t[op->in[i]].name));
                    if ((gi = ep_a2a(c, dn, op->in[i], c->used[j][i], P_BWD, 1, &kk)) < 0)
                        return c->rc ? c->rc : ETK_ENOMEM;
                }
                add_contrib(c, op->in[i], gi, c->used[j][i]);
            }
    return 0;
}

/* MoE: mark the nodes of the experts' work (ops reading and writing the [e, c, ...] expert
 * layout: the expert GEMMs and their activation, forward, recompute and backward), give the
 * expert GEMMs the shape of one expert's GEMM (gemm_m/n/k: tokens per expert x the weight's two
 * dims per rank; gemm_groups: the rank's experts), and size them for the busiest rank
 * (moe_imbalance: FLOPs and bytes x F, the extra F - 1 not model FLOPs). */
static bool has_ec(const gtensor *T) { return !T->weight && has_dim(T, EXPERT_DIM) && has_dim(T, CAPACITY_DIM); }

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
            if (g->t[op->in[i]].weight && has_dim(&g->t[op->in[i]], EXPERT_DIM))
                wi = i;
        if (wi >= 0 && el > 0) {
            const gtensor *W = &g->t[op->in[wi]], *A = &g->t[op->in[1 - wi]];
            int64_t kd = 0, nd = 0;
            for (int d = 0; d < W->nd; d++) {
                if (W->dims[d] == EXPERT_DIM)
                    continue;
                int64_t sz = g->dim[W->dims[d]];
                if (W->split == W->dims[d] && tp_of(c) > 1)
                    sz /= tp_of(c);
                if (has_dim(A, W->dims[d]))
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
    for (int k = 0; k < 3; k++)
        c.ring[k] = etk_arena_alloc(a, sizeof(int32_t *) * (size_t)nt);
    c.ringk = etk_arena_alloc(a, (size_t)nt);
    c.fflops = etk_arena_alloc(a, sizeof(double) * (size_t)(nops ? nops : 1));
    if (!c.fflops || !c.ts[0] || !c.ts[1] || !c.prod_op || !c.used || !c.uinst[0] || !c.uinst[1] || !c.via_ag || !c.outL ||
        !c.grad || !c.regather || !c.cpg[0] || !c.cpg[1] || !c.cpmark || !c.ring[0] || !c.ring[1] || !c.ring[2] ||
        !c.ringk)
        return etk_err(err, ETK_ENOMEM, "out of memory lowering %s", S->name);
    for (int t = 0; t < nt; t++) {
        c.ts[0][t].inst = NONE;
        c.ts[0][t].L = g->t[t].weight ? weight_lay(&c, t) : REP;
        c.prod_op[t] = -1;
        c.regather[t] = NONE;
        c.cpg[0][t] = c.cpg[1][t] = NONE;
        c.ring[0][t] = c.ring[1][t] = c.ring[2][t] = NULL;
        c.ringk[t] = -1;
    }
    memset(c.cpmark, 0, sizeof(*c.cpmark) * (size_t)nops);
    routing(&c);
    for (int j = 0; j < nops; j++)
        c.prod_op[S->ops[j].out] = j;
    c.ts[0][S->input].inst = DEP_IN;
    c.ts[0][S->input].L = sec == G_SEC_EMBED ? REP : c.stream;
    int rc;
    for (int j = 0; j < nops; j++)
        if ((rc = lower_op_fwd(&c, 0, j, P_FWD)))
            return c.rc ? c.rc : rc;
    /* section output in the residual-stream layout */
    p->fwd_out = c.ts[0][S->output].inst;
    lay outl = c.ts[0][S->output].L;
    if (sec != G_SEC_HEAD) {
        p->fwd_out = convert_fwd(&c, 0, S->output, c.stream, P_FWD);
        outl = c.stream;
    }
    if (c.rc)
        return c.rc;
    p->out_bytes = (uint64_t)elems_rank(&c, S->output, outl) * (uint64_t)o->act_bytes;
    p->nfwd = p->n;
    p->saved_bytes = saved_bytes(&c);
    /* recompute pass */
    if (c.full || c.selective) {
        memcpy(c.ts[1], c.ts[0], sizeof(tstate) * (size_t)nt);
        for (int t = 0; t < nt; t++)
            c.ts[1][t].nconv = 0;
        for (int j = 0; j < nops; j++)
            if (c.full || S->ops[j].region)
                if ((rc = lower_op_fwd(&c, 1, j, P_RECOMP)))
                    return c.rc ? c.rc : rc;
    } else {
        memcpy(c.uinst[1], c.uinst[0], sizeof(*c.uinst[0]) * (size_t)nops);
    }
    /* backward */
    if (sec == G_SEC_HEAD)
        add_contrib(&c, S->output, DEP_GRAD, c.ts[0][S->output].L);
    else
        add_contrib(&c, S->output, DEP_GRAD, c.stream);
    for (int j = nops - 1; j >= 0; j--)
        if ((rc = lower_op_bwd(&c, j)))
            return c.rc ? c.rc : rc;
    if (sec != G_SEC_EMBED) {
        lay L;
        int32_t tmp[MAX_CONTRIB * 2];
        int n = get_grad(&c, S->input, tmp, &L);
        if (c.rc || n < 0)
            return c.rc ? c.rc : ETK_EINVAL;
        memcpy(p->bwd_out, tmp, sizeof(int32_t) * (size_t)(n < 8 ? n : 8));
        n = n < 8 ? n : 8;
        p->nbwd_out = n;
    }
    moe_mark(&c, S, p);
    return 0;
}
