/* test_json.c — the JSON forms of a trace (src/et/json.c): byte-exact et -> json -> et over every
 * .et under ../shared/data, exact spelling of extreme values (64-bit integers, doubles, floats,
 * NaN payloads, bytes, non-UTF-8 strings), the Chakra feeder form against Chakra's own feeder
 * file for the same trace, and importer errors that name the JSON path and what was expected. */
#include "testutil.h"

#include <dirent.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etkit/et.h"
#include "etkit/json.h"
#include "fuzz/fuzz_common.h"

static char *to_json(const etk_trace *t, etk_json_form form, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    etk_error err = {0};
    int rc = etk_json_write(t, form, f, &err);
    fclose(f);
    if (rc)
        fail_msg("etk_json_write: %s", err.msg);
    if (len)
        *len = n;
    return buf;
}

/* ---- base64: RFC 4648 section 10 test vectors ---- */
static void test_base64_rfc4648(void **state)
{
    (void)state;
    static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char out[16];
        size_t n = strlen(plain[i]);
        assert_int_equal(etk_base64_len(n), strlen(enc[i]));
        etk_base64_encode((const uint8_t *)plain[i], n, out);
        assert_string_equal(out, enc[i]);
        uint8_t dec[16];
        assert_int_equal(etk_base64_decode(enc[i], strlen(enc[i]), dec), (long)n);
        assert_memory_equal(dec, plain[i], n);
    }
    uint8_t dec[16];
    /* not a multiple of 4; bad character; padding in the middle; non-zero bits under padding
     * ('h' = 33 = 0b100001 leaves a 1 in the four dropped bits); three '=' */
    assert_int_equal(etk_base64_decode("Zg=", 3, dec), -1);
    assert_int_equal(etk_base64_decode("Zm9*", 4, dec), -1);
    assert_int_equal(etk_base64_decode("Zg==Zg==", 8, dec), -1);
    assert_int_equal(etk_base64_decode("Zh==", 4, dec), -1);
    assert_int_equal(etk_base64_decode("Z===", 4, dec), -1);
}

/* ---- every real trace: et -> json -> et is byte-exact ---- */
static void walk(const char *dir, void (*fn)(const char *, int *), int *count)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open %s", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            walk(p, fn, count);
        else if (strlen(p) > 3 && !strcmp(p + strlen(p) - 3, ".et"))
            fn(p, count);
    }
    closedir(d);
}

static void roundtrip_one(const char *path, int *count)
{
    size_t len;
    uint8_t *orig = tu_read(path, &len);
    etk_read_opts o = {.quiet = true};
    etk_trace *t, *t2;
    etk_error err = {0};
    if (etk_trace_read(path, &o, &t, &err))
        fail_msg("%s", err.msg);
    size_t jn;
    char *js = to_json(t, ETK_JSON_LOSSLESS, &jn);
    if (etk_json_import(js, jn, path, &t2, &err))
        fail_msg("%s", err.msg);
    uint8_t *b;
    size_t bn;
    assert_int_equal(etk_trace_encode(t2, &b, &bn, &err), 0);
    if (bn != len || memcmp(b, orig, len))
        fail_msg("%s: et -> json -> et differs (%zu vs %zu bytes)", path, bn, len);
    free(b);
    free(js);
    free(orig);
    etk_trace_free(t);
    etk_trace_free(t2);
    (*count)++;
}

static void test_roundtrip_all_shared(void **state)
{
    (void)state;
    int n = 0;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", tu_data(""));
    walk(dir, roundtrip_one, &n);
    /* `find ../shared/data -name '*.et' | wc -l` gave 122 when this test was written: ASTRA-sim
     * microbenchmarks 4 collectives x (4 + 8 + 16) ranks = 112, 8 STAGE ranks and 2 Chakra
     * traces. More files may come; fewer means the walk is broken. */
    assert_true(n >= 122);
}

