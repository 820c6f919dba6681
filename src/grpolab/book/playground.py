"""The GRPO playground, in the two kinds the book's sliders come in.

- **Static** (the rendered book, no kernel, no network): :func:`static_playground_html`
  embeds the SmolLM2 pass rates measured in ``labs/results/smollm2-pass-rates/`` and the
  scenarios as JSON; ``grpolab/static/grpolab-toy.js`` (served from the build) retrains
  the toy in the browser on every control change.
- **Live** (JupyterLab with a kernel): :func:`live_playground`, ipywidgets over
  :mod:`grpolab.toy`, redrawn with matplotlib on every move.

One setting is a *state*: a dict with the keys of :data:`STATE_DEFAULTS`, the same keys
the page writes into its URL (``#G=2,4&dataset=smollm2``), so a link restores a setting
and :func:`parse_state` reads it in Python too.

Derived in: book/labs/04-playground.md.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass
from importlib import resources
from urllib.parse import quote, unquote

import numpy as np

from grpolab import toy

__all__ = ["N_PROMPTS_RANGE", "SCENARIOS", "SELECT_OPTIONS", "SLIDER_VALUES", "STATE_DEFAULTS",
           "Scenario", "clamp_state", "configs_for", "dataset_for", "encode_state", "inert_reason",
           "live_playground", "parse_fragment", "parse_state", "playground_figure", "run_state",
           "show", "smollm2_counts", "static_playground_html"]

G_CHOICES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 64)
#: The default setting (mirrored by STATE_DEFAULTS in grpolab-toy.js; a test compares them).
STATE_DEFAULTS: dict = {
    "G": [2, 4, 8, 16, 32], "dataset": "beta", "a": 1, "b": 2, "n_prompts": 64, "budget": 64,
    "prompts_per_step": 8, "mode": "budget", "learning_rate": 0.05, "optimizer": "adam",
    "steps": 200, "seeds": 50, "scale_rewards": "group", "baseline": "mean", "loss_type": "grpo",
    "dynamic_sampling": "0", "temperature": 1, "transfer": 0.25, "beta": 0, "wrong_length": 1,
    "filter_low": 0, "filter_high": 1, "max_batches": 3, "x_axis": "completions",
}


#: The values each slider of the page offers (mirrored by SLIDERS in grpolab-toy.js; a test
#: compares them). A URL asking for another value is snapped to the nearest (clamp_state).
SLIDER_VALUES: dict[str, tuple[float, ...]] = {
    "budget": (16, 32, 48, 64, 96, 128, 192, 256, 384, 512),
    "prompts_per_step": (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64),
    "a": (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 8),
    "b": (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 8),
    "learning_rate": (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20),
    "steps": (25, 50, 100, 150, 200, 300, 400, 600),
    "seeds": (2, 5, 10, 20, 50, 100, 200),
    "temperature": (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2),
    "transfer": (0, 0.05, 0.1, 0.25, 0.5, 1),
    "beta": (0, 0.01, 0.04, 0.1, 0.3, 1),
    "wrong_length": (0.25, 0.5, 1, 2, 4),
    "filter_low": (0, 0.01, 0.02, 0.05, 0.1, 0.2),
    "filter_high": (0.8, 0.9, 0.95, 0.99, 1),
    "max_batches": (1, 2, 3, 5, 10),
}
#: The options of each select of the page (mirrored by SELECTS in grpolab-toy.js).
SELECT_OPTIONS: dict[str, tuple[str, ...]] = {
    "dataset": ("beta", "smollm2"), "mode": ("budget", "prompts"), "optimizer": ("adam", "sgd"),
    "scale_rewards": ("group", "batch", "none"), "baseline": ("mean", "leave_one_out"),
    "loss_type": ("grpo", "dapo", "dr_grpo"), "dynamic_sampling": ("0", "1"),
    "x_axis": ("completions", "steps"),
}
#: The Beta prior's number of prompts has no control; a URL may set it within these bounds
#: (training time grows with it: 5000 prompts froze a browser tab for seconds).
N_PROMPTS_RANGE = (4, 512)


@dataclass(frozen=True)
class Scenario:
    """A setting a reader loads with one click, and the sentence that says what to notice."""

    key: str
    title: str
    hash: str
    notice: str


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("hard-small-g-starves", "hard prompts, small G starves",
             "G=2,4,8,16,32&a=0.3&b=3&mode=prompts&prompts_per_step=8&optimizer=sgd"
             "&learning_rate=2&x_axis=steps",
             "Eight prompts per step, most of them hard: at G = 2 a hard prompt's group is "
             "all-fail (1 − p)^G of the time, so the p₀ < 0.05 bucket moves little, while "
             "G = 32 lifts it. Switch the x-axis to completions to see what G = 32 paid."),
    Scenario("fixed-budget-g-star", "fixed budget: where G* falls",
             "G=2,3,4,8,16,32&budget=96&steps=100&baseline=leave_one_out&scale_rewards=none",
             "With an unbiased gradient (RLOO baseline, no std scaling) G enters only through "
             "gradient noise: the best final pass rate sits at the smallest G values, next to "
             "the dashed G* = 1 + √(c₃/c₁). Switch scale_rewards back to group and watch the "
             "optimum move: std scaling changes the gradient's size with G, not only its noise."),
    Scenario("dynamic-sampling", "dynamic sampling pays off when…",
             "G=4,16&dataset=smollm2&dynamic_sampling=1&max_batches=5&x_axis=steps",
             "On SmolLM2's pass rates most groups are all-fail. Toggle dynamic sampling off "
             "and on: per optimizer step (this x-axis) it learns faster, since every group in "
             "its batch has signal; switch the x-axis to completions and it falls behind, "
             "since each kept group costs G/q completions. It pays off when steps, not "
             "samples, are what you are short of."),
    Scenario("low-temperature", "low temperature collapses groups",
             "G=2,4,8,16,32&a=1&b=1&temperature=0.3",
             "At T = 0.3 every starting pass rate is pushed toward 0 or 1 (pⱼ = σ(bⱼ/T)), so "
             "most groups are all-pass or all-fail from the first step: the zero-variance panel "
             "starts high, and it follows p^G + (1 − p)^G all the way."),
)


# ----------------------------------------------------------------------------------------
# States: the page's URL fragment, read and written the same way in Python and JS
# ----------------------------------------------------------------------------------------
def parse_state(fragment: str = "") -> dict:
    """The state a URL fragment ``G=2,4&a=0.3`` describes; unknown keys are ignored."""
    state = {k: (list(v) if k == "G" else v) for k, v in STATE_DEFAULTS.items()}
    fragment = fragment.lstrip("#")
    for part in filter(None, fragment.split("&")):
        key, _, value = part.partition("=")
        key, value = unquote(key), unquote(value)
        if key not in STATE_DEFAULTS or not value:
            continue
        if key == "G":
            gs = sorted(int(g) for g in value.split(",") if g.strip().isdigit()
                        and int(g) in G_CHOICES)
            if gs:
                state["G"] = gs
        elif isinstance(STATE_DEFAULTS[key], (int, float)):
            try:
                number = float(value)
            except ValueError:
                continue
            if np.isfinite(number):
                state[key] = int(number) if number == int(number) else number
        else:
            state[key] = value
    return state


def parse_fragment(fragment: str = "") -> dict[str, str]:
    """A URL fragment ``G=2,4&a=0.3`` as ``{key: text}``, every key kept (parseFragment in JS)."""
    out: dict[str, str] = {}
    for part in filter(None, fragment.lstrip("#").split("&")):
        key, sep, value = part.partition("=")
        if sep and key:
            out[unquote(key)] = unquote(value)
    return out


def _short(v: float) -> str:
    """A number with 6 significant digits as JavaScript prints it (shortNum in JS)."""
    return _js_str(float(f"{float(v):.6g}"))


def clamp_state(state: dict, raw: dict[str, str] | None = None) -> list[str]:
    """Snap ``state`` onto the values the page's controls offer, in place (clampState in JS).

    ``raw`` is what the URL asked for (:func:`parse_fragment`), to name the values that were
    ignored. Returns one sentence per value that was changed, which the page shows the reader.
    """
    notes: list[str] = []
    raw = raw or {}
    for key, value in raw.items():
        if key not in STATE_DEFAULTS:
            notes.append(f"ignored {key}={value}: not a setting of this playground.")
        elif key != "G" and value != "" and isinstance(STATE_DEFAULTS[key], (int, float)):
            try:
                ok = np.isfinite(float(value))
            except ValueError:
                ok = False
            if not ok:
                notes.append(f"ignored {key}={value}: not a number; using "
                             f"{_short(STATE_DEFAULTS[key])}.")
    if raw.get("G"):
        bad = [g for g in raw["G"].split(",") if not (g.strip().isdigit()
                                                       and int(g) in G_CHOICES)]
        if bad:
            notes.append(f"G = {', '.join(bad)} {'are' if len(bad) > 1 else 'is'} not offered "
                         f"(choose from {', '.join(map(str, G_CHOICES))}); using G = "
                         f"{', '.join(map(str, state['G']))}.")
    for key, values in SLIDER_VALUES.items():
        v = float(state[key])
        snapped = min(values, key=lambda x: abs(x - v))  # first of two equally near, as in JS
        if abs(snapped - v) > 1e-9 * max(1.0, abs(v)):
            where = (f" is out of range ({_js_str(values[0])} to {_js_str(values[-1])})"
                     if v < values[0] or v > values[-1] else " is not one of the slider's values")
            notes.append(f"{key} = {_short(v)}{where}; using {_short(snapped)}.")
        state[key] = snapped
    for key, options in SELECT_OPTIONS.items():
        if str(state[key]) not in options:
            notes.append(f"{key} = {state[key]} is not an option ({', '.join(options)}); "
                         f"using {STATE_DEFAULTS[key]}.")
            state[key] = STATE_DEFAULTS[key]
        else:
            state[key] = str(state[key])
    n = float(state["n_prompts"])
    lo, hi = N_PROMPTS_RANGE
    nc = int(np.floor(min(hi, max(lo, n)) + 0.5))  # Math.round
    if nc != n:
        where = (f" is out of range ({lo} to {hi})" if n < lo or n > hi
                 else " is not a whole number")
        notes.append(f"n_prompts = {_short(n)}{where}; using {nc}.")
    state["n_prompts"] = nc
    return notes


def inert_reason(key: str, state: dict) -> str:
    """Why control ``key`` changes nothing in setting ``state`` ("" when it does).

    The page shows the sentence under the control (inertReason in grpolab-toy.js, the same
    sentences). Each is a property of the toy's GRPO step, not a missing feature:

    - the leave-one-out baseline's advantages are the mean baseline's times G/(G−1), a
      constant per G (with std scaling too), and Adam's step ignores a constant factor of the
      gradient (up to its ε), unless a KL term adds a gradient that is not scaled;
    - with every completion of length 1, TRL's three ``loss_type`` weightings coincide;
    - ``budget``/``prompts_per_step`` belong to one batch mode each, ``max_batches`` to
      dynamic sampling, and in fixed-budget mode without it each step costs about
      ``budget`` completions for every G, so the two x-axes differ by a constant factor.
    """
    budget, ds = state["mode"] == "budget", str(state["dynamic_sampling"]) == "1"
    if key == "budget" and not budget:
        return "No effect with a fixed number of prompts per step: B is set by “prompts per step”."
    if key == "prompts_per_step" and budget:
        return ("No effect in fixed-budget mode: B = ⌊budget / G⌋ "
                "(switch batch to fixed prompts).")
    if key in ("a", "b") and state["dataset"] == "smollm2":
        return "No effect: the SmolLM2 pass rates replace the Beta prior."
    if key == "baseline" and state["optimizer"] == "adam" and float(state["beta"]) == 0:
        return ("No effect with Adam: the leave-one-out advantages are the mean baseline's "
                "times G/(G−1), a constant, and Adam's steps ignore a constant factor "
                "(try SGD, or a KL weight β > 0).")
    if key == "loss_type" and float(state["wrong_length"]) == 1:
        return ("No effect while every completion has the same length: grpo, dapo and "
                "dr_grpo then weight all completions alike (set a wrong completion's "
                "length ≠ 1).")
    if key == "max_batches" and not ds:
        return "No effect with dynamic sampling off."
    if key == "x_axis" and budget and not ds:
        return ("The curves keep their shape: in fixed-budget mode without dynamic sampling "
                "every G spends about the same completions per step, so the two x-axes "
                "differ by a constant factor.")
    return ""


def encode_state(state: dict) -> str:
    """The URL fragment of ``state``: only the keys that differ from the defaults."""
    parts = []
    for key, default in STATE_DEFAULTS.items():
        value = ",".join(map(str, state["G"])) if key == "G" else _js_str(state[key])
        ref = ",".join(map(str, default)) if key == "G" else _js_str(default)
        if value != ref:
            parts.append(f"{quote(key)}={quote(value)}")
    return "&".join(parts)


def _js_str(v) -> str:
    """String(v) as JavaScript writes a number (1.0 → "1")."""
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return str(v)


def smollm2_counts() -> dict:
    """Per-prompt successes, samples and difficulty levels of the committed SmolLM2 census."""
    import json

    from grpolab._paths import checkout_root

    # the committed result file itself (the book never imports the labs: a layer above it)
    path = checkout_root() / "labs" / "results" / "smollm2-pass-rates" / "pass_rates.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: it is committed with the repository; "
                                "reproduce it with 'grpolab lab pass-rates'")
    records = json.loads(path.read_text(encoding="utf-8"))["records"]
    return {"successes": [int(r["successes"]) for r in records],
            "samples": [int(r["samples"]) for r in records],
            "difficulty": [int(r["difficulty"]) for r in records]}


def dataset_for(state: dict) -> toy.Dataset:
    if state["dataset"] == "smollm2":
        c = smollm2_counts()
        return toy.empirical_dataset(c["successes"], c["samples"], name="SmolLM2-135M pass rates")
    if state["dataset"] != "beta":
        raise ValueError(f"dataset must be 'beta' or 'smollm2', got {state['dataset']!r}")
    return toy.beta_dataset(float(state["a"]), float(state["b"]), int(state["n_prompts"]))


def configs_for(state: dict) -> list[toy.ToyConfig]:
    """One :class:`grpolab.toy.ToyConfig` per G of the state (G > budget is skipped)."""
    out = []
    for G in state["G"]:
        if state["mode"] == "budget" and int(state["budget"]) < G:
            continue
        out.append(toy.ToyConfig(
            num_generations=G, mode=state["mode"], budget=int(state["budget"]),
            prompts_per_step=int(state["prompts_per_step"]), steps=int(state["steps"]),
            learning_rate=float(state["learning_rate"]), optimizer=state["optimizer"],
            scale_rewards=state["scale_rewards"], baseline=state["baseline"],
            loss_type=state["loss_type"], wrong_length=float(state["wrong_length"]),
            beta=float(state["beta"]), temperature=float(state["temperature"]),
            dynamic_sampling=str(state["dynamic_sampling"]) == "1",
            max_batches=int(state["max_batches"]), filter_low=float(state["filter_low"]),
            filter_high=float(state["filter_high"]), transfer=float(state["transfer"])))
    return out


def run_state(state: dict) -> dict:
    """Train every G of ``state``; returns dataset, results {G: ToyResult} and G*."""
    ds = dataset_for(state)
    seeds = range(int(state["seeds"]))
    results = {cfg.num_generations: toy.train(ds, cfg, seeds) for cfg in configs_for(state)}
    base = toy.ToyConfig(temperature=float(state["temperature"]),
                         transfer=float(state["transfer"]))
    try:
        g_star = toy.predicted_optimal_group_size(ds, base)["G_star"]
    except ValueError:
        g_star = float("nan")
    return {"dataset": ds, "results": results, "G_star": g_star}


# ----------------------------------------------------------------------------------------
# The static kind
# ----------------------------------------------------------------------------------------
STATIC_NOTE = ("Static playground: this page trains the toy policy in your browser "
               "(grpolab-toy.js, a port of grpolab.toy), with no kernel and no network; "
               "every control change retrains it. In JupyterLab the same cell gives live "
               "ipywidgets over the Python grpolab.toy.")
#: The short how-to shown above the controls, so a reader meets it before the 22 controls
#: (the page's prose below the playground says the same at length).
HOWTO = ("Start with a scenario button: it loads a setting and says what to notice. Then tick "
         "the G values to compare (one line each) and change the budget, the difficulty, the "
         "optimizer or TRL's options: every change retrains 50 seeds here in your browser. A "
         "control that changes nothing in the current setting says why under it. The link "
         "under the figures holds the whole setting; a chart opens full size on a tap.")
LIVE_NOTE = ("Live playground: each change retrains grpolab.toy in your kernel "
             "(Python, numpy) and redraws the figure.")


def _static_asset(name: str) -> str:
    return resources.files("grpolab.book").joinpath("static", name).read_text(encoding="utf-8")


def playground_data() -> dict:
    """What the page embeds: the SmolLM2 counts, the scenarios and the default state."""
    return {"smollm2": smollm2_counts(),
            "scenarios": [{"key": s.key, "title": s.title, "hash": s.hash, "notice": s.notice}
                          for s in SCENARIOS],
            "defaults": STATE_DEFAULTS}


def static_playground_html(*, inline_assets: bool = False) -> str:
    """HTML of the static playground (grpolab-toy.js mounts every ``div.grpolab-toy``)."""
    data = json.dumps(playground_data(), separators=(",", ":"), allow_nan=False)
    data = data.replace("</", "<\\/")
    out = ('<div class="grpolab-toy">'
           f'<p class="grpolab-kind">{html.escape(STATIC_NOTE)}</p>'
           f'<div class="grpolab-toy-howto"><p><strong>How to use it.</strong> '
           f'{html.escape(HOWTO)}</p></div>'
           f'<script type="application/json" class="grpolab-toy-data">{data}</script></div>')
    if inline_assets:
        return (f"<style>{_static_asset('grpolab-sliders.css')}{_static_asset('grpolab-toy.css')}"
                f"</style>{out}<script>{_static_asset('grpolab-toy.js')}</script>")
    return out + ("<script>if (window.grpolabToy && window.grpolabToy.mountAll) "
                  "{ window.grpolabToy.mountAll(); }</script>")


def scenario_table_html() -> str:
    """The scenarios as links (a link sets the page's URL fragment) with what to notice."""
    rows = "".join(
        f'<tr><td><a class="grpolab-toy-scenario-link" href="#{html.escape(s.hash)}" '
        f'data-scenario="{html.escape(s.key)}">{html.escape(s.title)}</a></td>'
        f"<td>{html.escape(s.notice)}</td></tr>" for s in SCENARIOS)
    return (f'<table class="grpolab-table grpolab-toy-scenario-table"><thead><tr><th>scenario'
            f"</th><th>what to notice</th></tr></thead><tbody>{rows}</tbody></table>")


# ----------------------------------------------------------------------------------------
# Figures (the live kind and the chapter)
# ----------------------------------------------------------------------------------------
def playground_figure(state: dict, run: dict):
    """The playground's four panels with matplotlib (the same panels the page draws)."""
    import matplotlib.pyplot as plt

    results, g_star = run["results"], run["G_star"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.2), constrained_layout=True)
    ax_curve, ax_final, ax_zero_var, ax_bucket = axes.ravel()
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    finals = []
    for i, (G, res) in enumerate(results.items()):
        c = colors[i % len(colors)]
        band = toy.summarize(res.pass_rate)
        x = (np.arange(res.pass_rate.shape[1]) if state["x_axis"] == "steps"
             else res.completions.mean(axis=0))
        ax_curve.plot(x, band["mean"], color=c, label=f"G = {G}")
        ax_curve.fill_between(x, band["low"], band["high"], color=c, alpha=0.2)
        steps = np.arange(res.zero_variance_observed.shape[1])
        ax_zero_var.plot(steps, res.zero_variance_observed.mean(axis=0), color=c,
                         label=f"G = {G} observed")
        ax_zero_var.plot(steps, res.zero_variance_predicted.mean(axis=0), color=c, ls="--", lw=1)
        # an empty bucket is NaN for every seed: its mean is NaN (not a warning)
        last = res.bucket_pass_rate[:, -1, :]
        by_bucket = last.mean(axis=0)
        ax_bucket.plot(range(len(toy.BUCKET_LABELS)), by_bucket, "o-", color=c, label=f"G = {G}")
        final = toy.summarize(res.pass_rate[:, -1])
        finals.append((G, float(final["mean"]), float(final["half_width"])))
    if finals:
        g, m, h = map(np.array, zip(*finals, strict=True))
        ax_final.errorbar(g, m, yerr=h, fmt="o-", capsize=3)
        ax_final.set_xscale("log", base=2)
        ax_final.set_xticks(g, [str(v) for v in g])
    if np.isfinite(g_star):
        ax_final.axvline(g_star, color="0.4", ls="--", lw=1, label=f"G* = {g_star:.2f}")
        ax_final.legend(fontsize=8)
    ax_curve.set(xlabel="optimizer step" if state["x_axis"] == "steps" else "completions",
                 ylabel="mean pass rate", ylim=(0, 1), title="learning curves (95% band)")
    ax_final.set(xlabel="group size G", ylabel="final pass rate", title="final pass rate vs G")
    ax_zero_var.set(xlabel="step", ylabel="fraction of zero-variance groups", ylim=(0, 1),
                title="zero-variance groups: observed (solid), p^G + (1−p)^G (dashed)")
    ax_bucket.set(xticks=range(len(toy.BUCKET_LABELS)), ylim=(0, 1), ylabel="final pass rate",
                  title="per difficulty bucket")
    ax_bucket.set_xticklabels(toy.BUCKET_LABELS, fontsize=8)
    for ax in (ax_curve, ax_bucket):
        ax.legend(fontsize=8)
    return fig


