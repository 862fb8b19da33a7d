/* compute.c — the compute model (etkit/compute.h): kernel time of a COMP node from what the op
 * is (GEMM with its shape, memory-bound elementwise/normalization, fused attention) plus a
 * per-kernel overhead. sim/engine.c calls etk_compute_op_ns for GPU nodes without a duration
 * when etk_sim_opts.compute is set; otherwise the plain roofline (roofline.c) is used.
 * The defaults and where each comes from are in docs/compute-model.md. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/compute.h"
#include "etkit/model.h"

void etk_compute_defaults(const etk_gpu *gpu, etk_compute_params *p)
{
    /* A100 figures; gemm_eff and score_mem_eff are fitted to spec/calibration.md
     * (bench/RESULTS.md, "## Fidelity"); the others, mem_eff included, are fixed from the
     * literature. Every other GPU's figure comes from spec/kernels-measured.md (the section is
     * named beside it); docs/compute-model.md has the table. */
    p->gemm_eff = 0.78;
    p->gemm_half_dim = 64;
    p->gemm_min_dim = 16;
    p->mem_eff = 0.85;
    p->score_mem_eff = 0.28;
    p->attn_eff = 0.55;      /* FA2 fwd+bwd A100 hd128 causal 4k: 173 of 312 TFLOP/s (sec. 3) */
    p->launch_ns = 2000;
    p->overlap_slowdown = 0.10;
    p->fp8_gemm_eff = 0;     /* no FP8 on A100: gemm_eff */
    p->fp8_gemm_half_dim = 150; /* H100 FP8 at M = 128 (vLLM N 12288 K 5376: 582 TFLOP/s;
                                   DeepGEMM N 7168 K 16384: 645): 0.29-0.33 of peak (sec. 1) */
    p->attn_bwd_eff = 0;     /* attn_eff */
    /* grouped expert GEMMs (BF16, H100, sec. 2): 128 experts of 512 rows, K 2048 N 1536: 160.5
     * TFLOP/s (CUTLASS grouped; h = 323: 0.162 of peak -> 1272); FFN 768 H 2048, 2048 rows per
     * expert: torch._grouped_mm 242 (h = 436: 0.245 -> 988); about the mean */
    p->grouped_gemm_half_dim = 1100;
    p->attn_half_seq = 0;
    p->attn_ref_seq = 0;
    p->grouped_fp8_wgrad_factor = 1; /* no measured figure but B200's (below) */
    p->host_op_ns = 0;       /* off: the host is taken to run ahead (docs/compute-model.md, "The host") */
    p->attn_half_dim = 54;   /* FA3 fwd hd64 / hd256 against hd128: 0.77 / 1.17 (sec. 3) */
    if (!gpu)
        return;
    const char *n = gpu->name;
    if (strstr(n, "H100") || strstr(n, "H200") || strstr(n, "h100") || strstr(n, "h200")) {
        p->gemm_eff = 0.80;      /* MAMF 794.5 of 989; square 4096-8192: 789-798 (sec. 1) */
        /* MAMF e4m3 1402.6 (H100) / 1453.4 (H200) of 1979 (sec. 1) */
        p->fp8_gemm_eff = strstr(n, "200") ? 0.73 : 0.71;
        p->mem_eff = 0.80;       /* memory-bound FP8 GEMMs 2.1-2.7 of 3.35 TB/s (sec. 4) */
        /* in-step FlashAttention-3, Llama-3.1-8B 8k: 447 TFLOP/s fwd+bwd (sec. 3), split by
         * the isolated FA3 causal fwd/bwd ratio at 8k (602 / 559) */
        p->attn_eff = 0.475;
        p->attn_bwd_eff = 0.44;
        /* FA3 causal hd128 fwd by length, 292 TFLOP/s at 512 to 616 at 16k: s/(s + 610)
         * (sec. 3), relative to the 8k of the in-step figure above */
        p->attn_half_seq = 610;
        p->attn_ref_seq = 8192;
        p->launch_ns = 3000;     /* raw cuLaunchKernel 3.0 us (sec. 7) */
    } else if (strstr(n, "B200") || strstr(n, "b200")) {
        p->gemm_eff = 0.77;      /* MAMF 1745 of 2250 (sec. 1) */
        p->fp8_gemm_eff = 0.76;  /* MAMF e4m3 3432.5 of 4500 (sec. 1) */
        p->mem_eff = 0.80;       /* MXFP8 cast 16384^2: 6.46 TB/s of 8 (sec. 4) */
        /* in-step FlashAttention-4, the same job: 834 TFLOP/s fwd+bwd (sec. 3) */
        p->attn_eff = 0.39;
        p->attn_bwd_eff = 0.36;
        /* FA4 / FA3 causal fwd+bwd 1.88x at 8k, 1.95x at 32k (sec. 3): FA3's length curve */
        p->attn_half_seq = 610;
        p->attn_ref_seq = 8192;
        p->launch_ns = 3000;
        /* MXFP8 grouped GEMM, 131072 tokens, K 7168 N 2048, 8 groups: wgrad (2D-2D scaling)
         * 2103 us against the forward's 1671 at the same FLOPs (dgrad 1683) (sec. 2) */
        p->grouped_fp8_wgrad_factor = 1.26;
    } else if (strstr(n, "MI300") || strstr(n, "mi300")) {
        p->attn_eff = 0.40;      /* assumption: no measured figure in the spec */
        p->fp8_gemm_eff = 0.60;  /* assumption */
    }
    /* the GPU YAML's compute: mapping (names checked when it was loaded) */
    for (uint32_t i = 0; i < gpu->n_compute && i < ETK_GPU_MAX_COMPUTE; i++)
        etk_compute_set_value(p, gpu->compute[i].name, gpu->compute[i].value, NULL);
}

