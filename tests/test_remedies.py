"""Fast tests of grpolab.labs.remedies.strategies: pure numpy, no model."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from grpolab import theory
from grpolab.labs.remedies import strategies as remedies


# ----------------------------------------------------------------------------- dynamic sampling
def _drawer(p: float, groups: int, G: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    calls = []

    def draw():
        r = (rng.random((groups, G)) < p).astype(float)
        calls.append(r)
        return r, len(calls) - 1

    return draw, calls


def test_informative_groups_uses_a_tolerance():
    r = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0], [0.3, 0.3 + 1e-9, 0.3]])
    assert remedies.informative_groups(r).tolist() == [False, False, True, False]
    with pytest.raises(ValueError, match="rewards"):
        remedies.informative_groups([1, 0, 1])


def test_dynamic_sampling_fills_exactly_the_target_with_informative_groups():
    draw, calls = _drawer(0.5, groups=8, G=4)
    res = remedies.dynamic_sampling(draw, target_groups=8, max_batches=50)
    assert res.filled == 8 and not res.hit_cap
    for b, g in res.kept:  # every kept group is informative
        row = calls[b][g]
        assert 0 < row.sum() < 4
    assert res.completions == res.batches * 8 * 4 == res.groups_generated * 4
    assert res.informative_generated >= 8


def test_dynamic_sampling_stops_at_the_cap_and_says_so():
    draw, calls = _drawer(0.0, groups=8, G=4)  # never a success: nothing is informative
    res = remedies.dynamic_sampling(draw, target_groups=8, max_batches=3)
    assert res.hit_cap and res.filled == 0 and res.batches == 3 and len(calls) == 3
    assert res.completions == 3 * 8 * 4


def test_dynamic_sampling_mean_cost_matches_theory():
    """Mean completions per filled batch ≈ the negative-binomial mean G·B/q (within 3 SE)."""
    p, G, B = 0.15, 4, 8
    costs = []
    for seed in range(300):
        draw, _ = _drawer(p, groups=1, G=G, seed=seed)  # one group per draw: exact NB
        costs.append(remedies.dynamic_sampling(draw, B, max_batches=10_000).completions)
    predicted = float(theory.dynamic_sampling_expected_completions(p, G, B))
    se = np.std(costs) / np.sqrt(len(costs))
    assert abs(np.mean(costs) - predicted) < 3 * se


def test_dynamic_sampling_cap_rate_matches_theory():
    p, G, B, b, k = 0.1, 4, 8, 8, 3
    hits = [remedies.dynamic_sampling(_drawer(p, b, G, seed)[0], B, k).hit_cap
            for seed in range(400)]
    predicted = float(theory.dynamic_sampling_cap_probability(p, G, B, b, k))
    se = np.sqrt(predicted * (1 - predicted) / 400)
    assert abs(np.mean(hits) - predicted) < 4 * se


def test_dynamic_sampling_validates_arguments():
    draw, _ = _drawer(0.5, 4, 4)
    with pytest.raises(ValueError, match="target_groups"):
        remedies.dynamic_sampling(draw, 0, 3)
    with pytest.raises(ValueError, match="max_batches"):
        remedies.dynamic_sampling(draw, 4, 0)


def test_pass_rate_for_informative_inverts_the_closed_form():
    for G in (2, 4, 8, 32):
        for p in (0.01, 0.1, 0.3, 0.5):
            q = float(theory.informative_probability(p, G))
            assert remedies.pass_rate_for_informative(q, G) == pytest.approx(p, abs=1e-6)
    assert remedies.pass_rate_for_informative(1.0, 4) == 0.5


# ----------------------------------------------------------------------------- pass rates, band
def test_pass_rate_estimates_from_census_and_update():
    census = np.array([[1, 1, 0, 0], [0, 0, 0, 0]])
    est = remedies.DecayedPassRates.from_census(census, decay=0.5)
    assert est.p.tolist() == [0.5, 0.0]
    est.update([1], [np.ones(4)])  # successes 0·0.5 + 4, trials 4·0.5 + 4
    assert est.p[1] == pytest.approx(4 / 6)
    with pytest.raises(ValueError, match="decay"):
        remedies.DecayedPassRates(3, decay=0)


def test_band_filter_keeps_exactly_the_prompts_in_the_band():
    p = np.array([0.0, 0.19, 0.2, 0.5, 0.8, 0.81, 1.0])
    assert remedies.band_filter(p, 0.2, 0.8).tolist() == [2, 3, 4]
    with pytest.raises(ValueError, match="low"):
        remedies.band_filter(p, 0.9, 0.1)


def test_select_in_band_draws_from_the_band_then_tops_up_with_the_nearest():
    rng = np.random.default_rng(0)
    p = np.array([0.0, 0.1, 0.5, 0.6, 0.95, 1.0])
    idx, inside = remedies.select_in_band(rng, p, 2)
    assert inside == 2 and set(idx.tolist()) <= {2, 3}
    idx, inside = remedies.select_in_band(rng, p, 4)
    assert inside == 2 and set(idx.tolist()) == {1, 2, 3, 4}  # 0.1 and 0.95 are nearest
    with pytest.raises(ValueError, match="k"):
        remedies.select_in_band(rng, p, 7)


def test_curriculum_opens_levels_only_when_the_frontier_is_mastered():
    c = remedies.Curriculum([3, 1, 2], advance_at=0.6, min_steps=2)
    assert c.open_levels == [1] and c.frontier == 1
    assert not c.update(0.9)  # too early (min_steps)
    assert c.update(0.9) and c.open_levels == [1, 2]
    assert not c.update(0.1) and not c.update(0.5)  # frontier not mastered
    assert c.update(0.7) and c.open_levels == [1, 2, 3]
    assert not c.update(1.0) and c.n_open == 3  # nothing left to open


# ----------------------------------------------------------------------------- adaptive G
def test_card_variance_rule_never_doubles_for_bernoulli_rewards():
    G = 8
    for p in np.linspace(0, 1, 101):
        v = theory.bernoulli_variance(p)
        assert v <= remedies.MAX_BERNOULLI_VARIANCE + 1e-12
        assert remedies.card_variance_rule(G, v) <= G
    # even the largest sample variance of a 0/1 group (G = 2, ddof = 1) is 0.5 < 0.8
    for G in range(2, 65):
        assert remedies.max_group_variance(G, ddof=1) <= 0.5 + 1e-12
        assert remedies.card_variance_rule(G, remedies.max_group_variance(G, 1)) <= G
    rng = np.random.default_rng(0)
    for _ in range(200):  # random 0/1 groups, both ddof conventions
        r = (rng.random(8) < rng.random()).astype(float)
        for ddof in (0, 1):
            assert remedies.card_variance_rule(8, r.var(ddof=ddof)) <= 8


def test_card_variance_rule_doubles_halves_and_clamps():
    assert remedies.card_variance_rule(8, 1.0) == 16
    assert remedies.card_variance_rule(8, 0.1) == 4
    assert remedies.card_variance_rule(8, 0.5) == 8
    assert remedies.card_variance_rule(64, 5.0) == 64
    assert remedies.card_variance_rule(2, 0.0) == 2
    with pytest.raises(ValueError, match="reward_variance"):
        remedies.card_variance_rule(8, float("nan"))


def test_max_group_variance_is_attained_by_a_half_split():
    for G in (2, 3, 4, 7, 8):
        best = max(np.var(np.array(bits, float), ddof=1)
                   for bits in itertools.product([0, 1], repeat=G))
        assert remedies.max_group_variance(G, ddof=1) == pytest.approx(best)


def test_card_pass_rate_rule_and_signal_target():
    G = remedies.card_pass_rate_group_size(np.array([0.95, 0.5, 0.05]))
    assert G.tolist() == [4, 8, 16]
    g = remedies.min_group_size_for_signal(np.array([0.5, 0.1, 0.9, 0.0]), target=0.5, G_max=32)
    assert g.tolist()[0] == 2  # 1 − 2·0.5² = 0.5
    assert g[1] == g[2]  # symmetric in p ↔ 1 − p
    assert theory.informative_probability(0.1, g[1]) >= 0.5 > theory.informative_probability(
        0.1, g[1] - 1)
    assert g[3] == 32  # p = 0: no G helps


def test_allocation_beats_uniform_and_matches_brute_force():
    rng = np.random.default_rng(1)
    p = np.concatenate([rng.uniform(0, 0.05, 4), rng.uniform(0.3, 0.7, 4), [1.0, 1.0]])
    budget = 40
    alloc = remedies.allocate_budget(p, budget, G_max=16)
    assert alloc.sum() <= budget and set(alloc.tolist()) <= {0} | set(range(2, 17))
    uniform = remedies.uniform_allocation(p.size, budget)
    assert (remedies.expected_informative_groups(p, alloc)
            > remedies.expected_informative_groups(p, uniform))
    assert alloc[-1] == alloc[-2] == 0  # p = 1 gains nothing
    # brute force on a small case: greedy is optimal (or within 1e-9)
    p = np.array([0.05, 0.3, 0.6, 0.9])
    choices = [0, *range(2, 9)]
    best = max(remedies.expected_informative_groups(p, np.array(c))
               for c in itertools.product(choices, repeat=4) if sum(c) <= 12)
    got = remedies.expected_informative_groups(p, remedies.allocate_budget(p, 12, G_max=8))
    assert got >= best - 0.02  # greedy with an opening cost: near-optimal


def test_distinct_per_group():
    assert remedies.distinct_per_group(["1", "1 ", "2", "3", "3", "3"], 3).tolist() == [2, 1]
    with pytest.raises(ValueError, match="multiple"):
        remedies.distinct_per_group(["1", "2"], 3)


def _results(arms: dict[str, list[float]]) -> dict:
    seeds = list(range(len(next(iter(arms.values())))))
    return {"seeds": seeds,
            "results": {a: {"m": {"values": v}} for a, v in arms.items()}}


def test_compare_treats_float_residue_as_no_spread():
    """0.405 − 0.41 and 0.415 − 0.42 differ by ~1e-17 in floating point; that is one shared
    difference, not a t test with p ~ 1e-29, so it is never detected."""
    from grpolab.labs.remedies import report

    res = _results({"a": [0.405, 0.405, 0.415], "b": [0.41, 0.41, 0.42],
                    "same": [0.405, 0.405, 0.415], "c": [0.40, 0.42, 0.43]})
    c = report.compare(res, "a", "b", "m")
    assert c["p_value"] is None and "not a test" in c["test"]
    assert c["low"] == c["high"] == pytest.approx(-0.005)
    assert report.compare(res, "a", "same", "m")["p_value"] == 1.0
    fam = report.compare_family(res, [("a", "b"), ("a", "c")], "m")
    assert fam[0]["p_holm"] is None and not fam[0]["differs"]
    # a real spread is still a test (the guard must not swallow ordinary contrasts)
    assert fam[1]["p_value"] is not None and fam[1]["low"] < fam[1]["high"]
