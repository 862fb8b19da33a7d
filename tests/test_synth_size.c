/* test_synth_size.c — same-size sampling of the LayerDAG model (etk_synth_sample_opts.nodes,
 * `etkit synth sample --nodes N`, the "LD same size" column of `etkit synth eval`; docs/synth.md
 * "Same-size sampling"): a graph of exactly N nodes, the last layer cut, layers added past the
 * profile's layer count when the graph is still short; valid layered structure; deterministic
 * for a seed; the unconditioned path (nodes 0) untouched. */
#include "testutil.h"
#include "synth_testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/synth.h"
#include "../src/synth/layerdag.h"
#include "../src/synth/nn.h"
#include "../src/synth/synth_internal.h"

/* the 16 graphs of synth_testlib.h: 8 of 3 layers (4 or 5 nodes), 8 of 12 (18 nodes) */
enum { NG = 16 };
static etk_synth_model *fit_small(etk_synth_graph **gs)
{
    etk_error err = {0};
    synth_chain_corpus(gs, NG, 1e6, 1e6);
    uint32_t world = 1;
    etk_synth_model *m = NULL;
    assert_int_equal(etk_synth_fit(gs, NG, &world, 1, NULL, 0, &m, &err), 0);
    assert_int_equal(etk_synth_train_layerdag(m, gs, NG, 3, 1, &err), 0);
    return m;
}

static void free_small(etk_synth_model *m, etk_synth_graph **gs)
{
    etk_synth_model_free(m);
    for (int g = 0; g < NG; g++)
        etk_synth_graph_free(gs[g]);
}

/* layers non-decreasing, every parent in an earlier layer, the main parent in the layer just
 * before, no repeated parent */
static void check_layered(const etk_synth_graph *g)
{
    for (uint32_t i = 0; i < g->n; i++) {
        if (i && g->layer[i] < g->layer[i - 1])
            fail_msg("node %u: layer %u after %u", i, g->layer[i], g->layer[i - 1]);
        for (uint32_t k = g->par_off[i]; k < g->par_off[i + 1]; k++) {
            uint32_t p = g->par[k];
            if (p >= i || g->layer[p] >= g->layer[i])
                fail_msg("node %u (layer %u): parent %u of layer %u", i, g->layer[i], p, g->layer[p]);
            if (k == g->par_off[i] && g->layer[p] + 1 != g->layer[i])
                fail_msg("node %u: main parent %u not in the layer before", i, p);
            for (uint32_t q = g->par_off[i]; q < k; q++)
                if (g->par[q] == p)
                    fail_msg("node %u: parent %u twice", i, p);
        }
        if (g->layer[i] && g->par_off[i] == g->par_off[i + 1])
            fail_msg("node %u of layer %u has no parent", i, g->layer[i]);
    }
    assert_int_equal(g->n ? g->layer[g->n - 1] + 1 : 0, g->n_layers);
}

static bool same_graph(const etk_synth_graph *a, const etk_synth_graph *b)
{
    return a->n == b->n && a->n_edges == b->n_edges && a->n_layers == b->n_layers &&
           !memcmp(a->tok, b->tok, a->n * sizeof *a->tok) && !memcmp(a->layer, b->layer, a->n * sizeof *a->layer) &&
           !memcmp(a->par_off, b->par_off, (a->n + 1) * sizeof *a->par_off) &&
           !memcmp(a->par, b->par, a->n_edges * sizeof *a->par) &&
           !memcmp(a->val, b->val, (size_t)a->n * ETK_SYNTH_N_ATTR * sizeof *a->val);
}

/* the trained model: exactly N nodes for N below, inside and far above the training sizes (4 to
 * 18 nodes), a valid layered graph, deterministic for the seed; nodes 0 is the unconditioned
 * sampler (its samples end at a profile's 3 or 12 layers) */
