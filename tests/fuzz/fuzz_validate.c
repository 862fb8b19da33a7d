/* fuzz_validate.c — libFuzzer target for the inspection layer: any bytes the reader accepts as
 * a trace must go through etk_validate_trace, a one-rank etk_validate_workload, etk_info_trace
 * (text and JSON) and etk_dot_write without a crash, a leak or a hang (cycles, self-deps,
 * duplicate ids and absent deps are all reachable from random input). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "etkit/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    etk_trace *t;
    etk_error err;
    etk_read_opts o = {.quiet = true, .max_message_bytes = 1 << 20};
    if (etk_trace_read_mem(data, size, "fuzz.et", &o, &t, &err) != 0)
        return 0;
    etk_findings *f = etk_findings_new();
    if (f)
        (void)etk_validate_trace(t, 0, NULL, f, &err);
    etk_findings_free(f);
    etk_workload w = {.n_ranks = 1, .ranks = &t, .prefix = "fuzz"};
    f = etk_findings_new();
    if (f)
        (void)etk_validate_workload(&w, NULL, f, &err);
    etk_findings_free(f);
    etk_trace_info in;
    if (etk_info_trace(t, &in, &err) == 0) {
        static FILE *devnull; /* opened once */
        if (!devnull)
            devnull = fopen("/dev/null", "w");
        if (devnull) {
            etk_info_print(devnull, &in, 0);
            etk_dot_opts d = {.max_nodes = 64};
            (void)etk_dot_write(devnull, t, &d, NULL, &err);
        }
        json_decref(etk_info_to_json(&in, 0));
        etk_info_free(&in);
    }
    etk_trace_free(t);
    return 0;
}
