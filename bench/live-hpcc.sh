#!/usr/bin/env bash
# live-hpcc.sh — Debian's hpcc, unmodified, under etkit live on more ranks than CI runs
# (bench/RESULTS.md "s23-live"): tests/live/hpcc.sh with N = 8, 16, 32, 64 by default (a P x Q
# grid as square as N allows, every pair of GPUs its own link: alpha = 1 us, B = 100 GB/s), each
# run's wall time and its ping-pong and ring latency and bandwidth against the model
# (tests/live/hpcc.sh's header). A run stops after HPCC_TIMEOUT seconds (default 1,800).
# usage: bash bench/live-hpcc.sh [build/etkit] [N...]
set -u
ETKIT=${1:-build/etkit}
shift $(( $# > 0 ? 1 : 0 ))
[ $# -gt 0 ] || set -- 8 16 32 64
HPCC_TIMEOUT=${HPCC_TIMEOUT:-1800} exec bash "$(dirname "$0")/../tests/live/hpcc.sh" "$ETKIT" "$@"
