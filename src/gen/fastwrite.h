/* fastwrite.h — per-class encoded templates for writing many rank files (private to gen/). */
#ifndef ETK_GEN_FASTWRITE_H
#define ETK_GEN_FASTWRITE_H
#include "etkit/et.h"
#include "etkit/gen.h"

/* roles: 1 + ETK_GEN_GROUP_* (a communicator group to rebind), or a peer: SEG_PEER + index in
 * the peers array (previous / next pipeline stage, previous / next CP rank of the ring) */
enum { SEG_PEER = 100 };
enum { PEER_PREV = 0, PEER_NEXT = 1, PEER_CPPREV = 2, PEER_CPNEXT = 3, N_PEERS = 4 };

typedef struct etk_gen_seg {
    size_t off, len; /* blob bytes before the rank-dependent node */
    size_t node;     /* index of that node in the class trace, (size_t)-1 for the tail */
    int role;        /* SEG_*: what to rebind */
} etk_gen_seg;

typedef struct etk_gen_class {
    const etk_trace *t;
    uint8_t *blob;
    size_t len;
    etk_gen_seg *seg;
    size_t nseg;
} etk_gen_class;

int etk_gen_class_build(etk_gen_class *k, const etk_trace *t, const char (*pg)[16], const uint32_t *peers,
                        etk_error *err);
void etk_gen_class_free(etk_gen_class *k);
int etk_gen_class_write(const etk_gen_class *k, const char *path, const char *version, const char (*pg)[16],
                        const uint32_t *peers, uint64_t *bytes, etk_error *err);
int etk_gen_sync_dir(const char *path, etk_error *err);
#endif
