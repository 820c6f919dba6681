"""The reliability suite (issue 15): bad input is refused up front with one line and exit 2,
saved state cannot lie, damaged files are named, and a killed sweep resumes.

One table row per class of bad input (argv, expected exit code, message fragment); the
state tests share one tiny finished sweep (a 5-step warm start on 40 prompts, G = 2, two
GRPO steps) and corrupt a copy of it per artefact type.
"""

from __future__ import annotations

import contextlib
import errno
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
from grpolab.labs import runner as runner_module
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
    pytest.param([*SWEEP, "--out", "OUT", "--regimes", "mixed", "--budget", str(2**40)], 2,
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
                 "regime 3-digit-fixed-prompts", id="sweep-budget-ignored-by-one-regime"),
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
    # 5. (issue 26) every count-like setting at 2**31 - 1: refused up front, naming its bound
    *[pytest.param([*TRAIN, "--out", "OUT", flag, str(2**31 - 1)], 2, fragment,
                   id=f"train-{flag[2:]}-2**31-1")
      for flag, fragment in (
          ("--G", "--num-generations must be <= 16384"),
          ("--prompts-per-step", "--prompts-per-step must be <= 16384"),
          ("--steps", "--steps must be <= 100000"),
          ("--num-iterations", "--num-iterations must be <= 1024"),
          ("--max-completion-length", "--max-completion-length must be <= 32768"),
          ("--eval-samples", "--eval-samples must be <= 4096"),
          ("--census-samples", "--census-samples must be <= 65536"),
          ("--max-train-prompts", "--max-train-prompts must be <= 1000000"),
          ("--max-eval-prompts", "--max-eval-prompts must be <= 1000000"),
          ("--completion-budget", "is more than 100000 steps"))],
    *[pytest.param([*TRAIN, "--out", "OUT", "--task-kwargs", json.dumps({key: 2**31 - 1})], 2,
                   f"{key} must be", id=f"train-task-{key}-2**31-1")
      for key in ("n_train", "n_eval", "digits", "operands")],
    *[pytest.param(["lab", "pass-rates", "--out", "OUT", flag, str(2**31 - 1)], 2,
                   f"{flag[2:].replace('-', '_')} must be an integer",
                   id=f"pass-rates-{flag[2:]}-2**31-1")
      for flag in ("--samples", "--max-new-tokens", "--prompts-per-level")],
    pytest.param([*SWEEP, "--out", "OUT", "--G", str(2**31 - 1)], 2,
                 "--num-generations must be <= 16384", id="sweep-G-2**31-1"),
    pytest.param([*SWEEP, "--out", "OUT", "--noise-batches", str(2**31 - 1)], 2,
                 "--noise-batches must be", id="sweep-noise-batches-2**31-1"),
    pytest.param([*REMEDIES, "--out", "OUT", "--max-batches", str(2**31 - 1)], 2,
                 "--max-batches must be", id="remedies-max-batches-2**31-1"),
    pytest.param([*REMEDIES, "--out", "OUT", "--curriculum-min-steps", str(2**31 - 1)], 2,
                 "--curriculum-min-steps must be", id="remedies-curriculum-steps-2**31-1"),
    # ... and settings within their bounds whose product no machine here can hold
    pytest.param([*TRAIN, "--out", "OUT", "--prompts-per-step", "2048", "--G", "8",
                  "--max-completion-length", "32768"], 2,
                 "completions of 32768 tokens fit per step", id="train-step-beyond-memory"),
    pytest.param([*TRAIN, "--out", "OUT", "--eval-samples", "4096",
                  "--max-completion-length", "2048"], 2, "samples per prompt fit",
                 id="train-evaluation-beyond-memory"),
    pytest.param([*TRAIN, "--out", "OUT", "--warmstart", '{"n_layer": 64, "n_embd": 8192, '
                  '"n_head": 64}'], 2, "the warm start (51.6B parameters) needs about",
                 id="train-warm-start-beyond-memory"),
    pytest.param(["lab", "pass-rates", "--out", "OUT", "--samples", "4096",
                  "--max-new-tokens", "32768"], 2, "samples of this length fit",
                 id="pass-rates-beyond-memory"),
    # G = 0 before a budget is divided by it (a ZeroDivisionError before)
    pytest.param([*TRAIN, "--out", "OUT", "--G", "0"], 2, "--num-generations must be >= 2",
                 id="train-preset-G-0"),
    pytest.param([*SWEEP, "--out", "OUT", "--G", "0"], 2, "--num-generations must be >= 2",
                 id="sweep-G-0"),
    # nested config: unknown keys get the nearest valid one, types and grammar are checked
    pytest.param([*TRAIN, "--out", "OUT", "--warmstart", '{"stepz": 5}'], 2,
                 "did you mean 'steps'", id="train-warmstart-key-nearest"),
    pytest.param([*TRAIN, "--out", "OUT", "--task-kwargs", '{"digitz": [1]}'], 2,
                 "takes no argument 'digitz' (did you mean 'digits'?)",
                 id="train-task-kwargs-key-nearest"),
    pytest.param([*TRAIN, "--out", "OUT", "--warmstart", '{"task_kwargs": {"n_trian": 5}}'],
                 2, "did you mean 'n_train'", id="train-warmstart-task-kwargs-key-nearest"),
    pytest.param([*TRAIN, "--out", "OUT", "--config", "NESTED"], 2,
                 "unknown WarmStartConfig field 'stepz' (did you mean 'steps'?)",
                 id="train-config-nested-key-nearest"),
    pytest.param([*TRAIN, "--out", "OUT", "--config", "DEEP"], 2, "nests deeper than 64",
                 id="train-config-deep"),
    pytest.param([*TRAIN, "--out", "OUT", "--config", "/dev/zero"], 2, "character device",
                 id="train-config-dev-zero"),
    pytest.param([*TRAIN, "--out", "OUT", "--warmstart", "[" * 70 + "]" * 70], 2,
                 "nests deeper than 64", id="train-warmstart-deep"),
    pytest.param([*TRAIN, "--out", "OUT", "--task-kwargs", '{"ops": ["+"]}'], 2,
                 "ops must be a string of 1 to 16 of the characters", id="train-ops-a-list"),
    pytest.param([*TRAIN, "--out", "OUT", "--task-kwargs", '{"ops": "+/"}'], 2,
                 "ops must be a string", id="train-ops-outside-the-grammar"),
    pytest.param([*TRAIN, "--out", "OUT", "--task", "arithmetik"], 2,
                 "did you mean 'arithmetic'", id="train-task-nearest"),
    # a path that is not UTF-8 (its bytes kept as surrogates) is refused before any work
    pytest.param([*TRAIN, "--out", "NOT_UTF8"], 2, "the path is not valid UTF-8",
                 id="train-out-not-utf8"),
    pytest.param([*SWEEP, "--out", "NOT_UTF8"], 2, "the path is not valid UTF-8",
                 id="sweep-out-not-utf8"),
]


