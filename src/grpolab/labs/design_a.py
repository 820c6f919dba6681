"""Design A, the IsoCompute crossing where it can happen (labs/results/design-a/declared.json,
book/labs/07-crossing.md): does a larger G win once the small-G arm has levelled off?

IsoCompute (arXiv 2603.12151) finds that at a fixed batch of prompts × G completions, small G
(many prompts) wins at low compute and large G at high compute, on easy problems through
*sharpening*. Design A gives the tiny model a budget of 256 completions per step, fresh RL
prompts and 768 steps, and tests that prediction only where it can be tested: after the
G = 2 arm has plateaued (the referee's F3).

Two parts, as labs/results/design-a/deviations.md declares them:

- :func:`run_pilot`, once before the sweep: the learning rate, from one G = 8 pilot seed;
- :func:`verdicts`, after it: every declared verdict from the committed results, each with
  its interval and minimum detectable effect (MDE), whatever the data say.
"""

from __future__ import annotations

import json
import os

import numpy as np

__all__ = ["PILOT_G", "PILOT_SEED", "PILOT_STEPS", "PILOT_LEARNING_RATES", "DEFAULT_LR",
           "PILOT_TIE", "choose_lr", "pilot_plan", "run_pilot", "checkpoint_table",
           "first_learning_checkpoint", "all_correct_at_end", "crossing_verdicts",
           "verdicts", "write_verdicts", "plot_design_a", "sign_change_checkpoint", "REGIME",
           "SMALL_G",
           "ALL_CORRECT_THRESHOLD", "END_AFTER_STEP", "HELD_FIXED"]

# ----------------------------------------------------------------------------- the pilot
#: The pilot's group size and seed (not one of the main seeds 0-3).
PILOT_G, PILOT_SEED = 8, 100
#: The pilot's length: a quarter of a design run (49,152 completions).
PILOT_STEPS = 192
#: The candidate AdamW learning rates: cpu-compute's and a factor of 2 either side.
PILOT_LEARNING_RATES = (2.5e-5, 5e-5, 1e-4)
#: cpu-compute's learning rate, chosen among tied candidates.
DEFAULT_LR = 5e-5
#: Candidates within this much held-out pass@1 of the best are tied with it (the design's
#: declared margin).
PILOT_TIE = 0.005


def choose_lr(final: dict[float, float], *, default: float = DEFAULT_LR,
              tie: float = PILOT_TIE) -> float:
    """The declared rule: the learning rate with the highest held-out pass@1 (``final[lr]``);
    one within ``tie`` of the best is tied with it, and among tied ones ``default`` wins when
    it is one of them (else the best)."""
    if not final:
        raise ValueError("the pilot needs at least one learning rate's pass@1")
    best = max(final, key=lambda lr: final[lr])
    tied = [lr for lr, v in final.items() if v >= final[best] - tie]
    return default if default in tied else best


def _pilot_name(lr: float) -> str:
    return f"lr{lr:g}"


def pilot_plan(out: str) -> list:
    """The pilot as a plan for :class:`grpolab.labs.runner.Runner`: the preset ``design-a``'s
    run at G = :data:`PILOT_G`, seed :data:`PILOT_SEED`, :data:`PILOT_STEPS` steps, one run
    per candidate learning rate, in ``out/runs/pilot/`` (the census the sweep's, so the
    sweep reuses it)."""
    from grpolab.grpo.config import apply_overrides
    from grpolab.labs.common import CENSUS_SEED
    from grpolab.labs.runner import CensusSpec, PlannedRun
    from grpolab.labs.sweep.presets import PRESETS
    from grpolab.labs.sweep.sweep import census_width

    preset = PRESETS["design-a"]
    regime = preset.regimes[0]
    base = preset.run_config(regime, PILOT_G, PILOT_SEED)
    width = census_width(preset)
    return [PlannedRun(name=f"pilot {_pilot_name(lr)}",
                       config=apply_overrides(base, learning_rate=lr, steps=PILOT_STEPS),
                       folder=os.path.join(out, "runs", "pilot", _pilot_name(lr)),
                       census=CensusSpec(width, CENSUS_SEED), extra={"pilot": True},
                       check_log=True)
            for lr in PILOT_LEARNING_RATES]


