/* plan_mpi.c — the plan search over MPI processes (plan_mpi.h, docs/plan.md "Parallel search").
 * Every process enumerates the same rows (etk_plan_begin). Rank 0 hands out work and gathers:
 * phase 1 (validity, memory, bound) in chunks of rows, phase 2 (simulation) one row at a time
 * along the bound order while a row can still reach the top k, so plans that cost 100x more
 * than others do not leave processes idle (dynamic load balancing). Rank 0 also works, in a
 * thread of its own; only its main thread calls MPI (MPI_THREAD_FUNNELED), polling with short
 * sleeps so that it does not take a core from the workers. The result is etk_plan_finish's on
 * rank 0's rows: the same as a single process (search.c explains why the order does not matter). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <stdlib.h>
#include <string.h>

#include "plan_mpi.h"

bool plan_mpi_launched(void)
{
#ifdef ETK_HAVE_MPI
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v)
        v = getenv("PMI_SIZE");
    return v && atoi(v) > 1;
#else
    return false;
#endif
}

#ifndef ETK_HAVE_MPI
int plan_mpi_init(int *rank, int *size)
{
    *rank = 0;
    *size = 1;
    return 0;
}
void plan_mpi_finalize(void) {}
int plan_mpi_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err)
{
    return etk_plan_search(sp, jobs, n_jobs, o, res, err);
}
#else
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#ifdef __linux__
#include <sched.h>
#include <unistd.h>
#endif

/* tags per phase: a worker's first request of phase 2 waits until rank 0 serves phase 2 */
enum { TAG_RESULT = 10, TAG_WORK = 20 };
/* phase 1 (assess: validity, memory, bound; cheap) goes out in chunks of up to 64 rows (a quarter
 * of what is left per process near the end, for balance), so a remote worker makes ~100 round
 * trips for 6,000 rows instead of 750; phase 2 (simulate: milliseconds to seconds a
 * row) one row at a time, for balance and so the top-k bound prunes as early as with threads.
 * A remote worker keeps one request in flight: with each batch's results it asks for the next
 * batch before it starts on the one in hand, so the round trip through rank 0's serving thread
 * (a nap of up to 1 ms, then a time slice on a loaded machine) overlaps the work instead of
 * adding to it (bench/RESULTS.md "s25-plan"). */
enum { CHUNK1 = 64 };

/* a worker's message: the results of its last batch; final: it asks for nothing more */
typedef struct {
    uint32_t final, n;
} msg_head;

/* per-process counters, printed to stderr at the end when ETK_PLAN_MPI_STATS is set
 * (docs/plan.md "Parallel search") */
typedef struct {
    double busy, wait, cpu;
    long msgs, rows;
} mpi_stats;

/* CPU seconds of the calling thread */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int inited;

/* Open MPI binds each process to a core of its own by default (with -np 2: --bind-to core). The
 * search gains nothing from it (no data is NUMA-placed; rank 0's serving thread and worker would
 * share one core), and on a shared machine a bound process cannot leave a core that other work
 * crowds: measured on the 2-core machine under load, rank 1 bound to the busier core got 2.3 s of
 * CPU in 24 s while rank 0's worker got 11.6 s (bench/RESULTS.md "s25-plan"). So, unless the
 * user asked for a binding (`mpirun --bind-to ...` sets OMPI_MCA_hwloc_base_binding_policy),
 * this thread, and the worker thread it starts, may run on every CPU its launcher (mpirun or
 * orted, the parent) may use, as threads of `-j` do. */
static void unbind(void)
{
#ifdef __linux__
    if (getenv("OMPI_MCA_hwloc_base_binding_policy"))
        return;
    cpu_set_t want, now;
    if (sched_getaffinity(getppid(), sizeof want, &want) || sched_getaffinity(0, sizeof now, &now))
        return;
    if (CPU_COUNT(&want) > CPU_COUNT(&now))
        (void)sched_setaffinity(0, sizeof want, &want); /* best effort: bound as before if refused */
#endif
}

