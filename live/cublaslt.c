/* cublaslt.c — the stand-in libcublasLt.so.13: handles, matmul descriptors, matrix layouts
 * (rows, columns, batch count) and preferences are accepted; cublasLtMatmul becomes a GEMM node
 * timed by etkit's compute model (live/gemm.h). ABI declarations are etkit's own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "live/client.h"
#include "live/gemm.h"

#define API ETL_API
typedef int cublasStatus_t;
enum { OK = 0, NOT_INIT = 1, INVALID = 7 };

struct etk_lt_layout {
    int type;
    uint64_t rows, cols;
    int64_t batch;
};

API cublasStatus_t cublasLtCreate(void **h)
{
    if (!h)
        return INVALID;
    *h = calloc(1, 16);
    return *h ? OK : NOT_INIT;
}

API cublasStatus_t cublasLtDestroy(void *h)
{
    free(h);
    return OK;
}

API cublasStatus_t cublasLtMatrixLayoutCreate(struct etk_lt_layout **l, int type, uint64_t rows, uint64_t cols,
                                              int64_t ld)
{
    (void)ld;
    if (!l)
        return INVALID;
    *l = calloc(1, sizeof **l);
    if (!*l)
        return NOT_INIT;
    (*l)->type = type;
    (*l)->rows = rows;
    (*l)->cols = cols;
    (*l)->batch = 1;
    return OK;
}

API cublasStatus_t cublasLtMatrixLayoutDestroy(struct etk_lt_layout *l)
{
    free(l);
    return OK;
}

API cublasStatus_t cublasLtMatrixLayoutSetAttribute(struct etk_lt_layout *l, int attr, const void *buf, size_t n)
{
    if (!l || !buf)
        return INVALID;
    if (attr == 5 && n >= sizeof(int32_t)) { /* CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT (int32) */
        int32_t b;
        memcpy(&b, buf, sizeof b);
        l->batch = b;
    }
    return OK;
}

/* the descriptor keeps its compute type (cublasComputeType_t): with A's type, the GEMM's precision */
API cublasStatus_t cublasLtMatmulDescCreate(void **d, int compute, int scale)
{
    (void)scale;
    if (!d)
        return INVALID;
    *d = calloc(1, 16);
    if (*d)
        memcpy(*d, &compute, sizeof compute);
    return *d ? OK : NOT_INIT;
}

API cublasStatus_t cublasLtMatmulDescDestroy(void *d)
{
    free(d);
    return OK;
}

API cublasStatus_t cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t n)
{
    (void)attr, (void)buf, (void)n;
    return d ? OK : INVALID;
}

API cublasStatus_t cublasLtMatmulPreferenceCreate(void **p)
{
    if (!p)
        return INVALID;
    *p = calloc(1, 16);
    return *p ? OK : NOT_INIT;
}

API cublasStatus_t cublasLtMatmulPreferenceDestroy(void *p)
{
    free(p);
    return OK;
}

API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t n)
{
    (void)attr, (void)buf, (void)n;
    return p ? OK : INVALID;
}

/* One heuristic result: the algorithm struct (64 bytes of opaque data), workspace 0, state
 * success, waves 1 (cublasLtMatmulHeuristicResult_t: algo[64], size_t, int, float, int[4]). */
API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(void *h, void *d, void *a, void *b, void *c, void *dd, void *pref,
                                                  int requested, void *results, int *returned)
{
    (void)h, (void)d, (void)a, (void)b, (void)c, (void)dd, (void)pref;
    if (!results || !returned || requested < 1)
        return INVALID;
    memset(results, 0, 96);
    float waves = 1;
    memcpy((char *)results + 76, &waves, sizeof waves);
    *returned = 1;
    return OK;
}

API cublasStatus_t cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A,
                                  const struct etk_lt_layout *Al, const void *B, const struct etk_lt_layout *Bl,
                                  const void *beta, const void *C, const struct etk_lt_layout *Cl, void *D,
                                  const struct etk_lt_layout *Dl, const void *algo, void *ws, size_t ws_bytes,
                                  void *stream)
{
    (void)desc, (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)D, (void)algo, (void)ws, (void)ws_bytes,
        (void)Bl, (void)Cl;
    if (!h || !Al || !Dl)
        return INVALID;
    /* D is m x n; A is m x k or (transposed) k x m: k is A's other dimension */
    uint64_t m = Dl->rows, n = Dl->cols, k = Al->rows == m ? Al->cols : Al->rows;
    etl_gemm("cublasLtMatmul", stream, (long long)m, (long long)n, (long long)k, Dl->batch,
             etl_dtype_bytes(Al->type), etl_gemm_prec(Al->type, desc ? *(const int *)desc : 68));
    return OK;
}

#define NOT_MODELLED(fn)                                                                          \
    API cublasStatus_t fn(void) { etl_not_modelled(#fn); }
NOT_MODELLED(cublasLtMatrixTransform)
NOT_MODELLED(cublasLtMatmulAlgoInit)
