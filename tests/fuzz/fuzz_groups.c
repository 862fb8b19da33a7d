/* fuzz_groups.c — libFuzzer target for the communicator-group JSON parser (etk_groups_parse)
 * on arbitrary bytes. Properties on accepted documents: every group is found by its id (the
 * first of equal ids), rank lists are readable to their length; rejected inputs carry a
 * message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"
#include "fuzz_common.h"

#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    etk_error err = {0};
    etk_groups *g = NULL;
    if (etk_groups_parse((const char *)data, size, "fuzz.json", &g, &err)) {
        FUZZ_CHECK(!g && err.code < 0 && err.msg[0], "rejected without an error message");
        return 0;
    }
    FUZZ_CHECK(g != NULL, "success without groups");
    uint64_t sum = 0;
    for (size_t i = 0; i < g->n_groups; i++) {
        const etk_group *gr = &g->groups[i];
        FUZZ_CHECK(gr->id != NULL, "group %zu has no id", i);
        const etk_group *f = etk_groups_find(g, gr->id);
        FUZZ_CHECK(f != NULL && !strcmp(f->id, gr->id), "group '%s' not found by its id", gr->id);
        for (uint32_t r = 0; r < gr->n_ranks; r++)
            sum += gr->ranks[r]; /* ASan checks the array is as long as n_ranks says */
    }
    (void)sum;
    etk_groups_free(g);
    return 0;
}
