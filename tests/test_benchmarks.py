"""The benchmark scripts run (in --quick mode) and print well-formed ratio lines.

These are not timing tests: the CI machines are shared and noisy, so nothing here asserts
a speed. We check that every script runs end to end, prints one ``RATIO`` line per
comparison with finite positive numbers, writes the same rows as JSON, and that
``run.py`` keeps the committed results and the generated Markdown consistent.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
LINE = re.compile(
    r"^RATIO (?P<bench>\w+)/(?P<case>.+?): ours=(?P<ours>\S+) (?P<unit>.+?) "
    r"baseline=(?P<base>\S+) .+? ratio=(?P<ratio>\S+)(?: cpu_ratio=(?P<cpu_ratio>\S+))? "
    r"target=\"(?P<target>[^\"]*)\" "
    r"(?P<status>PASS|MISS|INFO)")


def load_run():
    spec = importlib.util.spec_from_file_location("bench_run_under_test", BENCH / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_script(name: str, *args: str, tmp_path: Path,
               timeout: int = 600) -> tuple[list[dict], dict]:
    """Run ``bench_<name>.py --quick``; return the parsed RATIO lines and the JSON rows."""
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, str(BENCH / f"bench_{name}.py"), "--quick", *args,
                           "--json", str(out)], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    lines = [m.groupdict() for m in map(LINE.match, proc.stdout.splitlines()) if m]
    raw = [s for s in proc.stdout.splitlines() if s.startswith("RATIO ")]
    assert lines and len(lines) == len(raw), f"malformed RATIO lines:\n{proc.stdout}"
    for d in lines:
        assert d["bench"] == name
        for key in ("ours", "base", "ratio", "cpu_ratio"):
            if d[key] is None:
                continue
            value = float(d[key])
            assert math.isfinite(value) and value > 0, f"{key}={d[key]} in {d}"
    data = json.loads(out.read_text())
    assert data["benchmark"] == name and data["quick"] is True
    assert len(data["rows"]) == len(lines)
    for row, d in zip(data["rows"], lines, strict=True):
        assert row["case"] == d["case"]
        assert math.isclose(row["ratio"], float(d["ratio"]), rel_tol=1e-3)
        assert row["ratio"] > 0 and math.isfinite(row["ratio"])
        assert row["status"] in ("PASS", "MISS", "INFO")
    assert "--json" not in data["command"]
    return lines, data


def test_theory_quick(tmp_path):
    lines, data = run_script("theory", tmp_path=tmp_path)
    cases = [d["case"] for d in lines]
    assert sum("grid=100x100" in c for c in cases) == 5
    assert sum(c.startswith("zero_variance_mc") for c in cases) == 4
    assert all(d["unit"] == "groups/s" for d in lines if d["case"].startswith("zero_variance_mc"))
    assert data["settings"]["grid"] == 100


def test_advise_quick(tmp_path):
    lines, data = run_script("advise", tmp_path=tmp_path)
    cases = [d["case"] for d in lines]
    assert sum(c.startswith("end to end") for c in cases) == 2
    assert lines[-1]["case"].startswith("adaptive allocation")
    assert lines[-1]["unit"] == "prompts/s" and float(lines[-1]["ratio"]) > 1
    assert data["settings"]["prompts"] == 20_000


def test_rollout_quick(tmp_path):
    lines, data = run_script("rollout", tmp_path=tmp_path)
    cases = [d["case"] for d in lines]
    assert any("vs generate" in c for c in cases) and any("shared vs unshared" in c for c in cases)
    for row in data["rows"]:
        assert row["unit"] == "completions/s"
        assert row["extra"]["ours_tokens_per_s"] > 0


def test_step_quick(tmp_path):
    pytest.importorskip("trl")
    lines, data = run_script("step", tmp_path=tmp_path)
    assert len(lines) == 3 and all("B=2 G=4" in d["case"] for d in lines)
    assert data["rows"][0]["reps"] >= 1
    # the distance to the limit: matmul FLOPs of the step, achieved vs torch.matmul
    limit = data["rows"][2]
    assert "FLOP/s" in limit["case"] and limit["unit"] == "GFLOP/s"
    assert limit["extra"]["matmul_flops"] > 0 and 0 < limit["ratio"] == limit["extra"]["fraction"]


@pytest.mark.slow
def test_workers_quick(tmp_path):
    """A tiny sweep with 1 and 2 workers: one ratio line, and both wrote the same logs."""
    lines, data = run_script("workers", tmp_path=tmp_path)
    assert len(lines) == 1 and lines[0]["case"].startswith("cpu-quick sweep, 2 runs")
    row = data["rows"][0]
    assert row["extra"]["logs_identical"] is True and row["extra"]["runs"] == 2
    assert math.isclose(row["extra"]["wall_share"] * row["ratio"], 1.0, rel_tol=1e-9)


@pytest.mark.slow
@pytest.mark.book
def test_book_quick(tmp_path):
    pytest.importorskip("jupyter_book")
    lines, _ = run_script("book", "--reps", "1", tmp_path=tmp_path)
    assert [d["case"] for d in lines] == ["cold vs warm (no change)"]


@pytest.mark.slow
def test_memory_quick(tmp_path):
    pytest.importorskip("psutil")
    pytest.importorskip("grpolab.labs.sweep.sweep")
    lines, data = run_script("memory", tmp_path=tmp_path, timeout=900)
    assert lines[0]["unit"].startswith("MiB peak RSS")
    assert data["rows"][0]["ours"] > data["rows"][0]["baseline"] * 0.5


def test_run_quick_records_nothing(tmp_path):
    before = {p: p.read_bytes() for p in (BENCH / "results.json", BENCH / "RESULTS.md")
              if p.exists()}
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--only", "theory"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "== all ratios" in proc.stdout
    summary = proc.stdout.split("== all ratios", 1)[1]
    assert len(re.findall(r" ratio=\s*\S+", summary)) == 9
    after = {p: p.read_bytes() for p in before}
    assert before == after


def test_run_rejects_unknown_benchmark():
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--only", "nope"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: unknown benchmark(s) nope; choose from "
        "theory,advise,book,memory,rollout,step,workers".replace(",", ", ")]


def test_run_add_refuses_quick_results(tmp_path):
    before = (BENCH / "results.json").read_bytes() if (BENCH / "results.json").exists() else None
    fake = tmp_path / "quick.json"
    fake.write_text(json.dumps({"benchmark": "theory", "quick": True, "rows": []}))
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--add", str(fake)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and "--quick results" in proc.stderr
    after = (BENCH / "results.json").read_bytes() if (BENCH / "results.json").exists() else None
    assert before == after


def test_markdown_block_is_replaced(tmp_path, monkeypatch):
    run = load_run()
    md = tmp_path / "RESULTS.md"
    md.write_text(f"# Head\n\nhand-written\n\n{run.START}\nold table\n{run.END}\n\n## Tail\n")
    monkeypatch.setattr(run, "RESULTS_MD", str(md))
    results = {"updated": "now", "machine": {"cpu": "X", "cores": 2},
               "benchmarks": {"theory": {"command": "python benchmarks/bench_theory.py",
                                         "threads": 1, "rows": [
                                             {"case": "c", "ours": 1.0, "baseline": 3.0,
                                              "ratio": 3.0, "unit": "s", "target": "",
                                              "status": "INFO"}]}}}
    run.refresh_markdown(results)
    text = md.read_text()
    assert "old table" not in text and "hand-written" in text and text.endswith("## Tail\n")
    assert "| theory | c | 1 s | 3 s | - | 3.00 | - | INFO |" in text
    assert "| step | not measured yet |" in text
    assert "python benchmarks/bench_theory.py" in text


def test_committed_results_are_well_formed():
    path = BENCH / "results.json"
    if not path.exists():
        pytest.skip("no committed benchmarks/results.json")
    results = json.loads(path.read_text())
    assert {"machine", "updated", "benchmarks"} <= set(results)
    assert results["machine"].get("cpu") and results["machine"].get("torch")
    for name, b in results["benchmarks"].items():
        assert b["quick"] is False, f"{name}: quick results must not be committed"
        assert b["command"].startswith("python benchmarks/bench_")
        for r in b["rows"]:
            assert math.isfinite(r["ratio"]) and r["ratio"] > 0
            assert (r["status"] in ("PASS", "MISS")) == bool(r["target"])
    text = (BENCH / "RESULTS.md").read_text()
    run = load_run()
    assert run.table(results) in text, "RESULTS.md is out of date: rerun benchmarks/run.py"


@pytest.mark.skipif(os.environ.get("GRPOLAB_SKIP_BOOK") == "1", reason="book tests disabled")
def test_appendix_reads_committed_results():
    text = (ROOT / "book" / "appendix" / "01-how-fast.md").read_text()
    assert "results.json" in text and "code-cell" in text
    assert "run.table_html(results)" in text


def test_html_table_matches_markdown_table():
    run = load_run()
    results = {"benchmarks": {"step": {"rows": [
        {"case": "a<b", "ours": 1.0, "baseline": 2.0, "ratio": 2.0, "unit": "s",
         "target": "CPU-time ratio >= 2.0", "status": "PASS", "cpu_ratio": 2.1,
         "extra": {"ours_cpu": 0.5, "baseline_cpu": 1.05}}]}}}
    html = run.table_html(results)
    assert html.count("<tr>") == 1 + len(run.BENCHMARKS)  # header + one row per benchmark
    assert "<td>a&lt;b</td>" in html and "<td>2.10</td>" in html and "<td>PASS</td>" in html
