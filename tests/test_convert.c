/* test_convert.c — `etkit convert pytorch` (src/convert/) on real traces:
 *  - Chakra's own converter output for ../shared/data/chakra/pytorch_host_et_1.0.2.json,
 *    compared node for node (every intended difference is listed where it is checked);
 *  - traces recorded with Debian's python3-torch 1.13.1 (schema 1.0.1, tests/pytorch/record.py):
 *    convert without preprocessing, validate (ids, cycles), replay (critical path) and compare the
 *    replayed span with the span the profiler recorded (fidelity, printed);
 *  - a hand-made host + Kineto pair whose every linked value is derived by hand below;
 *  - bad inputs: each error names the file, the place and what was expected.
 * Validation is etkit's own (etk_validate_trace/_workload, branch io-tools) plus the independent
 * checks below; simulation is etk_sim_workload (branch sim) plus an independent replay. */
#include "testutil.h"
#include "convert_testlib.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/convert.h"
#include "etkit/et.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "etkit/validate.h"

#define DATA102 "chakra/pytorch_host_et_1.0.2.json"
#define CHAKRA102 "chakra/pytorch_host_et_1.0.2.chakra-converted.et"

/* ---------- helpers: independent checks over a converted trace ---------- */

/* Dependencies that name no node of the trace (Chakra's converter leaves such ids). */
static size_t dangling(etk_trace *t)
{
    etk_error err;
    assert_int_equal(etk_trace_index(t, &err), 0);
    size_t bad = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        for (uint32_t k = 0; k < n->n_data_deps; k++)
            bad += etk_trace_find(t, n->data_deps[k]) == NULL;
        for (uint32_t k = 0; k < n->n_ctrl_deps; k++)
            bad += etk_trace_find(t, n->ctrl_deps[k]) == NULL;
    }
    return bad;
}

/* Kahn's algorithm over data ∪ ctrl deps: fills finish[i] = longest path ending at node i
 * (durations in us, each node starting when all its deps finished) and returns the number of
 * nodes it could order (n_nodes when the graph has no cycle). This is a replay with unbounded
 * resources: an independent computation of the span the simulator would report for a trace
 * whose nodes are chained per thread and stream. */
