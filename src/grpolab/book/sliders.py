"""Sliders for the book's figures, in two kinds that share one definition.

- **Live** (a notebook with a kernel): ipywidgets sliders; every move recomputes the
  figure through :mod:`grpolab.theory` and redraws it with matplotlib.
- **Static** (the rendered HTML book, no kernel, no network): grpolab computes the
  figure for every slider position at build time, embeds that grid as JSON, and a small
  self-contained script (``grpolab/static/grpolab-sliders.js``, served from the build)
  draws it as SVG.

Both kinds draw the same :class:`Explorer`: sliders, a ``curves`` function (the lines)
and a ``readouts`` function (numbers at the slider position). A chapter cell is one
line, ``widgets.show("zero-variance")``; it gives the static kind when the environment
variable ``GRPOLAB_WIDGETS`` is ``"static"`` (the book build sets it, see
:mod:`grpolab.book.build`) and the live kind otherwise.
"""

from __future__ import annotations

import functools
import html
import itertools
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from grpolab import allocation, theory

__all__ = [
    "EXPLORERS",
    "Explorer",
    "Slider",
    "explorer_grid",
    "live_slider_figure",
    "show",
    "static_slider_figure",
    "widget_kind",
]

#: Significant digits kept in the embedded grid (keeps pages small; tests allow 1e-6).
GRID_DIGITS = 7


@dataclass(frozen=True)
class Slider:
    """One slider: a parameter ``name`` that moves over the listed ``values``."""

    name: str
    label: str
    values: tuple[float, ...]
    initial: float

    def __post_init__(self):
        if not self.values:
            raise ValueError(f"slider {self.name!r} needs at least one value")
        if self.initial not in self.values:
            raise ValueError(f"slider {self.name!r}: initial {self.initial!r} is not in values")

    @property
    def initial_index(self) -> int:
        return list(self.values).index(self.initial)


@dataclass(frozen=True)
class Explorer:
    """A figure with sliders.

    Attributes:
        key: short name used by :func:`show`.
        title, xlabel, ylabel: text of the figure.
        sliders: all sliders, in display order.
        curves: ``curves(**params) -> (x, {label: y})`` with params of the sliders named
            in ``curve_sliders``; the lines of the plot.
        readouts: ``readouts(**params) -> {label: value}`` with every slider's param.
        curve_sliders: sliders the curves depend on; the others (e.g. the G marker) only
            move the marker and the readouts, so the static grid stays small.
        marker: slider whose value is marked on the x axis (None for no marker).
        logx, logy, ylim: axes (``logx`` uses powers of 2 as ticks).
        caption: one sentence under the figure.
    """

    key: str
    title: str
    xlabel: str
    ylabel: str
    sliders: tuple[Slider, ...]
    curves: Callable[..., tuple[np.ndarray, dict[str, np.ndarray]]]
    readouts: Callable[..., dict[str, float]]
    curve_sliders: tuple[str, ...]
    marker: str | None = None
    logx: bool = False
    logy: bool = False
    ylim: tuple[float, float] | None = None
    caption: str = ""
    digits: int = 4
    extra: dict = field(default_factory=dict)

    def slider(self, name: str) -> Slider:
        for s in self.sliders:
            if s.name == name:
                return s
        raise ValueError(f"explorer {self.key!r} has no slider named {name!r}")

    def initial_params(self) -> dict[str, float]:
        return {s.name: s.initial for s in self.sliders}

    def curve_params(self, params: dict[str, float]) -> dict[str, float]:
        return {n: params[n] for n in self.curve_sliders}


# ----------------------------------------------------------------------------------------
# The static kind: a precomputed grid drawn by grpolab-sliders.js
# ----------------------------------------------------------------------------------------
def _clean(values) -> list:
    """Floats rounded to GRID_DIGITS significant digits; NaN -> null, +inf -> "inf"."""
    out = []
    for v in np.asarray(values, dtype=float).ravel():
        if math.isnan(v) or v == -math.inf:
            out.append(None)
        elif v == math.inf:
            out.append("inf")
        else:
            out.append(float(f"{v:.{GRID_DIGITS}g}"))
    return out


def explorer_grid(explorer: Explorer) -> dict:
    """The JSON-ready grid of every slider position (the format grpolab-sliders.js reads).

    ``curves`` is a flat, row-major list over the index grid of ``curve_sliders``;
    ``readouts`` is a flat, row-major list over the index grid of all sliders.
    """
    curve_sliders = [explorer.slider(n) for n in explorer.curve_sliders]
    curves, series_labels = [], None
    for combo in itertools.product(*(s.values for s in curve_sliders)):
        x, series = explorer.curves(**dict(zip(explorer.curve_sliders, combo, strict=True)))
        labels = list(series)
        if series_labels is None:
            series_labels = labels
        elif labels != series_labels:
            raise ValueError(f"explorer {explorer.key!r}: series labels change with the sliders")
        curves.append({"x": _clean(x), "ys": [_clean(series[k]) for k in labels]})
    readouts, readout_labels = [], None
    names = [s.name for s in explorer.sliders]
    for combo in itertools.product(*(s.values for s in explorer.sliders)):
        r = explorer.readouts(**dict(zip(names, combo, strict=True)))
        if readout_labels is None:
            readout_labels = list(r)
        readouts.append(_clean([r[k] for k in readout_labels]))
    return {
        "key": explorer.key,
        "title": explorer.title,
        "xlabel": explorer.xlabel,
        "ylabel": explorer.ylabel,
        "logx": explorer.logx,
        "logy": explorer.logy,
        "ylim": list(explorer.ylim) if explorer.ylim else None,
        "marker": explorer.marker,
        "digits": explorer.digits,
        "sliders": [{"name": s.name, "label": s.label, "values": _clean(s.values),
                     "initial": s.initial_index} for s in explorer.sliders],
        "curve_sliders": list(explorer.curve_sliders),
        "series": series_labels,
        "curves": curves,
        "readouts_labels": readout_labels,
        "readouts": readouts,
    }


