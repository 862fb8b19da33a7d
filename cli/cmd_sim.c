/* cmd_sim.c — `etkit sim` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_sim(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit sim: not implemented yet\n");
    return 2;
}
