#!/usr/bin/env bash
# streams.sh — the legacy default stream's implicit synchronization (streams.c, 2 ranks of the
# 1 us / 100 GB/s ring): an all-reduce of 1 MiB alone takes 2a + S/B = 2,000 + 1,048,576 / 100
# = 12,486 ns; a memset of 64 MiB alone M = 67,108,864 B / 3,350 GB/s (the H100 preset's HBM) =
# 20,032.5 -> 20,033 ns. Issued on a
# blocking stream and on the legacy default stream, in either order, the second waits for the
# first: 12,486 + M; with a non-blocking stream they overlap (the comm and compute streams):
# max(12,486, M). cudaStreamPerThread is each thread's own (blocking) stream: the all-reduce
# from one thread and the memset from another overlap, max(12,486, M); both from one thread
# run one after the other, 12,486 + M. Built against the toolkit's headers where it is
# installed, else etkit's own.
# usage: bash tests/live/streams.sh <etkit>
. "$(dirname "$0")/livelib.sh"
cuda_build $CUDA_CC "$T/streams" "$HERE/streams.c" -lcudart -lnccl -lpthread
sed 's/size: 8/size: 2/; s/live-ring8/live-ring2/' "$HERE/ring8.yaml" >"$T/ring2.yaml"
timeout 60 "$ETKIT" live --cluster "$T/ring2.yaml" --ranks 2 --cpu-scale 0 -- "$T/streams" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || { fail "etkit live exited $rc: $(tail -3 "$T/err")"; exit 1; }
read -r _ ar _ ms _ b0 _ b1 _ n0 _ n1 _ p2 _ p1 < <(grep '^ar ' "$T/out")
echo "ar $ar ms $ms blk $b0 blk_rev $b1 nb $n0 nb_rev $n1 pt $p2 pt_one $p1"
check() { [ "$2" = "$3" ] && ok "$1 = $2 ns" || fail "$1 = $2 ns, want $3"; }
check "all-reduce alone (2a + S/B)" "$ar" 12486
check "memset alone (64 MiB / 3,350 GB/s, to the ns above)" "$ms" 20033
check "all-reduce on a blocking stream, then memset on the legacy stream" "$b0" $((ar + ms))
check "memset on the legacy stream, then all-reduce on a blocking stream" "$b1" $((ar + ms))
check "all-reduce on a non-blocking stream, then memset: overlap" "$n0" $((ar > ms ? ar : ms))
check "memset, then all-reduce on a non-blocking stream: overlap" "$n1" $((ar > ms ? ar : ms))
check "cudaStreamPerThread, all-reduce and memset from two threads: two streams, overlap" "$p2" $((ar > ms ? ar : ms))
check "cudaStreamPerThread, both from one thread: one stream, the sum" "$p1" $((ar + ms))
exit $((fails > 0))
