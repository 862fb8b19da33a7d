/* outset.h — all-or-nothing multi-file outputs (a rank set PREFIX.<rank>.et + PREFIX.json):
 * the files are written into a temporary folder next to the prefix and published by renames
 * only when every one is complete; a lock on the prefix keeps two writers apart; ranks of an
 * earlier, larger run and the temporary files of dead writers are removed. See outset.c. */
#ifndef ETK_UTIL_OUTSET_H
#define ETK_UTIL_OUTSET_H

#include <stdint.h>

#include "etkit/et.h"

typedef struct etk_outset {
    char *prefix;  /* as given: the final files are <prefix>.<rank>.et and <prefix>.json */
    char *dir;     /* folder of the prefix ("." when it has none) */
    char *base;    /* last component of the prefix */
    char *tmp;     /* <dir>/.<base>.etkit-tmp.<pid>: the set being written */
    char *tprefix; /* <tmp>/<base>: the prefix to write under */
    char *lock;    /* <prefix>.lock */
    int lock_fd;
} etk_outset;

/* Before any work: the folder of `prefix` exists, is a folder and is writable (a file is
 * created and removed there); the message names the folder and the reason. */
int etk_outset_check(const char *prefix, etk_error *err);
/* etk_outset_check, the lock (a second writer gets an error naming PREFIX.lock), removal of
 * dead writers' temporary files and folders, and a fresh temporary folder. */
int etk_outset_begin(etk_outset *o, const char *prefix, etk_error *err);
/* Publish: the old PREFIX.json is removed, the n_ranks rank files renamed into place, stale
 * PREFIX.<N>.et with N >= n_ranks removed, PREFIX.json renamed last (when written), the folder
 * synced; the temporary folder and the lock are removed. On error the set is aborted. */
int etk_outset_commit(etk_outset *o, uint32_t n_ranks, etk_error *err);
/* Remove the temporary folder and release the lock; the final names are untouched. */
void etk_outset_abort(etk_outset *o);

#endif
