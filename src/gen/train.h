/* train.h — private to training trace synthesis (src/gen/). Module map (arrows point down):
 *   check.c    etk_gen_check / etk_gen_infer_check: the whole plan checked, FLOPs filled in
 *   gen.c      per-stage plan of training (gen_init: layers per stage, weights), the summary
 *              (etk_gen_summarize) and the entry points etk_gen_write / etk_gen_workload, which
 *              dispatch to training (emit.c) or inference (infer.c)
 *   emit.c     the emitter: nodes, forward pass, the pipeline schedule of one stage
 *   grad.c     backward pass, ZeRO-3, bucketed gradient reduction, optimizer step
 *   infer.c    inference emission (prefill and decode), through writer.c like training
 *   writer.c   per-rank files (fastwrite.c) and in-memory workloads for any emitter
 *   groups.c   communicator group ids and the comm-group file
 *   plan.c     options, etk_gen_set, rank numbering (etk_gen_rank, etk_gen_coords)
 *   lower.c    sections of the block graph lowered to instruction programs (lower.h)
 * check -> gen -> (emit -> grad), infer -> writer -> groups -> plan; emitters -> lower. */
#ifndef ETK_GEN_TRAIN_H
#define ETK_GEN_TRAIN_H
#include <stdbool.h>
#include <stdint.h>

#include "etkit/gen.h"
#include "gen/infer.h"
#include "gen/lower.h"

#define ADAM_FLOPS_PER_PARAM 10 /* m, v updates 4; bias corrections 2; sqrt, divide 2; update, decay 2 */

typedef struct gen {
    const etk_gen_config *cfg;
    etk_graph *g;
    etk_arena *a;
    gprog prog[G_N_SEC + 1]; /* [G_SEC_DENSE]: the dense_layer section, when dense > 0 */
    gprog kept[G_N_SEC + 1]; /* --recompute-num-layers N: the layer sections lowered without full
                              * recompute, for the layers of a chunk after its first N */
    /* sliding-window layers (model.window, --attention flash): prog[] and kept[] lowered with
     * the window (win true) */
    gprog wprog[G_N_SEC + 1];
    gprog wkept[G_N_SEC + 1];
    bool win;
    bool partial;            /* --recompute-num-layers / --recompute-stage-layers: kept[] lowered */
    uint32_t p, m, v;     /* stages, micro-batches, model chunks per stage (interleaving) */
    uint32_t *first, *nl; /* per virtual stage q = chunk * p + stage: first layer, layer count */
    uint64_t bucket_bytes;
    int act_bytes;
    bool tied;     /* the head uses an embedding weight (tied output layer) */
    bool emb_group; /* tied and PP > 1: first and last stage all-reduce its gradient */
    uint32_t cp;    /* context parallel degree (1: none) */
    uint32_t dpw;   /* ranks holding the same weights: dp x cp (gradient reduction, ZeRO sharding) */
    uint32_t ep;    /* expert parallel degree (1: none) */
    uint32_t edp;   /* ranks holding the same experts: dp x cp / ep (folded: tp x cp x dp / ep) */
    bool z3;        /* ZeRO-3 with dp > 1: parameters gathered per section instance, gradients
                     * reduce-scattered per section instance per micro-batch */
    uint32_t dense;       /* the first `dense` layers are the dense_layer section's (DeepSeek) */
    uint64_t sec_elems[G_N_SEC + 1]; /* weights a section instance uses, per TP rank (ZeRO-3 gather) */
    uint64_t sec_own[G_N_SEC + 1];   /* weights owned by the section (its gradients), per TP rank */
    uint64_t sec_x[G_N_SEC + 1];     /* --ep: the expert weights among them (this rank's experts),
                                      * sharded over EDP instead of DP */
    struct comp_memo *memo; /* the summary's compute-node times by attributes (nodes.c), or NULL */
} gen;

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
    bool names;                /* name the nodes: put set and not etk_gen_config.no_names */
    void *u;
    etk_error *err;
    uint64_t next_id;
    uint64_t pending_ctrl;
    /* memory over time (docs/compute-model.md): attributes mem_alloc_bytes / mem_free_bytes for
     * the next node put (static state on the first node, saved activations from a section's
     * forward to the end of its backward) */
    uint64_t mem_alloc_pending, mem_free_pending;
    uint64_t opt_step_bytes; /* the optimizer step's fp32 gradient copy, alloc'd and freed by its node */
    int nsi;
    int *si_sec;
    uint8_t *si_kept;     /* per section instance: a layer lowered in G->kept (--recompute-num-layers) */
    uint32_t *si_layer;
    uint64_t *fbase, *fin;
    uint64_t **bid;       /* per (section instance, micro-batch): backward ids (gen_bid_get) */
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

