/* cmd_gen.c — `etkit gen`: synthesize per-rank Chakra traces of one training step for a model
 * preset under a parallel plan (library: include/etkit/gen.h), or print the step's FLOPs,
 * collective bytes and memory per rank (--summary, --json) without writing traces. With --mode
 * inference: a batch of requests (prefill + decode steps with a KV cache) instead of a step. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "etkit/json.h"
#include "etkit/progress.h"
#include "plan_warn.h"
#include "etkit/gen.h"

static void help(void)
{
    printf("usage: etkit gen [model and plan options] (--out PREFIX | --summary) [--json]\n\n"
           "Synthesizes one training step of a dense transformer as per-rank Chakra traces\n"
           "<PREFIX>.<rank>.et plus the communicator groups <PREFIX>.json: FLOPs in num_ops, bytes in\n"
           "tensor_size/comm_size, TP collectives inferred from tensor sharding, pipeline send/recv per\n"
           "micro-batch, the DP gradient reduction once per step in buckets, the optimizer step.\n"
           "With --mode inference: the prefill of --batch prompts and --decode-steps decode steps with a\n"
           "KV cache (TP, PP, EP; nodes named prefill/... and decode<i>/...; docs/gen.md \"Inference\").\n\n"
           "%s"
           "output:\n"
           "  -o, --out PREFIX     write <PREFIX>.<rank>.et and <PREFIX>.json\n"
           "  --summary            print FLOPs, collective bytes and memory per rank; write nothing\n"
           "  --json               with --summary: one JSON document instead of text\n"
           "  -q, --quiet          no progress line (drawn on a terminal for long writes)\n"
           "  -h, --help           this text\n\n"
           "examples:\n"
           "  etkit gen --model llama2-7b --dp 2 --tp 2 --pp 2 --micro-batch 2 --global-batch 32 -o out/llama7b\n"
           "  etkit gen --model llama3-405b --tp 8 --pp 16 --dp 128 --global-batch 2048 --sp --summary\n"
           "  etkit gen --mode inference --model llama3-70b --tp 8 --batch 16 --prompt-len 2048 --decode-steps 256 --summary\n",
           etk_gen_options_help());
}

static const char *coll_lower(int t)
{
    static const char *n[] = {"all_reduce", "reduce", "all_gather", "gather", "scatter",
                              "broadcast", "all_to_all", "reduce_scatter", "reduce_scatter_block", "barrier"};
    return t >= 0 && t < ETK_COLL_TYPE_COUNT ? n[t] : "unknown";
}

/* a stage's collectives per rank: text lines ("per step" / "per request"), JSON rows */
static void print_colls(const etk_gen_stage *st, const char *per)
{
    static const char *gname[] = {"TP", "DP", "EMB", "CP", "EP", "EDP"};
    for (int g = 0; g < ETK_GEN_N_GROUP_KINDS; g++)
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            if (st->coll_count[g][t])
                printf("  %s group %-15s %6" PRIu64 " x, %" PRIu64 " bytes per rank per %s\n", gname[g], coll_lower(t),
                       st->coll_count[g][t], st->coll_bytes[g][t], per);
}

static json_t *colls_json(const etk_gen_stage *st)
{
    static const char *gname[] = {"tp", "dp", "embedding", "cp", "ep", "expert_dp"};
    json_t *colls = json_array();
    for (int g = 0; g < ETK_GEN_N_GROUP_KINDS; g++)
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            if (st->coll_count[g][t])
                json_array_append_new(colls, json_pack("{s:s,s:s,s:I,s:I}", "group", gname[g], "type", coll_lower(t),
                                                       "count", (json_int_t)st->coll_count[g][t], "bytes",
                                                       (json_int_t)st->coll_bytes[g][t]));
    return colls;
}

