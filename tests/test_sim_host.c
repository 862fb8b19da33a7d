/* test_sim_host.c — the host thread that issues each rank's kernels (src/sim/host.c,
 * compute.host_op_ns): closed-form hand cases (a chain of short kernels where the host is the
 * bottleneck: step = n c + the last kernel; long kernels where the host hides: step = c + the
 * kernels; a host_sync node followed by k kernels: c + D + k c + d; host_ops), folded = unfolded
 * with the host model on (a pipeline and a generated MoE workload whose dispatch nodes carry
 * host_sync), host_op_ns = 0 leaving the old answer, and the errors. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/compute.h"
#include "etkit/gen.h"
#include "etkit/sim.h"
#include "gen_testlib.h"
#include "sim_testlib.h"

/* a GPU kernel of dur_us (replayed: the compute model leaves it as given), after `dep` (0: none);
 * sync: attribute host_sync; ops != NO: attribute host_ops */
#define NO INT64_MIN
static void kern(etk_trace *t, uint64_t id, uint64_t dur_us, uint64_t dep, bool sync, int64_t ops)
{
    sb_node b;
    sb_begin(&b, id, ETK_NODE_COMP, "k");
    b.n.duration_micros = dur_us;
    if (dep)
        sb_dep(&b, dep);
    sb_attr(&b, etk_attr_bool("is_cpu_op", false));
    if (sync)
        sb_attr(&b, etk_attr_bool("host_sync", true));
    if (ops != NO)
        sb_attr(&b, etk_attr_i64("host_ops", ops));
    etk_trace_add(t, &b.n);
}

/* simulate a one-rank workload with host_op_ns = c_ns; the step in ns (fails on error) */
static uint64_t step1(etk_workload *w, double c_ns)
{
    etk_cluster c = sb_cluster(1);
    etk_compute_params p;
    etk_compute_defaults(NULL, &p);
    p.host_op_ns = c_ns;
    etk_sim_opts o = {.quiet = true, .compute = &p};
    etk_sim *s = NULL;
    etk_error err = {0};
    if (etk_sim_workload(w, &c, &o, &s, &err) != 0)
        fail_msg("%s", err.msg);
    uint64_t st = etk_sim_result_get(s)->step_ns;
    etk_sim_free(s);
    return st;
}

static etk_workload *one_rank(void)
{
    etk_workload *w = sb_workload(1);
    w->ranks[0] = etk_trace_new("0.0.4");
    return w;
}

/* n = 10 kernels of 1 us, c = 5 us: kernel k is issued at k c and runs at once (its
 * predecessor ended at (k-1) c + 1 us): step = n c + 1 us = 51 us, chained or independent;
 * without the host model 10 us */
static void host_bound_chain(void **st)
{
    (void)st;
    for (int chained = 0; chained < 2; chained++) {
        etk_workload *w = one_rank();
        for (uint64_t k = 1; k <= 10; k++)
            kern(w->ranks[0], k, 1, chained && k > 1 ? k - 1 : 0, false, NO);
        assert_int_equal(step1(w, 5000), 51000);
        assert_int_equal(step1(w, 0), 10000);
        etk_workload_free(w);
    }
}

/* kernels of 100 us: the host (5 us each) runs ahead; only the first issue shows:
 * step = c + n x 100 us = 1005 us */
static void host_hides_behind_long_kernels(void **st)
{
    (void)st;
    etk_workload *w = one_rank();
    for (uint64_t k = 1; k <= 10; k++)
        kern(w->ranks[0], k, 100, k > 1 ? k - 1 : 0, false, NO);
    assert_int_equal(step1(w, 5000), 1005000);
    assert_int_equal(step1(w, 0), 1000000);
    etk_workload_free(w);
}

/* a host_sync kernel of D = 100 us, then k = 4 independent kernels of d = 1 us: the host waits
 * for the sync kernel (issued at c, done at c + D), then issues one per c: step = c + D + k c + d
 * = 5 + 100 + 20 + 1 = 126 us. Without host_sync the 4 are issued at 10..25 us and queue behind
 * it on the one compute stream: 105 + 4 = 109 us. */
