"""Plots of a G sweep (PNG and SVG), from the files a sweep writes; no training here.

- ``accuracy.{png,svg}``: held-out sampled pass@1 (the primary metric) per G, mean and
  min–max band across seeds, against steps (per-step view) and against completions
  (per-completion view), one row per regime.
- ``zero_variance.{png,svg}``: fraction of zero-variance groups vs G: the closed form
  mean_j p_j^G + (1 − p_j)^G over the warm start's census pass rates, next to the observed
  fraction and the running prediction of every run.
- ``gradient_noise.{png,svg}``: trace variance of the batch gradient at the warm start vs G,
  the same relative to the squared norm of the mean gradient, and the mean logged gradient
  norm of the runs.
"""

from __future__ import annotations

import csv
import os

import numpy as np

from grpolab.labs.common import FIGURE_STYLE as _AXIS_STYLE
from grpolab.labs.common import FIGURE_WIDTH as WIDTH
from grpolab.labs.common import save_figure

__all__ = ["plot_sweep", "load_curves", "plot_accuracy", "plot_zero_variance",
           "plot_gradient_noise", "read_sweep_summary", "g_effects", "matched_completions",
           "early_zero_variance", "gstar_report", "zero_variance_gaps",
           "clipped_share"]




_CURVE_KEYS = ("regime", "G", "seed", "step", "completions", "eval_greedy_accuracy")


def read_sweep_summary(out: str) -> dict:
    """``out/summary.json``, checked to be a sweep's against its typed schema
    (:func:`grpolab.results.read_sweep_summary`, what :func:`plot_sweep` reads): a damaged,
    foreign or crafted file is one error naming the file and the field, not a KeyError or
    a plot of strings."""
    from grpolab.results import read_sweep_summary as read_checked

    return read_checked(out)


def load_curves(out: str) -> list[dict]:
    """Rows of ``curves.csv`` with numbers parsed."""
    from grpolab.grpo.records import CorruptFileError

    path = os.path.join(out, "curves.csv")
    with open(path, encoding="utf-8", errors="replace") as f:
        rows = list(csv.DictReader(f))
    if rows and any(k not in rows[0] for k in _CURVE_KEYS):
        raise CorruptFileError(path, f"is not a sweep's curves (no {', '.join(_CURVE_KEYS)} "
                               "columns)", "delete it and rerun 'grpolab lab sweep' to rebuild it")
    for n, r in enumerate(rows, 2):
        for k, v in r.items():
            if k != "regime":
                try:
                    r[k] = float(v) if v not in ("", None) else float("nan")
                except (TypeError, ValueError):
                    raise CorruptFileError(path, f"line {n}: {k} = {v!r} is not a number",
                                           "delete it and rerun 'grpolab lab sweep' to rebuild "
                                           "it") from None
    return rows


def _g_axis(ax, Gs) -> None:
    """A log2 x axis ticked at the G values themselves (2, 4, 8, not 2^1, 2^2, 2^3)."""
    Gs = sorted({int(G) for G in Gs})
    ax.set_xscale("log", base=2)
    if Gs:
        ax.set_xticks(Gs, [str(G) for G in Gs])
        ax.minorticks_off()


def _one_two_five(v: float, _pos=None) -> str:
    """Tick label of a log axis: the value at 1, 2 and 5 times a power of ten, else none."""
    if v <= 0:
        return ""
    lead = v / 10 ** np.floor(np.log10(v))
    return f"{v:g}" if any(abs(lead - d) < 1e-6 for d in (1, 2, 5)) else ""


def _colors(Gs):
    """One fixed, colour-blind-safe colour per G, the same on every page (grpolab._palette)."""
    from grpolab._palette import g_color

    return {G: g_color(G) for G in sorted(Gs)}


def plot_accuracy(rows: list[dict], regimes: list[str], metric: str = "eval_sampled_accuracy"):
    """Held-out accuracy vs step and vs completions, mean line and min–max seed band per G;
    ``metric`` is a curves.csv column (sampled pass@1 by default, or greedy accuracy)."""
    import matplotlib.pyplot as plt

    with plt.rc_context(_AXIS_STYLE):
        return _plot_accuracy(rows, regimes, metric)


