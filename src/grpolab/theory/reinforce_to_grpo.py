"""The closed forms of book/theory/08-reinforce-to-grpo.md:
"From REINFORCE to GRPO: baselines, critics and why GRPO has none".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np

from grpolab._validate import (
    MAX_COUNT,
    as_group_size,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_real_scalar,
    finite_result,
    scalar_or_array,
)

#: Largest |logit|, |reward| or |baseline| the softmax-policy forms accept (their squares stay
#: finite in float64).
_TOY_LIMIT = 1e100


#: Most actions of a softmax policy, and most tokens or completions in one call.
_MAX_ACTIONS = 100_000


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
