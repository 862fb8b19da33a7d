/* writer.c — output of any emitter with one rank class per pipeline stage (training: emit.c,
 * inference: infer.c): per-rank .et files written in parallel threads through fastwrite.c
 * (gen_write_streamed: each stage's representative streamed into the encoder, or emitted into a
 * trace when no stream function is given), and in-memory workloads, folded or not (etk_gen_workload_with). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/gen.h"
#include "etkit/progress.h"
#include "gen/fastwrite.h"
#include "gen/infer.h"
#include "gen/lower.h"
#include "util/outset.h"
#include "gen/train.h"

int gen_put_trace(void *u, const etk_node *n, etk_error *err)
{
    if (!etk_trace_add(u, n))
        return etk_err(err, ETK_ENOMEM, "out of memory adding node %" PRIu64, n->id);
    return 0;
}

#define ET_VERSION "0.0.4"

/* Groups and peers (fastwrite.h's PEER_*) of a rank (see gen.h for the numbering). */
static void bind_rank(const etk_gen_config *c, uint32_t r, char pg[ETK_GEN_N_GROUP_KINDS][16], uint32_t peers[N_PEERS])
{
    uint32_t co[ETK_GEN_N_AXES], C = c->cp ? c->cp : 1;
    etk_gen_coords(c, r, co);
    uint32_t s = co[ETK_GEN_PP], t = co[ETK_GEN_TP], x = co[ETK_GEN_CP], d = co[ETK_GEN_DP];
    gen_group_ids(c, t, x, d, s, pg);
    for (int i = 0; i < N_PEERS; i++)
        peers[i] = UINT32_MAX; /* none */
    if (c->pp > 1) {
        peers[PEER_PREV] = etk_gen_rank_cp(c, t, x, d, (s + c->pp - 1) % c->pp);
        peers[PEER_NEXT] = etk_gen_rank_cp(c, t, x, d, (s + 1) % c->pp);
    }
    if (C > 1) {
        peers[PEER_CPPREV] = etk_gen_rank_cp(c, t, (x + C - 1) % C, d, s);
        peers[PEER_CPNEXT] = etk_gen_rank_cp(c, t, (x + 1) % C, d, s);
    }
}

typedef struct wjob {
    const etk_gen_config *cfg;
    const etk_gen_class *cls;
    const char *prefix;
    uint32_t from, to;
    uint64_t bytes;
    int rc;
    etk_error err;
} wjob;

static void *write_ranks(void *arg)
{
    wjob *j = arg;
    size_t plen = strlen(j->prefix) + 32;
    char *path = malloc(plen);
    if (!path) {
        j->rc = etk_err(&j->err, ETK_ENOMEM, "out of memory");
        return NULL;
    }
    for (uint32_t r = j->from; r < j->to && !j->rc; r++) {
        uint32_t co[ETK_GEN_N_AXES], peers[N_PEERS];
        char pg[ETK_GEN_N_GROUP_KINDS][16];
        etk_gen_coords(j->cfg, r, co);
        bind_rank(j->cfg, r, pg, peers);
        snprintf(path, plen, "%s.%u.et", j->prefix, r);
        j->rc = etk_gen_class_write(&j->cls[co[ETK_GEN_PP]], path, ET_VERSION, (const char(*)[16])pg, peers,
                                    &j->bytes, &j->err);
        if (j->cfg->progress && !j->rc)
            etk_progress_add(j->cfg->progress, 1);
    }
    free(path);
    return NULL;
}

