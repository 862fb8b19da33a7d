/* test_validate.c — etk_validate_trace / etk_validate_workload against real traces (Chakra's
 * converted CNN, STAGE, ASTRA-sim microbenchmarks) and hand-made workloads built in memory
 * with one defect each (deadlocks, mismatched collectives, unmatched sends, undefined groups,
 * cycles, duplicate ids, attribute kinds). Expected numbers on real files were derived with an
 * independent protobuf decoder (a 60-line Python varint parser written for this purpose, not
 * etkit's reader); hand-made cases are counted by hand in the comments. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"
#include "etkit/validate.h"

/* ---------- building traces by hand ---------- */
typedef struct nspec {
    uint64_t id;
    int type;
    uint64_t data[4];
    uint32_t nd;
    uint64_t ctrl[4];
    uint32_t nc;
    etk_attr attr[6];
    uint32_t na;
} nspec;

static void add_node(etk_trace *t, const nspec *s)
{
    char name[32];
    snprintf(name, sizeof name, "n%llu", (unsigned long long)s->id);
    etk_node n = {0};
    n.id = s->id;
    n.name = name;
    n.type = s->type;
    n.data_deps = s->data;
    n.n_data_deps = s->nd;
    n.ctrl_deps = s->ctrl;
    n.n_ctrl_deps = s->nc;
    n.attr = s->attr;
    n.n_attr = s->na;
    assert_non_null(etk_trace_add(t, &n));
}

/* comm nodes with conventional kinds */
static nspec coll(uint64_t id, int type, int64_t size, const char *pg)
{
    nspec s = {.id = id, .type = ETK_NODE_COLL};
    s.attr[s.na++] = etk_attr_i64("comm_type", type);
    s.attr[s.na++] = etk_attr_i64("comm_size", size);
    if (pg)
        s.attr[s.na++] = etk_attr_str("pg_name", pg);
    return s;
}

static nspec p2p(uint64_t id, bool send, int32_t peer, int32_t tag, int64_t size)
{
    nspec s = {.id = id, .type = send ? ETK_NODE_SEND : ETK_NODE_RECV};
    s.attr[s.na++] = etk_attr_i32(send ? "comm_dst" : "comm_src", peer);
    s.attr[s.na++] = etk_attr_i32("comm_tag", tag);
    s.attr[s.na++] = etk_attr_i64("comm_size", size);
    return s;
}

static nspec comp(uint64_t id, int64_t flops)
{
    nspec s = {.id = id, .type = ETK_NODE_COMP};
    s.attr[s.na++] = etk_attr_i64("num_ops", flops);
    return s;
}

static nspec dep(nspec s, uint64_t d)
{
    s.data[s.nd++] = d;
    return s;
}

static etk_workload *new_workload(uint32_t n_ranks)
{
    etk_workload *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->n_ranks = n_ranks;
    w->ranks = calloc(n_ranks, sizeof *w->ranks);
    assert_non_null(w->ranks);
    for (uint32_t r = 0; r < n_ranks; r++)
        assert_non_null(w->ranks[r] = etk_trace_new("0.0.4"));
    return w;
}

static void add_group(etk_workload *w, const char *id, const uint32_t *ranks, uint32_t n)
{
    if (!w->groups)
        assert_non_null(w->groups = etk_groups_new());
    assert_int_equal(etk_groups_add(w->groups, id, ranks, n), 0);
}

static etk_findings *run(etk_workload *w)
{
    etk_findings *f = etk_findings_new();
    etk_error err = {0};
    assert_non_null(f);
    if (etk_validate_workload(w, NULL, f, &err))
        fail_msg("validate: %s", err.msg);
    return f;
}

static etk_findings *run_trace(etk_trace *t)
{
    etk_findings *f = etk_findings_new();
    etk_error err = {0};
    assert_non_null(f);
    if (etk_validate_trace(t, 0, NULL, f, &err))
        fail_msg("validate: %s", err.msg);
    return f;
}

static void dump(const etk_findings *f)
{
    char line[4096];
    for (size_t i = 0; i < f->n; i++) {
        etk_finding_format(&f->items[i], line, sizeof line);
        print_message("  %s\n", line);
    }
}

