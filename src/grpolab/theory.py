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
    "KL_ESTIMATORS",
    "KL_PLACEMENTS",
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
    "beta_pass_at_k",
    "beta_zero_variance_probability",
    "binary_advantages",
    "categorical_kl",
    "clip_ratio_ceiling",
    "dynamic_sampling_cap_probability",
    "dynamic_sampling_expected_batches",
    "dynamic_sampling_expected_completions",
    "dynamic_sampling_expected_groups",
    "empirical_zero_variance_probability",
    "entropy",
    "entropy_change_first_order",
    "entropy_gradient",
    "entropy_hessian",
    "expected_entropy_change",
    "expected_informative_prompts",
    "expected_pass_at_k",
    "fixed_budget_prompts",
    "gradient_variance_inflation",
    "identical_group_probability",
    "informative_per_completion",
    "informative_probability",
    "kl_estimator_moments",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_penalty_gradient",
    "loo_gradient_covariance",
    "mean_baseline_gradient_mse",
    "minibatch_gradient_mse",
    "optimal_group_size",
    "pass_at_k",
    "pass_at_k_crossing",
    "rloo_scale_factor",
    "sampling_cost",
    "sharpened_pass_rate",
    "std_scaled_gradient_factor",
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


#: Where :func:`_log_rising` switches from a difference of gammaln values to Stirling's series.
_STIRLING_FROM = 100.0


def _stirling_tail(z: np.ndarray) -> np.ndarray:
    """log Γ(z) − [(z − ½) log z − z + ½ log 2π] = 1/(12z) − 1/(360z³) + 1/(1260z⁵) − 1/(1680z⁷);
    the next term is below 1e-21 for z ≥ 100."""
    r = np.reciprocal(np.array(z, dtype=float, ndmin=1))
    r2 = r * r
    t = r2 * (1 / 1680)  # in place: this runs on every entry of a 10⁶-cell grid
    np.subtract(1 / 1260, t, out=t)
    t *= r2
    np.subtract(1 / 360, t, out=t)
    t *= r2
    np.subtract(1 / 12, t, out=t)
    t *= r
    return t.reshape(np.shape(z))


def _log_rising(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """R(x, s) = log Γ(x + s) − log Γ(x) for x > 0, s ≥ 0.

    Below :data:`_STIRLING_FROM` the difference of two gammaln values; above it the two
    Stirling expansions subtracted term by term, whose leading parts combine without
    cancellation: (x − ½)·log1p(s/x) + s·log(x + s) − s + tail(x + s) − tail(x).
    """
    x, s = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(s, dtype=float))

    def direct(x, s):
        return special.gammaln(x + s) - special.gammaln(x)

    def stirling(x, s):
        y = x + s
        return ((x - 0.5) * np.log1p(s / x) + s * np.log(y) - s + _stirling_tail(y)
                - _stirling_tail(x))

    return _by_size(x, (x, s), direct, stirling)


def _by_size(x, args, small, large):
    """``small(*args)`` where x < :data:`_STIRLING_FROM`, ``large(*args)`` elsewhere; each
    form is evaluated only on its own entries (the other could overflow there)."""
    big = x >= _STIRLING_FROM
    if not big.any():
        return small(*args)
    if big.all():
        return large(*args)
    out = np.empty(x.shape)
    out[~big] = small(*(a[~big] for a in args))
    out[big] = large(*(a[big] for a in args))
    return out


def _log_rising_difference(x, s, d) -> np.ndarray:
    """R(x, s) − R(x + d, s), with R of :func:`_log_rising`, accurate to a few ulps of itself.

    Subtracting two R values cancels when x ≫ s, d (at x = 1e17 each is ~s·39 while their
    difference is ~−s·d/x). For x ≥ :data:`_STIRLING_FROM` the Stirling forms are
    subtracted symbolically instead: with log1p(s/x) − log1p(s/(x + d)) =
    log1p((s/x)·d/(x + d + s)),

        (x − ½)·log1p((s/x)·d/(x + d + s)) − d·log1p(s/(x + d)) − s·log1p(d/(x + s))
        + tail(x + s) − tail(x) − tail(x + d + s) + tail(x + d),

    three terms of the size of the result (no cancellation) and a tiny second difference.
    """
    x, s, d = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(s, dtype=float),
                                  np.asarray(d, dtype=float))

    def direct(x, s, d):
        return _log_rising(x, s) - _log_rising(x + d, s)

    def stirling(x, s, d):
        return ((x - 0.5) * np.log1p(s / x * (d / (x + d + s))) - d * np.log1p(s / (x + d))
                - s * np.log1p(d / (x + s)) + _stirling_tail(x + s) - _stirling_tail(x)
                - _stirling_tail(x + d + s) + _stirling_tail(x + d))

    return _by_size(x, (x, s, d), direct, stirling)


