/* client.h — the rank side of live mode (libetklive.so, preloaded into every rank): the
 * connection to the coordinator, the rank's virtual clock, and the node bookkeeping the stand-in
 * libraries (cudart.c, nccl.c, cublas.c) share. A process drives one GPU, or G with `etkit live
 * --gpus-per-process G` (device d of process p is the engine's rank p*G + d), from one thread at
 * a time (calls are serialized by a lock). */
#ifndef ETK_LIVE_CLIENT_H
#define ETK_LIVE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "live/proto.h"

#define ETL_API __attribute__((visibility("default")))
#define ETL_MAX_DEV 16 /* GPUs one process drives at most */

/* The coordinator's answer to HELLO (connects on first use; exits with a message when the
 * program was not started by `etkit live`). */
ETL_API const etk_live_reply *etl_config(void);
/* sizeof etk_live_msg and etk_live_reply: the Python client (live/torch) checks its mirrors */
ETL_API size_t etl_abi_size(int reply);
ETL_API int etl_rank(void);
/* GPUs this process drives (1, or --gpus-per-process); the current device (cudaSetDevice): the
 * calls below that take no device act on it. */
ETL_API int etl_gpus(void);
ETL_API int etl_device(void);
ETL_API void etl_set_device(int d);
ETL_API void etl_lock(void);
ETL_API void etl_unlock(void);
/* The rank's virtual host time now (ns). */
ETL_API uint64_t etl_now(void);
/* Record the host time since the last call as a CPU node; returns the id of the last CPU node
 * (the issue point new GPU work depends on). Call with the lock held. */
ETL_API uint64_t etl_host(void);
/* A fresh node id. */
ETL_API uint64_t etl_new_id(void);
/* Send one node (m->rank is filled in). */
ETL_API void etl_send(etk_live_msg *m);
/* Block until deps are done: a CPU node depending on the last CPU node and deps; returns the
 * new virtual time; dep_end (may be NULL) gets the end times of deps[0] and deps[1]. */
ETL_API uint64_t etl_wait(const uint64_t *deps, uint32_t n_deps, const char *call, uint64_t *dep_end);
/* The same on device dev's rank (deps are nodes of that device). */
ETL_API uint64_t etl_wait_dev(int dev, const uint64_t *deps, uint32_t n_deps, const char *call, uint64_t *dep_end);
/* Join a communicator: blocks until all `members` have joined; name gets the group name. */
ETL_API void etl_comm_init(const char *key, int members, int member, char *name, unsigned name_len);
/* Several joins at once (ncclCommInitAll, ncclCommInitRank calls grouped by one thread): join i
 * is member member[i] of members[i] under keys[i] for device dev[i]; one packet, then blocks
 * until every join is complete; names[i] gets its group's name. */
ETL_API void etl_comm_init_many(int count, const char *const *keys, const int *members, const int *member,
                                const int *dev, char (*names)[64]);
/* ncclCommSplit: blocks until every member of `parent` split; name "" when color < 0. */
ETL_API void etl_comm_split(const char *parent, int members, int member, int seq, int color, int key, char *name,
                            unsigned name_len, int *new_rank, int *new_size);
/* A poll that found nothing (MPI_Test, MPI_Iprobe): costs ns of host time and waits until the
 * engine reaches it, so a polling loop is blocked as far as the coordinator is concerned and its
 * clock moves on while it polls. */
ETL_API void etl_poll(const char *call, uint64_t ns);
/* A poll that asks (MPI_Test*, MPI_Iprobe on what the engine times): at the rank's host time now,
 * which of its nodes ids[0..n) (n <= 7, none 0) are done (bit k for ids[k]; a send: and matched by
 * a receive) and, with grp, whether a message to the rank on communicator grp from member src
 * with tag tag (-1: any) has arrived (bit n). One round trip, no virtual time. *early = 1 when
 * the answer came before the engine got there (ranks inside real calls hold it back): the bits
 * then say what was done by the engine's time, and a clear bit says nothing. */
ETL_API uint64_t etl_query(const char *call, const uint64_t *ids, uint32_t n, const char *grp, int src, int tag,
                           int *early);
/* Real monotonic time (ns), past the clock shim (clock_gettime reads the virtual clock in the
 * program's threads). */
ETL_API uint64_t etl_real_ns(void);
/* ns of host time (a poll that found nothing, after etl_query), no round trip. */
ETL_API void etl_charge(uint64_t ns);
/* Around a blocking call of another library (the real MPI call under the interposer): the
 * engine may run up to the rank's host time meanwhile; CPU time spent inside is not counted. */
ETL_API void etl_extern_enter(const char *call);
/* The same with ETK_LF_NOLATE: after the call the rank submits nothing dated before its return
 * but receive nodes (its send or collective node went in before the call). */
ETL_API void etl_extern_enter_flags(const char *call, unsigned flags);
/* The same for a call that, when it returns, waits for the nodes ids[0..n) it submitted before
 * (a collective's or sends'; at most ETK_LIVE_MAX_DEPS) and submits nothing else but, with
 * ETK_LF_NOLATE, receives: the engine runs on meanwhile until they are done (proto.h,
 * ETK_LM_EXTERN). */
ETL_API void etl_extern_enter_tied(const char *call, unsigned flags, const uint64_t *ids, uint32_t n);
ETL_API void etl_extern_leave(void);
/* "etkit live: rank R: ..." on stderr, exit status 3. */
ETL_API void etl_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "etkit live: NAME is not modelled", exit status 3. */
ETL_API void etl_not_modelled(const char *name) __attribute__((noreturn));

/* CUDA streams as the stand-ins see them (cudaStream_t points to one; NULL and cudaStreamLegacy
 * mean the legacy default stream of the current device, cudaStreamPerThread the calling thread's
 * own blocking stream on it). */
struct etk_cu_stream {
    uint64_t last; /* id of the last node issued to the stream (0: none) */
    unsigned flags;
    int priority;
    int dev;       /* the device it was created on */
};
ETL_API struct etk_cu_stream *etl_stream(void *stream);
/* The same where NULL means device dev's default stream (an NCCL call on a communicator's GPU). */
ETL_API struct etk_cu_stream *etl_stream_dev(void *stream, int dev);
/* Issue a GPU node on a stream (on the stream's device): deps = the device's last CPU node, the stream's last node and m's own;
 * the stream's last node becomes m. Returns m->id. Call with the lock held. */
ETL_API uint64_t etl_issue(void *stream, etk_live_msg *m);
/* A destroyed stream; wait for the work of every stream of the current device
 * (cudaDeviceSynchronize). */
ETL_API void etl_stream_forget(void *stream);
ETL_API uint64_t etl_sync_all(const char *call);

#endif
