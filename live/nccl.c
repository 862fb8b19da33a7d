/* nccl.c — the stand-in libnccl.so.2 (NCCL 2.28's API, unversioned symbols as the real one):
 * communicators are joined through the coordinator (each becomes a communicator group of the
 * engine), collectives and send/recv become COLL / SEND / RECV nodes on the caller's stream,
 * timed by the network model of `etkit sim`. Calls between ncclGroupStart and ncclGroupEnd are
 * issued together: none waits for another, and the stream continues after all of them.
 * Buffers hold no data (docs/live.md). ABI declarations are etkit's own. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/client.h"

#define API ETL_API

typedef int ncclResult_t;
enum { ncclSuccess = 0, ncclInvalidArgument = 4, ncclInvalidUsage = 5 };
typedef struct {
    char internal[128];
} ncclUniqueId;
typedef struct etk_nccl_comm *ncclComm_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct ncclConfig ncclConfig_t; /* accepted, not read */

struct etk_nccl_comm {
    char name[64];
    int nranks, rank, dev;
    int splits; /* ncclCommSplit calls so far (the same sequence on every member) */
};

/* etk_coll_type numbers (etkit/et.h) */
enum { C_ALL_REDUCE = 0, C_REDUCE = 1, C_ALL_GATHER = 2, C_GATHER = 3, C_SCATTER = 4, C_BROADCAST = 5,
       C_ALL_TO_ALL = 6, C_REDUCE_SCATTER = 7 };

static int id_count, all_count;
static int group_depth;
/* ncclCommInitRank(Config) inside a group (one thread initializing several GPUs' communicators):
 * joined together at ncclGroupEnd */
#define MAX_GROUP_INITS 64
static struct {
    struct etk_nccl_comm *c;
    char key[48];
} ginit[MAX_GROUP_INITS];
static int n_ginit;
#define MAX_GROUP_OPS 4096
static struct {
    void *stream;
    uint64_t id;
} gops[MAX_GROUP_OPS];
static int n_gops;

static size_t type_bytes(ncclDataType_t t)
{
    static const size_t sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return t >= 0 && t < 12 ? sz[t] : 0;
}

API ncclResult_t ncclGetVersion(int *v)
{
    if (!v)
        return ncclInvalidArgument;
    *v = 22809;
    return ncclSuccess;
}

/* The k-th id a process asks for is the same on every rank, so ranks may create it themselves;
 * ids passed between ranks by the program work as well. */
API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    if (!id)
        return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    etl_lock();
    snprintf(id->internal, sizeof id->internal, "id%d", id_count++);
    etl_unlock();
    return ncclSuccess;
}

static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank)
{
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    struct etk_nccl_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclInvalidArgument;
    char key[48]; /* the group name "nccl:ID#N" fits the protocol's 64 bytes */
    snprintf(key, sizeof key, "nccl:%.42s", id->internal);
    for (char *p = key + 5; *p; p++)
        if ((unsigned char)*p < 33 || (unsigned char)*p > 126)
            *p = '_';
    c->nranks = nranks;
    c->rank = rank;
    etl_lock();
    c->dev = etl_device(); /* the communicator's GPU: the current device */
    if (group_depth) {     /* joined at ncclGroupEnd, with the group's other inits */
        if (n_ginit == MAX_GROUP_INITS)
            etl_fatal("more than %d ncclCommInitRank calls in one NCCL group", MAX_GROUP_INITS);
        ginit[n_ginit].c = c;
        snprintf(ginit[n_ginit].key, sizeof ginit[n_ginit].key, "%s", key);
        n_ginit++;
    } else {
        etl_comm_init(key, nranks, rank, c->name, sizeof c->name);
    }
    etl_unlock();
    *comm = c;
    return ncclSuccess;
}

/* Join the communicators of calls 0..n: one packet, then wait for all (call with the lock held) */
static void init_together(struct etk_nccl_comm **cs, char (*keys)[48], int n)
{
    const char *kp[MAX_GROUP_INITS] = {0};
    int members[MAX_GROUP_INITS] = {0}, member[MAX_GROUP_INITS] = {0}, dev[MAX_GROUP_INITS] = {0};
    char names[MAX_GROUP_INITS][64];
    for (int i = 0; i < n; i++) {
        kp[i] = keys[i];
        members[i] = cs[i]->nranks;
        member[i] = cs[i]->rank;
        dev[i] = cs[i]->dev;
    }
    etl_comm_init_many(n, kp, members, member, dev, names);
    for (int i = 0; i < n; i++)
        snprintf(cs[i]->name, sizeof cs[i]->name, "%.63s", names[i]);
}

/* One process, ndev GPUs: communicator i is rank i of ndev on GPU devlist[i] (0..ndev-1 when
 * devlist is NULL). */
