/* test_info.c — etk_info_trace, its JSON form, and etk_dot_write. Every number is checked
 * against an independent value: a hexdump read by hand (ASTRA-sim all-reduce), sums computed
 * with a separate protobuf decoder (a small Python varint parser, not etkit's reader) over the
 * STAGE and Chakra files, or hand-made traces counted in the comments. */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"
#include "etkit/validate.h"

static etk_trace *read_trace(const char *rel)
{
    etk_trace *t;
    etk_error err = {0};
    etk_read_opts o = {.quiet = true};
    if (etk_trace_read(tu_data(rel), &o, &t, &err))
        fail_msg("%s", err.msg);
    return t;
}

static void info_of(etk_trace *t, etk_trace_info *in)
{
    etk_error err = {0};
    if (etk_info_trace(t, in, &err))
        fail_msg("%s", err.msg);
}

static const etk_info_coll *find_coll(const etk_trace_info *in, const char *pg, int type)
{
    for (size_t i = 0; i < in->n_colls; i++)
        if (!strcmp(in->colls[i].pg_name, pg) && in->colls[i].comm_type == type)
            return &in->colls[i];
    fail_msg("no collectives of type %d on group '%s'", type, pg);
    return NULL;
}

/* ASTRA-sim 8-rank all-reduce, rank 0 (81 bytes). Hexdump by hand:
 *   07 0a 05 "0.0.4"                      GlobalMetadata, version 0.0.4
 *   48 12 14 "all_reduce_8npus_1MB"       Node of 0x48 bytes, name (id 0 omitted)
 *   18 07                                 type = 7 COMM_COLL_NODE
 *   52 0e 0a 09 "is_cpu_op" d8 01 00      bool_val false
 *   52 0d 0a 09 "comm_type" 48 00         int64_val 0 = ALL_REDUCE
 *   52 0f 0a 09 "comm_size" 48 80 80 40   int64_val varint 0x40 << 14 = 1048576
 * so: 1 node, one ALL_REDUCE of 1048576 bytes on the all-ranks group, no deps, 1 root,
 * longest path 1 node. Every rank has the same single collective. */
static void test_astra_all_reduce(void **state)
{
    (void)state;
    for (int r = 0; r < 8; r++) {
        char rel[128];
        snprintf(rel, sizeof rel, "astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce.%d.et", r);
        etk_trace *t = read_trace(rel);
        etk_trace_info in;
        info_of(t, &in);
        assert_int_equal(in.n_nodes, 1);
        assert_int_equal(in.by_type[ETK_NODE_COLL], 1);
        assert_int_equal(in.coll_count[ETK_COLL_ALL_REDUCE], 1);
        assert_int_equal(in.coll_bytes[ETK_COLL_ALL_REDUCE], 1048576);
        assert_int_equal(in.coll_unknown_count, 0);
        assert_int_equal(in.n_colls, 1);
        assert_string_equal(in.colls[0].pg_name, "");
        assert_int_equal(in.colls[0].bytes, 1048576);
        assert_int_equal(in.n_peers, 0);
        assert_int_equal(in.n_roots, 1);
        assert_int_equal(in.depth, 1);
        assert_string_equal(in.version, "0.0.4");
        if (r == 0)
            assert_int_equal(in.file_bytes, 81);
        etk_info_free(&in);
        etk_trace_free(t);
    }
}

/* STAGE GPT workload, rank 0 (348 nodes: 250 COMP, 90 COLL, 4 SEND, 4 RECV). Its TP group is
 * "5" = {0, 2} (STAGE makes DP the fastest rank dimension): 48 all-gathers totalling
 * 25,165,824 and 32 reduce-scatters totalling 33,554,432 (STAGE writes elements, not bytes),
 * plus one all-reduce of 32,768,000; its DP group "1" = {0, 1} carries 9 all-reduces totalling
 * 83,099,648. Pipeline: 4 sends to and 4 recvs from rank 4, 524,288 each. Compute sums
 * num_ops 356,258,414,592 and tensor_size 507,510,784. 469 data deps, none absent; 8 nodes
 * without deps; longest path 36 nodes (Kahn + longest path in the independent decoder). */