static void sync_then_k_kernels(void **st)
{
    (void)st;
    for (int sync = 0; sync < 2; sync++) {
        etk_workload *w = one_rank();
        kern(w->ranks[0], 1, 100, 0, sync, NO);
        for (uint64_t k = 2; k <= 5; k++)
            kern(w->ranks[0], k, 1, 0, false, NO);
        assert_int_equal(step1(w, 5000), sync ? 126000 : 109000);
        assert_int_equal(step1(w, 0), 104000); /* off: host_sync means nothing */
        etk_workload_free(w);
    }
}

/* host_ops: a node standing for 3 kernels costs 3 c; host_ops 0: not issued by the host.
 * [1 us, host_ops 3] -> [1 us]: issued at 15 and 20 us, step 21 us; with host_ops 0 on the first:
 * issued at 0 and 5 us, step 6 us */
static void host_ops_count(void **st)
{
    (void)st;
    for (int zero = 0; zero < 2; zero++) {
        etk_workload *w = one_rank();
        kern(w->ranks[0], 1, 1, 0, false, zero ? 0 : 3);
        kern(w->ranks[0], 2, 1, 1, false, NO);
        assert_int_equal(step1(w, 5000), zero ? 6000 : 21000);
        etk_workload_free(w);
    }
}

/* two syncs in a row with ready nodes waiting behind both: every node waits for the host to pass
 * the syncs before it. 1: sync 10 us; 2: sync 10 us (after 1); 3, 4: 1 us, independent.
 * h1 = 5, end1 = 15; h2 = 20, end2 = 30; h3 = 35, h4 = 40: step 41 us */
static void consecutive_syncs(void **st)
{
    (void)st;
    etk_workload *w = one_rank();
    kern(w->ranks[0], 1, 10, 0, true, NO);
    kern(w->ranks[0], 2, 10, 1, true, NO);
    kern(w->ranks[0], 3, 1, 0, false, NO);
    kern(w->ranks[0], 4, 1, 0, false, NO);
    assert_int_equal(step1(w, 5000), 41000);
    etk_workload_free(w);
}

static void same_results(const etk_sim_result *a, const etk_sim_result *b)
{
    assert_int_equal(a->n_ranks, b->n_ranks);
    assert_int_equal(a->step_ns, b->step_ns);
    for (uint32_t r = 0; r < a->n_ranks; r++)
        if (memcmp(&a->ranks[r], &b->ranks[r], sizeof a->ranks[r]) != 0)
            fail_msg("rank %u differs", r);
    assert_int_equal(a->n_coll, b->n_coll);
    for (size_t i = 0; i < a->n_coll; i++)
        assert_int_equal(a->coll[i].time_ns, b->coll[i].time_ns);
}

/* folded and unfolded runs are identical with the host model on: the test pipeline (replayed
 * durations, TP and DP collectives, pipeline sends), and its step grows with the host cost */
static void fold_equal_pipeline(void **st)
{
    (void)st;
    etk_workload *w = sb_pipeline(4, 2, 4, 4, 3, 1 << 20, 64 << 20, false);
    etk_cluster c = sb_cluster(w->n_ranks);
    etk_compute_params p;
    etk_compute_defaults(NULL, &p);
    etk_error err = {0};
    uint64_t prev = 0;
    for (int k = 0; k < 3; k++) {
        p.host_op_ns = k * 4000.0;
        etk_sim_opts of = {.quiet = true, .compute = &p}, ou = {.quiet = true, .no_fold = true, .compute = &p};
        etk_sim *f = NULL, *u = NULL;
        if (etk_sim_workload(w, &c, &of, &f, &err) || etk_sim_workload(w, &c, &ou, &u, &err))
            fail_msg("%s", err.msg);
        assert_true(etk_sim_result_get(f)->folded);
        same_results(etk_sim_result_get(f), etk_sim_result_get(u));
        uint64_t s = etk_sim_result_get(f)->step_ns;
        assert_true(s > prev);
        prev = s;
        etk_sim_free(f);
        etk_sim_free(u);
    }
    etk_workload_free(w);
}

static const etk_node *find_node(const etk_trace *t, const char *suffix)
{
    size_t ls = strlen(suffix);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const char *n = t->nodes[i].name;
        size_t l = n ? strlen(n) : 0;
        if (l >= ls && !strcmp(n + l - ls, suffix))
            return &t->nodes[i];
    }
    return NULL;
}

/* the generator marks each MoE layer's dispatch (forward) host_sync and nothing else; folded =
 * unfolded with the host model on; the host cost makes the step longer */