def _static_asset(name: str) -> str:
    return resources.files("grpolab.book").joinpath("static", name).read_text(encoding="utf-8")


STATIC_NOTE = ("Static slider: every position was computed by grpolab when this page was "
               "built; it runs in your browser with no kernel and no network. "
               "In a notebook the same cell gives live ipywidgets sliders.")
LIVE_NOTE = ("Live slider: each move recomputes the figure through grpolab in your kernel.")


def static_slider_html(explorer: Explorer, *, inline_assets: bool = False) -> str:
    """HTML for the static kind: a container with the grid as embedded JSON.

    With ``inline_assets=False`` (the book), the page loads grpolab-sliders.js/.css from
    the build's ``_static``; ``inline_assets=True`` embeds them, for a standalone file.
    """
    grid = json.dumps(explorer_grid(explorer), separators=(",", ":"), allow_nan=False)
    grid = grid.replace("</", "<\\/")  # never close the <script> early
    parts = [f'<div class="grpolab-static-slider" data-explorer="{html.escape(explorer.key)}">',
             f'<p class="grpolab-kind">{html.escape(STATIC_NOTE)}</p>',
             f'<p class="grpolab-title">{html.escape(explorer.title)}</p>',
             f'<script type="application/json" class="grpolab-grid">{grid}</script>',
             "</div>"]
    if explorer.caption:
        parts.insert(-1, f'<p class="grpolab-caption">{html.escape(explorer.caption)}</p>')
    out = "".join(parts)
    if inline_assets:
        out = (f"<style>{_static_asset('grpolab-sliders.css')}</style>{out}"
               f"<script>{_static_asset('grpolab-sliders.js')}</script>")
    else:  # the page's own copy of the script mounts it; call again in case it ran already
        out += ("<script>if (window.grpolabSliders) { window.grpolabSliders.mountAll(); }"
                "</script>")
    return out


def static_slider_figure(explorer: Explorer | str, *, inline_assets: bool = False):
    """The static kind as an IPython ``HTML`` display object (see :func:`static_slider_html`)."""
    from IPython.display import HTML

    explorer = EXPLORERS[explorer] if isinstance(explorer, str) else explorer
    return HTML(static_slider_html(explorer, inline_assets=inline_assets))


