/* report.c — turns the finished simulation (engine.c) into an etk_sim_result: the step time,
 * where each rank's time went (folded ranks get their class representative's figures), model
 * FLOPs, TFLOP/s and MFU, and per collective type and group the count, bytes, time and bus
 * bandwidth; then prints it as text, JSON or CSV for `etkit sim` / `etkit run`. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "etkit/json.h"
#include "sim/internal.h"

/* nccl-tests bus bandwidth: busbw = algbw * factor, where algbw = comm_size / time.
 * all-reduce 2(n-1)/n; reduce-scatter and all-to-all (n-1)/n of the full buffer; all-gather's
 * comm_size is the per-rank input, so S_total = n * comm_size and busbw = (n-1) * comm_size / t;
 * broadcast and reduce 1. */
double sim_busbw_factor(int t, uint32_t n)
{
    if (n == 0)
        return 0;
    double f = (double)(n - 1) / n;
    switch (t) {
    case ETK_COLL_ALL_REDUCE:
        return 2 * f;
    case ETK_COLL_ALL_GATHER:
        return (double)(n - 1);
    case ETK_COLL_REDUCE_SCATTER:
    case ETK_COLL_REDUCE_SCATTER_BLOCK:
    case ETK_COLL_ALL_TO_ALL:
    case ETK_COLL_GATHER:
    case ETK_COLL_SCATTER:
        return f;
    case ETK_COLL_BARRIER:
        return 0;
    default: /* broadcast, reduce, point-to-point */
        return 1;
    }
}

static int cmp_row(const void *a, const void *b)
{
    const etk_sim_coll_stats *x = a, *y = b;
#define C(f)                                                                                       \
    if (x->f != y->f)                                                                              \
        return x->f < y->f ? -1 : 1;
    C(type)
    C(group_size)
    C(bytes)
    C(count)
    C(time_ns)
#undef C
    return 0;
}

