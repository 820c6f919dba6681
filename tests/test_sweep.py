"""The G sweep: summaries, plots, resume after a kill, CLI errors."""

import json
import os
from dataclasses import replace

import numpy as np
import pytest
import torch

import grpolab.grpo.backends
from conftest import TINY_TASK, tiny_warm_start, with_warm_start
from grpolab.cli.main import main as cli_main
from grpolab.grpo.config import apply_overrides
from grpolab.labs.sweep.presets import Regime, get_preset
from grpolab.labs.sweep.sweep import regime_verdicts, run_sweep


def tiny_preset():
    return get_preset(
        "cpu-quick", group_sizes=[2, 4], seeds=[0, 1], steps=3, eval_every=2,
        task_kwargs=TINY_TASK, warmstart=tiny_warm_start(),
        regimes=[Regime("mixed", [1, 2], budget=8)], max_train_prompts=40, noise_batches=3,
        eval_samples=2)


@pytest.mark.slow
def test_killed_sweep_resumes_without_redoing_finished_runs(tmp_path, monkeypatch, tiny_cache):
    with_warm_start(tmp_path, tiny_cache)
    torch.set_num_threads(1)
    preset = tiny_preset()
    real_run, calls = grpolab.grpo.backends.train, []

    def killed_after_two(*args, **kwargs):  # Ctrl-C in the middle of the third run
        calls.append(args[1])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_run(*args, **kwargs)

    monkeypatch.setattr(grpolab.grpo.backends, "train", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(preset, tmp_path, progress=False, plots=False, log=lambda *_: None)
    done = calls[:2]
    stamps = {p: os.stat(os.path.join(p, "summary.json")).st_mtime_ns for p in done}
    before = {p: json.load(open(os.path.join(p, "summary.json"))) for p in done}

    monkeypatch.setattr(grpolab.grpo.backends, "train", real_run)
    resumed = []
    monkeypatch.setattr(grpolab.grpo.backends, "train",
                        lambda *a, **k: resumed.append(a[1]) or real_run(*a, **k))
    summary = run_sweep(preset, tmp_path, progress=False, plots=True, log=lambda *_: None)
    assert sorted(resumed) == sorted(set(calls[2:]) | {
        os.path.join(tmp_path, "runs", "mixed", "G4-seed1")})
    for p in done:  # finished runs untouched
        assert os.stat(os.path.join(p, "summary.json")).st_mtime_ns == stamps[p]
        assert json.load(open(os.path.join(p, "summary.json"))) == before[p]
    assert summary["runs_finished"] == summary["runs_planned"] == 4
    for key in ("G", "seed", "initial_accuracy", "final_accuracy", "zero_variance_observed",
                "zero_variance_predicted", "completions", "seconds"):
        assert all(key in r for r in summary["runs"])
    assert summary["zero_variance_mean_abs_gap"] is not None
    meta = json.load(open(tmp_path / "sweep.json"))
    for key in ("preset", "grpolab_version", "git_commit", "device"):
        assert key in meta
    for name in ("accuracy", "zero_variance", "gradient_noise"):
        for ext in ("png", "svg"):
            assert (tmp_path / "plots" / f"{name}.{ext}").stat().st_size > 1000
    header = (tmp_path / "curves.csv").read_text().splitlines()[0].split(",")
    assert {"regime", "G", "seed", "step", "completions", "eval_greedy_accuracy"} <= set(header)

    # the same seed and config give the same numbers
    again = tmp_path / "again"
    one = replace(tiny_preset(), group_sizes=[2], seeds=[0])
    run_sweep(one, with_warm_start(again, tiny_cache), progress=False, plots=False,
              log=lambda *_: None)
    a = json.load(open(tmp_path / "runs" / "mixed" / "G2-seed0" / "summary.json"))
    b = json.load(open(again / "runs" / "mixed" / "G2-seed0" / "summary.json"))
    for key in ("final_accuracy", "zero_variance_observed", "zero_variance_predicted"):
        assert a[key] == b[key], key


def test_regime_verdicts_use_the_declared_test():
    runs = [{"regime": "mixed", "G": G, "seed": s, "final_sampled_accuracy": 0.4 + 0.01 * s,
             "final_accuracy": 0.5} for G in (2, 4, 8) for s in range(3)]
    v = regime_verdicts(runs, "mixed")
    assert v["verdict"]["metric"] == "final_sampled_accuracy"  # the primary metric
    assert v["verdict"]["trend"]["slope_per_doubling"] == pytest.approx(0.0, abs=1e-12)
    assert "no detectable trend" in v["verdict"]["statement"]
    assert regime_verdicts(runs, "hard") == {}


def test_cli_plot_without_results_is_a_clear_error(tmp_path, capsys):
    assert cli_main(["lab", "plot", "--out", str(tmp_path)]) == 2
    assert "run 'grpolab lab sweep' first" in capsys.readouterr().err


def test_presets_listed(capsys):
    assert cli_main(["lab", "presets"]) == 0
    out = capsys.readouterr().out
    assert "cpu-quick" in out and "cpu-full" in out and "gpu" in out


@pytest.mark.slow
def test_rerun_with_another_config_refuses_to_mix_results(tmp_path, tiny_cache):
    with_warm_start(tmp_path, tiny_cache)
    preset = replace(tiny_preset(), group_sizes=[2], seeds=[0], noise_batches=0)
    run_sweep(preset, tmp_path, progress=False, plots=False, log=lambda *_: None)
    with pytest.raises(ValueError, match="another config"):
        other = replace(preset, config=apply_overrides(preset.config, learning_rate=1e-3))
        run_sweep(other, tmp_path, progress=False, plots=False, log=lambda *_: None)


def test_noise_g_star_recovers_planted_constants():
    from grpolab import theory
    from grpolab.labs.sweep.compute_axis import noise_g_star

    c1, c2, c3, signal = 0.5, 2.0, 24.5, 1.0  # the exact model's G* = 1 + sqrt(49) = 8
    rows = []
    for G in (2, 4, 8, 16):
        tv = float(theory.minibatch_gradient_mse(64 // G, G, c1, c2, c3))
        rows.append({"G": G, "prompts_per_step": 64 // G, "batches": 12, "trace_variance": tv,
                     "mean_gradient_norm_sq": signal + tv / 12,
                     "noise_to_signal": tv / (signal + tv / 12)})
    out = noise_g_star(rows, advantage_baseline="leave_one_out")
    assert out["g_star"] == pytest.approx(8.0, rel=1e-6)
    assert out["range"] is None  # no Gram matrices, no bootstrap
    # with Gram matrices the bootstrap gives a range around the point estimate
    rng = np.random.default_rng(0)
    for r in rows:
        g = rng.normal(size=(12, 50)) * np.sqrt(r["trace_variance"] / 50) + 1.0 / np.sqrt(50)
        r["gram"] = (g @ g.T).tolist()
    out = noise_g_star(rows, advantage_baseline="leave_one_out", n_boot=200)
    lo, hi = out["range"]
    assert lo <= hi and out["bootstrap_draws"] > 100


def test_a_bootstrap_draw_never_pairs_a_batch_with_itself():
    """noise_from_gram with a resample's counts estimates the signal from pairs of two
    different batches (the draw's debiased signal is centred on the sample's), where
    resampling the Gram matrix's rows and columns pairs a twice-drawn batch with itself and
    inflates it by about trace variance / n (the bias the compute axis's G* range had)."""
    from grpolab.grpo.measure import noise_from_gram

    rng = np.random.default_rng(0)
    g = rng.normal(size=(10, 5)) + 1.0
    K = g @ g.T
    n = K.shape[0]

    def debiased(st):
        return st["mean_gradient_norm_sq"] - st["trace_variance"] / n

    whole = noise_from_gram(K)
    same = noise_from_gram(K, np.ones(n))  # every count 1: the plain formulas
    assert same["trace_variance"] == pytest.approx(whole["trace_variance"], rel=1e-12)
    assert same["mean_gradient_norm_sq"] == pytest.approx(whole["mean_gradient_norm_sq"],
                                                          rel=1e-12)
    counts = np.array([2, 0, 1, 1, 3, 0, 1, 0, 1, 1])  # distinct pairs only, by hand
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j
             for _ in range(counts[i] * counts[j])]
    by_hand = np.mean([K[i, j] for i, j in pairs])
    assert debiased(noise_from_gram(K, counts)) == pytest.approx(by_hand, rel=1e-12)
    new, old = [], []
    for _ in range(2000):
        idx = rng.integers(0, n, n)
        new.append(debiased(noise_from_gram(K, np.bincount(idx, minlength=n))))
        old.append(debiased(noise_from_gram(K[np.ix_(idx, idx)])))
    tv_over_n = whole["trace_variance"] / n
    assert abs(np.mean(new) - debiased(whole)) < 0.25 * tv_over_n
    assert np.mean(old) - debiased(whole) > 0.5 * tv_over_n  # the planted bias is caught


@pytest.mark.slow
def test_a_compute_axis_sweep_gives_pass_at_k_the_crossing_and_g_star(tmp_path, tiny_cache):
    """A seconds-long sweep with the compute-axis settings: an evaluation schedule, a regime
    with its own warm start, per-prompt successes in every evaluation row, and
    compute_axis.json with pass@k, the crossing test, best G per checkpoint and G*."""
    from grpolab.labs.sweep.compute_axis import compute_axis

    preset = get_preset(
        "cpu-compute", group_sizes=[2, 4, 8], seeds=[0, 1], steps=6, task_kwargs=TINY_TASK,
        warmstart=tiny_warm_start(), max_train_prompts=40, max_eval_prompts=6,
        eval_at=[16, 32, 64, 128], eval_samples=4, census_samples=8, noise_batches=3,
        regimes=[Regime("mixed", [1, 2], budget=16),
                 Regime("weaker", [1, 2], budget=16, overrides={"warmstart": {"steps": 12}})])
    with_warm_start(tmp_path, tiny_cache)
    run_sweep(preset, tmp_path, progress=False, plots=False, log=lambda *_: None)
    log = [json.loads(x) for x in open(tmp_path / "runs" / "mixed" / "G4-seed0" / "log.jsonl")]
    evals = [r for r in log if "eval_sampled_successes" in r]
    assert [r["completions"] for r in evals] == [0, 16, 32, 64, 96]  # schedule, then the end
    assert all(len(r["eval_sampled_successes"]) == 6 and max(r["eval_sampled_successes"]) <= 4
               for r in evals)
    weak = json.load(open(tmp_path / "runs" / "weaker" / "G2-seed0" / "summary.json"))
    strong = json.load(open(tmp_path / "runs" / "mixed" / "G2-seed0" / "summary.json"))
    assert weak["warmstart_key"] != strong["warmstart_key"]  # each regime its own start
    assert (tmp_path / "census-d1-2.npy").is_file()
    assert (tmp_path / "census-d1-2-warm12.npy").is_file()
    axis = json.load(open(tmp_path / "compute_axis.json"))
    reg = axis["regimes"]["mixed"]
    assert reg["checkpoints"] == [0, 16, 32, 64, 96]
    row = reg["curves"]["4"]["0"][-1]
    assert set(row["pass_at_k"]) == {"1", "2", "4"}  # k up to eval_samples
    assert row["pass_at_k"]["1"] <= row["pass_at_k"]["2"] <= row["pass_at_k"]["4"]
    assert reg["crossing"]["verdict"] in ("supported", "contradicted", "inconclusive",
                                         "not reached")
    assert "holds" in reg["crossing"]["precondition"]
    assert set(reg["best_G"]) == {"16", "32", "64", "96"}
    assert "g_star" in reg and "verdict" in reg["g_star"] or "error" in reg["g_star"]
    again = compute_axis(str(tmp_path), preset, write=False)  # deterministic from the logs
    assert again["regimes"]["mixed"]["crossing"] == reg["crossing"]
    # re-aggregating from the written files (no run logs) gives the same statistics
    from grpolab.labs.sweep.compute_axis import reaggregate

    re = reaggregate(str(tmp_path), write=False)["regimes"]["mixed"]
    assert re["crossing"] == reg["crossing"] and re["best_G"] == reg["best_G"]
    assert re["final_trend"]["trend"] == reg["final_trend"]["trend"]
    assert re["coverage_trend"] == reg["coverage_trend"]
    if "c1" in reg["g_star"]:
        assert re["g_star"]["g_star"] == pytest.approx(reg["g_star"]["g_star"])


def test_toy_g_star_of_measured_successes_is_the_toy_models_own():
    """The compute axis's toy G* column is toy.predicted_optimal_group_size on the measured
    successes (a planted mix of easy and hard prompts), not a missing value."""
    from grpolab import toy
    from grpolab.labs.sweep.compute_axis import _toy_g_star

    successes = np.array([1, 0, 14, 14, 22, 0, 2, 40, 60, 3])
    g = _toy_g_star(successes, 64)
    expected = toy.predicted_optimal_group_size(toy.empirical_dataset(successes, 64),
                                                toy.ToyConfig())["G_star"]
    assert g is not None and g == pytest.approx(expected) and g >= 1
