#!/usr/bin/env bash
# torch.sh — issue #12 (live mode II): unmodified PyTorch scripts (tests/live/torch/) under
# `etkit live`, with Debian's python3-torch 1.13 (CPU build). Skipped (77) without it.
#  (a) probe.py: torch.cuda reports the modelled H100; a 4096^3 BF16 GEMM between two CUDA events
#      takes floor(2 x 4096^3 / 989e12 s) = 138,967 ns with --compute roofline, and the script's
#      time.perf_counter_ns reads the same virtual interval; nn.Dropout(0.1) on the 4096^2 BF16
#      result is one fused kernel as ATen's CUDA path runs it (native_dropout: input and output
#      2 bytes, mask 1 byte per element): floor(5 x 4096^2 B / 3.35e12 B/s) = 25,040 ns (the
#      meta decomposition bernoulli_ + div_ + mul would be 12 B per element: 60,097 ns); .item() is a placeholder 0 with one
#      warning for its call site; aten::nonzero stops the run naming the operator and the script
#      line, --allow-unmodelled lists it instead. skip.py: rank 1 skips an all-reduce: deadlock report.
#  (b) mem.py: L = 4 bias-free Linear(1024, 1024) FP32 layers, Adam, batch B = 8192. Closed form of
#      the peak (reached in backward at layer L-1, from the second step on): weights 4P + Adam 8P
#      + (L+1) activations of A = 4BH bytes + 2 weight gradients of 4H^2, P = L H^2:
#      12 x 4 MiB x 4 + 5 x 32 MiB + 8 MiB = 216 MiB (+ 2 x 512 B for the loss and its gradient);
#      torch.cuda.max_memory_allocated() must be within 5%. B = 4,000,000 (A = 15.26 GiB) raises
#      torch.cuda.OutOfMemoryError in backward: 5A + weights fit in 79.65 GiB, the sixth A does not.
#  (c) train_ddp.py: a GPT-2-like model (2 layers, hidden 256, vocab 1024, seq 128) with DDP on
#      8 ranks, 3 steps: the script's own clock gives the run's step time to the ns, `etkit sim` of
#      the recording the same; DDP all-reduces every gradient once a step (2P bytes, BF16) and
#      broadcasts the parameters once at start (2P) and, after the first step, the rebuilt bucket
#      indices (128 B here), P = 2 Vh + S h + L (12 h^2 + 13 h) + 2h.
#      Memory (issue #12's "within 5% of the closed form ... of that model"): rank 0's
#      torch.cuda.max_memory_allocated() equals, to the byte, the closed form of gpt_mem.py,
#      derived from torch 1.13's autograd and caching allocator and computed here from the same
#      environment: weights, AdamW's two moments and DDP's buckets (2P bytes each), the tensors
#      the forward saves, reached in the head's backward (_log_softmax_backward_data: three
#      N x V BF16 tensors live), which the memory log (ETKIT_TORCH_MEMLOG) must name; on 1 rank
#      at two sizes where the peak is the closed form's other points (the last block's fc2
#      backward; the optimizer step, without dropout), and at GPT-2 small in (h). gpt_saved.py
#      checks the closed form's saved tensors against torch's autograd graph on the CPU.
#  (d) train_tp.py: Megatron-style tensor parallel (below).
#  (e) train_fsdp.py: torch 1.13's FullyShardedDataParallel; mem_fsdp.py: its memory (below).
#  (f) mem_ddp.py: DDP's gradient buckets charged (below).
#  (g) bytes.py: the bytes of foreach operators and of a gather/scatter_add_ (below).
#  (h) lazy.py, train_ddp.py at GPT-2 small: the CPU parameters' initialisation deferred (below).
# usage: bash tests/live/torch.sh <etkit>
. "$(dirname "$0")/livelib.sh"
PY=${PYTHON:-/usr/bin/python3}
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "skipped: $PY cannot import torch (Debian: apt-get install python3-torch)"
  exit 77
fi
D=$HERE/torch
num() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" "$2" | tail -1; }
step() { sed -n 's/^step time *\([0-9,]*\) ns.*/\1/p' "$1" | tr -d ,; }

