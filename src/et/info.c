/* info.c — per-rank statistics of a Chakra trace (etkit/validate.h, `etkit info`).
 *
 * Reads an etk_trace (from the reader or the generator) and sums what a user wants to know
 * before simulating it: node counts by type, compute FLOPs and bytes, collectives per type and
 * per communicator group, point-to-point bytes per peer, and the shape of the dependency graph
 * (roots, longest path) from the shared depgraph. One linear pass plus a sort of the
 * communication nodes; text and JSON output are produced from the same etk_trace_info. */
#include "etkit/json.h"
#include "etkit/validate.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"

typedef struct crec {
    const char *pg;
    int32_t type;
    uint64_t size;
} crec;

typedef struct prec {
    int64_t peer;
    bool send;
    uint64_t size;
} prec;

static int cmp_crec(const void *a, const void *b)
{
    const crec *x = a, *y = b;
    int c = strcmp(x->pg, y->pg);
    if (c)
        return c;
    return x->type < y->type ? -1 : x->type > y->type;
}

static int cmp_prec(const void *a, const void *b)
{
    const prec *x = a, *y = b;
    return x->peer < y->peer ? -1 : x->peer > y->peer;
}

void etk_info_free(etk_trace_info *info)
{
    if (!info)
        return;
    etk_arena_free(info->arena);
    memset(info, 0, sizeof *info);
}

/* *acc += v unless it passes 2^64 - 1 (then *acc is left as it was): false on overflow */
static bool add_u64(uint64_t *acc, uint64_t v)
{
    if (v > UINT64_MAX - *acc)
        return false;
    *acc += v;
    return true;
}

/* comm_size as bytes; negative or missing sizes count 0 */
static uint64_t comm_bytes(const etk_node *n)
{
    int64_t v;
    return etk_node_i64(n, "comm_size", &v) && v > 0 ? (uint64_t)v : 0;
}

