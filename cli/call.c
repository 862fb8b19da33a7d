/* call.c — etk_call (etkit/call.h): one command run in process with stdout and stderr captured
 * in memory; part of libetkit-cli.so (built with ETK_CLI_LIBRARY: main.c without main()). */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "etkit/call.h"

static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;

static void give(char *buf, size_t len, char **p, size_t *plen)
{
    if (plen)
        *plen = len;
    if (p)
        *p = buf;
    else
        free(buf);
}

int etk_call(int argc, const char *const *argv, char **out, size_t *out_len, char **err, size_t *err_len)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    if (out)
        *out = NULL;
    if (err)
        *err = NULL;
    /* getopt permutes its argv: the command gets a copy of the pointers */
    char **args = calloc((size_t)(argc > 0 ? argc : 0) + 1, sizeof *args);
    if (!args)
        return -1;
    for (int i = 0; i < argc; i++)
        args[i] = (char *)argv[i];
    pthread_mutex_lock(&call_lock);
    FILE *o = open_memstream(&obuf, &olen), *e = open_memstream(&ebuf, &elen);
    if (!o || !e) {
        if (o)
            fclose(o);
        if (e)
            fclose(e);
        pthread_mutex_unlock(&call_lock);
        free(obuf);
        free(ebuf);
        free(args);
        return -1;
    }
    FILE *so = stdout, *se = stderr;
    stdout = o;
    stderr = e;
    optind = 0; /* glibc: re-initialize getopt for a fresh argv */
    opterr = 1;
    int rc = cli_dispatch(argc, args);
    fflush(o);
    if (ferror(o) && !rc) {
        fprintf(e, "etkit: error writing standard output\n");
        rc = 2;
    }
    stdout = so;
    stderr = se;
    fclose(o);
    fclose(e);
    pthread_mutex_unlock(&call_lock);
    free(args);
    if ((!obuf || !ebuf) && (out || err)) {
        free(obuf);
        free(ebuf);
        return -1;
    }
    give(obuf, olen, out, out_len);
    give(ebuf, elen, err, err_len);
    return rc;
}

void etk_call_free(void *p)
{
    free(p);
}

const char *etk_call_version(void)
{
    return cli_version();
}
