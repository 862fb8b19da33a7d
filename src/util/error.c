/* error.c — etk_error: the one way library calls report failure (code + a message that names
 * the file, the place and what was expected; see DESIGN.md "Conventions"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "etkit/et.h"

int etk_err(etk_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int etk_err_prefix(etk_error *err, const char *fmt, ...)
{
    if (!err)
        return ETK_EINVAL;
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n + 2 < sizeof err->msg) {
        size_t room = sizeof err->msg - (size_t)n - 1, len = strlen(old);
        err->msg[n] = ':';
        err->msg[n + 1] = ' ';
        room -= 2;
        if (len > room)
            len = room;
        memcpy(err->msg + n + 2, old, len);
        err->msg[n + 2 + len] = 0;
    }
    return err->code;
}
