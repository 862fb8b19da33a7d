#!/usr/bin/env bash
# gen-man.sh ETKIT OUTDIR — man pages from the command's help texts: OUTDIR/etkit.1 (the
# commands, --version) and OUTDIR/etkit-CMD.1 for each command of `etkit --help` (its --help,
# verbatim). `make man` (CMake target man) writes them to build/man; installed to share/man/man1.
set -euo pipefail
E=${1:?usage: gen-man.sh ETKIT OUTDIR}
OUT=${2:?usage: gen-man.sh ETKIT OUTDIR}
mkdir -p "$OUT"
version=$("$E" --version | sed 's/^etkit //')
# roff-safe verbatim text: backslashes as \e, a leading . or ' escaped with \&
verbatim() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
page() { # NAME SUMMARY HELP-TEXT > file
    local tmp
    tmp=$(mktemp "$OUT/.man.XXXXXX")
    {
        printf '.TH %s 1 "" "etkit %s" "etkit manual"\n' "$(tr a-z A-Z <<<"$1")" "${version%% *}"
        printf '.SH NAME\n%s \\- %s\n' "$1" "$(verbatim <<<"$2")"
        printf '.SH DESCRIPTION\n.nf\n'
        verbatim <<<"$3"
        printf '.fi\n.SH VERSION\n%s\n.SH SEE ALSO\n' "$(verbatim <<<"$version")"
        printf 'The documentation in the docs/ folder of the etkit sources; etkit(1).\n'
    } >"$tmp"
    mv "$tmp" "$OUT/$1.1"
}
page etkit "predict step time, MFU, memory, TTFT/TPOT of distributed LLM training and inference" "$("$E" --help)"
"$E" --help | sed -n 's/^  \([a-z][a-z-]*\)  *\(.*\)/\1 \2/p' | while read -r cmd summary; do
    page "etkit-$cmd" "$summary" "$("$E" "$cmd" --help)"
done
