#!/usr/bin/env bash
# make bench: runs every bench/<area>.sh (each gets the build dir and the shared dir) and
# prints their figures. Record figures in bench/RESULTS.md with the command that made them.
set -u
BUILD=$1; SHARED=$2
rc=0
for s in "$(dirname "$0")"/*.sh; do
  [ "$(basename "$s")" = run.sh ] && continue
  echo "== $s"
  bash "$s" "$BUILD" "$SHARED" || rc=1
done
exit $rc
