/* fuzz_node_codec.c — differential fuzzing of the direct node decoder (src/et/wire.c) against
 * the protobuf-c reference: the input is one Node message; read with both decoders, they must
 * agree on success, and on success give traces that encode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"


#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif
int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    uint8_t *buf = malloc(size + 16);
    size_t k = 0;
    buf[k++] = 0; /* empty GlobalMetadata */
    size_t v = size;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        buf[k++] = b | (v ? 0x80 : 0);
    } while (v);
    memcpy(buf + k, data, size);
    k += size;
    etk_read_opts fast = {.quiet = true}, ref = {.quiet = true, .reference_decoder = true};
    etk_trace *a = NULL, *b = NULL;
    etk_error ea, eb;
    int ra = etk_trace_read_mem(buf, k, "fuzz.et", &fast, &a, &ea);
    int rb = etk_trace_read_mem(buf, k, "fuzz.et", &ref, &b, &eb);
    if ((ra == 0) != (rb == 0))
        abort();
    if (ra == 0) {
        uint8_t *x, *y;
        size_t lx, ly;
        int cx = etk_trace_encode(a, &x, &lx, &ea), cy = etk_trace_encode(b, &y, &ly, &eb);
        if (cx != cy)
            abort();
        if (cx == 0) {
            if (lx != ly || memcmp(x, y, lx) != 0)
                abort();
            free(x);
            free(y);
        }
    }
    etk_trace_free(a);
    etk_trace_free(b);
    free(buf);
    return 0;
}
