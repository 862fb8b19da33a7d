#!/usr/bin/env bash
# pyenv.sh — etkit's PyTorch support reaches a Python rank whatever the command is (docs/live.md
# "PyTorch"): a script run by its #! line and python3 under a shell wrapper both find
# <lib dir>/python first on sys.path, load etkit's sitecustomize.py and have its torch import
# hook armed (it installs etkit_torch when the script imports torch; no torch is needed here).
# Until s25 only a command named python* got it. Skipped (77) without python3.
# usage: bash tests/live/pyenv.sh <etkit>
. "$(dirname "$0")/livelib.sh"
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
PYDIR=$STANDINS/python
[ -f "$PYDIR/sitecustomize.py" ] || { echo "skipped: $PYDIR/sitecustomize.py not built"; exit 77; }
cat >"$T/probe.py" <<'PY'
#!/usr/bin/env python3
import os, sys, sitecustomize
hook = any(type(f).__name__ == "_TorchHook" for f in sys.meta_path)
print("first", os.path.realpath(sys.path[1] if sys.path[0] == os.path.dirname(os.path.abspath(__file__)) else sys.path[0]))
print("site", os.path.realpath(os.path.dirname(sitecustomize.__file__)), "hook", hook)
PY
chmod +x "$T/probe.py"
want_dir=$(cd "$PYDIR" && pwd -P)
for how in script wrapper; do
  if [ $how = script ]; then cmd=("$T/probe.py"); else cmd=(sh -c "exec python3 '$T/probe.py'"); fi
  timeout 60 "$ETKIT" live --ranks 1 --cpu-scale 0 -- "${cmd[@]}" >"$T/$how.out" 2>"$T/$how.err" ||
    { fail "$how: etkit live exited $?: $(tail -3 "$T/$how.err")"; continue; }
  grep -qx "first $want_dir" "$T/$how.out" && grep -qx "site $want_dir hook True" "$T/$how.out" &&
    ok "$how: $want_dir first on sys.path, etkit's sitecustomize loaded, torch hook armed" ||
    fail "$how: $(tr '\n' ' ' <"$T/$how.out") (want $want_dir, hook True)"
done
exit $((fails > 0))
