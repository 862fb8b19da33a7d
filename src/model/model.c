/* model.c — model presets and model files. A model (presets/models/<name>.yaml, a user file or
 * a Hugging Face config.json of the Llama, Mistral, Qwen2, Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3,
 * GPT-2, GPT-NeoX and GPT-OSS families) gives the dimensions, including mixture-of-experts, MLA
 * and sliding-window ones; its arch selects a block graph (presets/models/blocks/<arch>.yaml)
 * that graph.c loads with every size evaluated (expert capacity included). Parameter counts
 * (total and active per token) are sums over the graph's weights. gen/lower.c turns that graph
 * into per-rank work under a parallel plan. */
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/presets.h"
#include "model/graph.h"
#include "model/yamljson.h"
#include "util/check.h"

/* ---------- model files ---------- */

/* One table of the model dimensions: their model-file keys, whether a model file must give
 * them, and the largest value accepted whatever the source (a --hidden style flag, a model
 * file or a Hugging Face config.json; etk_model_check). Real models sit far below: Megatron-1T
 * has hidden 25600, DeepSeek-V3 256 experts. Adding a key is one line. */
static const struct {
    const char *key;
    size_t off;
    bool required;
    int64_t max;
} dim_table[] = {
    {"layers", offsetof(etk_model, layers), true, 1 << 16},
    {"hidden", offsetof(etk_model, hidden), true, 1 << 20},
    {"heads", offsetof(etk_model, heads), true, 1 << 16},
    {"kv_heads", offsetof(etk_model, kv_heads), false, 1 << 16},
    {"ffn", offsetof(etk_model, ffn), true, 1 << 22},
    {"vocab", offsetof(etk_model, vocab), true, 1 << 24},
    {"seq", offsetof(etk_model, seq), true, 1 << 24},
    {"head_dim", offsetof(etk_model, head_dim), false, 1 << 16},
    {"experts", offsetof(etk_model, experts), false, 1 << 14},
    {"topk", offsetof(etk_model, topk), false, 1 << 14},
    {"shared_experts", offsetof(etk_model, shared_experts), false, 1 << 14},
    {"moe_ffn", offsetof(etk_model, moe_ffn), false, 1 << 22},
    {"dense_layers", offsetof(etk_model, dense_layers), false, 1 << 16},
    {"q_lora", offsetof(etk_model, q_lora), false, 1 << 20},
    {"kv_lora", offsetof(etk_model, kv_lora), false, 1 << 20},
    {"qk_nope", offsetof(etk_model, qk_nope), false, 1 << 16},
    {"qk_rope", offsetof(etk_model, qk_rope), false, 1 << 16},
    {"v_head", offsetof(etk_model, v_head), false, 1 << 16},
    {"window", offsetof(etk_model, window), false, 1 << 24},
    {"window_from", offsetof(etk_model, window_from), false, 1 << 16},
};
#define N_DIMS (sizeof dim_table / sizeof dim_table[0])
/* the other keys of a model file */
static const char *const text_keys[] = {"name", "arch", "source", "capacity_factor", "window_layers"};
#define N_TEXT_KEYS (sizeof text_keys / sizeof text_keys[0])

static int64_t *dim_ptr(etk_model *m, size_t i) { return (int64_t *)((char *)m + dim_table[i].off); }

static int get_int(json_t *root, const char *key, const char *fname, int64_t *out, bool required,
                   etk_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        if (required)
            return etk_err(err, ETK_EFORMAT, "%s: missing field '%s' (a positive integer)", fname, key);
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return etk_err(err, ETK_EFORMAT, "%s: field '%s' must be a positive integer", fname, key);
    *out = json_integer_value(v);
    return 0;
}

/* One integer key of a Hugging Face config: absent or null leaves *dst unchanged (an error when
 * required); otherwise it must be an integer >= min. */
