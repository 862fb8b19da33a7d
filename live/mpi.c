/* mpi.c — libetkmpi.so, the MPI interposer of live mode (PMPI over Debian's Open MPI), preloaded
 * with `etkit live --launcher -- mpirun ...`. Every wrapped call runs the real MPI call first, so
 * data and control flow stay real; its duration comes from etkit's network model: the call becomes
 * a SEND / RECV / COLL node on MPI_COMM_WORLD's group ("mpi:world") and, when it blocks, the rank
 * waits for that node in virtual time. While a rank is inside a real blocking call the engine may
 * run up to its host time (docs/live.md). MPI_Wtime reads the virtual clock. Communicators made
 * by MPI_Comm_split / MPI_Comm_dup become groups of their own; calls on any other communicator end
 * the run with "... is not modelled". */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "live/client.h"

#define API ETL_API
static struct etk_cu_stream mpi_stream; /* blocking MPI calls in program order */

/* The communicators the engine knows: MPI_COMM_WORLD (entry 0, group "mpi:world"),
 * MPI_COMM_SELF (entry 1, a group of one) and those
 * split or duplicated from a known one (groups "<parent>.<k>sc<color>", docs/live.md). */
#define MAX_COMMS 1024
static struct {
    MPI_Comm comm;
    char name[64];
    int size, rank, splits;
} comms[MAX_COMMS];
static int n_comms;
#define world (comms[0].name)

/* etk_coll_type numbers (etkit/et.h) */
enum { C_ALL_REDUCE = 0, C_REDUCE = 1, C_ALL_GATHER = 2, C_GATHER = 3, C_SCATTER = 4, C_BROADCAST = 5,
       C_ALL_TO_ALL = 6, C_REDUCE_SCATTER = 7, C_BARRIER = 9 };

static int backoff_yields = 16; /* 0 when the ranks on this node outnumber its cores (backoff) */

static void join_world(void)
{
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* the test loops' short sleeps (below) sleep that long */
    int r, n;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    etl_config();
    /* oversubscribed (more ranks on this node than cores): waits sleep from the start (backoff) */
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long local = ls ? atol(ls) : n, cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && local > cores)
        backoff_yields = 0;
    if (r != etl_rank())
        etl_fatal("MPI rank %d differs from the launcher's rank %d", r, etl_rank());
    etl_lock();
    etl_comm_init("mpi:world", n, r, comms[0].name, sizeof comms[0].name);
    comms[0].comm = MPI_COMM_WORLD;
    comms[0].size = n;
    comms[0].rank = r;
    /* MPI_COMM_SELF: a group of one per rank (HPCC's single-process tests) */
    char key[48];
    snprintf(key, sizeof key, "mpi:self.%d", r);
    etl_comm_init(key, 1, 0, comms[1].name, sizeof comms[1].name);
    comms[1].comm = MPI_COMM_SELF;
    comms[1].size = 1;
    comms[1].rank = 0;
    n_comms = 2;
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

/* Open MPI's finalize waits for every rank (a fence): timed as a barrier on MPI_COMM_WORLD, tied
 * to it as a collective is. Untied, a rank inside it held the engine at its host time while the
 * ranks it waited for still waited in virtual time for what came before (a 4-rank ring's
 * MPI_Reduce, then MPI_Finalize: the run stopped). */
static uint64_t node_on(const char *grp, const char *call, int type, int coll, uint64_t bytes, int peer, int tag,
                        uint64_t dep0, int blocking);
static int bsend_progress(int all);
API int MPI_Finalize(void)
{
    uint64_t id = n_comms ? node_on(world, "MPI_Finalize", 7, C_BARRIER, 0, 0, 0, 0, 0) : 0;
    etl_extern_enter_tied("MPI_Finalize", 0, &id, id ? 1 : 0);
    bsend_progress(1);
    int rc = PMPI_Finalize();
    etl_extern_leave();
    if (id) {
        etl_lock();
        etl_wait(&id, 1, "MPI_Finalize", NULL);
        etl_unlock();
    }
    return rc;
}
API double MPI_Wtick(void) { return 1e-9; }

static uint64_t bytes_of(int count, MPI_Datatype dt)
{
    int sz = 0;
    PMPI_Type_size(dt, &sz);
    return count > 0 && sz > 0 ? (uint64_t)count * (uint64_t)sz : 0;
}

/* The engine's group of comm; a communicator it does not know ends the run. */
static const char *check_comm(MPI_Comm comm, const char *call)
{
    for (int i = 0; i < n_comms; i++)
        if (comms[i].comm == comm)
            return comms[i].name;
    int same = MPI_UNEQUAL;
    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
    if (same == MPI_IDENT && n_comms)
        return world;
    char nm[160];
    snprintf(nm, sizeof nm, "%s on a communicator not made by MPI_Comm_split or MPI_Comm_dup", call);
    etl_not_modelled(nm);
}

/* A node on group grp; blocking: wait for it. deps0: an extra dependency (a receive's posting
 * time). */
