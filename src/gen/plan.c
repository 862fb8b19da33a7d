/* plan.c — the parallel plan of `etkit gen` / `etkit run`: defaults, option parsing shared by
 * every command that generates workloads (etk_gen_set / etk_gen_parse_args), validation with
 * the reason named per flag, rank <-> (tp, dp, pp) coordinates, and GPU memory capacities
 * (spec/hardware.md). gen.c builds the traces from a checked plan. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "etkit/gen.h"
#include "gen/infer.h"
#include "model/graph.h"

void etk_gen_config_init(etk_gen_config *c)
{
    memset(c, 0, sizeof *c);
    c->dp = c->tp = c->pp = 1;
    c->micro_batch = 1;
    c->schedule = ETK_SCHED_1F1B;
    c->recompute = ETK_RECOMPUTE_NONE;
    c->attention = ETK_ATTN_FLASH; /* fused FlashAttention, as current training stacks run */
    snprintf(c->precision, sizeof c->precision, "bf16");
    c->grad_bytes = 4;
    c->dp_bucket_mb = 25;
    c->rank_order[0] = ETK_GEN_TP;
    c->rank_order[1] = ETK_GEN_CP;
    c->rank_order[2] = ETK_GEN_DP;
    c->rank_order[3] = ETK_GEN_PP;
    c->cp = 1;
    c->ep = 1;
    snprintf(c->gpu, sizeof c->gpu, "h100");
}

static const struct {
    const char *name;
    bool value;
} options[] = {
    {"model", true}, {"model-file", true}, {"layers", true}, {"hidden", true}, {"heads", true},
    {"kv-heads", true}, {"ffn", true}, {"vocab", true}, {"seq", true}, {"dp", true}, {"tp", true}, {"cp", true}, {"cp-comm", true}, {"ep", true}, {"etp", true}, {"moe-imbalance", true}, {"moe-max-nodes", true}, {"gpus-per-node", true}, {"attention", true},
    {"pp", true}, {"sp", false}, {"micro-batch", true}, {"global-batch", true}, {"schedule", true}, {"vpp", true}, {"first-stage-layers", true}, {"last-stage-layers", true},
    {"zero", true}, {"fsdp", false}, {"recompute", true}, {"recompute-modules", true}, {"recompute-num-layers", true}, {"recompute-stage-layers", true}, {"precision", true}, {"grad-precision", true}, {"fp8-weight-cache", false}, {"tp-comm-overlap", false}, {"ep-comm-overlap", false}, {"unfused-loss", false},
    {"dp-bucket-mb", true}, {"rank-order", true}, {"gpu", true},
    {"mode", true}, {"prompt-len", true}, {"decode-steps", true}, {"batch", true}, {"micro-batches", true},
    {"kv-precision", true},
};

/* flags that only make sense in one mode: the first one given is remembered and refused by
 * etk_gen_check in the other mode (whatever the order of --mode and the flag) */
static const char *const training_only[] = {"sp", "cp", "micro-batch", "global-batch", "schedule", "vpp", "zero",
                                            "fsdp", "recompute", "recompute-modules", "recompute-num-layers", "recompute-stage-layers", "grad-precision", "fp8-weight-cache", "tp-comm-overlap", "ep-comm-overlap", "unfused-loss", "dp-bucket-mb", "etp", "moe-imbalance",
                                            "moe-max-nodes", NULL};
static const char *const inference_only[] = {"prompt-len", "decode-steps", "batch", "micro-batches", "kv-precision",
                                             NULL};

static void note_mode_flag(etk_gen_config *c, const char *name)
{
    for (int i = 0; training_only[i]; i++)
        if (!strcmp(name, training_only[i]) && !c->train_flag[0])
            snprintf(c->train_flag, sizeof c->train_flag, "%s", name);
    for (int i = 0; inference_only[i]; i++)
        if (!strcmp(name, inference_only[i]) && !c->infer_flag[0])
            snprintf(c->infer_flag, sizeof c->infer_flag, "%s", name);
}

