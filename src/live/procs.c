/* procs.c — live mode's rank processes and their connections: started (directly or by a
 * launcher such as mpirun, with the stand-in libraries preloaded), reaped and ended; a
 * connection's hello accepted, a wrapper's superseded connection kept and drained. Split from
 * coord.c, which runs the event loop and the scheduling rule. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live/coord_priv.h"

void live_describe_status(char *buf, size_t len, int st)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

void live_reap(coord *c)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        if (p == c->launcher) {
            c->launcher_reaped = true;
            c->launcher_status = st;
        }
        for (uint32_t i = 0; i < c->n; i++)
            if (c->r[i].pid == p) {
                c->r[i].reaped = true;
                c->r[i].status = st;
            }
    }
}

void live_end_ranks(coord *c)
{
    if (c->launcher > 0 && !c->launcher_reaped) { /* the launcher ends its ranks */
        kill(c->launcher, SIGTERM);
        for (int k = 0; k < 100 && !c->launcher_reaped; k++) {
            live_reap(c);
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (!c->launcher_reaped) {
            kill(c->launcher, SIGKILL);
            waitpid(c->launcher, NULL, 0);
            c->launcher_reaped = true;
        }
    }
    for (uint32_t i = 0; i < c->n; i++)
        if (!c->r[i].reaped && c->r[i].pid > 0)
            kill(c->r[i].pid, SIGTERM);
    for (int k = 0; k < 40; k++) {
        live_reap(c);
        bool all = true;
        for (uint32_t i = 0; i < c->n; i++)
            all = all && (c->r[i].reaped || c->r[i].pid <= 0);
        if (all)
            return;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (uint32_t i = 0; i < c->n; i++)
        if (!c->r[i].reaped && c->r[i].pid > 0)
            kill(c->r[i].pid, SIGKILL);
    for (uint32_t i = 0; i < c->n; i++)
        if (!c->r[i].reaped && c->r[i].pid > 0)
            waitpid(c->r[i].pid, NULL, 0);
}

int live_spawn(coord *c, etk_error *err)
{
    const char *old_ld = getenv("LD_LIBRARY_PATH");
    char ld[4096], pre[2100];
    snprintf(ld, sizeof ld, "%s%s%s", c->o->lib_dir, old_ld && *old_ld ? ":" : "", old_ld ? old_ld : "");
    snprintf(pre, sizeof pre, "%.1000s/libetklive.so", c->o->lib_dir);
    if (access(pre, R_OK) != 0)
        return etk_err(err, ETK_ENOTFOUND, "stand-in libraries not found: %s is missing (set ETKIT_LIVE_LIB to "
                       "the folder of libetklive.so)", pre);
    if (c->o->launcher) {
        char mpi[1024];
        snprintf(mpi, sizeof mpi, "%.1000s/libetkmpi.so", c->o->lib_dir);
        if (access(mpi, R_OK) != 0)
            return etk_err(err, ETK_ENOTFOUND, "--launcher: the MPI interposer %s is missing (etkit was built without "
                           "Open MPI's headers)", mpi);
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ":%s", mpi);
    }
    fflush(NULL);
    uint32_t lw = c->o->local_world / c->gpp ? c->o->local_world / c->gpp : 1; /* processes per node */
    for (uint32_t i = 0; i < (c->o->launcher ? 1u : c->n_proc); i++) {
        pid_t p = fork();
        if (p < 0)
            return etk_err(err, ETK_EIO, "fork: %s", strerror(errno));
        if (p == 0) {
            char v[32];
            close(c->lfd);
            for (uint32_t j = 0; j < i * c->gpp; j += c->gpp)
                if (c->r[j].fd >= 0)
                    close(c->r[j].fd);
            if (!c->o->launcher) {
                snprintf(v, sizeof v, "%u", i);
                setenv("RANK", v, 1);
                setenv("ETK_LIVE_RANK", v, 1);
                snprintf(v, sizeof v, "%u", i % lw);
                setenv("LOCAL_RANK", v, 1);
                snprintf(v, sizeof v, "%u", c->n_proc);
                setenv("WORLD_SIZE", v, 1);
                snprintf(v, sizeof v, "%u", lw);
                setenv("LOCAL_WORLD_SIZE", v, 1);
                setenv("MASTER_ADDR", "127.0.0.1", 1);
                setenv("MASTER_PORT", "29500", 1);
            }
            setenv("ETK_LIVE_SOCKET", c->path, 1);
            setenv("LD_LIBRARY_PATH", ld, 1);
            setenv("LD_PRELOAD", pre, 1);
            /* Open MPI yields the CPU at every progress call of a rank on an oversubscribed node
             * (5,996 sched_yield for 2,000 MPI_Test on 3 ranks of 2 cores): the interposer's
             * waits sleep instead (live/mpi.c), and yields took half the ranks' CPU on 64 ranks of
             * HPCC. Off unless the user set it (mpirun passes OMPI_MCA_* on to its ranks). */
            if (c->o->launcher)
                setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0);
            execvp(c->o->argv[0], c->o->argv);
            fprintf(stderr, "etkit live: rank %u: cannot run '%s': %s\n", i, c->o->argv[0], strerror(errno));
            _exit(127);
        }
        if (c->o->launcher)
            c->launcher = p;
        else
            for (uint32_t d = 0; d < c->gpp; d++)
                c->r[i * c->gpp + d].pid = p;
    }
    return 0;
}

