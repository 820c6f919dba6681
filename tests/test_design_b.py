"""Design B (labs/results/design-b, book/labs/08-coverage-pool.md): the preset against its
declaration, the per-level results read from run logs, and every declared verdict planted
both ways ("supported", "refuted", "no learning")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from grpolab.labs import design_b

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "labs" / "results" / "design-b"
SEEDS = (0, 1, 2, 3)
GS = (2, 8, 32)


# ----------------------------------------------------------------------------- the preset
def test_design_b_preset_is_the_declared_design():
    from grpolab.labs.sweep.presets import get_preset

    declared = json.loads((RESULTS / "declared.json").read_text())["setup"]
    preset = get_preset("design-b")
    assert preset.group_sizes == declared["group_sizes"] == list(GS)
    assert preset.seeds == declared["seeds"] == list(SEEDS)
    for G in GS:
        cfg = preset.run_config(preset.regimes[0], G, 0)
        assert cfg.num_generations * cfg.prompts_per_step == declared["completions_per_step"]
        assert cfg.steps == declared["steps"]
        assert {k: getattr(cfg, k) for k in declared["estimator"]} == declared["estimator"]
        assert cfg.train_difficulties == list(design_b.LEVELS)
        assert cfg.eval_samples == design_b.COVERAGE_K == 64
        assert cfg.task_kwargs["seed"] == 1 and cfg.warmstart.task_kwargs["seed"] == 0
        assert cfg.warmstart.steps == 1500  # the standard warm start


def test_design_b_prompts_are_disjoint_from_the_warm_start_and_half_each_level():
    """The RL and held-out prompts share no text with the warm start's supervised prompts
    (deviations.md, item 1), and the pool is half 3-digit, half 4-digit."""
    from grpolab.grpo.config import training_prompts
    from grpolab.labs.sweep.presets import get_preset
    from grpolab.tasks.registry import get_task

    cfg = get_preset("design-b").run_config(get_preset("design-b").regimes[0], 8, 0)
    train, evals = training_prompts(cfg, get_task(cfg.task, **cfg.task_kwargs))
    sft = {p.text for p in get_task(cfg.warmstart.task, **cfg.warmstart.task_kwargs).train_prompts}
    assert not sft & {p.text for p in train + evals}
    counts = [sum(p.difficulty == lvl for p in train) for lvl in design_b.LEVELS]
    assert abs(counts[0] - counts[1]) <= 1 and sum(counts) == len(train)


def test_noise_regimes_restrict_the_same_config_to_one_level():
    preset = design_b._noise_preset()
    assert preset.noise_batches == 64
    for regime, lvl in zip(preset.regimes, design_b.LEVELS, strict=True):
        cfg = preset.run_config(regime, 32, 0)
        base = preset.run_config(replace(regime, train_difficulties=list(design_b.LEVELS)), 32, 0)
        assert cfg.train_difficulties == [lvl] and regime.name == design_b.NOISE_REGIMES[lvl]
        assert cfg.to_dict() | {"train_difficulties": base.train_difficulties} == base.to_dict()


def test_monitor_logs_which_prompts_had_a_success():
    from grpolab.grpo.measure import ZeroVarianceMonitor

    m = ZeroVarianceMonitor(np.zeros((6, 8), bool), 8)
    rec = m.observe(np.array([0, 0, 1, 0, 0, 0, 1, 1.0]), [2, 2, 2, 2], [4, 1, 3, 0])
    assert rec["solved_prompts"] == [0, 1]


# ----------------------------------------------------------------------------- planted results
def _doc(hard, easy, *, hard0=0.01, easy0=0.5, coverage=None, solved=None):
    """A by_level.json: final pass@1 ``hard(G, s)``/``easy(G, s)``, warm start ``hard0``/
    ``easy0``, final 4-digit pass@64 ``coverage(G, s)``, final solved counts ``solved(G, s)``."""
    coverage = coverage or (lambda G, s: 0.3)
    runs = []
    for G in GS:
        for s in SEEDS:
            def cp(step, h, e, c):
                return {"step": step, "completions": 256 * step, "by_level": {
                    "3": {"prompts": 130, "pass_at_k": {"1": e, "64": 0.99}},
                    "4": {"prompts": 131, "pass_at_k": {"1": h, "64": c}}}}
            runs.append({"G": G, "seed": s, "samples": 64,
                         "checkpoints": [cp(0, hard0, easy0, 0.3),
                                         cp(512, hard(G, s), easy(G, s), coverage(G, s))],
                         "solved": None if solved is None else [
                             {"step": 512, "completions": 131072,
                              "by_level": {"3": 600, "4": solved(G, s)}}]})
    return {"preset": "design-b", "levels": [3, 4], "runs": runs, "runs_finished": 12,
            "runs_planned": 12}


def _folder(tmp_path, doc):
    (tmp_path / "by_level.json").write_text(json.dumps(doc))
    (tmp_path / "declared.json").write_text(json.dumps(
        {"minimum_detectable_effect": {"interaction_per_doubling": 0.0094}}))
    return str(tmp_path)


def _spread(s, size):
    """A per-seed deviation (mean 0 over the four seeds), so every interval has a width."""
    return size * (s - 1.5)


def test_planted_support_is_supported(tmp_path):
    """4-digit pass@1 rises by 0.02 per doubling, 3-digit falls by 0.01: interaction +0.03."""
    doc = _doc(lambda G, s: 0.05 + (0.02 + _spread(s, 0.002)) * np.log2(G),
               lambda G, s: 0.6 - (0.01 + _spread(s, 0.001)) * np.log2(G),
               coverage=lambda G, s: 0.3 + (0.05 + _spread(s, 0.005)) * np.log2(G),
               solved=lambda G, s: 200 + s)
    out = design_b.verdicts(_folder(tmp_path, doc))
    assert out["precondition"]["holds"]
    assert out["hard_slope"]["verdict"] == "rises"
    assert out["hard_slope"]["slope_per_doubling"] == pytest.approx(0.02)
    assert out["easy_slope"]["verdict"] == "supported"
    assert out["interaction"]["verdict"] == "supported"
    assert out["interaction"]["mean"] == pytest.approx(0.03)
    assert out["interaction"]["declared_mde"] == 0.0094 and out["interaction"]["mde"] > 0
    assert out["coverage"]["verdict"] == "supported"
    assert out["mechanism"]["mean_by_G"] == {2: 201.5, 8: 201.5, 32: 201.5}
    assert "verdict" in out["mechanism"] and out["mechanism"]["verdict"].startswith("reported")
    assert out["verdict"] == "supported"


def test_planted_refutation_is_refuted(tmp_path):
    """The refuting outcome: the 4-digit slope's interval lies below 0 (learning happened)."""
    doc = _doc(lambda G, s: 0.20 - (0.02 + _spread(s, 0.002)) * np.log2(G),
               lambda G, s: 0.6 + _spread(s, 0.001) * np.log2(G),
               coverage=lambda G, s: 0.5 - (0.05 + _spread(s, 0.005)) * np.log2(G))
    out = design_b.verdicts(_folder(tmp_path, doc))
    assert out["precondition"]["holds"]
    assert out["hard_slope"]["verdict"] == "falls" and out["hard_slope"]["high"] < 0
    assert out["interaction"]["verdict"] == "refuted"
    assert out["coverage"]["verdict"] == "contradicted"
    assert out["mechanism"]["verdict"] == "not measured"
    assert out["verdict"] == "refuted"


