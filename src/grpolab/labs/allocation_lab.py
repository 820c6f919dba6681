"""The adaptive-allocation lab's verdicts (issue 34; declared in
labs/results/allocation/declared.json before any run, open choices fixed in
labs/results/allocation/deviations.md before the runs): every declared test, computed from
the committed ``results.json`` through its checked reader, with its interval, whatever the
data say.

- **Precondition**: some arm raises 4-digit pass@1 above the warm start (the 95% t interval
  of its per-seed gain lies above 0); otherwise every verdict reads "not reached: no
  learning on the hard half".
- **Primary**: each rule minus uniform on final 4-digit pass@1, a Welch t interval over the
  seeds (Welch–Satterthwaite df), Holm's correction over the three contrasts, and TOST at
  the declared margin (Welch's 90% interval inside ±0.005) for an equivalence verdict.
- **Secondary**: the same contrasts on 4-digit pass@64 (coverage) and 3-digit pass@1, and
  variance-dr-grpo minus first-success on 4-digit pass@64; informative groups per step.
- **GRESO's premise**: per arm, the persistence of zero variance across visits against its
  base rate and against the fixed-pass-rate prediction from the census
  (:func:`grpolab.labs.remedies.strategies.zero_variance_transitions`), t intervals over
  seeds of the per-seed differences.
- **Refuting outcomes**: the three declared, each observed or not.

Run: ``python -m grpolab.labs.allocation_lab labs/results/allocation`` writes
``verdicts.json`` next to ``results.json``. Derived in: book/theory/14-adaptive-allocation.md,
"Measured".
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence

__all__ = ["ARMS", "RULES", "HARD", "EASY", "MARGIN", "DECLARED_MDE", "per_seed", "welch",
           "welch_tost", "verdicts", "plot_allocation", "write_verdicts", "main"]

#: The declared arms (declared.json "arms"), the control first.
ARMS = ("uniform", "informative", "variance-dr-grpo", "first-success")
#: The three rules each compared with the uniform arm (the Holm family).
RULES = ARMS[1:]
#: The coverage-limited half (4-digit sums) and the easier half (3-digit sums), as the
#: results key the held-out levels.
HARD, EASY = "4", "3"
#: The declared equivalence margin (pass@1, absolute) and minimum detectable effect.
MARGIN = 0.005
DECLARED_MDE = 0.04
ALPHA = 0.05
NOT_REACHED = "not reached: no learning on the hard half"


# ----------------------------------------------------------------------------- the tests
def per_seed(runs: Sequence[Mapping], arm: str, metric) -> dict[int, float]:
    """{seed: value} of one arm; ``metric(run)`` picks the value from a run record."""
    return {int(r["seed"]): float(metric(r)) for r in runs if r["arm"] == arm}


def _pass_at(k: str, level: str, when: str = "final"):
    return lambda r: r[f"{when}_pass_at_k"][level][k]


def welch(a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95) -> dict:
    """mean(a) − mean(b) with Welch's t interval (t critical value at the Welch–Satterthwaite
    df from the seeds), its two-sided p-value and its minimum detectable effect at 80% power.
    With no spread in either arm there is no test (p None, interval None)."""
    from scipy import stats as sps

    from grpolab.labs.stats import minimum_detectable_effect

    xa, xb = list(a.values()), list(b.values())
    if len(xa) < 2 or len(xb) < 2:
        raise ValueError(f"a Welch interval needs at least 2 seeds per arm, got {len(xa)} and "
                         f"{len(xb)}")
    ma, mb = sum(xa) / len(xa), sum(xb) / len(xb)
    va = sum((x - ma) ** 2 for x in xa) / (len(xa) - 1) / len(xa)
    vb = sum((x - mb) ** 2 for x in xb) / (len(xb) - 1) / len(xb)
    diff, se = ma - mb, math.sqrt(va + vb)
    out = {"difference": diff, "n_a": len(xa), "n_b": len(xb), "test": "Welch t",
           "confidence": confidence}
    if se <= 1e-12 * max(1.0, abs(diff)):
        return {**out, "low": None, "high": None, "se": 0.0, "df": None,
                "p_value": 1.0 if diff == 0 else None, "mde": None}
    df = (va + vb) ** 2 / (va ** 2 / (len(xa) - 1) + vb ** 2 / (len(xb) - 1))
    t = float(sps.t.ppf(0.5 + confidence / 2, df))
    return {**out, "low": diff - t * se, "high": diff + t * se, "se": se, "df": df,
            "t_critical": t, "p_value": float(2 * sps.t.sf(abs(diff) / se, df)),
            "mde": minimum_detectable_effect(se, df, 1 - confidence)}


def welch_tost(a: Mapping[int, float], b: Mapping[int, float], margin: float = MARGIN,
               alpha: float = ALPHA) -> dict:
    """TOST for mean(a) − mean(b) inside (−margin, +margin): "equivalent" when Welch's
    (1 − 2α) interval lies inside the margin (both one-sided tests reject at α)."""
    ci = welch(a, b, 1 - 2 * alpha)
    inside = ci["low"] is not None and -margin < ci["low"] and ci["high"] < margin
    if ci["low"] is None:  # no spread: equivalent only if the difference itself is inside
        inside = abs(ci["difference"]) < margin
    return {"test": f"TOST, Welch, margin ±{margin:g}", "margin": margin,
            "low": ci["low"], "high": ci["high"], "interval": f"{100 * (1 - 2 * alpha):.0f}%",
            "verdict": "equivalent" if inside else "not equivalent"}


def _t_interval(values: Sequence[float]) -> dict:
    from grpolab.labs.stats import t_interval

    ci = t_interval(values)
    return {"mean": ci["mean"], "low": ci["low"], "high": ci["high"], "n": ci["n"],
            "df": ci["df"], "mde": ci.get("mde")}


def _direction(ci: Mapping, p_holm: float | None = None) -> str:
    """'higher', 'lower' or 'no detectable difference' from an interval (and Holm's p)."""
    if p_holm is not None:
        if p_holm >= ALPHA:
            return "no detectable difference"
        return "higher" if ci["difference"] > 0 else "lower"
    if ci["low"] is not None and ci["low"] > 0:
        return "higher"
    if ci["high"] is not None and ci["high"] < 0:
        return "lower"
    return "no detectable difference"


# ----------------------------------------------------------------------------- the verdicts
def _check_design(runs: Sequence[Mapping], path: str) -> list[int]:
    from grpolab._files import CorruptFileError

    seeds = sorted({int(r["seed"]) for r in runs})
    for arm in ARMS:
        have = sorted(int(r["seed"]) for r in runs if r["arm"] == arm)
        if have != seeds or len(seeds) < 2:
            raise CorruptFileError(path, f"arm {arm!r} has seeds {have}, not the design's "
                                   f"{seeds} (at least 2 each): rerun the item")
    budgets = {(r["completions"], r["steps"]) for r in runs}
    if len(budgets) != 1:
        raise CorruptFileError(path, f"the runs spent different budgets {sorted(budgets)}: "
                               "the arms must compare at matched completions")
    for r in runs:
        for when in ("initial", "final"):
            for level in (HARD, EASY):
                if level not in r[f"{when}_pass_at_k"]:
                    raise CorruptFileError(path, f"run {r['arm']} seed {r['seed']} has no "
                                           f"{when} pass@k on level {level}")
    return seeds


def verdicts(results: Mapping, path: str = "results.json") -> dict:
    """Every declared test from the allocation lab's results (read through
    :func:`grpolab.results.read_allocation_results`)."""
    from grpolab.labs.stats import holm

    runs = results["allocation_runs"]
    seeds = _check_design(runs, path)
    K = str(runs[0]["eval_samples"])
    steps, completions = runs[0]["steps"], runs[0]["completions"]
    hard1, hardK, easy1 = _pass_at("1", HARD), _pass_at(K, HARD), _pass_at("1", EASY)

    # precondition: some arm's per-seed 4-digit gain over the warm start has a CI above 0
    gains = {}
    for arm in ARMS:
        g = [hard1(r) - _pass_at("1", HARD, "initial")(r) for r in runs if r["arm"] == arm]
        gains[arm] = _t_interval(g)
    met = any(ci["low"] is not None and ci["low"] > 0 for ci in gains.values())
    precondition = {"met": met, "gain_4digit_pass_at_1": gains,
                    "rule": "some arm's 95% t interval of its 4-digit pass@1 gain over the "
                            "warm start lies above 0"}

    def contrasts(metric, pairs):
        return [(a, b, welch(per_seed(runs, a, metric), per_seed(runs, b, metric)))
                for a, b in pairs]

    rule_pairs = [(rule, "uniform") for rule in RULES]
    primary = []
    prim = contrasts(hard1, rule_pairs)
    adjusted = holm([ci["p_value"] for _, _, ci in prim])
    for (rule, _, ci), p_holm in zip(prim, adjusted, strict=True):
        tost = welch_tost(per_seed(runs, rule, hard1), per_seed(runs, "uniform", hard1))
        direction = _direction(ci, p_holm if p_holm is not None else 1.0)
        primary.append({
            "rule": rule, "metric": "4-digit pass@1", "interval": ci, "p_holm": p_holm,
            "tost": tost, "direction": direction,
            "verdict": NOT_REACHED if not met else (
                direction if direction != "no detectable difference" else
                "equivalent to uniform within ±0.005" if tost["verdict"] == "equivalent"
                else f"no detectable difference (MDE {ci['mde']:.3f})" if ci["mde"]
                else "no detectable difference")})

    def table(metric, pairs, name):
        return [{"a": a, "b": b, "metric": name, "interval": ci, "direction": _direction(ci)}
                for a, b, ci in contrasts(metric, pairs)]

    coverage = table(hardK, rule_pairs + [("variance-dr-grpo", "first-success")],
                     f"4-digit pass@{K}")
    easy = table(easy1, rule_pairs, "3-digit pass@1")
    cov = {(c["a"], c["b"]): c["interval"] for c in coverage}
    easy_by = {c["a"]: c["interval"] for c in easy}

    informative = {arm: _t_interval([r["informative_groups_per_step"] for r in runs
                                     if r["arm"] == arm]) for arm in ARMS}
    spend = {arm: {lv: _t_interval([r["completions_by_level"][lv] / r["completions"]
                                    for r in runs if r["arm"] == arm])["mean"]
                   for lv in sorted(runs[0]["completions_by_level"])} for arm in ARMS}

    persistence = {}
    for arm in ARMS:
        mine = [r["zero_variance"] for r in runs if r["arm"] == arm]
        usable = [z for z in mine if z["persistence"] is not None and z["base_rate"] is not None]
        row = {"seeds": len(usable),
               "persistence": _t_interval([z["persistence"] for z in usable]) if usable else None,
               "base_rate": _t_interval([z["base_rate"] for z in usable]) if usable else None}
        if len(usable) >= 2:
            row["minus_base_rate"] = _t_interval([z["persistence"] - z["base_rate"]
                                                  for z in usable])
            pred = [z for z in usable if z.get("predicted") is not None]
            if len(pred) >= 2:
                row["predicted"] = _t_interval([z["predicted"] for z in pred])
                row["minus_predicted"] = _t_interval([z["persistence"] - z["predicted"]
                                                      for z in pred])
        above = row.get("minus_base_rate", {}).get("low")
        row["above_base_rate"] = above is not None and above > 0
        agree = row.get("minus_predicted")
        row["agrees_with_prediction"] = (agree is not None and agree["low"] is not None
                                         and agree["low"] <= 0 <= agree["high"])
        persistence[arm] = row
    pool_prediction = {arm: [r["pool_persistence_at_G"] for r in runs if r["arm"] == arm][0]
                       for arm in ARMS}

    def crit(ci, side):
        return ci[side] is not None and (ci[side] < 0 if side == "high" else ci[side] > 0)

    refuting = [
        {"outcome": f"the 95% CI of (first-success - uniform) on 4-digit pass@{K} lies below "
                    "0: giving hard prompts more rollouts loses coverage",
         "interval": cov[("first-success", "uniform")],
         "observed": crit(cov[("first-success", "uniform")], "high")},
        {"outcome": f"the 95% CI of (variance-dr-grpo - first-success) on 4-digit pass@{K} "
                    "lies above 0: the variance school wins on the coverage-limited half",
         "interval": cov[("variance-dr-grpo", "first-success")],
         "observed": crit(cov[("variance-dr-grpo", "first-success")], "low")},
        {"outcome": "zero-variance persistence is not above its base rate (CI includes or lies "
                    "below it) in some arm",
         "interval": min((p["minus_base_rate"] for p in persistence.values()
                          if "minus_base_rate" in p),
                         key=lambda ci: -math.inf if ci["low"] is None else ci["low"]),
         "observed": not all(p["above_base_rate"] for p in persistence.values())},
    ]
    if not met:  # the coverage outcomes need learning on the hard half; persistence does not
        for r in refuting[:2]:
            r["observed"] = False
            r["note"] = NOT_REACHED

    signal_up = [crit(cov[(rule, "uniform")], "low") for rule in ("first-success",
                                                                   "informative")]
    var_easy = easy_by["variance-dr-grpo"]
    var_vs_fs = cov[("variance-dr-grpo", "first-success")]
    predictions = {
        "signal_school": {
            "prediction": "first-success and informative beat uniform on 4-digit pass@k "
                          "(coverage) at matched completions",
            "verdict": NOT_REACHED if not met else "refuted" if refuting[0]["observed"] else
            "supported" if all(signal_up) else "not shown"},
        "variance_school": {
            "prediction": "variance-dr-grpo is at least as good as uniform on 3-digit pass@1 "
                          "and worse than first-success on 4-digit pass@k",
            "non_inferior_3digit": var_easy["low"] is not None and var_easy["low"] > -MARGIN,
            "worse_than_first_success": crit(var_vs_fs, "high"),
            "verdict": NOT_REACHED if not met else "refuted" if refuting[1]["observed"] else
            "supported" if (var_easy["low"] is not None and var_easy["low"] > -MARGIN
                            and crit(var_vs_fs, "high")) else "not shown"},
        "greso_premise": {
            "prediction": "zero-variance persistence exceeds its base rate in every arm and "
                          "agrees with the census's fixed-pass-rate prediction",
            "verdict": "refuted" if refuting[2]["observed"] else
            "supported" if all(p["agrees_with_prediction"] for p in persistence.values())
            else "above the base rate, but not the fixed-pass-rate prediction"},
    }
    return {
        "experiment": "allocation", "declared": "declared.json", "deviations": "deviations.md",
        "compute_held_fixed": f"{completions // steps} completions per step for {steps} steps "
                              f"({completions:,} completions per run) in every arm",
        "steps": steps, "completions": completions, "seeds": seeds, "k": int(K),
        "margin": MARGIN, "declared_mde": DECLARED_MDE,
        "levels": {arm: {name: _t_interval(list(per_seed(runs, arm, m).values()))
                         for name, m in (("4-digit pass@1", hard1),
                                         (f"4-digit pass@{K}", hardK),
                                         ("3-digit pass@1", easy1))} for arm in ARMS},
        "precondition": precondition, "primary": primary, "coverage": coverage,
        "easy": easy, "informative_groups_per_step": informative,
        "completions_share_by_level": spend, "persistence": persistence,
        "pool_persistence_prediction": pool_prediction,
        "refuting_outcomes": refuting, "predictions": predictions,
    }


def plot_allocation(results: Mapping, verdicts_: Mapping):
    """The lab's figure: final 4-digit pass@1 and pass@k per arm (one dot per seed, the
    mean with its 95% t interval over seeds), then each arm's zero-variance persistence
    beside its base rate and the census's fixed-pass-rate prediction (means with 95% t
    intervals), all at matched completions."""
    import matplotlib.pyplot as plt

    from grpolab.labs.common import FIGURE_STYLE, FIGURE_WIDTH

    runs = results["allocation_runs"]
    K = str(verdicts_["k"])
    x = range(len(ARMS))
    with plt.rc_context(FIGURE_STYLE):
        fig, axes = plt.subplots(3, 1, figsize=(FIGURE_WIDTH, 8.4))
        for ax, k, label in ((axes[0], "1", "4-digit pass@1"),
                             (axes[1], K, f"4-digit pass@{K}")):
            for i, arm in enumerate(ARMS):
                vals = list(per_seed(runs, arm, _pass_at(k, HARD)).values())
                ax.scatter([i] * len(vals), vals, s=14, color="tab:grey", alpha=0.7,
                           label="one seed" if i == 0 else None, zorder=2)
                ci = _t_interval(vals)
                ax.errorbar([i + 0.15], [ci["mean"]], fmt="o", color="black", capsize=4,
                            yerr=[[ci["mean"] - ci["low"]], [ci["high"] - ci["mean"]]],
                            label="mean, 95% t interval" if i == 0 else None, zorder=3)
            start = float(sum(_pass_at(k, HARD, "initial")(r) for r in runs) / len(runs))
            ax.axhline(start, color="tab:blue", lw=0.8, ls=":", label="warm start")
            ax.set_xticks(list(x), list(ARMS))
            ax.set_ylabel(label)
            ax.legend(fontsize=8, loc="best")
        ax = axes[2]
        pers = verdicts_["persistence"]
        for i, arm in enumerate(ARMS):
            row = pers[arm]
            for dx, key, color, name in ((-0.15, "persistence", "black",
                                          "P(zero var. | zero var. at last visit)"),
                                         (0.0, "predicted", "tab:green",
                                          "census prediction, fixed p"),
                                         (0.15, "base_rate", "tab:red", "base rate P(zero var.)")):
                ci = row.get(key)
                if not ci:
                    continue
                err = ([[ci["mean"] - ci["low"]], [ci["high"] - ci["mean"]]]
                       if ci["low"] is not None else None)
                ax.errorbar([i + dx], [ci["mean"]], yerr=err, fmt="o", color=color,
                            capsize=3, label=name if i == 0 else None)
        ax.set_xticks(list(x), list(ARMS))
        ax.set_ylabel("zero-variance share")
        ax.margins(y=0.15)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(0.0, 0.45))
        fig.tight_layout()
    return fig


