#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target in the fuzz build for a bounded time, seeded with
# ../shared/data and tests/fuzz/corpus-<target>/ (regression inputs found earlier).
set -eu
BUILD=$1; SHARED=$2; SECONDS_EACH=$3
here=$(cd "$(dirname "$0")" && pwd)
for f in "$BUILD"/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  work=$(mktemp -d)
  seeds=()
  [ -d "$here/corpus-$name" ] && seeds+=("$here/corpus-$name")
  [ -f "$here/seeds-$name.sh" ] && bash "$here/seeds-$name.sh" "$SHARED" "$work/seeds" && seeds+=("$work/seeds")
  echo "== $name for ${SECONDS_EACH}s"
  "$f" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$work" "${seeds[@]}"
  rm -rf "$work"
done
