"""ch. 08–10 closed forms: policy gradients and baselines, loss aggregation, DAPO.

Each closed form is checked against an independent computation (finite differences, a
direct sum, an enumeration, grpolab's torch loss, or a simulation), and each check is
shown to fail on a planted wrong value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpolab import simulate as S
from grpolab import theory as T

LOGITS = (2.0, 1.0, 0.5, 0.0, -1.0)


def _softmax(z):
    z = np.asarray(z, float)
    e = np.exp(z - z.max())
    return e / e.sum()


def _numeric_gradient(z, r, h=1e-6):
    z = np.asarray(z, float)
    out = np.empty_like(z)
    for j in range(z.size):
        up, down = z.copy(), z.copy()
        up[j] += h
        down[j] -= h
        out[j] = (_softmax(up) @ r - _softmax(down) @ r) / (2 * h)
    return out


# ---- ch. 08: the score-function identity and baselines -------------------------------
@pytest.mark.parametrize("rewards", [(1, 0, 0, 0, 0), (0.3, -1.0, 2.0, 0.0, 0.5)])
def test_softmax_policy_gradient_is_the_gradient_of_the_expected_reward(rewards):
    r = np.asarray(rewards, float)
    got = T.softmax_policy_gradient(LOGITS, r)
    np.testing.assert_allclose(got, _numeric_gradient(LOGITS, r), rtol=1e-6, atol=1e-9)
    # a constant baseline does not move it: E[b ∇log π] = 0
    np.testing.assert_allclose(T.softmax_policy_gradient(LOGITS, r - 0.7), got, atol=1e-15)
    # and the check can fail: a planted wrong gradient (the rewards themselves) is caught
    assert not np.allclose(r * _softmax(LOGITS), _numeric_gradient(LOGITS, r), atol=1e-6)


def test_second_moment_is_the_direct_sum_and_the_loo_case_of_ch02():
    r = np.array([0.0, 1.0, 0.0, 1.0, 0.0])
    pi = _softmax(LOGITS)
    b, v = 0.4, 0.05
    direct = sum(pi[a] * ((r[a] - b) ** 2 + v) * np.sum((np.eye(5)[a] - pi) ** 2)
                 for a in range(5))
    assert T.reinforce_second_moment(LOGITS, r, b, v) == pytest.approx(direct, rel=1e-12)
    # the leave-one-out baseline: mean μ, variance σ²/(G − 1) -> ch. 02's Eq. (loo)
    m = S.softmax_policy_moments(LOGITS, r)
    for G in (2, 4, 16):
        loo = m["weighted"] + m["sigma2"] / (G - 1) * m["score_sq"]
        got = T.reinforce_second_moment(LOGITS, r, m["mu"], m["sigma2"] / (G - 1))
        assert got == pytest.approx(loo, rel=1e-12)
    assert T.reinforce_second_moment(LOGITS, r, m["mu"]) == pytest.approx(m["weighted"])


def test_optimal_constant_baseline_minimises_the_second_moment():
    r = np.array([1.0, 0.0, 0.0, 0.0, 1.0])
    b_star = T.optimal_constant_baseline(LOGITS, r)
    best = T.reinforce_second_moment(LOGITS, r, b_star)
    grid = np.linspace(-1, 2, 3001)
    values = [T.reinforce_second_moment(LOGITS, r, b) for b in grid]
    assert min(values) >= best - 1e-12
    assert abs(grid[int(np.argmin(values))] - b_star) < 2e-3
    # it is not the mean reward in general ...
    mu = float(_softmax(LOGITS) @ r)
    assert abs(b_star - mu) > 0.05
    assert T.reinforce_second_moment(LOGITS, r, mu) > best
    # ... but it is when every score has the same size (uniform logits, κ = 1)
    assert T.optimal_constant_baseline([0.0] * 5, r) == pytest.approx(0.4)


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9])
def test_two_action_optimal_baseline_is_one_minus_p(p):
    assert T.optimal_constant_baseline([math.log(p), math.log(1 - p)], [1, 0]) == (
        pytest.approx(1 - p, abs=1e-12))


def test_optimal_baseline_refuses_a_deterministic_policy():
    with pytest.raises(ValueError, match="logits"):
        T.optimal_constant_baseline([0.0, 1e4], [1.0, 0.0])


def test_gae_matches_its_definition_and_its_limits():
    rng = np.random.default_rng(3)
    r, v = rng.normal(size=7), rng.normal(size=7)
    gamma, lam = 0.97, 0.8
    v_next = np.append(v[1:], 0.0)
    delta = r + gamma * v_next - v
    direct = [sum((gamma * lam) ** l * delta[t + l] for l in range(7 - t)) for t in range(7)]
    np.testing.assert_allclose(T.gae_advantages(r, v, gamma, lam), direct, rtol=1e-12)
    # λ = 0: one-step TD errors; terminal reward with γ = λ = 1: R − V(s_t) for every token
    np.testing.assert_allclose(T.gae_advantages(r, v, gamma, 0.0), delta, rtol=1e-12)
    terminal = np.array([0.0, 0.0, 0.0, 1.0])
    values = np.array([0.3, 0.5, 0.6, 0.9])
    np.testing.assert_allclose(T.gae_advantages(terminal, values), 1.0 - values)
    # a constant value per prompt gives GRPO's shape: one advantage for every token
    np.testing.assert_allclose(T.gae_advantages(terminal, np.full(4, 0.25)), np.full(4, 0.75))
    with pytest.raises(ValueError, match="values"):
        T.gae_advantages(terminal, values[:3])


def test_critic_and_group_budget_mse_follow_the_exact_model():
    c1, c2, N = 0.03, 1.0, 256
    for G in (2, 3, 8, 33):
        c3 = c2 + 2 * c1                  # the closure κ = 1, ‖∇J‖² → 0
        exact = c1 / (N / G) + c2 / N + c3 / (N * (G - 1))   # ch. 02: B = N/G
        assert T.group_budget_mse(G, c1, c2, N) == pytest.approx(exact, rel=1e-12)
    assert T.critic_budget_mse(c1, c2, 1.0, 0.0, N) == pytest.approx(2 * (c1 + c2) / N)
    # a perfect same-size critic beats G = 2 when prompts disagree at all ...
    assert T.critic_budget_mse(c1, c2, 1.0, 0.0, N) < T.group_budget_mse(2, c1, c2, N)
    # ... but not the group estimator's best G when c₁ ≪ c₂
    best = min(T.group_budget_mse(G, c1, c2, N) for G in range(2, 200))
    assert best < 0.8 * T.critic_budget_mse(c1, c2, 1.0, 0.0, N)
    # and a cheap, accurate critic wins when prompts disagree as much as completions do
    assert T.critic_budget_mse(1.0, 1.0, 0.1, 0.0, N) < min(
        T.group_budget_mse(G, 1.0, 1.0, N) for G in range(2, 200))


def test_baseline_estimators_mc_agree_with_the_closed_forms():
    rewards = (1.0, 0.0, 0.0, 1.0, 0.0)   # the greedy action is correct: ReMax's b = 1
    pi = _softmax(LOGITS)
    r = np.asarray(rewards)
    mu = float(pi @ r)
    s2 = float(pi @ (r - mu) ** 2)
    G, e = 4, 0.5
    mc = S.baseline_estimators_mc(LOGITS, rewards, G, critic_error=e, n_groups=60_000, seed=5)
    expected = {"reinforce": (0.0, 0.0), "remax": (1.0, 0.0), "oracle": (mu, 0.0),
                "critic": (mu, e * s2), "loo": (mu, s2 / (G - 1))}
    for name, (b, v) in expected.items():
        assert mc[f"{name}_scale"].agrees_with(1.0), name
        assert mc[f"{name}_second_moment"].agrees_with(
            T.reinforce_second_moment(LOGITS, rewards, b, v)), name
    assert mc["grpo_scale"].agrees_with((G - 1) / G)
    assert not mc["grpo_scale"].agrees_with(1.0)          # the check can fail
    assert not mc["reinforce_second_moment"].agrees_with(
        T.reinforce_second_moment(LOGITS, rewards, mu))


def test_state_dependent_baseline_is_unbiased_and_action_dependent_is_not():
    rng = np.random.default_rng(11)
    z1, z2 = rng.normal(size=3), rng.normal(size=(3, 3))
    R = rng.random((3, 3))
    out = S.state_baseline_mc(z1, z2, R, [0.9, 0.1, 0.5], n_samples=200_000, seed=2)
    assert out["state_dependent"].agrees_with(1.0)
    assert not out["action_dependent"].agrees_with(1.0)


# ---- ch. 09: loss aggregation ----------------------------------------------------------
def _trl_weights(lengths, loss_type, L_max=None):
    """TRL 1.16's aggregation transcribed, and differentiated by finite differences.

    The loss is linear in the per-token terms x_{i,t}, so its derivative in each is the
    token's weight."""
    n, T_ = len(lengths), max(lengths)
    mask = np.array([[1.0] * L + [0.0] * (T_ - L) for L in lengths])

    def loss(x):
        if loss_type == "grpo":
            return ((x * mask).sum(-1) / np.maximum(mask.sum(-1), 1)).mean()
        if loss_type in ("bnpo", "dapo"):
            return (x * mask).sum() / max(mask.sum(), 1)
        return (x * mask).sum() / (n * L_max)

    x0 = np.zeros((n, T_))
    weights = []
    for i in range(n):
        x = x0.copy()
        x[i, 0] = 1.0
        weights.append(loss(x) - loss(x0))
    return np.array(weights)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dapo", "dr_grpo"])
