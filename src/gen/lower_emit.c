/* lower_emit.c — the basics of lowering (lower_priv.h): appending an instruction to the
 * section's program, tensor sizes per TP rank, weight layouts, and converting a tensor between
 * TP layouts with the collective the table in lower.c names. Used by every other lower_*.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/lower.h"
#include "etkit/gen.h"
#include "gen/lower_priv.h"

const char *low_shortname(const char *n)
{
    const char *d = strchr(n, '.');
    return d ? d + 1 : n;
}

int64_t low_tp_of(const ctx *c) { return c->o->tp; }

bool low_has_dim(const gtensor *t, int d)
{
    for (int k = 0; k < t->nd; k++)
        if (t->dims[k] == d)
            return true;
    return false;
}

/* Elements of tensor t. With routed experts (inference) an activation in the expert layout
 * [e, c, ...] holds the b s topk routed rows instead of E x capacity: no padding to the
 * capacity, no dropping (the rows of all E experts, or after the EP all-to-all those routed to
 * this rank's E/ep experts by the ep ranks: as many under uniform routing). */
int64_t low_t_elems(const ctx *c, int t)
{
    int64_t n = etk_graph_elems(c->g, t);
    const gtensor *T = &c->g->t[t];
    if (c->rows > 0 && !T->weight && low_has_dim(T, EXPERT_DIM) && low_has_dim(T, CAPACITY_DIM))
        n = n / (c->g->dim[EXPERT_DIM] * c->g->dim[CAPACITY_DIM]) * c->rows;
    return n;
}

int64_t low_elems_rank(const ctx *c, int t, lay L)
{
    int64_t n = low_t_elems(c, t);
    if (c->g->t[t].weight && low_has_dim(&c->g->t[t], EXPERT_DIM)) {
        if (c->rows > 0) { /* the experts the tokens select: one expert's elements each */
            int64_t one = n / c->g->dim[EXPERT_DIM];
            return llround(c->experts_read * (double)(L.split >= 0 ? one / low_tp_of(c) : one));
        }
        if (c->o->ep > 1)
            n /= c->o->ep; /* this rank's experts */
    }
    return L.split >= 0 ? n / low_tp_of(c) : n;
}

lay low_weight_lay(const ctx *c, int t)
{
    lay L = REP;
    if (low_tp_of(c) > 1)
        L.split = (int8_t)c->g->t[t].split;
    return L;
}

int low_emit(ctx *c, const char *name, int type, int phase, int ndeps, const int32_t *deps)
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
    I->wgrad_name = strstr(name, ".wgrad") != NULL;
    I->dgrad_name = strstr(name, ".dgrad") != NULL;
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
int low_coll_for(lay a, lay b)
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
int32_t low_convert(ctx *c, int t, lay a, lay b, int phase, const char *prefix, int ndeps,
                    const int32_t *deps, int forced_coll)
{
    int coll = forced_coll >= 0 ? forced_coll : low_coll_for(a, b);
    if (coll < 0)
        return ndeps == 1 ? deps[0] : NONE;
    char name[96];
    snprintf(name, sizeof name, "%s%s.%s", prefix, low_shortname(c->g->t[t].name),
             coll == ETK_COLL_ALL_REDUCE ? "all_reduce" : coll == ETK_COLL_REDUCE_SCATTER ? "reduce_scatter"
             : coll == ETK_COLL_ALL_GATHER ? "all_gather" : "all_to_all");
    int i = low_emit(c, name, ETK_NODE_COLL, phase, ndeps, deps);
    if (i < 0)
        return i;
    ginst *I = &c->p->v[i];
    I->coll = (uint8_t)coll;
    int64_t full = low_t_elems(c, t) * c->o->act_bytes;
    /* ASTRA-sim convention: all-gather and all-to-all carry the per-rank shard, all-reduce and
     * reduce-scatter the full buffer */
    I->comm_bytes = (coll == ETK_COLL_ALL_GATHER || coll == ETK_COLL_ALL_TO_ALL) ? full / low_tp_of(c) : full;
    return i;
}

/* Chunk r of n of an integer total: the first total mod n chunks one more (the sum is total). */
uint64_t low_chunk_u64(uint64_t total, int64_t n, int64_t r)
{
    return total / (uint64_t)n + ((uint64_t)r < total % (uint64_t)n ? 1 : 0);
}

/* --tp-comm-overlap: the bytes of chunk r of n of a weight GEMM whose unchunked bytes are total,
 * wbytes of them the weight's: Transformer Engine splits the activation rows (the sequence) in n,
 * each chunk a GEMM of 1/n of the rows that reads the whole weight (its share of the activations
 * and of the output, the weight whole). The chunks add up to total + (n - 1) wbytes; with the
 * chunk's FLOPs (1/n) the compute model's shape measure h = FLOPs / bytes is then the chunk's,
 * 1 / (n/M + 1/N + 1/K) for the M x K x N GEMM (docs/compute-model.md). */
uint64_t low_tp_chunk_bytes(uint64_t total, uint64_t wbytes, int64_t n, int64_t r)
{
    if (wbytes > total)
        wbytes = total;
    return wbytes + low_chunk_u64(total - wbytes, n, r);
}

