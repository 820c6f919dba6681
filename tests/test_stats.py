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
    data = {G: {s: 0.5 + 0.03 * np.log2(G) + 0.001 * ((s * 7 + G) % 3) for s in range(5)}
            for G in (2, 4, 8)}
    v = stats.g_verdict(data, "pass@1")
    assert "per doubling of G" in v["statement"] and "CI" in v["statement"]
    assert "a trend in G" in v["statement"]
    assert len(v["contrasts"]) == 3 and all(r["differs"] for r in v["contrasts"])


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="two G"):
        stats.trend_in_log2_G({2: {0: 0.5}})
    with pytest.raises(ValueError, match="finite"):
        stats.t_interval([0.5, float("nan")])
    with pytest.raises(ValueError, match="empty"):
        stats.t_interval([])
