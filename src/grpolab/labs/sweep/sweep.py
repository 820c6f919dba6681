"""The G sweep: GRPO from one warm start for every (regime, G, seed), then summaries and plots.

Layout of ``out/``::

    sweep.json                     preset, grpolab version, git commit, device
    cache/warmstart-<hash>/        the shared warm start (safetensors)
    cache/census-<hash>.npy        pass/fail of the warm start, n samples per training prompt,
                                   under its one key (grpolab.labs.runner.census_inputs)
    census-d<levels>.npy           the same census under a readable name (reports read it)
    gradient_noise.json            gradient noise vs G at the warm start
    runs/<regime>/G<G>-seed<s>/    log.jsonl + summary.json of one run
    summary.json                   every run's summary + aggregates + verdicts
    compute_axis.json              pass@k at every checkpoint, the crossing, best G, G*
                                   (grpolab.labs.sweep.compute_axis)
    curves.csv                     the evaluation curves of every run (small)
    steps.csv                      every 5th step of every run: reward, zero-variance groups...
    plots/*.png, plots/*.svg

Resumable: a run whose ``summary.json`` exists is skipped; every file is written to a
temporary name and renamed. Ctrl-C stops between steps; finished runs stay.

State that cannot lie: before anything is written, a rerun is checked against what ``out``
holds (the preset, the finished runs' configs and warm start, the thread count), and
refused if they differ. The census (``census-*.json`` beside each ``.npy``) and every
gradient-noise row (its ``made_from``) record the inputs they were made from; one whose
inputs differ from this sweep's is rebuilt, or refused when finished runs depend on it.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from grpolab import _files
from grpolab.grpo.config import training_prompts
from grpolab.grpo.measure import gradient_noise
from grpolab.grpo.records import (
    CorruptFileError,
    finished_run,
    provenance,
    read_json,
    read_npy,
    write_csv_atomic,
    write_json_atomic,
)
from grpolab.labs.common import CENSUS_SEED
from grpolab.labs.lab_results import census_stem
from grpolab.labs.sweep.presets import SweepPreset

__all__ = ["run_sweep", "plan_sweep", "aggregate", "regime_verdicts", "census_path",
           "PRIMARY_METRIC"]

# steps.csv keeps every STEP_STRIDE-th step of every run, these columns (small enough to commit)
STEP_STRIDE = 5
STEP_COLUMNS = ("step", "completions", "reward_mean", "zero_variance_observed",
                "zero_variance_predicted", "zero_variance_predicted_plugin", "grad_norm",
                "entropy", "kl", "seconds", "all_correct_fraction")


#: The tiny model's census has at least this many samples per prompt (and twice the
#: largest G), so adding a G up to 32 to a sweep reuses it and a sweep of some of a
#: preset's G gets the same census as the whole preset. Other models (costly to sample)
#: keep twice the largest G, at least 16; a wider need rebuilds the census.
CENSUS_MIN_SAMPLES = 64



def _census_stem(out: str, regime) -> str:
    """Regimes that train on the same prompts from the same starting policy share one census
    (named by :func:`grpolab.labs.lab_results.census_stem`, the rule the chapters read by)."""
    return os.path.join(out, census_stem(regime.train_difficulties, regime.overrides))


def census_path(out: str, regime) -> str:
    """Where a sweep in ``out`` keeps the census of ``regime`` (a :class:`Regime`)."""
    return _census_stem(out, regime) + ".npy"


def census_width(preset: SweepPreset, configs=None) -> int:
    """Samples per prompt of the sweep's census (at least every run's census_samples);
    ``configs``: the sweep's run configs, when already built."""
    floor = CENSUS_MIN_SAMPLES if preset.config.model == "tiny" else 16
    if configs is None:
        configs = [preset.run_config(r, G, preset.seeds[0])
                   for r in preset.regimes for G in preset.group_sizes]
    windows = [c.pass_rate_window_size for c in configs]
    return max(floor, 2 * max(preset.group_sizes), *windows)


def _noise_made_from(preset: SweepPreset, config) -> dict:
    """What one gradient-noise row depends on (recorded in the row as ``made_from``)."""
    import hashlib

    blob = json.dumps(config.to_dict(), sort_keys=True, default=str)
    return {"warmstart_key": config.warmstart_key, "batches": preset.noise_batches,
            "config_sha256": hashlib.sha256(blob.encode()).hexdigest()[:16]}


def update_noise(noise: dict, path: str, preset: SweepPreset, regime, model, tokenizer,
                 task) -> list[dict]:
    """Bring ``noise[regime.name]`` up to date (rows made from other inputs measured again)
    and rewrite ``path`` when anything changed; return the regime's rows. Shared by the
    sweep and design B's per-level measurement (grpolab.labs.design_b)."""
    rows, measured = _noise_rows(preset, regime, model, tokenizer, task,
                                 noise.get(regime.name, []))
    if measured or regime.name not in noise:
        noise[regime.name] = rows
        write_json_atomic(path, noise)
    return rows