# (a)
timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 --compute roofline -- "$PY" "$D/probe.py" >"$T/p.out" 2>"$T/p.err" ||
  fail "probe.py exited $?: $(tail -3 "$T/p.err")"
grep -q "available True count 1 name H100-SXM cc 9.0 hbm_bytes" "$T/p.out" && ok "torch.cuda: $(head -1 "$T/p.out")" ||
  fail "devices: $(head -1 "$T/p.out")"
grep -q "device cuda:0 is_cuda True" "$T/p.out" && ok "tensor.device cuda:0" || fail "device: $(sed -n 2p "$T/p.out")"
[ "$(num gemm_ns "$T/p.out")" = 138967 ] && ok "4096^3 BF16 GEMM between events: 138,967 ns" ||
  fail "GEMM $(num gemm_ns "$T/p.out") ns, want 138967"
[ "$(num perf_counter_ns "$T/p.out")" = 138967 ] && ok "time.perf_counter_ns reads the virtual clock" ||
  fail "perf_counter_ns $(num perf_counter_ns "$T/p.out")"
grep -q "^dropout_ns 25040 grad (4096, 4096) torch.bfloat16" "$T/p.out" &&
  ok "nn.Dropout: one fused native_dropout, 25,040 ns; backward to the input" || fail "dropout: $(grep dropout "$T/p.out")"
li=$(grep -n 'v = y.sum().item()' "$D/probe.py" | cut -d: -f1); ln=$(grep -n 'torch.nonzero(y)' "$D/probe.py" | cut -d: -f1)
[ "$(grep -c "probe.py:$li: .item() reads a value of a GPU tensor: placeholder 0" "$T/p.err")" = 1 ] &&
  grep -q "^item 0.0" "$T/p.out" && ok ".item(): placeholder 0, one warning for its call site" ||
  fail "placeholder: $(grep -c item "$T/p.err") warnings; $(grep item "$T/p.out")"
PROBE_NONZERO=1 timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 -- "$PY" "$D/probe.py" >"$T/n.out" 2>"$T/n.err"
rc=$?
[ $rc = 1 ] && grep -q "probe.py:$ln: aten::nonzero is not modelled (its output depends on the tensor's values)" "$T/n.err" &&
  ok "unmodelled operator: exit 1, $(grep -o "probe.py:$ln: aten::nonzero is not modelled" "$T/n.err")" ||
  fail "nonzero: exit $rc, $(grep -i modelled "$T/n.err" | head -2)"
PROBE_NONZERO=1 timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 --allow-unmodelled -- "$PY" "$D/probe.py" \
  >"$T/n2.out" 2>"$T/n2.err" || fail "--allow-unmodelled exited $?: $(tail -3 "$T/n2.err")"
grep -q "nonzero (0, 2)" "$T/n2.out" && grep -q "aten::nonzero  calls 1  first at .*probe.py:$ln" "$T/n2.err" &&
  ok "--allow-unmodelled: listed, $(grep 'aten::nonzero  calls' "$T/n2.err")" || fail "allow: $(tail -3 "$T/n2.err")"
timeout 240 "$ETKIT" live --ranks 2 --cpu-scale 0 -- "$PY" "$D/skip.py" >"$T/s.out" 2>"$T/s.err"
rc=$?
[ $rc = 1 ] && grep -q 'deadlock at t = .*Rank 0 waits in cudaDeviceSynchronize. Rank 1 exited.*ALL_REDUCE of 4194304 bytes on group "nccl:id0" .*waits for rank(s) 1' "$T/s.err" &&
  ok "a rank skipping a collective: deadlock reported (exit 1), not a hang" || fail "skip.py: exit $rc, $(tail -2 "$T/s.err")"

# (b)
timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 -- "$PY" "$D/mem.py" >"$T/m.out" 2>"$T/m.err" ||
  fail "mem.py exited $?: $(tail -3 "$T/m.err")"
got=$(num max_memory_allocated_bytes "$T/m.out")
want=$(( (12 * 4 + 5 * 32 + 8) * 1048576 ))
awk -v g="${got:-0}" -v w=$want 'BEGIN { d = (g - w) / w; exit !(d < 0.05 && d > -0.05) }' &&
  ok "max_memory_allocated $got bytes, closed form $want (+$((got - want)))" || fail "peak $got, want $want +-5%"
