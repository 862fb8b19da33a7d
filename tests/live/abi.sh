#!/usr/bin/env bash
# abi.sh — the stand-ins against the real CUDA 13 / NCCL libraries and headers (issue #11):
# same sonames; libcudart/libcublas/libcublasLt symbols in the real version nodes; every function
# a stand-in exports is exported by the real library too (no misspelt entry point); the offsets
# and size of cudaDeviceProp in live/cuda_abi.h equal the real header's; installed, the command
# finds the stand-ins; etkit's own headers (live/include) agree with the real ones.
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
# etkit's own headers (live/include: cuda_runtime.h, nccl.h, cublas_v2.h, what the tests/live
# programs use): (1) every prototype, redeclared after the real headers, compiles (a different
# return or parameter type is "conflicting types"); (2) every constant and type size they
# define equals the real one; (3) every function they declare is exported by a stand-in.
OWN=$HERE/../../live/include
grep -h '^ETK_[A-Z]*_FN ' "$OWN"/*.h | sed 's/^ETK_[A-Z]*_FN /extern /' >"$T/protos.h"
printf '#include <cuda_runtime.h>\n#include <cublas_v2.h>\n#include <nccl.h>\n#include "protos.h"\n' >"$T/protos.c"
if cc -std=c11 -fsyntax-only -Werror -I"$CUDA/include" -I"$T" "$T/protos.c" >"$T/protos.log" 2>&1; then
  ok "own headers: $(wc -l <"$T/protos.h") prototypes agree with the real headers"
else
  fail "own headers: prototypes differ from the real ones: $(grep -m3 error "$T/protos.log" | tr '\n' ' ')"
fi
names=$(sed -n 's/^ *\(\(cuda\|CUDA_\|CUBLAS_\|nccl\)[A-Za-z0-9_]*\) *=.*/\1/p; s/^#define \(\(cuda\|NCCL_\)[A-Za-z0-9_]*\) .*/\1/p' \
  "$OWN"/*.h; grep -ho '\b\(ncclInt\|ncclChar\|ncclHalf\|ncclFloat\|ncclDouble\)\b *=' "$OWN"/nccl.h | tr -d ' =')
{ printf '#include <stdio.h>\n#include <stddef.h>\n#include <cuda_runtime.h>\n#include <cublas_v2.h>\n#include <nccl.h>\nint main(void)\n{\n'
  for k in $(printf '%s\n' $names | sort -u); do printf '    printf("%s %%lld\\n", (long long)(size_t)(%s));\n' "$k" "$k"; done
  for ty in cudaError_t cudaStream_t cudaEvent_t ncclComm_t ncclUniqueId ncclResult_t ncclDataType_t ncclRedOp_t \
            cublasHandle_t cublasStatus_t cublasOperation_t cudaDataType cublasComputeType_t cublasGemmAlgo_t; do
    printf '    printf("sizeof(%s) %%zu\\n", sizeof(%s));\n' "$ty" "$ty"; done
  printf '    return 0;\n}\n'; } >"$T/consts.c"
if cc -std=c11 -I"$CUDA/include" -o "$T/c_real" "$T/consts.c" >"$T/c.log" 2>&1 &&
   cc -std=c11 -I"$OWN" -o "$T/c_own" "$T/consts.c" >>"$T/c.log" 2>&1; then
  if cmp -s <("$T/c_real") <("$T/c_own"); then
    ok "own headers: $(grep -vc sizeof <("$T/c_own")) constants and $(grep -c sizeof <("$T/c_own")) type sizes equal the real ones"
  else fail "own headers: constants differ: $(diff <("$T/c_real") <("$T/c_own") | grep '^[<>]' | head -6 | tr '\n' ' ')"; fi
else fail "own headers: cannot build the constants check: $(head -3 "$T/c.log")"; fi
missing=""
for f in $(sed 's/(.*//; s/.*[ *]//' "$T/protos.h"); do
  nm -D --defined-only "$LIB"/lib*.so* 2>/dev/null | grep -qw "$f" || missing="$missing $f"
done
[ -z "$missing" ] && ok "own headers: every declared function is exported by a stand-in" ||
  fail "own headers: not exported by the stand-ins:$missing"
# installed: the stand-ins go to <libdir>/etkit/live and the installed command finds them
BUILD=$(cd "$(dirname "$ETKIT")" && pwd)
DESTDIR=$T/dest cmake --install "$BUILD" --prefix /opt/etkit-live-test >"$T/install.log" 2>&1 || fail "install: $(tail -3 "$T/install.log")"
n=$(find "$T/dest" -path '*/etkit/live/*' -name 'lib*.so*' | wc -l)
[ "$n" -ge 5 ] && ok "installed: $n stand-in libraries under <libdir>/etkit/live" || fail "installed stand-ins: $n"
"$T/dest/opt/etkit-live-test/bin/etkit" live --ranks 1 -- true >"$T/out" 2>&1 && grep -q "step time" "$T/out" &&
  ok "the installed etkit live finds them" || fail "installed etkit live: $(tail -3 "$T/out")"
exit $((fails > 0))
