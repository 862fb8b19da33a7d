#define _POSIX_C_SOURCE 200809L
/* streams.c — the legacy default stream's implicit synchronization under `etkit live`
 * (tests/live/streams.sh), 2 ranks: an all-reduce of 1 MiB (the comm stream) and a memset of
 * 64 MiB (the compute stream) on two streams, timed by the host's virtual clock around them and
 * a cudaDeviceSynchronize. Rank 0 prints, in ns:
 *   ar       the all-reduce alone, on a blocking stream
 *   ms       the memset alone, on the legacy default stream
 *   blk      all-reduce on a blocking stream, then memset on the legacy default stream
 *   blk_rev  memset on the legacy default stream, then all-reduce on a blocking stream
 *   nb       all-reduce on a non-blocking stream, then memset on the legacy default stream
 *   nb_rev   memset on the legacy default stream, then all-reduce on a non-blocking stream
 *   pt       one thread the all-reduce, another the memset, each on cudaStreamPerThread: two
 *            streams, they overlap
 *   pt_one   one thread both on cudaStreamPerThread: one stream, one after the other
 * Built with a C compiler against the CUDA headers. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static ncclComm_t comm;
static void *buf, *big;

/* order: 0 all-reduce then memset, 1 memset then all-reduce; ar/ms: which to issue */
static long long run(cudaStream_t s, int order, int ar, int ms)
{
    cudaDeviceSynchronize();
    long long t0 = now_ns();
    if (order == 1 && ms)
        cudaMemsetAsync(big, 0, 64 << 20, 0);
    if (ar)
        ncclAllReduce(buf, buf, 1 << 20, ncclInt8, ncclSum, comm, s);
    if (order == 0 && ms)
        cudaMemsetAsync(big, 0, 64 << 20, 0);
    cudaDeviceSynchronize();
    return now_ns() - t0;
}

static void *pt_allreduce(void *unused)
{
    (void)unused;
    ncclAllReduce(buf, buf, 1 << 20, ncclInt8, ncclSum, comm, cudaStreamPerThread);
    return NULL;
}

static void *pt_memset(void *unused)
{
    (void)unused;
    cudaMemsetAsync(big, 0, 64 << 20, cudaStreamPerThread);
    return NULL;
}

/* cudaStreamPerThread: threads 2 (each its own stream) or 1 (both calls on the main thread's) */
static long long run_pt(int threads)
{
    cudaDeviceSynchronize();
    long long t0 = now_ns();
    if (threads == 2) {
        pthread_t a, b;
        pthread_create(&a, NULL, pt_allreduce, NULL);
        pthread_join(a, NULL);
        pthread_create(&b, NULL, pt_memset, NULL);
        pthread_join(b, NULL);
    } else {
        pt_allreduce(NULL);
        pt_memset(NULL);
    }
    cudaDeviceSynchronize();
    return now_ns() - t0;
}

int main(void)
{
    int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
    ncclUniqueId id;
    ncclGetUniqueId(&id); /* as faults.c: the stand-ins' id is the same on every rank */
    ncclCommInitRank(&comm, n, id, rank);
    cudaMalloc(&buf, 1 << 20);
    cudaMalloc(&big, 64 << 20);
    cudaStream_t blk, nb;
    cudaStreamCreate(&blk);
    cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
    long long ar = run(blk, 0, 1, 0), ms = run(blk, 0, 0, 1);
    long long b0 = run(blk, 0, 1, 1), b1 = run(blk, 1, 1, 1);
    long long n0 = run(nb, 0, 1, 1), n1 = run(nb, 1, 1, 1);
    long long p2 = run_pt(2), p1 = run_pt(1);
    if (rank == 0)
        printf("ar %lld ms %lld blk %lld blk_rev %lld nb %lld nb_rev %lld pt %lld pt_one %lld\n", ar, ms, b0, b1, n0,
               n1, p2, p1);
    ncclCommDestroy(comm);
    return 0;
}
