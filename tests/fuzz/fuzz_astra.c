/* fuzz_astra.c — libFuzzer target for the ASTRA-sim compatibility inputs (`etkit sim
 * --astra-network YAML --astra-system JSON`, src/net/astra_load.c): the input is the network YAML,
 * a NUL byte, then the system JSON (without a NUL the system file is empty). Any input must give a
 * cluster that passes etk_cluster_check or a clean error naming a file, never a crash, a leak or
 * a hang; an accepted cluster is costed once (every collective type, a send, a compute node). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/net.h"
#include "fuzz_scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n1 = fs_split(data, size);
    size_t off2 = n1 < size ? n1 + 1 : size;
    char net[256], sys[256];
    if (fs_write("astra_net", ".yml", data, n1, net, sizeof net) ||
        fs_write("astra_sys", ".json", data + off2, size - off2, sys, sizeof sys))
        abort();
    etk_cluster c;
    etk_error err;
    int rc = etk_cluster_load_astra(net, sys, &c, &err);
    remove(net);
    remove(sys);
    if (rc != 0) {
        FUZZ_CHECK(err.msg[0] != '\0', "an error without a message");
        return 0;
    }
    FUZZ_CHECK(etk_cluster_check(&c, 0, &err) == 0, "loaded an unchecked cluster: %s", err.msg);
    fc_cost_cluster(&c);
    return 0;
}
