/* test_input_limits.c — issue #18, the input side: hostile model, cluster and GPU files are
 * refused early with a message naming the file, the line and the limit (nesting depth,
 * duplicate and unknown keys, numbers out of range, dimension limits shared with the flags),
 * and the checked-arithmetic and "did you mean" helpers behind those messages. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "etkit/json.h"
#include "etkit/model.h"
#include "etkit/net.h"
#include "etkit/validate.h"
#include "model/graph.h"
#include "sim_testlib.h"
#include "util/check.h"

static etk_error err;

/* parse a model text; return the error message (the parse must fail) */
static const char *model_error(const char *text, size_t len, const char *name)
{
    etk_model m;
    memset(&err, 0, sizeof err);
    int rc = etk_model_parse(text, len, name, &m, &err);
    if (rc == 0)
        fail_msg("accepted: %.80s", text);
    assert_true(rc < 0);
    return err.msg;
}
#define MODEL_ERR(text) model_error(text, strlen(text), "m.yaml")
#define HAS(msg, want)                                                                            \
    do {                                                                                          \
        const char *m_ = (msg);                                                                   \
        if (!strstr(m_, want))                                                                    \
            fail_msg("message '%s' lacks '%s'", m_, want);                                        \
    } while (0)

#define GOOD "name: x\narch: llama\nlayers: 2\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 64\n"

static char *repeat(const char *open, const char *mid, const char *close, size_t n)
{
    size_t lo = strlen(open), lm = strlen(mid), lc = strlen(close);
    char *s = malloc(n * (lo + lc) + lm + 1), *p = s;
    for (size_t i = 0; i < n; i++, p += lo)
        memcpy(p, open, lo);
    memcpy(p, mid, lm);
    p += lm;
    for (size_t i = 0; i < n; i++, p += lc)
        memcpy(p, close, lc);
    *p = 0;
    return s;
}

/* 30,000 nested lists and 100,000 nested objects overflowed the stack (SIGSEGV): now an error
 * naming the file, the line and the bound, in well under a second */
static void test_deep_nesting(void **state)
{
    (void)state;
    char *a = repeat("[", "1", "]", 30000);
    HAS(model_error(a, strlen(a), "deep.yaml"), "deep.yaml:1: nesting deeper than 256 levels");
    free(a);
    char *o = repeat("{\"a\":", "1", "}", 100000);
    clock_t t0 = clock();
    HAS(model_error(o, strlen(o), "config.json"), "config.json:1: nesting deeper than 256 levels");
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
    free(o);
    /* 255 levels are fine for the parser (the key check then refuses the content) */
    char *ok = repeat("{\"a\":", "1", "}", 255);
    HAS(model_error(ok, strlen(ok), "ok.json"), "ok.json:1: unknown key 'a'");
    free(ok);
}

static void test_model_keys(void **state)
{
    (void)state;
    /* a typo was ignored and kv_heads silently became heads */
    HAS(MODEL_ERR(GOOD "kv_head: 1\n"), "m.yaml:9: unknown key 'kv_head': did you mean 'kv_heads'?");
    HAS(MODEL_ERR(GOOD "layer: 1\n"), "m.yaml:9: unknown key 'layer': did you mean 'layers'?");
    HAS(MODEL_ERR(GOOD "colour: blue\n"), "unknown key 'colour' (known keys: layers, hidden,");
    /* the last of two values was taken */
    HAS(MODEL_ERR(GOOD "hidden: 512\n"), "m.yaml:9: duplicate key 'hidden' (first given on line 4)");
    /* HF config.json: unknown keys are normal there, duplicates are not */
    const char *hf = "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 256,\n"
                     " \"num_attention_heads\": 4, \"intermediate_size\": 512, \"vocab_size\": 1000,\n"
                     " \"max_position_embeddings\": 64, \"torch_dtype\": \"bfloat16\"";
    char buf[600];
    snprintf(buf, sizeof buf, "%s}", hf);
    etk_model m;
    assert_int_equal(etk_model_parse(buf, strlen(buf), "config.json", &m, NULL), 0);
    assert_int_equal(m.hidden, 256);
    snprintf(buf, sizeof buf, "%s,\n \"hidden_size\": 512}", hf);
    HAS(MODEL_ERR(buf), "m.yaml:4: duplicate key 'hidden_size' (first given on line 1)");
}

