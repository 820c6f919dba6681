"""grpolab.theory: the cards' numbers, exact identities, stability, and bad input."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
import sys
import warnings
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from grpolab import theory as T

probs = st.floats(0.0, 1.0, allow_nan=False)
sizes = st.integers(1, 10_000)


# ---- the cards' numbers --------------------------------------------------------------
def test_card_numbers_all_fail_at_p_0_1():
    assert T.all_fail_probability(0.1, 4) == pytest.approx(0.9**4) == pytest.approx(0.6561)
    assert round(T.all_fail_probability(0.1, 16), 4) == 0.1853
    # the zero-variance probability adds the (tiny) all-pass term p^G
    assert T.zero_variance_probability(0.1, 4) == pytest.approx(0.6561 + 0.0001)
    assert round(T.zero_variance_probability(0.1, 16), 4) == 0.1853


def test_card_numbers_baseline_variance():
    assert T.baseline_variance(1.0, 16) == 0.0625
    assert T.baseline_variance(1.0, 64) == 0.015625
    assert T.baseline_standard_error(4.0, 16) == pytest.approx(0.5)


def test_references_binary_advantage_example():
    # references.md: G = 4, one correct -> 1.5 (unbiased std) or 1.73 (biased std)
    pos, neg = T.binary_advantages(1, 4, ddof=1, eps=0.0)
    assert pos == pytest.approx(1.5) and neg == pytest.approx(-0.5)
    pos0, _ = T.binary_advantages(1, 4, ddof=0, eps=0.0)
    assert pos0 == pytest.approx(math.sqrt(3)) and pos0 / pos == pytest.approx(math.sqrt(4 / 3))


# ---- exact identities ----------------------------------------------------------------
def test_binary_advantages_match_group_advantages_for_all_k():
    from grpolab.advantages import group_advantages

    for G, ddof, baseline, scale in product([2, 3, 4, 8, 16], [0, 1], ["mean", "leave_one_out"],
                                           ["group", "none"]):
        for k in range(G + 1):
            rewards = np.array([1.0] * k + [0.0] * (G - k))
            adv = group_advantages(rewards, G, ddof=ddof, baseline=baseline, scale=scale)
            pos, neg = T.binary_advantages(k, G, ddof=ddof, baseline=baseline, scale=scale)
            if 0 < k < G:
                assert adv[0] == pytest.approx(pos) and adv[-1] == pytest.approx(neg)
            else:
                assert np.allclose(adv, 0.0)
                assert pos == 0.0 and neg == 0.0


def test_rloo_scale_factor_relates_the_two_baselines():
    from grpolab.advantages import group_advantages

    rng = np.random.default_rng(0)
    for G in [2, 4, 16]:
        r = rng.normal(size=5 * G)
        grpo = group_advantages(r, G, scale="none")
        rloo = group_advantages(r, G, scale="none", baseline="leave_one_out")
        assert np.allclose(grpo, T.rloo_scale_factor(G) * rloo)


def test_beta_prior_matches_numerical_integration():
    for a, b, G in [(1, 1, 8), (0.5, 0.5, 4), (2, 5, 16), (0.3, 3.0, 64)]:
        def integrand(p, a=a, b=b, G=G):
            return (p**G + (1 - p) ** G) * p ** (a - 1) * (1 - p) ** (b - 1)

        num, _ = integrate.quad(integrand, 0, 1, limit=200)
        den = math.gamma(a) * math.gamma(b) / math.gamma(a + b)
        assert T.beta_zero_variance_probability(G, a, b) == pytest.approx(num / den, rel=1e-6)


def test_uniform_prior_closed_form():
    # Beta(1, 1): E[p^G] = 1/(G+1), so P(zero gradient) = 2/(G+1)
    G = np.arange(1, 50)
    assert np.allclose(T.beta_zero_variance_probability(G, 1, 1), 2 / (G + 1))


def test_empirical_average_is_a_mean_over_prompts():
    ps = [0.0, 0.2, 0.5, 1.0]
    expected = np.mean([p**8 + (1 - p) ** 8 for p in ps])
    assert T.empirical_zero_variance_probability(ps, 8) == pytest.approx(expected)
    assert T.empirical_zero_variance_probability(ps, [4, 8]).shape == (2,)


def test_unbiased_estimate_is_unbiased():
    # E over k ~ Binomial(n, p) of the U-statistic equals p^G + (1-p)^G exactly
    from scipy.stats import binom

    for p, n, G in [(0.3, 16, 8), (0.05, 32, 16), (0.9, 10, 10)]:
        k = np.arange(n + 1)
        est = T.unbiased_zero_variance_estimate(k, n, G)
        assert np.sum(binom.pmf(k, n, p) * est) == pytest.approx(T.zero_variance_probability(p, G))


def test_informative_prompts_and_dynamic_sampling():
    q = 1 - T.zero_variance_probability(0.1, 8)
    assert T.expected_informative_prompts(0.1, 8, 64) == pytest.approx(64 * q)
    assert T.expected_informative_prompts([0.1, 0.5], 8, None) == pytest.approx(
        2 - T.zero_variance_probability(0.1, 8) - T.zero_variance_probability(0.5, 8))
    assert T.dynamic_sampling_expected_groups(0.1, 8, 512) == pytest.approx(512 / q)
    assert T.dynamic_sampling_expected_completions(0.1, 8, 512) == pytest.approx(8 * 512 / q)
    assert T.dynamic_sampling_expected_groups(0.0, 8, 10) == math.inf
    # a cap of k batches: monotone decreasing in k, = P(Binomial(kb, q) < B)
    caps = T.dynamic_sampling_cap_probability(0.1, 8, 32, 64, [1, 2, 3])
    assert np.all(np.diff(caps) < 0)


def test_sampling_cost_model():
    c = T.sampling_cost(16, 8, 100, 50, share_prompt_kv=False)
    assert c.completions == 128 and c.generated_tokens == 128 * 50
    assert c.prompt_tokens_encoded == 128 * 100 and c.kv_cache_tokens == 128 * 150
    s = T.sampling_cost(16, 8, 100, 50, share_prompt_kv=True)
    assert s.prompt_tokens_encoded == 16 * 100 and s.kv_cache_tokens == 16 * (100 + 8 * 50)
    assert s.total_tokens == 16 * 100 + 128 * 50
    assert T.fixed_budget_prompts(64, np.array([2, 4, 8, 16, 32])).tolist() == [32, 16, 8, 4, 2]


def test_identical_group_probability():
    assert T.identical_group_probability([0.5, 0.5], 2) == pytest.approx(0.5)
    assert T.identical_group_probability([1.0, 0.0], 16) == 1.0
    assert T.identical_group_probability([0.9, 0.1], [2, 4]) == pytest.approx(
        [0.82, 0.9**4 + 0.1**4])


# ---- properties ------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(p=probs, G=sizes)
def test_probabilities_are_probabilities(p, G):
    for f in (T.zero_variance_probability, T.any_success_probability, T.informative_probability,
              T.all_fail_probability, T.all_pass_probability):
        v = f(p, G)
        assert 0.0 <= v <= 1.0 and not math.isnan(v)
    assert T.zero_variance_probability(p, G) + T.informative_probability(p, G) == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(p=probs, G=st.integers(1, 5000))
def test_symmetry_and_monotonicity(p, G):
    assert T.zero_variance_probability(p, G) == pytest.approx(T.zero_variance_probability(1 - p, G),
                                                               rel=1e-9, abs=1e-300)
    assert T.zero_variance_probability(p, G + 1) <= T.zero_variance_probability(p, G) + 1e-15
    assert T.any_success_probability(p, G + 1) >= T.any_success_probability(p, G) - 1e-15
    assert T.baseline_variance(1.0, G + 1) < T.baseline_variance(1.0, G)


@settings(max_examples=100, deadline=None)
@given(p=probs)
def test_limits_and_bernoulli_bound(p):
    assert T.zero_variance_probability(p, 1) == pytest.approx(1.0)
    assert T.bernoulli_variance(p) <= T.BERNOULLI_VARIANCE_MAX
    assert T.zero_variance_probability(p, 10_000) <= 1.0
    if 0.0 < p < 1.0:
        # the informative part is computed directly, so it stays > 0 even when
        # p^G + (1-p)^G rounds to 1 in float
        assert T.informative_probability(p, 2) > 0.0


def test_stable_near_zero_and_one_for_large_G():
    # 1 - (1 - 1e-12)^10000 = 1e-8 to 8 digits: naive 1 - (1-p)**G loses it to cancellation
    assert T.any_success_probability(1e-12, 10_000) == pytest.approx(1e-8, rel=1e-6)
    assert T.informative_probability(1 - 1e-12, 10_000) == pytest.approx(1e-8, rel=1e-6)
    grid = T.zero_variance_probability(np.linspace(0, 1, 1001)[:, None], np.arange(1, 10_001)[None])
    assert grid.shape == (1001, 10_000) and np.isfinite(grid).all()
    assert T.zero_variance_probability(0.5, 10_000) == 0.0  # underflows to 0, not NaN


# ---- bad input (issue 15, item 2; tests/test_api_properties.py covers the whole API) ----
INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("G", [0, -3, 2.5, NAN, INF, -INF, 1e20, 2**63, 2**64, 10**400,
                               T.MAX_GROUP_SIZE + 1, "eight", "4", ["4"], None, True],
                         ids=repr)
def test_bad_group_size_names_G(G):
    # 1e20 and 2**63 used to wrap in the int64 cast and give inf "probabilities"
    with pytest.raises(ValueError, match="G must be an integer"):
        T.zero_variance_probability(0.5, G)


def test_group_size_domain_edge_is_accurate():
    G = T.MAX_GROUP_SIZE
    assert T.any_success_probability(1e-9, G) == pytest.approx(-math.expm1(G * -1e-9), rel=1e-9)
    assert T.zero_variance_probability(0.5, [1, G]).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("p", [-0.1, 1.5, NAN, INF, -INF, 1e308])
def test_bad_probability_names_p(p):
    with pytest.raises(ValueError, match="p must be a probability"):
        T.zero_variance_probability(p, 4)


@pytest.mark.parametrize("p", ["0.1", ["0.1"], None, [None], True, 1 + 0j, [[0.1], [0.2, 0.3]]])
def test_wrong_type_probability_is_a_type_error_naming_p(p):
    # numeric strings used to be converted silently
    with pytest.raises(TypeError, match="^p must be a probability"):
        T.all_fail_probability(p, 4)


def test_fixed_budget_prompts_refuses_what_would_wrap():
    for budget in (INF, NAN, 1e20, -1):  # inf used to give -9223372036854775808
        with pytest.raises(ValueError, match="^budget must be a finite number >= 0"):
            T.fixed_budget_prompts(budget, 4)
    assert T.fixed_budget_prompts(10**15, 4) == 250_000_000_000_000


@pytest.mark.parametrize("k", [NAN, 2.5, -1, INF, "1", True])
def test_binary_advantages_k_must_be_a_count(k):
    # binary_advantages(nan, 4) used to return NaN; 2.5 was accepted
    with pytest.raises(ValueError, match="^k must be"):
        T.binary_advantages(k, 4)


def test_binary_advantages_other_arguments():
    with pytest.raises(ValueError, match="^k must lie in"):
        T.binary_advantages(5, 4)
    with pytest.raises(ValueError, match="^ddof"):
        T.binary_advantages(1, 4, ddof=True)
    with pytest.raises(ValueError, match="^eps"):
        T.binary_advantages(1, 4, eps=NAN)
    with pytest.raises(ValueError, match="^scale"):
        T.binary_advantages(1, 4, scale="batch")
    assert T.binary_advantages([0, 4], 4, eps=0.0) == (pytest.approx([0, 0]),) * 2


def test_bad_beta_and_budget_inputs():
    for a in (0, -1, NAN, INF, 1e-320):  # a denormal a made betaln inf and the moment NaN
        with pytest.raises(ValueError, match="^a must be a number in"):
            T.beta_zero_variance_probability(4, a, 1)
    with pytest.raises(ValueError, match="^b must be"):
        T.beta_all_fail_probability(4, 1, INF)
    with pytest.raises(ValueError, match="reward_variance"):
        T.baseline_variance(-1.0, 4)
    with pytest.raises(ValueError, match="reward_variance"):
        T.baseline_variance(INF, 4)
    with pytest.raises(ValueError, match="probs"):
        T.identical_group_probability([0.5, 0.4], 4)
    with pytest.raises(TypeError, match="share_prompt_kv"):
        T.sampling_cost(8, 4, 10, 20, share_prompt_kv="no")


def test_probabilities_stay_in_unit_interval_after_rounding():
    p = np.linspace(0, 1, 10_001)
    assert np.asarray(T.zero_variance_probability(p, 1)).max() <= 1.0  # p + (1 − p) > 1 by 1 ulp
    assert np.asarray(T.beta_zero_variance_probability(1, p[1:], 0.5)).max() <= 1.0


def test_unbiased_estimate_accurate_for_huge_trials():
    # a difference of gammaln values gave 1.002 here; the exact value is 1 − 2.6e-11
    assert T.unbiased_zero_variance_estimate(3, 459_828_124_116, 4) == pytest.approx(
        1 - 2.60967e-11, abs=1e-13)
    with pytest.raises(ValueError, match="^successes"):
        T.unbiased_zero_variance_estimate(2.5, 16, 4)
    with pytest.raises(ValueError, match="^trials must be >= G"):
        T.unbiased_zero_variance_estimate(1, 3, 4)


def test_overflowing_results_are_refused_not_inf():
    with pytest.raises(ValueError, match="overflows"):
        T.minibatch_gradient_mse(1, 2, 1e308, 1e308, 1e308)
    with pytest.raises(ValueError, match="overflows"):
        T.optimal_group_size(1e-300, 1e300)


def test_dynamic_sampling_expected_batches_refuses_a_truncated_sum():
    # E[K] ≈ 1/q = 5e4 batches; 1000 terms would silently sum to about 1000
    with pytest.raises(ValueError, match="max_terms=1000 is too few"):
        T.dynamic_sampling_expected_batches(1e-5, 2, 1, 1, max_terms=1000)
    with pytest.raises(TypeError, match="^G must be a single group size"):
        T.dynamic_sampling_expected_batches(0.1, [4, 8], 1, 1)
    assert T.dynamic_sampling_expected_batches(0.0, 4, 1, 1) == INF  # no group can be informative


def test_gradient_noise_forms():
    """G/(G−1) inflation values quoted in theory/02; both MSE forms and their optima."""
    assert T.gradient_variance_inflation(2) == pytest.approx(2.0)
    assert T.gradient_variance_inflation(8) == pytest.approx(8 / 7)
    assert T.gradient_variance_inflation([16]) == pytest.approx([16 / 15])
    with pytest.raises(ValueError, match="G"):
        T.gradient_variance_inflation(1)
    c1, c2, c3 = 0.02, 1.0, 2.0
    assert T.minibatch_gradient_mse(4, 3, c1, c2, c3) == pytest.approx(
        c1 / 4 + c2 / 12 + c3 / (12 * 2))
    assert T.minibatch_gradient_mse(4, 3, c1, c2, c3, form="paper") == pytest.approx(
        c1 / 4 + c2 / 12 + c3 / (12 * 3))
    assert T.optimal_group_size(c1, c3) == pytest.approx(11.0)          # 1 + √100
    assert T.optimal_group_size(c1, c3, form="paper") == pytest.approx(10.0)
    with pytest.raises(ValueError, match="c1"):
        T.optimal_group_size(0.0, 1.0)
    with pytest.raises(ValueError, match="^form must be one of"):
        T.optimal_group_size(c1, c3, form="approx")


def test_g_equal_one_is_refused_with_the_reason():
    """A group of one has no baseline: GRPO's gradient is 0, not c1 + c2 + c3."""
    for form in T.MSE_FORMS:
        with pytest.raises(ValueError, match="^G must be >= 2: at G = 1 a group has no baseline"):
            T.minibatch_gradient_mse(4, 1, 1.0, 1.0, 1.0, form=form)
        with pytest.raises(ValueError, match="^G must be >= 2"):
            T.minibatch_gradient_mse(4, [2, 1], 1.0, 1.0, 1.0, form=form)
    with pytest.raises(ValueError, match="^G must be an integer in"):
        T.minibatch_gradient_mse(4, 0, 1.0, 1.0, 1.0)


