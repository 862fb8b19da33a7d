#define _POSIX_C_SOURCE 200809L
/* faults.c — the fault cases of issue #11 for `etkit live` (tests/live/faults.sh), one per
 * argv[1], every rank running one all-reduce of 1 MiB on the default stream:
 *   ok         all ranks; rank 0 prints the virtual time the all-reduce took (clock_gettime)
 *   early      rank 1 returns before its all-reduce (status 0): the others cannot finish
 *   crash      rank 1 exits with status 5 before its all-reduce
 *   abort      rank 1 calls abort()
 *   mismatch   rank 0 issues two all-reduces, the others one (deadlock)
 *   oom        cudaMalloc past the modelled HBM returns cudaErrorMemoryAllocation (printed)
 *   unmodelled calls cudaMallocManaged (not modelled: etkit live names it)
 * Built with a C compiler against the CUDA headers. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
    cudaSetDevice(atoi(getenv("LOCAL_RANK")));
    if (!strcmp(mode, "oom")) {
        void *p;
        size_t free_b, total_b;
        cudaMemGetInfo(&free_b, &total_b);
        cudaError_t e = cudaMalloc(&p, total_b + 1);
        cudaError_t e2 = cudaMalloc(&p, total_b / 2);
        cudaMemGetInfo(&free_b, &total_b);
        if (rank == 0)
            printf("oom: %d %s; half: %d; free %zu of %zu\n", (int)e, cudaGetErrorString(e), (int)e2, free_b, total_b);
        return 0;
    }
    if (!strcmp(mode, "unmodelled")) {
        void *p;
        cudaMallocManaged(&p, 1024, 1);
        return 0;
    }
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    ncclComm_t comm;
    ncclCommInitRank(&comm, n, id, rank);
    void *buf;
    cudaMalloc(&buf, 1 << 20);
    if (rank == 1 && !strcmp(mode, "early"))
        return 0;
    if (rank == 1 && !strcmp(mode, "crash"))
        exit(5);
    if (rank == 1 && !strcmp(mode, "abort"))
        abort();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    ncclAllReduce(buf, buf, 1 << 20, ncclInt8, ncclSum, comm, 0);
    if (rank == 0 && !strcmp(mode, "mismatch"))
        ncclAllReduce(buf, buf, 1 << 20, ncclInt8, ncclSum, comm, 0);
    cudaStreamSynchronize(0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (rank == 0)
        printf("all-reduce took %lld ns\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    ncclCommDestroy(comm);
    return 0;
}
