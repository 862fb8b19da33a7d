/* kmap.c — the one hash table of libetkit (see kmap.h): open addressing from a (64-bit,
 * 64-bit) key to a 32-bit value, and the FNV-1a string hash used to key it by name. */
#include <stdlib.h>
#include <string.h>

#include "util/kmap.h"

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

uint64_t etk_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static int etk_kmap_init(etk_kmap *m, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < n * 2 + 16)
        cap *= 2;
    m->ka = malloc(sizeof(uint64_t) * cap);
    m->kb = malloc(sizeof(uint64_t) * cap);
    m->val = malloc(sizeof(uint32_t) * cap);
    if (!m->ka || !m->kb || !m->val)
        return -1;
    memset(m->val, 0xff, sizeof(uint32_t) * cap);
    m->cap = cap;
    m->n = 0;
    return 0;
}

void etk_kmap_free(etk_kmap *m)
{
    free(m->ka);
    free(m->kb);
    free(m->val);
    memset(m, 0, sizeof *m);
}

uint32_t etk_kmap_get(const etk_kmap *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return ETK_KMAP_NONE;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = (uint32_t)mix64(a * 31 + b) & mask;; i = (i + 1) & mask) {
        if (m->val[i] == ETK_KMAP_NONE)
            return ETK_KMAP_NONE;
        if (m->ka[i] == a && m->kb[i] == b)
            return m->val[i];
    }
}

/* Insert when absent; returns the existing value if present, else v. -1 (as ETK_KMAP_NONE-1) on OOM
 * is signalled through *oom. */
uint32_t etk_kmap_put(etk_kmap *m, uint64_t a, uint64_t b, uint32_t v, bool *oom)
{
    if (!m->cap && etk_kmap_init(m, 8) != 0) {
        *oom = true;
        return v;
    }
    if ((m->n + 1) * 2 > m->cap) {
        etk_kmap old = *m;
        if (etk_kmap_init(m, old.cap) != 0) {
            *m = old;
            *oom = true;
            return v;
        }
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.val[i] != ETK_KMAP_NONE) {
                bool o2 = false;
                etk_kmap_put(m, old.ka[i], old.kb[i], old.val[i], &o2);
            }
        etk_kmap_free(&old);
    }
    uint32_t mask = m->cap - 1;
    for (uint32_t i = (uint32_t)mix64(a * 31 + b) & mask;; i = (i + 1) & mask) {
        if (m->val[i] == ETK_KMAP_NONE) {
            m->ka[i] = a;
            m->kb[i] = b;
            m->val[i] = v;
            m->n++;
            return v;
        }
        if (m->ka[i] == a && m->kb[i] == b)
            return m->val[i];
    }
}
