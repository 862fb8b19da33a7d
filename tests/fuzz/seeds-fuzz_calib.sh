#!/usr/bin/env bash
# Seeds for fuzz_calib: the rows of the repository's Korthikanti set and of the shared modern
# set, one row per file (inputs stay under fuzz_calib's -max_len), each with as few layers as its plan
# allows, each modern row followed by a
# NUL and its plan-extra entry where it has one. Args: shared dir, output dir.
set -eu
shared=$1 out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 - "$shared/spec/calibration-modern.json" "$here/bench/calibration/modern-plan-extra.json" "$out" \
  "$here/bench/calibration/korthikanti.json" <<'PY'
import json, sys
def small(r):
    # as few layers as the plan allows (pp x vpp): the row's plan is checked by the generator
    # when it loads (etk_gen_check, ~1 s for a 126-layer model in the fuzz build), and the
    # fuzzer mutates this row's text, not the model's size
    if isinstance(r, dict) and isinstance(r.get("model"), dict) and isinstance(r.get("plan"), dict):
        p = r["plan"]
        n = max(1, int(p.get("pp", 1) or 1)) * max(1, int(p.get("vpp", 1) or 1))
        r["model"].setdefault("overrides", {})["layers"] = n
    return r
for i, r in enumerate(json.load(open(sys.argv[4]))):
    open(f"{sys.argv[3]}/korthikanti{i}", "wb").write(json.dumps([small(r)], separators=(",", ":")).encode())
rows = [small(r) for r in json.load(open(sys.argv[1]))]
extra = json.load(open(sys.argv[2]))
if isinstance(rows, dict):
    rows = rows.get("rows", [])
for i, r in enumerate(rows):
    data = json.dumps([r], separators=(",", ":")).encode()
    if isinstance(r, dict) and r.get("name") in extra:
        data += b"\0" + json.dumps({r["name"]: extra[r["name"]]}, separators=(",", ":")).encode()
    open(f"{sys.argv[3]}/modern{i}", "wb").write(data)
PY
