/* test_gen_epo.c — --ep-comm-overlap (Megatron's --overlap-moe-expert-parallel-comm, the
 * combined 1F1B schedule; docs/gen.md "EP communication overlap"): each steady-state forward is
 * emitted beside the backward of an earlier unit, layer by layer, so one micro-batch's EP
 * all-to-alls run while the other's compute does; one more warm-up forward per stage. Checked:
 * the step's FLOPs, bytes and collective counts are those without the flag (only the order
 * changes); the refusals; every rank of the paired workloads passes the validator (deadlock
 * included) on PP 1 and on interleaved PP 2 / 4; the emission order (forward layer i beside
 * backward layer L - 1 - i); folded == unfolded; and the simulated step against the hand-computed
 * schedule on a cost model whose times are known (below). */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen_testlib.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "etkit/validate.h"

/* Same FLOPs (model and hardware, per stage) and the same collective bytes and counts per
 * group and type with and without the flag. */
static void test_epo_totals(void **state)
{
    (void)state;
    const char *cases[] = {
        "--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --global-batch 6 --seq 1024",
        "--model mixtral-8x7b --layers 4 --tp 2 --sp --dp 2 --ep 4 --pp 2 --vpp 2 --global-batch 8 --seq 1024",
        ("--model mixtral-8x7b --layers 4 --dp 4 --ep 4 --pp 2 --vpp 2 --global-batch 16 --seq 1024 --zero 1 "
         "--recompute selective"),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s --ep-comm-overlap", cases[i]);
        etk_gen_config c1, c2;
        etk_gen_summary s1, s2;
        summarize(cases[i], &c1, &s1);
        summarize(line, &c2, &s2);
        assert_true(c2.ep_comm_overlap && !c1.ep_comm_overlap);
        assert_true(fabs(s2.model_flops / s1.model_flops - 1) < 1e-12);
        assert_true(fabs(s2.step_flops / s1.step_flops - 1) < 1e-12);
        assert_int_equal(s2.n_stages, s1.n_stages);
        for (uint32_t k = 0; k < s1.n_stages; k++) {
            const etk_gen_stage *a = &s1.stages[k], *b = &s2.stages[k];
            assert_true(fabs(b->flops / a->flops - 1) < 1e-12);
            assert_true(fabs(b->model_flops / a->model_flops - 1) < 1e-12);
            assert_int_equal(b->act_per_mb_bytes, a->act_per_mb_bytes);
            /* one more warm-up forward: one more unit's activations held at the peak */
            uint32_t total = c1.micro_batches * (c1.vpp > 1 ? c1.vpp : 1);
            assert_int_equal(b->in_flight, a->in_flight + 1 <= total ? a->in_flight + 1 : total);
            assert_true(b->act_bytes > a->act_bytes || b->in_flight == a->in_flight);
            for (int g = 0; g < ETK_GEN_N_GROUP_KINDS; g++)
                for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++) {
                    assert_int_equal(b->coll_bytes[g][t], a->coll_bytes[g][t]);
                    assert_int_equal(b->coll_count[g][t], a->coll_count[g][t]);
                }
        }
        etk_gen_summary_free(&s1);
        etk_gen_summary_free(&s2);
    }
    const char *plans[] = {
        "--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --global-batch 6 --seq 1024 --ep-comm-overlap",
        ("--model mixtral-8x7b --layers 4 --tp 2 --sp --dp 2 --ep 4 --pp 2 --vpp 2 --global-batch 8 --seq 1024 "
         "--ep-comm-overlap"),
        "--model mixtral-8x7b --layers 8 --dp 2 --ep 2 --pp 4 --vpp 2 --global-batch 16 --seq 512 --ep-comm-overlap",
        "--model mixtral-8x7b --layers 4 --dp 2 --ep 2 --pp 2 --vpp 2 --global-batch 4 --seq 512 --ep-comm-overlap",
    };
    gen_expect_valid(plans, sizeof plans / sizeof plans[0]);
}

static void test_epo_errors(void **state)
{
    (void)state;
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 2 --dp 2 --ep-comm-overlap"),
                           "--ep-comm-overlap needs --ep > 1"));
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 4 --dp 2 --ep 2 --pp 2 --global-batch 4 "
                                          "--ep-comm-overlap"),
                           "--ep-comm-overlap with --pp 2 needs --vpp > 1"));
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --schedule gpipe "
                                          "--ep-comm-overlap"),
                           "not with --schedule gpipe"));
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --schedule zb-h1 "
                                          "--ep-comm-overlap"),
                           "not with --schedule zb-h1"));
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --recompute full "
                                          "--ep-comm-overlap"),
                           "not with --recompute full"));
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --zero 3 --ep-comm-overlap"),
                           "not with --zero 3"));
    assert_non_null(strstr(gen_plan_error("--model mixtral-8x7b --layers 2 --ep 2 --mode inference "
                                          "--ep-comm-overlap"),
                           "--ep-comm-overlap is a training option"));
}

