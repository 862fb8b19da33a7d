/* etkit/gen.h — trace synthesis: per-rank Chakra traces of one training step of a transformer
 * (etk_model, dense or MoE) under a parallel plan (DP x TP x PP x CP, EP carved from DP, sequence
 * parallelism, ZeRO-1/2/3, recompute, GPipe/1F1B/interleaved, uneven end stages), with exact
 * FLOPs, bytes and memory.
 *
 * The block graph (model.h) is lowered once per section (embedding, transformer layer, head):
 * tensor dims are sharded over TP, collectives follow from sharding mismatches, the backward
 * pass is derived from the forward one. A pipeline stage is a rank class: its node sequence is
 * built from the lowered sections and the schedule, and every rank of the class gets the same
 * nodes with its own communicator groups and peers bound arithmetically from its coordinates.
 *
 * Ranks: coordinates (tp, cp, dp, pp); rank = sum(coord[axis] * stride[axis]) with the axes
 * ordered by `rank_order` (default "tp,cp,dp,pp": TP fastest). Communicator groups (comm-group
 * JSON ids; with CP = 1 the cp terms vanish): TP group of (cp, dp, pp) = 1 + cp + CP*dp +
 * CP*DP*pp; DP group of (tp, pp) (the CP x DP ranks holding the same weights) = 1 + CP*DP*PP + tp
 * + TP*pp; with a tied output layer and PP > 1, the embedding group {(tp, cp, dp, 0), (tp, cp, dp,
 * PP-1)} = 1 + CP*DP*PP + TP*PP + tp + TP*(cp + CP*dp); CP group of (tp, dp, pp) = 1 + CP*DP*PP +
 * TP*PP + TP*CP*DP + tp + TP*(dp + DP*pp). With --ep E the DP coordinate is dp = e + E*x (EP
 * fastest inside DP: order tp,cp,ep,dp,pp); with B = 1 + CP*DP*PP + TP*PP + TP*CP*DP + TP*DP*PP:
 * EP group of (tp, cp, x, pp) = B + tp + TP*(cp + CP*(x + (DP/E)*pp)); EDP group of (tp, e, pp)
 * (the CP x DP/E ranks with the same experts) = B + TP*CP*(DP/E)*PP + tp + TP*(e + E*pp). Groups
 * of one rank are not emitted. Pipeline messages: send/recv between the same (tp, dp) on
 * adjacent stages (with --vpp the last stage's chunk c feeds the first stage's chunk c + 1), tag =
 * 2*(virtual boundary*M + micro_batch) + (0 forward activation | 1 gradient). With --cp-comm ring,
 * K/V blocks and dK/dV accumulators go by send/recv to the next CP rank (cp + 1 mod CP, same
 * tp, dp, pp) with tags from ETK_GEN_CP_TAG_BASE (docs/gen.md).
 *
 * Use from another command (e.g. `etkit run`):
 *     etk_gen_config cfg; etk_gen_config_init(&cfg);
 *     char *rest[argc]; int nrest;
 *     if (etk_gen_parse_args(argc - 1, argv + 1, &cfg, &nrest, rest, &err)) fail;
 *     ...parse rest[] (the flags gen does not know, in order, with their values)...
 *     if (etk_gen_check(&cfg, &err)) fail;           (plan validation, derived fields)
 *     etk_workload *w; etk_gen_workload(&cfg, true, &w, &err);
 *     cfg.model_flops_per_step, cfg.tokens_per_step  (for MFU and tokens/s)
 * etk_gen_options_help() is the flag reference to print in --help.
 *
 * Inference (mode ETK_GEN_MODE_INFERENCE, src/gen/infer.c, docs/gen.md "Inference"): the same
 * entry points give the traces of one batch of requests — prefill of `batch` prompts of
 * prompt_len tokens, then decode_steps steps of one token per sequence reading the KV cache —
 * under TP, PP (micro-batches pipelined, sampled tokens sent back to stage 0) and EP; DP ranks
 * are independent replicas. Nodes are named "prefill/..." and "decode<i>/..."; the summary adds
 * the KV cache and the per-phase FLOPs (etk_gen_stage / etk_gen_summary inference fields). */
