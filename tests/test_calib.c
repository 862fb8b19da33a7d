/* test_calib.c — etkit calibrate's library (etkit/calib.h): rows read from the shared format
 * (plan options, cluster sizing, metrics, reasons naming file/row/field), predictions equal to
 * the `etkit run` path, the fit recovering parameters that generated synthetic measurements,
 * byte-identical fitted YAML, and leave-one-set-out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/calib.h"
#include "etkit/run.h"
#include "testutil.h"

/* small rows: a 2-layer Llama-style model on one H100, on 8 (TP 8), and a 4-GPU one-node
 * cluster, sizes chosen so that launch overhead matters on some rows and GEMMs on others */
static const char *rows_json =
    "[\n"
    "{\"set\": \"s1\", \"name\": \"tiny-h512\", \"gpu_type\": \"H100\", \"gpus\": 1,\n"
    " \"cluster\": \"single-h100\", \"model\": {\"preset\": \"llama2-7b\", \"overrides\":\n"
    " {\"layers\": 2, \"hidden\": 512, \"heads\": 8, \"kv_heads\": 8, \"ffn\": 1536, \"vocab\": 8192, \"seq\": 512}},\n"
    " \"plan\": {\"tp\": 1, \"dp\": 1, \"mbs\": 2, \"gbs\": 4, \"seq\": 512},\n"
    " \"measured\": {\"metric\": \"step_s\", \"value\": 1}},\n"
    "{\"set\": \"s1\", \"name\": \"mid-h4096\", \"gpu_type\": \"H100\", \"gpus\": 1,\n"
    " \"cluster\": \"single-h100\", \"model\": {\"preset\": \"llama2-7b\", \"overrides\":\n"
    " {\"layers\": 2, \"hidden\": 4096, \"heads\": 32, \"ffn\": 11008, \"vocab\": 32000, \"seq\": 2048}},\n"
    " \"plan\": {\"tp\": 1, \"dp\": 1, \"mbs\": 1, \"gbs\": 2, \"seq\": 2048, \"cp_comm\": \"ring\", \"cp\": 1},\n"
    " \"measured\": {\"metric\": \"tokens_per_s_per_gpu\", \"value\": 1000}},\n"
    "{\"set\": \"s2\", \"name\": \"tp8-h2048\", \"gpu_type\": \"H100\", \"gpus\": 8,\n"
    " \"cluster\": \"dgx-h100\", \"model\": {\"preset\": \"llama2-7b\", \"overrides\":\n"
    " {\"layers\": 2, \"hidden\": 2048, \"heads\": 16, \"ffn\": 5504, \"vocab\": 32000, \"seq\": 1024}},\n"
    " \"plan\": {\"tp\": 8, \"dp\": 1, \"sp\": true, \"mbs\": 1, \"gbs\": 2, \"seq\": 1024},\n"
    " \"measured\": {\"metric\": \"tflops_per_gpu\", \"value\": 100}},\n"
    "{\"set\": \"s2\", \"name\": \"dp4-h1024\", \"gpu_type\": \"H100\", \"gpus\": 4,\n"
    " \"cluster\": \"dgx-h100\", \"model\": {\"preset\": \"llama2-7b\", \"overrides\":\n"
    " {\"layers\": 2, \"hidden\": 1024, \"heads\": 8, \"ffn\": 2816, \"vocab\": 16000, \"seq\": 1024}},\n"
    " \"plan\": {\"tp\": 1, \"dp\": 4, \"mbs\": 1, \"gbs\": 8, \"seq\": 1024, \"zero\": 1},\n"
    " \"measured\": {\"metric\": \"tokens_per_s_per_gpu\", \"value\": 1000}},\n"
    "{\"set\": \"s3\", \"name\": \"infer-tp2\", \"mode\": \"inference\", \"gpu_type\": \"H100\", \"gpus\": 2,\n"
    " \"cluster\": \"single-h100\", \"model\": {\"preset\": \"llama2-7b\", \"overrides\":\n"
    " {\"layers\": 2, \"hidden\": 1024, \"heads\": 8, \"ffn\": 2816, \"vocab\": 16000}},\n"
    " \"plan\": {\"tp\": 2},\n"
    " \"inference\": {\"batch\": 8, \"prompt\": 256, \"decode_steps\": 7, \"output_len\": 8},\n"
    " \"measured\": {\"metric\": \"out_tokens_per_s_per_gpu\", \"value\": 1000}},\n"
    "{\"set\": \"s3\", \"name\": \"gone\", \"gpu_type\": \"H100\", \"expressible\": false,\n"
    " \"why_not\": \"hybrid SSM layers\", \"measured\": {\"metric\": \"tokens_per_s_per_gpu\", \"value\": 1}}\n"
    "]\n";

