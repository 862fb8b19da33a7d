/* test_gen_zero.c — sharded data parallelism (--zero 2, --zero 3 / --fsdp) checked against closed
 * forms: with Psi the parameter bytes a DP rank reduces, plain DP and ZeRO-1/2 move 2 Psi (d-1)/d
 * per GPU per step on the wire (ring all-reduce = reduce-scatter + all-gather), ZeRO-3 moves
 * 3 Psi (d-1)/d per micro-batch (parameter all-gather in forward and again in backward, gradient
 * reduce-scatter: ZeRO paper, Rajbhandari et al. 2020, section 7); the memory terms of
 * spec/formulas.md; node structure (one gather per section instance and pass, prefetch as control
 * dependencies); validator-clean workloads; refused plans. */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen_testlib.h"
#include "etkit/model.h"
#include "etkit/validate.h"

static const char *plan_error(const char *line)
{
    return gen_plan_error(line);
}

/* Bytes one rank puts on the wire per step for its DP collectives, ring algorithms over d ranks:
 * all-reduce of N bytes 2 (d-1)/d N, reduce-scatter of N bytes (d-1)/d N, all-gather of a shard of
 * S bytes (d-1) S. comm_size follows the ASTRA-sim convention (gen.h). Returned times d so it is
 * an integer. */
static uint64_t dp_wire_x_d(const etk_gen_stage *st, uint64_t d)
{
    const uint64_t *b = st->coll_bytes[ETK_GEN_GROUP_DP];
    return 2 * (d - 1) * b[ETK_COLL_ALL_REDUCE] + (d - 1) * b[ETK_COLL_REDUCE_SCATTER] +
           d * (d - 1) * b[ETK_COLL_ALL_GATHER];
}

