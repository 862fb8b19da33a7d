#!/usr/bin/env bash
# Seeds for fuzz_astra: the network YAML + NUL + system JSON pairs of ASTRA-sim's own cases
# (shared/data/astra-sim-cases/cases.tsv). Args: shared dir, output dir.
set -eu
shared=$1 out=$2
mkdir -p "$out"
cases=$shared/data/astra-sim-cases
[ -f "$cases/cases.tsv" ] || exit 0
i=0
tail -n +2 "$cases/cases.tsv" | cut -f3,4 | sort -u | while IFS=$'\t' read -r net sys; do
  [ -f "$cases/$net" ] && [ -f "$cases/$sys" ] || continue
  i=$((i + 1))
  { cat "$cases/$net"; printf '\0'; cat "$cases/$sys"; } >"$out/pair$i"
done
