/* test_gen_dense.c — DeepSeek's first dense layers (first_k_dense_replace = dense_layers = 3 for
 * DeepSeek-V3): the generator lowers layers 0..2 from the block file's dense_layer section (MLA +
 * a dense SwiGLU FFN of size ffn, no router, no all-to-all) and the other 58 as MoE layers. The
 * FLOPs per stage are checked against closed forms written op by op from blocks/deepseek.yaml
 * (GEMMs: forward 2mnk, data and weight gradient 2mnk each; elementwise ops: the declared FLOPs
 * per output element, backward = the declared factor, 2 by default), the parameters per stage
 * against the published dimensions, the expert collectives against the layer kinds, and the
 * stage classes (a pipeline stage holding dense layers is not a copy of its neighbour). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/validate.h"
#include "gen_testlib.h"

/* DeepSeek-V3 (deepseek-v3.yaml): h 7168, n 128 heads, q_lora a 1536, kv_lora c 512, qk_nope p
 * 128, qk_rope j 64, v_head w 128, dense FFN i 18432, E 256 experts of f 2048, top-8, one shared
 * expert (u = 2048), V 129280. */
static const double h = 7168, n = 128, a = 1536, c = 512, p = 128, j = 64, w = 128, i_ = 18432, E = 256, f = 2048,
                    k = 8, u = 2048, V = 129280;

/* Forward + backward FLOPs of one sequence of s tokens (TP 1, capacity factor 1: E * capacity = k s):
 * the attention half (attn_norm .. ffn_norm, identical in both layer kinds), the dense FFN, the
 * MoE FFN, the head. */
static double attn_half(double s)
{
    double q = p + j;
    return s * (12 * h + 6 * h * a + 12 * a + 6 * a * n * p + 6 * a * n * j + 6 * n * j + 6 * h * c + 6 * h * j + 6 * j +
                12 * c + 6 * c * n * p + 6 * c * n * w + 6 * n * w * h + 2 * h + 12 * h) +
           s * s * (6 * n * q + 15 * n + 6 * n * w); /* scores, softmax (5 per element), context */
}
static double dense_ffn(double s) { return s * (18 * h * i_ + 15 * i_ + 2 * h); } /* gate, up, down; swiglu; residual */
static double moe_ffn(double s)
{
    double ec = k * s; /* E experts x capacity k s / E */
    return s * (6 * h * E + 15 * E + 4 * k * h + 18 * h * u + 15 * u + 2 * h + 2 * h) /* router, top-k, combine,
                                                                                       * shared expert, sums */
           + 18 * ec * h * f + 15 * ec * f;                                          /* routed experts, swiglu */
}
static double head(double s) { return s * (12 * h + 6 * h * V + 12 * V); } /* norm, logits, loss (6, bwd 1) */

/* 3 dense + 58 MoE layers: per-stage model FLOPs (stage 0 = embedding + the 3 dense layers, stage
 * 1 = the 58 MoE layers + head) and the step's, exact. */
static void test_deepseek_v3_flops(void **state)
{
    (void)state;
    etk_gen_config cfg;
    etk_gen_summary s;
    summarize("--model deepseek-v3 --pp 2 --first-stage-layers 3 --global-batch 2", &cfg, &s);
    double sq = 4096, m = 2;
    assert_int_equal(cfg.model.dense_layers, 3);
    double st0 = m * (sq * h /* embedding backward: scatter-add */ + 3 * (attn_half(sq) + dense_ffn(sq)));
    double st1 = m * (58 * (attn_half(sq) + moe_ffn(sq)) + head(sq));
    assert_true(fabs(s.stages[0].model_flops / st0 - 1) < 1e-12);
    assert_true(fabs(s.stages[1].model_flops / st1 - 1) < 1e-12);
    assert_true(fabs(s.model_flops / (st0 + st1) - 1) < 1e-12);
    /* all 61 layers as MoE layers (what the generator did before): a different stage 0 */
    assert_true(fabs(3 * (attn_half(sq) + moe_ffn(sq)) / (3 * (attn_half(sq) + dense_ffn(sq))) - 1) > 1e-3);
    etk_gen_summary_free(&s);
}