def test_an_optimum_below_two_is_flagged():
    with pytest.warns(T.GroupSizeWarning, match="c3 < c1 contradicts the model"):
        assert T.optimal_group_size(1.0, 0.25) == pytest.approx(1.5)
    with pytest.warns(T.GroupSizeWarning, match="paper form"):
        T.optimal_group_size(1.0, 2.0, form="paper")
    # the model's own constraint c3 >= c1 + |grad J|^2 keeps the exact optimum above 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", T.GroupSizeWarning)
        assert T.optimal_group_size(1.0, 1.0 + 1e-9) > 2


def _integer_optimum_is(g_star: float, c1: float, c2: float, c3: float, form: str) -> bool:
    """True if the integer G that minimises N·MSE = G·MSE(1, G) over [2, 4000] (a brute-force
    search at a fixed budget with B = N/G real-valued) is ⌊g_star⌋ or ⌈g_star⌉, whichever
    of the two has the smaller MSE."""
    G = np.arange(2, 4001)
    n_mse = G * np.asarray(T.minibatch_gradient_mse(1, G, c1, c2, c3, form=form))
    best = int(G[np.argmin(n_mse)])
    candidates = sorted({max(2, int(np.floor(g_star))), max(2, int(np.ceil(g_star)))})
    expected = min(candidates, key=lambda g: n_mse[g - 2])
    return best == expected