# ----------------------------------------------------------------------------------------
# The live kind: ipywidgets + matplotlib, recomputed on every move
# ----------------------------------------------------------------------------------------
def live_slider_figure(explorer: Explorer | str):
    """The live kind: ipywidgets sliders that redraw :func:`.figures.explorer_figure`."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from grpolab.book import figures

    explorer = EXPLORERS[explorer] if isinstance(explorer, str) else explorer
    controls = {
        s.name: w.SelectionSlider(options=[(f"{v:g}", v) for v in s.values], value=s.initial,
                                  description=s.name, continuous_update=False,
                                  layout=w.Layout(width="420px"),
                                  tooltip=s.label)
        for s in explorer.sliders
    }

    def redraw(**params):
        fig = figures.explorer_figure(explorer, params)
        display(fig)
        plt.close(fig)

    out = w.interactive_output(redraw, controls)
    note = w.HTML(f"<i>{html.escape(LIVE_NOTE)}</i>")
    labels = w.HTML("<br>".join(f"<b>{html.escape(s.name)}</b>: {html.escape(s.label)}"
                                for s in explorer.sliders))
    return w.VBox([note, labels, *controls.values(), out])


def widget_kind() -> str:
    """``"static"`` when ``GRPOLAB_WIDGETS=static`` (the book build), else ``"live"``."""
    kind = os.environ.get("GRPOLAB_WIDGETS", "live")
    if kind not in ("static", "live"):
        raise ValueError(f"GRPOLAB_WIDGETS must be 'static' or 'live', got {kind!r}")
    return kind


def show(key: str, kind: str | None = None):
    """Show explorer ``key`` as a live or static slider figure (default: :func:`widget_kind`)."""
    if key not in EXPLORERS:
        raise ValueError(f"unknown explorer {key!r}; choose from {sorted(EXPLORERS)}")
    kind = kind or widget_kind()
    if kind == "static":
        return static_slider_figure(EXPLORERS[key])
    if kind == "live":
        return live_slider_figure(EXPLORERS[key])
    raise ValueError(f"kind must be 'static' or 'live', got {kind!r}")


# ----------------------------------------------------------------------------------------
# The explorers of the theory chapters
# ----------------------------------------------------------------------------------------
def _grid(start: float, stop: float, step: float) -> tuple[float, ...]:
    n = int(round((stop - start) / step)) + 1
    return tuple(round(start + i * step, 10) for i in range(n))


P_VALUES = _grid(0.01, 0.99, 0.01)
G_VALUES = tuple(range(1, 65))
G_AXIS = np.arange(1, 65)
#: Prompts per step in DeepSeek-R1 (32 questions × 16 = 512 outputs; references.md).
R1_PROMPTS = 32


def _p_slider(initial: float = 0.1) -> Slider:
    return Slider("p", "pass rate p of the prompt", P_VALUES, initial)


def _g_slider(initial: int = 8, values: Sequence[int] = G_VALUES) -> Slider:
    return Slider("G", "group size G (completions per prompt)", tuple(values), initial)


def _grpo_curves(p):
    G = G_AXIS
    return G, {
        "baseline SE / σ = 1/√G": np.asarray(theory.baseline_standard_error(1.0, G)),
        "P(group carries signal)": np.asarray(theory.informative_probability(p, G)),
        "cost: completions per prompt / 64": G / 64.0,
    }


def _grpo_readouts(p, G):
    return {
        "completions per prompt (cost ∝ G)": float(G),
        "baseline SE / σ = 1/√G": theory.baseline_standard_error(1.0, G),
        "P(group carries signal) = 1 − p^G − (1−p)^G": theory.informative_probability(p, G),
        "P(at least one success) = 1 − (1−p)^G": theory.any_success_probability(p, G),
    }


def _baseline_curves(sigma2):
    G = G_AXIS
    loo = np.where(G >= 2, sigma2 / np.maximum(G - 1, 1), np.nan)
    return G, {
        "Var(group mean) = σ²/G": np.asarray(theory.baseline_variance(sigma2, G)),
        "Var(leave-one-out mean) = σ²/(G−1)": loo,
    }


def _baseline_readouts(sigma2, G):
    return {
        "Var(r̄) = σ²/G": theory.baseline_variance(sigma2, G),
        "SE(r̄) = σ/√G": theory.baseline_standard_error(sigma2, G),
        "variance removed by doubling G: σ²/G − σ²/(2G)": theory.baseline_variance(sigma2, G)
        - theory.baseline_variance(sigma2, 2 * G),
        "(G−1)/G, GRPO's advantage over RLOO's": theory.rloo_scale_factor(G),
    }


def _zero_curves(p):
    G = G_AXIS
    return G, {
        "P(zero-variance group) = p^G + (1−p)^G":
            np.asarray(theory.zero_variance_probability(p, G)),
        "P(all fail) = (1−p)^G": np.asarray(theory.all_fail_probability(p, G)),
        "P(all pass) = p^G": np.asarray(theory.all_pass_probability(p, G)),
    }


def _zero_readouts(p, G):
    return {
        "P(zero-variance group)": theory.zero_variance_probability(p, G),
        "P(all fail)": theory.all_fail_probability(p, G),
        "P(all pass)": theory.all_pass_probability(p, G),
        f"expected prompts with signal, of {R1_PROMPTS}":
            theory.expected_informative_prompts(p, G, R1_PROMPTS),
    }


BUDGET_VALUES = (128, 256, 512, 1024, 2048, 4096)
COST_G_VALUES = (2, 4, 8, 16, 32, 64)


def _cost_curves(budget, p):
    G = np.asarray(COST_G_VALUES)
    B = np.asarray(theory.fixed_budget_prompts(budget, G))
    return G, {
        "prompts per step B = budget / G": B.astype(float),
        "expected prompts with signal": np.asarray(theory.expected_informative_prompts(p, G, B)),
    }


def _cost_readouts(budget, p, G):
    B = theory.fixed_budget_prompts(budget, G)
    return {
        "prompts per step B = ⌊budget / G⌋": float(B),
        "completions per step B·G": float(B * G),
        "expected prompts with signal": theory.expected_informative_prompts(p, G, B),
        "expected completions in groups with signal":
            G * theory.expected_informative_prompts(p, G, B),
    }


DEGENERATE_G = tuple(range(2, 65))


def _degenerate_curves(p):
    G = np.asarray(DEGENERATE_G)
    return G, {
        "expected completions per kept group, G / η": np.asarray(
            theory.dynamic_sampling_expected_completions(p, G, 1)),
        "completions per group without filtering, G": G.astype(float),
    }


def _degenerate_readouts(p, G):
    return {
        "η = P(group kept) = 1 − p^G − (1−p)^G": theory.informative_probability(p, G),
        "expected groups generated per kept group, 1/η":
            theory.dynamic_sampling_expected_groups(p, G, 1),
        "expected completions per kept group, G/η":
            theory.dynamic_sampling_expected_completions(p, G, 1),
    }


def _normalization_curves(G):
    G = int(G)
    k = np.arange(1, G)  # groups with 0 < k < G correct answers
    out = {}
    for label, kw in (("A⁺, std with ddof = 1 (TRL, verl, OpenRLHF)", {"ddof": 1}),
                      ("A⁺, std with ddof = 0 (np.std)", {"ddof": 0}),
                      ("A⁺, no std scaling (Dr. GRPO)", {"scale": "none"})):
        out[label] = np.asarray(theory.binary_advantages(k, G, **kw)[0], dtype=float)
    return k / G, out


def _normalization_readouts(G):
    G = int(G)
    a1, n1 = theory.binary_advantages(1, G, ddof=1)
    a0, _ = theory.binary_advantages(1, G, ddof=0)
    return {
        "one correct of G: A⁺ (ddof = 1)": a1,
        "one correct of G: A⁻ (ddof = 1)": n1,
        "one correct of G: A⁺ (ddof = 0)": a0,
        "ratio ddof 0 / ddof 1 = √(G/(G−1))": a0 / a1,
    }


#: Gradient-noise constants of the exact model MSE(B, G) = c₁/B + c₂/(BG) + c₃/(BG(G − 1)),
#: in units of c₂ (c₂ shifts the whole curve by c₂/N and never moves G*). Every c₃ on the
#: grid is at least every c₁, as the model requires (c₃ ≥ c₁ + ‖∇J‖²).
C1_VALUES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
C3_VALUES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
C2_UNIT = 1.0
MSE_BUDGETS = (256, 512, 1024, 2048, 4096)
MSE_G_VALUES = (2, 4, 8, 16, 32, 64, 128, 256)
#: The curves' G axis: about 40 integers from 2 to 256, evenly spaced in log G.
MSE_G_AXIS = np.unique(np.round(np.geomspace(2, 256, 48))).astype(int)


def _quiet_optimum(c1, c3, form):
    """optimal_group_size without its G* < 2 warning (the paper form's optimum can fall
    below 2 on this grid, and the figure shows it)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", theory.GroupSizeWarning)
        return float(theory.optimal_group_size(c1, c3, form=form))


