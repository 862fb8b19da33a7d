"""etkit's Python API against the etkit command's JSON for the same inputs (equal values) and
against values derived by hand from the definitions (docs/sim.md)."""
import json
import os
import resource
import threading
import time

import pytest

import etkit

SMALL = dict(model="llama2-7b", layers=2, dp=2, seq=1024, global_batch=4)


def test_run_default_equals_cli(cli_json):
    r = etkit.run()
    assert r.to_dict() == cli_json("run", "--json")
    # the default job: llama3-8b, TP 4 x PP 2 x DP 8 = 64 ranks, 256 sequences of 8192 tokens
    assert r.n_ranks == 64 and r.plan["tp"] == 4 and r.plan["pp"] == 2 and r.plan["dp"] == 8
    assert r.tokens_per_step == 256 * 8192
    assert r.peak_tflops == 989.0  # H100 SXM dense BF16 (NVIDIA data sheet)
    step_s = r.step_ns / 1e9
    assert r.step_s == step_s
    assert r.tflops_per_gpu == pytest.approx(r.flops_per_step / 64 / step_s / 1e12, rel=1e-12)
    assert r.mfu == pytest.approx(r.tflops_per_gpu / 989.0, rel=1e-12)
    assert r.tokens_per_s == pytest.approx(256 * 8192 / step_s, rel=1e-12)
    # where each rank's time goes adds up to the step
    assert len(r.per_rank) == 64
    for p in r.per_rank:
        assert p["compute_ns"] + p["exposed_comm_ns"] + p["cpu_ns"] + p["idle_ns"] == r.step_ns
    assert max(p["finish_ns"] for p in r.per_rank) == r.step_ns
    types = {c["type"] for c in r.collectives}
    assert "SEND_RECV" in types  # pipeline sends between the 2 stages
    for c in r.collectives:
        assert c["algbw_GBps"] == pytest.approx(c["bytes"] / c["time_ns"], rel=1e-9)


def test_run_options_equal_cli(cli_json):
    r = etkit.run(model="llama3-8b", tp=2, pp=2, dp=2, cluster="hgx-h200", nodes=1, sp=True,
                  global_batch=16, micro_batch=2, seq=2048, recompute="selective")
    d = cli_json("run", "--model", "llama3-8b", "--tp", "2", "--pp", "2", "--dp", "2", "--cluster",
                 "hgx-h200", "--nodes", "1", "--sp", "--global-batch", "16", "--micro-batch", "2",
                 "--seq", "2048", "--recompute", "selective", "--json")
    assert r.to_dict() == d
    assert r.plan["micro_batches"] == 16 // (2 * 2)  # global batch / (micro-batch x DP)
    assert r.cluster["name"] == "hgx-h200" and r.n_ranks == 8


def test_run_inference_equals_cli(cli_json):
    r = etkit.run(mode="inference", model="llama3-8b", tp=2, batch=4, prompt_len=512, decode_steps=8,
                  cluster="hgx-h200", gpus=2)
    # the same command line (the report includes it): named parameters first, then the others
    d = cli_json("run", "--model", "llama3-8b", "--tp", "2", "--cluster", "hgx-h200", "--mode", "inference",
                 "--batch", "4", "--prompt-len", "512", "--decode-steps", "8", "--gpus", "2", "--json")
    assert r.to_dict() == d
    inf = r.inference
    assert inf["decode_steps"] == 8 and len(inf["phase_end_ns"]) == 9
    assert inf["ttft_ns"] == inf["phase_end_ns"][0] and inf["phase_end_ns"][-1] <= r.step_ns
    # TPOT: the mean decode step, (end of step N - TTFT) / N
    assert inf["tpot_ns"] == pytest.approx((inf["phase_end_ns"][8] - inf["ttft_ns"]) / 8, abs=1)
    steps = [b - a for a, b in zip(inf["phase_end_ns"], inf["phase_end_ns"][1:])]
    assert inf["tpot_min_ns"] == min(steps) and inf["tpot_max_ns"] == max(steps)


def test_options_mapping():
    assert etkit.options(tp=4, sp=True, no_fold=False, global_batch=512, gpu=None,
                         slow_rank=["3:0.8", "1:0.9"]) == \
        ["--tp", "4", "--sp", "--global-batch", "512", "--slow-rank", "3:0.8", "--slow-rank", "1:0.9"]


