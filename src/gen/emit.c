/* emit.c — training trace emission (see train.h): the emitter that puts Chakra nodes (compute,
 * collectives, pipeline and CP-ring send/recv), the forward pass of a section instance, and
 * emit_stage, which lays one pipeline stage's micro-batches out under the GPipe / 1F1B /
 * interleaved / zero-bubble schedules. The backward pass and the gradient reduction are grad.c's. */
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

/* Forward of section instance si for micro-batch j; input: the instruction id feeding it (0 none). */
static uint64_t emit_fwd(emitter *E, int si, uint32_t j, uint64_t input)
{
    const gprog *P = gen_si_prog(E, si);
    uint64_t ag = gen_emit_gather(E, si, j, "param_all_gather");
    uint64_t base = E->next_id;
    E->prev_sec_base = base;
    size_t k0 = (size_t)si * E->G->m + j;
    E->fbase[k0] = base;
    E->fin[k0] = input;
    char lab[32], name[160] = "";
    gen_si_label(E, si, lab, sizeof lab);
    uint64_t deps[64];
    E->mem_alloc_pending += P->saved_bytes; /* kept for the backward pass */
    for (int k = 0; k < P->nfwd && !E->rc; k++) {
        const ginst *I = &P->v[k];
        uint32_t nd = 0;
        for (int d = 0; d < I->ndeps && nd < 64; d++) {
            int32_t x = I->deps[d];
            if (x >= 0)
                deps[nd++] = base + (uint64_t)x;
            else if (x == DEP_IN && input)
                deps[nd++] = input;
        }
        if (ag && nd < 64 && gen_inst_uses_weight(I))
            deps[nd++] = ag;
        if (E->names) /* names only for traces that are kept and named */
            snprintf(name, sizeof name, "mb%u.%s.%s", j, lab, I->name);
        E->phase = I->phase;
        gen_put_inst(E, I, name, deps, nd);
    }
    if (P->fwd_out == DEP_IN)
        return input;
    return base + (uint64_t)P->fwd_out;
}

/* "mb<j>.<what>", or "mb<j>.chunk<c>.<what>" with interleaving */
static void p2p_name(const emitter *E, char *buf, size_t n, uint32_t j, int chunk, const char *what)
{
    if (!E->names)
        buf[0] = 0;
    else if (chunk >= 0)
        snprintf(buf, n, "mb%u.chunk%d.%s", j, chunk, what);
    else
        snprintf(buf, n, "mb%u.%s", j, what);
}

/* zb-h1: the weight-gradient GEMMs of micro-batch j (sections in backward order), after the
 * unit ending with `prev`. Returns the unit's last node (or prev when it has none). */
static uint64_t emit_w_unit(emitter *E, const int *cbeg, uint32_t j, uint64_t prev)
{
    E->pending_ctrl = prev;
    E->unit_last = 0;
    for (int si = cbeg[1] - 1; si >= cbeg[0] && !E->rc; si--)
        gen_emit_bwd(E, si, j, NULL, 0, NULL, j == E->G->m - 1, BW_W);
    E->pending_ctrl = 0;
    return E->unit_last ? E->unit_last : prev;
}

/* micro-batch of schedule unit k (forward or backward): (k / (p v)) p + k mod p */
static uint32_t unit_mb(const gen *G, uint32_t k)
{
    return (k / (G->p * G->v)) * G->p + k % G->p;
}

/* Forward unit k: the activation received from the previous virtual stage (0 on the first). */
static uint64_t fwd_recv(emitter *E, uint32_t k)
{
    gen *G = E->G;
    uint32_t ch = (k / G->p) % G->v, j = unit_mb(G, k), q = ch * G->p + E->stage;
    if (q == 0)
        return 0;
    char name[96];
    uint64_t in = E->next_id;
    p2p_name(E, name, sizeof name, j, G->v > 1 ? (int)ch : -1, "recv_activation");
    E->phase = P_FWD;
    gen_put_p2p(E, name, false, E->prev_rank, (int64_t)G->prog[G_SEC_LAYER].out_bytes,
                (int32_t)(2 * ((q - 1) * G->m + j)), NULL, 0);
    return in;
}

/* Forward unit k: its output (id `in`) sent to the next virtual stage (none on the last). */
static void fwd_send(emitter *E, uint32_t k, uint64_t in)
{
    gen *G = E->G;
    uint32_t ch = (k / G->p) % G->v, j = unit_mb(G, k), q = ch * G->p + E->stage;
    if (q + 1 >= G->p * G->v)
        return;
    char name[96];
    uint64_t d = in;
    p2p_name(E, name, sizeof name, j, G->v > 1 ? (int)ch : -1, "send_activation");
    gen_put_p2p(E, name, true, E->next_rank, (int64_t)G->prog[G_SEC_LAYER].out_bytes, (int32_t)(2 * (q * G->m + j)),
                &d, d ? 1 : 0);
}

