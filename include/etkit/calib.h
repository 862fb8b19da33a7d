/* etkit/calib.h — calibration against measured runs (`etkit calibrate`, docs/calibrate.md).
 *
 * A rows file is a JSON array in the format of ../shared/spec/calibration-modern.json: each row a
 * published or one's own measured run with its model (`preset` + `overrides`, or `file`), plan,
 * cluster (`cluster` preset with `gpus` / 8 nodes, an etkit cluster YAML, or `single-<gpu>`: one
 * node holding exactly `gpus` GPUs), and the measured figure (`measured.metric`:
 * tokens_per_s_per_gpu, tflops_per_gpu, out_tokens_per_s_per_gpu or step_s). Each row is built
 * and simulated through the same code as `etkit run` (etkit/run.h), folded.
 *
 * Fitting: named parameters (any etk_compute_set name, and the network's nvlink_GBps, nic_GBps,
 * nvlink_latency_ns, nic_latency_ns) are fitted by a deterministic Nelder–Mead search in log
 * space minimising the mean |log(predicted / measured)| over the rows; leave-one-set-out refits
 * without each set and predicts that set with the parameters it was not fitted on. */
#ifndef ETKIT_CALIB_H
#define ETKIT_CALIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "etkit/compute.h"
#include "etkit/gen.h"
#include "etkit/net.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum etk_calib_metric {
    ETK_CALIB_TOKENS_PER_S_PER_GPU = 0,   /* training tokens/s per GPU */
    ETK_CALIB_TFLOPS_PER_GPU = 1,         /* model TFLOP/s per GPU (full s^2 attention) */
    ETK_CALIB_OUT_TOKENS_PER_S_PER_GPU = 2, /* inference: batch x output length / request time / GPUs */
    ETK_CALIB_STEP_S = 3,                 /* training: seconds per iteration */
} etk_calib_metric;
#define ETK_CALIB_N_METRICS 4
const char *etk_calib_metric_name(int m);

typedef struct etk_calib_row {
    uint32_t index;          /* position in the file (0-based) */
    char name[128];
    char set[96];
    char gpu[32];            /* gpu_type as written ("H100") */
    int metric;              /* etk_calib_metric */
    double measured;
    bool expressible;        /* false: listed with `reason` (the file's why_not) */
    bool built;              /* plan and cluster built; else `reason` says why */
    bool by_extra;           /* marked not expressible in the rows file, expressed by the
                                plan-extra file's complete model, plan and cluster */
    char reason[768];
    etk_gen_config cfg;      /* checked plan */
    etk_cluster cluster;     /* sized for the plan, run defaults applied */
    etk_workload *wl;        /* built on first prediction, kept */
} etk_calib_row;

typedef struct etk_calib_rows {
    char path[1024];
    uint32_t n;
    etk_calib_row *rows;
    bool drop_workloads;     /* free each row's workload once it is predicted (one pass, the
                                report: the 48 modern rows' workloads together are ~9 GB);
                                false: kept for the fit's repeated evaluations */
    bool validate_only;      /* loaded by etk_calib_load_with(validate_only): plans checked by
                                etk_gen_validate, without the FLOPs summary */
} etk_calib_rows;

/* Read a rows file. Fails (message naming the file) only when the file cannot be read or is not
 * a JSON array of objects; a row that cannot be built is kept with built = false and a reason
 * "FILE: row I 'NAME': FIELD: what was wanted". Model files (`file`) are looked up as given,
 * relative to the rows file's folder and its parents, then by base name in models_dir (may be
 * NULL). */
int etk_calib_load(const char *path, const char *models_dir, etk_calib_rows **out, etk_error *err);
/* The same with plan options the rows' runs used that their plans do not carry (extra_path may be
 * NULL): a JSON object {"ROW NAME": {"plan": {KEY: VALUE, ...}, "source": "..."}, ...}, each
 * plan key applied after the row's own plan as the row's plan keys are (e.g. the recipe's
 * "recompute_modules"). An entry may also express a row the rows file marks not expressible:
 * {"model": {...}, "cluster": "...", "plan": {the complete plan}, "source": "..."} (model and
 * cluster as in a row; the source must quote the row's own `description`): the row is then
 * predicted with by_extra set. Fails, naming the file and the entry, when the file is not such an
 * object or names a row the rows file does not have. */
int etk_calib_load_extra(const char *path, const char *models_dir, const char *extra_path,
                         etk_calib_rows **out, etk_error *err);
/* The same; with validate_only each row's plan gets every check of etk_gen_check but not the
 * FLOPs-per-step summary it then makes (one emission of the step per stage class, ~97% of a
 * load): rows are read and checked as by etk_calib_load_extra (the same built flags and reasons,
 * except a failure that only the summary finds: those rows fail when predicted), and the summary
 * is made when a row is predicted. For readers of rows files (the fuzz target). */
int etk_calib_load_with(const char *path, const char *models_dir, const char *extra_path, bool validate_only,
                        etk_calib_rows **out, etk_error *err);
void etk_calib_free(etk_calib_rows *r);

/* Parameters to fit or apply: names and values. */
#define ETK_CALIB_MAX_PARAMS 16
typedef struct etk_calib_params {
    uint32_t n;
    char name[ETK_CALIB_MAX_PARAMS][32];
    double value[ETK_CALIB_MAX_PARAMS];
} etk_calib_params;

/* out = base with over's values on top (over's names replace base's, new ones appended; at most
 * ETK_CALIB_MAX_PARAMS, the rest dropped). */