static const char *recompute_name(int r)
{
    return r == ETK_RECOMPUTE_FULL ? "full" : r == ETK_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

static void order_str(const etk_gen_config *c, char *buf, size_t n)
{
    /* EP is the fastest part of the DP coordinate: shown right before dp */
    static const char *ax[] = {"tp", "dp", "pp", "cp"};
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < ETK_GEN_N_AXES && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "",
                              c->rank_order[i] == ETK_GEN_DP && c->ep > 1 ? "ep,dp" : ax[c->rank_order[i]]);
}

#define GIB (1024.0 * 1024.0 * 1024.0)

/* --mode inference: prefill + decode summary (docs/gen.md "Inference") */
static void print_infer_text(const etk_gen_config *c, const etk_gen_summary *s)
{
    const etk_model *m = &c->model;
    printf("model %s (%s): %" PRId64 " layers, hidden %" PRId64 ", %" PRId64 " heads (%" PRId64
           " KV), vocab %" PRId64 "; %" PRIu64 " parameters\n",
           m->name, m->arch, m->layers, m->hidden, m->heads, m->kv_heads, m->vocab, s->params_total);
    printf("inference: %u ranks = tp %u x ep %u of dp %u (independent replicas) x pp %u; batch %u sequences per "
           "replica in %u micro-batch(es), prompt %u tokens, %u decode steps, weights %s, KV cache %s, prefill "
           "attention %s\n",
           s->n_ranks, c->tp, c->ep, c->dp, c->pp, c->batch, s->micro_batches, c->prompt_len, c->decode_steps,
           strcmp(c->precision, "fp8") ? "16-bit" : "fp8", c->kv_bytes == 1 ? "fp8" : "16-bit",
           c->attention == ETK_ATTN_FLASH ? "flash" : "unfused");
    printf("layers: %s\n", s->layer_split);
    printf("tokens: %" PRIu64 " prompt, %" PRIu64 " generated (batch x (decode steps + 1) x dp)\n", s->prompt_tokens,
           s->tokens_per_step);
    printf("FLOPs (all ranks): prefill %.6g, decode step 1 %.6g, decode step %u %.6g, whole request %.6g\n",
           s->prefill_flops, s->decode_first_flops, c->decode_steps, s->decode_last_flops, s->model_flops);
    printf("KV cache: %" PRIu64 " bytes per token (all layers; %s)", s->kv_bytes_per_token,
           strcmp(m->arch, "deepseek") ? "K and V of every KV head" : "MLA latent + rotary key, held whole by every TP rank");
    if (s->kv_replicas > 1)
        printf("; tp %u > %" PRId64 " KV heads: each rank holds one KV head, each head replicated on %u ranks",
               c->tp, m->kv_heads, s->kv_replicas);
    printf("\n");
    for (uint32_t i = 0; i < s->n_stages; i++) {
        const etk_gen_stage *st = &s->stages[i];
        printf("stage %u: layers %u-%u%s%s, %u ranks, %" PRIu64 " nodes per rank\n", st->stage, st->first_layer,
               st->first_layer + st->layers - 1, st->has_embed ? " + embedding" : "", st->has_head ? " + head/sampling" : "",
               c->tp * c->dp, st->nodes);
        printf("  FLOPs per rank: prefill %.6g, decode step 1 %.6g, decode step %u %.6g, all %.6g\n", st->prefill_flops,
               st->decode_first_flops, c->decode_steps, st->decode_last_flops, st->flops);
        print_colls(st, "request");
        if (st->send_count || st->recv_count)
            printf("  pipeline send %" PRIu64 " x (%" PRIu64 " bytes), recv %" PRIu64 " x (%" PRIu64 " bytes)\n",
                   st->send_count, st->send_bytes, st->recv_count, st->recv_bytes);
        printf("  memory per rank: weights %.2f GiB, KV cache %.2f GiB (%" PRIu64 " bytes), activations %.3f GiB "
               "(one layer's forward), comm buffers %.3f GiB, total %.2f GiB\n",
               st->weight_bytes / GIB, st->kv_cache_bytes / GIB, st->kv_cache_bytes, st->act_bytes / GIB,
               st->comm_buffer_bytes / GIB, st->total_bytes / GIB);
    }
    printf("memory: peak %.2f GiB (%" PRIu64 " bytes) per rank on stage %u; %s has %.1f GiB (%" PRIu64 " bytes): %s\n",
           s->peak_bytes / GIB, s->peak_bytes, s->peak_stage, c->gpu, s->gpu_bytes / GIB, s->gpu_bytes,
           s->fits ? "fits" : "DOES NOT FIT (fewer sequences, a shorter context, fp8 KV cache or more TP/PP)");
}

