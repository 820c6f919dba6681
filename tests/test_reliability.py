"""The reliability suite (issue 15): bad input is refused up front with one line and exit 2,
saved state cannot lie, damaged files are named, and a killed sweep resumes.

One table row per class of bad input (argv, expected exit code, message fragment); the
state tests share one tiny finished sweep (a 5-step warm start on 40 prompts, G = 2, two
GRPO steps) and corrupt a copy of it per artefact type.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import grpolab.grpo.backends
from conftest import TINY_TASK, tiny_warm_start, with_warm_start
from grpolab.cli.main import main
from grpolab.labs.remedies import items as remedy_items
from grpolab.labs.remedies import report as remedy_report
from grpolab.labs.remedies.items import ITEMS
from grpolab.labs.sweep.presets import Regime, get_preset
from grpolab.labs.sweep.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
TASK = TINY_TASK
WARM = tiny_warm_start()


def tiny_preset(**overrides):
    """A sweep that runs in seconds: G = 2 at 64 completions per step, 2 steps, 40 prompts."""
    kw = dict(group_sizes=[2], seeds=[0], steps=2, eval_every=128, task_kwargs=TASK,
              warmstart=WARM, regimes=[Regime("mixed", [1, 2], budget=64)],
              max_train_prompts=40, max_eval_prompts=10, noise_batches=2, eval_samples=1,
              torch_threads=1)
    return get_preset("cpu-quick", **{**kw, **overrides})


def quiet(*_):
    pass


# ----------------------------------------------------------------------------- bad input
def _unwritable(tmp_path: Path) -> str:
    """A folder this process cannot write into (root ignores modes: use /proc)."""
    if os.geteuid() == 0:
        return "/proc/1/x"
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o555)
    return str(d / "x")


SWEEP = ["lab", "sweep", "--preset", "cpu-quick", "--quiet", "--no-plots"]
TRAIN = ["lab", "train", "--preset", "cpu-quick", "--quiet"]
REMEDIES = ["remedies", "--item", "prompts-x-g", "--no-plots"]

# (argv with OUT for the output folder, exit code, fragment of the one-line message)
BAD_INPUT = [
    # 1. ranges, checked before the warm start
    pytest.param([*SWEEP, "--out", "OUT", "--seeds", "-1"], 2, "--seeds must be integers",
                 id="sweep-negative-seed"),
    pytest.param([*SWEEP, "--out", "OUT", "--threads", "1000000000000"], 2,
                 "--threads must be an integer from 1 to", id="sweep-huge-threads"),
    pytest.param([*SWEEP, "--out", "OUT", "--threads", "1e12"], 2, "invalid int value",
                 id="sweep-threads-not-an-int"),
    pytest.param([*SWEEP, "--out", "OUT", "--budget", str(2**40)], 2,
                 "--budget must be <= 16384 (a step holds all its completions in memory)",
                 id="sweep-budget-beyond-memory"),
    pytest.param([*SWEEP, "--out", "OUT", "--mode", "prompts", "--prompts-per-step", "20000"],
                 2, "--prompts-per-step must be <= 16384",
                 id="sweep-prompts-per-step-beyond-memory"),
    pytest.param([*SWEEP, "--out", "OUT", "--mode", "prompts", "--prompts-per-step", "501"],
                 2, "larger than the 500 training prompts",
                 id="sweep-more-prompts-than-training-set"),
    pytest.param([*SWEEP, "--out", "OUT", "--device", "bogus"], 2,
                 "--device must be auto, cpu, cuda or cuda:N", id="sweep-bogus-device"),
    pytest.param([*SWEEP, "--out", "OUT", "--device", "cuda"], 2, "--device cuda:",
                 id="sweep-cuda-without-cuda",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here")),
    pytest.param([*SWEEP, "--out", "OUT", "--learning-rate", "1e308"], 2,
                 "--learning-rate must be <= 1", id="sweep-huge-learning-rate"),
    pytest.param([*SWEEP, "--out", "OUT", "--warmstart-steps", "0"], 2,
                 "--warmstart-steps must be an integer in [1,", id="sweep-zero-warmstart"),
    pytest.param([*TRAIN, "--out", "OUT", "--learning-rate", "1e308"], 2,
                 "--learning-rate must be <= 1", id="train-huge-learning-rate"),
    pytest.param([*TRAIN, "--out", "OUT", "--prompts-per-step", "20000"], 2,
                 "--prompts-per-step must be <= 16384", id="train-beyond-memory"),
    pytest.param([*TRAIN, "--out", "OUT", "--prompts-per-step", "4096", "--G", "8"], 2,
                 "completions per step", id="train-beyond-completions-per-step"),
    pytest.param([*TRAIN, "--out", "OUT", "--prompts-per-step", "600"], 2,
                 "larger than the 500 training prompts", id="train-more-prompts-than-training-set"),
    pytest.param(["lab", "train", "--out", "OUT", "--task-kwargs", '{"n_train": 100}',
                  "--prompts-per-step", "200", "--G", "2"], 2, "training prompts of this run",
                 id="train-more-prompts-than-the-task-has"),
    pytest.param([*TRAIN, "--out", "OUT", "--device", "bogus"], 2, "--device must be",
                 id="train-bogus-device"),
    pytest.param([*TRAIN, "--out", "OUT", "--device", "cuda"], 2, "--device cuda:",
                 id="train-cuda-without-cuda",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here")),
    pytest.param([*TRAIN, "--out", "OUT", "--seed", "-1"], 2, "--seed must be an integer",
                 id="train-negative-seed"),
    pytest.param([*TRAIN, "--out", "OUT", "--temperature", "1e-300"], 2,
                 "--temperature must be in", id="train-vanishing-temperature"),
    pytest.param([*TRAIN, "--out", "OUT", "--warmstart", '{"n_embd": 100, "n_head": 3}'], 2,
                 "--warmstart-n-embd", id="train-bad-warmstart"),
    pytest.param([*TRAIN, "--out", "OUT", "--threads", "0"], 2, "--threads must be",
                 id="train-zero-threads"),
    pytest.param([*REMEDIES, "--out", "OUT", "--threads", "99999"], 2, "--threads must be",
                 id="remedies-huge-threads"),
    pytest.param(["lab", "pass-rates", "--out", "OUT", "--threads", "0"], 2,
                 "--threads must be", id="pass-rates-zero-threads"),
    pytest.param(["lab", "pass-rates", "--out", "OUT", "--device", "bogus"], 2,
                 "--device must be", id="pass-rates-bogus-device"),
    pytest.param(["lab", "pass-rates", "--out", "FILE"], 2, "is a file, not a folder",
                 id="pass-rates-out-is-a-file"),
    pytest.param([*REMEDIES, "--out", "OUT", "--budget", str(2**40)], 2,
                 "--completion-budget must be an integer in", id="remedies-huge-budget"),
    # 3. duplicates and flags that would do nothing
    pytest.param([*SWEEP, "--out", "OUT", "--G", "2", "2"], 2,
                 "--G must name at least one value, each once", id="sweep-duplicate-G"),
    pytest.param([*SWEEP, "--out", "OUT", "--seeds", "0", "0"], 2,
                 "--seeds must name at least one value, each once", id="sweep-duplicate-seed"),
    pytest.param([*SWEEP, "--out", "OUT", "--mode", "prompts", "--budget", "32"], 2,
                 "--budget does nothing in prompts mode", id="sweep-budget-in-prompts-mode"),
    pytest.param([*SWEEP, "--out", "OUT", "--prompts-per-step", "4"], 2,
                 "--prompts-per-step does nothing in budget mode",
                 id="sweep-prompts-per-step-in-budget-mode"),
    pytest.param(["lab", "sweep", "--preset", "cpu-full", "--out", "OUT", "--budget", "128"], 2,
                 "regime hard-fixed-prompts", id="sweep-budget-ignored-by-one-regime"),
    pytest.param([*REMEDIES, "--out", "OUT", "--seeds", "0", "0"], 2, "--seeds lists 0",
                 id="remedies-duplicate-seed"),
    pytest.param([*REMEDIES, "--out", "OUT", "--arms", "B2-G32", "B2-G32"], 2,
                 "--arms lists B2-G32", id="remedies-duplicate-arm"),
    pytest.param([*REMEDIES, "--out", "OUT", "--arms", "nope"], 2, "not an arm of",
                 id="remedies-unknown-arm"),
    # 2. the rest of the sweep's, train's and remedies' refusals (one table for the CLI)
    *[pytest.param([*SWEEP, "--out", "OUT", *argv], 2, fragment, id=f"sweep-{name}")
      for name, argv, fragment in (
          ("G-not-dividing-the-budget", ["--G", "3"], "not a multiple of G=3"),
          ("G-1", ["--G", "1"], "--num-generations must be >= 2"),
          ("zero-steps", ["--steps", "0"], "--steps must be an integer in [1,"),
          ("unknown-regime", ["--regimes", "easy"], "not a regime"),
          ("negative-learning-rate", ["--learning-rate", "-1"],
           "--learning-rate must be a positive finite number"))],
    pytest.param(["lab", "sweep", "--preset", "nope", "--out", "OUT"], 2,
                 "preset must be one of", id="sweep-unknown-preset"),
    *[pytest.param(["lab", "train", "--out", "OUT", *argv], 2, fragment, id=f"train-{name}")
      for name, argv, fragment in (
          ("float-not-a-float", ["--learning-rate", "abc"],
           "--learning-rate: invalid float value: 'abc'"),
          ("G-not-an-int", ["--G", "2.5"], "invalid int value"),
          ("unknown-warmstart-key", ["--warmstart", '{"nope": 1}'], "unknown keys nope"),
          ("task-kwargs-not-an-object", ["--task-kwargs", "[1]"], "expected a JSON object"),
          ("task-kwargs-not-json", ["--task-kwargs", "{bad"], "not JSON"),
          ("G-1", ["--G", "1"], "--num-generations must be >= 2"),
          ("negative-learning-rate", ["--learning-rate", "-1"],
           "--learning-rate must be a positive finite number"),
          ("unknown-loss-type", ["--loss-type", "ppo"],
           "--loss-type must be one of grpo, bnpo, dr_grpo, dapo"),
          ("unknown-preset", ["--preset", "nope"], "preset must be one of"),
          ("unknown-regime", ["--preset", "cpu-quick", "--regime", "nope"],
           "--regime: 'nope' is not a regime"),
          ("G-not-dividing-the-budget", ["--preset", "gpu-smollm2", "--G", "3"],
           "budget 64 is not a multiple of G=3"),
          ("vllm-without-trl", ["--use-vllm"], "--use-vllm and --lora-r need --backend trl"),
          ("none-mixed-with-values", ["--train-difficulties", "1", "none"],
           "'none' cannot be mixed"))],
    *[pytest.param([*REMEDIES, "--out", "OUT", *argv], 2, fragment, id=f"remedies-{name}")
      for name, argv, fragment in (
          ("zero-budget", ["--budget", "0"], "--completion-budget must be"),
          ("override-what-the-arms-vary", ["--num-generations", "8"],
           "what the arms of prompts-x-g vary"),
          ("bad-remedy-field", ["--band-low", "2"], "--band-low must be <= 1"))],
    pytest.param(["remedies", "--out", "OUT"], 2, "--item is required",
                 id="remedies-no-item"),
    # 4. output folders
    *[pytest.param([*cmd, "--out", where], 2, fragment, id=f"{name}-out-{kind}")
      for name, cmd in (("sweep", SWEEP), ("train", TRAIN), ("remedies", REMEDIES),
                        ("book", ["book", "build", "--quiet"]))
      for kind, where, fragment in (("is-a-file", "FILE", "is a file, not a folder"),
                                    ("under-dev-null", "/dev/null/x", "/dev/null is a file"),
                                    ("unwritable", "LOCKED", "is not writable"))],
    pytest.param([*REMEDIES, "--out", "OUT", "--publish", "FILE"], 2,
                 "--publish", id="remedies-publish-is-a-file"),
    pytest.param(["book", "build", "--book", "FILE", "--out", "OUT"], 2, "is not a folder",
                 id="book-source-is-a-file"),
]


@pytest.mark.parametrize("argv,code,fragment", BAD_INPUT)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, code, fragment, tmp_path, capsys):
    out = tmp_path / "out"
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    subst = {"OUT": str(out), "FILE": str(a_file), "LOCKED": _unwritable(tmp_path)}
    argv = [subst.get(a, a) for a in argv]
    try:
        got = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        got = exc.code
    err = capsys.readouterr().err
    assert got == code
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fragment in err, err
    assert not out.exists()  # refused before anything was written
    assert a_file.read_text() == "not a folder\n"


def test_refusals_come_before_torch_is_imported():
    """The < 2 s promise, checked without a clock: every range/duplicate/output refusal
    happens before torch (and so the warm start) is even imported."""
    rows = [p.values[0] for p in BAD_INPUT
            if p.values[0][:2] == ["lab", "sweep"] and "LOCKED" not in p.values[0]
            and "cuda" not in p.values[0]]
    script = textwrap.dedent(f"""
        import sys, contextlib, io
        from grpolab.cli.main import main
        for argv in {rows!r}:
            argv = [{{"OUT": "/nonexistent-dir/out", "FILE": "/dev/null"}}.get(a, a)
                    for a in argv]
            with contextlib.redirect_stderr(io.StringIO()):
                try:
                    code = main(argv)
                except SystemExit as exc:
                    code = exc.code
            assert code == 2, argv
        print("torch" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# ----------------------------------------------------------------------------- a sweep
@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory, tiny_cache) -> Path:
    torch.set_num_threads(1)
    out = with_warm_start(tmp_path_factory.mktemp("sweep") / "done", tiny_cache)
    run_sweep(tiny_preset(), out, progress=False, plots=False, log=quiet)
    return out


