/* phases.c — inference metrics of a finished simulation: traces of `etkit gen --mode inference`
 * name their nodes "prefill/..." and "decode<i>/..." (docs/gen.md), so the end of each phase is
 * the latest end of its nodes over the simulated ranks (with folding every rank of a class ends
 * with its representative). Time to first token (TTFT) is the end of the prefill, which
 * includes the head and sampling of the first token of every sequence; decode step i lasts from
 * the end of step i - 1 (the prefill for i = 1) to its own end, and time per output token
 * (TPOT) is their mean, (end of step N - TTFT) / N. report.c prints them. */
#include <stdlib.h>
#include <string.h>

#include "sim/internal.h"

/* 0 for "prefill/", i for "decode<i>/" (i >= 1), -1 otherwise */
static int64_t phase_of(const char *n)
{
    if (!n)
        return -1;
    if (n[0] == 'p')
        return strncmp(n, "prefill/", 8) ? -1 : 0;
    if (n[0] != 'd' || strncmp(n, "decode", 6))
        return -1;
    int64_t i = 0;
    const char *p = n + 6;
    if (*p < '1' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && i < (1ll << 40))
        i = i * 10 + (*p++ - '0');
    return *p == '/' ? i : -1;
}

int sim_phase_result(etk_sim *s, etk_error *err)
{
    etk_sim_result *res = &s->res;
    uint64_t *end = NULL;
    size_t cap = 0;
    int64_t hi = -1;
    bool prefill = false;
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        const srank *R = &s->r[r];
        if (!R->simulated)
            continue;
        for (uint32_t k = 0; k < R->n; k++) {
            const snode *n = &R->nodes[k];
            if (n->state != ST_DONE || !n->src)
                continue;
            int64_t ph = phase_of(n->src->name);
            if (ph < 0)
                continue;
            if ((size_t)ph >= cap) {
                size_t c = cap ? cap : 64;
                while (c <= (size_t)ph)
                    c *= 2;
                uint64_t *e = realloc(end, c * sizeof *e);
                if (!e) {
                    free(end);
                    return etk_err(err, ETK_ENOMEM, "simulator: out of memory");
                }
                memset(e + cap, 0, (c - cap) * sizeof *e);
                end = e;
                cap = c;
            }
            prefill |= ph == 0;
            if (ph > hi)
                hi = ph;
            if (n->end_ns > end[ph])
                end[ph] = n->end_ns;
        }
    }
    if (!prefill) { /* not an inference trace */
        free(end);
        return 0;
    }
    res->inference = true;
    res->phase_end_ns = end;
    res->decode_steps = (uint32_t)hi;
    res->ttft_ns = end[0];
    if (hi > 0) {
        res->tpot_ns = (double)(end[hi] - end[0]) / (double)hi;
        res->tpot_min_ns = UINT64_MAX;
        for (int64_t i = 1; i <= hi; i++) {
            uint64_t d = end[i] > end[i - 1] ? end[i] - end[i - 1] : 0;
            if (d < res->tpot_min_ns)
                res->tpot_min_ns = d;
            if (d > res->tpot_max_ns)
                res->tpot_max_ns = d;
        }
    }
    return 0;
}
