/* infer.h — inference trace synthesis (infer.c) and the pieces it shares with training: group
 * numbering (groups.c), and the writers of per-rank files / in-memory workloads from a
 * per-stage emitter (writer.c). Private to gen/; the map of gen/ is at the top of train.h. */
#ifndef ETK_GEN_INFER_H
#define ETK_GEN_INFER_H
#include "etkit/gen.h"

/* Emits every node of pipeline stage `stage` for the rank at (tp, cp, dp) into t. */
typedef int (*etk_gen_emit_fn)(void *ctx, uint32_t stage, uint32_t tp, uint32_t cp, uint32_t dp, etk_trace *t,
                               etk_error *err);

/* groups.c: communicator group ids of the rank at (tp, cp, dp, pp) (numbering of gen.h) */
void etk_gen_group_ids(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp,
                       char pg[ETK_GEN_N_GROUP_KINDS][16]);
/* writer.c: etk_gen_workload for any emitter with one rank class per stage (files: train.h's
 * gen_write_streamed) */
int etk_gen_workload_with(const etk_gen_config *cfg, uint32_t n_stages, etk_gen_emit_fn emit, void *ctx, bool fold,
                          etk_workload **out, etk_error *err);

/* --mode inference. Check (check.c; called by etk_gen_check after the checks both modes
 * share), summary, files and workload. */
int etk_gen_infer_check(etk_gen_config *c, etk_error *err);
int etk_gen_infer_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err);
int etk_gen_infer_write(const etk_gen_config *cfg, const char *prefix, uint64_t *bytes_out, etk_error *err);
int etk_gen_infer_workload(const etk_gen_config *cfg, bool fold, etk_workload **out, etk_error *err);
#endif