MEM_B=4000000 timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 -- "$PY" "$D/mem.py" >"$T/o.out" 2>"$T/o.err"
rc=$?
[ $rc = 1 ] && grep -q "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 15.26 GiB (GPU 0; 79.65 GiB total capacity" "$T/o.err" &&
  ok "batch too large: $(grep -o 'OutOfMemoryError: CUDA out of memory. Tried to allocate [0-9.]* GiB' "$T/o.err")" ||
  fail "OOM: exit $rc, $(grep -i memory "$T/o.err" | tail -2)"

# (c)
export GPT_LAYERS=2 GPT_HIDDEN=256 GPT_HEADS=4 GPT_SEQ=128 GPT_VOCAB=1024 GPT_BATCH=2 STEPS=3
start=$(date +%s)
ETKIT_TORCH_MEMLOG=$T/ml timeout 240 "$ETKIT" live --cluster dgx-h100 --ranks 8 --cpu-scale 0 --record "$T/rec" -- "$PY" "$D/train_ddp.py" \
  >"$T/d.out" 2>"$T/d.err" || fail "train_ddp.py exited $?: $(tail -5 "$T/d.err")"
echo "     (8 ranks of train_ddp.py, 3 steps: $(( $(date +%s) - start )) s wall)"
live_step=$(step "$T/d.err")
[ -n "$live_step" ] && [ "$(num end_ns "$T/d.out")" = "$live_step" ] &&
  ok "the script's clock at its end = the run's step time, $live_step ns" ||
  fail "script end $(num end_ns "$T/d.out"), live step time $live_step"
"$ETKIT" sim "$T/rec" --cluster dgx-h100 >"$T/sim" 2>&1
[ "$(step "$T/sim")" = "$live_step" ] && ok "etkit sim of the recording: $(step "$T/sim") ns = live" ||
  fail "sim $(step "$T/sim"), live $live_step"
P=$(( 2 * 1024 * 256 + 128 * 256 + 2 * (12 * 256 * 256 + 13 * 256) + 2 * 256 ))
ar=$(awk '$1 == "ALL_REDUCE" { gsub(",", "", $6); print $6 }' "$T/d.err")
bc=$(awk '$1 == "BROADCAST" { gsub(",", "", $6); print $6 }' "$T/d.err")
[ "$ar" = $((3 * 2 * P)) ] && ok "DDP all-reduces 3 x 2P = $ar bytes (P = $P)" || fail "all-reduce bytes $ar, want $((6 * P))"
# + the rebuilt bucket indices DDP broadcasts from rank 0 after its first step (a few int32)
[ -n "$bc" ] && [ $((bc - 2 * P)) -gt 0 ] && [ $((bc - 2 * P)) -le 1024 ] &&
  ok "DDP broadcasts the parameters once (2P) and the bucket indices once: $bc bytes" ||
  fail "broadcast bytes $bc, want 2P = $((2 * P)) + at most 1 KiB"

