/* cudart.c — the stand-in libcudart.so.13 (soname and symbol version of CUDA 13's runtime):
 * devices of the modelled GPU, a fake device address space with per-device accounting against
 * its HBM, copies and memsets timed over PCIe / HBM, streams, events, kernel launches (<<<>>> and
 * cudaLaunchKernel) sent to the coordinator as Chakra nodes, blocking calls answered in virtual
 * time. Device memory holds no data: copies to the host write zeros (docs/live.md). */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/client.h"
#include "live/cuda_abi.h"

#define API ETL_API
#define MAX_DEV 16
#define MAX_ALLOCS 65536
#define DEV_BASE 0x500000000000ull /* fake device addresses: 16 TiB per device from here */
#define DEV_SPAN 0x010000000000ull

#define cur_dev etl_device() /* the current device lives in the client (it picks the rank) */
static __thread cudaError_t last_err;
static uint64_t dev_used[MAX_DEV], dev_next[MAX_DEV];
static struct {
    uint64_t addr, bytes;
    int dev;
} allocs[MAX_ALLOCS];
static uint32_t n_allocs;

static cudaError_t ret(cudaError_t e)
{
    if (e)
        last_err = e;
    return e;
}

static int n_devices(void)
{
    /* a process driving several GPUs sees those; one driving one sees its node's */
    int n = etl_gpus() > 1 ? etl_gpus() : (int)etl_config()->local_world;
    return n < 1 ? 1 : n > MAX_DEV ? MAX_DEV : n;
}

API cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n)
        return ret(cudaErrorInvalidValue);
    *n = n_devices();
    return cudaSuccess;
}

API cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= n_devices())
        return ret(cudaErrorInvalidDevice);
    etl_lock();
    etl_set_device(d);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaGetDevice(int *d)
{
    if (!d)
        return ret(cudaErrorInvalidValue);
    *d = cur_dev;
    return cudaSuccess;
}

API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (!p)
        return ret(cudaErrorInvalidValue);
    if (d < 0 || d >= n_devices())
        return ret(cudaErrorInvalidDevice);
    const etk_live_reply *c = etl_config();
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", c->gpu_name);
    p->uuid[0] = (unsigned char)d;
    p->totalGlobalMem = c->hbm_bytes;
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = (int)c->cc_major;
    p->minor = (int)c->cc_minor;
    p->multiProcessorCount = (int)c->sms;
    return cudaSuccess;
}

API cudaError_t cudaDeviceGetAttribute(int *v, int attr, int d)
{
    if (!v)
        return ret(cudaErrorInvalidValue);
    if (d < 0 || d >= n_devices())
        return ret(cudaErrorInvalidDevice);
    const etk_live_reply *c = etl_config();
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = 48 * 1024; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMultiProcessorCount: *v = (int)c->sms; break;
    case cudaDevAttrComputeCapabilityMajor: *v = (int)c->cc_major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = (int)c->cc_minor; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    default: {
        char nm[64];
        snprintf(nm, sizeof nm, "cudaDeviceGetAttribute(attribute %d)", attr);
        etl_not_modelled(nm);
    }
    }
    return cudaSuccess;
}

/* ---------- memory ---------- */

/* A CPU node carrying the allocation change (the engine's memory-over-time report). */
static void mem_node(int64_t alloc, int64_t freed)
{
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    uint64_t c = etl_host();
    m.op = ETK_LM_NODE;
    m.id = etl_new_id();
    m.type = 4;
    m.flags = ETK_LF_CPU;
    m.deps[m.n_deps++] = c;
    m.mem_alloc = alloc;
    m.mem_free = freed;
    snprintf(m.name, sizeof m.name, alloc ? "cudaMalloc" : "cudaFree");
    etl_send(&m);
}

API cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (!p)
        return ret(cudaErrorInvalidValue);
    etl_lock();
    const etk_live_reply *c = etl_config();
    uint64_t b = (bytes + 511) & ~(uint64_t)511; /* 512-byte granules */
    if (dev_used[cur_dev] + b > c->hbm_bytes || n_allocs == MAX_ALLOCS) {
        etl_unlock();
        *p = NULL;
        return ret(cudaErrorMemoryAllocation);
    }
    uint64_t a = DEV_BASE + (uint64_t)cur_dev * DEV_SPAN + 4096 + dev_next[cur_dev];
    dev_next[cur_dev] += b ? b : 512;
    dev_used[cur_dev] += b;
    allocs[n_allocs].addr = a;
    allocs[n_allocs].bytes = b;
    allocs[n_allocs].dev = cur_dev;
    n_allocs++;
    if (b)
        mem_node((int64_t)b, 0);
    etl_unlock();
    *p = (void *)(uintptr_t)a;
    return cudaSuccess;
}

API cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    etl_lock();
    for (uint32_t i = 0; i < n_allocs; i++)
        if (allocs[i].addr == (uint64_t)(uintptr_t)p) {
            dev_used[allocs[i].dev] -= allocs[i].bytes;
            int prev = etl_device();
            etl_set_device(allocs[i].dev); /* the node goes to the allocation's GPU */
            if (allocs[i].bytes)
                mem_node(0, (int64_t)allocs[i].bytes);
            etl_set_device(prev);
            allocs[i] = allocs[--n_allocs];
            etl_unlock();
            return cudaSuccess;
        }
    etl_unlock();
    return ret(cudaErrorInvalidValue);
}

API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    const etk_live_reply *c = etl_config();
    if (free_b)
        *free_b = c->hbm_bytes - dev_used[cur_dev];
    if (total_b)
        *total_b = c->hbm_bytes;
    return cudaSuccess;
}

API cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    if (!p)
        return ret(cudaErrorInvalidValue);
    *p = calloc(1, bytes ? bytes : 1);
    return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

API cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    return cudaMallocHost(p, bytes);
}

API cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

static int is_dev(const void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    return a >= DEV_BASE && a < DEV_BASE + MAX_DEV * DEV_SPAN;
}

static uint64_t ns_of(uint64_t bytes, double Bps) { return Bps > 0 ? (uint64_t)ceil((double)bytes * 1e9 / Bps) : 0; }

/* One copy as a node: host<->device over PCIe (MEM_LOAD / MEM_STORE), device<->device read and
 * write over HBM. Returns the node id (0: a host copy, done at once). */
static uint64_t copy_node(void *dst, const void *src, size_t n, int kind, void *stream)
{
    const etk_live_reply *c = etl_config();
    int sd = is_dev(src), dd = is_dev(dst);
    if (kind == cudaMemcpyDefault)
        kind = sd && dd ? cudaMemcpyDeviceToDevice : sd ? cudaMemcpyDeviceToHost : dd ? cudaMemcpyHostToDevice
                                                                                      : cudaMemcpyHostToHost;
    if (kind == cudaMemcpyHostToHost) {
        memmove(dst, src, n);
        return 0;
    }
    if (kind == cudaMemcpyDeviceToHost)
        memset(dst, 0, n); /* device memory holds no data */
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.bytes = n;
    if (kind == cudaMemcpyDeviceToDevice) {
        m.type = 4;
        m.dur_ns = ns_of(2 * (uint64_t)n, c->hbm_Bps);
        snprintf(m.name, sizeof m.name, "memcpy DtoD");
    } else {
        m.type = kind == cudaMemcpyHostToDevice ? 2 : 3;
        m.dur_ns = ns_of(n, c->pcie_Bps);
        snprintf(m.name, sizeof m.name, "memcpy %s", kind == cudaMemcpyHostToDevice ? "HtoD" : "DtoH");
    }
    if (!m.dur_ns)
        m.dur_ns = 1;
    return etl_issue(stream, &m);
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t s)
{
    if (kind < 0 || kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidValue);
    etl_lock();
    copy_node(dst, src, n, kind, s);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
    if (kind < 0 || kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidValue);
    etl_lock();
    uint64_t id = copy_node(dst, src, n, kind, NULL);
    if (id)
        etl_wait(&id, 1, "cudaMemcpy", NULL);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    (void)p;
    (void)v;
    etl_lock();
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = 4;
    m.bytes = n;
    m.dur_ns = ns_of(n, etl_config()->hbm_Bps);
    if (!m.dur_ns)
        m.dur_ns = 1;
    snprintf(m.name, sizeof m.name, "memset");
    etl_issue(s, &m);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaMemset(void *p, int v, size_t n)
{
    cudaMemsetAsync(p, v, n, NULL);
    etl_lock();
    uint64_t id = etl_stream(NULL)->last;
    etl_wait(&id, 1, "cudaMemset", NULL);
    etl_unlock();
    return cudaSuccess;
}

/* ---------- streams and events ---------- */

API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int prio)
{
    if (!s)
        return ret(cudaErrorInvalidValue);
    struct etk_cu_stream *st = calloc(1, sizeof *st);
    if (!st)
        return ret(cudaErrorMemoryAllocation);
    st->flags = flags;
    st->priority = prio;
    st->dev = cur_dev;
    *s = (cudaStream_t)st;
    return cudaSuccess;
}

API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    return cudaStreamCreateWithPriority(s, flags, 0);
}

API cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithPriority(s, 0, 0); }

