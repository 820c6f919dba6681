"""Design C, the mechanism (labs/results/design-c/declared.json, book/labs/06-mechanism.md):
what makes GRPO's step grow with G, and whether the G ranking depends on the optimizer.

Two parts:

- :func:`match_sgd_lr`, run once before the sweep: the SGD learning rate whose step has
  AdamW's update norm at G = 8 (the declaration's "SGD, lr matched once");
- :func:`verdicts`, after it: every declared verdict from the committed results, each with
  its interval and minimum detectable effect (MDE), whatever the data say.

The three readings of the G dependence (book/theory/06 and 09): without std scaling
E ĝ = ((G − 1)/G) ∇J, so ‖E ĝ‖² grows by ((G − 1)/G ÷ ½)² ≈ 3.5 from G = 2 to 16; with std
scaling ch. 06's factor c_G(p) gives ≈ 11; ch. 09's dilution model predicts ≈ 7.3 times
more in both.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

__all__ = ["match_sgd_lr", "MATCH_G", "MATCH_STEPS", "CELLS", "debiased_signal", "signal_ratio",
           "mechanism_verdict", "interaction", "verdicts", "write_verdicts", "plot_design_c"]

#: The group size at which SGD's step is matched to AdamW's (the declaration's G = 8).
MATCH_G = 8
#: Steps of the matching run: the design's run length, so the match is AdamW's mean update
#: over the horizon the runs train for (AdamW's first step is lr·sign(g), far larger than
#: its later ones, so a first-step match would overstate SGD's lr).
MATCH_STEPS = 100
#: Design C's SGD cells do not clip the gradient (``max_grad_norm`` 0): at G = 8 the
#: gradient's norm is above AdamW's clip of 1.0 at almost every step (sgd_lr.json), so
#: clipped SGD would move by lr whatever G does to the gradient, erasing the scale the
#: design tests (labs/results/design-c/deviations.md).
SGD_MAX_GRAD_NORM = 0.0


def match_sgd_lr(config, cache_dir: str, *, steps: int = MATCH_STEPS,
                 sgd_max_grad_norm: float = SGD_MAX_GRAD_NORM, progress: bool = False,
                 log=print) -> dict:
    """The SGD learning rate whose step matches AdamW's mean update norm at ``config``
    (design C: the mixed regime at G = 8, scale_rewards "group", AdamW).

    Trains ``steps`` AdamW steps from the warm start exactly as the loop does and records,
    at each step's parameters, AdamW's update norm ‖θ_{t+1} − θ_t‖ and the gradient's norm
    before and after AdamW's clipping. SGD's step at lr = 1 at those parameters is the
    gradient clipped at ``sgd_max_grad_norm`` (0: not clipped, design C's SGD cells), since
    plain SGD moves by lr × the gradient it is given. Returns the inputs, the series and
    ``sgd_learning_rate`` = mean AdamW update norm / mean SGD step norm at lr = 1.
    """
    import torch

    from grpolab.advantages import mixed_group_advantages
    from grpolab.grpo.config import training_prompts
    from grpolab.grpo.loop import BatchSource, RunState, make_optimizer
    from grpolab.grpo.loss import grpo_update
    from grpolab.grpo.setup import load_policy
    from grpolab.models.device import resolve_device
    from grpolab.tasks.registry import get_task

    if config.optimizer != "adamw":
        raise ValueError(f"match_sgd_lr measures AdamW's step; got optimizer {config.optimizer!r}")
    config = config.__class__.from_dict({**config.to_dict(), "steps": steps}).validate()
    device = resolve_device(config.device)
    task = get_task(config.task, **config.task_kwargs)
    model, tokenizer, _ = load_policy(config, cache_dir, device, progress)
    torch.manual_seed(config.seed)  # as the loop: the same batches as the run of this config
    state = RunState(config, task, training_prompts(config, task)[0], model, tokenizer,
                     device, None)
    optimizer = make_optimizer(model, config)
    source = BatchSource()
    params = [p for p in model.parameters() if p.requires_grad]
    adam_norms, sgd_norms, grad_norms = [], [], []
    while not state.done():
        state.step += 1
        batch = source.next_batch(state)
        adv = mixed_group_advantages(torch.as_tensor(batch.rewards, dtype=torch.float32),
                                     batch.group_sizes, scale=config.scale_rewards,
                                     baseline=config.advantage_baseline,
                                     ddof=config.advantage_ddof, eps=config.advantage_eps)
        before = [p.detach().clone() for p in params]
        metrics = grpo_update(model, optimizer, batch.rollout, adv,
                              num_iterations=config.num_iterations, epsilon=config.epsilon,
                              epsilon_high=config.epsilon_high, beta=config.beta,
                              loss_type=config.loss_type, temperature=config.temperature,
                              max_grad_norm=config.max_grad_norm,
                              max_completion_length=config.max_completion_length)
        with torch.no_grad():
            step = math.sqrt(sum(float(((p - b) ** 2).sum()) for p, b in zip(params, before,
                                                                             strict=True)))
            # the gradient as the optimizer saw it (clip_grad_norm_ scaled it in place)
            clipped = math.sqrt(sum(float((p.grad ** 2).sum()) for p in params
                                    if p.grad is not None))
        adam_norms.append(step)
        sgd_norms.append(clipped)
        grad_norms.append(float(metrics["grad_norm"]))
        if progress and state.step % 10 == 0:
            log(f"step {state.step}: AdamW update {step:.3g}, gradient "
                f"{metrics['grad_norm']:.3g} ({clipped:.3g} clipped)")
    sgd_steps = [min(g, sgd_max_grad_norm) if sgd_max_grad_norm else g for g in grad_norms]
    adam, sgd = float(np.mean(adam_norms)), float(np.mean(sgd_steps))
    return {
        "what": "SGD learning rate matched once to AdamW's mean update norm (design C)",
        "how": "AdamW trained for `steps` steps from the warm start at G = num_generations; "
               "at each step's parameters: AdamW's update norm, and SGD's step at lr = 1 (the "
               "gradient clipped at sgd_max_grad_norm, 0: not clipped); sgd_learning_rate = "
               "the mean of the first / the mean of the second",
        "made_by": "grpolab.labs.design_c.match_sgd_lr",
        "num_generations": config.num_generations, "prompts_per_step": config.prompts_per_step,
        "scale_rewards": config.scale_rewards, "loss_type": config.loss_type,
        "adamw_learning_rate": config.learning_rate, "max_grad_norm": config.max_grad_norm,
        "steps": steps, "seed": config.seed, "warmstart_key": config.warmstart_key,
        "sgd_max_grad_norm": sgd_max_grad_norm,
        "adamw_update_norm": adam_norms, "sgd_step_norm_at_lr_1": sgd_steps,
        "grad_norm_before_clipping": grad_norms, "grad_norm_after_adamw_clipping": sgd_norms,
        "adamw_update_norm_mean": adam, "sgd_step_norm_at_lr_1_mean": sgd,
        "sgd_learning_rate": adam / sgd,
    }


def main_match(out: str) -> dict:
    """``python -m grpolab.labs.design_c OUT``: measure the matched SGD lr for the preset
    ``design-c`` at G = :data:`MATCH_G` (its warm start cached in ``OUT/cache``, as the
    sweep's) and write it to ``OUT/sgd_lr.json``."""
    import time

    import torch

    from grpolab.grpo.records import provenance, write_json_atomic
    from grpolab.labs.sweep.presets import PRESETS

    preset = PRESETS["design-c"]
    torch.set_num_threads(preset.torch_threads or torch.get_num_threads())  # as the sweep
    regime = next(r for r in preset.regimes if r.name == "adamw-group")
    config = preset.run_config(regime, MATCH_G, preset.seeds[0])
    start = time.time()
    record = match_sgd_lr(config, os.path.join(out, "cache"), progress=True)
    from grpolab.models.device import resolve_device

    record.update(seconds=time.time() - start, **provenance(resolve_device(config.device)),
                  command=f"python -m grpolab.labs.design_c {out}")
    write_json_atomic(os.path.join(out, "sgd_lr.json"), record)
    return record


# ----------------------------------------------------------------------------- the verdicts
#: The cells of the design: (optimizer, scale_rewards) regimes of the preset ``design-c``.
CELLS = ("adamw-group", "sgd-group", "adamw-none", "sgd-none")
#: The two group sizes it compares (at a fixed budget of 64 completions per step).
SMALL_G, LARGE_G = 2, 16
#: The declared refuting ratio of the ((G − 1)/G)² reading under scale_rewards "none".
REFUTING_RATIO = 10.0
#: The declared TOST margin of the interaction (pass@1, 0.5 percentage points).
INTERACTION_MARGIN = 0.005
#: The declared predictions of ‖E ĝ‖²(16)/‖E ĝ‖²(2), as declared.json states them: without
#: std scaling ((G − 1)/G ÷ ½)² (derived, book/theory/06); with it ch. 06's (c_16/c_2)² on
#: the cpu-compute census (book-referee.md F2, its table); ch. 09's dilution model
#: multiplies either by (s₁₆/s₂)² (the same table).
PREDICTED_RATIO = {"none": ((LARGE_G - 1) / LARGE_G / ((SMALL_G - 1) / SMALL_G)) ** 2,
                   "group": 11.02}
DILUTION_FACTOR = 7.34


def debiased_signal(gram: np.ndarray, counts: np.ndarray | None = None) -> float:
    """The unbiased estimate of ‖E ĝ‖² from n batch gradients' Gram matrix K_ij = g_i·g_j:
    ‖ḡ‖² − tr Var(ĝ)/n (E‖ḡ‖² = ‖E ĝ‖² + tr Var/n; book/labs/05, advise's fit), which is
    the mean of K_ij over pairs i ≠ j.

    ``counts[k]``: how often batch k was drawn (a bootstrap resample). Only pairs of two
    *different* batches count: a batch drawn twice paired with itself is g·g = ‖E ĝ‖² plus
    its whole noise, and treating it as two batches inflates the signal (resampling the
    Gram matrix's rows and columns and debiasing the result does exactly that).
    """
    K = np.asarray(gram, dtype=float)
    c = np.ones(K.shape[0]) if counts is None else np.asarray(counts, dtype=float)
    diag = np.diag(K)
    pairs = c.sum() ** 2 - float((c ** 2).sum())
    return float((c @ K @ c - float((c ** 2 * diag).sum())) / pairs)


def _percentile(sorted_draws: np.ndarray, q: float) -> float:
    """The q-quantile of sorted draws by rank (no interpolation, so ±inf draws are kept)."""
    i = min(len(sorted_draws) - 1, max(0, int(math.floor(q * len(sorted_draws)))))
    return float(sorted_draws[i])


def signal_ratio(gram_small: np.ndarray, gram_large: np.ndarray, *, n_boot: int = 2000,
                 confidence: float = 0.95, seed: int = 0) -> dict:
    """‖E ĝ‖²(large G) / ‖E ĝ‖²(small G), each debiased, with a percentile bootstrap
    interval that resamples each G's batches (:func:`debiased_signal` with the draw's
    counts, so that a batch drawn twice is not paired with itself).

    A draw whose small-G signal is ≤ 0 (no signal left after debiasing) has ratio +inf, so
    an unmeasurable denominator widens the interval instead of being dropped. ``mde_factor``
    is the factor by which the true ratio must exceed a threshold for a test at this
    spread to find it with 80% power: exp((z₀.₉₇₅ + z₀.₈) · sd(log ratio)) over the draws.
    """
    from scipy import stats as st

    def ratio(a: float, b: float) -> float:
        return b / a if a > 0 else math.inf

    point = ratio(debiased_signal(gram_small), debiased_signal(gram_large))
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        counts = [np.bincount(rng.integers(0, n, n), minlength=n)
                  for n in (gram_small.shape[0], gram_large.shape[0])]
        draws.append(ratio(debiased_signal(gram_small, counts[0]),
                           debiased_signal(gram_large, counts[1])))
    d = np.sort(np.asarray(draws))
    alpha = 1 - confidence
    finite = d[np.isfinite(d) & (d > 0)]
    sd_log = float(np.std(np.log(finite), ddof=1)) if finite.size > 1 else math.inf
    return {"ratio": point, "low": _percentile(d, alpha / 2),
            "high": _percentile(d, 1 - alpha / 2), "confidence": confidence,
            "bootstrap_draws": n_boot, "infinite_draws": int(np.sum(~np.isfinite(d))),
            "sd_log_ratio": sd_log,
            "mde_factor": float(math.exp((st.norm.ppf(0.975) + st.norm.ppf(0.8)) * sd_log))
            if math.isfinite(sd_log) else None,
            "batches": [int(gram_small.shape[0]), int(gram_large.shape[0])]}


def mechanism_verdict(ratio: dict, threshold: float = REFUTING_RATIO) -> str:
    """The declared test of the ((G − 1)/G)² reading under scale_rewards "none": "refuted"
    when the ratio's interval lies at or above ``threshold``, "supported" when it lies
    below, "inconclusive" when it straddles it."""
    if ratio["low"] >= threshold:
        return "refuted"
    if ratio["high"] < threshold:
        return "supported"
    return "inconclusive"


def interaction(table: dict, *, margin: float = INTERACTION_MARGIN,
                declared_mde: float | None = None, confidence: float = 0.95) -> dict:
    """The declared outcome test: per seed, (G16 − G2 under SGD + group) − (G16 − G2 under
    AdamW + group) of final pass@1; a one-sample t interval over the seeds present in all
    four arms, TOST at ``margin``, the MDE at the measured spread (and the declared one).

    ``table[cell][G][seed]`` is a run's final pass@1 for cell "sgd-group" / "adamw-group".
    Verdict: "supported" (interval above 0), "refuted" (interval below 0), "equivalent"
    (TOST: the 90% interval inside ±margin, which the declaration counts as refuting), else
    "inconclusive".
    """
    from grpolab.labs.stats import direction_verdict

    arms = [(c, G) for c in ("sgd-group", "adamw-group") for G in (SMALL_G, LARGE_G)]
    missing = [f"{c} G={G}" for c, G in arms if not table.get(c, {}).get(G)]
    if missing:
        raise ValueError(f"the interaction needs final pass@1 of every arm; none for "
                         f"{', '.join(missing)}")
    seeds = sorted(set.intersection(*(set(table[c][G]) for c, G in arms)))
    if len(seeds) < 2:
        raise ValueError(f"the interaction needs >= 2 seeds run in all four arms, got {seeds}")

    def gap(cell: str, s: int) -> float:
        return table[cell][LARGE_G][s] - table[cell][SMALL_G][s]

    per_seed = [gap("sgd-group", s) - gap("adamw-group", s) for s in seeds]
    verdict, ci, eq = direction_verdict(per_seed, margin, confidence)
    return {"verdict": verdict, "mean": ci["mean"], "low": ci["low"], "high": ci["high"],
            "confidence": confidence, "seeds": seeds, "per_seed": per_seed,
            "mde": ci.get("mde"), "declared_mde": declared_mde, "tost": eq,
            "gap_by_cell": {c: float(np.mean([gap(c, s) for s in seeds]))
                            for c in ("sgd-group", "adamw-group")}}


def _final_table(runs: list[dict], metric: str) -> dict:
    """``{cell: {G: {seed: metric}}}`` of the finished runs."""
    table: dict = {}
    for r in runs:
        if r.get(metric) is not None:
            table.setdefault(r["regime"], {}).setdefault(int(r["G"]), {})[int(r["seed"])] = \
                float(r[metric])
    return table


def _grams(summary: dict, path: str) -> dict:
    """``{cell: {G: Gram matrix}}`` of the warm-start gradient-noise rows in a sweep
    summary, each checked to be a square matrix of finite numbers."""
    from grpolab.grpo.records import CorruptFileError

    out: dict = {}
    for cell, rows in (summary.get("gradient_noise") or {}).items():
        for row in rows:
            try:
                K = np.asarray(row["gram"], dtype=float)
            except (KeyError, TypeError, ValueError):
                raise CorruptFileError(path, f"gradient_noise[{cell!r}] has a row without a "
                                       "Gram matrix") from None
            if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] < 2 \
                    or not np.all(np.isfinite(K)):
                raise CorruptFileError(path, f"gradient_noise[{cell!r}] G={row.get('G')}: the "
                                       "Gram matrix is not a finite square matrix")
            out.setdefault(cell, {})[int(row["G"])] = K
    return out


def verdicts(out: str, *, n_boot: int = 2000) -> dict:
    """Every declared verdict of design C from the results in ``out`` (a finished or partial
    ``grpolab lab sweep --preset design-c`` folder holding ``declared.json``), read through
    the package's checked readers."""
    from grpolab.grpo.records import read_json
    from grpolab.labs.sweep.report import read_sweep_summary
    from grpolab.labs.sweep.sweep import PRIMARY_METRIC

    declared = read_json(os.path.join(out, "declared.json"), "design C's declaration",
                         keys=("minimum_detectable_effect",))
    declared_mde = declared["minimum_detectable_effect"].get("interaction")
    summary = read_sweep_summary(out)
    grams = _grams(summary, os.path.join(out, "summary.json"))
    mechanism = {}
    for scale in ("none", "group"):
        cell = grams.get(f"adamw-{scale}", {})
        if SMALL_G not in cell or LARGE_G not in cell:
            continue
        r = signal_ratio(cell[SMALL_G], cell[LARGE_G], n_boot=n_boot)
        pred, dil = PREDICTED_RATIO[scale], PREDICTED_RATIO[scale] * DILUTION_FACTOR
        r.update(predicted=pred, dilution_predicted=dil,
                 predicted_inside=bool(r["low"] <= pred <= r["high"]),
                 dilution_inside=bool(r["low"] <= dil <= r["high"]))
        if scale == "none":
            r["verdict"] = mechanism_verdict(r)
            r["threshold"] = REFUTING_RATIO
        mechanism[scale] = r
    table = _final_table(summary["runs"], PRIMARY_METRIC)
    try:
        outcome = interaction(table, declared_mde=declared_mde)
    except ValueError as exc:  # runs missing: said, not guessed
        outcome = {"verdict": "not run", "why": str(exc)}
    means = {c: {G: float(np.mean(list(v.values()))) for G, v in sorted(by_G.items())}
             for c, by_G in table.items()}
    return {"mechanism": mechanism, "interaction": outcome, "final_pass_at_1_mean": means,
            "runs_finished": summary.get("runs_finished"),
            "runs_planned": summary.get("runs_planned"),
            "metric": PRIMARY_METRIC, "seconds": summary.get("seconds_this_invocation")}


def plot_design_c(result: dict, runs: list[dict]):
    """Design C's figure: (left) the warm-start ratio ‖E ĝ‖²(16)/‖E ĝ‖²(2) with its 95%
    bootstrap interval under each scale_rewards, beside the readings' predictions; (right)
    final pass@1 at G = 2 and 16 in each (optimizer, scale_rewards) cell, one dot per seed
    and the seed means joined, at a fixed budget of 64 completions per step."""
    import matplotlib.pyplot as plt

    from grpolab.labs.common import FIGURE_STYLE, FIGURE_WIDTH
    from grpolab.labs.sweep.sweep import PRIMARY_METRIC

    with plt.rc_context(FIGURE_STYLE):
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 3.6),
                                     gridspec_kw={"width_ratios": [1, 1.4]})
        for x, scale in enumerate(("none", "group")):
            r = result["mechanism"].get(scale)
            if r is None:
                continue
            hi = r["high"] if math.isfinite(r["high"]) else 10 * r["ratio"]
            ax.errorbar([x], [r["ratio"]], yerr=[[r["ratio"] - r["low"]], [hi - r["ratio"]]],
                        fmt="o", color="black", capsize=4,
                        label="measured, 95% CI" if x == 0 else None)
            ax.scatter([x + 0.15], [r["predicted"]], marker="_", s=300, color="tab:blue",
                       label="ch. 06: (G−1)/G, c_G" if x == 0 else None)
            ax.scatter([x + 0.15], [r["dilution_predicted"]], marker="x", color="tab:red",
                       label="ch. 09: dilution" if x == 0 else None)
        ax.axhline(REFUTING_RATIO, color="grey", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.set_ylim(1, 200)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xticks([0, 1], ["none", "group"])
        ax.set_xlim(-0.5, 1.6)
        ax.set_xlabel("scale_rewards")
        ax.set_ylabel("‖E ĝ‖² at G=16 / at G=2")
        ax.legend(fontsize=8, loc="lower right")
        styles = {"adamw-group": ("tab:blue", "-"), "sgd-group": ("tab:orange", "-"),
                  "adamw-none": ("tab:blue", "--"), "sgd-none": ("tab:orange", "--")}
        for cell in CELLS:
            pts = [(int(r["G"]), float(r[PRIMARY_METRIC])) for r in runs
                   if r.get("regime") == cell and r.get(PRIMARY_METRIC) is not None]
            if not pts:
                continue
            color, ls = styles[cell]
            Gs = sorted({g for g, _ in pts})
            bx.scatter([g for g, _ in pts], [v for _, v in pts], color=color, s=12, alpha=0.5)
            bx.plot(Gs, [np.mean([v for g, v in pts if g == G]) for G in Gs], color=color,
                    ls=ls, marker="o", label=cell)
        bx.set_xscale("log", base=2)
        bx.set_xticks([SMALL_G, LARGE_G], [str(SMALL_G), str(LARGE_G)])
        bx.set_xlabel("G (64 completions per step)")
        bx.set_ylabel("final held-out pass@1")
        bx.legend(fontsize=8)
        fig.tight_layout()
    return fig


#: Bootstrap draws of the committed verdicts (verdicts.json).
N_BOOT = 2000


def write_verdicts(out: str, n_boot: int = N_BOOT) -> dict:
    """``python -m grpolab.labs.design_c --verdicts OUT``: :func:`verdicts` of ``OUT``
    written to ``OUT/verdicts.json`` (the Gram matrices left out; tests/test_design_c.py
    recomputes it from the committed summary)."""
    from grpolab.grpo.records import write_json_atomic

    result = {**verdicts(out, n_boot=n_boot), "n_boot": n_boot,
              "made_by": f"python -m grpolab.labs.design_c --verdicts {out}"}
    safe = json.loads(json.dumps(result, default=str).replace("Infinity", '"inf"'))
    write_json_atomic(os.path.join(out, "verdicts.json"), safe)
    return result


if __name__ == "__main__":  # pragma: no cover - the one-off commands
    import sys

    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--verdicts":
        res = write_verdicts(args[1])
        print(json.dumps({"mechanism": {k: {x: v.get(x) for x in ("ratio", "low", "high",
                                                                    "verdict")}
                                        for k, v in res["mechanism"].items()},
                          "interaction": {x: res["interaction"].get(x) for x in
                                          ("verdict", "mean", "low", "high", "mde")}},
                         indent=1, default=str))
    elif len(args) == 1 and not args[0].startswith("-"):
        rec = main_match(args[0])
        print(f"SGD lr matched to AdamW's update norm: {rec['sgd_learning_rate']:.4g}")
    else:
        sys.exit("usage: python -m grpolab.labs.design_c OUT        (match the SGD lr)\n"
                 "       python -m grpolab.labs.design_c --verdicts OUT")
