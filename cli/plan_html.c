/* plan_html.c — the plan page (plan_html.h). The scatter has one point per simulated plan at x =
 * its memory estimate per GPU and y = its tokens/s per GPU (tokens/s over the cluster's GPUs, so
 * that clusters of a sweep compare); the Pareto front — the plans no other plan beats on both,
 * i.e. the highest throughput for at most that memory — is joined by a line and its points
 * ringed. Each point carries its figures in data-* attributes for the tests (docs/report.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "plan_html.h"
#include "report_html.h"

#define PW 900.0  /* plot width, px */
#define PH 380.0  /* plot height */
#define PL 80.0   /* left margin (the y labels) */
#define PT 12.0   /* top margin */
#define GIB (1024.0 * 1024.0 * 1024.0)
#define num report_html_num
#define str report_html_str

typedef struct {
    const json_t *row;
    double mem, tput; /* bytes per GPU, tokens/s per GPU */
    int cluster;      /* index in the document's clusters */
    int front;
} point;

static int by_mem(const void *a, const void *b)
{
    const point *p = a, *q = b;
    if (p->mem != q->mem)
        return p->mem < q->mem ? -1 : 1;
    if (p->tput != q->tput)
        return p->tput > q->tput ? -1 : 1;
    return 0;
}

/* sorted by memory, then throughput descending: a point is on the front when no point with at
 * most its memory has more throughput, and none with less memory has as much */
static void pareto(point *p, size_t n)
{
    qsort(p, n, sizeof *p, by_mem);
    double best = -1;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double top = p[i].tput;
        for (; j < n && p[j].mem == p[i].mem; j++)
            p[j].front = top > best && p[j].tput == top;
        if (top > best)
            best = top;
        i = j;
    }
}

/* a round step for about 5 ticks over [0, hi] */
static double tick_step(double hi)
{
    double s = pow(10, floor(log10(hi / 5)));
    return hi / s > 25 ? 5 * s : hi / s > 10 ? 2 * s : s;
}

static void scatter(FILE *f, point *p, size_t n, const json_t *clusters)
{
    double xmax = 0, ymax = 0;
    for (size_t i = 0; i < n; i++) {
        xmax = fmax(xmax, p[i].mem / GIB);
        ymax = fmax(ymax, p[i].tput);
    }
    xmax = xmax > 0 ? xmax * 1.05 : 1;
    ymax = ymax > 0 ? ymax * 1.05 : 1;
    fputs("<h2>Throughput against memory</h2>\n<p>Each simulated plan: its memory estimate per GPU against its "
          "tokens/s per GPU. The line joins the Pareto front, the highest throughput for at most that memory "
          "(ringed points).</p>\n<p class=\"legend\">", f);
    size_t nc = json_array_size(clusters);
    for (size_t c = 0; c < nc; c++) {
        fprintf(f, "<span><i class=\"c%zu\"></i>", c % 4);
        report_html_esc(f, str(json_array_get(clusters, c), "cluster"));
        fputs("</span>", f);
    }
    fprintf(f, "</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" class=\"scatter\">\n",
            PL + PW + 20, PT + PH + 44);
    double xs = tick_step(xmax), ys = tick_step(ymax);
    for (double v = 0; v <= xmax + 1e-9; v += xs) {
        double x = PL + v / xmax * PW;
        fprintf(f, "<line class=\"base\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                   "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                x, PT + PH, x, PT + PH + 4, x, PT + PH + 16, v);
    }
    for (double v = 0; v <= ymax + 1e-9; v += ys) {
        double y = PT + PH - v / ymax * PH;
        fprintf(f, "<line class=\"base\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                   "<text class=\"axis lbl\" x=\"%.1f\" y=\"%.1f\">%g</text>\n",
                PL - 4, y, PL, y, PL - 6, y + 4, v);
    }
    fprintf(f, "<line class=\"base\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<line class=\"base\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
               "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">memory per GPU (GiB)</text>"
               "<text class=\"axis\" x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">"
               "tokens/s per GPU</text>\n",
               PL, PT + PH, PL + PW, PT + PH, PL, PT, PL, PT + PH, PL + PW / 2, PT + PH + 36, PT + PH / 2,
               PT + PH / 2);
    fputs("<polyline class=\"front\" points=\"", f); /* p is sorted by memory (pareto) */
    const char *sep = "";
    for (size_t i = 0; i < n; i++)
        if (p[i].front) {
            fprintf(f, "%s%.1f,%.1f", sep, PL + p[i].mem / GIB / xmax * PW, PT + PH - p[i].tput / ymax * PH);
            sep = " ";
        }
    fputs("\"/>\n", f);
    for (size_t i = 0; i < n; i++) {
        const json_t *r = p[i].row;
        fprintf(f, "<circle class=\"pt c%d%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" data-cluster=\"", p[i].cluster % 4,
                p[i].front ? " pf" : "", PL + p[i].mem / GIB / xmax * PW, PT + PH - p[i].tput / ymax * PH,
                p[i].front ? "5" : "3.5");
        report_html_esc(f, str(r, "cluster"));
        fprintf(f, "\" data-index=\"%.0f\" data-rank=\"%.0f\" data-mem-bytes=\"%.0f\" data-tokens-per-s-per-gpu=\"%.17g\""
                   " data-front=\"%d\"><title>",
                num(r, "index"), num(r, "rank"), p[i].mem, p[i].tput, p[i].front);
        fprintf(f, "rank %.0f: %.3f ms, %.0f tokens/s per GPU, %.2f GiB: ", num(r, "rank"), num(r, "step_ns") / 1e6,
                p[i].tput, p[i].mem / GIB);
        report_html_esc(f, str(r, "flags"));
        fputs("</title></circle>\n", f);
    }
    fputs("</svg>\n", f);
}