def _gstar_curves(c1, c3):
    """N·MSE over G at a fixed budget N = B·G (B real-valued: G·MSE(1, G)), for the exact
    and the paper form, with a vertical segment at each form's G*."""
    G = MSE_G_AXIS
    exact = G * np.asarray(theory.minibatch_gradient_mse(1, G, c1, C2_UNIT, c3), dtype=float)
    paper = G * np.asarray(theory.minibatch_gradient_mse(1, G, c1, C2_UNIT, c3, form="paper"),
                           dtype=float)
    x = G.astype(float)
    curves = {"exact: N·MSE = c₁G + c₂ + c₃/(G−1)": exact,
              "paper: N·MSE = c₁G + c₂ + c₃/G": paper}
    marks = {"G* = 1 + √(c₃/c₁) (exact)": _quiet_optimum(c1, c3, "exact"),
             "G* = √(c₃/c₁) (paper)": _quiet_optimum(c1, c3, "paper")}
    low, high = min(exact.min(), paper.min()) * 0.8, max(exact.max(), paper.max())
    for at in sorted(marks.values()):
        j = int(np.searchsorted(x, at))
        x = np.insert(x, j, [at, at])
        curves = {k: np.insert(v, j, [np.nan, np.nan]) for k, v in curves.items()}
    series = dict(curves)
    for label, at in marks.items():
        seg = np.full(x.shape, np.nan)
        if x[0] <= at <= x[-1]:
            j = int(np.searchsorted(x, at))
            seg[j:j + 2] = (low, high)
        series[label] = seg
    return x, series


def _gstar_readouts(c1, c3, budget, G):
    G = int(G)
    feasible = np.arange(2, 257)
    n_mse = feasible * np.asarray(theory.minibatch_gradient_mse(1, feasible, c1, C2_UNIT, c3))
    best = int(feasible[int(np.argmin(n_mse))])
    here = float(theory.minibatch_gradient_mse(1, G, c1, C2_UNIT, c3)) * G / budget
    return {
        "G* = 1 + √(c₃/c₁), exact form (the same for every budget)":
            _quiet_optimum(c1, c3, "exact"),
        "G* = √(c₃/c₁), paper form (one less)": _quiet_optimum(c1, c3, "paper"),
        "best integer G (exact form, B = N/G)": float(best),
        "prompts per step B = N/G at the slider's G": budget / G,
        "MSE at the slider's G (exact form)": here,
        "MSE at the slider's G / MSE at the best integer G": here * budget / float(n_mse.min()),
    }


from grpolab.book.figures import softmax_at_temperature  # noqa: E402

#: An illustrative policy over five distinct final answers (logits at temperature 1).
TEMPERATURE_LOGITS = (2.0, 1.0, 0.5, 0.0, -1.0)
T_VALUES = _grid(0.05, 2.0, 0.05)


def _temperature_curves(T):
    q = softmax_at_temperature(TEMPERATURE_LOGITS, T)
    G = G_AXIS
    return G, {
        "P(all G samples identical) = Σ π_j^G": np.asarray(
            theory.identical_group_probability(q, G)),
        "lower bound m^G (m = top probability)": np.asarray(
            theory.all_pass_probability(q.max(), G)),
    }


def _temperature_readouts(T, G):
    q = softmax_at_temperature(TEMPERATURE_LOGITS, T)
    return {
        "top answer's probability m": float(q.max()),
        "P(all G samples identical)": theory.identical_group_probability(q, G),
        "expected distinct answers in the group": float(np.sum(1 - (1 - q) ** G)),
    }


# ---- ch. 08–10: policy gradients, loss aggregation, DAPO
CRITIC_C1_VALUES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
CRITIC_COST_VALUES = (0.1, 0.25, 0.5, 1.0, 2.0)
CRITIC_ERROR_VALUES = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)
CRITIC_G_VALUES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
CRITIC_G_AXIS = np.unique(np.round(np.geomspace(2, 64, 24)).astype(int))
#: G searched for the group estimator's best G in the readouts.
CRITIC_G_SEARCH = np.arange(2, 1025)


def _critic_curves(c1, critic_cost, critic_error):
    G = CRITIC_G_AXIS
    group = np.asarray(theory.group_budget_mse(G, c1, 1.0, 1))
    critic = theory.critic_budget_mse(c1, 1.0, critic_cost, critic_error, 1)
    return G, {"group baseline (RLOO), G completions per prompt": group,
               "critic, one completion per prompt": np.full(G.shape, critic)}


