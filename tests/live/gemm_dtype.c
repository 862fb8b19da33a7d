/* gemm_dtype.c — one 4096^3 GEMM per dtype between two CUDA events (tests/live/gemm_dtype.sh):
 * cublasGemmEx with BF16, FP16, FP8 (E4M3) inputs, FP32 inputs with CUBLAS_COMPUTE_32F (FP32),
 * _FAST_TF32 and _FAST_16BF; cublasSgemm in the default math mode and in
 * CUBLAS_TF32_TENSOR_OP_MATH; cublasLtMatmul with FP32 layouts and the compute types 32F and
 * 32F_FAST_TF32. Prints "NAME ns" per GEMM, the events' elapsed time in virtual ns. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "ck.h"

/* cublasLt, declared here (etkit's own headers have no cublasLt.h): enums as int, handles as
 * pointers, the ABI of the real declarations */
int cublasLtCreate(void **h);
int cublasLtMatmulDescCreate(void **d, int compute, int scale);
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld);
int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *Al, const void *B, void *Bl,
                   const void *beta, const void *C, void *Cl, void *D, void *Dl, const void *algo, void *ws,
                   size_t ws_bytes, cudaStream_t stream);

enum { D = 4096 };
static cudaEvent_t e0, e1;

static void report(const char *name)
{
    float ms = 0;
    CK(cudaEventRecord(e1, 0));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("%s %.0f\n", name, (double)ms * 1e6);
}

static void ex(cublasHandle_t h, const char *name, int atype, int compute, void *a)
{
    float one = 1, zero = 0;
    CK(cudaEventRecord(e0, 0));
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, D, D, D, &one, a, atype, D, a, atype, D, &zero, a,
                    atype == CUDA_R_8F_E4M3 ? CUDA_R_16BF : atype, D, compute, CUBLAS_GEMM_DEFAULT));
    report(name);
}

static void lt(void *lh, const char *name, int compute, void *a)
{
    void *desc, *l;
    float one = 1, zero = 0;
    CK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
    CK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, D, D, D));
    CK(cudaEventRecord(e0, 0));
    CK(cublasLtMatmul(lh, desc, &one, a, l, a, l, &zero, a, l, a, l, NULL, NULL, 0, 0));
    report(name);
}

int main(void)
{
    void *a, *lh;
    cublasHandle_t h;
    CK(cudaMalloc(&a, (size_t)D * D * 4));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cublasCreate(&h));
    CK(cublasLtCreate(&lh));
    ex(h, "gemmex_bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, a);
    ex(h, "gemmex_fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, a);
    ex(h, "gemmex_fp8", CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F, a);
    ex(h, "gemmex_fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, a);
    ex(h, "gemmex_tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, a);
    ex(h, "gemmex_fp32_fast_bf16", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, a);
    float one = 1, zero = 0;
    CK(cudaEventRecord(e0, 0));
    CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, D, D, D, &one, a, D, a, D, &zero, a, D));
    report("sgemm");
    CK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    CK(cudaEventRecord(e0, 0));
    CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, D, D, D, &one, a, D, a, D, &zero, a, D));
    report("sgemm_tf32_math");
    lt(lh, "lt_fp32", CUBLAS_COMPUTE_32F, a);
    lt(lh, "lt_tf32", CUBLAS_COMPUTE_32F_FAST_TF32, a);
    return 0;
}
