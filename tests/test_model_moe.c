/* test_model_moe.c — mixture-of-experts models: parameter counts (total and active per token)
 * against closed forms from the published dimensions, the FLOPs of a lowered MoE layer (router
 * GEMM + the top-k experts of each token + shared experts), expert capacity, and refusal of
 * impossible MoE models with a message naming the field. */
#include "testutil.h"

#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/model.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "sim_testlib.h"
#include "gen/lower.h"
#include "model/graph.h"

/* Mixtral 8x7B (Jiang et al. 2024, Table 1): l = 32, h = 4096, 32 heads of d = 128, 8 KV heads,
 * expert FFN f = 14336, E = 8 experts, top-2, V = 32000, untied output layer.
 *   attention per layer  = 2 h^2 (wq, wo) + 2 h (8*128) (wk, wv)      = 41,943,040
 *   norms per layer      = 2 h                                         = 8,192
 *   router per layer     = h E                                         = 32,768
 *   experts per layer    = E * 3 h f                                   = 1,409,286,144
 *   embedding + output   = 2 V h, final norm h                         = 262,148,096
 * total  = 32 (41,943,040 + 8,192 + 32,768 + 1,409,286,144) + 262,148,096 = 46,702,792,704
 * active = the same with top-2 of the 8 experts: 32 (41,984,000 + 2*176,160,768) + 262,148,096
 *        = 12,879,925,248
 * The paper rounds these to 46.7B total and 12.9B active parameters per token. */
