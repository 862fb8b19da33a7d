/* test_convert_real.c — the converter on PyTorch traces recorded on real GPUs by other projects
 * (../shared/data/real-traces, see its README) and on STAGE's traces: every trace goes through
 * the converter, the validator and the simulator, and the simulated iteration is asserted
 * against the iteration the trace itself measured (figures in bench/RESULTS.md, "Converter on
 * real traces"). A missing file fails the test naming it (tu_data). Also: FLOPs from shapes in
 * closed form per op, and the Kineto inputs that must be refused. */
#include "testutil.h"
#include "convert_testlib.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/cv.h"
#include "etkit/convert.h"
#include "etkit/et.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "etkit/validate.h"

#define RT "real-traces/"

static const char *prefix_of(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tu_tmpdir(), name);
    return p[k];
}

static void convert_ok(const char *host, const char *device, int64_t rank, int64_t n_ranks,
                       const char *prefix, etk_convert_stats *st)
{
    etk_convert_opts o = {host, device, rank, true, n_ranks, NULL};
    etk_error err = {0};
    if (etk_convert_pytorch_write(&o, prefix, st, &err))
        fail_msg("convert %s + %s: %s", host ? host : "-", device ? device : "-", err.msg);
}

static uint64_t validate_and_sim(const char *prefix, uint32_t want_ranks, uint32_t cpu_streams,
                                 double *flops)
{
    return cvt_validate_sim(prefix, want_ranks, cpu_streams, flops, NULL);
}

static double rel(double sim, double meas)
{
    return (sim - meas) / meas;
}

/* DLRM, 8x V100, two host threads: per-thread matching finds all 1,672 ops, the DDP all-reduce
 * (1,576,964 bytes: the first gradient bucket) is launched by nccl:all_reduce on every rank,
 * the all-to-alls are ALL_TO_ALL, validate passes and the simulated step lies between the
 * ranks' ProfilerStep spans: the ranks started up to 6.4 ms apart and all ended within 0.9 ms
 * (kineto_R.json), so the first starters' spans (19.9 ms) include waiting for the others and
 * the last starter's (12.5 ms) does not; the simulator starts every rank at 0. */
static void test_dlrm_8gpu(void **state)
{
    (void)state;
    const char *prefix = prefix_of("dlrm");
    for (int r = 0; r < 8; r++) {
        char h[64], d[64];
        snprintf(h, sizeof h, RT "dlrm-8gpu-v100/host_%d.json.gz", r);
        snprintf(d, sizeof d, RT "dlrm-8gpu-v100/kineto_%d.json.gz", r);
        char hp[1024];
        snprintf(hp, sizeof hp, "%s", tu_data(h));
        etk_convert_stats st;
        convert_ok(hp, tu_data(d), r, 8, prefix, &st);
        assert_int_equal(st.n_matched, 1672); /* every op of both threads */
        assert_int_equal(st.n_zero_dur, 0);
        assert_int_equal(st.n_type[ETK_NODE_COLL], 8);
        assert_int_equal(st.n_stream_wait_deps, 19);
        assert_int_equal(st.n_dropped_gpu, 0);
        /* the collectives: 5 all-to-alls (SendRecv kernels of nccl:all_to_all), 3 all-reduces */
        char et[600];
        snprintf(et, sizeof et, "%s.%d.et", prefix, r);
        etk_trace *t = NULL;
        etk_error err = {0};
        etk_read_opts ro = {.quiet = true};
        if (etk_trace_read(et, &ro, &t, &err))
            fail_msg("read %s: %s", et, err.msg);
        int a2a = 0, ar = 0;
        int64_t first_ar = -1;
        for (size_t i = 0; i < t->n_nodes; i++) {
            const etk_node *n = &t->nodes[i];
            int64_t ct = -1, cs = -1;
            if (n->type != ETK_NODE_COLL)
                continue;
            etk_node_i64(n, "comm_type", &ct);
            etk_node_i64(n, "comm_size", &cs);
            a2a += ct == ETK_COLL_ALL_TO_ALL;
            if (ct == ETK_COLL_ALL_REDUCE && ar++ == 0)
                first_ar = cs;
        }
        etk_trace_free(t);
        assert_int_equal(a2a, 5);
        assert_int_equal(ar, 3);
        assert_int_equal(first_ar, 1576964);
    }
    uint64_t step = validate_and_sim(prefix, 8, 2, NULL);
    printf("dlrm-8gpu-v100: simulated %.3f ms; ProfilerStep 12.509 (last starter) .. 19.901 ms\n",
           (double)step / 1e6);
    assert_true(step >= 12509000 && step <= 19901000);
}

