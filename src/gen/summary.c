/* summary.c — the training summary (etk_gen_summarize in training mode): one representative
 * per pipeline stage is emitted without writing a trace, and its FLOPs, bytes, memory and
 * node counts are added up over the ranks of the stage. infer.c uses it too, for the layers and
 * parameters of the same plan. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "gen/fastwrite.h"
#include "gen/infer.h"
#include "gen/lower.h"
#include "util/outset.h"
#include "gen/train.h"

static uint32_t min_u32(const uint32_t *x, uint32_t n)
{
    uint32_t m = x[0];
    for (uint32_t i = 1; i < n; i++)
        m = x[i] < m ? x[i] : m;
    return m;
}

static uint32_t max_u32(const uint32_t *x, uint32_t n)
{
    uint32_t m = x[0];
    for (uint32_t i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

int gen_train_summarize(const etk_gen_config *cfg, etk_gen_summary *out, etk_error *err)
{
    memset(out, 0, sizeof *out);
    gen G;
    int rc = gen_init(&G, cfg, err);
    if (rc)
        return rc;
    out->n_ranks = cfg->n_ranks;
    out->n_stages = G.p;
    out->micro_batches = G.m;
    out->tokens_per_step = cfg->tokens_per_step;
    out->gpu_bytes = cfg->gpu_bytes;
    out->stages = calloc(G.p, sizeof(etk_gen_stage));
    if (!out->stages) {
        gen_free(&G);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    if ((rc = etk_model_params(&cfg->model, &out->params_total, err)))
        goto done;
    uint32_t per_stage_ranks = cfg->tp * cfg->dp * G.cp;
    for (uint32_t s = 0; s < G.p; s++) {
        etk_gen_stage *st = &out->stages[s];
        st->stage = s;
        st->first_layer = G.first[s];
        st->layers = gen_stage_layers(&G, s);
        st->has_embed = s == 0;
        st->has_head = s == G.p - 1;
        /* middle stages with the same layers per chunk have the same nodes (only their order in
         * the schedule differs): count one, copy the totals */
        bool same = s > 1 && s + 1 < G.p && gen_stage_dense(&G, s) == gen_stage_dense(&G, s - 1);
        for (uint32_t c = 0; same && c < G.v; c++)
            same = G.nl[c * G.p + s] == G.nl[c * G.p + s - 1] &&
                   (!G.win || etk_model_sliding_layers(&cfg->model, G.first[c * G.p + s], G.nl[c * G.p + s]) ==
                                  etk_model_sliding_layers(&cfg->model, G.first[c * G.p + s - 1], G.nl[c * G.p + s - 1]));
        if (same) {
            const etk_gen_stage *ps = &out->stages[s - 1];
            st->nodes = ps->nodes;
            st->flops = ps->flops;
            st->model_flops = ps->model_flops;
            st->compute_ns = ps->compute_ns;
            st->fwd_compute_ns = ps->fwd_compute_ns;
            memcpy(st->coll_count, ps->coll_count, sizeof st->coll_count);
            memcpy(st->coll_bytes, ps->coll_bytes, sizeof st->coll_bytes);
            st->send_count = ps->send_count;
            st->send_bytes = ps->send_bytes;
            st->recv_count = ps->recv_count;
            st->recv_bytes = ps->recv_bytes;
        } else if ((rc = gen_emit_stage(&G, s, 0, 0, 0, NULL, NULL, st, err))) {
            goto done;
        }
        gen_stage_memory(&G, s, st);
        out->step_flops += st->flops * per_stage_ranks;
        out->model_flops += st->model_flops * per_stage_ranks;
        if (st->total_bytes > out->peak_bytes) {
            out->peak_bytes = st->total_bytes;
            out->peak_stage = s;
        }
    }
    out->fits = out->peak_bytes <= out->gpu_bytes;
    uint32_t l = (uint32_t)cfg->model.layers, V = G.p * G.v;
    const char *unit = G.v > 1 ? "virtual stage" : "stage";
    if ((cfg->first_stage_layers || cfg->last_stage_layers) && G.v > 1)
        snprintf(out->layer_split, sizeof out->layer_split,
                 "%u layers: first stage %u, last %u, the others %u-%u; %u chunks per stage of %u-%u layers", l,
                 out->stages[0].layers, out->stages[G.p - 1].layers, out->stages[G.p > 2 ? 1 : 0].layers,
                 out->stages[G.p > 2 ? G.p - 2 : 0].layers, G.v, min_u32(G.nl, V), max_u32(G.nl, V));
    else if (cfg->first_stage_layers || cfg->last_stage_layers)
        snprintf(out->layer_split, sizeof out->layer_split, "%u layers: first %s %u, last %u, the others %u-%u", l,
                 unit, G.nl[0], G.nl[V - 1], G.nl[V > 2 ? 1 : 0], G.nl[V > 2 ? V - 2 : 0]);
    else if (l % V == 0)
        snprintf(out->layer_split, sizeof out->layer_split, "%u layers: %u per %s", l, l / V, unit);
    else
        snprintf(out->layer_split, sizeof out->layer_split,
                 "%u layers over %u %ss (uneven): %ss 0-%u hold %u, the others %u", l, V, unit, unit, l % V - 1,
                 l / V + 1, l / V);
done:
    gen_free(&G);
    if (rc)
        etk_gen_summary_free(out);
    return rc;
}