API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1 || ndev > MAX_GROUP_INITS)
        return ncclInvalidArgument;
    int gpus = etl_gpus();
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= gpus) {
            fprintf(stderr, "etkit live: ncclCommInitAll: GPU %d of %d, but the process drives %d (etkit live "
                    "--gpus-per-process G)\n", d, ndev, gpus);
            return ncclInvalidArgument;
        }
    }
    struct etk_nccl_comm *cs[MAX_GROUP_INITS];
    char keys[MAX_GROUP_INITS][48];
    for (int i = 0; i < ndev; i++)
        if (!(cs[i] = calloc(1, sizeof *cs[i]))) {
            while (i--)
                free(cs[i]);
            return ncclInvalidArgument;
        }
    etl_lock();
    int k = all_count++; /* the process's k-th: its own communicator, not shared with other processes */
    for (int i = 0; i < ndev; i++) {
        cs[i]->nranks = ndev;
        cs[i]->rank = i;
        cs[i]->dev = devlist ? devlist[i] : i;
        snprintf(keys[i], sizeof keys[i], "nccl:p%dall%d", etl_rank(), k);
    }
    init_together(cs, keys, ndev);
    etl_unlock();
    for (int i = 0; i < ndev; i++)
        comms[i] = cs[i];
    return ncclSuccess;
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return init_rank(comm, nranks, &id, rank);
}

API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *cfg)
{
    (void)cfg;
    return init_rank(comm, nranks, &id, rank);
}

/* Every member of comm calls it (collectively); members with the same color form a new
 * communicator ordered by (key, rank in comm); color NCCL_SPLIT_NOCOLOR (-1) gives NULL. */
API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *cfg)
{
    (void)cfg;
    if (!comm || !newcomm)
        return ncclInvalidArgument;
    struct etk_nccl_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclInvalidArgument;
    etl_lock();
    etl_comm_split(comm->name, comm->nranks, comm->rank, comm->splits++, color, key, c->name, sizeof c->name,
                   &c->rank, &c->nranks);
    etl_unlock();
    c->dev = comm->dev;
    if (color < 0) {
        free(c);
        *newcomm = NULL;
        return ncclSuccess;
    }
    *newcomm = c;
    return ncclSuccess;
}

API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    (void)comm;
    return ncclSuccess;
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

API ncclResult_t ncclCommCount(const ncclComm_t comm, int *n)
{
    if (!comm || !n)
        return ncclInvalidArgument;
    *n = comm->nranks;
    return ncclSuccess;
}

API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *r)
{
    if (!comm || !r)
        return ncclInvalidArgument;
    *r = comm->rank;
    return ncclSuccess;
}

API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *d)
{
    if (!comm || !d)
        return ncclInvalidArgument;
    *d = comm->dev;
    return ncclSuccess;
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *e)
{
    (void)comm;
    if (e)
        *e = ncclSuccess;
    return ncclSuccess;
}

API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    (void)comm, (void)size;
    if (handle)
        *handle = buff;
    return ncclSuccess;
}

API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    (void)comm, (void)handle;
    return ncclSuccess;
}

API const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default: return "unknown result code";
    }
}

API const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return "";
}

API ncclResult_t ncclGroupStart(void)
{
    etl_lock();
    group_depth++;
    etl_unlock();
    return ncclSuccess;
}

/* A zero-time node on stream s after the group's operations deps[0..nd) */
static uint64_t join_marker(void *s, const uint64_t *deps, int nd)
{
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = 1;
    memcpy(m.deps, deps, (size_t)nd * sizeof *deps);
    m.n_deps = (uint32_t)nd;
    snprintf(m.name, sizeof m.name, "ncclGroupEnd");
    return etl_issue(s, &m);
}

API ncclResult_t ncclGroupEnd(void)
{
    etl_lock();
    if (!group_depth) {
        etl_unlock();
        return ncclInvalidUsage;
    }
    if (--group_depth == 0 && n_ginit) {
        struct etk_nccl_comm *cs[MAX_GROUP_INITS];
        char keys[MAX_GROUP_INITS][48];
        for (int i = 0; i < n_ginit; i++) {
            cs[i] = ginit[i].c;
            memcpy(keys[i], ginit[i].key, sizeof keys[i]);
        }
        int n = n_ginit;
        n_ginit = 0;
        init_together(cs, keys, n);
    }
    if (group_depth == 0) {
        /* per stream: a marker after all of the group's operations on it */
        for (int i = 0; i < n_gops; i++) {
            if (!gops[i].id) /* already joined */
                continue;
            void *s = gops[i].stream;
            uint64_t deps[ETK_LIVE_MAX_DEPS - 2];
            int nd = 0;
            for (int j = i; j < n_gops; j++) {
                if (!gops[j].id || gops[j].stream != s)
                    continue;
                if (nd == ETK_LIVE_MAX_DEPS - 2) { /* full: one marker, then go on after it */
                    deps[0] = join_marker(s, deps, nd);
                    nd = 1;
                }
                deps[nd++] = gops[j].id;
                gops[j].id = 0;
            }
            join_marker(s, deps, nd);
        }
        n_gops = 0;
    }
    etl_unlock();
    return ncclSuccess;
}