@pytest.mark.parametrize("form", ["exact", "paper"])
def test_optimum_minimises_the_mse_over_the_integers(form):
    rng = np.random.default_rng(3)
    cases = [(0.01995, 1.0, 0.15168), (0.02, 1.0, 2.0), (0.001, 5.0, 2.0), (0.3, 0.1, 0.31)]
    cases += [(float(c1), float(c2), float(c1 * (1 + m))) for c1, c2, m in
              zip(10 ** rng.uniform(-4, 0, 40), rng.uniform(0, 3, 40), 10 ** rng.uniform(0, 4, 40),
                  strict=True)]
    for c1, c2, c3 in cases:
        with warnings.catch_warnings():
            # c3 >= c1 throughout, so only the paper form's optimum can fall below 2
            warnings.simplefilter("ignore" if form == "paper" else "error", T.GroupSizeWarning)
            g_star = float(T.optimal_group_size(c1, c3, form=form))
        assert _integer_optimum_is(g_star, c1, c2, c3, form), (c1, c2, c3, g_star)


def test_a_planted_wrong_optimum_fails_the_brute_force_check():
    """The paper's √(c₃/c₁) used as the exact model's optimum is off by one: the check sees it
    (the chapter's easier-prompts toy: √ = 2.76, exact optimum 3.76, integer best 4)."""
    c1, c2, c3 = 0.01995, 1.0, 0.15168
    wrong = float(T.optimal_group_size(c1, c3, form="paper"))
    assert not _integer_optimum_is(wrong, c1, c2, c3, "exact")
    assert _integer_optimum_is(float(T.optimal_group_size(c1, c3)), c1, c2, c3, "exact")
    assert not _integer_optimum_is(wrong + 3, c1, c2, c3, "paper")


