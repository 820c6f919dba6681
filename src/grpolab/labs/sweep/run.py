"""The G sweep: GRPO from one warm start for every (regime, G, seed), then summaries and plots.

Layout of ``out/``::

    sweep.json                     preset, grpolab version, git commit, device
    cache/warmstart-<hash>/        the shared warm start (safetensors)
    census-d<levels>.npy           pass/fail of the warm start, n samples per training prompt
    gradient_noise.json            gradient noise vs G at the warm start
    runs/<regime>/G<G>-seed<s>/    log.jsonl + summary.json of one run
    summary.json                   every run's summary + aggregates + verdicts
    curves.csv                     the evaluation curves of every run (small)
    steps.csv                      every 5th step of every run: reward, zero-variance groups...
    plots/*.png, plots/*.svg

Resumable: a run whose ``summary.json`` exists is skipped; every file is written to a
temporary name and renamed. Ctrl-C stops between steps; finished runs stay.
"""

from __future__ import annotations

import csv
import json
import os
import time

import numpy as np

from grpolab.grpo.loop import training_prompts
from grpolab.grpo.measure import gradient_noise, pass_rate_census
from grpolab.grpo.records import device_name, git_commit, write_json_atomic
from grpolab.labs.sweep.presets import SweepPreset

__all__ = ["run_sweep", "aggregate", "regime_verdicts", "PRIMARY_METRIC"]

# steps.csv keeps every STEP_STRIDE-th step of every run, these columns (small enough to commit)
STEP_STRIDE = 5
STEP_COLUMNS = ("step", "completions", "reward_mean", "zero_gradient_observed",
                "zero_gradient_predicted", "zero_gradient_predicted_plugin", "grad_norm",
                "entropy", "kl", "seconds")


def _census_path(out: str, regime) -> str:
    """Regimes that train on the same prompts share one census."""
    return os.path.join(out, f"census-d{'-'.join(map(str, regime.train_difficulties))}.npy")


def _census(out: str, preset: SweepPreset, regime, model, tokenizer, task, config) -> np.ndarray:
    """Pass/fail of the warm start on every training prompt of the regime, cached on disk."""
    path = _census_path(out, regime)
    if os.path.isfile(path):
        return np.load(path)
    width = max(max(preset.group_sizes), 8) * 2
    census = pass_rate_census(model, tokenizer, task, training_prompts(config, task)[0],
                              samples=width, temperature=config.temperature,
                              top_p=config.top_p, max_new_tokens=config.max_completion_length,
                              seed=12345)
    tmp = f"{path}.tmp-{os.getpid()}.npy"
    np.save(tmp, census)
    os.replace(tmp, path)
    return census


#: The sweep's pre-declared primary metric (sampled pass@1 on the held-out prompts) and its
#: secondary view (greedy accuracy); the test is :func:`grpolab.labs.stats.g_verdict`.
PRIMARY_METRIC = "final_sampled_accuracy"
SECONDARY_METRIC = "final_accuracy"


def regime_verdicts(runs: list[dict], regime: str) -> dict:
    """The pre-declared tests for one regime's finished runs (the trend in log₂ G across
    seeds, and all pairwise G contrasts with Holm's correction), for the primary metric
    and the greedy secondary view. Works on committed ``summary.json`` runs too."""
    from grpolab.labs.stats import g_verdict

    out = {}
    for key, metric in (("verdict", PRIMARY_METRIC), ("verdict_greedy", SECONDARY_METRIC)):
        table: dict[int, dict[int, float]] = {}
        for r in runs:
            if r.get("regime") == regime and r.get(metric) is not None:
                table.setdefault(int(r["G"]), {})[int(r["seed"])] = float(r[metric])
        if len(table) >= 2:
            out[key] = g_verdict(table, metric)
    return out


