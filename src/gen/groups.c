/* groups.c — communicator groups of a plan (numbering of gen.h): the group ids of a rank from
 * its (tp, cp, dp, pp) coordinates, and etk_gen_groups, the comm-group file of the workload.
 * Uses plan.c's rank numbering; used by the emitters (emit.c, infer.c) and writer.c. */
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

/* Expert parallelism folded over TP x CP x DP (training, --etp 1, as Megatron forms its expert
 * groups: expert TP 1, then EP, then expert DP over the tp x cp x dp ranks of a stage, TP
 * fastest): EP groups are ep consecutive ranks of q = tp + TP (cp + CP dp), so EP may exceed DP
 * (Qwen3-235B: TP 2, DP 16, EP 32), and the ranks holding the same experts (EDP) are
 * tp x cp x dp / ep. Otherwise (--etp = --tp, inference) EP is carved from DP at fixed tp, cp. */
bool gen_ep_folded(const etk_gen_config *c)
{
    return c->mode == ETK_GEN_MODE_TRAINING && c->model.experts && c->ep > 1 && c->etp == 1;
}

/* a rank's (tp, cp, dp) from its index q over the stage's expert world (gen_ep_folded) */
static void ep_unfold(const etk_gen_config *c, uint32_t q, uint32_t *t, uint32_t *cp, uint32_t *d)
{
    uint32_t C = c->cp ? c->cp : 1;
    *t = q % c->tp;
    *cp = q / c->tp % C;
    *d = q / (c->tp * C);
}

/* Communicator group ids of the rank at (tp, cp, dp, pp): the numbering of gen.h. */
void gen_group_ids(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp,
                   char pg[ETK_GEN_N_GROUP_KINDS][16])
{
    uint32_t C = c->cp ? c->cp : 1, base = C * c->dp * c->pp, EP = c->ep ? c->ep : 1, X = c->dp / EP;
    uint32_t e = dp % EP, x = dp / EP;
    uint32_t B = 1 + base + c->tp * c->pp + c->tp * C * c->dp + c->tp * c->dp * c->pp;
    snprintf(pg[ETK_GEN_GROUP_TP], 16, "%u", 1 + cp + C * dp + C * c->dp * pp);
    snprintf(pg[ETK_GEN_GROUP_DP], 16, "%u", 1 + base + tp + c->tp * pp);
    snprintf(pg[ETK_GEN_GROUP_EMB], 16, "%u", 1 + base + c->tp * c->pp + tp + c->tp * (cp + C * dp));
    snprintf(pg[ETK_GEN_GROUP_CP], 16, "%u", 1 + base + c->tp * c->pp + c->tp * C * c->dp + tp + c->tp * (dp + c->dp * pp));
    if (gen_ep_folded(c)) {
        uint32_t q = tp + c->tp * (cp + C * dp), XW = c->tp * C * c->dp / EP;
        snprintf(pg[ETK_GEN_GROUP_EP], 16, "%u", B + q / EP + XW * pp);
        snprintf(pg[ETK_GEN_GROUP_EDP], 16, "%u", B + XW * c->pp + q % EP + EP * pp);
        return;
    }
    snprintf(pg[ETK_GEN_GROUP_EP], 16, "%u", B + tp + c->tp * (cp + C * (x + X * pp)));
    snprintf(pg[ETK_GEN_GROUP_EDP], 16, "%u", B + c->tp * C * X * c->pp + tp + c->tp * (e + EP * pp));
}

void etk_gen_group_ids(const etk_gen_config *c, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t pp,
                       char pg[ETK_GEN_N_GROUP_KINDS][16])
{
    gen_group_ids(c, tp, cp, dp, pp, pg);
}

