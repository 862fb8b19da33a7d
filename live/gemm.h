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

/* The precision a GEMM runs at (ETK_PREC_* + 1 as the protocol carries it: bf16 1, fp16 2, fp8 3,
 * fp32 4, tf32 5) from its input cudaDataType and its cublasComputeType_t (-1: none named):
 * 16-bit and 8-bit inputs run on the tensor cores of their type; FP32 inputs at FP32, or TF32 /
 * BF16 / FP16 where the compute type allows it (CUBLAS_COMPUTE_32F_FAST_TF32 77, _FAST_16BF 75,
 * _FAST_16F 74); FP64 (no FP64 peak in the GPU presets) as FP32. */
static inline int etl_gemm_prec(int atype, int compute)
{
    switch (atype) {
    case 14: return 1;           /* CUDA_R_16BF */
    case 2: return 2;            /* CUDA_R_16F */
    case 28: case 29: return 3;  /* CUDA_R_8F_E4M3, _E5M2 */
    case 3: return 3;            /* CUDA_R_8I: the 8-bit tensor-core peak */
    default: break;
    }
    switch (compute) {
    case 77: return 5;
    case 75: return 1;
    case 74: return 2;
    default: return 4;
    }
}

static inline void etl_gemm(const char *call, void *stream, long long m, long long n, long long k, long long batch,
                            size_t el, int prec)
{
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
        return;
    etl_lock();
    etk_live_msg g;
    memset(&g, 0, sizeof g);
    g.type = 4;
    g.flags = ETK_LF_GEMM;
    g.coll = prec;
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