const char *etk_gen_options_help(void)
{
    return "model:\n"
           "  --model NAME         built-in preset (see 'etkit models'), default llama2-7b\n"
           "  --model-file FILE    model in the preset YAML format, or a Hugging Face config.json\n"
           "  --layers N --hidden N --heads N --kv-heads N --ffn N --vocab N --seq N\n"
           "                       override one dimension of the model\n"
           "plan:\n"
           "  --dp N --tp N --pp N data, tensor and pipeline parallel degrees (default 1)\n"
           "  --cp N               context parallel degree: sequence split over N ranks\n"
           "  --cp-comm C          allgather (default: K/V all-gathered, Llama 3) | ring (K/V blocks\n"
           "                       passed around the CP ring by send/recv, overlapped with blockwise attention)\n"
           "  --ep N               expert parallel degree (MoE models): experts split over N ranks,\n"
           "                       tokens exchanged by all-to-all; with --etp 1 folded over TP x CP x DP\n"
           "                       as Megatron (N divides tp x cp x dp, may exceed --dp), else N divides --dp\n"
           "  --etp N              expert tensor parallelism: 1 (default, as Megatron's MoE recipes:\n"
           "                       whole experts per TP rank, each TP rank dispatches its own sequence\n"
           "                       slice; needs --sp with --tp > 1) or --tp (experts split over TP)\n"
           "  --moe-imbalance F    tokens of the busiest expert / the mean (>= 1, default 1: balanced);\n"
           "                       expert GEMMs and all-to-alls sized for the busiest\n"
           "  --moe-max-nodes M    node-limited routing (DeepSeek-V3: 4): a token's experts on at most M\n"
           "                       nodes, one copy per node crosses the network\n"
           "  --gpus-per-node N    GPUs per node for --moe-max-nodes (default 8; 'etkit run' and\n"
           "                       'calibrate': the cluster's)\n"
           "  --sp                 Megatron sequence parallelism (with --tp > 1)\n"
           "  --attention A        flash (default: one fused FlashAttention kernel forward and one\n"
           "                       backward, op_kind attention; Q, K, V, O and the log-sum-exp saved;\n"
           "                       selective recompute a no-op) | unfused (QK^T, softmax, dropout, AV as\n"
           "                       separate kernels, the b heads s^2 probabilities saved: Megatron-LM\n"
           "                       2022, what the calibration runs of spec/calibration.md executed)\n"
           "  --micro-batch N      sequences per micro-batch per DP rank (default 1)\n"
           "  --global-batch N     sequences per step (default micro-batch x dp)\n"
           "  --schedule S         1f1b (default) | gpipe | zb-h1 (zero bubble: weight gradients deferred)\n"
           "  --vpp V              model chunks per pipeline rank: interleaved 1F1B (Megatron) when > 1\n"
           "  --first-stage-layers N, --last-stage-layers N\n"
           "                       layers of the first / last pipeline stage (with --vpp: over all its\n"
           "                       chunks); the others split the rest evenly (Llama 3 405B: 126\n"
           "                       layers, 16 stages, 7 on the ends)\n"
           "  --zero 0|1|2|3       1: optimizer state sharded over DP (reduce-scatter + all-gather);\n"
           "                       2: gradients sharded too; 3: parameters too, gathered per layer\n"
           "  --fsdp               same as --zero 3\n"
           "  --recompute R        none (default) | selective | full\n"
           "  --recompute-num-layers N  with --recompute full: only the first N layers of each model\n"
           "                       chunk recomputed, the others keep their activations (Megatron's\n"
           "                       block method); 0 (default): every layer\n"
           "  --recompute-stage-layers N  with --recompute full: N layers of each pipeline stage\n"
           "                       recomputed, spread over its --vpp chunks (each chunk's first)\n"
           "  --recompute-modules L  Megatron's selective recompute modules, comma-separated:\n"
           "                       mla_up_proj (MLA up-projections: Q, K, V not kept), mlp (dense\n"
           "                       layers' MLP), moe_act (experts' SwiGLU); 'none' clears\n"
           "  --precision P        bf16 (default) | fp16 parameters and activations; fp8: FP8 GEMMs\n"
           "                       (1-byte GEMM inputs, fp8 peak), BF16 elsewhere\n"
           "  --grad-precision P   fp32 (default) | bf16 | fp16 gradient accumulation and reduction\n"
           "  --fp8-weight-cache   with --precision fp8: count Transformer Engine's FP8 copy and\n"
           "                       transpose of each FP8-GEMM weight beside its BF16 weight (+2 bytes\n"
           "                       per element; Megatron without --fp8-param-gather). Default: 2 bytes\n"
           "                       per weight element, as FP8 primary weights (1) + transpose (1)\n"
           "  --tp-comm-overlap    with --sp: Transformer Engine's TP communication overlap\n"
           "                       (Megatron --tp-comm-overlap, userbuffers): each all-gather+GEMM\n"
           "                       and GEMM+reduce-scatter of a layer runs as TP chunks, the transfer\n"
           "                       of one chunk beside the GEMM of another; in the backward the\n"
           "                       input-gradient reduce-scatter runs beside the weight-gradient GEMMs\n"
           "  --ep-comm-overlap    with --ep > 1: Megatron's overlap_moe_expert_parallel_comm (combined\n"
           "                       1F1B): each steady-state forward runs beside the backward of an\n"
           "                       earlier micro-batch layer by layer, the EP all-to-alls of one beside\n"
           "                       the compute of the other; one more warm-up forward per stage; 1f1b\n"
           "                       only, --vpp when --pp > 1, no --recompute full, no --zero 3\n"
           "  --unfused-loss       the loss as Megatron-LM's vocab_parallel_cross_entropy over the\n"
           "                       logits cast to FP32 (unfused: cast, max, subtract, exp, sum, divide;\n"
           "                       backward a multiply and the cast back): 52 bytes per BF16 logit\n"
           "                       instead of one read of the logits each way (4)\n"
           "  --dp-bucket-mb X     DP gradient bucket in MiB (default 25)\n"
           "  --rank-order A,B,..  axes fastest first (default tp,cp,dp,pp; cp, if omitted, follows tp)\n"
           "  --gpu NAME           a100 | h100 (default) | h200 | b200 | mi300x: memory capacity\n"
           "inference (--mode inference; TP, PP, EP; DP = independent replicas; docs/gen.md):\n"
           "  --mode M             training (default) | inference: prefill + decode with a KV cache\n"
           "  --prompt-len P       prompt tokens per sequence (default: the model's --seq)\n"
           "  --decode-steps N     decode steps: tokens generated per sequence after the first (default 128)\n"
           "  --batch B            concurrent sequences per DP replica (default 1)\n"
           "  --micro-batches M    pipeline micro-batches the batch is split into (default 1; M divides B)\n"
           "  --kv-precision P     bf16 | fp16 (default: 2 bytes) | fp8 (1-byte KV cache)\n";
}

