/* coord.c — the live-mode coordinator: launches the ranks, takes their nodes over a Unix socket
 * (proto.h), feeds etkit's engine incrementally and answers blocking calls in virtual time.
 *
 * Scheduling rule (what makes a run deterministic): the engine advances only while every rank
 * that has not exited is blocked (in a WAIT or a communicator join). Then all nodes received so
 * far are added, and the engine runs event time by event time until some WAIT node completes;
 * every rank whose WAIT node is done at that time is answered with that time, and the engine
 * stops until all ranks are blocked again. A rank's virtual host time is the end of its chain of
 * CPU nodes, so what it submits later starts no earlier than the engine's current time: the
 * result depends only on what each rank submits, not on the order ranks reach the socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/epoll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live/coord_priv.h"

void live_reply(coord *c, uint32_t rank, etk_live_reply *rp)
{
    rp->status = (int32_t)rank; /* a process driving several GPUs tells its answers apart */
    if (c->r[rank].fd >= 0)
        (void)!send(c->r[rank].fd, rp, sizeof *rp, MSG_NOSIGNAL);
}

static void reply_error_all(coord *c, const char *msg)
{
    etk_live_reply rp;
    memset(&rp, 0, sizeof rp);
    rp.op = ETK_LR_ERROR;
    snprintf(rp.msg, sizeof rp.msg, "%.380s", msg);
    for (uint32_t i = 0; i < c->n; i += c->gpp) /* once per process */
        for (uint32_t d = 0; d < c->gpp; d++)
            if (c->r[i + d].state != R_DONE) {
                live_reply(c, i + d, &rp);
                break;
            }
}

/* After reply_error_all: up to 2 s for the processes that got the error to print their
 * "released: ..." line and exit (their connections close) before end_ranks signals them; a
 * SIGTERM right after the reply could end a rank before it read it (the line was sometimes
 * lost). Whatever they still send is read and dropped. */
static void error_grace(coord *c)
{
    struct pollfd pf[256];
    uint32_t np = 0;
    for (uint32_t i = 0; i < c->n && np < 256; i += c->gpp)
        if (c->r[i].fd >= 0 && !c->r[i].eof)
            pf[np++] = (struct pollfd){.fd = c->r[i].fd, .events = POLLIN};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (np) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        int left = 2000 - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || poll(pf, np, left) <= 0)
            return;
        for (uint32_t k = 0; k < np;) {
            char buf[sizeof(etk_live_msg) * ETK_LIVE_BATCH];
            ssize_t n = pf[k].revents ? recv(pf[k].fd, buf, sizeof buf, MSG_DONTWAIT) : -1;
            if (pf[k].revents && (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)))
                pf[k] = pf[--np]; /* closed: the process has exited */
            else
                k++;
        }
    }
}

