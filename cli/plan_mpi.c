/* plan_mpi.c — the plan search over MPI processes (plan_mpi.h, docs/plan.md "Parallel search").
 * Every process enumerates the same rows (etk_plan_begin). Rank 0 hands out work and gathers:
 * phase 1 (validity, memory, bound) in chunks of rows, phase 2 (simulation) a few rows per thread
 * ahead (AHEAD2) along the bound order while a row can still reach the top k, so plans that cost 100x more
 * than others do not leave processes idle (dynamic load balancing). Every process runs -j N
 * worker threads (rank 0's beside its serving main thread); only main threads call MPI
 * (MPI_THREAD_FUNNELED), polling with short sleeps so that they do not take a core from the
 * workers. On one node the workers start before MPI_Init (plan_mpi_early_rank), and near each
 * phase's end rank 0 hands rows only to threads without any (LAZY). The result is etk_plan_finish's on
 * rank 0's rows: the same as a single process (search.c explains why the order does not matter). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <stdlib.h>
#include <string.h>

#include "plan_mpi.h"
#include "plan_mpi_timeline.h"

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
int plan_mpi_early_rank(void)
{
    return -1;
}
void plan_mpi_finalize(void) {}
void plan_mpi_mark(plan_mpi_step step)
{
    (void)step;
}
int plan_mpi_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err)
{
    return etk_plan_search(sp, jobs, n_jobs, o, res, err);
}
#else
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

/* tags per phase: a worker's first request of phase 2 waits until rank 0 serves phase 2 */
enum { TAG_RESULT = 10, TAG_WORK = 20 };
/* phase 1 (assess: validity, memory, bound; ~1 ms a row) goes out in chunks of up to 64 rows per
 * thread (a quarter of what is left per worker thread near the end, for balance), so a remote
 * worker makes ~100 round trips for 6,000 rows instead of 750; phase 2 (simulate: milliseconds to
 * seconds a row) one row per thread at a time, for balance and so the top-k bound prunes as
 * early as with threads. A remote process keeps one request in flight and asks for more (with
 * the results finished so far) before its threads run dry, so the round trip through rank 0's
 * serving thread (a nap of up to 1 ms, then a time slice on a loaded machine) overlaps the work
 * instead of adding to it (bench/RESULTS.md "s25-plan"): in phase 2 as soon as its queue holds
 * less than a row per thread; in phase 1 as soon as it holds less than LOW1 rows per thread
 * (~30 ms of work ahead). Phase 1's results go to rank 0 only with a request or the final
 * message (rank 0 needs them only at the phase's end); phase 2's as soon as no request is due,
 * so that rank 0's top-k bound learns them early. Before s27 a remote process sent every
 * phase-1 row on its own as it finished (1,400 messages for 2,400 rows, each waking both main
 * threads) and asked for a chunk only when its queue was empty (its thread idle for the round
 * trip, bench/RESULTS.md "s27-plan"). */
enum { CHUNK1 = 64, LOW1 = CHUNK1 / 2 };
/* phase 2: a remote process keeps this many rows per thread queued besides the running ones
 * (s33; one before), so that a reply may take a row's time or two and both main threads poll
 * seldom (rank 0's serving thread naps half its mean row, up to NAP_SLACK, while it has work to
 * hand out; the remote main thread as long between polls). Rows held ahead that rank 0's k-th
 * best score has meanwhile passed are not simulated (remote_worker: rank 0 sends that score and
 * each row's bound with its replies), and near the end rank 0 hands rows only to threads without
 * work from 2 * AHEAD2 rows per worker thread left (end_zone). Measured with 1 and 2 rows ahead:
 * with one, rank 0's naps had to stay short; with two, the remote worker still ran dry ~50 times
 * a run on llama3-8b (0.19 s; 8b rows ~6 ms), with three 0.03-0.06 s (bench/RESULTS.md
 * "s33-mpi"). */
enum { AHEAD2 = 3 };

/* a worker process's message: the results of the rows it finished since its last message; want:
 * for how many of its threads it asks for work (0: none, the message only carries results, and
 * rank 0 does not answer); final: its last message of the phase; idle: how many of its threads
 * will soon have nothing to do when it sends (phase 2: no row running or queued; phase 1: none
 * queued beyond the one running; rank 0's "end zone", serve). 16 bytes, so the rows after it
 * stay aligned. */
typedef struct {
    uint32_t final, n, want, idle;
} msg_head;

/* Rank 0's reply: [phase | LAZY, rows...]. No rows and no LAZY: no more work this phase. LAZY
 * (s30): rank 0 is in the phase's "end zone" (few rows left: phase 1 fewer than LOW1 per worker
 * thread of all processes, phase 2 at most two per worker thread that can still reach the top k);
 * from then on the process asks only for threads that have nothing to do (phase 1: nothing
 * queued beyond the row running, ~2 ms, which hides the round trip), and rank 0 gives rows only
 * to those (none: the reply defers; the process asks again when a thread runs dry). Before,
 * a remote process held its rows ahead (phase 1: up to 32 per thread, phase 2: one per thread)
 * to the end, and rank 0's workers idled at each phase's end while it worked them off
 * (0.2-0.5 s a run near idle, bench/RESULTS.md "s29-plan"); now the last rows go to whoever
 * is free. */
enum { LAZY = 0x100 };
/* the reply's head: [phase | LAZY, rank 0's k-th best score so far (a double, two words)]; then
 * the rows: phase 1 a flat index each, phase 2 a flat index and the row's lower-bound score (s33) */
enum { REPLY_HEAD = 3 };

/* -j as the number of workers per process (search.c's bounds) */
static uint32_t n_threads(const etk_plan_opts *o)
{
    return o->threads < 1 ? 1 : o->threads > 64 ? 64 : o->threads;
}