static int hf_int(json_t *root, const char *key, const char *fname, const char *type, bool required, int64_t min,
                  int64_t *dst, etk_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (required)
            return etk_err(err, ETK_EFORMAT, "%s: missing '%s' (a positive integer, required for model_type %s)",
                           fname, key, type);
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return etk_err(err, ETK_EFORMAT, "%s: bad '%s' (%s)", fname, key,
                       min > 0 ? "a positive integer" : "an integer >= 0");
    *dst = json_integer_value(v);
    return 0;
}

/* The training sequence of a Hugging Face config: max_position_embeddings is the longest
 * context the model supports (131,072 for Llama 3.1 and Qwen2.5), not what it trains at: seq is
 * HF_DEFAULT_SEQ (Llama 3's pre-training length) or the model's maximum when shorter; --seq sets
 * it. tie_word_embeddings (default false, as in the Llama/Qwen configs) ties the output layer to
 * the token embedding. */
#define HF_DEFAULT_SEQ 4096
static void hf_seq_tie(json_t *root, etk_model *out)
{
    out->seq = out->max_positions < HF_DEFAULT_SEQ ? out->max_positions : HF_DEFAULT_SEQ;
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    /* GPT-2 ties its output layer (the gpt block does already) */
    out->tie_embeddings = json_is_true(tie);
}

/* A layer pattern of sliding ('S') and full ('F') layers repeated from layer window_from on
 * ("SF": even layers slide, as GPT-OSS): its shortest period (at most 64) into out. A pattern
 * without an 'F' is every layer (period 0). */
static int window_pattern(const char *pat, size_t n, const char *fname, const char *what, etk_model *out,
                          etk_error *err)
{
    if (!n || n > (1 << 16))
        return etk_err(err, ETK_EFORMAT, "%s: %s: expected 1 to 65536 layers, got %zu", fname, what, n);
    bool any_full = false;
    for (size_t i = 0; i < n; i++) {
        if (pat[i] != 'S' && pat[i] != 'F')
            return etk_err(err, ETK_EFORMAT, "%s: %s: expected layers of 'S' (sliding) and 'F' (full attention), "
                           "got '%c' at layer %zu", fname, what, pat[i], i);
        any_full |= pat[i] == 'F';
    }
    out->window_period = 0;
    out->window_mask = 0;
    if (!any_full)
        return 0;
    for (size_t p = 1; p <= 64 && p <= n; p++) {
        bool ok = true;
        for (size_t i = p; i < n && ok; i++)
            ok = pat[i] == pat[i % p];
        if (!ok)
            continue;
        out->window_period = (uint32_t)p;
        for (size_t i = 0; i < p; i++)
            if (pat[i] == 'S')
                out->window_mask |= (uint64_t)1 << i;
        return 0;
    }
    return etk_err(err, ETK_EUNSUPPORTED, "%s: %s repeats with no period of at most 64 layers (not modelled)",
                   fname, what);
}

/* Sliding-window attention of a Hugging Face config: `sliding_window` (null or absent: none) on
 * the layers `layer_types` marks "sliding_attention" when it is given; otherwise by model_type:
 * gpt_oss alternates (HF's default layer_types: layer i slides when i is even), mistral and
 * mixtral slide on every layer, qwen2 / qwen2_moe / qwen3_moe only with use_sliding_window true
 * and then on layers i >= max_window_layers. Any other model_type with a window and no
 * layer_types is refused (which layers slide is unknown). */
