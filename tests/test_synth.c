/* test_synth.c — etkit synth (include/etkit/synth.h): tokens and operator classes of names, layer
 * peeling of hand-built DAGs (layers counted by hand in the comments), quantile bins, the WL hash
 * (equal under relabelling, different after one edge moves), the count baseline fitted to
 * generated workloads (tables against hand counts), sampling (deterministic for a seed, WL
 * rejection), 100 sampled workloads assembled on 1..16 ranks that the validator finds clean and
 * the simulator runs, the model file round trip and its errors, MMD^2 and KS against closed
 * forms. */
#include "testutil.h"
#include "gen_testlib.h"
#include "synth_testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/sim.h"
#include "etkit/synth.h"
#include "../src/synth/layerdag.h"
#include "../src/synth/nn.h"
#include "../src/synth/synth_internal.h"

#define assert_near(x, y, eps) assert_true(fabs((x) - (y)) <= (eps))

/* a graph from (parent lists) by hand */
static etk_synth_graph *hand(uint32_t n, const uint16_t *tok, const uint32_t *off, const uint32_t *par,
                             uint32_t *order)
{
    etk_synth_graph *g = NULL;
    etk_error err = {0};
    if (etk_synth_graph_build(n, tok, NULL, off, par, &g, order, &err))
        fail_msg("build: %s", err.msg);
    return g;
}

