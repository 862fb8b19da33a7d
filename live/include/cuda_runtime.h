/* cuda_runtime.h — etkit's own declarations of the CUDA runtime API subset that the live-mode
 * test programs (tests/live/) use, so they build with a C compiler where the CUDA toolkit is not
 * installed and run against the stand-in libcudart.so.13 (docs/live.md "Building without the
 * toolkit"). Written from the documented API; no NVIDIA header is copied. Each prototype is one
 * line beginning with ETK_CUDA_FN (tests/live/abi.sh redeclares them after the real headers: a
 * different type is a compile error), each constant is checked for the real value. */
#ifndef ETK_OWN_CUDA_RUNTIME_H
#define ETK_OWN_CUDA_RUNTIME_H
#define ETK_OWN_CUDA_HEADERS 1

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ETK_CUDA_FN
#define ETK_CUDA_FN extern
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaHostAllocDefault 0x00
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

ETK_CUDA_FN cudaError_t cudaGetDeviceCount(int *count);
ETK_CUDA_FN cudaError_t cudaSetDevice(int device);
ETK_CUDA_FN cudaError_t cudaGetDevice(int *device);
ETK_CUDA_FN cudaError_t cudaDeviceSynchronize(void);
ETK_CUDA_FN cudaError_t cudaGetLastError(void);
ETK_CUDA_FN const char *cudaGetErrorString(cudaError_t error);
ETK_CUDA_FN cudaError_t cudaMalloc(void **devPtr, size_t size);
ETK_CUDA_FN cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
ETK_CUDA_FN cudaError_t cudaMallocHost(void **ptr, size_t size);
ETK_CUDA_FN cudaError_t cudaFree(void *devPtr);
ETK_CUDA_FN cudaError_t cudaFreeHost(void *ptr);
ETK_CUDA_FN cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
ETK_CUDA_FN cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
ETK_CUDA_FN cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
ETK_CUDA_FN cudaError_t cudaMemset(void *devPtr, int value, size_t count);
ETK_CUDA_FN cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);
ETK_CUDA_FN cudaError_t cudaStreamCreate(cudaStream_t *pStream);
ETK_CUDA_FN cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
ETK_CUDA_FN cudaError_t cudaStreamDestroy(cudaStream_t stream);
ETK_CUDA_FN cudaError_t cudaStreamSynchronize(cudaStream_t stream);
ETK_CUDA_FN cudaError_t cudaStreamQuery(cudaStream_t stream);
ETK_CUDA_FN cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
ETK_CUDA_FN cudaError_t cudaEventCreate(cudaEvent_t *event);
ETK_CUDA_FN cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
ETK_CUDA_FN cudaError_t cudaEventDestroy(cudaEvent_t event);
ETK_CUDA_FN cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
ETK_CUDA_FN cudaError_t cudaEventQuery(cudaEvent_t event);
ETK_CUDA_FN cudaError_t cudaEventSynchronize(cudaEvent_t event);
ETK_CUDA_FN cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

#ifdef __cplusplus
}
#endif
#endif