static void gen_moe_sync_fold_equal(void **st)
{
    (void)st;
    etk_gen_config cfg;
    cfg_from(&cfg, "--model mixtral-8x7b --layers 2 --hidden 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 "
                   "--seq 64 --tp 2 --sp --pp 2 --dp 2 --ep 2 --global-batch 8 --micro-batch 1");
    etk_error err = {0};
    etk_workload *wf = NULL, *wu = NULL;
    if (etk_gen_workload(&cfg, true, &wf, &err) || etk_gen_workload(&cfg, false, &wu, &err))
        fail_msg("%s", err.msg);
    const etk_trace *t0 = wu->ranks[0];
    size_t n_sync = 0;
    for (size_t i = 0; i < t0->n_nodes; i++) {
        bool hs = false;
        if (etk_node_bool(&t0->nodes[i], "host_sync", &hs) && hs) {
            n_sync++;
            assert_non_null(strstr(t0->nodes[i].name, "dispatch"));
            assert_null(strstr(t0->nodes[i].name, ".bwd"));
        }
    }
    /* one layer per stage, 4 micro-batches (8 / (1 x dp 2)): 4 forward dispatches */
    assert_int_equal(n_sync, 4);
    assert_non_null(find_node(t0, "dispatch"));
    etk_cluster c;
    gen_test_cluster(&c, cfg.n_ranks);
    etk_compute_params p;
    etk_compute_defaults(NULL, &p);
    uint64_t off = 0;
    for (int k = 0; k < 2; k++) {
        p.host_op_ns = k ? 20000 : 0;
        etk_sim_opts of = {.quiet = true, .compute = &p, .comm_stream_per_group = true},
                     ou = {.quiet = true, .no_fold = true, .compute = &p, .comm_stream_per_group = true};
        etk_sim *sf = NULL, *su = NULL;
        if (etk_sim_workload(wf, &c, &of, &sf, &err) || etk_sim_workload(wu, &c, &ou, &su, &err))
            fail_msg("%s", err.msg);
        assert_true(etk_sim_result_get(sf)->folded);
        same_results(etk_sim_result_get(sf), etk_sim_result_get(su));
        if (!k)
            off = etk_sim_result_get(sf)->step_ns;
        else /* at least the host's issue time of one rank's nodes in a row: tiny kernels */
            assert_true(etk_sim_result_get(sf)->step_ns > off);
        etk_sim_free(sf);
        etk_sim_free(su);
    }
    etk_workload_free(wf);
    etk_workload_free(wu);
}

static void errors(void **st)
{
    (void)st;
    /* host_ops out of range: the node is named */
    etk_workload *w = one_rank();
    kern(w->ranks[0], 1, 1, 0, false, -2);
    etk_cluster c = sb_cluster(1);
    etk_compute_params p;
    etk_compute_defaults(NULL, &p);
    p.host_op_ns = 1000;
    etk_sim_opts o = {.quiet = true, .compute = &p};
    etk_sim *s = NULL;
    etk_error err = {0};
    assert_int_not_equal(etk_sim_workload(w, &c, &o, &s, &err), 0);
    assert_non_null(strstr(err.msg, "node id 1"));
    assert_non_null(strstr(err.msg, "host_ops -2"));
    etk_workload_free(w);
    /* a host_sync node that depends on a later node (trace order is not program order): the host
     * can never pass it; the deadlock report says so */
    w = one_rank();
    kern(w->ranks[0], 1, 1, 2, true, NO);
    kern(w->ranks[0], 2, 1, 0, false, NO);
    memset(&err, 0, sizeof err);
    assert_int_not_equal(etk_sim_workload(w, &c, &o, &s, &err), 0);
    assert_non_null(strstr(err.msg, "deadlock"));
    assert_non_null(strstr(err.msg, "waits for the host thread, which waits for host_sync node id 1"));
    etk_workload_free(w);
    /* the parameter's range */
    memset(&err, 0, sizeof err);
    assert_int_not_equal(etk_compute_set(&p, "host_op_ns=-1", &err), 0);
    assert_non_null(strstr(err.msg, "host_op_ns"));
    assert_int_equal(etk_compute_set(&p, "host_op_ns=12000", &err), 0);
    assert_true(p.host_op_ns == 12000);
}

