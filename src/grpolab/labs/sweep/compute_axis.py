"""The compute axis of a G sweep: pass@k at every checkpoint, the crossing test, the best G
per budget, sharpening against coverage, and a G* prediction that can fail.

It reads the finished runs of a sweep (``runs/<regime>/G<G>-seed<s>/log.jsonl``: every
evaluation row holds each held-out prompt's successes out of ``eval_samples`` and its greedy
0/1) and writes one small file, ``compute_axis.json``, that the book reads. The tests are
the ones declared in :mod:`grpolab.labs.stats` before the runs:

- **primary metric:** held-out pass@1, the unbiased estimate from ``eval_samples`` samples
  per prompt (the G sweep's primary metric too);
- **the crossing** (IsoCompute, arXiv 2603.12151): :func:`~grpolab.labs.stats.crossing_test`;
- **the best G at each budget** with the Gs tied with it after Holm:
  :func:`~grpolab.labs.stats.best_G_with_ties`;
- **sharpening vs coverage** (Yue et al., arXiv 2504.13837): per G, the change of pass@k from
  the warm start to the last checkpoint at every k, with t intervals over seeds; coverage
  narrows where pass@k at the largest k falls below the warm start's;
- **G*:** the exact noise model fitted on the gradient noise measured at the warm start with
  the same estimator the runs use (:func:`grpolab.advise.fit_noise_constants`), its optimum
  1 + √(c₃/c₁), a bootstrap range over gradient batches, and
  :func:`~grpolab.labs.stats.gstar_verdict` at the last checkpoint;
- **G* along the compute axis:** the exact toy model's G* (:mod:`grpolab.toy`) on the
  held-out pass rates measured at each checkpoint, next to the measured best G.

Derived in: book/labs/05-compute-axis.md.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from grpolab import __version__, theory
from grpolab.grpo.records import finished_run, git_commit, read_json, write_json_atomic
from grpolab.labs import stats
from grpolab.results import read_gradient_noise

__all__ = ["compute_axis", "pass_at_k_curve", "difficulty_bins", "K_VALUES", "BIN_EDGES",
           "noise_g_star", "reaggregate", "held_fixed", "coverage_trend", "movement",
           "bins_by_seed"]

#: The k of pass@k: powers of two up to the samples per held-out prompt.
K_VALUES = (1, 2, 4, 8, 16, 32, 64)
#: Difficulty bins of the held-out prompts by their warm-start pass rate p₀ (pooled over
#: every run's first evaluation): never solved, (0, 0.1], (0.1, 0.5], (0.5, 1].
BIN_EDGES = (0.0, 0.1, 0.5, 1.0)
BIN_NAMES = ("p0 = 0", "0 < p0 <= 0.1", "0.1 < p0 <= 0.5", "p0 > 0.5")


def pass_at_k_curve(successes, samples: int, ks=K_VALUES) -> dict[int, float]:
    """Mean over prompts of the unbiased pass@k (:func:`grpolab.theory.pass_at_k`)."""
    c = np.asarray(successes, dtype=int)
    return {int(k): float(np.mean(theory.pass_at_k(samples, c, k))) for k in ks if k <= samples}


def difficulty_bins(p0: np.ndarray) -> np.ndarray:
    """Bin index of each prompt's warm-start pass rate (:data:`BIN_NAMES`)."""
    p0 = np.asarray(p0, dtype=float)
    return np.where(p0 == 0, 0, np.where(p0 <= 0.1, 1, np.where(p0 <= 0.5, 2, 3)))


def bins_by_seed(first: dict[tuple[int, int], np.ndarray], samples: int) -> dict[int, np.ndarray]:
    """Difficulty bins for each seed's runs from the *other* seeds' warm-start samples.

    ``first[(G, seed)]`` is a run's per-prompt successes at its first evaluation (the warm
    start). Runs of one seed share their evaluation samples; runs of different seeds draw
    their own. Binning a run's prompts by the same samples that define its baseline selects
    on their noise (a prompt with 0 successes in them rises again with no training: the
    regression to the mean of the referee's F9), so each seed's bins come from the pooled
    first evaluations of the other seeds, which are disjoint from its own. With one seed
    there is nothing disjoint, and the pooled bins are returned (``compute_axis`` says so).

    Derived in: book/labs/05-compute-axis.md, "pass@k: sharpening and coverage".
    """
    seeds = sorted({s for _, s in first})
    out = {}
    for s in seeds:
        others = [c for (_, s2), c in first.items() if s2 != s] or list(first.values())
        pooled = np.asarray(others).sum(0) / (len(others) * samples)
        out[s] = difficulty_bins(pooled)
    return out


