/* grad.c — the backward half of training emission (see train.h): a section instance's backward
 * (recompute, dgrad, wgrad), ZeRO-3 parameter gathers and gradient reduce-scatters, the bucketed
 * DP gradient reduction after the last micro-batch, and the optimizer step. Called by emit.c. */
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

static void bucket_flush(emitter *E, bool force);
static void bucket_append(emitter *E, uint64_t elems, uint64_t id);

/* Backward of section instance si for micro-batch j. gd: ids of the output gradient.
 * Returns the ids of the input gradient in out (count). */
/* zb-h1: the weight-gradient GEMMs ("W"), deferred out of the backward unit ("B") */
/* an expert weight with EP folded over TP (gen_ep_folded): the TP ranks hold different experts
 * (or the same ones as members of the expert-DP group), summed over EDP, not over TP */
static bool xfold(const gen *G, int t)
{
    return gen_ep_folded(G->cfg) && gen_is_expert(G, t);
}

static bool is_w(const ginst *I)
{
    return I->type == ETK_NODE_COMP && I->nw > 0 && I->wgrad_name;
}

/* ZeRO-3: node `id` (instruction I of section instance si) produces weight gradients: they are
 * reduce-scattered after the section's backward (expert weights over EDP; a tied table's
 * gradient from the head joins the embedding's). */
static void z3_note(emitter *E, int si, const ginst *I, uint64_t id, bool last)
{
    gen *G = E->G;
    bool tied = false, xw = G->ep > 1 && gen_is_expert(G, I->w[0]); /* all experts or none */
    for (int w = 0; w < I->nw; w++)
        tied |= G->g->t[I->w[w]].section != E->si_sec[si];
    if (tied ? gen_push(&E->z3tied, &E->nz3tied, &E->capz3tied, id)
        : xw ? gen_push(&E->z3xdeps, &E->nz3x, &E->capz3x, id) || (last && G->edp < 2 && gen_push(&E->alldeps, &E->nall, &E->capall, id))
             : gen_push(&E->z3deps, &E->nz3, &E->capz3, id))
        E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
}

/* ZeRO-3: reduce-scatter of section instance si's gradients noted by z3_note (expert weights
 * over EDP, the others over DP; no collective when the group is one rank), recorded as a bucket
 * for the optimizer after the last micro-batch. */
static void z3_reduce(emitter *E, int si, uint32_t j, bool expert, bool last)
{
    gen *G = E->G;
    uint64_t x = G->sec_x[E->si_sec[si]], n = expert ? x : G->sec_own[E->si_sec[si]] - x;
    uint64_t d = expert ? G->edp : G->dpw, id = 0;
    if (d > 1) {
        char lab[32], name[160] = "";
        gen_si_label(E, si, lab, sizeof lab);
        if (E->names)
            snprintf(name, sizeof name, "mb%u.%s.%sgrad_reduce_scatter", j, lab, expert ? "expert_" : "");
        E->phase = P_BWD;
        id = E->next_id;
        gen_put_coll(E, name, ETK_COLL_REDUCE_SCATTER, (int64_t)((n + d - 1) / d * d * G->cfg->grad_bytes),
                 expert ? ETK_GEN_GROUP_EDP : ETK_GEN_GROUP_DP, expert ? E->z3xdeps : E->z3deps,
                 (uint32_t)(expert ? E->nz3x : E->nz3));
    }
    *(expert ? &E->nz3x : &E->nz3) = 0;
    if (last) {
        bucket_append(E, n, id);
        if (!E->rc)
            E->bucket_x[E->nbuckets - 1] = expert;
    }
}

/* Ids of the backward instructions of section instance si, micro-batch j (0: not emitted yet),
 * after a header of 17 slots holding the output-gradient ids (count, then up to 16). Kept from
 * the backward unit to its deferred W unit, and as the previous micro-batch's for accumulation. */
