/* flops.c — FLOPs and tensor bytes of the ops whose work follows from their input shapes, so a
 * converted host-only trace (no device trace: no kernel durations) can be timed by the compute
 * model instead of simulating to 0 ns. Shapes are the host trace's input_shapes (or Kineto's
 * "Input Dims"): a JSON list with one list of dimensions per input. A multiply-add counts as
 * 2 FLOPs.
 *
 *   mm [M,K]x[K,N], addmm (bias, A, B)           2·M·K·N
 *   bmm [B,M,K]x[B,K,N], baddbmm (in, A, B)      2·B·M·K·N
 *   matmul [..,M,K]x[..,K,N] (1-D operands as in torch.matmul; batch dims broadcast)
 *   linear x[..,K], W[N,K]                       2·prod(x[..-1])·K·N
 *   conv / convolution x[N,C,*in], W[O,C/g,*k]   2·N·O·prod(out)·(C/g)·prod(k); out from the
 *                                                values' stride/padding/dilation when given,
 *                                                else out = in (stride 1, "same" padding)
 *   scaled_dot_product_attention, flash / efficient / cudnn attention
 *                                                q[B,H,L,D], k[B,H,S,D]: 4·B·H·L·S·D
 * Bytes: the inputs' elements times the element size of their types (4 when unknown) plus the
 * output's (M·N etc.). */
#include <jansson.h>
#include <string.h>

#include "convert/cv.h"

#define MAXD 8

typedef struct shp {
    int nd;
    double d[MAXD];
} shp;

static bool get_shape(const json_t *shapes, size_t i, shp *s)
{
    const json_t *a = json_array_get(shapes, i);
    if (!json_is_array(a) || json_array_size(a) > MAXD)
        return false;
    s->nd = (int)json_array_size(a);
    for (int k = 0; k < s->nd; k++) {
        const json_t *x = json_array_get(a, (size_t)k);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return false;
        s->d[k] = (double)json_integer_value(x);
    }
    return true;
}

static double numel(const shp *s, int from, int to)
{
    double n = 1;
    for (int k = from; k < to; k++)
        n *= s->d[k];
    return n;
}

static double elem_size(const json_t *types, size_t i)
{
    const char *t = json_string_value(json_array_get(types, i));
    if (!t)
        return 4;
    if (strstr(t, "Half") || strstr(t, "BFloat16"))
        return 2;
    if (strstr(t, "double") || strstr(t, "Double") || strstr(t, "long"))
        return 8;
    if (strstr(t, "Float8") || strstr(t, "bool") || strstr(t, "char"))
        return 1;
    return 4;
}

/* the op's base name: "aten::addmm" -> "addmm" */
static const char *base(const char *name)
{
    const char *p = strstr(name, "::");
    return p ? p + 2 : name;
}

static bool is(const char *b, const char *what)
{
    return !strcmp(b, what);
}

/* integer list value i of the op's inputs (stride, padding, dilation), else fill */
static void int_list(const json_t *values, size_t i, int n, double fill, double *out)
{
    const json_t *a = json_array_get(values, i);
    for (int k = 0; k < n; k++) {
        const json_t *x = json_is_array(a) ? json_array_get(a, json_array_size(a) == 1 ? 0
                                                                                     : (size_t)k)
                                           : NULL;
        out[k] = json_is_integer(x) ? (double)json_integer_value(x) : fill;
    }
}

