"""Monte Carlo agrees with every closed form within 5 standard errors (seeded, so not flaky)."""

from __future__ import annotations

import numpy as np
import pytest

from grpolab import simulate as S
from grpolab import theory as T


@pytest.mark.parametrize("p, G", [(0.1, 4), (0.1, 16), (0.5, 2), (0.9, 8), (0.02, 64)])
def test_zero_gradient_frequency(p, G):
    est = S.zero_gradient_mc(p, G, n_groups=400_000, seed=1)
    assert est.agrees_with(T.zero_gradient_probability(p, G))


def test_zero_gradient_beta_prior():
    for a, b, G in [(1, 1, 8), (0.5, 2.0, 16)]:
        est = S.zero_gradient_beta_mc(G, a, b, n_groups=400_000, seed=2)
        assert est.agrees_with(T.beta_zero_gradient_probability(G, a, b))


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
    assert S.zero_gradient_mc(0.3, 8, seed=9) == S.zero_gradient_mc(0.3, 8, seed=9)
    assert S.zero_gradient_mc(0.3, 8, seed=9) != S.zero_gradient_mc(0.3, 8, seed=10)
    assert S.zero_gradient_mc(0.3, 8, seed=np.random.SeedSequence(9)).n == 1_000_000


def test_mc_estimate_can_disagree():
    est = S.zero_gradient_mc(0.1, 4, n_groups=100_000, seed=0)
    assert not est.agrees_with(0.5)


# ---- bad input (issue 15, item 2) -----------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda: S.zero_gradient_mc(0.3, 1e20), "^G must be an integer"),
    (lambda: S.zero_gradient_mc(0.3, float("inf")), "^G must be an integer"),
    (lambda: S.zero_gradient_mc([0.1, 0.2], 4), "^p must be a single probability"),
    (lambda: S.zero_gradient_mc("0.3", 4), "^p must be a probability"),
    (lambda: S.zero_gradient_mc(0.3, 4, n_groups=float("nan")), "^n_groups must be an integer"),
    (lambda: S.zero_gradient_mc(0.3, 4, n_groups=10**9), "^n_groups must be an integer"),
    (lambda: S.zero_gradient_mc(0.3, 4, seed=-1), "^seed must be an integer >= 0"),
    (lambda: S.zero_gradient_mc(0.3, 4, seed="x"), "^seed must be an integer"),
    (lambda: S.zero_gradient_beta_mc(4, 0.0, 1.0), "^a must be a finite number"),
    (lambda: S.zero_gradient_beta_mc(4, 1.0, float("nan")), "^b must be a finite number"),
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
