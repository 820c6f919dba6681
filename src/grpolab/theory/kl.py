"""The closed forms of book/theory/12-kl.md:
"The KL term: three estimators, two placements, and β = 0".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np
from scipy import special

from grpolab._validate import (
    as_choice,
    as_probability,
    as_real_array,
    finite_result,
    scalar_or_array,
)


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