@pytest.mark.parametrize("argv,code,fragment", BAD_INPUT)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, code, fragment, tmp_path, capsys,
                                                         monkeypatch):
    # the memory rows name products beyond a terabyte; a fixed 64 GiB keeps them
    # independent of the machine the suite runs on (imported here, so that the other rows
    # also run, and fail, against code from before the memory checks)
    try:
        from grpolab.models import memory
    except ImportError:
        memory = None
    if memory is not None:
        monkeypatch.setattr(memory, "machine_memory", lambda: 64 * 2**30)
    out = tmp_path / "out"
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    nested = tmp_path / "nested.json"
    nested.write_text('{"warmstart": {"stepz": 5}}')
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    subst = {"OUT": str(out), "FILE": str(a_file), "LOCKED": _unwritable(tmp_path),
             "NESTED": str(nested), "DEEP": str(deep),
             "NOT_UTF8": os.fsdecode(os.fsencode(str(out)) + b"\xff")}
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
            and "cuda" not in p.values[0] and "NOT_UTF8" not in p.values[0]]
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
DEEP_JSON = "[" * 100_000 + "]" * 100_000  # a RecursionError in json, unbounded


def _edit_json(path: Path, **fields) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def _edit_last_eval(path: Path, **fields) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    last = max(i for i, r in enumerate(rows) if "eval_greedy_accuracy" in r)
    rows[last].update(fields)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _edit_noise(path: Path, **fields) -> None:
    doc = json.loads(path.read_text())
    doc["mixed"][0].update(fields)
    path.write_text(json.dumps(doc))


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
    # issue 26: deep documents, fields of the wrong type and damaged records, each named
    pytest.param(str(RUN / "summary.json"), lambda p: p.write_text(DEEP_JSON),
                 "nests deeper than 64", id="run-summary-deep"),
    pytest.param(str(RUN / "summary.json"), lambda p: _edit_json(p, config=[1]),
                 "field config must be an object", id="run-summary-config-a-list"),
    pytest.param(str(RUN / "summary.json"), lambda p: _edit_json(p, final_accuracy="high"),
                 "field final_accuracy must be a finite number", id="run-summary-wrong-type"),
    pytest.param(str(RUN / "summary.json"), lambda p: _edit_json(p, steps=10**401),
                 "beyond the largest integer", id="run-summary-401-digit-int"),
    pytest.param(str(RUN / "log.jsonl"), lambda p: _edit_last_eval(
        p, eval_greedy_accuracy_by_difficulty=[0.5]), "eval_greedy_accuracy_by_difficulty must "
                 "be an object", id="log.jsonl-wrong-type"),
    pytest.param(str(RUN / "log.jsonl"), lambda p: p.write_text(
        p.read_text() + DEEP_JSON + "\n"), "nests deeper than 64", id="log.jsonl-deep-line"),
    pytest.param("gradient_noise.json", lambda p: _edit_noise(p, G="two"),
                 "field G must be an integer", id="gradient_noise-wrong-type"),
    pytest.param("sweep.json", lambda p: _edit_json(p, torch_threads="1"),
                 "field torch_threads must be an integer", id="sweep.json-wrong-type"),
    pytest.param("census-d1-2.json", _truncate, "truncated", id="census-record-truncated"),
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
                            "runs[0] lacks the field 'regime'")):
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
    monkeypatch.setattr(runner_module._Job, "train", lambda *a, **k: pytest.fail("trained"))
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
    monkeypatch.setattr(runner_module._Job, "train", lambda *a, **k: pytest.fail("trained"))
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

    def fake_train(job, progress):
        raise KeyboardInterrupt  # only the layout matters here

    monkeypatch.setattr(runner_module._Job, "train", fake_train)
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