static int hf_window(json_t *root, const char *fname, const char *type, etk_model *out, etk_error *err)
{
    int rc;
    int64_t w = 0;
    if ((rc = hf_int(root, "sliding_window", fname, type, false, 1, &w, err)))
        return rc;
    bool qwen = !strcmp(type, "qwen2") || !strcmp(type, "qwen2_moe") || !strcmp(type, "qwen3_moe");
    if (qwen) {
        if (!json_is_true(json_object_get(root, "use_sliding_window")))
            return 0; /* HF Qwen2/3: the window applies only with use_sliding_window */
        if (!w)
            return etk_err(err, ETK_EFORMAT, "%s: use_sliding_window is true but 'sliding_window' is missing", fname);
        if ((rc = hf_int(root, "max_window_layers", fname, type, true, 0, &out->window_from, err)))
            return rc;
    }
    json_t *lt = json_object_get(root, "layer_types");
    if (lt && !json_is_null(lt)) {
        if (!json_is_array(lt) || (int64_t)json_array_size(lt) != out->layers)
            return etk_err(err, ETK_EFORMAT, "%s: 'layer_types' must be a list of num_hidden_layers (%lld) strings",
                           fname, (long long)out->layers);
        size_t n = json_array_size(lt);
        char *pat = malloc(n + 1);
        if (!pat)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            const char *t = json_string_value(json_array_get(lt, i));
            if (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention"))) {
                free(pat);
                return etk_err(err, ETK_EUNSUPPORTED, "%s: layer_types[%zu]: expected \"sliding_attention\" or "
                               "\"full_attention\"%s%s", fname, i, t ? ", got " : "", t ? t : "");
            }
            pat[i] = t[0] == 's' ? 'S' : 'F';
        }
        pat[n] = 0;
        bool any = strchr(pat, 'S') != NULL;
        if (any && !w) {
            free(pat);
            return etk_err(err, ETK_EFORMAT, "%s: layer_types has sliding layers but 'sliding_window' is null", fname);
        }
        out->window_from = 0;
        rc = any ? window_pattern(pat, n, fname, "layer_types", out, err) : 0;
        free(pat);
        if (!rc && any)
            out->window = w;
        return rc;
    }
    if (!w)
        return 0;
    if (!strcmp(type, "gpt_oss")) {
        out->window_period = 2; /* HF GptOssConfig: layer i slides when (i + 1) % 2 */
        out->window_mask = 1;
    } else if (!strcmp(type, "mistral") || !strcmp(type, "mixtral") || qwen) {
        out->window_period = 0;
    } else {
        return etk_err(err, ETK_EUNSUPPORTED, "%s: 'sliding_window' %lld with model_type %s and no 'layer_types': "
                       "which layers slide is unknown (give layer_types)", fname, (long long)w, type);
    }
    out->window = w;
    return 0;
}

/* A Hugging Face config.json (JSON is YAML, so it arrives through the same parser), by
 * model_type: llama, mistral (arch llama), qwen2 (qwen2: QKV biases), mixtral, qwen3_moe, gpt_oss (moe),
 * qwen2_moe (moe-shared), deepseek_v2, deepseek_v3 (deepseek: MLA), gpt_neox (neox); GPT-2 keys
 * (n_embd, n_layer, n_head, n_inner, vocab_size, n_positions) give arch gpt. Unknown keys are
 * ignored; a missing required key is an error naming it. */