def _evals(log: list[dict]) -> list[dict]:
    return [r for r in log if "eval_sampled_successes" in r]


def _runs(out: str, preset, regime) -> dict[tuple[int, int], list[dict]]:
    """(G, seed) → the evaluation rows of each finished run of ``regime``."""
    found = {}
    for G in preset.group_sizes:
        for seed in preset.seeds:
            run_dir = os.path.join(out, "runs", regime.name, f"G{G}-seed{seed}")
            s = finished_run(run_dir, preset.run_config(regime, G, seed), check_log=True)
            if s is not None:
                found[(G, seed)] = _evals(s["_log"])
    return found


#: Why a sweep of another estimator gets no G*: the exact model's algebra assumes it.
OUT_OF_SCOPE = ("not fitted: the exact model and its G* describe an estimator without std "
                "division, with a G-independent normaliser and a group baseline (scale_rewards="
                "'none', loss_type 'dr_grpo' or 'grpo', advantage_baseline 'mean' or "
                "'leave_one_out'); these runs used scale_rewards={!r}, loss_type={!r}, "
                "advantage_baseline={!r}")


def unbiased_estimator(config) -> bool:
    """Whether ``config``'s gradient estimator is one the exact noise model describes: no std
    division (its mean would grow with G), no normaliser that counts zero-variance groups
    (``dapo`` divides by all the batch's tokens, so the step shrinks with them), and a
    baseline whose units are known: leave-one-out (the model's own) or the group mean, which
    is exactly (G − 1)/G times leave-one-out and is converted row by row
    (:func:`grpolab.advise.leave_one_out_units`)."""
    return (config.scale_rewards == "none" and config.loss_type in ("dr_grpo", "grpo")
            and getattr(config, "advantage_baseline", None) in ("mean", "leave_one_out"))


def noise_g_star(rows: list[dict], *, advantage_baseline: str, n_boot: int = 500,
                 seed: int = 0) -> dict:
    """The exact model's G* fitted on gradient-noise rows in leave-one-out units (rows
    measured with ``advantage_baseline="mean"`` are converted by (G/(G − 1))², trace variance
    and signal alike), with a bootstrap range over the batches of every row (their Gram
    matrices), and the fit's notes. The baseline has no default: a fit that forgets it mixes
    units (the referee's F1)."""
    from grpolab.advise import fit_noise_constants
    from grpolab.grpo.measure import noise_from_gram

    fit = fit_noise_constants(rows, "gradient noise", advantage_baseline=advantage_baseline)
    out = {"c1": fit.c1, "c2": fit.c2, "c3": fit.c3, "signal": fit.signal,
           "g_star": fit.g_star, "notes": list(fit.notes),
           "max_rel_residual": fit.max_rel_residual, "units": "leave-one-out",
           "advantage_baseline": advantage_baseline}
    grams = [np.asarray(r["gram"]) for r in rows if r.get("gram") is not None]
    if len(grams) != len(rows):
        out["range"] = None
        return out
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        boot = []
        for r, K in zip(rows, grams, strict=True):
            counts = np.bincount(rng.integers(0, K.shape[0], K.shape[0]), minlength=K.shape[0])
            st = noise_from_gram(K, counts)  # a batch drawn twice is not paired with itself
            boot.append({**r, "trace_variance": st["trace_variance"],
                         "mean_gradient_norm_sq": st["mean_gradient_norm_sq"]})
        try:
            draws.append(fit_noise_constants(boot, "bootstrap",
                                             advantage_baseline=advantage_baseline).g_star)
        except ValueError:  # a draw the fit refuses (e.g. no variance): skip it
            continue
    if draws:
        lo, hi = np.quantile(draws, [0.025, 0.975])
        out["range"] = (float(lo), float(hi))
        out["bootstrap_draws"] = len(draws)
    else:
        out["range"] = None
    return out


