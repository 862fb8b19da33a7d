#!/usr/bin/env bash
# Flow-model benchmark (bench_flow.c): a 16,384-GPU all-reduce, 3,072 concurrent and staggered
# cross-pod sends on the Llama 3 fabric, a 512-GPU all-to-all on the SuperPOD fabric.
# Args: build dir, shared dir.
set -eu
BUILD=$1
"$BUILD/bench_flow"