def test_gradient_mse_explorer_g_star_moves_with_c1_c3_not_the_budget():
    import itertools

    from grpolab.book.sliders import EXPLORERS, explorer_grid

    e = EXPLORERS["gradient-mse"]
    grid = explorer_grid(e)
    sizes = [len(s.values) for s in e.sliders]
    names = [s.name for s in e.sliders]
    g_star_by_c = {}
    for idx in itertools.product(*(range(n) for n in sizes)):
        params = dict(zip(names, (s.values[i] for s, i in zip(e.sliders, idx, strict=True)),
                          strict=True))
        flat = int(np.ravel_multi_index(idx, sizes))
        g_exact, g_paper, best = grid["readouts"][flat][:3]
        assert g_exact == pytest.approx(T.optimal_group_size(params["c1"], params["c3"]),
                                        rel=1e-6)
        assert g_exact - g_paper == pytest.approx(1.0, rel=1e-6)
        # the best integer G sits next to the exact optimum
        assert abs(best - g_exact) < 1, (params, best, g_exact)
        g_star_by_c.setdefault((params["c1"], params["c3"]), set()).add(g_exact)
    assert all(len(v) == 1 for v in g_star_by_c.values()), "G* must not depend on the budget"
    assert len({next(iter(v)) for v in g_star_by_c.values()}) > 10, "G* moves with c1, c3"
    # the plotted exact curve is N·MSE = G·minibatch_gradient_mse(1, G), minimal next to G*
    x, series = e.curves(c1=0.01, c3=1.0)
    n_mse = series["exact: N·MSE = c₁G + c₂ + c₃/(G−1)"]
    ok = ~np.isnan(n_mse)
    G = x[ok].astype(int)
    assert np.allclose(n_mse[ok], G * np.asarray(T.minibatch_gradient_mse(1, G, 0.01, 1.0, 1.0)))
    assert abs(G[np.argmin(n_mse[ok])] - 11) <= 1  # G* = 1 + √100, on a log-spaced grid