# the peak of memory against gpt_mem.py's closed form (each rank holds the whole model: rank 0's)
gpt_peak() {  # <what> <script output> <closed form output> [memory log]: the peak = the closed form,
  # and the memory log's first line at the peak is the allocation of the closed form's point: H the
  # head's backward (_log_softmax_backward_data), F fc2's bias gradient (sum), O the optimizer's div
  local got want at pk op
  got=$(num max_memory_allocated_bytes "$2"); want=$(num closed_form_bytes "$3")
  at=$(sed -n 's/.*closed_form_bytes [0-9]* at \([HFO]\).*/\1/p' "$3")
  [ -n "$want" ] && [ "${got:-x}" = "$want" ] && ok "$1: max_memory_allocated $got bytes = the closed form (at $at, gpt_mem.py)" ||
    fail "$1: max_memory_allocated ${got:-none}, closed form ${want:-none} ($(head -1 "$3"))"
  [ -z "${4:-}" ] && return
  pk=$(awk '$3 > m { m = $3; l = $0 } END { print l }' "$4" 2>/dev/null)
  case $at in H) op=aten::_log_softmax_backward_data ;; F) op=aten::sum ;; *) op=aten::div ;; esac
  [ "$(echo "$pk" | awk '{ print $3, $4 }')" = "$want $op" ] && ok "  the memory log's peak: $pk" ||
    fail "$1: the memory log's peak '$pk', want $want at $op"
}
"$PY" "$D/gpt_mem.py" >"$T/cf.out" || fail "gpt_mem.py exited $?"
gpt_peak "DDP, 8 ranks" "$T/d.out" "$T/cf.out" "$T/ml.0"
# the two other points of the closed form as the peak, 1 rank, 2 steps: F with a vocabulary of 256
# (the head's N x V tensors small beside the last block's gradients), O without dropout and with
# 3 layers, h 512, 8 heads, S 64, V 3000, B 3 (the saved activations small beside 5 x 2P)
for c in "F 2 256 4 128 256 2 0.1" "O 3 512 8 64 3000 3 0"; do
  set -- $c
  GPT_LAYERS=$2 GPT_HIDDEN=$3 GPT_HEADS=$4 GPT_SEQ=$5 GPT_VOCAB=$6 GPT_BATCH=$7 GPT_DROPOUT=$8 STEPS=2 ETKIT_TORCH_MEMLOG=$T/ml$1 \
    timeout 240 "$ETKIT" live --cluster dgx-h100 --ranks 1 --cpu-scale 0 -- "$PY" "$D/train_ddp.py" >"$T/d$1.out" 2>"$T/d$1.err" ||
    fail "train_ddp.py ($c) exited $?: $(tail -3 "$T/d$1.err")"
  GPT_LAYERS=$2 GPT_HIDDEN=$3 GPT_HEADS=$4 GPT_SEQ=$5 GPT_VOCAB=$6 GPT_BATCH=$7 GPT_DROPOUT=$8 STEPS=2 \
    "$PY" "$D/gpt_mem.py" >"$T/cf$1.out" || fail "gpt_mem.py exited $?"
  grep -q "at $1 " "$T/cf$1.out" || fail "gpt_mem.py ($c): $(head -1 "$T/cf$1.out"), want the peak at $1"
  gpt_peak "L $2, h $3, V $6, dropout $8, 1 rank" "$T/d$1.out" "$T/cf$1.out" "$T/ml$1.0"
done
# the forward's saved tensors of the closed form against torch's own autograd graph: gpt_saved.py
# (plain python3 on the CPU, no etkit) sums the storages its nodes hold (_saved_*), with and
# without dropout; gpt_mem.py --cpu the same terms with layer_norm's statistics in BF16 (CPU)
for dp in 0.1 0; do
  a=$(GPT_DROPOUT=$dp "$PY" "$D/gpt_saved.py" 2>&1); b=$(GPT_DROPOUT=$dp "$PY" "$D/gpt_mem.py" --cpu 2>&1)
  [ "$(echo "$a" | awk '{ print $2 }')" = "$(echo "$b" | awk '{ print $2 }')" ] && [ -n "$b" ] &&
    ok "dropout $dp: autograd saves $(echo "$a" | cut -d' ' -f2-) (CPU run) = gpt_mem.py's terms" ||
    fail "dropout $dp: gpt_saved.py '$a', gpt_mem.py --cpu '$b'"
done

# (d) train_tp.py: Megatron-style TP = 2 x DP = 2 on 4 ranks (groups from new_group), 3 steps. On
#     the TP group per step: per layer 2 all-reduces of the activations forward and 2 of their
#     gradients backward, the vocabulary-parallel embedding's output forward and the output
#     layer's input gradient backward, each B S h x 2 bytes (2 L + 2 L + 2 = 10), and the
#     vocabulary-parallel cross-entropy's max, target logit and sum of exponentials, B S x 4 bytes
#     (FP32): 3 x 13 = 39. On the DP group DDP's bucketed all-reduces of all the rank's gradients,
#     3 x 2 P bytes in fewer all-reduces than parameters (P = 2 (V/TP) h + S h + 2h
#     + L (12 h^2/TP + 7h/TP + 4h)). The script's clock = the run's step time = etkit sim.
TP=2 timeout 240 "$ETKIT" live --cluster dgx-h100 --ranks 4 --cpu-scale 0 --record "$T/tp" -- "$PY" "$D/train_tp.py" \
  >"$T/t.out" 2>"$T/t.err" || fail "train_tp.py exited $?: $(tail -5 "$T/t.err")"