# ============================================================================ issue 26, phase 2
# The engine and the labs: hostile files through the engine's readers, a lock on every
# writer taken before any other work, model loading that cannot surprise, a full disk,
# every run finishing its summary, bounded plots, refusals before the warm start.
def _child(script: str, *args: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter on this checkout (SIGINT restored: a background
    process of a non-interactive shell inherits it ignored), memory capped at 4 GiB so a
    reader that trusts /dev/zero fails instead of exhausting the machine."""
    import resource

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limits,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env})


_READ = """
    import sys
    from grpolab.grpo import records
    try:
        getattr(records, sys.argv[1])(sys.argv[2])
    except ValueError as exc:
        print(exc)
"""


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _sparse(size: int):
    def make(path: Path) -> None:
        with open(path, "wb") as f:
            f.truncate(size)
    return make


# (engine reader, case, how the file is made (None: /dev/zero), fragment of the refusal)
ENGINE_READERS = [
    ("read_json", "dev-zero", None, "character device"),
    ("read_json", "fifo", _fifo, "named pipe"),
    ("read_json", "deep", lambda p: p.write_text(DEEP_JSON), "nests deeper than 64"),
    ("read_json", "401-digit-int", lambda p: p.write_text('{"steps": 1' + "0" * 400 + "}"),
     "beyond the largest integer"),
    ("read_json", "nan", lambda p: p.write_text('{"final_accuracy": NaN}'),
     "not a finite number"),
    ("read_jsonl", "dev-zero", None, "character device"),
    ("read_jsonl", "deep-line", lambda p: p.write_text('{"step": 0}\n' + DEEP_JSON + "\n"),
     "nests deeper than 64"),
    ("read_npy", "fifo", _fifo, "named pipe"),
    ("read_npy", "over-1GiB", _sparse(2**30 + 1), "more than the 1 GiB"),
]


@pytest.mark.parametrize("reader,case,make,fragment", ENGINE_READERS,
                         ids=[f"{r}-{c}" for r, c, _, _ in ENGINE_READERS])
def test_the_engines_readers_refuse_hostile_files(reader, case, make, fragment, tmp_path):
    """records.read_json/read_jsonl/read_npy are the core's checked reader: a device or a
    FIFO is refused unread, a deep or huge-integer document in one line naming the file."""
    path = Path("/dev/zero") if make is None else tmp_path / f"hostile-{case}"
    if make is not None:
        make(path)
    done = _child(_READ, reader, str(path), timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip()
    assert line.startswith(str(path)) and fragment in line and "\n" not in line, line


def test_engine_readers_keep_their_messages(tmp_path):
    """The messages the engine's callers and tests rely on survive the re-basing."""
    from grpolab.grpo.records import CorruptFileError, read_json, read_jsonl, read_npy

    f = tmp_path / "x.json"
    for text, fragment in (("[1, 2]", "holds a JSON list, not a run summary"),
                           ('{"a": 1', "truncated"), ("\x00\x01", "not valid JSON")):
        f.write_text(text)
        with pytest.raises(CorruptFileError, match=fragment):
            read_json(f, "a run summary")
    f.write_text('{"a": 1}\n{"b"\n')
    with pytest.raises(CorruptFileError, match="line 2 is not JSON"):
        read_jsonl(f, "a run log")
    np.save(tmp_path / "a.npy", np.zeros((4, 8)))
    f.write_bytes((tmp_path / "a.npy").read_bytes()[:-10])
    with pytest.raises(CorruptFileError, match="truncated or damaged"):
        read_npy(f)
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json")


def test_a_damaged_census_or_noise_file_is_refused_before_the_warm_start(sweep, monkeypatch):
    """The refusal used to come after the warm start was loaded (or trained): 10-13 s."""
    import grpolab.grpo.setup

    def loaded(*args, **kwargs):
        raise AssertionError("the warm start was loaded before the damaged file was refused")

    monkeypatch.setattr(grpolab.grpo.setup, "load_policy", loaded)
    for name, damage, fragment in (("census-d1-2.npy", _truncate, "truncated or damaged"),
                                   ("gradient_noise.json", _truncate, "truncated")):
        path = sweep / name
        before = path.read_bytes()
        damage(path)
        with pytest.raises(ValueError, match=fragment) as exc:
            run_sweep(tiny_preset(), sweep, progress=False, plots=False, log=quiet)
        assert str(exc.value).startswith(str(path))
        path.write_bytes(before)


# ----------------------------------------------------------------------------- one writer
_HOLD = """
    import sys, time
    from grpolab.grpo.records import output_lock
    with output_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(300)
"""

_SECOND = """
    import contextlib, io, json, sys
    from grpolab.cli.main import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(sys.argv[1:])
        except SystemExit as exc:
            code = exc.code
    print(json.dumps({"code": code, "err": err.getvalue(), "torch": "torch" in sys.modules}))
"""


@contextlib.contextmanager
def _held(folder: Path):
    """A real second process holding ``folder``'s output lock."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_HOLD), str(folder)],
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline().strip() == "held"
        yield child.pid
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


# every grpolab command that writes into an output folder
WRITERS = [
    pytest.param(["lab", "train", "--preset", "cpu-quick", "--quiet", "--out", "OUT"],
                 id="lab-train"),
    pytest.param(["lab", "sweep", "--preset", "cpu-quick", "--quiet", "--no-plots",
                  "--out", "OUT"], id="lab-sweep"),
    pytest.param(["remedies", "--item", "prompts-x-g", "--no-plots", "--out", "OUT"],
                 id="remedies"),
    pytest.param(["lab", "pass-rates", "--out", "OUT"], id="lab-pass-rates"),
    pytest.param(["lab", "plot", "--out", "OUT"], id="lab-plot"),
]


@pytest.mark.parametrize("argv", WRITERS)
def test_a_second_writer_is_refused_at_once_naming_the_first(argv, tmp_path):
    """Refused before any other work, checked without a clock: the refusal comes before
    torch (and so any model, task or warm start) is imported, and nothing is written. Today
    lab train had no lock (two trains on one --out both exit 0 with a torn log), and the
    sweep, remedies and pass-rates locked only after seconds of work."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}")  # lab plot needs one to get as far as locking
    with _held(out) as pid:
        done = _child(_SECOND, *[str(out) if a == "OUT" else a for a in argv], timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout.strip().splitlines()[-1])
        assert got["code"] == 2 and got["err"].count("\n") == 1, got
        assert f"is in use by another grpolab run (pid {pid})" in got["err"], got
        assert not got["torch"], "the second writer imported torch before it was refused"
        assert sorted(os.listdir(out)) == [".grpolab.lock", "summary.json"]


