/* gemm.h — one GEMM as a node for the coordinator (shared by cublas.c and cublaslt.c): timed by
 * etkit's compute model from its shape (docs/compute-model.md), on the handle's stream. */
#ifndef ETK_LIVE_GEMM_H
#define ETK_LIVE_GEMM_H

#include <stdio.h>
#include <string.h>

#include "live/client.h"

/* bytes per element of a cudaDataType (R_16F 2, R_32F 0, R_64F 1, R_16BF 14, R_8I 3, R_32I 10,
 * R_8F_E4M3 28, R_8F_E5M2 29) */
static inline size_t etl_dtype_bytes(int t)
{
    switch (t) {
    case 2: case 14: return 2;
    case 0: case 10: return 4;
    case 1: return 8;
    case 3: case 28: case 29: return 1;
    default: return 2;
    }
}

static inline void etl_gemm(const char *call, void *stream, long long m, long long n, long long k, long long batch,
                            size_t el)
{
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
        return;
    etl_lock();
    etk_live_msg g;
    memset(&g, 0, sizeof g);
    g.type = 4;
    g.flags = ETK_LF_GEMM;
    g.m = m;
    g.n = n;
    g.k = k;
    g.flops = 2ull * (unsigned long long)m * (unsigned long long)n * (unsigned long long)k *
              (unsigned long long)batch;
    g.bytes = ((unsigned long long)m * (unsigned long long)k + (unsigned long long)k * (unsigned long long)n +
               (unsigned long long)m * (unsigned long long)n) * el * (unsigned long long)batch;
    snprintf(g.name, sizeof g.name, "%s", call);
    etl_issue(stream, &g);
    etl_unlock();
}

#endif
