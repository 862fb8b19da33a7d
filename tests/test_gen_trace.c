/* test_gen_trace.c — the generated traces themselves: STAGE's real output for the same plan
 * (../shared/data/stage/gpt_small_dp2_tp2_pp2) against etkit's per-rank TP collectives, the
 * structural invariants a simulator relies on (unique ids, dependencies that exist and precede
 * their node, matching send/recv pairs, identical collective sequences within each group, the
 * Chakra attribute kinds), folded vs unfolded workloads, deterministic bytes, the summary
 * against the traces, the pipeline schedule and the DP buckets. */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen_testlib.h"

static etk_workload *workload(const char *line, bool fold, etk_gen_config *c)
{
    cfg_from(c, line);
    etk_workload *w;
    etk_error err = {0};
    if (etk_gen_workload(c, fold, &w, &err))
        fail_msg("workload '%s': %s", line, err.msg);
    return w;
}

/* The STAGE case: GPT, 4 layers, hidden 1024, FFN 4096, 16 heads, seq 1024, vocab 32000, global
 * batch 8, micro-batch 1 per DP rank (4 micro-batches), dp = tp = pp = 2, fp16, sequence
 * parallel (STAGE shards the stream as Seq/(cp*tp)). STAGE puts DP fastest (rank 0's TP group
 * is "5" = [0, 2]); --rank-order dp,tp,pp gives etkit the same groups. STAGE lowers attention as
 * separate kernels (Q K^T, softmax, dropout, AV), so etkit's plan asks for --attention unfused. */
#define STAGE_PLAN                                                                                        \
    "--model gpt3-175b --layers 4 --hidden 1024 --ffn 4096 --heads 16 --seq 1024 --vocab 32000 "          \
    "--global-batch 8 --micro-batch 1 --dp 2 --tp 2 --pp 2 --precision fp16 --sp --rank-order dp,tp,pp "  \
    "--attention unfused"

