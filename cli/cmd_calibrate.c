/* cmd_calibrate.c — `etkit calibrate ROWS.json`: predict measured runs (the format of
 * ../shared/spec/calibration-modern.json) through the same path as `etkit run` and report the
 * errors per row, per set, per GPU; with --fit, fit compute/network parameters to the rows of one
 * GPU, print before/after errors (and leave-one-set-out with --loso) and write a GPU YAML with
 * the fitted values (docs/calibrate.md). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "etkit/calib.h"

static void help(void)
{
    printf("usage: etkit calibrate ROWS.json [--report] [--gpu NAME] [--set NAME] [--json]\n"
           "       etkit calibrate ROWS.json --fit NAME[,NAME...] [--gpu NAME] [--loso] [-o GPU.yaml]\n\n"
           "Predicts every row of a file of measured runs (the format of\n"
           "shared/spec/calibration-modern.json: model, plan, cluster, gpus, measured metric) the way\n"
           "'etkit run' does, folded, and reports measured, predicted, signed error %% and the memory\n"
           "verdict per row, then mean and worst |error| per set, per GPU and overall. Rows marked\n"
           "expressible: false, or that cannot be built, are listed with the reason.\n\n"
           "  --report               the report (the default without --fit)\n"
           "  --gpu NAME             only rows of that gpu_type (h100, H200, ...)\n"
           "  --set NAME             only rows of that set (repeatable)\n"
           "  --rows NAME[,NAME...]  only these rows\n"
           "  --param NAME=V         predict with this parameter value (repeatable); with --fit the\n"
           "                         start of a fitted parameter, or a value held fixed\n"
           "  --fit NAME[,NAME...]   fit these parameters: compute-model names (gemm_eff, attn_eff,\n"
           "                         launch_ns, host_op_ns, ... as --compute-param) and the network's\n"
           "                         nvlink_GBps, nic_GBps, nvlink_latency_ns, nic_latency_ns;\n"
           "                         minimises the mean\n"
           "                         |log(predicted/measured)| over the rows of one GPU (Nelder-Mead\n"
           "                         in log space from the GPU's defaults, deterministic)\n"
           "  --loso                 with --fit: leave-one-set-out, each set predicted with the\n"
           "                         parameters fitted on the other sets (each fold's search starts\n"
           "                         from the full fit's values; its objective there and fitted,\n"
           "                         and whether it converged, are printed)\n"
           "  --max-evals N          objective evaluations per fit (default 60 x (parameters + 1))\n"
           "  -o, --output FILE      write the GPU YAML of the rows' GPU with the fitted values (or,\n"
           "                         without --fit, the --param values) in its compute: mapping\n"
           "                         (atomically)\n"
           "  --note TEXT            with -o: a comment line for the YAML's header (repeatable)\n"
           "  --models-dir DIR       where model files named by rows are looked up by base name\n"
           "                         (besides next to ROWS.json and its parents)\n"
           "  --plan-extra FILE      plan options the rows' runs used that their plans do not carry:\n"
           "                         {\"ROW\": {\"plan\": {...}, \"source\": \"...\"}} (e.g. the recipe's\n"
           "                         recompute_modules; bench/calibration/modern-plan-extra.json);\n"
           "                         with \"model\" and \"cluster\" too, a complete plan expressing a\n"
           "                         row marked not expressible (source quoting its description)\n"
           "  --json                 the report as JSON\n"
           "  --verbose              each row's prediction time on stderr\n"
           "  -j, --jobs N           rows predicted at once on N threads (default: the CPUs, at\n"
           "                         most 16); the results do not depend on it\n"
           "  -h, --help             this text\n\n"
           "Exit status: 0 when every expressible row was predicted, 2 when a row could not be\n"
           "built or predicted (each named with its file, row and field) or on bad input.\n\n"
           "examples:\n"
           "  etkit calibrate ../shared/spec/calibration-modern.json\n"
           "  etkit calibrate bench/calibration/korthikanti.json --json\n"
           "  etkit calibrate ../shared/spec/calibration-modern.json --fit gemm_eff,attn_eff --gpu h100 \\\n"
           "                  --loso -o h100-fitted.yaml\n");
}

enum { O_REPORT = 1000, O_GPU, O_SET, O_PARAM, O_FIT, O_LOSO, O_MAXEV, O_MODELS, O_JSON, O_VERBOSE, O_JOBS, O_ROWS, O_NOTE, O_EXTRA };

typedef struct cal_opts {
    const char *gpu, *fit, *output, *models_dir, *plan_extra;
    const char *sets[32];
    uint32_t n_sets;
    char names[2048];      /* --rows NAME,NAME,...: ",a,b," */
    char notes[2048];      /* --note lines, '\n'-separated */
    etk_calib_params given;
    bool loso, json, verbose;
    uint32_t max_evals, jobs;
} cal_opts;

