/* cmd_json.c — `etkit json` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_json(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit json: not implemented yet\n");
    return 2;
}
