"""grpolab.advantages: oracle tests against a brute-force per-group reference, torch parity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpolab.advantages import group_advantages, zero_variance_groups


def reference(rewards, G, scale="group", baseline="mean", ddof=1, eps=1e-4):
    """Brute force: loop over groups and members, plain Python arithmetic."""
    rewards = [float(x) for x in rewards]
    n = len(rewards)

    def std(xs):
        m = sum(xs) / len(xs)
        if len(xs) - ddof <= 0:
            return 0.0
        return (sum((x - m) ** 2 for x in xs) / (len(xs) - ddof)) ** 0.5

    batch_std = std(rewards)
    out = []
    for g in range(n // G):
        grp = rewards[g * G:(g + 1) * G]
        for r in grp:
            if baseline == "mean":
                b = sum(grp) / G
            else:
                b = (sum(grp) - r) / (G - 1)
            a = r - b
            if scale == "group":
                a /= std(grp) + eps
            elif scale == "batch":
                a /= batch_std + eps
            out.append(a)
    return np.array(out)


@settings(max_examples=150, deadline=None)
@given(
    G=st.integers(2, 9),
    n_groups=st.integers(1, 6),
    data=st.data(),
    scale=st.sampled_from(["group", "batch", "none"]),
    baseline=st.sampled_from(["mean", "leave_one_out"]),
    ddof=st.sampled_from([0, 1]),
)
def test_matches_brute_force(G, n_groups, data, scale, baseline, ddof):
    rewards = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, -2.0, 3.25]),
                                 min_size=G * n_groups, max_size=G * n_groups))
    got = group_advantages(np.array(rewards), G, scale=scale, baseline=baseline, ddof=ddof)
    assert np.allclose(got, reference(rewards, G, scale, baseline, ddof), atol=1e-9)


def test_trl_default_formula():
    # TRL GRPOTrainer: (r - mean_g) / (std_g(unbiased) + 1e-4)
    r = np.array([1.0, 0.0, 0.0, 0.0, 0.2, 0.4, 0.6, 0.8])
    g = r.reshape(2, 4)
    expected = ((g - g.mean(1, keepdims=True)) / (g.std(1, ddof=1, keepdims=True) + 1e-4)).ravel()
    assert np.allclose(group_advantages(r, 4), expected)


def test_torch_and_numpy_agree_and_types_round_trip():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    r = rng.integers(0, 2, size=48).astype(float)
    for scale in ["group", "batch", "none"]:
        for baseline in ["mean", "leave_one_out"]:
            a_np = group_advantages(r, 8, scale=scale, baseline=baseline)
            a_t = group_advantages(torch.tensor(r, dtype=torch.float64), 8, scale=scale,
                                   baseline=baseline)
            assert isinstance(a_np, np.ndarray) and isinstance(a_t, torch.Tensor)
            assert a_t.dtype == torch.float64
            assert np.allclose(a_np, a_t.numpy(), atol=1e-12)
    mask_t = zero_variance_groups(torch.tensor(r), 8)
    assert mask_t.dtype == torch.bool
    assert mask_t.numpy().tolist() == zero_variance_groups(r, 8).tolist()
    # integer tensors are promoted, not rejected
    assert group_advantages(torch.tensor([1, 0, 1, 1]), 2).dtype.is_floating_point


def test_zero_variance_groups_use_a_tolerance():
    r = np.array([0.1 + 0.2, 0.3, 0.3, 0.3, 1.0, 0.0, 0.0, 0.0])
    assert np.std(r[:4]) > 0  # float residue: an exact-zero test would call this signal
    assert zero_variance_groups(r, 4).tolist() == [True, False]
    assert zero_variance_groups(r, 4, atol=0.0).tolist() == [False, False]
    # with the residue group, advantages stay bounded (eps keeps them tiny, not huge)
    assert np.abs(group_advantages(r, 4)[:4]).max() < 1e-3


def test_group_size_one_gives_zero_advantages():
    assert np.array_equal(group_advantages([0.3, 1.0, 0.0], 1), np.zeros(3))
    with pytest.raises(ValueError, match="leave_one_out"):
        group_advantages([0.3, 1.0], 1, baseline="leave_one_out")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rewards=np.ones(7), group_size=4), "not a positive multiple of group_size"),
        (dict(rewards=np.ones(8), group_size=0), "group_size must be an integer"),
        (dict(rewards=np.ones(8), group_size=2.5), "group_size must be an integer"),
        (dict(rewards=np.ones(8), group_size=4, scale="std"), "scale must be one of"),
        (dict(rewards=np.ones(8), group_size=4, baseline="median"), "baseline must be one of"),
        (dict(rewards=np.ones((2, 4)), group_size=4), "flat 1-D"),
        (dict(rewards=np.array([1.0, np.nan]), group_size=2), "finite"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        group_advantages(**kwargs)


# ---- huge, tiny and mistyped rewards (issue 15, item 2) ------------------------------
def test_huge_rewards_are_rescaled_not_nan():
    # [1e308, 1e308, 0, 0] used to give all NaN: the mean and the std overflowed
    got = group_advantages([1e308, 1e308, 0.0, 0.0], 4)
    assert np.isfinite(got).all()
    assert np.allclose(got, group_advantages([1.0, 1.0, 0.0, 0.0], 4, eps=0.0), rtol=1e-12)
    for scale in ("batch", "group"):
        for baseline in ("mean", "leave_one_out"):
            big = group_advantages([1e308, -1e308, 3e307, 0.0], 4, scale=scale,
                                   baseline=baseline)
            small = group_advantages([1.0, -1.0, 0.3, 0.0], 4, scale=scale,
                                     baseline=baseline, eps=0.0)
            assert np.allclose(big, small, rtol=1e-12), (scale, baseline)


def test_tiny_rewards_with_eps_zero_keep_their_signal():
    # the squared deviations underflow to 0; rescaling first keeps the exact ±1/√2
    got = group_advantages([1e-300, 0.0, 3.0, 4.0], 2, eps=0.0)
    assert np.allclose(got, [2**-0.5, -(2**-0.5), -(2**-0.5), 2**-0.5])


def test_unnormalised_spread_that_cannot_fit_is_refused():
    with pytest.raises(ValueError, match="^rewards spread too widely"):
        group_advantages([1.7e308, -1.7e308], 2, scale="none", baseline="leave_one_out")
    assert np.allclose(group_advantages([1e308, 0.0], 2, scale="none"), [5e307, -5e307])


def test_constant_groups_with_eps_zero_give_zero_not_nan():
    assert group_advantages([1.0, 1.0, 0.0, 1.0], 2, eps=0.0).tolist()[:2] == [0.0, 0.0]
    assert group_advantages([0.3, 0.7], 1, eps=0.0).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("rewards", [["0.1", "0.2"], "0.1", [None, 1.0], [1 + 1j, 0],
                                     [[1.0], [2.0, 3.0]]])
def test_mistyped_rewards_are_type_errors(rewards):
    # numeric strings used to be converted silently
    with pytest.raises(TypeError, match="^rewards must be"):
        group_advantages(rewards, 2)


def test_boolean_rewards_count_as_zero_one():
    assert np.array_equal(group_advantages([True, False], 2), group_advantages([1.0, 0.0], 2))


@pytest.mark.parametrize("kwargs, match", [
    (dict(group_size=float("nan")), "^group_size must be an integer"),
    (dict(group_size=float("inf")), "^group_size must be an integer"),
    (dict(group_size="2"), "^group_size must be an integer"),
    (dict(group_size=True), "^group_size must be an integer"),
    (dict(group_size=2, eps=float("inf")), "^eps must be a finite number"),
    (dict(group_size=2, eps="1e-4"), "^eps must be"),
    (dict(group_size=2, ddof=True), "^ddof must be 0 or 1"),
    (dict(group_size=2, scale=None), "^scale must be one of"),
])
def test_bad_options_name_the_argument(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        group_advantages([1.0, 0.0, 0.0, 1.0], **kwargs)
    if "eps" not in kwargs and "ddof" not in kwargs and "scale" not in kwargs:
        with pytest.raises((ValueError, TypeError), match=match):
            zero_variance_groups([1.0, 0.0, 0.0, 1.0], **kwargs)


def test_zero_variance_groups_with_a_huge_spread_and_bad_atol():
    assert zero_variance_groups([1e308, -1e308, 0.0, 0.0], 2).tolist() == [False, True]
    for atol in (float("nan"), -1.0, "0"):
        with pytest.raises(ValueError, match="^atol must be"):
            zero_variance_groups([1.0, 1.0], 2, atol=atol)


def test_torch_huge_float32_rewards():
    torch = pytest.importorskip("torch")
    got = group_advantages(torch.tensor([3e38, 3e38, 0.0, 0.0]), 4)
    assert got.dtype == torch.float32 and bool(torch.isfinite(got).all())
    assert np.allclose(got.numpy(), group_advantages([1.0, 1.0, 0.0, 0.0], 4, eps=0.0),
                       rtol=1e-6)
    with pytest.raises(ValueError, match="^rewards"):
        group_advantages(torch.tensor([3e38, -3e38]), 2, scale="none", baseline="leave_one_out")
