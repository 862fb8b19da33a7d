/* report_html.h — the HTML report of a run or simulation (cli/report_html.c): one self-contained
 * page (inline SVG and CSS, no scripts, no network) from the JSON report of `etkit run/sim
 * --json` and, when given, the Chrome-trace timeline of the same run (--timeline), which adds
 * the Gantt chart of one step and memory over time. Used by `etkit report` and --html. */
#ifndef ETKIT_CLI_REPORT_HTML_H
#define ETKIT_CLI_REPORT_HTML_H

#include <jansson.h>
#include <stdio.h>

/* Write the page for report `run` (and `timeline`, NULL: none) to f. Returns 0, or -1 with a
 * message in msg (the field that is missing or of the wrong kind). */
int report_html(FILE *f, const json_t *run, const json_t *timeline, char *msg, size_t cap);
/* The same, written to path atomically (temporary name, then renamed); prints the error as
 * "etkit <cmd>: error: ..." and returns 2 on failure, 0 on success. src names the input in
 * messages. */
int report_html_file(const char *cmd, const char *path, const json_t *run, const json_t *timeline,
                     const char *src);
/* Shared with the plan page (cli/plan_html.c): the page's style sheet; s written with &, <, >
 * and " escaped; member k of object o as a number (0 when absent) and as a string ("" when absent). */
extern const char report_html_css[];
void report_html_esc(FILE *f, const char *s);
double report_html_num(const json_t *o, const char *k);
const char *report_html_str(const json_t *o, const char *k);
#endif
