/* tp_pp.cu — issue #11 test (c) for `etkit live` (tests/live/tp_pp.sh): tensor x pipeline
 * parallelism over communicators made with ncclCommSplit. TP = 2 consecutive ranks, PP = 4
 * stages (color rank % 2); per step M = 4 micro-batches flow forward through the stages: receive
 * the activation from the previous stage (grouped ncclRecv), one BF16 GEMM of 2048^3
 * (cublasGemmEx), an all-reduce of the 8 MiB output over the TP pair, send it to the next stage
 * (grouped ncclSend); then cudaStreamSynchronize. Rank 0 and the last rank print
 *   rank R step NS   (clock_gettime, the virtual clock)
 * Built with nvcc -cudart shared -lcublas -lnccl. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ck.h"

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void)
{
    int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
    const int tp = 2, pp = n / tp, micro = 4, d = 2048;
    CK(cudaSetDevice(atoi(getenv("LOCAL_RANK"))));
    ncclUniqueId id;
    CK(ncclGetUniqueId(&id));
    ncclComm_t world, tpc, ppc;
    CK(ncclCommInitRank(&world, n, id, rank));
    CK(ncclCommSplit(world, rank / tp, rank, &tpc, NULL)); /* the TP pair of this stage */
    CK(ncclCommSplit(world, rank % tp, rank, &ppc, NULL)); /* the pipeline: member = stage */
    int stage, tpn, ppn;
    CK(ncclCommUserRank(ppc, &stage));
    CK(ncclCommCount(tpc, &tpn));
    CK(ncclCommCount(ppc, &ppn));
    if (tpn != tp || ppn != pp || stage != rank / tp) {
        fprintf(stderr, "rank %d: tp %d pp %d stage %d\n", rank, tpn, ppn, stage);
        return 1;
    }
    size_t bytes = (size_t)d * d * 2;
    void *w, *x, *y;
    CK(cudaMalloc(&w, bytes));
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t h;
    CK(cublasCreate(&h));
    CK(cublasSetStream(h, st));
    float one = 1, zero = 0;
    for (int s = 0; s < 2; s++) {
        long long t0 = now_ns();
        for (int m = 0; m < micro; m++) {
            if (stage > 0) {
                CK(ncclGroupStart());
                CK(ncclRecv(x, (size_t)d * d, ncclBfloat16, stage - 1, ppc, st));
                CK(ncclGroupEnd());
            }
            CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, w, CUDA_R_16BF, d, x, CUDA_R_16BF, d, &zero,
                            y, CUDA_R_16BF, d, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            CK(ncclAllReduce(y, y, (size_t)d * d, ncclBfloat16, ncclSum, tpc, st));
            if (stage < pp - 1) {
                CK(ncclGroupStart());
                CK(ncclSend(y, (size_t)d * d, ncclBfloat16, stage + 1, ppc, st));
                CK(ncclGroupEnd());
            }
        }
        CK(cudaStreamSynchronize(st));
        long long t1 = now_ns();
        if (rank == 0 || rank == n - 1)
            printf("rank %d step %lld\n", rank, t1 - t0);
    }
    CK(ncclCommDestroy(tpc));
    CK(ncclCommDestroy(ppc));
    CK(ncclCommDestroy(world));
    return 0;
}