bool etk_gen_is_option(const char *name, bool *takes_value)
{
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (!strcmp(options[i].name, name)) {
            if (takes_value)
                *takes_value = options[i].value;
            return true;
        }
    return false;
}

static int parse_u32(const char *flag, const char *v, uint32_t *out, etk_error *err)
{
    char *end;
    errno = 0;
    if (!v || !*v || *v == '-')
        return etk_err(err, ETK_EINVAL, "--%s wants a positive integer, got '%s'", flag, v ? v : "");
    unsigned long long x = strtoull(v, &end, 10);
    if (!*end && *v >= '0' && *v <= '9' && (errno == ERANGE || x > UINT32_MAX)) /* said "wants a positive integer" */
        return etk_err(err, ETK_EINVAL, "--%s %s is out of range (at most 4294967295)", flag, v);
    if (errno || *end || x == 0)
        return etk_err(err, ETK_EINVAL, "--%s wants a positive integer, got '%s'", flag, v);
    *out = (uint32_t)x;
    return 0;
}

static int parse_i64(const char *flag, const char *v, int64_t *out, etk_error *err)
{
    uint32_t x;
    int rc = parse_u32(flag, v, &x, err);
    if (!rc)
        *out = x;
    return rc;
}

/* A flag with two values: *out = 0 for `a`, 1 for `b`. */
static int parse_pair(const char *flag, const char *v, const char *a, const char *b, int *out, etk_error *err)
{
    if (strcmp(v, a) && strcmp(v, b))
        return etk_err(err, ETK_EINVAL, "--%s wants %s or %s, got '%s'", flag, a, b, v);
    *out = strcmp(v, a) ? 1 : 0;
    return 0;
}

