/* test_gen_infer.c — inference traces (etkit gen --mode inference): prefill of B prompts of P
 * tokens and N decode steps of one token with a KV cache. Checked against closed forms written
 * from the model dimensions (not from the program's output):
 *   GEMM FLOPs (the weight GEMMs q, k, v, proj, gate, up, down, router, logits): 2 x tokens x
 *     the layer's active GEMM weights per layer (MoE: router + top-k experts), plus the LM head
 *     2 B V h on the last position of each sequence only;
 *   attention FLOPs (scores and av): 4 L H d x ctx x new tokens (prefill: ctx = P, tokens B P,
 *     full square, with --attention unfused, whose prefill keeps those nodes; decode step i:
 *     ctx = P + i, tokens B);
 *   KV cache bytes = 2 L kv_heads d (P + N) B bytes (MLA: L (kv_lora + qk_rope) per token);
 *   TP all-reduce 2 B T h bytes per layer and phase (T = P or 1), EP all-to-all B T topk h 2,
 *   pipeline messages b T h 2 and token ids b 4;
 * MoE routed dropless: B T topk rows through the experts, the weights of the expected distinct
 *   experts read, (E/ep) (1 - (1 - topk/E)^(ep B T)); DeepSeek-V3 decode with MLA absorbed
 *   (per-op closed forms, cache read once per layer);
 * validator-clean and deterministic output, TTFT/TPOT of the simulator on a hand-computable cost
 * model, and the refused inputs. */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/sim.h"
#include "gen_testlib.h"

typedef struct sums {
    double gemm, attn, all; /* num_ops of weight GEMMs, attention GEMMs, every compute node */
    uint64_t bytes;         /* tensor_size of every compute node */
    uint64_t nodes;
} sums;

static bool ends_with_op(const char *name, const char *op)
{
    const char *d = strrchr(name, '.');
    return d && !strcmp(d + 1, op);
}

/* sums over the nodes of one phase ("prefill/" or "decode<i>/") of a trace */
static sums phase_sums(const etk_trace *t, const char *phase)
{
    static const char *gemm[] = {"q", "k", "v", "proj", "gate", "up", "down", "router", "logits"};
    sums s = {0};
    size_t n = strlen(phase);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *x = &t->nodes[i];
        if (strncmp(x->name, phase, n))
            continue;
        s.nodes++;
        int64_t f = 0;
        uint64_t b = 0;
        if (x->type != ETK_NODE_COMP || !etk_node_i64(x, "num_ops", &f))
            continue;
        etk_node_u64(x, "tensor_size", &b);
        f = (int64_t)gen_node_flops(x);
        s.all += (double)f;
        s.bytes += b;
        for (size_t k = 0; k < sizeof gemm / sizeof gemm[0]; k++)
            if (ends_with_op(x->name, gemm[k]))
                s.gemm += (double)f;
        if (ends_with_op(x->name, "scores") || ends_with_op(x->name, "av"))
            s.attn += (double)f;
    }
    return s;
}

static uint64_t node_bytes(const etk_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i].name, name)) {
            uint64_t b = 0;
            etk_node_u64(&t->nodes[i], "tensor_size", &b);
            return b;
        }
    fail_msg("no node %s", name);
    return 0;
}

static etk_workload *workload(const char *line, etk_gen_config *c)
{
    etk_error err = {0};
    etk_workload *w = NULL;
    if (parse(line, c, &err) || etk_gen_workload(c, true, &w, &err))
        fail_msg("plan '%s': %s", line, err.msg);
    return w;
}

static void phase_of(uint32_t i, char *buf, size_t n)
{
    if (i)
        snprintf(buf, n, "decode%u/", i);
    else
        snprintf(buf, n, "prefill/");
}

/* The closed forms of the file header for a model whose layer uses Wl GEMM weights per token:
 * checks every phase of rank 0's trace and the model's active parameter count (L (Wl + 2 h
 * norms) + embedding and head V h each + final norm h); returns the FLOPs of all phases. */
static double check_flops(const etk_trace *t, const etk_model *m, double Wl, double B, double P, uint32_t N)
{
    const double h = (double)m->hidden, H = (double)m->heads, d = h / H, V = (double)m->vocab, L = (double)m->layers;
    uint64_t act;
    etk_error err = {0};
    assert_int_equal(etk_model_active_params(m, &act, &err), 0);
    assert_true((double)act == L * (Wl + 2 * h) + 2 * V * h + h);
    sums pre = phase_sums(t, "prefill/");
    assert_true(pre.gemm == 2 * B * P * L * Wl + 2 * B * V * h);
    assert_true(pre.attn == 4 * L * H * d * P * P * B);
    double total = pre.all;
    for (uint32_t i = 1; i <= N; i++) {
        char ph[24];
        phase_of(i, ph, sizeof ph);
        sums s = phase_sums(t, ph);
        assert_true(s.gemm == 2 * B * (L * Wl + V * h));
        assert_true(s.attn == 4 * L * H * d * (P + i) * B);
        total += s.all;
    }
    return total;
}

/* files a and b hold the same bytes */
static void expect_same_bytes(const char *a, const char *b)
{
    size_t la, lb;
    uint8_t *da = tu_read(a, &la), *db = tu_read(b, &lb);
    if (!da || !db)
        fail_msg("cannot read %s or %s", a, b);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
}