/* linear on one 2080 Ti: a host trace of 1 iteration, a Kineto trace of 40. The GPU events
 * launched outside the matched ops' window are dropped (10,179 of 10,356), and the simulated
 * iteration is the matched (first) iteration's span within 1% (replayed durations; the rest is
 * rounding to whole microseconds and the 2 kernels without a launching op). */
static void test_linear_2080ti(void **state)
{
    (void)state;
    const char *prefix = prefix_of("linear");
    etk_convert_stats st;
    char hp[1024];
    snprintf(hp, sizeof hp, "%s", tu_data(RT "linear-2080ti/host.json.gz"));
    convert_ok(hp, tu_data(RT "linear-2080ti/kineto.json.gz"), -1, 1, prefix, &st);
    assert_int_equal(st.n_dropped_gpu, 10179);
    assert_int_equal(st.n_gpu_ops, 177);
    uint64_t step = validate_and_sim(prefix, 1, 2, NULL);
    double span = (double)st.trace_span_us * 1000.0;
    printf("linear-2080ti: simulated %.3f ms; matched iteration %.3f ms (%+.2f%%)\n",
           (double)step / 1e6, span / 1e6, 100 * rel((double)step, span));
    assert_true(fabs(rel((double)step, span)) < 0.01);
}

/* HTA's simple add on one A100: the span is mostly CUDA initialisation inside one op; replayed
 * within 0.1%. */
static void test_hta_simple_add(void **state)
{
    (void)state;
    const char *prefix = prefix_of("hta");
    etk_convert_stats st;
    char hp[1024];
    snprintf(hp, sizeof hp, "%s", tu_data(RT "hta-simple-add/host.json.gz"));
    convert_ok(hp, tu_data(RT "hta-simple-add/kineto.json.gz"), -1, 1, prefix, &st);
    uint64_t step = validate_and_sim(prefix, 1, 2, NULL);
    double span = (double)st.trace_span_us * 1000.0;
    printf("hta-simple-add: simulated %.3f ms; span %.3f ms\n", (double)step / 1e6, span / 1e6);
    assert_true(fabs(rel((double)step, span)) < 0.001);
}

/* ET+ (Chakra's old linker merged kernels into the host trace): refused with what it is. */
static void test_etplus_refused(void **state)
{
    (void)state;
    etk_convert_opts o = {tu_data(RT "dlrm-etplus-chakra-linked/host_0.json.gz"), NULL, -1, true,
                          1, NULL};
    etk_convert_stats st;
    etk_error err = {0};
    assert_int_not_equal(etk_convert_pytorch_write(&o, prefix_of("etp"), &st, &err), 0);
    assert_non_null(strstr(err.msg, "\"ET+\" file"));
    assert_non_null(strstr(err.msg, "host_0.json.gz: nodes["));
    assert_non_null(strstr(err.msg, "--host HOST_ET.json --device KINETO.json"));
}

/* One rank of a 2-rank job alone (host traces only): written as rank 0 with its group cut to
 * it; validates; the ResNet's convolutions and linear layer get FLOPs from their shapes and
 * run as GPU work, so the host-only trace no longer simulates to 0 ns. */
static void test_rank_alone(void **state)
{
    (void)state;
    const char *prefix = prefix_of("resnet");
    etk_convert_stats st;
    convert_ok(tu_data(RT "param-resnet-2gpu-1.1.0/host.json.gz"), NULL, -1, 1, prefix, &st);
    assert_int_equal(st.rank, 0);
    assert_int_equal(st.job_ranks, 2);
    assert_int_equal(st.n_groups, 1);
    assert_true(st.n_flop_gpu_ops > 100);
    double flops = 0;
    uint64_t step = validate_and_sim(prefix, 1, 2, &flops);
    printf("param-resnet rank alone: %zu ops with FLOPs, %.3g FLOPs, simulated %.3f ms\n",
           st.n_flop_ops, flops, (double)step / 1e6);
    assert_true(flops > 1e11);
    assert_true(step > 0);

    prefix = prefix_of("c102");
    convert_ok(tu_data("chakra/pytorch_host_et_1.0.2.json"), NULL, 1, 1, prefix, &st);
    assert_int_equal(st.rank, 0);
    assert_int_equal(st.orig_rank, 1);
    assert_int_equal(st.n_groups, 1);
    validate_and_sim(prefix, 1, 1, NULL);
}

/* Kineto traces alone: the last ProfilerStep with ops (or the whole trace) is converted;
 * NCCL kernels of a rank alone are replayed as GPU work. Tolerances: the host threads replay
 * their measured times exactly, so what remains is how the unrecorded CPU gaps and the time a
 * thread is blocked on another are attributed (docs/convert.md, "Kineto alone"): 1% where one
 * thread does the work, 10% for the DDP traces whose main thread blocks in backward(). */
typedef struct ko_case {
    const char *file;
    double measured_ms; /* the ProfilerStep (or, without one, the trace's span) */
    double tol;
    int64_t rank, job_ranks;
} ko_case;