static const char *write_rows(const char *name, const char *text)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static etk_calib_rows *load(const char *text)
{
    etk_calib_rows *rs = NULL;
    etk_error err = {0};
    int rc = etk_calib_load(write_rows("rows.json", text), NULL, &rs, &err);
    if (rc)
        fail_msg("%s", err.msg);
    return rs;
}

static void test_load_rows(void **state)
{
    (void)state;
    etk_calib_rows *rs = load(rows_json);
    assert_int_equal(rs->n, 6);
    for (uint32_t i = 0; i < 5; i++)
        if (!rs->rows[i].built)
            fail_msg("row %u: %s", i, rs->rows[i].reason);
    /* single-h100 with 1 GPU: one NPU; dgx-h100 with 4 GPUs: one node of 4 */
    assert_int_equal(rs->rows[0].cluster.n_npus, 1);
    assert_int_equal(rs->rows[3].cluster.n_npus, 4);
    assert_int_equal(rs->rows[3].cluster.dims[0].size, 4);
    assert_int_equal(rs->rows[2].cluster.n_npus, 8);
    /* plan options: mbs/gbs, sp, zero; cp_comm ignored without CP */
    assert_int_equal(rs->rows[0].cfg.micro_batch, 2);
    assert_int_equal(rs->rows[0].cfg.global_batch, 4);
    assert_true(rs->rows[2].cfg.sp);
    assert_int_equal(rs->rows[3].cfg.zero, 1);
    assert_int_equal(rs->rows[1].cfg.cp, 1);
    /* inference: batch, prompt, decode steps; tokens = batch x output length */
    assert_int_equal(rs->rows[4].cfg.mode, ETK_GEN_MODE_INFERENCE);
    assert_int_equal(rs->rows[4].cfg.prompt_len, 256);
    assert_int_equal(rs->rows[4].cfg.tokens_per_step, 8 * 8);
    assert_int_equal(rs->rows[4].metric, ETK_CALIB_OUT_TOKENS_PER_S_PER_GPU);
    /* not expressible: kept with the file's reason */
    assert_false(rs->rows[5].expressible);
    assert_string_equal(rs->rows[5].reason, "hybrid SSM layers");
    etk_calib_free(rs);
}

/* validate_only: the shared modern rows load with the same built flags, reasons, plans and
 * clusters as a full load, without the FLOPs summary (0, where the full load has the summary's
 * model FLOPs: > 0 on every built row); the summary is made at prediction, so a validated row
 * predicts the same step as a fully loaded one */
static void test_load_validate_only(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/spec/calibration-modern.json", ETK_SHARED_DIR);
    etk_calib_rows *full = NULL, *val = NULL;
    etk_error err = {0};
    if (etk_calib_load_with(path, NULL, NULL, false, &full, &err) ||
        etk_calib_load_with(path, NULL, NULL, true, &val, &err))
        fail_msg("%s", err.msg);
    assert_false(full->validate_only);
    assert_true(val->validate_only);
    assert_int_equal(full->n, val->n);
    assert_true(full->n >= 48);
    uint32_t built = 0, tiny = UINT32_MAX;
    for (uint32_t i = 0; i < full->n; i++) {
        const etk_calib_row *a = &full->rows[i], *b = &val->rows[i];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->built, b->built);
        assert_string_equal(a->reason, b->reason);
        if (!a->built)
            continue;
        built++;
        assert_true(a->cfg.model_flops_per_step > 0);
        assert_true(b->cfg.model_flops_per_step == 0);
        assert_int_equal(a->cfg.tokens_per_step, b->cfg.tokens_per_step);
        assert_int_equal(a->cfg.n_ranks, b->cfg.n_ranks);
        assert_int_equal(a->cfg.micro_batches, b->cfg.micro_batches);
        assert_int_equal(a->cluster.n_npus, b->cluster.n_npus);
        if (a->cfg.n_ranks <= 8 && tiny == UINT32_MAX)
            tiny = i;
    }
    assert_true(built >= 40);
    /* one small row predicted both ways: the same step and value */
    assert_true(tiny != UINT32_MAX);
    etk_calib_pred pa, pb;
    if (etk_calib_predict(&full->rows[tiny], NULL, &pa, &err) || etk_calib_predict(&val->rows[tiny], NULL, &pb, &err))
        fail_msg("%s: %s", full->rows[tiny].name, err.msg);
    assert_true(pa.value == pb.value);
    assert_int_equal(pa.step_ns, pb.step_ns);
    etk_calib_free(full);
    etk_calib_free(val);
}