static void test_stage_comparison(void **state)
{
    (void)state;
    etk_trace *st;
    etk_error err = {0};
    etk_read_opts ro = {.quiet = true};
    if (etk_trace_read(tu_data("stage/gpt_small_dp2_tp2_pp2/workload.0.et"), &ro, &st, &err))
        fail_msg("%s", err.msg);
    uint64_t s_ag = 0, s_ag_el = 0, s_rs = 0, s_rs_el = 0, s_dp_ar = 0;
    for (size_t i = 0; i < st->n_nodes; i++) {
        const etk_node *n = &st->nodes[i];
        const char *pg = etk_node_str(n, "pg_name");
        int64_t ct = -1, sz = 0;
        if (n->type != ETK_NODE_COLL || !pg)
            continue;
        etk_node_i64(n, "comm_type", &ct);
        etk_node_i64(n, "comm_size", &sz);
        if (!strcmp(pg, "5") && ct == ETK_COLL_ALL_GATHER) {
            s_ag++;
            s_ag_el += (uint64_t)sz;
        } else if (!strcmp(pg, "5") && ct == ETK_COLL_REDUCE_SCATTER) {
            s_rs++;
            s_rs_el += (uint64_t)sz;
        } else if (!strcmp(pg, "1") && ct == ETK_COLL_ALL_REDUCE && strstr(n->name, "_sharded_grad")) {
            s_dp_ar++; /* per layer per micro-batch (plus one for the embedding, once) */
        }
    }
    etk_trace_free(st);
    /* the figures quoted in the issue */
    assert_int_equal(s_ag, 48);
    assert_int_equal(s_ag_el, 25165824);
    assert_int_equal(s_rs, 32);
    assert_int_equal(s_rs_el, 33554432);

    etk_gen_config c;
    etk_workload *w = workload(STAGE_PLAN, false, &c);
    const etk_group *g = etk_groups_find(w->groups, "1");
    assert_non_null(g);
    assert_int_equal(g->n_ranks, 2);
    assert_int_equal(g->ranks[0], 0);
    assert_int_equal(g->ranks[1], 2); /* the same TP group as STAGE's "5" */
    const etk_trace *t = w->ranks[0];
    uint64_t ag = 0, ag_b = 0, rs = 0, rs_b = 0, emb_ag = 0, emb_rs = 0, dp_ar = 0, tied_ar = 0;
    double scores_flops = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        int64_t ct = -1, sz = 0;
        if (n->type == ETK_NODE_COMP && strstr(n->name, ".L0.scores") && !strstr(n->name, "dgrad")) {
            int64_t f;
            assert_true(etk_node_i64(n, "num_ops", &f));
            scores_flops = (double)f;
        }
        if (n->type != ETK_NODE_COLL)
            continue;
        etk_node_i64(n, "comm_type", &ct);
        etk_node_i64(n, "comm_size", &sz);
        const char *pg = etk_node_str(n, "pg_name");
        if (!strcmp(pg, "1")) {
            bool layer = strstr(n->name, ".L") != NULL; /* transformer-layer nodes: "mb<j>.L<l>.<op>" */
            if (ct == ETK_COLL_ALL_GATHER) {
                if (layer) {
                    ag++;
                    ag_b += (uint64_t)sz;
                } else
                    emb_ag++;
            } else if (ct == ETK_COLL_REDUCE_SCATTER) {
                if (layer) {
                    rs++;
                    rs_b += (uint64_t)sz;
                } else
                    emb_rs++;
            }
        } else if (ct == ETK_COLL_ALL_REDUCE && !strcmp(pg, "5")) { /* rank 0's DP group: 1 + DP*PP + 0 */
            dp_ar++;
        } else if (ct == ETK_COLL_ALL_REDUCE && !strcmp(pg, "9")) { /* embedding group: 1 + DP*PP + TP*PP */
            tied_ar++;
        }
    }
    /* same count, and bytes = 2 x STAGE's elements (fp16): STAGE writes elements */
    assert_int_equal(ag, s_ag);
    assert_int_equal(ag_b, 2 * s_ag_el);
    assert_int_equal(rs, s_rs);
    assert_int_equal(rs_b, 2 * s_rs_el);
    /* intended differences:
     * 1. etkit models the vocabulary-parallel embedding on stage 0: with SP its partial sum is
     *    reduce-scattered in forward and its gradient all-gathered in backward, once per
     *    micro-batch (STAGE has no embedding collectives on rank 0);
     * 2. STAGE all-reduces each layer's DP gradients once per micro-batch (8 on rank 0); etkit
     *    reduces once per step after the last backward, in 25 MiB buckets: a bucket closes at
     *    the first layer boundary past 25 MiB, so layers 1 + 0 (50 MB) make one, the position
     *    embedding (4 MB) one, and the tied word embedding (66 MB) one after its gradient is summed
     *    with the last stage's copy (Megatron's embedding group, which STAGE does not have);
     * 3. STAGE's attention kernel FLOPs are linear in the sequence length (1,572,864 MACs for
     *    Q K^T on this rank); etkit counts 2 b s^2 h / t = 1,073,741,824 FLOPs for Q K^T. */
    assert_int_equal(emb_rs, 4);
    assert_int_equal(emb_ag, 4);
    assert_int_equal(s_dp_ar, 8);
    assert_int_equal(dp_ar, 3);
    assert_int_equal(tied_ar, 1);
    assert_true(scores_flops == 2.0 * 1024 * 1024 * 1024 / 2);
    etk_workload_free(w);
}

/* ---------- structure ---------- */
typedef struct msg {
    uint32_t src, dst;
    int32_t tag;
    int64_t size;
} msg;

