/* attr.c — attribute constructors for writers and lenient typed reads for consumers
 * (real files disagree on kinds: STAGE writes is_cpu_op as int32, old generators comm_size as
 * uint64; consumers here accept any integer kind, see chakra-et.md). */
#include <math.h>
#include <string.h>

#include "etkit/et.h"

etk_attr etk_attr_i64(const char *name, int64_t v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_INT64};
    a.v.i = v;
    return a;
}

etk_attr etk_attr_u64(const char *name, uint64_t v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_UINT64};
    a.v.u = v;
    return a;
}

etk_attr etk_attr_i32(const char *name, int32_t v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_INT32};
    a.v.i = v;
    return a;
}

etk_attr etk_attr_bool(const char *name, bool v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_BOOL};
    a.v.b = v;
    return a;
}

etk_attr etk_attr_str(const char *name, const char *v)
{
    etk_attr a = {.name = name, .kind = ETK_ATTR_STRING};
    a.v.s = v;
    return a;
}

static bool is_signed_scalar(int k)
{
    return k == ETK_ATTR_INT32 || k == ETK_ATTR_INT64 || k == ETK_ATTR_SINT32 ||
           k == ETK_ATTR_SINT64 || k == ETK_ATTR_SFIXED32 || k == ETK_ATTR_SFIXED64;
}

static bool is_unsigned_scalar(int k)
{
    return k == ETK_ATTR_UINT32 || k == ETK_ATTR_UINT64 || k == ETK_ATTR_FIXED32 ||
           k == ETK_ATTR_FIXED64;
}

bool etk_attr_as_i64(const etk_attr *a, int64_t *out)
{
    if (!a)
        return false;
    if (is_signed_scalar(a->kind)) {
        *out = a->v.i;
        return true;
    }
    if (is_unsigned_scalar(a->kind)) {
        if (a->v.u > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)a->v.u;
        return true;
    }
    if (a->kind == ETK_ATTR_BOOL) {
        *out = a->v.b ? 1 : 0;
        return true;
    }
    if (a->kind == ETK_ATTR_DOUBLE || a->kind == ETK_ATTR_FLOAT) {
        double d = a->kind == ETK_ATTR_FLOAT ? (double)a->v.f : a->v.d;
        if (!(d >= -9.2e18 && d <= 9.2e18) || floor(d) != d)
            return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

bool etk_attr_as_u64(const etk_attr *a, uint64_t *out)
{
    if (!a)
        return false;
    if (is_unsigned_scalar(a->kind)) {
        *out = a->v.u;
        return true;
    }
    if (a->kind == ETK_ATTR_DOUBLE || a->kind == ETK_ATTR_FLOAT) {
        double d = a->kind == ETK_ATTR_FLOAT ? (double)a->v.f : a->v.d;
        if (!(d >= 0 && d <= 1.8e19) || floor(d) != d)
            return false;
        *out = (uint64_t)d;
        return true;
    }
    int64_t i;
    if (!etk_attr_as_i64(a, &i) || i < 0)
        return false;
    *out = (uint64_t)i;
    return true;
}

bool etk_attr_as_bool(const etk_attr *a, bool *out)
{
    if (!a)
        return false;
    if (a->kind == ETK_ATTR_BOOL) {
        *out = a->v.b;
        return true;
    }
    int64_t i;
    if (!etk_attr_as_i64(a, &i))
        return false;
    *out = i != 0;
    return true;
}

const etk_attr *etk_node_attr(const etk_node *n, const char *name)
{
    /* the first byte before strcmp: the simulator looks up ~20 names per node (calibration
     * re-simulates every row per evaluation), most of them absent */
    for (uint32_t i = 0; i < n->n_attr; i++)
        if (n->attr[i].name == name ||
            (n->attr[i].name[0] == name[0] && !strcmp(n->attr[i].name, name)))
            return &n->attr[i];
    return NULL;
}

bool etk_node_i64(const etk_node *n, const char *name, int64_t *out)
{
    return etk_attr_as_i64(etk_node_attr(n, name), out);
}

bool etk_node_u64(const etk_node *n, const char *name, uint64_t *out)
{
    return etk_attr_as_u64(etk_node_attr(n, name), out);
}

bool etk_node_bool(const etk_node *n, const char *name, bool *out)
{
    return etk_attr_as_bool(etk_node_attr(n, name), out);
}

const char *etk_node_str(const etk_node *n, const char *name)
{
    const etk_attr *a = etk_node_attr(n, name);
    return (a && a->kind == ETK_ATTR_STRING) ? a->v.s : NULL;
}