def _read_noise(path: str) -> dict:
    if not os.path.isfile(path):
        return {}
    noise = read_json(path, "gradient-noise measurements")
    if not all(isinstance(v, list) and all(isinstance(r, dict) and "G" in r for r in v)
               for v in noise.values()):
        raise CorruptFileError(path, "is not gradient-noise measurements ({regime: [rows]})")
    return noise


def _noise_rows(preset: SweepPreset, regime, model, tokenizer, task,
                rows: list[dict]) -> tuple[list[dict], bool]:
    """The regime's gradient-noise rows, one per G that fits the training set: rows made
    from this sweep's inputs (their ``made_from``) are kept, the others and missing G
    measured. Returns the rows and whether any was measured."""
    first = preset.run_config(regime, preset.group_sizes[0], 0)
    prompts = training_prompts(first, task)[0]
    keep = {int(r["G"]): r for r in rows}
    out, measured = [], False
    for G in sorted(set(preset.group_sizes) | set(keep)):
        if G not in preset.group_sizes:  # measured by an earlier invocation with other G
            if keep[G].get("made_from", {}).get("warmstart_key") == first.warmstart_key:
                out.append(keep[G])
            continue
        cfg = preset.run_config(regime, G, 0)
        if cfg.prompts_per_step > len(prompts):
            continue
        made_from = _noise_made_from(preset, cfg)
        if G in keep and keep[G].get("made_from") == made_from:
            out.append(keep[G])
            continue
        row = gradient_noise(model, tokenizer, task, prompts, cfg, preset.noise_batches)
        # the baseline decides the units the noise model is fitted in (advise.leave_one_out_units)
        out.append({**row, "advantage_baseline": cfg.advantage_baseline, "made_from": made_from})
        measured = True
    return out, measured


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
                d = _run_dir(out, regime, G, seed)
                s = finished_run(d, preset.run_config(regime, G, seed), check_log=True)
                if s is None:
                    continue
                log_records = s.pop("_log")
                s.pop("config", None)
                s["regime"] = regime.name
                runs.append(s)
                plug_in = []
                for rec in log_records:
                    if "zero_variance_predicted_plugin" in rec:
                        plug_in.append(rec["zero_variance_predicted_plugin"])
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
                s["zero_variance_predicted_plugin"] = float(np.mean(plug_in)) if plug_in else None
    per_regime = {}
    for regime in preset.regimes:
        mine = [r for r in runs if r["regime"] == regime.name]
        if not mine:
            continue
        final_by_G: dict[int, list[float]] = {}
        for r in mine:
            final_by_G.setdefault(r["G"], []).append(r["final_accuracy"])
        gaps = [r["zero_variance_abs_gap"] for r in mine if r["zero_variance_abs_gap"] is not None]
        gaps_plugin = [abs(r["zero_variance_predicted_plugin"] - r["zero_variance_observed"])
                       for r in mine if r["zero_variance_predicted_plugin"] is not None]
        census_file = census_path(out, regime)
        theory_zero, theory_zero_plugin = {}, {}
        if os.path.isfile(census_file):
            census = read_npy(census_file, "a pass-rate census", ndim=2)
            k, n = census.sum(1), census.shape[1]
            for G in preset.group_sizes:
                if G <= n:  # mean over prompts of the unbiased estimate of p^G + (1-p)^G
                    theory_zero[int(G)] = float(np.mean(
                        theory.unbiased_zero_variance_estimate(k, np.full_like(k, n), G)))
                theory_zero_plugin[int(G)] = float(
                    theory.empirical_zero_variance_probability(k / n, G))
        per_regime[regime.name] = {
            "mode": regime.mode,
            "initial_accuracy": mine[0]["initial_accuracy"],
            "final_accuracy_mean_by_G": {G: float(np.mean(v)) for G, v in final_by_G.items()},
            "final_accuracy_std_by_G": {G: float(np.std(v, ddof=1)) if len(v) > 1 else None
                                        for G, v in final_by_G.items()},
            "accuracy_rose_above_warm_start": bool(
                np.mean([r["final_accuracy"] for r in mine]) > mine[0]["initial_accuracy"]),
            "zero_variance_mean_abs_gap": float(np.mean(gaps)) if gaps else None,
            "zero_variance_mean_abs_gap_plugin": float(np.mean(gaps_plugin)) if gaps_plugin
            else None,
            "zero_variance_at_warm_start_theory": theory_zero,
            "zero_variance_at_warm_start_theory_plugin": theory_zero_plugin,
            **regime_verdicts(mine, regime.name),
        }
    all_gaps = [r["zero_variance_abs_gap"] for r in runs if r["zero_variance_abs_gap"] is not None]
    summary = {
        "preset": preset.name, "runs": runs, "regimes": per_regime,
        "zero_variance_mean_abs_gap": float(np.mean(all_gaps)) if all_gaps else None,
        "runs_finished": len(runs),
        "runs_planned": len(preset.regimes) * len(preset.group_sizes) * len(preset.seeds),
    }
    noise_path = os.path.join(out, "gradient_noise.json")
    if os.path.isfile(noise_path):
        summary["gradient_noise"] = _read_noise(noise_path)
    write_json_atomic(os.path.join(out, "summary.json"), summary)
    for name, table in (("curves.csv", rows), ("steps.csv", step_rows)):
        if table:
            write_csv_atomic(os.path.join(out, name), table)
    return summary


