/* yamljson.h — YAML text -> jansson tree (private to model/). */
#ifndef ETK_MODEL_YAMLJSON_H
#define ETK_MODEL_YAMLJSON_H
#include <jansson.h>

#include "etkit/et.h"

/* Parse one YAML document whose top level is a mapping. The caller json_decref()s *out. */
int etk_yaml_to_json(const char *text, size_t len, const char *name, json_t **out, etk_error *err);
/* The same; *key_lines (when key_lines is not NULL and the parse succeeds) maps each top-level
 * key to its line number (caller decrefs). */
int etk_yaml_to_json_lines(const char *text, size_t len, const char *name, json_t **out, json_t **key_lines,
                           etk_error *err);
#endif
