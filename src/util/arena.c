/* arena.c — bump allocator for graphs: a trace's nodes, strings, deps and attributes live in
 * one arena and are freed together (no per-node malloc in hot paths). Blocks grow geometrically
 * up to 64 MiB; oversized requests get a block of their own. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "etkit/et.h"

typedef struct block {
    struct block *next;
    size_t size;
    size_t used;
    /* data follows, 16-byte aligned */
} block;

struct etk_arena {
    block *head;
    size_t block_bytes;
    size_t total;
};

#define HDR ((sizeof(block) + 15u) & ~(size_t)15u) /* keeps block data 16-aligned */

#define HUGE_BYTES ((size_t)2 << 20)

/* Large blocks are 2 MiB-aligned and advised as transparent huge pages: filling fresh memory
 * page by page costs more than decoding the trace (measured: 100 vs 450 MB/s on a 3 MB
 * trace), and huge pages cut the page faults 512-fold. */
void *etk__big_alloc(size_t bytes)
{
    if (bytes < 4 * HUGE_BYTES) /* below 8 MiB the last, partly used huge page costs too much */
        return malloc(bytes);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_BYTES, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static block *new_block(etk_arena *a, size_t min)
{
    size_t size = a->block_bytes;
    if (size < min)
        size = min;
    if (HDR + size >= 4 * HUGE_BYTES)
        size = ((HDR + size + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1)) - HDR;
    block *b = etk__big_alloc(HDR + size);
    if (!b)
        return NULL;
    b->size = size;
    b->used = 0;
    b->next = a->head;
    a->head = b;
    a->total += HDR + size;
    /* grow geometrically: a few large blocks, reused by the allocator from one trace to the
     * next (blocks of one fixed size above malloc's mmap threshold are unmapped and faulted
     * in again on every read: 6x slower on a VM) */
    if (a->block_bytes < (64u << 20))
        a->block_bytes *= 2;
    return b;
}

etk_arena *etk_arena_new(size_t block_bytes)
{
    etk_arena *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->block_bytes = block_bytes ? block_bytes : (64u << 10);
    return a;
}

/* Allocation without zeroing, for copies that overwrite every byte. */
static void *alloc_raw(etk_arena *a, size_t n)
{
    n = (n + 7u) & ~(size_t)7u;
    if (n == 0)
        n = 8;
    block *b = a->head;
    if (!b || b->size - b->used < n) {
        if (n > a->block_bytes / 4 && b) {
            /* big request: own block, keep filling the current one */
            block *big = malloc(HDR + n);
            if (!big)
                return NULL;
            big->size = n;
            big->used = n;
            big->next = b->next;
            b->next = big;
            a->total += HDR + n;
            return (char *)big + HDR;
        }
        b = new_block(a, n);
        if (!b)
            return NULL;
    }
    void *p = (char *)b + HDR + b->used;
    b->used += n;
    return p;
}

void *etk_arena_alloc(etk_arena *a, size_t n)
{
    void *p = alloc_raw(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

void *etk_arena_alloc_uninit(etk_arena *a, size_t n) { return alloc_raw(a, n); }

void *etk_arena_memdup(etk_arena *a, const void *p, size_t n)
{
    void *q = alloc_raw(a, n);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

char *etk_arena_strndup(etk_arena *a, const char *s, size_t n)
{
    char *q = alloc_raw(a, n + 1);
    if (q) {
        memcpy(q, s, n);
        q[n] = 0;
    }
    return q;
}

char *etk_arena_strdup(etk_arena *a, const char *s)
{
    return etk_arena_strndup(a, s, strlen(s));
}

size_t etk_arena_bytes(const etk_arena *a) { return a->total; }

void etk_arena_reset(etk_arena *a)
{
    /* keep the newest block: blocks grow geometrically, so it is the largest one, and a
     * scratch arena reset once per message settles on one block that fits a message */
    block *keep = a->head;
    if (!keep)
        return;
    for (block *b = keep->next; b;) {
        block *n = b->next;
        a->total -= HDR + b->size;
        free(b);
        b = n;
    }
    keep->next = NULL;
    keep->used = 0;
}

void etk_arena_free(etk_arena *a)
{
    if (!a)
        return;
    for (block *b = a->head; b;) {
        block *n = b->next;
        free(b);
        b = n;
    }
    free(a);
}
