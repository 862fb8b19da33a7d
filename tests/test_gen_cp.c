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
#include "etkit/net.h"
#include "etkit/sim.h"
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
        "--global-batch 2 --sp --recompute selective --attention unfused --zero 3 --dp 2",
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

/* ---------- --cp-comm ring ---------- */

/* Per layer, per micro-batch, per rank, with blk = b (s/c) (k/t) d_h x 2 bytes (one rank's K, or
 * V, block): forward, K and V each go c - 1 steps around the ring (a send and a receive of blk
 * per step): 2 (c - 1) sends; backward, the blocks go around again (2 (c - 1)) and the dK, dV
 * accumulators follow them back to their owners (2 (c - 1)); a recompute of the attention core
 * (selective with --attention unfused, or full) circulates the blocks once more (2 (c - 1)); with
 * the default flash attention selective recompute is a no-op (docs/gen.md) and adds nothing.
 * Receives equal sends. No CP collective is left; the pipeline messages are those of the
 * all-gather form. */
static void test_cp_ring_bytes(void **state)
{
    (void)state;
    struct {
        const char *line;
        uint64_t t, c, kv, m, l, recompute;
    } cases[] = {
        {"--model llama2-7b --layers 2 --tp 2 --cp 2 --dp 2 --global-batch 4", 2, 2, 32, 2, 2, 0},
        {"--model llama3-8b --layers 3 --tp 4 --cp 4 --global-batch 3", 4, 4, 8, 3, 3, 0},
        {"--model llama3-8b --layers 2 --cp 8 --sp --tp 2 --global-batch 1 --recompute selective --attention unfused", 2, 8,
         8, 1, 2, 1},
        {"--model llama3-8b --layers 2 --cp 8 --sp --tp 2 --global-batch 1 --recompute selective", 2, 8, 8, 1, 2, 0},
        {"--model llama3-8b --layers 4 --cp 4 --pp 2 --global-batch 4 --recompute full", 1, 4, 8, 4, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        etk_gen_config c, ca;
        etk_gen_summary s, sa;
        char line[512];
        snprintf(line, sizeof line, "%s --cp-comm ring", cases[i].line);
        summarize(line, &c, &s);
        summarize(cases[i].line, &ca, &sa);
        const uint64_t b = 1, sq = (uint64_t)c.model.seq, d = 128, cp = cases[i].c;
        uint64_t blk = b * (sq / cp) * (cases[i].kv / cases[i].t) * d * 2;
        uint64_t per_layer = 2 * (cp - 1) * (1 + 2 + cases[i].recompute);
        uint64_t n = per_layer * cases[i].l * cases[i].m;
        const etk_gen_stage *st = &s.stages[0];
        assert_int_equal(st->cp_send_count, n);
        assert_int_equal(st->cp_recv_count, n);
        assert_int_equal(st->cp_send_bytes, n * blk);
        assert_int_equal(st->cp_recv_bytes, n * blk);
        /* forward alone: (c - 1) 2 b (s/c) (k/t) d_h x 2 bytes per layer per micro-batch */
        assert_int_equal(2 * (cp - 1) * blk, (cp - 1) * 2 * b * (sq / cp) * (cases[i].kv / cases[i].t) * d * 2);
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            assert_int_equal(st->coll_count[ETK_GEN_GROUP_CP][t], 0);
        assert_int_equal(st->send_bytes, sa.stages[0].send_bytes);
        assert_int_equal(st->recv_bytes, sa.stages[0].recv_bytes);
        /* the all-gather form moves the same K/V in the forward: (c - 1)/c of each gathered buffer */
        assert_int_equal(sa.stages[0].coll_bytes[ETK_GEN_GROUP_CP][ETK_COLL_ALL_GATHER] * (cp - 1),
                         2 * (1 + cases[i].recompute) * cases[i].l * cases[i].m * (cp - 1) * blk);
        etk_gen_summary_free(&s);
        etk_gen_summary_free(&sa);
    }
}

/* The ring splits the attention GEMMs into c blockwise products of 1/c each: the FLOPs per rank
 * and per step, with and without recompute, equal the all-gather form's (up to the rounding of
 * num_ops per node, < 1e-9 relative); so do the parameters, activations and other collectives. */
static void test_cp_ring_flops(void **state)
{
    (void)state;
    const char *lines[] = {
        "--model llama3-8b --layers 4 --tp 2 --pp 2 --dp 2 --cp 4 --global-batch 8",
        "--model llama3-8b --layers 4 --tp 2 --cp 2 --global-batch 2 --recompute full",
        "--model gpt3-175b --layers 2 --hidden 1024 --heads 16 --ffn 4096 --seq 2048 --cp 8 --recompute selective --attention unfused",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        etk_gen_config c1, c2;
        etk_gen_summary s1, s2;
        char line[512];
        snprintf(line, sizeof line, "%s --cp-comm ring", lines[i]);
        summarize(lines[i], &c1, &s1);
        summarize(line, &c2, &s2);
        assert_true(fabs(s2.model_flops / s1.model_flops - 1) < 1e-9);
        assert_true(fabs(s2.step_flops / s1.step_flops - 1) < 1e-9);
        for (uint32_t k = 0; k < s1.n_stages; k++) {
            assert_true(fabs(s2.stages[k].flops / s1.stages[k].flops - 1) < 1e-9);
            assert_int_equal(s2.stages[k].params, s1.stages[k].params);
            assert_int_equal(s2.stages[k].total_bytes, s1.stages[k].total_bytes);
            for (int g = 0; g < ETK_GEN_N_GROUP_KINDS; g++)
                for (int t = 0; t < ETK_COLL_TYPE_COUNT && g != ETK_GEN_GROUP_CP; t++)
                    assert_int_equal(s2.stages[k].coll_bytes[g][t], s1.stages[k].coll_bytes[g][t]);
        }
        etk_gen_summary_free(&s1);
        etk_gen_summary_free(&s2);
    }
}

static double simulate(const etk_gen_config *c, bool fold)
{
    etk_workload *w;
    etk_error err = {0};
    if (etk_gen_workload(c, fold, &w, &err))
        fail_msg("%s", err.msg);
    etk_cluster cl;
    gen_test_cluster(&cl, c->n_ranks);
    etk_sim_opts o;
    memset(&o, 0, sizeof o);
    o.no_fold = !fold;
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &cl, &o, &s, &err))
        fail_msg("simulation (%s): %s", fold ? "folded" : "every rank", err.msg);
    double t = (double)etk_sim_result_get(s)->step_ns;
    etk_sim_free(s);
    etk_workload_free(w);
    return t;
}