static int parse_hf(json_t *root, const char *fname, etk_model *out, etk_error *err)
{
    const char *type = json_string_value(json_object_get(root, "model_type"));
    bool gpt2 = json_object_get(root, "n_embd") != NULL;
    const char *slash = strrchr(fname, '/');
    snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : fname);
    snprintf(out->source, sizeof out->source, "Hugging Face config %s", fname);
    int rc;
    if (gpt2) {
        const char *t = type ? type : "gpt2";
        snprintf(out->arch, sizeof out->arch, "gpt");
        if ((rc = hf_int(root, "n_layer", fname, t, true, 1, &out->layers, err)) ||
            (rc = hf_int(root, "n_embd", fname, t, true, 1, &out->hidden, err)) ||
            (rc = hf_int(root, "n_head", fname, t, true, 1, &out->heads, err)) ||
            (rc = hf_int(root, "n_inner", fname, t, false, 1, &out->ffn, err)) ||
            (rc = hf_int(root, "vocab_size", fname, t, true, 1, &out->vocab, err)) ||
            (rc = hf_int(root, "n_positions", fname, t, true, 1, &out->max_positions, err)))
            return rc;
        hf_seq_tie(root, out);
        out->kv_heads = out->heads;
        if (!out->ffn)
            out->ffn = 4 * out->hidden; /* GPT-2: n_inner null means 4h */
        return etk_model_check(out, err);
    }
    static const struct {
        const char *type, *arch;
    } types[] = {{"llama", "llama"},    {"mistral", "llama"},      {"qwen2", "qwen2"},
                 {"mixtral", "moe"},    {"qwen3_moe", "moe"},      {"qwen2_moe", "moe-shared"},
                 {"deepseek_v2", "deepseek"}, {"deepseek_v3", "deepseek"}, {"gpt_neox", "neox"},
                 {"gpt_oss", "moe"}};
    const char *arch = type ? NULL : "llama";
    for (size_t i = 0; type && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i].type))
            arch = types[i].arch;
    if (!arch)
        return etk_err(err, ETK_EUNSUPPORTED,
                       "%s: model_type '%s' is not supported (llama, mistral, qwen2, mixtral, qwen2_moe, qwen3_moe, "
                       "deepseek_v2, deepseek_v3, gpt_neox, gpt_oss, or GPT-2 keys)", fname, type);
    if (!type)
        type = "llama";
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    bool ds = !strcmp(arch, "deepseek");
    if ((rc = hf_int(root, "num_hidden_layers", fname, type, true, 1, &out->layers, err)) ||
        (rc = hf_int(root, "hidden_size", fname, type, true, 1, &out->hidden, err)) ||
        (rc = hf_int(root, "num_attention_heads", fname, type, true, 1, &out->heads, err)) ||
        (rc = hf_int(root, "num_key_value_heads", fname, type, false, 1, &out->kv_heads, err)) ||
        (rc = hf_int(root, "intermediate_size", fname, type, true, 1, &out->ffn, err)) ||
        (rc = hf_int(root, "vocab_size", fname, type, true, 1, &out->vocab, err)) ||
        (rc = hf_int(root, "max_position_embeddings", fname, type, true, 1, &out->max_positions, err)) ||
        (rc = hf_int(root, "head_dim", fname, type, false, 1, &out->head_dim, err)))
        return rc;
    hf_seq_tie(root, out);
    if (!out->kv_heads || ds)
        out->kv_heads = out->heads; /* MLA: every head has its own keys and values */
    if (out->head_dim && out->head_dim * out->heads == out->hidden)
        out->head_dim = 0;
    if (!strcmp(type, "gpt_oss")) {
        /* GPT-OSS: experts of intermediate_size, top-k; its alternating 128-token sliding-window
         * layers (hf_window); its attention sinks (one logit per head added to the softmax
         * denominator) and its biases are not modelled (negligible: docs/models.md) */
        if ((rc = hf_int(root, "num_local_experts", fname, type, true, 1, &out->experts, err)) ||
            (rc = hf_int(root, "num_experts_per_tok", fname, type, true, 1, &out->topk, err)))
            return rc;
        out->moe_ffn = out->ffn;
        snprintf(out->source + strlen(out->source), sizeof out->source - strlen(out->source),
                 " (gpt_oss: attention sinks and biases not modelled)");
    } else if (!strcmp(type, "mixtral")) {
        if ((rc = hf_int(root, "num_local_experts", fname, type, true, 1, &out->experts, err)) ||
            (rc = hf_int(root, "num_experts_per_tok", fname, type, true, 1, &out->topk, err)))
            return rc;
        out->moe_ffn = out->ffn;
    } else if (!strcmp(type, "qwen2_moe") || !strcmp(type, "qwen3_moe")) {
        if ((rc = hf_int(root, "num_experts", fname, type, true, 1, &out->experts, err)) ||
            (rc = hf_int(root, "num_experts_per_tok", fname, type, true, 1, &out->topk, err)) ||
            (rc = hf_int(root, "moe_intermediate_size", fname, type, true, 1, &out->moe_ffn, err)))
            return rc;
        if (!strcmp(type, "qwen2_moe")) {
            int64_t shared = 0;
            if ((rc = hf_int(root, "shared_expert_intermediate_size", fname, type, true, 1, &shared, err)))
                return rc;
            if (shared % out->moe_ffn)
                return etk_err(err, ETK_EUNSUPPORTED,
                               "%s: 'shared_expert_intermediate_size' %" PRId64 " is not a multiple of "
                               "'moe_intermediate_size' %" PRId64 " (the shared expert is modelled as that many experts)",
                               fname, shared, out->moe_ffn);
            out->shared_experts = shared / out->moe_ffn;
        }
    } else if (ds) {
        json_t *ql = json_object_get(root, "q_lora_rank");
        if (ql && json_is_null(ql))
            return etk_err(err, ETK_EUNSUPPORTED,
                           "%s: 'q_lora_rank' is null (queries without low-rank compression, as in DeepSeek-V2-Lite, "
                           "are not modelled: the deepseek block compresses queries)", fname);
        if ((rc = hf_int(root, "n_routed_experts", fname, type, true, 1, &out->experts, err)) ||
            (rc = hf_int(root, "num_experts_per_tok", fname, type, true, 1, &out->topk, err)) ||
            (rc = hf_int(root, "moe_intermediate_size", fname, type, true, 1, &out->moe_ffn, err)) ||
            (rc = hf_int(root, "n_shared_experts", fname, type, true, 1, &out->shared_experts, err)) ||
            (rc = hf_int(root, "first_k_dense_replace", fname, type, false, 0, &out->dense_layers, err)) ||
            (rc = hf_int(root, "q_lora_rank", fname, type, true, 1, &out->q_lora, err)) ||
            (rc = hf_int(root, "kv_lora_rank", fname, type, true, 1, &out->kv_lora, err)) ||
            (rc = hf_int(root, "qk_nope_head_dim", fname, type, true, 1, &out->qk_nope, err)) ||
            (rc = hf_int(root, "qk_rope_head_dim", fname, type, true, 1, &out->qk_rope, err)) ||
            (rc = hf_int(root, "v_head_dim", fname, type, true, 1, &out->v_head, err)))
            return rc;
        out->head_dim = 0;
    }
    if ((rc = hf_window(root, fname, type, out, err)))
        return rc;
    return etk_model_check(out, err);
}

