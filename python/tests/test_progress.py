"""The progress line: drawn in place on a terminal (a pseudo-terminal here), absent when stderr
is a pipe or a file, and with --quiet."""
import os
import pty
import subprocess

import pytest

GEN = ["gen", "--model", "llama2-7b", "--layers", "2", "--dp", "64", "--seq", "512", "--global-batch", "64"]


def under_pty(cmd, env_extra):
    """Run cmd with stderr on a pseudo-terminal; returns (status, what the terminal got)."""
    master, slave = pty.openpty()
    env = dict(os.environ, **env_extra)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(), out.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def exe():
    e = os.environ.get("ETKIT_CLI")
    if not e or not os.path.exists(e):
        pytest.skip("ETKIT_CLI not set")
    return e


def test_gen_progress_on_a_terminal(exe, tmp_path):
    rc, tty = under_pty([exe] + GEN + ["-o", str(tmp_path / "a")], {"ETK_PROGRESS_DELAY_MS": "0"})
    assert rc == 0
    assert "\rrank files " in tty and "/64 (" in tty
    # the counts only grow, up to the 64 files, and the line is erased at the end
    counts = [int(part.split("/")[0]) for part in tty.split("\rrank files ")[1:]]
    assert counts == sorted(counts) and 1 <= counts[-1] <= 64
    assert tty.endswith("\r\x1b[K")


def test_gen_quiet_and_pipe(exe, tmp_path):
    rc, tty = under_pty([exe] + GEN + ["-o", str(tmp_path / "b"), "--quiet"], {"ETK_PROGRESS_DELAY_MS": "0"})
    assert rc == 0 and tty == ""
    p = subprocess.run([exe] + GEN + ["-o", str(tmp_path / "c")], capture_output=True, text=True,
                       env=dict(os.environ, ETK_PROGRESS_DELAY_MS="0"))
    assert p.returncode == 0 and p.stderr == ""


def test_default_delay_keeps_short_work_silent(exe, tmp_path):
    rc, tty = under_pty([exe] + GEN + ["-o", str(tmp_path / "d")], {"ETK_PROGRESS_DELAY_MS": ""})
    assert rc == 0 and "rank files" not in tty  # done well within 500 ms


def test_run_progress(exe):
    # an unfolded simulation of 8 ranks: ~80,000 events, the line updated every 4,096
    args = [exe, "run", "--model", "llama2-7b", "--dp", "8", "--seq", "1024",
            "--global-batch", "64", "--cluster", "dgx-a100", "--nodes", "1", "--no-fold"]
    rc, tty = under_pty(args, {"ETK_PROGRESS_DELAY_MS": "0"})
    assert rc == 0 and "\rsimulated nodes " in tty and tty.endswith("\r\x1b[K")
    p = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, ETK_PROGRESS_DELAY_MS="0"))
    assert p.returncode == 0 and "simulated nodes" not in p.stderr
