/* test_et_io.c — the trace layer against real files and hand-made bad input: byte-exact round
 * trip of every .et under ../shared/data, known node counts, lenient reading (unpacked deps,
 * unknown fields, gzip), and precise errors for truncation, garbage, huge length prefixes and
 * wrong wire types. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "etkit/et.h"

/* ---- collect every .et under a directory ---- */
static void walk_et(const char *dir, char ***list, size_t *n)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        stat(p, &st);
        if (S_ISDIR(st.st_mode)) {
            walk_et(p, list, n);
        } else {
            size_t l = strlen(p);
            if (l > 3 && !strcmp(p + l - 3, ".et")) {
                *list = realloc(*list, (*n + 1) * sizeof **list);
                (*list)[(*n)++] = strdup(p);
            }
        }
    }
    closedir(d);
}

static void test_roundtrip_all_shared(void **state)
{
    (void)state;
    char **files = NULL;
    size_t n = 0;
    /* 12 ASTRA-sim microbenchmark dirs (4+8+16 ranks each of 4 collectives = 112 files),
     * 8 STAGE ranks, 2 Chakra files = 122; the 466 traces of the ASTRA-sim parity cases */
    static const char *const sets[] = {"astra-sim-microbenchmarks", "stage", "chakra",
                                       "astra-sim-cases/traces"};
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++)
        walk_et(tu_data(sets[s]), &files, &n);
    assert_int_equal(n, 122 + 466);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint8_t *orig = tu_read(files[i], &len);
        etk_trace *t;
        etk_error err = {0};
        etk_read_opts o = {.quiet = true};
        if (etk_trace_read(files[i], &o, &t, &err) != 0)
            fail_msg("%s", err.msg);
        uint8_t *enc;
        size_t elen;
        assert_int_equal(etk_trace_encode(t, &enc, &elen, &err), 0);
        if (elen != len || memcmp(enc, orig, len) != 0)
            fail_msg("round trip differs: %s (%zu vs %zu bytes)", files[i], len, elen);
        assert_int_equal(t->file_bytes, len);
        /* and through the file writer */
        char out[1100];
        snprintf(out, sizeof out, "%s/rt.et", tu_tmpdir());
        assert_int_equal(etk_trace_write(t, out, &err), 0);
        size_t l2;
        uint8_t *w = tu_read(out, &l2);
        assert_int_equal(l2, len);
        assert_memory_equal(w, orig, len);
        free(w);
        free(enc);
        free(orig);
        etk_trace_free(t);
        free(files[i]);
    }
    free(files);
}

static void test_known_counts(void **state)
{
    (void)state;
    etk_trace *t;
    etk_error err;
    etk_read_opts o = {.quiet = true};
    assert_int_equal(etk_trace_read(tu_data("chakra/converted_cnn_ddp.0.et"), &o, &t, &err), 0);
    assert_int_equal(t->n_nodes, 3664); /* chakra-et.md: 3664 nodes, 2.98 MB */
    assert_int_equal(t->file_bytes, 2978371);
    assert_int_equal(etk_trace_index(t, &err), 0);
    assert_int_equal(t->n_duplicate_ids, 0);
    /* first nodes without data dependencies, per chakra-et.md: 216, 432, 541, 619, 1634 */
    uint64_t want[] = {216, 432, 541, 619, 1634};
    size_t k = 0;
    for (size_t i = 0; i < t->n_nodes && k < 5; i++) {
        const etk_node *nd = &t->nodes[i];
        if (nd->n_data_deps == 0)
            assert_int_equal(nd->id, want[k++]);
    }
    assert_int_equal(k, 5);
    assert_non_null(etk_trace_find(t, 216));
    assert_int_equal(etk_trace_find(t, 216)->id, 216);
    assert_null(etk_trace_find(t, 0xFFFFFFFFFFull));
    etk_trace_free(t);

    /* ASTRA-sim microbenchmark: one COMM_COLL node, all-reduce of 1 MiB */
    assert_int_equal(etk_trace_read(tu_data("astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce.3.et"), &o, &t, &err), 0);
    assert_int_equal(t->n_nodes, 1);
    assert_int_equal(t->nodes[0].type, ETK_NODE_COLL);
    int64_t v;
    assert_true(etk_node_i64(&t->nodes[0], "comm_size", &v));
    assert_int_equal(v, 1048576);
    assert_true(etk_node_i64(&t->nodes[0], "comm_type", &v));
    assert_int_equal(v, ETK_COLL_ALL_REDUCE);
    etk_trace_free(t);

    /* STAGE writes is_cpu_op as int32: read leniently, with a warning */
    assert_int_equal(etk_trace_read(tu_data("stage/gpt_small_dp2_tp2_pp2/workload.0.et"), &o, &t, &err), 0);
    assert_true(t->n_warnings > 0);
    /* 348 nodes; STAGE also writes an 'outputs' attribute with no value (kind none) */
    assert_int_equal(t->n_nodes, 348);
    int cpu_warn = 0;
    for (size_t i = 0; i < t->n_warnings && i < ETK_MAX_WARN; i++)
        if (strstr(t->warnings[i], "'is_cpu_op' is int32_val, the convention is bool_val"))
            cpu_warn++;
    assert_true(cpu_warn > 0);
    bool b = true;
    const etk_attr *a = NULL;
    for (size_t i = 0; i < t->n_nodes && !a; i++)
        a = etk_node_attr(&t->nodes[i], "is_cpu_op");
    assert_non_null(a);
    assert_true(etk_attr_as_bool(a, &b));
    assert_false(b);
    etk_trace_free(t);
}

