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
 *   poll       rank 0 polls cudaStreamQuery / cudaEventQuery after the all-reduce: the loop
 *              sees the work done at its virtual end after one call
 *   clock      rank 0 burns 20 ms of thread CPU time between two readings of CLOCK_MONOTONIC
 *              and prints the virtual difference, and time() (the fixed epoch of docs/live.md)
 * ETK_TEST_SLEEP_MS=R:MS: rank R sleeps MS ms of real time first (another arrival order).
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
    const char *sl = getenv("ETK_TEST_SLEEP_MS");
    if (sl && atoi(sl) == rank && strchr(sl, ':')) {
        long ms = atol(strchr(sl, ':') + 1);
        struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&d, NULL);
    }
    if (!strcmp(mode, "clock")) {
        struct timespec a, b, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        do
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        while ((c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec) < 20000000LL);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (rank == 0)
            printf("clock: %lld ns for 20 ms of CPU; time %lld\n",
                   (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec), (long long)time(NULL));
        return 0;
    }
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
    if (!strcmp(mode, "poll")) {
        int polls = 0;
        cudaEvent_t e;
        cudaEventCreate(&e);
        cudaEventRecord(e, 0);
        while (cudaEventQuery(e) == cudaErrorNotReady)
            polls++;
        while (cudaStreamQuery(0) == cudaErrorNotReady)
            polls++;
        if (rank == 0)
            printf("poll: %d not-ready answers\n", polls);
    }
    cudaStreamSynchronize(0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (rank == 0)
        printf("all-reduce took %lld ns\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    ncclCommDestroy(comm);
    return 0;
}
