/* cmd.h — the etkit subcommands (one file per command, cli/cmd_<name>.c) and small helpers
 * shared by them. Each command returns the process exit status: 0 ok, 1 failure found
 * (e.g. validation errors), 2 usage or input error. */
#ifndef ETKIT_CLI_CMD_H
#define ETKIT_CLI_CMD_H

#include "etkit/et.h"

int cmd_info(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_json(int argc, char **argv);
int cmd_recode(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_live(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_synth(int argc, char **argv);

/* `etkit argv[1] argv[2...]`: runs the command; returns its exit status (cli/main.c). */
int cli_dispatch(int argc, char **argv);
/* "VERSION (compiler, build type, git revision)" of this build (cli/version.c) */
const char *cli_version(void);

/* "etkit <cmd>: <message>" on stderr; returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The usage error for getopt_long's return c (':' a missing value, else an unknown option; the
 * optstring starts with ':'), after the caller handled its own options; returns 2. */
int cli_getopt_error(const char *cmd, int c, char **argv);
/* Exactly one operand left at argv[optind]: stores it in *in and returns 0, else prints the
 * usage error ("missing input file" / "one input file expected") and returns 2. */
int cli_one_input(const char *cmd, int argc, char **argv, const char **in);
/* Print an etk_error as "etkit <cmd>: error: <msg>" on stderr; returns 2. */
int cli_fail(const char *cmd, const etk_error *err);
/* Parse a non-negative integer / double option value; on error print a message and return -1. */
int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
/* cli_parse_u64 within [lo, hi]; outside: "OPT wants LO to HI, got S" (usage error, -1) */
int cli_parse_u64_in(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out);
/* s as a quoted JSON string (malloc'd; the caller frees): escaped as JSON wants, and each byte
 * that is not valid UTF-8 (a file name in another encoding) as the text \xNN, as etk_json_text
 * does. NULL when out of memory. */
char *cli_json_quote(const char *s);
#endif
