/* memory.c — a long-running small program for the coordinator's memory (tests/live/memory.sh):
 * ITERS times a 4 KiB cudaMemsetAsync on a stream, an event recorded after it and a
 * cudaEventQuery loop until the event is done (the coordinator answers the query at the event's
 * virtual end, so polls stays 0: one advance of the engine per iteration, HPCC's pattern of many
 * advances of a few nodes each), every 16th iteration a cudaStreamSynchronize. Prints the iterations, the polls,
 * the virtual time of the whole loop and, once the last synchronize has returned (the coordinator
 * has taken and run every node of the loop), the coordinator's peak RSS: VmHWM of the parent
 * process (`etkit live --ranks` forks the ranks itself). Built with a C compiler against the CUDA
 * headers (or etkit's own). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 1000;
    void *buf = NULL;
    cudaStream_t s;
    cudaEvent_t ev;
    if (cudaMalloc(&buf, 4096) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
        cudaEventCreate(&ev) != cudaSuccess) {
        fprintf(stderr, "memory: CUDA setup failed\n");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long polls = 0;
    for (long i = 0; i < iters; i++) {
        cudaMemsetAsync(buf, (int)(i & 0xff), 4096, s);
        cudaEventRecord(ev, s);
        while (cudaEventQuery(ev) == cudaErrorNotReady)
            polls++;
        if (i % 16 == 15)
            cudaStreamSynchronize(s);
    }
    cudaStreamSynchronize(s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char path[64], line[256];
    long hwm = -1;
    snprintf(path, sizeof path, "/proc/%ld/status", (long)getppid());
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &hwm) == 1)
            break;
    if (f)
        fclose(f);
    printf("iters %ld polls %ld loop_ns %lld coord_hwm_kb %ld\n", iters, polls,
           (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec), hwm);
    cudaEventDestroy(ev);
    cudaStreamDestroy(s);
    cudaFree(buf);
    return 0;
}