# ---- pass@k (Chen et al. 2021) -------------------------------------------------------
def test_pass_at_k_is_the_combinatorial_formula():
    for n, c, k in product(range(1, 13), range(13), range(1, 13)):
        if c > n or k > n:
            continue
        expected = 1 - math.comb(n - c, k) / math.comb(n, k)
        assert T.pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12, abs=1e-15), (n, c, k)


def test_pass_at_k_edges_are_exact_and_it_broadcasts():
    assert T.pass_at_k(200, 0, 50) == 0.0
    assert T.pass_at_k(200, 151, 50) == 1.0       # n − c < k: every 50-subset holds a success
    assert T.pass_at_k(7, 3, 1) == 3 / 7
    assert T.pass_at_k(10, 10, 10) == 1.0
    got = T.pass_at_k(64, [0, 1, 8], [[1], [4], [64]])
    assert np.asarray(got).shape == (3, 3)
    assert np.all(np.asarray(got)[2, 1:] == 1.0)
    # a tiny pass@k keeps its relative accuracy (one success in 10^12 samples, k = 3)
    assert T.pass_at_k(10**12, 1, 3) == pytest.approx(3e-12, rel=1e-9)
    with pytest.raises(ValueError, match="^k must be <= n"):
        T.pass_at_k(4, 1, 5)
    with pytest.raises(ValueError, match="^c must lie in"):
        T.pass_at_k(4, 5, 2)


def test_pass_at_k_is_unbiased_for_one_minus_one_minus_p_to_the_k():
    """E[pass@k] over c ~ Binomial(n, p) is 1 − (1 − p)^k exactly: any_success_probability is
    pass@G. A plug-in 1 − (1 − c/n)^k is biased (checked to fail)."""
    from scipy import stats as sps

    n = 20
    c = np.arange(n + 1)
    for p in (0.02, 0.3, 0.8):
        w = sps.binom.pmf(c, n, p)
        for k in (1, 4, 16, 20):
            mean = float(np.sum(w * np.asarray(T.pass_at_k(n, c, k))))
            assert mean == pytest.approx(float(T.any_success_probability(p, k)), rel=1e-10)
            plug_in = float(np.sum(w * (1 - (1 - c / n) ** k)))
            if 1 < k and p < 0.5:
                assert abs(plug_in - mean) > 1e-4, (p, k)


def test_the_all_fail_half_of_the_zero_variance_estimate_is_one_minus_pass_at_g():
    for n, k, G in [(16, 0, 4), (16, 3, 4), (64, 5, 8), (64, 60, 8), (200, 17, 32)]:
        pass_g = float(T.pass_at_k(n, k, G))
        pass_g_of_failures = float(T.pass_at_k(n, n - k, G))  # all-pass half, by symmetry
        est = float(T.unbiased_zero_variance_estimate(k, n, G))
        assert est == pytest.approx((1 - pass_g) + (1 - pass_g_of_failures), abs=1e-12)


