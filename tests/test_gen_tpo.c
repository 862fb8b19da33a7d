/* test_gen_tpo.c — --tp-comm-overlap (Transformer Engine's userbuffers TP communication overlap,
 * docs/gen.md "TP communication overlap"): with sequence parallelism each all-gather + column-
 * parallel GEMM and each row-parallel GEMM + reduce-scatter of a layer runs as TP chunks, the
 * exchange of one chunk beside the GEMM of another; in the backward the dgrad's reduce-scatter
 * runs beside the weight-gradient GEMMs (bulk). Checked: the step's FLOPs and communicated bytes
 * are those without the flag (the chunks add up), the chunk counts in closed form; each chunk is
 * a GEMM of its own shape (1/n of the rows, the whole weight: its bytes and its compute-model
 * time in closed form); and the simulated times of the pipelined pairs against the
 * hand-computed pipeline on a cost model whose GEMM and transfer times are known (a GEMM of
 * FLOPs F and bytes Y: (F + HALF Y) / 10^6 ns, i.e. 10^15 FLOP/s times the compute model's shape
 * factor h / (h + HALF), h = F / Y; ring all-gather (n - 1) S / B, reduce-scatter
 * (n - 1) / n S / B). */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/compute.h"
#include "etkit/gen.h"
#include "gen_testlib.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "etkit/validate.h"

/* Same FLOPs (model and hardware, per stage) and the same bytes per group and collective type
 * with and without the flag; the chunk counts per layer per micro-batch: all-gathers 2 (n - 1)
 * forward (xn1, xn2) and 2 (n - 1) backward (the gradients of the attention and MLP outputs)
 * instead of 2 + 2, reduce-scatters 2 n forward instead of 2. */
