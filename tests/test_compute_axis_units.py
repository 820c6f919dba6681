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
