/* test_gen_astra.c — generated traces that ASTRA-sim can run: a COMP node that moves bytes but
 * does no FLOPs (embedding lookup, MoE dispatch) is written with num_ops 1, because ASTRA-sim's
 * roofline computes operational intensity num_ops / tensor_size and then num_ops / perf, and
 * stalls forever on 0 / 0 (../shared/data/astra-sim-cases/README.md). With one FLOP its time is
 * tensor_size / local-mem-bw, the memory-bound time. Checked: every written COMP node with
 * tensor_size > 0 has num_ops > 0, the embedding lookups and MoE dispatches are among them, the
 * stage's FLOP counts leave the added FLOP out, and etkit's simulated step time is the same to
 * the ns whether those nodes hold 1 or 0 (etkit's roofline, its compute model, and the ASTRA-sim
 * compatibility roofline), training and inference. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/compute.h"
#include "etkit/gen.h"
#include "etkit/sim.h"
#include "gen_testlib.h"

/* Mixtral with embeddings (stage 0) and MoE layers (dispatch before the experts), EP over DP. */
#define MOE_PLAN "--model mixtral-8x7b --layers 2 --seq 1024 --tp 2 --pp 2 --dp 2 --ep 2 --sp --global-batch 4"

/* Over every COMP node of every rank: *bad counts tensor_size > 0 with num_ops <= 0, *emb and
 * *disp the minimal (num_ops 1) embedding and dispatch nodes; returns the sum of num_ops. With
 * set_to >= 0, num_ops 1 on a node with bytes is rewritten to set_to (the form before the fix). */
static double scan(etk_workload *w, int64_t set_to, size_t *bad, size_t *emb, size_t *disp, size_t *n_min)
{
    double sum = 0;
    *bad = *emb = *disp = *n_min = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        etk_trace *t = w->ranks[r];
        if (!t)
            continue;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            if (n->type != ETK_NODE_COMP)
                continue;
            int64_t ops = 0;
            uint64_t ts = 0;
            etk_node_i64(n, "num_ops", &ops);
            etk_node_u64(n, "tensor_size", &ts);
            if (ts > 0 && ops <= 0)
                (*bad)++;
            if (ts > 0 && ops == 1) {
                (*n_min)++;
                *emb += strstr(n->name, "embed") != NULL;
                *disp += strstr(n->name, "dispatch") != NULL;
                if (set_to >= 0)
                    ((etk_attr *)etk_node_attr(n, "num_ops"))->v.i = set_to;
            }
            sum += (double)ops;
        }
    }
    return sum;
}

static uint64_t step_ns(const etk_workload *w, const etk_cluster *cl, const etk_compute_params *cp)
{
    etk_sim_opts o = {.compute = cp};
    etk_sim *s = NULL;
    etk_error err = {0};
    if (etk_sim_workload(w, cl, &o, &s, &err))
        fail_msg("simulation: %s", err.msg);
    uint64_t ns = etk_sim_result_get(s)->step_ns;
    etk_sim_free(s);
    return ns;
}

/* The three ways etkit times a COMP node, on one cluster of n GPUs. */
static void steps(const etk_workload *w, uint32_t n, uint64_t out[3])
{
    etk_cluster cl;
    gen_test_cluster(&cl, n);
    out[0] = step_ns(w, &cl, NULL); /* roofline */
    etk_compute_params cp;
    etk_compute_defaults(&cl.gpu, &cp);
    out[1] = step_ns(w, &cl, &cp); /* compute model */
    etk_cluster a = cl;            /* ASTRA-sim compatibility, roofline-enabled */
    a.astra_compat = true;
    a.astra_roofline = true;
    a.astra_splits = 4;
    a.astra_active_chunks = 1;
    a.astra_endpoint_delay_ns = 10;
    a.astra_local_mem_bw_GBps = 2000;
    a.dims[0].bw_Bps = 100.0 * 1073741824.0;
    a.dims[0].latency_ns = 500;
    out[2] = step_ns(w, &a, NULL);
}

static void check_plan(const char *line, bool want_dispatch)
{
    etk_gen_config c;
    cfg_from(&c, line);
    etk_workload *w = NULL;
    etk_error err = {0};
    if (etk_gen_workload(&c, false, &w, &err))
        fail_msg("%s: %s", line, err.msg);
    size_t bad, emb, disp, n_min;
    double sum = scan(w, -1, &bad, &emb, &disp, &n_min);
    if (bad)
        fail_msg("%s: %zu COMP nodes with tensor_size > 0 and num_ops 0", line, bad);
    assert_true(emb > 0);
    if (want_dispatch)
        assert_true(disp > 0);
    /* the step's FLOP count is the sum of num_ops less the one FLOP of each such node */
    etk_gen_summary s;
    if (etk_gen_summarize(&c, &s, &err))
        fail_msg("%s: %s", line, err.msg);
    if (s.step_flops != sum - (double)n_min)
        fail_msg("%s: summary %.0f FLOPs, traces %.0f less %zu", line, s.step_flops, sum, n_min);
    etk_gen_summary_free(&s);
    uint64_t after[3], before[3];
    steps(w, c.n_ranks, after);
    size_t b2, e2, d2, m2;
    scan(w, 0, &b2, &e2, &d2, &m2); /* back to num_ops 0: what was written before */
    assert_int_equal(m2, n_min);
    scan(w, -1, &b2, &e2, &d2, &m2);
    assert_int_equal(b2, n_min); /* they are now the 0/0 nodes ASTRA-sim stalls on */
    steps(w, c.n_ranks, before);
    for (int k = 0; k < 3; k++)
        if (after[k] != before[k])
            fail_msg("%s: step time %d changed: %llu ns with num_ops 1, %llu with 0", line, k,
                     (unsigned long long)after[k], (unsigned long long)before[k]);
    assert_true(after[0] > 0 && after[1] > 0 && after[2] > 0);
    etk_workload_free(w);
}

static void test_train_moe(void **state)
{
    (void)state;
    check_plan(MOE_PLAN, true);
}

static void test_train_dense(void **state)
{
    (void)state;
    check_plan("--model llama3-8b --layers 2 --seq 1024 --tp 2 --pp 2 --dp 2 --global-batch 4", false);
}

static void test_inference(void **state)
{
    (void)state;
    check_plan("--model llama3-8b --layers 2 --mode inference --tp 2", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_moe),
        cmocka_unit_test(test_train_dense),
        cmocka_unit_test(test_inference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
