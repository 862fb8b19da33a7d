/* dp_train.cu — issue #11 test (b) for `etkit live` (tests/live/dp_train.sh): a data-parallel
 * training loop, one process per rank: per step two forward and two backward GEMMs of
 * 4096 x 4096 x 4096 in BF16 (cublasGemmEx on the step's stream), then an all-reduce of the
 * 32 MiB BF16 gradient (ncclAllReduce), then cudaStreamSynchronize. The straggler rank
 * (argv[1]; -1: none) also runs a `slow_down` kernel before its all-reduce. Each step is timed
 * with clock_gettime (the virtual clock under etkit live); rank 0 prints
 *   step I NS
 * Built with nvcc -cudart shared -lcublas -lnccl. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ck.h"

__global__ void slow_down(float *p)
{
    if (p)
        p[threadIdx.x] *= 2;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int straggler = argc > 1 ? atoi(argv[1]) : -1, steps = 4;
    int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
    CK(cudaSetDevice(atoi(getenv("LOCAL_RANK"))));
    ncclUniqueId id;
    CK(ncclGetUniqueId(&id));
    ncclComm_t comm;
    CK(ncclCommInitRank(&comm, n, id, rank));
    const int d = 4096;
    size_t mat = (size_t)d * d * 2; /* BF16 */
    void *w, *x, *y, *g;
    CK(cudaMalloc(&w, mat));
    CK(cudaMalloc(&x, mat));
    CK(cudaMalloc(&y, mat));
    CK(cudaMalloc(&g, mat));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t h;
    CK(cublasCreate(&h));
    CK(cublasSetStream(h, st));
    float one = 1, zero = 0;
    for (int s = 0; s < steps; s++) {
        long long t0 = now_ns();
        /* forward: y = w x, then again; backward: gradient and input gradient */
        for (int k = 0; k < 4; k++)
            CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, w, CUDA_R_16BF, d, x, CUDA_R_16BF, d,
                            &zero, k < 2 ? y : g, CUDA_R_16BF, d, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (rank == straggler)
            slow_down<<<1, 32, 0, st>>>((float *)y);
        CK(ncclAllReduce(g, g, (size_t)d * d, ncclBfloat16, ncclSum, comm, st));
        CK(cudaStreamSynchronize(st));
        long long t1 = now_ns();
        if (rank == 0)
            printf("step %d %lld\n", s, t1 - t0);
    }
    CK(cublasDestroy(h));
    CK(ncclCommDestroy(comm));
    return 0;
}
