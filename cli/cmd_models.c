/* cmd_models.c — `etkit models`: the built-in model presets (presets/models/NAME.yaml) with their
 * dimensions and parameter counts (counted from the block graph, see src/model/). */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "etkit/model.h"

static void help(void)
{
    printf("usage: etkit models [--json]\n\n"
           "Lists the built-in model presets of 'etkit gen --model NAME': architecture, layers,\n"
           "hidden size, attention heads (KV heads), FFN size, vocabulary, sequence length and the\n"
           "parameter count (embedding, layers and output layer; a tied output layer counted once).\n\n"
           "  --json   one JSON document: {\"models\": [{\"name\", \"arch\", ..., \"params\"}]}\n\n"
           "example:\n  etkit models\n");
}

int cmd_models(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'h') {
            help();
            return 0;
        } else
            return cli_usage_error("models", "unknown option '%s'", argv[optind - 1]);
    }
    if (optind < argc)
        return cli_usage_error("models", "unexpected argument '%s'", argv[optind]);
    const char *names[64];
    size_t n = etk_model_preset_names(names, 64);
    json_t *arr = json_array();
    if (!json)
        printf("%-14s %-6s %6s %7s %6s %4s %7s %7s %6s %18s\n", "name", "arch", "layers", "hidden", "heads", "kv",
               "ffn", "vocab", "seq", "params");
    for (size_t i = 0; i < n && i < 64; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%.*s", (int)(strlen(names[i]) - 5), names[i]);
        etk_model m;
        etk_error err = {0};
        uint64_t params;
        if (etk_model_preset(nm, &m, &err) || etk_model_params(&m, &params, &err)) {
            json_decref(arr);
            return cli_fail("models", &err);
        }
        if (json) {
            json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "name", m.name, "arch",
                                                 m.arch, "layers", (json_int_t)m.layers, "hidden", (json_int_t)m.hidden,
                                                 "heads", (json_int_t)m.heads, "kv_heads", (json_int_t)m.kv_heads, "ffn",
                                                 (json_int_t)m.ffn, "vocab", (json_int_t)m.vocab, "seq",
                                                 (json_int_t)m.seq, "params", (json_int_t)params, "source", m.source));
        } else {
            printf("%-14s %-6s %6" PRId64 " %7" PRId64 " %6" PRId64 " %4" PRId64 " %7" PRId64 " %7" PRId64 " %6" PRId64
                   " %18" PRIu64 "  (%.1fB)\n",
                   m.name, m.arch, m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab, m.seq, params, params / 1e9);
        }
    }
    if (json) {
        json_t *root = json_pack("{s:o}", "models", arr);
        char *s = json_dumps(root, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(root);
    } else {
        json_decref(arr);
    }
    return 0;
}