/* llama3-8b: h 4096, 32 heads of 128 (8 KV), FFN 14336, vocab 128256, 32 layers, untied */
static void test_flops_llama3_8b(void **state)
{
    (void)state;
    const double h = 4096, H = 32, kv = 8, d = 128, f = 14336, V = 128256, L = 32, B = 2, P = 256, N = 4;
    etk_gen_config c;
    etk_workload *w =
        workload("--mode inference --model llama3-8b --prompt-len 256 --decode-steps 4 --batch 2 --attention unfused", &c);
    const double Wl = h * H * d + 2 * h * kv * d + H * d * h + 3 * h * f; /* q, k, v, o, gate/up/down */
    assert_true(c.model.vocab == V && c.model.layers == L && c.model.hidden / c.model.heads == d);
    const etk_trace *t = w->ranks[0];
    double total = check_flops(t, &c.model, Wl, B, P, (uint32_t)N);
    sums pre = phase_sums(t, "prefill/");
    etk_error err = {0};
    /* the summary counts the same nodes */
    etk_gen_summary sum;
    assert_int_equal(etk_gen_summarize(&c, &sum, &err), 0);
    assert_true(sum.inference);
    assert_true(sum.prefill_flops == pre.all);
    assert_true(fabs(sum.model_flops - total) <= 1e-9 * total);
    assert_true(sum.decode_first_flops == phase_sums(t, "decode1/").all);
    assert_true(sum.decode_last_flops == phase_sums(t, "decode4/").all);
    assert_int_equal(sum.tokens_per_step, B * (N + 1));
    assert_int_equal(sum.prompt_tokens, B * P);
    /* KV cache: 2 L kv d bytes(2) per token, B (P + N) tokens */
    assert_int_equal(sum.kv_bytes_per_token, 2 * 32 * 8 * 128 * 2);
    assert_int_equal(sum.stages[0].kv_cache_bytes, (uint64_t)(2 * L * kv * d * 2 * B * (P + N)));
    /* weights: every parameter at 2 bytes */
    uint64_t params;
    assert_int_equal(etk_model_params(&c.model, &params, &err), 0);
    assert_int_equal(sum.stages[0].weight_bytes, 2 * params);
    assert_int_equal(sum.stages[0].total_bytes, sum.stages[0].weight_bytes + sum.stages[0].kv_cache_bytes +
                                                     sum.stages[0].act_bytes + sum.stages[0].comm_buffer_bytes);
    assert_true(sum.fits);
    /* activations: at least the (unfused) attention probabilities of a prefill layer, B H P P x 2 bytes */
    assert_true(sum.stages[0].act_bytes >= (uint64_t)(B * H * P * P * 2));
    /* an embedding lookup reads and writes the rows of its tokens, not the table */
    assert_int_equal(node_bytes(t, "prefill/mb0.embed.tok_embed"), (uint64_t)(2 * B * P * h * 2));
    assert_int_equal(node_bytes(t, "decode1/mb0.embed.tok_embed"), (uint64_t)(2 * B * h * 2));
    /* decode attention reads the KV cache: K of B (P + i) tokens x kv d, 2 bytes, plus Q and
     * the scores written (B H (P + i) x 2) */
    assert_int_equal(node_bytes(t, "decode2/mb0.L0.scores"),
                     (uint64_t)(B * H * d * 2 + B * (P + 2) * kv * d * 2 + B * H * (P + 2) * 2));
    etk_gen_summary_free(&sum);
    etk_workload_free(w);
}

/* mixtral-8x7b: 8 experts of FFN 14336, top-2; B top-k divisible by the experts, so the
 * expert GEMMs process exactly the routed tokens (capacity = B T top-k / E) */
static void test_flops_mixtral(void **state)
{
    (void)state;
    const double h = 4096, H = 32, kv = 8, d = 128, f = 14336, E = 8, K = 2, V = 32000, L = 2, B = 4, P = 64, N = 2;
    etk_gen_config c;
    etk_workload *w =
        workload("--mode inference --model mixtral-8x7b --layers 2 --prompt-len 64 --decode-steps 2 --batch 4 "
                 "--attention unfused",
                 &c);
    const double Wl = h * H * d + 2 * h * kv * d + H * d * h + h * E + K * 3 * h * f; /* + router + top-k experts */
    assert_true(c.model.vocab == V && c.model.layers == L && c.model.hidden / c.model.heads == d);
    check_flops(w->ranks[0], &c.model, Wl, B, P, (uint32_t)N);
    /* a decode step's B topk = 8 routed rows select 8 (1 - (6/8)^4) = 175/32 = 5.46875 distinct
     * experts of 8 in expectation (each token 2 distinct experts, uniformly): the gate reads
     * their weights, its 8 input rows and writes 8 rows of f */
    const double R = B * K, D = 175.0 / 32;
    assert_int_equal(node_bytes(w->ranks[0], "decode1/mb0.L1.gate"), (uint64_t)(2 * (R * h + D * h * f + R * f)));
    etk_workload_free(w);
}

/* KV cache per rank: TP splits the KV heads, PP the layers; fp8 halves it; MLA caches the
 * latent and the rotary key, which every TP rank holds whole */
