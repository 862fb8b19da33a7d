/* fastwrite.c — writing every rank file of a generated workload fast. Ranks of one class
 * (pipeline stage) carry the same nodes except the communicator group of collectives and the
 * peer of sends/receives, so each class is emitted once, its rank-independent nodes are encoded
 * once into a blob, and each rank file is the blob's segments interleaved with the few
 * re-encoded rank-dependent nodes. Frames come from the trace layer's canonical encoder
 * (etk_node_frame_encode, the bytes etk_writer writes; tests/test_gen_trace.c compares). Files go to "<path>.tmp.<pid>" and are renamed when
 * complete; the file system is synced once at the end instead of once per file (4,096 fsyncs
 * cost ~25 s on a virtual disk). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/fastwrite.h"

/* ---------- class templates ---------- */
int etk_gen_class_build(etk_gen_class *k, const etk_trace *t, const char (*pg)[16], const uint32_t *peers,
                        etk_error *err)
{
    memset(k, 0, sizeof *k);
    k->t = t;
    size_t cap = 1 << 16;
    k->blob = malloc(cap);
    k->seg = malloc(sizeof(etk_gen_seg) * (t->n_nodes + 1));
    if (!k->blob || !k->seg)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    size_t start = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const etk_node *n = &t->nodes[i];
        bool dep = n->type == ETK_NODE_COLL || n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV;
        if (dep) {
            etk_gen_seg *s = &k->seg[k->nseg++];
            s->off = start;
            s->len = k->len - start;
            s->node = i;
            start = k->len;
            /* what to rebind */
            s->role = 0;
            const char *name = etk_node_str(n, "pg_name");
            int64_t peer;
            if (name) {
                for (int g = 0; g < ETK_GEN_N_GROUP_KINDS && !s->role; g++)
                    if (!strcmp(name, pg[g]))
                        s->role = 1 + g;
            }
            else if (etk_node_i64(n, n->type == ETK_NODE_SEND ? "comm_dst" : "comm_src", &peer)) {
                /* the CP ring's messages carry tags from ETK_GEN_CP_TAG_BASE on, the pipeline's below */
                int64_t tag = 0;
                etk_node_i64(n, "comm_tag", &tag);
                int p0 = tag >= ETK_GEN_CP_TAG_BASE ? PEER_CPPREV : PEER_PREV;
                for (int p = p0 + 1; p >= p0 && !s->role; p--) /* next first */
                    if ((uint32_t)peer == peers[p])
                        s->role = SEG_PEER + p;
            }
            if (!s->role)
                return etk_err(err, ETK_EINVAL, "node %" PRIu64 " %s: cannot tell which group or peer to bind",
                               n->id, n->name);
            continue;
        }
        size_t b = etk_node_frame_size(n);
        if (k->len + b > cap) {
            while (k->len + b > cap)
                cap *= 2;
            uint8_t *nb = realloc(k->blob, cap);
            if (!nb)
                return etk_err(err, ETK_ENOMEM, "out of memory");
            k->blob = nb;
        }
        k->len += etk_node_frame_encode(n, k->blob + k->len);
    }
    etk_gen_seg *s = &k->seg[k->nseg++];
    s->off = start;
    s->len = k->len - start;
    s->node = (size_t)-1;
    s->role = 0;
    return 0;
}

void etk_gen_class_free(etk_gen_class *k)
{
    free(k->blob);
    free(k->seg);
    memset(k, 0, sizeof *k);
}

int etk_gen_class_write(const etk_gen_class *k, const char *path, const char *version, const char (*pg)[16],
                        const uint32_t *peers, uint64_t *bytes, etk_error *err)
{
    /* the whole file is assembled in memory and written with one call */
    size_t cap = etk_meta_frame_size(version) + k->len;
    for (size_t i = 0; i < k->nseg; i++)
        if (k->seg[i].node != (size_t)-1)
            cap += etk_node_frame_size(&k->t->nodes[k->seg[i].node]) + 32;
    uint8_t *buf = malloc(cap);
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!buf || !tmp) {
        free(buf);
        free(tmp);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    size_t len = etk_meta_frame_encode(version, buf);
    for (size_t i = 0; i < k->nseg; i++) {
        const etk_gen_seg *s = &k->seg[i];
        memcpy(buf + len, k->blob + s->off, s->len);
        len += s->len;
        if (s->node == (size_t)-1)
            continue;
        etk_node n = k->t->nodes[s->node];
        etk_attr a[8];
        uint32_t na = n.n_attr < 8 ? n.n_attr : 8;
        memcpy(a, n.attr, sizeof(etk_attr) * na);
        for (uint32_t j = 0; j < na; j++) {
            if (!strcmp(a[j].name, "pg_name"))
                a[j].v.s = pg[s->role - 1];
            else if (!strcmp(a[j].name, "comm_dst") || !strcmp(a[j].name, "comm_src"))
                a[j].v.i = peers[s->role - SEG_PEER];
        }
        n.attr = a;
        n.n_attr = na;
        len += etk_node_frame_encode(&n, buf + len);
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = 0;
    if (fd < 0) {
        rc = etk_err(err, ETK_EIO, "%s: cannot create: %s", path, strerror(errno));
    } else {
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(fd, buf + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        if (close(fd) != 0 || off != len || rename(tmp, path) != 0) {
            rc = etk_err(err, ETK_EIO, "%s: write failed: %s", path, strerror(errno));
            unlink(tmp);
        }
    }
    free(tmp);
    free(buf);
    if (!rc)
        *bytes += len;
    return rc;
}

int etk_gen_sync_dir(const char *path, etk_error *err)
{
    /* one syncfs for the whole output instead of an fsync per file */
    char *dir = strdup(path);
    if (!dir)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    int fd = open(slash ? (dir[0] ? dir : "/") : ".", O_RDONLY | O_DIRECTORY);
    int rc = 0;
    if (fd < 0 || syncfs(fd) != 0)
        rc = etk_err(err, ETK_EIO, "%s: cannot sync the output directory: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}
