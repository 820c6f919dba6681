"""Design A (labs/results/design-a, book/labs/07-crossing.md): the pilot's rule, the logged
all-correct fraction, and every declared verdict planted each way (supported, contradicted,
not reached, inconclusive), then the committed verdicts recomputed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grpolab.labs import design_a

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "labs" / "results" / "design-a"
#: The design's checkpoints: the warm start and 8 log-spaced evaluations up to 196,608.
CHECKPOINTS = [0] + [1536 * 2 ** k for k in range(8)]
SEEDS = range(4)


# ----------------------------------------------------------------------------- the pilot
@pytest.mark.parametrize("final, chosen", [
    ({2.5e-5: 0.300, 5e-5: 0.306, 1e-4: 0.310}, 5e-5),    # 5e-5 within 0.005 of the best
    ({2.5e-5: 0.300, 5e-5: 0.290, 1e-4: 0.310}, 1e-4),    # it is not: the best
    ({2.5e-5: 0.330, 5e-5: 0.290, 1e-4: 0.310}, 2.5e-5),
])
def test_choose_lr_is_the_declared_rule(final, chosen):
    assert design_a.choose_lr(final) == chosen


def test_pilot_plan_is_the_declared_pilot(tmp_path):
    plan = design_a.pilot_plan(str(tmp_path))
    assert [r.config.learning_rate for r in plan] == [2.5e-5, 5e-5, 1e-4]
    for r in plan:
        c = r.config
        assert (c.num_generations, c.seed, c.steps) == (8, 100, 192)
        assert c.num_generations * c.prompts_per_step == 256
        assert c.seed not in (0, 1, 2, 3)  # not a main seed
        assert (c.advantage_baseline, c.scale_rewards, c.loss_type) == (
            "leave_one_out", "none", "dr_grpo")
        assert c.task_kwargs["seed"] == 1  # the design's RL prompts
        assert "runs" in Path(r.folder).parts  # not committed (.gitignore: runs/)


def test_preset_learning_rate_is_the_pilots_choice():
    """The preset's lr is a copy of pilot.json's choice (skipped until the pilot ran)."""
    from grpolab.labs.sweep.presets import DESIGN_A_LEARNING_RATE, get_preset

    path = RESULTS / "pilot.json"
    if not path.is_file():
        pytest.skip("the pilot has not run yet")
    rec = json.loads(path.read_text())
    final = {float(k.removeprefix("lr")): v for k, v in rec["final_pass_at_1"].items()}
    assert rec["chosen_learning_rate"] == design_a.choose_lr(final)
    assert DESIGN_A_LEARNING_RATE == rec["chosen_learning_rate"]
    preset = get_preset("design-a")
    assert preset.run_config(preset.regimes[0], 2, 0).learning_rate == DESIGN_A_LEARNING_RATE


# ----------------------------------------------------------------------------- the log
def test_monitor_logs_the_all_correct_fraction():
    """Three groups of 2: all correct, mixed, all wrong: one third all correct, two thirds
    zero variance (the all-correct ones are a part of those)."""
    from grpolab.grpo.measure import ZeroVarianceMonitor

    mon = ZeroVarianceMonitor(np.zeros((3, 4), dtype=bool), 4)
    rec = mon.observe(np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0]), [2, 2, 2], [0, 1, 2])
    assert rec["all_correct_fraction"] == pytest.approx(1 / 3)
    assert rec["zero_variance_observed"] == pytest.approx(2 / 3)
    partial = mon.observe(np.array([1.0, 0.5]), [2], [0])  # partial credit: not binary
    assert "all_correct_fraction" not in partial


# ----------------------------------------------------------------------------- verdicts
def _curve(c: float, onset: float, rate: float, ceiling: float, base: float = 0.3) -> float:
    """A learning curve in log compute: flat at ``base`` until ``onset`` completions, then
    rising by ``rate`` per doubling, capped at ``ceiling``."""
    if c <= onset:
        return base
    return min(ceiling, base + rate * np.log2(c / onset))


def _table(spec: dict, noise: float = 0.0005, seed: int = 0) -> dict:
    """``{compute: {G: {seed: pass@1}}}`` from ``spec[G] = (onset, rate, ceiling)``, with
    seed-level noise (each seed's runs share their warm-start evaluation)."""
    rng = np.random.default_rng(seed)
    table: dict = {}
    for c in CHECKPOINTS:
        for G, (onset, rate, ceiling) in spec.items():
            for s in SEEDS:
                v = _curve(c, onset, rate, ceiling) + (noise * rng.standard_normal() if c else 0)
                table.setdefault(c, {}).setdefault(G, {})[s] = v + 0.001 * s
    return table


#: IsoCompute's shape inside the budget: small G learns first and levels off low, large G
#: later and higher; the crossing inside the window.
CROSSING = {2: (1536, 0.08, 0.45), 8: (3072, 0.08, 0.52), 32: (6144, 0.08, 0.60)}
#: The refuting shape: G = 2 levels off highest, and stays ahead.
SMALL_G_WINS = {2: (1536, 0.08, 0.60), 8: (3072, 0.08, 0.52), 32: (6144, 0.08, 0.45)}
#: IsoCompute's shape with the crossing beyond the budget: G = 2 still rising at the end.
BEYOND = {2: (1536, 0.03, 0.95), 8: (3072, 0.03, 0.95), 32: (6144, 0.03, 0.95)}
#: Every G levels off at the same height.
TIE = {2: (1536, 0.08, 0.5), 8: (3072, 0.08, 0.5), 32: (6144, 0.08, 0.5)}


def test_planted_crossing_is_supported():
    r = design_a.crossing_verdicts(_table(CROSSING))
    assert r["precondition"]["holds"]
    assert r["verdict"] == "supported"
    assert r["last"]["verdict"] == "supported" and r["last"]["trend"]["low"] > 0
    assert r["crossing"]["verdict"] == "supported"
    assert r["first"]["verdict"] == "supported" and r["first"]["trend"]["high"] < 0
    assert r["first"]["completions"] == 3072  # G = 2's first gain, one doubling after onset
    assert "at a fixed budget of 256 completions per step" in r["last"]["statement"]


def test_sign_change_is_where_the_mean_slope_turns_positive():
    """Descriptive, for the figure: the planted crossing's seed-mean slope turns positive
    at one checkpoint; curves that never cross have none."""
    assert design_a.sign_change_checkpoint(design_a.crossing_verdicts(_table(CROSSING))) \
        == 24576
    for spec in (BEYOND, SMALL_G_WINS):
        assert design_a.sign_change_checkpoint(design_a.crossing_verdicts(_table(spec))) is None


def test_planted_refuting_outcome_is_contradicted():
    r = design_a.crossing_verdicts(_table(SMALL_G_WINS))
    assert r["precondition"]["holds"]
    assert r["verdict"] == "contradicted"
    assert r["last"]["trend"]["high"] < 0


def test_planted_beyond_the_budget_crossing_is_not_reached():
    """Curves that follow IsoCompute but cross beyond the budget: small G leads in the
    window (the window alone reads "contradicted"), G = 2 never levels off, so the verdict
    is "not reached" (the referee's F3)."""
    r = design_a.crossing_verdicts(_table(BEYOND))
    assert not r["precondition"]["holds"]
    assert r["verdict"] == "not reached"
    assert r["last"]["trend"]["high"] < 0  # small G ahead at the end of the window


def test_planted_tie_is_inconclusive_and_equivalent():
    r = design_a.crossing_verdicts(_table(TIE, noise=0.0003))
    assert r["precondition"]["holds"]
    assert r["verdict"] == "inconclusive"
    assert r["last"]["equivalence"]["verdict"] == "equivalent"


def test_a_run_that_never_learns_has_no_first_learning_checkpoint():
    flat = {G: (10 ** 9, 0.0, 0.3) for G in (2, 8, 32)}
    r = design_a.crossing_verdicts(_table(flat))
    assert r["first"]["verdict"] == "not reached"


def test_crossing_verdicts_refuse_too_few_checkpoints():
    t = _table(CROSSING)
    with pytest.raises(ValueError, match="three checkpoints"):
        design_a.crossing_verdicts({c: t[c] for c in CHECKPOINTS[:3]})


def _rows(fraction_by_seed, G=2, steps=range(5, 769, 5), regime="mixed"):
    return [{"regime": regime, "G": G, "seed": s, "step": st,
             "all_correct_fraction": f, "zero_variance_observed": f}
            for s, f in enumerate(fraction_by_seed) for st in steps]


@pytest.mark.parametrize("fractions, verdict", [
    ([0.70, 0.71, 0.69, 0.72], "supported"),
    ([0.40, 0.41, 0.39, 0.42], "contradicted"),
    ([0.50, 0.70, 0.62, 0.58], "inconclusive"),
])
def test_all_correct_at_end_planted(fractions, verdict):
    r = design_a.all_correct_at_end(_rows(fractions) + _rows([0.0] * 4, G=8))
    assert r["verdict"] == verdict
    assert r["steps_per_seed"] == {s: 15 for s in range(4)}  # steps 695 ... 765
    assert r["mean"] == pytest.approx(np.mean(fractions))


def test_all_correct_at_end_reads_only_the_end_and_says_when_not_logged():
    early = _rows([0.1] * 4, steps=range(5, 690, 5))
    late = _rows([0.9] * 4, steps=range(695, 769, 5))
    assert design_a.all_correct_at_end(early + late)["mean"] == pytest.approx(0.9)
    unlogged = [{**r, "all_correct_fraction": None} for r in late]
    assert design_a.all_correct_at_end(unlogged)["verdict"] == "not measured"


# ----------------------------------------------------------------------------- the folder
def _write_folder(tmp_path: Path, spec: dict, fractions) -> str:
    table = _table(spec)
    curves = {str(G): {str(s): [{"completions": c, "step": c // 256,
                                 "pass_at_k": {"1": table[c][G][s]}} for c in CHECKPOINTS]
                       for s in SEEDS} for G in spec}
    axis = {"preset": "design-a", "regimes": {"mixed": {
        "checkpoints": CHECKPOINTS, "k": [1], "curves": curves}}}
    (tmp_path / "compute_axis.json").write_text(json.dumps(axis))
    runs = [{"regime": "mixed", "G": G, "seed": s, "zero_variance_observed": 0.5,
             "zero_variance_predicted": 0.5} for G in spec for s in SEEDS]
    (tmp_path / "summary.json").write_text(json.dumps({
        "preset": "design-a", "runs": runs, "runs_finished": 12, "runs_planned": 12,
        "regimes": {"mixed": {"zero_variance_at_warm_start_theory": {}}}}))
    lines = ["regime,G,seed,step,completions,all_correct_fraction,zero_variance_observed"]
    for r in _rows(fractions):
        lines.append(f"mixed,2,{r['seed']},{r['step']},{256 * r['step']},"
                     f"{r['all_correct_fraction']},{r['zero_variance_observed']}")
    (tmp_path / "steps.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "declared.json").write_text(json.dumps({"minimum_detectable_effect": {
        "slope_per_doubling_low_sd": 0.0029, "slope_per_doubling_high_sd": 0.0067,
        "how": "..."}}))
    return str(tmp_path)


