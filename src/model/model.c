/* model.c — model presets and the symbolic block graph. A model (presets/models/<name>.yaml, a
 * user file or a Hugging Face config.json of the Llama, Mistral, Qwen2, Mixtral, Qwen2/3-MoE,
 * DeepSeek-V2/V3, GPT-2 and GPT-NeoX families) gives the dimensions, including mixture-of-experts
 * and MLA ones; its arch selects a block graph (presets/models/blocks/<arch>.yaml) whose ops over
 * named dimensions are loaded here with every size evaluated (expert capacity included).
 * Parameter counts (total and active per token) are sums over the graph's weights. gen/lower.c
 * turns that graph into per-rank work under a parallel plan. */
#include <ctype.h>
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

/* ---------- dimension expressions: integers, model symbols, + - * / ( ) ---------- */

typedef struct {
    const char *s, *p;
    const etk_model *m;
    int64_t batch;
    const char *where;
    etk_error *err;
    int rc;
} expr;

static int64_t e_sum(expr *e);

static void e_skip(expr *e)
{
    while (*e->p == ' ')
        e->p++;
}

static int64_t e_fail(expr *e, const char *what)
{
    if (!e->rc)
        e->rc = etk_err(e->err, ETK_EFORMAT, "%s: expression '%s' at offset %d: %s", e->where, e->s,
                        (int)(e->p - e->s), what);
    return 0;
}

static int64_t e_atom(expr *e)
{
    e_skip(e);
    if (*e->p == '(') {
        e->p++;
        int64_t v = e_sum(e);
        e_skip(e);
        if (*e->p != ')')
            return e_fail(e, "expected ')'");
        e->p++;
        return v;
    }
    if (isdigit((unsigned char)*e->p)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*e->p))
            if (!etk_mul_i64(v, 10, &v) || !etk_add_i64(v, *e->p++ - '0', &v))
                return e_fail(e, "number out of the 64-bit range");
        return v;
    }
    const char *b = e->p;
    while (isalnum((unsigned char)*e->p) || *e->p == '_')
        e->p++;
    size_t n = (size_t)(e->p - b);
    static const char *names[] = {"batch", "seq", "hidden", "heads", "kv_heads", "ffn", "vocab", "layers", "head_dim",
                                  "experts", "topk", "shared_experts", "moe_ffn", "capacity", "q_lora",
                                  "kv_lora", "qk_nope", "qk_rope", "v_head"};
    const etk_model *m = e->m;
    int64_t vals[] = {e->batch, m->seq, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->layers,
                      m->head_dim ? m->head_dim : m->hidden / m->heads,
                      m->experts, m->topk, m->shared_experts, m->moe_ffn, etk_model_capacity(m, e->batch),
                      m->q_lora, m->kv_lora, m->qk_nope, m->qk_rope, m->v_head};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (n == strlen(names[i]) && !strncmp(b, names[i], n))
            return vals[i];
    return e_fail(e, "expected a number, a model symbol (batch seq hidden heads kv_heads ffn vocab "
                     "layers head_dim experts topk shared_experts moe_ffn capacity q_lora kv_lora qk_nope qk_rope "
                     "v_head) or '('");
}

static int64_t e_prod(expr *e)
{
    int64_t v = e_atom(e);
    for (;;) {
        e_skip(e);
        char op = *e->p;
        if (op != '*' && op != '/')
            return v;
        e->p++;
        int64_t r = e_atom(e);
        if (op == '*') {
            if (!etk_mul_i64(v, r, &v))
                return e_fail(e, "the product overflows 64 bits for this model (dimensions too large)");
        } else if (r == 0 || v % r)
            return e_fail(e, "division is not exact for this model");
        else
            v /= r;
    }
}

static int64_t e_sum(expr *e)
{
    int64_t v = e_prod(e);
    for (;;) {
        e_skip(e);
        char op = *e->p;
        if (op != '+' && op != '-')
            return v;
        e->p++;
        int64_t r = e_prod(e);
        if (op == '+' ? !etk_add_i64(v, r, &v) : !etk_add_i64(v, -r, &v))
            return e_fail(e, "the sum overflows 64 bits for this model (dimensions too large)");
    }
}

