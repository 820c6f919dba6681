"""The closed forms of book/theory/10-dapo.md:
"DAPO in full: clip-higher, overlong responses, and off-policy steps".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np

from grpolab._validate import (
    MAX_COUNT,
    MAX_GROUP_SIZE,
    as_integer_array,
    as_nonnegative,
    as_positive_int,
    as_probability,
    scalar_or_array,
)
from grpolab.theory.zero_variance import zero_variance_probability


def clipped_probability_bound(p_old, epsilon_high):
    """The probability past which a token's own clipped term stops pushing it up.

    For a positive advantage the token's own clipped surrogate is flat once ρ = π/π_old >
    1 + ε_high, so

    Equation: π_stop = min(1, (1 + ε_high) · π_old): 0.012 at π_old = 0.01 with ε = 0.2 and
    0.0128 with DAPO's ε_high = 0.28; a token at 0.9 is not held back at all. It is not a
    bound: other tokens' terms move the shared logits and can carry the token past it.

    Derived in: book/theory/10-dapo.md, "Clip-higher and entropy collapse".
    """
    p = as_probability(p_old, "p_old")
    eps = as_nonnegative(epsilon_high, "epsilon_high", maximum=1e6)
    return scalar_or_array(np.minimum(1.0, (1.0 + eps) * p))


def soft_overlong_penalty(length, max_length, cache_length):
    """DAPO's soft overlong punishment, added to the correctness reward.

    With L_max = ``max_length`` and a cache of L_cache = ``cache_length`` tokens before it,

    Equation: R_len(ℓ) = 0 for ℓ ≤ L_max − L_cache, (L_max − L_cache − ℓ)/L_cache up to
    L_max, and −1 beyond: a ramp from 0 to −1 over the last L_cache tokens.

    Derived in: book/theory/10-dapo.md, "Overlong responses".
    """
    ell = as_integer_array(length, "length", minimum=0, maximum=10**12)
    L_max = as_positive_int(max_length, "max_length", maximum=10**12)
    L_cache = as_positive_int(cache_length, "cache_length", maximum=10**12)
    if L_cache > L_max:
        raise ValueError(f"cache_length must be <= max_length, got {L_cache} > {L_max}")
    return scalar_or_array(np.clip((L_max - L_cache - ell) / L_cache, -1.0, 0.0) + 0.0)


def truncated_zero_variance_probability(p, G, truncation_rate):
    """Zero-variance probability when each completion is cut off at the length limit with
    probability τ and a cut-off completion scores 0 (it has no final answer).

    A completion then succeeds with probability q = p(1 − τ), so

    Equation: P(zero variance) = q^G + (1 − q)^G, q = p(1 − τ). At τ → 1 every group is
    all-fail whatever the prompt's pass rate p is.

    Derived in: book/theory/10-dapo.md, "Overlong responses".
    """
    p = as_probability(p)
    tau = as_probability(truncation_rate, "truncation_rate")
    return zero_variance_probability(p * (1.0 - tau), G)


def updates_per_rollout(prompts, G, minibatch_size, num_iterations=1):
    """Optimizer updates made from one rollout of B prompts × G completions.

    Each update uses ``minibatch_size`` completions, and the rollout is passed over
    ``num_iterations`` times (TRL's μ):

    Equation: U = μ · B·G / M. U = 1 is on-policy: the ratio π_θ/π_old is 1 and the clip
    never acts. DAPO's verl recipe: 512 prompts × 16 in minibatches of 32 prompts, U = 16.

    Derived in: book/theory/10-dapo.md, "How off-policy is a step?".
    """
    B = as_positive_int(prompts, "prompts", maximum=MAX_COUNT)
    G = as_positive_int(G, "G", maximum=MAX_GROUP_SIZE)
    M = as_positive_int(minibatch_size, "minibatch_size", maximum=MAX_COUNT)
    mu = as_positive_int(num_iterations, "num_iterations", maximum=10**6)
    if (B * G) % M:
        raise ValueError(f"minibatch_size must divide prompts × G = {B * G}, got {M}")
    return mu * (B * G // M)


def mean_policy_lag(updates):
    """Average number of optimizer updates between the policy that sampled a rollout and the
    policy being updated on it.

    Update k = 0, …, U − 1 of a rollout trains a policy k updates ahead of π_old, so

    Equation: mean lag = (U − 1)/2 (and at most U − 1). A larger B·G at a fixed minibatch
    size means more updates per rollout and a more off-policy step.

    Derived in: book/theory/10-dapo.md, "How off-policy is a step?".
    """
    U = as_positive_int(updates, "updates", maximum=MAX_COUNT * MAX_GROUP_SIZE)
    return (U - 1) / 2