def _beta_moment(a, b, G, *, of_complement: bool):
    """E[p^G] (or E[(1 − p)^G]) for p ~ Beta(a, b), in log space and without cancellation.

    E[p^G] = B(a + G, b)/B(a, b) = Γ(a + G)Γ(a + b) / (Γ(a)Γ(a + b + G)), which can be
    grouped two ways: R(a, G) − R(a + b, G) or R(a, b) − R(a + G, b), with
    R(x, s) = log Γ(x + s) − log Γ(x). The grouping with step s = min(G, b) and shift
    d = max(G, b) keeps every term small, and :func:`_log_rising_difference` takes the
    difference without cancellation, so the result stays right for any a, b in range: at
    a = b = 1e17 and G = 3 it is 1/8 (as a, b → ∞ with a/(a + b) = m, E[p^G] → m^G), not
    the 1.0 that differences of betaln values gave.
    """
    a = as_positive(a, "a", *BETA_PARAMETER_RANGE, what="a Beta parameter")
    b = as_positive(b, "b", *BETA_PARAMETER_RANGE, what="a Beta parameter")
    G = as_group_size(G).astype(float)
    x, other = (b, a) if of_complement else (a, b)  # E[(1−p)^G] is E[q^G] for q ~ Beta(b, a)
    # Fast path while every argument is below 1000: scipy's betaln loses about eps·max(a, b)
    # (2e-11 at 1000, 4e-7 at 1e8), so beyond that the general path takes over.
    with np.errstate(all="ignore"):  # entries outside the fast path are replaced below
        log_moment = np.asarray(special.betaln(x + G, other) - special.betaln(x, other))
    slow = (x + np.maximum(G, other)) >= _BETALN_EXACT_BELOW
    if slow.any():
        xs, gs, os_ = (np.broadcast_to(v, slow.shape)[slow] for v in (x, G, other))
        log_moment = np.array(np.broadcast_to(log_moment, slow.shape))
        log_moment[slow] = _log_rising_difference(xs, np.minimum(gs, os_), np.maximum(gs, os_))
    return np.asarray(np.exp(np.minimum(log_moment, 0.0)))  # rounding must not pass 1


#: Below this, log B(x + G, y) − log B(x, y) is taken as a plain difference of betaln values.
_BETALN_EXACT_BELOW = 1000.0


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


def _pass_rates_by_group_size(pass_rates, G) -> tuple[np.ndarray, np.ndarray]:
    """Checked pass rates (flat, at least one) and group sizes for a (prompt × G) grid whose
    size stays within MAX_DRAWS cells."""
    p = as_probability(pass_rates, "pass_rates").ravel()
    if p.size == 0:
        raise ValueError("pass_rates must hold at least one pass rate")
    G = as_group_size(G)
    if p.size * G.size > MAX_DRAWS:
        raise ValueError(f"pass_rates × G: {p.size} × {G.size} cells exceed {MAX_DRAWS:.0e}; "
                         "pass fewer pass rates or group sizes")
    return p, G


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


# ---- ch. 08–10: policy gradients, loss aggregation, DAPO

__all__ += [
    "clipped_probability_bound",
    "critic_budget_mse",
    "gae_advantages",
    "group_budget_mse",
    "informative_share",
    "loss_token_weights",
    "mean_policy_lag",
    "optimal_constant_baseline",
    "reinforce_second_moment",
    "sequence_importance_ratio",
    "soft_overlong_penalty",
    "softmax_policy_gradient",
    "truncated_zero_variance_probability",
    "updates_per_rollout",
]

#: Largest |logit|, |reward| or |baseline| the softmax-policy forms accept (their squares stay
#: finite in float64).
_TOY_LIMIT = 1e100
#: Most actions of a softmax policy, and most tokens or completions in one call.
_MAX_ACTIONS = 100_000
_MAX_ITEMS = 10**7


def _vector(x, name: str, *, expected: str, limit: float = _TOY_LIMIT,
            maximum_size: int = _MAX_ACTIONS, minimum_size: int = 1) -> np.ndarray:
    """A 1-d array of finite reals with |x| <= limit, or an error that names ``name``."""
    arr = as_real_array(x, name, expected=expected)
    if arr.ndim != 1 or not minimum_size <= arr.size <= maximum_size:
        raise ValueError(f"{name} must be {expected}, got shape {arr.shape}")
    bad = ~(np.abs(arr) <= limit)  # NaN fails the comparison
    if bad.any():
        raise ValueError(f"{name} must be {expected} of size <= {limit:g}, got "
                         f"{float(arr[bad][0])!r}")
    return arr + 0.0


def _softmax_policy(logits, rewards) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """π = softmax(logits), the rewards r, and ‖e_j − π‖² for every action j."""
    z = _vector(logits, "logits", expected="a list of at least 2 finite logits",
                minimum_size=2)
    r = _vector(rewards, "rewards", expected=f"{z.size} finite rewards (one per action)")
    if r.size != z.size:
        raise ValueError(f"rewards must hold one reward per action: {z.size} logits, "
                         f"{r.size} rewards")
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    # ‖e_j − π‖² = (1 − π_j)² + Σ_{k≠j} π_k², summed without cancellation.
    others = np.maximum(np.sum(pi**2) - pi**2, 0.0)
    return pi, r, (1.0 - pi) ** 2 + others