/* ---- exact spelling and round trip of extreme values ---- */
static void test_extreme_values(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new("1.0.0");
    static uint8_t all_bytes[256];
    for (int i = 0; i < 256; i++)
        all_bytes[i] = (uint8_t)i;
    double nan_payload;
    uint64_t nb = UINT64_C(0x7ff8000000000001);
    memcpy(&nan_payload, &nb, sizeof nb);
    static const uint64_t u64l[] = {0, UINT64_MAX, UINT64_C(9007199254740993)};
    static const int64_t i64l[] = {INT64_MIN, -9007199254740992LL, INT64_MAX};
    static const int32_t i32l[] = {INT32_MIN, -1, INT32_MAX};
    static const uint32_t u32l[] = {0, UINT32_MAX};
    static const float fl[] = {0.1f, FLT_MAX, -0.0f};
    static const double dl[] = {1.0 / 3.0, DBL_MAX, 4.9406564584124654e-324};
    /* float NaNs by their 32-bit pattern: a signalling one (0x7f8000ff, found by fuzzing: going
     * through double quiets it to 0x7fc000ff) and the default quiet one */
    float fnan[2];
    uint32_t fnan_bits[2] = {0x7f8000ffu, 0x7fc00000u};
    memcpy(fnan, fnan_bits, sizeof fnan);
    static const uint8_t bl[] = {1, 0, 1};
    static const char *sl[] = {"a", "", "\xff\xfe"};
    static const etk_bytes bytesl[] = {{all_bytes, 3}, {NULL, 0}};
    etk_attr a[] = {
        {.name = "u64max", .kind = ETK_ATTR_UINT64, .v.u = UINT64_MAX},
        {.name = "two53", .kind = ETK_ATTR_UINT64, .v.u = UINT64_C(9007199254740992)},
        {.name = "two53p1", .kind = ETK_ATTR_FIXED64, .v.u = UINT64_C(9007199254740993)},
        {.name = "i64min", .kind = ETK_ATTR_SFIXED64, .v.i = INT64_MIN},
        {.name = "neg53", .kind = ETK_ATTR_SINT64, .v.i = -9007199254740992LL},
        {.name = "d_tenth", .kind = ETK_ATTR_DOUBLE, .v.d = 0.1},
        {.name = "d_third", .kind = ETK_ATTR_DOUBLE, .v.d = 1.0 / 3.0},
        {.name = "d_negzero", .kind = ETK_ATTR_DOUBLE, .v.d = -0.0},
        {.name = "d_one", .kind = ETK_ATTR_DOUBLE, .v.d = 1.0},
        {.name = "d_max", .kind = ETK_ATTR_DOUBLE, .v.d = DBL_MAX},
        {.name = "d_inf", .kind = ETK_ATTR_DOUBLE, .v.d = -INFINITY},
        {.name = "d_nan", .kind = ETK_ATTR_DOUBLE, .v.d = NAN},
        {.name = "d_nanp", .kind = ETK_ATTR_DOUBLE, .v.d = nan_payload},
        {.name = "f_tenth", .kind = ETK_ATTR_FLOAT, .v.f = 0.1f},
        {.name = "f_max", .kind = ETK_ATTR_FLOAT, .v.f = FLT_MAX},
        {.name = "bytes", .kind = ETK_ATTR_BYTES, .n = 256, .v.data = all_bytes},
        {.name = "notutf8", .doc = "a\"b\n\x01", .kind = ETK_ATTR_STRING, .v.s = "\xff\xfe"},
        {.name = "unset", .kind = ETK_ATTR_NONE},
        {.name = "u64l", .kind = ETK_ATTR_UINT64_LIST, .n = 3, .v.u64 = u64l},
        {.name = "i64l", .kind = ETK_ATTR_INT64_LIST, .n = 3, .v.i64 = i64l},
        {.name = "i32l", .kind = ETK_ATTR_SFIXED32_LIST, .n = 3, .v.i32 = i32l},
        {.name = "u32l", .kind = ETK_ATTR_FIXED32_LIST, .n = 2, .v.u32 = u32l},
        {.name = "fl", .kind = ETK_ATTR_FLOAT_LIST, .n = 3, .v.fl = fl},
        {.name = "fl_nan", .kind = ETK_ATTR_FLOAT_LIST, .n = 2, .v.fl = fnan},
        {.name = "f_nan", .kind = ETK_ATTR_FLOAT, .v.f = NAN},
        {.name = "dl", .kind = ETK_ATTR_DOUBLE_LIST, .n = 3, .v.dl = dl},
        {.name = "bl", .kind = ETK_ATTR_BOOL_LIST, .n = 3, .v.bl = bl},
        {.name = "sl", .kind = ETK_ATTR_STRING_LIST, .n = 3, .v.sl = sl},
        {.name = "bytesl", .kind = ETK_ATTR_BYTES_LIST, .n = 2, .v.bytesl = bytesl},
        {.name = "emptyl", .kind = ETK_ATTR_INT32_LIST, .n = 0},
    };
    static const uint64_t deps[] = {UINT64_MAX, 1};
    etk_io in = {0};
    etk_node n = {.id = UINT64_MAX, .name = "x", .type = 42, .n_data_deps = 2, .data_deps = deps,
                  .start_time_micros = UINT64_C(1) << 60, .inputs = &in,
                  .n_attr = sizeof a / sizeof a[0], .attr = a};
    assert_non_null(etk_trace_add(t, &n));
    char *js = to_json(t, ETK_JSON_LOSSLESS, NULL);
    /* Expected spellings, derived by hand: 2^64-1 and 2^53+1 exceed 2^53 -> strings; 2^53 and
     * -2^53 are still exact doubles -> numbers; doubles are the shortest of %.15g..%.17g that
     * reads back (as Python's repr gives for 0.1 and 1/3); the smallest subnormal 2^-1074 reads
     * back from 15 digits; floats the shortest of %.6g..%.9g (FLT_MAX needs 8 digits:
     * 3.402823e+38 is 4.7e31 away, more than half the float spacing 2^104/2 = 1.0e31). */
    static const char *want[] = {
        ("{\"id\": \"18446744073709551615\", \"name\": \"x\", \"type\": 42, \"data_deps\": [\"18446744073709551615\", 1], "
         "\"start_time_micros\": \"1152921504606846976\", \"inputs\": {}, \"attr\": ["),
        "{\"name\": \"u64max\", \"kind\": \"uint64_val\", \"value\": \"18446744073709551615\"}",
        "{\"name\": \"two53\", \"kind\": \"uint64_val\", \"value\": 9007199254740992}",
        "{\"name\": \"two53p1\", \"kind\": \"fixed64_val\", \"value\": \"9007199254740993\"}",
        "{\"name\": \"i64min\", \"kind\": \"sfixed64_val\", \"value\": \"-9223372036854775808\"}",
        "{\"name\": \"neg53\", \"kind\": \"sint64_val\", \"value\": -9007199254740992}",
        "\"value\": 0.1}", "\"value\": 0.3333333333333333}", "\"value\": -0.0}", "\"value\": 1.0}",
        "\"value\": 1.7976931348623157e+308}", "\"value\": \"-Infinity\"}", "\"value\": \"NaN\"}",
        "\"value\": \"NaN:0x7ff8000000000001\"}",
        "{\"name\": \"f_tenth\", \"kind\": \"float_val\", \"value\": 0.1}",
        "{\"name\": \"f_max\", \"kind\": \"float_val\", \"value\": 3.4028235e+38}",
        "\"value\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==\"}",
        "{\"name\": \"notutf8\", \"doc\": \"a\\\"b\\n\\u0001\", \"kind\": \"string_val\", \"value\": {\"base64\": \"//4=\"}}",
        "{\"name\": \"unset\", \"kind\": \"none\"}",
        "\"value\": [0, \"18446744073709551615\", \"9007199254740993\"]}",
        "\"value\": [\"-9223372036854775808\", -9007199254740992, \"9223372036854775807\"]}",
        "\"value\": [-2147483648, -1, 2147483647]}",
        "\"value\": [0, 4294967295]}",
        "\"value\": [0.1, 3.4028235e+38, -0.0]}",
        "{\"name\": \"fl_nan\", \"kind\": \"float_list\", \"value\": [\"NaN:0x7f8000ff\", \"NaN\"]}",
        "{\"name\": \"f_nan\", \"kind\": \"float_val\", \"value\": \"NaN\"}",
        "\"value\": [0.3333333333333333, 1.7976931348623157e+308, 4.94065645841247e-324]}",
        "\"value\": [true, false, true]}",
        "\"value\": [\"a\", \"\", {\"base64\": \"//4=\"}]}",
        "\"value\": [\"AAEC\", \"\"]}",
        "{\"name\": \"emptyl\", \"kind\": \"int32_list\", \"value\": []}",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(js, want[i]))
            fail_msg("JSON lacks %s\nJSON:\n%s", want[i], js);

    etk_trace *t2;
    etk_error err = {0};
    if (etk_json_import(js, strlen(js), "extreme.json", &t2, &err))
        fail_msg("%s", err.msg);
    char why[256];
    if (fc_trace_diff(t, t2, why, sizeof why))
        fail_msg("import(export(t)) != t: %s", why);
    assert_non_null(t2->nodes[0].inputs); /* presence of an empty IOInfo kept */
    assert_null(t2->nodes[0].outputs);
    uint8_t *b1, *b2;
    size_t n1, n2;
    assert_int_equal(etk_trace_encode(t, &b1, &n1, &err), 0);
    assert_int_equal(etk_trace_encode(t2, &b2, &n2, &err), 0);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* and through the wire: read(encode(import)) exports to the same JSON text */
    etk_trace *t3;
    etk_read_opts o = {.quiet = true};
    assert_int_equal(etk_trace_read_mem(b2, n2, "extreme.et", &o, &t3, &err), 0);
    char *js3 = to_json(t3, ETK_JSON_LOSSLESS, NULL);
    assert_string_equal(js3, js);
    free(js3);
    free(b1);
    free(b2);
    free(js);
    etk_trace_free(t);
    etk_trace_free(t2);
    etk_trace_free(t3);
}