def _critic_readouts(c1, critic_cost, critic_error, G):
    search = np.asarray(theory.group_budget_mse(CRITIC_G_SEARCH, c1, 1.0, 1))
    critic = theory.critic_budget_mse(c1, 1.0, critic_cost, critic_error, 1)
    return {
        "N·MSE, group at the slider's G": theory.group_budget_mse(int(G), c1, 1.0, 1),
        "N·MSE, critic": critic,
        "best G for the group": float(CRITIC_G_SEARCH[int(np.argmin(search))]),
        "N·MSE, group at its best G": float(search.min()),
        "critic / best group (< 1: the critic wins)": critic / float(search.min()),
    }


BETA_VALUES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def _normaliser_curves(a, b):
    G = G_AXIS
    share = 1.0 - np.asarray(theory.beta_zero_variance_probability(G, a, b))
    return G, {"s(G), zero-variance groups counted (every loss_type)": share,
               "s = 1 with dynamic sampling (zero-variance groups dropped)": np.ones(G.shape)}


def _normaliser_readouts(a, b, G):
    def share(g):
        return 1.0 - theory.beta_zero_variance_probability(g, a, b)

    return {
        "zero-variance fraction E[p^G + (1−p)^G]": theory.beta_zero_variance_probability(G, a, b),
        "informative share s(G)": share(G),
        "s(G) / s(2): live share relative to G = 2": share(G) / share(2),
        "s(32) / s(G): live share at G = 32 relative to G": share(32) / share(G),
    }


TAU_VALUES = _grid(0.0, 1.0, 0.1)
TRUNCATION_P_VALUES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def _truncation_curves(p, tau):
    G = G_AXIS
    return G, {
        "P(zero variance), truncation rate τ":
            np.asarray(theory.truncated_zero_variance_probability(p, G, tau)),
        "P(zero variance) without truncation (τ = 0)":
            np.asarray(theory.zero_variance_probability(p, G)),
    }


def _truncation_readouts(p, tau, G):
    return {
        "effective pass rate q = p(1 − τ)": p * (1.0 - tau),
        "P(zero variance) with truncation": theory.truncated_zero_variance_probability(p, G, tau),
        "P(zero variance) without truncation": theory.zero_variance_probability(p, G),
        "P(all G truncated) = τ^G": float(tau) ** int(G),
    }