static uint64_t node_on(const char *grp, const char *call, int type, int coll, uint64_t bytes, int peer, int tag,
                        uint64_t dep0, int blocking)
{
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.coll = coll;
    m.bytes = bytes;
    m.peer = peer;
    m.tag = tag;
    snprintf(m.name, sizeof m.name, "%s", call);
    snprintf(m.group, sizeof m.group, "%s", grp);
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

/* Blocking real calls are made of their non-blocking forms and a test loop that sleeps between
 * tests (2 us doubling to 1,024 us), after a few quick ones that yield when the node has a core
 * for every rank: Open MPI's own blocking wait spins, and a spinning rank takes the CPU the
 * coordinator and the rank it waits for need (the reply it waits for passes through both).
 * Doubling keeps a wait at most about twice its real length (plus the first sleeps); the 1 ms cap
 * bounds what a long wait costs the host. Until s26 every wait began with 16 yields and the sleeps
 * stopped at 64 us: on 64 ranks of HPCC on the 2-core machine (perf of a rank in the ping-pongs)
 * half of the ranks' CPU went to sched_yield and a quarter to the short sleeps, 1.6 cores in all,
 * while the coordinator, which every message passes through, got 0.2. */
#define BACKOFF_MAX_SHIFT 9 /* 2 << 9 = 1,024 us */
static void backoff(int *k)
{
    if (++*k < backoff_yields) {
        sched_yield();
        return;
    }
    int sh = *k - backoff_yields < BACKOFF_MAX_SHIFT ? *k - backoff_yields : BACKOFF_MAX_SHIFT;
    long us = 2L << sh;
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
}

static int wait1(MPI_Request *r, MPI_Status *s)
{
    int flag = 0, k = 0, rc;
    while ((rc = PMPI_Test(r, &flag, s)) == MPI_SUCCESS && !flag)
        backoff(&k);
    return rc;
}

/* MPI_Send is buffered, as MPI lets it be: the data are packed into a copy sent with a real
 * MPI_Isend, and the call returns when the engine's send node ends (sends are eager in the
 * engine). A real blocking send of a large message waits for the receiver to post its receive;
 * with HPL on 2 x 2 ranks the receiver was still waiting in virtual time for an earlier message,
 * which the engine, held at the end of the sender's node, never delivered (the run livelocked,
 * the others polling). Copies are freed as their sends complete (tested at every MPI_Send) and
 * all are completed in MPI_Finalize. MPI_Ssend stays synchronous. */
#define MAX_BSEND 4096
static struct {
    MPI_Request q;
    void *copy;
} bsends[MAX_BSEND];
static int n_bsends;

static int bsend_progress(int all)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n_bsends;) {
        int flag = 0;
        if (all)
            rc = wait1(&bsends[i].q, MPI_STATUS_IGNORE), flag = 1;
        else
            PMPI_Test(&bsends[i].q, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            i++;
            continue;
        }
        free(bsends[i].copy);
        bsends[i] = bsends[--n_bsends];
    }
    return rc;
}

static int bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    bsend_progress(0);
    if (n_bsends == MAX_BSEND) {
        etl_extern_enter("MPI_Send (earlier buffered sends)");
        PMPI_Wait(&bsends[0].q, MPI_STATUS_IGNORE);
        etl_extern_leave();
        bsend_progress(0);
    }
    int size = 0, pos = 0, rc = PMPI_Pack_size(count, dt, comm, &size);
    void *copy = rc == MPI_SUCCESS ? malloc(size > 0 ? (size_t)size : 1) : NULL;
    if (rc != MPI_SUCCESS || !copy) {
        free(copy);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    if ((rc = PMPI_Pack(buf, count, dt, copy, size, &pos, comm)) == MPI_SUCCESS &&
        (rc = PMPI_Isend(copy, pos, MPI_PACKED, dest, tag, comm, &bsends[n_bsends].q)) == MPI_SUCCESS) {
        bsends[n_bsends++].copy = copy;
        return rc;
    }
    free(copy);
    return rc;
}

/* Blocking send: MPI_Send (buffered, above) and MPI_Ssend (timed alike: the transfer ends when the
 * network model says). */
static int send_common(const char *call, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                       MPI_Comm comm, int sync)
{
    const char *g = check_comm(comm, call);
    /* the send's node goes in first; not ETK_LF_NOLATE: it may complete in the engine while the
     * rank is still inside the real call, and the rank's clock would then lag the engine's */
    uint64_t id = dest != MPI_PROC_NULL ? node_on(g, call, 5, -1, bytes_of(count, dt), dest, tag, 0, 0) : 0;
    if (!sync && dest != MPI_PROC_NULL) {
        int rc = bsend(buf, count, dt, dest, tag, comm);
        etl_lock();
        etl_wait(&id, 1, call, NULL);
        etl_unlock();
        return rc;
    }
    etl_extern_enter_tied(call, 0, &id, id ? 1 : 0);
    MPI_Request q;
    int rc = sync ? PMPI_Issend(buf, count, dt, dest, tag, comm, &q) : PMPI_Isend(buf, count, dt, dest, tag, comm, &q);
    if (rc == MPI_SUCCESS)
        rc = wait1(&q, MPI_STATUS_IGNORE);
    etl_extern_leave();
    etl_lock();
    etl_wait(&id, id ? 1 : 0, call, NULL);
    etl_unlock();
    return rc;
}

API int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_common("MPI_Send", buf, count, dt, dest, tag, comm, 0);
}

API int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_common("MPI_Ssend", buf, count, dt, dest, tag, comm, 1);
}

/* Receives with a named source and tag go into the engine when they are posted, as sends do
 * (a node depending on the host time then), so the engine matches them exactly and a rank inside
 * a real call holds nothing back for them: HPCC's rings on 4+ ranks, where a rank in a real
 * MPI_Waitall held the engine at its host time for a receive it would submit only on return,
 * while the neighbours it waited for waited in virtual time for the engine (docs/live.md).
 * A receive with MPI_ANY_SOURCE or MPI_ANY_TAG goes in when it completes (its source and tag
 * known then); while one such "late" receive is outstanding that could match the same messages
 * (same communicator, its source MPI_ANY_SOURCE or the same, its tag MPI_ANY_TAG or the same),
 * a receive goes in late too, so that the engine's channels see the receives in the order MPI
 * matched them. Until s26 every receive went late while any late one was outstanding: a wildcard
 * receive of another tag then made a ring's receives late, and with host time on the ring stopped
 * (tests/live/mpi_bidir.c W = 1, docs/live.md). */
static int n_late; /* late receives posted and not yet completed */
static int early_recv(const char *g, int src, int tag);

API int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    const char *g = check_comm(comm, "MPI_Recv");
    MPI_Status s;
    if (src != MPI_PROC_NULL && early_recv(g, src, tag)) {
        uint64_t id = node_on(g, "MPI_Recv", 6, -1, bytes_of(count, dt), src, tag, 0, 0);
        etl_extern_enter_tied("MPI_Recv", 0, &id, 1);
        MPI_Request q;
        int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, &q);
        if (rc == MPI_SUCCESS)
            rc = wait1(&q, &s);
        etl_extern_leave();
        etl_lock();
        etl_wait(&id, 1, "MPI_Recv", NULL);
        etl_unlock();
        if (st != MPI_STATUS_IGNORE)
            *st = s;
        return rc;
    }
    etl_extern_enter_flags("MPI_Recv", ETK_LF_NOLATE);
    MPI_Request q;
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, &q);
    if (rc == MPI_SUCCESS)
        rc = wait1(&q, &s);
    etl_extern_leave();
    if (rc == MPI_SUCCESS && s.MPI_SOURCE != MPI_PROC_NULL) {
        int got = 0;
        PMPI_Get_count(&s, dt, &got);
        node_on(g, "MPI_Recv", 6, -1, bytes_of(got, dt), s.MPI_SOURCE, s.MPI_TAG, 0, 1);
    }
    if (st != MPI_STATUS_IGNORE)
        *st = s;
    return rc;
}

