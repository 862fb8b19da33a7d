/* cmd_validate.c — `etkit validate`: open each workload (prefix, rank file or single .et),
 * run etk_validate_workload and print the findings (text or --json). Exit status 0 when no
 * errors were found, 1 when some were, 2 for usage or input errors. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "etkit/json.h"
#include "etkit/validate.h"

static void help(void)
{
    printf("usage: etkit validate [options] PREFIX|FILE...\n"
           "\n"
           "Check Chakra traces: per file duplicate ids, dependencies on absent ids (data and\n"
           "control), cycles, attribute kinds other tools misread, required attributes, zero-size\n"
           "communication; across the ranks of a workload communicator groups, collective\n"
           "sequences, send/recv matching and cross-rank deadlock. Each argument is a workload:\n"
           "a prefix (files PREFIX.<rank>.et), one rank file, or a single .et file.\n"
           "\n"
           "options:\n"
           "  -g, --groups FILE   comm-group JSON (default: PREFIX.json when it exists)\n"
           "      --json          findings as JSON on stdout\n"
           "      --per-file      only the per-file checks\n"
           "      --no-deadlock   skip the global deadlock check\n"
           "      --max-ids N     ids listed in aggregated findings (default 5)\n"
           "  -q, --quiet         errors and the summary only (no warnings/info)\n"
           "  -h, --help          this text\n"
           "\n"
           "exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage or read error\n"
           "\n"
           "example:\n"
           "  etkit validate ../shared/data/stage/gpt_small_dp2_tp2_pp2/workload\n");
}

static json_t *finding_json(const etk_finding *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "severity", json_string(etk_severity_name(x->severity)));
    json_object_set_new(o, "code", json_string(x->code));
    json_object_set_new(o, "rank", x->rank >= 0 ? json_integer(x->rank) : json_null());
    json_object_set_new(o, "file", etk_json_text(x->file));
    json_object_set_new(o, "node_index", x->node_index >= 0 ? json_integer(x->node_index) : json_null());
    json_object_set_new(o, "node_id",
                        x->node_index >= 0 ? json_integer((json_int_t)x->node_id) : json_null());
    json_object_set_new(o, "count", json_integer((json_int_t)x->count));
    json_object_set_new(o, "message", etk_json_text(x->message));
    return o;
}

int cmd_validate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"groups", required_argument, NULL, 'g'},
        {"json", no_argument, NULL, 'J'},
        {"per-file", no_argument, NULL, 'P'},
        {"no-deadlock", no_argument, NULL, 'D'},
        {"max-ids", required_argument, NULL, 'M'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *groups = NULL;
    bool json = false, quiet = false;
    etk_validate_opts vo = {0};
    uint64_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "g:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': groups = optarg; break;
        case 'J': json = true; break;
        case 'P': vo.skip_cross_rank = true; break;
        case 'D': vo.skip_deadlock = true; break;
        case 'M':
            if (cli_parse_u64("validate", "--max-ids", optarg, &v))
                return 2;
            if (v == 0 || v > 1000)
                return cli_usage_error("validate", "--max-ids wants 1..1000, got %s", optarg);
            vo.max_ids_listed = (uint32_t)v;
            break;
        case 'q': quiet = true; break;
        case 'h': help(); return 0;
        default:
            return cli_usage_error("validate", "unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("validate", "no trace given");
    if (groups && argc - optind > 1)
        return cli_usage_error("validate", "--groups applies to one workload; got %d",
                               argc - optind);
    etk_read_opts ro = {.quiet = true};
    json_t *all = json ? json_array() : NULL;
    int status = 0;
    for (int a = optind; a < argc; a++) {
        etk_error err = {0};
        etk_workload *w;
        if (etk_workload_open(argv[a], groups, &ro, &w, &err)) {
            json_decref(all);
            return cli_fail("validate", &err);
        }
        etk_findings *f = etk_findings_new();
        if (!f || etk_validate_workload(w, &vo, f, &err)) {
            if (!f)
                etk_err(&err, ETK_ENOMEM, "out of memory");
            etk_findings_free(f);
            etk_workload_free(w);
            json_decref(all);
            return cli_fail("validate", &err);
        }
        uint64_t nodes = 0;
        for (uint32_t r = 0; r < w->n_ranks; r++)
            nodes += w->ranks[r] ? w->ranks[r]->n_nodes : 0;
        if (json) {
            json_t *o = json_object(), *arr = json_array();
            json_object_set_new(o, "spec", etk_json_text(argv[a]));
            json_object_set_new(o, "ranks", json_integer(w->n_ranks));
            json_object_set_new(o, "nodes", json_integer((json_int_t)nodes));
            json_object_set_new(o, "groups", w->groups_path ? etk_json_text(w->groups_path) : json_null());
            json_object_set_new(o, "errors", json_integer((json_int_t)f->n_errors));
            json_object_set_new(o, "warnings", json_integer((json_int_t)f->n_warnings));
            for (size_t i = 0; i < f->n; i++)
                json_array_append_new(arr, finding_json(&f->items[i]));
            json_object_set_new(o, "findings", arr);
            json_array_append_new(all, o);
        } else {
            char line[8192];
            for (size_t i = 0; i < f->n; i++) {
                if (quiet && f->items[i].severity != ETK_SEV_ERROR)
                    continue;
                etk_finding_format(&f->items[i], line, sizeof line);
                printf("%s\n", line);
            }
            printf("%s: %" PRIu32 " ranks, %" PRIu64 " nodes%s%s: %zu errors, %zu warnings\n",
                   argv[a], w->n_ranks, nodes, w->groups_path ? ", groups " : "",
                   w->groups_path ? w->groups_path : "", f->n_errors, f->n_warnings);
        }
        if (f->n_errors)
            status = 1;
        etk_findings_free(f);
        etk_workload_free(w);
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "workloads", all);
        json_object_set_new(root, "ok", json_boolean(status == 0));
        char *s = json_dumps(root, JSON_INDENT(2));
        json_decref(root);
        if (!s) {
            fprintf(stderr, "etkit validate: error: out of memory\n");
            return 2;
        }
        printf("%s\n", s);
        free(s);
    }
    return status;
}
