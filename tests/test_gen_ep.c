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

/* EP folded over TP x DP (--etp 1, Megatron's expert groups: expert TP 1, EP, expert DP over the
 * tp x cp x dp ranks of a stage, TP fastest). Small mixtral (h 256, 8 experts of FFN 14336, top-2,
 * 2 layers, seq 64), TP 2 with SP:
 * - DP 2, EP 4 (EP > DP, Qwen3-235B's EP 32 over TP 2 x DP 16): one EP group of ranks 0-3
 *   (q = t + 2 d), E / ep = 2 whole experts per rank, no expert-DP group (4 / 4 = 1), and no
 *   TP sum of expert gradients (the TP ranks hold different experts): the TP all-reduce of the
 *   SP-replicated weights is the norms' and the router's only, L (2 h + h E) + h elements x 4 B
 *   (with whole experts replicated over TP it was 3 h f E / 2 per layer more);
 * - DP 4, EP 4: EP groups {0,1,2,3} and {4,5,6,7}, expert DP 8 / 4 = 2: {0,4}, {1,5}, ...
 * Each all-to-all carries the rank's own sequence slice, b (s/t) k h x 2 bytes. */
static void test_ep_folded(void **state)
{
    (void)state;
    const char *base = "--model mixtral-8x7b --layers 2 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 "
                       "--seq 64 --tp 2 --sp --global-batch 4";
    const uint64_t h = 256, E = 8, f = 14336 /* moe_ffn: --ffn sets the dense FFN */, L = 2, sq = 64, k = 2, t = 2;
    etk_gen_config c;
    etk_gen_summary s;
    etk_error err = {0};
    char line[512];
    snprintf(line, sizeof line, "%s --dp 2 --ep 4", base);
    summarize(line, &c, &s);
    const etk_gen_stage *x = &s.stages[0];
    uint64_t m = 2; /* 4 sequences / dp 2 */
    assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * L * m * (sq / t) * k * h * 2);
    /* + the vocabulary-parallel loss's 3 fp32 reductions of b s per micro-batch */
    assert_int_equal(x->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_ALL_REDUCE], (L * (2 * h + h * E) + h) * 4 + m * 3 * sq * 4);
    assert_int_equal(x->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_ALL_REDUCE] +
                         x->coll_count[ETK_GEN_GROUP_EDP][ETK_COLL_REDUCE_SCATTER], 0);
    /* whole experts: E / ep of 3 h f each per layer */
    etk_gen_config c1;
    etk_gen_summary s1;
    snprintf(line, sizeof line, "%s --dp 2", base);
    summarize(line, &c1, &s1);
    assert_int_equal(s1.stages[0].params - x->params, L * 3 * h * f * E - L * 3 * h * f * E / 4);
    etk_gen_summary_free(&s1);
    etk_gen_summary_free(&s);
    etk_workload *w;
    assert_int_equal(etk_gen_workload(&c, false, &w, &err), 0);
    const char *epg = NULL;
    for (size_t i = 0; i < w->ranks[3]->n_nodes; i++)
        if (strstr(w->ranks[3]->nodes[i].name, "ep_all_to_all"))
            epg = etk_node_str(&w->ranks[3]->nodes[i], "pg_name");
    assert_non_null(epg);
    const etk_group *g = etk_groups_find(w->groups, epg);
    assert_non_null(g);
    assert_int_equal(g->n_ranks, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(g->ranks[i], i);
    etk_workload_free(w);

    snprintf(line, sizeof line, "%s --dp 4 --ep 4", base);
    if (parse(line, &c, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(etk_gen_workload(&c, false, &w, &err), 0);
    for (uint32_t r = 0; r < 8; r++) {
        const char *eg = NULL, *xg = NULL;
        for (size_t i = 0; i < w->ranks[r]->n_nodes; i++) {
            const etk_node *n = &w->ranks[r]->nodes[i];
            if (strstr(n->name, "ep_all_to_all"))
                eg = etk_node_str(n, "pg_name");
            if (strstr(n->name, "edp.expert_grad_bucket"))
                xg = etk_node_str(n, "pg_name");
        }
        assert_non_null(eg);
        assert_non_null(xg);
        g = etk_groups_find(w->groups, eg);
        assert_int_equal(g->n_ranks, 4);
        for (uint32_t i = 0; i < 4; i++)
            assert_int_equal(g->ranks[i], r / 4 * 4 + i);
        g = etk_groups_find(w->groups, xg);
        assert_int_equal(g->n_ranks, 2);
        assert_int_equal(g->ranks[0], r % 4);
        assert_int_equal(g->ranks[1], r % 4 + 4);
    }
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
        /* --etp 1 with SP, imbalance and node-limited routing */
        "--model mixtral-8x7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seq 64 --tp 2 --sp "
        "--pp 2 --dp 4 --ep 4 --global-batch 8 --zero 1 --recompute full --moe-imbalance 1.3 --moe-max-nodes 1",
        /* EP folded over TP x DP: EP 4 > DP 2 */
        "--model mixtral-8x7b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seq 64 --tp 2 --sp "
        "--pp 2 --dp 2 --ep 4 --global-batch 4 --zero 1",
    };
    gen_expect_valid(plans, sizeof plans / sizeof plans[0]);
}

/* First node of rank 0 (stage 0) whose name ends with `suffix`. */
static const etk_node *node_named(const etk_workload *w, const char *name)
{
    const etk_trace *t = w->ranks[w->class_rep ? w->class_rep[0] : 0];
    for (size_t i = 0; i < t->n_nodes; i++)
        if (t->nodes[i].name && !strcmp(t->nodes[i].name, name))
            return &t->nodes[i];
    fail_msg("no node %s", name);
    return NULL;
}

static int64_t attr(const etk_node *n, const char *k)
{
    int64_t v = -1;
    if (!etk_node_i64(n, k, &v)) {
        uint64_t u;
        if (!etk_node_u64(n, k, &u))
            fail_msg("%s: no %s", n->name, k);
        v = (int64_t)u;
    }
    return v;
}

/* Megatron's all-to-all dispatcher with sequence parallelism (mixtral-8x7b: h 4096, 8 experts
 * of FFN 14336, top-2; 4 layers on 2 stages, seq 4096, TP 2, DP 8 = EP 8, 2 micro-batches):
 * each TP rank dispatches the b s/t tokens of its sequence slice, so every all-to-all carries
 * b (s/t) k h 2 bytes per rank, not the whole micro-batch's b s k h 2 (that is what it carries
 * without SP, where both TP ranks hold all tokens). --etp 1 (default): whole experts per rank
 * (E/ep of them, 3 h f each), no TP collective around them; --etp 2: experts split along f,
 * the received tokens all-gathered over TP (forward, backward, and the regather for wgrad:
 * 3 all-gathers of the per-rank share) and the expert outputs and input gradients
 * reduce-scattered (2 of the full b s k h 2 buffer) per MoE layer per micro-batch. */
static void test_ep_megatron_share(void **state)
{
    (void)state;
    const char *base = "--model mixtral-8x7b --layers 4 --seq 4096 --tp 2 --pp 2 --dp 8 --ep 8 --global-batch 16";
    const uint64_t h = 4096, E = 8, f = 14336, t = 2, b = 1, sq = 4096, k = 2, m = 2, lps = 2, ep = 8;
    const uint64_t share = b * (sq / t) * k * h * 2, whole = b * sq * k * h * 2;
    assert_int_equal(share, 33554432);
    etk_gen_config c1, c2, cn;
    etk_gen_summary s1, s2, sn;
    char line[512];
    snprintf(line, sizeof line, "%s --sp", base);
    summarize(line, &c1, &s1);
    assert_int_equal(c1.etp, 1);
    snprintf(line, sizeof line, "%s --sp --etp 2", base);
    summarize(line, &c2, &s2);
    snprintf(line, sizeof line, "%s --etp 2", base);
    summarize(line, &cn, &sn);
    for (uint32_t st = 0; st < 2; st++) {
        const etk_gen_stage *x1 = &s1.stages[st], *x2 = &s2.stages[st], *xn = &sn.stages[st];
        assert_int_equal(x1->coll_count[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * lps * m);
        assert_int_equal(x1->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * lps * m * share);
        assert_int_equal(x2->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * lps * m * share);
        assert_int_equal(xn->coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], 4 * lps * m * whole);
        /* expert TP collectives with --etp 2 only */
        assert_int_equal(x2->coll_count[ETK_GEN_GROUP_TP][ETK_COLL_ALL_GATHER] -
                             x1->coll_count[ETK_GEN_GROUP_TP][ETK_COLL_ALL_GATHER], 3 * lps * m);
        assert_int_equal(x2->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_ALL_GATHER] -
                             x1->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_ALL_GATHER], 3 * lps * m * share);
        assert_int_equal(x2->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_REDUCE_SCATTER] -
                             x1->coll_bytes[ETK_GEN_GROUP_TP][ETK_COLL_REDUCE_SCATTER], 2 * lps * m * whole);
        /* parameters: whole experts (E/ep per rank) vs TP-split ones; the same FLOPs per rank */
        uint64_t xw = lps * 3 * h * f * E / ep;
        assert_int_equal(x1->params - x2->params, xw - xw / t);
        assert_true(fabs(x1->model_flops / x2->model_flops - 1) < 1e-12);
    }
    etk_gen_summary_free(&s1);
    etk_gen_summary_free(&s2);
    etk_gen_summary_free(&sn);

    /* node by node (stage 0, micro-batch 0, layer 0), --etp 1: router, top-k, permute and
     * unpermute are memory-bound nodes with the bytes of their shapes (2-byte elements, per
     * rank: n = b s/t = 2048 tokens); the expert GEMMs carry one expert's shape: gemm_m = the
     * tokens per expert = ep n k / E = 4096, n x k = f x h, gemm_groups = E / ep = 1 */
    etk_workload *w;
    etk_error err = {0};
    assert_int_equal(etk_gen_workload(&c1, true, &w, &err), 0);
    const uint64_t n = b * sq / t;
    const etk_node *r = node_named(w, "mb0.L0.router");
    assert_int_equal(attr(r, "num_ops"), 2 * n * h * E);
    assert_int_equal(attr(r, "tensor_size"), (n * h + h * E + n * E) * 2);
    assert_int_equal(attr(node_named(w, "mb0.L0.topk"), "tensor_size"), 2 * n * E * 2);
    assert_int_equal(attr(node_named(w, "mb0.L0.dispatch"), "tensor_size"), (n * h + n * k * h) * 2);
    assert_int_equal(attr(node_named(w, "mb0.L0.combine"), "tensor_size"), (n * k * h + n * E + n * h) * 2);
    assert_int_equal(attr(node_named(w, "mb0.L0.xe.ep_all_to_all"), "comm_size"), share);
    const etk_node *g = node_named(w, "mb0.L0.gate");
    assert_int_equal(attr(g, "gemm_m"), ep * n * k / E);
    assert_int_equal(attr(g, "gemm_n"), f);
    assert_int_equal(attr(g, "gemm_k"), h);
    assert_int_equal(attr(g, "gemm_groups"), E / ep);
    assert_int_equal(attr(g, "num_ops"), 2 * (E / ep) * (ep * n * k / E) * f * h);
    const etk_node *gw = node_named(w, "mb0.L0.down.wgrad");
    assert_int_equal(attr(gw, "gemm_m"), f);
    assert_int_equal(attr(gw, "gemm_n"), h);
    assert_int_equal(attr(gw, "gemm_k"), ep * n * k / E);
    assert_null(etk_node_attr(gw, "gemm_wgrad")); /* BF16: only FP8 grouped wgrads are marked */
    etk_workload_free(w);
    /* --precision fp8: the experts' wgrad nodes carry gemm_wgrad (grouped_fp8_wgrad_factor),
     * their forward and dgrad do not */
    etk_gen_config cf;
    etk_gen_summary sf;
    snprintf(line, sizeof line, "%s --sp --precision fp8", base);
    summarize(line, &cf, &sf);
    assert_int_equal(etk_gen_workload(&cf, true, &w, &err), 0);
    const etk_node *fw = node_named(w, "mb0.L0.down.wgrad");
    assert_non_null(etk_node_attr(fw, "gemm_wgrad"));
    assert_non_null(etk_node_attr(fw, "gemm_grouped"));
    assert_null(etk_node_attr(node_named(w, "mb0.L0.down.dgrad"), "gemm_wgrad"));
    assert_null(etk_node_attr(node_named(w, "mb0.L0.down"), "gemm_wgrad"));
    assert_null(etk_node_attr(node_named(w, "mb0.L0.proj.wgrad"), "gemm_wgrad")); /* dense */
    etk_workload_free(w);
    etk_gen_summary_free(&sf);
}