API int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype sdt, int dest, int stag, void *rb, int rc_, MPI_Datatype rdt,
                     int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
    const char *g = check_comm(comm, "MPI_Sendrecv");
    MPI_Status s;
    uint64_t ids[2];
    int n = 0, early = src != MPI_PROC_NULL && early_recv(g, src, rtag);
    if (dest != MPI_PROC_NULL)
        ids[n++] = node_on(g, "MPI_Sendrecv", 5, -1, bytes_of(sc, sdt), dest, stag, 0, 0);
    if (early)
        ids[n++] = node_on(g, "MPI_Sendrecv", 6, -1, bytes_of(rc_, rdt), src, rtag, 0, 0);
    /* a late receive goes in after the call */
    etl_extern_enter_tied("MPI_Sendrecv", early ? 0 : ETK_LF_NOLATE, ids, (uint32_t)n);
    MPI_Request q[2];
    MPI_Status qs[2];
    int rc = PMPI_Irecv(rb, rc_, rdt, src, rtag, comm, &q[0]);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Isend(sb, sc, sdt, dest, stag, comm, &q[1]);
    for (int flag = 0, k = 0; rc == MPI_SUCCESS && !flag;) {
        rc = PMPI_Testall(2, q, &flag, qs);
        if (rc == MPI_SUCCESS && !flag)
            backoff(&k);
    }
    s = qs[0];
    etl_extern_leave();
    if (rc != MPI_SUCCESS)
        return rc;
    if (!early && s.MPI_SOURCE != MPI_PROC_NULL) {
        int got = 0;
        PMPI_Get_count(&s, rdt, &got);
        ids[n++] = node_on(g, "MPI_Sendrecv", 6, -1, bytes_of(got, rdt), s.MPI_SOURCE, s.MPI_TAG, 0, 0);
    }
    etl_lock();
    etl_wait(ids, (uint32_t)n, "MPI_Sendrecv", NULL);
    etl_unlock();
    if (st != MPI_STATUS_IGNORE)
        *st = s;
    return rc;
}

/* Non-blocking requests: a send's node is issued at once, and so is a receive's that names its
 * source and tag (early_recv); a late receive's when it completes (its source may be a
 * wildcard), depending on the host time it was posted at. Open MPI hands out one shared handle
 * for sends that completed at once (8 B eager sends: the same MPI_Request for all), so several
 * entries may have the same handle: each call takes distinct entries, oldest first. */
#define MAX_REQ 4096
static struct {
    MPI_Request req;
    uint64_t node, posted;
    MPI_Datatype dt;
    int recv; /* a late receive (its node goes in when it completes) */
    int src, tag; /* a late receive's, as posted (wildcards) */
    const char *grp;
} reqs[MAX_REQ];
static int n_reqs;

static int early_recv(const char *g, int src, int tag)
{
    if (src == MPI_ANY_SOURCE || tag == MPI_ANY_TAG)
        return 0;
    for (int i = 0; n_late && i < n_reqs; i++)
        if (reqs[i].recv && !strcmp(reqs[i].grp, g) && (reqs[i].src == MPI_ANY_SOURCE || reqs[i].src == src) &&
            (reqs[i].tag == MPI_ANY_TAG || reqs[i].tag == tag))
            return 0;
    return 1;
}

static void track(MPI_Request r, uint64_t node_id, uint64_t posted, MPI_Datatype dt, int recv, const char *grp)
{
    if (n_reqs == MAX_REQ)
        etl_fatal("more than %d MPI requests in flight", MAX_REQ);
    reqs[n_reqs].req = r;
    reqs[n_reqs].node = node_id;
    reqs[n_reqs].posted = posted;
    reqs[n_reqs].dt = dt;
    reqs[n_reqs].recv = recv;
    reqs[n_reqs].grp = grp;
    n_reqs++;
}

static int isend_common(const char *call, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                        MPI_Comm comm, MPI_Request *r, int sync)
{
    const char *g = check_comm(comm, call);
    int rc = sync ? PMPI_Issend(buf, count, dt, dest, tag, comm, r) : PMPI_Isend(buf, count, dt, dest, tag, comm, r);
    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)
        track(*r, node_on(g, call, 5, -1, bytes_of(count, dt), dest, tag, 0, 0), 0, dt, 0, g);
    return rc;
}

API int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *r)
{
    return isend_common("MPI_Isend", buf, count, dt, dest, tag, comm, r, 0);
}

API int MPI_Issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *r)
{
    return isend_common("MPI_Issend", buf, count, dt, dest, tag, comm, r, 1);
}

API int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *r)
{
    const char *g = check_comm(comm, "MPI_Irecv");
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, r);
    if (rc == MPI_SUCCESS && src != MPI_PROC_NULL) {
        if (early_recv(g, src, tag)) {
            track(*r, node_on(g, "MPI_Irecv", 6, -1, bytes_of(count, dt), src, tag, 0, 0), 0, dt, 0, g);
            return rc;
        }
        etl_lock();
        uint64_t posted = etl_host();
        etl_unlock();
        track(*r, 0, posted, dt, 1, g);
        reqs[n_reqs - 1].src = src;
        reqs[n_reqs - 1].tag = tag;
        n_late++;
    }
    return rc;
}

/* ETK_LF_NOLATE for a wait on requests r[0..n): only when all are late receives (their nodes go
 * in after the call, with the wait); a send's or early receive's node is in already and may
 * complete meanwhile. */
