#!/usr/bin/env bash
# faults.sh — etkit under faults (issue #18), run by ctest as
#   bash tests/faults.sh <etkit> <shared-dir>
# Each case asserts the exit status, the message and what is left on disk:
#   - stdout on /dev/full for every command that prints (exit 2, "error writing standard output:
#     No space left on device");
#   - multi-file outputs (gen, convert) are all-or-nothing: a full disk (a small tmpfs, when
#     this runs as root; otherwise skipped with the reason), a read-only folder, a missing
#     folder (checked before any work), SIGKILL mid-write, two concurrent writers on one prefix
#     (the second is refused by the lock), stale ranks of an earlier larger run, temporary files
#     of dead writers.
set -u
SHARED=$2
. "$(dirname "$0")/clilib.sh" # ETKIT, T, fails, fail
MNT=
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null
  chmod -R u+w "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
skips=0
# memory figures mean nothing under AddressSanitizer (shadow memory, quarantine)
SANITIZED=0; grep -q __asan_init "$ETKIT" && SANITIZED=1
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }
# expect STATUS REGEX cmd...: exit status, and stdout+stderr matching the extended regex
expect() {
  local want=$1 pat=$2 out rc; shift 2
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = "$want" ] && grep -qE -- "$pat" <<<"$out" || fail "'$*' exited $rc (want $want), output /$pat/?: $out"
}
# full STATUS cmd...: the command with stdout on /dev/full must exit STATUS and say why
full() {
  local err rc
  err=$("$@" 2>&1 >/dev/full); rc=$?
  [ "$rc" = 2 ] || fail "'$* >/dev/full' exited $rc, expected 2: $err"
  grep -q "error writing standard output: No space left on device" <<<"$err" ||
    fail "'$* >/dev/full' does not say 'error writing standard output: No space left on device': $err"
}
# files DIR: the names in DIR, one line
files() { (cd "$1" && ls -A | tr '\n' ' '); }

SMALL=(--model llama2-7b --layers 2 --hidden 256 --heads 4 --kv-heads 4 --ffn 512 --vocab 1000 --seq 128)
mkdir -p "$T/w"
"$ETKIT" gen "${SMALL[@]}" --dp 4 --tp 2 -o "$T/w/w" >/dev/null || fail "gen of the small workload failed"
TR=$T/w/w.0.et

# --- stdout on /dev/full: every command that prints
if [ -w /dev/full ]; then
  full "$ETKIT" --help
  full "$ETKIT" --version
  full "$ETKIT" models
  full "$ETKIT" info "$TR"
  full "$ETKIT" info --json "$TR"
  full "$ETKIT" validate "$TR"
  full "$ETKIT" json "$TR"
  full "$ETKIT" dot "$TR"
  full "$ETKIT" recode "$TR" -o -
  full "$ETKIT" gen "${SMALL[@]}" --summary
  full "$ETKIT" gen "${SMALL[@]}" --summary --json
  full "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1
  full "$ETKIT" run
  full "$ETKIT" run --mode inference "${SMALL[@]}" --dp 8 --batch 2 --prompt-len 64 --decode-steps 2 --cluster dgx-h100 --nodes 1
  full "$ETKIT" convert pytorch -q --json --host tests/pytorch/mlp_host_et.json \
    --device tests/pytorch/mlp_profiler.json -o "$T/cv"
  # and the same commands are fine on a working stdout
  expect 0 "llama2-7b" "$ETKIT" models
else
  skip "/dev/full is not writable here: stdout write-error cases not run"
fi

# --- multi-file output (gen): all-or-nothing
G=$T/g; mkdir -p "$G"
gen_small() { "$ETKIT" gen "${SMALL[@]}" "$@"; }
# an output folder that cannot exist (its parent is a file) is found before any work, by every
# command that writes files (a missing folder is created: below)
touch "$G/file"
expect 2 "etkit gen: error: $G/file/x: $G/file is not a folder" \
  gen_small --dp 2 -o "$G/file/x"
expect 2 "etkit sim: error: $G/file/t.json: $G/file is not a folder" \
  "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --timeline "$G/file/t.json"
expect 2 "etkit run: error: $G/file/r.json: $G/file is not a folder" "$ETKIT" run --json -o "$G/file/r.json"
expect 2 "etkit run: error: $G/file/w: $G/file is not a folder" "$ETKIT" run --write-traces "$G/file/w"
# --html was checked only after the simulation: the report was printed, then exit 2
for cmd in "run" "sim $T/w/w --cluster dgx-h100 --nodes 1"; do
  out=$("$ETKIT" $cmd --html "$G/file/r.html" 2>&1); rc=$?
  [ "$rc" = 2 ] && grep -qF "etkit ${cmd%% *}: error: $G/file/r.html: $G/file is not a folder" <<<"$out" &&
    ! grep -q "step time" <<<"$out" || fail "etkit $cmd --html into a file's folder: exit $rc, not refused before the run: $out"