/* ---- hand-encoded protobuf ---- */
static size_t vput(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        p[n++] = b | (v ? 0x80 : 0);
    } while (v);
    return n;
}

static etk_trace *read_buf(const uint8_t *b, size_t n, etk_error *err)
{
    etk_trace *t = NULL;
    etk_read_opts o = {.quiet = true};
    etk_trace_read_mem(b, n, "mem.et", &o, &t, err);
    return t;
}

static void test_lenient_encodings(void **state)
{
    (void)state;
    /* metadata {version:"1"} + node with id 5, unpacked data_deps 1,2, an unknown field 99
     * (varint), type COMP placed after the deps (out of order), attr num_ops int64 7 */
    uint8_t node[64];
    size_t k = 0;
    node[k++] = 0x08; node[k++] = 5;            /* id = 5 */
    node[k++] = 0x28; node[k++] = 1;            /* data_deps 1 (unpacked, field 5 varint) */
    node[k++] = 0x28; node[k++] = 2;            /* data_deps 2 */
    k += vput(node + k, (99u << 3) | 0); node[k++] = 42; /* unknown field 99 */
    node[k++] = 0x18; node[k++] = 4;            /* type = COMP */
    /* attr: field 10, len; {1:"num_ops", 9:7} */
    uint8_t attr[] = {0x0a, 7, 'n', 'u', 'm', '_', 'o', 'p', 's', 0x48, 7};
    node[k++] = 0x52; node[k++] = sizeof attr;
    memcpy(node + k, attr, sizeof attr);
    k += sizeof attr;
    uint8_t file[128];
    size_t n = 0;
    uint8_t meta[] = {0x0a, 1, '1'};
    file[n++] = sizeof meta;
    memcpy(file + n, meta, sizeof meta);
    n += sizeof meta;
    n += vput(file + n, k);
    memcpy(file + n, node, k);
    n += k;
    etk_error err;
    etk_trace *t = read_buf(file, n, &err);
    assert_non_null(t);
    assert_string_equal(t->version, "1");
    assert_int_equal(t->n_nodes, 1);
    assert_int_equal(t->nodes[0].id, 5);
    assert_int_equal(t->nodes[0].type, ETK_NODE_COMP);
    assert_int_equal(t->nodes[0].n_data_deps, 2);
    assert_int_equal(t->nodes[0].data_deps[1], 2);
    int64_t v;
    assert_true(etk_node_i64(&t->nodes[0], "num_ops", &v));
    assert_int_equal(v, 7);
    /* canonical re-encoding: deps packed, unknown field dropped, fields in order */
    uint8_t *enc;
    size_t elen;
    assert_int_equal(etk_trace_encode(t, &enc, &elen, &err), 0);
    uint8_t want[] = {3, 0x0a, 1, '1',
                      2 + 2 + 4 + 2 + sizeof attr, 0x08, 5, 0x18, 4, 0x2a, 2, 1, 2, 0x52, sizeof attr,
                      0x0a, 7, 'n', 'u', 'm', '_', 'o', 'p', 's', 0x48, 7};
    assert_int_equal(elen, sizeof want);
    assert_memory_equal(enc, want, sizeof want);
    free(enc);
    etk_trace_free(t);

    /* the same file gzipped reads the same */
    char path[1100];
    snprintf(path, sizeof path, "%s/g.et.gz", tu_tmpdir());
    gzFile gz = gzopen(path, "wb");
    gzwrite(gz, file, (unsigned)n);
    gzclose(gz);
    etk_read_opts o = {.quiet = true};
    assert_int_equal(etk_trace_read(path, &o, &t, &err), 0);
    assert_true(t->gzipped);
    assert_int_equal(t->n_nodes, 1);
    assert_int_equal(t->nodes[0].data_deps[0], 1);
    assert_int_equal(t->file_bytes, n);
    etk_trace_free(t);
}

