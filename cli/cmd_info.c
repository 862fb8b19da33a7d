/* cmd_info.c — `etkit info`: per-rank statistics of workloads or trace files
 * (etk_info_trace), as readable text with units or as JSON. */
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
    printf("usage: etkit info [options] PREFIX|FILE...\n"
           "\n"
           "Per rank: node counts by type, compute FLOPs (num_ops) and bytes (tensor_size),\n"
           "collectives per type and per group (pg_name) with their comm_size bytes, send/recv\n"
           "bytes per peer, and dependency statistics (roots, longest path). Each argument is a\n"
           "workload: a prefix (files PREFIX.<rank>.et), one rank file, or a single .et file.\n"
           "\n"
           "options:\n"
           "  -r, --rank R    only rank R\n"
           "  -s, --summary   only the totals over the ranks (large workloads)\n"
           "      --json      JSON on stdout\n"
           "  -h, --help      this text\n"
           "\n"
           "example:\n"
           "  etkit info ../shared/data/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce\n"
           "  etkit info --json -r 0 ../shared/data/stage/gpt_small_dp2_tp2_pp2/workload\n");
}

/* Totals over the ranks. A rank's sums fit 64 bits (etk_info_trace refuses one that does not);
 * over 2^24 ranks they may not: 405B on 16,384 ranks is ~4e19 FLOPs, past 2^64 (a uint64 sum
 * wrapped silently; issue #18). The byte and FLOP totals are 128-bit, printed exactly. */
typedef unsigned __int128 u128;
typedef struct totals {
    uint64_t nodes, colls, sends;
    u128 flops, comp_bytes, coll_bytes, send_bytes;
} totals;

static void add_totals(totals *s, const etk_trace_info *in)
{
    s->nodes += in->n_nodes;
    s->flops += in->comp_flops;
    s->comp_bytes += in->comp_bytes;
    s->colls += in->by_type[ETK_NODE_COLL];
    for (size_t i = 0; i < in->n_colls; i++)
        s->coll_bytes += in->colls[i].bytes;
    for (size_t i = 0; i < in->n_peers; i++) {
        s->sends += in->peers[i].send_count;
        s->send_bytes += in->peers[i].send_bytes;
    }
}

/* v in decimal into buf (at least 40 bytes) */
static const char *u128_str(u128 v, char *buf)
{
    char t[40];
    int k = 0;
    do {
        t[k++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (int i = 0; i < k; i++)
        buf[i] = t[k - 1 - i];
    buf[k] = 0;
    return buf;
}

/* a JSON integer up to 2^63 - 1, past it a real (etk_json_count) */
static json_t *u128_json(u128 v)
{
    return v <= (u128)UINT64_MAX ? etk_json_count((uint64_t)v) : json_real((double)v);
}

int cmd_info(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"rank", required_argument, NULL, 'r'},
        {"summary", no_argument, NULL, 's'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, summary = false;
    int64_t only = -1;
    uint64_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "r:sh", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (cli_parse_u64("info", "--rank", optarg, &v))
                return 2;
            if (v > UINT32_MAX)
                return cli_usage_error("info", "--rank %s is out of range", optarg);
            only = (int64_t)v;
            break;
        case 'J': json = true; break;
        case 's': summary = true; break;
        case 'h': help(); return 0;
        default:
            return cli_usage_error("info", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("info", "no trace given");
    etk_read_opts ro = {.quiet = true};
    json_t *all = json ? json_array() : NULL;
    for (int a = optind; a < argc; a++) {
        etk_error err = {0};
        etk_workload *w;
        if (etk_workload_open(argv[a], NULL, &ro, &w, &err)) {
            json_decref(all);
            return cli_fail("info", &err);
        }
        if (only >= (int64_t)w->n_ranks) {
            fprintf(stderr, "etkit info: error: %s: --rank %" PRId64 " but the workload has %" PRIu32
                            " ranks (0..%" PRIu32 ")\n",
                    argv[a], only, w->n_ranks, w->n_ranks - 1);
            etk_workload_free(w);
            json_decref(all);
            return 2;
        }
        json_t *ranks = json ? json_array() : NULL;
        totals s = {0};
        for (uint32_t r = 0; r < w->n_ranks; r++) {
            if ((only >= 0 && r != only) || !w->ranks[r])
                continue;
            etk_trace_info in;
            if (etk_info_trace(w->ranks[r], &in, &err)) {
                json_decref(ranks);
                json_decref(all);
                etk_workload_free(w);
                return cli_fail("info", &err);
            }
            add_totals(&s, &in);
            if (!summary && json)
                json_array_append_new(ranks, etk_info_to_json(&in, r));
            else if (!summary)
                etk_info_print(stdout, &in, r);
            etk_info_free(&in);
        }
        if (json) {
            json_t *o = json_object(), *t = json_object();
            json_object_set_new(o, "spec", etk_json_text(argv[a]));
            json_object_set_new(o, "n_ranks", json_integer(w->n_ranks));
            json_object_set_new(t, "nodes", json_integer((json_int_t)s.nodes));
            json_object_set_new(t, "num_ops_flops", u128_json(s.flops));
            json_object_set_new(t, "tensor_size_bytes", u128_json(s.comp_bytes));
            json_object_set_new(t, "collectives", json_integer((json_int_t)s.colls));
            json_object_set_new(t, "collective_bytes", u128_json(s.coll_bytes));
            json_object_set_new(t, "sends", json_integer((json_int_t)s.sends));
            json_object_set_new(t, "send_bytes", u128_json(s.send_bytes));
            json_object_set_new(o, "total", t);
            json_object_set_new(o, "ranks", ranks);
            json_array_append_new(all, o);
        } else if (summary || (only < 0 && w->n_ranks > 1)) {
            char fb[40], cb[40], sb[40];
            printf("%s%stotal over %" PRIu32 " ranks: %" PRIu64 " nodes, %s FLOPs, %" PRIu64
                   " collectives of %s bytes, %" PRIu64 " sends of %s bytes\n",
                   summary ? argv[a] : "", summary ? ": " : "", only >= 0 ? 1 : w->n_ranks,
                   s.nodes, u128_str(s.flops, fb), s.colls, u128_str(s.coll_bytes, cb), s.sends,
                   u128_str(s.send_bytes, sb));
        }
        etk_workload_free(w);
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "workloads", all);
        char *txt = json_dumps(root, JSON_INDENT(2));
        json_decref(root);
        if (!txt) {
            fprintf(stderr, "etkit info: error: out of memory\n");
            return 2;
        }
        printf("%s\n", txt);
        free(txt);
    }
    return fflush(stdout) ? 2 : 0;
}
