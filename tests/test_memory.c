/* test_memory.c — memory over time in the simulator (src/sim/memory.c): a hand-built trace
 * with known allocations and releases gives the exact peak, its moment and op, the OOM verdict
 * against the GPU's HBM and a Perfetto counter track; folded ranks report their class's peak. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/sim.h"
#include "sim_testlib.h"
#include "testutil.h"

static etk_cluster cl(uint32_t n, uint64_t hbm)
{
    etk_cluster c;
    etk_cluster_init(&c);
    snprintf(c.name, sizeof c.name, "test");
    c.n_dims = 1;
    c.dims[0].size = n;
    c.dims[0].topo = ETK_TOPO_SWITCH;
    c.dims[0].bw_Bps = 100e9;
    c.dims[0].latency_ns = 1000;
    c.n_npus = n;
    c.gpu.peak_flops[ETK_PREC_BF16] = 1000e12;
    c.gpu.hbm_bw_Bps = 2000e9;
    c.gpu.hbm_bytes = hbm;
    return c;
}

/* a chain of COMP nodes with durations (us), allocations and releases (bytes) */
static void mnode(etk_trace *t, uint64_t id, const char *name, uint64_t us, uint64_t alloc,
                  uint64_t fr)
{
    sb_node b;
    sb_begin(&b, id, ETK_NODE_COMP, name);
    b.n.duration_micros = us;
    if (id > 1)
        sb_dep(&b, id - 1);
    if (alloc)
        sb_attr(&b, etk_attr_u64("mem_alloc_bytes", alloc));
    if (fr)
        sb_attr(&b, etk_attr_u64("mem_free_bytes", fr));
    etk_trace_add(t, &b.n);
}

/* weights 4 GB at t = 0; micro-batch 0 forward keeps 3 GB (t = 10 us), micro-batch 1 keeps
 * 2 GB (t = 20 us): 9 GB, the peak, reached by "fwd1" at 20,000 ns; the backwards release them
 * at their ends (50 us, 70 us: back to 4 GB); a last 1 GB buffer at 70 us gives 5 GB. */
static etk_workload *mem_workload(uint32_t n)
{
    etk_workload *w = sb_workload(n);
    for (uint32_t r = 0; r < n; r++) {
        etk_trace *t = etk_trace_new("0.0.4");
        mnode(t, 1, "weights", 10, 4000000000ull, 0);
        mnode(t, 2, "fwd0", 10, 3000000000ull, 0);
        mnode(t, 3, "fwd1", 10, 2000000000ull, 0);
        mnode(t, 4, "bwd1", 20, 0, 2000000000ull);
        mnode(t, 5, "bwd0", 20, 0, 3000000000ull);
        mnode(t, 6, "buffer", 5, 1000000000ull, 0);
        w->ranks[r] = t;
    }
    return w;
}

static etk_sim *run(etk_workload *w, uint64_t hbm, bool timeline)
{
    etk_cluster c = cl(w->n_ranks, hbm);
    etk_sim_opts o = {.timeline = timeline};
    etk_sim *s = NULL;
    etk_error err = {0};
    if (etk_sim_workload(w, &c, &o, &s, &err) != 0)
        fail_msg("simulation failed: %s", err.msg);
    return s;
}

static void exact_peak(void **st)
{
    (void)st;
    etk_workload *w = mem_workload(1);
    etk_sim *s = run(w, 10000000000ull, false);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_int_equal(r->step_ns, 75000);
    assert_true(r->mem_tracked);
    assert_int_equal(r->mem_peak_bytes, 9000000000ull);
    assert_int_equal(r->ranks[0].mem_peak_ns, 20000);
    assert_int_equal(r->ranks[0].mem_peak_node, 3);
    assert_string_equal(r->mem_peak_op, "fwd1");
    assert_int_equal(r->mem_oom_ranks, 0); /* 9 GB fits in 10 GB */
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    etk_sim_print_text(r, f);
    fclose(f);
    assert_non_null(strstr(txt, "memory peak    8.38 GiB (9,000,000,000 bytes) on rank 0 at 0.020 ms, op 'fwd1'; HBM 9.31 GiB: fits"));
    free(txt);
    etk_sim_free(s);
    etk_workload_free(w);
}

static void oom_predicted(void **st)
{
    (void)st;
    /* 8 GB of HBM: the 9 GB peak does not fit on any of the 4 (folded) ranks */
    etk_workload *w = mem_workload(4);
    etk_sim *s = run(w, 8000000000ull, false);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_true(r->folded);
    assert_int_equal(r->mem_oom_ranks, 4);
    assert_int_equal(r->ranks[3].mem_peak_bytes, 9000000000ull);
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    assert_int_equal(etk_sim_print_json(r, f), 0);
    fclose(f);
    assert_non_null(strstr(txt, "\"oom_ranks\": 4"));
    assert_non_null(strstr(txt, "\"peak_op\": \"fwd1\""));
    free(txt);
    etk_sim_free(s);
    etk_workload_free(w);
}