/* ---- the feeder form against Chakra's own feeder file for the same trace ---- */
static void test_feeder_matches_chakra(void **state)
{
    (void)state;
    etk_read_opts o = {.quiet = true};
    etk_trace *t;
    etk_error err = {0};
    assert_int_equal(etk_trace_read(tu_data("chakra/converted_cnn_ddp.0.et"), &o, &t, &err), 0);
    size_t n;
    char *js = to_json(t, ETK_JSON_FEEDER, &n);
    json_error_t je;
    json_t *ours = json_loadb(js, n, 0, &je);
    if (!ours)
        fail_msg("feeder output is not JSON: line %d: %s", je.line, je.text);
    json_t *ref = json_load_file(tu_data("chakra/json_feeder_cnn.0.json"), 0, &je);
    assert_non_null(ref);
    json_t *a = json_object_get(ours, "workload_graph"), *b = json_object_get(ref, "workload_graph");
    /* 3664 nodes: the count the spec gives for converted_cnn_ddp.0.et, and the length of
     * Chakra's json_feeder_cnn.0.json, which was made from the same trace. */
    assert_int_equal(json_array_size(a), 3664);
    assert_int_equal(json_array_size(b), 3664);
    for (size_t i = 0; i < 3664; i++) {
        json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        const char *key;
        json_t *yv;
        json_object_foreach(y, key, yv) {
            json_t *xv = json_object_get(x, key);
            if (!xv)
                fail_msg("node %zu lacks %s", i, key);
            if (!strcmp(key, "Name")) {
                /* Chakra's file had "id" replaced by "Id" everywhere ("voId"): compare without case */
                if (strcasecmp(json_string_value(xv), json_string_value(yv)))
                    fail_msg("node %zu: Name \"%s\" vs Chakra's \"%s\"", i, json_string_value(xv), json_string_value(yv));
                continue;
            }
            if (!json_equal(xv, yv))
                fail_msg("node %zu: %s differs from Chakra's feeder file", i, key);
            /* same JSON types (NodeType a number, is_cpu_op a boolean, runtime an integer) */
            assert_int_equal(json_typeof(xv), json_typeof(yv));
        }
    }
    /* Hand-checked node (json_feeder_cnn.0.json, Id 435, the NCCL broadcast kernel): a GPU
     * collective of 28 us that waits for nodes 432, 216, 217. */
    json_t *k = NULL;
    for (size_t i = 0; i < 3664; i++)
        if (json_integer_value(json_object_get(json_array_get(a, i), "Id")) == 435)
            k = json_array_get(a, i);
    assert_non_null(k);
    assert_int_equal(json_integer_value(json_object_get(k, "NodeType")), 7);
    assert_int_equal(json_integer_value(json_object_get(k, "runtime")), 28);
    assert_true(json_is_false(json_object_get(k, "is_cpu_op")));
    json_t *dd = json_object_get(k, "data_deps");
    assert_int_equal(json_array_size(dd), 3);
    assert_int_equal(json_integer_value(json_array_get(dd, 0)), 432);
    assert_int_equal(json_integer_value(json_array_get(dd, 1)), 216);
    assert_int_equal(json_integer_value(json_array_get(dd, 2)), 217);
    /* communication nodes also carry the comm fields Chakra's feeder reads for them (absent
     * from Chakra's older file): node 435 has comm_type int64_val 5 = BROADCAST (its kernel name
     * says Broadcast) and comm_size int64_val 212480 bytes in the .et; no comm_src/dst (0). */
    assert_int_equal(json_integer_value(json_object_get(k, "comm_type")), ETK_COLL_BROADCAST);
    assert_int_equal(json_integer_value(json_object_get(k, "comm_size")), 212480);
    assert_int_equal(json_integer_value(json_object_get(k, "comm_dst")), 0);
    json_decref(ours);
    json_decref(ref);
    free(js);
    etk_trace_free(t);
}