def _toy_g_star(successes: np.ndarray, samples: int) -> float | None:
    """The exact toy model's G* for prompts with these measured pass rates (grpolab.toy)."""
    from grpolab import toy

    fit = toy.predicted_optimal_group_size(toy.empirical_dataset(successes, samples),
                                           toy.ToyConfig())
    g = fit["G_star"]
    return float(g) if g is not None and math.isfinite(g) else None


def compute_axis(out: str, preset, *, write: bool = True) -> dict:
    """The compute-axis results of the sweep in ``out`` (see the module docstring)."""
    out = os.fspath(out)
    noise_path = os.path.join(out, "gradient_noise.json")
    noise = read_gradient_noise(noise_path) if os.path.isfile(noise_path) else {}
    result = {"preset": preset.name, "primary_metric": "pass@1 (unbiased, held out)",
              "k": list(K_VALUES), "bins": list(BIN_NAMES), "regimes": {}}
    for regime in preset.regimes:
        runs = _runs(out, preset, regime)
        if not runs:
            continue
        n = preset.run_config(regime, preset.group_sizes[0], preset.seeds[0]).eval_samples
        ks = [k for k in K_VALUES if k <= n]
        # the warm start's per-prompt pass rate, pooled over every run's first evaluation
        first = np.array([ev[0]["eval_sampled_successes"] for ev in runs.values()])
        p0 = first.sum(0) / (first.shape[0] * n)
        bins = difficulty_bins(p0)
        own_bins = bins_by_seed({k: np.asarray(ev[0]["eval_sampled_successes"])
                                 for k, ev in runs.items()}, n)
        curves: dict = {}
        by_ckpt: dict[int, dict[int, dict[int, float]]] = {}
        per_prompt_final: dict[int, dict[int, list[float]]] = {}
        for (G, seed), evals in sorted(runs.items()):
            sb = own_bins[seed]
            rows = []
            for ev in evals:
                c = np.asarray(ev["eval_sampled_successes"])
                row = {"completions": ev["completions"], "step": ev["step"],
                       "pass_at_k": pass_at_k_curve(c, n, ks),
                       "greedy": ev["eval_greedy_accuracy"],
                       "pass_at_k_by_bin": {BIN_NAMES[b]: pass_at_k_curve(c[sb == b], n, ks)
                                            for b in range(len(BIN_NAMES)) if (sb == b).any()}}
                rows.append(row)
                by_ckpt.setdefault(ev["completions"], {}).setdefault(G, {})[seed] = \
                    row["pass_at_k"][1]
            curves.setdefault(str(G), {})[str(seed)] = rows
            per_prompt_final.setdefault(G, {})[seed] = (
                np.asarray(evals[-1]["eval_sampled_successes"]) / n).tolist()
        ckpts = sorted(by_ckpt)
        complete = [c for c in ckpts
                    if all(len(by_ckpt[c].get(G, {})) == len(preset.seeds)
                           for G in preset.group_sizes)]
        reg: dict = {"checkpoints": complete, "samples_per_prompt": n, "k": ks,
                     "prompts": int(p0.size),
                     "prompts_per_bin": {BIN_NAMES[b]: int((bins == b).sum())
                                         for b in range(len(BIN_NAMES))},
                     "bins_from": ("each run's bins come from the other seeds' warm-start "
                                   "samples, disjoint from its own baseline"
                                   if len(preset.seeds) > 1 else
                                   "one seed: bins from the run's own warm-start samples "
                                   "(selection on noise, not disjoint)"),
                     "prompts_per_bin_by_seed": {str(s): {BIN_NAMES[b]: int((sb == b).sum())
                                                          for b in range(len(BIN_NAMES))}
                                                 for s, sb in own_bins.items()},
                     "warm_start_pass_rate_mean": float(p0.mean()), "curves": curves}
        if len(per_prompt_final) >= 2:  # each run's last evaluation, aligned or not
            reg["final_trend_prompt_bootstrap"] = stats.prompt_bootstrap_trend(per_prompt_final)
        if len(preset.group_sizes) >= 2 and len(complete) >= 2:
            final = complete[-1]
            reg["final_trend"] = stats.g_verdict(by_ckpt[final], "pass@1",
                                                 held_fixed=held_fixed(regime, final))
            reg["best_G"] = {str(c): stats.best_G_with_ties(by_ckpt[c]) for c in complete
                             if c > 0}
            if len([c for c in complete if c > 0]) >= 3:
                reg["crossing"] = stats.crossing_test({c: by_ckpt[c] for c in complete})
            reg["pass_at_k_change"] = _pass_at_k_change(curves, preset, ks)
            reg["coverage_trend"] = coverage_trend(curves, ks[-1], held_fixed(regime, final))
            if len(preset.group_sizes) >= 3:
                reg["curvature_final"] = stats.curvature_in_log2_G(by_ckpt[final])
        rows = noise.get(regime.name)
        config = preset.run_config(regime, preset.group_sizes[0], preset.seeds[0])
        if rows and not unbiased_estimator(config):
            reg["g_star"] = {"error": OUT_OF_SCOPE.format(config.scale_rewards, config.loss_type,
                                                          config.advantage_baseline)}
        elif rows and len({r["G"] for r in rows}) >= 3:
            try:
                g = noise_g_star(rows, advantage_baseline=config.advantage_baseline)
            except ValueError as exc:
                g = {"error": str(exc)}
            reg["g_star"] = g
            if "g_star" in g and complete and len(preset.group_sizes) >= 3:
                reg["g_star"]["verdict"] = stats.gstar_verdict(
                    by_ckpt[complete[-1]], g["g_star"], g.get("range"),
                    per_prompt=per_prompt_final)
        reg["toy_g_star_by_checkpoint"] = {}
        for c in complete:
            pooled = [ev["eval_sampled_successes"] for evals in runs.values() for ev in evals
                      if ev["completions"] == c]
            k_sum = np.asarray(pooled).sum(0)
            reg["toy_g_star_by_checkpoint"][str(c)] = _toy_g_star(k_sum, len(pooled) * n)
        result["regimes"][regime.name] = reg
    result = json.loads(json.dumps(result))  # keys as the file has them (strings)
    # which code aggregated the runs (it may be newer than the code that ran them, sweep.json)
    result["aggregated_by"] = {"grpolab_version": __version__, "git_commit": git_commit()}
    if write:
        write_json_atomic(os.path.join(out, "compute_axis.json"), result)
    return result