int sim_build_result(etk_sim *s, etk_error *err)
{
    etk_sim_result *res = &s->res;
    free(res->ranks);
    free(res->coll);
    free(res->phase_end_ns);
    memset(res, 0, sizeof *res);
    res->n_ranks = s->n_ranks;
    res->n_classes = s->n_classes;
    res->folded = s->folded;
    res->cluster = s->cl.name;
    res->cluster_spec = &s->cl;
    res->warnings = s->notes;
    res->ranks = calloc(s->n_ranks, sizeof(etk_sim_rank_stats));
    if (!res->ranks)
        return etk_err(err, ETK_ENOMEM, "simulator: out of memory");
    uint64_t step = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++)
        if (s->r[r].simulated && s->r[r].st.finish_ns > step)
            step = s->r[r].st.finish_ns;
    res->step_ns = step;
    double flops = 0;
    uint64_t p2p_count = 0, p2p_bytes = 0, p2p_time = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        srank *R = &s->r[r];
        if (!R->simulated)
            continue;
        res->n_simulated++;
        if (R->last_t < step) { /* the tail after this rank finished is idle */
            R->st.idle_ns += step - R->last_t;
            R->last_t = step;
        }
        R->st.n_nodes = R->n_done;
        res->n_events += R->n_done;
        res->missing_deps += R->missing;
        res->ctrl_deps_dropped += R->ctrl_dropped;
        uint32_t cs = s->csize[s->cls[r]];
        flops += (double)R->st.flops * cs;
        p2p_count += R->p2p_count * cs;
        p2p_bytes += R->p2p_bytes * cs;
        p2p_time += R->p2p_time * cs;
    }
    for (uint32_t r = 0; r < s->n_ranks; r++)
        res->ranks[r] = s->r[s->rep[s->cls[r]]].st;
    sim_mem_result(s);
    int prc = sim_phase_result(s, err);
    if (prc)
        return prc;
    res->model_flops_given = s->o.model_flops > 0;
    res->flops_per_step = res->model_flops_given ? s->o.model_flops : flops;
    double secs = step * 1e-9;
    res->tflops_per_gpu = secs > 0 ? res->flops_per_step / s->n_ranks / secs / 1e12 : 0;
    /* MFU against the peak of the precision the GEMMs ran at (FP8 plans: the FP8 peak), and
     * against the BF16 peak for comparison across precisions */
    res->peak_precision = s->any_fp8 ? ETK_PREC_FP8 : s->cl.precision < ETK_PREC_COUNT ? (int)s->cl.precision : 0;
    res->peak_tflops = s->cl.gpu.peak_flops[res->peak_precision] / 1e12;
    res->mfu = res->peak_tflops > 0 ? res->tflops_per_gpu / res->peak_tflops : 0;
    double bf16 = s->cl.gpu.peak_flops[ETK_PREC_BF16] / 1e12;
    res->mfu_bf16 = bf16 > 0 ? res->tflops_per_gpu / bf16 : 0;
    res->tokens_per_step = s->o.tokens_per_step;
    res->tokens_per_s = secs > 0 ? s->o.tokens_per_step / secs : 0;

    /* collective rows: one per (group, type) with weight = groups it stands for */
    size_t cap = 1;
    for (uint32_t i = 0; i < s->n_g; i++)
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++)
            cap += s->g[i].stat[t].count ? 1 : 0;
    etk_sim_coll_stats *rows = calloc(cap, sizeof *rows);
    if (!rows)
        return etk_err(err, ETK_ENOMEM, "simulator: out of memory");
    size_t n = 0;
    for (uint32_t i = 0; i < s->n_g; i++) {
        const sgroup *g = &s->g[i];
        for (int t = 0; t < ETK_COLL_TYPE_COUNT; t++) {
            const scollstat *st = &g->stat[t];
            if (!st->count)
                continue;
            uint32_t w = 1;
            if (s->folded && g->n_sim) {
                /* the group stands for (class size / its members in that class) groups */
                uint32_t c0 = s->cls[g->simrank[0]], inc = 0;
                for (uint32_t k = 0; k < g->n; k++)
                    inc += s->cls[g->ranks[k]] == c0;
                w = inc && s->csize[c0] / inc ? s->csize[c0] / inc : 1;
            }
            rows[n++] = (etk_sim_coll_stats){.type = t, .group = g->name[0] ? g->name : "all",
                                             .group_size = g->n, .n_groups = w,
                                             .count = st->count, .bytes = st->bytes,
                                             .time_ns = st->time};
        }
    }
    if (p2p_count)
        rows[n++] = (etk_sim_coll_stats){.type = -1, .group = "p2p", .group_size = 2,
                                         .n_groups = 1, .count = p2p_count, .bytes = p2p_bytes,
                                         .time_ns = p2p_time};
    qsort(rows, n, sizeof *rows, cmp_row);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && cmp_row(&rows[m - 1], &rows[i]) == 0) {
            rows[m - 1].n_groups += rows[i].n_groups;
            continue;
        }
        rows[m++] = rows[i];
    }
    for (size_t i = 0; i < m; i++) {
        etk_sim_coll_stats *c = &rows[i];
        c->algbw_GBps = c->time_ns ? (double)c->bytes / (double)c->time_ns : 0;
        c->busbw_GBps = c->algbw_GBps * sim_busbw_factor(c->type, c->group_size);
    }
    res->coll = rows;
    res->n_coll = m;
    return 0;
}

static const char *row_type(const etk_sim_coll_stats *c)
{
    return c->type < 0 ? "SEND_RECV" : etk_coll_type_name(c->type);
}

/* 1234567 -> "1,234,567" */
static const char *commas(uint64_t v, char *buf)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    int o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0; }


/* "BF16", "FP8", ... for the MFU label */
static const char *prec_label(int p)
{
    static const char *const up[] = {"BF16", "FP16", "FP8", "FP32", "TF32"};
    return p >= 0 && p < ETK_PREC_COUNT && p < 5 ? up[p] : "";
}

