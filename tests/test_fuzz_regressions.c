/* test_fuzz_regressions.c — replays every file under tests/fuzz/corpus-<target>/ through the
 * same entry point as the libFuzzer target (every fuzz source is included here with its entry
 * renamed), so inputs that once crashed, leaked or broke a property run in `make check` under
 * ASan+UBSan. A property violation aborts the test process. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Targets that name their entry FUZZ_ENTRY are renamed through it; the others define
 * LLVMFuzzerTestOneInput directly, which a macro renames the same way. */
#define FUZZ_ENTRY fuzz_trace_read_entry
#include "fuzz/fuzz_trace_read.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_json_import_entry
#include "fuzz/fuzz_json_import.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_groups_entry
#include "fuzz/fuzz_groups.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_node_codec_entry
#include "fuzz/fuzz_node_codec.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_convert_entry
#include "fuzz/fuzz_convert.c"
#undef FUZZ_ENTRY
#define LLVMFuzzerTestOneInput fuzz_validate_entry
#include "fuzz/fuzz_validate.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_cluster_entry
#include "fuzz/fuzz_cluster.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_entry
#include "fuzz/fuzz_model.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_sim_entry
#include "fuzz/fuzz_sim.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_astra_entry
#include "fuzz/fuzz_astra.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_calib_entry
#include "fuzz/fuzz_calib.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_live_kernels_entry
#include "fuzz/fuzz_live_kernels.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_synth_model_entry
#include "fuzz/fuzz_synth_model.c"
#undef LLVMFuzzerTestOneInput

typedef int (*fuzz_fn)(const uint8_t *, size_t);
static const struct {
    const char *name;
    fuzz_fn fn;
    int min_files; /* regression inputs committed with the target (0: folder optional) */
} targets[] = {
    {"fuzz_trace_read", fuzz_trace_read_entry, 3}, {"fuzz_json_import", fuzz_json_import_entry, 3},
    {"fuzz_groups", fuzz_groups_entry, 3},         {"fuzz_node_codec", fuzz_node_codec_entry, 2},
    {"fuzz_convert", fuzz_convert_entry, 1},       {"fuzz_validate", fuzz_validate_entry, 0},
    {"fuzz_cluster", fuzz_cluster_entry, 1},       {"fuzz_model", fuzz_model_entry, 0},
    {"fuzz_sim", fuzz_sim_entry, 1},               {"fuzz_astra", fuzz_astra_entry, 0},
    {"fuzz_calib", fuzz_calib_entry, 1},           {"fuzz_live_kernels", fuzz_live_kernels_entry, 0},
    {"fuzz_synth_model", fuzz_synth_model_entry, 0},
};
#define N_TARGETS (sizeof targets / sizeof targets[0])

/* Feed every regular file of the corpus folder to fn; returns how many were fed, -1 if the
 * folder does not exist. */
static int replay_dir(const char *dir, fuzz_fn fn);

static int replay(const char *target, fuzz_fn fn)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus-%s", ETK_SOURCE_DIR, target);
    return replay_dir(dir, fn);
}

static int replay_dir(const char *dir, fuzz_fn fn)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        uint8_t *t = tu_read(path, &len);
        /* an exact-size copy, as libFuzzer passes it (tu_read adds a NUL): a read one byte past
         * the input is an ASan report here too */
        uint8_t *b = malloc(len ? len : 1);
        assert_non_null(b);
        memcpy(b, t, len);
        free(t);
        fprintf(stderr, "replay %s\n", path);
        fn(b, len);
        free(b);
        n++;
    }
    closedir(d);
    return n;
}

/* Every target's regression folder. Ours hold at least the inputs committed with them; an
 * empty or missing folder there means the corpus was lost, which fails rather than passing
 * vacuously. */
static void test_all_corpora(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_TARGETS; i++) {
        int n = replay(targets[i].name, targets[i].fn);
        if (n < 0 && targets[i].min_files == 0)
            continue; /* no regression inputs yet */
        if (n < targets[i].min_files)
            fail_msg("tests/fuzz/corpus-%s: %d inputs, expected at least %d", targets[i].name, n,
                     targets[i].min_files);
    }
}

/* The fuzzing corpus kept in the repository (tests/fuzz/corpus/<target>/, grown by
 * `FUZZ_MERGE=1 make fuzz`) replays cleanly too: every input there passed the fuzz build. */
static void test_repository_corpus(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_TARGETS; i++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", ETK_SOURCE_DIR, targets[i].name);
        replay_dir(dir, targets[i].fn);
    }
}

/* The index in targets[] of the target named by the first len bytes of name, or -1. */
static long target_index(const char *name, size_t len)
{
    for (size_t i = 0; i < N_TARGETS; i++)
        if (strlen(targets[i].name) == len && !strncmp(name, targets[i].name, len))
            return (long)i;
    return -1;
}

/* One walk of tests/fuzz checks both ways that the list above is complete:
 *  - every regression folder tests/fuzz/corpus-<target>/ belongs to a target replayed above, so a
 *    new target's regression inputs cannot go unreplayed;
 *  - every target source tests/fuzz/fuzz_*.c is replayed here, so a new target cannot be left out
 *    of the ASan replay of its corpus. */
static void test_targets_listed(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz", ETK_SOURCE_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    size_t sources = 0;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        size_t l = strlen(n);
        if (!strncmp(n, "corpus-", 7)) {
            if (target_index(n + 7, l - 7) < 0)
                fail_msg("tests/fuzz/%s has no entry in tests/test_fuzz_regressions.c: include the target "
                         "there so its regression inputs run under ASan",
                         n);
        } else if (!strncmp(n, "fuzz_", 5) && l > 2 && !strcmp(n + l - 2, ".c")) {
            if (target_index(n, l - 2) < 0)
                fail_msg("tests/fuzz/%s has no entry in tests/test_fuzz_regressions.c: include it there", n);
            sources++;
        }
    }
    closedir(d);
    assert_int_equal(sources, N_TARGETS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_corpora),
        cmocka_unit_test(test_targets_listed),
        cmocka_unit_test(test_repository_corpus),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