EXPLORERS: dict[str, Explorer] = {e.key: e for e in [
    Explorer(
        key="grpo-in-one-page",
        title="The two jobs of G, and its cost",
        xlabel="group size G", ylabel="value", logx=True, ylim=(0.0, 1.0),
        sliders=(_p_slider(0.1), _g_slider(8)), curve_sliders=("p",), marker="G",
        curves=_grpo_curves, readouts=_grpo_readouts,
        caption="Baseline noise falls like 1/√G, the chance that a group has both a "
                "success and a failure rises with G, and the cost rises linearly in G.",
    ),
    Explorer(
        key="baseline-variance",
        title="Var(baseline) = σ²/G",
        xlabel="group size G", ylabel="variance of the baseline", logx=True,
        sliders=(Slider("sigma2", "reward variance σ²", _grid(0.05, 1.0, 0.05), 0.25),
                 _g_slider(8)),
        curve_sliders=("sigma2",), marker="G", ylim=(0.0, 1.0),
        curves=_baseline_curves, readouts=_baseline_readouts,
        caption="σ² = 0.25 is the largest variance a 0/1 reward can have (p = ½).",
    ),
    Explorer(
        key="zero-variance",
        title="P(zero-variance group) = p^G + (1 − p)^G",
        xlabel="group size G", ylabel="probability", logx=True, ylim=(0.0, 1.0),
        sliders=(_p_slider(0.1), _g_slider(4)), curve_sliders=("p",), marker="G",
        curves=_zero_curves, readouts=_zero_readouts,
        caption=f"The last readout assumes {R1_PROMPTS} prompts per step, all with pass "
                "rate p (DeepSeek-R1 used 32 questions per step).",
    ),
    Explorer(
        key="cost-of-g",
        title="A fixed budget of completions per step: prompts × G",
        xlabel="group size G", ylabel="prompts per step", logx=True,
        sliders=(Slider("budget", "completions per step (budget)", BUDGET_VALUES, 512),
                 _p_slider(0.1), _g_slider(16, COST_G_VALUES)),
        curve_sliders=("budget", "p"), marker="G",
        curves=_cost_curves, readouts=_cost_readouts,
        caption="Every prompt has pass rate p; real batches mix difficulties "
                "(see the zero-variance chapter's averages).",
    ),
    Explorer(
        key="degenerate-groups",
        title="Dynamic sampling: completions generated per group kept",
        xlabel="group size G", ylabel="completions", logx=True, logy=True,
        sliders=(_p_slider(0.05), _g_slider(8, DEGENERATE_G)), curve_sliders=("p",),
        marker="G", curves=_degenerate_curves, readouts=_degenerate_readouts,
        caption="A dynamic sampler keeps a group only if 0 < #correct < G.",
    ),
    Explorer(
        key="normalization",
        title="Advantage of a correct answer when k of G are correct",
        xlabel="fraction correct k/G", ylabel="advantage A⁺",
        sliders=(_g_slider(4, tuple(range(2, 65))),), curve_sliders=("G",), marker=None,
        curves=_normalization_curves, readouts=_normalization_readouts,
        caption="eps = 1e-4 (TRL's default). Without std scaling the advantage is 1 − k/G.",
    ),
    Explorer(
        key="gradient-mse",
        title="Gradient MSE at a fixed budget: G* = 1 + √(c₃/c₁), not √(c₃/c₁)",
        xlabel="group size G", ylabel="N × MSE of the minibatch gradient (units of c₂)",
        logx=True, logy=True,
        sliders=(Slider("c1", "c₁: across-prompt variance of the true gradient", C1_VALUES, 0.01),
                 Slider("c3", "c₃: cost of estimating the baseline", C3_VALUES, 1.0),
                 Slider("budget", "completions per step N = B·G", MSE_BUDGETS, 1024),
                 _g_slider(16, MSE_G_VALUES)),
        curve_sliders=("c1", "c3"), marker="G",
        curves=_gstar_curves, readouts=_gstar_readouts,
        caption="Exact model c₁/B + c₂/(BG) + c₃/(BG(G−1)) against the paper's c₃/(BG²) "
                "(arXiv 2603.01162, Prop. 3), c₂ = 1, B = N/G. N·MSE does not depend on "
                "the budget N, so neither does either minimum; the budget moves only the "
                "readouts.",
    ),
    Explorer(
        key="temperature",
        title="How likely is a group of G identical answers?",
        xlabel="group size G", ylabel="probability", logx=True, ylim=(0.0, 1.0),
        sliders=(Slider("T", "sampling temperature T", T_VALUES, 0.3), _g_slider(8)),
        curve_sliders=("T",), marker="G",
        curves=_temperature_curves, readouts=_temperature_readouts,
        caption="An illustrative policy over five distinct answers with logits "
                f"{list(TEMPERATURE_LOGITS)} at T = 1, sampled with softmax(logits / T).",
    ),
    # ---- ch. 08–10: policy gradients, loss aggregation, DAPO
    Explorer(
        key="critic-or-group",
        title="Why no critic? Gradient error at equal compute: a critic or a group of G",
        xlabel="group size G", ylabel="N · MSE (units of c₂)", logx=True, logy=True,
        sliders=(Slider("c1", "c₁ / c₂: how much prompts disagree", CRITIC_C1_VALUES, 0.01),
                 Slider("critic_cost", "critic cost c (its size / the policy's)",
                        CRITIC_COST_VALUES, 1.0),
                 Slider("critic_error", "critic error e (squared error / σ²)",
                        CRITIC_ERROR_VALUES, 0.0),
                 _g_slider(8, CRITIC_G_VALUES)),
        curve_sliders=("c1", "critic_cost", "critic_error"), marker="G",
        curves=_critic_curves, readouts=_critic_readouts,
        caption="MSE_group = [c₁G + c₂ + (c₂ + 2c₁)/(G − 1)]/N and "
                "MSE_critic = (1 + c)(1 + e)(c₁ + c₂)/N (one completion per prompt), with "
                "κ = 1 and ‖∇J‖² ≪ c₁.",
    ),
    Explorer(
        key="loss-normaliser",
        title="How G enters the loss normaliser: the informative share s(G)",
        xlabel="group size G", ylabel="share of the normaliser", logx=True, ylim=(0.0, 1.0),
        sliders=(Slider("a", "Beta prior a (pass rates p ~ Beta(a, b))", BETA_VALUES, 1.0),
                 Slider("b", "Beta prior b", BETA_VALUES, 2.0),
                 _g_slider(8, tuple(range(2, 65)))),
        curve_sliders=("a", "b"), marker="G",
        curves=_normaliser_curves, readouts=_normaliser_readouts,
        caption="Zero-variance groups count in every TRL loss_type's denominator: a step's "
                "live share is s(G) = E[1 − p^G − (1 − p)^G]. It sets the step's noise; "
                "the expected step does not scale with it.",
    ),
    Explorer(
        key="overlong-truncation",
        title="Truncation makes groups constant: P(zero variance) with q = p(1 − τ)",
        xlabel="group size G", ylabel="probability", logx=True, ylim=(0.0, 1.0),
        sliders=(Slider("p", "pass rate p if nothing were cut off", TRUNCATION_P_VALUES, 0.5),
                 Slider("tau", "truncation rate τ", TAU_VALUES, 0.9),
                 _g_slider(16, CRITIC_G_VALUES)),
        curve_sliders=("p", "tau"), marker="G",
        curves=_truncation_curves, readouts=_truncation_readouts,
        caption="A completion cut off at the length limit scores 0; at τ → 1 every group is "
                "all-fail whatever p and G are.",
    ),
]}


# ----------------------------------------------------------------------------------------
# ch. 11–13: pass@k, KL, entropy
# ----------------------------------------------------------------------------------------
#: The base policy's pass rates in the pass@k explorer: the (j + ½)/N quantiles of a Beta
#: with mass near 0 (many hard prompts), as a prompt set is before RL.
PASSK_BETA = (0.5, 0.8)
PASSK_PROMPTS = 200
PASSK_K_AXIS = np.unique(np.round(np.geomspace(1, 1024, 41))).astype(int)
PASSK_K_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@functools.lru_cache(maxsize=1)
def _passk_base_rates() -> np.ndarray:
    from scipy import stats

    a, b = PASSK_BETA
    return stats.beta.ppf((np.arange(PASSK_PROMPTS) + 0.5) / PASSK_PROMPTS, a, b)


@functools.lru_cache(maxsize=512)
def _passk_crossing(power: float, shift: float) -> float:
    base = _passk_base_rates()
    cross = theory.pass_at_k_crossing(base, theory.sharpened_pass_rate(base, power, shift),
                                      max_k=1024)
    return float(cross) if cross is not None else math.inf


