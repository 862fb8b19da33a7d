/* mpi_ring.c — issue #11 test (d) for `etkit live --launcher -- mpirun ...` (tests/live/mpi.sh):
 * a ring exchange (MPI_Isend to the right, MPI_Irecv from the left, MPI_Waitall) of 1 MiB, then
 * an MPI_Allreduce of 1 MiB and a blocking MPI_Sendrecv ring of 64 KiB; each timed with
 * MPI_Wtime (virtual under etkit live). The data are real: rank 0 checks the all-reduced sum.
 * Rank 0 prints  NAME NS. Built with mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int count = 1 << 18; /* 1 MiB of int */
    int *a = malloc(sizeof(int) * count), *b = malloc(sizeof(int) * count);
    for (int i = 0; i < count; i++)
        a[i] = rank;
    MPI_Request rq[2];
    double t0 = MPI_Wtime();
    MPI_Irecv(b, count, MPI_INT, (rank + n - 1) % n, 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(a, count, MPI_INT, (rank + 1) % n, 7, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    double t1 = MPI_Wtime();
    MPI_Allreduce(a, b, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    MPI_Sendrecv(a, count / 16, MPI_INT, (rank + 1) % n, 8, b, count / 16, MPI_INT, (rank + n - 1) % n, 8,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t3 = MPI_Wtime();
    if (rank == 0) {
        MPI_Allreduce(MPI_IN_PLACE, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        printf("ring %.0f\nallreduce %.0f\nsendrecv %.0f\nsum %d\n", (t1 - t0) * 1e9, (t2 - t1) * 1e9,
               (t3 - t2) * 1e9, a[0]);
    } else {
        MPI_Allreduce(MPI_IN_PLACE, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
