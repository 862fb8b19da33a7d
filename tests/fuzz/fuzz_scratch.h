/* fuzz_scratch.h — for the fuzz targets whose API reads files by path (the ASTRA-sim configs, the
 * calibration rows, the synth model file): each input, or each part of it, is written to a
 * per-process scratch file under fc_scratch_dir() and read back through the public loader, so
 * the target exercises exactly what a user's file goes through (size limits included).
 * fs_split cuts an input at its first NUL byte: two files in one input. */
#ifndef ETK_FUZZ_SCRATCH_H
#define ETK_FUZZ_SCRATCH_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"

/* Writes data to <scratch>/etk_fuzz_<tag>.<pid><ext> and returns its path in buf (0), or -1. */
static inline int fs_write(const char *tag, const char *ext, const uint8_t *data, size_t size, char *buf,
                           size_t bufsize)
{
    snprintf(buf, bufsize, "%s/etk_fuzz_%s.%ld%s", fc_scratch_dir(), tag, (long)getpid(), ext);
    FILE *f = fopen(buf, "wb");
    if (!f)
        return -1;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    int rc = fclose(f);
    return (w == size && rc == 0) ? 0 : -1;
}

/* The length of the part before the first NUL (size when there is none). */
static inline size_t fs_split(const uint8_t *data, size_t size)
{
    const void *z = size ? memchr(data, 0, size) : NULL;
    return z ? (size_t)((const uint8_t *)z - data) : size;
}
#endif
