#!/usr/bin/env bash
# Seeds for fuzz_live_kernels: hand-written kernel tables with every line form (the tables of
# tests/live/*.sh are written inline by those scripts). Args: shared dir, output dir.
set -eu
out=$2
mkdir -p "$out"
printf '# comment\n*gemm* flops 1e12 bytes 4e9\n_Z6kernelPfi ns 1500 # trailing\n\n[a-c]?x* ns 1\n* flops 0 bytes 1\n' >"$out/forms"
printf '_Z*straggle* ns 250000\n_Z*compute* flops 2.5e11 bytes 1e8\n' >"$out/dp_train"
printf 'flash_fwd* ns 1e15\n*\tflops\t1e20\tbytes\t1e18\r\n' >"$out/limits"