static void test_tokens(void **state)
{
    (void)state;
    assert_int_equal(ETK_SYNTH_N_TOKENS, 43); /* 9 op classes + 10 x 3 collectives + 2 sends + 2 recvs */
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        assert_int_equal(etk_synth_tok_parse(etk_synth_tok_name(t)), t);
    assert_string_equal(etk_synth_tok_name(etk_synth_tok_coll(ETK_COLL_ALL_GATHER, ETK_SYNTH_ROLE_OUTER)),
                        "COLL:ALL_GATHER:outer");
    assert_string_equal(etk_synth_tok_name(etk_synth_tok_p2p(false, ETK_SYNTH_PEER_PREV)), "RECV:prev");
    assert_int_equal(etk_synth_tok_parse("COMP:bogus"), -1);
    /* the generator's names and PyTorch operator names */
    assert_int_equal(etk_synth_op_class("mb0.L0.q", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb3.L1.down.wgrad", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb0.L0.flash_attn", "attention"), ETK_SYNTH_OP_ATTENTION);
    assert_int_equal(etk_synth_op_class("mb0.L0.attn_norm", NULL), ETK_SYNTH_OP_NORM);
    assert_int_equal(etk_synth_op_class("mb0.L0.attn_res", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("mb0.L0.swiglu.bwd", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("mb0.embed.tok_embed", NULL), ETK_SYNTH_OP_EMBEDDING);
    assert_int_equal(etk_synth_op_class("aten::addmm", NULL), ETK_SYNTH_OP_GEMM);
    /* projections of attention blocks are GEMMs (s26: they were attention); the attention
     * products stay attention */
    assert_int_equal(etk_synth_op_class("model.layers.0.self_attn.q_proj", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("encoder.layers.1.self_attn.out_proj", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("h.0.attention.dense", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("self_attn.linear_q", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("model.layers.0.self_attn.softmax", NULL), ETK_SYNTH_OP_ATTENTION);
    assert_int_equal(etk_synth_op_class("model.layers.0.self_attn", NULL), ETK_SYNTH_OP_ATTENTION);
    assert_int_equal(etk_synth_op_class("aten::_softmax", NULL), ETK_SYNTH_OP_ATTENTION);
    assert_int_equal(etk_synth_op_class("aten::copy_", NULL), ETK_SYNTH_OP_MEMORY);
    assert_int_equal(etk_synth_op_class("optimizer.adam_step", NULL), ETK_SYNTH_OP_OPTIMIZER);
    assert_int_equal(etk_synth_op_class("nll_loss_forward", NULL), ETK_SYNTH_OP_LOSS);
    assert_int_equal(etk_synth_op_class("", NULL), ETK_SYNTH_OP_OTHER);
    /* the GPT family's names (the test split of the corpus): LayerNorm as ln1 / ln2 / ln_f (not
     * "head" GEMMs, not "other"), bias-dropout-add and dropouts elementwise (not attention or
     * embedding), inference steps' "decode1/q" GEMMs, unfused attention's scores and av */
    assert_int_equal(etk_synth_op_class("mb0.L0.ln1", NULL), ETK_SYNTH_OP_NORM);
    assert_int_equal(etk_synth_op_class("mb0.L3.ln2.bwd", NULL), ETK_SYNTH_OP_NORM);
    assert_int_equal(etk_synth_op_class("mb1.head.ln_f", NULL), ETK_SYNTH_OP_NORM);
    assert_int_equal(etk_synth_op_class("decode1/ln1", NULL), ETK_SYNTH_OP_NORM);
    assert_int_equal(etk_synth_op_class("mb0.L0.attn_bda", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("mb0.L0.ffn_bda.bwd", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("mb0.embed.emb_drop", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("decode2/attn_drop", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("decode1/q", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("decode1/fc2", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("decode1/scores", NULL), ETK_SYNTH_OP_ATTENTION);
    assert_int_equal(etk_synth_op_class("decode1/av", NULL), ETK_SYNTH_OP_ATTENTION);
    assert_int_equal(etk_synth_op_class("SplitBackward0", NULL), ETK_SYNTH_OP_MEMORY);
    /* components, not substrings: "ln" inside a word is not a norm */
    assert_int_equal(etk_synth_op_class("mb0.xln", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.lnx", NULL), ETK_SYNTH_OP_OTHER);
    /* the generator's GEMM names are whole last components (s25: they were prefixes, so "kiln"
     * was the GEMM k and "value_x" the GEMM v) */
    assert_int_equal(etk_synth_op_class("kiln", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.value_x", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("decode1/kiln", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.L0.quux", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.L0.output", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.L0.update", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.L0.topk", NULL), ETK_SYNTH_OP_OTHER);
    assert_int_equal(etk_synth_op_class("mb0.L0.rope_k", NULL), ETK_SYNTH_OP_ELEMENTWISE);
    assert_int_equal(etk_synth_op_class("mb0.L0.k", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb0.L0.v", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("recompute.up", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb0.L0.fc1", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb0.L0.expert3", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb0.L0.kv_a", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("mb0.L0.router", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("model.layers.0.mlp.up_proj", NULL), ETK_SYNTH_OP_GEMM);
    assert_int_equal(etk_synth_op_class("h.0.mlp.dense_h_to_4h", NULL), ETK_SYNTH_OP_GEMM);
    assert_true(etk_synth_tok_has_attr(ETK_SYNTH_OP_GEMM, ETK_SYNTH_A_FLOPS));
    assert_false(etk_synth_tok_has_attr(ETK_SYNTH_OP_GEMM, ETK_SYNTH_A_COMM));
    assert_true(etk_synth_tok_has_attr(etk_synth_tok_coll(0, 0), ETK_SYNTH_A_COMM));
}

static void test_peel(void **state)
{
    (void)state;
    /* file order 0..6, parents listed per node:
     *   node 0: parents {3}     node 1: {}      node 2: {1, 0}
     *   node 3: {}              node 4: {2, 3}  node 5: {1, 1, 5} (dup + self loop dropped)
     *   node 6: {4, 1}
     * layers: 0 = {1, 3}; 1 = {0, 5}; 2 = {2}; 3 = {4}; 4 = {6} -> new order 1 3 0 5 2 4 6 */
    uint16_t tok[7] = {0, 1, 2, 3, 4, 5, 6};
    uint32_t off[8] = {0, 1, 1, 3, 3, 5, 8, 10};
    uint32_t par[10] = {3, 1, 0, 2, 3, 1, 1, 5, 4, 1};
    uint32_t order[7];
    etk_synth_graph *g = hand(7, tok, off, par, order);
    assert_int_equal(g->n_layers, 5);
    uint32_t want_order[7] = {1, 3, 0, 5, 2, 4, 6}, want_layer[7] = {0, 0, 1, 1, 2, 3, 4};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(order[i], want_order[i]);
        assert_int_equal(g->tok[i], want_order[i]);
        assert_int_equal(g->layer[i], want_layer[i]);
    }
    assert_int_equal(g->n_edges, 8); /* 10 listed, less the duplicate and the self loop */
    etk_synth_graph_free(g);
}

static void test_peel_edges_and_cycle(void **state)
{
    (void)state;
    /* chain with a skip: 0 -> 1 -> 2, 0 -> 2: node 2's parents new-indexed {1, 0}: the main parent
     * (layer 1) first */
    uint16_t tok[3] = {0, 0, 0};
    uint32_t off[4] = {0, 0, 1, 3}, par[3] = {0, 0, 1};
    etk_synth_graph *g = hand(3, tok, off, par, NULL);
    assert_int_equal(g->n_layers, 3);
    assert_int_equal(g->par_off[2], 1);
    assert_int_equal(g->par[1], 1);
    assert_int_equal(g->par[2], 0);
    etk_synth_graph_free(g);
    /* a cycle 0 -> 1 -> 0 with a source 2 is refused, naming the count placed */
    uint32_t off2[4] = {0, 1, 2, 2}, par2[2] = {1, 0};
    etk_error err = {0};
    assert_int_equal(etk_synth_graph_build(3, tok, NULL, off2, par2, &g, NULL, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "cycle (1 of 3 nodes"));
}

static void test_wl(void **state)
{
    (void)state;
    /* a diamond a -> (b, c) -> d with tokens 0,1,2,3 in two file orders: isomorphic */
    uint16_t t1[4] = {0, 1, 2, 3}, t2[4] = {3, 2, 1, 0};
    uint32_t o1[5] = {0, 0, 1, 2, 4}, p1[4] = {0, 0, 1, 2};
    uint32_t o2[5] = {0, 2, 3, 4, 4}, p2[4] = {1, 2, 3, 3};
    etk_synth_graph *a = hand(4, t1, o1, p1, NULL), *b = hand(4, t2, o2, p2, NULL);
    assert_true(etk_synth_graph_wl_hash(a) == etk_synth_graph_wl_hash(b));
    /* d fed by a and b, c a sink: same tokens, same edge count, not isomorphic */
    uint32_t o3[5] = {0, 0, 1, 2, 4}, p3[4] = {0, 0, 1, 0};
    etk_synth_graph *c = hand(4, t1, o3, p3, NULL);
    assert_true(etk_synth_graph_wl_hash(a) != etk_synth_graph_wl_hash(c));
    etk_synth_graph_free(a);
    etk_synth_graph_free(b);
    etk_synth_graph_free(c);
}

/* a generated training corpus: two plans (the second with pipeline stages and sends/recvs) */
static void corpus(etk_synth_graph ***gs, size_t *n, uint32_t *world, uint32_t *inner)
{
    const char *plans[] = {
        "--model llama2-7b --layers 2 --hidden 256 --heads 4 --kv-heads 4 --ffn 512 --seq 64 --vocab 1000 --tp 2 "
        "--dp 2 --global-batch 4",
        "--model llama2-7b --layers 2 --hidden 256 --heads 4 --kv-heads 4 --ffn 512 --seq 64 --vocab 1000 --tp 2 "
        "--pp 2 --dp 2 --global-batch 8",
    };
    *gs = NULL;
    *n = 0;
    for (int i = 0; i < 2; i++) {
        etk_gen_config c;
        cfg_from(&c, plans[i]);
        etk_workload *w = NULL;
        etk_error err = {0};
        if (etk_gen_workload(&c, false, &w, &err) || etk_synth_workload_graphs(w, gs, n, &inner[i], &err))
            fail_msg("%s: %s", plans[i], err.msg);
        world[i] = w->n_ranks;
        etk_workload_free(w);
    }
}

/* the corpus above and the count model fitted to it (its two plans' rank classes) */
static etk_synth_model *corpus_fit(etk_synth_graph ***gs, size_t *n)
{
    uint32_t world[2], inner[2];
    corpus(gs, n, world, inner);
    etk_synth_model *m = NULL;
    etk_error err = {0};
    if (etk_synth_fit(*gs, *n, world, 2, inner, 2, &m, &err))
        fail_msg("%s", err.msg);
    return m;
}

static void free_gs(etk_synth_graph **gs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        etk_synth_graph_free(gs[i]);
    free(gs);
}

static void test_extract_fit(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    uint32_t world[2], inner[2];
    corpus(&gs, &n, world, inner);
    /* one rank class in the first plan (4 identical TP x DP ranks), two pipeline stages in the
     * second */
    assert_int_equal(n, 3);
    assert_int_equal(world[0], 4);
    assert_int_equal(world[1], 8);
    assert_int_equal(inner[0], 2); /* TP groups of 2 consecutive ranks */
    /* the first graph: its TP all-reduces are inner, its DP gradient reduction outer */
    size_t coll_inner = 0, coll_outer = 0, send = 0, recv = 0;
    for (size_t k = 0; k < n; k++)
        for (uint32_t i = 0; i < gs[k]->n; i++) {
            int t = gs[k]->tok[i];
            coll_inner += t == etk_synth_tok_coll(ETK_COLL_ALL_REDUCE, ETK_SYNTH_ROLE_INNER);
            coll_outer += etk_synth_tok_type(t) == ETK_NODE_COLL && etk_synth_tok_role(t) == ETK_SYNTH_ROLE_OUTER;
            send += etk_synth_tok_type(t) == ETK_NODE_SEND;
            recv += etk_synth_tok_type(t) == ETK_NODE_RECV;
        }
    assert_true(coll_inner > 0);
    assert_true(coll_outer > 0);
    assert_true(send > 0 && send == recv); /* pipeline: as many activations sent as gradients received */
    etk_synth_model *m = NULL;
    etk_error err = {0};
    assert_int_equal(etk_synth_fit(gs, n, world, 2, inner, 2, &m, &err), 0);
    assert_int_equal(etk_synth_model_n_graphs(m), 3);
    assert_int_equal(etk_synth_model_inner(m, 8), 2);
    assert_int_equal(etk_synth_model_inner(m, 3), 0); /* 2 does not divide 3 */
    assert_int_equal(etk_synth_model_inner(m, 2), 0); /* an inner group as large as the world: none */
    /* sampling: deterministic for a seed, different for another */
    etk_synth_sample_opts o = {.seed = 5};
    etk_synth_graph *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(etk_synth_sample_graph(m, &o, &a, NULL, &err), 0);
    assert_int_equal(etk_synth_sample_graph(m, &o, &b, NULL, &err), 0);
    o.seed = 6;
    assert_int_equal(etk_synth_sample_graph(m, &o, &c, NULL, &err), 0);
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->tok, b->tok, a->n * sizeof *a->tok);
    assert_memory_equal(a->val, b->val, a->n * ETK_SYNTH_N_ATTR * sizeof *a->val);
    assert_true(etk_synth_graph_wl_hash(a) != etk_synth_graph_wl_hash(c));
    /* every sampled node of a layer > 0 has its main parent in the layer before; layer counts
     * are ones seen in training (3 graphs: 3 values at most) */
    for (uint32_t i = 0; i < a->n; i++)
        if (a->layer[i])
            assert_int_equal(a->layer[a->par[a->par_off[i]]], a->layer[i] - 1);
    bool seen = false;
    for (size_t k = 0; k < n; k++)
        seen |= gs[k]->n_layers == a->n_layers;
    assert_true(seen || a->n_layers < gs[0]->n_layers); /* or cut by max_nodes (none here) */
    /* attribute values of a sampled GEMM lie inside the range of the training GEMMs */
    double lo = 1e300, hi = 0;
    for (size_t k = 0; k < n; k++)
        for (uint32_t i = 0; i < gs[k]->n; i++)
            if (gs[k]->tok[i] == ETK_SYNTH_OP_GEMM) {
                double f = gs[k]->val[(size_t)i * ETK_SYNTH_N_ATTR];
                lo = f < lo ? f : lo;
                hi = f > hi ? f : hi;
            }
    for (uint32_t i = 0; i < a->n; i++)
        if (a->tok[i] == ETK_SYNTH_OP_GEMM) {
            double f = a->val[(size_t)i * ETK_SYNTH_N_ATTR];
            assert_true(f >= lo && f <= hi);
        }
    /* max_nodes cuts whole layers */
    o.max_nodes = 20;
    etk_synth_graph *small = NULL;
    assert_int_equal(etk_synth_sample_graph(m, &o, &small, NULL, &err), 0);
    assert_true(small->n <= 20 && small->n > 0);
    etk_synth_graph_free(small);
    etk_synth_graph_free(a);
    etk_synth_graph_free(b);
    etk_synth_graph_free(c);
    etk_synth_model_free(m);
    free_gs(gs, n);
}

/* a model memorising its only graph: a chain of 3 GEMMs has one layer count, one size, one
 * token: every sample is isomorphic to it and is rejected */
static void test_wl_rejection(void **state)
{
    (void)state;
    uint16_t tok[3] = {0, 0, 0};
    uint32_t off[4] = {0, 0, 1, 2}, par[2] = {0, 1};
    etk_synth_graph *g = hand(3, tok, off, par, NULL);
    etk_synth_model *m = NULL;
    etk_error err = {0};
    uint32_t world = 1;
    assert_int_equal(etk_synth_fit(&g, 1, &world, 1, NULL, 0, &m, &err), 0);
    etk_synth_graph *s = NULL;
    uint32_t rej = 0;
    etk_synth_sample_opts o = {.seed = 1, .max_tries = 7};
    assert_int_equal(etk_synth_sample_graph(m, &o, &s, &rej, &err), ETK_EINVAL);
    assert_int_equal(rej, 7);
    assert_non_null(strstr(err.msg, "all 7 samples were isomorphic to a training graph"));
    etk_synth_model_free(m);
    etk_synth_graph_free(g);
}

static void test_assemble_valid_and_simulated(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    etk_synth_model *m = corpus_fit(&gs, &n);
    etk_error err = {0};
    const uint32_t ranks[] = {1, 2, 3, 4, 8, 16};
    for (uint64_t seed = 1; seed <= 100; seed++) {
        etk_synth_sample_opts o = {.seed = seed};
        etk_synth_graph *g = NULL;
        assert_int_equal(etk_synth_sample_graph(m, &o, &g, NULL, &err), 0);
        uint32_t nr = ranks[seed % 6];
        etk_workload *w = NULL;
        if (etk_synth_assemble(g, nr, etk_synth_model_inner(m, nr), &w, &err))
            fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
        char what[64];
        snprintf(what, sizeof what, "sample seed %llu on %u ranks", (unsigned long long)seed, nr);
        gen_expect_clean(w, what);
        if (seed % 10 == 0) { /* ten of them through the simulator */
            etk_cluster c;
            assert_int_equal(nr <= 8 ? etk_cluster_preset_gpus("dgx-h100", 1, nr, &c, &err)
                                     : etk_cluster_preset("dgx-h100", nr / 8, &c, &err),
                             0);
            etk_sim_opts so = {0};
            etk_sim *s = NULL;
            if (etk_sim_workload(w, &c, &so, &s, &err))
                fail_msg("%s: %s", what, err.msg);
            assert_true(etk_sim_result_get(s)->step_ns > 0);
            etk_sim_free(s);
        }
        etk_workload_free(w);
        etk_synth_graph_free(g);
    }
    etk_synth_model_free(m);
    free_gs(gs, n);
}

static void test_assemble_by_hand(void **state)
{
    (void)state;
    /* gemm -> send(next) -> all_reduce(inner) -> gemm on 4 ranks with inner groups of 2 */
    uint16_t tok[4] = {ETK_SYNTH_OP_GEMM, (uint16_t)etk_synth_tok_p2p(true, ETK_SYNTH_PEER_NEXT),
                       (uint16_t)etk_synth_tok_coll(ETK_COLL_ALL_REDUCE, ETK_SYNTH_ROLE_INNER), ETK_SYNTH_OP_GEMM};
    uint32_t off[5] = {0, 0, 1, 2, 3}, par[3] = {0, 1, 2};
    double val[16] = {1e9, 4096, 0, 0, 0, 0, 1024, 0, 0, 0, 2048, 0, 2e9, 8192, 0, 0};
    etk_synth_graph *g = NULL;
    etk_error err = {0};
    assert_int_equal(etk_synth_graph_build(4, tok, val, off, par, &g, NULL, &err), 0);
    etk_workload *w = NULL;
    assert_int_equal(etk_synth_assemble(g, 4, 2, &w, &err), 0);
    /* groups: world, inner {0,1} {2,3}, outer {0,2} {1,3} */
    assert_int_equal(w->groups->n_groups, 5);
    assert_int_equal(etk_groups_find(w->groups, "3")->ranks[0], 2);
    assert_int_equal(etk_groups_find(w->groups, "5")->ranks[1], 3);
    /* rank 3: 5 nodes (the send's twin recv added), send to 0 and recv from 2 with tag 1 */
    const etk_trace *t = w->ranks[3];
    assert_int_equal(t->n_nodes, 5);
    int64_t v;
    assert_int_equal(t->nodes[1].type, ETK_NODE_SEND);
    assert_true(etk_node_i64(&t->nodes[1], "comm_dst", &v) && v == 0);
    assert_true(etk_node_i64(&t->nodes[1], "comm_tag", &v) && v == 1);
    assert_int_equal(t->nodes[2].type, ETK_NODE_RECV);
    assert_true(etk_node_i64(&t->nodes[2], "comm_src", &v) && v == 2);
    assert_true(etk_node_i64(&t->nodes[2], "comm_size", &v) && v == 1024);
    assert_string_equal(etk_node_str(&t->nodes[3], "pg_name"), "3"); /* rank 3's inner group */
    assert_true(etk_node_i64(&t->nodes[0], "num_ops", &v) && v == 1000000000);
    gen_expect_clean(w, "hand-built");
    etk_workload_free(w);
    /* one rank: communication becomes local compute */
    assert_int_equal(etk_synth_assemble(g, 1, 0, &w, &err), 0);
    assert_int_equal(w->ranks[0]->n_nodes, 4);
    assert_int_equal(w->ranks[0]->nodes[1].type, ETK_NODE_COMP);
    gen_expect_clean(w, "one rank");
    etk_workload_free(w);
    assert_int_equal(etk_synth_assemble(g, 0, 0, &w, &err), ETK_EINVAL);
    etk_synth_graph_free(g);
}

static void test_model_file(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    etk_synth_model *m = corpus_fit(&gs, &n), *m2 = NULL;
    etk_error err = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/model.json", tu_tmpdir());
    assert_int_equal(etk_synth_model_save(m, path, &err), 0);
    assert_int_equal(etk_synth_model_load(path, &m2, &err), 0);
    /* the loaded model samples the same graph as the fitted one */
    etk_synth_sample_opts o = {.seed = 11};
    etk_synth_graph *a = NULL, *b = NULL;
    assert_int_equal(etk_synth_sample_graph(m, &o, &a, NULL, &err), 0);
    assert_int_equal(etk_synth_sample_graph(m2, &o, &b, NULL, &err), 0);
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->n_edges, b->n_edges);
    assert_memory_equal(a->par, b->par, a->n_edges * sizeof *a->par);
    assert_memory_equal(a->val, b->val, a->n * ETK_SYNTH_N_ATTR * sizeof *a->val);
    assert_int_equal(etk_synth_model_default_ranks(m2), 4); /* 4 and 8 seen once each: the first */
    /* malformed files: the file and the field named */
    size_t len;
    char *text = (char *)tu_read(path, &len);
    struct {
        const char *from, *to, *msg;
    } cases[] = {
        {"\"version\":5", "\"version\":4", "field 'version': wanted 5"},
        {"\"format\":\"etkit-synth-model\"", "\"format\":\"x\"", "field 'format'"},
        {"\"layer_count\":[[", "\"layer_count\":[[-", "field 'layer_count'"},
        {"\"COMP:gemm\":[[", "\"COMP:gemmx\":[[", "unknown token name"},
        {"\"attr_bins_by_scale\":{\"bounds\":[", "\"attr_bins_by_scale\":{\"bounds\":[9,", "field 'attr_bins_by_scale'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *p = strstr(text, cases[k].from);
        assert_non_null(p);
        char bad[600];
        snprintf(bad, sizeof bad, "%s/bad%zu.json", tu_tmpdir(), k);
        FILE *f = fopen(bad, "w");
        fwrite(text, 1, (size_t)(p - text), f);
        fputs(cases[k].to, f);
        fputs(p + strlen(cases[k].from), f);
        fclose(f);
        etk_synth_model *x = NULL;
        assert_true(etk_synth_model_load(bad, &x, &err) < 0);
        assert_null(x);
        if (!strstr(err.msg, cases[k].msg) || !strstr(err.msg, bad))
            fail_msg("case %zu: %s", k, err.msg);
    }
    free(text);
    etk_synth_graph_free(a);
    etk_synth_graph_free(b);
    etk_synth_model_free(m);
    etk_synth_model_free(m2);
    free_gs(gs, n);
}

/* quantile bins with a point mass: 10 GEMMs in a chain with FLOPs 0 x 6, 100, 200, 400, 800.
 * Edges at indices floor(k * 9 / 8) = 0 1 2 3 4 5 6 7 9: 0 0 0 0 0 0 100 200 800. Bins: 0 is the
 * point 0 (six nodes), 6 = [100, 200) (100), 7 = [200, 800) (200, 400), 8 = the point 800. */
static void test_bins(void **state)
{
    (void)state;
    uint16_t tok[10] = {0};
    uint32_t off[11], par[9];
    double val[40] = {0};
    const double f[10] = {0, 0, 0, 0, 0, 0, 100, 200, 400, 800};
    for (int i = 0; i < 10; i++) {
        off[i] = i ? (uint32_t)i - 1 : 0;
        if (i)
            par[i - 1] = (uint32_t)i - 1;
        val[i * ETK_SYNTH_N_ATTR + ETK_SYNTH_A_FLOPS] = f[i];
    }
    off[10] = 9;
    etk_synth_graph *g = NULL;
    etk_error err = {0};
    assert_int_equal(etk_synth_graph_build(10, tok, val, off, par, &g, NULL, &err), 0);
    etk_synth_model *m = NULL;
    assert_int_equal(etk_synth_fit(&g, 1, NULL, 0, NULL, 0, &m, &err), 0);
    const double want_edges[9] = {0, 0, 0, 0, 0, 0, 100, 200, 800};
    for (int k = 0; k < 9; k++)
        assert_near(m->edges[0][ETK_SYNTH_A_FLOPS][k], want_edges[k], 0);
    const uint32_t want_bin[10] = {0, 0, 0, 0, 0, 0, 6, 7, 7, 8}, digit = SYN_BIN_CODES * SYN_BIN_CODES * SYN_BIN_CODES;
    for (int i = 0; i < 10; i++)
        assert_int_equal(syn_bin_code(m, 0, g->val + (size_t)i * ETK_SYNTH_N_ATTR) / digit, want_bin[i]);
    /* values drawn inside the bins: the points exactly, the ranges inside [lo, hi) */
    srng r = {42};
    double v[ETK_SYNTH_N_ATTR];
    for (int k = 0; k < 200; k++) {
        syn_bin_values(m, 0, 0 * digit, &r, v);
        assert_near(v[ETK_SYNTH_A_FLOPS], 0, 0);
        syn_bin_values(m, 0, 8 * digit, &r, v);
        assert_near(v[ETK_SYNTH_A_FLOPS], 800, 0);
        syn_bin_values(m, 0, 7 * digit, &r, v);
        assert_true(v[ETK_SYNTH_A_FLOPS] >= 200 && v[ETK_SYNTH_A_FLOPS] <= 800);
        syn_bin_values(m, 0, 6 * digit, &r, v);
        assert_true(v[ETK_SYNTH_A_FLOPS] >= 100 && v[ETK_SYNTH_A_FLOPS] <= 200);
    }
    etk_synth_model_free(m);
    etk_synth_graph_free(g);
}

static void test_metrics(void **state)
{
    (void)state;
    /* KS: {1,2,3,4} vs {3,4,5,6}: after 2 the CDFs are 0.5 and 0 -> 0.5 */
    double a[4] = {4, 1, 3, 2}, b[4] = {3, 4, 5, 6};
    assert_near(etk_synth_ks(a, 4, b, 4), 0.5, 1e-12);
    assert_near(etk_synth_ks(a, 4, a, 4), 0, 1e-12);
    /* MMD^2 of a set with itself is 0; of one graph of tokens {0} against one of tokens {1}:
     * TV = 1, k = exp(-1/2): 1 + 1 - 2 exp(-0.5) */
    uint16_t t0[1] = {0}, t1[1] = {1};
    uint32_t off[2] = {0, 0};
    etk_synth_graph *x = hand(1, t0, off, NULL, NULL), *y = hand(1, t1, off, NULL, NULL);
    assert_near(etk_synth_mmd2(NULL, &x, 1, &x, 1, ETK_SYNTH_D_TOKEN), 0, 1e-12);
    assert_near(etk_synth_mmd2(NULL, &x, 1, &y, 1, ETK_SYNTH_D_TOKEN), 2 - 2 * exp(-0.5), 1e-12);
    /* same layer sizes: 0 */
    assert_near(etk_synth_mmd2(NULL, &x, 1, &y, 1, ETK_SYNTH_D_LAYERSIZE), 0, 1e-12);
    etk_synth_graph_free(x);
    etk_synth_graph_free(y);
}

/* backpropagation against central finite differences of the loss, on every parameter of a small
 * MLP, for softmax cross-entropy and for the logistic loss */
static double loss_of(syn_mlp *m, const double *x, int target, bool logistic)
{
    double h[8], y[5], dy[5];
    syn_mlp_forward(m, x, h, y);
    return logistic ? syn_bce(y[0], target, dy) : syn_softmax_ce(y, m->n_out, target, dy);
}

static void gradcheck(int n_out, bool logistic)
{
    srng r = {7};
    syn_mlp m;
    assert_int_equal(syn_mlp_init(&m, 6, 8, n_out, &r), 0);
    double x[6] = {0.3, -1.2, 0.8, 0.05, 1.5, -0.4}, h[8], y[5], dy[5];
    int target = logistic ? 1 : 2;
    syn_mlp_forward(&m, x, h, y);
    if (logistic)
        syn_bce(y[0], target, dy);
    else
        syn_softmax_ce(y, n_out, target, dy);
    syn_mlp_backward(&m, x, h, dy);
    size_t checked = 0;
    for (size_t i = 0; i < m.n_par; i++) {
        double w = m.w[i], e = 1e-5;
        m.w[i] = w + e;
        double lp = loss_of(&m, x, target, logistic);
        m.w[i] = w - e;
        double lm = loss_of(&m, x, target, logistic);
        m.w[i] = w;
        double num = (lp - lm) / (2 * e);
        if (fabs(num - m.g[i]) > 1e-6 * (1 + fabs(num)))
            fail_msg("parameter %zu: backprop %.9g, finite difference %.9g", i, m.g[i], num);
        checked += m.g[i] != 0;
    }
    assert_true(checked > m.n_par / 4); /* most units active: the check covered real gradients */
    syn_mlp_free(&m);
}

static void test_gradcheck(void **state)
{
    (void)state;
    gradcheck(5, false);
    gradcheck(1, true);
    /* Adam moves a 1-parameter problem towards its minimum: fit y = sigmoid(b) to target 1 */
    srng r = {1};
    syn_mlp m;
    assert_int_equal(syn_mlp_init(&m, 1, 1, 1, &r), 0);
    double x = 0, h, y, dy, first = 0, last = 0;
    for (int t = 1; t <= 200; t++) {
        syn_mlp_forward(&m, &x, &h, &y);
        last = syn_bce(y, 1, &dy);
        if (t == 1)
            first = last;
        syn_mlp_backward(&m, &x, &h, &dy);
        syn_mlp_adam(&m, 0.05, t, 1.0);
    }
    assert_true(last < first / 4);
    syn_mlp_free(&m);
}

/* syn_mlp_forward_sparse (the sampler's edge stage) against syn_mlp_forward on the dense input,
 * bit for bit: the prefix's sums, then the listed entries in order, zero entries skipped (some
 * listed values zero, some weights negative, so that -0 products occur) */
static void test_mlp_sparse(void **state)
{
    (void)state;
    srng r = {11};
    syn_mlp m;
    assert_int_equal(syn_mlp_init(&m, 24, 16, 3, &r), 0);
    for (int trial = 0; trial < 200; trial++) {
        double x[24] = {0}, pre[16], h[16], y[3], hs[16], ys[3], val[24];
        int idx[24], k = 0, n = 1 + (int)srng_below(&r, 10);
        for (int i = 0; i < n; i++)
            x[i] = 4 * srng_unit(&r) - 2;
        for (int i = n; i < 24; i++)
            if (srng_unit(&r) < 0.3) {
                idx[k] = i;
                val[k] = srng_unit(&r) < 0.2 ? 0 : 3 * srng_unit(&r) - 1;
                x[i] = val[k++];
            }
        syn_mlp_forward(&m, x, h, y);
        syn_mlp_prefix(&m, x, n, pre);
        syn_mlp_forward_sparse(&m, pre, idx, val, k, hs, ys);
        assert_memory_equal(h, hs, sizeof h);
        assert_memory_equal(y, ys, sizeof y);
    }
    syn_mlp_free(&m);
}

/* the LayerDAG model trained on the generated corpus: deterministic, its samples valid on 1-8
 * ranks, the same after a model-file round trip, its training losses below the uniform guess */
static void test_layerdag(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    etk_synth_model *m = corpus_fit(&gs, &n), *m2 = NULL, *m3 = NULL;
    etk_error err = {0};
    assert_int_equal(etk_synth_train_layerdag(m, gs, n, 3, 1, &err), 0);
    assert_true(etk_synth_model_has_layerdag(m));
    double loss[3];
    assert_true(etk_synth_layerdag_loss(m, loss));
    assert_true(loss[0] < log(64.0)); /* uniform over 64 sizes */
    assert_true(loss[1] < log(43.0)); /* uniform over 43 tokens */
    assert_true(loss[2] < log(2.0));
    char path[512];
    snprintf(path, sizeof path, "%s/ld.json", tu_tmpdir());
    assert_int_equal(etk_synth_model_save(m, path, &err), 0);
    assert_int_equal(etk_synth_model_load(path, &m2, &err), 0);
    assert_true(etk_synth_model_has_layerdag(m2));
    /* a second training with the same seed gives the same networks: same samples */
    etk_synth_graph **gs3;
    size_t n3;
    m3 = corpus_fit(&gs3, &n3);
    free_gs(gs3, n3);
    assert_int_equal(etk_synth_train_layerdag(m3, gs, n, 3, 1, &err), 0);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        etk_synth_sample_opts o = {.seed = seed, .max_nodes = 120};
        etk_synth_graph *a = NULL, *b = NULL, *c = NULL;
        assert_int_equal(etk_synth_sample_graph(m, &o, &a, NULL, &err), 0);
        assert_int_equal(etk_synth_sample_graph(m2, &o, &b, NULL, &err), 0);
        assert_int_equal(etk_synth_sample_graph(m3, &o, &c, NULL, &err), 0);
        assert_int_equal(a->n, b->n);
        assert_int_equal(a->n, c->n);
        assert_int_equal(a->n_edges, b->n_edges);
        assert_memory_equal(a->tok, c->tok, a->n * sizeof *a->tok);
        assert_memory_equal(a->par, b->par, a->n_edges * sizeof *a->par);
        assert_true(a->n <= 120);
        /* the layer invariant: a main parent in the layer just before */
        for (uint32_t i = 0; i < a->n; i++)
            if (a->layer[i])
                assert_int_equal(a->layer[a->par[a->par_off[i]]], a->layer[i] - 1);
        uint32_t nr = 1u << (seed % 4);
        etk_workload *w = NULL;
        assert_int_equal(etk_synth_assemble(a, nr, etk_synth_model_inner(m, nr), &w, &err), 0);
        char what[64];
        snprintf(what, sizeof what, "LayerDAG sample %llu on %u ranks", (unsigned long long)seed, nr);
        gen_expect_clean(w, what);
        etk_workload_free(w);
        etk_synth_graph_free(a);
        etk_synth_graph_free(b);
        etk_synth_graph_free(c);
    }
    /* the stop (version 4): a size stage set by hand to prefer stop (logits: stop +30, one node
     * +20, the rest 0) cannot end a graph before its drawn profile's layer count: a chain of
     * one-node layers as long as one of the training graphs; one that never stops (stop -30,
     * one node +30) ends there too; --max-nodes 5 cuts it to 5 one-node layers */
    syn_mlp *sz = &m->ld->size;
    double *w2 = sz->w + (size_t)sz->n_hid * sz->n_in + sz->n_hid, *b2 = w2 + (size_t)sz->n_out * sz->n_hid;
    memset(w2, 0, ((size_t)sz->n_out * sz->n_hid + sz->n_out) * sizeof *w2);
    for (int never = 0; never < 2; never++) {
        b2[0] = never ? -30 : 30, b2[1] = never ? 30 : 20;
        for (uint64_t seed = 1; seed <= 4; seed++) {
            etk_synth_sample_opts ro = {.seed = seed, .max_tries = 3};
            etk_synth_graph *g = NULL;
            assert_int_equal(etk_synth_sample_graph(m, &ro, &g, NULL, &err), 0);
            assert_int_equal(g->n, g->n_layers);
            bool seen = false;
            for (size_t i = 0; i < n; i++)
                seen |= gs[i]->n_layers == g->n_layers;
            assert_true(seen);
            etk_synth_graph_free(g);
            ro.max_nodes = 5;
            assert_int_equal(etk_synth_sample_graph(m, &ro, &g, NULL, &err), 0);
            assert_int_equal(g->n, 5);
            assert_int_equal(g->n_layers, 5);
            etk_synth_graph_free(g);
        }
    }
    etk_synth_model_free(m);
    etk_synth_model_free(m2);
    etk_synth_model_free(m3);
    free_gs(gs, n);
}

/* the collapse (s30, docs/synth.md "The collapse"): a token stage that reads the whole prefix's
 * token histogram feeds its own draws back. Set by hand: the size stage always one node, never
 * stopping (the profile's layer count ends the graph); the token stage's logits GEMM +20, all-reduce
 * -20 + 80 h0 + 60 h1, every other token -100, with h0 = relu(input NT + AR) (the whole-graph
 * token slot of the encoding: the prefix's all-reduce share up to version 4, the profile's since
 * version 5) and h1 = relu(1 - the last layer's shares summed) (1 on the first layer only). The
 * first layer is then an all-reduce (at least 40 against 20). Reading the prefix, every later
 * layer would be too (share 1: 60 against 20): a chain of one-node all-reduces as in the collapsed
 * samples. Reading the profile: with no all-reduce in it, every later layer is a GEMM (-20
 * against 20); with all-reduce shares 1/8 and 7/8 in it, -10 and +50 against 20: GEMMs, then
 * all-reduces (a wrong draw has probability e^-30). */
static void test_collapse(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    etk_synth_model *m = corpus_fit(&gs, &n);
    etk_error err = {0};
    assert_int_equal(etk_synth_train_layerdag(m, gs, n, 2, 1, &err), 0);
    int ar = etk_synth_tok_parse("COLL:ALL_REDUCE:inner"), gemm = etk_synth_tok_parse("COMP:gemm");
    syn_mlp *sz = &m->ld->size, *tk = &m->ld->tok;
    double *w2 = sz->w + (size_t)sz->n_hid * sz->n_in + sz->n_hid, *b2 = w2 + (size_t)sz->n_out * sz->n_hid;
    memset(w2, 0, ((size_t)sz->n_out * sz->n_hid + sz->n_out) * sizeof *w2);
    b2[0] = -30, b2[1] = 30;
    memset(tk->w, 0, tk->n_par * sizeof *tk->w);
    double *tw1 = tk->w, *tb1 = tw1 + (size_t)tk->n_hid * tk->n_in, *tw2 = tb1 + tk->n_hid,
           *tb2 = tw2 + (size_t)tk->n_out * tk->n_hid;
    tw1[0 * tk->n_in + ETK_SYNTH_N_TOKENS + ar] = 1;
    tb1[1] = 1;
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        tw1[1 * tk->n_in + t] = -1;
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        tb2[t] = -100;
    tb2[gemm] = 20, tb2[ar] = -20;
    tw2[ar * tk->n_hid + 0] = 80, tw2[ar * tk->n_hid + 1] = 60;
    for (int share = 0; share < 3; share++) {
        /* every profile: no all-reduce, 1 of 8, 7 of 8 */
        for (uint32_t i = 0; i < m->ld->n_prof; i++) {
            memset(m->ld->prof[i].tok, 0, sizeof m->ld->prof[i].tok);
            m->ld->prof[i].tok[gemm] = share == 0 ? 8 : share == 1 ? 7 : 1;
            m->ld->prof[i].tok[ar] = share == 0 ? 0 : share == 1 ? 1 : 7;
        }
        for (uint64_t seed = 1; seed <= 4; seed++) {
            etk_synth_sample_opts o = {.seed = seed, .max_nodes = 40, .max_tries = 3};
            etk_synth_graph *g = NULL;
            assert_int_equal(etk_synth_sample_graph(m, &o, &g, NULL, &err), 0);
            assert_int_equal(g->n, g->n_layers);
            assert_true(g->n >= 2);
            assert_int_equal(g->tok[0], ar);
            for (uint32_t i = 1; i < g->n; i++)
                if (g->tok[i] != (share == 2 ? ar : gemm))
                    fail_msg("profile all-reduce share %d/8, seed %llu: node %u is %s", share == 0 ? 0 : share == 1 ? 1 : 7,
                             (unsigned long long)seed, i, etk_synth_tok_name(g->tok[i]));
            etk_synth_graph_free(g);
        }
    }
    etk_synth_model_free(m);
    free_gs(gs, n);
}

/* profile guidance (s31): the token stage's logits plus LD_GUIDE x log(profile share / marginal
 * share), both add-1/2 smoothed over the 43 tokens. Hand-set: training marginal 300 GEMMs and 100
 * all-reduces, every profile 10 GEMMs and 30 all-reduces, the token net's output the log of the
 * smoothed marginal shares whatever its input (what an unconditioned net would learn): with
 * LD_GUIDE = 1/2 the draws follow p_t ~ sqrt(marginal share x profile share), by hand (Python,
 * shares (x + 1/2) / (421.5) and (x + 1/2) / (61.5)): GEMM 0.42543, all-reduce 0.41931, each of the
 * 41 others 0.0037868 (unguided: GEMM 0.71293, all-reduce 0.23843); 2,560 draws, within 4 sd. */
static void test_guide(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    etk_synth_model *m = corpus_fit(&gs, &n);
    etk_error err = {0};
    assert_int_equal(etk_synth_train_layerdag(m, gs, n, 2, 1, &err), 0);
    int ar = etk_synth_tok_parse("COLL:ALL_REDUCE:inner"), gemm = etk_synth_tok_parse("COMP:gemm"), other = gemm == 0 ? 1 : 0;
    assert_int_equal(ETK_SYNTH_N_TOKENS, 43);
    memset(m->tok_marginal, 0, sizeof m->tok_marginal);
    m->tok_marginal[gemm] = 300, m->tok_marginal[ar] = 100;
    for (uint32_t i = 0; i < m->ld->n_prof; i++) {
        memset(m->ld->prof[i].tok, 0, sizeof m->ld->prof[i].tok);
        m->ld->prof[i].tok[gemm] = 10, m->ld->prof[i].tok[ar] = 30;
    }
    double g[ETK_SYNTH_N_TOKENS];
    syn_ld_guide(m, &m->ld->prof[0], g);
    assert_true(fabs(g[gemm] - (-0.7146449470911733)) < 1e-12);
    assert_true(fabs(g[ar] - (0.36617577937183665)) < 1e-12);
    assert_true(fabs(g[other] - (0.962391301314719)) < 1e-12);
    /* layers of 8 nodes; the token net's logits the log smoothed marginal */
    syn_mlp *sz = &m->ld->size, *tk = &m->ld->tok;
    double *w2 = sz->w + (size_t)sz->n_hid * sz->n_in + sz->n_hid, *b2 = w2 + (size_t)sz->n_out * sz->n_hid;
    memset(w2, 0, ((size_t)sz->n_out * sz->n_hid + sz->n_out) * sizeof *w2);
    b2[8] = 30;
    memset(tk->w, 0, tk->n_par * sizeof *tk->w);
    double *tb2 = tk->w + (size_t)tk->n_hid * tk->n_in + tk->n_hid + (size_t)tk->n_out * tk->n_hid;
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        tb2[t] = log((m->tok_marginal[t] + 0.5) / (400 + 0.5 * ETK_SYNTH_N_TOKENS));
    double cnt[3] = {0}, tot = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        etk_synth_sample_opts o = {.seed = seed, .max_nodes = 256, .max_tries = 3};
        etk_synth_graph *s = NULL;
        assert_int_equal(etk_synth_sample_graph(m, &o, &s, NULL, &err), 0);
        for (uint32_t i = 0; i < s->n; i++)
            cnt[s->tok[i] == gemm ? 0 : s->tok[i] == ar ? 1 : 2]++;
        tot += s->n;
        etk_synth_graph_free(s);
    }
    const double want[3] = {0.4254254848515781, 0.4193141955388819, 41 * 0.003786837063647288};
    assert_true(tot == 2560); /* 10 samples of 32 layers of 8 (max_nodes) */
    for (int k = 0; k < 3; k++) {
        double sd = sqrt(want[k] * (1 - want[k]) / tot);
        if (fabs(cnt[k] / tot - want[k]) > 4 * sd)
            fail_msg("guided share %d: %.4f of %.0f draws, want %.4f +- %.4f", k, cnt[k] / tot, tot, want[k], 4 * sd);
    }
    etk_synth_model_free(m);
    free_gs(gs, n);
}

/* the random-DAG baseline: forward pairs decoded in order, node and edge counts of the graph */
static void test_random_er(void **state)
{
    (void)state;
    /* every forward pair of 50 nodes exactly once, in the order (0,1), (0,2), (1,2), (0,3), ... */
    uint32_t k = 0;
    for (uint32_t c = 1; c < 50; c++)
        for (uint32_t p = 0; p < c; p++, k++) {
            uint32_t pp, cc;
            syn_pair_of(k, &pp, &cc);
            assert_int_equal(pp, p);
            assert_int_equal(cc, c);
        }
    assert_int_equal(k, 50 * 49 / 2);
    etk_synth_graph **gs;
    size_t n;
    etk_synth_model *m = corpus_fit(&gs, &n);
    etk_error err = {0};
    /* two nodes, one edge: the only forward pair, two layers */
    uint16_t tok[2] = {0, 0};
    double val[2 * ETK_SYNTH_N_ATTR] = {0};
    uint32_t off[3] = {0, 0, 1}, par[1] = {0};
    etk_synth_graph *g2 = NULL, *r2 = NULL;
    assert_int_equal(etk_synth_graph_build(2, tok, val, off, par, &g2, NULL, &err), 0);
    assert_int_equal(etk_synth_random_er(m, g2, 5, &r2, &err), 0);
    assert_int_equal(r2->n, 2);
    assert_int_equal(r2->n_edges, 1);
    assert_int_equal(r2->n_layers, 2);
    /* a corpus graph: its node count, at most its edge count (repeated pairs dropped), acyclic
     * (peeled), deterministic for a seed */
    etk_synth_graph *a = NULL, *b = NULL;
    assert_int_equal(etk_synth_random_er(m, gs[0], 9, &a, &err), 0);
    assert_int_equal(etk_synth_random_er(m, gs[0], 9, &b, &err), 0);
    assert_int_equal(a->n, gs[0]->n);
    assert_true(a->n_edges <= gs[0]->n_edges && a->n_edges > gs[0]->n_edges * 9 / 10);
    assert_int_equal(a->n_edges, b->n_edges);
    assert_memory_equal(a->par, b->par, a->n_edges * sizeof *a->par);
    etk_synth_graph_free(g2), etk_synth_graph_free(r2), etk_synth_graph_free(a), etk_synth_graph_free(b);
    etk_synth_model_free(m);
    free_gs(gs, n);
}

/* correlations against hand values; the regressor recovers a step time that is a power of the
 * node count; the labeled LayerDAG model refuses a bad label and keeps its flag in the file */
static void test_regressor(void **state)
{
    (void)state;
    double a[4] = {1, 2, 3, 4}, b[4] = {1, 3, 2, 4}, c[4] = {1, 8, 27, 64}, t1[3] = {1, 1, 2}, t2[3] = {5, 6, 7};
    /* deviations (-1.5, -0.5, 0.5, 1.5) and (-1.5, 0.5, -0.5, 1.5): 4 / sqrt(5 * 5) */
    assert_near(etk_synth_pearson(a, b, 4), 0.8, 1e-12);
    assert_near(etk_synth_spearman(a, b, 4), 0.8, 1e-12);
    assert_near(etk_synth_spearman(a, c, 4), 1.0, 1e-12); /* monotone */
    assert_true(etk_synth_pearson(a, c, 4) < 0.99);
    /* ties: ranks (1.5, 1.5, 3) against (1, 2, 3): 1.5 / sqrt(1.5 * 2) */
    assert_near(etk_synth_spearman(t1, t2, 3), 1.5 / sqrt(3.0), 1e-12);
    assert_true(isnan(etk_synth_pearson(a, a, 1)));
    etk_synth_graph **gs;
    size_t n;
    uint32_t world[2], inner[2];
    corpus(&gs, &n, world, inner);
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
        y[i] = 1000.0 * pow(gs[i]->n, 1.5);
    etk_synth_regressor *r = NULL;
    etk_error err = {0};
    assert_int_equal(etk_synth_regress_fit(gs, y, n, 1, &r, &err), 0);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(etk_synth_regress_predict(r, gs[i]) / y[i] - 1) < 0.05);
    etk_synth_regress_free(r);
    y[0] = -1;
    assert_int_equal(etk_synth_regress_fit(gs, y, n, 1, &r, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "graph 0: step time -1"));
    /* labels */
    etk_synth_model *m = NULL, *m2 = NULL;
    assert_int_equal(etk_synth_fit(gs, n, world, 2, inner, 2, &m, &err), 0);
    assert_int_equal(etk_synth_train_layerdag_labeled(m, gs, y, n, 1, 1, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "graph 0: label -1"));
    y[0] = 1e6;
    assert_int_equal(etk_synth_train_layerdag_labeled(m, gs, y, n, 1, 1, &err), 0);
    assert_true(etk_synth_model_labeled(m));
    char path[512];
    snprintf(path, sizeof path, "%s/lab.json", tu_tmpdir());
    assert_int_equal(etk_synth_model_save(m, path, &err), 0);
    assert_int_equal(etk_synth_model_load(path, &m2, &err), 0);
    assert_true(etk_synth_model_labeled(m2));
    etk_synth_sample_opts so = {.seed = 2, .max_nodes = 100, .label_ns = 2e6};
    etk_synth_graph *g1 = NULL, *g2 = NULL;
    assert_int_equal(etk_synth_sample_graph(m, &so, &g1, NULL, &err), 0);
    assert_int_equal(etk_synth_sample_graph(m2, &so, &g2, NULL, &err), 0);
    assert_int_equal(g1->n, g2->n);
    assert_memory_equal(g1->tok, g2->tok, g1->n * sizeof *g1->tok);
    etk_synth_graph_free(g1), etk_synth_graph_free(g2);
    etk_synth_model_free(m), etk_synth_model_free(m2);
    free(y);
    free_gs(gs, n);
}

/* labeled models: attribute bins given the label bucket (bounds: the labels' 1/8 ... 7/8
 * quantiles), kept through the model file; attribute redraws keep the graph, stay inside the
 * token's bin edges, are deterministic for a seed and, given a label, draw the bucket's codes */
static void test_label_attrs(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    uint32_t world[2], inner[2];
    corpus(&gs, &n, world, inner);
    assert_int_equal(n, 3); /* tp2 x dp2: one rank class; pp2: two stages */
    /* labels 1, 2, 3 ms: sorted, the bound q (1..7) is label[q * 3 / 8] = 1, 1, 2, 2, 2, 3, 3 ms,
     * so the graphs fall in buckets 2, 5 and 7 (a label equal to a bound goes above it) */
    double y[3] = {1e6, 2e6, 3e6}, cut[7] = {1e6, 1e6, 2e6, 2e6, 2e6, 3e6, 3e6};
    int bucket[3] = {2, 5, 7};
    etk_synth_model *m = NULL, *m2 = NULL;
    etk_error err = {0};
    assert_int_equal(etk_synth_fit(gs, n, world, 2, inner, 2, &m, &err), 0);
    assert_int_equal(etk_synth_train_layerdag_labeled(m, gs, y, n, 1, 1, &err), 0);
    for (int q = 0; q < 7; q++)
        assert_near(m->ld->lcut_ns[q], cut[q], 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(syn_ld_label_bucket(m->ld, y[i]), bucket[i]);
    assert_int_equal(syn_ld_label_bucket(m->ld, 5e5), 0);
    for (int q = 0; q < LD_LABEL_BUCKETS; q++) {
        uint64_t want = 0, got = 0;
        for (int i = 0; i < 3; i++)
            want += bucket[i] == q ? gs[i]->n : 0;
        for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
            got += m->ld->lbins[q][t].total;
        assert_int_equal(got, want); /* every node of the bucket's graphs, once */
    }
    char path[512];
    snprintf(path, sizeof path, "%s/labattr.json", tu_tmpdir());
    assert_int_equal(etk_synth_model_save(m, path, &err), 0);
    assert_int_equal(etk_synth_model_load(path, &m2, &err), 0);
    for (int q = 0; q < LD_LABEL_BUCKETS; q++)
        for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
            const shist *a = &m->ld->lbins[q][t], *b = &m2->ld->lbins[q][t];
            assert_int_equal(a->n, b->n);
            assert_int_equal(a->total, b->total);
            if (a->n)
                assert_memory_equal(a->key, b->key, a->n * sizeof *a->key);
        }
    /* redraws on a copy of the pp2 stage 0 graph (bucket 5) */
    etk_synth_graph *g = gs[1];
    size_t nv = (size_t)g->n * ETK_SYNTH_N_ATTR;
    double *v0 = malloc(nv * sizeof *v0), *v1 = malloc(nv * sizeof *v1);
    uint16_t *tok0 = malloc(g->n * sizeof *tok0);
    uint32_t e0 = g->n_edges;
    memcpy(tok0, g->tok, g->n * sizeof *tok0);
    etk_synth_redraw_attrs(m2, g, 2e6, 7);
    memcpy(v0, g->val, nv * sizeof *v0);
    etk_synth_redraw_attrs(m2, g, 2e6, 7);
    assert_memory_equal(v0, g->val, nv * sizeof *v0); /* deterministic */
    assert_memory_equal(tok0, g->tok, g->n * sizeof *tok0);
    assert_int_equal(g->n_edges, e0);
    for (uint32_t i = 0; i < g->n; i++) {
        int t = g->tok[i];
        for (int a = 0; a < ETK_SYNTH_N_ATTR; a++)
            if (etk_synth_tok_has_attr(t, a)) {
                double x = g->val[(size_t)i * ETK_SYNTH_N_ATTR + a];
                assert_true(x >= m2->edges[t][a][0] && x <= m2->edges[t][a][ETK_SYNTH_N_BINS]);
            }
        /* the joint code drawn is one of the bucket's codes for the token */
        uint32_t code = syn_bin_code(m2, t, g->val + (size_t)i * ETK_SYNTH_N_ATTR);
        const shist *h = &m2->ld->lbins[5][t];
        bool seen = false;
        for (uint32_t k = 0; k < h->n; k++)
            seen |= h->key[k] == code;
        assert_true(seen);
    }
    etk_synth_redraw_attrs(m2, g, 2e6, 8);
    memcpy(v1, g->val, nv * sizeof *v1);
    assert_true(memcmp(v0, v1, nv * sizeof *v0) != 0); /* another seed, other values */
    /* one node: only its values change */
    uint32_t node = g->n / 2;
    for (uint64_t sd = 1; sd < 50; sd++) {
        etk_synth_redraw_node_attrs(m2, g, node, 2e6, sd);
        for (uint32_t i = 0; i < g->n; i++)
            if (i != node)
                assert_memory_equal(g->val + (size_t)i * ETK_SYNTH_N_ATTR, v1 + (size_t)i * ETK_SYNTH_N_ATTR,
                                    ETK_SYNTH_N_ATTR * sizeof *v1);
    }
    etk_synth_redraw_node_attrs(m2, g, g->n, 2e6, 1); /* out of range: nothing */
    free(v0), free(v1), free(tok0);
    etk_synth_model_free(m), etk_synth_model_free(m2);
    free_gs(gs, n);
}

/* The attribute scale (docs/synth.md "Attribute scale"): a hand-built two-scale training set of
 * 16 GEMM-only graphs, 8 small (every node 1,000 FLOPs) and 8 large (every node 1e9 FLOPs), all
 * with 100 tensor bytes and duration 0. The FLOPs edges are the 0/8 ... 8/8 quantiles of the 160
 * values: e0..e4 = 1,000 and e5..e8 = 1e9 (point masses), so a small node's code has FLOPs bin 0
 * and a large node's bin 5; bytes and duration are bin 0 everywhere. Scale statistic (mean bin
 * of the three carried attributes): small 0, large 5/3. 64 classes: bound c (1..63) = the
 * sorted stats at [c * 16 / 64]: 0 for c < 32, 5/3 from 32, so small graphs are class 31 (a
 * statistic equal to a bound goes above it) and large ones class 63.
 * With pooled bins a 10-GEMM sample would mix the two scales (all equal with probability
 * 2 x 2^-10); with the scale class every sampled graph is all-small or all-large. */
static void test_scale_classes(void **state)
{
    (void)state;
    enum { NG = 16, NN = 10 };
    etk_synth_graph *gs[NG];
    etk_error err = {0};
    int gemm = etk_synth_tok_parse("COMP:gemm");
    assert_true(gemm >= 0);
    for (int g = 0; g < NG; g++) {
        uint16_t tok[NN];
        double val[NN * ETK_SYNTH_N_ATTR] = {0};
        uint32_t off[NN + 1], par[NN], np = 0, k = 1 + (uint32_t)(g % 8); /* a chain of k, the rest fan out */
        off[0] = 0;
        for (uint32_t i = 0; i < NN; i++) {
            tok[i] = (uint16_t)gemm;
            val[i * ETK_SYNTH_N_ATTR + 0] = g < NG / 2 ? 1e3 : 1e9;
            val[i * ETK_SYNTH_N_ATTR + 1] = 100;
            if (i)
                par[np++] = i <= k ? i - 1 : 0;
            off[i + 1] = np;
        }
        gs[g] = NULL;
        if (etk_synth_graph_build(NN, tok, val, off, par, &gs[g], NULL, &err))
            fail_msg("build: %s", err.msg);
    }
    uint32_t world = 1;
    etk_synth_model *m = NULL, *m2 = NULL;
    assert_int_equal(etk_synth_fit(gs, NG, &world, 1, NULL, 0, &m, &err), 0);
    assert_near(syn_scale_stat(m, gs[0]), 0, 1e-12);
    assert_near(syn_scale_stat(m, gs[NG - 1]), 5.0 / 3, 1e-12);
    assert_int_equal(SYN_SCALE_CLASSES, 64);
    for (int c = 0; c < SYN_SCALE_CLASSES - 1; c++) /* bound c + 1 = sorted stat [(c + 1) * 16 / 64] */
        assert_near(m->scut[c], c < 31 ? 0 : 5.0 / 3, 1e-12);
    for (int c = 0; c < SYN_SCALE_CLASSES; c++)
        assert_int_equal(m->scale_graphs[c], c == 31 || c == 63 ? 8 : 0);
    assert_int_equal(m->sbins[31][gemm].total, 80);
    assert_int_equal(m->sbins[63][gemm].total, 80);
    /* through the model file */
    char path[512];
    snprintf(path, sizeof path, "%s/scale.json", tu_tmpdir());
    assert_int_equal(etk_synth_model_save(m, path, &err), 0);
    assert_int_equal(etk_synth_model_load(path, &m2, &err), 0);
    for (int c = 0; c < SYN_SCALE_CLASSES; c++)
        assert_int_equal(m2->scale_graphs[c], m->scale_graphs[c]);
    for (int c = 0; c < SYN_SCALE_CLASSES - 1; c++)
        assert_near(m2->scut[c], m->scut[c], 0);
    assert_int_equal(m2->sbins[63][gemm].total, 80);
    /* count baseline and LayerDAG samples: one scale per graph, both scales over the samples */
    assert_int_equal(etk_synth_train_layerdag(m2, gs, NG, 2, 1, &err), 0);
    for (int count_only = 0; count_only < 2; count_only++) {
        int seen[2] = {0, 0}, mixed = 0, nodes = 0;
        for (uint64_t sd = 1; sd <= 40; sd++) {
            etk_synth_sample_opts o = {.seed = sd, .count_only = count_only, .max_tries = 1000};
            etk_synth_graph *g = NULL;
            assert_int_equal(etk_synth_sample_graph(m2, &o, &g, NULL, &err), 0);
            assert_true(g->scale == 32 || g->scale == 64);
            /* GEMM nodes carry the scale (a LayerDAG trained 2 epochs also emits tokens never seen
             * in training: their bins are empty, FLOPs 0) */
            int small = 0, large = 0;
            for (uint32_t i = 0; i < g->n; i++) {
                double f = g->val[(size_t)i * ETK_SYNTH_N_ATTR];
                if (g->tok[i] != gemm)
                    assert_true(f == 0);
                else if (!(f == 1e3 || f == 1e9))
                    fail_msg("count_only %d seed %d node %u flops %g", count_only, (int)sd, i, f);
                small += g->tok[i] == gemm && f == 1e3;
                large += g->tok[i] == gemm && f == 1e9;
            }
            mixed += small && large;
            seen[g->scale == 32] += 1;
            if (small || large)
                assert_int_equal(small > 0, g->scale == 32);
            nodes += small + large;
            /* a whole-graph redraw draws a class again; a node redraw keeps the graph's */
            etk_synth_redraw_attrs(m2, g, 0, sd);
            uint32_t sc = g->scale;
            for (uint64_t k = 1; k < 10; k++)
                etk_synth_redraw_node_attrs(m2, g, (uint32_t)(k % g->n), 0, k);
            for (uint32_t i = 0; i < g->n; i++)
                assert_true(g->val[(size_t)i * ETK_SYNTH_N_ATTR] == (g->tok[i] != gemm ? 0 : sc == 32 ? 1e3 : 1e9));
            etk_synth_graph_free(g);
        }
        assert_int_equal(mixed, 0);
        assert_true(seen[0] >= 5 && seen[1] >= 5); /* each class half the graphs: 40 draws */
        assert_true(nodes >= 80); /* GEMM nodes over the 40 samples */
    }
    etk_synth_model_free(m), etk_synth_model_free(m2);
    for (int g = 0; g < NG; g++)
        etk_synth_graph_free(gs[g]);
}

/* the LayerDAG graph profile (s26, docs/synth.md "Graph profile"): 16 graphs, 8 of 3 layers of
 * small GEMMs (FLOPs 1e3) and 8 of 12 layers of large ones (1e9); layers of 1 or 2 nodes, each
 * node a child of every node of the layer before. The training layer counts are {3: 8, 12: 8}
 * and the FLOPs go with them, so every sample must have 3 or 12 layers (both seen over 40
 * samples, each about half) and the FLOPs of the training graphs of its layer count. s25's
 * sampler stopped on the size stage's own hazard (a prefix of 3 layers looks the same in both
 * kinds: layer counts between, past 12, or all of one kind) and drew the scale class apart from
 * the structure (half the samples would carry the other kind's FLOPs). */
static void test_profiles(void **state)
{
    (void)state;
    enum { NG = 16 };
    etk_synth_graph *gs[NG];
    etk_error err = {0};
    int gemm = etk_synth_tok_parse("COMP:gemm");
    synth_chain_corpus(gs, NG, 1e3, 1e9);
    uint32_t world = 1;
    etk_synth_model *m = NULL, *m2 = NULL;
    assert_int_equal(etk_synth_fit(gs, NG, &world, 1, NULL, 0, &m, &err), 0);
    assert_int_equal(etk_synth_train_layerdag(m, gs, NG, 3, 1, &err), 0);
    /* the profiles: one per training graph, its layer count and scale class */
    assert_int_equal(m->ld->n_prof, NG);
    for (int g = 0; g < NG; g++) {
        assert_int_equal(m->ld->prof[g].layers, g < NG / 2 ? 3 : 12);
        assert_int_equal(m->ld->prof[g].scale, syn_scale_class(m, syn_scale_stat(m, gs[g])));
        assert_int_equal(m->ld->prof[g].bucket, 0);
    }
    assert_true(m->ld->prof[0].scale != m->ld->prof[NG - 1].scale);
    /* version 5: the profile's token counts, every node a GEMM */
    for (int g = 0; g < NG; g++) {
        uint32_t tot = 0;
        for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
            tot += m->ld->prof[g].tok[t];
        assert_int_equal(m->ld->prof[g].tok[gemm], gs[g]->n);
        assert_int_equal(tot, gs[g]->n);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/prof.json", tu_tmpdir());
    assert_int_equal(etk_synth_model_save(m, path, &err), 0);
    assert_int_equal(etk_synth_model_load(path, &m2, &err), 0);
    assert_int_equal(m2->ld->n_prof, NG);
    for (int g = 0; g < NG; g++)
        assert_memory_equal(&m2->ld->prof[g], &m->ld->prof[g], sizeof m->ld->prof[g]);
    /* broken profiles: the file and the entry named */
    size_t len;
    char *text = (char *)tu_read(path, &len);
    const char *from[3] = {"\"profiles\":[[3,", "\"profiles\":[[3,", "\"profiles\":["};
    const char *to[3] = {"\"profiles\":[[0,", "\"profiles\":[[99,", "\"profiles\":[[3,0],"};
    for (int k = 0; k < 3; k++) {
        char *p = strstr(text, from[k]), bad[600];
        assert_non_null(p);
        snprintf(bad, sizeof bad, "%s/badprof%d.json", tu_tmpdir(), k);
        FILE *f = fopen(bad, "w");
        fwrite(text, 1, (size_t)(p - text), f);
        fputs(to[k], f);
        fputs(p + strlen(from[k]), f);
        fclose(f);
        etk_synth_model *x = NULL;
        assert_true(etk_synth_model_load(bad, &x, &err) < 0);
        assert_null(x);
        if (!strstr(err.msg, "field 'layerdag.profiles[0]'") || !strstr(err.msg, bad))
            fail_msg("case %d: %s", k, err.msg);
    }
    free(text);
    int seen[2] = {0, 0};
    for (uint64_t sd = 1; sd <= 40; sd++) {
        etk_synth_sample_opts o = {.seed = sd, .max_tries = 1000};
        etk_synth_graph *g = NULL, *g2 = NULL;
        assert_int_equal(etk_synth_sample_graph(m, &o, &g, NULL, &err), 0);
        assert_int_equal(etk_synth_sample_graph(m2, &o, &g2, NULL, &err), 0);
        assert_int_equal(g->n, g2->n);
        if (g->n_layers != 3 && g->n_layers != 12)
            fail_msg("seed %d: %u layers (the training graphs have 3 or 12)", (int)sd, g->n_layers);
        seen[g->n_layers == 12]++;
        for (uint32_t i = 0; i < g->n; i++)
            if (g->tok[i] == gemm && g->val[(size_t)i * ETK_SYNTH_N_ATTR] != (g->n_layers == 3 ? 1e3 : 1e9))
                fail_msg("seed %d: %u layers, node %u FLOPs %g", (int)sd, g->n_layers, i,
                         g->val[(size_t)i * ETK_SYNTH_N_ATTR]);
        etk_synth_graph_free(g);
        etk_synth_graph_free(g2);
    }
    /* 40 fair draws: each kind 20 +- 10 (outside with probability < 0.2 %) */
    assert_true(seen[0] >= 10 && seen[1] >= 10);
    etk_synth_model_free(m), etk_synth_model_free(m2);
    for (int g = 0; g < NG; g++)
        etk_synth_graph_free(gs[g]);
}

/* Polyak averaging (docs/synth.md "Fit-to-fit stability"): on one training graph every epoch is
 * one Adam step of each network, and a fit of k epochs is the first k steps of a longer fit of
 * the same seed (the random draws do not depend on the epoch count), so the weights of a fit of
 * 8 epochs averaged over its last 4 must be the mean of the last iterates of fits of 5, 6, 7 and
 * 8 epochs (summed in that order), and averaging more epochs than trained averages them all */
static void test_average(void **state)
{
    (void)state;
    etk_synth_graph **gs;
    size_t n;
    uint32_t world[2], inner[2];
    corpus(&gs, &n, world, inner);
    etk_error err = {0};
    etk_synth_model *it[9] = {NULL}, *avg = NULL, *all = NULL;
    for (uint32_t k = 1; k <= 8; k++) {
        assert_int_equal(etk_synth_fit(gs, n, world, 2, inner, 2, &it[k], &err), 0);
        assert_int_equal(etk_synth_train_layerdag_avg(it[k], gs, NULL, 1, k, 0, 7, &err), 0);
    }
    assert_int_equal(etk_synth_fit(gs, n, world, 2, inner, 2, &avg, &err), 0);
    assert_int_equal(etk_synth_train_layerdag_avg(avg, gs, NULL, 1, 8, 4, 7, &err), 0);
    assert_int_equal(etk_synth_fit(gs, n, world, 2, inner, 2, &all, &err), 0);
    assert_int_equal(etk_synth_train_layerdag_avg(all, gs, NULL, 1, 3, 100, 7, &err), 0);
    size_t moved = 0;
    for (int net = 0; net < 4; net++) {
        const syn_mlp *a = net == 0 ? &avg->ld->size : net == 1 ? &avg->ld->tok : net == 2 ? &avg->ld->edge : &avg->ld->far;
        const syn_mlp *b = net == 0 ? &all->ld->size : net == 1 ? &all->ld->tok : net == 2 ? &all->ld->edge : &all->ld->far;
        const double *w[9];
        for (int k = 1; k <= 8; k++) {
            const syn_layerdag *l = it[k]->ld;
            w[k] = (net == 0 ? &l->size : net == 1 ? &l->tok : net == 2 ? &l->edge : &l->far)->w;
        }
        for (size_t i = 0; i < a->n_par; i++) {
            double want = (((w[5][i] + w[6][i]) + w[7][i]) + w[8][i]) / 4, want3 = ((w[1][i] + w[2][i]) + w[3][i]) / 3;
            if (fabs(a->w[i] - want) > 1e-12 * (1 + fabs(want)) || fabs(b->w[i] - want3) > 1e-12 * (1 + fabs(want3)))
                fail_msg("net %d weight %zu: averaged %.17g / %.17g, iterates' mean %.17g / %.17g", net, i, a->w[i],
                         b->w[i], want, want3);
            moved += w[5][i] != w[8][i] && fabs(a->w[i] - w[8][i]) > 0;
        }
    }
    /* the iterates differ (Adam moves the weights every step), so the average is not the last */
    assert_true(moved > 1000);
    for (int k = 1; k <= 8; k++)
        etk_synth_model_free(it[k]);
    etk_synth_model_free(avg), etk_synth_model_free(all);
    free_gs(gs, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens),          cmocka_unit_test(test_peel),
        cmocka_unit_test(test_peel_edges_and_cycle), cmocka_unit_test(test_wl),
        cmocka_unit_test(test_extract_fit),     cmocka_unit_test(test_wl_rejection),
        cmocka_unit_test(test_assemble_by_hand), cmocka_unit_test(test_assemble_valid_and_simulated),
        cmocka_unit_test(test_model_file),      cmocka_unit_test(test_metrics), cmocka_unit_test(test_bins),
        cmocka_unit_test(test_gradcheck), cmocka_unit_test(test_mlp_sparse), cmocka_unit_test(test_layerdag), cmocka_unit_test(test_random_er),
        cmocka_unit_test(test_regressor), cmocka_unit_test(test_label_attrs),
        cmocka_unit_test(test_scale_classes),   cmocka_unit_test(test_profiles), cmocka_unit_test(test_average),
        cmocka_unit_test(test_collapse),
        cmocka_unit_test(test_guide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