def softmax_policy_gradient(logits, rewards):
    """The exact policy gradient of a one-step softmax policy, by the score-function identity.

    Equation: ∇J = E_π[r ∇log π(a)]; for π = softmax(z) the score is ∇_z log π(a) = e_a − π,
    so ∇_z J = Σ_a π_a r_a (e_a − π) = π ⊙ (r − π·r). Subtracting any baseline b from r
    leaves it unchanged, because Σ_a π_a (e_a − π) = 0.

    Returns one component per logit.

    Derived in: book/theory/08-reinforce-to-grpo.md, "The score-function identity".
    """
    pi, r, _ = _softmax_policy(logits, rewards)
    return pi * (r - pi @ r)


def reinforce_second_moment(logits, rewards, baseline=0.0, baseline_variance=0.0):
    """Second moment of one REINFORCE gradient sample (r − b)(e_a − π) of a softmax policy.

    The baseline b is drawn independently of the sampled action, with mean ``baseline`` and
    variance ``baseline_variance`` (0 for a constant; σ²/(G − 1) for the leave-one-out mean
    of G − 1 other rewards, with mean μ; a critic's squared error for a learned value).

    Equation: E‖(r − b)∇log π‖² = Σ_a π_a [(r_a − b̄)² + Var(b)] ‖e_a − π‖². The mean of the
    sample is ∇J whatever b is (:func:`softmax_policy_gradient`); only this moment moves.

    Derived in: book/theory/08-reinforce-to-grpo.md, "A baseline changes the variance".
    """
    pi, r, score_sq = _softmax_policy(logits, rewards)
    b = as_real_scalar(baseline, "baseline", minimum=-_TOY_LIMIT, maximum=_TOY_LIMIT)
    v = as_real_scalar(baseline_variance, "baseline_variance", maximum=1e200)
    return float(pi @ (((r - b) ** 2 + v) * score_sq))


def optimal_constant_baseline(logits, rewards):
    """The constant baseline that minimises :func:`reinforce_second_moment` (a softmax policy).

    Equation: b* = E[r ‖∇log π‖²] / E[‖∇log π‖²] = Σ_a π_a r_a ‖e_a − π‖² / Σ_a π_a ‖e_a − π‖²:
    the mean reward μ only when the reward is uncorrelated with the score's size. For two
    actions with π = (p, 1 − p) and r = (1, 0) it is 1 − p, not p.

    Derived in: book/theory/08-reinforce-to-grpo.md, "A baseline changes the variance".
    """
    pi, r, score_sq = _softmax_policy(logits, rewards)
    weight = pi * score_sq
    total = weight.sum()
    if not total > 0:
        raise ValueError("logits put all the probability on one action: every score is 0, so "
                         "no baseline changes the (zero) gradient")
    return float(weight @ r / total)


def gae_advantages(rewards, values, gamma=1.0, lam=1.0):
    """Generalized advantage estimates of one trajectory (PPO's critic-based advantages).

    With δ_t = r_t + γ V(s_{t+1}) − V(s_t) and V(s_T) = 0 after the last token,

    Equation: A_t = Σ_{l ≥ 0} (γλ)^l δ_{t+l}. With a reward only on the last token and
    γ = λ = 1 it is R − V(s_t): a different baseline per token, where GRPO gives every token
    of a completion the same advantage.

    ``rewards`` and ``values`` hold one number per token.

    Derived in: book/theory/08-reinforce-to-grpo.md, "PPO's critic and GAE".
    """
    r = _vector(rewards, "rewards", expected="one finite reward per token",
                maximum_size=_MAX_ACTIONS)
    v = _vector(values, "values", expected="one finite value estimate per token",
                maximum_size=_MAX_ACTIONS)
    if v.size != r.size:
        raise ValueError(f"values must hold one value per token: {r.size} rewards, "
                         f"{v.size} values")
    gamma = as_real_scalar(gamma, "gamma", maximum=1.0)
    lam = as_real_scalar(lam, "lam", maximum=1.0)
    delta = r + gamma * np.append(v[1:], 0.0) - v
    out = np.empty_like(delta)
    running = 0.0
    for t in range(delta.size - 1, -1, -1):  # A_t = δ_t + γλ A_{t+1}
        running = delta[t] + gamma * lam * running
        out[t] = running
    return out


def _mse_constants(c1, c2, budget):
    c1 = as_nonnegative(c1, "c1", maximum=1e300)
    c2 = as_nonnegative(c2, "c2", maximum=1e300)
    N = as_positive(budget, "budget", 1.0, float(MAX_COUNT), what="completions per step")
    return c1, c2, N


def critic_budget_mse(c1, c2, critic_cost, critic_error, budget):
    """Gradient MSE of a critic-based estimator at a fixed compute budget.

    One completion per prompt; a critic whose compute per token is ``critic_cost`` times the
    policy's and whose baseline has squared error ``critic_error`` × σ² (the prompt's reward
    variance). With B = N/(1 + c) prompts and the closure ‖∇J‖² ≪ c₁ of ch. 08,

    Equation: MSE_critic = (1 + c)(1 + e)(c₁ + c₂)/N, in the units of c₁, c₂ of ch. 02.

    Derived in: book/theory/08-reinforce-to-grpo.md, "Why no critic? A critic against G samples".
    """
    c1, c2, N = _mse_constants(c1, c2, budget)
    c = as_nonnegative(critic_cost, "critic_cost", maximum=1e6)
    e = as_nonnegative(critic_error, "critic_error", maximum=1e6)
    with np.errstate(over="ignore"):
        mse = (1 + c) * (1 + e) * (c1 + c2) / N
    return scalar_or_array(finite_result(
        mse, "c1, c2: the MSE overflows float64; rescale the variances"))


