/* test_wire.c — the direct codec (src/et/wire.c) against the protobuf-c reference: every node
 * of every trace in ../shared/data, and generated nodes with every attribute kind and edge
 * values, must decode to the same model and encode to the same bytes on both paths. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etkit/et.h"
#include "et/trace_priv.h"

static void same_attr(const etk_attr *a, const etk_attr *b)
{
    assert_string_equal(a->name, b->name);
    assert_true((a->doc == NULL && b->doc == NULL) || !strcmp(a->doc, b->doc));
    assert_int_equal(a->kind, b->kind);
    if (etk_attr_kind_is_list(a->kind)) {
        assert_int_equal(a->n, b->n);
        if (a->kind == ETK_ATTR_STRING_LIST) {
            for (uint32_t i = 0; i < a->n; i++)
                assert_string_equal(a->v.sl[i], b->v.sl[i]);
        } else if (a->kind == ETK_ATTR_BYTES_LIST) {
            for (uint32_t i = 0; i < a->n; i++) {
                assert_int_equal(a->v.bytesl[i].len, b->v.bytesl[i].len);
                assert_memory_equal(a->v.bytesl[i].data, b->v.bytesl[i].data, a->v.bytesl[i].len);
            }
        } else if (a->n) {
            assert_memory_equal(a->v.i64, b->v.i64, a->n * etk__list_elem_size(a->kind));
        }
    } else if (a->kind == ETK_ATTR_STRING) {
        assert_string_equal(a->v.s, b->v.s);
    } else if (a->kind == ETK_ATTR_BYTES) {
        assert_int_equal(a->n, b->n);
        assert_memory_equal(a->v.data, b->v.data, a->n);
    } else if (a->kind == ETK_ATTR_BOOL) {
        assert_int_equal(a->v.b, b->v.b);
    } else if (a->kind == ETK_ATTR_FLOAT) {
        assert_memory_equal(&a->v.f, &b->v.f, 4); /* bitwise (NaNs too) */
    } else if (a->kind != ETK_ATTR_NONE) {
        assert_memory_equal(&a->v.u, &b->v.u, 8); /* doubles compared bitwise (NaNs too) */
    }
}

static void same_io(const etk_io *a, const etk_io *b)
{
    assert_true((a == NULL) == (b == NULL));
    if (!a)
        return;
    const char *x[3] = {a->values, a->shapes, a->types}, *y[3] = {b->values, b->shapes, b->types};
    for (int i = 0; i < 3; i++)
        assert_string_equal(x[i] ? x[i] : "", y[i] ? y[i] : "");
}

static void same_trace(const etk_trace *a, const etk_trace *b)
{
    assert_int_equal(a->n_nodes, b->n_nodes);
    assert_int_equal(a->n_warnings, b->n_warnings);
    for (size_t i = 0; i < a->n_nodes; i++) {
        const etk_node *x = &a->nodes[i], *y = &b->nodes[i];
        assert_int_equal(x->id, y->id);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->n_ctrl_deps, y->n_ctrl_deps);
        assert_int_equal(x->n_data_deps, y->n_data_deps);
        if (x->n_ctrl_deps)
            assert_memory_equal(x->ctrl_deps, y->ctrl_deps, 8 * x->n_ctrl_deps);
        if (x->n_data_deps)
            assert_memory_equal(x->data_deps, y->data_deps, 8 * x->n_data_deps);
        assert_int_equal(x->start_time_micros, y->start_time_micros);
        assert_int_equal(x->duration_micros, y->duration_micros);
        same_io(x->inputs, y->inputs);
        same_io(x->outputs, y->outputs);
        assert_int_equal(x->n_attr, y->n_attr);
        for (uint32_t k = 0; k < x->n_attr; k++)
            same_attr(&x->attr[k], &y->attr[k]);
        /* encoders agree */
        uint8_t *ref;
        size_t rlen;
        assert_int_equal(etk__node_pack_pbc(x, &ref, &rlen), 0);
        assert_int_equal(etk__node_encoded_size(x), rlen);
        uint8_t *mine = malloc(rlen + 1);
        uint8_t *end = etk__node_encode(x, mine);
        assert_int_equal((size_t)(end - mine), rlen);
        assert_memory_equal(mine, ref, rlen);
        free(mine);
        free(ref);
    }
}

