/* etkit/live.h — live mode: run an unmodified CUDA/NCCL program, N copies, against the stand-in
 * libraries (live/), feeding etkit's engine (sim.h) node by node as the ranks issue work and
 * answering their blocking calls in virtual time. docs/live.md describes the protocol, the
 * scheduling rule that makes runs deterministic, and what is modelled. */
#ifndef ETKIT_LIVE_H
#define ETKIT_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "etkit/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel times for <<<>>> launches (--kernels FILE): one entry per line,
 *   PATTERN ns N                  every launch takes N ns
 *   PATTERN flops F bytes B       roofline on the modelled GPU: max(F / peak, B / HBM bandwidth)
 * PATTERN is an fnmatch(3) glob on the kernel's (mangled) name; the first matching line wins.
 * '#' starts a comment. */
typedef struct etk_live_kernels etk_live_kernels;
int etk_live_kernels_load(const char *path, etk_live_kernels **out, etk_error *err);
int etk_live_kernels_parse(const char *text, const char *name, etk_live_kernels **out, etk_error *err);
/* The time of one launch of `name`: 1 with *ns set when an entry matches, 0 when none does. */
int etk_live_kernel_ns(const etk_live_kernels *k, const etk_cluster *c, const char *name, uint64_t *ns);
void etk_live_kernels_free(etk_live_kernels *k);

/* What the stand-in runtime reports about the modelled GPU beyond the preset's figures
 * (streaming multiprocessors, compute capability, host link), from its name. */
typedef struct etk_live_gpu_info {
    uint32_t sms, cc_major, cc_minor;
    double pcie_Bps; /* host <-> device, per direction */
} etk_live_gpu_info;
void etk_live_gpu_info_of(const etk_gpu *g, etk_live_gpu_info *out);

typedef struct etk_live_opts {
    uint32_t n_ranks;             /* processes launched (ranks of the launcher) */
    uint32_t gpus_per_process;    /* GPUs each drives (0 or 1: one; ncclCommInitAll, nccl-tests -g):
                                     GPU d of process p is the engine's rank p*G + d */
    uint32_t local_world;         /* ranks (GPUs) per node: LOCAL_RANK = rank % local_world */
    char *const *argv;            /* the command, NULL-terminated */
    const char *lib_dir;          /* folder of libetklive.so and the stand-ins */
    double cpu_scale;             /* host CPU time x this is virtual time (0: ignored) */
    const etk_live_kernels *kernels; /* may be NULL */
    uint64_t kernel_default_ns;   /* launches no entry matches */
    const char *record_prefix;    /* write the run as a Chakra workload (NULL: no) */
    FILE *log;                    /* etkit's own notes (kernels guessed); NULL: stderr */
    bool launcher;                /* argv is a launcher starting the n_ranks ranks itself
                                     (mpirun -np N prog): it is started once, ranks identify by
                                     OMPI_COMM_WORLD_RANK / PMIX_RANK, and the MPI interposer
                                     libetkmpi.so is preloaded */
} etk_live_opts;

/* A finished run: the simulator and the traces it points into. */
typedef struct etk_live etk_live;
/* Run the program; on success *out holds the finished run (etk_live_sim). Returns 0, or
 * ETK_EINVAL with err naming the failed or deadlocked rank(s) and what each waits in. */
int etk_live_run(const etk_cluster *c, const etk_sim_opts *so, const etk_live_opts *o, etk_live **out,
                 etk_error *err);
etk_sim *etk_live_sim(etk_live *l);
void etk_live_free(etk_live *l);

#ifdef __cplusplus
}
#endif
#endif
