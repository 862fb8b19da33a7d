/* arena.c — bump allocator for graphs: a trace's nodes, strings, deps and attributes live in
 * one arena and are freed together (no per-node malloc in hot paths). Blocks grow geometrically
 * up to 64 MiB; oversized requests get a block of their own. */
#include <stdlib.h>
#include <string.h>

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

#define HDR ((sizeof(block) + 15u) & ~(size_t)15u)

static block *new_block(etk_arena *a, size_t min)
{
    size_t size = a->block_bytes;
    if (size < min)
        size = min;
    block *b = malloc(HDR + size);
    if (!b)
        return NULL;
    b->size = size;
    b->used = 0;
    b->next = a->head;
    a->head = b;
    a->total += HDR + size;
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

void *etk_arena_alloc(etk_arena *a, size_t n)
{
    n = (n + 15u) & ~(size_t)15u;
    if (n == 0)
        n = 16;
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
            void *p = (char *)big + HDR;
            memset(p, 0, n);
            return p;
        }
        b = new_block(a, n);
        if (!b)
            return NULL;
    }
    void *p = (char *)b + HDR + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void *etk_arena_memdup(etk_arena *a, const void *p, size_t n)
{
    void *q = etk_arena_alloc(a, n);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

char *etk_arena_strndup(etk_arena *a, const char *s, size_t n)
{
    char *q = etk_arena_alloc(a, n + 1);
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
    block *keep = NULL;
    for (block *b = a->head; b;) {
        block *n = b->next;
        if (!n) {
            keep = b; /* the first (oldest) block */
            break;
        }
        a->total -= HDR + b->size;
        free(b);
        b = n;
    }
    a->head = keep;
    if (keep)
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
