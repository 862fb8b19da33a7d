/* comm.c — live mode's communicators: ncclCommInitRank / the MPI world joins and ncclCommSplit
 * collect their members, then become groups of the engine (and of the record); the members are
 * answered together. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/coord_priv.h"

const lcomm *live_find_comm(const coord *c, const char *group)
{
    for (uint32_t i = 0; i < c->n_comms; i++)
        if (c->comms[i].done && !c->comms[i].split && !strncmp(c->comms[i].name, group, 64))
            return &c->comms[i];
    return NULL;
}

/* A new communicator group: in the engine and the record. */
static int add_group(coord *c, const char *name, const uint32_t *ranks, uint32_t n, etk_error *err)
{
    if (etk_groups_add(c->groups, name, ranks, n) != 0)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    return etk_sim_add_group(c->s, &c->groups->groups[c->groups->n_groups - 1], err);
}

static lcomm *new_comm(coord *c, const char *key, uint32_t n, etk_error *err)
{
    lcomm *nc = realloc(c->comms, (c->n_comms + 1) * sizeof *nc);
    if (!nc) {
        etk_err(err, ETK_ENOMEM, "out of memory");
        return NULL;
    }
    c->comms = nc;
    lcomm *cm = &c->comms[c->n_comms];
    memset(cm, 0, sizeof *cm);
    snprintf(cm->key, sizeof cm->key, "%s", key);
    cm->n = n;
    cm->ranks = malloc(n * sizeof *cm->ranks);
    cm->waiting = malloc(n * sizeof *cm->waiting);
    cm->color = malloc(n * sizeof *cm->color);
    cm->skey = malloc(n * sizeof *cm->skey);
    c->n_comms++;
    if (!cm->ranks || !cm->waiting || !cm->color || !cm->skey) {
        etk_err(err, ETK_ENOMEM, "out of memory");
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        cm->ranks[i] = UINT32_MAX;
    return cm;
}

/* ncclCommSplit complete: one group per color, members by (key, parent rank). */
static int split_done(coord *c, lcomm *sp, etk_error *err)
{
    uint32_t n = sp->n;
    bool *taken = calloc(n, sizeof *taken);
    uint32_t *mem = malloc(n * sizeof *mem);
    if (!taken || !mem) {
        free(taken);
        free(mem);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    int rc = 0;
    char base[96];
    snprintf(base, sizeof base, "%s", sp->name);
    for (uint32_t i = 0; i < n && !rc; i++) {
        if (taken[i])
            continue;
        int64_t col = sp->color[i];
        uint32_t k = 0;
        for (uint32_t j = i; j < n; j++)
            if (!taken[j] && sp->color[j] == col) {
                taken[j] = true;
                mem[k++] = j;
            }
        /* members by (key, parent rank): insertion sort, k is small */
        for (uint32_t a = 1; a < k; a++)
            for (uint32_t b = a; b > 0 && (sp->skey[mem[b - 1]] > sp->skey[mem[b]] ||
                                           (sp->skey[mem[b - 1]] == sp->skey[mem[b]] && mem[b - 1] > mem[b]));
                 b--) {
                uint32_t t = mem[b];
                mem[b] = mem[b - 1];
                mem[b - 1] = t;
            }
        etk_live_reply rp;
        memset(&rp, 0, sizeof rp);
        rp.op = ETK_LR_COMM;
        if (col >= 0) {
            char nm[128];
            snprintf(nm, sizeof nm, "%sc%lld", base, (long long)col);
            if (strlen(nm) > 63) /* keep names within the protocol's 64 bytes */
                snprintf(nm, sizeof nm, "split%u", c->n_comms);
            lcomm *g = new_comm(c, nm, k, err);
            if (!g) {
                rc = err->code;
                break;
            }
            sp = NULL; /* c->comms moved */
            for (uint32_t q = 0; q < c->n_comms && !sp; q++)
                if (c->comms[q].split && !strcmp(c->comms[q].name, base))
                    sp = &c->comms[q];
            g = &c->comms[c->n_comms - 1];
            snprintf(g->name, sizeof g->name, "%.63s", nm);
            g->done = true;
            for (uint32_t q = 0; q < k; q++)
                g->ranks[q] = sp->ranks[mem[q]];
            if ((rc = add_group(c, g->name, g->ranks, k, err)) != 0)
                break;
            snprintf(rp.msg, sizeof rp.msg, "%s", g->name);
        }
        rp.dep_end[0] = col >= 0 ? k : 0;
        for (uint32_t q = 0; q < k; q++) {
            rp.t_ns = col >= 0 ? q : 0;
            uint32_t r = sp->ranks[mem[q]];
            c->r[r].state = R_RUN;
            live_reply(c, r, &rp);
        }
    }
    free(taken);
    free(mem);
    return rc;
}

int live_comm_join(coord *c, uint32_t rank, const etk_live_msg *m, etk_error *err)
{
    bool split = m->op == ETK_LM_COMM_SPLIT;
    char grp[sizeof m->group + 1], key[96];
    memcpy(grp, m->group, sizeof m->group);
    grp[sizeof m->group] = 0;
    if (split)
        snprintf(key, sizeof key, "%s.%llds", grp, (long long)m->n); /* the parent's n-th split */
    else
        snprintf(key, sizeof key, "%s", grp);
    if (m->tag < 1 || (uint32_t)m->tag > c->n || m->peer < 0 || m->peer >= m->tag)
        return etk_err(err, ETK_EINVAL, "rank %u: communicator of %d ranks with member %d: wanted 1..%u ranks "
                       "and a member below that", rank, m->tag, m->peer, c->n);
    lcomm *cm = NULL;
    for (uint32_t i = 0; i < c->n_comms; i++)
        if (!c->comms[i].done && c->comms[i].split == split && !strcmp(c->comms[i].key, key))
            cm = &c->comms[i];
    if (!cm) {
        uint32_t same = 0;
        for (uint32_t i = 0; i < c->n_comms; i++)
            same += !strcmp(c->comms[i].key, key);
        if (!(cm = new_comm(c, key, (uint32_t)m->tag, err)))
            return err->code;
        cm->split = split;
        if (split)
            snprintf(cm->name, sizeof cm->name, "%s", key);
        else if (same)
            snprintf(cm->name, sizeof cm->name, "%.56s#%u", key, same + 1);
        else
            snprintf(cm->name, sizeof cm->name, "%.60s", key);
    }
    if (cm->n != (uint32_t)m->tag)
        return etk_err(err, ETK_EINVAL, "rank %u joins communicator %s as one of %d ranks; rank %u said %u",
                       rank, key, m->tag, cm->ranks[0] != UINT32_MAX ? cm->ranks[0] : rank, cm->n);
    if (cm->ranks[m->peer] != UINT32_MAX)
        return etk_err(err, ETK_EINVAL, "communicator %s: member %d joined twice (ranks %u and %u)", key, m->peer,
                       cm->ranks[m->peer], rank);
    cm->ranks[m->peer] = rank;
    cm->color[m->peer] = m->m;
    cm->skey[m->peer] = m->k;
    cm->waiting[cm->arrived++] = rank;
    c->r[rank].state = R_INIT;
    snprintf(c->r[rank].call, sizeof c->r[rank].call, "%s (communicator %.64s, %u of %u joined)",
             split ? "ncclCommSplit" : "ncclCommInitRank", key, cm->arrived, cm->n);
    if (cm->arrived < cm->n)
        return 0;
    cm->done = true;
    if (split)
        return split_done(c, cm, err);
    int rc = add_group(c, cm->name, cm->ranks, cm->n, err);
    if (rc)
        return rc;
    etk_live_reply rp;
    memset(&rp, 0, sizeof rp);
    rp.op = ETK_LR_COMM;
    snprintf(rp.msg, sizeof rp.msg, "%s", cm->name);
    for (uint32_t i = 0; i < cm->n; i++) {
        c->r[cm->waiting[i]].state = R_RUN;
        live_reply(c, cm->waiting[i], &rp);
    }
    return 0;
}