def test_loss_token_weights_match_trls_aggregation(loss_type):
    lengths = [3, 17, 8, 1, 40]
    got = T.loss_token_weights(lengths, loss_type, max_completion_length=64)
    np.testing.assert_allclose(got, _trl_weights(lengths, loss_type, 64), rtol=1e-12)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo"])
def test_loss_token_weights_match_grpolabs_torch_loss(loss_type):
    torch = pytest.importorskip("torch")
    from grpolab.grpo.loss import grpo_loss

    lengths = [2, 5, 3, 6]
    n, T_ = len(lengths), max(lengths)
    mask = torch.tensor([[1.0] * L + [0.0] * (T_ - L) for L in lengths])
    logp = torch.zeros(n, T_, dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([1.0, -0.5, 2.0, -1.0], dtype=torch.float64)
    loss, _ = grpo_loss(logp, logp.detach(), None, adv, mask, loss_type=loss_type,
                        max_completion_length=8)
    loss.backward()
    # at ratio 1 the per-token loss is −A ρ, so d loss / d log π = −A w
    grad = -logp.grad[:, 0].numpy() / adv.numpy()
    np.testing.assert_allclose(grad, T.loss_token_weights(lengths, loss_type, 8), rtol=1e-12)


def test_length_bias_of_the_per_sequence_mean():
    # a right answer of 100 tokens and a wrong one of 400: grpo pushes each token of the
    # short one 4x harder, dapo and dr_grpo weigh every token alike
    w = T.loss_token_weights([100, 400], "grpo")
    assert w[0] / w[1] == pytest.approx(4.0)
    for lt in ("dapo", "dr_grpo"):
        w = T.loss_token_weights([100, 400], lt, max_completion_length=512)
        assert w[0] == w[1]
    with pytest.raises(ValueError, match="max_completion_length"):
        T.loss_token_weights([100, 600], "dr_grpo", max_completion_length=512)
    with pytest.raises(ValueError, match="max_completion_length"):
        T.loss_token_weights([100], "dr_grpo")


def test_informative_share_is_one_minus_the_zero_variance_fraction():
    ps = [0.02, 0.3, 0.5, 0.97]
    for G in (2, 8, 32):
        assert T.informative_share(ps, G) == pytest.approx(
            1 - T.empirical_zero_variance_probability(ps, G), rel=1e-12)
    mc = S.informative_share_mc(ps, 8, prompts=16, n_steps=20_000, seed=1)
    assert mc.agrees_with(T.informative_share(ps, 8))
    # lengths that depend on the rewards break the formula (the check can fail)
    longer = S.informative_share_mc(ps, 8, prompts=16, zero_variance_length_factor=3.0,
                                    n_steps=20_000, seed=1)
    assert not longer.agrees_with(T.informative_share(ps, 8))


def test_sequence_importance_ratio_is_the_geometric_mean_of_token_ratios():
    rho = np.array([1.1, 0.8, 1.3, 0.95])
    got = T.sequence_importance_ratio(np.log(rho).sum(), rho.size)
    assert got == pytest.approx(np.prod(rho) ** (1 / rho.size), rel=1e-12)
    assert got != pytest.approx(np.prod(rho))
    with pytest.raises(ValueError, match="log_ratio_sum"):
        T.sequence_importance_ratio(1e6, 1)


# ---- ch. 10: DAPO --------------------------------------------------------------------
def test_clip_higher_bounds_are_daposs_example():
    # DAPO §3.1: π_old = 0.01 and 0.9 reach at most 0.012 and 1.08 (i.e. 1) with ε = 0.2
    np.testing.assert_allclose(T.clipped_probability_bound([0.01, 0.9], 0.2), [0.012, 1.0])
    assert T.clipped_probability_bound(0.01, 0.28) == pytest.approx(0.0128)


def test_soft_overlong_penalty_is_a_ramp_over_the_cache():
    L_max, cache = 20480, 4096
    lengths = np.array([0, 16384, 16385, 18432, 20480, 30000])
    got = T.soft_overlong_penalty(lengths, L_max, cache)
    direct = [0.0 if L <= L_max - cache else ((L_max - cache) - L) / cache if L <= L_max
              else -1.0 for L in lengths]
    np.testing.assert_allclose(got, direct)
    assert got[3] == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="cache_length"):
        T.soft_overlong_penalty(100, 64, 128)


