/* nccl.h — etkit's own declarations of the NCCL 2.28 API subset that the live-mode test programs
 * (tests/live/) use, for building them with a C compiler without NCCL's headers; they run against
 * the stand-in libnccl.so.2 (docs/live.md). Written from the documented API; no NVIDIA header is
 * copied. One prototype per line after ETK_NCCL_FN, checked by tests/live/abi.sh against the real
 * header. ncclConfig_t is declared but not defined (pass NULL, as the tests do). */
#ifndef ETK_OWN_NCCL_H
#define ETK_OWN_NCCL_H
#define ETK_OWN_NCCL_HEADERS 1

#include <stddef.h>

#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ETK_NCCL_FN
#define ETK_NCCL_FN extern
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_UNIQUE_ID_BYTES 128

typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef struct ncclConfig_v22800 ncclConfig_t;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
    ncclInt8 = 0, ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2, ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6, ncclHalf = 6,
    ncclFloat32 = 7, ncclFloat = 7,
    ncclFloat64 = 8, ncclDouble = 8,
    ncclBfloat16 = 9
} ncclDataType_t;

ETK_NCCL_FN ncclResult_t ncclGetVersion(int *version);
ETK_NCCL_FN const char *ncclGetErrorString(ncclResult_t result);
ETK_NCCL_FN ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ETK_NCCL_FN ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ETK_NCCL_FN ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);
ETK_NCCL_FN ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
ETK_NCCL_FN ncclResult_t ncclCommDestroy(ncclComm_t comm);
ETK_NCCL_FN ncclResult_t ncclCommAbort(ncclComm_t comm);
ETK_NCCL_FN ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ETK_NCCL_FN ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ETK_NCCL_FN ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ETK_NCCL_FN ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream);
ETK_NCCL_FN ncclResult_t ncclGroupStart(void);
ETK_NCCL_FN ncclResult_t ncclGroupEnd(void);

#ifdef __cplusplus
}
#endif
#endif
