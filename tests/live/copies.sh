#!/usr/bin/env bash
# copies.sh — copy engines (copies.c, one rank of an H100: PCIe Gen5 x16, 64 GB/s per direction;
# HBM 3,350 GB/s, the preset). A host<->device copy of 8 MiB takes 8,388,608 B / 64 GB/s =
# 131,072 ns, a memset of 256 MiB 268,435,456 B / 3,350 GB/s = 80,129.99 -> 80,130 ns (rounded
# up). On two streams a copy and a memset overlap: max = 131,072 (one after the other before s25:
# 211,202); two copies host to device queue on the one engine of that direction: 262,144; a copy
# each way runs on both engines at once: 131,072; a copy and a memset on one stream keep the
# stream's order: 211,202. `etkit sim` of the record gives the live step time (the copies carry
# the attribute copy_engine). Built against the toolkit's headers where installed, else etkit's.
# usage: bash tests/live/copies.sh <etkit>
. "$(dirname "$0")/livelib.sh"
cuda_build $CUDA_CC "$T/copies" "$HERE/copies.c" -lcudart
sed 's/size: 8/size: 1/; s/live-ring8/live-ring1/' "$HERE/ring8.yaml" >"$T/ring1.yaml"
# --record is an all-or-nothing set (issue #18, util/outset.c as gen's): ranks of an earlier,
# larger record and a dead writer's temporary folder are removed, unrelated names kept
( exit 0 ) & dead=$!; wait $dead
touch "$T/rec.3.et" "$T/rec.3.et.keep"; mkdir "$T/.rec.etkit-tmp.$dead"; touch "$T/.rec.etkit-tmp.$dead/rec.0.et"
timeout 60 "$ETKIT" live --cluster "$T/ring1.yaml" --ranks 1 --cpu-scale 0 --record "$T/rec" -- "$T/copies" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || { fail "etkit live exited $rc: $(tail -3 "$T/err")"; exit 1; }
left=$(cd "$T" && ls -A | grep '^\.\?rec' | tr '\n' ' ')
[ "$left" = "rec.0.et rec.3.et.keep " ] && ok "--record: stale rank and dead writer's folder removed ($left)" ||
  fail "--record left: '$left' (want rec.0.et rec.3.et.keep)"
# a record into a folder that cannot exist is refused before the program runs
: >"$T/afile"
timeout 60 "$ETKIT" live --cluster "$T/ring1.yaml" --ranks 1 --cpu-scale 0 --record "$T/afile/r" -- "$T/copies" >"$T/out2" 2>&1
rc=$?
[ $rc = 2 ] && grep -qF "$T/afile is not a folder" "$T/out2" && ! grep -q '^h2d ' "$T/out2" &&
  ok "--record into a file's folder: exit 2 before the run" || fail "--record into a file's folder: exit $rc: $(head -3 "$T/out2")"
read -r _ h2d _ ms _ h2d_ms _ h2d_h2d _ h2d_d2h _ same < <(grep '^h2d ' "$T/out")
check() { [ "$2" = "$3" ] && ok "$1 = $2 ns" || fail "$1 = $2 ns, want $3"; }
check "host to device, 8 MiB alone (8,388,608 B / 64 GB/s)" "$h2d" 131072
check "memset, 256 MiB alone (268,435,456 B / 3,350 GB/s, rounded up)" "$ms" 80130
check "copy on s1, memset on s2: a copy engine beside the SMs, max" "$h2d_ms" 131072
check "two host-to-device copies on s1, s2: one engine per direction, they queue" "$h2d_h2d" 262144
check "a copy each way on s1, s2: both engines at once" "$h2d_d2h" 131072
check "copy then memset on one stream: the stream's order, the sum" "$same" $((131072 + 80130))
live=$(sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$T/err" | tr -d ,)
"$ETKIT" sim "$T/rec" --cluster "$T/ring1.yaml" >"$T/sim" 2>&1 || fail "etkit sim of the record exited $?"
sim=$(sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$T/sim" | tr -d ,)
[ -n "$live" ] && [ "$live" = "$sim" ] && ok "etkit sim of the record: step $sim ns = live" ||
  fail "live step '$live' ns, etkit sim of the record '$sim' ns"
exit $((fails > 0))
