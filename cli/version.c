/* version.c — what `etkit --version` says: the version, the compiler, the build type and the
 * git revision the build was configured from (CMake passes ETK_BUILD_TYPE and ETK_GIT). */
#include "cmd.h"

#ifndef ETK_BUILD_TYPE
#define ETK_BUILD_TYPE "unknown"
#endif
#ifndef ETK_GIT /* ", git <describe>" or empty */
#define ETK_GIT ""
#endif

#if defined(__clang__)
#define ETK_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define ETK_COMPILER "gcc " __VERSION__
#else
#define ETK_COMPILER "unknown compiler"
#endif

const char *cli_version(void)
{
    return ETK_VERSION " (" ETK_COMPILER ", " ETK_BUILD_TYPE " build" ETK_GIT ")";
}