done
expect 2 "etkit convert: error: $G/file/c: $G/file is not a folder" \
  "$ETKIT" convert pytorch -q --host tests/pytorch/mlp_host_et.json -o "$G/file/c"
# a missing folder is created (issue #17: the README's `gen -o out/llama7b` without out/)
expect 0 "wrote 2 rank files $T/newdir/g/x" gen_small --dp 2 -o "$T/newdir/g/x"
expect 0 "timeline" "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --timeline "$T/newdir/s/t.json"
"$ETKIT" convert pytorch -q --host tests/pytorch/mlp_host_et.json -o "$T/newdir/c/c" >/dev/null 2>&1
[ -s "$T/newdir/c/c.0.et" ] || fail "convert -o into a missing folder"
rm -f "$G/file"
# stale ranks of an earlier, larger run are removed; only names that match PREFIX.<N>.et
gen_small --dp 8 -o "$G/x" >/dev/null || fail "gen --dp 8 failed"
touch "$G/x.05.et" "$G/x.8.et.keep" "$G/y.9.et"
gen_small --dp 2 -o "$G/x" >/dev/null || fail "gen --dp 2 failed"
[ "$(files "$G")" = "x.0.et x.05.et x.1.et x.8.et.keep x.json y.9.et " ] ||
  fail "after a 2-rank run over an 8-rank set: $(files "$G") (want x.0.et x.1.et x.json and the unrelated files)"
# temporary files of dead writers are removed, those of live ones kept
sleep 1000 & live=$!
( exit 0 ) & dead=$!; wait $dead
mkdir "$G/.x.etkit-tmp.$dead" "$G/.x.etkit-tmp.$live"
touch "$G/.x.etkit-tmp.$dead/x.0.et" "$G/x.3.et.tmp.$dead" "$G/x.json.tmp.$dead" "$G/x.3.et.tmp.$live"
gen_small --dp 2 -o "$G/x" >/dev/null || fail "gen over dead writers' files failed"
[ -e "$G/.x.etkit-tmp.$dead" ] && fail "the temporary folder of dead writer $dead is left"
[ -e "$G/x.3.et.tmp.$dead" ] || [ -e "$G/x.json.tmp.$dead" ] && fail "temporary files of dead writer $dead are left"
[ -e "$G/.x.etkit-tmp.$live" ] && [ -e "$G/x.3.et.tmp.$live" ] || fail "the files of live writer $live were removed"
kill $live; wait $live 2>/dev/null
rm -rf "$G"/.x.etkit-tmp.* "$G"/x.*.tmp.* "$G/x.05.et" "$G/x.8.et.keep" "$G/y.9.et"

# a slow set (~100 MB, 64 ranks of 256 micro-batches): SIGKILL mid-write, then a concurrent writer
SLOW=(--model llama2-7b --layers 8 --dp 16 --pp 4 --global-batch 4096)
old=$(cd "$G" && md5sum x.0.et x.1.et x.json)
# wait_tmp PID [FOLDER [WHAT]]: until the writer's temporary folder in FOLDER (default $G) holds
# a rank file (WHAT ".": until it exists, i.e. the writer holds the lock), then stop the writer
# (SIGSTOP; the test sends SIGCONT or SIGKILL) so a loaded machine cannot let it finish before
# the test acts; 1 if it exited first or got there within 120 s
wait_tmp() {
  for _ in $(seq 4800); do
    if ls -d "${2:-$G}/.x.etkit-tmp.$1"/${3:-x.*.et} >/dev/null 2>&1; then
      kill -STOP "$1" 2>/dev/null && return 0; return 1
    fi
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.025
  done
  return 1
}
"$ETKIT" gen "${SLOW[@]}" -o "$G/x" >/dev/null 2>&1 & w=$!
if wait_tmp $w; then
  kill -9 $w; wait $w 2>/dev/null
  [ "$(cd "$G" && md5sum x.0.et x.1.et x.json)" = "$old" ] || fail "SIGKILL mid-write changed the published set"
  [ "$(files "$G")" = ".x.etkit-tmp.$w x.0.et x.1.et x.json x.lock " ] ||
    fail "after SIGKILL mid-write: $(files "$G") (want the old set, the dead writer's folder and lock)"
  # the next writer cleans the dead one's files up
  gen_small --dp 2 -o "$G/x" >/dev/null || fail "gen after a killed writer failed"
  [ "$(files "$G")" = "x.0.et x.1.et x.json " ] || fail "after the next gen: $(files "$G")"