static void test_model_ranges(void **state)
{
    (void)state;
    /* hidden 2^40 overflowed etk_graph_elems into negative FLOPs; the flags refuse it too */
    HAS(MODEL_ERR("name: x\narch: llama\nlayers: 2\nhidden: 1099511627776\nheads: 4\nffn: 512\nvocab: 1000\nseq: 64\n"),
        "model x: hidden 1099511627776 is out of range (at most 1048576");
    HAS(MODEL_ERR("name: x\narch: llama\nlayers: 2\nhidden: 256\nheads: 4\nffn: 512\nvocab: 1000\nseq: 1099511627776\n"),
        "model x: seq 1099511627776 is out of range (at most 16777216");
    /* HF hidden_size 2^62 printed 4.6e18 parameters */
    HAS(MODEL_ERR("{\"num_hidden_layers\": 2, \"hidden_size\": 4611686018427387904, \"num_attention_heads\": 4,"
                  "\"intermediate_size\": 512, \"vocab_size\": 1000, \"max_position_embeddings\": 64}"),
        "hidden 4611686018427387904 is out of range (at most 1048576");
    /* 1e400 said "expected a YAML mapping at the top level" */
    HAS(MODEL_ERR("{\"model_type\": \"llama\",\n \"hidden_size\": 1e400}"), "m.yaml:2: number 1e400 is out of range");
    HAS(MODEL_ERR(GOOD "experts: 99999999999999999999\n"),
        "m.yaml:9: integer 99999999999999999999 is out of range");
    /* the flags go through the same check */
    etk_model p;
    assert_int_equal(etk_model_preset("llama2-7b", &p, NULL), 0);
    p.hidden = (int64_t)1 << 21;
    memset(&err, 0, sizeof err);
    assert_true(etk_model_check(&p, &err) < 0);
    HAS(err.msg, "hidden 2097152 is out of range (at most 1048576");
    /* within the limits, a batch that makes a tensor past 2^52 elements is an error, not a wrap */
    assert_int_equal(etk_model_preset("llama2-7b", &p, NULL), 0);
    etk_graph *g = NULL;
    memset(&err, 0, sizeof err);
    assert_true(etk_graph_load(&p, 100000000, &g, &err) < 0);
    assert_null(g);
    HAS(err.msg, "elements at batch 100000000 (at most 2^52");
    assert_int_equal(etk_graph_load(&p, 1000, &g, &err), 0);
    etk_graph_free(g);
}

/* ---------- cluster and GPU YAML ---------- */

static const char *cluster_error(const char *text, size_t len)
{
    etk_cluster c;
    memset(&err, 0, sizeof err);
    if (etk_cluster_parse(text, len, "c.yaml", &c, &err) == 0)
        fail_msg("accepted: %.80s", text);
    return err.msg;
}
#define CLUSTER_ERR(text) cluster_error(text, strlen(text))
#define NET(bw, lat) "gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: " bw ", latency: " lat "}\n"