def test_planted_no_learning_overrides_the_slopes(tmp_path):
    """No arm raises 4-digit pass@1 above the warm start: "no learning", even though the
    slopes alone would refute."""
    doc = _doc(lambda G, s: 0.08 - (0.01 + _spread(s, 0.001)) * np.log2(G),
               lambda G, s: 0.6 + _spread(s, 0.001) * np.log2(G), hard0=0.2)
    out = design_b.verdicts(_folder(tmp_path, doc))
    assert not out["precondition"]["holds"]
    assert out["hard_slope"]["verdict"] == "falls"
    assert out["verdict"] == "no learning"


def test_planted_flat_slopes_are_equivalent_not_supported(tmp_path):
    doc = _doc(lambda G, s: 0.1 + _spread(s, 0.0005) * np.log2(G),
               lambda G, s: 0.6 - _spread(s, 0.0005) * np.log2(G), hard0=0.01)
    out = design_b.verdicts(_folder(tmp_path, doc))
    assert out["hard_slope"]["verdict"] == "equivalent"
    assert out["easy_slope"]["verdict"] == "supported"  # "<= 0": equivalent to 0 counts
    assert out["interaction"]["verdict"] == "equivalent"
    assert out["verdict"] == "inconclusive"


def test_easy_slope_above_zero_contradicts_its_prediction():
    trend = {"low": 0.01, "high": 0.03, "tost": {"verdict": "not equivalent"}}
    assert design_b.slope_verdict(trend) == "rises"
    assert design_b.easy_slope_verdict(trend) == "contradicted"