static int parse_params(const char *cmd, const char *list, etk_calib_params *p)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        etk_error err = {0};
        if (etk_calib_param_check(t, &err))
            return cli_usage_error(cmd, "--fit: %s", err.msg);
        for (uint32_t i = 0; i < p->n; i++)
            if (!strcmp(p->name[i], t))
                return cli_usage_error(cmd, "--fit: %s given twice", t);
        if (p->n >= ETK_CALIB_MAX_PARAMS)
            return cli_usage_error(cmd, "--fit: at most %d parameters", ETK_CALIB_MAX_PARAMS);
        snprintf(p->name[p->n++], sizeof p->name[0], "%s", t);
    }
    if (!p->n)
        return cli_usage_error(cmd, "--fit wants parameter names, e.g. --fit gemm_eff,attn_eff");
    return 0;
}

static int add_given(const char *cmd, const char *arg, etk_calib_params *p)
{
    const char *eq = strchr(arg, '=');
    char name[32];
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof name)
        return cli_usage_error(cmd, "--param wants NAME=VALUE, got '%s'", arg);
    snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
    etk_error err = {0};
    if (etk_calib_param_check(name, &err))
        return cli_usage_error(cmd, "--param: %s", err.msg);
    double v;
    if (cli_parse_double(cmd, "--param", eq + 1, &v))
        return 2;
    if (p->n >= ETK_CALIB_MAX_PARAMS)
        return cli_usage_error(cmd, "--param: at most %d", ETK_CALIB_MAX_PARAMS);
    snprintf(p->name[p->n], sizeof p->name[0], "%s", name);
    p->value[p->n++] = v;
    return 0;
}

static bool row_selected(const cal_opts *o, const etk_calib_row *r)
{
    if (o->gpu && strcasecmp(o->gpu, r->gpu))
        return false;
    if (o->names[0]) {
        char key[160];
        snprintf(key, sizeof key, ",%s,", r->name);
        if (!strstr(o->names, key))
            return false;
    }
    if (!o->n_sets)
        return true;
    for (uint32_t i = 0; i < o->n_sets; i++)
        if (!strcmp(o->sets[i], r->set))
            return true;
    return false;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* -o without --fit: the GPU YAML of the selected rows' one GPU with the --param values */
static int write_given(const char *cmd, const cal_opts *o, etk_calib_rows *rows, const bool *use)
{
    const etk_calib_row *g = NULL;
    for (uint32_t i = 0; i < rows->n; i++) {
        const etk_calib_row *r = &rows->rows[i];
        if (!use[i] || !r->built)
            continue;
        if (g && strcmp(g->cluster.gpu.name, r->cluster.gpu.name))
            return cli_usage_error(cmd, "--output: the rows cover GPUs %s and %s; choose one with "
                                        "--gpu", g->cluster.gpu.name, r->cluster.gpu.name);
        if (!g)
            g = r;
    }
    if (!g)
        return cli_usage_error(cmd, "--output: no built row selected");
    char header[4096];
    snprintf(header, sizeof header, "%s: values given to etkit calibrate --param%s",
             g->cluster.gpu.name, o->notes);
    etk_error err = {0};
    if (etk_calib_write_gpu_yaml(o->output, &g->cluster.gpu, &o->given, header, &err))
        return cli_fail(cmd, &err);
    return 0;
}

static int report(const char *cmd, const cal_opts *o, etk_calib_rows *rows, const bool *use)
{
    etk_calib_eval *ev = calloc(rows->n, sizeof *ev);
    if (!ev)
        return 2;
    rows->drop_workloads = true; /* one pass: no row is predicted twice */
    uint32_t failed = etk_calib_eval_rows(rows, use, o->given.n ? &o->given : NULL, o->jobs, ev);
    const char *labels[] = {o->given.n ? "given" : "predicted"};
    const etk_calib_eval *evs[] = {ev};
    if (o->json)
        etk_calib_print_json(rows, use, 1, labels, evs, o->given.n ? &o->given : NULL, stdout);
    else
        etk_calib_print_text(rows, use, 1, labels, evs, stdout);
    for (uint32_t i = 0; i < rows->n; i++) {
        if (use[i] && rows->rows[i].expressible && !ev[i].ok)
            fprintf(stderr, "etkit %s: error: %s\n", cmd, ev[i].error);
        if (o->verbose && ev[i].ok)
            fprintf(stderr, "etkit %s: %s: %.2f s\n", cmd, rows->rows[i].name, ev[i].wall_s);
    }
    free(ev);
    int rc = o->output ? write_given(cmd, o, rows, use) : 0;
    return failed ? 2 : rc;
}

/* mean |log(predicted / measured)| of the predicted rows (the fit's objective) */
static double mean_log_err(const etk_calib_rows *rows, const bool *use, const etk_calib_eval *ev)
{
    double sum = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < rows->n; i++)
        if (use[i] && ev[i].ok) {
            sum += fabs(log(ev[i].pred.value / rows->rows[i].measured));
            n++;
        }
    return n ? sum / n : 0;
}

