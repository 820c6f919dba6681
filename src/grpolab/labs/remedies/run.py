"""The remedy labs' piece of the one loop: a batch source per remedy, and reward wrappers.

One job: say what a remedy changes around :func:`grpolab.grpo.loop.run` (the one GRPO
loop) and nothing else. A remedy run is

    run(config, out, batches=RemedyBatches(remedy), task=make_task(config, remedy))

with a fixed budget of completions (``config.completion_budget``). What each remedy changes
is exactly the loop's seam, :meth:`RemedyBatches.next_batch`: which prompts, which group
sizes, which groups are kept (uniform | band | curriculum | adaptive G | allocation |
dynamic sampling); the reward wrappers change the reward (length-biased, partial, noisy).

GRPO hyperparameters live in :class:`grpolab.grpo.config.GRPOConfig`; :class:`Remedy`
holds only the remedy's own knobs. :data:`LAB_DEFAULTS` are the GRPOConfig overrides every
remedy lab shares, and :func:`lab_config` splits one flat override dict between the two.
The labs built on this are in :mod:`grpolab.labs.remedies.items`; their results, plots and
book helpers in :mod:`grpolab.labs.remedies.report`.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from grpolab import theory
from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.loop import Batch, BatchSource, Run, load_policy, run, training_prompts
from grpolab.grpo.measure import pass_rate_census
from grpolab.grpo.rollout import merge_rollouts
from grpolab.grpo.warmstart import WarmStartConfig
from grpolab.labs.remedies import strategies as remedies
from grpolab.labs.sweep.presets import TASK_KWARGS
from grpolab.tasks.arithmetic import Prompt, Task, get_task

__all__ = ["Remedy", "REMEDIES", "REWARDS", "LAB_DEFAULTS", "lab_config", "RemedyBatches",
           "LengthBiasedReward", "PartialCreditReward", "make_task", "run_lab", "census_for"]

REMEDIES = ("none", "dynamic_sampling", "band", "curriculum", "adaptive_g_card",
            "adaptive_g_signal", "allocate")
REWARDS = ("task", "partial", "noisy", "length_long", "length_short")

#: GRPOConfig overrides shared by every remedy lab (a lab item's arms override these).
LAB_DEFAULTS: dict = dict(
    task_kwargs=dict(TASK_KWARGS), train_difficulties=[1, 2, 3], max_train_prompts=500,
    max_eval_prompts=200,
    warmstart=WarmStartConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS), steps=1500),
    num_generations=8, prompts_per_step=8, completion_budget=5120, learning_rate=3e-5,
    eval_every=1280, eval_samples=2, census_samples=32, census_seed=12345, device="cpu")


@dataclass
class Remedy:
    """A remedy lab's own knobs: the batch source and the reward (never GRPO fields)."""

    remedy: str = "none"
    """how batches are chosen: none, dynamic_sampling, band, curriculum, adaptive_g_card,
    adaptive_g_signal, allocate"""
    reward: str = "task"
    """task, partial, noisy, length_long or length_short"""
    noise_q: float = 0.0
    """flip probability of the noisy reward"""
    length_weight: float = 0.5
    """weight of the length bonus of length_long/length_short"""
    max_batches: int = 4
    """dynamic sampling cap (verl's max_num_gen_batches)"""
    band_low: float = 0.2
    """band filter: lowest estimated pass rate kept"""
    band_high: float = 0.8
    """band filter: highest estimated pass rate kept"""
    curriculum_advance_at: float = 0.6
    """curriculum: open the next level when the frontier's pass rate reaches this"""
    curriculum_min_steps: int = 10
    """curriculum: steps at least on each level"""
    adaptive_target: float = 0.5
    """adaptive_g_signal: wanted probability that a group is informative"""
    G_min: int = 2
    """adaptive G and allocation: smallest group"""
    G_max: int = 32
    """adaptive G and allocation: largest group"""
    pass_rate_decay: float = 0.9
    """decay of the per-prompt pass-rate estimates the selection remedies use"""

    def validate(self) -> Remedy:
        """Raise a ValueError naming the first bad field."""
        for name, allowed in (("remedy", REMEDIES), ("reward", REWARDS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("max_batches", "curriculum_min_steps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not (isinstance(self.length_weight, int | float) and self.length_weight >= 0):
            raise ValueError(f"length_weight must be a non-negative number, "
                             f"got {self.length_weight!r}")
        for name in ("noise_q", "band_low", "band_high", "curriculum_advance_at",
                     "adaptive_target", "pass_rate_decay"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and 0 <= v <= 1):
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")
        if self.band_low > self.band_high:
            raise ValueError(f"band_low must be <= band_high, got {self.band_low} > "
                             f"{self.band_high}")
        if not 2 <= self.G_min <= self.G_max:
            raise ValueError(f"need 2 <= G_min <= G_max, got G_min={self.G_min}, "
                             f"G_max={self.G_max}")
        return self


def lab_config(**overrides) -> tuple[GRPOConfig, Remedy]:
    """:data:`LAB_DEFAULTS` plus ``overrides``, split into (GRPOConfig, Remedy), validated."""
    remedy_fields = {f.name for f in dataclasses.fields(Remedy)}
    grpo = {**LAB_DEFAULTS, **{k: v for k, v in overrides.items() if k not in remedy_fields}}
    remedy = Remedy(**{k: v for k, v in overrides.items() if k in remedy_fields})
    return GRPOConfig(**grpo).validate(), remedy.validate()


# ----------------------------------------------------------------------------- rewards
class LengthBiasedReward(Task):
    """A biased reward model: the task's reward plus ``weight`` × a length score.

    ``prefer="long"`` adds weight · len/max_len, ``"short"`` adds weight · (1 − len/max_len),
    where len counts the completion's characters (EOS excluded). Accuracy (``correct``)
    stays the task's exact match, so the bias shows up as length drift at unchanged or
    falling accuracy. Used to test the card's "larger G amplifies length bias".
    """

    def __init__(self, base: Task, weight: float = 0.5, prefer: str = "long", max_len: int = 6):
        if prefer not in ("long", "short"):
            raise ValueError(f"prefer must be 'long' or 'short', got {prefer!r}")
        if not weight >= 0:
            raise ValueError(f"weight must be >= 0, got {weight!r}")
        self.base, self.weight, self.prefer, self.max_len = base, float(weight), prefer, max_len
        self.name = f"{base.name}_length_{prefer}"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        frac = min(len(completion.strip()), self.max_len) / self.max_len
        bonus = frac if self.prefer == "long" else 1.0 - frac
        return self.base.reward(prompt, completion) + self.weight * bonus

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


class PartialCreditReward(Task):
    """The binary task's prompts with the partial-credit reward of
    :class:`.PartialCreditArithmeticTask` (``get_task("arithmetic_partial")``
    draws a different prompt set, which would confound a reward comparison)."""

    def __init__(self, base: Task):
        self.base, self.name = base, f"{base.name}_partial"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        from grpolab.tasks.arithmetic import PartialCreditArithmeticTask

        return PartialCreditArithmeticTask.reward(self, prompt, completion)

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


def make_task(config: GRPOConfig, remedy: Remedy) -> Task:
    """The task of a lab run, with the reward the remedy asks for. Every reward variant
    keeps the binary task's prompts, so arms differ only in the reward."""
    kw = dict(config.task_kwargs)
    if remedy.reward == "partial":
        return PartialCreditReward(get_task("arithmetic", **kw))
    if remedy.reward == "noisy":
        return get_task("arithmetic_noisy", q=remedy.noise_q, noise_seed=config.seed, **kw)
    base = get_task("arithmetic", **kw)
    if remedy.reward in ("length_long", "length_short"):
        return LengthBiasedReward(base, remedy.length_weight, remedy.reward.split("_")[1],
                                  config.max_completion_length)
    return base


# ----------------------------------------------------------------------------- batches
class RemedyBatches(BatchSource):
    """The loop's seam for the remedy labs: which prompts, which group sizes, which groups
    are kept. Every generated group updates the per-prompt pass-rate estimates p̂ (a decayed
    average, seeded by the census) that the selection remedies read."""

    def __init__(self, remedy: Remedy):
        self.remedy = remedy
        self.name = remedy.remedy
        self.cap_hits = 0
        self.curriculum = None

    def start(self, run: Run) -> None:
        self.estimates = remedies.PassRateEstimates.from_census(
            run.census, decay=self.remedy.pass_rate_decay)
        self.difficulty = np.array([p.difficulty for p in run.train_prompts])
        if self.remedy.remedy == "curriculum":
            levels = sorted(set(self.difficulty.tolist()))
            self.curriculum = remedies.Curriculum(levels, self.remedy.curriculum_advance_at,
                                                  self.remedy.curriculum_min_steps)

    def _observe(self, idx: list[int], sizes: list[int], rewards: np.ndarray) -> None:
        off = 0
        for i, g in zip(idx, sizes, strict=True):
            self.estimates.update([i], [rewards[off:off + g] > 0.5])
            off += g

    def _sample(self, run: Run, idx: list[int], sizes: list[int], info: dict) -> Batch:
        roll, rw = run.rollout(idx, sizes)
        idx, sizes = Run.order_by_size(idx, sizes)
        self._observe(idx, sizes, rw)
        return Batch(roll, rw, idx, sizes, len(rw), info)

    def next_batch(self, run: Run) -> Batch:
        r, cfg = self.remedy, run.config
        G, B = cfg.num_generations, cfg.prompts_per_step
        info: dict = {}
        if r.remedy == "dynamic_sampling":
            info["q_predicted"] = float(np.mean(theory.informative_probability(
                np.clip(self.estimates.p, 0.0, 1.0), G)))

            def draw():
                idx = run.next_prompts(B)
                roll, rw = run.rollout(idx, [G] * B)
                return rw.reshape(B, G), (roll, rw, idx)

            res = remedies.dynamic_sampling(draw, B, r.max_batches)
            parts, rw, kept = [], [], []
            for b, gi in res.kept:
                roll, rwb, idxb = res.payloads[b]
                parts.append((roll, list(range(gi * G, (gi + 1) * G))))
                rw.append(rwb[gi * G:(gi + 1) * G])
                kept.append(idxb[gi])
            for _roll, rw_, idx_ in res.payloads:  # every generated group updates p̂
                self._observe(idx_, [G] * len(idx_), rw_)
            self.cap_hits += int(res.hit_cap)
            info.update(generation_batches=res.batches, hit_cap=res.hit_cap,
                        groups_generated=res.groups_generated,
                        informative_generated=res.informative_generated)
            if not parts:
                return Batch(None, np.zeros(0), [], [], res.completions, info)
            return Batch(merge_rollouts(parts, run.tokenizer.pad_token_id), np.concatenate(rw),
                         kept, [G] * len(kept), res.completions, info)
        if r.remedy == "band":
            idx, inside = remedies.select_in_band(run.rng, self.estimates.p, B, r.band_low,
                                                  r.band_high)
            info["band_fraction"] = inside / B
            return self._sample(run, list(idx), [G] * B, info)
        if r.remedy == "curriculum":
            pool = np.flatnonzero(np.isin(self.difficulty, self.curriculum.open_levels))
            idx = run.next_prompts(B, pool)
            info["open_levels"] = len(self.curriculum.open_levels)
            return self._sample(run, idx, [G] * len(idx), info)
        if r.remedy == "allocate":
            budget = B * G
            cand = np.array(run.next_prompts(4 * B))
            alloc = remedies.allocate_budget(self.estimates.p[cand], budget, G_min=r.G_min,
                                             G_max=r.G_max)
            keep = alloc > 0
            idx, sizes = cand[keep].tolist(), alloc[keep].tolist()
            if not idx:  # every estimate is 0 or 1: nothing to gain, sample uniformly
                idx, sizes = cand[:B].tolist(), [G] * B
                info["allocation_fallback"] = True
            info["group_size_mean"] = float(np.mean(sizes))
            return self._sample(run, idx, sizes, info)
        if r.remedy in ("adaptive_g_card", "adaptive_g_signal"):
            budget = B * G
            idx, sizes, spent = [], [], 0
            while spent < budget:  # prompts until the step's budget is used
                i = run.next_prompts(1)[0]
                p = self.estimates.p[i]
                if r.remedy == "adaptive_g_card":
                    g = int(remedies.card_pass_rate_group_size(p))
                else:
                    g = int(remedies.min_group_size_for_signal(
                        p, r.adaptive_target, G_min=r.G_min, G_max=r.G_max))
                g = min(g, budget - spent) if budget - spent >= 2 else 0
                if g < 2:
                    break
                idx.append(i)
                sizes.append(g)
                spent += g
            info["group_size_mean"] = float(np.mean(sizes)) if sizes else 0.0
            return self._sample(run, idx, sizes, info)
        return self._sample(run, run.next_prompts(B), [G] * B, info)

    def after_step(self, run: Run, batch: Batch) -> None:
        if self.curriculum is not None:
            front = self.difficulty == self.curriculum.frontier
            self.curriculum.update(float(self.estimates.p[front].mean()))

    def summary(self) -> dict:
        return {"remedy": self.remedy.remedy, "remedy_config": asdict(self.remedy),
                "cap_hits": self.cap_hits,
                "curriculum_open_levels": (self.curriculum.history[-1] if self.curriculum
                                           else None)}


# ----------------------------------------------------------------------------- the run
def census_for(config: GRPOConfig, model, tokenizer, prompts, cache_dir: str) -> np.ndarray:
    """Exact-match pass/fail of the starting policy on the training prompts (whatever the
    reward), ``config.census_samples`` each, cached under ``cache_dir`` by what made it."""
    key = json.dumps([config.warmstart.key(), config.model, config.task, config.task_kwargs,
                      config.train_difficulties, config.max_train_prompts, config.temperature,
                      config.pass_rate_window_size, config.census_seed,
                      config.max_completion_length], sort_keys=True, default=str)
    path = os.path.join(cache_dir, f"census-{hashlib.sha256(key.encode()).hexdigest()[:12]}.npy")
    if os.path.isfile(path):
        from grpolab.grpo.records import read_npy

        census = read_npy(path, "a pass-rate census", ndim=2)
        if census.shape == (len(prompts), config.pass_rate_window_size):
            return census
    base = get_task(config.task, **config.task_kwargs)  # the census counts exact matches
    census = pass_rate_census(model, tokenizer, base, prompts,
                              samples=config.pass_rate_window_size,
                              temperature=config.temperature, top_p=config.top_p,
                              max_new_tokens=config.max_completion_length,
                              seed=config.seed if config.census_seed is None
                              else config.census_seed)
    os.makedirs(cache_dir, exist_ok=True)
    from grpolab.grpo.records import write_npy_atomic

    write_npy_atomic(path, census)
    return census


def run_lab(config: GRPOConfig, remedy: Remedy, out_dir: str | os.PathLike, *, cache_dir: str,
            progress: bool = True, extra: dict | None = None) -> dict:
    """One remedy run through the one loop: GRPO with ``remedy``'s batches and reward until
    ``config.completion_budget`` completions are spent. Returns the summary."""
    import torch

    config.validate()
    remedy.validate()
    if config.completion_budget is None:
        raise ValueError("a remedy run needs --completion-budget (arms compare at a fixed "
                         "budget)")
    task = make_task(config, remedy)
    train_prompts, _ = training_prompts(config, task)
    model, tokenizer, _ = load_policy(config, cache_dir, torch.device(config.device))
    census = census_for(config, model, tokenizer, train_prompts, cache_dir)
    del model
    return run(config, out_dir, cache_dir=cache_dir, census=census,
               batches=RemedyBatches(remedy), task=task, progress=progress, extra=extra)
