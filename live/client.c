/* client.c — libetklive.so: the rank's connection to `etkit live`, its virtual clock, and the
 * clock shim (clock_gettime, gettimeofday, time read the virtual clock). Preloaded into every
 * rank with LD_PRELOAD; the stand-in libraries link against it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "live/client.h"

static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int fd = -1;
static int rank_no = -1;
static int active;          /* started by etkit live */
static etk_live_reply cfg;
static double scale = 1.0;
static double vhost;        /* virtual host time, ns */
/* One process may drive several GPUs (etkit live --gpus-per-process G): device d of process p is
 * the engine's rank p*G + d, with its own chain of CPU nodes; the process's host time is one. */
static int ngpu = 1;        /* GPUs this process drives */
static int cur;             /* the current device (cudaSetDevice) */
static uint64_t mark[ETL_MAX_DEV];     /* per device: host time already recorded as its CPU nodes */
static uint64_t cpu_last[ETL_MAX_DEV]; /* per device: id of its last CPU node (0: none) */
static uint64_t t_rel;      /* the last answer's time: the engine's time while the process runs */
static uint64_t next_id = 1;
static __thread uint64_t tls_cpu;
static __thread int tls_init;
/* Only the program's own threads read virtual time: the main thread and threads that called the
 * stand-ins; helper threads of other libraries (MPI's progress threads) and calls made inside a
 * real blocking call of another library (etl_extern_enter) see real time, so their timeouts run. */
static __thread int tls_program, tls_extern;

static uint64_t real_ns(clockid_t c)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void etl_lock(void) { pthread_mutex_lock(&mu); }
void etl_unlock(void) { pthread_mutex_unlock(&mu); }

void etl_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "etkit live: rank %d: ", rank_no);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    _exit(3);
}

void etl_not_modelled(const char *name)
{
    fprintf(stderr, "etkit live: %s is not modelled\n", name);
    fflush(stderr);
    _exit(3);
}

/* NODE messages are batched (up to ETK_LIVE_BATCH per packet), sent before any other message and
 * when the batch is full: one system call per batch, not per call. */
static etk_live_msg outbuf[ETK_LIVE_BATCH];
static uint32_t n_out;

static void xsend_raw(const void *p, size_t len)
{
    ssize_t n;
    do
        n = send(fd, p, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)len)
        etl_fatal("lost the coordinator (%s)", n < 0 ? strerror(errno) : "short write");
}

static void flush_out(void)
{
    if (n_out)
        xsend_raw(outbuf, n_out * sizeof outbuf[0]);
    n_out = 0;
}

static void xsend(const etk_live_msg *m)
{
    if (m->op == ETK_LM_NODE) {
        outbuf[n_out++] = *m;
        if (n_out == ETK_LIVE_BATCH)
            flush_out();
        return;
    }
    flush_out();
    xsend_raw(m, sizeof *m);
}

static void xrecv(etk_live_reply *r)
{
    ssize_t n;
    do
        n = recv(fd, r, sizeof *r, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof *r)
        etl_fatal("lost the coordinator (%s)", n < 0 ? strerror(errno) : "connection closed");
    if (r->op == ETK_LR_ERROR) {
        fprintf(stderr, "etkit live: rank %d released: %s\n", rank_no, r->msg);
        fflush(stderr);
        _exit(3);
    }
}

/* Advance the virtual host time by this thread's CPU time since its last reading x scale. */
static void tick(void)
{
    tls_program = 1;
    uint64_t c = real_ns(CLOCK_THREAD_CPUTIME_ID);
    if (tls_init && c > tls_cpu)
        vhost += (double)(c - tls_cpu) * scale;
    tls_cpu = c;
    tls_init = 1;
}

/* The rank: ETK_LIVE_RANK (etkit live launched it), or the MPI launcher's (etkit live
 * --launcher -- mpirun ...: Open MPI's OMPI_COMM_WORLD_RANK, PMIx's PMIX_RANK). NULL: the
 * process is not a rank (the launcher itself). */
static const char *launcher_rank(void)
{
    const char *r = getenv("ETK_LIVE_RANK");
    if (!r)
        r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
        r = getenv("PMIX_RANK");
    return r;
}