@pytest.fixture
def sweep(finished_sweep, tmp_path) -> Path:
    """A private copy of the finished sweep, to damage."""
    torch.set_num_threads(1)
    copy = tmp_path / "sweep"
    shutil.copytree(finished_sweep, copy)
    return copy


def _state(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and "cache" not in p.parts}


def test_a_refused_rerun_writes_nothing(sweep):
    before = _state(sweep)
    with pytest.raises(ValueError, match="another config"):
        run_sweep(tiny_preset(steps=3), sweep, progress=False, plots=False, log=quiet)
    assert _state(sweep) == before  # sweep.json included


def test_other_threads_on_a_finished_sweep_are_refused(sweep):
    before = _state(sweep)
    try:
        with pytest.raises(ValueError, match=r"--threads 2: the finished runs .* 1 torch"):
            run_sweep(tiny_preset(torch_threads=2), sweep, progress=False, plots=False,
                      log=quiet)
    finally:
        torch.set_num_threads(1)
    assert _state(sweep) == before
    assert json.loads((sweep / "sweep.json").read_text())["torch_threads"] == 1


def test_adding_G32_reuses_the_census_and_extends_gradient_noise(sweep):
    census = sweep / "census-d1-2.npy"
    before = census.read_bytes()
    noise_before = json.loads((sweep / "gradient_noise.json").read_text())["mixed"]
    summary = run_sweep(tiny_preset(group_sizes=[2, 32]), sweep, progress=False, plots=False,
                        log=quiet)
    assert summary["runs_finished"] == summary["runs_planned"] == 2
    assert census.read_bytes() == before  # wide enough for G = 32: not rebuilt
    noise = json.loads((sweep / "gradient_noise.json").read_text())["mixed"]
    assert [r["G"] for r in noise] == [2, 32]
    assert noise[0] == noise_before[0]  # the G = 2 row was kept, not measured again
    assert all(r["made_from"]["warmstart_key"] == WARM.key() for r in noise)


