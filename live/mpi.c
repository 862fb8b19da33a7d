/* mpi.c — libetkmpi.so, the MPI interposer of live mode (PMPI over Debian's Open MPI), preloaded
 * with `etkit live --launcher -- mpirun ...`. Every wrapped call runs the real MPI call first, so
 * data and control flow stay real; its duration comes from etkit's network model: the call becomes
 * a SEND / RECV / COLL node on MPI_COMM_WORLD's group ("mpi:world") and, when it blocks, the rank
 * waits for that node in virtual time. While a rank is inside a real blocking call the engine may
 * run up to its host time (docs/live.md). MPI_Wtime reads the virtual clock. Point-to-point and
 * collectives on other communicators end the run with "... is not modelled". */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "live/client.h"

#define API ETL_API
static char world[64];
static struct etk_cu_stream mpi_stream; /* blocking MPI calls in program order */

/* etk_coll_type numbers (etkit/et.h) */
enum { C_ALL_REDUCE = 0, C_REDUCE = 1, C_ALL_GATHER = 2, C_GATHER = 3, C_SCATTER = 4, C_BROADCAST = 5,
       C_ALL_TO_ALL = 6, C_REDUCE_SCATTER = 7, C_BARRIER = 9 };

static void join_world(void)
{
    int r, n;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    etl_config();
    if (r != etl_rank())
        etl_fatal("MPI rank %d differs from the launcher's rank %d", r, etl_rank());
    etl_lock();
    etl_comm_init("mpi:world", n, r, world, sizeof world);
    etl_unlock();
}

API int MPI_Init(int *argc, char ***argv)
{
    etl_extern_enter("MPI_Init");
    int rc = PMPI_Init(argc, argv);
    etl_extern_leave();
    if (rc == MPI_SUCCESS)
        join_world();
    return rc;
}

API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    etl_extern_enter("MPI_Init_thread");
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    etl_extern_leave();
    if (rc == MPI_SUCCESS)
        join_world();
    return rc;
}

API double MPI_Wtime(void)
{
    etl_lock();
    double t = (double)etl_now() / 1e9;
    etl_unlock();
    return t;
}

API int MPI_Finalize(void)
{
    etl_extern_enter("MPI_Finalize");
    int rc = PMPI_Finalize();
    etl_extern_leave();
    return rc;
}
API double MPI_Wtick(void) { return 1e-9; }

static uint64_t bytes_of(int count, MPI_Datatype dt)
{
    int sz = 0;
    PMPI_Type_size(dt, &sz);
    return count > 0 && sz > 0 ? (uint64_t)count * (uint64_t)sz : 0;
}

static void check_comm(MPI_Comm comm, const char *call)
{
    int same = MPI_UNEQUAL;
    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
    if (same != MPI_IDENT) {
        char nm[128];
        snprintf(nm, sizeof nm, "%s on a communicator other than MPI_COMM_WORLD", call);
        etl_not_modelled(nm);
    }
}

/* A node; blocking: wait for it. deps0: an extra dependency (a receive's posting time). */
static uint64_t node(const char *call, int type, int coll, uint64_t bytes, int peer, int tag, uint64_t dep0,
                     int blocking)
{
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.coll = coll;
    m.bytes = bytes;
    m.peer = peer;
    m.tag = tag;
    snprintf(m.name, sizeof m.name, "%s", call);
    snprintf(m.group, sizeof m.group, "%s", world);
    etl_lock();
    uint64_t id;
    if (blocking) {
        id = etl_issue(&mpi_stream, &m);
        etl_wait(&id, 1, call, NULL);
    } else {
        /* non-blocking: not ordered after the other MPI calls, only after the host */
        uint64_t c = dep0 ? dep0 : etl_host();
        m.op = ETK_LM_NODE;
        m.id = id = etl_new_id();
        m.deps[m.n_deps++] = c;
        etl_send(&m);
    }
    etl_unlock();
    return id;
}

API int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    check_comm(comm, "MPI_Send");
    etl_extern_enter("MPI_Send");
    int rc = PMPI_Send(buf, count, dt, dest, tag, comm);
    etl_extern_leave();
    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)
        node("MPI_Send", 5, -1, bytes_of(count, dt), dest, tag, 0, 1);
    return rc;
}