else
  fail "the slow gen exited (or wrote no rank file in 120 s) before the test could stop it (cannot test SIGKILL)"
fi
# two writers on one prefix: the second is refused while the first holds the lock (from its
# temporary folder's creation on: its rank files come only at the end, too short a window)
"$ETKIT" gen "${SLOW[@]}" -o "$G/x" >/dev/null 2>"$T/first.err" & w=$!
if wait_tmp $w "$G" .; then
  expect 2 "another etkit process is writing this output \\($G/x.lock is locked\\)" gen_small --dp 2 -o "$G/x"
  kill -CONT $w
  wait $w || fail "the first writer failed: $(cat "$T/first.err")"
  n=$(ls "$G"/x.*.et | wc -l)
  [ "$n" = 64 ] && [ -e "$G/x.json" ] && [ ! -e "$G/x.lock" ] || fail "after two writers: $n rank files, $(files "$G" | head -c 300)"
else
  kill -CONT $w 2>/dev/null; wait $w; fail "the slow gen exited before making its temporary folder, or took over 120 s (cannot test two writers)"
fi
rm -f "$G"/x.*

# --- convert --ranks: the same all-or-nothing set (util/outset.c). 48 ranks (the 8 DLRM host
# traces, each used 6 times; no process groups, so no x.json): SIGKILL once the first rank is in
# the temporary folder leaves the published set as it was (no rank under a final name), a second
# converter is refused by the lock, and the next run cleans the dead one up
CV=$T/cv; CI=$T/cvin; mkdir -p "$CV" "$CI"
DLRM=$SHARED/data/real-traces/dlrm-8gpu-v100
for r in $(seq 0 47); do ln -s "$DLRM/host_$((r % 8)).json.gz" "$CI/h_$r.json.gz"; done
conv() { "$ETKIT" convert pytorch -q --host "$CI/h_%d.json.gz" --ranks "$1" -o "$CV/x"; }
conv_bg() { exec "$ETKIT" convert pytorch -q --host "$CI/h_%d.json.gz" --ranks "$1" -o "$CV/x"; } # $! is etkit's pid
conv 2 >/dev/null || fail "convert --ranks 2 failed"
old=$(cd "$CV" && md5sum x.0.et x.1.et)
conv_bg 48 >/dev/null 2>&1 & w=$!
if wait_tmp $w "$CV"; then
  kill -9 $w; wait $w 2>/dev/null
  [ "$(cd "$CV" && md5sum x.0.et x.1.et)" = "$old" ] || fail "SIGKILL mid-conversion changed the published set"
  [ "$(files "$CV")" = ".x.etkit-tmp.$w x.0.et x.1.et x.lock " ] ||
    fail "after SIGKILL mid-conversion: $(files "$CV") (want the old set, the dead converter's folder and lock)"
  # a second converter is refused while one holds the lock
  conv_bg 48 >/dev/null 2>"$T/conv.err" & w=$!
  if wait_tmp $w "$CV" .; then
    expect 2 "another etkit process is writing this output \\($CV/x.lock is locked\\)" conv 2
    kill -CONT $w
    wait $w || fail "the first converter failed: $(cat "$T/conv.err")"
    [ "$(ls "$CV"/x.*.et | wc -l)" = 48 ] && [ ! -e "$CV/x.lock" ] || fail "after two converters: $(files "$CV" | head -c 300)"
  else
    kill -CONT $w 2>/dev/null; wait $w; fail "convert --ranks 48 exited before making its temporary folder (cannot test two converters)"
  fi
  # the next, smaller run: the dead one's folder and the stale ranks 2..47 removed
  conv 2 >/dev/null || fail "convert after a killed one failed"
  [ "$(files "$CV")" = "x.0.et x.1.et " ] || fail "after the next convert: $(files "$CV")"
else
  wait $w; fail "convert --ranks 48 exited before writing a rank file (cannot test SIGKILL)"
fi
# a rank that fails (rank 1 not a trace): nothing written, the earlier set untouched, no leftovers
old=$(cd "$CV" && md5sum x.0.et x.1.et)
rm "$CI/h_1.json.gz"; echo '{"schema": "1.0.2", "nodes": [' | gzip > "$CI/h_1.json.gz"
expect 2 "etkit convert: error: $CV/x: nothing written: " conv 3
[ "$(cd "$CV" && md5sum x.0.et x.1.et)" = "$old" ] && [ "$(files "$CV")" = "x.0.et x.1.et " ] ||
  fail "a failed convert --ranks changed the set: $(files "$CV")"
