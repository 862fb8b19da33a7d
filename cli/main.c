/* main.c — the etkit command: dispatches `etkit <command> ...` to cli/cmd_<command>.c.
 * Every command is a thin layer over libetkit (see ../shared/DESIGN.md). */
#define _GNU_SOURCE /* fopencookie */
#include <stdarg.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>
#include <math.h>

#include "cmd.h"
#include "etkit/json.h"

#include <jansson.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"info", cmd_info, "per-rank statistics of Chakra traces (node types, FLOPs, bytes, collectives)"},
    {"validate", cmd_validate, "check traces and workloads (ids, deps, cycles, attribute kinds, matching, deadlock)"},
    {"json", cmd_json, "export a trace as JSON (lossless or Chakra feeder form), or import it back"},
    {"recode", cmd_recode, "read and re-write a trace canonically"},
    {"dot", cmd_dot, "Graphviz DOT of a trace"},
    {"gen", cmd_gen, "synthesize per-rank traces for LLM training under a parallel plan"},
    {"models", cmd_models, "list built-in model presets with their parameter counts"},
    {"sim", cmd_sim, "simulate a workload on a cluster"},
    {"run", cmd_run, "generate a workload in memory and simulate it"},
    {"convert", cmd_convert, "convert PyTorch execution traces (+ Kineto) to Chakra"},
    {"live", cmd_live, "run CUDA/NCCL programs on the modelled cluster in virtual time"},
    {"calibrate", cmd_calibrate, "predict measured runs, report the errors, fit model parameters to them"},
    {"report", cmd_report, "HTML page of a run or simulation (charts of where the time goes, Gantt, memory)"},
    {"plan", cmd_plan, "search parallel plans (and clusters): enumerate, prune, simulate, rank"},
    {"synth", cmd_synth, "learn a generative model of rank graphs from workloads, sample new valid workloads"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: etkit <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'etkit <command> --help' describes a command.\n");
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "etkit %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'etkit %s --help')\n", cmd);
    return 2;
}

int cli_getopt_error(const char *cmd, int c, char **argv)
{
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    if (optopt)
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

int cli_one_input(const char *cmd, int argc, char **argv, const char **in)
{
    if (optind >= argc)
        return cli_usage_error(cmd, "missing input file");
    if (optind != argc - 1)
        return cli_usage_error(cmd, "one input file expected, got '%s' too", argv[optind + 1]);
    *in = argv[optind];
    return 0;
}

char *cli_json_quote(const char *s)
{
    json_t *j = etk_json_text(s);
    char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return q;
}

int cli_fail(const char *cmd, const etk_error *err)
{
    fprintf(stderr, "etkit %s: error: %s\n", cmd, err->msg);
    return 2;
}

int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        goto bad;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        goto bad;
    *out = v;
    return 0;
bad:
    cli_usage_error(cmd, "%s wants a non-negative integer, got '%s'", opt, s ? s : "");
    return -1;
}

int cli_parse_u64_in(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v;
    if (cli_parse_u64(cmd, opt, s, &v))
        return -1;
    if (v < lo || v > hi) {
        cli_usage_error(cmd, "%s wants %" PRIu64 " to %" PRIu64 ", got %s", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    if (!s || !*s)
        goto bad;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) /* nan, inf, 1e400: never a valid value */
        goto bad;
    *out = v;
    return 0;
bad:
    cli_usage_error(cmd, "%s wants a finite number, got '%s'", opt, s ? s : "");
    return -1;
}

#ifndef ETK_CLI_LIBRARY /* libetkit-cli (cli/call.c) runs cli_dispatch with its own streams */
/* stdout through a cookie stream over file descriptor 1 that remembers the first write error:
 * stdio discards the reason once a failed buffer is dropped, and the message must say it. */
static int stdout_errno;

static ssize_t stdout_write(void *cookie, const char *buf, size_t len)
{
    (void)cookie;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(STDOUT_FILENO, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!stdout_errno)
                stdout_errno = w < 0 ? errno : EIO;
            return off ? (ssize_t)off : -1;
        }
        off += (size_t)w;
    }
    return (ssize_t)off;
}

static int stdout_close(void *cookie)
{
    (void)cookie;
    if (close(STDOUT_FILENO) != 0 && errno != EBADF) { /* EBADF: started with stdout closed */
        if (!stdout_errno)
            stdout_errno = errno;
        return -1;
    }
    return 0;
}

static void watch_stdout(void)
{
    cookie_io_functions_t io = {.write = stdout_write, .close = stdout_close};
    bool tty = isatty(STDOUT_FILENO);
    FILE *f = fopencookie(NULL, "w", io);
    if (!f)
        return; /* the plain stream: errors still fail the command, maybe without the reason */
    stdout = f;
    setvbuf(stdout, NULL, tty ? _IOLBF : _IOFBF, tty ? BUFSIZ : 1 << 16);
}

/* Every command's output reaches the file system here: a write error anywhere on stdout (a full
 * disk, /dev/full, a closed pipe's EIO) leaves the stream's error flag set, and the last
 * buffered bytes are written by this fflush. Either makes the command fail with the reason,
 * whatever the command returned (issue #18: `models > /dev/full` exited 0). */
static int finish_stdout(int rc)
{
    errno = 0;
    bool bad = fflush(stdout) != 0;
    int e = stdout_errno ? stdout_errno : errno;
    if (ferror(stdout))
        bad = true;
    errno = 0;
    if (fclose(stdout) != 0 && !bad && errno != EBADF) { /* EBADF: started with stdout closed, wrote nothing */
        bad = true;
        e = stdout_errno ? stdout_errno : errno;
    }
    if (!bad)
        return rc;
    if (e)
        fprintf(stderr, "etkit: error writing standard output: %s\n", strerror(e));
    else
        fprintf(stderr, "etkit: error writing standard output\n");
    return rc ? rc : 2;
}

#endif

int cli_dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("etkit %s\n", cli_version());
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "etkit: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

#ifndef ETK_CLI_LIBRARY
int main(int argc, char **argv)
{
    watch_stdout();
    return finish_stdout(cli_dispatch(argc, argv));
}
#endif