/* the prediction is etkit run's: step time from the same plan and cluster simulated directly */
static void test_predict_is_run(void **state)
{
    (void)state;
    etk_calib_rows *rs = load(rows_json);
    etk_calib_row *r = &rs->rows[3];
    etk_calib_pred p;
    etk_error err = {0};
    assert_int_equal(etk_calib_predict(r, NULL, &p, &err), 0);
    /* by hand: the preset's cluster sized to one node of 4, the run defaults */
    etk_cluster cl;
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &cl, &err), 0);
    cl.dims[0].size = 4;
    cl.n_npus = 4;
    etk_run_set_precision(&r->cfg, &cl);
    etk_compute_params cp;
    etk_compute_defaults(&cl.gpu, &cp);
    etk_sim_opts o;
    memset(&o, 0, sizeof o);
    o.quiet = true;
    o.compute = &cp;
    etk_run_opts_defaults(&cl, &o);
    etk_workload *wl = NULL;
    assert_int_equal(etk_run_workload(&r->cfg, &cl, &o, &wl, &err), 0);
    etk_sim *s = NULL;
    assert_int_equal(etk_run_simulate(&r->cfg, wl, &cl, &o, &s, &err), 0);
    const etk_sim_result *res = etk_sim_result_get(s);
    assert_int_equal(p.step_ns, res->step_ns);
    /* tokens/s per GPU = global batch x seq / step / GPUs */
    double want = 8.0 * 1024 / (res->step_ns / 1e9) / 4;
    assert_true(fabs(p.value - want) <= 1e-9 * want);
    assert_true(fabs(p.err_pct - 100 * (want - 1000) / 1000) < 1e-9 * want);
    etk_sim_free(s);
    etk_workload_free(wl);
    /* a parameter moves the prediction: GEMMs at half the efficiency take longer */
    etk_calib_params q = {.n = 1};
    snprintf(q.name[0], sizeof q.name[0], "gemm_eff");
    q.value[0] = 0.39;
    etk_calib_pred p2;
    assert_int_equal(etk_calib_predict(r, &q, &p2, &err), 0);
    assert_true(p2.step_ns > p.step_ns);
    /* the report's single pass frees each workload once predicted (all 48 modern rows kept:
     * 9.1 GB peak, freed: 3.0 GB) with the same results; the fit keeps them */
    uint32_t n = rs->n;
    etk_calib_eval *ev = calloc(n, sizeof *ev), *ev2 = calloc(n, sizeof *ev2);
    assert_non_null(ev);
    assert_non_null(ev2);
    etk_calib_eval_rows(rs, NULL, NULL, 1, ev);
    assert_non_null(r->wl);
    rs->drop_workloads = true;
    etk_calib_eval_rows(rs, NULL, NULL, 2, ev2);
    for (uint32_t i = 0; i < n; i++) {
        assert_null(rs->rows[i].wl);
        assert_int_equal(ev[i].ok, ev2[i].ok);
        assert_int_equal(ev[i].pred.step_ns, ev2[i].pred.step_ns);
    }
    assert_int_equal(ev[3].pred.step_ns, p.step_ns);
    free(ev);
    free(ev2);
    etk_calib_free(rs);
}

/* synthetic measurements made with gemm_eff 0.61 and launch_ns 3000; the fit starts elsewhere
 * and must come back to them */
