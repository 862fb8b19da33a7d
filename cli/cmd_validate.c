/* cmd_validate.c — `etkit validate` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_validate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit validate: not implemented yet\n");
    return 2;
}