static int fit_rows(const char *cmd, const cal_opts *o, etk_calib_rows *rows, const bool *use,
                    const bool *fituse, etk_calib_params *pp, const char *gpu, uint32_t first,
                    uint32_t n_use);

static int fit(const char *cmd, const cal_opts *o, etk_calib_rows *rows, bool *use)
{
    etk_calib_params p = {0};
    int rc = parse_params(cmd, o->fit, &p);
    if (rc)
        return rc;
    /* the rows of one GPU, all built (the rows not expressible are listed, not fitted) */
    bool *fituse = calloc(rows->n, sizeof *fituse);
    if (!fituse)
        return 2;
    const char *gpu = NULL;
    uint32_t n_use = 0, first = 0;
    for (uint32_t i = 0; i < rows->n; i++) {
        etk_calib_row *r = &rows->rows[i];
        if (!use[i] || !r->expressible)
            continue;
        if (!r->built) {
            fprintf(stderr, "etkit %s: error: %s\n", cmd, r->reason);
            free(fituse);
            return 2;
        }
        if (gpu && strcasecmp(gpu, r->gpu)) {
            free(fituse);
            return cli_usage_error(cmd, "--fit: the rows cover GPUs %s and %s; choose one with "
                                        "--gpu", gpu, r->gpu);
        }
        if (!gpu)
            first = i;
        gpu = r->gpu;
        fituse[i] = true;
        n_use++;
    }
    rc = fit_rows(cmd, o, rows, use, fituse, &p, gpu, first, n_use);
    free(fituse);
    return rc;
}