static void connect_once(void)
{
    if (fd >= 0)
        return;
    const char *path = getenv("ETK_LIVE_SOCKET"), *rk = launcher_rank();
    if (!path || !rk) {
        fprintf(stderr, "etkit live: this library stands in for CUDA/NCCL under `etkit live` only "
                        "(ETK_LIVE_SOCKET is not set)\n");
        _exit(3);
    }
    rank_no = atoi(rk);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        etl_fatal("cannot connect to %s: %s", path, strerror(errno));
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.op = ETK_LM_HELLO;
    m.rank = (uint32_t)rank_no;
    m.tag = ETK_LIVE_VERSION;
    xsend(&m);
    xrecv(&cfg);
    scale = cfg.cpu_scale;
    ngpu = cfg.gpus < 1 ? 1 : cfg.gpus > ETL_MAX_DEV ? ETL_MAX_DEV : (int)cfg.gpus;
    active = 1;
}

__attribute__((constructor)) static void live_init(void)
{
    if (!getenv("ETK_LIVE_SOCKET") || !launcher_rank())
        return;
    pthread_mutex_lock(&mu);
    tick();
    vhost = 0;
    connect_once();
    pthread_mutex_unlock(&mu);
}

const etk_live_reply *etl_config(void)
{
    connect_once();
    return &cfg;
}

size_t etl_abi_size(int reply)
{
    return reply ? sizeof(etk_live_reply) : sizeof(etk_live_msg);
}

int etl_rank(void) { return rank_no; }

int etl_gpus(void)
{
    connect_once();
    return ngpu;
}

int etl_device(void) { return cur; }

void etl_set_device(int d)
{
    if (d >= 0 && d < ngpu)
        cur = d;
}

uint64_t etl_now(void)
{
    tick();
    return (uint64_t)vhost;
}

uint64_t etl_new_id(void) { return next_id++; }

static void send_dev(etk_live_msg *m, int dev)
{
    m->rank = (uint32_t)(rank_no * ngpu + dev);
    xsend(m);
}

void etl_send(etk_live_msg *m) { send_dev(m, cur); }

/* The host time since device dev's last CPU node as a CPU node of dev's rank. The engine stands
 * at t_rel while the process runs, so a node whose chain ended earlier (another GPU's call was
 * answered since) starts at t_rel: it lasts from there to the host time. */
static uint64_t host_dev(int dev)
{
    uint64_t h = etl_now();
    if (mark[dev] < t_rel)
        mark[dev] = t_rel;
    if (h > mark[dev] || !cpu_last[dev]) {
        etk_live_msg m;
        memset(&m, 0, sizeof m);
        m.op = ETK_LM_NODE;
        m.id = etl_new_id();
        m.type = 4; /* COMP */
        m.flags = ETK_LF_CPU;
        m.dur_ns = h > mark[dev] ? h - mark[dev] : 0;
        if (cpu_last[dev])
            m.deps[m.n_deps++] = cpu_last[dev];
        snprintf(m.name, sizeof m.name, "host");
        send_dev(&m, dev);
        cpu_last[dev] = m.id;
        mark[dev] = h;
    }
    return cpu_last[dev];
}

uint64_t etl_host(void) { return host_dev(cur); }

static uint64_t wait_msg(int dev, etk_live_msg *mq, const uint64_t *deps, uint32_t n_deps, const char *call,
                         uint64_t *dep_end, unsigned flags)
{
    uint64_t c = host_dev(dev);
    etk_live_msg m;
    if (mq)
        m = *mq;
    else
        memset(&m, 0, sizeof m);
    m.op = ETK_LM_WAIT;
    if (flags & ETK_LF_POLL) /* the host chain ends at mark: the poll's time */
        m.m = (int64_t)mark[dev];
    m.id = etl_new_id();
    m.type = 4;
    m.flags = ETK_LF_CPU | flags;
    m.deps[m.n_deps++] = c;
    for (uint32_t i = 0; i < n_deps && m.n_deps < ETK_LIVE_MAX_DEPS; i++)
        if (deps[i])
            m.deps[m.n_deps++] = deps[i];
    snprintf(m.name, sizeof m.name, "%s", call);
    send_dev(&m, dev);
    etk_live_reply r;
    xrecv(&r);
    cpu_last[dev] = m.id;
    tick();
    vhost = (double)r.t_ns;
    mark[dev] = r.t_ns;
    t_rel = r.t_ns;
    if (dep_end) {
        dep_end[0] = r.dep_end[0];
        dep_end[1] = r.dep_end[1];
    }
    return r.t_ns;
}