# ---- ch. 02: the scope of the variance theory ---------------------------------------
def test_std_scaled_gradient_factor_is_g_minus_one_over_g_without_std_and_tends_to_one_over_sigma():
    for G in (2, 3, 8, 33):
        assert T.std_scaled_gradient_factor([0.05, 0.2, 0.7], G, scale="none") == (
            pytest.approx([(G - 1) / G] * 3, rel=1e-12))
    # E16's toy values at p = 0.2 (0.71, 1.44, 1.97, 2.27), approaching 1/σ = 2.5
    got = [float(T.std_scaled_gradient_factor(0.2, G)) for G in (2, 4, 8, 16)]
    assert got == pytest.approx([0.707, 1.435, 1.970, 2.271], abs=2e-3)
    assert float(T.std_scaled_gradient_factor(0.2, 4000, eps=0.0)) == pytest.approx(2.5, rel=1e-3)
    # the limit at p = 0: only the lone-success groups survive, (G − 1)/(G (s_1 + eps))
    G = 8
    s1 = math.sqrt(G / (G - 1) * (1 / G) * (1 - 1 / G))
    assert float(T.std_scaled_gradient_factor(0.0, G)) == pytest.approx((G - 1) / (G * (s1 + 1e-4)))
    with pytest.raises(TypeError, match="^G must be a single group size"):
        T.std_scaled_gradient_factor(0.2, [2, 4])


def test_std_scaled_factor_is_the_expectation_over_k():
    """Independent check: sample k ~ Bin(G, p), average k(G−k)/(G² p(1−p)(s_k + eps))."""
    rng = np.random.default_rng(5)
    G, p = 6, 0.3
    k = rng.binomial(G, p, size=400_000)
    s = np.sqrt(G / (G - 1) * (k / G) * (1 - k / G)) + 1e-4
    mc = k * (G - k) / (G * G * p * (1 - p) * s)
    assert mc.mean() == pytest.approx(float(T.std_scaled_gradient_factor(p, G)),
                                      abs=5 * mc.std() / math.sqrt(mc.size))


def test_mean_baseline_mse_is_shrunken_loo_mse_plus_signal():
    assert T.mean_baseline_gradient_mse(0.128, 0.1, 2) == pytest.approx(0.25 * 0.128 + 0.1 / 4)
    assert T.mean_baseline_gradient_mse(1.0, 0.0, [2, 4]) == pytest.approx([0.25, 0.5625])
    with pytest.raises(ValueError, match="^G must be >= 2"):
        T.mean_baseline_gradient_mse(1.0, 0.1, 1)


# ---- ch. 11: pass@k --------------------------------------------------------------------
def test_expected_pass_at_k_rises_to_the_coverage():
    rates = [0.0, 0.0, 0.01, 0.5]
    assert T.expected_pass_at_k(rates, 1) == pytest.approx(np.mean(rates))
    assert T.expected_pass_at_k(rates, 10**6) == pytest.approx(0.5, abs=1e-9)  # 2 of 4 covered
    ks = np.array([1, 2, 4, 8, 64])
    got = np.asarray(T.expected_pass_at_k(rates, ks))
    assert got.shape == ks.shape and np.all(np.diff(got) > 0)


def test_beta_pass_at_k_is_the_integral_and_decays_like_k_to_the_minus_a():
    a, b = 0.5, 2.0
    for k in (1, 3, 20):
        val, _ = integrate.quad(lambda p, k=k: (1 - (1 - p) ** k) * p ** (a - 1)
                                * (1 - p) ** (b - 1), 0, 1)
        assert T.beta_pass_at_k(k, a, b) == pytest.approx(val / math.exp(
            math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)), rel=1e-7)
    k = np.array([10**3, 10**4])
    miss = 1 - np.asarray(T.beta_pass_at_k(k, a, b))
    assert np.log(miss[1] / miss[0]) / np.log(10) == pytest.approx(-a, abs=0.01)


def test_sharpened_pass_rate_fixes_the_edges_and_is_the_logit_map():
    assert T.sharpened_pass_rate([0.0, 0.5, 1.0], 3.0) == pytest.approx([0.0, 0.5, 1.0])
    assert T.sharpened_pass_rate([0.1, 0.9], 1.0) == pytest.approx([0.1, 0.9])
    assert float(T.sharpened_pass_rate(1e-100, 2.0, 1.0)) > 0  # tiny, not rounded to 0
    assert float(T.sharpened_pass_rate(1e-10, 2.0)) == pytest.approx(1e-20, rel=1e-6)
    q = T.sharpened_pass_rate([0.2, 0.8], 2.0)
    assert q[0] < 0.2 and q[1] > 0.8
    with pytest.raises(ValueError, match="^shift must be"):
        T.sharpened_pass_rate(0.3, 2.0, float("inf"))


def test_pass_at_k_crossing_finds_the_first_k_and_can_return_none():
    base = np.array([0.5, 0.3, 0.02])
    tuned = np.array([0.6, 0.4, 0.0])  # better on two prompts, lost the third
    k = T.pass_at_k_crossing(base, tuned)
    ahead = [float(T.expected_pass_at_k(tuned, j)) > float(T.expected_pass_at_k(base, j))
             for j in range(1, k + 1)]
    assert all(ahead[:-1]) and not ahead[-1]
    assert T.pass_at_k_crossing(base, base + 0.1) is None       # ahead at every k
    assert T.pass_at_k_crossing(base, base) == 1                  # tied counts as crossed
    with pytest.raises(ValueError, match="same, non-zero number"):
        T.pass_at_k_crossing([0.1], [0.1, 0.2])


