/* test_gen_validate.c — generated workloads through the validator (include/etkit/validate.h):
 * per-file checks (ids, dependencies, cycles, attribute kinds) and the cross-rank ones (groups,
 * collective sequences, send/recv matching, deadlock) find nothing, for every schedule,
 * recompute policy, ZeRO stage and rank order, and for the written files as well. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/validate.h"
#include "gen_testlib.h"

static void test_validate_generated(void **state)
{
    (void)state;
    const char *small = "--model llama2-7b --layers 6 --hidden 512 --heads 8 --kv-heads 4 --ffn 1024 --vocab 1000 --seq 256 ";
    const char *gpt = "--model gpt3-175b --layers 5 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 128 ";
    const char *plans[] = {
        "--tp 2 --pp 3 --dp 2 --global-batch 16",
        "--tp 2 --pp 3 --dp 2 --global-batch 16 --sp --zero 1 --recompute full --schedule gpipe",
        "--tp 4 --pp 2 --dp 2 --global-batch 8 --sp --recompute selective --attention unfused --rank-order pp,dp,tp",
        "--pp 4 --dp 3 --global-batch 24 --dp-bucket-mb 0.25",
        "--tp 2 --pp 6 --global-batch 4 --micro-batch 2",
        "--tp 2 --pp 2 --vpp 3 --dp 2 --global-batch 8 --sp",
    };
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
            char line[512];
            snprintf(line, sizeof line, "%s%s", k ? gpt : small, plans[i]);
            if (k && (strstr(line, "--pp 6") || strstr(line, "--vpp 3")))
                continue; /* 5 layers */
            etk_gen_config c;
            cfg_from(&c, line);
            etk_workload *w;
            etk_error err = {0};
            if (etk_gen_workload(&c, false, &w, &err))
                fail_msg("%s: %s", line, err.msg);
            gen_expect_clean(w, line);
            etk_workload_free(w);
        }
    /* the files as written, read back */
    etk_gen_config c;
    cfg_from(&c, "--model gpt3-175b --layers 4 --hidden 1024 --ffn 4096 --heads 16 --seq 1024 --vocab 32000 "
                 "--global-batch 8 --dp 2 --tp 2 --pp 2 --sp");
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/v", tu_tmpdir());
    etk_error err = {0};
    if (etk_gen_write(&c, prefix, &err))
        fail_msg("%s", err.msg);
    etk_workload *w;
    etk_read_opts ro = {.quiet = true};
    if (etk_workload_open(prefix, NULL, &ro, &w, &err))
        fail_msg("%s", err.msg);
    gen_expect_clean(w, "written files");
    etk_workload_free(w);

    /* 64 ranks and more are written by 4 threads: same files as the in-memory workload */
    cfg_from(&c, "--model gpt3-175b --layers 4 --hidden 256 --heads 4 --ffn 1024 --vocab 1024 --seq 64 "
                 "--global-batch 16 --dp 8 --tp 4 --pp 2 --sp");
    assert_int_equal(c.n_ranks, 64);
    snprintf(prefix, sizeof prefix, "%s/many", tu_tmpdir());
    if (etk_gen_write(&c, prefix, &err))
        fail_msg("%s", err.msg);
    if (etk_workload_open(prefix, NULL, &ro, &w, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(w->n_ranks, 64);
    gen_expect_clean(w, "64 written files");
    etk_workload *mem;
    if (etk_gen_workload(&c, false, &mem, &err))
        fail_msg("%s", err.msg);
    for (uint32_t r = 0; r < 64; r++) {
        assert_int_equal(w->ranks[r]->n_nodes, mem->ranks[r]->n_nodes);
        for (size_t i = 0; i < mem->ranks[r]->n_nodes; i++) {
            const etk_node *a = &w->ranks[r]->nodes[i], *b = &mem->ranks[r]->nodes[i];
            assert_int_equal(a->id, b->id);
            assert_string_equal(a->name, b->name);
            const char *pa = etk_node_str(a, "pg_name"), *pb = etk_node_str(b, "pg_name");
            if (pa || pb)
                assert_string_equal(pa, pb);
        }
    }
    etk_workload_free(mem);
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_validate_generated)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