static uint64_t id_of(const etk_trace *tr, const char *name)
{
    for (size_t k = 0; k < tr->n_nodes; k++)
        if (!strcmp(tr->nodes[k].name, name))
            return tr->nodes[k].id;
    fail_msg("no node %s", name);
    return 0;
}

/* PP 1, 2 layers, 2 micro-batches: without the flag F0 B0 F1 B1; with it F0, then F1 beside B0
 * layer by layer (embedding beside the head's backward, layer 0 beside layer 1's backward, layer
 * 1 beside layer 0's, the head beside the embedding's backward), then B1. */
static void test_epo_order(void **state)
{
    (void)state;
    const char *base = "--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --global-batch 4 --seq 1024";
    for (int f = 0; f < 2; f++) {
        char line[256];
        snprintf(line, sizeof line, "%s%s", base, f ? " --ep-comm-overlap" : "");
        etk_gen_config c;
        etk_error err = {0};
        etk_workload *w = NULL;
        cfg_from(&c, line);
        if (etk_gen_workload(&c, false, &w, &err))
            fail_msg("%s", err.msg);
        const etk_trace *t = w->ranks[0];
        uint64_t f1 = id_of(t, "mb1.embed.tok_embed"), b0 = id_of(t, "mb0.head.loss.bwd");
        uint64_t b0end = id_of(t, "mb0.embed.tok_embed.bwd");
        if (!f) {
            assert_true(b0end < f1);
        } else {
            assert_true(f1 < b0);
            assert_true(b0 < id_of(t, "mb1.L0.attn_norm"));
            assert_true(id_of(t, "mb1.L0.ffn_res") < id_of(t, "mb0.L1.ffn_res.bwd"));
            assert_true(id_of(t, "mb0.L1.attn_norm.bwd") < id_of(t, "mb1.L1.attn_norm"));
            assert_true(id_of(t, "mb1.L1.ffn_res") < id_of(t, "mb0.L0.ffn_res.bwd"));
            assert_true(id_of(t, "mb0.L0.attn_norm.bwd") < id_of(t, "mb1.head.final_norm"));
            assert_true(id_of(t, "mb1.head.loss") < b0end);
            /* B1 alone after the pair */
            assert_true(b0end < id_of(t, "mb1.head.loss.bwd"));
        }
        etk_workload_free(w);
    }
}

/* The hand cost model: a compute node of F FLOPs (num_ops) and Y bytes takes (F + 512 Y) / 10^6
 * ns; an all-to-all takes A ns whatever its size; every other collective and send 0. */
#define HALF 512
static uint64_t cns(uint64_t flops, uint64_t bytes) { return (flops + HALF * bytes + 500000) / 1000000; }
static uint64_t h_compute(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx;
    (void)c;
    return cns(flops, bytes);
}
static uint64_t h_coll(void *ctx, const etk_cluster *c, etk_coll_type t, uint64_t bytes, const uint32_t *ranks,
                       uint32_t n)
{
    (void)c;
    (void)bytes;
    (void)ranks;
    (void)n;
    return t == ETK_COLL_ALL_TO_ALL ? *(const uint64_t *)ctx : 0;
}

/* step time of the plan on the hand cost model; *comp: rank 0's compute summed by hand */
static uint64_t hand_step(const char *line, uint64_t A, bool fold, uint64_t *comp)
{
    etk_gen_config c;
    etk_error err = {0};
    etk_workload *w = NULL;
    cfg_from(&c, line);
    if (etk_gen_workload(&c, fold, &w, &err))
        fail_msg("%s", err.msg);
    if (comp) {
        *comp = 0;
        const etk_trace *t = w->ranks[0];
        for (size_t k = 0; k < t->n_nodes; k++) {
            const etk_node *n = &t->nodes[k];
            int64_t f = 0;
            uint64_t y = 0;
            if (n->type != ETK_NODE_COMP)
                continue;
            etk_node_i64(n, "num_ops", &f);
            etk_node_u64(n, "tensor_size", &y);
            *comp += cns((uint64_t)f, y);
        }
    }
    etk_cluster cl;
    gen_test_cluster(&cl, c.n_ranks);
    etk_sim_costs costs = {.coll_ns = h_coll, .p2p_ns = gen_test_p2p_free, .compute_ns = h_compute, .ctx = &A};
    etk_sim_opts o;
    memset(&o, 0, sizeof o);
    o.no_fold = !fold;
    o.comm_stream_per_group = true;
    o.costs = &costs;
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &cl, &o, &s, &err))
        fail_msg("%s: %s", line, err.msg);
    uint64_t step = etk_sim_result_get(s)->step_ns;
    etk_sim_free(s);
    etk_workload_free(w);
    return step;
}