/* A new connection says hello for process m.rank. A process that connected before and sent no work
 * yet (only its host time and EXIT) is superseded: it was a wrapper that exec'd the program (its
 * socket closed at exec: pyenv's shims are shell scripts ending in `exec`), or one that runs
 * commands of its own first, each preloaded too. Its nodes (host time only) are dropped; a
 * superseded connection still open is kept and drained (an orphan), and fails the run if it
 * later sends work. A second hello after the first process sent work is an error. */
int live_accept_one(coord *c, etk_error *err)
{
    int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return 0;
    c->fd_epoch++; /* a new fd (maybe a closed one's number), and maybe a close below */
    etk_live_msg m;
    ssize_t n = recv(fd, &m, sizeof m, 0);
    if (n != (ssize_t)sizeof m || m.op != ETK_LM_HELLO || m.rank >= c->n_proc) {
        close(fd);
        return etk_err(err, ETK_EINVAL, "a process connected without a valid hello (rank %u)", n > 0 ? m.rank : 0);
    }
    if (m.tag != ETK_LIVE_VERSION) {
        close(fd);
        return etk_err(err, ETK_EINVAL, "rank %u uses protocol version %d, etkit speaks %d (stand-in libraries of "
                       "another etkit)", m.rank, m.tag, ETK_LIVE_VERSION);
    }
    uint32_t r0 = m.rank * c->gpp;
    lrank *R = &c->r[r0];
    if (R->fd >= 0) {
        bool worked = false;
        for (uint32_t d = r0; d < r0 + c->gpp; d++)
            worked = worked || c->r[d].worked || c->r[d].n_given || c->r[d].state == R_DONE;
        /* the rank's process has sent work: the new one is a bystander (a command the rank or its
         * wrapper runs: `"$@"; cp log ...`, a subprocess), answered and drained: it may read the
         * clock and exit, and fails the run only if it sends work */
        int kept = worked ? fd : R->eof ? -1 : R->fd;
        if (c->debug)
            fprintf(stderr, "etkit live debug: rank %u: %s\n", m.rank,
                    worked ? "another process connected after the rank's sent work: a bystander"
                    : R->eof ? "a new process connected; the previous connection (closed, no work) is superseded"
                             : "a new process connected; the previous connection (still open, no work) is superseded");
        if (kept >= 0) {
            if (c->n_orphan == c->cap_orphan) {
                uint32_t cap = c->cap_orphan ? 2 * c->cap_orphan : 8;
                void *no = realloc(c->orphan, cap * sizeof *c->orphan);
                if (!no) {
                    close(fd);
                    return etk_err(err, ETK_ENOMEM, "out of memory");
                }
                c->orphan = no;
                c->cap_orphan = cap;
            }
            c->orphan[c->n_orphan].fd = kept;
            c->orphan[c->n_orphan].rank = m.rank;
            c->orphan[c->n_orphan++].bystander = worked;
        } else
            close(R->fd);
        if (worked) {
            etk_live_reply rp = c->cfg;
            rp.status = (int32_t)r0;
            (void)!send(fd, &rp, sizeof rp, MSG_NOSIGNAL);
            return 0;
        }
        for (uint32_t d = r0; d < r0 + c->gpp; d++) /* its host-time nodes: ids of another process */
            live_drop_pending(c, d);
    } else if (c->debug)
        fprintf(stderr, "etkit live debug: rank %u connected\n", m.rank);
    for (uint32_t d = r0; d < r0 + c->gpp; d++) {
        lrank *D = &c->r[d];
        D->fd = fd;
        D->state = R_RUN;
        D->hello = true;
        D->eof = D->said_exit = D->worked = false;
        D->call[0] = 0;
    }
    live_reply(c, r0, &c->cfg);
    return 0;
}

