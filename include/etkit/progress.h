/* etkit/progress.h — one line of progress on a terminal for long work (many rank files, long
 * simulations, large conversions), updated in place: what, done/total, percent, rate and time
 * left. Draws only when the stream is a terminal and the caller did not ask for quiet, at most
 * ten times a second and only once the work has run for ETK_PROGRESS_DELAY_MS (500 ms by default;
 * the environment variable ETK_PROGRESS_DELAY_MS overrides it), so short work prints nothing.
 * The environment variable ETK_PROGRESS_INTERVAL_MS overrides the 100 ms between lines (tests:
 * 0 draws on every update).
 * Updates may come from several threads (done is a count, the largest seen wins).
 *
 *     etk_progress p;
 *     etk_progress_begin(&p, stderr, quiet, "rank files", n);
 *     for (...) etk_progress_update(&p, i + 1);
 *     etk_progress_end(&p);            (erases the line)
 */
#ifndef ETKIT_PROGRESS_H
#define ETKIT_PROGRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ETK_PROGRESS_DELAY_MS 500

typedef struct etk_progress {
    FILE *f;                     /* NULL: off (not a terminal, quiet) */
    const char *what;
    uint64_t total;              /* 0: unknown (no percent or time left) */
    _Atomic uint64_t done;
    _Atomic uint64_t next_ns;    /* monotonic time of the next draw */
    atomic_flag drawing;         /* one thread draws at a time */
    uint64_t start_ns, delay_ns;
    uint64_t interval_ns;        /* between two lines (100 ms) */
    bool drawn;                  /* a line is on the screen (end erases it) */
} etk_progress;

/* Start: draws on f (normally stderr) when f is a terminal and !quiet. */
void etk_progress_begin(etk_progress *p, FILE *f, bool quiet, const char *what, uint64_t total);
/* done units of total are finished */
void etk_progress_update(etk_progress *p, uint64_t done);
/* n more units are finished (from any thread) */
void etk_progress_add(etk_progress *p, uint64_t n);
/* Finished: erases the line if one was drawn. */
void etk_progress_end(etk_progress *p);
/* The line for done of total after elapsed_s seconds (what the terminal shows, without the
 * carriage return): "rank files 12/64 (18.8%), 5.2/s, 10 s left". */
void etk_progress_format(char *buf, size_t n, const char *what, uint64_t done, uint64_t total, double elapsed_s);

#ifdef __cplusplus
}
#endif
#endif
