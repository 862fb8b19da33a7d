/* test_kmap.c — the one hash table of libetkit (src/util/kmap.c): the string hash against values
 * worked out from its recurrence, insert/lookup through several growths, the first value kept on
 * a repeated key, absent keys, and the zeroed (empty) map. */
#include <string.h>

#include "testutil.h"

#include "util/kmap.h"

/* etk_hash_str is FNV-1a's recurrence h = (h ^ byte) * 1099511628211 mod 2^64 from the basis
 * 1469598103934665603 (the published basis 14695981039346656037 less its last digit; kept as the
 * simulator has always used it). Values worked out by hand from that recurrence (Python big
 * integers): "" is the basis itself. */
static void test_hash_vectors(void **st)
{
    (void)st;
    assert_true(etk_hash_str("") == 1469598103934665603ULL);
    assert_true(etk_hash_str("") == 0x14650fb0739d0383ULL);
    assert_true(etk_hash_str("a") == 0x44bd8ad473cd9906ULL);
    assert_true(etk_hash_str("foobar") == 0x88fad7c0a8ff07f2ULL);
}

static void test_empty(void **st)
{
    (void)st;
    etk_kmap m;
    memset(&m, 0, sizeof m);
    assert_int_equal(etk_kmap_get(&m, 1, 2), ETK_KMAP_NONE);
    etk_kmap_free(&m);
    assert_int_equal(m.cap, 0);
    assert_int_equal(m.n, 0);
}

/* 20,000 keys (i * 2^32 + 7, i ^ 0x55): the map grows from 16 slots past 32,768 and every key
 * still gives the value put; keys never put (odd second halves moved by 1) are absent. */
static void test_many(void **st)
{
    (void)st;
    enum { N = 20000 };
    etk_kmap m;
    memset(&m, 0, sizeof m);
    for (uint32_t i = 0; i < N; i++) {
        bool oom = false;
        assert_int_equal(etk_kmap_put(&m, ((uint64_t)i << 32) + 7, i ^ 0x55, 3 * i, &oom), 3 * i);
        assert_false(oom);
    }
    assert_int_equal(m.n, N);
    assert_true(m.cap >= 2 * N); /* grown at half load */
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(etk_kmap_get(&m, ((uint64_t)i << 32) + 7, i ^ 0x55), 3 * i);
        assert_int_equal(etk_kmap_get(&m, ((uint64_t)i << 32) + 7, (i ^ 0x55) + N * 4), ETK_KMAP_NONE);
        assert_int_equal(etk_kmap_get(&m, ((uint64_t)i << 32) + 8, i ^ 0x55), ETK_KMAP_NONE);
    }
    etk_kmap_free(&m);
}

/* A repeated key keeps the first value and returns it (the simulator counts duplicate ids so). */
static void test_first_kept(void **st)
{
    (void)st;
    etk_kmap m;
    memset(&m, 0, sizeof m);
    bool oom = false;
    assert_int_equal(etk_kmap_put(&m, 42, 0, 5, &oom), 5);
    assert_int_equal(etk_kmap_put(&m, 42, 0, 9, &oom), 5);
    assert_int_equal(etk_kmap_put(&m, 42, 1, 9, &oom), 9);
    assert_false(oom);
    assert_int_equal(m.n, 2);
    assert_int_equal(etk_kmap_get(&m, 42, 0), 5);
    /* group names: (hash, length) as the key */
    const char *names[] = {"tp0", "dp0", "pp0", "ep0", ""};
    for (uint32_t i = 0; i < 5; i++)
        etk_kmap_put(&m, etk_hash_str(names[i]), strlen(names[i]), 100 + i, &oom);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(etk_kmap_get(&m, etk_hash_str(names[i]), strlen(names[i])), 100 + i);
    etk_kmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_vectors),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_first_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
