"""Design B, a coverage-limited pool (labs/results/design-b/declared.json,
book/labs/08-coverage-pool.md): is the best G larger on 4-digit sums (warm-start p ≈ 0.009,
most never solved) than on 3-digit sums (p ≈ 0.48), as the book's own G* says?

Three parts, in the order the declaration fixes:

- :func:`measure_noise_by_level` and :func:`predict`, before any training: the gradient
  noise of each level at the warm start in leave-one-out units and the G* it implies
  (``noise-by-level/gradient_noise.json``, ``prediction.json``);
- :func:`level_results`, after the sweep (``grpolab lab sweep --preset design-b``): from the
  runs' logs, per level and checkpoint, held-out pass@k and the distinct training prompts
  solved so far (``by_level.json``, small enough to commit; the logs are not);
- :func:`verdicts`: every declared test from the committed files, each with its interval
  and minimum detectable effect (MDE), whatever the data say (``verdicts.json``).

The rules are those of ``labs/results/design-b/deviations.md`` (committed before any run).
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

__all__ = ["LEVELS", "HARD_LEVEL", "EASY_LEVEL", "NOISE_REGIMES", "measure_noise_by_level",
           "unbounded_bootstrap", "predict", "level_results", "precondition", "slope_verdict",
           "easy_slope_verdict",
           "interaction", "coverage_contrasts", "mechanism", "verdicts", "write_verdicts",
           "plot_design_b", "plot_coverage", "design_verdict", "MARGIN", "SOLVED_STRIDE"]

#: The pool's two levels: 3-digit sums (the contrast) and 4-digit sums (coverage-limited).
EASY_LEVEL, HARD_LEVEL = 3, 4
LEVELS = (EASY_LEVEL, HARD_LEVEL)
#: The noise measurement's one-level regimes (names of ``noise-by-level/gradient_noise.json``).
NOISE_REGIMES = {EASY_LEVEL: "3-digit", HARD_LEVEL: "4-digit"}
#: Gradient-noise batches per (level, G), as declared.
NOISE_BATCHES = 64
#: The declared TOST margin of every slope and of the interaction (pass@1 per doubling of G).
MARGIN = 0.005
#: The k of the coverage test (pass@64 on 4-digit sums: 5-digit answers, so guessing is far
#: below 1/64).
COVERAGE_K = 64
#: The distinct-prompts-solved curve keeps every this many steps (and the last).
SOLVED_STRIDE = 16
#: Files of a design-b results folder.
NOISE_FILE = os.path.join("noise-by-level", "gradient_noise.json")
PREDICTION_FILE = "prediction.json"
LEVELS_FILE = "by_level.json"


# ----------------------------------------------------------------------------- before training
def _noise_preset(batches: int = NOISE_BATCHES):
    """The preset ``design-b`` with one one-level regime per level (the same config
    restricted to that level) and ``batches`` gradient-noise batches per G."""
    from dataclasses import replace

    from grpolab.labs.sweep.presets import PRESETS, Regime

    preset = PRESETS["design-b"]
    budget = preset.regimes[0].budget
    regimes = [Regime(NOISE_REGIMES[lvl], [lvl], budget=budget) for lvl in LEVELS]
    return replace(preset, regimes=regimes, noise_batches=batches).validate()


def measure_noise_by_level(out: str, *, batches: int = NOISE_BATCHES, progress: bool = True,
                           log=print) -> dict:
    """Measure the warm-start gradient noise of each level on its own and write it to
    ``OUT/noise-by-level/gradient_noise.json`` (rows per one-level regime, the sweep's
    format; rows already there and made from the same inputs are kept).

    The warm start is the sweep's (cached in ``OUT/cache`` with the preset's thread count,
    so ``grpolab lab sweep --preset design-b --out OUT`` reuses it)."""
    import time

    import torch

    from grpolab.grpo.setup import load_policy
    from grpolab.labs.sweep.sweep import _read_noise, update_noise
    from grpolab.models.device import resolve_device
    from grpolab.tasks.registry import get_task

    preset = _noise_preset(batches)
    if preset.torch_threads:  # as the sweep: the thread count is part of the warm start's key
        torch.set_num_threads(preset.torch_threads)
    start = time.time()
    cfg = preset.run_config(preset.regimes[0], preset.group_sizes[0], preset.seeds[0])
    device = resolve_device(cfg.device)
    model, tokenizer = load_policy(cfg, os.path.join(out, "cache"), device, progress)[:2]
    log(f"warm start ready after {time.time() - start:.0f} s")
    task = get_task(cfg.task, **cfg.task_kwargs)
    path = os.path.join(out, NOISE_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    noise = _read_noise(path)
    for regime in preset.regimes:
        rows = update_noise(noise, path, preset, regime, model, tokenizer, task)
        log(f"{regime.name}: {len(rows)} rows after {time.time() - start:.0f} s")
    return noise


def _rule_of_thumb(census_path: str) -> dict:
    """The declaration's G* ≈ 1 + 1/√(mean p) per level, on the committed census of the
    standard warm start (labs/results/census-by-level)."""
    from grpolab.grpo.records import read_json

    doc = read_json(census_path, "the census by level", keys=("cells",))
    out = {}
    for cell in doc["cells"]:
        if cell.get("warmstart_steps") == 1500 and cell.get("level") in LEVELS:
            p = float(cell["mean"])
            out[str(cell["level"])] = {"mean_p": p, "prompts": cell.get("prompts"),
                                       "g_star": 1 + 1 / math.sqrt(p) if p > 0 else None}
    return out


def unbounded_bootstrap(rows: list[dict], *, advantage_baseline: str, n_boot: int = 500,
                        seed: int = 0) -> dict:
    """G* over bootstrap resamples of every row's batches (their Gram matrices), counting a
    draw whose fit puts c₁ = 0 (the noise does not level off in B, so the exact model's
    MSE falls with G at every G) as G* = ∞ instead of dropping it. Returns the share of
    unbounded draws and the 2.5% and 97.5% quantiles (None where the quantile is ∞)."""
    from grpolab.advise import fit_noise_constants
    from grpolab.grpo.measure import noise_from_gram

    grams = [np.asarray(r["gram"], dtype=float) for r in rows if r.get("gram") is not None]
    if len(grams) != len(rows) or not rows:
        return {"draws": 0}
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        boot = []
        for r, K in zip(rows, grams, strict=True):
            idx = rng.integers(0, K.shape[0], K.shape[0])
            st = noise_from_gram(K[np.ix_(idx, idx)])
            boot.append({**r, "trace_variance": st["trace_variance"],
                         "mean_gradient_norm_sq": st["mean_gradient_norm_sq"]})
        try:
            draws.append(fit_noise_constants(boot, "bootstrap",
                                             advantage_baseline=advantage_baseline).g_star)
        except ValueError as exc:
            if "c1 is 0" not in str(exc):
                continue  # another refusal (no variance): not a statement about G*
            draws.append(math.inf)
    if not draws:
        return {"draws": 0}
    d = np.sort(np.asarray(draws))
    lo, hi = (float(np.quantile(d, q, method="inverted_cdf")) for q in (0.025, 0.975))
    return {"draws": len(d), "unbounded_share": float(np.mean(np.isinf(d))),
            "low": lo if math.isfinite(lo) else None, "high": hi if math.isfinite(hi) else None}


def predict(out: str, census_path: str | None = None) -> dict:
    """The predicted G* per level from ``OUT/noise-by-level/gradient_noise.json``: the exact
    model fitted in leave-one-out units (:func:`grpolab.labs.sweep.compute_axis.noise_g_star`,
    with its bootstrap range), or the fit's refusal in words; beside it the rule of thumb
    1 + 1/√(mean p). Written to ``OUT/prediction.json`` by :func:`main_noise`."""
    from grpolab.labs.common import committed_results_dir
    from grpolab.labs.sweep.compute_axis import noise_g_star
    from grpolab.results import read_results

    noise = read_results(os.path.join(out, NOISE_FILE), "gradient_noise.json")
    if census_path is None:
        census_path = os.path.join(committed_results_dir("labs/results/census-by-level"),
                                   "census_by_level.json")
    thumb = _rule_of_thumb(census_path)
    levels = {}
    for lvl in LEVELS:
        rows = noise.get(NOISE_REGIMES[lvl], [])
        entry: dict = {"regime": NOISE_REGIMES[lvl], "G": [int(r["G"]) for r in rows],
                       "prompts_per_step": [r.get("prompts_per_step") for r in rows],
                       "batches": [r.get("batches") for r in rows],
                       "zero_variance_fraction": [r.get("zero_variance_fraction") for r in rows],
                       "noise_to_signal": [r.get("noise_to_signal") for r in rows]}
        baseline = {r.get("advantage_baseline", "leave_one_out") for r in rows}
        units = baseline.pop() if len(baseline) == 1 else "leave_one_out"
        try:
            fit = noise_g_star(rows, advantage_baseline=units)
            entry.update({k: fit[k] for k in ("g_star", "range", "c1", "c2", "c3", "signal",
                                              "max_rel_residual", "notes", "units")})
        except ValueError as exc:  # the fit refuses (c1 = 0, too few points): said, not guessed
            entry.update(g_star=None, range=None, error=str(exc))
        entry["bootstrap"] = unbounded_bootstrap(rows, advantage_baseline=units)
        # at a fixed budget the leave-one-out estimator's mean does not depend on G, so the
        # G with the smallest measured trace variance is the measured best of the grid
        tv = {int(r["G"]): float(r["trace_variance"]) for r in rows}
        entry["trace_variance_by_G"] = tv
        entry["least_noise_G"] = min(tv, key=tv.get) if tv else None
        entry["rule_of_thumb"] = thumb.get(str(lvl))
        levels[str(lvl)] = entry
    return {"what": "design B's predicted G* per level, written before any training run",
            "levels": levels,
            "how": "gradient noise at the warm start, 64 batches per (level, G), G in 2 8 32 at "
                   "256 completions per step, the runs' estimator (leave-one-out, dr_grpo, "
                   "scale_rewards none); the exact model MSE = c1/B + c2/(BG) + c3/(BG(G-1)) "
                   "fitted in leave-one-out units (grpolab.advise.fit_noise_constants), "
                   "G* = 1 + sqrt(c3/c1), range: 500-draw bootstrap over batches; "
                   "'bootstrap': the same draws with a fit that puts c1 = 0 counted as "
                   "G* = infinity (null: an unbounded quantile); least_noise_G: the grid's G "
                   "with the smallest measured trace variance at the fixed budget; rule of "
                   "thumb 1 + 1/sqrt(mean p) on labs/results/census-by-level"}


def main_noise(out: str) -> dict:
    """``python -m grpolab.labs.design_b --noise OUT``: measure, fit, write
    ``OUT/prediction.json``."""
    import time

    from grpolab.grpo.records import git_commit, write_json_atomic

    start = time.time()
    measure_noise_by_level(out)
    result = predict(out)
    result.update(seconds=time.time() - start, git_commit=git_commit(),
                  written=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  command=f"python -m grpolab.labs.design_b --noise {out}")
    write_json_atomic(os.path.join(out, PREDICTION_FILE), result)
    return result


# ----------------------------------------------------------------------------- after the sweep
def level_results(out: str, preset=None) -> dict:
    """Per run of the sweep in ``out`` (``grpolab lab sweep --preset design-b``), from its
    ``log.jsonl``: held-out pass@k per level at every checkpoint (the unbiased estimate from
    the evaluation's per-prompt successes, :func:`grpolab.theory.pass_at_k`) and, every
    :data:`SOLVED_STRIDE` steps, the distinct training prompts of each level with at least
    one success so far (``solved``: None when the log has no ``solved_prompts``)."""
    from grpolab.grpo.config import training_prompts
    from grpolab.grpo.records import CorruptFileError, finished_run
    from grpolab.labs.sweep.compute_axis import K_VALUES, pass_at_k_curve
    from grpolab.labs.sweep.presets import PRESETS
    from grpolab.labs.sweep.sweep import _run_dir
    from grpolab.tasks.registry import get_task

    preset = preset or PRESETS["design-b"]
    regime = preset.regimes[0]
    levels = [int(x) for x in regime.train_difficulties]
    task = get_task(preset.config.task, **preset.config.task_kwargs)
    runs = []
    for G in preset.group_sizes:
        for seed in preset.seeds:
            cfg = preset.run_config(regime, G, seed)
            folder = _run_dir(out, regime, G, seed)
            # the config as a dict: its fields are compared, not the warm start's key, which
            # holds the torch thread count of the process that asks (the sweep checked it)
            summary = finished_run(folder, cfg.to_dict(), check_log=True)
            if summary is None:
                continue
            train, evals = training_prompts(cfg, task)
            eval_level = np.array([p.difficulty for p in evals])
            train_level = [int(p.difficulty) for p in train]
            log_path = os.path.join(folder, "log.jsonl")
            checkpoints, solved, seen = [], [], {lvl: set() for lvl in levels}
            has_solved = any("solved_prompts" in r for r in summary["_log"] if r["step"] > 0)
            last = summary["_log"][-1]["step"]
            for rec in summary["_log"]:
                if "eval_sampled_successes" in rec:
                    c = np.asarray(rec["eval_sampled_successes"], dtype=int)
                    if c.shape != (len(evals),) or c.min() < 0 or c.max() > cfg.eval_samples:
                        raise CorruptFileError(log_path, f"step {rec['step']}: "
                                               "eval_sampled_successes does not match the "
                                               f"{len(evals)} held-out prompts")
                    checkpoints.append({"step": rec["step"], "completions": rec["completions"],
                                        "by_level": {str(lvl): {
                                            "prompts": int((eval_level == lvl).sum()),
                                            "pass_at_k": {str(k): v for k, v in pass_at_k_curve(
                                                c[eval_level == lvl], cfg.eval_samples,
                                                K_VALUES).items()}}
                                            for lvl in levels}})
                if has_solved and rec["step"] > 0:
                    for i in rec.get("solved_prompts", []):
                        if not 0 <= int(i) < len(train):
                            raise CorruptFileError(log_path, f"step {rec['step']}: solved "
                                                   f"prompt {i} is not a training prompt")
                        seen[train_level[int(i)]].add(int(i))
                    if rec["step"] % SOLVED_STRIDE == 0 or rec["step"] == last:
                        solved.append({"step": rec["step"], "completions": rec["completions"],
                                       "by_level": {str(lvl): len(seen[lvl]) for lvl in levels}})
            runs.append({"G": int(G), "seed": int(seed), "samples": cfg.eval_samples,
                         "checkpoints": checkpoints, "solved": solved if has_solved else None,
                         "training_prompts_by_level": {str(lvl): train_level.count(lvl)
                                                       for lvl in levels}})
    return {"preset": preset.name, "levels": levels, "runs": runs,
            "runs_finished": len(runs),
            "runs_planned": len(preset.group_sizes) * len(preset.seeds),
            "made_by": "grpolab.labs.design_b.level_results (from each run's log.jsonl)"}


def _tables(levels_doc: dict) -> dict:
    """``{"initial"|"final": {level: {G: {seed: pass@1}}}, "coverage": {G: {seed: pass@64}},
    "solved": {level: {G: {seed: count}}} or None}`` from ``by_level.json``."""
    out: dict = {"initial": {}, "final": {}, "coverage": {}, "solved": {}}
    for run in levels_doc["runs"]:
        G, s = int(run["G"]), int(run["seed"])
        cps = sorted(run["checkpoints"], key=lambda c: c["step"])
        if not cps:
            continue
        for when, cp in (("initial", cps[0]), ("final", cps[-1])):
            for lvl, v in cp["by_level"].items():
                out[when].setdefault(int(lvl), {}).setdefault(G, {})[s] = float(v["pass_at_k"]["1"])
        hard = cps[-1]["by_level"].get(str(HARD_LEVEL), {}).get("pass_at_k", {})
        if str(COVERAGE_K) in hard:
            out["coverage"].setdefault(G, {})[s] = float(hard[str(COVERAGE_K)])
        if run.get("solved") and out["solved"] is not None:
            final = max(run["solved"], key=lambda p: p["step"])
            for lvl, n in final["by_level"].items():
                out["solved"].setdefault(int(lvl), {}).setdefault(G, {})[s] = int(n)
        else:
            out["solved"] = None
    return out


def precondition(initial: dict, final: dict, confidence: float = 0.95) -> dict:
    """The declared precondition on 4-digit pass@1: per G, the per-seed change from the
    run's own warm-start evaluation to its last one, a t interval over seeds. It holds when
    some G's interval lies above 0; else the design's verdict is "no learning".
    ``initial``/``final``: ``{G: {seed: pass@1}}`` of the 4-digit level."""
    from grpolab.labs.stats import t_interval

    by_G = {}
    for G in sorted(final):
        seeds = sorted(set(final[G]) & set(initial.get(G, {})))
        if not seeds:
            continue
        ci = t_interval([final[G][s] - initial[G][s] for s in seeds], confidence)
        by_G[int(G)] = {"change": ci["mean"], "low": ci["low"], "high": ci["high"],
                        "seeds": seeds}
    holds = any(v["low"] is not None and v["low"] > 0 for v in by_G.values())
    return {"holds": holds, "by_G": by_G,
            "rule": "some G's 95% interval of the change in 4-digit pass@1 from the warm "
                    "start lies above 0"}


def _slope(table: dict, Gs=None) -> dict:
    """The per-seed slope on log₂ G (over ``Gs``, default all) with its TOST at
    :data:`MARGIN`."""
    from grpolab.labs.stats import tost, trend_in_log2_G

    sub = {G: v for G, v in table.items() if Gs is None or G in Gs}
    trend = trend_in_log2_G(sub)
    trend["tost"] = tost(trend["per_seed_slopes"], MARGIN)
    return trend


def slope_verdict(trend: dict) -> str:
    """A slope on log₂ G in words: "rises" (interval above 0), "falls" (below 0),
    "equivalent" (TOST at :data:`MARGIN`), else "inconclusive"."""
    if trend["low"] is not None and trend["low"] > 0:
        return "rises"
    if trend["high"] is not None and trend["high"] < 0:
        return "falls"
    if trend["tost"]["verdict"] == "equivalent":
        return "equivalent"
    return "inconclusive"


def easy_slope_verdict(trend: dict) -> str:
    """The 3-digit prediction "slope ≤ 0": "supported" when the interval lies below 0 or
    the slope is equivalent to 0 at :data:`MARGIN`, "contradicted" when it lies above 0,
    else "inconclusive"."""
    words = slope_verdict(trend)
    return {"falls": "supported", "equivalent": "supported",
            "rises": "contradicted"}.get(words, "inconclusive")


def interaction(hard: dict, easy: dict, *, declared_mde: float | None = None,
                confidence: float = 0.95) -> dict:
    """The level × G interaction: per seed, the 4-digit slope on log₂ G minus the 3-digit
    one (both over every G), a paired t over the seeds that ran every (level, G), TOST at
    :data:`MARGIN`. "supported" (interval above 0), "refuted" (below 0), "equivalent", else
    "inconclusive". ``hard``/``easy``: ``{G: {seed: final pass@1}}``."""
    from grpolab.labs.stats import direction_verdict, trend_in_log2_G

    Gs = sorted(set(hard) & set(easy))
    if len(Gs) < 2:
        raise ValueError(f"the interaction needs >= 2 G run on both levels, got {Gs}")
    seeds = sorted(set.intersection(*(set(hard[G]) & set(easy[G]) for G in Gs)))
    if len(seeds) < 2:
        raise ValueError(f"the interaction needs >= 2 seeds that ran every G, got {seeds}")
    h = trend_in_log2_G({G: {s: hard[G][s] for s in seeds} for G in Gs})
    e = trend_in_log2_G({G: {s: easy[G][s] for s in seeds} for G in Gs})
    per_seed = [a - b for a, b in zip(h["per_seed_slopes"], e["per_seed_slopes"], strict=True)]
    verdict, ci, eq = direction_verdict(per_seed, MARGIN, confidence)
    return {"verdict": verdict, "mean": ci["mean"], "low": ci["low"], "high": ci["high"],
            "confidence": confidence, "seeds": seeds, "G": Gs, "per_seed": per_seed,
            "mde": ci.get("mde"), "declared_mde": declared_mde, "tost": eq}


def coverage_contrasts(coverage: dict) -> dict:
    """4-digit pass@64 at G ≥ 8 against G = 2: paired t over seeds of each larger G minus
    G = 2. "supported" when every interval lies above 0, "contradicted" when one lies below
    0, else "inconclusive". ``coverage``: ``{G: {seed: final 4-digit pass@64}}``."""
    from grpolab.labs.stats import contrast

    if 2 not in coverage or not any(G >= 8 for G in coverage):
        return {"verdict": "not run", "why": "needs G = 2 and some G >= 8"}
    pairs = {}
    for G in sorted(G for G in coverage if G >= 8):
        seeds = sorted(set(coverage[G]) & set(coverage[2]))
        pairs[int(G)] = contrast({s: coverage[G][s] for s in seeds},
                                 {s: coverage[2][s] for s in seeds})
    lows = [c["low"] for c in pairs.values()]
    highs = [c["high"] for c in pairs.values()]
    if any(h is not None and h < 0 for h in highs):
        verdict = "contradicted"
    elif all(lo is not None and lo > 0 for lo in lows):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    return {"verdict": verdict, "k": COVERAGE_K, "vs_G2": pairs}


def mechanism(solved: dict | None) -> dict:
    """The declared mechanism check, reported without a verdict (deviations.md, item 4):
    the distinct 4-digit training prompts with ≥ 1 success by the end of each run (the same
    completions at every G), their mean per G, and the per-seed slope on log₂ G in words."""
    from grpolab.labs.stats import trend_direction, trend_in_log2_G

    if not solved or HARD_LEVEL not in solved:
        return {"verdict": "not measured",
                "why": "the runs' logs record no solved_prompts"}
    table = solved[HARD_LEVEL]
    trend = trend_in_log2_G({G: {s: float(n) for s, n in v.items()} for G, v in table.items()})
    return {"verdict": "reported, no declared test", "trend": trend,
            "words": trend_direction(trend),
            "mean_by_G": {int(G): float(np.mean(list(v.values()))) for G, v in
                          sorted(table.items())},
            "easy_mean_by_G": {int(G): float(np.mean(list(v.values()))) for G, v in
                               sorted(solved.get(EASY_LEVEL, {}).items())}}


def design_verdict(pre: dict, hard_words: str, hard_trend: dict, inter: dict) -> str:
    """The design's verdict (deviations.md, item 6): "no learning" when the precondition
    fails; "refuted" when the 4-digit slope's or the interaction's interval lies below 0;
    "supported" when the interaction's lies above 0 and the 4-digit slope rises; else
    "inconclusive"."""
    if not pre["holds"]:
        return "no learning"
    if hard_words == "falls" or inter.get("verdict") == "refuted":
        return "refuted"
    if inter.get("verdict") == "supported" and hard_words == "rises":
        return "supported"
    return "inconclusive"


def verdicts(out: str) -> dict:
    """Every declared verdict of design B from the committed files in ``out``
    (``declared.json``, ``by_level.json``, ``prediction.json``), read through the package's
    checked readers."""
    from grpolab.grpo.records import read_json
    from grpolab.results import read_by_level

    declared = read_json(os.path.join(out, "declared.json"), "design B's declaration",
                         keys=("minimum_detectable_effect",))
    declared_mde = declared["minimum_detectable_effect"].get("interaction_per_doubling")
    doc = read_by_level(out)
    t = _tables(doc)
    hard, easy = t["final"].get(HARD_LEVEL, {}), t["final"].get(EASY_LEVEL, {})
    pre = precondition(t["initial"].get(HARD_LEVEL, {}), hard)
    result: dict = {"precondition": pre, "runs_finished": doc.get("runs_finished"),
                    "runs_planned": doc.get("runs_planned"),
                    "metric": "final held-out pass@1 per level (unbiased, 64 samples)",
                    "compute_held_fixed": "a fixed budget of 256 completions per step, 512 "
                                          "steps (131,072 completions per run)"}
    try:
        hard_trend, easy_trend = _slope(hard), _slope(easy)
        inter = interaction(hard, easy, declared_mde=declared_mde)
    except ValueError as exc:  # runs missing: said, not guessed
        result.update(verdict="not run", why=str(exc))
        return result
    hard_words = slope_verdict(hard_trend)
    secondary = _slope(hard, Gs={2, 8}) if {2, 8} <= set(hard) else None
    result.update(
        hard_slope={**hard_trend, "verdict": hard_words},
        easy_slope={**easy_trend, "verdict": easy_slope_verdict(easy_trend)},
        hard_slope_2_8=secondary, interaction=inter,
        coverage=coverage_contrasts(t["coverage"]), mechanism=mechanism(t["solved"]),
        means={str(lvl): {"warm_start": float(np.mean([v for by in t["initial"][lvl].values()
                                                        for v in by.values()])),
                          "final_by_G": {int(G): float(np.mean(list(v.values())))
                                         for G, v in sorted(t["final"][lvl].items())}}
               for lvl in sorted(t["final"])},
        coverage_means={int(G): float(np.mean(list(v.values())))
                        for G, v in sorted(t["coverage"].items())},
        verdict=design_verdict(pre, hard_words, hard_trend, inter))
    pred_path = os.path.join(out, PREDICTION_FILE)
    if os.path.isfile(pred_path):
        pred = read_json(pred_path, "design B's prediction", keys=("levels",))
        result["predicted_g_star"] = {lvl: e.get("g_star") for lvl, e in pred["levels"].items()}
    return result


def write_verdicts(out: str) -> dict:
    """``python -m grpolab.labs.design_b OUT``: ``OUT/by_level.json`` from the run logs when
    they are there (else the committed one is kept), then :func:`verdicts` of ``OUT``
    written to ``OUT/verdicts.json`` (tests/test_design_b.py recomputes it)."""
    from grpolab.grpo.records import write_json_atomic

    if os.path.isdir(os.path.join(out, "runs")):
        write_json_atomic(os.path.join(out, LEVELS_FILE), level_results(out))
    result = {**verdicts(out), "made_by": f"python -m grpolab.labs.design_b {out}"}
    write_json_atomic(os.path.join(out, "verdicts.json"), json.loads(json.dumps(result)))
    return result


def plot_design_b(levels_doc: dict):
    """Design B's figure at a fixed budget of 256 completions per step: final held-out
    pass@1 on 3-digit and on 4-digit sums, and 4-digit pass@64, against G; one dot per seed,
    the seed mean with its 95% t interval, the warm start dashed."""
    import matplotlib.pyplot as plt

    from grpolab.labs.common import FIGURE_STYLE, FIGURE_WIDTH
    from grpolab.labs.stats import t_interval

    t = _tables(levels_doc)
    warm_cov = [float(c["checkpoints"][0]["by_level"][str(HARD_LEVEL)]["pass_at_k"]
                      [str(COVERAGE_K)]) for c in levels_doc["runs"] if c["checkpoints"]]
    panels = [("3-digit pass@1", t["final"].get(EASY_LEVEL, {}),
               [v for by in t["initial"].get(EASY_LEVEL, {}).values() for v in by.values()]),
              ("4-digit pass@1", t["final"].get(HARD_LEVEL, {}),
               [v for by in t["initial"].get(HARD_LEVEL, {}).values() for v in by.values()]),
              (f"4-digit pass@{COVERAGE_K}", t["coverage"], warm_cov)]
    with plt.rc_context(FIGURE_STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH, 3.0))
        for ax, (title, table, warm) in zip(axes, panels, strict=True):
            Gs = sorted(table)
            for G in Gs:  # seeds beside the mean, spread a little so none hides another
                vals = list(table[G].values())
                offsets = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else [0.0]
                ax.scatter([G * 2 ** (0.25 + o) for o in offsets], vals, s=14, alpha=0.6,
                           color="tab:blue")
            cis = [t_interval(list(table[G].values())) for G in Gs]
            means = [c["mean"] for c in cis]
            err = [[m - (c["low"] if c["low"] is not None else m) for m, c in zip(means, cis,
                                                                                 strict=True)],
                   [(c["high"] if c["high"] is not None else m) - m for m, c in zip(means, cis,
                                                                                   strict=True)]]
            ax.errorbar(Gs, means, yerr=err, color="black", marker="o", capsize=3)
            if warm:
                ax.axhline(float(np.mean(warm)), color="grey", ls="--", lw=1)
            ax.set_xscale("log", base=2)
            ax.set_xticks(Gs, [str(G) for G in Gs])
            ax.set_title(title)
            ax.set_xlabel("G")
        axes[0].set_ylabel("held out, final")
        fig.tight_layout()
    return fig


def plot_coverage(levels_doc: dict):
    """Distinct 4-digit training prompts with ≥ 1 success against completions consumed, one
    line per run, coloured by G (the mechanism check; nothing drawn without it)."""
    import matplotlib.pyplot as plt

    from grpolab.labs.common import FIGURE_STYLE, FIGURE_WIDTH

    colors = {2: "tab:blue", 8: "tab:orange", 32: "tab:green"}
    with plt.rc_context(FIGURE_STYLE):
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 3.2))
        done = set()
        for run in levels_doc["runs"]:
            if not run.get("solved"):
                continue
            G = int(run["G"])
            xs = [p["completions"] for p in run["solved"]]
            ys = [p["by_level"][str(HARD_LEVEL)] for p in run["solved"]]
            ax.plot(xs, ys, color=colors.get(G, "black"), lw=1,
                    label=f"G = {G}" if G not in done else None)
            done.add(G)
        ax.set_xlabel("training completions consumed (256 per step)")
        ax.set_ylabel("4-digit prompts solved")
        if done:
            ax.legend()
        fig.tight_layout()
    return fig


if __name__ == "__main__":  # pragma: no cover - the one-off commands
    import sys

    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--noise":
        res = main_noise(args[1])
        for lvl, e in res["levels"].items():
            print(f"level {lvl}: G* = {e.get('g_star')} (range {e.get('range')}), rule of "
                  f"thumb {(e.get('rule_of_thumb') or {}).get('g_star')}"
                  + (f"; {e['error']}" if e.get("error") else ""))
    elif len(args) == 1 and not args[0].startswith("-"):
        res = write_verdicts(args[0])
        print(json.dumps({k: (v.get("verdict") if isinstance(v, dict) else v)
                          for k, v in res.items() if k not in ("means",)}, indent=1,
                         default=str))
    else:
        sys.exit("usage: python -m grpolab.labs.design_b --noise OUT   (before training)\n"
                 "       python -m grpolab.labs.design_b OUT           (after the sweep)")
