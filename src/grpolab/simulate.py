"""Seeded Monte Carlo checks of the closed forms in :mod:`grpolab.theory`.

Each simulator draws the process itself (groups of G rewards) rather than the formula
it checks. Where it is exact, it draws the sufficient statistic instead of G separate
rewards: a group of G Bernoulli(p) rewards is summarised by its count of successes
k ~ Binomial(G, p), and all the quantities we check (the mean, the std, "all equal")
are functions of k. That makes 10⁶ groups take milliseconds.

Every function returns an :class:`MCEstimate` with a standard error, so a test can
ask "within 5 standard errors" instead of guessing a tolerance.

Domains (checked on entry, with an error naming the argument): p is one probability,
G one integer in [1, 10⁶], the sample counts are positive integers, a call draws at most
:data:`~grpolab._validate.MAX_DRAWS` = 10⁸ numbers (memory), and ``seed`` is None, a
non-negative integer or a numpy ``SeedSequence``/``Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpolab._validate import (
    MAX_DRAWS,
    MAX_GROUP_SIZE,
    as_choice,
    as_ddof,
    as_positive_int,
    as_probability,
    as_probability_scalar,
    as_real_scalar,
)

__all__ = [
    "MCEstimate",
    "baseline_variance_mc",
    "dynamic_sampling_mc",
    "group_std_mc",
    "identical_group_mc",
    "zero_gradient_mc",
    "zero_gradient_beta_mc",
]


@dataclass(frozen=True)
class MCEstimate:
    """A Monte Carlo estimate with its standard error and sample count."""

    mean: float
    stderr: float
    n: int

    def agrees_with(self, value: float, z: float = 5.0, atol: float = 1e-12) -> bool:
        """True if ``value`` lies within ``z`` standard errors (plus ``atol``) of the mean."""
        return abs(self.mean - value) <= z * self.stderr + atol


def _rng(seed) -> np.random.Generator:
    """``np.random.default_rng(seed)``, with an error naming ``seed`` for a bad one."""
    if isinstance(seed, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    if seed is not None:
        seed = as_positive_int(seed, "seed", minimum=0)
    return np.random.default_rng(seed)


def _group_size(G, minimum: int = 1) -> int:
    return as_positive_int(G, "G", minimum=minimum, maximum=MAX_GROUP_SIZE)


def _samples(value, name: str) -> int:
    return as_positive_int(value, name, maximum=MAX_DRAWS)


def _check_draws(total: int, names: str) -> None:
    if total > MAX_DRAWS:
        raise ValueError(f"{names}: {total:.3g} draws exceed {MAX_DRAWS:.0e} (memory); "
                         "lower one of them")


def _proportion(hits: np.ndarray) -> MCEstimate:
    n = hits.size
    m = float(hits.mean())
    return MCEstimate(m, float(np.sqrt(max(m * (1 - m), 0.0) / n)), n)


def zero_gradient_mc(p: float, G: int, n_groups: int = 1_000_000, seed: int = 0) -> MCEstimate:
    """Fraction of simulated groups of G Bernoulli(p) rewards that are constant.

    Checks :func:`grpolab.theory.zero_gradient_probability`.
    """
    p = as_probability_scalar(p)
    G = _group_size(G)
    n = _samples(n_groups, "n_groups")
    k = _rng(seed).binomial(G, p, size=n)
    return _proportion((k == 0) | (k == G))


def zero_gradient_beta_mc(G: int, a: float, b: float, n_groups: int = 1_000_000,
                          seed: int = 0) -> MCEstimate:
    """Constant-group fraction when each prompt's pass rate is drawn from Beta(a, b).

    Checks :func:`grpolab.theory.beta_zero_gradient_probability`.
    """
    G = _group_size(G)
    a = as_real_scalar(a, "a", minimum=1e-300, maximum=1e300)  # a Beta parameter
    b = as_real_scalar(b, "b", minimum=1e-300, maximum=1e300)
    n = _samples(n_groups, "n_groups")
    rng = _rng(seed)
    k = rng.binomial(G, rng.beta(a, b, size=n))
    return _proportion((k == 0) | (k == G))


def baseline_variance_mc(G: int, *, reward: str = "bernoulli", p: float = 0.5,
                         sigma: float = 1.0, n_groups: int = 1_000_000,
                         seed: int = 0) -> MCEstimate:
    """Empirical variance of the group-mean baseline over many groups.

    ``reward="bernoulli"`` draws k ~ Binomial(G, p) and uses r̄ = k/G (exact);
    ``reward="gaussian"`` draws G rewards N(0, σ²) per group explicitly.
    Checks :func:`grpolab.theory.baseline_variance`. The standard error uses the
    fourth central moment of r̄.
    """
    G = _group_size(G)
    n = _samples(n_groups, "n_groups")
    reward = as_choice(reward, "reward", ("bernoulli", "gaussian"))
    p = as_probability_scalar(p)
    # σ ≤ 1e50 keeps σ⁴, which the standard error uses, finite.
    sigma = as_real_scalar(sigma, "sigma", maximum=1e50)
    rng = _rng(seed)
    if reward == "bernoulli":
        means = rng.binomial(G, p, size=n) / G
    else:
        _check_draws(n * G, "n_groups × G")
        means = rng.normal(0.0, sigma, size=(n, G)).mean(axis=1)
    centred = means - means.mean()
    var = float(np.mean(centred**2)) * n / max(n - 1, 1)
    m4 = float(np.mean(centred**4))
    return MCEstimate(var, float(np.sqrt(max(m4 - var**2, 0.0) / n)), n)


def group_std_mc(p: float, G: int, ddof: int = 1, n_groups: int = 1_000_000,
                 seed: int = 0) -> np.ndarray:
    """Sample std of each of ``n_groups`` groups of G Bernoulli(p) rewards.

    With k successes, s² = (G/(G − ddof)) · (k/G)(1 − k/G). At small G the values are
    few and far apart, which is why the group's own std is a noisy normaliser.
    Returns the array of per-group stds (not an estimate), for histograms.
    """
    G = _group_size(G, minimum=2)
    ddof = as_ddof(ddof)
    n = _samples(n_groups, "n_groups")
    q = _rng(seed).binomial(G, as_probability_scalar(p), size=n) / G
    return np.sqrt(G / (G - ddof) * q * (1 - q))


def dynamic_sampling_mc(p: float, G: int, informative_groups: int, groups_per_batch: int,
                        max_batches: int = 1000, n_trials: int = 20_000,
                        seed: int = 0) -> dict[str, MCEstimate]:
    """Simulate DAPO-style dynamic sampling: generate batches of groups, keep informative
    ones (0 < k < G), stop once ``informative_groups`` are kept or ``max_batches`` ran.

    Returns estimates of the groups generated until the batch is full (over trials that
    filled it), the completions generated, and the probability of hitting the cap.
    Checks the ``dynamic_sampling_*`` functions in :mod:`grpolab.theory`.
    """
    p = as_probability_scalar(p)
    G = _group_size(G)
    B = _samples(informative_groups, "informative_groups")
    b = _samples(groups_per_batch, "groups_per_batch")
    K = _samples(max_batches, "max_batches")
    T = _samples(n_trials, "n_trials")
    _check_draws(T * K * b, "n_trials × max_batches × groups_per_batch")
    rng = _rng(seed)
    k = rng.binomial(G, p, size=(T, K * b))
    informative = (k > 0) & (k < G)
    cum = np.cumsum(informative, axis=1)
    filled = cum[:, -1] >= B
    # groups generated = index of the B-th informative group + 1 (a sampler that
    # stops mid-batch; the batch count rounds it up).
    first = np.argmax(cum >= B, axis=1) + 1
    groups = first[filled].astype(float)
    batches = np.ceil(groups / b)

    def est(x: np.ndarray) -> MCEstimate:
        if x.size == 0:
            return MCEstimate(float("inf"), float("inf"), 0)
        return MCEstimate(float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1
                          else float("inf"), int(x.size))

    return {
        "groups": est(groups),
        "completions": est(groups * G),
        "batches": est(batches),
        "cap_probability": _proportion(~filled),
    }


def identical_group_mc(probs, G: int, n_groups: int = 200_000, seed: int = 0) -> MCEstimate:
    """Fraction of groups of G categorical draws in which every draw is the same outcome.

    Draws the multinomial count vector (the sufficient statistic) for each group.
    Checks :func:`grpolab.theory.identical_group_probability`.
    """
    q = as_probability(probs, "probs")
    if q.ndim != 1 or q.size == 0 or not np.isclose(q.sum(), 1.0, rtol=0.0, atol=1e-6):
        raise ValueError("probs must be one distribution: a 1-D array of probabilities "
                         f"summing to 1, got shape {q.shape} summing to {q.sum():.6g}")
    G = _group_size(G)
    n = _samples(n_groups, "n_groups")
    _check_draws(n * q.size, "n_groups × len(probs)")
    counts = _rng(seed).multinomial(G, q / q.sum(), size=n)
    return _proportion(counts.max(axis=1) == G)
