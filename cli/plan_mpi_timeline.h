/* plan_mpi_timeline.h — ETK_PLAN_MPI_STATS's per-process timeline (cli/plan_mpi_timeline.c; the
 * steps are plan_mpi.h's plan_mpi_mark). Built with MPI only. */
#ifndef ETKIT_CLI_PLAN_MPI_TIMELINE_H
#define ETKIT_CLI_PLAN_MPI_TIMELINE_H

/* CPU seconds of the calling thread */
double plan_mpi_thread_cpu_s(void);
/* prints this process's timeline to stderr: the steps marked, in the order of time, then its CPU
 * by thread kind (workers_cpu: its worker threads', all phases), page faults, context switches
 * and the PML etkit asked Open MPI for (pml: which, and why) */
void plan_mpi_timeline_print(int rank, double workers_cpu, const char *pml);

#endif