static void ranked(FILE *f, const json_t *doc, const point *p, size_t n)
{
    size_t top = (size_t)num(doc, "top");
    fprintf(f, "<h2>The best plans</h2>\n<table class=\"grid\"><tr><th>rank</th><th>cluster</th><th>step ms</th>"
               "<th>tokens/s</th><th>tokens/s per GPU</th><th>MFU %%</th><th>memory GiB</th><th>Pareto</th>"
               "<th>etkit run flags</th></tr>\n");
    for (size_t k = 1; k <= top && k <= n; k++)
        for (size_t i = 0; i < n; i++) {
            const json_t *r = p[i].row;
            if ((size_t)num(r, "rank") != k)
                continue;
            fprintf(f, "<tr><td>%zu</td><td>", k);
            report_html_esc(f, str(r, "cluster"));
            fprintf(f, "</td><td>%.3f</td><td>%.0f</td><td>%.1f</td><td>%.1f</td><td>%.2f</td><td>%s</td><td><code>",
                    num(r, "step_ns") / 1e6, num(r, "tokens_per_s"), p[i].tput, 100 * num(r, "mfu"), p[i].mem / GIB,
                    p[i].front ? "yes" : "");
            report_html_esc(f, str(r, "flags"));
            fputs("</code></td></tr>\n", f);
        }
    fputs("</table>\n", f);
}

