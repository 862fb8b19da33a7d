/* check.h — small input-checking helpers shared by the readers (private to libetkit):
 * checked 64-bit arithmetic on user numbers, the closest known key for a "did you mean"
 * hint, and a YAML nesting-depth check run before a document is built. */
#ifndef ETK_UTIL_CHECK_H
#define ETK_UTIL_CHECK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etkit/et.h"

/* Deepest YAML/JSON nesting accepted in model, cluster and GPU files (the presets use 4). */
#define ETK_YAML_MAX_DEPTH 256

/* *out = a * b, a + b; false (and *out untouched) when the result does not fit in int64_t. */
static inline bool etk_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}
static inline bool etk_add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

/* The entry of known[0..n) closest to `word` by edit distance (at most 1 for words under 4
 * letters, else 2), or NULL. */
const char *etk_suggest(const char *word, const char *const *known, size_t n);

/* Fail (ETK_EFORMAT, "NAME:LINE: nesting deeper than MAX levels") when the YAML text nests
 * more than max_depth mappings/sequences; reads parser events only, so it stops early on
 * hostile input. Syntax errors are left to the real parse (returns 0). */
int etk_yaml_depth_check(const char *text, size_t len, const char *name, int max_depth,
                         etk_error *err);
#endif
