/* infer.c — inference trace synthesis (`etkit gen --mode inference`, docs/gen.md "Inference"):
 * the prefill of B prompts of P tokens and N decode steps of one token per sequence with a KV
 * cache, under TP, PP and EP (DP: independent replicas, which never communicate).
 *
 * The block graph (model.h) is lowered by lower.c as for training, forward only and without
 * recompute, sequence or context parallelism: the prefill graph with s = t = P (b = B / M
 * sequences per pipeline micro-batch), the decode graph with s = 1 new token attending over the
 * key sequence t = P + i (decode step i): lower.c counts the K and V operands of the attention
 * GEMMs at t / s times their size, i.e. the KV cache read (memory-bound, visible to the compute
 * model through tensor_size). Decode step programs differ only in their numbers, which are
 * affine in t: the layer is lowered at t = P + 1, P + 2 and P + 3, and step i uses
 * v(P + 1) + (i - 1) (v(P + 2) - v(P + 1)) once the three points are checked to be collinear
 * (otherwise every step is lowered). Decode steps lower the block's decode_layer /
 * decode_dense_layer sections when it has them (DeepSeek: MLA absorbed into the query and the
 * output, attention over the cached latent). MoE layers are lowered with routed experts
 * (glower_opts.routed: b s topk rows, no capacity padding; the weights of the expected distinct
 * experts read). The head runs on the last position of each sequence only
 * (final norm and LM head, no loss), then TP ranks all-gather their vocabulary slices of the
 * logits and sample the next token.
 *
 * Each stage is a rank class (as in training): for every phase (prefill, decode1..decodeN) and
 * micro-batch it receives the activation from the previous stage (stage 0 of a decode step: the
 * token sampled by the last stage in the previous phase, sent back over the pipeline; with one
 * stage a data dependency on that sample node), runs its sections and sends its output on.
 * Units are chained on a stage by control dependencies. Node names are
 * "<phase>/mb<j>.<section>.<op>" with phase "prefill" or "decode<i>": the simulator reads the
 * phases from them (TTFT, TPOT; docs/sim.md).
 *
 * Nodes go to a put_fn as they are made (train.h's signature): the trace of an in-memory
 * workload (gen_put_trace), or, when writing files, the stage's class encoder directly
 * (gen_write_streamed with stream_cb), so no trace of the representative is held. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen/attrs.h"
#include "gen/infer.h"
#include "gen/lower.h"
#include "gen/train.h"

typedef struct infer {
    const etk_gen_config *cfg;
    etk_model lm;               /* the model lowered: KV heads raised to TP when TP exceeds them */
    uint32_t kv_rep;            /* TP ranks holding each KV head (1: none replicated) */
    etk_gen_summary ts;         /* the training plan's summary: stage layers and parameters */
    etk_arena *a;
    etk_graph *gp, *gd;         /* prefill graph (s = t = P), decode graph (s = 1, t = ctx) */
    int key;                    /* the key-sequence letter of the decode graph (t) */
    glower_opts o;
    /* per layer kind [0]: the block's layer, [1]: its dense_layer (DeepSeek's first dense
     * layers; lowered only when the model has dense_layers) */
    int nkinds;
    gprog pre_embed, pre_layer[2]; /* prefill */
    gprog dec_embed, head;      /* decode embedding; head on one position per sequence */
    gprog dec1[2], dec2[2];     /* decode layer at ctx = P + 1 and P + 2 */
    bool affine[2];
    ginst *scratch[2];          /* the decode layer's forward at the current step */
    etk_arena *sa[2];           /* scratch arenas (non-affine fallback) */
    int head_n;                 /* head instructions before the loss */
    int32_t head_out;
    uint32_t p, M, b, N, P;
    uint64_t wbytes;            /* bytes per weight element */
} infer;

static void infer_free(infer *I)
{
    etk_gen_summary_free(&I->ts);
    etk_graph_free(I->gp);
    etk_graph_free(I->gd);
    etk_arena_free(I->a);
    for (int k = 0; k < 2; k++) {
        etk_arena_free(I->sa[k]);
        free(I->scratch[k]);
    }
}

