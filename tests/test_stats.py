"""grpolab.labs.stats against scipy's own tests, Holm by hand, and planted effects."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from grpolab.labs import stats


def test_t_interval_matches_scipy():
    x = [0.51, 0.48, 0.55, 0.50, 0.47]
    ci = stats.t_interval(x)
    lo, hi = sps.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=sps.sem(x))
    assert ci["low"] == pytest.approx(lo) and ci["high"] == pytest.approx(hi)
    assert ci["t_critical"] == pytest.approx(2.776, abs=1e-3)  # t(0.975, 4), not 1.96


def test_trend_is_the_mean_per_seed_slope():
    Gs = [2, 4, 8, 16, 32]
    rng = np.random.default_rng(0)
    data = {G: {s: 0.4 + 0.02 * np.log2(G) + 0.05 * s + rng.normal(0, 0.004) for s in range(5)}
            for G in Gs}
    tr = stats.trend_in_log2_G(data)
    slopes = [sps.linregress(np.log2(Gs), [data[G][s] for G in Gs]).slope for s in range(5)]
    assert tr["per_seed_slopes"] == pytest.approx(slopes)
    assert tr["slope_per_doubling"] == pytest.approx(np.mean(slopes))
    assert tr["low"] < 0.02 < tr["high"] and tr["p_value"] < 0.01
    # the seed offsets (0.05 per seed) do not widen the interval: they cancel per seed
    assert tr["high"] - tr["low"] < 0.02


def test_trend_null_has_an_interval_around_zero():
    rng = np.random.default_rng(1)
    data = {G: {s: 0.5 + rng.normal(0, 0.01) for s in range(6)} for G in (2, 4, 8, 16)}
    tr = stats.trend_in_log2_G(data)
    assert tr["low"] < 0 < tr["high"] and tr["p_value"] > 0.05


def test_contrasts_match_scipy_and_holm_by_hand():
    a = {0: 0.50, 1: 0.52, 2: 0.49, 3: 0.55}
    b = {0: 0.47, 1: 0.50, 2: 0.46, 3: 0.50}
    c = stats.contrast(a, b)
    assert c["test"] == "paired t"
    assert c["p_value"] == pytest.approx(sps.ttest_rel(list(a.values()), list(b.values())).pvalue)
    w = stats.contrast(a, {10: 0.4, 11: 0.45, 12: 0.43})
    ref = sps.ttest_ind(list(a.values()), [0.4, 0.45, 0.43], equal_var=False)
    assert w["test"] == "Welch t" and w["p_value"] == pytest.approx(ref.pvalue)
    # Holm: sorted p (0.01, 0.02, 0.04) -> (0.03, 0.04, 0.04), kept in input order
    assert stats.holm([0.04, 0.01, 0.02, None]) == pytest.approx([0.04, 0.03, 0.04, None])


def test_g_verdict_quotes_the_interval_and_counts_contrasts():
    rng = np.random.default_rng(4)
    data = {G: {s: 0.5 + 0.03 * np.log2(G) + 0.001 * rng.normal() for s in range(5)}
            for G in (2, 4, 8)}
    v = stats.g_verdict(data, "pass@1")
    assert "per doubling of G" in v["statement"] and "CI" in v["statement"]
    assert "a trend in G" in v["statement"]
    assert len(v["contrasts"]) == 3 and all(r["differs"] for r in v["contrasts"])


def test_trend_direction_names_only_what_the_interval_shows():
    rng = np.random.default_rng(5)
    up = {G: {s: 0.5 + 0.03 * np.log2(G) + 0.001 * rng.normal() for s in range(5)}
          for G in (2, 4, 8)}
    down = {G: {s: -v for s, v in seeds.items()} for G, seeds in up.items()}
    flat = {G: {s: 0.5 + 0.01 * rng.normal() for s in range(5)} for G in (2, 4, 8)}
    assert stats.trend_direction(stats.trend_in_log2_G(up)) == "rises with G"
    assert stats.trend_direction(stats.trend_in_log2_G(down)) == "falls with G"
    # a planted null must not be read as a direction
    assert "no detectable" in stats.trend_direction(stats.trend_in_log2_G(flat))
    same = {G: {s: 0.5 + 0.01 * G for s in range(3)} for G in (2, 4)}
    assert "not a test" in stats.trend_direction(stats.trend_in_log2_G(same))


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="two G"):
        stats.trend_in_log2_G({2: {0: 0.5}})
    with pytest.raises(ValueError, match="finite"):
        stats.t_interval([0.5, float("nan")])
    with pytest.raises(ValueError, match="empty"):
        stats.t_interval([])


# ----------------------------------------------------------------------------- issue 24
def _table(f, Gs=(2, 4, 8, 16, 32), seeds=range(5), noise=0.002, rng_seed=0):
    """by_G_and_seed with metric f(log2 G) plus per-seed noise."""
    rng = np.random.default_rng(rng_seed)
    return {G: {s: float(f(np.log2(G)) + noise * rng.normal()) for s in seeds} for G in Gs}


def test_curvature_detects_a_planted_interior_optimum_and_not_a_line():
    from grpolab.labs.stats import curvature_in_log2_G

    peak = curvature_in_log2_G(_table(lambda x: 0.5 - 0.01 * (x - 2) ** 2))
    assert peak["concave"] and not peak["convex"]
    assert all(abs(v - 4) < 0.5 for v in peak["vertex_G"])  # the planted optimum, G = 4
    line = curvature_in_log2_G(_table(lambda x: 0.5 + 0.01 * x, noise=0.0005, rng_seed=3))
    assert not line["concave"] and abs(line["coefficient"]) < 2e-4


def test_crossing_test_supports_contradicts_or_is_inconclusive_as_planted():
    from grpolab.labs.stats import crossing_test

    computes = [256 * 2 ** k for k in range(8)]
    def planted(sign):  # the slope on log2 G moves with log(compute)
        return {c: _table(lambda x, c=c: 0.4 + sign * 0.002 * np.log(c) * x, rng_seed=k)
                for k, c in enumerate(computes)}
    assert crossing_test(planted(+1))["verdict"] == "supported"
    assert crossing_test(planted(-1))["verdict"] == "contradicted"
    flat = {c: _table(lambda x: 0.4, noise=0.001, rng_seed=k) for k, c in enumerate(computes)}
    assert crossing_test(flat)["verdict"] == "inconclusive"
    # too noisy to show that G = 2 has levelled off: the precondition fails
    noisy = {c: _table(lambda x: 0.4, noise=0.01, rng_seed=k) for k, c in enumerate(computes)}
    out = crossing_test(noisy)
    assert out["window_direction"] == "inconclusive" and out["verdict"] == "not reached"


def test_best_g_with_ties_names_the_indistinguishable_ones():
    from grpolab.labs.stats import best_G_with_ties

    out = best_G_with_ties(_table(lambda x: 0.5 - 0.05 * abs(x - 2), noise=0.001))
    assert out["best"] == 4 and out["tied"] == [4]
    flat = best_G_with_ties(_table(lambda x: 0.5, noise=0.01))
    assert set(flat["tied"]) == {2, 4, 8, 16, 32}


def test_gstar_verdict_fails_a_planted_miss_and_refuses_a_range_that_spans_everything():
    from grpolab.labs.stats import gstar_verdict

    rising = _table(lambda x: 0.3 + 0.03 * x, noise=0.001)  # best measured G = 32
    miss = gstar_verdict(rising, g_pred=4.0, g_range=(3.0, 6.0))
    assert miss["predicted_G"] == 4 and miss["best"]["best"] == 32
    assert miss["verdict"] == "fails"  # 0.06 worse than the best, far beyond the 0.01 margin
    assert gstar_verdict(rising, 32.0, (1.5, 64.0))["verdict"] == "inconclusive"  # spans all
    peak = _table(lambda x: 0.5 - 0.01 * (x - 2) ** 2, noise=0.001)
    hit = gstar_verdict(peak, g_pred=4.3, g_range=(3.5, 5.5))
    assert hit["predicted_G"] == 4 and hit["verdict"] == "agrees"
    # the same data with a prediction at the edge: the planted curve is not monotone
    edge = gstar_verdict(peak, g_pred=2.0, g_range=(2.0, 2.5))
    assert edge["verdict"] != "agrees"


def test_prompt_bootstrap_recovers_a_planted_slope_and_is_wider_than_no_prompt_noise():
    from grpolab.labs.stats import prompt_bootstrap_trend

    rng = np.random.default_rng(1)
    P = 200
    difficulty = rng.uniform(0.2, 0.7, P)  # away from 0 and 1: no clipping bends the slope
    per = {G: {s: np.clip(difficulty + 0.02 * np.log2(G) + 0.01 * rng.normal(size=P), 0, 1)
               for s in range(5)} for G in (2, 4, 8, 16, 32)}
    out = prompt_bootstrap_trend(per, n_boot=400)
    assert out["low"] < 0.02 < out["high"] and out["low"] > 0


def test_a_contrast_with_no_spread_is_not_a_detection():
    from grpolab.labs.stats import contrast, pairwise_contrasts

    a, b = {0: 0.500, 1: 0.400, 2: 0.450}, {0: 0.495, 1: 0.395, 2: 0.445}  # always 0.005
    c = contrast(a, b)
    assert c["p_value"] is None and "no spread" in c["test"]
    assert not pairwise_contrasts({"a": a, "b": b})[0]["differs"]
    assert contrast(a, dict(a))["p_value"] == 1.0  # identical runs: no difference


def test_a_contrast_whose_spread_is_float_residue_is_not_a_detection():
    """Per-seed differences equal up to rounding give a tiny nonzero SE and, before, a t of
    ~10^14 (p ~ 1e-29, "detected"); a real spread of the same mean is still tested."""
    from grpolab.labs.stats import contrast, t_interval

    a = {0: 0.005, 1: 0.105, 2: 0.705, 3: 0.335}
    b = {0: 0.0, 1: 0.1, 2: 0.7, 3: 0.33}
    d = [a[s] - b[s] for s in a]
    assert t_interval(d)["se"] > 0  # the planted residue is there
    c = contrast(a, b)
    assert c["p_value"] is None and "no spread" in c["test"]
    real = contrast({0: 0.006, 1: 0.104, 2: 0.7055, 3: 0.335}, b)
    assert real["p_value"] is not None and real["test"] == "paired t"


# ----------------------------------------------------------------------------- issue 31
def _isocompute(G, C):
    """IsoCompute-like curves: a larger G starts learning later and levels off higher; the
    mean curves of G = 2 and G = 32 cross at about 9.6x the lab's last checkpoint (32,768)."""
    x = np.log2(G)
    return 0.06 + (0.10 + 0.05 * x) / (1 + np.exp(-(np.log(C) - np.log(5e4) - 0.5 * x)))


