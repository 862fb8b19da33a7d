#!/usr/bin/env bash
# Seeds for fuzz_cluster: the built-in cluster presets. Args: shared dir, output dir.
set -eu
out=$2
mkdir -p "$out"
cp "$(dirname "$0")"/../../presets/clusters/*.yaml "$out"/
