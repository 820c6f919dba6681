"""Matplotlib figures of the book, one function per figure.

Every function computes its data through :mod:`grpolab.theory` or :mod:`grpolab.simulate`
and returns the ``Figure`` (the data is on its artists, which the tests read back).
Chapters call these in one line, so the notebooks stay thin.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from grpolab import simulate, theory
from grpolab._palette import g_color

__all__ = [
    "baseline_variance_figure",
    "beta_prior_figure",
    "cost_figure",
    "explorer_figure",
    "gradient_mse_figure",
    "group_std_figure",
    "html_table",
    "mc_check_figure",
    "reward_granularity_figure",
    "temperature_figure",
    "zero_variance_heatmap",
]

FIGSIZE = (6.4, 3.6)


def _log2_x(ax) -> None:
    """A log-2 x axis labelled 1, 2, 4, ... rather than 2^0, 2^1, ..."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _fig(figsize=FIGSIZE):
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


def html_table(headers: Sequence[str], rows: Sequence[Sequence], *, digits: int = 4):
    """An IPython HTML table; floats are shown with ``digits`` significant digits."""
    from IPython.display import HTML

    def cell(v) -> str:
        if isinstance(v, float | np.floating):
            return f"{float(v):.{digits}g}"
        return html.escape(str(v))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return HTML(f'<table class="grpolab-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")


def explorer_figure(explorer, params: dict):
    """Draw a :class:`grpolab.book.sliders.Explorer` at one slider position (the live kind)."""
    x, series = explorer.curves(**explorer.curve_params(params))
    readouts = explorer.readouts(**params)
    fig, ax = _fig((6.4, 4.2))
    n = len(series)
    for i, (label, y) in enumerate(series.items()):
        # the first series is the one the title names: on top of the others (zorder)
        ax.plot(x, y, label=label, zorder=2 + n - i, lw=2.2 if i == 0 else 1.6)
    if explorer.marker is not None:
        mx = params[explorer.marker]
        ax.axvline(mx, color="0.4", ls="--", lw=1)
    if explorer.logx:
        _log2_x(ax)
    if explorer.logy:
        ax.set_yscale("log")
    if explorer.ylim:
        ax.set_ylim(*explorer.ylim)
    ax.set_xlabel(explorer.xlabel)
    ax.set_ylabel(explorer.ylabel)
    ax.set_title(explorer.title)
    ax.legend(fontsize=8)
    text = "\n".join(f"{k}: {v:.4g}" for k, v in readouts.items())
    fig.text(0.01, -0.02, text, fontsize=8, va="top", family="monospace")
    return fig


def zero_variance_heatmap(ps: Sequence[float] | None = None, Gs: Sequence[int] | None = None):
    """Heat map of p^G + (1 − p)^G over pass rate p (rows) and group size G (columns)."""
    ps = np.linspace(0.01, 0.99, 99) if ps is None else np.asarray(ps, dtype=float)
    Gs = np.array([2, 4, 8, 16, 32, 64]) if Gs is None else np.asarray(Gs)
    z = np.asarray(theory.zero_variance_probability(ps[:, None], Gs[None, :]))
    fig, ax = _fig((6.4, 4.0))
    im = ax.imshow(z, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=1,
                   extent=(-0.5, len(Gs) - 0.5, ps[0], ps[-1]), interpolation="nearest")
    ax.set_xticks(range(len(Gs)), [str(g) for g in Gs])
    ax.set_xlabel("group size G")
    ax.set_ylabel("pass rate p")
    ax.set_title("P(zero-variance group) = p^G + (1 − p)^G")
    cs = ax.contour(np.arange(len(Gs)), ps, z, levels=[0.1, 0.5, 0.9], colors="white",
                    linewidths=0.8)
    ax.clabel(cs, fmt="%.1f", fontsize=8)
    fig.colorbar(im, ax=ax, label="probability")
    return fig


def mc_check_figure(x, closed_form, estimates: Sequence[simulate.MCEstimate], *, xlabel: str,
                    ylabel: str, title: str, logx: bool = False, logy: bool = False):
    """A closed form (line) against Monte Carlo estimates (points with ±2 SE bars)."""
    x = np.asarray(x, dtype=float)
    fig, ax = _fig()
    ax.plot(x, closed_form, "-", label="closed form")
    ax.errorbar(x, [e.mean for e in estimates], yerr=[2 * e.stderr for e in estimates],
                fmt="o", ms=4, capsize=3, label="Monte Carlo (±2 SE)")
    if logx:
        _log2_x(ax)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return fig


def baseline_variance_figure(Gs: Sequence[int], reward_variance: float = 0.25, *,
                             n_groups: int = 100_000, seed: int = 0):
    """Var(group mean) = σ²/G against simulated Bernoulli(½) groups (σ² = ¼) on log axes."""
    Gs = np.asarray(Gs)
    p = 0.5 if reward_variance == 0.25 else None
    if p is None:
        raise ValueError("baseline_variance_figure simulates Bernoulli(1/2) rewards: "
                         "reward_variance must be 0.25")
    mc = [simulate.baseline_variance_mc(int(G), p=p, n_groups=n_groups, seed=seed + i)
          for i, G in enumerate(Gs)]
    return mc_check_figure(Gs, np.asarray(theory.baseline_variance(reward_variance, Gs)), mc,
                           xlabel="group size G", ylabel="Var(group mean)",
                           title="Var(baseline) = σ²/G, 0/1 rewards with p = ½",
                           logx=True, logy=True)


def group_std_figure(p: float, Gs: Sequence[int], *, ddof: int = 1, n_groups: int = 100_000,
                     seed: int = 0):
    """Distribution of a group's own std for G Bernoulli(p) rewards, one panel per G."""
    Gs = list(Gs)
    fig, axes = plt.subplots(1, len(Gs), figsize=(2.2 * len(Gs), 2.8), sharey=True,
                             layout="constrained", squeeze=False)
    true_sd = float(np.sqrt(theory.bernoulli_variance(p)))
    for ax, G in zip(axes[0], Gs, strict=True):
        s = simulate.group_std_mc(p, int(G), ddof=ddof, n_groups=n_groups, seed=seed)
        values, counts = np.unique(np.round(s, 12), return_counts=True)
        ax.bar(values, counts / counts.sum(), width=0.02, color=g_color(G))
        ax.axvline(true_sd, color="C3", ls="--", lw=1)
        ax.set_title(f"G = {G}")
        ax.set_xlabel("group std s")
    axes[0][0].set_ylabel("fraction of groups")
    fig.suptitle(f"The group's own std, p = {p:g} (dashed: true σ = {true_sd:.3f})")
    return fig


def beta_prior_figure(Gs: Sequence[int], priors: Sequence[tuple[float, float]],
                      pass_rates: Sequence[float] | None = None, pass_rates_label: str = ""):
    """E[p^G + (1−p)^G] over Beta(a, b) priors (and optionally a list of pass rates) vs G."""
    Gs = np.asarray(Gs)
    fig, ax = _fig()
    for a, b in priors:
        ax.plot(Gs, theory.beta_zero_variance_probability(Gs, a, b), "-o", ms=3,
                label=f"p ~ Beta({a:g}, {b:g})")
    if pass_rates is not None:
        ax.plot(Gs, theory.empirical_zero_variance_probability(pass_rates, Gs), "-s", ms=3,
                color="k", label=pass_rates_label or "empirical pass rates")
    _log2_x(ax)
    ax.set_ylim(0, 1)
    ax.set_xlabel("group size G")
    ax.set_ylabel("zero-variance fraction")
    ax.set_title("Zero-variance probability averaged over difficulty")
    ax.legend(fontsize=8)
    return fig


def cost_figure(prompts: int, Gs: Sequence[int], prompt_length: float,
                completion_length: float):
    """Tokens of one sampling step vs G: decode, and prefill with/without a shared prompt KV."""
    Gs = np.asarray(Gs)
    shared = theory.sampling_cost(prompts, Gs, prompt_length, completion_length)
    unshared = theory.sampling_cost(prompts, Gs, prompt_length, completion_length,
                                    share_prompt_kv=False)
    fig, ax = _fig()

    def along_G(values):  # the shared prefill does not depend on G: repeat it per G
        return np.broadcast_to(np.asarray(values, dtype=float), Gs.shape)

    ax.plot(Gs, along_G(shared.generated_tokens), "-o", ms=3, label="decode tokens B·G·L_c")
    ax.plot(Gs, along_G(unshared.prompt_tokens_encoded), "-s", ms=3,
            label="prefill, prompt re-encoded per sample B·G·L_p")
    ax.plot(Gs, along_G(shared.prompt_tokens_encoded), "-^", ms=3,
            label="prefill, prompt KV shared B·L_p")
    _log2_x(ax)
    ax.set_yscale("log")
    ax.set_xlabel("group size G")
    ax.set_ylabel("tokens per step")
    ax.set_title(f"B = {prompts} prompts, L_p = {prompt_length:g}, L_c = {completion_length:g}")
    ax.legend(fontsize=8)
    return fig


def reward_granularity_figure(widths: Sequence[float], G: int = 8, *, n_groups: int = 2000,
                              seed: int = 0, eps: float = 1e-4):
    """Mean |advantage| vs the spread w of continuous rewards drawn from U[1 − w, 1].

    Before normalization |r_i − r̄| shrinks with w; after dividing by the group std it
    stays near 0.8 until w approaches eps, so a 0.001 difference becomes a full-size signal.
    """
    from grpolab.advantages import group_advantages

    widths = np.asarray(widths, dtype=float)
    rng = np.random.default_rng(seed)
    u = rng.random((n_groups, G))
    raw, scaled = [], []
    for w in widths:
        r = (1.0 - w * u).ravel()
        raw.append(np.abs(group_advantages(r, G, scale="none")).mean())
        scaled.append(np.abs(group_advantages(r, G, scale="group", eps=eps)).mean())
    fig, ax = _fig()
    ax.plot(widths, raw, "-o", ms=3, label="|r_i − r̄| (no std scaling)")
    ax.plot(widths, scaled, "-s", ms=3, label=f"|r_i − r̄| / (s + {eps:g}) (GRPO)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("reward spread w (rewards in [1 − w, 1])")
    ax.set_ylabel("mean |advantage|")
    ax.set_title(f"Std normalization rescales tiny differences (G = {G})")
    ax.legend(fontsize=8)
    return fig


def temperature_figure(logits: Sequence[float], temperatures: Sequence[float],
                       Gs: Sequence[int]):
    """P(all G samples identical) vs temperature for a policy with the given logits."""

    temperatures = np.asarray(temperatures, dtype=float)
    fig, ax = _fig()
    for G in Gs:
        y = [theory.identical_group_probability(softmax_at_temperature(logits, T), int(G))
             for T in temperatures]
        ax.plot(temperatures, y, label=f"G = {G}", color=g_color(G))
    ax.set_xlabel("sampling temperature T")
    ax.set_ylabel("P(all G answers identical)")
    ax.set_ylim(0, 1)
    ax.set_title("Low temperature collapses the group")
    ax.legend(fontsize=8)
    return fig


def gradient_mse_figure(logits: Sequence[float], rewards: Sequence[float], Gs: Sequence[int], *,
                        n_groups: int = 50_000, seed: int = 0):
    """Group-gradient MSE of a softmax policy with the oracle and the leave-one-out baseline.

    Lines are the closed forms of book/theory/02 ("How G enters the gradient's variance"),
    tr Σ/G and tr Σ/G + (σ² E‖∇log π‖² + ‖∇J‖²)/(G(G − 1)); points are
    :func:`grpolab.simulate.leave_one_out_gradient_mc` (±2 SE). The gap between the two
    lines, the price of estimating the baseline, shrinks like 1/G².
    """
    m = simulate.softmax_policy_moments(logits, rewards)
    G = np.asarray(Gs, dtype=float)
    oracle = (m["weighted"] - m["true_gradient_sq"]) / G
    loo = oracle + (m["sigma2"] * m["score_sq"] + m["true_gradient_sq"]) / (G * (G - 1))
    runs = [simulate.leave_one_out_gradient_mc(logits, rewards, int(g), n_groups=n_groups,
                                               seed=seed + int(g)) for g in Gs]
    fig, ax = _fig()
    for label, line, key, fmt in (("oracle baseline μ: tr Σ / G", oracle, "oracle_group_mse", "o"),
                                  ("leave-one-out baseline", loo, "loo_group_mse", "s")):
        est = [r[key] for r in runs]
        (ln,) = ax.plot(G, line, "-", label=f"{label} (closed form)")
        ax.errorbar(G, [e.mean for e in est], yerr=[2 * e.stderr for e in est], fmt=fmt, ms=4,
                    capsize=3, color=ln.get_color(), label=f"{label} (Monte Carlo ±2 SE)")
    _log2_x(ax)
    ax.set_yscale("log")
    ax.set_xlabel("group size G")
    ax.set_ylabel("E‖ĝ − ∇J‖² of one group's gradient")
    ax.set_title("The baseline's cost is the gap between the lines: O(1/G²)")
    ax.legend(fontsize=7)
    return fig


def softmax_at_temperature(logits: Sequence[float], temperature: float) -> np.ndarray:
    """softmax(logits / T): the sampling distribution at temperature T > 0."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    z = np.asarray(logits, dtype=float) / temperature
    z = np.exp(z - z.max())
    return z / z.sum()
