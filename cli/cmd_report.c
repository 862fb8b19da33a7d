/* cmd_report.c — `etkit report`: the HTML page of a run or simulation (cli/report_html.c) from
 * the JSON report of `etkit run/sim --json` and, optionally, its --timeline file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "report_html.h"

static void help(void)
{
    printf("usage: etkit report RUN.json [--timeline TIMELINE.json] -o OUT.html\n\n"
           "One self-contained HTML page (inline SVG and CSS; no scripts, nothing fetched) from the\n"
           "JSON report of 'etkit run --json' or 'etkit sim --json': the summary (step time, TFLOP/s,\n"
           "MFU, tokens/s, TTFT/TPOT, memory peak), each rank's time as a stacked bar (compute,\n"
           "exposed communication, CPU, bubble: idle before the rank finished, idle after it), the\n"
           "collectives with their bus bandwidth, and each rank's memory peak. With the timeline of\n"
           "the same run (--timeline of run/sim) also a Gantt chart of the step per simulated rank\n"
           "(forward / backward per micro-batch: the 1F1B pattern) and memory over time with the peak\n"
           "marked. 'etkit run --html FILE' and 'etkit sim --html FILE' write the page directly.\n"
           "The page is written to a temporary name and renamed (docs/report.md).\n\n"
           "options:\n"
           "  -o, --output FILE, --html FILE  the HTML page (required)\n"
           "  --timeline FILE                 the Chrome-trace timeline of the same run\n"
           "  -h, --help                      this help\n\n"
           "example:\n"
           "  etkit run --json -o run.json --timeline run-timeline.json\n"
           "  etkit report run.json --timeline run-timeline.json -o run.html\n");
}

/* a JSON input: a regular file within ETK_MAX_INPUT_BYTES (a FIFO hung here, a directory was
 * reported as "'[' or '{' expected", issue #18), then parsed */
static json_t *load(const char *cmd, const char *path)
{
    char *text;
    size_t len;
    etk_error err = {0};
    if (etk_file_read_max(path, ETK_MAX_INPUT_BYTES, "JSON file", &text, &len, &err)) {
        cli_fail(cmd, &err);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    free(text);
    if (!j)
        fprintf(stderr, "etkit %s: error: %s:%d: %s\n", cmd, path, je.line, je.text);
    return j;
}

int cmd_report(int argc, char **argv)
{
    static const char *cmd = "report";
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"html", required_argument, NULL, 'o'},
        {"timeline", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *tl = NULL, *in = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 't': tl = optarg; break;
        case 'h': help(); return 0;
        default: return cli_getopt_error(cmd, c, argv);
        }
    }
    if (cli_one_input(cmd, argc, argv, &in))
        return 2;
    if (!out)
        return cli_usage_error(cmd, "-o OUT.html is required");
    json_t *run = load(cmd, in), *timeline = NULL;
    if (!run)
        return 2;
    if (tl && !(timeline = load(cmd, tl))) {
        json_decref(run);
        return 2;
    }
    int rc = report_html_file(cmd, out, run, timeline, in);
    json_decref(run);
    json_decref(timeline);
    return rc;
}
