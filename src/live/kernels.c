/* kernels.c — live mode's kernel-time table (--kernels FILE) and the GPU figures the stand-in
 * runtime reports beyond the preset (SMs, compute capability, host link bandwidth). */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/live.h"

typedef struct kentry {
    char *pattern;
    uint64_t ns;        /* fixed time, or 0 with flops/bytes */
    double flops, bytes;
} kentry;

struct etk_live_kernels {
    kentry *e;
    size_t n;
};

void etk_live_kernels_free(etk_live_kernels *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++)
        free(k->e[i].pattern);
    free(k->e);
    free(k);
}

static int num(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

int etk_live_kernels_parse(const char *text, const char *name, etk_live_kernels **out, etk_error *err)
{
    etk_live_kernels *k = calloc(1, sizeof *k);
    if (!k)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    size_t line = 0;
    const char *p = text;
    while (*p) {
        line++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char buf[1024];
        if (len >= sizeof buf) {
            etk_live_kernels_free(k);
            return etk_err(err, ETK_EFORMAT, "%s:%zu: line longer than %zu characters", name, line, sizeof buf - 1);
        }
        memcpy(buf, p, len);
        buf[len] = 0;
        p = eol ? eol + 1 : p + len;
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = 0;
        char *tok[6];
        int nt = 0;
        for (char *s = strtok(buf, " \t\r"); s && nt < 6; s = strtok(NULL, " \t\r"))
            tok[nt++] = s;
        if (!nt)
            continue;
        kentry e = {0};
        double v = 0, b = 0;
        if (nt == 3 && !strcmp(tok[1], "ns") && num(tok[2], &v) == 0 && v >= 1 && v <= 1e15) {
            e.ns = (uint64_t)llround(v);
        } else if (nt == 5 && !strcmp(tok[1], "flops") && !strcmp(tok[3], "bytes") && num(tok[2], &v) == 0 &&
                   num(tok[4], &b) == 0 && v + b > 0 && v <= 1e20 && b <= 1e18) {
            e.flops = v;
            e.bytes = b;
        } else {
            etk_live_kernels_free(k);
            return etk_err(err, ETK_EFORMAT,
                           "%s:%zu: wanted 'PATTERN ns N' (N in [1, 1e15]) or 'PATTERN flops F bytes B' "
                           "(F, B >= 0, not both 0)",
                           name, line);
        }
        kentry *ne = realloc(k->e, (k->n + 1) * sizeof *ne);
        e.pattern = strdup(tok[0]);
        if (!ne || !e.pattern) {
            free(ne ? NULL : e.pattern);
            if (ne)
                k->e = ne;
            etk_live_kernels_free(k);
            return etk_err(err, ETK_ENOMEM, "out of memory");
        }
        k->e = ne;
        k->e[k->n++] = e;
    }
    *out = k;
    return 0;
}

int etk_live_kernels_load(const char *path, etk_live_kernels **out, etk_error *err)
{
    char *data = NULL;
    size_t len = 0;
    if (etk_file_read_max(path, ETK_MAX_CONFIG_BYTES, "kernel table", &data, &len, err) != 0)
        return err ? err->code : ETK_EIO;
    int rc = etk_live_kernels_parse(data, path, out, err);
    free(data);
    return rc;
}

int etk_live_kernel_ns(const etk_live_kernels *k, const etk_cluster *c, const char *name, uint64_t *ns)
{
    for (size_t i = 0; k && i < k->n; i++) {
        const kentry *e = &k->e[i];
        if (fnmatch(e->pattern, name, 0) != 0)
            continue;
        if (e->ns) {
            *ns = e->ns;
        } else {
            double peak = c->gpu.peak_flops[c->precision], bw = c->gpu.hbm_bw_Bps;
            double t = 0;
            if (e->flops > 0 && peak > 0)
                t = e->flops / peak;
            if (e->bytes > 0 && bw > 0 && e->bytes / bw > t)
                t = e->bytes / bw;
            *ns = (uint64_t)ceil(t * 1e9);
            if (!*ns)
                *ns = 1;
        }
        return 1;
    }
    return 0;
}

void etk_live_gpu_info_of(const etk_gpu *g, etk_live_gpu_info *out)
{
    /* published figures: SM counts and compute capabilities from NVIDIA's data sheets (AMD's
     * MI300X: 304 compute units); host links PCIe Gen4 x16 (A100) and Gen5 x16 (H100 and
     * later), 32 and 64 GB/s per direction nominal */
    static const struct {
        const char *key;
        uint32_t sms, major, minor;
        double pcie;
    } t[] = {
        {"A100", 108, 8, 0, 32e9}, {"H100", 132, 9, 0, 64e9}, {"H200", 132, 9, 0, 64e9},
        {"B200", 148, 10, 0, 64e9}, {"MI300X", 304, 9, 4, 64e9},
    };
    out->sms = 108;
    out->cc_major = 8;
    out->cc_minor = 0;
    out->pcie_Bps = 32e9;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strstr(g->name, t[i].key)) {
            out->sms = t[i].sms;
            out->cc_major = t[i].major;
            out->cc_minor = t[i].minor;
            out->pcie_Bps = t[i].pcie;
            break;
        }
}
