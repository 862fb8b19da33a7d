/* plan_priv.h — the plan search's state, shared by assess.c (one row: validity, memory, lower
 * bound, simulation), search.c (order, branch and bound, threads) and report.c. */
#ifndef ETK_PLAN_PRIV_H
#define ETK_PLAN_PRIV_H

#include "etkit/plan.h"

struct etk_plan_search_state {
    etk_plan_space sp;
    etk_plan_job *jobs;
    uint32_t n_jobs;
    etk_plan_opts o;
    etk_plan_row *rows;
    size_t n_rows;
    uint32_t *order;       /* pending rows by (lb_score, job, index) after etk_plan_sort */
    size_t n_order;
    double *job_factor;    /* [n_jobs]: score = step_ns x factor (docs/plan.md "Ranking") */
};

/* etk_plan_config with the summary etk_gen_check made (etk_gen_check_summary; freed by the caller);
 * node_ns (may be NULL): etk_gen_config.comp_node_ns for the summary's per-stage compute_ns */
int plan_config_summary(const etk_plan_space *sp, const etk_plan *p, double (*node_ns)(void *, const etk_node *),
                        void *node_ns_ctx, etk_gen_config *cfg, etk_gen_summary *sum, etk_error *err);
/* score of a step time for a job (lower is better) and the metric it stands for */
double plan_score(const etk_plan_search_state *s, uint32_t job, double step_ns);
/* the ranking metric of a score, in its unit (ms, tokens/s, MFU %, USD per 1M tokens) */
double plan_metric(const etk_plan_search_state *s, double score);
const char *plan_metric_name(int rank_by);
/* "1f1b" | "gpipe" | "zb-h1"; "none" | "selective" | "full" (the gen flags' spellings) */
const char *plan_sched_name(int schedule);
const char *plan_recompute_name(int recompute);

#endif