def test_verdicts_refuse_a_damaged_levels_file(tmp_path):
    from grpolab.grpo.records import CorruptFileError

    doc = _doc(lambda G, s: 0.1, lambda G, s: 0.5)
    doc["runs"][0]["checkpoints"][1]["by_level"]["4"]["pass_at_k"]["1"] = 1.5
    with pytest.raises(CorruptFileError, match="by_level"):
        design_b.verdicts(_folder(tmp_path, doc))


def test_verdicts_say_not_run_when_runs_are_missing(tmp_path):
    doc = _doc(lambda G, s: 0.1, lambda G, s: 0.5)
    doc["runs"] = [r for r in doc["runs"] if r["G"] == 2]
    out = design_b.verdicts(_folder(tmp_path, doc))
    assert out["verdict"] == "not run" and "two G" in out["why"]


# ----------------------------------------------------------------------------- from run logs
def test_level_results_read_pass_at_k_and_solved_prompts_from_a_log(tmp_path):
    """One planted finished run: pass@k per level from the logged per-prompt successes,
    and the distinct training prompts solved so far per level."""
    from grpolab.grpo.config import apply_overrides, training_prompts
    from grpolab.labs.sweep.presets import get_preset
    from grpolab.tasks.registry import get_task

    base = get_preset("design-b")
    preset = replace(base, group_sizes=[2], seeds=[0],
                     config=apply_overrides(base.config, steps=16))
    cfg = preset.run_config(preset.regimes[0], 2, 0)
    train, evals = training_prompts(cfg, get_task(cfg.task, **cfg.task_kwargs))
    lvl = np.array([p.difficulty for p in evals])
    succ0 = np.where(lvl == 4, 0, 32)
    succ1 = np.where(lvl == 4, 1, 64)
    four = [i for i, p in enumerate(train) if p.difficulty == 4][:3]
    three = [i for i, p in enumerate(train) if p.difficulty == 3][:2]
    ev = {"eval_greedy_accuracy": 0.5, "eval_sampled_accuracy": 0.5,
          "eval_greedy_accuracy_by_difficulty": {}, "eval_sampled_accuracy_by_difficulty": {}}
    rows = [{"step": 0, "completions": 0, **ev, "eval_sampled_successes": succ0.tolist()}]
    for step in range(1, 17):
        rows.append({"step": step, "completions": 256 * step,
                     "solved_prompts": [four[step % 3], three[step % 2]]})
    rows[-1].update(ev, eval_sampled_successes=succ1.tolist())
    folder = tmp_path / "runs" / preset.regimes[0].name / "G2-seed0"
    folder.mkdir(parents=True)
    (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "summary.json").write_text(json.dumps({"config": cfg.to_dict(), "steps": 16}))
    doc = design_b.level_results(str(tmp_path), preset)
    (run,) = doc["runs"]
    first, last = run["checkpoints"]
    assert first["by_level"]["3"]["pass_at_k"]["1"] == 0.5
    assert first["by_level"]["4"]["pass_at_k"]["64"] == 0.0
    assert last["by_level"]["4"]["pass_at_k"]["1"] == pytest.approx(1 / 64)
    assert last["by_level"]["4"]["pass_at_k"]["64"] == 1.0
    assert last["by_level"]["4"]["prompts"] == int((lvl == 4).sum())
    assert run["solved"][-1]["by_level"] == {"3": 2, "4": 3}
    assert run["solved"][-1]["step"] == 16
    from grpolab.results import read_results

    path = tmp_path / "by_level.json"
    path.write_text(json.dumps(doc))
    assert read_results(path)["runs"][0]["G"] == 2


