/* test_model.c — model files and presets: every preset parses and checks; malformed model
 * files are refused with a message naming the file, the field and what was expected. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "etkit/model.h"

static const char *parse_error(const char *text)
{
    static etk_error err;
    etk_model m;
    memset(&err, 0, sizeof err);
    int rc = etk_model_parse(text, strlen(text), "my.yaml", &m, &err);
    if (rc == 0)
        fail_msg("accepted: %s", text);
    assert_true(rc < 0);
    return err.msg;
}

#define GOOD "name: x\narch: llama\nlayers: 2\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 64\n"

static void test_model_file(void **state)
{
    (void)state;
    etk_model m;
    etk_error err = {0};
    assert_int_equal(etk_model_parse(GOOD, strlen(GOOD), "my.yaml", &m, &err), 0);
    assert_string_equal(m.name, "x");
    assert_int_equal(m.kv_heads, 4); /* default: multi-head */
    /* llama, h 256, f 512, V 1000, 2 layers: 2 (256*768 + 256^2 + 3*256*512 + 512) + 2*1000*256 + 256 */
    uint64_t p;
    assert_int_equal(etk_model_params(&m, &p, &err), 0);
    assert_int_equal(p, 2ull * (256 * 768 + 256 * 256 + 3 * 256 * 512 + 512) + 2 * 1000 * 256 + 256);

    const char *e;
    e = parse_error("name: x\narch: llama\nlayers: 2\nhidden: -5\nheads: 4\nffn: 8\nvocab: 10\nseq: 8\n");
    assert_non_null(strstr(e, "my.yaml: field 'hidden' must be a positive integer"));
    e = parse_error("name: x\narch: llama\nlayers: 2\nheads: 4\nffn: 8\nvocab: 10\nseq: 8\n");
    assert_non_null(strstr(e, "my.yaml: missing field 'hidden'"));
    e = parse_error("name: x\nlayers: 2\n");
    assert_non_null(strstr(e, "missing field 'arch'"));
    e = parse_error("name: x\narch: bert\nlayers: 2\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 64\n");
    assert_non_null(strstr(e, "unknown arch 'bert'"));
    e = parse_error("name: x\narch: llama\nlayers: 2\nhidden: 256\nheads: 4\nkv_heads: 3\nffn: 512\nvocab: 1000\nseq: 64\n");
    assert_non_null(strstr(e, "--kv-heads 3 does not divide --heads 4"));
    e = parse_error("name: x\narch: gpt\nlayers: 2\nhidden: 256\nheads: 4\nkv_heads: 2\nffn: 512\nvocab: 1000\nseq: 64\n");
    assert_non_null(strstr(e, "--kv-heads must equal --heads"));
    e = parse_error("name: [x\narch: llama\n");
    assert_non_null(strstr(e, "my.yaml:"));
    e = parse_error("- just\n- a list\n");
    assert_non_null(strstr(e, "expected a YAML mapping"));
    e = parse_error("name: &a x\narch: *a\n");
    assert_non_null(strstr(e, "aliases are not supported"));
    /* a file that does not exist names it */
    assert_true(etk_model_load("/nonexistent/model.yaml", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "/nonexistent/model.yaml"));
    /* unknown preset lists the built-in ones */
    assert_int_equal(etk_model_preset("gpt-9", &m, &err), ETK_ENOTFOUND);
    assert_non_null(strstr(err.msg, "unknown model 'gpt-9'"));
    assert_non_null(strstr(err.msg, "megatron-530b"));
}

