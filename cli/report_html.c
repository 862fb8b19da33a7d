/* report_html.c — the HTML report (report_html.h): summary, per-rank stacked bars, the Gantt
 * chart of one step and memory over time from the timeline, the collective table. Inline SVG
 * and CSS only: the page opens offline, with no script. Every bar carries its figure in
 * data-* attributes (data-ns, data-bytes) so that tests compare the drawing with the JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "report_html.h"

#define W 900.0    /* chart width, px */
#define LEFT 110.0 /* label column */
#define MAX_ROWS 512
#define esc report_html_esc
#define num report_html_num
#define str report_html_str

void report_html_esc(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

double report_html_num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

const char *report_html_str(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

static void row(FILE *f, const char *k, const char *v)
{
    fputs("<tr><th>", f);
    esc(f, k);
    fputs("</th><td>", f);
    esc(f, v);
    fputs("</td></tr>\n", f);
}

static void summary(FILE *f, const json_t *r)
{
    char b[256];
    double step = num(r, "step_ns");
    fputs("<h2>Summary</h2>\n<table class=\"kv\">\n", f);
    row(f, "workload", str(r, "workload"));
    snprintf(b, sizeof b, "%.3f ms", step / 1e6);
    fputs("<tr><th>step time</th><td id=\"step\" data-ns=\"", f);
    fprintf(f, "%.0f\">%s</td></tr>\n", step, b);
    if (num(r, "tflops_per_gpu") > 0) {
        snprintf(b, sizeof b, "%.1f TFLOP/s (peak %.0f, %s)", num(r, "tflops_per_gpu"), num(r, "peak_tflops"),
                 str(r, "peak_precision"));
        row(f, "per GPU", b);
    }
    if (num(r, "mfu") > 0) {
        snprintf(b, sizeof b, "%.1f %%", 100 * num(r, "mfu"));
        row(f, "MFU", b);
    }
    if (num(r, "tokens_per_s") > 0) {
        snprintf(b, sizeof b, "%.0f tokens/s (%.0f tokens per step)", num(r, "tokens_per_s"), num(r, "tokens_per_step"));
        row(f, "throughput", b);
    }
    const json_t *inf = json_object_get(r, "inference");
    if (json_is_object(inf)) {
        snprintf(b, sizeof b, "%.3f ms", num(inf, "ttft_ns") / 1e6);
        row(f, "TTFT", b);
        snprintf(b, sizeof b, "%.3f ms (min %.3f, max %.3f) over %.0f decode steps", num(inf, "tpot_ns") / 1e6,
                 num(inf, "tpot_min_ns") / 1e6, num(inf, "tpot_max_ns") / 1e6, num(inf, "decode_steps"));
        row(f, "TPOT", b);
    }
    snprintf(b, sizeof b, "%.0f (%.0f simulated%s)", num(r, "n_ranks"), num(r, "n_simulated"),
             json_is_true(json_object_get(r, "folded")) ? ", folded" : "");
    row(f, "ranks", b);
    const json_t *cl = json_object_get(r, "cluster");
    if (json_is_object(cl)) {
        const json_t *gpu = json_object_get(cl, "gpu");
        snprintf(b, sizeof b, "%s: %.0f x %s, %s network model", str(cl, "name"), num(cl, "npus"),
                 json_is_object(gpu) ? str(gpu, "name") : "?", str(cl, "net_model"));
        row(f, "cluster", b);
    }
    const json_t *mem = json_object_get(r, "memory");
    if (json_is_object(mem) && num(mem, "peak_bytes") > 0) {
        snprintf(b, sizeof b, "%.2f GiB on rank %.0f (%s) of %.2f GiB%s", num(mem, "peak_bytes") / 1073741824.0,
                 num(mem, "peak_rank"), str(mem, "peak_op"), num(mem, "capacity_bytes") / 1073741824.0,
                 num(mem, "oom_ranks") > 0 ? ": OUT OF MEMORY" : "");
        row(f, "memory peak", b);
    }
    if (str(r, "command_line")[0])
        row(f, "command", str(r, "command_line"));
    fputs("</table>\n", f);
}

static void legend(FILE *f, const char *const *cls, const char *const *names, int n)
{
    fputs("<p class=\"legend\">", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "<span><i class=\"%s\"></i>%s</span> ", cls[i], names[i]);
    fputs("</p>\n", f);
}

/* compute / exposed comm / CPU / bubble (idle before the rank finished: waiting for peers) /
 * idle (after it finished): idle_ns of the JSON = bubble + idle */
static void rank_bars(FILE *f, const json_t *r)
{
    static const char *const cls[] = {"compute", "exposed_comm", "cpu", "bubble", "idle"};
    static const char *const names[] = {"compute", "exposed communication", "CPU only",
                                        "bubble / waiting for peers", "idle after the rank finished"};
    const json_t *ranks = json_object_get(r, "ranks");
    double step = num(r, "step_ns");
    size_t n = json_array_size(ranks), shown = n < MAX_ROWS ? n : MAX_ROWS;
    double h = n <= 16 ? 14 : n <= 64 ? 8 : 3;
    fputs("<h2>Where each rank's time goes</h2>\n", f);
    legend(f, cls, names, 5);
    fprintf(f, "<svg id=\"ranks\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            LEFT + W + 10, shown * (h + 1) + 20);
    for (size_t i = 0; i < shown; i++) {
        const json_t *x = json_array_get(ranks, i);
        double fin = num(x, "finish_ns"), idle = num(x, "idle_ns"), tail = step - fin;
        if (tail < 0)
            tail = 0;
        if (tail > idle)
            tail = idle;
        double v[5] = {num(x, "compute_ns"), num(x, "exposed_comm_ns"), num(x, "cpu_ns"), idle - tail, tail};
        double y = i * (h + 1), xpos = LEFT;
        if (h >= 12 || i % 8 == 0)
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"lbl\">rank %.0f</text>\n", LEFT - 6, y + h,
                    num(x, "rank"));
        for (int k = 0; k < 5; k++) {
            double w = step > 0 ? v[k] / step * W : 0;
            fprintf(f, "<rect class=\"%s\" data-rank=\"%.0f\" data-kind=\"%s\" data-ns=\"%.0f\" x=\"%.2f\" y=\"%.1f\" "
                       "width=\"%.2f\" height=\"%.1f\"><title>rank %.0f %s %.3f ms</title></rect>\n",
                    cls[k], num(x, "rank"), cls[k], v[k], xpos, y, w, h, num(x, "rank"), names[k], v[k] / 1e6);
            xpos += w;
        }
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"axis\">0</text><text x=\"%.0f\" y=\"%.0f\" class=\"axis end\">"
               "%.3f ms</text>\n</svg>\n", LEFT, shown * (h + 1) + 14, LEFT + W, shown * (h + 1) + 14, step / 1e6);
    if (shown < n)
        fprintf(f, "<p>First %zu of %zu ranks shown (the JSON has all of them).</p>\n", shown, n);
}

/* --- the timeline (Chrome trace: ts and dur in microseconds) --- */
typedef struct ev { double t0, t1; int cls, mb, row; } ev; /* row: simulated rank x 3 + lane */
enum { C_FWD, C_BWD, C_OPT, C_COMM, C_P2P, C_CPU, N_CLS };
static const char *const ev_cls[N_CLS] = {"fwd", "bwd", "opt", "comm", "p2p", "cpuop"};
static const char *const ev_names[N_CLS] = {"forward", "backward", "optimizer", "collective", "send / recv", "CPU"};

static int cmp_ev(const void *a, const void *b)
{
    const ev *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int classify(const char *name, const char *thread)
{
    if (!strncmp(thread, "CPU", 3))
        return C_CPU;
    if (!strncmp(name, "SEND", 4) || !strncmp(name, "RECV", 4))
        return C_P2P;
    if (!strncmp(thread, "GPU comm", 8))
        return C_COMM;
    if (strstr(name, "optimizer"))
        return C_OPT;
    if (strstr(name, ".bwd") || strstr(name, ".dgrad") || strstr(name, ".wgrad"))
        return C_BWD;
    return C_FWD;
}

/* the timeline's threads (pid = rank, tid = stream) and their names, from the "M" events */
typedef struct thr { double pid, tid; const char *name; } thr;

static int cmp_thr(const void *a, const void *b)
{
    const thr *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static size_t threads_of(const json_t *evs, thr **out)
{
    size_t n = 0, i;
    const json_t *e;
    json_array_foreach(evs, i, e) {
        n += !strcmp(str(e, "ph"), "M") && !strcmp(str(e, "name"), "thread_name");
    }
    thr *t = calloc(n + 1, sizeof *t);
    if (!t)
        return 0;
    n = 0;
    json_array_foreach(evs, i, e) {
        if (!strcmp(str(e, "ph"), "M") && !strcmp(str(e, "name"), "thread_name"))
            t[n++] = (thr){num(e, "pid"), num(e, "tid"), str(json_object_get(e, "args"), "name")};
    }
    qsort(t, n, sizeof *t, cmp_thr);
    *out = t;
    return n;
}

static const char *thread_name(const thr *t, size_t n, double pid, double tid)
{
    thr key = {pid, tid, NULL};
    const thr *x = bsearch(&key, t, n, sizeof *t, cmp_thr);
    return x ? x->name : "";
}

/* distinct pids of the X events, ascending, at most cap */
static size_t pids_of(const json_t *evs, double *pids, size_t cap)
{
    size_t n = 0, i;
    const json_t *e;
    json_array_foreach(evs, i, e) {
        if (strcmp(str(e, "ph"), "X") && strcmp(str(e, "ph"), "C"))
            continue;
        double p = num(e, "pid");
        size_t k = 0;
        while (k < n && pids[k] != p)
            k++;
        if (k == n && n < cap)
            pids[n++] = p;
    }
    for (size_t a = 1; a < n; a++) /* insertion sort */
        for (size_t b = a; b > 0 && pids[b - 1] > pids[b]; b--) {
            double t = pids[b];
            pids[b] = pids[b - 1];
            pids[b - 1] = t;
        }
    return n;
}

/* one lane: its events (in time order) merged into blocks of one class and micro-batch (gaps
 * under eps closed) */
static void lane(FILE *f, const ev *v, size_t n, double y, double h, double scale, double eps, double pid)
{
    for (size_t i = 0; i < n;) {
        ev b = v[i++];
        while (i < n && v[i].cls == b.cls && v[i].mb == b.mb && v[i].t0 <= b.t1 + eps) {
            if (v[i].t1 > b.t1)
                b.t1 = v[i].t1;
            i++;
        }
        double x = LEFT + b.t0 * scale, w = (b.t1 - b.t0) * scale;
        fprintf(f, "<rect class=\"%s\" data-rank=\"%.0f\" data-mb=\"%d\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                   "height=\"%.1f\"><title>rank %.0f %s", ev_cls[b.cls], pid, b.mb, x, y, w < 0.3 ? 0.3 : w, h, pid,
                ev_names[b.cls]);
        if (b.mb >= 0)
            fprintf(f, " micro-batch %d", b.mb);
        fprintf(f, ": %.3f to %.3f ms</title></rect>\n", b.t0 / 1e6, b.t1 / 1e6);
        if (b.mb >= 0 && w >= 14 && (b.cls == C_FWD || b.cls == C_BWD))
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"mb\">%d</text>\n", x + w / 2, y + h - 3, b.mb);
    }
}

static void gantt(FILE *f, const json_t *r, const json_t *evs)
{
    double pids[64];
    size_t np = pids_of(evs, pids, 64);
    double step = num(r, "step_ns"), end = step;
    size_t i;
    const json_t *e;
    json_array_foreach(evs, i, e) {
        if (!strcmp(str(e, "ph"), "X") && (num(e, "ts") + num(e, "dur")) * 1e3 > end)
            end = (num(e, "ts") + num(e, "dur")) * 1e3;
    }
    if (end <= 0 || np == 0)
        return;
    double scale = W / end, lh = 16, gap = 8;
    fputs("<h2>One step per simulated rank (Gantt)</h2>\n<p>Each simulated rank (folded runs: one per pipeline "
          "stage class) in three lanes: compute, communication, CPU. Numbers are micro-batches; 1F1B shows as "
          "forward and backward blocks alternating after the warm-up.</p>\n", f);
    legend(f, ev_cls, ev_names, N_CLS);
    fprintf(f, "<svg id=\"gantt\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", LEFT + W + 10,
            np * (3 * lh + gap) + 20);
    ev *v = malloc((json_array_size(evs) + 1) * sizeof *v);
    thr *th = NULL;
    size_t nth = threads_of(evs, &th);
    if (!v || !th) {
        free(v);
        free(th);
        fputs("</svg>\n", f);
        return;
    }
    /* one pass: each event to its row (simulated rank x lane: compute, communication, CPU) */
    size_t n = 0;
    json_array_foreach(evs, i, e) {
        if (strcmp(str(e, "ph"), "X"))
            continue;
        double pid = num(e, "pid");
        size_t p = 0;
        while (p < np && pids[p] != pid)
            p++;
        if (p == np)
            continue;
        const char *nm = str(e, "name");
        int c = classify(nm, thread_name(th, nth, pid, num(e, "tid")));
        int ln = c == C_CPU ? 2 : (c == C_COMM || c == C_P2P) ? 1 : 0;
        v[n++] = (ev){num(e, "ts") * 1e3, (num(e, "ts") + num(e, "dur")) * 1e3, c,
                      !strncmp(nm, "mb", 2) ? atoi(nm + 2) : -1, (int)p * 3 + ln};
    }
    qsort(v, n, sizeof *v, cmp_ev);
    size_t at = 0;
    for (size_t p = 0; p < np; p++) {
        double y0 = p * (3 * lh + gap);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"lbl\">rank %.0f</text>\n", LEFT - 6, y0 + lh - 3, pids[p]);
        for (int l = 0; l < 3; l++) {
            size_t from = at;
            while (at < n && v[at].row == (int)p * 3 + l)
                at++;
            lane(f, v + from, at - from, y0 + l * lh, lh - 2, scale, end / 2000, pids[p]);
        }
    }
    free(v);
    free(th);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"axis\">0</text><text x=\"%.0f\" y=\"%.0f\" class=\"axis end\">"
               "%.3f ms</text>\n</svg>\n", LEFT, np * (3 * lh + gap) + 14, LEFT + W, np * (3 * lh + gap) + 14, end / 1e6);
}

/* memory over time from the timeline's "memory" counters, one line per simulated rank, the
 * highest point per pixel column kept (so the peak is drawn), the peak marked */
static int memory_timeline(FILE *f, const json_t *r, const json_t *evs)
{
    double pids[64], step = num(r, "step_ns"), top = 0, peak_t = 0, peak_pid = 0;
    size_t np = pids_of(evs, pids, 64), i, have = 0;
    const json_t *e;
    json_array_foreach(evs, i, e) {
        if (strcmp(str(e, "ph"), "C") || strcmp(str(e, "name"), "memory"))
            continue;
        double b = num(json_object_get(e, "args"), "allocated_bytes");
        have++;
        if (b > top) {
            top = b;
            peak_t = num(e, "ts") * 1e3;
            peak_pid = num(e, "pid");
        }
    }
    if (!have || top <= 0 || step <= 0)
        return 0;
    const json_t *mem = json_object_get(r, "memory");
    double cap = json_is_object(mem) ? num(mem, "capacity_bytes") : 0, ymax = cap > top ? cap : top * 1.1;
    double H = 234, T = 14, sx = W / step, sy = (H - T) / ymax; /* T: room above for the labels */
    fputs("<h2>Memory over time</h2>\n", f);
    fprintf(f, "<svg id=\"memory\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            LEFT + W + 10, H + 30);
    if (cap > 0)
        fprintf(f, "<line class=\"cap\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%.0f\" y=\"%.1f\" "
                   "class=\"lbl\">HBM %.1f GiB</text>\n", LEFT, LEFT + W, H - cap * sy, H - cap * sy, LEFT - 6,
                H - cap * sy + 4, cap / 1073741824.0);
    double *col = malloc((size_t)W * sizeof *col);
    if (!col)
        return 0;
    for (size_t p = 0; p < np; p++) {
        for (size_t k = 0; k < (size_t)W; k++)
            col[k] = -1;
        json_array_foreach(evs, i, e) {
            if (strcmp(str(e, "ph"), "C") || strcmp(str(e, "name"), "memory") || num(e, "pid") != pids[p])
                continue;
            double b = num(json_object_get(e, "args"), "allocated_bytes");
            long k = lround(num(e, "ts") * 1e3 * sx);
            if (k >= (long)W)
                k = (long)W - 1;
            if (k >= 0 && b > col[k])
                col[k] = b;
        }
        fprintf(f, "<polyline class=\"mem m%zu\" data-rank=\"%.0f\" points=\"", p % 4, pids[p]);
        double last = -1;
        for (size_t k = 0; k < (size_t)W; k++) {
            if (col[k] < 0)
                continue;
            if (last >= 0)
                fprintf(f, "%.0f,%.1f ", LEFT + k, H - last * sy); /* a step: held until the change */
            fprintf(f, "%.0f,%.1f ", LEFT + k, H - col[k] * sy);
            last = col[k];
        }
        fprintf(f, "\"><title>rank %.0f</title></polyline>\n", pids[p]);
    }
    free(col);
    double px = LEFT + peak_t * sx, py = H - top * sy;
    fprintf(f, "<circle id=\"peak\" data-bytes=\"%.0f\" data-rank=\"%.0f\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"peak\">peak %.2f GiB (rank %.0f, %.3f ms)</text>\n",
            top, peak_pid, px, py, px + 6 > LEFT + W - 200 ? LEFT + W - 200 : px + 6, py - 6 < 10 ? 10 : py - 6,
            top / 1073741824.0, peak_pid, peak_t / 1e6);
    fprintf(f, "<line class=\"base\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\"/><text x=\"%.0f\" y=\"%.0f\" "
               "class=\"lbl\">0 GiB</text>\n", LEFT, LEFT + W, H, H, LEFT - 6, H + 4);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"axis\">0</text><text x=\"%.0f\" y=\"%.0f\" class=\"axis end\">"
               "%.3f ms</text>\n</svg>\n", LEFT, H + 16, LEFT + W, H + 16, step / 1e6);
    return 1;
}

/* without a timeline: each rank's peak (the JSON's mem_peak_bytes) */
static void memory_peaks(FILE *f, const json_t *r)
{
    const json_t *ranks = json_object_get(r, "ranks"), *mem = json_object_get(r, "memory");
    double cap = json_is_object(mem) ? num(mem, "capacity_bytes") : 0, top = cap;
    size_t n = json_array_size(ranks), shown = n < MAX_ROWS ? n : MAX_ROWS, i;
    const json_t *x;
    json_array_foreach(ranks, i, x) {
        if (num(x, "mem_peak_bytes") > top)
            top = num(x, "mem_peak_bytes");
    }
    if (top <= 0)
        return;
    double h = n <= 16 ? 14 : n <= 64 ? 8 : 3;
    fputs("<h2>Memory peak per rank</h2>\n<p>Without a timeline (--timeline FILE for etkit report) only each "
          "rank's peak is known; the dashed line is the GPU's memory.</p>\n", f);
    fprintf(f, "<svg id=\"memory\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", LEFT + W + 10,
            shown * (h + 1) + 20);
    for (i = 0; i < shown; i++) {
        x = json_array_get(ranks, i);
        double b = num(x, "mem_peak_bytes");
        fprintf(f, "<rect class=\"mempeak\" data-rank=\"%.0f\" data-bytes=\"%.0f\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" "
                   "height=\"%.1f\"><title>rank %.0f peak %.2f GiB</title></rect>\n",
                num(x, "rank"), b, LEFT, i * (h + 1), b / top * W, h, num(x, "rank"), b / 1073741824.0);
    }
    if (cap > 0)
        fprintf(f, "<line class=\"cap\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%.1f\"/>\n", LEFT + cap / top * W,
                LEFT + cap / top * W, shown * (h + 1));
    fputs("</svg>\n", f);
}

static void collectives(FILE *f, const json_t *r)
{
    const json_t *cs = json_object_get(r, "communication"), *c;
    size_t i;
    fputs("<h2>Communication</h2>\n<table id=\"collectives\" class=\"grid\"><tr><th>type</th><th>group</th>"
          "<th>group size</th><th>groups</th><th>count</th><th>bytes per group</th><th>time (ms)</th>"
          "<th>algbw (GB/s)</th><th>busbw (GB/s)</th></tr>\n", f);
    json_array_foreach(cs, i, c) {
        fputs("<tr><td>", f);
        esc(f, str(c, "type"));
        fputs("</td><td>", f);
        esc(f, str(c, "group"));
        fprintf(f, "</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.3f</td><td>%.2f</td>"
                   "<td data-busbw=\"%.17g\">%.2f</td></tr>\n",
                num(c, "group_size"), num(c, "n_groups"), num(c, "count"), num(c, "bytes"), num(c, "time_ns") / 1e6,
                num(c, "algbw_GBps"), num(c, "busbw_GBps"), num(c, "busbw_GBps"));
    }
    fputs("</table>\n", f);
}

const char report_html_css[] =
    "body{font:14px/1.4 sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "table{border-collapse:collapse}th,td{padding:2px 10px;text-align:left}table.grid td,table.grid th"
    "{border-bottom:1px solid #ddd}table.grid td{text-align:right}table.grid td:nth-child(-n+2){text-align:left}"
    "svg text{font:11px sans-serif}.lbl{text-anchor:end}.axis{fill:#666}.end{text-anchor:end}"
    ".mb{text-anchor:middle;fill:#fff;font-size:9px}.peak{fill:#b00}#peak{fill:#b00}"
    ".legend span{margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;"
    "vertical-align:middle}"
    ".compute,.fwd{fill:#3b78c2;background:#3b78c2}.exposed_comm,.comm{fill:#e8843a;background:#e8843a}"
    ".cpu,.cpuop{fill:#8c6bb1;background:#8c6bb1}.bubble{fill:#d9d9d9;background:#d9d9d9}"
    ".idle{fill:#f2f2f2;background:#f2f2f2}.bwd{fill:#1b9e77;background:#1b9e77}"
    ".opt{fill:#d4a017;background:#d4a017}.p2p{fill:#c0392b;background:#c0392b}"
    ".mempeak{fill:#3b78c2}.base{stroke:#999}.cap{stroke:#b00;stroke-dasharray:4 3}.mem{fill:none;stroke-width:1.5}"
    ".m0{stroke:#3b78c2}.m1{stroke:#1b9e77}.m2{stroke:#e8843a}.m3{stroke:#8c6bb1}";

int report_html(FILE *f, const json_t *run, const json_t *timeline, char *msg, size_t cap)
{
    static const char *const need[] = {"step_ns", "ranks", "communication"};
    if (!json_is_object(run)) {
        snprintf(msg, cap, "not a JSON object (want the JSON report of etkit run/sim --json)");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        const json_t *v = json_object_get(run, need[i]);
        if (i == 0 ? !json_is_number(v) : !json_is_array(v)) {
            snprintf(msg, cap, "field '%s' missing or not %s (want the JSON report of etkit run/sim --json)", need[i],
                     i == 0 ? "a number" : "an array");
            return -1;
        }
    }
    const json_t *evs = json_is_object(timeline) ? json_object_get(timeline, "traceEvents") : timeline;
    if (timeline && !json_is_array(evs)) {
        snprintf(msg, cap, "timeline: no traceEvents array (want the file of --timeline)");
        return -1;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>etkit report: ", f);
    esc(f, str(run, "workload"));
    fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>etkit report</h1>\n", report_html_css);
    summary(f, run);
    rank_bars(f, run);
    if (evs)
        gantt(f, run, evs);
    if (!evs || !memory_timeline(f, run, evs))
        memory_peaks(f, run);
    collectives(f, run);
    fprintf(f, "<p class=\"axis\">etkit %s</p>\n</body></html>\n", str(run, "etkit_version"));
    return 0;
}

int report_html_file(const char *cmd, const char *path, const json_t *run, const json_t *timeline, const char *src)
{
    etk_error err = {0};
    char *tmp = NULL, msg[256];
    FILE *f = etk_file_begin(path, &tmp, &err);
    if (!f)
        return cli_fail(cmd, &err);
    if (report_html(f, run, timeline, msg, sizeof msg) != 0) {
        etk_file_abort(f, tmp);
        fprintf(stderr, "etkit %s: error: %s: %s\n", cmd, src, msg);
        return 2;
    }
    if (etk_file_commit(f, tmp, path, &err) != 0)
        return cli_fail(cmd, &err);
    return 0;
}