static json_t *infer_json(const etk_gen_config *c, const etk_gen_summary *s)
{
    const etk_model *m = &c->model;
    json_t *stages = json_array();
    for (uint32_t i = 0; i < s->n_stages; i++) {
        const etk_gen_stage *st = &s->stages[i];
        json_t *colls = colls_json(st);
        json_array_append_new(
            stages,
            json_pack("{s:I,s:I,s:I,s:b,s:b,s:I,s:I,s:f,s:f,s:f,s:f,s:o,s:{s:I,s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:I}}",
                      "stage", (json_int_t)st->stage, "first_layer", (json_int_t)st->first_layer, "layers",
                      (json_int_t)st->layers, "embedding", st->has_embed, "head", st->has_head, "ranks",
                      (json_int_t)(c->tp * c->dp), "nodes_per_rank", (json_int_t)st->nodes, "flops_per_rank",
                      st->flops, "prefill_flops_per_rank", st->prefill_flops, "decode_first_flops_per_rank",
                      st->decode_first_flops, "decode_last_flops_per_rank", st->decode_last_flops, "collectives",
                      colls, "pipeline", "send_count", (json_int_t)st->send_count, "send_bytes",
                      (json_int_t)st->send_bytes, "recv_count", (json_int_t)st->recv_count, "recv_bytes",
                      (json_int_t)st->recv_bytes, "memory_bytes", "params", (json_int_t)st->params, "weights",
                      (json_int_t)st->weight_bytes, "kv_cache", (json_int_t)st->kv_cache_bytes, "activations",
                      (json_int_t)st->act_bytes, "comm_buffers", (json_int_t)st->comm_buffer_bytes, "total",
                      (json_int_t)st->total_bytes));
    }
    return json_pack("{s:s,s:{s:o,s:s,s:I,s:I,s:I,s:I,s:I,s:I},"
                     "s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I,s:s},"
                     "s:s,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:I,s:o,s:{s:I,s:I,s:s,s:I,s:b}}",
                     "mode", "inference", "model", "name", (json_t *)etk_json_text(m->name), "arch", m->arch, "layers", (json_int_t)m->layers,
                     "hidden", (json_int_t)m->hidden, "heads", (json_int_t)m->heads, "kv_heads",
                     (json_int_t)m->kv_heads, "vocab", (json_int_t)m->vocab, "params", (json_int_t)s->params_total,
                     "plan", "ranks", (json_int_t)s->n_ranks, "tp", (json_int_t)c->tp, "ep", (json_int_t)c->ep, "dp",
                     (json_int_t)c->dp, "pp", (json_int_t)c->pp, "batch", (json_int_t)c->batch, "micro_batches",
                     (json_int_t)s->micro_batches, "prompt_len", (json_int_t)c->prompt_len, "decode_steps",
                     (json_int_t)c->decode_steps, "precision", c->precision, "kv_bytes", (json_int_t)c->kv_bytes,
                     "attention", c->attention == ETK_ATTN_FLASH ? "flash" : "unfused", /* the prefill's */
                     "layer_split", s->layer_split, "prompt_tokens", (json_int_t)s->prompt_tokens,
                     "generated_tokens", (json_int_t)s->tokens_per_step, "prefill_flops", s->prefill_flops,
                     "decode_first_flops", s->decode_first_flops, "decode_last_flops", s->decode_last_flops,
                     "request_flops", s->model_flops, "kv_bytes_per_token", (json_int_t)s->kv_bytes_per_token,
                     "kv_replicas", (json_int_t)s->kv_replicas,
                     "stages", stages, "memory", "peak_bytes", (json_int_t)s->peak_bytes, "peak_stage",
                     (json_int_t)s->peak_stage, "gpu", c->gpu, "gpu_bytes", (json_int_t)s->gpu_bytes, "fits", s->fits);
}