def group_budget_mse(G, c1, c2, budget):
    """Gradient MSE of the leave-one-out group estimator at a fixed budget N = B·G.

    The exact form of ch. 02, N·MSE = c₁G + c₂ + c₃/(G − 1), with the same closure as
    :func:`critic_budget_mse` (κ = 1 and ‖∇J‖² ≪ c₁, which give c₃ = c₂ + 2c₁):

    Equation: MSE_group = [c₁G + c₂ + (c₂ + 2c₁)/(G − 1)] / N, for G ≥ 2.

    Derived in: book/theory/08-reinforce-to-grpo.md, "Why no critic? A critic against G samples".
    """
    G = as_group_size(G, minimum=2)
    c1, c2, N = _mse_constants(c1, c2, budget)
    with np.errstate(over="ignore"):
        mse = (c1 * G + c2 + (c2 + 2 * c1) / (G - 1.0)) / N
    return scalar_or_array(finite_result(
        mse, "c1, c2: the MSE overflows float64; rescale the variances"))


LOSS_TYPES = ("grpo", "bnpo", "dapo", "dr_grpo")


def loss_token_weights(lengths, loss_type="dapo", max_completion_length=None):
    """The weight each token of each completion gets in TRL's loss, per ``loss_type``.

    A batch of n completions with |o_i| loss tokens each (one generation batch, one
    optimizer step; TRL 1.16 ``GRPOTrainer._compute_loss``):

    Equation: w_i = 1/(n·|o_i|) (grpo), 1/Σ_j|o_j| (bnpo, dapo), 1/(n·L_max) (dr_grpo,
    L_max = ``max_completion_length``). A completion's share of the step is |o_i|·w_i: equal
    for grpo, proportional to its length for the others.

    Zero-variance groups count in n and in Σ|o_j| although their advantages are 0.

    Derived in: book/theory/09-loss-aggregation.md, "Four ways to average the tokens".
    """
    L = as_integer_array(lengths, "lengths", minimum=0, maximum=10**9)
    if L.ndim != 1 or not 1 <= L.size <= _MAX_ITEMS:
        raise ValueError(f"lengths must be a list of token counts, one per completion, got "
                         f"shape {L.shape}")
    loss_type = as_choice(loss_type, "loss_type", LOSS_TYPES)
    n = float(L.size)
    Lf = L.astype(float)
    if loss_type == "grpo":
        return 1.0 / (n * np.maximum(Lf, 1.0))   # TRL clamps an empty completion's length at 1
    if loss_type in ("bnpo", "dapo"):
        return np.full(L.shape, 1.0 / max(float(Lf.sum()), 1.0))
    if max_completion_length is None:
        raise ValueError("max_completion_length is required for loss_type='dr_grpo' (its "
                         "constant denominator)")
    L_max = as_positive_int(max_completion_length, "max_completion_length", maximum=10**9)
    if (L > L_max).any():
        raise ValueError(f"lengths must be <= max_completion_length = {L_max}: generation "
                         "stops there")
    return np.full(L.shape, 1.0 / (n * L_max))


def informative_share(pass_rates, G):
    """Expected share of a step's loss normaliser that carries an advantage.

    Every TRL ``loss_type`` averages over the whole batch, zero-variance groups included, so
    a realised step is this share times the step over informative groups alone. With
    completion lengths independent of the rewards, for prompts drawn from the listed pass rates,

    Equation: s(G) = (1/J) Σ_j [1 − p_j^G − (1 − p_j)^G], which rises with G. It does not
    scale the expected step: without std division E[ĝ] = ((G − 1)/G) ∇J for any share, since
    an informative group's gradient is larger by 1/η on average; the share sets the noise.

    Derived in: book/theory/09-loss-aggregation.md, "How G enters the normaliser".
    """
    p, G = _pass_rates_by_group_size(pass_rates, G)
    eta = np.asarray(informative_probability(p[:, None], G.reshape(1, -1)))
    return scalar_or_array(eta.mean(axis=0).reshape(G.shape))


def sequence_importance_ratio(log_ratio_sum, length):
    """GSPO's sequence-level importance ratio of one completion.

    Equation: s_i = (π_θ(o_i)/π_old(o_i))^{1/|o_i|} = exp((1/|o_i|) Σ_t log ρ_{i,t}), the
    geometric mean of the token ratios ρ_{i,t}; TRL computes it with
    ``importance_sampling_level="sequence"``. Clipping s_i clips whole completions.

    Derived in: book/theory/09-loss-aggregation.md, "GSPO: one ratio per sequence".
    """
    s = as_real_array(log_ratio_sum, "log_ratio_sum", expected="a finite sum of log-ratios")
    if not np.isfinite(s).all():
        raise ValueError("log_ratio_sum must be a finite sum of log-ratios")
    n = as_integer_array(length, "length", minimum=1, maximum=10**9)
    with np.errstate(over="ignore"):
        ratio = np.exp(s / n)
    return scalar_or_array(finite_result(
        ratio, "log_ratio_sum / length: the ratio overflows float64 (a mean log-ratio > 709)"))


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


