"""Issue 31 (F4): every G effect a sweep prints names the compute it holds fixed, and a
fixed-prompts regime is compared at matched completions. Planted logs, no training."""

from __future__ import annotations

import re

import numpy as np

from grpolab.labs.sweep.report import g_effects, matched_completions

GS, SEEDS, B, STEPS = (2, 4, 8, 16, 32), (0, 1, 2), 4, 100


def _planted(cost_per_doubling: float):
    """pass@1 grows with completions spent and loses ``cost_per_doubling`` per doubling of G
    at equal completions. A fixed-prompts regime (B prompts per step, evals every 25 steps)
    and a fixed-budget one (64 completions per step)."""
    rng = np.random.default_rng(0)

    def acc(c, G):
        return 0.3 + 0.03 * np.log1p(c / 400) - cost_per_doubling * np.log2(G) \
            + 0.001 * rng.normal()

    runs, rows = [], []
    for G in GS:
        for s in SEEDS:
            evals = [(t, B * G * t) for t in (0, 25, 50, 75, 100)]
            for t, c in evals:
                rows.append({"regime": "fixed-prompts", "G": G, "seed": s, "step": t,
                             "completions": c, "eval_sampled_accuracy": acc(c, G)})
            runs.append({"regime": "fixed-prompts", "G": G, "seed": s, "steps": STEPS,
                         "prompts_per_step": B, "completions": B * G * STEPS,
                         "final_sampled_accuracy": rows[-1]["eval_sampled_accuracy"]})
            runs.append({"regime": "budget", "G": G, "seed": s, "steps": STEPS,
                         "prompts_per_step": 64 // G, "completions": 64 * STEPS,
                         "final_sampled_accuracy": acc(64 * STEPS, G)})
    summary = {"runs": runs, "regimes": {"budget": {"mode": "budget"},
                                         "fixed-prompts": {"mode": "prompts"}}}
    return summary, rows


def _slope(line: str) -> float:
    return float(re.search(r"([+-]\d\.\d{4}) per doubling", line).group(1))


def test_a_fixed_prompts_regime_is_compared_at_matched_completions():
    summary, rows = _planted(0.01)
    # 800: G = 2, 4, 8 at steps 100, 50, 25; 1,600: G = 4, 8, 16; 3,200: G = 8, 16, 32
    assert matched_completions(rows, "fixed-prompts") == [800.0, 1600.0, 3200.0]
    lines = g_effects(summary, rows)
    budget = [x for x in lines if x.startswith("[budget]")]
    assert len(budget) == 1 and "at a fixed budget of 64 completions per step" in budget[0]
    assert _slope(budget[0]) < 0
    steps = [x for x in lines if "more samples per step" in x]
    assert len(steps) == 1 and steps[0].startswith("[fixed-prompts] NOT a G effect")
    assert _slope(steps[0]) > 0 and "16x the completions" in steps[0]  # more compute wins
    matched = [x for x in lines if "at matched completions" in x]
    assert any("(1,600), G = 4 8 16" in x for x in matched)
    assert any("(3,200), G = 8 16 32" in x for x in matched)
    for x in matched:  # the planted cost per doubling, recovered at equal compute
        assert abs(_slope(x) + 0.01) < 0.004 and "a trend in G" in x
    # every line that reports a G effect names the compute it holds fixed, on that line
    for x in lines:
        assert "fixed budget" in x or "matched completions" in x or "equal steps" in x


def test_matched_compute_finds_no_effect_where_none_is_planted():
    summary, rows = _planted(0.0)
    matched = [x for x in g_effects(summary, rows) if "at matched completions" in x]
    assert matched and all(abs(_slope(x)) < 0.004 for x in matched)
