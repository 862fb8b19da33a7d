/* ranks.c — `etkit convert pytorch --ranks N`: a job's ranks written as one all-or-nothing rank
 * set (etk_convert_pytorch_write_ranks, convert.h) through util/outset (the temporary folder,
 * the lock and the publishing renames `etkit gen` uses); each rank converted by
 * etk_convert_pytorch_write (pytorch.c). */
#include <inttypes.h>
#include <string.h>

#include "etkit/convert.h"
#include "util/outset.h"

int etk_convert_pytorch_write_ranks(uint64_t n, etk_convert_rank_opts_fn opts, etk_convert_rank_done_fn done,
                                    void *ctx, const char *prefix, etk_error *err)
{
    if (n == 0 || n > UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "%s: %" PRIu64 " ranks: expected 1 to %u", prefix, n, UINT32_MAX);
    etk_outset os;
    int rc = etk_outset_begin(&os, prefix, err);
    if (rc)
        return rc;
    for (uint64_t r = 0; r < n && !rc; r++) {
        etk_convert_opts o;
        etk_convert_stats st;
        memset(&o, 0, sizeof o);
        if ((rc = opts(ctx, r, &o, err)) || (rc = etk_convert_pytorch_write(&o, os.tprefix, &st, err)))
            break;
        if (st.rank != (int64_t)r) {
            rc = etk_err(err, ETK_EINVAL, "%s: converted as rank %lld, expected rank %" PRIu64,
                         o.host_path ? o.host_path : o.device_path, (long long)st.rank, r);
            break;
        }
        if (done)
            done(ctx, r, &st);
    }
    if (rc) {
        etk_outset_abort(&os);
        etk_err_prefix(err, "%s: nothing written", prefix);
        return rc;
    }
    return etk_outset_commit(&os, (uint32_t)n, err);
}