uint64_t *gen_bid_get(emitter *E, int si, uint32_t j)
{
    size_t k = (size_t)si * E->G->m + j;
    if (!E->bid[k]) {
        const gprog *P = gen_si_prog(E, si);
        E->bid[k] = calloc((size_t)(P->n - P->nfwd) + 17, sizeof(uint64_t));
        if (!E->bid[k] && !E->rc)
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    }
    return E->bid[k];
}
int gen_emit_bwd(emitter *E, int si, uint32_t j, const uint64_t *gd, int ngd, uint64_t *out, bool last, int mode)
{
    gen *G = E->G;
    const gprog *P = gen_si_prog(E, si);
    size_t k0 = (size_t)si * G->m + j;
    uint64_t *bid = gen_bid_get(E, si, j), *pbid = j ? E->bid[k0 - 1] : NULL;
    if (!bid)
        return 0;
    if (mode == BW_W) {
        ngd = (int)bid[0];
        gd = bid + 1;
    } else {
        bid[0] = (uint64_t)ngd;
        memcpy(bid + 1, gd, sizeof(uint64_t) * (size_t)(ngd < 16 ? ngd : 16));
    }
    uint64_t *bi = bid + 17, *pbi = pbid ? pbid + 17 : NULL;
    uint64_t ag = mode == BW_W ? 0 : gen_emit_gather(E, si, j, "param_all_gather_bwd");
    uint64_t fb = E->fbase[k0], fin = E->fin[k0], bb = E->next_id;
    if (mode != BW_W)
        E->prev_sec_base = bb;
    char lab[32], name[160] = "";
    gen_si_label(E, si, lab, sizeof lab);
    uint64_t deps[96];
    int last_w = -1;
    for (int k = P->nfwd; k < P->n; k++)
        if (is_w(&P->v[k]))
            last_w = k;
    for (int k = P->nfwd; k < P->n && !E->rc; k++) {
        const ginst *I = &P->v[k];
        if ((mode == BW_B && is_w(I)) || (mode == BW_W && !is_w(I)))
            continue;
        uint32_t nd = 0;
        for (int d = 0; d < I->ndeps && nd < 80; d++) {
            int32_t x = I->deps[d];
            if (x >= P->nfwd) {
                if (bi[x - P->nfwd])
                    deps[nd++] = bi[x - P->nfwd];
            } else if (x >= 0)
                deps[nd++] = fb + (uint64_t)x;
            else if (x == DEP_IN && fin)
                deps[nd++] = fin;
            else if (x == DEP_GRAD)
                for (int g = 0; g < ngd && nd < 90; g++)
                    deps[nd++] = gd[g];
        }
        /* gradient accumulation: a weight-gradient node adds into the buffer the same node of
         * the previous micro-batch wrote, so it follows it (and the DP buckets, which depend on
         * the last micro-batch's, transitively follow every micro-batch) */
        if (I->nw && pbi && pbi[k - P->nfwd])
            deps[nd++] = pbi[k - P->nfwd];
        if (ag && gen_inst_uses_weight(I))
            deps[nd++] = ag;
        if (E->names)
            snprintf(name, sizeof name, "mb%u.%s.%s", j, lab, I->name);
        E->phase = I->phase;
        uint64_t id = E->next_id;
        bi[k - P->nfwd] = id;
        E->unit_last = id;
        /* the forward's saved activations are freed with the last backward node (zb-h1: with
         * the last W node, which still reads them) */
        if (mode == BW_ALL || (mode == BW_B && last_w < 0) ? k == P->n - 1 : mode == BW_W && k == last_w)
            E->mem_free_pending += P->saved_bytes;
        gen_put_inst(E, I, name, deps, nd);
        if (G->z3 && I->nw) {
            /* ZeRO-3: this section instance's gradients are reduce-scattered after its backward,
             * every micro-batch; a tied table's gradient from the head joins the embedding's */
            bool tied = false;
            for (int w = 0; w < I->nw; w++)
                tied |= G->g->t[I->w[w]].section != E->si_sec[si];
            if (mode != BW_B) /* zb-h1: with the W unit, which ends the section's gradients */
                z3_note(E, si, I, id, last);
            for (int w = 0; w < I->nw && last; w++) {
                int t = I->w[w];
                if (G->cfg->sp && G->cfg->tp > 1 && G->g->t[t].split < 0 && !tied && !xfold(G, t)) {
                    bool first_use = true;
                    for (int k2 = P->nfwd; k2 < k; k2++)
                        for (int w2 = 0; w2 < P->v[k2].nw; w2++)
                            first_use &= P->v[k2].w[w2] != t;
                    if (first_use) {
                        E->repl_elems += gen_weight_elems_rank(G, t);
                        if (gen_push(&E->repl, &E->nrepl, &E->caprepl, id))
                            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
                    }
                }
            }
        } else if (last && I->nw) {
            /* gradient of these weights is final for this micro-batch: bucket it. A weight tied
             * across sections on this stage (output layer = embedding) waits for its last use;
             * on separate stages its gradient is first all-reduced over the embedding group. */
            bool tied_here = false, tied_emb = false;
            for (int w = 0; w < I->nw; w++) {
                int t = I->w[w];
                bool tied_later = G->g->t[t].section != E->si_sec[si] && E->si_sec[0] == G->g->t[t].section;
                if (tied_later) {
                    tied_here = true;
                    continue;
                }
                bool first_use = true;
                for (int k2 = P->nfwd; k2 < k; k2++)
                    for (int w2 = 0; w2 < P->v[k2].nw; w2++)
                        first_use &= P->v[k2].w[w2] != t;
                if (G->emb_group && G->g->t[t].section == G_SEC_EMBED && G->g->t[t].split >= 0) {
                    /* the tied table (the only split embedding weight): its gradient is summed over
                     * the embedding group after the pipeline drains, then bucketed (gen_emit_optimizer) */
                    tied_emb = true;
                    if (first_use)
                        E->emb_elems += gen_weight_elems_rank(G, t);
                    continue;
                }
                if (G->cfg->sp && G->cfg->tp > 1 && G->g->t[t].split < 0 && first_use && !xfold(G, t)) {
                    E->repl_elems += gen_weight_elems_rank(G, t);
                    if (gen_push(&E->repl, &E->nrepl, &E->caprepl, id))
                        E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
                }
                if (first_use)
                    (G->ep > 1 && gen_is_expert(G, t) ? &E->xcur : &E->cur)->elems += gen_weight_elems_rank(G, t);
            }
            bucket *bk = G->ep > 1 && gen_is_expert(G, I->w[0]) ? &E->xcur : &E->cur; /* a node's weights are all experts or none */
            if (tied_emb) {
                if (gen_push(&E->embdeps, &E->nembdeps, &E->capembdeps, id))
                    E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            } else if (tied_here) {
                if (gen_push(&E->wdeps, &E->nwdeps, &E->capwdeps, id))
                    E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            } else if (gen_push(&bk->deps, &bk->ndeps, &bk->cap, id) ||
                       gen_push(&E->alldeps, &E->nall, &E->capall, id)) {
                E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            }
        }
    }
    for (int k = P->nfwd; G->z3 && mode == BW_W && k < P->n; k++)
        if (P->v[k].nw && !is_w(&P->v[k]) && bi[k - P->nfwd]) /* the B unit's weight gradients (norms) */
            z3_note(E, si, &P->v[k], bi[k - P->nfwd], last);
    if (G->z3 && !E->rc && (E->nz3 || (E->si_sec[si] == G_SEC_EMBED && E->nz3tied))) {
        if (E->si_sec[si] == G_SEC_EMBED) {
            for (size_t i = 0; i < E->nz3tied && !E->rc; i++)
                if (gen_push(&E->z3deps, &E->nz3, &E->capz3, E->z3tied[i]))
                    E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            E->nz3tied = 0;
        }
        z3_reduce(E, si, j, false, last);
    }
    if (G->z3 && !E->rc && E->nz3x) /* --ep: the expert gradients over EDP */
        z3_reduce(E, si, j, true, last);
    if (last && !E->rc && !G->z3) {
        if (E->si_sec[si] == G_SEC_EMBED && E->nwdeps) {
            for (size_t i = 0; i < E->nwdeps; i++)
                if (gen_push(&E->cur.deps, &E->cur.ndeps, &E->cur.cap, E->wdeps[i]))
                    E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            E->nwdeps = 0;
        }
        bucket_flush(E, false);
    }
    (void)bb;
    /* the previous micro-batch's ids are no longer needed once this one's are all emitted */
    if (mode != BW_B && pbid) {
        free(pbid);
        E->bid[k0 - 1] = NULL;
    }
    int n = 0;
    for (int k = 0; k < P->nbwd_out && mode != BW_W; k++) {
        int32_t x = P->bwd_out[k];
        if (x >= P->nfwd)
            out[n++] = bi[x - P->nfwd];
        else if (x >= 0)
            out[n++] = fb + (uint64_t)x;
        else if (x == DEP_GRAD)
            for (int g = 0; g < ngd && n < 16; g++)
                out[n++] = gd[g];
    }
    return n;
}