static void expect_err(const uint8_t *b, size_t n, const char *must1, const char *must2)
{
    etk_error err = {0};
    etk_trace *t = read_buf(b, n, &err);
    assert_null(t);
    assert_int_equal(err.code, ETK_EFORMAT);
    if (!strstr(err.msg, "mem.et"))
        fail_msg("no file name in: %s", err.msg);
    if (must1 && !strstr(err.msg, must1))
        fail_msg("'%s' not in: %s", must1, err.msg);
    if (must2 && !strstr(err.msg, must2))
        fail_msg("'%s' not in: %s", must2, err.msg);
}

static void test_bad_input(void **state)
{
    (void)state;
    size_t len;
    uint8_t *good = tu_read(tu_data("astra-sim-microbenchmarks/all_reduce/4npus_1MB/all_reduce.0.et"), &len);
    /* structure: [L0][meta L0 bytes][L1][node] */
    size_t meta_end = 1 + good[0];
    /* truncated inside the node */
    expect_err(good, len - 3, "node index 0", "truncated");
    char off[64];
    snprintf(off, sizeof off, "byte offset %zu:", meta_end); /* where the node frame starts */
    expect_err(good, len - 3, off, "exceeds the");
    /* truncated length prefix: the file ends in a varint continuation byte */
    {
        uint8_t b[8] = {2, 0x0a, 0, 0x80};
        expect_err(b, 4, "truncated length prefix", "node index 0");
    }
    /* empty file */
    expect_err(good, 0, "empty", NULL);
    /* a length prefix larger than the file */
    {
        uint8_t b[16] = {2, 0x0a, 0};
        size_t k = 3 + vput(b + 3, 1000);
        b[k++] = 0x08;
        expect_err(b, k, "length prefix 1000 exceeds the", "node index 0");
    }
    /* a length prefix larger than any sane bound (10 GB) */
    {
        uint8_t b[16];
        size_t k = vput(b, 10000000000ull);
        expect_err(b, k + 2, "exceeds the limit", "GlobalMetadata");
    }
    /* wrong wire type: node field 1 (id) as length-delimited */
    {
        uint8_t b[] = {2, 0x0a, 0, 4, 0x0a, 2, 'a', 'b'};
        expect_err(b, sizeof b, "field 1 (id) has wire type 2, expected 0", "node index 0");
    }
    /* garbage */
    {
        uint8_t b[64];
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (uint8_t)(i * 37 + 11);
        etk_error err = {0};
        assert_null(read_buf(b, sizeof b, &err));
        assert_int_equal(err.code, ETK_EFORMAT);
        assert_non_null(strstr(err.msg, "byte offset"));
    }
    /* invalid tag inside an attribute */
    {
        uint8_t b[] = {2, 0x0a, 0, 6, 0x08, 1, 0x52, 2, 0x0f, 0x00};
        expect_err(b, sizeof b, "attribute: invalid field tag", "node index 0");
    }
    free(good);
}

static void test_truncated_node_offset(void **state)
{
    (void)state;
    size_t len;
    uint8_t *good = tu_read(tu_data("stage/gpt_small_dp2_tp2_pp2/workload.0.et"), &len);
    etk_error err = {0};
    etk_trace *t = read_buf(good, len - 1, &err);
    assert_null(t);
    /* the last node's frame starts somewhere; the message must name the last node index */
    etk_trace *full = read_buf(good, len, &err);
    assert_non_null(full);
    char want[64];
    snprintf(want, sizeof want, "node index %zu", full->n_nodes - 1);
    etk_trace *bad = read_buf(good, len - 1, &err);
    assert_null(bad);
    if (!strstr(err.msg, want))
        fail_msg("'%s' not in: %s", want, err.msg);
    etk_trace_free(full);
    free(good);
}