static void test_stage_rank0(void **state)
{
    (void)state;
    etk_trace *t = read_trace("stage/gpt_small_dp2_tp2_pp2/workload.0.et");
    etk_trace_info in;
    info_of(t, &in);
    assert_int_equal(in.n_nodes, 348);
    assert_int_equal(in.by_type[ETK_NODE_COMP], 250);
    assert_int_equal(in.by_type[ETK_NODE_COLL], 90);
    assert_int_equal(in.by_type[ETK_NODE_SEND], 4);
    assert_int_equal(in.by_type[ETK_NODE_RECV], 4);
    const etk_info_coll *c = find_coll(&in, "5", ETK_COLL_ALL_GATHER);
    assert_int_equal(c->count, 48);
    assert_int_equal(c->bytes, 25165824);
    c = find_coll(&in, "5", ETK_COLL_REDUCE_SCATTER);
    assert_int_equal(c->count, 32);
    assert_int_equal(c->bytes, 33554432);
    c = find_coll(&in, "5", ETK_COLL_ALL_REDUCE);
    assert_int_equal(c->count, 1);
    assert_int_equal(c->bytes, 32768000);
    c = find_coll(&in, "1", ETK_COLL_ALL_REDUCE);
    assert_int_equal(c->count, 9);
    assert_int_equal(c->bytes, 83099648);
    assert_int_equal(in.n_colls, 4);
    assert_int_equal(in.coll_count[ETK_COLL_ALL_REDUCE], 10);
    assert_int_equal(in.coll_bytes[ETK_COLL_ALL_REDUCE], 83099648 + 32768000);
    assert_int_equal(in.n_peers, 1);
    assert_int_equal(in.peers[0].peer, 4);
    assert_int_equal(in.peers[0].send_count, 4);
    assert_int_equal(in.peers[0].send_bytes, 4 * 524288);
    assert_int_equal(in.peers[0].recv_count, 4);
    assert_int_equal(in.peers[0].recv_bytes, 4 * 524288);
    assert_int_equal(in.comp_flops, 356258414592ull);
    assert_int_equal(in.comp_bytes, 507510784);
    assert_int_equal(in.n_data_deps, 469);
    assert_int_equal(in.n_ctrl_deps, 0);
    assert_int_equal(in.n_missing_data_deps, 0);
    assert_int_equal(in.n_no_deps, 8);
    assert_int_equal(in.n_roots, 8);
    assert_int_equal(in.depth, 36);
    assert_int_equal(in.n_unordered, 0);

    /* the JSON form carries the same numbers */
    json_t *j = etk_info_to_json(&in, 0);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "nodes")), 348);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "compute"), "num_ops_flops")),
                     356258414592ll);
    json_t *g = json_object_get(j, "collectives_by_group");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(g); i++) {
        json_t *e = json_array_get(g, i);
        if (!strcmp(json_string_value(json_object_get(e, "pg_name")), "5") &&
            !strcmp(json_string_value(json_object_get(e, "comm_type")), "ALL_GATHER")) {
            assert_int_equal(json_integer_value(json_object_get(e, "count")), 48);
            assert_int_equal(json_integer_value(json_object_get(e, "bytes")), 25165824);
            seen = true;
        }
    }
    assert_true(seen);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "dependencies"),
                                                        "longest_path_nodes")),
                     36);
    json_decref(j);
    etk_info_free(&in);
    etk_trace_free(t);
}

/* Chakra's converted CNN: 3643 COMP + 21 COLL; 14 COLL without comm_type (host-side c10d ops),
 * 5 NCCL all-reduces of 8196000 + 31502336 + 26255360 + 26550272 + 9724160 = 102228128 bytes
 * and 2 broadcasts of 212480 + 424 = 212904; COMP durations sum to 343769 us. 3664 ctrl refs
 * (1277 to absent ids), 181878 data refs (none absent); ignoring absent ids and the 383
 * self-deps, 5 roots (ids 216, 432, 541, 619, 1634 — as the spec lists), Kahn orders 1381
 * nodes, the longest path among them is 439 nodes and 2283 nodes are on or after a cycle. */
static void test_cnn(void **state)
{
    (void)state;
    etk_trace *t = read_trace("chakra/converted_cnn_ddp.0.et");
    etk_trace_info in;
    info_of(t, &in);
    assert_int_equal(in.n_nodes, 3664);
    assert_int_equal(in.by_type[ETK_NODE_COMP], 3643);
    assert_int_equal(in.by_type[ETK_NODE_COLL], 21);
    assert_int_equal(in.coll_unknown_count, 14);
    assert_int_equal(in.coll_count[ETK_COLL_ALL_REDUCE], 5);
    assert_int_equal(in.coll_bytes[ETK_COLL_ALL_REDUCE], 102228128);
    assert_int_equal(in.coll_count[ETK_COLL_BROADCAST], 2);
    assert_int_equal(in.coll_bytes[ETK_COLL_BROADCAST], 212904);
    assert_int_equal(in.comp_duration_micros, 343769);
    assert_int_equal(in.n_ctrl_deps, 3664);
    assert_int_equal(in.n_missing_ctrl_deps, 1277);
    assert_int_equal(in.n_data_deps, 181878);
    assert_int_equal(in.n_missing_data_deps, 0);
    assert_int_equal(in.n_no_deps, 0);
    assert_int_equal(in.n_roots, 5);
    assert_int_equal(in.depth, 439);
    assert_int_equal(in.n_unordered, 2283);
    etk_info_free(&in);
    etk_trace_free(t);
}

