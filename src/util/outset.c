/* outset.c — all-or-nothing multi-file outputs (outset.h). A rank set is written into
 * <dir>/.<base>.etkit-tmp.<pid>/ and published by renames (same file system, so each is
 * atomic) only when every file is complete: a full disk, a crash or a SIGKILL while writing
 * leave the final names as they were. Publishing removes the old PREFIX.json first and renames
 * the new one last, so a set whose publication was cut short lacks its groups file instead of
 * pairing new ranks with old groups. The lock is flock() on <prefix>.lock (re-checked against
 * the path after locking, so the file can be removed when done). Temporary files carry the
 * writer's pid; those of processes that no longer exist are removed when the next writer of the
 * same prefix starts (issue #18). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/outset.h"

static char *str_printf(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* dir and base of a prefix; base empty when the prefix ends in '/' */
static int split(const char *prefix, char **dir, char **base)
{
    const char *slash = strrchr(prefix, '/');
    *base = strdup(slash ? slash + 1 : prefix);
    if (!slash)
        *dir = strdup(".");
    else if (slash == prefix)
        *dir = strdup("/");
    else
        *dir = strndup(prefix, (size_t)(slash - prefix));
    return *dir && *base ? 0 : -1;
}

int etk_outset_check(const char *prefix, etk_error *err)
{
    char *dir = NULL, *base = NULL;
    int rc = 0;
    if (split(prefix, &dir, &base)) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto out;
    }
    if (!*base) {
        rc = etk_err(err, ETK_EINVAL, "%s: the output prefix names a folder; give a file-name prefix such as %sx",
                     prefix, prefix);
        goto out;
    }
    struct stat st;
    /* missing folders are created (issue #17: `-o out/x` without out/), then checked */
    if ((rc = etk_file_mkdirs(prefix, err)) == 0 && stat(dir, &st) != 0)
        rc = etk_err(err, ETK_EIO, "%s: cannot write the output: folder %s: %s", prefix, dir, strerror(errno));
    if (rc)
        goto out;
    if (!S_ISDIR(st.st_mode)) {
        rc = etk_err(err, ETK_EIO, "%s: cannot write the output: %s is not a folder", prefix, dir);
        goto out;
    }
    /* access() says yes to root on a read-only file system: try a file */
    char probe[64];
    snprintf(probe, sizeof probe, "/.etkit-probe.%ld", (long)getpid());
    char *p = str_printf(dir, probe, "");
    if (!p) {
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
        goto out;
    }
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        rc = etk_err(err, ETK_EIO, "%s: cannot write the output: folder %s is not writable: %s", prefix, dir,
                     strerror(errno));
    else {
        close(fd);
        unlink(p);
    }
    free(p);
out:
    free(dir);
    free(base);
    return rc;
}

