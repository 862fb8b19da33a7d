/* cmd_synth.c — `etkit synth`: learn a generative model of rank graphs from Chakra workloads
 * (`fit`), sample new multi-rank workloads from it (`sample`), and measure how realistic the
 * samples are (`eval`). Library: include/etkit/synth.h; docs/synth.md. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "etkit/compute.h"
#include "etkit/net.h"
#include "etkit/run.h"
#include "etkit/sim.h"
#include "etkit/synth.h"

static void help(void)
{
    printf("usage: etkit synth fit WORKLOAD... [--list FILE] [--layerdag [--epochs N] [--average E]] -o MODEL\n"
           "       etkit synth sample MODEL -o PREFIX [--ranks N] [--inner G] [--seed S] [--max-nodes N | --nodes N] [--count]\n"
           "                          [--label step_time_ns=T --cluster NAME [--tries K] [--attr-tries J] [--refine R]]\n"
           "       etkit synth eval MODEL --real FILE [--samples K] [--seed S] [--cluster NAME [--train FILE]] [--json]\n\n"
           "Learned synthetic workloads (docs/synth.md). Rank graphs (one per rank class) become token\n"
           "graphs (node type x operator class x collective type x group role; FLOPs, tensor bytes, comm\n"
           "bytes and duration in per-token quantile bins) peeled into layers (layer 1 = the sources,\n"
           "layer l+1 = the nodes whose parents are all placed).\n\n"
           "  fit      learn the count model (conditional frequency tables with back-off) from workloads\n"
           "           (a prefix, or a rank file PREFIX.<r>.et); --list FILE: one workload per line;\n"
           "           --layerdag: train the LayerDAG model too (layer size, token diffusion, edge\n"
           "           diffusion: small dense networks, Adam, teacher forcing over all layers)\n"
           "  sample   write PREFIX.<rank>.et + PREFIX.json: every rank runs one sampled rank graph,\n"
           "           collectives in the same order on every group member, send/recv matched by tag,\n"
           "           valid and deadlock-free by construction; a graph isomorphic to a training graph\n"
           "           (Weisfeiler-Lehman hash) is rejected and re-sampled. A LayerDAG graph has the\n"
           "           layer count and attribute scale of one drawn training graph. Node names are\n"
           "           token names.\n"
           "  eval     MMD^2 of degree, layer-size, token, edge-token-pair, layer-skip and attribute-bin\n"
           "           histograms against the workloads listed in --real: its two halves against each\n"
           "           other, K count-model samples, K random DAGs of the same sizes (node and edge counts\n"
           "           of half a, edges uniform over forward pairs), K layer-copy DAGs (half a's layer sizes\n"
           "           and in-degrees kept: an oracle on structure), K LayerDAG samples, and K LayerDAG\n"
           "           samples of half a's node counts (--nodes, the random DAG's sizes); with --cluster,\n"
           "           the KS distance of the simulated step times too; with --cluster and --train,\n"
           "           the step-time regressor protocol and the training graphs' own scores against\n"
           "           half b (what a model reproducing the training split exactly would get)\n\n"
           "options:\n"
           "  -o, --out PATH       the model file (fit) or the output prefix (sample)\n"
           "  --list FILE          fit: more workloads, one per line ('#' comments)\n"
           "  --layerdag           fit: train the LayerDAG model (sampled from by default then)\n"
           "  --epochs N           fit: LayerDAG training passes over the corpus (default 8)\n"
           "  --average E          fit: the saved LayerDAG weights are the mean of the iterates (one per\n"
           "                       graph's Adam step) of the last E epochs, Polyak averaging, which makes\n"
           "                       fits from different seeds agree (default 4; 0: the last iterate)\n"
           "  --cluster NAME       fit --layerdag: label every training graph with its simulated step time\n"
           "                       on this cluster preset (the model is conditioned on it); sample --label:\n"
           "                       simulate the samples on it; eval: simulate every workload (KS of step time)\n"
           "  --label step_time_ns=T  sample: a workload whose simulated step time is near T: the label\n"
           "                       conditions a labeled model, the best of K samples is kept\n"
           "  --tries K            sample --label: sampled structures simulated (default 32)\n"
           "  --attr-tries J       sample --label: attribute draws per structure (default 8; labeled models\n"
           "                       draw the bins of the label's bucket); the search stops within 1 %%\n"
           "  --refine R           sample --label: then up to R single-node attribute redraws, each kept when\n"
           "                       the simulated step time comes closer to the target (default 1024; 0: none)\n"
           "  --count              sample: the count baseline even when the model has a LayerDAG part\n"
           "  --ranks N            sample: ranks (default: the most common world size of the corpus)\n"
           "  --inner G            sample: ranks per inner group (default: the corpus' most common size\n"
           "                       that divides N; 1: every collective on the world group)\n"
           "  --seed S             random seed (default 1): the output is byte-identical for a seed\n"
           "  --max-nodes N        sample: at most N nodes per rank graph (layers are cut)\n"
           "  --nodes N            sample (LayerDAG): exactly N nodes per rank graph (the drawn training\n"
           "                       graph's layer count scaled to N nodes; the last layer is cut)\n"
           "  --real FILE          eval: the held-out workloads, one per line\n"
           "  --samples K          eval: synthetic graphs per baseline (default: as many as real ones)\n"
           "  --train FILE         eval --cluster: LayerDAG's regressor protocol: a step-time regressor\n"
           "                       trained on these real workloads, and on each model's samples, tested\n"
           "                       on the --real ones (Pearson and Spearman)\n"

           "  --json               eval: one JSON document\n"
           "  -q, --quiet          fit/sample: no summary line\n"
           "  -h, --help           this text\n\n"
           "examples:\n"
           "  bash bench/synth-corpus.sh /tmp/corpus && etkit synth fit --list /tmp/corpus/train.txt -o synth.json\n"
           "  etkit synth sample synth.json -o out/syn --ranks 16 --seed 7 && etkit validate out/syn\n"
           "  etkit synth eval synth.json --real /tmp/corpus/test.txt --cluster dgx-h100\n");
}

/* a number for the --json document: %.6g, or null where it is undefined (a correlation of
 * constant step times, an MMD of no graphs): JSON has no nan or inf */