def write_verdicts(folder: str | os.PathLike) -> dict:
    """Read ``folder/results.json`` through its checked reader, compute :func:`verdicts`,
    write ``folder/verdicts.json``; return the verdicts."""
    from grpolab.grpo.records import write_json_atomic
    from grpolab.results import read_allocation_results

    folder = os.fspath(folder)
    path = os.path.join(folder, "results.json")
    out = verdicts(read_allocation_results(path), path)
    write_json_atomic(os.path.join(folder, "verdicts.json"), out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m grpolab.labs.allocation_lab FOLDER``: write FOLDER/verdicts.json."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m grpolab.labs.allocation_lab FOLDER  (the folder holding the "
              "allocation lab's results.json, e.g. labs/results/allocation)", file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(args[0], "results.json")):
        print(f"error: {args[0]} holds no results.json (run grpolab remedies --item "
              "allocation --publish FOLDER first)", file=sys.stderr)
        return 2
    try:
        out = write_verdicts(args[0])
    except ValueError as exc:  # a CorruptFileError names the file and the field
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for row in out["primary"]:
        ci = row["interval"]
        lo = "n/a" if ci["low"] is None else f"[{ci['low']:+.4f}, {ci['high']:+.4f}]"
        holm_p = "n/a" if row["p_holm"] is None else f"{row['p_holm']:.3f}"
        print(f"{row['rule']:>17} - uniform, 4-digit pass@1: {ci['difference']:+.4f} {lo} "
              f"(Holm p {holm_p}): {row['verdict']}  [at matched completions: "
              f"{out['compute_held_fixed']}]")
    print(f"wrote {os.path.join(args[0], 'verdicts.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