/* PP 1, L = 2 MoE layers, EP 2, m micro-batches, A = 1 us per all-to-all (shorter than any run of
 * ready compute: the smallest, the router's backward chain, is ~4 us on this model). One compute
 * stream, so the step is rank 0's compute C (summed by hand) plus the all-to-all time during
 * which no compute is ready:
 * - a forward alone exposes its 2 L all-to-alls (dispatch and combine: nothing else is ready; the
 *   router and top-k run before the dispatch, smaller ids first);
 * - a backward alone hides its all-to-alls: the router/top-k backward runs beside the combine's
 *   gradient all-to-all, the gate's weight gradient beside the dispatch's;
 * - a forward paired with a backward hides all of its own and of the backward's: the other
 *   chain's compute is ready.
 * Without the flag (F0 B0 F1 B1 ...): C + m 2 L A. With it (F0, then F1 beside B0, ..., B m-1
 * alone): C + 2 L A, one forward alone. Folded (one rank per class) == unfolded. */
static void test_epo_hand(void **state)
{
    (void)state;
    const uint64_t A = 1000, L = 2;
    for (uint64_t m = 2; m <= 4; m++) {
        char b[256], e[300];
        snprintf(b, sizeof b, "--model mixtral-8x7b --layers %" PRIu64 " --dp 2 --ep 2 --global-batch %" PRIu64
                 " --seq 1024", L, 2 * m);
        snprintf(e, sizeof e, "%s --ep-comm-overlap", b);
        uint64_t C1 = 0, C2 = 0;
        uint64_t t1 = hand_step(b, A, false, &C1), t2 = hand_step(e, A, false, &C2);
        assert_int_equal(C1, C2);
        assert_int_equal(t1, C1 + m * 2 * L * A);
        assert_int_equal(t2, C2 + 2 * L * A);
        assert_int_equal(hand_step(e, A, true, NULL), t2);
        assert_int_equal(hand_step(b, A, true, NULL), t1);
    }
    /* interleaved PP 2: pairs on both stages, sends and receives between them; folded ==
     * unfolded, and the overlap does not make the step longer here */
    const char *pp = "--model mixtral-8x7b --layers 4 --dp 2 --ep 2 --pp 2 --vpp 2 --global-batch 8 --seq 512";
    char ppe[256];
    snprintf(ppe, sizeof ppe, "%s --ep-comm-overlap", pp);
    uint64_t u = hand_step(ppe, A, false, NULL);
    assert_int_equal(hand_step(ppe, A, true, NULL), u);
    assert_true(u < hand_step(pp, A, false, NULL));
}

/* One more warm-up forward holds more activations: the simulated memory peak of every stage
 * grows with the flag and stays within the summary's estimate (in_flight + 1 whole units, an
 * upper bound), which without the flag it equals. */
static void test_epo_memory(void **state)
{
    (void)state;
    const char *plans[] = {
        "--model mixtral-8x7b --layers 2 --dp 2 --ep 2 --global-batch 6 --seq 1024",
        "--model mixtral-8x7b --layers 8 --dp 4 --ep 4 --pp 2 --vpp 2 --global-batch 32 --seq 1024",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        uint64_t peak[2][2] = {{0}};
        for (int f = 0; f < 2; f++) {
            char line[256];
            snprintf(line, sizeof line, "%s%s", plans[i], f ? " --ep-comm-overlap" : "");
            etk_gen_config c;
            etk_gen_summary sum;
            etk_error err = {0};
            summarize(line, &c, &sum);
            etk_workload *w = NULL;
            if (etk_gen_workload(&c, true, &w, &err))
                fail_msg("%s", err.msg);
            etk_cluster cl;
            gen_test_cluster(&cl, c.n_ranks);
            etk_sim_opts o;
            memset(&o, 0, sizeof o);
            o.comm_stream_per_group = true;
            etk_sim *s = NULL;
            if (etk_sim_workload(w, &cl, &o, &s, &err))
                fail_msg("%s: %s", line, err.msg);
            const etk_sim_result *r = etk_sim_result_get(s);
            assert_true(r->mem_tracked);
            for (uint32_t p = 0; p < c.pp; p++) {
                uint64_t got = r->ranks[etk_gen_rank(&c, 0, 0, p)].mem_peak_bytes;
                if (f) /* the estimate holds one more unit whole; in a pair the backward frees
                        * its layers while the forward allocates its own, so the peak is lower */
                    assert_true(got <= sum.stages[p].total_bytes);
                else
                    assert_int_equal(got, sum.stages[p].total_bytes);
                peak[f][p] = got;
            }
            if (f)
                for (uint32_t p = 0; p < c.pp; p++)
                    assert_true(peak[1][p] > peak[0][p]);
            etk_sim_free(s);
            etk_workload_free(w);
            etk_gen_summary_free(&sum);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epo_totals),
        cmocka_unit_test(test_epo_errors),
        cmocka_unit_test(test_epo_order),
        cmocka_unit_test(test_epo_hand),
        cmocka_unit_test(test_epo_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