def test_error_mapping(cli):
    with pytest.raises(etkit.Error) as e:
        etkit.run(model="llama3-8b", tp=3, pp=1, dp=1)
    rc, _, err = cli("run", "--model", "llama3-8b", "--tp", "3", "--pp", "1", "--dp", "1", "--json")
    assert e.value.status == rc == 2
    assert str(e.value) == err.strip()
    assert str(e.value).startswith("etkit run: error:")
    with pytest.raises(etkit.Error, match="unknown option '--bogus'"):
        etkit.run(bogus=1)
    with pytest.raises(etkit.Error, match="no-such-model"):
        etkit.run(model="no-such-model")
    with pytest.raises(etkit.Error, match="/nonexistent/x.et"):
        etkit.read_trace("/nonexistent/x.et")
    # the library is usable after errors
    assert etkit.run(**SMALL).n_ranks == 2


def test_gen_simulate_validate_equal_cli(tmp_path, cli, cli_json):
    prefix = str(tmp_path / "w")
    g = etkit.gen(prefix, **SMALL)
    assert g["files"] == [prefix + ".0.et", prefix + ".1.et", prefix + ".json"]
    assert all(os.path.exists(f) for f in g["files"])
    opts = ["--model", "llama2-7b", "--layers", "2", "--dp", "2", "--seq", "1024", "--global-batch", "4"]
    assert g["summary"] == cli_json("gen", *opts, "--summary", "--json")
    s = etkit.simulate(prefix, cluster="dgx-a100", gpus=2)
    assert s.to_dict() == cli_json("sim", prefix, "--cluster", "dgx-a100", "--gpus", "2", "--json")
    assert s.n_ranks == 2
    v = etkit.validate(prefix)
    assert v == cli_json("validate", "--json", prefix)
    assert v["ok"] is True and v["workloads"][0]["ranks"] == 2 and v["workloads"][0]["errors"] == 0
    # a broken workload (rank 1 of a TP-2 plan in a DP-2 one: its TP group is not in the groups
    # file): findings, not an exception; ok False, as the command's status 1
    tp = str(tmp_path / "t")
    etkit.gen(tp, **{**SMALL, "dp": 1, "tp": 2})
    open(prefix + ".1.et", "wb").write(open(tp + ".1.et", "rb").read())
    v = etkit.validate(prefix)
    rc, out, _ = cli("validate", "--json", prefix)
    assert rc == 1 and v == json.loads(out) and v["ok"] is False
    codes = [f["code"] for f in v["workloads"][0]["findings"]]
    assert "undefined-group" in codes and v["workloads"][0]["errors"] == len(codes)


def test_read_trace(shared, cli_json, tmp_path):
    path = os.path.join(shared, "data", "chakra", "converted_cnn_ddp.0.et")
    t = etkit.read_trace(path)
    d = cli_json("json", path)
    assert len(t) == len(d["nodes"]) and len(t) > 0
    first = t.nodes[0]
    # the file's first node (etkit json ../shared/data/chakra/converted_cnn_ddp.0.et)
    assert first.id == 216 and first.name == "aten::flatten_dense_tensors(0)"
    assert first.type == "COMP_NODE" and first.ctrl_deps == [3] and first.duration_micros == 318
    for n, dn in zip(t, d["nodes"]):
        assert n.to_dict() == dn
        assert n.attrs == {a["name"]: a.get("value") for a in dn.get("attr", [])}
    first_comm = next(n for n in t if n.type == "COMM_COLL_NODE")
    assert first_comm.id == 432 and first_comm.name == "c10d::broadcast_(0)"
    assert first_comm.is_cpu_op is True and first_comm.attr_kinds["is_cpu_op"] == "bool_val"
    assert first_comm.rf_id == 110 and first_comm.attr_kinds["rf_id"] == "int64_val"


def test_convert_pytorch(shared, tmp_path, cli_json):
    host = os.path.join(shared, "data", "chakra", "pytorch_host_et_1.0.2.json")
    a = etkit.convert_pytorch(str(tmp_path / "a"), host=host)
    b = cli_json("convert", "pytorch", "--host", host, "-o", str(tmp_path / "b"), "--json", "--quiet")
    assert [{**x, "output": None} for x in a] == [{**x, "output": None} for x in b]
    assert a[0]["output"] == str(tmp_path / "a") + ".0.et" and os.path.exists(a[0]["output"])
    # the converted trace reads back with the node count the summary gives
    assert len(etkit.read_trace(a[0]["output"])) == a[0]["nodes"]