static unsigned recv_only(const MPI_Request *r, int n)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n_reqs; i++)
            if (reqs[i].req == r[j] && !reqs[i].recv)
                return 0;
    return ETK_LF_NOLATE;
}

/* The entry of handle r not yet taken (taken[i]: entry i is), oldest first; -1 if none. */
static int find_req(MPI_Request r, const unsigned char *taken)
{
    for (int i = 0; r != MPI_REQUEST_NULL && i < n_reqs; i++)
        if (reqs[i].req == r && !(taken && taken[i]))
            return i;
    return -1;
}

/* MPI_Wait / MPI_Waitall on requests r[0..n): when it returns, the call waits for the nodes of
 * its sends (in already) and submits those of its receives. Tied to the sends (the engine runs
 * on while they are not done), ETK_LF_NOLATE when there are receives; more sends than a message
 * carries: the engine is held at the rank's host time (recv_only). Requests we do not track
 * submit nothing. */
static void wait_enter(const char *call, const MPI_Request *r, int n)
{
    uint64_t ids[ETK_LIVE_MAX_DEPS];
    uint32_t k = 0;
    unsigned flags = 0;
    unsigned char taken[MAX_REQ];
    memset(taken, 0, (size_t)n_reqs);
    for (int j = 0; j < n; j++) {
        int i = find_req(r[j], taken);
        if (i < 0)
            continue;
        taken[i] = 1;
        if (reqs[i].recv)
            flags = ETK_LF_NOLATE;
        else if (k == ETK_LIVE_MAX_DEPS) {
            etl_extern_enter_flags(call, recv_only(r, n));
            return;
        } else if (reqs[i].node)
            ids[k++] = reqs[i].node;
    }
    if (k)
        etl_extern_enter_tied(call, flags, ids, k);
    else
        etl_extern_enter_flags(call, recv_only(r, n));
}

/* The node of a completed request (its receive node issued now); 0 if none (not ours, or
 * cancelled). */
static uint64_t completed(MPI_Request r, const MPI_Status *s)
{
    int i = find_req(r, NULL);
    if (i < 0)
        return 0;
    uint64_t id = reqs[i].node;
    int cancelled = 0;
    PMPI_Test_cancelled(s, &cancelled);
    if (reqs[i].recv) {
        n_late--;
        if (!cancelled) {
            int got = 0;
            PMPI_Get_count(s, reqs[i].dt, &got);
            id = node_on(reqs[i].grp, "MPI_Irecv", 6, -1, bytes_of(got, reqs[i].dt), s->MPI_SOURCE, s->MPI_TAG,
                         reqs[i].posted, 0);
        }
    }
    /* in order: entries of a shared handle stay oldest first */
    memmove(&reqs[i], &reqs[i + 1], (size_t)(n_reqs - i - 1) * sizeof reqs[0]);
    n_reqs--;
    return cancelled ? 0 : id;
}

/* Wait in virtual time for the requests keep[idx[0..n)] that completed (statuses s[idx[..]]). */
static void wait_done(const char *call, int n, const int *idx, const MPI_Request *keep, const MPI_Status *s)
{
    uint64_t ids[ETK_LIVE_MAX_DEPS - 1];
    uint32_t k = 0;
    int waited = 0;
    for (int j = 0; j < n; j++) {
        int i = idx ? idx[j] : j;
        uint64_t id = keep[i] == MPI_REQUEST_NULL ? 0 : completed(keep[i], &s[j]);
        if (id)
            ids[k++] = id;
        if (k == ETK_LIVE_MAX_DEPS - 1 || (j == n - 1 && (k || !waited))) {
            etl_lock();
            etl_wait(ids, k, call, NULL);
            etl_unlock();
            k = 0;
            waited = 1;
        }
    }
}

API int MPI_Wait(MPI_Request *r, MPI_Status *st)
{
    MPI_Request keep = *r;
    MPI_Status s;
    wait_enter("MPI_Wait", r, 1);
    int rc = wait1(r, &s);
    etl_extern_leave();
    if (rc == MPI_SUCCESS)
        wait_done("MPI_Wait", 1, NULL, &keep, &s);
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
    wait_enter("MPI_Waitall", r, n);
    int rc, flag = 0, k = 0;
    while ((rc = PMPI_Testall(n, r, &flag, s)) == MPI_SUCCESS && !flag)
        backoff(&k);
    etl_extern_leave();
    if (rc == MPI_SUCCESS && n > 0)
        wait_done("MPI_Waitall", n, NULL, keep, s);
    if (st != MPI_STATUSES_IGNORE)
        for (int i = 0; i < n; i++)
            st[i] = s[i];
    return rc;
}

/* Waitany / Waitsome: tied to any of the requests' nodes (ETK_LF_ANY) when the engine times all
 * of them (no receive with wildcards, none etkit did not make), else as an untied real call. */
static void wait_enter_any(const char *call, const MPI_Request *r, int n)
{
    uint64_t ids[ETK_LIVE_MAX_DEPS];
    uint32_t k = 0;
    unsigned char taken[MAX_REQ];
    memset(taken, 0, (size_t)n_reqs);
    for (int j = 0; j < n; j++) {
        if (r[j] == MPI_REQUEST_NULL)
            continue;
        int i = find_req(r[j], taken);
        if (i < 0 || !reqs[i].node || k == ETK_LIVE_MAX_DEPS) {
            etl_extern_enter_flags(call, recv_only(r, n));
            return;
        }
        taken[i] = 1;
        ids[k++] = reqs[i].node;
    }
    if (k)
        etl_extern_enter_tied(call, ETK_LF_ANY, ids, k);
    else
        etl_extern_enter_flags(call, recv_only(r, n));
}

API int MPI_Waitany(int n, MPI_Request *r, int *index, MPI_Status *st)
{
    MPI_Request keep[n > 0 ? n : 1];
    for (int i = 0; i < n; i++)
        keep[i] = r[i];
    MPI_Status s;
    wait_enter_any("MPI_Waitany", r, n);
    int rc, flag = 0, k = 0; /* PMPI_Waitany spins: a test loop that sleeps (backoff) */
    while ((rc = PMPI_Testany(n, r, index, &flag, &s)) == MPI_SUCCESS && !flag)
        backoff(&k);
    etl_extern_leave();
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED)
        wait_done("MPI_Waitany", 1, index, keep, &s);
    if (st != MPI_STATUS_IGNORE)
        *st = s;
    return rc;
}

