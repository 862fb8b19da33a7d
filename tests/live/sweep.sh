#!/usr/bin/env bash
# sweep.sh — issue #11 test (a): the nccl-tests-style sweep (nccl_sweep.cu), built with nvcc
# -cudart shared, with a C compiler against the real CUDA headers (both where the toolkit is) and
# with a C compiler against etkit's own headers (live/include; everywhere), runs under
# `etkit live --ranks 8` on tests/live/ring8.yaml; every time and busbw it prints equals the
# closed form of docs/live.md (ring algorithm, n = 8, alpha = 1000 ns, B = 100 GB/s):
#   all-reduce 2(n-1)a + 2(n-1)/n S/B, all-gather and reduce-scatter (n-1)a + (n-1)/n S/B,
#   all-to-all (n-1)a + (n-1)/2 S/B, send/recv a + S/B  (S = nccl-tests size, rounded to the ns)
# and the recorded run (--record) replayed by `etkit sim` gives the same step time to the ns.
# usage: bash tests/live/sweep.sh <etkit>
. "$(dirname "$0")/livelib.sh"
for how in $CUDA_HOWS; do
  if [ $how = nvcc ]; then cuda_build nvcc "$T/sweep_nvcc" "$HERE/nccl_sweep.cu" -lnccl
  else cuda_build $how "$T/sweep_$how" "$HERE/nccl_sweep.cu" -lcudart -lnccl; fi
done
for how in $CUDA_HOWS; do
  "$ETKIT" live --cluster "$HERE/ring8.yaml" --ranks 8 --cpu-scale 0 --record "$T/rec_$how" \
    -- "$T/sweep_$how" >"$T/out_$how" 2>"$T/err_$how"
  rc=$?
  [ $rc = 0 ] || { fail "$how: etkit live exited $rc: $(tail -5 "$T/err_$how")"; continue; }
  head -1 "$T/out_$how"
  n=$(grep -vc '^#' "$T/out_$how")
  [ "$n" = 50 ] || fail "$how: $n result lines, want 50"
  bad=$(awk '!/^#/ {
      S = $2; a = 1000; B = 100; n = 8
      if ($1 == "all_reduce") t = 2*(n-1)*a + 2*(n-1)/n*S/B
      else if ($1 == "all_gather" || $1 == "reduce_scatter") t = (n-1)*a + (n-1)/n*S/B
      else if ($1 == "all_to_all") t = (n-1)*a + (n-1)/2*S/B
      else t = a + S/B
      t = int(t + 0.5)
      f = ($1 == "all_reduce") ? 2*(n-1)/n : ($1 == "sendrecv") ? 1 : (n-1)/n
      bus = S / t * f
      dt = $3 - t; if (dt < 0) dt = -dt
      db = $5 - bus; if (db < 0) db = -db
      # the program reads float milliseconds: 1e-6 relative, and 4-decimal printing
      if (dt > 1 + 1e-6 * t || db > 1e-4 + 1e-6 * bus) print $0 " (want " t " ns, busbw " bus ")"
    }' "$T/out_$how")
  [ -z "$bad" ] && ok "$how: $n times and busbw equal the closed form" || fail "$how: $bad"
  grep 'all_reduce 1073741824' "$T/out_$how"
  live=$(sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$T/err_$how")
  sim=$("$ETKIT" sim "$T/rec_$how" --cluster "$HERE/ring8.yaml" 2>&1 | sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p')
  [ -n "$live" ] && [ "$live" = "$sim" ] && ok "$how: etkit sim of the record: step $sim ns = live" ||
    fail "$how: live step '$live' ns, etkit sim of the record '$sim' ns"
done
exit $((fails > 0))