API int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    check_comm(comm, "MPI_Recv");
    MPI_Status s;
    etl_extern_enter("MPI_Recv");
    int rc = PMPI_Recv(buf, count, dt, src, tag, comm, &s);
    etl_extern_leave();
    if (rc == MPI_SUCCESS && s.MPI_SOURCE != MPI_PROC_NULL) {
        int got = 0;
        PMPI_Get_count(&s, dt, &got);
        node("MPI_Recv", 6, -1, bytes_of(got, dt), s.MPI_SOURCE, s.MPI_TAG, 0, 1);
    }
    if (st != MPI_STATUS_IGNORE)
        *st = s;
    return rc;
}

API int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype sdt, int dest, int stag, void *rb, int rc_, MPI_Datatype rdt,
                     int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
    check_comm(comm, "MPI_Sendrecv");
    MPI_Status s;
    etl_extern_enter("MPI_Sendrecv");
    int rc = PMPI_Sendrecv(sb, sc, sdt, dest, stag, rb, rc_, rdt, src, rtag, comm, &s);
    etl_extern_leave();
    if (rc != MPI_SUCCESS)
        return rc;
    uint64_t ids[2];
    int n = 0;
    if (dest != MPI_PROC_NULL)
        ids[n++] = node("MPI_Sendrecv", 5, -1, bytes_of(sc, sdt), dest, stag, 0, 0);
    if (s.MPI_SOURCE != MPI_PROC_NULL) {
        int got = 0;
        PMPI_Get_count(&s, rdt, &got);
        ids[n++] = node("MPI_Sendrecv", 6, -1, bytes_of(got, rdt), s.MPI_SOURCE, s.MPI_TAG, 0, 0);
    }
    etl_lock();
    etl_wait(ids, (uint32_t)n, "MPI_Sendrecv", NULL);
    etl_unlock();
    if (st != MPI_STATUS_IGNORE)
        *st = s;
    return rc;
}

/* Non-blocking requests: a send's node is issued at once; a receive's when it completes (its
 * source may be a wildcard), depending on the host time it was posted at. */
#define MAX_REQ 4096
static struct {
    MPI_Request req;
    uint64_t node, posted;
    MPI_Datatype dt;
    int recv;
} reqs[MAX_REQ];
static int n_reqs;

static void track(MPI_Request r, uint64_t node_id, uint64_t posted, MPI_Datatype dt, int recv)
{
    if (n_reqs == MAX_REQ)
        etl_fatal("more than %d MPI requests in flight", MAX_REQ);
    reqs[n_reqs].req = r;
    reqs[n_reqs].node = node_id;
    reqs[n_reqs].posted = posted;
    reqs[n_reqs].dt = dt;
    reqs[n_reqs].recv = recv;
    n_reqs++;
}

API int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *r)
{
    check_comm(comm, "MPI_Isend");
    int rc = PMPI_Isend(buf, count, dt, dest, tag, comm, r);
    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)
        track(*r, node("MPI_Isend", 5, -1, bytes_of(count, dt), dest, tag, 0, 0), 0, dt, 0);
    return rc;
}

API int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *r)
{
    check_comm(comm, "MPI_Irecv");
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, r);
    if (rc == MPI_SUCCESS && src != MPI_PROC_NULL) {
        etl_lock();
        uint64_t posted = etl_host();
        etl_unlock();
        track(*r, 0, posted, dt, 1);
    }
    return rc;
}

/* The node of a completed request (its receive node issued now); 0 if none. */
static uint64_t completed(MPI_Request r, const MPI_Status *s)
{
    for (int i = 0; i < n_reqs; i++) {
        if (reqs[i].req != r)
            continue;
        uint64_t id = reqs[i].node;
        if (reqs[i].recv) {
            int got = 0;
            PMPI_Get_count(s, reqs[i].dt, &got);
            id = node("MPI_Irecv", 6, -1, bytes_of(got, reqs[i].dt), s->MPI_SOURCE, s->MPI_TAG, reqs[i].posted, 0);
        }
        reqs[i] = reqs[--n_reqs];
        return id;
    }
    return 0;
}

API int MPI_Wait(MPI_Request *r, MPI_Status *st)
{
    MPI_Request keep = *r;
    MPI_Status s;
    etl_extern_enter("MPI_Wait");
    int rc = PMPI_Wait(r, &s);
    etl_extern_leave();
    if (rc == MPI_SUCCESS) {
        uint64_t id = completed(keep, &s);
        etl_lock();
        etl_wait(&id, id ? 1 : 0, "MPI_Wait", NULL);
        etl_unlock();
    }
    if (st != MPI_STATUS_IGNORE)
        *st = s;
    return rc;
}

