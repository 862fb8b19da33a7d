/* etkit/plan.h — plan search (`etkit plan`, docs/plan.md): enumerate the parallel plans of a
 * model on a cluster, prune the invalid ones (etk_gen_check's message), those whose memory
 * estimate exceeds the GPU's capacity less a margin, and those whose compute-only lower bound
 * cannot reach the top k; simulate the survivors folded (etkit/run.h, the path `etkit run`
 * takes) and rank them.
 *
 *     etk_plan_space sp; etk_plan_space_init(&sp);    (model and fixed flags in sp.base, ...)
 *     etk_plan_job jobs[] = {{cluster, ...}, ...};      (one per cluster x node count)
 *     etk_plan_search(&sp, jobs, n_jobs, &opts, &res, &err);
 *     res.rows[...]: every candidate, simulated or pruned with its reason, in a fixed order
 *
 * The search is deterministic: candidates are ordered by (score lower bound, index), and the
 * set simulated is the shortest prefix of that order after which no candidate can enter the
 * top k, whatever order the workers (threads, MPI processes) finished in (docs/plan.md). */
#ifndef ETKIT_PLAN_H
#define ETKIT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etkit/gen.h"
#include "etkit/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One candidate plan (training: all fields; inference: tp, pp, ep, dp and infer_mb). */
typedef struct etk_plan {
    uint32_t tp, cp, pp, vpp, dp, ep;
    uint32_t first_layers, last_layers; /* layers of the first / last pipeline stage (0: even split;
                                           Meta's one fewer on each end, docs/plan.md) */
    uint32_t micro_batch;  /* training: sequences per micro-batch per DP rank */
    uint32_t infer_mb;     /* inference: pipeline micro-batches the replica's batch is split into */
    int8_t zero;           /* 0..3 (3: FSDP) */
    int8_t recompute;      /* ETK_RECOMPUTE_* */
    uint16_t recompute_stage_layers; /* full recompute of N layers of each pipeline stage only
                              (--recompute-stage-layers; docs/plan.md); 0: every layer */
    int8_t schedule;       /* ETK_SCHED_* */
    bool sp;               /* sequence parallelism: on whenever tp > 1 (Megatron's practice),
                              unless the space says no_sp */
} etk_plan;

/* The search space. 0 (or -1 for zero/recompute) in a fixed field: enumerate it. */
typedef struct etk_plan_space {
    etk_gen_config base;   /* model, seq, precision, attention, mode, prompt/decode, ... (gen flags) */
    uint32_t global_batch; /* training: sequences per step; inference: requests (batch over replicas) */
    uint32_t tp, cp, pp, vpp, dp, ep, micro_batch, infer_mb;
    int zero, recompute;   /* -1: enumerate */
    uint32_t zero_mask;    /* bit z: ZeRO stage z allowed (default 0b1010: 1 and 3) */
    uint32_t sched_mask;   /* bit s: ETK_SCHED_s allowed (default 1f1b and zb-h1) */
    uint32_t recompute_mask; /* bit r: ETK_RECOMPUTE_r allowed (default all three) */
    uint32_t max_tp, max_pp, max_vpp, max_cp, max_ep, max_micro_batch; /* 0: no limit beyond the
                                                                          defaults in docs/plan.md */
    bool tp_across_nodes;  /* allow TP groups larger than a node */
    bool no_uneven_ends;   /* do not search one layer fewer on the first and last stage */
    bool no_partial_recompute; /* do not search --recompute-stage-layers (partial full recompute) */
    bool no_sp;            /* sequence parallelism off with every TP (by default on with TP > 1) */
} etk_plan_space;

void etk_plan_space_init(etk_plan_space *sp);

/* Every candidate for n_gpus GPUs in nodes of gpus_per_node (TP within a node unless
 * tp_across_nodes), in a fixed order; *out malloc'ed. Candidates satisfy the structural
 * constraints (product of the degrees = n_gpus, powers of two where docs/plan.md says, batch
 * divisibility); model constraints are left to etk_gen_check (etk_plan_config). */
int etk_plan_enumerate(const etk_plan_space *sp, uint32_t n_gpus, uint32_t gpus_per_node, etk_plan **out,
                       size_t *n, etk_error *err);
/* The gen configuration of a candidate, checked by etk_gen_check (its message on failure). */
int etk_plan_config(const etk_plan_space *sp, const etk_plan *p, const char *gpu, etk_gen_config *cfg,
                    etk_error *err);
/* The plan as `etkit run` flags ("--tp 8 --pp 4 --dp 32 --sp --micro-batch 1 ..."). */
void etk_plan_flags(const etk_plan_space *sp, const etk_plan *p, char *buf, size_t n);

/* Row status, in the CSV/JSON as text (etk_plan_status_name). */
enum {
    ETK_PLAN_SIMULATED = 0,
    ETK_PLAN_INVALID = 1,   /* etk_gen_check refused it */
    ETK_PLAN_MEMORY = 2,    /* memory estimate over capacity x (1 - margin) */
    ETK_PLAN_BOUND = 3,     /* compute-only lower bound worse than the k-th best simulated */
    ETK_PLAN_FAILED = 4,    /* the simulation failed (reason: its error) */
    ETK_PLAN_DOMINATED = 5, /* the same plan with less recompute fits in memory (reason: which) */
};
const char *etk_plan_status_name(int status);