int etk_model_parse(const char *text, size_t len, const char *fname, etk_model *out, etk_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *root, *lines = NULL;
    int rc = etk_yaml_to_json_lines(text, len, fname, &root, &lines, err);
    if (rc)
        return rc;
    if (json_object_get(root, "hidden_size") || json_object_get(root, "n_embd")) {
        rc = parse_hf(root, fname, out, err);
        json_decref(root);
        json_decref(lines);
        return rc;
    }
    /* unknown keys are errors: a misspelt key (kv_head) silently ignored is a wrong model */
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        const char *known[N_DIMS + N_TEXT_KEYS];
        bool found = false;
        for (size_t i = 0; i < N_DIMS + N_TEXT_KEYS; i++) {
            known[i] = i < N_DIMS ? dim_table[i].key : text_keys[i - N_DIMS];
            found |= !strcmp(key, known[i]);
        }
        if (found)
            continue;
        const char *near = etk_suggest(key, known, N_DIMS + N_TEXT_KEYS);
        char list[400] = "";
        for (size_t i = 0; i < N_DIMS + N_TEXT_KEYS; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", known[i]);
        }
        long long line = (long long)json_integer_value(json_object_get(lines, key));
        if (near)
            rc = etk_err(err, ETK_EFORMAT, "%s:%lld: unknown key '%s': did you mean '%s'?", fname, line, key, near);
        else
            rc = etk_err(err, ETK_EFORMAT, "%s:%lld: unknown key '%s' (known keys: %s)", fname, line, key, list);
        json_decref(root);
        json_decref(lines);
        return rc;
    }
    json_decref(lines);
    const char *name = json_string_value(json_object_get(root, "name"));
    const char *arch = json_string_value(json_object_get(root, "arch"));
    const char *src = json_string_value(json_object_get(root, "source"));
    if (!name || !arch) {
        json_decref(root);
        return etk_err(err, ETK_EFORMAT, "%s: missing field '%s' (a string)", fname, name ? "arch" : "name");
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    snprintf(out->source, sizeof out->source, "%s", src ? src : "");
    out->kv_heads = 0;
    for (size_t i = 0; i < N_DIMS; i++)
        if ((rc = get_int(root, dim_table[i].key, fname, dim_ptr(out, i), dim_table[i].required, err))) {
            json_decref(root);
            return rc;
        }
    json_t *cf = json_object_get(root, "capacity_factor");
    if (cf && (!json_is_number(cf) || json_number_value(cf) < 0 || json_number_value(cf) > 1000)) {
        json_decref(root);
        return etk_err(err, ETK_EFORMAT, "%s: field 'capacity_factor' must be a number >= 0 (0: no dropping) and at most 1000",
                       fname);
    }
    out->capacity_factor = cf ? json_number_value(cf) : 0;
    json_t *tie = json_object_get(root, "tie_embeddings");
    if (tie && !json_is_boolean(tie)) {
        json_decref(root);
        return etk_err(err, ETK_EFORMAT, "%s: field 'tie_embeddings' must be true or false", fname);
    }
    out->tie_embeddings = json_is_true(tie);
    json_t *wl = json_object_get(root, "window_layers");
    if (wl && (!json_is_string(wl) || !out->window)) {
        json_decref(root);
        return etk_err(err, ETK_EFORMAT, "%s: field 'window_layers' must be a string of 'S' (sliding) and 'F' (full) "
                       "layers, repeated from layer window_from on, and needs 'window'", fname);
    }
    if (wl && (rc = window_pattern(json_string_value(wl), strlen(json_string_value(wl)), fname, "window_layers",
                                   out, err))) {
        json_decref(root);
        return rc;
    }
    if (!out->kv_heads)
        out->kv_heads = out->heads;
    json_decref(root);
    return etk_model_check(out, err);
}