/* --moe-imbalance F: the busiest rank's expert nodes and all-to-alls x F; model FLOPs (MFU) as
 * balanced, the extra counted in the step's hardware FLOPs: (F - 1) x the expert GEMM and
 * activation FLOPs = (F - 1) x lps m (3 x 3 GEMMs x 2 n k h f + swiglu 5 n k f x (1 + 2)). */
static void test_ep_imbalance(void **state)
{
    (void)state;
    const char *base = "--model mixtral-8x7b --layers 4 --seq 4096 --tp 2 --sp --pp 2 --dp 8 --ep 8 --global-batch 16";
    const double h = 4096, f = 14336, k = 2, n = 2048, lps = 2, m = 2;
    etk_gen_config c1, c2;
    etk_gen_summary s1, s2;
    char line[512];
    summarize(base, &c1, &s1);
    snprintf(line, sizeof line, "%s --moe-imbalance 1.5", base);
    summarize(line, &c2, &s2);
    double xf = lps * m * (9 * 2 * n * k * h * f + 5 * n * k * f * 3);
    for (uint32_t st = 0; st < 2; st++) {
        assert_int_equal(s2.stages[st].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL],
                         s1.stages[st].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL] * 3 / 2);
        assert_true(fabs(s2.stages[st].model_flops / s1.stages[st].model_flops - 1) < 1e-12);
        double extra = s2.stages[st].flops - s1.stages[st].flops;
        if (fabs(extra / (0.5 * xf) - 1) > 1e-9)
            fail_msg("stage %u: extra FLOPs %.6g, want %.6g", st, extra, 0.5 * xf);
    }
    etk_gen_summary_free(&s1);
    etk_gen_summary_free(&s2);
}

