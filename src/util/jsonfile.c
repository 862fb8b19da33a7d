/* jsonfile.c — a whole JSON file as a jansson document (see jsonfile.h). */
#include <stdlib.h>

#include "util/jsonfile.h"

int etk_json_file_load(const char *path, size_t max_bytes, const char *what, size_t flags,
                       json_t **root, etk_error *err)
{
    *root = NULL;
    char *text;
    size_t len;
    int rc = etk_file_read_max(path, max_bytes, what, &text, &len, err);
    if (rc)
        return rc;
    json_error_t je;
    *root = json_loadb(text, len, flags, &je);
    free(text);
    if (!*root)
        return etk_err(err, ETK_EFORMAT, "%s:%d:%d: malformed JSON: %s", path, je.line, je.column,
                       je.text);
    return 0;
}
