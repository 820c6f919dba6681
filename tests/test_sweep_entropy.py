"""grpolab.labs.sweep.entropy: the entropy chapter's declared test, with planted trends."""

from __future__ import annotations

import numpy as np
import pytest

from grpolab.labs import lab_results
from grpolab.labs.sweep.entropy import entropy_by_run, entropy_change, entropy_test, per_seed_trend


class FakeLab:
    """A results folder in memory: what entropy_test reads through LabResults."""

    def __init__(self, steps, runs=None, name="fake"):
        self._steps, self._runs, self.name = steps, runs, name

    def steps(self):
        return self._steps

    def has(self, name):
        return name == "summary.json" and self._runs is not None

    def summary(self):
        return {"runs": self._runs}


def planted(slope_per_doubling: float, noise: float = 0.002, seeds=(0, 1, 2), Gs=(2, 4, 8, 16)):
    """steps.csv rows whose entropy falls by -0.3 + slope·log2 G over 10 steps (+ noise)."""
    rng = np.random.default_rng(0)
    rows = []
    for regime in ("mixed", "hard"):
        for G in Gs:
            for s in seeds:
                change = -0.3 + slope_per_doubling * np.log2(G) + noise * rng.standard_normal()
                for step in range(1, 11):
                    e = 1.0 + change * (step - 1) / 9
                    rows.append({"regime": regime, "G": str(G), "seed": str(s), "step": str(step),
                                 "entropy": repr(float(e))})
    rows.append({"regime": "mixed", "G": "2", "seed": "0", "step": "11", "entropy": ""})
    return rows


def test_entropy_change_is_last_five_minus_first():
    pts = [(1, 1.0), (2, 0.9), (3, 0.8), (4, 0.7), (5, 0.6), (6, 0.5)]
    assert entropy_change(pts[::-1]) == pytest.approx(np.mean([0.9, 0.8, 0.7, 0.6, 0.5]) - 1.0)


def test_runs_skip_steps_without_entropy():
    runs = entropy_by_run(planted(0.0))
    assert len(runs[("mixed", 2, 0)]) == 10 and len(runs) == 2 * 4 * 3


def test_per_seed_trend_recovers_a_planted_slope():
    slopes = {0: 0.04, 1: 0.05, 2: 0.06}
    values = {(G, s): slopes[s] * np.log2(G) + 0.1 * s for G in (2, 4, 8) for s in range(3)}
    n, mean, low, high, p = per_seed_trend(values)
    assert n == 3 and mean == pytest.approx(0.05)
    # t interval over the three slopes: mean ± t_2 · sd/√3, sd = 0.01
    assert high - mean == pytest.approx(4.302653 * 0.01 / np.sqrt(3), rel=1e-5)
    assert low > 0 and p < 0.05
    flat = {(G, s): 0.0 for G in (2, 4, 8) for s in range(3)}
    assert per_seed_trend(flat)[4] == 1.0  # no slope and no spread: no trend, not a NaN


def test_runs_with_no_change_at_all_are_no_trend():
    """Planted: every run's entropy exactly flat. (The chapter's first version gave p = 0
    here, and so the verdict "faster collapse at larger G".)"""
    steps = [{**r, "entropy": "1.0"} for r in planted(0.0) if r["entropy"]]
    _, results = entropy_test(FakeLab(steps))
    assert [r["verdict"] for r in results] == ["no detectable trend"] * 2


@pytest.mark.parametrize("slope, verdict", [
    (0.05, "slower collapse at larger G"),
    (-0.05, "faster collapse at larger G"),
    (0.0, "no detectable trend"),
])
def test_the_verdict_turns_with_the_planted_trend(slope, verdict):
    _, results = entropy_test(FakeLab(planted(slope, noise=0.01)))
    assert [r["regime"] for r in results] == ["hard", "mixed"]
    for r in results:
        assert r["verdict"] == verdict, r
        assert r["p_holm"] >= r["p"] and r["points"] == 10 and r["seeds"] == 3
        assert r["kl"] is None  # no summary: no KL trend


def test_kl_trend_is_reported_beside_when_every_run_has_one():
    steps = planted(0.0, noise=0.01)
    runs = [{"regime": reg, "G": G, "seed": s, "final_kl_to_warm_start": 0.1 * np.log2(G)}
            for reg in ("mixed", "hard") for G in (2, 4, 8, 16) for s in (0, 1, 2)]
    _, results = entropy_test(FakeLab(steps, runs))
    assert all(r["kl"][1] == pytest.approx(0.1) for r in results)
    _, partial = entropy_test(FakeLab(steps, runs[:-1]))
    assert [r["kl"] is None for r in partial] == [True, False]  # hard lost one run's KL


def test_committed_runs_give_one_row_per_regime():
    lab = lab_results.load("cpu-compute")
    runs, results = entropy_test(lab)
    assert {r["regime"] for r in results} == {r for r, _, _ in runs}
    assert all(r["folder"] == "cpu-compute" and 0 <= r["p_holm"] <= 1 for r in results)