int plan_html(FILE *f, const json_t *doc, char *msg, size_t cap)
{
    const json_t *plans = json_object_get(doc, "plans"), *clusters = json_object_get(doc, "clusters"),
                 *counts = json_object_get(doc, "counts");
    if (!json_is_array(plans) || !json_is_array(clusters) || !json_is_object(counts)) {
        snprintf(msg, cap, "field 'plans', 'clusters' or 'counts' missing (want the JSON of etkit plan --json)");
        return -1;
    }
    size_t n = 0, nr = json_array_size(plans), nc = json_array_size(clusters);
    point *p = calloc(nr ? nr : 1, sizeof *p);
    if (!p) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nr; i++) {
        const json_t *r = json_array_get(plans, i);
        if (strcmp(str(r, "status"), "simulated"))
            continue;
        int c = -1;
        for (size_t k = 0; k < nc && c < 0; k++)
            if (!strcmp(str(json_array_get(clusters, k), "cluster"), str(r, "cluster")))
                c = (int)k;
        double gpus = c < 0 ? 0 : num(json_array_get(clusters, (size_t)c), "gpus");
        if (!(gpus > 0)) {
            free(p);
            snprintf(msg, cap, "plans[%zu]: cluster '%s' not in 'clusters' with its gpus", i, str(r, "cluster"));
            return -1;
        }
        p[n++] = (point){r, num(r, "mem_bytes"), num(r, "tokens_per_s") / gpus, c, 0};
    }
    pareto(p, n);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>etkit plan: ", f);
    report_html_esc(f, str(doc, "model"));
    fprintf(f, "</title>\n<style>%s.front{fill:none;stroke:#b00;stroke-width:1.5}.pt{fill-opacity:0.75}"
               ".pf{stroke:#b00;stroke-width:2}.c0{fill:#3b78c2;background:#3b78c2}.c1{fill:#1b9e77;background:"
               "#1b9e77}.c2{fill:#e8843a;background:#e8843a}.c3{fill:#8c6bb1;background:#8c6bb1}</style></head>"
               "<body>\n<h1>etkit plan: ",
            report_html_css);
    report_html_esc(f, str(doc, "model"));
    fputs("</h1>\n<table>\n<tr><th>workload</th><td>", f);
    report_html_esc(f, str(doc, "model"));
    fprintf(f, ", %s, global batch %.0f</td></tr>\n<tr><th>ranked by</th><td>", str(doc, "mode"),
            num(doc, "global_batch"));
    report_html_esc(f, str(doc, "rank_by"));
    fputs("</td></tr>\n<tr><th>clusters</th><td>", f);
    for (size_t k = 0; k < nc; k++) {
        const json_t *c = json_array_get(clusters, k);
        fputs(k ? "; " : "", f);
        report_html_esc(f, str(c, "cluster"));
        fprintf(f, " (%.0f GPUs)", num(c, "gpus"));
    }
    fprintf(f, "</td></tr>\n<tr><th>candidates</th><td data-candidates=\"%.0f\">%.0f</td></tr>\n"
               "<tr><th>simulated</th><td data-simulated=\"%.0f\">%.0f</td></tr>\n</table>\n",
            num(counts, "candidates"), num(counts, "candidates"), num(counts, "simulated"), num(counts, "simulated"));
    if (n)
        scatter(f, p, n, clusters);
    ranked(f, doc, p, n);
    static const char *const why[][2] = {
        {"invalid", "invalid: the generator refused the plan (divisibility, limits)"},
        {"memory", "over memory: estimate above the GPU's memory x (1 - margin)"},
        {"dominated", "dominated: the same plan with less recompute fits in memory"},
        {"bound", "pruned by the lower bound: its compute or communication time cannot reach the top"},
        {"failed", "the simulation failed"}};
    fputs("<h2>Pruned plans</h2>\n<table class=\"grid\"><tr><th>reason</th><th>plans</th></tr>\n", f);
    for (int k = 0; k < (int)(sizeof why / sizeof why[0]); k++)
        fprintf(f, "<tr><td>%s</td><td data-pruned=\"%s\">%.0f</td></tr>\n", why[k][1], why[k][0],
                num(counts, why[k][0]));
    fputs("</table>\n<p class=\"axis\">every candidate with its fate: etkit plan --json / --csv</p>\n</body></html>\n", f);
    free(p);
    return 0;
}

int plan_html_file(const char *cmd, const char *path, const json_t *doc)
{
    etk_error err = {0};
    char *tmp = NULL, msg[256];
    FILE *f = etk_file_begin(path, &tmp, &err);
    if (!f)
        return cli_fail(cmd, &err);
    if (plan_html(f, doc, msg, sizeof msg) != 0) {
        etk_file_abort(f, tmp);
        fprintf(stderr, "etkit %s: error: %s\n", cmd, msg);
        return 2;
    }
    if (etk_file_commit(f, tmp, path, &err) != 0)
        return cli_fail(cmd, &err);
    return 0;
}
