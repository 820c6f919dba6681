"""Plots of a G sweep (PNG and SVG), from the files a sweep writes; no training here.

- ``accuracy.{png,svg}``: held-out greedy accuracy per G, mean and min–max band across
  seeds, against steps (per-step view) and against completions (per-completion view), one
  row per regime.
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

from grpolab.labs.common import save_figure

__all__ = ["plot_sweep", "load_curves", "plot_accuracy", "plot_zero_variance",
           "plot_gradient_noise", "read_sweep_summary"]


_RUN_KEYS = ("regime", "G", "seed", "zero_variance_observed", "zero_variance_predicted")
_REGIME_KEYS = ("zero_variance_at_warm_start_theory",)
_CURVE_KEYS = ("regime", "G", "seed", "step", "completions", "eval_greedy_accuracy")


def read_sweep_summary(out: str) -> dict:
    """``out/summary.json``, checked to be a sweep's (what :func:`plot_sweep` reads): a
    damaged or foreign file is an error that names it, not a KeyError."""
    from grpolab.grpo.records import CorruptFileError, read_json

    path = os.path.join(out, "summary.json")
    what = "a sweep summary written by 'grpolab lab sweep'"
    summary = read_json(path, what, keys=("preset", "runs", "regimes"))
    runs, regimes = summary["runs"], summary["regimes"]
    if not isinstance(runs, list) or not isinstance(regimes, dict):
        raise CorruptFileError(path, f"is not {what} ('runs' is not a list of runs)")
    for r in runs:
        if not isinstance(r, dict) or any(k not in r for k in _RUN_KEYS):
            raise CorruptFileError(path, f"is not {what} (a run lacks {', '.join(_RUN_KEYS)})")
    for name, info in regimes.items():
        if not isinstance(info, dict) or any(k not in info for k in _REGIME_KEYS):
            raise CorruptFileError(path, f"is not {what} (regime {name!r} lacks "
                                   f"{', '.join(_REGIME_KEYS)})")
    return summary


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


def _colors(Gs):
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("viridis")
    return {G: cmap(i / max(1, len(Gs) - 1)) for i, G in enumerate(sorted(Gs))}


def plot_accuracy(rows: list[dict], regimes: list[str], metric: str = "eval_greedy_accuracy"):
    """Accuracy vs step and vs completions, mean line and min–max seed band per G."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(regimes), 2, figsize=(10, 3.2 * len(regimes)), squeeze=False)
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
        axes[i, 1].set_xlabel("completions sampled")
        for ax in axes[i]:
            ax.set_ylabel("held-out accuracy" if metric.startswith("eval_greedy")
                          else metric.replace("_", " "))
            ax.set_title(f"{regime}")
            ax.grid(alpha=0.3)
        axes[i, 0].legend(fontsize=8)
    fig.suptitle("Held-out accuracy (greedy); band = min–max over seeds", fontsize=11)
    fig.tight_layout()
    return fig


def plot_zero_variance(summary: dict, regimes: list[str]):
    """Zero-variance fraction vs G: closed form at the warm start, observed, predicted."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(regimes), figsize=(4.6 * len(regimes), 3.4), squeeze=False)
    for ax, regime in zip(axes[0], regimes, strict=True):
        info = summary["regimes"][regime]
        th = {int(k): v for k, v in info["zero_variance_at_warm_start_theory"].items()}
        if th:
            Gs = sorted(th)
            ax.plot(Gs, [th[G] for G in Gs], "k-", label="theory at warm start\n"
                    "mean of p^G+(1-p)^G (census)")
        runs = [r for r in summary["runs"] if r["regime"] == regime]
        ax.scatter([r["G"] for r in runs], [r["zero_variance_observed"] for r in runs],
                   marker="o", color="C0", label="observed (run mean)", zorder=3)
        pred = [r for r in runs if r["zero_variance_predicted"] is not None]
        ax.scatter([r["G"] * 1.08 for r in pred], [r["zero_variance_predicted"] for r in pred],
                   marker="x", color="C3", label="predicted from running\np estimates", zorder=3)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("G")
        ax.set_ylabel("fraction of zero-variance groups")
        gap = info.get("zero_variance_mean_abs_gap")
        ax.set_title(f"{regime}" + (f" (mean |gap| {gap:.3f})" if gap is not None else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_gradient_noise(summary: dict, regimes: list[str]):
    """Gradient noise at the warm start vs G, and the mean logged gradient norm of runs."""
    import matplotlib.pyplot as plt

    noise = summary.get("gradient_noise", {})
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.4))
    for i, regime in enumerate(regimes):
        rows = noise.get(regime, [])
        if rows:
            mode = summary["regimes"].get(regime, {}).get("mode", "budget")
            label = f"{regime} ({'completions' if mode == 'budget' else 'prompts'} per step fixed)"
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
    axes[0].set_ylabel("E‖g − ḡ‖² (trace variance)")
    axes[0].set_title("Gradient noise at the warm start")
    axes[1].set_ylabel("E‖g − ḡ‖² / ‖ḡ‖²")
    axes[1].set_title("Noise relative to the mean gradient")
    axes[2].set_ylabel("mean gradient norm during training")
    axes[2].set_title("Logged gradient norm (before clipping)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        if any(y > 0 for line in ax.get_lines() for y in line.get_ydata()):
            ax.set_yscale("log")
        ax.set_xlabel("G")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
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


# ----------------------------------------------------------------------------- G* vs best G
def predicted_g_star(noise_rows: list[dict], *, n_boot: int = 1000, seed: int = 0) -> dict:
    """G* = √(c₃/c₁) predicted before training from the warm start's gradient noise.

    ``noise_rows``: one regime of ``gradient_noise.json`` (rows at several (B, G)). The fit
    is :func:`grpolab.advise.fit_noise_constants` (non-negative least squares of the
    noise-to-signal ratio on 1/B, 1/(BG), 1/(BG²)). Its uncertainty: a percentile bootstrap
    over each row's independent batch gradients when the rows carry their Gram matrix, and
    always the range of G* when one G is left out of the fit.
    """
    from grpolab import theory
    from grpolab.advise import AdviseError, fit_noise_constants
    from grpolab.grpo.measure import noise_from_gram

    def g_star(rows):
        try:
            c = fit_noise_constants(rows)
        except AdviseError:
            return None
        return float(theory.optimal_group_size(c.c1, c.c3)) if c.c1 > 0 else None

    c = fit_noise_constants(noise_rows)
    out = {"c1": c.c1, "c2": c.c2, "c3": c.c3, "g_star": g_star(noise_rows)}
    loo = [g_star([r for r in noise_rows if r is not row]) for row in noise_rows]
    loo = [g for g in loo if g is not None and np.isfinite(g)]
    out["leave_one_G_out"] = [min(loo), max(loo)] if loo else None
    if all("gram" in r for r in noise_rows):
        rng = np.random.default_rng(seed)
        boots = []
        for _ in range(n_boot):
            rows = []
            for r in noise_rows:
                K = np.asarray(r["gram"])
                idx = rng.integers(0, K.shape[0], K.shape[0])
                rows.append({**r, **noise_from_gram(K[np.ix_(idx, idx)])})
            g = g_star(rows)
            if g is not None and np.isfinite(g):
                boots.append(g)
        if boots:
            out["bootstrap_95"] = [float(np.percentile(boots, 2.5)),
                                   float(np.percentile(boots, 97.5))]
            out["bootstrap_draws"] = len(boots)
    return out