static void test_zero_volumes(void **state)
{
    (void)state;
    /* llama2-7b with 2 layers, one stage, dp 4, 16-bit gradients so that parameters and gradients
     * have the same bytes: Psi = 2 P with P the closed-form parameter count (test_model checks it
     * against formulas.md); every weight has a multiple of 4096 elements, so no shard padding. */
    const char *base = "--model llama2-7b --layers 2 --dp 4 --grad-precision bf16 --global-batch 4";
    const uint64_t d = 4;
    etk_gen_config c;
    etk_gen_summary s;
    etk_error err = {0};
    char line[512];
    uint64_t P = 0;
    for (int z = 0; z <= 3; z++) {
        snprintf(line, sizeof line, "%s --zero %d", base, z);
        cfg_from(&c, line);
        if (!P)
            assert_int_equal(etk_model_params(&c.model, &P, &err), 0);
        /* h = 4096, f = 11008, V = 32000, MHA: per layer 4 h^2 + 3 h f + 2 h; + 2 V h + h */
        assert_int_equal(P, 2 * (4ull * 4096 * 4096 + 3ull * 4096 * 11008 + 2 * 4096) + 2ull * 32000 * 4096 + 4096);
        assert_int_equal(etk_gen_summarize(&c, &s, &err), 0);
        assert_int_equal(s.micro_batches, 1);
        const uint64_t psi = 2 * P;
        uint64_t want = (z == 3 ? 3 : 2) * psi * (d - 1);
        assert_int_equal(dp_wire_x_d(&s.stages[0], d), want);
        const uint64_t *cnt = s.stages[0].coll_count[ETK_GEN_GROUP_DP];
        if (z == 0) {
            assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE], psi);
            assert_int_equal(cnt[ETK_COLL_REDUCE_SCATTER] + cnt[ETK_COLL_ALL_GATHER], 0);
        } else if (z < 3) {
            /* reduce-scatter of the buckets, all-gather of the updated parameter shards */
            assert_int_equal(cnt[ETK_COLL_ALL_REDUCE], 0);
            assert_int_equal(cnt[ETK_COLL_REDUCE_SCATTER], cnt[ETK_COLL_ALL_GATHER]);
        } else {
            /* sections: embedding, 2 layers, head; each gathered in forward and backward and its
             * gradient reduce-scattered once per micro-batch; no gather after the optimizer */
            assert_int_equal(cnt[ETK_COLL_ALL_GATHER], 2 * 4);
            assert_int_equal(cnt[ETK_COLL_REDUCE_SCATTER], 4);
            assert_int_equal(cnt[ETK_COLL_ALL_REDUCE], 0);
        }
        /* memory, bytes per parameter with bf16 params and bf16 grads (formulas.md):
         * ZeRO-0 2 + 2 + 12 + 4 (fp32 gradient copy) = 20; ZeRO-1 4 + 16/d; ZeRO-2 2 + 18/d;
         * ZeRO-3 20/d */
        const etk_gen_stage *st = &s.stages[0];
        uint64_t mem = st->weight_bytes + st->grad_bytes + st->optimizer_bytes + st->optimizer_step_bytes;
        /* the fp32 gradient copy (4 bytes, /d when sharded) is held only during the step */
        assert_int_equal(st->optimizer_step_bytes, z == 0 ? 4 * P : 4 * P / d);
        uint64_t want_mem = z == 0 ? 20 * P : z == 1 ? 4 * P + 16 * P / d : z == 2 ? 2 * P + 18 * P / d : 20 * P / d;
        assert_true(P % d == 0);
        assert_int_equal(mem, want_mem);
        /* ZeRO-3 holds the gathered parameters of two layers (computing + prefetched) */
        uint64_t layer = 4ull * 4096 * 4096 + 3ull * 4096 * 11008 + 2 * 4096;
        assert_int_equal(st->comm_buffer_bytes, z == 3 ? 2 * 2 * layer : 0);
        etk_gen_summary_free(&s);
    }

    /* ZeRO-3 with m micro-batches: 3 Psi (d-1)/d per micro-batch (each micro-batch gathers the
     * parameters twice and reduce-scatters its gradients); ZeRO-1/2 reduce once per step. */
    cfg_from(&c, "--model llama2-7b --layers 2 --dp 4 --grad-precision bf16 --global-batch 12 --zero 3");
    assert_int_equal(c.micro_batches, 3);
    assert_int_equal(etk_gen_summarize(&c, &s, &err), 0);
    assert_int_equal(dp_wire_x_d(&s.stages[0], d), 3 * 3 * 2 * P * (d - 1));
    etk_gen_summary_free(&s);
    cfg_from(&c, "--model llama2-7b --layers 2 --dp 4 --grad-precision bf16 --global-batch 12 --zero 2");
    assert_int_equal(etk_gen_summarize(&c, &s, &err), 0);
    assert_int_equal(dp_wire_x_d(&s.stages[0], d), 2 * 2 * P * (d - 1));
    etk_gen_summary_free(&s);

    /* --fsdp is --zero 3; TP 2 x PP 2: Psi per stage = 2 x the stage's TP shard of parameters
     * (stage 0: embedding V h / t + a layer; stage 1: a layer + final norm + output V h / t).
     * Replicated norms are whole on each TP rank. With fp32 gradients the reduce-scatter moves
     * 4 bytes per parameter, the gathers 2: (2 + 2 + 4) P_s (d-1)/d per micro-batch. */
    cfg_from(&c, "--model llama2-7b --layers 2 --dp 4 --tp 2 --pp 2 --global-batch 8 --fsdp");
    assert_int_equal(c.zero, 3);
    assert_int_equal(etk_gen_summarize(&c, &s, &err), 0);
    const uint64_t t = 2, m = 2;
    uint64_t layer_t = (4ull * 4096 * 4096 + 3ull * 4096 * 11008) / t + 2 * 4096;
    uint64_t p0 = 32000ull * 4096 / t + layer_t, p1 = layer_t + 4096 + 32000ull * 4096 / t;
    assert_int_equal(s.stages[0].params, p0);
    assert_int_equal(s.stages[1].params, p1);
    assert_int_equal(dp_wire_x_d(&s.stages[0], d), m * 8 * p0 * (d - 1));
    assert_int_equal(dp_wire_x_d(&s.stages[1], d), m * 8 * p1 * (d - 1));
    etk_gen_summary_free(&s);
}

/* Structure: every weight-reading node of a section instance depends on that instance's gather;
 * gathers carry no data dependency and control dependencies only on the previous gather and the
 * previous section instance's first node (prefetch one section ahead); the reduce-scatter of a
 * section follows its weight-gradient nodes; no dp.param_bucket all-gather with ZeRO-3. */
