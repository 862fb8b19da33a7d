/* gen.c — the entry points of trace synthesis (etk_gen_summarize, etk_gen_write_stats,
 * etk_gen_workload), dispatching to training (stage.c, summary.c, emit.c) or inference
 * (infer.c); train.h has the module map. Training: from a checked plan (check.c) and the
 * lowered sections (lower.c) to Chakra nodes. A pipeline stage is a rank class: its node sequence (micro-batches laid out by
 * the GPipe or 1F1B schedule as control dependencies, pipeline send/recv, the bucketed DP
 * gradient reduction after the last micro-batch's backward, the optimizer step) is produced by
 * one emitter that only binds communicator groups and peers from the rank's coordinates. The
 * same emitter feeds the summary (one representative per stage, no traces), the in-memory
 * workload and the per-rank file writer, so all three agree by construction. */
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
#include "gen/train.h"

int etk_gen_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err)
{
    if (cfg->mode == ETK_GEN_MODE_INFERENCE)
        return etk_gen_infer_summarize(cfg, out, err);
    return gen_train_summarize(cfg, out, err);
}

static int train_emit(void *ctx, uint32_t stage, uint32_t tp, uint32_t cp, uint32_t dp, etk_trace *t, etk_error *err)
{
    return gen_emit_stage(ctx, stage, tp, cp, dp, gen_put_trace, t, NULL, err);
}

/* the representative of stage `stage` streamed into the file writer (writer.c) */
static int train_stream(void *ctx, uint32_t stage, put_fn put, void *u, etk_error *err)
{
    return gen_emit_stage(ctx, stage, 0, 0, 0, put, u, NULL, err);
}

int etk_gen_write_stats(const etk_gen_config *cfg, const char *prefix, uint64_t *bytes_out, etk_error *err)
{
    /* the output folder is checked before any work (issue #18: found missing after 28 s) */
    int rc = etk_outset_check(prefix, err);
    if (rc)
        return rc;
    if (cfg->mode == ETK_GEN_MODE_INFERENCE)
        return etk_gen_infer_write(cfg, prefix, bytes_out, err);
    gen G;
    rc = gen_init(&G, cfg, err);
    if (rc)
        return rc;
    rc = gen_write_streamed(cfg, G.p, train_emit, train_stream, &G, prefix, bytes_out, err);
    gen_free(&G);
    return rc;
}

int etk_gen_write(const etk_gen_config *cfg, const char *prefix, etk_error *err)
{
    return etk_gen_write_stats(cfg, prefix, NULL, err);
}

int etk_gen_workload(const etk_gen_config *cfg, bool fold, etk_workload **out, etk_error *err)
{
    *out = NULL;
    if (cfg->mode == ETK_GEN_MODE_INFERENCE)
        return etk_gen_infer_workload(cfg, fold, out, err);
    gen G;
    int rc = gen_init(&G, cfg, err);
    if (rc)
        return rc;
    rc = etk_gen_workload_with(cfg, G.p, train_emit, &G, fold, out, err);
    gen_free(&G);
    return rc;
}
