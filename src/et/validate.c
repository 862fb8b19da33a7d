/* validate.c — checks of Chakra traces and workloads (etkit/validate.h).
 *
 * Sits after the reader in the data flow: `etkit validate`, the generator's tests and the
 * simulator call it on etk_trace / etk_workload before trusting them. Per file it looks at ids,
 * dependencies, cycles, attribute kinds and required attributes; across the ranks of a workload
 * at communicator groups, collective sequences, send/recv matching and deadlock (Kahn's
 * algorithm over the global graph in which the k-th collective of a group and each matched
 * send/recv pair are contracted to one node with union-find). Every pass is linear in the
 * nodes and dependencies (plus a sort of the point-to-point messages), so validation stays a
 * small part of reading a trace. Findings are aggregated per file and problem, so a broken
 * 10-million-node trace gives a screenful, not a flood. The catalogue is docs/validate.md. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"

#define LIST_DEFAULT 5   /* ids/locations named in an aggregated message */
#define WITNESS_MAX 12   /* steps of a cycle written out */
#define NAME_MAX_SHOWN 60 /* characters of a node name in a message (kernel names are long) */

/* ---------- findings ---------- */
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
static int add(etk_findings *f, int sev, const char *code, int64_t rank, const char *file,
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

/* ---------- a growable string (for lists in messages) ---------- */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf *b, const char *fmt, ...)
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

static const char *sb_str(sbuf *b)
{
    return b->p && !b->oom ? b->p : "";
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct u64vec {
    uint64_t *v;
    size_t n, cap;
} u64vec;

static int u64_push(u64vec *a, uint64_t x)
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
static size_t u64_unique(u64vec *a)
{
    if (!a->n)
        return 0;
    qsort(a->v, a->n, sizeof *a->v, cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->v[i] != a->v[k - 1])
            a->v[k++] = a->v[i];
    a->n = k;
    return k;
}

static const char *tpath(const etk_trace *t)
{
    return t->path ? t->path : "";
}

static const char *nname(const etk_node *n)
{
    return n->name ? n->name : "";
}

/* ---------- per-file checks ---------- */

/* Missing dependencies of one kind: one finding with the count of distinct absent ids, the
 * number of references and the first few ids. */
static int check_missing(etk_trace *t, const int32_t *res, int64_t rank, bool ctrl,
                         uint32_t nlist, etk_findings *out)
{
    u64vec ids = {0};
    uint64_t refs = 0;
    int64_t first = -1;
    size_t k = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        size_t base = k + (ctrl ? 0 : n->n_ctrl_deps);
        const uint64_t *d = ctrl ? n->ctrl_deps : n->data_deps;
        uint32_t nd = ctrl ? n->n_ctrl_deps : n->n_data_deps;
        k += (size_t)n->n_ctrl_deps + n->n_data_deps;
        for (uint32_t j = 0; j < nd; j++) {
            if (res[base + j] != ETK_DG_ABSENT)
                continue;
            if (first < 0)
                first = (int64_t)i;
            refs++;
            if (u64_push(&ids, d[j])) {
                free(ids.v);
                return ETK_ENOMEM;
            }
        }
    }
    int rc = 0;
    if (refs) {
        size_t distinct = u64_unique(&ids);
        sbuf b = {0};
        for (size_t k = 0; k < distinct && k < nlist; k++)
            sb_printf(&b, "%s%" PRIu64, k ? ", " : "", ids.v[k]);
        if (distinct > nlist)
            sb_printf(&b, ", ...");
        const etk_node *fn = &t->nodes[first];
        rc = add(out, ETK_SEV_ERROR, ctrl ? "missing-ctrl-dep" : "missing-data-dep", rank,
                 tpath(t), first, fn->id, distinct,
                 "%zu %s-dependency ids are not in the file (%" PRIu64
                 " references; ids %s); first referenced by node #%" PRId64 " id %" PRIu64
                 " '%.*s'. ASTRA-sim rejects such a file; etkit sim can treat them as satisfied",
                 distinct, ctrl ? "control" : "data", refs, sb_str(&b), first, fn->id,
                 NAME_MAX_SHOWN, nname(fn));
        free(b.p);
    }
    free(ids.v);
    return rc;
}

static int check_ids(etk_trace *t, int64_t rank, uint32_t nlist, etk_findings *out)
{
    if (!t->n_duplicate_ids) /* counted by etk_trace_index */
        return 0;
    uint64_t dups = 0;
    int64_t first = -1;
    sbuf b = {0};
    for (size_t i = 0; i < t->n_nodes; i++) {
        ptrdiff_t j = etk_trace_find_index(t, t->nodes[i].id);
        if (j >= 0 && (size_t)j != i) {
            if (first < 0)
                first = (int64_t)i;
            if (dups < nlist)
                sb_printf(&b, "%s%" PRIu64 " (nodes #%td and #%zu)", dups ? ", " : "",
                          t->nodes[i].id, j, i);
            dups++;
        }
    }
    int rc = 0;
    if (dups)
        rc = add(out, ETK_SEV_ERROR, "duplicate-id", rank, tpath(t), first, t->nodes[first].id,
                 dups,
                 "%" PRIu64 " nodes reuse an id already used in the file: %s%s; expected unique "
                 "ids (dependencies resolve to the first node with the id)",
                 dups, sb_str(&b), dups > nlist ? ", ..." : "");
    free(b.p);
    return rc;
}

