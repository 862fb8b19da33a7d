/* fuzz_synth_model.c — libFuzzer target for the synth model file (`etkit synth sample MODEL`,
 * src/synth/modelio.c): any bytes must load as a model or fail with a message naming the file,
 * never a crash, a leak or a hang. A model that loads must then sample (a small graph, a fixed
 * seed) without a crash: the loader must refuse tables the sampler cannot use (a negative or
 * NaN count, a bin out of range, weights of the wrong size). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/synth.h"
#include "fuzz_scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[256];
    if (fs_write("synth_model", ".json", data, size, path, sizeof path))
        abort();
    etk_synth_model *m = NULL;
    etk_error err;
    int rc = etk_synth_model_load(path, &m, &err);
    remove(path);
    if (rc != 0) {
        FUZZ_CHECK(m == NULL, "an error with a model returned");
        FUZZ_CHECK(strstr(err.msg, "etk_fuzz_synth_model") != NULL, "an error that names no file: %s", err.msg);
        return 0;
    }
    etk_synth_sample_opts o = {.seed = 1, .max_nodes = 256, .max_tries = 2};
    if (etk_synth_model_labeled(m))
        o.label_ns = 1e6;
    etk_synth_graph *g = NULL;
    if (etk_synth_sample_graph(m, &o, &g, NULL, &err) == 0)
        etk_synth_graph_free(g);
    etk_synth_model_free(m);
    return 0;
}
