/* fuzz_sim.c — libFuzzer target for the simulator: any bytes the reader accepts as a trace are
 * simulated as a one-rank workload (lenient dependencies, so absent ids and control cycles are
 * exercised too; and strict, where they must be errors) on a one-GPU cluster, with a timeline
 * and all three reports, without a crash, a leak or a hang (deadlocks must be reported); and
 * once more with the compute model and its host thread on (host_op_ns > 0: the traces'
 * host_ops and host_sync attributes, src/sim/host.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etkit/compute.h"
#include "etkit/sim.h"
#include "fuzz_common.h"

/* the private scratch folder (below); removed at exit, else every run left one in /dev/shm */
static char fuzz_sim_dir[64];
static void fuzz_sim_cleanup(void)
{
    if (fuzz_sim_dir[0])
        rmdir(fuzz_sim_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    etk_trace *t;
    etk_error err;
    etk_read_opts ro = {.quiet = true, .max_message_bytes = 1 << 20};
    if (etk_trace_read_mem(data, size, "fuzz.et", &ro, &t, &err) != 0)
        return 0;
    etk_cluster c;
    etk_cluster_init(&c);
    snprintf(c.name, sizeof c.name, "fuzz");
    c.n_dims = 1;
    c.dims[0] = (etk_net_dim){.size = 1, .topo = ETK_TOPO_SWITCH, .bw_Bps = 50e9, .latency_ns = 500};
    c.n_npus = 1;
    c.gpu.peak_flops[ETK_PREC_BF16] = 989e12;
    c.gpu.hbm_bw_Bps = 3.35e12;
    etk_workload w = {.n_ranks = 1, .ranks = &t, .prefix = "fuzz"};
    etk_compute_params host;
    etk_compute_defaults(NULL, &host);
    host.host_op_ns = 5000;
    for (int pass = 0; pass < 3; pass++) {
        int lenient = pass == 1;
        etk_sim_opts o = {.missing_deps_ignore = lenient, .timeline = true, .quiet = true,
                          .compute = pass == 2 ? &host : NULL};
        etk_sim *s = NULL;
        if (etk_sim_workload(&w, &c, &o, &s, &err) == 0) {
            static FILE *devnull; /* opened once */
            if (!devnull)
                devnull = fopen("/dev/null", "w");
            if (devnull) {
                const etk_sim_result *r = etk_sim_result_get(s);
                etk_sim_print_text(r, devnull);
                etk_sim_print_json(r, devnull);
                etk_sim_print_csv(r, devnull);
            }
            /* into a private directory (in memory, /dev/shm, when possible): never rename over a
             * device */
            char *dir = fuzz_sim_dir;
            if (!dir[0]) {
                snprintf(dir, sizeof fuzz_sim_dir, "%s/etk_fuzz_sim_XXXXXX", fc_scratch_dir());
                if (mkdtemp(dir))
                    atexit(fuzz_sim_cleanup);
                else
                    dir[0] = 0;
            }
            if (dir[0]) {
                char path[96];
                snprintf(path, sizeof path, "%s/tl.json", dir);
                (void)etk_sim_write_timeline(s, path, &err);
                unlink(path);
            }
            etk_sim_free(s);
        }
    }
    etk_trace_free(t);
    return 0;
}