static void test_cluster(void **state)
{
    (void)state;
    etk_cluster c;
    assert_int_equal(etk_cluster_parse(NET("450", "500"), strlen(NET("450", "500")), "c.yaml", &c, NULL), 0);
    assert_true(c.dims[0].bw_Bps == 450e9);
    /* [ x 1,000,000 ran for minutes (80,000: 19 s); now refused after 257 events */
    char *deep = repeat("[", "", "", 1000000);
    clock_t t0 = clock();
    HAS(cluster_error(deep, strlen(deep)), "c.yaml:1: nesting deeper than 256 levels");
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
    free(deep);
    /* typos and duplicates */
    HAS(CLUSTER_ERR("gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwith: 450, latency: 500}\n"),
        "c.yaml:3: unknown key 'bandwith' in network[0]: did you mean 'bandwidth'?");
    HAS(CLUSTER_ERR("gpu: h100\nnetwrk:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500}\n"),
        "c.yaml:2: unknown key 'netwrk' in the cluster: did you mean 'network'?");
    HAS(CLUSTER_ERR("gpu: {name: x, peak_tflops: {bf16: 1}, hbm_bw_GBs: 1}\nnetwork:\n  - {size: 8, topology: Switch, "
                    "bandwidth: 450, latency: 500}\n"),
        "did you mean 'hbm_bw_GBps'?");
    HAS(CLUSTER_ERR(NET("450", "500") "gpu: a100\n"), "c.yaml:4: duplicate key 'gpu' (first given on line 1)");
    HAS(CLUSTER_ERR("gpu: h100\nnetwork:\n  - {size: 8, topology: Switch, bandwidth: 450, latency: 500, size: 4}\n"),
        "c.yaml:3: duplicate key 'size' (first given on line 3)");
    /* ranges: these made communication take 0 ns */
    HAS(CLUSTER_ERR(NET("1e-14", "500")), "c.yaml:3: network[0].bandwidth: expected GB/s per direction, 10^9 B/s, "
                                          "in [0.001, 1e+06], got 1e-14");
    HAS(CLUSTER_ERR(NET("450", "1e300")), "c.yaml:3: network[0].latency: expected ns in [0, 1e+09], got 1e300");
    HAS(CLUSTER_ERR(NET("450", "500") "compute_efficiency: 1e-17\n"),
        "compute_efficiency: expected a fraction in [0.001, 1], got 1e-17");
    HAS(CLUSTER_ERR("gpu: {name: x, peak_tflops: {bf16: 1e-14}, hbm_bw_GBps: 1}\nnetwork:\n  - {size: 8, topology: "
                    "Switch, bandwidth: 450, latency: 500}\n"),
        "expected TFLOP/s in [0.001, 1e6] or 0");
}

/* ---------- files and traces ---------- */

static void test_files(void **state)
{
    (void)state;
    char *d;
    size_t n;
    memset(&err, 0, sizeof err);
    assert_true(etk_file_read_max("/dev/zero", 100, "model file", &d, &n, &err) != 0);
    HAS(err.msg, "/dev/zero: is a character device, not a regular file, expected a model file");
    char path[512], fifo[512];
    snprintf(path, sizeof path, "%s/lim_dir", tu_tmpdir());
    mkdir(path, 0755);
    assert_true(etk_file_read_max(path, 100, "cluster file", &d, &n, &err) != 0);
    HAS(err.msg, "lim_dir: is a directory, expected a cluster file");
    snprintf(fifo, sizeof fifo, "%s/lim_fifo", tu_tmpdir());
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    etk_trace *t = NULL;
    assert_true(etk_trace_read(fifo, NULL, &t, &err) != 0);
    HAS(err.msg, "lim_fifo: is a FIFO (named pipe), not a regular file, expected a .et trace file");
    etk_workload *w = NULL;
    assert_true(etk_workload_open(path, NULL, NULL, &w, &err) != 0);
    HAS(err.msg, "lim_dir: is a directory, expected a .et trace file or a prefix of rank files");
    unlink(fifo);
    /* size limits: plain and after gunzip */
    snprintf(path, sizeof path, "%s/lim_big.yaml", tu_tmpdir());
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 300; i++)
        fputs("# a comment line of padding\n", f);
    fclose(f);
    assert_true(etk_file_read_max(path, 1000, "model file", &d, &n, &err) != 0);
    HAS(err.msg, "lim_big.yaml: 8400 bytes, more than the limit of 1000 bytes (0 MiB) for a model file");
    snprintf(path, sizeof path, "%s/lim_big.yaml.gz", tu_tmpdir());
    gzFile gz = gzopen(path, "wb");
    for (int i = 0; i < 300; i++)
        gzputs(gz, "# a comment line of padding\n");
    gzclose(gz);
    assert_true(etk_file_read_max(path, 1000, "model file", &d, &n, &err) != 0);
    HAS(err.msg, "decompresses to more than the limit of 1000 bytes (0 MiB) for a model file");
    assert_int_equal(etk_file_read_max(path, 9000, "model file", &d, &n, &err), 0);
    assert_int_equal(n, 8400);
    free(d);
}