def _run_dir(out: str, regime, G: int, seed: int) -> str:
    return os.path.join(out, "runs", regime.name, f"G{G}-seed{seed}")


def _check_measurements(out: str, preset: SweepPreset) -> None:
    """Read every census (and its record) and the gradient-noise file the sweep will use,
    so that a damaged one is refused before the warm start is loaded or trained (seconds
    to minutes), not after. Whether a sound file fits this sweep is decided where it is
    used (:func:`grpolab.grpo.records.cached_census`, :func:`_noise_rows`)."""
    for regime in preset.regimes:
        path = census_path(out, regime)
        if os.path.isfile(path):
            read_npy(path, "a pass-rate census", ndim=2)
            meta = _census_stem(out, regime) + ".json"
            if os.path.isfile(meta):
                read_json(meta, "a census record")
    path = os.path.join(out, "gradient_noise.json")
    for regime, rows in _read_noise(path).items():
        for i, row in enumerate(rows):
            try:
                _files.check(row, _NOISE_ROW, path)
            except CorruptFileError as exc:
                raise CorruptFileError(path, f"{regime}[{i}]: {exc.problem}") from None


_F = _files.Field
#: The fields of a gradient-noise row that the sweep and its plots read (others allowed).
_NOISE_ROW = _F("object", extra_keys=True, fields={
    "G": _F("int", 1), "prompts_per_step": _F("int", 1, required=False),
    "trace_variance": _F("real", 0, required=False, nullable=True),
    "noise_to_signal": _F("real", 0, required=False, nullable=True),
    "made_from": _F("object", required=False, extra_keys=True, fields={}),
})
#: What ``sweep.json`` must hold for a rerun to be compared with it (others allowed).
_SWEEP_RECORD = _F("object", extra_keys=True, fields={
    "preset_name": _F("str", max_items=200), "device": _F("str", required=False),
    "torch_threads": _F("int", 1, required=False, nullable=True),
})


def plan_sweep(out: str, preset: SweepPreset) -> list:
    """The sweep as a plan for :class:`grpolab.labs.runner.Runner`: one run per (regime, G,
    seed), each config built and validated once, every run's census the regime's wide one
    (:func:`census_width` samples, seed ``CENSUS_SEED``, alias ``census-d<levels>``)."""
    from grpolab.labs.runner import CensusSpec, PlannedRun

    configs = {(r.name, G, s): preset.run_config(r, G, s)
               for r in preset.regimes for G in preset.group_sizes for s in preset.seeds}
    width = census_width(preset, configs.values())
    return [PlannedRun(name=f"{regime.name} G={G} seed={seed}",
                       config=configs[(regime.name, G, seed)],
                       folder=_run_dir(out, regime, G, seed),
                       census=CensusSpec(width, CENSUS_SEED, alias=_census_stem(out, regime)),
                       extra={"regime": regime.name, "mode": regime.mode}, check_log=True)
            for regime in preset.regimes for G in preset.group_sizes for seed in preset.seeds]


def check_resume(out: str, preset: SweepPreset, runner, plan: list) -> dict:
    """Compare ``preset`` with the sweep already in ``out`` without writing anything; return
    the finished runs (name -> summary, :meth:`grpolab.labs.runner.Runner.check`). Refused:
    another preset, a finished run of another config or warm start
    (:func:`grpolab.grpo.records.finished_run`), or finished runs made with another thread
    count (which gives another warm start)."""
    import torch

    meta_path = os.path.join(out, "sweep.json")
    meta = (read_json(meta_path, "a sweep record", keys=("preset_name",), schema=_SWEEP_RECORD)
            if os.path.isfile(meta_path) else {})
    if meta and meta["preset_name"] != preset.name:
        raise ValueError(f"{out} holds a sweep of preset {meta['preset_name']!r}, not "
                         f"{preset.name!r}; use another --out")
    threads = meta.get("torch_threads")
    _check_measurements(out, preset)  # damaged files: refused now, before the warm start
    if (threads is not None and threads != torch.get_num_threads()
            and str(meta.get("device", "cpu")).startswith("cpu")
            and any(os.path.isfile(os.path.join(r.folder, "summary.json")) for r in plan)):
        raise ValueError(f"--threads {torch.get_num_threads()}: the finished runs in {out} "
                         f"were made with {threads} torch thread(s), which give another warm "
                         f"start; rerun with --threads {threads} or use another --out")
    return runner.check(plan)