static ncclResult_t issue(const char *call, int type, int coll, uint64_t bytes, int peer, ncclComm_t comm,
                          void *stream)
{
    if (!comm)
        return ncclInvalidArgument;
    etl_lock();
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.coll = coll;
    m.bytes = bytes;
    m.peer = peer; /* send/recv: a rank of the communicator (the coordinator maps it) */
    snprintf(m.name, sizeof m.name, "%s", call);
    snprintf(m.group, sizeof m.group, "%s", comm->name);
    if (group_depth) {
        if (n_gops == MAX_GROUP_OPS)
            etl_fatal("more than %d operations in one NCCL group", MAX_GROUP_OPS);
        struct etk_cu_stream *st = etl_stream_dev(stream, comm->dev);
        uint64_t prev = st->last;
        gops[n_gops].id = etl_issue(st, &m);
        gops[n_gops].stream = st;
        n_gops++;
        st->last = prev; /* group members do not wait for each other */
    } else {
        etl_issue(etl_stream_dev(stream, comm->dev), &m);
    }
    etl_unlock();
    return ncclSuccess;
}

#define COLL_BYTES(count, dt) ((uint64_t)(count) * type_bytes(dt))

API ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                               ncclComm_t comm, void *stream)
{
    (void)s, (void)r, (void)op;
    return issue("ncclAllReduce", 7, C_ALL_REDUCE, COLL_BYTES(count, dt), 0, comm, stream);
}

API ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root,
                            ncclComm_t comm, void *stream)
{
    (void)s, (void)r, (void)op, (void)root;
    return issue("ncclReduce", 7, C_REDUCE, COLL_BYTES(count, dt), 0, comm, stream);
}

API ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                               void *stream)
{
    (void)s, (void)r, (void)root;
    return issue("ncclBroadcast", 7, C_BROADCAST, COLL_BYTES(count, dt), 0, comm, stream);
}

API ncclResult_t ncclBcast(void *b, size_t count, ncclDataType_t dt, int root, ncclComm_t comm, void *stream)
{
    (void)b, (void)root;
    return issue("ncclBcast", 7, C_BROADCAST, COLL_BYTES(count, dt), 0, comm, stream);
}

/* Chakra comm_size: all-gather the per-rank input, reduce-scatter and all-to-all the whole
 * per-rank buffer (docs/cluster.md) */
API ncclResult_t ncclAllGather(const void *s, void *r, size_t sendcount, ncclDataType_t dt, ncclComm_t comm,
                               void *stream)
{
    (void)s, (void)r;
    return issue("ncclAllGather", 7, C_ALL_GATHER, COLL_BYTES(sendcount, dt), 0, comm, stream);
}

API ncclResult_t ncclReduceScatter(const void *s, void *r, size_t recvcount, ncclDataType_t dt, ncclRedOp_t op,
                                   ncclComm_t comm, void *stream)
{
    (void)s, (void)r, (void)op;
    if (!comm)
        return ncclInvalidArgument;
    return issue("ncclReduceScatter", 7, C_REDUCE_SCATTER, COLL_BYTES(recvcount, dt) * (uint64_t)comm->nranks, 0,
                 comm, stream);
}

/* all-to-all, gather, scatter: count is per rank; comm_size the whole buffer */
static ncclResult_t per_rank_coll(const char *call, int coll, uint64_t bytes, ncclComm_t comm, void *stream)
{
    if (!comm)
        return ncclInvalidArgument;
    return issue(call, 7, coll, bytes * (uint64_t)comm->nranks, 0, comm, stream);
}

API ncclResult_t ncclAlltoAll(const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t comm, void *stream)
{
    (void)s, (void)r;
    return per_rank_coll("ncclAlltoAll", C_ALL_TO_ALL, COLL_BYTES(count, dt), comm, stream);
}

API ncclResult_t ncclGather(const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                            void *stream)
{
    (void)s, (void)r, (void)root;
    return per_rank_coll("ncclGather", C_GATHER, COLL_BYTES(count, dt), comm, stream);
}

API ncclResult_t ncclScatter(const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                             void *stream)
{
    (void)s, (void)r, (void)root;
    return per_rank_coll("ncclScatter", C_SCATTER, COLL_BYTES(count, dt), comm, stream);
}

API ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, void *stream)
{
    (void)s;
    if (!comm || peer < 0 || peer >= comm->nranks)
        return ncclInvalidArgument;
    return issue("ncclSend", 5, -1, COLL_BYTES(count, dt), peer, comm, stream);
}

API ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, void *stream)
{
    (void)r;
    if (!comm || peer < 0 || peer >= comm->nranks)
        return ncclInvalidArgument;
    return issue("ncclRecv", 6, -1, COLL_BYTES(count, dt), peer, comm, stream);
}

#define NOT_MODELLED(fn)                                                                          \
    API ncclResult_t fn(void) { etl_not_modelled(#fn); }
NOT_MODELLED(ncclCommShrink)
NOT_MODELLED(ncclCommRevoke)
NOT_MODELLED(ncclCommInitRankScalable)
NOT_MODELLED(ncclCommWindowRegister)
NOT_MODELLED(ncclCommWindowDeregister)
NOT_MODELLED(ncclMemAlloc)
NOT_MODELLED(ncclMemFree)
NOT_MODELLED(ncclRedOpCreatePreMulSum)
NOT_MODELLED(ncclRedOpDestroy)
NOT_MODELLED(ncclGroupSimulateEnd)