int etk_model_load(const char *path, etk_model *out, etk_error *err)
{
    char *data;
    size_t len;
    int rc = etk_file_read_max(path, ETK_MAX_CONFIG_BYTES, "model file", &data, &len, err);
    if (rc)
        return rc;
    rc = etk_model_parse(data, len, path, out, err);
    free(data);
    return rc;
}

size_t etk_model_preset_names(const char **names, size_t cap)
{
    size_t n = 0;
    for (const etk_embedded *e = etk_preset_files(); e->name; e++) {
        if (strncmp(e->name, "models/", 7) || strchr(e->name + 7, '/'))
            continue;
        if (n < cap)
            names[n] = e->name + 7;
        n++;
    }
    return n;
}

int etk_model_preset(const char *name, etk_model *out, etk_error *err)
{
    char rel[160];
    snprintf(rel, sizeof rel, "models/%s.yaml", name);
    const etk_embedded *e = strchr(name, '/') ? NULL : etk_preset_file(rel);
    if (!e) {
        char list[700] = "";
        const char *names[64];
        size_t n = etk_model_preset_names(names, 64);
        for (size_t i = 0; i < n && i < 64; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%.*s", i ? ", " : "", (int)(strlen(names[i]) - 5), names[i]);
        }
        return etk_err(err, ETK_ENOTFOUND, "unknown model '%s' (built-in presets: %s)", name, list);
    }
    return etk_model_parse((const char *)e->data, e->len, e->name, out, err);
}

