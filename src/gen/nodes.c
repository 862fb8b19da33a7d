/* nodes.c — the training emitter's primitives (emitter, train.h): putting one Chakra node
 * (ids, data and control dependencies, memory attributes, summary counters), compute nodes from
 * lowered instructions, collectives on the rank's groups, pipeline and CP-ring send/recv, and
 * the ZeRO-3 parameter gather. Used by emit.c (forward, schedule) and grad.c (backward). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen/attrs.h"
#include "gen/fastwrite.h"
#include "gen/infer.h"
#include "gen/lower.h"
#include "util/outset.h"
#include "gen/train.h"

int gen_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
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

/* The summary's compute-node times (etk_gen_config.comp_node_ns) by the node's own attributes: a
 * stage repeats each op per layer and micro-batch with the same attributes, and a node's time
 * depends only on them, so each distinct set is timed once per summary (the lower bound of
 * `etkit plan` times every candidate's stages: s34). Keys are the attribute arrays gen_put_comp
 * makes (at most MEMO_ATTRS, names and string values literals), compared in full; a full table
 * or a longer array is timed every time. */
enum { MEMO_SLOTS = 256, MEMO_ENTRIES = MEMO_SLOTS * 3 / 4, MEMO_ATTRS = 18 };
typedef struct {
    uint32_t n;
    etk_attr a[MEMO_ATTRS];
    double ns;
} memo_ent;
struct comp_memo {
    uint16_t slot[MEMO_SLOTS]; /* 0: empty, else 1 + the entry's index */
    uint32_t used;
    memo_ent ent[MEMO_ENTRIES]; /* not zeroed: only the first `used` are read */
};

/* Keys compare as bytes: equal bytes are equal attributes (names and string values by address:
 * gen_put_comp's are string literals, and the same text at another address only costs a second
 * entry); an etk_attr has no padding and its constructors zero the union's unused bytes, so the
 * same attributes give the same bytes. Only kinds whose value lies in the union itself may be
 * keys (key_kind), never lists, whose buffers could be reused. */

/* of each attribute its name's address and its value (the kind goes with the name in
 * gen_put_comp; comp_ns compares all the bytes): half the words, half the time (s35) */
static uint64_t attr_hash(const etk_attr *a, uint32_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(uintptr_t)a[i].name) * 1099511628211ull;
        h = (h ^ a[i].v.u) * 1099511628211ull;
    }
    return h ^ (h >> 29);
}

/* kinds a key may hold (integers held in v.u's 8 bytes, bools, strings) */
static bool key_kind(int32_t k)
{
    return k == ETK_ATTR_STRING || k == ETK_ATTR_BOOL || k == ETK_ATTR_INT32 || k == ETK_ATTR_INT64 ||
           k == ETK_ATTR_UINT32 || k == ETK_ATTR_UINT64;
}

/* the time of a compute node with these attributes (n: the node with them and any memory
 * attributes, which a node's time does not depend on) */
static double comp_ns(gen *G, const etk_attr *attr, uint32_t nattr, const etk_node *n)
{
    const etk_gen_config *c = G->cfg;
    bool key_ok = nattr <= MEMO_ATTRS;
    for (uint32_t i = 0; i < nattr && key_ok; i++)
        key_ok = key_kind(attr[i].kind);
    if (!key_ok)
        return c->comp_node_ns(c->comp_node_ns_ctx, n);
    if (!G->memo) {
        if (!(G->memo = malloc(sizeof *G->memo)))
            return c->comp_node_ns(c->comp_node_ns_ctx, n);
        memset(G->memo->slot, 0, sizeof G->memo->slot);
        G->memo->used = 0;
    }
    struct comp_memo *m = G->memo;
    uint64_t h = attr_hash(attr, nattr);
    for (uint32_t k = 0; k < MEMO_SLOTS; k++) {
        uint16_t *sl = &m->slot[(h + k) % MEMO_SLOTS];
        if (!*sl) {
            double t = c->comp_node_ns(c->comp_node_ns_ctx, n);
            if (m->used < MEMO_ENTRIES) {
                memo_ent *e = &m->ent[m->used++];
                memcpy(e->a, attr, nattr * sizeof *attr);
                e->n = nattr;
                e->ns = t;
                *sl = (uint16_t)m->used;
            }
            return t;
        }
        const memo_ent *e = &m->ent[*sl - 1];
        if (e->n == nattr && !memcmp(e->a, attr, nattr * sizeof *attr))
            return e->ns;
    }
    return c->comp_node_ns(c->comp_node_ns_ctx, n);
}

/* A node out (E->put) and into the summary (E->st). The summary's figures come from the caller,
 * which made the attributes: num_ops (compute), comm_type (collective) and comm_size (collective,
 * send, recv); looking them up by name in the attributes was ~5% of a plan search's phase 1 (s35). */