/* Communication fields from attributes (synthetic send), defaults for absent ones. */
static void test_feeder_comm_fields(void **state)
{
    (void)state;
    etk_trace *t = etk_trace_new(NULL);
    etk_attr a[] = {etk_attr_i64("comm_size", 1 << 20), etk_attr_i32("comm_dst", 3), etk_attr_i32("comm_tag", 7),
                    etk_attr_bool("is_cpu_op", false)};
    etk_node s = {.id = 5, .name = "send", .type = ETK_NODE_SEND, .duration_micros = 12, .n_attr = 4, .attr = a};
    etk_node c = {.id = 6, .name = "gemm\xff", .type = ETK_NODE_COMP, .n_data_deps = 1, .data_deps = &s.id};
    assert_non_null(etk_trace_add(t, &s));
    assert_non_null(etk_trace_add(t, &c));
    char *js = to_json(t, ETK_JSON_FEEDER, NULL);
    /* is_cpu_op defaults to true when absent (Chakra's ETFeederNode default); COMP nodes get no
     * comm fields; a byte that is not UTF-8 becomes U+FFFD (Name must stay a JSON string) */
    assert_string_equal(js,
                        "{\"workload_graph\": [\n"
                        "{\"Id\": 5, \"Name\": \"send\", \"NodeType\": 5, \"is_cpu_op\": false, \"runtime\": 12, "
                        "\"data_deps\": [], \"tensor_size\": 0, \"comm_type\": 0, \"comm_priority\": 0, "
                        "\"comm_size\": 1048576, \"comm_src\": 0, \"comm_dst\": 3, \"comm_tag\": 7},\n"
                        "{\"Id\": 6, \"Name\": \"gemm\\ufffd\", \"NodeType\": 4, \"is_cpu_op\": true, \"runtime\": 0, "
                        "\"data_deps\": [5]}\n"
                        "]}\n");
    free(js);
    etk_trace_free(t);
}

