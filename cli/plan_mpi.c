/* plan_mpi.c — the plan search over MPI processes (plan_mpi.h, docs/plan.md "Parallel search").
 * Every process enumerates the same rows (etk_plan_begin). Rank 0 hands out work and gathers:
 * phase 1 (validity, memory, bound) in chunks of rows, phase 2 (simulation) one row at a time
 * along the bound order while a row can still reach the top k, so plans that cost 100x more
 * than others do not leave processes idle (dynamic load balancing). Rank 0 also works, in a
 * thread of its own; only its main thread calls MPI (MPI_THREAD_FUNNELED), polling with short
 * sleeps so that it does not take a core from the workers. The result is etk_plan_finish's on
 * rank 0's rows: the same as a single process (search.c explains why the order does not matter). */
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

/* tags per phase: a worker's first request of phase 2 waits until rank 0 serves phase 2 */
enum { TAG_RESULT = 10, TAG_WORK = 20 };
/* phase 1 (assess: validity, memory, bound; cheap) goes out in chunks of up to 64 rows (a quarter
 * of what is left per process near the end, for balance), so a remote worker makes ~100 round
 * trips for 6,000 rows instead of 750; phase 2 (simulate: milliseconds to seconds a
 * row) one row at a time, for balance and so the top-k bound prunes as early as with threads */
enum { CHUNK1 = 64 };

static int inited;

int plan_mpi_init(int *rank, int *size)
{
    if (!inited) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "etkit plan: error: MPI_Init failed\n");
            return 2;
        }
        inited = 1;
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
        if (!n)
            return NULL;
        etk_plan_row *r = &etk_plan_rows(q->s)[flat];
        etk_plan_row tmp = *r;
        if (q->phase == 1)
            etk_plan_assess(q->s, &tmp);
        else
            etk_plan_simulate(q->s, &tmp);
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

/* rank 0, one phase: serve the remote workers until each was told the phase is over */
static int serve(queue *q, int size, const etk_plan_opts *o)
{
    pthread_t th;
    bool local = pthread_create(&th, NULL, local_worker, q) == 0;
    int active = size - 1;
    wire_row *buf = malloc(CHUNK1 * sizeof *buf);
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
        int bytes = 0;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        MPI_Recv(buf, CHUNK1 * (int)sizeof *buf, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT + q->phase, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        pthread_mutex_lock(&q->mu);
        for (int i = 0; i < bytes / (int)sizeof *buf; i++)
            merge(q, buf[i].flat, &buf[i].row, o);
        uint32_t max = 1;
        if (q->phase == 1) {
            size_t left = (etk_plan_n_rows(q->s) - q->next) / (4 * (size_t)size);
            max = left >= CHUNK1 ? CHUNK1 : left < 1 ? 1 : (uint32_t)left;
        }
        uint32_t n = take(q, work + 1, max);
        pthread_mutex_unlock(&q->mu);
        work[0] = (uint32_t)q->phase;
        MPI_Send(work, (int)(n + 1), MPI_UINT32_T, st.MPI_SOURCE, TAG_WORK + q->phase, MPI_COMM_WORLD);
        if (!n)
            active--;
    }
    if (local)
        pthread_join(th, NULL);
    else
        local_worker(q);
    free(buf);
    return 0;
}

/* ranks > 0: ask, work, return the rows, until rank 0 sends an empty list; twice (two phases) */
static int work_loop(etk_plan_search_state *s)
{
    wire_row *buf = malloc(CHUNK1 * sizeof *buf);
    uint32_t work[1 + CHUNK1];
    if (!buf)
        return -1;
    for (int phase = 1; phase <= 2; phase++) {
        int n = 0;
        for (;;) {
            MPI_Send(buf, n * (int)sizeof *buf, MPI_BYTE, 0, TAG_RESULT + phase, MPI_COMM_WORLD);
            MPI_Request rq;
            MPI_Status st;
            int got = 0, flag = 0;
            long wait = 0;
            MPI_Irecv(work, 1 + CHUNK1, MPI_UINT32_T, 0, TAG_WORK + phase, MPI_COMM_WORLD, &rq);
            while (!flag) {
                MPI_Test(&rq, &flag, &st);
                if (!flag)
                    nap(&wait);
            }
            MPI_Get_count(&st, MPI_UINT32_T, &got);
            if (got <= 1)
                break;
            n = got - 1;
            for (int i = 0; i < n; i++) {
                buf[i].flat = work[1 + i];
                buf[i].row = etk_plan_rows(s)[work[1 + i]];
                if (work[0] == 1)
                    etk_plan_assess(s, &buf[i].row);
                else
                    etk_plan_simulate(s, &buf[i].row);
            }
        }
    }
    free(buf);
    return 0;
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
    if (rank) {
        rc = work_loop(s) ? etk_err(err, ETK_ENOMEM, "plan search: out of memory") : 0;
        etk_plan_state_free(s);
        return rc;
    }
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
    rc = serve(&q, size, o);
    if (!rc) {
        size_t n = etk_plan_sort(s);
        q.phase = 2;
        q.next = 0;
        q.stop = false;
        q.done = etk_plan_n_rows(s) - n;
        rc = serve(&q, size, o);
    }
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
