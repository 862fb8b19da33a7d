#!/usr/bin/env bash
# bench/plan-mpi-pair.sh — `mpirun -np 2 etkit plan` against `etkit plan -j 2` (issue #14: "with
# mpirun -np 2 no slower than -j 2"), in N alternated rounds, the order rotated by one each round
# (-j 2 first in odd rounds, mpirun first in even ones; given an older etkit, a third run of
# mpirun with it, each kind first, second and third once in every three rounds).
# Prints per run the 1-minute load before it (/proc/loadavg), wall, user and system seconds
# (/usr/bin/time: everything under it, mpirun and both processes; also its minor page faults and
# context switches), then the medians per kind;
# checks every CSV byte for byte against the first -j 2 one. CPU (user + system) is the figure
# that holds on a shared machine; wall times mean something only near idle.
#
#   bench/plan-mpi-pair.sh ETKIT [N [OLD_ETKIT]]        (N defaults to 3)
#   CASE="plan --model ... --quiet"  the search (default: the issue's llama3-70b on 1,024 H100)
#   TIMEOUT=150   seconds per run (timeout(1)); STATS=DIR   keep each mpirun run's
#   ETK_PLAN_MPI_STATS output (its timeline per process) in DIR
# Exit status: 0, or 1 when a CSV differs or a run fails. bench/RESULTS.md "s29-plan".
set -u
E=${1:?usage: bench/plan-mpi-pair.sh ETKIT [N [OLD_ETKIT]]}
N=${2:-3}
OLD=${3:-}
CASE=${CASE:-plan --model llama3-70b --global-batch 512 --cluster dgx-h100 --nodes 128 --quiet}
TIMEOUT=${TIMEOUT:-150}
command -v mpirun >/dev/null || { echo "plan-mpi-pair: no mpirun" >&2; exit 1; }
MPI="mpirun --oversubscribe -np 2"
[ "$(id -u)" = 0 ] && MPI="mpirun --allow-run-as-root --oversubscribe -np 2"
[ -n "${STATS:-}" ] && { mkdir -p "$STATS"; MPI="$MPI -x ETK_PLAN_MPI_STATS=1"; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/etk_plan_pair.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# each run in a session of its own (a CFS autogroup; bench/plan.sh)
S=""; command -v setsid >/dev/null && S="setsid -w"
kinds="j2 np2"; [ -n "$OLD" ] && kinds="j2 np2 np2old"
bad=0
run() { # round kind
  local r=$1 k=$2 load out="$scratch/$2.$1.csv" err="$scratch/$2.$1.err" cmd
  load=$(cut -d' ' -f1 /proc/loadavg)
  case $k in
    j2) cmd="$E $CASE -j 2 --csv $out" ;;
    np2) cmd="$MPI $E $CASE --csv $out" ;;
    np2old) cmd="$MPI $OLD $CASE --csv $out" ;;
  esac
  # shellcheck disable=SC2086
  $S timeout "$TIMEOUT" /usr/bin/time -o "$scratch/t" -f "%e %U %S %R %c %w" $cmd >/dev/null 2>"$err"
  local rc=$?
  [ -n "${STATS:-}" ] && [ "$k" != j2 ] && cp "$err" "$STATS/$k.$r.txt"
  if [ $rc != 0 ]; then
    echo "round $r $k: failed (exit $rc): $(tail -2 "$err")"; bad=1; return
  fi
  read -r w u s pf ic vc <"$scratch/t"
  awk -v r="$r" -v k="$k" -v l="$load" -v w="$w" -v u="$u" -v s="$s" -v pf="$pf" -v cs="$((ic + vc))" 'BEGIN {
    printf "round %d %-7s load %5s  wall %7.2f s  user %7.2f s  sys %5.2f s  cpu %7.2f s  (%d page faults, %d context switches)\n",
      r, k, l, w, u, s, u + s, pf, cs }' 
  echo "$k $w $u $s" >>"$scratch/all"
  if [ -f "$scratch/ref.csv" ]; then
    cmp -s "$scratch/ref.csv" "$out" || { echo "round $r $k: CSV differs from the first -j 2 run's"; bad=1; }
  elif [ "$k" = j2 ]; then
    cp "$out" "$scratch/ref.csv"
  fi
}
for r in $(seq 1 "$N"); do
  # rotate the order by one each round (two kinds: j2 first in odd rounds, mpirun in even ones;
  # three: each kind first, second and third once in every three rounds)
  order=$kinds
  for _ in $(seq 2 "$r"); do order="$(echo "$order" | cut -d' ' -f2-) $(echo "$order" | cut -d' ' -f1)"; done
  for k in $order; do run "$r" "$k"; done
done
[ -f "$scratch/all" ] || exit 1
echo "medians over $N rounds (seconds):"
for k in $kinds; do
  awk -v k="$k" '$1 == k { n++; w[n] = $2; u[n] = $3; s[n] = $4; c[n] = $3 + $4 }
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { if (n) printf "  %-7s wall %7.2f  user %7.2f  sys %5.2f  cpu %7.2f  (%d runs)\n", k, med(w, n), med(u, n), med(s, n), med(c, n), n }' "$scratch/all"
done
[ $bad = 0 ] && echo "CSV identical in every run" || echo "plan-mpi-pair: FAILED (see above)"
exit $bad