static void bucket_flush_one(emitter *E, bucket *bk, bool force, bool expert)
{
    gen *G = E->G;
    const etk_gen_config *c = G->cfg;
    uint64_t bytes = bk->elems * c->grad_bytes;
    if (!bk->elems || (!force && bytes < G->bucket_bytes) || E->rc)
        return;
    uint64_t elems = bk->elems, d = expert ? G->edp : G->dpw;
    int axis = expert ? ETK_GEN_GROUP_EDP : ETK_GEN_GROUP_DP;
    const char *pre = expert ? "edp.expert_grad_bucket" : "dp.grad_bucket";
    uint64_t id = 0;
    if (d > 1) {
        char name[64];
        uint64_t padded = (elems + d - 1) / d * d; /* shards of equal size */
        E->phase = P_BWD;
        id = E->next_id;
        if (c->zero) {
            snprintf(name, sizeof name, "%s%zu.reduce_scatter", pre, E->nbuckets);
            gen_put_coll(E, name, ETK_COLL_REDUCE_SCATTER, (int64_t)(padded * c->grad_bytes), axis, bk->deps,
                     (uint32_t)bk->ndeps);
        } else {
            snprintf(name, sizeof name, "%s%zu.all_reduce", pre, E->nbuckets);
            gen_put_coll(E, name, ETK_COLL_ALL_REDUCE, (int64_t)(elems * c->grad_bytes), axis, bk->deps, (uint32_t)bk->ndeps);
        }
    }
    bucket_append(E, elems, id);
    if (!E->rc)
        E->bucket_x[E->nbuckets - 1] = expert;
    bk->elems = 0;
    bk->ndeps = 0;
}