def test_killed_before_the_first_run_then_another_warm_start_rebuilds(tmp_path, monkeypatch,
                                                                     tiny_cache):
    torch.set_num_threads(1)
    out = with_warm_start(tmp_path / "sweep", tiny_cache)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(grpolab.grpo.backends, "train", killed)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(tiny_preset(), out, progress=False, plots=False, log=quiet)
    old = json.loads((out / "census-d1-2.json").read_text())["inputs"]["warmstart_key"]
    monkeypatch.undo()
    other = replace(WARM, steps=6)
    lines = []
    run_sweep(tiny_preset(warmstart=other), out, progress=False, plots=False, log=lines.append)
    census = json.loads((out / "census-d1-2.json").read_text())["inputs"]
    noise = json.loads((out / "gradient_noise.json").read_text())["mixed"]
    assert old != other.key() == census["warmstart_key"]
    assert [r["made_from"]["warmstart_key"] for r in noise] == [other.key()]
    assert any("rebuilding" in line for line in lines)
    run = json.loads((out / "runs" / "mixed" / "G2-seed0" / "summary.json").read_text())
    assert run["warmstart_key"] == other.key()


def test_census_of_another_warm_start_under_finished_runs_is_refused(sweep):
    meta = sweep / "census-d1-2.json"
    rec = json.loads(meta.read_text())
    rec["inputs"]["temperature"] = 0.5
    meta.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"census-d1-2.npy was made from other inputs.*"
                                         r"temperature 0.5 -> 1.0"):
        run_sweep(tiny_preset(), sweep, progress=False, plots=False, log=quiet)


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])


