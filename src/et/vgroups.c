/* vgroups.c — the communicator groups of a workload for the cross-rank checks: the group
 * table (xstate, validate_priv.h), loading the comm-group file's members, the group of a node,
 * and the union-find used to contract matched collectives and messages (vdeadlock.c). */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"
#include "et/validate_priv.h"
#include "util/kmap.h"
#include "util/cmp.h"

/* Index of group `id`, or -1 when absent. The table (util/kmap.h) is keyed by the name's hash
 * and length; two names sharing both are told apart by a scan. */
static int grp_find(const xstate *x, const char *id)
{
    uint32_t v = etk_kmap_get(&x->names, etk_hash_str(id), strlen(id));
    if (v == ETK_KMAP_NONE)
        return -1;
    if (!strcmp(x->g[v].id, id))
        return (int)v;
    for (size_t i = 0; i < x->n_g; i++)
        if (!strcmp(x->g[i].id, id))
            return (int)i;
    return -1;
}

/* Index of group `id`, adding it (undefined) if absent. -1 on out-of-memory. */
static int64_t grp_get(xstate *x, const char *id)
{
    int i = grp_find(x, id);
    if (i >= 0)
        return i;
    if (x->n_g == x->cap_g) {
        size_t cap = x->cap_g ? 2 * x->cap_g : 16;
        grp *g = realloc(x->g, cap * sizeof *g);
        if (!g)
            return -1;
        x->g = g;
        x->cap_g = cap;
    }
    grp *g = &x->g[x->n_g++];
    memset(g, 0, sizeof *g);
    g->id = id;
    g->undef_rank = g->undef_idx = g->mm_k = -1;
    bool oom = false; /* keeps the first of two names with one hash: grp_find scans for the other */
    etk_kmap_put(&x->names, etk_hash_str(id), strlen(id), (uint32_t)x->n_g - 1, &oom);
    return oom ? -1 : (int64_t)x->n_g - 1;
}

/* after a group's name in messages: the implicit group has the empty name */
const char *val_all_note(const grp *g)
{
    return g->all ? " (all ranks: no pg_name)" : "";
}

bool val_grp_has(const grp *g, uint32_t r)
{
    if (g->all)
        return true;
    size_t lo = 0, hi = g->n_members;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->members[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_members && g->members[lo] == r;
}

uint32_t val_uf_find(uint32_t *p, uint32_t a)
{
    while (p[a] != a) {
        p[a] = p[p[a]];
        a = p[a];
    }
    return a;
}

void val_uf_union(uint32_t *p, uint32_t a, uint32_t b)
{
    a = val_uf_find(p, a);
    b = val_uf_find(p, b);
    if (a != b) { /* the smaller number becomes the root: deterministic */
        if (a < b)
            p[b] = a;
        else
            p[a] = b;
    }
}

/* Build the group table from the comm-group file, check ranks are in range and distinct. */
int val_load_groups(xstate *x)
{
    etk_workload *w = x->w;
    size_t n_def = w->groups ? w->groups->n_groups : 0;
    const char *gpath = w->groups_path ? w->groups_path : "";
    for (size_t i = 0; i < n_def; i++) {
        const etk_group *src = &w->groups->groups[i];
        int64_t gi = grp_get(x, src->id);
        if (gi < 0)
            return ETK_ENOMEM;
        grp *g = &x->g[gi];
        if (g->defined) {
            if (val_add(x->out, ETK_SEV_ERROR, "bad-group", -1, gpath, -1, 0, 1,
                    "group \"%s\" is defined twice; expected unique keys", src->id))
                return ETK_ENOMEM;
            continue;
        }
        g->defined = true;
        g->n_members = src->n_ranks;
        g->members = malloc((src->n_ranks ? src->n_ranks : 1) * sizeof *g->members);
        if (!g->members)
            return ETK_ENOMEM;
        if (src->n_ranks)
            memcpy(g->members, src->ranks, src->n_ranks * sizeof *g->members);
        qsort(g->members, g->n_members, sizeof *g->members, etk_cmp_u32);
        uint32_t bad = 0, dup = 0, first_bad = 0, first_dup = 0;
        for (uint32_t k = 0; k < g->n_members; k++) {
            if (g->members[k] >= w->n_ranks && !bad++)
                first_bad = g->members[k];
            if (k && g->members[k] == g->members[k - 1] && !dup++)
                first_dup = g->members[k];
        }
        int rc = 0;
        if (bad)
            rc = val_add(x->out, ETK_SEV_ERROR, "bad-group", -1, gpath, -1, 0, bad,
                     "group \"%s\" names %" PRIu32 " ranks outside 0..%" PRIu32
                     " (the first %" PRIu32 "); the workload has %" PRIu32 " ranks",
                     src->id, bad, w->n_ranks ? w->n_ranks - 1 : 0, first_bad, w->n_ranks);
        if (!rc && dup)
            rc = val_add(x->out, ETK_SEV_ERROR, "bad-group", -1, gpath, -1, 0, dup,
                     "group \"%s\" lists rank %" PRIu32 " more than once", src->id, first_dup);
        if (!rc && !g->n_members)
            rc = val_add(x->out, ETK_SEV_WARNING, "bad-group", -1, gpath, -1, 0, 1,
                     "group \"%s\" has no ranks", src->id);
        if (rc)
            return rc;
    }
    /* the all-ranks group: "" (or "0") unless the file defines it */
    int64_t all = grp_get(x, "");
    if (all < 0)
        return ETK_ENOMEM;
    if (!x->g[all].defined) {
        int zero = grp_find(x, "0");
        if (zero >= 0 && x->g[zero].defined) {
            all = zero;
        } else {
            x->g[all].defined = x->g[all].all = true;
            x->g[all].n_members = w->n_ranks;
        }
    }
    x->all = (uint32_t)all;
    return 0;
}

/* Group of a collective node: pg_name, with "", "0" and absent meaning all ranks unless the
 * file defines them. */
int64_t val_node_group(xstate *x, const etk_node *n)
{
    const char *pg = etk_node_str(n, "pg_name");
    if (!pg || !*pg)
        return x->all;
    int gi = grp_find(x, pg);
    if (gi >= 0 && (x->g[gi].defined || strcmp(pg, "0")))
        return gi;
    if (!strcmp(pg, "0"))
        return x->all;
    return grp_get(x, pg);
}