tp_step=$(step "$T/t.err")
[ -n "$tp_step" ] && [ "$(num end_ns "$T/t.out")" = "$tp_step" ] && ok "TP: the script's clock at its end = $tp_step ns" ||
  fail "TP: script end $(num end_ns "$T/t.out"), live $tp_step"
"$ETKIT" sim "$T/tp" --cluster dgx-h100 >"$T/tsim" 2>&1
[ "$(step "$T/tsim")" = "$tp_step" ] && ok "TP: etkit sim of the recording = live" || fail "TP: sim $(step "$T/tsim")"
# the report names one group per row of groups alike (TP and DP groups both have 2 members):
# tell them apart by their counts
ars=$(awk '$1 == "ALL_REDUCE" && $3 == 2 { gsub(",", "", $6); print $5, $6 }' "$T/t.err")
tp_ar=$((3 * 10 * 2 * 128 * 256 * 2 + 3 * 3 * 2 * 128 * 4))
echo "$ars" | grep -qx "39 $tp_ar" &&
  ok "TP all-reduces: 3 x (2 layers x 4 + 2) of B S h x 2 bytes + 3 x 3 of B S x 4 bytes" ||
  fail "TP all-reduces: '$ars', want '39 $tp_ar'"
dp_p=$((2 * 512 * 256 + 128 * 256 + 2 * 256 + 2 * (12 * 256 * 256 / 2 + 7 * 256 / 2 + 4 * 256)))
dp_n=$(echo "$ars" | awk -v b=$((3 * 2 * dp_p)) '$2 == b { print $1 }')
[ -n "$dp_n" ] && [ "$dp_n" -ge 3 ] && [ "$dp_n" -lt 75 ] &&
  ok "DP all-reduces: DDP's buckets, $dp_n of 3 x 2P = $((3 * 2 * dp_p)) bytes (not one per parameter: 75)" ||
  fail "DP all-reduces: '$ars', want 3 x 2P = $((3 * 2 * dp_p)) bytes in 3 to 74 all-reduces"
# (e) train_fsdp.py: FSDP, full sharding, one unit per block (L = 2) and the root unit (embeddings,
#     final norm, head), 8 ranks, 3 steps. Per step: forward all-gathers every unit (L + 1), backward
#     the L blocks again (the root stays gathered after forward), each the rank's shard of 2 P_u / 8
#     bytes (BF16; the report counts an all-gather's send bytes): 3 (2L + 1) = 15 all-gathers of
#     3 x 2 (P_root + 2 L P_block) / 8 bytes; one reduce-scatter per unit and step, 3 x 3 = 9, of
#     the whole gradient (the report counts a reduce-scatter's input): 3 x 2P bytes.
#     P_root = 2 V h + S h + 2h, P_block = 12 h^2 + 13 h (both divide by 8: no padding).
start=$(date +%s)
timeout 300 "$ETKIT" live --cluster dgx-h100 --ranks 8 --cpu-scale 0 --record "$T/fsdp" -- "$PY" "$D/train_fsdp.py" \
  >"$T/f.out" 2>"$T/f.err" || fail "train_fsdp.py exited $?: $(grep -v '^  ' "$T/f.err" | tail -5)"
echo "     (8 ranks of train_fsdp.py, 3 steps: $(( $(date +%s) - start )) s wall)"
f_step=$(step "$T/f.err")
[ -n "$f_step" ] && [ "$(num end_ns "$T/f.out")" = "$f_step" ] && ok "FSDP: the script's clock at its end = $f_step ns" ||
  fail "FSDP: script end $(num end_ns "$T/f.out"), live $f_step"
