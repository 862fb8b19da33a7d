/* vstruct.c — per-file structure checks (etk_validate_trace): attributes missing or of the wrong
 * kind, duplicate and dangling ids, dependency cycles (with a witness), required attributes and
 * sizes per node type. validate.c runs them on each rank of a workload first. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"
#include "et/validate_priv.h"

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
            if (val_u64_push(&ids, d[j])) {
                free(ids.v);
                return ETK_ENOMEM;
            }
        }
    }
    int rc = 0;
    if (refs) {
        size_t distinct = val_u64_unique(&ids);
        sbuf b = {0};
        for (size_t k = 0; k < distinct && k < nlist; k++)
            val_sb_printf(&b, "%s%" PRIu64, k ? ", " : "", ids.v[k]);
        if (distinct > nlist)
            val_sb_printf(&b, ", ...");
        const etk_node *fn = &t->nodes[first];
        rc = val_add(out, ETK_SEV_ERROR, ctrl ? "missing-ctrl-dep" : "missing-data-dep", rank,
                 val_tpath(t), first, fn->id, distinct,
                 "%zu %s-dependency ids are not in the file (%" PRIu64
                 " references; ids %s); first referenced by node #%" PRId64 " id %" PRIu64
                 " '%.*s'. ASTRA-sim rejects such a file; etkit sim can treat them as satisfied",
                 distinct, ctrl ? "control" : "data", refs, val_sb_str(&b), first, fn->id,
                 NAME_MAX_SHOWN, val_nname(fn));
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
                val_sb_printf(&b, "%s%" PRIu64 " (nodes #%td and #%zu)", dups ? ", " : "",
                          t->nodes[i].id, j, i);
            dups++;
        }
    }
    int rc = 0;
    if (dups)
        rc = val_add(out, ETK_SEV_ERROR, "duplicate-id", rank, val_tpath(t), first, t->nodes[first].id,
                 dups,
                 "%" PRIu64 " nodes reuse an id already used in the file: %s%s; expected unique "
                 "ids (dependencies resolve to the first node with the id)",
                 dups, val_sb_str(&b), dups > nlist ? ", ..." : "");
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
                val_sb_printf(&b, "%s%" PRIu64, nodes ? ", " : "", n->id);
            nodes++;
        }
        rc = val_add(out, ETK_SEV_ERROR, "self-dep", rank, val_tpath(t), first, t->nodes[first].id,
                 nodes,
                 "%" PRIu64 " nodes depend on their own id (ids %s%s); such a node can never "
                 "become ready",
                 nodes, val_sb_str(&b), nodes > nlist ? ", ..." : "");
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
            val_sb_printf(&b, "#%" PRIu32 " id %" PRIu64 " '%.*s' -%s-> ", cyc[k], n->id,
                      NAME_MAX_SHOWN, val_nname(n), via[k] ? "ctrl" : "data");
        }
        if (len > WITNESS_MAX)
            val_sb_printf(&b, "... -> ");
        if (len)
            val_sb_printf(&b, "#%" PRIu32 " id %" PRIu64, cyc[0], t->nodes[cyc[0]].id);
        uint64_t unordered = g.n - g.n_order;
        rc = val_add(out, ETK_SEV_ERROR, "cycle", rank, val_tpath(t), len ? (int64_t)cyc[0] : -1,
                 len ? t->nodes[cyc[0]].id : 0, unordered,
                 "dependency cycle of %zu nodes (each depends on the next through the data or "
                 "ctrl dependency shown): %s; %" PRIu64
                 " nodes are on or after a cycle and can never run",
                 len, len ? val_sb_str(&b) : "(no witness)", unordered);
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
            rc = val_add(out, ETK_SEV_ERROR, "attr-kind", rank, val_tpath(t), g->first_changed, n->id,
                     g->n_changed,
                     "attribute '%s' written as %s on %" PRIu64 " nodes where consumers read "
                     "%s: they get 0/false/empty instead of the value written",
                     g->name, got, g->n_changed, etk_attr_kind_name(g->want));
            if (rc)
                return rc;
        }
        if (g->n_same) {
            const etk_node *n = &t->nodes[g->first_same];
            rc = val_add(out, ETK_SEV_WARNING, "attr-kind", rank, val_tpath(t), g->first_same, n->id,
                     g->n_same,
                     "attribute '%s' written as %s on %" PRIu64 " nodes where consumers read "
                     "%s; the value read (0/false/empty) equals the one written",
                     g->name, got, g->n_same, etk_attr_kind_name(g->want));
            if (rc)
                return rc;
        }
    }
    if (overflow)
        return val_add(out, ETK_SEV_WARNING, "attr-kind", rank, val_tpath(t), -1, 0, overflow,
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
        int rc = val_add(out, problems[p].sev, problems[p].code, rank, val_tpath(t), first[p], n->id,
                     cnt[p], "%s: %" PRIu64 " nodes, the first #%" PRId64 " id %" PRIu64 " '%.*s'",
                     problems[p].what, cnt[p], first[p], n->id, NAME_MAX_SHOWN, val_nname(n));
        if (rc)
            return rc;
    }
    return 0;
}

/* res_keep: when not NULL, receives the resolved dependency array (for the deadlock pass) */
int val_validate_trace(etk_trace *t, int64_t rank, const etk_validate_opts *opts,
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
        return etk_err(err, ETK_ENOMEM, "%s: out of memory validating", val_tpath(t));
    if ((rc = check_ids(t, rank, nlist, out)) ||
        (rc = check_missing(t, res, rank, false, nlist, out)) ||
        (rc = check_missing(t, res, rank, true, nlist, out)))
        goto oom;
    if ((rc = check_cycles(t, res, rank, nlist, out, cyclic, err))) {
        free(res);
        return rc == ETK_ENOMEM && err && err->code != ETK_ENOMEM
                   ? etk_err(err, rc, "%s: out of memory validating", val_tpath(t))
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
    return etk_err(err, rc, "%s: out of memory validating", val_tpath(t));
}

int etk_validate_trace(etk_trace *t, int64_t rank, const etk_validate_opts *opts,
                       etk_findings *out, etk_error *err)
{
    bool cyclic;
    return val_validate_trace(t, rank, opts, out, &cyclic, NULL, err);
}