static void make_synthetic(etk_calib_rows *rs, const etk_calib_params *truth)
{
    for (uint32_t i = 0; i < rs->n; i++) {
        if (!rs->rows[i].built)
            continue;
        etk_calib_pred p;
        etk_error err = {0};
        if (etk_calib_predict(&rs->rows[i], truth, &p, &err))
            fail_msg("%s", err.msg);
        rs->rows[i].measured = p.value;
    }
}

static etk_calib_params two(double g, double l)
{
    etk_calib_params p = {.n = 2};
    snprintf(p.name[0], sizeof p.name[0], "gemm_eff");
    snprintf(p.name[1], sizeof p.name[1], "launch_ns");
    p.value[0] = g;
    p.value[1] = l;
    return p;
}

static void test_fit_recovers(void **state)
{
    (void)state;
    etk_calib_rows *rs = load(rows_json);
    etk_calib_params truth = two(0.61, 3000);
    make_synthetic(rs, &truth);
    bool use[6] = {true, true, true, true, true, false};
    etk_calib_params p = two(0.80, 1500);
    etk_calib_fit_opts o = {.max_evals = 400, .tol = 1e-9, .jobs = 2};
    double obj = -1;
    uint32_t evals = 0;
    etk_error err = {0};
    if (etk_calib_fit(rs, use, &p, &o, &obj, &evals, &err))
        fail_msg("%s", err.msg);
    print_message("fitted gemm_eff %.6f launch_ns %.3f, objective %.3g, %u evaluations\n",
                  p.value[0], p.value[1], obj, evals);
    assert_true(fabs(p.value[0] / 0.61 - 1) < 2e-3);
    assert_true(fabs(p.value[1] / 3000 - 1) < 1e-2);
    assert_true(obj < 1e-4);
    assert_true(evals <= 400);
    /* a start outside the parameter's range is refused with the name */
    etk_calib_params bad = two(0, 1500);
    assert_int_not_equal(etk_calib_fit(rs, use, &bad, &o, &obj, &evals, &err), 0);
    assert_non_null(strstr(err.msg, "gemm_eff starts at 0"));
    etk_calib_free(rs);
}

/* a parameter that moves no prediction is reported: the NIC on rows of one node */
static void test_fit_no_effect(void **state)
{
    (void)state;
    etk_calib_rows *rs = load(rows_json);
    etk_calib_params truth = two(0.61, 3000);
    make_synthetic(rs, &truth);
    bool use[6] = {true, true, false, true, true, false}; /* one-node rows */
    etk_calib_params p = {.n = 2};
    snprintf(p.name[0], sizeof p.name[0], "gemm_eff");
    snprintf(p.name[1], sizeof p.name[1], "nic_GBps");
    p.value[0] = 0.78;
    p.value[1] = 50;
    bool flat[2] = {true, false};
    etk_calib_fit_opts o = {.max_evals = 40, .no_effect = flat};
    etk_error err = {0};
    double obj;
    uint32_t evals;
    if (etk_calib_fit(rs, use, &p, &o, &obj, &evals, &err))
        fail_msg("%s", err.msg);
    assert_false(flat[0]);
    assert_true(flat[1]);
    etk_calib_free(rs);
}

