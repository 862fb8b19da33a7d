/* test_plan.c — plan search (src/plan/): the enumeration's counts against a brute-force count
 * written here from docs/plan.md's rules (every integer tried on every axis, the rules checked
 * one by one), the plans etk_gen_check accepts against the model constraints counted by hand,
 * the lower bound below every simulated step, and branch and bound keeping the exact top k. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "etkit/compute.h"
#include "etkit/plan.h"
#include "etkit/sim.h"

/* the space of the small cases: llama2-7b cut to `layers` layers, `heads` heads and `kv` KV heads */
static void space(etk_plan_space *sp, int64_t layers, int64_t heads, int64_t kv, uint32_t G)
{
    etk_error err = {0};
    etk_plan_space_init(sp);
    assert_int_equal(etk_model_preset("llama2-7b", &sp->base.model, &err), 0);
    sp->base.model_set = true;
    sp->base.dims_override[0] = layers;
    sp->base.dims_override[2] = heads;
    sp->base.dims_override[3] = kv;
    sp->global_batch = G;
}

/* brute force, training: docs/plan.md "The space" rule by rule. Returns the candidates; *valid
 * gets those that also meet the model constraints (heads, KV heads, FFN, vocabulary and sequence
 * divisible by TP; sequence by CP; the CP slice by TP; PP x VPP at most the layers; with VPP the
 * micro-batches a multiple of PP). */
static size_t brute_training(const etk_plan_space *sp, uint32_t N, uint32_t gpn, size_t *valid)
{
    const etk_model *m = &sp->base.model;
    int64_t L = sp->base.dims_override[0], H = sp->base.dims_override[2], KV = sp->base.dims_override[3], S = m->seq;
    uint32_t G = sp->global_batch;
    size_t n = 0;
    *valid = 0;
    for (uint32_t tp = 1; tp <= N; tp++)
        for (uint32_t cp = 1; cp <= N; cp++)
            for (uint32_t pp = 1; pp <= N; pp++)
                for (uint32_t dp = 1; dp <= N; dp++) {
                    if ((uint64_t)tp * cp * pp * dp != N || tp > gpn)
                        continue;
                    if (cp > (S >= 8192 ? S / 4096 : 1) || pp > L || G % dp)
                        continue;
                    for (uint32_t vpp = 1; vpp <= 8; vpp++)
                      for (int e = 0; e < 2; e++) {
                        /* uneven ends: first = last = q - 1, the pp - 2 others q, with pp > 2 */
                        int64_t q = (L + 2) / pp;
                        bool ends = pp > 2 && q * pp == L + 2 && q >= 2;
                        if (e ? !ends || (vpp > 1 && (q % vpp || q - 1 < vpp))
                              : vpp > 1 && (pp < 2 || L % pp || (L / pp) % vpp))
                            continue;
                        for (uint32_t mb = 1; mb <= 8; mb++) {
                            if ((G / dp) % mb)
                                continue;
                            int zeros = dp == 1 ? 1 : 2;       /* {0} or the default {1, 3} */
                            /* none, full (selective: no-op with flash), and full of N layers
                             * per stage for N = ceil(c/4), ceil(c/2), ceil(3c/4) below c, c the
                             * largest stage's layers (q with the uneven ends) */
                            int64_t c = e ? q : (L + pp - 1) / pp;
                            int recs = 2;
                            for (int i = 1; i <= 3; i++) {
                                int64_t x = (int64_t)ceil((double)c * i / 4.0);
                                bool dup = false;
                                for (int j = 1; j < i; j++)
                                    dup |= (int64_t)ceil((double)c * j / 4.0) == x;
                                recs += x >= 1 && x < c && !dup;
                            }
                            int scheds = pp == 1 ? 1 : vpp > 1 ? 1 : 2; /* 1f1b (+ zb-h1) */
                            size_t k = (size_t)zeros * recs * scheds;
                            n += k;
                            uint32_t mbs = G / (mb * dp);
                            bool ok = H % tp == 0 && KV % tp == 0 && m->ffn % tp == 0 && m->vocab % tp == 0 &&
                                      (tp == 1 || S % tp == 0) && S % cp == 0 && (tp == 1 || (S / cp) % tp == 0) &&
                                      (vpp == 1 || ((int64_t)pp * vpp <= L && mbs % pp == 0));
                            if (ok)
                                *valid += k;
                        }
                    }
                }
    return n;
}

static size_t count_valid(const etk_plan_space *sp, const etk_plan *v, size_t n)
{
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        etk_gen_config cfg;
        etk_error err = {0};
        if (etk_plan_config(sp, &v[i], NULL, &cfg, &err) == 0)
            ok++;
    }
    return ok;
}