int etk_model_check(const etk_model *m, etk_error *err)
{
    if (m->layers <= 0 || m->hidden <= 0 || m->heads <= 0 || m->kv_heads <= 0 || m->ffn <= 0 ||
        m->vocab <= 0 || m->seq <= 0)
        return etk_err(err, ETK_EINVAL, "model %s: every dimension must be positive", m->name);
    for (size_t i = 0; i < N_DIMS; i++) {
        int64_t v = *dim_ptr((etk_model *)m, i);
        if (v < 0 || v > dim_table[i].max)
            return etk_err(err, ETK_EINVAL,
                           "model %s: %s %" PRId64 " is out of range (at most %" PRId64 ", the same limit for "
                           "flags, model files and Hugging Face configs)", m->name, dim_table[i].key, v,
                           dim_table[i].max);
    }
    if (!m->head_dim && m->hidden % m->heads)
        return etk_err(err, ETK_EINVAL, "model %s: --heads %" PRId64 " does not divide --hidden %" PRId64,
                       m->name, m->heads, m->hidden);
    if (m->heads % m->kv_heads)
        return etk_err(err, ETK_EINVAL,
                       "model %s: --kv-heads %" PRId64 " does not divide --heads %" PRId64, m->name,
                       m->kv_heads, m->heads);
    static const char *archs[] = {"gpt", "llama", "qwen2", "neox", "moe", "moe-shared", "deepseek"};
    bool known = false;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        known |= !strcmp(m->arch, archs[i]);
    if (!known)
        return etk_err(err, ETK_EINVAL,
                       "model %s: unknown arch '%s' (expected gpt, llama, qwen2, neox, moe, moe-shared or deepseek)", m->name,
                       m->arch);
    bool moe = !strcmp(m->arch, "moe") || !strcmp(m->arch, "moe-shared") || !strcmp(m->arch, "deepseek");
    if (moe) {
        if (m->experts <= 0 || m->moe_ffn <= 0)
            return etk_err(err, ETK_EINVAL, "model %s: arch %s needs experts and moe_ffn (positive integers)",
                           m->name, m->arch);
        if (m->topk <= 0 || m->topk > m->experts)
            return etk_err(err, ETK_EINVAL, "model %s: topk %" PRId64 " must be between 1 and experts %" PRId64,
                           m->name, m->topk, m->experts);
        if (strcmp(m->arch, "moe") && m->shared_experts <= 0)
            return etk_err(err, ETK_EINVAL, "model %s: arch %s needs shared_experts (a positive integer)", m->name,
                           m->arch);
        if (m->dense_layers < 0 || m->dense_layers >= m->layers)
            return etk_err(err, ETK_EINVAL, "model %s: dense_layers %" PRId64 " must be below layers %" PRId64,
                           m->name, m->dense_layers, m->layers);
    } else if (m->experts > 0) {
        return etk_err(err, ETK_EINVAL, "model %s: arch %s is dense but experts is %" PRId64
                       " (use arch moe, moe-shared or deepseek)", m->name, m->arch, m->experts);
    }
    if (!strcmp(m->arch, "deepseek") &&
        (m->q_lora <= 0 || m->kv_lora <= 0 || m->qk_nope <= 0 || m->qk_rope <= 0 || m->v_head <= 0))
        return etk_err(err, ETK_EINVAL,
                       "model %s: arch deepseek (multi-head latent attention) needs q_lora, kv_lora, qk_nope, "
                       "qk_rope and v_head (positive integers)", m->name);
    if (!strcmp(m->arch, "gpt") && m->kv_heads != m->heads)
        return etk_err(err, ETK_EINVAL,
                       "model %s: arch gpt uses multi-head attention: --kv-heads must equal --heads",
                       m->name);
    return 0;
}

/* Sum of the weights; active: expert weights (those over dimension 'e') count topk/experts. */
static int count_params(const etk_model *m, bool active, uint64_t *out, etk_error *err)
{
    etk_graph *g;
    int rc = etk_graph_load(m, 1, &g, err);
    if (rc)
        return rc;
    uint64_t n = 0, dense = g->dense.nops ? (uint64_t)m->dense_layers : 0;
    for (int i = 0; i < g->nt; i++) {
        const gtensor *t = &g->t[i];
        if (!t->weight)
            continue;
        uint64_t el = (uint64_t)etk_graph_elems(g, i);
        if (active && m->experts > 0)
            for (int k = 0; k < t->nd; k++)
                if (t->dims[k] == 'e' - 'a')
                    el = el / (uint64_t)m->experts * (uint64_t)m->topk;
        uint64_t times = t->section == G_SEC_LAYER   ? (uint64_t)m->layers - dense
                         : t->section == G_SEC_DENSE ? dense
                         : t->section > G_SEC_DENSE  ? 0 /* decode forms: the same weights */
                                                     : 1;
        uint64_t part;
        if (__builtin_mul_overflow(el, times, &part) || __builtin_add_overflow(n, part, &n) ||
            n > (uint64_t)INT64_MAX) {
            etk_graph_free(g);
            return etk_err(err, ETK_EINVAL, "model %s: the parameter count overflows 64 bits (dimensions too large)",
                           m->name);
        }
    }
    etk_graph_free(g);
    *out = n;
    return 0;
}

