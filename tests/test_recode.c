/* test_recode.c — `etkit recode` end to end: a hand-encoded non-canonical trace (fields out of
 * order, unpacked repeated deps, an explicit zero scalar, unknown fields of three wire types,
 * attribute value before its name), plain and gzip-compressed, comes out as the exact canonical
 * bytes derived by hand below; bad input and bad flags exit non-zero with a message naming what
 * is wrong; and every .et under ../shared/data recodes (read + canonical encode, what the
 * command does) to its own bytes. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "etkit/et.h"

#define ETKIT ETK_BINARY_DIR "/etkit"

/* GlobalMetadata {version: "0.0.4"}: field 1 string -> 0a 05 "0.0.4"; 7 bytes, frame 07. */
#define META 0x07, 0x0a, 0x05, '0', '.', '0', '.', '4'

static const uint8_t noncanon[] = {
    META,
    /* node 1, 45 bytes (0x2d), fields in the order 3, 2, 5, 5, 7, 99, 1, 10, 10: */
    0x2d,
    0x18, 0x04,                   /* type = COMP_NODE (field 3, varint) */
    0x12, 0x01, 'n',              /* name = "n" (field 2) */
    0x28, 0x02, 0x28, 0x03,       /* data_deps 2, 3 unpacked (field 5, varint each) */
    0x38, 0x00,                   /* duration_micros = 0 written explicitly (field 7) */
    0x98, 0x06, 0x07,             /* unknown field 99 (tag 99<<3 = 792 = 98 06), varint 7 */
    0x08, 0x01,                   /* id = 1 (field 1) */
    0x52, 0x0e,                   /* attr (field 10), 14 bytes: value before name */
    0xd8, 0x01, 0x00,             /*   bool_val (27<<3 = 216 = d8 01) = false */
    0x0a, 0x09, 'i', 's', '_', 'c', 'p', 'u', '_', 'o', 'p',
    0x52, 0x0b,                   /* attr, 11 bytes */
    0x48, 0x64,                   /*   int64_val (9<<3 = 0x48) = 100 */
    0x0a, 0x07, 'n', 'u', 'm', '_', 'o', 'p', 's',
    /* node 2, 17 bytes: unknown fixed64 field 20 (tag 20<<3|1 = 161 = a1 01), unknown
     * length-delimited field 21 (tag 21<<3|2 = 170 = aa 01), then id = 2 */
    0x11,
    0xa1, 0x01, 1, 2, 3, 4, 5, 6, 7, 8,
    0xaa, 0x01, 0x02, 0xab, 0xcd,
    0x08, 0x02,
};

/* The canonical encoding: fields ascending, data_deps packed (field 5 wire type 2: 2a, 2 bytes),
 * zero duration omitted, unknown fields dropped, attribute name before value, and the oneof
 * bool_val=false kept (d8 01 00) as the spec requires. */
static const uint8_t canon[] = {
    META,
    0x28, /* 40 bytes */
    0x08, 0x01,
    0x12, 0x01, 'n',
    0x18, 0x04,
    0x2a, 0x02, 0x02, 0x03,
    0x52, 0x0e, 0x0a, 0x09, 'i', 's', '_', 'c', 'p', 'u', '_', 'o', 'p', 0xd8, 0x01, 0x00,
    0x52, 0x0b, 0x0a, 0x07, 'n', 'u', 'm', '_', 'o', 'p', 's', 0x48, 0x64,
    0x02, 0x08, 0x02,
};

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void check_recode(const char *in, const char *summary)
{
    char out[1024];
    snprintf(out, sizeof out, "%s/out.et", tu_tmpdir());
    char *msg;
    int rc = tu_sh(&msg, "%s recode %s -o %s", ETKIT, in, out);
    if (rc != 0)
        fail_msg("recode failed (%d): %s", rc, msg);
    if (!strstr(msg, summary))
        fail_msg("summary lacks '%s': %s", summary, msg);
    free(msg);
    size_t len;
    uint8_t *b = tu_read(out, &len);
    assert_int_equal(len, sizeof canon);
    assert_memory_equal(b, canon, sizeof canon);
    free(b);
}

