/* nohello.c — a rank that never says hello to `etkit live` (tests/live/wrapper.sh): built
 * statically, so the preloaded client (libetklive.so) is never loaded into it.
 *   nohello MODE RANK PROG ARGS...: the process whose $RANK is RANK does MODE, every other one
 *   execs PROG ARGS (which connects as usual). MODE: exit0 (exits with status 0), exit4 (status 4),
 *   sleep (runs for 300 s without connecting: only etkit's timeout ends it). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nohello exit0|exit4|sleep RANK PROG ARGS...\n");
        return 2;
    }
    const char *r = getenv("RANK");
    if (r && !strcmp(r, argv[2])) {
        if (!strcmp(argv[1], "exit0"))
            return 0;
        if (!strcmp(argv[1], "exit4"))
            return 4;
        sleep(300);
        return 0;
    }
    execv(argv[3], argv + 3);
    perror(argv[3]);
    return 127;
}
