"""The closed forms of book/theory/02-baseline-variance.md:
"Baseline noise: Var(r̄) = σ²/G, and what it does to the gradient".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import special

from grpolab._validate import (
    MAX_COUNT,
    MAX_GROUP_SIZE,
    ArgumentTypeError,
    as_choice,
    as_ddof,
    as_group_size,
    as_nonnegative,
    as_probability,
    as_real_array,
    as_real_scalar,
    finite_result,
    scalar_or_array,
)


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
