/* jsonfile.h — reading a whole JSON file into a jansson document (private to libetkit): the
 * bounded whole-file read of etk_file_read_max and one message form for malformed JSON. */
#ifndef ETK_UTIL_JSONFILE_H
#define ETK_UTIL_JSONFILE_H
#include <stddef.h>

#include <jansson.h>

#include "etkit/et.h"

/* *root = the JSON document in `path` (at most max_bytes; `what` names the kind of file in
 * the size and file-type errors), decoded with jansson `flags`; the caller json_decref()s it.
 * On failure *root = NULL and the error code (ETK_EFORMAT "PATH:LINE:COLUMN: malformed JSON:
 * ..." for bad JSON) is returned. */
int etk_json_file_load(const char *path, size_t max_bytes, const char *what, size_t flags,
                       json_t **root, etk_error *err);
#endif