def test_informative_per_completion_is_flat_from_two_to_three_then_falls():
    for p in (0.05, 0.3, 0.5):
        r = np.asarray(T.informative_per_completion(p, [1, 2, 3, 4, 8]))
        assert r[0] == 0 and r[1] == pytest.approx(p * (1 - p)) == pytest.approx(r[2])
        assert r[2] > r[3] > r[4]
    # a hard prompt loses little per completion up to G ~ 1/p
    assert float(T.informative_per_completion(0.01, 16)) > 0.9 * 0.01 * 0.99


# ---- ch. 12: KL -------------------------------------------------------------------------
PI, REF = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.3, 0.4])


def test_k1_and_k3_are_unbiased_k2_is_not():
    kl = T.categorical_kl(PI, REF)
    m1, v1 = T.kl_estimator_moments(PI, REF, "k1")
    m2, v2 = T.kl_estimator_moments(PI, REF, "k2")
    m3, v3 = T.kl_estimator_moments(PI, REF, "k3")
    assert m1 == pytest.approx(kl) and m3 == pytest.approx(kl)
    assert abs(m2 - kl) > 1e-3        # the planted claim "k2 is unbiased" fails
    assert v3 < v1                    # the control variate lowers the variance here
    assert T.categorical_kl(PI, PI) == 0
    assert np.all(np.asarray(T.kl_k3(np.linspace(-5, 5, 11))) >= 0)
    with pytest.raises(ValueError, match="^log_ratio must be finite"):
        T.kl_k3(800.0)
    with pytest.raises(ValueError, match="ref_probs must be > 0"):
        T.categorical_kl([0.5, 0.5], [1.0, 0.0])


def _numeric_gradient(f, z, h=1e-6):
    return np.array([(f(z + h * e) - f(z - h * e)) / (2 * h) for e in np.eye(z.size)])


def _softmax(z):
    q = np.exp(z - z.max())
    return q / q.sum()


def test_kl_placements_have_the_gradients_derived_in_ch_12():
    z, z_ref = np.log(PI), np.log(REF)
    reverse = _numeric_gradient(lambda x: T.categorical_kl(_softmax(x), REF), z)
    forward = _numeric_gradient(lambda x: T.categorical_kl(REF, _softmax(x)), z)
    for placement in ("reward_k1", "loss_k2", "loss_k3_ratio"):
        assert np.allclose(T.kl_penalty_gradient(z, z_ref, placement), reverse, atol=1e-7)
    assert np.allclose(T.kl_penalty_gradient(z, z_ref, "loss_k3"), forward, atol=1e-7)
    assert not np.allclose(forward, reverse, atol=1e-3)  # k3 in the loss is the other KL
    assert np.all(T.kl_penalty_gradient(z, z_ref, "loss_k1") == 0)
    with pytest.raises(ValueError, match="^placement must be one of"):
        T.kl_penalty_gradient(z, z_ref, "k3")


# ---- ch. 13: entropy ----------------------------------------------------------------
def test_entropy_gradient_and_hessian_match_finite_differences():
    z = np.array([1.0, 0.2, -0.5, -1.5])
    pi = _softmax(z)
    assert T.entropy(np.full(4, 0.25)) == pytest.approx(math.log(4))
    assert T.entropy([1.0, 0.0]) == 0
    g = _numeric_gradient(lambda x: float(T.entropy(_softmax(x))), z)
    assert np.allclose(T.entropy_gradient(pi), g, atol=1e-8)
    hess = np.array([_numeric_gradient(
        lambda x, i=i: float(T.entropy_gradient(_softmax(x))[i]), z) for i in range(4)])
    assert np.allclose(T.entropy_hessian(pi), hess, atol=1e-6)
    dz = np.array([0.3, -0.1, 0.0, 0.2])
    assert T.entropy_change_first_order(pi, dz) == pytest.approx(float(g @ dz))
    assert T.entropy_change_first_order(pi, dz + 5.0) == pytest.approx(float(g @ dz))  # shift


def test_noise_term_of_the_entropy_change_shrinks_with_g():
    pi, r = _softmax(np.array([1.0, 0.5, 0.0, -0.5, -1.0])), np.array([0, 1, 0, 0, 0.0])
    hess = T.entropy_hessian(pi)
    noise = [0.5 * float(np.sum(hess * T.loo_gradient_covariance(pi, r, G)))
             for G in (2, 4, 8, 32)]
    assert all(n < 0 for n in noise) and noise == sorted(noise)  # negative, shrinking in size
    zero = T.expected_entropy_change(pi, np.zeros(5), np.zeros((5, 5)))
    assert zero == 0


def test_clip_ceiling():
    assert T.clip_ratio_ceiling(0.01, 0.2) == pytest.approx(0.012)
    assert T.clip_ratio_ceiling(0.01, 0.28) == pytest.approx(0.0128)
    assert T.clip_ratio_ceiling(0.9, 0.28) == 1.0