/* The ring's sends go to the next CP rank of the same (tp, dp, pp) and its receives come from
 * the previous one, with tags from ETK_GEN_CP_TAG_BASE on (the pipeline's stay below). The
 * workloads (every schedule, recompute, ZeRO-3, rank order) pass the validator with its
 * cross-rank deadlock check; the files as written match the in-memory ranks (peers rebound per
 * rank); the simulator runs the step to the end, folded (one class per (stage, cp)) as unfolded. */
static void test_cp_ring_structure(void **state)
{
    (void)state;
    const char *small = "--model llama2-7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 1000 --seq 64 "
                        "--cp-comm ring ";
    const char *plans[] = {
        "--tp 2 --cp 4 --pp 2 --dp 2 --global-batch 8",
        "--tp 2 --cp 3 --seq 96 --global-batch 2 --sp --recompute selective --attention unfused --zero 3 --dp 2",
        "--cp 2 --pp 2 --vpp 2 --global-batch 4 --recompute full --rank-order pp,cp,tp,dp",
        "--cp 4 --pp 2 --global-batch 4 --schedule zb-h1 --dp 2",
        "--cp 2 --pp 4 --global-batch 8 --schedule gpipe --rank-order cp,tp,dp,pp",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s%s", small, plans[i]);
        etk_gen_config c;
        etk_error err = {0};
        if (parse(line, &c, &err))
            fail_msg("%s: %s", line, err.msg);
        etk_workload *w;
        if (etk_gen_workload(&c, false, &w, &err))
            fail_msg("%s: %s", line, err.msg);
        uint64_t sends = 0;
        for (uint32_t r = 0; r < c.n_ranks; r++) {
            uint32_t co[ETK_GEN_N_AXES];
            etk_gen_coords(&c, r, co);
            uint32_t C = c.cp, t = co[ETK_GEN_TP], x = co[ETK_GEN_CP], d = co[ETK_GEN_DP], p = co[ETK_GEN_PP];
            uint32_t next = etk_gen_rank_cp(&c, t, (x + 1) % C, d, p), prev = etk_gen_rank_cp(&c, t, (x + C - 1) % C, d, p);
            const etk_trace *tr = w->ranks[r];
            for (size_t k = 0; k < tr->n_nodes; k++) {
                const etk_node *n = &tr->nodes[k];
                if (n->type != ETK_NODE_SEND && n->type != ETK_NODE_RECV)
                    continue;
                int64_t tag = 0, peer = -1;
                etk_node_i64(n, "comm_tag", &tag);
                etk_node_i64(n, n->type == ETK_NODE_SEND ? "comm_dst" : "comm_src", &peer);
                if (!strstr(n->name, "cp_ring")) {
                    assert_true(tag < ETK_GEN_CP_TAG_BASE);
                    continue;
                }
                assert_true(tag >= ETK_GEN_CP_TAG_BASE && tag < ETK_GEN_CP_TAG_BASE + 16 * (int64_t)C);
                assert_int_equal(peer, n->type == ETK_NODE_SEND ? next : prev);
                sends += n->type == ETK_NODE_SEND;
            }
        }
        assert_true(sends > 0);
        gen_expect_clean(w, line);
        if (i == 0) {
            /* written files: every rank's ring peers rebound */
            char prefix[512];
            snprintf(prefix, sizeof prefix, "%s/ring", tu_tmpdir());
            if (etk_gen_write(&c, prefix, &err))
                fail_msg("%s", err.msg);
            etk_workload *fw;
            etk_read_opts ro = {.quiet = true};
            if (etk_workload_open(prefix, NULL, &ro, &fw, &err))
                fail_msg("%s", err.msg);
            for (uint32_t r = 0; r < c.n_ranks; r++) {
                assert_int_equal(fw->ranks[r]->n_nodes, w->ranks[r]->n_nodes);
                for (size_t k = 0; k < w->ranks[r]->n_nodes; k++) {
                    const etk_node *a = &fw->ranks[r]->nodes[k], *b = &w->ranks[r]->nodes[k];
                    assert_string_equal(a->name, b->name);
                    int64_t pa = -1, pb = -2;
                    const char *key = a->type == ETK_NODE_SEND ? "comm_dst" : "comm_src";
                    if (a->type == ETK_NODE_SEND || a->type == ETK_NODE_RECV) {
                        etk_node_i64(a, key, &pa);
                        etk_node_i64(b, key, &pb);
                        assert_int_equal(pa, pb);
                    }
                }
            }
            etk_workload_free(fw);
        }
        etk_workload_free(w);
        double folded = simulate(&c, true), all = simulate(&c, false);
        assert_true(folded > 0);
        assert_true(fabs(folded / all - 1) < 1e-9);
    }
}

