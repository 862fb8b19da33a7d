/* mpi_bidir.c — HPCC's ring pattern (b_eff's ring_lat_bw_loop) for `etkit live --launcher --
 * mpirun ...` (tests/live/mpi.sh): every rank exchanges S bytes with both neighbours, L times,
 * first as two MPI_Sendrecv (to the right, then to the left), then as MPI_Irecv from both,
 * MPI_Isend to both and one MPI_Waitall of the four; the slowest rank's time per loop (MPI_Reduce
 * of MPI_Wtime differences, MAX) is printed by rank 0 as  sendrecv NS  and  isend NS. Then
 * MPI_Finalize. On 4 ranks this stopped (docs/live.md "MPI"). W = 1: a wildcard receive
 * (MPI_ANY_SOURCE, tag 999) is posted first and left outstanding through the loops (then cancelled),
 * so every receive goes into the engine the "late" way (docs/live.md "MPI"): 8 ranks give the same
 * times, 64 ranks stopped (s26, bench/RESULTS.md "s26-live"). W = 2: first one 8 B MPI_Sendrecv
 * with every other rank (to rank + k, from rank - k, k = 1 .. n-1), as HPCC's ping-pongs do
 * before its rings: until s27 a rank that had sent to more than 32 peers shared the engine's
 * streams between peers, and on 40 ranks ranks 1 and 33 then sent both ring messages on one
 * (isend 2,000 ns, not 1,000; 64 ranks of HPCC: its ring figures 2x). usage: mpi_bidir S L [W] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int len = argc > 1 ? atoi(argv[1]) : 8, loops = argc > 2 ? atoi(argv[2]) : 10;
    char *sl = calloc((size_t)len, 1), *sr = calloc((size_t)len, 1), *rl = calloc((size_t)len, 1),
         *rr = calloc((size_t)len, 1);
    if (!sl || !sr || !rl || !rr)
        return 1;
    int left = (rank + n - 1) % n, right = (rank + 1) % n, wild = argc > 3 && atoi(argv[3]) == 1, junk = 0;
    MPI_Request wq = MPI_REQUEST_NULL;
    if (wild)
        MPI_Irecv(&junk, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &wq);
    if (argc > 3 && atoi(argv[3]) == 2)
        for (int k = 1; k < n; k++)
            MPI_Sendrecv(sr, 8 < len ? 8 : len, MPI_BYTE, (rank + k) % n, 3, rl, 8 < len ? 8 : len, MPI_BYTE,
                         (rank + n - k) % n, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < loops; i++) {
        MPI_Sendrecv(sr, len, MPI_BYTE, right, 1, rl, len, MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(sl, len, MPI_BYTE, left, 2, rr, len, MPI_BYTE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double t1 = MPI_Wtime();
    for (int i = 0; i < loops; i++) {
        MPI_Request q[4];
        MPI_Irecv(rl, len, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(rr, len, MPI_BYTE, right, 2, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(sr, len, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(sl, len, MPI_BYTE, left, 2, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    }
    double t2 = MPI_Wtime(), mine[2] = {t1 - t0, t2 - t1}, worst[2];
    if (wild) {
        MPI_Cancel(&wq);
        MPI_Wait(&wq, MPI_STATUS_IGNORE);
    }
    MPI_Reduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sendrecv %.0f\nisend %.0f\n", worst[0] * 1e9 / loops, worst[1] * 1e9 / loops);
    free(sl);
    free(sr);
    free(rl);
    free(rr);
    MPI_Finalize();
    return 0;
}
