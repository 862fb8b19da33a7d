/* test_fuzz_regressions.c — replays every file under tests/fuzz/corpus-fuzz_<target>/ through
 * the same entry point as the libFuzzer target (the fuzz sources are included here with their
 * entry renamed), so inputs that once crashed, leaked or broke a round-trip property run in
 * `make check` under ASan+UBSan. A property violation aborts the test process. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define FUZZ_ENTRY fuzz_trace_read_entry
#include "fuzz/fuzz_trace_read.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_json_import_entry
#include "fuzz/fuzz_json_import.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_groups_entry
#include "fuzz/fuzz_groups.c"
#undef FUZZ_ENTRY

/* Feed every regular file of the corpus folder to fn; returns how many were fed. */
static int replay(const char *target, int (*fn)(const uint8_t *, size_t))
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus-%s", ETK_SOURCE_DIR, target);
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("missing regression corpus folder %s", dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        uint8_t *b = tu_read(path, &len);
        fprintf(stderr, "replay %s\n", path);
        fn(b, len);
        free(b);
        n++;
    }
    closedir(d);
    return n;
}

/* Each folder holds at least the inputs committed with the target; an empty folder means the
 * corpus was lost, which should fail rather than pass vacuously. */
static void test_trace_read_corpus(void **state)
{
    (void)state;
    assert_true(replay("fuzz_trace_read", fuzz_trace_read_entry) >= 3);
}

static void test_json_import_corpus(void **state)
{
    (void)state;
    assert_true(replay("fuzz_json_import", fuzz_json_import_entry) >= 3);
}

static void test_groups_corpus(void **state)
{
    (void)state;
    assert_true(replay("fuzz_groups", fuzz_groups_entry) >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_read_corpus),
        cmocka_unit_test(test_json_import_corpus),
        cmocka_unit_test(test_groups_corpus),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
