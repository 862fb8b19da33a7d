/* check.c — "did you mean" suggestions and the YAML nesting-depth pre-check (check.h). */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/check.h"

/* Levenshtein distance, capped: returns cap + 1 when the distance exceeds cap. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return cap + 1;
    if ((la > lb ? la - lb : lb - la) > cap)
        return cap + 1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *etk_suggest(const char *word, const char *const *known, size_t n)
{
    size_t wl = strlen(word), cap = wl < 4 ? 1 : 2;
    const char *best = NULL;
    size_t best_d = cap + 1;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, known[i], cap);
        if (d < best_d && d < wl) {
            best = known[i];
            best_d = d;
        }
    }
    return best;
}

int etk_yaml_depth_check(const char *text, size_t len, const char *name, int max_depth,
                         etk_error *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return etk_err(err, ETK_ENOMEM, "%s: cannot initialise the YAML parser", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break; /* the real parse reports it */
        yaml_event_type_t t = ev.type;
        size_t line = (size_t)ev.start_mark.line + 1;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
            if (++depth > max_depth) {
                rc = etk_err(err, ETK_EFORMAT,
                             "%s:%zu: nesting deeper than %d levels (mappings and lists inside "
                             "each other); not a model, cluster or GPU description",
                             name, line, max_depth);
                break;
            }
        } else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
            depth--;
        }
    }
    yaml_parser_delete(&p);
    return rc;
}