/* the letter a matmul reads the stream's sequence dimension under (the key sequence), -1 */
static int key_letter(const etk_graph *g)
{
    const gsection *S = &g->sec[G_SEC_LAYER];
    for (int j = 0; j < S->nops; j++) {
        const gop *op = &S->ops[j];
        for (int i = 0; op->kind == G_MATMUL && i < op->nin; i++) {
            const gtensor *T = &g->t[op->in[i]];
            if (T->weight || op->eqn[i] != T->nd)
                continue;
            for (int k = 0; k < T->nd; k++)
                if (T->dims[k] == g->stream_seq && op->eq[i][k] != g->stream_seq)
                    return op->eq[i][k];
        }
    }
    return -1;
}

static const int kind_sec[2] = {G_SEC_LAYER, G_SEC_DENSE};

/* the section decode steps compute layer kind with: the block's decode form when it has one
 * (DeepSeek's MLA absorbed into the query and output, decode_layer / decode_dense_layer) */
static int decode_sec(const infer *I, int kind)
{
    if (kind == 0)
        return I->gd->decode.nops ? G_SEC_DECODE : G_SEC_LAYER;
    return I->gd->decode_dense.nops ? G_SEC_DECODE_DENSE : G_SEC_DENSE;
}

static int lower_at(infer *I, int kind, etk_arena *a, int64_t ctx, gprog *out, etk_error *err)
{
    if (I->key >= 0)
        I->gd->dim[I->key] = ctx;
    return etk_lower_section(I->gd, decode_sec(I, kind), &I->o, a, out, err);
}

static bool same_shape(const gprog *x, const gprog *y)
{
    if (x->nfwd != y->nfwd || x->fwd_out != y->fwd_out)
        return false;
    for (int k = 0; k < x->nfwd; k++)
        if (strcmp(x->v[k].name, y->v[k].name) || x->v[k].ndeps != y->v[k].ndeps)
            return false;
    return true;
}

/* The lowering counts an embedding lookup as reading its whole (vocabulary-split) table; a
 * lookup reads the rows of its tokens: b s h elements, and writes as many. In decode steps the
 * table read would otherwise dominate. */
static void embed_lookup_bytes(const etk_graph *g, gprog *pr)
{
    const gsection *S = &g->sec[G_SEC_EMBED];
    for (int j = 0; j < S->nops; j++)
        for (int k = 0; S->ops[j].kind == G_EMBEDDING && k < pr->nfwd; k++)
            if (pr->v[k].type == ETK_NODE_COMP && !strcmp(pr->v[k].name, S->ops[j].name))
                pr->v[k].bytes = 2 * (uint64_t)etk_graph_elems(g, S->ops[j].out) * 2;
}