typedef struct field {
    const char *name;
    size_t off;
    double lo, hi;
    bool lo_open;
    const char *expect;
} field;

#define F(x) offsetof(etk_compute_params, x)
static const field fields[] = {
    {"gemm_eff", F(gemm_eff), 1e-3, 1, false, "a fraction in [0.001, 1]"},
    {"gemm_half_dim", F(gemm_half_dim), 0, 1e9, false, "a dimension in [0, 1e9]"},
    {"gemm_min_dim", F(gemm_min_dim), 0, 1e9, false, "a dimension in [0, 1e9]"},
    {"mem_eff", F(mem_eff), 1e-3, 1, false, "a fraction in [0.001, 1]"},
    {"score_mem_eff", F(score_mem_eff), 1e-3, 1, false, "a fraction in [0.001, 1]"},
    {"attn_eff", F(attn_eff), 1e-3, 1, false, "a fraction in [0.001, 1]"},
    {"launch_ns", F(launch_ns), 0, 1e9, false, "nanoseconds in [0, 1e9]"},
    {"overlap_slowdown", F(overlap_slowdown), 0, 100, false, "a factor in [0, 100]"},
    {"fp8_gemm_eff", F(fp8_gemm_eff), 0, 1, false, "a fraction in [0, 1] (0: gemm_eff)"},
    {"fp8_gemm_half_dim", F(fp8_gemm_half_dim), 0, 1e9, false, "a dimension in [0, 1e9]"},
    {"attn_bwd_eff", F(attn_bwd_eff), 0, 1, false, "a fraction in [0, 1] (0: attn_eff)"},
    {"attn_half_seq", F(attn_half_seq), 0, 1e9, false, "a sequence length in [0, 1e9]"},
    {"grouped_gemm_half_dim", F(grouped_gemm_half_dim), 0, 1e9, false, "a dimension in [0, 1e9]"},
    {"attn_half_dim", F(attn_half_dim), 0, 1e9, false, "a head dimension in [0, 1e9]"},
    {"attn_ref_seq", F(attn_ref_seq), 0, 1e9, false, "a sequence length in [0, 1e9]"},
    {"grouped_fp8_wgrad_factor", F(grouped_fp8_wgrad_factor), 0, 100, false, "a factor in [0, 100] (0: 1)"},
    {"host_op_ns", F(host_op_ns), 0, 1e9, false, "nanoseconds in [0, 1e9] (0: the host never delays a kernel)"},
};
#undef F
#define N_FIELDS (sizeof fields / sizeof fields[0])

