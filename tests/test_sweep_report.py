"""grpolab.labs.sweep.report.early_zero_variance and stats.wilson_interval: the first-steps
check of p^G + (1 − p)^G, with planted misses."""

from __future__ import annotations

import pytest

from grpolab.labs import lab_results
from grpolab.labs.stats import wilson_interval
from grpolab.labs.sweep.report import early_zero_variance


def test_wilson_interval_known_values_and_bounds():
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # textbook value
    lo, hi = wilson_interval(0, 20)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0 < hi < 0.17
    lo, hi = wilson_interval(20, 20)
    assert hi == pytest.approx(1.0) and lo > 0.83
    for bad in ((3, 0), (-1, 5), (6, 5)):
        with pytest.raises(ValueError):
            wilson_interval(*bad)


def sweep(observed: float, predicted: float = 0.5):
    """A one-regime budget sweep (64 completions per step, G = 2 and 4) whose first ten
    logged steps all observed ``observed`` zero-variance groups."""
    summary = {"regimes": {"mixed": {"zero_variance_at_warm_start_theory":
                                     {"2": predicted, "4": predicted}}}}
    preset = {"group_sizes": [2, 4], "regimes": [{"name": "mixed", "mode": "budget",
                                                  "budget": 64}]}
    steps = [{"regime": "mixed", "G": str(G), "seed": str(s), "step": str(t),
              "zero_variance_observed": str(observed)}
             for G in (2, 4) for s in (0, 1) for t in (1, 6, 11)]
    return summary, preset, steps


def test_a_matching_fraction_lies_inside():
    result = early_zero_variance(*sweep(0.5))
    assert result["cells"] == 2 and result["inside"] == 2
    name, G, n, observed, predicted, ok = result["rows"][0]
    assert (name, G, n, ok) == ("mixed", 2, 32 * 4, "yes")  # steps 1 and 6, two seeds
    assert observed.startswith("0.500 [") and predicted == "0.500"


def test_a_planted_miss_is_outside():
    result = early_zero_variance(*sweep(0.8))
    assert result["inside"] == 0 and [r[-1] for r in result["rows"]] == ["no", "no"]


def test_fixed_prompts_regime_counts_its_prompts_per_step():
    summary, preset, steps = sweep(0.5)
    preset["regimes"][0] = {"name": "mixed", "mode": "prompts", "prompts_per_step": 4}
    result = early_zero_variance(summary, preset, steps)
    assert [r[2] for r in result["rows"]] == [16, 16]


def test_committed_sweep():
    lab = lab_results.load("cpu-full")
    result = early_zero_variance(lab.summary(), lab.preset(), lab.steps())
    assert result["cells"] == len(lab.preset()["regimes"]) * len(lab.preset()["group_sizes"])
    assert 0 <= result["inside"] <= result["cells"]


def _gstar(can_fail: bool, notes=(), verdict="agrees"):
    return {"g_star": 2.78, "range": [2.0, 3.4], "max_rel_residual": 0.12,
            "notes": list(notes),
            "verdict": {"predicted_G": 2, "best": {"best": 4}, "verdict": verdict,
                        "why": "within the margin",
                        "regret_bootstrap": {"mean": 0.001, "low": 0.0, "high": 0.004},
                        "power": {"mde": 0.012, "a_prediction_can_fail": can_fail}}}


def test_gstar_report_rows_and_words():
    from grpolab.labs.sweep.report import gstar_report

    axis = {"regimes": {"mixed": {"g_star": _gstar(True)}, "hard": {"g_star": _gstar(True)}}}
    out = gstar_report(axis)
    assert [r[0] for r in out["rows"]] == ["mixed", "hard"]
    assert out["rows"][0][1:4] == ["2.78", "[2.00, 3.40]", "12%"]
    assert out["rows"][0][-2:] == ["yes", "agrees"]
    assert out["glue"]["gstar_mixed"] == "2.78"
    assert out["glue"]["gstar_verdict_hard"] == "agrees (within the margin)"
    assert out["glue"]["gstar_power_words"] == ("In both regimes some grid G could have "
                                                "failed the test.")
    assert out["glue"]["gstar_binding"] == "The constraint does not bind in either regime."
    assert out["notes"] == []


