/* fuzz_calib.c — libFuzzer target for `etkit calibrate MEASURED.json [--plan-extra FILE]`'s
 * readers (src/calib/rows.c): the input is the rows file, a NUL byte, then the plan-extra file
 * (no NUL: no plan-extra file). Any input must load (rows that cannot be built kept with a
 * reason) or fail with a message naming a file, never a crash, a leak or a hang. Rows are read
 * and their plans and clusters built and checked (etk_gen_validate: every check of
 * etk_gen_check), not summarized or predicted (the summary emits a step per stage class and was
 * ~80% of each execution at 330/s; a prediction generates and simulates a workload: the
 * fuzz_model and fuzz_sim targets cover those paths). Model files
 * named by a row are looked up in a folder that does not exist, so no input reads other files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/calib.h"
#include "fuzz_scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n1 = fs_split(data, size);
    char rows[256], extra[256];
    if (fs_write("calib_rows", ".json", data, n1, rows, sizeof rows))
        abort();
    int has_extra = n1 < size;
    if (has_extra && fs_write("calib_extra", ".json", data + n1 + 1, size - n1 - 1, extra, sizeof extra))
        abort();
    etk_calib_rows *rs = NULL;
    etk_error err;
    int rc = etk_calib_load_with(rows, "/nonexistent-etk-fuzz-models", has_extra ? extra : NULL, true, &rs, &err);
    remove(rows);
    if (has_extra)
        remove(extra);
    if (rc != 0) {
        FUZZ_CHECK(rs == NULL, "an error with rows returned");
        FUZZ_CHECK(strstr(err.msg, "etk_fuzz_calib_") != NULL, "an error that names no file: %s", err.msg);
        return 0;
    }
    FUZZ_CHECK(rs && rs->n >= 1, "loaded an empty rows file");
    for (uint32_t i = 0; i < rs->n; i++) {
        const etk_calib_row *r = &rs->rows[i];
        FUZZ_CHECK(r->built || r->reason[0], "row %u neither built nor given a reason", i);
        if (r->built)
            FUZZ_CHECK(r->measured > 0, "row %u built with measured %g", i, r->measured);
    }
    etk_calib_free(rs);
    return 0;
}