static int eval_expr(const char *s, const etk_model *m, int64_t batch, const char *where, int64_t *out,
                     etk_error *err)
{
    expr e = {s, s, m, batch, where, err, 0};
    int64_t v = e_sum(&e);
    e_skip(&e);
    if (!e.rc && *e.p)
        e_fail(&e, "unexpected character");
    if (!e.rc && v <= 0)
        e.rc = etk_err(err, ETK_EINVAL, "%s: expression '%s' is %" PRId64 " for model %s (must be positive)",
                       where, s, v, m->name);
    *out = v;
    return e.rc;
}

/* ---------- block graph ---------- */

int64_t etk_graph_elems(const etk_graph *g, int i)
{
    int64_t n = 1;
    for (int k = 0; k < g->t[i].nd; k++)
        n *= g->dim[g->t[i].dims[k]];
    return n;
}

static const struct {
    const char *name;
    uint32_t bit;
} rmods[] = {{"mla_up_proj", G_RMOD_MLA_UP_PROJ}, {"mlp", G_RMOD_MLP}, {"moe_act", G_RMOD_MOE_ACT}};

uint32_t etk_graph_rmod_bit(const char *name)
{
    for (size_t i = 0; name && i < sizeof rmods / sizeof rmods[0]; i++)
        if (!strcmp(name, rmods[i].name))
            return rmods[i].bit;
    return 0;
}

const char *etk_graph_rmod_name(uint32_t b)
{
    for (size_t i = 0; i < sizeof rmods / sizeof rmods[0]; i++)
        if (rmods[i].bit == b)
            return rmods[i].name;
    return NULL;
}

static const char *sec_names[G_N_SEC_ALL] = {"embed", "layer", "head", "dense_layer", "decode_layer",
                                             "decode_dense_layer"};

typedef struct {
    etk_graph *g;
    const char *file;
    etk_error *err;
    const etk_model *m;
    int64_t batch;
} loader;

static int parse_dims(loader *L, const char *s, const char *where, int *dims, int *nd)
{
    size_t n = s ? strlen(s) : 0;
    if (!s || n == 0 || n > G_MAX_RANK)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: expected 1 to %d dimension letters", L->file, where,
                       G_MAX_RANK);
    for (size_t i = 0; i < n; i++) {
        int c = s[i] - 'a';
        if (c < 0 || c >= G_MAX_DIMS || !L->g->dim[c])
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: dimension '%c' is not declared under dims", L->file,
                           where, s[i]);
        dims[i] = c;
    }
    *nd = (int)n;
    return 0;
}

static int find_tensor(const etk_graph *g, int sec, const char *name)
{
    char q[128];
    if (strchr(name, '.'))
        snprintf(q, sizeof q, "%s", name);
    else
        snprintf(q, sizeof q, "%s.%s", sec_names[sec], name);
    for (int i = g->nt - 1; i >= 0; i--)
        if (!strcmp(g->t[i].name, q))
            return i;
    return -1;
}

static int add_tensor(loader *L, int sec, const char *name, const int *dims, int nd, bool weight, int split)
{
    etk_graph *g = L->g;
    char q[128];
    snprintf(q, sizeof q, "%s.%s", sec_names[sec], name);
    if (g->nt >= G_MAX_TENSORS || find_tensor(g, sec, name) >= 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: tensor '%s' is defined twice (or more than %d tensors)",
                       L->file, q, G_MAX_TENSORS) < 0 ? -1 : -1;
    gtensor *t = &g->t[g->nt];
    t->name = etk_arena_strdup(g->arena, q);
    t->section = sec;
    t->nd = nd;
    memcpy(t->dims, dims, sizeof(int) * (size_t)nd);
    t->weight = weight;
    t->split = split;
    return g->nt++;
}

/* Output dims of a matmul from its einsum "ab,bc->ac", checking the operands' dims. */
static int parse_eq(loader *L, const char *where, const char *eq, gop *op, int *dims, int *nd)
{
    const char *arrow = eq ? strstr(eq, "->") : NULL;
    const char *comma = eq ? strchr(eq, ',') : NULL;
    if (!arrow || !comma || comma > arrow || op->nin != 2)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: matmul needs two inputs and eq \"<a>,<b>-><out>\"",
                       L->file, where);
    const char *parts[2] = {eq, comma + 1};
    size_t lens[2] = {(size_t)(comma - eq), (size_t)(arrow - comma - 1)};
    for (int i = 0; i < 2; i++) {
        const gtensor *t = &L->g->t[op->in[i]];
        bool ok = lens[i] == (size_t)t->nd;
        /* eq letters label the operand's dims; a different letter of the same size is a
         * relabeling (keys use t for the sequence position of the attended tokens) */
        for (int k = 0; ok && k < t->nd; k++) {
            int l = parts[i][k] - 'a';
            ok = l >= 0 && l < G_MAX_DIMS && L->g->dim[l] == L->g->dim[t->dims[k]];
            if (ok)
                op->eq[i][k] = l;
        }
        op->eqn[i] = t->nd;
        if (!ok)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: operand %d (%s) does not have the dims of eq '%s'",
                           L->file, where, i + 1, t->name, eq);
    }
    return parse_dims(L, arrow + 2, where, dims, nd);
}