static void test_kineto_only(void **state)
{
    (void)state;
    static const ko_case cases[] = {
        {"amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", 9.288291, 0.02, 0, 1},
        {"critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
         43425.283, 0.01, 0, 1},
        {"nccl_parser_config__nccl_data.json.gz", 224.936243, 0.10, 0, 2},
        {"timeline_analysis__sampled_rank-0.json.gz", 622.928, 0.06, 0, 128},
        {"trace_filter__sampled_rank-1.json.gz", 630.639, 0.06, 1, 128},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ko_case *k = &cases[i];
        char rp[256];
        snprintf(rp, sizeof rp, RT "kineto-only/%s", k->file);
        const char *prefix = prefix_of("ko");
        etk_convert_stats st;
        convert_ok(NULL, tu_data(rp), -1, 1, prefix, &st);
        assert_int_equal(st.orig_rank, k->rank);
        assert_int_equal(st.job_ranks, k->job_ranks);
        double meas = st.kineto_step_ns ? (double)st.kineto_step_ns / 1e6
                                         : (double)st.trace_span_us / 1e3;
        assert_true(fabs(meas - k->measured_ms) < 0.001);
        uint64_t step = validate_and_sim(prefix, 1, 2, NULL);
        double sim = (double)step / 1e6;
        printf("kineto-only %s: %s %.3f ms, simulated %.3f ms (%+.1f%%)\n", k->file,
               st.kineto_step[0] ? st.kineto_step : "span", meas, sim, 100 * rel(sim, meas));
        assert_true(fabs(rel(sim, meas)) < k->tol);
    }
}

static int convert_text(const char *kineto, etk_error *err)
{
    char path[600];
    snprintf(path, sizeof path, "%s/bad.json", tu_tmpdir());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(kineto, f);
    fclose(f);
    etk_convert_opts o = {NULL, path, -1, true, 1, NULL};
    etk_convert_stats st;
    return etk_convert_pytorch_write(&o, prefix_of("bad"), &st, err);
}

/* issue 18: negative dur, absurd ranks and numbers that do not fit are errors naming the file,
 * the field and what was wanted (they were 0, PREFIX.1099511627776.et, rank 0 and Infinity). */
static void test_kineto_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, "
         "\"dur\": -3}]}", "\"dur\" is negative (-3 us)"},
        {"{\"distributedInfo\": {\"rank\": 1099511627776, \"world_size\": 8}, \"traceEvents\": []}",
         "distributedInfo.rank must be an integer in [0, 8)"},
        {"{\"distributedInfo\": {\"rank\": -5}, \"traceEvents\": []}",
         "distributedInfo.rank must be an integer in [0, 16777216)"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1e300, "
         "\"dur\": 1}]}", "do not fit a 64-bit nanosecond time"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, "
         "\"dur\": 1}]}", "no cpu_op or user_annotation events"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        etk_error err = {0};
        assert_int_not_equal(convert_text(cases[i].text, &err), 0);
        if (!strstr(err.msg, cases[i].want) || !strstr(err.msg, "bad.json"))
            fail_msg("case %zu: got '%s', wanted '%s'", i, err.msg, cases[i].want);
    }
}

