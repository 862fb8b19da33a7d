/* run_mem.h — `etkit run`: the memory an unfolded simulation will need, estimated before the
 * workload is generated, and refused when it exceeds what is available (run_mem.c). */
#ifndef ETK_CLI_RUN_MEM_H
#define ETK_CLI_RUN_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "etkit/gen.h"

/* Bytes per simulated node of an unfolded `etkit run` (its trace in memory + the simulator's
 * state): the slope of peak RSS against nodes, measured (bench/RESULTS.md "Memory estimate"). */
#define RUN_MEM_BYTES_PER_NODE 362u
#define RUN_MEM_BASE_BYTES (6u << 20)

/* Parse --max-memory: bytes with an optional K, M, G or T suffix (powers of 1024). */
int run_mem_parse(const char *cmd, const char *arg, uint64_t *out);
/* Nodes every rank will simulate, summed (the generator's per-stage node counts), and the
 * estimate in bytes. */
int run_mem_estimate(const etk_gen_config *cfg, uint64_t *nodes, uint64_t *bytes, etk_error *err);
/* Memory this process may still use: the least of MemAvailable, the cgroup's memory.max less
 * memory.current, and RLIMIT_AS / RLIMIT_DATA; UINT64_MAX when none is known. */
uint64_t run_mem_available(void);
/* When the run will not fold: estimate and refuse (exit status 2, a message with the figures and
 * what helps) if it exceeds max_bytes (0: run_mem_available()). Returns 0 to go on. */
int run_mem_check(const char *cmd, const etk_gen_config *cfg, uint64_t max_bytes, const char *why_unfolded);

/* `etkit sim` on trace files, before they are read (issue #18): every rank's trace is held in
 * memory, SIM_MEM_LOAD_PER_BYTE bytes per encoded trace byte, and the simulator's state adds
 * SIM_MEM_SIM_PER_BYTE per byte of the ranks it simulates (all of them when unfolded, the
 * largest rank file's when folded: a lower bound); measured slopes of peak RSS
 * (bench/RESULTS.md "Memory estimate of sim on trace files"). */
#define SIM_MEM_LOAD_PER_BYTE 2.69
#define SIM_MEM_SIM_PER_BYTE 1.40
/* Estimate for the workload `spec` (etk_workload_size's files) and refuse (exit status 2, a
 * message with the figures and what helps) past max_bytes (0: run_mem_available()); why_unfolded
 * names the option that keeps every rank simulated (NULL: folded). Returns 0 to go on. */
int sim_mem_check(const char *cmd, const char *spec, const char *why_unfolded, uint64_t max_bytes);

#endif
