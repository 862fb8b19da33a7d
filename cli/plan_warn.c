/* plan_warn.c — warnings (stderr) on training plans that waste the machine, for `etkit run` and
 * `etkit gen`: fewer micro-batches than pipeline stages, a pipeline bubble over 25% of the step,
 * and pipeline stages holding different numbers of layers (the heaviest sets the pace). */
#include <stdio.h>

#include "plan_warn.h"

/* the 1F1B / GPipe bubble as a fraction of the step, (p - 1) / (v m + p - 1) (Megatron-LM,
 * Narayanan et al. 2021, with v model chunks per stage); zero-bubble schedules excluded */
#define PLAN_WARN_BUBBLE 0.25

double plan_bubble_fraction(const etk_gen_config *c)
{
    double p = c->pp, v = c->vpp > 1 ? c->vpp : 1, m = c->micro_batches;
    if (c->pp <= 1 || c->micro_batches == 0)
        return 0;
    return (p - 1) / (v * m + p - 1);
}

int plan_warnings(const char *cmd, const etk_gen_config *c, const etk_gen_summary *s)
{
    int n = 0;
    if (c->mode == ETK_GEN_MODE_INFERENCE || c->pp <= 1)
        return 0;
    if (c->micro_batches < c->pp) {
        fprintf(stderr, "etkit %s: warning: %u micro-batches per DP rank for %u pipeline stages: stages sit idle "
                        "(give --global-batch at least %u, or fewer stages)\n",
                cmd, c->micro_batches, c->pp, c->pp * c->micro_batch * c->dp);
        n++;
    }
    double b = plan_bubble_fraction(c);
    if (c->schedule != ETK_SCHED_ZBH1 && b > PLAN_WARN_BUBBLE) {
        fprintf(stderr, "etkit %s: warning: pipeline bubble %.0f%% of the step ((pp - 1) / (vpp x micro-batches + "
                        "pp - 1) = %u / %u): more micro-batches (--global-batch), --vpp or --schedule zb-h1 shrink it\n",
                cmd, 100 * b, c->pp - 1, (c->vpp > 1 ? c->vpp : 1) * c->micro_batches + c->pp - 1);
        n++;
    }
    if (s && s->n_stages > 1) {
        uint32_t lo = 0, hi = 0;
        for (uint32_t i = 1; i < s->n_stages; i++) {
            if (s->stages[i].layers < s->stages[lo].layers)
                lo = i;
            if (s->stages[i].layers > s->stages[hi].layers)
                hi = i;
        }
        if (s->stages[hi].layers != s->stages[lo].layers) {
            fprintf(stderr, "etkit %s: warning: unbalanced pipeline: stage %u holds %u layers, stage %u %u (%s): the "
                            "heaviest stage sets the pace\n",
                    cmd, s->stages[hi].stage, s->stages[hi].layers, s->stages[lo].stage, s->stages[lo].layers,
                    s->layer_split);
            n++;
        }
    }
    return n;
}
