/* cmd_info.c — `etkit info` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit info: not implemented yet\n");
    return 2;
}