static int check_cycles(etk_trace *t, const int32_t *res, int64_t rank, uint32_t nlist,
                        etk_findings *out, bool *cyclic, etk_error *err)
{
    etk_dg g;
    int rc = etk_dg_build(t, res, &g, err);
    if (rc)
        return rc;
    *cyclic = g.n_self > 0 || g.n_order < g.n;
    if (g.n_self) {
        uint64_t nodes = 0;
        int64_t first = -1;
        sbuf b = {0};
        size_t k = 0;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            bool self = false;
            for (uint32_t j = 0; j < n->n_ctrl_deps + n->n_data_deps; j++)
                self |= res[k++] == ETK_DG_SELF;
            if (!self)
                continue;
            if (first < 0)
                first = (int64_t)i;
            if (nodes < nlist)
                sb_printf(&b, "%s%" PRIu64, nodes ? ", " : "", n->id);
            nodes++;
        }
        rc = add(out, ETK_SEV_ERROR, "self-dep", rank, tpath(t), first, t->nodes[first].id,
                 nodes,
                 "%" PRIu64 " nodes depend on their own id (ids %s%s); such a node can never "
                 "become ready",
                 nodes, sb_str(&b), nodes > nlist ? ", ..." : "");
        free(b.p);
        if (rc)
            goto done;
    }
    if (g.n_order < g.n) {
        uint32_t *cyc;
        uint8_t *via;
        size_t len;
        rc = etk_dg_cycle(t, &g, &cyc, &via, &len, err);
        if (rc)
            goto done;
        sbuf b = {0};
        for (size_t k = 0; k < len && k < WITNESS_MAX; k++) {
            const etk_node *n = &t->nodes[cyc[k]];
            sb_printf(&b, "#%" PRIu32 " id %" PRIu64 " '%.*s' -%s-> ", cyc[k], n->id,
                      NAME_MAX_SHOWN, nname(n), via[k] ? "ctrl" : "data");
        }
        if (len > WITNESS_MAX)
            sb_printf(&b, "... -> ");
        if (len)
            sb_printf(&b, "#%" PRIu32 " id %" PRIu64, cyc[0], t->nodes[cyc[0]].id);
        uint64_t unordered = g.n - g.n_order;
        rc = add(out, ETK_SEV_ERROR, "cycle", rank, tpath(t), len ? (int64_t)cyc[0] : -1,
                 len ? t->nodes[cyc[0]].id : 0, unordered,
                 "dependency cycle of %zu nodes (each depends on the next through the data or "
                 "ctrl dependency shown): %s; %" PRIu64
                 " nodes are on or after a cycle and can never run",
                 len, len ? sb_str(&b) : "(no witness)", unordered);
        free(b.p);
        free(cyc);
        free(via);
    }
done:
    etk_dg_free(&g);
    return rc;
}

/* Would a consumer reading the conventional kind `want` get the value the writer meant?
 * It reads 0 / false / "" / [] from any other kind. */
static bool reads_same(const etk_attr *a, int want)
{
    if (a->kind == ETK_ATTR_NONE)
        return true; /* nothing was written: the default is all anyone can read */
    if (etk_attr_kind_is_list(want))
        return etk_attr_kind_is_list(a->kind) && a->n == 0;
    if (want == ETK_ATTR_STRING) {
        int64_t v;
        /* pg_name 0 written as a number: "" and "0" both mean all ranks */
        return etk_attr_as_i64(a, &v) && v == 0;
    }
    /* numeric or bool convention */
    if (a->kind == ETK_ATTR_DOUBLE)
        return a->v.d == 0;
    if (a->kind == ETK_ATTR_FLOAT)
        return a->v.f == 0;
    int64_t v;
    uint64_t u;
    if (etk_attr_as_i64(a, &v))
        return v == 0;
    if (etk_attr_as_u64(a, &u))
        return u == 0;
    return false; /* string, bytes or list where a number is read */
}

typedef struct kind_agg {
    const char *name;
    int kind, want;
    uint64_t n_same, n_changed;
    int64_t first_same, first_changed;
} kind_agg;

#define MAX_KIND_AGG 64

