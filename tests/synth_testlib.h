/* synth_testlib.h — a hand-built corpus for the etkit synth tests (tests/test_synth.c
 * test_profiles, tests/test_synth_size.c): GEMM-only rank graphs, the first half of 3 layers, the
 * second of 12, layers of 1 or 2 nodes (1 + (g + l (l + 1) / 2) mod 2 for graph g, layer l: 4 or 5
 * nodes for the 3-layer graphs, 18 for the 12-layer ones), every node a child of all the nodes of
 * the layer before. Header-only. */
#ifndef ETK_SYNTH_TESTLIB_H
#define ETK_SYNTH_TESTLIB_H

#include "testutil.h"

#include "etkit/synth.h"

/* gs[0 .. ng - 1]: FLOPs per node flops_short (3-layer graphs) or flops_long (12-layer), tensor
 * bytes 100 */
static inline void synth_chain_corpus(etk_synth_graph **gs, int ng, double flops_short, double flops_long)
{
    etk_error err = {0};
    int gemm = etk_synth_tok_parse("COMP:gemm");
    for (int g = 0; g < ng; g++) {
        uint32_t L = g < ng / 2 ? 3 : 12, nn = 0, np = 0, prev_a = 0, prev_b = 0;
        uint16_t tok[64];
        double val[64 * ETK_SYNTH_N_ATTR] = {0};
        uint32_t off[65], par[256];
        off[0] = 0;
        for (uint32_t l = 0; l < L; l++) {
            uint32_t size = 1 + (uint32_t)((g + l * (l + 1) / 2) % 2), a = nn;
            for (uint32_t k = 0; k < size; k++, nn++) {
                tok[nn] = (uint16_t)gemm;
                val[nn * ETK_SYNTH_N_ATTR + 0] = L == 3 ? flops_short : flops_long;
                val[nn * ETK_SYNTH_N_ATTR + 1] = 100;
                for (uint32_t q = prev_a; l && q < prev_b; q++)
                    par[np++] = q;
                off[nn + 1] = np;
            }
            prev_a = a, prev_b = nn;
        }
        gs[g] = NULL;
        if (etk_synth_graph_build(nn, tok, val, off, par, &gs[g], NULL, &err))
            fail_msg("build: %s", err.msg);
        assert_int_equal(gs[g]->n_layers, L);
    }
}

#endif
