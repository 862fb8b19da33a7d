/* test_sim_fold.c — rank folding: DP x TP x PP training-like workloads of 64 and 512 ranks
 * (tests/sim_testlib.h) simulated folded (one rank per pipeline stage) and unfolded must give
 * identical step times, per-rank figures and communication rows; the same with a
 * generator-style workload holding only class representatives; and folding must be refused when
 * placement is asymmetric (the answer would change). Costs depend on placement through a test
 * hook: a group or message that crosses node boundaries (node = `node_size` consecutive ranks)
 * pays extra, so a wrongly folded run would give a different answer. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/sim.h"
#include "sim_testlib.h"
#include "gen_testlib.h"

static uint32_t node_size = 8;

static uint64_t f_coll(void *ctx, const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                       const uint32_t *ranks, uint32_t n)
{
    (void)ctx, (void)c, (void)type;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        lo = ranks[i] / node_size < lo ? ranks[i] / node_size : lo;
        hi = ranks[i] / node_size > hi ? ranks[i] / node_size : hi;
    }
    return 10000 + bytes / 10 + 50000ull * (hi - lo);
}
static uint64_t f_p2p(void *ctx, const etk_cluster *c, uint32_t s, uint32_t d, uint64_t bytes)
{
    (void)ctx, (void)c;
    return 2000 + bytes / 10 + (s / node_size != d / node_size ? 3000 : 0);
}
static uint64_t f_comp(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx, (void)c, (void)bytes;
    return flops / 1000;
}
static const etk_sim_costs fcosts = {f_coll, f_p2p, f_comp, NULL};

static etk_sim *sim(const etk_workload *w, bool no_fold, etk_error *err)
{
    etk_cluster c = sb_cluster(w->n_ranks);
    etk_sim_opts o = {.no_fold = no_fold, .costs = &fcosts};
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &c, &o, &s, err) != 0)
        return NULL;
    return s;
}

static void same_results(const etk_sim_result *a, const etk_sim_result *b)
{
    assert_int_equal(a->n_ranks, b->n_ranks);
    assert_int_equal(a->step_ns, b->step_ns);
    assert_true(a->flops_per_step == b->flops_per_step);
    for (uint32_t r = 0; r < a->n_ranks; r++)
        if (memcmp(&a->ranks[r], &b->ranks[r], sizeof a->ranks[r]) != 0)
            fail_msg("rank %u differs: compute %llu/%llu exposed %llu/%llu idle %llu/%llu", r,
                     (unsigned long long)a->ranks[r].compute_ns,
                     (unsigned long long)b->ranks[r].compute_ns,
                     (unsigned long long)a->ranks[r].exposed_comm_ns,
                     (unsigned long long)b->ranks[r].exposed_comm_ns,
                     (unsigned long long)a->ranks[r].idle_ns, (unsigned long long)b->ranks[r].idle_ns);
    assert_int_equal(a->n_coll, b->n_coll);
    for (size_t i = 0; i < a->n_coll; i++) {
        assert_int_equal(a->coll[i].type, b->coll[i].type);
        assert_int_equal(a->coll[i].group_size, b->coll[i].group_size);
        assert_int_equal(a->coll[i].n_groups, b->coll[i].n_groups);
        assert_int_equal(a->coll[i].count, b->coll[i].count);
        assert_int_equal(a->coll[i].bytes, b->coll[i].bytes);
        assert_int_equal(a->coll[i].time_ns, b->coll[i].time_ns);
    }
}

static void fold_equal(uint32_t T, uint32_t D, uint32_t P, uint32_t M)
{
    node_size = 8;
    etk_error err = {0};
    etk_workload *w = sb_pipeline(T, D, P, M, 100, 1 << 20, 64 << 20, false);
    etk_sim *f = sim(w, false, &err), *u = sim(w, true, &err);
    if (!f || !u)
        fail_msg("%s", err.msg);
    const etk_sim_result *a = etk_sim_result_get(f), *b = etk_sim_result_get(u);
    assert_true(a->folded);
    assert_int_equal(a->n_classes, P); /* one class per pipeline stage */
    assert_int_equal(a->n_simulated, P);
    assert_false(b->folded);
    assert_int_equal(b->n_simulated, T * D * P);
    assert_int_equal(b->n_events, a->n_events * T * D); /* every rank of a stage has as many nodes */
    same_results(a, b);
    /* The step is at least the critical path of the stage-0 rank: the forward and backward of
     * M micro-batches on stage 0 (100 us and 200 us each) plus its optimizer compute. */
    assert_true(a->step_ns > (uint64_t)M * 300000);
    /* the generator form: only representatives, classes given */
    etk_workload *g = sb_pipeline(T, D, P, M, 100, 1 << 20, 64 << 20, true);
    etk_sim *gs = sim(g, false, &err);
    if (!gs)
        fail_msg("%s", err.msg);
    same_results(etk_sim_result_get(gs), b);
    etk_sim_free(gs);
    etk_workload_free(g);
    etk_sim_free(f);
    etk_sim_free(u);
    etk_workload_free(w);
}