def test_truncation_makes_groups_constant_whatever_p_is():
    for p in (0.2, 0.5, 0.9):
        for G in (4, 16):
            q = p * (1 - 0.3)
            assert T.truncated_zero_variance_probability(p, G, 0.3) == pytest.approx(
                q**G + (1 - q) ** G, rel=1e-12)
        assert T.truncated_zero_variance_probability(p, 16, 1.0) == 1.0
    assert T.truncated_zero_variance_probability(0.5, 8, 0.0) == pytest.approx(2 * 0.5**8)
    mc = S.truncated_zero_variance_mc(0.5, 8, 0.3, n_groups=200_000, seed=4)
    assert mc.agrees_with(T.truncated_zero_variance_probability(0.5, 8, 0.3))
    assert not mc.agrees_with(T.zero_variance_probability(0.5, 8))


def test_updates_per_rollout_and_policy_lag():
    # verl's DAPO recipe: 512 prompts × 16, minibatches of 32 prompts (512 completions)
    assert T.updates_per_rollout(512, 16, 32 * 16) == 16
    assert T.mean_policy_lag(16) == 7.5
    assert T.updates_per_rollout(512, 16, 32 * 16, num_iterations=2) == 32
    # TRL's default: one optimizer step per generation batch, on-policy
    assert T.updates_per_rollout(8, 8, 64) == 1 and T.mean_policy_lag(1) == 0.0
    with pytest.raises(ValueError, match="minibatch_size"):
        T.updates_per_rollout(10, 3, 4)