def aggregate(out: str, preset: SweepPreset) -> dict:
    """Collect the finished runs into ``summary.json`` and ``curves.csv``."""
    from grpolab import theory

    runs, rows, step_rows = [], [], []
    for regime in preset.regimes:
        for G in preset.group_sizes:
            for seed in preset.seeds:
                d = os.path.join(out, "runs", regime.name, f"G{G}-seed{seed}")
                path = os.path.join(d, "summary.json")
                if not os.path.isfile(path):
                    continue
                with open(path) as f:
                    s = json.load(f)
                s.pop("config", None)
                s["regime"] = regime.name
                runs.append(s)
                plug_in = []
                with open(os.path.join(d, "log.jsonl")) as f:
                    for line in f:
                        rec = json.loads(line)
                        if "zero_gradient_predicted_plugin" in rec:
                            plug_in.append(rec["zero_gradient_predicted_plugin"])
                        step = rec["step"]
                        if step > 0 and (step % STEP_STRIDE == 0 or step == 1):
                            step_rows.append({"regime": regime.name, "G": G, "seed": seed,
                                              **{k: rec.get(k) for k in STEP_COLUMNS}})
                        if "eval_greedy_accuracy" in rec:
                            rows.append({
                                "regime": regime.name, "G": G, "seed": seed, "step": rec["step"],
                                "completions": rec["completions"],
                                "eval_greedy_accuracy": rec["eval_greedy_accuracy"],
                                "eval_sampled_accuracy": rec["eval_sampled_accuracy"],
                                **{f"greedy_d{k}": v for k, v in
                                   rec["eval_greedy_accuracy_by_difficulty"].items()}})
                s["zero_gradient_predicted_plugin"] = float(np.mean(plug_in)) if plug_in else None
    per_regime = {}
    for regime in preset.regimes:
        mine = [r for r in runs if r["regime"] == regime.name]
        if not mine:
            continue
        final_by_G: dict[int, list[float]] = {}
        for r in mine:
            final_by_G.setdefault(r["G"], []).append(r["final_accuracy"])
        gaps = [r["zero_gradient_abs_gap"] for r in mine if r["zero_gradient_abs_gap"] is not None]
        gaps_plugin = [abs(r["zero_gradient_predicted_plugin"] - r["zero_gradient_observed"])
                       for r in mine if r["zero_gradient_predicted_plugin"] is not None]
        census_path = _census_path(out, regime)
        theory_zero, theory_zero_plugin = {}, {}
        if os.path.isfile(census_path):
            census = np.load(census_path)
            k, n = census.sum(1), census.shape[1]
            for G in preset.group_sizes:
                if G <= n:  # mean over prompts of the unbiased estimate of p^G + (1-p)^G
                    theory_zero[int(G)] = float(np.mean(
                        theory.unbiased_zero_gradient_estimate(k, np.full_like(k, n), G)))
                theory_zero_plugin[int(G)] = float(
                    theory.empirical_zero_gradient_probability(k / n, G))
        per_regime[regime.name] = {
            "mode": regime.mode,
            "initial_accuracy": mine[0]["initial_accuracy"],
            "final_accuracy_mean_by_G": {G: float(np.mean(v)) for G, v in final_by_G.items()},
            "final_accuracy_std_by_G": {G: float(np.std(v, ddof=1)) if len(v) > 1 else None
                                        for G, v in final_by_G.items()},
            "accuracy_rose_above_warm_start": bool(
                np.mean([r["final_accuracy"] for r in mine]) > mine[0]["initial_accuracy"]),
            "zero_gradient_mean_abs_gap": float(np.mean(gaps)) if gaps else None,
            "zero_gradient_mean_abs_gap_plugin": float(np.mean(gaps_plugin)) if gaps_plugin
            else None,
            "zero_gradient_at_warm_start_theory": theory_zero,
            "zero_gradient_at_warm_start_theory_plugin": theory_zero_plugin,
            **regime_verdicts(mine, regime.name),
        }
    all_gaps = [r["zero_gradient_abs_gap"] for r in runs if r["zero_gradient_abs_gap"] is not None]
    summary = {
        "preset": preset.name, "runs": runs, "regimes": per_regime,
        "zero_gradient_mean_abs_gap": float(np.mean(all_gaps)) if all_gaps else None,
        "runs_finished": len(runs),
        "runs_planned": len(preset.regimes) * len(preset.group_sizes) * len(preset.seeds),
    }
    noise_path = os.path.join(out, "gradient_noise.json")
    if os.path.isfile(noise_path):
        with open(noise_path) as f:
            summary["gradient_noise"] = json.load(f)
    write_json_atomic(os.path.join(out, "summary.json"), summary)
    for name, table in (("curves.csv", rows), ("steps.csv", step_rows)):
        if table:
            _write_csv(os.path.join(out, name), table)
    return summary


