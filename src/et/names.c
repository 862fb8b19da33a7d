/* names.c — names of the Chakra enums and attribute kinds (as spelled in et_def.proto), and
 * the attribute-kind conventions of ../shared/spec/chakra-et.md that readers check. */
#include <string.h>

#include "etkit/et.h"

static const char *const node_types[ETK_NODE_TYPE_COUNT] = {
    "INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
    "COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
};

static const char *const coll_types[ETK_COLL_TYPE_COUNT] = {
    "ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER",
    "BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER",
};

/* index = oneof field number */
static const char *const attr_kinds[33] = {
    [3] = "double_val", [4] = "double_list", [5] = "float_val", [6] = "float_list",
    [7] = "int32_val", [8] = "int32_list", [9] = "int64_val", [10] = "int64_list",
    [11] = "uint32_val", [12] = "uint32_list", [13] = "uint64_val", [14] = "uint64_list",
    [15] = "sint32_val", [16] = "sint32_list", [17] = "sint64_val", [18] = "sint64_list",
    [19] = "fixed32_val", [20] = "fixed32_list", [21] = "fixed64_val", [22] = "fixed64_list",
    [23] = "sfixed32_val", [24] = "sfixed32_list", [25] = "sfixed64_val", [26] = "sfixed64_list",
    [27] = "bool_val", [28] = "bool_list", [29] = "string_val", [30] = "string_list",
    [31] = "bytes_val", [32] = "bytes_list",
};

const char *etk_node_type_name(int type)
{
    return (type >= 0 && type < ETK_NODE_TYPE_COUNT) ? node_types[type] : "UNKNOWN_NODE";
}

const char *etk_coll_type_name(int type)
{
    return (type >= 0 && type < ETK_COLL_TYPE_COUNT) ? coll_types[type] : "UNKNOWN";
}

int etk_node_type_parse(const char *name)
{
    for (int i = 0; i < ETK_NODE_TYPE_COUNT; i++)
        if (!strcmp(name, node_types[i]))
            return i;
    return -1;
}

int etk_coll_type_parse(const char *name)
{
    for (int i = 0; i < ETK_COLL_TYPE_COUNT; i++)
        if (!strcmp(name, coll_types[i]))
            return i;
    return -1;
}

const char *etk_attr_kind_name(int kind)
{
    if (kind >= 3 && kind <= 32)
        return attr_kinds[kind];
    return "none";
}

int etk_attr_kind_parse(const char *name)
{
    for (int k = 3; k <= 32; k++)
        if (!strcmp(name, attr_kinds[k]))
            return k;
    if (!strcmp(name, "none"))
        return ETK_ATTR_NONE;
    return -1;
}

bool etk_attr_kind_is_list(int kind) { return kind >= 3 && kind <= 32 && kind % 2 == 0; }

static const struct {
    const char *name;
    int kind;
} conventions[] = {
    {"is_cpu_op", ETK_ATTR_BOOL},       {"num_ops", ETK_ATTR_INT64},
    {"tensor_size", ETK_ATTR_UINT64},   {"comm_type", ETK_ATTR_INT64},
    {"comm_size", ETK_ATTR_INT64},      {"comm_src", ETK_ATTR_INT32},
    {"comm_dst", ETK_ATTR_INT32},       {"comm_tag", ETK_ATTR_INT32},
    {"comm_priority", ETK_ATTR_INT32},  {"pg_name", ETK_ATTR_STRING},
    {"involved_dim", ETK_ATTR_BOOL_LIST}, {"inputs", ETK_ATTR_STRING_LIST},
    {"outputs", ETK_ATTR_STRING_LIST},
};

int etk_attr_expected_kind(const char *name)
{
    for (size_t i = 0; i < sizeof conventions / sizeof conventions[0]; i++)
        if (!strcmp(name, conventions[i].name))
            return conventions[i].kind;
    return ETK_ATTR_NONE;
}
