/* nccl_multi.cu — nccl-tests' single-process mode for `etkit live` (tests/live/multi.sh): one
 * process drives every GPU it sees (cudaGetDeviceCount), one stream per GPU, and issues each
 * collective on all of them inside one ncclGroupStart/End (as nccl-tests -g does). argv[1]:
 *   all    ncclCommInitAll over this process's GPUs (one process);
 *   group  ncclGetUniqueId + ncclCommInitRank per GPU inside ncclGroupStart/End, global rank
 *          RANK*G + d of WORLD_SIZE*G (several processes of several GPUs each).
 * Times one all-reduce, all-gather and reduce-scatter per size with events on GPU 0's stream,
 * 8 B to 1 GiB; prints OP BYTES TIME_NS BUSBW_GBPS (busbw as nccl-tests) from process 0. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck.h"

#define MAXG 16
enum { AR, AG, RS, NOPS };
static const char *names[NOPS] = {"all_reduce", "all_gather", "reduce_scatter"};

int main(int argc, char **argv)
{
    int grouped = argc > 1 && !strcmp(argv[1], "group");
    int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    int procs = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
    int g;
    CK(cudaGetDeviceCount(&g));
    if (g > MAXG)
        g = MAXG;
    int n = grouped ? procs * g : g;
    ncclComm_t comm[MAXG];
    cudaStream_t st[MAXG];
    char *buf[MAXG];
    size_t max = (size_t)1 << 30;
    if (grouped) {
        ncclUniqueId id;
        CK(ncclGetUniqueId(&id)); /* etkit live: the same id in every process */
        CK(ncclGroupStart());
        for (int d = 0; d < g; d++) {
            CK(cudaSetDevice(d));
            CK(ncclCommInitRank(&comm[d], n, id, rank * g + d));
        }
        CK(ncclGroupEnd());
    } else {
        CK(ncclCommInitAll(comm, g, NULL));
    }
    for (int d = 0; d < g; d++) {
        int nr, r, dev;
        CK(ncclCommCount(comm[d], &nr));
        CK(ncclCommUserRank(comm[d], &r));
        CK(ncclCommCuDevice(comm[d], &dev));
        if (nr != n || r != (grouped ? rank * g + d : d) || dev != d) {
            fprintf(stderr, "communicator %d: %d ranks, rank %d, GPU %d\n", d, nr, r, dev);
            return 1;
        }
        CK(cudaSetDevice(d));
        CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
        CK(cudaMalloc((void **)&buf[d], max));
    }
    CK(cudaSetDevice(0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    if (rank == 0)
        printf("# %s, %d process(es) x %d GPUs\n", grouped ? "grouped ncclCommInitRank" : "ncclCommInitAll", procs, g);
    for (int op = 0; op < NOPS; op++)
        for (size_t bytes = 64; bytes <= max; bytes *= 8) {
            CK(cudaEventRecord(a, st[0]));
            CK(ncclGroupStart());
            for (int d = 0; d < g; d++) {
                if (op == AR)
                    CK(ncclAllReduce(buf[d], buf[d], bytes, ncclInt8, ncclSum, comm[d], st[d]));
                else if (op == AG)
                    CK(ncclAllGather(buf[d], buf[d], bytes / n, ncclInt8, comm[d], st[d]));
                else
                    CK(ncclReduceScatter(buf[d], buf[d], bytes / n, ncclInt8, ncclSum, comm[d], st[d]));
            }
            CK(ncclGroupEnd());
            CK(cudaEventRecord(b, st[0]));
            for (int d = 0; d < g; d++)
                CK(cudaStreamSynchronize(st[d]));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            double t_ns = ms * 1e6, f = op == AR ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
            if (rank == 0)
                printf("%s %zu %.1f %.4f\n", names[op], bytes, t_ns, bytes / t_ns * f);
        }
    for (int d = 0; d < g; d++) {
        CK(ncclCommDestroy(comm[d]));
        CK(cudaFree(buf[d]));
    }
    return 0;
}
