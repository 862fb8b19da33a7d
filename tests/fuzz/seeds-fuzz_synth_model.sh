#!/usr/bin/env bash
# Seeds for fuzz_synth_model: none generated here (a model file needs a fit); the corpus
# folder (tests/fuzz/corpus/fuzz_synth_model/) holds a count model fitted to a 2-rank workload.
mkdir -p "$2"
