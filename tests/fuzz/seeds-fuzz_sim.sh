#!/usr/bin/env bash
# Seeds for fuzz_sim: small real traces (ASTRA-sim microbenchmark, STAGE rank 0, the converted
# Chakra host trace). Args: shared dir, output dir.
set -eu
shared=$1
out=$2
mkdir -p "$out"
cp "$shared"/data/astra-sim-microbenchmarks/all_reduce/4npus_1MB/all_reduce.0.et "$out"/
cp "$shared"/data/stage/gpt_small_dp2_tp2_pp2/workload.0.et "$out"/
cp "$shared"/data/chakra/pytorch_host_et_1.0.2.chakra-converted.et "$out"/