static int handle_msg(coord *c, uint32_t rank, const etk_live_msg *m, etk_error *err)
{
    lrank *R = &c->r[rank];
    switch (m->op) {
    case ETK_LM_NODE:
        return live_take_node(c, rank, m, err);
    case ETK_LM_WAIT: {
        R->n_q = 0;
        R->probe = false;
        etk_live_msg q;
        if (m->flags & ETK_LF_QUERY) { /* deps[1..]: nodes asked about, not waited for */
            q = *m;
            for (uint32_t k = 1; k < m->n_deps && R->n_q < ETK_LIVE_MAX_DEPS - 1; k++)
                R->q_ids[R->n_q++] = m->deps[k];
            q.n_deps = m->n_deps ? 1 : 0;
            if (m->group[0]) {
                const lcomm *cm = live_find_comm(c, m->group);
                if (!cm || m->peer >= (int32_t)cm->n)
                    return etk_err(err, ETK_EINVAL, "rank %u: %.64s on communicator %.64s, source %d: no such member",
                                   rank, m->name, m->group, m->peer);
                R->probe = true;
                R->probe_comm = (uint32_t)(cm - c->comms);
                R->probe_src = m->peer < 0 ? -1 : (int64_t)cm->ranks[m->peer];
                R->probe_tag = m->tag < 0 ? -1 : m->tag;
            }
            m = &q;
        }
        int rc = live_take_node(c, rank, m, err);
        if (rc)
            return rc;
        R->state = R_WAIT;
        R->wait_id = m->id;
        R->wait_dep[0] = m->n_deps > 1 ? m->deps[1] : 0;
        R->wait_dep[1] = m->n_deps > 2 ? m->deps[2] : 0;
        R->poll_ns = (m->flags & ETK_LF_POLL) && m->m > 0 ? (uint64_t)m->m : 0;
        snprintf(R->call, sizeof R->call, "%.120s", m->name);
        return 0;
    }
    case ETK_LM_COMM_INIT:
    case ETK_LM_COMM_SPLIT:
        return live_comm_join(c, rank, m, err);
    case ETK_LM_EXIT: /* the process: every GPU it drives */
        for (uint32_t d = rank - rank % c->gpp; d < rank - rank % c->gpp + c->gpp; d++)
            c->r[d].said_exit = true;
        return 0;
    case ETK_LM_EXTERN:
        for (uint32_t d = rank - rank % c->gpp; d < rank - rank % c->gpp + c->gpp; d++) {
            c->r[d].state = R_EXTERN;
            c->r[d].extern_ns = m->dur_ns;
            c->r[d].extern_nolate = (m->flags & ETK_LF_NOLATE) != 0;
            c->r[d].extern_any = (m->flags & ETK_LF_ANY) != 0;
            c->r[d].n_tied = 0;
            for (uint32_t k = 0; d == rank && k < m->n_deps && k < 8; k++)
                if (m->deps[k])
                    c->r[d].tied[c->r[d].n_tied++] = m->deps[k];
            snprintf(c->r[d].call, sizeof c->r[d].call, "%.100s (real call)", m->name);
        }
        return 0;
    case ETK_LM_EXTERN_END:
        c->held_since = 0; /* a hold ends: the next one's grace starts anew */
        for (uint32_t d = rank - rank % c->gpp; d < rank - rank % c->gpp + c->gpp; d++)
            c->r[d].state = R_RUN;
        return 0;
    default:
        return etk_err(err, ETK_EINVAL, "rank %u: unknown message %u", rank, m->op);
    }
}

static const char *state_call(const lrank *R)
{
    return R->state == R_WAIT || R->state == R_INIT || R->state == R_EXTERN ? R->call
           : R->state == R_DONE                     ? "(exited)"
           : R->state == R_RUN ? "(nothing: its process waits in a call on another of its GPUs)"
                               : "(running)";
}

/* How far the engine may run while ranks are inside real blocking calls (R_EXTERN): a rank
 * submits nothing dated before its host time when it comes back, so the engine stops there, with
 * two exceptions. A rank that will submit nothing dated earlier but receives (ETK_LF_NOLATE)
 * holds the engine back only while a send to it waits for its receive: a receive it posts later
 * matches a send submitted later, which starts no earlier than the engine's time then. A rank
 * whose call is tied to nodes it submitted before (its collective or send: it only waits for
 * them when it comes back) does not hold the engine back while one of them is not done (what it
 * submits later depends on them), and holds it at the end of the last one once all are (or at its
 * host time, if later): a rank in a real MPI_Allreduce no longer stops the ranks its partners
 * wait for (HPCC). A call tied to any of them (ETK_LF_ANY: MPI_Waitany, MPI_Waitsome) holds it at
 * the first one's end once one is (s27). */
static uint64_t extern_limit(const coord *c)
{
    uint64_t limit = UINT64_MAX;
    for (uint32_t i = 0; i < c->n; i++) {
        const lrank *R = &c->r[i];
        if (R->state != R_EXTERN)
            continue;
        if (((!R->extern_nolate && !R->n_tied) || (R->extern_nolate && R->unmatched_in)) && R->extern_ns < limit)
            limit = R->extern_ns;
        if (R->n_tied) {
            uint64_t last = 0, first = UINT64_MAX, end, hold = UINT64_MAX;
            bool all = true;
            for (uint32_t k = 0; k < R->n_tied; k++) {
                if (etk_sim_node_end(c->s, i, R->tied[k], &end) != 1) {
                    all = false;
                    continue;
                }
                last = end > last ? end : last;
                first = end < first ? end : first;
            }
            if (R->extern_any && first != UINT64_MAX)
                hold = first;
            else if (!R->extern_any && all)
                hold = last;
            /* it comes back at its host time and then waits for them: nothing earlier (s27) */
            if (hold != UINT64_MAX && hold < R->extern_ns)
                hold = R->extern_ns;
            if (hold < limit)
                limit = hold;
        }
    }
    return limit;
}