static double *fld(etk_compute_params *p, size_t i)
{
    return (double *)((char *)p + fields[i].off);
}

int etk_compute_check(const etk_compute_params *p, etk_error *err)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        double v = *fld((etk_compute_params *)p, i);
        bool ok = isfinite(v) && v <= fields[i].hi &&
                  (fields[i].lo_open ? v > fields[i].lo : v >= fields[i].lo);
        if (!ok)
            return etk_err(err, ETK_EINVAL, "compute model: %s: expected %s, got %g",
                           fields[i].name, fields[i].expect, v);
    }
    return 0;
}

const char *etk_compute_param_names(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (size_t i = 0; i < N_FIELDS && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", fields[i].name);
    }
    return buf;
}

int etk_compute_set_value(etk_compute_params *p, const char *name, double v, etk_error *err)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (strcmp(fields[i].name, name) != 0)
            continue;
        etk_compute_params t = *p;
        *fld(&t, i) = v;
        int rc = etk_compute_check(&t, err);
        if (rc)
            return rc;
        *p = t;
        return 0;
    }
    return etk_err(err, ETK_EINVAL, "compute parameter '%s' is unknown; expected one of %s", name,
                   etk_compute_param_names());
}

int etk_compute_set(etk_compute_params *p, const char *s, etk_error *err)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s)
        return etk_err(err, ETK_EINVAL,
                       "compute parameter '%s': expected NAME=VALUE (e.g. gemm_eff=0.8)", s);
    size_t len = (size_t)(eq - s);
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (strlen(fields[i].name) != len || strncmp(fields[i].name, s, len) != 0)
            continue;
        char *end = NULL;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end)
            return etk_err(err, ETK_EINVAL, "compute parameter %s: expected %s, got '%s'",
                           fields[i].name, fields[i].expect, eq + 1);
        return etk_compute_set_value(p, fields[i].name, v, err);
    }
    return etk_err(err, ETK_EINVAL, "compute parameter '%.*s' is unknown; expected one of %s",
                   (int)len, s, etk_compute_param_names());
}

int etk_compute_get(const etk_compute_params *p, const char *name, double *out, etk_error *err)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].name, name) == 0) {
            *out = *fld((etk_compute_params *)p, i);
            return 0;
        }
    return etk_err(err, ETK_EINVAL, "compute parameter '%s' is unknown", name);
}

void etk_compute_op_from_node(const etk_node *e, uint64_t flops, uint64_t bytes, etk_op_desc *op)
{
    memset(op, 0, sizeof *op);
    op->flops = flops;
    op->bytes = bytes;
    const char *k = etk_node_str(e, "op_kind");
    if (k) {
        if (!strcmp(k, "gemm"))
            op->kind = ETK_OP_GEMM;
        else if (!strcmp(k, "elementwise") || !strcmp(k, "norm"))
            op->kind = ETK_OP_ELEMENTWISE;
        else if (!strcmp(k, "attention"))
            op->kind = ETK_OP_ATTENTION;
    }
    etk_node_i64(e, "gemm_m", &op->m);
    etk_node_i64(e, "gemm_n", &op->n);
    etk_node_i64(e, "gemm_k", &op->k);
    etk_node_i64(e, "attn_b", &op->attn_b);
    etk_node_i64(e, "attn_s", &op->attn_s);
    etk_node_i64(e, "attn_heads", &op->attn_heads);
    etk_node_i64(e, "attn_d", &op->attn_d);
    etk_node_bool(e, "attn_causal", &op->attn_causal);
    etk_node_i64(e, "attn_window", &op->attn_window);
    etk_node_bool(e, "attn_bwd", &op->attn_bwd);
    etk_node_bool(e, "attn_scores", &op->attn_scores);
    const char *pr = etk_node_str(e, "precision");
    op->fp8 = pr && !strcmp(pr, "fp8");
    int pp = pr && !op->fp8 ? etk_precision_parse(pr) : -1;
    op->prec_plus1 = pp >= 0 ? pp + 1 : 0;
    etk_node_bool(e, "gemm_grouped", &op->grouped);
    etk_node_bool(e, "gemm_wgrad", &op->wgrad);
}