static int check_attr_kinds(etk_trace *t, int64_t rank, etk_findings *out)
{
    kind_agg agg[MAX_KIND_AGG];
    size_t n_agg = 0;
    uint64_t overflow = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        for (uint32_t k = 0; k < n->n_attr; k++) {
            const etk_attr *a = &n->attr[k];
            int want = etk_attr_expected_kind(a->name);
            if (want == ETK_ATTR_NONE || a->kind == want)
                continue;
            size_t j = 0;
            while (j < n_agg && !(agg[j].kind == a->kind && !strcmp(agg[j].name, a->name)))
                j++;
            if (j == n_agg) {
                if (n_agg == MAX_KIND_AGG) {
                    overflow++;
                    continue;
                }
                agg[n_agg++] = (kind_agg){a->name, a->kind, want, 0, 0, -1, -1};
            }
            if (reads_same(a, want)) {
                if (!agg[j].n_same++)
                    agg[j].first_same = (int64_t)i;
            } else if (!agg[j].n_changed++) {
                agg[j].first_changed = (int64_t)i;
            }
        }
    }
    for (size_t j = 0; j < n_agg; j++) {
        kind_agg *g = &agg[j];
        const char *got = g->kind == ETK_ATTR_NONE ? "an empty oneof (no value)"
                                                    : etk_attr_kind_name(g->kind);
        int rc;
        if (g->n_changed) {
            const etk_node *n = &t->nodes[g->first_changed];
            rc = add(out, ETK_SEV_ERROR, "attr-kind", rank, tpath(t), g->first_changed, n->id,
                     g->n_changed,
                     "attribute '%s' written as %s on %" PRIu64 " nodes where consumers read "
                     "%s: they get 0/false/empty instead of the value written",
                     g->name, got, g->n_changed, etk_attr_kind_name(g->want));
            if (rc)
                return rc;
        }
        if (g->n_same) {
            const etk_node *n = &t->nodes[g->first_same];
            rc = add(out, ETK_SEV_WARNING, "attr-kind", rank, tpath(t), g->first_same, n->id,
                     g->n_same,
                     "attribute '%s' written as %s on %" PRIu64 " nodes where consumers read "
                     "%s; the value read (0/false/empty) equals the one written",
                     g->name, got, g->n_same, etk_attr_kind_name(g->want));
            if (rc)
                return rc;
        }
    }
    if (overflow)
        return add(out, ETK_SEV_WARNING, "attr-kind", rank, tpath(t), -1, 0, overflow,
                   "%" PRIu64 " more attributes with unconventional kinds not itemised", overflow);
    return 0;
}

/* attribute set with a value */
static bool has_value(const etk_node *n, const char *name)
{
    const etk_attr *a = etk_node_attr(n, name);
    return a && a->kind != ETK_ATTR_NONE;
}

/* Required attributes, zero/negative sizes and unknown node types, aggregated per problem.
 * The first P_N_REQUIRED entries are (node type, attribute it needs). */
enum { P_N_REQUIRED = 8, P_COMP_COST = 8, P_ZERO_SIZE, P_NEG_SIZE, P_BAD_TYPE, P_BAD_COMM_TYPE, P_NEG_OPS, P_COUNT };

static const struct {
    const char *code;
    int sev;
    const char *what;
    int type;          /* required-attribute entries: the node type */
    const char *attr;  /* and the attribute */
} problems[P_COUNT] = {
    {"missing-attr", ETK_SEV_ERROR, "COMM_COLL_NODE without comm_type (other tools read ALL_REDUCE)",
     ETK_NODE_COLL, "comm_type"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_COLL_NODE without comm_size", ETK_NODE_COLL, "comm_size"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_SEND_NODE without comm_dst", ETK_NODE_SEND, "comm_dst"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_SEND_NODE without comm_size", ETK_NODE_SEND, "comm_size"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_SEND_NODE without comm_tag", ETK_NODE_SEND, "comm_tag"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_RECV_NODE without comm_src", ETK_NODE_RECV, "comm_src"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_RECV_NODE without comm_size", ETK_NODE_RECV, "comm_size"},
    {"missing-attr", ETK_SEV_ERROR, "COMM_RECV_NODE without comm_tag", ETK_NODE_RECV, "comm_tag"},
    {"missing-cost", ETK_SEV_WARNING,
     "COMP_NODE with neither num_ops nor duration_micros (it runs in zero time)", 0, NULL},
    {"zero-size-comm", ETK_SEV_WARNING, "communication node with comm_size 0 (not a BARRIER)", 0,
     NULL},
    {"negative-size", ETK_SEV_ERROR, "communication node with a negative comm_size", 0, NULL},
    {"unknown-node-type", ETK_SEV_WARNING,
     "node type outside METADATA_NODE..COMM_COLL_NODE (1..7); consumers skip or reject it", 0,
     NULL},
    {"bad-comm-type", ETK_SEV_ERROR,
     "COMM_COLL_NODE with comm_type outside ALL_REDUCE..BARRIER (0..9); the simulator rejects it", 0, NULL},
    {"negative-ops", ETK_SEV_ERROR, "COMP_NODE with a negative num_ops", 0, NULL},
};