static void test_kv_cache(void **state)
{
    (void)state;
    etk_gen_config c;
    etk_gen_summary s;
    summarize("--mode inference --model llama3-8b --tp 2 --pp 2 --prompt-len 1000 --decode-steps 24 --batch 3", &c, &s);
    uint64_t per_rank = 2ull * 16 /* layers */ * (8 / 2) * 128 * 2 * 3 * (1000 + 24);
    assert_int_equal(s.stages[0].kv_cache_bytes, per_rank);
    assert_int_equal(s.stages[1].kv_cache_bytes, per_rank);
    /* weights per rank, 2 bytes each: 16 layers of TP-split GEMM weights + 2 replicated norms,
     * the vocabulary-split embedding (stage 0) or head + final norm (stage 1) */
    const uint64_t h = 4096, Wl = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h + 3 * h * 14336, V = 128256;
    assert_int_equal(s.stages[0].weight_bytes, 2 * (16 * (Wl / 2 + 2 * h) + V * h / 2));
    assert_int_equal(s.stages[1].weight_bytes, 2 * (16 * (Wl / 2 + 2 * h) + V * h / 2 + h));
    etk_gen_summary_free(&s);
    summarize("--mode inference --model llama3-8b --tp 2 --pp 2 --prompt-len 1000 --decode-steps 24 --batch 3 "
              "--kv-precision fp8", &c, &s);
    assert_int_equal(s.stages[0].kv_cache_bytes, per_rank / 2);
    assert_int_equal(s.kv_bytes_per_token, 2 * 32 * 8 * 128);
    etk_gen_summary_free(&s);
    /* sliding-window layers (tests/data/swa-oss.json: 4 layers, 2 KV heads of 64, window 128 on
     * layers 0 and 2) keep at most 128 tokens of each sequence: with PP 2 each stage holds one
     * full layer at 1,024 tokens and one sliding layer at 128; 2 x 2 x 64 x 2 = 512 B per token
     * per layer, 3 sequences */
    summarize("--mode inference --model-file tests/data/swa-oss.json --pp 2 --prompt-len 1000 --decode-steps 24 "
              "--batch 3", &c, &s);
    assert_int_equal(s.stages[0].kv_cache_bytes, 3ull * 512 * (1024 + 128));
    assert_int_equal(s.stages[1].kv_cache_bytes, 3ull * 512 * (1024 + 128));
    etk_gen_summary_free(&s);
    summarize("--mode inference --model-file tests/data/swa-oss.json --prompt-len 100 --decode-steps 20 --batch 3",
              &c, &s);
    assert_int_equal(s.stages[0].kv_cache_bytes, 3ull * 512 * 4 * 120); /* shorter than the window */
    etk_gen_summary_free(&s);
    /* TP 16 over 8 KV heads: one KV head per rank, each on 2 ranks (replicated K/V projections
     * and cache); the query heads, FFN and vocabulary split 16 ways */
    summarize("--mode inference --model llama3-8b --tp 16 --prompt-len 100 --decode-steps 4 --batch 2", &c, &s);
    assert_int_equal(s.kv_replicas, 2);
    assert_int_equal(s.stages[0].kv_cache_bytes, 2ull * 32 * 1 * 128 * 2 * 2 * (100 + 4));
    {
        const uint64_t h = 4096, V = 128256, q = h * 32 * 128 / 16, kvw = 2 * h * 1 * 128, o = 32 * 128 * h / 16,
                       ffn = 3 * h * 14336 / 16;
        assert_int_equal(s.stages[0].weight_bytes, 2 * (32 * (q + kvw + o + ffn + 2 * h) + 2 * V * h / 16 + h));
        uint64_t params;
        etk_error err = {0};
        assert_int_equal(etk_model_params(&c.model, &params, &err), 0);
        assert_int_equal(s.params_total, params); /* the model's, not the replicated count */
        /* attention is not replicated: over the 16 ranks, 4 L H d (P + 1) B in decode step 1;
         * the weight GEMMs, 2 B x the weights per rank x 16, count K and V twice */
        etk_workload *w = workload("--mode inference --model llama3-8b --tp 16 --prompt-len 100 --decode-steps 4 "
                                   "--batch 2", &c);
        sums d1 = phase_sums(w->ranks[0], "decode1/");
        assert_true(16 * d1.attn == 4.0 * 32 * 32 * 128 * 101 * 2);
        assert_true(16 * d1.gemm == 2.0 * 2 * (32 * 16 * (q + kvw + o + ffn) + V * h));
        etk_workload_free(w);
    }
    etk_gen_summary_free(&s);
    /* deepseek-v3: kv_lora 512 + qk_rope 64 per layer per token */
    summarize("--mode inference --model deepseek-v3 --layers 4 --tp 2 --prompt-len 128 --decode-steps 2 --batch 2",
              &c, &s);
    assert_int_equal(s.kv_bytes_per_token, 4ull * (512 + 64) * 2);
    assert_int_equal(etk_model_kv_bytes_per_token(&c.model, 2), 4ull * (512 + 64) * 2);
    assert_int_equal(s.stages[0].kv_cache_bytes, 4ull * (512 + 64) * 2 * 2 * (128 + 2));
    etk_gen_summary_free(&s);
    /* a batch that does not fit: llama3-70b on one H100 */
    summarize("--mode inference --model llama3-70b --tp 1 --prompt-len 4096 --decode-steps 16 --batch 8", &c, &s);
    assert_false(s.fits);
    etk_gen_summary_free(&s);
}

/* TP all-reduces (embedding + attention projection + FFN down: 2 B T h bytes each), the
 * logits all-gather for sampling, EP all-to-all, pipeline messages */