# --------------------------------------------------------------------------------------
# KL estimators and their gradients             Derived in: book/theory/12-kl.md
# --------------------------------------------------------------------------------------
def _log_ratio(log_ratio) -> np.ndarray:
    x = as_real_array(log_ratio, "log_ratio")
    if not np.isfinite(x).all() or (np.abs(x) > 700).any():
        raise ValueError("log_ratio must be finite, |log_ratio| <= 700 (log π_ref − log π per "
                         "sample); a larger one overflows exp")
    return x


def kl_k1(log_ratio):
    """Schulman's k1 estimate of KL(π ‖ π_ref) from one sample x ~ π.

    Equation: k1 = −log r, r = π_ref(x)/π(x) (``log_ratio`` = log π_ref(x) − log π(x)).
    Unbiased, since E_π[−log r] = KL(π ‖ π_ref), but negative for every sample that π_ref
    likes more than π, so its variance is large when the two are close.

    Derived in: book/theory/12-kl.md, "Three estimators".
    """
    return scalar_or_array(-_log_ratio(log_ratio))


def kl_k2(log_ratio):
    """Schulman's k2 estimate of KL(π ‖ π_ref): half the squared log ratio.

    Equation: k2 = (log r)²/2 ≥ 0. Biased: E_π[k2] = KL + O(KL^(3/2)), with low variance.

    Derived in: book/theory/12-kl.md, "Three estimators".
    """
    x = _log_ratio(log_ratio)
    return scalar_or_array(0.5 * x * x)


#: Below this |x|, e^x − 1 − x is summed as its Taylor series (24 terms: below 1e−17 of it).
_SERIES_BELOW = 0.5


def _expm1_minus_x(x: np.ndarray) -> np.ndarray:
    """e^x − 1 − x to float precision for every x.

    expm1(x) − x cancels for small |x| (both ≈ x, the difference ≈ x²/2): at x = 1e−9 it
    is wrong from the 7th digit, at 1e−12 from the 5th. There the series
    x²/2 · (1 + x/3 · (1 + x/4 · (1 + …))) is summed instead; for |x| ≥ 1/2 the difference
    loses at most 3 bits, since there e^x − 1 − x ≥ 0.14·|expm1(x)|.
    """
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < _SERIES_BELOW
    xs = np.where(small, x, 0.0)
    nested = np.ones_like(xs)
    for n in range(26, 2, -1):
        nested = 1.0 + xs / n * nested
    xl = np.where(small, 0.0, x)
    return np.maximum(np.where(small, xs * xs / 2 * nested, np.expm1(xl) - xl), 0.0)


def kl_k3(log_ratio):
    """Schulman's k3 estimate of KL(π ‖ π_ref): the one GRPO puts in its loss.

    Equation: k3 = (r − 1) − log r ≥ 0, computed as expm1(log r) − log r, or as its series
    where that difference cancels (:func:`_expm1_minus_x`). Unbiased, because
    E_π[r] = 1 adds a zero-mean control variate to k1, and low-variance near π = π_ref.

    Derived in: book/theory/12-kl.md, "Three estimators".
    """
    x = _log_ratio(log_ratio)
    return scalar_or_array(_expm1_minus_x(x))


def _distribution_pair(probs, ref_probs) -> tuple[np.ndarray, np.ndarray]:
    pi = as_probability(probs, "probs")
    ref = as_probability(ref_probs, "ref_probs")
    if pi.ndim != 1 or pi.shape != ref.shape or pi.size < 2:
        raise ValueError("probs and ref_probs must be two distributions over the same "
                         f"outcomes (1-D, >= 2 entries), got shapes {pi.shape} and {ref.shape}")
    for q, name in ((pi, "probs"), (ref, "ref_probs")):
        if not np.isclose(q.sum(), 1.0, atol=1e-6):
            raise ValueError(f"{name} must sum to 1, got {q.sum():.6g}")
    if ((pi > 0) & (ref == 0)).any():
        raise ValueError("ref_probs must be > 0 wherever probs is: KL(π ‖ π_ref) is infinite")
    return pi, ref


def categorical_kl(probs, ref_probs):
    """KL(π ‖ π_ref) of two categorical distributions, the quantity k1, k2, k3 estimate.

    Equation: KL(π ‖ π_ref) = Σ_x π(x) log(π(x)/π_ref(x)) (0 log 0 = 0).

    Derived in: book/theory/12-kl.md, "Three estimators".
    """
    pi, ref = _distribution_pair(probs, ref_probs)
    on = pi > 0
    return float(np.sum(pi[on] * (np.log(pi[on]) - np.log(ref[on]))))


KL_ESTIMATORS = ("k1", "k2", "k3")