static void bucket_flush(emitter *E, bool force)
{
    bucket_flush_one(E, &E->cur, force, false);
    bucket_flush_one(E, &E->xcur, force, true);
}

/* Record a reduced gradient bucket (elements per rank, id of its collective, 0: none) for the optimizer. */
static void bucket_append(emitter *E, uint64_t elems, uint64_t id)
{
    if (E->rc)
        return;
    if (E->nbuckets == E->capbuckets) {
        size_t cap = E->capbuckets ? E->capbuckets * 2 : 16;
        uint64_t *a = realloc(E->bucket_elems, cap * sizeof *a), *b = a ? realloc(E->bucket_ids, cap * sizeof *b) : NULL;
        if (a)
            E->bucket_elems = a;
        if (b)
            E->bucket_ids = b;
        uint8_t *x = b ? realloc(E->bucket_x, cap) : NULL;
        if (!a || !b || !x) {
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            return;
        }
        E->bucket_x = x;
        E->capbuckets = cap;
    }
    E->bucket_elems[E->nbuckets] = elems;
    E->bucket_x[E->nbuckets] = 0;
    E->bucket_ids[E->nbuckets++] = id;
}

/* ranks sharing bucket b's gradients: DP x CP, or EDP for expert weights */
static uint64_t bucket_div(const emitter *E, size_t b)
{
    return E->bucket_x[b] ? E->G->edp : E->G->dpw;
}