def _observed(computes, rng_seed=0, noise=0.004):
    rng = np.random.default_rng(rng_seed)
    return {c: {G: {s: float(_isocompute(G, c) + noise * rng.normal()) for s in range(5)}
                for G in (2, 4, 8, 16, 32)} for c in computes}


def test_a_crossing_beyond_the_budget_is_not_reached_not_contradicted():
    """F3: curves that follow IsoCompute but cross 9x past the window show small G ahead
    inside it; without the plateau precondition the test called them "contradicted"."""
    from grpolab.labs.stats import crossing_test

    grid = np.geomspace(256, 2 ** 26, 4000)
    cross = grid[np.argmax(_isocompute(32, grid) > _isocompute(2, grid))]
    assert 5 < cross / 32768 < 15  # the planted crossing lies beyond the window
    window = [256 * 2 ** k for k in range(8)]
    for rep in range(5):
        out = crossing_test(_observed(window, rep))
        assert out["window_direction"] == "contradicted"  # what the old verdict said
        assert out["verdict"] == "not reached" and not out["precondition"]["holds"]
        assert out["mde"] > 0
    # the same curves observed around the crossing, once G = 2 has levelled off (with an
    # eval noise small enough for 5 seeds to show the plateau: 2.78·σ·√(2/5) < 0.005)
    late = [2 ** 17 * 2 ** k for k in range(8)]
    out = crossing_test(_observed(late, noise=0.0015))
    assert out["precondition"]["holds"] and out["verdict"] == "supported"


