import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="session")
def cli():
    """Run the etkit command ($ETKIT_CLI, default build/etkit): (status, stdout, stderr)."""
    exe = os.environ.get("ETKIT_CLI", os.path.join(SOURCE, "build", "etkit"))
    if not os.path.exists(exe):
        pytest.skip(f"the etkit command is not built ({exe})")

    def run(*args):
        p = subprocess.run([exe] + [str(a) for a in args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr
    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    def run(*args):
        rc, out, err = cli(*args)
        assert rc == 0, err
        return json.loads(out)
    return run


@pytest.fixture(scope="session")
def shared():
    d = os.environ.get("ETK_SHARED_DIR", os.path.join(SOURCE, "..", "shared"))
    if not os.path.isdir(os.path.join(d, "data")):
        pytest.skip(f"shared data not found ({d})")
    return d


@pytest.fixture
def chromium(tmp_path):
    """Run headless Chromium on a page with every host name unresolvable: chromium(path, *flags)
    -> CompletedProcess (skipped, with the reason, where chromium is absent)."""
    import shutil
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium is not installed: the page was not rendered")

    def run(path, *flags):
        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "prof"),
                "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"]
        return subprocess.run(args + list(flags) + ["file://" + str(path)], capture_output=True, text=True,
                              timeout=120)
    return run