static const char *jnum(char buf[32], double v)
{
    if (!isfinite(v))
        return "null";
    snprintf(buf, 32, "%.6g", v);
    return buf;
}

enum { O_LIST = 1000, O_RANKS, O_INNER, O_SEED, O_MAXN, O_REAL, O_SAMPLES, O_CLUSTER, O_JSON, O_LD, O_EPOCHS, O_COUNT, O_LABEL, O_TRIES, O_TRAIN, O_ATRIES, O_REFINE, O_AVERAGE, O_NODES };
static const struct option longopts[] = {
    {"out", required_argument, 0, 'o'},         {"list", required_argument, 0, O_LIST},
    {"ranks", required_argument, 0, O_RANKS},   {"inner", required_argument, 0, O_INNER},
    {"seed", required_argument, 0, O_SEED},     {"max-nodes", required_argument, 0, O_MAXN},
    {"real", required_argument, 0, O_REAL},     {"samples", required_argument, 0, O_SAMPLES},
    {"cluster", required_argument, 0, O_CLUSTER}, {"json", no_argument, 0, O_JSON},
    {"layerdag", no_argument, 0, O_LD},         {"epochs", required_argument, 0, O_EPOCHS},
    {"train", required_argument, 0, O_TRAIN},   {"label", required_argument, 0, O_LABEL},   {"tries", required_argument, 0, O_TRIES},
    {"attr-tries", required_argument, 0, O_ATRIES}, {"refine", required_argument, 0, O_REFINE},
    {"average", required_argument, 0, O_AVERAGE}, {"nodes", required_argument, 0, O_NODES},
    {"count", no_argument, 0, O_COUNT},         {"quiet", no_argument, 0, 'q'},             {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

typedef struct opts {
    const char *out, *list, *real, *cluster, *train;
    uint64_t ranks, inner, seed, max_nodes, nodes, samples, epochs, tries, attr_tries, refine, average;
    double label_ns;
    bool ranks_set, inner_set, json, quiet, layerdag, count;
} opts;

/* the lines of a list file (workload specs), appended to *v */
static int read_list(const char *path, char ***v, size_t *n, etk_error *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc = etk_file_read_max(path, (size_t)64 << 20, "workload list", &data, &len, err);
    if (rc)
        return rc;
    for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ' || *line == '\t')
            line++;
        size_t l = strlen(line);
        while (l && (line[l - 1] == ' ' || line[l - 1] == '\r' || line[l - 1] == '\t'))
            line[--l] = 0;
        if (!l || *line == '#')
            continue;
        char **nv = realloc(*v, (*n + 1) * sizeof **v);
        if (!nv || !(nv[*n] = strdup(line))) {
            free(data);
            if (nv)
                *v = nv;
            return etk_err(err, ETK_ENOMEM, "out of memory");
        }
        *v = nv;
        (*n)++;
    }
    free(data);
    if (!*n)
        return etk_err(err, ETK_EINVAL, "%s: no workload listed (one prefix per line)", path);
    return 0;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* the rank graphs of the listed workloads; world and inner sizes per workload */
static int load_graphs(char **specs, size_t n, etk_synth_graph ***gs, size_t *ng, uint32_t *world, uint32_t *inner,
                       etk_error *err)
{
    etk_read_opts ro = {.quiet = true};
    for (size_t i = 0; i < n; i++) {
        etk_workload *w = NULL;
        int rc = etk_workload_open(specs[i], NULL, &ro, &w, err);
        if (!rc) {
            world[i] = w->n_ranks;
            rc = etk_synth_workload_graphs(w, gs, ng, &inner[i], err);
        }
        etk_workload_free(w);
        if (rc)
            return rc;
    }
    return 0;
}

static void free_graphs(etk_synth_graph **gs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        etk_synth_graph_free(gs[i]);
    free(gs);
}

static double step_ns(const etk_synth_model *m, const etk_synth_graph *g, uint32_t n_ranks, const etk_cluster *c);
static double step_ns_inner(const etk_synth_graph *g, uint32_t n_ranks, uint32_t inner, const etk_cluster *c);
static int cluster_for(const char *name, uint32_t n_ranks, etk_cluster *c, etk_error *err);

static int do_fit(const opts *o, char **specs, size_t n)
{
    etk_error err = {0};
    if (!o->out)
        return cli_usage_error("synth", "fit: give -o MODEL");
    if (!n)
        return cli_usage_error("synth", "fit: give at least one WORKLOAD (or --list FILE)");
    if (etk_output_check(o->out, &err))
        return cli_fail("synth", &err);
    etk_synth_graph **gs = NULL;
    size_t ng = 0;
    uint32_t *world = calloc(n, sizeof *world), *inner = calloc(n, sizeof *inner);
    etk_synth_model *m = NULL;
    int rc = !world || !inner ? etk_err(&err, ETK_ENOMEM, "out of memory") : 0;
    clock_t c0 = clock();
    if (!rc)
        rc = load_graphs(specs, n, &gs, &ng, world, inner, &err);
    clock_t c1 = clock();
    if (!rc)
        rc = etk_synth_fit(gs, ng, world, n, inner, n, &m, &err);
    clock_t c2 = clock();
    double *labels = NULL;
    if (!rc && o->layerdag && o->cluster) {
        /* labels: every training graph's step time on the model's default ranks of the cluster */
        etk_cluster c;
        uint32_t nr = etk_synth_model_default_ranks(m);
        rc = cluster_for(o->cluster, nr, &c, &err);
        if (!rc && !(labels = calloc(ng ? ng : 1, sizeof *labels)))
            rc = etk_err(&err, ETK_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < ng; i++)
            if (!((labels[i] = step_ns(m, gs[i], nr, &c)) > 0))
                rc = etk_err(&err, ETK_EINVAL, "training graph %zu: no step time on %u ranks of %s (simulation failed)", i,
                             nr, o->cluster);
    }
    if (!rc && o->layerdag)
        rc = etk_synth_train_layerdag_avg(m, gs, labels, ng, (uint32_t)o->epochs, (uint32_t)o->average, o->seed, &err);
    free(labels);
    clock_t c3 = clock();
    if (!rc)
        rc = etk_synth_model_save(m, o->out, &err);
    double loss[3];
    if (!rc && !o->quiet && etk_synth_layerdag_loss(m, loss))
        printf("LayerDAG model: %" PRIu64 " epochs, final mean losses: layer size %.4f, token %.4f, edge %.4f (nats)\n",
               o->epochs ? o->epochs : 8, loss[0], loss[1], loss[2]);
    if (!rc && !o->quiet) {
        uint64_t nodes = 0, edges = 0;
        uint32_t maxl = 0;
        for (size_t i = 0; i < ng; i++) {
            nodes += gs[i]->n;
            edges += gs[i]->n_edges;
            if (gs[i]->n_layers > maxl)
                maxl = gs[i]->n_layers;
        }
        printf("fitted the model to %zu rank graphs (%" PRIu64 " nodes, %" PRIu64
               " edges, up to %u layers) from %zu workloads: %s\n",
               ng, nodes, edges, maxl, n, o->out);
        printf("CPU time: reading %.3f s, count model %.3f s", (double)(c1 - c0) / CLOCKS_PER_SEC,
               (double)(c2 - c1) / CLOCKS_PER_SEC);
        if (o->layerdag)
            printf(", LayerDAG (labels and training) %.3f s", (double)(c3 - c2) / CLOCKS_PER_SEC);
        printf("\n");
    }
    free_graphs(gs, ng);
    free(world);
    free(inner);
    etk_synth_model_free(m);
    return rc ? cli_fail("synth", &err) : 0;
}

static int do_sample(const opts *o, const char *model)
{
    etk_error err = {0};
    if (!o->out)
        return cli_usage_error("synth", "sample: give -o PREFIX");
    if (o->ranks_set && (o->ranks < 1 || o->ranks > (1u << 20)))
        return cli_usage_error("synth", "--ranks wants 1 to 1048576, got %" PRIu64, o->ranks);
    if (o->inner_set && (o->inner < 1 || (o->ranks_set && o->ranks % o->inner)))
        return cli_usage_error("synth", "--inner %" PRIu64 " must be at least 1 and divide --ranks %" PRIu64, o->inner,
                               o->ranks);
    if (o->max_nodes > UINT32_MAX)
        return cli_usage_error("synth", "--max-nodes wants at most 4294967295");
    if (o->label_ns > 0 && !o->cluster)
        return cli_usage_error("synth", "--label wants --cluster NAME (the samples are simulated on it)");
    if (o->nodes && (o->count || o->max_nodes))
        return cli_usage_error("synth", "--nodes samples the LayerDAG model at a node count: not with %s",
                               o->count ? "--count" : "--max-nodes");
    if (etk_output_check(o->out, &err))
        return cli_fail("synth", &err);
    etk_synth_model *m = NULL;
    etk_synth_graph *g = NULL;
    etk_workload *w = NULL;
    uint32_t rej = 0;
    int rc = etk_synth_model_load(model, &m, &err);
    if (!rc && o->nodes && !etk_synth_model_has_layerdag(m))
        rc = etk_err(&err, ETK_EINVAL, "%s: --nodes wants a LayerDAG model (fit --layerdag); this one is the count model",
                     model);
    uint32_t ranks = 0;
    double best_ns = 0;
    uint64_t tries = o->label_ns > 0 ? (o->tries ? o->tries : 32) : 1;
    etk_cluster c;
    if (!rc) {
        ranks = o->ranks_set ? (uint32_t)o->ranks : etk_synth_model_default_ranks(m);
        if (o->label_ns > 0)
            rc = cluster_for(o->cluster, ranks, &c, &err);
    }
    /* with --label: the best of `tries` sampled structures (seeds S, S+1, ...) x `atries`
     * attribute draws each (the first the sample's own) by simulated step time; the search stops
     * once a draw is within 1 % of the target; the best is then drawn again (deterministic) */
    uint64_t atries = o->label_ns > 0 ? (o->attr_tries ? o->attr_tries : 8) : 1, best_k = 0, best_j = 0, done_n = 0;
    uint32_t inner = 0;
    if (!rc)
        inner = o->inner_set ? (uint32_t)o->inner : etk_synth_model_inner(m, ranks);
    bool found = tries == 1;
    for (uint64_t k = 0; !rc && tries > 1 && k < tries; k++) {
        etk_synth_sample_opts so = {.seed = o->seed + k, .max_nodes = (uint32_t)o->max_nodes, .count_only = o->count,
                                    .label_ns = o->label_ns, .nodes = (uint32_t)o->nodes};
        etk_synth_graph *gk = NULL;
        uint32_t rk = 0;
        rc = etk_synth_sample_graph(m, &so, &gk, &rk, &err);
        rej += rk;
        for (uint64_t j = 0; !rc && j < atries; j++) {
            if (j)
                etk_synth_redraw_attrs(m, gk, o->count ? 0 : o->label_ns, (o->seed + k) * 1000003u + j);
            double t = step_ns_inner(gk, ranks, inner, &c);
            done_n++;
            if (t > 0 && (!found || fabs(t - o->label_ns) < fabs(best_ns - o->label_ns)))
                found = true, best_k = k, best_j = j, best_ns = t;
            if (found && fabs(best_ns - o->label_ns) <= 0.01 * o->label_ns)
                k = tries; /* close enough: stop searching */
            if (k == tries)
                break;
        }
        etk_synth_graph_free(gk);
    }
    if (!rc && found) {
        etk_synth_sample_opts so = {.seed = o->seed + best_k, .max_nodes = (uint32_t)o->max_nodes, .count_only = o->count,
                                    .label_ns = o->label_ns, .nodes = (uint32_t)o->nodes};
        uint32_t rk = 0;
        rc = etk_synth_sample_graph(m, &so, &g, &rk, &err);
        if (tries == 1)
            rej += rk;
        if (!rc && best_j)
            etk_synth_redraw_attrs(m, g, o->count ? 0 : o->label_ns, (o->seed + best_k) * 1000003u + best_j);
    }
    /* refinement (--refine R): one node's attribute values drawn again from its bins at a time,
     * kept when the simulated step time comes closer to the target; stops within 1 % */
    uint64_t refined = 0, kept = 0;
    for (uint64_t i = 0; !rc && tries > 1 && g && i < o->refine && fabs(best_ns - o->label_ns) > 0.01 * o->label_ns; i++) {
        uint64_t sd = (o->seed + best_k) * 1000003u + atries + i;
        uint32_t v = (uint32_t)((sd * 0x9e3779b97f4a7c15ULL >> 11) % g->n);
        double old[ETK_SYNTH_N_ATTR];
        memcpy(old, g->val + (size_t)v * ETK_SYNTH_N_ATTR, sizeof old);
        etk_synth_redraw_node_attrs(m, g, v, o->count ? 0 : o->label_ns, sd);
        double t = step_ns_inner(g, ranks, inner, &c);
        refined++;
        if (t > 0 && fabs(t - o->label_ns) < fabs(best_ns - o->label_ns))
            best_ns = t, kept++;
        else
            memcpy(g->val + (size_t)v * ETK_SYNTH_N_ATTR, old, sizeof old);
    }
    if (!rc && !g)
        rc = etk_err(&err, ETK_EINVAL, "none of the %" PRIu64 " samples simulated on %s", tries, o->cluster);
    if (!rc)
        rc = etk_synth_assemble(g, ranks, inner, &w, &err);
    if (!rc)
        rc = etk_synth_write(w, o->out, &err);
    if (!rc && !o->quiet)
        printf("wrote %u rank files %s.<rank>.et + %s.json: %u nodes (%u layers, %u edges) per rank graph (%s model), "
               "seed %" PRIu64 ", %u sample(s) rejected (isomorphic to a training graph)\n",
               ranks, o->out, o->out, g->n, g->n_layers, g->n_edges,
               etk_synth_model_has_layerdag(m) && !o->count ? "LayerDAG" : "count", o->seed, rej);
    if (!rc && !o->quiet && o->label_ns > 0)
        printf("label step_time_ns=%.0f: best of %" PRIu64 " simulated draws (structures x attribute draws, up to %" PRIu64
               " x %" PRIu64 "; %s), %" PRIu64 " node redraws (%" PRIu64 " kept), simulates to %.0f ns on %u ranks of %s (%+.2f%%)\n",
               o->label_ns, done_n, tries, atries, etk_synth_model_labeled(m) && !o->count ? "model conditioned on the label" : "unconditioned model",
               refined, kept, best_ns, ranks, o->cluster, 100.0 * (best_ns - o->label_ns) / o->label_ns);
    etk_workload_free(w);
    etk_synth_graph_free(g);
    etk_synth_model_free(m);
    return rc ? cli_fail("synth", &err) : 0;
}

static int synth_eval(const opts *o, const char *model);

int cmd_synth(int argc, char **argv)
{
    opts o = {.seed = 1, .refine = 1024, .average = ETK_SYNTH_LD_AVERAGE};
    char **specs = NULL;
    size_t n_specs = 0;
    int c;
    optind = 1;
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        help();
        return 0;
    }
    if (argc < 2)
        return cli_usage_error("synth", "missing subcommand: fit, sample or eval");
    const char *sub = argv[1];
    if (strcmp(sub, "fit") && strcmp(sub, "sample") && strcmp(sub, "eval"))
        return cli_usage_error("synth", "unknown subcommand '%s' (fit, sample or eval)", sub);
    argc--, argv++;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out = optarg; break;
        case 'q': o.quiet = true; break;
        case 'h': help(); return 0;
        case O_LIST: o.list = optarg; break;
        case O_REAL: o.real = optarg; break;
        case O_TRAIN: o.train = optarg; break;
        case O_CLUSTER: o.cluster = optarg; break;
        case O_JSON: o.json = true; break;
        case O_LD: o.layerdag = true; break;
        case O_COUNT: o.count = true; break;
        case O_LABEL: {
            char *end = NULL;
            const char *v = !strncmp(optarg, "step_time_ns=", 13) ? optarg + 13 : NULL;
            o.label_ns = v ? strtod(v, &end) : 0;
            if (!v || end == v || *end || !(o.label_ns >= 1 && o.label_ns <= 1e18))
                return cli_usage_error("synth", "--label wants step_time_ns=T with T from 1 to 1e18 (ns), got '%s'",
                                       optarg);
            break;
        }
        case O_TRIES:
            if (cli_parse_u64_in("synth", "--tries", optarg, 1, 10000, &o.tries))
                return 2;
            break;
        case O_ATRIES:
            if (cli_parse_u64_in("synth", "--attr-tries", optarg, 1, 10000, &o.attr_tries))
                return 2;
            break;
        case O_REFINE:
            if (cli_parse_u64_in("synth", "--refine", optarg, 0, 100000, &o.refine))
                return 2;
            break;
        case O_AVERAGE:
            if (cli_parse_u64_in("synth", "--average", optarg, 0, 1000, &o.average))
                return 2;
            break;
        case O_EPOCHS:
            if (cli_parse_u64_in("synth", "--epochs", optarg, 1, 1000, &o.epochs))
                return 2;
            break;
        case O_RANKS:
            if (cli_parse_u64("synth", "--ranks", optarg, &o.ranks))
                return 2;
            o.ranks_set = true;
            break;
        case O_INNER:
            if (cli_parse_u64("synth", "--inner", optarg, &o.inner))
                return 2;
            o.inner_set = true;
            break;
        case O_SEED:
            if (cli_parse_u64("synth", "--seed", optarg, &o.seed))
                return 2;
            break;
        case O_MAXN:
            if (cli_parse_u64("synth", "--max-nodes", optarg, &o.max_nodes))
                return 2;
            break;
        case O_NODES:
            if (cli_parse_u64_in("synth", "--nodes", optarg, 1, 10000000, &o.nodes))
                return 2;
            break;
        case O_SAMPLES:
            if (cli_parse_u64("synth", "--samples", optarg, &o.samples))
                return 2;
            break;
        default: return cli_getopt_error("synth", c, argv);
        }
    }
    if (!strcmp(sub, "fit")) {
        etk_error err = {0};
        for (int i = optind; i < argc; i++) {
            char **nv = realloc(specs, (n_specs + 1) * sizeof *specs);
            if (!nv || !(nv[n_specs] = strdup(argv[i]))) {
                free_list(nv ? nv : specs, n_specs);
                return cli_fail("synth", &(etk_error){ETK_ENOMEM, "out of memory"});
            }
            specs = nv;
            n_specs++;
        }
        if (o.list && read_list(o.list, &specs, &n_specs, &err)) {
            free_list(specs, n_specs);
            return cli_fail("synth", &err);
        }
        int rc = do_fit(&o, specs, n_specs);
        free_list(specs, n_specs);
        return rc;
    }
    const char *model;
    if (cli_one_input("synth", argc, argv, &model))
        return 2;
    if (!strcmp(sub, "sample"))
        return do_sample(&o, model);
    return synth_eval(&o, model);
}