/* the shape measure h = 1/(1/M + 1/N + 1/K); from FLOPs per byte without a shape (2-byte
 * elements: exactly h; FP8, 1-byte inputs and a 2-byte output: 2/3 of it, exact for a square
 * GEMM) */
static double shape_dim(const etk_op_desc *op)
{
    if (op->m > 0 && op->n > 0 && op->k > 0)
        return 1.0 / (1.0 / (double)op->m + 1.0 / (double)op->n + 1.0 / (double)op->k);
    if (op->bytes == 0)
        return op->flops ? INFINITY : 0;
    return (double)op->flops / (double)op->bytes * (op->fp8 ? 2.0 / 3.0 : 1.0);
}

int etk_compute_op_kind(const etk_compute_params *p, const etk_op_desc *op)
{
    if (op->kind == ETK_OP_GEMM || op->kind == ETK_OP_ELEMENTWISE || op->kind == ETK_OP_ATTENTION)
        return op->kind;
    if (op->m > 0 && op->n > 0 && op->k > 0)
        return ETK_OP_GEMM;
    return shape_dim(op) >= p->gemm_min_dim ? ETK_OP_GEMM : ETK_OP_ELEMENTWISE;
}

uint64_t etk_compute_op_ns(const etk_cluster *c, const etk_compute_params *p, const etk_op_desc *op)
{
    int pr = (int)c->precision;
    if (pr < 0 || pr >= ETK_PREC_COUNT)
        pr = ETK_PREC_BF16;
    /* a node naming its precision (not FP8, below) runs at that peak where the GPU has one */
    if (op->prec_plus1 > 0 && op->prec_plus1 <= ETK_PREC_COUNT && op->prec_plus1 - 1 != ETK_PREC_FP8 &&
        c->gpu.peak_flops[op->prec_plus1 - 1] > 0)
        pr = op->prec_plus1 - 1;
    double peak = c->gpu.peak_flops[pr];
    /* an FP8 GEMM: the FP8 peak (where the GPU has one) at the FP8 efficiency; a cluster whose
     * precision is fp8 runs every GEMM so */
    bool fp8 = (op->fp8 && c->gpu.peak_flops[ETK_PREC_FP8] > 0) || pr == ETK_PREC_FP8;
    if (fp8)
        peak = c->gpu.peak_flops[ETK_PREC_FP8];
    double bw = c->gpu.hbm_bw_Bps * p->mem_eff;
    double flops = (double)op->flops, bytes = (double)op->bytes;
    double t = 0; /* seconds */
    int kind = etk_compute_op_kind(p, op);
    if (kind == ETK_OP_ELEMENTWISE && op->attn_scores)
        bw = c->gpu.hbm_bw_Bps * p->score_mem_eff;
    switch (kind) {
    case ETK_OP_GEMM: {
        if (op->m > 0 && op->n > 0 && op->k > 0 && flops == 0)
            flops = 2.0 * (double)op->m * (double)op->n * (double)op->k;
        double h = shape_dim(op);
        double e0 = fp8 && p->fp8_gemm_eff > 0 ? p->fp8_gemm_eff : p->gemm_eff;
        double hd = op->grouped ? p->grouped_gemm_half_dim
                    : fp8      ? p->fp8_gemm_half_dim
                               : p->gemm_half_dim;
        double eff = e0 * (isinf(h) ? 1.0 : h / (h + hd));
        if (flops > 0 && peak > 0 && eff > 0)
            t = flops / (peak * eff);
        if (op->grouped && op->wgrad && fp8 && p->grouped_fp8_wgrad_factor > 0)
            t *= p->grouped_fp8_wgrad_factor;
        break;
    }
    case ETK_OP_ATTENTION: {
        double eff = op->attn_bwd && p->attn_bwd_eff > 0 ? p->attn_bwd_eff : p->attn_eff;
        if (!op->fp8 && pr == ETK_PREC_FP8 && c->gpu.peak_flops[ETK_PREC_BF16] > 0)
            peak = c->gpu.peak_flops[ETK_PREC_BF16]; /* attention stays BF16 */
        /* a causal sliding window narrower than the sequence: the FLOPs of the tiles the kernel
         * computes, and the length its efficiency is that of: the causal sequence with as many
         * key tiles per query tile on average ((n + 1) / 2 of n tiles: about s / (2 tile)) */
        bool win = op->attn_window > 0 && op->attn_causal && op->attn_s > op->attn_window;
        double s_eff = (double)op->attn_s;
        if (win) { /* 2 tile x the mean key tiles per query tile (a causal s: about s) */
            double n = (double)(op->attn_s / ETK_ATTN_TILE + (op->attn_s % ETK_ATTN_TILE != 0));
            s_eff = 2.0 * ETK_ATTN_TILE * etk_window_tiles(op->attn_s, op->attn_window, ETK_ATTN_TILE) / n;
            if (s_eff > (double)op->attn_s)
                s_eff = (double)op->attn_s;
        }
        if (op->attn_s > 0 && p->attn_half_seq > 0) {
            eff *= s_eff / (s_eff + p->attn_half_seq);
            if (p->attn_ref_seq > 0)
                eff /= p->attn_ref_seq / (p->attn_ref_seq + p->attn_half_seq);
        }
        if (op->attn_d > 0 && p->attn_half_dim > 0)
            eff *= (double)op->attn_d / ((double)op->attn_d + p->attn_half_dim) /
                   (128.0 / (128.0 + p->attn_half_dim));
        if (eff > 1)
            eff = 1;
        if (op->attn_b > 0 && op->attn_s > 0 && op->attn_heads > 0 && op->attn_d > 0) {
            double s = (double)op->attn_s;
            flops = 4.0 * (double)op->attn_b * s * s * (double)op->attn_heads * (double)op->attn_d;
            if (op->attn_causal)
                flops /= 2;
            if (win) /* from the causal s^2 / 2 pairs to the window's */
                flops *= etk_window_pairs(op->attn_s, op->attn_window) / (s * s / 2);
            if (op->attn_bwd)
                flops *= 2.5;
            if (bytes == 0) /* Q, K, V, O in 2-byte elements (dQ, dK, dV, dO too backward) */
                bytes = (op->attn_bwd ? 8.0 : 4.0) * 2.0 * (double)op->attn_b * s *
                        (double)op->attn_heads * (double)op->attn_d;
        } else if (op->attn_causal) {
            flops /= 2; /* FLOPs counted over the full s^2; the kernel skips masked blocks */
        }
        if (win) /* the window's pairs to the tiles the kernel computes */
            flops *= etk_window_tiles(op->attn_s, op->attn_window, ETK_ATTN_TILE) * ETK_ATTN_TILE * ETK_ATTN_TILE /
                     etk_window_pairs(op->attn_s, op->attn_window);
        if (flops > 0 && peak > 0)
            t = flops / (peak * eff);
        break;
    }
    default:
        break;
    }
    if (bytes > 0 && bw > 0 && bytes / bw > t)
        t = bytes / bw;
    if (t == 0 && flops == 0 && bytes == 0)
        return 0; /* nothing to do: no kernel */
    double ns = t * 1e9 + p->launch_ns;
    if (!(ns < 1.8e19))
        return UINT64_MAX;
    return (uint64_t)llround(ns);
}
