/* fuzz_model.c — libFuzzer target over the model-file path of `etkit gen --model-file`: YAML
 * parsing (model/yamljson.c), field checks, and, for inputs that parse, the block graph, the
 * parameter count and a one-micro-batch summary with a small plan. Must never crash, leak or
 * accept what it then cannot lower. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/model.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    etk_model m;
    etk_error err;
    if (etk_model_parse((const char *)data, size, "fuzz.yaml", &m, &err))
        return 0;
    /* keep the work bounded: tiny dims only */
    if (m.layers > 8 || m.hidden > 512 || m.ffn > 2048 || m.vocab > 4096 || m.seq > 256 || m.heads > 64)
        return 0;
    uint64_t p;
    if (etk_model_params(&m, &p, &err))
        return 0;
    etk_gen_config c;
    etk_gen_config_init(&c);
    c.model = m;
    c.model_set = true;
    c.pp = m.layers >= 2 ? 2 : 1;
    c.tp = (m.heads % 2 == 0 && m.kv_heads % 2 == 0 && m.ffn % 2 == 0 && m.vocab % 2 == 0) ? 2 : 1;
    c.global_batch = 2;
    etk_gen_summary s; /* the check's own summary (one emission, not two) */
    if (etk_gen_check_summary(&c, &s, &err))
        return 0;
    FUZZ_CHECK(s.n_stages == c.pp && s.tokens_per_step == c.tokens_per_step && s.model_flops == c.model_flops_per_step,
               "summary disagrees with the checked plan: %u stages for pp %u", s.n_stages, c.pp);
    etk_gen_summary_free(&s);
    return 0;
}