static int load_op(loader *L, int sec, json_t *jo, size_t idx, gop *op)
{
    etk_graph *g = L->g;
    char where[160];
    const char *name = json_string_value(json_object_get(jo, "name"));
    snprintf(where, sizeof where, "sections.%s.ops[%zu]%s%s", sec_names[sec], idx, name ? " " : "",
             name ? name : "");
    if (!name)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: missing 'name'", L->file, where);
    op->name = etk_arena_strdup(g->arena, name);
    const char *kind = json_string_value(json_object_get(jo, "op"));
    static const char *kinds[] = {"matmul", "elementwise", "norm", "softmax", "dropout", "embedding", "loss"};
    op->kind = -1;
    for (int k = 0; kind && k < 7; k++)
        if (!strcmp(kind, kinds[k]))
            op->kind = k;
    if (op->kind < 0)
        return etk_err(L->err, ETK_EFORMAT,
                       "%s: %s: 'op' must be one of matmul elementwise norm softmax dropout embedding loss",
                       L->file, where);
    json_t *in = json_object_get(jo, "in");
    if (!json_is_array(in) || json_array_size(in) == 0 || json_array_size(in) > G_MAX_IN)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'in' must list 1 to %d tensors", L->file, where, G_MAX_IN);
    op->nin = (int)json_array_size(in);
    for (int i = 0; i < op->nin; i++) {
        const char *tn = json_string_value(json_array_get(in, (size_t)i));
        op->in[i] = tn ? find_tensor(g, sec, tn) : -1;
        if (op->in[i] < 0)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: input '%s' is not defined before this op", L->file,
                           where, tn ? tn : "?");
    }
    op->bias = -1;
    const char *bias = json_string_value(json_object_get(jo, "bias"));
    if (bias && (op->bias = find_tensor(g, sec, bias)) < 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: bias '%s' is not a declared weight", L->file, where, bias);
    op->over = -1;
    const char *over = json_string_value(json_object_get(jo, "over"));
    if (over) {
        int d[G_MAX_RANK], nd;
        if (parse_dims(L, over, where, d, &nd))
            return L->err->code;
        op->over = d[0];
    }
    json_t *fl = json_object_get(jo, "flops");
    op->flops = fl ? json_number_value(fl) : (op->kind == G_DROPOUT ? 1 : 0);
    if (json_is_string(fl)) { /* an expression over the model symbols ("2 * topk") */
        char w2[200];
        int64_t v;
        snprintf(w2, sizeof w2, "%s: %s.flops", L->file, where);
        if (eval_expr(json_string_value(fl), L->m, L->batch, w2, &v, L->err))
            return L->err->code;
        op->flops = (double)v;
    }
    json_t *bw = json_object_get(jo, "bwd");
    op->bwd = bw ? json_number_value(bw) : (op->kind == G_DROPOUT ? 1 : 2);
    op->region = json_object_get(jo, "region") != NULL;
    json_t *rm = json_object_get(jo, "recompute");
    if (rm && !(json_is_string(rm) && (op->rmod = etk_graph_rmod_bit(json_string_value(rm)))))
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'recompute' must name a recompute module (%s)", L->file,
                       where, G_RMOD_NAMES);
    json_t *skv = json_object_get(jo, "shared_kv");
    if (skv && (!json_is_boolean(skv) || op->kind != G_MATMUL))
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'shared_kv' must be true or false, on a matmul", L->file, where);
    op->shared_kv = skv && json_is_true(skv);
    op->reductions = (int)json_integer_value(json_object_get(jo, "reductions"));
    /* output tensor */
    int dims[G_MAX_RANK], nd = 0;
    const char *ds = json_string_value(json_object_get(jo, "dims"));
    if (op->kind == G_MATMUL) {
        if (parse_eq(L, where, json_string_value(json_object_get(jo, "eq")), op, dims, &nd))
            return L->err->code;
    } else if (op->kind == G_EMBEDDING) {
        /* tokens [b,s] x table [v,h] -> [b,s,h] */
        const gtensor *tok = &g->t[op->in[0]], *tab = op->nin > 1 ? &g->t[op->in[1]] : NULL;
        if (!tab || !tab->weight || tab->nd != 2 || tok->nd < 1)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: embedding needs [tokens, table[vocab,hidden]]",
                           L->file, where);
        nd = tok->nd + 1;
        memcpy(dims, tok->dims, sizeof(int) * (size_t)tok->nd);
        dims[tok->nd] = tab->dims[1];
    } else if (ds) {
        if (parse_dims(L, ds, where, dims, &nd))
            return L->err->code;
    } else {
        const gtensor *t0 = &g->t[op->in[0]];
        nd = t0->nd;
        memcpy(dims, t0->dims, sizeof(int) * (size_t)nd);
    }
    const char *out = json_string_value(json_object_get(jo, "out"));
    if (!out)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: missing 'out'", L->file, where);
    op->out = add_tensor(L, sec, out, dims, nd, false, -1);
    if (op->out < 0)
        return L->err->code;
    /* saved tensors */
    json_t *sv = json_object_get(jo, "save");
    if (sv && (!json_is_array(sv) || json_array_size(sv) > G_MAX_SAVE))
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'save' must list at most %d tensors", L->file, where,
                       G_MAX_SAVE);
    for (size_t i = 0; sv && i < json_array_size(sv); i++) {
        const char *s = json_string_value(json_array_get(sv, i));
        char nm[64];
        int bytes = 0;
        const char *colon = s ? strchr(s, ':') : NULL;
        snprintf(nm, sizeof nm, "%.*s", colon ? (int)(colon - s) : (int)(s ? strlen(s) : 0), s ? s : "");
        if (colon)
            bytes = atoi(colon + 1);
        int ti = find_tensor(g, sec, nm);
        if (ti < 0)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: saved tensor '%s' is not defined", L->file, where, nm);
        op->save[op->nsave] = ti;
        op->save_bytes[op->nsave++] = bytes;
    }
    return 0;
}

