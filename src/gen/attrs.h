/* attrs.h — etkit/et.h's attribute constructors (src/et/attr.c), inline for the generator, which
 * builds a few attributes for every node it emits: out of line, the calls were ~30% of a plan
 * search's phase 1 (perf, s35: the returned struct stored through the stack). Same bytes as
 * attr.c's: the whole attribute zeroed, then the value set (nodes.c's memo compares the bytes). */
#ifndef ETKIT_GEN_ATTRS_H
#define ETKIT_GEN_ATTRS_H

#include <string.h>

#include "etkit/et.h"

/* Sets *a in place (the hot path, gen_put_comp): built as a value and copied, an attribute went
 * through the stack in pieces that the copy read back whole (a store-forwarding stall each,
 * perf annotate, s35). The same bytes as the constructors below. */
static inline void ga_set(etk_attr *a, const char *name, int32_t kind, uint64_t v)
{
    memset(a, 0, sizeof *a);
    a->name = name;
    a->kind = kind;
    a->v.u = v;
}
static inline void ga_set_bool(etk_attr *a, const char *name, bool v)
{
    memset(a, 0, sizeof *a);
    a->name = name;
    a->kind = ETK_ATTR_BOOL;
    a->v.b = v;
}
static inline void ga_set_str(etk_attr *a, const char *name, const char *v)
{
    memset(a, 0, sizeof *a);
    a->name = name;
    a->kind = ETK_ATTR_STRING;
    a->v.s = v;
}

static inline etk_attr ga_i64(const char *name, int64_t v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_INT64};
    a.v.i = v;
    return a;
}

static inline etk_attr ga_u64(const char *name, uint64_t v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_UINT64};
    a.v.u = v;
    return a;
}

static inline etk_attr ga_i32(const char *name, int32_t v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_INT32};
    a.v.i = v;
    return a;
}

static inline etk_attr ga_bool(const char *name, bool v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_BOOL};
    a.v.b = v;
    return a;
}

static inline etk_attr ga_str(const char *name, const char *v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_STRING};
    a.v.s = v;
    return a;
}

#endif
