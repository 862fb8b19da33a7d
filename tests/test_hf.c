/* test_hf.c — Hugging Face config.json for every supported family (tests/hf/NAME.json, written from
 * the published configs): each loads into the right block graph and gives the parameter count
 * of the closed form written next to it, compared with the published (rounded) figure; unknown
 * keys are ignored; a missing required key is an error naming it. Runs from the repo root. */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "etkit/model.h"

static void load(const char *file, etk_model *m)
{
    char path[256];
    etk_error err = {0};
    snprintf(path, sizeof path, "tests/hf/%s", file);
    if (etk_model_load(path, m, &err))
        fail_msg("%s: %s", path, err.msg);
}

static void expect_params(const char *file, const char *arch, uint64_t total, uint64_t active)
{
    etk_model m;
    load(file, &m);
    if (strcmp(m.arch, arch))
        fail_msg("%s: arch %s, expected %s", file, m.arch, arch);
    uint64_t p, a;
    etk_error err = {0};
    if (etk_model_params(&m, &p, &err) || etk_model_active_params(&m, &a, &err))
        fail_msg("%s: %s", file, err.msg);
    if (p != total || a != active)
        fail_msg("%s: %" PRIu64 " parameters (%" PRIu64 " active), closed form %" PRIu64 " (%" PRIu64 ")", file,
                 p, a, total, active);
}

/* Dense families. Llama-style layer: h(h + 2 kvd) + h^2 (attention) + 3 h f + 2 h; model:
 * l * layer + 2 V h + h (untied output). */
static void test_hf_dense(void **state)
{
    (void)state;
    uint64_t h, f, kvd, V, l, want;
    /* Llama 3 8B: published 8,030,261,248 */
    h = 4096, f = 14336, kvd = 1024, V = 128256, l = 32;
    want = l * (h * (h + 2 * kvd) + h * h + 3 * h * f + 2 * h) + 2 * V * h + h;
    assert_int_equal(want, 8030261248ull);
    expect_params("llama3-8b.json", "llama", want, want);
    /* Mistral 7B v0.3 (vocab 32768; head_dim 128 = 4096/32 is accepted): 7,248,023,552, published
     * as 7.25B */
    V = 32768;
    want = l * (h * (h + 2 * kvd) + h * h + 3 * h * f + 2 * h) + 2 * V * h + h;
    assert_int_equal(want, 7248023552ull);
    expect_params("mistral-7b.json", "llama", want, want);
    /* Qwen2-7B: h 3584, 28 heads of 128, 4 KV heads, f 18944, V 152064, QKV biases
     * (h + 2 kvd per layer): 7,615,616,512, published as 7.62B */
    h = 3584, f = 18944, kvd = 512, V = 152064, l = 28;
    want = l * (h * (h + 2 * kvd) + (h + 2 * kvd) + h * h + 3 * h * f + 2 * h) + 2 * V * h + h;
    assert_int_equal(want, 7615616512ull);
    expect_params("qwen2-7b.json", "qwen2", want, want);
    /* GPT-NeoX-20B: l (12 h^2 + 13 h) + 2 V h (untied embed_in/embed_out) + 2 h (final
     * LayerNorm) with h 6144, l 44, V 50432: 20,554,567,680, as published */
    h = 6144, V = 50432, l = 44;
    want = l * (12 * h * h + 13 * h) + 2 * V * h + 2 * h;
    assert_int_equal(want, 20554567680ull);
    expect_params("gpt-neox-20b.json", "neox", want, want);
    /* GPT-2 (small): 124,439,808 as published (tied output, learned positions) */
    expect_params("gpt2.json", "gpt", 124439808ull, 124439808ull);
}