int plan_mpi_init(int *rank, int *size)
{
    if (!inited) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "etkit plan: error: MPI_Init failed\n");
            return 2;
        }
        inited = 1;
        unbind();
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

void plan_mpi_finalize(void)
{
    if (inited)
        MPI_Finalize();
    inited = 0;
}

typedef struct {
    uint32_t flat;
    etk_plan_row row;
} wire_row;

/* rank 0's queue, shared by its main thread (for remote workers) and its local worker */
typedef struct {
    etk_plan_search_state *s;
    pthread_mutex_t mu;
    int phase;
    size_t next, done, total;
    bool stop;
    etk_plan_topk tk;
    const etk_plan_row *best;
    mpi_stats local;
} queue;

/* up to max flat row indices of the next work (phase 2: while worth it); returns the count */
static uint32_t take(queue *q, uint32_t *out, uint32_t max)
{
    uint32_t n = 0;
    etk_plan_search_state *s = q->s;
    const uint32_t *order = etk_plan_order(s);
    while (n < max && !q->stop) {
        if (q->phase == 1 ? q->next >= etk_plan_n_rows(s) : !etk_plan_worth(s, q->next, etk_plan_topk_kth(&q->tk))) {
            q->stop = true;
            break;
        }
        out[n++] = q->phase == 1 ? (uint32_t)q->next : order[q->next];
        q->next++;
    }
    return n;
}

/* a finished row into rank 0's rows (phase 2: only the simulation's fields) */
static void merge(queue *q, uint32_t flat, const etk_plan_row *r, const etk_plan_opts *o)
{
    etk_plan_row *d = &etk_plan_rows(q->s)[flat];
    if (q->phase == 1) {
        *d = *r;
    } else if (d != r) {
        d->status = r->status;
        d->step_ns = r->step_ns;
        d->mfu = r->mfu;
        d->tokens_per_s = r->tokens_per_s;
        d->usd_per_mtok = r->usd_per_mtok;
        d->score = r->score;
        memcpy(d->reason, r->reason, sizeof d->reason);
    }
    q->done++;
    if (q->phase == 2 && d->status == ETK_PLAN_SIMULATED) {
        etk_plan_topk_add(&q->tk, d->score);
        if (!q->best || d->score < q->best->score)
            q->best = d;
    }
    if (o->progress)
        o->progress(o->progress_ctx, q->done, q->total, q->best);
}

static const etk_plan_opts *g_opts;

static void *local_worker(void *arg)
{
    queue *q = arg;
    for (;;) {
        uint32_t flat;
        pthread_mutex_lock(&q->mu);
        uint32_t n = take(q, &flat, 1);
        pthread_mutex_unlock(&q->mu);
        if (!n) {
            q->local.cpu += cpu_s(); /* a thread per phase */
            return NULL;
        }
        etk_plan_row *r = &etk_plan_rows(q->s)[flat];
        etk_plan_row tmp = *r;
        double t0 = now_s();
        if (q->phase == 1)
            etk_plan_assess(q->s, &tmp);
        else
            etk_plan_simulate(q->s, &tmp);
        q->local.busy += now_s() - t0; /* only this thread writes it */
        q->local.rows++;
        pthread_mutex_lock(&q->mu);
        merge(q, flat, &tmp, g_opts);
        pthread_mutex_unlock(&q->mu);
    }
}

/* a wait for a message: 50 us, doubling while nothing comes up to 1 ms (the caller resets *ns to
 * 0 when one comes), so an idle poller wakes ~1,000 times a second, not 5,000, without delaying
 * a reply that comes soon */
static void nap(long *ns)
{
    *ns = *ns < 50000 ? 50000 : *ns < 1000000 ? *ns * 2 : 1000000;
    struct timespec ts = {0, *ns};
    nanosleep(&ts, NULL);
}