/* Hand-made diamond plus extras:
 *   1 COMP 100 FLOPs, tensor_size 10          (root)
 *   2 COMP 200 FLOPs <- data 1
 *   3 SEND to 5, 64 bytes <- data 1
 *   4 COLL ALL_GATHER 32 bytes on pg "tp" <- data 2, ctrl 3
 *   5 RECV from 5, 16 bytes <- ctrl 77 (absent)
 *   6 MEM_LOAD tensor_size 7                  (root)
 * longest path 1 -> 2 -> 4 = 3 nodes; roots 1, 5 (its only dep is absent) and 6; 2 nodes
 * without any dependency; 3 data + 2 ctrl deps, 1 ctrl dep absent; peer 5: 1 send 64, 1 recv
 * 16; memory 7 bytes. */
static etk_trace *diamond(void)
{
    etk_trace *t = etk_trace_new(NULL);
    static const uint64_t d1[] = {1}, d2[] = {2}, c3[] = {3}, c77[] = {77};
    etk_attr a1[] = {etk_attr_i64("num_ops", 100), etk_attr_u64("tensor_size", 10)};
    etk_attr a2[] = {etk_attr_i64("num_ops", 200)};
    etk_attr a3[] = {etk_attr_i32("comm_dst", 5), etk_attr_i32("comm_tag", 0),
                     etk_attr_i64("comm_size", 64)};
    etk_attr a4[] = {etk_attr_i64("comm_type", ETK_COLL_ALL_GATHER), etk_attr_i64("comm_size", 32),
                     etk_attr_str("pg_name", "tp")};
    etk_attr a5[] = {etk_attr_i32("comm_src", 5), etk_attr_i32("comm_tag", 0),
                     etk_attr_i64("comm_size", 16)};
    etk_attr a6[] = {etk_attr_u64("tensor_size", 7)};
    etk_node n[6] = {
        {.id = 1, .name = "a", .type = ETK_NODE_COMP, .n_attr = 2, .attr = a1},
        {.id = 2, .name = "b", .type = ETK_NODE_COMP, .n_attr = 1, .attr = a2, .n_data_deps = 1,
         .data_deps = d1},
        {.id = 3, .name = "s", .type = ETK_NODE_SEND, .n_attr = 3, .attr = a3, .n_data_deps = 1,
         .data_deps = d1},
        {.id = 4, .name = "g \"q\"", .type = ETK_NODE_COLL, .n_attr = 3, .attr = a4,
         .n_data_deps = 1, .data_deps = d2, .n_ctrl_deps = 1, .ctrl_deps = c3},
        {.id = 5, .name = "r", .type = ETK_NODE_RECV, .n_attr = 3, .attr = a5, .n_ctrl_deps = 1,
         .ctrl_deps = c77},
        {.id = 6, .name = "m", .type = ETK_NODE_MEM_LOAD, .n_attr = 1, .attr = a6},
    };
    for (int i = 0; i < 6; i++)
        assert_non_null(etk_trace_add(t, &n[i]));
    return t;
}

static void test_diamond(void **state)
{
    (void)state;
    etk_trace *t = diamond();
    etk_trace_info in;
    info_of(t, &in);
    assert_int_equal(in.n_nodes, 6);
    assert_int_equal(in.by_type[ETK_NODE_COMP], 2);
    assert_int_equal(in.by_type[ETK_NODE_MEM_LOAD], 1);
    assert_int_equal(in.comp_flops, 300);
    assert_int_equal(in.comp_bytes, 10);
    assert_int_equal(in.mem_bytes, 7);
    assert_int_equal(in.depth, 3);
    assert_int_equal(in.n_roots, 3);
    assert_int_equal(in.n_no_deps, 2);
    assert_int_equal(in.n_data_deps, 3);
    assert_int_equal(in.n_ctrl_deps, 2);
    assert_int_equal(in.n_missing_ctrl_deps, 1);
    assert_int_equal(in.n_peers, 1);
    assert_int_equal(in.peers[0].peer, 5);
    assert_int_equal(in.peers[0].send_bytes, 64);
    assert_int_equal(in.peers[0].recv_bytes, 16);
    const etk_info_coll *c = find_coll(&in, "tp", ETK_COLL_ALL_GATHER);
    assert_int_equal(c->count, 1);
    assert_int_equal(c->bytes, 32);
    /* text output names units */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(etk_info_print(f, &in, 0), 0);
    fclose(f);
    assert_non_null(strstr(buf, "num_ops 300 FLOPs"));
    assert_non_null(strstr(buf, "longest path 3 nodes"));
    assert_non_null(strstr(buf, "memory: tensor_size 7 bytes"));
    assert_non_null(strstr(buf, "nodes: 6 (MEM_LOAD_NODE 1, COMP_NODE 2, COMM_SEND_NODE 1, "
                                "COMM_RECV_NODE 1, COMM_COLL_NODE 1)"));
    assert_non_null(strstr(buf, "ALL_GATHER"));
    free(buf);
    etk_info_free(&in);
    etk_trace_free(t);
}

