"""The book's TRL batch calculator (grpolab-batch.js) against TRL's own arithmetic.

For a grid of (processes, per-device batch, accumulation, G, steps per generation,
num_iterations), ``trl.GRPOConfig`` is instantiated (the process count patched in as its
``world_size``) and the page's ``trlBatch`` runs under Node on the same inputs:

- TRL refuses exactly the settings the page refuses, for the same reason;
- ``generation_batch_size`` and ``steps_per_generation`` are TRL's;
- "off-policy" is GRPOTrainer's own condition for computing old log-probs, read from the
  installed source, and the staleness agrees with a replay of its generate-every schedule;
- optimizer steps per epoch are the length of TRL's ``RepeatSampler`` through a DataLoader
  and transformers' ``len(dataloader) / gradient_accumulation_steps`` (rounded up).

A planted wrong answer must be caught by the same comparison. Node is Debian's ``nodejs``;
skipped without it unless CI=true.
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import os
import random
import shutil
import subprocess
from importlib import resources
from unittest import mock

import pytest

BATCH_JS = str(resources.files("grpolab.book").joinpath("static", "grpolab-batch.js"))
RUNNER = r"""
const calc = require(process.argv[1]);
const grid = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(grid.map(g => calc.trlBatch(g))));
"""
N_PROMPTS = 100


def _node() -> str:
    path = shutil.which("node") or shutil.which("nodejs")
    if not path:
        if os.environ.get("CI") == "true":
            pytest.fail("node is not installed, and CI=true: the parity test must run")
        pytest.skip("node not found (install Debian's nodejs); not under CI")
    return path


def _grid() -> list[dict]:
    full = list(itertools.product((1, 2, 3, 8), (1, 2, 3, 4, 6, 16), (1, 2, 3, 4),
                                  (1, 2, 3, 4, 8, 16), (None, 1, 2, 3, 8), (1, 2, 3)))
    picked = random.Random(0).sample(full, 90)
    picked += [(1, 16, 8, 8, None, 1),   # the user test's run: 128 completions, 16 prompts
               (1, 3, 1, 8, None, 1),    # 3 completions cannot hold a group of 8
               (8, 1, 1, 8, None, 1),    # one completion per GPU: a group spans 8 GPUs
               (1, 4, 4, 8, 2, 1),       # two generations per optimizer step
               (1, 4, 2, 8, 4, 2),       # off-policy: 4 optimizer steps per generation
               (2, 4, 1, 4, None, 1), (1, 8, 1, 1, None, 1)]  # G = 1: refused
    return [dict(processes=P, per_device_batch=b, grad_accum=A, G=G, steps_per_generation=S,
                 num_iterations=I, dataset_prompts=N_PROMPTS)
            for P, b, A, G, S, I in picked]


def _run_js(grid: list[dict]) -> list[dict]:
    proc = subprocess.run([_node(), "-e", RUNNER, BATCH_JS], input=json.dumps(grid),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _trl(case: dict, tmp_path) -> dict:
    """What TRL makes of ``case``: its config's sizes, or the ValueError it raises."""
    import trl
    from trl.trainer.grpo_trainer import GRPOTrainer

    with mock.patch.object(trl.GRPOConfig, "world_size",
                           property(lambda self: case["processes"])):
        try:
            c = trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[],
                               per_device_train_batch_size=case["per_device_batch"],
                               gradient_accumulation_steps=case["grad_accum"],
                               num_generations=case["G"],
                               steps_per_generation=case["steps_per_generation"],
                               num_iterations=case["num_iterations"])
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
    # GRPOTrainer's own condition for computing old log-probs (off-policy updates)
    src = inspect.getsource(GRPOTrainer)
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in src
    assert "if self.args.gradient_accumulation_steps % generate_every != 0" in src
    every = c.steps_per_generation * c.num_iterations
    # replay _prepare_inputs: generate when the micro-step is a multiple of generate_every
    A, worst, generated_at = c.gradient_accumulation_steps, 0, 0
    for m in range(4 * A * every):
        if m % every == 0:
            generated_at = m
        worst = max(worst, m // A - generated_at // A)
    # an epoch: TRL's RepeatSampler through a DataLoader of b·S per process; transformers'
    # Trainer counts ceil(len(dataloader) / accumulation) optimizer steps, at least 1
    from trl.trainer.utils import RepeatSampler

    sampler = RepeatSampler(range(N_PROMPTS), mini_repeat_count=c.num_generations,
                            batch_size=c.generation_batch_size // c.num_generations,
                            repeat_count=every, shuffle=False)
    per_process = len(sampler) / case["processes"]
    batches = math.ceil(per_process / (c.per_device_train_batch_size * c.steps_per_generation))
    epoch = max(batches // A + int(batches % A > 0), 1) if batches else 0
    return {"ok": True, "generation_batch_size": c.generation_batch_size,
            "steps_per_generation": c.steps_per_generation,
            "off_policy": A % every != 0, "max_staleness": worst,
            "optimizer_steps_per_epoch": epoch}


def _mismatches(grid, js, trl_rows) -> list[str]:
    bad = []
    for case, j, t in zip(grid, js, trl_rows, strict=True):
        if j["ok"] != t["ok"]:
            bad.append(f"{case}: page ok={j['ok']} ({j.get('error')}), TRL ok={t['ok']} "
                       f"({t.get('error')})")
        elif not t["ok"]:
            # the same reason: TRL's message opens the page's
            reason = t["error"].split(".")[0].split(" You provided")[0]
            if not j["error"].startswith(reason[:40]):
                bad.append(f"{case}: page says {j['error']!r}, TRL says {t['error']!r}")
        else:
            for key in ("generation_batch_size", "steps_per_generation", "off_policy",
                        "max_staleness", "optimizer_steps_per_epoch"):
                if j[key] != t[key]:
                    bad.append(f"{case}: {key} page {j[key]}, TRL {t[key]}")
    return bad


def test_the_page_does_trls_batch_arithmetic(tmp_path):
    grid = _grid()
    js = _run_js(grid)
    trl_rows = [_trl(case, tmp_path) for case in grid]
    assert sum(not t["ok"] for t in trl_rows) >= 5 and sum(t["ok"] for t in trl_rows) >= 40
    assert any(t["ok"] and t["off_policy"] for t in trl_rows)
    assert not _mismatches(grid, js, trl_rows)
    # the derived sizes the page prints follow from TRL's (per step, per generation)
    for case, j in zip(grid, js, strict=True):
        if j["ok"]:
            b, P, A = case["per_device_batch"], case["processes"], case["grad_accum"]
            assert j["completions_per_step"] == b * P * A
            assert j["prompts_per_generation"] * case["G"] == j["generation_batch_size"]
            assert j["off_policy"] == (j["max_staleness"] > 0)
    # the comparison catches a wrong page: a planted off-by-one and a flipped refusal
    first_ok = next(i for i, j in enumerate(js) if j["ok"])
    wrong = [dict(j) for j in js]
    wrong[first_ok]["generation_batch_size"] += 1
    assert _mismatches(grid, wrong, trl_rows)
    first_bad = next(i for i, j in enumerate(js) if not j["ok"])
    wrong = [dict(j) for j in js]
    wrong[first_bad] = {**js[first_ok], "ok": True}
    assert _mismatches(grid, wrong, trl_rows)


def test_the_user_tests_run_reads_as_trl_counts_it():
    """persona B's run (1 GPU, per-device 16, accumulation 8, G = 8): 128 completions and
    16 prompts per optimizer step, one generation per step, on-policy."""
    r = _run_js([dict(processes=1, per_device_batch=16, grad_accum=8, G=8,
                      steps_per_generation=None, num_iterations=1)])[0]
    assert (r["completions_per_step"], r["prompts_per_step"]) == (128, 16)
    assert (r["optimizer_steps_per_generation"], r["off_policy"]) == (1, False)
