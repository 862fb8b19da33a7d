/* workload.c — a workload is the per-rank traces of one job plus its communicator groups.
 * Opened from a prefix (<prefix>.<rank>.et, <prefix>.json), from one rank file, or from a
 * single trace; written back as files of the same shape. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etkit/et.h"

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* If `s` is "<prefix>.<digits>.et", return a malloc'ed prefix, else NULL. */
static char *rank_file_prefix(const char *s)
{
    size_t n = strlen(s);
    if (n < 5 || strcmp(s + n - 3, ".et") != 0)
        return NULL;
    size_t e = n - 3, b = e;
    while (b > 0 && s[b - 1] >= '0' && s[b - 1] <= '9')
        b--;
    if (b == e || b == 0 || s[b - 1] != '.')
        return NULL;
    return strndup(s, b - 1);
}

/* The highest rank r of an existing file "<prefix>.<r>.et" in prefix's folder, or -1: the rank
 * files after a gap would otherwise be skipped without a word. */
static long long highest_rank_file(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    char *dir = slash ? strndup(prefix, (size_t)(slash - prefix + 1)) : strdup(".");
    const char *base = slash ? slash + 1 : prefix;
    size_t bl = strlen(base);
    long long best = -1;
    DIR *d = dir ? opendir(dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *nm = e->d_name;
        size_t n = strlen(nm);
        if (n < bl + 5 || strncmp(nm, base, bl) || nm[bl] != '.' || strcmp(nm + n - 3, ".et"))
            continue;
        char *end;
        long long r = strtoll(nm + bl + 1, &end, 10);
        if (end == nm + n - 3 && end > nm + bl + 1 && nm[bl + 1] >= '0' && nm[bl + 1] <= '9' && r > best)
            best = r;
    }
    if (d)
        closedir(d);
    free(dir);
    return best;
}

/* The bytes a trace file decodes from: its size, or a gzip file's trailer size (ISIZE) */
static uint64_t decoded_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    uint64_t n = (uint64_t)st.st_size;
    FILE *f = fopen(path, "rb");
    unsigned char m[2], t[4];
    if (f && st.st_size >= 18 && fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b &&
        fseek(f, -4, SEEK_END) == 0 && fread(t, 1, 4, f) == 4) {
        uint64_t isize = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
        if (isize > n)
            n = isize;
    }
    if (f)
        fclose(f);
    return n;
}

void etk_workload_size(const char *spec, uint32_t *n_ranks, uint64_t *trace_bytes, uint64_t *largest)
{
    *n_ranks = 0;
    *trace_bytes = 0;
    *largest = 0;
    char *prefix = rank_file_prefix(spec);
    size_t plen = strlen(spec) + 32;
    char *path = malloc(plen);
    if (path && !prefix) {
        snprintf(path, plen, "%s.0.et", spec);
        if (exists(path))
            prefix = strdup(spec);
    }
    if (path && prefix) { /* the ranks 0, 1, ... up to the first missing one, as etk_workload_open */
        for (uint32_t r = 0; r < UINT32_MAX; r++) {
            snprintf(path, plen, "%s.%u.et", prefix, r);
            if (!exists(path))
                break;
            uint64_t b = decoded_size(path);
            *trace_bytes += b;
            if (b > *largest)
                *largest = b;
            ++*n_ranks;
        }
    } else if (exists(spec)) {
        *trace_bytes = *largest = decoded_size(spec);
        *n_ranks = 1;
    }
    free(prefix);
    free(path);
}

void etk_workload_free(etk_workload *w)
{
    if (!w)
        return;
    for (uint32_t r = 0; r < w->n_ranks; r++)
        etk_trace_free(w->ranks ? w->ranks[r] : NULL);
    free(w->ranks);
    etk_groups_free(w->groups);
    free((char *)w->prefix);
    free((char *)w->groups_path);
    free(w->class_of);
    free(w->class_rep);
    if (w->free_extra)
        w->free_extra(w->extra);
    free(w);
}

static int add_rank(etk_workload *w, etk_trace *t, size_t *cap)
{
    if (w->n_ranks == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        etk_trace **nr = realloc(w->ranks, nc * sizeof *nr);
        if (!nr)
            return ETK_ENOMEM;
        w->ranks = nr;
        *cap = nc;
    }
    w->ranks[w->n_ranks++] = t;
    return 0;
}

