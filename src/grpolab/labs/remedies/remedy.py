"""A remedy lab's configuration: the base GRPOConfig every remedy lab starts from, and the
remedy's own knobs (which batch source, which reward). No torch here, so the command line
can build its flags and refuse bad input before anything heavy is imported.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from grpolab.allocation import ALLOCATION_RULES
from grpolab.grpo.config import GRPOConfig, Rule, apply_overrides, check_fields
from grpolab.labs.common import CENSUS_SEED, COMPLETIONS_PER_STEP, TINY_BASE
from grpolab.tasks.rewards import REWARDS

__all__ = ["Remedy", "REMEDY_BASE", "REMEDY_RULES", "SOURCE_NAMES", "ALLOCATION_RULE_NAMES",
           "lab_config"]

#: The batch sources a lab can name (:data:`grpolab.labs.remedies.sources.SOURCES`).
SOURCE_NAMES = ("none", "dynamic_sampling", "dynamic_sampling_carry", "band", "curriculum",
                "adaptive_g_card", "adaptive_g_signal", "allocate", "allocation")

#: The per-prompt splits the ``allocation`` source can use: G = num_generations for every
#: prompt, or a rule of :data:`grpolab.allocation.ALLOCATION_RULES` (book/theory/14).
ALLOCATION_RULE_NAMES = ("uniform", *ALLOCATION_RULES)

#: The config every remedy lab starts from (a lab item's arms override it): mixed difficulty,
#: G = 8 × 8 prompts, a fixed budget of 80 steps of 64 completions, pass@1 from 8 samples per
#: held-out prompt (the labs' primary metric).
REMEDY_BASE: GRPOConfig = apply_overrides(
    TINY_BASE, train_difficulties=[1, 2, 3], max_eval_prompts=200, num_generations=8,
    prompts_per_step=COMPLETIONS_PER_STEP // 8, completion_budget=80 * COMPLETIONS_PER_STEP,
    learning_rate=3e-5, eval_samples=8, census_samples=64, census_seed=CENSUS_SEED)


@dataclass
class Remedy:
    """A remedy lab's own knobs: the batch source and the reward (never GRPO fields)."""

    source: str = "none"
    """how batches are chosen: none, dynamic_sampling, dynamic_sampling_carry, band,
    curriculum, adaptive_g_card, adaptive_g_signal, allocate, allocation"""
    reward: str = "task"
    """task, partial, narrow, noisy, length_long or length_short"""
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
    allocation_rule: str = "uniform"
    """allocation source: uniform (G = num_generations each) or a rule of
    grpolab.allocation (informative, knapsack, first-success, variance-dr-grpo,
    variance-rloo) splitting prompts_per_step x num_generations completions"""

    def validate(self) -> Remedy:
        """Raise a ValueError naming the first bad field (as its flag)."""
        check_fields(self, REMEDY_RULES)
        if self.band_low > self.band_high:
            raise ValueError(f"--band-low must be <= --band-high, got {self.band_low} > "
                             f"{self.band_high}")
        if self.G_min > self.G_max:
            raise ValueError(f"--G-min must be <= --G-max, got {self.G_min} > {self.G_max}")
        return self


def _unit() -> Rule:
    return Rule("real", 0, 1)


def lab_config(**overrides) -> tuple[GRPOConfig, Remedy]:
    """:data:`REMEDY_BASE` plus ``overrides`` (a flat dict of GRPOConfig and Remedy fields),
    split into (GRPOConfig, Remedy), both validated."""
    names = {f.name for f in dataclasses.fields(Remedy)}
    config = apply_overrides(REMEDY_BASE, {k: v for k, v in overrides.items() if k not in names})
    remedy = Remedy(**{k: v for k, v in overrides.items() if k in names})
    return config, remedy.validate()


#: The per-field checks of :meth:`Remedy.validate`.
REMEDY_RULES = {
    "source": Rule("choice", choices=SOURCE_NAMES), "reward": Rule("choice", choices=REWARDS),
    "allocation_rule": Rule("choice", choices=ALLOCATION_RULE_NAMES),
    "max_batches": Rule("int", 1, 4096), "curriculum_min_steps": Rule("int", 1, 10**6),
    "length_weight": Rule("real", 0, 1000), "noise_q": _unit(), "band_low": _unit(),
    "band_high": _unit(), "curriculum_advance_at": _unit(), "adaptive_target": _unit(),
    "pass_rate_decay": Rule("real", 0, 1, low_open=True),
    "G_min": Rule("int", 2, 4096), "G_max": Rule("int", 2, 4096),
}