static void print_text(const etk_gen_config *c, const etk_gen_summary *s)
{
    const etk_model *m = &c->model;
    char ord[32];
    order_str(c, ord, sizeof ord);
    printf("model %s (%s): %" PRId64 " layers, hidden %" PRId64 ", %" PRId64 " heads (%" PRId64
           " KV), FFN %" PRId64 ", vocab %" PRId64 ", seq %" PRId64 "; %" PRIu64 " parameters\n",
           m->name, m->arch, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->seq, s->params_total);
    if (m->max_positions > m->seq || m->tie_embeddings) /* Hugging Face configs: what was assumed */
        printf("model: seq %" PRId64 "%s%s\n", m->seq,
               m->max_positions > m->seq ? " (a Hugging Face config's max_position_embeddings is the longest context, "
                                           "not the training sequence: --seq sets it)" : "",
               m->tie_embeddings ? "; output layer tied to the token embedding (tie_word_embeddings)" : "");
    if (m->window > 0) /* sliding-window attention (docs/models.md) */
        printf("model: sliding-window attention, window %" PRId64 ", on %" PRId64 " of %" PRId64 " layers%s\n", m->window,
               etk_model_sliding_layers(m, 0, m->layers), m->layers,
               m->window >= m->seq ? " (at least seq: charged as full attention)"
               : c->attention != ETK_ATTN_FLASH ? " (unfused attention computes the whole masked scores: charged as full)" : "");
    char rms[112];
    printf("plan: %u ranks = tp %u x cp %u%s x dp %u x pp %u (rank order %s), sp %s, micro-batch %u, global batch %u -> %u "
           "micro-batches per DP rank, %s%s, zero %d, recompute %s%s%s, %s (gradients %s)\n",
           s->n_ranks, c->tp, c->cp, c->cp_comm == ETK_CP_RING ? " (ring)" : "", c->dp, c->pp, ord, c->sp ? "on" : "off", c->micro_batch, c->global_batch,
           s->micro_batches, c->schedule == ETK_SCHED_GPIPE ? "gpipe" : c->schedule == ETK_SCHED_ZBH1 ? "zb-h1" : "1f1b", c->vpp > 1 ? " interleaved" : "", c->zero,
           recompute_name(c->recompute), etk_gen_recompute_modules_str(c, rms, sizeof rms),
           c->attention == ETK_ATTN_FLASH ? ", flash attention" : ", unfused attention",
           c->precision, c->grad_bytes == 4 ? "fp32" : "16-bit");
    printf("layers: %s\n", s->layer_split);
    printf("step: %.6g FLOPs on all ranks incl. recompute and optimizer (%.6g model FLOPs: forward + backward), %" PRIu64 " tokens\n", s->step_flops,
           s->model_flops, s->tokens_per_step);
    for (uint32_t i = 0; i < s->n_stages; i++) {
        const etk_gen_stage *st = &s->stages[i];
        if (c->vpp > 1)
            printf("stage %u: %u layers in %u chunks%s%s, %u ranks, %" PRIu64 " nodes per rank\n", st->stage,
                   st->layers, c->vpp, st->has_embed ? " + embedding" : "", st->has_head ? " + head/loss" : "",
                   c->tp * c->cp * c->dp, st->nodes);
        else
            printf("stage %u: layers %u-%u%s%s, %u ranks, %" PRIu64 " nodes per rank\n", st->stage, st->first_layer,
                   st->first_layer + st->layers - 1, st->has_embed ? " + embedding" : "",
                   st->has_head ? " + head/loss" : "", c->tp * c->cp * c->dp, st->nodes);
        printf("  compute per rank per step: %.6g FLOPs (%.3f TFLOP; model %.3f TFLOP)\n", st->flops, st->flops / 1e12,
               st->model_flops / 1e12);
        print_colls(st, "step");
        if (st->send_count || st->recv_count)
            printf("  pipeline send %" PRIu64 " x %" PRIu64 " bytes, recv %" PRIu64 " x %" PRIu64 " bytes\n",
                   st->send_count, st->send_count ? st->send_bytes / st->send_count : 0, st->recv_count,
                   st->recv_count ? st->recv_bytes / st->recv_count : 0);
        if (st->cp_send_count || st->cp_recv_count)
            printf("  CP ring send %" PRIu64 " x, %" PRIu64 " bytes; recv %" PRIu64 " x, %" PRIu64
                   " bytes per rank per step\n",
                   st->cp_send_count, st->cp_send_bytes, st->cp_recv_count, st->cp_recv_bytes);
        char inflight[96];
        if (c->vpp > 1)
            snprintf(inflight, sizeof inflight, "%u micro-batch chunks of 1/%u in flight", st->in_flight, c->vpp);
        else
            snprintf(inflight, sizeof inflight, "%u in flight", st->in_flight);
        char fp8c[64] = "";
        if (st->fp8_cache_bytes)
            snprintf(fp8c, sizeof fp8c, " (FP8 copies %.2f GiB of it)", st->fp8_cache_bytes / GIB);
        printf("  memory per rank: weights %.2f GiB%s, gradients %.2f GiB, optimizer %.2f GiB (+ %.2f GiB during the step), "
               "activations %.2f GiB (%.3f GiB per micro-batch x %s), comm buffers %.3f GiB, total %.2f GiB\n",
               st->weight_bytes / GIB, fp8c, st->grad_bytes / GIB, st->optimizer_bytes / GIB, st->optimizer_step_bytes / GIB,
               st->act_bytes / GIB, st->act_per_mb_bytes / GIB, inflight, st->comm_buffer_bytes / GIB,
               st->total_bytes / GIB);
    }
    printf("memory: peak %.2f GiB (%" PRIu64 " bytes) per rank on stage %u; %s has %.1f GiB (%" PRIu64 " bytes): %s\n",
           s->peak_bytes / GIB, s->peak_bytes, s->peak_stage, c->gpu, s->gpu_bytes / GIB, s->gpu_bytes,
           s->fits ? "fits" : "DOES NOT FIT");
}