def _cut_last_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))


RUN = Path("runs") / "mixed" / "G2-seed0"
# (artefact, how it is damaged, fragment of the message besides the file's name)
CORRUPT = [
    pytest.param("sweep.json", lambda p: p.write_text("garbage"), "not valid JSON",
                 id="sweep.json-garbage"),
    pytest.param(str(RUN / "summary.json"), _truncate, "so not a run summary",
                 id="run-summary-truncated"),
    pytest.param(str(RUN / "summary.json"), lambda p: p.write_text("[1, 2]"),
                 "holds a JSON list", id="run-summary-foreign"),
    pytest.param(str(RUN / "log.jsonl"), _cut_last_line, "the log was cut short",
                 id="log.jsonl-cut-at-a-line"),
    pytest.param(str(RUN / "log.jsonl"), lambda p: _truncate(p, 0.7), "is not JSON",
                 id="log.jsonl-torn-line"),
    pytest.param("census-d1-2.npy", lambda p: p.write_bytes(os.urandom(300)),
                 "no NumPy header", id="census-random-bytes"),
    pytest.param("census-d1-2.npy", _truncate, "truncated or damaged", id="census-truncated"),
    pytest.param("gradient_noise.json", _truncate, "so not gradient-noise",
                 id="gradient_noise-truncated"),
    pytest.param("gradient_noise.json", lambda p: p.write_text('{"mixed": 3}'),
                 "is not gradient-noise", id="gradient_noise-foreign"),
    pytest.param("WARMSTART", _truncate, "does not match the checksum",
                 id="warmstart-safetensors-truncated"),
]