def kl_estimator_moments(probs, ref_probs, estimator: str = "k3"):
    """Exact mean and variance of one sample of a KL estimator, x ~ π, for categorical π.

    Equations: E_π[k] = Σ_x π(x) k(r(x)), Var_π[k] = Σ_x π(x) k(r(x))² − E_π[k]², with k one
    of :func:`kl_k1`, :func:`kl_k2`, :func:`kl_k3`. E[k1] = E[k3] = KL(π ‖ π_ref) exactly;
    E[k2] − KL is k2's bias. Returns ``(mean, variance)``.

    Derived in: book/theory/12-kl.md, "Bias and variance".
    """
    pi, ref = _distribution_pair(probs, ref_probs)
    estimator = as_choice(estimator, "estimator", KL_ESTIMATORS)
    on = pi > 0
    x = np.log(ref[on]) - np.log(pi[on])
    k = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}[estimator](x)
    k = np.atleast_1d(np.asarray(k, dtype=float))
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(np.sum(pi[on] * k))
        second = float(np.sum(pi[on] * k * k))
    finite_result(np.array([mean, second]), "probs, ref_probs: the estimator's second moment "
                  "overflows float64 (a ratio r beyond about 1e150)")
    return mean, float(max(second - mean * mean, 0.0))


KL_PLACEMENTS = ("reward_k1", "loss_k1", "loss_k2", "loss_k3", "loss_k3_ratio")


def kl_penalty_gradient(logits, ref_logits, placement: str = "loss_k3"):
    """Expected gradient, with respect to a softmax policy's logits, of a KL penalty as it is
    placed in training, on-policy (samples x ~ π, not differentiated through).

    Equations, with π = softmax(z), r = π_ref/π and ∇_z log π(x) = e_x − π:

    - ``"reward_k1"`` (PPO-RLHF: −β k1 added to the reward, through the score function):
      E_π[k1 ∇log π] = ∇_z KL(π ‖ π_ref), component b: π_b (log(π_b/π_ref,b) − KL);
    - ``"loss_k1"``: E_π[∇k1] = E_π[∇log π] = 0, the penalty does nothing on average;
    - ``"loss_k2"``: E_π[∇k2] = E_π[log(π/π_ref) ∇log π] = ∇_z KL(π ‖ π_ref);
    - ``"loss_k3"`` (GRPO, DeepSeekMath): E_π[(1 − r)∇log π] = π − π_ref = ∇_z KL(π_ref ‖ π),
      the gradient of the *other* KL;
    - ``"loss_k3_ratio"`` (TRL's ``use_bias_correction_kl``: k3 times the differentiable
      ratio π/π_old, 1 in value): E_π[(k3 + 1 − r)∇log π] = ∇_z KL(π ‖ π_ref).

    Derived in: book/theory/12-kl.md, "What the gradient of each placement is".
    """
    z = as_real_array(logits, "logits")
    z_ref = as_real_array(ref_logits, "ref_logits")
    if z.ndim != 1 or z.shape != z_ref.shape or z.size < 2:
        raise ValueError("logits and ref_logits must be 1-D with the same >= 2 entries, got "
                         f"shapes {z.shape} and {z_ref.shape}")
    if not (np.isfinite(z).all() and np.isfinite(z_ref).all()) or max(
            np.abs(z).max(), np.abs(z_ref).max()) > 1e100:
        raise ValueError("logits and ref_logits must be finite numbers of size <= 1e100")
    placement = as_choice(placement, "placement", KL_PLACEMENTS)
    log_pi = z - special.logsumexp(z)
    log_ref = z_ref - special.logsumexp(z_ref)
    pi, ref = np.exp(log_pi), np.exp(log_ref)
    if placement == "loss_k1":
        return np.zeros_like(pi)
    if placement == "loss_k3":
        return pi - ref
    k1 = log_pi - log_ref                      # −log r, per outcome
    return pi * (k1 - float(np.sum(pi * k1)))  # reward_k1, loss_k2, loss_k3_ratio


# --------------------------------------------------------------------------------------
# Entropy of a softmax policy                   Derived in: book/theory/13-entropy.md
# --------------------------------------------------------------------------------------
def _softmax_probs(probs) -> np.ndarray:
    pi = as_probability(probs, "probs")
    if pi.ndim != 1 or pi.size < 2 or not np.isclose(pi.sum(), 1.0, atol=1e-6):
        raise ValueError("probs must be one distribution (1-D, >= 2 entries, summing to 1)")
    return pi


def entropy(probs):
    """Shannon entropy of a categorical policy, in nats.

    Equation: H(π) = −Σ_a π_a log π_a (0 log 0 = 0); 0 for a deterministic policy, log M for
    the uniform one over M outcomes. ``probs`` has the outcomes on its last axis.

    Derived in: book/theory/13-entropy.md, "Entropy and its gradient".
    """
    pi = as_probability(probs, "probs")
    if pi.ndim == 0 or not np.allclose(pi.sum(axis=-1), 1.0, atol=1e-6):
        raise ValueError("probs must be a distribution over its last axis (rows summing to 1)")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1.0)), 0.0)
    return scalar_or_array(np.maximum(-terms.sum(axis=-1), 0.0))


