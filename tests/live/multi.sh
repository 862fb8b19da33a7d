#!/usr/bin/env bash
# multi.sh — issue #11: one process driving several GPUs (nccl-tests' single-process mode,
# nccl_multi.cu). On tests/live/ring8.yaml (8 GPUs, ring, alpha = 1000 ns, B = 100 GB/s):
#   --ranks 1 --gpus-per-process 8, ncclCommInitAll, every collective grouped over the 8
#     communicators: each time equals the closed form of docs/live.md for n = 8
#     (all-reduce 2(n-1)a + 2(n-1)/n S/B, all-gather and reduce-scatter (n-1)a + (n-1)/n S/B);
#   --ranks 2 --gpus-per-process 4, ncclCommInitRank per GPU inside ncclGroupStart/End: the same
#     times, and `etkit sim` of its record the same step time;
#   --gpus-per-process 17: a usage error.
# Built with nvcc -cudart shared and with a C compiler against the CUDA headers (where the toolkit
# is) and with a C compiler against etkit's own headers (live/include; everywhere).
# usage: bash tests/live/multi.sh <etkit>
. "$(dirname "$0")/livelib.sh"
for how in $CUDA_HOWS; do
  if [ $how = nvcc ]; then cuda_build nvcc "$T/multi_nvcc" "$HERE/nccl_multi.cu" -lnccl
  else cuda_build $how "$T/multi_$how" "$HERE/nccl_multi.cu" -lcudart -lnccl; fi
done
check() { # FILE LABEL: every line equals the closed form
  local n bad
  n=$(grep -vc '^#' "$1")
  [ "$n" = 27 ] || { fail "$2: $n result lines, want 27"; return; }
  bad=$(awk '!/^#/ {
      S = $2; a = 1000; B = 100; n = 8
      if ($1 == "all_reduce") t = 2*(n-1)*a + 2*(n-1)/n*S/B
      else t = (n-1)*a + (n-1)/n*S/B
      t = int(t + 0.5)
      dt = $3 - t; if (dt < 0) dt = -dt
      if (dt > 1 + 1e-6 * t) print $0 " (want " t " ns)"
    }' "$1")
  [ -z "$bad" ] && ok "$2: $n times equal the closed form" || fail "$2: $bad"
}
for how in $CUDA_HOWS; do
  "$ETKIT" live --cluster "$HERE/ring8.yaml" --ranks 1 --gpus-per-process 8 --cpu-scale 0 \
    -- "$T/multi_$how" all >"$T/all_$how" 2>"$T/eall_$how" || { fail "$how all: $(tail -3 "$T/eall_$how")"; continue; }
  head -1 "$T/all_$how"
  check "$T/all_$how" "$how: 1 process x 8 GPUs, ncclCommInitAll"
  grep 'all_reduce 1073741824' "$T/all_$how"
  "$ETKIT" live --cluster "$HERE/ring8.yaml" --ranks 2 --gpus-per-process 4 --cpu-scale 0 --record "$T/rec_$how" \
    -- "$T/multi_$how" group >"$T/grp_$how" 2>"$T/egrp_$how" || { fail "$how group: $(tail -3 "$T/egrp_$how")"; continue; }
  head -1 "$T/grp_$how"
  check "$T/grp_$how" "$how: 2 processes x 4 GPUs, grouped ncclCommInitRank"
  live=$(sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$T/egrp_$how")
  sim=$("$ETKIT" sim "$T/rec_$how" --cluster "$HERE/ring8.yaml" 2>&1 | sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p')
  [ -n "$live" ] && [ "$live" = "$sim" ] && ok "$how: etkit sim of the record: step $sim ns = live" ||
    fail "$how: live step '$live' ns, etkit sim of the record '$sim' ns"
  grep -q '^ranks *8 ' "$T/egrp_$how" && ok "$how: the report has 8 ranks" || fail "$how: $(grep '^ranks' "$T/egrp_$how")"
done
# usage: --gpus-per-process out of range
"$ETKIT" live --ranks 1 --gpus-per-process 17 -- true >"$T/u" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- '--gpus-per-process wants 1 to 16, got 17' "$T/u" && ok "--gpus-per-process 17: usage error" ||
  fail "--gpus-per-process 17: exit $rc, $(cat "$T/u")"
exit $((fails > 0))