/* a gzip of empty frames grew to 7.5 GB (1 byte per 88-byte node): now refused after a million */
static void test_empty_frames(void **state)
{
    (void)state;
    size_t len = 3u << 20;
    uint8_t *zeros = calloc(len, 1);
    etk_trace *t = NULL;
    memset(&err, 0, sizeof err);
    assert_true(etk_trace_read_mem(zeros, len, "bomb.et", NULL, &t, &err) != 0);
    assert_null(t);
    HAS(err.msg, "bomb.et: 1048575 nodes in 1048576 bytes (1.0 bytes per node; a Chakra node takes at least 8");
    free(zeros);
}

/* ---------- validate and the workload ---------- */

static void test_validate_codes(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new(NULL);
    etk_attr a1[2] = {etk_attr_i64("comm_type", 100), etk_attr_i64("comm_size", 64)};
    etk_attr a2[2] = {etk_attr_i64("comm_type", -1), etk_attr_i64("comm_size", 64)};
    etk_attr a3[1] = {etk_attr_i64("num_ops", -1)};
    etk_node n1 = {.id = 1, .name = "ar100", .type = ETK_NODE_COLL, .attr = a1, .n_attr = 2};
    etk_node n2 = {.id = 2, .name = "arm1", .type = ETK_NODE_COLL, .attr = a2, .n_attr = 2};
    etk_node n3 = {.id = 3, .name = "neg", .type = ETK_NODE_COMP, .attr = a3, .n_attr = 1};
    assert_non_null(etk_trace_add(t, &n1));
    assert_non_null(etk_trace_add(t, &n2));
    assert_non_null(etk_trace_add(t, &n3));
    etk_findings *f = etk_findings_new();
    assert_int_equal(etk_validate_trace(t, 0, NULL, f, &err), 0);
    assert_int_equal(etk_findings_count(f, "bad-comm-type", 0), 1);
    assert_int_equal(etk_findings_first(f, "bad-comm-type", 0)->count, 2); /* 100 and -1 */
    HAS(etk_findings_first(f, "bad-comm-type", 0)->message, "outside ALL_REDUCE..BARRIER (0..9)");
    assert_int_equal(etk_findings_count(f, "negative-ops", 0), 1);
    assert_int_equal(etk_findings_first(f, "negative-ops", 0)->node_id, 3);
    etk_findings_free(f);
    etk_trace_free(t);
}

static void test_rank_gap(void **state)
{
    (void)state;
    char prefix[512], path[600];
    snprintf(prefix, sizeof prefix, "%s/gap", tu_tmpdir());
    etk_trace *t = etk_trace_new(NULL);
    etk_attr a[1] = {etk_attr_i64("num_ops", 1000)};
    etk_node n = {.id = 1, .name = "mm", .type = ETK_NODE_COMP, .attr = a, .n_attr = 1};
    assert_non_null(etk_trace_add(t, &n));
    for (int r = 0; r <= 2; r += 2) {
        snprintf(path, sizeof path, "%s.%d.et", prefix, r);
        assert_int_equal(etk_trace_write(t, path, NULL), 0);
    }
    snprintf(path, sizeof path, "%s.1.et", prefix);
    unlink(path);
    etk_trace_free(t);
    etk_workload *w = NULL;
    memset(&err, 0, sizeof err);
    assert_true(etk_workload_open(prefix, NULL, NULL, &w, &err) != 0);
    HAS(err.msg, "rank 1 is missing");
    HAS(err.msg, "but rank files up to");
    HAS(err.msg, "gap.2.et exist");
}