def _pk(row: dict, k: int) -> float:
    """pass@k of one evaluation row, whether its keys are ints (fresh) or strings (read)."""
    p = row["pass_at_k"]
    return p[k] if k in p else p[str(k)]


def _pass_at_k_change(curves: dict, preset, ks) -> dict:
    """Per G and k: last checkpoint minus warm start, t interval over seeds; and whether
    coverage (pass@k at the largest k) fell below the warm start's."""
    out = {}
    for G in preset.group_sizes:
        seeds = curves.get(str(G), {})
        if len(seeds) < 2:
            continue
        per_k = {}
        for k in ks:
            d = [_pk(rows[-1], k) - _pk(rows[0], k) for rows in seeds.values()]
            per_k[str(k)] = stats.t_interval(d)
        kmax = str(ks[-1])
        per_k["coverage_narrowed"] = (per_k[kmax]["high"] is not None
                                      and per_k[kmax]["high"] < 0)
        per_k["sharpened"] = per_k["1"]["low"] is not None and per_k["1"]["low"] > 0
        out[str(G)] = per_k
    return out


def held_fixed(regime, completions: float | None = None) -> str:
    """The words for the compute a G comparison of ``regime`` holds fixed, for the same line
    as the effect: "at a fixed budget of 64 completions per step" (budget mode: every G
    spends the same completions per step, and so the same in total at a checkpoint), or
    "at equal steps (4 prompts per step: more completions at larger G)" (prompts mode, where
    the comparison is the value of more samples per step, not a G effect)."""
    mode = getattr(regime, "mode", None) if not isinstance(regime, dict) else regime.get("mode")
    get = (lambda k: regime.get(k)) if isinstance(regime, dict) else (
        lambda k: getattr(regime, k, None))
    if mode == "budget":
        at = f", {completions:,.0f} completions in all" if completions else ""
        return f"at a fixed budget of {get('budget')} completions per step{at}"
    return (f"at equal steps ({get('prompts_per_step')} prompts per step, so more completions "
            "at larger G: the value of more samples per step, not a G effect)")