int etk_output_check(const char *path, etk_error *err)
{
    struct stat st;
    if (!strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
        return 0; /* stdout, a device or a pipe: written in place */
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return etk_err(err, ETK_EIO, "%s: is a folder, expected a file name", path);
    return etk_outset_check(path, err);
}

static bool pid_alive(long pid)
{
    if (pid <= 0 || pid == (long)getpid())
        return true;
    return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* s is all decimal digits (no sign, no leading zero unless "0"); its value in *v */
static bool parse_num(const char *s, size_t n, unsigned long long *v)
{
    if (n == 0 || n > 18 || (n > 1 && s[0] == '0'))
        return false;
    unsigned long long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (unsigned)(s[i] - '0');
    }
    *v = x;
    return true;
}

/* name = <base>.<N>.et: N in *rank */
static bool is_rank_file(const char *name, const char *base, unsigned long long *rank)
{
    size_t bl = strlen(base), nl = strlen(name);
    if (nl < bl + 5 || strncmp(name, base, bl) || name[bl] != '.' || strcmp(name + nl - 3, ".et"))
        return false;
    return parse_num(name + bl + 1, nl - bl - 4, rank);
}

/* name = <stem>.tmp.<pid> with stem <base>.json or <base>.<N>.et; the pid in *pid */
static bool is_file_tmp(const char *name, const char *base, long *pid)
{
    const char *t = strstr(name, ".tmp.");
    unsigned long long v, r;
    if (!t || !parse_num(t + 5, strlen(t + 5), &v))
        return false;
    char stem[512];
    size_t sl = (size_t)(t - name);
    if (sl >= sizeof stem)
        return false;
    memcpy(stem, name, sl);
    stem[sl] = 0;
    size_t bl = strlen(base);
    bool json = sl == bl + 5 && !strncmp(stem, base, bl) && !strcmp(stem + bl, ".json");
    if (!json && !is_rank_file(stem, base, &r))
        return false;
    *pid = (long)v;
    return true;
}

/* name = .<base>.etkit-tmp.<pid> */
static bool is_set_tmp(const char *name, const char *base, long *pid)
{
    size_t bl = strlen(base);
    unsigned long long v;
    if (name[0] != '.' || strncmp(name + 1, base, bl) || strncmp(name + 1 + bl, ".etkit-tmp.", 11))
        return false;
    if (!parse_num(name + 12 + bl, strlen(name + 12 + bl), &v))
        return false;
    *pid = (long)v;
    return true;
}

/* remove the plain files of a folder, then the folder */
static void remove_folder(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *p = str_printf(path, "/", e->d_name);
            if (p)
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(path);
}

/* the temporary files and folders of dead writers of this prefix */
static void clean_dead(const etk_outset *o)
{
    DIR *d = opendir(o->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        bool folder = is_set_tmp(e->d_name, o->base, &pid);
        if (!folder && !is_file_tmp(e->d_name, o->base, &pid))
            continue;
        if (pid_alive(pid))
            continue;
        char *p = str_printf(o->dir, "/", e->d_name);
        if (!p)
            continue;
        if (folder)
            remove_folder(p);
        else
            unlink(p);
        free(p);
    }
    closedir(d);
}

static void outset_free(etk_outset *o)
{
    free(o->prefix);
    free(o->dir);
    free(o->base);
    free(o->tmp);
    free(o->tprefix);
    free(o->lock);
    memset(o, 0, sizeof *o);
    o->lock_fd = -1;
}

static void unlock(etk_outset *o)
{
    if (o->lock_fd >= 0) {
        unlink(o->lock); /* while still holding it: see the inode check in lock() */
        close(o->lock_fd);
        o->lock_fd = -1;
    }
}

static int lock(etk_outset *o, etk_error *err)
{
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(o->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return etk_err(err, ETK_EIO, "%s: cannot create the lock file %s: %s", o->prefix, o->lock,
                           strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                return etk_err(err, ETK_EIO,
                               "%s: another etkit process is writing this output (%s is locked); wait for it "
                               "to finish or choose another prefix",
                               o->prefix, o->lock);
            return etk_err(err, ETK_EIO, "%s: cannot lock %s: %s", o->prefix, o->lock, strerror(e));
        }
        /* the holder before us may have removed the file after we opened it: lock the file
         * that the name points to now */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(o->lock, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            o->lock_fd = fd;
            return 0;
        }
        close(fd);
    }
    return etk_err(err, ETK_EIO, "%s: cannot lock %s: it keeps being replaced", o->prefix, o->lock);
}

int etk_outset_begin(etk_outset *o, const char *prefix, etk_error *err)
{
    memset(o, 0, sizeof *o);
    o->lock_fd = -1;
    int rc = etk_outset_check(prefix, err);
    if (rc)
        return rc;
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    o->prefix = strdup(prefix);
    if (!o->prefix || split(prefix, &o->dir, &o->base))
        goto nomem;
    char *dot = str_printf(o->dir, "/.", o->base);
    o->tmp = dot ? str_printf(dot, ".etkit-tmp.", pid) : NULL;
    free(dot);
    o->tprefix = o->tmp ? str_printf(o->tmp, "/", o->base) : NULL;
    o->lock = str_printf(prefix, ".lock", "");
    if (!o->tmp || !o->tprefix || !o->lock)
        goto nomem;
    if ((rc = lock(o, err)))
        goto fail;
    clean_dead(o);
    remove_folder(o->tmp); /* ours from an earlier set in this process, if any */
    if (mkdir(o->tmp, 0755) != 0) {
        rc = etk_err(err, ETK_EIO, "%s: cannot create the temporary folder %s: %s", prefix, o->tmp, strerror(errno));
        goto fail;
    }
    return 0;
nomem:
    rc = etk_err(err, ETK_ENOMEM, "out of memory");
fail:
    unlock(o);
    outset_free(o);
    return rc;
}

void etk_outset_abort(etk_outset *o)
{
    if (o->tmp)
        remove_folder(o->tmp);
    unlock(o);
    outset_free(o);
}

static int move(etk_outset *o, const char *suffix, bool must, etk_error *err)
{
    char *from = str_printf(o->tprefix, suffix, ""), *to = str_printf(o->prefix, suffix, "");
    int rc = 0;
    if (!from || !to)
        rc = etk_err(err, ETK_ENOMEM, "out of memory");
    else if (rename(from, to) != 0 && (must || errno != ENOENT))
        rc = etk_err(err, ETK_EIO, "%s: cannot move %s into place: %s", to, from, strerror(errno));
    free(from);
    free(to);
    return rc;
}

int etk_outset_commit(etk_outset *o, uint32_t n_ranks, etk_error *err)
{
    int rc = 0;
    char *gp = str_printf(o->prefix, ".json", "");
    if (!gp) {
        etk_outset_abort(o);
        return etk_err(err, ETK_ENOMEM, "out of memory");
    }
    /* the old groups file goes first: until the new one is in place the set is visibly incomplete */
    if (unlink(gp) != 0 && errno != ENOENT)
        rc = etk_err(err, ETK_EIO, "%s: cannot replace it: %s", gp, strerror(errno));
    free(gp);
    char suf[32];
    for (uint32_t r = 0; r < n_ranks && !rc; r++) {
        snprintf(suf, sizeof suf, ".%u.et", r);
        rc = move(o, suf, true, err);
    }
    if (!rc) { /* ranks of an earlier, larger run */
        DIR *d = opendir(o->dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            unsigned long long r;
            if (is_rank_file(e->d_name, o->base, &r) && r >= n_ranks) {
                char *p = str_printf(o->dir, "/", e->d_name);
                if (p)
                    unlink(p);
                free(p);
            }
        }
        if (d)
            closedir(d);
    }
    if (!rc)
        rc = move(o, ".json", false, err);
    if (!rc) {
        int fd = open(o->dir, O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            fsync(fd); /* the renames */
            close(fd);
        }
    }
    etk_outset_abort(o); /* the (now empty) temporary folder and the lock */
    return rc;
}
