"""etkit report / --html: the page is well-formed, self-contained, its bars carry the JSON's
values, the Gantt chart shows the 1F1B order, and headless Chromium renders it."""
import json
import os
import xml.etree.ElementTree as ET

import pytest

SVG = "{http://www.w3.org/2000/svg}"
PLAN = ["--model", "llama2-7b", "--layers", "4", "--pp", "2", "--dp", "1", "--seq", "1024",
        "--global-batch", "8", "--micro-batch", "1", "--cluster", "dgx-a100", "--gpus", "2"]


@pytest.fixture(scope="module")
def page(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    rc, _, err = cli("run", *PLAN, "--json", "-o", d / "run.json", "--timeline", d / "tl.json",
                     "--html", d / "page.html")
    assert rc == 0, err
    text = (d / "page.html").read_text()
    root = ET.fromstring(text.replace("<!DOCTYPE html>", "", 1))  # well-formed (XHTML-compatible)
    run = json.loads((d / "run.json").read_text())
    return d, text, root, run


def rects(root, svg_id):
    svg = [s for s in root.iter(SVG + "svg") if s.get("id") == svg_id]
    assert len(svg) == 1, svg_id
    return list(svg[0].iter(SVG + "rect"))


def test_self_contained(page):
    _, text, root, run = page
    assert "<script" not in text and "src=" not in text and "href=" not in text and "@import" not in text
    assert "url(" not in text
    # the only URL: the SVG namespace name (not fetched)
    assert text.count("http") == text.count('xmlns="http://www.w3.org/2000/svg"') == 3
    assert [s.get("id") for s in root.iter(SVG + "svg")] == ["ranks", "gantt", "memory"]


def test_summary_and_rank_bars_equal_json(page):
    _, text, root, run = page
    step = run["step_ns"]
    td = [t for t in root.iter("td") if t.get("id") == "step"][0]
    assert int(td.get("data-ns")) == step and td.text == f"{step / 1e6:.3f} ms"
    bars = rects(root, "ranks")
    assert len(bars) == 5 * run["n_ranks"]
    for r in run["ranks"]:
        got = {b.get("data-kind"): b for b in bars if int(b.get("data-rank")) == r["rank"]}
        ns = {k: int(b.get("data-ns")) for k, b in got.items()}
        assert ns["compute"] == r["compute_ns"] and ns["exposed_comm"] == r["exposed_comm_ns"]
        assert ns["cpu"] == r["cpu_ns"]
        assert ns["idle"] == step - r["finish_ns"]  # after the rank finished
        assert ns["bubble"] + ns["idle"] == r["idle_ns"]  # the JSON's idle = bubble + idle
        # the bar spans the step: the five widths add up to the chart's 900 px
        assert sum(float(b.get("width")) for b in got.values()) == pytest.approx(900, abs=0.05)
        assert float(got["compute"].get("width")) == pytest.approx(900 * r["compute_ns"] / step, abs=0.01)


def test_collective_table_equals_json(page):
    _, _, root, run = page
    table = [t for t in root.iter("table") if t.get("id") == "collectives"][0]
    rows = table.findall("tr")[1:]
    assert len(rows) == len(run["communication"])
    for tr, c in zip(rows, run["communication"]):
        tds = tr.findall("td")
        assert tds[0].text == c["type"] and tds[1].text == c["group"]
        assert float(tds[-1].get("data-busbw")) == c["busbw_GBps"]
        assert tds[-1].text == f"{c['busbw_GBps']:.2f}"


def test_gantt_shows_1f1b(page):
    """2 stages, 8 micro-batches, 1F1B: stage 0 runs one forward ahead (warm-up) then
    alternates, the last stage alternates from the start (Narayanan et al. 2021, PipeDream-Flush)."""
    _, _, root, run = page
    blocks = rects(root, "gantt")
    ranks = sorted({int(b.get("data-rank")) for b in blocks})
    assert len(ranks) == 2  # folded: one simulated rank per stage

    def order(rank):
        seq = [(float(b.get("x")), b.get("class")[0].upper(), int(b.get("data-mb"))) for b in blocks
               if int(b.get("data-rank")) == rank and b.get("class") in ("fwd", "bwd")]
        return [f"{c}{mb}" for _, c, mb in sorted(seq)]
    first = ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "F4", "B3", "F5", "B4", "F6", "B5", "F7", "B6", "B7"]
    last = ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3", "F4", "B4", "F5", "B5", "F6", "B6", "F7", "B7"]
    assert order(ranks[0]) == first
    assert order(ranks[1]) == last


def test_memory_peak_equals_json(page):
    _, _, root, run = page
    peak = [c for c in root.iter(SVG + "circle") if c.get("id") == "peak"][0]
    assert int(peak.get("data-bytes")) == run["memory"]["peak_bytes"]
    assert int(peak.get("data-rank")) == run["memory"]["peak_rank"]


def test_report_command_equals_html_option(page, cli):
    d, text, _, _ = page
    rc, _, err = cli("report", d / "run.json", "--timeline", d / "tl.json", "-o", d / "again.html")
    assert rc == 0, err
    assert (d / "again.html").read_text() == text
    # without the timeline: no Gantt chart, the per-rank memory peaks instead
    rc, _, err = cli("report", d / "run.json", "-o", d / "plain.html")
    assert rc == 0, err
    root = ET.fromstring((d / "plain.html").read_text().replace("<!DOCTYPE html>", "", 1))
    assert [s.get("id") for s in root.iter(SVG + "svg")] == ["ranks", "memory"]
    run = json.loads((d / "run.json").read_text())
    peaks = {int(r.get("data-rank")): int(r.get("data-bytes")) for r in rects(root, "memory")}
    assert peaks == {r["rank"]: r["mem_peak_bytes"] for r in run["ranks"]}


def test_report_errors(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"ranks": []}')
    out = tmp_path / "out.html"
    rc, _, err = cli("report", bad, "-o", out)
    assert rc == 2 and not out.exists()
    assert err == (f"etkit report: error: {bad}: field 'step_ns' missing or not a number (want the JSON "
                   "report of etkit run/sim --json)\n")
    bad.write_text("{")
    rc, _, err = cli("report", bad, "-o", out)
    assert rc == 2 and err.startswith(f"etkit report: error: {bad}:1:") and not out.exists()
    rc, _, err = cli("report", bad)
    assert rc == 2 and "-o OUT.html is required" in err
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]  # no temporary left behind


def test_chromium_renders(page, tmp_path, chromium):
    d, text, _, run = page
    p = chromium(d / "page.html", "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    dom = p.stdout
    assert dom.count("<svg") == 3 and f"{run['step_ns'] / 1e6:.3f} ms" in dom
    assert dom.count("<rect") == text.count("<rect")
    assert "CONSOLE" not in p.stderr and "Uncaught" not in p.stderr
    shot = tmp_path / "shot.png"
    p = chromium(d / "page.html", "--window-size=1100,1600", "--screenshot=" + str(shot))
    assert p.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20000  # a drawn page, not a blank one