static void test_collectives(void **state)
{
    (void)state;
    const uint64_t h = 4096, L = 32, B = 2, P = 100, N = 5, V = 128256;
    etk_gen_config c;
    etk_gen_summary s;
    summarize("--mode inference --model llama3-8b --tp 2 --prompt-len 100 --decode-steps 5 --batch 2", &c, &s);
    const etk_gen_stage *x = &s.stages[0];
    /* per phase: the vocabulary-parallel embedding's partial sums, then 2 per layer */
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_TP][ETK_COLL_ALL_REDUCE], (2 * L + 1) * (N + 1));
    assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_ALL_REDUCE], (2 * L + 1) * 2 * B * h * (P + N));
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_TP][ETK_COLL_ALL_GATHER], N + 1);
    assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_ALL_GATHER], (N + 1) * B * (V / 2) * 2);
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE], 0); /* no gradients */
    etk_gen_summary_free(&s);

    /* EP 4 over DP 4, mixtral: dispatch + combine per layer and phase, E c h 2 bytes each with
     * c = B T top-k / E */
    summarize("--mode inference --model mixtral-8x7b --layers 2 --dp 4 --ep 4 --prompt-len 64 --decode-steps 3 --batch 4",
              &c, &s);
    const uint64_t Bm = 4, Pm = 64, Nm = 3, K = 2;
    x = &s.stages[0];
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 2 * 2 * (Nm + 1));
    assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 2 * 2 * Bm * K * h * 2 * (Pm + Nm));
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_REDUCE], 0);
    assert_int_equal(s.tokens_per_step, 4 * Bm * (Nm + 1)); /* 4 independent replicas */
    etk_gen_summary_free(&s);

    /* PP 2, 2 micro-batches of b = 2: activations b T h 2 forward, token ids b 4 back */
    summarize("--mode inference --model llama3-8b --pp 2 --prompt-len 100 --decode-steps 5 --batch 4 --micro-batches 2",
              &c, &s);
    const uint64_t b = 2, M = 2;
    assert_int_equal(s.stages[0].send_count, M * (N + 1));
    assert_int_equal(s.stages[0].send_bytes, M * b * h * 2 * (P + N));
    assert_int_equal(s.stages[1].recv_bytes, s.stages[0].send_bytes);
    assert_int_equal(s.stages[1].send_count, M * N);
    assert_int_equal(s.stages[1].send_bytes, M * N * b * 4);
    assert_int_equal(s.stages[0].recv_bytes, M * N * b * 4);
    assert_int_equal(s.stages[0].comm_buffer_bytes, b * P * h * 2);
    etk_gen_summary_free(&s);
}

static void test_validate_and_deterministic(void **state)
{
    (void)state;
    const char *plans[] = {
        "--mode inference --model llama3-8b --layers 4 --tp 2 --pp 2 --dp 2 --prompt-len 32 --decode-steps 3 --batch 4 "
        "--micro-batches 2",
        "--mode inference --model mixtral-8x7b --layers 2 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 "
        "--tp 2 --dp 4 --ep 4 --pp 2 --prompt-len 16 --decode-steps 2 --batch 2",
        "--mode inference --model deepseek-v3 --layers 4 --tp 2 --prompt-len 16 --decode-steps 2 --batch 1",
    };
    gen_expect_valid(plans, sizeof plans / sizeof plans[0]);
    /* the same plan twice: the same bytes */
    etk_gen_config c;
    etk_error err = {0};
    assert_int_equal(parse(plans[0], &c, &err), 0);
    c.no_sync = true;
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/inf1", tu_tmpdir());
    snprintf(p2, sizeof p2, "%s/inf2", tu_tmpdir());
    assert_int_equal(etk_gen_write(&c, p1, &err), 0);
    assert_int_equal(etk_gen_write(&c, p2, &err), 0);
    /* the files are streamed (each stage's representative encoded node by node, no trace held):
     * every rank file is also byte for byte what the trace layer's writer writes for the
     * unfolded in-memory workload of the same plan */
    etk_workload *mem = NULL;
    assert_int_equal(etk_gen_workload(&c, false, &mem, &err), 0);
    assert_int_equal(mem->n_ranks, c.n_ranks);
    for (uint32_t r = 0; r < c.n_ranks; r++) {
        char a[600], b[600], ref[600];
        snprintf(a, sizeof a, "%s.%u.et", p1, r);
        snprintf(b, sizeof b, "%s.%u.et", p2, r);
        snprintf(ref, sizeof ref, "%s/infref.%u.et", tu_tmpdir(), r);
        if (etk_trace_write(mem->ranks[r], ref, &err))
            fail_msg("%s", err.msg);
        expect_same_bytes(a, b);
        expect_same_bytes(a, ref);
    }
    etk_workload_free(mem);
}

/* one rank, every compute node takes tensor_size ns (1 byte per ns): TTFT is the sum of the
 * prefill's bytes, decode step i the sum of its bytes, which grows per token of context by the
 * KV cache read (K and V: 2 x 2 kv d B bytes) plus the scores, softmax in and out and the
 * probabilities read by av (4 x 2 H B bytes), per layer */
static uint64_t bytes_ns(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx, (void)c, (void)flops;
    return bytes;
}