"$ETKIT" sim "$T/fsdp" --cluster dgx-h100 >"$T/fsim" 2>&1
[ "$(step "$T/fsim")" = "$f_step" ] && ok "FSDP: etkit sim of the recording = live" || fail "FSDP: sim $(step "$T/fsim")"
PR=$(( 2 * 1024 * 256 + 128 * 256 + 2 * 256 )); PB=$(( 12 * 256 * 256 + 13 * 256 ))
ag=$(awk '$1 == "ALL_GATHER" { gsub(",", "", $6); print $5, $6 }' "$T/f.err")
rs=$(awk '$1 == "REDUCE_SCATTER" { gsub(",", "", $6); print $5, $6 }' "$T/f.err")
[ "$ag" = "15 $(( 3 * 2 * (PR + 2 * 2 * PB) / 8 ))" ] && ok "FSDP all-gathers: 3 x (2L + 1) = 15 of the shards, $ag bytes" ||
  fail "FSDP all-gathers '$ag', want '15 $(( 3 * 2 * (PR + 4 * PB) / 8 ))'"
[ "$rs" = "9 $(( 3 * 2 * (PR + 2 * PB) ))" ] && ok "FSDP reduce-scatters: 3 x (L + 1) = 9, 3 x 2P = ${rs#* } bytes" ||
  fail "FSDP reduce-scatters '$rs', want '9 $(( 6 * (PR + 2 * PB) ))'"
# mem_fsdp.py: (b)'s L = 4 Linear(1024, 1024) FP32 layers, Adam, B = 8192, one FSDP unit per layer on
# W = 4 ranks; A = 4BH = 32 MiB, a layer's weight Pl = 4H^2 = 4 MiB, its shard Pl/W = 1 MiB.
#   wrapped (the shards): L Pl/W = 4 MiB
#   after the first optimizer step: the input A + per layer shard, gradient shard, Adam m and v
#     (4 L Pl/W) + the loss (512 B) = 48 MiB + 512 B
#   peak, in backward at layer L-2 (from the second step on): 5 activations as in (b) + the layer's
#     gathered weight and its unsharded gradient (2 Pl) + the shards of the weights and Adam state
#     (3 L Pl/W) + layer L-1's reduced gradient shard (Pl/W) + the loss and its gradient (1,024 B)
#     = 160 + 8 + 13 MiB + 1,024 B.
timeout 300 "$ETKIT" live --ranks 4 --cpu-scale 0 -- "$PY" "$D/mem_fsdp.py" >"$T/mf.out" 2>"$T/mf.err" ||
  fail "mem_fsdp.py exited $?: $(grep -v '^  ' "$T/mf.err" | tail -3)"
Mi=1048576
[ "$(num wrapped_bytes "$T/mf.out")" = $((4 * Mi)) ] && ok "FSDP: memory_allocated after wrapping = the shards, 4 MiB" ||
  fail "FSDP wrapped $(num wrapped_bytes "$T/mf.out"), want $((4 * Mi))"
[ "$(num after_step_bytes "$T/mf.out")" = $((48 * Mi + 512)) ] &&
  ok "FSDP: after the first step = A + 4 L Pl/W + 512 B = $((48 * Mi + 512)) bytes" ||
  fail "FSDP after step $(num after_step_bytes "$T/mf.out"), want $((48 * Mi + 512))"
[ "$(num max_memory_allocated_bytes "$T/mf.out")" = $((181 * Mi + 1024)) ] &&
  ok "FSDP: max_memory_allocated = 5A + 2 Pl + (3L + 1) Pl/W + 1,024 B = $((181 * Mi + 1024)) bytes" ||
  fail "FSDP peak $(num max_memory_allocated_bytes "$T/mf.out"), want $((181 * Mi + 1024))"

# (f) mem_ddp.py: 4 bias-free Linear(1024, 1024) BF16 layers (P = 4 Mi parameters, 2P = 8 MiB), DDP
# with the default 25 MiB bucket cap: one bucket of 2P bytes, made by the reducer in C++. After
# wrapping: the parameters and the bucket, 2 x 2P = 16 MiB; after each backward (the second forward
# rebuilds the buckets: 2 + 6 MiB, the same total): + the gradients (2P) + the input (64 x 1024 x
# 2 B = 128 KiB) = 24 MiB + 128 KiB; with gradient_as_bucket_view the gradients are views of the
# bucket: 16 MiB + 128 KiB.
for bv in 0 1; do
  BUCKET_VIEW=$bv timeout 300 "$ETKIT" live --ranks 1 --cpu-scale 0 -- "$PY" "$D/mem_ddp.py" >"$T/md$bv.out" 2>"$T/md$bv.err" ||
    fail "mem_ddp.py (BUCKET_VIEW=$bv) exited $?: $(grep -v '^  ' "$T/md$bv.err" | tail -3)"
