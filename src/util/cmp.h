/* cmp.h — qsort comparators shared across libetkit (private). */
#ifndef ETK_UTIL_CMP_H
#define ETK_UTIL_CMP_H
#include <stdint.h>

/* ascending uint32_t */
static inline int etk_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}
/* ascending uint64_t */
static inline int etk_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
#endif
