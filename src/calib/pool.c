/* pool.c — run a function over the rows on `jobs` threads (calib_internal.h). Each index is
 * handled by exactly one thread; callers store results per index and combine them in index
 * order afterwards, so the outcome does not depend on the scheduling. */
#include <pthread.h>
#include <stdlib.h>

#include "calib/calib_internal.h"

typedef struct pool {
    pthread_mutex_t mu;
    uint32_t next, n;
    void (*fn)(void *, uint32_t);
    void *ctx;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        uint32_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        p->fn(p->ctx, i);
    }
}

void calib_parallel(uint32_t n, uint32_t jobs, void (*fn)(void *ctx, uint32_t i), void *ctx)
{
    if (jobs > CALIB_MAX_JOBS)
        jobs = CALIB_MAX_JOBS;
    if (jobs > n)
        jobs = n;
    pool p = {.next = 0, .n = n, .fn = fn, .ctx = ctx};
    pthread_t th[CALIB_MAX_JOBS];
    uint32_t started = 0;
    if (jobs > 1 && pthread_mutex_init(&p.mu, NULL) == 0) {
        for (; started + 1 < jobs; started++)
            if (pthread_create(&th[started], NULL, worker, &p) != 0)
                break;
        worker(&p);
        for (uint32_t i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        pthread_mutex_destroy(&p.mu);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        fn(ctx, i);
}