API int MPI_Waitsome(int n, MPI_Request *r, int *outcount, int *idx, MPI_Status *st)
{
    MPI_Request keep[n > 0 ? n : 1];
    MPI_Status s[n > 0 ? n : 1];
    for (int i = 0; i < n; i++)
        keep[i] = r[i];
    wait_enter_any("MPI_Waitsome", r, n);
    int rc, k = 0; /* PMPI_Waitsome spins: a test loop that sleeps (backoff) */
    while ((rc = PMPI_Testsome(n, r, outcount, idx, s)) == MPI_SUCCESS && *outcount == 0)
        backoff(&k);
    etl_extern_leave();
    if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0)
        wait_done("MPI_Waitsome", *outcount, idx, keep, s);
    if (st != MPI_STATUSES_IGNORE && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++)
            st[i] = s[i];
    return rc;
}

/* Polling is deterministic where the engine times what is polled for (s27): a test or probe asks
 * the engine at the rank's virtual time (etl_query, one round trip) and sees what has arrived by
 * then, whatever the real MPI has done so far; one that finds nothing costs POLL_NS. So a loop
 * polling for a message that arrives at t ends at the first poll at or after t, on any host and
 * under any load (until s27 the real test decided, and a loop that polled while the real message
 * was still on its way went on costing POLL_NS each: tests/live/mpi.sh's polled rings read 11,486
 * or 12,000 ns by the host's speed, docs/live.md). A request the engine times counts as complete
 * when its node is done: a receive naming its source and tag; a send once a receive has matched it
 * too (a real rendezvous send could not complete before). The real request is then completed by a
 * real wait, which cannot block for long: the sender's real call was made, or the receiver's real
 * receive posted. Receives with wildcards (their node goes in when they complete) and requests
 * etkit did not make count as complete when MPI says so (MPI_Request_get_status, which frees
 * nothing), and a miss then waits for the engine to reach its end (etl_poll), as before. Every
 * poll lets the real MPI progress (MPI_Request_get_status, MPI_Iprobe). */
#define POLL_NS 1000

/* done[j]: 1 request j counts as complete, 0 not, -1 inactive (MPI_REQUEST_NULL); returns how
 * many count as complete; *asked: the engine was asked. */
static int vtest(const char *call, int n, const MPI_Request *r, signed char *done, int *asked)
{
    unsigned char taken[MAX_REQ];
    memset(taken, 0, (size_t)n_reqs);
    uint64_t ids[ETK_LIVE_MAX_DEPS - 1];
    int at[ETK_LIVE_MAX_DEPS - 1], real[ETK_LIVE_MAX_DEPS - 1], k = 0, c = 0, early;
    *asked = 0;
    for (int j = 0; j <= n; j++) {
        if (k == ETK_LIVE_MAX_DEPS - 1 || (j == n && k)) {
            uint64_t b = etl_query(call, ids, (uint32_t)k, NULL, 0, 0, &early);
            for (int q = 0; q < k; q++)
                if ((b >> q & 1) || (early && real[q])) { /* early: the real MPI decides, as before s27 */
                    done[at[q]] = 1;
                    c++;
                }
            k = 0;
            *asked = 1;
        }
        if (j == n)
            break;
        done[j] = -1;
        if (r[j] == MPI_REQUEST_NULL)
            continue;
        int f = 0, i = find_req(r[j], taken);
        PMPI_Request_get_status(r[j], &f, MPI_STATUS_IGNORE); /* progress; the answer for others */
        if (i >= 0)
            taken[i] = 1;
        if (i >= 0 && reqs[i].node) {
            done[j] = 0;
            ids[k] = reqs[i].node;
            real[k] = f != 0;
            at[k++] = j;
            continue;
        }
        done[j] = (signed char)(f != 0);
        c += f != 0;
    }
    return c;
}

static void poll_miss(const char *call, int asked)
{
    if (asked)
        etl_charge(POLL_NS);
    else
        etl_poll(call, POLL_NS);
}

/* The real MPI is expected to catch up with the engine at once (a message the engine has
 * delivered, whose real send was made): first wait for it as a running rank, which holds every
 * other rank where it is, so that what they poll for meanwhile is answered in virtual time; past
 * SPIN_NS of real time (a real transfer that needs another rank's progress), as a rank inside a
 * real call, which lets the engine run on and cannot deadlock. */
#define SPIN_NS 20000000ull /* real time: etl_real_ns (clock_gettime here reads the virtual clock) */

/* Complete r[0..n) by a real wait (they count as complete): as MPI_Waitall. */
static int complete(const char *call, int n, MPI_Request *r, MPI_Status *st)
{
    MPI_Request keep[n > 0 ? n : 1];
    MPI_Status s[n > 0 ? n : 1];
    for (int i = 0; i < n; i++)
        keep[i] = r[i];
    int rc, flag = 0, k = 0;
    uint64_t t0 = etl_real_ns();
    while ((rc = PMPI_Testall(n, r, &flag, s)) == MPI_SUCCESS && !flag && etl_real_ns() - t0 < SPIN_NS)
        backoff(&k);
    if (rc == MPI_SUCCESS && !flag) {
        wait_enter(call, r, n);
        while ((rc = PMPI_Testall(n, r, &flag, s)) == MPI_SUCCESS && !flag)
            backoff(&k);
        etl_extern_leave();
    }
    if (rc == MPI_SUCCESS && n > 0)
        wait_done(call, n, NULL, keep, s);
    if (st != MPI_STATUSES_IGNORE && st != MPI_STATUS_IGNORE)
        for (int i = 0; i < n; i++)
            st[i] = s[i];
    return rc;
}

static int n_active(int n, const MPI_Request *r)
{
    int a = 0;
    for (int i = 0; i < n; i++)
        a += r[i] != MPI_REQUEST_NULL;
    return a;
}