/* Parameters per stage (TP 2, EP 8 carved from DP 8): replicated per layer R = attention and FFN
 * norms, the MLA down-projections and their norms; split over TP the per-head projections S and
 * the FFNs; the router replicated; routed experts E / 8 per rank. The dense layers have no
 * expert and no router, so no all-to-all and no expert-DP bucket on stage 0. */
static void test_deepseek_v3_params_collectives(void **state)
{
    (void)state;
    etk_gen_config cfg;
    etk_gen_summary s;
    summarize("--model deepseek-v3 --pp 2 --first-stage-layers 3 --tp 2 --etp 2 --dp 16 --ep 8 --global-batch 16", &cfg, &s);
    uint64_t H = 7168, N = 128, A = 1536, C = 512, P = 128, J = 64, W = 128, I = 18432, X = 256, F = 2048, U = 2048,
             VV = 129280, t = 2, e = 8;
    uint64_t R = H * A + A + H * (C + J) + C + 2 * H;
    uint64_t S = A * N * (P + J) + C * N * (P + W) + N * W * H;
    uint64_t dense = R + (S + 3 * H * I) / t;
    uint64_t moe = R + S / t + H * X + (X / e) * 3 * H * F / t + 3 * H * U / t;
    assert_int_equal(s.stages[0].params, VV * H / t + 3 * dense);
    assert_int_equal(s.stages[1].params, 58 * moe + H + VV * H / t);
    /* one micro-batch: 4 all-to-alls per MoE layer, none in the dense layers */
    assert_int_equal(s.micro_batches, 1);
    assert_int_equal(s.stages[0].coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 0);
    assert_int_equal(s.stages[1].coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * 58);
    for (int ty = 0; ty < ETK_COLL_TYPE_COUNT; ty++)
        assert_int_equal(s.stages[0].coll_count[ETK_GEN_GROUP_EDP][ty], 0);
    assert_true(s.stages[1].coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_REDUCE] > 0);
    /* the DP gradient reduction of stage 0 moves all of its parameters (fp32 gradients) */
    assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE], s.stages[0].params * 4);
    etk_gen_summary_free(&s);
}

/* Stage classes: 8 layers (3 dense) over 4 stages of 2: stage 1 holds one dense and one MoE
 * layer, stage 2 two MoE layers; stage 2 is not a copy of stage 1 (the summary counts middle
 * stages with equal layer counts once only when they hold the same layer kinds). Closed form:
 * stage 1 = D + M, stage 2 = 2 M, with D and M the layers above. The workload validates. */
static void test_deepseek_stage_classes(void **state)
{
    (void)state;
    etk_gen_config cfg;
    etk_gen_summary s;
    const char *line = "--model deepseek-v3 --layers 8 --seq 256 --pp 4 --global-batch 1 --vocab 1024";
    summarize(line, &cfg, &s);
    double sq = 256, D = attn_half(sq) + dense_ffn(sq), M = attn_half(sq) + moe_ffn(sq);
    assert_true(fabs(s.stages[0].model_flops / (sq * h + 2 * D) - 1) < 1e-12);
    assert_true(fabs(s.stages[1].model_flops / (D + M) - 1) < 1e-12);
    assert_true(fabs(s.stages[2].model_flops / (2 * M) - 1) < 1e-12);
    etk_gen_summary_free(&s);
    etk_gen_config c2;
    etk_error err = {0};
    if (parse("--model deepseek-v3 --layers 4 --hidden 512 --heads 4 --kv-heads 4 --ffn 1024 --seq 64 --vocab 1024 "
              "--pp 2 --tp 2 --etp 2 --dp 4 --ep 2 --global-batch 8 --recompute full",
              &c2, &err))
        fail_msg("%s", err.msg);
    etk_workload *wl;
    if (etk_gen_workload(&c2, false, &wl, &err))
        fail_msg("%s", err.msg);
    /* rank 0 (stage 0: layers 0, 1, both dense): no router, no all-to-all */
    const etk_trace *t0 = wl->ranks[0];
    for (size_t x = 0; x < t0->n_nodes; x++) {
        assert_null(strstr(t0->nodes[x].name, "router"));
        assert_null(strstr(t0->nodes[x].name, "all_to_all"));
    }
    gen_expect_clean(wl, "deepseek-v3 dense + MoE stages");
    etk_workload_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_v3_flops),
        cmocka_unit_test(test_deepseek_v3_params_collectives),
        cmocka_unit_test(test_deepseek_stage_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
