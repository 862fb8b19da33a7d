/* test_gen_cp.c — context parallelism (--cp, the all-gather form of Llama 3): the sequence is
 * split over CP ranks, K and V are all-gathered over the CP group before attention and their
 * gradients reduce-scattered back; weights are replicated over CP, so the gradient reduction
 * spans CP x DP. Checked against closed forms (spec/formulas.md: per layer per micro-batch an
 * all-gather of K and V, 2 b s k d_h elements in total), the invariance of the step's model
 * FLOPs (the same tokens, split differently), the activation share, the rank order and
 * groups, the validator and the simulator; impossible plans refused with the reason. */
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

static void test_cp_bytes(void **state)
{
    (void)state;
    struct {
        const char *line;
        uint64_t t, c, kv, m, l;
    } cases[] = {
        /* llama2-7b: 32 KV heads of 128, seq 4096 */
        {"--model llama2-7b --layers 2 --tp 2 --cp 2 --dp 2 --global-batch 4", 2, 2, 32, 2, 2},
        /* llama3-8b: GQA, 8 KV heads of 128, seq 8192 */
        {"--model llama3-8b --layers 3 --tp 4 --cp 4 --global-batch 3", 4, 4, 8, 3, 3},
        {"--model llama3-8b --layers 2 --cp 8 --sp --tp 2 --global-batch 1", 2, 8, 8, 1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        etk_gen_config c;
        etk_gen_summary s;
        summarize(cases[i].line, &c, &s);
        const uint64_t b = 1, sq = (uint64_t)c.model.seq, d = 128, t = cases[i].t, cp = cases[i].c;
        /* the K (and the V) shard of one rank: b (s / c) (k / t) d_h elements of 2 bytes; gathered
         * (all-gather comm_size = the per-rank shard), then 2 b s k d_h / t elements in all */
        uint64_t shard = b * (sq / cp) * (cases[i].kv / t) * d * 2;
        uint64_t n = 2 * cases[i].l * cases[i].m; /* K and V, per layer, per micro-batch */
        const etk_gen_stage *st = &s.stages[0];
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_CP][ETK_COLL_ALL_GATHER], n);
        assert_int_equal(st->coll_bytes[ETK_GEN_GROUP_CP][ETK_COLL_ALL_GATHER], n * shard);
        /* backward: reduce-scatter of dK, dV (comm_size = the full buffer) */
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_CP][ETK_COLL_REDUCE_SCATTER], n);
        assert_int_equal(st->coll_bytes[ETK_GEN_GROUP_CP][ETK_COLL_REDUCE_SCATTER], n * shard * cp);
        etk_gen_summary_free(&s);
    }
}

/* The same global batch with and without CP: the same tokens, so the same model FLOPs (attention
 * s x t splits into (s / c) x t per rank, every other op is per token). Exact up to the rounding
 * of num_ops to integers per node (< 1e-9 relative). The per-rank share is 1/c of the no-CP
 * rank's. Activations kept per micro-batch per layer are 1/c (every saved tensor carries the
 * local sequence; the gathered K and V are counted at their local size, see docs/gen.md). */
static void test_cp_flops_and_memory(void **state)
{
    (void)state;
    etk_gen_config c1, c2;
    etk_gen_summary s1, s2;
    summarize("--model llama3-8b --layers 4 --tp 2 --pp 2 --dp 2 --global-batch 8", &c1, &s1);
    summarize("--model llama3-8b --layers 4 --tp 2 --pp 2 --dp 2 --cp 4 --global-batch 8", &c2, &s2);
    assert_int_equal(c2.n_ranks, 4 * c1.n_ranks);
    assert_int_equal(c2.tokens_per_step, c1.tokens_per_step);
    assert_true(fabs(s2.model_flops / s1.model_flops - 1) < 1e-9);
    assert_true(fabs(4 * s2.stages[0].model_flops / s1.stages[0].model_flops - 1) < 1e-9);
    assert_int_equal(s2.stages[0].act_per_mb_bytes * 4, s1.stages[0].act_per_mb_bytes);
    /* stage 1 with the head: its saved logits (fp32) are per token too */
    assert_int_equal(s2.stages[1].act_per_mb_bytes * 4, s1.stages[1].act_per_mb_bytes);
    /* weights are replicated over CP: the same parameters per rank; the DP reduction spans
     * cp x dp = 8 ranks, so ZeRO-1 shards the optimizer 8 ways */
    assert_int_equal(s2.stages[0].params, s1.stages[0].params);
    assert_int_equal(s2.stages[0].coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE],
                     s1.stages[0].coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE]);
    /* pipeline messages carry the local sequence: b (s / c) h x 2 bytes */
    assert_int_equal(s2.stages[0].send_bytes * 4, s1.stages[0].send_bytes);
    etk_gen_summary_free(&s1);
    etk_gen_summary_free(&s2);
    summarize("--model llama3-8b --layers 4 --dp 2 --cp 4 --global-batch 2 --zero 1", &c2, &s2);
    assert_int_equal(s2.stages[0].optimizer_bytes, s2.stages[0].params * 12 / 8);
    etk_gen_summary_free(&s2);
}

