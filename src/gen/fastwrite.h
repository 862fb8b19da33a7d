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
    etk_trace *t;  /* copies of the rank-dependent nodes only (seg[].node indexes them) */
    uint8_t *blob; /* the encoded rank-independent nodes */
    size_t len, cap;
    etk_gen_seg *seg;
    size_t nseg, cap_seg;
    size_t start; /* blob offset where the open segment begins */
    char pg[ETK_GEN_N_GROUP_KINDS][16];
    uint32_t peers[N_PEERS];
} etk_gen_class;

/* Streaming: begin, then put every node of the representative in order (put has the generator's
 * put_fn signature: nodes are encoded as they come, not held), then end. Memory: the encoded
 * blob plus the few rank-dependent nodes. */
int etk_gen_class_begin(etk_gen_class *k, const char (*pg)[16], const uint32_t *peers, etk_error *err);
int etk_gen_class_put(void *k, const etk_node *n, etk_error *err);
int etk_gen_class_end(etk_gen_class *k, etk_error *err);
/* The same from a trace in memory. */
int etk_gen_class_build(etk_gen_class *k, const etk_trace *t, const char (*pg)[16], const uint32_t *peers,
                        etk_error *err);
void etk_gen_class_free(etk_gen_class *k);
int etk_gen_class_write(const etk_gen_class *k, const char *path, const char *version, const char (*pg)[16],
                        const uint32_t *peers, uint64_t *bytes, etk_error *err);
int etk_gen_sync_dir(const char *path, etk_error *err);
#endif
