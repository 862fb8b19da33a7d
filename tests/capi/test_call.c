/* test_call.c — etk_call (etkit/call.h, libetkit-cli.so): a command's output, error message and
 * exit status captured in memory, equal to what the etkit command prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etkit/call.h"

static void test_models_json(void **state)
{
    (void)state;
    const char *argv[] = {"etkit", "models", "--json", NULL};
    char *out = NULL, *err = NULL;
    size_t olen = 0, elen = 0;
    FILE *so = stdout, *se = stderr;
    int rc = etk_call(3, argv, &out, &olen, &err, &elen);
    assert_int_equal(rc, 0);
    assert_ptr_equal(stdout, so); /* the streams are back */
    assert_ptr_equal(stderr, se);
    assert_non_null(out);
    assert_int_equal(strlen(out), olen);
    assert_true(olen > 0 && out[0] == '{');
    assert_non_null(strstr(out, "\"name\": \"llama3-8b\""));
    assert_int_equal(elen, 0);
    assert_string_equal(err, "");
    etk_call_free(out);
    etk_call_free(err);
}

static void test_usage_error(void **state)
{
    (void)state;
    const char *argv[] = {"etkit", "models", "--bogus", NULL};
    char *out = NULL, *err = NULL;
    for (int i = 0; i < 2; i++) { /* twice: getopt starts afresh */
        int rc = etk_call(3, argv, &out, NULL, &err, NULL);
        assert_int_equal(rc, 2);
        assert_string_equal(out, "");
        assert_string_equal(err, "etkit models: unknown option '--bogus'\n(see 'etkit models --help')\n");
        etk_call_free(out);
        etk_call_free(err);
    }
    const char *bad[] = {"etkit", "nosuch", NULL};
    assert_int_equal(etk_call(2, bad, NULL, NULL, &err, NULL), 2); /* out discarded */
    assert_non_null(strstr(err, "etkit: unknown command 'nosuch'"));
    etk_call_free(err);
}

static void test_run_and_version(void **state)
{
    (void)state;
    const char *argv[] = {"etkit", "run", "--model", "llama2-7b", "--layers", "2", "--dp", "2",
                          "--seq", "1024", "--global-batch", "4", "--json", NULL};
    char *out = NULL;
    assert_int_equal(etk_call(13, argv, &out, NULL, NULL, NULL), 0);
    assert_non_null(strstr(out, "\"n_ranks\": 2"));
    assert_non_null(strstr(out, "\"command_line\": \"etkit run --model llama2-7b"));
    etk_call_free(out);
    const char *v[] = {"etkit", "--version", NULL};
    assert_int_equal(etk_call(2, v, &out, NULL, NULL, NULL), 0);
    char want[512];
    snprintf(want, sizeof want, "etkit %s\n", etk_call_version());
    assert_string_equal(out, want);
    assert_memory_equal(etk_call_version(), "0.1.0 (", 7);
    etk_call_free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_json),
        cmocka_unit_test(test_usage_error),
        cmocka_unit_test(test_run_and_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
