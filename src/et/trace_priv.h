/* trace_priv.h — private parts of etk_trace shared by trace.c (building, copying, indexing)
 * and reader.c / writer.c. */
#ifndef ETK_TRACE_PRIV_H
#define ETK_TRACE_PRIV_H

#include "etkit/et.h"

/* Interned attribute names: "num_ops" appears on most nodes; store it once per trace. */
const char *etk__intern(etk_trace *t, const char *s, size_t len);
/* Deep-copy an attribute's value (strings, lists) into the trace's arena; name interned. */
int etk__attr_copy(etk_trace *t, etk_attr *dst, const etk_attr *src);
/* Reserve the next node slot (zeroed); NULL on out-of-memory. */
etk_node *etk__trace_push(etk_trace *t);
/* Record a warning (first ETK_MAX_WARN kept). */
void etk__trace_warn(etk_trace *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* malloc, or for >= 2 MiB a huge-page-advised aligned block (free with free()). */
void *etk__big_alloc(size_t bytes);
/* A new trace sized for about `bytes` of encoded trace (arena blocks, node array). */
etk_trace *etk__trace_new_hint(uint64_t bytes);
/* Element size in bytes of a list kind's array (0 for string/bytes lists). */
size_t etk__list_elem_size(int kind);
/* wire.c: the direct codec. Exact size of a Node message; encode it (returns the end). */
size_t etk__node_encoded_size(const etk_node *n);
uint8_t *etk__node_encode(const etk_node *n, uint8_t *out);
bool etk__attr_kind_valid(int kind);
/* Decode a Node message into *n (allocations in t->arena). 0: done; 1: not handled (unusual
 * layout or malformed) — use the protobuf-c path, which also produces the diagnosis. On 1,
 * what was allocated stays in the arena unused. */
int etk__node_decode_fast(etk_trace *t, const uint8_t *msg, size_t len, etk_node *n);
/* writer.c: the reference encoding of a node through protobuf-c (for tests). */
int etk__node_pack_pbc(const etk_node *n, uint8_t **out, size_t *len);
#endif