/* MoE families. */
static void test_hf_moe(void **state)
{
    (void)state;
    /* Mixtral 8x7B: same closed form as tests/test_model_moe.c, 46,702,792,704 / 12,879,925,248 */
    expect_params("mixtral-8x7b.json", "moe", 46702792704ull, 12879925248ull);
    etk_model m;
    load("mixtral-8x7b.json", &m);
    assert_int_equal(m.experts, 8);
    assert_int_equal(m.topk, 2);
    assert_int_equal(m.moe_ffn, 14336);
    /* Qwen1.5-MoE-A2.7B (qwen2_moe): h 2048, 16 heads (MHA), QKV biases, 60 experts of 1408,
     * top-4, a shared expert of 5632 = 4 x 1408 with a sigmoid gate (h weights), V 151936.
     *   layer = 4h^2 + 3h + 2h + 60 h (router) + 60 * 3h 1408 + 3h 5632 + h
     * total 14,315,784,192 (published 14.3B), active 2,689,173,504 (published 2.7B) */
    uint64_t h = 2048, V = 151936, e = 3 * h * 1408;
    uint64_t base = 4 * h * h + 3 * h + 2 * h + 60 * h + 3 * h * 5632 + h;
    uint64_t total = 24 * (base + 60 * e) + 2 * V * h + h, active = 24 * (base + 4 * e) + 2 * V * h + h;
    assert_int_equal(total, 14315784192ull);
    assert_int_equal(active, 2689173504ull);
    expect_params("qwen1.5-moe-a2.7b.json", "moe-shared", total, active);
    load("qwen1.5-moe-a2.7b.json", &m);
    assert_int_equal(m.shared_experts, 4);
    /* Qwen3-30B-A3B (qwen3_moe): h 2048, 32 heads of head_dim 128 (q width 4096 != h), 4 KV
     * heads, 128 experts of 768, top-8, V 151936.
     *   layer = h 4096 (wq) + 2 h 512 (wk, wv) + 4096 h (wo) + 2h + 128 h + 128 * 3 h 768
     * total 30,532,110,336 (published 30.5B; HF's 30,532,122,624 adds the per-head q/k
     * RMSNorms, 2 x 128 per layer, not modelled), active 3,353,020,416 (published 3.3B) */
    e = 3 * h * 768;
    base = h * 4096 + 2 * h * 512 + 4096 * h + 2 * h + 128 * h;
    total = 48 * (base + 128 * e) + 2 * V * h + h, active = 48 * (base + 8 * e) + 2 * V * h + h;
    assert_int_equal(total, 30532110336ull);
    assert_int_equal(total + 48 * 256, 30532122624ull);
    assert_int_equal(active, 3353020416ull);
    expect_params("qwen3-30b-a3b.json", "moe", total, active);
    /* DeepSeek-V2: h 5120, 128 heads, MLA (q_lora 1536, kv_lora 512, 128 + 64 qk, 128 v), 60
     * layers of which the first is dense (12288), 160 experts of 1536, 2 shared, top-6, V 102400.
     *   MLA = h a + a + a n (p+j) + h (c+j) + c + c n (p+w) + n w h = 149,227,520
     * total 235,741,434,880 (published 236B), active 21,375,800,320 (published 21B) */
    h = 5120, V = 102400, e = 3 * h * 1536;
    uint64_t n = 128, a = 1536, c = 512, p = 128, j = 64, w = 128;
    uint64_t mla = h * a + a + a * n * (p + j) + h * (c + j) + c + c * n * (p + w) + n * w * h;
    assert_int_equal(mla, 149227520ull);
    uint64_t dense = mla + 2 * h + 3 * h * 12288, moe0 = mla + 2 * h + 160 * h;
    total = dense + 59 * (moe0 + (160 + 2) * e) + 2 * V * h + h;
    active = dense + 59 * (moe0 + (6 + 2) * e) + 2 * V * h + h;
    assert_int_equal(total, 235741434880ull);
    assert_int_equal(active, 21375800320ull);
    expect_params("deepseek-v2.json", "deepseek", total, active);
    /* DeepSeek-V3: as the preset (tests/test_model_moe.c) */
    expect_params("deepseek-v3.json", "deepseek", 671026404352ull, 37552282624ull);
    load("deepseek-v3.json", &m);
    assert_int_equal(m.dense_layers, 3);
    assert_int_equal(m.kv_heads, 128);
}