static int check_node_attrs(etk_trace *t, int64_t rank, etk_findings *out)
{
    uint64_t cnt[P_COUNT] = {0};
    int64_t first[P_COUNT];
    for (int p = 0; p < P_COUNT; p++)
        first[p] = -1;
#define HIT(p)                          \
    do {                                \
        if (!cnt[p]++)                  \
            first[p] = (int64_t)i;      \
    } while (0)
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        bool comm = n->type == ETK_NODE_COLL || n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV;
        if (comm) {
            for (int p = 0; p < P_N_REQUIRED; p++)
                if (problems[p].type == n->type && !has_value(n, problems[p].attr))
                    HIT(p);
        } else if (n->type == ETK_NODE_COMP) {
            int64_t ops;
            if (!has_value(n, "num_ops") && n->duration_micros == 0)
                HIT(P_COMP_COST);
            else if (etk_node_i64(n, "num_ops", &ops) && ops < 0)
                HIT(P_NEG_OPS);
        } else if (n->type < ETK_NODE_METADATA || n->type > ETK_NODE_COLL) {
            HIT(P_BAD_TYPE);
        }
        int64_t size, ctype;
        if (n->type == ETK_NODE_COLL && etk_node_i64(n, "comm_type", &ctype) &&
            (ctype < 0 || ctype >= ETK_COLL_TYPE_COUNT))
            HIT(P_BAD_COMM_TYPE);
        if (comm && etk_node_i64(n, "comm_size", &size)) {
            int64_t ct = -1;
            if (size < 0)
                HIT(P_NEG_SIZE);
            else if (size == 0 && !(n->type == ETK_NODE_COLL && etk_node_i64(n, "comm_type", &ct) &&
                                     ct == ETK_COLL_BARRIER))
                HIT(P_ZERO_SIZE);
        }
    }
#undef HIT
    for (int p = 0; p < P_COUNT; p++) {
        if (!cnt[p])
            continue;
        const etk_node *n = &t->nodes[first[p]];
        int rc = add(out, problems[p].sev, problems[p].code, rank, tpath(t), first[p], n->id,
                     cnt[p], "%s: %" PRIu64 " nodes, the first #%" PRId64 " id %" PRIu64 " '%.*s'",
                     problems[p].what, cnt[p], first[p], n->id, NAME_MAX_SHOWN, nname(n));
        if (rc)
            return rc;
    }
    return 0;
}

/* res_keep: when not NULL, receives the resolved dependency array (for the deadlock pass) */
static int validate_trace(etk_trace *t, int64_t rank, const etk_validate_opts *opts,
                          etk_findings *out, bool *cyclic, int32_t **res_keep, etk_error *err)
{
    uint32_t nlist = opts && opts->max_ids_listed ? opts->max_ids_listed : LIST_DEFAULT;
    int rc;
    *cyclic = false;
    if (!t->index_slots && (rc = etk_trace_index(t, err)))
        return rc;
    size_t n_refs;
    int32_t *res = etk_dg_resolve(t, &n_refs);
    if (!res)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory validating", tpath(t));
    if ((rc = check_ids(t, rank, nlist, out)) ||
        (rc = check_missing(t, res, rank, false, nlist, out)) ||
        (rc = check_missing(t, res, rank, true, nlist, out)))
        goto oom;
    if ((rc = check_cycles(t, res, rank, nlist, out, cyclic, err))) {
        free(res);
        return rc == ETK_ENOMEM && err && err->code != ETK_ENOMEM
                   ? etk_err(err, rc, "%s: out of memory validating", tpath(t))
                   : rc;
    }
    if ((rc = check_attr_kinds(t, rank, out)) || (rc = check_node_attrs(t, rank, out)))
        goto oom;
    if (res_keep)
        *res_keep = res;
    else
        free(res);
    return 0;
oom:
    free(res);
    return etk_err(err, rc, "%s: out of memory validating", tpath(t));
}

int etk_validate_trace(etk_trace *t, int64_t rank, const etk_validate_opts *opts,
                       etk_findings *out, etk_error *err)
{
    bool cyclic;
    return validate_trace(t, rank, opts, out, &cyclic, NULL, err);
}

/* ---------- cross-rank checks ---------- */

/* FNV-1a */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

typedef struct coll_rec {
    uint32_t gid;      /* global node number (first member that issued it) */
    uint32_t rank;
    int64_t type, size;
} coll_rec;

typedef struct grp {
    const char *id;
    uint32_t *members; /* sorted; NULL for the implicit all-ranks group */
    uint32_t n_members;
    bool defined, all;
    coll_rec *seq;     /* the k-th collective on the group, as issued by the first rank */
    size_t n_seq, cap_seq;
    uint64_t n_undef;  /* nodes naming this undefined group */
    int64_t undef_rank, undef_idx;
    uint64_t n_mismatch;
    int64_t mm_k, mm_rank, mm_idx; /* first mismatch: position, rank, node index */
} grp;

