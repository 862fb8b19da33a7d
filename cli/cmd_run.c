/* cmd_run.c — `etkit run` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit run: not implemented yet\n");
    return 2;
}