@pytest.mark.parametrize("spec, verdict, mechanism", [
    (CROSSING, "supported", "supported"),
    (SMALL_G_WINS, "contradicted", "contradicted"),
])
def test_verdicts_read_a_results_folder(tmp_path, spec, verdict, mechanism):
    fractions = [0.7] * 3 + [0.71] if mechanism == "supported" else [0.3, 0.31, 0.3, 0.32]
    out = design_a.verdicts(_write_folder(tmp_path, spec, fractions))
    assert out["verdict"] == verdict
    assert out["all_correct"]["verdict"] == mechanism
    assert out["declared_mde"] == {"slope_per_doubling_low_sd": 0.0029,
                                   "slope_per_doubling_high_sd": 0.0067}
    design_a.write_verdicts(str(tmp_path))
    stored = json.loads((tmp_path / "verdicts.json").read_text())
    assert stored["verdict"] == verdict and stored["made_by"].startswith("python -m")


def test_step_table_reader_refuses_damage(tmp_path):
    from grpolab._files import CorruptFileError
    from grpolab.results import read_step_table

    good = "regime,G,seed,step,all_correct_fraction\nmixed,2,0,5,0.5\nmixed,2,0,10,\n"
    (tmp_path / "steps.csv").write_text(good)
    rows = read_step_table(tmp_path, ("all_correct_fraction",))
    assert rows == [{"regime": "mixed", "G": 2, "seed": 0, "step": 5,
                     "all_correct_fraction": 0.5},
                    {"regime": "mixed", "G": 2, "seed": 0, "step": 10,
                     "all_correct_fraction": None}]
    with pytest.raises(CorruptFileError, match="no column zero_variance_observed"):
        read_step_table(tmp_path, ("zero_variance_observed",))
    for bad, where in (("mixed,2,0,5,nan", "all_correct_fraction"),
                       ("mixed,2,0,5,x", "all_correct_fraction"),
                       ("mixed,two,0,5,0.5", "column G"), ("mixed,2,-1,5,0.5", "column seed")):
        (tmp_path / "steps.csv").write_text(good.splitlines()[0] + "\n" + bad + "\n")
        with pytest.raises(CorruptFileError, match=where):
            read_step_table(tmp_path, ("all_correct_fraction",))