/* n GPUs of 1000 TFLOP/s on one switch of 100 GB/s, 1 us */
static etk_cluster one_switch(uint32_t n)
{
    etk_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test");
    c.n_dims = 1;
    c.dims[0].size = c.n_npus = n;
    c.dims[0].topo = ETK_TOPO_SWITCH;
    c.dims[0].bw_Bps = 100e9;
    c.dims[0].latency_ns = 1000;
    c.gpu.peak_flops[ETK_PREC_BF16] = 1000e12;
    c.gpu.hbm_bw_Bps = 2000e9;
    c.compute_efficiency = 1;
    return c;
}

/* what validate flags the simulator warns about, once per kind with counts */
static void test_sim_warnings(void **state)
{
    (void)state;
    etk_workload *w = sb_workload(2);
    for (uint32_t r = 0; r < 2; r++) {
        etk_trace *t = w->ranks[r] = etk_trace_new(NULL);
        sb_node b;
        sb_begin(&b, 1, ETK_NODE_COLL, "ar-no-type");
        sb_attr(&b, etk_attr_i64("comm_size", 1 << 20));
        assert_non_null(etk_trace_add(t, &b.n));
        sb_begin(&b, 2, ETK_NODE_COMP, "neg");
        sb_attr(&b, etk_attr_i64("num_ops", -1));
        assert_non_null(etk_trace_add(t, &b.n));
        sb_comp(t, 2, 1, 0, 0, NULL, 0); /* duplicate id 2 */
        /* rank 0 sends 100 B, rank 1 expects 1 GiB */
        sb_p2p(t, 4, r == 0, 1 - r, 7, r == 0 ? 100 : (uint64_t)1 << 30, NULL, 0);
    }
    etk_cluster c = one_switch(2);
    etk_sim_opts o = {0};
    o.no_fold = true;
    etk_sim *s = NULL;
    memset(&err, 0, sizeof err);
    if (etk_sim_workload(w, &c, &o, &s, &err))
        fail_msg("sim: %s", err.msg);
    const char *wr = etk_sim_result_get(s)->warnings;
    HAS(wr, "(rank 0): 1 collectives without comm_type, timed as ALL_REDUCE");
    HAS(wr, "(rank 1): 1 compute nodes with a negative num_ops, timed as 0 FLOPs");
    HAS(wr, "(rank 0): 1 nodes repeat the id of an earlier node");
    HAS(wr, "1 send/recv pairs of different comm_size, timed at the send's size (the first: rank 0 id 4 sends 100 B, "
            "rank 1 id 4 expects 1073741824 B)");
    etk_sim_free(s);
    etk_workload_free(w);
}

/* three nodes of num_ops 2^63 - 1: the FLOP sum wrapped (or saturated at 9.22e18) silently */
static void test_sim_flops_overflow(void **state)
{
    (void)state;
    etk_workload *w = sb_workload(1);
    w->ranks[0] = etk_trace_new(NULL);
    for (uint64_t id = 1; id <= 3; id++)
        sb_comp(w->ranks[0], id, 1, (uint64_t)INT64_MAX, 0, NULL, 0);
    etk_cluster c = one_switch(1);
    etk_sim_opts o = {0};
    etk_sim *s = NULL;
    memset(&err, 0, sizeof err);
    assert_true(etk_sim_workload(w, &c, &o, &s, &err) != 0);
    HAS(err.msg, "rank 0: the sum of num_ops passes 1.8e19 FLOPs");
    etk_sim_free(s);
    etk_workload_free(w);
}

/* etk_info_trace (`etkit info`) summed the same three nodes into 3 (2^63 - 1) mod 2^64 =
 * 9223372036854775805 and printed it, exit 0; now an error naming the field and the node. Sums
 * that fit 64 bits stay exact (3 x 2^62), and comm_size sums are checked the same way. */
