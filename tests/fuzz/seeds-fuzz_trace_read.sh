#!/usr/bin/env bash
# Seeds for fuzz_trace_read: the small real .et files of ../shared/data (ASTRA-sim
# microbenchmarks, STAGE, Chakra's converter output), plus a gzip-compressed one.
# Files above 256 KiB are left out: they would make every fuzz input that large.
set -eu
SHARED=$1; OUT=$2
mkdir -p "$OUT"
i=0
while IFS= read -r f; do
  cp "$f" "$OUT/seed_$i.et"; i=$((i + 1))
done < <(find "$SHARED/data" -name '*.et' -size -256k | sort | awk 'NR % 4 == 1')
first=$(find "$SHARED/data/astra-sim-microbenchmarks" -name '*.et' | sort | head -1)
gzip -c "$first" > "$OUT/seed_gz.et"
