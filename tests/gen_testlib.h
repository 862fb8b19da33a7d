/* gen_testlib.h — helpers shared by the generator's plan tests (test_gen_cp/ep/zero): parse a
 * command-line-style plan string into an etk_gen_config and summarize it. Header-only, like
 * sim_testlib.h; include after testutil.h. */
#ifndef ETK_GEN_TESTLIB_H
#define ETK_GEN_TESTLIB_H

#include <stdio.h>
#include <string.h>

#include "etkit/gen.h"

/* Parse "--model llama2-7b --tp 2 ..." and check the plan; 0 or the library's error. */
static inline int parse(const char *line, etk_gen_config *c, etk_error *err)
{
    static char buf[1024];
    char *argv[64], *rest[64];
    int argc = 0, nrest = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 64; t = strtok(NULL, " "))
        argv[argc++] = t;
    etk_gen_config_init(c);
    int rc = etk_gen_parse_args(argc, argv, c, &nrest, rest, err);
    if (!rc && nrest)
        rc = etk_err(err, ETK_EINVAL, "unparsed '%s'", rest[0]);
    return rc ? rc : etk_gen_check(c, err);
}

/* Parse and summarize a plan that must be valid (fails the test otherwise). */
static inline void summarize(const char *line, etk_gen_config *c, etk_gen_summary *s)
{
    etk_error err = {0};
    if (parse(line, c, &err) || etk_gen_summarize(c, s, &err))
        fail_msg("plan '%s': %s", line, err.msg);
}
#endif
