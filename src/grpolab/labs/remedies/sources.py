"""The remedy labs' piece of the one loop: a batch source per remedy, registered by name.

A remedy run is GRPO through :func:`grpolab.grpo.backends.train` with two things swapped in:
the batch source (which prompts, which group sizes, which groups are kept) and the reward
(:func:`grpolab.tasks.rewards.with_reward`), at a fixed budget of completions
(``config.completion_budget``)::

    train(config, out, batches=make_source(remedy), task=remedy_task(config, remedy))

Each remedy is one :class:`~grpolab.grpo.loop.BatchSource` subclass below (d2l's
one-subclass-per-variant), registered in :data:`SOURCES` under the name a lab item uses:

==================  ==========================================================
``none``            uniform batches (the control arm)
``dynamic_sampling`` DAPO: draw generation batches until B informative groups
``dynamic_sampling_carry`` the same, keeping the surplus groups for the next step
``band``            prompts whose running pass rate lies in [band_low, band_high]
``curriculum``      open harder difficulty levels as the frontier is solved
``adaptive_g_card`` the card's "easy prompts G = 4, hard ones 16–32"
``adaptive_g_signal`` the smallest G whose informative probability reaches a target
``allocate``        split the step's budget over candidates to maximise informative groups
``allocation``      B prompts, their group sizes from a rule of :mod:`grpolab.allocation`
==================  ==========================================================

The remedy's own knobs are :class:`grpolab.labs.remedies.remedy.Remedy`; the config every
remedy lab starts from is :data:`grpolab.labs.remedies.remedy.REMEDY_BASE`.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import os
from dataclasses import asdict

import numpy as np

from grpolab import theory
from grpolab.allocation import allocate
from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.loop import Batch, BatchSource, RunState, merge_batches
from grpolab.labs.remedies import strategies
from grpolab.labs.remedies.remedy import Remedy
from grpolab.tasks.rewards import with_reward

__all__ = ["SOURCES", "make_source", "remedy_task", "train_remedy", "RemedySource"]

def remedy_task(config: GRPOConfig, remedy: Remedy):
    """The task of a remedy run, with the reward the remedy asks for (same prompts)."""
    from grpolab.tasks.registry import get_task

    return with_reward(get_task(config.task, **config.task_kwargs), remedy.reward,
                       noise_q=remedy.noise_q, noise_seed=config.seed,
                       length_weight=remedy.length_weight, max_len=config.max_completion_length)


# ----------------------------------------------------------------------------- the sources
SOURCES: dict[str, type[RemedySource]] = {}


def register(name: str):
    """Class decorator: make a source available to lab items under ``name``."""
    def add(cls):
        cls.name = name
        SOURCES[name] = cls
        return cls
    return add


class RemedySource(BatchSource):
    """What every remedy's batches share: per-prompt pass-rate estimates p̂ (a decayed
    average seeded by the census, :class:`~grpolab.labs.remedies.strategies.DecayedPassRates`)
    that every generated group updates and the selection remedies read."""

    def __init__(self, remedy: Remedy):
        self.remedy = remedy

    def start(self, state: RunState) -> None:
        self.estimates = strategies.DecayedPassRates.from_census(
            state.census, decay=self.remedy.pass_rate_decay)
        self.difficulty = np.array([p.difficulty for p in state.train_prompts])

    def observe(self, batch: Batch) -> Batch:
        """Update p̂ with every group of ``batch`` (in its row order); return it."""
        off = 0
        for i, g in zip(batch.prompt_idx, batch.group_sizes, strict=True):
            self.estimates.update([i], [batch.rewards[off:off + g] > 0.5])
            off += g
        return batch

    def sample(self, state: RunState, idx: list[int], sizes: list[int], info: dict) -> Batch:
        return self.observe(state.rollout(idx, sizes, info))

    def summary(self) -> dict:
        return {"remedy_config": asdict(self.remedy)}


@register("none")
class Uniform(RemedySource):
    """The control arm: uniform batches, G each (estimates kept only for the log)."""

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        return self.sample(state, state.next_prompts(B), [G] * B, {})


@register("dynamic_sampling")
class DynamicSampling(RemedySource):
    """DAPO's dynamic sampling: draw batches of B prompts × G until B informative groups are
    kept or ``max_batches`` batches were drawn; every completion drawn is paid for, surplus
    informative groups of the last batch are dropped (as verl does)."""

    def __init__(self, remedy: Remedy):
        super().__init__(remedy)
        self.cap_hits = 0

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        info = {"q_predicted": float(np.mean(theory.informative_probability(
            np.clip(self.estimates.p, 0.0, 1.0), G)))}

        def draw():
            batch = state.rollout(state.next_prompts(B), [G] * B)
            return batch.rewards.reshape(B, G), batch

        res = strategies.dynamic_sampling(draw, B, self.remedy.max_batches)
        for drawn in res.payloads:  # every generated group updates p̂
            self.observe(drawn)
        self.cap_hits += int(res.hit_cap)
        info.update(generation_batches=res.batches, hit_cap=res.hit_cap,
                    groups_generated=res.groups_generated,
                    informative_generated=res.informative_generated)
        kept = [(res.payloads[b], [gi]) for b, gi in res.kept]
        return merge_batches(kept, state.tokenizer.pad_token_id, res.completions, info)

    def summary(self) -> dict:
        return {**super().summary(), "cap_hits": self.cap_hits}


@register("dynamic_sampling_carry")
class DynamicSamplingCarry(DynamicSampling):
    """Dynamic sampling that keeps its surplus: the informative groups of the last generation
    batch that did not fit the step are trained on first at the next step (one step off
    policy), instead of being dropped as verl does. Each step still draws at least one new
    batch, because the surplus of one batch is at most B − 1 groups."""

    def __init__(self, remedy: Remedy):
        super().__init__(remedy)
        self.carried: list[tuple[Batch, int]] = []  # (batch, group index) kept for next step
        self.carried_used = 0

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        carried, self.carried = self.carried, []
        info = {"q_predicted": float(np.mean(theory.informative_probability(
            np.clip(self.estimates.p, 0.0, 1.0), G))), "carried_groups": len(carried)}

        def draw():
            batch = state.rollout(state.next_prompts(B), [G] * B)
            return batch.rewards.reshape(B, G), batch

        res = strategies.dynamic_sampling(draw, B - len(carried), self.remedy.max_batches)
        for drawn in res.payloads:
            self.observe(drawn)
        self.cap_hits += int(res.hit_cap)
        self.carried_used += len(carried)
        if res.payloads:  # the surplus: informative groups of the last batch, not kept
            last = len(res.payloads) - 1
            kept_last = {gi for b, gi in res.kept if b == last}
            mask = strategies.informative_groups(res.payloads[last].rewards.reshape(B, G))
            self.carried = [(res.payloads[last], int(gi)) for gi in np.flatnonzero(mask)
                            if gi not in kept_last]
        info.update(generation_batches=res.batches, hit_cap=res.hit_cap,
                    groups_generated=res.groups_generated,
                    informative_generated=res.informative_generated)
        kept = [(b, [gi]) for b, gi in carried] + [(res.payloads[b], [gi]) for b, gi in res.kept]
        return merge_batches(kept, state.tokenizer.pad_token_id, res.completions, info)

    def summary(self) -> dict:
        return {**super().summary(), "carried_groups_used": self.carried_used}


@register("band")
class Band(RemedySource):
    """Prompts whose running pass-rate estimate lies in [band_low, band_high]."""

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        idx, inside = strategies.select_in_band(state.rng, self.estimates.p, B,
                                                self.remedy.band_low, self.remedy.band_high)
        return self.sample(state, list(idx), [G] * B, {"band_fraction": inside / B})


@register("curriculum")
class Curriculum(RemedySource):
    """Train on the open difficulty levels; open the next when the frontier is solved."""

    def start(self, state: RunState) -> None:
        super().start(state)
        r = self.remedy
        self.curriculum = strategies.Curriculum(sorted(set(self.difficulty.tolist())),
                                                r.curriculum_advance_at, r.curriculum_min_steps)

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        pool = np.flatnonzero(np.isin(self.difficulty, self.curriculum.open_levels))
        idx = state.next_prompts(B, pool)
        return self.sample(state, idx, [G] * len(idx),
                           {"open_levels": len(self.curriculum.open_levels)})

    def after_step(self, state: RunState, batch: Batch) -> None:
        front = self.difficulty == self.curriculum.frontier
        self.curriculum.update(float(self.estimates.p[front].mean()))

    def summary(self) -> dict:
        return {**super().summary(), "curriculum_open_levels": self.curriculum.history[-1]}


@register("allocate")
class Allocate(RemedySource):
    """Split the step's B·G completions over 4B candidate prompts to maximise the expected
    number of informative groups (uniform G when every estimate is 0 or 1)."""

    def next_batch(self, state: RunState) -> Batch:
        B, G, r = state.config.prompts_per_step, state.config.num_generations, self.remedy
        cand = np.array(state.next_prompts(4 * B))
        alloc = strategies.allocate_budget(self.estimates.p[cand], B * G, G_min=r.G_min,
                                           G_max=r.G_max)
        keep = alloc > 0
        idx, sizes, info = cand[keep].tolist(), alloc[keep].tolist(), {}
        if not idx:  # every estimate is 0 or 1: nothing to gain, sample uniformly
            idx, sizes = cand[:B].tolist(), [G] * B
            info["allocation_fallback"] = True
        info["group_size_mean"] = float(np.mean(sizes))
        return self.sample(state, idx, sizes, info)


@register("allocation")
class Allocation(RemedySource):
    """The adaptive-allocation lab's source (book/theory/14-adaptive-allocation.md): each step
    the next B = prompts_per_step prompts of the seeded shuffles, and their group sizes from
    ``remedy.allocation_rule`` applied to their current estimates p̂:
    :func:`grpolab.allocation.allocate` at mean G = num_generations within [G_min, G_max],
    or G each for ``uniform``. Every rule spends exactly B·G completions a step, and the
    prompts do not depend on the rule (allocation draws no random numbers), so the arms of
    a seed differ only in the split.

    It logs the step's informative groups and keeps every visit (prompt, G, successes) for
    the summary, from which the persistence of zero variance across visits is computed
    (:func:`grpolab.labs.remedies.strategies.zero_variance_transitions`)."""

    def start(self, state: RunState) -> None:
        super().start(state)
        width = state.config.pass_rate_window_size
        self.census_successes = state.census[:, :width].sum(1).astype(int).tolist()
        self.census_samples = int(width)
        self.visits: dict[str, list[int]] = {"prompt": [], "G": [], "successes": []}

    def group_sizes(self, p: np.ndarray, G: int) -> list[int]:
        """The rule's split of len(p) · G completions (G each for ``uniform``)."""
        r = self.remedy
        if r.allocation_rule == "uniform":
            return [G] * len(p)
        return allocate(np.clip(p, 0.0, 1.0), G, r.allocation_rule, min_G=r.G_min,
                        max_G=r.G_max).tolist()

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        idx = state.next_prompts(B)
        sizes = self.group_sizes(self.estimates.p[idx], G)
        batch = self.sample(state, idx, sizes, {"group_size_max": int(max(sizes)),
                                                "group_size_min": int(min(sizes))})
        off, informative = 0, 0
        for i, g in zip(batch.prompt_idx, batch.group_sizes, strict=True):
            k = int((batch.rewards[off:off + g] > 0.5).sum())
            off += g
            informative += int(0 < k < g)
            for key, v in (("prompt", int(i)), ("G", int(g)), ("successes", k)):
                self.visits[key].append(v)
        batch.info["informative_groups"] = informative
        return batch

    def summary(self) -> dict:
        return {**super().summary(), "allocation_visits": self.visits,
                "census_successes": self.census_successes,
                "census_samples": self.census_samples}


