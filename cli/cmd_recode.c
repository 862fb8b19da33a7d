/* cmd_recode.c — `etkit recode`: read a trace leniently (gzip, unpacked repeated fields, unknown
 * fields, fields in any order) and write it back canonically. Canonical inputs come out
 * byte-identical, so this is also the round-trip check of the reader and writer. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static void help(void)
{
    printf("usage: etkit recode IN.et -o OUT.et [-q]\n"
           "\n"
           "Read a Chakra trace (plain or gzip; packed or unpacked repeated fields; unknown\n"
           "fields are dropped) and write it canonically: fields in number order, zero scalars\n"
           "omitted, repeated numbers packed, plain (not gzip). Written atomically.\n"
           "Prints '<IN>: <n> nodes, <a> bytes -> <OUT>: <b> bytes' on stderr.\n"
           "\n"
           "options:\n"
           "  -o, --output FILE  output .et ('-' is stdout)\n"
           "  -q, --quiet        no summary line and no reader warnings\n"
           "  -h, --help         this help\n"
           "\n"
           "example:\n"
           "  etkit recode trace.et.gz -o trace.et\n");
}

int cmd_recode(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    bool quiet = false;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'q': quiet = true; break;
        case 'h': help(); return 0;
        default: return cli_getopt_error("recode", c, argv);
        }
    }
    const char *in;
    if (cli_one_input("recode", argc, argv, &in))
        return 2;
    if (!out)
        return cli_usage_error("recode", "missing -o OUT.et");
    etk_error err = {0};
    etk_read_opts ro = {.quiet = quiet};
    etk_trace *t;
    if (etk_trace_read(in, &ro, &t, &err))
        return cli_fail("recode", &err);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = etk_trace_encode(t, &buf, &len, &err);
    if (!rc)
        rc = strcmp(out, "-") ? etk_file_write_all(out, buf, len, &err)
                              : (fwrite(buf, 1, len, stdout) == len && fflush(stdout) == 0
                                     ? 0
                                     : etk_err(&err, ETK_EIO, "writing to stdout failed"));
    if (!rc && !quiet)
        fprintf(stderr, "%s: %zu nodes, %llu bytes%s -> %s: %zu bytes\n", in, t->n_nodes,
                (unsigned long long)t->file_bytes, t->gzipped ? " (after gunzip)" : "", out, len);
    free(buf);
    etk_trace_free(t);
    return rc ? cli_fail("recode", &err) : 0;
}