def coverage_trend(curves: dict, k: int, fixed: str) -> dict:
    """The declared trend in log₂ G of Δpass@k (last checkpoint minus warm start) at the
    largest k: how much coverage each G keeps. Reported with the compute held fixed; its
    movement covariate is :func:`movement`."""
    by_G = {int(G): {int(seed): _pk(rows[-1], k) - _pk(rows[0], k)
                     for seed, rows in seeds.items()} for G, seeds in curves.items()}
    if len(by_G) < 2:
        return {}
    return stats.g_verdict(by_G, f"change of pass@{k} from the warm start", held_fixed=fixed)


def movement(curves: dict, kl: dict, k: int, fixed: str) -> dict:
    """How far each run moved from the warm start, next to the coverage it kept.

    ``kl[G][seed]`` is a run's final KL to the warm start (``final_kl_to_warm_start`` in
    ``summary.json``). Returns the KL's own trend in log₂ G (:func:`stats.g_verdict`), and
    the Δpass@k trend in log₂ G *adjusted* for KL: per seed, the least-squares coefficient of
    log₂ G in Δpass@k ~ 1 + log₂ G + KL over that seed's runs, with a t interval over
    seeds. A coverage trend that vanishes once KL is in the model says "larger G kept more
    coverage because it moved less", not that G protects coverage at equal movement.
    """
    Gs = sorted(int(G) for G in curves)
    seeds = sorted(set.intersection(*(set(int(s) for s in curves[str(G)]) for G in Gs)))
    seeds = [s for s in seeds if all(s in kl.get(G, {}) for G in Gs)]
    if len(Gs) < 4 or len(seeds) < 2:
        return {}
    x = np.log2(np.asarray(Gs, dtype=float))
    coefs = []
    for s in seeds:
        y = [_pk(curves[str(G)][str(s)][-1], k) - _pk(curves[str(G)][str(s)][0], k)
             for G in Gs]
        X = np.column_stack([np.ones_like(x), x, [kl[G][s] for G in Gs]])
        coefs.append(float(np.linalg.lstsq(X, np.asarray(y), rcond=None)[0][1]))
    ci = stats.t_interval(coefs)
    return {"kl_trend": stats.g_verdict({G: {s: kl[G][s] for s in seeds} for G in Gs},
                                        "final KL to the warm start", held_fixed=fixed,
                                        margin=None),
            "kl_mean_by_G": {str(G): float(np.mean([kl[G][s] for s in seeds])) for G in Gs},
            "adjusted": {"test": f"per seed, coefficient of log2 G in Δpass@{k} ~ 1 + log2 G "
                                 "+ KL; one-sample t over seeds",
                         "slope_per_doubling": ci["mean"], "low": ci["low"],
                         "high": ci["high"], "mde": ci.get("mde"), "per_seed": coefs,
                         "seeds": seeds}}