/* ---- importer errors: file, JSON path, what was expected ---- */
#define HEAD "{\"format\": \"etkit-chakra-json\", \"version\": 1, \"nodes\": ["
static const struct {
    const char *json;
    int code;
    const char *msg; /* expected substring(s), separated by '|' */
} bad_docs[] = {
    {"{\"format\": ", ETK_EFORMAT, "bad.json: line 1, column 11: malformed JSON"},
    {"{\"format\": \"etkit-chakra-json\",\n\"version\": 1,\n\"nodes\": [}", ETK_EFORMAT, "bad.json: line 3, column"},
    {"[]", ETK_EFORMAT, "bad.json: (top level): expected an object"},
    {"{\"workload_graph\": []}", ETK_EUNSUPPORTED,
     "bad.json: (top level): this is Chakra's JSON-feeder form (\"workload_graph\")"},
    {"{\"format\": \"x\", \"version\": 1, \"nodes\": []}", ETK_EFORMAT, "bad.json: format: expected \"etkit-chakra-json\""},
    {"{\"format\": \"etkit-chakra-json\", \"version\": 2, \"nodes\": []}", ETK_EUNSUPPORTED,
     "bad.json: version: this etkit reads version 1, the file is version 2"},
    {"{\"format\": \"etkit-chakra-json\", \"version\": 1}", ETK_EFORMAT,
     "bad.json: nodes: expected an array of node objects, got nothing (the key is missing)"},
    {"{\"format\": \"etkit-chakra-json\", \"version\": 1, \"nodes\": [], \"extra\": 1}", ETK_EFORMAT,
     "(top level): unknown key \"extra\""},
    {HEAD "{\"name\": \"a\", \"type\": \"COMP_NODE\"}]}", ETK_EFORMAT,
     "bad.json: nodes[0].id: expected an integer in [0, 18446744073709551615]|got nothing (the key is missing)"},
    {HEAD "{\"id\": -1, \"type\": 4}]}", ETK_EFORMAT, "nodes[0].id: expected an integer|got the integer -1"},
    {HEAD "{\"id\": \"12x\", \"type\": 4}]}", ETK_EFORMAT, "nodes[0].id: |got the string \"12x\""},
    {HEAD "{\"id\": \"18446744073709551616\", \"type\": 4}]}", ETK_EFORMAT, "nodes[0].id: expected an integer"},
    {HEAD "{\"id\": 1.5, \"type\": 4}]}", ETK_EFORMAT, "nodes[0].id: expected an integer|got a real number"},
    {HEAD "{\"id\": 1}]}", ETK_EFORMAT, "nodes[0].type: expected a node type name such as \"COMP_NODE\" or an integer"},
    {HEAD "{\"id\": 1, \"type\": \"GEMM_NODE\"}]}", ETK_EFORMAT,
     "nodes[0].type: expected a node type (INVALID_NODE|got the string \"GEMM_NODE\""},
    {HEAD "{\"id\": 1, \"type\": 4, \"dat_deps\": [1]}]}", ETK_EFORMAT,
     "bad.json: nodes[0]: unknown key \"dat_deps\" (expected id, name, type"},
    {HEAD "{\"id\": 1, \"type\": 4, \"data_deps\": [1, \"two\"]}]}", ETK_EFORMAT, "nodes[0].data_deps[1]: expected an integer"},
    {HEAD "{\"id\": 1, \"type\": 4, \"inputs\": \"x\"}]}", ETK_EFORMAT, "nodes[0].inputs: expected an object"},
    {HEAD "{\"id\": 1, \"type\": 4, \"inputs\": {\"values\": 3}}]}", ETK_EFORMAT,
     "nodes[0].inputs.values: expected a string, {\"base64\": \"...\"} or null"},
    {HEAD "{\"id\": 1, \"type\": 4}, {\"id\": 2, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"bool_val\", "
          "\"value\": true}, {\"name\": \"b\", \"kind\": \"int65_val\", \"value\": 1}]}]}",
     ETK_EFORMAT, "bad.json: nodes[1].attr[1].kind: expected an attribute kind name|got the string \"int65_val\""},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"value\": 1}]}]}", ETK_EFORMAT,
     "nodes[0].attr[0].kind: expected an attribute kind name such as \"int64_val\"|got nothing"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"int64_val\"}]}]}", ETK_EFORMAT,
     "nodes[0].attr[0].value: expected the attribute's value, got nothing"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"kind\": \"int64_val\", \"value\": 1}]}]}", ETK_EFORMAT,
     "nodes[0].attr[0].name: expected a string"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"int32_val\", \"value\": 2147483648}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected an integer in [-2147483648, 2147483647]"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"uint32_val\", \"value\": -1}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected an integer in [0, 4294967295]"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"bool_val\", \"value\": 1}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected true or false, got the integer 1"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"int64_list\", \"value\": 1}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected an array (the kind is a list)"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"int64_list\", \"value\": [1, \"x\"]}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value[1]: expected an integer"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"bytes_val\", \"value\": \"abc\"}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected canonical base64"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"double_val\", \"value\": \"NaN:0x0000000000000000\"}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected a number or one of \"NaN\""},
    /* issue #18: a finite number past the float range is an error, not Infinity */
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"float_val\", \"value\": 1e300}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value: expected a number that fits a 32-bit float|got 1e+300"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"float_list\", \"value\": [1, -4e38]}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value[1]: expected a number that fits a 32-bit float|got -4e+38"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"string_val\", \"value\": {\"base64\": \"YQBi\"}}]}]}",
     ETK_EFORMAT, "nodes[0].attr[0].value.base64: the string contains a NUL byte"},
    {HEAD "{\"id\": 1, \"type\": 4, \"attr\": [{\"name\": \"a\", \"kind\": \"none\", \"value\": 1}]}]}", ETK_EFORMAT,
     "nodes[0].attr[0].value: kind \"none\" takes no value"},
    {HEAD "{\"id\": 1, \"type\": 4, \"id\": 2}]}", ETK_EFORMAT, "malformed JSON: duplicate object key"},
    {"{\"format\": \"etkit-chakra-json\", \"version\": 1, \"metadata\": {\"attr\": [{\"kind\": \"int64_val\", "
     "\"value\": 1}]}, \"nodes\": []}",
     ETK_EFORMAT, "bad.json: metadata.attr[0].name: expected a string"},
};

