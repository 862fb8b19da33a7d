/* progress.c — one in-place progress line on a terminal (etkit/progress.h). */
#include "etkit/progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void etk_progress_format(char *buf, size_t n, const char *what, uint64_t done, uint64_t total, double elapsed_s)
{
    double rate = elapsed_s > 0 ? (double)done / elapsed_s : 0;
    int l;
    if (total)
        l = snprintf(buf, n, "%s %llu/%llu (%.1f%%)", what, (unsigned long long)done, (unsigned long long)total,
                     100.0 * (double)done / (double)total);
    else
        l = snprintf(buf, n, "%s %llu", what, (unsigned long long)done);
    if (l < 0 || (size_t)l >= n)
        return;
    if (rate > 0) {
        int m = snprintf(buf + l, n - (size_t)l, rate >= 10 ? ", %.0f/s" : ", %.1f/s", rate);
        if (m < 0 || (size_t)(l + m) >= n)
            return;
        l += m;
        if (total && done < total) {
            double left = (double)(total - done) / rate;
            if (left < 90)
                snprintf(buf + l, n - (size_t)l, ", %.0f s left", left);
            else if (left < 5400)
                snprintf(buf + l, n - (size_t)l, ", %.0f min left", left / 60);
            else
                snprintf(buf + l, n - (size_t)l, ", %.1f h left", left / 3600);
        }
    }
}

/* milliseconds from the environment variable `name` (a whole number below an hour), in ns; def_ms
 * when it is unset or not such a number */
static uint64_t env_ms_ns(const char *name, uint64_t def_ms)
{
    const char *d = getenv(name);
    if (d && *d) {
        char *end;
        unsigned long long v = strtoull(d, &end, 10);
        if (!*end && v < 3600000)
            return (uint64_t)v * 1000000u;
    }
    return def_ms * 1000000u;
}

void etk_progress_begin(etk_progress *p, FILE *f, bool quiet, const char *what, uint64_t total)
{
    memset(p, 0, sizeof *p);
    atomic_flag_clear(&p->drawing);
    p->what = what;
    p->total = total;
    p->f = !quiet && f && fileno(f) >= 0 && isatty(fileno(f)) ? f : NULL;
    p->start_ns = now_ns();
    p->delay_ns = env_ms_ns("ETK_PROGRESS_DELAY_MS", ETK_PROGRESS_DELAY_MS);
    p->interval_ns = env_ms_ns("ETK_PROGRESS_INTERVAL_MS", 100); /* at most ten lines a second */
    atomic_store(&p->next_ns, p->start_ns + p->delay_ns);
}

static void draw(etk_progress *p)
{
    uint64_t t = now_ns();
    if (t < atomic_load(&p->next_ns) || atomic_flag_test_and_set(&p->drawing))
        return;
    atomic_store(&p->next_ns, t + p->interval_ns);
    char line[256];
    etk_progress_format(line, sizeof line, p->what, atomic_load(&p->done), p->total,
                        (double)(t - p->start_ns) / 1e9);
    fprintf(p->f, "\r%s\033[K", line);
    fflush(p->f);
    p->drawn = true;
    atomic_flag_clear(&p->drawing);
}

void etk_progress_update(etk_progress *p, uint64_t done)
{
    uint64_t old = atomic_load(&p->done);
    while (done > old && !atomic_compare_exchange_weak(&p->done, &old, done))
        ;
    if (p->f)
        draw(p);
}

void etk_progress_add(etk_progress *p, uint64_t n)
{
    atomic_fetch_add(&p->done, n);
    if (p->f)
        draw(p);
}

void etk_progress_end(etk_progress *p)
{
    if (p->f && p->drawn) {
        while (atomic_flag_test_and_set(&p->drawing))
            ;
        fputs("\r\033[K", p->f);
        fflush(p->f);
        atomic_flag_clear(&p->drawing);
    }
    p->drawn = false;
    p->f = NULL;
}
