/* fuzz_convert.c — libFuzzer target for the PyTorch converter (src/convert/): the input is a host
 * execution trace when its first byte is even ('0'), else a Kineto trace paired with a small fixed
 * host trace ('1'); the rest is the file. Either way the converter must return a result or an error, never crash or leak.
 * Inputs go through a temporary file because the converter reads paths. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "etkit/convert.h"

static const char host_fixed[] =
    "{\"schema\": \"1.0.2\", \"pid\": 1, \"nodes\": ["
    "{\"id\": 2, \"name\": \"[pytorch|profiler|execution_trace|thread]\", \"ctrl_deps\": 1},"
    "{\"id\": 3, \"name\": \"aten::mm\", \"ctrl_deps\": 2, \"attrs\": [{\"name\": \"rf_id\", "
    "\"value\": 3}]},"
    "{\"id\": 4, \"name\": \"nccl:all_reduce\", \"ctrl_deps\": 2, \"inputs\": {\"values\": "
    "[[1, 1, 0, 8, 4, \"cuda:0\"]]}, \"attrs\": [{\"name\": \"rf_id\", \"value\": 4}]}]}";

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(data, 1, len, f);
    fclose(f);
    return n == len ? 0 : -1;
}

#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif
int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "/tmp/fuzz_convert_a.%d.json", (int)getpid());
    snprintf(b, sizeof b, "/tmp/fuzz_convert_b.%d.json", (int)getpid());
    if (size == 0)
        return 0;
    bool device = data[0] & 1;
    data++;
    size--;
    if (device) {
        if (write_file(a, host_fixed, sizeof host_fixed - 1) || write_file(b, data, size))
            return 0;
    } else if (write_file(a, data, size)) {
        return 0;
    }
    /* bit 1 with a device trace: the Kineto trace alone (no host trace), one rank of a job */
    bool alone = device && (data[-1] & 2);
    etk_convert_opts o = {alone ? NULL : a, device ? b : NULL, -1, true, alone ? 1 : 0};
    etk_trace *t = NULL;
    etk_groups *g = NULL;
    etk_convert_stats st;
    etk_error err;
    if (etk_convert_pytorch(&o, &t, &g, &st, &err) == 0) {
        etk_trace_free(t);
        etk_groups_free(g);
    }
    unlink(a);
    unlink(b);
    return 0;
}
