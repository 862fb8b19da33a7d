/* cmd_models.c — `etkit models` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_models(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit models: not implemented yet\n");
    return 2;
}
