"""The remedy labs: the 8 items (arms × seeds of lab configs), their probes, the runner.

One job: say what each lab of book/labs/03-remedies.md trains (:data:`ITEMS`), as a plan
(:func:`plan_item`) that the one runner (:class:`grpolab.labs.runner.Runner`) executes,
resumably. Identical configs are trained once
and shared through a pool keyed by :func:`config_key` (``DIR/_pool``, or one ``--pool``
folder that several items share).

Results layout of ``grpolab remedies --item NAME --out DIR``::

    DIR/item.json                     the item: arms, seeds, budget, version, commit, device
    DIR/runs/<arm>/seed<s>/           log.jsonl + summary.json (present = finished; skipped)
    DIR/_pool/<config key>/           every finished run by config (shared by arms and items
                                      run into the same DIR; copied, not retrained)
    DIR/probe.json                    sampling-only measurements (items that have them)
    DIR/results.json                  per-arm means and seed spreads, the verdict inputs
    DIR/*.png, DIR/*.svg              the item's plot

``results.json`` and the plots are written by :mod:`grpolab.labs.remedies.report`.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, is_dataclass, replace

import numpy as np
import torch

from grpolab import theory
from grpolab.advantages import group_advantages
from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.rollout import sample
from grpolab.labs.common import (
    COMPLETIONS_PER_STEP,
    DR_GRPO,
    HARD_LEVELS,
    HARD_OVERRIDES,
    HARD_STEPS,
    TINY_BASE,
)
from grpolab.labs.remedies import strategies
from grpolab.labs.remedies.remedy import Remedy, lab_config
from grpolab.labs.remedies.report import aggregate_item
from grpolab.labs.remedies.sources import remedy_task

__all__ = ["LabItem", "ITEMS", "config_key", "plan_item", "run_item", "run_probe",
           "task_kwargs_of"]


# ----------------------------------------------------------------------------- items
@dataclass
class LabItem:
    """One remedy lab: named arms × seeds, plus an optional sampling probe. An arm is a flat
    dict of overrides of GRPOConfig fields and Remedy fields (:func:`.lab_config` splits it)."""

    name: str
    title: str
    arms: dict[str, dict]
    base: dict = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    probe: Callable | None = None  # probe(model, tokenizer, task, prompts, config) -> dict

    def config(self, arm: str, seed: int, **overrides) -> tuple[GRPOConfig, Remedy]:
        return lab_config(**{**self.base, **self.arms[arm], **overrides, "seed": seed})


def _probe_temperature(model, tokenizer, task, prompts, config: GRPOConfig, *, seed: int = 0,
                       n_prompts: int = 32, n: int = 32) -> dict:
    """Sampling only, from the warm start, for every (temperature, G): distinct completions
    per group and the zero-variance fraction, next to its prediction.

    For each temperature, ``n`` completions of the same ``n_prompts`` training prompts are
    drawn twice. The first draw estimates each prompt's pass rate and gives the prediction,
    the unbiased estimate of p^G + (1 − p)^G, C(k, G)/C(n, G) + C(n − k, G)/C(n, G)
    (:func:`grpolab.theory.unbiased_zero_variance_estimate`). The second, independent draw
    is cut into n/G disjoint groups of G per prompt, which gives the observed fractions.
    """
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    sub = [prompts[i] for i in rng.choice(len(prompts), size=min(n_prompts, len(prompts)),
                                          replace=False)]
    rows = []
    for T in (0.2, 0.7, 1.0, 1.3):
        draws = []
        for _ in range(2):
            r = sample(model, tokenizer, [p.text for p in sub], n, temperature=T,
                       max_new_tokens=config.max_completion_length, generator=gen)
            rw = np.array([task.reward(sub[j // n], t) for j, t in enumerate(r.texts)])
            draws.append((rw.reshape(len(sub), n), np.array(r.texts).reshape(len(sub), n)))
        k = draws[0][0].sum(1).astype(int)
        rw2, texts2 = draws[1]
        for G in (2, 4, 8, 16, 32):
            if n % G:
                continue
            groups = rw2.reshape(-1, G)
            tgroups = texts2.reshape(-1, G)
            predicted = np.asarray(theory.unbiased_zero_variance_estimate(
                k, np.full_like(k, n), G))
            rows.append({
                "temperature": T, "G": G, "prompts": len(sub), "groups": int(groups.shape[0]),
                "distinct_mean": float(np.mean([len({t.strip() for t in g}) for g in tgroups])),
                "zero_variance_observed": float((~strategies.informative_groups(groups)).mean()),
                "zero_variance_predicted": float(predicted.mean()),
                "reward_mean": float(rw2.mean())})
    return {"rows": rows}


def _probe_card_rule(model, tokenizer, task, prompts, config: GRPOConfig, *, seed: int = 0,
                     steps: int = 30, window: int = 10) -> dict:
    """The card's "double G if reward variance > 0.8, halve if < 0.2", driven by the warm
    start's real rewards (no training): binary, partial-credit, partial-credit × 4 (an
    unbounded-scale reward model stand-in) and the variance of group-normalised advantages."""
    from grpolab.tasks.arithmetic import PartialCreditArithmeticTask

    partial = PartialCreditArithmeticTask(**task_kwargs_of(task))
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    kinds = {
        "binary": lambda p, t: task.reward(p, t),
        "partial": lambda p, t: partial.reward(p, t),
        "partial_x4": lambda p, t: 4.0 * partial.reward(p, t),
        "normalized_advantage": None,  # variance of A = (r − mean)/std from binary rewards
    }
    out = {}
    for kind, fn in kinds.items():
        G, hist, traj = 8, [], []
        for _ in range(steps):
            B = max(1, COMPLETIONS_PER_STEP // G)
            sub = [prompts[i] for i in rng.choice(len(prompts), size=B, replace=False)]
            r = sample(model, tokenizer, [p.text for p in sub], G,
                       max_new_tokens=config.max_completion_length, generator=gen)
            if fn is None:
                rw = np.array([task.reward(sub[j // G], t) for j, t in enumerate(r.texts)])
                vals = np.asarray(group_advantages(rw, G))
            else:
                vals = np.array([fn(sub[j // G], t) for j, t in enumerate(r.texts)])
            hist.append(float(vals.var()))
            v = float(np.mean(hist[-window:]))
            new_G = strategies.card_variance_rule(G, v)
            traj.append({"G": G, "variance": v, "completions": B * G})
            G = new_G
        out[kind] = {"trajectory": traj,
                     "doubled": sum(b["G"] > a["G"] for a, b in zip(traj, traj[1:], strict=False)),
                     "halved": sum(b["G"] < a["G"] for a, b in zip(traj, traj[1:], strict=False)),
                     "final_G": traj[-1]["G"], "max_variance": max(t["variance"] for t in traj)}
    return out


def task_kwargs_of(task) -> dict:
    """The constructor arguments of an ArithmeticTask (to rebuild it with another reward)."""
    base = getattr(task, "base", task)
    return dict(digits=base.digits, operands=base.operands, ops=base.ops,
                n_train=len(base.train_prompts), n_eval=len(base.eval_prompts), seed=base.seed)


def _fixed_budget(G: int) -> dict:
    """An arm at G with prompts per step = COMPLETIONS_PER_STEP / G (a fixed step budget)."""
    return {"num_generations": G, "prompts_per_step": COMPLETIONS_PER_STEP // G}


#: The regime that is hard by its census: 2-digit sums from the weaker warm start, at G = 4.
#: Its census puts the informative share of groups, 1 - p^G - (1-p)^G averaged over prompts,
#: near 0.3 at G = 4 (near 0.5 at G = 8): the range, q of 0.2 to 0.4, where dynamic sampling
#: has most of a batch to refill (labs/03, section 1). Its pass@1 moves only after a few
#: hundred steps, so its budget is the compute axis's (HARD_STEPS steps of 64 completions, at
#: the sweeps' learning rate), not the mixed arms' 80 steps.
_HARD = {"train_difficulties": list(HARD_LEVELS), **HARD_OVERRIDES, **_fixed_budget(4),
         "completion_budget": HARD_STEPS * COMPLETIONS_PER_STEP,
         "learning_rate": TINY_BASE.learning_rate, "eval_every": HARD_STEPS * 8}


#: The adaptive-allocation lab (issue 34; declared in labs/results/allocation/declared.json
#: before any run, choices the declaration left open in labs/results/allocation/deviations.md):
#: design B's coverage-limited pool, 250 3-digit and 250 4-digit sums from another split of
#: the task (seed 1) than the warm start's supervised prompts (seed 0), 100 held-out prompts
#: of each level × 64 samples, 32 prompts × mean G 8 = 256 completions a step for
#: ALLOCATION_STEPS steps, leave-one-out Dr. GRPO at the sweeps' learning rate. The arms
#: differ only in ``allocation_rule``.
ALLOCATION_STEPS = 256
ALLOCATION_PROMPTS = 32
ALLOCATION_MEAN_G = 8
ALLOCATION_BASE = {
    "task_kwargs": {"digits": [3, 4], "n_train": 500, "n_eval": 200, "seed": 1},
    "train_difficulties": None, "max_train_prompts": None, "max_eval_prompts": 200,
    "num_generations": ALLOCATION_MEAN_G, "prompts_per_step": ALLOCATION_PROMPTS,
    "completion_budget": ALLOCATION_STEPS * ALLOCATION_PROMPTS * ALLOCATION_MEAN_G,
    "eval_every": ALLOCATION_STEPS * ALLOCATION_PROMPTS * ALLOCATION_MEAN_G // 4,
    "eval_samples": 64, "census_samples": 64, "learning_rate": TINY_BASE.learning_rate,
    "advantage_baseline": "leave_one_out", **DR_GRPO,
    "source": "allocation", "G_min": 2, "G_max": 64}
#: The declared arms: the rule names of grpolab.allocation, and the uniform split.
ALLOCATION_ARMS = ("uniform", "informative", "variance-dr-grpo", "first-success")


ITEMS: dict[str, LabItem] = {
    "dynamic-sampling": LabItem(
        "dynamic-sampling", "Dynamic sampling (DAPO) at a fixed completion budget",
        arms={"baseline": {}, "dynamic": {"source": "dynamic_sampling"},
              "hard-baseline": dict(_HARD),
              "hard-dynamic": {**_HARD, "source": "dynamic_sampling"},
              "hard-dynamic-carry": {**_HARD, "source": "dynamic_sampling_carry"}}),
    "difficulty": LabItem(
        "difficulty", "Difficulty band filter and curriculum at a fixed budget",
        arms={"uniform": {}, "band": {"source": "band"}, "curriculum": {"source": "curriculum"}}),
    "adaptive-g": LabItem(
        "adaptive-g", "Adaptive G: the card's per-prompt rule, a signal target, a budget split",
        arms={"fixed-G8": {}, "card-rule": {"source": "adaptive_g_card"},
              "signal-target": {"source": "adaptive_g_signal"},
              "allocate": {"source": "allocate"}},
        probe=_probe_card_rule),
    "temperature": LabItem(
        "temperature", "Temperature × G",
        arms={f"T{T}-G{G}": {"temperature": T, **_fixed_budget(G)}
              for G in (8, 32) for T in (0.2, 0.7, 1.0, 1.3)},
        probe=_probe_temperature),
    "beta": LabItem(
        "beta", "β × G",
        arms={f"beta{b}-G{G}": {"beta": b, **_fixed_budget(G)}
              for G in (4, 16) for b in (0.0, 0.01, 0.05, 0.1)}),
    "rewards": LabItem(
        "rewards", "Reward granularity, normalization conventions, noisy rewards",
        arms={"binary-std": {}, "binary-mean-only": {"scale_rewards": "none"},
              "binary-loo": {"advantage_baseline": "leave_one_out"},
              "binary-ddof0": {"advantage_ddof": 0},
              "partial-std": {"reward": "partial"},
              "narrow-std": {"reward": "narrow"},
              "narrow-mean-only": {"reward": "narrow", "scale_rewards": "none"},
              **{f"noisy-G{G}": {"reward": "noisy", "noise_q": 0.2, **_fixed_budget(G)}
                 for G in (4, 8, 32)}},
        seeds=[0, 1, 2, 3, 4]),
    "length-bias": LabItem(
        "length-bias", "Length-biased reward: G and loss aggregation",
        arms={f"{lt}-G{G}": {"reward": "length_long", "loss_type": lt, **_fixed_budget(G)}
              for lt in ("grpo", "dapo", "dr_grpo") for G in (4, 16)}),
    "prompts-x-g": LabItem(
        "prompts-x-g", f"Prompts × G at a fixed budget of {COMPLETIONS_PER_STEP} completions "
        "per step",
        arms={f"B{COMPLETIONS_PER_STEP // G}-G{G}": _fixed_budget(G) for G in (2, 4, 8, 16, 32)},
        seeds=[0, 1, 2, 3, 4]),
    "allocation": LabItem(
        "allocation", "Adaptive allocation: uniform G = 8 against three per-prompt splits at "
        f"{ALLOCATION_PROMPTS * ALLOCATION_MEAN_G} completions per step",
        arms={a: {"allocation_rule": a} for a in ALLOCATION_ARMS},
        base=dict(ALLOCATION_BASE), seeds=[0, 1, 2, 3]),
}


def config_key(config: GRPOConfig, remedy: Remedy) -> str:
    """A hash of everything that determines a run: identical configs in different items
    (every item's plain G = 8 arm, say) are trained once and shared through the pool. The
    warm start's own key is part of it (its code, torch version and thread count), so a
    run from another warm start is never taken from the pool."""
    import hashlib

    rem = asdict(remedy)
    if rem["allocation_rule"] == "uniform":  # added later: keys made before it stay valid
        del rem["allocation_rule"]
    blob = json.dumps([config.to_dict(), rem, config.warmstart_key], sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def plan_item(name: str, out: str, *, seeds: list[int] | None = None,
              arms: list[str] | None = None, overrides: dict | None = None) -> list:
    """Item ``name`` as a plan for :class:`grpolab.labs.runner.Runner`: one run per arm ×
    seed in ``out/runs/<arm>/seed<s>``, each config built and validated once, its census
    measured exactly ``census_samples`` wide, its batch source and reward the remedy's, its
    pool key :func:`config_key`. Refused (a ValueError, before anything is written): an
    unknown item or arm, a repeated seed or arm, an override of a field the arms vary."""
    from functools import partial

    from grpolab.labs.remedies.sources import make_source
    from grpolab.labs.runner import CensusSpec, PlannedRun

    if name not in ITEMS:
        raise ValueError(f"--item must be one of {', '.join(ITEMS)}; got {name!r}")
    item = ITEMS[name]
    seeds = list(item.seeds if seeds is None else seeds)
    arms = list(item.arms if arms is None else arms)
    for a in arms:
        if a not in item.arms:
            raise ValueError(f"--arms: {a!r} is not an arm of {name} ({', '.join(item.arms)})")
    for flag, values in (("--seeds", seeds), ("--arms", arms)):
        if not values or len(set(values)) != len(values):
            raise ValueError(f"{flag} must name at least one value, each once; got {values}")
    over = dict(overrides or {})
    varied = sorted({k for arm in item.arms.values() for k in arm} & set(over))
    if varied:
        raise ValueError(f"--{varied[0].replace('_', '-')} is what the arms of {name} vary; "
                         "it cannot be set for all of them")
    configs = {(a, s): item.config(a, s, **over) for a in arms for s in seeds}  # validates all
    plan = []
    for (a, s), (cfg, rem) in configs.items():
        try:
            cfg.validate_prompts()
        except ValueError as exc:
            raise ValueError(f"{exc} (arm {a})") from None
        if cfg.completion_budget is None:
            raise ValueError("a remedy run needs --completion-budget (arms compare at a fixed "
                             "budget)")
        key = config_key(cfg, rem)
        plan.append(PlannedRun(
            name=f"{name} {a} seed={s}", config=cfg,
            folder=os.path.join(os.fspath(out), "runs", a, f"seed{s}"),
            census=CensusSpec(cfg.pass_rate_window_size,
                              cfg.seed if cfg.census_seed is None else cfg.census_seed,
                              keyed_by_width=True),
            batches=partial(make_source, rem), task=partial(remedy_task, cfg, rem),
            extra={"item": name, "arm": a, "config_key": key}, pool_key=key))
    return plan


def run_item(name: str, out, *, seeds: list[int] | None = None,
             arms: list[str] | None = None, overrides: dict | None = None,
             cache_dir: str | None = None, pool_dir: str | None = None,
             progress: bool = True, log=print, workers: int = 1, executor: str = "local",
             address: str | None = None, plots: bool = False,
             publish: str | None = None) -> dict:
    """Run (or resume) every arm × seed of item ``name`` into ``out``; aggregate.

    ``out`` is a folder or a :class:`grpolab.labs.runner.Runner` already holding its lock;
    the lock is taken before any other work (building configs and prompts takes seconds),
    so a second runner on it is refused at once, naming the first one's pid.

    ``overrides``: GRPOConfig or Remedy fields applied to every arm (a field an arm of this
    item varies is refused: it would erase the comparison). ``pool_dir`` (default
    ``out/_pool``) holds every finished run under its :func:`config_key`; a run whose config
    is already there is copied, not retrained. Every config is validated, and the finished
    runs in ``out`` checked against it, before anything is written. ``workers`` runs train
    side by side (bit for bit the serial results); ``plots`` and ``publish`` (a folder) also
    draw the item's plot and copy its results, under the same lock.
    """
    from grpolab.grpo.records import provenance, write_json_atomic
    from grpolab.labs.runner import Runner

    with Runner.of(out, cache_dir=cache_dir, pool_dir=pool_dir, progress=progress,
                   log=log) as runner:
        out = runner.out
        if runner.pool_dir is None:
            runner.pool_dir = os.path.join(out, "_pool")
        plan = plan_item(name, out, seeds=seeds, arms=arms, overrides=overrides)
        finished = runner.check(plan)
        item = ITEMS[name]
        arms = list(item.arms if arms is None else arms)
        write_json_atomic(os.path.join(out, "item.json"), {
            "item": name, "title": item.title, "arms": {a: item.arms[a] for a in arms},
            "base": {k: asdict(v) if is_dataclass(v) else v for k, v in item.base.items()},
            "seeds": list(item.seeds if seeds is None else seeds),
            "overrides": dict(overrides or {}), **provenance(torch.device("cpu"))})
        if item.probe is not None and not os.path.isfile(os.path.join(out, "probe.json")):
            run_probe(name, out, cache_dir=runner.cache_dir, log=log)
        runner.run(plan, finished, workers=workers, executor=executor, address=address)
        results = aggregate_item(out)
        if plots:
            from grpolab.labs.remedies.report import plot_item

            for path in plot_item(out):
                log(f"wrote {path}")
        if publish:
            from grpolab.labs.remedies.report import publish as publish_item

            for path in publish_item(out, publish):
                log(f"published {path}")
        return results


def run_probe(name: str, out: str | os.PathLike, *, cache_dir: str | None = None,
              log=print) -> dict:
    """Run an item's sampling-only probe from the warm start into ``out/probe.json``."""
    from grpolab.grpo.config import training_prompts
    from grpolab.grpo.records import write_json_atomic
    from grpolab.grpo.setup import load_policy

    item = ITEMS[name]
    if item.probe is None:
        raise ValueError(f"item {name!r} has no probe")
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    cfg, rem = item.config(next(iter(item.arms)), item.seeds[0])
    cache_dir = cache_dir or os.path.join(out, "cache")
    model, tok, _ = load_policy(cfg, cache_dir, torch.device(cfg.device), False)
    task = remedy_task(cfg, replace(rem, reward="task"))
    prompts, _ = training_prompts(cfg, task)
    t0 = time.time()
    probe = item.probe(model, tok, task, prompts, cfg)
    probe["seconds"] = time.time() - t0
    write_json_atomic(os.path.join(out, "probe.json"), probe)
    log(f"{name}: probe done in {probe['seconds']:.0f} s")
    return probe