static void test_noncanonical_plain(void **state)
{
    (void)state;
    /* sanity of the hand encoding: the frame lengths add up */
    assert_int_equal(sizeof noncanon, 8 + 1 + 45 + 1 + 17);
    assert_int_equal(sizeof canon, 8 + 1 + 40 + 1 + 2);
    char in[1024];
    snprintf(in, sizeof in, "%s/noncanon.et", tu_tmpdir());
    write_file(in, noncanon, sizeof noncanon);
    check_recode(in, "noncanon.et: 2 nodes, 72 bytes -> ");
    check_recode(in, "out.et: 52 bytes");
}

static void test_noncanonical_gzip(void **state)
{
    (void)state;
    char in[1024];
    snprintf(in, sizeof in, "%s/noncanon.et.gz", tu_tmpdir());
    gzFile g = gzopen(in, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, noncanon, sizeof noncanon), (int)sizeof noncanon);
    gzclose(g);
    check_recode(in, "2 nodes, 72 bytes (after gunzip) -> ");
}

/* Truncated input: node 1 cut in the middle. The reader's message names the file; exit 2. */
static void test_truncated(void **state)
{
    (void)state;
    char in[1024];
    snprintf(in, sizeof in, "%s/trunc.et", tu_tmpdir());
    write_file(in, noncanon, 20);
    char *msg;
    int rc = tu_sh(&msg, "%s recode %s -o %s/never.et", ETKIT, in, tu_tmpdir());
    assert_int_equal(rc, 2);
    if (!strstr(msg, "etkit recode: error: ") || !strstr(msg, "trunc.et"))
        fail_msg("unexpected message: %s", msg);
    free(msg);
    char never[1024];
    snprintf(never, sizeof never, "%s/never.et", tu_tmpdir());
    FILE *f = fopen(never, "rb");
    assert_null(f); /* nothing written on failure */
}

static void test_flags(void **state)
{
    (void)state;
    char *msg;
    assert_int_equal(tu_sh(&msg, "%s recode --help", ETKIT), 0);
    assert_non_null(strstr(msg, "example"));
    free(msg);
    assert_int_equal(tu_sh(&msg, "%s recode --bogus x.et -o y.et", ETKIT), 2);
    assert_non_null(strstr(msg, "unknown option '--bogus'"));
    free(msg);
    assert_int_equal(tu_sh(&msg, "%s recode %s", ETKIT, tu_data("chakra/converted_cnn_ddp.0.et")), 2);
    assert_non_null(strstr(msg, "missing -o OUT.et"));
    free(msg);
    assert_int_equal(tu_sh(&msg, "%s recode -o y.et", ETKIT), 2);
    assert_non_null(strstr(msg, "missing input file"));
    free(msg);
    assert_int_equal(tu_sh(&msg, "%s recode /nonexistent/a.et -o %s/y.et", ETKIT, tu_tmpdir()), 2);
    assert_non_null(strstr(msg, "/nonexistent/a.et"));
    free(msg);
}

/* Recode in-process (etk_trace_read + etk_trace_encode, the two calls of cmd_recode.c) every
 * .et below dir; each must come back byte-identical (all shared traces are canonical). */
static int recode_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            n += recode_tree(p);
            continue;
        }
        size_t l = strlen(p);
        if (l < 3 || strcmp(p + l - 3, ".et"))
            continue;
        etk_read_opts o = {.quiet = true};
        etk_trace *t;
        etk_error err = {0};
        if (etk_trace_read(p, &o, &t, &err))
            fail_msg("%s", err.msg);
        uint8_t *b;
        size_t bn, fn;
        assert_int_equal(etk_trace_encode(t, &b, &bn, &err), 0);
        uint8_t *f = tu_read(p, &fn);
        if (bn != fn || memcmp(b, f, fn))
            fail_msg("%s: recode changed the bytes (%zu vs %zu)", p, bn, fn);
        free(b);
        free(f);
        etk_trace_free(t);
        n++;
    }
    closedir(d);
    return n;
}

static void test_recode_all_shared(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", tu_data(""));
    /* 122 = `find ../shared/data -name '*.et' | wc -l` when written; fewer means a broken walk */
    assert_true(recode_tree(dir) >= 122);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noncanonical_plain),
        cmocka_unit_test(test_noncanonical_gzip),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_recode_all_shared),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