static int infer_init(infer *I, const etk_gen_config *cfg, etk_error *err)
{
    memset(I, 0, sizeof *I);
    I->cfg = cfg;
    I->key = -1;
    if (!cfg->n_ranks || !cfg->micro_batches || !cfg->batch)
        return etk_err(err, ETK_EINVAL, "plan not checked: call etk_gen_check first");
    /* TP beyond the KV heads: each rank holds one KV head, each head on tp / kv_heads ranks
     * (the K/V projections and cache replicated); lowered as a model with tp KV heads */
    I->lm = cfg->model;
    I->kv_rep = 1;
    if (strcmp(cfg->model.arch, "deepseek") && cfg->tp > cfg->model.kv_heads) {
        I->kv_rep = (uint32_t)(cfg->tp / cfg->model.kv_heads);
        I->lm.kv_heads = cfg->tp;
    }
    /* stage layers and parameters: those of the same model and TP/PP/EP plan in training */
    etk_gen_config tc = *cfg;
    tc.model = I->lm;
    tc.mode = ETK_GEN_MODE_TRAINING;
    tc.micro_batch = 1;
    tc.global_batch = cfg->dp;
    tc.micro_batches = 1;
    int rc = gen_train_summarize(&tc, &I->ts, err);
    if (rc)
        return rc;
    I->p = cfg->pp;
    I->M = cfg->infer_micro_batches;
    I->b = cfg->batch / I->M;
    I->N = cfg->decode_steps;
    I->P = cfg->prompt_len;
    I->wbytes = strcmp(cfg->precision, "fp8") ? 2 : 1;
    etk_model mp = I->lm, md = I->lm;
    mp.seq = I->P;
    md.seq = 1;
    I->a = etk_arena_new(0);
    if (!I->a)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    if ((rc = etk_graph_load(&mp, I->b, &I->gp, err)) || (rc = etk_graph_load(&md, I->b, &I->gd, err)))
        return rc;
    I->key = key_letter(I->gd);
    I->o = (glower_opts){.tp = cfg->tp, .cp = 1, .ep = cfg->ep ? cfg->ep : 1, .sp = false,
                         .recompute = ETK_RECOMPUTE_NONE, .act_bytes = 2,
                         .gemm_bytes = strcmp(cfg->precision, "fp8") ? 0 : 1, .kv_bytes = (int)cfg->kv_bytes,
                         .routed = true};
    I->nkinds = I->lm.dense_layers > 0 ? 2 : 1;
    if ((rc = etk_lower_section(I->gp, G_SEC_EMBED, &I->o, I->a, &I->pre_embed, err)) ||
        (rc = etk_lower_section(I->gd, G_SEC_EMBED, &I->o, I->a, &I->dec_embed, err)) ||
        (rc = etk_lower_section(I->gd, G_SEC_HEAD, &I->o, I->a, &I->head, err)))
        return rc;
    /* --attention flash: the prefill's attention is one fused kernel; decode attention stays the
     * unfused ops, which are bound by reading the KV cache as a flash-decoding kernel is */
    glower_opts po = I->o;
    po.flash = cfg->attention == ETK_ATTN_FLASH;
    for (int k = 0; k < I->nkinds; k++)
        if ((rc = etk_lower_section(I->gp, kind_sec[k], &po, I->a, &I->pre_layer[k], err)) ||
            (rc = lower_at(I, k, I->a, (int64_t)I->P + 1, &I->dec1[k], err)) ||
            (rc = lower_at(I, k, I->a, (int64_t)I->P + 2, &I->dec2[k], err)))
            return rc;
    embed_lookup_bytes(I->gp, &I->pre_embed);
    embed_lookup_bytes(I->gd, &I->dec_embed);
    /* the head without the loss: its instructions come last in the head's forward */
    const gsection *H = &I->gd->sec[G_SEC_HEAD];
    const char *loss = NULL;
    for (int j = 0; j < H->nops; j++)
        if (H->ops[j].kind == G_LOSS)
            loss = H->ops[j].name;
    I->head_n = I->head.nfwd;
    for (int k = 0; loss && k < I->head.nfwd; k++)
        if (!strncmp(I->head.v[k].name, loss, strlen(loss))) {
            I->head_n = k;
            break;
        }
    I->head_out = I->head_n - 1;
    for (int k = I->head_n - 1; k >= 0; k--)
        if (I->head.v[k].type == ETK_NODE_COMP) {
            I->head_out = k;
            break;
        }
    if (I->head_n < 1)
        return etk_err(err, ETK_EFORMAT, "model %s: the head section has no op before its loss", cfg->model.name);
    /* affine in the context length? check a third point */
    for (int kind = 0; kind < I->nkinds; kind++) {
        etk_arena *ta = etk_arena_new(0);
        gprog d3;
        const gprog *d1 = &I->dec1[kind], *d2 = &I->dec2[kind];
        if (!ta)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        rc = lower_at(I, kind, ta, (int64_t)I->P + 3, &d3, err);
        bool aff = !rc && same_shape(d1, d2) && same_shape(d1, &d3);
        for (int k = 0; !rc && aff && k < d1->nfwd; k++) {
            const ginst *x = &d1->v[k], *y = &d2->v[k], *z = &d3.v[k];
            aff = z->flops - y->flops == y->flops - x->flops && z->bytes - y->bytes == y->bytes - x->bytes &&
                  z->comm_bytes - y->comm_bytes == y->comm_bytes - x->comm_bytes;
        }
        etk_arena_free(ta);
        if (rc)
            return rc;
        I->affine[kind] = aff;
        I->scratch[kind] = malloc(sizeof(ginst) * (size_t)d1->nfwd);
        if (!I->scratch[kind])
            return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    return 0;
}

/* The decode layer's forward instructions at decode step i (context P + i). */
static const ginst *dec_layer(infer *I, int kind, uint32_t i, etk_error *err)
{
    const gprog *x = &I->dec1[kind], *y = &I->dec2[kind];
    if (!I->affine[kind]) {
        gprog g;
        etk_arena_free(I->sa[kind]);
        if (!(I->sa[kind] = etk_arena_new(0)) || lower_at(I, kind, I->sa[kind], (int64_t)I->P + i, &g, err))
            return NULL;
        if (!same_shape(&g, x)) {
            etk_err(err, ETK_EFORMAT, "model %s: the decode layer changes shape with the context length",
                    I->cfg->model.name);
            return NULL;
        }
        return g.v;
    }
    double k = (double)i - 1;
    ginst *o = I->scratch[kind];
    for (int n = 0; n < x->nfwd; n++) {
        o[n] = x->v[n];
        o[n].flops = x->v[n].flops + k * (y->v[n].flops - x->v[n].flops);
        o[n].bytes = x->v[n].bytes + (uint64_t)(i - 1) * (y->v[n].bytes - x->v[n].bytes);
        o[n].comm_bytes = x->v[n].comm_bytes + (int64_t)(i - 1) * (y->v[n].comm_bytes - x->v[n].comm_bytes);
    }
    return o;
}

/* ---------- emitter ---------- */
typedef struct iemit {
    infer *I;
    put_fn put;               /* NULL: count only (summary); else each node as it is made: */
    void *u;                  /* into a trace (gen_put_trace) or the file encoder (streamed) */
    etk_gen_stage *st;        /* NULL: no statistics */
    uint32_t stage, prev, next, first, last; /* pipeline peers: previous, next, stage 0, last stage */
    char pg[ETK_GEN_N_GROUP_KINDS][16];
    uint64_t next_id, ctrl, mem_alloc;
    uint32_t phase;           /* 0: prefill, i: decode step i */
    uint64_t *sample;         /* per micro-batch: the latest sample node (one stage) */
    etk_error *err;
    int rc;
} iemit;

static uint64_t put(iemit *E, const char *name, int type, const uint64_t *deps, uint32_t nd, etk_attr *attr,
                    uint32_t na)
{
    if (E->rc)
        return 0;
    etk_node n;
    memset(&n, 0, sizeof n);
    n.id = E->next_id++;
    n.name = name;
    n.type = type;
    n.data_deps = deps;
    n.n_data_deps = nd;
    uint64_t c = E->ctrl;
    if (c) {
        n.ctrl_deps = &c;
        n.n_ctrl_deps = 1;
        E->ctrl = 0;
    }
    if (E->mem_alloc) { /* the static memory (weights, KV cache, buffers) from the first node on */
        attr[na++] = ga_u64("mem_alloc_bytes", E->mem_alloc);
        E->mem_alloc = 0;
    }
    n.attr = attr;
    n.n_attr = na;
    etk_gen_stage *s = E->st;
    int64_t v = 0;
    if (s) {
        s->nodes++;
        if (type == ETK_NODE_COMP && E->I->cfg->comp_node_ns) /* etkit plan's bound (every node) */
            s->compute_ns += E->I->cfg->comp_node_ns(E->I->cfg->comp_node_ns_ctx, &n);
        if (type == ETK_NODE_COMP && etk_node_i64(&n, "num_ops", &v)) {
            s->flops += (double)v;
            s->model_flops += (double)v;
            if (E->phase == 0)
                s->prefill_flops += (double)v;
            if (E->phase == 1)
                s->decode_first_flops += (double)v;
            if (E->phase == E->I->N)
                s->decode_last_flops += (double)v;
        }
    }
    if (E->put) {
        int rc = E->put(E->u, &n, E->err);
        if (rc)
            E->rc = rc;
    }
    return n.id;
}

static uint64_t put_comp(iemit *E, const char *name, double flops, uint64_t bytes, bool fp8, bool attn,
                         bool causal, bool grouped, const uint64_t *deps, uint32_t nd)
{
    /* "precision": "fp8" an FP8 GEMM; "op_kind": "attention" a fused FlashAttention kernel,
     * "attn_causal" under a causal mask (prefill); "gemm_grouped" a grouped expert GEMM */
    /* bytes without FLOPs (embedding lookup): num_ops 1, as in gen.c (ASTRA-sim's roofline
     * stalls on 0 / 0); the summary's FLOPs leave it out */
    int64_t ops = (int64_t)(flops + 0.5);
    bool min_op = ops == 0 && bytes > 0;
    etk_attr a[8] = {ga_bool("is_cpu_op", false), ga_i64("num_ops", min_op ? 1 : ops),
                     ga_u64("tensor_size", bytes)};
    uint32_t n = 3;
    if (fp8)
        a[n++] = ga_str("precision", "fp8");
    if (attn)
        a[n++] = ga_str("op_kind", "attention");
    if (attn && causal)
        a[n++] = ga_bool("attn_causal", true);
    if (grouped)
        a[n++] = ga_bool("gemm_grouped", true);
    uint64_t id = put(E, name, ETK_NODE_COMP, deps, nd, a, n);
    etk_gen_stage *s = E->st;
    if (min_op && s) { /* not a real FLOP: the summary leaves it out */
        s->flops -= 1;
        s->model_flops -= 1;
        if (E->phase == 0)
            s->prefill_flops -= 1;
        if (E->phase == 1)
            s->decode_first_flops -= 1;
        if (E->phase == E->I->N)
            s->decode_last_flops -= 1;
    }
    return id;
}

static uint64_t put_coll(iemit *E, const char *name, int coll, int64_t bytes, int group, const uint64_t *deps,
                         uint32_t nd)
{
    etk_attr a[5] = {ga_bool("is_cpu_op", false), ga_i64("comm_type", coll), ga_i64("comm_size", bytes),
                     ga_str("pg_name", E->pg[group])};
    if (E->st && !E->rc) {
        E->st->coll_count[group][coll]++;
        E->st->coll_bytes[group][coll] += (uint64_t)bytes;
    }
    return put(E, name, ETK_NODE_COLL, deps, nd, a, 4);
}

static uint64_t put_p2p(iemit *E, const char *name, bool send, uint32_t peer, int64_t bytes, int32_t tag,
                        const uint64_t *deps, uint32_t nd)
{
    etk_attr a[5] = {ga_bool("is_cpu_op", false), ga_i32(send ? "comm_dst" : "comm_src", (int32_t)peer),
                     ga_i64("comm_size", bytes), ga_i32("comm_tag", tag)};
    if (E->st && !E->rc) {
        *(send ? &E->st->send_count : &E->st->recv_count) += 1;
        *(send ? &E->st->send_bytes : &E->st->recv_bytes) += (uint64_t)bytes;
    }
    return put(E, name, send ? ETK_NODE_SEND : ETK_NODE_RECV, deps, nd, a, 4);
}

static void phase_name(uint32_t phase, char *buf, size_t n)
{
    if (phase)
        snprintf(buf, n, "decode%u", phase);
    else
        snprintf(buf, n, "prefill");
}

/* Forward instructions v[0, n) of a lowered section; returns the id of instruction `out`
 * (DEP_IN: the input itself). */
static uint64_t emit_sec(iemit *E, const ginst *v, int n, int32_t out, const char *lab, uint32_t j, uint64_t input)
{
    uint64_t base = E->next_id, deps[64];
    char ph[24], name[160] = "";
    phase_name(E->phase, ph, sizeof ph);
    for (int k = 0; k < n && !E->rc; k++) {
        const ginst *I = &v[k];
        uint32_t nd = 0;
        for (int d = 0; d < I->ndeps && nd < 64; d++) {
            if (I->deps[d] >= 0)
                deps[nd++] = base + (uint64_t)I->deps[d];
            else if (I->deps[d] == DEP_IN && input)
                deps[nd++] = input;
        }
        if (E->put) /* names only for traces that are kept */
            snprintf(name, sizeof name, "%s/mb%u.%s.%s", ph, j, lab, I->name);
        if (I->type == ETK_NODE_COMP)
            put_comp(E, name, I->flops, I->bytes, I->fp8, I->attn, I->causal, I->grouped, deps, nd);
        else
            put_coll(E, name, I->coll, I->comm_bytes,
                     I->grp == GRP_EP ? ETK_GEN_GROUP_EP : ETK_GEN_GROUP_TP, deps, nd);
    }
    return out == DEP_IN ? input : base + (uint64_t)out;
}

/* tags: activations across boundary q, and the sampled tokens returned to stage 0 */
static int32_t act_tag(const infer *I, uint32_t phase, uint32_t j, uint32_t q)
{
    return (int32_t)(2 * (((uint64_t)phase * I->M + j) * I->p + q));
}
static int32_t tok_tag(const infer *I, uint32_t phase, uint32_t j)
{
    return (int32_t)(2 * ((uint64_t)phase * I->M + j) * I->p + 1);
}

/* One unit: phase E->phase, micro-batch j on this stage. */
static void emit_unit(iemit *E, uint32_t j, const ginst *const layer[2])
{
    infer *I = E->I;
    const etk_gen_stage *ts = &I->ts.stages[E->stage];
    bool dec = E->phase > 0, last = E->stage == I->p - 1;
    char ph[24], name[96] = "", lab[32];
    phase_name(E->phase, ph, sizeof ph);
    uint64_t in = 0;
    int64_t msg = (int64_t)(dec ? I->dec1[0].out_bytes : I->pre_layer[0].out_bytes);
    if (E->stage > 0) {
        if (E->put)
            snprintf(name, sizeof name, "%s/mb%u.recv_activation", ph, j);
        in = put_p2p(E, name, false, E->prev, msg, act_tag(I, E->phase, j, E->stage - 1), NULL, 0);
    } else if (dec && I->p > 1) {
        if (E->put)
            snprintf(name, sizeof name, "%s/mb%u.recv_token", ph, j);
        in = put_p2p(E, name, false, E->last, (int64_t)I->b * 4, tok_tag(I, E->phase, j), NULL, 0);
    } else if (dec) {
        in = E->sample[j]; /* the token this rank sampled in the previous phase */
    }
    if (E->stage == 0) {
        const gprog *em = dec ? &I->dec_embed : &I->pre_embed;
        in = emit_sec(E, em->v, em->nfwd, em->fwd_out, "embed", j, in);
    }
    for (uint32_t l = 0; l < ts->layers && !E->rc; l++) {
        uint32_t li = ts->first_layer + l;
        int kind = (int64_t)li < I->lm.dense_layers ? 1 : 0; /* DeepSeek's first layers are dense */
        const gprog *L = dec ? &I->dec1[kind] : &I->pre_layer[kind];
        snprintf(lab, sizeof lab, "L%u", li);
        in = emit_sec(E, dec ? layer[kind] : L->v, L->nfwd, L->fwd_out, lab, j, in);
    }
    if (!last) {
        uint64_t unit_end = in;
        if (E->put)
            snprintf(name, sizeof name, "%s/mb%u.send_activation", ph, j);
        put_p2p(E, name, true, E->next, msg, act_tag(I, E->phase, j, E->stage), &in, 1);
        E->ctrl = unit_end; /* the next unit follows this unit's compute, not its send */
        return;
    }
    /* the last position of each sequence through the head, then sampling */
    in = emit_sec(E, I->head.v, I->head_n, I->head_out, "head", j, in);
    int64_t V = I->cfg->model.vocab, tp = I->cfg->tp;
    if (tp > 1) {
        if (E->put)
            snprintf(name, sizeof name, "%s/mb%u.sample.logits_all_gather", ph, j);
        in = put_coll(E, name, ETK_COLL_ALL_GATHER, (int64_t)I->b * (V / tp) * 2, ETK_GEN_GROUP_TP, &in, 1);
    }
    if (E->put)
        snprintf(name, sizeof name, "%s/mb%u.sample", ph, j);
    /* argmax / top-p over the vocabulary: one comparison per logit */
    uint64_t smp = put_comp(E, name, (double)I->b * (double)V, (uint64_t)I->b * (uint64_t)V * 2, false, false, false, false, &in, 1);
    E->sample[j] = smp;
    E->ctrl = smp;
    if (E->phase < I->N && I->p > 1) {
        char nph[24];
        phase_name(E->phase + 1, nph, sizeof nph);
        if (E->put)
            snprintf(name, sizeof name, "%s/mb%u.send_token", nph, j);
        put_p2p(E, name, true, E->first, (int64_t)I->b * 4, tok_tag(I, E->phase + 1, j), &smp, 1);
        E->ctrl = smp;
    }
}

/* Static memory of stage s per rank (weights, KV cache, pipeline buffers) into st. */
static void stage_memory(const infer *I, uint32_t s, etk_gen_stage *st)
{
    const etk_gen_config *c = I->cfg;
    const etk_model *m = &I->lm; /* with replicated KV heads: one per rank */
    const etk_gen_stage *ts = &I->ts.stages[s];
    st->params = ts->params;
    st->weight_bytes = ts->params * I->wbytes;
    /* KV cache: B (P + N) tokens of this stage's layers; the KV heads are split over TP (MLA's
     * latent is not per head: every TP rank holds all of it) */
    uint64_t per_layer = etk_model_kv_bytes_per_token(m, (int)c->kv_bytes) / (uint64_t)m->layers;
    if (strcmp(m->arch, "deepseek"))
        per_layer /= c->tp;
    /* a sliding-window layer keeps at most `window` of them (the oldest evicted) */
    uint64_t ctx = (uint64_t)I->P + I->N, nsl = (uint64_t)etk_model_sliding_layers(m, ts->first_layer, ts->layers);
    uint64_t wctx = m->window > 0 && (uint64_t)m->window < ctx ? (uint64_t)m->window : ctx;
    st->kv_cache_bytes = (uint64_t)c->batch * per_layer * (ctx * (ts->layers - nsl) + wctx * nsl);
    uint64_t msg = I->pre_layer[0].out_bytes;
    st->comm_buffer_bytes = (s > 0 ? msg : 0) + (s + 1 < I->p ? msg : 0);
    st->in_flight = I->M;
}

static int emit_stage(infer *I, uint32_t s, uint32_t tp, uint32_t dp, put_fn put, void *u, etk_gen_stage *st,
                      etk_error *err)
{
    const etk_gen_config *c = I->cfg;
    iemit E;
    memset(&E, 0, sizeof E);
    E.I = I;
    E.put = put;
    E.u = u;
    E.st = st;
    E.stage = s;
    E.err = err;
    E.next_id = 1;
    etk_gen_group_ids(c, tp, 0, dp, s, E.pg);
    E.prev = etk_gen_rank(c, tp, dp, (s + I->p - 1) % I->p);
    E.next = etk_gen_rank(c, tp, dp, (s + 1) % I->p);
    E.first = etk_gen_rank(c, tp, dp, 0);
    E.last = etk_gen_rank(c, tp, dp, I->p - 1);
    etk_gen_stage ms;
    memset(&ms, 0, sizeof ms);
    stage_memory(I, s, &ms);
    E.mem_alloc = ms.weight_bytes + ms.kv_cache_bytes + ms.comm_buffer_bytes;
    E.sample = calloc(I->M, sizeof(uint64_t));
    if (!E.sample)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    for (uint32_t ph = 0; ph <= I->N && !E.rc; ph++) {
        E.phase = ph;
        const ginst *layer[2] = {NULL, NULL};
        for (int k = 0; ph && k < I->nkinds && !E.rc; k++)
            if (!(layer[k] = dec_layer(I, k, ph, err)))
                E.rc = err && err->code ? err->code : ETK_EINVAL;
        if (E.rc)
            break;
        for (uint32_t j = 0; j < I->M && !E.rc; j++)
            emit_unit(&E, j, layer);
    }
    free(E.sample);
    if (st && !E.rc) {
        stage_memory(I, s, st);
        st->stage = s;
        st->first_layer = I->ts.stages[s].first_layer;
        st->layers = I->ts.stages[s].layers;
        st->has_embed = s == 0;
        st->has_head = s == I->p - 1;
        /* activations: what one layer's forward produces for one micro-batch (the prefill's, the
         * larger; with --attention unfused its attention scores are materialized), an upper bound
         * on the live working set as each layer's are dropped after it, plus the micro-batch's
         * logits on the last stage */
        uint64_t a = 0;
        for (int k = 0; k < I->nkinds; k++) {
            if (I->pre_layer[k].saved_bytes > a)
                a = I->pre_layer[k].saved_bytes;
            if (I->dec2[k].saved_bytes > a)
                a = I->dec2[k].saved_bytes;
        }
        if (st->has_head)
            a += (uint64_t)I->b * (uint64_t)c->model.vocab / c->tp * 2;
        st->act_per_mb_bytes = a;
        st->act_bytes = a;
        st->total_bytes = st->weight_bytes + st->kv_cache_bytes + st->act_bytes + st->comm_buffer_bytes;
    }
    return E.rc;
}

static int emit_cb(void *ctx, uint32_t stage, uint32_t tp, uint32_t cp, uint32_t dp, etk_trace *t, etk_error *err)
{
    (void)cp;
    return emit_stage(ctx, stage, tp, dp, gen_put_trace, t, NULL, err);
}

/* the stage's representative (tp = dp = 0) straight into the file encoder: no trace held */
static int stream_cb(void *ctx, uint32_t stage, put_fn put, void *u, etk_error *err)
{
    return emit_stage(ctx, stage, 0, 0, put, u, NULL, err);
}

/* ---------- public (via gen.c / plan.c) ---------- */

int etk_gen_infer_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err)
{
    memset(out, 0, sizeof *out);
    infer I;
    int rc = infer_init(&I, cfg, err);
    if (!rc && !(out->stages = calloc(I.p, sizeof(etk_gen_stage))))
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
    if (rc) {
        infer_free(&I);
        return rc;
    }
    out->inference = true;
    out->n_ranks = cfg->n_ranks;
    out->n_stages = I.p;
    out->micro_batches = I.M;
    out->kv_replicas = I.kv_rep;
    if (!rc && I.kv_rep > 1) /* the training summary counted the replicated heads */
        rc = etk_model_params(&cfg->model, &out->params_total, err);
    else
        out->params_total = I.ts.params_total;
    out->gpu_bytes = cfg->gpu_bytes;
    out->tokens_per_step = (uint64_t)cfg->dp * cfg->batch * ((uint64_t)I.N + 1);
    out->prompt_tokens = (uint64_t)cfg->dp * cfg->batch * I.P;
    out->kv_bytes_per_token = etk_model_kv_bytes_per_token(&cfg->model, (int)cfg->kv_bytes);
    snprintf(out->layer_split, sizeof out->layer_split, "%s", I.ts.layer_split);
    double per_stage = (double)cfg->tp * cfg->dp;
    for (uint32_t s = 0; s < I.p && !rc; s++) {
        etk_gen_stage *st = &out->stages[s];
        if ((rc = emit_stage(&I, s, 0, 0, NULL, NULL, st, err)))
            break;
        out->step_flops += st->flops * per_stage;
        out->model_flops += st->model_flops * per_stage;
        out->prefill_flops += st->prefill_flops * per_stage;
        out->decode_first_flops += st->decode_first_flops * per_stage;
        out->decode_last_flops += st->decode_last_flops * per_stage;
        if (st->total_bytes > out->peak_bytes) {
            out->peak_bytes = st->total_bytes;
            out->peak_stage = s;
        }
    }
    out->fits = out->peak_bytes <= out->gpu_bytes;
    infer_free(&I);
    if (rc)
        etk_gen_summary_free(out);
    return rc;
}

int etk_gen_infer_write(const etk_gen_config *cfg, const char *prefix, uint64_t *bytes_out, etk_error *err)
{
    infer I;
    int rc = infer_init(&I, cfg, err);
    if (!rc)
        rc = gen_write_streamed(cfg, I.p, emit_cb, stream_cb, &I, prefix, bytes_out, err);
    infer_free(&I);
    return rc;
}

int etk_gen_infer_workload(const etk_gen_config *cfg, bool fold, etk_workload **out, etk_error *err)
{
    infer I;
    int rc = infer_init(&I, cfg, err);
    if (!rc)
        rc = etk_gen_workload_with(cfg, I.p, emit_cb, &I, fold, out, err);
    infer_free(&I);
    return rc;
}
