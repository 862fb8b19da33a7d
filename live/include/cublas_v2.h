/* cublas_v2.h — etkit's own declarations of the cuBLAS API subset that the live-mode test
 * programs (tests/live/) use, for building them with a C compiler without the CUDA toolkit; they
 * run against the stand-in libcublas.so.13 (docs/live.md). Written from the documented API; no
 * NVIDIA header is copied. As the real cublas_v2.h, cublasCreate, cublasDestroy and
 * cublasSetStream name the _v2 entry points. One prototype per line after ETK_CUBLAS_FN, checked
 * by tests/live/abi.sh against the real header. */
#ifndef ETK_OWN_CUBLAS_V2_H
#define ETK_OWN_CUBLAS_V2_H
#define ETK_OWN_CUBLAS_HEADERS 1

#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ETK_CUBLAS_FN
#define ETK_CUBLAS_FN extern
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum cudaDataType_t {
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_R_16F = 2,
    CUDA_R_8I = 3,
    CUDA_R_32I = 10,
    CUDA_R_16BF = 14,
    CUDA_R_8F_E4M3 = 28,
    CUDA_R_8F_E5M2 = 29
} cudaDataType;

typedef enum {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_32I = 72
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 } cublasGemmAlgo_t;

typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef struct cublasContext *cublasHandle_t;

#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasSetStream cublasSetStream_v2
#define cublasSgemm cublasSgemm_v2

ETK_CUBLAS_FN cublasStatus_t cublasCreate_v2(cublasHandle_t *handle);
ETK_CUBLAS_FN cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
ETK_CUBLAS_FN cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
ETK_CUBLAS_FN cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
ETK_CUBLAS_FN cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc);
ETK_CUBLAS_FN cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo);

#ifdef __cplusplus
}
#endif
#endif
