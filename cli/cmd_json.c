/* cmd_json.c — `etkit json`: export a Chakra trace as JSON (lossless etkit form or Chakra's
 * feeder form) or, with --to-et, import the lossless form back into a .et file. A thin layer
 * over etk_trace_read / etk_json_export / etk_json_import_file / etk_trace_write. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "etkit/json.h"

static void help(void)
{
    printf("usage: etkit json IN.et [-o OUT.json] [--feeder]\n"
           "       etkit json --to-et IN.json -o OUT.et\n"
           "\n"
           "Export a Chakra trace (plain or gzip) as JSON, or import it back.\n"
           "The default form is lossless (\"etkit-chakra-json\" v1): every field and every\n"
           "attribute with its exact kind; integers above 2^53 are decimal strings, bytes base64.\n"
           "et -> json -> et gives the same bytes for canonical files (see docs/json.md).\n"
           "\n"
           "options:\n"
           "  -o, --output FILE  output file, written atomically (default for JSON: stdout;\n"
           "                     '-' is stdout)\n"
           "      --feeder       write Chakra's JSON-feeder form {\"workload_graph\": [...]}\n"
           "                     (Id, Name, NodeType, is_cpu_op, runtime in us, data_deps, comm_*)\n"
           "      --to-et        IN is lossless JSON: write it as a canonical .et (needs -o)\n"
           "  -q, --quiet        do not print reader warnings\n"
           "  -h, --help         this help\n"
           "\n"
           "examples:\n"
           "  etkit json ../shared/data/chakra/converted_cnn_ddp.0.et -o cnn.json\n"
           "  etkit json --to-et cnn.json -o cnn.et && cmp cnn.et ../shared/data/chakra/converted_cnn_ddp.0.et\n"
           "  etkit json --feeder ../shared/data/chakra/converted_cnn_ddp.0.et -o cnn_feeder.json\n");
}

/* First non-blank byte is '{': the user probably meant --to-et. */
static bool looks_like_json(const char *path)
{
    struct stat st; /* not a FIFO: fopen would block (the reader then says what it is) */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    int c;
    while ((c = fgetc(f)) == ' ' || c == '\n' || c == '\t' || c == '\r')
        ;
    fclose(f);
    return c == '{';
}

int cmd_json(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"feeder", no_argument, NULL, 'F'},
        {"to-et", no_argument, NULL, 'T'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    bool feeder = false, to_et = false, quiet = false;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'F': feeder = true; break;
        case 'T': to_et = true; break;
        case 'q': quiet = true; break;
        case 'h': help(); return 0;
        default: return cli_getopt_error("json", c, argv);
        }
    }
    const char *in;
    if (cli_one_input("json", argc, argv, &in))
        return 2;
    etk_error err = {0};
    if (to_et) {
        if (feeder)
            return cli_usage_error("json", "--feeder is an export form; --to-et imports the lossless form only");
        if (!out)
            return cli_usage_error("json", "--to-et needs -o OUT.et");
        etk_trace *t;
        if (etk_json_import_file(in, &t, &err))
            return cli_fail("json", &err);
        int rc = etk_trace_write(t, out, &err);
        etk_trace_free(t);
        return rc ? cli_fail("json", &err) : 0;
    }
    etk_read_opts ro = {.quiet = quiet};
    etk_trace *t;
    if (etk_trace_read(in, &ro, &t, &err)) {
        if (looks_like_json(in))
            fprintf(stderr, "etkit json: note: %s looks like JSON; 'etkit json --to-et %s -o OUT.et' imports the "
                            "lossless form\n", in, in);
        return cli_fail("json", &err);
    }
    int rc = etk_json_export(t, feeder ? ETK_JSON_FEEDER : ETK_JSON_LOSSLESS, out ? out : "-", &err);
    etk_trace_free(t);
    return rc ? cli_fail("json", &err) : 0;
}