API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if ((uintptr_t)s > 2) {
        etl_lock();
        etl_stream_forget(s);
        etl_unlock();
        free(s);
    }
    return cudaSuccess;
}

API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return cudaSuccess;
}

static cudaError_t wait_stream(cudaStream_t s, const char *call)
{
    etl_lock();
    struct etk_cu_stream *st = etl_stream(s);
    uint64_t id = st->last;
    etl_wait_dev(st->dev, &id, 1, call, NULL);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaStreamSynchronize(cudaStream_t s) { return wait_stream(s, "cudaStreamSynchronize"); }

/* Polling: the query blocks until the work is done in virtual time and then reports it done,
 * so a polling loop ends at the work's virtual end time after one iteration (docs/live.md). */
API cudaError_t cudaStreamQuery(cudaStream_t s) { return wait_stream(s, "cudaStreamQuery"); }

struct etk_cu_event {
    uint64_t node; /* the marker node of the last record (0: never recorded) */
    unsigned flags;
    int dev;       /* the device of the stream it was recorded on */
};

API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    if (!e)
        return ret(cudaErrorInvalidValue);
    *e = calloc(1, sizeof **e);
    if (!*e)
        return ret(cudaErrorMemoryAllocation);
    (*e)->flags = flags;
    return cudaSuccess;
}

API cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

API cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!e)
        return ret(cudaErrorInvalidResourceHandle);
    etl_lock();
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = 1; /* METADATA: no stream, no time: it completes when the stream reaches it */
    snprintf(m.name, sizeof m.name, "event");
    e->node = etl_issue(s, &m);
    e->dev = etl_stream(s)->dev;
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned flags)
{
    (void)flags;
    return cudaEventRecord(e, s);
}

API cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!e)
        return ret(cudaErrorInvalidResourceHandle);
    etl_lock();
    etl_wait_dev(e->dev, &e->node, 1, "cudaEventSynchronize", NULL);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaEventQuery(cudaEvent_t e)
{
    if (!e)
        return ret(cudaErrorInvalidResourceHandle);
    etl_lock();
    etl_wait_dev(e->dev, &e->node, 1, "cudaEventQuery", NULL);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    if (!ms || !a || !b)
        return ret(cudaErrorInvalidValue);
    if (!a->node || !b->node)
        return ret(cudaErrorInvalidResourceHandle);
    if (a->dev != b->dev)
        return ret(cudaErrorInvalidResourceHandle); /* events of two devices */
    uint64_t d[2] = {a->node, b->node}, end[2];
    etl_lock();
    etl_wait_dev(a->dev, d, 2, "cudaEventElapsedTime", end);
    etl_unlock();
    *ms = (float)(((double)end[1] - (double)end[0]) / 1e6);
    return cudaSuccess;
}

API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    if (!e)
        return ret(cudaErrorInvalidResourceHandle);
    etl_lock();
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = 1;
    if (e->node && e->dev != etl_stream(s)->dev) {
        /* an event of another GPU (one process driving several): the engine's dependencies are
         * per GPU, so the host waits for the event (its virtual time, as cudaEventSynchronize)
         * and the stream's later work depends on the host from then on: it starts at the
         * event's time. Approximation: the host is held there too (said once). */
        static int said;
        if (!said++)
            fprintf(stderr, "etkit live: cudaStreamWaitEvent between GPUs (%d -> %d): modelled by holding the host "
                    "until the event completes (docs/live.md)\n", e->dev, etl_stream(s)->dev);
        etl_wait_dev(e->dev, &e->node, 1, "cudaStreamWaitEvent (event of another GPU)", NULL);
    } else
        m.deps[m.n_deps++] = e->node;
    snprintf(m.name, sizeof m.name, "stream waits event");
    etl_issue(s, &m);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaDeviceSynchronize(void)
{
    etl_lock();
    etl_sync_all("cudaDeviceSynchronize");
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_err;
    last_err = cudaSuccess;
    return e;
}

API cudaError_t cudaPeekAtLastError(void) { return last_err; }

API const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    default: return "unknown error";
    }
}

API const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
    }
}

API cudaError_t cudaDriverGetVersion(int *v)
{
    if (v)
        *v = 13000;
    return cudaSuccess;
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (v)
        *v = 13000;
    return cudaSuccess;
}

/* ---------- kernels: registration (nvcc -cudart shared) and launches ---------- */

#define MAX_FUNCS 4096
static struct {
    const void *host;
    const char *name;
} funcs[MAX_FUNCS];
static uint32_t n_funcs;
static void *fat_handle[1];

API void **__cudaRegisterFatBinary(void *fat)
{
    (void)fat;
    return fat_handle;
}