static int msg_cmp(const void *a, const void *b)
{
    const msg *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static void check_structure(etk_workload *w)
{
    size_t nsend = 0, nrecv = 0, cap = 1 << 16;
    msg *sends = malloc(cap * sizeof *sends), *recvs = malloc(cap * sizeof *recvs);
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        etk_trace *t = w->ranks[r];
        assert_non_null(t);
        assert_int_equal(etk_trace_index(t, NULL), 0);
        assert_int_equal(t->n_duplicate_ids, 0);
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            assert_true(n->id > 0);
            for (uint32_t k = 0; k < n->n_data_deps; k++) {
                if (!etk_trace_find(t, n->data_deps[k]))
                    fail_msg("rank %u node %" PRIu64 " %s: data dep %" PRIu64 " missing", r, n->id, n->name,
                             n->data_deps[k]);
                assert_true(n->data_deps[k] < n->id); /* emitted in order: acyclic */
            }
            for (uint32_t k = 0; k < n->n_ctrl_deps; k++) {
                assert_non_null(etk_trace_find(t, n->ctrl_deps[k]));
                assert_true(n->ctrl_deps[k] < n->id);
            }
            const etk_attr *a = etk_node_attr(n, "is_cpu_op");
            assert_non_null(a);
            assert_int_equal(a->kind, ETK_ATTR_BOOL);
            assert_false(a->v.b);
            for (uint32_t k = 0; k < n->n_attr; k++) {
                int want = etk_attr_expected_kind(n->attr[k].name);
                if (want == ETK_ATTR_NONE && !strcmp(n->attr[k].name, "attn_scores")) {
                    /* etkit's compute-model attribute: an op over the attention scores */
                    assert_int_equal(n->type, ETK_NODE_COMP);
                    want = ETK_ATTR_BOOL;
                } else if (want == ETK_ATTR_NONE && !strcmp(n->attr[k].name, "op_kind")) {
                    /* etkit's compute-model attribute: a fused FlashAttention kernel (the default
                     * --attention flash) */
                    assert_int_equal(n->type, ETK_NODE_COMP);
                    assert_int_equal(n->attr[k].kind, ETK_ATTR_STRING);
                    assert_string_equal(etk_node_str(n, "op_kind"), "attention");
                    want = ETK_ATTR_STRING;
                } else if (want == ETK_ATTR_NONE && (!strcmp(n->attr[k].name, "attn_causal") ||
                                                     !strcmp(n->attr[k].name, "attn_bwd"))) {
                    /* etkit's compute-model attributes of the fused attention kernel */
                    assert_string_equal(etk_node_str(n, "op_kind"), "attention");
                    want = ETK_ATTR_BOOL;
                } else if (want == ETK_ATTR_NONE && (!strcmp(n->attr[k].name, "attn_s") ||
                                                     !strcmp(n->attr[k].name, "attn_d"))) {
                    /* the fused kernel's key length and head dimension (compute model) */
                    assert_string_equal(etk_node_str(n, "op_kind"), "attention");
                    want = ETK_ATTR_INT64;
                } else if (want == ETK_ATTR_NONE && (!strcmp(n->attr[k].name, "gemm_grouped") ||
                                                     !strcmp(n->attr[k].name, "gemm_wgrad"))) {
                    want = ETK_ATTR_BOOL; /* a grouped expert GEMM (compute model) */
                } else if (want == ETK_ATTR_NONE) { /* etkit's memory-over-time attributes */
                    assert_true(!strcmp(n->attr[k].name, "mem_alloc_bytes") ||
                                !strcmp(n->attr[k].name, "mem_free_bytes"));
                    want = ETK_ATTR_UINT64;
                }
                assert_int_equal(n->attr[k].kind, want);
            }
            int64_t v;
            if (n->type == ETK_NODE_COMP) {
                assert_true(etk_node_i64(n, "num_ops", &v));
                assert_non_null(etk_node_attr(n, "tensor_size"));
            } else if (n->type == ETK_NODE_COLL) {
                assert_true(etk_node_i64(n, "comm_type", &v));
                assert_true(etk_node_i64(n, "comm_size", &v) && v > 0);
                const char *pg = etk_node_str(n, "pg_name");
                const etk_group *g = etk_groups_find(w->groups, pg);
                if (!g)
                    fail_msg("rank %u node %s: group '%s' not in the comm-group JSON", r, n->name, pg);
                bool member = false;
                for (uint32_t k = 0; k < g->n_ranks; k++)
                    member |= g->ranks[k] == r;
                assert_true(member);
            } else if (n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV) {
                msg m = {0};
                int64_t peer, tag;
                assert_true(etk_node_i64(n, n->type == ETK_NODE_SEND ? "comm_dst" : "comm_src", &peer));
                assert_true(etk_node_i64(n, "comm_tag", &tag));
                assert_true(etk_node_i64(n, "comm_size", &m.size));
                m.tag = (int32_t)tag;
                m.src = n->type == ETK_NODE_SEND ? r : (uint32_t)peer;
                m.dst = n->type == ETK_NODE_SEND ? (uint32_t)peer : r;
                if (n->type == ETK_NODE_SEND && nsend < cap)
                    sends[nsend++] = m;
                else if (n->type == ETK_NODE_RECV && nrecv < cap)
                    recvs[nrecv++] = m;
            }
        }
    }
    /* every send has exactly one matching recv (src, dst, tag, size) */
    assert_int_equal(nsend, nrecv);
    qsort(sends, nsend, sizeof *sends, msg_cmp);
    qsort(recvs, nrecv, sizeof *recvs, msg_cmp);
    for (size_t i = 0; i < nsend; i++) {
        assert_int_equal(msg_cmp(&sends[i], &recvs[i]), 0);
        if (i)
            assert_int_not_equal(msg_cmp(&sends[i], &sends[i - 1]), 0); /* tags unique per pair */
    }
    free(sends);
    free(recvs);
    /* every member of a group issues the same sequence of collectives on it */
    for (size_t gi = 0; gi < w->groups->n_groups; gi++) {
        const etk_group *g = &w->groups->groups[gi];
        const etk_trace *t0 = w->ranks[g->ranks[0]];
        for (uint32_t k = 1; k < g->n_ranks; k++) {
            const etk_trace *t1 = w->ranks[g->ranks[k]];
            size_t i0 = 0, i1 = 0;
            for (;;) {
                while (i0 < t0->n_nodes && (t0->nodes[i0].type != ETK_NODE_COLL ||
                                            strcmp(etk_node_str(&t0->nodes[i0], "pg_name"), g->id)))
                    i0++;
                while (i1 < t1->n_nodes && (t1->nodes[i1].type != ETK_NODE_COLL ||
                                            strcmp(etk_node_str(&t1->nodes[i1], "pg_name"), g->id)))
                    i1++;
                if (i0 == t0->n_nodes || i1 == t1->n_nodes) {
                    assert_true(i0 == t0->n_nodes && i1 == t1->n_nodes);
                    break;
                }
                int64_t a0, a1, b0, b1;
                etk_node_i64(&t0->nodes[i0], "comm_type", &a0);
                etk_node_i64(&t1->nodes[i1], "comm_type", &a1);
                etk_node_i64(&t0->nodes[i0], "comm_size", &b0);
                etk_node_i64(&t1->nodes[i1], "comm_size", &b1);
                assert_int_equal(a0, a1);
                assert_int_equal(b0, b1);
                i0++;
                i1++;
            }
        }
    }
}

