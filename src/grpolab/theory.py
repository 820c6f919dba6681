"""Closed forms for GRPO's group size G, as derived in the book.

Every function broadcasts over numpy arrays of ``p`` and ``G``, stays finite and
accurate for p near 0 or 1 and large G (powers are taken in log space), and names the
book chapter that derives it ("Derived in: ...").

Domains (checked on entry; a bad argument raises a ValueError or TypeError that names
it, never a NaN, an inf or a wrapped integer): p is a probability in [0, 1]; G is an
integer in [1, :data:`MAX_GROUP_SIZE`] = [1, 10⁶]; counts (prompts, budgets, trials,
batches) lie in [0, 10¹⁵]; Beta parameters a, b in [1e-300, 1e300]; every other number
is finite. See :mod:`grpolab._validate`.

Only numpy and scipy are imported, so this module also runs in a browser Python.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from grpolab._validate import (
    MAX_COUNT,
    MAX_DRAWS,
    MAX_GROUP_SIZE,
    ArgumentTypeError,
    as_choice,
    as_ddof,
    as_flag,
    as_group_size,
    as_integer_array,
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
    as_probability_scalar,
    as_real_array,
    as_real_scalar,
    finite_result,
    scalar_or_array,
)

__all__ = [
    "BERNOULLI_VARIANCE_MAX",
    "MAX_GROUP_SIZE",
    "MSE_FORMS",
    "GroupSizeWarning",
    "SamplingCost",
    "all_fail_probability",
    "all_pass_probability",
    "any_success_probability",
    "baseline_standard_error",
    "baseline_variance",
    "bernoulli_variance",
    "beta_all_fail_probability",
    "beta_all_pass_probability",
    "beta_zero_variance_probability",
    "binary_advantages",
    "dynamic_sampling_cap_probability",
    "dynamic_sampling_expected_batches",
    "dynamic_sampling_expected_completions",
    "dynamic_sampling_expected_groups",
    "empirical_zero_variance_probability",
    "expected_informative_prompts",
    "fixed_budget_prompts",
    "gradient_variance_inflation",
    "identical_group_probability",
    "informative_probability",
    "minibatch_gradient_mse",
    "optimal_group_size",
    "pass_at_k",
    "rloo_scale_factor",
    "sampling_cost",
    "unbiased_zero_variance_estimate",
    "zero_variance_probability",
]

#: The largest variance a 0/1 reward can have: p(1−p) ≤ 1/4, reached at p = 1/2.
BERNOULLI_VARIANCE_MAX = 0.25


def _power(base: np.ndarray, G: np.ndarray) -> np.ndarray:
    """base**G computed as exp(G·log base); exact 0**G = 0 for G ≥ 1 and no warnings."""
    with np.errstate(divide="ignore"):
        return np.exp(G * np.log(base))


# --------------------------------------------------------------------------------------
# Var(baseline) = σ²/G                       Derived in: book/theory/02-baseline-variance.md
# --------------------------------------------------------------------------------------
def baseline_variance(reward_variance, G):
    """Variance of the group-mean baseline r̄ = (1/G) Σ r_i for i.i.d. rewards.

    Equation: Var(r̄) = σ² / G.

    Derived in: book/theory/02-baseline-variance.md, "The derivation".
    """
    s2 = as_nonnegative(reward_variance, "reward_variance")
    G = as_group_size(G)
    return scalar_or_array(s2 / G)


def baseline_standard_error(reward_variance, G):
    """Standard error of the group-mean baseline.

    Equation: SE(r̄) = σ / √G, so halving the error costs 4× the completions.

    Derived in: book/theory/02-baseline-variance.md, "The derivation".
    """
    return scalar_or_array(np.sqrt(baseline_variance(reward_variance, G)))


def bernoulli_variance(p):
    """Variance of a 0/1 reward with success probability p.

    Equation: σ² = p(1 − p) ≤ 1/4 (:data:`BERNOULLI_VARIANCE_MAX`), largest at p = 1/2.

    Derived in: book/theory/03-zero-variance.md, "The golden zone".
    """
    p = as_probability(p)
    return scalar_or_array(p * (1.0 - p))


def rloo_scale_factor(G):
    """Ratio between GRPO's centred advantage and RLOO's leave-one-out advantage.

    Equation: r_i − r̄ = ((G − 1)/G) · (r_i − r̄₋ᵢ)   (Dr. GRPO, arXiv 2503.20783, App. A).

    Derived in: book/theory/02-baseline-variance.md, "Leave-one-out".
    """
    G = as_group_size(G)
    return scalar_or_array((G - 1) / G)



# --------------------------------------------------------------------------------------
# Gradient noise: baseline inflation and the fixed-budget G*
#                                              Derived in: book/theory/02-baseline-variance.md
# --------------------------------------------------------------------------------------
def gradient_variance_inflation(G):
    """Factor by which estimating the baseline from the group inflates a completion's
    gradient second moment, relative to an oracle baseline.

    Equation: with the leave-one-out baseline,
    E‖g_i‖² = E[(r_i − μ)² ‖∇log π‖²] + σ²/(G − 1) · E‖∇log π‖², which for a reward
    uncorrelated with ‖∇log π‖² is (1 + 1/(G − 1)) = G/(G − 1) times the oracle's:
    ×2 at G = 2, ×1.14 at G = 8, ×1.07 at G = 16.

    Derived in: book/theory/02-baseline-variance.md, "How G enters the gradient's variance".
    """
    G = as_group_size(G, minimum=2)
    return scalar_or_array(G / (G - 1.0))


#: The two forms of the minibatch model: ch. 02's exact leave-one-out algebra, and the
#: U-statistic paper's leading order in 1/G (arXiv 2603.01162, Prop. 3).
MSE_FORMS = ("exact", "paper")


class GroupSizeWarning(UserWarning):
    """A fixed-budget optimum below G = 2, the smallest group that has a baseline."""


def minibatch_gradient_mse(B, G, c1, c2, c3, *, form: str = "exact"):
    """Mean squared error of a minibatch gradient of B prompts × G completions.

    Equations (c₁: how much the prompts' true gradients disagree; c₂: the within-group
    noise with an oracle baseline; c₃: the cost of estimating the baseline from the group):

    - ``form="exact"`` (the default; ch. 02's leave-one-out algebra, exact for every G ≥ 2):
      MSE(B, G) = c₁/B + c₂/(BG) + c₃/(BG(G − 1));
    - ``form="paper"`` (arXiv 2603.01162, Prop. 3): c₁/B + c₂/(BG) + c₃/(BG²), the exact
      form's leading order, since 1/(G(G − 1)) = 1/G² + O(1/G³); a factor 2 low at G = 2.

    Both describe an estimator whose mean does not depend on G: RLOO, or GRPO's centring
    without the std division (Dr. GRPO) up to its constant (G − 1)/G, with a loss
    normaliser that does not depend on G. The model implies c₃ ≥ c₁ + ‖∇J‖².

    G must be ≥ 2: a group of one has no baseline. GRPO's advantage r − r̄ is then 0, its
    gradient is 0 and its error is ‖∇J‖², which neither form describes.

    Derived in: book/theory/02-baseline-variance.md, "The minibatch form and G*".
    """
    B = as_group_size(B, "B", maximum=MAX_COUNT)
    G = _baseline_group_size(G)
    c1, c2, c3 = (as_nonnegative(c, n) for c, n in ((c1, "c1"), (c2, "c2"), (c3, "c3")))
    form = as_choice(form, "form", MSE_FORMS)
    last = G * (G - 1.0) if form == "exact" else G * G * 1.0
    with np.errstate(over="ignore"):
        mse = c1 / B + c2 / (B * G) + c3 / (B * last)
    return scalar_or_array(finite_result(
        mse, "c1, c2, c3: the MSE overflows float64; rescale the variances"))


def _baseline_group_size(G) -> np.ndarray:
    """G as an int64 array in [2, MAX_GROUP_SIZE]; G = 1 is refused with the reason."""
    arr = as_real_array(G, "G", expected=f"an integer in [2, {MAX_GROUP_SIZE}]")
    if (arr == 1).any():
        raise ValueError("G must be >= 2: at G = 1 a group has no baseline; GRPO's advantage "
                         "r - mean(r) is 0, so the gradient is 0 and its error is |grad J|^2, "
                         "not c1 + c2 + c3")
    return as_group_size(G, minimum=2)


def optimal_group_size(c1, c3, *, form: str = "exact"):
    """The G that minimises :func:`minibatch_gradient_mse` at a fixed budget N = B·G.

    Equations, substituting B = N/G:

    - ``form="exact"`` (the default): N·MSE = c₁G + c₂ + c₃/(G − 1); its derivative
      c₁ − c₃/(G − 1)² vanishes at G* = 1 + √(c₃/c₁);
    - ``form="paper"``: N·MSE = c₁G + c₂ + c₃/G, minimised at G* = √(c₃/c₁)
      (arXiv 2603.01162, Thm. 7): one less than the exact optimum, for every c.

    Neither depends on N. Real-valued: the best integer G is ⌊G*⌋ or ⌈G*⌉. The model
    implies c₃ ≥ c₁ + ‖∇J‖², so the exact G* exceeds 2; a G* below 2 raises a
    :class:`GroupSizeWarning` (for the exact form it means c₃ < c₁: constants that
    contradict the model, not a small optimum).

    Derived in: book/theory/02-baseline-variance.md, "The minibatch form and G*".
    """
    c1 = as_nonnegative(c1, "c1")
    c3 = as_nonnegative(c3, "c3")
    form = as_choice(form, "form", MSE_FORMS)
    if (c1 == 0).any():
        raise ValueError("c1 must be > 0: with no across-prompt variance G* is unbounded")
    with np.errstate(over="ignore"):
        root = np.sqrt(c3 / c1)
    g_star = finite_result(1.0 + root if form == "exact" else root,
                           "c1, c3: c3/c1 overflows float64; rescale the variances")
    if (np.asarray(g_star) < 2).any():
        low = float(np.min(g_star))
        why = ("c3 < c1 contradicts the model, which implies c3 >= c1 + |grad J|^2 (so G* > 2)"
               if form == "exact" else "c3 < 4 c1: the smallest group with a baseline, G = 2, "
               "is the feasible optimum")
        warnings.warn(f"G* = {low:.3g} < 2 ({form} form): {why}", GroupSizeWarning,
                      stacklevel=2)
    return scalar_or_array(g_star)

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


#: The Beta parameters a, b the Beta-prior forms accept: betaln stays finite on this range.
BETA_PARAMETER_RANGE = (1e-300, 1e300)


def _beta_moment(a, b, G, *, of_complement: bool):
    a = as_positive(a, "a", *BETA_PARAMETER_RANGE, what="a Beta parameter")
    b = as_positive(b, "b", *BETA_PARAMETER_RANGE, what="a Beta parameter")
    G = as_group_size(G)
    if of_complement:  # E[(1−p)^G] = B(a, b+G) / B(a, b)
        moment = np.exp(special.betaln(a, b + G) - special.betaln(a, b))
    else:
        moment = np.exp(special.betaln(a + G, b) - special.betaln(a, b))  # E[p^G]
    moment = np.asarray(moment)
    return np.minimum(moment, 1.0, out=moment)  # rounding in betaln must not pass 1


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
    p = as_probability(pass_rates, "pass_rates").ravel()
    if p.size == 0:
        raise ValueError("pass_rates must hold at least one pass rate")
    G = as_group_size(G)
    if p.size * G.size > MAX_DRAWS:
        raise ValueError(f"pass_rates × G: {p.size} × {G.size} cells exceed {MAX_DRAWS:.0e}; "
                         "pass fewer pass rates or group sizes")
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


# --------------------------------------------------------------------------------------
# Advantages for binary rewards                Derived in: book/theory/06-normalization.md
# --------------------------------------------------------------------------------------
def binary_advantages(k, G, *, baseline: str = "mean", ddof: int = 1, scale: str = "group",
                      eps: float = 1e-4):
    """Advantages of a correct and an incorrect completion when k of G are correct.

    Mean baseline (GRPO): r̄ = k/G, so A⁺ = (1 − k/G)/(s + ε) and A⁻ = −(k/G)/(s + ε),
    with s² = (G/(G − ddof)) · (k/G)(1 − k/G).
    Leave-one-out (RLOO): A⁺ = (G − k)/(G − 1), A⁻ = −k/(G − 1) before scaling.
    ``scale="none"`` skips the division by s + ε (Dr. GRPO).

    Example: G = 4, k = 1 gives A⁺ = 1.5 with ddof = 1 and 1.73 with ddof = 0 (ε → 0).

    Returns ``(A_correct, A_incorrect)``; both are 0 when k = 0 or k = G.

    Derived in: book/theory/06-normalization.md, "Binary rewards in closed form".
    """
    G = as_group_size(G)
    k = as_integer_array(k, "k", minimum=0, maximum=MAX_GROUP_SIZE)
    if (k > G).any():
        raise ValueError("k must lie in [0, G]: k correct completions out of G")
    ddof = as_ddof(ddof)
    scale = as_choice(scale, "scale", ("group", "none"))
    baseline = as_choice(baseline, "baseline", ("mean", "leave_one_out"))
    eps = as_real_scalar(eps, "eps")
    q = k / G
    if baseline == "mean":
        a_pos, a_neg = 1.0 - q, -q
    else:
        if (G < 2).any():
            raise ValueError("G must be >= 2 for the leave-one-out baseline")
        a_pos, a_neg = (G - k) / (G - 1), -k / (G - 1)
    if scale == "group":
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(G - ddof > 0, G / np.maximum(G - ddof, 1) * q * (1 - q), 0.0)
            s = np.sqrt(var) + eps  # s = 0 only for k = 0 or G, which are set to 0 below
            a_pos, a_neg = a_pos / s, a_neg / s
    degenerate = (k == 0) | (k == G)
    a_pos = np.where(degenerate, 0.0, a_pos)
    a_neg = np.where(degenerate, 0.0, a_neg)
    return scalar_or_array(a_pos), scalar_or_array(a_neg)


# --------------------------------------------------------------------------------------
# The cost of G                                Derived in: book/theory/04-cost-of-g.md
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SamplingCost:
    """Work per GRPO step for a batch of prompts, each sampled G times.

    Attributes:
        completions: prompts × G, the effective batch.
        prompt_tokens_encoded: prompt tokens run through the model (prefill).
        generated_tokens: completion tokens decoded.
        kv_cache_tokens: token positions held in the KV cache at the end of sampling.
    """

    completions: np.ndarray
    prompt_tokens_encoded: np.ndarray
    generated_tokens: np.ndarray
    kv_cache_tokens: np.ndarray

    @property
    def total_tokens(self) -> np.ndarray:
        """Prefill plus decode tokens: the forward-pass work of sampling."""
        return self.prompt_tokens_encoded + self.generated_tokens


def sampling_cost(prompts, G, prompt_length, completion_length, *, share_prompt_kv: bool = True):
    """Completions and tokens of one sampling step.

    Equations (B prompts, prompt length L_p, completion length L_c):

    - completions = B · G (the effective batch; cost ∝ G at fixed B);
    - decode tokens = B · G · L_c;
    - prefill tokens = B · L_p with a shared prompt KV cache, B · G · L_p without;
    - KV-cache positions = B · (L_p + G · L_c) shared, B · G · (L_p + L_c) unshared.

    Derived in: book/theory/04-cost-of-g.md, "Sharing the prompt's KV cache".
    """
    B = as_nonnegative(prompts, "prompts", maximum=MAX_COUNT)
    G = as_group_size(G)
    Lp = as_nonnegative(prompt_length, "prompt_length", maximum=MAX_COUNT)
    Lc = as_nonnegative(completion_length, "completion_length", maximum=MAX_COUNT)
    share_prompt_kv = as_flag(share_prompt_kv, "share_prompt_kv")
    completions = B * G
    prefill = B * Lp if share_prompt_kv else B * G * Lp
    kv = B * (Lp + G * Lc) if share_prompt_kv else B * G * (Lp + Lc)
    return SamplingCost(
        completions=completions * np.ones_like(prefill),
        prompt_tokens_encoded=prefill,
        generated_tokens=B * G * Lc,
        kv_cache_tokens=kv,
    )


def fixed_budget_prompts(budget, G):
    """Prompts per step when the completions per step are held at ``budget``.

    Equation: B = budget / G (rounded down); the effective batch B · G stays ≈ budget.

    Derived in: book/theory/04-cost-of-g.md, "A fixed budget".
    """
    budget = as_nonnegative(budget, "budget", maximum=MAX_COUNT)  # so B fits in int64
    G = as_group_size(G)
    prompts = np.floor(budget / G).astype(np.int64)
    return int(prompts) if prompts.ndim == 0 else prompts


# --------------------------------------------------------------------------------------
# Temperature and diversity                    Derived in: book/theory/07-temperature.md
# --------------------------------------------------------------------------------------
def identical_group_probability(probs, G):
    """Probability that G i.i.d. samples from a categorical distribution are all the same.

    Equation: P(all identical) = Σ_j q_j^G over outcomes j. For a policy whose top
    answer has probability m this is ≥ m^G; at low temperature m → 1 and the group
    collapses to one answer, so its rewards are constant.

    ``probs`` has the outcomes on its last axis; each row must sum to 1.

    Derived in: book/theory/07-temperature.md, "When a group collapses".
    """
    q = as_probability(probs, "probs")
    if q.ndim == 0 or not np.allclose(q.sum(axis=-1), 1.0, atol=1e-6):
        raise ValueError("probs must be a distribution over its last axis (rows summing to 1)")
    G = as_group_size(G)
    return scalar_or_array(np.sum(_power(q[..., None, :], G[..., None]), axis=-1)
                           if G.ndim else np.sum(_power(q, G), axis=-1))


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


def pass_at_k(n, c, k):
    """Unbiased estimate of pass@k from c correct answers among n samples of one prompt.

    Equation: pass@k = 1 − C(n − c, k) / C(n, k)   (Chen et al. 2021, arXiv 2107.03374, §2.1).

    It is the chance that k of the n samples, drawn without replacement, include a correct
    one, so for i.i.d. samples of pass rate p its expectation is 1 − (1 − p)^k exactly:
    :func:`any_success_probability` (p, G) is pass@G. The all-fail half of
    :func:`unbiased_zero_variance_estimate`, C(n − c, G)/C(n, G), is 1 − pass_at_k(n, c, G).

    Broadcasts over n, c and k; computed as −expm1(log C(n−c, k) − log C(n, k)), so a tiny
    pass@k keeps its relative accuracy. Exact at the edges: 0 when c = 0, 1 when
    n − c < k (every k-subset holds a success), c/n when k = 1. Needs 1 ≤ k ≤ n.

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
    log_ratio = _log_comb(n - c, k) - _log_comb(n, k)
    with np.errstate(invalid="ignore"):
        est = -np.expm1(log_ratio)
    est = np.where(k == 1, c / n, est)
    est = np.where(c == 0, 0.0, np.where(n - c < k, 1.0, est))
    return scalar_or_array(np.clip(est, 0.0, 1.0))