#ifndef ETKIT_GEN_H
#define ETKIT_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "etkit/et.h"
#include "etkit/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* zb-h1: zero-bubble H1 (Qi et al. 2023): 1F1B with the weight-gradient GEMMs deferred */
enum { ETK_SCHED_1F1B = 0, ETK_SCHED_GPIPE = 1, ETK_SCHED_ZBH1 = 2 };
enum { ETK_GEN_MODE_TRAINING = 0, ETK_GEN_MODE_INFERENCE = 1 };
enum { ETK_RECOMPUTE_NONE = 0, ETK_RECOMPUTE_SELECTIVE = 1, ETK_RECOMPUTE_FULL = 2 };
/* context parallelism: K/V all-gathered over the CP group (Llama 3), or passed around the CP
 * ring by send/recv overlapped with blockwise attention (Ring Attention, Megatron CP) */
enum { ETK_CP_ALLGATHER = 0, ETK_CP_RING = 1 };
/* attention core: unfused ops as the block file lists them (Megatron-LM 2022: QK^T, softmax,
 * dropout, AV; the b heads s^2 probabilities saved), or one fused FlashAttention-style kernel
 * forward and one backward (Q, K, V, O and the log-sum-exp saved; docs/gen.md) */
enum { ETK_ATTN_UNFUSED = 0, ETK_ATTN_FLASH = 1 };
/* Tags of the CP ring's send/recv: ETK_GEN_CP_TAG_BASE + 16*r + 4*kind + k, r the ring step
 * (1..cp-1) whose send carries the message, kind 0 forward K/V block, 1 recomputed forward
 * block, 2 backward block, 3 backward gradient accumulator, k the index of the circulated
 * tensor in the layer (0 K, 1 V). Pipeline tags stay below it (checked by etk_gen_check). */
#define ETK_GEN_CP_TAG_BASE (1 << 30)
enum { ETK_GEN_TP = 0, ETK_GEN_DP = 1, ETK_GEN_PP = 2, ETK_GEN_CP = 3, ETK_GEN_N_AXES = 4 };
/* collective group kinds in the summary: TP, DP, and the embedding group (first and last stage
 * ranks of the same (tp, dp), which all-reduce the gradient of a tied output layer) */
/* and the CP group (ranks of the same (tp, dp, pp) that split the sequence: K/V all-gathers) */
/* and, with --ep, the EP group (all-to-all of tokens between the ranks holding different experts)
 * and the expert-data-parallel group EDP (ranks holding the same experts: expert gradients) */
enum {
    ETK_GEN_GROUP_TP = 0,
    ETK_GEN_GROUP_DP = 1,
    ETK_GEN_GROUP_EMB = 2,
    ETK_GEN_GROUP_CP = 3,
    ETK_GEN_GROUP_EP = 4,
    ETK_GEN_GROUP_EDP = 5,
    ETK_GEN_N_GROUP_KINDS = 6
};

#define ETK_GEN_N_DIMS 7

