/* gpu_yaml.c — the fitted parameters as a GPU YAML (presets/gpus format, docs/cluster.md) with
 * a `compute:` mapping of compute-model parameters; network parameters go into a comment naming
 * the cluster YAML keys they belong to. Written atomically; the same fit gives the same bytes. */
#include <stdio.h>
#include <string.h>

#include "etkit/calib.h"

int etk_calib_write_gpu_yaml(const char *path, const etk_gpu *gpu, const etk_calib_params *p,
                             const char *header, etk_error *err)
{
    char *tmp = NULL;
    FILE *f = etk_file_begin(path, &tmp, err);
    if (!f)
        return -1;
    if (header && *header) {
        const char *s = header;
        while (*s) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            fprintf(f, "# %.*s\n", (int)len, s);
            s += len + (nl ? 1 : 0);
        }
    }
    fprintf(f, "name: %s\npeak_tflops: {", gpu->name);
    bool first = true;
    for (int i = 0; i < ETK_PREC_COUNT; i++)
        if (gpu->peak_flops[i] > 0) {
            fprintf(f, "%s%s: %.10g", first ? "" : ", ", etk_precision_name(i),
                    gpu->peak_flops[i] / 1e12);
            first = false;
        }
    fprintf(f, "}\nhbm_bw_GBps: %.10g\n", gpu->hbm_bw_Bps / 1e9);
    if (gpu->hbm_bytes % (1u << 20) == 0)
        fprintf(f, "hbm_MiB: %llu\n", (unsigned long long)(gpu->hbm_bytes >> 20));
    else if (gpu->hbm_bytes)
        fprintf(f, "hbm_GB: %.10g\n", (double)gpu->hbm_bytes / 1e9);
    /* the GPU's own compute: entries, the fitted values replacing theirs, then the new ones */
    bool any = false;
    for (uint32_t i = 0; i < gpu->n_compute && i < ETK_GPU_MAX_COMPUTE; i++) {
        double v = gpu->compute[i].value;
        for (uint32_t j = 0; p && j < p->n; j++)
            if (!strcmp(p->name[j], gpu->compute[i].name))
                v = p->value[j];
        if (!any)
            fprintf(f, "compute:\n");
        any = true;
        fprintf(f, "  %s: %.6g\n", gpu->compute[i].name, v);
    }
    for (uint32_t i = 0; p && i < p->n; i++) {
        if (etk_calib_param_is_net(p->name[i]))
            continue;
        bool had = false;
        for (uint32_t j = 0; j < gpu->n_compute && j < ETK_GPU_MAX_COMPUTE; j++)
            had = had || !strcmp(p->name[i], gpu->compute[j].name);
        if (had)
            continue;
        if (!any)
            fprintf(f, "compute:\n");
        any = true;
        fprintf(f, "  %s: %.6g\n", p->name[i], p->value[i]);
    }
    bool net = false;
    for (uint32_t i = 0; p && i < p->n; i++) {
        if (!etk_calib_param_is_net(p->name[i]))
            continue;
        if (!net)
            fprintf(f, "# network (cluster YAML: nvlink = network[0], nic = the last dimension; "
                       "bandwidth GB/s, latency ns):\n");
        net = true;
        fprintf(f, "#   %s: %.6g\n", p->name[i], p->value[i]);
    }
    return etk_file_commit(f, tmp, path, err);
}