/* per-process counters, printed to stderr at the end when ETK_PLAN_MPI_STATS is set
 * (docs/plan.md "Parallel search") */
typedef struct {
    double busy, wait, cpu, main_cpu; /* main_cpu: a remote process's main thread (in cpu too) */
    long msgs, rows, threads; /* threads: worker threads started (the last phase) */
    long msgs1, bare1, rows1;  /* rank 0's server, phase 1: messages, those without a request, rows in them */
    long csw, main_csw; /* context switches (voluntary + involuntary): the worker threads', the main thread's */
    long icsw, main_icsw; /* of those, involuntary (preempted) */
    long skipped; /* a remote process, phase 2: rows past the cut not simulated (remote_worker) */
} mpi_stats;

/* context switches of the calling thread so far (voluntary + involuntary) */
static long thread_csw(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru))
        return 0;
    return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* the calling thread's involuntary context switches so far (preempted: the rest are its waits) */
static long thread_icsw(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double g_workers_cpu; /* this process's worker threads, all phases */
static const char *g_pml = "Open MPI's choice"; /* which PML, and why (one_node_pml) */
static int g_rank;

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

/* Open MPI's MPI_Init opens every point-to-point messaging layer (PML) it has and keeps the best:
 * with Debian's defaults (/etc/openmpi/openmpi-mca-params.conf: pml ^ucx, mtl ^ofi) that is cm,
 * which probes the PSM/PSM2 fabrics, before it settles on ob1, the only one that runs here.
 * Measured on the 2-core machine at load ~5: MPI_Init 0.29-0.45 s wall, 0.07-0.09 s CPU per
 * process by default, 0.10-0.22 s and 0.04-0.06 s with ob1 alone (bench/RESULTS.md "s29-plan"). When all processes are on
 * one node (OMPI_COMM_WORLD_LOCAL_SIZE = OMPI_COMM_WORLD_SIZE: then every process sees the same
 * and chooses alike), ob1 over shared memory is what any PML would do for the few kilobytes the
 * search sends, so etkit asks for it, unless the user chose a PML: `mpirun --mca pml X` (or
 * `-x OMPI_MCA_pml=X`) sets OMPI_MCA_pml, which is then left alone; ETK_PLAN_MPI_PML=default
 * leaves Open MPI's choice (and its parameter files) in force. Several nodes: nothing changes. */
static void one_node_pml(void)
{
    const char *all = getenv("OMPI_COMM_WORLD_SIZE"), *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const char *opt = getenv("ETK_PLAN_MPI_PML");
    if (getenv("OMPI_MCA_pml"))
        g_pml = "the user's OMPI_MCA_pml";
    else if (opt && !strcmp(opt, "default"))
        g_pml = "Open MPI's choice (ETK_PLAN_MPI_PML=default)";
    else if (!all || !local || strcmp(all, local))
        g_pml = "Open MPI's choice (processes on several nodes)";
    else if (!setenv("OMPI_MCA_pml", "ob1", 0))
        g_pml = "ob1 (all processes on one node)";
}

int plan_mpi_init(int *rank, int *size)
{
    if (!inited) {
        int provided;
        one_node_pml();
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "etkit plan: error: MPI_Init failed\n");
            return 2;
        }
        inited = 1;
        unbind();
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    g_rank = *rank;
    plan_mpi_mark(PLAN_MPI_INIT);
    return 0;
}

/* The search starts before MPI_Init (s30): the plan space, the presets and phase 1's first rows need
 * no MPI, so every process builds its space and starts its worker threads first, and its main
 * thread then calls MPI_Init while they work (MPI_THREAD_FUNNELED: the other threads never call
 * MPI, so they may exist during MPI_Init). Rank 0 starts on phase 1's rows from the front; a
 * process of rank r > 0 on a block of rows at the end that no one else takes (claimed_rows), and
 * asks rank 0 for more once MPI is up. MPI_Init (0.1-0.2 s wall per process with ob1,
 * bench/RESULTS.md "s29-plan") so overlaps the search instead of preceding it. That needs each
 * process's rank and the number of processes before MPI_Init: Open MPI's launcher gives them
 * (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE), and after MPI_Init they are checked against
 * MPI's. Only on one node (OMPI_COMM_WORLD_LOCAL_SIZE = OMPI_COMM_WORLD_SIZE, where etkit also
 * asks for ob1): there Open MPI 4.1.4's MPI_Init was checked to patch no code that the threads
 * run (its memory hooks, for RDMA registration caches, leave munmap and madvise as they were:
 * their first bytes compared before and after MPI_Init); across nodes (InfiniBand's registration
 * caches) MPI_Init comes first, as before. Returns the rank, or -1: MPI_Init first. */
int plan_mpi_early_rank(void)
{
    const char *all = getenv("OMPI_COMM_WORLD_SIZE"), *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const char *r = getenv("OMPI_COMM_WORLD_RANK"), *opt = getenv("ETK_PLAN_MPI_EARLY");
    if (inited || !all || !local || !r || strcmp(all, local) || atoi(all) < 2 || (opt && !strcmp(opt, "0")))
        return -1;
    int rank = atoi(r);
    return rank >= 0 && rank < atoi(all) ? rank : -1;
}

/* rows at the end of phase 1 that a process of rank > 0 takes before MPI_Init (each its own
 * block of this many; rank 0 stops before them): two chunks per thread (~0.3 s of work with
 * one thread on the case), at most 1/(4K) of the rows each with K processes */
static size_t claimed_rows(size_t n_rows, int size, uint32_t threads)
{
    size_t c = 2 * (size_t)CHUNK1 * threads, cap = n_rows / (4 * (size_t)size);
    return c < cap ? c : cap;
}

