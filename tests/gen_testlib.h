/* gen_testlib.h — helpers shared by the generator's plan tests (test_gen_cp/ep/zero/dense/sched/infer):
 * parse a command-line-style plan string into an etk_gen_config and summarize it, the message of a
 * refused plan, validate a workload or a list of plans, a test cluster. Header-only, like
 * sim_testlib.h; include after testutil.h. */
#ifndef ETK_GEN_TESTLIB_H
#define ETK_GEN_TESTLIB_H

#include <stdio.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/net.h"
#include "etkit/validate.h"

/* The FLOPs a generated COMP node stands for: its num_ops, except that a node moving bytes
 * without FLOPs (embedding lookup, concatenation, MoE dispatch) is written with num_ops 1 so
 * that ASTRA-sim's roofline does not stall on 0 / 0 (docs/gen.md): that is no FLOP, and the
 * summary leaves it out. */
static inline double gen_node_flops(const etk_node *n)
{
    int64_t f = 0;
    uint64_t b = 0;
    if (n->type != ETK_NODE_COMP || !etk_node_i64(n, "num_ops", &f))
        return 0;
    etk_node_u64(n, "tensor_size", &b);
    return f == 1 && b > 0 ? 0 : (double)f;
}

/* Parse "--model llama2-7b --tp 2 ..." and check the plan; 0 or the library's error. */
static inline int parse(const char *line, etk_gen_config *c, etk_error *err)
{
    static char buf[1024];
    char *argv[64], *rest[64];
    int argc = 0, nrest = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 64; t = strtok(NULL, " "))
        argv[argc++] = t;
    etk_gen_config_init(c);
    int rc = etk_gen_parse_args(argc, argv, c, &nrest, rest, err);
    if (!rc && nrest)
        rc = etk_err(err, ETK_EINVAL, "unparsed '%s'", rest[0]);
    return rc ? rc : etk_gen_check(c, err);
}

/* A plan that must be valid, parsed and checked into c (fails the test otherwise). */
static inline void cfg_from(etk_gen_config *c, const char *line)
{
    etk_error err = {0};
    if (parse(line, c, &err))
        fail_msg("plan '%s': %s", line, err.msg);
}

/* Parse and summarize a plan that must be valid (fails the test otherwise). */
static inline void summarize(const char *line, etk_gen_config *c, etk_gen_summary *s)
{
    etk_error err = {0};
    if (parse(line, c, &err) || etk_gen_summarize(c, s, &err))
        fail_msg("plan '%s': %s", line, err.msg);
}

/* The error message of a plan that must be refused (fails the test if accepted). */
static inline const char *gen_plan_error(const char *line)
{
    static etk_error err;
    etk_gen_config c;
    memset(&err, 0, sizeof err);
    int rc = parse(line, &c, &err);
    if (!rc)
        fail_msg("plan '%s' was accepted", line);
    assert_true(rc < 0);
    return err.msg;
}

/* The validator finds nothing in any rank of w (`what` names it in the failure). */
static inline void gen_expect_clean(etk_workload *w, const char *what)
{
    etk_findings *f = etk_findings_new();
    etk_error err = {0};
    if (etk_validate_workload(w, NULL, f, &err))
        fail_msg("%s: %s", what, err.msg);
    if (f->n_errors || f->n_warnings) {
        char buf[1024];
        for (size_t i = 0; i < f->n && i < 5; i++) {
            etk_finding_format(&f->items[i], buf, sizeof buf);
            fprintf(stderr, "%s: %s\n", what, buf);
        }
        fail_msg("%s: %zu errors, %zu warnings", what, f->n_errors, f->n_warnings);
    }
    etk_findings_free(f);
}

/* A one-switch cluster of n GPUs: 100 GB/s links, 1,000 TFLOP/s bf16, 2 TB/s HBM, efficiency 1. */
static inline void gen_test_cluster(etk_cluster *cl, uint32_t n)
{
    memset(cl, 0, sizeof *cl);
    snprintf(cl->name, sizeof cl->name, "test");
    cl->n_dims = 1;
    cl->dims[0].size = n;
    cl->dims[0].topo = ETK_TOPO_SWITCH;
    cl->dims[0].bw_Bps = 100e9;
    cl->n_npus = n;
    cl->gpu.peak_flops[ETK_PREC_BF16] = 1000e12;
    cl->gpu.hbm_bw_Bps = 2000e9;
    cl->compute_efficiency = 1;
}

/* A hand cost model's sends and receives: free (tests whose hand model times compute and
 * collectives only). */
static inline uint64_t gen_test_p2p_free(void *ctx, const etk_cluster *c, uint32_t s, uint32_t d, uint64_t bytes)
{
    (void)ctx;
    (void)c;
    (void)s;
    (void)d;
    (void)bytes;
    return 0;
}

/* Every rank of each plan's unfolded workload passes the validator without findings. */
static inline void gen_expect_valid(const char *const *plans, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        etk_gen_config c;
        etk_error err = {0};
        etk_workload *w = NULL;
        if (parse(plans[i], &c, &err) || etk_gen_workload(&c, false, &w, &err))
            fail_msg("%s: %s", plans[i], err.msg);
        gen_expect_clean(w, plans[i]);
        etk_workload_free(w);
    }
}
#endif