int etk_workload_open(const char *spec, const char *groups_path, const etk_read_opts *opts,
                      etk_workload **out, etk_error *err)
{
    *out = NULL;
    etk_workload *w = calloc(1, sizeof *w);
    if (!w)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    size_t cap = 0;
    int rc = 0;
    char *prefix = rank_file_prefix(spec);
    char *path = malloc(strlen(spec) + 32);
    if (!path) {
        free(prefix);
        free(w);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    if (!prefix) {
        snprintf(path, strlen(spec) + 32, "%s.0.et", spec);
        if (exists(path))
            prefix = strdup(spec);
    }
    if (prefix) {
        for (uint32_t r = 0;; r++) {
            size_t plen = strlen(prefix) + 32;
            char *p = realloc(path, plen);
            if (!p) {
                rc = etk_err(err, ETK_ENOMEM, "out of memory");
                break;
            }
            path = p;
            snprintf(path, plen, "%s.%u.et", prefix, r);
            if (!exists(path)) {
                long long hi = highest_rank_file(prefix);
                if (r == 0)
                    rc = etk_err(err, ETK_ENOTFOUND, "%s: no rank 0 trace (expected %s)", spec, path);
                else if (hi > (long long)r)
                    rc = etk_err(err, ETK_ENOTFOUND,
                                 "%s: rank %u is missing (no %s) but rank files up to %s.%lld.et exist: "
                                 "a workload's ranks are 0..N-1 without gaps", spec, r, path, prefix, hi);
                break;
            }
            etk_trace *t;
            if ((rc = etk_trace_read(path, opts, &t, err)) != 0)
                break;
            if ((rc = add_rank(w, t, &cap)) != 0) {
                etk_trace_free(t);
                rc = etk_err(err, rc, "out of memory");
                break;
            }
        }
        w->prefix = prefix;
    } else {
        struct stat st;
        if (!exists(spec) && stat(spec, &st) == 0) { /* a directory, FIFO or device */
            rc = etk_err(err, ETK_EIO, "%s: %s, expected a .et trace file or a prefix of rank files", spec,
                         etk_file_kind(st.st_mode));
        } else if (!exists(spec)) {
            rc = etk_err(err, ETK_ENOTFOUND,
                         "%s: no such trace file, and no rank files %s.<rank>.et", spec, spec);
        } else {
            etk_trace *t;
            if ((rc = etk_trace_read(spec, opts, &t, err)) == 0 && (rc = add_rank(w, t, &cap)) != 0) {
                etk_trace_free(t);
                rc = etk_err(err, rc, "out of memory");
            }
            size_t n = strlen(spec);
            w->prefix = (n > 3 && !strcmp(spec + n - 3, ".et")) ? strndup(spec, n - 3) : strdup(spec);
        }
    }
    if (rc == 0) {
        const char *gp = groups_path;
        if (!gp && w->prefix) {
            size_t plen = strlen(w->prefix) + 8;
            char *p = realloc(path, plen);
            if (p) {
                path = p;
                snprintf(path, plen, "%s.json", w->prefix);
                if (exists(path))
                    gp = path;
            }
        }
        if (gp) {
            if ((rc = etk_groups_read(gp, &w->groups, err)) == 0)
                w->groups_path = strdup(gp);
        }
    }
    free(path);
    if (rc) {
        etk_workload_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int etk_workload_write(const etk_workload *w, const char *prefix, etk_error *err)
{
    size_t plen = strlen(prefix) + 32;
    char *path = malloc(plen);
    if (!path)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    int rc = 0;
    for (uint32_t r = 0; r < w->n_ranks && rc == 0; r++) {
        if (!w->ranks[r]) {
            rc = etk_err(err, ETK_EINVAL,
                         "rank %u has no trace (a folded workload must be expanded before writing)", r);
            break;
        }
        snprintf(path, plen, "%s.%u.et", prefix, r);
        rc = etk_trace_write(w->ranks[r], path, err);
    }
    if (rc == 0 && w->groups) {
        snprintf(path, plen, "%s.json", prefix);
        rc = etk_groups_write(w->groups, path, err);
    }
    free(path);
    return rc;
}