typedef struct etk_gen_config {
    etk_model model;
    bool model_set;
    /* --layers --hidden --heads --kv-heads --ffn --vocab --seq (0: keep the model's) */
    int64_t dims_override[ETK_GEN_N_DIMS];
    uint32_t dp, tp, pp;
    uint32_t cp;             /* context parallelism: sequence split over cp ranks */
    int cp_comm;             /* ETK_CP_ALLGATHER (default) | ETK_CP_RING */
    int attention;           /* ETK_ATTN_FLASH (default) | ETK_ATTN_UNFUSED (Megatron-LM 2022) */
    uint32_t ep;             /* expert parallelism: experts split over ep ranks carved from DP (ep | dp) */
    uint32_t etp;            /* expert tensor parallelism (training): 1 (default, Megatron's MoE recipes:
                              * whole experts on each TP rank, each TP rank routes its own sequence
                              * slice; needs --sp with tp > 1) or tp (experts split along their FFN
                              * over TP, tokens all-gathered over TP after the dispatch) */
    double moe_imbalance;    /* >= 1: tokens of the busiest expert over the mean (the expert GEMMs and
                              * the all-to-all of every rank sized for it; 1 or 0: balanced) */
    uint32_t moe_max_nodes;  /* node-limited routing (DeepSeek-V3): a token's experts on at most this
                              * many nodes, one copy per node crosses the network; 0: unlimited */
    uint32_t gpus_per_node;  /* GPUs per node for --moe-max-nodes (0: 8; etk_run_workload: the
                              * cluster's first dimension, its NVLink domain) */
    bool sp;                 /* Megatron sequence parallelism (needs tp > 1) */
    uint32_t micro_batch;    /* sequences per micro-batch per DP rank */
    uint32_t global_batch;   /* sequences per step (0: micro_batch * dp, one micro-batch) */
    int schedule;            /* ETK_SCHED_* */
    uint32_t vpp;            /* model chunks per pipeline rank (interleaved 1F1B when > 1; 0/1: none) */
    uint32_t first_stage_layers, last_stage_layers; /* uneven ends (Llama 3: one fewer); 0: even split */
    int zero;                /* 0..3: ZeRO stage (1 optimizer, 2 + gradients, 3 + parameters sharded over DP) */
    int recompute;           /* ETK_RECOMPUTE_* */
    uint32_t recompute_modules; /* Megatron's selective recompute modules (--recompute-modules
                              * mla_up_proj,mlp,moe_act): one bit each (src/model/graph.h
                              * G_RMOD_*); 0: none */
    uint32_t recompute_layers; /* with ETK_RECOMPUTE_FULL: only the first N layers of each model
                              * chunk recomputed, the others keep their activations (Megatron's
                              * --recompute-method block --recompute-num-layers N); 0: every layer */
    uint32_t recompute_stage_layers; /* with ETK_RECOMPUTE_FULL: N layers of each pipeline stage
                              * recomputed, spread over its model chunks (chunk c: N / v, one more
                              * when c < N mod v; each chunk's first), the others kept; 0: every layer */
    char precision[8];       /* "bf16" | "fp16": parameters and activations, 2 bytes */
    uint32_t grad_bytes;     /* gradient accumulation/reduction precision: 4 (fp32, default) or 2 */
    bool fp8_weight_cache;   /* --fp8-weight-cache (fp8 training): count Transformer Engine's FP8
                              * copy and transpose of each FP8-GEMM weight beside the BF16 weight */
    bool tp_comm_overlap;    /* --tp-comm-overlap (with --sp): Transformer Engine's userbuffers TP
                              * communication overlap (all-gather+GEMM and GEMM+reduce-scatter run
                              * as TP chunks, pipelined; the backward's bulk overlaps) */
    bool unfused_loss;       /* --unfused-loss: the loss moves the passes of Megatron-LM's
                              * vocab_parallel_cross_entropy over the FP32 logits (52 bytes per BF16
                              * logit) instead of one read each way (src/gen/lower_fwd.c
                              * low_loss_bytes; docs/gen.md "The loss") */
    bool ep_comm_overlap;    /* --ep-comm-overlap (with --ep > 1): Megatron's
                              * --overlap-moe-expert-parallel-comm, the combined 1F1B schedule:
                              * each steady-state forward runs beside a backward, layer by layer,
                              * one's EP all-to-alls beside the other's compute; one more warm-up
                              * forward per stage (docs/gen.md "EP communication overlap") */
    double dp_bucket_mb;     /* DP gradient bucket, MiB (default 25) */
    int rank_order[ETK_GEN_N_AXES]; /* axes fastest first (ETK_GEN_TP, ...) */
    char gpu[32];            /* GPU for the memory verdict (default "h100") */
    bool no_sync;            /* etk_gen_write: skip the final syncfs (scratch output, benchmarks) */
    bool no_names;           /* training: every node's name "" (etkit plan's simulations, whose
                              * results need none: formatting them was ~15% of a search's
                              * simulations, s35); inference keeps its names, which mark its
                              * phases. Not an option; traces written so have no names. */
    struct etk_progress *progress; /* etk_gen_write: rank files written (etkit/progress.h); NULL: none */
    /* inference (--mode inference; docs/gen.md "Inference"): prefill of `batch` prompts of
     * prompt_len tokens, then decode_steps steps of one token per sequence with a KV cache */
    int mode;                /* ETK_GEN_MODE_* */
    uint32_t prompt_len;     /* P, tokens per prompt (0: the model's seq) */
    uint32_t decode_steps;   /* N, decode steps after the first token (default 128) */
    uint32_t batch;          /* B, concurrent sequences per DP replica (default 1) */
    uint32_t infer_micro_batches; /* M, pipeline micro-batches the batch is split into (default 1) */
    uint32_t kv_bytes;       /* bytes per KV-cache element: 2 (default) or 1 (--kv-precision fp8) */
    char train_flag[24];     /* first training-only flag given (refused with --mode inference) */
    /* optional, for the summary (etkit plan's lower bound, src/plan/assess.c): called on the
     * compute nodes of each stage's representative rank (training: once per distinct attribute
     * set, src/gen/nodes.c), their times in ns summed into etk_gen_stage.compute_ns; NULL:
     * compute_ns stays 0. Not an option; copied with the config. */
    double (*comp_node_ns)(void *ctx, const etk_node *n);
    void *comp_node_ns_ctx;
    char infer_flag[24];     /* first inference-only flag given (refused with --mode training) */
    /* derived by etk_gen_check */
    uint32_t n_ranks;
    uint32_t micro_batches;        /* per DP rank per step */
    uint64_t gpu_bytes;            /* HBM capacity of `gpu` */
    uint64_t tokens_per_step;      /* global_batch * seq */
    double model_flops_per_step;   /* all ranks, forward + backward, no recompute ("model FLOPs", MFU) */
    double hw_flops_per_step;      /* all ranks, with recompute and the optimizer ("hardware FLOPs", HFU) */
} etk_gen_config;

