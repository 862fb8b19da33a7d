#!/usr/bin/env bash
# cli_report.sh — etkit report and --html through the command (also under the sanitizers, where
# the Python tests of the page, python/tests/test_report.py, do not run): the page from --html
# equals the one etkit report makes from the same run's JSON and timeline; its step time and
# bars are the JSON's; bad inputs name the file and the field, exit 2 and write nothing.
# usage: bash tests/cli_report.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect

ok() { "$ETKIT" "$@" >"$T/out" 2>&1 || fail "etkit $* exited $?: $(head -3 "$T/out")"; }
PLAN=(--model llama2-7b --layers 4 --pp 2 --dp 1 --seq 1024 --global-batch 8 --cluster dgx-a100 --gpus 2)
ok run "${PLAN[@]}" --json -o "$T/run.json" --timeline "$T/tl.json" --html "$T/page.html"
ok report "$T/run.json" --timeline "$T/tl.json" -o "$T/again.html"
cmp -s "$T/page.html" "$T/again.html" || fail "report from the JSON and timeline differs from --html"
step=$(sed -n 's/^ *"step_ns": \([0-9]*\),$/\1/p' "$T/run.json")
[ -n "$step" ] || fail "no step_ns in the JSON"
grep -q "<td id=\"step\" data-ns=\"$step\">" "$T/page.html" || fail "the page's step time is not the JSON's $step"
[ "$(grep -c '<svg' "$T/page.html")" = 3 ] || fail "want 3 charts (ranks, Gantt, memory)"
[ "$(grep -c 'data-kind=' "$T/page.html")" = 10 ] || fail "want 5 bars for each of the 2 ranks"
grep -q "<script" "$T/page.html" && fail "the page has a script"
# sim --html on a written workload: the same kind of page
expect 0 "wrote" gen --model llama2-7b --layers 2 --dp 2 --seq 512 --global-batch 2 -o "$T/w"
ok sim "$T/w" --cluster dgx-a100 --gpus 2 --html "$T/sim.html" --quiet
grep -q 'id="gantt"' "$T/sim.html" || fail "sim --html: no Gantt chart"
# bad inputs
echo '{"ranks": []}' >"$T/bad.json"
expect 2 "bad.json: field 'step_ns' missing or not a number" report "$T/bad.json" -o "$T/bad.html"
[ -e "$T/bad.html" ] && fail "a page was written for a bad input"
echo '{' >"$T/broken.json"
expect 2 "broken.json:[0-9]*: " report "$T/broken.json" -o "$T/bad.html"
expect 2 "timeline: no traceEvents array" report "$T/run.json" --timeline "$T/run.json" -o "$T/bad.html"
expect 2 "-o OUT.html is required" report "$T/run.json"
expect 2 "missing input file" report -o "$T/bad.html"
ls "$T" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$T")"
exit $((fails > 0))