def run_pilot(out: str, *, workers: int = 2, progress: bool = True) -> dict:
    """``python -m grpolab.labs.design_a --pilot OUT``: train (or resume) the pilot's runs
    and write ``OUT/pilot.json``: each candidate's held-out pass@1 at every checkpoint, the
    declared rule and the chosen learning rate."""
    import time

    import torch

    from grpolab.grpo.records import provenance, read_jsonl, write_json_atomic
    from grpolab.labs.runner import Runner
    from grpolab.labs.sweep.presets import PRESETS
    from grpolab.models.device import resolve_device

    preset = PRESETS["design-a"]
    torch.set_num_threads(preset.torch_threads or torch.get_num_threads())  # as the sweep
    plan = pilot_plan(out)
    start = time.time()
    with Runner(out, progress=progress) as runner:
        summaries = runner.run(plan, runner.check(plan), workers=workers)
    curves, final = {}, {}
    for run, lr in zip(plan, PILOT_LEARNING_RATES, strict=True):
        log = read_jsonl(os.path.join(run.folder, "log.jsonl"), "a pilot run's log")
        curves[_pilot_name(lr)] = [[r["completions"], r["eval_sampled_accuracy"]]
                                   for r in log if "eval_sampled_accuracy" in r]
        final[lr] = float(summaries[run.name]["final_sampled_accuracy"])
    chosen = choose_lr(final)
    record = {
        "what": "design A's pilot: one learning rate from a single G = 8 seed "
                "(labs/results/design-a/deviations.md, item 1)",
        "num_generations": PILOT_G, "seed": PILOT_SEED, "steps": PILOT_STEPS,
        "completions_per_step": plan[0].config.num_generations * plan[0].config.prompts_per_step,
        "candidates": list(PILOT_LEARNING_RATES),
        "rule": f"highest held-out pass@1 at the last checkpoint; within {PILOT_TIE} of the "
                f"best counts as tied; among tied, {DEFAULT_LR:g} (cpu-compute's) if it is one",
        "final_pass_at_1": {_pilot_name(lr): v for lr, v in final.items()},
        "pass_at_1_by_completions": curves,
        "chosen_learning_rate": chosen,
        "seconds": time.time() - start,
        **provenance(resolve_device(plan[0].config.device)),
        "command": f"python -m grpolab.labs.design_a --pilot {out}",
    }
    write_json_atomic(os.path.join(out, "pilot.json"), record)
    return record


# ----------------------------------------------------------------------------- the verdicts
#: The design's one regime (the preset's), and the G whose plateau is the precondition.
REGIME, SMALL_G = "mixed", 2
#: The compute every G comparison holds fixed, in the words every printed effect uses.
HELD_FIXED = "at a fixed budget of 256 completions per step"
#: The declared threshold of the sharpening mechanism: all-correct groups at G = 2.
ALL_CORRECT_THRESHOLD = 0.6
#: "At the end": the steps.csv rows after this step (the last 10% of the 768 steps).
END_AFTER_STEP = int(0.9 * 768)


def checkpoint_table(axis: dict, regime: str = REGIME) -> dict[int, dict[int, dict[int, float]]]:
    """``{completions: {G: {seed: pass@1}}}`` at the checkpoints every run reached, from a
    checked ``compute_axis.json`` (:func:`grpolab.results.read_compute_axis`)."""
    reg = axis["regimes"].get(regime)
    if reg is None:
        raise ValueError(f"compute_axis.json has no regime {regime!r} (it has "
                         f"{', '.join(axis['regimes']) or 'none'})")
    complete = set(reg["checkpoints"])
    table: dict = {}
    for G, seeds in reg["curves"].items():
        for seed, rows in seeds.items():
            for row in rows:
                if row["completions"] not in complete:
                    continue
                p1 = row["pass_at_k"].get("1", row["pass_at_k"].get(1))
                if p1 is None:
                    raise ValueError(f"compute_axis.json: G={G} seed={seed} at "
                                     f"{row['completions']} completions has no pass@1")
                table.setdefault(int(row["completions"]), {}).setdefault(int(G), {})[
                    int(seed)] = float(p1)
    return dict(sorted(table.items()))


def first_learning_checkpoint(table: dict, confidence: float = 0.95) -> dict | None:
    """The first checkpoint (compute > 0) at which some G's per-seed gain in pass@1 over its
    own warm-start evaluation (compute 0) has a ``confidence`` t interval above 0
    (deviations.md, item 3); None when no checkpoint has one."""
    from grpolab.labs.stats import t_interval

    if 0 not in table:
        raise ValueError("the first learning checkpoint needs the warm-start evaluation "
                         "(compute 0)")
    warm = table[0]
    for c in sorted(x for x in table if x > 0):
        for G in sorted(table[c]):
            seeds = sorted(set(table[c][G]) & set(warm.get(G, {})))
            if len(seeds) < 2:
                continue
            ci = t_interval([table[c][G][s] - warm[G][s] for s in seeds], confidence)
            if ci["low"] is not None and ci["low"] > 0:
                return {"completions": c, "G": G, "gain": ci}
    return None


