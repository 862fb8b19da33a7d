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
#endif
