# clilib.sh — shared by the CLI tests that source it (cli_gen.sh, cli_infer.sh, cli_models.sh;
# not itself a test: CTest runs tests/cli_*.sh): ETKIT (the first argument), a scratch
# directory T removed on exit, a failure counter with fail(), and expect().
# usage, in a test: . "$(dirname "$0")/clilib.sh"   (then `exit $((fails > 0))` or similar)
ETKIT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

expect() { # expect <status> <grep pattern> <args...>
  local want=$1 pat=$2; shift 2
  "$ETKIT" "$@" >"$T/out" 2>&1
  local rc=$?
  [ "$rc" = "$want" ] || fail "etkit $* exited $rc, want $want: $(head -3 "$T/out")"
  grep -q -- "$pat" "$T/out" || fail "etkit $*: output lacks '$pat': $(head -5 "$T/out")"
}