@pytest.mark.parametrize("name,damage,fragment", CORRUPT)
def test_a_damaged_artefact_is_named_and_the_fix_said(sweep, name, damage, fragment):
    if name == "WARMSTART":
        path = next((sweep / "cache").glob("warmstart-*/model.safetensors"))
    else:
        path = sweep / name
    damage(path)
    with pytest.raises(ValueError) as exc:
        run_sweep(tiny_preset(), sweep, progress=False, plots=False, log=quiet)
    message = str(exc.value)
    assert message.startswith(str(path)) or str(path) in message, message
    assert fragment in message, message
    assert "delete" in message and "rerun" in message, message
    assert "\n" not in message


def test_lab_plot_on_a_damaged_or_foreign_summary(sweep, capsys):
    summary = sweep / "summary.json"
    for text, fragment in (("{", "truncated"), ('{"hello": 1}', "is not a sweep summary"),
                           (json.dumps({"preset": "x", "runs": [{"G": 2}], "regimes": {}}),
                            "a run lacks")):
        summary.write_text(text)
        assert main(["lab", "plot", "--out", str(sweep)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {summary}") and fragment in err and err.count("\n") == 1


def test_kill_9_then_resume(tmp_path, tiny_cache):
    """SIGKILL in the middle of the second run (no handler can run), then the same sweep
    again: the finished run is untouched and the sweep completes."""
    out = with_warm_start(tmp_path / "sweep", tiny_cache)
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from test_reliability import tiny_preset, quiet
        from grpolab.labs.sweep.sweep import run_sweep
        torch.set_num_threads(1)
        run_sweep(tiny_preset(seeds=[0, 1], steps=10), {str(out)!r}, progress=False,
                  plots=False, log=quiet)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen([sys.executable, "-c", script], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = out / "runs" / "mixed" / "G2-seed0" / "summary.json"
    second_log = out / "runs" / "mixed" / "G2-seed1" / "log.jsonl"
    deadline = time.monotonic() + 300
    try:
        while not (first.exists() and second_log.exists() and second_log.stat().st_size > 0):
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "the sweep never reached its second run"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    assert not (out / "runs" / "mixed" / "G2-seed1" / "summary.json").exists()
    stamp, before = first.stat().st_mtime_ns, first.read_bytes()
    torch.set_num_threads(1)
    summary = run_sweep(tiny_preset(seeds=[0, 1], steps=10), out, progress=False, plots=False,
                        log=quiet)
    assert summary["runs_finished"] == summary["runs_planned"] == 2
    assert first.stat().st_mtime_ns == stamp and first.read_bytes() == before
    assert not list(out.rglob("*.tmp-*"))  # no half-written files left


# ----------------------------------------------------------------------------- remedies
SMALL = dict(task_kwargs=dict(TASK), train_difficulties=[1, 2], warmstart=WARM,
             num_generations=4, prompts_per_step=4, completion_budget=64, eval_every=32,
             max_eval_prompts=10, eval_samples=1, census_samples=4, max_train_prompts=40)


@pytest.fixture
def toy_item(monkeypatch):
    item = remedy_items.LabItem("toy", "toy item", arms={"plain": {}}, base=dict(SMALL),
                                seeds=[0])
    monkeypatch.setitem(ITEMS, "toy", item)
    return item


def test_remedy_rerun_with_another_budget_is_refused_not_relabelled(toy_item, tmp_path,
                                                                    monkeypatch):
    out = tmp_path / "toy"
    run_dir = out / "runs" / "plain" / "seed0"
    run_dir.mkdir(parents=True)
    cfg, _ = toy_item.config("plain", 0)  # a finished 64-completion run of this arm
    (run_dir / "summary.json").write_text(json.dumps({"config": cfg.to_dict(), "steps": 4}))
    monkeypatch.setattr(remedy_items, "train_remedy", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(ValueError, match="completion_budget 64 -> 128"):
        remedy_items.run_item("toy", out, overrides={"completion_budget": 128}, progress=False,
                              log=quiet)
    assert not (out / "item.json").exists()  # refused before anything was written


def test_remedy_rerun_with_other_threads_is_refused(toy_item, tmp_path, monkeypatch):
    out = tmp_path / "toy"
    run_dir = out / "runs" / "plain" / "seed0"
    run_dir.mkdir(parents=True)
    cfg, _ = toy_item.config("plain", 0)
    torch.set_num_threads(1)
    (run_dir / "summary.json").write_text(json.dumps(
        {"config": cfg.to_dict(), "steps": 4, "warmstart_key": cfg.warmstart_key}))
    monkeypatch.setattr(remedy_items, "train_remedy", lambda *a, **k: pytest.fail("trained"))
    try:
        torch.set_num_threads(2)
        with pytest.raises(ValueError, match="was trained from warm start"):
            remedy_items.run_item("toy", out, progress=False, log=quiet)
    finally:
        torch.set_num_threads(1)
    assert not (out / "item.json").exists()


def test_remedy_pool_goes_under_out(toy_item, tmp_path, monkeypatch):
    out = tmp_path / "toy"
    cfg, rem = toy_item.config("plain", 0)

    def fake_train_remedy(config, remedy, run_dir, **kwargs):
        raise KeyboardInterrupt  # only the layout matters here

    monkeypatch.setattr(remedy_items, "train_remedy", fake_train_remedy)
    with pytest.raises(KeyboardInterrupt):
        remedy_items.run_item("toy", out, progress=False, log=quiet)
    pooled = out / "_pool" / remedy_items.config_key(cfg, rem)
    pooled.mkdir(parents=True)
    (pooled / "summary.json").write_text("{")
    with pytest.raises(ValueError, match=f"{pooled}/summary.json: truncated"):
        remedy_items.run_item("toy", out, progress=False, log=quiet)
    assert sorted(os.listdir(tmp_path)) == ["toy"]  # nothing beside --out


def test_diverged_training_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    """A run whose weights diverge raises FloatingPointError deep in the loop (non-finite
    metrics or logits); the CLI reports it in one line with a non-zero exit, no traceback."""
    import grpolab.labs.sweep.sweep as sweep_run

    def diverge(*args, **kwargs):
        raise FloatingPointError("non-finite GRPO metrics at step 3: {...}; lower "
                                 "--learning-rate")

    monkeypatch.setattr(sweep_run, "run_sweep", diverge)
    assert main([*SWEEP, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: non-finite GRPO metrics") and err.count("\n") == 1, err


def test_a_second_runner_on_one_folder_stops_before_writing(toy_item, tmp_path):
    """Two runners resuming one folder used to tear each other's logs: now the second one
    gets a one-line error naming the first one's pid, writes nothing, and the folder is
    free again the moment the first process exits (however it exits)."""
    from grpolab.grpo.records import output_lock

    out = tmp_path / "toy"
    holder = textwrap.dedent("""
        import sys, time
        from grpolab.grpo.records import output_lock
        with output_lock(sys.argv[1]):
            print("held", flush=True)
            time.sleep(120)
    """)
    child = subprocess.Popen([sys.executable, "-c", holder, str(out)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match=rf"in use by another grpolab run \(pid {child.pid}\)"):
            remedy_items.run_item("toy", out, progress=False, log=quiet)
        assert sorted(os.listdir(out)) == [".grpolab.lock"]  # nothing else was written
    finally:
        child.kill()
        child.wait()
    with output_lock(out), output_lock(out):  # free again, and re-entrant in one process
        pass


@pytest.mark.parametrize("name,content,call,fragment", [
    ("item.json", "garbage", "aggregate", "not valid JSON"),
    ("item.json", '{"item": "toy"}', "aggregate", "no 'arms'"),
    ("results.json", '{"item": "toy", "res', "plot", "truncated"),
    ("runs/plain/seed0/summary.json", "\x00\x01", "aggregate", "not valid JSON"),
])
def test_damaged_remedy_files_are_named(tmp_path, name, content, call, fragment):
    out = tmp_path / "toy"
    (out / "runs" / "plain" / "seed0").mkdir(parents=True)
    (out / "item.json").write_text(json.dumps({"item": "toy", "arms": {"plain": {}},
                                               "seeds": [0]}))
    (out / name).write_text(content)
    fn = remedy_report.aggregate_item if call == "aggregate" else remedy_report.plot_item
    with pytest.raises(ValueError) as exc:
        fn(out)
    message = str(exc.value)
    assert message.startswith(str(out / name)) and fragment in message, message
    assert "delete" in message


def test_read_helpers_keep_good_files():
    """The checks are not so strict that good files fail: a committed sweep reads back."""
    from grpolab.grpo.records import read_npy
    from grpolab.labs.sweep.report import read_sweep_summary

    committed = ROOT / "labs" / "results" / "cpu-full"
    if not (committed / "summary.json").is_file():
        pytest.skip("no committed cpu-full results in this checkout")
    summary = read_sweep_summary(str(committed))
    assert summary["runs"]
    census = read_npy(committed / "census-d1-2-3.npy", ndim=2)
    assert census.dtype == np.bool_ and census.shape[1] >= 64
