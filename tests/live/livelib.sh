# livelib.sh — shared by the live-mode tests (tests/live/*.sh; not itself a test): ETKIT (the
# first argument), a scratch folder T, fail(), and cuda_build which compiles a test program with
# nvcc -cudart shared or a C compiler against the toolkit's headers. Without the CUDA toolkit at
# $CUDA (default /usr/local/cuda) a test prints why and exits 77 (ctest: skipped).
set -u
ETKIT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
CUDA=${CUDA:-/usr/local/cuda}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
need_cuda() {
  if [ ! -x "$CUDA/bin/nvcc" ] || [ ! -f "$CUDA/include/cuda_runtime.h" ]; then
    echo "skipped: no CUDA toolkit at $CUDA (nvcc and headers are needed to build the test programs)"
    exit 77
  fi
}
# cuda_build nvcc|cc OUT SRC LIBS...
cuda_build() {
  local how=$1 out=$2 src=$3; shift 3
  if [ "$how" = nvcc ]; then
    "$CUDA/bin/nvcc" -cudart shared -o "$out" "$src" "$@" >"$T/build.log" 2>&1
  else
    cc -x c -std=c11 -Wall -I"$CUDA/include" -o "$out" "$src" -L"$CUDA/lib64" "$@" >"$T/build.log" 2>&1
  fi || { echo "cannot build $src with $how:"; cat "$T/build.log"; exit 1; }
  echo "built $(basename "$src") with $how"
}
