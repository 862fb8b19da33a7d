/* vcoll.c — cross-rank matching checks: the k-th collective of each group agreeing in type and
 * size on every member (check_collectives), and send/recv pairs matched by (src, dst, tag) in
 * order with their sizes (check_p2p). Both contract what they match in the union-find that
 * vdeadlock.c walks. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"
#include "et/validate_priv.h"

typedef struct touch {
    uint32_t g, rank;
    uint64_t count;
} touch;

static int cmp_touch(const void *a, const void *b)
{
    const touch *x = a, *y = b;
    if (x->g != y->g)
        return x->g < y->g ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int val_check_collectives(xstate *x)
{
    etk_workload *w = x->w;
    int rc = ETK_ENOMEM;
    /* cnt/firstidx indexed by group; `touched` lists the groups a rank used */
    uint64_t *cnt = NULL;
    int64_t *firstidx = NULL;
    uint32_t *touched = NULL;
    size_t cap_cnt = 0, n_touched = 0;
    touch *tl = NULL;
    size_t n_tl = 0, cap_tl = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const etk_trace *t = w->ranks[r];
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            if (n->type != ETK_NODE_COLL)
                continue;
            int64_t gi = val_node_group(x, n);
            if (gi < 0)
                goto out;
            if (x->n_g > cap_cnt) {
                size_t cap = cap_cnt ? cap_cnt : 64;
                while (cap < x->n_g)
                    cap *= 2;
                uint64_t *c = realloc(cnt, cap * sizeof *c);
                if (c)
                    cnt = c;
                int64_t *fi = realloc(firstidx, cap * sizeof *fi);
                if (fi)
                    firstidx = fi;
                uint32_t *tc = realloc(touched, cap * sizeof *tc);
                if (tc)
                    touched = tc;
                if (!c || !fi || !tc)
                    goto out;
                memset(cnt + cap_cnt, 0, (cap - cap_cnt) * sizeof *cnt);
                cap_cnt = cap;
            }
            grp *g = &x->g[gi];
            if (!g->defined) {
                if (!g->n_undef++) {
                    g->undef_rank = r;
                    g->undef_idx = (int64_t)i;
                }
                continue;
            }
            if (!cnt[gi]) {
                touched[n_touched++] = (uint32_t)gi;
                firstidx[gi] = (int64_t)i;
            }
            uint64_t k = cnt[gi]++;
            int64_t type = ETK_COLL_ALL_REDUCE, size = 0;
            etk_node_i64(n, "comm_type", &type);
            etk_node_i64(n, "comm_size", &size);
            uint32_t gid = (uint32_t)(x->off[r] + i);
            if (k == g->n_seq) {
                if (g->n_seq == g->cap_seq) {
                    size_t cap = g->cap_seq ? 2 * g->cap_seq : 16;
                    coll_rec *s = realloc(g->seq, cap * sizeof *s);
                    if (!s)
                        goto out;
                    g->seq = s;
                    g->cap_seq = cap;
                }
                g->seq[g->n_seq++] = (coll_rec){gid, r, type, size};
            } else {
                coll_rec *ref = &g->seq[k];
                if (ref->type != type || ref->size != size) {
                    if (!g->n_mismatch++) {
                        g->mm_k = (int64_t)k;
                        g->mm_rank = r;
                        g->mm_idx = (int64_t)i;
                    }
                }
                if (x->uf)
                    val_uf_union(x->uf, ref->gid, gid);
            }
        }
        /* end of rank r: membership, and per-group counts for the length check */
        for (size_t k = 0; k < n_touched; k++) {
            uint32_t gi = touched[k];
            grp *g = &x->g[gi];
            if (!val_grp_has(g, r)) {
                const etk_node *n = &t->nodes[firstidx[gi]];
                if (val_add(x->out, ETK_SEV_ERROR, "not-in-group", r, t->path, firstidx[gi], n->id,
                        cnt[gi],
                        "rank %" PRIu32 " issues %" PRIu64 " collectives on group \"%s\" but is "
                        "not one of its %" PRIu32 " ranks; the first is '%.*s'",
                        r, cnt[gi], g->id, g->n_members, NAME_MAX_SHOWN, val_nname(n)))
                    goto out;
            }
            if (n_tl == cap_tl) {
                size_t cap = cap_tl ? 2 * cap_tl : 64;
                touch *nt = realloc(tl, cap * sizeof *nt);
                if (!nt)
                    goto out;
                tl = nt;
                cap_tl = cap;
            }
            tl[n_tl++] = (touch){gi, r, cnt[gi]};
            cnt[gi] = 0;
        }
        n_touched = 0;
    }
    /* undefined groups */
    for (size_t gi = 0; gi < x->n_g; gi++) {
        grp *g = &x->g[gi];
        if (!g->n_undef)
            continue;
        const etk_trace *t = w->ranks[g->undef_rank];
        if (val_add(x->out, ETK_SEV_ERROR, "undefined-group", g->undef_rank, t->path, g->undef_idx,
                t->nodes[g->undef_idx].id, g->n_undef,
                "%" PRIu64 " collectives name pg_name \"%s\", which %s; expected a key of the "
                "comm-group JSON",
                g->n_undef, g->id,
                w->groups ? "the comm-group file does not define" : "is undefined (no comm-group file)"))
            goto out;
    }
    /* sequence mismatches */
    for (size_t gi = 0; gi < x->n_g; gi++) {
        grp *g = &x->g[gi];
        if (!g->n_mismatch)
            continue;
        const coll_rec *ref = &g->seq[g->mm_k];
        const etk_trace *t = w->ranks[g->mm_rank];
        const etk_node *n = &t->nodes[g->mm_idx];
        int64_t type = ETK_COLL_ALL_REDUCE, size = 0;
        etk_node_i64(n, "comm_type", &type);
        etk_node_i64(n, "comm_size", &size);
        uint32_t ref_idx = (uint32_t)(ref->gid - x->off[ref->rank]);
        if (val_add(x->out, ETK_SEV_ERROR, "coll-mismatch", g->mm_rank, t->path, g->mm_idx, n->id,
                g->n_mismatch,
                "group \"%s\"%s: collective #%" PRId64 " on the group is %s of %" PRId64
                " bytes on rank %" PRIu32 " (node #%" PRIu32 " id %" PRIu64 ") but %s of %" PRId64
                " bytes on rank %" PRId64 "; every member must issue the same sequence of "
                "(comm_type, comm_size); %" PRIu64 " positions differ",
                g->id, val_all_note(g), g->mm_k, etk_coll_type_name((int)ref->type), ref->size,
                ref->rank,
                ref_idx, w->ranks[ref->rank]->nodes[ref_idx].id, etk_coll_type_name((int)type),
                size, g->mm_rank, g->n_mismatch))
            goto out;
    }
    /* sequence lengths: every member issues n_seq collectives on the group */
    if (n_tl)
        qsort(tl, n_tl, sizeof *tl, cmp_touch);
    for (size_t a = 0, b; a < n_tl; a = b) {
        b = a;
        while (b < n_tl && tl[b].g == tl[a].g)
            b++;
        grp *g = &x->g[tl[a].g];
        uint64_t want = g->n_seq, n_bad = 0, bad_count = 0;
        int64_t bad_rank = -1;
        /* members in the list (sorted by rank) vs the group's members */
        size_t p = a;
        uint32_t nm = g->all ? w->n_ranks : g->n_members;
        for (uint32_t k = 0; k < nm; k++) {
            uint32_t m = g->all ? k : g->members[k];
            if (m >= w->n_ranks)
                continue;
            while (p < b && tl[p].rank < m)
                p++;
            uint64_t c = p < b && tl[p].rank == m ? tl[p].count : 0;
            if (c != want && !n_bad++) {
                bad_rank = m;
                bad_count = c;
            }
        }
        if (n_bad && val_add(x->out, ETK_SEV_ERROR, "coll-count-mismatch", bad_rank,
                         w->ranks[bad_rank]->path, -1, 0, n_bad,
                         "group \"%s\"%s: rank %" PRId64 " issues %" PRIu64 " collectives on the "
                         "group, rank %" PRIu32 " issues %" PRIu64 "; %" PRIu64 " of its %" PRIu32
                         " ranks differ from %" PRIu64 " (the others wait forever)",
                         g->id, val_all_note(g), bad_rank, bad_count, g->seq[0].rank, want, n_bad, nm,
                         want))
            goto out;
    }
    rc = 0;
