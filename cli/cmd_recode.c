/* cmd_recode.c — `etkit recode` (not written yet). */
#include <stdio.h>

#include "cmd.h"

int cmd_recode(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etkit recode: not implemented yet\n");
    return 2;
}