static int load_section(loader *L, int sec, json_t *js)
{
    etk_graph *g = L->g;
    gsection *S = (gsection *)etk_graph_section(g, sec);
    S->name = sec_names[sec];
    char where[96];
    snprintf(where, sizeof where, "sections.%s", sec_names[sec]);
    if (!json_is_object(js))
        return etk_err(L->err, ETK_EFORMAT, "%s: missing mapping '%s'", L->file, where);
    json_t *in = json_object_get(js, "input");
    const char *iname = json_string_value(json_object_get(in, "name"));
    if (!iname)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s.input: missing 'name'", L->file, where);
    int dims[G_MAX_RANK], nd = g->stream_nd;
    memcpy(dims, g->stream, sizeof dims);
    const char *ids = json_string_value(json_object_get(in, "dims"));
    if (ids && parse_dims(L, ids, where, dims, &nd))
        return L->err->code;
    S->input = add_tensor(L, sec, iname, dims, nd, false, -1);
    if (S->input < 0)
        return L->err->code;
    json_t *ws = json_object_get(js, "weights");
    const char *wk;
    json_t *wv;
    json_object_foreach(ws, wk, wv) {
        char w2[160];
        snprintf(w2, sizeof w2, "%s.weights.%s", where, wk);
        if (parse_dims(L, json_string_value(json_object_get(wv, "dims")), w2, dims, &nd))
            return L->err->code;
        int split = -1;
        const char *sp = json_string_value(json_object_get(wv, "split"));
        if (sp) {
            split = sp[0] - 'a';
            bool found = false;
            for (int k = 0; k < nd; k++)
                found |= dims[k] == split;
            if (strlen(sp) != 1 || !found)
                return etk_err(L->err, ETK_EFORMAT, "%s: %s: split '%s' is not one of its dims", L->file, w2, sp);
        }
        if (add_tensor(L, sec, wk, dims, nd, true, split) < 0)
            return L->err->code;
    }
    json_t *ops = json_object_get(js, "ops");
    if (!json_is_array(ops) || json_array_size(ops) == 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s.ops: expected a list of ops", L->file, where);
    S->nops = (int)json_array_size(ops);
    S->ops = etk_arena_alloc(g->arena, sizeof(gop) * (size_t)S->nops);
    for (int i = 0; i < S->nops; i++)
        if (load_op(L, sec, json_array_get(ops, (size_t)i), (size_t)i, &S->ops[i]))
            return L->err->code;
    const char *out = json_string_value(json_object_get(js, "output"));
    S->output = out ? find_tensor(g, sec, out) : -1;
    if (S->output < 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s.output: expected the name of an op output", L->file, where);
    return 0;
}

/* Section sec declares the weights of section of (names, dims and splits), in any order. */
static int same_weights(loader *L, int sec, int of)
{
    const etk_graph *g = L->g;
    int n[2] = {0, 0};
    for (int i = 0; i < g->nt; i++) {
        const gtensor *t = &g->t[i];
        if (!t->weight || (t->section != sec && t->section != of))
            continue;
        n[t->section == of]++;
        if (t->section != sec)
            continue;
        int k = find_tensor(g, of, strchr(t->name, '.') + 1);
        const gtensor *u = k >= 0 ? &g->t[k] : NULL;
        if (!u || !u->weight || u->nd != t->nd || u->split != t->split ||
            memcmp(u->dims, t->dims, sizeof(int) * (size_t)t->nd))
            return etk_err(L->err, ETK_EFORMAT, "%s: sections.%s.weights.%s: not a weight of %s with the same dims "
                           "and split (a decode section computes the same layer)", L->file, sec_names[sec],
                           strchr(t->name, '.') + 1, sec_names[of]);
    }
    if (n[0] != n[1])
        return etk_err(L->err, ETK_EFORMAT, "%s: sections.%s declares %d weights, %s %d (a decode section "
                       "computes the same layer with the same weights)", L->file, sec_names[sec], n[0],
                       sec_names[of], n[1]);
    return 0;
}

/* Tied embeddings: the head's weight with the embedding table's dims (its output layer) is
 * dropped and the head's ops read the table ("embed.<name>") instead, as blocks/gpt.yaml writes
 * it; nothing to do when the head already reads the table. */
static int tie_head(const char *file, json_t *secs, etk_error *err)
{
    json_t *embed = json_object_get(secs, "embed"), *head = json_object_get(secs, "head");
    const char *table = NULL;
    size_t i;
    json_t *op;
    json_array_foreach(json_object_get(embed, "ops"), i, op)
        if (!table && !strcmp(json_string_value(json_object_get(op, "op")) ? json_string_value(json_object_get(op, "op")) : "",
                              "embedding"))
            table = json_string_value(json_array_get(json_object_get(op, "in"), 1));
    json_t *tw = table ? json_object_get(json_object_get(embed, "weights"), table) : NULL;
    const char *tdims = json_string_value(json_object_get(tw, "dims"));
    if (!tdims)
        return etk_err(err, ETK_EFORMAT, "%s: tied embeddings: sections.embed has no embedding op with a table weight",
                       file);
    json_t *hw = json_object_get(head, "weights");
    const char *wk;
    char out_w[64] = "";
    json_t *wv;
    json_object_foreach(hw, wk, wv) {
        const char *d = json_string_value(json_object_get(wv, "dims"));
        if (!out_w[0] && d && !strcmp(d, tdims))
            snprintf(out_w, sizeof out_w, "%s", wk);
    }
    if (!out_w[0])
        return 0; /* the head reads the table already (gpt) */
    char ref[96];
    snprintf(ref, sizeof ref, "embed.%s", table);
    json_array_foreach(json_object_get(head, "ops"), i, op) {
        json_t *in = json_object_get(op, "in");
        for (size_t k = 0; k < json_array_size(in); k++)
            if (!strcmp(json_string_value(json_array_get(in, k)) ? json_string_value(json_array_get(in, k)) : "", out_w))
                json_array_set_new(in, k, json_string(ref));
    }
    json_object_del(hw, out_w);
    return 0;
}

int etk_graph_load(const etk_model *m, int64_t batch, etk_graph **out, etk_error *err)
{
    *out = NULL;
    char rel[64];
    snprintf(rel, sizeof rel, "models/blocks/%s.yaml", m->arch);
    const etk_embedded *e = etk_preset_file(rel);
    if (!e)
        return etk_err(err, ETK_ENOTFOUND, "model %s: no block graph for arch '%s' (%s)", m->name, m->arch, rel);
    json_t *root;
    int rc = etk_yaml_to_json((const char *)e->data, e->len, e->name, &root, err);
    if (rc)
        return rc;
    etk_graph *g = calloc(1, sizeof *g);
    g->arena = etk_arena_new(0);
    g->file = e->name;
    g->layers = m->layers;
    g->batch = batch;
    g->seq = m->seq;
    g->topk = m->topk;
    g->experts = m->experts;
    g->t = etk_arena_alloc(g->arena, sizeof(gtensor) * G_MAX_TENSORS);
    loader L = {g, e->name, err, m, batch};
    const char *dk;
    json_t *dv;
    json_object_foreach(json_object_get(root, "dims"), dk, dv) {
        char where[64];
        snprintf(where, sizeof where, "%s: dims.%s", e->name, dk);
        int c = dk[0] - 'a';
        if (strlen(dk) != 1 || c < 0 || c >= G_MAX_DIMS) {
            rc = etk_err(err, ETK_EFORMAT, "%s: dimension names are single letters a-z", where);
            goto out;
        }
        char num[32];
        const char *s = json_string_value(dv);
        if (json_is_integer(dv)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(dv));
            s = num;
        }
        if (!s) {
            rc = etk_err(err, ETK_EFORMAT, "%s: expected an expression", where);
            goto out;
        }
        if ((rc = eval_expr(s, m, batch, where, &g->dim[c], err)))
            goto out;
    }
    json_t *st = json_object_get(root, "stream");
    const char *sq = json_string_value(json_object_get(st, "seq"));
    if ((rc = parse_dims(&L, json_string_value(json_object_get(st, "dims")), "stream.dims", g->stream,
                         &g->stream_nd)))
        goto out;
    if (!sq || sq[0] < 'a' || sq[0] > 'z') {
        rc = etk_err(err, ETK_EFORMAT, "%s: stream.seq: expected the sequence dimension letter", e->name);
        goto out;
    }
    g->stream_seq = sq[0] - 'a';
    json_t *secs = json_object_get(root, "sections");
    if (m->tie_embeddings && (rc = tie_head(e->name, secs, err)))
        goto out;
    for (int s = 0; s < G_N_SEC; s++)
        if ((rc = load_section(&L, s, json_object_get(secs, sec_names[s]))))
            goto out;
    json_t *dense = json_object_get(secs, sec_names[G_SEC_DENSE]);
    if (dense && (rc = load_section(&L, G_SEC_DENSE, dense)))
        goto out;
    if (m->dense_layers > 0 && !dense) {
        rc = etk_err(err, ETK_EINVAL, "model %s: dense_layers %" PRId64 " but %s has no dense_layer section",
                     m->name, m->dense_layers, e->name);
        goto out;
    }
    /* the decode forms of the layer (dense layer): the same weights computed another way */
    for (int s = G_SEC_DECODE; s <= G_SEC_DECODE_DENSE; s++) {
        json_t *js = json_object_get(secs, sec_names[s]);
        int of = s == G_SEC_DECODE ? G_SEC_LAYER : G_SEC_DENSE;
        if (js && (rc = load_section(&L, s, js)))
            goto out;
        if (js && (rc = same_weights(&L, s, of)))
            goto out;
    }
    /* every tensor's element count fits with room for the products formed from it downstream
     * (FLOPs, bytes, times layers), so etk_graph_elems never wraps */
    for (int i = 0; i < g->nt && !rc; i++) {
        int64_t n = 1;
        bool ok = true;
        for (int k = 0; k < g->t[i].nd && ok; k++)
            ok = etk_mul_i64(n, g->dim[g->t[i].dims[k]], &n);
        if (!ok || n > ETK_MAX_TENSOR_ELEMS)
            rc = etk_err(err, ETK_EINVAL,
                         "model %s: tensor %s has %s%.3g elements at batch %" PRId64 " (at most 2^52 = %.3g): "
                         "the dimensions or the batch are too large",
                         m->name, g->t[i].name, ok ? "" : "more than ", ok ? (double)n : 9.22e18, batch,
                         (double)ETK_MAX_TENSOR_ELEMS);
    }
out:
    json_decref(root);
    if (rc) {
        etk_graph_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void etk_graph_free(etk_graph *g)
{
    if (!g)
        return;
    etk_arena_free(g->arena);
    free(g);
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
