#!/usr/bin/env bash
# seeds for fuzz_model: the built-in model presets with small dimensions
set -eu
out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$here"/presets/models/*.yaml; do
  sed -e 's/^layers: .*/layers: 2/' -e 's/^hidden: .*/hidden: 128/' -e 's/^ffn: .*/ffn: 256/' \
      -e 's/^vocab: .*/vocab: 512/' -e 's/^seq: .*/seq: 32/' -e 's/^heads: .*/heads: 8/' \
      -e 's/^kv_heads: .*/kv_heads: 4/' "$f" >"$out/$(basename "$f")"
done
sed -i 's/^kv_heads: .*/kv_heads: 8/' "$out"/gpt3-175b.yaml "$out"/megatron-*.yaml