static void test_import_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_docs / sizeof bad_docs[0]; i++) {
        etk_trace *t = (etk_trace *)1;
        etk_error err = {0};
        int rc = etk_json_import(bad_docs[i].json, strlen(bad_docs[i].json), "bad.json", &t, &err);
        if (rc != bad_docs[i].code)
            fail_msg("case %zu: rc %d (want %d): %s\n  for %s", i, rc, bad_docs[i].code, err.msg, bad_docs[i].json);
        assert_null(t);
        char want[512];
        snprintf(want, sizeof want, "%s", bad_docs[i].msg);
        for (char *p = strtok(want, "|"); p; p = strtok(NULL, "|"))
            if (!strstr(err.msg, p))
                fail_msg("case %zu: message lacks '%s':\n  %s", i, p, err.msg);
    }
}

/* A file that does not exist: the message names it. */
static void test_import_missing_file(void **state)
{
    (void)state;
    etk_trace *t;
    etk_error err = {0};
    assert_true(etk_json_import_file("/nonexistent/x.json", &t, &err) < 0);
    assert_null(t);
    assert_non_null(strstr(err.msg, "/nonexistent/x.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64_rfc4648),      cmocka_unit_test(test_roundtrip_all_shared),
        cmocka_unit_test(test_extreme_values),      cmocka_unit_test(test_feeder_matches_chakra),
        cmocka_unit_test(test_feeder_comm_fields),  cmocka_unit_test(test_import_errors),
        cmocka_unit_test(test_import_missing_file),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