static int put_node(emitter *E, const char *name, int type, uint64_t *deps, uint32_t ndeps, etk_attr *attr,
                    uint32_t nattr, int64_t num_ops, int64_t comm_type, int64_t comm_size)
{
    const etk_attr *attr0 = attr; /* the node's own attributes, without the memory ones added below */
    uint32_t nattr0 = nattr;
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
            ma[nattr++] = ga_u64("mem_alloc_bytes", E->mem_alloc_pending);
        if (E->mem_free_pending)
            ma[nattr++] = ga_u64("mem_free_bytes", E->mem_free_pending);
        E->mem_alloc_pending = E->mem_free_pending = 0;
        attr = ma;
    }
    n.attr = attr;
    n.n_attr = nattr;
    if (E->st) {
        etk_gen_stage *s = E->st;
        s->nodes++;
        if (type == ETK_NODE_COMP && E->G->cfg->comp_node_ns) {
            double t = comp_ns(E->G, attr0, nattr0, &n);
            s->compute_ns += t;
            if (E->phase == P_FWD)
                s->fwd_compute_ns += t;
        }
        if (type == ETK_NODE_COMP) {
            s->flops += (double)num_ops;
            if (E->phase != P_RECOMP && E->phase != P_OPT)
                s->model_flops += (double)num_ops;
        } else if (type == ETK_NODE_COLL) {
            s->coll_count[E->axis][comm_type]++;
            s->coll_bytes[E->axis][comm_type] += (uint64_t)comm_size;
        } else if (type == ETK_NODE_SEND || type == ETK_NODE_RECV) {
            /* the pipeline's, or the CP ring's */
            int64_t sz = comm_size;
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

int gen_put_comp(emitter *E, const char *name, const ginst *I, uint64_t *deps, uint32_t nd)
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
    etk_attr a[18]; /* not zeroed: only the first n are set and read */
    ga_set(&a[0], "is_cpu_op", ETK_ATTR_BOOL, false);
    ga_set(&a[1], "num_ops", ETK_ATTR_INT64, (uint64_t)(min_op ? 1 : ops));
    ga_set(&a[2], "tensor_size", ETK_ATTR_UINT64, I->bytes);
    uint32_t n = 3;
    if (I->gemm_m > 0) { /* an expert GEMM: one expert's shape, the rank's experts (grouped GEMM) */
        ga_set(&a[n++], "gemm_m", ETK_ATTR_INT64, (uint64_t)I->gemm_m);
        ga_set(&a[n++], "gemm_n", ETK_ATTR_INT64, (uint64_t)I->gemm_n);
        ga_set(&a[n++], "gemm_k", ETK_ATTR_INT64, (uint64_t)I->gemm_k);
        ga_set(&a[n++], "gemm_groups", ETK_ATTR_INT64, (uint64_t)I->gemm_groups);
    }
    if (I->fp8)
        ga_set(&a[n++], "precision", ETK_ATTR_STRING, (uint64_t)(uintptr_t)"fp8");
    if (I->scores)
        ga_set(&a[n++], "attn_scores", ETK_ATTR_BOOL, true);
    if (I->attn)
        ga_set(&a[n++], "op_kind", ETK_ATTR_STRING, (uint64_t)(uintptr_t)"attention");
    if (I->grouped) /* a grouped GEMM over the rank's experts: small groups reach less */
        ga_set(&a[n++], "gemm_grouped", ETK_ATTR_BOOL, true);
    if (I->grouped && I->wgrad && I->fp8) /* its FP8 weight gradient (grouped_fp8_wgrad_factor) */
        ga_set(&a[n++], "gemm_wgrad", ETK_ATTR_BOOL, true);
    if (I->attn && I->causal) /* the kernel skips the masked blocks: half the s^2 FLOPs */
        ga_set(&a[n++], "attn_causal", ETK_ATTR_BOOL, true);
    if (I->attn && I->causal && I->attn_w > 0) /* a sliding window: the tiles it computes */
        ga_set(&a[n++], "attn_window", ETK_ATTR_INT64, (uint64_t)I->attn_w);
    if (I->attn && I->phase == P_BWD)
        ga_set(&a[n++], "attn_bwd", ETK_ATTR_BOOL, true);
    if (I->attn && I->attn_s > 0) /* the kernel's key length and head dim: attn_half_seq/_dim */
        ga_set(&a[n++], "attn_s", ETK_ATTR_INT64, (uint64_t)I->attn_s);
    if (I->attn && I->attn_d > 0)
        ga_set(&a[n++], "attn_d", ETK_ATTR_INT64, (uint64_t)I->attn_d);
    if (I->host_sync) /* the host waits for it (the MoE token counts; the host model) */
        ga_set(&a[n++], "host_sync", ETK_ATTR_BOOL, true);
    /* the summary counts the op's real FLOPs (0 for a min_op: not a real FLOP) */
    int rc = put_node(E, name, ETK_NODE_COMP, deps, nd, a, n, ops, 0, 0);
    /* recomputed work inside a backward node is hardware, not model, FLOPs */
    if (!rc && E->st && I->recomp_flops > 0 && E->phase != P_RECOMP && E->phase != P_OPT)
        E->st->model_flops -= (double)(int64_t)(I->recomp_flops + 0.5);
    return rc;
}

int gen_put_coll(emitter *E, const char *name, int coll, int64_t bytes, int axis, uint64_t *deps, uint32_t nd)
{
    etk_attr a[4];
    ga_set(&a[0], "is_cpu_op", ETK_ATTR_BOOL, false);
    ga_set(&a[1], "comm_type", ETK_ATTR_INT64, (uint64_t)(int64_t)coll);
    ga_set(&a[2], "comm_size", ETK_ATTR_INT64, (uint64_t)bytes);
    ga_set(&a[3], "pg_name", ETK_ATTR_STRING, (uint64_t)(uintptr_t)E->pg[axis]);
    E->axis = axis;
    return put_node(E, name, ETK_NODE_COLL, deps, nd, a, 4, 0, coll, bytes);
}

int gen_put_p2p(emitter *E, const char *name, bool send, uint32_t peer, int64_t bytes, int32_t tag,
                uint64_t *deps, uint32_t nd)
{
    etk_attr a[4];
    ga_set(&a[0], "is_cpu_op", ETK_ATTR_BOOL, false);
    ga_set(&a[1], send ? "comm_dst" : "comm_src", ETK_ATTR_INT32, (uint64_t)(int64_t)(int32_t)peer);
    ga_set(&a[2], "comm_size", ETK_ATTR_INT64, (uint64_t)bytes);
    ga_set(&a[3], "comm_tag", ETK_ATTR_INT32, (uint64_t)(int64_t)tag);
    E->last_p2p = E->next_id;
    return put_node(E, name, send ? ETK_NODE_SEND : ETK_NODE_RECV, deps, nd, a, 4, 0, 0, bytes);
}

static int sec_group(const ginst *I);

/* A node of a lowered section: compute, collective, or a send/recv of the CP ring. */
void gen_put_inst(emitter *E, const ginst *I, const char *name, uint64_t *deps, uint32_t nd)
{
    if (I->type == ETK_NODE_COMP) {
        gen_put_comp(E, name, I, deps, nd);
    } else if (I->type == ETK_NODE_COLL) {
        gen_put_coll(E, name, I->coll, I->comm_bytes, sec_group(I), deps, nd);
    } else {
        uint64_t keep = E->last_p2p; /* the pipeline's latest transfer stays the pipeline's */
        E->p2p_cp = true;
        gen_put_p2p(E, name, I->type == ETK_NODE_SEND, I->peer == PEER_CP_NEXT ? E->cp_next : E->cp_prev, I->comm_bytes,
                I->tag, deps, nd);
        E->p2p_cp = false;
        E->last_p2p = keep;
    }
}

void gen_si_label(const emitter *E, int si, char *buf, size_t n)
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
bool gen_inst_uses_weight(const ginst *I)
{
    return I->type == ETK_NODE_COMP && (I->uses_w || I->nw > 0 || I->dgrad_name);
}

/* ZeRO-3: all-gather of the 16-bit parameters a section instance uses (comm_size = the per-rank
 * shard, padded to equal shards). It has no data dependency, only control dependencies on the
 * previous gather and on the first node of the previous section instance: the gathers run in
 * section order and one section ahead of the compute (the next layer's parameters are prefetched
 * while this one computes, FSDP's forward/backward prefetch), never further. Returns its id. */
uint64_t gen_emit_gather(emitter *E, int si, uint32_t j, const char *what)
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
        gen_si_label(E, si, lab, sizeof lab);
        if (E->names)
            snprintf(name, sizeof name, "mb%u.%s.%s%s", j, lab, k ? "expert_" : "", what);
        E->pending_ctrl2 = E->last_gather;
        E->pending_ctrl3 = E->prev_sec_base;
        E->last_gather = E->next_id;
        gen_put_coll(E, name, ETK_COLL_ALL_GATHER, (int64_t)((n + d - 1) / d * 2), k ? ETK_GEN_GROUP_EDP : ETK_GEN_GROUP_DP,
                 NULL, 0);
    }
    return (elems && G->dpw > 1) || (x && G->edp > 1) ? E->last_gather : 0;
}
