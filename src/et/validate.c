/* validate.c — checks of Chakra traces and workloads (etkit/validate.h).
 *
 * Sits after the reader in the data flow: `etkit validate`, the generator's tests and the
 * simulator call it on etk_trace / etk_workload before trusting them. Per file it looks at ids,
 * dependencies, cycles, attribute kinds and required attributes; across the ranks of a workload
 * at communicator groups, collective sequences, send/recv matching and deadlock (Kahn's
 * algorithm over the global graph in which the k-th collective of a group and each matched
 * send/recv pair are contracted to one node with union-find). Every pass is linear in the
 * nodes and dependencies (plus a sort of the point-to-point messages), so validation stays a
 * small part of reading a trace. Findings are aggregated per file and problem, so a broken
 * 10-million-node trace gives a screenful, not a flood. The catalogue is docs/validate.md. */
#include "etkit/validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "et/depgraph.h"
#include "et/validate_priv.h"

int etk_validate_workload(etk_workload *w, const etk_validate_opts *opts, etk_findings *out,
                          etk_error *err)
{
    etk_validate_opts dflt = {0};
    if (!opts)
        opts = &dflt;
    bool folded = false, any_cyclic = false;
    size_t total = 0;
    int rc = 0;
    const char *prefix = w->prefix ? w->prefix : "";
    /* resolved dependencies per rank, kept for the deadlock pass */
    bool keep = !opts->skip_cross_rank && !opts->skip_deadlock;
    int32_t **res = keep ? calloc(w->n_ranks ? w->n_ranks : 1, sizeof *res) : NULL;
    if (keep && !res)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    xstate x = {0};
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        etk_trace *t = w->ranks[r];
        if (!t) {
            folded = true;
            continue;
        }
        bool cyclic;
        if ((rc = val_validate_trace(t, r, opts, out, &cyclic, keep ? &res[r] : NULL, err)))
            goto out;
        any_cyclic |= cyclic;
        total += t->n_nodes;
    }
    if (folded) {
        rc = val_add(out, ETK_SEV_INFO, "skipped", -1, prefix, -1, 0, 1,
                 "folded workload (%" PRIu32 " classes over %" PRIu32 " ranks): only the class "
                 "representatives were checked; expand it for the cross-rank checks",
                 w->n_classes, w->n_ranks);
        goto out;
    }
    if (opts->skip_cross_rank)
        goto out;
    if (total >= UINT32_MAX) {
        rc = etk_err(err, ETK_EINVAL,
                     "%s: %zu nodes in total: more than the 2^32-2 the cross-rank checks support",
                     prefix, total);
        goto out;
    }
    x.res = res;
    x.w = w;
    x.out = out;
    x.nlist = opts->max_ids_listed ? opts->max_ids_listed : LIST_DEFAULT;
    rc = ETK_ENOMEM;
    x.off = malloc((w->n_ranks + 1) * sizeof *x.off);
    bool deadlock = !opts->skip_deadlock && !any_cyclic;
    if (deadlock)
        x.uf = malloc((total ? total : 1) * sizeof *x.uf);
    if (!x.off || (deadlock && !x.uf))
        goto out;
    x.off[0] = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++)
        x.off[r + 1] = x.off[r] + w->ranks[r]->n_nodes;
    if (x.uf)
        for (size_t v = 0; v < total; v++)
            x.uf[v] = (uint32_t)v;
    if ((rc = val_load_groups(&x)) || (rc = val_check_collectives(&x)) || (rc = val_check_p2p(&x)))
        goto out;
    if (deadlock) {
        rc = val_check_deadlock(&x, err);
    } else if (any_cyclic && !opts->skip_deadlock) {
        rc = val_add(out, ETK_SEV_INFO, "skipped", -1, prefix, -1, 0, 1,
                 "cross-rank deadlock check skipped: a rank's own dependencies form a cycle");
    }
out:
    for (size_t i = 0; i < x.n_g; i++) {
        free(x.g[i].members);
        free(x.g[i].seq);
    }
    free(x.g);
    etk_kmap_free(&x.names);
    free(x.off);
    free(x.uf);
    for (uint32_t r = 0; res && r < w->n_ranks; r++)
        free(res[r]);
    free(res);
    if (rc == ETK_ENOMEM && !(err && err->code == ETK_ENOMEM))
        return etk_err(err, rc, "%s: out of memory in the cross-rank checks", prefix);
    return rc;
}