/* the only finding with `code`; its message must contain each of the NULL-terminated words */
static const etk_finding *only(const etk_findings *f, const char *code, ...)
{
    if (etk_findings_count(f, code, -1) != 1) {
        dump(f);
        fail_msg("expected exactly one '%s' finding, got %zu", code, etk_findings_count(f, code, -1));
    }
    const etk_finding *x = etk_findings_first(f, code, -1);
    va_list ap;
    va_start(ap, code);
    const char *w;
    while ((w = va_arg(ap, const char *)))
        if (!strstr(x->message, w))
            fail_msg("'%s' finding lacks \"%s\": %s", code, w, x->message);
    va_end(ap);
    return x;
}

/* ---------- real traces ---------- */

/* Chakra's converted CNN (rank 0): the spec and an independent decode agree on 210 distinct
 * absent control-dependency ids (1277 references; the smallest 2, 3, 429, 434, 617) and no
 * absent data dependency. The same decode finds 383 nodes whose ctrl_deps name their own id and
 * 2-node cycles (e.g. 3317 'aten::mul(0)' <-> 3318, a ctrl edge one way and a data edge back):
 * Kahn's algorithm orders only 1381 of the 3664 nodes, so 2283 are on or after a cycle. The
 * data dependencies alone are acyclic. */
static void test_cnn_missing_ctrl_deps(void **state)
{
    (void)state;
    etk_trace *t;
    etk_error err = {0};
    etk_read_opts o = {.quiet = true};
    if (etk_trace_read(tu_data("chakra/converted_cnn_ddp.0.et"), &o, &t, &err))
        fail_msg("%s", err.msg);
    etk_findings *f = run_trace(t);
    const etk_finding *x = only(f, "missing-ctrl-dep", "210 control-dependency ids",
                                "1277 references", "ids 2, 3, 429, 434, 617", NULL);
    assert_int_equal(x->count, 210);
    assert_int_equal(x->severity, ETK_SEV_ERROR);
    assert_int_equal(x->node_index, 0);
    assert_int_equal(x->node_id, 216);
    assert_string_equal(x->file, t->path);
    assert_int_equal(etk_findings_count(f, "missing-data-dep", -1), 0);
    x = only(f, "self-dep", "383 nodes", NULL);
    assert_int_equal(x->count, 383);
    x = only(f, "cycle", "2 nodes", "#1381 id 3317 'aten::mul(0)' -ctrl-> #1382 id 3318",
             "-data-> #1381 id 3317", NULL);
    assert_int_equal(x->count, 2283);
    assert_int_equal(etk_findings_count(f, "duplicate-id", -1), 0);
    /* 14 COMM_COLL_NODEs (the c10d::broadcast_/allreduce_ host ops) carry neither comm_type
     * nor comm_size; 7 (the NCCL kernels) carry both */
    assert_int_equal(etk_findings_count(f, "missing-attr", -1), 2);
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->items[i].code, "missing-attr"))
            assert_int_equal(f->items[i].count, 14);
    etk_findings_free(f);
    etk_trace_free(t);
}

/* STAGE's 8-rank GPT workload: no errors. Each rank writes is_cpu_op as int32_val 0 on its 98
 * communication nodes (90 COLL + 4 SEND + 4 RECV); consumers read bool_val and get false, which
 * equals the 0 written: a warning, not an error. */