static void test_exact_size(void **state)
{
    (void)state;
    etk_synth_graph *gs[NG];
    etk_synth_model *m = fit_small(gs);
    etk_error err = {0};
    const uint32_t sizes[] = {1, 2, 5, 9, 17, 40, 300};
    for (size_t q = 0; q < sizeof sizes / sizeof *sizes; q++)
        for (uint64_t seed = 1; seed <= 6; seed++) {
            etk_synth_sample_opts o = {.seed = seed, .nodes = sizes[q], .max_tries = 1000};
            etk_synth_graph *g = NULL, *g2 = NULL;
            assert_int_equal(etk_synth_sample_graph(m, &o, &g, NULL, &err), 0);
            if (g->n != sizes[q])
                fail_msg("nodes %u, seed %d: %u nodes", sizes[q], (int)seed, g->n);
            check_layered(g);
            /* max_nodes is ignored when nodes is given */
            o.max_nodes = 1;
            assert_int_equal(etk_synth_sample_graph(m, &o, &g2, NULL, &err), 0);
            assert_true(same_graph(g, g2));
            etk_synth_graph_free(g), etk_synth_graph_free(g2);
        }
    for (uint64_t seed = 1; seed <= 10; seed++) {
        etk_synth_sample_opts o = {.seed = seed, .max_tries = 1000};
        etk_synth_graph *g = NULL;
        assert_int_equal(etk_synth_sample_graph(m, &o, &g, NULL, &err), 0);
        if (g->n_layers != 3 && g->n_layers != 12)
            fail_msg("unconditioned, seed %d: %u layers (the profiles have 3 or 12)", (int)seed, g->n_layers);
        etk_synth_graph_free(g);
    }
    free_small(m, gs);
}

/* a hand-set size stage that always draws layers of 2 nodes: a graph of N nodes has ceil(N / 2)
 * layers, all of 2 nodes but the last, which is cut to N - 2 (ceil(N / 2) - 1) = 1 for odd N,
 * whatever the profile's layer count (3 or 12) or its scaled count (3 N / 4, 3 N / 5 or 12 N / 18 for
 * this corpus' 4-, 5- and 18-node graphs) */
static void test_cut_by_hand(void **state)
{
    (void)state;
    etk_synth_graph *gs[NG];
    etk_synth_model *m = fit_small(gs);
    etk_error err = {0};
    syn_mlp *sz = &m->ld->size;
    double *w2 = sz->w + (size_t)sz->n_hid * sz->n_in + sz->n_hid, *b2 = w2 + (size_t)sz->n_out * sz->n_hid;
    memset(w2, 0, ((size_t)sz->n_out * sz->n_hid + sz->n_out) * sizeof *w2);
    b2[2] = 40; /* size 2: logit 40 against 0 for the others */
    const uint32_t sizes[] = {1, 2, 3, 8, 13, 41};
    for (size_t q = 0; q < sizeof sizes / sizeof *sizes; q++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            etk_synth_sample_opts o = {.seed = seed, .nodes = sizes[q], .max_tries = 1000};
            etk_synth_graph *g = NULL;
            assert_int_equal(etk_synth_sample_graph(m, &o, &g, NULL, &err), 0);
            uint32_t N = sizes[q], L = (N + 1) / 2;
            assert_int_equal(g->n, N);
            assert_int_equal(g->n_layers, L);
            for (uint32_t i = 0; i < N; i++)
                assert_int_equal(g->layer[i], i / 2);
            check_layered(g);
            etk_synth_graph_free(g);
        }
    free_small(m, gs);
}

/* the profiles' node counts: the sum of their token counts, the training graphs' sizes */
static void test_prof_nodes(void **state)
{
    (void)state;
    etk_synth_graph *gs[NG];
    etk_synth_model *m = fit_small(gs);
    assert_int_equal(m->ld->n_prof, NG);
    for (int g = 0; g < NG; g++)
        assert_int_equal(syn_ld_prof_nodes(&m->ld->prof[g]), gs[g]->n);
    syn_ld_profile p = {0};
    p.tok[0] = 5, p.tok[ETK_SYNTH_N_TOKENS - 1] = 7;
    assert_int_equal(syn_ld_prof_nodes(&p), 12);
    free_small(m, gs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_size),
        cmocka_unit_test(test_cut_by_hand),
        cmocka_unit_test(test_prof_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