def readout_text(run: dict) -> str:
    """One line per G: prompts per step, final pass rate ± 95% CI, zero-variance groups obs/pred."""
    lines = []
    for G, res in run["results"].items():
        final = toy.summarize(res.pass_rate[:, -1])
        lines.append(f"G = {G:>2} (B = {res.config.prompts:>3}): final pass rate "
                     f"{float(final['mean']):.3f} ± {float(final['half_width']):.3f}; "
                     f"zero-variance groups {res.zero_variance_observed.mean():.3f} observed, "
                     f"{res.zero_variance_predicted.mean():.3f} predicted")
    lines.append(f"G* = 1 + √(c₃/c₁) = {run['G_star']:.3f} (unbiased gradient at the start)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------
# The live kind
# ----------------------------------------------------------------------------------------
def live_playground(state: dict | None = None):
    """ipywidgets over grpolab.toy: every change retrains and redraws (``continuous_update``
    is off, so a drag retrains once, on release)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    state = dict(parse_state(""), **(state or {}))

    def sel(name, desc):
        return w.SelectionSlider(options=[(f"{v:g}", v) for v in SLIDER_VALUES[name]],
                                 value=state[name],
                                 description=desc, continuous_update=False,
                                 style={"description_width": "150px"},
                                 layout=w.Layout(width="460px"))

    def drop(name, options, desc):
        return w.Dropdown(options=options, value=state[name], description=desc,
                          style={"description_width": "150px"})

    controls = {
        "G": w.SelectMultiple(options=G_CHOICES, value=tuple(state["G"]),
                              description="G values", rows=5),
        "dataset": drop("dataset", [("Beta(a, b)", "beta"), ("SmolLM2 pass rates", "smollm2")],
                        "difficulty"),
        "a": sel("a", "Beta a"),
        "b": sel("b", "Beta b"),
        "mode": drop("mode", [("fixed budget", "budget"), ("fixed prompts", "prompts")], "batch"),
        "budget": sel("budget", "budget"),
        "prompts_per_step": sel("prompts_per_step", "prompts per step"),
        "learning_rate": sel("learning_rate", "learning rate"),
        "optimizer": drop("optimizer", ["adam", "sgd"], "optimizer"),
        "scale_rewards": drop("scale_rewards", ["group", "batch", "none"], "scale_rewards"),
        "baseline": drop("baseline", ["mean", "leave_one_out"], "baseline"),
        "loss_type": drop("loss_type", ["grpo", "dapo", "dr_grpo"], "loss_type"),
        "dynamic_sampling": drop("dynamic_sampling", [("off", "0"), ("on", "1")],
                                 "dynamic sampling"),
        "temperature": sel("temperature", "temperature"),
        "steps": sel("steps", "steps"),
        "seeds": sel("seeds", "seeds"),
        "x_axis": drop("x_axis", ["completions", "steps"], "x axis"),
    }
    scenario = w.Dropdown(options=[("(choose a scenario)", "")]
                          + [(s.title, s.key) for s in SCENARIOS], description="scenario",
                          style={"description_width": "150px"})
    notice = w.HTML("")
    readout = w.HTML("", layout=w.Layout(min_height="4em"))
    inert = w.HTML("")  # the controls with no effect in this setting, and why
    out = w.Output()
    busy = {"on": False}

    def redraw(*_):
        if busy["on"]:
            return
        current = dict(state)
        for k, c in controls.items():
            current[k] = sorted(c.value) if k == "G" else c.value
        if not current["G"]:
            return
        run = run_state(current)
        with out:
            out.clear_output(wait=True)
            fig = playground_figure(current, run)
            display(fig)
            plt.close(fig)
        readout.value = ("<pre class='grpolab-toy-readout'>"
                         f"{html.escape(readout_text(run))}</pre>")
        inert.value = "".join(f"<div><b>{html.escape(k)}</b>: {html.escape(why)}</div>"
                              for k in controls if (why := inert_reason(k, current)))

    def load_scenario(change):
        match = [s for s in SCENARIOS if s.key == change["new"]]
        if not match:
            return
        new = parse_state(match[0].hash)
        busy["on"] = True
        try:
            for k, c in controls.items():
                c.value = tuple(new[k]) if k == "G" else new[k]
            state.update({k: v for k, v in new.items() if k not in controls})
        finally:
            busy["on"] = False
        notice.value = f"<i>{html.escape(match[0].notice)}</i>"
        redraw()

    for c in controls.values():
        c.observe(redraw, names="value")
    scenario.observe(load_scenario, names="value")
    redraw()
    note = w.HTML(f"<i>{html.escape(LIVE_NOTE)}</i>")
    left = w.VBox([scenario, notice] + list(controls.values())[:9])
    right = w.VBox(list(controls.values())[9:])
    return w.VBox([note, w.HBox([left, right]), inert, readout, out])


def show(kind: str | None = None):
    """The playground: static HTML in the built book, live widgets in a kernel."""
    from grpolab.book.sliders import widget_kind

    kind = kind or widget_kind()
    if kind == "static":
        from IPython.display import HTML

        return HTML(static_playground_html())
    if kind == "live":
        return live_playground()
    raise ValueError(f"kind must be 'static' or 'live', got {kind!r}")


def kind_note() -> str:
    """Which kind of page the reader is looking at, as a sentence (for the chapter)."""
    kind = os.environ.get("GRPOLAB_WIDGETS", "live")
    return STATIC_NOTE if kind == "static" else LIVE_NOTE