/* FLOPs from shapes, each against its closed form (a multiply-add = 2 FLOPs). */
static void test_flops_from_shapes(void **state)
{
    (void)state;
    uint64_t f, b;
    /* mm [64,128]x[128,32]: 2*64*128*32; bytes (64*128 + 128*32 + 64*32) * 4 */
    assert_true(cv_flops_from_shapes("aten::mm", "[[64,128],[128,32]]",
                                     "[\"Tensor(float)\",\"Tensor(float)\"]", NULL, &f, &b));
    assert_int_equal(f, 2ull * 64 * 128 * 32);
    assert_int_equal(b, (64ull * 128 + 128 * 32 + 64 * 32) * 4);
    /* addmm(bias[32], A[64,128], B[128,32]) in half precision */
    assert_true(cv_flops_from_shapes("aten::addmm", "[[32],[64,128],[128,32],[],[]]",
                                     "[\"Tensor(c10::Half)\",\"Tensor(c10::Half)\","
                                     "\"Tensor(c10::Half)\",\"Int\",\"Int\"]", NULL, &f, &b));
    assert_int_equal(f, 2ull * 64 * 128 * 32);
    assert_int_equal(b, (32ull + 64 * 128 + 128 * 32 + 64 * 32) * 2);
    /* bmm [8,64,128]x[8,128,32]; baddbmm(in, A, B) */
    assert_true(cv_flops_from_shapes("aten::bmm", "[[8,64,128],[8,128,32]]", NULL, NULL, &f, &b));
    assert_int_equal(f, 2ull * 8 * 64 * 128 * 32);
    assert_true(cv_flops_from_shapes("aten::baddbmm", "[[8,64,32],[8,64,128],[8,128,32]]", NULL,
                                     NULL, &f, &b));
    assert_int_equal(f, 2ull * 8 * 64 * 128 * 32);
    /* matmul: batch broadcast [4,8,64,128]x[128,32]; vector x matrix [128]x[128,32] */
    assert_true(cv_flops_from_shapes("aten::matmul", "[[4,8,64,128],[128,32]]", NULL, NULL, &f,
                                     &b));
    assert_int_equal(f, 2ull * 32 * 64 * 128 * 32);
    assert_true(cv_flops_from_shapes("aten::matmul", "[[128],[128,32]]", NULL, NULL, &f, &b));
    assert_int_equal(f, 2ull * 128 * 32);
    /* linear x[16,10,512], W[2048,512]: 2*160*512*2048 */
    assert_true(cv_flops_from_shapes("aten::linear", "[[16,10,512],[2048,512],[2048]]", NULL, NULL,
                                     &f, &b));
    assert_int_equal(f, 2ull * 160 * 512 * 2048);
    /* conv2d x[32,64,56,56], W[128,64,3,3], stride 2, padding 1: out 28x28 */
    assert_true(cv_flops_from_shapes("aten::conv2d", "[[32,64,56,56],[128,64,3,3],[],[],[],[],[]]",
                                     NULL, "[\"<t>\",\"<t>\",null,[2,2],[1,1],[1,1],1]", &f, &b));
    assert_int_equal(f, 2ull * 32 * 128 * 28 * 28 * 64 * 9);
    /* without values: stride 1, "same" padding (out = in) */
    assert_true(cv_flops_from_shapes("aten::convolution", "[[1,3,8,8],[4,3,3,3]]", NULL, NULL, &f,
                                     &b));
    assert_int_equal(f, 2ull * 1 * 4 * 64 * 3 * 9);
    /* attention q[2,16,1024,64], k[2,16,2048,64]: 4*B*H*L*S*D */
    assert_true(cv_flops_from_shapes("aten::scaled_dot_product_attention",
                                     "[[2,16,1024,64],[2,16,2048,64],[2,16,2048,64]]", NULL, NULL,
                                     &f, &b));
    assert_int_equal(f, 4ull * 2 * 16 * 1024 * 2048 * 64);
    assert_true(cv_flops_from_shapes("aten::_scaled_dot_product_flash_attention",
                                     "[[1,8,512,128],[1,8,512,128],[1,8,512,128]]", NULL, NULL, &f,
                                     &b));
    assert_int_equal(f, 4ull * 8 * 512 * 512 * 128);
    /* not from shapes: elementwise ops, mismatched inner dimensions */
    assert_false(cv_flops_from_shapes("aten::add", "[[4,4],[4,4]]", NULL, NULL, &f, &b));
    assert_false(cv_flops_from_shapes("aten::mm", "[[4,5],[4,4]]", NULL, NULL, &f, &b));
}

/* STAGE's trace: detected by the simulator CLI; here the units themselves: --stage-units
 * doubles only the matmuls' num_ops (op_type "M", MACs): the 8 rank files hold
 * 2,847,563,317,248 FLOPs of matmuls and 2,587,885,568 of other ops (summed from the files),
 * so 2 x 2,847,563,317,248 + 2,587,885,568 = 5,697,714,520,064. */
static void test_stage_units(void **state)
{
    (void)state;
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s", tu_data("stage/gpt_small_dp2_tp2_pp2/workload.0.et"));
    prefix[strlen(prefix) - 5] = 0;
    etk_workload *w = NULL;
    etk_error err = {0};
    etk_read_opts ro = {.quiet = true};
    if (etk_workload_open(prefix, NULL, &ro, &w, &err))
        fail_msg("open %s: %s", prefix, err.msg);
    etk_cluster c;
    assert_int_equal(etk_cluster_preset("dgx-h100", 1, &c, &err), 0);
    etk_sim_opts so = {0};
    so.quiet = true;
    so.stage_units = true;
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &c, &so, &s, &err))
        fail_msg("simulate: %s", err.msg);
    assert_true(etk_sim_result_get(s)->flops_per_step == 5697714520064.0);
    etk_sim_free(s);
    etk_workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dlrm_8gpu),        cmocka_unit_test(test_linear_2080ti),
        cmocka_unit_test(test_hta_simple_add),   cmocka_unit_test(test_etplus_refused),
        cmocka_unit_test(test_rank_alone),       cmocka_unit_test(test_kineto_only),
        cmocka_unit_test(test_kineto_bad_values), cmocka_unit_test(test_flops_from_shapes),
        cmocka_unit_test(test_stage_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
