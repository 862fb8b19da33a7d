"""live_rss.py CMD... — run CMD (an `etkit live` run), sample its process tree's memory every
0.5 s and print the peaks: the sum of RSS over the processes (shared library pages counted once per
process), the sum of PSS (each shared page divided among its users: the host memory in use), the
largest single process; and the wall time and the CPU time of CMD and its children
(bench/RESULTS.md "s25-torch"). OUTF: where CMD's output goes (default /dev/null)."""
import os
import resource
import subprocess
import sys
import time


def tree(root):
    """root and its descendants (from /proc/PID/stat's parent field)."""
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(parent, []).append(int(p))
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        x = todo.pop()
        out.append(x)
        todo += kids.get(x, [])
    return out


def mem(pid):
    """(RSS, PSS) of a process in KiB (0 once it has gone)."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


t0 = time.time()
proc = subprocess.Popen(sys.argv[1:], stdout=open(os.environ.get("OUTF", "/dev/null"), "w"), stderr=subprocess.STDOUT)
peak_rss = peak_pss = peak_n = largest = 0
while proc.poll() is None:
    ms = [mem(x) for x in tree(proc.pid)]
    rss, pss = sum(m[0] for m in ms), sum(m[1] for m in ms)
    if rss > peak_rss:
        peak_rss, peak_n = rss, len(ms)
    peak_pss = max(peak_pss, pss)
    largest = max([largest] + [m[0] for m in ms])
    time.sleep(0.5)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"cpu {ru.ru_utime + ru.ru_stime:.1f} s (user {ru.ru_utime:.1f} + sys {ru.ru_stime:.1f}) rc {proc.returncode} "
      f"wall {time.time() - t0:.1f} s  peak sum RSS {peak_rss / 1048576:.2f} GiB ({peak_n} procs)  "
      f"peak sum PSS {peak_pss / 1048576:.2f} GiB  largest process {largest / 1024:.0f} MiB")
