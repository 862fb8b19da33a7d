/* gen.c — trace synthesis: from a checked plan (plan.c) and the lowered sections (lower.c) to
 * Chakra nodes. A pipeline stage is a rank class: its node sequence (micro-batches laid out by
 * the GPipe or 1F1B schedule as control dependencies, pipeline send/recv, the bucketed DP
 * gradient reduction after the last micro-batch's backward, the optimizer step) is produced by
 * one emitter that only binds communicator groups and peers from the rank's coordinates. The
 * same emitter feeds the summary (one representative per stage, no traces), the in-memory
 * workload and the per-rank file writer, so all three agree by construction. */
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

static void gen_layer_split(const etk_gen_config *cfg, uint32_t p, uint32_t v, uint32_t *nl);

/* Node-limited routing (--moe-max-nodes M, DeepSeek-V3): a token's experts lie on at most M
 * nodes and one copy per destination node crosses the network (forwarded inside the node over
 * NVLink, not counted), so of its topk copies at most min(M, N, topk) leave, N the nodes of
 * GPUS_PER_NODE GPUs the EP group spans (ranks of rank 0's group); the all-to-all bytes are
 * scaled by min(M, N, topk) / topk. 1 when not set or not binding. */
#define GPUS_PER_NODE 8
static double moe_a2a_scale(const etk_gen_config *cfg)
{
    int64_t topk = cfg->model.topk;
    if (!cfg->moe_max_nodes || cfg->ep < 2 || topk <= 0)
        return 1;
    uint32_t nodes = 0, last = UINT32_MAX;
    for (uint32_t e = 0; e < cfg->ep; e++) { /* EP members dp 0..ep-1 at tp 0: increasing ranks */
        uint32_t node = etk_gen_rank(cfg, 0, e, 0) / GPUS_PER_NODE;
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

#define ADAM_FLOPS_PER_PARAM 10 /* m, v updates 4; bias corrections 2; sqrt, divide 2; update, decay 2 */

typedef struct gen {
    const etk_gen_config *cfg;
    etk_graph *g;
    etk_arena *a;
    gprog prog[G_N_SEC + 1]; /* [G_SEC_DENSE]: the dense_layer section, when dense > 0 */
    uint32_t p, m, v;     /* stages, micro-batches, model chunks per stage (interleaving) */
    uint32_t *first, *nl; /* per virtual stage q = chunk * p + stage: first layer, layer count */
    uint64_t bucket_bytes;
    int act_bytes;
    bool tied;     /* the head uses an embedding weight (tied output layer) */
    bool emb_group; /* tied and PP > 1: first and last stage all-reduce its gradient */
    uint32_t cp;    /* context parallel degree (1: none) */
    uint32_t dpw;   /* ranks holding the same weights: dp x cp (gradient reduction, ZeRO sharding) */
    uint32_t ep;    /* expert parallel degree (1: none) */
    uint32_t edp;   /* ranks holding the same experts: dp x cp / ep */
    bool z3;        /* ZeRO-3 with dp > 1: parameters gathered per section instance, gradients
                     * reduce-scattered per section instance per micro-batch */
    uint32_t dense;       /* the first `dense` layers are the dense_layer section's (DeepSeek) */
    uint64_t sec_elems[G_N_SEC + 1]; /* weights a section instance uses, per TP rank (ZeRO-3 gather) */
    uint64_t sec_own[G_N_SEC + 1];   /* weights owned by the section (its gradients), per TP rank */
    uint64_t sec_x[G_N_SEC + 1];     /* --ep: the expert weights among them (this rank's experts),
                                      * sharded over EDP instead of DP */
} gen;

static bool is_expert(const gen *G, int t);
static uint64_t weight_elems_rank(const gen *G, int t);

static void gen_free(gen *G)
{
    etk_graph_free(G->g);
    etk_arena_free(G->a);
    free(G->first);
    free(G->nl);
}

static int gen_init(gen *G, const etk_gen_config *cfg, etk_error *err)
{
    memset(G, 0, sizeof *G);
    G->cfg = cfg;
    if (!cfg->n_ranks || !cfg->micro_batches)
        return etk_err(err, ETK_EINVAL, "plan not checked: call etk_gen_check first");
    int rc = etk_graph_load(&cfg->model, cfg->micro_batch, &G->g, err);
    if (rc)
        return rc;
    G->a = etk_arena_new(0);
    G->act_bytes = 2;
    G->cp = cfg->cp ? cfg->cp : 1;
    G->dpw = cfg->dp * G->cp;
    G->ep = cfg->ep ? cfg->ep : 1;
    G->edp = G->dpw / G->ep;
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
                     .flash = cfg->attention == ETK_ATTN_FLASH, .ep = G->ep, .sp = cfg->sp, .recompute = cfg->recompute, .act_bytes = G->act_bytes,
                     .gemm_bytes = !strcmp(cfg->precision, "fp8") ? 1 : 0,
                     .fp8_cast_mb = !strcmp(cfg->precision, "fp8") ? (int64_t)cfg->micro_batches : 0};
    /* DeepSeek's first_k_dense_replace: the first dense_layers layers from the dense_layer section */
    G->dense = G->g->dense.nops && cfg->model.dense_layers > 0 ? (uint32_t)cfg->model.dense_layers : 0;
    for (int s = 0; s < G_N_SEC + (G->dense ? 1 : 0); s++)
        if ((rc = etk_lower_section(G->g, s, &o, G->a, &G->prog[s], err))) {
            gen_free(G);
            return rc;
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
            uint64_t n = weight_elems_rank(G, t);
            G->sec_own[sec] += n;
            G->sec_elems[sec] += n;
            if (G->ep > 1 && is_expert(G, t))
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

static uint32_t min_u32(const uint32_t *x, uint32_t n)
{
    uint32_t m = x[0];
    for (uint32_t i = 1; i < n; i++)
        m = x[i] < m ? x[i] : m;
    return m;
}

static uint32_t max_u32(const uint32_t *x, uint32_t n)
{
    uint32_t m = x[0];
    for (uint32_t i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

static uint32_t stage_layers(const gen *G, uint32_t s)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < G->v; c++)
        n += G->nl[c * G->p + s];
    return n;
}

/* layers of stage s from the dense_layer section (global index below G->dense) */
static uint32_t stage_dense(const gen *G, uint32_t s)
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

static bool is_expert(const gen *G, int t)
{
    const gtensor *T = &G->g->t[t];
    for (int k = 0; k < T->nd; k++)
        if (T->dims[k] == EXPERT_DIM)
            return G->cfg->model.experts > 0;
    return false;
}

static uint64_t weight_elems_rank(const gen *G, int t)
{
    uint64_t n = (uint64_t)etk_graph_elems(G->g, t);
    if (G->ep > 1 && is_expert(G, t))
        n /= G->ep; /* this rank's experts */
    return (G->g->t[t].split >= 0 && G->cfg->tp > 1) ? n / G->cfg->tp : n;
}

/* ---------- emitter ---------- */
typedef int (*put_fn)(void *u, const etk_node *n, etk_error *err);

typedef struct bucket {
    uint64_t elems;
    uint64_t *deps;
    size_t ndeps, cap;
} bucket;

typedef struct emitter {
    gen *G;
    uint32_t stage, tp_i, dp_i;
    uint32_t prev_rank, next_rank;
    uint32_t cp_prev, cp_next; /* CP ring neighbours (--cp-comm ring) */
    bool p2p_cp;               /* the send/recv being put is the CP ring's (summary counters) */
    char pg[ETK_GEN_N_GROUP_KINDS][16]; /* communicator group ids by ETK_GEN_GROUP_* */
    put_fn put;
    void *u;
    etk_error *err;
    uint64_t next_id;
    uint64_t pending_ctrl;
    /* memory over time (docs/compute-model.md): attributes mem_alloc_bytes / mem_free_bytes for
     * the next node put (static state on the first node, saved activations from a section's
     * forward to the end of its backward) */
    uint64_t mem_alloc_pending, mem_free_pending;
    int nsi;
    int *si_sec;
    uint32_t *si_layer;
    uint64_t *fbase, *fin;
    uint64_t **bid;       /* per (section instance, micro-batch): backward ids (bid_get) */
    uint64_t unit_last;   /* the latest node of a backward or W unit */
    etk_gen_stage *st;
    int phase;
    int axis;
    /* DP reduction */
    bucket cur;
    bucket xcur;         /* expert weights (reduced over the EDP group) */
    uint8_t *bucket_x;   /* per bucket: expert bucket */
    uint64_t *bucket_elems;
    size_t nbuckets, capbuckets;
    uint64_t *bucket_ids;
    uint64_t *wdeps;     /* deferred tied-weight gradient nodes */
    size_t nwdeps, capwdeps;
    uint64_t *alldeps;   /* dp == 1: every weight-gradient node of the last micro-batch */
    size_t nall, capall;
    uint64_t *embdeps;   /* gradient nodes of the tied table (embedding group all-reduce) */
    size_t nembdeps, capembdeps;
    uint64_t emb_elems;
    uint64_t last_p2p;   /* id of the stage's latest pipeline send/recv */
    uint64_t *repl;      /* SP: gradient nodes of TP-replicated weights (last micro-batch) */
    size_t nrepl, caprepl;
    uint64_t repl_elems;
    uint64_t pending_ctrl2, pending_ctrl3; /* more control dependencies of the next node (ZeRO-3) */
    uint64_t last_gather;   /* ZeRO-3: the latest parameter all-gather */
    uint64_t prev_sec_base; /* ZeRO-3: first node of the latest section instance emitted */
    uint64_t *z3deps;       /* ZeRO-3: weight-gradient nodes of the current section instance */
    size_t nz3, capz3;
    uint64_t *z3xdeps;      /* ZeRO-3 with --ep: those of its expert weights (reduced over EDP) */
    size_t nz3x, capz3x;
    uint64_t *z3tied;       /* ZeRO-3: head gradient nodes of a tied table (reduced with the embedding) */
    size_t nz3tied, capz3tied;
    int rc;
} emitter;

static int push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        uint64_t *p = realloc(*v, c * sizeof *p);
        if (!p)
            return ETK_ENOMEM;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int put_node(emitter *E, const char *name, int type, uint64_t *deps, uint32_t ndeps, etk_attr *attr,
                    uint32_t nattr)
{
    if (E->rc)
        return E->rc;
    etk_node n;
    memset(&n, 0, sizeof n);
    n.id = E->next_id++;
    n.name = name;
    n.type = type;
    n.data_deps = deps;
    n.n_data_deps = ndeps;
    uint64_t ctrl[3], pc[3] = {E->pending_ctrl, E->pending_ctrl2, E->pending_ctrl3};
    uint32_t nc = 0;
    for (int i = 0; i < 3; i++) {
        bool dup = !pc[i];
        for (uint32_t k = 0; k < nc; k++)
            dup |= ctrl[k] == pc[i];
        if (!dup)
            ctrl[nc++] = pc[i];
    }
    if (nc) {
        n.ctrl_deps = ctrl;
        n.n_ctrl_deps = nc;
    }
    E->pending_ctrl = E->pending_ctrl2 = E->pending_ctrl3 = 0;
    etk_attr ma[16];
    if ((E->mem_alloc_pending || E->mem_free_pending) && nattr + 2 <= 16) {
        memcpy(ma, attr, nattr * sizeof *attr);
        if (E->mem_alloc_pending)
            ma[nattr++] = etk_attr_u64("mem_alloc_bytes", E->mem_alloc_pending);
        if (E->mem_free_pending)
            ma[nattr++] = etk_attr_u64("mem_free_bytes", E->mem_free_pending);
        E->mem_alloc_pending = E->mem_free_pending = 0;
        attr = ma;
    }
    n.attr = attr;
    n.n_attr = nattr;
    if (E->st) {
        etk_gen_stage *s = E->st;
        s->nodes++;
        int64_t v;
        if (type == ETK_NODE_COMP && etk_node_i64(&n, "num_ops", &v)) {
            s->flops += (double)v;
            if (E->phase != P_RECOMP && E->phase != P_OPT)
                s->model_flops += (double)v;
        } else if (type == ETK_NODE_COLL) {
            int64_t ct = 0, sz = 0;
            etk_node_i64(&n, "comm_type", &ct);
            etk_node_i64(&n, "comm_size", &sz);
            s->coll_count[E->axis][ct]++;
            s->coll_bytes[E->axis][ct] += (uint64_t)sz;
        } else if (type == ETK_NODE_SEND || type == ETK_NODE_RECV) {
            /* the pipeline's, or the CP ring's */
            int64_t sz = 0;
            etk_node_i64(&n, "comm_size", &sz);
            bool snd = type == ETK_NODE_SEND;
            uint64_t *cnt = E->p2p_cp ? (snd ? &s->cp_send_count : &s->cp_recv_count) : snd ? &s->send_count : &s->recv_count;
            uint64_t *byt = E->p2p_cp ? (snd ? &s->cp_send_bytes : &s->cp_recv_bytes) : snd ? &s->send_bytes : &s->recv_bytes;
            (*cnt)++;
            *byt += (uint64_t)sz;
        }
    }
    if (E->put && (E->rc = E->put(E->u, &n, E->err)))
        return E->rc;
    return 0;
}

static int put_comp(emitter *E, const char *name, const ginst *I, uint64_t *deps, uint32_t nd)
{
    /* "precision": "fp8" marks an FP8 GEMM (the simulator's roofline uses the fp8 peak for it);
     * "attn_scores": true a memory-bound op over the attention scores (the compute model's
     * score_mem_eff); "op_kind": "attention" a fused attention kernel (attn_eff); all absent on
     * everything else */
    if (!(I->flops >= 0 && I->flops < 9.2e18)) { /* num_ops is an int64: never a wrapped value */
        if (!E->rc)
            E->rc = etk_err(E->err, ETK_EINVAL, "node %s: %.3g FLOPs does not fit num_ops (at most 9.2e18): the "
                            "micro-batch or the model dimensions are too large", name[0] ? name : I->name ? I->name : "?", I->flops);
        return E->rc;
    }
    /* an op that moves bytes but does no FLOPs (embedding lookup, MoE dispatch) gets num_ops 1:
     * ASTRA-sim's roofline divides num_ops by num_ops / tensor_size and stalls forever on 0/0,
     * while with 1 its time is tensor_size / local-mem-bw, the memory-bound time etkit gives
     * either way (docs/astra-compat.md); the summary's FLOPs leave it out */
    int64_t ops = (int64_t)(I->flops + 0.5);
    bool min_op = ops == 0 && I->bytes > 0;
    etk_attr a[14] = {etk_attr_bool("is_cpu_op", false), etk_attr_i64("num_ops", min_op ? 1 : ops),
                      etk_attr_u64("tensor_size", I->bytes)};
    uint32_t n = 3;
    if (I->gemm_m > 0) { /* an expert GEMM: one expert's shape, the rank's experts (grouped GEMM) */
        a[n++] = etk_attr_i64("gemm_m", I->gemm_m);
        a[n++] = etk_attr_i64("gemm_n", I->gemm_n);
        a[n++] = etk_attr_i64("gemm_k", I->gemm_k);
        a[n++] = etk_attr_i64("gemm_groups", I->gemm_groups);
    }
    if (I->fp8)
        a[n++] = etk_attr_str("precision", "fp8");
    if (I->scores)
        a[n++] = etk_attr_bool("attn_scores", true);
    if (I->attn)
        a[n++] = etk_attr_str("op_kind", "attention");
    if (I->grouped) /* a grouped GEMM over the rank's experts: small groups reach less */
        a[n++] = etk_attr_bool("gemm_grouped", true);
    if (I->attn && I->causal) /* the kernel skips the masked blocks: half the s^2 FLOPs */
        a[n++] = etk_attr_bool("attn_causal", true);
    if (I->attn && I->phase == P_BWD)
        a[n++] = etk_attr_bool("attn_bwd", true);
    int rc = put_node(E, name, ETK_NODE_COMP, deps, nd, a, n);
    if (!rc && min_op && E->st) { /* not a real FLOP: the summary leaves it out */
        E->st->flops -= 1;
        if (E->phase != P_RECOMP && E->phase != P_OPT)
            E->st->model_flops -= 1;
    }
    /* recomputed work inside a backward node is hardware, not model, FLOPs */
    if (!rc && E->st && I->recomp_flops > 0 && E->phase != P_RECOMP && E->phase != P_OPT)
        E->st->model_flops -= (double)(int64_t)(I->recomp_flops + 0.5);
    return rc;
}

static int put_coll(emitter *E, const char *name, int coll, int64_t bytes, int axis, uint64_t *deps, uint32_t nd)
{
    etk_attr a[4] = {etk_attr_bool("is_cpu_op", false), etk_attr_i64("comm_type", coll),
                     etk_attr_i64("comm_size", bytes),
                     etk_attr_str("pg_name", E->pg[axis])};
    E->axis = axis;
    return put_node(E, name, ETK_NODE_COLL, deps, nd, a, 4);
}

static int put_p2p(emitter *E, const char *name, bool send, uint32_t peer, int64_t bytes, int32_t tag,
                   uint64_t *deps, uint32_t nd)
{
    etk_attr a[4] = {etk_attr_bool("is_cpu_op", false), etk_attr_i32(send ? "comm_dst" : "comm_src", (int32_t)peer),
                     etk_attr_i64("comm_size", bytes), etk_attr_i32("comm_tag", tag)};
    E->last_p2p = E->next_id;
    return put_node(E, name, send ? ETK_NODE_SEND : ETK_NODE_RECV, deps, nd, a, 4);
}

static int sec_group(const ginst *I);

/* A node of a lowered section: compute, collective, or a send/recv of the CP ring. */
static void put_inst(emitter *E, const ginst *I, const char *name, uint64_t *deps, uint32_t nd)
{
    if (I->type == ETK_NODE_COMP) {
        put_comp(E, name, I, deps, nd);
    } else if (I->type == ETK_NODE_COLL) {
        put_coll(E, name, I->coll, I->comm_bytes, sec_group(I), deps, nd);
    } else {
        uint64_t keep = E->last_p2p; /* the pipeline's latest transfer stays the pipeline's */
        E->p2p_cp = true;
        put_p2p(E, name, I->type == ETK_NODE_SEND, I->peer == PEER_CP_NEXT ? E->cp_next : E->cp_prev, I->comm_bytes,
                I->tag, deps, nd);
        E->p2p_cp = false;
        E->last_p2p = keep;
    }
}

static void si_label(const emitter *E, int si, char *buf, size_t n)
{
    if (E->si_sec[si] == G_SEC_LAYER || E->si_sec[si] == G_SEC_DENSE)
        snprintf(buf, n, "L%u", E->si_layer[si]);
    else
        snprintf(buf, n, "%s", E->G->g->sec[E->si_sec[si]].name);
}

/* communicator group of a collective of a lowered section */
static int sec_group(const ginst *I)
{
    return I->grp == GRP_CP ? ETK_GEN_GROUP_CP : I->grp == GRP_EP ? ETK_GEN_GROUP_EP : ETK_GEN_GROUP_TP;
}

/* ZeRO-3: a node that needs the gathered parameters */
static bool inst_uses_weight(const ginst *I)
{
    return I->type == ETK_NODE_COMP && (I->uses_w || I->nw > 0 || strstr(I->name, ".dgrad"));
}

/* ZeRO-3: all-gather of the 16-bit parameters a section instance uses (comm_size = the per-rank
 * shard, padded to equal shards). It has no data dependency, only control dependencies on the
 * previous gather and on the first node of the previous section instance: the gathers run in
 * section order and one section ahead of the compute (the next layer's parameters are prefetched
 * while this one computes, FSDP's forward/backward prefetch), never further. Returns its id. */
static uint64_t emit_gather(emitter *E, int si, uint32_t j, const char *what)
{
    gen *G = E->G;
    uint64_t x = G->sec_x[E->si_sec[si]], elems = G->sec_elems[E->si_sec[si]] - x;
    if (!G->z3)
        return 0;
    /* with --ep, a section's expert weights are sharded over EDP: a second gather, after the
     * first (so a node waiting for it has both) */
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? x : elems, d = k ? G->edp : G->dpw;
        if (!n || d < 2)
            continue;
        char lab[32], name[160] = "";
        si_label(E, si, lab, sizeof lab);
        if (E->put)
            snprintf(name, sizeof name, "mb%u.%s.%s%s", j, lab, k ? "expert_" : "", what);
        E->pending_ctrl2 = E->last_gather;
        E->pending_ctrl3 = E->prev_sec_base;
        E->last_gather = E->next_id;
        put_coll(E, name, ETK_COLL_ALL_GATHER, (int64_t)((n + d - 1) / d * 2), k ? ETK_GEN_GROUP_EDP : ETK_GEN_GROUP_DP,
                 NULL, 0);
    }
    return (elems && G->dpw > 1) || (x && G->edp > 1) ? E->last_gather : 0;
}

/* Forward of section instance si for micro-batch j; input: the instruction id feeding it (0 none). */
static uint64_t emit_fwd(emitter *E, int si, uint32_t j, uint64_t input)
{
    const gprog *P = &E->G->prog[E->si_sec[si]];
    uint64_t ag = emit_gather(E, si, j, "param_all_gather");
    uint64_t base = E->next_id;
    E->prev_sec_base = base;
    size_t k0 = (size_t)si * E->G->m + j;
    E->fbase[k0] = base;
    E->fin[k0] = input;
    char lab[32], name[160] = "";
    si_label(E, si, lab, sizeof lab);
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
        if (ag && nd < 64 && inst_uses_weight(I))
            deps[nd++] = ag;
        if (E->put) /* names only for traces that are kept */
            snprintf(name, sizeof name, "mb%u.%s.%s", j, lab, I->name);
        E->phase = I->phase;
        put_inst(E, I, name, deps, nd);
    }
    if (P->fwd_out == DEP_IN)
        return input;
    return base + (uint64_t)P->fwd_out;
}

static void bucket_flush(emitter *E, bool force);
static void bucket_append(emitter *E, uint64_t elems, uint64_t id);

/* Backward of section instance si for micro-batch j. gd: ids of the output gradient.
 * Returns the ids of the input gradient in out (count). */
/* zb-h1: the weight-gradient GEMMs ("W"), deferred out of the backward unit ("B") */
static bool is_w(const ginst *I)
{
    return I->type == ETK_NODE_COMP && I->nw > 0 && strstr(I->name, ".wgrad");
}

/* ZeRO-3: node `id` (instruction I of section instance si) produces weight gradients: they are
 * reduce-scattered after the section's backward (expert weights over EDP; a tied table's
 * gradient from the head joins the embedding's). */
static void z3_note(emitter *E, int si, const ginst *I, uint64_t id, bool last)
{
    gen *G = E->G;
    bool tied = false, xw = G->ep > 1 && is_expert(G, I->w[0]); /* all experts or none */
    for (int w = 0; w < I->nw; w++)
        tied |= G->g->t[I->w[w]].section != E->si_sec[si];
    if (tied ? push(&E->z3tied, &E->nz3tied, &E->capz3tied, id)
        : xw ? push(&E->z3xdeps, &E->nz3x, &E->capz3x, id) || (last && G->edp < 2 && push(&E->alldeps, &E->nall, &E->capall, id))
             : push(&E->z3deps, &E->nz3, &E->capz3, id))
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
        si_label(E, si, lab, sizeof lab);
        if (E->put)
            snprintf(name, sizeof name, "mb%u.%s.%sgrad_reduce_scatter", j, lab, expert ? "expert_" : "");
        E->phase = P_BWD;
        id = E->next_id;
        put_coll(E, name, ETK_COLL_REDUCE_SCATTER, (int64_t)((n + d - 1) / d * d * G->cfg->grad_bytes),
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
static uint64_t *bid_get(emitter *E, int si, uint32_t j)
{
    size_t k = (size_t)si * E->G->m + j;
    if (!E->bid[k]) {
        const gprog *P = &E->G->prog[E->si_sec[si]];
        E->bid[k] = calloc((size_t)(P->n - P->nfwd) + 17, sizeof(uint64_t));
        if (!E->bid[k] && !E->rc)
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    }
    return E->bid[k];
}

/* Backward of section instance si for micro-batch j. gd: ids of the output gradient.
 * mode: BW_ALL every instruction; BW_B all but the weight-gradient GEMMs (zb-h1 backward unit);
 * BW_W only those (zb-h1 W unit; gd comes from the B unit). Returns the ids of the input
 * gradient in out (count). */
enum { BW_ALL = 0, BW_B = 1, BW_W = 2 };
static int emit_bwd(emitter *E, int si, uint32_t j, const uint64_t *gd, int ngd, uint64_t *out, bool last, int mode)
{
    gen *G = E->G;
    const gprog *P = &G->prog[E->si_sec[si]];
    size_t k0 = (size_t)si * G->m + j;
    uint64_t *bid = bid_get(E, si, j), *pbid = j ? E->bid[k0 - 1] : NULL;
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
    uint64_t ag = mode == BW_W ? 0 : emit_gather(E, si, j, "param_all_gather_bwd");
    uint64_t fb = E->fbase[k0], fin = E->fin[k0], bb = E->next_id;
    if (mode != BW_W)
        E->prev_sec_base = bb;
    char lab[32], name[160] = "";
    si_label(E, si, lab, sizeof lab);
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
        if (ag && inst_uses_weight(I))
            deps[nd++] = ag;
        if (E->put)
            snprintf(name, sizeof name, "mb%u.%s.%s", j, lab, I->name);
        E->phase = I->phase;
        uint64_t id = E->next_id;
        bi[k - P->nfwd] = id;
        E->unit_last = id;
        /* the forward's saved activations are freed with the last backward node (zb-h1: with
         * the last W node, which still reads them) */
        if (mode == BW_ALL || (mode == BW_B && last_w < 0) ? k == P->n - 1 : mode == BW_W && k == last_w)
            E->mem_free_pending += P->saved_bytes;
        put_inst(E, I, name, deps, nd);
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
                if (G->cfg->sp && G->cfg->tp > 1 && G->g->t[t].split < 0 && !tied) {
                    bool first_use = true;
                    for (int k2 = P->nfwd; k2 < k; k2++)
                        for (int w2 = 0; w2 < P->v[k2].nw; w2++)
                            first_use &= P->v[k2].w[w2] != t;
                    if (first_use) {
                        E->repl_elems += weight_elems_rank(G, t);
                        if (push(&E->repl, &E->nrepl, &E->caprepl, id))
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
                     * the embedding group after the pipeline drains, then bucketed (emit_optimizer) */
                    tied_emb = true;
                    if (first_use)
                        E->emb_elems += weight_elems_rank(G, t);
                    continue;
                }
                if (G->cfg->sp && G->cfg->tp > 1 && G->g->t[t].split < 0 && first_use) {
                    E->repl_elems += weight_elems_rank(G, t);
                    if (push(&E->repl, &E->nrepl, &E->caprepl, id))
                        E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
                }
                if (first_use)
                    (G->ep > 1 && is_expert(G, t) ? &E->xcur : &E->cur)->elems += weight_elems_rank(G, t);
            }
            bucket *bk = G->ep > 1 && is_expert(G, I->w[0]) ? &E->xcur : &E->cur; /* a node's weights are all experts or none */
            if (tied_emb) {
                if (push(&E->embdeps, &E->nembdeps, &E->capembdeps, id))
                    E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            } else if (tied_here) {
                if (push(&E->wdeps, &E->nwdeps, &E->capwdeps, id))
                    E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
            } else if (push(&bk->deps, &bk->ndeps, &bk->cap, id) ||
                       push(&E->alldeps, &E->nall, &E->capall, id)) {
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
                if (push(&E->z3deps, &E->nz3, &E->capz3, E->z3tied[i]))
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
                if (push(&E->cur.deps, &E->cur.ndeps, &E->cur.cap, E->wdeps[i]))
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
            put_coll(E, name, ETK_COLL_REDUCE_SCATTER, (int64_t)(padded * c->grad_bytes), axis, bk->deps,
                     (uint32_t)bk->ndeps);
        } else {
            snprintf(name, sizeof name, "%s%zu.all_reduce", pre, E->nbuckets);
            put_coll(E, name, ETK_COLL_ALL_REDUCE, (int64_t)(elems * c->grad_bytes), axis, bk->deps, (uint32_t)bk->ndeps);
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

static void emit_optimizer(emitter *E, uint64_t unit_end)
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
        if (E->last_p2p && push(&E->embdeps, &E->nembdeps, &E->capembdeps, E->last_p2p))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
        uint64_t id = E->next_id;
        E->phase = P_BWD;
        put_coll(E, "embedding_grad.all_reduce", ETK_COLL_ALL_REDUCE, (int64_t)(E->emb_elems * c->grad_bytes),
                 ETK_GEN_GROUP_EMB, E->embdeps, (uint32_t)E->nembdeps);
        E->cur.ndeps = 0;
        E->cur.elems = E->emb_elems;
        if (push(&E->cur.deps, &E->cur.ndeps, &E->cur.cap, id) || push(&E->alldeps, &E->nall, &E->capall, id))
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
        if (E->bucket_ids[i] && push(&deps, &nd, &cap, E->bucket_ids[i]))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    for (size_t i = 0; i < E->nall && unreduced && !E->rc; i++)
        if (push(&deps, &nd, &cap, E->alldeps[i]))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    if (E->repl_elems && !E->rc) {
        /* sequence parallelism: each TP rank saw only its sequence slice, so gradients of the
         * TP-replicated weights (norms, biases after row-parallel GEMMs) are summed over the TP
         * group once per step (Megatron's all-reduce of layernorm grads), coalesced */
        uint64_t id = E->next_id;
        E->phase = P_BWD;
        put_coll(E, "sp_replicated_grads.all_reduce", ETK_COLL_ALL_REDUCE, (int64_t)(E->repl_elems * c->grad_bytes),
                 ETK_GEN_GROUP_TP, E->repl, (uint32_t)E->nrepl);
        if (push(&deps, &nd, &cap, id))
            E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    }
    if (!nd && unit_end && push(&deps, &nd, &cap, unit_end))
        E->rc = etk_err(E->err, ETK_ENOMEM, "out of memory");
    if (E->rc) {
        free(deps);
        return;
    }
    E->phase = P_OPT;
    uint64_t opt = E->next_id;
    /* reads and writes fp32 master weights, Adam m and v; reads the gradient, writes the parameter */
    ginst adam = {.flops = (double)n * ADAM_FLOPS_PER_PARAM, .bytes = n * (2 * 12 + c->grad_bytes + 2)};
    put_comp(E, "optimizer.adam", &adam, deps, (uint32_t)nd);
    free(deps);
    if (c->zero && c->zero < 3) /* ZeRO-3 gathers parameters when a layer runs */
        for (size_t b = 0; b < E->nbuckets && !E->rc; b++) {
            uint64_t d = bucket_div(E, b);
            if (d < 2)
                continue;
            char name[64];
            snprintf(name, sizeof name, "%s%zu.all_gather", E->bucket_x[b] ? "edp.expert_param_bucket" : "dp.param_bucket",
                     b);
            put_coll(E, name, ETK_COLL_ALL_GATHER, (int64_t)((E->bucket_elems[b] + d - 1) / d * 2),
                     E->bucket_x[b] ? ETK_GEN_GROUP_EDP : ETK_GEN_GROUP_DP, &opt, 1);
        }
}

/* "mb<j>.<what>", or "mb<j>.chunk<c>.<what>" with interleaving */
static void p2p_name(char *buf, size_t n, uint32_t j, int chunk, const char *what)
{
    if (chunk >= 0)
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
        emit_bwd(E, si, j, NULL, 0, NULL, j == E->G->m - 1, BW_W);
    E->pending_ctrl = 0;
    return E->unit_last ? E->unit_last : prev;
}

/* Communicator group ids of the rank at (tp, cp, dp, pp): the numbering of gen.h. */
static void group_ids(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp,
                      char pg[ETK_GEN_N_GROUP_KINDS][16])
{
    uint32_t C = c->cp ? c->cp : 1, base = C * c->dp * c->pp, EP = c->ep ? c->ep : 1, X = c->dp / EP;
    uint32_t e = dp % EP, x = dp / EP;
    uint32_t B = 1 + base + c->tp * c->pp + c->tp * C * c->dp + c->tp * c->dp * c->pp;
    snprintf(pg[ETK_GEN_GROUP_TP], 16, "%u", 1 + cp + C * dp + C * c->dp * pp);
    snprintf(pg[ETK_GEN_GROUP_DP], 16, "%u", 1 + base + tp + c->tp * pp);
    snprintf(pg[ETK_GEN_GROUP_EMB], 16, "%u", 1 + base + c->tp * c->pp + tp + c->tp * (cp + C * dp));
    snprintf(pg[ETK_GEN_GROUP_CP], 16, "%u", 1 + base + c->tp * c->pp + c->tp * C * c->dp + tp + c->tp * (dp + c->dp * pp));
    snprintf(pg[ETK_GEN_GROUP_EP], 16, "%u", B + tp + c->tp * (cp + C * (x + X * pp)));
    snprintf(pg[ETK_GEN_GROUP_EDP], 16, "%u", B + c->tp * C * X * c->pp + tp + c->tp * (e + EP * pp));
}

void etk_gen_group_ids(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp,
                       char pg[ETK_GEN_N_GROUP_KINDS][16])
{
    group_ids(c, tp, cp, dp, pp, pg);
}

static void stage_memory(gen *G, uint32_t s, etk_gen_stage *st);

/* Emit every node of stage `stage` for the rank at (tp_i, cp_i, dp_i). */
static int emit_stage(gen *G, uint32_t stage, uint32_t tp_i, uint32_t cp_i, uint32_t dp_i, put_fn put, void *u,
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
    E.u = u;
    E.err = err;
    E.st = st;
    E.next_id = 1;
    uint32_t p = G->p, m = G->m;
    group_ids(c, tp_i, cp_i, dp_i, stage, E.pg);
    /* the numbering is bind_rank()'s, which the file writer uses for the other ranks */
    uint32_t v = G->v, V = p * v;
    bool has_embed = stage == 0, has_head = stage == p - 1;
    E.nsi = (int)stage_layers(G, stage) + has_embed + has_head;
    E.si_sec = calloc((size_t)E.nsi, sizeof(int));
    E.si_layer = calloc((size_t)E.nsi, sizeof(uint32_t));
    E.fbase = calloc((size_t)E.nsi * m, sizeof(uint64_t));
    E.fin = calloc((size_t)E.nsi * m, sizeof(uint64_t));
    E.bid = calloc((size_t)E.nsi * m, sizeof(uint64_t *));
    int *cbeg = calloc(v + 1, sizeof(int));
    if (!E.si_sec || !E.si_layer || !E.fbase || !E.fin || !E.bid || !cbeg) {
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
        for (uint32_t l = 0; l < G->nl[q]; l++) {
            E.si_layer[k] = G->first[q] + l;
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
    uint32_t nf = 0, nb = 0, nw = 0;
    bool zb = c->schedule == ETK_SCHED_ZBH1;
    uint64_t unit_end = 0;
    int64_t msg = (int64_t)G->prog[G_SEC_LAYER].out_bytes;
    {   /* static memory, allocated by the stage's first node */
        etk_gen_stage ms;
        memset(&ms, 0, sizeof ms);
        stage_memory(G, stage, &ms);
        E.mem_alloc_pending = ms.weight_bytes + ms.grad_bytes + ms.optimizer_bytes +
                              ms.comm_buffer_bytes;
    }
    char name[96];
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
        uint32_t kk = fwd ? nf++ : nb++;
        uint32_t ch = (kk / p) % v, j = (kk / (p * v)) * p + kk % p;
        if (!fwd)
            ch = v - 1 - ch;
        uint32_t q = ch * p + stage;
        if (fwd) {
            uint64_t in = 0;
            if (q > 0) {
                in = E.next_id;
                p2p_name(name, sizeof name, j, v > 1 ? (int)ch : -1, "recv_activation");
                E.phase = P_FWD;
                put_p2p(&E, name, false, E.prev_rank, msg, (int32_t)(2 * ((q - 1) * m + j)), NULL, 0);
            }
            for (int si = cbeg[ch]; si < cbeg[ch + 1] && !E.rc; si++)
                in = emit_fwd(&E, si, j, in);
            /* the next unit waits for this unit's compute, not for its send: a send and the
             * next receive are posted together (Megatron's send_forward_recv_backward), so
             * rendezvous sends cannot deadlock adjacent stages */
            unit_end = in;
            if (q + 1 < V) {
                uint64_t d = in;
                p2p_name(name, sizeof name, j, v > 1 ? (int)ch : -1, "send_activation");
                put_p2p(&E, name, true, E.next_rank, msg, (int32_t)(2 * (q * m + j)), &d, d ? 1 : 0);
            }
        } else {
            bool last = j == m - 1; /* this chunk's last micro-batch: its gradients are final */
            uint64_t gd[16];
            int ngd = 0;
            if (q + 1 < V) {
                gd[ngd++] = E.next_id;
                p2p_name(name, sizeof name, j, v > 1 ? (int)ch : -1, "recv_gradient");
                E.phase = P_BWD;
                put_p2p(&E, name, false, E.next_rank, msg, (int32_t)(2 * (q * m + j) + 1), NULL, 0);
            } else {
                /* the loss starts the backward pass */
                size_t hk = (size_t)(E.nsi - 1) * m + j;
                gd[ngd++] = E.fbase[hk] + (uint64_t)G->prog[G_SEC_HEAD].fwd_out;
            }
            for (int si = cbeg[ch + 1] - 1; si >= cbeg[ch] && !E.rc; si--) {
                uint64_t o[16];
                int n = emit_bwd(&E, si, j, gd, ngd, o, last, zb ? BW_B : BW_ALL);
                if (n > 0) {
                    memcpy(gd, o, sizeof(uint64_t) * (size_t)n);
                    ngd = n;
                }
            }
            unit_end = gd[ngd - 1];
            if (q > 0) {
                p2p_name(name, sizeof name, j, v > 1 ? (int)ch : -1, "send_gradient");
                E.phase = P_BWD;
                put_p2p(&E, name, true, E.prev_rank, msg, (int32_t)(2 * ((q - 1) * m + j) + 1), gd, (uint32_t)ngd);
            }
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
        emit_optimizer(&E, unit_end);
out:
    free(E.si_sec);
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

/* ---------- summary ---------- */
static void stage_memory(gen *G, uint32_t s, etk_gen_stage *st)
{
    const etk_gen_config *c = G->cfg;
    const etk_graph *g = G->g;
    uint64_t params = 0, xparams = 0; /* all, and expert weights among them */
    uint32_t nd = stage_dense(G, s), nmoe = stage_layers(G, s) - nd;
    for (int t = 0; t < g->nt; t++) {
        if (!g->t[t].weight)
            continue;
        int sec = g->t[t].section;
        if (sec == G_SEC_LAYER && is_expert(G, t))
            xparams += weight_elems_rank(G, t) * nmoe;
        if (sec == G_SEC_LAYER)
            params += weight_elems_rank(G, t) * nmoe;
        else if (sec == G_SEC_DENSE)
            params += weight_elems_rank(G, t) * nd;
        else if (sec == G_SEC_EMBED && s == 0)
            params += weight_elems_rank(G, t);
        else if (sec == G_SEC_HEAD && s == G->p - 1)
            params += weight_elems_rank(G, t);
    }
    /* a tied output layer on a stage without the embedding holds its own copy */
    if (s == G->p - 1 && s != 0) {
        const gsection *H = &g->sec[G_SEC_HEAD];
        for (int j = 0; j < H->nops; j++)
            for (int i = 0; i < H->ops[j].nin; i++) {
                int t = H->ops[j].in[i];
                if (g->t[t].weight && g->t[t].section == G_SEC_EMBED)
                    params += weight_elems_rank(G, t);
            }
    }
    st->params = params;
    uint64_t d = G->dpw;
    /* ZeRO-2 shards the gradients, ZeRO-3 the parameters too (over DP, equal padded shards) */
    /* expert weights are sharded over their EDP group (dp x cp / ep ranks), the rest over DP x CP */
    uint64_t xd = G->edp, dense = params - xparams;
    uint64_t held = (dense + d - 1) / d + (xparams + xd - 1) / xd;
    st->weight_bytes = c->zero == 3 ? held * 2 : params * 2;
    st->grad_bytes = c->zero >= 2 ? held * c->grad_bytes : params * c->grad_bytes;
    /* fp32 master weights + Adam m and v (12 bytes), plus an fp32 copy of 16-bit gradients */
    uint64_t opb = 12 + (c->grad_bytes == 2 ? 4 : 0);
    st->optimizer_bytes = c->zero ? ((dense * opb + d - 1) / d + (xparams * opb + xd - 1) / xd) : params * opb;
    uint64_t act_layers = G->prog[G_SEC_LAYER].saved_bytes * nmoe + (nd ? G->prog[G_SEC_DENSE].saved_bytes * nd : 0);
    uint64_t act = act_layers;
    if (s == 0)
        act += G->prog[G_SEC_EMBED].saved_bytes;
    if (s == G->p - 1)
        act += G->prog[G_SEC_HEAD].saved_bytes;
    st->act_per_mb_bytes = act;
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
    st->in_flight = warm + 1 < total ? warm + 1 : total;
    st->act_bytes = act * st->in_flight / G->v;
    st->act_layers_bytes = act_layers * st->in_flight / G->v;
    uint64_t msg = G->prog[G_SEC_LAYER].out_bytes;
    st->comm_buffer_bytes = (s > 0 ? msg : 0) + (s + 1 < G->p ? msg : 0);
    if (G->z3) /* gathered parameters: the layer computing and the one prefetched */
        st->comm_buffer_bytes += 2 * 2 * (nd && G->sec_elems[G_SEC_DENSE] > G->sec_elems[G_SEC_LAYER]
                                               ? G->sec_elems[G_SEC_DENSE] : G->sec_elems[G_SEC_LAYER]);
    st->total_bytes = st->weight_bytes + st->grad_bytes + st->optimizer_bytes + st->act_bytes + st->comm_buffer_bytes;
}

int etk_gen_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err)
{
    if (cfg->mode == ETK_GEN_MODE_INFERENCE)
        return etk_gen_infer_summarize(cfg, out, err);
    memset(out, 0, sizeof *out);
    gen G;
    int rc = gen_init(&G, cfg, err);
    if (rc)
        return rc;
    out->n_ranks = cfg->n_ranks;
    out->n_stages = G.p;
    out->micro_batches = G.m;
    out->tokens_per_step = cfg->tokens_per_step;
    out->gpu_bytes = cfg->gpu_bytes;
    out->stages = calloc(G.p, sizeof(etk_gen_stage));
    if (!out->stages) {
        gen_free(&G);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    if ((rc = etk_model_params(&cfg->model, &out->params_total, err)))
        goto done;
    uint32_t per_stage_ranks = cfg->tp * cfg->dp * G.cp;
    for (uint32_t s = 0; s < G.p; s++) {
        etk_gen_stage *st = &out->stages[s];
        st->stage = s;
        st->first_layer = G.first[s];
        st->layers = stage_layers(&G, s);
        st->has_embed = s == 0;
        st->has_head = s == G.p - 1;
        /* middle stages with the same layers per chunk have the same nodes (only their order in
         * the schedule differs): count one, copy the totals */
        bool same = s > 1 && s + 1 < G.p && stage_dense(&G, s) == stage_dense(&G, s - 1);
        for (uint32_t c = 0; same && c < G.v; c++)
            same = G.nl[c * G.p + s] == G.nl[c * G.p + s - 1];
        if (same) {
            const etk_gen_stage *ps = &out->stages[s - 1];
            st->nodes = ps->nodes;
            st->flops = ps->flops;
            st->model_flops = ps->model_flops;
            memcpy(st->coll_count, ps->coll_count, sizeof st->coll_count);
            memcpy(st->coll_bytes, ps->coll_bytes, sizeof st->coll_bytes);
            st->send_count = ps->send_count;
            st->send_bytes = ps->send_bytes;
            st->recv_count = ps->recv_count;
            st->recv_bytes = ps->recv_bytes;
        } else if ((rc = emit_stage(&G, s, 0, 0, 0, NULL, NULL, st, err))) {
            goto done;
        }
        stage_memory(&G, s, st);
        out->step_flops += st->flops * per_stage_ranks;
        out->model_flops += st->model_flops * per_stage_ranks;
        if (st->total_bytes > out->peak_bytes) {
            out->peak_bytes = st->total_bytes;
            out->peak_stage = s;
        }
    }
    out->fits = out->peak_bytes <= out->gpu_bytes;
    uint32_t l = (uint32_t)cfg->model.layers, V = G.p * G.v;
    const char *unit = G.v > 1 ? "virtual stage" : "stage";
    if ((cfg->first_stage_layers || cfg->last_stage_layers) && G.v > 1)
        snprintf(out->layer_split, sizeof out->layer_split,
                 "%u layers: first stage %u, last %u, the others %u-%u; %u chunks per stage of %u-%u layers", l,
                 out->stages[0].layers, out->stages[G.p - 1].layers, out->stages[G.p > 2 ? 1 : 0].layers,
                 out->stages[G.p > 2 ? G.p - 2 : 0].layers, G.v, min_u32(G.nl, V), max_u32(G.nl, V));
    else if (cfg->first_stage_layers || cfg->last_stage_layers)
        snprintf(out->layer_split, sizeof out->layer_split, "%u layers: first %s %u, last %u, the others %u-%u", l,
                 unit, G.nl[0], G.nl[V - 1], G.nl[V > 2 ? 1 : 0], G.nl[V > 2 ? V - 2 : 0]);
    else if (l % V == 0)
        snprintf(out->layer_split, sizeof out->layer_split, "%u layers: %u per %s", l, l / V, unit);
    else
        snprintf(out->layer_split, sizeof out->layer_split,
                 "%u layers over %u %ss (uneven): %ss 0-%u hold %u, the others %u", l, V, unit, unit, l % V - 1,
                 l / V + 1, l / V);
done:
    gen_free(&G);
    if (rc)
        etk_gen_summary_free(out);
    return rc;
}

void etk_gen_summary_free(etk_gen_summary *s)
{
    if (!s)
        return;
    free(s->stages);
    s->stages = NULL;
}

/* ---------- groups ---------- */
int etk_gen_groups(const etk_gen_config *c, etk_groups **out, etk_error *err)
{
    *out = NULL;
    if (!c->n_ranks)
        return etk_err(err, ETK_EINVAL, "plan not checked: call etk_gen_check first");
    etk_groups *g = etk_groups_new();
    if (!g)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    uint32_t C = c->cp ? c->cp : 1;
    uint32_t n = c->tp > c->dp * C ? c->tp : c->dp * C;
    uint32_t *r = malloc(sizeof(uint32_t) * n);
    if (!r) {
        etk_groups_free(g);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    char id[ETK_GEN_N_GROUP_KINDS][16];
    int rc = 0;
    /* ids from group_ids() of a member: the same numbering as the rank files */
    for (uint32_t pp = 0; pp < c->pp && !rc && c->tp > 1; pp++)
        for (uint32_t dp = 0; dp < c->dp && !rc; dp++)
            for (uint32_t cp = 0; cp < C && !rc; cp++) {
                for (uint32_t t = 0; t < c->tp; t++)
                    r[t] = etk_gen_rank_cp(c, t, cp, dp, pp);
                group_ids(c, 0, cp, dp, pp, id);
                rc = etk_groups_add(g, id[0], r, c->tp);
            }
    for (uint32_t pp = 0; pp < c->pp && !rc && c->dp * C > 1; pp++)
        for (uint32_t t = 0; t < c->tp && !rc; t++) {
            for (uint32_t d = 0; d < c->dp; d++)
                for (uint32_t cp = 0; cp < C; cp++)
                    r[d * C + cp] = etk_gen_rank_cp(c, t, cp, d, pp);
            group_ids(c, t, 0, 0, pp, id);
            rc = etk_groups_add(g, id[1], r, c->dp * C);
        }
    /* embedding groups: only with a tied output layer on separate stages */
    bool emb = false;
    if (c->pp > 1) {
        etk_graph *gr;
        if (!etk_graph_load(&c->model, 1, &gr, NULL)) {
            const gsection *H = &gr->sec[G_SEC_HEAD];
            for (int j = 0; j < H->nops; j++)
                for (int i = 0; i < H->ops[j].nin; i++)
                    emb |= gr->t[H->ops[j].in[i]].weight && gr->t[H->ops[j].in[i]].section == G_SEC_EMBED;
            etk_graph_free(gr);
        }
    }
    for (uint32_t d = 0; d < c->dp && !rc && emb; d++)
        for (uint32_t cp = 0; cp < C && !rc; cp++)
            for (uint32_t t = 0; t < c->tp && !rc; t++) {
                uint32_t two[2] = {etk_gen_rank_cp(c, t, cp, d, 0), etk_gen_rank_cp(c, t, cp, d, c->pp - 1)};
                group_ids(c, t, cp, d, 0, id);
                rc = etk_groups_add(g, id[2], two, 2);
            }
    for (uint32_t pp = 0; pp < c->pp && !rc && C > 1; pp++)
        for (uint32_t d = 0; d < c->dp && !rc; d++)
            for (uint32_t t = 0; t < c->tp && !rc; t++) {
                for (uint32_t cp = 0; cp < C; cp++)
                    r[cp] = etk_gen_rank_cp(c, t, cp, d, pp);
                group_ids(c, t, 0, d, pp, id);
                rc = etk_groups_add(g, id[3], r, C);
            }
    /* expert parallelism: EP groups (dp = e + EP x) and expert-data-parallel groups (same e) */
    uint32_t EP = c->ep ? c->ep : 1, X = c->dp / EP;
    for (uint32_t pp = 0; pp < c->pp && !rc && EP > 1; pp++)
        for (uint32_t x = 0; x < X && !rc; x++)
            for (uint32_t cp = 0; cp < C && !rc; cp++)
                for (uint32_t t = 0; t < c->tp && !rc; t++) {
                    for (uint32_t e = 0; e < EP; e++)
                        r[e] = etk_gen_rank_cp(c, t, cp, e + EP * x, pp);
                    group_ids(c, t, cp, EP * x, pp, id);
                    rc = etk_groups_add(g, id[ETK_GEN_GROUP_EP], r, EP);
                }
    for (uint32_t pp = 0; pp < c->pp && !rc && EP > 1 && X * C > 1; pp++)
        for (uint32_t e = 0; e < EP && !rc; e++)
            for (uint32_t t = 0; t < c->tp && !rc; t++) {
                for (uint32_t x = 0; x < X; x++)
                    for (uint32_t cp = 0; cp < C; cp++)
                        r[x * C + cp] = etk_gen_rank_cp(c, t, cp, e + EP * x, pp);
                group_ids(c, t, 0, e, pp, id);
                rc = etk_groups_add(g, id[ETK_GEN_GROUP_EDP], r, X * C);
            }
    free(r);
    if (rc) {
        etk_groups_free(g);
        return etk_err(err, ETK_ENOMEM, "out of memory building communicator groups");
    }
    *out = g;
    return 0;
}

/* ---------- writing and in-memory workloads ---------- */
static int put_trace(void *u, const etk_node *n, etk_error *err)
{
    if (!etk_trace_add(u, n))
        return etk_err(err, ETK_ENOMEM, "out of memory adding node %" PRIu64, n->id);
    return 0;
}

#define ET_VERSION "0.0.4"

/* Groups and peers (fastwrite.h's PEER_*) of a rank (see gen.h for the numbering). */
static void bind_rank(const etk_gen_config *c, uint32_t r, char pg[ETK_GEN_N_GROUP_KINDS][16], uint32_t peers[N_PEERS])
{
    uint32_t co[ETK_GEN_N_AXES], C = c->cp ? c->cp : 1;
    etk_gen_coords(c, r, co);
    uint32_t s = co[ETK_GEN_PP], t = co[ETK_GEN_TP], x = co[ETK_GEN_CP], d = co[ETK_GEN_DP];
    group_ids(c, t, x, d, s, pg);
    for (int i = 0; i < N_PEERS; i++)
        peers[i] = UINT32_MAX; /* none */
    if (c->pp > 1) {
        peers[PEER_PREV] = etk_gen_rank_cp(c, t, x, d, (s + c->pp - 1) % c->pp);
        peers[PEER_NEXT] = etk_gen_rank_cp(c, t, x, d, (s + 1) % c->pp);
    }
    if (C > 1) {
        peers[PEER_CPPREV] = etk_gen_rank_cp(c, t, (x + C - 1) % C, d, s);
        peers[PEER_CPNEXT] = etk_gen_rank_cp(c, t, (x + 1) % C, d, s);
    }
}

typedef struct wjob {
    const etk_gen_config *cfg;
    const etk_gen_class *cls;
    const char *prefix;
    uint32_t from, to;
    uint64_t bytes;
    int rc;
    etk_error err;
} wjob;

static void *write_ranks(void *arg)
{
    wjob *j = arg;
    size_t plen = strlen(j->prefix) + 32;
    char *path = malloc(plen);
    if (!path) {
        j->rc = etk_err(&j->err, ETK_ENOMEM, "out of memory");
        return NULL;
    }
    for (uint32_t r = j->from; r < j->to && !j->rc; r++) {
        uint32_t co[ETK_GEN_N_AXES], peers[N_PEERS];
        char pg[ETK_GEN_N_GROUP_KINDS][16];
        etk_gen_coords(j->cfg, r, co);
        bind_rank(j->cfg, r, pg, peers);
        snprintf(path, plen, "%s.%u.et", j->prefix, r);
        j->rc = etk_gen_class_write(&j->cls[co[ETK_GEN_PP]], path, ET_VERSION, (const char(*)[16])pg, peers,
                                    &j->bytes, &j->err);
    }
    free(path);
    return NULL;
}

static int train_emit(void *ctx, uint32_t stage, uint32_t tp, uint32_t cp, uint32_t dp, etk_trace *t, etk_error *err)
{
    return emit_stage(ctx, stage, tp, cp, dp, put_trace, t, NULL, err);
}

int etk_gen_write_with(const etk_gen_config *cfg, uint32_t n_stages, etk_gen_emit_fn emit, void *ctx,
                       const char *prefix, uint64_t *bytes_out, etk_error *err)
{
    /* the set is written under a temporary folder and published whole (util/outset.h) */
    etk_outset os;
    int rc = etk_outset_begin(&os, prefix, err);
    if (rc)
        return rc;
    const char *final_prefix = prefix;
    prefix = os.tprefix;
    size_t plen = strlen(prefix) + 32;
    char *path = malloc(plen);
    etk_trace **reps = calloc(n_stages, sizeof *reps);
    etk_gen_class *cls = calloc(n_stages, sizeof *cls);
    uint64_t bytes = 0;
    if (!path || !reps || !cls) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto done;
    }
    /* one template per stage class, bound to its representative */
    for (uint32_t s = 0; s < n_stages && !rc; s++) {
        uint32_t rep = etk_gen_rank(cfg, 0, 0, s), peers[N_PEERS];
        char pg[ETK_GEN_N_GROUP_KINDS][16];
        bind_rank(cfg, rep, pg, peers);
        if (emit == train_emit) { /* streamed: each node encoded as it is emitted, none held */
            if (!(rc = etk_gen_class_begin(&cls[s], (const char(*)[16])pg, peers, err)) &&
                !(rc = emit_stage(ctx, s, 0, 0, 0, etk_gen_class_put, &cls[s], NULL, err)))
                rc = etk_gen_class_end(&cls[s], err);
            continue;
        }
        if (!(reps[s] = etk_trace_new(ET_VERSION))) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
            break;
        }
        if (!(rc = emit(ctx, s, 0, 0, 0, reps[s], err)))
            rc = etk_gen_class_build(&cls[s], reps[s], (const char(*)[16])pg, peers, err);
        etk_trace_free(reps[s]); /* the class keeps what it needs */
        reps[s] = NULL;
    }
    /* groups first: their fsync is cheap before the rank files are written */
    if (!rc) {
        etk_groups *g;
        if (!(rc = etk_gen_groups(cfg, &g, err))) {
            snprintf(path, plen, "%s.json", prefix);
            rc = etk_groups_write(g, path, err);
            etk_groups_free(g);
        }
    }
    if (!rc) {
        /* rank files in parallel: the work is mostly the kernel creating and filling files */
        uint32_t nt = cfg->n_ranks >= 64 ? 4 : 1;
        wjob jobs[4];
        pthread_t th[4];
        uint32_t per = (cfg->n_ranks + nt - 1) / nt;
        for (uint32_t i = 0; i < nt; i++) {
            jobs[i] = (wjob){cfg, cls, prefix, i * per, (i + 1) * per < cfg->n_ranks ? (i + 1) * per : cfg->n_ranks,
                             0, 0, {0, ""}};
            if (nt == 1 || pthread_create(&th[i], NULL, write_ranks, &jobs[i]) != 0) {
                write_ranks(&jobs[i]);
                th[i] = 0;
            }
        }
        for (uint32_t i = 0; i < nt; i++) {
            if (th[i])
                pthread_join(th[i], NULL);
            bytes += jobs[i].bytes;
            if (jobs[i].rc && !rc) {
                rc = jobs[i].rc;
                if (err)
                    *err = jobs[i].err;
            }
        }
    }
    if (!rc && !cfg->no_sync)
        rc = etk_gen_sync_dir(prefix, err);
done:
    if (rc) {
        etk_outset_abort(&os);
        etk_err_prefix(err, "%s: nothing written", final_prefix);
    } else {
        rc = etk_outset_commit(&os, cfg->n_ranks, err);
    }
    for (uint32_t s = 0; reps && cls && s < n_stages; s++) {
        etk_gen_class_free(&cls[s]);
        etk_trace_free(reps[s]);
    }
    free(reps);
    free(cls);
    free(path);
    if (bytes_out)
        *bytes_out = bytes;
    return rc;
}

int etk_gen_write_stats(const etk_gen_config *cfg, const char *prefix, uint64_t *bytes_out, etk_error *err)
{
    /* the output folder is checked before any work (issue #18: found missing after 28 s) */
    int rc = etk_outset_check(prefix, err);
    if (rc)
        return rc;
    if (cfg->mode == ETK_GEN_MODE_INFERENCE)
        return etk_gen_infer_write(cfg, prefix, bytes_out, err);
    gen G;
    rc = gen_init(&G, cfg, err);
    if (rc)
        return rc;
    rc = etk_gen_write_with(cfg, G.p, train_emit, &G, prefix, bytes_out, err);
    gen_free(&G);
    return rc;
}

int etk_gen_write(const etk_gen_config *cfg, const char *prefix, etk_error *err)
{
    return etk_gen_write_stats(cfg, prefix, NULL, err);
}

int etk_gen_workload_with(const etk_gen_config *cfg, uint32_t n_stages, etk_gen_emit_fn emit, void *ctx, bool fold,
                          etk_workload **out, etk_error *err)
{
    *out = NULL;
    int rc = 0;
    etk_workload *w = calloc(1, sizeof *w);
    uint32_t ncp = cfg->cp_comm == ETK_CP_RING ? cfg->cp : 1;
    if (w) {
        w->n_ranks = cfg->n_ranks;
        w->ranks = calloc(cfg->n_ranks, sizeof(etk_trace *));
        /* with the CP ring a rank's ring neighbours must be class representatives too (folding
         * matches sends among representatives): one class per (stage, cp) */
        w->n_classes = n_stages * ncp;
        w->class_of = calloc(cfg->n_ranks, sizeof(uint32_t));
        w->class_rep = calloc(w->n_classes, sizeof(uint32_t));
        w->prefix = strdup("gen");
    }
    if (!w || !w->ranks || !w->class_of || !w->class_rep) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto fail;
    }
    for (uint32_t r = 0; r < cfg->n_ranks; r++) {
        uint32_t co[ETK_GEN_N_AXES];
        etk_gen_coords(cfg, r, co);
        w->class_of[r] = co[ETK_GEN_PP] * ncp + (ncp > 1 ? co[ETK_GEN_CP] : 0);
    }
    for (uint32_t s = 0; s < n_stages; s++)
        for (uint32_t x = 0; x < ncp; x++)
            w->class_rep[s * ncp + x] = etk_gen_rank_cp(cfg, 0, x, 0, s);
    for (uint32_t r = 0; r < cfg->n_ranks; r++) {
        uint32_t co[ETK_GEN_N_AXES];
        etk_gen_coords(cfg, r, co);
        if (fold && r != w->class_rep[w->class_of[r]])
            continue;
        etk_trace *t = etk_trace_new(ET_VERSION);
        if (!t) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
            goto fail;
        }
        w->ranks[r] = t;
        if ((rc = emit(ctx, co[ETK_GEN_PP], co[ETK_GEN_TP], co[ETK_GEN_CP], co[ETK_GEN_DP], t, err)))
            goto fail;
    }
    if ((rc = etk_gen_groups(cfg, &w->groups, err)))
        goto fail;
    *out = w;
    return 0;
fail:
    if (w)
        etk_workload_free(w);
    return rc;
}

int etk_gen_workload(const etk_gen_config *cfg, bool fold, etk_workload **out, etk_error *err)
{
    *out = NULL;
    if (cfg->mode == ETK_GEN_MODE_INFERENCE)
        return etk_gen_infer_workload(cfg, fold, out, err);
    gen G;
    int rc = gen_init(&G, cfg, err);
    if (rc)
        return rc;
    rc = etk_gen_workload_with(cfg, G.p, train_emit, &G, fold, out, err);
    gen_free(&G);
    return rc;
}