API int MPI_Testany(int n, MPI_Request *r, int *index, int *flag, MPI_Status *st)
{
    if (!n_active(n, r))
        return PMPI_Testany(n, r, index, flag, st);
    signed char d[n > 0 ? n : 1];
    int asked;
    if (vtest("MPI_Testany", n, r, d, &asked))
        for (int j = 0; j < n; j++)
            if (d[j] == 1) {
                *index = j;
                *flag = 1;
                return complete("MPI_Testany", 1, &r[j], st);
            }
    *index = MPI_UNDEFINED;
    *flag = 0;
    poll_miss("MPI_Testany", asked);
    return MPI_SUCCESS;
}

/* MPI_Testall, and MPI_Test as the same on one request */
static int test_all(const char *call, int n, MPI_Request *r, int *flag, MPI_Status *st)
{
    int a = n_active(n, r);
    if (!a)
        return PMPI_Testall(n, r, flag, st);
    signed char d[n > 0 ? n : 1];
    int asked;
    if (vtest(call, n, r, d, &asked) == a) {
        *flag = 1;
        return complete(call, n, r, st);
    }
    *flag = 0;
    poll_miss(call, asked);
    return MPI_SUCCESS;
}

API int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) { return test_all("MPI_Test", 1, r, flag, st); }

API int MPI_Testall(int n, MPI_Request *r, int *flag, MPI_Status *st)
{
    return test_all("MPI_Testall", n, r, flag, st);
}

API int MPI_Testsome(int n, MPI_Request *r, int *outcount, int *idx, MPI_Status *st)
{
    if (!n_active(n, r))
        return PMPI_Testsome(n, r, outcount, idx, st);
    signed char d[n > 0 ? n : 1];
    int asked, c = vtest("MPI_Testsome", n, r, d, &asked);
    if (!c) {
        *outcount = 0;
        poll_miss("MPI_Testsome", asked);
        return MPI_SUCCESS;
    }
    MPI_Request sub[c];
    MPI_Status s[c];
    int m = 0;
    for (int j = 0; j < n; j++)
        if (d[j] == 1) {
            idx[m] = j;
            sub[m++] = r[j];
        }
    int rc = complete("MPI_Testsome", m, sub, s);
    for (int q = 0; q < m; q++) {
        r[idx[q]] = sub[q];
        if (st != MPI_STATUSES_IGNORE)
            st[q] = s[q];
    }
    *outcount = m;
    return rc;
}

/* Probes take no virtual time (the receive that follows is timed); a blocking probe may wait
 * for another rank, so it runs as a real blocking call. */
API int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    check_comm(comm, "MPI_Probe");
    etl_extern_enter_flags("MPI_Probe", ETK_LF_NOLATE);
    int rc, flag = 0, k = 0;
    while ((rc = PMPI_Iprobe(src, tag, comm, &flag, st)) == MPI_SUCCESS && !flag)
        backoff(&k);
    etl_extern_leave();
    return rc;
}

/* A receive with wildcards outstanding that could take what (src, tag) on group g names: the real
 * MPI may have matched such a message to it already, while the engine still has it unmatched. */
static int late_overlap(const char *g, int src, int tag)
{
    for (int i = 0; n_late && i < n_reqs; i++)
        if (reqs[i].recv && !strcmp(reqs[i].grp, g) &&
            (reqs[i].src == MPI_ANY_SOURCE || src == MPI_ANY_SOURCE || reqs[i].src == src) &&
            (reqs[i].tag == MPI_ANY_TAG || tag == MPI_ANY_TAG || reqs[i].tag == tag))
            return 1;
    return 0;
}

/* MPI_Iprobe sees what has arrived by the rank's virtual time (the engine's oldest unmatched send
 * of each channel it matches); when the real message is still on its way, it waits for it as
 * MPI_Probe does (its sender's real call was made). With a wildcard receive outstanding that
 * could take the same messages, the real probe decides, as before s27. */
API int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
    const char *g = check_comm(comm, "MPI_Iprobe");
    MPI_Status s;
    int rc = PMPI_Iprobe(src, tag, comm, flag, &s); /* progress; PROC_NULL; the fallback */
    if (rc != MPI_SUCCESS || src == MPI_PROC_NULL || late_overlap(g, src, tag)) {
        if (rc == MPI_SUCCESS && !*flag)
            etl_poll("MPI_Iprobe", POLL_NS);
        if (st != MPI_STATUS_IGNORE && rc == MPI_SUCCESS && *flag)
            *st = s;
        return rc;
    }
    int early;
    uint64_t b = etl_query("MPI_Iprobe", NULL, 0, g, src == MPI_ANY_SOURCE ? -1 : src, tag == MPI_ANY_TAG ? -1 : tag,
                           &early);
    if (!(b & 1) && !(early && *flag)) { /* early: the real probe decides, as before s27 */
        *flag = 0;
        etl_charge(POLL_NS);
        return MPI_SUCCESS;
    }
    int k = 0;
    uint64_t t0 = etl_real_ns(); /* the real message: see complete() */
    while (!*flag && (rc = PMPI_Iprobe(src, tag, comm, flag, &s)) == MPI_SUCCESS && !*flag &&
           etl_real_ns() - t0 < SPIN_NS)
        backoff(&k);
    if (rc == MPI_SUCCESS && !*flag) {
        etl_extern_enter_flags("MPI_Iprobe", ETK_LF_NOLATE);
        while ((rc = PMPI_Iprobe(src, tag, comm, flag, &s)) == MPI_SUCCESS && !*flag)
            backoff(&k);
        etl_extern_leave();
    }
    if (st != MPI_STATUS_IGNORE && rc == MPI_SUCCESS)
        *st = s;
    return rc;
}

/* ---------- communicators ---------- */

static int add_comm(MPI_Comm c, const char *name, int size, int rank)
{
    if (n_comms == MAX_COMMS)
        etl_fatal("more than %d MPI communicators at once", MAX_COMMS);
    comms[n_comms].comm = c;
    snprintf(comms[n_comms].name, sizeof comms[n_comms].name, "%s", name);
    comms[n_comms].size = size;
    comms[n_comms].rank = rank;
    comms[n_comms].splits = 0;
    return n_comms++;
}

static int comm_index(MPI_Comm comm, const char *call)
{
    const char *g = check_comm(comm, call);
    for (int i = 0; i < n_comms; i++)
        if (!strcmp(comms[i].name, g))
            return i;
    return 0;
}

