/* dot.c — Graphviz export of one trace (etkit/validate.h, `etkit dot`).
 *
 * For looking at small traces or the head of a large one: one box per node labelled with its
 * id, name, type and FLOPs/bytes, data dependencies as solid edges (dependency -> dependent),
 * control dependencies dashed. Edges to ids that are absent, or beyond --max-nodes, are left
 * out and counted in a comment so a cut graph says that it is cut. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <errno.h>
#include <string.h>

/* DOT string body: escape quotes and backslashes, drop control characters, cap length. */
static void put_escaped(FILE *f, const char *s, size_t max)
{
    size_t n = 0;
    for (; s && *s && n < max; s++, n++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fputc('\\', f);
        if (c < 0x20)
            c = ' ';
        fputc(c, f);
    }
    if (s && *s)
        fputs("...", f);
}

static const char *short_type(int type)
{
    switch (type) {
    case ETK_NODE_METADATA: return "METADATA";
    case ETK_NODE_MEM_LOAD: return "MEM_LOAD";
    case ETK_NODE_MEM_STORE: return "MEM_STORE";
    case ETK_NODE_COMP: return "COMP";
    case ETK_NODE_SEND: return "SEND";
    case ETK_NODE_RECV: return "RECV";
    case ETK_NODE_COLL: return "COLL";
    default: return "INVALID";
    }
}

int etk_dot_write(FILE *f, etk_trace *t, const etk_dot_opts *opts, size_t *n_edges,
                  etk_error *err)
{
    int rc;
    if (!t->index_slots && (rc = etk_trace_index(t, err)))
        return rc;
    size_t shown = t->n_nodes;
    if (opts && opts->max_nodes && opts->max_nodes < shown)
        shown = opts->max_nodes;
    size_t edges = 0, cut = 0, missing = 0;
    fprintf(f, "digraph etk {\n");
    if (t->partial) /* read with etk_read_opts.max_nodes: the total is unknown */
        fprintf(f, "  // %s: cut by --max-nodes to the first %zu (file order; the rest of the file was not read)",
                t->path && *t->path ? t->path : "trace", shown);
    else
        fprintf(f, "  // %s: %zu nodes", t->path && *t->path ? t->path : "trace", t->n_nodes);
    if (shown < t->n_nodes && !t->partial)
        fprintf(f, "; cut by --max-nodes to the first %zu (file order)", shown);
    fprintf(f, "\n  // data dependencies solid, control dependencies dashed; arrows point from a dependency to its dependent\n");
    fprintf(f, "  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
    for (size_t i = 0; i < shown; i++) {
        const etk_node *n = &t->nodes[i];
        fprintf(f, "  n%zu [label=\"%" PRIu64 " ", i, n->id);
        put_escaped(f, n->name, 60);
        fprintf(f, "\\n%s", short_type(n->type));
        uint64_t u;
        int64_t v;
        if (etk_node_u64(n, "num_ops", &u))
            fprintf(f, " %" PRIu64 " FLOPs", u);
        if (etk_node_u64(n, "tensor_size", &u))
            fprintf(f, " %" PRIu64 " bytes", u);
        if (n->type == ETK_NODE_COLL && etk_node_i64(n, "comm_type", &v))
            fprintf(f, " %s", etk_coll_type_name((int)v));
        if (etk_node_i64(n, "comm_size", &v))
            fprintf(f, " %" PRId64 " bytes", v);
        if (n->type == ETK_NODE_SEND && etk_node_i64(n, "comm_dst", &v))
            fprintf(f, " to %" PRId64, v);
        if (n->type == ETK_NODE_RECV && etk_node_i64(n, "comm_src", &v))
            fprintf(f, " from %" PRId64, v);
        const char *pg = etk_node_str(n, "pg_name");
        if (pg && *pg) {
            fputs(" pg ", f);
            put_escaped(f, pg, 20);
        }
        fprintf(f, "\"%s];\n", n->type == ETK_NODE_COLL || n->type == ETK_NODE_SEND ||
                                       n->type == ETK_NODE_RECV
                                   ? ", style=filled, fillcolor=\"#dde8ff\""
                                   : "");
    }
    for (size_t i = 0; i < shown; i++) {
        const etk_node *n = &t->nodes[i];
        for (int pass = 0; pass < 2; pass++) {
            const uint64_t *d = pass ? n->ctrl_deps : n->data_deps;
            uint32_t nd = pass ? n->n_ctrl_deps : n->n_data_deps;
            for (uint32_t k = 0; k < nd; k++) {
                ptrdiff_t j = etk_trace_find_index(t, d[k]);
                if (j < 0 && t->partial) { /* maybe in the part not read */
                    cut++;
                    continue;
                }
                if (j < 0) {
                    missing++;
                    continue;
                }
                if ((size_t)j >= shown) {
                    cut++;
                    continue;
                }
                fprintf(f, "  n%td -> n%zu%s;\n", j, i, pass ? " [style=dashed]" : "");
                edges++;
            }
        }
    }
    if (cut)
        fprintf(f, "  // %zu dependencies on nodes beyond --max-nodes%s omitted\n", cut,
                t->partial ? " (or absent: the rest of the file was not read)" : "");
    if (missing)
        fprintf(f, "  // %zu dependencies on ids absent from the trace omitted\n", missing);
    fprintf(f, "}\n");
    if (n_edges)
        *n_edges = edges;
    if (ferror(f)) /* errno: the last failed write's (ENOSPC on a full disk) */
        return etk_err(err, ETK_EIO, "writing the DOT output failed: %s", errno ? strerror(errno) : "I/O error");
    return 0;
}