void etk_sim_print_text(const etk_sim_result *r, FILE *f)
{
    char b1[32], b2[32];
    if (r->workload)
        fprintf(f, "workload       %s\n", r->workload);
    fprintf(f, "cluster        %s", r->cluster && r->cluster[0] ? r->cluster : "(unnamed)");
    if (r->cluster_spec) { /* GPUs and the network's dimensions (sizes multiply to the GPUs) */
        const etk_cluster *cl = r->cluster_spec;
        fprintf(f, ": %u x %s, network", cl->n_npus, cl->gpu.name);
        for (uint32_t i = 0; i < cl->n_dims; i++)
            fprintf(f, "%s%u", i ? " x " : " ", cl->dims[i].size);
    }
    fprintf(f, "\n");
    fprintf(f, "ranks          %u (%u simulated, %s)\n", r->n_ranks, r->n_simulated,
            r->folded ? "folded into classes" : "not folded");
    fprintf(f, "step time      %s ns (%.3f ms)\n", commas(r->step_ns, b1), r->step_ns / 1e6);
    fprintf(f, "node events    %s\n", commas(r->n_events, b1));
    if (r->missing_deps)
        fprintf(f, "missing deps   %s (treated as satisfied)\n", commas(r->missing_deps, b1));
    if (r->ctrl_deps_dropped)
        fprintf(f, "dropped deps   %s control deps closing cycles\n",
                commas(r->ctrl_deps_dropped, b1));
    fprintf(f, "FLOPs/step     %.4g (%s)\n", r->flops_per_step,
            r->model_flops_given ? "model FLOPs from the generator" : "sum of num_ops");
    fprintf(f, "per GPU        %.2f TFLOP/s", r->tflops_per_gpu);
    if (r->peak_tflops > 0)
        fprintf(f, ", MFU %.1f%% of %.0f TFLOP/s %s peak", 100 * r->mfu, r->peak_tflops,
                prec_label(r->peak_precision));
    fprintf(f, "\n");
    if (r->tokens_per_s > 0)
        fprintf(f, "tokens/s       %.0f (%.0f tokens per step)\n", r->tokens_per_s,
                r->tokens_per_step);
    if (r->inference) { /* phases.c */
        fprintf(f, "TTFT           %s ns (%.3f ms): time to first token, end of the prefill\n",
                commas(r->ttft_ns, b1), r->ttft_ns / 1e6);
        if (r->decode_steps) {
            double seqs = r->tokens_per_step > 0 ? r->tokens_per_step / (r->decode_steps + 1.0) : 0;
            fprintf(f, "TPOT           %.3f ms mean per decode step (min %.3f, max %.3f) over %u steps",
                    r->tpot_ns / 1e6, r->tpot_min_ns / 1e6, r->tpot_max_ns / 1e6, r->decode_steps);
            if (seqs > 0 && r->tpot_ns > 0)
                fprintf(f, "; decode %.0f tokens/s", seqs / (r->tpot_ns * 1e-9));
            fprintf(f, "\n");
        }
    }
    if (r->mem_tracked) { /* memory over time (memory.c) */
        const etk_sim_rank_stats *m = &r->ranks[r->mem_peak_rank];
        fprintf(f, "memory peak    %.2f GiB (%s bytes) on rank %u at %.3f ms, op '%s'",
                m->mem_peak_bytes / 1073741824.0, commas(m->mem_peak_bytes, b1),
                r->mem_peak_rank, m->mem_peak_ns / 1e6, r->mem_peak_op ? r->mem_peak_op : "");
        if (r->mem_capacity_bytes)
            fprintf(f, "; HBM %.2f GiB: %s", r->mem_capacity_bytes / 1073741824.0,
                    r->mem_oom_ranks ? "OUT OF MEMORY" : "fits");
        if (r->mem_oom_ranks)
            fprintf(f, " on %u rank(s)", r->mem_oom_ranks);
        fprintf(f, "\n");
    }

    /* per rank: print distinct rows only (ranks with identical figures are merged) */
    fprintf(f, "\nper rank (ns; compute + exposed comm + cpu + idle = step time)\n");
    fprintf(f, "%-14s %15s %15s %15s %15s %15s %8s\n", "ranks", "compute_ns", "exposed_comm_ns",
            "overlap_comm_ns", "cpu_ns", "idle_ns", "busy%");
    uint32_t rep[16], cnt[16], nd = 0;
    bool more = false;
    for (uint32_t i = 0; i < r->n_ranks; i++) {
        uint32_t j = 0;
        while (j < nd && memcmp(&r->ranks[rep[j]], &r->ranks[i], sizeof r->ranks[i]) != 0)
            j++;
        if (j < nd)
            cnt[j]++;
        else if (nd < 16) {
            rep[nd] = i;
            cnt[nd++] = 1;
        } else
            more = true;
    }
    for (uint32_t j = 0; j < nd; j++) {
        const etk_sim_rank_stats *a = &r->ranks[rep[j]];
        char lbl[32];
        if (cnt[j] > 1)
            snprintf(lbl, sizeof lbl, "%u (+%u)", rep[j], cnt[j] - 1);
        else
            snprintf(lbl, sizeof lbl, "%u", rep[j]);
        fprintf(f, "%-14s %15" PRIu64 " %15" PRIu64 " %15" PRIu64 " %15" PRIu64 " %15" PRIu64
                   " %7.1f%%\n",
                lbl, a->compute_ns, a->exposed_comm_ns, a->overlapped_comm_ns, a->cpu_ns,
                a->idle_ns, pct(a->compute_ns, r->step_ns));
    }
    if (more)
        fprintf(f, "... (more distinct ranks; see --json or --csv)\n");
    if (r->n_coll) {
        fprintf(f, "\ncommunication (per group; busbw per nccl-tests)\n");
        fprintf(f, "%-16s %-12s %6s %7s %8s %16s %15s %10s %10s\n", "type", "group", "size",
                "groups", "count", "bytes", "time_ns", "algbw_GB/s", "busbw_GB/s");
        for (size_t i = 0; i < r->n_coll; i++) {
            const etk_sim_coll_stats *c = &r->coll[i];
            fprintf(f, "%-16s %-12.12s %6u %7u %8" PRIu64 " %16s %15s %10.1f %10.1f\n",
                    row_type(c), c->group, c->group_size, c->n_groups, c->count,
                    commas(c->bytes, b1), commas(c->time_ns, b2), c->algbw_GBps, c->busbw_GBps);
        }
    }
}