int etk_info_trace(etk_trace *t, etk_trace_info *out, etk_error *err)
{
    memset(out, 0, sizeof *out);
    const char *path = t->path ? t->path : "";
    int rc;
    if (!t->index_slots && (rc = etk_trace_index(t, err)))
        return rc;
    out->arena = etk_arena_new(0);
    if (!out->arena)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    out->path = path;
    out->version = t->version;
    out->file_bytes = t->file_bytes;
    out->n_nodes = t->n_nodes;
    size_t nc = 0, np = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        int ty = t->nodes[i].type;
        if (ty == ETK_NODE_COLL)
            nc++;
        else if (ty == ETK_NODE_SEND || ty == ETK_NODE_RECV)
            np++;
    }
    crec *cr = malloc((nc ? nc : 1) * sizeof *cr);
    prec *pr = malloc((np ? np : 1) * sizeof *pr);
    if (!cr || !pr) {
        free(cr);
        free(pr);
        etk_info_free(out);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    /* every sum is checked: three nodes of num_ops 2^63 - 1 printed a wrapped 9223372036854775805
     * (issue #18); a per-rank sum past 2^64 - 1 is an error naming the field and the node */
    const char *ovf = NULL;
    size_t ovf_i = 0;
    uint64_t coll_total = 0, p2p_total = 0;
#define ADD(acc, val, what)                                                                       \
    do {                                                                                          \
        if (!ovf && !add_u64(&(acc), (val))) {                                                    \
            ovf = (what);                                                                         \
            ovf_i = i;                                                                            \
        }                                                                                         \
    } while (0)
    nc = np = 0;
    for (size_t i = 0; i < t->n_nodes && !ovf; i++) {
        const etk_node *n = &t->nodes[i];
        uint64_t u;
        int64_t v;
        if (n->type >= 0 && n->type < ETK_NODE_TYPE_COUNT)
            out->by_type[n->type]++;
        else
            out->n_unknown_type++;
        switch (n->type) {
        case ETK_NODE_COMP:
            if (etk_node_u64(n, "num_ops", &u))
                ADD(out->comp_flops, u, "num_ops of the COMP_NODEs");
            if (etk_node_u64(n, "tensor_size", &u))
                ADD(out->comp_bytes, u, "tensor_size of the COMP_NODEs");
            ADD(out->comp_duration_micros, n->duration_micros, "duration_micros of the COMP_NODEs");
            break;
        case ETK_NODE_MEM_LOAD:
        case ETK_NODE_MEM_STORE:
            if (etk_node_u64(n, "tensor_size", &u))
                ADD(out->mem_bytes, u, "tensor_size of the MEM_LOAD/MEM_STORE nodes");
            break;
        case ETK_NODE_COLL: {
            int32_t type = -1;
            if (etk_node_i64(n, "comm_type", &v) && v >= 0 && v < ETK_COLL_TYPE_COUNT)
                type = (int32_t)v;
            uint64_t b = comm_bytes(n);
            ADD(coll_total, b, "comm_size of the COMM_COLL_NODEs"); /* bounds every sum below */
            if (type >= 0) {
                out->coll_count[type]++;
                out->coll_bytes[type] += b;
            } else {
                out->coll_unknown_count++;
                out->coll_unknown_bytes += b;
            }
            const char *pg = etk_node_str(n, "pg_name");
            cr[nc++] = (crec){pg ? pg : "", type, b};
            break;
        }
        case ETK_NODE_SEND:
        case ETK_NODE_RECV: {
            bool send = n->type == ETK_NODE_SEND;
            int64_t peer = -1;
            if (!etk_node_i64(n, send ? "comm_dst" : "comm_src", &peer) || peer < 0)
                peer = -1;
            ADD(p2p_total, comm_bytes(n), "comm_size of the send/recv nodes");
            pr[np++] = (prec){peer, send, comm_bytes(n)};
            break;
        }
        default:
            break;
        }
    }
#undef ADD
    if (ovf) {
        const etk_node *n = &t->nodes[ovf_i];
        free(cr);
        free(pr);
        etk_info_free(out);
        return etk_err(err, ETK_EFORMAT,
                       "%s: the sum of the %s passes 1.8e19 (2^64 - 1) at node #%zu id %" PRIu64
                       " '%s' (values near 2^63: saturated or corrupt); no total printed",
                       path, ovf, ovf_i, n->id, n->name ? n->name : "");
    }
    /* per (group, type) and per peer: sort, then one entry per run */
    qsort(cr, nc, sizeof *cr, cmp_crec);
    qsort(pr, np, sizeof *pr, cmp_prec);
    size_t kc = 0, kp = 0;
    for (size_t i = 0; i < nc; i++)
        kc += !i || cmp_crec(&cr[i], &cr[i - 1]);
    for (size_t i = 0; i < np; i++)
        kp += !i || pr[i].peer != pr[i - 1].peer;
    out->colls = etk_arena_alloc(out->arena, (kc ? kc : 1) * sizeof *out->colls);
    out->peers = etk_arena_alloc(out->arena, (kp ? kp : 1) * sizeof *out->peers);
    if (!out->colls || !out->peers) {
        free(cr);
        free(pr);
        etk_info_free(out);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < nc; i++) {
        if (!i || cmp_crec(&cr[i], &cr[i - 1])) {
            etk_info_coll *c = &out->colls[out->n_colls++];
            c->pg_name = etk_arena_strdup(out->arena, cr[i].pg);
            c->comm_type = cr[i].type;
        }
        etk_info_coll *c = &out->colls[out->n_colls - 1];
        c->count++;
        c->bytes += cr[i].size;
    }
    for (size_t i = 0; i < np; i++) {
        if (!i || pr[i].peer != pr[i - 1].peer)
            out->peers[out->n_peers++].peer = pr[i].peer;
        etk_info_peer *p = &out->peers[out->n_peers - 1];
        if (pr[i].send) {
            p->send_count++;
            p->send_bytes += pr[i].size;
        } else {
            p->recv_count++;
            p->recv_bytes += pr[i].size;
        }
    }
    free(cr);
    free(pr);
    for (size_t i = 0; i < out->n_colls; i++)
        if (!out->colls[i].pg_name) {
            etk_info_free(out);
            return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
        }

    /* dependency graph: roots and the longest path over the Kahn order */
    etk_dg g;
    if ((rc = etk_dg_build(t, NULL, &g, err))) {
        etk_info_free(out);
        return rc;
    }
    out->n_ctrl_deps = g.n_ctrl;
    out->n_data_deps = g.n_data;
    out->n_missing_ctrl_deps = g.n_missing_ctrl;
    out->n_missing_data_deps = g.n_missing_data;
    out->n_no_deps = g.n_no_deps;
    out->n_roots = g.n_roots;
    out->n_unordered = g.n - g.n_order;
    uint32_t *depth = calloc(g.n ? g.n : 1, sizeof *depth);
    if (!depth) {
        etk_dg_free(&g);
        etk_info_free(out);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    for (size_t k = 0; k < g.n_order; k++) {
        uint32_t i = g.order[k];
        if (!depth[i])
            depth[i] = 1;
        if (depth[i] > out->depth)
            out->depth = depth[i];
        for (size_t e = g.off[i]; e < g.off[i + 1]; e++)
            if (depth[g.succ[e]] < depth[i] + 1)
                depth[g.succ[e]] = depth[i] + 1;
    }
    free(depth);
    etk_dg_free(&g);
    return 0;
}

/* ---------- output ---------- */
static const char *coll_name(int32_t type)
{
    return type < 0 ? "UNKNOWN" : etk_coll_type_name(type);
}

/* a count or sum as a JSON number (etk_json_count: a real past 2^63 - 1) */
static json_t *ju64(uint64_t v)
{
    return etk_json_count(v);
}

void *etk_info_to_json(const etk_trace_info *in, int64_t rank)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_t *types = json_object(), *colls = json_array(), *groups = json_array(),
           *peers = json_array();
    if (rank >= 0)
        json_object_set_new(o, "rank", json_integer(rank));
    json_object_set_new(o, "path", etk_json_text(in->path));
    json_object_set_new(o, "version", in->version ? json_string(in->version) : json_null());
    json_object_set_new(o, "file_bytes", ju64(in->file_bytes));
    json_object_set_new(o, "nodes", ju64(in->n_nodes));
    for (int ty = 0; ty < ETK_NODE_TYPE_COUNT; ty++)
        if (in->by_type[ty])
            json_object_set_new(types, etk_node_type_name(ty),
                                ju64(in->by_type[ty]));
    if (in->n_unknown_type)
        json_object_set_new(types, "UNKNOWN_NODE", ju64(in->n_unknown_type));
    json_object_set_new(o, "nodes_by_type", types);
    json_t *comp = json_object();
    json_object_set_new(comp, "num_ops_flops", ju64(in->comp_flops));
    json_object_set_new(comp, "tensor_size_bytes", ju64(in->comp_bytes));
    json_object_set_new(comp, "duration_us", ju64(in->comp_duration_micros));
    json_object_set_new(o, "compute", comp);
    json_object_set_new(o, "mem_bytes", ju64(in->mem_bytes));
    for (int ty = 0; ty <= ETK_COLL_TYPE_COUNT; ty++) {
        uint64_t c = ty < ETK_COLL_TYPE_COUNT ? in->coll_count[ty] : in->coll_unknown_count;
        uint64_t b = ty < ETK_COLL_TYPE_COUNT ? in->coll_bytes[ty] : in->coll_unknown_bytes;
        if (!c)
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "comm_type", json_string(coll_name(ty < ETK_COLL_TYPE_COUNT ? ty : -1)));
        json_object_set_new(e, "count", ju64(c));
        json_object_set_new(e, "bytes", ju64(b));
        json_array_append_new(colls, e);
    }
    json_object_set_new(o, "collectives", colls);
    for (size_t i = 0; i < in->n_colls; i++) {
        const etk_info_coll *c = &in->colls[i];
        json_t *e = json_object();
        json_object_set_new(e, "pg_name", json_string(c->pg_name));
        json_object_set_new(e, "comm_type", json_string(coll_name(c->comm_type)));
        json_object_set_new(e, "count", ju64(c->count));
        json_object_set_new(e, "bytes", ju64(c->bytes));
        json_array_append_new(groups, e);
    }
    json_object_set_new(o, "collectives_by_group", groups);
    for (size_t i = 0; i < in->n_peers; i++) {
        const etk_info_peer *p = &in->peers[i];
        json_t *e = json_object();
        json_object_set_new(e, "peer", p->peer >= 0 ? json_integer(p->peer) : json_null());
        json_object_set_new(e, "send_count", ju64(p->send_count));
        json_object_set_new(e, "send_bytes", ju64(p->send_bytes));
        json_object_set_new(e, "recv_count", ju64(p->recv_count));
        json_object_set_new(e, "recv_bytes", ju64(p->recv_bytes));
        json_array_append_new(peers, e);
    }
    json_object_set_new(o, "p2p_by_peer", peers);
    json_t *d = json_object();
    json_object_set_new(d, "data_deps", ju64(in->n_data_deps));
    json_object_set_new(d, "ctrl_deps", ju64(in->n_ctrl_deps));
    json_object_set_new(d, "missing_data_deps", ju64(in->n_missing_data_deps));
    json_object_set_new(d, "missing_ctrl_deps", ju64(in->n_missing_ctrl_deps));
    json_object_set_new(d, "nodes_without_deps", ju64(in->n_no_deps));
    json_object_set_new(d, "roots", ju64(in->n_roots));
    json_object_set_new(d, "longest_path_nodes", ju64(in->depth));
    json_object_set_new(d, "nodes_on_or_after_cycles", ju64(in->n_unordered));
    json_object_set_new(o, "dependencies", d);
    return o;
}