/* Backward unit k: the output gradient (received from the next virtual stage, or the loss on
 * the last) into gd; returns its count. */
static int bwd_start(emitter *E, uint32_t k, uint64_t *gd)
{
    gen *G = E->G;
    uint32_t ch = G->v - 1 - (k / G->p) % G->v, j = unit_mb(G, k), q = ch * G->p + E->stage;
    if (q + 1 < G->p * G->v) {
        char name[96];
        gd[0] = E->next_id;
        p2p_name(E, name, sizeof name, j, G->v > 1 ? (int)ch : -1, "recv_gradient");
        E->phase = P_BWD;
        gen_put_p2p(E, name, false, E->next_rank, (int64_t)G->prog[G_SEC_LAYER].out_bytes,
                    (int32_t)(2 * (q * G->m + j) + 1), NULL, 0);
    } else {
        /* the loss starts the backward pass */
        size_t hk = (size_t)(E->nsi - 1) * G->m + j;
        gd[0] = E->fbase[hk] + (uint64_t)G->prog[G_SEC_HEAD].fwd_out;
    }
    return 1;
}

/* Backward of section instance si for micro-batch j on the gradient gd (ngd ids, updated). */
static int bwd_step(emitter *E, int si, uint32_t j, uint64_t *gd, int ngd, int mode)
{
    uint64_t o[16];
    int n = gen_emit_bwd(E, si, j, gd, ngd, o, j == E->G->m - 1, mode);
    if (n > 0) {
        memcpy(gd, o, sizeof(uint64_t) * (size_t)n);
        return n;
    }
    return ngd;
}

/* Backward unit k: the input gradient sent to the previous virtual stage (none on the first). */
static void bwd_send(emitter *E, uint32_t k, uint64_t *gd, int ngd)
{
    gen *G = E->G;
    uint32_t ch = G->v - 1 - (k / G->p) % G->v, j = unit_mb(G, k), q = ch * G->p + E->stage;
    if (q == 0)
        return;
    char name[96];
    p2p_name(E, name, sizeof name, j, G->v > 1 ? (int)ch : -1, "send_gradient");
    E->phase = P_BWD;
    gen_put_p2p(E, name, true, E->prev_rank, (int64_t)G->prog[G_SEC_LAYER].out_bytes,
                (int32_t)(2 * ((q - 1) * G->m + j) + 1), gd, (uint32_t)ngd);
}

/* --ep-comm-overlap (Megatron's combined 1F1B, docs/gen.md "EP communication overlap"): forward
 * unit kf and backward unit kb as one unit, layer by layer: the forward of the chunk's i-th
 * section instance, then the backward of its i-th from the end (Megatron pairs forward layer i
 * with backward layer n - 1 - i), each chain on its own data dependencies, so the simulator's
 * compute stream runs one chain's work while the other's all-to-all is on the EP stream. Both
 * chains start after the previous unit (ends e[0], e[1]); e gets this unit's two ends. */
static void emit_pair(emitter *E, const int *cbeg, uint32_t kf, uint32_t kb, uint64_t e[2])
{
    gen *G = E->G;
    uint32_t V = G->p * G->v;
    uint32_t chf = (kf / G->p) % G->v, jf = unit_mb(G, kf);
    uint32_t chb = G->v - 1 - (kb / G->p) % G->v, jb = unit_mb(G, kb);
    /* each chain's first node waits for the previous unit: its receive, or its first section */
    bool fctrl = chf * G->p + E->stage == 0, bctrl = chb * G->p + E->stage == V - 1;
    E->pending_ctrl = e[0];
    E->pending_ctrl2 = e[1];
    uint64_t in = fwd_recv(E, kf);
    E->pending_ctrl = e[0];
    E->pending_ctrl2 = e[1];
    uint64_t gd[16];
    int ngd = bwd_start(E, kb, gd);
    E->pending_ctrl = E->pending_ctrl2 = 0;
    int nF = cbeg[chf + 1] - cbeg[chf], nB = cbeg[chb + 1] - cbeg[chb];
    for (int i = 0; i < (nF > nB ? nF : nB) && !E->rc; i++) {
        if (i < nF) {
            if (fctrl) {
                E->pending_ctrl = e[0];
                E->pending_ctrl2 = e[1];
                fctrl = false;
            }
            in = emit_fwd(E, cbeg[chf] + i, jf, in);
            if (i == nF - 1)
                fwd_send(E, kf, in);
        }
        if (i < nB) {
            if (bctrl) {
                E->pending_ctrl = e[0];
                E->pending_ctrl2 = e[1];
                bctrl = false;
            }
            ngd = bwd_step(E, cbeg[chb + 1] - 1 - i, jb, gd, ngd, BW_ALL);
            if (i == nB - 1)
                bwd_send(E, kb, gd, ngd);
        }
    }
    e[0] = in;
    e[1] = gd[ngd - 1];
}