/* --moe-max-nodes M (DeepSeek-V3's node-limited routing): deepseek-v3 (256 experts, top-8), TP 1,
 * DP = EP 32: the EP group spans 32 / 8 = 4 nodes; one copy per destination node crosses the
 * network, so the all-to-all bytes are x min(M, 4, 8) / 8: 1/4 with M 2, 1/2 with M 4 or 8. */
static void test_ep_max_nodes(void **state)
{
    (void)state;
    const char *base = "--model deepseek-v3 --layers 5 --hidden 512 --heads 4 --kv-heads 4 --ffn 1024 --vocab 1024 "
                       "--seq 256 --dp 32 --ep 32 --global-batch 32";
    etk_gen_config c;
    etk_gen_summary s0, s;
    summarize(base, &c, &s0);
    uint64_t all = s0.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL];
    /* 2 MoE layers (3 dense), 4 all-to-alls each, b s k h 2 = 256 x 8 x 512 x 2 */
    assert_int_equal(all, 2 * 4 * 256ull * 8 * 512 * 2);
    const struct {
        int m;
        uint64_t num, den;
    } cases[] = {{2, 1, 4}, {4, 1, 2}, {8, 1, 2}};
    for (int i = 0; i < 3; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s --moe-max-nodes %d", base, cases[i].m);
        summarize(line, &c, &s);
        assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], all * cases[i].num / cases[i].den);
        etk_gen_summary_free(&s);
    }
    /* nodes of the cluster's size, not 8 (--gpus-per-node; etk_run_workload sets it from the
     * cluster): 4 GPUs per node, the group spans 8 nodes: x min(M, 8, 8) / 8 = 1/2 with M 4, 1
     * (not binding) with M 8; 16 per node, 2 nodes: x 2/8 with M 4 */
    const struct {
        int g, m;
        uint64_t num, den;
    } nodes[] = {{4, 4, 1, 2}, {4, 8, 1, 1}, {16, 4, 1, 4}, {8, 4, 1, 2}};
    for (int i = 0; i < 4; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s --moe-max-nodes %d --gpus-per-node %d", base, nodes[i].m, nodes[i].g);
        summarize(line, &c, &s);
        assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], all * nodes[i].num / nodes[i].den);
        etk_gen_summary_free(&s);
    }
    /* EP folded over TP: TP 2 (--sp), DP 16, EP 32: rank 0's EP group is ranks 0-31, 4 nodes of 8,
     * so M 8 gives x 4/8; carved from DP (--etp 2, EP 16) the group is 16 ranks of stride 2 over 4
     * nodes as well (x 4/8), and EP 16 folded is ranks 0-15, 2 nodes (x 2/8) */
    const char *fold = "--model deepseek-v3 --layers 5 --hidden 512 --heads 4 --kv-heads 4 --ffn 1024 --vocab 1024 "
                       "--seq 256 --tp 2 --sp --dp 16 --ep 32 --global-batch 16";
    etk_gen_summary_free(&s0);
    summarize(fold, &c, &s0);
    all = s0.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL];
    assert_int_equal(all, 2 * 4 * 128ull * 8 * 512 * 2); /* each TP rank's 128 tokens */
    char line[512];
    snprintf(line, sizeof line, "%s --moe-max-nodes 8", fold);
    summarize(line, &c, &s);
    assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], all / 2);
    etk_gen_summary_free(&s);
    etk_gen_summary_free(&s0);
    fold = "--model deepseek-v3 --layers 5 --hidden 512 --heads 4 --kv-heads 4 --ffn 1024 --vocab 1024 "
           "--seq 256 --tp 2 --sp --dp 16 --ep 16 --global-batch 16 --moe-max-nodes 8";
    summarize(fold, &c, &s);
    assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], all / 4);
    etk_gen_summary_free(&s);
    snprintf(line, sizeof line, "%s --etp 2", fold);
    summarize(line, &c, &s);
    assert_int_equal(s.stages[0].coll_bytes[ETK_GEN_GROUP_EP][ETK_COLL_ALL_TO_ALL], all / 2);
    etk_gen_summary_free(&s);
}

