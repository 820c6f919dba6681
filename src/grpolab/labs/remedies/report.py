"""The remedy labs' results: aggregation, theory next to measurement, plots, book helpers.

One job: turn an item's finished runs (written by :mod:`grpolab.labs.remedies.items`) into the
small committed ``results.json`` and plots, and show them in the book: tables of mean ± sd
over seeds, differences against seed noise, and the command that reproduces each item.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import os

import numpy as np

from grpolab import theory
from grpolab._files import Field, check
from grpolab.labs.remedies import strategies

#: The remedy labs' primary metric: held-out pass@1 estimated from ``eval_samples`` samples
#: per prompt, the same metric as the G sweep's (greedy accuracy is reported beside it).
PRIMARY_METRIC = "final_sampled_accuracy"

__all__ = ["aggregate_item", "allocation_runs", "dynamic_sampling_theory", "SIDE_METRIC",
           "plot_item",
           "PRIMARY_METRIC",
           "results_root", "load_results", "arm_table", "compare", "compare_family", "publish",
           "reproduce_command", "display_item", "display_figure", "table_html", "show_table"]


# ----------------------------------------------------------------------------- file schemas
#: ``item.json``, as the aggregation reads it (other keys allowed).
ITEM_RECORD = Field("object", extra_keys=True, fields={
    "item": Field("str", max_items=200), "title": Field("str", required=False),
    "arms": Field("map", max_items=1000, items=Field("object", extra_keys=True, fields={})),
    "seeds": Field("list", max_items=1000, items=Field("int", 0, 2**32 - 1)),
})
#: ``results.json``, as the plots and the book read it (other keys allowed).
RESULTS_RECORD = Field("object", extra_keys=True, fields={
    "item": Field("str", max_items=200), "title": Field("str", required=False),
    "seeds": Field("list", required=False, max_items=1000, items=Field("int", 0)),
    "results": Field("map", max_items=1000, items=Field("object", extra_keys=True, fields={
        "curves": Field("list", required=False, items=Field("object", extra_keys=True, fields={
            "completions": Field("list", items=Field("real")),
            "accuracy": Field("list", items=Field("real", 0, 1))})),
    })),
})
#: A dynamic-sampling step of a run log (the theory-vs-measurement rows read these).
DYNAMIC_STEP = Field("object", extra_keys=True, fields={
    "generation_batches": Field("int", 0), "q_predicted": Field("real", 0, 1),
    "informative_generated": Field("int", 0), "groups_generated": Field("int", 0),
    "completions_step": Field("int", 0), "hit_cap": Field("bool"),
})
#: The config fields of a dynamic-sampling run summary those rows read.
DYNAMIC_CONFIG = Field("object", extra_keys=True, fields={
    "num_generations": Field("int", 1), "prompts_per_step": Field("int", 1),
    "max_batches": Field("int", 1),
})


# ----------------------------------------------------------------------------- aggregation
def _mean_sd(v: list[float]) -> dict:
    v = [x for x in v if x is not None]
    if not v:
        return {"mean": None, "sd": None, "n": 0}
    return {"mean": float(np.mean(v)), "sd": float(np.std(v, ddof=1)) if len(v) > 1 else None,
            "n": len(v), "values": [float(x) for x in v]}


def aggregate_item(out: str | os.PathLike) -> dict:
    """Per-arm means and seed standard deviations of every summary metric into
    ``results.json`` (small; committed), plus accuracy-vs-completions curves per arm."""
    from grpolab.grpo.records import (
        RUN_SUMMARY,
        CorruptFileError,
        check_log_records,
        read_json,
        read_jsonl,
        write_json_atomic,
    )

    out = os.fspath(out)
    meta = read_json(os.path.join(out, "item.json"), "a remedy item record (grpolab remedies)",
                     keys=("item", "arms", "seeds"), schema=ITEM_RECORD)
    metrics = ("final_accuracy", "initial_accuracy", "final_sampled_accuracy",
               "initial_sampled_accuracy",
               "informative_per_1k_completions", "informative_groups_used", "groups_used",
               "completions", "cap_hits", "final_completion_length",
               "initial_completion_length", "final_kl", "final_kl_to_warm_start", "steps",
               "steps_without_update",
               "seconds", "curriculum_open_levels")
    arms = {}
    starts: set[str] = set()  # the warm-start checksums the runs recorded (one, normally)
    for arm in meta["arms"]:
        sums, curves = [], []
        for s in meta["seeds"]:
            d = os.path.join(out, "runs", arm, f"seed{s}")
            if not os.path.isfile(os.path.join(d, "summary.json")):
                continue
            remedy = f"delete the folder {d} and rerun (only that run is redone)"
            summ = read_json(os.path.join(d, "summary.json"), "a run summary",
                             keys=("steps", "final_accuracy", "final_accuracy_by_difficulty",
                                   "initial_accuracy"), remedy=remedy, schema=RUN_SUMMARY)
            sums.append(summ)
            if summ.get("warmstart_sha256"):
                starts.add(summ["warmstart_sha256"])
            log_path = os.path.join(d, "log.jsonl")
            recs = check_log_records(log_path, read_jsonl(log_path, "a run log", remedy=remedy),
                                     remedy)
            evals = [r for r in recs if "eval_greedy_accuracy" in r]
            if not any(r.get("step") == summ["steps"] for r in evals):
                raise CorruptFileError(os.path.join(d, "log.jsonl"), "lacks the final evaluation "
                                       f"of step {summ['steps']} (the log was cut short)", remedy)
            initial_by_difficulty = evals[0]["eval_greedy_accuracy_by_difficulty"]
            curves.append({"seed": s, "completions": [r["completions"] for r in evals],
                           "accuracy": [r["eval_sampled_accuracy"] for r in evals],
                           "greedy": [r["eval_greedy_accuracy"] for r in evals]})
        if not sums:
            continue
        arms[arm] = {m: _mean_sd([x.get(m) for x in sums]) for m in metrics}
        arms[arm]["curves"] = curves
        # learning speed per completion (pass@1): at the first evaluation after the start,
        # and the mean over the evaluations after the start (area under the curve)
        arms[arm]["early_accuracy"] = _mean_sd([c["accuracy"][1] for c in curves
                                                if len(c["accuracy"]) > 1])
        arms[arm]["accuracy_auc"] = _mean_sd([float(np.mean(c["accuracy"][1:])) for c in curves
                                              if len(c["accuracy"]) > 1])
        gain = [x["final_sampled_accuracy"] - x["initial_sampled_accuracy"] for x in sums]
        arms[arm]["accuracy_gain"] = _mean_sd(gain)
        bydiff: dict[str, list[float]] = {}
        for x in sums:
            for k, v in x["final_accuracy_by_difficulty"].items():
                bydiff.setdefault(k, []).append(v)
        arms[arm]["final_accuracy_by_difficulty"] = {k: _mean_sd(v) for k, v in bydiff.items()}
        arms[arm]["initial_accuracy_by_difficulty"] = initial_by_difficulty
    results = {**meta, "results": arms}
    if starts:  # a fresh clone that retrains the warm start can check it got these weights
        results["warmstart_sha256"] = starts.pop() if len(starts) == 1 else sorted(starts)
    probe_path = os.path.join(out, "probe.json")
    if os.path.isfile(probe_path):
        results["probe"] = read_json(probe_path, "a probe record")
    if meta["item"] == "dynamic-sampling":
        results["theory"] = dynamic_sampling_theory(out, arms)
    if meta["item"] == "allocation":
        results["allocation_runs"] = allocation_runs(out, meta)
    write_json_atomic(os.path.join(out, "results.json"), results)
    return results


#: What the allocation source adds to a run's summary (sources.Allocation.summary).
ALLOCATION_SUMMARY = Field("object", extra_keys=True, fields={
    "config": Field("object", extra_keys=True, fields={}),
    "steps": Field("int", 0), "completions": Field("int", 0),
    "allocation_visits": Field("object", fields={
        k: Field("list", max_items=10**7, items=Field("int", 0)) for k in
        ("prompt", "G", "successes")}),
    "census_successes": Field("list", max_items=10**7, items=Field("int", 0)),
    "census_samples": Field("int", 1),
})
#: An evaluation record of a run log, as :func:`allocation_runs` reads it.
EVAL_RECORD = Field("object", extra_keys=True, fields={
    "step": Field("int", 0), "completions": Field("int", 0),
    "eval_sampled_successes": Field("list", max_items=10**7, items=Field("int", 0)),
})


def _pass_at_k_by_level(successes: list[int], samples: int, levels: list[int],
                        ks: tuple[int, ...]) -> dict:
    """{level: {k: mean unbiased pass@k over that level's prompts}} from per-prompt counts."""
    c = np.asarray(successes)
    lv = np.asarray(levels)
    return {str(d): {str(k): float(np.mean([theory.pass_at_k(samples, int(x), k)
                                            for x in c[lv == d]])) for k in ks}
            for d in sorted(set(levels))}


def allocation_runs(out: str, meta: dict) -> list[dict]:
    """One compact record per finished run of the allocation item (book/theory/14): held-out
    pass@1 and pass@64 per level at the start and at the end, the informative groups per
    step, the completions spent per level, and the persistence of zero variance across
    visits (:func:`strategies.zero_variance_transitions`) with its fixed-pass-rate
    prediction from the run's census. What the verdicts
    (:mod:`grpolab.labs.allocation_lab`) read; the raw visits stay in each run's summary."""
    from grpolab.allocation import zero_variance_persistence
    from grpolab.grpo.config import GRPOConfig, training_prompts
    from grpolab.grpo.records import CorruptFileError, read_json, read_jsonl
    from grpolab.tasks.registry import get_task

    rows = []
    for arm in meta["arms"]:
        for s in meta["seeds"]:
            d = os.path.join(out, "runs", arm, f"seed{s}")
            if not os.path.isfile(os.path.join(d, "summary.json")):
                continue
            remedy = f"delete the folder {d} and rerun (only that run is redone)"
            summ = read_json(os.path.join(d, "summary.json"), "an allocation run summary",
                             remedy=remedy, schema=ALLOCATION_SUMMARY)
            cfg = GRPOConfig.from_dict(summ["config"])
            train, evals = training_prompts(cfg, get_task(cfg.task, **cfg.task_kwargs))
            eval_levels = [p.difficulty for p in evals]
            train_levels = np.array([p.difficulty for p in train])
            log_path = os.path.join(d, "log.jsonl")
            recs = [r for r in read_jsonl(log_path, "a run log", remedy=remedy)
                    if "eval_sampled_successes" in r]
            for r in (recs[0], recs[-1]) if recs else ():
                check(r, EVAL_RECORD, log_path, remedy=remedy)
                if len(r["eval_sampled_successes"]) != len(evals):
                    raise CorruptFileError(log_path, "an evaluation counts "
                                           f"{len(r['eval_sampled_successes'])} prompts, the "
                                           f"config {len(evals)}", remedy)
            if not recs or recs[-1]["step"] != summ["steps"]:
                raise CorruptFileError(log_path, "lacks the final evaluation", remedy)
            steps = [r for r in read_jsonl(log_path, "a run log", remedy=remedy)
                     if r.get("step", 0) > 0]
            v = summ["allocation_visits"]
            prompt, G, k = (np.asarray(v[key]) for key in ("prompt", "G", "successes"))
            if not (prompt.size == G.size == k.size) or (k > G).any() or (
                    prompt.size and prompt.max() >= len(train)):
                raise CorruptFileError(os.path.join(d, "summary.json"), "allocation_visits "
                                       "are not one (prompt, G, successes) per visit", remedy)
            rates = np.asarray(summ["census_successes"], float) / summ["census_samples"]
            zero = (k == 0) | (k == G)
            trans = strategies.zero_variance_transitions(prompt, zero, G, rates)
            ks = (1, cfg.eval_samples)
            rows.append({
                "arm": arm, "seed": s, "steps": summ["steps"],
                "completions": summ["completions"], "eval_samples": cfg.eval_samples,
                "initial_pass_at_k": _pass_at_k_by_level(
                    recs[0]["eval_sampled_successes"], cfg.eval_samples, eval_levels, ks),
                "final_pass_at_k": _pass_at_k_by_level(
                    recs[-1]["eval_sampled_successes"], cfg.eval_samples, eval_levels, ks),
                "informative_groups_per_step": float(np.mean(
                    [r["informative_groups"] for r in steps])),
                "completions_by_level": {str(lv): int(G[train_levels[prompt] == lv].sum())
                                         for lv in sorted(set(train_levels.tolist()))},
                "census_pass_rate_by_level": {
                    str(lv): float(rates[train_levels == lv].mean())
                    for lv in sorted(set(train_levels.tolist()))},
                "zero_variance": trans,
                "pool_persistence_at_G": {
                    str(cfg.num_generations): zero_variance_persistence(
                        rates, cfg.num_generations)},
            })
    return rows


def dynamic_sampling_theory(out: str, arms: dict) -> dict:
    """Theory next to measurement for the dynamic sampler, step by step.

    Before each step the run logs q = mean over training prompts of 1 − p̂^G − (1 − p̂)^G
    from the running pass-rate estimates. A uniformly drawn group is informative with
    probability q, independently of the others, so the number of informative groups in a
    generation batch of b groups is Binomial(b, q). The theory functions take a single pass
    rate, so q is mapped to the p ≤ 1/2 with the same informative probability
    (:func:`grpolab.labs.remedies.strategies.pass_rate_for_informative`) and the predictions are
    E[completions] = G·B/q (group by group, uncapped), E[generation batches] (whole batches
    of B groups, as the sampler draws them; cost B·G·E[batches]) and P(hit the cap).
    """
    found = {}
    for arm in ("dynamic", "hard-dynamic"):
        root = os.path.join(out, "runs", arm)
        if os.path.isdir(root):
            found[arm] = {"per_seed": _dynamic_sampling_theory_rows(root)}
    return found


def _capped_batches(p: float, G: int, B: int, cap: int) -> float:
    """E[min(K, cap)] = Σ_{j=0}^{cap−1} P(K > j), with P(K > j) the probability that j
    generation batches of B groups hold fewer than B informative groups."""
    return 1.0 + sum(float(theory.dynamic_sampling_cap_probability(p, G, B, B, j))
                     for j in range(1, cap))


def _dynamic_sampling_theory_rows(root: str) -> list[dict]:
    from grpolab._files import CorruptFileError
    from grpolab.grpo.records import RUN_SUMMARY, read_json, read_jsonl

    rows = []
    for s in sorted(os.listdir(root)):
        path = os.path.join(root, s, "summary.json")
        if not os.path.isfile(path):
            continue
        remedy = f"delete the folder {os.path.join(root, s)} and rerun (only that run is redone)"
        summ = read_json(path, "a run summary", keys=("config",), remedy=remedy,
                         schema=RUN_SUMMARY)
        # GRPO fields in "config"; the remedy's own (max_batches) in "remedy_config"
        extra = summ.get("remedy_config", {})
        cfg = {**summ["config"], **(extra if isinstance(extra, dict) else {})}
        check(cfg, DYNAMIC_CONFIG, path, remedy=remedy)
        G, B = cfg["num_generations"], cfg["prompts_per_step"]
        log_path = os.path.join(root, s, "log.jsonl")
        recs = [r for r in read_jsonl(log_path, "a run log", remedy=remedy)
                if "generation_batches" in r]
        for n, r in enumerate(recs):
            try:
                check(r, DYNAMIC_STEP, log_path, remedy=remedy)
            except CorruptFileError as exc:
                raise CorruptFileError(log_path, f"dynamic-sampling step {n}: {exc.problem}",
                                       remedy) from None
        pred_c, pred_b, pred_cap = [], [], []
        for r in recs:
            p = strategies.pass_rate_for_informative(r["q_predicted"], G)
            pred_c.append(float(theory.dynamic_sampling_expected_completions(p, G, B)))
            pred_b.append(float(theory.dynamic_sampling_expected_batches(p, G, B, B)))
            pred_cap.append(float(theory.dynamic_sampling_cap_probability(
                p, G, B, B, cfg["max_batches"])))
        q_obs = (sum(r["informative_generated"] for r in recs)
                 / max(1, sum(r["groups_generated"] for r in recs)))
        p_obs = strategies.pass_rate_for_informative(min(max(q_obs, 1e-9), 1.0), G)
        batches_obs_q = _capped_batches(p_obs, G, B, cfg["max_batches"])
        rows.append({
            "seed": s, "steps": len(recs),
            # the same formulas, capped at max_batches, at the informative fraction observed
            "generation_batches_predicted_from_observed_q": batches_obs_q,
            "completions_per_step_predicted_from_observed_q": float(B * G * batches_obs_q),
            "cap_hit_probability_predicted_from_observed_q": float(
                theory.dynamic_sampling_cap_probability(p_obs, G, B, B, cfg["max_batches"])),
            "q_predicted_mean": float(np.mean([r["q_predicted"] for r in recs])),
            "informative_fraction_observed": float(
                sum(r["informative_generated"] for r in recs)
                / max(1, sum(r["groups_generated"] for r in recs))),
            "generation_batches_observed": float(np.mean([r["generation_batches"] for r in recs])),
            "generation_batches_predicted_uncapped": float(np.mean(pred_b)),
            "completions_per_step_observed": float(np.mean([r["completions_step"] for r in recs])),
            "completions_per_step_predicted_uncapped": float(np.mean(pred_c)),
            # the sampler draws whole generation batches of B groups: cost = B·G·E[batches]
            "completions_per_step_predicted_batched": float(B * G * np.mean(pred_b)),
            "cap_hit_fraction_observed": float(np.mean([r["hit_cap"] for r in recs])),
            "cap_hit_probability_predicted": float(np.mean(pred_cap)),
        })
    return rows


# ----------------------------------------------------------------------------- plots
# The per-item metric shown next to accuracy (the thing the remedy is supposed to change).
SIDE_METRIC = {
    "dynamic-sampling": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "difficulty": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "adaptive-g": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "temperature": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "beta": ("final_kl_to_warm_start", "KL to the warm start at the end (k3)"),
    "rewards": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "length-bias": ("final_completion_length", "completion length (tokens, incl. EOS)"),
    "prompts-x-g": ("informative_per_1k_completions", "informative groups / 1k completions"),
}


def plot_item(out: str | os.PathLike) -> list[str]:
    """``results.png``/``.svg``: accuracy vs completions per arm (mean, min–max band over
    seeds), final accuracy per arm with every seed as a dot, and the item's side metric.
    Items with a sampling probe get ``probe.png``/``.svg`` too. Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from grpolab.grpo.records import read_json
    from grpolab.labs.common import FIGURE_STYLE

    out = os.fspath(out)
    res = read_json(os.path.join(out, "results.json"), "remedy results (grpolab remedies)",
                    keys=("item", "results"), schema=RESULTS_RECORD)
    with plt.rc_context(FIGURE_STYLE):
        return _plot_item(res, out)


def _plot_item(res: dict, out: str) -> list[str]:
    import matplotlib.pyplot as plt

    from grpolab.labs.common import FIGURE_WIDTH, save_figure

    arms = res["results"]
    names = list(arms)
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    fig, axes = plt.subplots(3, 1, figsize=(FIGURE_WIDTH, 11.5),
                             gridspec_kw={"height_ratios": [1.3, 1, 1]})
    ax = axes[0]
    for k, a in enumerate(names):
        curves = arms[a]["curves"]
        n = min(len(c["accuracy"]) for c in curves)
        x = np.array(curves[0]["completions"][:n])
        y = np.array([c["accuracy"][:n] for c in curves])
        ax.plot(x, y.mean(0), color=cmap(k), label=a)
        ax.fill_between(x, y.min(0), y.max(0), color=cmap(k), alpha=0.15)
    ax.set_xlabel("completions generated")
    ax.set_ylabel("held-out pass@1")
    ax.set_title("pass@1 vs completions (band: min–max over seeds)")
    ax.legend(fontsize=9, ncol=2 if len(names) > 4 else 1)
    for j, (metric, label) in enumerate([(PRIMARY_METRIC, "final held-out pass@1"),
                                         SIDE_METRIC.get(res["item"],
                                                         ("final_kl", "final KL"))]):
        ax = axes[j + 1]
        for k, a in enumerate(names):
            st = arms[a].get(metric) or {}
            if st.get("mean") is None:
                continue
            ax.bar(k, st["mean"], color=cmap(k), alpha=0.6)
            ax.scatter([k] * len(st.get("values", [])), st.get("values", []), color="k", s=10)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=10)
        ax.set_title(label)
        if metric == PRIMARY_METRIC:  # each arm's own warm-start pass@1, as a tick
            for k, a in enumerate(names):
                init = arms[a]["initial_sampled_accuracy"]["mean"]
                if init is not None:
                    ax.hlines(init, k - 0.4, k + 0.4, color="gray", ls="--",
                              label="warm start" if k == 0 else None)
            ax.legend(fontsize=9)
    fig.suptitle(f"{res['title']}\n(tiny model, {len(res['seeds'])} seeds)")
    fig.tight_layout()
    paths = save_figure(fig, out, "results")
    probe = res.get("probe")
    if probe and "rows" in probe:  # temperature × G, sampling only
        rows = probe["rows"]
        fig, axes = plt.subplots(2, 1, figsize=(FIGURE_WIDTH, 7.5), sharex=True)
        for T in sorted({r["temperature"] for r in rows}):
            rr = [r for r in rows if r["temperature"] == T]
            axes[0].plot([r["G"] for r in rr], [r["distinct_mean"] / r["G"] for r in rr],
                         marker="o", label=f"T={T}")
            line, = axes[1].plot([r["G"] for r in rr], [r["zero_variance_observed"] for r in rr],
                                 marker="o", label=f"T={T} observed")
            if "zero_variance_predicted" in rr[0]:
                axes[1].plot([r["G"] for r in rr], [r["zero_variance_predicted"] for r in rr],
                             ls="--", color=line.get_color(), label=f"T={T} predicted")
        Gs = sorted({int(r["G"]) for r in rows})
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xticks(Gs, [str(G) for G in Gs])
            ax.minorticks_off()
            ax.grid(alpha=0.3)
            ax.legend(fontsize=9, ncol=2)
        axes[1].set_xlabel("G")
        axes[0].set_ylabel("distinct completions / G")
        axes[1].set_ylabel("zero-variance fraction")
        fig.suptitle("warm start, sampling only")
        fig.tight_layout()
        paths += save_figure(fig, out, "probe")
    elif probe and "binary" in probe:  # the card's variance rule
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4))
        for kind, d in probe.items():
            if not isinstance(d, dict) or "trajectory" not in d:
                continue
            ax.plot([t["G"] for t in d["trajectory"]], marker=".", label=kind)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("step")
        ax.set_ylabel("G chosen by the card's rule")
        ax.legend(fontsize=9)
        ax.set_title("'double if variance > 0.8, halve if < 0.2'")
        fig.tight_layout()
        paths += save_figure(fig, out, "probe")
    return paths


# ----------------------------------------------------------------------------- book helpers
def results_root() -> str:
    """Where the committed remedy results live (``labs/results/remedies`` of this checkout)."""
    from grpolab.labs.common import committed_results_dir

    return committed_results_dir("labs/results/remedies")


def load_results(item: str, root: str | None = None) -> dict | None:
    """The committed ``results.json`` of an item, or None when it has not been measured."""
    from grpolab.grpo.records import read_json

    path = os.path.join(root or results_root(), item, "results.json")
    if not os.path.isfile(path):
        return None
    return read_json(path, "remedy results (grpolab remedies)", keys=("item", "results"),
                     schema=RESULTS_RECORD)


def _fmt(st: dict | None, digits: int = 3) -> str:
    if not st or st.get("mean") is None:
        return "–"
    sd = f" ± {st['sd']:.{digits}f}" if st.get("sd") is not None else ""
    return f"{st['mean']:.{digits}f}{sd}"


def arm_table(results: dict, metrics: dict[str, str] | None = None, digits: int = 3) -> str:
    """A Markdown table: one row per arm, mean ± sd over seeds of each metric."""
    metrics = metrics or {PRIMARY_METRIC: "final pass@1",
                          "accuracy_gain": "gain over warm start",
                          "informative_per_1k_completions": "informative groups / 1k"}
    head = "| arm | seeds | " + " | ".join(metrics.values()) + " |"
    sep = "|---" * (len(metrics) + 2) + "|"
    rows = [head, sep]
    for arm, r in results["results"].items():
        n = next((r[m]["n"] for m in (PRIMARY_METRIC, "final_accuracy") if m in r), "–")
        rows.append(f"| {arm} | {n} | " + " | ".join(_fmt(r.get(m), digits) for m in metrics)
                    + " |")
    return "\n".join(rows)


def _by_seed(results: dict, arm: str, metric: str) -> dict[int, float]:
    """An arm's per-seed values of ``metric`` ({seed: value}; seed order as in ``seeds``)."""
    entry = results["results"][arm][metric]
    values = entry.get("values") or []
    seeds = results.get("seeds") or list(range(len(values)))
    if len(values) != len(seeds):  # some seeds missing: values cannot be paired by seed
        return {-1 - i: v for i, v in enumerate(values)}
    return dict(zip(seeds, values, strict=True))


#: Below this (relative) spread the per-seed differences of a paired contrast are taken as
#: equal: metrics are means over at most a few thousand samples, so a real spread is far
#: larger, and float subtraction leaves ~1e-17.
_RESIDUE = 1e-9


def compare(results: dict, a: str, b: str, metric: str = PRIMARY_METRIC) -> dict:
    """The difference of arms a − b on ``metric`` with its 95% t interval: paired by seed
    when both arms ran the same seeds (they share prompt orders), Welch's otherwise.
    One contrast, uncorrected; use :func:`compare_family` for a family of contrasts.
    Paired differences that are all equal up to float residue are no test (``p_value``
    None), or p = 1 when they are all zero (identical runs)."""
    from grpolab.labs.stats import contrast

    xa, xb = _by_seed(results, a, metric), _by_seed(results, b, metric)
    c = contrast(xa, xb)
    if set(xa) == set(xb) and len(xa) >= 2:
        # Per-seed differences equal up to float residue (0.405 − 0.41 against 0.415 − 0.42)
        # have a spread of ~1e-17, which a t test turns into p ~ 1e-29: no spread, no test.
        d = np.array([xa[s] - xb[s] for s in xa])
        if np.ptp(d) <= _RESIDUE * max(1.0, float(np.abs(d).max())):
            identical = bool(np.abs(d).max() <= _RESIDUE)
            mean = 0.0 if identical else float(d.mean())
            c = {**c, "difference": mean, "low": mean, "high": mean,
                 "p_value": 1.0 if identical else None,
                 "test": "paired t" if identical else
                 "paired t, no spread (every seed differs by the same amount: not a test)"}
    if c["low"] is None:
        text = f"{a} − {b} ({metric}): {c['difference']:+.3f} (one seed: no interval)"
    else:
        text = (f"{a} − {b} ({metric}): {c['difference']:+.3f}, 95% CI "
                f"[{c['low']:+.3f}, {c['high']:+.3f}] ({c['test']}, n={c['n']})")
    return {**c, "text": text}


def compare_family(results: dict, pairs: list[tuple[str, str]],
                   metric: str = PRIMARY_METRIC, alpha: float = 0.05) -> list[dict]:
    """:func:`compare` for every pair, with Holm-adjusted p-values over the family; a
    contrast ``differs`` only when its adjusted p < ``alpha``."""
    from grpolab.labs.stats import holm

    rows = [compare(results, a, b, metric) for a, b in pairs]
    for row, adj in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = adj
        row["differs"] = adj is not None and adj < alpha
        if adj is not None:
            row["text"] += (f"; Holm p = {adj:.3f} over {len(rows)}: "
                            + ("differs" if row["differs"] else "no detectable difference"))
    return rows


def publish(out: str | os.PathLike, dest: str | os.PathLike) -> list[str]:
    """Copy the small, committable part of an item's output (``results.json`` and the plots)
    from ``out`` to ``dest`` (e.g. ``labs/results/remedies/<item>``). Returns the paths."""
    from grpolab._files import read_bytes, write_atomic
    from grpolab._paths import OutputPathError

    out, dest = os.fspath(out), os.fspath(dest)
    names = [n for n in ("results.json", "results.png", "results.svg", "probe.png", "probe.svg")
             if os.path.lexists(os.path.join(out, n))]
    for name in names:  # all checked before the first copy: never follow a link out of OUT
        if os.path.islink(os.path.join(out, name)):
            raise OutputPathError(f"{os.path.join(out, name)} is a symbolic link; --publish "
                                  "copies only the files of OUT itself: remove the link and "
                                  "rerun")
    os.makedirs(dest, exist_ok=True)
    copied = []
    for name in names:
        src = os.path.join(out, name)
        # read_bytes: a regular file only; write_atomic: onto a regular file or a new path
        write_atomic(os.path.join(dest, name), read_bytes(src, f"a remedy result ({name})"))
        copied.append(os.path.join(dest, name))
    return copied


#: Items whose committed results live outside labs/results/remedies: the allocation lab is
#: its own experiment, declared in labs/results/allocation/declared.json before any run.
PUBLISHED_AT = {"allocation": "labs/results/allocation"}


def reproduce_command(item: str) -> str:
    """The shell command that regenerates an item's committed results."""
    dest = PUBLISHED_AT.get(item, f"labs/results/remedies/{item}")
    return (f"grpolab remedies --item {item} --out runs/remedies/{item} "
            f"--cache runs/remedies-cache --publish {dest}")


def display_item(item: str, metrics: dict[str, str] | None = None, *, plot: str = "results.png",
                 root: str | None = None) -> dict | None:
    """For the book: show an item's table (mean ± sd over seeds) and plot, or say plainly
    that it has not been measured yet and how to measure it. Returns the results or None."""
    from IPython.display import Markdown, display

    res = load_results(item, root)
    if res is None:
        display(Markdown(f"**Not yet measured.** Run `{reproduce_command(item)}`."))
        return None
    show_table(arm_table(res, metrics))
    display_figure(item, plot, root)
    return res


def display_figure(item: str, name: str, root: str | None = None) -> bool:
    """For the book: show the committed figure ``name`` of an item (``probe.png``,
    ``results.png``) when it exists; whether it did. Used by: book/labs/03-remedies.md."""
    from IPython.display import Image, display

    path = os.path.join(root or results_root(), item, name)
    if not os.path.isfile(path):
        return False
    display(Image(filename=path))
    return True


def table_html(md: str) -> str:
    """An HTML table from a pipe table (header, separator, rows): the book's Markdown
    renderer is CommonMark, which has no tables."""
    import html

    lines = [ln.strip() for ln in md.strip().splitlines() if ln.strip()]
    cells = [[html.escape(c.strip()) for c in ln.strip("|").split("|")] for ln in lines]
    head, body = cells[0], [r for r in cells[2:]]
    # the book's table class, so that the dark theme draws it in its own colours
    out = ['<table class="grpolab-table">',
           "<thead><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr></thead>",
           "<tbody>"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body]
    return "\n".join(out + ["</tbody>", "</table>"])


def show_table(md: str) -> None:
    """Display a pipe table as HTML (notebooks and the book)."""
    from IPython.display import HTML, display

    display(HTML(table_html(md)))
