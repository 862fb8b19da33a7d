/* ck.h — shared by the live-mode test programs (tests/live/*.cu, *.c): CK(call) exits with the
 * file, line and call when a CUDA / NCCL / cuBLAS call returns non-zero. */
#ifndef ETK_LIVE_TEST_CK_H
#define ETK_LIVE_TEST_CK_H
#include <stdio.h>
#include <stdlib.h>
#define CK(x)                                                                                       \
    do {                                                                                            \
        if ((x) != 0) {                                                                             \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x);                         \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)
#endif
