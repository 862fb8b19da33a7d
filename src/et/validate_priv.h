/* validate_priv.h — private to the validator (src/et/). Module map (arrows point down):
 *   validate.c   etk_validate_workload: runs the per-file checks on each rank, then the
 *                cross-rank ones
 *   vstruct.c    per-file structure checks (etk_validate_trace)
 *   vdeadlock.c  deadlock over the contracted global graph
 *   vcoll.c      collective sequences per group, send/recv matching
 *   vgroups.c    the group table of a workload, node -> group, union-find
 *   findings.c   the findings list and the helpers every check uses
 * validate -> (vstruct, vdeadlock -> vcoll -> vgroups) -> findings. */
#ifndef ETK_ET_VALIDATE_PRIV_H
#define ETK_ET_VALIDATE_PRIV_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etkit/validate.h"
#include "util/kmap.h"

#define LIST_DEFAULT 5   /* ids/locations named in an aggregated message */
#define WITNESS_MAX 12   /* steps of a cycle written out */
#define NAME_MAX_SHOWN 60 /* characters of a node name in a message (kernel names are long) */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

typedef struct u64vec {
    uint64_t *v;
    size_t n, cap;
} u64vec;

typedef struct coll_rec {
    uint32_t gid;      /* global node number (first member that issued it) */
    uint32_t rank;
    int64_t type, size;
} coll_rec;

typedef struct grp {
    const char *id;
    uint32_t *members; /* sorted; NULL for the implicit all-ranks group */
    uint32_t n_members;
    bool defined, all;
    coll_rec *seq;     /* the k-th collective on the group, as issued by the first rank */
    size_t n_seq, cap_seq;
    uint64_t n_undef;  /* nodes naming this undefined group */
    int64_t undef_rank, undef_idx;
    uint64_t n_mismatch;
    int64_t mm_k, mm_rank, mm_idx; /* first mismatch: position, rank, node index */
} grp;

typedef struct xstate {
    etk_workload *w;
    etk_findings *out;
    uint32_t nlist;
    grp *g;
    size_t n_g, cap_g;
    etk_kmap names;  /* group name (etk_hash_str, length) -> index in g */
    uint32_t all;    /* index of the all-ranks group */
    size_t *off;     /* n_ranks + 1: global node numbers of rank r start at off[r] */
    uint32_t *uf;    /* union-find parent over global node numbers */
    int32_t **res;   /* per rank: resolved dependencies (etk_dg_resolve) */
} xstate;

/* findings.c: append a finding; the message is formatted into the findings' arena. */
int val_add(etk_findings *f, int sev, const char *code, int64_t rank, const char *file,
            int64_t idx, uint64_t id, uint64_t count, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 9, 10)))
#endif
    ;
void val_sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *val_sb_str(sbuf *b);
int val_u64_push(u64vec *a, uint64_t x);
size_t val_u64_unique(u64vec *a);
const char *val_tpath(const etk_trace *t);
const char *val_nname(const etk_node *n);
/* vstruct.c: the per-file checks of one rank */
int val_validate_trace(etk_trace *t, int64_t rank, const etk_validate_opts *opts,
                       etk_findings *out, bool *cyclic, int32_t **res_keep, etk_error *err);
/* vgroups.c */
const char *val_all_note(const grp *g);
bool val_grp_has(const grp *g, uint32_t r);
uint32_t val_uf_find(uint32_t *p, uint32_t a);
void val_uf_union(uint32_t *p, uint32_t a, uint32_t b);
int val_load_groups(xstate *x);
int64_t val_node_group(xstate *x, const etk_node *n);
/* vcoll.c, vdeadlock.c */
int val_check_collectives(xstate *x);
int val_check_p2p(xstate *x);
int val_check_deadlock(xstate *x, etk_error *err);

#endif