const char *etk_gen_recompute_modules_str(const etk_gen_config *c, char *buf, size_t n)
{
    size_t k = 0, k0;
    if (n)
        buf[0] = 0;
    if (c->recompute == ETK_RECOMPUTE_FULL && (c->recompute_layers || c->recompute_stage_layers) && n) {
        int w = c->recompute_layers ? snprintf(buf, n, " (first %u layer%s of each chunk)", c->recompute_layers,
                                               c->recompute_layers == 1 ? "" : "s")
                                    : snprintf(buf, n, " (%u layer%s of each stage)", c->recompute_stage_layers,
                                               c->recompute_stage_layers == 1 ? "" : "s");
        k = w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
    }
    k0 = k;
    for (uint32_t b = 1; c->recompute_modules && b && etk_graph_rmod_name(b) && k < n; b <<= 1)
        if (c->recompute_modules & b)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k > k0 ? " " : " (modules ", etk_graph_rmod_name(b));
    if (k > k0 && k < n)
        snprintf(buf + k, n - k, ")");
    return buf;
}

int etk_gen_set(etk_gen_config *c, const char *name, const char *v, etk_error *err)
{
    bool tv;
    if (!etk_gen_is_option(name, &tv))
        return etk_err(err, ETK_ENOTFOUND, "unknown option --%s", name);
    if (tv && !v)
        return etk_err(err, ETK_EINVAL, "--%s needs a value", name);
    note_mode_flag(c, name);
    if (!strcmp(name, "mode")) {
        if (!strcmp(v, "training"))
            c->mode = ETK_GEN_MODE_TRAINING;
        else if (!strcmp(v, "inference"))
            c->mode = ETK_GEN_MODE_INFERENCE;
        else
            return etk_err(err, ETK_EINVAL, "--mode wants training or inference, got '%s'", v);
        return 0;
    }
    if (!strcmp(name, "prompt-len"))
        return parse_u32(name, v, &c->prompt_len, err);
    if (!strcmp(name, "decode-steps"))
        return parse_u32(name, v, &c->decode_steps, err);
    if (!strcmp(name, "batch"))
        return parse_u32(name, v, &c->batch, err);
    if (!strcmp(name, "micro-batches"))
        return parse_u32(name, v, &c->infer_micro_batches, err);
    if (!strcmp(name, "kv-precision")) {
        if (!strcmp(v, "bf16") || !strcmp(v, "fp16"))
            c->kv_bytes = 2;
        else if (!strcmp(v, "fp8"))
            c->kv_bytes = 1;
        else
            return etk_err(err, ETK_EINVAL, "--kv-precision wants bf16, fp16 or fp8, got '%s'", v);
        return 0;
    }
    if (!strcmp(name, "model")) {
        int rc = etk_model_preset(v, &c->model, err);
        if (rc)
            return etk_err_prefix(err, "--model");
        c->model_set = true;
        return 0;
    }
    if (!strcmp(name, "model-file")) {
        int rc = etk_model_load(v, &c->model, err);
        if (rc)
            return etk_err_prefix(err, "--model-file");
        c->model_set = true;
        return 0;
    }
    /* model dimensions: applied over the chosen model by etk_gen_check, whatever the order */
    static const char *dims[ETK_GEN_N_DIMS] = {"layers", "hidden", "heads", "kv-heads", "ffn", "vocab", "seq"};
    for (int i = 0; i < ETK_GEN_N_DIMS; i++)
        if (!strcmp(name, dims[i]))
            return parse_i64(name, v, &c->dims_override[i], err);
    if (!strcmp(name, "dp"))
        return parse_u32(name, v, &c->dp, err);
    if (!strcmp(name, "tp"))
        return parse_u32(name, v, &c->tp, err);
    if (!strcmp(name, "pp"))
        return parse_u32(name, v, &c->pp, err);
    if (!strcmp(name, "cp"))
        return parse_u32(name, v, &c->cp, err);
    if (!strcmp(name, "ep"))
        return parse_u32(name, v, &c->ep, err);
    if (!strcmp(name, "etp"))
        return parse_u32(name, v, &c->etp, err);
    if (!strcmp(name, "moe-max-nodes"))
        return parse_u32(name, v, &c->moe_max_nodes, err);
    if (!strcmp(name, "gpus-per-node"))
        return parse_u32(name, v, &c->gpus_per_node, err);
    if (!strcmp(name, "moe-imbalance")) {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || *end || !(x >= 1) || x > 1e3)
            return etk_err(err, ETK_EINVAL, "--moe-imbalance wants the busiest expert's tokens over the mean, a number "
                           "in [1, 1000], got '%s'", v);
        c->moe_imbalance = x;
        return 0;
    }
    if (!strcmp(name, "attention"))
        return parse_pair(name, v, "unfused", "flash", &c->attention, err); /* ETK_ATTN_* */
    if (!strcmp(name, "cp-comm"))
        return parse_pair(name, v, "allgather", "ring", &c->cp_comm, err); /* ETK_CP_* */
    if (!strcmp(name, "first-stage-layers"))
        return parse_u32(name, v, &c->first_stage_layers, err);
    if (!strcmp(name, "last-stage-layers"))
        return parse_u32(name, v, &c->last_stage_layers, err);
    if (!strcmp(name, "sp")) {
        c->sp = true;
        return 0;
    }
    if (!strcmp(name, "fp8-weight-cache")) {
        c->fp8_weight_cache = true;
        return 0;
    }
    if (!strcmp(name, "tp-comm-overlap")) {
        c->tp_comm_overlap = true;
        return 0;
    }
    if (!strcmp(name, "ep-comm-overlap")) {
        c->ep_comm_overlap = true;
        return 0;
    }
    if (!strcmp(name, "unfused-loss")) {
        c->unfused_loss = true;
        return 0;
    }
    if (!strcmp(name, "vpp"))
        return parse_u32(name, v, &c->vpp, err);
    if (!strcmp(name, "micro-batch"))
        return parse_u32(name, v, &c->micro_batch, err);
    if (!strcmp(name, "global-batch"))
        return parse_u32(name, v, &c->global_batch, err);
    if (!strcmp(name, "schedule")) {
        if (!strcasecmp(v, "1f1b"))
            c->schedule = ETK_SCHED_1F1B;
        else if (!strcasecmp(v, "gpipe"))
            c->schedule = ETK_SCHED_GPIPE;
        else if (!strcasecmp(v, "zb-h1"))
            c->schedule = ETK_SCHED_ZBH1;
        else
            return etk_err(err, ETK_EINVAL, "--schedule wants gpipe, 1f1b or zb-h1, got '%s'", v);
        return 0;
    }
    if (!strcmp(name, "zero")) {
        if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
            return etk_err(err, ETK_EINVAL, "--zero wants 0, 1, 2 or 3, got '%s'", v);
        c->zero = v[0] - '0';
        return 0;
    }
    if (!strcmp(name, "fsdp")) {
        c->zero = 3;
        return 0;
    }
    if (!strcmp(name, "recompute")) {
        if (!strcmp(v, "none"))
            c->recompute = ETK_RECOMPUTE_NONE;
        else if (!strcmp(v, "selective"))
            c->recompute = ETK_RECOMPUTE_SELECTIVE;
        else if (!strcmp(v, "full"))
            c->recompute = ETK_RECOMPUTE_FULL;
        else
            return etk_err(err, ETK_EINVAL, "--recompute wants none, selective or full, got '%s'", v);
        return 0;
    }
    if (!strcmp(name, "recompute-num-layers"))
        return parse_u32(name, v, &c->recompute_layers, err);
    if (!strcmp(name, "recompute-stage-layers"))
        return parse_u32(name, v, &c->recompute_stage_layers, err);
    if (!strcmp(name, "recompute-modules")) {
        uint32_t bits = 0;
        if (strcmp(v, "none")) {
            char buf[128];
            if (strlen(v) >= sizeof buf)
                return etk_err(err, ETK_EINVAL, "--recompute-modules: list too long");
            snprintf(buf, sizeof buf, "%s", v);
            char *save = NULL;
            for (char *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
                uint32_t b = etk_graph_rmod_bit(m);
                if (!b)
                    return etk_err(err, ETK_EINVAL, "--recompute-modules: '%s' is not a module (%s, or none)", m,
                                   G_RMOD_NAMES);
                bits |= b;
            }
            if (!bits)
                return etk_err(err, ETK_EINVAL, "--recompute-modules wants a comma-separated list of %s, or none",
                               G_RMOD_NAMES);
        }
        c->recompute_modules = bits;
        return 0;
    }
    if (!strcmp(name, "precision")) {
        if (strcmp(v, "bf16") && strcmp(v, "fp16") && strcmp(v, "fp8"))
            return etk_err(err, ETK_EINVAL, "--precision wants bf16, fp16 or fp8, got '%s'", v);
        snprintf(c->precision, sizeof c->precision, "%s", v);
        return 0;
    }
    if (!strcmp(name, "grad-precision")) {
        if (!strcmp(v, "fp32"))
            c->grad_bytes = 4;
        else if (!strcmp(v, "bf16") || !strcmp(v, "fp16"))
            c->grad_bytes = 2;
        else
            return etk_err(err, ETK_EINVAL, "--grad-precision wants fp32, bf16 or fp16, got '%s'", v);
        return 0;
    }
    if (!strcmp(name, "dp-bucket-mb")) {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || *end || !(x > 0) || x > 1e6)
            return etk_err(err, ETK_EINVAL, "--dp-bucket-mb wants a positive number of MiB, got '%s'", v);
        c->dp_bucket_mb = x;
        return 0;
    }
    if (!strcmp(name, "rank-order")) {
        int seen = 0, n = 0;
        const char *p = v;
        while (*p && n < ETK_GEN_N_AXES) {
            int axis = !strncmp(p, "tp", 2) ? ETK_GEN_TP : !strncmp(p, "dp", 2) ? ETK_GEN_DP
                       : !strncmp(p, "pp", 2)                      ? ETK_GEN_PP
                       : !strncmp(p, "cp", 2)                      ? ETK_GEN_CP
                                                                   : -1;
            if (axis < 0 || (seen & (1 << axis)) || (p[2] && p[2] != ','))
                break;
            seen |= 1 << axis;
            c->rank_order[n++] = axis;
            p += p[2] ? 3 : 2;
        }
        bool base = (seen & 7) == 7;
        if (!base || *p || (n == 3 && (seen & (1 << ETK_GEN_CP))))
            return etk_err(err, ETK_EINVAL,
                           "--rank-order wants the axes tp, dp, pp (and optionally cp) in some order, fastest "
                           "first (e.g. tp,cp,dp,pp), got '%s'", v);
        if (n == 3) { /* cp right after tp */
            int k = 0;
            while (c->rank_order[k] != ETK_GEN_TP)
                k++;
            for (int i = 3; i > k + 1; i--)
                c->rank_order[i] = c->rank_order[i - 1];
            c->rank_order[k + 1] = ETK_GEN_CP;
        }
        return 0;
    }
    if (!strcmp(name, "gpu")) {
        if (!etk_gen_gpu_bytes(v))
            return etk_err(err, ETK_EINVAL, "--gpu: unknown GPU '%s' (known: a100 h100 h200 b200 mi300x)", v);
        snprintf(c->gpu, sizeof c->gpu, "%s", v);
        return 0;
    }
    return etk_err(err, ETK_ENOTFOUND, "unknown option --%s", name);
}