def test_the_plateau_precondition_fails_on_a_still_rising_arm():
    from grpolab.labs.stats import plateau_precondition

    rising = {c: {2: {s: 0.1 + 0.01 * np.log2(c) + 0.001 * s for s in range(4)}}
              for c in (1024, 2048, 4096)}
    assert not plateau_precondition(rising)["holds"]
    flat = {c: {2: {s: 0.3 + 0.0005 * ((s * 7 + c) % 3) for s in range(4)}}
            for c in (1024, 2048, 4096)}
    assert plateau_precondition(flat)["holds"]


def test_tost_concludes_equivalent_for_a_tight_zero_and_not_for_a_real_effect():
    from grpolab.labs.stats import tost

    rng = np.random.default_rng(0)
    zero = rng.normal(0.0, 0.001, 5)  # a true zero slope with tight noise
    assert tost(zero, margin=0.005)["verdict"] == "equivalent"
    real = rng.normal(0.008, 0.001, 5)  # a real effect beyond the margin
    assert tost(real, margin=0.005)["verdict"] == "not equivalent"
    noisy = rng.normal(0.0, 0.02, 5)  # a zero with noise too large to conclude anything
    assert tost(noisy, margin=0.005)["verdict"] == "not equivalent"
    with pytest.raises(ValueError, match="margin"):
        tost(zero, margin=0)


