"""Monte Carlo agrees with every closed form within 5 standard errors (seeded, so not flaky)."""

from __future__ import annotations

import numpy as np
import pytest

from grpolab import simulate as S
from grpolab import theory as T


@pytest.mark.parametrize("p, G", [(0.1, 4), (0.1, 16), (0.5, 2), (0.9, 8), (0.02, 64)])
def test_zero_variance_frequency(p, G):
    est = S.zero_variance_mc(p, G, n_groups=400_000, seed=1)
    assert est.agrees_with(T.zero_variance_probability(p, G))


def test_zero_variance_beta_prior():
    for a, b, G in [(1, 1, 8), (0.5, 2.0, 16)]:
        est = S.zero_variance_beta_mc(G, a, b, n_groups=400_000, seed=2)
        assert est.agrees_with(T.beta_zero_variance_probability(G, a, b))


@pytest.mark.parametrize("G", [2, 4, 16, 64])
def test_baseline_variance(G):
    p = 0.3
    est = S.baseline_variance_mc(G, p=p, n_groups=400_000, seed=3)
    assert est.agrees_with(T.baseline_variance(p * (1 - p), G))
    g = S.baseline_variance_mc(G, reward="gaussian", sigma=2.0, n_groups=20_000, seed=4)
    assert g.agrees_with(T.baseline_variance(4.0, G))


def test_dynamic_sampling_cost_and_cap():
    p, G, B, b = 0.1, 8, 32, 64
    sim = S.dynamic_sampling_mc(p, G, B, b, max_batches=50, n_trials=20_000, seed=5)
    # E[groups] = B/q holds for a sampler that stops at the B-th informative group
    assert sim["groups"].agrees_with(T.dynamic_sampling_expected_groups(p, G, B))
    assert sim["completions"].agrees_with(T.dynamic_sampling_expected_completions(p, G, B))
    assert sim["batches"].agrees_with(T.dynamic_sampling_expected_batches(p, G, B, b))
    capped = S.dynamic_sampling_mc(0.03, 4, 16, 32, max_batches=2, n_trials=20_000, seed=6)
    cap = T.dynamic_sampling_cap_probability(0.03, 4, 16, 32, 2)
    assert capped["cap_probability"].agrees_with(cap)


def test_identical_groups():
    probs = [0.7, 0.2, 0.1]
    est = S.identical_group_mc(probs, 4, n_groups=200_000, seed=7)
    assert est.agrees_with(T.identical_group_probability(probs, 4))


def test_group_std_values_match_the_binary_formula():
    stds = S.group_std_mc(0.5, 4, n_groups=10_000, seed=8)
    allowed = {round(float(np.sqrt(4 / 3 * (k / 4) * (1 - k / 4))), 12) for k in range(5)}
    assert {round(float(s), 12) for s in np.unique(stds)} <= allowed


def test_seeded():
    # speed is measured by benchmarks/bench_theory.py (groups/s), not asserted here
    assert S.zero_variance_mc(0.3, 8, seed=9) == S.zero_variance_mc(0.3, 8, seed=9)
    assert S.zero_variance_mc(0.3, 8, seed=9) != S.zero_variance_mc(0.3, 8, seed=10)
    assert S.zero_variance_mc(0.3, 8, seed=np.random.SeedSequence(9)).n == 1_000_000


def test_mc_estimate_can_disagree():
    est = S.zero_variance_mc(0.1, 4, n_groups=100_000, seed=0)
    assert not est.agrees_with(0.5)


