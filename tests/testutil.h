/* testutil.h — helpers shared by the cmocka tests: paths into ../shared/data (a missing file
 * fails the test with its path), temporary directories, reading files. */
#ifndef ETK_TESTUTIL_H
#define ETK_TESTUTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* "<ETK_SHARED_DIR>/data/<rel>" in a static buffer; fails the test (naming the file) if absent. */
const char *tu_data(const char *rel);
/* A fresh temporary directory (removed by tu_cleanup at process exit). */
const char *tu_tmpdir(void);
/* Read a whole file; fails the test on error. Caller frees. */
uint8_t *tu_read(const char *path, size_t *len);
/* Run a shell command, capture stdout+stderr into *out (malloc'ed), return exit status. */
int tu_sh(char **out, const char *fmt, ...);
#endif
