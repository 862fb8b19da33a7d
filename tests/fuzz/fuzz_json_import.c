/* fuzz_json_import.c — libFuzzer target for the lossless JSON importer (etk_json_import) on
 * arbitrary bytes. Property on accepted documents: export(import(x)) imports again to a trace
 * that encodes to the same .et bytes (the JSON form is a fixed point after one pass), and the
 * encoded bytes read back with the Chakra reader. Rejected inputs must carry a message. */
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
    etk_error err = {0};
    etk_trace *t = NULL;
    if (etk_json_import((const char *)data, size, "fuzz.json", &t, &err)) {
        FUZZ_CHECK(!t && err.code < 0 && err.msg[0], "rejected without an error message");
        return 0;
    }
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    FUZZ_CHECK(etk_trace_encode(t, &b1, &n1, &err) == 0, "encode failed: %s", err.msg);

    char *js = NULL;
    size_t jn = 0;
    FILE *f = open_memstream(&js, &jn);
    FUZZ_CHECK(f != NULL, "open_memstream");
    FUZZ_CHECK(etk_json_write(t, ETK_JSON_LOSSLESS, f, &err) == 0, "json write failed: %s", err.msg);
    fclose(f);
    etk_trace *t2 = NULL;
    FUZZ_CHECK(etk_json_import(js, jn, "again.json", &t2, &err) == 0, "import of our own export failed: %s",
               err.msg);
    char why[256];
    FUZZ_CHECK(fc_trace_diff(t, t2, why, sizeof why) == 0, "import(export(t)) != t: %s", why);
    FUZZ_CHECK(etk_trace_encode(t2, &b2, &n2, &err) == 0, "encode 2 failed: %s", err.msg);
    FUZZ_CHECK(n1 == n2 && !memcmp(b1, b2, n1), "json -> et -> json -> et changed the bytes");

    etk_read_opts o = {.quiet = true};
    etk_trace *t3 = NULL;
    FUZZ_CHECK(etk_trace_read_mem(b1, n1, "imported.et", &o, &t3, &err) == 0, "reader rejects the writer's output: %s",
               err.msg);
    FUZZ_CHECK(fc_trace_diff(t, t3, why, sizeof why) == 0, "read(encode(import(x))) != import(x): %s", why);

    free(js);
    free(b1);
    free(b2);
    etk_trace_free(t);
    etk_trace_free(t2);
    etk_trace_free(t3);
    return 0;
}