# ---- bad input (issue 15, item 2) -----------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda: S.zero_variance_mc(0.3, 1e20), "^G must be an integer"),
    (lambda: S.zero_variance_mc(0.3, float("inf")), "^G must be an integer"),
    (lambda: S.zero_variance_mc([0.1, 0.2], 4), "^p must be a single probability"),
    (lambda: S.zero_variance_mc("0.3", 4), "^p must be a probability"),
    (lambda: S.zero_variance_mc(0.3, 4, n_groups=float("nan")), "^n_groups must be an integer"),
    (lambda: S.zero_variance_mc(0.3, 4, n_groups=10**9), "^n_groups must be an integer"),
    (lambda: S.zero_variance_mc(0.3, 4, seed=-1), "^seed must be an integer >= 0"),
    (lambda: S.zero_variance_mc(0.3, 4, seed="x"), "^seed must be an integer"),
    (lambda: S.zero_variance_beta_mc(4, 0.0, 1.0), "^a must be a finite number"),
    (lambda: S.zero_variance_beta_mc(4, 1.0, float("nan")), "^b must be a finite number"),
    (lambda: S.baseline_variance_mc(4, reward="gaussian", sigma=float("inf")), "^sigma must be"),
    (lambda: S.baseline_variance_mc(4, reward="poisson"), "^reward must be one of"),
    (lambda: S.baseline_variance_mc(10**5, reward="gaussian", n_groups=10**4),
     "^n_groups × G: .* draws exceed"),
    (lambda: S.group_std_mc(0.5, 4, ddof=2), "^ddof must be 0 or 1"),
    (lambda: S.group_std_mc(0.5, 1), "^G must be an integer >= 2"),
    (lambda: S.dynamic_sampling_mc(0.1, 8, 4, 64, max_batches=1000, n_trials=20_000),
     "^n_trials × max_batches × groups_per_batch"),
    (lambda: S.identical_group_mc([0.5, 0.4], 4), "^probs must be one distribution"),
    (lambda: S.identical_group_mc([[0.5, 0.5], [0.5, 0.5]], 4), "^probs must be one"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


UNIFORM = ((0.0,) * 5, (1.0, 0.0, 0.0, 0.0, 0.0))
PEAKED = ((2.0, 1.0, 0.5, 0.0, -1.0), (0.3, 1.0, 0.1, 0.7, 0.2))


@pytest.mark.parametrize("G", [2, 4, 16])
@pytest.mark.parametrize("logits, rewards", [UNIFORM, PEAKED], ids=["uniform", "peaked"])
def test_leave_one_out_gradient_second_moment_and_group_mse(logits, rewards, G):
    m = S.softmax_policy_moments(logits, rewards)
    mc = S.leave_one_out_gradient_mc(logits, rewards, G, n_groups=100_000, seed=G)
    # E‖g_i‖² = E[(r − μ)²‖∇log π‖²] + σ²/(G − 1) · E‖∇log π‖²
    assert mc["loo_second_moment"].agrees_with(m["weighted"] + m["sigma2"] / (G - 1)
                                               * m["score_sq"])
    assert mc["oracle_second_moment"].agrees_with(m["weighted"])
    # the group gradient: tr Σ_oracle / G, plus the baseline's cost, of order 1/G²
    oracle = (m["weighted"] - m["true_gradient_sq"]) / G
    assert mc["oracle_group_mse"].agrees_with(oracle)
    assert mc["loo_group_mse"].agrees_with(
        oracle + (m["sigma2"] * m["score_sq"] + m["true_gradient_sq"]) / (G * (G - 1)))
    # GRPO's r̄ contains r_i: the expected gradient is scaled by (G − 1)/G
    assert mc["grpo_gradient_scale"].agrees_with(T.rloo_scale_factor(G))
    # the oracle moment alone is not the leave-one-out one: the check can fail
    assert not mc["loo_second_moment"].agrees_with(m["weighted"])


def test_inflation_is_exactly_G_over_G_minus_1_when_the_score_norm_is_constant():
    # uniform logits: ‖e_a − π‖² is the same for every action, so the reward is
    # uncorrelated with it and the ratio is G/(G − 1) exactly
    for G in (2, 8):
        mc = S.leave_one_out_gradient_mc(*UNIFORM, G, n_groups=200_000, seed=10 + G)
        ratio = mc["loo_second_moment"].mean / mc["oracle_second_moment"].mean
        assert abs(ratio - T.gradient_variance_inflation(G)) < 0.03 * ratio


def test_std_scaling_is_not_a_constant_rescale():
    # the std-scaled gradient's scale depends on the pass rate, not only on G
    p_low = S.leave_one_out_gradient_mc((0.0, 0.0), (1.0, 0.0), 8, n_groups=50_000, seed=11)
    p_mid = S.leave_one_out_gradient_mc((2.0, 0.0), (1.0, 0.0), 8, n_groups=50_000, seed=12)
    a, b = p_low["std_scaled_gradient_scale"], p_mid["std_scaled_gradient_scale"]
    assert abs(a.mean - b.mean) > 5 * np.hypot(a.stderr, b.stderr)


def test_softmax_simulator_rejects_bad_input():
    with pytest.raises(ValueError, match="rewards must be 3"):
        S.leave_one_out_gradient_mc((0.0, 1.0, 2.0), (1.0, 0.0), 4)
    with pytest.raises(ValueError, match="G must be an integer >= 2"):
        S.leave_one_out_gradient_mc((0.0, 1.0), (1.0, 0.0), 1)
    with pytest.raises(ValueError, match="logits"):
        S.softmax_policy_moments((float("nan"), 0.0), (1.0, 0.0))


TOY_PROMPTS = [((0.0,) * 5, (1, 0, 0, 0, 0)), ((1.0, 0, 0, 0, -1.0), (0, 0, 0, 0, 1)),
               ((0.0, 0.5, 0, 0, 0), (0, 1, 1, 0, 0))]


@pytest.mark.parametrize("B, G", [(32, 2), (8, 8), (2, 32), (5, 3)])
def test_minibatch_gradient_mse_has_the_three_terms(B, G):
    c = S.minibatch_gradient_constants(TOY_PROMPTS)
    mc = S.minibatch_gradient_mc(TOY_PROMPTS, B, G, n_trials=20_000, seed=B * G)
    assert mc.agrees_with(c["c1"] / B + c["c2"] / (B * G) + c["c3"] / (B * G * (G - 1)))
    # the c1 term is real: dropping it is rejected
    assert not mc.agrees_with(c["c2"] / (B * G) + c["c3"] / (B * G * (G - 1)))


def test_minibatch_optimum_at_a_fixed_budget_is_next_to_g_star():
    c = S.minibatch_gradient_constants(TOY_PROMPTS)
    g_star = T.optimal_group_size(c["c1"], c["c3"])
    mse = {G: S.minibatch_gradient_mc(TOY_PROMPTS, 64 // G, G, n_trials=20_000, seed=G).mean
           for G in (2, 4, 8, 16)}
    assert 2 ** np.floor(np.log2(g_star)) <= min(mse, key=mse.get) <= 2 ** np.ceil(
        np.log2(g_star))


def test_minibatch_simulator_rejects_bad_input():
    with pytest.raises(ValueError, match="same number of actions"):
        S.minibatch_gradient_mc([((0.0, 0.0), (1, 0)), ((0.0, 0.0, 0.0), (1, 0, 0))], 4, 4)
    with pytest.raises(ValueError, match="at least one"):
        S.minibatch_gradient_constants([])


# ---- the simulators of ch. 02 and ch. 11–13 -------------------------------------------
def test_gradient_estimators_mc_checks_the_scope_section():
    logits, rewards = (0.0,) * 5, (1, 0, 0, 0, 0)                     # p = 0.2
    m = S.softmax_policy_moments(logits, rewards)
    for G in (2, 8):
        out = S.gradient_estimators_mc(logits, rewards, G, n_batches=20_000,
                                       prompts_per_batch=4, seed=G)
        assert out["leave_one_out"]["scale"].agrees_with(1.0)
        assert out["mean"]["scale"].agrees_with((G - 1) / G)
        assert out["group_std"]["scale"].agrees_with(float(T.std_scaled_gradient_factor(0.2, G)))
        # the planted "std division only rescales by (G − 1)/G" is rejected
        assert not out["group_std"]["scale"].agrees_with((G - 1) / G)
        loo = out["leave_one_out"]["mse"].mean
        assert out["mean"]["mse"].agrees_with(
            float(T.mean_baseline_gradient_mse(loo, m["true_gradient_sq"], G)))
        nsr = out["leave_one_out"]["noise_to_signal"]
        assert out["mean"]["noise_to_signal"] == pytest.approx(nsr, rel=1e-9)


def test_pass_at_k_mc_is_unbiased_and_the_plug_in_is_not():
    rates = np.linspace(0.01, 0.9, 40)
    out = S.pass_at_k_mc(rates, 16, 4, n_trials=4_000, seed=1)
    exact = float(T.expected_pass_at_k(rates, 4))
    assert out["unbiased"].agrees_with(exact)
    assert not out["plug_in"].agrees_with(exact)
    with pytest.raises(ValueError, match="^k must be <= n"):
        S.pass_at_k_mc(rates, 4, 8)


def test_kl_simulators_agree_with_the_closed_forms():
    z, z_ref = (0.0, 1.0, -0.5), (0.3, 0.0, 0.0)
    pi, ref = np.exp(z) / np.exp(z).sum(), np.exp(z_ref) / np.exp(z_ref).sum()
    est = S.kl_estimator_mc(z, z_ref, n_samples=200_000, seed=1)
    for name in ("k1", "k2", "k3"):
        assert est[name].agrees_with(T.kl_estimator_moments(pi, ref, name)[0])
    assert not est["k2"].agrees_with(T.categorical_kl(pi, ref))
    for placement in T.KL_PLACEMENTS:
        mc = S.kl_gradient_mc(z, z_ref, placement, n_samples=200_000, seed=2)
        exact = T.kl_penalty_gradient(z, z_ref, placement)
        assert all(m.agrees_with(e) for m, e in zip(mc, exact, strict=True)), placement
    wrong = T.kl_penalty_gradient(z, z_ref, "loss_k2")  # the reverse-KL gradient
    mc = S.kl_gradient_mc(z, z_ref, "loss_k3", n_samples=200_000, seed=2)
    assert not all(m.agrees_with(e) for m, e in zip(mc, wrong, strict=True))
    with pytest.raises(ValueError, match="^ref_logits must be"):
        S.kl_estimator_mc(z, (0.0, float("nan"), 0.0))


def test_entropy_change_mc_even_part_is_the_second_order_term():
    z, r = np.array([1.0, 0.5, 0.0, -0.5, -1.0]), np.array([0, 1, 0, 0, 0.0])
    pi = np.exp(z) / np.exp(z).sum()
    grad = pi * (r - pi @ r)
    hess = T.entropy_hessian(pi)
    for G in (2, 8):
        eta = 0.3
        mc = S.entropy_change_mc(z, r, G, eta, n_trials=200_000, seed=G)
        C = eta**2 * T.loo_gradient_covariance(pi, r, G)
        m = eta * grad
        assert mc["even"].agrees_with(0.5 * (m @ hess @ m + np.sum(hess * C)))
        assert not mc["even"].agrees_with(0.5 * (m @ hess @ m))  # the noise term is real
        full = T.expected_entropy_change(pi, m, C)
        assert abs(mc["change"].mean - full) < 0.1 * abs(full)   # to third order in η


def test_kl_estimator_mc_is_finite_when_the_reference_probability_underflows():
    """ref_logits 1000 apart: π_ref(x) underflows to 0 in floating point, the KL does not.
    The estimate matches KL(π‖π_ref) from log-softmaxes within 4 standard errors."""
    z, z_ref = np.array([0.0, 1.0]), np.array([1000.0, 0.0])
    log_pi = z - np.logaddexp.reduce(z)
    log_ref = z_ref - np.logaddexp.reduce(z_ref)
    exact = float(np.sum(np.exp(log_pi) * (log_pi - log_ref)))
    est = S.kl_estimator_mc(z.tolist(), z_ref.tolist(), n_samples=4000, seed=0)
    assert all(np.isfinite(e.mean) for e in est.values())
    assert abs(est["k1"].mean - exact) < 4 * est["k1"].stderr


def test_entropy_change_mc_is_finite_when_a_probability_underflows():
    """Logits 1e90 apart give an action of probability 0.0 in floating point: its log must
    stay finite (log-softmax), not -inf and a NaN entropy (hypothesis found the case)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = S.entropy_change_mc([1e90, 0.0, -1e90], [1.0, 0.0, 0.0], 4, 0.5, n_trials=200)
    assert np.isfinite(out["change"].mean) and np.isfinite(out["even"].mean)