void gen_emit_optimizer(emitter *E, uint64_t unit_end)
{
    gen *G = E->G;
    const etk_gen_config *c = G->cfg;
    bucket_flush(E, true);
    if (E->nembdeps && !E->rc) {
        /* tied output layer on separate stages: first and last stage sum its gradient (after the
         * pipeline has drained, so the collective cannot block a pipeline transfer), then it
         * joins the DP reduction as a bucket of its own */
        /* it also waits for the stage's last pipeline transfer: a simulator that runs one
         * communication at a time per rank (ASTRA-sim) would otherwise start it while the last
         * stage still owes the pipeline a gradient, and the first stage would never join */
        if (E->last_p2p && gen_push(&E->embdeps, &E->nembdeps, &E->capembdeps, E->last_p2p))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
        uint64_t id = E->next_id;
        E->phase = P_BWD;
        gen_put_coll(E, "embedding_grad.all_reduce", ETK_COLL_ALL_REDUCE, (int64_t)(E->emb_elems * c->grad_bytes),
                 ETK_GEN_GROUP_EMB, E->embdeps, (uint32_t)E->nembdeps);
        E->cur.ndeps = 0;
        E->cur.elems = E->emb_elems;
        if (gen_push(&E->cur.deps, &E->cur.ndeps, &E->cur.cap, id) || gen_push(&E->alldeps, &E->nall, &E->capall, id))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
        bucket_flush(E, true);
    }
    if (E->rc)
        return;
    uint64_t elems = 0, shard = 0;
    for (size_t b = 0; b < E->nbuckets; b++) {
        elems += E->bucket_elems[b];
        shard += (E->bucket_elems[b] + bucket_div(E, b) - 1) / bucket_div(E, b);
    }
    uint64_t n = c->zero ? shard : elems;
    /* the optimizer waits for every bucket (dp > 1) or every last gradient node (dp == 1) */
    bool unreduced = false; /* a bucket without collective (its group is one rank) */
    for (size_t b = 0; b < E->nbuckets; b++)
        unreduced |= !E->bucket_ids[b];
    size_t nd = 0, cap = 0;
    uint64_t *deps = NULL;
    for (size_t i = 0; i < E->nbuckets && !E->rc; i++)
        if (E->bucket_ids[i] && gen_push(&deps, &nd, &cap, E->bucket_ids[i]))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    for (size_t i = 0; i < E->nall && unreduced && !E->rc; i++)
        if (gen_push(&deps, &nd, &cap, E->alldeps[i]))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    if (E->repl_elems && !E->rc) {
        /* sequence parallelism: each TP rank saw only its sequence slice, so gradients of the
         * TP-replicated weights (norms, biases after row-parallel GEMMs) are summed over the TP
         * group once per step (Megatron's all-reduce of layernorm grads), coalesced */
        uint64_t id = E->next_id;
        E->phase = P_BWD;
        gen_put_coll(E, "sp_replicated_grads.all_reduce", ETK_COLL_ALL_REDUCE, (int64_t)(E->repl_elems * c->grad_bytes),
                 ETK_GEN_GROUP_TP, E->repl, (uint32_t)E->nrepl);
        if (gen_push(&deps, &nd, &cap, id))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    }
    if (!nd && unit_end && gen_push(&deps, &nd, &cap, unit_end))
        E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    if (E->rc) {
        free(deps);
        return;
    }
    E->phase = P_OPT;
    uint64_t opt = E->next_id;
    /* reads and writes fp32 master weights, Adam m and v; reads the gradient, writes the parameter */
    ginst adam = {.flops = (double)n * ADAM_FLOPS_PER_PARAM, .bytes = n * (2 * 12 + c->grad_bytes + 2)};
    E->mem_alloc_pending += E->opt_step_bytes; /* held only while the step runs */
    E->mem_free_pending += E->opt_step_bytes;
    gen_put_comp(E, "optimizer.adam", &adam, deps, (uint32_t)nd);
    free(deps);
    if (c->zero && c->zero < 3) /* ZeRO-3 gathers parameters when a layer runs */
        for (size_t b = 0; b < E->nbuckets && !E->rc; b++) {
            uint64_t d = bucket_div(E, b);
            if (d < 2)
                continue;
            char name[64];
            snprintf(name, sizeof name, "%s%zu.all_gather", E->bucket_x[b] ? "edp.expert_param_bucket" : "dp.param_bucket",
                     b);
            gen_put_coll(E, name, ETK_COLL_ALL_GATHER, (int64_t)((E->bucket_elems[b] + d - 1) / d * 2),
                     E->bucket_x[b] ? ETK_GEN_GROUP_EDP : ETK_GEN_GROUP_DP, &opt, 1);
        }
}
