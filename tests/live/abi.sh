#!/usr/bin/env bash
# abi.sh — the stand-ins against the real CUDA 13 / NCCL libraries and headers (issue #11):
# same sonames; libcudart/libcublas/libcublasLt symbols in the real version nodes; every function
# a stand-in exports is exported by the real library too (no misspelt entry point); the offsets
# and size of cudaDeviceProp in live/cuda_abi.h equal the real header's; installed, the command
# finds the stand-ins.
# usage: bash tests/live/abi.sh <etkit>
. "$(dirname "$0")/livelib.sh"
need_cuda
LIB=$(dirname "$ETKIT")/live
for pair in libcudart.so.13:libcudart.so.13 libnccl.so.2:Base libcublas.so.13:libcublas.so.13 \
            libcublasLt.so.13:libcublasLt.so.13; do
  lib=${pair%%:*} node=${pair#*:}
  mine=$LIB/$lib real=$CUDA/lib64/$lib
  [ -f "$mine" ] || { fail "$mine missing"; continue; }
  so=$(readelf -d "$mine" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [ "$so" = "$lib" ] && ok "$lib: soname $so" || fail "$lib: soname '$so'"
  # exported functions: name and version node
  objdump -T "$mine" | awk '$4 == ".text" {print $6, $7}' | sort >"$T/mine"
  bad=$(awk -v n="$node" '{ v = ($2 == "") ? "Base" : $1; s = ($2 == "") ? $1 : $2; if (v != n) print s " in " v }' "$T/mine" | head -3)
  [ -z "$bad" ] && ok "$lib: $(wc -l <"$T/mine") functions in version node $node" || fail "$lib: $bad"
  if [ -f "$real" ]; then
    objdump -T "$real" | awk '$4 == ".text" {print ($7 == "") ? $6 : $7}' | sort -u >"$T/real"
    awk '{print ($2 == "") ? $1 : $2}' "$T/mine" | grep -v '^etl_' | sort -u >"$T/mine_names"
    extra=$(comm -23 "$T/mine_names" "$T/real" | head -5 | tr '\n' ' ')
    [ -z "$extra" ] && ok "$lib: every export exists in the real library" || fail "$lib: not in $real: $extra"
  fi
done
cat >"$T/props.c" <<'C'
#include <stddef.h>
#include <stdio.h>
#ifdef REAL
#include <cuda_runtime_api.h>
#else
#include "live/cuda_abi.h"
#endif
#define F(x) printf(#x " %zu\n", offsetof(struct cudaDeviceProp, x))
int main(void)
{
    printf("size %zu\n", sizeof(struct cudaDeviceProp));
    F(name); F(uuid); F(totalGlobalMem); F(sharedMemPerBlock); F(regsPerBlock); F(warpSize);
    F(maxThreadsPerBlock); F(maxThreadsDim); F(maxGridSize); F(totalConstMem); F(major); F(minor);
    F(multiProcessorCount);
    printf("%d %d %d %d %d\n", (int)cudaErrorMemoryAllocation, (int)cudaErrorInvalidDevice,
           (int)cudaErrorNotReady, (int)cudaDevAttrMultiProcessorCount, (int)cudaDevAttrComputeCapabilityMajor);
    return 0;
}
C
cc -DREAL -I"$CUDA/include" -o "$T/real" "$T/props.c" && cc -I"$HERE/../.." -o "$T/mine" "$T/props.c" ||
  fail "cannot build the cudaDeviceProp check"
if [ -x "$T/real" ] && [ -x "$T/mine" ]; then
  if cmp -s <("$T/real") <("$T/mine"); then ok "cudaDeviceProp: $("$T/real" | head -1), 13 field offsets and 5 enum values equal"
  else fail "cudaDeviceProp differs: $(diff <("$T/real") <("$T/mine") | tr '\n' ' ')"; fi
fi
# installed: the stand-ins go to <libdir>/etkit/live and the installed command finds them
BUILD=$(cd "$(dirname "$ETKIT")" && pwd)
DESTDIR=$T/dest cmake --install "$BUILD" --prefix /opt/etkit-live-test >"$T/install.log" 2>&1 || fail "install: $(tail -3 "$T/install.log")"
n=$(find "$T/dest" -path '*/etkit/live/*' -name 'lib*.so*' | wc -l)
[ "$n" -ge 5 ] && ok "installed: $n stand-in libraries under <libdir>/etkit/live" || fail "installed stand-ins: $n"
"$T/dest/opt/etkit-live-test/bin/etkit" live --ranks 1 -- true >"$T/out" 2>&1 && grep -q "step time" "$T/out" &&
  ok "the installed etkit live finds them" || fail "installed etkit live: $(tail -3 "$T/out")"
exit $((fails > 0))
