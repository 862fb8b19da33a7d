/* fuzz_convert.c — libFuzzer target for the PyTorch converter (src/convert/): the input is a host
 * execution trace when its first byte is even ('0'), else a Kineto trace paired with a small fixed
 * host trace ('1'); the rest is the file. Either way the converter must return a result or an error, never crash or leak.
 * Inputs go through a scratch file because the converter reads paths (in /dev/shm: no disk
 * I/O per input; the fixed host trace is written once and removed when the process ends). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "etkit/convert.h"
#include "fuzz_common.h"

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

/* the scratch files: input, Kineto input, fixed host trace; removed at exit */
static char fuzz_convert_files[3][96];
static void fuzz_convert_cleanup(void)
{
    for (int i = 0; i < 3; i++)
        if (fuzz_convert_files[i][0])
            unlink(fuzz_convert_files[i]);
}

#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif
int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    /* scratch files in memory (/dev/shm) when possible; the fixed host trace written once */
    char *a = fuzz_convert_files[0], *b = fuzz_convert_files[1], *h = fuzz_convert_files[2];
    static bool have_fixed;
    if (!a[0]) {
        const char *dir = fc_scratch_dir();
        snprintf(a, sizeof fuzz_convert_files[0], "%s/fuzz_convert_a.%d.json", dir, (int)getpid());
        snprintf(b, sizeof fuzz_convert_files[0], "%s/fuzz_convert_b.%d.json", dir, (int)getpid());
        snprintf(h, sizeof fuzz_convert_files[0], "%s/fuzz_convert_h.%d.json", dir, (int)getpid());
        atexit(fuzz_convert_cleanup);
    }
    if (size == 0)
        return 0;
    bool device = data[0] & 1;
    data++;
    size--;
    if (device) {
        if (!have_fixed && write_file(h, host_fixed, sizeof host_fixed - 1))
            return 0;
        have_fixed = true;
        if (write_file(b, data, size))
            return 0;
    } else if (write_file(a, data, size)) {
        return 0;
    }
    /* bit 1 with a device trace: the Kineto trace alone (no host trace), one rank of a job */
    bool alone = device && (data[-1] & 2);
    etk_convert_opts o = {alone ? NULL : device ? h : a, device ? b : NULL, -1, true, alone ? 1 : 0, NULL};
    etk_trace *t = NULL;
    etk_groups *g = NULL;
    etk_convert_stats st;
    etk_error err;
    if (etk_convert_pytorch(&o, &t, &g, &st, &err) == 0) {
        etk_trace_free(t);
        etk_groups_free(g);
    }
    return 0;
}