def test_a_train_inside_a_folder_a_sweep_holds_is_refused(tmp_path, capsys):
    out = tmp_path / "sweep"
    out.mkdir()
    run_dir = out / "runs" / "mixed" / "G2-seed0"
    with _held(out) as pid:
        assert main(["lab", "train", "--preset", "cpu-quick", "--quiet",
                     "--out", str(run_dir)]) == 2
        err = capsys.readouterr().err
        assert f"lies inside {out}, which is in use by another grpolab run (pid {pid})" in err
        assert err.count("\n") == 1 and not run_dir.exists()


def test_two_trains_on_one_folder_one_log_intact(tmp_path, tiny_cache):
    """Two real ``lab train`` on one --out: the second is refused at once naming the first,
    the first finishes with a whole log (before: both exit 0 with a torn log.jsonl)."""
    out = tmp_path / "run"
    warm = json.dumps({"task_kwargs": TASK, "steps": WARM.steps})
    argv = [sys.executable, "-m", "grpolab", "lab", "train", "--out", str(out), "--cache",
            tiny_cache, "--task-kwargs", json.dumps(TASK), "--warmstart", warm, "--G", "2",
            "--prompts-per-step", "4", "--steps", "25", "--max-train-prompts", "40",
            "--max-eval-prompts", "10", "--eval-samples", "1", "--threads", "1", "--quiet",
            "--device", "cpu"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        log = out / "log.jsonl"
        deadline = time.monotonic() + 300
        while not (log.exists() and log.stat().st_size > 0):
            assert first.poll() is None, first.stderr.read()
            assert time.monotonic() < deadline, "the first train never started its log"
            time.sleep(0.05)
        second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1, second.stderr
        assert f"in use by another grpolab run (pid {first.pid})" in second.stderr
        assert first.wait(timeout=600) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        first.stdout.close()
        first.stderr.close()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["step"] for r in rows if r["step"] > 0] == list(range(1, 26))
    assert json.loads((out / "summary.json").read_text())["steps"] == 25


