"""The closed forms of book/theory/11-pass-at-k.md:
"pass@k: what a group samples, and what RL does to it".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np
from scipy import special

from grpolab._validate import (
    MAX_COUNT,
    MAX_DRAWS,
    MAX_GROUP_SIZE,
    as_group_size,
    as_integer_array,
    as_positive,
    as_positive_int,
    as_probability,
    as_real_array,
    scalar_or_array,
)
from grpolab.theory._common import _beta_moment
from grpolab.theory.zero_variance import informative_probability


def expected_pass_at_k(pass_rates, k):
    """pass@k of a prompt set: the mean over its prompts of 1 − (1 − p_j)^k.

    Equation: pass@k = (1/N) Σ_j [1 − (1 − p_j)^k]. As k → ∞ it rises to the coverage,
    the fraction of prompts with p_j > 0: no k solves a prompt the policy never solves.
    ``k`` may be an array; the result has k's shape.

    Derived in: book/theory/11-pass-at-k.md, "pass@k of a prompt set".
    """
    p = as_probability(pass_rates, "pass_rates").ravel()
    if p.size == 0:
        raise ValueError("pass_rates must hold at least one pass rate")
    k = as_integer_array(k, "k", minimum=1, maximum=MAX_COUNT)
    if p.size * k.size > MAX_DRAWS:
        raise ValueError(f"pass_rates × k: {p.size} × {k.size} cells exceed {MAX_DRAWS:.0e}")
    with np.errstate(divide="ignore"):
        fail = np.exp(k.reshape(1, -1).astype(float) * np.log1p(-p)[:, None])
    return scalar_or_array(np.clip(1.0 - fail.mean(axis=0), 0.0, 1.0).reshape(k.shape))


def beta_pass_at_k(k, a, b):
    """pass@k when the prompts' pass rates follow a Beta(a, b) prior.

    Equation: pass@k = 1 − E[(1 − p)^k] = 1 − B(a, b + k)/B(a, b). For large k,
    1 − pass@k ≈ Γ(a + b)/Γ(b) · k^(−a): the mass of hard prompts (small a) sets how slowly
    sampling more covers them.

    Derived in: book/theory/11-pass-at-k.md, "pass@k of a prompt set".
    """
    k = as_integer_array(k, "k", minimum=1, maximum=MAX_GROUP_SIZE)
    return scalar_or_array(np.clip(1.0 - _beta_moment(a, b, k, of_complement=True), 0.0, 1.0))


def sharpened_pass_rate(p, power, shift=0.0):
    """A prompt's pass rate after an update that sharpens and shifts its success logit.

    Equation: logit p' = γ · logit p + δ, i.e. p' = σ(γ · logit p + δ), with γ = ``power``
    and δ = ``shift``. γ > 1 models an update that only reweights what the policy already
    samples (it pushes pass rates away from 1/2); δ > 0 lifts every prompt. Prompts with
    p ∈ {0, 1} stay put: no reweighting creates a success the policy never samples.
    Computed in log space, so p' keeps its relative accuracy when it is tiny.

    Derived in: book/theory/11-pass-at-k.md, "A model of sharpening".
    """
    p = as_probability(p)
    g = as_positive(power, "power", 1e-6, 1e6)
    d = as_real_array(shift, "shift")
    if not np.isfinite(d).all() or (np.abs(d) > 1e6).any():
        raise ValueError("shift must be a finite number in [-1e6, 1e6]")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = g * (np.log(p) - np.log1p(-p)) + d      # ±inf at p ∈ {0, 1}
        out = np.where(z >= 0, 1.0 / (1.0 + np.exp(-z)), np.exp(z) / (1.0 + np.exp(z)))
    return scalar_or_array(np.clip(out, 0.0, 1.0))


def pass_at_k_crossing(base_rates, tuned_rates, max_k=10_000):
    """The smallest k at which a tuned policy's pass@k falls to or below the base policy's.

    Equation: k× = min{k ≥ 1 : (1/N) Σ_j (1 − q_j)^k ≥ (1/N) Σ_j (1 − p_j)^k}, with p the
    base and q the tuned pass rates of the same prompts (:func:`expected_pass_at_k`).
    Every k from 1 to ``max_k`` (≤ 10⁵) is checked. Returns an int, or None when the tuned
    policy stays ahead up to ``max_k``. A tuned policy that covers fewer prompts (more
    q_j = 0 where p_j > 0) always crosses at some k.

    Derived in: book/theory/11-pass-at-k.md, "A model of sharpening".
    """
    p = as_probability(base_rates, "base_rates").ravel()
    q = as_probability(tuned_rates, "tuned_rates").ravel()
    if p.size == 0 or p.size != q.size:
        raise ValueError("base_rates and tuned_rates must hold the same, non-zero number of "
                         f"prompts, got {p.size} and {q.size}")
    top = as_positive_int(max_k, "max_k", maximum=10**5)
    chunk = max(1, min(top, MAX_DRAWS // (4 * p.size)))
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log1p(-p), np.log1p(-q)

    def log_miss(log_fail: np.ndarray, ks: np.ndarray) -> np.ndarray:
        # log of the mean all-fail probability, (1/N) Σ_j (1 − p_j)^k: compared in logs so
        # that two pass@k near 1 (misses of 1e-200) are still told apart
        terms = ks[None, :] * log_fail[:, None]
        with np.errstate(invalid="ignore"):
            return special.logsumexp(terms, axis=0) - np.log(log_fail.size)

    for start in range(1, top + 1, chunk):
        ks = np.arange(start, min(start + chunk, top + 1), dtype=float)
        behind = log_miss(log_q, ks) >= log_miss(log_p, ks)
        hit = np.flatnonzero(behind)
        if hit.size:
            return int(ks[hit[0]])
    return None


def informative_per_completion(p, G):
    """Informative groups per completion sampled: q(G)/G with q = 1 − p^G − (1 − p)^G.

    Equation: q(G)/G. It is equal at G = 2 and 3 (both p(1 − p)) and falls after; for a hard
    prompt (pG ≪ 1) it stays near p, so a large G costs little there, while for p near 1/2
    it falls like 1/G. 0 at G = 1.

    Derived in: book/theory/11-pass-at-k.md, "Sharpening and coverage".
    """
    G = as_group_size(G)
    return scalar_or_array(np.asarray(informative_probability(p, G)) / G)