/* "1.23 G" style: value / 1000^k with an SI prefix (decimal units, as GB/s and TFLOP/s are) */
static const char *si(double v, char *buf, size_t len)
{
    static const char *pre[] = {"", "k", "M", "G", "T", "P", "E"};
    int k = 0;
    while (v >= 1000 && k < 6) {
        v /= 1000;
        k++;
    }
    snprintf(buf, len, k ? "%.2f %s" : "%.0f %s", v, pre[k]);
    return buf;
}

int etk_info_print(FILE *f, const etk_trace_info *in, int64_t rank)
{
    char a[32], b[32];
    if (rank >= 0)
        fprintf(f, "rank %" PRId64 ": ", rank);
    fprintf(f, "%s (%" PRIu64 " bytes, version %s)\n", in->path ? in->path : "", in->file_bytes,
            in->version ? in->version : "none");
    fprintf(f, "  nodes: %" PRIu64, in->n_nodes);
    const char *sep = " (";
    for (int ty = 0; ty < ETK_NODE_TYPE_COUNT; ty++)
        if (in->by_type[ty]) {
            fprintf(f, "%s%s %" PRIu64, sep, etk_node_type_name(ty), in->by_type[ty]);
            sep = ", ";
        }
    if (in->n_unknown_type) {
        fprintf(f, "%sunknown type %" PRIu64, sep, in->n_unknown_type);
        sep = ", ";
    }
    fprintf(f, "%s\n", *sep == ',' ? ")" : "");
    if (in->by_type[ETK_NODE_COMP])
        fprintf(f, "  compute: num_ops %" PRIu64 " FLOPs (%sFLOP), tensor_size %" PRIu64
                   " bytes (%sB), duration %" PRIu64 " us\n",
                in->comp_flops, si((double)in->comp_flops, a, sizeof a), in->comp_bytes,
                si((double)in->comp_bytes, b, sizeof b), in->comp_duration_micros);
    if (in->mem_bytes)
        fprintf(f, "  memory: tensor_size %" PRIu64 " bytes (%sB)\n", in->mem_bytes,
                si((double)in->mem_bytes, a, sizeof a));
    if (in->by_type[ETK_NODE_COLL]) {
        uint64_t tb = in->coll_unknown_bytes;
        for (int ty = 0; ty < ETK_COLL_TYPE_COUNT; ty++)
            tb += in->coll_bytes[ty];
        fprintf(f, "  collectives: %" PRIu64 " nodes, comm_size %" PRIu64 " bytes (%sB)\n",
                in->by_type[ETK_NODE_COLL], tb, si((double)tb, a, sizeof a));
        fprintf(f, "    %-10s %-22s %8s %16s\n", "group", "comm_type", "count", "bytes");
        for (size_t i = 0; i < in->n_colls; i++) {
            const etk_info_coll *c = &in->colls[i];
            fprintf(f, "    %-10s %-22s %8" PRIu64 " %16" PRIu64 "  (%sB)\n",
                    *c->pg_name ? c->pg_name : "(all)", coll_name(c->comm_type), c->count,
                    c->bytes, si((double)c->bytes, a, sizeof a));
        }
    }
    if (in->n_peers) {
        fprintf(f, "  point-to-point:\n    %-6s %8s %16s %8s %16s\n", "peer", "sends", "send bytes",
                "recvs", "recv bytes");
        for (size_t i = 0; i < in->n_peers; i++) {
            const etk_info_peer *p = &in->peers[i];
            char peer[24];
            if (p->peer >= 0)
                snprintf(peer, sizeof peer, "%" PRId64, p->peer);
            else
                snprintf(peer, sizeof peer, "?");
            fprintf(f, "    %-6s %8" PRIu64 " %16" PRIu64 " %8" PRIu64 " %16" PRIu64 "\n", peer,
                    p->send_count, p->send_bytes, p->recv_count, p->recv_bytes);
        }
    }
    fprintf(f, "  dependencies: data %" PRIu64 ", control %" PRIu64 " (on absent ids: data %" PRIu64
               ", control %" PRIu64 ")\n",
            in->n_data_deps, in->n_ctrl_deps, in->n_missing_data_deps, in->n_missing_ctrl_deps);
    fprintf(f, "  graph: %" PRIu64 " roots (%" PRIu64 " nodes without any dependency), longest path %"
               PRIu64 " nodes",
            in->n_roots, in->n_no_deps, in->depth);
    if (in->n_unordered)
        fprintf(f, ", %" PRIu64 " nodes on or after a cycle (not counted)", in->n_unordered);
    fprintf(f, "\n");
    return ferror(f) ? ETK_EIO : 0;
}