def entropy_gradient(probs):
    """Gradient of a softmax policy's entropy with respect to its logits.

    Equation: ∂H/∂z_b = −π_b (log π_b + H): raising the logit of an outcome more likely than
    e^(−H) lowers the entropy.

    Derived in: book/theory/13-entropy.md, "Entropy and its gradient".
    """
    pi = _softmax_probs(probs)
    H = float(entropy(pi))
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(pi > 0, np.log(np.where(pi > 0, pi, 1.0)), 0.0)
    return -pi * (logp + H)


def entropy_change_first_order(probs, logit_step):
    """First-order change of a softmax policy's entropy when its logits move by Δz.

    Equation: ΔH ≈ ∇H · Δz = −Cov_{a∼π}(log π_a, Δz_a). A step that raises the logits of
    already likely outcomes lowers the entropy; for the policy gradient Δz_a = η π_a A_a
    (Cui et al. write it with the advantage A).

    Derived in: book/theory/13-entropy.md, "Entropy and its gradient".
    """
    pi = _softmax_probs(probs)
    dz = as_real_array(logit_step, "logit_step")
    if dz.shape != pi.shape or not np.isfinite(dz).all() or (np.abs(dz) > 1e100).any():
        raise ValueError(f"logit_step must be finite numbers of size <= 1e100 with the shape "
                         f"of probs {pi.shape}")
    return float(entropy_gradient(pi) @ dz)


def entropy_hessian(probs):
    """Hessian of a softmax policy's entropy with respect to its logits.

    Equation: ∂²H/∂z_b∂z_c = −π_b(δ_bc − π_c)(log π_b + H + 1) + π_b π_c (log π_c + H).
    Negative definite (on logit steps that change π) near the uniform policy, where H is
    largest: a noisy step lowers the entropy on average.

    Derived in: book/theory/13-entropy.md, "Noise lowers the entropy".
    """
    pi = _softmax_probs(probs)
    H = float(entropy(pi))
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(pi > 0, np.log(np.where(pi > 0, pi, 1.0)), 0.0)
    jac = np.diag(pi) - np.outer(pi, pi)          # ∂π_b/∂z_c
    return -jac * (logp + H + 1.0)[:, None] + np.outer(pi, pi * (logp + H))


def loo_gradient_covariance(probs, rewards, G):
    """Covariance of one group's leave-one-out policy gradient, for a softmax policy.

    Equation: Cov(ĝ) = Σ/G + (σ² M + ∇J ∇Jᵀ)/(G(G − 1)), with ∇_z log π(a) = e_a − π,
    Σ = Cov[(r − μ)∇log π], M = E[∇log π ∇log πᵀ], σ² = Var(r), ∇J = E[r ∇log π]: the
    matrix form of ch. 02's trace tr Σ/G + (σ² E‖∇log π‖² + ‖∇J‖²)/(G(G − 1)).

    Derived in: book/theory/13-entropy.md, "Noise lowers the entropy".
    """
    pi = _softmax_probs(probs)
    r = as_real_array(rewards, "rewards")
    if r.shape != pi.shape or not np.isfinite(r).all() or (np.abs(r) > 1e100).any():
        raise ValueError(f"rewards must be finite numbers of size <= 1e100, one per outcome "
                         f"(shape {pi.shape})")
    G = as_group_size(G, minimum=2)
    if G.size != 1:
        raise ArgumentTypeError(f"G must be a single group size here, got shape {G.shape}")
    G = float(G.reshape(()))
    mu = float(pi @ r)
    sigma2 = float(pi @ (r - mu) ** 2)
    score = np.eye(pi.size) - pi                  # row a: ∇ log π(a)
    grad = score.T @ (pi * r)                     # ∇J
    weighted = (score * (pi * (r - mu) ** 2)[:, None]).T @ score   # E[(r−μ)² ∇∇ᵀ]
    sigma = weighted - np.outer(grad, grad)       # Cov[(r − μ)∇log π]
    m = (score * pi[:, None]).T @ score           # E[∇∇ᵀ]
    return sigma / G + (sigma2 * m + np.outer(grad, grad)) / (G * (G - 1))


def expected_entropy_change(probs, mean_step, step_covariance):
    """Expected change of a softmax policy's entropy under a random logit step, to second order.

    Equation: E[ΔH] ≈ ∇H·m + ½ (mᵀ ∇²H m + tr(∇²H C)), with m = E[Δz] and C = Cov(Δz).
    The last term is the noise's share: it does not depend on the direction of the mean
    step, and it shrinks as the step's covariance does (with G, through
    :func:`loo_gradient_covariance`).

    Derived in: book/theory/13-entropy.md, "Noise lowers the entropy".
    """
    pi = _softmax_probs(probs)
    m = as_real_array(mean_step, "mean_step")
    C = as_real_array(step_covariance, "step_covariance")
    if m.shape != pi.shape or C.shape != (pi.size, pi.size):
        raise ValueError(f"mean_step must have shape {pi.shape} and step_covariance "
                         f"{(pi.size, pi.size)}, got {m.shape} and {C.shape}")
    if not (np.isfinite(m).all() and np.isfinite(C).all()) or max(
            np.abs(m).max(), np.abs(C).max()) > 1e100:
        raise ValueError("mean_step and step_covariance must be finite numbers of size <= 1e100")
    hess = entropy_hessian(pi)
    with np.errstate(over="ignore", invalid="ignore"):
        out = entropy_gradient(pi) @ m + 0.5 * (m @ hess @ m + np.sum(hess * C))
    return float(finite_result(np.asarray(out), "mean_step, step_covariance: the change "
                                                "overflows float64; use a smaller step"))