static void check_file(const char *path)
{
    etk_read_opts fast = {.quiet = true}, ref = {.quiet = true, .reference_decoder = true};
    etk_trace *a = NULL, *b = NULL;
    etk_error err;
    if (etk_trace_read(path, &fast, &a, &err) != 0)
        fail_msg("%s", err.msg);
    if (etk_trace_read(path, &ref, &b, &err) != 0)
        fail_msg("%s", err.msg);
    same_trace(a, b);
    /* canonical files take the direct path for every node */
    assert_int_equal(a->n_reference_decoded, 0);
    assert_int_equal(b->n_reference_decoded, b->n_nodes);
    etk_trace_free(a);
    etk_trace_free(b);
}

static void walk(const char *dir, int *count)
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
        size_t l = strlen(p);
        if (S_ISDIR(st.st_mode))
            walk(p, count);
        else if (l > 3 && !strcmp(p + l - 3, ".et")) {
            check_file(p);
            (*count)++;
        }
    }
    closedir(d);
}

static void test_shared_files_both_paths(void **state)
{
    (void)state;
    int n = 0;
    /* the original 122 files and the 466 traces of the ASTRA-sim parity cases */
    static const char *const sets[] = {"astra-sim-microbenchmarks", "stage", "chakra",
                                       "astra-sim-cases/traces"};
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++)
        walk(tu_data(sets[s]), &n);
    assert_int_equal(n, 122 + 466);
}