static size_t replay(etk_trace *t, uint64_t *span_us)
{
    etk_error err;
    assert_int_equal(etk_trace_index(t, &err), 0);
    size_t n = t->n_nodes;
    size_t *indeg = calloc(n, sizeof *indeg);
    uint64_t *fin = calloc(n, sizeof *fin);
    size_t *queue = malloc(n * sizeof *queue);
    size_t *off = calloc(n + 1, sizeof *off);
    assert_non_null(indeg);
    assert_non_null(fin);
    assert_non_null(queue);
    assert_non_null(off);
    /* reverse adjacency as CSR: dep -> dependents */
    for (size_t i = 0; i < n; i++) {
        const etk_node *x = &t->nodes[i];
        for (int pass = 0; pass < 2; pass++) {
            uint32_t m = pass ? x->n_ctrl_deps : x->n_data_deps;
            const uint64_t *d = pass ? x->ctrl_deps : x->data_deps;
            for (uint32_t k = 0; k < m; k++) {
                ptrdiff_t j = etk_trace_find_index(t, d[k]);
                if (j >= 0) {
                    off[j + 1]++;
                    indeg[i]++;
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    size_t *adj = malloc((off[n] + 1) * sizeof *adj), *fill = calloc(n, sizeof *fill);
    assert_non_null(adj);
    assert_non_null(fill);
    for (size_t i = 0; i < n; i++) {
        const etk_node *x = &t->nodes[i];
        for (int pass = 0; pass < 2; pass++) {
            uint32_t m = pass ? x->n_ctrl_deps : x->n_data_deps;
            const uint64_t *d = pass ? x->ctrl_deps : x->data_deps;
            for (uint32_t k = 0; k < m; k++) {
                ptrdiff_t j = etk_trace_find_index(t, d[k]);
                if (j >= 0)
                    adj[off[j] + fill[j]++] = i;
            }
        }
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            queue[tail++] = i;
    uint64_t span = 0;
    while (head < tail) {
        size_t i = queue[head++];
        fin[i] += t->nodes[i].duration_micros; /* fin[i] held the ready time */
        if (fin[i] > span)
            span = fin[i];
        for (size_t k = off[i]; k < off[i + 1]; k++) {
            size_t j = adj[k];
            if (fin[i] > fin[j])
                fin[j] = fin[i];
            if (--indeg[j] == 0)
                queue[tail++] = j;
        }
    }
    free(indeg);
    free(fin);
    free(queue);
    free(off);
    free(adj);
    free(fill);
    *span_us = span;
    return tail;
}

/* etk_validate_trace finds no error: no dangling ids, no cycle, no duplicate id, attribute
 * kinds as the Chakra conventions. The only warning allowed is "missing-cost": the thread-root
 * nodes (kept, as Chakra's converter does) and ops without a recorded duration run in 0 us. */
static void validate_clean(etk_trace *t, int64_t rank)
{
    etk_findings *f = etk_findings_new();
    etk_error err;
    assert_non_null(f);
    assert_int_equal(etk_validate_trace(t, rank, NULL, f, &err), 0);
    for (size_t i = 0; i < f->n; i++) {
        char buf[1024];
        etk_finding_format(&f->items[i], buf, sizeof buf);
        if (f->items[i].severity != ETK_SEV_INFO && strcmp(f->items[i].code, "missing-cost"))
            fail_msg("validate: %s", buf);
    }
    assert_int_equal(f->n_errors, 0);
    etk_findings_free(f);
}

/* Simulate the workload written at prefix on H100s behind one NVSwitch; returns the step time. */
static uint64_t simulate(const char *prefix, uint32_t want_ranks, etk_sim_rank_stats *r0)
{
    return cvt_validate_sim(prefix, want_ranks, 1, NULL, r0);
}

static const char *tmp_prefix(const char *name)
{
    static char p[4][600];
    static int k;
    char *q = p[k++ & 3];
    snprintf(q, 600, "%s/%s", tu_tmpdir(), name);
    return q;
}

static void write_ok(const char *host, const char *device, int64_t rank, const char *prefix)
{
    etk_convert_opts o = {host, device, rank, true, 0, NULL};
    etk_convert_stats st;
    etk_error err = {0};
    if (etk_convert_pytorch_write(&o, prefix, &st, &err))
        fail_msg("convert %s: %s", host, err.msg);
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[4][600];
    static int k;
    char *p = path[k++ & 3];
    snprintf(p, 600, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static etk_trace *convert_ok(const char *host, const char *device, etk_convert_stats *st,
                             etk_groups **groups)
{
    etk_convert_opts o = {host, device, -1, true, 0, NULL};
    etk_trace *t = NULL;
    etk_error err = {0};
    int rc = etk_convert_pytorch(&o, &t, groups, st, &err);
    if (rc)
        fail_msg("convert %s: %s", host, err.msg);
    return t;
}

static int convert_err(const char *host, const char *device, int64_t rank, etk_error *err)
{
    etk_convert_opts o = {host, device, rank, true, 0, NULL};
    etk_trace *t = NULL;
    etk_groups *g = NULL;
    etk_convert_stats st;
    int rc = etk_convert_pytorch(&o, &t, &g, &st, err);
    assert_null(t);
    assert_null(g);
    return rc;
}

static void attr_i64_eq(const etk_node *a, const etk_node *b, const char *name)
{
    int64_t x = 0, y = 0;
    bool hx = etk_node_i64(a, name, &x), hy = etk_node_i64(b, name, &y);
    if (hx != hy || x != y)
        fail_msg("node %llu \"%s\": attribute %s: etkit %s%lld, Chakra %s%lld",
                 (unsigned long long)a->id, a->name, name, hx ? "" : "(absent) ", (long long)x,
                 hy ? "" : "(absent) ", (long long)y);
}

/* ---------- Chakra's converter on the same input ---------- */
static void test_chakra_102_node_for_node(void **state)
{
    (void)state;
    etk_convert_stats st;
    etk_groups *g = NULL;
    etk_trace *t = convert_ok(tu_data(DATA102), NULL, &st, &g);
    etk_trace *ref = NULL;
    etk_error err = {0};
    etk_read_opts ro = {.quiet = true};
    assert_int_equal(etk_trace_read(tu_data(CHAKRA102), &ro, &ref, &err), 0);

    /* 263 host nodes; the process root "[...|process]" is dropped by both converters: 262
     * nodes, 261 COMP and the process-group init as METADATA (counts of Chakra's file). */
    assert_int_equal(st.n_host_nodes, 263);
    assert_int_equal(ref->n_nodes, 262);
    assert_int_equal(t->n_nodes, ref->n_nodes);
    assert_int_equal(st.n_type[ETK_NODE_COMP], 261);
    assert_int_equal(st.n_type[ETK_NODE_METADATA], 1);
    assert_true(st.schema_known);
    assert_false(st.old_layout);
    /* no device trace and no durations in a 1.0.2 host trace: every op but the two roots-like
     * nodes (thread root, pg init) is counted as duration-less */
    assert_int_equal(st.n_zero_dur, 260);

    assert_int_equal(etk_trace_index(ref, &err), 0);
    assert_int_equal(etk_trace_index(t, &err), 0);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *a = &t->nodes[i];
        const etk_node *b = &ref->nodes[i]; /* both files are in id order */
        assert_int_equal(a->id, b->id);
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->type, b->type);
        assert_int_equal(a->duration_micros, b->duration_micros);
        /* communication attributes: none on either side (no device trace: the NCCL kernels
         * are not visible; nccl:all_gather is the host-side record_function, a CPU op) */
        static const char *const comm[] = {"comm_type", "comm_size", "comm_src", "comm_dst",
                                           "comm_tag"};
        for (size_t k = 0; k < sizeof comm / sizeof comm[0]; k++)
            attr_i64_eq(a, b, comm[k]);
        assert_null(etk_node_str(a, "pg_name"));
        assert_null(etk_node_str(b, "pg_name"));
        /* the host-op attributes Chakra copies (same kinds: int64_val, string_val, bool_val) */
        static const char *const ids[] = {"rf_id", "fw_parent", "seq_id", "scope", "tid",
                                          "fw_tid"};
        for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
            attr_i64_eq(a, b, ids[k]);
            assert_int_equal(etk_node_attr(a, ids[k])->kind, etk_node_attr(b, ids[k])->kind);
        }
        assert_string_equal(etk_node_str(a, "op_schema"), etk_node_str(b, "op_schema"));
        bool ca = false, cb = false;
        assert_true(etk_node_bool(a, "is_cpu_op", &ca));
        assert_true(etk_node_bool(b, "is_cpu_op", &cb));
        assert_true(ca && cb);
        /* Dependencies: the program-order chain is the same (data deps node for node). */
        assert_int_equal(a->n_data_deps, b->n_data_deps);
        for (uint32_t k = 0; k < a->n_data_deps; k++)
            assert_int_equal(a->data_deps[k], b->data_deps[k]);
        /* Intended difference 1: ctrl deps. Chakra gives top-level ops a ctrl dep on the
         * thread root (node 3 even has it as data and ctrl dep); etkit gives each op its
         * parent op as ctrl dep unless the parent already is its data dep. Both only point to
         * earlier nodes, so the schedule is the same. */
        if (a->n_ctrl_deps) {
            assert_int_equal(a->n_ctrl_deps, 1);
            assert_true(a->ctrl_deps[0] < a->id);
        }
        /* Intended difference 2: etkit writes no "stream" attribute on CPU ops (Chakra writes
         * stream=0, which is not a stream). */
        assert_null(etk_node_attr(a, "stream"));
        assert_non_null(etk_node_attr(b, "stream"));
        /* Intended difference 3: inputs/outputs are the host trace's JSON text (Chakra writes
         * Python reprs such as "[[5, 6, 0, 1, 4, 'cpu'], False]"); the METADATA node holds the
         * process-group list itself. Checked on node 4 and node 3 below. */
    }
    const etk_node *n4 = etk_trace_find(t, 4);
    assert_non_null(n4);
    assert_string_equal(n4->outputs->values, "[[5,6,0,1,4,\"cpu\"]]");
    const etk_node *n3 = etk_trace_find(t, 3);
    assert_int_equal(n3->type, ETK_NODE_METADATA);
    assert_non_null(strstr(n3->inputs->values, "\"pg_name\": \"0\""));

    /* Intended difference 5: GlobalMetadata version (checked on a written file in
     * test_write_files); Chakra's is empty. */
    assert_null(ref->version);
    /* Intended difference 4: no dangling dependencies (true of this Chakra file as well; its
     * converter leaves 210 on converted_cnn_ddp.0.et). */
    assert_int_equal(dangling(t), 0);
    assert_int_equal(dangling(ref), 0);
    validate_clean(t, 0);
    uint64_t span;
    assert_int_equal(replay(t, &span), t->n_nodes);

    /* process group "0": group_size 2 and ranks [] → all ranks [0, 1] */
    assert_non_null(g);
    assert_int_equal(g->n_groups, 1);
    assert_string_equal(g->groups[0].id, "0");
    assert_int_equal(g->groups[0].n_ranks, 2);
    assert_int_equal(g->groups[0].ranks[0], 0);
    assert_int_equal(g->groups[0].ranks[1], 1);
    etk_groups_free(g);
    etk_trace_free(t);
    etk_trace_free(ref);
}

/* ---------- recorded PyTorch 1.13 traces ---------- */

/* From the profiler list alone: its span (max end - min start) and the sum of the durations of
 * its outermost events (events not nested in another one of the same thread). */
static void profiler_facts(const char *path, uint64_t *span_us, uint64_t *outer_sum_us)
{
    json_error_t je;
    json_t *l = json_load_file(path, 0, &je);
    assert_non_null(l);
    size_t n = json_array_size(l);
    int64_t lo = INT64_MAX, hi = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(l, i);
        int64_t ts = json_integer_value(json_object_get(e, "ts"));
        int64_t dur = json_integer_value(json_object_get(e, "dur"));
        int64_t tid = json_integer_value(json_object_get(e, "tid"));
        if (ts < lo)
            lo = ts;
        if (ts + dur > hi)
            hi = ts + dur;
        bool nested = false;
        for (size_t k = 0; k < n && !nested; k++) {
            json_t *f = json_array_get(l, k);
            int64_t fts = json_integer_value(json_object_get(f, "ts"));
            int64_t fd = json_integer_value(json_object_get(f, "dur"));
            nested = k != i && json_integer_value(json_object_get(f, "tid")) == tid && fts <= ts &&
                     ts + dur <= fts + fd && (fd > dur || (fd == dur && k < i));
        }
        if (!nested)
            sum += dur;
    }
    json_decref(l);
    *span_us = (uint64_t)(hi - lo);
    *outer_sum_us = (uint64_t)sum;
}

static void check_recorded(const char *model, size_t host_nodes, size_t events)
{
    char host[256], prof[256];
    snprintf(host, sizeof host, "tests/pytorch/%s_host_et.json", model);
    snprintf(prof, sizeof prof, "tests/pytorch/%s_profiler.json", model);
    etk_convert_stats st;
    etk_trace *t = convert_ok(host, prof, &st, NULL);
    /* schema 1.0.1 (ExecutionGraphObserver of PyTorch 1.13) is read as it is */
    assert_string_equal(st.schema, "1.0.1");
    assert_true(st.schema_known);
    assert_true(st.old_layout);
    assert_true(st.device_is_profiler_list);
    /* counts from the files: host_nodes nodes of which 2 roots (process root dropped) */
    assert_int_equal(st.n_host_nodes, host_nodes);
    assert_int_equal(t->n_nodes, host_nodes - 1);
    assert_int_equal(st.n_type[ETK_NODE_COMP], host_nodes - 1);
    assert_int_equal(st.n_cpu_ops, host_nodes - 1);
    /* every profiler event found its host op (the profiler records one op fewer than the
     * observer: the observer's own first op), so exactly one op stays without duration */
    assert_int_equal(st.n_matched, events);
    assert_int_equal(st.n_zero_dur, host_nodes - 2 - events);

    /* exclusive durations of nested ops add up to the outermost events' durations (rounding:
     * at most 0.5 us per op) */
    uint64_t span_rec, outer;
    profiler_facts(prof, &span_rec, &outer);
    uint64_t sum = 0;
    for (size_t i = 0; i < t->n_nodes; i++)
        sum += t->nodes[i].duration_micros;
    printf("%s: sum of exclusive durations %llu us, outermost events %llu us\n", model,
           (unsigned long long)sum, (unsigned long long)outer);
    assert_true(sum + events / 2 >= outer && sum <= outer + events / 2);
    assert_int_equal(st.trace_span_us, span_rec);

    /* valid graph: no dangling ids, no cycles */
    assert_int_equal(dangling(t), 0);
    uint64_t span;
    assert_int_equal(replay(t, &span), t->n_nodes);
    /* Fidelity round trip: replaying the durations cannot take longer than the recording (the
     * only time it drops is the Python gaps between top-level ops), and on these steps the
     * gaps are under 10% of the span. */
    double e = ((double)span - (double)span_rec) / (double)span_rec * 100.0;
    printf("fidelity %s: replayed span %llu us, recorded span %llu us, error %+.1f%%\n", model,
           (unsigned long long)span, (unsigned long long)span_rec, e);
    assert_true(span <= span_rec);
    assert_true(e > -10.0);
    validate_clean(t, 0);

    /* The simulator replays the same durations: one rank, every op a CPU op chained in
     * program order, so its step time is the replayed critical path exactly (us -> ns). */
    const char *prefix = tmp_prefix(model);
    write_ok(host, prof, 0, prefix);
    etk_sim_rank_stats r0;
    uint64_t step = simulate(prefix, 1, &r0);
    double es = ((double)step / 1000.0 - (double)span_rec) / (double)span_rec * 100.0;
    printf("fidelity %s (etkit sim): step %llu ns vs recorded span %llu us, error %+.1f%%\n",
           model, (unsigned long long)step, (unsigned long long)span_rec, es);
    assert_int_equal(step, span * 1000);
    assert_int_equal(r0.n_nodes, t->n_nodes);
    etk_trace_free(t);
}

static void test_mlp_101(void **state)
{
    (void)state;
    /* 128 nodes in mlp_host_et.json, 125 events in mlp_profiler.json */
    check_recorded("mlp", 128, 125);
}

static void test_transformer_101(void **state)
{
    (void)state;
    /* 687 nodes in transformer_host_et.json, 684 events in transformer_profiler.json */
    check_recorded("transformer", 687, 684);
}

static void test_host_only_101(void **state)
{
    (void)state;
    /* without a device trace a 1.0.1 trace has no durations: 126 ops, all 0 with a count */
    etk_convert_stats st;
    etk_trace *t = convert_ok("tests/pytorch/mlp_host_et.json", NULL, &st, NULL);
    assert_int_equal(t->n_nodes, 127);
    assert_int_equal(st.n_zero_dur, 126);
    assert_int_equal(st.trace_span_us, 0);
    assert_int_equal(dangling(t), 0);
    etk_trace_free(t);
}

/* ---------- Kineto linking, every value derived by hand ---------- */
static const etk_node *must_find(const etk_trace *t, uint64_t id)
{
    const etk_node *n = etk_trace_find(t, id);
    if (!n)
        fail_msg("node %llu missing", (unsigned long long)id);
    return n;
}

static void deps_eq(const uint64_t *d, uint32_t n, const uint64_t *want, uint32_t nw)
{
    assert_int_equal(n, nw);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(d[i], want[i]);
}

static void test_kineto_linking(void **state)
{
    (void)state;
    etk_convert_stats st;
    etk_groups *g = NULL;
    etk_trace *t =
        convert_ok("tests/pytorch/kineto_host_0.json", "tests/pytorch/kineto_device_0.json", &st, &g);
    etk_error err;
    assert_int_equal(etk_trace_index(t, &err), 0);
    /* 12 host nodes - process root = 11 host nodes written; 3 GPU events (sgemm, all-reduce,
     * send) get ids after the largest host id 12: 13, 14, 15 in GPU start order */
    assert_int_equal(t->n_nodes, 14);
    assert_int_equal(st.n_gpu_ops, 3);
    assert_int_equal(st.n_matched, 8); /* all 8 ops (not roots, not pg init) by rf_id */
    assert_int_equal(st.n_zero_dur, 0);
    assert_int_equal(st.n_unlinked_kernels, 0);

    /* exclusive durations: aten::mm 50 us minus its child aten::empty 10 us = 40;
     * c10d::allreduce_ 30 - record_param_comms 26 = 4; record_param_comms 26 - nccl 20 = 6 */
    assert_int_equal(must_find(t, 4)->duration_micros, 40);
    assert_int_equal(must_find(t, 5)->duration_micros, 10);
    assert_int_equal(must_find(t, 6)->duration_micros, 4);
    assert_int_equal(must_find(t, 7)->duration_micros, 6);
    assert_int_equal(must_find(t, 8)->duration_micros, 20);
    /* aten::item: 90 us minus the part of its cudaStreamSynchronize (1125..1205 us) that the
     * GPU work it waits for explains (the send kernel ends at 1200 us: 75 us), which the sync
     * dependency models (replaying both would count the wait twice): 15 us */
    assert_int_equal(must_find(t, 10)->duration_micros, 15);
    assert_int_equal(must_find(t, 4)->start_time_micros, 1000);

    /* sgemm: launched by cudaLaunchKernel (correlation 101, External id 1 = aten::mm's,
     * whose Record function id 10 is host node 4); COMP on the GPU, 40 us on stream 7 */
    const etk_node *k = must_find(t, 13);
    bool cpu = true;
    int64_t v;
    assert_int_equal(k->type, ETK_NODE_COMP);
    assert_true(etk_node_bool(k, "is_cpu_op", &cpu) && !cpu);
    assert_true(etk_node_i64(k, "stream", &v) && v == 7);
    assert_int_equal(k->duration_micros, 40);
    deps_eq(k->data_deps, k->n_data_deps, (uint64_t[]){4}, 1);

    /* all-reduce: ncclDevKernel_AllReduce → COMM_COLL ALL_REDUCE; launched by nccl:all_reduce
     * (node 8) whose input is one float tensor of 256 elements: 256 * 4 = 1024 bytes; group:
     * record_param_comms (node 7) carries backend id 100, declared as pg_name "0" */
    k = must_find(t, 14);
    assert_int_equal(k->type, ETK_NODE_COLL);
    assert_true(etk_node_i64(k, "comm_type", &v) && v == ETK_COLL_ALL_REDUCE);
    assert_int_equal(etk_node_attr(k, "comm_type")->kind, ETK_ATTR_INT64);
    assert_true(etk_node_i64(k, "comm_size", &v) && v == 1024);
    assert_int_equal(etk_node_attr(k, "comm_size")->kind, ETK_ATTR_INT64);
    assert_string_equal(etk_node_str(k, "pg_name"), "0");
    deps_eq(k->data_deps, k->n_data_deps, (uint64_t[]){8}, 1);

    /* SendRecv launched under c10d::send (the runtime call has no External id: found as the
     * innermost cpu_op enclosing it, 1100..1110 us) → SEND to rank 1, tag 5 (the op's int
     * inputs), 32 halfs = 64 bytes; after its launch (9) and the all-reduce on stream 20 */
    k = must_find(t, 15);
    assert_int_equal(k->type, ETK_NODE_SEND);
    assert_true(etk_node_i64(k, "comm_size", &v) && v == 64);
    assert_true(etk_node_i64(k, "comm_dst", &v) && v == 1);
    assert_int_equal(etk_node_attr(k, "comm_dst")->kind, ETK_ATTR_INT32);
    assert_true(etk_node_i64(k, "comm_tag", &v) && v == 5);
    deps_eq(k->data_deps, k->n_data_deps, (uint64_t[]){9, 14}, 2);

    /* aten::item synchronizes (cudaStreamSynchronize at 1125 us): it waits for the last GPU
     * op launched before on each stream: 13 (stream 7) and 15 (stream 20); ctrl deps also hold
     * its parent, the thread root 2 */
    const etk_node *it = must_find(t, 10);
    deps_eq(it->ctrl_deps, it->n_ctrl_deps, (uint64_t[]){2, 13, 15}, 3);
    deps_eq(it->data_deps, it->n_data_deps, (uint64_t[]){9}, 1);
    assert_int_equal(st.n_sync_deps, 2);

    /* thread 2's MmBackward0 starts at 1215 us: the latest top-level op of thread 1 that ended
     * before is aten::item (1120 + 90 = 1210 us) → one cross-thread ctrl dep on 10 */
    const etk_node *bw = must_find(t, 12);
    deps_eq(bw->ctrl_deps, bw->n_ctrl_deps, (uint64_t[]){10}, 1);
    deps_eq(bw->data_deps, bw->n_data_deps, (uint64_t[]){11}, 1);
    assert_int_equal(st.n_cross_thread_deps, 1);

    /* span: first event 1000 us, last end MmBackward0 1215 + 30 = 1245 us → 245 us */
    assert_int_equal(st.trace_span_us, 245);
    assert_int_equal(dangling(t), 0);
    validate_clean(t, 0);
    uint64_t span;
    assert_int_equal(replay(t, &span), t->n_nodes);

    /* groups: "0" ranks [0, 1]; "1" ranks [] with group_size 2 → [0, 1] */
    assert_non_null(g);
    assert_int_equal(g->n_groups, 2);
    assert_string_equal(g->groups[1].id, "1");
    assert_int_equal(g->groups[1].n_ranks, 2);
    etk_groups_free(g);
    etk_trace_free(t);
}

/* The hand-made pair as a 2-rank job (rank 1 receives what rank 0 sends): the workload passes
 * etkit's cross-rank validation (groups, the all-reduce on group "0" on both ranks with the same
 * size, the send matched by a recv on (0, 1, tag 5), no deadlock) and simulates. */
/* Kineto traces from before PyTorch 2.0 have no "Record function id": cpu_ops are aligned with
 * host ops by name in start order instead, and kernels still reach their host op through
 * correlation and External id. The same pair with the ids renamed away must convert to the
 * same nodes, durations and dependencies as with them. */
/* Without device times, thread switches in start order become ctrl deps: the host pair's
 * top-level ops in id order are 4, 6, 9, 10 (thread 1) and 12 (thread 2), so 12 waits for 10
 * and nothing else crosses threads; without kernels there are no sync deps. */
static void test_threads_without_device(void **state)
{
    (void)state;
    etk_convert_stats st;
    etk_trace *t = convert_ok("tests/pytorch/kineto_host_0.json", NULL, &st, NULL);
    etk_error err;
    assert_int_equal(etk_trace_index(t, &err), 0);
    assert_int_equal(st.n_cross_thread_deps, 1);
    assert_int_equal(st.n_sync_deps, 0);
    assert_int_equal(st.n_gpu_ops, 0);
    const etk_node *bw = must_find(t, 12);
    deps_eq(bw->ctrl_deps, bw->n_ctrl_deps, (uint64_t[]){10}, 1);
    deps_eq(bw->data_deps, bw->n_data_deps, (uint64_t[]){11}, 1);
    /* aten::item keeps only its parent (thread root 2) as ctrl dep */
    const etk_node *it = must_find(t, 10);
    deps_eq(it->ctrl_deps, it->n_ctrl_deps, (uint64_t[]){2}, 1);
    validate_clean(t, 0);
    etk_trace_free(t);
}

static void test_kineto_without_rf_ids(void **state)
{
    (void)state;
    size_t len;
    char *text = (char *)tu_read("tests/pytorch/kineto_device_0.json", &len);
    /* "Record function id" -> "Record function idx" (an arg nobody reads) */
    char *out = malloc(len * 2 + 1), *o = out;
    assert_non_null(out);
    for (const char *p = text; *p;) {
        const char *q = strstr(p, "\"Record function id\"");
        if (!q) {
            strcpy(o, p);
            break;
        }
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        o += sprintf(o, "\"Record function idx\"");
        p = q + strlen("\"Record function id\"");
    }
    const char *dev = write_tmp("norf.json", out);
    free(out);
    free(text);
    etk_convert_stats a, b;
    etk_trace *ta = convert_ok("tests/pytorch/kineto_host_0.json", "tests/pytorch/kineto_device_0.json",
                               &a, NULL);
    etk_trace *tb = convert_ok("tests/pytorch/kineto_host_0.json", dev, &b, NULL);
    assert_int_equal(b.n_matched, 8);
    assert_int_equal(b.n_gpu_ops, 3);
    assert_int_equal(b.n_unlinked_kernels, 0);
    assert_false(b.device_is_profiler_list);
    assert_int_equal(ta->n_nodes, tb->n_nodes);
    for (size_t i = 0; i < ta->n_nodes; i++) {
        const etk_node *x = &ta->nodes[i], *y = &tb->nodes[i];
        assert_int_equal(x->id, y->id);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->duration_micros, y->duration_micros);
        deps_eq(x->data_deps, x->n_data_deps, y->data_deps, y->n_data_deps);
        deps_eq(x->ctrl_deps, x->n_ctrl_deps, y->ctrl_deps, y->n_ctrl_deps);
    }
    etk_trace_free(ta);
    etk_trace_free(tb);
}

static void test_two_rank_job(void **state)
{
    (void)state;
    const char *prefix = tmp_prefix("job");
    char h[64], d[64];
    for (int r = 0; r < 2; r++) {
        snprintf(h, sizeof h, "tests/pytorch/kineto_host_%d.json", r);
        snprintf(d, sizeof d, "tests/pytorch/kineto_device_%d.json", r);
        write_ok(h, d, r, prefix);
    }
    etk_sim_rank_stats r0;
    uint64_t step = simulate(prefix, 2, &r0);
    /* rank 0 runs every node. The CPU chain replays 40 + 10 + 4 + 6 + 20 + 10 (thread 1, up
     * to c10d::send, ending at 90 us); aten::item waits for the send launched at 90 us (sync
     * dep on node 15: the 64-byte transfer costs the 500 ns link latency of two.yaml), then
     * runs its 15 us of own work (90 us recorded minus the 75 us of cudaStreamSynchronize
     * the send kernel explains), then thread 2's MmBackward0 (30 us): 90.5 + 15 + 30 = 135.5 */
    assert_int_equal(r0.n_nodes, 14);
    assert_true(step > 135000 && step < 136500);
    printf("two-rank job: simulated step %llu ns (recorded span 245 us)\n",
           (unsigned long long)step);
}

static void test_write_files(void **state)
{
    (void)state;
    char prefix[512], path[600];
    snprintf(prefix, sizeof prefix, "%s/kin", tu_tmpdir());
    etk_convert_opts o = {"tests/pytorch/kineto_host_0.json", "tests/pytorch/kineto_device_0.json", 3,
                          true, 0, NULL};
    etk_convert_stats st;
    etk_error err = {0};
    /* rank 3 given but the Kineto trace says rank 0: refused */
    assert_int_equal(etk_convert_pytorch_write(&o, prefix, &st, &err), ETK_EINVAL);
    assert_non_null(strstr(err.msg, "rank 0"));
    assert_non_null(strstr(err.msg, "--rank is 3"));
    o.rank = 0;
    assert_int_equal(etk_convert_pytorch_write(&o, prefix, &st, &err), 0);
    snprintf(path, sizeof path, "%s.0.et", prefix);
    etk_trace *t = NULL;
    assert_int_equal(etk_trace_read(path, NULL, &t, &err), 0);
    etk_trace *m = convert_ok(o.host_path, o.device_path, &st, NULL);
    /* the streamed file and the in-memory conversion agree node for node */
    assert_int_equal(t->n_nodes, m->n_nodes);
    for (size_t i = 0; i < t->n_nodes; i++) {
        assert_int_equal(t->nodes[i].id, m->nodes[i].id);
        assert_int_equal(t->nodes[i].type, m->nodes[i].type);
        assert_int_equal(t->nodes[i].duration_micros, m->nodes[i].duration_micros);
        assert_int_equal(t->nodes[i].n_ctrl_deps, m->nodes[i].n_ctrl_deps);
        assert_int_equal(t->nodes[i].n_data_deps, m->nodes[i].n_data_deps);
    }
    /* Intended difference 5 (see test_chakra_102_node_for_node): version "0.0.4", which
     * Chakra's converter leaves empty */
    assert_string_equal(t->version, "0.0.4");
    /* the host trace's header is kept in the GlobalMetadata */
    bool have_schema = false;
    for (uint32_t i = 0; i < t->n_meta_attr; i++)
        if (!strcmp(t->meta_attr[i].name, "schema"))
            have_schema = !strcmp(t->meta_attr[i].v.s, "1.1.1-chakra.0.0.4");
    assert_true(have_schema);
    etk_trace_free(t);
    etk_trace_free(m);
    snprintf(path, sizeof path, "%s.json", prefix);
    etk_groups *g = NULL;
    assert_int_equal(etk_groups_read(path, &g, &err), 0);
    assert_int_equal(g->n_groups, 2);
    etk_groups_free(g);
}

/* ---------- host-trace durations and unknown schemas ---------- */

#define NODE(id, name, parent, extra)                                                          \
    "{\"id\": " #id ", \"name\": \"" name "\", \"ctrl_deps\": " #parent                          \
    ", \"inputs\": {\"values\": [], \"shapes\": [], \"types\": []}, \"outputs\": {\"values\": [], " \
    "\"shapes\": [], \"types\": []}, \"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", "    \
    "\"value\": " #id "}]" extra "}"

static void test_host_durations_and_unknown_schema(void **state)
{
    (void)state;
    /* a future schema with durations in the host trace: 'exclusive_dur' is used as is,
     * 'inclusive_dur' minus the children's: outer 100 us incl with a 30 us child → 70 us */
    const char *p = write_tmp(
        "future.json",
        "{\"schema\": \"2.0.0\", \"pid\": 1, \"nodes\": ["
        NODE(1, "[pytorch|profiler|execution_trace|process]", 1, "") ","
        NODE(2, "[pytorch|profiler|execution_trace|thread]", 1, "") ","
        NODE(3, "outer", 2, ", \"inclusive_dur\": 100") ","
        NODE(4, "inner", 3, ", \"inclusive_dur\": 30") ","
        NODE(5, "other", 2, ", \"exclusive_dur\": 7.4") ","
        "{\"id\": 6, \"name\": \"lr\", \"ctrl_deps\": 2, \"exclusive_dur\": 1, \"inputs\": "
        "{\"values\": [0.1, 1e-3], \"shapes\": [[],[]], \"types\": [\"Double\",\"Double\"]}}]}");
    etk_convert_stats st;
    etk_trace *t = convert_ok(p, NULL, &st, NULL);
    assert_false(st.schema_known);
    assert_int_equal(st.n_warnings, 1);
    assert_non_null(strstr(st.warnings[0], "unknown schema \"2.0.0\""));
    etk_error err;
    assert_int_equal(etk_trace_index(t, &err), 0);
    assert_int_equal(must_find(t, 3)->duration_micros, 70);
    assert_int_equal(must_find(t, 4)->duration_micros, 30);
    assert_int_equal(must_find(t, 5)->duration_micros, 7);
    /* inputs are kept as written (a re-serialization would print 0.10000000000000001) */
    assert_string_equal(must_find(t, 6)->inputs->values, "[0.1, 1e-3]");
    assert_string_equal(must_find(t, 6)->inputs->types, "[\"Double\",\"Double\"]");
    assert_null(must_find(t, 6)->outputs);
    assert_int_equal(st.n_zero_dur, 0);
    etk_trace_free(t);
}

/* PyTorch 2.4+ names the group in record_param_comms' attrs ("pg_name") and its process-group
 * list has no backend ids; the Kineto trace has no distributedInfo here, so --rank decides.
 * The all-gather kernel is launched under nccl:all_gather (100 bf16 = 200 bytes) whose parent
 * record_param_comms carries pg_name "7". */
static void test_pg_from_attrs(void **state)
{
    (void)state;
    const char *h = write_tmp(
        "pg_host.json",
        "{\"schema\": \"1.1.0-chakra.0.0.4\", \"pid\": 1, \"nodes\": ["
        NODE(2, "[pytorch|profiler|execution_trace|thread]", 1, "") ","
        "{\"id\": 3, \"name\": \"## process_group:init ##\", \"ctrl_deps\": 2, \"inputs\": "
        "{\"values\": [\"[{\\\"pg_name\\\": \\\"0\\\", \\\"ranks\\\": [], \\\"group_size\\\": 4}, "
        "{\\\"pg_name\\\": \\\"7\\\", \\\"ranks\\\": [1, 3], \\\"group_size\\\": 2}]\"]}, "
        "\"attrs\": []},"
        NODE(4, "c10d::allgather_", 2, "") ","
        "{\"id\": 5, \"name\": \"record_param_comms\", \"ctrl_deps\": 4, \"attrs\": [{\"name\": "
        "\"rf_id\", \"type\": \"uint64\", \"value\": 5}, {\"name\": \"pg_name\", \"type\": "
        "\"string\", \"value\": \"7\"}]},"
        "{\"id\": 6, \"name\": \"nccl:all_gather\", \"ctrl_deps\": 5, \"inputs\": {\"values\": "
        "[[9, 9, 0, 100, 2, \"cuda:1\"]]}, \"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", "
        "\"value\": 6}]}]}");
    const char *d = write_tmp(
        "pg_dev.json",
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::allgather_\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 10.5, \"dur\": 9.5, \"args\": {\"Record function id\": 4}},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 11, \"dur\": 8, \"args\": {\"Record function id\": 5}},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"nccl:all_gather\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 12, \"dur\": 6, \"args\": {\"Record function id\": 6, \"External id\": 60}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 13, \"dur\": 2, \"args\": {\"External id\": 60, \"correlation\": 5}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllGather_RING_LL\", \"pid\": 0, "
        "\"tid\": 3, \"ts\": 14, \"dur\": 30.4, \"args\": {\"stream\": 3, \"correlation\": 5}}]}");
    etk_convert_opts o = {h, d, 1, true, 0, NULL};
    etk_convert_stats st;
    etk_trace *t = NULL;
    etk_groups *g = NULL;
    etk_error err = {0};
    if (etk_convert_pytorch(&o, &t, &g, &st, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(st.rank, 1);
    assert_int_equal(etk_trace_index(t, &err), 0);
    const etk_node *k = must_find(t, 7); /* first id after the largest host id 6 */
    int64_t v;
    assert_int_equal(k->type, ETK_NODE_COLL);
    assert_true(etk_node_i64(k, "comm_type", &v) && v == ETK_COLL_ALL_GATHER);
    assert_true(etk_node_i64(k, "comm_size", &v) && v == 200);
    assert_string_equal(etk_node_str(k, "pg_name"), "7");
    assert_int_equal(k->duration_micros, 30); /* 30.4 us rounds to 30 */
    /* c10d::allgather_ 9.5 us - record_param_comms 8 us = 1.5 us, rounded half up to 2 */
    assert_int_equal(must_find(t, 4)->duration_micros, 2);
    assert_int_equal(must_find(t, 5)->duration_micros, 2);
    assert_int_equal(must_find(t, 6)->duration_micros, 6);
    /* group "0": 4 ranks (ranks [] and group_size 4); group "7": ranks 1 and 3 */
    assert_int_equal(g->n_groups, 2);
    assert_int_equal(g->groups[0].n_ranks, 4);
    assert_int_equal(g->groups[1].ranks[1], 3);
    validate_clean(t, 1);
    etk_groups_free(g);
    etk_trace_free(t);
}

/* Schema strings: the five known ones with or without a "-chakra.x" suffix are known; lookalikes
 * are not (and still convert, with the warning naming them). */
static void test_schema_names(void **state)
{
    (void)state;
    static const struct {
        const char *schema;
        bool known;
    } cases[] = {
        {"1.0.1", true}, {"1.0.2-chakra.0.0.4", true}, {"1.0.3", true},
        {"1.1.0-chakra.0.0.4", true}, {"1.1.1", true}, {"1.1.1-chakra.0.0.4", true},
        {"1.0.20", false}, {"1.2.0", false}, {"0.9", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"schema\": \"%s\", \"nodes\": [" NODE(2, "x", 1, "") "]}",
                 cases[i].schema);
        etk_convert_stats st;
        etk_trace *t = convert_ok(write_tmp("schema.json", text), NULL, &st, NULL);
        assert_string_equal(st.schema, cases[i].schema);
        if (st.schema_known != cases[i].known)
            fail_msg("schema %s: known=%d", cases[i].schema, st.schema_known);
        /* one warning for the op without duration, one more for an unknown schema */
        assert_int_equal(st.n_warnings, cases[i].known ? 1 : 2);
        assert_int_equal(t->n_nodes, 1);
        etk_trace_free(t);
    }
}

static void test_coll_names(void **state)
{
    (void)state;
    assert_int_equal(etk_convert_coll_from_name("ncclKernel_AllReduce_RING_LL_Sum_float"),
                     ETK_COLL_ALL_REDUCE);
    assert_int_equal(etk_convert_coll_from_name("ncclDevKernel_AllGather_RING_LL"),
                     ETK_COLL_ALL_GATHER);
    assert_int_equal(etk_convert_coll_from_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
                     ETK_COLL_REDUCE_SCATTER);
    assert_int_equal(etk_convert_coll_from_name("ncclKernel_Broadcast_RING_LL"),
                     ETK_COLL_BROADCAST);
    assert_int_equal(etk_convert_coll_from_name("nccl:all_to_all"), ETK_COLL_ALL_TO_ALL);
    assert_int_equal(etk_convert_coll_from_name("ncclDevKernel_SendRecv"), -1);
}

/* ---------- bad inputs ---------- */
static void test_bad_inputs(void **state)
{
    (void)state;
    etk_error err = {0};
    /* truncated JSON: the first 20000 bytes of a real trace */
    size_t len;
    uint8_t *b = tu_read("tests/pytorch/mlp_host_et.json", &len);
    assert_true(len > 20000);
    b[20000] = 0;
    const char *p = write_tmp("trunc.json", (char *)b);
    free(b);
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "trunc.json"));
    assert_non_null(strstr(err.msg, "truncated JSON"));

    /* wrong types: id as a string, name as a number, inputs as a number */
    p = write_tmp("wrongid.json", "{\"schema\": \"1.0.2\", \"nodes\": [\n"
                  NODE(2, "[pytorch|profiler|execution_trace|thread]", 1, "") ",\n"
                  "{\"id\": \"x\", \"name\": \"aten::mm\", \"ctrl_deps\": 2}]}");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "nodes[1]"));
    assert_non_null(strstr(err.msg, "line 3"));
    assert_non_null(strstr(err.msg, "\"id\" must be a non-negative integer, got a string"));
    p = write_tmp("wrongname.json",
                  "{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 5, \"name\": 7, \"ctrl_deps\": 1}]}");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "nodes[0] (id 5"));
    assert_non_null(strstr(err.msg, "\"name\" must be a string, got an integer"));
    p = write_tmp("wronginputs.json", "{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 5, \"name\": "
                  "\"a\", \"ctrl_deps\": 1, \"inputs\": 3}]}");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "\"inputs\" must be an object {values, shapes, types} or a list"));
    p = write_tmp("noparent.json",
                  "{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 5, \"name\": \"a\"}]}");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "missing the parent reference"));
    p = write_tmp("dupid.json", "{\"schema\": \"1.0.2\", \"nodes\": ["
                  NODE(5, "a", 1, "") "," NODE(5, "b", 1, "") "]}");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "node id 5 appears twice"));

    /* a host trace without nodes (e.g. a Kineto trace given as --host) */
    assert_int_equal(convert_err("tests/pytorch/kineto_device_0.json", NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "kineto_device_0.json: no \"nodes\" list"));
    p = write_tmp("list.json", "[1, 2]");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "expected a PyTorch host execution trace"));
    p = write_tmp("empty.json", "  \n");
    assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "empty file"));
    assert_int_equal(convert_err("/nonexistent/host.json", NULL, -1, &err), ETK_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/host.json"));

    /* mismatched pairs: the MLP host trace with the transformer's profiler list (names align
     * for only 40 of 126 ops); the 1.0.2 trace (pid 788625) with a Kineto trace of pid 4242 */
    assert_int_equal(convert_err("tests/pytorch/mlp_host_et.json",
                                 "tests/pytorch/transformer_profiler.json", -1, &err),
                     ETK_EINVAL);
    assert_non_null(strstr(err.msg, "do not belong together: only 40 of 126 host ops"));
    assert_int_equal(convert_err(tu_data(DATA102), "tests/pytorch/kineto_device_0.json", -1, &err),
                     ETK_EINVAL);
    assert_non_null(strstr(err.msg, "pid 788625"));
    /* a device trace that is no trace, and a truncated one */
    assert_int_equal(convert_err("tests/pytorch/kineto_host_0.json",
                                 "tests/pytorch/kineto_host_0.json", -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "no \"traceEvents\" list"));
    b = tu_read("tests/pytorch/kineto_device_0.json", &len);
    b[len / 2] = 0;
    p = write_tmp("trunc_dev.json", (char *)b);
    free(b);
    assert_int_equal(convert_err("tests/pytorch/kineto_host_0.json", p, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "trunc_dev.json: truncated JSON"));
    p = write_tmp("badts.json", "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                  "\"k\", \"ts\": \"soon\"}]}");
    assert_int_equal(convert_err("tests/pytorch/kineto_host_0.json", p, -1, &err), ETK_EFORMAT);
    assert_non_null(strstr(err.msg, "traceEvents[0] \"k\""));
    assert_non_null(strstr(err.msg, "must be numbers"));
    static const struct {
        const char *text, *want;
    } dev_bad[] = {
        {"{\"traceEvents\": 5}", "\"traceEvents\" must be a list of events"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}, 3]}",
         "traceEvents[1] (line 1): expected an event object"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": 7}]}", "\"cat\" must be a string"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": 1, \"ts\": 1}]}",
         "\"name\" must be a string"},
        {"{\"traceEvents\": [] \"x\": 1}", "expected ',' or '}' in the top-level object"},
        {"\"just a string\"", "expected a Kineto trace"},
    };
    for (size_t i = 0; i < sizeof dev_bad / sizeof dev_bad[0]; i++) {
        p = write_tmp("dev_bad.json", dev_bad[i].text);
        assert_int_equal(convert_err("tests/pytorch/kineto_host_0.json", p, -1, &err), ETK_EFORMAT);
        if (!strstr(err.msg, dev_bad[i].want) || !strstr(err.msg, "dev_bad.json"))
            fail_msg("device case %zu: got \"%s\", want \"%s\"", i, err.msg, dev_bad[i].want);
    }
    /* host-side structure errors */
    static const struct {
        const char *text, *want;
    } host_bad[] = {
        {"{\"schema\": \"1.0.2\", \"nodes\": {}}", "\"nodes\" must be a list of node objects"},
        {"{\"schema\": 1, \"nodes\": []}", "\"schema\" must be a string"},
        {"{\"schema\": \"1.0.2\", \"nodes\": [3]}", "nodes[0] (line 1): expected a node object, got an integer"},
        {"{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": -4, \"name\": \"a\", \"ctrl_deps\": 1}]}",
         "\"id\" must be a non-negative integer"},
        {"{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 4, \"name\": \"a\", \"ctrl_deps\": 1, "
         "\"attrs\": [{\"name\": \"rf_id\", \"value\": \"x\"}]}]}",
         "attribute \"rf_id\" must be an integer, got a string"},
        {"{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 4, \"name\": \"a\", \"ctrl_deps\": 1, "
         "\"attrs\": 2}]}", "\"attrs\" must be a list of {name, type, value}"},
        {"{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 3, \"name\": \"## process_group:init ##\", "
         "\"ctrl_deps\": 1, \"inputs\": {\"values\": [\"not json\"]}}]}",
         "process_group:init: inputs.values[0] is not a JSON list of process groups"},
        {"{\"schema\": \"1.0.2\", \"nodes\": [{\"id\": 4, \"name\": \"a\" \"ctrl_deps\": 1}]}",
         "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof host_bad / sizeof host_bad[0]; i++) {
        p = write_tmp("host_bad.json", host_bad[i].text);
        assert_int_equal(convert_err(p, NULL, -1, &err), ETK_EFORMAT);
        if (!strstr(err.msg, host_bad[i].want) || !strstr(err.msg, "host_bad.json"))
            fail_msg("host case %zu: got \"%s\", want \"%s\"", i, err.msg, host_bad[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chakra_102_node_for_node),
        cmocka_unit_test(test_mlp_101),
        cmocka_unit_test(test_transformer_101),
        cmocka_unit_test(test_host_only_101),
        cmocka_unit_test(test_kineto_linking),
        cmocka_unit_test(test_threads_without_device),
        cmocka_unit_test(test_kineto_without_rf_ids),
        cmocka_unit_test(test_two_rank_job),
        cmocka_unit_test(test_write_files),
        cmocka_unit_test(test_host_durations_and_unknown_schema),
        cmocka_unit_test(test_pg_from_attrs),
        cmocka_unit_test(test_schema_names),
        cmocka_unit_test(test_coll_names),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