def test_gstar_report_planted_powerless_binding_and_failed_fits():
    from grpolab.labs.sweep.report import gstar_report

    axis = {"regimes": {
        "mixed": {"g_star": _gstar(False, ["the constraint binds at c3 = c1 + |g|^2"])},
        "hard": {"g_star": {"error": "too few rows"}},
        "easy": {}}}
    out = gstar_report(axis)
    assert [r[0] for r in out["rows"]] == ["mixed"] and out["rows"][0][-2] == "no"
    assert out["glue"]["gstar_verdict_hard"] == "no verdict, since the fit failed (too few rows)"
    assert out["glue"]["gstar_verdict_easy"] == ("no verdict, since the fit failed (no "
                                                 "gradient-noise rows)")
    assert out["glue"]["gstar_power_words"].startswith("In the mixed regime the largest regret")
    assert "\"agrees\" is not available" in out["glue"]["gstar_power_words"]
    assert out["glue"]["gstar_binding"].startswith("In the mixed regime the fit sits on")
    assert out["notes"] == ["mixed: the constraint binds at c3 = c1 + |g|^2",
                            "hard no G* fit: too few rows",
                            "easy no G* fit: no gradient-noise rows"]
    both = {"regimes": {r: {"g_star": _gstar(False, ["binds"])} for r in ("a", "b")}}
    assert gstar_report(both)["glue"]["gstar_binding"].startswith("In both regimes")


def test_gstar_report_on_the_committed_axis():
    from grpolab.labs.sweep.report import gstar_report

    out = gstar_report(lab_results.load("cpu-compute").compute_axis())
    assert {r[0] for r in out["rows"]} == {"mixed", "hard"}


def _gap_summary(gaps_by_G: dict[int, float], plugin: float, unbiased: float = 0.02):
    runs = [{"regime": "mixed", "G": G, "seed": s, "zero_variance_abs_gap": g + 0.002 * s}
            for G, g in gaps_by_G.items() for s in (0, 1)]
    runs.append({"regime": "mixed", "G": 2, "seed": 9, "zero_variance_abs_gap": None})
    return {"runs": runs, "regimes": {"mixed": {
        "zero_variance_mean_abs_gap_plugin": plugin, "zero_variance_mean_abs_gap": unbiased}}}


def test_zero_variance_gaps_turn_with_the_planted_trend_and_plugin():
    from grpolab.labs.sweep.report import zero_variance_gaps

    grows = zero_variance_gaps(_gap_summary({2: 0.01, 4: 0.02, 8: 0.04}, plugin=0.04))
    assert grows["growth"] == ["mixed: grows with G (0.011 at G = 2, 0.041 at G = 8)"]
    assert grows["by_G"]["mixed"][4] == pytest.approx(0.021)
    assert grows["plugin_verdict"] == "larger than" and grows["plugin_ratio"] == "2.0 to 2.0"
    shrinks = zero_variance_gaps(_gap_summary({2: 0.04, 4: 0.02, 8: 0.01}, plugin=0.01))
    assert shrinks["growth"][0].startswith("mixed: shrinks with G")
    assert shrinks["plugin_verdict"] == "smaller than"
    flat = zero_variance_gaps(_gap_summary({2: 0.02, 4: 0.03, 8: 0.02}, plugin=0.02))
    assert flat["growth"][0].startswith("mixed: has no clear trend in G")
    assert flat["plugin_verdict"] == "about the same as"


def test_trend_words():
    from grpolab.labs.stats import trend_words

    t = {"slope_per_doubling": -0.02, "low": -0.03, "high": -0.01, "p_value": 0.01}
    assert trend_words(t) == "falls with G (-0.0200 per doubling, 95% CI [-0.0300, -0.0100])"
    assert trend_words({**t, "p_value": 0.2}).startswith("shows no detectable trend in G")


def test_clipped_share_counts_steps_above_the_clip():
    from grpolab.labs.sweep.report import clipped_share

    steps = [{"regime": "mixed", "G": "2", "grad_norm": "1.5"},
             {"regime": "mixed", "G": "2", "grad_norm": "0.5"},
             {"regime": "mixed", "G": "8", "grad_norm": "1.0"},  # at the clip: not above it
             {"regime": "hard", "G": "2", "grad_norm": "3.0"}]
    assert clipped_share(steps, 1.0) == {("mixed", 2): 0.5, ("mixed", 8): 0.0, ("hard", 2): 1.0}
    assert clipped_share(steps, 0.1)[("mixed", 8)] == 1.0
