"""The closed forms of book/theory/05-degenerate-groups.md:
"Zero-variance groups and remedies (theory)".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np
from scipy import stats

from grpolab._validate import (
    MAX_COUNT,
    ArgumentTypeError,
    as_group_size,
    as_nonnegative,
    as_positive_int,
    as_probability_scalar,
    scalar_or_array,
)
from grpolab.theory.zero_variance import informative_probability


# --------------------------------------------------------------------------------------
# Dynamic sampling (DAPO)                      Derived in: book/theory/05-degenerate-groups.md
# --------------------------------------------------------------------------------------
def dynamic_sampling_expected_groups(p, G, informative_groups):
    """Expected number of groups to generate until B of them carry signal.

    Each group is informative with probability q = 1 − p^G − (1 − p)^G, independently,
    so the count is negative binomial with mean B / q (∞ when q = 0).

    Equation: E[groups] = B / q.

    Derived in: book/theory/05-degenerate-groups.md, "The cost of dynamic sampling".
    """
    B = as_nonnegative(informative_groups, "informative_groups", maximum=MAX_COUNT)
    q = np.asarray(informative_probability(p, G))
    with np.errstate(divide="ignore", over="ignore"):
        return scalar_or_array(np.where(q > 0, B / np.where(q > 0, q, 1.0), np.inf))


def dynamic_sampling_expected_completions(p, G, informative_groups):
    """Expected completions generated to fill B informative groups: G · B / q.

    ∞ when no group can carry signal (q = 0: p ∈ {0, 1} or G = 1), as for
    :func:`dynamic_sampling_expected_groups`.

    Derived in: book/theory/05-degenerate-groups.md, "The cost of dynamic sampling".
    """
    G_arr = as_group_size(G)
    groups = np.asarray(dynamic_sampling_expected_groups(p, G, informative_groups))
    with np.errstate(over="ignore"):
        return scalar_or_array(G_arr * groups)


def dynamic_sampling_cap_probability(p, G, informative_groups, groups_per_batch, max_batches):
    """Probability that k generation batches still leave fewer than B informative groups.

    This is the chance that a capped dynamic sampler (verl's ``max_num_gen_batches``)
    hits its cap. With n = k · groups_per_batch groups generated,

    Equation: P(cap) = P(Binomial(n, q) < B) = BinomCDF(B − 1; n, q).

    Derived in: book/theory/05-degenerate-groups.md, "Hitting the cap".
    """
    B = as_positive_int(informative_groups, "informative_groups", maximum=MAX_COUNT)
    b = as_positive_int(groups_per_batch, "groups_per_batch", maximum=MAX_COUNT)
    k = as_group_size(max_batches, "max_batches", maximum=MAX_COUNT)
    q = np.asarray(informative_probability(p, G))
    n = k.astype(float) * b  # as floats: k · b can pass int64's range
    return scalar_or_array(np.clip(stats.binom.cdf(B - 1, n, q), 0.0, 1.0))


def dynamic_sampling_expected_batches(p, G, informative_groups, groups_per_batch,
                                      max_terms=100_000):
    """Expected number of generation batches an uncapped dynamic sampler runs.

    Equation: E[K] = Σ_{k≥0} P(K > k) = Σ_{k≥0} BinomCDF(B − 1; k·b, q).

    Derived in: book/theory/05-degenerate-groups.md, "Hitting the cap".
    """
    B = as_positive_int(informative_groups, "informative_groups", maximum=MAX_COUNT)
    b = as_positive_int(groups_per_batch, "groups_per_batch", maximum=MAX_COUNT)
    terms = as_positive_int(max_terms, "max_terms", maximum=10**7)
    p = as_probability_scalar(p)
    G = as_group_size(G)
    if G.size != 1:
        raise ArgumentTypeError(f"G must be a single group size here, got shape {G.shape}")
    q = float(np.asarray(informative_probability(p, G)).reshape(()))
    if q == 0.0:
        return float("inf")
    ks = np.arange(terms, dtype=float)
    tail = stats.binom.cdf(B - 1, ks * b, q)
    if tail[-1] > 1e-12:  # the series has not converged: the sum would be silently too small
        raise ValueError(f"max_terms={terms} is too few terms for q = P(informative group "
                         f"| p, G) = {q:.3g}: P(K > {terms - 1}) = {tail[-1]:.3g}; pass a "
                         "larger max_terms")
    return float(tail.sum())