static uint64_t wait_flags(int dev, const uint64_t *deps, uint32_t n_deps, const char *call, uint64_t *dep_end,
                           unsigned flags)
{
    return wait_msg(dev, NULL, deps, n_deps, call, dep_end, flags);
}

uint64_t etl_wait_dev(int dev, const uint64_t *deps, uint32_t n_deps, const char *call, uint64_t *dep_end)
{
    return wait_flags(dev, deps, n_deps, call, dep_end, 0);
}

uint64_t etl_wait(const uint64_t *deps, uint32_t n_deps, const char *call, uint64_t *dep_end)
{
    return etl_wait_dev(cur, deps, n_deps, call, dep_end);
}

void etl_poll(const char *call, uint64_t ns)
{
    pthread_mutex_lock(&mu);
    etl_now();
    vhost += (double)ns;
    wait_flags(cur, NULL, 0, call, NULL, ETK_LF_POLL);
    pthread_mutex_unlock(&mu);
}

uint64_t etl_query(const char *call, const uint64_t *ids, uint32_t n, const char *grp, int src, int tag, int *early)
{
    if (n > ETK_LIVE_MAX_DEPS - 1)
        etl_fatal("%s: %u nodes in one query (%d at most)", call, n, ETK_LIVE_MAX_DEPS - 1);
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    if (grp) {
        snprintf(m.group, sizeof m.group, "%s", grp);
        m.peer = src;
        m.tag = tag;
    }
    uint64_t end[2] = {0, 0};
    pthread_mutex_lock(&mu);
    etl_now();
    wait_msg(cur, &m, ids, n, call, end, ETK_LF_POLL | ETK_LF_QUERY);
    pthread_mutex_unlock(&mu);
    *early = end[1] != 0;
    return end[0];
}

uint64_t etl_real_ns(void) { return real_ns(CLOCK_MONOTONIC); }

void etl_charge(uint64_t ns)
{
    pthread_mutex_lock(&mu);
    etl_now();
    vhost += (double)ns;
    pthread_mutex_unlock(&mu);
}

void etl_extern_enter(const char *call) { etl_extern_enter_flags(call, 0); }

static void extern_enter(const char *call, unsigned flags, const uint64_t *ids, uint32_t n)
{
    pthread_mutex_lock(&mu);
    for (int d = 0; d < ngpu; d++) /* every GPU's chain reaches the host time */
        host_dev(d);
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.op = ETK_LM_EXTERN;
    m.flags = flags;
    m.dur_ns = mark[cur];
    for (uint32_t i = 0; i < n && m.n_deps < ETK_LIVE_MAX_DEPS; i++)
        if (ids[i])
            m.deps[m.n_deps++] = ids[i];
    snprintf(m.name, sizeof m.name, "%s", call);
    etl_send(&m);
    tls_extern = 1;
    pthread_mutex_unlock(&mu);
}

void etl_extern_enter_flags(const char *call, unsigned flags) { extern_enter(call, flags, NULL, 0); }

void etl_extern_enter_tied(const char *call, unsigned flags, const uint64_t *ids, uint32_t n)
{
    extern_enter(call, flags, ids, n);
}

void etl_extern_leave(void)
{
    pthread_mutex_lock(&mu);
    tls_cpu = real_ns(CLOCK_THREAD_CPUTIME_ID); /* time inside the call is not host work */
    tls_init = 1;
    tls_extern = 0;
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.op = ETK_LM_EXTERN_END;
    etl_send(&m);
    pthread_mutex_unlock(&mu);
}

/* A communicator join or split: blocks until every member arrived (no virtual time passes). */
static void comm_call(etk_live_msg *m, etk_live_reply *r)
{
    etl_host();
    etl_send(m);
    xrecv(r);
    tick();
}