int etk_gen_parse_args(int argc, char **argv, etk_gen_config *cfg, int *n_rest, char **rest, etk_error *err)
{
    *n_rest = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) || !a[2]) {
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (n >= sizeof name) {
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        memcpy(name, a + 2, n);
        name[n] = 0;
        bool tv;
        if (!etk_gen_is_option(name, &tv)) {
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        const char *val = NULL;
        if (tv) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return etk_err(err, ETK_EINVAL, "--%s needs a value", name);
        } else if (eq) {
            return etk_err(err, ETK_EINVAL, "--%s takes no value", name);
        }
        int rc = etk_gen_set(cfg, name, val, err);
        if (rc)
            return rc;
    }
    return 0;
}

uint64_t etk_gen_gpu_bytes(const char *name)
{
    /* HBM capacities as the devices report them (nvidia-smi totals in MiB,
     * spec/kernels-measured.md section 4; MI300X: 192 GB, spec/hardware.md), the same as
     * presets/gpus/ (tests/test_compute.c checks both) */
    static const struct {
        const char *name;
        uint64_t bytes;
    } gpus[] = {{"a100", 81920ull << 20}, {"h100", 81559ull << 20}, {"h200", 143771ull << 20},
                {"b200", 183359ull << 20}, {"mi300x", 192000000000ull}};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++)
        if (!strcasecmp(name, gpus[i].name))
            return gpus[i].bytes;
    return 0;
}

