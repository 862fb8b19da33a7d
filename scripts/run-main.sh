#!/usr/bin/env bash
# The main job on built-in defaults (make run): info + validate over the real traces in
# ../shared/data, or over the small bundled trace when ../shared is absent.
set -u
ETKIT=$1; SHARED=$2
rc=0
if [ -d "$SHARED/data" ]; then
  for w in "$SHARED/data/stage/gpt_small_dp2_tp2_pp2/workload" \
           "$SHARED/data/astra-sim-microbenchmarks/all_reduce/8npus_1MB/all_reduce"; do
    echo "== etkit info $w"; "$ETKIT" info "$w" || rc=1
    echo "== etkit validate $w"; "$ETKIT" validate "$w" || rc=1
  done
  t="$SHARED/data/chakra/converted_cnn_ddp.0.et"
  echo "== etkit info $t"; "$ETKIT" info "$t" || rc=1
  echo "== etkit validate $t (Chakra's converter leaves dangling control deps: findings expected)"
  "$ETKIT" validate "$t"; [ $? -le 1 ] || rc=1
else
  echo "($SHARED/data not found: using the bundled trace tests/data/small.0.et)"
  "$ETKIT" info tests/data/small.0.et || rc=1
  "$ETKIT" validate tests/data/small.0.et || rc=1
fi
exit $rc
