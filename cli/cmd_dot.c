/* cmd_dot.c — `etkit dot`: Graphviz DOT of one trace (etk_dot_write), to stdout or written
 * atomically to -o FILE. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "etkit/validate.h"

static void help(void)
{
    printf("usage: etkit dot [options] TRACE.et\n"
           "\n"
           "Write the dependency graph of a trace as Graphviz DOT: one box per node (id, name,\n"
           "type, FLOPs/bytes where set), data dependencies solid, control dependencies dashed.\n"
           "\n"
           "options:\n"
           "  -o, --output FILE    write FILE (atomically) instead of stdout\n"
           "  -n, --max-nodes N    only the first N nodes in file order (the output says so)\n"
           "  -h, --help           this text\n"
           "\n"
           "example:\n"
           "  etkit dot -n 200 ../shared/data/stage/gpt_small_dp2_tp2_pp2/workload.0.et -o g.dot\n"
           "  dot -Tsvg g.dot > g.svg\n");
}

int cmd_dot(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"max-nodes", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    etk_dot_opts opts = {0};
    uint64_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n':
            if (cli_parse_u64("dot", "--max-nodes", optarg, &v))
                return 2;
            if (v == 0)
                return cli_usage_error("dot", "--max-nodes wants at least 1");
            opts.max_nodes = (size_t)v;
            break;
        case 'h': help(); return 0;
        default:
            return cli_usage_error("dot", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("dot", "no trace given");
    if (argc - optind > 1)
        return cli_usage_error("dot", "one trace at a time; got %d", argc - optind);
    etk_error err = {0};
    etk_read_opts ro = {.quiet = true, .max_nodes = opts.max_nodes}; /* -n: read the head only */
    etk_trace *t;
    if (etk_trace_read(argv[optind], &ro, &t, &err))
        return cli_fail("dot", &err);
    int rc;
    if (!out || !strcmp(out, "-")) {
        rc = etk_dot_write(stdout, t, &opts, NULL, &err);
        if (!rc && fflush(stdout))
            rc = etk_err(&err, ETK_EIO, "writing stdout failed");
    } else {
        char *tmp;
        FILE *f = etk_file_begin(out, &tmp, &err);
        if (!f) {
            etk_trace_free(t);
            return cli_fail("dot", &err);
        }
        rc = etk_dot_write(f, t, &opts, NULL, &err);
        if (rc) {
            etk_file_abort(f, tmp);
            etk_err_prefix(&err, "%s", out);
        } else {
            rc = etk_file_commit(f, tmp, out, &err);
        }
    }
    etk_trace_free(t);
    return rc ? cli_fail("dot", &err) : 0;
}