/* Bytes one rank puts on the wire per step for the collectives of group kind g (ring algorithms
 * over d ranks, as dp_wire_x_d), times d. */
static uint64_t group_wire_x_d(const etk_gen_stage *st, int g, uint64_t d)
{
    const uint64_t *b = st->coll_bytes[g];
    return 2 * (d - 1) * b[ETK_COLL_ALL_REDUCE] + (d - 1) * b[ETK_COLL_REDUCE_SCATTER] +
           d * (d - 1) * b[ETK_COLL_ALL_GATHER];
}

/* ZeRO-3 with expert parallelism: the expert weights (E / ep experts per rank) are sharded,
 * gathered and their gradients reduce-scattered over the expert-data-parallel group (d_x = dp /
 * ep ranks holding the same experts), the other weights over DP (d ranks). Mixtral 8x7B with 2
 * layers, dp 8, ep 4 (d = 8, d_x = 2), 16-bit gradients, Psi = 2 bytes x parameters:
 *   expert parameters per rank  P_x = 2 layers x (8 / 4) x 3 h f
 *   the others                  P_d = V h (embedding) + 2 (2 h^2 + 2 h (8 x 128) + 2 h + h E) + h + V h
 * each group moves 3 Psi (d - 1) / d per GPU per micro-batch (two gathers, one reduce-scatter);
 * memory 20 bytes per parameter of the shard held: 20 (P_d / d + P_x / d_x). Unfused attention:
 * its hardware FLOPs are the model FLOPs plus the Adam step alone (flash's backward adds the
 * recomputed QK^T, test_gen_flash.c). */
static void test_zero3_ep(void **state)
{
    (void)state;
    const uint64_t h = 4096, f = 14336, E = 8, V = 32000, kv = 8 * 128, d = 8, dx = 2;
    const uint64_t Px = 2 * (E / 4) * 3 * h * f;
    const uint64_t Pd = V * h + 2 * (2 * h * h + 2 * h * kv + 2 * h + h * E) + h + V * h;
    for (uint64_t m = 1; m <= 2; m++) {
        etk_gen_config c;
        etk_gen_summary s;
        char line[256];
        snprintf(line, sizeof line, "--model mixtral-8x7b --layers 2 --dp 8 --ep 4 --zero 3 --grad-precision bf16 "
                 "--attention unfused --global-batch %" PRIu64, 8 * m);
        summarize(line, &c, &s);
        assert_int_equal(s.micro_batches, m);
        const etk_gen_stage *st = &s.stages[0];
        assert_int_equal(st->params, Pd + Px);
        assert_int_equal(group_wire_x_d(st, ETK_GEN_GROUP_DP, d), m * 3 * (2 * Pd) * (d - 1));
        assert_int_equal(group_wire_x_d(st, ETK_GEN_GROUP_EDP, dx), m * 3 * (2 * Px) * (dx - 1));
        /* per micro-batch: 2 gathers x 4 sections over DP, 2 gathers x 2 MoE layers over EDP; a
         * reduce-scatter per section over DP, per MoE layer over EDP */
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_DP][ETK_COLL_ALL_GATHER], m * 2 * 4);
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_GATHER], m * 2 * 2);
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_DP][ETK_COLL_REDUCE_SCATTER], m * 4);
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_REDUCE_SCATTER], m * 2);
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_DP][ETK_COLL_ALL_REDUCE] +
                             st->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_REDUCE],
                         0);
        assert_true(Pd % d == 0 && Px % dx == 0);
        assert_int_equal(st->weight_bytes, 2 * (Pd / d + Px / dx));
        assert_int_equal(st->grad_bytes, 2 * (Pd / d + Px / dx));
        assert_int_equal(st->optimizer_bytes, 12 * (Pd / d + Px / dx));
        assert_int_equal(st->optimizer_step_bytes, 4 * (Pd / d + Px / dx));
        /* the Adam step runs on the shard */
        assert_true(st->flops - st->model_flops == (double)(10 * (Pd / d + Px / dx)));
        etk_gen_summary_free(&s);
    }
    /* ep = dp: one rank per expert set, expert weights not sharded (no EDP collective); the
     * others still over DP */
    etk_gen_config c;
    etk_gen_summary s;
    summarize("--model mixtral-8x7b --layers 2 --dp 4 --ep 4 --zero 3 --grad-precision bf16 --global-batch 4", &c, &s);
    const etk_gen_stage *st = &s.stages[0];
    for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
        assert_int_equal(st->coll_count[ETK_GEN_GROUP_EDP][t], 0);
    const uint64_t Px4 = 2 * (E / 4) * 3 * h * f;
    assert_int_equal(group_wire_x_d(st, ETK_GEN_GROUP_DP, 4), 3 * (2 * Pd) * 3);
    assert_int_equal(st->weight_bytes, 2 * (Pd / 4 + Px4));
    etk_gen_summary_free(&s);
}

