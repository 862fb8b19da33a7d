/* test_fidelity.c — the calibration rows of ../shared/spec/calibration.md that simulate quickly
 * (22B and 175B, full recompute and SP + selective; Korthikanti et al. 2022 on Selene, DGX A100)
 * through the library as `etkit run` does, with the compute model's defaults. Asserts the error
 * each row achieves (bench/RESULTS.md "## Fidelity": the goals are mean |error| <= 3% and
 * worst <= 6% over all eight rows; etkit reaches 2.11% / 3.04%), so a change to the model, the
 * generator or the network that moves a prediction shows up here. bench/fidelity.sh runs all
 * eight rows (530B and 1T take ~20 s each). Those runs executed unfused attention (Megatron-LM
 * 2022), so the plan asks for --attention unfused (the generator's default is flash). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "etkit/compute.h"
#include "etkit/gen.h"
#include "etkit/sim.h"
#include "testutil.h"

typedef struct row {
    const char *model, *pp, *mb, *gb, *vpp;
    bool selective;
    double measured_s;  /* calibration.md */
    double expected_err; /* what etkit predicts now, % (bench/RESULTS.md) */
} row;

static double predict(const row *r)
{
    etk_gen_config cfg;
    etk_gen_config_init(&cfg);
    etk_error err = {0};
    const char *kv[][2] = {{"model", r->model}, {"tp", "8"}, {"pp", r->pp}, {"dp", "1"},
                           {"micro-batch", r->mb}, {"global-batch", r->gb}, {"vpp", r->vpp},
                           {"seq", "2048"}, {"precision", "fp16"},
                           {"recompute", r->selective ? "selective" : "full"},
                           {"attention", "unfused"}}; /* Megatron-LM 2022 ran unfused attention */
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (etk_gen_set(&cfg, kv[i][0], kv[i][1], &err) != 0)
            fail_msg("%s", err.msg);
    if (r->selective && etk_gen_set(&cfg, "sp", NULL, &err) != 0)
        fail_msg("%s", err.msg);
    if (etk_gen_check(&cfg, &err) != 0)
        fail_msg("%s", err.msg);
    etk_cluster c;
    if (etk_cluster_preset("dgx-a100", cfg.n_ranks / 8, &c, &err) != 0)
        fail_msg("%s", err.msg);
    c.precision = ETK_PREC_FP16;
    etk_compute_params p;
    etk_compute_defaults(&c.gpu, &p);
    etk_workload *w = NULL;
    if (etk_gen_workload(&cfg, true, &w, &err) != 0)
        fail_msg("%s", err.msg);
    etk_sim_opts o = {.comm_streams = 2, .compute = &p, .model_flops = cfg.model_flops_per_step};
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &c, &o, &s, &err) != 0)
        fail_msg("%s", err.msg);
    double t = etk_sim_result_get(s)->step_ns / 1e9;
    etk_sim_free(s);
    etk_workload_free(w);
    return t;
}

static void calibration_rows(void **st)
{
    (void)st;
    static const row rows[] = {
        {"megatron-22b", "1", "4", "4", "1", false, 1.42, +1.38},
        {"megatron-22b", "1", "4", "4", "1", true, 1.10, +1.98},
        {"gpt3-175b", "8", "1", "64", "3", false, 18.13, -2.84},
        {"gpt3-175b", "8", "1", "64", "3", true, 13.75, -2.99},
    };
    double sum = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row *r = &rows[i];
        double t = predict(r);
        double e = 100 * (t - r->measured_s) / r->measured_s;
        printf("%s %s: predicted %.3f s, measured %.2f s, error %+.2f%%\n", r->model,
               r->selective ? "sp+selective" : "full", t, r->measured_s, e);
        if (fabs(e - r->expected_err) > 0.1) /* the figure RESULTS.md reports */
            fail_msg("%s: error %+.2f%%, RESULTS.md says %+.2f%%", r->model, e, r->expected_err);
        assert_true(fabs(e) <= 6.0); /* the bound on the worst row */
        sum += fabs(e);
    }
    assert_true(sum / 4 <= 2.4); /* mean of these four 2.30%; of all eight 2.11% */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calibration_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
