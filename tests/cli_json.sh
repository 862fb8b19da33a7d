#!/usr/bin/env bash
# cli_json.sh — `etkit json` and `etkit recode` from the command line, run by ctest as
#   bash tests/cli_json.sh <etkit> <shared-dir>
# One .et per folder of <shared-dir>/data: recode and et -> json -> et give the same bytes (cmp).
# The feeder form and the error paths: exit status and the message naming the problem.
set -u
ETKIT=$1; SHARED=$2
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect STATUS PATTERN cmd...: runs cmd, checks exit status and that stdout+stderr match PATTERN
expect() {
  local want=$1 pat=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want: $out"
  grep -qE -- "$pat" <<<"$out" || fail "'$*' output lacks /$pat/: $out"
}

# --- through the command line, on the first trace of each folder of <shared-dir>/data (14
# folders): recode and et -> json -> et give the same bytes. Every one of the 122 traces is
# recoded and round-tripped through JSON in-process by tests/test_recode.c and
# tests/test_json.c, which keeps this script fast under ASan.
n=0; lastdir=
while IFS= read -r f; do
  d=$(dirname "$f")
  [ "$d" = "$lastdir" ] && continue
  lastdir=$d; n=$((n + 1))
  "$ETKIT" recode -q "$f" -o "$T/b.et" && cmp -s "$T/b.et" "$f" || fail "recode differs for $f"
  "$ETKIT" json -q "$f" -o "$T/a.json" && "$ETKIT" json --to-et "$T/a.json" -o "$T/a.et" \
    && cmp -s "$T/a.et" "$f" || fail "et -> json -> et differs for $f"
done < <(find "$SHARED/data" -name '*.et' | sort)
[ "$n" -ge 14 ] || fail "only $n folders with .et files found under $SHARED/data (14 expected)"

# --- stdout output and the feeder form: node 217 of the CNN trace, as in Chakra's own
# json_feeder_cnn.0.json ({"Id": 217, ..., "NodeType": 4, "runtime": 28, "data_deps": [216], "is_cpu_op": true})
cnn=$SHARED/data/chakra/converted_cnn_ddp.0.et
"$ETKIT" json --feeder "$cnn" > "$T/feeder.json" || fail "json --feeder to stdout"
grep -qF '{"Id": 217, "Name": "aten::flatten_dense_tensors(1)", "NodeType": 4, "is_cpu_op": true, "runtime": 28, "data_deps": [216]}' \
  "$T/feeder.json" || fail "feeder node 217 not as in Chakra's feeder file"
[ "$(grep -c '"Id": ' "$T/feeder.json")" = 3664 ] || fail "feeder form should have 3664 nodes"
head -c 60 "$T/feeder.json" | grep -q '^{"workload_graph": \[' || fail "feeder document start"

# --- help and flags
expect 0 'example' "$ETKIT" json --help
expect 2 "unknown option '--bogus'" "$ETKIT" json --bogus "$cnn"
expect 2 'missing input file' "$ETKIT" json
expect 2 '--to-et needs -o' "$ETKIT" json --to-et "$T/a.json"
expect 2 '--feeder is an export form' "$ETKIT" json --to-et --feeder "$T/a.json" -o "$T/x.et"
expect 2 "one input file expected, got 'b.et' too" "$ETKIT" json a.et b.et

# --- importer errors name the file, the JSON path and what was expected
printf '{"format": "etkit-chakra-json", "version": 1,\n "nodes": [\n {"id": 1, "type": 4,}]}' > "$T/bad1.json"
expect 2 'bad1.json: line 3, column [0-9]+: malformed JSON' "$ETKIT" json --to-et "$T/bad1.json" -o "$T/x.et"
printf '{"format": "etkit-chakra-json", "version": 1, "nodes": [{"id": 1, "type": 4, "attr": [{"name": "n", "kind": "int64_val", "value": 1}, {"name": "s", "kind": "int64_val", "value": "big"}]}]}' > "$T/bad2.json"
expect 2 'bad2.json: nodes\[0\]\.attr\[1\]\.value: expected an integer in \[-9223372036854775808, 9223372036854775807\]' \
  "$ETKIT" json --to-et "$T/bad2.json" -o "$T/x.et"
printf '{"workload_graph": []}' > "$T/bad3.json"
expect 2 "bad3.json: \\(top level\\): this is Chakra's JSON-feeder form" "$ETKIT" json --to-et "$T/bad3.json" -o "$T/x.et"
[ -e "$T/x.et" ] && fail "a failed import left $T/x.et behind"
expect 2 'nonexistent' "$ETKIT" json /nonexistent/a.et
expect 2 "looks like JSON; 'etkit json --to-et" "$ETKIT" json "$SHARED/data/chakra/json_feeder_small.0.json"
expect 2 'nonexistent' "$ETKIT" json --to-et /nonexistent/a.json -o "$T/x.et"

[ "$fails" = 0 ] && echo "cli_json: all checks passed ($n traces recoded and round-tripped through JSON)"
[ "$fails" = 0 ]