/* ---------- the plan and the cluster as structured fields (JSON) and columns (CSV) ---------- */

/* a plan value: integers and booleans typed, the rest strings */
static json_t *plan_value(const char *v)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (v[0] && !*end)
        return json_integer(x);
    if (!strcmp(v, "true") || !strcmp(v, "false"))
        return json_boolean(v[0] == 't');
    return json_string(v);
}

static json_t *plan_json(const etk_sim_result *r)
{
    if (!r->n_plan)
        return json_null();
    json_t *p = json_object();
    for (uint32_t i = 0; i < r->n_plan; i++)
        json_object_set_new(p, r->plan_keys[i], plan_value(r->plan_values[i]));
    return p;
}

static json_t *cluster_json(const etk_sim_result *r)
{
    json_t *c = json_object();
    json_object_set_new(c, "name", json_string(r->cluster ? r->cluster : ""));
    const etk_cluster *cl = r->cluster_spec;
    if (!cl)
        return c;
    json_object_set_new(c, "npus", json_integer(cl->n_npus));
    json_t *g = json_object();
    json_object_set_new(g, "name", json_string(cl->gpu.name));
    json_object_set_new(g, "hbm_bytes", json_integer((json_int_t)cl->gpu.hbm_bytes));
    json_object_set_new(g, "hbm_GBps", json_real(cl->gpu.hbm_bw_Bps / 1e9));
    json_t *pk = json_object();
    for (int p = 0; p < ETK_PREC_COUNT; p++)
        if (cl->gpu.peak_flops[p] > 0)
            json_object_set_new(pk, etk_precision_name(p), json_real(cl->gpu.peak_flops[p] / 1e12));
    json_object_set_new(g, "peak_tflops", pk);
    json_object_set_new(c, "gpu", g);
    json_object_set_new(c, "precision", json_string(etk_precision_name(cl->precision)));
    json_object_set_new(c, "net_model", json_string(cl->net_model == ETK_NET_FLOW ? "flow" : "analytical"));
    json_object_set_new(c, "astra_compat", json_boolean(cl->astra_compat));
    json_object_set_new(c, "compute_efficiency", json_real(cl->compute_efficiency));
    json_t *dims = json_array();
    for (uint32_t i = 0; i < cl->n_dims; i++) {
        const etk_net_dim *d = &cl->dims[i];
        json_t *x = json_object();
        json_object_set_new(x, "size", json_integer(d->size));
        json_object_set_new(x, "topology", json_string(etk_topo_name(d->topo)));
        json_object_set_new(x, "bandwidth_GBps", json_real(d->bw_Bps / 1e9));
        json_object_set_new(x, "latency_ns", json_real(d->latency_ns));
        json_array_append_new(dims, x);
    }
    json_object_set_new(c, "network", dims);
    return c;
}