static void test_zero3_structure(void **state)
{
    (void)state;
    etk_gen_config c;
    cfg_from(&c, "--model llama2-7b --layers 3 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 "
                 "--dp 2 --global-batch 4 --zero 3");
    etk_workload *w;
    etk_error err = {0};
    assert_int_equal(etk_gen_workload(&c, true, &w, &err), 0);
    const etk_trace *tr = w->ranks[0];
    uint64_t gathers = 0, rs = 0, prev_gather = 0;
    for (size_t i = 0; i < tr->n_nodes; i++) {
        const etk_node *n = &tr->nodes[i];
        assert_null(strstr(n->name, "param_bucket"));
        if (strstr(n->name, "param_all_gather")) {
            gathers++;
            assert_int_equal(n->type, ETK_NODE_COLL);
            assert_int_equal(n->n_data_deps, 0);
            if (prev_gather) {
                bool found = false;
                for (uint32_t k = 0; k < n->n_ctrl_deps; k++)
                    found |= n->ctrl_deps[k] == prev_gather;
                assert_true(found);
            }
            assert_true(n->n_ctrl_deps <= 3);
            prev_gather = n->id;
        }
        if (strstr(n->name, ".wgrad")) {
            /* depends on the latest backward gather */
            bool found = false;
            for (uint32_t k = 0; k < n->n_data_deps; k++)
                found |= n->data_deps[k] == prev_gather;
            assert_true(found);
        }
        if (strstr(n->name, "grad_reduce_scatter")) {
            rs++;
            assert_true(n->n_data_deps > 0);
            int64_t sz = 0;
            assert_true(etk_node_i64(n, "comm_size", &sz));
            assert_true(sz > 0);
        }
    }
    /* 2 micro-batches x 5 sections: gathers forward + backward, one reduce-scatter each */
    assert_int_equal(gathers, 2 * 2 * 5);
    assert_int_equal(rs, 2 * 5);
    etk_workload_free(w);
}

static void test_zero_validate(void **state)
{
    (void)state;
    const char *plans[] = {
        "--model llama2-7b --layers 4 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 --tp 2 --pp 2 --dp 2 "
        "--global-batch 8 --zero 2 --sp",
        "--model llama2-7b --layers 4 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 --tp 2 --pp 2 --dp 3 "
        "--global-batch 12 --zero 3 --sp --recompute full",
        "--model llama2-7b --layers 4 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 --pp 2 --vpp 2 --dp 2 "
        "--global-batch 8 --fsdp --rank-order dp,tp,pp",
        /* tied output layer on one stage: the head gathers the table again; its gradient joins
         * the embedding's reduce-scatter */
        "--model gpt3-175b --layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 64 --dp 2 "
        "--global-batch 4 --zero 3",
        /* expert parameters over EDP, the others over DP; ep = dp (EDP of one rank) too */
        "--model mixtral-8x7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 1000 --seq 64 "
        "--tp 2 --pp 2 --dp 4 --ep 2 --global-batch 8 --zero 3 --sp",
        "--model mixtral-8x7b --layers 2 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 1000 --seq 64 "
        "--dp 2 --ep 2 --cp 2 --global-batch 4 --zero 3 --recompute full",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        etk_gen_config c;
        cfg_from(&c, plans[i]);
        etk_workload *w;
        etk_error err = {0};
        if (etk_gen_workload(&c, false, &w, &err))
            fail_msg("%s: %s", plans[i], err.msg);
        gen_expect_clean(w, plans[i]);
        etk_workload_free(w);
    }
}

