/* attrs.h — etkit/et.h's attribute constructors (src/et/attr.c), inline for the generator, which
 * builds a few attributes for every node it emits: out of line, the calls were ~30% of a plan
 * search's phase 1 (perf, s35). The same bytes as attr.c's: the whole attribute zeroed, then the
 * value set (nodes.c's memo compares the bytes). */
#ifndef ETKIT_GEN_ATTRS_H
#define ETKIT_GEN_ATTRS_H

#include <string.h>

#include "etkit/et.h"

/* Sets *a in place (the hot path, gen_put_comp): built as a value and copied, an attribute went
 * through the stack in pieces that the copy read back whole (a store-forwarding stall each,
 * perf annotate, s35). v: the value's bits (integers as 64 bits, a string's pointer, a bool 0/1). */
static inline void ga_set(etk_attr *a, const char *name, int32_t kind, uint64_t v)
{
    memset(a, 0, sizeof *a);
    a->name = name;
    a->kind = kind;
    if (kind == ETK_ATTR_BOOL)
        a->v.b = v != 0;
    else if (kind == ETK_ATTR_STRING)
        a->v.s = (const char *)(uintptr_t)v;
    else
        a->v.u = v;
}

/* the value-returning forms, for the colder paths */
static inline etk_attr ga_make(const char *name, int32_t kind, uint64_t v)
{
    etk_attr a;
    ga_set(&a, name, kind, v);
    return a;
}
#define ga_i64(name, v) ga_make((name), ETK_ATTR_INT64, (uint64_t)(int64_t)(v))
#define ga_u64(name, v) ga_make((name), ETK_ATTR_UINT64, (uint64_t)(v))
#define ga_i32(name, v) ga_make((name), ETK_ATTR_INT32, (uint64_t)(int64_t)(int32_t)(v))
#define ga_bool(name, v) ga_make((name), ETK_ATTR_BOOL, (uint64_t)((v) != 0))
#define ga_str(name, v) ga_make((name), ETK_ATTR_STRING, (uint64_t)(uintptr_t)(const char *)(v))

#endif