/* Members of one color form a group ordered by (key, rank in the parent), as MPI orders them;
 * MPI_UNDEFINED gives MPI_COMM_NULL. The coordinator's split (the one ncclCommSplit uses) makes
 * the engine's group; the real split makes the program's communicator. */
static MPI_Group create_group; /* MPI_Comm_create's group (dup == 2) */

/* dup: 0 MPI_Comm_split, 1 MPI_Comm_dup, 2 MPI_Comm_create (create_group) */
static int split_common(const char *call, MPI_Comm comm, int color, int key, MPI_Comm *out, int dup)
{
    int pi = comm_index(comm, call);
    /* a split synchronizes the parent's ranks (MPI's is an all-gather): timed as a barrier on the
     * parent, tied to it as a collective is, so the engine runs on while members are late (HPCC on
     * 4 ranks: a rank inside a real MPI_Comm_split waits for ranks still in virtual waits) */
    uint64_t id = node_on(comms[pi].name, call, 7, C_BARRIER, 0, 0, 0, 0, 0);
    etl_extern_enter_tied(call, 0, &id, 1);
    int rc = dup == 1 ? PMPI_Comm_dup(comm, out)
             : dup == 2 ? PMPI_Comm_create(comm, create_group, out)
                        : PMPI_Comm_split(comm, color, key, out);
    etl_extern_leave();
    etl_lock();
    etl_wait(&id, 1, call, NULL);
    etl_unlock();
    if (rc != MPI_SUCCESS)
        return rc;
    char name[64];
    int nr = -1, ns = 0;
    etl_lock();
    etl_comm_split(comms[pi].name, comms[pi].size, comms[pi].rank, comms[pi].splits++,
                   dup == 1 ? 0 : color == MPI_UNDEFINED || color < 0 ? -1 : color, dup == 1 ? comms[pi].rank : key, name,
                   sizeof name, &nr, &ns);
    if (*out != MPI_COMM_NULL) {
        int r = -1, n = 0;
        PMPI_Comm_rank(*out, &r);
        PMPI_Comm_size(*out, &n);
        if (r != nr || n != ns)
            etl_fatal("%s: MPI made rank %d of %d, the coordinator's split rank %d of %d", call, r, n, nr, ns);
        add_comm(*out, name, n, r);
    }
    etl_unlock();
    return rc;
}

API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out)
{
    return split_common("MPI_Comm_split", comm, color, key, out, 0);
}

API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) { return split_common("MPI_Comm_dup", comm, 0, 0, out, 1); }

/* MPI_Comm_create (collective over comm): the group's members, ordered as in the group, form the
 * new communicator; the others get MPI_COMM_NULL. The coordinator's split with color 0 for the
 * members (key: the rank in the group) and none for the others makes the same group (HPCC's
 * single-process communicators). */
API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *out)
{
    int gr = MPI_UNDEFINED;
    PMPI_Group_rank(group, &gr);
    create_group = group;
    return split_common("MPI_Comm_create", comm, gr == MPI_UNDEFINED ? MPI_UNDEFINED : 0, gr, out, 2);
}

API int MPI_Comm_free(MPI_Comm *comm)
{
    etl_lock();
    for (int i = 2; comm && i < n_comms; i++)
        if (comms[i].comm == *comm) {
            comms[i] = comms[--n_comms];
            break;
        }
    etl_unlock();
    return PMPI_Comm_free(comm);
}

/* ---------- collectives ---------- */

/* A collective: its node goes in, then the real call (inside etl_extern_enter_tied/leave), then
 * the node is waited for. Tied to the node: the engine runs on while the node waits for members
 * (they may wait in virtual time for what lets them join), and stops at its end once it is done,
 * until the rank is back (docs/live.md: HPCC). */
#define COLL(call, type, bytes, grp, real)                                                        \
    (coll_id = coll_start(call, type, bytes, grp), coll_done(call, coll_id, (real)))
static uint64_t coll_id; /* the node goes in before the real call (the comma sequences them) */
/* The real collective runs as its non-blocking form (`real` starts it on coll_q) and a test loop
 * that sleeps (wait1): Open MPI's blocking collectives spin in its progress loop, and on 64 ranks
 * of the 2-core machine the members spinning for a late one took the CPU it needed. */
static MPI_Request coll_q;
#define COLL_NB(call, type, bytes, grp, real) COLL(call, type, bytes, grp, nb_wait(real))
static int nb_wait(int rc) { return rc == MPI_SUCCESS ? wait1(&coll_q, MPI_STATUS_IGNORE) : rc; }

static uint64_t coll_start(const char *call, int type, uint64_t bytes, const char *grp)
{
    uint64_t id = node_on(grp, call, 7, type, bytes, 0, 0, 0, 0);
    etl_extern_enter_tied(call, 0, &id, 1); /* the engine runs on while the members join */
    return id;
}

static int coll_done(const char *call, uint64_t id, int rc)
{
    etl_extern_leave();
    etl_lock();
    etl_wait(&id, 1, call, NULL);
    etl_unlock();
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
    const char *g = check_comm(comm, "MPI_Barrier");
    uint64_t id = coll_start("MPI_Barrier", C_BARRIER, 0, g);
    MPI_Request q;
    int rc = PMPI_Ibarrier(comm, &q);
    if (rc == MPI_SUCCESS)
        rc = wait1(&q, MPI_STATUS_IGNORE);
    return coll_done("MPI_Barrier", id, rc);
}

/* The root of a broadcast returns when its real call does, before every member has joined, as
 * MPI lets it (HPCC's root goes on to send what its members wait for before they join): its node
 * goes into the engine, not ordered after its other MPI calls, and is not waited for; the root's
 * call takes no virtual time. The members wait for the node as for any collective. */