/* rank 0, one phase: serve the remote workers until each has sent its final message */
static int serve(queue *q, int size, const etk_plan_opts *o, mpi_stats *st0)
{
    pthread_t th;
    bool local = pthread_create(&th, NULL, local_worker, q) == 0;
    int active = size - 1;
    size_t cap = sizeof(msg_head) + CHUNK1 * sizeof(wire_row);
    unsigned char *buf = malloc(cap);
    uint32_t work[1 + CHUNK1];
    if (!buf)
        return -1;
    long wait = 0;
    while (active > 0) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT + q->phase, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
            nap(&wait);
            continue;
        }
        wait = 0;
        st0->msgs++;
        MPI_Recv(buf, (int)cap, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT + q->phase, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        msg_head h;
        memcpy(&h, buf, sizeof h);
        const wire_row *rows = (const wire_row *)(buf + sizeof h);
        pthread_mutex_lock(&q->mu);
        for (uint32_t i = 0; i < h.n && i < CHUNK1; i++)
            merge(q, rows[i].flat, &rows[i].row, o);
        uint32_t n = 0;
        if (!h.final) {
            uint32_t max = 1;
            if (q->phase == 1) {
                size_t left = (etk_plan_n_rows(q->s) - q->next) / (4 * (size_t)size);
                max = left >= CHUNK1 ? CHUNK1 : left < 1 ? 1 : (uint32_t)left;
            }
            n = take(q, work + 1, max);
        }
        pthread_mutex_unlock(&q->mu);
        if (h.final) {
            active--;
            continue;
        }
        work[0] = (uint32_t)q->phase;
        MPI_Send(work, (int)(n + 1), MPI_UINT32_T, st.MPI_SOURCE, TAG_WORK + q->phase, MPI_COMM_WORLD);
    }
    if (local)
        pthread_join(th, NULL);
    else
        local_worker(q);
    free(buf);
    return 0;
}

/* wait for a request with short naps (Open MPI's MPI_Wait spins a core) */
static void wait_req(MPI_Request *rq, MPI_Status *st)
{
    int flag = 0;
    long wait = 0;
    for (;;) {
        MPI_Test(rq, &flag, st ? st : MPI_STATUS_IGNORE);
        if (flag)
            return;
        nap(&wait);
    }
}

/* ranks > 0, one phase: ask for a batch; on each batch, send the previous batch's results with
 * the request for the next (one request in flight), then work on it; when rank 0 has no more,
 * send the last results as the final message. Two result buffers: one in flight, one filled. */
static int work_phase(etk_plan_search_state *s, int phase, unsigned char *bufs[2], mpi_stats *ms)
{
    uint32_t work[1 + CHUNK1];
    MPI_Request sreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, rreq;
    msg_head h = {0, 0};
    int cur = 0; /* the buffer that holds the results of the batch in hand */
    memcpy(bufs[cur], &h, sizeof h);
    MPI_Isend(bufs[cur], (int)sizeof h, MPI_BYTE, 0, TAG_RESULT + phase, MPI_COMM_WORLD, &sreq[cur]);
    ms->msgs++;
    MPI_Irecv(work, 1 + CHUNK1, MPI_UINT32_T, 0, TAG_WORK + phase, MPI_COMM_WORLD, &rreq);
    uint32_t n_res = 0;
    int rdone = 0;
    MPI_Status rst;
    for (;;) {
        int got = 0;
        double t0 = now_s();
        if (!rdone)
            wait_req(&rreq, &rst);
        ms->wait += now_s() - t0;
        MPI_Get_count(&rst, MPI_UINT32_T, &got);
        int n = got > 1 ? got - 1 : 0;
        /* send the finished results (with a request for more unless there is none) */
        int other = cur ^ 1;
        h.final = n == 0;
        h.n = n_res;
        if (sreq[cur] != MPI_REQUEST_NULL)
            wait_req(&sreq[cur], NULL);
        memcpy(bufs[cur], &h, sizeof h);
        MPI_Isend(bufs[cur], (int)(sizeof h + n_res * sizeof(wire_row)), MPI_BYTE, 0, TAG_RESULT + phase,
                  MPI_COMM_WORLD, &sreq[cur]);
        ms->msgs++;
        if (!n)
            break;
        uint32_t batch[CHUNK1];
        memcpy(batch, work + 1, (size_t)n * sizeof *batch);
        MPI_Irecv(work, 1 + CHUNK1, MPI_UINT32_T, 0, TAG_WORK + phase, MPI_COMM_WORLD, &rreq);
        rdone = 0;
        /* the batch in hand, into the other buffer (its send was posted a batch ago) */
        if (sreq[other] != MPI_REQUEST_NULL)
            wait_req(&sreq[other], NULL);
        wire_row *out = (wire_row *)(bufs[other] + sizeof h);
        t0 = now_s();
        for (int i = 0; i < n; i++) {
            out[i].flat = batch[i];
            out[i].row = etk_plan_rows(s)[batch[i]];
            if (phase == 1)
                etk_plan_assess(s, &out[i].row);
            else
                etk_plan_simulate(s, &out[i].row);
            if (!rdone) /* progress (and the next batch's arrival) between rows */
                MPI_Test(&rreq, &rdone, &rst);
        }
        ms->busy += now_s() - t0;
        ms->rows += n;
        n_res = (uint32_t)n;
        cur = other;
    }
    for (int b = 0; b < 2; b++)
        if (sreq[b] != MPI_REQUEST_NULL)
            wait_req(&sreq[b], NULL);
    return 0;
}

