/* fuzz_live_kernels.c — libFuzzer target for live mode's kernel table (`etkit live --kernels
 * FILE`, src/live/kernels.c): any text must give a table or a clean error naming the line, never
 * a crash, a leak or a hang; an accepted table is then asked for the time of a few kernel names
 * (fnmatch globs against mangled names) on a preset GPU, and every time it gives is positive. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/live.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static etk_cluster c;
    static int have_cluster;
    etk_error err;
    if (!have_cluster) {
        if (etk_cluster_preset("dgx-h100", 1, &c, &err) != 0)
            abort();
        have_cluster = 1;
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    if (size)
        memcpy(text, data, size);
    text[size] = 0; /* the loader reads a file into a NUL-terminated buffer: same here */
    etk_live_kernels *k = NULL;
    int rc = etk_live_kernels_parse(text, "fuzz.kernels", &k, &err);
    free(text);
    if (rc != 0) {
        FUZZ_CHECK(strstr(err.msg, "fuzz.kernels") != NULL, "an error that does not name the file: %s", err.msg);
        return 0;
    }
    static const char *const names[] = {
        "_Z6kernelPfi", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", "", "a*b?c[d]",
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>>(Flash_fwd_params)",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        uint64_t ns = 0;
        if (etk_live_kernel_ns(k, &c, names[i], &ns))
            FUZZ_CHECK(ns >= 1, "kernel '%s': a matching entry gave %llu ns", names[i], (unsigned long long)ns);
    }
    etk_live_kernels_free(k);
    return 0;
}