def _sign_verdict(trend: dict, predicted: str) -> str:
    """"supported" when a trend's interval lies on the ``predicted`` side of 0 ("below" or
    "above"), "contradicted" when on the other, "inconclusive" otherwise."""
    low, high = trend["low"], trend["high"]
    if low is None:
        return "inconclusive"
    below, above = high < 0, low > 0
    if (below and predicted == "below") or (above and predicted == "above"):
        return "supported"
    if below or above:
        return "contradicted"
    return "inconclusive"


def crossing_verdicts(table: dict, *, declared_mde: dict | None = None,
                      confidence: float = 0.95) -> dict:
    """Every declared test of design A on ``table[compute][G][seed]`` (held-out pass@1 at a
    fixed budget of 256 completions per step), as deviations.md, items 3 and 4, say:

    - ``precondition``: :func:`grpolab.labs.stats.plateau_precondition` (G = 2 has levelled
      off: its gain over the last doubling of compute has a 95% interval below 0.005);
    - ``first``: the slope of pass@1 on log₂ G at the first learning checkpoint, predicted
      below 0;
    - ``last``: :func:`grpolab.labs.stats.g_verdict` at the last checkpoint (slope, interval,
      MDE, TOST at ±0.005), predicted above 0;
    - ``crossing``: :func:`grpolab.labs.stats.crossing_test` (the slope of slopes);
    - ``verdict``: "not reached" (precondition fails), "contradicted" (it holds and the last
      slope's interval lies below 0: the declared refuting outcome), "supported" (it holds,
      the last slope's interval lies above 0 and so does the slope of slopes), else
      "inconclusive".
    """
    from grpolab.labs import stats

    computes = [c for c in table if c > 0]
    if len(computes) < 3:
        raise ValueError(f"design A's tests need at least three checkpoints after the warm "
                         f"start; the results have {len(computes)}")
    if SMALL_G not in table[max(computes)]:
        raise ValueError(f"design A's precondition is about G = {SMALL_G}; the results have "
                         f"G = {sorted(table[max(computes)])}")
    pre = stats.plateau_precondition(table, confidence=confidence)
    crossing = stats.crossing_test(table, confidence=confidence)
    last_c = max(computes)
    last = stats.g_verdict(table[last_c], "pass@1", 1 - confidence,
                           held_fixed=f"{HELD_FIXED}, {last_c:,} completions in all")
    learning = first_learning_checkpoint(table, confidence)
    if learning is None:
        first = {"verdict": "not reached", "why": "no checkpoint where some G's gain over the "
                 "warm start has a 95% interval above 0"}
    else:
        c = learning["completions"]
        trend = stats.trend_in_log2_G(table[c], confidence)
        first = {"verdict": _sign_verdict(trend, "below"), "completions": c,
                 "learning": learning, "trend": trend}
    last_sign = _sign_verdict(last["trend"], "above")
    if not pre["holds"]:
        verdict = "not reached"
    elif last_sign == "contradicted":
        verdict = "contradicted"
    elif last_sign == "supported" and crossing["low"] is not None and crossing["low"] > 0:
        verdict = "supported"
    else:
        verdict = "inconclusive"
    means = {c: {G: float(np.mean(list(v.values()))) for G, v in sorted(by_G.items())}
             for c, by_G in table.items()}
    return {"verdict": verdict, "precondition": pre, "first": first,
            "last": {**last, "completions": last_c, "verdict": last_sign},
            "crossing": crossing, "declared_mde": declared_mde,
            "pass_at_1_mean": means, "held_fixed": HELD_FIXED}


