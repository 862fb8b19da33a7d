/* plan_html.h — the HTML page of a plan search (cli/plan_html.c): the ranked table, a
 * throughput-vs-memory scatter of every simulated plan with its Pareto front, and the pruned
 * plans counted by reason, from the JSON document of `etkit plan --json`. `etkit plan --html`. */
#ifndef ETKIT_CLI_PLAN_HTML_H
#define ETKIT_CLI_PLAN_HTML_H

#include <jansson.h>
#include <stdio.h>

/* Write the page for the plan document `doc` to f. Returns 0, or -1 with the missing field in msg. */
int plan_html(FILE *f, const json_t *doc, char *msg, size_t cap);
/* The same, written to path atomically; prints "etkit <cmd>: error: ..." and returns 2 on failure. */
int plan_html_file(const char *cmd, const char *path, const json_t *doc);
#endif