void etl_comm_init(const char *key, int members, int member, char *name, unsigned name_len)
{
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.op = ETK_LM_COMM_INIT;
    m.peer = member;
    m.tag = members;
    snprintf(m.group, sizeof m.group, "%s", key);
    etk_live_reply r;
    comm_call(&m, &r);
    snprintf(name, name_len, "%s", r.msg);
}

void etl_comm_init_many(int count, const char *const *keys, const int *members, const int *member, const int *dev,
                        char (*names)[64])
{
    for (int i = 0; i < count; i++)
        host_dev(dev[i]);
    /* one packet: the coordinator sees every join of this process at once */
    flush_out();
    for (int i = 0; i < count; i++) {
        etk_live_msg *m = &outbuf[n_out++];
        memset(m, 0, sizeof *m);
        m->op = ETK_LM_COMM_INIT;
        m->rank = (uint32_t)(rank_no * ngpu + dev[i]);
        m->peer = member[i];
        m->tag = members[i];
        snprintf(m->group, sizeof m->group, "%s", keys[i]);
        if (n_out == ETK_LIVE_BATCH)
            flush_out();
    }
    flush_out();
    for (int got = 0; got < count; got++) {
        etk_live_reply r;
        xrecv(&r); /* status: the engine rank answered */
        for (int i = 0; i < count; i++)
            if (rank_no * ngpu + dev[i] == r.status)
                snprintf(names[i], 64, "%.63s", r.msg);
    }
    tick();
}

void etl_comm_split(const char *parent, int members, int member, int seq, int color, int key, char *name,
                    unsigned name_len, int *new_rank, int *new_size)
{
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.op = ETK_LM_COMM_SPLIT;
    m.peer = member;
    m.tag = members;
    m.n = seq;
    m.m = color;
    m.k = key;
    snprintf(m.group, sizeof m.group, "%s", parent);
    etk_live_reply r;
    comm_call(&m, &r);
    snprintf(name, name_len, "%s", r.msg);
    *new_rank = (int)r.t_ns;
    *new_size = (int)r.dep_end[0];
}

__attribute__((destructor)) static void live_fini(void)
{
    if (!active)
        return;
    pthread_mutex_lock(&mu);
    for (int d = 0; d < ngpu; d++)
        host_dev(d);
    etk_live_msg m;
    memset(&m, 0, sizeof m);
    m.op = ETK_LM_EXIT;
    etl_send(&m);
    active = 0;
    pthread_mutex_unlock(&mu);
}

/* ---------- the clock shim ---------- */

static int virtual_clock(clockid_t c)
{
    return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC || c == CLOCK_MONOTONIC_RAW ||
           c == CLOCK_REALTIME_COARSE || c == CLOCK_MONOTONIC_COARSE || c == CLOCK_BOOTTIME ||
           c == CLOCK_TAI;
}

ETL_API int clock_gettime(clockid_t c, struct timespec *ts)
{
    if (!active || !virtual_clock(c) || !tls_program || tls_extern) {
        long rc = syscall(SYS_clock_gettime, c, ts);
        return rc == 0 ? 0 : -1;
    }
    pthread_mutex_lock(&mu);
    uint64_t v = etl_now();
    pthread_mutex_unlock(&mu);
    if (c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE || c == CLOCK_TAI)
        v += cfg.epoch_ns;
    ts->tv_sec = (time_t)(v / 1000000000ull);
    ts->tv_nsec = (long)(v % 1000000000ull);
    return 0;
}

ETL_API int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct timeval *volatile out = tv; /* glibc declares tv nonnull; callers may still pass NULL */
    if (out) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

ETL_API time_t time(time_t *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}

/* ---------- streams ---------- */

static struct etk_cu_stream default_stream[ETL_MAX_DEV];
#define MAX_SEEN 1024
static struct etk_cu_stream *seen[MAX_SEEN]; /* streams with work, for cudaDeviceSynchronize */
static uint32_t n_seen;

