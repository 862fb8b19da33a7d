/* fuzz_cluster.c — libFuzzer target for the cluster YAML loader (etk_cluster_parse): any
 * input must give a cluster that passes etk_cluster_check or a clean error, never a crash or a
 * leak; accepted clusters are then costed once (placement + every collective type). */
#include <stdint.h>
#include <stdlib.h>

#include "etkit/net.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    etk_cluster c;
    etk_error err;
    if (etk_cluster_parse((const char *)data, size, "fuzz.yaml", &c, &err) != 0)
        return 0;
    if (etk_cluster_check(&c, 0, &err) != 0)
        abort(); /* the loader must only return checked clusters */
    fc_cost_cluster(&c);
    return 0;
}