@pytest.mark.parametrize("kind", ["symlink", "hard-link"])
def test_a_planted_lock_in_an_output_folder_is_refused_and_its_target_untouched(kind, tmp_path):
    """records.output_lock used to open .grpolab.lock with open(..., "a+"), following a
    symlink and writing its pid into the file it points at, outside --out."""
    from grpolab.grpo.records import output_lock

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (os.symlink if kind == "symlink" else os.link)(victim, out / ".grpolab.lock")
    with pytest.raises(ValueError, match="symbolic link|other hard links"):
        with output_lock(out):
            pass
    assert victim.read_text() == "precious\n"


def test_a_refused_command_removes_the_folder_its_lock_made(tmp_path):
    from grpolab.grpo.records import output_lock

    out = tmp_path / "a" / "b"
    with pytest.raises(ValueError, match="refused"):
        with output_lock(out):
            assert (out / ".grpolab.lock").is_file()
            raise ValueError("refused")
    assert not (tmp_path / "a").exists()
    with output_lock(out):  # a folder that holds work is kept
        (out / "log.jsonl").write_text("{}\n")
    assert (out / "log.jsonl").is_file()


# ----------------------------------------------------------------------------- model loading
def _tiny_folder(path: Path) -> Path:
    from grpolab.models.tiny_llama import build_tiny_model

    model, tok = build_tiny_model(seed=0)
    path.mkdir()
    model.config.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_a_model_that_needs_remote_code_is_refused_in_one_line(tmp_path):
    """grpolab never says trust_remote_code=True: the folder's own Python must not run,
    and the refusal is one line (transformers' message is four)."""
    from grpolab.models.tiny_llama import load_causal_lm

    folder = _tiny_folder(tmp_path / "remote")
    marker = tmp_path / "remote-code-ran"
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(model_type="grpolab-custom", auto_map={
        "AutoConfig": "configuration_custom.CustomConfig",
        "AutoModelForCausalLM": "modeling_custom.CustomModel"})
    (folder / "config.json").write_text(json.dumps(cfg))
    for name in ("configuration_custom.py", "modeling_custom.py"):
        (folder / name).write_text(f"open({str(marker)!r}, 'w').close()\n")
    with pytest.raises(ValueError) as exc:
        load_causal_lm(str(folder), device="cpu")
    message = str(exc.value)
    assert "needs remote code" in message and "trust_remote_code=False" in message
    assert "\n" not in message and not marker.exists()