static void test_structure(void **state)
{
    (void)state;
    const char *plans[] = {
        STAGE_PLAN,
        "--model llama2-7b --layers 6 --hidden 512 --heads 8 --kv-heads 2 --ffn 1024 --vocab 1000 --seq 256 "
        "--tp 2 --pp 3 --dp 2 --global-batch 16 --zero 1 --recompute full --dp-bucket-mb 1",
        "--model gpt3-175b --layers 3 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 128 --pp 2 --dp 3 "
        "--global-batch 12 --schedule gpipe --recompute selective --attention unfused",
        "--model llama2-7b --layers 2 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 --tp 4 --sp",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        etk_gen_config c;
        etk_workload *w = workload(plans[i], false, &c);
        check_structure(w);
        etk_workload_free(w);
    }
}

static bool same_node(const etk_node *a, const etk_node *b)
{
    if (a->id != b->id || a->type != b->type || strcmp(a->name, b->name) || a->n_data_deps != b->n_data_deps ||
        a->n_ctrl_deps != b->n_ctrl_deps || a->n_attr != b->n_attr)
        return false;
    for (uint32_t k = 0; k < a->n_data_deps; k++)
        if (a->data_deps[k] != b->data_deps[k])
            return false;
    for (uint32_t k = 0; k < a->n_attr; k++) {
        const etk_attr *x = &a->attr[k], *y = &b->attr[k];
        if (strcmp(x->name, y->name) || x->kind != y->kind)
            return false;
        if (x->kind == ETK_ATTR_STRING ? strcmp(x->v.s, y->v.s) : x->v.i != y->v.i)
            return false;
    }
    return true;
}

