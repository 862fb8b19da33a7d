"""etkit.plan against `etkit plan --json` for the same inputs (equal documents), and the plan
page (`etkit plan --html`): one scatter point per simulated plan at the JSON's memory and
tokens/s per GPU, the Pareto front equal to one computed here from the JSON."""
import re
import xml.etree.ElementTree as ET

import pytest

import etkit

W = dict(model="llama3-8b", layers=4, seq=2048, global_batch=16, cluster="dgx-h100", nodes=1)
W_ARGS = ["--model", "llama3-8b", "--layers", "4", "--seq", "2048", "--global-batch", "16",
          "--cluster", "dgx-h100", "--nodes", "1"]


def test_plan_equals_cli(cli_json):
    p = etkit.plan(**W)
    d = cli_json("plan", *W_ARGS, "--json", "-")
    assert p.to_dict() == d
    c = d["counts"]
    assert c["candidates"] == len(d["plans"]) > 0
    assert c["simulated"] == len(p.ranked) > 0
    assert c["candidates"] == (c["invalid"] + c["memory"] + c["dominated"] + c["bound"] + c["simulated"] +
                               c["failed"])
    # the best plan: rank 1, the shortest step of the simulated ones (--rank-by step)
    best = p.best
    assert best["rank"] == 1 and best["status"] == "simulated"
    assert best["step_ns"] == min(x["step_ns"] for x in p.ranked)
    # its flags are present and are the ones `etkit run` takes: TP, PP, DP as in the row
    assert best["flags"]
    assert f"--tp {best['tp']}" in best["flags"] and f"--pp {best['pp']}" in best["flags"]
    assert f"--dp {best['dp']}" in best["flags"]
    # tokens/s: global batch x seq / step
    assert best["tokens_per_s"] == pytest.approx(16 * 2048 / (best["step_ns"] / 1e9), rel=1e-6)


def test_plan_sweep_lists_and_options(cli_json):
    p = etkit.plan(model="llama3-8b", layers=4, seq=2048, global_batch=32, cluster=["dgx-h100", "hgx-h200"],
                   nodes=[1], top=3, schedules="1f1b")
    d = cli_json("plan", "--model", "llama3-8b", "--layers", "4", "--seq", "2048", "--global-batch", "32",
                 "--cluster", "dgx-h100,hgx-h200", "--nodes", "1", "--top", "3", "--schedules", "1f1b",
                 "--json", "-")
    assert p.to_dict() == d
    assert [c["cluster"] for c in p.clusters] == ["dgx-h100 x 1", "hgx-h200 x 1"]
    assert all(x["schedule"] == "1f1b" for x in p.plans)


def test_plan_errors(cli):
    with pytest.raises(etkit.Error) as e:
        etkit.plan(model="llama3-8b", global_batch=16)
    rc, _, err = cli("plan", "--model", "llama3-8b", "--global-batch", "16", "--quiet", "--json", "-")
    assert e.value.status == rc == 2 and str(e.value) == err.strip()
    assert "is a preset: give --nodes N" in str(e.value)
    with pytest.raises(etkit.Error, match="no plan fits in memory"):
        etkit.plan(model="llama3-405b", global_batch=16, cluster="dgx-h100", nodes=1)


def pareto(points):
    """The points no other point beats: at most its memory and at least its throughput, one of
    them strictly (max throughput for at most that memory)."""
    return {k for k, (m, t) in points.items()
            if not any((m2 <= m and t2 >= t and (m2 < m or t2 > t)) for m2, t2 in points.values())}


def test_plan_html_scatter_and_pareto(tmp_path, cli_json):
    page = tmp_path / "plan.html"
    p = etkit.plan(**W, top=1000, html=page)
    gpus = {c["cluster"]: c["gpus"] for c in p.clusters}
    sim = [x for x in p.plans if x["status"] == "simulated"]
    text = page.read_text()
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    root = ET.fromstring(re.sub(r"^<!DOCTYPE html>", "", text).strip())
    ns = "{http://www.w3.org/2000/svg}"
    dots = [e for e in root.iter(ns + "circle") if e.get("class", "").startswith("pt")]
    assert len(dots) == len(sim) == p.counts["simulated"]
    by_key = {(x["cluster"], x["index"]): x for x in sim}
    got = {}
    for e in dots:
        x = by_key[(e.get("data-cluster"), int(e.get("data-index")))]
        assert int(e.get("data-mem-bytes")) == x["mem_bytes"]
        assert float(e.get("data-tokens-per-s-per-gpu")) == pytest.approx(
            x["tokens_per_s"] / gpus[x["cluster"]], rel=1e-6)
        got[(x["cluster"], x["index"])] = e.get("data-front") == "1"
    assert len(got) == len(sim)  # one point per plan
    front = pareto({k: (x["mem_bytes"], x["tokens_per_s"] / gpus[x["cluster"]]) for k, x in by_key.items()})
    assert {k for k, f in got.items() if f} == front and front
    # the front's line goes through its points in memory order
    line = [e for e in root.iter(ns + "polyline") if e.get("class") == "front"]
    assert len(line) == 1 and len(line[0].get("points").split()) == len(front)
    # pruned plans counted by reason: the counts of the JSON
    for reason in ("invalid", "memory", "dominated", "bound"):
        cell = root.find(f".//*[@data-pruned='{reason}']")
        assert cell is not None and int(cell.text) == p.counts[reason]


def test_plan_page_renders(tmp_path, chromium):
    page = tmp_path / "plan.html"
    p = etkit.plan(**W, html=page)
    r = chromium(page, "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("<circle") == p.counts["simulated"]
    assert f"{p.best['step_ns'] / 1e6:.3f}" in r.stdout  # the top plan's step in the table
    assert "CONSOLE" not in r.stderr and "Uncaught" not in r.stderr