def _passk_curves(power, shift):
    base = _passk_base_rates()
    tuned = np.asarray(theory.sharpened_pass_rate(base, power, shift))
    k = PASSK_K_AXIS
    return k.astype(float), {
        "base policy: pass@k": np.asarray(theory.expected_pass_at_k(base, k)),
        "after sharpening: pass@k": np.asarray(theory.expected_pass_at_k(tuned, k)),
    }


def _passk_readouts(power, shift, k):
    base = _passk_base_rates()
    tuned = np.asarray(theory.sharpened_pass_rate(base, power, shift))
    return {
        "pass@1, base": float(theory.expected_pass_at_k(base, 1)),
        "pass@1, sharpened": float(theory.expected_pass_at_k(tuned, 1)),
        "pass@k at the slider's k, base": float(theory.expected_pass_at_k(base, int(k))),
        "pass@k at the slider's k, sharpened": float(theory.expected_pass_at_k(tuned, int(k))),
        "first k where the sharpened policy is behind (k×; inf if none up to 1024)":
            _passk_crossing(float(power), float(shift)),
    }


KL_P_REF = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
KL_SHIFTS = _grid(-3.0, 3.0, 0.25)


def _two_outcome(p_ref, shift):
    """π_ref = (p_ref, 1 − p_ref) and π with its first logit moved by ``shift``."""
    z_ref = np.array([math.log(p_ref) - math.log1p(-p_ref), 0.0])
    z = z_ref + np.array([shift, 0.0])
    return z, z_ref, np.exp(z - special_logsumexp(z)), np.exp(z_ref - special_logsumexp(z_ref))


def special_logsumexp(z: np.ndarray) -> float:
    m = float(np.max(z))
    return m + math.log(float(np.sum(np.exp(z - m))))


def _kl_curves(p_ref):
    d = np.asarray(KL_SHIFTS)
    kl, bias2, sd1, sd3 = [], [], [], []
    for shift in d:
        _, _, pi, ref = _two_outcome(p_ref, float(shift))
        kl.append(theory.categorical_kl(pi, ref))
        m2, _ = theory.kl_estimator_moments(pi, ref, "k2")
        bias2.append(m2)
        sd1.append(math.sqrt(theory.kl_estimator_moments(pi, ref, "k1")[1]))
        sd3.append(math.sqrt(theory.kl_estimator_moments(pi, ref, "k3")[1]))
    return d, {"KL(π ‖ π_ref)": np.array(kl), "E[k2] (biased)": np.array(bias2),
               "std of one k1 sample": np.array(sd1), "std of one k3 sample": np.array(sd3)}


def _kl_readouts(p_ref, shift):
    z, z_ref, pi, ref = _two_outcome(p_ref, float(shift))
    kl = theory.categorical_kl(pi, ref)
    m2, v2 = theory.kl_estimator_moments(pi, ref, "k2")
    grad_true = float(theory.kl_penalty_gradient(z, z_ref, "loss_k3_ratio")[0])
    grad_k3 = float(theory.kl_penalty_gradient(z, z_ref, "loss_k3")[0])
    return {
        "π's probability of the first outcome": float(pi[0]),
        "KL(π ‖ π_ref)": kl,
        "bias of k2, E[k2] − KL": m2 - kl,
        "std of one sample: k1": math.sqrt(theory.kl_estimator_moments(pi, ref, "k1")[1]),
        "std of one sample: k3": math.sqrt(theory.kl_estimator_moments(pi, ref, "k3")[1]),
        "∂KL(π‖π_ref)/∂z₁ (k2, or k3 × ratio, in the loss)": grad_true,
        "k3 in the loss: ∂KL(π_ref‖π)/∂z₁": grad_k3,
    }


ENTROPY_T_VALUES = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
ENTROPY_LR_VALUES = (0.1, 0.2, 0.5, 1.0)
ENTROPY_G_VALUES = tuple(range(2, 65))
#: The entropy explorer's policy: the temperature chapter's five answers, the likeliest correct.
ENTROPY_REWARDS = (1.0, 0.0, 0.0, 0.0, 0.0)


def _entropy_terms(T, lr, G):
    pi = softmax_at_temperature(TEMPERATURE_LOGITS, T)
    r = np.asarray(ENTROPY_REWARDS)
    grad = pi * (r - float(pi @ r))                 # ∇J on the logits
    hess = theory.entropy_hessian(pi)
    drift = lr * float(theory.entropy_gradient(pi) @ grad) + 0.5 * lr**2 * float(
        grad @ hess @ grad)
    noise = 0.5 * lr**2 * float(np.sum(hess * theory.loo_gradient_covariance(pi, r, G)))
    return pi, drift, noise


def _entropy_curves(T, lr):
    G = np.asarray(ENTROPY_G_VALUES)
    drift = np.array([_entropy_terms(T, lr, int(g))[1] for g in G])
    noise = np.array([_entropy_terms(T, lr, int(g))[2] for g in G])
    return G.astype(float), {"mean step's share (does not depend on G)": drift,
                             "noise's share, ½η² tr(∇²H · Cov)": noise,
                             "expected entropy change per step": drift + noise}


def _entropy_readouts(T, lr, G):
    pi, drift, noise = _entropy_terms(T, lr, int(G))
    return {
        "entropy H (nats)": float(theory.entropy(pi)),
        "probability of the correct answer": float(pi[0]),
        "mean step's share of E[ΔH]": drift,
        "noise's share of E[ΔH]": noise,
        "expected entropy change E[ΔH]": drift + noise,
    }


