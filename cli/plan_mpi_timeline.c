/* plan_mpi_timeline.c — ETK_PLAN_MPI_STATS's per-process timeline of `mpirun -np K etkit plan`
 * (docs/plan.md "Parallel search"): plan_mpi_mark records the wall clock, the process's CPU,
 * page faults and context switches and the marking thread's CPU at each step; plan_mpi_finalize
 * prints them in the order of time, from the launcher's start. Split from plan_mpi.c, which
 * distributes the search. Built with MPI only (without it plan_mpi_mark is a no-op). */
#define _GNU_SOURCE
#include "plan_mpi.h"
#include "plan_mpi_timeline.h"

#ifdef ETK_HAVE_MPI
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double plan_mpi_thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* seconds on the clock of /proc/PID/stat's start times (since boot, CLOCK_BOOTTIME on Linux) */
static double boot_s(void)
{
    struct timespec ts;
#ifdef CLOCK_BOOTTIME
    clock_gettime(CLOCK_BOOTTIME, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* when process pid started, in boot_s's seconds; -1 when unknown (no /proc) */
static double started_at(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long start = 0;
    /* after the name: state (field 3) ... starttime (field 22) */
    if (!p || sscanf(p + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                     &start) != 1)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (double)start / (double)hz : -1;
}

typedef struct {
    double wall, cpu, main_cpu; /* boot_s; the process's user + system CPU; the marking thread's */
    long minflt, csw;
} mark;
static mark marks[PLAN_MPI_N_MARKS];
static bool marked[PLAN_MPI_N_MARKS];

static double tv_s(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

void plan_mpi_mark(plan_mpi_step step)
{
    if ((unsigned)step >= PLAN_MPI_N_MARKS)
        return;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    marks[step] = (mark){boot_s(), tv_s(ru.ru_utime) + tv_s(ru.ru_stime), plan_mpi_thread_cpu_s(), ru.ru_minflt,
                         ru.ru_nvcsw + ru.ru_nivcsw};
    marked[step] = true;
}

void plan_mpi_timeline_print(int g_rank, double g_workers_cpu, const char *g_pml)
{
    static const char *const what[PLAN_MPI_N_MARKS] = {
        "etkit plan entered", "flags, presets, clusters parsed", "MPI_Init done", "plan space built",
        "phase 1 (assess) done", "phase 2 (simulate) done", "result gathered", "output written",
        "MPI_Finalize done"};
    double t_proc = started_at((long)getpid()), t_launch = started_at((long)getppid());
    double t0 = t_launch >= 0 ? t_launch : t_proc;
    mark prev = {t_proc, 0, 0, 0, 0};
    if (t_proc >= 0)
        fprintf(stderr, "etkit plan: rank %d at %.3f s: process started (times since its launcher, pid %ld, "
                "started)\n", g_rank, t_proc - t0, (long)getppid());
    else
        prev.wall = marks[0].wall;
    /* in the order of time: with the search started before MPI_Init (plan_mpi_early_rank) the
     * plan space is built before MPI_Init is done */
    int idx[PLAN_MPI_N_MARKS], n = 0;
    for (int i = 0; i < PLAN_MPI_N_MARKS; i++)
        if (marked[i]) {
            int j = n++;
            for (; j > 0 && marks[idx[j - 1]].wall > marks[i].wall; j--)
                idx[j] = idx[j - 1];
            idx[j] = i;
        }
    for (int k = 0; k < n; k++) {
        int i = idx[k];
        const mark *m = &marks[i];
        fprintf(stderr, "etkit plan: rank %d at %.3f s: %s (step %.3f s wall, %.3f s CPU, main thread %.3f s)\n",
                g_rank, m->wall - t0, what[i], m->wall - prev.wall, m->cpu - prev.cpu, m->main_cpu - prev.main_cpu);
        prev = *m;
    }
    double other = prev.cpu - prev.main_cpu - g_workers_cpu;
    fprintf(stderr, "etkit plan: rank %d CPU %.3f s: worker threads %.3f s, main thread %.3f s, other threads "
            "(Open MPI's) %.3f s; %ld page faults, %ld context switches; PML %s\n", g_rank, prev.cpu, g_workers_cpu,
            prev.main_cpu, other > 0 ? other : 0, prev.minflt, prev.csw, g_pml);
}
#endif