class _AdaptiveG(RemedySource):
    """Prompts one at a time, each with its own G from its estimate, until the step's B·G
    completions are spent."""

    def group_size(self, p: float) -> int:
        raise NotImplementedError  # each registered subclass defines its rule

    def next_batch(self, state: RunState) -> Batch:
        budget = state.config.prompts_per_step * state.config.num_generations
        idx, sizes, spent = [], [], 0
        while spent < budget:
            i = state.next_prompts(1)[0]
            g = self.group_size(self.estimates.p[i])
            g = min(g, budget - spent) if budget - spent >= 2 else 0
            if g < 2:
                break
            idx.append(i)
            sizes.append(g)
            spent += g
        return self.sample(state, idx, sizes,
                           {"group_size_mean": float(np.mean(sizes)) if sizes else 0.0})


@register("adaptive_g_card")
class AdaptiveGCard(_AdaptiveG):
    """The card's rule: easy prompts (p̂ > 0.7) G = 4, hard ones (p̂ < 0.3) 16–32."""

    def group_size(self, p: float) -> int:
        return int(strategies.card_pass_rate_group_size(p))


@register("adaptive_g_signal")
class AdaptiveGSignal(_AdaptiveG):
    """The smallest G whose informative probability 1 − p̂^G − (1 − p̂)^G reaches
    ``adaptive_target``, within [G_min, G_max]."""

    def group_size(self, p: float) -> int:
        r = self.remedy
        return int(strategies.min_group_size_for_signal(p, r.adaptive_target, G_min=r.G_min,
                                                        G_max=r.G_max))