static void test_stage_passes(void **state)
{
    (void)state;
    etk_workload *w;
    etk_error err = {0};
    etk_read_opts o = {.quiet = true};
    if (etk_workload_open(tu_data("stage/gpt_small_dp2_tp2_pp2/workload.0.et"), NULL, &o, &w, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(w->n_ranks, 8);
    assert_non_null(w->groups);
    etk_findings *f = run(w);
    if (f->n_errors)
        dump(f);
    assert_int_equal(f->n_errors, 0);
    size_t n_cpu = 0;
    for (size_t i = 0; i < f->n; i++) {
        const etk_finding *x = &f->items[i];
        if (strcmp(x->code, "attr-kind") || !strstr(x->message, "'is_cpu_op'"))
            continue;
        n_cpu++;
        assert_int_equal(x->severity, ETK_SEV_WARNING);
        assert_int_equal(x->count, 98);
        assert_non_null(strstr(x->message, "int32_val"));
    }
    assert_int_equal(n_cpu, 8);
    assert_int_equal(etk_findings_count(f, "deadlock", -1), 0);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Every ASTRA-sim microbenchmark (4 collectives x 4/8/16 ranks, one COLL node per rank with
 * conventional kinds) is clean: no errors and no warnings. */
static void test_astra_microbenchmarks_pass(void **state)
{
    (void)state;
    static const char *colls[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
    static const int npus[] = {4, 8, 16};
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 3; k++) {
            char rel[256];
            snprintf(rel, sizeof rel, "astra-sim-microbenchmarks/%s/%dnpus_1MB/%s.0.et", colls[c],
                     npus[k], colls[c]);
            etk_workload *w;
            etk_error err = {0};
            etk_read_opts o = {.quiet = true};
            if (etk_workload_open(tu_data(rel), NULL, &o, &w, &err))
                fail_msg("%s", err.msg);
            assert_int_equal(w->n_ranks, (uint32_t)npus[k]);
            etk_findings *f = run(w);
            if (f->n)
                dump(f);
            assert_int_equal(f->n_errors, 0);
            assert_int_equal(f->n_warnings, 0);
            etk_findings_free(f);
            etk_workload_free(w);
        }
}

/* ---------- hand-made workloads ---------- */

/* Rank 0: recv from 1 (tag 1), then send to 1 (tag 2). Rank 1: recv from 0 (tag 2), then send
 * to 0 (tag 1). Each send waits for its own rank's recv, whose matching send is the other
 * rank's send: a 2-step cycle over ranks 0 and 1; all 2 contracted operations are stuck. */
static etk_workload *p2p_deadlock(void)
{
    etk_workload *w = new_workload(2);
    nspec s;
    s = p2p(1, false, 1, 1, 64);
    add_node(w->ranks[0], &s);
    s = dep(p2p(2, true, 1, 2, 64), 1);
    add_node(w->ranks[0], &s);
    s = p2p(1, false, 0, 2, 64);
    add_node(w->ranks[1], &s);
    s = dep(p2p(2, true, 0, 1, 64), 1);
    add_node(w->ranks[1], &s);
    return w;
}

static void test_p2p_deadlock(void **state)
{
    (void)state;
    etk_workload *w = p2p_deadlock();
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "deadlock", "cycle of 2 waits",
                                "rank 0 node id 2 (COMM_SEND_NODE 'n2') waits for id 1 (COMM_RECV_NODE",
                                "rank 1 node id 2 (COMM_SEND_NODE 'n2') waits for id 1 (COMM_RECV_NODE",
                                NULL);
    assert_int_equal(x->severity, ETK_SEV_ERROR);
    assert_int_equal(x->count, 2);
    assert_int_equal(etk_findings_count(f, "unmatched-send", -1), 0);
    assert_int_equal(etk_findings_count(f, "unmatched-recv", -1), 0);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Same exchange with rank 1 sending first (send, then recv depending on it): rank 1's send
 * completes with rank 0's recv, then rank 0 sends and rank 1 receives. No error at all. */
static void test_p2p_no_deadlock(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    nspec s;
    s = p2p(1, false, 1, 1, 64);
    add_node(w->ranks[0], &s);
    s = dep(p2p(2, true, 1, 2, 64), 1);
    add_node(w->ranks[0], &s);
    s = p2p(1, true, 0, 1, 64);
    add_node(w->ranks[1], &s);
    s = dep(p2p(2, false, 0, 2, 64), 1);
    add_node(w->ranks[1], &s);
    etk_findings *f = run(w);
    if (f->n)
        dump(f);
    assert_int_equal(f->n, 0);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Two groups a = b = {0, 1}. Rank 0 issues A (on a) then B (on b, depending on A); rank 1
 * issues B then A (depending on B). Each group's sequence matches (one collective each), but
 * A needs rank 1's A, which waits for B, which needs rank 0's B, which waits for A. */
static void test_coll_order_deadlock(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    static const uint32_t both[] = {0, 1};
    add_group(w, "a", both, 2);
    add_group(w, "b", both, 2);
    nspec s;
    s = coll(1, ETK_COLL_ALL_REDUCE, 1024, "a");
    add_node(w->ranks[0], &s);
    s = dep(coll(2, ETK_COLL_ALL_GATHER, 512, "b"), 1);
    add_node(w->ranks[0], &s);
    s = coll(1, ETK_COLL_ALL_GATHER, 512, "b");
    add_node(w->ranks[1], &s);
    s = dep(coll(2, ETK_COLL_ALL_REDUCE, 1024, "a"), 1);
    add_node(w->ranks[1], &s);
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "deadlock", "cycle of 2 waits",
                                "rank 0 node id 2 (COMM_COLL_NODE 'n2') waits for id 1",
                                "rank 1 node id 2 (COMM_COLL_NODE 'n2') waits for id 1", NULL);
    assert_int_equal(x->count, 2);
    assert_int_equal(f->n_errors, 1);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* All-reduce on all ranks with comm_size 100 on rank 0 and 200 on rank 1. */
static void test_coll_size_mismatch(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    nspec s;
    s = coll(1, ETK_COLL_ALL_REDUCE, 100, NULL);
    add_node(w->ranks[0], &s);
    s = coll(1, ETK_COLL_ALL_REDUCE, 200, NULL);
    add_node(w->ranks[1], &s);
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "coll-mismatch", "group \"\" (all ranks",
                                "ALL_REDUCE of 100 bytes on rank 0",
                                "ALL_REDUCE of 200 bytes on rank 1", NULL);
    assert_int_equal(x->rank, 1);
    assert_int_equal(x->node_index, 0);
    assert_int_equal(x->count, 1);
    assert_int_equal(f->n_errors, 1);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Group g = {0, 1, 2}: ranks 0 and 1 issue two all-reduces, rank 2 one. */
static void test_coll_count_mismatch(void **state)
{
    (void)state;
    etk_workload *w = new_workload(3);
    static const uint32_t three[] = {0, 1, 2};
    add_group(w, "g", three, 3);
    nspec s;
    for (uint32_t r = 0; r < 3; r++) {
        s = coll(1, ETK_COLL_ALL_REDUCE, 8, "g");
        add_node(w->ranks[r], &s);
        if (r < 2) {
            s = dep(coll(2, ETK_COLL_ALL_REDUCE, 8, "g"), 1);
            add_node(w->ranks[r], &s);
        }
    }
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "coll-count-mismatch", "group \"g\"",
                                "rank 2 issues 1 collectives", "rank 0 issues 2", NULL);
    assert_int_equal(x->rank, 2);
    assert_int_equal(x->count, 1);
    assert_int_equal(etk_findings_count(f, "coll-mismatch", -1), 0);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Rank 0 sends to 1 with tag 5; rank 1 receives from 0 with tag 6 and sends to 0 tag 7 with
 * 10 bytes, which rank 0 receives with 20 bytes. One unmatched send, one unmatched recv, one
 * size mismatch. */
static void test_unmatched_p2p(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    nspec s;
    s = p2p(1, true, 1, 5, 64);
    add_node(w->ranks[0], &s);
    s = p2p(2, false, 1, 7, 20);
    add_node(w->ranks[0], &s);
    s = p2p(1, false, 0, 6, 64);
    add_node(w->ranks[1], &s);
    s = p2p(2, true, 0, 7, 10);
    add_node(w->ranks[1], &s);
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "unmatched-send", "rank 0 id 1 (0->1 tag 5, 64 bytes)", NULL);
    assert_int_equal(x->rank, 0);
    assert_int_equal(x->node_id, 1);
    x = only(f, "unmatched-recv", "rank 1 id 1 (0->1 tag 6", NULL);
    assert_int_equal(x->rank, 1);
    x = only(f, "p2p-size-mismatch", "rank 1 id 2 (1->0 tag 7, 10 bytes)", NULL);
    assert_int_equal(f->n_errors, 3);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Groups file defines "1" = {0, 5} on a 2-rank workload (rank 5 out of range); a collective
 * names pg_name "7", which is not defined; and a send names peer 9. */
static void test_bad_groups(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    static const uint32_t g1[] = {0, 5};
    add_group(w, "1", g1, 2);
    nspec s;
    for (uint32_t r = 0; r < 2; r++) {
        s = coll(1, ETK_COLL_ALL_REDUCE, 8, "7");
        add_node(w->ranks[r], &s);
    }
    s = p2p(2, true, 9, 1, 8);
    add_node(w->ranks[0], &s);
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "bad-group", "group \"1\"", "outside 0..1", "the first 5", NULL);
    assert_int_equal(x->rank, -1);
    x = only(f, "undefined-group", "pg_name \"7\"", "2 collectives", NULL);
    assert_int_equal(x->rank, 0);
    assert_int_equal(x->count, 2);
    only(f, "bad-peer", "0->9", NULL);
    assert_int_equal(f->n_errors, 3);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* Rank 1 issues a collective on group "a" = {0} which it is not part of; rank 0 issues its own
 * one, so the group's sequence is complete. */
static void test_not_in_group(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    static const uint32_t g[] = {0};
    add_group(w, "a", g, 1);
    nspec s = coll(1, ETK_COLL_BROADCAST, 8, "a");
    add_node(w->ranks[0], &s);
    add_node(w->ranks[1], &s);
    etk_findings *f = run(w);
    const etk_finding *x = only(f, "not-in-group", "rank 1 issues 1 collectives on group \"a\"", NULL);
    assert_int_equal(x->rank, 1);
    assert_int_equal(f->n_errors, 1);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* One file: 1 <- 3, 2 <- 1, 3 <- 2 (a 3-node cycle), 4 <- 3 (after the cycle), 5 alone.
 * Kahn orders only node 5: 4 nodes are on or after the cycle. */
static void test_three_cycle(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new(NULL);
    nspec s;
    s = dep(comp(1, 10), 3);
    add_node(t, &s);
    s = dep(comp(2, 10), 1);
    add_node(t, &s);
    s = dep(comp(3, 10), 2);
    add_node(t, &s);
    s = dep(comp(4, 10), 3);
    add_node(t, &s);
    s = comp(5, 10);
    add_node(t, &s);
    etk_findings *f = run_trace(t);
    const etk_finding *x = only(f, "cycle", "cycle of 3 nodes",
                                "#0 id 1 'n1' -data-> #2 id 3 'n3' -data-> #1 id 2 'n2' -data-> #0 id 1",
                                "4 nodes are on or after", NULL);
    assert_int_equal(x->count, 4);
    assert_int_equal(f->n_errors, 1);
    etk_findings_free(f);
    etk_trace_free(t);
}

/* ids 1, 2, 2, 3, 3, 3: three nodes reuse an id (#2, #4, #5). */
static void test_duplicate_ids(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new(NULL);
    static const uint64_t ids[] = {1, 2, 2, 3, 3, 3};
    for (int i = 0; i < 6; i++) {
        nspec s = comp(ids[i], 1);
        add_node(t, &s);
    }
    etk_findings *f = run_trace(t);
    const etk_finding *x = only(f, "duplicate-id", "3 nodes reuse", "2 (nodes #1 and #2)",
                                "3 (nodes #3 and #4)", "3 (nodes #3 and #5)", NULL);
    assert_int_equal(x->count, 3);
    assert_int_equal(x->node_index, 2);
    etk_findings_free(f);
    etk_trace_free(t);
}

/* Attribute kinds: is_cpu_op int32 0 (read as false = written: warning), is_cpu_op int32 1
 * (read as false, written true: error), comm_size uint64 1048576 (read as 0: error, and the
 * collective then lacks no attribute: missing-attr does not fire). Missing attributes: a SEND
 * without comm_tag, a RECV without comm_src; a zero-size all-gather (warning) and a zero-size
 * BARRIER (fine); a COMP with neither num_ops nor duration (warning); dependencies on absent
 * ids 99 (data) and 98, 97 (ctrl). */
static void test_attrs_and_missing(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new(NULL);
    nspec s = comp(1, 5);
    s.attr[s.na++] = etk_attr_i32("is_cpu_op", 0);
    add_node(t, &s);
    s = comp(2, 5);
    s.attr[s.na++] = etk_attr_i32("is_cpu_op", 1);
    add_node(t, &s);
    s = (nspec){.id = 3, .type = ETK_NODE_COLL};
    s.attr[s.na++] = etk_attr_i64("comm_type", ETK_COLL_ALL_REDUCE);
    s.attr[s.na++] = etk_attr_u64("comm_size", 1048576);
    add_node(t, &s);
    s = p2p(4, true, 1, 0, 8);
    s.na = 1; /* comm_dst only */
    s.attr[s.na++] = etk_attr_i64("comm_size", 8);
    add_node(t, &s);
    s = (nspec){.id = 5, .type = ETK_NODE_RECV};
    s.attr[s.na++] = etk_attr_i32("comm_tag", 0);
    s.attr[s.na++] = etk_attr_i64("comm_size", 8);
    add_node(t, &s);
    s = coll(6, ETK_COLL_ALL_GATHER, 0, NULL);
    add_node(t, &s);
    s = coll(7, ETK_COLL_BARRIER, 0, NULL);
    add_node(t, &s);
    s = (nspec){.id = 8, .type = ETK_NODE_COMP, .data = {99}, .nd = 1, .ctrl = {98, 97, 98},
                .nc = 3};
    add_node(t, &s);
    etk_findings *f = run_trace(t);
    size_t kinds = 0;
    for (size_t i = 0; i < f->n; i++) {
        const etk_finding *x = &f->items[i];
        if (strcmp(x->code, "attr-kind"))
            continue;
        kinds++;
        if (strstr(x->message, "'is_cpu_op'") && x->severity == ETK_SEV_WARNING) {
            assert_int_equal(x->node_id, 1);
        } else if (strstr(x->message, "'is_cpu_op'")) {
            assert_int_equal(x->severity, ETK_SEV_ERROR);
            assert_int_equal(x->node_id, 2);
        } else {
            assert_non_null(strstr(x->message, "'comm_size' written as uint64_val"));
            assert_int_equal(x->severity, ETK_SEV_ERROR);
            assert_int_equal(x->node_id, 3);
        }
    }
    assert_int_equal(kinds, 3);
    assert_int_equal(etk_findings_count(f, "missing-attr", -1), 2);
    const etk_finding *x = etk_findings_first(f, "missing-attr", -1);
    assert_non_null(strstr(x->message, "COMM_SEND_NODE without comm_tag"));
    assert_int_equal(x->node_id, 4);
    x = &x[1];
    assert_non_null(strstr(x->message, "COMM_RECV_NODE without comm_src"));
    x = only(f, "zero-size-comm", "1 nodes", NULL);
    assert_int_equal(x->node_id, 6);
    x = only(f, "missing-cost", NULL);
    assert_int_equal(x->node_id, 8);
    x = only(f, "missing-data-dep", "1 data-dependency ids", "ids 99", NULL);
    assert_int_equal(x->count, 1);
    x = only(f, "missing-ctrl-dep", "2 control-dependency ids", "3 references", "ids 97, 98", NULL);
    assert_int_equal(x->count, 2);
    /* errors: attr-kind is_cpu_op=1 and comm_size, 2 missing-attr, 2 missing deps;
     * warnings: attr-kind is_cpu_op=0, zero-size-comm, missing-cost */
    assert_int_equal(f->n_errors, 6);
    assert_int_equal(f->n_warnings, 3);
    etk_findings_free(f);
    etk_trace_free(t);
}

/* A folded workload (rank 1 shares rank 0's class and has no trace): only the representative
 * is checked, and an info finding says the cross-rank checks were skipped. */
static void test_folded_workload(void **state)
{
    (void)state;
    etk_workload *w = new_workload(2);
    etk_trace_free(w->ranks[1]);
    w->ranks[1] = NULL;
    w->n_classes = 1;
    w->class_of = calloc(2, sizeof *w->class_of);
    w->class_rep = calloc(1, sizeof *w->class_rep);
    nspec s = coll(1, ETK_COLL_ALL_REDUCE, 8, NULL);
    add_node(w->ranks[0], &s);
    etk_findings *f = run(w);
    only(f, "skipped", "folded workload", NULL);
    assert_int_equal(f->n_errors, 0);
    etk_findings_free(f);
    etk_workload_free(w);
}

/* 4096 ranks in a ring: rank r receives from r-1 (tag r-1) and then sends to r+1 (tag r),
 * the send depending on the recv. Every recv waits on a send that waits on a recv: one cycle
 * of 4096 waits through all ranks. With rank 0 sending first instead the ring drains, and the
 * workload is clean. Also checks the deadlock pass stays linear at this size. */
static void ring(bool deadlock)
{
    const uint32_t R = 4096;
    etk_workload *w = new_workload(R);
    for (uint32_t r = 0; r < R; r++) {
        int32_t prev = (int32_t)((r + R - 1) % R), next = (int32_t)((r + 1) % R);
        nspec rv = p2p(1, false, prev, prev, 1024), sd = p2p(2, true, next, (int32_t)r, 1024);
        if (!deadlock && r == 0) {
            sd.id = 1;
            rv = dep(rv, 1);
            rv.id = 2;
            add_node(w->ranks[r], &sd);
            add_node(w->ranks[r], &rv);
        } else {
            sd = dep(sd, 1);
            add_node(w->ranks[r], &rv);
            add_node(w->ranks[r], &sd);
        }
    }
    etk_findings *f = run(w);
    if (deadlock) {
        const etk_finding *x = only(f, "deadlock", "cycle of 4096 waits", "...", NULL);
        assert_int_equal(x->count, 4096);
        assert_int_equal(f->n_errors, 1);
    } else {
        if (f->n)
            dump(f);
        assert_int_equal(f->n, 0);
    }
    etk_findings_free(f);
    etk_workload_free(w);
}

static void test_ring_4096(void **state)
{
    (void)state;
    ring(true);
    ring(false);
}

/* The deadlock workload written to files and checked with the command: exit 1 and the
 * deadlock finding; --no-deadlock and --per-file skip it (exit 0, no errors); --json carries it. */
static void test_cli_deadlock(void **state)
{
    (void)state;
    etk_workload *w = p2p_deadlock();
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/dl", tu_tmpdir());
    etk_error err = {0};
    if (etk_workload_write(w, prefix, &err))
        fail_msg("%s", err.msg);
    etk_workload_free(w);
    char *out;
    int st = tu_sh(&out, "%s/etkit validate %s", ETK_BINARY_DIR, prefix);
    assert_int_equal(st, 1);
    assert_non_null(strstr(out, "rank 0: node #1 (id 2): error [deadlock]: cross-rank deadlock"));
    assert_non_null(strstr(out, "2 ranks, 4 nodes: 1 errors, 0 warnings"));
    free(out);
    st = tu_sh(&out, "%s/etkit validate --no-deadlock %s", ETK_BINARY_DIR, prefix);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "0 errors"));
    free(out);
    st = tu_sh(&out, "%s/etkit validate --per-file %s", ETK_BINARY_DIR, prefix);
    assert_int_equal(st, 0);
    free(out);
    st = tu_sh(&out, "%s/etkit validate --json %s", ETK_BINARY_DIR, prefix);
    assert_int_equal(st, 1);
    assert_non_null(strstr(out, "\"code\": \"deadlock\""));
    assert_non_null(strstr(out, "\"ok\": false"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cnn_missing_ctrl_deps),
        cmocka_unit_test(test_stage_passes),
        cmocka_unit_test(test_astra_microbenchmarks_pass),
        cmocka_unit_test(test_p2p_deadlock),
        cmocka_unit_test(test_p2p_no_deadlock),
        cmocka_unit_test(test_coll_order_deadlock),
        cmocka_unit_test(test_coll_size_mismatch),
        cmocka_unit_test(test_coll_count_mismatch),
        cmocka_unit_test(test_unmatched_p2p),
        cmocka_unit_test(test_bad_groups),
        cmocka_unit_test(test_not_in_group),
        cmocka_unit_test(test_three_cycle),
        cmocka_unit_test(test_duplicate_ids),
        cmocka_unit_test(test_attrs_and_missing),
        cmocka_unit_test(test_folded_workload),
        cmocka_unit_test(test_ring_4096),
        cmocka_unit_test(test_cli_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