typedef struct xstate {
    etk_workload *w;
    etk_findings *out;
    uint32_t nlist;
    grp *g;
    size_t n_g, cap_g;
    uint32_t *slots; /* hash: group index + 1 */
    size_t mask;
    uint32_t all;    /* index of the all-ranks group */
    size_t *off;     /* n_ranks + 1: global node numbers of rank r start at off[r] */
    uint32_t *uf;    /* union-find parent over global node numbers */
    int32_t **res;   /* per rank: resolved dependencies (etk_dg_resolve) */
} xstate;

static int grp_slot_find(const xstate *x, const char *id, size_t *slot)
{
    size_t h = (size_t)hash_str(id) & x->mask;
    while (x->slots[h]) {
        if (!strcmp(x->g[x->slots[h] - 1].id, id)) {
            *slot = h;
            return (int)(x->slots[h] - 1);
        }
        h = (h + 1) & x->mask;
    }
    *slot = h;
    return -1;
}

static int grp_rehash(xstate *x, size_t cap)
{
    uint32_t *s = calloc(cap, sizeof *s);
    if (!s)
        return ETK_ENOMEM;
    free(x->slots);
    x->slots = s;
    x->mask = cap - 1;
    for (size_t i = 0; i < x->n_g; i++) {
        size_t h;
        grp_slot_find(x, x->g[i].id, &h);
        x->slots[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* Index of group `id`, adding it (undefined) if absent. -1 on out-of-memory. */
static int64_t grp_get(xstate *x, const char *id)
{
    size_t h;
    int i = grp_slot_find(x, id, &h);
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
    if (2 * x->n_g > x->mask + 1) {
        if (grp_rehash(x, 2 * (x->mask + 1)))
            return -1;
    } else {
        x->slots[h] = (uint32_t)x->n_g;
    }
    return (int64_t)x->n_g - 1;
}

/* after a group's name in messages: the implicit group has the empty name */
static const char *all_note(const grp *g)
{
    return g->all ? " (all ranks: no pg_name)" : "";
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static bool grp_has(const grp *g, uint32_t r)
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

static uint32_t uf_find(uint32_t *p, uint32_t a)
{
    while (p[a] != a) {
        p[a] = p[p[a]];
        a = p[a];
    }
    return a;
}

static void uf_union(uint32_t *p, uint32_t a, uint32_t b)
{
    a = uf_find(p, a);
    b = uf_find(p, b);
    if (a != b) { /* the smaller number becomes the root: deterministic */
        if (a < b)
            p[b] = a;
        else
            p[a] = b;
    }
}

/* Build the group table from the comm-group file, check ranks are in range and distinct. */
static int load_groups(xstate *x)
{
    etk_workload *w = x->w;
    size_t n_def = w->groups ? w->groups->n_groups : 0;
    size_t cap = 64;
    while (cap < 4 * (n_def + 2))
        cap *= 2;
    if (grp_rehash(x, cap))
        return ETK_ENOMEM;
    const char *gpath = w->groups_path ? w->groups_path : "";
    for (size_t i = 0; i < n_def; i++) {
        const etk_group *src = &w->groups->groups[i];
        int64_t gi = grp_get(x, src->id);
        if (gi < 0)
            return ETK_ENOMEM;
        grp *g = &x->g[gi];
        if (g->defined) {
            if (add(x->out, ETK_SEV_ERROR, "bad-group", -1, gpath, -1, 0, 1,
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
        qsort(g->members, g->n_members, sizeof *g->members, cmp_u32);
        uint32_t bad = 0, dup = 0, first_bad = 0, first_dup = 0;
        for (uint32_t k = 0; k < g->n_members; k++) {
            if (g->members[k] >= w->n_ranks && !bad++)
                first_bad = g->members[k];
            if (k && g->members[k] == g->members[k - 1] && !dup++)
                first_dup = g->members[k];
        }
        int rc = 0;
        if (bad)
            rc = add(x->out, ETK_SEV_ERROR, "bad-group", -1, gpath, -1, 0, bad,
                     "group \"%s\" names %" PRIu32 " ranks outside 0..%" PRIu32
                     " (the first %" PRIu32 "); the workload has %" PRIu32 " ranks",
                     src->id, bad, w->n_ranks ? w->n_ranks - 1 : 0, first_bad, w->n_ranks);
        if (!rc && dup)
            rc = add(x->out, ETK_SEV_ERROR, "bad-group", -1, gpath, -1, 0, dup,
                     "group \"%s\" lists rank %" PRIu32 " more than once", src->id, first_dup);
        if (!rc && !g->n_members)
            rc = add(x->out, ETK_SEV_WARNING, "bad-group", -1, gpath, -1, 0, 1,
                     "group \"%s\" has no ranks", src->id);
        if (rc)
            return rc;
    }
    /* the all-ranks group: "" (or "0") unless the file defines it */
    int64_t all = grp_get(x, "");
    if (all < 0)
        return ETK_ENOMEM;
    if (!x->g[all].defined) {
        size_t h;
        int zero = grp_slot_find(x, "0", &h);
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
static int64_t node_group(xstate *x, const etk_node *n)
{
    const char *pg = etk_node_str(n, "pg_name");
    if (!pg || !*pg)
        return x->all;
    size_t h;
    int gi = grp_slot_find(x, pg, &h);
    if (gi >= 0 && (x->g[gi].defined || strcmp(pg, "0")))
        return gi;
    if (!strcmp(pg, "0"))
        return x->all;
    return grp_get(x, pg);
}

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

static int check_collectives(xstate *x)
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
            int64_t gi = node_group(x, n);
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
                    uf_union(x->uf, ref->gid, gid);
            }
        }
        /* end of rank r: membership, and per-group counts for the length check */
        for (size_t k = 0; k < n_touched; k++) {
            uint32_t gi = touched[k];
            grp *g = &x->g[gi];
            if (!grp_has(g, r)) {
                const etk_node *n = &t->nodes[firstidx[gi]];
                if (add(x->out, ETK_SEV_ERROR, "not-in-group", r, t->path, firstidx[gi], n->id,
                        cnt[gi],
                        "rank %" PRIu32 " issues %" PRIu64 " collectives on group \"%s\" but is "
                        "not one of its %" PRIu32 " ranks; the first is '%.*s'",
                        r, cnt[gi], g->id, g->n_members, NAME_MAX_SHOWN, nname(n)))
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
        if (add(x->out, ETK_SEV_ERROR, "undefined-group", g->undef_rank, t->path, g->undef_idx,
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
        if (add(x->out, ETK_SEV_ERROR, "coll-mismatch", g->mm_rank, t->path, g->mm_idx, n->id,
                g->n_mismatch,
                "group \"%s\"%s: collective #%" PRId64 " on the group is %s of %" PRId64
                " bytes on rank %" PRIu32 " (node #%" PRIu32 " id %" PRIu64 ") but %s of %" PRId64
                " bytes on rank %" PRId64 "; every member must issue the same sequence of "
                "(comm_type, comm_size); %" PRIu64 " positions differ",
                g->id, all_note(g), g->mm_k, etk_coll_type_name((int)ref->type), ref->size,
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
        if (n_bad && add(x->out, ETK_SEV_ERROR, "coll-count-mismatch", bad_rank,
                         w->ranks[bad_rank]->path, -1, 0, n_bad,
                         "group \"%s\"%s: rank %" PRId64 " issues %" PRIu64 " collectives on the "
                         "group, rank %" PRIu32 " issues %" PRIu64 "; %" PRIu64 " of its %" PRIu32
                         " ranks differ from %" PRIu64 " (the others wait forever)",
                         g->id, all_note(g), bad_rank, bad_count, g->seq[0].rank, want, n_bad, nm,
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
        sb_printf(&a->list, "%srank %" PRIu32 " id %" PRIu64 " (%" PRId64 "->%" PRId64
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
        rc = add(x->out, ETK_SEV_ERROR, code, a->first.rank, t->path, a->first.idx,
                 t->nodes[a->first.idx].id, a->n, "%" PRIu64 " %s: %s%s", a->n, what,
                 sb_str(&a->list), a->n > x->nlist ? "; ..." : "");
    }
    free(a->list.p);
    return rc;
}

static int check_p2p(xstate *x)
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
                uf_union(x->uf, (uint32_t)(x->off[s[a].rank] + s[a].idx),
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

static uint32_t rank_of(const xstate *x, uint32_t gid)
{
    size_t lo = 0, hi = x->w->n_ranks; /* last r with off[r] <= gid */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (x->off[mid] <= gid)
            lo = mid;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

/* Kahn's algorithm over the contracted global graph; a cycle witness if it stalls. */
static int check_deadlock(xstate *x, etk_error *err)
{
    etk_workload *w = x->w;
    size_t N = x->off[w->n_ranks];
    uint32_t *rep = x->uf; /* compressed in place: rep[v] = root */
    for (size_t v = 0; v < N; v++)
        rep[v] = uf_find(rep, (uint32_t)v);
    uint32_t *indeg = calloc(N ? N : 1, sizeof *indeg);
    size_t *start = calloc(N + 1, sizeof *start);
    uint32_t *succ = NULL, *queue = NULL, *next = NULL, *head = NULL, *pos = NULL;
    uint32_t *walk_from = NULL, *walk_to = NULL;
    int rc = ETK_ENOMEM;
    if (!indeg || !start)
        goto out;
    size_t E = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const etk_trace *t = w->ranks[r];
        const int32_t *res = x->res[r];
        const uint32_t *rp = rep + x->off[r];
        size_t k = 0;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            uint32_t v = rp[i], m = n->n_ctrl_deps + n->n_data_deps;
            for (uint32_t q = 0; q < m; q++, k++) {
                if (res[k] < 0)
                    continue;
                start[rp[res[k]] + 1]++;
                indeg[v]++;
                E++;
            }
        }
    }
    for (size_t v = 0; v < N; v++)
        start[v + 1] += start[v];
    succ = malloc((E ? E : 1) * sizeof *succ);
    queue = malloc((N ? N : 1) * sizeof *queue);
    if (!succ || !queue)
        goto out;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const etk_trace *t = w->ranks[r];
        const int32_t *res = x->res[r];
        const uint32_t *rp = rep + x->off[r];
        size_t k = 0;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            uint32_t v = rp[i], m = n->n_ctrl_deps + n->n_data_deps;
            for (uint32_t q = 0; q < m; q++, k++)
                if (res[k] >= 0)
                    succ[start[rp[res[k]]]++] = v;
        }
    }
    /* start[u] now points at the end of u's list: shift back */
    for (size_t v = N; v > 0; v--)
        start[v] = start[v - 1];
    start[0] = 0;
    size_t qh = 0, qt = 0, n_rep = 0;
    for (size_t v = 0; v < N; v++)
        if (rep[v] == v) {
            n_rep++;
            if (!indeg[v])
                queue[qt++] = (uint32_t)v;
        }
    while (qh < qt) {
        uint32_t u = queue[qh++];
        for (size_t e = start[u]; e < start[u + 1]; e++)
            if (--indeg[succ[e]] == 0)
                queue[qt++] = succ[e];
    }
    rc = 0;
    if (qt == n_rep)
        goto out;
    /* Witness: walk dependencies backwards among the stalled contracted nodes. next/head list
     * the members of each contracted node. */
    rc = ETK_ENOMEM;
    next = malloc(N * sizeof *next);
    head = malloc(N * sizeof *head);
    pos = calloc(N, sizeof *pos);
    walk_from = malloc(N * sizeof *walk_from);
    walk_to = malloc(N * sizeof *walk_to);
    if (!next || !head || !pos || !walk_from || !walk_to)
        goto out;
    for (size_t v = 0; v < N; v++)
        head[v] = UINT32_MAX;
    for (size_t v = N; v-- > 0;) {
        next[v] = head[rep[v]];
        head[rep[v]] = (uint32_t)v;
    }
    uint32_t cur = 0;
    while (rep[cur] != cur || indeg[cur] == 0)
        cur++;
    size_t steps = 0;
    while (!pos[cur]) {
        pos[cur] = (uint32_t)++steps;
        bool found = false;
        for (uint32_t m = head[cur]; m != UINT32_MAX && !found; m = next[m]) {
            uint32_t r = rank_of(x, m);
            const etk_trace *t = w->ranks[r];
            const etk_node *n = &t->nodes[m - x->off[r]];
            for (int pass = 0; pass < 2 && !found; pass++) {
                const uint64_t *d = pass ? n->data_deps : n->ctrl_deps;
                uint32_t nd = pass ? n->n_data_deps : n->n_ctrl_deps;
                for (uint32_t k = 0; k < nd; k++) {
                    ptrdiff_t j = d[k] == n->id ? -1 : etk_trace_find_index(t, d[k]);
                    if (j < 0)
                        continue;
                    uint32_t y = rep[x->off[r] + (size_t)j];
                    if (indeg[y] > 0) {
                        walk_from[steps - 1] = m;
                        walk_to[steps - 1] = (uint32_t)(x->off[r] + (size_t)j);
                        cur = y;
                        found = true;
                        break;
                    }
                }
            }
        }
        if (!found) { /* cannot happen for a stalled node; report without a witness */
            steps = 0;
            break;
        }
    }
    size_t s0 = steps ? pos[cur] - 1 : 0, len = steps - s0;
    sbuf b = {0}, rk = {0};
    /* ranks involved, in order of first appearance */
    uint32_t listed[WITNESS_MAX];
    size_t n_listed = 0;
    /* start the written cycle at its lowest (rank, node): global numbers order exactly so */
    size_t best = s0;
    for (size_t k = s0; k < steps; k++)
        if (walk_from[k] < walk_from[best])
            best = k;
    for (size_t q = 0; q < len; q++) {
        size_t k = s0 + (best - s0 + q) % len;
        uint32_t gm = walk_from[k], gd = walk_to[k];
        uint32_t r = rank_of(x, gm);
        const etk_trace *t = w->ranks[r];
        const etk_node *nm = &t->nodes[gm - x->off[r]], *ndp = &t->nodes[gd - x->off[r]];
        bool seen = false;
        for (size_t q = 0; q < n_listed; q++)
            seen |= listed[q] == r;
        if (!seen && n_listed < WITNESS_MAX) {
            listed[n_listed++] = r;
            sb_printf(&rk, "%s%" PRIu32, n_listed > 1 ? ", " : "", r);
        }
        if (q < WITNESS_MAX)
            sb_printf(&b, "%srank %" PRIu32 " node id %" PRIu64 " (%s '%.*s') waits for id %" PRIu64
                      " (%s '%.*s')",
                      q ? "; " : "", r, nm->id, etk_node_type_name(nm->type), NAME_MAX_SHOWN,
                      nname(nm), ndp->id, etk_node_type_name(ndp->type), NAME_MAX_SHOWN,
                      nname(ndp));
    }
    if (len > WITNESS_MAX)
        sb_printf(&b, "; ...");
    uint32_t where = len ? walk_from[best] : cur;
    uint32_t r0 = rank_of(x, where);
    const etk_trace *t0 = w->ranks[r0];
    rc = add(x->out, ETK_SEV_ERROR, "deadlock", r0, t0->path, where - x->off[r0],
             t0->nodes[where - x->off[r0]].id, n_rep - qt,
             "cross-rank deadlock: a cycle of %zu waits over ranks %s%s: %s. (A collective waits "
             "for every member of its group, a send for its matching recv.) %zu operations can "
             "never run",
             len, sb_str(&rk), n_listed == WITNESS_MAX ? ", ..." : "", sb_str(&b), n_rep - qt);
    free(b.p);
    free(rk.p);
out:
    free(indeg);
    free(start);
    free(succ);
    free(queue);
    free(next);
    free(head);
    free(pos);
    free(walk_from);
    free(walk_to);
    if (rc == ETK_ENOMEM)
        return etk_err(err, rc, "%s: out of memory checking for deadlock",
                       w->prefix ? w->prefix : "");
    return rc;
}

int etk_validate_workload(etk_workload *w, const etk_validate_opts *opts, etk_findings *out,
                          etk_error *err)
{
    etk_validate_opts dflt = {0};
    if (!opts)
        opts = &dflt;
    bool folded = false, any_cyclic = false;
    size_t total = 0;
    int rc = 0;
    const char *prefix = w->prefix ? w->prefix : "";
    /* resolved dependencies per rank, kept for the deadlock pass */
    bool keep = !opts->skip_cross_rank && !opts->skip_deadlock;
    int32_t **res = keep ? calloc(w->n_ranks ? w->n_ranks : 1, sizeof *res) : NULL;
    if (keep && !res)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    xstate x = {0};
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        etk_trace *t = w->ranks[r];
        if (!t) {
            folded = true;
            continue;
        }
        bool cyclic;
        if ((rc = validate_trace(t, r, opts, out, &cyclic, keep ? &res[r] : NULL, err)))
            goto out;
        any_cyclic |= cyclic;
        total += t->n_nodes;
    }
    if (folded) {
        rc = add(out, ETK_SEV_INFO, "skipped", -1, prefix, -1, 0, 1,
                 "folded workload (%" PRIu32 " classes over %" PRIu32 " ranks): only the class "
                 "representatives were checked; expand it for the cross-rank checks",
                 w->n_classes, w->n_ranks);
        goto out;
    }
    if (opts->skip_cross_rank)
        goto out;
    if (total >= UINT32_MAX) {
        rc = etk_err(err, ETK_EINVAL,
                     "%s: %zu nodes in total: more than the 2^32-2 the cross-rank checks support",
                     prefix, total);
        goto out;
    }
    x.res = res;
    x.w = w;
    x.out = out;
    x.nlist = opts->max_ids_listed ? opts->max_ids_listed : LIST_DEFAULT;
    rc = ETK_ENOMEM;
    x.off = malloc((w->n_ranks + 1) * sizeof *x.off);
    bool deadlock = !opts->skip_deadlock && !any_cyclic;
    if (deadlock)
        x.uf = malloc((total ? total : 1) * sizeof *x.uf);
    if (!x.off || (deadlock && !x.uf))
        goto out;
    x.off[0] = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++)
        x.off[r + 1] = x.off[r] + w->ranks[r]->n_nodes;
    if (x.uf)
        for (size_t v = 0; v < total; v++)
            x.uf[v] = (uint32_t)v;
    if ((rc = load_groups(&x)) || (rc = check_collectives(&x)) || (rc = check_p2p(&x)))
        goto out;
    if (deadlock) {
        rc = check_deadlock(&x, err);
    } else if (any_cyclic && !opts->skip_deadlock) {
        rc = add(out, ETK_SEV_INFO, "skipped", -1, prefix, -1, 0, 1,
                 "cross-rank deadlock check skipped: a rank's own dependencies form a cycle");
    }
out:
    for (size_t i = 0; i < x.n_g; i++) {
        free(x.g[i].members);
        free(x.g[i].seq);
    }
    free(x.g);
    free(x.slots);
    free(x.off);
    free(x.uf);
    for (uint32_t r = 0; res && r < w->n_ranks; r++)
        free(res[r]);
    free(res);
    if (rc == ETK_ENOMEM && !(err && err->code == ETK_ENOMEM))
        return etk_err(err, rc, "%s: out of memory in the cross-rank checks", prefix);
    return rc;
}