struct etk_cu_stream *etl_stream_dev(void *stream, int dev)
{
    if ((uintptr_t)stream == 2) {
        /* cudaStreamPerThread: the calling thread's own stream on each device, blocking (it and
         * the legacy default stream wait for each other, as CUDA's per-thread default stream);
         * never freed: the list of streams seen may name it after its thread has ended */
        static __thread struct etk_cu_stream *per_thread[ETL_MAX_DEV];
        if (!per_thread[dev] && !(per_thread[dev] = calloc(1, sizeof *per_thread[dev])))
            etl_fatal("out of memory");
        per_thread[dev]->dev = dev;
        return per_thread[dev];
    }
    if ((uintptr_t)stream <= 2) {
        default_stream[dev].dev = dev;
        return &default_stream[dev];
    }
    return stream;
}

struct etk_cu_stream *etl_stream(void *stream) { return etl_stream_dev(stream, cur); }

/* The legacy default stream's implicit synchronization (CUDA's "legacy default stream"): work on
 * it waits for the work issued before on every blocking stream of its device (created without
 * cudaStreamNonBlocking, flag 1), and work on a blocking stream waits for the default stream's.
 * cudaStreamPerThread is a blocking stream of the calling thread (etl_stream_dev). */
static void legacy_deps(const struct etk_cu_stream *st, etk_live_msg *m)
{
    const struct etk_cu_stream *def = &default_stream[st->dev];
    if (st != def) {
        if (!(st->flags & 1u) && def->last && m->n_deps < ETK_LIVE_MAX_DEPS)
            m->deps[m->n_deps++] = def->last;
        else if (!(st->flags & 1u) && def->last)
            etl_fatal("a call on a blocking stream with %u dependencies already cannot also wait for the legacy "
                      "default stream (not modelled)", m->n_deps);
        return;
    }
    for (uint32_t i = 0; i < n_seen; i++) {
        const struct etk_cu_stream *o = seen[i];
        if (o == def || o->dev != st->dev || (o->flags & 1u) || !o->last)
            continue;
        if (m->n_deps == ETK_LIVE_MAX_DEPS)
            etl_fatal("work on the legacy default stream after work on more than %d blocking streams: its implicit "
                      "synchronization with all of them is not modelled (create them with cudaStreamNonBlocking, or "
                      "synchronize first)", ETK_LIVE_MAX_DEPS - 2);
        m->deps[m->n_deps++] = o->last;
    }
}

uint64_t etl_issue(void *stream, etk_live_msg *m)
{
    struct etk_cu_stream *st = etl_stream(stream);
    uint64_t c = host_dev(st->dev);
    m->op = ETK_LM_NODE;
    m->id = etl_new_id();
    uint64_t own[ETK_LIVE_MAX_DEPS];
    uint32_t n_own = m->n_deps;
    memcpy(own, m->deps, sizeof own);
    m->n_deps = 0;
    m->deps[m->n_deps++] = c;
    if (st->last)
        m->deps[m->n_deps++] = st->last;
    for (uint32_t i = 0; i < n_own && m->n_deps < ETK_LIVE_MAX_DEPS; i++)
        if (own[i])
            m->deps[m->n_deps++] = own[i];
    legacy_deps(st, m);
    send_dev(m, st->dev);
    st->last = m->id;
    uint32_t i = 0;
    while (i < n_seen && seen[i] != st)
        i++;
    if (i == n_seen && n_seen < MAX_SEEN)
        seen[n_seen++] = st;
    return m->id;
}

void etl_stream_forget(void *stream)
{
    for (uint32_t i = 0; i < n_seen; i++)
        if (seen[i] == stream) {
            seen[i] = seen[--n_seen];
            return;
        }
}

uint64_t etl_sync_all(const char *call)
{
    uint64_t ids[ETK_LIVE_MAX_DEPS - 1], t = 0;
    uint32_t n = 0;
    uint32_t mine = 0;
    for (uint32_t i = 0; i <= n_seen; i++) {
        if (i < n_seen && seen[i]->dev != cur) /* the current device's streams */
            continue;
        mine += i < n_seen;
        if (i < n_seen && seen[i]->last)
            ids[n++] = seen[i]->last;
        if (n && (n == ETK_LIVE_MAX_DEPS - 1 || i == n_seen)) {
            t = etl_wait(ids, n, call, NULL);
            n = 0;
        }
    }
    return mine ? t : etl_wait(NULL, 0, call, NULL);
}
