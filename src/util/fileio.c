/* fileio.c — atomic output (write "<path>.tmp.<pid>", fsync, rename) and whole-file input
 * (transparently gunzipped, regular files only, bounded by a size limit fit for the kind of
 * file) shared by every module that reads or writes files. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "etkit/et.h"

/* "a" or "an" before what ("an input file", "an ASTRA-sim network file") */
static const char *article(const char *what)
{
    return strchr("aeiouAEIOU", what[0]) && what[0] ? "an" : "a";
}

int etk_file_mkdirs(const char *path, etk_error *err)
{
    char *dir = strdup(path);
    if (!dir)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = 0;
        /* create each missing level, "out" then "out/run1" (mkdir -p) */
        for (char *p = dir + 1; !rc; p++) {
            if (*p && *p != '/')
                continue;
            char c = *p;
            *p = 0;
            struct stat st;
            if (stat(dir, &st) != 0) {
                if (mkdir(dir, 0777) != 0 && errno != EEXIST)
                    rc = etk_err(err, ETK_EIO, "%s: cannot create the folder %s: %s", path, dir, strerror(errno));
            } else if (!S_ISDIR(st.st_mode)) {
                rc = etk_err(err, ETK_EIO, "%s: %s is not a folder", path, dir);
            }
            *p = c;
            if (!c)
                break;
        }
    }
    free(dir);
    return rc;
}

FILE *etk_file_begin(const char *path, char **tmp_path_out, etk_error *err)
{
    if (etk_file_mkdirs(path, err) != 0)
        return NULL;
    /* devices and pipes (/dev/null, /dev/stdout, a FIFO) are written in place: renaming a
     * temporary file over them would replace the device node */
    struct stat st;
    int have = stat(path, &st) == 0;
    /* /dev/stdout, /dev/stderr and /proc/self/fd/N name a descriptor: when it is redirected to a
     * regular file, stat sees that file, and a rename would replace the /dev link itself; they
     * are written in place, appending so that what the descriptor already holds is kept */
    int fd_alias = strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0;
    if ((have && !S_ISREG(st.st_mode)) || fd_alias) {
        if (have && S_ISDIR(st.st_mode)) {
            etk_err(err, ETK_EIO, "%s: is a directory, expected a file name", path);
            return NULL;
        }
        FILE *f = fopen(path, have && S_ISREG(st.st_mode) ? "ab" : "wb");
        if (!f)
            etk_err(err, ETK_EIO, "%s: cannot open for writing: %s", path, strerror(errno));
        *tmp_path_out = NULL;
        return f;
    }
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        etk_err(err, ETK_EIO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return NULL;
    }
    *tmp_path_out = tmp;
    return f;
}

int etk_file_commit(FILE *f, char *tmp, const char *path, etk_error *err)
{
    int rc = 0;
    if (!tmp) { /* written in place (a device or pipe) */
        if (fflush(f) != 0 || ferror(f))
            rc = etk_err(err, ETK_EIO, "%s: write failed: %s", path, strerror(errno));
        if (fclose(f) != 0 && rc == 0)
            rc = etk_err(err, ETK_EIO, "%s: close failed: %s", path, strerror(errno));
        return rc;
    }
    if (fflush(f) != 0 || ferror(f))
        rc = etk_err(err, ETK_EIO, "%s: write failed: %s", path, strerror(errno));
    else if (fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        rc = etk_err(err, ETK_EIO, "%s: fsync failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && rc == 0)
        rc = etk_err(err, ETK_EIO, "%s: close failed: %s", path, strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = etk_err(err, ETK_EIO, "%s: cannot rename %s into place: %s", path, tmp,
                     strerror(errno));
    if (rc)
        unlink(tmp);
    free(tmp);
    return rc;
}

void etk_file_abort(FILE *f, char *tmp)
{
    if (f)
        fclose(f);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
}

int etk_file_write_all(const char *path, const void *data, size_t len, etk_error *err)
{
    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return etk_err(err, ETK_EIO, "<stdout>: write failed: %s", strerror(errno));
        return 0;
    }
    char *tmp;
    FILE *f = etk_file_begin(path, &tmp, err);
    if (!f)
        return err ? err->code : ETK_EIO;
    if (len && fwrite(data, 1, len, f) != len) {
        int rc = etk_err(err, ETK_EIO, "%s: write failed: %s", path, strerror(errno));
        etk_file_abort(f, tmp);
        return rc;
    }
    return etk_file_commit(f, tmp, path, err);
}

const char *etk_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "is a regular file";
    case S_IFDIR: return "is a directory";
    case S_IFIFO: return "is a FIFO (named pipe), not a regular file";
    case S_IFCHR: return "is a character device, not a regular file";
    case S_IFBLK: return "is a block device, not a regular file";
    case S_IFSOCK: return "is a socket, not a regular file";
    default: return "is not a regular file";
    }
}