static void test_enumerate_training(void **st)
{
    (void)st;
    static const struct { int64_t layers, heads, kv; uint32_t N, gpn, G; } cases[] = {
        {6, 16, 4, 16, 8, 32}, {8, 32, 32, 8, 8, 16}, {12, 32, 8, 24, 8, 48}, {4, 16, 2, 32, 4, 64},
        {14, 16, 4, 16, 4, 64}, /* uneven ends at PP 4 (3, 4, 4, 3; VPP 2) and PP 8 (1, 2 x 6, 1) */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        etk_plan_space sp;
        space(&sp, cases[c].layers, cases[c].heads, cases[c].kv, cases[c].G);
        etk_plan *v;
        size_t n;
        etk_error err = {0};
        assert_int_equal(etk_plan_enumerate(&sp, cases[c].N, cases[c].gpn, &v, &n, &err), 0);
        size_t valid, bn = brute_training(&sp, cases[c].N, cases[c].gpn, &valid);
        print_message("case %zu: %zu candidates (brute force %zu), %zu valid (by hand %zu)\n", c, n, bn,
                      count_valid(&sp, v, n), valid);
        assert_int_equal(n, bn);
        assert_int_equal(count_valid(&sp, v, n), valid);
        free(v);
    }
}

/* the first case worked out by hand: 16 GPUs in nodes of 8, 6 layers, 16 heads, G 32, seq 4096
 * (CP 1). (tp, pp, dp) with tp in {1, 2, 4, 8}, pp <= 6, tp pp dp = 16, dp | 32: tp 1: pp 1, 2,
 * 4; tp 2: pp 1, 2, 4; tp 4: pp 1, 2, 4; tp 8: pp 1, 2 = 11 triples. Fixing --tp 4 --pp 2 (dp 2):
 * VPP 1 or 3 (6 layers / 2 = 3 per stage), micro-batch 1, 2, 4, 8 (16 per DP rank), ZeRO 1 and 3,
 * recompute none, full, and full of 1 or 2 of the 3 layers per stage (ceil(3/4) = 1, ceil(6/4) =
 * 2; ceil(9/4) = 3 is all of them), schedules 1f1b and zb-h1 without VPP, 1f1b with:
 * 4 x 2 x 4 x (2 + 1) = 96. */
static void test_enumerate_by_hand(void **st)
{
    (void)st;
    etk_plan_space sp;
    space(&sp, 6, 16, 4, 32);
    sp.base.dims_override[6] = 4096;
    sp.tp = 4;
    sp.pp = 2;
    etk_plan *v;
    size_t n;
    etk_error err = {0};
    assert_int_equal(etk_plan_enumerate(&sp, 16, 8, &v, &n, &err), 0);
    assert_int_equal(n, 96);
    free(v);
    /* --no-partial-recompute: none and full only, 48 */
    sp.no_partial_recompute = true;
    assert_int_equal(etk_plan_enumerate(&sp, 16, 8, &v, &n, &err), 0);
    assert_int_equal(n, 48);
    free(v);
    sp.no_partial_recompute = false;
    /* --tp-across-nodes lets TP 16 in: tp 16 needs pp 1 dp 1 (ZeRO 0 only, one schedule): 5
     * recompute choices (none, full, full of 2, 3 or 5 of the 6 layers) x 4 mb (micro-batch 1, 2,
     * 4, 8 of the 32) */
    sp.tp = 16;
    sp.pp = 0;
    assert_int_equal(etk_plan_enumerate(&sp, 16, 8, &v, &n, &err), 0);
    assert_int_equal(n, 0);
    free(v);
    sp.tp_across_nodes = true;
    assert_int_equal(etk_plan_enumerate(&sp, 16, 8, &v, &n, &err), 0);
    assert_int_equal(n, 20);
    free(v);
}

/* Meta's Llama 3 405B plan (TP 8, PP 16, DP 128, interleaved, one layer fewer on the first and
 * last stage: 7 + 14 x 8 + 7 = 126) is in the space: with TP, PP and DP fixed the pipeline shapes
 * are VPP 1 even (126 = 14 x 8 + 2 x 7 by etkit gen's split), VPP 1 with ends 7, and VPP 2 and 4
 * with ends 7 (the middle stages' 8 layers; VPP 8 would leave a 7-layer end stage a chunk short),
 * and etk_plan_config gives the generator these ends, as `etkit run --first-stage-layers 7`. */
