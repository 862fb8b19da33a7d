/* kmap.h — the one hash table of libetkit (private): open addressing from a (64-bit, 64-bit)
 * key to a 32-bit value, grown at half load. The simulator keys node ids, group names (by
 * etk_hash_str and length), channels and cost caches with it; validate keys comm groups with
 * it. A zeroed etk_kmap is an empty map. Keys that are strings are hashed by the caller, who
 * compares the strings on a hit (two strings may share a hash). */
#ifndef ETK_UTIL_KMAP_H
#define ETK_UTIL_KMAP_H
#include <stdbool.h>
#include <stdint.h>

#define ETK_KMAP_NONE UINT32_MAX /* the value of an empty slot; never stored */

typedef struct etk_kmap {
    uint64_t *ka, *kb;
    uint32_t *val; /* ETK_KMAP_NONE = empty */
    uint32_t cap, n;
} etk_kmap;

/* FNV-1a recurrence over a NUL-terminated string (64-bit prime; basis 1469598103934665603, one
 * digit short of the published one: the simulator's keys have always used it). */
uint64_t etk_hash_str(const char *s);
/* The value of (a, b), or ETK_KMAP_NONE when absent. */
uint32_t etk_kmap_get(const etk_kmap *m, uint64_t a, uint64_t b);
/* Insert (a, b) -> v when absent; returns the existing value if present, else v. Sets *oom (and
 * leaves the map as it was) when memory runs out. */
uint32_t etk_kmap_put(etk_kmap *m, uint64_t a, uint64_t b, uint32_t v, bool *oom);
void etk_kmap_free(etk_kmap *m);

#endif
