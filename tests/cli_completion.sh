#!/usr/bin/env bash
# cli_completion.sh — bash completion and man pages generated from the command's help texts
# (scripts/gen-completion.sh, scripts/gen-man.sh): completing commands, flags, model, cluster and
# GPU names; a man page per command that groff renders without a warning; --version.
# usage: bash tests/cli_completion.sh <etkit> <shared-dir>
set -u
. "$(dirname "$0")/clilib.sh"   # ETKIT, T, fails, fail, expect

bash scripts/gen-completion.sh "$ETKIT" >"$T/etkit.bash" || fail "gen-completion.sh failed"
complete_words() { # the completions bash offers for the words given (the last one being typed)
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _etkit; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
    _ "$T/etkit.bash" "$@"
}
check() { # check "<want>" words...
  local want=$1; shift
  local got; got=$(complete_words "$@")
  [ "$got" = "$want" ] || fail "completing '$*': got '$got', want '$want'"
}
check "run " etkit ru
check "calibrate convert " etkit c
check "--version " etkit --v
check "--mode --model --model-file --model-flops " etkit run --mod
check "llama3-405b llama3-70b llama3-8b " etkit run --model llama3-
check "dgx-h100 dgx-h100-superpod " etkit sim w --cluster dgx-h
check "h100 h200 " etkit run --gpu h
check "pytorch " etkit convert py
# the flags of a command are its option table's (cli/cmd_validate.c, cli/cmd_report.c), not
# the flags its examples mention
check "--groups --help --json --max-ids --no-deadlock --per-file --quiet " etkit validate --
check "--help --html --output --timeline " etkit report --
check "--json " etkit models --j
check "--quiet " etkit gen --qu
# every flag offered for run and sim is one they accept (followed by a bad --tp 3, so that
# nothing is simulated: the error is about --tp, not about the flag)
for c in run sim; do
  for f in $(complete_words etkit "$c" --); do
    [ "$f" = --help ] && continue
    (cd "$T" && timeout 20 "$ETKIT" "$c" "$f" --tp 3 >/dev/null 2>"$T/err")
    grep -qF "unknown option '$f'" "$T/err" && fail "etkit $c: completion offers '$f', an unknown option"
  done
done
"$ETKIT" run --no-such-flag --tp 3 2>&1 | grep -qF "unknown option '--no-such-flag'" ||
  fail "the check above cannot see an unknown option"

# man pages: one per command of `etkit --help`, each rendering without warnings
bash scripts/gen-man.sh "$ETKIT" "$T/man" || fail "gen-man.sh failed"
cmds=$("$ETKIT" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(echo "$cmds" | wc -w)" -ge 12 ] || fail "fewer commands than expected: $cmds"
for c in "" $cmds; do
  page="$T/man/etkit${c:+-$c}.1"
  [ -s "$page" ] || { fail "no man page for '${c:-etkit}'"; continue; }
  grep -q "^\.TH ETKIT" "$page" || fail "$page: no .TH header"
  if command -v groff >/dev/null; then
    LC_ALL=C.UTF-8 groff -man -Tutf8 -ww "$page" >"$T/render" 2>"$T/warn" || fail "$page: groff failed"
    [ -s "$T/warn" ] && fail "$page: groff warns: $(head -3 "$T/warn")"
    first=$("$ETKIT" ${c:-} --help | head -1)
    grep -qF -- "$first" "$T/render" || fail "$page: rendered page lacks '$first'"
  fi
done
[ "$(ls "$T/man" | wc -l)" = "$(($(echo "$cmds" | wc -w) + 1))" ] || fail "man pages: $(ls "$T/man")"

# --version: version, compiler, build type (and the git revision when built from a checkout)
expect 0 "^etkit 0\.1\.0 (\(gcc\|clang\) [^,]*, [A-Za-z]* build" --version
exit $((fails > 0))