# ----------------------------------------------------------------------------- committed files
def test_committed_verdicts_are_reproduced():
    """The committed verdicts.json is what the module computes from the committed
    by_level.json and declaration (skipped until the design has run)."""
    path = RESULTS / "verdicts.json"
    if not path.is_file():
        pytest.skip("design B has not been run yet")
    stored = json.loads(path.read_text())
    got = json.loads(json.dumps(design_b.verdicts(str(RESULTS))))
    stored.pop("made_by")
    assert got == stored


def test_committed_prediction_names_a_g_star_or_the_fits_refusal_per_level():
    path = RESULTS / "prediction.json"
    if not path.is_file():
        pytest.skip("design B's noise has not been measured yet")
    pred = json.loads(path.read_text())
    for lvl in ("3", "4"):
        e = pred["levels"][lvl]
        assert e["G"] == list(GS) and all(b == 64 for b in e["batches"])
        assert (e["g_star"] is not None and e["g_star"] > 2) or e.get("error")


# ----------------------------------------------------------------------------- the prediction
def _noise_rows(c1, c2, c3, signal=0.01, n=64, d=300, seed=0):
    """Gradient-noise rows at 256 completions per step, G in 2 8 32, each with the Gram
    matrix of n gradients drawn with the exact model's trace variance."""
    from grpolab.grpo.measure import noise_from_gram

    rng = np.random.default_rng(seed)
    rows = []
    for G in GS:
        B = 256 // G
        tv = c1 / B + c2 / (B * G) + c3 / (B * G * (G - 1))
        mu = np.zeros(d)
        mu[0] = np.sqrt(signal)
        X = mu + np.sqrt(tv / d) * rng.standard_normal((n, d))
        K = X @ X.T
        st = noise_from_gram(K)
        rows.append({"G": G, "prompts_per_step": B, "batches": n, "gram": K.tolist(),
                     "trace_variance": st["trace_variance"],
                     "mean_gradient_norm_sq": st["mean_gradient_norm_sq"],
                     "advantage_baseline": "leave_one_out"})
    return rows


def test_unbounded_bootstrap_planted_both_ways():
    """Noise that falls with G at every G (c1 = 0) gives mostly unbounded draws; noise with
    a finite optimum (G* = 1 + sqrt(c3/c1) = 3.3) gives none, and an interval around it."""
    flat = design_b.unbounded_bootstrap(_noise_rows(0.0, 0.1, 1.0), advantage_baseline=
                                        "leave_one_out", n_boot=100)
    assert flat["unbounded_share"] > 0.5 and flat["high"] is None
    finite = design_b.unbounded_bootstrap(_noise_rows(9.8, 14.4, 52.2), advantage_baseline=
                                          "leave_one_out", n_boot=100)
    assert finite["unbounded_share"] == 0
    assert finite["low"] < 1 + np.sqrt(52.2 / 9.8) < finite["high"] < 5
