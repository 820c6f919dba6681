"""Reward wrappers: the same prompts as a base task, another reward.

Each wrapper keeps the base task's prompts and its ``correct`` (accuracy stays exact match),
so arms of a lab that differ in the reward compare rewards, not prompt sets:

- :class:`NoisyReward` flips a binary reward with probability q (an imperfect reward model);
- :class:`PartialCreditReward` gives partial credit
  (:func:`grpolab.tasks.arithmetic.partial_credit`);
- :class:`NarrowReward` squeezes partial credit into [0.9, 1];
- :class:`LengthBiasedReward` adds a bonus for long (or short) completions (a biased reward
  model);
- :func:`with_reward` builds the one a lab names.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import numpy as np

from grpolab._validate import as_probability
from grpolab.tasks.arithmetic import partial_credit
from grpolab.tasks.base import Prompt, Task

__all__ = ["NoisyReward", "PartialCreditReward", "NarrowReward", "LengthBiasedReward", "REWARDS",
           "with_reward"]

#: The rewards a lab can ask for (:func:`with_reward`).
REWARDS = ("task", "partial", "narrow", "noisy", "length_long", "length_short")


class NoisyReward(Task):
    """Wrap a binary-reward task and flip each reward with probability ``q``.

    A stand-in for an imperfect reward model: the expected reward becomes
    q + (1 − 2q)·p, so the pass rate GRPO sees is squeezed towards 1/2 and all-equal groups
    get rarer, but the extra variance is noise. ``correct`` stays noiseless, so accuracy
    measures the true skill. The flips come from a seeded generator (reproducible runs).
    """

    def __init__(self, base: Task, q: float, seed: int = 0):
        self.q = float(as_probability(q, "q"))
        self.base = base
        self.name = f"{base.name}_noisy"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts
        self._rng = np.random.default_rng(seed)

    def reward(self, prompt: Prompt, completion: str) -> float:
        r = self.base.reward(prompt, completion)
        return 1.0 - r if self._rng.random() < self.q else r

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


class PartialCreditReward(Task):
    """The base task's prompts with a partial-credit reward (:func:`partial_credit`);
    ``get_task("arithmetic_partial")`` would draw the same prompts, but wrapping keeps any
    base task's exact prompt set."""

    def __init__(self, base: Task):
        self.base, self.name = base, f"{base.name}_partial"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        return partial_credit(prompt, completion)

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


class NarrowReward(Task):
    """Partial credit squeezed into [0.9, 1]: 0.9 + 0.1 × :func:`partial_credit`. Every
    reward of a group is close to every other, the case the card warns about ("std
    normalisation amplifies tiny differences"): dividing by the group's std undoes the
    squeeze exactly (an affine map of the rewards leaves (r − r̄)/s unchanged, up to ε),
    while a mean-only advantage stays ten times smaller."""

    LOW, WIDTH = 0.9, 0.1

    def __init__(self, base: Task):
        self.base, self.name = base, f"{base.name}_narrow"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        return self.LOW + self.WIDTH * partial_credit(prompt, completion)

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


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


def with_reward(base: Task, reward: str, *, noise_q: float = 0.0, noise_seed: int = 0,
                length_weight: float = 0.5, max_len: int = 6) -> Task:
    """``base``'s prompts with the reward a lab asks for: ``"task"`` (its own),
    ``"partial"``, ``"noisy"`` (flip probability ``noise_q``, flips seeded by
    ``noise_seed``), ``"length_long"`` or ``"length_short"`` (bonus weight
    ``length_weight``)."""
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    if reward == "partial":
        return PartialCreditReward(base)
    if reward == "narrow":
        return NarrowReward(base)
    if reward == "noisy":
        return NoisyReward(base, q=noise_q, seed=noise_seed)
    if reward in ("length_long", "length_short"):
        return LengthBiasedReward(base, length_weight, reward.split("_")[1], max_len)
    return base