static void test_fold_and_summary(void **state)
{
    (void)state;
    const char *plan = "--model llama2-7b --layers 5 --hidden 512 --heads 8 --ffn 1024 --vocab 1000 --seq 256 "
                       "--tp 2 --pp 2 --dp 2 --global-batch 8 --sp";
    etk_gen_config c;
    etk_workload *full = workload(plan, false, &c), *fold = workload(plan, true, &c);
    assert_int_equal(fold->n_classes, 2);
    assert_int_equal(fold->n_ranks, 8);
    etk_gen_summary s;
    assert_int_equal(etk_gen_summarize(&c, &s, NULL), 0);
    for (uint32_t r = 0; r < 8; r++) {
        uint32_t co[ETK_GEN_N_AXES];
        etk_gen_coords(&c, r, co);
        assert_int_equal(fold->class_of[r], co[ETK_GEN_PP]);
        bool rep = fold->class_rep[co[ETK_GEN_PP]] == r;
        assert_int_equal(fold->ranks[r] != NULL, rep);
        if (!rep)
            continue;
        /* the representative's folded trace is the unfolded one, node for node */
        assert_int_equal(fold->ranks[r]->n_nodes, full->ranks[r]->n_nodes);
        for (size_t i = 0; i < full->ranks[r]->n_nodes; i++)
            assert_true(same_node(&fold->ranks[r]->nodes[i], &full->ranks[r]->nodes[i]));
        /* the summary is the trace's own totals */
        const etk_gen_stage *st = &s.stages[co[ETK_GEN_PP]];
        assert_int_equal(st->nodes, full->ranks[r]->n_nodes);
        double flops = 0;
        for (size_t i = 0; i < full->ranks[r]->n_nodes; i++) {
            flops += gen_node_flops(&full->ranks[r]->nodes[i]);
        }
        assert_true(flops == st->flops);
    }
    /* ranks of a class differ only in groups and peers: same node count and names */
    for (uint32_t r = 0; r < 8; r++) {
        uint32_t rep = fold->class_rep[fold->class_of[r]];
        assert_int_equal(full->ranks[r]->n_nodes, full->ranks[rep]->n_nodes);
        for (size_t i = 0; i < full->ranks[r]->n_nodes; i++)
            assert_string_equal(full->ranks[r]->nodes[i].name, full->ranks[rep]->nodes[i].name);
    }
    etk_gen_summary_free(&s);
    etk_workload_free(full);
    etk_workload_free(fold);

    /* with 4+ stages the summary counts one middle stage and copies it to the identical ones:
     * still each stage's own trace totals (interleaved too) */
    const char *plans[] = {"--model llama2-7b --layers 10 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 "
                           "--tp 2 --pp 5 --global-batch 5",
                           "--model llama2-7b --layers 12 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 "
                           "--tp 2 --pp 4 --vpp 3 --dp 2 --global-batch 16 --sp"};
    for (int i = 0; i < 2; i++) {
        etk_workload *w = workload(plans[i], true, &c);
        assert_int_equal(etk_gen_summarize(&c, &s, NULL), 0);
        for (uint32_t st = 0; st < c.pp; st++) {
            const etk_trace *t = w->ranks[w->class_rep[st]];
            double flops = 0;
            uint64_t coll = 0, send = 0;
            for (size_t k = 0; k < t->n_nodes; k++) {
                int64_t v;
                flops += gen_node_flops(&t->nodes[k]);
                if (t->nodes[k].type == ETK_NODE_COLL && etk_node_i64(&t->nodes[k], "comm_size", &v))
                    coll += (uint64_t)v;
                if (t->nodes[k].type == ETK_NODE_SEND && etk_node_i64(&t->nodes[k], "comm_size", &v))
                    send += (uint64_t)v;
            }
            uint64_t scoll = 0;
            for (int g = 0; g < ETK_GEN_N_GROUP_KINDS; g++)
                for (int k = 0; k < ETK_COLL_TYPE_COUNT; k++)
                    scoll += s.stages[st].coll_bytes[g][k];
            assert_int_equal(s.stages[st].nodes, t->n_nodes);
            assert_true(s.stages[st].flops == flops);
            assert_int_equal(scoll, coll);
            assert_int_equal(s.stages[st].send_bytes, send);
        }
        etk_gen_summary_free(&s);
        etk_workload_free(w);
    }
}