static void test_ttft_tpot(void **state)
{
    (void)state;
    const uint64_t L = 4, H = 32, kv = 8, d = 128, B = 3, N = 5;
    etk_gen_config c;
    etk_workload *w = workload("--mode inference --model llama3-8b --layers 4 --prompt-len 300 --decode-steps 5 "
                               "--batch 3", &c);
    etk_cluster cl;
    etk_error err = {0};
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &cl, &err), 0);
    cl.n_npus = 1;
    cl.dims[0].size = 1;
    cl.n_dims = 1;
    etk_sim_costs costs = {.compute_ns = bytes_ns};
    etk_sim_opts o = {.costs = &costs, .tokens_per_step = (double)c.tokens_per_step};
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &cl, &o, &s, &err))
        fail_msg("%s", err.msg);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_true(r->inference);
    assert_int_equal(r->decode_steps, N);
    const etk_trace *t = w->ranks[0];
    assert_int_equal(r->ttft_ns, phase_sums(t, "prefill/").bytes);
    uint64_t prev = r->ttft_ns, sum = 0, mn = UINT64_MAX, mx = 0;
    for (uint32_t i = 1; i <= N; i++) {
        char ph[24];
        phase_of(i, ph, sizeof ph);
        uint64_t step = r->phase_end_ns[i] - r->phase_end_ns[i - 1];
        assert_int_equal(step, phase_sums(t, ph).bytes);
        if (i > 1)
            assert_int_equal(step - prev, L * B * (2 * 2 * kv * d + 4 * 2 * H));
        prev = step;
        sum += step;
        mn = step < mn ? step : mn;
        mx = step > mx ? step : mx;
    }
    assert_true(r->tpot_ns == (double)sum / N);
    assert_int_equal(r->tpot_min_ns, mn);
    assert_int_equal(r->tpot_max_ns, mx);
    assert_int_equal(r->step_ns, r->ttft_ns + sum); /* TTFT + N TPOT = the whole request */
    etk_sim_free(s);
    etk_workload_free(w);
}

/* DeepSeek-V3's first dense_layers = 3 layers are dense in inference too (the dense_layer
 * section: no router, no expert dispatch, the dense FFN of width ffn 18432): decode step 1 of
 * 4 layers at TP 1, batch 2 (h 7168): each dense layer's gate is 2 B h ffn FLOPs; the MoE layer
 * L3 has the router (2 B h E, E 256) and no dense gate of that size. */
static void test_deepseek_dense_layers(void **state)
{
    (void)state;
    etk_gen_config c;
    etk_workload *w = workload("--mode inference --model deepseek-v3 --layers 4 --prompt-len 16 --decode-steps 1 "
                               "--batch 2", &c);
    const etk_trace *t = w->ranks[0];
    const double B = 2, h = 7168, ffn = 18432, E = 256;
    int gates = 0, routers = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *x = &t->nodes[i];
        if (strncmp(x->name, "decode1/", 8))
            continue;
        int64_t f = 0;
        etk_node_i64(x, "num_ops", &f);
        int layer = -1;
        const char *l = strstr(x->name, ".L");
        if (l)
            layer = atoi(l + 2);
        if (ends_with_op(x->name, "gate") && layer >= 0 && layer < 3) {
            assert_true((double)f == 2 * B * h * ffn);
            gates++;
        }
        if (ends_with_op(x->name, "router")) {
            assert_int_equal(layer, 3);
            assert_true((double)f == 2 * B * h * E);
            routers++;
        }
        if (layer >= 0 && layer < 3)
            assert_null(strstr(x->name, "dispatch"));
    }
    assert_int_equal(gates, 3);
    assert_int_equal(routers, 1);
    etk_workload_free(w);
}

static double node_flops(const etk_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i].name, name)) {
            int64_t f = -1;
            etk_node_i64(&t->nodes[i], "num_ops", &f);
            return f < 0 ? (double)f : gen_node_flops(&t->nodes[i]);
        }
    fail_msg("no node %s", name);
    return -1;
}

static bool has_node(const etk_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i].name, name))
            return true;
    return false;
}

/* FLOPs and bytes of the compute nodes whose name starts with prefix ("decode1/mb0.L3.") */
static void prefix_sums(const etk_trace *t, const char *prefix, double *flops, uint64_t *bytes)
{
    *flops = 0;
    *bytes = 0;
    size_t n = strlen(prefix);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *x = &t->nodes[i];
        int64_t f = 0;
        uint64_t b = 0;
        if (x->type != ETK_NODE_COMP || strncmp(x->name, prefix, n) || !etk_node_i64(x, "num_ops", &f))
            continue;
        etk_node_u64(x, "tensor_size", &b);
        *flops += gen_node_flops(x);
        *bytes += b;
    }
}

/* DeepSeek-V3 dimensions (presets/models/deepseek-v3.yaml) */
#define DS_DIMS                                                                                                   \
    const double h = 7168, H = 128, qa = 1536, kl = 512, qn = 128, qr = 64, vh = 128, ffn = 18432, f = 2048,      \
                 E = 256, K = 8, u = 2048 /* 1 shared expert */, m = kl + qr /* a cache row */

/* Expected distinct experts whose weights a rank reads: each token selects K distinct experts of
 * E uniformly, tokens independent; T tokens routed in the EP group, E / ep experts per rank */
static double experts_read(double E, double K, double ep, double T)
{
    return E / ep * (1 - pow(1 - K / E, T));
}

