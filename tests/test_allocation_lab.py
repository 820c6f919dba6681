"""grpolab.labs.allocation_lab: the declared verdicts of the adaptive-allocation lab. Each
refuting outcome is planted in synthetic results and the verdict flips; the Welch interval
and TOST are checked against scipy; the committed verdicts.json equals a recomputation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from grpolab.labs import allocation_lab as lab
from grpolab.results import read_allocation_results, read_allocation_verdicts

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "labs" / "results" / "allocation"
SEEDS = (0, 1, 2, 3)
#: per-seed wiggles with mean 0 and sd about 0.01 (the same for every arm: no free spread)
WIGGLE = np.array([-0.012, 0.004, 0.011, -0.003])


def run(arm: str, seed: int, *, hard1: float, hard64: float, easy1: float,
        persistence: float = 0.9, base: float = 0.5, predicted: float | None = None,
        gain: float = 0.02) -> dict:
    w = WIGGLE[seed] * (1 + 0.3 * lab.ARMS.index(arm))  # unequal spreads: Welch, not pooled
    pairs = 4000
    zero_now = int(base * pairs)
    zero_before = zero_now
    return {
        "arm": arm, "seed": seed, "steps": 512, "completions": 131072, "eval_samples": 64,
        "initial_pass_at_k": {"4": {"1": hard1 - gain, "64": hard64 - 0.05},
                              "3": {"1": easy1 - 0.01, "64": 0.99}},
        "final_pass_at_k": {"4": {"1": hard1 + w, "64": min(1.0, hard64 + w)},
                            "3": {"1": easy1 + w, "64": 1.0}},
        "informative_groups_per_step": 10.0 + seed,
        "completions_by_level": {"3": 65536, "4": 65536},
        "census_pass_rate_by_level": {"3": 0.5, "4": 0.01},
        "zero_variance": {"visits": pairs + 500, "pairs": pairs, "zero_before": zero_before,
                          "zero_both": int(round((persistence + w) * zero_before)),
                          "zero_now": zero_now, "persistence": persistence + w,
                          "base_rate": zero_now / pairs,
                          "predicted": (persistence if predicted is None else predicted)},
        "pool_persistence_at_G": {"8": 0.9},
    }


def results(effects: dict | None = None, **kw) -> dict:
    """Four arms x four seeds; ``effects[arm]`` adds to (hard1, hard64, easy1)."""
    effects = effects or {}
    runs = []
    for arm in lab.ARMS:
        d1, d64, de = effects.get(arm, (0.0, 0.0, 0.0))
        for s in SEEDS:
            runs.append(run(arm, s, hard1=0.05 + d1, hard64=0.4 + d64, easy1=0.6 + de,
                            **kw.get(arm, {})))
    return {"item": "allocation", "seeds": list(SEEDS), "allocation_runs": runs}


def refuted(v: dict) -> list[bool]:
    return [r["observed"] for r in v["refuting_outcomes"]]


def test_no_effect_reads_as_no_difference_and_nothing_refuted():
    v = lab.verdicts(results())
    assert v["precondition"]["met"]
    assert [p["direction"] for p in v["primary"]] == ["no detectable difference"] * 3
    assert refuted(v) == [False, False, False]
    assert "256 completions per step for 512 steps" in v["compute_held_fixed"]


def test_precondition_fails_without_learning_and_every_verdict_says_so():
    v = lab.verdicts(results(**{a: {"gain": -0.01} for a in lab.ARMS}))
    assert not v["precondition"]["met"]
    assert all(p["verdict"] == lab.NOT_REACHED for p in v["primary"])
    assert v["predictions"]["signal_school"]["verdict"] == lab.NOT_REACHED
    # one arm learning is enough
    kw = {a: {"gain": -0.01} for a in lab.ARMS[1:]}
    assert lab.verdicts(results(**kw))["precondition"]["met"]


def test_a_planted_gain_is_detected_after_holm():
    v = lab.verdicts(results({"first-success": (0.08, 0.0, 0.0)}))
    rows = {p["rule"]: p for p in v["primary"]}
    assert rows["first-success"]["verdict"] == "higher"
    assert rows["first-success"]["p_holm"] < 0.05
    assert rows["informative"]["verdict"].startswith("no detectable difference")


def test_refuting_outcome_1_coverage_lost_by_first_success():
    v = lab.verdicts(results({"first-success": (0.0, -0.1, 0.0)}))
    assert refuted(v)[0] and refuted(v)[1]  # then the variance rule beats it too
    v = lab.verdicts(results({"first-success": (0.0, -0.1, 0.0),
                              "variance-dr-grpo": (0.0, -0.1, 0.0)}))
    assert refuted(v) == [True, False, False]
    assert v["predictions"]["signal_school"]["verdict"] == "refuted"


def test_refuting_outcome_2_variance_school_wins_on_coverage():
    v = lab.verdicts(results({"variance-dr-grpo": (0.0, 0.1, 0.0)}))
    assert refuted(v)[1] and not refuted(v)[0]
    assert v["predictions"]["variance_school"]["verdict"] == "refuted"


def test_refuting_outcome_3_persistence_at_its_base_rate():
    v = lab.verdicts(results(**{"informative": {"persistence": 0.5, "base": 0.5}}))
    assert refuted(v) == [False, False, True]
    assert not v["persistence"]["informative"]["above_base_rate"]
    assert v["persistence"]["uniform"]["above_base_rate"]
    assert v["predictions"]["greso_premise"]["verdict"] == "refuted"


def test_the_predictions_can_be_supported():
    v = lab.verdicts(results({"first-success": (0.0, 0.1, 0.0), "informative": (0.0, 0.1, 0.0),
                              "variance-dr-grpo": (0.0, -0.0, 0.0)}))
    assert v["predictions"]["signal_school"]["verdict"] == "supported"
    assert v["predictions"]["variance_school"]["worse_than_first_success"]
    assert v["predictions"]["greso_premise"]["verdict"] == "supported"
    # the persistence off its prediction: above base, but not the fixed-p prediction
    v = lab.verdicts(results(**{a: {"predicted": 0.6} for a in lab.ARMS}))
    assert v["predictions"]["greso_premise"]["verdict"].startswith("above the base rate")


def test_equivalence_needs_the_interval_inside_the_margin():
    a = {s: 0.30 + 1e-4 * WIGGLE[s] for s in SEEDS}
    b = {s: 0.30 - 1e-4 * WIGGLE[s] for s in SEEDS}
    assert lab.welch_tost(a, b)["verdict"] == "equivalent"
    wide = {s: 0.30 + WIGGLE[s] for s in SEEDS}
    assert lab.welch_tost(wide, b)["verdict"] == "not equivalent"
    shifted = {s: v + 0.02 for s, v in a.items()}
    assert lab.welch_tost(shifted, b)["verdict"] == "not equivalent"


def test_welch_matches_scipy():
    from scipy import stats

    a = {0: 0.1, 1: 0.14, 2: 0.12, 3: 0.2}
    b = {0: 0.05, 1: 0.06, 2: 0.055, 3: 0.07}
    ci = lab.welch(a, b)
    ref = stats.ttest_ind(list(a.values()), list(b.values()), equal_var=False)
    assert ci["p_value"] == pytest.approx(ref.pvalue)
    low, high = ref.confidence_interval(0.95)
    assert (ci["low"], ci["high"]) == (pytest.approx(low), pytest.approx(high))


def test_a_design_with_a_missing_run_is_refused():
    res = results()
    res["allocation_runs"] = [r for r in res["allocation_runs"]
                              if not (r["arm"] == "informative" and r["seed"] == 2)]
    with pytest.raises(ValueError, match="informative"):
        lab.verdicts(res)
    res = results()
    res["allocation_runs"][0]["completions"] = 999
    with pytest.raises(ValueError, match="matched completions"):
        lab.verdicts(res)


def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert lab.main([]) == 2
    assert lab.main([str(tmp_path)]) == 2
    capsys.readouterr()
    (tmp_path / "results.json").write_text(
        '{"item": "allocation", "seeds": [0], "allocation_runs": 3}')
    assert lab.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "allocation_runs" in err and err.count("\n") == 1
    assert not (tmp_path / "verdicts.json").exists()


def test_the_command_writes_verdicts_the_reader_accepts(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(results({"first-success":
                                                               (0.08, 0.0, 0.0)})))
    assert lab.main([str(tmp_path)]) == 0
    v = read_allocation_verdicts(tmp_path)
    assert v == lab.verdicts(read_allocation_results(tmp_path))


def test_committed_verdicts_equal_a_recomputation():
    committed = read_allocation_verdicts(COMMITTED)
    again = lab.verdicts(read_allocation_results(COMMITTED),
                         os.fspath(COMMITTED / "results.json"))
    assert json.loads(json.dumps(again)) == committed


def test_the_figure_draws_every_arm(tmp_path):
    res = results({"first-success": (0.08, 0.1, 0.0)})
    fig = lab.plot_allocation(res, lab.verdicts(res))
    axes = fig.get_axes()
    assert len(axes) == 3
    assert [t.get_text() for t in axes[2].get_xticklabels()] == list(lab.ARMS)
    import matplotlib.pyplot as plt

    plt.close(fig)