static int work_loop(etk_plan_search_state *s, mpi_stats *ms)
{
    size_t cap = sizeof(msg_head) + CHUNK1 * sizeof(wire_row);
    unsigned char *bufs[2] = {malloc(cap), malloc(cap)};
    int rc = bufs[0] && bufs[1] ? 0 : -1;
    for (int phase = 1; !rc && phase <= 2; phase++)
        rc = work_phase(s, phase, bufs, ms);
    free(bufs[0]);
    free(bufs[1]);
    return rc;
}

static void print_stats(int rank, const char *who, const mpi_stats *ms, double wall)
{
    if (getenv("ETK_PLAN_MPI_STATS"))
        fprintf(stderr, "etkit plan: rank %d %s: %.3f s wall, %.3f s working, %.3f s waiting for work, %.3f s CPU, "
                "%ld rows, %ld messages\n", rank, who, wall, ms->busy, ms->wait, ms->cpu, ms->rows, ms->msgs);
}

int plan_mpi_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err)
{
    int rank, size;
    memset(res, 0, sizeof *res);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    etk_plan_search_state *s;
    int rc = etk_plan_begin(sp, jobs, n_jobs, o, &s, err);
    if (rc) {
        MPI_Abort(MPI_COMM_WORLD, 2); /* every process fails alike (same inputs); be sure none waits */
        return rc;
    }
    double t_start = now_s();
    if (rank) {
        mpi_stats ms = {0, 0, 0, 0, 0};
        rc = work_loop(s, &ms) ? etk_err(err, ETK_ENOMEM, "plan search: out of memory") : 0;
        ms.cpu = cpu_s();
        print_stats(rank, "worker", &ms, now_s() - t_start);
        etk_plan_state_free(s);
        return rc;
    }
    mpi_stats served = {0, 0, 0, 0, 0};
    queue q;
    memset(&q, 0, sizeof q);
    q.s = s;
    pthread_mutex_init(&q.mu, NULL);
    g_opts = o;
    if (etk_plan_topk_init(&q.tk, o->top ? o->top : 10)) {
        etk_plan_state_free(s);
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    }
    q.phase = 1;
    q.total = etk_plan_n_rows(s);
    rc = serve(&q, size, o, &served);
    if (!rc) {
        size_t n = etk_plan_sort(s);
        q.phase = 2;
        q.next = 0;
        q.stop = false;
        q.done = etk_plan_n_rows(s) - n;
        rc = serve(&q, size, o, &served);
    }
    served.cpu = cpu_s();
    print_stats(0, "local worker", &q.local, now_s() - t_start);
    print_stats(0, "server", &served, now_s() - t_start);
    if (rc)
        rc = etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    else
        rc = etk_plan_finish(s, res, err);
    etk_plan_topk_free(&q.tk);
    pthread_mutex_destroy(&q.mu);
    etk_plan_state_free(s);
    return rc;
}
#endif