/* DeepSeek-V3 decode at TP 8, one sequence: MLA in the absorbed form (per layer and token,
 * query absorption 2 H qk_nope kv_lora, scores over the latent + rotary cache 2 H ctx (kv_lora +
 * qk_rope), the weighted sum over the latent 2 H ctx kv_lora, value up-projection 2 H kv_lora
 * v_head; heads split over TP), the FFN of the dense layers 0-2, the MoE layer 3 with exactly
 * B topk routed rows through the experts (not E x capacity), router and shared expert; the
 * elementwise terms from the block file's constants; the bytes: the cache read once per layer
 * (scores), the weights of the 8 selected experts of 256. */
static void test_deepseek_decode(void **state)
{
    (void)state;
    DS_DIMS;
    const double tp = 8, B = 1, P = 64, R = B * K;
    etk_gen_config c;
    etk_workload *w = workload("--mode inference --model deepseek-v3 --layers 4 --tp 8 --prompt-len 64 "
                               "--decode-steps 2 --batch 1", &c);
    assert_true(c.model.hidden == h && c.model.experts == E && c.model.topk == K && c.model.kv_lora == kl &&
                c.model.moe_ffn == f && c.model.ffn == ffn && c.model.q_lora == qa && c.model.v_head == vh);
    const etk_trace *t = w->ranks[0];
    char nm[96];
    for (int i = 1; i <= 2; i++) {
        const double ctx = P + i;
        for (int l = 0; l < 4; l++) {
#define F(op) (snprintf(nm, sizeof nm, "decode%d/mb0.L%d.%s", i, l, op), node_flops(t, nm))
            /* attention, per rank */
            const double q_a = 2 * B * h * qa, q_nope = 2 * B * qa * H * qn / tp, q_rope = 2 * B * qa * H * qr / tp,
                         kv_a = 2 * B * h * kl, k_rope = 2 * B * h * qr, q_absorb = 2 * B * H * qn * kl / tp,
                         scores = 2 * B * H * ctx * m / tp, av = 2 * B * H * ctx * kl / tp,
                         v_up = 2 * B * H * kl * vh / tp, proj = 2 * B * H * vh * h / tp;
            assert_true(F("q_a") == q_a);
            assert_true(F("q_nope") == q_nope);
            assert_true(F("q_rope") == q_rope);
            assert_true(F("kv_a") == kv_a);
            assert_true(F("k_rope") == k_rope);
            assert_true(F("q_absorb") == q_absorb);
            assert_true(F("scores") == scores);
            assert_true(F("av") == av);
            assert_true(F("v_up") == v_up);
            assert_true(F("proj") == proj);
            /* no decompression of K and V over the cache in decode */
            snprintf(nm, sizeof nm, "decode%d/mb0.L%d.k_b", i, l);
            assert_false(has_node(t, nm));
            double gemm = q_a + q_nope + q_rope + kv_a + k_rope + q_absorb + scores + av + v_up + proj;
            /* norms 4 per element (h, q_lora, kv_lora, h), RoPE 3 (H/tp qr, qr), softmax 5 per
             * score, two residual adds */
            double elem = 4 * B * (h + qa + kl + h) + 3 * B * (H / tp * qr + qr) + 5 * B * H / tp * ctx + 2 * B * h;
            if (l < 3) {
                const double ff = 2 * B * h * ffn / tp;
                assert_true(F("gate") == ff);
                assert_true(F("up") == ff);
                assert_true(F("down") == ff);
                gemm += 3 * ff;
                elem += 5 * B * ffn / tp; /* SwiGLU */
            } else {
                const double ex = 2 * R * h * f / tp, sh = 2 * B * h * u / tp, router = 2 * B * h * E;
                assert_true(F("router") == router);
                assert_true(F("gate") == ex);
                assert_true(F("up") == ex);
                assert_true(F("down") == ex);
                assert_true(F("shared_gate") == sh);
                assert_true(F("shared_up") == sh);
                assert_true(F("shared_down") == sh);
                gemm += router + 3 * ex + 3 * sh;
                /* routing softmax 5 E, SwiGLUs, combine 2 topk per element, the MoE sum */
                elem += 5 * B * E + 5 * R * f / tp + 5 * B * u / tp + 2 * K * B * h + B * h;
            }
#undef F
            double lf;
            uint64_t lb;
            snprintf(nm, sizeof nm, "decode%d/mb0.L%d.", i, l);
            prefix_sums(t, nm, &lf, &lb);
            assert_true(lf == gemm + elem);
        }
        /* bytes: the scores read q (H/tp rows of m) and the cache B ctx m once, write the scores;
         * av reads the probabilities (its values are the same cache rows) and writes H/tp kv_lora */
        snprintf(nm, sizeof nm, "decode%d/mb0.L3.scores", i);
        assert_int_equal(node_bytes(t, nm), (uint64_t)(2 * (B * H / tp * m + B * ctx * m + B * H / tp * ctx)));
        snprintf(nm, sizeof nm, "decode%d/mb0.L3.av", i);
        assert_int_equal(node_bytes(t, nm), (uint64_t)(2 * (B * H / tp * ctx + B * H / tp * kl)));
        /* the expert GEMMs read the 8 experts the token selects (of 256): (rows in, weights, rows out) */
        assert_true(experts_read(E, K, 1, B) == K);
        snprintf(nm, sizeof nm, "decode%d/mb0.L3.gate", i);
        assert_int_equal(node_bytes(t, nm), (uint64_t)(2 * (R * h + K * h * f / tp + R * f / tp)));
        snprintf(nm, sizeof nm, "decode%d/mb0.L3.down", i);
        assert_int_equal(node_bytes(t, nm), (uint64_t)(2 * (R * f / tp + K * f * h / tp + R * h)));
    }
    /* the prefill keeps the naive form: K and V decompressed for the prompt */
    assert_true(node_flops(t, "prefill/mb0.L3.k_b") == 2 * B * P * kl * H * qn / tp);
    assert_false(has_node(t, "prefill/mb0.L3.q_absorb"));
    /* TPOT: a decode step's MoE layer moves the weights it reads and the cache, the rest (the
     * token's activations) under 2 % of it. Weights per rank, 2 bytes each: replicated q_a,
     * kv_a, k_rope, router and the four norms; TP-split q_nope, q_rope, wk_b (absorbed),
     * wv_b, wo, shared expert; the 8 selected experts */
    {
        const double wts = 2 * (h * qa + h * kl + h * qr + h * E + h + qa + kl + h +
                                (qa * H * (qn + qr) + kl * H * qn + kl * H * vh + H * vh * h + 3 * h * u) / tp +
                                K * 3 * h * f / tp),
                     cache = 2 * B * (P + 1) * m;
        double lf;
        uint64_t lb;
        prefix_sums(t, "decode1/mb0.L3.", &lf, &lb);
        assert_true((double)lb > wts + cache);
        assert_true((double)lb < 1.02 * (wts + cache));
    }
    etk_workload_free(w);
}

