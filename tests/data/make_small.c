/* make_small.c — writes tests/data/small.0.et, the bundled example trace that `make run` falls
 * back to when ../shared is absent: one data-parallel step of a toy 2-layer model on rank 0
 * (forward GEMMs, backward GEMMs, one all-reduce of the gradients, optimizer step).
 * Build: cc -Iinclude tests/data/make_small.c build/libetkit.a build/libetkit_proto.a \
 *        -lprotobuf-c -ljansson -lyaml -lz -lm && ./a.out tests/data/small.0.et */
#include <stdio.h>

#include "etkit/et.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    etk_writer *w;
    etk_error err;
    if (etk_writer_open(argv[1], "0.0.4", NULL, 0, &w, &err))
        goto fail;
    /* GEMM 1024x1024x1024 in bf16: 2*1024^3 FLOPs, 3 * 1024*1024*2 bytes */
    const int64_t gemm_flops = 2147483648LL;
    const uint64_t gemm_bytes = 6291456;
    uint64_t d1[] = {1}, d2[] = {2}, d3[] = {3}, d4[] = {4}, d5[] = {3, 5}, d6[] = {6};
    etk_attr comp[] = {etk_attr_bool("is_cpu_op", false), etk_attr_i64("num_ops", gemm_flops),
                       etk_attr_u64("tensor_size", gemm_bytes)};
    etk_attr ar[] = {etk_attr_bool("is_cpu_op", false), etk_attr_i64("comm_type", ETK_COLL_ALL_REDUCE),
                     etk_attr_i64("comm_size", 4194304)};
    etk_node nodes[] = {
        {.id = 1, .name = "fwd.layer0.gemm", .type = ETK_NODE_COMP, .attr = comp, .n_attr = 3},
        {.id = 2, .name = "fwd.layer1.gemm", .type = ETK_NODE_COMP, .data_deps = d1, .n_data_deps = 1, .attr = comp, .n_attr = 3},
        {.id = 3, .name = "bwd.layer1.wgrad", .type = ETK_NODE_COMP, .data_deps = d2, .n_data_deps = 1, .attr = comp, .n_attr = 3},
        {.id = 4, .name = "bwd.layer1.dgrad", .type = ETK_NODE_COMP, .data_deps = d3, .n_data_deps = 1, .attr = comp, .n_attr = 3},
        {.id = 5, .name = "bwd.layer0.wgrad", .type = ETK_NODE_COMP, .data_deps = d4, .n_data_deps = 1, .attr = comp, .n_attr = 3},
        {.id = 6, .name = "dp.allreduce.grads", .type = ETK_NODE_COLL, .data_deps = d5, .n_data_deps = 2, .attr = ar, .n_attr = 3},
        {.id = 7, .name = "optimizer.step", .type = ETK_NODE_COMP, .data_deps = d6, .n_data_deps = 1, .attr = comp, .n_attr = 3},
    };
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        if (etk_writer_put(w, &nodes[i], &err))
            goto fail;
    if (etk_writer_close(w, &err))
        goto fail;
    return 0;
fail:
    fprintf(stderr, "%s\n", err.msg);
    return 1;
}
