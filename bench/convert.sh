#!/usr/bin/env bash
# bench/convert.sh BUILD SHARED — converter memory (peak RSS / input size, issue 5: <= 4x) and
# throughput on a synthetic ~200 MB host trace, alone and with its Kineto trace (one process
# each so the peaks are separate). BENCH_CONVERT_MB overrides the size.
set -eu
BUILD=$1
MB=${BENCH_CONVERT_MB:-200}
"$BUILD/bench_convert" "$MB" "${TMPDIR:-/tmp}" host
"$BUILD/bench_convert" "$MB" "${TMPDIR:-/tmp}"
