"""The GPU reproduction script, ``labs/gpu/run.sh``, as a CPU dry run (``--smoke``).

The script is what a user with a GPU runs; nobody runs it here on a GPU, so this test keeps
it from rotting: every part (tiny ``gpu`` preset, ``gpu-smollm2`` on both backends, the two
benchmarks) runs at its smallest size on CPU and must leave its records.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "labs" / "gpu" / "run.sh"
PARTS = ["tiny-gpu", "smollm2-grpolab", "smollm2-trl", "bench-rollout", "bench-step"]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHON"] = sys.executable  # the test's interpreter, with the project's packages
    env["PYTHONPATH"] = str(REPO / "src")
    return env


@pytest.mark.slow
def test_smoke_run_records_every_part(tmp_path):
    out = tmp_path / "gpu"
    proc = subprocess.run(["bash", str(SCRIPT), "--smoke", "--out", str(out)], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "budget (smoke mode" in proc.stdout

    run = json.loads((out / "run.json").read_text())
    report = json.loads((out / "report.json").read_text())
    assert run["mode"] == report["mode"] == "smoke"
    assert run["device"]["device"] == "cpu" and run["device"]["versions"]["torch"]
    assert [p["name"] for p in run["parts"]] == PARTS
    assert [p["name"] for p in report["parts"]] == PARTS
    for p in run["parts"]:
        assert p["status"] in ("ok", "skipped"), p
        assert p["estimated_minutes"] > 0 and p["timeout_seconds"] > 0
        if p["status"] == "skipped":  # only SmolLM2 parts, only when its weights are absent
            assert p["name"].startswith("smollm2-") and "not importable" in p["reason"]
            continue
        assert p["exit_code"] == 0 and p["wall_seconds"] > 0 and p["command"]
        assert (out / p["log"]).is_file()
    assert report["all_parts_ok"] is True

    outcomes = {p["name"]: p.get("outcome") for p in report["parts"]}
    tiny = outcomes["tiny-gpu"]
    assert tiny["preset"] == "gpu" and tiny["runs_finished"] == tiny["runs_planned"] == 2
    assert tiny["group_sizes"] == [2, 4] and tiny["plots"]
    assert "per doubling of G" in tiny["regimes"]["mixed"]["verdict"]  # the pre-declared test
    for name, backend in (("smollm2-grpolab", "grpolab"), ("smollm2-trl", "trl")):
        if outcomes[name] is not None:
            assert outcomes[name]["preset"] == "gpu-smollm2"
            assert outcomes[name]["backend"] == backend
            assert outcomes[name]["runs_finished"] == 1
    for name, bench in (("bench-rollout", "rollout"), ("bench-step", "step")):
        o = outcomes[name]
        assert o["benchmark"] == bench and o["device"] == "cpu" and o["rows"]
        assert all(r["ratio"] > 0 for r in o["rows"])

    # small results in <part>/, the working folders (weights) under work/, ignored by git
    assert (out / "tiny-gpu" / "summary.json").is_file()
    assert (out / "tiny-gpu" / "plots").is_dir()
    assert not (out / "tiny-gpu" / "cache").exists()
    assert (out / ".gitignore").read_text().split() == ["work/"]


def test_no_cuda_without_smoke_is_one_line_exit_2(tmp_path):
    """Without --smoke on a machine without CUDA, the script stops at the device check."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    proc = subprocess.run(["bash", str(SCRIPT), "--out", str(tmp_path / "gpu")], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no CUDA device"), proc.stderr
    assert not (tmp_path / "gpu" / "run.json").exists()


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown argument"),
    (["--parts", "tiny-gpu,nope", "--smoke"], "'nope' is not a part"),
])
def test_bad_arguments_are_one_line_exit_2(tmp_path, args, message):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    proc = subprocess.run(["bash", str(SCRIPT), *args, "--out", str(tmp_path / "o")],
                          cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
