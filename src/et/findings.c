/* findings.c — the findings list of validation (etk_findings: severity, code, rank, file, node,
 * count, message) and the helpers every check uses (add, a growable string buffer, id vectors,
 * short trace/node names). The checks: vstruct.c, vgroups.c, vcoll.c, vdeadlock.c. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"
#include "et/validate_priv.h"
#include "util/cmp.h"

const char *etk_severity_name(int sev)
{
    switch (sev) {
    case ETK_SEV_INFO: return "info";
    case ETK_SEV_WARNING: return "warning";
    case ETK_SEV_ERROR: return "error";
    default: return "unknown";
    }
}

etk_findings *etk_findings_new(void)
{
    etk_findings *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->arena = etk_arena_new(64 * 1024);
    if (!f->arena) {
        free(f);
        return NULL;
    }
    return f;
}

void etk_findings_free(etk_findings *f)
{
    if (!f)
        return;
    free(f->items);
    etk_arena_free(f->arena);
    free(f);
}

size_t etk_findings_count(const etk_findings *f, const char *code, int64_t rank)
{
    size_t c = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->items[i].code, code) && (rank < 0 || f->items[i].rank == rank))
            c++;
    return c;
}

const etk_finding *etk_findings_first(const etk_findings *f, const char *code, int64_t rank)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->items[i].code, code) && (rank < 0 || f->items[i].rank == rank))
            return &f->items[i];
    return NULL;
}

int etk_finding_format(const etk_finding *x, char *buf, size_t len)
{
    char where[160] = "";
    size_t w = 0;
    if (x->rank >= 0)
        w += (size_t)snprintf(where + w, sizeof where - w, "rank %" PRId64 ": ", x->rank);
    if (x->node_index >= 0 && w < sizeof where)
        snprintf(where + w, sizeof where - w, "node #%" PRId64 " (id %" PRIu64 "): ",
                 x->node_index, x->node_id);
    return snprintf(buf, len, "%s%s%s%s [%s]: %s", x->file && *x->file ? x->file : "",
                    x->file && *x->file ? ": " : "", where, etk_severity_name(x->severity),
                    x->code, x->message);
}

/* Append a finding; the message is formatted into the findings' arena. */
#if defined(__GNUC__)
__attribute__((format(printf, 9, 10)))
#endif
int val_add(etk_findings *f, int sev, const char *code, int64_t rank, const char *file,
            int64_t idx, uint64_t id, uint64_t count, const char *fmt, ...)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        etk_finding *it = realloc(f->items, cap * sizeof *it);
        if (!it)
            return ETK_ENOMEM;
        f->items = it;
        f->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = etk_arena_alloc(f->arena, (size_t)(len < 0 ? 0 : len) + 1);
    if (!msg)
        return ETK_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)len + 1, fmt, ap);
    va_end(ap);
    etk_finding *x = &f->items[f->n++];
    x->severity = sev;
    x->code = code;
    x->rank = rank;
    x->file = file ? file : "";
    x->node_index = idx;
    x->node_id = id;
    x->count = count ? count : 1;
    x->message = msg;
    if (sev == ETK_SEV_ERROR)
        f->n_errors++;
    else if (sev == ETK_SEV_WARNING)
        f->n_warnings++;
    else
        f->n_infos++;
    return 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void val_sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if (b->n + (size_t)len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->n + (size_t)len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)len;
}

const char *val_sb_str(sbuf *b)
{
    return b->p && !b->oom ? b->p : "";
}

int val_u64_push(u64vec *a, uint64_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        uint64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return ETK_ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Sort and drop repeats; returns the distinct count. */
size_t val_u64_unique(u64vec *a)
{
    if (!a->n)
        return 0;
    qsort(a->v, a->n, sizeof *a->v, etk_cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->v[i] != a->v[k - 1])
            a->v[k++] = a->v[i];
    a->n = k;
    return k;
}

const char *val_tpath(const etk_trace *t)
{
    return t->path ? t->path : "";
}

const char *val_nname(const etk_node *n)
{
    return n->name ? n->name : "";
}