def _plot_accuracy(rows, regimes, metric):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(regimes), 2, figsize=(WIDTH, 3.0 * len(regimes) + 0.4),
                             squeeze=False, sharey="row")
    for i, regime in enumerate(regimes):
        mine = [r for r in rows if r["regime"] == regime]
        Gs = sorted({int(r["G"]) for r in mine})
        colors = _colors(Gs)
        for G in Gs:
            seeds = sorted({r["seed"] for r in mine if r["G"] == G})
            steps = sorted({r["step"] for r in mine if r["G"] == G})
            table = np.full((len(seeds), len(steps)), np.nan)
            comp = np.zeros(len(steps))
            for r in mine:
                if r["G"] == G:
                    j = steps.index(r["step"])
                    table[seeds.index(r["seed"]), j] = r[metric]
                    comp[j] = r["completions"]
            mean = np.nanmean(table, 0)
            for ax, x in ((axes[i, 0], np.array(steps)), (axes[i, 1], comp)):
                ax.plot(x, mean, color=colors[G], label=f"G={G}")
                if len(seeds) > 1:
                    ax.fill_between(x, np.nanmin(table, 0), np.nanmax(table, 0),
                                    color=colors[G], alpha=0.15)
        axes[i, 0].set_xlabel("GRPO step")
        axes[i, 1].set_xlabel("completions")
        axes[i, 1].ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
        axes[i, 0].set_ylabel(_METRIC_LABEL.get(metric, metric.replace("_", " ")))
        for ax in axes[i]:
            ax.set_title(f"{regime}")
            ax.grid(alpha=0.3)
        axes[i, 0].legend(ncol=2, fontsize=9)
    fig.suptitle(f"Held-out {_METRIC_LABEL.get(metric, metric)}; band = min–max over seeds")
    fig.tight_layout()
    return fig


_METRIC_LABEL = {"eval_sampled_accuracy": "sampled pass@1",
                 "eval_greedy_accuracy": "greedy accuracy"}


def plot_zero_variance(summary: dict, regimes: list[str]):
    """Zero-variance fraction vs G: closed form at the warm start, observed, predicted."""
    import matplotlib.pyplot as plt

    with plt.rc_context(_AXIS_STYLE):
        return _plot_zero_variance(summary, regimes)


