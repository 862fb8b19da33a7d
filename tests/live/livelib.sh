# livelib.sh — shared by the live-mode tests (tests/live/*.sh; not itself a test): ETKIT (the
# first argument), a scratch folder T, fail(), and cuda_build which compiles a test program with
# nvcc -cudart shared, a C compiler against the toolkit's headers, or a C compiler against
# etkit's own headers (live/include; no toolkit needed). Without the CUDA toolkit at $CUDA
# (default /usr/local/cuda) the tests build with the own headers only; each says how it built.
set -u
ETKIT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
CUDA=${CUDA:-/usr/local/cuda}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
have_cuda() { [ -x "$CUDA/bin/nvcc" ] && [ -f "$CUDA/include/cuda_runtime.h" ]; }
need_cuda() {
  if ! have_cuda; then
    echo "skipped: no CUDA toolkit at $CUDA (nvcc and headers are needed to build the test programs)"
    exit 77
  fi
}
# The ways a test program can be built here: nvcc and the toolkit's headers (cc) where the
# toolkit is, etkit's own headers (own, live/include) everywhere. CUDA_HOWS: all of them;
# CUDA_CC: the C build (the toolkit's headers where it is installed, else etkit's own).
if have_cuda; then CUDA_HOWS="nvcc cc own" CUDA_CC=cc; else CUDA_HOWS="own" CUDA_CC=own; fi
OWN_INC=$(cd "$HERE/../../live/include" && pwd)
STANDINS=$(cd "$(dirname "$ETKIT")/live" 2>/dev/null && pwd)
# cuda_build nvcc|cc|own OUT SRC LIBS... (LIBS: -lcudart, -lnccl, -lcublas)
#   nvcc: nvcc -cudart shared; cc: a C compiler against the toolkit's headers and libraries;
#   own: a C compiler against etkit's own headers, linked against the stand-ins themselves
#   (their sonames are the real ones, so the program is the same as one built with the toolkit)
cuda_build() {
  local how=$1 out=$2 src=$3; shift 3
  if [ "$how" = nvcc ]; then
    "$CUDA/bin/nvcc" -cudart shared -o "$out" "$src" "$@" >"$T/build.log" 2>&1
  elif [ "$how" = cc ]; then
    cc -x c -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -I"$CUDA/include" -o "$out" "$src" -L"$CUDA/lib64" "$@" >"$T/build.log" 2>&1
  else
    local libs=() l
    for l in "$@"; do
      case $l in
        -lcudart) libs+=(-l:libcudart.so.13) ;;
        -lnccl) libs+=(-l:libnccl.so.2 -l:libcudart.so.13) ;;
        -lcublas) libs+=(-l:libcublas.so.13 -l:libcudart.so.13) ;;
        *) libs+=("$l") ;;
      esac
    done
    cc -x c -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -DETK_WANT_OWN_HEADERS -I"$OWN_INC" -o "$out" "$src" -L"$STANDINS" "${libs[@]}" \
      >"$T/build.log" 2>&1
  fi || { echo "cannot build $src with $how:"; cat "$T/build.log"; exit 1; }
  case $how in
    nvcc) echo "built $(basename "$src") with nvcc -cudart shared (the toolkit's headers)" ;;
    cc) echo "built $(basename "$src") with cc against the toolkit's headers ($CUDA/include)" ;;
    *) echo "built $(basename "$src") with cc against etkit's own headers (live/include)" ;;
  esac
}
