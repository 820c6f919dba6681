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
    ArgumentTypeError,
    as_choice,
    as_ddof,
    as_group_size,
    as_positive_int,
    as_probability,
    as_probability_scalar,
    as_real_array,
    as_real_scalar,
)

__all__ = [
    "MCEstimate",
    "baseline_variance_mc",
    "dynamic_sampling_mc",
    "entropy_change_mc",
    "gradient_estimators_mc",
    "group_std_mc",
    "identical_group_mc",
    "kl_estimator_mc",
    "kl_gradient_mc",
    "leave_one_out_gradient_mc",
    "minibatch_gradient_constants",
    "minibatch_gradient_mc",
    "pass_at_k_mc",
    "softmax_policy_moments",
    "zero_variance_mc",
    "zero_variance_beta_mc",
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


def zero_variance_mc(p: float, G: int, n_groups: int = 1_000_000, seed: int = 0) -> MCEstimate:
    """Fraction of simulated groups of G Bernoulli(p) rewards that are constant.

    Checks :func:`grpolab.theory.zero_variance_probability`.
    """
    p = as_probability_scalar(p)
    G = _group_size(G)
    n = _samples(n_groups, "n_groups")
    k = _rng(seed).binomial(G, p, size=n)
    return _proportion((k == 0) | (k == G))


def zero_variance_beta_mc(G: int, a: float, b: float, n_groups: int = 1_000_000,
                          seed: int = 0) -> MCEstimate:
    """Constant-group fraction when each prompt's pass rate is drawn from Beta(a, b).

    Checks :func:`grpolab.theory.beta_zero_variance_probability`.
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


# ----------------------------------------------------------------------------------------
# The policy gradient of a small softmax policy (book/theory/02, "How G enters the gradient's
# variance")
# ----------------------------------------------------------------------------------------
#: Largest |logit| and |reward| the softmax toy accepts: its squares stay finite.
_TOY_LIMIT = 1e100


def _softmax(logits) -> np.ndarray:
    z = as_real_array(logits, "logits", expected="a list of at least 2 finite numbers")
    z = z.ravel()
    if z.size < 2 or not np.isfinite(z).all() or (np.abs(z) > _TOY_LIMIT).any():
        raise ValueError(f"logits must be at least 2 finite numbers of size <= 1e100, "
                         f"got {logits!r}")
    z = np.exp(z - z.max())
    return z / z.sum()


def _rewards_for(rewards, K: int) -> np.ndarray:
    r = as_real_array(rewards, "rewards", expected=f"{K} finite numbers (one per action)")
    r = r.ravel()
    if r.size != K or not np.isfinite(r).all() or (np.abs(r) > _TOY_LIMIT).any():
        raise ValueError(f"rewards must be {K} finite numbers of size <= 1e100 (one per "
                         f"action), got {rewards!r}")
    return r


def _policies(policies) -> list:
    if isinstance(policies, (str, bytes)) or not isinstance(policies, (list, tuple)):
        raise ArgumentTypeError(f"policies must be a list of (logits, rewards) pairs, got "
                                f"{policies!r:.60}")
    if not policies:
        raise ValueError("policies must list at least one (logits, rewards) pair")
    for pair in policies:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ArgumentTypeError(f"policies must be a list of (logits, rewards) pairs, got "
                                    f"{pair!r:.60}")
    return list(policies)


def softmax_policy_moments(logits, rewards) -> dict[str, float]:
    """Exact moments of the score-function gradient of a one-step softmax policy.

    The policy picks action a with probability π = softmax(logits) and gets the
    deterministic reward ``rewards[a]``; the score is ∇_logits log π(a) = e_a − π. Summing
    over the K actions (no sampling) gives the right-hand sides that
    :func:`leave_one_out_gradient_mc` is checked against:

    - ``mu`` = E[r], ``sigma2`` = Var(r);
    - ``score_sq`` = E‖∇log π‖² (= 1 − Σπ²);
    - ``weighted`` = E[(r − μ)² ‖∇log π‖²] (the oracle-baseline second moment);
    - ``true_gradient_sq`` = ‖∇J‖², with ∇J = E[(e_a − π) r].

    Derived in: book/theory/02-baseline-variance.md, "How G enters the gradient's variance".
    """
    pi = _softmax(logits)
    r = _rewards_for(rewards, pi.size)
    mu = float(pi @ r)
    score = np.eye(pi.size) - pi                     # row a: e_a − π
    score_sq = np.sum(score**2, axis=1)              # ‖e_a − π‖²
    grad = pi @ (score * r[:, None])
    return {"mu": mu, "sigma2": float(pi @ (r - mu) ** 2),
            "score_sq": float(pi @ score_sq),
            "weighted": float(pi @ ((r - mu) ** 2 * score_sq)),
            "true_gradient_sq": float(grad @ grad)}


def leave_one_out_gradient_mc(logits, rewards, G: int, n_groups: int = 100_000,
                              seed: int = 0) -> dict[str, MCEstimate]:
    """Draw groups of G actions from a softmax policy and measure their policy gradients.

    For completion i of a group, g_i = (e_{a_i} − π)(r_i − b_i) with baseline b_i either
    the oracle μ = E[r] or the leave-one-out mean of the other G − 1 rewards. Returns:

    - ``loo_second_moment``, ``oracle_second_moment``: E‖g_i‖² per completion (averaged
      over the G completions of a group, so the groups are the independent samples);
    - ``loo_group_mse``, ``oracle_group_mse``: E‖ĝ − ∇J‖² of the group gradient
      ĝ = (1/G) Σ_i g_i;
    - ``grpo_gradient_scale``: ⟨ĝ_GRPO, ∇J⟩/‖∇J‖² for GRPO's centring r_i − r̄ (no std),
      whose mean is (G − 1)/G;
    - ``std_scaled_gradient_scale``: the same for GRPO's advantage (r_i − r̄)/(s + 10⁻⁴)
      (ddof = 1), whose mean depends on the reward distribution, not only on G.

    Checks :func:`grpolab.theory.gradient_variance_inflation` and the moments of
    :func:`softmax_policy_moments`.
    """
    pi = _softmax(logits)
    r_of = _rewards_for(rewards, pi.size)
    G = _group_size(G, minimum=2)
    n = as_positive_int(n_groups, "n_groups")
    if n * G * pi.size > MAX_DRAWS:
        raise ValueError(f"n_groups × G × actions: {n * G * pi.size} draws exceed {MAX_DRAWS}")
    a = _rng(seed).choice(pi.size, size=(n, G), p=pi)
    r = r_of[a]
    score_sq = (1.0 - 2.0 * pi + pi @ pi)[a]          # ‖e_a − π‖², without building e_a
    mu = float(pi @ r_of)
    loo = (r.sum(axis=1, keepdims=True) - r) / (G - 1)
    grad = pi @ ((np.eye(pi.size) - pi) * r_of[:, None])
    grad_sq = float(grad @ grad)

    def group_gradient(weights: np.ndarray) -> np.ndarray:
        # (1/G) Σ_i (e_{a_i} − π) w_i, one K-vector per group
        hits = np.zeros((n, pi.size))
        np.add.at(hits, (np.repeat(np.arange(n), G), a.ravel()), weights.ravel())
        return (hits - weights.sum(axis=1, keepdims=True) * pi) / G

    def est(x: np.ndarray) -> MCEstimate:
        return MCEstimate(float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)), int(x.size))

    centred = r - r.mean(axis=1, keepdims=True)
    std = r.std(axis=1, ddof=1, keepdims=True)
    out = {
        "loo_second_moment": est((score_sq * (r - loo) ** 2).mean(axis=1)),
        "oracle_second_moment": est((score_sq * (r - mu) ** 2).mean(axis=1)),
        "loo_group_mse": est(np.sum((group_gradient(r - loo) - grad) ** 2, axis=1)),
        "oracle_group_mse": est(np.sum((group_gradient(r - mu) - grad) ** 2, axis=1)),
    }
    if grad_sq > 0:
        out["grpo_gradient_scale"] = est(group_gradient(centred) @ grad / grad_sq)
        out["std_scaled_gradient_scale"] = est(
            group_gradient(centred / (std + 1e-4)) @ grad / grad_sq)
    return out


def minibatch_gradient_constants(policies) -> dict[str, float]:
    """c₁, c₂, c₃ of MSE(B, G) = c₁/B + c₂/(BG) + c₃/(BG(G − 1)) for a tabular toy.

    ``policies`` is a list of (logits, rewards), one per prompt; each prompt has its own
    block of logits, prompts are drawn uniformly, and the objective is the mean of the
    prompts' expected rewards. Per prompt x (see :func:`softmax_policy_moments`), with
    ∇J_x its true gradient and the step's target ∇J = (1/P) Σ_x ∇J_x (in blocks):

    - c₁ = E_x‖∇J_x‖² − ‖∇J‖²      (how much prompts disagree),
    - c₂ = E_x[weighted_x − ‖∇J_x‖²]  (the oracle baseline's within-group noise),
    - c₃ = E_x[σ²_x E‖∇log π‖² + ‖∇J_x‖²]  (the leave-one-out baseline's cost).

    Derived in: book/theory/02-baseline-variance.md, "The minibatch form and G*".
    """
    m = [softmax_policy_moments(z, r) for z, r in _policies(policies)]
    P = len(m)
    grad_sq = np.array([x["true_gradient_sq"] for x in m])
    return {"c1": float(grad_sq.mean() - grad_sq.sum() / P**2),
            "c2": float(np.mean([x["weighted"] - x["true_gradient_sq"] for x in m])),
            "c3": float(np.mean([x["sigma2"] * x["score_sq"] + x["true_gradient_sq"]
                                 for x in m]))}


def minibatch_gradient_mc(policies, B: int, G: int, n_trials: int = 20_000,
                          seed: int = 0) -> MCEstimate:
    """E‖ĝ − ∇J‖² of a minibatch of B prompts × G completions in the tabular toy of
    :func:`minibatch_gradient_constants`: each trial draws B prompts uniformly (with
    replacement), G actions for each, leave-one-out advantages, and puts each group's
    gradient (1/G) Σ_i (e_{a_i} − π_x)(r_i − r̄₋ᵢ) into its prompt's block, averaged over B.

    Checks :func:`grpolab.theory.minibatch_gradient_mse` (with 1/(G(G − 1)) for 1/G²) and,
    at a fixed budget, :func:`grpolab.theory.optimal_group_size`.
    """
    policies = _policies(policies)
    B = as_positive_int(B, "B", maximum=10_000)
    G = _group_size(G, minimum=2)
    T = as_positive_int(n_trials, "n_trials", maximum=10**7)
    pis = [_softmax(z) for z, _ in policies]
    if T * B * G * pis[0].size > MAX_DRAWS:
        raise ValueError(f"n_trials × B × G × actions: {T * B * G * pis[0].size} draws exceed "
                         f"{MAX_DRAWS}")
    rs = [_rewards_for(r, pi.size) for (_, r), pi in zip(policies, pis, strict=True)]
    P, M = len(pis), pis[0].size
    if any(pi.size != M for pi in pis):
        raise ValueError("every policy needs the same number of actions")
    rng = _rng(seed)
    which = rng.integers(P, size=(T, B))
    blocks = np.zeros((T, P, M))                   # the minibatch gradient, block by block
    for x in range(P):
        t_idx, _ = np.nonzero(which == x)
        n = t_idx.size
        if n == 0:
            continue
        a = rng.choice(M, size=(n, G), p=pis[x])
        r = rs[x][a]
        adv = r - (r.sum(axis=1, keepdims=True) - r) / (G - 1)
        hits = np.bincount((np.arange(n)[:, None] * M + a).ravel(), weights=adv.ravel(),
                           minlength=n * M).reshape(n, M)
        group = (hits - adv.sum(axis=1, keepdims=True) * pis[x]) / G
        np.add.at(blocks[:, x, :], t_idx, group / B)
    target = np.stack([pi @ ((np.eye(M) - pi) * r[:, None]) for pi, r in zip(pis, rs,
                                                                             strict=True)]) / P
    err = np.sum((blocks - target) ** 2, axis=(1, 2))
    return MCEstimate(float(err.mean()), float(err.std(ddof=1) / np.sqrt(T)), T)


# ---- ch. 08–10: policy gradients, loss aggregation, DAPO
__all__ += ["baseline_estimators_mc", "informative_share_mc", "state_baseline_mc",
            "truncated_zero_variance_mc"]


def _est(x: np.ndarray) -> MCEstimate:
    return MCEstimate(float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)), int(x.size))


def baseline_estimators_mc(logits, rewards, G: int, critic_error: float = 0.25,
                           n_groups: int = 100_000, seed: int = 0) -> dict[str, MCEstimate]:
    """The REINFORCE family on a one-step softmax policy: same samples, six baselines.

    Each trial draws a group of G actions from π = softmax(logits); completion i's gradient
    is g_i = (e_{a_i} − π)(r_i − b_i) with

    - ``reinforce``: b = 0;
    - ``remax``: b = the reward of the greedy action argmax π (ReMax; a constant per prompt);
    - ``oracle``: b = μ = E[r];
    - ``critic``: b = μ + ε with ε ~ N(0, critic_error · σ²) drawn independently (a learned
      value with squared error critic_error · σ²);
    - ``loo``: b = the mean of the other G − 1 rewards (RLOO);
    - ``grpo``: r_i − r̄, the group mean including r_i (GRPO without the std division).

    Returns, for each name, ``{name}_scale`` = ⟨ĝ, ∇J⟩/‖∇J‖² of the group gradient
    ĝ = (1/G) Σ_i g_i (1 for an unbiased estimator, (G − 1)/G for grpo) and
    ``{name}_second_moment`` = E‖g_i‖² per completion (grpo has no such entry).

    Checks :func:`grpolab.theory.softmax_policy_gradient` and
    :func:`grpolab.theory.reinforce_second_moment`.
    """
    pi = _softmax(logits)
    r_of = _rewards_for(rewards, pi.size)
    G = _group_size(G, minimum=2)
    e = as_real_scalar(critic_error, "critic_error", maximum=1e6)
    n = as_positive_int(n_groups, "n_groups")
    if n * G * pi.size > MAX_DRAWS:
        raise ValueError(f"n_groups × G × actions: {n * G * pi.size} draws exceed {MAX_DRAWS}")
    rng = _rng(seed)
    a = rng.choice(pi.size, size=(n, G), p=pi)
    r = r_of[a]
    mu = float(pi @ r_of)
    sigma2 = float(pi @ (r_of - mu) ** 2)
    score_sq = (1.0 - 2.0 * pi + pi @ pi)[a]
    grad = pi * (r_of - mu)
    grad_sq = float(grad @ grad)
    if not grad_sq > 0:
        raise ValueError("rewards: the policy gradient is 0 (every action has the same reward "
                         "or the policy is deterministic), so no scale can be measured")
    weights = {
        "reinforce": r,
        "remax": r - r_of[int(np.argmax(pi))],
        "oracle": r - mu,
        "critic": r - mu - rng.normal(0.0, np.sqrt(e * sigma2), size=(n, G)),
        "loo": r - (r.sum(axis=1, keepdims=True) - r) / (G - 1),
    }
    out: dict[str, MCEstimate] = {}
    for name, w in [*weights.items(), ("grpo", r - r.mean(axis=1, keepdims=True))]:
        # ⟨ĝ, ∇J⟩ = (1/G) Σ_i w_i ⟨e_{a_i} − π, ∇J⟩ = (1/G) Σ_i w_i (∇J[a_i] − π·∇J)
        proj = (w * (grad[a] - pi @ grad)).mean(axis=1) / grad_sq
        out[f"{name}_scale"] = _est(proj)
        if name != "grpo":
            out[f"{name}_second_moment"] = _est((score_sq * w**2).mean(axis=1))
    return out


def state_baseline_mc(logits, next_logits, rewards, values, n_samples: int = 200_000,
                      seed: int = 0) -> dict[str, MCEstimate]:
    """A two-token policy: a baseline may depend on the state, not on the action.

    Token 1 is a ~ softmax(logits); token 2 is a' ~ softmax(next_logits[a]); the reward
    R = rewards[a, a'] comes at the end. The per-token REINFORCE estimator is
    g = (R − b₁)∇log π(a) + (R − b₂)∇log π(a' | a), over all K + K² logits. Two choices of
    the second token's baseline, built from the same numbers ``values``:

    - ``state_dependent``: b₂ = values[a], a function of the state (the first token);
    - ``action_dependent``: b₂ = values[a'], a function of the action being scored.

    b₁ = the mean of ``values`` in both. Returns ⟨g, ∇J⟩/‖∇J‖² for each: 1 in expectation
    for the state-dependent baseline, not for the action-dependent one.

    Derived in: book/theory/08-reinforce-to-grpo.md, "A state-dependent baseline is still
    unbiased".
    """
    p1 = _softmax(logits)
    K = p1.size

    def square(x, name: str) -> np.ndarray:
        arr = as_real_array(x, name, expected=f"a {K} × {K} array of finite numbers")
        if arr.shape != (K, K) or not (np.abs(arr) <= _TOY_LIMIT).all():
            raise ValueError(f"{name} must be a {K} × {K} array of finite numbers of size <= "
                             f"1e100 (one row per first token), got shape {arr.shape}")
        return arr

    z2 = square(next_logits, "next_logits")
    p2 = np.exp(z2 - z2.max(axis=1, keepdims=True))
    p2 /= p2.sum(axis=1, keepdims=True)
    R = square(rewards, "rewards")
    v = as_real_array(values, "values", expected=f"{K} finite numbers")
    if v.shape != (K,) or not (np.abs(v) <= _TOY_LIMIT).all():
        raise ValueError(f"values must be {K} finite numbers of size <= 1e100 (one per "
                         f"action), got shape {v.shape}")
    n = as_positive_int(n_samples, "n_samples")
    if n * K > MAX_DRAWS:
        raise ValueError(f"n_samples × actions: {n * K} draws exceed {MAX_DRAWS}")
    # The exact gradient, by enumerating the K² sequences.
    joint = p1[:, None] * p2                                      # P(a, a')
    J1 = np.einsum("ab,ab->a", joint, R)                          # Σ_{a'} P(a, a') R
    grad1 = J1 - p1 * J1.sum()                                    # Σ P R (e_a − π₁)
    grad2 = joint * R - p2 * (joint * R).sum(axis=1, keepdims=True)  # row a: Σ P R (e_a' − π₂)
    norm = float(grad1 @ grad1 + np.sum(grad2**2))
    if not norm > 0:
        raise ValueError("rewards: the policy gradient is 0, so no scale can be measured")
    rng = _rng(seed)
    a = rng.choice(K, size=n, p=p1)
    u = rng.random(n)
    a2 = np.minimum((u[:, None] > np.cumsum(p2, axis=1)[a]).sum(axis=1), K - 1)
    ret = R[a, a2]
    b1 = float(v.mean())
    proj1 = grad1[a] - p1 @ grad1                                 # ⟨e_a − π₁, ∇J₁⟩
    proj2 = grad2[a, a2] - np.einsum("nk,nk->n", p2[a], grad2[a])  # ⟨e_a' − π₂(a), ∇J₂[a]⟩
    out = {}
    for name, b2 in (("state_dependent", v[a]), ("action_dependent", v[a2])):
        out[name] = _est(((ret - b1) * proj1 + (ret - b2) * proj2) / norm)
    return out


def informative_share_mc(pass_rates, G: int, prompts: int, mean_length: float = 100.0,
                         zero_variance_length_factor: float = 1.0, n_steps: int = 20_000,
                         seed: int = 0) -> MCEstimate:
    """Share of a step's loss tokens that lie in informative groups, simulated.

    Each step draws ``prompts`` pass rates uniformly from ``pass_rates``, G Bernoulli rewards
    for each, and a length 1 + Poisson(mean_length − 1) for every completion; the lengths of
    zero-variance groups are multiplied by ``zero_variance_length_factor`` (1: lengths
    independent of the rewards). Returns the mean over steps of
    (tokens in informative groups) / (all tokens): the factor by which counting
    zero-variance groups in ``loss_type="dapo"``'s normaliser scales the step.

    Checks :func:`grpolab.theory.informative_share` (exact when the factor is 1).
    """
    p = as_probability(pass_rates, "pass_rates").ravel()
    if p.size == 0:
        raise ValueError("pass_rates must hold at least one pass rate")
    G = _group_size(G)
    B = as_positive_int(prompts, "prompts", maximum=10**6)
    L = as_real_scalar(mean_length, "mean_length", minimum=1.0, maximum=1e6)
    f = as_real_scalar(zero_variance_length_factor, "zero_variance_length_factor",
                       minimum=1e-3, maximum=1e3)
    T = as_positive_int(n_steps, "n_steps", maximum=10**7)
    _check_draws(T * B * 2, "n_steps × prompts")
    rng = _rng(seed)
    ps = p[rng.integers(p.size, size=(T, B))]
    k = rng.binomial(G, ps)
    tokens = G + rng.poisson(G * (L - 1.0), size=(T, B)).astype(float)  # a group's G lengths
    informative = (k > 0) & (k < G)
    tokens = np.where(informative, tokens, f * tokens)
    return _est((tokens * informative).sum(axis=1) / tokens.sum(axis=1))


def truncated_zero_variance_mc(p: float, G: int, truncation_rate: float,
                               n_groups: int = 200_000, seed: int = 0) -> MCEstimate:
    """Fraction of constant groups when each completion is cut off with probability τ.

    Every completion is drawn explicitly: it is truncated with probability τ
    (``truncation_rate``) and then scores 0; otherwise it is correct with probability p.

    Checks :func:`grpolab.theory.truncated_zero_variance_probability`.
    """
    p = as_probability_scalar(p)
    G = _group_size(G)
    tau = as_probability_scalar(truncation_rate, "truncation_rate")
    n = _samples(n_groups, "n_groups")
    _check_draws(2 * n * G, "n_groups × G")
    rng = _rng(seed)
    reward = (rng.random((n, G)) < p) & ~(rng.random((n, G)) < tau)
    k = reward.sum(axis=1)
    return _proportion((k == 0) | (k == G))


# --------------------------------------------------------------------------------------
# ch. 02, 11–13: estimators of the gradient, pass@k, KL and entropy
# --------------------------------------------------------------------------------------
def _estimate(x: np.ndarray) -> MCEstimate:
    x = np.asarray(x, dtype=float).ravel()
    return MCEstimate(float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)), int(x.size))


def gradient_estimators_mc(logits, rewards, G: int, n_batches: int = 20_000,
                           prompts_per_batch: int = 8, seed: int = 0, eps: float = 1e-4) -> dict:
    """Four estimators of a softmax policy's reward gradient, measured on the same draws.

    One prompt (a softmax over actions with a reward per action) is sampled in batches of
    ``prompts_per_batch`` groups of G actions. Per batch, the gradient with respect to the
    logits is the mean over its groups of (1/G) Σ_i A_i (e_{a_i} − π) with the advantages of

    - ``"leave_one_out"``: r_i − r̄₋ᵢ (RLOO);
    - ``"mean"``: r_i − r̄ (GRPO's centring, Dr. GRPO);
    - ``"group_std"``: (r_i − r̄)/(s_group + eps), s with ddof = 1 (TRL's default);
    - ``"batch_std"``: (r_i − r̄)/(s_batch + eps), s over the batch's rewards
      (TRL's ``scale_rewards="batch"``).

    Returns, per estimator, ``scale`` (MCEstimate of ⟨ĝ, ∇J⟩/‖∇J‖²), ``mse`` (MCEstimate of
    E‖ĝ − ∇J‖²) and ``noise_to_signal`` (tr Var(ĝ)/‖E ĝ‖², a plug-in ratio).

    Checks :func:`grpolab.theory.std_scaled_gradient_factor` (the ``group_std`` scale for 0/1
    rewards) and :func:`grpolab.theory.mean_baseline_gradient_mse` (the ``mean`` MSE).
    """
    pi = _softmax(logits)
    r_of = _rewards_for(rewards, pi.size)
    G = _group_size(G, minimum=2)
    n = as_positive_int(n_batches, "n_batches", minimum=2, maximum=MAX_DRAWS)
    b = as_positive_int(prompts_per_batch, "prompts_per_batch", maximum=MAX_DRAWS)
    eps = as_real_scalar(eps, "eps")
    _check_draws(n * b * G * pi.size, "n_batches × prompts_per_batch × G × actions")
    K = pi.size
    a = _rng(seed).choice(K, size=(n, b, G), p=pi)
    r = r_of[a]
    grad = pi * (r_of - float(pi @ r_of))          # ∇J on the logits: π_b (r_b − μ)
    g2 = float(grad @ grad)
    centred = r - r.mean(axis=2, keepdims=True)

    def scaled(scale: np.ndarray) -> np.ndarray:
        # a constant group (or batch) with eps = 0 has 0/0: its advantages are 0
        s = np.broadcast_to(scale + eps, centred.shape)
        return np.divide(centred, s, out=np.zeros_like(centred), where=s > 0)

    advs = {
        "leave_one_out": r - (r.sum(axis=2, keepdims=True) - r) / (G - 1),
        "mean": centred,
        "group_std": scaled(r.std(axis=2, ddof=1, keepdims=True)),
        "batch_std": scaled(r.reshape(n, -1).std(axis=1, ddof=1)[:, None, None]),
    }
    onehot_idx = (np.arange(n)[:, None, None] * K + a).ravel()
    out = {}
    for name, adv in advs.items():
        hits = np.bincount(onehot_idx, weights=adv.ravel(), minlength=n * K).reshape(n, K)
        g = (hits - adv.sum(axis=(1, 2))[:, None] * pi) / (G * b)   # batch gradient
        mean = g.mean(axis=0)
        trace_var = float(np.sum(g.var(axis=0, ddof=1)))
        out[name] = {
            "scale": _estimate(g @ grad / g2) if g2 > 0 else MCEstimate(0.0, 0.0, n),
            "mse": _estimate(np.sum((g - grad) ** 2, axis=1)),
            "noise_to_signal": (trace_var / float(mean @ mean) if mean @ mean > 0
                                else float("inf")),
        }
    return out



def pass_at_k_mc(pass_rates, n: int, k: int, n_trials: int = 2_000, seed: int = 0) -> dict:
    """pass@k of a prompt set estimated from n samples per prompt, repeated ``n_trials`` times.

    Each trial draws every prompt's number of correct answers c_j ~ Binomial(n, p_j) (the
    sufficient statistic of n Bernoulli samples) and averages over prompts the unbiased
    estimator 1 − C(n − c, k)/C(n, k) and the plug-in 1 − (1 − c/n)^k. Returns
    ``{"unbiased": MCEstimate, "plug_in": MCEstimate}`` over trials.

    Checks :func:`grpolab.theory.pass_at_k` (unbiased for
    :func:`grpolab.theory.expected_pass_at_k`) and shows the plug-in's bias.
    """
    from grpolab import theory

    p = as_probability(pass_rates, "pass_rates").ravel()
    if p.size == 0:
        raise ValueError("pass_rates must hold at least one pass rate")
    n = as_positive_int(n, "n", maximum=MAX_DRAWS)
    k = as_positive_int(k, "k", maximum=MAX_DRAWS)
    if k > n:
        raise ValueError(f"k must be <= n (pass@k needs k samples), got k = {k}, n = {n}")
    T = as_positive_int(n_trials, "n_trials", minimum=2, maximum=MAX_DRAWS)
    _check_draws(T * p.size, "n_trials × prompts")
    c = _rng(seed).binomial(n, p, size=(T, p.size))
    unbiased = np.asarray(theory.pass_at_k(n, c, k)).mean(axis=1)
    plug_in = (1.0 - (1.0 - c / n) ** k).mean(axis=1)
    return {"unbiased": _estimate(unbiased), "plug_in": _estimate(plug_in)}


def _ref_softmax(ref_logits) -> np.ndarray:
    """_softmax for the reference policy, with its error naming ``ref_logits``."""
    try:
        return _softmax(ref_logits)
    except ValueError as exc:
        raise ValueError(str(exc).replace("logits", "ref_logits", 1)) from None


def _log_softmax(logits) -> np.ndarray:
    """log softmax of logits already checked by :func:`_softmax`."""
    z = np.asarray(logits, dtype=float).ravel()
    z = z - z.max()
    return z - np.log(np.sum(np.exp(z)))


def kl_estimator_mc(logits, ref_logits, n_samples: int = 200_000, seed: int = 0) -> dict:
    """Sample x ~ π = softmax(logits) and average Schulman's k1, k2, k3 of
    r = π_ref(x)/π(x): ``{"k1": MCEstimate, "k2": ..., "k3": ...}``.

    Checks :func:`grpolab.theory.kl_estimator_moments` (means and variances) and
    :func:`grpolab.theory.categorical_kl`.
    """
    pi, ref = _softmax(logits), _ref_softmax(ref_logits)
    if pi.size != ref.size:
        raise ValueError("logits and ref_logits must have the same number of actions")
    n = as_positive_int(n_samples, "n_samples", minimum=2, maximum=MAX_DRAWS)
    x = _rng(seed).choice(pi.size, size=n, p=pi)
    # log-softmax from the logits, not log of the probabilities: a reference probability
    # that underflows to 0 (ref_logits 1e3 apart) would give log 0 = -inf for a finite KL
    log_r = _log_softmax(ref_logits)[x] - _log_softmax(logits)[x]
    return {"k1": _estimate(-log_r), "k2": _estimate(0.5 * log_r**2),
            "k3": _estimate(np.expm1(log_r) - log_r)}


def kl_gradient_mc(logits, ref_logits, placement: str, n_samples: int = 200_000,
                   seed: int = 0, step: float = 1e-5) -> tuple[MCEstimate, ...]:
    """The on-policy gradient of a KL penalty with respect to the logits, by sampling.

    Samples x ~ π. For each outcome the gradient of the per-sample term is taken by
    central finite differences of its value in the logits (the sample held fixed, as in a
    loss; for ``"reward_k1"`` the score-function term k1(x)·∇log π(x), the gradient of
    log π(x) taken the same way). ``"loss_k3_ratio"`` multiplies k3 by π_z(x)/π_z0(x), whose
    value is 1 at z0. Returns one MCEstimate per logit.

    Checks :func:`grpolab.theory.kl_penalty_gradient`.
    """
    from grpolab import theory

    pi, ref = _softmax(logits), _ref_softmax(ref_logits)   # validates both, naming them
    z0 = as_real_array(logits, "logits").ravel()
    if pi.size != ref.size:
        raise ValueError("logits and ref_logits must have the same number of actions")
    placement = as_choice(placement, "placement", theory.KL_PLACEMENTS)
    n = as_positive_int(n_samples, "n_samples", minimum=2, maximum=MAX_DRAWS)
    h = as_real_scalar(step, "step", minimum=1e-10, maximum=1e-2)
    K = pi.size

    def log_pi(z):
        return z - z.max() - np.log(np.sum(np.exp(z - z.max())))

    # log π_ref from its logits (a softmax that underflows to 0 would give log 0 = −inf)
    log_ref = log_pi(as_real_array(ref_logits, "ref_logits").ravel().astype(float))

    def term(z, x):
        lp = log_pi(z)
        log_r = log_ref[x] - lp[x]
        if placement == "loss_k1":
            return -log_r
        if placement == "loss_k2":
            return 0.5 * log_r**2
        k3 = np.expm1(log_r) - log_r
        if placement == "loss_k3":
            return k3
        if placement == "loss_k3_ratio":
            return np.exp(lp[x] - log_pi(z0)[x]) * k3
        return lp[x]  # reward_k1: differentiate log π(x), weight by k1(x) below

    per_outcome = np.zeros((K, K))   # row x: the gradient of the per-sample term at outcome x
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for x in np.flatnonzero(pi > 0):  # outcomes of probability 0 are never drawn
            for c in range(K):
                e = np.zeros(K)
                e[c] = h
                per_outcome[x, c] = (term(z0 + e, x) - term(z0 - e, x)) / (2 * h)
            if placement == "reward_k1":
                per_outcome[x] *= float(np.log(pi[x]) - log_ref[x])  # k1(x) ∇ log π(x)
    if not np.isfinite(per_outcome).all():
        raise ValueError("logits, ref_logits: π and π_ref are too far apart for a finite "
                         "per-sample KL term (a ratio r beyond float64)")
    draws = _rng(seed).choice(K, size=n, p=pi)
    g = per_outcome[draws]
    return tuple(_estimate(g[:, c]) for c in range(K))


def entropy_change_mc(logits, rewards, G: int, learning_rate: float, n_trials: int = 200_000,
                      seed: int = 0) -> dict:
    """Entropy change of a softmax policy after one SGD step on one group's RLOO gradient.

    Each trial samples G actions, forms ĝ = (1/G) Σ_i (r_i − r̄₋ᵢ)(e_{a_i} − π) and records
    ΔH(±η) = H(softmax(z ± ηĝ)) − H(softmax(z)) with η = ``learning_rate``. Returns
    ``{"change": MCEstimate of ΔH(η), "even": MCEstimate of [ΔH(η) + ΔH(−η)]/2}``: the even
    part cancels the odd orders in η, so it is ½η² E[ĝᵀ ∇²H ĝ] + O(η⁴), the second-order
    term alone.

    Checks :func:`grpolab.theory.expected_entropy_change` with the mean step η∇J and the
    covariance η² :func:`grpolab.theory.loo_gradient_covariance`.
    """
    pi = _softmax(logits)
    z0 = _log_softmax(logits)  # not log(pi): an underflowed probability has a finite log
    r_of = _rewards_for(rewards, pi.size)
    G = _group_size(G, minimum=2)
    eta = as_real_scalar(learning_rate, "learning_rate", minimum=0.0, maximum=1e3)
    T = as_positive_int(n_trials, "n_trials", minimum=2, maximum=MAX_DRAWS)
    _check_draws(T * G * pi.size, "n_trials × G × actions")
    K = pi.size
    a = _rng(seed).choice(K, size=(T, G), p=pi)
    r = r_of[a]
    adv = r - (r.sum(axis=1, keepdims=True) - r) / (G - 1)
    hits = np.bincount((np.arange(T)[:, None] * K + a).ravel(), weights=adv.ravel(),
                       minlength=T * K).reshape(T, K)
    g = (hits - adv.sum(axis=1, keepdims=True) * pi) / G
    h_old = float(-np.sum(np.where(pi > 0, pi * z0, 0.0)))

    def delta(sign: float) -> np.ndarray:
        z = z0 + sign * eta * g
        q = np.exp(z - z.max(axis=1, keepdims=True))
        q /= q.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.sum(np.where(q > 0, q * np.log(q), 0.0), axis=1) - h_old

    up, down = delta(1.0), delta(-1.0)
    return {"change": _estimate(up), "even": _estimate(0.5 * (up + down))}


# --------------------------------------------------------------------------------------
# ch. 14: adaptive allocation
# --------------------------------------------------------------------------------------
def allocation_objective_mc(rates, group_sizes, rule: str, n_groups: int = 100_000,
                            seed: int = 0) -> MCEstimate:
    """One allocation rule's objective Σ_j v(p_j, n_j), by sampling every prompt's group.

    Each trial draws one group of n_j Bernoulli(p_j) rewards per prompt and sums, over the
    prompts, the rule's per-group quantity: Σ_i (r_i − r̄)²/n² (``variance-dr-grpo``),
    Σ_i (r_i − r̄₋ᵢ)²/n² (``variance-rloo``), 1 if both outcomes appear
    (``informative``; times p(1 − p)² for ``knapsack``), 1 if any success
    (``first-success``). Its mean checks :func:`grpolab.allocation.allocation_objective`.
    """
    from grpolab import allocation

    rule = allocation.get_rule(rule).name
    p = as_probability(rates, "rates").ravel()
    n = as_group_size(group_sizes, "group_sizes", minimum=2).ravel()
    if n.shape != p.shape:
        raise ValueError(f"group_sizes has {n.size} entries for {p.size} pass rates")
    T = _samples(n_groups, "n_groups")
    _check_draws(T * int(n.sum()), "n_groups × Σ group_sizes")
    rng = _rng(seed)
    total = np.zeros(T)
    for pj, nj in zip(p, n, strict=True):
        r = (rng.random((T, int(nj))) < pj).astype(float)
        k = r.sum(axis=1)
        if rule == "variance-dr-grpo":
            total += ((r - k[:, None] / nj) ** 2).sum(axis=1) / nj**2
        elif rule == "variance-rloo":
            total += ((r - (k[:, None] - r) / (nj - 1)) ** 2).sum(axis=1) / nj**2
        elif rule == "first-success":
            total += k > 0
        else:  # informative, or knapsack's weighted form
            weight = pj * (1 - pj) ** 2 if rule == "knapsack" else 1.0
            total += weight * ((k > 0) & (k < nj))
    return _estimate(total)


__all__ += ["allocation_objective_mc"]