/* ETK_LIVE_DEBUG set: why the engine is held (one line per rank in a real call or a wait) */
static void debug_held(const coord *c, uint64_t next, uint64_t limit)
{
    fprintf(stderr, "etkit live debug: engine at %" PRIu64 " ns held (next event %" PRIu64 ", limit %" PRIu64 ")\n",
            etk_sim_now(c->s), next, limit);
    for (uint32_t i = 0; i < c->n; i++) {
        const lrank *R = &c->r[i];
        fprintf(stderr, "  rank %u: %s state %d extern_ns %" PRIu64 " nolate %d unmatched_in %u tied", i,
                state_call(R), R->state, R->extern_ns, R->extern_nolate, R->unmatched_in);
        for (uint32_t k = 0; k < R->n_tied; k++) {
            uint64_t end = 0;
            int d = etk_sim_node_end(c->s, i, R->tied[k], &end);
            fprintf(stderr, " %" PRIu64 "%s%" PRIu64, R->tied[k], d == 1 ? "@" : d == 0 ? "(pending)" : "(?)", d == 1 ? end : 0);
        }
        fprintf(stderr, " poll_ns %" PRIu64 "\n", R->poll_ns);
    }
}

/* Every rank is blocked: advance the engine until some WAIT completes. Ranks inside a real
 * blocking call (R_EXTERN) may still submit work from their host time on: the engine runs no
 * further than the earliest of those. Returns 1 when ranks were released, 2 when the engine had to
 * stop for such a rank, 3 when it stopped so and polls wait for the hold's grace to pass (call
 * again within a ms), 0 on deadlock (c->fail set), <0 on error. */
static double real_s(void);
#define HOLD_GRACE_S 0.02

/* A rank waiting in a poll (MPI_Test*, MPI_Iprobe) whose time is not before the engine's: the
 * poll an engine held back by real calls answers early. */
static bool poll_due(const lrank *R, uint64_t now_ns)
{
    return R->state == R_WAIT && R->poll_ns && R->poll_ns >= now_ns;
}

