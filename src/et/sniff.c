/* sniff.c — what a file that failed to read as a Chakra protobuf trace is, for the error
 * message: a JSON file is named as JSON, with its kind (PyTorch host execution trace, Kineto /
 * Chrome trace, etkit's lossless Chakra JSON, Chakra's JSON-feeder form) and the command that
 * converts it, instead of a protobuf decoding error. */
#include <string.h>
#include <zlib.h>

#include "etkit/et.h"

int etk_trace_json_hint(const char *path, etk_error *err)
{
    enum { SNIFF_BYTES = 1 << 16 };
    static char buf[SNIFF_BYTES + 1];
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return 0;
    int n = gzread(gz, buf, SNIFF_BYTES);
    gzclose(gz);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    int i = 0;
    if ((unsigned char)buf[0] == 0xef && (unsigned char)buf[1] == 0xbb && (unsigned char)buf[2] == 0xbf)
        i = 3; /* UTF-8 byte-order mark */
    while (i < n && strchr(" \t\r\n", buf[i]))
        i++;
    if (i >= n || (buf[i] != '{' && buf[i] != '['))
        return 0;
    const char *b = buf + i;
    const char *kind, *how;
    if (strstr(b, "etkit-chakra-json")) {
        kind = "etkit's lossless Chakra JSON (written by 'etkit json')";
        how = "convert it with 'etkit json --to-et FILE -o FILE.et'";
    } else if (strstr(b, "\"workload_graph\"")) {
        kind = "Chakra's JSON-feeder form (\"workload_graph\")";
        how = "it cannot be converted back (it lacks attributes and control deps): simulate the .et trace it "
              "was written from";
    } else if (strstr(b, "\"traceEvents\"") || (b[0] == '[' && strstr(b, "\"ph\"") && strstr(b, "\"ts\""))) {
        kind = "a Kineto / Chrome trace (torch.profiler)";
        how = "convert it with 'etkit convert pytorch --host HOST_ET.json --device FILE -o PREFIX' (the host "
              "execution trace of the same step)";
    } else if (strstr(b, "\"schema\"") && strstr(b, "\"nodes\"")) {
        kind = "a PyTorch host execution trace (ExecutionTraceObserver)";
        how = "convert it with 'etkit convert pytorch --host FILE [--device KINETO.json] -o PREFIX'";
    } else {
        kind = "JSON of an unknown kind";
        how = "etkit reads Chakra protobuf traces (.et); 'etkit convert pytorch' and 'etkit json --to-et' "
              "convert the JSON traces it knows";
    }
    return etk_err(err, ETK_EFORMAT, "%s: this is a JSON file, not a Chakra protobuf trace: %s; %s", path, kind,
                   how);
}