/* Rank order tp,cp,dp,pp (default): rank = tp + T (cp + C (dp + D pp)). CP group of rank 0 =
 * {0, T, 2T, ...}; the DP group of (tp 0, pp 0) holds the C x D ranks of the same weights. */
static void test_cp_ranks_groups(void **state)
{
    (void)state;
    etk_gen_config c;
    etk_error err = {0};
    if (parse("--model llama2-7b --layers 4 --tp 2 --cp 2 --dp 2 --pp 2 --global-batch 4", &c, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(c.n_ranks, 16);
    assert_int_equal(etk_gen_rank_cp(&c, 1, 1, 1, 1), 1 + 2 * (1 + 2 * (1 + 2 * 1)));
    uint32_t co[ETK_GEN_N_AXES];
    etk_gen_coords(&c, 11, co); /* 11 = 1 + 2 (1 + 2 (0 + 2 x 1)) */
    assert_int_equal(co[ETK_GEN_TP], 1);
    assert_int_equal(co[ETK_GEN_CP], 1);
    assert_int_equal(co[ETK_GEN_DP], 0);
    assert_int_equal(co[ETK_GEN_PP], 1);
    etk_workload *w;
    assert_int_equal(etk_gen_workload(&c, false, &w, &err), 0);
    /* rank 0's CP and DP collectives */
    const char *cpg = NULL, *dpg = NULL;
    for (size_t i = 0; i < w->ranks[0]->n_nodes; i++) {
        const etk_node *n = &w->ranks[0]->nodes[i];
        if (strstr(n->name, "cp_all_gather"))
            cpg = etk_node_str(n, "pg_name");
        if (strstr(n->name, "dp.grad_bucket"))
            dpg = etk_node_str(n, "pg_name");
    }
    assert_non_null(cpg);
    assert_non_null(dpg);
    const etk_group *g = etk_groups_find(w->groups, cpg);
    assert_non_null(g);
    assert_int_equal(g->n_ranks, 2);
    assert_int_equal(g->ranks[0], 0);
    assert_int_equal(g->ranks[1], 2);
    g = etk_groups_find(w->groups, dpg);
    assert_non_null(g);
    assert_int_equal(g->n_ranks, 4);
    uint32_t want[4] = {0, 2, 4, 6};
    for (int i = 0; i < 4; i++)
        assert_int_equal(g->ranks[i], want[i]);
    etk_workload_free(w);

    /* --rank-order with cp named; without it cp follows tp */
    if (parse("--model llama2-7b --layers 4 --tp 2 --cp 2 --dp 2 --global-batch 2 --rank-order cp,dp,tp,pp", &c, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(etk_gen_rank_cp(&c, 1, 1, 0, 0), 1 + 2 * 2);
    if (parse("--model llama2-7b --layers 4 --tp 2 --cp 2 --dp 2 --global-batch 2 --rank-order dp,tp,pp", &c, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(c.rank_order[0], ETK_GEN_DP);
    assert_int_equal(c.rank_order[1], ETK_GEN_TP);
    assert_int_equal(c.rank_order[2], ETK_GEN_CP);
    assert_int_equal(c.rank_order[3], ETK_GEN_PP);
}

static void test_cp_validate(void **state)
{
    (void)state;
    const char *plans[] = {
        "--model llama2-7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 1000 --seq 64 --tp 2 --cp 2 "
        "--pp 2 --dp 2 --global-batch 8",
        "--model llama2-7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 1000 --seq 64 --tp 2 --cp 4 "
        "--global-batch 2 --sp --recompute selective --zero 3 --dp 2",
        "--model gpt3-175b --layers 4 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 64 --cp 2 --pp 2 --vpp 2 "
        "--global-batch 4 --recompute full --rank-order pp,cp,tp,dp",
    };
    gen_expect_valid(plans, sizeof plans / sizeof plans[0]);
}

static void test_cp_errors(void **state)
{
    (void)state;
    const char *e = plan_error("--model llama2-7b --cp 3");
    assert_non_null(strstr(e, "--cp 3 does not divide --seq 4096"));
    e = plan_error("--model llama2-7b --cp 0");
    assert_non_null(strstr(e, "--cp wants a positive integer"));
    e = plan_error("--model llama2-7b --seq 64 --cp 32 --tp 4 --sp");
    assert_non_null(strstr(e, "--tp 4 does not divide the --seq 64 / --cp 32 = 2 tokens"));
    e = plan_error("--model llama2-7b --rank-order tp,cp,cp,pp");
    assert_non_null(strstr(e, "--rank-order wants the axes tp, dp, pp (and optionally cp)"));
    e = plan_error("--model llama2-7b --rank-order tp,cp,pp");
    assert_non_null(strstr(e, "got 'tp,cp,pp'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cp_bytes),
        cmocka_unit_test(test_cp_flops_and_memory),
        cmocka_unit_test(test_cp_ranks_groups),
        cmocka_unit_test(test_cp_validate),
        cmocka_unit_test(test_cp_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