static void strides(const etk_gen_config *c, uint32_t st[ETK_GEN_N_AXES])
{
    uint32_t deg[ETK_GEN_N_AXES] = {c->tp, c->dp, c->pp, c->cp ? c->cp : 1};
    uint32_t s = 1;
    for (int i = 0; i < ETK_GEN_N_AXES; i++) {
        st[c->rank_order[i]] = s;
        s *= deg[c->rank_order[i]];
    }
}

uint32_t etk_gen_rank_cp(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp)
{
    uint32_t st[ETK_GEN_N_AXES];
    strides(c, st);
    return tp * st[ETK_GEN_TP] + cp * st[ETK_GEN_CP] + dp * st[ETK_GEN_DP] + pp * st[ETK_GEN_PP];
}

uint32_t etk_gen_rank(const etk_gen_config *c, uint32_t tp, uint32_t dp, uint32_t pp)
{
    return etk_gen_rank_cp(c, tp, 0, dp, pp);
}

void etk_gen_coords(const etk_gen_config *c, uint32_t rank, uint32_t coord[ETK_GEN_N_AXES])
{
    uint32_t st[ETK_GEN_N_AXES], deg[ETK_GEN_N_AXES] = {c->tp, c->dp, c->pp, c->cp ? c->cp : 1};
    strides(c, st);
    for (int a = 0; a < ETK_GEN_N_AXES; a++)
        coord[a] = (rank / st[a]) % deg[a];
}

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

void etk_gen_summary_free(etk_gen_summary *s)
{
    if (!s)
        return;
    free(s->stages);
    s->stages = NULL;
}
