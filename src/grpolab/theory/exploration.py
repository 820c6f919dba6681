"""The closed forms of book/theory/13-entropy.md:
"Entropy and exploration: does a larger G slow the collapse?".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np

from grpolab._validate import (
    ArgumentTypeError,
    as_group_size,
    as_nonnegative,
    as_probability,
    as_real_array,
    finite_result,
    scalar_or_array,
)


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


def _per_outcome(values, name: str, pi: np.ndarray) -> np.ndarray:
    """One finite number (|x| <= 1e100) per outcome of the policy ``pi``, or a ValueError."""
    x = as_real_array(values, name)
    if x.shape != pi.shape or not np.isfinite(x).all() or (np.abs(x) > 1e100).any():
        raise ValueError(f"{name} must be finite numbers of size <= 1e100, one per outcome "
                         f"(shape {pi.shape})")
    return x


def entropy_change_first_order(probs, logit_step):
    """First-order change of a softmax policy's entropy when its logits move by Δz.

    Equation: ΔH ≈ ∇H · Δz = −Cov_{a∼π}(log π_a, Δz_a). A step that raises the logits of
    already likely outcomes lowers the entropy; for the policy gradient Δz_a = η π_a A_a
    (Cui et al. write it with the advantage A).

    Derived in: book/theory/13-entropy.md, "Entropy and its gradient".
    """
    pi = _softmax_probs(probs)
    dz = _per_outcome(logit_step, "logit_step", pi)
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
    r = _per_outcome(rewards, "rewards", pi)
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
