#!/usr/bin/env bash
# Network-model benchmark (bench_net.c): 1 MiB halving-doubling all-reduce on 4,096 and
# 16,384 ranks (set-up + cost, time and peak memory) and the cost-query rate.
# Args: build dir, shared dir.
set -eu
BUILD=$1
"$BUILD/bench_net"
