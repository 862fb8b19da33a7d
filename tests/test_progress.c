/* test_progress.c — the progress line (etkit/progress.h): its text, and nothing at all on a
 * stream that is not a terminal. The terminal case runs under a pseudo-terminal in
 * python/tests/test_progress.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etkit/progress.h"

static void test_format(void **state)
{
    (void)state;
    char b[128];
    /* 12 of 64 in 2 s: 6 per second, 52 left: 8.7 s */
    etk_progress_format(b, sizeof b, "rank files", 12, 64, 2.0);
    assert_string_equal(b, "rank files 12/64 (18.8%), 6.0/s, 9 s left");
    /* 1,000 of 1,000,000 in 1 s: 999 s left = 16.65 min */
    etk_progress_format(b, sizeof b, "simulated nodes", 1000, 1000000, 1.0);
    assert_string_equal(b, "simulated nodes 1000/1000000 (0.1%), 1000/s, 17 min left");
    /* 10 of 1e6 in 10 s: 999,990 s = 277.8 h */
    etk_progress_format(b, sizeof b, "x", 10, 1000000, 10.0);
    assert_string_equal(b, "x 10/1000000 (0.0%), 1.0/s, 277.8 h left");
    etk_progress_format(b, sizeof b, "ranks", 5, 0, 0.0); /* total unknown, no time yet */
    assert_string_equal(b, "ranks 5");
    etk_progress_format(b, sizeof b, "done", 64, 64, 4.0); /* finished: no time left */
    assert_string_equal(b, "done 64/64 (100.0%), 16/s");
    etk_progress_format(b, 12, "rank files", 12, 64, 2.0); /* truncated, terminated */
    assert_string_equal(b, "rank files ");
}

static void test_not_a_terminal(void **state)
{
    (void)state;
    setenv("ETK_PROGRESS_DELAY_MS", "0", 1);
    FILE *f = tmpfile();
    assert_non_null(f);
    etk_progress p;
    etk_progress_begin(&p, f, false, "rank files", 4);
    for (uint64_t i = 1; i <= 4; i++)
        etk_progress_update(&p, i);
    etk_progress_add(&p, 1);
    assert_int_equal(p.done, 5); /* counted, */
    etk_progress_end(&p);
    assert_int_equal(ftell(f), 0); /* never drawn */
    fclose(f);
    unsetenv("ETK_PROGRESS_DELAY_MS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_not_a_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