bool cv_flops_from_shapes(const char *name, const char *shapes_json, const char *types_json,
                          const char *values_json, uint64_t *flops, uint64_t *bytes)
{
    *flops = *bytes = 0;
    if (!name || !shapes_json)
        return false;
    const char *b = base(name);
    bool mm = is(b, "mm"), addmm = is(b, "addmm"), bmm = is(b, "bmm"),
         baddbmm = is(b, "baddbmm"), matmul = is(b, "matmul"), linear = is(b, "linear"),
         conv = is(b, "conv1d") || is(b, "conv2d") || is(b, "conv3d") ||
                is(b, "convolution") || is(b, "_convolution") || is(b, "cudnn_convolution"),
         attn = strstr(b, "scaled_dot_product") || strstr(b, "flash_attention") ||
                strstr(b, "flash_attn") || strstr(b, "efficient_attention") ||
                strstr(b, "cudnn_attention");
    if (!(mm || addmm || bmm || baddbmm || matmul || linear || conv || attn))
        return false;
    json_t *shapes = json_loads(shapes_json, JSON_DECODE_ANY, NULL);
    json_t *types = types_json ? json_loads(types_json, JSON_DECODE_ANY, NULL) : NULL;
    json_t *values = values_json ? json_loads(values_json, JSON_DECODE_ANY, NULL) : NULL;
    double f = 0, out = 0;
    size_t ia = addmm || baddbmm ? 1 : 0, ib = ia + 1;
    shp A, B;
    bool ok = json_is_array(shapes) && get_shape(shapes, ia, &A) && get_shape(shapes, ib, &B);
    if (ok && (mm || addmm)) {
        ok = A.nd == 2 && B.nd == 2 && A.d[1] == B.d[0];
        f = 2 * A.d[0] * A.d[1] * B.d[1];
        out = A.d[0] * B.d[1];
    } else if (ok && (bmm || baddbmm)) {
        ok = A.nd == 3 && B.nd == 3 && A.d[2] == B.d[1];
        f = 2 * A.d[0] * A.d[1] * A.d[2] * B.d[2];
        out = A.d[0] * A.d[1] * B.d[2];
    } else if (ok && matmul) {
        ok = A.nd >= 1 && B.nd >= 1;
        int la = A.nd > 0 ? A.nd - 1 : 0, lb = B.nd > 0 ? B.nd - 1 : 0;
        double K = A.d[la], M = A.nd >= 2 ? A.d[la - 1] : 1;
        double N = B.nd >= 2 ? B.d[lb] : 1, KB = B.nd >= 2 ? B.d[lb - 1] : B.d[0];
        double ba = A.nd > 2 ? numel(&A, 0, A.nd - 2) : 1, bb = B.nd > 2 ? numel(&B, 0, B.nd - 2) : 1;
        ok = ok && K == KB;
        double batch = ba > bb ? ba : bb;
        f = 2 * batch * M * K * N;
        out = batch * M * N;
    } else if (ok && linear) {
        int last = A.nd > 0 ? A.nd - 1 : 0;
        ok = A.nd >= 1 && B.nd == 2 && A.d[last] == B.d[1];
        double rows = numel(&A, 0, last);
        f = 2 * rows * B.d[1] * B.d[0];
        out = rows * B.d[0];
    } else if (ok && conv) {
        int sp = A.nd - 2;
        ok = sp >= 1 && sp <= 3 && B.nd == A.nd;
        if (ok) {
            double stride[3], pad[3], dil[3], o = 1;
            int_list(values, 3, sp, 1, stride);
            int_list(values, 4, sp, -1, pad);
            int_list(values, 5, sp, 1, dil);
            for (int k = 0; k < sp; k++) {
                double in = A.d[2 + k], kk = B.d[2 + k], ok_;
                if (pad[k] < 0) /* no values: stride 1, "same" padding */
                    ok_ = in;
                else
                    ok_ = (in + 2 * pad[k] - dil[k] * (kk - 1) - 1) / (stride[k] > 0 ? stride[k] : 1) + 1;
                if (ok_ < 1)
                    ok_ = 1;
                o *= (double)(int64_t)ok_;
            }
            f = 2 * A.d[0] * B.d[0] * o * numel(&B, 1, B.nd);
            out = A.d[0] * B.d[0] * o;
        }
    } else if (ok && attn) {
        ok = A.nd == 4 && B.nd == 4 && A.d[3] == B.d[3];
        f = 4 * A.d[0] * A.d[1] * A.d[2] * B.d[2] * A.d[3];
        out = A.d[0] * A.d[1] * A.d[2] * A.d[3];
    }
    if (ok) {
        double by = 0;
        for (size_t i = 0; i < json_array_size(shapes); i++) {
            shp s;
            if (get_shape(shapes, i, &s) && s.nd > 0)
                by += numel(&s, 0, s.nd) * elem_size(types, i);
        }
        by += out * elem_size(types, ia);
        ok = f > 0 && f < 9.0e18 && by < 9.0e18;
        if (ok) {
            *flops = (uint64_t)f;
            *bytes = (uint64_t)by;
        }
    }
    json_decref(shapes);
    json_decref(types);
    json_decref(values);
    return ok;
}
