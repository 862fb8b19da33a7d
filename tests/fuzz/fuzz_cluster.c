/* fuzz_cluster.c — libFuzzer target for the cluster YAML loader (etk_cluster_parse): any
 * input must give a cluster that passes etk_cluster_check or a clean error, never a crash or a
 * leak; accepted clusters are then costed once (placement + every collective type). */
#include <stdint.h>
#include <stdlib.h>

#include "etkit/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    etk_cluster c;
    etk_error err;
    if (etk_cluster_parse((const char *)data, size, "fuzz.yaml", &c, &err) != 0)
        return 0;
    if (etk_cluster_check(&c, 0, &err) != 0)
        abort(); /* the loader must only return checked clusters */
    uint32_t ranks[16];
    uint32_t n = c.n_npus < 16 ? c.n_npus : 16;
    for (uint32_t i = 0; i < n; i++)
        ranks[i] = i;
    for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
        (void)etk_net_coll_ns(&c, (etk_coll_type)t, 1 << 20, ranks, n);
    (void)etk_net_p2p_ns(&c, 0, c.n_npus - 1, 4096);
    (void)etk_hw_compute_ns(&c, 1000000, 1000);
    return 0;
}
