/* plan_mpi.h — `mpirun -np K etkit plan ...` (cli/plan_mpi.c): the plan search split over K
 * processes, rank 0 handing out chunks of rows and gathering the results. Built only when CMake
 * found MPI (ETK_HAVE_MPI); otherwise plan_mpi_launched() is false and the search runs in threads. */
#ifndef ETKIT_CLI_PLAN_MPI_H
#define ETKIT_CLI_PLAN_MPI_H

#include <stdbool.h>

#include "etkit/plan.h"

/* Launched by mpirun with more than one process (Open MPI's OMPI_COMM_WORLD_SIZE > 1, or
 * PMI_SIZE / PMIX_RANK set by other launchers) and built with MPI. */
bool plan_mpi_launched(void);
/* MPI_Init (once). Returns 0, or 2 with a message. *rank, *size: this process and all. */
int plan_mpi_init(int *rank, int *size);
/* This process's rank when the search can start before MPI_Init (Open MPI's launcher, all
 * processes on one node; ETK_PLAN_MPI_EARLY=0 turns it off): plan_mpi_search then calls MPI_Init
 * itself once the worker threads run, and plan_mpi_init must not be called before it; -1: call
 * plan_mpi_init first. */
int plan_mpi_early_rank(void);
/* MPI_Finalize; with ETK_PLAN_MPI_STATS set, then prints this process's timeline (plan_mpi_mark) */
void plan_mpi_finalize(void);
/* The steps of a process's timeline that ETK_PLAN_MPI_STATS prints (docs/plan.md "Parallel
 * search"): cmd_plan entered, the flags, presets and clusters parsed, MPI_Init done, the plan
 * space built (etk_plan_begin), phase 1 and phase 2 done, the result gathered (etk_plan_finish,
 * rank 0), the output written, MPI_Finalize done. */
typedef enum {
    PLAN_MPI_MAIN, PLAN_MPI_PARSED, PLAN_MPI_INIT, PLAN_MPI_SPACE, PLAN_MPI_PHASE1, PLAN_MPI_PHASE2,
    PLAN_MPI_GATHER, PLAN_MPI_OUTPUT, PLAN_MPI_FINALIZE, PLAN_MPI_N_MARKS
} plan_mpi_step;
/* records the wall clock, the process's CPU and the calling (main) thread's CPU at a step */
void plan_mpi_mark(plan_mpi_step step);
/* The search over the processes; on rank 0 *res holds the result (on the others it is empty).
 * Every process searches in o->threads (-j) threads; rank 0's main thread hands out the work. */
int plan_mpi_search(const etk_plan_space *sp, const etk_plan_job *jobs, uint32_t n_jobs, const etk_plan_opts *o,
                    etk_plan_result *res, etk_error *err);

#endif