def clip_ratio_ceiling(p_old, epsilon_high):
    """The probability past which a token with a positive advantage stops being pushed up by
    its own PPO-clipped term within one rollout's updates.

    Equation: π_stop = min(1, (1 + ε_high) π_old): past the ratio 1 + ε_high the token's own
    clipped term has no gradient. Not a bound: other tokens' terms and the shared softmax can
    carry it further. The headroom ε_high·π_old is tiny for the rare tokens exploration needs;
    DAPO's clip-higher raises ε_high from 0.2 to 0.28.

    Derived in: book/theory/13-entropy.md, "Clip-higher".
    """
    p = as_probability(p_old, "p_old")
    eps = as_nonnegative(epsilon_high, "epsilon_high", maximum=1e6)
    return scalar_or_array(np.minimum(1.0, (1.0 + eps) * p))


# --------------------------------------------------------------------------------------
# The variance theory's scope: mean baseline, std division
#                                              Derived in: book/theory/02-baseline-variance.md
# --------------------------------------------------------------------------------------
def mean_baseline_gradient_mse(loo_mse, gradient_norm_sq, G):
    """MSE around ∇J of GRPO's mean-baseline group gradient (no std division).

    Equation: ĝ_mean = ((G − 1)/G) ĝ_LOO, so
    E‖ĝ_mean − ∇J‖² = ((G − 1)/G)² · MSE_LOO + ‖∇J‖²/G² (the cross term vanishes because
    ĝ_LOO is unbiased). The shrunken estimator can have the smaller MSE; its
    noise-to-signal ratio Var/‖E ĝ‖² equals RLOO's, which is the fair comparison.

    Derived in: book/theory/02-baseline-variance.md, "What the variance theory covers".
    """
    mse = as_nonnegative(loo_mse, "loo_mse")
    s = as_nonnegative(gradient_norm_sq, "gradient_norm_sq")
    G = _baseline_group_size(G)
    a = (G - 1.0) / G
    with np.errstate(over="ignore"):
        out = a * a * mse + s / (G * G * 1.0)
    return scalar_or_array(finite_result(out, "loo_mse, gradient_norm_sq: the MSE overflows"))


def std_scaled_gradient_factor(p, G, *, scale: str = "group", ddof: int = 1,
                               eps: float = 1e-4):
    """Factor c_G(p) by which GRPO's advantages scale a prompt's expected gradient, for 0/1
    rewards: E[ĝ] = c_G(p) ∇p, with ĝ = (1/G) Σ_i A_i ∇log π(o_i).

    Equation: given k successes, E[Σ_{r=1} ∇log π] = k ∇p/p and E[Σ_{r=0} ∇log π] =
    −(G − k) ∇p/(1 − p), so c_G(p) = Σ_{k=1}^{G−1} C(G, k) p^(k−1) (1 − p)^(G−k−1) ·
    k(G − k)/(G² (s_k + ε)), s_k² = (G/(G − ddof)) (k/G)(1 − k/G). Without std division
    (``scale="none"``, s_k + ε → 1) it is (G − 1)/G for every p; with it, c_G(p) → 1/σ =
    1/√(p(1 − p)) as G grows: the weight of a prompt depends on p and on G.

    ``G`` is one group size (≥ 2); ``p`` broadcasts. At p ∈ {0, 1} the value is the limit
    (only k = 1 or k = G − 1 survive).

    Derived in: book/theory/02-baseline-variance.md, "What std division does".
    """
    p = as_probability(p)
    G = as_group_size(G, minimum=2)
    if G.size != 1:
        raise ArgumentTypeError(f"G must be a single group size here, got shape {G.shape}")
    G = int(G.reshape(()))
    if G > 100_000:
        raise ValueError(f"G must be <= 100000 here (a sum over k = 1 … G − 1), got {G}")
    scale = as_choice(scale, "scale", ("group", "none"))
    ddof = as_ddof(ddof)
    eps = as_real_scalar(eps, "eps", maximum=1e6)
    k = np.arange(1, G, dtype=float)
    log_c = special.gammaln(G + 1.0) - special.gammaln(k + 1) - special.gammaln(G - k + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lp, lq = np.log(p)[..., None], np.log1p(-p)[..., None]
        # p^(k−1)(1−p)^(G−k−1), with 0^0 = 1 at the edges
        lw = (log_c + np.where(k > 1, (k - 1) * lp, 0.0)
              + np.where(k < G - 1, (G - k - 1) * lq, 0.0))
        w = np.exp(lw)
    frac = k / G
    if scale == "group":
        s = np.sqrt(G / max(G - ddof, 1) * frac * (1 - frac)) + eps
    else:
        s = np.ones_like(k)
    return scalar_or_array(np.sum(w * k * (G - k) / (G * G * s), axis=-1))
