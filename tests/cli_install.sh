#!/usr/bin/env bash
# cli_install.sh — `make install`'s pieces from the build the test runs in: `cmake --install` into a
# temporary DESTDIR puts the command, libetkit.so with its soname and version, the public headers
# and etkit.pc there; a tiny program compiles and links against it with pkg-config and runs. Also:
# a plain cmake configuration never adds -Werror (only -DETK_WERROR=ON, the project's checks do).
# usage: cli_install.sh ETKIT SHARED_DIR
. "$(dirname "$0")/clilib.sh"
BUILD=$(cd "$(dirname "$ETKIT")" && pwd)
SRC=$(pwd)
DEST=$T/dest
PREFIX=/opt/etkit-test
DESTDIR=$DEST cmake --install "$BUILD" --prefix "$PREFIX" >"$T/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$T/install.log")"
R=$DEST$PREFIX
[ -x "$R/bin/etkit" ] || fail "no bin/etkit"
[ "$("$R/bin/etkit" --version)" = "$("$ETKIT" --version)" ] || fail "installed etkit --version differs"
lib=$(find "$R" -name 'libetkit.so.*.*.*' | head -1)
[ -n "$lib" ] || fail "no libetkit.so.<version>"
LIBDIR=$(dirname "$lib")
[ -L "$LIBDIR/libetkit.so" ] && [ -L "$LIBDIR/libetkit.so.0" ] || fail "libetkit.so / libetkit.so.0 links missing"
soname=$(objdump -p "$lib" 2>/dev/null | awk '/SONAME/ {print $2}')
[ "$soname" = "libetkit.so.0" ] || fail "soname is '$soname', want libetkit.so.0"
for h in et.h gen.h sim.h model.h net.h; do [ -f "$R/include/etkit/$h" ] || fail "header etkit/$h not installed"; done
pc=$(find "$R" -name etkit.pc | head -1)
[ -n "$pc" ] || fail "no etkit.pc"
# relocatable: the prefix is found relative to the .pc file, wherever the tree was put
pcprefix=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=prefix etkit)
[ "$(realpath "$pcprefix")" = "$(realpath "$R")" ] || fail "etkit.pc prefix '$pcprefix' is not $R"
# compile and link a program against the installed library
cat >"$T/p.c" <<'C'
#include <stdio.h>
#include <etkit/gen.h>
int main(void)
{
    etk_model m;
    etk_error err = {0};
    uint64_t n = 0;
    if (etk_model_preset("llama2-7b", &m, &err) || etk_model_params(&m, &n, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%llu\n", (unsigned long long)n);
    return 0;
}
C
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs etkit) || fail "pkg-config etkit failed"
# an ASan+UBSan build's library needs the sanitizer runtime in the program too
san=
grep -q "^ETK_SANITIZE:BOOL=ON" "$BUILD/CMakeCache.txt" && san="-fsanitize=address,undefined"
cc -std=c11 -Wall -Werror $san "$T/p.c" -o "$T/p" $flags 2>"$T/cc.log" || fail "compile+link against the install: $(head -5 "$T/cc.log")"
# Llama 2 7B: 6,738,415,616 parameters (published; etkit models prints the same)
out=$(LD_LIBRARY_PATH=$LIBDIR "$T/p" 2>&1)
[ "$out" = 6738415616 ] || fail "program linked to libetkit.so printed '$out', want 6738415616"
LD_LIBRARY_PATH=$LIBDIR ldd "$T/p" | grep -q "libetkit.so.0 => $LIBDIR" || fail "program not linked to the installed libetkit.so.0"
# the command itself needs no libetkit.so: only Debian's libraries (README's dependency sentence)
deps=$(ldd "$R/bin/etkit" | awk '{print $1}' | grep -v -E '^(linux-vdso|/lib64/ld-linux)' | sed 's/\.so.*//' |
  grep -v -E '^(libasan|libubsan|libstdc\+\+|libgcc_s|libdl|libpthread|librt)$' | sort | tr '\n' ' ')
# with Open MPI found at build time (`mpirun etkit plan`, docs/plan.md) also libmpi and what it loads
mpilib=$(ldd "$R/bin/etkit" | awk '$1 ~ /^libmpi\.so/ {print $3}')
if [ -n "$mpilib" ]; then
  mpideps=" libmpi $(ldd "$mpilib" | awk '{print $1}' | sed 's/\.so.*//' | tr '\n' ' ')"
  kept=
  for d in $deps; do
    case " libc libjansson libm libprotobuf-c libyaml-0 libz " in *" $d "*) kept="$kept$d ";; *)
      case "$mpideps " in *" $d "*) ;; *) kept="$kept$d ";; esac;; esac
  done
  deps=$kept
fi
[ "$deps" = "libc libjansson libm libprotobuf-c libyaml-0 libz " ] || fail "etkit links '$deps', README says libc libm jansson libyaml protobuf-c zlib (and Open MPI when built with it)"

# plain cmake: warnings on, never -Werror; -DETK_WERROR=ON (make build/test/check, CI) adds it
cmake -S "$SRC" -B "$T/plain" -DETK_SHARED_DIR="$2" >/dev/null 2>&1 || fail "plain cmake configure failed"
grep -q -- "-Wall -Wextra" "$T/plain/CMakeFiles/etkit_objs.dir/flags.make" || fail "plain build: warnings not enabled"
grep -q -- "-Werror" "$T/plain/CMakeFiles/etkit_objs.dir/flags.make" && fail "plain build gets -Werror"
cmake -S "$SRC" -B "$T/plain" -DETK_WERROR=ON >/dev/null 2>&1
grep -q -- "-Werror" "$T/plain/CMakeFiles/etkit_objs.dir/flags.make" || fail "-DETK_WERROR=ON does not add -Werror"
[ "$fails" = 0 ] && echo "cli_install: all passed"
exit $((fails > 0))