API int MPI_Bcast(void *b, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Bcast");
    int me = -1;
    PMPI_Comm_rank(comm, &me);
    if (me != root)
        return COLL_NB("MPI_Bcast", C_BROADCAST, bytes_of(count, dt), g,
                       PMPI_Ibcast(b, count, dt, root, comm, &coll_q));
    node_on(g, "MPI_Bcast", 7, C_BROADCAST, bytes_of(count, dt), 0, 0, 0, 0);
    etl_extern_enter("MPI_Bcast");
    MPI_Request q;
    int rc = PMPI_Ibcast(b, count, dt, root, comm, &q);
    if (rc == MPI_SUCCESS)
        rc = wait1(&q, MPI_STATUS_IGNORE);
    etl_extern_leave();
    return rc;
}

API int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Allreduce");
    return COLL_NB("MPI_Allreduce", C_ALL_REDUCE, bytes_of(count, dt), g,
                   PMPI_Iallreduce(s, r, count, dt, op, comm, &coll_q));
}

API int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Reduce");
    return COLL_NB("MPI_Reduce", C_REDUCE, bytes_of(count, dt), g,
                   PMPI_Ireduce(s, r, count, dt, op, root, comm, &coll_q));
}

/* Chakra comm_size: all-gather the per-rank input, all-to-all the whole per-rank buffer */
API int MPI_Allgather(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Allgather");
    return COLL_NB("MPI_Allgather", C_ALL_GATHER, bytes_of(sc, sdt), g,
                   PMPI_Iallgather(s, sc, sdt, r, rc_, rdt, comm, &coll_q));
}

API int MPI_Alltoall(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Alltoall");
    return COLL_NB("MPI_Alltoall", C_ALL_TO_ALL, bytes_of(sc, sdt) * (uint64_t)comm_size(comm), g,
                   PMPI_Ialltoall(s, sc, sdt, r, rc_, rdt, comm, &coll_q));
}

API int MPI_Reduce_scatter_block(const void *s, void *r, int rc_, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Reduce_scatter_block");
    return COLL_NB("MPI_Reduce_scatter_block", C_REDUCE_SCATTER, bytes_of(rc_, dt) * (uint64_t)comm_size(comm), g,
                   PMPI_Ireduce_scatter_block(s, r, rc_, dt, op, comm, &coll_q));
}

API int MPI_Gather(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, int root,
                   MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Gather");
    return COLL_NB("MPI_Gather", C_GATHER, bytes_of(sc, sdt) * (uint64_t)comm_size(comm), g,
                   PMPI_Igather(s, sc, sdt, r, rc_, rdt, root, comm, &coll_q));
}

API int MPI_Scatter(const void *s, int sc, MPI_Datatype sdt, void *r, int rc_, MPI_Datatype rdt, int root,
                    MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Scatter");
    return COLL_NB("MPI_Scatter", C_SCATTER, bytes_of(rc_, rdt) * (uint64_t)comm_size(comm), g,
                   PMPI_Iscatter(s, sc, sdt, r, rc_, rdt, root, comm, &coll_q));
}

/* v-collectives: the engine's collective wants one size on every rank. Where every rank knows the
 * counts (all-gather-v, reduce-scatter) it is their sum; where each knows only its own (gather-v,
 * scatter-v: the sum; all-to-all-v: the largest rank's buffer) a real all-reduce of one number
 * inside the call gives it. */
static uint64_t sum_counts(const int *counts, int n, MPI_Datatype dt)
{
    uint64_t b = 0;
    for (int i = 0; i < n; i++)
        b += bytes_of(counts[i], dt);
    return b;
}

static uint64_t agree(uint64_t mine, MPI_Op op, MPI_Comm comm)
{
    unsigned long long in = mine, out = 0;
    etl_extern_enter("MPI_Allreduce (the v-collective's size)");
    MPI_Request q;
    if (PMPI_Iallreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, op, comm, &q) == MPI_SUCCESS)
        wait1(&q, MPI_STATUS_IGNORE);
    etl_extern_leave();
    return out;
}

API int MPI_Allgatherv(const void *s, int sc, MPI_Datatype sdt, void *r, const int *rcounts, const int *displs,
                       MPI_Datatype rdt, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Allgatherv");
    int n = comm_size(comm);
    return COLL_NB("MPI_Allgatherv", C_ALL_GATHER, sum_counts(rcounts, n, rdt) / (uint64_t)n, g,
                   PMPI_Iallgatherv(s, sc, sdt, r, rcounts, displs, rdt, comm, &coll_q));
}

API int MPI_Reduce_scatter(const void *s, void *r, const int *rcounts, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Reduce_scatter");
    return COLL_NB("MPI_Reduce_scatter", C_REDUCE_SCATTER, sum_counts(rcounts, comm_size(comm), dt), g,
                   PMPI_Ireduce_scatter(s, r, rcounts, dt, op, comm, &coll_q));
}

API int MPI_Alltoallv(const void *s, const int *scounts, const int *sdispls, MPI_Datatype sdt, void *r,
                      const int *rcounts, const int *rdispls, MPI_Datatype rdt, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Alltoallv");
    uint64_t b = agree(sum_counts(scounts, comm_size(comm), sdt), MPI_MAX, comm);
    return COLL_NB("MPI_Alltoallv", C_ALL_TO_ALL, b, g,
                   PMPI_Ialltoallv(s, scounts, sdispls, sdt, r, rcounts, rdispls, rdt, comm, &coll_q));
}

API int MPI_Gatherv(const void *s, int sc, MPI_Datatype sdt, void *r, const int *rcounts, const int *displs,
                    MPI_Datatype rdt, int root, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Gatherv");
    uint64_t b = agree(bytes_of(sc, sdt), MPI_SUM, comm);
    return COLL_NB("MPI_Gatherv", C_GATHER, b, g,
                   PMPI_Igatherv(s, sc, sdt, r, rcounts, displs, rdt, root, comm, &coll_q));
}

API int MPI_Scatterv(const void *s, const int *scounts, const int *displs, MPI_Datatype sdt, void *r, int rc_,
                     MPI_Datatype rdt, int root, MPI_Comm comm)
{
    const char *g = check_comm(comm, "MPI_Scatterv");
    uint64_t b = agree(bytes_of(rc_, rdt), MPI_SUM, comm);
    return COLL_NB("MPI_Scatterv", C_SCATTER, b, g,
                   PMPI_Iscatterv(s, scounts, displs, sdt, r, rc_, rdt, root, comm, &coll_q));
}