/* A superseded connection (accept_one) sent something: EXIT and host time are dropped, work ends
 * the run; closed: forgotten. */
int live_drain_orphan(coord *c, uint32_t k, etk_error *err)
{
    for (;;) {
        ssize_t n = recv(c->orphan[k].fd, c->inbuf, sizeof(etk_live_msg) * ETK_LIVE_BATCH, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (n <= 0) {
            close(c->orphan[k].fd);
            c->fd_epoch++;
            c->orphan[k] = c->orphan[--c->n_orphan];
            return 0;
        }
        for (ssize_t j = 0; j < n / (ssize_t)sizeof(etk_live_msg); j++) {
            const etk_live_msg *m = &c->inbuf[j];
            if (m->op == ETK_LM_EXIT || (m->op == ETK_LM_NODE && (m->flags & ETK_LF_CPU)))
                continue;
            if (c->orphan[k].bystander)
                snprintf(c->fail, sizeof c->fail, "rank %u: two processes use the rank: another process (started by "
                         "the rank's process or its wrapper, or exec'd after it used CUDA) sent work (%s); one "
                         "process per rank", c->orphan[k].rank, m->name[0] ? m->name : "a call");
            else
                snprintf(c->fail, sizeof c->fail, "rank %u: two processes use the rank: one that connected first (a "
                         "wrapper?) sent work (%s) after a second one connected; one process per rank",
                         c->orphan[k].rank, m->name[0] ? m->name : "a call");
            return etk_err(err, ETK_EINVAL, "%s", c->fail);
        }
    }
}

/* A process that has no connection to etkit live (it never connected, or it closed its connection
 * without exiting: an exec) while it has not exited. */
bool live_in_limbo(const coord *c, uint32_t i)
{
    const lrank *R = &c->r[i];
    return R->state != R_DONE && !R->reaped && (R->fd < 0 || R->eof);
}

/* --launcher: the launcher exited; an error (c->fail) when it failed or left ranks that never
 * connected. Returns whether it is gone. */
bool live_launcher_gone(coord *c)
{
    if (!c->launcher_reaped)
        return false;
    int st = c->launcher_status;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char how[128];
        live_describe_status(how, sizeof how, st);
        uint32_t done = 0;
        for (uint32_t i = 0; i < c->n; i++)
            done += c->r[i].state == R_DONE || c->r[i].said_exit;
        if (done < c->n)
            snprintf(c->fail, sizeof c->fail, "the launcher %s %s at t = %" PRIu64 " ns", c->o->argv[0], how,
                     etk_sim_now(c->s));
        return true;
    }
    for (uint32_t i = 0; i < c->n; i++)
        if (c->r[i].fd < 0) {
            snprintf(c->fail, sizeof c->fail, "the launcher %s ended but rank %u never connected (is it given %u "
                     "ranks? does it pass the environment on?)", c->o->argv[0], i, c->n);
            return true;
        }
    return true;
}