/* MPI_Init once the threads work (plan_mpi_early_rank); a process whose rank or size from the
 * environment is not MPI's stops them all */
static void init_late(int rank, int size)
{
    int r, n;
    if (plan_mpi_init(&r, &n))
        exit(2); /* plan_mpi_init said why; the worker threads are running */
    if (r != rank || n != size) {
        fprintf(stderr, "etkit plan: error: rank %d of %d from the launcher's environment, %d of %d from MPI: "
                "run with ETK_PLAN_MPI_EARLY=0\n", rank, size, r, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

void plan_mpi_finalize(void)
{
    if (!inited)
        return;
    MPI_Finalize();
    inited = 0;
    plan_mpi_mark(PLAN_MPI_FINALIZE);
    if (getenv("ETK_PLAN_MPI_STATS"))
        plan_mpi_timeline_print(g_rank, g_workers_cpu, g_pml);
}

typedef struct {
    uint32_t flat, reserved;
    etk_plan_row row;
} wire_row;

/* rank 0's queue, shared by its main thread (for remote workers) and its local workers */
typedef struct {
    etk_plan_search_state *s;
    pthread_mutex_t mu;
    int phase;
    uint32_t threads, workers; /* local workers (-j); workers of all processes */
    size_t next, done, total;
    bool stop;
    etk_plan_topk tk;
    const etk_plan_row *best;
    mpi_stats local; /* the local workers together (under mu) */
    double row_s;    /* this phase's rows done by local workers: seconds, count (for serve's naps) */
    long row_n;
    double exit_s;   /* sum of the times local workers ran out of work this phase, and how many */
    long exits;
    bool end;        /* this phase's end zone reached (end_zone; stays so to the phase's end) */
    size_t end1;     /* phase 1: rank 0 hands out rows before this (the rest are claimed_rows) */
    int init_rank;   /* >= 0: MPI_Init after the workers start (init_late) */
    double end_wait[2]; /* local workers' idle time at each phase's end (ETK_PLAN_MPI_STATS) */
} queue;

/* whether the phase is in its end zone (see LAZY; under q->mu) */
static bool end_zone(queue *q)
{
    if (q->end || q->stop)
        return q->end;
    size_t lim = q->phase == 1 ? (size_t)q->workers * LOW1 : 2 * AHEAD2 * (size_t)q->workers, left = 0;
    if (q->phase == 1) {
        left = q->end1 - q->next;
    } else {
        double kth = etk_plan_topk_kth(&q->tk);
        while (left <= lim && etk_plan_worth(q->s, q->next + left, kth))
            left++;
    }
    q->end = left <= lim;
    return q->end;
}

/* up to max flat row indices of the next work (phase 2: while worth it); returns the count */
static uint32_t take(queue *q, uint32_t *out, uint32_t max)
{
    uint32_t n = 0;
    etk_plan_search_state *s = q->s;
    const uint32_t *order = etk_plan_order(s);
    while (n < max && !q->stop) {
        if (q->phase == 1 ? q->next >= q->end1 : !etk_plan_worth(s, q->next, etk_plan_topk_kth(&q->tk))) {
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
    if (flat >= etk_plan_n_rows(q->s))
        return;
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

/* one of rank 0's local workers (-j N: N of them), one phase */
static void *local_worker(void *arg)
{
    queue *q = arg;
    double busy = 0;
    long rows = 0;
    for (;;) {
        uint32_t flat;
        pthread_mutex_lock(&q->mu);
        uint32_t n = take(q, &flat, 1);
        if (!n) {
            q->exit_s += now_s(); /* idle from now to the phase's end: serve adds it to local.wait */
            q->exits++;
            q->local.busy += busy;
            q->local.rows += rows;
            q->local.cpu += plan_mpi_thread_cpu_s(); /* threads per phase */
            q->local.csw += thread_csw();
            q->local.icsw += thread_icsw();
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        pthread_mutex_unlock(&q->mu);
        etk_plan_row tmp = etk_plan_rows(q->s)[flat]; /* nobody writes this row until it is merged */
        double t0 = now_s();
        if (q->phase == 1)
            etk_plan_assess(q->s, &tmp);
        else
            etk_plan_simulate(q->s, &tmp);
        double dt = now_s() - t0;
        busy += dt;
        rows++;
        pthread_mutex_lock(&q->mu);
        q->row_s += dt;
        q->row_n++;
        merge(q, flat, &tmp, g_opts);
        pthread_mutex_unlock(&q->mu);
    }
}

/* a wait for a message: 50 us, doubling while nothing comes up to cap ns (the caller resets *ns
 * to 0 when one comes), so an idle poller wakes at most 1e9 / cap times a second without delaying
 * a reply that comes soon. NAP_URGENT (1 ms): someone waits for the message (a worker thread
 * without work, rank 0 for a phase's last results). Rank 0 while it has work to hand out naps
 * its whole cap at once (s33: no request is due soon, as the others ask ahead; before, each
 * message reset the nap to 50 us, ~8 naps to climb back to the cap, every message):
 * NAP_SLACK1 (8 ms) in phase 1, where a remote process asks for its next chunk while it still
 * holds LOW1 rows per thread (~30-100 ms of work); in phase 2, where it asks while it holds
 * AHEAD2 rows per thread queued (rows take 1-1,000 ms to simulate, median ~11 ms on the issue's
 * case), half of rank 0's own mean row time so far, at least NAP_URGENT and at most NAP_SLACK
 * (8 ms). Up to s32: an eighth of the mean row, 1-4 ms, with a process asking one row ahead
 * (s29: 0.68-1.91 s of the server's CPU before s29, 0.51-0.73 s after, at load 5-13; context
 * switches of the whole run 72,000-120,000 before, 42,000-49,000 after; bench/RESULTS.md
 * "s29-plan"; s33's figures: bench/RESULTS.md "s33-mpi"). */
enum { NAP_URGENT = 1000000, NAP_SLACK = 8000000, NAP_SLACK1 = 8000000 };
static void nap(long *ns, long cap)
{
    *ns = *ns < 50000 ? 50000 : *ns < cap / 2 ? *ns * 2 : cap;
    struct timespec ts = {0, *ns};
    nanosleep(&ts, NULL);
}

/* grow *buf to at least need bytes; 0, or -1 out of memory */
static int reserve(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    void *p = realloc(*buf, c);
    if (!p)
        return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* A message sent without waiting for it (s33). A blocking MPI_Send spins in opal_progress (with
 * --oversubscribe: sched_yield) until the receiver has matched it (over the shared-memory
 * transport's eager limit, 4 KiB with Open MPI 4.1's vader, i.e. ten rows: rendezvous) and even a
 * small message's send completes only once the receiver has handed the fragment back, i.e. once
 * it polls (bench/RESULTS.md "s27-plan": 0.8 s of a remote main thread's CPU in MPI_Send over an
 * 8 s search). Up to s32 the sender then napped (50 us, doubling to 1 ms) until the send was
 * done, which took until the other main thread's next poll (rank 0's naps of up to 4-8 ms): 2,233
 * of the 2,818 such naps of one llama3-8b run were for messages of a single row (s33). Now the
 * sender goes on, and waits only when it needs the buffer again (out_wait), by which time the
 * other side has as a rule long received it: rank 0 replies to a process only after it asked
 * again, i.e. after it received the last reply; a process sends at most a bare result message
 * and a request before the reply to that request, and has a buffer for each. */
typedef struct {
    void *buf;
    size_t cap, bytes; /* bytes: of the message last sent */
    MPI_Request req;   /* MPI_REQUEST_NULL: the buffer is free */
} out_msg;
enum { EAGER_BYTES = 4096 }; /* Open MPI 4.1's vader: btl_vader_eager_limit */

static void out_wait(out_msg *m)
{
    long wait = 0;
    while (m->req != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Test(&m->req, &flag, MPI_STATUS_IGNORE); /* done: sets req to MPI_REQUEST_NULL */
        if (!flag)
            nap(&wait, NAP_URGENT);
    }
}

/* rank 0, one phase: serve the remote workers until each process has sent its final message,
 * while q->threads local workers search beside */
static int serve(queue *q, int size, const etk_plan_opts *o, mpi_stats *st0)
{
    pthread_t th[64];
    uint32_t started = 0;
    while (started < q->threads && pthread_create(&th[started], NULL, local_worker, q) == 0)
        started++;
    pthread_mutex_lock(&q->mu);
    q->local.threads = started ? started : 1; /* none started: the main thread works after serving */
    pthread_mutex_unlock(&q->mu);
    if (q->init_rank >= 0) {
        init_late(q->init_rank, size);
        q->init_rank = -1;
    }
    int active = size - 1, rc = 0;
    out_msg *replies = malloc((size_t)size * sizeof *replies); /* per process: the last reply */
    if (!replies) {
        fprintf(stderr, "etkit plan: error: rank 0: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < size; i++)
        replies[i] = (out_msg){NULL, 0, 0, MPI_REQUEST_NULL};
    void *buf = NULL, *work = NULL;
    size_t cap = 0, wcap = 0;
    long wait = 0;
    while (active > 0) {
        int flag = 0, bytes = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT + q->phase, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
            /* the remote processes ask ahead (NAP_SLACK1, NAP_SLACK); once all work is handed
             * out, rank 0 waits for nothing but their last results */
            pthread_mutex_lock(&q->mu);
            long cap = NAP_URGENT;
            bool slack = false;
            if (end_zone(q)) {
                cap = NAP_URGENT; /* the requests come from threads without work */
            } else if (!q->stop && q->phase == 1) {
                cap = NAP_SLACK1;
                slack = true;
            } else if (!q->stop) { /* half of rank 0's mean row so far, 1-8 ms */
                double half = q->row_n ? 0.5e9 * q->row_s / (double)q->row_n : 0;
                cap = half >= NAP_SLACK ? NAP_SLACK : half <= NAP_URGENT ? NAP_URGENT : (long)half;
                slack = true;
            }
            pthread_mutex_unlock(&q->mu);
            if (slack) /* the next request is not due soon: no short naps first (s33) */
                wait = cap;
            nap(&wait, cap);
            continue;
        }
        wait = 0;
        st0->msgs++;
        st0->msgs1 += q->phase == 1;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        if (bytes < (int)sizeof(msg_head) || reserve(&buf, &cap, (size_t)bytes)) {
            /* a message too short is none of ours; out of memory, nobody can go on */
            fprintf(stderr, "etkit plan: error: rank 0: %s\n", bytes < (int)sizeof(msg_head) ? "bad message" : "out of memory");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        MPI_Recv(buf, bytes, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT + q->phase, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        msg_head h;
        memcpy(&h, buf, sizeof h);
        const wire_row *rows = (const wire_row *)((unsigned char *)buf + sizeof h);
        size_t n_in = ((size_t)bytes - sizeof h) / sizeof(wire_row);
        /* phase 1: a chunk per thread asked for (up to 64 rows, a quarter of what is left per
         * worker near the end); phase 2: one row per thread */
        uint32_t per = 1, max = 0, n = 0, lazy = 0;
        if (!h.final && h.want) {
            uint32_t want = h.want > 64 ? 64 : h.want;
            pthread_mutex_lock(&q->mu);
            if (end_zone(q)) { /* rows only for the threads without any */
                lazy = LAZY;
                want = h.idle < want ? h.idle : want;
            }
            pthread_mutex_unlock(&q->mu);
            if (q->phase == 1) {
                size_t left = (q->end1 - q->next) / (4 * (size_t)q->workers);
                per = left >= CHUNK1 ? CHUNK1 : left < 1 ? 1 : (uint32_t)left;
            }
            max = want * per;
            if (reserve(&work, &wcap, (1 + (size_t)max) * sizeof(uint32_t))) {
                fprintf(stderr, "etkit plan: error: rank 0: out of memory\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        out_msg *m = &replies[st.MPI_SOURCE];
        size_t words = 0; /* of the reply */
        if (!h.final && h.want) {
            out_wait(m); /* as a rule done long ago: this process asked again after receiving it */
            if (reserve(&m->buf, &m->cap, (REPLY_HEAD + 3 * (size_t)max) * sizeof(uint32_t))) {
                fprintf(stderr, "etkit plan: error: rank 0: out of memory\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        pthread_mutex_lock(&q->mu);
        for (size_t i = 0; i < h.n && i < n_in; i++)
            merge(q, rows[i].flat, &rows[i].row, o);
        if (max)
            n = take(q, (uint32_t *)work + 1, max);
        if (lazy && !n && q->stop)
            lazy = 0; /* nothing was to defer: no more work */
        if (!h.final && h.want) { /* [phase | LAZY, k-th best score (a double), rows] */
            uint32_t *out = m->buf;
            double kth = etk_plan_topk_kth(&q->tk);
            out[0] = (uint32_t)q->phase | lazy;
            memcpy(&out[1], &kth, sizeof kth);
            words = REPLY_HEAD;
            for (uint32_t i = 0; i < n; i++) {
                uint32_t flat = ((uint32_t *)work)[1 + i];
                out[words++] = flat;
                if (q->phase == 2) { /* and its bound (the other process has not assessed it) */
                    memcpy(&out[words], &etk_plan_rows(q->s)[flat].lb_score, sizeof(double));
                    words += 2;
                }
            }
        }
        pthread_mutex_unlock(&q->mu);
        if (q->phase == 1) {
            st0->bare1 += !h.want;
            st0->rows1 += (long)(h.n < n_in ? h.n : n_in);
        }
        if (h.final) {
            active--;
            continue;
        }
        if (!h.want)
            continue;
        MPI_Isend(m->buf, (int)words, MPI_UINT32_T, st.MPI_SOURCE, TAG_WORK + q->phase, MPI_COMM_WORLD, &m->req);
    }
    for (int i = 0; i < size; i++) {
        out_wait(&replies[i]);
        free(replies[i].buf);
    }
    free(replies);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (!started)
        local_worker(q);
    double idle = (double)q->exits * now_s() - q->exit_s; /* the workers' idle end of the phase */
    q->local.wait += idle;
    q->end_wait[q->phase == 1 ? 0 : 1] = idle;
    q->exit_s = 0;
    q->exits = 0;
    q->end = false;
    free(buf);
    free(work);
    return rc;
}

/* ranks > 0: a process of -j N threads. Its main thread (the only one to call MPI) keeps the
 * threads fed: it asks rank 0 for work for as many threads as the local queue lacks (one request
 * in flight; the queue is topped up to a chunk per thread in phase 1 and AHEAD2 rows per thread
 * beyond the running ones in phase 2 while the threads work), and sends the finished rows with
 * each request, or on their own when no request is due. */
typedef struct {
    etk_plan_search_state *s;
    int phase;
    uint32_t threads;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work came, or no more will */
    pthread_cond_t cv_main; /* a row finished (the main thread waits on it when no reply is due) */
    uint32_t *pend;    /* flat rows to do: [head, tail) (at most n_rows a phase) */
    size_t head, tail;
    bool no_more;
    bool lazy;         /* rank 0 is in the phase's end zone: ask only for threads without work (LAZY) */
    size_t claim0, n_claim; /* phase 1: rows [claim0, claim0 + n_claim) taken before MPI_Init */
    int init_rank, size;    /* init_rank >= 0: MPI_Init after the threads start (init_late) */
    uint32_t busy;     /* threads on a row */
    double kth;        /* phase 2: rank 0's k-th best score at its last reply (INFINITY: none yet) */
    double *lb;        /* phase 2: the lower-bound score of each row rank 0 handed out (from its phase 1) */
    double row_s;      /* this phase's rows done: seconds, count (work_phase's polls) */
    long row_n;
    wire_row *out;     /* finished, not sent */
    size_t n_out, cap_out;
    bool oom;
    mpi_stats *ms;
} remote;

static void *remote_worker(void *arg)
{
    remote *R = arg;
    double busy = 0, wait = 0;
    long rows = 0, skipped = 0;
    pthread_mutex_lock(&R->mu);
    for (;;) {
        double t0 = now_s();
        if (R->head == R->tail && !R->no_more)
            pthread_cond_signal(&R->cv_main); /* out of work: the main thread asks or polls for this thread */
        while (R->head == R->tail && !R->no_more)
            pthread_cond_wait(&R->cv, &R->mu);
        wait += now_s() - t0;
        if (R->head == R->tail)
            break;
        wire_row w = {R->pend[R->head++], 0, {0}};
        /* phase 2: a row whose bound rank 0's k-th best score has passed since it was handed out
         * is past the cut (search.c, "Determinism": k rows before it score better than its bound):
         * it goes back as it came, unsimulated, as a thread of -j would not have taken it */
        bool skip = R->phase == 2 && R->lb[w.flat] > R->kth;
        R->busy++;
        size_t left = R->tail - R->head;
        if (R->phase == 2 || left <= R->threads || left + 1 == (size_t)R->threads * LOW1)
            pthread_cond_signal(&R->cv_main); /* a request may be due, or the reply urgent (see work_phase) */
        pthread_mutex_unlock(&R->mu);
        w.row = etk_plan_rows(R->s)[w.flat]; /* this process never writes its rows */
        t0 = now_s();
        if (R->phase == 1)
            etk_plan_assess(R->s, &w.row);
        else if (!skip)
            etk_plan_simulate(R->s, &w.row);
        else
            skipped++;
        double dt = now_s() - t0;
        busy += dt;
        rows++;
        pthread_mutex_lock(&R->mu);
        R->row_s += dt;
        R->row_n++;
        if (R->n_out == R->cap_out) {
            size_t c = R->cap_out ? 2 * R->cap_out : 64;
            wire_row *p = realloc(R->out, c * sizeof *p);
            if (p) {
                R->out = p;
                R->cap_out = c;
            }
        }
        if (R->n_out < R->cap_out)
            R->out[R->n_out++] = w;
        else
            R->oom = true;
        R->busy--;
        /* phase 2: the row goes to rank 0 now; phase 1: with the next request, or at the end */
        if (R->phase == 2 || (R->no_more && R->head == R->tail && !R->busy) || R->oom)
            pthread_cond_signal(&R->cv_main);
    }
    R->ms->busy += busy;
    R->ms->wait += wait;
    R->ms->skipped += skipped;
    R->ms->rows += rows;
    R->ms->cpu += plan_mpi_thread_cpu_s();
    R->ms->csw += thread_csw();
    R->ms->icsw += thread_icsw();
    pthread_mutex_unlock(&R->mu);
    return NULL;
}

static int work_phase(remote *R, int phase)
{
    uint32_t N = R->threads;
    size_t wcap = REPLY_HEAD + 3 * (size_t)N * CHUNK1; /* phase 1: N chunks; phase 2: at most 64 rows of 3 words */
    uint32_t *work = malloc(wcap * sizeof *work);
    out_msg ob[2] = {{NULL, 0, 0, MPI_REQUEST_NULL}, {NULL, 0, 0, MPI_REQUEST_NULL}}; /* messages to rank 0 */
    if (!work)
        return -1;
    R->phase = phase;
    R->head = R->tail = 0;
    R->no_more = false;
    R->lazy = false;
    R->n_out = 0;
    R->busy = 0;
    R->row_s = 0;
    R->row_n = 0;
    R->kth = INFINITY;
    for (size_t i = 0; phase == 1 && i < R->n_claim && R->claim0 + i < etk_plan_n_rows(R->s); i++)
        R->pend[R->tail++] = (uint32_t)(R->claim0 + i);
    pthread_t th[64];
    uint32_t started = 0;
    while (started < N && pthread_create(&th[started], NULL, remote_worker, R) == 0)
        started++;
    if (!started) {
        free(work);
        return -1;
    }
    R->ms->threads = started;
    if (R->init_rank >= 0) {
        init_late(R->init_rank, R->size);
        R->init_rank = -1;
    }
    MPI_Request rreq = MPI_REQUEST_NULL;
    bool in_flight = false;
    long wait = 0;
    int rc = 0;
    for (;;) {
        bool event = false, blocked = false;
        for (int b = 0; b < 2; b++)
            if (ob[b].req != MPI_REQUEST_NULL) {
                int flag = 0;
                MPI_Test(&ob[b].req, &flag, MPI_STATUS_IGNORE);
                /* a rendezvous send needs this side's progress once rank 0 matches it (rank 0
                 * waits in MPI_Recv meanwhile): poll as for a reply */
                blocked |= !flag && ob[b].bytes > EAGER_BYTES;
            }
        if (in_flight) {
            int flag = 0;
            MPI_Status st;
            MPI_Test(&rreq, &flag, &st);
            if (flag) {
                int got = 0;
                MPI_Get_count(&st, MPI_UINT32_T, &got);
                size_t per = phase == 2 ? 3 : 1, n = got > REPLY_HEAD ? ((size_t)got - REPLY_HEAD) / per : 0;
                in_flight = false;
                event = true;
                bool lazy = got >= 1 && (work[0] & LAZY);
                pthread_mutex_lock(&R->mu);
                if (got >= REPLY_HEAD)
                    memcpy(&R->kth, &work[1], sizeof R->kth);
                for (size_t i = 0; i < n && R->tail < etk_plan_n_rows(R->s); i++) {
                    uint32_t flat = work[REPLY_HEAD + per * i];
                    if (phase == 2 && flat < etk_plan_n_rows(R->s))
                        memcpy(&R->lb[flat], &work[REPLY_HEAD + per * i + 1], sizeof(double));
                    R->pend[R->tail++] = flat;
                }
                if (lazy)
                    R->lazy = true; /* to the phase's end */
                else if (!n)
                    R->no_more = true;
                pthread_cond_broadcast(&R->cv);
                pthread_mutex_unlock(&R->mu);
            }
        }
        pthread_mutex_lock(&R->mu);
        size_t queued = R->tail - R->head, n_out = R->n_out;
        bool done = R->no_more && !queued && !R->busy, oom = R->oom;
        /* threads that will have nothing to do: phase 2, without a row running or queued; phase 1
         * (rows of ~2 ms), without a row queued beyond the one running, so that the round trip
         * is hidden behind that row */
        size_t held = phase == 1 ? queued : queued + R->busy;
        uint32_t want = 0, idle = started > held ? started - (uint32_t)held : 0;
        if (!in_flight && !R->no_more) {
            if (R->lazy)
                want = idle;
            else if (phase == 1)
                want = queued < (size_t)started * LOW1 ? started : 0;
            else
                want = held < (AHEAD2 + 1) * started ? (AHEAD2 + 1) * started - (uint32_t)held : 0;
        }
        bool send = done || want || (phase == 2 && n_out && !in_flight);
        out_msg *m = ob[0].req == MPI_REQUEST_NULL ? &ob[0] : ob[1].req == MPI_REQUEST_NULL ? &ob[1] : NULL;
        if (send && !m) { /* both buffers still on their way: rank 0 has not polled yet */
            send = false;
            blocked = true;
        }
        if (send && !oom) {
            oom = reserve(&m->buf, &m->cap, sizeof(msg_head) + n_out * sizeof(wire_row)) != 0;
            if (!oom) {
                if (n_out) /* R->out is NULL until a row is done */
                    memcpy((unsigned char *)m->buf + sizeof(msg_head), R->out, n_out * sizeof(wire_row));
                R->n_out = 0;
            }
        }
        pthread_mutex_unlock(&R->mu);
        if (oom) {
            /* rank 0 would wait for these rows forever */
            fprintf(stderr, "etkit plan: error: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (send) {
            msg_head h = {done, (uint32_t)n_out, want, idle};
            memcpy(m->buf, &h, sizeof h);
            if (want) /* posted before the request goes out */
                MPI_Irecv(work, (int)wcap, MPI_UINT32_T, 0, TAG_WORK + phase, MPI_COMM_WORLD, &rreq);
            m->bytes = sizeof h + n_out * sizeof(wire_row);
            MPI_Isend(m->buf, (int)m->bytes, MPI_BYTE, 0, TAG_RESULT + phase, MPI_COMM_WORLD, &m->req);
            R->ms->msgs++;
            in_flight = want > 0;
            event = true;
            if (done)
                break;
        }
        if (event) {
            wait = 0;
        } else if (blocked || (in_flight && (R->lazy || (phase == 2 ? idle > 0 : queued <= started)))) {
            /* a reply is urgent (a thread has nothing to do; phase 1: at most a row per thread
             * queued; the end zone), or a rendezvous send waits for this side: poll (Open MPI's
             * blocking wait spins a core). s29 tried polling only every 10 ms while every thread
             * still had a row, woken at once by a thread out of work, with one row ahead: its
             * worker's wait for work grew from ~0.01 to 0.08-0.14 s; s33 keeps AHEAD2 rows per
             * thread queued in phase 2, so the reply has a whole row's time or more */
            nap(&wait, NAP_URGENT);
        } else {
            /* nothing urgent (in phase 1 finished rows wait for the next request): sleep until
             * a thread takes or finishes a row or runs dry (the events that can make a message
             * due or a reply urgent; remote_worker signals those, in phase 1 only when its queue
             * falls below LOW1 rows per thread or to a row per thread), so the main thread costs
             * no CPU while rows run; with a phase-2 request in flight, at most half its mean row
             * time (1-8 ms, as rank 0's naps: a reply that comes is taken while a row is still
             * queued), else 100 ms, a safety net only. Before s33 it polled with naps from 50 us
             * to 1 ms while any request was in flight (~6,400 of its ~6,400 context switches a run
             * on the case) */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long ns = 100000000L;
            if (in_flight && phase == 2) { /* poll for the reply at half the mean row so far, 1-8 ms */
                pthread_mutex_lock(&R->mu);
                double half = R->row_n ? 0.5e9 * R->row_s / (double)R->row_n : 0;
                pthread_mutex_unlock(&R->mu);
                ns = half >= NAP_SLACK ? NAP_SLACK : half <= NAP_URGENT ? NAP_URGENT : (long)half;
            }
            until.tv_nsec += ns;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_mutex_lock(&R->mu);
            if (R->n_out == n_out && !R->oom && R->tail - R->head == queued) /* nothing changed */
                pthread_cond_timedwait(&R->cv_main, &R->mu, &until);
            pthread_mutex_unlock(&R->mu);
        }
    }
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (int b = 0; b < 2; b++) {
        out_wait(&ob[b]);
        free(ob[b].buf);
    }
    free(work);
    return rc;
}

static int work_loop(etk_plan_search_state *s, uint32_t threads, mpi_stats *ms, int early_rank, int size)
{
    remote R;
    memset(&R, 0, sizeof R);
    R.s = s;
    R.threads = threads;
    R.ms = ms;
    R.init_rank = early_rank;
    R.size = size;
    if (early_rank > 0) {
        R.n_claim = claimed_rows(etk_plan_n_rows(s), size, threads);
        R.claim0 = etk_plan_n_rows(s) - (size_t)early_rank * R.n_claim;
    }
    R.pend = malloc((etk_plan_n_rows(s) ? etk_plan_n_rows(s) : 1) * sizeof *R.pend);
    R.lb = calloc(etk_plan_n_rows(s) ? etk_plan_n_rows(s) : 1, sizeof *R.lb);
    pthread_mutex_init(&R.mu, NULL);
    pthread_cond_init(&R.cv, NULL);
    pthread_cond_init(&R.cv_main, NULL);
    int rc = R.pend && R.lb ? 0 : -1;
    for (int phase = 1; !rc && phase <= 2; phase++) {
        rc = work_phase(&R, phase);
        plan_mpi_mark(phase == 1 ? PLAN_MPI_PHASE1 : PLAN_MPI_PHASE2);
    }
    pthread_cond_destroy(&R.cv);
    pthread_cond_destroy(&R.cv_main);
    pthread_mutex_destroy(&R.mu);
    free(R.pend);
    free(R.lb);
    free(R.out);
    return rc;
}

static void print_stats(int rank, const char *who, const mpi_stats *ms, double wall)
{
    if (!getenv("ETK_PLAN_MPI_STATS"))
        return;
    char th[32] = "";
    if (ms->threads)
        snprintf(th, sizeof th, " (%ld threads)", ms->threads);
    char mc[48] = "";
    if (ms->main_cpu > 0)
        snprintf(mc, sizeof mc, " (main thread %.3f s)", ms->main_cpu);
    char p1[96] = "";
    if (ms->msgs1)
        snprintf(p1, sizeof p1, " (phase 1: %ld, %ld of them without a request, %ld rows)", ms->msgs1, ms->bare1,
                 ms->rows1);
    char sk[64] = "";
    if (ms->main_cpu > 0) /* a remote process */
        snprintf(sk, sizeof sk, ", %ld rows past the cut returned unsimulated", ms->skipped);
    char cw[128] = "", mw[64] = "";
    if (ms->main_csw)
        snprintf(mw, sizeof mw, "%s%ld (%ld involuntary)", ms->csw ? ", main thread " : "", ms->main_csw,
                 ms->main_icsw);
    if (ms->csw || ms->main_csw)
        snprintf(cw, sizeof cw, "; context switches: %s%ld (%ld involuntary)%s", ms->csw ? "workers " : "",
                 ms->csw ? ms->csw : ms->main_csw, ms->csw ? ms->icsw : ms->main_icsw, ms->csw ? mw : "");
    fprintf(stderr, "etkit plan: rank %d %s%s: %.3f s wall, %.3f s working, %.3f s waiting for work, %.3f s CPU%s, "
            "%ld rows, %ld messages%s%s%s\n", rank, who, th, wall, ms->busy, ms->wait, ms->cpu, mc, ms->rows, ms->msgs, p1,
            sk, cw);
}

int plan_mpi_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err)
{
    int rank, size, early = plan_mpi_early_rank();
    memset(res, 0, sizeof *res);
    if (early >= 0) {
        rank = early;
        size = atoi(getenv("OMPI_COMM_WORLD_SIZE")); /* plan_mpi_early_rank: set, >= 2 */
        g_rank = rank;
        unbind(); /* before the threads start: they inherit this thread's CPUs */
    } else {
        if (!inited) {
            int rc = plan_mpi_init(&rank, &size);
            if (rc)
                return etk_err(err, ETK_EINVAL, "plan search: MPI_Init failed");
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    etk_plan_search_state *s;
    int rc = etk_plan_begin(sp, jobs, n_jobs, o, &s, err);
    if (rc) {
        if (inited) /* before MPI_Init every process just fails alike (same inputs) */
            MPI_Abort(MPI_COMM_WORLD, 2); /* every process fails alike (same inputs); be sure none waits */
        return rc;
    }
    plan_mpi_mark(PLAN_MPI_SPACE);
    double t_start = now_s();
    if (rank) {
        mpi_stats ms;
        memset(&ms, 0, sizeof ms);
        if (work_loop(s, n_threads(o), &ms, early, size)) {
            /* rank 0 would wait for this process forever */
            fprintf(stderr, "etkit plan: error: rank %d: out of memory or no thread\n", rank);
            if (!inited)
                exit(2); /* before MPI_Init (plan_mpi_early_rank): mpirun ends the others */
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        g_workers_cpu = ms.cpu;
        ms.main_cpu = plan_mpi_thread_cpu_s(); /* since the process started: MPI_Init, the set-up, the serving */
        ms.main_csw = thread_csw();
        ms.main_icsw = thread_icsw();
        ms.cpu += ms.main_cpu; /* the threads' and the main thread's */
        print_stats(rank, "workers", &ms, now_s() - t_start);
        etk_plan_state_free(s);
        return rc;
    }
    mpi_stats served;
    memset(&served, 0, sizeof served);
    queue q;
    memset(&q, 0, sizeof q);
    q.s = s;
    q.threads = n_threads(o);
    q.workers = (uint32_t)size * q.threads; /* every process has the same -j */
    pthread_mutex_init(&q.mu, NULL);
    g_opts = o;
    if (etk_plan_topk_init(&q.tk, o->top ? o->top : 10)) {
        etk_plan_state_free(s);
        return etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    }
    q.phase = 1;
    q.total = etk_plan_n_rows(s);
    q.end1 = q.total - (early >= 0 ? (size_t)(size - 1) * claimed_rows(q.total, size, q.threads) : 0);
    q.init_rank = early;
    rc = serve(&q, size, o, &served);
    plan_mpi_mark(PLAN_MPI_PHASE1);
    if (!rc) {
        size_t n = etk_plan_sort(s);
        q.phase = 2;
        q.row_s = 0;
        q.row_n = 0;
        q.next = 0;
        q.stop = false;
        q.done = etk_plan_n_rows(s) - n;
        rc = serve(&q, size, o, &served);
        plan_mpi_mark(PLAN_MPI_PHASE2);
    }
    served.cpu = plan_mpi_thread_cpu_s();
    served.main_csw = thread_csw();
    served.main_icsw = thread_icsw();
    g_workers_cpu = q.local.cpu;
    print_stats(0, "local workers", &q.local, now_s() - t_start);
    print_stats(0, "server", &served, now_s() - t_start);
    if (getenv("ETK_PLAN_MPI_STATS"))
        fprintf(stderr, "etkit plan: rank 0 phase ends: local workers idle %.3f s (phase 1), %.3f s (phase 2)\n",
                q.end_wait[0], q.end_wait[1]);
    if (rc)
        rc = etk_err(err, ETK_ENOMEM, "plan search: out of memory");
    else
        rc = etk_plan_finish(s, res, err);
    plan_mpi_mark(PLAN_MPI_GATHER);
    etk_plan_topk_free(&q.tk);
    pthread_mutex_destroy(&q.mu);
    etk_plan_state_free(s);
    return rc;
}
#endif
