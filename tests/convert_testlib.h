/* convert_testlib.h — shared by test_convert.c and test_convert_real.c: validate a converted
 * workload (no errors) and simulate it on H100s behind one NVSwitch, cut to its rank count. */
#ifndef ETK_CONVERT_TESTLIB_H
#define ETK_CONVERT_TESTLIB_H

#include "testutil.h"

#include "etkit/et.h"
#include "etkit/net.h"
#include "etkit/sim.h"
#include "etkit/validate.h"

/* Returns the step in ns; cpu_streams: CPU streams per rank (one per host thread lets the
 * threads run concurrently; 0 means 1). flops and r0 may be NULL. */
static inline uint64_t cvt_validate_sim(const char *prefix, uint32_t want_ranks,
                                        uint32_t cpu_streams, double *flops,
                                        etk_sim_rank_stats *r0)
{
    etk_workload *w = NULL;
    etk_error err = {0};
    etk_read_opts ro = {.quiet = true};
    if (etk_workload_open(prefix, NULL, &ro, &w, &err))
        fail_msg("open %s: %s", prefix, err.msg);
    assert_int_equal(w->n_ranks, want_ranks);
    etk_findings *f = etk_findings_new();
    assert_int_equal(etk_validate_workload(w, NULL, f, &err), 0);
    for (size_t i = 0; i < f->n; i++) {
        char buf[1024];
        etk_finding_format(&f->items[i], buf, sizeof buf);
        if (f->items[i].severity == ETK_SEV_ERROR)
            fail_msg("validate %s: %s", prefix, buf);
    }
    etk_findings_free(f);
    etk_cluster c;
    if (etk_cluster_preset("dgx-h100", 1, &c, &err))
        fail_msg("cluster: %s", err.msg);
    c.n_dims = 1;
    c.dims[0].size = want_ranks;
    c.n_npus = want_ranks;
    etk_sim_opts so = {0};
    so.quiet = true;
    so.cpu_streams = cpu_streams;
    etk_sim *s = NULL;
    if (etk_sim_workload(w, &c, &so, &s, &err))
        fail_msg("simulate %s: %s", prefix, err.msg);
    const etk_sim_result *res = etk_sim_result_get(s);
    assert_non_null(res);
    uint64_t step = res->step_ns;
    if (flops)
        *flops = res->flops_per_step;
    if (r0)
        *r0 = res->ranks[0];
    etk_sim_free(s);
    etk_workload_free(w);
    return step;
}
#endif