static void test_write_deterministic(void **state)
{
    (void)state;
    etk_gen_config c;
    cfg_from(&c, STAGE_PLAN);
    char p1[512], p2[512], f1[600], f2[600];
    snprintf(p1, sizeof p1, "%s/a", tu_tmpdir());
    snprintf(p2, sizeof p2, "%s/b", tu_tmpdir());
    etk_error err = {0};
    if (etk_gen_write(&c, p1, &err) || etk_gen_write(&c, p2, &err))
        fail_msg("%s", err.msg);
    for (uint32_t r = 0; r < 8; r++) {
        size_t l1, l2;
        snprintf(f1, sizeof f1, "%s.%u.et", p1, r);
        snprintf(f2, sizeof f2, "%s.%u.et", p2, r);
        uint8_t *a = tu_read(f1, &l1), *b = tu_read(f2, &l2);
        assert_int_equal(l1, l2);
        assert_memory_equal(a, b, l1);
        free(a);
        free(b);
    }
    /* read back: the files are the in-memory workload */
    etk_workload *rd, *mem = workload(STAGE_PLAN, false, &c);
    etk_read_opts ro = {.quiet = true};
    if (etk_workload_open(p1, NULL, &ro, &rd, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(rd->n_ranks, 8);
    assert_non_null(rd->groups);
    assert_int_equal(rd->groups->n_groups, mem->groups->n_groups);
    for (uint32_t r = 0; r < 8; r++) {
        assert_int_equal(rd->ranks[r]->n_nodes, mem->ranks[r]->n_nodes);
        assert_int_equal(rd->ranks[r]->n_warnings, 0);
        for (size_t i = 0; i < mem->ranks[r]->n_nodes; i++)
            assert_true(same_node(&rd->ranks[r]->nodes[i], &mem->ranks[r]->nodes[i]));
    }
    /* the generator's own encoder writes exactly what the trace layer's writer writes */
    for (uint32_t r = 0; r < 8; r++) {
        char f3[600];
        snprintf(f1, sizeof f1, "%s.%u.et", p1, r);
        snprintf(f3, sizeof f3, "%s/ref.%u.et", tu_tmpdir(), r);
        if (etk_trace_write(mem->ranks[r], f3, &err))
            fail_msg("%s", err.msg);
        size_t l1, l3;
        uint8_t *a = tu_read(f1, &l1), *b = tu_read(f3, &l3);
        assert_int_equal(l1, l3);
        assert_memory_equal(a, b, l1);
        free(a);
        free(b);
    }
    etk_workload_free(rd);
    etk_workload_free(mem);
}

/* The unit order of stage 0 from its pipeline messages: 'F' send of an activation, 'B' receipt
 * of a gradient. */
static void unit_order(const etk_trace *t, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const char *nm = t->nodes[i].name;
        if (strstr(nm, "send_activation"))
            out[n++] = 'F';
        else if (strstr(nm, "recv_gradient"))
            out[n++] = 'B';
    }
    out[n] = 0;
}

static void test_schedule_and_buckets(void **state)
{
    (void)state;
    const char *base = "--model llama2-7b --layers 8 --hidden 256 --heads 4 --ffn 512 --vocab 1000 --seq 64 --pp 4 "
                       "--dp 2 --global-batch 16 --dp-bucket-mb 0.5";
    char line[512], order[64];
    etk_gen_config c;
    /* 1F1B on stage 0 of 4 with 8 micro-batches: 3 warm-up forwards, 5 x (F, B), 3 backwards */
    etk_workload *w = workload(base, true, &c);
    unit_order(w->ranks[w->class_rep[0]], order);
    assert_string_equal(order, "FFFFBFBFBFBFBBBB");
    /* each unit's first node waits (control dependency) for the previous unit's last */
    etk_trace *t = w->ranks[w->class_rep[0]];
    assert_int_equal(etk_trace_index(t, NULL), 0);
    size_t ctrl = 0;
    for (size_t i = 0; i < t->n_nodes; i++)
        ctrl += t->nodes[i].n_ctrl_deps;
    assert_int_equal(ctrl, 2 * 8 - 1);
    /* DP buckets: once per step, after the last micro-batch's backward, each depending only on
     * weight-gradient nodes of micro-batch 7, the first one issued before that backward ends */
    size_t nb = 0;
    uint64_t first_bucket = 0, last_bwd = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        if (!strncmp(n->name, "mb7.", 4) && n->type == ETK_NODE_COMP)
            last_bwd = n->id;
        if (!strstr(n->name, "grad_bucket"))
            continue;
        nb++;
        if (!first_bucket)
            first_bucket = n->id;
        for (uint32_t k = 0; k < n->n_data_deps; k++) {
            const etk_node *d = etk_trace_find(t, n->data_deps[k]);
            assert_non_null(d);
            if (strncmp(d->name, "mb7.", 4))
                fail_msg("bucket %s depends on %s", n->name, d->name);
            assert_true(strstr(d->name, "wgrad") || strstr(d->name, ".bwd"));
        }
    }
    assert_true(nb >= 2);
    assert_true(first_bucket < last_bwd);
    /* gradient accumulation: each weight-gradient node follows the previous micro-batch's */
    const etk_node *w7 = NULL, *w6 = NULL;
    for (size_t i = 0; i < t->n_nodes; i++) {
        if (!strcmp(t->nodes[i].name, "mb7.L0.q.wgrad"))
            w7 = &t->nodes[i];
        if (!strcmp(t->nodes[i].name, "mb6.L0.q.wgrad"))
            w6 = &t->nodes[i];
    }
    assert_non_null(w7);
    assert_non_null(w6);
    bool follows = false;
    for (uint32_t k = 0; k < w7->n_data_deps; k++)
        follows |= w7->data_deps[k] == w6->id;
    assert_true(follows);
    etk_workload_free(w);
    /* interleaved 1F1B, 2 chunks per rank: stage 0 of 4 warms up (4-0-1) 2 + (2-1) 4 = 10 chunk
     * forwards (every chunk forward sends an activation, every chunk backward receives a gradient) */
    snprintf(line, sizeof line, "%s --vpp 2", base);
    w = workload(line, true, &c);
    unit_order(w->ranks[w->class_rep[0]], order);
    assert_string_equal(order, "FFFFFFFFFFFBFBFBFBFBFBBBBBBBBBBB");
    etk_workload_free(w);
    snprintf(line, sizeof line, "%s --schedule gpipe", base);
    w = workload(line, true, &c);
    unit_order(w->ranks[w->class_rep[0]], order);
    assert_string_equal(order, "FFFFFFFFBBBBBBBB");
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stage_comparison),  cmocka_unit_test(test_structure),
        cmocka_unit_test(test_fold_and_summary),  cmocka_unit_test(test_write_deterministic),
        cmocka_unit_test(test_schedule_and_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