int etk_model_params(const etk_model *m, uint64_t *out, etk_error *err)
{
    return count_params(m, false, out, err);
}

int etk_model_active_params(const etk_model *m, uint64_t *out, etk_error *err)
{
    return count_params(m, true, out, err);
}

uint64_t etk_model_kv_bytes_per_token(const etk_model *m, int bytes)
{
    if (!strcmp(m->arch, "deepseek"))
        return (uint64_t)m->layers * (uint64_t)(m->kv_lora + m->qk_rope) * (uint64_t)bytes;
    int64_t d = m->head_dim ? m->head_dim : (m->heads ? m->hidden / m->heads : 0);
    return 2 * (uint64_t)m->layers * (uint64_t)m->kv_heads * (uint64_t)d * (uint64_t)bytes;
}

int64_t etk_model_capacity(const etk_model *m, int64_t batch)
{
    if (m->experts <= 0 || m->topk <= 0)
        return 0;
    double cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
    /* exact integer ceiling when cf is 1 (no floating-point rounding of large products) */
    int64_t routed;
    if (!etk_mul_i64(batch, m->seq, &routed) || !etk_mul_i64(routed, m->topk, &routed))
        return INT64_MAX; /* refused by the tensor-size check of etk_graph_load */
    if (cf == 1.0)
        return (routed + m->experts - 1) / m->experts;
    double c = cf * (double)routed / (double)m->experts;
    if (!(c < 9.2e18))
        return INT64_MAX;
    int64_t ci = (int64_t)c;
    return (double)ci < c ? ci + 1 : ci;
}

/* ---------- sliding-window attention ---------- */

bool etk_model_layer_sliding(const etk_model *m, int64_t l)
{
    if (m->window <= 0 || l < m->window_from || l < 0)
        return false;
    if (!m->window_period)
        return true;
    return (m->window_mask >> ((uint64_t)(l - m->window_from) % m->window_period)) & 1u;
}

int64_t etk_model_sliding_layers(const etk_model *m, int64_t lo, int64_t n)
{
    int64_t k = 0;
    for (int64_t l = lo; l < lo + n; l++)
        k += etk_model_layer_sliding(m, l);
    return k;
}

double etk_window_pairs(int64_t s, int64_t w)
{
    double S = (double)s, W = (double)w;
    if (s <= 0 || w <= 0)
        return 0;
    if (w >= s)
        return S * (S + 1) / 2;
    return W * S - W * (W - 1) / 2;
}

double etk_window_tiles(int64_t s, int64_t w, int64_t blk)
{
    if (s <= 0 || w <= 0 || blk <= 0)
        return 0;
    /* ceilings without s + blk - 1 (a trace's attn_s may be near INT64_MAX) */
    int64_t n = s / blk + (s % blk != 0), k = (w - 1) / blk + ((w - 1) % blk != 0), i0 = k < n ? k : n;
    return (double)i0 * (double)(i0 + 1) / 2 + (double)(n - i0) * (double)(k + 1);
}

uint64_t etk_model_kv_bytes(const etk_model *m, int bytes, int64_t tokens)
{
    if (tokens <= 0 || m->layers <= 0)
        return 0;
    uint64_t per_layer = etk_model_kv_bytes_per_token(m, bytes) / (uint64_t)m->layers;
    int64_t ns = etk_model_sliding_layers(m, 0, m->layers);
    int64_t capped = m->window > 0 && m->window < tokens ? m->window : tokens;
    return per_layer * ((uint64_t)(m->layers - ns) * (uint64_t)tokens + (uint64_t)ns * (uint64_t)capped);
}