rm -rf "$CV" "$CI"

# a full disk and a read-only folder: small tmpfs mounts (root only)
MNT=$T/mnt; mkdir -p "$MNT"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=2m tmpfs "$MNT" 2>/dev/null; then
  gen_small --dp 2 -o "$MNT/x" >/dev/null || fail "gen on the tmpfs failed"
  old=$(cd "$MNT" && md5sum x.0.et x.1.et x.json)
  expect 2 "x: nothing written: .*No space left on device" "$ETKIT" gen "${SLOW[@]}" -o "$MNT/x"
  [ "$(cd "$MNT" && md5sum x.0.et x.1.et x.json)" = "$old" ] || fail "a full disk changed the published set"
  [ "$(files "$MNT")" = "x.0.et x.1.et x.json " ] || fail "after a full disk: $(files "$MNT")"
  # single-file outputs on the full disk: exit 2 with the reason, no file left (dot said only
  # "writing the DOT output failed")
  dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null
  expect 2 "etkit dot: error: $MNT/w.dot: writing the DOT output failed: No space left on device" "$ETKIT" dot "$TR" -o "$MNT/w.dot"
  expect 2 "etkit run: error: $MNT/r.json: write failed: No space left on device" "$ETKIT" run --json -o "$MNT/r.json"
  expect 2 "etkit json: error: $MNT/w.json: .*No space left on device" "$ETKIT" json "$TR" -o "$MNT/w.json"
  [ "$(files "$MNT")" = "fill x.0.et x.1.et x.json " ] || fail "single-file outputs on a full disk left: $(files "$MNT")"
  umount "$MNT"
  mount -t tmpfs -o ro,size=1m tmpfs "$MNT"
  expect 2 "cannot write the output: folder $MNT is not writable: Read-only file system" gen_small --dp 2 -o "$MNT/x"
  [ "$(files "$MNT")" = "" ] || fail "a read-only folder got files: $(files "$MNT")"
  umount "$MNT"; MNT=
else
  skip "not root or tmpfs cannot be mounted here (mount -t tmpfs needs CAP_SYS_ADMIN): full-disk case not run"
  RO=$T/ro; mkdir -p "$RO"; chmod a-w "$RO"
  if ! touch "$RO/probe" 2>/dev/null; then
    expect 2 "cannot write the output: folder $RO is not writable: Permission denied" gen_small --dp 2 -o "$RO/x"
  else
    rm -f "$RO/probe"; skip "a read-only folder is writable for this user: read-only case not run"
  fi
fi

# --- memory estimate before an unfolded run (cli/run_mem.c): refused before any work with the
# figures; the estimate agrees with the measured peak RSS within 20%
MEMRUN=(run --model llama2-7b --layers 8 --dp 64 --pp 4 --global-batch 1024 --cluster dgx-h100 --nodes 32)
expect 2 "simulating all 256 ranks unfolded \\(--no-fold\\) needs about 0\\.12 GB \\(325504 nodes x 362 bytes, estimated before any work\\); 0\\.00 GB allowed by --max-memory\\. Let the ranks fold" \
  "$ETKIT" "${MEMRUN[@]}" --no-fold --max-memory 1M
expect 2 "simulating all 256 ranks unfolded \\(--slow-rank\\)" "$ETKIT" "${MEMRUN[@]}" --slow-rank 3:0.8 --max-memory 1K
expect 2 "--max-memory wants bytes" "$ETKIT" "${MEMRUN[@]}" --no-fold --max-memory 12X
expect 0 "step" "$ETKIT" "${MEMRUN[@]}" --max-memory 1M # folded: not checked
if [ -x /usr/bin/time ] && [ $SANITIZED = 0 ]; then
  est=$("$ETKIT" "${MEMRUN[@]}" --no-fold --max-memory 1 2>&1 | sed -n 's/.*needs about \([0-9.]*\) GB.*/\1/p')
  kb=$(/usr/bin/time -f %M "$ETKIT" "${MEMRUN[@]}" --no-fold 2>&1 >/dev/null | tail -1)
  awk -v e="$est" -v kb="$kb" 'BEGIN { m = kb * 1024 / 1e9; r = e / m; exit !(r > 0.8 && r < 1.2) }' ||
    fail "memory estimate $est GB vs measured peak RSS $kb KB: not within 20%"
else
  skip "/usr/bin/time is missing or this is a sanitizer build: the estimate is not compared with a measured peak"
fi

