#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target of the fuzz build for a bounded time and fails if any
# crashes, leaks, times out or reports undefined behaviour (the fuzz build stops at the first
# UBSan report: -fno-sanitize-recover=all). Inputs: the corpus kept in the repository
# (tests/fuzz/corpus/<target>/), the regression inputs (tests/fuzz/corpus-<target>/, replayed by
# tests/test_fuzz_regressions.c in `make check`) and seeds from ../shared/data. New inputs go to
# a scratch folder; with FUZZ_MERGE=1 they are merged (minimized) into tests/fuzz/corpus/<target>/.
# A crashing input is kept as $BUILD/fuzz-artifacts/<target>/crash-* : copy it into
# tests/fuzz/corpus-<target>/ as a regression seed once fixed.
# usage: run.sh BUILD SHARED SECONDS_EACH [TARGET...]
# FUZZ_TIMEOUT (seconds, default 10): libFuzzer's per-input limit, which it measures in wall-clock
# time: on a loaded machine (a campaign beside other work) raise it, or an input that takes 0.3 s
# of CPU is reported as a timeout when the process gets a tenth of a core.
set -u
BUILD=$1; SHARED=$2; SECONDS_EACH=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# ASan's allocator tuned for many short executions (same checks): with the default 256 MB
# quarantine and release-to-OS every 5 s, each input's allocations landed on freshly faulted pages
# (kernel page faults were 20-33% of the profile); 32 MB still holds freed memory far longer than
# one input lives, so a use after free within an input is caught as before. Allocation and free
# stacks in reports keep 10 frames (30 by default; recording them was 5-8% of the time).
# 1.1x-2.1x more executions per CPU second (bench/RESULTS.md, s22-rel).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=32:allocator_release_to_os_interval_ms=-1:malloc_context_size=10}
# -max_len per target, fit for the format (libFuzzer's default is the largest seed: the 100 KB
# traces of ../shared/data made every mutation that large): a Node message, a groups file and a
# model or cluster YAML are small; a trace big enough for dozens of nodes and a JSON trace of a
# few hundred lines cover the readers' paths. Inputs past it are cut when loaded.
max_len_of() {
  case $1 in
    fuzz_node_codec|fuzz_groups|fuzz_live_kernels) echo 1024 ;;
    fuzz_model|fuzz_cluster|fuzz_astra|fuzz_calib) echo 4096 ;;
    fuzz_sim|fuzz_json_import|fuzz_convert) echo 8192 ;;
    *) echo 16384 ;;   # fuzz_trace_read, fuzz_validate, fuzz_synth_model
  esac
}
failed=()
summary=()
for f in "$BUILD"/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  work=$(mktemp -d)
  art="$BUILD/fuzz-artifacts/$name"; mkdir -p "$art"
  mkdir -p "$here/corpus/$name"
  seeds=("$here/corpus/$name")
  [ -d "$here/corpus-$name" ] && seeds+=("$here/corpus-$name")
  [ -f "$here/seeds-$name.sh" ] && bash "$here/seeds-$name.sh" "$SHARED" "$work/seeds" && seeds+=("$work/seeds")
  mkdir -p "$work/new"
  max_len=$(max_len_of "$name")
  echo "== $name for ${SECONDS_EACH}s (-max_len=$max_len)"
  "$f" -max_total_time="$SECONDS_EACH" -max_len="$max_len" -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-10}" -print_final_stats=1 \
    -artifact_prefix="$art/" "$work/new" "${seeds[@]}" 2>&1 | tee "$work/log" | grep -E "^(#[0-9]+ +DONE|==[0-9]+==ERROR|SUMMARY|.*runtime error|stat::number_of_executed_units)" 
  rc=${PIPESTATUS[0]}
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/log" | tail -1)
  summary+=("$name ${execs:-?} executions in ${secs:-$SECONDS_EACH}s, exit $rc")
  if [ "$rc" != 0 ] || grep -q "runtime error:" "$work/log"; then
    failed+=("$name")
    tail -40 "$work/log"
  elif [ "${FUZZ_MERGE:-0}" = 1 ]; then
    "$f" -merge=1 -max_len="$max_len" "$here/corpus/$name" "$work/new" >/dev/null 2>&1 || echo "merge of $name failed"
  fi
  rm -rf "$work"
done
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "make fuzz: FAILED: ${failed[*]} (inputs in $BUILD/fuzz-artifacts/)"
  exit 1
fi
echo "make fuzz: no crash, leak, timeout or UBSan report"