# ---- exact numerics at the edges, against mpmath (issue 36, class 4) ------------------
def _mp_pass_at_k(n: int, c: int, k: int):
    """pass@k in 80-digit arithmetic: log-gammas of 10¹⁵ keep 60 digits after the point."""
    import mpmath

    with mpmath.workdps(80):
        if c == 0:
            return mpmath.mpf(0)
        if n - c < k:
            return mpmath.mpf(1)
        log_ratio = (mpmath.loggamma(n - c + 1) - mpmath.loggamma(n - c - k + 1)
                     - mpmath.loggamma(n + 1) + mpmath.loggamma(n - k + 1))
        return -mpmath.expm1(log_ratio)


def test_pass_at_k_keeps_float_precision_for_large_n():
    # the cases the round-4 probe found: one success among 10⁹ and 10¹⁵ samples
    assert T.pass_at_k(10**9, 1, 1000) == pytest.approx(1e-6, rel=1e-14, abs=0)
    assert T.pass_at_k(10**15, 1, 2) == pytest.approx(2e-15, rel=1e-14, abs=0)
    # the old log-gamma (betaln) form misses both by far more than this test allows: the
    # tolerance can fail
    old = -np.expm1(T._log_comb(10**15 - 1, 2) - T._log_comb(10**15, 2))
    assert not old == pytest.approx(2e-15, rel=1e-6, abs=0)
    # long products (min(c, k) > 2¹⁶ takes the Euler–Maclaurin tail)
    for n, c, k in [(10**15, 10**7, 10**6), (10**15, 3 * 10**7, 3 * 10**7),
                    (10**12, 10**5, 10**6), (200_000, 100, 70_000)]:
        assert T.pass_at_k(n, c, k) == pytest.approx(float(_mp_pass_at_k(n, c, k)), rel=1e-13)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 10**15), c_frac=st.floats(0, 1), k_frac=st.floats(0, 1),
       small=st.integers(0, 40), which=st.integers(0, 3))
def test_pass_at_k_agrees_with_mpmath_over_its_domain(n, c_frac, k_frac, small, which):
    """Random (n, c, k) over the whole domain n ≤ 10¹⁵, with c or k often tiny (the cases
    where pass@k is tiny and a log-gamma difference loses every digit)."""
    c = min(n, small) if which == 0 else int(c_frac * n)
    k = max(1, min(n, small if which == 1 else int(k_frac * n)))
    if which == 2:
        c, k = min(n, small), max(1, min(n, int(k_frac * min(n, 10**7))))
    got = T.pass_at_k(n, c, k)
    want = _mp_pass_at_k(n, c, k)
    assert abs(got - want) <= 1e-13 * want + 1e-300, (n, c, k, got, float(want))


@settings(max_examples=300, deadline=None)
@given(x=st.floats(-1e-3, 1e-3) | st.floats(-700, 700) | st.floats(-1e-12, 1e-12))
def test_kl_k3_agrees_with_mpmath_near_zero_and_far(x):
    """k3 = e^x − 1 − x: expm1(x) − x cancels near 0 (≈ x²/2 from two numbers ≈ x); the
    series keeps float precision there."""
    import mpmath

    # digits enough that the difference of two numbers ≈ x keeps 40 of its own (≈ x²/2)
    digits = 40 + (int(-2 * math.log10(abs(x))) if 0 < abs(x) < 1 else 0)
    with mpmath.workdps(digits):
        want = mpmath.expm1(mpmath.mpf(x)) - mpmath.mpf(x)
    got = T.kl_k3(x)
    assert abs(got - want) <= 4e-16 * want + 1e-300, (x, got, float(want))


def test_kl_k3_near_zero_is_exact_where_the_plain_difference_is_not():
    x = 1e-9
    assert T.kl_k3(x) == pytest.approx(x * x / 2 + x**3 / 6, rel=1e-15, abs=0)
    plain = np.expm1(x) - x  # the old form: wrong from the 7th digit (the test can fail)
    assert not plain == pytest.approx(x * x / 2 + x**3 / 6, rel=1e-10, abs=0)


def test_each_function_lives_in_the_module_of_its_chapter():
    """grpolab.theory is one module per chapter: a function sits in the module whose docstring
    names the chapter of its "Derived in" line, and no module's name hides a public name
    (``theory.pass_at_k`` must stay the function, not a module)."""
    modules = {m.name for m in pkgutil.iter_modules(T.__path__)}
    assert not modules & set(T.__all__), modules & set(T.__all__)
    assert "zero_variance" in modules and callable(T.pass_at_k)
    for name in T.__all__:
        obj = getattr(T, name)
        if not inspect.isfunction(obj):
            continue
        chapter = re.search(r"Derived in: (book/[\w/.-]+\.md)", obj.__doc__).group(1)
        if not chapter.startswith("book/theory/"):
            continue  # derived in a lab chapter (the sweep's unbiased estimate)
        module = sys.modules[obj.__module__]
        assert chapter in module.__doc__, f"theory.{name} ({chapter}) is in {module.__name__}"
    for name in modules - {"_common"}:
        doc = importlib.import_module(f"grpolab.theory.{name}").__doc__
        assert re.search(r"book/theory/\d\d-[\w-]+\.md", doc), name