def test_models(cli_json):
    m = etkit.models()
    assert m == cli_json("models", "--json")["models"]
    by = {x["name"]: x for x in m}
    # Llama 3 8B: 32 layers, hidden 4096, 8.03 B parameters (Meta's model card)
    assert by["llama3-8b"]["layers"] == 32 and by["llama3-8b"]["hidden"] == 4096
    assert by["llama3-8b"]["params"] == pytest.approx(8.03e9, rel=0.001)


def test_version(cli):
    v = etkit.version()
    rc, out, _ = cli("--version")
    assert rc == 0 and out.strip() == "etkit " + v
    assert v.startswith(etkit.__version__ + " (") and " build" in v


def test_repr_html():
    r = etkit.run(**SMALL)
    h = r._repr_html_()
    assert "<table>" in h and f"{r.step_ns / 1e6:.3f} ms" in h
    assert "etkit.Result" in repr(r)
    with pytest.raises(AttributeError):
        r.no_such_field


def test_gil_released():
    """A Python thread keeps running while the library simulates: with the GIL held it would
    get no turn until the call returns."""
    done = threading.Event()
    ticks = []

    def spin():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    big = dict(model="llama3-70b", tp=8, pp=4, dp=4, sp=True, global_batch=64)
    t0 = time.perf_counter()
    etkit.run(**big)
    alone = time.perf_counter() - t0
    th = threading.Thread(target=spin)
    th.start()
    t0 = time.perf_counter()
    etkit.run(**big)
    t1 = time.perf_counter()
    done.set()
    th.join()
    inside = [t for t in ticks if t0 < t < t1]
    # a tick every ~1 ms of the call; a loaded machine stretches the sleeps, so at least one
    # every 50 ms is asked (with the GIL held the thread would get no tick at all in the call)
    assert len(inside) >= max(10, (t1 - t0) * 1000 / 50), (len(inside), t1 - t0, alone)


def test_calls_from_threads_serialize():
    res = [None] * 4

    def go(i):
        res[i] = etkit.run(**SMALL).to_dict()
    ths = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert all(r == res[0] for r in res)


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_memory_does_not_grow():
    """1,000 run calls: the resident set does not grow (a leak of one report per call, ~10 KiB,
    would add ~10 MiB)."""
    for _ in range(50):
        etkit.run(**SMALL)
    before = rss_kib()
    for _ in range(1000):
        etkit.run(**SMALL)
    grown = rss_kib() - before
    assert grown < 2048, f"RSS grew by {grown} KiB over 1000 calls"


def test_report_from_python(tmp_path):
    r = etkit.run(**SMALL)
    page = etkit.report(r, tmp_path / "r.html")
    text = open(page).read()
    assert text.startswith("<!DOCTYPE html>") and f"{r.step_ns / 1e6:.3f} ms" in text
    # --html as a keyword: the same page from the run itself (with its timeline: a Gantt chart)
    r2 = etkit.run(**SMALL, html=tmp_path / "r2.html")
    assert r2.step_ns == r.step_ns and 'id="gantt"' in (tmp_path / "r2.html").read_text()


def test_pip_install(tmp_path):
    """pip install --no-build-isolation of the staged package (a copy, so that pip's build files
    stay out of the tree) into a --target folder: it imports and runs from there."""
    import shutil
    import subprocess
    import sys
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip("pip is not installed for " + sys.executable)
    staged = os.path.dirname(os.path.dirname(os.path.abspath(etkit.__file__)))
    src = tmp_path / "src"
    shutil.copytree(staged, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--no-index", "--target", str(tmp_path / "t"), str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (tmp_path / "t" / "etkit" / "libetkit-cli.so").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ETKIT_LIBRARY")}
    env["PYTHONPATH"] = str(tmp_path / "t")
    code = "import etkit; print(etkit.__file__); print([m['name'] for m in etkit.models()][:1])"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].startswith(str(tmp_path / "t"))
    assert p.stdout.splitlines()[1] == str([etkit.models()[0]["name"]])