static void test_fold_64(void **st)
{
    (void)st;
    fold_equal(4, 4, 4, 4);
}

static void test_fold_512(void **st)
{
    (void)st;
    fold_equal(8, 16, 4, 4);
}

/* Nodes of 6 ranks: TP group {0..3} sits in node 0 but {4..7} straddles nodes 0 and 1, so ranks
 * of one stage are not equivalent. Folding must be refused, and ranks 0 and 4 (same stage) must
 * indeed finish their TP all-reduces at different times. */
static void test_fold_refused_when_asymmetric(void **st)
{
    (void)st;
    node_size = 6;
    etk_error err = {0};
    etk_workload *w = sb_pipeline(4, 4, 4, 2, 100, 1 << 20, 64 << 20, false);
    etk_cluster c = sb_cluster(64);
    etk_sim_opts o = {.costs = &fcosts};
    uint32_t *co = NULL, *cr = NULL;
    const char *why = NULL;
    int n = etk_sim_classes(w, &c, &o, &co, &cr, &why, &err);
    assert_int_equal(n, 64);
    assert_non_null(why);
    assert_string_equal(why, "corresponding groups are placed differently on the network");
    free(co);
    free(cr);
    etk_sim *s = sim(w, false, &err);
    assert_non_null(s);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_false(r->folded);
    assert_true(r->ranks[0].exposed_comm_ns != r->ranks[4].exposed_comm_ns);
    etk_sim_free(s);
    etk_workload_free(w);
    /* the generator form cannot be simulated then: clear error */
    etk_workload *g = sb_pipeline(4, 4, 4, 2, 100, 1 << 20, 64 << 20, true);
    assert_null(sim(g, false, &err));
    assert_non_null(strstr(err.msg, "holds only class representatives"));
    assert_non_null(strstr(err.msg, "no group placed like its representative"));
    etk_workload_free(g);
    node_size = 8;
}

/* The generator's workloads: folded (one rank per stage, as etk_gen_workload(fold=true) gives
 * it) and unfolded (every rank's trace, --no-fold) must agree exactly, with the real network
 * model on DGX H100 nodes: a small Llama (4 layers, hidden 1024, seq 1024) under TP 4 x PP 2 x
 * DP 8 = 64 ranks on 8 nodes, and TP 8 x PP 4 x DP 16 = 512 ranks on 64 nodes. */
static void gen_fold_equal(const char *tp, const char *pp, const char *dp, uint32_t nodes)
{
    etk_gen_config cfg;
    etk_gen_config_init(&cfg);
    etk_error err = {0};
    const char *set[][2] = {{"model", "llama3-8b"}, {"layers", "4"}, {"hidden", "1024"},
                            {"heads", "8"}, {"kv-heads", "8"}, {"ffn", "4096"}, {"vocab", "32000"},
                            {"seq", "1024"}, {"tp", tp}, {"pp", pp}, {"dp", dp},
                            {"micro-batch", "1"}, {"global-batch", "64"}};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        if (etk_gen_set(&cfg, set[i][0], set[i][1], &err))
            fail_msg("--%s: %s", set[i][0], err.msg);
    if (etk_gen_check(&cfg, &err))
        fail_msg("%s", err.msg);
    etk_cluster c;
    if (etk_cluster_preset("dgx-h100", nodes, &c, &err))
        fail_msg("%s", err.msg);
    etk_workload *wf = NULL, *wu = NULL;
    if (etk_gen_workload(&cfg, true, &wf, &err) || etk_gen_workload(&cfg, false, &wu, &err))
        fail_msg("%s", err.msg);
    etk_sim_opts of = {.quiet = true}, ou = {.quiet = true, .no_fold = true};
    etk_sim *sf = NULL, *su = NULL;
    if (etk_sim_workload(wf, &c, &of, &sf, &err) || etk_sim_workload(wu, &c, &ou, &su, &err))
        fail_msg("%s", err.msg);
    const etk_sim_result *a = etk_sim_result_get(sf), *b = etk_sim_result_get(su);
    assert_true(a->folded);
    assert_int_equal(a->n_simulated, atoi(pp)); /* one representative per pipeline stage */
    assert_false(b->folded);
    assert_int_equal(b->n_simulated, cfg.n_ranks);
    same_results(a, b);
    /* detection on the unfolded files gives the same classes as the generator's */
    uint32_t *co = NULL, *cr = NULL;
    assert_int_equal(etk_sim_classes(wu, &c, &of, &co, &cr, NULL, &err), atoi(pp));
    free(co);
    free(cr);
    etk_sim_free(sf);
    etk_sim_free(su);
    /* one communication stream per group (the CLI's default): folded = unfolded too */
    of.comm_stream_per_group = ou.comm_stream_per_group = true;
    if (etk_sim_workload(wf, &c, &of, &sf, &err) || etk_sim_workload(wu, &c, &ou, &su, &err))
        fail_msg("%s", err.msg);
    assert_true(etk_sim_result_get(sf)->folded);
    same_results(etk_sim_result_get(sf), etk_sim_result_get(su));
    etk_sim_free(sf);
    etk_sim_free(su);
    etk_workload_free(wf);
    etk_workload_free(wu);
}