static void test_tpo_totals(void **state)
{
    (void)state;
    struct {
        const char *line;
        uint64_t n, lm; /* tp, layers x micro-batches */
    } cases[] = {
        {"--model llama2-7b --layers 2 --tp 2 --sp --global-batch 2 --seq 2048", 2, 4},
        {"--model llama2-7b --layers 2 --tp 4 --sp --global-batch 2 --seq 2048 --precision fp8", 4, 4},
        {"--model llama2-7b --layers 3 --tp 4 --sp --global-batch 1 --seq 2048 --recompute selective --attention unfused", 4, 3},
        {"--model llama3-8b --layers 2 --tp 8 --sp --dp 2 --global-batch 4 --seq 4096 --zero 1", 8, 4},
        {"--model llama2-7b --layers 2 --tp 2 --cp 2 --sp --global-batch 1 --seq 4096 --cp-comm ring", 2, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s --tp-comm-overlap", cases[i].line);
        etk_gen_config c1, c2;
        etk_gen_summary s1, s2;
        summarize(cases[i].line, &c1, &s1);
        summarize(line, &c2, &s2);
        assert_true(c2.tp_comm_overlap && !c1.tp_comm_overlap);
        assert_true(fabs(s2.model_flops / s1.model_flops - 1) < 1e-12);
        assert_int_equal(s2.n_stages, s1.n_stages);
        for (uint32_t k = 0; k < s1.n_stages; k++) {
            const etk_gen_stage *a = &s1.stages[k], *b = &s2.stages[k];
            assert_true(fabs(b->flops / a->flops - 1) < 1e-12);
            assert_true(fabs(b->model_flops / a->model_flops - 1) < 1e-12);
            assert_int_equal(b->act_per_mb_bytes, a->act_per_mb_bytes);
            for (int g = 0; g < ETK_GEN_N_GROUP_KINDS; g++)
                for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
                    assert_int_equal(b->coll_bytes[g][t], a->coll_bytes[g][t]);
            uint64_t n = cases[i].n, lm = cases[i].lm;
            const int TP = ETK_GEN_GROUP_TP;
            assert_int_equal(b->coll_count[TP][ETK_COLL_ALL_GATHER] + 4 * lm,
                             a->coll_count[TP][ETK_COLL_ALL_GATHER] + 4 * (n - 1) * lm);
            assert_int_equal(b->coll_count[TP][ETK_COLL_REDUCE_SCATTER] + 2 * lm,
                             a->coll_count[TP][ETK_COLL_REDUCE_SCATTER] + 2 * n * lm);
        }
        etk_gen_summary_free(&s1);
        etk_gen_summary_free(&s2);
    }
    /* every rank of the chunked workloads passes the validator (ids, deps, matching, deadlock) */
    const char *plans[] = {
        "--model llama2-7b --layers 2 --tp 4 --sp --pp 2 --global-batch 4 --tp-comm-overlap",
        "--model llama2-7b --layers 2 --tp 2 --sp --global-batch 2 --recompute full --precision fp8 --tp-comm-overlap",
        "--model mixtral-8x7b --layers 2 --tp 2 --sp --ep 2 --dp 2 --global-batch 4 --seq 2048 --tp-comm-overlap",
    };
    gen_expect_valid(plans, sizeof plans / sizeof plans[0]);
}

static void test_tpo_errors(void **state)
{
    (void)state;
    assert_non_null(strstr(gen_plan_error("--model llama2-7b --tp 2 --tp-comm-overlap"), "--tp-comm-overlap needs --sp"));
    assert_non_null(strstr(gen_plan_error("--model llama2-7b --tp 2 --mode inference --tp-comm-overlap"),
                           "--tp-comm-overlap is a training option"));
}

/* the hand cost model: B bytes per ns on the TP group's links, GEMMs at 10^15 FLOP/s times the
 * shape factor h / (h + HALF) with h = FLOPs / bytes (the compute model's form with efficiency
 * 1: a chunk of 1/n of the rows that reads the whole weight has a smaller h and runs slower per
 * FLOP than the whole GEMM) */
#define HALF 512
static uint64_t cns2(uint64_t flops, uint64_t bytes) { return (flops + HALF * bytes + 500000) / 1000000; }
static uint64_t h_compute(void *ctx, const etk_cluster *c, uint64_t flops, uint64_t bytes)
{
    (void)ctx;
    (void)c;
    return flops ? cns2(flops, bytes) : 0;
}
static uint64_t h_coll(void *ctx, const etk_cluster *c, etk_coll_type t, uint64_t bytes, const uint32_t *ranks,
                       uint32_t n)
{
    (void)c;
    (void)ranks;
    double B = *(const double *)ctx;
    if (t == ETK_COLL_ALL_GATHER)
        return (uint64_t)llround((n - 1) * (double)bytes / B);
    if (t == ETK_COLL_REDUCE_SCATTER)
        return (uint64_t)llround((n - 1) * (double)bytes / (n * B));
    return 0;
}

typedef struct {
    etk_workload *w;
    etk_sim *s;
    double B;
    uint32_t n;
} hsim;

static const etk_node *node(const hsim *h, const char *name)
{
    const etk_trace *tr = h->w->ranks[0];
    for (size_t k = 0; k < tr->n_nodes; k++)
        if (!strcmp(tr->nodes[k].name, name))
            return &tr->nodes[k];
    fail_msg("no node %s", name);
    return NULL;
}
static uint64_t end_of(const hsim *h, const char *name)
{
    uint64_t e = 0;
    assert_int_equal(etk_sim_node_end(h->s, 0, node(h, name)->id, &e), 1);
    return e;
}
static uint64_t dur(const hsim *h, const char *name)
{
    const etk_node *n = node(h, name);
    if (n->type == ETK_NODE_COMP) {
        uint64_t f = (uint64_t)gen_node_flops(n), y = 0;
        etk_node_u64(n, "tensor_size", &y);
        return f ? cns2(f, y) : 0;
    }
    int64_t t = 0, b = 0;
    etk_node_i64(n, "comm_type", &t);
    etk_node_i64(n, "comm_size", &b);
    return h_coll((void *)&h->B, NULL, (etk_coll_type)t, (uint64_t)b, NULL, h->n);
}

static void hsim_run(hsim *h, const char *line, double B)
{
    etk_gen_config c;
    etk_error err = {0};
    cfg_from(&c, line);
    h->B = B;
    h->n = c.tp;
    if (etk_gen_workload(&c, false, &h->w, &err))
        fail_msg("%s", err.msg);
    etk_cluster cl;
    gen_test_cluster(&cl, c.n_ranks);
    etk_sim_costs costs = {.coll_ns = h_coll, .p2p_ns = gen_test_p2p_free, .compute_ns = h_compute, .ctx = &h->B};
    etk_sim_opts o;
    memset(&o, 0, sizeof o);
    o.no_fold = true;
    o.comm_stream_per_group = true;
    o.costs = &costs;
    if (etk_sim_workload(h->w, &cl, &o, &h->s, &err))
        fail_msg("%s: %s", line, err.msg);
}
static void hsim_free(hsim *h)
{
    etk_sim_free(h->s);
    etk_workload_free(h->w);
}

/* A GEMM group run in n chunks beside a chained all-gather of n - 1 chunks, all released at t0
 * (chunk 0 of every GEMM works on the local shard; chunk r of each GEMM once shard r arrived at
 * A_r = t0 + the first r all-gather chunks): one compute stream working whenever a chunk is
 * ready ends at max_r (A_r + the durations of all chunks r..n-1 of the group). */
static uint64_t ag_gemm_end(const hsim *h, uint64_t t0, const char *ag, const char *const *gemms, int ng)
{
    uint64_t best = 0, A = t0;
    char nm[128];
    for (uint32_t r = 0; r < h->n; r++) {
        if (r) {
            snprintf(nm, sizeof nm, "%s.tp%u", ag, r);
            A += dur(h, nm);
        }
        uint64_t S = 0;
        for (int g = 0; g < ng; g++)
            for (uint32_t k = r; k < h->n; k++) {
                snprintf(nm, sizeof nm, "%s.tp%u", gemms[g], k);
                S += dur(h, nm);
            }
        if (A + S > best)
            best = A + S;
    }
    return best;
}

/* A row-parallel GEMM's n chunks from t0, the reduce-scatter chunk r after GEMM chunk r and
 * chunk r - 1: R_r = max(P_r, R_{r-1}) + rs_r, P_r = t0 + the first r + 1 GEMM chunks. */
static uint64_t gemm_rs_end(const hsim *h, uint64_t t0, const char *gemm, const char *rs)
{
    uint64_t P = t0, R = 0;
    char nm[128];
    for (uint32_t r = 0; r < h->n; r++) {
        snprintf(nm, sizeof nm, "%s.tp%u", gemm, r);
        P += dur(h, nm);
        snprintf(nm, sizeof nm, "%s.tp%u", rs, r);
        R = (P > R ? P : R) + dur(h, nm);
    }
    return R;
}

/* llama2-7b, one layer, one micro-batch: the attention block's pairs, forward and backward, in
 * a compute-bound case (each chunk's transfer shorter than its GEMM: the transfers hidden but
 * the reduce-scatter's last chunk) and a transfer-bound one; without the flag the all-gather
 * and the reduce-scatter are on the chain whole. */
static void test_tpo_pipeline_times(void **state)
{
    (void)state;
    struct {
        const char *line;
        double B;
    } cases[] = {
        {"--model llama2-7b --layers 1 --tp 2 --sp --global-batch 1 --seq 2048", 1000},
        {"--model llama2-7b --layers 1 --tp 2 --sp --global-batch 1 --seq 2048", 100},
        {"--model llama2-7b --layers 1 --tp 4 --sp --global-batch 1 --seq 2048", 1000},
        {"--model llama2-7b --layers 1 --tp 4 --sp --global-batch 1 --seq 2048", 60},
    };
    const char *qkv[] = {"mb0.L0.q", "mb0.L0.k", "mb0.L0.v"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s --tp-comm-overlap", cases[i].line);
        hsim h;
        hsim_run(&h, line, cases[i].B);
        /* forward: all-gather of xn1 + the Q, K, V GEMMs */
        uint64_t t0 = end_of(&h, "mb0.L0.attn_norm");
        uint64_t want = ag_gemm_end(&h, t0, "mb0.L0.xn1.all_gather", qkv, 3), got = 0;
        char nm[64];
        for (int g = 0; g < 3; g++) {
            snprintf(nm, sizeof nm, "%s.tp%u", qkv[g], h.n - 1);
            uint64_t e = end_of(&h, nm);
            got = e > got ? e : got;
        }
        assert_int_equal(got, want);
        /* the pipeline hides something: ends before the serialized all-gather + GEMMs would */
        uint64_t serial = t0;
        for (uint32_t r = 1; r < h.n; r++) {
            snprintf(nm, sizeof nm, "mb0.L0.xn1.all_gather.tp%u", r);
            serial += dur(&h, nm);
        }
        for (int g = 0; g < 3; g++)
            for (uint32_t r = 0; r < h.n; r++) {
                snprintf(nm, sizeof nm, "%s.tp%u", qkv[g], r);
                serial += dur(&h, nm);
            }
        assert_true(got < serial);
        /* the attention projection + its reduce-scatter */
        uint64_t t1 = end_of(&h, "mb0.L0.flash_attn");
        snprintf(nm, sizeof nm, "mb0.L0.o.reduce_scatter.tp%u", h.n - 1);
        assert_int_equal(end_of(&h, nm), gemm_rs_end(&h, t1, "mb0.L0.proj", "mb0.L0.o.reduce_scatter"));
        /* backward: the projection's dgrad beside the all-gather of its output gradient */
        uint64_t t2 = end_of(&h, "mb0.L0.attn_res.bwd");
        const char *pd[] = {"mb0.L0.proj.dgrad"};
        snprintf(nm, sizeof nm, "mb0.L0.proj.dgrad.tp%u", h.n - 1);
        assert_int_equal(end_of(&h, nm), ag_gemm_end(&h, t2, "mb0.L0.do.all_gather", pd, 1));
        /* bulk: the reduce-scatter of dxn1 from the last dgrad, beside the three wgrads; the
         * norm's backward after both */
        uint64_t t3 = 0;
        for (int g = 0; g < 3; g++) {
            snprintf(nm, sizeof nm, "%s.dgrad", qkv[g]);
            uint64_t e = end_of(&h, nm);
            t3 = e > t3 ? e : t3;
        }
        uint64_t rs = t3 + dur(&h, "mb0.L0.dxn1.reduce_scatter"), wg = t3;
        for (int g = 0; g < 3; g++) {
            snprintf(nm, sizeof nm, "%s.wgrad", qkv[g]);
            wg += dur(&h, nm);
        }
        assert_int_equal(end_of(&h, "mb0.L0.dxn1.reduce_scatter"), rs);
        assert_int_equal(end_of(&h, "mb0.L0.attn_norm.bwd"), (rs > wg ? rs : wg) + dur(&h, "mb0.L0.attn_norm.bwd"));
        hsim_free(&h);

        /* without the flag: the whole all-gather, then the GEMMs; the GEMM, then the whole
         * reduce-scatter */
        hsim_run(&h, cases[i].line, cases[i].B);
        t0 = end_of(&h, "mb0.L0.attn_norm");
        uint64_t g = 0;
        for (int k = 0; k < 3; k++)
            g += dur(&h, qkv[k]);
        assert_int_equal(end_of(&h, "mb0.L0.v"), t0 + dur(&h, "mb0.L0.xn1.all_gather") + g);
        t1 = end_of(&h, "mb0.L0.flash_attn");
        assert_int_equal(end_of(&h, "mb0.L0.o.reduce_scatter"),
                         t1 + dur(&h, "mb0.L0.proj") + dur(&h, "mb0.L0.o.reduce_scatter"));
        hsim_free(&h);
    }
}

static uint64_t node_u64(const etk_trace *tr, const char *name, const char *attr)
{
    for (size_t k = 0; k < tr->n_nodes; k++)
        if (!strcmp(tr->nodes[k].name, name)) {
            uint64_t v = 0;
            assert_true(etk_node_u64(&tr->nodes[k], attr, &v));
            return v;
        }
    fail_msg("no node %s", name);
    return 0;
}

/* Each chunk is a GEMM of its own: llama2-7b (h = 4096), b = 1, s = 2048, TP n. Q (column
 * parallel, AG+GEMM): the whole GEMM is M x K x N = s x 4096 x 4096/n; chunk r computes s/n rows
 * and reads the whole weight: 2 (s/n K + K N + s/n N) bytes (BF16), 2 (s/n) K N FLOPs. The
 * projection (row parallel, GEMM+RS): s x 4096/n x 4096, chunk s/n rows; its dgrad chunks (AG +
 * dgrad) the same three matrices; the weight gradient (bulk, not chunked) keeps the whole
 * GEMM's bytes. The compute model then times a chunk at the shape measure
 * h = 1 / (n/s + 1/K + 1/N) (compute.h), here on an H100 at BF16 with explicit parameters:
 * max(F / (peak gemm_eff h / (h + half)), bytes / (HBM mem_eff)) + launch. */
static void test_tpo_chunk_shape(void **state)
{
    (void)state;
    const uint64_t s = 2048, H = 4096;
    etk_error err = {0};
    etk_cluster cl;
    if (etk_cluster_preset("dgx-h100", 1, &cl, &err))
        fail_msg("%s", err.msg);
    cl.precision = ETK_PREC_BF16;
    etk_compute_params p = {.gemm_eff = 0.8, .gemm_half_dim = 512, .gemm_min_dim = 16, .mem_eff = 0.8,
                            .score_mem_eff = 0.8, .attn_eff = 0.6, .launch_ns = 2000, .fp8_gemm_eff = 0.6,
                            .fp8_gemm_half_dim = 64, .attn_bwd_eff = 0.6};
    for (uint64_t n = 2; n <= 4; n += 2) {
        char line[256];
        snprintf(line, sizeof line, "--model llama2-7b --layers 1 --tp %" PRIu64 " --sp --global-batch 1 --seq 2048 --tp-comm-overlap", n);
        etk_gen_config c;
        etk_workload *w = NULL;
        cfg_from(&c, line);
        if (etk_gen_workload(&c, false, &w, &err))
            fail_msg("%s", err.msg);
        const etk_trace *tr = w->ranks[0];
        uint64_t M = s / n;
        struct {
            const char *name;
            uint64_t m, k, nn;
        } g[] = {{"mb0.L0.q", M, H, H / n}, {"mb0.L0.proj", M, H / n, H}, {"mb0.L0.proj.dgrad", M, H / n, H}};
        for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
            for (uint64_t r = 0; r < n; r++) {
                char nm[64];
                snprintf(nm, sizeof nm, "%s.tp%" PRIu64, g[i].name, r);
                uint64_t by = 2 * (g[i].m * g[i].k + g[i].k * g[i].nn + g[i].m * g[i].nn);
                uint64_t fl = 2 * g[i].m * g[i].k * g[i].nn;
                assert_int_equal(node_u64(tr, nm, "tensor_size"), by);
                assert_int_equal(node_u64(tr, nm, "num_ops"), fl);
                double h = 1 / (1.0 / (double)g[i].m + 1.0 / (double)g[i].k + 1.0 / (double)g[i].nn);
                double tc = (double)fl / (989e12 * 0.8 * h / (h + 512)) * 1e9, tm = (double)by / (3350e9 * 0.8) * 1e9;
                double want = (tc > tm ? tc : tm) + 2000;
                etk_op_desc op;
                etk_compute_op_from_node(node(&(hsim){.w = w}, nm), fl, by, &op);
                uint64_t got = etk_compute_op_ns(&cl, &p, &op);
                assert_true(fabs((double)got - want) <= 1);
                /* slower per FLOP than the whole GEMM (s rows): n chunks take longer than it */
                double hw = 1 / (1.0 / (double)s + 1.0 / (double)g[i].k + 1.0 / (double)g[i].nn);
                assert_true(h < hw);
            }
        /* the wgrad (not chunked): the whole GEMM's bytes, s x 4096 x 4096/n */
        assert_int_equal(node_u64(tr, "mb0.L0.q.wgrad", "tensor_size"), 2 * (s * H + H * H / n + s * H / n));
        etk_workload_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tpo_totals),
        cmocka_unit_test(test_tpo_errors),
        cmocka_unit_test(test_tpo_pipeline_times),
        cmocka_unit_test(test_tpo_chunk_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
