/* mpi_comms.c — MPI beyond MPI_COMM_WORLD for `etkit live --launcher -- mpirun -np 4`
 * (tests/live/mpi.sh): MPI_Comm_split into pairs, MPI_Comm_dup, MPI_Comm_free, MPI_Ssend,
 * MPI_Probe / MPI_Iprobe, MPI_Test / Testall / Waitany / Waitsome polling, and the
 * v-collectives, each timed with MPI_Wtime (virtual). The data are real: the pair all-reduce's
 * sum is checked. Rank 0 prints  NAME NS  (and  pairsum S). Built with mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB (1 << 20)

static double t_prev;
static void lap(int rank, const char *name)
{
    double t = MPI_Wtime();
    if (rank == 0)
        printf("%s %.0f\n", name, (t - t_prev) * 1e9);
    t_prev = t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char *a = calloc(MIB, 1), *b = calloc(MIB, 1);
    int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) {
        cnt[i] = MIB / n;
        dsp[i] = i * (MIB / n);
    }
    /* pairs {0,1}, {2,3}: rank order reversed by the key */
    MPI_Comm pair, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, -rank, &pair);
    int pr;
    MPI_Comm_rank(pair, &pr);
    if (pr != 1 - rank % 2) {
        fprintf(stderr, "rank %d: pair rank %d\n", rank, pr);
        return 1;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(MPI_COMM_WORLD);
    t_prev = MPI_Wtime();
    int v = rank, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, pair); /* 4 bytes on 2 ranks */
    lap(rank, "pair_allreduce_4");
    MPI_Allreduce(a, b, MIB, MPI_CHAR, MPI_SUM, pair);
    lap(rank, "pair_allreduce");
    /* MPI_Ssend / MPI_Probe + MPI_Recv in the pair */
    if (pr == 0) {
        MPI_Ssend(a, MIB, MPI_CHAR, 1, 3, pair);
    } else {
        MPI_Status st;
        MPI_Probe(MPI_ANY_SOURCE, 3, pair, &st);
        int c;
        MPI_Get_count(&st, MPI_CHAR, &c);
        MPI_Recv(b, c, MPI_CHAR, st.MPI_SOURCE, 3, pair, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(pair);
    lap(rank, "pair_ssend_barrier");
    /* rings on the duplicate: Isend + Iprobe polling + Recv; Irecv polled by Test, Waitany */
    MPI_Barrier(dup);
    t_prev = MPI_Wtime();
    MPI_Request rq[2];
    MPI_Isend(a, MIB, MPI_CHAR, (rank + 1) % n, 4, dup, &rq[1]);
    int flag = 0, idx;
    while (!flag)
        MPI_Iprobe(MPI_ANY_SOURCE, 4, dup, &flag, MPI_STATUS_IGNORE);
    MPI_Recv(b, MIB, MPI_CHAR, (rank + n - 1) % n, 4, dup, MPI_STATUS_IGNORE);
    MPI_Waitany(1, &rq[1], &idx, MPI_STATUS_IGNORE);
    lap(rank, "dup_ring_iprobe");
    MPI_Barrier(dup);
    t_prev = MPI_Wtime();
    MPI_Irecv(b, MIB, MPI_CHAR, (rank + n - 1) % n, 5, dup, &rq[0]);
    MPI_Isend(a, MIB, MPI_CHAR, (rank + 1) % n, 5, dup, &rq[1]);
    flag = 0;
    while (!flag)
        MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
    MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
    lap(rank, "dup_ring_test");
    MPI_Barrier(dup);
    t_prev = MPI_Wtime();
    MPI_Irecv(b, MIB, MPI_CHAR, (rank + n - 1) % n, 6, dup, &rq[0]);
    MPI_Isend(a, MIB, MPI_CHAR, (rank + 1) % n, 6, dup, &rq[1]);
    flag = 0;
    while (!flag)
        MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
    lap(rank, "dup_ring_testall");
    MPI_Irecv(b, MIB, MPI_CHAR, (rank + n - 1) % n, 7, dup, &rq[0]);
    MPI_Isend(a, MIB, MPI_CHAR, (rank + 1) % n, 7, dup, &rq[1]);
    int done = 0, outc, ids[2];
    while (done < 2) {
        MPI_Waitsome(2, rq, &outc, ids, MPI_STATUSES_IGNORE);
        done += outc;
    }
    lap(rank, "dup_ring_waitsome");
    /* v-collectives with equal counts, each after its plain counterpart */
    MPI_Allgather(a, MIB / n, MPI_CHAR, b, MIB / n, MPI_CHAR, dup);
    lap(rank, "allgather");
    MPI_Allgatherv(a, MIB / n, MPI_CHAR, b, cnt, dsp, MPI_CHAR, dup);
    lap(rank, "allgatherv");
    MPI_Alltoall(a, MIB / n, MPI_CHAR, b, MIB / n, MPI_CHAR, dup);
    lap(rank, "alltoall");
    MPI_Alltoallv(a, cnt, dsp, MPI_CHAR, b, cnt, dsp, MPI_CHAR, dup);
    lap(rank, "alltoallv");
    MPI_Reduce_scatter_block(a, b, MIB / n, MPI_CHAR, MPI_SUM, dup);
    lap(rank, "reduce_scatter_block");
    MPI_Reduce_scatter(a, b, cnt, MPI_CHAR, MPI_SUM, dup);
    lap(rank, "reduce_scatter");
    MPI_Gather(a, MIB / n, MPI_CHAR, b, MIB / n, MPI_CHAR, 0, dup);
    lap(rank, "gather");
    MPI_Gatherv(a, MIB / n, MPI_CHAR, b, cnt, dsp, MPI_CHAR, 0, dup);
    lap(rank, "gatherv");
    MPI_Scatter(a, MIB / n, MPI_CHAR, b, MIB / n, MPI_CHAR, 0, dup);
    lap(rank, "scatter");
    MPI_Scatterv(a, cnt, dsp, MPI_CHAR, b, MIB / n, MPI_CHAR, 0, dup);
    lap(rank, "scatterv");
    if (rank == 0)
        printf("pairsum %d\n", sum);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&pair);
    free(a);
    free(b);
    free(cnt);
    free(dsp);
    MPI_Finalize();
    return 0;
}