static void test_info_sums(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new(NULL);
    for (uint64_t id = 1; id <= 3; id++)
        sb_comp(t, id, 1, (uint64_t)INT64_MAX, 0, NULL, 0);
    etk_trace_info in;
    memset(&err, 0, sizeof err);
    assert_true(etk_info_trace(t, &in, &err) != 0);
    HAS(err.msg, "the sum of the num_ops of the COMP_NODEs passes 1.8e19 (2^64 - 1) at node #2 id 3");
    etk_trace_free(t);
    t = etk_trace_new(NULL);
    for (uint64_t id = 1; id <= 3; id++)
        sb_comp(t, id, 1, (uint64_t)1 << 62, 0, NULL, 0);
    assert_int_equal(etk_info_trace(t, &in, &err), 0);
    assert_true(in.comp_flops == 3 * ((uint64_t)1 << 62));
    json_t *j = etk_info_to_json(&in, 0);
    json_t *f = json_object_get(json_object_get(j, "compute"), "num_ops_flops");
    assert_true(json_is_real(f) && json_real_value(f) == 3.0 * 4611686018427387904.0); /* not negative */
    json_decref(j);
    etk_info_free(&in);
    etk_trace_free(t);
    /* two collectives of comm_size 2^63 - 1: their bytes pass 2^64 - 1 */
    t = etk_trace_new(NULL);
    for (uint64_t id = 1; id <= 3; id++) {
        etk_attr a[2] = {etk_attr_i64("comm_type", 0), etk_attr_i64("comm_size", INT64_MAX)};
        etk_node n = {.id = id, .name = "ar", .type = ETK_NODE_COLL, .attr = a, .n_attr = 2};
        assert_non_null(etk_trace_add(t, &n));
    }
    assert_true(etk_info_trace(t, &in, &err) != 0);
    HAS(err.msg, "the sum of the comm_size of the COMM_COLL_NODEs passes 1.8e19 (2^64 - 1) at node #2 id 3 'ar'");
    etk_trace_free(t);
}

static void test_json_text(void **state)
{
    (void)state;
    json_t *j = etk_json_text("ok/\xc3\xa9t\xc3\xa9.et");
    assert_string_equal(json_string_value(j), "ok/\xc3\xa9t\xc3\xa9.et");
    json_decref(j);
    j = etk_json_text("bad\xff\xfe.et");
    assert_non_null(j);
    assert_string_equal(json_string_value(j), "bad\\xff\\xfe.et");
    json_decref(j);
}

static void test_helpers(void **state)
{
    (void)state;
    int64_t r = 7;
    assert_true(etk_mul_i64((int64_t)1 << 31, (int64_t)1 << 31, &r));
    assert_true(r == (int64_t)1 << 62);
    assert_false(etk_mul_i64((int64_t)1 << 32, (int64_t)1 << 31, &r));
    assert_true(r == (int64_t)1 << 62); /* untouched */
    assert_false(etk_add_i64(INT64_MAX, 1, &r));
    assert_true(etk_add_i64(INT64_MAX, -1, &r) && r == INT64_MAX - 1);
    const char *keys[] = {"layers", "hidden", "kv_heads", "heads", "bandwidth", "latency"};
    assert_string_equal(etk_suggest("kv_head", keys, 6), "kv_heads");
    assert_string_equal(etk_suggest("bandwith", keys, 6), "bandwidth");
    assert_string_equal(etk_suggest("latncy", keys, 6), "latency");
    assert_null(etk_suggest("colour", keys, 6));
    assert_null(etk_suggest("x", keys, 6));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_deep_nesting), cmocka_unit_test(test_model_keys),
                                       cmocka_unit_test(test_model_ranges), cmocka_unit_test(test_cluster),
                                       cmocka_unit_test(test_files), cmocka_unit_test(test_empty_frames),
                                       cmocka_unit_test(test_validate_codes), cmocka_unit_test(test_rank_gap),
                                       cmocka_unit_test(test_sim_warnings), cmocka_unit_test(test_sim_flops_overflow),
                                       cmocka_unit_test(test_info_sums), cmocka_unit_test(test_json_text),
                                       cmocka_unit_test(test_helpers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