/* the plan columns of the CSV run row, in this order (empty where the run has no such key) */
static const char *const csv_plan_cols[] = {"model", "mode", "tp", "cp", "pp", "vpp", "dp", "ep", "sp",
                                            "zero", "recompute", "seq", "precision", "global_batch",
                                            "micro_batch", "schedule", "attention", NULL};

static const char *plan_get(const etk_sim_result *r, const char *key)
{
    for (uint32_t i = 0; i < r->n_plan; i++)
        if (!strcmp(r->plan_keys[i], key))
            return r->plan_values[i];
    return "";
}

/* a CSV field: quoted (quotes doubled) when it holds a comma, quote or newline */
static void csv_field(FILE *f, const char *v)
{
    if (!strpbrk(v, ",\"\n")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

/* one flat row per run: plan columns, then the run's results (docs/sim.md "--csv") */
static void csv_run_row(const etk_sim_result *r, FILE *f)
{
    fputs("section", f);
    for (int i = 0; csv_plan_cols[i]; i++)
        fprintf(f, ",%s", csv_plan_cols[i]);
    fputs(",cluster,gpu,ranks,step_ns,step_ms,tflops_per_gpu,peak_tflops,mfu,tokens_per_s,mem_peak_bytes,"
          "mem_capacity_bytes,oom,oom_ranks,ttft_ns,tpot_ns,etkit_version,command_line\n", f);
    fputs("run", f);
    for (int i = 0; csv_plan_cols[i]; i++) {
        fputc(',', f);
        csv_field(f, plan_get(r, csv_plan_cols[i]));
    }
    fputc(',', f);
    csv_field(f, r->cluster ? r->cluster : "");
    fputc(',', f);
    csv_field(f, r->cluster_spec ? r->cluster_spec->gpu.name : "");
    fprintf(f, ",%u,%" PRIu64 ",%.3f,%.3f,%.3f,%.4f,%.1f,", r->n_ranks, r->step_ns, r->step_ns / 1e6,
            r->tflops_per_gpu, r->peak_tflops, r->mfu, r->tokens_per_s);
    if (r->mem_tracked)
        fprintf(f, "%" PRIu64 ",%" PRIu64 ",%s,%u", r->ranks[r->mem_peak_rank].mem_peak_bytes,
                r->mem_capacity_bytes, r->mem_oom_ranks ? "true" : "false", r->mem_oom_ranks);
    else
        fputs(",,,", f);
    if (r->inference)
        fprintf(f, ",%" PRIu64 ",%.0f,", r->ttft_ns, r->tpot_ns);
    else
        fputs(",,,", f);
    csv_field(f, r->etkit_version ? r->etkit_version : "");
    fputc(',', f);
    csv_field(f, r->command_line ? r->command_line : "");
    fputs("\n\n", f);
}

int etk_sim_print_json(const etk_sim_result *r, FILE *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "etkit_version", r->etkit_version ? etk_json_text(r->etkit_version) : json_null());
    json_object_set_new(o, "command_line", r->command_line ? etk_json_text(r->command_line) : json_null());
    json_object_set_new(o, "workload", r->workload ? etk_json_text(r->workload) : json_null());
    json_object_set_new(o, "plan", plan_json(r));
    json_object_set_new(o, "cluster", cluster_json(r));
    json_object_set_new(o, "n_ranks", json_integer(r->n_ranks));
    json_object_set_new(o, "n_simulated", json_integer(r->n_simulated));
    json_object_set_new(o, "n_classes", json_integer(r->n_classes));
    json_object_set_new(o, "folded", json_boolean(r->folded));
    json_object_set_new(o, "step_ns", json_integer((json_int_t)r->step_ns));
    json_object_set_new(o, "node_events", json_integer((json_int_t)r->n_events));
    json_object_set_new(o, "missing_deps", json_integer((json_int_t)r->missing_deps));
    json_object_set_new(o, "ctrl_deps_dropped", json_integer((json_int_t)r->ctrl_deps_dropped));
    json_object_set_new(o, "flops_per_step", json_real(r->flops_per_step));
    json_object_set_new(o, "flops_source",
                        json_string(r->model_flops_given ? "model" : "sum_num_ops"));
    json_object_set_new(o, "tflops_per_gpu", json_real(r->tflops_per_gpu));
    json_object_set_new(o, "peak_tflops", json_real(r->peak_tflops));
    json_object_set_new(o, "mfu", json_real(r->mfu));
    json_object_set_new(o, "peak_precision", json_string(etk_precision_name(r->peak_precision)));
    json_object_set_new(o, "mfu_bf16", json_real(r->mfu_bf16));
    json_object_set_new(o, "tokens_per_step", json_real(r->tokens_per_step));
    json_object_set_new(o, "tokens_per_s", json_real(r->tokens_per_s));
    if (r->mem_tracked) {
        const etk_sim_rank_stats *m = &r->ranks[r->mem_peak_rank];
        json_t *x = json_object();
        json_object_set_new(x, "peak_bytes", json_integer((json_int_t)m->mem_peak_bytes));
        json_object_set_new(x, "peak_rank", json_integer(r->mem_peak_rank));
        json_object_set_new(x, "peak_ns", json_integer((json_int_t)m->mem_peak_ns));
        json_object_set_new(x, "peak_node", json_integer((json_int_t)m->mem_peak_node));
        json_object_set_new(x, "peak_op", etk_json_text(r->mem_peak_op));
        json_object_set_new(x, "capacity_bytes", json_integer((json_int_t)r->mem_capacity_bytes));
        json_object_set_new(x, "oom_ranks", json_integer(r->mem_oom_ranks));
        json_object_set_new(o, "memory", x);
    }
    if (r->inference) {
        json_t *x = json_object(), *ends = json_array();
        double seqs = r->tokens_per_step > 0 ? r->tokens_per_step / (r->decode_steps + 1.0) : 0;
        json_object_set_new(x, "ttft_ns", json_integer((json_int_t)r->ttft_ns));
        json_object_set_new(x, "decode_steps", json_integer(r->decode_steps));
        json_object_set_new(x, "tpot_ns", json_real(r->tpot_ns));
        json_object_set_new(x, "tpot_min_ns", json_integer((json_int_t)r->tpot_min_ns));
        json_object_set_new(x, "tpot_max_ns", json_integer((json_int_t)r->tpot_max_ns));
        json_object_set_new(x, "decode_tokens_per_s",
                            json_real(seqs > 0 && r->tpot_ns > 0 ? seqs / (r->tpot_ns * 1e-9) : 0));
        for (uint32_t i = 0; i <= r->decode_steps; i++)
            json_array_append_new(ends, json_integer((json_int_t)r->phase_end_ns[i]));
        json_object_set_new(x, "phase_end_ns", ends);
        json_object_set_new(o, "inference", x);
    }
    json_t *ranks = json_array();
    for (uint32_t i = 0; i < r->n_ranks; i++) {
        const etk_sim_rank_stats *a = &r->ranks[i];
        json_t *x = json_object();
        json_object_set_new(x, "rank", json_integer(i));
        json_object_set_new(x, "finish_ns", json_integer((json_int_t)a->finish_ns));
        json_object_set_new(x, "compute_ns", json_integer((json_int_t)a->compute_ns));
        json_object_set_new(x, "exposed_comm_ns", json_integer((json_int_t)a->exposed_comm_ns));
        json_object_set_new(x, "overlapped_comm_ns",
                            json_integer((json_int_t)a->overlapped_comm_ns));
        json_object_set_new(x, "cpu_ns", json_integer((json_int_t)a->cpu_ns));
        json_object_set_new(x, "idle_ns", json_integer((json_int_t)a->idle_ns));
        json_object_set_new(x, "flops", json_integer((json_int_t)a->flops));
        json_object_set_new(x, "comm_bytes", json_integer((json_int_t)a->comm_bytes));
        json_object_set_new(x, "nodes", json_integer((json_int_t)a->n_nodes));
        if (r->mem_tracked)
            json_object_set_new(x, "mem_peak_bytes", json_integer((json_int_t)a->mem_peak_bytes));
        json_array_append_new(ranks, x);
    }
    json_object_set_new(o, "ranks", ranks);
    json_t *cs = json_array();
    for (size_t i = 0; i < r->n_coll; i++) {
        const etk_sim_coll_stats *c = &r->coll[i];
        json_t *x = json_object();
        json_object_set_new(x, "type", json_string(row_type(c)));
        json_object_set_new(x, "group", etk_json_text(c->group));
        json_object_set_new(x, "group_size", json_integer(c->group_size));
        json_object_set_new(x, "n_groups", json_integer(c->n_groups));
        json_object_set_new(x, "count", json_integer((json_int_t)c->count));
        json_object_set_new(x, "bytes", json_integer((json_int_t)c->bytes));
        json_object_set_new(x, "time_ns", json_integer((json_int_t)c->time_ns));
        json_object_set_new(x, "algbw_GBps", json_real(c->algbw_GBps));
        json_object_set_new(x, "busbw_GBps", json_real(c->busbw_GBps));
        json_array_append_new(cs, x);
    }
    json_object_set_new(o, "communication", cs);
    int rc = json_dumpf(o, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(o);
    return rc == 0 ? 0 : ETK_EIO;
}

void etk_sim_print_csv(const etk_sim_result *r, FILE *f)
{
    csv_run_row(r, f);
    fprintf(f, "section,rank,finish_ns,compute_ns,exposed_comm_ns,overlapped_comm_ns,cpu_ns,"
               "idle_ns,flops,comm_bytes,nodes\n");
    fprintf(f, "step,,%" PRIu64 ",,,,,,%.0f,,%" PRIu64 "\n", r->step_ns, r->flops_per_step,
            r->n_events);
    for (uint32_t i = 0; r->inference && i <= r->decode_steps; i++) { /* phase end times: finish_ns column */
        if (i)
            fprintf(f, "decode%u,,%" PRIu64 ",,,,,,,,\n", i, r->phase_end_ns[i]);
        else
            fprintf(f, "prefill,,%" PRIu64 ",,,,,,,,\n", r->phase_end_ns[0]);
    }
    for (uint32_t i = 0; i < r->n_ranks; i++) {
        const etk_sim_rank_stats *a = &r->ranks[i];
        fprintf(f, "rank,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                i, a->finish_ns, a->compute_ns, a->exposed_comm_ns, a->overlapped_comm_ns,
                a->cpu_ns, a->idle_ns, a->flops, a->comm_bytes, a->n_nodes);
    }
    fprintf(f, "\nsection,type,group,group_size,n_groups,count,bytes,time_ns,algbw_GBps,"
               "busbw_GBps\n");
    for (size_t i = 0; i < r->n_coll; i++) {
        const etk_sim_coll_stats *c = &r->coll[i];
        fprintf(f, "comm,%s,%s,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f\n",
                row_type(c), c->group, c->group_size, c->n_groups, c->count, c->bytes,
                c->time_ns, c->algbw_GBps, c->busbw_GBps);
    }
}