static json_t *summary_json(const etk_gen_config *c, const etk_gen_summary *s)
{
    const etk_model *m = &c->model;
    char ord[32];
    order_str(c, ord, sizeof ord);
    json_t *stages = json_array();
    for (uint32_t i = 0; i < s->n_stages; i++) {
        const etk_gen_stage *st = &s->stages[i];
        json_t *colls = colls_json(st);
        json_t *sj = json_pack("{s:I,s:I,s:I,s:b,s:b,s:I,s:I,s:f,s:f,s:o,s:{s:I,s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
                      "stage", (json_int_t)st->stage, "first_layer", (json_int_t)st->first_layer, "layers",
                      (json_int_t)st->layers, "embedding", st->has_embed, "head", st->has_head, "ranks",
                      (json_int_t)(c->tp * c->dp), "nodes_per_rank", (json_int_t)st->nodes, "flops_per_rank",
                      st->flops, "model_flops_per_rank", st->model_flops, "collectives", colls, "pipeline",
                      "send_count", (json_int_t)st->send_count, "send_bytes", (json_int_t)st->send_bytes,
                      "recv_count", (json_int_t)st->recv_count, "recv_bytes", (json_int_t)st->recv_bytes,
                      "memory_bytes", "params", (json_int_t)st->params, "weights", (json_int_t)st->weight_bytes,
                      "gradients", (json_int_t)st->grad_bytes, "optimizer", (json_int_t)st->optimizer_bytes,
                      "activations", (json_int_t)st->act_bytes, "activations_layers",
                      (json_int_t)st->act_layers_bytes, "activations_per_micro_batch",
                      (json_int_t)st->act_per_mb_bytes, "in_flight", (json_int_t)st->in_flight, "comm_buffers",
                      (json_int_t)st->comm_buffer_bytes, "total", (json_int_t)st->total_bytes);
        if (sj)
            json_object_set_new(json_object_get(sj, "memory_bytes"), "optimizer_step",
                                json_integer((json_int_t)st->optimizer_step_bytes));
        if (sj && (st->cp_send_count || st->cp_recv_count))
            json_object_set_new(sj, "cp_ring", json_pack("{s:I,s:I,s:I,s:I}", "send_count", (json_int_t)st->cp_send_count,
                                                         "send_bytes", (json_int_t)st->cp_send_bytes, "recv_count",
                                                         (json_int_t)st->cp_recv_count, "recv_bytes",
                                                         (json_int_t)st->cp_recv_bytes));
        json_array_append_new(stages, sj);
    }
    return json_pack(
        "{s:{s:o,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},"
        "s:{s:I,s:I,s:I,s:s,s:I,s:s,s:I,s:I,s:s,s:b,s:I,s:I,s:I,s:s,s:I,s:i,s:s,s:s,s:I,s:f},"
        "s:s,s:f,s:f,s:I,s:o,s:{s:I,s:I,s:s,s:I,s:b}}",
        "model", "name", (json_t *)etk_json_text(m->name), "arch", m->arch, "layers", (json_int_t)m->layers, "hidden", (json_int_t)m->hidden,
        "heads", (json_int_t)m->heads, "kv_heads", (json_int_t)m->kv_heads, "ffn", (json_int_t)m->ffn, "vocab",
        (json_int_t)m->vocab, "seq", (json_int_t)m->seq, "params", (json_int_t)s->params_total,
        "plan", "ranks", (json_int_t)s->n_ranks, "tp", (json_int_t)c->tp, "cp", (json_int_t)c->cp, "cp_comm", c->cp_comm == ETK_CP_RING ? "ring" : "allgather", "ep", (json_int_t)c->ep,
        "attention", c->attention == ETK_ATTN_FLASH ? "flash" : "unfused", "dp", (json_int_t)c->dp, "pp",
        (json_int_t)c->pp, "rank_order", ord, "sp", c->sp, "micro_batch", (json_int_t)c->micro_batch, "global_batch",
        (json_int_t)c->global_batch, "micro_batches", (json_int_t)s->micro_batches, "schedule",
        c->schedule == ETK_SCHED_GPIPE ? "gpipe" : c->schedule == ETK_SCHED_ZBH1 ? "zb-h1" : "1f1b", "vpp", (json_int_t)(c->vpp ? c->vpp : 1), "zero", c->zero, "recompute", recompute_name(c->recompute),
        "precision", c->precision, "grad_bytes", (json_int_t)c->grad_bytes, "dp_bucket_mib", c->dp_bucket_mb,
        "layer_split", s->layer_split, "step_flops", s->step_flops, "model_flops", s->model_flops, "tokens_per_step",
        (json_int_t)s->tokens_per_step, "stages", stages, "memory", "peak_bytes", (json_int_t)s->peak_bytes,
        "peak_stage", (json_int_t)s->peak_stage, "gpu", c->gpu, "gpu_bytes", (json_int_t)s->gpu_bytes, "fits", s->fits);
}