/* --tp-comm-overlap: the TP all-gather of activation tensor t (from its sequence-parallel shard
 * to the whole tensor) as Transformer Engine's ring exchange runs it beside a GEMM: tp - 1 steps,
 * each passing one rank's shard to the next rank, emitted as tp - 1 chained all-gathers of
 * 1/(tp - 1) of the per-rank shard each (ASTRA-sim's all-gather carries the shard; a ring
 * all-gather of S/(tp - 1) moves (tp - 1) S/(tp - 1) = S per rank: one ring step of the whole
 * all-gather's (tp - 1) S). The bytes of the chunks add up to the single all-gather's. Returns an
 * array of tp instructions: [0] NONE (the GEMM's first chunk works on the local shard), [r] the
 * chunk after which shard r has arrived; NULL on error (c->rc). */
int32_t *low_tp_ag_chunks(ctx *c, const char *prefix, int t, int phase, int ndeps, const int32_t *deps)
{
    int64_t n = low_tp_of(c);
    int32_t *a = etk_arena_alloc(c->a, sizeof(int32_t) * (size_t)n);
    if (!a) {
        c->rc = etk_err(c->err, ETK_ENOMEM, "out of memory lowering %s", c->S->name);
        return NULL;
    }
    a[0] = NONE;
    uint64_t shard = (uint64_t)(low_t_elems(c, t) * c->o->act_bytes / n);
    for (int64_t r = 1; r < n; r++) {
        char name[112];
        snprintf(name, sizeof name, "%s%s.all_gather.tp%lld", prefix, low_shortname(c->g->t[t].name), (long long)r);
        int32_t i = r == 1 ? low_emit(c, name, ETK_NODE_COLL, phase, ndeps, deps) : low_emit(c, name, ETK_NODE_COLL, phase, 1, &a[r - 1]);
        if (i < 0) {
            if (!c->rc)
                c->rc = ETK_ENOMEM;
            return NULL;
        }
        c->p->v[i].coll = ETK_COLL_ALL_GATHER;
        c->p->v[i].comm_bytes = (int64_t)low_chunk_u64(shard, n - 1, r - 1);
        a[r] = i;
    }
    return a;
}

/* --tp-comm-overlap: the reduce-scatter of a row-parallel GEMM's partial output t (its tp chunk
 * GEMMs gemm[0..tp-1]) as tp chained reduce-scatters of 1/tp of the buffer each, chunk r after
 * GEMM chunk r: the exchange of one chunk's partial sums runs beside the next chunk's GEMM
 * (Transformer Engine's GEMM+reduce-scatter). The bytes add up to the single reduce-scatter's.
 * Returns the last chunk (after it every chunk is reduced), or a negative error. */
int32_t low_tp_rs_chunks(ctx *c, const char *prefix, int t, int phase, const int32_t *gemm)
{
    int64_t n = low_tp_of(c);
    uint64_t full = (uint64_t)(low_t_elems(c, t) * c->o->act_bytes);
    int32_t prev = NONE;
    for (int64_t r = 0; r < n; r++) {
        char name[112];
        snprintf(name, sizeof name, "%s%s.reduce_scatter.tp%lld", prefix, low_shortname(c->g->t[t].name), (long long)r);
        int32_t deps[2] = {gemm[r], prev};
        int32_t i = low_emit(c, name, ETK_NODE_COLL, phase, 2, deps);
        if (i < 0)
            return c->rc ? c->rc : ETK_ENOMEM;
        c->p->v[i].coll = ETK_COLL_REDUCE_SCATTER;
        c->p->v[i].comm_bytes = (int64_t)low_chunk_u64(full, n, r);
        prev = i;
    }
    return prev;
}

int32_t low_convert_fwd(ctx *c, int pass, int t, lay want, int phase)
{
    tstate *s = &c->ts[pass][t];
    if (lay_eq(s->L, want) || low_coll_for(s->L, want) < 0)
        return s->inst;
    for (int k = 0; k < s->nconv; k++)
        if (lay_eq(s->cto[k], want))
            return s->cinst[k];
    int32_t d = s->inst;
    int32_t i = low_convert(c, t, s->L, want, phase, phase == P_RECOMP ? "recompute." : "", 1, &d, -1);
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
bool low_token_share(const ctx *c, int s, const gtensor *O)
{
    return s >= 0 && s == c->g->stream_seq && !low_has_dim(O, s) && low_has_dim(O, CAPACITY_DIM);
}

lay low_einsum_lay_c(const ctx *c, lay LP, lay LQ, const gtensor *O)
{
    int s = LP.split >= 0 ? LP.split : LQ.split;
    if (s < 0)
        return REP;
    lay r = REP;
    if (low_has_dim(O, s) || low_token_share(c, s, O))
        r.split = (int8_t)s;
    else
        r.partial = true;
    return r;
}

double low_matmul_flops(const ctx *c, const gop *op, lay LA, lay LB)
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
        f /= (double)low_tp_of(c);
    return f;
}

lay low_resolve_default(const ctx *c, int t)
{
    const gtensor *T = &c->g->t[t];
    bool stream = T->nd == c->g->stream_nd;
    for (int k = 0; stream && k < T->nd; k++)
        stream = T->dims[k] == c->g->stream[k];
    return stream ? c->stream : REP;
}