done
[ "$(num wrapped_bytes "$T/md0.out")" = $((16 * Mi)) ] && ok "DDP: after wrapping = parameters + bucket = 2 x 2P = 16 MiB" ||
  fail "DDP wrapped $(num wrapped_bytes "$T/md0.out"), want $((16 * Mi))"
want="$((24 * Mi + 131072)) $((24 * Mi + 131072)) $((24 * Mi + 131072))"
got=$(sed -n 's/^backward [0-9] bytes //p' "$T/md0.out" | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] && ok "DDP: after each of 3 backward passes = 3 x 2P + input = $((24 * Mi + 131072)) bytes (buckets rebuilt)" ||
  fail "DDP after backward '$got', want '$want'"
got=$(sed -n 's/^backward [0-9] bytes //p' "$T/md1.out" | tr '\n' ' ' | sed 's/ $//')
want="$((16 * Mi + 131072)) $((16 * Mi + 131072)) $((16 * Mi + 131072))"
[ "$got" = "$want" ] && ok "DDP gradient_as_bucket_view: gradients in the bucket, 2 x 2P + input = $((16 * Mi + 131072)) bytes" ||
  fail "DDP bucket view after backward '$got', want '$want'"
# (g) bytes.py with --compute roofline (a memory-bound kernel takes floor(bytes / 3.35e12 B/s)):
# lists of N = 3 tensors, n = 1e6 BF16, 2e6 FP32, 3e6 BF16: S = sum n_i e_i = 16e6 bytes.
#   _foreach_add_(x, y) reads x and y, writes x: 3S = 48e6 B -> 14,328 ns
#   _foreach_mul_(x, 0.5): 2S -> 9,552 ns; _foreach_sqrt(x) (a new list, x's shapes and dtypes): 2S
#   _foreach_addcmul_(x, y, y, 0.1): y is read once: 3S -> 14,328 ns (4S, 19,104 ns, if y counted twice)
#   gather of one FP32 logit per row of 4096 x 50,000 (index int64 4096 x 1): the index 32,768 B
#     + the 4096 selected logits read and written 2 x 16,384 B = 65,536 B -> 19 ns (not the 819.2 MB
#     of the whole tensor: 244,571 ns); scatter_add_ of them back: index 32,768 + src 16,384 + the
#     4096 touched elements read and written 32,768 = 81,920 B -> 24 ns
#   x[rows] = 0.0 on that tensor, rows 64 int64 (index_put_): the index 512 B + the value 4 B + the
#     64 x 50,000 selected FP32 elements written 12,800,000 B = 12,800,516 B -> 3,821 ns (not the
#     whole tensor read and written, 1.6384 GB: 489,074 ns); index_put_ of a 64 x 50,000 FP32 v
#     with accumulate=True: 512 + 12,800,000 + 2 x 12,800,000 = 38,400,512 B -> 11,462 ns
timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 --compute roofline -- "$PY" "$D/bytes.py" >"$T/b.out" 2>"$T/b.err" ||
  fail "bytes.py exited $?: $(tail -3 "$T/b.err")"