static void test_ep_errors(void **state)
{
    (void)state;
    const char *e = plan_error("--model mixtral-8x7b --dp 3 --ep 3");
    assert_non_null(strstr(e, "--ep 3 does not divide the 8 experts of model mixtral-8x7b"));
    e = plan_error("--model mixtral-8x7b --dp 2 --ep 4");
    assert_string_equal(e, "--ep 4 does not divide --tp x --cp x --dp = 2 (with --etp 1 the expert parallel ranks "
                           "are carved from the tensor, context and data parallel ones)");
    e = plan_error("--model mixtral-8x7b --tp 2 --sp --etp 2 --dp 2 --ep 4");
    assert_string_equal(e, "--ep 4 does not divide --dp 2 (expert parallel ranks are carved from the data-parallel "
                           "ones; with --etp 1 from tensor x context x data parallel)");
    e = plan_error("--model llama2-7b --dp 2 --ep 2");
    assert_non_null(strstr(e, "model llama2-7b has no experts"));
    e = plan_error("--model mixtral-8x7b --tp 2 --dp 2 --ep 2");
    assert_string_equal(e, "--etp 1 (the default) with --tp 2 needs --sp: each TP rank routes the tokens of its sequence "
                           "slice (Megatron requires sequence parallelism for MoE with TP); or --etp 2 (experts split "
                           "over TP)");
    e = plan_error("--model mixtral-8x7b --tp 4 --sp --etp 2 --dp 2");
    assert_string_equal(e, "--etp 2: expert tensor parallelism is 1 or --tp 4");
    e = plan_error("--model mixtral-8x7b --dp 2 --moe-imbalance 0.5");
    assert_non_null(strstr(e, "--moe-imbalance wants the busiest expert's tokens over the mean"));
    e = plan_error("--model deepseek-v3 --dp 32 --ep 32 --moe-max-nodes 4 --gpus-per-node 0");
    assert_string_equal(e, "--gpus-per-node wants a positive integer, got '0'");
    e = plan_error("--model llama2-7b --dp 2 --moe-max-nodes 4");
    assert_string_equal(e, "--moe-max-nodes: model llama2-7b has no experts");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ep_bytes_and_params),
        cmocka_unit_test(test_ep_groups),
        cmocka_unit_test(test_ep_folded),
        cmocka_unit_test(test_ep_validate),
        cmocka_unit_test(test_ep_megatron_share),
        cmocka_unit_test(test_ep_imbalance),
        cmocka_unit_test(test_ep_max_nodes),
        cmocka_unit_test(test_ep_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