API void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
API void __cudaUnregisterFatBinary(void **h) { (void)h; }
API char __cudaInitModule(void **h)
{
    (void)h;
    return 1;
}

API void __cudaRegisterFunction(void **h, const char *host_fun, char *device_fun, const char *device_name,
                                int thread_limit, void *tid, void *bid, dim3 *bdim, dim3 *gdim, int *wsize)
{
    (void)h, (void)device_name, (void)thread_limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
    if (n_funcs < MAX_FUNCS) {
        funcs[n_funcs].host = host_fun;
        funcs[n_funcs].name = device_fun;
        n_funcs++;
    }
}

API void __cudaRegisterVar(void **h, char *host_var, char *device_address, const char *device_name, int ext,
                           size_t size, int constant, int global)
{
    (void)h, (void)host_var, (void)device_address, (void)device_name, (void)ext, (void)size, (void)constant,
        (void)global;
}

static __thread struct {
    dim3 grid, block;
    size_t shmem;
    void *stream;
} cfg_stack[16];
static __thread int cfg_n;

API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, void *stream)
{
    if (cfg_n == 16)
        etl_fatal("kernel launch configurations nested more than 16 deep");
    cfg_stack[cfg_n].grid = grid;
    cfg_stack[cfg_n].block = block;
    cfg_stack[cfg_n].shmem = shmem;
    cfg_stack[cfg_n].stream = stream;
    cfg_n++;
    return 0;
}

API cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream)
{
    if (!cfg_n)
        return ret(cudaErrorInvalidValue);
    cfg_n--;
    *grid = cfg_stack[cfg_n].grid;
    *block = cfg_stack[cfg_n].block;
    *shmem = cfg_stack[cfg_n].shmem;
    *(void **)stream = cfg_stack[cfg_n].stream;
    return cudaSuccess;
}

API cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *fun)
{
    if (k)
        *k = (cudaKernel_t)fun;
    return cudaSuccess;
}

static cudaError_t launch(const void *fun, dim3 grid, dim3 block, cudaStream_t s)
{
    const char *name = NULL;
    for (uint32_t i = 0; i < n_funcs && !name; i++)
        if (funcs[i].host == fun)
            name = funcs[i].name;
    etl_lock();
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = 4;
    m.flags = ETK_LF_KERNEL;
    if (name)
        snprintf(m.name, sizeof m.name, "%s", name);
    else
        snprintf(m.name, sizeof m.name, "kernel@%p", fun);
    m.m = (int64_t)grid.x * grid.y * grid.z;
    m.n = (int64_t)block.x * block.y * block.z;
    etl_issue(s, &m);
    etl_unlock();
    return cudaSuccess;
}

API cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    (void)args, (void)shmem;
    return launch(k, grid, block, s);
}

API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 grid, dim3 block, void **args, size_t shmem,
                                        cudaStream_t s)
{
    (void)args, (void)shmem;
    return launch(k, grid, block, s);
}

API cudaError_t cudaLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    (void)args, (void)shmem;
    return launch(f, grid, block, s);
}

/* ---------- declared, not modelled: one line naming the call, exit status 3 ---------- */
#define NOT_MODELLED(fn)                                                                          \
    API cudaError_t fn(void) { etl_not_modelled(#fn); }
NOT_MODELLED(cudaGraphLaunch)
NOT_MODELLED(cudaGraphInstantiate)
NOT_MODELLED(cudaStreamBeginCapture)
NOT_MODELLED(cudaStreamEndCapture)
NOT_MODELLED(cudaMallocManaged)
NOT_MODELLED(cudaMallocAsync)
NOT_MODELLED(cudaFreeAsync)
NOT_MODELLED(cudaMemcpy2D)
NOT_MODELLED(cudaMemcpy2DAsync)
NOT_MODELLED(cudaMemcpyPeer)
NOT_MODELLED(cudaMemcpyPeerAsync)
NOT_MODELLED(cudaLaunchCooperativeKernel)
NOT_MODELLED(cudaLaunchHostFunc)
NOT_MODELLED(cudaStreamAddCallback)
NOT_MODELLED(cudaIpcGetMemHandle)
NOT_MODELLED(cudaIpcOpenMemHandle)
NOT_MODELLED(cudaDeviceEnablePeerAccess)
NOT_MODELLED(cudaFuncGetAttributes)
NOT_MODELLED(cudaFuncSetAttribute)
NOT_MODELLED(cudaOccupancyMaxActiveBlocksPerMultiprocessor)
NOT_MODELLED(cudaHostRegister)
NOT_MODELLED(cudaPointerGetAttributes)
NOT_MODELLED(cudaLaunchKernelExC)