/* the cluster preset for n_ranks ranks: one node of n_ranks GPUs up to 8, else full 8-GPU nodes */
static int cluster_for(const char *name, uint32_t n_ranks, etk_cluster *c, etk_error *err)
{
    int rc = n_ranks <= 8 ? etk_cluster_preset_gpus(name, 1, n_ranks, c, err)
                          : etk_cluster_preset(name, (n_ranks + 7) / 8, c, err);
    if (!rc && n_ranks > 8 && n_ranks % 8)
        rc = etk_err(err, ETK_EINVAL, "%u ranks do not fill nodes of 8 GPUs", n_ranks);
    return rc;
}

/* the step time of graph g run by n_ranks ranks on the cluster (ns) as `etkit sim` gives it, 0 on
 * failure */
static double step_ns(const etk_synth_model *m, const etk_synth_graph *g, uint32_t n_ranks, const etk_cluster *c)
{
    return step_ns_inner(g, n_ranks, etk_synth_model_inner(m, n_ranks), c);
}

/* the same with the inner-group size given */
static double step_ns_inner(const etk_synth_graph *g, uint32_t n_ranks, uint32_t inner, const etk_cluster *c)
{
    etk_workload *w = NULL;
    etk_sim *s = NULL;
    etk_error err = {0};
    etk_sim_opts so = {0};
    /* the defaults of `etkit sim` for a preset: the compute model (unless the cluster asks for
     * the roofline), one communication stream per group */
    etk_compute_params cp;
    if (!c->astra_compat && c->compute_efficiency == 1.0) {
        etk_compute_defaults(&c->gpu, &cp);
        so.compute = &cp;
    }
    etk_run_opts_defaults(c, &so);
    double t = 0;
    if (!etk_synth_assemble(g, n_ranks, inner, &w, &err) &&
        !etk_sim_workload(w, c, &so, &s, &err))
        t = (double)etk_sim_result_get(s)->step_ns;
    etk_sim_free(s);
    etk_workload_free(w);
    return t;
}