static void counter_track(void **st)
{
    (void)st;
    /* the counter samples: 4e9 at 0, 7e9 at 10 us, 9e9 at 20 us, 7e9 at 50 us, then at 70 us
     * the release of 3 GB and the 1 GB allocation at the same moment: one sample, 5e9 */
    etk_workload *w = mem_workload(1);
    etk_sim *s = run(w, 10000000000ull, true);
    char path[512];
    snprintf(path, sizeof path, "%s/tl.json", tu_tmpdir());
    etk_error err = {0};
    assert_int_equal(etk_sim_write_timeline(s, path, &err), 0);
    size_t len;
    char *txt = (char *)tu_read(path, &len);
    const char *want[] = {
        "{\"ph\":\"C\",\"pid\":0,\"name\":\"memory\",\"ts\":0.000,\"args\":{\"allocated_bytes\":4000000000}}",
        "\"ts\":10.000,\"args\":{\"allocated_bytes\":7000000000}}",
        "\"ts\":20.000,\"args\":{\"allocated_bytes\":9000000000}}",
        "\"ts\":50.000,\"args\":{\"allocated_bytes\":7000000000}}",
        "\"ts\":70.000,\"args\":{\"allocated_bytes\":5000000000}}",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(txt, want[i]))
            fail_msg("timeline lacks %s", want[i]);
    size_t nc = 0;
    for (const char *p = txt; (p = strstr(p, "\"ph\":\"C\"")); p++)
        nc++;
    assert_int_equal(nc, 5);
    free(txt);
    etk_sim_free(s);
    etk_workload_free(w);
}

static void untracked_trace(void **st)
{
    (void)st;
    /* no attributes: no memory figures, no memory line */
    etk_workload *w = sb_workload(1);
    etk_trace *t = etk_trace_new("0.0.4");
    sb_comp(t, 1, 10, 0, 0, NULL, 0);
    w->ranks[0] = t;
    etk_sim *s = run(w, 1, false);
    const etk_sim_result *r = etk_sim_result_get(s);
    assert_false(r->mem_tracked);
    assert_int_equal(r->mem_oom_ranks, 0);
    etk_sim_free(s);
    etk_workload_free(w);
}

/* The generator's allocation attributes, simulated, against its own static estimate
 * (etk_gen_summarize: weights + gradients + optimizer + comm buffers + activations of the
 * micro-batches in flight at the peak). Non-interleaved 1F1B and GPipe: every stage's simulated
 * peak equals the estimate to the byte (the schedule holds exactly warm-up + 1 micro-batches).
 * Interleaved (--vpp 2): the estimate spreads the embedding's and the head's activations evenly
 * over a stage's chunks, the simulation holds them with the chunk that has them; in this small
 * model (8 layers, vocabulary 32,000: the head's logits weigh) that is 2.3% on the last stage
 * (2.2% with --attention unfused), so the bound is 3% (on gpt3-175b --vpp 3 the difference is
 * 0.03%, docs/compute-model.md). */
static void gen_peak_matches_estimate(void **st)
{
    (void)st;
    const char *sched[3][2] = {{"schedule", "1f1b"}, {"schedule", "gpipe"}, {"vpp", "2"}};
    for (int k = 0; k < 3; k++) {
        etk_gen_config cfg;
        etk_gen_config_init(&cfg);
        etk_error err = {0};
        const char *kv[][2] = {{"model", "llama2-7b"}, {"layers", "8"}, {"seq", "1024"},
                               {"tp", "2"}, {"pp", "4"}, {"dp", "1"}, {"micro-batch", "1"},
                               {"global-batch", "16"}, {sched[k][0], sched[k][1]}};
        for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
            if (etk_gen_set(&cfg, kv[i][0], kv[i][1], &err) != 0)
                fail_msg("%s", err.msg);
        if (etk_gen_check(&cfg, &err) != 0)
            fail_msg("%s", err.msg);
        etk_gen_summary sum;
        assert_int_equal(etk_gen_summarize(&cfg, &sum, &err), 0);
        etk_workload *w = NULL;
        assert_int_equal(etk_gen_workload(&cfg, true, &w, &err), 0);
        etk_cluster c;
        assert_int_equal(etk_cluster_preset("dgx-a100", 1, &c, &err), 0);
        etk_sim_opts o = {.comm_streams = 2};
        etk_sim *s = NULL;
        if (etk_sim_workload(w, &c, &o, &s, &err) != 0)
            fail_msg("%s", err.msg);
        const etk_sim_result *r = etk_sim_result_get(s);
        assert_true(r->mem_tracked);
        for (uint32_t p = 0; p < 4; p++) {
            uint64_t est = sum.stages[p].total_bytes;
            uint64_t got = r->ranks[etk_gen_rank(&cfg, 0, 0, p)].mem_peak_bytes;
            if (k < 2)
                assert_int_equal(got, est);
            else if (fabs((double)got - (double)est) > 0.03 * (double)est)
                fail_msg("vpp 2 stage %u: simulated peak %llu, estimate %llu", p,
                         (unsigned long long)got, (unsigned long long)est);
        }
        etk_sim_free(s);
        etk_workload_free(w);
        etk_gen_summary_free(&sum);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_peak),
        cmocka_unit_test(oom_predicted),
        cmocka_unit_test(counter_track),
        cmocka_unit_test(untracked_trace),
        cmocka_unit_test(gen_peak_matches_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