static void test_gen_fold_64(void **st)
{
    (void)st;
    gen_fold_equal("4", "2", "8", 8);
}

static void test_gen_fold_512(void **st)
{
    (void)st;
    gen_fold_equal("8", "4", "16", 64);
}

/* Class detection must not be quadratic in a data-parallel group (issue #18: `run --layers 1
 * --dp 32768` took 97 s, 99% placing the one 32,768-rank DP group again for every rank). With
 * a counting cost hook that delegates to the real model: DP 4,096 gives one class, and the
 * collective cost is asked once per (group, type, size) — before the fix 4,096 times each. */
static uint64_t n_coll_calls;
static uint64_t count_coll(void *ctx, const etk_cluster *c, etk_coll_type type, uint64_t bytes,
                           const uint32_t *ranks, uint32_t n)
{
    (void)ctx;
    n_coll_calls++;
    return etk_net_coll_ns(c, type, bytes, ranks, n);
}

static void test_dp_only_classes_linear(void **st)
{
    (void)st;
    etk_gen_config cfg;
    etk_error err = {0};
    cfg_from(&cfg, "--model llama2-7b --layers 1 --hidden 512 --heads 8 --kv-heads 8 --ffn 1024 --vocab 1000 "
                   "--seq 128 --dp 4096");
    etk_cluster c;
    if (etk_cluster_preset("dgx-h100", 512, &c, &err))
        fail_msg("%s", err.msg);
    etk_workload *w = NULL;
    if (etk_gen_workload(&cfg, true, &w, &err))
        fail_msg("%s", err.msg);
    /* the distinct (type, size) keys of the representative's collectives */
    const etk_trace *t = w->ranks[0];
    int64_t keys[64][2];
    uint32_t n_keys = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        if (t->nodes[i].type != ETK_NODE_COLL)
            continue;
        int64_t ct = 0, cs = 0;
        etk_node_i64(&t->nodes[i], "comm_type", &ct);
        etk_node_i64(&t->nodes[i], "comm_size", &cs);
        bool seen = false;
        for (uint32_t k = 0; k < n_keys && !seen; k++)
            seen = keys[k][0] == ct && keys[k][1] == cs;
        if (!seen && n_keys < 64) {
            keys[n_keys][0] = ct;
            keys[n_keys++][1] = cs;
        }
    }
    assert_true(n_keys >= 1);
    etk_sim_costs costs = {.coll_ns = count_coll};
    etk_sim_opts o = {.quiet = true, .costs = &costs};
    uint32_t *co = NULL, *cr = NULL;
    n_coll_calls = 0;
    assert_int_equal(etk_sim_classes(w, &c, &o, &co, &cr, NULL, &err), 1);
    assert_int_equal(n_coll_calls, n_keys);
    free(co);
    free(cr);
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_64),
        cmocka_unit_test(test_fold_512),
        cmocka_unit_test(test_fold_refused_when_asymmetric),
        cmocka_unit_test(test_gen_fold_64),
        cmocka_unit_test(test_gen_fold_512),
        cmocka_unit_test(test_dp_only_classes_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