static int advance(coord *c, etk_error *err)
{
    int rc = live_flush(c, err);
    if (rc)
        return rc;
    bool in_real = false; /* a rank inside a real call will come back: never a deadlock then */
    for (uint32_t i = 0; i < c->n; i++)
        in_real = in_real || c->r[i].state == R_EXTERN;
    for (;;) {
        if ((rc = etk_sim_run_until(c->s, etk_sim_now(c->s), err)) != 0)
            return rc;
        int released = 0;
        for (uint32_t i = 0; i < c->n; i++) {
            lrank *R = &c->r[i];
            uint64_t end;
            if (R->state != R_WAIT || etk_sim_node_end(c->s, i, R->wait_id, &end) != 1)
                continue;
            etk_live_reply rp;
            memset(&rp, 0, sizeof rp);
            rp.op = ETK_LR_TIME;
            rp.t_ns = end;
            for (int d = 0; d < 2; d++)
                if (R->wait_dep[d])
                    etk_sim_node_end(c->s, i, R->wait_dep[d], &rp.dep_end[d]);
            if (R->n_q || R->probe)
                rp.dep_end[0] = live_query(c, i, end);
            R->state = R_RUN;
            live_reply(c, i, &rp);
            released++;
        }
        if (released)
            return 1;
        uint64_t t = etk_sim_next_event_ns(c->s), limit = extern_limit(c);
        if ((limit != UINT64_MAX && (t == UINT64_MAX || t > limit)) || (t == UINT64_MAX && in_real)) {
            if (c->debug)
                debug_held(c, t, limit);
            /* held back by ranks inside real calls: a rank polling for what one of them sends
             * (HPL's MPI_Iprobe loops while the sender is in a real MPI_Send) gets its poll's time
             * now; its chain ends there whatever the engine does, so the answer is the engine's.
             * Not before the hold has lasted HOLD_GRACE_S of real time (s27): most real calls
             * whose nodes are done return at once (a barrier the engine has finished, a real
             * transfer catching up), and a poll answered early sees only what the engine had
             * done, the rest by the real MPI, so that its time would follow the host's speed. */
            bool early = false;
            for (uint32_t i = 0; i < c->n && !early; i++)
                early = poll_due(&c->r[i], etk_sim_now(c->s));
            if (early) {
                double now = real_s();
                if (!c->held_since || c->held_ns != etk_sim_now(c->s)) {
                    c->held_since = now;
                    c->held_ns = etk_sim_now(c->s);
                }
                if (now - c->held_since < HOLD_GRACE_S)
                    return 3;
            }
            for (uint32_t i = 0; i < c->n; i++) {
                lrank *R = &c->r[i];
                if (!poll_due(R, etk_sim_now(c->s)))
                    continue;
                etk_live_reply rp;
                memset(&rp, 0, sizeof rp);
                rp.op = ETK_LR_TIME;
                rp.t_ns = R->poll_ns;
                if (R->n_q || R->probe) { /* what is done so far; the rank's real MPI decides the rest */
                    rp.dep_end[0] = live_query(c, i, etk_sim_now(c->s));
                    rp.dep_end[1] = 1;
                }
                R->state = R_RUN;
                live_reply(c, i, &rp);
                released++;
            }
            return released ? 1 : 2;
        }
        if (t == UINT64_MAX)
            break;
        if ((rc = etk_sim_run_until(c->s, t, err)) != 0)
            return rc;
    }
    /* deadlock: every rank blocked and nothing left to simulate */
    size_t off = (size_t)snprintf(c->fail, sizeof c->fail, "deadlock at t = %" PRIu64 " ns: every rank is blocked.",
                                  etk_sim_now(c->s));
    for (uint32_t i = 0; i < c->n && off < sizeof c->fail; i++) {
        const lrank *R = &c->r[i];
        if (R->state == R_DONE)
            off += (size_t)snprintf(c->fail + off, sizeof c->fail - off, " Rank %u exited at t = %" PRIu64 " ns.",
                                    i, R->exit_ns);
        else
            off += (size_t)snprintf(c->fail + off, sizeof c->fail - off, " Rank %u waits in %s.", i,
                                    state_call(R));
    }
    if (off + 16 < sizeof c->fail) {
        off += (size_t)snprintf(c->fail + off, sizeof c->fail - off, " Engine: ");
        etk_sim_blocked_report(c->s, c->fail + off, sizeof c->fail - off);
    }
    return 0;
}

static double real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define ORPHAN_POLL 64 /* superseded connections polled at once (more wait for a later round) */

/* The connections are watched with epoll, not poll: poll over 65 sockets at every turn of the loop
 * (thousands a second) was half of the coordinator's CPU on 64 ranks of HPCC (s26, perf). The
 * set is built as for poll at every turn (pf) and registered again only when it changed: another
 * list of fds, or an fd accepted or closed since (fd_epoch: a closed fd leaves the epoll set by
 * itself, and its number may come back). Level-triggered, so it reports what poll would. */