int cmd_gen(int argc, char **argv)
{
    enum { O_OUT = 1000, O_SUMMARY, O_JSON, O_HELP, O_GEN };
    static const char *gen_opts[] = {"model", "model-file", "layers", "hidden", "heads", "kv-heads", "ffn", "vocab",
                                     "seq", "dp", "tp", "pp", "cp", "cp-comm", "ep", "etp", "moe-imbalance", "moe-max-nodes", "gpus-per-node", "attention", "sp", "micro-batch", "global-batch", "schedule", "vpp", "first-stage-layers", "last-stage-layers", "zero", "fsdp",
                                     "recompute", "recompute-modules", "recompute-num-layers", "recompute-stage-layers", "precision", "grad-precision", "fp8-weight-cache", "tp-comm-overlap", "ep-comm-overlap", "unfused-loss", "dp-bucket-mb",
                                     "rank-order", "gpu", "mode", "prompt-len", "decode-steps", "batch", "micro-batches", "kv-precision"};
    enum { NG = sizeof gen_opts / sizeof gen_opts[0] };
    struct option opts[NG + 6];
    for (int i = 0; i < NG; i++) {
        bool tv = false;
        etk_gen_is_option(gen_opts[i], &tv);
        opts[i] = (struct option){gen_opts[i], tv ? required_argument : no_argument, 0, O_GEN + i};
    }
    opts[NG] = (struct option){"out", required_argument, 0, 'o'};
    opts[NG + 1] = (struct option){"summary", no_argument, 0, O_SUMMARY};
    opts[NG + 2] = (struct option){"json", no_argument, 0, O_JSON};
    opts[NG + 3] = (struct option){"help", no_argument, 0, 'h'};
    opts[NG + 4] = (struct option){"quiet", no_argument, 0, 'q'};
    opts[NG + 5] = (struct option){0, 0, 0, 0};
    etk_gen_config cfg;
    etk_gen_config_init(&cfg);
    etk_error err = {0};
    const char *out = NULL;
    bool summary = false, json = false, quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:hq", opts, NULL)) != -1) {
        if (c >= O_GEN && c < O_GEN + NG) {
            if (etk_gen_set(&cfg, gen_opts[c - O_GEN], optarg, &err))
                return cli_usage_error("gen", "%s", err.msg);
        } else if (c == 'o') {
            out = optarg;
        } else if (c == O_SUMMARY) {
            summary = true;
        } else if (c == O_JSON) {
            json = true;
        } else if (c == 'q') {
            quiet = true;
        } else if (c == 'h') {
            help();
            return 0;
        } else {
            return cli_getopt_error("gen", c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error("gen", "unexpected argument '%s'", argv[optind]);
    if (!summary && !out)
        return cli_usage_error("gen", "give --out PREFIX to write traces, or --summary");
    if (json && !summary)
        return cli_usage_error("gen", "--json goes with --summary");
    if (etk_gen_check(&cfg, &err))
        return cli_usage_error("gen", "%s", err.msg);
    if (summary) {
        etk_gen_summary s;
        if (etk_gen_summarize(&cfg, &s, &err))
            return cli_fail("gen", &err);
        plan_warnings("gen", &cfg, &s);
        if (json) {
            json_t *j = s.inference ? infer_json(&cfg, &s) : summary_json(&cfg, &s);
            char *txt = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
            printf("%s\n", txt);
            free(txt);
            json_decref(j);
        } else if (s.inference) {
            print_infer_text(&cfg, &s);
        } else {
            print_text(&cfg, &s);
        }
        etk_gen_summary_free(&s);
        return 0;
    }
    if (cfg.mode != ETK_GEN_MODE_INFERENCE && cfg.pp > 1) { /* wasteful plans: warnings */
        etk_gen_summary ws;
        bool have = etk_gen_summarize(&cfg, &ws, &err) == 0;
        plan_warnings("gen", &cfg, have ? &ws : NULL);
        if (have)
            etk_gen_summary_free(&ws);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t bytes = 0;
    etk_progress prog;
    etk_progress_begin(&prog, stderr, quiet, "rank files", cfg.n_ranks);
    cfg.progress = &prog;
    int rc = etk_file_mkdirs(out, &err) || etk_gen_write_stats(&cfg, out, &bytes, &err); /* -o out/x: out/ made */
    etk_progress_end(&prog);
    if (rc)
        return cli_fail("gen", &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("wrote %u rank files %s.<0..%u>.et and %s.json (model %s%s, tp %u dp %u pp %u, %u micro-batches): "
           "%" PRIu64 " bytes in %.3f s\n",
           cfg.n_ranks, out, cfg.n_ranks - 1, out, cfg.model.name, cfg.mode == ETK_GEN_MODE_INFERENCE ? " inference" : "",
           cfg.tp, cfg.dp, cfg.pp, cfg.micro_batches, bytes, sec);
    return 0;
}