/* Expert weights read per rank as the batch grows: B = 64 decode tokens select 222.4 of the
 * 256 experts in expectation, B = 1024 all of them (to 0.01); the expert GEMMs always process
 * exactly B topk rows */
static void test_deepseek_experts_read(void **state)
{
    (void)state;
    DS_DIMS;
    (void)H, (void)qa, (void)kl, (void)qn, (void)qr, (void)vh, (void)ffn, (void)u, (void)m;
    const double tp = 2, Bs[2] = {64, 1024};
    for (int k = 0; k < 2; k++) {
        const double B = Bs[k], R = B * K, D = experts_read(E, K, 1, B);
        char line[200];
        snprintf(line, sizeof line, "--mode inference --model deepseek-v3 --layers 4 --tp 2 --prompt-len 4 "
                 "--decode-steps 1 --batch %d", (int)B);
        etk_gen_config c;
        etk_workload *w = workload(line, &c);
        const etk_trace *t = w->ranks[0];
        if (k == 0)
            assert_true(fabs(D - 222.4) < 0.1);
        else
            assert_true(D > 255.99 && D <= 256);
        assert_true(node_flops(t, "decode1/mb0.L3.gate") == 2 * R * h * f / tp);
        double want = 2 * (R * h + D * h * f / tp + R * f / tp);
        assert_true(fabs((double)node_bytes(t, "decode1/mb0.L3.gate") - want) <= 2);
        /* the prefill's B P = 4 B tokens: all experts, within a fraction of one */
        double Dp = experts_read(E, K, 1, B * 4);
        want = 2 * (4 * R * h + Dp * h * f / tp + 4 * R * f / tp);
        assert_true(fabs((double)node_bytes(t, "prefill/mb0.L3.gate") - want) <= 2);
        etk_workload_free(w);
    }
}

/* DeepSeek-V3 with EP 4 over DP 4 (TP 1), B = 2 per rank: the all-to-alls carry the tokens
 * routed, B T topk h 2 bytes per dispatch and per combine (the rank's buffer, as in training);
 * each rank's expert GEMMs process B topk rows and read the weights of the expected distinct
 * experts among its 64: 64 (1 - (1 - 8/256)^(4 B)) = 14.36 */
static void test_deepseek_ep(void **state)
{
    (void)state;
    DS_DIMS;
    (void)H, (void)qa, (void)kl, (void)qn, (void)qr, (void)vh, (void)ffn, (void)u, (void)m;
    const double B = 2, P = 16, N = 2, ep = 4, R = B * K;
    etk_gen_config c;
    etk_gen_summary s;
    summarize("--mode inference --model deepseek-v3 --layers 4 --dp 4 --ep 4 --prompt-len 16 --decode-steps 2 "
              "--batch 2", &c, &s);
    const etk_gen_stage *x = &s.stages[0];
    /* one MoE layer (3), dispatch + combine, prefill and 2 decode steps */
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 2 * (N + 1));
    assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], (uint64_t)(2 * B * K * h * 2 * (P + N)));
    etk_gen_summary_free(&s);
    etk_workload *w = workload("--mode inference --model deepseek-v3 --layers 4 --dp 4 --ep 4 --prompt-len 16 "
                               "--decode-steps 2 --batch 2", &c);
    const etk_trace *t = w->ranks[0];
    assert_true(node_flops(t, "decode2/mb0.L3.up") == 2 * R * h * f);
    const double D = experts_read(E, K, ep, ep * B);
    assert_true(D > 14.3 && D < 14.4);
    double want = 2 * (R * h + D * h * f + R * f);
    assert_true(fabs((double)node_bytes(t, "decode2/mb0.L3.up") - want) <= 2);
    etk_workload_free(w);
}