def run_sweep(preset: SweepPreset, out, *, progress: bool = True, plots: bool = True,
              log=print, workers: int = 1, executor: str = "local",
              address: str | None = None) -> dict:
    """Run (or resume) every (regime, G, seed) of ``preset`` into ``out``; return the summary.

    ``out`` is a folder or a :class:`grpolab.labs.runner.Runner` already holding its lock;
    the lock is taken before any other work, so a second sweep on it is refused at once,
    naming the first one's pid. ``workers`` runs train side by side in processes (or on a
    Ray cluster, ``executor="ray"`` at ``address``), with results bit for bit those of one
    worker."""
    from grpolab.labs.runner import Runner

    with Runner.of(out, progress=progress, log=log) as runner:
        check_memory(preset)
        return _run_sweep(preset, runner, plots=plots, workers=workers, executor=executor,
                          address=address)


def check_memory(preset: SweepPreset) -> None:
    """Refuse, before any work, a gradient-noise measurement this machine cannot hold: it
    keeps one float64 gradient per batch (``noise_batches`` × the model's parameters).
    Every run's own buffers are checked by :meth:`GRPOConfig.validate`."""
    from grpolab.models import memory


    config = preset.config
    shape = memory.model_shape(config.model, config.warmstart)
    params = (memory.tiny_parameters(shape.layers, shape.hidden) if config.model == "tiny"
              else 12 * shape.layers * shape.hidden ** 2 + shape.vocab * shape.hidden)
    memory.check_memory(8 * params * preset.noise_batches, f"--noise-batches "
                        f"{preset.noise_batches} (one float64 gradient of "
                        f"{memory.count(params)} parameters per batch)",
                        f"at most {memory.largest_fitting(8 * params)} batches fit")


def _run_sweep(preset: SweepPreset, runner, *, plots: bool, workers: int, executor: str,
               address: str | None) -> dict:
    import torch

    from grpolab.grpo.setup import load_policy
    from grpolab.models.device import resolve_device
    from grpolab.tasks.registry import get_task

    out, log = runner.out, runner.log
    preset.check_prompts()
    device = resolve_device(preset.config.device)
    if preset.torch_threads and device.type == "cpu":
        torch.set_num_threads(preset.torch_threads)
    # 0. the plan, compared with what ``out`` holds before writing anything
    plan = plan_sweep(out, preset)
    finished = check_resume(out, preset, runner, plan)
    write_json_atomic(os.path.join(out, "sweep.json"), {
        "preset_name": preset.name, "preset": preset.to_dict(), **provenance(device),
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    start = time.time()

    # 1. the gradient-noise measurement at each regime's starting policy (the warm start,
    #    trained once and cached), rows made from other inputs measured again
    if preset.noise_batches >= 2:
        task = get_task(preset.config.task, **preset.config.task_kwargs)
        noise_path = os.path.join(out, "gradient_noise.json")
        noise = _read_noise(noise_path)
        policies: dict = {}  # each regime's starting policy (usually one warm start for all)
        for regime in preset.regimes:
            cfg = preset.run_config(regime, preset.group_sizes[0], preset.seeds[0])
            which = (cfg.model, cfg.warmstart_key)
            if which not in policies:
                policies[which] = load_policy(cfg, runner.cache_dir, device,
                                              runner.progress)[:2]
                log(f"starting policy of regime {regime.name} ready after "
                    f"{time.time() - start:.0f} s")
            model, tokenizer = policies[which]
            update_noise(noise, noise_path, preset, regime, model, tokenizer, task)
        log(f"gradient noise ready after {time.time() - start:.0f} s")
        del policies

    # 2. the censuses (one key each) and the runs not finished, through the one runner
    runner.run(plan, finished, workers=workers, executor=executor, address=address)
    summary = aggregate(out, preset)
    summary["seconds_this_invocation"] = time.time() - start
    write_json_atomic(os.path.join(out, "summary.json"), summary)
    from grpolab.labs.sweep.compute_axis import compute_axis

    compute_axis(out, preset)
    if plots:
        from grpolab.labs.sweep.report import plot_sweep

        plot_sweep(out)
    return summary
