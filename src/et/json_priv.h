/* json_priv.h — private to the JSON forms (src/et/). Module map (arrows point down):
 *   json.c        reading the lossless form and the feeder form (etk_json_import*)
 *   json_write.c  writing either form (etk_json_write, etk_json_export)
 *   json_put.c    JSON text output primitives, base64, UTF-8 checks
 * json_write -> json_put; json.c uses only the public base64 decoder of json_put.c. */
#ifndef ETK_ET_JSON_PRIV_H
#define ETK_ET_JSON_PRIV_H
#include <stdint.h>
#include <stdio.h>

#include "etkit/json.h"

void json_put_str_replacing(FILE *f, const char *s);
void json_put_str(FILE *f, const char *s);
void json_put_u64(FILE *f, uint64_t v);
void json_put_u64_list(FILE *f, const uint64_t *v, size_t n);
void json_put_attrs(FILE *f, const etk_attr *attr, size_t n);
void json_put_io(FILE *f, const char *key, const etk_io *io);

#endif
