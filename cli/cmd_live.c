/* cmd_live.c — `etkit live`: run N copies of a CUDA/NCCL program on the modelled cluster
 * (src/live/coord.c) and print etkit's usual report of the run. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "etkit/live.h"
#include "sim_cli.h"

enum { LO_RANKS = 2000, LO_CPU_SCALE, LO_KERNELS, LO_KDEF, LO_RECORD, LO_LIBDIR, LO_LAUNCHER, LO_ALLOW_UNMODELLED,
       LO_GPP };

static void help(void)
{
    printf("usage: etkit live [--cluster NAME|FILE --nodes N --gpu G ...] --ranks N [options] -- CMD ARGS...\n\n"
           "Runs N copies of an unmodified CUDA/NCCL program against etkit's stand-in libcudart.so.13,\n"
           "libnccl.so.2 and libcublas.so.13: every kernel, copy and collective is timed by etkit's models on\n"
           "the chosen cluster and the program's own clocks read virtual time. Prints the program's output,\n"
           "then the usual `etkit sim` report of the run (stderr, or -o FILE). docs/live.md.\n\n"
           "  --ranks N                ranks to launch (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
           "                           MASTER_ADDR, MASTER_PORT are set for each)\n"
           "  --gpus-per-process G     each process drives G GPUs (ncclCommInitAll, nccl-tests -g; 1-16,\n"
           "                           default 1): N x G simulated GPUs\n"
           "  --cpu-scale F            host CPU time between calls x F is virtual time (default 1; 0: none)\n"
           "  --kernels FILE           kernel times: 'PATTERN ns N' or 'PATTERN flops F bytes B' per line\n"
           "  --kernel-default-ns N    launches no entry matches (default 10000); listed at the end\n"
           "  --record PREFIX          write the run as a Chakra workload (PREFIX.<rank>.et, PREFIX.json)\n"
           "  --lib-dir DIR            folder of the stand-in libraries (default: next to etkit)\n"
           "  --launcher               CMD starts the N ranks itself (mpirun -np N prog): run it once,\n"
           "                           with the MPI interposer (MPI_Wtime virtual, MPI calls timed) and\n"
           "                           OMPI_MCA_mpi_yield_when_idle=0 unless set (its waits sleep)\n"
           "  --allow-unmodelled       PyTorch: an operator etkit does not model is timed by the bytes it moves\n"
           "                           and listed at the end (default: the run stops naming it)\n"
           "%s\n"
           "The cluster defaults to dgx-h100 with as many GPUs as ranks x GPUs per process.\n"
           "exit status: 0 ok, 1 a rank failed or the ranks deadlocked (the report names each rank and the\n"
           "call it waits in), 2 bad usage.\n\n"
           "examples:\n"
           "  etkit live --cluster dgx-h100 --ranks 8 --cpu-scale 0 -- ./allreduce_sweep\n"
           "  etkit live --ranks 4 --launcher -- mpirun -np 4 ./ring\n"
           "  etkit live --ranks 8 --cpu-scale 0 -- python3 train.py   (PyTorch: docs/live.md)\n",
           sim_cli_help);
}

/* The stand-ins: $ETKIT_LIVE_LIB, else <dir of etkit>/live (build tree), else
 * <dir of etkit>/ETK_LIVE_FROM_BIN (installed: ../lib/etkit/live or the like). */
#ifndef ETK_LIVE_FROM_BIN
#define ETK_LIVE_FROM_BIN "../lib/etkit/live"
#endif
static void lib_dir(char *out, size_t len)
{
    const char *e = getenv("ETKIT_LIVE_LIB");
    if (e && *e) {
        snprintf(out, len, "%s", e);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(out, len, "live");
        return;
    }
    exe[n] = 0;
    char *d = dirname(exe);
    snprintf(out, len, "%s/live", d);
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/libetklive.so", out);
    if (access(probe, R_OK) != 0)
        snprintf(out, len, "%s/%s", d, ETK_LIVE_FROM_BIN);
}

/* The ranks find etkit's PyTorch support (sitecustomize.py, etkit_torch) in <lib dir>/python ahead
 * of the rest of PYTHONPATH (docs/live.md, "PyTorch"), whatever the command is: python3 itself, a
 * script with a #! line, torchrun, a shell wrapper, mpirun (the ranks inherit the environment).
 * Until s25 only a command named python* had it. sitecustomize.py does nothing in a Python
 * process that does not import torch under etkit live. */