API int MPI_Waitall(int n, MPI_Request *r, MPI_Status *st)
{
    MPI_Request keep[n > 0 ? n : 1];
    MPI_Status s[n > 0 ? n : 1];
    for (int i = 0; i < n; i++)
        keep[i] = r[i];
    etl_extern_enter("MPI_Waitall");
    int rc = PMPI_Waitall(n, r, s);
    etl_extern_leave();
    if (rc == MPI_SUCCESS) {
        uint64_t ids[ETK_LIVE_MAX_DEPS - 1];
        uint32_t k = 0;
        for (int i = 0; i < n; i++) {
            uint64_t id = keep[i] == MPI_REQUEST_NULL ? 0 : completed(keep[i], &s[i]);
            if (id)
                ids[k++] = id;
            if (k == ETK_LIVE_MAX_DEPS - 1 || (i == n - 1 && k)) {
                etl_lock();
                etl_wait(ids, k, "MPI_Waitall", NULL);
                etl_unlock();
                k = 0;
            }
        }
    }
    if (st != MPI_STATUSES_IGNORE)
        for (int i = 0; i < n; i++)
            st[i] = s[i];
    return rc;
}

/* A collective: the real call (inside etl_extern_enter/leave), then its node, waited for. */
#define COLL(call, type, bytes, comm, real)                                                       \
    (etl_extern_enter(call), coll_done(call, type, bytes, comm, (real)))

static int coll_done(const char *call, int type, uint64_t bytes, MPI_Comm comm, int rc)
{
    etl_extern_leave();
    if (rc == MPI_SUCCESS)
        node(call, 7, type, bytes, 0, 0, 0, 1);
    (void)comm;
    return rc;
}

static int comm_size(MPI_Comm c)
{
    int n = 1;
    PMPI_Comm_size(c, &n);
    return n;
}

API int MPI_Barrier(MPI_Comm comm)
{
    check_comm(comm, "MPI_Barrier");
    return COLL("MPI_Barrier", C_BARRIER, 0, comm, PMPI_Barrier(comm));
}

API int MPI_Bcast(void *b, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    check_comm(comm, "MPI_Bcast");
    return COLL("MPI_Bcast", C_BROADCAST, bytes_of(count, dt), comm, PMPI_Bcast(b, count, dt, root, comm));
}

API int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    check_comm(comm, "MPI_Allreduce");
    return COLL("MPI_Allreduce", C_ALL_REDUCE, bytes_of(count, dt), comm, PMPI_Allreduce(s, r, count, dt, op, comm));
}

API int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    check_comm(comm, "MPI_Reduce");
    return COLL("MPI_Reduce", C_REDUCE, bytes_of(count, dt), comm, PMPI_Reduce(s, r, count, dt, op, root, comm));
}

/* Chakra comm_size: all-gather the per-rank input, all-to-all the whole per-rank buffer */
API int MPI_Allgather(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, MPI_Comm comm)
{
    check_comm(comm, "MPI_Allgather");
    return COLL("MPI_Allgather", C_ALL_GATHER, bytes_of(sc, sdt), comm, PMPI_Allgather(s, sc, sdt, r, rc_, rdt, comm));
}

API int MPI_Alltoall(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, MPI_Comm comm)
{
    check_comm(comm, "MPI_Alltoall");
    return COLL("MPI_Alltoall", C_ALL_TO_ALL, bytes_of(sc, sdt) * (uint64_t)comm_size(comm), comm,
                PMPI_Alltoall(s, sc, sdt, r, rc_, rdt, comm));
}

API int MPI_Reduce_scatter_block(const void *s, void *r, int rc_, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    check_comm(comm, "MPI_Reduce_scatter_block");
    return COLL("MPI_Reduce_scatter_block", C_REDUCE_SCATTER, bytes_of(rc_, dt) * (uint64_t)comm_size(comm), comm,
                PMPI_Reduce_scatter_block(s, r, rc_, dt, op, comm));
}

API int MPI_Gather(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, int root,
                   MPI_Comm comm)
{
    check_comm(comm, "MPI_Gather");
    return COLL("MPI_Gather", C_GATHER, bytes_of(sc, sdt) * (uint64_t)comm_size(comm), comm,
                PMPI_Gather(s, sc, sdt, r, rc_, rdt, root, comm));
}

API int MPI_Scatter(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, int root,
                    MPI_Comm comm)
{
    check_comm(comm, "MPI_Scatter");
    return COLL("MPI_Scatter", C_SCATTER, bytes_of(rc_, rdt) * (uint64_t)comm_size(comm), comm,
                PMPI_Scatter(s, sc, sdt, r, rc_, rdt, root, comm));
}