# --- sim on trace files: the memory estimated from the file sizes before any trace is read
# (cli/run_mem.c sim_mem_check): 2.69 bytes per trace byte held + 1.40 per byte simulated (the
# largest rank file folded, every file unfolded) + 6 MiB; refused with the figures, else run
est_gb() { # est_gb PREFIX unfolded(0|1): the estimate in GB, from the file sizes
  stat -c %s "$1".*.et | awk -v u="$2" '{ t += $1; if ($1 > m) m = $1 }
    END { printf "%.2f", (t * 2.69 + (u ? t : m) * 1.40 + 6291456) / 1e9 }'
}
expect 2 "etkit sim: error: $T/w/w: 8 rank traces of 0\\.[0-9]{3} GB \\(encoded\\) need about $(est_gb "$T/w/w" 0) GB to simulate \\(2\\.69 bytes per trace byte held \\+ 1\\.40 per byte simulated, the largest rank simulated \\(folded\\); estimated from the file sizes before reading them\\); 0\\.00 GB allowed by --max-memory\\. Simulate fewer ranks" \
  "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --max-memory 1M
expect 2 "need about $(est_gb "$T/w/w" 1) GB to simulate .*every rank simulated: --no-fold.*Let the ranks fold" \
  "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --no-fold --max-memory 1M
expect 2 "every rank simulated: --slow-rank" "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --slow-rank 1:0.5 --max-memory 1M
expect 2 "--max-memory wants bytes" "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --max-memory lots
expect 0 "step time" "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --max-memory 64M
expect 0 "step time" "$ETKIT" sim "$T/w/w" --cluster dgx-h100 --nodes 1 --no-fold --max-memory 64M
# the estimate against the measured peak RSS (a 64-rank, 13.7 MB set), folded and not: within 20%
if [ -x /usr/bin/time ] && [ $SANITIZED = 0 ]; then
  mkdir -p "$T/sm"
  "$ETKIT" gen --model llama2-7b --layers 8 --dp 32 --pp 2 --global-batch 512 -o "$T/sm/b" >/dev/null || fail "gen of the sim-memory set"
  for nf in "" --no-fold; do
    est=$("$ETKIT" sim "$T/sm/b" --cluster dgx-h100 --nodes 8 $nf --max-memory 1 2>&1 | sed -n 's/.*need about \([0-9.]*\) GB.*/\1/p')
    kb=$(/usr/bin/time -f %M "$ETKIT" sim "$T/sm/b" --cluster dgx-h100 --nodes 8 $nf 2>&1 >/dev/null | tail -1)
    awk -v e="$est" -v kb="$kb" 'BEGIN { m = kb * 1024 / 1e9; r = e / m; exit !(r > 0.8 && r < 1.2) }' ||
      fail "sim ${nf:-folded}: memory estimate $est GB vs measured peak RSS $kb KB: not within 20%"
  done
  rm -rf "$T/sm"
else
  skip "/usr/bin/time is missing or this is a sanitizer build: the sim estimate is not compared with a measured peak"
fi

# --- the generator streams: peak memory about one rank file (it was 4.4x), on a ~35 MB trace
if [ -x /usr/bin/time ] && [ $SANITIZED = 0 ]; then
  mkdir -p "$T/one"
  kb=$(/usr/bin/time -f %M "$ETKIT" gen --model llama2-7b --layers 32 --global-batch 320 --dp 1 -o "$T/one/x" 2>&1 >/dev/null | tail -1)
  sz=$(stat -c %s "$T/one/x.0.et")
  awk -v kb="$kb" -v sz="$sz" 'BEGIN { exit !(kb * 1024 < 1.5 * sz + 16 * 1048576) }' ||
    fail "gen of a $sz-byte rank file peaked at $kb KB (want < 1.5 x the file + 16 MiB)"
  rm -rf "$T/one"
  # inference is streamed the same way (it held 3.4x the file)
  mkdir -p "$T/one"
  kb=$(/usr/bin/time -f %M "$ETKIT" gen --mode inference --model llama2-7b --batch 8 --prompt-len 512 --decode-steps 512 -o "$T/one/x" 2>&1 >/dev/null | tail -1)
  sz=$(stat -c %s "$T/one/x.0.et")
  awk -v kb="$kb" -v sz="$sz" 'BEGIN { exit !(kb * 1024 < 1.5 * sz + 16 * 1048576) }' ||
    fail "inference gen of a $sz-byte rank file peaked at $kb KB (want < 1.5 x the file + 16 MiB)"
  rm -rf "$T/one"
fi

echo "faults.sh: $fails failure(s), $skips skipped group(s)"
exit $((fails > 0))