static int synth_eval(const opts *o, const char *model)
{
    etk_error err = {0};
    if (!o->real)
        return cli_usage_error("synth", "eval: give --real FILE (the held-out workloads, one per line)");
    etk_synth_model *m = NULL;
    char **specs = NULL;
    size_t n_specs = 0, n_real = 0;
    etk_synth_graph **real = NULL, **syn = NULL, **rnd = NULL, **cpy = NULL, **lds = NULL, **ldz = NULL;
    uint32_t *world = NULL, *inner = NULL;
    size_t k = 0;
    double *t_a = NULL, *t_b = NULL, *t_s = NULL, *t_r = NULL, *t_c = NULL, *t_l = NULL, *t_z = NULL;
    bool has_ld = false;
    int rc = etk_synth_model_load(model, &m, &err);
    if (!rc)
        rc = read_list(o->real, &specs, &n_specs, &err);
    if (!rc) {
        world = calloc(n_specs, sizeof *world);
        inner = calloc(n_specs, sizeof *inner);
        rc = !world || !inner ? etk_err(&err, ETK_ENOMEM, "out of memory") : 0;
    }
    if (!rc)
        rc = load_graphs(specs, n_specs, &real, &n_real, world, inner, &err);
    if (!rc && n_real < 2)
        rc = etk_err(&err, ETK_EINVAL, "%s: %zu rank graph(s): eval needs at least 2 (two halves)", o->real, n_real);
    if (rc)
        goto done;
    /* halves: even-indexed graphs (a) and odd ones (b, the reference of every row) */
    size_t na = (n_real + 1) / 2, nb = n_real / 2;
    etk_synth_graph **a = malloc(na * sizeof *a), **b = malloc(nb * sizeof *b);
    k = o->samples ? (size_t)o->samples : nb;
    syn = calloc(k, sizeof *syn);
    rnd = calloc(k, sizeof *rnd);
    cpy = calloc(k, sizeof *cpy);
    lds = calloc(k, sizeof *lds);
    ldz = calloc(k, sizeof *ldz);
    has_ld = etk_synth_model_has_layerdag(m);
    if (!a || !b || !syn || !rnd || !cpy || !lds || !ldz) {
        free(a), free(b);
        rc = etk_err(&err, ETK_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_real; i++)
        (i % 2 ? b : a)[i / 2] = real[i];
    uint32_t rej_all = 0;
    for (size_t i = 0; i < k && !rc; i++) {
        etk_synth_sample_opts so = {.seed = o->seed + i, .count_only = true};
        uint32_t rej = 0;
        rc = etk_synth_sample_graph(m, &so, &syn[i], &rej, &err);
        rej_all += rej;
        so.count_only = false;
        if (!rc && has_ld) {
            rc = etk_synth_sample_graph(m, &so, &lds[i], &rej, &err);
            rej_all += rej;
        }
        /* LayerDAG at the random DAG's sizes: half a's node counts */
        so.nodes = a[i % na]->n;
        if (!rc && has_ld) {
            rc = etk_synth_sample_graph(m, &so, &ldz[i], &rej, &err);
            rej_all += rej;
        }
        if (!rc)
            rc = etk_synth_random_er(m, a[i % na], o->seed + i, &rnd[i], &err);
        if (!rc)
            rc = etk_synth_random_like(m, a[i % na], o->seed + i, &cpy[i], &err);
    }
    if (rc) {
        free(a), free(b);
        goto done;
    }
    static const char *cols[6] = {"real_vs_real", "count", "random", "layer_copy", "layerdag", "layerdag_same_size"};
    int nco = has_ld ? 6 : 4;
    double mmd[ETK_SYNTH_N_DESC][6];
    for (int d = 0; d < ETK_SYNTH_N_DESC; d++) {
        mmd[d][0] = etk_synth_mmd2(m, a, na, b, nb, d);
        mmd[d][1] = etk_synth_mmd2(m, syn, k, b, nb, d);
        mmd[d][2] = etk_synth_mmd2(m, rnd, k, b, nb, d);
        mmd[d][3] = etk_synth_mmd2(m, cpy, k, b, nb, d);
        mmd[d][4] = has_ld ? etk_synth_mmd2(m, lds, k, b, nb, d) : NAN;
        mmd[d][5] = has_ld ? etk_synth_mmd2(m, ldz, k, b, nb, d) : NAN;
    }
    double ks[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    uint32_t n_ranks = etk_synth_model_default_ranks(m);
    if (o->cluster) {
        etk_cluster c;
        rc = cluster_for(o->cluster, n_ranks, &c, &err);
        t_a = calloc(na, sizeof *t_a), t_b = calloc(nb, sizeof *t_b), t_s = calloc(k, sizeof *t_s),
        t_r = calloc(k, sizeof *t_r), t_c = calloc(k, sizeof *t_c), t_l = calloc(k, sizeof *t_l);
        t_z = calloc(k, sizeof *t_z);
        if (!rc && (!t_a || !t_b || !t_s || !t_r || !t_c || !t_l || !t_z))
            rc = etk_err(&err, ETK_ENOMEM, "out of memory");
        if (rc) {
            free(a), free(b);
            goto done;
        }
        for (size_t i = 0; i < na; i++)
            t_a[i] = step_ns(m, a[i], n_ranks, &c);
        for (size_t i = 0; i < nb; i++)
            t_b[i] = step_ns(m, b[i], n_ranks, &c);
        for (size_t i = 0; i < k; i++) {
            t_s[i] = step_ns(m, syn[i], n_ranks, &c);
            t_r[i] = step_ns(m, rnd[i], n_ranks, &c);
            t_c[i] = step_ns(m, cpy[i], n_ranks, &c);
            if (has_ld) {
                t_l[i] = step_ns(m, lds[i], n_ranks, &c);
                t_z[i] = step_ns(m, ldz[i], n_ranks, &c);
            }
        }
        ks[0] = etk_synth_ks(t_a, na, t_b, nb);
        ks[1] = etk_synth_ks(t_s, k, t_b, nb);
        ks[2] = etk_synth_ks(t_r, k, t_b, nb);
        ks[3] = etk_synth_ks(t_c, k, t_b, nb);
        ks[4] = has_ld ? etk_synth_ks(t_l, k, t_b, nb) : NAN;
        ks[5] = has_ld ? etk_synth_ks(t_z, k, t_b, nb) : NAN;
    }
    /* LayerDAG's protocol: the regressor trained on real graphs (--train) and on each model's
     * samples, tested on all the real graphs of --real */
    double corr[6][2];
    bool has_reg = o->train && o->cluster;
    /* the training graphs themselves against half b: what a model that reproduced the training
     * split exactly would score (the family shift between the splits, when they differ) */
    double tr_mmd[ETK_SYNTH_N_DESC], tr_ks = NAN;
    for (int d = 0; d < ETK_SYNTH_N_DESC; d++)
        tr_mmd[d] = NAN;
    for (int j = 0; j < 6; j++)
        corr[j][0] = corr[j][1] = NAN;
    if (has_reg) {
        char **tspecs = NULL;
        size_t n_t = 0, n_tg = 0;
        etk_synth_graph **tg = NULL;
        uint32_t *tw = NULL, *ti = NULL;
        double *ty = NULL, *yr = calloc(n_real, sizeof *yr), *pr = calloc(n_real, sizeof *pr);
        etk_cluster c;
        rc = !yr || !pr ? etk_err(&err, ETK_ENOMEM, "out of memory") : read_list(o->train, &tspecs, &n_t, &err);
        if (!rc) {
            tw = calloc(n_t ? n_t : 1, sizeof *tw), ti = calloc(n_t ? n_t : 1, sizeof *ti);
            rc = !tw || !ti ? etk_err(&err, ETK_ENOMEM, "out of memory") : 0;
        }
        if (!rc)
            rc = load_graphs(tspecs, n_t, &tg, &n_tg, tw, ti, &err);
        if (!rc)
            rc = cluster_for(o->cluster, n_ranks, &c, &err);
        if (!rc && !(ty = calloc(n_tg ? n_tg : 1, sizeof *ty)))
            rc = etk_err(&err, ETK_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n_tg; i++)
            ty[i] = step_ns(m, tg[i], n_ranks, &c);
        if (!rc) {
            for (int d = 0; d < ETK_SYNTH_N_DESC; d++)
                tr_mmd[d] = etk_synth_mmd2(m, tg, n_tg, b, nb, d);
            tr_ks = etk_synth_ks(ty, n_tg, t_b, nb);
        }
        for (size_t i = 0; !rc && i < n_real; i++)
            yr[i] = i % 2 ? t_b[i / 2] : t_a[i / 2];
        etk_synth_graph **sets[6] = {tg, syn, rnd, cpy, lds, ldz};
        double *ys[6] = {ty, t_s, t_r, t_c, t_l, t_z};
        size_t ns[6] = {n_tg, k, k, k, k, k};
        for (int j = 0; !rc && j < nco; j++) {
            etk_synth_regressor *reg = NULL;
            /* graphs whose simulation failed (step time 0) are left out */
            etk_synth_graph **ok = malloc((ns[j] ? ns[j] : 1) * sizeof *ok);
            double *oy = malloc((ns[j] ? ns[j] : 1) * sizeof *oy);
            size_t nok = 0;
            for (size_t i = 0; ok && oy && i < ns[j]; i++)
                if (ys[j][i] > 0)
                    ok[nok] = sets[j][i], oy[nok++] = ys[j][i];
            rc = !ok || !oy ? etk_err(&err, ETK_ENOMEM, "out of memory") : etk_synth_regress_fit(ok, oy, nok, o->seed, &reg, &err);
            for (size_t i = 0; !rc && i < n_real; i++)
                pr[i] = etk_synth_regress_predict(reg, real[i]);
            if (!rc) {
                corr[j][0] = etk_synth_pearson(pr, yr, n_real);
                corr[j][1] = etk_synth_spearman(pr, yr, n_real);
            }
            etk_synth_regress_free(reg);
            free(ok), free(oy);
        }
        free_graphs(tg, n_tg);
        free_list(tspecs, n_t);
        free(tw), free(ti), free(ty), free(yr), free(pr);
        if (rc) {
            free(a), free(b);
            goto done;
        }
    }
    if (o->json) {
        char nbuf[32];
        printf("{\"real_graphs\": %zu, \"samples\": %zu, \"rejected\": %u, \"mmd2\": {", n_real, k, rej_all);
        for (int d = 0; d < ETK_SYNTH_N_DESC; d++) {
            printf("%s\"%s\": {", d ? ", " : "", etk_synth_desc_name(d));
            for (int j = 0; j < nco; j++)
                printf("%s\"%s\": %s", j ? ", " : "", cols[j], jnum(nbuf, mmd[d][j]));
            printf("}");
        }
        printf("}");
        if (o->cluster) {
            char *cq = cli_json_quote(o->cluster); /* a file name: quotes, non-UTF-8 bytes */
            printf(", \"step_time_ks\": {\"cluster\": %s, \"ranks\": %u", cq ? cq : "null", n_ranks);
            free(cq);
            for (int j = 0; j < nco; j++)
                printf(", \"%s\": %s", cols[j], jnum(nbuf, ks[j]));
            printf("}");
        }
        if (has_reg) {
            printf(", \"regressor\": {");
            for (int j = 0; j < nco; j++) {
                printf("%s\"%s\": {\"pearson\": %s, ", j ? ", " : "", j ? cols[j] : "real_train", jnum(nbuf, corr[j][0]));
                printf("\"spearman\": %s}", jnum(nbuf, corr[j][1]));
            }
            printf("}, \"train_reference\": {\"mmd2\": {");
            for (int d = 0; d < ETK_SYNTH_N_DESC; d++)
                printf("%s\"%s\": %s", d ? ", " : "", etk_synth_desc_name(d), jnum(nbuf, tr_mmd[d]));
            printf("}, \"step_time_ks\": %s}", jnum(nbuf, tr_ks));
        }
        printf("}\n");
    } else {
        printf("real rank graphs %zu (halves of %zu and %zu), %zu samples per model (%u rejected: isomorphic "
               "to a training graph), %zu random DAGs, %zu layer-copy DAGs\n",
               n_real, na, nb, k, rej_all, k, k);
        printf("%-18s %14s %14s %14s %14s%s\n", "MMD^2 vs half b", "real half a", "count model", "random DAG",
               "layer copy", has_ld ? "       LayerDAG   LD same size" : "");
        for (int d = 0; d < ETK_SYNTH_N_DESC; d++) {
            printf("%-18s", etk_synth_desc_name(d));
            for (int j = 0; j < nco; j++)
                printf(" %14.6f", mmd[d][j]);
            printf("\n");
        }
        if (o->cluster) {
            printf("%-18s", "step time (KS)");
            for (int j = 0; j < nco; j++)
                printf(" %14.4f", ks[j]);
            printf("   (%u ranks on %s)\n", n_ranks, o->cluster);
        }
        if (has_reg) {
            printf("step-time regressor trained on (real: --train), tested on the real graphs of --real:\n");
            printf("%-18s %14s %14s %14s %14s%s\n", "", "real (train)", "count model", "random DAG", "layer copy",
                   has_ld ? "       LayerDAG   LD same size" : "");
            for (int q = 0; q < 2; q++) {
                printf("%-18s", q ? "Spearman" : "Pearson");
                for (int j = 0; j < nco; j++)
                    printf(" %14.4f", corr[j][q]);
                printf("\n");
            }
            printf("training graphs (--train) vs half b, the score of a model that reproduced them exactly:\n");
            for (int d = 0; d < ETK_SYNTH_N_DESC; d++)
                printf("%-18s %14.6f\n", etk_synth_desc_name(d), tr_mmd[d]);
            printf("%-18s %14.4f\n", "step time (KS)", tr_ks);
        }
    }
    free(a), free(b);
done:
    free(t_a), free(t_b), free(t_s), free(t_r), free(t_c), free(t_l), free(t_z);
    for (size_t i = 0; i < k; i++) {
        if (lds)
            etk_synth_graph_free(lds[i]);
        if (ldz)
            etk_synth_graph_free(ldz[i]);
        if (syn)
            etk_synth_graph_free(syn[i]);
        if (rnd)
            etk_synth_graph_free(rnd[i]);
        if (cpy)
            etk_synth_graph_free(cpy[i]);
    }
    free(syn);
    free(rnd);
    free(cpy);
    free(lds);
    free(ldz);
    free_graphs(real, n_real);
    free_list(specs, n_specs);
    free(world);
    free(inner);
    etk_synth_model_free(m);
    return rc ? cli_fail("synth", &err) : 0;
}