static const char *hf_error(const char *json)
{
    static etk_error err;
    etk_model m;
    memset(&err, 0, sizeof err);
    if (etk_model_parse(json, strlen(json), "cfg/config.json", &m, &err) == 0)
        fail_msg("accepted: %s", json);
    return err.msg;
}

#define LL "\"hidden_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, " \
           "\"intermediate_size\": 512, \"vocab_size\": 1000, \"max_position_embeddings\": 64"

static void test_hf_errors(void **state)
{
    (void)state;
    const char *e;
    e = hf_error("{\"model_type\": \"mixtral\", " LL ", \"num_experts_per_tok\": 2}");
    assert_non_null(strstr(e, "cfg/config.json: missing 'num_local_experts' (a positive integer, required for model_type mixtral)"));
    e = hf_error("{\"model_type\": \"qwen2_moe\", " LL ", \"num_experts\": 4, \"num_experts_per_tok\": 2}");
    assert_non_null(strstr(e, "missing 'moe_intermediate_size'"));
    e = hf_error("{\"model_type\": \"qwen2_moe\", " LL ", \"num_experts\": 4, \"num_experts_per_tok\": 2, "
                 "\"moe_intermediate_size\": 128, \"shared_expert_intermediate_size\": 200}");
    assert_non_null(strstr(e, "'shared_expert_intermediate_size' 200 is not a multiple of 'moe_intermediate_size' 128"));
    e = hf_error("{\"model_type\": \"deepseek_v2\", " LL ", \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, "
                 "\"moe_intermediate_size\": 64, \"n_shared_experts\": 1, \"q_lora_rank\": null}");
    assert_non_null(strstr(e, "cfg/config.json: 'q_lora_rank' is null"));
    e = hf_error("{\"model_type\": \"deepseek_v3\", " LL ", \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, "
                 "\"moe_intermediate_size\": 64, \"n_shared_experts\": 1, \"q_lora_rank\": 64, \"kv_lora_rank\": 32, "
                 "\"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8}");
    assert_non_null(strstr(e, "missing 'v_head_dim'"));
    e = hf_error("{\"model_type\": \"deepseek_v3\", " LL ", \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, "
                 "\"moe_intermediate_size\": 64, \"n_shared_experts\": 1, \"first_k_dense_replace\": -1}");
    assert_non_null(strstr(e, "bad 'first_k_dense_replace' (an integer >= 0)"));
    e = hf_error("{\"model_type\": \"mixtral\", " LL ", \"num_local_experts\": 2, \"num_experts_per_tok\": 3}");
    assert_non_null(strstr(e, "topk 3 must be between 1 and experts 2"));
    e = hf_error("{\"model_type\": \"gpt_neox\", \"hidden_size\": 256, \"num_hidden_layers\": 2, "
                 "\"num_attention_heads\": 4, \"vocab_size\": 1000, \"max_position_embeddings\": 64}");
    assert_non_null(strstr(e, "missing 'intermediate_size' (a positive integer, required for model_type gpt_neox)"));
    e = hf_error("{\"model_type\": \"bert\", " LL "}");
    assert_non_null(strstr(e, "model_type 'bert' is not supported"));
    /* unknown keys are ignored; head_dim different from hidden/heads is kept */
    etk_model m;
    etk_error err = {0};
    const char *ok = "{\"model_type\": \"qwen3_moe\", " LL ", \"head_dim\": 128, \"num_experts\": 4, "
                     "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64, \"some_future_key\": [1, 2]}";
    assert_int_equal(etk_model_parse(ok, strlen(ok), "cfg/config.json", &m, &err), 0);
    assert_int_equal(m.head_dim, 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hf_dense), cmocka_unit_test(test_hf_moe),
                                       cmocka_unit_test(test_hf_errors)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