/* --attention flash in inference: the prefill's attention region (scores, softmax, av) is one
 * fused node per layer with op_kind "attention" and the region's FLOPs (llama3-8b, 2 layers,
 * B 1, P 1024, TP 1: 4 H d P^2 for the two GEMMs + 5 per score H P^2 = 32 * 1024^2 * (4*128 + 5)),
 * bytes Q + K + V + O + fp32 log-sum-exp = (P h + 2 P kv d + P h) 2 + H P 4; the decode steps keep
 * the unfused ops (bound by the KV-cache read); the request's FLOPs are those of unfused (whose
 * prefill has the scores and av GEMMs, 4 L H d P^2). Flash is the default in inference too. */
static void test_flash_prefill(void **state)
{
    (void)state;
    const char *base = "--mode inference --model llama3-8b --layers 2 --prompt-len 1024 --decode-steps 1";
    char line[256], uline[256];
    snprintf(line, sizeof line, "%s --attention flash", base);
    snprintf(uline, sizeof uline, "%s --attention unfused", base);
    etk_gen_config cf, cu, cd;
    etk_workload *wf = workload(line, &cf), *wu = workload(uline, &cu), *wd = workload(base, &cd);
    const etk_trace *t = wf->ranks[0];
    const double H = 32, d = 128, P = 1024, h = 4096, kv = 8;
    int fused = 0, dec_scores = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *x = &t->nodes[i];
        if (!strncmp(x->name, "prefill/", 8) && ends_with_op(x->name, "flash_attn")) {
            int64_t f = 0;
            uint64_t b = 0;
            const char *k = etk_node_str(x, "op_kind");
            assert_true(etk_node_i64(x, "num_ops", &f) && etk_node_u64(x, "tensor_size", &b));
            assert_true((double)f == H * P * P * (4 * d + 5));
            assert_true((double)b == (P * h + 2 * P * kv * d + P * h) * 2 + H * P * 4);
            assert_non_null(k);
            assert_string_equal(k, "attention");
            fused++;
        }
        assert_false(!strncmp(x->name, "prefill/", 8) && ends_with_op(x->name, "softmax"));
        if (!strncmp(x->name, "decode1/", 8) && ends_with_op(x->name, "scores"))
            dec_scores++;
    }
    assert_int_equal(fused, 2);
    assert_int_equal(dec_scores, 2);
    sums f = phase_sums(t, "prefill/"), u = phase_sums(wu->ranks[0], "prefill/");
    assert_true(f.all == u.all);
    assert_true(f.attn == 0);                      /* no scores / av node left in the prefill */
    assert_true(u.attn == 4 * 2 * H * d * P * P); /* unfused: 4 L H d P^2, B 1 */
    /* without --attention: flash, the same prefill as the explicit flash plan */
    assert_int_equal(cd.attention, ETK_ATTN_FLASH);
    sums df = phase_sums(wd->ranks[0], "prefill/");
    assert_true(df.all == f.all && df.bytes == f.bytes && df.nodes == f.nodes);
    etk_workload_free(wf);
    etk_workload_free(wu);
    etk_workload_free(wd);
}

static void test_errors(void **state)
{
    (void)state;
    assert_non_null(strstr(gen_plan_error("--mode inference --prompt-len 0"), "--prompt-len wants a positive integer"));
    assert_non_null(strstr(gen_plan_error("--mode inference --decode-steps 0"), "--decode-steps wants a positive integer"));
    assert_non_null(strstr(gen_plan_error("--mode bogus"), "--mode wants training or inference, got 'bogus'"));
    assert_non_null(strstr(gen_plan_error("--mode inference --zero 1"), "--zero is a training option"));
    assert_non_null(strstr(gen_plan_error("--recompute full --mode inference"), "--recompute is a training option"));
    assert_non_null(strstr(gen_plan_error("--mode inference --sp --tp 2"), "--sp is a training option"));
    assert_non_null(strstr(gen_plan_error("--batch 4"), "--batch needs --mode inference"));
    assert_non_null(strstr(gen_plan_error("--mode inference --batch 6 --micro-batches 4"),
                           "--micro-batches 4 does not divide --batch 6"));
    assert_non_null(strstr(gen_plan_error("--mode inference --kv-precision int4"), "--kv-precision wants bf16, fp16 or fp8"));
    assert_non_null(strstr(gen_plan_error("--mode inference --model llama3-8b --tp 3"), "--tp 3 does not divide"));
    assert_non_null(strstr(gen_plan_error("--mode inference --model llama3-8b --hidden 6144 --heads 48 --tp 12"),
                           "inference replicates KV heads only when the KV heads divide --tp"));
    /* fields set directly by a library caller */
    etk_gen_config c;
    etk_error err = {0};
    etk_gen_config_init(&c);
    c.mode = ETK_GEN_MODE_INFERENCE;
    c.recompute = ETK_RECOMPUTE_FULL;
    assert_int_equal(etk_gen_check(&c, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "--recompute is a training option"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_llama3_8b), cmocka_unit_test(test_flops_mixtral),
        cmocka_unit_test(test_kv_cache),        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_validate_and_deterministic), cmocka_unit_test(test_ttft_tpot),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_deepseek_dense_layers),
        cmocka_unit_test(test_flash_prefill),
        cmocka_unit_test(test_deepseek_decode), cmocka_unit_test(test_deepseek_experts_read),
        cmocka_unit_test(test_deepseek_ep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