def all_correct_at_end(rows: list[dict], *, G: int = SMALL_G, after_step: int = END_AFTER_STEP,
                       regime: str = REGIME, threshold: float = ALL_CORRECT_THRESHOLD,
                       confidence: float = 0.95) -> dict:
    """The sharpening mechanism (deviations.md, item 5): per seed, the mean
    ``all_correct_fraction`` of G's logged steps after ``after_step``; a t interval over
    seeds; "supported" when it lies above ``threshold``, "contradicted" below, else
    "inconclusive" ("not measured" when no row logs the fraction)."""
    from grpolab.labs.stats import t_interval

    per_seed: dict[int, list[float]] = {}
    for r in rows:
        if (r["regime"] == regime and r["G"] == G and r["step"] > after_step
                and r.get("all_correct_fraction") is not None):
            per_seed.setdefault(r["seed"], []).append(r["all_correct_fraction"])
    if not per_seed:
        return {"verdict": "not measured", "G": G, "after_step": after_step,
                "threshold": threshold, "why": "no logged all_correct_fraction after that step"}
    means = {s: float(np.mean(v)) for s, v in sorted(per_seed.items())}
    ci = t_interval(list(means.values()), confidence)
    verdict = ("inconclusive" if ci["low"] is None else "supported" if ci["low"] > threshold
               else "contradicted" if ci["high"] < threshold else "inconclusive")
    return {"verdict": verdict, "G": G, "after_step": after_step, "threshold": threshold,
            "per_seed": means, "steps_per_seed": {s: len(v) for s, v in per_seed.items()},
            **{k: ci[k] for k in ("mean", "low", "high", "mde")}, "confidence": confidence}


def zero_variance_at_end(rows: list[dict], *, after_step: int = END_AFTER_STEP,
                         regime: str = REGIME) -> dict:
    """Per G, the mean over seeds of the all-correct and the zero-variance fractions of the
    logged steps after ``after_step`` (reported beside the declared test, not a test)."""
    out: dict = {}
    for key in ("all_correct_fraction", "zero_variance_observed"):
        by: dict = {}
        for r in rows:
            if r["regime"] == regime and r["step"] > after_step and r.get(key) is not None:
                by.setdefault(r["G"], {}).setdefault(r["seed"], []).append(r[key])
        out[key] = {G: float(np.mean([np.mean(v) for v in seeds.values()]))
                    for G, seeds in sorted(by.items())}
    return out


def verdicts(out: str) -> dict:
    """Every declared verdict of design A from the results in ``out`` (a finished
    ``grpolab lab sweep --preset design-a`` folder holding ``declared.json``), read through
    the package's checked readers."""
    from grpolab.grpo.records import read_json
    from grpolab.results import read_compute_axis, read_step_table, read_sweep_summary

    declared = read_json(os.path.join(out, "declared.json"), "design A's declaration",
                         keys=("minimum_detectable_effect",))
    mde = {k: v for k, v in declared["minimum_detectable_effect"].items()
           if k.startswith("slope")}
    table = checkpoint_table(read_compute_axis(out))
    rows = read_step_table(out, ("all_correct_fraction", "zero_variance_observed"))
    summary = read_sweep_summary(out)
    return {**crossing_verdicts(table, declared_mde=mde),
            "all_correct": all_correct_at_end(rows),
            "at_end": zero_variance_at_end(rows),
            "runs_finished": summary.get("runs_finished"),
            "runs_planned": summary.get("runs_planned"),
            "metric": "held-out pass@1 (unbiased, 32 samples per prompt)"}


def write_verdicts(out: str) -> dict:
    """``python -m grpolab.labs.design_a --verdicts OUT``: :func:`verdicts` of ``OUT``
    written to ``OUT/verdicts.json`` (tests/test_design_a.py recomputes it)."""
    from grpolab.grpo.records import write_json_atomic

    result = {**verdicts(out), "made_by": f"python -m grpolab.labs.design_a --verdicts {out}"}
    write_json_atomic(os.path.join(out, "verdicts.json"), json.loads(json.dumps(result)))
    return result


def sign_change_checkpoint(result: dict) -> int | None:
    """The first checkpoint at which the mean slope on log₂ G is above 0 after having been
    below 0 at an earlier one: where the seed-mean curves cross (descriptive, not a declared
    test); None when they do not within the budget."""
    seen_negative = False
    for c, slope in sorted(result["crossing"]["slope_by_checkpoint"].items(),
                           key=lambda kv: float(kv[0])):
        if slope < 0:
            seen_negative = True
        elif slope > 0 and seen_negative:
            return int(float(c))
    return None


def _thousands(value: float, _pos=None) -> str:
    """An axis label for a completion count: 1.5k, 12k, 197k."""
    return f"{value / 1000:.1f}k" if value < 10_000 else f"{value / 1000:.0f}k"


