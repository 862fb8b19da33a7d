/* etkit/json.h — JSON forms of a Chakra trace.
 *
 * Two forms:
 *  - the lossless etkit form ("etkit-chakra-json", version 1): every field of every message,
 *    every attribute with its exact kind; importing it gives back a trace that the writer
 *    encodes to the same bytes as the original canonical file (see docs/json.md);
 *  - Chakra's JSON-feeder form ({"workload_graph": [...]}), export only: the subset of each
 *    node that Chakra's JSON feeder reads (Id, Name, NodeType, is_cpu_op, runtime, data_deps and,
 *    on communication nodes, tensor_size and comm_*).
 *
 * Number conventions of the lossless form: integers whose magnitude is at most 2^53 are JSON
 * numbers, larger ones are decimal strings ("18446744073709551615") so that every JSON parser
 * (JavaScript, Python, jansson whose json_int_t is a long long) reads them exactly; the importer
 * accepts both spellings for every integer. Doubles and floats are the shortest decimal that
 * reads back to the same bits (at most %.17g / %.9g digits), always with a '.' or an exponent;
 * infinities and NaN are the strings "Infinity", "-Infinity", "NaN" (any NaN other than the
 * default quiet one is "NaN:0x<16 hex digits of its double bits>", or 8 hex digits of its float
 * bits for float kinds). Bytes are base64. A string
 * that is not valid UTF-8 is written as {"base64": "..."}. */
#ifndef ETKIT_JSON_H
#define ETKIT_JSON_H

#include <stdio.h>

#include "etkit/et.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETK_JSON_FORMAT "etkit-chakra-json"
#define ETK_JSON_VERSION 1

typedef enum etk_json_form {
    ETK_JSON_LOSSLESS = 0, /* etkit-chakra-json v1 */
    ETK_JSON_FEEDER = 1,   /* Chakra JSON feeder {"workload_graph": [...]} */
} etk_json_form;

/* Stream a trace as JSON to f (one node per line). Fails with ETK_EIO if f reports an error. */
int etk_json_write(const etk_trace *t, etk_json_form form, FILE *f, etk_error *err);
/* Same into a file, atomically (tmp + rename); path "-" writes to stdout. */
int etk_json_export(const etk_trace *t, etk_json_form form, const char *path, etk_error *err);

/* Import the lossless form. name is used in messages (the file name). Errors name the JSON
 * path (e.g. "nodes[12].attr[3].kind") and what was expected; malformed JSON gives jansson's
 * line and column. On error *out is NULL. */
int etk_json_import(const char *json, size_t len, const char *name, etk_trace **out,
                    etk_error *err);
int etk_json_import_file(const char *path, etk_trace **out, etk_error *err);

/* A jansson string (json_t *, caller decrefs) of s; bytes that are not UTF-8 (a file name in
 * another encoding) are written as the four characters \xNN instead of dropping the field. */
void *etk_json_text(const char *s);

/* A count or sum as a jansson number (json_t *, caller decrefs): an integer up to 2^63 - 1,
 * past it a real (json_int_t is signed: a cast would print sums in (2^63, 2^64) as negative
 * numbers). */
void *etk_json_count(uint64_t v);

/* Base64 (RFC 4648, standard alphabet, '=' padding). etk_base64_encode writes
 * etk_base64_len(n) + 1 bytes (NUL-terminated). etk_base64_decode accepts only canonical
 * input (length a multiple of 4, padding only at the end, zero unused bits), writes at most
 * 3*len/4 bytes and returns the number written, or -1 on invalid input. */
size_t etk_base64_len(size_t n);
void etk_base64_encode(const uint8_t *in, size_t n, char *out);
long etk_base64_decode(const char *in, size_t len, uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
