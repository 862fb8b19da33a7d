/* cmd_dot.c — `etkit dot` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_dot(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit dot: not implemented yet\n");
    return 2;
}