static void test_meta_405b_in_space(void **st)
{
    (void)st;
    etk_plan_space sp;
    etk_error err = {0};
    etk_plan_space_init(&sp);
    assert_int_equal(etk_model_preset("llama3-405b", &sp.base.model, &err), 0);
    sp.base.model_set = true;
    sp.global_batch = 2048;
    sp.tp = 8;
    sp.pp = 16;
    sp.cp = 1;
    sp.micro_batch = 1;
    sp.zero = 1;
    sp.recompute = ETK_RECOMPUTE_NONE;
    etk_plan *v;
    size_t n;
    assert_int_equal(etk_plan_enumerate(&sp, 16384, 8, &v, &n, &err), 0);
    /* VPP 1: even and ends x 2 schedules; VPP 2, 4 with ends: 1f1b */
    assert_int_equal(n, 6);
    size_t meta = n;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(v[i].dp, 128);
        if (v[i].vpp > 1) {
            assert_int_equal(v[i].first_layers, 7);
            assert_int_equal(v[i].last_layers, 7);
        }
        if (v[i].vpp == 4)
            meta = i;
    }
    assert_true(meta < n);
    etk_gen_config cfg;
    assert_int_equal(etk_plan_config(&sp, &v[meta], "h100", &cfg, &err), 0);
    assert_int_equal(cfg.first_stage_layers, 7);
    assert_int_equal(cfg.last_stage_layers, 7);
    char flags[320];
    etk_plan_flags(&sp, &v[meta], flags, sizeof flags);
    assert_string_equal(flags, "--tp 8 --pp 16 --vpp 4 --first-stage-layers 7 --last-stage-layers 7 --dp 128 --sp "
                               "--micro-batch 1 --global-batch 2048 --zero 1 --recompute none --schedule 1f1b");
    free(v);
    /* --even-stages: only the even VPP 1 plans */
    sp.no_uneven_ends = true;
    assert_int_equal(etk_plan_enumerate(&sp, 16384, 8, &v, &n, &err), 0);
    assert_int_equal(n, 2);
    free(v);
    /* recompute searched: Meta's plan also with full recompute of 2, 4 or 6 of the 8 layers of a
     * middle stage (a quarter, half, three quarters), as `etkit run --recompute-stage-layers 2` */
    sp.no_uneven_ends = false;
    sp.recompute = -1;
    sp.vpp = 4;
    assert_int_equal(etk_plan_enumerate(&sp, 16384, 8, &v, &n, &err), 0);
    assert_int_equal(n, 5); /* none, full, full of 2, 4, 6 */
    assert_int_equal(v[2].recompute, ETK_RECOMPUTE_FULL);
    assert_int_equal(v[2].recompute_stage_layers, 2);
    assert_int_equal(v[4].recompute_stage_layers, 6);
    etk_plan_flags(&sp, &v[2], flags, sizeof flags);
    assert_string_equal(flags, "--tp 8 --pp 16 --vpp 4 --first-stage-layers 7 --last-stage-layers 7 --dp 128 --sp "
                               "--micro-batch 1 --global-batch 2048 --zero 1 --recompute full "
                               "--recompute-stage-layers 2 --schedule 1f1b");
    assert_int_equal(etk_plan_config(&sp, &v[2], "h100", &cfg, &err), 0);
    assert_int_equal(cfg.recompute_stage_layers, 2);
    free(v);
}

/* Dominance: of the recompute variants of a plan (ZeRO below 3) that fit in memory, only the
 * least recompute is kept; every row marked dominated names a twin with less recompute that fits
 * (memory estimate within the cap, not refused). A search of llama2-7b cut to 8 layers on one
 * node, with the memory margin set so that some plans fit only with recompute. */