static void test_mixtral_params(void **state)
{
    (void)state;
    etk_model m;
    etk_error err = {0};
    if (etk_model_preset("mixtral-8x7b", &m, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(m.arch, "moe");
    uint64_t h = 4096, f = 14336, E = 8, V = 32000, l = 32, kvd = 8 * 128;
    uint64_t attn = 2 * h * h + 2 * h * kvd, expert = 3 * h * f;
    uint64_t total = l * (attn + 2 * h + h * E + E * expert) + 2 * V * h + h;
    uint64_t active = l * (attn + 2 * h + h * E + 2 * expert) + 2 * V * h + h;
    assert_int_equal(total, 46702792704ull);
    assert_int_equal(active, 12879925248ull);
    uint64_t p;
    assert_int_equal(etk_model_params(&m, &p, &err), 0);
    assert_int_equal(p, total);
    assert_int_equal(etk_model_active_params(&m, &p, &err), 0);
    assert_int_equal(p, active);
}

/* Sum of the forward FLOPs of the named ops of a lowered layer (TP 1). */
static double layer_fwd_flops(const etk_model *m, int64_t batch, const char *const *names, int64_t tp)
{
    etk_graph *g;
    etk_error err = {0};
    if (etk_graph_load(m, batch, &g, &err))
        fail_msg("%s", err.msg);
    etk_arena *a = etk_arena_new(0);
    gprog p;
    glower_opts o = {.tp = tp, .cp = 1, .ep = 1, .sp = false, .recompute = 0, .act_bytes = 2, .gemm_bytes = 0};
    if (etk_lower_section(g, G_SEC_LAYER, &o, a, &p, &err))
        fail_msg("%s", err.msg);
    double f = 0;
    for (int i = 0; i < p.nfwd; i++)
        for (int k = 0; names[k]; k++)
            if (p.v[i].type == ETK_NODE_COMP && !strcmp(p.v[i].name, names[k]))
                f += p.v[i].flops;
    etk_arena_free(a);
    etk_graph_free(g);
    return f;
}

/* FLOPs per token of the MoE FFN of Mixtral: router GEMM 2 h E, then for each of the top-2
 * experts a SwiGLU FFN 3 GEMMs of 2 h f, so 2 h E + 2 * 6 h f = 704,708,608 FLOPs per token
 * (batch 1 x seq 32768 tokens, capacity factor 1, so each expert's capacity is exactly
 * 32768*2/8 = 8192 tokens and no padding enters the count). */
static void test_moe_layer_flops(void **state)
{
    (void)state;
    etk_model m;
    assert_int_equal(etk_model_preset("mixtral-8x7b", &m, NULL), 0);
    double h = 4096, f = 14336, E = 8, k = 2, tokens = 32768;
    assert_int_equal(etk_model_capacity(&m, 1), 8192);
    static const char *const router[] = {"router", NULL};
    static const char *const experts[] = {"gate", "up", "down", NULL};
    assert_true(layer_fwd_flops(&m, 1, router, 1) == 2 * h * E * tokens);
    assert_true(layer_fwd_flops(&m, 1, experts, 1) == k * 6 * h * f * tokens);
    assert_true(2 * h * E + k * 6 * h * f == 704708608.0);
    /* TP 2 splits each expert's f: half the expert FLOPs per rank, the router is replicated */
    assert_true(layer_fwd_flops(&m, 1, experts, 2) == k * 6 * h * f * tokens / 2);
    assert_true(layer_fwd_flops(&m, 1, router, 2) == 2 * h * E * tokens);
    /* capacity factor 1.25: each expert is sized for ceil(1.25 * 8192) = 10240 tokens and the
     * padded expert GEMMs cost 1.25x */
    m.capacity_factor = 1.25;
    assert_int_equal(etk_model_capacity(&m, 1), 10240);
    assert_true(layer_fwd_flops(&m, 1, experts, 1) == 1.25 * k * 6 * h * f * tokens);
    /* uneven: 3 tokens x top-2 over 8 experts: ceil(6/8) = 1 token per expert */
    m.capacity_factor = 0;
    m.seq = 3;
    assert_int_equal(etk_model_capacity(&m, 1), 1);
}

/* DeepSeek-V3 (technical report section 4.2, config.json): l = 61 of which the first 3 dense
 * (FFN 18432), h = 7168, 128 heads, MLA with q_lora a = 1536, kv_lora c = 512, per-head
 * non-rotary p = 128, rotary j = 64, value w = 128; 256 routed experts of f = 2048, 1 shared
 * expert, top-8; V = 129280, untied output.
 *   MLA per layer = h a + a + a n (p + j) + h (c + j) + c + c n (p + w) + n w h = 187,107,328
 *   norms 2h = 14,336;  dense FFN 3 h 18432 = 396,361,728;  router h 256 = 1,835,008
 *   one expert 3 h f = 44,040,192
 *   dense layer = 187,107,328 + 14,336 + 396,361,728                        = 583,483,392
 *   MoE layer   = 187,107,328 + 14,336 + 1,835,008 + (256 + 1) 44,040,192   = 11,507,286,016
 * total  = 3 dense + 58 MoE + 2 V h + h = 671,026,404,352
 * active = 3 dense + 58 (187,107,328 + 14,336 + 1,835,008 + (8 + 1) 44,040,192) + 2 V h + h
 *        = 37,552,282,624
 * Published: 671B total and 37B activated. The exact count 671.03B rounds to the published
 * figure; the HF checkpoint adds e_score_correction_bias (256 per MoE layer, 14,848 in all; not
 * modelled) and the 14B multi-token-prediction module (685B). Our 37.55B active includes the
 * input embedding (0.93B, a lookup); without it 36.6B; the report's "37B" is that figure
 * rounded either way. */
static void test_deepseek_v3_params(void **state)
{
    (void)state;
    etk_model m;
    etk_error err = {0};
    if (etk_model_preset("deepseek-v3", &m, &err))
        fail_msg("%s", err.msg);
    uint64_t h = 7168, n = 128, a = 1536, c = 512, p = 128, j = 64, w = 128, V = 129280, f = 2048;
    uint64_t mla = h * a + a + a * n * (p + j) + h * (c + j) + c + c * n * (p + w) + n * w * h;
    assert_int_equal(mla, 187107328ull);
    uint64_t expert = 3 * h * f, router = h * 256;
    uint64_t dense = mla + 2 * h + 3 * h * 18432;
    uint64_t moe = mla + 2 * h + router + (256 + 1) * expert;
    uint64_t total = 3 * dense + 58 * moe + 2 * V * h + h;
    uint64_t active = 3 * dense + 58 * (mla + 2 * h + router + (8 + 1) * expert) + 2 * V * h + h;
    assert_int_equal(total, 671026404352ull);
    assert_int_equal(active, 37552282624ull);
    uint64_t got;
    assert_int_equal(etk_model_params(&m, &got, &err), 0);
    assert_int_equal(got, total);
    assert_int_equal(etk_model_active_params(&m, &got, &err), 0);
    assert_int_equal(got, active);
    /* without the dense_layer section (all 61 layers MoE) the count would differ: the section
     * is what makes the total exact */
    m.dense_layers = 0;
    assert_int_equal(etk_model_params(&m, &got, &err), 0);
    assert_int_equal(got, 61 * moe + 2 * V * h + h);
}

/* Forward FLOPs of a DeepSeek-V3 MoE layer for one sequence of s = 4096 tokens (capacity
 * 4096*8/256 = 128 tokens per expert, exact):
 *   MLA projections: 2 x (their weights) per token = 2 s (h a + a n (p+j) + h (c+j) + c n (p+w) + n w h)
 *   attention core: scores 2 s^2 n (p+j), context 2 s^2 n w (full s x s, as the llama block)
 *   MoE FFN per token: router 2 h E + top-8 experts 8 x 6 h f + shared 6 h f = 796,393,472 */
static void test_deepseek_layer_flops(void **state)
{
    (void)state;
    etk_model m;
    assert_int_equal(etk_model_preset("deepseek-v3", &m, NULL), 0);
    double s = 4096, h = 7168, n = 128, a = 1536, c = 512, p = 128, j = 64, w = 128, f = 2048, E = 256;
    assert_int_equal(etk_model_capacity(&m, 1), 128);
    static const char *const proj[] = {"q_a", "q_nope", "q_rope", "kv_a", "k_rope", "k_b", "v_b", "proj", NULL};
    static const char *const core[] = {"scores", "av", NULL};
    static const char *const ffn[] = {"router", "gate", "up", "down", "shared_gate", "shared_up", "shared_down", NULL};
    double mla_w = h * a + a * n * (p + j) + h * (c + j) + c * n * (p + w) + n * w * h;
    assert_true(layer_fwd_flops(&m, 1, proj, 1) == 2 * s * mla_w);
    assert_true(layer_fwd_flops(&m, 1, core, 1) == 2 * s * s * n * (p + j) + 2 * s * s * n * w);
    assert_true(2 * h * E + 8 * 6 * h * f + 6 * h * f == 796393472.0);
    assert_true(layer_fwd_flops(&m, 1, ffn, 1) == s * 796393472.0);
    /* TP 8: heads, expert f and shared f split 8 ways; the down-projections (q_a, kv_a, k_rope)
     * and the router are replicated */
    double repl = 2 * s * (h * a + h * (c + j));
    assert_true(layer_fwd_flops(&m, 1, proj, 8) == repl + (2 * s * mla_w - repl) / 8);
    assert_true(layer_fwd_flops(&m, 1, ffn, 8) == 2 * s * h * E + s * (8 * 6 * h * f + 6 * h * f) / 8);
}

/* --precision fp8: GEMMs read 1-byte operands and are marked fp8; elementwise ops keep BF16.
 * Llama 3 8B layer, one sequence of s = 8192, TP 1: the `gate` GEMM reads s*h activations and
 * h*f weights and writes s*f outputs, so tensor_size = s h + h f (1 byte each) + 2 s f in fp8
 * against 2 (s h + h f + s f) in bf16; its backward GEMMs carry the same marks. */
static void test_fp8_lowering(void **state)
{
    (void)state;
    etk_model m;
    assert_int_equal(etk_model_preset("llama3-8b", &m, NULL), 0);
    etk_graph *g;
    etk_error err = {0};
    assert_int_equal(etk_graph_load(&m, 1, &g, &err), 0);
    uint64_t s = 8192, h = 4096, f = 14336, kvd = 8 * 128; /* 8 KV heads of 128 */
    for (int gb = 0; gb <= 1; gb++) {
        etk_arena *a = etk_arena_new(0);
        gprog p;
        glower_opts o = {.tp = 1, .cp = 1, .ep = 1, .sp = false, .recompute = 0, .act_bytes = 2, .gemm_bytes = gb};
        assert_int_equal(etk_lower_section(g, G_SEC_LAYER, &o, a, &p, &err), 0);
        int seen = 0;
        for (int i = 0; i < p.n; i++) {
            const ginst *I = &p.v[i];
            if (I->type != ETK_NODE_COMP)
                continue;
            if (!strcmp(I->name, "gate")) {
                assert_int_equal(I->bytes, gb ? s * h + h * f + 2 * s * f : 2 * (s * h + h * f + s * f));
                seen++;
            }
            if (!strcmp(I->name, "swiglu")) /* elementwise: 2 inputs + 1 output of s*f, BF16 */
                assert_int_equal(I->bytes, 2 * 3 * s * f);
            /* the op behind the node: "gate", "gate.dgrad", "recompute.gate" -> "gate" */
            char op[32];
            snprintf(op, sizeof op, "%s", I->name);
            char *dot = strchr(op, '.');
            if (dot)
                *dot = 0;
            /* Transformer Engine's linear layers run in FP8; the attention core (scores, av)
             * stays BF16 */
            static const char *const gemms[] = {"q", "k", "v", "proj", "gate", "up", "down"};
            bool gemm = false;
            for (size_t k = 0; k < sizeof gemms / sizeof gemms[0]; k++)
                gemm |= !strcmp(op, gemms[k]);
            if (I->fp8 != (gemm && gb))
                fail_msg("node %s: fp8 mark %d with gemm_bytes %d", I->name, I->fp8, gb);
            assert_true(I->phase != P_BWD || !gemm || strchr(I->name, '.')); /* dgrad/wgrad names */
        }
        assert_int_equal(seen, 1);
        etk_arena_free(a);
    }
    /* FP8 training with Transformer Engine's casts, 4 micro-batches per step: before each FP8
     * GEMM its activation input is cast (read 2 B, write the 1-byte copy and its 1-byte
     * transpose: 4 B per element) and its weight once per step (4 B per element, a quarter per
     * micro-batch); backward, the operands of its dgrad and wgrad GEMMs as TE's GEMM benchmark
     * quantizes them: the output gradient twice (dgrad, wgrad), the weight (once per step: a
     * quarter) and the activation input (4 B per element each); none for the attention
     * core's GEMMs, none in the head (Megatron's output layer is BF16). An input cast once is
     * not cast again in the same pass: k and v read q's copy of the normed x (Megatron's fused
     * linear_qkv), up reads gate's (linear_fc1), so their forward casts hold their weights
     * only; backward (reverse order) v's and up's casts carry the input, q's, k's and gate's not */
    {
        etk_arena *a = etk_arena_new(0);
        gprog p;
        glower_opts o = {.tp = 1, .cp = 1, .ep = 1, .act_bytes = 2, .gemm_bytes = 1, .fp8_cast_mb = 4};
        assert_int_equal(etk_lower_section(g, G_SEC_LAYER, &o, a, &p, &err), 0);
        int seen = 0, casts = 0;
        for (int i = 0; i < p.n; i++) {
            const ginst *I = &p.v[i];
            if (!strstr(I->name, "fp8_cast"))
                continue;
            casts++;
            assert_true(I->type == ETK_NODE_COMP && I->flops == 0 && !I->fp8);
            if (!strcmp(I->name, "gate.fp8_cast")) { /* x [s, h], weight [h, f] */
                assert_int_equal(I->bytes, 4 * s * h + 4 * h * f / 4);
                seen++;
            } else if (!strcmp(I->name, "up.fp8_cast")) { /* gate's copy of x; weight [h, f] */
                assert_int_equal(I->bytes, 4 * h * f / 4);
                seen++;
            } else if (!strcmp(I->name, "q.fp8_cast")) { /* xn [s, h], weight [h, h] */
                assert_int_equal(I->bytes, 4 * s * h + 4 * h * h / 4);
                seen++;
            } else if (!strcmp(I->name, "k.fp8_cast") || !strcmp(I->name, "v.fp8_cast")) {
                assert_int_equal(I->bytes, 4 * h * kvd / 4); /* q's copy of xn; weight [h, kvd] */
                seen++;
            } else if (!strcmp(I->name, "down.fp8_cast")) { /* [s, f], weight [f, h] */
                assert_int_equal(I->bytes, 4 * s * f + 4 * f * h / 4);
                seen++;
            } else if (!strcmp(I->name, "down.fp8_cast_grad")) { /* d out [s, h], in [s, f], w [f, h] */
                assert_int_equal(I->bytes, 2 * 4 * s * h + 4 * s * f + 4 * f * h / 4);
                assert_int_equal(I->phase, P_BWD);
                seen++;
            } else if (!strcmp(I->name, "up.fp8_cast_grad")) { /* d out [s, f], xn [s, h], w [h, f] */
                assert_int_equal(I->bytes, 2 * 4 * s * f + 4 * s * h + 4 * h * f / 4);
                seen++;
            } else if (!strcmp(I->name, "gate.fp8_cast_grad")) { /* d out [s, f]; up's copy of xn */
                assert_int_equal(I->bytes, 2 * 4 * s * f + 4 * h * f / 4);
                seen++;
            } else if (!strcmp(I->name, "proj.fp8_cast_grad")) { /* d out [s, h], in [s, h], w [h, h] */
                assert_int_equal(I->bytes, 2 * 4 * s * h + 4 * s * h + 4 * h * h / 4);
                seen++;
            } else if (!strcmp(I->name, "v.fp8_cast_grad")) { /* d out [s, kvd], xn [s, h], w [h, kvd] */
                assert_int_equal(I->bytes, 2 * 4 * s * kvd + 4 * s * h + 4 * h * kvd / 4);
                seen++;
            } else if (!strcmp(I->name, "k.fp8_cast_grad")) { /* v's copy of xn */
                assert_int_equal(I->bytes, 2 * 4 * s * kvd + 4 * h * kvd / 4);
                seen++;
            } else if (!strcmp(I->name, "q.fp8_cast_grad")) { /* v's copy of xn */
                assert_int_equal(I->bytes, 2 * 4 * s * h + 4 * h * h / 4);
                seen++;
            }
            assert_null(strstr(I->name, "scores"));
            assert_null(strstr(I->name, "av."));
        }
        assert_int_equal(seen, 13);
        assert_int_equal(casts, 14); /* 7 FP8 GEMMs: one forward and one backward cast each */
        assert_int_equal(etk_lower_section(g, G_SEC_HEAD, &o, a, &p, &err), 0);
        for (int i = 0; i < p.n; i++)
            assert_true(!p.v[i].fp8 && !strstr(p.v[i].name, "fp8_cast"));
        etk_arena_free(a);
    }
    etk_graph_free(g);
    /* the plan accepts fp8 and names the choices otherwise */
    etk_gen_config c;
    etk_gen_config_init(&c);
    assert_int_equal(etk_gen_set(&c, "precision", "fp8", &err), 0);
    assert_true(etk_gen_set(&c, "precision", "int4", &err) < 0);
    assert_non_null(strstr(err.msg, "--precision wants bf16, fp16 or fp8, got 'int4'"));
}

/* The simulator times a node marked "precision": "fp8" at the GPU's fp8 peak and an unmarked one
 * at the cluster's precision (bf16): on an H100 (989 / 1979 dense TFLOP/s, presets/gpus/h100.yaml)
 * 1.979e12 FLOPs take 1,000,000 ns in FP8 and 2,001,011 ns (floor of 1.979e12 * 1e9 / 989e12)
 * in BF16, both compute-bound (1 MB of traffic is under a microsecond). */
static void test_fp8_roofline(void **state)
{
    (void)state;
    etk_cluster c;
    etk_error err = {0};
    if (etk_cluster_preset("dgx-h100", 1, &c, &err))
        fail_msg("%s", err.msg);
    assert_true(c.gpu.peak_flops[ETK_PREC_FP8] == 1979e12 && c.gpu.peak_flops[ETK_PREC_BF16] == 989e12);
    c.compute_efficiency = 1;
    for (int fp8 = 0; fp8 <= 1; fp8++) {
        etk_sim_opts o = {0};
        etk_sim *sim = NULL;
        if (etk_sim_new(&c, 8, NULL, &o, &sim, &err)) /* one node of 8 GPUs; rank 0 computes */
            fail_msg("%s", err.msg);
        etk_trace *t = etk_trace_new(NULL);
        sb_node b;
        sb_begin(&b, 1, ETK_NODE_COMP, "gemm");
        sb_attr(&b, etk_attr_i64("num_ops", 1979000000000ll));
        sb_attr(&b, etk_attr_u64("tensor_size", 1000000));
        sb_attr(&b, etk_attr_bool("is_cpu_op", false));
        if (fp8)
            sb_attr(&b, etk_attr_str("precision", "fp8"));
        etk_trace_add(t, &b.n);
        assert_int_equal(etk_sim_add_rank_trace(sim, 0, t, &err), 0);
        if (etk_sim_finish(sim, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(etk_sim_result_get(sim)->step_ns, fp8 ? 1000000ull : 2001011ull);
        etk_sim_free(sim);
        etk_trace_free(t);
    }
}

/* KV cache per token (inference): Llama 3 8B 2 * 32 layers * 8 KV heads * 128 * 2 bytes =
 * 131,072; Mixtral the same shape (32 layers, 8 KV heads of 128) = 131,072; DeepSeek-V3 (MLA)
 * caches the 512-dim latent and the 64-dim rotary key: 61 * (512 + 64) * 2 = 70,272 bytes, where
 * plain multi-head attention over its 128 heads of 128 + 64 / 128 would need
 * 61 * 128 * (192 + 128) * 2 = 4,997,120 (71x more; the V2 paper reports 93.3% less KV cache than
 * its dense 67B predecessor, a different baseline). */
static void test_kv_cache(void **state)
{
    (void)state;
    etk_model m;
    assert_int_equal(etk_model_preset("llama3-8b", &m, NULL), 0);
    assert_int_equal(etk_model_kv_bytes_per_token(&m, 2), 131072);
    assert_int_equal(etk_model_preset("mixtral-8x7b", &m, NULL), 0);
    assert_int_equal(etk_model_kv_bytes_per_token(&m, 2), 2 * 32 * 8 * 128 * 2);
    assert_int_equal(etk_model_preset("deepseek-v3", &m, NULL), 0);
    assert_int_equal(etk_model_kv_bytes_per_token(&m, 2), 70272);
    assert_int_equal(etk_model_kv_bytes_per_token(&m, 1), 61 * 576);
}

static const char *check_error(const char *yaml)
{
    static etk_error err;
    etk_model m;
    memset(&err, 0, sizeof err);
    if (etk_model_parse(yaml, strlen(yaml), "moe.yaml", &m, &err) == 0)
        fail_msg("accepted: %s", yaml);
    return err.msg;
}

#define MOE_BASE "name: x\nlayers: 2\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 64\n"

static void test_moe_errors(void **state)
{
    (void)state;
    assert_non_null(strstr(check_error(MOE_BASE "arch: moe\ntopk: 2\nmoe_ffn: 128\n"),
                           "arch moe needs experts and moe_ffn"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: moe\nexperts: 4\ntopk: 5\nmoe_ffn: 128\n"),
                           "topk 5 must be between 1 and experts 4"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: moe-shared\nexperts: 4\ntopk: 2\nmoe_ffn: 128\n"),
                           "arch moe-shared needs shared_experts"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: llama\nexperts: 4\ntopk: 2\nmoe_ffn: 128\n"),
                           "arch llama is dense but experts is 4"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: moe\nexperts: 4\ntopk: 2\nmoe_ffn: 128\ncapacity_factor: -1\n"),
                           "moe.yaml: field 'capacity_factor' must be a number >= 0"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: moe\nexperts: 4\ntopk: 2\nmoe_ffn: 128\ndense_layers: 2\n"),
                           "dense_layers 2 must be below layers 2"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: moe\nexperts: x\ntopk: 2\nmoe_ffn: 128\n"),
                           "moe.yaml: field 'experts' must be a positive integer"));
    assert_non_null(strstr(check_error(MOE_BASE "arch: deepseek\nexperts: 4\ntopk: 2\nmoe_ffn: 128\nshared_experts: 1\n"
                                                 "q_lora: 64\nkv_lora: 32\nqk_nope: 16\nv_head: 16\n"),
                           "arch deepseek (multi-head latent attention) needs q_lora, kv_lora, qk_nope, qk_rope"));
    /* dense_layers on an arch whose block file has no dense_layer section */
    {
        etk_model m;
        etk_error err = {0};
        const char *y = MOE_BASE "arch: moe\nexperts: 4\ntopk: 2\nmoe_ffn: 128\ndense_layers: 1\n";
        assert_int_equal(etk_model_parse(y, strlen(y), "moe.yaml", &m, &err), 0);
        uint64_t p;
        assert_true(etk_model_params(&m, &p, &err) < 0);
        assert_non_null(strstr(err.msg, "dense_layers 1 but models/blocks/moe.yaml has no dense_layer section"));
    }
    /* a small MoE model from a file: 2 layers, h 256 (4 heads, MHA), 4 experts of f 128, top-2,
     * V 1000: 2 (4 h^2 + 2 h + 4 h + 4 * 3 h 128) + 2 V h + h parameters */
    etk_model m;
    etk_error err = {0};
    const char *ok = MOE_BASE "arch: moe\nexperts: 4\ntopk: 2\nmoe_ffn: 128\n";
    assert_int_equal(etk_model_parse(ok, strlen(ok), "moe.yaml", &m, &err), 0);
    uint64_t p, h = 256;
    assert_int_equal(etk_model_params(&m, &p, &err), 0);
    assert_int_equal(p, 2 * (4 * h * h + 2 * h + 4 * h + 4 * 3 * h * 128) + 2 * 1000 * h + h);
}


/* GPT-OSS 120B's config.json (../shared/data/models/gpt-oss-120b.json) */
static const char GPT_OSS_120B[] =
    "{\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, \"num_hidden_layers\": 36, "
    "\"num_attention_heads\": 64, \"num_key_value_heads\": 8, \"head_dim\": 64, "
    "\"intermediate_size\": 2880, \"num_local_experts\": 128, \"num_experts_per_tok\": 4, "
    "\"vocab_size\": 201088, \"max_position_embeddings\": 131072, \"sliding_window\": 128}";
/* GPT-OSS-120B (openai/gpt-oss-120b config.json, shared/data/models/gpt-oss-120b.json): l = 36,
 * h = 2880, 64 query heads and 8 KV heads of d = 64, 128 experts of f = 2880, top-4, V = 201088,
 * untied output.
 *   attention per layer = h (64 d + 2 x 8 d + 64 d) = 2880 x 9216 = 26,542,080
 *   norms 2h = 5,760;  router h E = 368,640;  experts E 3 h f = 3,185,049,600
 *   layer = 3,211,966,080;  total = 36 layers + 2 V h + h = 116,789,048,640
 * Published 116.83B: the difference, 40.1M, is the biases (q, k, v, o per layer 288,000 in all;
 * experts' 128 x 3 x 2880 per layer, 39.8M) and the 64 attention sinks per layer, which etkit
 * leaves out (0.03%). */
static void test_gpt_oss_params(void **state)
{
    (void)state;
    const char *cfg = GPT_OSS_120B;
    etk_model m;
    etk_error err = {0};
    if (etk_model_parse(cfg, strlen(cfg), "gpt-oss-120b.json", &m, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(m.arch, "moe");
    assert_int_equal(m.experts, 128);
    assert_int_equal(m.topk, 4);
    assert_int_equal(m.moe_ffn, 2880);
    assert_int_equal(m.head_dim, 64);
    uint64_t h = 2880, E = 128, f = 2880, V = 201088, d = 64;
    uint64_t layer = h * (64 * d + 2 * 8 * d + 64 * d) + 2 * h + h * E + E * 3 * h * f;
    assert_int_equal(layer, 3211966080ull);
    uint64_t got;
    assert_int_equal(etk_model_params(&m, &got, &err), 0);
    assert_int_equal(got, 36 * layer + 2 * V * h + h);
    assert_int_equal(got, 116789048640ull);
    assert_non_null(strstr(m.source, "attention sinks and biases not modelled"));
    /* HF's default layer_types for gpt_oss: layer i slides when (i + 1) % 2, the even layers */
    assert_int_equal(m.window, 128);
    assert_true(etk_model_layer_sliding(&m, 0) && !etk_model_layer_sliding(&m, 1) && etk_model_layer_sliding(&m, 34) &&
                !etk_model_layer_sliding(&m, 35));
    assert_int_equal(etk_model_sliding_layers(&m, 0, 36), 18);
    assert_int_equal(etk_model_sliding_layers(&m, 9, 9), 4); /* layers 9-17: 10, 12, 14, 16 */
    /* a config without the experts names the key */
    const char *bad = "{\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, \"num_hidden_layers\": 36, "
                      "\"num_attention_heads\": 64, \"intermediate_size\": 2880, \"vocab_size\": 201088, "
                      "\"max_position_embeddings\": 131072}";
    assert_true(etk_model_parse(bad, strlen(bad), "oss/config.json", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "oss/config.json: missing 'num_local_experts'"));
}

/* Sliding windows in closed form, by hand: s = 10, w = 4: query i sees min(i + 1, 4) keys,
 * 1 + 2 + 3 + 4 x 7 = 34 = 4 x 10 - 4 x 3 / 2. Tiles of 2: query tile i (rows 2i, 2i + 1) needs
 * key tiles floor(max(0, 2i - 3) / 2) .. i: 1, 2, 3, 3, 3 = 12. A window as long as the
 * sequence is causal: s (s + 1) / 2. */
static void test_window_closed_form(void **state)
{
    (void)state;
    assert_true(etk_window_pairs(10, 4) == 34);
    assert_true(etk_window_pairs(10, 10) == 55 && etk_window_pairs(10, 64) == 55);
    assert_true(etk_window_tiles(10, 4, 2) == 12);
    assert_true(etk_window_tiles(4096, 128, 128) == 63); /* 1 + 31 x 2 */
    assert_true(etk_window_tiles(4096, 4096, 128) == 32 * 33 / 2); /* the causal triangle of tiles */
    /* a trace's lengths near INT64_MAX: no overflow (ceilings without s + blk - 1) */
    double big = etk_window_tiles(INT64_MAX, INT64_MAX - 1, 128);
    assert_true(big > 0 && big < 1e300);
    assert_true(etk_window_tiles(INT64_MAX, 128, 128) == 1 + ((double)(INT64_MAX / 128 + 1) - 1) * 2);
    /* KV cache: GPT-OSS-120B (8 KV heads of 64, BF16): 2 x 8 x 64 x 2 = 2,048 B per token per
     * layer; at 4,096 tokens the 18 full layers hold 4,096 and the 18 sliding ones 128 */
    const char *cfg = GPT_OSS_120B;
    etk_model m;
    etk_error err = {0};
    if (etk_model_parse(cfg, strlen(cfg), "gpt-oss-120b.json", &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(etk_model_kv_bytes(&m, 2, 4096), 2048ull * (18 * 4096 + 18 * 128));
    assert_int_equal(etk_model_kv_bytes(&m, 2, 100), 2048ull * 36 * 100); /* shorter than the window */
    assert_int_equal(etk_model_kv_bytes(&m, 2, 4096), 155713536ull);
}

static int parse_cfg(const char *text, etk_model *m, etk_error *err)
{
    memset(err, 0, sizeof *err);
    return etk_model_parse(text, strlen(text), "cfg.json", m, err);
}

/* Which layers slide, per model_type (HF's rules), layer_types, and the preset keys. */
static void test_window_patterns(void **state)
{
    (void)state;
#define BASE "\"hidden_size\": 256, \"num_hidden_layers\": 6, \"num_attention_heads\": 4, \"intermediate_size\": 512, " \
             "\"vocab_size\": 1000, \"max_position_embeddings\": 4096"
    etk_model m;
    etk_error err;
    /* mistral: every layer when sliding_window is set; null: none */
    assert_int_equal(parse_cfg("{\"model_type\": \"mistral\", " BASE ", \"sliding_window\": 4096}", &m, &err), 0);
    assert_int_equal(m.window, 4096);
    assert_int_equal(etk_model_sliding_layers(&m, 0, 6), 6);
    assert_int_equal(parse_cfg("{\"model_type\": \"mistral\", " BASE ", \"sliding_window\": null}", &m, &err), 0);
    assert_int_equal(m.window, 0);
    assert_int_equal(etk_model_sliding_layers(&m, 0, 6), 0);
    /* qwen2: only with use_sliding_window, on layers >= max_window_layers */
    assert_int_equal(parse_cfg("{\"model_type\": \"qwen2\", " BASE ", \"sliding_window\": 1024, "
                               "\"use_sliding_window\": false, \"max_window_layers\": 2}", &m, &err), 0);
    assert_int_equal(m.window, 0);
    assert_int_equal(parse_cfg("{\"model_type\": \"qwen2\", " BASE ", \"sliding_window\": 1024, "
                               "\"use_sliding_window\": true, \"max_window_layers\": 2}", &m, &err), 0);
    assert_int_equal(m.window, 1024);
    assert_true(!etk_model_layer_sliding(&m, 1) && etk_model_layer_sliding(&m, 2) && etk_model_layer_sliding(&m, 5));
    assert_int_equal(etk_model_sliding_layers(&m, 0, 6), 4);
    /* layer_types wins over the model_type's rule: period 3 (S F F) */
    assert_int_equal(parse_cfg("{\"model_type\": \"mistral\", " BASE ", \"sliding_window\": 512, \"layer_types\": "
                               "[\"sliding_attention\", \"full_attention\", \"full_attention\", \"sliding_attention\", "
                               "\"full_attention\", \"full_attention\"]}", &m, &err), 0);
    assert_int_equal(m.window_period, 3);
    assert_int_equal(etk_model_sliding_layers(&m, 0, 6), 2);
    assert_true(etk_model_layer_sliding(&m, 3) && !etk_model_layer_sliding(&m, 4));
    /* refused: an unknown pattern, a bad layer_types */
    assert_int_not_equal(parse_cfg("{\"model_type\": \"llama\", " BASE ", \"sliding_window\": 512}", &m, &err), 0);
    assert_non_null(strstr(err.msg, "cfg.json: 'sliding_window' 512 with model_type llama and no 'layer_types': which "
                                    "layers slide is unknown"));
    assert_int_not_equal(parse_cfg("{\"model_type\": \"mistral\", " BASE ", \"sliding_window\": 512, \"layer_types\": "
                                   "[\"sliding_attention\"]}", &m, &err), 0);
    assert_non_null(strstr(err.msg, "'layer_types' must be a list of num_hidden_layers (6) strings"));
    assert_int_not_equal(parse_cfg("{\"model_type\": \"mistral\", " BASE ", \"sliding_window\": 512, \"layer_types\": "
                                   "[\"chunked_attention\", \"full_attention\", \"full_attention\", \"full_attention\", "
                                   "\"full_attention\", \"full_attention\"]}", &m, &err), 0);
    assert_non_null(strstr(err.msg, "layer_types[0]: expected \"sliding_attention\" or \"full_attention\", got chunked_attention"));
    /* the preset format: window, window_layers (S/F repeated), window_from */
    const char *y = "name: t\narch: llama\nlayers: 8\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 2048\n"
                    "window: 256\nwindow_layers: FFFS\nwindow_from: 1\n";
    memset(&err, 0, sizeof err);
    assert_int_equal(etk_model_parse(y, strlen(y), "t.yaml", &m, &err), 0);
    assert_int_equal(m.window, 256);
    /* layers 1.. follow F F F S: layer 4 slides, then 8 (beyond), so one of 8 */
    assert_true(etk_model_layer_sliding(&m, 4) && !etk_model_layer_sliding(&m, 0) && !etk_model_layer_sliding(&m, 3));
    assert_int_equal(etk_model_sliding_layers(&m, 0, 8), 1);
    const char *yb = "name: t\narch: llama\nlayers: 8\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 2048\n"
                     "window_layers: SF\n";
    memset(&err, 0, sizeof err);
    assert_int_not_equal(etk_model_parse(yb, strlen(yb), "t.yaml", &m, &err), 0);
    assert_non_null(strstr(err.msg, "t.yaml: field 'window_layers' must be a string of 'S' (sliding) and 'F' (full) layers"));
    const char *yx = "name: t\narch: llama\nlayers: 8\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 2048\n"
                     "window: 256\nwindow_layers: SX\n";
    memset(&err, 0, sizeof err);
    assert_int_not_equal(etk_model_parse(yx, strlen(yx), "t.yaml", &m, &err), 0);
    assert_non_null(strstr(err.msg, "t.yaml: window_layers: expected layers of 'S' (sliding) and 'F' (full attention), got 'X' at layer 1"));
    const char *ye = "name: t\narch: llama\nlayers: 8\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 2048\n"
                     "window: 256\nwindow_layers: \"\"\n";
    memset(&err, 0, sizeof err);
    assert_int_not_equal(etk_model_parse(ye, strlen(ye), "t.yaml", &m, &err), 0);
    assert_non_null(strstr(err.msg, "t.yaml: window_layers: expected 1 to 65536 layers, got 0"));
#undef BASE
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mixtral_params), cmocka_unit_test(test_moe_layer_flops),
                                       cmocka_unit_test(test_moe_errors), cmocka_unit_test(test_deepseek_v3_params), cmocka_unit_test(test_gpt_oss_params), cmocka_unit_test(test_window_closed_form), cmocka_unit_test(test_window_patterns),
                                       cmocka_unit_test(test_deepseek_layer_flops), cmocka_unit_test(test_fp8_lowering),
                                       cmocka_unit_test(test_fp8_roofline), cmocka_unit_test(test_kv_cache)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
