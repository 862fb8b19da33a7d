/* timeline.c — writes the finished simulation (engine.c) as a Chrome trace / Perfetto JSON
 * (`etkit sim --timeline FILE.json`): pid = rank, tid = stream (CPU streams first, then GPU
 * compute, GPU communication, receives, stream-less nodes), one complete ("X") event per executed
 * node with ts/dur in microseconds; collectives are named with their type and bytes. Folded runs
 * show the class representatives only. Written atomically (etk_file_begin/commit). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/internal.h"

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static uint32_t tid_of(const etk_sim *s, const snode *n)
{
    switch (n->kind) {
    case K_CPU:
        return n->stream;
    case K_COMP:
        return s->nstreams[0] + n->stream;
    case K_COMM:
        return s->nstreams[0] + s->nstreams[1] + n->stream;
    case K_RECV:
        return s->nstreams[0] + s->nstreams[1] + s->nstreams[2];
    default:
        return s->nstreams[0] + s->nstreams[1] + s->nstreams[2] + 1;
    }
}

uint64_t etk_sim_timeline_events(const etk_sim *s)
{
    uint64_t n = 0;
    for (uint32_t r = 0; r < s->n_ranks; r++)
        if (s->r[r].simulated)
            n += s->r[r].n_done;
    if (s->res.inference) /* the phase track */
        n += s->res.decode_steps + 1;
    return n;
}

int etk_sim_write_timeline(const etk_sim *s, const char *path, etk_error *err)
{
    if (!s->o.timeline)
        return etk_err(err, ETK_EINVAL, "%s: the simulator was not asked to keep a timeline",
                       path);
    char *tmp = NULL;
    FILE *f;
    struct stat st;
    bool special = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (special) {
        /* a device or pipe (/dev/stdout, /dev/null): write in place, never rename over it */
        f = fopen(path, "w");
        if (!f)
            return etk_err(err, ETK_EIO, "%s: cannot open for writing", path);
    } else {
        f = etk_file_begin(path, &tmp, err);
        if (!f)
            return err ? err->code : ETK_EIO;
    }
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    bool first = true;
    const char *kname[K_COUNT] = {"CPU", "GPU compute", "GPU comm", "recv", "other", "other"}; /* copies: "other" */
    for (uint32_t r = 0; r < s->n_ranks; r++) {
        const srank *R = &s->r[r];
        if (!R->simulated || !R->n)
            continue;
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":"
                   "\"rank %u%s\"}}",
                first ? "" : ",\n", r, r, s->folded ? " (class representative)" : "");
        first = false;
        uint32_t ntid = s->nstreams[0] + s->nstreams[1] + s->nstreams[2] + 2;
        for (uint32_t t = 0; t < ntid; t++) {
            int k;
            uint32_t idx;
            if (t < s->nstreams[0]) {
                k = K_CPU;
                idx = t;
            } else if (t < s->nstreams[0] + s->nstreams[1]) {
                k = K_COMP;
                idx = t - s->nstreams[0];
            } else if (t < s->nstreams[0] + s->nstreams[1] + s->nstreams[2]) {
                k = K_COMM;
                idx = t - s->nstreams[0] - s->nstreams[1];
            } else {
                k = t == ntid - 2 ? K_RECV : K_FREE;
                idx = 0;
            }
            fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
                       "\"args\":{\"name\":\"%s %u\"}}",
                    r, t, kname[k], idx);
        }
        for (uint32_t i = 0; i < R->n; i++) {
            const snode *n = &R->nodes[i];
            if (n->state != ST_DONE)
                continue;
            char name[160];
            if (n->type == ETK_NODE_COLL)
                snprintf(name, sizeof name, "%s %" PRIu64 " B", etk_coll_type_name(n->ctype),
                         n->bytes);
            else if (n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV)
                snprintf(name, sizeof name, "%s %" PRIu64 " B",
                         n->type == ETK_NODE_SEND ? "SEND" : "RECV", n->bytes);
            else
                snprintf(name, sizeof name, "%s",
                         n->src && n->src->name && n->src->name[0] ? n->src->name
                                                                   : etk_node_type_name(n->type));
            fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":",
                    r, tid_of(s, n), n->start_ns / 1e3, (n->end_ns - n->start_ns) / 1e3);
            put_str(f, name);
            fprintf(f, ",\"args\":{\"id\":%" PRIu64, n->id);
            if (n->type == ETK_NODE_COLL || n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV) {
                fprintf(f, ",\"bytes\":%" PRIu64 ",\"wait_ns\":%" PRIu64, n->bytes,
                        n->xfer_ns - n->start_ns);
                if (n->type == ETK_NODE_COLL) {
                    fprintf(f, ",\"group\":");
                    put_str(f, s->g[n->aux].name[0] ? s->g[n->aux].name : "all");
                }
            } else if (n->flops) {
                fprintf(f, ",\"flops\":%" PRIu64, n->flops);
            }
            fprintf(f, "}}");
        }
        if (sim_mem_timeline(s, r, f) != 0) { /* memory counter track (memory.c) */
            if (special)
                fclose(f);
            else
                etk_file_abort(f, tmp);
            return etk_err(err, ETK_ENOMEM, "%s: out of memory writing the memory track", path);
        }
    }
    if (s->res.inference) {
        /* inference traces: one track with the prefill and each decode step (phases.c), from
         * the end of the previous phase to the end of the last node of this one */
        const etk_sim_result *res = &s->res;
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":"
                   "\"inference phases (TTFT, decode steps)\"}}",
                first ? "" : ",\n", s->n_ranks);
        for (uint32_t i = 0; i <= res->decode_steps; i++) {
            uint64_t t0 = i ? res->phase_end_ns[i - 1] : 0, t1 = res->phase_end_ns[i];
            fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%u,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"", s->n_ranks,
                    t0 / 1e3, (t1 > t0 ? t1 - t0 : 0) / 1e3);
            if (i)
                fprintf(f, "decode%u\"}", i);
            else
                fprintf(f, "prefill (TTFT)\"}");
        }
    }
    fprintf(f, "\n]}\n");
    if (special)
        return fclose(f) == 0 ? 0 : etk_err(err, ETK_EIO, "%s: write failed", path);
    return etk_file_commit(f, tmp, path, err);
}
