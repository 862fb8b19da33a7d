/* cmd_convert.c — `etkit convert` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_convert(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit convert: not implemented yet\n");
    return 2;
}
