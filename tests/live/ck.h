/* ck.h — shared by the live-mode test programs (tests/live: the .cu and .c programs): CK(call) exits with the
 * file, line and call when a CUDA / NCCL / cuBLAS call returns non-zero. */
#ifndef ETK_LIVE_TEST_CK_H
#define ETK_LIVE_TEST_CK_H
#include <stdio.h>
#include <stdlib.h>
/* built by tests/live/livelib.sh's cuda_build own: the headers must be etkit's own */
#if defined(ETK_WANT_OWN_HEADERS) && !defined(ETK_OWN_CUDA_HEADERS)
#error "not etkit's own CUDA headers (live/include)"
#endif
#define CK(x)                                                                                       \
    do {                                                                                            \
        if ((x) != 0) {                                                                             \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x);                         \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)
#endif