static void test_dominance(void **st)
{
    (void)st;
    etk_plan_space sp;
    space(&sp, 8, 32, 32, 16);
    sp.base.dims_override[6] = 2048;
    etk_error err = {0};
    etk_plan_job job;
    memset(&job, 0, sizeof job);
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &job.cluster, &err), 0);
    job.gpus_per_node = 8;
    snprintf(job.label, sizeof job.label, "dgx-h100");
    etk_plan_opts o;
    etk_plan_opts_defaults(&o);
    o.top = 2;
    o.memory_margin = 0.85;
    etk_plan_result r;
    assert_int_equal(etk_plan_search(&sp, &job, 1, &o, &r, &err), 0);
    double cap = (double)job.cluster.gpu.hbm_bytes * (1 - o.memory_margin);
    size_t dom = 0, partial_kept = 0;
    for (size_t i = 0; i < r.n_rows; i++) {
        const etk_plan_row *a = &r.rows[i];
        bool fits = a->status == ETK_PLAN_SIMULATED || a->status == ETK_PLAN_BOUND || a->status == ETK_PLAN_DOMINATED;
        if (fits)
            assert_true((double)a->mem_bytes <= cap);
        if (a->status != ETK_PLAN_DOMINATED && !(fits && a->plan.recompute == ETK_RECOMPUTE_FULL))
            continue;
        /* the twins: same plan, other recompute; amount none 0 < N layers < every layer */
        uint32_t amt = a->plan.recompute_stage_layers ? a->plan.recompute_stage_layers : 1000, less_fits = 0;
        for (size_t j = 0; j < r.n_rows; j++) {
            const etk_plan_row *b = &r.rows[j];
            etk_plan x = a->plan, y = b->plan;
            x.recompute = y.recompute = 0;
            x.recompute_stage_layers = y.recompute_stage_layers = 0;
            uint32_t bm = b->plan.recompute == ETK_RECOMPUTE_NONE ? 0
                          : b->plan.recompute_stage_layers ? b->plan.recompute_stage_layers : 1000;
            bool bfits = b->status == ETK_PLAN_SIMULATED || b->status == ETK_PLAN_BOUND ||
                         b->status == ETK_PLAN_DOMINATED;
            if (j != i && !memcmp(&x, &y, sizeof x) && b->plan.recompute != ETK_RECOMPUTE_SELECTIVE && bm < amt && bfits)
                less_fits++;
        }
        if (a->status == ETK_PLAN_DOMINATED) {
            dom++;
            assert_true(a->plan.zero < 3);
            assert_true(less_fits > 0);
            assert_non_null(strstr(a->reason, "fits in memory"));
        } else if (a->plan.zero < 3) {
            assert_int_equal(less_fits, 0); /* kept: nothing with less recompute fits */
            partial_kept += a->plan.recompute_stage_layers > 0;
        }
    }
    print_message("%zu rows, %zu dominated, %zu partial recompute kept\n", r.n_rows, dom, partial_kept);
    assert_int_equal(dom, r.n_dominated);
    assert_true(dom > 0);
    assert_true(partial_kept > 0);
    etk_plan_result_free(&r);
}

/* inference: (tp, pp, dp) with dp | requests, EP for MoE carved from DP, micro-batches 1 or PP */
static void test_enumerate_inference(void **st)
{
    (void)st;
    etk_plan_space sp;
    etk_error err = {0};
    etk_plan_space_init(&sp);
    assert_int_equal(etk_model_preset("mixtral-8x7b", &sp.base.model, &err), 0);
    sp.base.model_set = true;
    sp.base.mode = ETK_GEN_MODE_INFERENCE;
    sp.global_batch = 16;
    const uint32_t N = 16, gpn = 8;
    size_t bn = 0;
    for (uint32_t tp = 1; tp <= gpn; tp++)
        for (uint32_t pp = 1; pp <= N; pp++) {
            if (N % (tp * pp) || pp > sp.base.model.layers)
                continue;
            uint32_t dp = N / tp / pp;
            if (16 % dp)
                continue;
            uint32_t batch = 16 / dp, eps = 0, mbs = 1 + (pp > 1 && batch % pp == 0);
            for (uint32_t ep = 1; ep <= dp; ep++)
                eps += dp % ep == 0 && ep <= sp.base.model.experts;
            bn += (size_t)eps * mbs;
        }
    etk_plan *v;
    size_t n;
    assert_int_equal(etk_plan_enumerate(&sp, N, gpn, &v, &n, &err), 0);
    assert_int_equal(n, bn);
    free(v);
}

static void test_topk(void **st)
{
    (void)st;
    etk_plan_topk t;
    assert_int_equal(etk_plan_topk_init(&t, 3), 0);
    assert_true(isinf(etk_plan_topk_kth(&t)));
    double in[] = {5, 1, 4, 2, 8, 0.5};
    for (int i = 0; i < 6; i++)
        etk_plan_topk_add(&t, in[i]);
    assert_true(etk_plan_topk_kth(&t) == 2); /* 0.5, 1, 2 */
    etk_plan_topk_free(&t);
}

/* ---------- the lower bound's timed summary (src/plan/assess.c) against the simulator ----------
 * etk_gen_config.comp_node_ns makes the summary add each compute node's time per stage; with
 * the compute model's time of each node (as the simulator times a generated node) and no overlap
 * slowdown, the sum must be the compute-stream busy time the simulator reports for the stage's
 * rank (tp, cp, dp 0): one stream runs the nodes one after another. Checked per stage, for a dense
 * pipeline (1F1B, TP with SP) and a MoE one (EP, zb-h1, FP8). The summary times each distinct
 * attribute set once (src/gen/nodes.c comp_ns), so this also checks its memo: its sum must be the
 * simulator's, which times every node. */
