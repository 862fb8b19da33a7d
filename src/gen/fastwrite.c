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
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/fastwrite.h"

/* ---------- class templates ---------- */
int etk_gen_class_begin(etk_gen_class *k, const char (*pg)[16], const uint32_t *peers, etk_error *err)
{
    memset(k, 0, sizeof *k);
    memcpy(k->pg, pg, sizeof k->pg);
    memcpy(k->peers, peers, sizeof k->peers);
    k->cap = 1 << 16;
    k->cap_seg = 64;
    k->blob = malloc(k->cap);
    k->seg = malloc(sizeof(etk_gen_seg) * k->cap_seg);
    k->t = etk_trace_new(NULL);
    if (!k->blob || !k->seg || !k->t)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    return 0;
}

static etk_gen_seg *new_seg(etk_gen_class *k)
{
    if (k->nseg == k->cap_seg) {
        etk_gen_seg *ns = realloc(k->seg, sizeof(etk_gen_seg) * k->cap_seg * 2);
        if (!ns)
            return NULL;
        k->seg = ns;
        k->cap_seg *= 2;
    }
    etk_gen_seg *s = &k->seg[k->nseg++];
    s->off = k->start;
    s->len = k->len - k->start;
    k->start = k->len;
    return s;
}

int etk_gen_class_put(void *kv, const etk_node *n, etk_error *err)
{
    etk_gen_class *k = kv;
    bool dep = n->type == ETK_NODE_COLL || n->type == ETK_NODE_SEND || n->type == ETK_NODE_RECV;
    if (dep) {
        int role = 0;
        const char *name = etk_node_str(n, "pg_name");
        int64_t peer;
        if (name) {
            for (int g = 0; g < ETK_GEN_N_GROUP_KINDS && !role; g++)
                if (!strcmp(name, k->pg[g]))
                    role = 1 + g;
        }
        else if (etk_node_i64(n, n->type == ETK_NODE_SEND ? "comm_dst" : "comm_src", &peer)) {
            /* the CP ring's messages carry tags from ETK_GEN_CP_TAG_BASE on, the pipeline's below */
            int64_t tag = 0;
            etk_node_i64(n, "comm_tag", &tag);
            int p0 = tag >= ETK_GEN_CP_TAG_BASE ? PEER_CPPREV : PEER_PREV;
            for (int p = p0 + 1; p >= p0 && !role; p--) /* next first */
                if ((uint32_t)peer == k->peers[p])
                    role = SEG_PEER + p;
        }
        if (!role)
            return etk_err(err, ETK_EINVAL, "node %" PRIu64 " %s: cannot tell which group or peer to bind",
                           n->id, n->name);
        if (!etk_trace_add(k->t, n))
            return etk_err(err, ETK_ENOMEM, "out of memory");
        etk_gen_seg *s = new_seg(k);
        if (!s)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        s->node = k->t->n_nodes - 1;
        s->role = role;
        return 0;
    }
    size_t b = etk_node_frame_size(n);
    if (k->len + b > k->cap) {
        size_t cap = k->cap;
        while (k->len + b > cap)
            cap *= 2;
        uint8_t *nb = realloc(k->blob, cap);
        if (!nb)
            return etk_err(err, ETK_ENOMEM, "out of memory");
        k->blob = nb;
        k->cap = cap;
    }
    k->len += etk_node_frame_encode(n, k->blob + k->len);
    return 0;
}

int etk_gen_class_end(etk_gen_class *k, etk_error *err)
{
    etk_gen_seg *s = new_seg(k);
    if (!s)
        return etk_err(err, ETK_ENOMEM, "out of memory");
    s->node = (size_t)-1;
    s->role = 0;
    return 0;
}

int etk_gen_class_build(etk_gen_class *k, const etk_trace *t, const char (*pg)[16], const uint32_t *peers,
                        etk_error *err)
{
    int rc = etk_gen_class_begin(k, pg, peers, err);
    for (size_t i = 0; i < t->n_nodes && !rc; i++)
        rc = etk_gen_class_put(k, &t->nodes[i], err);
    return rc ? rc : etk_gen_class_end(k, err);
}

void etk_gen_class_free(etk_gen_class *k)
{
    free(k->blob);
    free(k->seg);
    etk_trace_free(k->t);
    memset(k, 0, sizeof *k);
}

/* the file goes out through a bounded buffer: memory per rank file does not grow with its size */
typedef struct obuf {
    int fd;
    uint8_t *b;
    size_t len, cap;
    uint64_t total;
    bool failed;
} obuf;

static void ob_flush(obuf *o)
{
    size_t off = 0;
    while (off < o->len && !o->failed) {
        ssize_t w = write(o->fd, o->b + off, o->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            o->failed = true;
            break;
        }
        off += (size_t)w;
    }
    o->total += o->len;
    o->len = 0;
}

static void ob_put(obuf *o, const uint8_t *p, size_t n)
{
    while (n && !o->failed) {
        if (o->len == 0 && n >= o->cap) { /* large runs straight from the blob */
            o->len = n;
            uint8_t *keep = o->b;
            o->b = (uint8_t *)p;
            ob_flush(o);
            o->b = keep;
            return;
        }
        size_t c = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->b + o->len, p, c);
        o->len += c;
        p += c;
        n -= c;
        if (o->len == o->cap)
            ob_flush(o);
    }
}

#define OB_CAP (1u << 20)

int etk_gen_class_write(const etk_gen_class *k, const char *path, const char *version, const char (*pg)[16],
                        const uint32_t *peers, uint64_t *bytes, etk_error *err)
{
    size_t tl = strlen(path) + 32;
    size_t scratch = etk_meta_frame_size(version);
    for (size_t i = 0; i < k->nseg; i++)
        if (k->seg[i].node != (size_t)-1) {
            size_t f = etk_node_frame_size(&k->t->nodes[k->seg[i].node]) + 32;
            if (f > scratch)
                scratch = f;
        }
    uint8_t *buf = malloc(OB_CAP), *fr = malloc(scratch);
    char *tmp = malloc(tl);
    if (!buf || !tmp || !fr) {
        free(buf);
        free(fr);
        free(tmp);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    obuf o = {open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644), buf, 0, OB_CAP, 0, false};
    int rc = 0;
    if (o.fd < 0) {
        rc = etk_err(err, ETK_EIO, "%s: cannot create: %s", path, strerror(errno));
        goto out;
    }
    ob_put(&o, fr, etk_meta_frame_encode(version, fr));
    for (size_t i = 0; i < k->nseg && !o.failed; i++) {
        const etk_gen_seg *s = &k->seg[i];
        ob_put(&o, k->blob + s->off, s->len);
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
        ob_put(&o, fr, etk_node_frame_encode(&n, fr));
    }
    if (!o.failed)
        ob_flush(&o);
    int e = errno;
    if (close(o.fd) != 0 && !o.failed) {
        o.failed = true;
        e = errno;
    }
    if (o.failed || rename(tmp, path) != 0) {
        rc = etk_err(err, ETK_EIO, "%s: write failed: %s", path, strerror(o.failed ? e : errno));
        unlink(tmp);
    }
out:
    free(tmp);
    free(fr);
    free(buf);
    if (!rc)
        *bytes += o.total;
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