void etk_gen_config_init(etk_gen_config *c);
/* Set one option by long name without "--" ("tp", "model", "sp", ...); value NULL for flags
 * without value. ETK_ENOTFOUND when name is not a gen option; other errors name the flag. */
int etk_gen_set(etk_gen_config *c, const char *name, const char *value, etk_error *err);
/* The partial recompute of c as " (first N layers of each chunk)" and its modules as " (modules a b)"
 * for summaries; "" when none. */
const char *etk_gen_recompute_modules_str(const etk_gen_config *c, char *buf, size_t n);
/* True if `name` (without "--") is a gen option; *takes_value says if it needs a value. */
bool etk_gen_is_option(const char *name, bool *takes_value);
/* Consume the gen options of argv[0..argc) ("--name value" or "--name=value"); everything else
 * is copied, in order, to rest[] (*n_rest entries; rest needs argc slots). */
int etk_gen_parse_args(int argc, char **argv, etk_gen_config *cfg, int *n_rest, char **rest, etk_error *err);
/* Validate the plan (the message names the flag and the reason) and fill the derived fields. */
int etk_gen_check(etk_gen_config *cfg, etk_error *err);
/* etk_gen_check's checks and derived fields without the summary it then makes for the FLOPs per
 * step (model_flops_per_step and hw_flops_per_step stay 0; etk_run_simulate makes the summary
 * when it needs them): one emission per stage class saved, for callers that only read plans
 * (`etkit calibrate`'s row loader when asked, the fuzz targets). */
int etk_gen_validate(etk_gen_config *cfg, etk_error *err);
const char *etk_gen_options_help(void);

/* HBM bytes of a GPU by name (a100, h100, h200, b200, mi300x; spec/hardware.md), 0 if unknown. */
uint64_t etk_gen_gpu_bytes(const char *name);

/* Rank <-> coordinates under cfg->rank_order. etk_gen_rank: the rank at cp coordinate 0. */
uint32_t etk_gen_rank(const etk_gen_config *cfg, uint32_t tp, uint32_t dp, uint32_t pp);
uint32_t etk_gen_rank_cp(const etk_gen_config *cfg, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp);
void etk_gen_coords(const etk_gen_config *cfg, uint32_t rank, uint32_t coord[ETK_GEN_N_AXES]);