def reaggregate(out: str, *, write: bool = True) -> dict:
    """Recompute every statistic of ``out/compute_axis.json`` from what is committed: its
    per-seed per-checkpoint pass@k curves, ``gradient_noise.json`` (rows and Gram matrices),
    ``summary.json`` (each run's final KL to the warm start) and ``sweep.json`` (the runs'
    config). The run logs are not committed, so what needs
    per-prompt scores (the prompt bootstrap of the final trend, the difficulty bins, the toy
    G* per checkpoint) is kept as the runs' aggregation stored it; the G* regret bootstrap
    then resamples seeds only (it says so). Records the aggregating commit.

    Usage: ``python -m grpolab.labs.sweep.compute_axis labs/results/cpu-compute``.
    """
    from types import SimpleNamespace

    out = os.fspath(out)
    doc = read_json(os.path.join(out, "compute_axis.json"), "compute-axis results")
    meta = read_json(os.path.join(out, "sweep.json"), "the sweep's record")
    preset = meta["preset"]
    config = SimpleNamespace(**preset["config"])
    regimes = {r["name"]: r for r in preset["regimes"]}
    noise_path = os.path.join(out, "gradient_noise.json")
    noise = read_json(noise_path, "gradient-noise measurements") \
        if os.path.isfile(noise_path) else {}
    summary_path = os.path.join(out, "summary.json")
    runs_summary = read_json(summary_path, "the sweep's summary").get("runs", []) \
        if os.path.isfile(summary_path) else []
    for name, reg in doc["regimes"].items():
        curves = reg["curves"]
        ks = reg["k"]
        by_ckpt: dict = {}
        for G, seeds in curves.items():
            for seed, rows in seeds.items():
                for row in rows:
                    by_ckpt.setdefault(row["completions"], {}).setdefault(int(G), {})[
                        int(seed)] = row["pass_at_k"]["1"]
        complete = reg["checkpoints"]
        final = complete[-1]
        fixed = held_fixed(regimes[name], final)
        reg["final_trend"] = stats.g_verdict(by_ckpt[final], "pass@1", held_fixed=fixed)
        reg["best_G"] = {str(c): stats.best_G_with_ties(by_ckpt[c]) for c in complete if c > 0}
        reg["crossing"] = stats.crossing_test({c: by_ckpt[c] for c in complete})
        fake = SimpleNamespace(group_sizes=sorted(int(G) for G in curves))
        reg["pass_at_k_change"] = _pass_at_k_change(curves, fake, ks)
        reg["coverage_trend"] = coverage_trend(curves, ks[-1], fixed)
        kl = {}
        for r in runs_summary:
            if r.get("regime") == name and r.get("final_kl_to_warm_start") is not None:
                kl.setdefault(int(r["G"]), {})[int(r["seed"])] = r["final_kl_to_warm_start"]
        reg["movement"] = movement(curves, kl, ks[-1], fixed)
        reg["curvature_final"] = stats.curvature_in_log2_G(by_ckpt[final])
        rows = noise.get(name)
        if rows and not unbiased_estimator(config):
            reg["g_star"] = {"error": OUT_OF_SCOPE.format(
                config.scale_rewards, config.loss_type, config.advantage_baseline)}
        elif rows and len({r["G"] for r in rows}) >= 3:
            try:
                g = noise_g_star(rows, advantage_baseline=config.advantage_baseline)
            except ValueError as exc:
                g = {"error": str(exc)}
            if "g_star" in g and len(curves) >= 3:
                g["verdict"] = stats.gstar_verdict(by_ckpt[final], g["g_star"], g.get("range"))
            reg["g_star"] = g
    doc = json.loads(json.dumps(doc))
    doc["aggregated_by"] = {"grpolab_version": __version__, "git_commit": git_commit(),
                            "from": "reaggregate: the committed curves, gradient_noise.json "
                                    "and sweep.json (run logs not committed)"}
    if write:
        write_json_atomic(os.path.join(out, "compute_axis.json"), doc)
    return doc


def main(argv: list[str] | None = None) -> int:
    """``python -m grpolab.labs.sweep.compute_axis DIR``: re-aggregate DIR's compute axis."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not os.path.isfile(os.path.join(args[0], "compute_axis.json")) \
            or not os.path.isfile(os.path.join(args[0], "sweep.json")):
        print("usage: python -m grpolab.labs.sweep.compute_axis DIR (a sweep folder with "
              "compute_axis.json and sweep.json)", file=sys.stderr)
        return 2
    doc = reaggregate(args[0])
    for name, reg in doc["regimes"].items():
        g = reg.get("g_star", {})
        print(f"{name}: G* {g.get('g_star', float('nan')):.2f} (leave-one-out units), "
              f"crossing {reg['crossing']['verdict']}; {reg['final_trend']['statement']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