static int python_env(const char *dir, bool allow_unmodelled)
{
    const char *old = getenv("PYTHONPATH");
    char path[2 * PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/python%s%s", dir, old && *old ? ":" : "", old ? old : "");
    if (setenv("PYTHONPATH", path, 1) != 0)
        return -1;
    return allow_unmodelled ? setenv("ETKIT_TORCH_ALLOW_UNMODELLED", "1", 1) : unsetenv("ETKIT_TORCH_ALLOW_UNMODELLED");
}

int cmd_live(int argc, char **argv)
{
    static const char *cmd = "live";
    struct option lo[72];
    size_t n = 0;
    while (sim_cli_longopts[n].name) {
        lo[n] = sim_cli_longopts[n];
        n++;
    }
    lo[n++] = (struct option){"ranks", required_argument, 0, LO_RANKS};
    lo[n++] = (struct option){"gpus-per-process", required_argument, 0, LO_GPP};
    lo[n++] = (struct option){"cpu-scale", required_argument, 0, LO_CPU_SCALE};
    lo[n++] = (struct option){"kernels", required_argument, 0, LO_KERNELS};
    lo[n++] = (struct option){"kernel-default-ns", required_argument, 0, LO_KDEF};
    lo[n++] = (struct option){"record", required_argument, 0, LO_RECORD};
    lo[n++] = (struct option){"lib-dir", required_argument, 0, LO_LIBDIR};
    lo[n++] = (struct option){"launcher", no_argument, 0, LO_LAUNCHER};
    lo[n++] = (struct option){"allow-unmodelled", no_argument, 0, LO_ALLOW_UNMODELLED};
    lo[n] = (struct option){0, 0, 0, 0};
    sim_cli c;
    memset(&c, 0, sizeof c);
    static char *cmdv[512];
    c.argc = argc < 512 ? argc : 512;
    memcpy(cmdv, argv, (size_t)c.argc * sizeof *argv);
    c.argv = cmdv;
    etk_live_opts o;
    memset(&o, 0, sizeof o);
    o.cpu_scale = 1;
    o.kernel_default_ns = 10000;
    const char *kernels = NULL;
    bool allow_unmodelled = false;
    static char dir[PATH_MAX];
    dir[0] = 0;
    uint64_t v;
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:c:n:o:h", lo, NULL)) != -1) {
        switch (opt) {
        case 'h':
            help();
            return 0;
        case LO_RANKS:
            if (cli_parse_u64(cmd, "--ranks", optarg, &v) != 0)
                return 2;
            if (v < 1 || v > 4096)
                return cli_usage_error(cmd, "--ranks wants 1 to 4096, got %s", optarg);
            o.n_ranks = (uint32_t)v;
            continue;
        case LO_GPP:
            if (cli_parse_u64(cmd, "--gpus-per-process", optarg, &v) != 0)
                return 2;
            if (v < 1 || v > 16)
                return cli_usage_error(cmd, "--gpus-per-process wants 1 to 16, got %s", optarg);
            o.gpus_per_process = (uint32_t)v;
            continue;
        case LO_CPU_SCALE:
            if (cli_parse_double(cmd, "--cpu-scale", optarg, &o.cpu_scale) != 0)
                return 2;
            if (o.cpu_scale < 0 || o.cpu_scale > 1000)
                return cli_usage_error(cmd, "--cpu-scale wants 0 to 1000, got %s", optarg);
            continue;
        case LO_KERNELS:
            kernels = optarg;
            continue;
        case LO_KDEF:
            if (cli_parse_u64(cmd, "--kernel-default-ns", optarg, &o.kernel_default_ns) != 0)
                return 2;
            if (o.kernel_default_ns > 1000000000000ull)
                return cli_usage_error(cmd, "--kernel-default-ns wants at most 1e12 ns, got %s", optarg);
            continue;
        case LO_RECORD:
            o.record_prefix = optarg;
            continue;
        case LO_LIBDIR:
            snprintf(dir, sizeof dir, "%s", optarg);
            continue;
        case LO_LAUNCHER:
            o.launcher = true;
            continue;
        case LO_ALLOW_UNMODELLED:
            allow_unmodelled = true;
            continue;
        case '?':
            return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        case ':':
            return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        default: {
            int rc = sim_cli_option(cmd, &c, opt, optarg);
            if (rc == 1)
                return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
            if (rc)
                return rc;
        }
        }
    }
    if (!o.n_ranks)
        return cli_usage_error(cmd, "--ranks N is required");
    if (optind >= argc)
        return cli_usage_error(cmd, "no command given: etkit live --ranks N [options] -- CMD ARGS...");
    o.argv = argv + optind;
    if (!dir[0])
        lib_dir(dir, sizeof dir);
    o.lib_dir = dir;
    if (python_env(dir, allow_unmodelled) != 0)
        return cli_usage_error(cmd, "cannot set PYTHONPATH for the PyTorch support (%s)", strerror(errno));
    if (!c.cluster && !c.astra_net)
        c.cluster = "dgx-h100";
    etk_cluster cl;
    uint32_t gpus = o.n_ranks * (o.gpus_per_process ? o.gpus_per_process : 1);
    int rc = sim_cli_cluster(cmd, &c, gpus, &cl);
    if (rc)
        return rc;
    uint32_t per_node = cl.n_dims ? cl.dims[0].size : 1;
    o.local_world = per_node < gpus ? per_node : gpus;
    etk_error err = {0};
    etk_live_kernels *kt = NULL;
    if (kernels && etk_live_kernels_load(kernels, &kt, &err) != 0)
        return cli_fail(cmd, &err);
    o.kernels = kt;
    c.o.no_fold = true;
    etk_live *l = NULL;
    rc = etk_live_run(&cl, &c.o, &o, &l, &err);
    etk_live_kernels_free(kt);
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "etkit live: error: %s\n", err.msg);
        return rc == ETK_EINVAL ? 1 : 2;
    }
    fflush(stdout);
    int saved = -1;
    if (!c.output) { /* stdout is the program's: the report goes to stderr */
        saved = dup(1);
        dup2(2, 1);
    }
    rc = sim_cli_report(cmd, &c, etk_live_sim(l));
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, 1);
        close(saved);
    }
    etk_live_free(l);
    return rc;
}