for kv in foreach_add_ns:14328 foreach_mul_ns:9552 foreach_addcmul_ns:14328 foreach_sqrt_ns:9552 gather_ns:19 scatter_add_ns:24 \
    index_put_ns:3821 index_put_acc_ns:11462; do
  k=${kv%:*} v=${kv#*:}
  [ "$(num "$k" "$T/b.out")" = "$v" ] && ok "${k%_ns}: $v ns (closed-form bytes / HBM)" || fail "$k $(num "$k" "$T/b.out"), want $v"
done
grep -q "^foreach_sqrt_ns .* out \[(1000000,), (2000000,), (3000000,)\] \['torch.bfloat16', 'torch.float32', 'torch.bfloat16'\]" "$T/b.out" &&
  ok "_foreach_sqrt: a new list with the input's shapes and dtypes" || fail "foreach_sqrt: $(grep sqrt "$T/b.out")"
# (h) lazy.py builds ~240 MB of CPU parameters (an embedding 50304 x 768 by normal_, Linear(768,
# 3072) by uniform_, a LayerNorm of 2^20 by fill_/zero_, a Linear moved to float64 on the CPU, one
# with its own generator, a state_dict through torch.save, a 64 MiB Linear moved to the GPU) and
# prints values of them and a draw of the default generator after them: under etkit live (the
# fills deferred, _lazy.py) every value equals a plain python3 run's, to the printed digit. Its
# resident memory grows by the parameters' bytes in the plain run (~242 MB); live by the 8 MiB
# scratch buffer the random fills advance the generator on + the float64 Linear (2.66 MB read to
# convert, 5.33 MB kept) + the small tensors: bound 24 MiB (242 MB if nothing is deferred).
"$PY" "$D/lazy.py" >"$T/lz0.out" 2>"$T/lz0.err" || fail "lazy.py (plain python) exited $?: $(tail -3 "$T/lz0.err")"
timeout 240 "$ETKIT" live --ranks 1 --cpu-scale 0 -- "$PY" "$D/lazy.py" >"$T/lz.out" 2>"$T/lz.err" ||
  fail "lazy.py exited $?: $(tail -3 "$T/lz.err")"
[ "$(grep -c '^val' "$T/lz0.out")" = 7 ] && [ "$(grep '^val' "$T/lz0.out")" = "$(grep '^val' "$T/lz.out")" ] &&
  ok "deferred CPU initialisation: the 7 value lines equal a plain run's" ||
  fail "lazy.py values differ: $(diff <(grep '^val' "$T/lz0.out") <(grep '^val' "$T/lz.out") | head -4)"
g=$(num rss_growth_kib "$T/lz.out"); g2=$(num rss_after_cuda_kib "$T/lz.out")
[ -n "$g" ] && [ "$g" -lt $((24 * 1024)) ] && [ $((g2 - g)) -lt 4096 ] &&
  ok "building ~240 MB of CPU parameters: +$g KiB resident (plain run: +$(num rss_growth_kib "$T/lz0.out") KiB); .cuda() of a 64 MiB Linear: +$((g2 - g)) KiB" ||
  fail "lazy.py resident growth $g KiB (bound 24 MiB), after .cuda() $g2 KiB"
# train_ddp.py at its own sizes (GPT-2 small, 163 M parameters: 652 MB FP32 on the CPU before
# .cuda()), 2 ranks, 1 step: the largest process's peak RSS (ru_maxrss of the waited-for children:
# the ranks and the coordinator). Measured 240 MB a rank (import torch, the module, DDP: 226 MB;
# the scratch buffer 8 MiB); 853 MB before the initialisation was deferred. Bound 400 MiB: room for
# another torch build, and still caught if even the embeddings (2 x 154.5 MB) were filled.
unset GPT_LAYERS GPT_HIDDEN GPT_HEADS GPT_SEQ GPT_VOCAB GPT_BATCH
kib=$(STEPS=1 OUT="$T/g2.out" "$PY" -c 'import os, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=open(os.environ["OUT"], "w"), stderr=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r == 0 else "exit%d" % r)' \
  timeout 300 "$ETKIT" live --cluster dgx-h100 --ranks 2 --cpu-scale 0 -- "$PY" "$D/train_ddp.py")
case $kib in
  exit*) fail "train_ddp.py at GPT-2 small, 2 ranks: $kib" ;;
  *) [ "$kib" -lt $((400 * 1024)) ] && ok "GPT-2 small DDP, 2 ranks: peak RSS of the largest process $((kib / 1024)) MiB (bound 400; 853 MB with the weights filled on the CPU)" ||
       fail "GPT-2 small DDP: peak RSS of the largest process $((kib / 1024)) MiB, bound 400 MiB" ;;
esac
# and its memory: the closed form at GPT-2 small with STEPS=1 (the backward before AdamW's state
# exists): 11,764,927,488 bytes, in the head's backward (3 x 824 MB of N x V BF16 live)
STEPS=1 "$PY" "$D/gpt_mem.py" >"$T/cf2.out" || fail "gpt_mem.py exited $?"
gpt_peak "GPT-2 small DDP, 2 ranks, 1 step" "$T/g2.out" "$T/cf2.out"
[ $fails = 0 ] && echo "all ok" || { echo "$fails failure(s)"; exit 1; }
