/* json_write.c — writing a trace as JSON (etk_json_write, etk_json_export): the lossless form,
 * which json.c reads back bit for bit, and the feeder form that ASTRA-sim's JSON feeder reads.
 * Node and attribute text comes from json_put.c. */
#include "etkit/json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/json_priv.h"

static void put_node_lossless(FILE *f, const etk_node *n)
{
    fputs("{\"id\": ", f);
    json_put_u64(f, n->id);
    fputs(", \"name\": ", f);
    json_put_str(f, n->name ? n->name : "");
    fputs(", \"type\": ", f);
    if (n->type >= 0 && n->type < ETK_NODE_TYPE_COUNT)
        json_put_str(f, etk_node_type_name(n->type));
    else
        fprintf(f, "%" PRId32, n->type);
    if (n->n_ctrl_deps) {
        fputs(", \"ctrl_deps\": ", f);
        json_put_u64_list(f, n->ctrl_deps, n->n_ctrl_deps);
    }
    if (n->n_data_deps) {
        fputs(", \"data_deps\": ", f);
        json_put_u64_list(f, n->data_deps, n->n_data_deps);
    }
    if (n->start_time_micros) {
        fputs(", \"start_time_micros\": ", f);
        json_put_u64(f, n->start_time_micros);
    }
    if (n->duration_micros) {
        fputs(", \"duration_micros\": ", f);
        json_put_u64(f, n->duration_micros);
    }
    if (n->inputs)
        json_put_io(f, "inputs", n->inputs);
    if (n->outputs)
        json_put_io(f, "outputs", n->outputs);
    if (n->n_attr) {
        fputs(", \"attr\": ", f);
        json_put_attrs(f, n->attr, n->n_attr);
    }
    fputc('}', f);
}

static void write_lossless(const etk_trace *t, FILE *f)
{
    fprintf(f, "{\"format\": \"%s\", \"version\": %d,\n\"metadata\": {\"version\": ", ETK_JSON_FORMAT,
            ETK_JSON_VERSION);
    json_put_str(f, t->version);
    fputs(", \"attr\": ", f);
    json_put_attrs(f, t->meta_attr, t->n_meta_attr);
    fputs("},\n\"nodes\": [", f);
    for (size_t i = 0; i < t->n_nodes; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_node_lossless(f, &t->nodes[i]);
    }
    fputs("\n]}\n", f);
}

/* Chakra's JSON feeder reads these with nlohmann::json, which handles the full uint64/int64
 * range, so the feeder form writes plain JSON integers. Defaults follow Chakra's ETFeederNode:
 * is_cpu_op true when absent, the others 0. */
static void put_node_feeder(FILE *f, const etk_node *n)
{
    bool cpu = true;
    etk_node_bool(n, "is_cpu_op", &cpu);
    fprintf(f, "{\"Id\": %" PRIu64 ", \"Name\": ", n->id);
    json_put_str_replacing(f, n->name ? n->name : "");
    fprintf(f, ", \"NodeType\": %" PRId32 ", \"is_cpu_op\": %s, \"runtime\": %" PRIu64
               ", \"data_deps\": [",
            n->type, cpu ? "true" : "false", n->duration_micros);
    for (uint32_t i = 0; i < n->n_data_deps; i++)
        fprintf(f, i ? ", %" PRIu64 : "%" PRIu64, n->data_deps[i]);
    fputc(']', f);
    if (n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV || n->type == ETK_NODE_COLL) {
        uint64_t tensor_size = 0;
        int64_t comm_type = 0, prio = 0, size = 0, src = 0, dst = 0, tag = 0;
        etk_node_u64(n, "tensor_size", &tensor_size);
        etk_node_i64(n, "comm_type", &comm_type);
        etk_node_i64(n, "comm_priority", &prio);
        etk_node_i64(n, "comm_size", &size);
        etk_node_i64(n, "comm_src", &src);
        etk_node_i64(n, "comm_dst", &dst);
        etk_node_i64(n, "comm_tag", &tag);
        fprintf(f,
                ", \"tensor_size\": %" PRIu64 ", \"comm_type\": %" PRId64 ", \"comm_priority\": %" PRId64
                ", \"comm_size\": %" PRId64 ", \"comm_src\": %" PRId64 ", \"comm_dst\": %" PRId64
                ", \"comm_tag\": %" PRId64,
                tensor_size, comm_type, prio, size, src, dst, tag);
    }
    fputc('}', f);
}

static void write_feeder(const etk_trace *t, FILE *f)
{
    fputs("{\"workload_graph\": [", f);
    for (size_t i = 0; i < t->n_nodes; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_node_feeder(f, &t->nodes[i]);
    }
    fputs("\n]}\n", f);
}

int etk_json_write(const etk_trace *t, etk_json_form form, FILE *f, etk_error *err)
{
    if (!t || !f)
        return etk_err(err, ETK_EINVAL, "etk_json_write: no trace or no output stream");
    if (form == ETK_JSON_FEEDER)
        write_feeder(t, f);
    else if (form == ETK_JSON_LOSSLESS)
        write_lossless(t, f);
    else
        return etk_err(err, ETK_EINVAL, "etk_json_write: unknown form %d", (int)form);
    if (fflush(f) != 0 || ferror(f))
        return etk_err(err, ETK_EIO, "writing JSON of %s: %s", t->path && *t->path ? t->path : "trace",
                       strerror(errno));
    return 0;
}

int etk_json_export(const etk_trace *t, etk_json_form form, const char *path, etk_error *err)
{
    if (!strcmp(path, "-"))
        return etk_json_write(t, form, stdout, err);
    char *tmp = NULL;
    FILE *f = etk_file_begin(path, &tmp, err);
    if (!f)
        return err ? err->code : ETK_EIO;
    int rc = etk_json_write(t, form, f, err);
    if (rc) {
        etk_file_abort(f, tmp);
        return etk_err_prefix(err, "%s", path);
    }
    return etk_file_commit(f, tmp, path, err);
}
