#!/usr/bin/env bash
# Seeds for fuzz_node_codec: single Node messages cut out of the shared traces.
set -eu
SHARED=$1; OUT=$2
mkdir -p "$OUT"
python3 - "$SHARED" "$OUT" <<'PY' 2>/dev/null || true
import sys, os, glob
shared, out = sys.argv[1], sys.argv[2]
def varint(b, o):
    r = s = 0
    while True:
        x = b[o]; o += 1; r |= (x & 0x7f) << s; s += 7
        if not x & 0x80: return r, o
files = sorted(glob.glob(shared + '/data/**/*.et', recursive=True))[:40]
n = 0
for f in files:
    b = open(f, 'rb').read(); o = 0; i = 0
    while o < len(b) and i < 40:
        l, o = varint(b, o)
        if i > 0:
            open(os.path.join(out, 'node%05d' % n), 'wb').write(b[o:o + l]); n += 1
        o += l; i += 1
PY
