/* cuda_abi.h — etkit's own ABI-compatible declarations of the CUDA runtime subset the stand-in
 * libcudart.so.13 implements (written from the documented API; no NVIDIA header is copied).
 * Layouts that programs read by offset (cudaDeviceProp) are checked against the real toolkit's
 * headers by tests/live/abi_check.sh where the toolkit is installed. */
#ifndef ETK_LIVE_CUDA_ABI_H
#define ETK_LIVE_CUDA_ABI_H

#include <stddef.h>

typedef int cudaError_t;
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
};

enum {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

enum {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrGlobalMemoryBusWidth = 37,
    cudaDevAttrL2CacheSize = 38,
    cudaDevAttrMaxThreadsPerMultiProcessor = 39,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

typedef struct etk_cu_stream *cudaStream_t;
typedef struct etk_cu_event *cudaEvent_t;
typedef void *cudaKernel_t;

typedef struct dim3 {
    unsigned int x, y, z;
} dim3;

/* The leading fields of cudaDeviceProp (CUDA 13) the stand-in fills; the rest is reserved
 * space of the real size (1008 bytes), zeroed. */
struct cudaDeviceProp {
    char name[256];
    unsigned char uuid[16];
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    size_t totalConstMem;
    int major;
    int minor;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int multiProcessorCount;
    unsigned char etk_rest[1008 - 388];
};

#endif
