#define _POSIX_C_SOURCE 200809L
/* copies.c — copy engines under `etkit live` (tests/live/copies.sh), one rank, two non-blocking
 * streams s1, s2; each case is timed by the host's virtual clock from a cudaDeviceSynchronize to
 * the next. Prints, in ns:
 *   h2d       one host-to-device copy of 8 MiB alone
 *   ms        one memset of 256 MiB alone (the compute stream)
 *   h2d_ms    the copy on s1, the memset on s2: they overlap (a copy engine beside the SMs)
 *   h2d_h2d   two such copies, on s1 and s2: one engine per direction, they queue
 *   h2d_d2h   a copy each way, on s1 and s2: both engines at once
 *   same      the copy then the memset on s1: stream order, one after the other
 * Built with a C compiler against the CUDA headers. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *dev, *dev2, *big, *host, *host2;
static cudaStream_t s1, s2;

/* what: bit 0 copy H2D on s1, 1 memset on s2, 2 copy H2D on s2, 3 copy D2H on s2, 4 memset on s1 */
static long long run(int what)
{
    const size_t c = 8u << 20;
    cudaDeviceSynchronize();
    long long t0 = now_ns();
    if (what & 1)
        cudaMemcpyAsync(dev, host, c, cudaMemcpyHostToDevice, s1);
    if (what & 2)
        cudaMemsetAsync(big, 0, 256u << 20, s2);
    if (what & 4)
        cudaMemcpyAsync(dev2, host2, c, cudaMemcpyHostToDevice, s2);
    if (what & 8)
        cudaMemcpyAsync(host2, dev2, c, cudaMemcpyDeviceToHost, s2);
    if (what & 16)
        cudaMemsetAsync(big, 0, 256u << 20, s1);
    cudaDeviceSynchronize();
    return now_ns() - t0;
}

int main(void)
{
    const size_t c = 8u << 20;
    if (cudaMalloc(&dev, c) != cudaSuccess || cudaMalloc(&dev2, c) != cudaSuccess ||
        cudaMalloc(&big, 256u << 20) != cudaSuccess || cudaMallocHost(&host, c) != cudaSuccess ||
        cudaMallocHost(&host2, c) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "copies: CUDA setup failed\n");
        return 1;
    }
    long long h2d = run(1), ms = run(16), h2d_ms = run(1 | 2), h2d_h2d = run(1 | 4), h2d_d2h = run(1 | 8),
              same = run(1 | 16);
    printf("h2d %lld ms %lld h2d_ms %lld h2d_h2d %lld h2d_d2h %lld same %lld\n", h2d, ms, h2d_ms, h2d_h2d, h2d_d2h,
           same);
    return 0;
}