out:
    free(cnt);
    free(firstidx);
    free(touched);
    free(tl);
    return rc;
}

typedef struct p2p {
    int64_t src, dst, tag, size;
    uint32_t rank, idx;
} p2p;

static int cmp_p2p(const void *a, const void *b)
{
    const p2p *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

typedef struct p2p_agg {
    uint64_t n;
    p2p first; /* a copy: the record may live on the stack */
    sbuf list;
} p2p_agg;

static void agg_hit(p2p_agg *a, const p2p *m, uint32_t nlist, const etk_workload *w)
{
    if (!a->n)
        a->first = *m;
    if (a->n < nlist)
        val_sb_printf(&a->list, "%srank %" PRIu32 " id %" PRIu64 " (%" PRId64 "->%" PRId64
                  " tag %" PRId64 ", %" PRId64 " bytes)",
                  a->n ? "; " : "", m->rank, w->ranks[m->rank]->nodes[m->idx].id, m->src, m->dst,
                  m->tag, m->size);
    a->n++;
}

static int agg_emit(xstate *x, p2p_agg *a, const char *code, const char *what)
{
    int rc = 0;
    if (a->n) {
        const etk_trace *t = x->w->ranks[a->first.rank];
        rc = val_add(x->out, ETK_SEV_ERROR, code, a->first.rank, t->path, a->first.idx,
                 t->nodes[a->first.idx].id, a->n, "%" PRIu64 " %s: %s%s", a->n, what,
                 val_sb_str(&a->list), a->n > x->nlist ? "; ..." : "");
    }
    free(a->list.p);
    return rc;
}

int val_check_p2p(xstate *x)
{
    etk_workload *w = x->w;
    p2p *s = NULL, *rv = NULL;
    size_t ns = 0, nr = 0, cs = 0, cr = 0;
    int rc = ETK_ENOMEM;
    p2p_agg bad = {0}, us = {0}, ur = {0}, sz = {0};
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const etk_trace *t = w->ranks[r];
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            if (n->type != ETK_NODE_SEND && n->type != ETK_NODE_RECV)
                continue;
            bool send = n->type == ETK_NODE_SEND;
            p2p m = {r, r, 0, 0, r, (uint32_t)i};
            if (!etk_node_i64(n, send ? "comm_dst" : "comm_src", send ? &m.dst : &m.src) ||
                !etk_node_i64(n, "comm_tag", &m.tag))
                continue; /* reported as missing-attr */
            etk_node_i64(n, "comm_size", &m.size);
            int64_t peer = send ? m.dst : m.src;
            if (peer < 0 || peer >= (int64_t)w->n_ranks) {
                agg_hit(&bad, &m, x->nlist, w);
                continue;
            }
            p2p **arr = send ? &s : &rv;
            size_t *nn = send ? &ns : &nr, *cc = send ? &cs : &cr;
            if (*nn == *cc) {
                size_t cap = *cc ? 2 * *cc : 64;
                p2p *a = realloc(*arr, cap * sizeof *a);
                if (!a)
                    goto out;
                *arr = a;
                *cc = cap;
            }
            (*arr)[(*nn)++] = m;
        }
    }
    /* k-th send of (src, dst, tag) in file order matches the k-th recv of the same key */
    if (ns)
        qsort(s, ns, sizeof *s, cmp_p2p);
    if (nr)
        qsort(rv, nr, sizeof *rv, cmp_p2p);
    size_t a = 0, b = 0;
    while (a < ns || b < nr) {
        int c = a == ns ? 1 : b == nr ? -1 : 0;
        if (!c) {
            p2p ka = s[a], kb = rv[b];
            ka.rank = kb.rank = 0;
            ka.idx = kb.idx = 0;
            ka.size = kb.size = 0;
            c = cmp_p2p(&ka, &kb);
        }
        if (c < 0) {
            agg_hit(&us, &s[a++], x->nlist, w);
        } else if (c > 0) {
            agg_hit(&ur, &rv[b++], x->nlist, w);
        } else {
            if (s[a].size != rv[b].size) {
                agg_hit(&sz, &s[a], x->nlist, w);
            }
            if (x->uf)
                val_uf_union(x->uf, (uint32_t)(x->off[s[a].rank] + s[a].idx),
                         (uint32_t)(x->off[rv[b].rank] + rv[b].idx));
            a++;
            b++;
        }
    }
    rc = 0;
out:
    if (!rc)
        rc = agg_emit(x, &bad, "bad-peer", "sends/recvs name a peer rank outside the workload");
    else
        free(bad.list.p);
    if (!rc)
        rc = agg_emit(x, &us, "unmatched-send",
                      "sends have no recv with the same (src, dst, tag) on the peer");
    else
        free(us.list.p);
    if (!rc)
        rc = agg_emit(x, &ur, "unmatched-recv",
                      "recvs have no send with the same (src, dst, tag) on the peer");
    else
        free(ur.list.p);
    if (!rc)
        rc = agg_emit(x, &sz, "p2p-size-mismatch",
                      "matched send/recv pairs disagree on comm_size (send listed)");
    else
        free(sz.list.p);
    free(s);
    free(rv);
    return rc;
}