def _write_csv(path: str, rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def run_sweep(preset: SweepPreset, out: str, *, progress: bool = True, plots: bool = True,
              log=print) -> dict:
    """Run (or resume) every (regime, G, seed) of ``preset`` into ``out``; return the summary."""
    import torch
    from tqdm.auto import tqdm

    from grpolab import __version__
    from grpolab.grpo.loop import load_policy, run
    from grpolab.models.tiny import resolve_device
    from grpolab.tasks.arithmetic import get_task

    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    device = resolve_device(preset.config.device)
    if preset.torch_threads and device.type == "cpu":
        torch.set_num_threads(preset.torch_threads)
    meta_path = os.path.join(out, "sweep.json")
    if os.path.isfile(meta_path):
        with open(meta_path) as f:
            old = json.load(f)
        if old.get("preset_name") != preset.name:
            raise ValueError(f"{out} holds a sweep of preset {old.get('preset_name')!r}, not "
                             f"{preset.name!r}; use another --out")
    write_json_atomic(meta_path, {
        "preset_name": preset.name, "preset": preset.to_dict(), "grpolab_version": __version__,
        "git_commit": git_commit(), "device": device_name(device),
        "torch_threads": torch.get_num_threads(), "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    })
    cache = os.path.join(out, "cache")
    start = time.time()
    # 1. the shared warm start (cached)
    first = preset.run_config(preset.regimes[0], preset.group_sizes[0], preset.seeds[0])
    model, tokenizer, _ = load_policy(first, cache, device, progress)
    task = get_task(preset.config.task, **preset.config.task_kwargs)
    log(f"warm start ready after {time.time() - start:.0f} s")

    # 2. census of pass rates and the gradient-noise measurement at the warm start
    censuses = {}
    noise_path = os.path.join(out, "gradient_noise.json")
    noise = {}
    if os.path.isfile(noise_path):
        with open(noise_path) as f:
            noise = json.load(f)
    for regime in preset.regimes:
        cfg = preset.run_config(regime, preset.group_sizes[0], preset.seeds[0])
        censuses[regime.name] = _census(out, preset, regime, model, tokenizer, task, cfg)
        if regime.name not in noise and preset.noise_batches >= 2:
            prompts = training_prompts(cfg, task)[0]
            noise[regime.name] = [
                gradient_noise(model, tokenizer, task, prompts,
                               preset.run_config(regime, G, 0), preset.noise_batches)
                for G in preset.group_sizes
                if preset.run_config(regime, G, 0).prompts_per_step <= len(prompts)]
            write_json_atomic(noise_path, noise)
    log(f"census and gradient noise ready after {time.time() - start:.0f} s")
    del model

    # 3. the runs, skipping finished ones
    jobs = [(r, G, s) for r in preset.regimes for G in preset.group_sizes for s in preset.seeds]
    bar = tqdm(jobs, desc=f"sweep {preset.name}", disable=not progress)
    for regime, G, seed in bar:
        run_dir = os.path.join(out, "runs", regime.name, f"G{G}-seed{seed}")
        cfg = preset.run_config(regime, G, seed)
        done = os.path.join(run_dir, "summary.json")
        if os.path.isfile(done):
            with open(done) as f:
                if json.load(f).get("config") != json.loads(json.dumps(cfg.to_dict())):
                    raise ValueError(f"{run_dir} holds a finished run with another config; "
                                     "use another --out (or delete that directory)")
            continue
        bar.set_postfix_str(f"{regime.name} G={G} seed={seed}")
        census = censuses[regime.name][:, :cfg.pass_rate_window_size]  # census_samples wide
        run(cfg, run_dir, cache_dir=cache, census=census, progress=progress,
            extra={"regime": regime.name, "mode": regime.mode})
    summary = aggregate(out, preset)
    summary["seconds_this_invocation"] = time.time() - start
    write_json_atomic(os.path.join(out, "summary.json"), summary)
    if plots:
        from grpolab.labs.sweep.report import plot_sweep

        plot_sweep(out)
    return summary
