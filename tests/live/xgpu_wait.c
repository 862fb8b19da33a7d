/* xgpu_wait.c — cudaStreamWaitEvent across GPUs in one process (tests/live/xgpu_wait.sh, run with
 * --gpus-per-process 2): a 64 MiB memset on GPU 0's stream, an event recorded after it, GPU 1's
 * stream waits for that event, then a 64 MiB memset on GPU 1. Prints the elapsed time between
 * GPU 1's stream start (an event recorded before the wait) and its end ("wait ns"), and GPU 1's
 * memset alone without the wait ("alone ns"). */
#include <cuda_runtime.h>
#include <stdio.h>

#include "ck.h"

enum { M = 64 << 20 };

static double span(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    return (double)ms * 1e6;
}

int main(void)
{
    void *p0, *p1;
    cudaStream_t s0, s1;
    cudaEvent_t e, a, b;
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&p0, M));
    CK(cudaStreamCreate(&s0));
    CK(cudaEventCreate(&e));
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&p1, M));
    CK(cudaStreamCreate(&s1));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    /* alone: GPU 1's memset without a wait */
    CK(cudaEventRecord(a, s1));
    CK(cudaMemsetAsync(p1, 0, M, s1));
    CK(cudaEventRecord(b, s1));
    printf("alone %.0f\n", span(a, b));
    /* GPU 1 waits for GPU 0's memset */
    CK(cudaSetDevice(0));
    CK(cudaMemsetAsync(p0, 0, M, s0));
    CK(cudaEventRecord(e, s0));
    CK(cudaSetDevice(1));
    CK(cudaEventRecord(a, s1));
    CK(cudaStreamWaitEvent(s1, e, 0));
    CK(cudaMemsetAsync(p1, 0, M, s1));
    CK(cudaEventRecord(b, s1));
    printf("wait %.0f\n", span(a, b));
    return 0;
}