def plot_design_a(table: dict, result: dict):
    """Design A's figure: (left) held-out pass@1 against completions (log axis), one thin
    line per seed and the seed mean bold per G, the first learning checkpoint and the
    plateau window marked; (right) the slope of pass@1 on log₂ G at each checkpoint with
    its 95% t interval: below 0 small G leads, above 0 large G; a crossing is where it
    changes sign. Every G at a fixed budget of 256 completions per step."""
    import matplotlib.pyplot as plt

    from grpolab.labs.common import FIGURE_STYLE, FIGURE_WIDTH

    computes = [c for c in table if c > 0]
    Gs = sorted({G for c in computes for G in table[c]})
    colors = dict(zip(Gs, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=False))
    with plt.rc_context(FIGURE_STYLE):
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 4.2),
                                     gridspec_kw={"width_ratios": [1.3, 1]})
        for G in Gs:
            seeds = sorted(set.intersection(*(set(table[c][G]) for c in computes)))
            for s in seeds:
                ax.plot(computes, [table[c][G][s] for c in computes], color=colors[G],
                        lw=0.7, alpha=0.45)
            ax.plot(computes, [np.mean([table[c][G][s] for s in seeds]) for c in computes],
                    color=colors[G], lw=2.2, marker="o", ms=3.5, label=f"G = {G}")
        pre = result["precondition"]
        if "from" in pre:
            ax.axvspan(pre["from"], pre["to"], color="grey", alpha=0.12, lw=0,
                       label=f"plateau test ({'holds' if pre['holds'] else 'fails'})")
        first = result["first"]
        if first.get("completions"):
            ax.axvline(first["completions"], color="black", ls=":", lw=1,
                       label="first learning checkpoint")
        cross = sign_change_checkpoint(result)
        for axis in (ax, bx):
            if cross is not None:
                axis.axvline(cross, color="tab:purple", ls="--", lw=1.2,
                             label="slope turns positive" if axis is ax else None)
            axis.set_xscale("log", base=2)
            axis.set_xticks(computes[::2])
            axis.xaxis.set_major_formatter(plt.FuncFormatter(_thousands))
            axis.xaxis.set_minor_formatter(plt.NullFormatter())
            axis.set_xlabel("completions consumed (256 per step)")
        ax.set_ylabel("held-out pass@1")
        if cross is None:
            ax.plot([], [], " ", label="no sign change within the budget")
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3, frameon=False)
        slopes = result["crossing"]
        xs = list(computes)
        mid = [slopes["slope_by_checkpoint"][c] for c in xs]
        lo = [slopes["slope_by_checkpoint_low"][c] for c in xs]
        hi = [slopes["slope_by_checkpoint_high"][c] for c in xs]
        bx.errorbar(xs, mid, yerr=[np.subtract(mid, lo), np.subtract(hi, mid)], fmt="o-",
                    color="black", capsize=3, ms=4)
        bx.axhline(0, color="grey", lw=0.8)
        bx.set_ylabel("Δ pass@1 per doubling of G")
        fig.tight_layout(rect=(0, 0.1, 1, 1))  # the legend below both panels
    return fig


def _main(argv: list[str]) -> int:
    """The one-off commands (usage below)."""
    if len(argv) == 2 and argv[0] in ("--pilot", "--verdicts") and not argv[1].startswith("-"):
        if not os.path.isdir(argv[1]):
            print(f"error: {argv[1]} is not a folder", flush=True)
            return 2
        if argv[0] == "--pilot":
            rec = run_pilot(argv[1])
            print(json.dumps({k: rec[k] for k in ("final_pass_at_1", "chosen_learning_rate",
                                                  "seconds")}, indent=1))
        else:
            res = write_verdicts(argv[1])
            print(json.dumps({"verdict": res["verdict"],
                              "precondition": res["precondition"]["why"],
                              "last": res["last"]["statement"],
                              "crossing": {k: res["crossing"][k] for k in
                                           ("verdict", "slope_of_slopes", "low", "high")},
                              "first": res["first"]["verdict"],
                              "all_correct": res["all_correct"]["verdict"]}, indent=1))
        return 0
    print("usage: python -m grpolab.labs.design_a --pilot OUT      (the learning-rate pilot)\n"
          "       python -m grpolab.labs.design_a --verdicts OUT   (verdicts.json)")
    return 2


if __name__ == "__main__":  # pragma: no cover - the one-off commands
    import sys

    sys.exit(_main(sys.argv[1:]))
