"""The closed forms of book/theory/03-zero-variance.md:
"The zero-variance probability p^G + (1−p)^G".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np
from scipy import special

from grpolab._validate import (
    MAX_COUNT,
    as_group_size,
    as_integer_array,
    as_nonnegative,
    as_probability,
    scalar_or_array,
)
from grpolab.theory._common import _beta_moment, _pass_rates_by_group_size, _power

#: The largest variance a 0/1 reward can have: p(1−p) ≤ 1/4, reached at p = 1/2.
BERNOULLI_VARIANCE_MAX = 0.25


def bernoulli_variance(p):
    """Variance of a 0/1 reward with success probability p.

    Equation: σ² = p(1 − p) ≤ 1/4 (:data:`BERNOULLI_VARIANCE_MAX`), largest at p = 1/2.

    Derived in: book/theory/03-zero-variance.md, "The golden zone".
    """
    p = as_probability(p)
    return scalar_or_array(p * (1.0 - p))


# --------------------------------------------------------------------------------------
# P(zero gradient) = p^G + (1−p)^G             Derived in: book/theory/03-zero-variance.md
# --------------------------------------------------------------------------------------
def all_fail_probability(p, G):
    """Probability that all G binary rewards are 0.

    Equation: P(all fail) = (1 − p)^G, computed as exp(G·log1p(−p)).

    Derived in: book/theory/03-zero-variance.md, "The derivation".
    """
    p, G = as_probability(p), as_group_size(G)
    with np.errstate(divide="ignore"):
        return scalar_or_array(np.exp(G * np.log1p(-p)))


def all_pass_probability(p, G):
    """Probability that all G binary rewards are 1.

    Equation: P(all pass) = p^G.

    Derived in: book/theory/03-zero-variance.md, "The derivation".
    """
    p, G = as_probability(p), as_group_size(G)
    return scalar_or_array(_power(p, G))


def zero_variance_probability(p, G):
    """Probability that a group of G binary rewards is constant, so every advantage is 0.

    Equation: P(zero gradient) = p^G + (1 − p)^G. For G = 1 it is 1: one sample has
    nothing to be compared with.

    Derived in: book/theory/03-zero-variance.md, "The derivation".
    """
    # p + (1 − p) can round to 1 + 1 ulp at G = 1; a probability stays in [0, 1].
    return scalar_or_array(np.minimum(
        np.asarray(all_pass_probability(p, G)) + np.asarray(all_fail_probability(p, G)), 1.0))


def informative_probability(p, G):
    """Probability that a group carries signal (at least one 0 and at least one 1).

    Equation: 1 − p^G − (1 − p)^G, evaluated as −expm1(G·log1p(−p)) − p^G so that it
    keeps its relative accuracy when it is tiny (p near 0 or 1).

    Derived in: book/theory/03-zero-variance.md, "The derivation".
    """
    p, G = as_probability(p), as_group_size(G)
    with np.errstate(divide="ignore"):
        any_success = -np.expm1(G * np.log1p(-p))
    return scalar_or_array(np.clip(any_success - _power(p, G), 0.0, 1.0))


def any_success_probability(p, G):
    """Probability that at least one of G samples succeeds (the exploration view of G).

    Equation: 1 − (1 − p)^G, evaluated with expm1/log1p for small p. It is pass@G, the
    quantity :func:`pass_at_k` estimates without bias from n ≥ G samples.

    Derived in: book/theory/03-zero-variance.md, "Hard prompts".
    """
    p, G = as_probability(p), as_group_size(G)
    with np.errstate(divide="ignore"):
        return scalar_or_array(-np.expm1(G * np.log1p(-p)))


def expected_informative_prompts(p, G, prompts):
    """Expected number of prompts in a batch whose group carries signal.

    Equation: E[#informative] = B · (1 − p^G − (1 − p)^G) for B prompts of pass rate p.
    Pass an array of per-prompt pass rates and ``prompts=None`` to sum over them instead.

    Derived in: book/theory/03-zero-variance.md, "Prompts that carry signal".
    """
    if prompts is None:
        return float(np.sum(informative_probability(p, G)))
    B = as_nonnegative(prompts, "prompts", maximum=MAX_COUNT)
    return scalar_or_array(B * np.asarray(informative_probability(p, G)))


def beta_all_pass_probability(G, a, b):
    """E[p^G] when prompt difficulty p ~ Beta(a, b).

    Equation: E[p^G] = B(a + G, b) / B(a, b) (a Beta moment, computed with betaln).

    Derived in: book/theory/03-zero-variance.md, "Averaging over difficulty".
    """
    return scalar_or_array(_beta_moment(a, b, G, of_complement=False))


def beta_all_fail_probability(G, a, b):
    """E[(1 − p)^G] when prompt difficulty p ~ Beta(a, b).

    Equation: E[(1 − p)^G] = B(a, b + G) / B(a, b).

    Derived in: book/theory/03-zero-variance.md, "Averaging over difficulty".
    """
    return scalar_or_array(_beta_moment(a, b, G, of_complement=True))


def beta_zero_variance_probability(G, a, b):
    """Zero-variance probability averaged over a Beta(a, b) prior on the pass rate.

    Equation: E[p^G + (1 − p)^G] = [B(a + G, b) + B(a, b + G)] / B(a, b).
    As G → ∞ it falls only like G^(−min(a, b)): a prior with mass near 0 or 1 keeps
    many zero-variance groups however large G is.

    Derived in: book/theory/03-zero-variance.md, "Averaging over difficulty".
    """
    total = np.asarray(_beta_moment(a, b, G, of_complement=False)
                       + _beta_moment(a, b, G, of_complement=True))
    return scalar_or_array(np.minimum(total, 1.0, out=total))


def empirical_zero_variance_probability(pass_rates, G):
    """Zero-variance probability averaged over a list of per-prompt pass rates.

    Equation: (1/N) Σ_j [p_j^G + (1 − p_j)^G]. ``G`` may be an array; the result has
    G's shape.

    Derived in: book/theory/03-zero-variance.md, "Averaging over difficulty".
    """
    p, G = _pass_rates_by_group_size(pass_rates, G)
    z = zero_variance_probability(p[:, None], G.reshape(1, -1))
    return scalar_or_array(np.asarray(z).mean(axis=0).reshape(G.shape))


def unbiased_zero_variance_estimate(successes, trials, G):
    """Unbiased estimate of p^G + (1 − p)^G from k successes in n ≥ G Bernoulli trials.

    Plugging p̂ = k/n into p^G is biased upward at large G (E[p̂^G] ≠ p^G). The
    U-statistic C(k, G)/C(n, G) is unbiased for p^G: it is the chance that G draws
    without replacement from the n observed rewards are all successes.

    Equation: [C(k, G) + C(n − k, G)] / C(n, G). Its all-fail half C(n − k, G)/C(n, G) is
    1 − :func:`pass_at_k` (n, k, G): Chen et al.'s unbiased pass@k estimator with k = G.

    Derived in: book/labs/01-g-sweep.md, "Zero-variance groups: theory next to measurement".
    """
    k = as_integer_array(successes, "successes", minimum=0, maximum=MAX_COUNT)
    n = as_integer_array(trials, "trials", minimum=1, maximum=MAX_COUNT)
    G = as_group_size(G)
    if (k > n).any():
        raise ValueError("successes must lie in [0, trials]")
    if (n < G).any():
        raise ValueError("trials must be >= G for the unbiased estimate")

    def log_comb(N, K):
        # log C(N, K) = −log(N + 1) − log B(N − K + 1, K + 1): betaln keeps its accuracy
        # for N ≫ K, where a difference of three gammaln values loses it (at N = 4.6e11,
        # K = 4 the estimate came out 1.002).
        N, K = np.asarray(N, dtype=float), np.asarray(K, dtype=float)
        with np.errstate(invalid="ignore"):
            out = -np.log1p(N) - special.betaln(np.maximum(N - K, 0) + 1, K + 1)
        return np.where(K > N, -np.inf, out)

    denom = log_comb(n, G)
    estimate = np.exp(log_comb(k, G) - denom) + np.exp(log_comb(n - k, G) - denom)
    return scalar_or_array(np.clip(estimate, 0.0, 1.0))


# ---- ch. 11–13: pass@k, KL, entropy ---------------------------------------------------
# --------------------------------------------------------------------------------------
# pass@k                                       Derived in: book/theory/03-zero-variance.md
# --------------------------------------------------------------------------------------
def _log_comb(N: np.ndarray, K: np.ndarray) -> np.ndarray:
    """log C(N, K) for K ≤ N, as −log(N + 1) − log B(N − K + 1, K + 1); −inf for K > N.

    betaln keeps its accuracy for N ≫ K, where a difference of three gammaln values loses it.
    """
    N, K = np.asarray(N, dtype=float), np.asarray(K, dtype=float)
    with np.errstate(invalid="ignore"):
        out = -np.log1p(N) - special.betaln(np.maximum(N - K, 0) + 1, K + 1)
    return np.where(K > N, -np.inf, out)


#: Terms summed one by one in :func:`_log_all_fail`; past them, the sum's smooth tail is
#: integrated (Euler–Maclaurin), where every correction is below 1e-17.
_EXACT_TERMS = 2**16


#: Gauss–Legendre nodes and weights on [−1, 1] for the tail integral (30 points per piece).
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(30)


def _log_all_fail(n: int, c: int, k: int) -> float:
    """log C(n − c, k)/C(n, k) for one (n, c, k) with n − c ≥ k ≥ 1, c ≥ 1, to float precision.

    The ratio is a product of ratios, C(n − c, k)/C(n, k) = Π_{j<m} (1 − a/(n − j)) with
    m = min(c, k) and a = max(c, k) (C(n − c, k)/C(n, k) = C(n − k, c)/C(n, c) lets the
    shorter product be taken), so its log is Σ_{j<m} log1p(−a/(n − j)): terms of one sign,
    each exact to a rounding, and no difference of huge log-gammas (log Γ(10¹⁵) ≈ 3·10¹⁶
    keeps no digit of a log-ratio of 10⁻¹²). The :data:`_EXACT_TERMS` terms nearest the
    pole y = a are summed; the rest, g(y) = log1p(−a/y) over the integers y with
    y − a ≥ 2¹⁶, by Euler–Maclaurin: ∫ g + (g(lo) + g(hi))/2 + (g′(hi) − g′(lo))/12 −
    (g‴(hi) − g‴(lo))/720 (the next term is below 1e−26), the integral by Gauss–Legendre
    on pieces as long as their distance to the pole (each converges to machine precision).
    So the cost is O(2¹⁶), not O(m), for m up to 10¹⁵.
    """
    m, a = min(c, k), max(c, k)
    lo = n - m + 1                          # the terms are g(y) for the integers y in [lo, n]
    split = min(n + 1, lo + _EXACT_TERMS)
    y = np.arange(lo, split, dtype=float)   # exact: every integer below 2**53 is a float
    total = float(np.sum(np.log1p(-a / y)))
    if split > n:
        return total
    start, hi = float(split), float(n)

    def g(v):
        return np.log1p(-a / v)

    def d1(v):  # g′(y) = a / (y (y − a))
        return a / (v * (v - a))

    def d3(v):  # g‴(y) = 2/(y − a)³ − 2/y³
        return 2.0 / (v - a) ** 3 - 2.0 / v ** 3

    integral, left = 0.0, start
    while left < hi:
        right = min(hi, a + 2.0 * (left - a))  # length = distance from the pole at y = a
        half, mid = (right - left) / 2, (right + left) / 2
        integral += half * float(np.dot(_GL_WEIGHTS, g(mid + half * _GL_NODES)))
        left = right
    tail = (integral + (g(start) + g(hi)) / 2 + (d1(hi) - d1(start)) / 12
            - (d3(hi) - d3(start)) / 720)
    return total + float(tail)


#: Most terms (rows × longest product) summed in one array by :func:`_log_all_fail_many`.
_BATCH_TERMS = 2**22


def _log_all_fail_many(triples: np.ndarray) -> np.ndarray:
    """:func:`_log_all_fail` of each row (n, c, k) of ``triples``: the short products (a
    pass@k table of 64 samples, say) in one masked array, the long ones one by one."""
    n, c, k = (triples[:, i] for i in range(3))
    m, a = np.minimum(c, k), np.maximum(c, k)
    out = np.empty(len(triples))
    short = m <= 1024
    if short.any() and short.sum() * int(m[short].max()) <= _BATCH_TERMS:
        j = np.arange(int(m[short].max()))
        y = n[short, None].astype(float) - j[None, :]  # exact: integers below 2**53
        used = j[None, :] < m[short, None]
        terms = np.log1p(-a[short, None] / np.where(used, y, np.inf))  # unused terms: 0
        out[short] = terms.sum(axis=1)
    else:
        short[:] = False
    for i in np.flatnonzero(~short):
        out[i] = _log_all_fail(int(n[i]), int(c[i]), int(k[i]))
    return out


def pass_at_k(n, c, k):
    """Unbiased estimate of pass@k from c correct answers among n samples of one prompt.

    Equation: pass@k = 1 − C(n − c, k) / C(n, k)   (Chen et al. 2021, arXiv 2107.03374, §2.1).

    It is the chance that k of the n samples, drawn without replacement, include a correct
    one, so for i.i.d. samples of pass rate p its expectation is 1 − (1 − p)^k exactly:
    :func:`any_success_probability` (p, G) is pass@G. The all-fail half of
    :func:`unbiased_zero_variance_estimate`, C(n − c, G)/C(n, G), is 1 − pass_at_k(n, c, G).

    Broadcasts over n, c and k; computed as −expm1(L), L = log C(n − c, k)/C(n, k) the log of
    a product of ratios (:func:`_log_all_fail`), so it keeps float precision over the whole
    domain n ≤ 10¹⁵ (pass_at_k(10⁹, 1, 1000) = 1e−6, pass_at_k(10¹⁵, 1, 2) = 2e−15). Exact at
    the edges: 0 when c = 0, 1 when n − c < k (every k-subset holds a success), c/n when
    k = 1. Needs 1 ≤ k ≤ n.

    Derived in: book/theory/03-zero-variance.md, "pass@k and the unbiased estimator".
    """
    n = as_integer_array(n, "n", minimum=1, maximum=MAX_COUNT)
    c = as_integer_array(c, "c", minimum=0, maximum=MAX_COUNT)
    k = as_integer_array(k, "k", minimum=1, maximum=MAX_COUNT)
    n, c, k = np.broadcast_arrays(n, c, k)
    if (c > n).any():
        raise ValueError("c must lie in [0, n]: c correct answers among n samples")
    if (k > n).any():
        raise ValueError("k must be <= n: pass@k needs at least k samples of the prompt")
    n, c, k = (np.asarray(v, dtype=np.int64) for v in (n, c, k))
    inner = (c > 0) & (n - c >= k) & (k > 1)
    log_ratio = np.zeros(n.shape)
    if inner.any():  # each distinct (n, c, k) once: a prompt set shares a few counts
        triples = np.stack([n[inner], c[inner], k[inner]], axis=-1)
        unique, back = np.unique(triples, axis=0, return_inverse=True)
        log_ratio[inner] = _log_all_fail_many(unique)[back.reshape(-1)]
    est = -np.expm1(log_ratio)
    est = np.where(k == 1, c / n, est)
    est = np.where(c == 0, 0.0, np.where(n - c < k, 1.0, est))
    return scalar_or_array(np.clip(est, 0.0, 1.0))