def _plot_zero_variance(summary, regimes):
    import matplotlib.pyplot as plt

    ncol = min(2, len(regimes))
    nrow = -(-len(regimes) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(WIDTH, 3.3 * nrow), squeeze=False)
    for ax in axes.flat[len(regimes):]:
        ax.set_visible(False)
    for ax, regime in zip(axes.flat[:len(regimes)], regimes, strict=True):
        info = summary["regimes"][regime]
        th = {int(k): v for k, v in info["zero_variance_at_warm_start_theory"].items()}
        if th:
            Gs = sorted(th)
            ax.plot(Gs, [th[G] for G in Gs], "k-", label="p^G + (1-p)^G\nat the warm start")
        runs = [r for r in summary["runs"] if r["regime"] == regime]
        ax.scatter([r["G"] for r in runs], [r["zero_variance_observed"] for r in runs],
                   marker="o", color="C0", label="observed", zorder=3)
        pred = [r for r in runs if r["zero_variance_predicted"] is not None]
        ax.scatter([r["G"] * 1.08 for r in pred], [r["zero_variance_predicted"] for r in pred],
                   marker="x", color="C3", label="running prediction", zorder=3)
        _g_axis(ax, [r["G"] for r in runs] + list(th))
        ax.set_xlabel("G")
        ax.set_ylabel("zero-variance groups")
        gap = info.get("zero_variance_mean_abs_gap")
        ax.set_title(f"{regime}" + (f"\nmean |gap| {gap:.3f}" if gap is not None else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def plot_gradient_noise(summary: dict, regimes: list[str]):
    """Gradient noise at the warm start vs G, and the mean logged gradient norm of runs."""
    import matplotlib.pyplot as plt

    with plt.rc_context(_AXIS_STYLE):
        return _plot_gradient_noise(summary, regimes)


def _plot_gradient_noise(summary, regimes):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    noise = summary.get("gradient_noise", {})
    fig, axes = plt.subplots(3, 1, figsize=(WIDTH, 8.4), sharex=True)
    for i, regime in enumerate(regimes):
        rows = noise.get(regime, [])
        if rows:
            mode = summary["regimes"].get(regime, {}).get("mode", "budget")
            label = f"{regime} ({'budget' if mode == 'budget' else 'prompts'} fixed)"
            axes[0].plot([r["G"] for r in rows], [r["trace_variance"] for r in rows], "o-",
                         color=f"C{i}", label=label)
            ok = [r for r in rows if r["noise_to_signal"] is not None]
            axes[1].plot([r["G"] for r in ok], [r["noise_to_signal"] for r in ok], "o-",
                         color=f"C{i}", label=label)
        runs = [r for r in summary["runs"] if r["regime"] == regime and "grad_norm_mean" in r]
        if runs:
            Gs = sorted({r["G"] for r in runs})
            axes[2].plot(Gs, [np.mean([r["grad_norm_mean"] for r in runs if r["G"] == G])
                              for G in Gs], "o-", color=f"C{i}", label=regime)
    axes[0].set_ylabel("E‖g − ḡ‖²")
    axes[0].set_title("Gradient noise at the warm start (trace variance)")
    axes[1].set_ylabel("E‖g − ḡ‖² / ‖ḡ‖²")
    axes[1].set_title("Noise relative to the mean gradient")
    axes[2].set_ylabel("gradient norm")
    axes[2].set_title("Logged gradient norm during training (before clipping)")
    all_G = [r["G"] for rows in noise.values() for r in rows] + [r["G"] for r in summary["runs"]]
    for ax in axes:
        _g_axis(ax, all_G)
        if any(y > 0 for line in ax.get_lines() for y in line.get_ydata()):
            ax.set_yscale("log")
            plain = FuncFormatter(_one_two_five)  # 5, not 5 × 10^0
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
    axes[2].set_xlabel("G")
    fig.tight_layout()
    return fig


#: Most regimes ``plot_sweep`` draws (one row of panels each), and the largest curves.csv
#: it reads: a summary of hundreds of regimes would take minutes and an unreadable figure.
MAX_PLOT_REGIMES = 12
MAX_CURVES_BYTES = 64 * 2**20


def _plotted_run():
    from grpolab._files import Field

    share = Field("real", 0, 1, required=False, nullable=True)
    return Field("object", extra_keys=True, fields={
        "regime": Field("str"), "G": Field("int", 1), "seed": Field("int", 0),
        "zero_variance_observed": share, "zero_variance_predicted": share,
        "grad_norm_mean": Field("real", 0, required=False, nullable=True)})


def plot_sweep(out: str, *, max_regimes: int = MAX_PLOT_REGIMES, log=print) -> list[str]:
    """Write every plot of the sweep in ``out`` to ``out/plots``; return the paths. At most
    ``max_regimes`` regimes are drawn (the first ones; ``log`` gets a note saying so)."""
    import matplotlib

    matplotlib.use("Agg")
    summary = read_sweep_summary(out)
    regimes = list(summary["regimes"])
    if not regimes:
        return []
    if len(regimes) > max_regimes:
        log(f"note: {out}/summary.json has {len(regimes)} regimes; plotting the first "
            f"{max_regimes} ({', '.join(regimes[:3])}, ...)")
        regimes = regimes[:max_regimes]
    from grpolab._files import CorruptFileError, check, read_text

    path, spec = os.path.join(out, "summary.json"), _plotted_run()
    for i, run in enumerate(summary["runs"]):  # what the plots read, typed (else a TypeError
        try:                                   # deep in matplotlib)
            check(run, spec, path)
        except CorruptFileError as exc:
            raise CorruptFileError(path, f"runs[{i}]: {exc.problem}") from None
    curves = os.path.join(out, "curves.csv")
    if os.path.exists(curves):  # a device or a FIFO refused unread, and at most 64 MiB
        read_text(curves, "a sweep's curves", max_bytes=MAX_CURVES_BYTES,
                  remedy="rerun 'grpolab lab sweep' to rebuild it")
    plots = os.path.join(out, "plots")
    os.makedirs(plots, exist_ok=True)
    keep = set(regimes)
    rows = [r for r in load_curves(out) if r["regime"] in keep]
    paths = save_figure(plot_accuracy(rows, regimes), plots, "accuracy")
    paths += save_figure(plot_zero_variance(summary, regimes), plots, "zero_variance")
    paths += save_figure(plot_gradient_noise(summary, regimes), plots, "gradient_noise")
    return paths


# ----------------------------------------------------------------------------- compute axis


def plot_compute_curves(axis: dict, regime: str, metric: str = "1"):
    """pass@k (default pass@1) against completions consumed, one line per G (mean over
    seeds) with a min–max band: the iso-compute view."""
    import matplotlib.pyplot as plt

    reg = axis["regimes"][regime]
    Gs = sorted(int(G) for G in reg["curves"])
    colors = _colors(Gs)
    with plt.rc_context(_AXIS_STYLE):
        fig, ax = plt.subplots(figsize=(WIDTH, 4.0))
        for G in Gs:
            seeds = reg["curves"][str(G)]
            rows = list(seeds.values())
            n = min(len(r) for r in rows)
            x = np.array([r["completions"] for r in rows[0][:n]], dtype=float)
            y = np.array([[r["pass_at_k"][metric] for r in s[:n]] for s in rows])
            keep = x > 0
            ax.plot(x[keep], y.mean(0)[keep], "-o", ms=3, color=colors[G], label=f"G = {G}")
            ax.fill_between(x[keep], y.min(0)[keep], y.max(0)[keep], color=colors[G], alpha=0.15)
            ax.axhline(y[:, 0].mean(), color="gray", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("completions consumed (log scale)")
        ax.set_ylabel(f"held-out pass@{metric}")
        ax.set_title(f"{regime}: pass@{metric} against compute")
        ax.grid(alpha=0.3)
        ax.legend(ncol=2)
        fig.tight_layout()
    return fig


def plot_pass_at_k(axis: dict, regime: str):
    """pass@k against k at the warm start (dashed) and at the last checkpoint, per G."""
    import matplotlib.pyplot as plt

    reg = axis["regimes"][regime]
    Gs = sorted(int(G) for G in reg["curves"])
    colors = _colors(Gs)
    ks = [int(k) for k in reg["k"]]
    with plt.rc_context(_AXIS_STYLE):
        fig, ax = plt.subplots(figsize=(WIDTH, 4.0))
        start = []
        for G in Gs:
            rows = list(reg["curves"][str(G)].values())
            final = np.array([[r[-1]["pass_at_k"][str(k)] for k in ks] for r in rows])
            start.append([[r[0]["pass_at_k"][str(k)] for k in ks] for r in rows])
            ax.plot(ks, final.mean(0), "-o", ms=3, color=colors[G], label=f"G = {G}, last")
        ax.plot(ks, np.mean(np.concatenate(start), 0), "k--", label="warm start")
        _g_axis(ax, ks)
        ax.set_xlabel("k (samples per prompt)")
        ax.set_ylabel("held-out pass@k")
        ax.set_title(f"{regime}: pass@k before and after GRPO")
        ax.grid(alpha=0.3)
        ax.legend(ncol=2)
        fig.tight_layout()
    return fig


def plot_crossing(axis: dict, regime: str):
    """The crossing test's ingredient: the trend of pass@1 per doubling of G at each
    checkpoint, with its t interval over seeds (IsoCompute predicts it rises with compute)."""
    import matplotlib.pyplot as plt

    cr = axis["regimes"][regime]["crossing"]
    c = sorted(float(k) for k in cr["slope_by_checkpoint"])
    key = {float(k): k for k in cr["slope_by_checkpoint"]}
    y = [cr["slope_by_checkpoint"][key[v]] for v in c]
    lo = [cr["slope_by_checkpoint_low"][key[v]] for v in c]
    hi = [cr["slope_by_checkpoint_high"][key[v]] for v in c]
    with plt.rc_context(_AXIS_STYLE):
        fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
        ax.errorbar(c, y, yerr=[np.subtract(y, lo), np.subtract(hi, y)], fmt="o-", capsize=3)
        ax.axhline(0, color="k", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("completions consumed (log scale)")
        ax.set_ylabel("Δ pass@1 per doubling of G")
        ax.set_title(f"{regime}: which way does G point, as compute grows?")
        ax.grid(alpha=0.3)
        fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- issue 31
#: The sampled pass@1 column of ``curves.csv`` (the sweep's primary metric at each eval).
_SAMPLED = "eval_sampled_accuracy"


def matched_completions(rows: list[dict], regime: str, min_arms: int = 3) -> list[float]:
    """The completion counts (> 0) at which at least ``min_arms`` G values of ``regime`` have
    an evaluation in every one of their seeds: where arms can be compared at matched compute."""
    seeds_of: dict[int, set] = {}
    at: dict[float, dict[int, set]] = {}
    for r in rows:
        if r["regime"] != regime or not np.isfinite(r.get(_SAMPLED, float("nan"))):
            continue
        G, seed, c = int(r["G"]), int(r["seed"]), float(r["completions"])
        seeds_of.setdefault(G, set()).add(seed)
        if c > 0:
            at.setdefault(c, {}).setdefault(G, set()).add(seed)
    return sorted(c for c, arms in at.items()
                  if sum(arms[G] == seeds_of[G] for G in arms) >= min_arms)


def g_effects(summary: dict, rows: list[dict]) -> list[str]:
    """One line per G effect of a sweep, each naming the compute it holds fixed.

    - a fixed-budget regime: the trend of final sampled pass@1 in log₂ G "at a fixed budget
      of B completions per step" (every G also spends the same completions in all);
    - a fixed-prompts regime: its equal-steps slope, labelled as what it is, "the value of
      more samples per step (more compute)" (G = 32 spends 16× the completions of G = 2),
      and the G effects at matched completions read from ``curves.csv``
      (:func:`grpolab.labs.stats.matched_compute_trend`).

    ``summary`` is ``summary.json`` (:func:`read_sweep_summary`), ``rows`` ``curves.csv``
    (:func:`load_curves`). Derived in: book/labs/01-g-sweep.md, "Matched compute".
    """
    from grpolab.labs import stats

    lines = []
    for name, info in summary["regimes"].items():
        runs = [r for r in summary["runs"] if r["regime"] == name
                and r.get("final_sampled_accuracy") is not None]
        table: dict[int, dict[int, float]] = {}
        for r in runs:
            table.setdefault(int(r["G"]), {})[int(r["seed"])] = float(r["final_sampled_accuracy"])
        if len(table) < 2:
            continue
        mode = info.get("mode") or (runs[0].get("mode") if runs else None)
        if mode == "budget":
            per_step = {int(r["completions"] / r["steps"]) for r in runs if r.get("steps")}
            budget = per_step.pop() if len(per_step) == 1 else None
            fixed = (f"at a fixed budget of {budget} completions per step" if budget else
                     "at a fixed budget of completions per step")
            v = stats.g_verdict(table, "held-out sampled pass@1", held_fixed=fixed)
            lines.append(f"[{name}] G effect {v['statement']}")
            continue
        prompts = {int(r["prompts_per_step"]) for r in runs if r.get("prompts_per_step")}
        at = f"{prompts.pop()} prompts per step" if len(prompts) == 1 else "fixed prompts per step"
        v = stats.g_verdict(table, "held-out sampled pass@1", margin=None,
                            held_fixed=f"at equal steps ({at}, so G = {max(table)} spends "
                                       f"{max(table) // min(table)}x the completions of "
                                       f"G = {min(table)})")
        lines.append(f"[{name}] NOT a G effect: the value of more samples per step (more "
                     f"compute): {v['statement'].split(': ', 1)[1]}")
        curves: dict[int, dict[int, list]] = {}
        for r in rows:
            if r["regime"] == name and np.isfinite(r.get(_SAMPLED, float("nan"))):
                curves.setdefault(int(r["G"]), {}).setdefault(int(r["seed"]), []).append(
                    (float(r["completions"]), float(r[_SAMPLED])))
        for c in matched_completions(rows, name):
            m = stats.matched_compute_trend(curves, c)
            if m["low"] is None:
                continue
            what = ("a trend in G" if m["p_value"] is not None and m["p_value"] < 0.05
                    else f"no detectable trend in G (80%-power MDE {m['mde']:.4f})")
            lines.append(f"[{name}] G effect {m['held_fixed']}, G = "
                         f"{' '.join(map(str, m['G_compared']))}: held-out sampled pass@1 "
                         f"{m['slope_per_doubling']:+.4f} per doubling of G, 95% CI "
                         f"[{m['low']:+.4f}, {m['high']:+.4f}] over {len(m['seeds'])} seeds: "
                         f"{what}")
    return lines


def early_zero_variance(summary: dict, preset: dict, steps: list[dict],
                        last_step: int = 10) -> dict:
    """The clean test of p^G + (1 − p)^G: the closed form at the warm start against the
    zero-variance fraction observed in steps 1 to ``last_step`` (every logged step, all
    seeds), with a 95% Wilson interval; the groups of one step are distinct prompts, so
    they count as independent trials.

    ``summary``: ``summary.json``; ``preset``: ``sweep.json``'s preset; ``steps``:
    ``steps.csv`` rows (:meth:`grpolab.labs.lab_results.LabResults.steps`). Returns
    ``rows`` (regime, G, groups, observed with interval, closed form, "yes"/"no"),
    ``inside`` (cells whose interval holds the closed form) and ``cells``.

    Derived in: book/labs/01-g-sweep.md, "The zero-variance fraction".
    """
    from grpolab.labs.stats import wilson_interval

    rows, inside = [], 0
    for name in summary["regimes"]:
        theory = summary["regimes"][name]["zero_variance_at_warm_start_theory"]
        spec = next(r for r in preset["regimes"] if r["name"] == name)
        for G in preset["group_sizes"]:
            mine = [x for x in steps if x["regime"] == name and int(x["G"]) == G
                    and int(x["step"]) <= last_step]
            groups_per_step = (spec["budget"] // G if spec["mode"] == "budget"
                               else spec["prompts_per_step"])
            n = groups_per_step * len(mine)
            k = sum(float(x["zero_variance_observed"]) * groups_per_step for x in mine)
            lo, hi = wilson_interval(k, n)
            predicted = theory[str(G)] if str(G) in theory else theory[G]
            ok = bool(lo <= predicted <= hi)
            inside += ok
            rows.append([name, G, n, f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]", f"{predicted:.3f}",
                         "yes" if ok else "no"])
    return {"rows": rows, "inside": int(inside), "cells": len(rows)}


def _which_regimes(names: list[str], regimes: list[str]) -> str:
    return "both regimes" if len(names) == len(regimes) else f"the {names[0]} regime"


def gstar_report(axis: dict) -> dict:
    """The G* check of a compute axis, per regime, for the table and the prose: each
    regime's fitted G* = 1 + √(c₃/c₁), its bootstrap range, largest residual, the grid G it
    predicts, the best measured G, the regret of the prediction against the best other G,
    the test's MDE, whether any prediction could have failed, and the verdict
    (:func:`grpolab.labs.stats.gstar_verdict`, computed by the sweep). Returns ``rows``
    (one per regime with a fit), ``glue`` (``gstar_<regime>``, ``gstar_verdict_<regime>``,
    ``gstar_power_words``, ``gstar_binding``) and ``notes`` (the fit's own, and why a fit
    failed). "agrees" is unavailable where no grid G could have failed the test; the
    constraint c₃ ≥ c₁ + ‖∇J‖² "binds" where the fit notes say so.

    ``axis``: ``compute_axis.json``. Derived in: book/labs/05-compute-axis.md, "G*".
    """
    regimes = list(axis["regimes"])
    rows, glue, notes = [], {}, []
    for regime in regimes:
        g = axis["regimes"][regime].get("g_star")
        if not g or "error" in g:
            why = (g or {}).get("error", "no gradient-noise rows")
            notes.append(f"{regime} no G* fit: {why}")
            glue[f"gstar_verdict_{regime}"] = f"no verdict, since the fit failed ({why})"
            continue
        v = g["verdict"]
        rng = g.get("range")
        rb = v["regret_bootstrap"]
        rows.append([regime, f"{g['g_star']:.2f}",
                     "–" if rng is None else f"[{rng[0]:.2f}, {rng[1]:.2f}]",
                     f"{g['max_rel_residual']:.0%}", v["predicted_G"], v["best"]["best"],
                     f"{rb['mean']:+.4f} [{rb['low']:+.4f}, {rb['high']:+.4f}]",
                     f"{v['power']['mde']:.4f}", "yes" if v["power"]["a_prediction_can_fail"]
                     else "no", v["verdict"]])
        glue[f"gstar_{regime}"] = f"{g['g_star']:.2f}"
        glue[f"gstar_verdict_{regime}"] = f"{v['verdict']} ({v['why']})"
        notes += [f"{regime}: {note}" for note in g["notes"]]
    powerless = [r for r in regimes if "verdict" in axis["regimes"][r].get("g_star", {})
                 and not axis["regimes"][r]["g_star"]["verdict"]["power"]["a_prediction_can_fail"]]
    glue["gstar_power_words"] = (
        f"In {_which_regimes(powerless, regimes)} the largest regret any grid G has is below "
        "the margin plus the test's MDE, so no prediction could have failed there, and "
        "\"agrees\" is not available." if powerless else
        "In both regimes some grid G could have failed the test.")
    binding = [r for r in regimes if any("binds" in n for n in
                                         axis["regimes"][r].get("g_star", {}).get("notes", []))]
    glue["gstar_binding"] = (
        f"In {_which_regimes(binding, regimes)} the fit sits on that constraint: the measured "
        "noise alone would put c₃ below c₁ + ‖∇J‖², which the model rules out; on the "
        "constraint, G* = 1 + √(1 + ‖∇J‖²/c₁) ≈ 2, the smallest G the model allows."
        if binding else "The constraint does not bind in either regime.")
    return {"rows": rows, "glue": glue, "notes": notes}


def zero_variance_gaps(summary: dict) -> dict:
    """How far the running prediction of the zero-variance fraction missed, per regime:
    the mean |observed − predicted| by G (``by_G``), the plug-in estimate's gap relative to
    the unbiased one's (``ratios``), and whether the gap grows with G (|ρ| > 0.5 between
    log₂ G and the gap; ``growth``). ``plugin_verdict``: the plug-in gap is "smaller than",
    "larger than" or "about the same as" the unbiased one's in every regime.

    ``summary``: ``summary.json``. Derived in: book/labs/01-g-sweep.md, "The zero-variance
    fraction".
    """
    by_regime, ratios, growth = {}, [], []
    for name, info in summary["regimes"].items():
        ratios.append(info["zero_variance_mean_abs_gap_plugin"]
                      / info["zero_variance_mean_abs_gap"])
        by_G: dict[int, list[float]] = {}
        for r in summary["runs"]:
            if r["regime"] == name and r["zero_variance_abs_gap"] is not None:
                by_G.setdefault(int(r["G"]), []).append(r["zero_variance_abs_gap"])
        Gs = sorted(by_G)
        g = [float(np.mean(by_G[G])) for G in Gs]
        rho = float(np.corrcoef(np.log2(Gs), g)[0, 1])
        trend = ("grows with G" if rho > 0.5 else "shrinks with G" if rho < -0.5
                 else "has no clear trend in G")
        growth.append(f"{name}: {trend} ({g[0]:.3f} at G = {Gs[0]}, {g[-1]:.3f} at "
                      f"G = {Gs[-1]})")
        by_regime[name] = dict(zip(Gs, g, strict=True))
    return {"by_G": by_regime, "ratios": ratios, "growth": growth,
            "plugin_ratio": f"{min(ratios):.1f} to {max(ratios):.1f}",
            "plugin_verdict": "smaller than" if max(ratios) < 1 else "larger than"
                              if min(ratios) > 1 else "about the same as"}


def clipped_share(steps: list[dict], max_grad_norm: float) -> dict[tuple[str, int], float]:
    """The share of logged steps whose gradient norm before clipping exceeded
    ``max_grad_norm``, per (regime, G), from ``steps.csv`` rows
    (:meth:`grpolab.labs.lab_results.LabResults.steps`).
    Used by: book/theory/09-loss-aggregation.md, "Clipping"."""
    out: dict[tuple[str, int], list[bool]] = {}
    for row in steps:
        out.setdefault((row["regime"], int(row["G"])), []).append(
            float(row["grad_norm"]) > max_grad_norm)
    return {key: float(np.mean(v)) for key, v in out.items()}