int gen_write_streamed(const etk_gen_config *cfg, uint32_t n_stages, etk_gen_emit_fn emit, gen_stream_fn stream,
                       void *ctx, const char *prefix, uint64_t *bytes_out, etk_error *err)
{
    /* the set is written under a temporary folder and published whole (util/outset.h) */
    etk_outset os;
    int rc = etk_outset_begin(&os, prefix, err);
    if (rc)
        return rc;
    const char *final_prefix = prefix;
    prefix = os.tprefix;
    size_t plen = strlen(prefix) + 32;
    char *path = malloc(plen);
    etk_trace **reps = calloc(n_stages, sizeof *reps);
    etk_gen_class *cls = calloc(n_stages, sizeof *cls);
    uint64_t bytes = 0;
    if (!path || !reps || !cls) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto done;
    }
    /* one template per stage class, bound to its representative */
    for (uint32_t s = 0; s < n_stages && !rc; s++) {
        uint32_t rep = etk_gen_rank(cfg, 0, 0, s), peers[N_PEERS];
        char pg[ETK_GEN_N_GROUP_KINDS][16];
        bind_rank(cfg, rep, pg, peers);
        if (stream) { /* streamed: each node encoded as it is emitted, none held */
            if (!(rc = etk_gen_class_begin(&cls[s], (const char(*)[16])pg, peers, err)) &&
                !(rc = stream(ctx, s, etk_gen_class_put, &cls[s], err)))
                rc = etk_gen_class_end(&cls[s], err);
            continue;
        }
        if (!(reps[s] = etk_trace_new(ET_VERSION))) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
            break;
        }
        if (!(rc = emit(ctx, s, 0, 0, 0, reps[s], err)))
            rc = etk_gen_class_build(&cls[s], reps[s], (const char(*)[16])pg, peers, err);
        etk_trace_free(reps[s]); /* the class keeps what it needs */
        reps[s] = NULL;
    }
    /* groups first: their fsync is cheap before the rank files are written */
    if (!rc) {
        etk_groups *g;
        if (!(rc = etk_gen_groups(cfg, &g, err))) {
            snprintf(path, plen, "%s.json", prefix);
            rc = etk_groups_write(g, path, err);
            etk_groups_free(g);
        }
    }
    if (!rc) {
        /* rank files in parallel: the work is mostly the kernel creating and filling files */
        uint32_t nt = cfg->n_ranks >= 64 ? 4 : 1;
        wjob jobs[4];
        pthread_t th[4];
        uint32_t per = (cfg->n_ranks + nt - 1) / nt;
        for (uint32_t i = 0; i < nt; i++) {
            jobs[i] = (wjob){cfg, cls, prefix, i * per, (i + 1) * per < cfg->n_ranks ? (i + 1) * per : cfg->n_ranks,
                             0, 0, {0, ""}};
            if (nt == 1 || pthread_create(&th[i], NULL, write_ranks, &jobs[i]) != 0) {
                write_ranks(&jobs[i]);
                th[i] = 0;
            }
        }
        for (uint32_t i = 0; i < nt; i++) {
            if (th[i])
                pthread_join(th[i], NULL);
            bytes += jobs[i].bytes;
            if (jobs[i].rc && !rc) {
                rc = jobs[i].rc;
                if (err)
                    *err = jobs[i].err;
            }
        }
    }
    if (!rc && !cfg->no_sync)
        rc = etk_gen_sync_dir(prefix, err);
done:
    if (rc) {
        etk_outset_abort(&os);
        etk_err_prefix(err, "%s: nothing written", final_prefix);
    } else {
        rc = etk_outset_commit(&os, cfg->n_ranks, err);
    }
    for (uint32_t s = 0; reps && cls && s < n_stages; s++) {
        etk_gen_class_free(&cls[s]);
        etk_trace_free(reps[s]);
    }
    free(reps);
    free(cls);
    free(path);
    if (bytes_out)
        *bytes_out = bytes;
    return rc;
}

int etk_gen_workload_with(const etk_gen_config *cfg, uint32_t n_stages, etk_gen_emit_fn emit, void *ctx, bool fold,
                          etk_workload **out, etk_error *err)
{
    *out = NULL;
    int rc = 0;
    etk_workload *w = calloc(1, sizeof *w);
    uint32_t ncp = cfg->cp_comm == ETK_CP_RING ? cfg->cp : 1;
    if (w) {
        w->n_ranks = cfg->n_ranks;
        w->ranks = calloc(cfg->n_ranks, sizeof(etk_trace *));
        /* with the CP ring a rank's ring neighbours must be class representatives too (folding
         * matches sends among representatives): one class per (stage, cp) */
        w->n_classes = n_stages * ncp;
        w->class_of = calloc(cfg->n_ranks, sizeof(uint32_t));
        w->class_rep = calloc(w->n_classes, sizeof(uint32_t));
        w->prefix = strdup("gen");
    }
    if (!w || !w->ranks || !w->class_of || !w->class_rep) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto fail;
    }
    for (uint32_t r = 0; r < cfg->n_ranks; r++) {
        uint32_t co[ETK_GEN_N_AXES];
        etk_gen_coords(cfg, r, co);
        w->class_of[r] = co[ETK_GEN_PP] * ncp + (ncp > 1 ? co[ETK_GEN_CP] : 0);
    }
    for (uint32_t s = 0; s < n_stages; s++)
        for (uint32_t x = 0; x < ncp; x++)
            w->class_rep[s * ncp + x] = etk_gen_rank_cp(cfg, 0, x, 0, s);
    for (uint32_t r = 0; r < cfg->n_ranks; r++) {
        uint32_t co[ETK_GEN_N_AXES];
        etk_gen_coords(cfg, r, co);
        if (fold && r != w->class_rep[w->class_of[r]])
            continue;
        etk_trace *t = etk_trace_new(ET_VERSION);
        if (!t) {
            rc = etk_err(err, ETK_ENOMEM, "out of memory");
            goto fail;
        }
        w->ranks[r] = t;
        if ((rc = emit(ctx, co[ETK_GEN_PP], co[ETK_GEN_TP], co[ETK_GEN_CP], co[ETK_GEN_DP], t, err)))
            goto fail;
    }
    if ((rc = etk_gen_groups(cfg, &w->groups, err)))
        goto fail;
    *out = w;
    return 0;
fail:
    if (w)
        etk_workload_free(w);
    return rc;
}