static int fit_rows(const char *cmd, const cal_opts *o, etk_calib_rows *rows, const bool *use,
                    const bool *fituse, etk_calib_params *pp, const char *gpu, uint32_t first,
                    uint32_t n_use)
{
    etk_calib_params p = *pp;
    int rc;
    if (!n_use)
        return cli_usage_error(cmd, "--fit: no expressible rows selected");
    etk_error err = {0};
    for (uint32_t i = 0; i < p.n; i++) {
        bool given = false;
        for (uint32_t j = 0; j < o->given.n; j++)
            if (!strcmp(o->given.name[j], p.name[i])) {
                p.value[i] = o->given.value[j];
                given = true;
            }
        if (!given && etk_calib_param_default(&rows->rows[first], p.name[i], &p.value[i], &err))
            return cli_fail(cmd, &err);
        if (!given && !(p.value[i] > 0))
            return cli_usage_error(cmd, "--fit: %s is %g on %s (0: off or inherited); the fit "
                                        "moves parameters by ratios: give a start with --param "
                                        "%s=VALUE", p.name[i], p.value[i],
                                   rows->rows[first].cluster.gpu.name, p.name[i]);
    }
    etk_calib_params start = p;
    /* --param values of parameters not fitted stay fixed */
    etk_calib_params fixed = {0};
    for (uint32_t j = 0; j < o->given.n; j++) {
        bool fitted = false;
        for (uint32_t i = 0; i < p.n; i++)
            fitted = fitted || !strcmp(o->given.name[j], p.name[i]);
        if (!fitted && fixed.n < ETK_CALIB_MAX_PARAMS) {
            snprintf(fixed.name[fixed.n], sizeof fixed.name[0], "%s", o->given.name[j]);
            fixed.value[fixed.n++] = o->given.value[j];
        }
    }
    bool no_effect[ETK_CALIB_MAX_PARAMS] = {0};
    etk_calib_fit_opts fo = {.max_evals = o->max_evals, .jobs = o->jobs, .fixed = &fixed,
                             .no_effect = no_effect};
    double obj = 0;
    uint32_t evals = 0;
    if (etk_calib_fit(rows, fituse, &p, &fo, &obj, &evals, &err))
        return cli_fail(cmd, &err);
    for (uint32_t i = 0; i < p.n; i++)
        if (no_effect[i])
            fprintf(stderr, "etkit %s: warning: %s changes no prediction of these rows (x1.25 from "
                            "%g): the fit cannot determine it\n", cmd, p.name[i], start.value[i]);
    fo.no_effect = NULL; /* leave-one-set-out fits: the same parameters */
    etk_calib_params start_all, fitted_all;
    etk_calib_params_merge(&start_all, &fixed, &start);
    etk_calib_params_merge(&fitted_all, &fixed, &p);
    etk_calib_eval *ev = calloc(3 * (size_t)rows->n, sizeof *ev);
    if (!ev)
        return 2;
    etk_calib_eval *before = ev, *after = ev + rows->n, *held = ev + 2 * rows->n;
    etk_calib_eval_rows(rows, use, &start_all, o->jobs, before);
    etk_calib_eval_rows(rows, use, &fitted_all, o->jobs, after);
    etk_calib_loso_set sets[64];
    uint32_t n_sets = 0;
    /* the folds start from the full fit's values (a warm start): each fold's search then only
     * has to move as far as its missing set pulled the full fit, and never ends worse on its
     * rows than the full fit (docs/calibrate.md) */
    if (o->loso && etk_calib_loso(rows, fituse, &p, &fo, held, sets, 64, &n_sets, &err)) {
        free(ev);
        return cli_fail(cmd, &err);
    }
    const char *labels[] = {"default", "fitted", "held-out"};
    const etk_calib_eval *evs[] = {before, after, held};
    uint32_t n_eval = o->loso ? 3 : 2;
    if (o->json) {
        etk_calib_print_json(rows, use, n_eval, labels, evs, &fitted_all, stdout);
    } else {
        printf("fit on %u rows of GPU %s (%s), %u evaluations: mean |log(pred/meas)| %.5f -> "
               "%.5f\n", n_use, gpu, rows->rows[first].cluster.gpu.name, evals,
               mean_log_err(rows, fituse, before), obj);
        for (uint32_t i = 0; i < p.n; i++)
            printf("  %-20s %12.6g -> %12.6g\n", p.name[i], start.value[i], p.value[i]);
        if (o->loso) {
            printf("leave-one-set-out fits:\n");
            for (uint32_t i = 0; i < n_sets; i++) {
                printf("  without %-28s", sets[i].set);
                if (!sets[i].fitted)
                    printf(" (no fit: no other set)");
                for (uint32_t k = 0; sets[i].fitted && k < sets[i].p.n; k++)
                    printf(" %s %.6g", sets[i].p.name[k], sets[i].p.value[k]);
                printf("\n");
                if (sets[i].fitted)
                    printf("    objective on the other sets' rows %.5f at the full fit -> %.5f, "
                           "%u evaluations, %s\n", sets[i].start_obj, sets[i].obj, sets[i].evals,
                           sets[i].converged ? "converged" : "stopped at --max-evals");
            }
        }
        etk_calib_print_text(rows, use, n_eval, labels, evs, stdout);
    }
    rc = 0;
    if (o->output) {
        char header[4096];
        int w = snprintf(header, sizeof header,
                         "%s fitted by etkit calibrate --fit %s on %u rows of %s\n"
                         "mean |log(predicted/measured)| %.5f%s",
                         rows->rows[first].cluster.gpu.name, o->fit, n_use,
                         base_name(rows->path), obj, o->notes);
        (void)w;
        if (etk_calib_write_gpu_yaml(o->output, &rows->rows[first].cluster.gpu, &fitted_all, header, &err))
            rc = cli_fail(cmd, &err);
    }
    free(ev);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    static const char *cmd = "calibrate";
    static const struct option lo[] = {
        {"report", no_argument, 0, O_REPORT}, {"gpu", required_argument, 0, O_GPU},
        {"set", required_argument, 0, O_SET}, {"param", required_argument, 0, O_PARAM},
        {"fit", required_argument, 0, O_FIT}, {"loso", no_argument, 0, O_LOSO},
        {"max-evals", required_argument, 0, O_MAXEV},
        {"models-dir", required_argument, 0, O_MODELS},
        {"plan-extra", required_argument, 0, O_EXTRA}, {"json", no_argument, 0, O_JSON},
        {"verbose", no_argument, 0, O_VERBOSE}, {"jobs", required_argument, 0, O_JOBS},
        {"rows", required_argument, 0, O_ROWS}, {"note", required_argument, 0, O_NOTE},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    cal_opts o;
    memset(&o, 0, sizeof o);
    int c, rc;
    uint64_t v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:hj:", lo, NULL)) != -1) {
        switch (c) {
        case 'h':
            help();
            return 0;
        case O_REPORT:
            break;
        case O_GPU:
            o.gpu = optarg;
            break;
        case O_SET:
            if (o.n_sets >= 32)
                return cli_usage_error(cmd, "--set: at most 32");
            o.sets[o.n_sets++] = optarg;
            break;
        case O_PARAM:
            if ((rc = add_given(cmd, optarg, &o.given)))
                return rc;
            break;
        case O_FIT:
            o.fit = optarg;
            break;
        case O_LOSO:
            o.loso = true;
            break;
        case O_MAXEV:
            if (cli_parse_u64(cmd, "--max-evals", optarg, &v))
                return 2;
            if (v < 1 || v > 1000000)
                return cli_usage_error(cmd, "--max-evals must be between 1 and 1000000, got %s", optarg);
            o.max_evals = (uint32_t)v;
            break;
        case O_MODELS:
            o.models_dir = optarg;
            break;
        case O_EXTRA:
            o.plan_extra = optarg;
            break;
        case O_JSON:
            o.json = true;
            break;
        case O_ROWS:
            if (strlen(optarg) + 3 > sizeof o.names)
                return cli_usage_error(cmd, "--rows: at most %zu characters", sizeof o.names - 3);
            snprintf(o.names, sizeof o.names, ",%s,", optarg);
            break;
        case 'j':
        case O_JOBS:
            if (cli_parse_u64(cmd, "--jobs", optarg, &v))
                return 2;
            if (v < 1 || v > 64)
                return cli_usage_error(cmd, "--jobs must be between 1 and 64, got %s", optarg);
            o.jobs = (uint32_t)v;
            break;
        case O_VERBOSE:
            o.verbose = true;
            break;
        case 'o':
            o.output = optarg;
            break;
        case O_NOTE: {
            size_t len = strlen(o.notes);
            if (strchr(optarg, '\n') || len + strlen(optarg) + 2 > sizeof o.notes)
                return cli_usage_error(cmd, "--note: one line; at most %zu characters in all",
                                       sizeof o.notes - 2);
            snprintf(o.notes + len, sizeof o.notes - len, "\n%s", optarg);
            break;
        }
        default:
            return cli_getopt_error(cmd, c, argv);
        }
    }
    if (!o.jobs) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        o.jobs = ncpu < 1 ? 1 : ncpu > 16 ? 16 : (uint32_t)ncpu;
    }
    const char *in;
    if ((rc = cli_one_input(cmd, argc, argv, &in)))
        return rc;
    if (o.loso && !o.fit)
        return cli_usage_error(cmd, "--loso applies to --fit");
    if (o.output && !o.fit && !o.given.n)
        return cli_usage_error(cmd, "--output writes fitted values (--fit) or given ones (--param)");
    if (o.notes[0] && !o.output)
        return cli_usage_error(cmd, "--note applies to --output");
    if (o.fit) { /* check the names before the (slow) loading */
        etk_calib_params t = {0};
        if ((rc = parse_params(cmd, o.fit, &t)))
            return rc;
    }
    etk_error err = {0};
    etk_calib_rows *rows = NULL;
    if (etk_calib_load_extra(in, o.models_dir, o.plan_extra, &rows, &err))
        return cli_fail(cmd, &err);
    bool *use = calloc(rows->n, sizeof *use);
    if (!use) {
        etk_calib_free(rows);
        return 2;
    }
    uint32_t n_sel = 0;
    for (uint32_t i = 0; i < rows->n; i++)
        n_sel += use[i] = row_selected(&o, &rows->rows[i]);
    if (!n_sel)
        rc = cli_usage_error(cmd, "%s: no row matches%s%s%s%s", in, o.gpu ? " --gpu " : "",
                             o.gpu ? o.gpu : "", o.n_sets ? " and the --set names" : "",
                             o.names[0] ? " and the --rows names" : "");
    else
        rc = o.fit ? fit(cmd, &o, rows, use) : report(cmd, &o, rows, use);
    free(use);
    etk_calib_free(rows);
    return rc;
}