/* ---------- summary (no traces written; one node sequence per stage class) ---------- */
typedef struct etk_gen_stage {
    uint32_t stage, first_layer, layers;
    bool has_embed, has_head;
    uint64_t nodes;              /* nodes in each rank file of this stage */
    double flops;                /* per rank per step, with recompute */
    double model_flops;          /* per rank per step, without recompute */
    double compute_ns;           /* with etk_gen_config.comp_node_ns set: the sum of its time over
                                  * the compute nodes of a rank of the stage (tp, cp, dp 0) */
    double fwd_compute_ns;       /* training: the forward passes' share of compute_ns (every
                                  * micro-batch's, without recompute) */
    /* collectives per rank per step: [ETK_GEN_GROUP_*][etk_coll_type] */
    uint64_t coll_count[ETK_GEN_N_GROUP_KINDS][ETK_COLL_TYPE_COUNT];
    uint64_t coll_bytes[ETK_GEN_N_GROUP_KINDS][ETK_COLL_TYPE_COUNT];
    uint64_t send_count, send_bytes, recv_count, recv_bytes; /* pipeline */
    uint64_t cp_send_count, cp_send_bytes, cp_recv_count, cp_recv_bytes; /* CP ring (--cp-comm ring) */
    /* memory per rank, bytes */
    uint64_t params;             /* parameters held (TP shard of the stage's weights) */
    uint64_t weight_bytes, grad_bytes, optimizer_bytes; /* optimizer: held all step (fp32 master, Adam m, v) */
    uint64_t fp8_cache_bytes;    /* --fp8-weight-cache: Transformer Engine's FP8 weight copies and
                                  * transposes (2 bytes per FP8-GEMM weight element), in weight_bytes */
    uint64_t optimizer_step_bytes; /* the fp32 copy of 16-bit gradients, only during the optimizer step */
    uint64_t act_per_mb_bytes;   /* activations kept by one micro-batch of the stage */
    uint32_t in_flight;          /* micro-batches (chunks with --vpp) whose activations are held at the peak */
    uint64_t act_bytes;          /* act_per_mb_bytes * in_flight / vpp */
    uint64_t act_layers_bytes;   /* the transformer layers' share of act_bytes (without the
                                  * embedding's and the head's saved tensors) */
    uint64_t comm_buffer_bytes;  /* pipeline send/recv buffers + one DP bucket */
    uint64_t total_bytes;
    /* inference: KV cache of this rank (B x (P + N) tokens of its layers and KV heads), FLOPs
     * per rank of the prefill and of the first and last decode steps (num_ops sums) */
    uint64_t kv_cache_bytes;
    double prefill_flops, decode_first_flops, decode_last_flops;
} etk_gen_stage;

typedef struct etk_gen_summary {
    uint32_t n_ranks, n_stages, micro_batches;
    uint64_t params_total;       /* whole model */
    double step_flops;           /* all ranks, with recompute */
    double model_flops;          /* all ranks, without recompute */
    uint64_t tokens_per_step;
    etk_gen_stage *stages;       /* n_stages */
    uint32_t peak_stage;
    uint64_t peak_bytes, gpu_bytes;
    bool fits;
    char layer_split[128];       /* "32 layers: 16 per stage" or the uneven split */
    /* inference (mode ETK_GEN_MODE_INFERENCE; the training fields above: tokens_per_step =
     * generated tokens dp x B x (N + 1), step_flops = model_flops = the whole request) */
    bool inference;
    uint64_t kv_bytes_per_token;     /* whole model, etk_model_kv_bytes_per_token */
    uint32_t kv_replicas;            /* TP ranks holding each KV head: tp / kv_heads when TP exceeds
                                      * the KV heads (replicated, as vLLM/Megatron do), else 1 */
    double prefill_flops;            /* all ranks */
    double decode_first_flops, decode_last_flops; /* all ranks, decode step 1 and step N */
    uint64_t prompt_tokens;          /* dp x B x P */
} etk_gen_summary;

int etk_gen_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err);
void etk_gen_summary_free(etk_gen_summary *s);
/* etk_gen_check, also handing over the summary it makes for the FLOPs (etk_gen_summarize's; the
 * caller frees it with etk_gen_summary_free; zeroed on failure): saves a second summary. */
int etk_gen_check_summary(etk_gen_config *cfg, etk_gen_summary *sum, etk_error *err);

/* Write <prefix>.<rank>.et for every rank and <prefix>.json (communicator groups). Each file is
 * written to a temporary name and renamed when complete; the file system is synced once at the
 * end. The bytes are those etk_writer writes for the same nodes. */
int etk_gen_write(const etk_gen_config *cfg, const char *prefix, etk_error *err);
/* Same, reporting the bytes of all rank files. */
int etk_gen_write_stats(const etk_gen_config *cfg, const char *prefix, uint64_t *bytes, etk_error *err);
/* The generated workload in memory (see the etk_workload rank-class fields in et.h). */
int etk_gen_workload(const etk_gen_config *cfg, bool fold, etk_workload **out, etk_error *err);
/* Communicator groups of the plan (ids as in the written JSON). */
int etk_gen_groups(const etk_gen_config *cfg, etk_groups **out, etk_error *err);

#ifdef __cplusplus
}
#endif
#endif