def test_a_malicious_pickle_is_refused_in_one_line(tmp_path, capsys):
    """torch's weights-only loader refuses the pickle (its 39-line traceback before); the
    CLI says so in one line and the payload never runs."""
    import pickle

    folder = _tiny_folder(tmp_path / "pickled")
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Payload()))
    assert main(["lab", "train", "--out", str(tmp_path / "out"), "--model", str(folder),
                 "--steps", "1", "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weights-only loader refuses" in err, err
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_an_unknown_hub_id_fails_at_once_offline(monkeypatch):
    """No network: the local cache only (HF_HUB_OFFLINE's behaviour), so a miss is one line
    at once instead of a minute of retries."""
    import socket

    from grpolab.models.tiny_llama import load_causal_lm

    def unreachable(*args, **kwargs):
        raise OSError("Network is unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(socket, "create_connection", unreachable)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError) as exc:
        load_causal_lm("grpolab-tests/no-such-model", device="cpu")
    assert time.monotonic() - start < 20
    message = str(exc.value)
    assert "hub cannot be reached" in message and "\n" not in message


# ----------------------------------------------------------------------------- a full disk
def test_a_full_disk_while_saving_the_warm_start_is_one_line_and_resumable(tmp_path,
                                                                           monkeypatch):
    """save_pretrained on a full disk raises safetensors' SafetensorError (no OSError): a
    traceback before. Now one OSError, nothing half-written in the cache, and the rerun
    trains and saves the warm start."""
    import transformers
    from safetensors import SafetensorError

    from grpolab.grpo.warmstart import warm_start

    def full(self, *args, **kwargs):
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: '
                              'StorageFull, message: "No space left on device" })')

    config = replace(WARM, steps=2)
    torch.set_num_threads(1)
    monkeypatch.setattr(transformers.PreTrainedModel, "save_pretrained", full)
    with pytest.raises(OSError) as exc:
        warm_start(config, tmp_path, device="cpu", progress=False)
    message = str(exc.value)
    assert "could not save the warm start" in message and "No space left" in message
    assert "\n" not in message and os.listdir(tmp_path) == []
    monkeypatch.undo()
    torch.set_num_threads(1)
    path = warm_start(config, tmp_path, device="cpu", progress=False)
    assert (Path(path) / "model.safetensors").is_file()


def test_a_full_disk_at_any_engine_write_names_the_file_and_keeps_the_old(tmp_path,
                                                                          monkeypatch):
    from grpolab.grpo import records

    path = tmp_path / "summary.json"
    path.write_text('{"old": true}')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    for write, value in ((records.write_json_atomic, {"new": 1}),
                         (records.write_text_atomic, "new"),
                         (records.write_csv_atomic, [{"a": 1}]),
                         (records.write_npy_atomic, np.zeros(3))):
        with pytest.raises(OSError) as exc:
            write(path, value)
        assert str(path) in str(exc.value) and "No space left" in str(exc.value)
        assert path.read_text() == '{"old": true}'
        assert sorted(os.listdir(tmp_path)) == ["summary.json"]  # no temporary file left
    monkeypatch.undo()
    log = records.RunLog(tmp_path)

    class FullFile:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            pass

    log._file.close()
    log._file = FullFile()
    with pytest.raises(OSError, match=r"log.jsonl \(No space left on device\).*rerun"):
        log.write({"step": 1})


def test_a_path_that_is_not_utf8_is_refused_up_front(tmp_path):
    from grpolab.cli._checks import check_out_dir

    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/out\xff")
    with pytest.raises(ValueError, match=r"--out .*out\\xff: the path is not valid UTF-8"):
        check_out_dir(bad)


# ----------------------------------------------------------------------------- finishing
def test_a_sweep_with_one_G_prints_its_summary(finished_sweep, tmp_path, monkeypatch, capsys):
    """A sweep of one G has no verdict (nothing to compare across G); the command ended
    in KeyError: 'verdict' after training."""
    import grpolab.labs.sweep.sweep as sweep_module

    summary = json.loads((finished_sweep / "summary.json").read_text())
    assert all("verdict" not in info for info in summary["regimes"].values())
    summary["seconds_this_invocation"] = 1.0
    monkeypatch.setattr(sweep_module, "run_sweep", lambda *a, **k: summary)
    assert main([*SWEEP, "--G", "2", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "[mixed] one G value: nothing to compare across G" in out


def test_lab_plot_is_bounded_in_what_it_draws(finished_sweep, tmp_path, capsys):
    """300 regimes: the first 12 are drawn, with a note (minutes before)."""
    out = tmp_path / "many"
    shutil.copytree(finished_sweep, out, ignore=shutil.ignore_patterns("cache", "runs"))
    summary = json.loads((out / "summary.json").read_text())
    (name, info), = summary["regimes"].items()
    runs = [r for r in summary["runs"] if r["regime"] == name]
    summary["regimes"] = {f"r{i}": info for i in range(300)}
    summary["runs"] = [{**r, "regime": f"r{i}"} for i in range(300) for r in runs]
    (out / "summary.json").write_text(json.dumps(summary))
    lines = (out / "curves.csv").read_text().splitlines()
    head, col = lines[0], lines[0].split(",").index("regime")
    rows = [line.split(",") for line in lines[1:]]
    (out / "curves.csv").write_text("\n".join(
        [head] + [",".join(r[:col] + [f"r{i}"] + r[col + 1:]) for i in range(300) for r in rows])
        + "\n")
    start = time.monotonic()
    assert main(["lab", "plot", "--out", str(out)]) == 0
    assert time.monotonic() - start < 90
    printed = capsys.readouterr().out
    assert "has 300 regimes; plotting the first 12" in printed
    assert (out / "plots" / "accuracy.png").is_file()


# ----------------------------------------------------------------------------- more readers
def test_engine_files_of_the_wrong_type_are_named(tmp_path):
    """The tokenizer's vocabulary, the warm-start record and the remedy reports' raw
    json.loads: a wrong type, a deep document or a missing field was a TypeError,
    KeyError or RecursionError."""
    from grpolab.grpo.warmstart import check_cached
    from grpolab.labs.remedies.report import _dynamic_sampling_theory_rows, load_results
    from grpolab.models.tokenizer import CharTokenizer

    folder = tmp_path / "tok"
    CharTokenizer().save_pretrained(folder)
    for text, fragment in (('{"<pad>": "zero"}', r"field \['<pad>'\] must be an integer"),
                           ('{"a": 0}', "has no '<pad>' token"), (DEEP_JSON, "nests deeper")):
        (folder / "vocab.json").write_text(text)
        with pytest.raises(ValueError, match=fragment) as exc:
            CharTokenizer.from_pretrained(folder)
        assert str(exc.value).startswith(str(folder / "vocab.json"))
    (folder / "warmstart.json").write_text(DEEP_JSON)
    with pytest.raises(ValueError, match="warmstart.json: nests deeper"):
        check_cached(folder)
    run = tmp_path / "dynamic" / "seed0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"config": {"num_generations": 8}}))
    (run / "log.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="lacks the field 'prompts_per_step'"):
        _dynamic_sampling_theory_rows(str(tmp_path / "dynamic"))
    (run / "summary.json").write_text(json.dumps({"config": {
        "num_generations": 8, "prompts_per_step": 8, "max_batches": 4}}))
    (run / "log.jsonl").write_text(json.dumps({"generation_batches": 1, "q_predicted": "x"}))
    with pytest.raises(ValueError, match="q_predicted must be a finite number"):
        _dynamic_sampling_theory_rows(str(tmp_path / "dynamic"))
    (tmp_path / "item").mkdir()
    (tmp_path / "item" / "results.json").write_text(DEEP_JSON)
    with pytest.raises(ValueError, match="nests deeper"):
        load_results("item", str(tmp_path))


def test_the_tiny_vocabulary_size_the_memory_estimate_uses_is_the_tokenizers():
    from grpolab.models.memory import TINY_VOCAB
    from grpolab.models.tokenizer import CharTokenizer

    assert len(CharTokenizer()) == TINY_VOCAB


def test_lab_plot_refuses_wrong_types_and_curves_that_are_not_a_file(sweep, capsys):
    summary = sweep / "summary.json"
    doc = json.loads(summary.read_text())
    doc["runs"][0]["G"] = "two"
    summary.write_text(json.dumps(doc))
    assert main(["lab", "plot", "--out", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field runs[0].G must be an integer" in err, err
    doc["runs"][0]["G"] = 2
    summary.write_text(json.dumps(doc))
    (sweep / "curves.csv").unlink()
    os.mkfifo(sweep / "curves.csv")  # open() waited for a writer forever
    done = _child(_SECOND, "lab", "plot", "--out", str(sweep), timeout=60)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["code"] == 2 and "curves.csv: is a named pipe (FIFO)" in got["err"], got


def test_a_full_disk_while_saving_a_plot_is_one_line_and_leaves_no_half_plot(tmp_path,
                                                                             monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure
    import matplotlib.pyplot as plt

    from grpolab.labs.common import save_figure

    def full(self, path, *args, **kwargs):
        if hasattr(path, "write"):  # drawn in memory, then written atomically
            path.write(b"\x89PNG half")
        else:
            Path(path).write_bytes(b"\x89PNG half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    with pytest.raises(OSError) as exc:
        save_figure(plt.figure(), tmp_path, "accuracy")
    assert f"could not write {tmp_path / 'accuracy.png'} (No space left" in str(exc.value)
    assert os.listdir(tmp_path) == []
