"""grpolab.allocation: each rule against a brute-force optimum, each objective by simulation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from grpolab import advise, allocation
from grpolab.allocation import ALLOCATION_RULES, allocate, allocation_objective

RULES = sorted(ALLOCATION_RULES)


def _brute_force(p, mean_G, rule, min_G, max_G):
    """The best objective over every allocation with the right total (sign applied)."""
    sign = ALLOCATION_RULES[rule].sign
    total = len(p) * mean_G
    best = -np.inf
    for sizes in itertools.product(range(min_G, max_G + 1), repeat=len(p)):
        if sum(sizes) == total:
            best = max(best, sign * allocation_objective(p, sizes, rule))
    return best


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("seed", range(6))
def test_each_rule_reaches_the_brute_force_optimum(rule, seed):
    rng = np.random.default_rng(seed)
    M = int(rng.integers(2, 5))
    p = np.round(rng.uniform(0.01, 0.99, M), 3)
    mean_G = int(rng.integers(3, 6))
    G = allocate(p, mean_G, rule, min_G=2, max_G=9)
    assert G.sum() == M * mean_G and G.min() >= 2 and G.max() <= 9
    got = ALLOCATION_RULES[rule].sign * allocation_objective(p, G, rule)
    assert got == pytest.approx(_brute_force(p, mean_G, rule, 2, 9), rel=1e-12, abs=1e-15)


def test_a_greedy_allocation_is_not_optimal_for_dr_grpo_variance():
    """Dr. GRPO's variance gain is not monotone in n (3→4 gains more than 2→3), which is
    why allocate() is a dynamic program: completions handed out one at a time to the
    largest gain miss the optimum on this pool."""
    var = allocation.dr_grpo_group_variance
    assert var(0.5, 3) - var(0.5, 4) > var(0.5, 2) - var(0.5, 3)
    p, mean_G = [0.63, 0.6], 4
    greedy = [2, 2]
    for _ in range(len(p) * (mean_G - 2)):
        j = max(range(len(p)), key=lambda j: var(p[j], greedy[j]) - var(p[j], greedy[j] + 1))
        greedy[j] += 1
    exact = allocate(p, mean_G, "variance-dr-grpo", min_G=2, max_G=9)
    assert greedy == [3, 5] and exact.tolist() == [4, 4]
    assert allocation_objective(p, exact, "variance-dr-grpo") < \
        allocation_objective(p, greedy, "variance-dr-grpo")


@pytest.mark.parametrize("rule", [r for r in RULES if ALLOCATION_RULES[r].concave])
def test_the_concave_rules_gains_fall_with_n(rule):
    """The greedy path is exact only for gains that never rise: check that on a grid."""
    v = ALLOCATION_RULES[rule]
    p = np.linspace(0.001, 0.999, 101)[:, None]
    n = np.arange(2, 130)[None, :]
    gain = v.sign * (v.value(p, n + 1) - v.value(p, n))
    assert np.all(np.diff(gain, axis=1) <= 1e-15)


def test_a_large_pool_is_allocated_quickly_and_exactly_by_the_concave_rules():
    p = np.random.default_rng(5).beta(0.5, 0.5, 5000)
    G = allocate(p, 8, "first-success", max_G=64)
    assert G.sum() == 5000 * 8
    gains = p * (1 - p) ** G  # the next completion's gain: never above the last one taken
    last = np.where(G > 2, p * (1 - p) ** (G - 1), np.inf)
    assert gains[G < 64].max() <= last.min() + 1e-15


def test_the_informative_rule_matches_a_greedy_hand_out():
    """allocate('informative') takes the K largest gains at once (adaptive_allocation's
    threshold); handing completions out one at a time must reach the same objective."""
    rng = np.random.default_rng(3)
    p = rng.beta(0.5, 1.5, 40)
    ours = allocate(p, 8, "informative", max_G=64)
    greedy = allocation._greedy(p, ALLOCATION_RULES["informative"], 40 * 6, 2, 64)
    assert allocation_objective(p, ours, "informative") == pytest.approx(
        allocation_objective(p, greedy, "informative"), rel=1e-12)
    assert advise.adaptive_allocation is allocation.adaptive_allocation  # one implementation


def test_the_two_schools_move_hard_prompts_in_opposite_directions():
    """The refuting case for the chapter's contrast: on a hard prompt (p = 0.1) next to a
    balanced one (p = 0.5), the variance rules give the hard prompt fewer rollouts than
    the balanced one, the signal rules give it more."""
    p = [0.1, 0.5]
    for rule, rec in ALLOCATION_RULES.items():
        G = allocate(p, 8, rule, max_G=64)
        if rec.school == "variance":
            assert G[0] < G[1], rule
        else:
            assert G[0] > G[1], rule


def _mc_group(p, n, draws, rng):
    return (rng.random((draws, n)) < p).astype(float)


@pytest.mark.parametrize("p,n", [(0.3, 2), (0.5, 4), (0.1, 8), (0.8, 16)])
def test_the_variance_objectives_by_simulation(p, n):
    rng = np.random.default_rng(1)
    r = _mc_group(p, n, 400_000, rng)
    dev = r - r.mean(axis=1, keepdims=True)
    mean_baseline = (dev**2).sum(axis=1) / n**2
    loo = (r - (r.sum(axis=1, keepdims=True) - r) / (n - 1))
    rloo = (loo**2).sum(axis=1) / n**2
    for est, formula in [(mean_baseline, allocation.dr_grpo_group_variance(p, n)),
                         (rloo, allocation.rloo_group_variance(p, n))]:
        se = est.std() / np.sqrt(est.size)
        assert abs(est.mean() - formula) < 5 * se + 1e-12


@pytest.mark.parametrize("p,n", [(0.05, 4), (0.5, 2), (0.9, 8)])
def test_the_signal_objectives_by_simulation(p, n):
    rng = np.random.default_rng(2)
    r = _mc_group(p, n, 400_000, rng)
    k = r.sum(axis=1)
    for event, formula in [((k > 0) & (k < n), allocation.non_degenerate_probability(p, n)),
                           (k > 0, allocation.first_success_probability(p, n))]:
        se = np.sqrt(formula * (1 - formula) / k.size)
        assert abs(event.mean() - formula) < 5 * se + 1e-12


def test_the_two_sample_advantage_is_the_sign_of_the_difference():
    for r1, r2 in [(1.0, 0.0), (0.3, 0.2), (-5.0, 7.5)]:
        a1, a2 = allocation.two_sample_advantage(r1, r2)
        assert a1 == pytest.approx(np.sign(r1 - r2) / np.sqrt(2)) and a2 == pytest.approx(-a1)
        assert allocation.two_sample_advantage(r1, r2, ddof=0)[0] == pytest.approx(np.sign(r1 - r2))
    # the same through torch-free grpolab.advantages, the function the trainer uses
    from grpolab.advantages import group_advantages
    got = group_advantages(np.array([0.3, 0.2]), 2, eps=0.0)
    assert np.allclose(np.abs(got), 1 / np.sqrt(2))
    with pytest.raises(ValueError, match="tied"):
        allocation.two_sample_advantage(1.0, 1.0)


def test_zero_variance_persistence_by_simulation_and_its_bound():
    rng = np.random.default_rng(4)
    p = rng.beta(0.4, 0.6, 300)
    G = 4
    z = p**G + (1 - p) ** G
    visits = [(rng.random((200, p.size, G)) < p[None, :, None]).sum(axis=2) for _ in range(2)]
    zv = [(k == 0) | (k == G) for k in visits]
    mc = (zv[0] & zv[1]).sum() / zv[0].sum()
    got = allocation.zero_variance_persistence(p, G)
    assert abs(mc - got) < 0.01
    assert got > z.mean() + 0.05      # heterogeneity makes zero variance persist
    # a homogeneous pool has no persistence beyond the base rate: the bound is tight
    same = np.full(50, 0.3)
    assert allocation.zero_variance_persistence(same, G) == pytest.approx(0.3**G + 0.7**G)


def test_bad_input_is_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown allocation rule"):
        allocate([0.5], 4, "nope")
    with pytest.raises(ValueError, match="too large"):
        allocate(np.full(20_000, 0.5), 32, "variance-dr-grpo", max_G=1024)
    with pytest.raises(ValueError):
        allocate([0.5, 1.5], 4)


@pytest.mark.parametrize("rule", RULES)
def test_each_objective_by_the_simulator_the_chapter_uses(rule):
    """simulate.allocation_objective_mc, a per-trial sum over prompts, agrees with the
    closed form on a mixed pool; a planted wrong closed form (the pool's other rule) fails."""
    from grpolab import simulate

    p, n = [0.05, 0.3, 0.5, 0.9], [3, 8, 5, 16]
    mc = simulate.allocation_objective_mc(p, n, rule, n_groups=200_000, seed=1)
    assert mc.agrees_with(allocation_objective(p, n, rule))
    other = "first-success" if rule != "first-success" else "informative"
    assert not mc.agrees_with(allocation_objective(p, n, other))
