/* etkit/call.h — run an etkit command in process, as the `etkit` command would, and get what it
 * printed: the entry point of libetkit-cli.so (the library plus the commands of cli/), which the
 * Python package (python/etkit) loads. A command's defaults, options and reports (the default
 * job of `etkit run`, the JSON of run/sim, the messages of a bad option) live in cli/, so calling
 * the command itself is what keeps the Python results and the command's JSON equal.
 *
 *     const char *argv[] = {"etkit", "run", "--tp", "8", "--json", NULL};
 *     char *out, *err;
 *     int rc = etk_call(5, argv, &out, NULL, &err, NULL);   (rc: the command's exit status)
 *     ... out: the JSON report; err: warnings and, when rc != 0, the error message ...
 *     etk_call_free(out); etk_call_free(err);
 *
 * Calls are serialized (one at a time in the process): during a call the C streams stdout and
 * stderr point at memory buffers, so other threads' writes to them land in the call's output.
 * Neither stream is a terminal during a call, so no progress line is drawn. */
#ifndef ETKIT_CALL_H
#define ETKIT_CALL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* argv[0] is the program name (ignored), argv[1] the command, as for main(); argv is not
 * modified. *out and *err (each may be NULL: discarded) get malloc'ed NUL-terminated text, with
 * its length in *out_len / *err_len (may be NULL). Returns the exit status (0 ok, 1 a finding such
 * as validation errors or a deadlock, 2 a usage or input error), or -1 when the buffers could not
 * be allocated (*out and *err are then NULL). */
int etk_call(int argc, const char *const *argv, char **out, size_t *out_len, char **err, size_t *err_len);
/* free a buffer from etk_call */
void etk_call_free(void *p);
/* "VERSION (compiler, build type, git describe)" of this build, static text */
const char *etk_call_version(void);

#ifdef __cplusplus
}
#endif
#endif