static void test_missing_file(void **state)
{
    (void)state;
    etk_trace *t;
    etk_error err;
    assert_int_equal(etk_trace_read("/nonexistent/x.et", NULL, &t, &err), ETK_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.et"));
    assert_int_equal(etk_trace_read(tu_tmpdir(), NULL, &t, &err), ETK_EIO);
    assert_non_null(strstr(err.msg, "directory"));
}

static void test_truncated_gzip(void **state)
{
    (void)state;
    size_t len;
    uint8_t *good = tu_read(tu_data("stage/gpt_small_dp2_tp2_pp2/workload.0.et"), &len);
    char path[1100];
    snprintf(path, sizeof path, "%s/t.et.gz", tu_tmpdir());
    gzFile gz = gzopen(path, "wb");
    gzwrite(gz, good, (unsigned)len);
    gzclose(gz);
    size_t glen;
    uint8_t *g = tu_read(path, &glen);
    FILE *f = fopen(path, "wb");
    fwrite(g, 1, glen / 2, f);
    fclose(f);
    etk_trace *t;
    etk_error err;
    assert_true(etk_trace_read(path, NULL, &t, &err) < 0);
    assert_null(t);
    assert_non_null(strstr(err.msg, path));
    free(g);
    free(good);
}

static void test_builder_and_writer(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new("0.0.4");
    uint64_t deps[] = {1};
    etk_attr at[] = {etk_attr_i64("num_ops", 1000), etk_attr_u64("tensor_size", 64),
                     etk_attr_bool("is_cpu_op", false)};
    etk_node a = {.id = 1, .name = "a", .type = ETK_NODE_COMP, .attr = at, .n_attr = 3};
    etk_node b = {.id = 2, .name = "b", .type = ETK_NODE_COMP, .data_deps = deps, .n_data_deps = 1,
                  .attr = at, .n_attr = 3};
    assert_non_null(etk_trace_add(t, &a));
    assert_non_null(etk_trace_add(t, &b));
    etk_error err;
    char path[1100];
    snprintf(path, sizeof path, "%s/b.et", tu_tmpdir());
    assert_int_equal(etk_trace_write(t, path, &err), 0);
    /* no temporary file left behind */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", tu_tmpdir());
    char *o;
    tu_sh(&o, "%s", cmd);
    assert_string_equal(o, "0\n");
    free(o);
    etk_trace *r;
    assert_int_equal(etk_trace_read(path, NULL, &r, &err), 0);
    assert_int_equal(r->n_nodes, 2);
    assert_int_equal(r->n_warnings, 0);
    int64_t v;
    uint64_t u;
    bool bl = true;
    assert_true(etk_node_i64(&r->nodes[1], "num_ops", &v));
    assert_int_equal(v, 1000);
    assert_true(etk_node_u64(&r->nodes[1], "tensor_size", &u));
    assert_int_equal(u, 64);
    assert_true(etk_node_bool(&r->nodes[1], "is_cpu_op", &bl));
    assert_false(bl);
    /* bool_val=false is written explicitly: d8 01 00 */
    size_t len;
    uint8_t *bytes = tu_read(path, &len);
    int found = 0;
    for (size_t i = 0; i + 2 < len; i++)
        if (bytes[i] == 0xd8 && bytes[i + 1] == 0x01 && bytes[i + 2] == 0x00)
            found++;
    assert_int_equal(found, 2);
    free(bytes);
    etk_trace_free(r);
    etk_trace_free(t);
}

static void test_write_to_device(void **state)
{
    (void)state;
    /* writing to /dev/null must not rename a temporary file over the device node */
    etk_trace *t = etk_trace_new("1");
    etk_node a = {.id = 1, .name = "a", .type = ETK_NODE_COMP};
    assert_non_null(etk_trace_add(t, &a));
    etk_error err;
    assert_int_equal(etk_trace_write(t, "/dev/null", &err), 0);
    struct stat st;
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(etk_file_write_all("/dev/null", "x", 1, &err), 0);
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* a directory is refused with its name */
    assert_int_equal(etk_trace_write(t, tu_tmpdir(), &err), ETK_EIO);
    assert_non_null(strstr(err.msg, "is a directory"));
    etk_trace_free(t);
}

static void test_groups(void **state)
{
    (void)state;
    etk_groups *g;
    etk_error err;
    assert_int_equal(etk_groups_read(tu_data("stage/gpt_small_dp2_tp2_pp2/workload.json"), &g, &err), 0);
    assert_true(g->n_groups > 0);
    const etk_group *e = etk_groups_find(g, g->groups[0].id);
    assert_ptr_equal(e, &g->groups[0]);
    char path[1100];
    snprintf(path, sizeof path, "%s/g.json", tu_tmpdir());
    assert_int_equal(etk_groups_write(g, path, &err), 0);
    etk_groups *g2;
    assert_int_equal(etk_groups_read(path, &g2, &err), 0);
    assert_int_equal(g2->n_groups, g->n_groups);
    for (size_t i = 0; i < g->n_groups; i++) {
        assert_string_equal(g2->groups[i].id, g->groups[i].id);
        assert_int_equal(g2->groups[i].n_ranks, g->groups[i].n_ranks);
        assert_memory_equal(g2->groups[i].ranks, g->groups[i].ranks, g->groups[i].n_ranks * 4);
    }
    etk_groups_free(g2);
    etk_groups_free(g);

    const char *bad[][2] = {
        {"{\"1\": [0, 1", "line 1"},
        {"[1,2]", "expected a JSON object"},
        {"{\"1\": 3}", "group \"1\": expected an array"},
        {"{\"7\": [0, -1]}", "group \"7\", element 1: expected a rank"},
        {"{\"7\": [0, \"a\"]}", "group \"7\", element 1"},
        {"{\"2\": [3, 3]}", "rank 3 listed twice"},
        {"{\"2\": [1], \"2\": [2]}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        etk_groups *x = NULL;
        assert_int_equal(etk_groups_parse(bad[i][0], strlen(bad[i][0]), "groups.json", &x, &err),
                         ETK_EFORMAT);
        assert_null(x);
        if (!strstr(err.msg, bad[i][1]) || !strstr(err.msg, "groups.json"))
            fail_msg("case %zu: '%s' not in: %s", i, bad[i][1], err.msg);
    }
}

static void test_workload_open(void **state)
{
    (void)state;
    etk_workload *w;
    etk_error err;
    etk_read_opts o = {.quiet = true};
    char spec[1100];
    snprintf(spec, sizeof spec, "%s", tu_data("stage/gpt_small_dp2_tp2_pp2/workload.json"));
    spec[strlen(spec) - 5] = 0; /* prefix .../workload */
    assert_int_equal(etk_workload_open(spec, NULL, &o, &w, &err), 0);
    assert_int_equal(w->n_ranks, 8);
    assert_non_null(w->groups);
    assert_string_equal(w->prefix, spec);
    etk_workload_free(w);
    /* from one rank file: same prefix */
    char one[1200];
    snprintf(one, sizeof one, "%s.5.et", spec);
    assert_int_equal(etk_workload_open(one, NULL, &o, &w, &err), 0);
    assert_int_equal(w->n_ranks, 8);
    etk_workload_free(w);
    /* ASTRA-sim microbenchmark: 16 ranks, no comm-group file */
    const char *p = tu_data("astra-sim-microbenchmarks/all_to_all/16npus_1MB/all_to_all.0.et");
    assert_int_equal(etk_workload_open(p, NULL, &o, &w, &err), 0);
    assert_int_equal(w->n_ranks, 16);
    assert_null(w->groups);
    /* write it elsewhere and read it back */
    char pre[1100];
    snprintf(pre, sizeof pre, "%s/wl", tu_tmpdir());
    assert_int_equal(etk_workload_write(w, pre, &err), 0);
    etk_workload_free(w);
    assert_int_equal(etk_workload_open(pre, NULL, &o, &w, &err), 0);
    assert_int_equal(w->n_ranks, 16);
    etk_workload_free(w);
    /* a missing prefix */
    assert_int_equal(etk_workload_open("/nonexistent/prefix", NULL, &o, &w, &err), ETK_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/prefix"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_shared), cmocka_unit_test(test_known_counts),
        cmocka_unit_test(test_lenient_encodings),    cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_truncated_node_offset), cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_truncated_gzip),       cmocka_unit_test(test_builder_and_writer),
        cmocka_unit_test(test_groups), cmocka_unit_test(test_write_to_device),               cmocka_unit_test(test_workload_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