def test_the_book_skips_a_sweeps_local_folders(tmp_path):
    """A sweep run into labs/results/NAME (as labs/README.md says) leaves runs/ and cache/
    there, out of git; the book's door check and cache fingerprint skip them (a tokenizer
    config with a 31-digit integer stopped the build), and still refuse a damaged results
    file beside them."""
    from grpolab.book import build

    sweep = tmp_path / "design-a"
    (sweep / "cache" / "warmstart-x").mkdir(parents=True)
    (sweep / "runs" / "mixed").mkdir(parents=True)
    (sweep / "cache" / "warmstart-x" / "tokenizer_config.json").write_text(
        '{"model_max_length": 1000000000000000019884624838656}')
    (sweep / "runs" / "mixed" / "log.json").write_text("{not json")
    (sweep / "pilot.json").write_text('{"chosen_learning_rate": 0.0001}')
    assert [p.name for p in build._results_files(tmp_path)] == ["pilot.json"]
    build._check_results(tmp_path)  # passes
    (sweep / "summary.json").write_text('{"preset": 1}')
    with pytest.raises(build.BookBuildError, match="summary.json"):
        build._check_results(tmp_path)


def test_command_line_refuses_a_missing_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grpolab.labs.design_a", "--verdicts",
                           str(tmp_path / "nope")], capture_output=True, text=True)
    assert proc.returncode == 2 and "is not a folder" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_committed_verdicts_are_reproduced():
    """The committed verdicts.json is what the module computes from the committed results
    (skipped until the design has run)."""
    path = RESULTS / "verdicts.json"
    if not path.is_file():
        pytest.skip("design A has not been run yet")
    stored = json.loads(path.read_text())
    got = json.loads(json.dumps(design_a.verdicts(str(RESULTS))))
    assert got["verdict"] == stored["verdict"]
    for key in ("precondition", "crossing", "last", "first", "all_correct", "at_end"):
        _same(got[key], stored[key], key)


def _same(a, b, where: str) -> None:
    """a equals b, numbers to 1e-9 relative (another machine's last bits), all else exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float | int):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), where
    else:
        assert a == b, where