/* Grounding (docs/compute-model.md, "The host"): kernels-measured.md section 7, B200
 * Llama-3.2-1B batch 1 x 512, eager PyTorch, launch-bound: forward 8.1 ms, forward + backward
 * 48.8 ms. The generator's model of it has 244 forward and 357 backward nodes plus the
 * optimizer's, so 48.8 ms / 601 = 81,198 ns per node. At that cost the simulated step is
 * host-bound: the embedding's backward (the last backward node) is issued at 601 c with the GPU
 * idle, and the optimizer after it: step = 601 c + both kernel times; without the host model the
 * step is GPU-bound, far shorter. */
static void grounding_llama32_1b(void **st)
{
    (void)st;
    etk_gen_config cfg;
    cfg_from(&cfg, "--model llama3-8b --layers 16 --hidden 2048 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 "
                   "--seq 512 --micro-batch 1 --global-batch 1 --attention flash");
    etk_error err = {0};
    etk_workload *w = NULL;
    if (etk_gen_workload(&cfg, false, &w, &err))
        fail_msg("%s", err.msg);
    const etk_trace *t = w->ranks[0];
    size_t fwd = 0, bwd = 0, other = 0;
    const etk_node *opt = NULL;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const char *n = t->nodes[i].name;
        if (strstr(n, "optimizer")) {
            other++;
            opt = &t->nodes[i];
        } else if (strstr(n, ".bwd") || strstr(n, ".dgrad") || strstr(n, ".wgrad")) {
            bwd++;
        } else {
            fwd++;
        }
    }
    assert_int_equal(fwd, 244);
    assert_int_equal(bwd, 357);
    assert_int_equal(other, 1);
    assert_ptr_equal(opt, &t->nodes[t->n_nodes - 1]);
    const uint64_t c = 81198; /* 48.8e6 / 601, rounded */
    assert_true(fabs(48.8e6 / 601 - (double)c) < 0.5);
    etk_cluster cl1;
    if (etk_cluster_preset("dgx-b200", 1, &cl1, &err))
        fail_msg("%s", err.msg);
    cl1.n_dims = 1;
    cl1.dims[0].size = 1;
    cl1.n_npus = 1;
    etk_compute_params p;
    etk_compute_defaults(&cl1.gpu, &p);
    int64_t fl = 0;
    uint64_t by = 0;
    etk_node_i64(opt, "num_ops", &fl);
    etk_node_u64(opt, "tensor_size", &by);
    etk_op_desc op;
    etk_compute_op_from_node(opt, (uint64_t)fl, by, &op);
    uint64_t d_opt = etk_compute_op_ns(&cl1, &p, &op);
    /* the node before it, the embedding's backward (a 128256 x 2048 gradient), runs longer than c */
    const etk_node *emb = &t->nodes[t->n_nodes - 2];
    assert_non_null(strstr(emb->name, "tok_embed.bwd"));
    etk_node_i64(emb, "num_ops", &fl);
    etk_node_u64(emb, "tensor_size", &by);
    etk_compute_op_from_node(emb, (uint64_t)fl, by, &op);
    uint64_t d_emb = etk_compute_op_ns(&cl1, &p, &op);
    assert_true(d_emb > c);
    uint64_t steps[2];
    for (int k = 0; k < 2; k++) {
        p.host_op_ns = k ? (double)c : 0;
        etk_sim_opts o = {.quiet = true, .compute = &p};
        etk_sim *s = NULL;
        if (etk_sim_workload(w, &cl1, &o, &s, &err))
            fail_msg("%s", err.msg);
        steps[k] = etk_sim_result_get(s)->step_ns;
        etk_sim_free(s);
    }
    assert_int_equal(steps[1], 601 * c + d_emb + d_opt); /* issued at 601 c, it delays the optimizer */
    assert_true(steps[0] < steps[1] / 3); /* GPU-bound without it */
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_bound_chain),
        cmocka_unit_test(host_hides_behind_long_kernels),
        cmocka_unit_test(sync_then_k_kernels),
        cmocka_unit_test(host_ops_count),
        cmocka_unit_test(consecutive_syncs),
        cmocka_unit_test(fold_equal_pipeline),
        cmocka_unit_test(gen_moe_sync_fold_equal),
        cmocka_unit_test(errors),
        cmocka_unit_test(grounding_llama32_1b),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