void etk_calib_params_merge(etk_calib_params *out, const etk_calib_params *base,
                            const etk_calib_params *over);
/* Is `name` a parameter calibration can set (compute model or network)? The message lists them. */
int etk_calib_param_check(const char *name, etk_error *err);
/* True for the network parameters (nvlink_GBps, nic_GBps, nvlink_latency_ns, nic_latency_ns). */
bool etk_calib_param_is_net(const char *name);
/* The value a parameter has on a row before fitting (the GPU's compute defaults, the cluster's
 * network). */
int etk_calib_param_default(const etk_calib_row *row, const char *name, double *out, etk_error *err);
/* Apply params to a cluster and compute model (values checked: errors name the parameter). */
int etk_calib_apply(const etk_calib_params *p, etk_cluster *cl, etk_compute_params *cp,
                    etk_error *err);

typedef struct etk_calib_pred {
    double value;            /* predicted, in the row's metric */
    double err_pct;          /* 100 (value - measured) / measured */
    uint64_t step_ns;
    uint64_t ttft_ns;        /* inference */
    double tpot_ns;
    uint64_t mem_peak_bytes, mem_capacity_bytes;
    bool oom;                /* some rank's peak exceeds the GPU's HBM */
} etk_calib_pred;

/* Predict one built row with params applied (p may be NULL: the defaults). */
int etk_calib_predict(etk_calib_row *row, const etk_calib_params *p, etk_calib_pred *out,
                      etk_error *err);

/* Fit. rows[i] with use[i] set take part; start values: p->value (p->name fixed). On return p
 * holds the fitted values; *obj the mean |log(pred / measured)| there; *evals the objective
 * evaluations. Deterministic: fixed start simplex, fixed iteration cap. */
typedef struct etk_calib_fit_opts {
    uint32_t max_evals;      /* 0: 60 x (params + 1) */
    double tol;              /* 0: 1e-6 (objective spread and simplex size in log space) */
    uint32_t jobs;           /* threads predicting rows (0 or 1: one); results do not depend on it */
    const etk_calib_params *fixed; /* values held fixed during the fit (may be NULL) */
    bool *no_effect;         /* out (may be NULL), [params]: moving the parameter x1.25 from its
                                start changed no prediction (a parameter the model ignores) */
    double *start_obj;       /* out (may be NULL): the objective at the start values */
    bool *converged;         /* out (may be NULL): the search stopped on the tolerance (a
                                restart gained nothing), not on max_evals */
} etk_calib_fit_opts;
int etk_calib_fit(etk_calib_rows *rows, const bool *use, etk_calib_params *p,
                  const etk_calib_fit_opts *o, double *obj, uint32_t *evals, etk_error *err);

/* ---------- reports ---------- */
typedef struct etk_calib_eval {
    bool ok;                 /* predicted (else error says why) */
    etk_calib_pred pred;
    double wall_s;           /* time the prediction took (building the workload included) */
    char error[768];
} etk_calib_eval;
/* Predict every row with use[i] (use NULL: all) under p (NULL: defaults); rows not expressible,
 * not built or not used get ok = false with the reason. Returns the number of built, used rows
 * whose prediction failed. */
uint32_t etk_calib_eval_rows(etk_calib_rows *rows, const bool *use, const etk_calib_params *p,
                             uint32_t jobs, etk_calib_eval *out);
/* The report: a table of rows with one error column per evaluation (labels[i], e.g. "default",
 * "fitted", "held-out"), the rows not predicted with the reason, then mean and worst |error| per
 * set, per GPU and overall for each evaluation. use: rows shown (NULL: all). */
void etk_calib_print_text(const etk_calib_rows *rows, const bool *use, uint32_t n_eval,
                          const char *const *labels, const etk_calib_eval *const *evals, FILE *f);
/* The same as one JSON object (rows with every evaluation, the summaries); params (may be NULL)
 * adds "params": {name: value}. */
int etk_calib_print_json(const etk_calib_rows *rows, const bool *use, uint32_t n_eval,
                         const char *const *labels, const etk_calib_eval *const *evals,
                         const etk_calib_params *params, FILE *f);

/* Leave-one-set-out: for each set among the rows with use[i], fit start's parameters on the
 * other sets and predict the set's rows with them (held[i]; rows not used: ok = false). sets[]
 * gets each set's fit (at most cap, *n_sets of them). A set that is the only one, or whose fit
 * fails on a refused value, is reported in held[] with the reason. */
typedef struct etk_calib_loso_set {
    char set[96];
    bool fitted;
    etk_calib_params p;      /* fitted without the set */
    double obj;              /* the objective on the other sets' rows at p */
    double start_obj;        /* the same at start: obj <= start_obj (the search keeps its best) */
    bool converged;          /* the fit stopped on the tolerance, not on the evaluation cap */
    uint32_t evals;
} etk_calib_loso_set;
int etk_calib_loso(etk_calib_rows *rows, const bool *use, const etk_calib_params *start,
                   const etk_calib_fit_opts *o, etk_calib_eval *held, etk_calib_loso_set *sets,
                   uint32_t cap, uint32_t *n_sets, etk_error *err);

/* Write a GPU YAML (presets/gpus format) of gpu with the fitted compute parameters in its
 * `compute:` mapping (and network parameters as a comment), atomically. header: comment lines
 * (may be NULL). */
int etk_calib_write_gpu_yaml(const char *path, const etk_gpu *gpu, const etk_calib_params *p,
                             const char *header, etk_error *err);

#ifdef __cplusplus
}
#endif
#endif