/* Emit every node of stage `stage` for the rank at (tp_i, cp_i, dp_i). */
int gen_emit_stage(gen *G, uint32_t stage, uint32_t tp_i, uint32_t cp_i, uint32_t dp_i, put_fn put, void *u,
                   etk_gen_stage *st, etk_error *err)
{
    const etk_gen_config *c = G->cfg;
    emitter E;
    memset(&E, 0, sizeof E);
    E.G = G;
    E.stage = stage;
    E.tp_i = tp_i;
    E.dp_i = dp_i;
    E.put = put;
    E.names = put && !c->no_names;
    E.u = u;
    E.err = err;
    E.st = st;
    E.next_id = 1;
    uint32_t p = G->p, m = G->m;
    gen_group_ids(c, tp_i, cp_i, dp_i, stage, E.pg);
    /* the numbering is bind_rank()'s, which the file writer uses for the other ranks */
    uint32_t v = G->v, V = p * v;
    bool has_embed = stage == 0, has_head = stage == p - 1;
    E.nsi = (int)gen_stage_layers(G, stage) + has_embed + has_head;
    E.si_sec = calloc((size_t)E.nsi, sizeof(int));
    E.si_layer = calloc((size_t)E.nsi, sizeof(uint32_t));
    E.si_kept = G->partial ? calloc((size_t)E.nsi, 1) : NULL;
    E.fbase = calloc((size_t)E.nsi * m, sizeof(uint64_t));
    E.fin = calloc((size_t)E.nsi * m, sizeof(uint64_t));
    E.bid = calloc((size_t)E.nsi * m, sizeof(uint64_t *));
    int *cbeg = calloc(v + 1, sizeof(int));
    if (!E.si_sec || !E.si_layer || (G->partial && !E.si_kept) || !E.fbase || !E.fin || !E.bid || !cbeg) {
        E.rc = etk_err(err, ETK_ENOMEM, "out of memory (%u micro-batches x %d sections)", m, E.nsi);
        free(cbeg);
        goto out;
    }
    /* section instances, chunk by chunk: chunk c runs virtual stage q = c*p + stage */
    int k = 0;
    for (uint32_t c = 0; c < v; c++) {
        uint32_t q = c * p + stage;
        cbeg[c] = k;
        if (q == 0)
            E.si_sec[k++] = G_SEC_EMBED;
        uint32_t nrc = gen_chunk_recomputed(G, q);
        for (uint32_t l = 0; l < G->nl[q]; l++) {
            E.si_layer[k] = G->first[q] + l;
            if (E.si_kept) /* partial recompute: the chunk's first nrc layers recomputed */
                E.si_kept[k] = l >= nrc;
            E.si_sec[k++] = G->first[q] + l < G->dense ? G_SEC_DENSE : G_SEC_LAYER;
        }
        if (q == V - 1)
            E.si_sec[k++] = G_SEC_HEAD;
    }
    cbeg[v] = k;
    if (p > 1) {
        /* with interleaving the first stage also receives from the last one (chunk wrap) */
        E.prev_rank = etk_gen_rank_cp(c, tp_i, cp_i, dp_i, (stage + p - 1) % p);
        E.next_rank = etk_gen_rank_cp(c, tp_i, cp_i, dp_i, (stage + 1) % p);
    }
    if (G->cp > 1) {
        E.cp_prev = etk_gen_rank_cp(c, tp_i, (cp_i + G->cp - 1) % G->cp, dp_i, stage);
        E.cp_next = etk_gen_rank_cp(c, tp_i, (cp_i + 1) % G->cp, dp_i, stage);
    }
    /* schedule: units (forward or backward of chunk c, micro-batch j). 1F1B: warm-up forwards,
     * then one forward / one backward, then the remaining backwards; GPipe: all forwards first.
     * Interleaved (v > 1, Megatron): unit k runs chunk (k / p) % v (backward: v - 1 - that) of
     * micro-batch (k / (p v)) p + k % p, warm-up (p - stage - 1) 2 + (v - 1) p. */
    uint32_t total = m * v, warm;
    if (c->schedule == ETK_SCHED_GPIPE)
        warm = total;
    else if (v == 1)
        warm = p - stage - 1 < m ? p - stage - 1 : m;
    else
        warm = (p - stage - 1) * 2 + (v - 1) * p < total ? (p - stage - 1) * 2 + (v - 1) * p : total;
    /* --ep-comm-overlap (Megatron's combined 1F1B): one more warm-up forward, so that each
     * steady-state forward has a backward of an earlier unit to run beside (without it the last
     * stage's forward would be paired with its own backward) */
    bool epo = c->ep_comm_overlap && c->schedule == ETK_SCHED_1F1B;
    if (epo && warm < total)
        warm++;
    uint32_t nf = 0, nb = 0, nw = 0;
    bool zb = c->schedule == ETK_SCHED_ZBH1;
    uint64_t unit_end = 0;
    {   /* static memory, allocated by the stage's first node */
        etk_gen_stage ms;
        memset(&ms, 0, sizeof ms);
        gen_stage_memory(G, stage, &ms);
        E.mem_alloc_pending = ms.weight_bytes + ms.grad_bytes + ms.optimizer_bytes +
                              ms.comm_buffer_bytes;
        E.opt_step_bytes = ms.optimizer_step_bytes;
    }
    uint64_t unit_end2 = 0; /* a paired unit's second end (--ep-comm-overlap) */
    for (uint32_t u2 = 0; u2 < 2 * total && !E.rc; u2++) {
        bool fwd;
        if (nf < warm)
            fwd = true;
        else if (nf == total)
            fwd = false;
        else if (nb == total)
            fwd = true;
        else
            fwd = (nf - warm) == nb; /* steady state: one forward, then one backward */
        E.pending_ctrl = unit_end;
        E.pending_ctrl2 = unit_end2;
        unit_end2 = 0;
        if (fwd && epo && nf >= warm && nb < total) {
            /* --ep-comm-overlap: the steady-state forward and the backward after it as one unit */
            uint64_t e[2] = {unit_end, E.pending_ctrl2};
            emit_pair(&E, cbeg, nf++, nb++, e);
            unit_end = e[0];
            unit_end2 = e[1];
            u2++;
            continue;
        }
        uint32_t kk = fwd ? nf++ : nb++;
        if (fwd) {
            uint64_t in = fwd_recv(&E, kk);
            uint32_t ch = (kk / p) % v;
            for (int si = cbeg[ch]; si < cbeg[ch + 1] && !E.rc; si++)
                in = emit_fwd(&E, si, unit_mb(G, kk), in);
            /* the next unit waits for this unit's compute, not for its send: a send and the
             * next receive are posted together (Megatron's send_forward_recv_backward), so
             * rendezvous sends cannot deadlock adjacent stages */
            unit_end = in;
            fwd_send(&E, kk, in);
        } else {
            uint64_t gd[16];
            int ngd = bwd_start(&E, kk, gd);
            uint32_t ch = v - 1 - (kk / p) % v, j = unit_mb(G, kk);
            for (int si = cbeg[ch + 1] - 1; si >= cbeg[ch] && !E.rc; si--)
                ngd = bwd_step(&E, si, j, gd, ngd, zb ? BW_B : BW_ALL);
            unit_end = gd[ngd - 1];
            bwd_send(&E, kk, gd, ngd);
            /* zb-h1: the W unit of micro-batch j - stage (stage s defers its weight gradients by
             * s micro-batches: activations held stay within 1F1B's peak of p micro-batches) */
            while (zb && nw < nb && nb - nw > stage && !E.rc)
                unit_end = emit_w_unit(&E, cbeg, nw++, unit_end);
        }
    }
    while (zb && nw < nb && !E.rc) /* the deferred W units fill the drain */
        unit_end = emit_w_unit(&E, cbeg, nw++, unit_end);
    free(cbeg);
    E.pending_ctrl = 0;
    if (!E.rc)
        gen_emit_optimizer(&E, unit_end);
out:
    free(E.si_sec);
    free(E.si_kept);
    free(E.si_layer);
    free(E.fbase);
    for (size_t i = 0; E.bid && i < (size_t)E.nsi * m; i++)
        free(E.bid[i]);
    free(E.bid);
    free(E.fin);
    free(E.cur.deps);
    free(E.xcur.deps);
    free(E.bucket_x);
    free(E.bucket_elems);
    free(E.bucket_ids);
    free(E.wdeps);
    free(E.alldeps);
    free(E.repl);
    free(E.embdeps);
    free(E.z3deps);
    free(E.z3xdeps);
    free(E.z3tied);
    return E.rc;
}