/* One cluster x node count of a sweep. */
typedef struct etk_plan_job {
    etk_cluster cluster;   /* sized (preset or YAML), run defaults not yet applied */
    const etk_compute_params *compute; /* compute model (NULL: roofline) */
    char label[80];        /* "dgx-h100 x 128 nodes" */
    double gpu_hour_usd;   /* 0: unknown (no cost) */
    uint32_t gpus_per_node;
} etk_plan_job;

typedef struct etk_plan_row {
    uint32_t job;          /* index into the jobs */
    uint32_t index;        /* candidate index within the job (enumeration order) */
    etk_plan plan;
    int32_t status;
    uint64_t lb_ns;        /* compute-only lower bound of the step (0: not computed) */
    uint64_t mem_bytes;    /* memory estimate, peak per GPU (0: not computed) */
    uint64_t step_ns;      /* simulated */
    double mfu, tokens_per_s, usd_per_mtok;
    double score;          /* the ranking key, lower is better; lb_score for pruned rows */
    double lb_score;
    uint32_t rank;         /* 1.. among the simulated rows; 0 otherwise */
    char reason[240];      /* pruned: why */
} etk_plan_row;

enum { ETK_PLAN_RANK_STEP = 0, ETK_PLAN_RANK_TOKENS = 1, ETK_PLAN_RANK_MFU = 2, ETK_PLAN_RANK_COST = 3 };

/* Progress callback: done of total candidates decided, best row so far (NULL: none yet). */
typedef void (*etk_plan_progress_fn)(void *ctx, size_t done, size_t total, const etk_plan_row *best);

typedef struct etk_plan_opts {
    int rank_by;           /* ETK_PLAN_RANK_* */
    uint32_t top;          /* k (default 10): branch and bound keeps the top k exact */
    double memory_margin;  /* fraction of HBM kept free (default 0.1) */
    uint32_t threads;      /* -j (0, 1: one) */
    etk_plan_progress_fn progress;
    void *progress_ctx;
} etk_plan_opts;

typedef struct etk_plan_result {
    etk_plan_row *rows;    /* every candidate of every job, ordered by (job, index) */
    size_t n_rows;
    size_t n_invalid, n_memory, n_bound, n_simulated, n_failed, n_dominated;
    uint32_t *ranked;      /* indices into rows of the simulated rows, best first (n_simulated) */
} etk_plan_result;

void etk_plan_opts_defaults(etk_plan_opts *o);

/* ---- the search in steps (etk_plan_search does all; cli's MPI driver uses the steps) ---- */
typedef struct etk_plan_search_state etk_plan_search_state;
/* Enumerate every job (rows in (job, index) order, all "pending"). */
int etk_plan_begin(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                   etk_plan_search_state **out, etk_error *err);
size_t etk_plan_n_rows(const etk_plan_search_state *s);
etk_plan_row *etk_plan_rows(etk_plan_search_state *s);
/* Phase 1 of one row: configuration, validity, memory, lower bound (thread-safe per row). */
void etk_plan_assess(const etk_plan_search_state *s, etk_plan_row *row);
/* After phase 1 of every row: the order of the rows still pending, by (lb_score, job, index);
 * returns how many there are (the order is etk_plan_order(s)[0..n)). */
size_t etk_plan_sort(etk_plan_search_state *s);
const uint32_t *etk_plan_order(const etk_plan_search_state *s);
/* Phase 2 of one row: simulate it (thread-safe per row). */
void etk_plan_simulate(const etk_plan_search_state *s, etk_plan_row *row);
/* Branch and bound: may position pos of the order still be simulated, given the k-th best
 * score among `done` rows (those simulated so far)? (NaN / infinity: fewer than k known). */
bool etk_plan_worth(const etk_plan_search_state *s, size_t pos, double kth_best);
/* Finish: the deterministic cut (rows past it become ETK_PLAN_BOUND, whatever was simulated),
 * the ranking and the counts. The state keeps ownership of nothing it gave to *res. */
int etk_plan_finish(etk_plan_search_state *s, etk_plan_result *res, etk_error *err);
void etk_plan_state_free(etk_plan_search_state *s);

/* The k-th smallest of the scores of simulated rows (tracking helper for drivers). */
typedef struct etk_plan_topk {
    uint32_t k, n;
    double *v;             /* ascending, n <= k */
} etk_plan_topk;
int etk_plan_topk_init(etk_plan_topk *t, uint32_t k);
void etk_plan_topk_add(etk_plan_topk *t, double score);
double etk_plan_topk_kth(const etk_plan_topk *t); /* INFINITY while n < k */
void etk_plan_topk_free(etk_plan_topk *t);

/* The whole search with o->threads threads. */
int etk_plan_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err);
void etk_plan_result_free(etk_plan_result *r);

/* Reports: the ranked table (top k, with `etkit run` flags), and every row as CSV / JSON. */
void etk_plan_print_table(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs,
                          const etk_plan_opts *o, const etk_plan_result *r, FILE *f);
void etk_plan_print_csv(const etk_plan_space *sp, const etk_plan_job *jobs, const etk_plan_result *r, FILE *f);
int etk_plan_print_json(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                        const etk_plan_result *r, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