typedef struct {
    const etk_cluster *cl;
    const etk_compute_params *cp;
    long calls;
} node_time;

static double node_ns(void *u, const etk_node *n)
{
    node_time *t = u;
    int64_t fl = 0;
    uint64_t tb = 0;
    etk_node_i64(n, "num_ops", &fl);
    etk_node_u64(n, "tensor_size", &tb);
    t->calls++;
    if (!fl && !tb)
        return 0;
    etk_op_desc op;
    etk_compute_op_from_node(n, (uint64_t)fl, tb, &op);
    return (double)etk_compute_op_ns(t->cl, t->cp, &op);
}

static void timed_case(const char *const *kv)
{
    etk_error err = {0};
    etk_gen_config c;
    etk_gen_config_init(&c);
    for (int i = 0; kv[i]; i += 2)
        if (etk_gen_set(&c, kv[i], kv[i + 1], &err))
            fail_msg("--%s %s: %s", kv[i], kv[i + 1] ? kv[i + 1] : "", err.msg);
    etk_cluster cl;
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &cl, &err), 0);
    if (!strcmp(c.precision, "fp8"))
        cl.precision = ETK_PREC_BF16; /* as etk_run_set_precision: FP8 GEMMs are marked per node */
    etk_compute_params p;
    etk_compute_defaults(&cl.gpu, &p);
    p.overlap_slowdown = 0;
    node_time t = {&cl, &p, 0};
    c.comp_node_ns = node_ns;
    c.comp_node_ns_ctx = &t;
    etk_gen_summary sum;
    if (etk_gen_check_summary(&c, &sum, &err))
        fail_msg("%s", err.msg);
    assert_true(t.calls > 0);
    c.comp_node_ns = NULL;
    etk_workload *w = NULL;
    if (etk_gen_workload(&c, false, &w, &err))
        fail_msg("%s", err.msg);
    etk_sim_opts o = {.compute = &p, .quiet = true, .comm_stream_per_group = true};
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &cl, &o, &s, &err))
        fail_msg("%s", err.msg);
    const etk_sim_result *r = etk_sim_result_get(s);
    for (uint32_t i = 0; i < sum.n_stages; i++) {
        uint32_t rank = etk_gen_rank_cp(&c, 0, 0, 0, i);
        double want = (double)r->ranks[rank].compute_ns, got = sum.stages[i].compute_ns;
        if (!(want > 0) || got != want)
            fail_msg("%s stage %u: summary %.0f ns, simulator's compute stream %.0f ns", kv[1], i, got, want);
        printf("%s stage %u: compute stream %.0f ns (%ld distinct nodes timed), FLOPs at the BF16 peak %.0f ns\n", kv[1], i,
               got, t.calls, sum.stages[i].flops / cl.gpu.peak_flops[ETK_PREC_BF16] * 1e9);
        /* the forward passes' share (the pipeline wait of the bound): a part of it, not all */
        assert_true(sum.stages[i].fwd_compute_ns > 0 && sum.stages[i].fwd_compute_ns < got / 2);
        /* the timed sum exceeds the FLOP bound's kernels at the peak */
        assert_true(got / 1e9 > sum.stages[i].flops / cl.gpu.peak_flops[ETK_PREC_BF16] / 2);
    }
    etk_sim_free(s);
    etk_workload_free(w);
    etk_gen_summary_free(&sum);
}

static void test_timed_summary(void **st)
{
    (void)st;
    static const char *const dense[] = {"model", "llama3-8b", "layers", "4", "seq", "2048", "tp", "2", "sp", NULL,
                                        "pp", "2", "dp", "2", "micro-batch", "1", "global-batch", "8", NULL};
    static const char *const moe[] = {"model", "mixtral-8x7b", "layers", "2", "seq", "4096", "pp", "2", "dp", "4",
                                      "ep", "4", "micro-batch", "1", "global-batch", "8", "schedule", "zb-h1",
                                      "precision", "fp8", NULL};
    timed_case(dense);
    timed_case(moe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enumerate_training),
        cmocka_unit_test(test_enumerate_by_hand),
        cmocka_unit_test(test_enumerate_inference),
        cmocka_unit_test(test_meta_405b_in_space),
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_dominance),
        cmocka_unit_test(test_timed_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