/* Hugging Face config.json as published for meta-llama/Llama-2-7b-hf and gpt2 */
static void test_hf_config(void **state)
{
    (void)state;
    const char *llama = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, \"intermediate_size\": 11008,"
                        " \"max_position_embeddings\": 4096, \"model_type\": \"llama\", \"num_attention_heads\": 32,"
                        " \"num_hidden_layers\": 32, \"num_key_value_heads\": 32, \"rms_norm_eps\": 1e-05,"
                        " \"torch_dtype\": \"float16\", \"vocab_size\": 32000}";
    etk_model m;
    etk_error err = {0};
    if (etk_model_parse(llama, strlen(llama), "Llama-2-7b-hf/config.json", &m, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(m.arch, "llama");
    uint64_t p;
    assert_int_equal(etk_model_params(&m, &p, &err), 0);
    assert_int_equal(p, 6738415616ull); /* the published Llama 2 7B count */
    /* GPT-2 small: 124,439,808 parameters with learned positions and a tied output layer */
    const char *gpt2 = "{\"model_type\": \"gpt2\", \"n_embd\": 768, \"n_head\": 12, \"n_inner\": null,"
                       " \"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257}";
    if (etk_model_parse(gpt2, strlen(gpt2), "gpt2/config.json", &m, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(m.arch, "gpt");
    assert_int_equal(m.ffn, 3072);
    assert_int_equal(etk_model_params(&m, &p, &err), 0);
    assert_int_equal(p, 124439808ull);
    /* unsupported or broken configs name the file and the key */
    const char *t5 = "{\"model_type\": \"t5\", \"hidden_size\": 512}";
    assert_true(etk_model_parse(t5, strlen(t5), "t5/config.json", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t5/config.json: model_type 't5' is not supported"));
    const char *bad = "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_hidden_layers\": \"32\"}";
    assert_true(etk_model_parse(bad, strlen(bad), "x/config.json", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "x/config.json: bad 'num_hidden_layers'"));
}

static void test_presets(void **state)
{
    (void)state;
    const char *names[64];
    size_t n = etk_model_preset_names(names, 64);
    assert_true(n >= 11); /* 10 dense presets + mixtral-8x7b (+ the DeepSeek-V3 shape) */
    for (size_t i = 0; i < n; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%.*s", (int)(strlen(names[i]) - 5), names[i]);
        etk_model m;
        etk_error err = {0};
        if (etk_model_preset(nm, &m, &err))
            fail_msg("%s: %s", nm, err.msg);
        assert_string_equal(m.name, nm);
        etk_graph *g;
        if (etk_graph_load(&m, 2, &g, &err))
            fail_msg("%s: %s", nm, err.msg);
        etk_graph_free(g);
    }
    /* a model whose dims make a block expression inexact is refused naming the expression */
    etk_model m;
    assert_int_equal(etk_model_preset("llama2-7b", &m, NULL), 0);
    m.kv_heads = 5; /* heads / kv_heads not an integer */
    etk_graph *g;
    etk_error err = {0};
    assert_true(etk_graph_load(&m, 1, &g, &err) < 0);
    assert_non_null(strstr(err.msg, "heads / kv_heads"));
    assert_non_null(strstr(err.msg, "models/blocks/llama.yaml"));
}

/* The block graphs are parsed once and copied for each load (src/model/graph.c, s35); tying the
 * embedding edits the copy, never the cached tree: the parameter count alternates between the
 * untied and the tied figure, which differ by the output layer's vocab x hidden weight. */
static void test_graph_cache(void **state)
{
    (void)state;
    etk_model m;
    etk_error err = {0};
    assert_int_equal(etk_model_preset("llama3-8b", &m, &err), 0);
    uint64_t untied[2], tied[2];
    for (int k = 0; k < 2; k++) {
        m.tie_embeddings = false;
        if (etk_model_params(&m, &untied[k], &err))
            fail_msg("untied: %s", err.msg);
        m.tie_embeddings = true;
        if (etk_model_params(&m, &tied[k], &err))
            fail_msg("tied: %s", err.msg);
    }
    assert_true(untied[0] == untied[1] && tied[0] == tied[1]);
    assert_true(untied[0] > tied[0]);
    assert_int_equal(untied[0] - tied[0], (uint64_t)m.vocab * (uint64_t)m.hidden);
    /* Llama 3 8B: 8,030,261,248 parameters untied (Meta's model card: 8.03B) */
    assert_int_equal(untied[0], 8030261248ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_file), cmocka_unit_test(test_hf_config),
                                       cmocka_unit_test(test_presets), cmocka_unit_test(test_graph_cache)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
