"""Issue 31 (F1): the committed compute axis's G* is fitted in leave-one-out units. An
independent refit here (its own NNLS, not grpolab.advise) must agree with the stored one."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import optimize

from grpolab._paths import checkout_root

RESULTS = checkout_root() / "labs" / "results" / "cpu-compute"


def _independent_loo_g_star(rows: list[dict]) -> float:
    """Convert mean-baseline rows by (G/(G-1))², debias the signal, pool it by inverse
    squared noise floor, and fit c1/B + c2/(BG) + c3/(BG(G-1)) with c3 = c1 + signal + d."""
    G = np.array([r["G"] for r in rows], float)
    B = np.array([r["prompts_per_step"] for r in rows], float)
    n = np.array([r["batches"] for r in rows], float)
    u = (G / (G - 1)) ** 2
    tv = u * np.array([r["trace_variance"] for r in rows])
    sig = u * np.array([r["mean_gradient_norm_sq"] for r in rows]) - tv / n
    w = (n / tv) ** 2
    s = max(float(np.sum(w * sig) / np.sum(w)), 0.0)
    last = 1 / (B * G * (G - 1))
    X = np.column_stack([1 / B + last, 1 / (B * G), last]) / tv[:, None]
    (c1, _, d), _ = optimize.nnls(X, 1 - s * last / tv)
    return 1 + math.sqrt((c1 + s + d) / c1)


def test_the_committed_g_star_agrees_with_an_independent_leave_one_out_refit():
    sweep = json.loads((RESULTS / "sweep.json").read_text(encoding="utf-8"))
    assert sweep["preset"]["config"]["advantage_baseline"] == "mean"
    noise = json.loads((RESULTS / "gradient_noise.json").read_text(encoding="utf-8"))
    axis = json.loads((RESULTS / "compute_axis.json").read_text(encoding="utf-8"))
    for regime, rows in noise.items():
        stored = axis["regimes"][regime]["g_star"]
        assert stored["units"] == "leave-one-out"
        assert stored["g_star"] == pytest.approx(_independent_loo_g_star(rows), rel=1e-6)
        assert stored["g_star"] > 2.5  # not the artefact of the mixed-units fit (2.00)


def test_reaggregate_refuses_a_folder_without_results_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "grpolab.labs.sweep.compute_axis",
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "usage" in out.stderr


def test_movement_separates_a_coverage_trend_that_is_only_moving_less():
    """Planted: Δpass@64 = −KL exactly (plus noise), and KL falls with G. The raw coverage
    trend rises with G; adjusted for KL the G coefficient is 0 within its interval. A second
    plant with a real G effect at equal KL keeps it."""
    from grpolab.labs.sweep.compute_axis import coverage_trend, movement

    rng = np.random.default_rng(0)
    Gs, seeds = (2, 4, 8, 16, 32), range(5)

    def plant(g_effect):
        kl = {G: {s: 0.4 - 0.06 * np.log2(G) + 0.03 * rng.normal() for s in seeds} for G in Gs}
        curves = {str(G): {str(s): [{"pass_at_k": {"64": 0.9}},
                                    {"pass_at_k": {"64": 0.9 - kl[G][s] + g_effect * np.log2(G)
                                                   + 0.002 * rng.normal()}}]
                           for s in seeds} for G in Gs}
        return curves, kl

    curves, kl = plant(0.0)
    raw = coverage_trend(curves, 64, "at a fixed budget")
    assert raw["trend"]["low"] > 0  # looks like a G effect on coverage
    adj = movement(curves, kl, 64, "at a fixed budget")["adjusted"]
    assert adj["low"] < 0 < adj["high"]
    assert movement(curves, kl, 64, "")["kl_trend"]["trend"]["high"] < 0
    curves, kl = plant(0.02)
    adj = movement(curves, kl, 64, "")["adjusted"]
    assert adj["low"] > 0 and adj["slope_per_doubling"] == pytest.approx(0.02, abs=0.005)


def test_bins_from_the_other_seeds_remove_the_regression_to_the_mean():
    """F9, planted with no training at all: every evaluation of every run draws fresh
    binomial successes from the same pass rates. Bins from a run's own warm-start samples
    show a rise on the "never solved" bin (selection on noise); bins from the other seeds'
    samples show none beyond noise."""
    from grpolab.labs.sweep.compute_axis import bins_by_seed, difficulty_bins

    rng = np.random.default_rng(0)
    n, P, seeds, Gs = 8, 400, range(5), (2, 8)
    p = rng.beta(0.5, 4, P)  # many prompts near 0
    first = {}
    for s in seeds:
        draw = rng.binomial(n, p)
        for G in Gs:
            first[(G, s)] = draw  # one seed's runs share their evaluation samples
    last = {k: rng.binomial(n, p) for k in first}  # a later evaluation, no training

    def change_in_never_solved(bins_of):
        d = [(last[k][bins_of(k) == 0] - first[k][bins_of(k) == 0]).mean() / n for k in first]
        return float(np.mean(d))

    own = change_in_never_solved(lambda k: difficulty_bins(first[k] / n))
    disjoint_bins = bins_by_seed(first, n)
    disjoint = change_in_never_solved(lambda k: disjoint_bins[k[1]])
    assert own > 0.01  # the selection artefact
    assert abs(disjoint) < own / 3