int etk_gen_groups(const etk_gen_config *c, etk_groups **out, etk_error *err)
{
    *out = NULL;
    if (!c->n_ranks)
        return etk_err(err, ETK_EINVAL, "plan not checked: call etk_gen_check first");
    etk_groups *g = etk_groups_new();
    if (!g)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    uint32_t C = c->cp ? c->cp : 1;
    uint32_t n = c->tp * c->dp * C; /* the largest group: the folded expert world */
    uint32_t *r = malloc(sizeof(uint32_t) * n);
    if (!r) {
        etk_groups_free(g);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    char id[ETK_GEN_N_GROUP_KINDS][16];
    int rc = 0;
    /* ids from gen_group_ids() of a member: the same numbering as the rank files */
    for (uint32_t pp = 0; pp < c->pp && !rc && c->tp > 1; pp++)
        for (uint32_t dp = 0; dp < c->dp && !rc; dp++)
            for (uint32_t cp = 0; cp < C && !rc; cp++) {
                for (uint32_t t = 0; t < c->tp; t++)
                    r[t] = etk_gen_rank_cp(c, t, cp, dp, pp);
                gen_group_ids(c, 0, cp, dp, pp, id);
                rc = etk_groups_add(g, id[0], r, c->tp);
            }
    for (uint32_t pp = 0; pp < c->pp && !rc && c->dp * C > 1; pp++)
        for (uint32_t t = 0; t < c->tp && !rc; t++) {
            for (uint32_t d = 0; d < c->dp; d++)
                for (uint32_t cp = 0; cp < C; cp++)
                    r[d * C + cp] = etk_gen_rank_cp(c, t, cp, d, pp);
            gen_group_ids(c, t, 0, 0, pp, id);
            rc = etk_groups_add(g, id[1], r, c->dp * C);
        }
    /* embedding groups: only with a tied output layer on separate stages */
    bool emb = false;
    if (c->pp > 1) {
        etk_graph *gr;
        if (!etk_graph_load(&c->model, 1, &gr, NULL)) {
            const gsection *H = &gr->sec[G_SEC_HEAD];
            for (int j = 0; j < H->nops; j++)
                for (int i = 0; i < H->ops[j].nin; i++)
                    emb |= gr->t[H->ops[j].in[i]].weight && gr->t[H->ops[j].in[i]].section == G_SEC_EMBED;
            etk_graph_free(gr);
        }
    }
    for (uint32_t d = 0; d < c->dp && !rc && emb; d++)
        for (uint32_t cp = 0; cp < C && !rc; cp++)
            for (uint32_t t = 0; t < c->tp && !rc; t++) {
                uint32_t two[2] = {etk_gen_rank_cp(c, t, cp, d, 0), etk_gen_rank_cp(c, t, cp, d, c->pp - 1)};
                gen_group_ids(c, t, cp, d, 0, id);
                rc = etk_groups_add(g, id[2], two, 2);
            }
    for (uint32_t pp = 0; pp < c->pp && !rc && C > 1; pp++)
        for (uint32_t d = 0; d < c->dp && !rc; d++)
            for (uint32_t t = 0; t < c->tp && !rc; t++) {
                for (uint32_t cp = 0; cp < C; cp++)
                    r[cp] = etk_gen_rank_cp(c, t, cp, d, pp);
                gen_group_ids(c, t, 0, d, pp, id);
                rc = etk_groups_add(g, id[3], r, C);
            }
    /* expert parallelism: EP groups (dp = e + EP x) and expert-data-parallel groups (same e);
     * folded: q = e + EP x over the stage's tp x cp x dp ranks */
    uint32_t EP = c->ep ? c->ep : 1, X = c->dp / EP;
    if (gen_ep_folded(c)) {
        uint32_t XW = c->tp * C * c->dp / EP, t, cp, d;
        for (uint32_t pp = 0; pp < c->pp && !rc; pp++)
            for (uint32_t x = 0; x < XW && !rc; x++) {
                for (uint32_t e = 0; e < EP; e++) {
                    ep_unfold(c, e + EP * x, &t, &cp, &d);
                    r[e] = etk_gen_rank_cp(c, t, cp, d, pp);
                }
                ep_unfold(c, EP * x, &t, &cp, &d);
                gen_group_ids(c, t, cp, d, pp, id);
                rc = etk_groups_add(g, id[ETK_GEN_GROUP_EP], r, EP);
            }
        for (uint32_t pp = 0; pp < c->pp && !rc && XW > 1; pp++)
            for (uint32_t e = 0; e < EP && !rc; e++) {
                for (uint32_t x = 0; x < XW; x++) {
                    ep_unfold(c, e + EP * x, &t, &cp, &d);
                    r[x] = etk_gen_rank_cp(c, t, cp, d, pp);
                }
                ep_unfold(c, e, &t, &cp, &d);
                gen_group_ids(c, t, cp, d, pp, id);
                rc = etk_groups_add(g, id[ETK_GEN_GROUP_EDP], r, XW);
            }
        EP = 1; /* done */
    }
    for (uint32_t pp = 0; pp < c->pp && !rc && EP > 1; pp++)
        for (uint32_t x = 0; x < X && !rc; x++)
            for (uint32_t cp = 0; cp < C && !rc; cp++)
                for (uint32_t t = 0; t < c->tp && !rc; t++) {
                    for (uint32_t e = 0; e < EP; e++)
                        r[e] = etk_gen_rank_cp(c, t, cp, e + EP * x, pp);
                    gen_group_ids(c, t, cp, EP * x, pp, id);
                    rc = etk_groups_add(g, id[ETK_GEN_GROUP_EP], r, EP);
                }
    for (uint32_t pp = 0; pp < c->pp && !rc && EP > 1 && X * C > 1; pp++)
        for (uint32_t e = 0; e < EP && !rc; e++)
            for (uint32_t t = 0; t < c->tp && !rc; t++) {
                for (uint32_t x = 0; x < X; x++)
                    for (uint32_t cp = 0; cp < C; cp++)
                        r[x * C + cp] = etk_gen_rank_cp(c, t, cp, e + EP * x, pp);
                gen_group_ids(c, t, 0, e, pp, id);
                rc = etk_groups_add(g, id[ETK_GEN_GROUP_EDP], r, X * C);
            }
    free(r);
    if (rc) {
        etk_groups_free(g);
        return etk_err(err, ETK_ENOMEM, "out of memory building communicator groups");
    }
    *out = g;
    return 0;
}