static int ep_sync(int *epfd, int *reg, uint32_t *n_reg, unsigned *epoch, const coord *c, const struct pollfd *pf,
                   uint32_t np)
{
    bool same = *epfd >= 0 && *n_reg == np && *epoch == c->fd_epoch;
    for (uint32_t k = 0; same && k < np; k++)
        same = reg[k] == pf[k].fd;
    if (same)
        return 0;
    if (*epfd >= 0)
        close(*epfd);
    if ((*epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -1;
    for (uint32_t k = 0; k < np; k++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = k};
        if (epoll_ctl(*epfd, EPOLL_CTL_ADD, pf[k].fd, &ev) != 0 && errno != EEXIST)
            return -1;
        reg[k] = pf[k].fd;
    }
    *n_reg = np;
    *epoch = c->fd_epoch;
    return 0;
}

/* SIGINT, SIGTERM or SIGHUP to etkit live (a `timeout`, a batch system's end of job): the loop
 * ends the run as a failure, so that the launcher and the ranks are ended and the temporary
 * folder removed (until s27 they ran on: a rank inside a real MPI call never saw the coordinator
 * go, and mpirun with it). */
static volatile sig_atomic_t live_signal;
static void on_signal(int sig) { live_signal = sig; }

static int run_loop(coord *c, etk_error *err)
{
    struct pollfd *pf = calloc(c->n + 1 + ORPHAN_POLL, sizeof *pf);
    uint32_t *who = calloc(c->n + 1 + ORPHAN_POLL, sizeof *who);
    int *reg = calloc(c->n + 1 + ORPHAN_POLL, sizeof *reg);
    struct epoll_event *evs = calloc(c->n + 1 + ORPHAN_POLL, sizeof *evs);
    int epfd = -1;
    uint32_t n_reg = 0;
    unsigned epoch = 0;
    if (!pf || !who || !reg || !evs) {
        free(pf);
        free(who);
        free(reg);
        free(evs);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    int rc = 0;
    bool stalled = false, held_wait = false;
    for (;;) {
        live_reap(c);
        if (live_signal) {
            snprintf(c->fail, sizeof c->fail, "stopped by signal %d (%s) at t = %" PRIu64 " ns: the ranks were ended",
                     (int)live_signal, strsignal(live_signal), etk_sim_now(c->s));
            goto out;
        }
        /* ranks gone: socket closed (or never opened) and process reaped */
        uint32_t done = 0, blocked = 0, ext = 0;
        if (c->o->launcher && live_launcher_gone(c) && c->fail[0])
            goto out;
        for (uint32_t i = 0; i < c->n; i++) {
            lrank *R = &c->r[i];
            if (c->o->launcher && R->state != R_DONE && R->eof && (R->said_exit || R->worked)) {
                if (!R->said_exit) {
                    snprintf(c->fail, sizeof c->fail, "rank %u ended without exiting normally (crashed or killed) at "
                             "t = %" PRIu64 " ns (last call: %s)", i, etk_sim_now(c->s), R->call[0] ? R->call : "none");
                    R->state = R_DONE;
                    goto out;
                }
                /* a connection that sent no work (a helper command of the rank's wrapper: `hostname;
                 * exec prog`) ends the rank only at the launcher's end: the real program may still
                 * connect (a new hello supersedes it) */
                if (R->worked || c->launcher_reaped) {
                    R->state = R_DONE;
                    R->exit_ns = etk_sim_now(c->s);
                }
            }
            if (R->state != R_DONE && R->reaped && (R->eof || R->fd < 0)) {
                if (!R->hello && WIFEXITED(R->status) && WEXITSTATUS(R->status) == 0) {
                    snprintf(c->fail, sizeof c->fail, "rank %u exited with status 0 at t = %" PRIu64 " ns without "
                             "connecting to etkit live: it never loaded libetklive.so (does a wrapper drop "
                             "LD_PRELOAD? is the program statically linked?)", i, etk_sim_now(c->s));
                    R->state = R_DONE;
                    goto out;
                }
                if (!WIFEXITED(R->status) || WEXITSTATUS(R->status) != 0) {
                    char how[128];
                    live_describe_status(how, sizeof how, R->status);
                    snprintf(c->fail, sizeof c->fail, "rank %u %s at t = %" PRIu64 " ns (last call: %s)", i, how,
                             etk_sim_now(c->s), R->state == R_START ? "none: it never reached CUDA" : R->call[0] ? R->call : "none");
                    R->state = R_DONE;
                    goto out;
                }
                R->state = R_DONE;
                R->exit_ns = etk_sim_now(c->s);
            }
            done += R->state == R_DONE;
            blocked += R->state == R_WAIT || R->state == R_INIT;
            ext += R->state == R_EXTERN;
        }
        if (done == c->n)
            break;
        /* a GPU whose process waits in a call on another of its GPUs submits nothing meanwhile */
        uint32_t parked = 0;
        for (uint32_t p = 0; c->gpp > 1 && p < c->n; p += c->gpp) {
            uint32_t w = 0, run = 0;
            for (uint32_t d = p; d < p + c->gpp; d++) {
                w += c->r[d].state == R_WAIT || c->r[d].state == R_INIT;
                run += c->r[d].state == R_RUN;
            }
            parked += w ? run : 0;
        }
        /* ranks whose process runs without a connection (never connected, or closed it at an exec
         * and not yet back): while every other rank waits, they get connect_timeout_s */
        uint32_t limbo = 0;
        for (uint32_t i = 0; i < c->n; i++)
            limbo += live_in_limbo(c, i);
        if (limbo && blocked && blocked + parked + ext + done + limbo == c->n) {
            double now = real_s();
            if (!c->limbo_since)
                c->limbo_since = now;
            else if (now - c->limbo_since > c->connect_timeout_s) {
                size_t off = 0;
                for (uint32_t i = 0; i < c->n && off < sizeof c->fail; i += c->gpp) {
                    if (!live_in_limbo(c, i))
                        continue;
                    const lrank *R = &c->r[i];
                    if (!R->hello)
                        off += (size_t)snprintf(c->fail + off, sizeof c->fail - off, "%srank %u never connected to "
                                                "etkit live: no hello within %g s while every other rank waits (its "
                                                "process runs without libetklive.so: does a wrapper drop LD_PRELOAD "
                                                "or ETK_LIVE_SOCKET?)", off ? "; " : "", i / c->gpp,
                                                c->connect_timeout_s);
                    else
                        off += (size_t)snprintf(c->fail + off, sizeof c->fail - off, "%srank %u closed its connection "
                                                "to etkit live without exiting (last call: %s) and did not connect "
                                                "again within %g s while every other rank waits (an exec of a "
                                                "program without libetklive.so?)", off ? "; " : "", i / c->gpp,
                                                R->call[0] ? R->call : "none", c->connect_timeout_s);
                }
                goto out;
            }
        } else
            c->limbo_since = 0;
        if (blocked && blocked + parked + ext + done == c->n && !stalled) {
            rc = advance(c, err);
            if (rc < 0)
                goto out;
            if (rc == 0)
                goto out; /* deadlock: c->fail */
            stalled = rc == 2; /* until a message comes */
            held_wait = rc == 3; /* a message, or a ms */
            rc = 0;
            if (!stalled && !held_wait)
                continue;
        }
        uint32_t np = 0;
        pf[np].fd = c->lfd;
        pf[np].events = POLLIN;
        who[np++] = UINT32_MAX;
        for (uint32_t i = 0; i < c->n; i += c->gpp) /* one socket per process */
            if (c->r[i].fd >= 0 && !c->r[i].eof) {
                pf[np].fd = c->r[i].fd;
                pf[np].events = POLLIN;
                who[np++] = i;
            }
        uint32_t np_ranks = np;
        for (uint32_t k = 0; k < c->n_orphan && np < c->n + 1 + ORPHAN_POLL; k++) {
            pf[np].fd = c->orphan[k].fd;
            pf[np].events = POLLIN;
            who[np++] = UINT32_MAX - 1;
        }
        if (ep_sync(&epfd, reg, &n_reg, &epoch, c, pf, np) != 0) {
            rc = etk_err(err, ETK_EIO, "epoll: %s", strerror(errno));
            goto out;
        }
        int pr = epoll_wait(epfd, evs, (int)np, held_wait ? 1 : 20);
        held_wait = false;
        if (pr < 0 && errno != EINTR) {
            rc = etk_err(err, ETK_EIO, "epoll_wait: %s", strerror(errno));
            goto out;
        }
        for (uint32_t k = 0; k < np; k++)
            pf[k].revents = 0;
        for (int e = 0; e < pr; e++)
            if (evs[e].data.u32 < np)
                pf[evs[e].data.u32].revents = (short)(evs[e].events ? evs[e].events : EPOLLIN);
        /* superseded connections: by fd, as draining one may reorder the list */
        for (uint32_t k = np_ranks; pr > 0 && k < np; k++)
            for (uint32_t j = 0; pf[k].revents && j < c->n_orphan; j++)
                if (c->orphan[j].fd == pf[k].fd) {
                    if ((rc = live_drain_orphan(c, j, err)) != 0)
                        goto out;
                    break;
                }
        for (uint32_t k = 0; pr > 0 && k < np_ranks; k++) {
            if (!pf[k].revents)
                continue;
            if (who[k] == UINT32_MAX) {
                if ((rc = live_accept_one(c, err)) != 0)
                    goto out;
                continue;
            }
            uint32_t i = who[k];
            /* drain what this rank sent */
            for (;;) {
                ssize_t n = recv(c->r[i].fd, c->inbuf, sizeof(etk_live_msg) * ETK_LIVE_BATCH, MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                    break;
                if (n <= 0) {
                    /* closed: the process is ending, or it exec'd another program (a wrapper
                     * script's `exec`), which connects again: never wait for it here */
                    int st = 0;
                    bool got = !c->r[i].reaped && c->r[i].pid > 0 &&
                               waitpid(c->r[i].pid, &st, WNOHANG) == c->r[i].pid;
                    if (c->debug)
                        fprintf(stderr, "etkit live debug: rank %u closed its connection (%s, %s)\n", i / c->gpp,
                                c->r[i].said_exit ? "after EXIT" : "no EXIT: exec or crash",
                                got || c->r[i].reaped ? "process gone" : "process still runs");
                    for (uint32_t d = i; d < i + c->gpp; d++) {
                        c->r[d].eof = true;
                        if (got) {
                            c->r[d].reaped = true;
                            c->r[d].status = st;
                        }
                    }
                    break;
                }
                if (n % (ssize_t)sizeof(etk_live_msg)) {
                    rc = etk_err(err, ETK_EINVAL, "rank %u sent a malformed message (%zd bytes)", i, n);
                    goto out;
                }
                for (ssize_t k = 0; k < n / (ssize_t)sizeof(etk_live_msg); k++) {
                    uint32_t rk = c->gpp > 1 ? c->inbuf[k].rank : i; /* which of the process's GPUs */
                    if (c->inbuf[k].op != ETK_LM_EXIT && !(c->inbuf[k].op == ETK_LM_NODE && (c->inbuf[k].flags & ETK_LF_CPU)))
                        for (uint32_t d = i; d < i + c->gpp; d++)
                            c->r[d].worked = true;
                    if (rk < i || rk >= i + c->gpp) {
                        rc = etk_err(err, ETK_EINVAL, "process %u sent a message for rank %u, not one of its GPUs "
                                     "(ranks %u-%u)", i / c->gpp, rk, i, i + c->gpp - 1);
                        goto out;
                    }
                    if ((rc = handle_msg(c, rk, &c->inbuf[k], err)) != 0)
                        goto out;
                }
                stalled = false;
            }
        }
    }
    /* every rank exited normally */
    if ((rc = live_flush(c, err)) == 0)
        rc = etk_sim_finish(c->s, err);
out:
    if (epfd >= 0)
        close(epfd);
    free(pf);
    free(who);
    free(reg);
    free(evs);
    if (c->fail[0]) {
        reply_error_all(c, c->fail);
        error_grace(c);
        if (!rc)
            rc = etk_err(err, ETK_EINVAL, "%s", c->fail);
    }
    live_end_ranks(c);
    return rc;
}

etk_sim *etk_live_sim(etk_live *l) { return l->s; }

void etk_live_free(etk_live *c)
{
    if (!c)
        return;
    etk_sim_free(c->s);
    live_nodes_free(c);
    free(c->r);
    for (uint32_t i = 0; i < c->cap_chans; i++)
        free(c->chans[i].q);
    free(c->chans);
    etk_groups_free(c->groups);
    free(c);
}

int etk_live_run(const etk_cluster *cl, const etk_sim_opts *so, const etk_live_opts *o, etk_live **out,
                 etk_error *err)
{
    *out = NULL;
    if (!o->n_ranks || !o->argv || !o->argv[0])
        return etk_err(err, ETK_EINVAL, "live: no ranks or no command");
    uint32_t gpp = o->gpus_per_process ? o->gpus_per_process : 1;
    if (gpp > 16)
        return etk_err(err, ETK_EINVAL, "live: %u GPUs per process, wanted 1 to 16", gpp);
    if (cl->n_npus < o->n_ranks * gpp)
        return etk_err(err, ETK_EINVAL, "live: %u ranks x %u GPUs on a cluster of %u GPUs (%s)", o->n_ranks, gpp,
                       cl->n_npus, cl->name);
    coord *cp = calloc(1, sizeof *cp);
    if (!cp)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    cp->cl = cl;
    cp->o = o;
    cp->debug = getenv("ETK_LIVE_DEBUG") != NULL;
    const char *cto = getenv("ETK_LIVE_CONNECT_TIMEOUT");
    char *cend = NULL;
    cp->connect_timeout_s = cto && *cto ? strtod(cto, &cend) : 60;
    if (cto && *cto && (*cend || !(cp->connect_timeout_s > 0) || cp->connect_timeout_s > 86400)) {
        free(cp);
        return etk_err(err, ETK_EINVAL, "ETK_LIVE_CONNECT_TIMEOUT=%s: wanted seconds, more than 0 and at most 86400",
                       cto);
    }
    cp->n_proc = o->n_ranks;
    cp->gpp = gpp;
    cp->n = o->n_ranks * gpp;
    cp->lfd = -1;
    cp->r = calloc(cp->n, sizeof *cp->r);
    cp->groups = etk_groups_new();
    if (!cp->r || !cp->groups) {
        etk_live_free(cp);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < cp->n; i++)
        cp->r[i].fd = -1;
    int rc = etk_sim_new(cl, cp->n, NULL, so, &cp->s, err);
    if (rc)
        goto done;
    /* the configuration every rank gets */
    etk_live_gpu_info gi;
    etk_live_gpu_info_of(&cl->gpu, &gi);
    cp->cfg.op = ETK_LR_CONFIG;
    cp->cfg.version = ETK_LIVE_VERSION;
    cp->cfg.world = cp->n;
    cp->cfg.local_world = o->local_world;
    cp->cfg.gpus = gpp;
    cp->cfg.sms = gi.sms;
    cp->cfg.cc_major = gi.cc_major;
    cp->cfg.cc_minor = gi.cc_minor;
    cp->cfg.hbm_bytes = cl->gpu.hbm_bytes;
    cp->cfg.hbm_Bps = cl->gpu.hbm_bw_Bps;
    cp->cfg.pcie_Bps = gi.pcie_Bps;
    cp->cfg.cpu_scale = o->cpu_scale;
    cp->cfg.epoch_ns = 1767225600ull * 1000000000ull; /* 2026-01-01T00:00:00Z: the same for every run */
    snprintf(cp->cfg.gpu_name, sizeof cp->cfg.gpu_name, "%s", cl->gpu.name);
    /* the socket, in a private temporary folder */
    const char *tmp = getenv("TMPDIR");
    snprintf(cp->dir, sizeof cp->dir, "%s/etkit-live-XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp");
    if (!mkdtemp(cp->dir)) {
        rc = etk_err(err, ETK_EIO, "cannot create a temporary folder %s: %s", cp->dir, strerror(errno));
        cp->dir[0] = 0;
        goto done;
    }
    snprintf(cp->path, sizeof cp->path, "%s/sock", cp->dir);
    cp->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%.100s", cp->path);
    if (cp->lfd < 0 || bind(cp->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(cp->lfd, (int)cp->n + 16) != 0) {
        rc = etk_err(err, ETK_EIO, "cannot listen on %s: %s", cp->path, strerror(errno));
        goto done;
    }
    if (o->record_prefix && (rc = live_record_open(cp, err)) != 0)
        goto done;
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old_sa[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: epoll_wait returns */
    sigemptyset(&sa.sa_mask);
    live_signal = 0;
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &sa, &old_sa[k]);
    bool spawned = (rc = live_spawn(cp, err)) == 0;
    if (spawned)
        rc = run_loop(cp, err);
    else
        live_end_ranks(cp);
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &old_sa[k], NULL);
    if (!spawned)
        goto done;
    live_kernel_report(cp);
    if (!rc && o->record_prefix)
        rc = live_write_record(cp, err);
done:
    if (cp->lfd >= 0)
        close(cp->lfd);
    for (uint32_t i = 0; i < cp->n_orphan; i++)
        close(cp->orphan[i].fd);
    free(cp->orphan);
    cp->orphan = NULL;
    cp->n_orphan = 0;
    for (uint32_t i = 0; i < cp->n; i += cp->gpp)
        if (cp->r[i].fd >= 0)
            close(cp->r[i].fd);
    if (cp->path[0])
        unlink(cp->path);
    if (cp->dir[0])
        rmdir(cp->dir);
    for (uint32_t i = 0; i < cp->n_comms; i++) {
        free(cp->comms[i].ranks);
        free(cp->comms[i].waiting);
        free(cp->comms[i].color);
        free(cp->comms[i].skey);
    }
    free(cp->comms);
    for (uint32_t i = 0; i < cp->n_ks; i++)
        free(cp->ks[i].name);
    free(cp->ks);
    if (!rc)
        *out = cp;
    else
        etk_live_free(cp);
    return rc;
}