int etk_file_read_all(const char *path, char **data, size_t *len, etk_error *err)
{
    return etk_file_read_max(path, ETK_MAX_INPUT_BYTES, "input file", data, len, err);
}

/* A file that is not gzip: read as it is, into one buffer of its size (a file of /proc says 0
 * bytes and has more: the buffer grows), bounded by max_bytes. */
static int read_plain(int fd, const char *path, size_t size_hint, size_t max_bytes, const char *what,
                      char **data, size_t *len, etk_error *err)
{
    size_t cap = (size_hint < max_bytes ? size_hint : max_bytes) + 2, n = 0; /* +2: room for the
                                                                            * NUL and the EOF read */
    if (cap < 4096)
        cap = 4096;
    char *buf = malloc(cap);
    if (!buf)
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    for (;;) {
        if (n + 1 >= cap) {
            if (n > max_bytes)
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return etk_err(err, ETK_ENOMEM, "%s: out of memory (%zu bytes)", path, cap * 2);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int rc = etk_err(err, ETK_EIO, "%s: read failed: %s", path, strerror(errno));
            free(buf);
            return rc;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > max_bytes) { /* it grew while read */
        free(buf);
        return etk_err(err, ETK_EINVAL, "%s: more than the limit of %zu bytes (%.0f MiB) for %s %s", path,
                       max_bytes, (double)max_bytes / 1048576.0, article(what), what);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

/* A gzip file: decompressed, bounded by max_bytes of output. Takes fd. */
static int read_gz(int fd, const char *path, size_t max_bytes, const char *what, char **data, size_t *len,
                   etk_error *err)
{
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        return etk_err(err, ETK_ENOMEM, "%s: cannot start reading the gzip stream", path);
    }
    size_t cap = 1u << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        gzclose(gz);
        return etk_err(err, ETK_ENOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n > max_bytes) { /* a gzip file decompressing past the limit */
            free(buf);
            gzclose(gz);
            return etk_err(err, ETK_EINVAL,
                           "%s: decompresses to more than the limit of %zu bytes (%.0f MiB) for %s %s", path,
                           max_bytes, (double)max_bytes / 1048576.0, article(what), what);
        }
        if (cap - n < (1u << 15)) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                gzclose(gz);
                return etk_err(err, ETK_ENOMEM, "%s: out of memory (%zu bytes)", path, cap * 2);
            }
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - n - 1;
        if (want > (1u << 30))
            want = 1u << 30;
        int r = gzread(gz, buf + n, (unsigned)want);
        if (r < 0) {
            int zerr;
            const char *m = gzerror(gz, &zerr);
            int rc = etk_err(err, ETK_EIO, "%s: read failed: %s", path,
                             zerr == Z_ERRNO ? strerror(errno) : m);
            free(buf);
            gzclose(gz);
            return rc;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    int zerr;
    gzerror(gz, &zerr);
    gzclose(gz);
    if (zerr == Z_BUF_ERROR) {
        free(buf);
        return etk_err(err, ETK_EFORMAT, "%s: truncated gzip stream", path);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

int etk_file_read_max(const char *path, size_t max_bytes, const char *what, char **data, size_t *len,
                      etk_error *err)
{
    *data = NULL;
    *len = 0;
    /* a FIFO, /dev/zero or a directory would be read until memory runs out (or fail oddly) */
    struct stat st;
    if (stat(path, &st) != 0)
        return etk_err(err, ETK_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return etk_err(err, ETK_EIO, "%s: %s, expected %s %s", path, etk_file_kind(st.st_mode), article(what), what);
    if ((uint64_t)st.st_size > max_bytes)
        return etk_err(err, ETK_EINVAL, "%s: %llu bytes, more than the limit of %zu bytes (%.0f MiB) for %s %s",
                       path, (unsigned long long)st.st_size, max_bytes, (double)max_bytes / 1048576.0,
                       article(what), what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return etk_err(err, ETK_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* gzip (magic 1f 8b) is decompressed; anything else is read as it is, without zlib's
     * buffers (a few hundred KiB set up and cleared per file: most of the cost of a small
     * model or cluster file) */
    unsigned char magic[2];
    ssize_t m = pread(fd, magic, 2, 0);
    if (m == 2 && magic[0] == 0x1f && magic[1] == 0x8b)
        return read_gz(fd, path, max_bytes, what, data, len, err);
    int rc = read_plain(fd, path, (size_t)st.st_size, max_bytes, what, data, len, err);
    close(fd);
    return rc;
}