/* --schedule zb-h1 with ZeRO-3: a section's gradients are reduce-scattered after its deferred
 * weight-gradient unit (W), which completes them; the same collectives, bytes and FLOPs as
 * 1F1B's (the schedule only moves nodes), validator-clean (deadlock check included). */
static void test_zero3_zbh1(void **state)
{
    (void)state;
    const char *plans[] = {
        "--model llama2-7b --layers 4 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 --pp 2 --dp 2 "
        "--global-batch 8 --zero 3 --tp 2 --sp",
        "--model gpt3-175b --layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 64 --dp 2 "
        "--global-batch 4 --zero 3",
        "--model mixtral-8x7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 1000 --seq 64 "
        "--pp 2 --dp 4 --ep 2 --global-batch 16 --zero 3",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s --schedule zb-h1", plans[i]);
        etk_gen_config c1, c2;
        etk_gen_summary s1, s2;
        summarize(plans[i], &c1, &s1);
        summarize(line, &c2, &s2);
        for (uint32_t k = 0; k < s1.n_stages; k++) {
            assert_int_equal(s2.stages[k].nodes, s1.stages[k].nodes);
            assert_true(s2.stages[k].flops == s1.stages[k].flops);
            assert_memory_equal(s2.stages[k].coll_count, s1.stages[k].coll_count, sizeof s1.stages[k].coll_count);
            assert_memory_equal(s2.stages[k].coll_bytes, s1.stages[k].coll_bytes, sizeof s1.stages[k].coll_bytes);
        }
        etk_gen_summary_free(&s1);
        etk_gen_summary_free(&s2);
        etk_workload *w;
        etk_error err = {0};
        if (etk_gen_workload(&c2, false, &w, &err))
            fail_msg("%s: %s", line, err.msg);
        /* every section's gradient reduce-scatter comes after all the W nodes (.wgrad) of its
         * micro-batch and section ("mb<j>.<section>."), which zb-h1 defers */
        const etk_trace *tr = w->ranks[0];
        uint64_t rs = 0;
        for (size_t k = 0; k < tr->n_nodes; k++) {
            const char *g = strstr(tr->nodes[k].name, "grad_reduce_scatter");
            if (!g)
                continue;
            rs++;
            assert_true(tr->nodes[k].n_data_deps > 0);
            size_t plen = (size_t)(g - tr->nodes[k].name);
            if (plen > 7 && !strncmp(g - 7, "expert_", 7))
                plen -= 7;
            for (size_t x = k + 1; x < tr->n_nodes; x++)
                if (!strncmp(tr->nodes[x].name, tr->nodes[k].name, plen) && strstr(tr->nodes[x].name, ".wgrad"))
                    fail_msg("%s: %s after %s", line, tr->nodes[x].name, tr->nodes[k].name);
        }
        assert_true(rs > 0);
        gen_expect_clean(w, line);
        etk_workload_free(w);
    }
}

static void test_zero_errors(void **state)
{
    (void)state;
    const char *e = plan_error("--model llama2-7b --zero 4");
    assert_non_null(strstr(e, "--zero wants 0, 1, 2 or 3, got '4'"));
    e = plan_error("--model llama2-7b --zero 12");
    assert_non_null(strstr(e, "got '12'"));
    /* a tied table on the first and last stage is all-reduced over the embedding group before
     * the DP reduction; with ZeRO-3 sharding that is not modelled and the plan is refused */
    e = plan_error("--model gpt3-175b --layers 4 --pp 2 --dp 2 --zero 3");
    assert_non_null(strstr(e, "--zero 3 with --pp 2"));
    assert_non_null(strstr(e, "ties its output layer"));
    e = plan_error("--model llama2-7b --fsdp=1");
    assert_non_null(strstr(e, "fsdp"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_volumes),
        cmocka_unit_test(test_zero3_ep),
        cmocka_unit_test(test_zero3_structure),
        cmocka_unit_test(test_zero_validate),
        cmocka_unit_test(test_zero3_zbh1),
        cmocka_unit_test(test_zero_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