static size_t count(const char *s, const char *w)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, w)); p += strlen(w))
        n++;
    return n;
}

/* DOT of the diamond: edges 1->2, 1->3, 2->4 (data, solid), 3->4 (ctrl, dashed); the ctrl dep
 * of 5 on absent 77 is omitted and counted in a comment. With --max-nodes 3 only nodes 1..3
 * and edges 1->2, 1->3 remain. The quote in node 4's name is escaped. */
static void test_dot(void **state)
{
    (void)state;
    etk_trace *t = diamond();
    char *buf = NULL;
    size_t len = 0, edges = 0;
    etk_error err = {0};
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(etk_dot_write(f, t, NULL, &edges, &err), 0);
    fclose(f);
    assert_int_equal(edges, 4);
    assert_int_equal(count(buf, " -> "), 4);
    assert_int_equal(count(buf, "[style=dashed]"), 1);
    assert_non_null(strstr(buf, "n2 -> n3 [style=dashed];"));
    assert_non_null(strstr(buf, "n0 -> n1;"));
    assert_non_null(strstr(buf, "1 dependencies on ids absent"));
    assert_non_null(strstr(buf, "g \\\"q\\\""));
    assert_non_null(strstr(buf, "COLL ALL_GATHER 32 bytes pg tp"));
    assert_non_null(strstr(buf, "COMP 100 FLOPs 10 bytes"));
    free(buf);
    etk_dot_opts o = {.max_nodes = 3};
    f = open_memstream(&buf, &len);
    assert_int_equal(etk_dot_write(f, t, &o, &edges, &err), 0);
    fclose(f);
    assert_int_equal(edges, 2);
    assert_int_equal(count(buf, " -> "), 2);
    assert_int_equal(count(buf, "[label="), 3);
    assert_non_null(strstr(buf, "cut by --max-nodes to the first 3"));
    free(buf);
    etk_trace_free(t);
}

/* dot -n of a large trace reads only its head (issue #18: `dot -n 10` of a 1 GB trace loaded
 * all of it): tests/data/small.0.et (7 nodes, a chain 1 -> 2 -> 3 -> ...) read with
 * max_nodes 3 holds nodes 1..3, is marked partial, and its DOT says the rest was not read and
 * counts the dependency of nothing shown on what was not read; max_nodes 7 reads it whole. */
static void test_dot_reads_head_only(void **state)
{
    (void)state;
    etk_read_opts ro = {.quiet = true, .max_nodes = 3};
    etk_trace *t = NULL;
    etk_error err = {0};
    assert_int_equal(etk_trace_read(ETK_SOURCE_DIR "/tests/data/small.0.et", &ro, &t, &err), 0);
    assert_int_equal(t->n_nodes, 3);
    assert_true(t->partial);
    assert_int_equal(t->nodes[2].id, 3);
    char *buf = NULL;
    size_t len = 0, edges = 0;
    etk_dot_opts o = {.max_nodes = 3};
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(etk_dot_write(f, t, &o, &edges, &err), 0);
    fclose(f);
    assert_int_equal(edges, 2);
    assert_non_null(strstr(buf, "cut by --max-nodes to the first 3 (file order; the rest of the file was not read)"));
    free(buf);
    etk_trace_free(t);
    ro.max_nodes = 7;
    assert_int_equal(etk_trace_read(ETK_SOURCE_DIR "/tests/data/small.0.et", &ro, &t, &err), 0);
    assert_int_equal(t->n_nodes, 7);
    assert_false(t->partial);
    etk_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_astra_all_reduce),
        cmocka_unit_test(test_stage_rank0),
        cmocka_unit_test(test_cnn),
        cmocka_unit_test(test_diamond),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_dot_reads_head_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