EXPLORERS.update({e.key: e for e in [
    Explorer(
        key="pass-at-k",
        title="Sharpening: pass@1 up, pass@k at large k down",
        xlabel="k (samples per prompt)", ylabel="pass@k of the prompt set", logx=True,
        ylim=(0.0, 1.0),
        sliders=(Slider("power", "γ: how much the update sharpens (1 = not at all)",
                        _grid(1.0, 3.0, 0.25), 1.5),
                 Slider("shift", "δ: how much it lifts every prompt's logit",
                        _grid(0.0, 3.0, 0.25), 2.0),
                 Slider("k", "k, the samples per prompt", PASSK_K_VALUES, 64)),
        curve_sliders=("power", "shift"), marker="k",
        curves=_passk_curves, readouts=_passk_readouts,
        caption=f"Base pass rates: {PASSK_PROMPTS} quantiles of Beta{PASSK_BETA}. The update "
                "maps logit p to γ·logit p + δ (theory.sharpened_pass_rate): a model, not a "
                "measurement.",
    ),
    Explorer(
        key="kl-estimators",
        title="KL estimators k1, k2, k3: bias and spread",
        xlabel="shift of the policy's first logit away from the reference", ylabel="nats",
        sliders=(Slider("p_ref", "reference probability of the first outcome", KL_P_REF, 0.3),
                 Slider("shift", "logit shift of the policy (marker)", KL_SHIFTS, 1.0)),
        curve_sliders=("p_ref",), marker="shift",
        curves=_kl_curves, readouts=_kl_readouts,
        caption="Two outcomes; one sample x ~ π. k1 and k3 are unbiased, k2 is not; the last "
                "two readouts are the expected gradients of the penalty's two placements.",
    ),
    Explorer(
        key="entropy",
        title="Expected entropy change of one group's update, and G",
        xlabel="group size G", ylabel="nats per step", logx=True,
        sliders=(Slider("T", "temperature of the five-answer policy", ENTROPY_T_VALUES, 1.0),
                 Slider("lr", "learning rate η on the logits", ENTROPY_LR_VALUES, 0.5),
                 _g_slider(8, ENTROPY_G_VALUES)),
        curve_sliders=("T", "lr"), marker="G",
        curves=_entropy_curves, readouts=_entropy_readouts,
        caption="One prompt, RLOO advantages, an SGD step of η on the logits, to second order "
                "in η (theory.expected_entropy_change). Logits "
                f"{list(TEMPERATURE_LOGITS)} / T, the likeliest answer correct.",
    ),
]})


# ----------------------------------------------------------------------------------------
# book/theory/14-adaptive-allocation.md: each rule's per-prompt G on one pool
# ----------------------------------------------------------------------------------------
ALLOCATION_PROMPTS = 25
ALLOCATION_MEANS = (0.1, 0.2, 0.3, 0.5, 0.7)
ALLOCATION_MEAN_G = (4, 6, 8, 12, 16, 24, 32)
ALLOCATION_MAX_G = 64
ALLOCATION_LABELS = {
    "informative": "informative groups",
    "knapsack": "Knapsack RL's value",
    "first-success": "first success",
    "variance-dr-grpo": "Dr. GRPO variance",
    "variance-rloo": "RLOO variance",
}


@functools.lru_cache(maxsize=16)
def allocation_pool(mean: float) -> np.ndarray:
    """The explorer's pool: 25 quantiles of Beta(mean, 1 − mean), U-shaped like a real
    census (many prompts near 0 and 1), sorted by pass rate."""
    from scipy import stats

    q = (np.arange(ALLOCATION_PROMPTS) + 0.5) / ALLOCATION_PROMPTS
    return np.clip(stats.beta.ppf(q, mean, 1.0 - mean), 0.001, 0.999)


@functools.lru_cache(maxsize=64)
def _allocations(mean: float, mean_G: int) -> dict[str, np.ndarray]:
    pool = allocation_pool(mean)
    return {rule: allocation.allocate(pool, int(mean_G), rule, max_G=ALLOCATION_MAX_G)
            for rule in ALLOCATION_LABELS}


def _allocation_curves(mean, mean_G):
    G = _allocations(mean, mean_G)
    return allocation_pool(mean), {ALLOCATION_LABELS[r]: G[r].astype(float) for r in G}


def _allocation_readouts(mean, mean_G, p):
    pool = allocation_pool(mean)
    j = int(np.argmin(np.abs(pool - p)))
    G = _allocations(mean, mean_G)
    out = {"pass rate of the nearest prompt": float(pool[j])}
    out.update({f"G, {ALLOCATION_LABELS[r]}": float(G[r][j]) for r in G})
    return out


EXPLORERS["allocation"] = Explorer(
    key="allocation",
    title="Per-prompt G: the variance school against the signal school",
    xlabel="pass rate p of the prompt", ylabel="G_j, its completions",
    sliders=(Slider("mean", "mean pass rate of the pool", ALLOCATION_MEANS, 0.3),
             Slider("mean_G", "mean G (the budget is 25 × mean G completions)",
                    ALLOCATION_MEAN_G, 8),
             Slider("p", "pass rate to read off (marker)", _grid(0.05, 0.95, 0.05), 0.1)),
    curve_sliders=("mean", "mean_G"), marker="p", digits=3,
    curves=_allocation_curves, readouts=_allocation_readouts,
    caption="25 prompts at the quantiles of Beta(mean, 1 − mean); each rule's exact integer "
            "allocation (grpolab.allocation.allocate), 2 ≤ G_j ≤ 64, at the same total.",
)
