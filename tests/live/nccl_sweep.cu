/* nccl_sweep.cu — an nccl-tests-style bandwidth sweep for `etkit live` (tests/live/sweep.sh):
 * all-reduce, all-gather, reduce-scatter, all-to-all and a ring send/recv from 8 B to 1 GiB, one
 * process per rank (RANK, WORLD_SIZE, LOCAL_RANK from the launcher). Sizes, time per iteration
 * and busbw as nccl-tests reports them (size: the whole buffer; all-gather's output, reduce-
 * scatter's input). Built with nvcc -cudart shared (then a <<<>>> kernel initializes the
 * buffer) or with a C compiler against the CUDA headers. Prints on rank 0:
 *   OP BYTES TIME_NS ALGBW_GBPS BUSBW_GBPS */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "ck.h"

#ifdef __CUDACC__
__global__ void fill(char *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 1;
}
#endif

enum { AR, AG, RS, A2A, SR, NOPS };
static const char *names[NOPS] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "sendrecv"};

static void run(int op, char *s, char *r, size_t bytes, int n, int rank, ncclComm_t comm, cudaStream_t st)
{
    switch (op) {
    case AR: CK(ncclAllReduce(s, r, bytes, ncclInt8, ncclSum, comm, st)); break;
    case AG: CK(ncclAllGather(s, r, bytes / n, ncclInt8, comm, st)); break;
    case RS: CK(ncclReduceScatter(s, r, bytes / n, ncclInt8, ncclSum, comm, st)); break;
    case A2A: CK(ncclAlltoAll(s, r, bytes / n, ncclInt8, comm, st)); break;
    case SR:
        CK(ncclGroupStart());
        CK(ncclSend(s, bytes, ncclInt8, (rank + 1) % n, comm, st));
        CK(ncclRecv(r, bytes, ncclInt8, (rank + n - 1) % n, comm, st));
        CK(ncclGroupEnd());
        break;
    }
}

int main(void)
{
    int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    int n = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
    int local = atoi(getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : "0");
    int iters = 5;
    CK(cudaSetDevice(local));
    ncclUniqueId id;
    CK(ncclGetUniqueId(&id)); /* etkit live: the same id on every rank (docs/live.md) */
    ncclComm_t comm;
    CK(ncclCommInitRank(&comm, n, id, rank));
    size_t max = (size_t)1 << 30;
    char *s, *r;
    CK(cudaMalloc((void **)&s, max));
    CK(cudaMalloc((void **)&r, max));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
#ifdef __CUDACC__
    fill<<<1024, 256, 0, st>>>(s, 1024 * 256);
#endif
    CK(cudaStreamSynchronize(st));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    if (rank == 0)
        printf("# %s, %d ranks\n",
#ifdef __CUDACC__
               "nvcc -cudart shared",
#elif defined(ETK_OWN_CUDA_HEADERS)
               "C compiler, etkit's own CUDA headers",
#else
               "C compiler, CUDA headers",
#endif
               n);
    for (int op = 0; op < NOPS; op++)
        for (size_t bytes = 8; bytes <= max; bytes *= 8) {
            if (bytes < (size_t)n && op != AR && op != SR)
                continue;
            run(op, s, r, bytes, n, rank, comm, st); /* warm-up */
            CK(cudaEventRecord(a, st));
            for (int i = 0; i < iters; i++)
                run(op, s, r, bytes, n, rank, comm, st);
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            double t_ns = ms * 1e6 / iters, algbw = bytes / t_ns;
            double f = op == AR ? 2.0 * (n - 1) / n : op == SR ? 1.0 : (double)(n - 1) / n;
            if (rank == 0)
                printf("%s %zu %.1f %.4f %.4f\n", names[op], bytes, t_ns, algbw, algbw * f);
        }
    CK(ncclCommDestroy(comm));
    CK(cudaFree(s));
    CK(cudaFree(r));
    return 0;
}
