/* cmd_gen.c — `etkit gen` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_gen(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit gen: not implemented yet\n");
    return 2;
}