/* The fused attention kernels carry their shape for the compute model (attn_s: the key length a
 * kernel runs over, attn_d: the head dimension), and the CP ring's per-block work: llama2-7b
 * (32 heads of 128), seq 16384, CP 4 ring, one layer on rank 0:
 * - 4 forward kernels flash_attn.cp0..3 at attn_s = 16384 / 4 = 4096, attn_d 128, and after
 *   each but the first a memory-bound log-sum-exp merge of the partial output: reads both
 *   outputs (b (s/cp) heads d x 2 B) and log-sum-exps (b heads (s/cp) x 4 B), writes the merged
 *   ones: 3 x (4096 x 4096 x 2 + 32 x 4096 x 4) = 102236160 bytes;
 * - 4 backward kernels, and after each but the first the dQ add in fp32 (3 x 4096 x 4096 x 4 =
 *   201326592 bytes);
 * - all-gather CP: one kernel over the whole key length, attn_s 16384, no merges; no CP: 16384. */
static void test_cp_ring_kernels(void **state)
{
    (void)state;
    const char *base = "--model llama2-7b --layers 1 --seq 16384 --global-batch 1";
    const struct {
        const char *plan;
        int64_t s;
        int fwd, merges, dq;
    } cases[] = {{"--cp 4 --cp-comm ring", 4096, 4, 3, 3}, {"--cp 4", 16384, 1, 0, 0}, {"", 16384, 1, 0, 0}};
    for (int i = 0; i < 3; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s %s", base, cases[i].plan);
        etk_gen_config c;
        etk_error err = {0};
        if (parse(line, &c, &err))
            fail_msg("%s: %s", line, err.msg);
        etk_workload *w;
        if (etk_gen_workload(&c, false, &w, &err))
            fail_msg("%s: %s", line, err.msg);
        int fwd = 0, bwd = 0, merges = 0, dq = 0;
        const etk_trace *tr = w->ranks[0];
        for (size_t k = 0; k < tr->n_nodes; k++) {
            const etk_node *n = &tr->nodes[k];
            if (!n->name || !strstr(n->name, "flash_attn"))
                continue;
            uint64_t bytes = 0;
            etk_node_u64(n, "tensor_size", &bytes);
            if (strstr(n->name, "lse_merge")) {
                merges++;
                assert_int_equal(bytes, 3 * (4096ull * 4096 * 2 + 32ull * 4096 * 4));
                continue;
            }
            if (strstr(n->name, "dq_add")) {
                dq++;
                assert_int_equal(bytes, 3ull * 4096 * 4096 * 4);
                continue;
            }
            int64_t as = 0, ad = 0;
            assert_true(etk_node_i64(n, "attn_s", &as));
            assert_true(etk_node_i64(n, "attn_d", &ad));
            assert_int_equal(as, cases[i].s);
            assert_int_equal(ad, 128);
            if (strstr(n->name, "bwd"))
                bwd++;
            else
                fwd++;
        }
        assert_int_equal(fwd, cases[i].fwd);
        assert_int_equal(bwd, cases[i].fwd);
        assert_int_equal(merges, cases[i].merges);
        assert_int_equal(dq, cases[i].dq);
        gen_expect_clean(w, line);
        etk_workload_free(w);
    }
}

static void test_cp_ring_errors(void **state)
{
    (void)state;
    const char *e = plan_error("--model llama2-7b --cp-comm ring");
    assert_non_null(strstr(e, "--cp-comm ring needs --cp > 1"));
    e = plan_error("--model llama2-7b --cp 2 --cp-comm ringg");
    assert_non_null(strstr(e, "--cp-comm wants allgather or ring, got 'ringg'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cp_bytes),
        cmocka_unit_test(test_cp_flops_and_memory),
        cmocka_unit_test(test_cp_ranks_groups),
        cmocka_unit_test(test_cp_validate),
        cmocka_unit_test(test_cp_errors),
        cmocka_unit_test(test_cp_ring_bytes),
        cmocka_unit_test(test_cp_ring_flops),
        cmocka_unit_test(test_cp_ring_structure),
        cmocka_unit_test(test_cp_ring_kernels),
        cmocka_unit_test(test_cp_ring_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