/* stage.c */
/* The program of section instance si of emitter E: G->kept for the layers of a chunk after its
 * first --recompute-num-layers, G->prog otherwise. */
const gprog *gen_si_prog(const emitter *E, int si);
/* Layers of stage s (dense_layer ones among them in *dense) recomputed in full: all with
 * --recompute full, the first N of each chunk with --recompute-num-layers N, none otherwise. */
uint32_t gen_stage_recomputed(const gen *G, uint32_t s, uint32_t *dense);
/* Layers of virtual stage q (chunk q / p of stage q mod p) recomputed in full: its first ones. */
uint32_t gen_chunk_recomputed(const gen *G, uint32_t q);
int gen_init(gen *G, const etk_gen_config *cfg, etk_error *err);
void gen_free(gen *G);
/* summary.c: etk_gen_summarize of a training plan (whatever cfg->mode says) */
int gen_train_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err);
uint32_t gen_stage_layers(const gen *G, uint32_t s);
uint32_t gen_stage_dense(const gen *G, uint32_t s);
bool gen_is_expert(const gen *G, int t);
uint64_t gen_weight_elems_rank(const gen *G, int t);
void gen_stage_memory(gen *G, uint32_t s, etk_gen_stage *st);
int gen_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x);
int gen_put_comp(emitter *E, const char *name, const ginst *I, uint64_t *deps, uint32_t nd);
int gen_put_p2p(emitter *E, const char *name, bool send, uint32_t peer, int64_t bytes, int32_t tag,
                uint64_t *deps, uint32_t nd);
int gen_put_coll(emitter *E, const char *name, int coll, int64_t bytes, int axis, uint64_t *deps, uint32_t nd);
void gen_put_inst(emitter *E, const ginst *I, const char *name, uint64_t *deps, uint32_t nd);
void gen_si_label(const emitter *E, int si, char *buf, size_t n);
bool gen_inst_uses_weight(const ginst *I);
uint64_t gen_emit_gather(emitter *E, int si, uint32_t j, const char *what);
int gen_emit_stage(gen *G, uint32_t stage, uint32_t tp_i, uint32_t cp_i, uint32_t dp_i, put_fn put, void *u,
                   etk_gen_stage *st, etk_error *err);
uint64_t *gen_bid_get(emitter *E, int si, uint32_t j);
/* Backward of section instance si for micro-batch j. gd: ids of the output gradient.
 * mode: BW_ALL every instruction; BW_B all but the weight-gradient GEMMs (zb-h1 backward unit);
 * BW_W only those (zb-h1 W unit; gd comes from the B unit). Returns the ids of the input
 * gradient in out (count). */
enum { BW_ALL = 0, BW_B = 1, BW_W = 2 };
int gen_emit_bwd(emitter *E, int si, uint32_t j, const uint64_t *gd, int ngd, uint64_t *out, bool last, int mode);
void gen_emit_optimizer(emitter *E, uint64_t unit_end);
bool gen_ep_folded(const etk_gen_config *c);
void gen_group_ids(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp,
                   char pg[ETK_GEN_N_GROUP_KINDS][16]);
/* writer.c: the rank files of any emitter with one rank class per stage; a stage's
 * representative is streamed straight into the file encoder when stream != NULL (training and
 * inference), no trace held; else emitted into a trace first */
typedef int (*gen_stream_fn)(void *ctx, uint32_t stage, put_fn put, void *u, etk_error *err);
int gen_write_streamed(const etk_gen_config *cfg, uint32_t n_stages, etk_gen_emit_fn emit, gen_stream_fn stream,
                       void *ctx, const char *prefix, uint64_t *bytes_out, etk_error *err);
int gen_put_trace(void *u, const etk_node *n, etk_error *err);

#endif