def make_source(remedy: Remedy) -> RemedySource:
    """The batch source registered under ``remedy.source``."""
    return SOURCES[remedy.validate().source](remedy)


# ----------------------------------------------------------------------------- a run
def census_inputs(config: GRPOConfig) -> dict:
    """What a remedy run's census depends on (its one key,
    :func:`grpolab.labs.runner.census_inputs`: measured exactly ``census_samples`` wide)."""
    from grpolab.labs.runner import census_inputs as inputs

    return inputs(config, seed=config.seed if config.census_seed is None
                  else config.census_seed, samples=config.pass_rate_window_size)


def train_remedy(config: GRPOConfig, remedy: Remedy, out_dir: str | os.PathLike, *,
                 cache_dir: str, progress: bool = True, extra: dict | None = None) -> dict:
    """One remedy run: GRPO with ``remedy``'s batches and reward until
    ``config.completion_budget`` completions are spent, as a plan of one run for the one
    runner (:class:`grpolab.labs.runner.Runner`, which locks ``out_dir``). Returns the
    summary; a finished run of this config in ``out_dir`` is returned, not retrained.

    The census (exact-match pass/fail of the starting policy, whatever the reward) comes from
    the one census cache, under ``cache_dir``, keyed by :func:`census_inputs`.
    """
    from functools import partial

    from grpolab.labs.runner import CensusSpec, PlannedRun, Runner

    config.validate()
    if config.completion_budget is None:
        raise ValueError("a remedy run needs --completion-budget (arms compare at a fixed "
                         "budget)")
    run = PlannedRun(name=os.fspath(out_dir), config=config, folder=os.fspath(out_dir),
                     census=CensusSpec(config.pass_rate_window_size,
                                       config.seed if config.census_seed is None
                                       else config.census_seed, keyed_by_width=True),
                     batches=partial(make_source, remedy), task=partial(remedy_task, config,
                                                                          remedy),
                     extra=dict(extra or {}))
    with Runner(out_dir, cache_dir=cache_dir, progress=progress, log=lambda m: None) as runner:
        return runner.run([run], runner.check([run]))[run.name]