/* the same fit twice: the same YAML bytes, whatever the thread count */
static void test_fit_deterministic(void **state)
{
    (void)state;
    char path[2][1024];
    for (int k = 0; k < 2; k++) {
        etk_calib_rows *rs = load(rows_json);
        etk_calib_params truth = two(0.7, 2500);
        make_synthetic(rs, &truth);
        rs->rows[0].measured *= 1.05; /* not an exact fit: the optimum is a compromise */
        bool use[6] = {true, true, true, true, true, false};
        etk_calib_params p = two(0.78, 2000);
        etk_calib_fit_opts o = {.max_evals = 60, .jobs = k ? 3 : 1};
        etk_error err = {0};
        double obj;
        uint32_t evals;
        if (etk_calib_fit(rs, use, &p, &o, &obj, &evals, &err))
            fail_msg("%s", err.msg);
        snprintf(path[k], sizeof path[k], "%s/fit%d.yaml", tu_tmpdir(), k);
        assert_int_equal(etk_calib_write_gpu_yaml(path[k], &rs->rows[0].cluster.gpu, &p,
                                                  "test fit", &err), 0);
        etk_calib_free(rs);
    }
    size_t la, lb;
    uint8_t *a = tu_read(path[0], &la), *b = tu_read(path[1], &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    /* the preset's own compute: entries first (presets/gpus/h100.yaml), the fitted ones after */
    assert_non_null(strstr((char *)a, "compute:\n  fp8_gemm_eff: "));
    assert_non_null(strstr((char *)a, "\n  gemm_eff: "));
    assert_non_null(strstr((char *)a, "\n  launch_ns: "));
    assert_non_null(strstr((char *)a, "name: H100-SXM\n"));
    free(a);
    free(b);
}

/* leave-one-set-out: with exact synthetic data every held-out set is predicted as well as the
 * fitted ones (the parameters are the same for all sets) */
static void test_loso(void **state)
{
    (void)state;
    etk_calib_rows *rs = load(rows_json);
    etk_calib_params truth = two(0.61, 3000);
    make_synthetic(rs, &truth);
    bool use[6] = {true, true, true, true, true, false};
    etk_calib_params start = two(0.78, 2000);
    etk_calib_fit_opts o = {.max_evals = 300, .tol = 1e-9, .jobs = 2};
    etk_calib_eval held[6];
    etk_calib_loso_set sets[8];
    uint32_t n_sets = 0;
    etk_error err = {0};
    if (etk_calib_loso(rs, use, &start, &o, held, sets, 8, &n_sets, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(n_sets, 3);
    assert_string_equal(sets[0].set, "s1");
    assert_string_equal(sets[2].set, "s3");
    for (uint32_t i = 0; i < 5; i++) {
        if (!held[i].ok)
            fail_msg("row %u: %s", i, held[i].error);
        assert_true(fabs(held[i].pred.err_pct) < 1.0);
    }
    assert_false(held[5].ok);
    etk_calib_free(rs);
}

/* the mean |log(predicted / measured)| of the rows of sets other than `set`, at p: the objective
 * a leave-one-set-out fold minimises, computed from the rows' predictions directly */
static double fold_objective(etk_calib_rows *rs, const bool *use, const char *set,
                             const etk_calib_params *p)
{
    double sum = 0;
    int n = 0;
    for (uint32_t i = 0; i < rs->n; i++) {
        if (!use[i] || !strcmp(rs->rows[i].set, set))
            continue;
        etk_calib_pred pr;
        etk_error err = {0};
        if (etk_calib_predict(&rs->rows[i], p, &pr, &err))
            fail_msg("%s", err.msg);
        sum += fabs(log(pr.value / rs->rows[i].measured));
        n++;
    }
    return sum / n;
}

/* each fold reports its training objective at its start and fitted, and whether its search
 * converged: a fold capped at 6 evaluations from a cold start says so; folds started from the full
 * fit's values converge and never end worse on their rows than the full fit (the warm start
 * etkit calibrate --loso uses) */
static void test_loso_folds(void **state)
{
    (void)state;
    etk_calib_rows *rs = load(rows_json);
    etk_calib_params truth = two(0.61, 3000);
    make_synthetic(rs, &truth);
    rs->rows[0].measured *= 1.05; /* the optimum is a compromise: folds differ */
    bool use[6] = {true, true, true, true, true, false};
    etk_calib_eval held[6];
    etk_calib_loso_set sets[8];
    uint32_t n_sets = 0;
    etk_error err = {0};
    etk_calib_params cold = two(0.78, 2000);
    etk_calib_fit_opts capped = {.max_evals = 6, .jobs = 2};
    if (etk_calib_loso(rs, use, &cold, &capped, held, sets, 8, &n_sets, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(n_sets, 3);
    for (uint32_t k = 0; k < n_sets; k++) {
        assert_true(sets[k].fitted);
        assert_false(sets[k].converged);
        assert_true(sets[k].evals >= 6);
        assert_true(fabs(sets[k].start_obj - fold_objective(rs, use, sets[k].set, &cold)) < 1e-12);
        assert_true(sets[k].obj <= sets[k].start_obj);
        assert_true(fabs(sets[k].obj - fold_objective(rs, use, sets[k].set, &sets[k].p)) < 1e-12);
    }
    /* warm: the full fit first, the folds from its values */
    etk_calib_params full = cold;
    etk_calib_fit_opts fo = {.max_evals = 300, .jobs = 2};
    double obj;
    uint32_t evals;
    bool conv = false;
    fo.converged = &conv;
    if (etk_calib_fit(rs, use, &full, &fo, &obj, &evals, &err))
        fail_msg("%s", err.msg);
    assert_true(conv);
    assert_true(evals < 300);
    fo.converged = NULL;
    if (etk_calib_loso(rs, use, &full, &fo, held, sets, 8, &n_sets, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(n_sets, 3);
    int moved = 0;
    for (uint32_t k = 0; k < n_sets; k++) {
        assert_true(sets[k].converged);
        assert_true(sets[k].evals < 300);
        assert_true(fabs(sets[k].start_obj - fold_objective(rs, use, sets[k].set, &full)) < 1e-12);
        assert_true(sets[k].obj <= sets[k].start_obj);
        moved += sets[k].obj < sets[k].start_obj - 1e-6;
    }
    assert_true(moved >= 1); /* a fold without row 0's set is better off without its compromise */
    etk_calib_free(rs);
}

/* reasons name the file, the row and the field */
static void expect_reason(const char *row, const char *want)
{
    char text[4096];
    snprintf(text, sizeof text, "[%s]", row);
    etk_calib_rows *rs = load(text);
    assert_int_equal(rs->n, 1);
    assert_false(rs->rows[0].built);
    if (!strstr(rs->rows[0].reason, want) || !strstr(rs->rows[0].reason, "rows.json: row 0 "))
        fail_msg("reason '%s' lacks '%s'", rs->rows[0].reason, want);
    etk_calib_free(rs);
}

#define ROW(model, plan, rest)                                                                    \
    "{\"name\": \"r\", \"gpu_type\": \"H100\", \"gpus\": 8, \"cluster\": \"dgx-h100\", "            \
    "\"model\": " model ", \"plan\": " plan ", \"measured\": {\"metric\": \"tokens_per_s_per_gpu\", " \
    "\"value\": 1000}" rest "}"

static void test_bad_rows(void **state)
{
    (void)state;
    expect_reason(ROW("{\"preset\": \"nosuch\"}", "{\"tp\": 8}", ""), "model.preset: ");
    expect_reason(ROW("{\"preset\": \"nosuch\"}", "{\"tp\": 8}", ""), "nosuch");
    expect_reason(ROW("{\"file\": \"nosuch.json\"}", "{\"tp\": 8}", ""), "model.file: 'nosuch.json' not found");
    expect_reason(ROW("{\"preset\": \"llama2-7b\"}", "{\"tp\": 3}", ""), "plan: ");
    expect_reason(ROW("{\"preset\": \"llama2-7b\"}", "{\"tp\": \"x\"}", ""), "plan.tp: ");
    expect_reason(ROW("{\"preset\": \"llama2-7b\"}", "{\"tp\": 8, \"bogus\": 1}", ""), "plan.bogus: not a plan option");
    expect_reason(ROW("{\"preset\": \"llama2-7b\"}", "{\"tp\": 4}", ""), "plan: tp x cp x pp x dp = 4 ranks, but gpus is 8");
    expect_reason(ROW("{\"preset\": \"llama2-7b\", \"overrides\": {\"depth\": 2}}", "{\"tp\": 8}", ""),
                  "model.overrides.depth: unknown dimension");
    expect_reason("{\"name\": \"r\", \"gpus\": 8, \"cluster\": \"dgx-h100\", \"model\": {\"preset\": \"llama2-7b\"}, "
                  "\"plan\": {\"tp\": 8}, \"measured\": {\"metric\": \"furlongs\", \"value\": 1}}",
                  "measured.metric: 'furlongs' is unknown");
    expect_reason("{\"name\": \"r\", \"gpus\": 8, \"cluster\": \"dgx-h100\", \"model\": {\"preset\": \"llama2-7b\"}, "
                  "\"plan\": {\"tp\": 8}, \"measured\": {\"metric\": \"step_s\", \"value\": -1}}",
                  "measured.value: expected a positive number");
    expect_reason("{\"name\": \"r\", \"gpus\": 8, \"cluster\": \"nosuch-cluster\", \"model\": {\"preset\": \"llama2-7b\"}, "
                  "\"plan\": {\"tp\": 8}, \"measured\": {\"metric\": \"step_s\", \"value\": 1}}",
                  "cluster: unknown cluster preset 'nosuch-cluster'");
    expect_reason("{\"name\": \"r\", \"gpus\": 9, \"cluster\": \"single-h100\", \"model\": {\"preset\": \"llama2-7b\"}, "
                  "\"plan\": {\"tp\": 1, \"dp\": 9}, \"measured\": {\"metric\": \"step_s\", \"value\": 1}}",
                  "cluster: single-h100 is one node of at most 8 GPUs");
    /* whole-file errors */
    etk_calib_rows *rs = NULL;
    etk_error err = {0};
    assert_int_not_equal(etk_calib_load(write_rows("bad.json", "[{\"name\": 1,"), NULL, &rs, &err), 0);
    assert_non_null(strstr(err.msg, "bad.json:1:"));
    assert_non_null(strstr(err.msg, "malformed JSON"));
    assert_int_not_equal(etk_calib_load(write_rows("obj.json", "{\"rows\": []}"), NULL, &rs, &err), 0);
    assert_non_null(strstr(err.msg, "obj.json: expected a JSON array of rows"));
    assert_int_not_equal(etk_calib_load("/nonexistent/rows.json", NULL, &rs, &err), 0);
    assert_non_null(strstr(err.msg, "/nonexistent/rows.json"));
    /* parameter names */
    assert_int_equal(etk_calib_param_check("attn_eff", &err), 0);
    assert_int_equal(etk_calib_param_check("nic_GBps", &err), 0);
    assert_int_not_equal(etk_calib_param_check("warp_speed", &err), 0);
    assert_non_null(strstr(err.msg, "'warp_speed' is unknown"));
    assert_non_null(strstr(err.msg, "gemm_eff"));
}

/* network parameters: the NIC bandwidth changes a two-node data-parallel row, not a one-node one */
static void test_net_params(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text, "[{\"name\": \"r\", \"gpu_type\": \"H100\", \"gpus\": 16, \"cluster\": \"dgx-h100\", "
             "\"model\": {\"preset\": \"llama2-7b\", \"overrides\": {\"layers\": 2, \"hidden\": 1024, \"heads\": 8, "
             "\"ffn\": 2816}}, \"plan\": {\"tp\": 1, \"dp\": 16, \"mbs\": 1, \"gbs\": 16, \"seq\": 512}, "
             "\"measured\": {\"metric\": \"step_s\", \"value\": 1}}]");
    etk_calib_rows *rs = load(text);
    if (!rs->rows[0].built)
        fail_msg("%s", rs->rows[0].reason);
    assert_int_equal(rs->rows[0].cluster.n_npus, 16);
    assert_int_equal(rs->rows[0].cluster.dims[1].size, 2);
    double d = 0;
    etk_error err = {0};
    assert_int_equal(etk_calib_param_default(&rs->rows[0], "nic_GBps", &d, &err), 0);
    assert_true(d == 50); /* dgx-h100: 50 GB/s per NIC */
    assert_int_equal(etk_calib_param_default(&rs->rows[0], "nvlink_GBps", &d, &err), 0);
    assert_true(d == 450);
    etk_calib_pred a, b;
    etk_calib_params p = {.n = 1};
    snprintf(p.name[0], sizeof p.name[0], "nic_GBps");
    p.value[0] = 5;
    assert_int_equal(etk_calib_predict(&rs->rows[0], NULL, &a, &err), 0);
    assert_int_equal(etk_calib_predict(&rs->rows[0], &p, &b, &err), 0);
    assert_true(b.step_ns > a.step_ns);
    p.value[0] = -1;
    assert_int_not_equal(etk_calib_predict(&rs->rows[0], &p, &b, &err), 0);
    assert_non_null(strstr(err.msg, "nic_GBps: expected a bandwidth > 0 GB/s"));
    etk_calib_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_rows),      cmocka_unit_test(test_load_validate_only),
        cmocka_unit_test(test_predict_is_run),
        cmocka_unit_test(test_fit_recovers),   cmocka_unit_test(test_fit_no_effect),
        cmocka_unit_test(test_fit_deterministic),
        cmocka_unit_test(test_loso), cmocka_unit_test(test_loso_folds),           cmocka_unit_test(test_bad_rows),
        cmocka_unit_test(test_net_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
