/* calib_internal.h — helpers shared by the files of src/calib/ (not public). */
#ifndef ETKIT_CALIB_INTERNAL_H
#define ETKIT_CALIB_INTERNAL_H

#include <stdint.h>

#define CALIB_MAX_JOBS 64

/* fn(ctx, i) for i in [0, n) on up to `jobs` threads (1: in this thread, in order). */
void calib_parallel(uint32_t n, uint32_t jobs, void (*fn)(void *ctx, uint32_t i), void *ctx);

#endif