def test_the_minimum_detectable_effect_uses_t_quantiles_and_has_its_power():
    from scipy import stats as sps

    from grpolab.labs.stats import minimum_detectable_effect, t_interval

    assert minimum_detectable_effect(1.0, 4) == pytest.approx(2.7764 + 0.9410, abs=1e-3)
    assert minimum_detectable_effect(1.0, 4) > 1.96 + 0.84  # few seeds: t, not normal
    assert t_interval([0.1, 0.2, 0.15])["mde"] is not None
    # simulated: a true effect of one MDE is detected ~80% of the time with 5 seeds
    rng = np.random.default_rng(0)
    sd, n = 0.01, 5
    mde = minimum_detectable_effect(sd / np.sqrt(n), n - 1)
    hits = [sps.ttest_1samp(rng.normal(mde, sd, n), 0).pvalue < 0.05 for _ in range(4000)]
    assert 0.74 < np.mean(hits) < 0.86


def test_g_verdict_names_the_compute_and_the_mde_of_a_null():
    from grpolab.labs.stats import g_verdict

    flat = _table(lambda x: 0.4, noise=0.01)
    v = g_verdict(flat, "pass@1", held_fixed="at a fixed budget of 64 completions per step")
    assert "at a fixed budget of 64 completions per step" in v["statement"]
    assert "MDE" in v["statement"] and "TOST" in v["statement"]


def test_gstar_agrees_only_with_a_non_degenerate_interval_and_a_test_that_could_fail():
    from grpolab.labs.stats import gstar_verdict

    # predicted = best = 2, every other G within a noisy half point: a degenerate t regret
    # of 0 must not read as agreement, since no prediction could fail
    near = _table(lambda x: 0.4 - 0.001 * x, noise=0.003)
    out = gstar_verdict(near, g_pred=2.0, g_range=(2.0, 2.4))
    assert out["predicted_G"] == 2 and out["verdict"] != "agrees"
    assert not out["power"]["a_prediction_can_fail"]
    # a strong planted falling curve: predicting 2 can now fail for other G, and agrees
    falling = _table(lambda x: 0.5 - 0.03 * x, noise=0.002)
    out = gstar_verdict(falling, g_pred=2.0, g_range=(2.0, 2.4))
    assert out["power"]["a_prediction_can_fail"] and out["verdict"] == "agrees"
    assert not out["regret_bootstrap"]["degenerate"]


def test_matched_compute_reverses_an_equal_steps_effect_that_is_only_more_compute():
    """F4: at fixed prompts per step, G = 32 spends 16x the completions of G = 2 at a step.
    Planted: pass@1 depends only on completions spent minus a small cost per doubling of G,
    so equal steps show a rise in G and matched completions show the planted fall."""
    from grpolab.labs.stats import matched_compute_trend, trend_in_log2_G

    rng = np.random.default_rng(0)
    B, steps = 4, (0, 25, 50, 100, 200)
    def metric(c, G):
        return 0.3 + 0.03 * np.log1p(c / 400) - 0.01 * np.log2(G) + 0.001 * rng.normal()
    curves = {G: {s: [(B * G * t, metric(B * G * t, G)) for t in steps] for s in range(3)}
              for G in (2, 4, 8, 16, 32)}
    equal_steps = trend_in_log2_G({G: {s: rows[-1][1] for s, rows in seeds.items()}
                                   for G, seeds in curves.items()})
    assert equal_steps["low"] > 0
    m = matched_compute_trend(curves, 1600)
    assert m["G_compared"] == [2, 4, 8, 16] and m["G_left_out"] == [32]
    assert m["high"] < 0 and m["slope_per_doubling"] == pytest.approx(-0.01, abs=0.003)
    assert m["held_fixed"] == "at matched completions (1,600)"
    with pytest.raises(ValueError, match="fewer than two"):
        matched_compute_trend(curves, 123)


def test_direction_verdict_can_say_each_of_its_four_words():
    """A difference predicted positive: above 0 supported, below 0 refuted (the planted
    refuting outcome), tight around 0 equivalent, wide around 0 inconclusive."""
    from grpolab.labs.stats import direction_verdict

    assert direction_verdict([0.02, 0.03, 0.025, 0.028])[0] == "supported"
    assert direction_verdict([-0.02, -0.03, -0.025, -0.028])[0] == "refuted"
    assert direction_verdict([0.0005, -0.0004, 0.0002, -0.0001])[0] == "equivalent"
    verdict, ci, eq = direction_verdict([0.03, -0.03, 0.02, -0.025])
    assert verdict == "inconclusive" and ci["low"] < 0 < ci["high"]
    assert eq["verdict"] == "not equivalent"