/* every kind, with edge values, through write -> both decoders -> both encoders */
static void test_every_kind(void **state)
{
    (void)state;
    static const double dl[] = {0.0, -1.5, 1e300, -0.0};
    static const float fl[] = {1.25f, -3.0f};
    static const int32_t i32[] = {0, -1, INT32_MIN, INT32_MAX};
    static const int64_t i64[] = {0, -1, INT64_MIN, INT64_MAX};
    static const uint32_t u32[] = {0, 1, UINT32_MAX};
    static const uint64_t u64[] = {0, 300, UINT64_MAX};
    static const uint8_t bl[] = {1, 0, 1};
    static const char *const sl[] = {"a", "", "long string"};
    static const etk_bytes bytes[] = {{(const uint8_t *)"\0\1\2", 3}, {(const uint8_t *)"", 0}};
    etk_attr at[40];
    int k = 0;
#define SC(kind_, field, val) do { at[k] = (etk_attr){.name = #kind_, .kind = kind_}; at[k].v.field = val; k++; } while (0)
#define LS(kind_, field, arr, cnt) do { at[k] = (etk_attr){.name = #kind_, .kind = kind_, .n = cnt}; at[k].v.field = arr; k++; } while (0)
    SC(ETK_ATTR_DOUBLE, d, -2.5e-300);
    SC(ETK_ATTR_FLOAT, f, 0.5f);
    {   /* a signalling NaN keeps its bits (a float -> double -> float trip would quiet it) */
        uint32_t snan = 0x7f800001u;
        at[k] = (etk_attr){.name = "snan", .kind = ETK_ATTR_FLOAT};
        memcpy(&at[k].v.f, &snan, 4);
        k++;
    }
    SC(ETK_ATTR_INT32, i, -7);
    SC(ETK_ATTR_INT64, i, INT64_MIN);
    SC(ETK_ATTR_UINT32, u, UINT32_MAX);
    SC(ETK_ATTR_UINT64, u, UINT64_MAX);
    SC(ETK_ATTR_SINT32, i, INT32_MIN);
    SC(ETK_ATTR_SINT64, i, -1);
    SC(ETK_ATTR_FIXED32, u, 123456);
    SC(ETK_ATTR_FIXED64, u, 1ull << 60);
    SC(ETK_ATTR_SFIXED32, i, -42);
    SC(ETK_ATTR_SFIXED64, i, -(1ll << 50));
    SC(ETK_ATTR_BOOL, b, false);
    SC(ETK_ATTR_STRING, s, "");
    at[k] = (etk_attr){.name = "bytes", .kind = ETK_ATTR_BYTES};
    at[k].v.data = bytes[0].data;
    at[k].n = (uint32_t)bytes[0].len;
    k++;
    LS(ETK_ATTR_DOUBLE_LIST, dl, dl, 4);
    LS(ETK_ATTR_FLOAT_LIST, fl, fl, 2);
    LS(ETK_ATTR_INT32_LIST, i32, i32, 4);
    LS(ETK_ATTR_INT64_LIST, i64, i64, 4);
    LS(ETK_ATTR_UINT32_LIST, u32, u32, 3);
    LS(ETK_ATTR_UINT64_LIST, u64, u64, 3);
    LS(ETK_ATTR_SINT32_LIST, i32, i32, 4);
    LS(ETK_ATTR_SINT64_LIST, i64, i64, 4);
    LS(ETK_ATTR_FIXED32_LIST, u32, u32, 3);
    LS(ETK_ATTR_FIXED64_LIST, u64, u64, 3);
    LS(ETK_ATTR_SFIXED32_LIST, i32, i32, 4);
    LS(ETK_ATTR_SFIXED64_LIST, i64, i64, 4);
    LS(ETK_ATTR_BOOL_LIST, bl, bl, 3);
    LS(ETK_ATTR_STRING_LIST, sl, sl, 3);
    LS(ETK_ATTR_BYTES_LIST, bytesl, bytes, 2);
    LS(ETK_ATTR_INT64_LIST, i64, i64, 0); /* empty list: written as an empty message */
    at[k++] = (etk_attr){.name = "unset", .kind = ETK_ATTR_NONE};
    at[k] = (etk_attr){.name = "documented", .doc = "a doc string", .kind = ETK_ATTR_BOOL};
    at[k++].v.b = true;
    uint64_t deps[] = {1, 1ull << 63, 300};
    etk_io in = {.values = "v", .shapes = NULL, .types = "t"}, out = {0};
    etk_node n = {.id = UINT64_MAX, .name = "n", .type = -3, .ctrl_deps = deps, .n_ctrl_deps = 3,
                  .data_deps = deps, .n_data_deps = 1, .start_time_micros = 5,
                  .duration_micros = 1ull << 40, .inputs = &in, .outputs = &out,
                  .attr = at, .n_attr = (uint32_t)k};
    etk_node zero = {.id = 0, .name = "", .type = 0}; /* all-default but named below */
    zero.name = "z";
    char path[1100];
    snprintf(path, sizeof path, "%s/kinds.et", tu_tmpdir());
    etk_writer *w;
    etk_error err;
    assert_int_equal(etk_writer_open(path, "v", at, 3, &w, &err), 0);
    assert_int_equal(etk_writer_put(w, &n, &err), 0);
    assert_int_equal(etk_writer_put(w, &zero, &err), 0);
    assert_int_equal(etk_writer_close(w, &err), 0);
    check_file(path);
    /* and the decoded values are the ones written */
    etk_trace *t;
    etk_read_opts o = {.quiet = true};
    assert_int_equal(etk_trace_read(path, &o, &t, &err), 0);
    assert_int_equal(t->nodes[0].id, UINT64_MAX);
    assert_int_equal(t->nodes[0].type, -3);
    assert_int_equal(t->nodes[0].n_attr, k);
    for (int i = 0; i < k; i++)
        same_attr(&t->nodes[0].attr[i], &at[i]);
    same_io(t->nodes[0].inputs, &in);
    assert_non_null(t->nodes[0].outputs); /* present though empty */
    etk_trace_free(t);

    /* an invalid kind is refused by the writer */
    etk_attr badk = {.name = "x", .kind = 99};
    etk_node bad = {.id = 1, .attr = &badk, .n_attr = 1};
    assert_int_equal(etk_writer_open(path, "v", NULL, 0, &w, &err), 0);
    assert_int_equal(etk_writer_put(w, &bad, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "invalid kind 99"));
    etk_writer_abort(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_files_both_paths),
        cmocka_unit_test(test_every_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
