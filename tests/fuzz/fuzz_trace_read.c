/* fuzz_trace_read.c — libFuzzer target for the Chakra reader (etk_trace_read_mem) on arbitrary
 * bytes, with two differential properties on what it accepts:
 *   1. encode(read(x)) reads back to an equal trace and re-encodes to the same bytes
 *      (the writer's output is a fixed point of read+write);
 *   2. the lossless JSON form of read(x) imports to a trace that encodes to the same bytes.
 * Rejected inputs must come with an error message. Replayed under ASan by
 * tests/test_fuzz_regressions.c (FUZZ_ENTRY renamed there). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"
#include "etkit/json.h"
#include "fuzz_common.h"

#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    etk_read_opts o = {.quiet = true, .max_message_bytes = 1 << 20};
    etk_error err = {0};
    etk_trace *t = NULL;
    if (etk_trace_read_mem(data, size, "fuzz.et", &o, &t, &err)) {
        FUZZ_CHECK(!t && err.code < 0 && err.msg[0], "rejected without an error message");
        return 0;
    }
    uint8_t *b1 = NULL, *b2 = NULL, *b3 = NULL;
    size_t n1 = 0, n2 = 0, n3 = 0;
    FUZZ_CHECK(etk_trace_encode(t, &b1, &n1, &err) == 0, "encode failed: %s", err.msg);
    etk_trace *t2 = NULL;
    FUZZ_CHECK(etk_trace_read_mem(b1, n1, "reencoded.et", &o, &t2, &err) == 0, "re-read failed: %s", err.msg);
    char why[256];
    FUZZ_CHECK(fc_trace_diff(t, t2, why, sizeof why) == 0, "read(encode(t)) != t: %s", why);
    FUZZ_CHECK(etk_trace_encode(t2, &b2, &n2, &err) == 0, "encode 2 failed: %s", err.msg);
    FUZZ_CHECK(n1 == n2 && !memcmp(b1, b2, n1), "encode(read(encode(t))) != encode(t) (%zu vs %zu bytes)", n1, n2);

    char *js = NULL;
    size_t jn = 0;
    FILE *f = open_memstream(&js, &jn);
    FUZZ_CHECK(f != NULL, "open_memstream");
    FUZZ_CHECK(etk_json_write(t, ETK_JSON_LOSSLESS, f, &err) == 0, "json write failed: %s", err.msg);
    fclose(f);
    etk_trace *t3 = NULL;
    FUZZ_CHECK(etk_json_import(js, jn, "fuzz.json", &t3, &err) == 0, "json import of our own export failed: %s",
               err.msg);
    FUZZ_CHECK(etk_trace_encode(t3, &b3, &n3, &err) == 0, "encode 3 failed: %s", err.msg);
    FUZZ_CHECK(n1 == n3 && !memcmp(b1, b3, n1), "et -> json -> et changed the bytes (%zu vs %zu)", n1, n3);

    free(js);
    free(b1);
    free(b2);
    free(b3);
    etk_trace_free(t);
    etk_trace_free(t2);
    etk_trace_free(t3);
    return 0;
}
