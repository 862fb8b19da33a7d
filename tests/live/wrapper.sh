#!/usr/bin/env bash
# wrapper.sh — issue #11: ranks started through wrappers, and ranks that never connect. Every case
# must end within its timeout with the right outcome (it hung forever before: a shell wrapper that
# execs the program, pyenv's shims, said hello as the rank, its socket closed at the exec, and the
# coordinator waited for the still-running process while the program waited for its hello's answer).
# The normal outcome is faults.c's all-reduce on 4 ranks of a ring: 2(n-1)a + 2(n-1)/n S/B
# = 6,000 + 1.5 x 1,048,576 / 100 = 21,729 ns on the program's own clock (as faults.sh).
#  - a `#!/bin/sh` wrapper ending in `exec "$@"`; one that first runs helper commands (each of them
#    preloaded and connecting too, as pyenv's shims do); one that runs the program without exec
#    (the wrapper's connection stays open, idle); one that runs commands after the program
#    (bystanders): all give 21,729 ns and exit 0; a second process sending work for a rank
#    (the wrapper runs the program twice): exit 1, naming the rank;
#  - a rank that exits (status 0, or 4) without ever connecting (a static program: no preload);
#    a rank that runs without connecting while the others wait in the all-reduce; a rank whose
#    wrapper connected and then exec'd a program that never connects: exit 1, the rank named,
#    ETK_LIVE_CONNECT_TIMEOUT=2 (seconds) bounds the waits;
#  - with python3-torch: a `python3` shell shim around /usr/bin/python3 running probe.py on 2
#    ranks: each reads the 4096^3 BF16 GEMM as floor(2 x 4096^3 / 989e12 s) = 138,967 ns.
# usage: bash tests/live/wrapper.sh <etkit>
. "$(dirname "$0")/livelib.sh"
cuda_build $CUDA_CC "$T/faults" "$HERE/faults.c" -lcudart -lnccl
sed 's/size: 8/size: 4/; s/live-ring8/live-ring4/' "$HERE/ring8.yaml" >"$T/ring4.yaml"
printf '#!/bin/sh\nexec "$@"\n' >"$T/wrap_exec.sh"
printf '#!/bin/sh\n/bin/true\nv=$(cat /dev/null)\nenv >/dev/null\nexec "$@"\n' >"$T/wrap_helpers.sh"
printf '#!/bin/sh\n"$@"\nexit $?\n' >"$T/wrap_noexec.sh"
chmod +x "$T"/wrap_*.sh
expect() { # name limit-s want-status want-text command...
  local name=$1 lim=$2 want=$3 text=$4; shift 4
  local t0=$SECONDS
  ETK_LIVE_CONNECT_TIMEOUT=2 timeout "$lim" "$ETKIT" live --cluster "$T/ring4.yaml" --ranks 4 --cpu-scale 0 -- "$@" \
    >"$T/out" 2>&1
  local rc=$?
  if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$T/out"; then
    fail "$name: exit $rc (want $want; 124 = hung), output lacks '$text':"; sed 's/^/    /' "$T/out" | head -12
  else
    ok "$name: exit $rc in $((SECONDS - t0)) s, '$text'"
  fi
}
expect "sh wrapper, exec" 60 0 "all-reduce took 21729 ns" "$T/wrap_exec.sh" "$T/faults" ok
expect "sh wrapper, exec, report" 60 0 "ALL_REDUCE" "$T/wrap_exec.sh" "$T/faults" ok
expect "sh wrapper running helper commands first" 60 0 "all-reduce took 21729 ns" "$T/wrap_helpers.sh" "$T/faults" ok
expect "sh wrapper without exec" 60 0 "all-reduce took 21729 ns" "$T/wrap_noexec.sh" "$T/faults" ok
expect "two wrappers deep" 60 0 "all-reduce took 21729 ns" "$T/wrap_helpers.sh" "$T/wrap_exec.sh" "$T/faults" ok
if cc -static -std=c11 -Wall -o "$T/nohello" "$HERE/nohello.c" 2>"$T/build.log"; then
  expect "rank exits 0 without connecting" 30 1 \
    "rank 1 exited with status 0 at t = 0 ns without connecting to etkit live" "$T/nohello" exit0 1 "$T/faults" ok
  expect "rank exits 4 without connecting" 30 1 \
    "rank 1 exited with status 4 at t = 0 ns (last call: none: it never reached CUDA)" "$T/nohello" exit4 1 "$T/faults" ok
  expect "rank never connects" 30 1 "rank 1 never connected to etkit live: no hello within 2 s while every other rank waits" \
    "$T/nohello" sleep 1 "$T/faults" ok
  pgrep -f "$T/nohello sleep" >/dev/null && fail "the rank that never connected still runs after the run ended" ||
    ok "the rank that never connected is ended with the run"
  expect "wrapper execs a program that never connects" 30 1 \
    "rank 2 closed its connection to etkit live without exiting (last call: none) and did not connect again within 2 s" \
    "$T/wrap_exec.sh" "$T/nohello" sleep 2 "$T/faults" ok
else
  echo "note: no static C library (cc -static failed): the never-connecting cases are not run"; head -3 "$T/build.log"
fi
# a connection that sent work, then a second process for the rank: an error, not a hang
printf '#!/bin/sh\n"$@"\n[ "$RANK" = 3 ] && exec "$@"\nexit 0\n' >"$T/wrap_twice.sh"; chmod +x "$T/wrap_twice.sh"
expect "one process per rank" 60 1 "rank 3: two processes use the rank: another process (started by the rank's" \
  "$T/wrap_twice.sh" "$T/faults" ok
# commands the wrapper runs after the program (each preloaded, connecting for the rank): bystanders
printf '#!/bin/sh\n"$@"\ns=$?\n/bin/true\ncat /dev/null\nexit $s\n' >"$T/wrap_after.sh"; chmod +x "$T/wrap_after.sh"
expect "sh wrapper running commands after the program" 60 0 "all-reduce took 21729 ns" "$T/wrap_after.sh" "$T/faults" ok

PY=${PYTHON:-/usr/bin/python3}
if "$PY" -c "import torch" 2>/dev/null; then
  mkdir -p "$T/shims"
  printf '#!/bin/sh\nexec %s "$@"\n' "$PY" >"$T/shims/python3"; chmod +x "$T/shims/python3"
  t0=$SECONDS
  timeout 300 "$ETKIT" live --ranks 2 --cpu-scale 0 --compute roofline -- "$T/shims/python3" "$HERE/torch/probe.py" \
    >"$T/p.out" 2>"$T/p.err"
  rc=$?
  # the two ranks share stdout: a line of one may land inside the other's, so count matches
  [ $rc = 0 ] && [ "$(grep -o 'gemm_ns 138967 perf_counter_ns 138967' "$T/p.out" | wc -l)" = 2 ] &&
    ok "torch through a python3 shell shim, 2 ranks: exit 0 in $((SECONDS - t0)) s, GEMM 138,967 ns on each" ||
    { fail "torch through a shim: exit $rc (124 = hung)"; grep gemm "$T/p.out"; tail -4 "$T/p.err"; }
else
  echo "note: $PY cannot import torch: the torch case is not run"
fi
exit $((fails > 0))
