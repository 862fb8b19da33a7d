/* test_gen_ep.c — expert parallelism (--ep): the experts of each MoE layer are split over EP
 * ranks carved from the data-parallel ones; tokens go to their experts by an all-to-all over the
 * EP group and come back by another (dispatch and combine), in forward and again in backward;
 * expert gradients are reduced over the expert-data-parallel group (the ranks holding the same
 * experts), the other gradients over DP as before. Checked against closed forms
 * (spec/formulas.md: each all-to-all carries b s h k(top-k) elements per rank before capacity
 * factors — here the [e, c, h] buffer with c = ceil(cf b s k / E)), parameter counts, the
 * invariance of the per-rank FLOPs, rank groups, the validator and the simulator. */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen_testlib.h"
#include "etkit/validate.h"

static const char *plan_error(const char *line)
{
    return gen_plan_error(line);
}

/* mixtral-8x7b (h 4096, 8 experts of FFN 14336, top-2), 4 layers, seq 4096, TP 2, PP 2, DP 8,
 * 2 micro-batches of 1 sequence per DP rank. */
static void test_ep_bytes_and_params(void **state)
{
    (void)state;
    const char *base = "--model mixtral-8x7b --layers 4 --seq 4096 --tp 2 --etp 2 --pp 2 --dp 8 --global-batch 16";
    const uint64_t h = 4096, E = 8, f = 14336, t = 2, b = 1, sq = 4096, k = 2, m = 2, lps = 2;
    etk_gen_config c1, c8, c4;
    etk_gen_summary s1, s8, s4;
    char line[512];
    summarize(base, &c1, &s1);
    snprintf(line, sizeof line, "%s --ep 8", base);
    summarize(line, &c8, &s8);
    snprintf(line, sizeof line, "%s --ep 4", base);
    summarize(line, &c4, &s4);
    assert_int_equal(c8.n_ranks, c1.n_ranks); /* EP is carved from DP: no more ranks */
    /* capacity factor 1: c = b s k / E tokens per expert; the [E, c, h] buffer = b s k h */
    uint64_t a2a = E * (b * sq * k / E) * h * 2;
    assert_int_equal(a2a, b * sq * h * k * 2);
    for (uint32_t st = 0; st < 2; st++) {
        const etk_gen_stage *x = &s8.stages[st];
        /* dispatch + combine, forward + backward: 4 per MoE layer per micro-batch */
        assert_int_equal(x->coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * lps * m);
        assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * lps * m * a2a);
        assert_int_equal(s1.stages[st].coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 0);
        /* expert weights: 3 h f per expert, TP-split along f; a rank holds E / ep of them */
        uint64_t xw = lps * 3 * h * f * E / t;
        assert_int_equal(s1.stages[st].params - x->params, xw - xw / 8);
        assert_int_equal(s1.stages[st].params - s4.stages[st].params, xw - xw / 4);
        /* the same work per rank: expert GEMMs over E / ep experts x ep c tokens each */
        assert_true(fabs(x->model_flops / s1.stages[st].model_flops - 1) < 1e-12);
        /* gradients (fp32): the dense ones all-reduced over DP (8 ranks) as without EP; the
         * expert ones over EDP = dp / ep ranks: none with ep 8 (each rank alone holds its
         * experts), 2 ranks with ep 4 */
        uint64_t dense_grad = s1.stages[st].coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE] - 4 * xw;
        assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE], dense_grad);
        assert_int_equal(x->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_REDUCE], 0);
        assert_int_equal(s4.stages[st].coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE], dense_grad);
        assert_int_equal(s4.stages[st].coll_bytes[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_REDUCE], 4 * xw / 4);
    }
    etk_gen_summary_free(&s1);
    etk_gen_summary_free(&s8);
    etk_gen_summary_free(&s4);

    /* ZeRO-1 with EP 4: optimizer state of dense weights / 8, of expert weights / (8 / 4) */
    summarize("--model mixtral-8x7b --layers 2 --seq 4096 --dp 8 --ep 4 --global-batch 8 --zero 1", &c4, &s4);
    uint64_t xw = 2 * 3 * h * f * E / 4, dense = s4.stages[0].params - xw;
    assert_int_equal(s4.stages[0].optimizer_bytes, dense * 12 / 8 + xw * 12 / 2);
    etk_gen_summary_free(&s4);
}

/* Groups (rank order tp,cp,ep,dp,pp: rank = tp + T (dp + D pp), dp = e + EP x): EP group of rank
 * 0 = the dp 0..EP-1 ranks at tp 0; EDP group of rank 0 = dp 0, EP, 2 EP, ... */
static void test_ep_groups(void **state)
{
    (void)state;
    etk_gen_config c;
    etk_error err = {0};
    if (parse("--model mixtral-8x7b --layers 2 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seq 64 "
              "--tp 2 --etp 2 --dp 8 --ep 4 --global-batch 8", &c, &err))
        fail_msg("%s", err.msg);
    etk_workload *w;
    assert_int_equal(etk_gen_workload(&c, false, &w, &err), 0);
    const char *epg = NULL, *edpg = NULL;
    for (size_t i = 0; i < w->ranks[0]->n_nodes; i++) {
        const etk_node *n = &w->ranks[0]->nodes[i];
        if (strstr(n->name, "ep_all_to_all"))
            epg = etk_node_str(n, "pg_name");
        if (strstr(n->name, "edp.expert_grad_bucket"))
            edpg = etk_node_str(n, "pg_name");
    }
    assert_non_null(epg);
    assert_non_null(edpg);
    const etk_group *g = etk_groups_find(w->groups, epg);
    assert_non_null(g);
    assert_int_equal(g->n_ranks, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(g->ranks[i], 2 * i);
    g = etk_groups_find(w->groups, edpg);
    assert_non_null(g);
    assert_int_equal(g->n_ranks, 2);
    assert_int_equal(g->ranks[0], 0);
    assert_int_equal(g->ranks[1], 8);
    etk_workload_free(w);
}

static void test_ep_validate(void **state)
{
    (void)state;
    const char *plans[] = {
        "--model mixtral-8x7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seq 64 --tp 2 --etp 2 --pp 2 "
        "--dp 4 --ep 2 --global-batch 8",
        "--model mixtral-8x7b --layers 2 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seq 64 --dp 4 --ep 4 "
        "--cp 2 --global-batch 4 --zero 1 --recompute full",
        "--model mixtral-8x7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seq 64 --tp 2 --sp "
        "--pp 2 --vpp 2 --dp 2 --ep 2 --global-batch 4 --zero 2 --recompute selective --attention unfused",
    };
    gen_expect_valid(plans, sizeof plans / sizeof plans[0]);
}

static void test_ep_errors(void **state)
{
    (void)state;
    const char *e = plan_error("--model mixtral-8x7b --dp 3 --ep 3");
    assert_non_null(strstr(e, "--ep 3 does not divide the 8 experts of model mixtral-8x7b"));
    e = plan_error("--model mixtral-8x7b --dp 2 --ep 4");
    assert_non_null(strstr(e, "--ep 4 does not divide --dp 2"));
    e = plan_error("--model llama2-7b --dp 2 --ep 2");
    assert_non_null(strstr(e, "model llama2-7b has no experts"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ep_bytes_and_params),
        cmocka_unit_test(test_ep_groups),
        cmocka_unit_test(test_ep_validate),
        cmocka_unit_test(test_ep_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
