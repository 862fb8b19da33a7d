/* cublas.c — the stand-in libcublas.so.13: handles with a stream and a workspace; GEMMs become
 * nodes timed by etkit's compute model (live/gemm.h). ABI declarations are etkit's own. */
#include <stdint.h>
#include <stdlib.h>

#include "live/client.h"
#include "live/gemm.h"

#define API ETL_API
typedef int cublasStatus_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_INVALID_VALUE = 7 };
typedef struct etk_cublas {
    void *stream;
    int math_mode;
} *cublasHandle_t;

API cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    *h = calloc(1, sizeof **h);
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

API cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetStream_v2(cublasHandle_t h, void *s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetStream_v2(cublasHandle_t h, void **s)
{
    if (!h || !s)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *w, size_t bytes)
{
    (void)w, (void)bytes;
    return h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

API cublasStatus_t cublasSetMathMode(cublasHandle_t h, int mode)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetMathMode(cublasHandle_t h, int *mode)
{
    if (!h || !mode)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *mode = h->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetVersion_v2(cublasHandle_t h, int *v)
{
    (void)h;
    if (v)
        *v = 130000;
    return CUBLAS_STATUS_SUCCESS;
}

#define GEMM_ARGS                                                                                  \
    cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int lda, \
        const void *B, int ldb, const void *beta, void *C, int ldc
#define UNUSED_GEMM (void)ta, (void)tb, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C, (void)ldc

static cublasStatus_t gemm(const char *call, cublasHandle_t h, int m, int n, int k, long long batch, size_t el,
                           int prec)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batch < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    etl_gemm(call, h->stream, m, n, k, batch, el, prec);
    return CUBLAS_STATUS_SUCCESS;
}

/* FP32 GEMMs: TF32 where the handle's math mode allows it (CUBLAS_TF32_TENSOR_OP_MATH = 3) */
static int tf32_mode(cublasHandle_t h)
{
    return h && (h->math_mode & 0xf) == 3;
}
#define SGEMM_PREC(h) (tf32_mode(h) ? 5 : 4)
/* the *Ex calls: CUBLAS_COMPUTE_32F (68) on FP32 inputs is TF32 under the TF32 math mode */
static int ex_prec(cublasHandle_t h, int atype, int compute)
{
    return etl_gemm_prec(atype, compute == 68 && atype == 0 && tf32_mode(h) ? 77 : compute);
}
API cublasStatus_t cublasSgemm_v2(GEMM_ARGS) { UNUSED_GEMM; return gemm("cublasSgemm", h, m, n, k, 1, 4, SGEMM_PREC(h)); }
API cublasStatus_t cublasDgemm_v2(GEMM_ARGS) { UNUSED_GEMM; return gemm("cublasDgemm", h, m, n, k, 1, 8, 4); }
API cublasStatus_t cublasHgemm(GEMM_ARGS) { UNUSED_GEMM; return gemm("cublasHgemm", h, m, n, k, 1, 2, 2); }

API cublasStatus_t cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha,
                                const void *A, int Atype, int lda, const void *B, int Btype, int ldb,
                                const void *beta, void *C, int Ctype, int ldc, int compute, int algo)
{
    UNUSED_GEMM;
    (void)Btype, (void)Ctype, (void)algo;
    return gemm("cublasGemmEx", h, m, n, k, 1, etl_dtype_bytes(Atype),
                ex_prec(h, Atype, compute));
}

#define SB_ARGS GEMM_ARGS, long long sa, long long sb, long long sc, int batch
#define SB_ARGS_PTR                                                                                \
    cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int lda, \
        long long sa, const void *B, int ldb, long long sb, const void *beta, void *C, int ldc, long long sc, int batch

API cublasStatus_t cublasSgemmStridedBatched(SB_ARGS_PTR)
{
    UNUSED_GEMM;
    (void)sa, (void)sb, (void)sc;
    return gemm("cublasSgemmStridedBatched", h, m, n, k, batch, 4, SGEMM_PREC(h));
}

API cublasStatus_t cublasDgemmStridedBatched(SB_ARGS_PTR)
{
    UNUSED_GEMM;
    (void)sa, (void)sb, (void)sc;
    return gemm("cublasDgemmStridedBatched", h, m, n, k, batch, 8, 4);
}

API cublasStatus_t cublasHgemmStridedBatched(SB_ARGS_PTR)
{
    UNUSED_GEMM;
    (void)sa, (void)sb, (void)sc;
    return gemm("cublasHgemmStridedBatched", h, m, n, k, batch, 2, 2);
}

API cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                              const void *alpha, const void *A, int Atype, int lda, long long sa,
                                              const void *B, int Btype, int ldb, long long sb, const void *beta,
                                              void *C, int Ctype, int ldc, long long sc, int batch, int compute,
                                              int algo)
{
    UNUSED_GEMM;
    (void)sa, (void)sb, (void)sc, (void)Btype, (void)Ctype, (void)algo;
    return gemm("cublasGemmStridedBatchedEx", h, m, n, k, batch, etl_dtype_bytes(Atype),
                ex_prec(h, Atype, compute));
}

#define NOT_MODELLED(fn)                                                                          \
    API cublasStatus_t fn(void) { etl_not_modelled(#fn); }
NOT_MODELLED(cublasGemmBatchedEx)
NOT_MODELLED(cublasSgemmBatched)
NOT_MODELLED(cublasHgemmBatched)
NOT_MODELLED(cublasSgemv_v2)
NOT_MODELLED(cublasSaxpy_v2)
NOT_MODELLED(cublasSdot_v2)
NOT_MODELLED(cublasSetMatrix)
NOT_MODELLED(cublasGetMatrix)