# ---- ch. 06: the std division's per-prompt factor --------------------------------------
def test_std_scaled_gradient_factor_matches_the_referees_numbers_and_its_limit():
    got = [T.std_scaled_gradient_factor(0.2, G) for G in (2, 4, 8, 16)]
    np.testing.assert_allclose(got, [0.707, 1.435, 1.970, 2.271], atol=2e-3)
    assert T.std_scaled_gradient_factor(0.2, 4096, eps=0.0) == pytest.approx(2.5, rel=2e-3)
    # symmetric in p ↔ 1 − p, and it depends on G (the bias moves with G)
    assert T.std_scaled_gradient_factor(0.1, 8) == pytest.approx(
        T.std_scaled_gradient_factor(0.9, 8))
    assert T.std_scaled_gradient_factor(0.5, 2) != pytest.approx(
        T.std_scaled_gradient_factor(0.5, 16))


def test_std_scaled_gradient_factor_matches_a_softmax_simulation():
    logits, rewards = (1.5, 0.0, 0.0, 0.0, 0.0), (1, 0, 0, 0, 0)
    p = S.softmax_policy_moments(logits, rewards)["mu"]
    for G in (2, 8):
        mc = S.leave_one_out_gradient_mc(logits, rewards, G, n_groups=100_000, seed=G)
        assert mc["std_scaled_gradient_scale"].agrees_with(T.std_scaled_gradient_factor(p, G))
        assert not mc["std_scaled_gradient_scale"].agrees_with(1.0)


# ---- the drill exercises of ch. 08–10 accept independent answers -----------------------
def test_new_drill_exercises_accept_independent_answers():
    from grpolab.drill.exercises import check

    assert check("derive-optimal-constant-baseline",
                 lambda p: (p * 2 * (1 - p) ** 2) / (p * 2 * (1 - p) ** 2 + (1 - p) * 2 * p**2))
    assert check("derive-sequence-ratio", lambda S_, n: math.exp(S_) ** (1 / n))
    assert check("derive-truncated-zero-variance",
                 lambda p, G, t: sum(math.comb(G, k) * (p * (1 - t)) ** k
                                     * (1 - p * (1 - t)) ** (G - k) for k in (0, G)))
    assert check("loss-dilution-40-of-64", "37.5%")
    assert not check("clip-higher-p002", 0.024)
    assert check("card-why-no-critic", "c")
