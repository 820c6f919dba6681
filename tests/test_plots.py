"""grpolab.book.figures: every figure function returns a Figure holding grpolab's numbers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from grpolab import simulate, theory
from grpolab.book import (
    figures,
    sliders,  # noqa: E402
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _lines(fig):
    return {ln.get_label(): (ln.get_xdata(), ln.get_ydata()) for ln in fig.axes[0].lines}


def test_zero_variance_heatmap_holds_the_closed_form():
    ps, Gs = np.linspace(0.05, 0.95, 19), [2, 4, 16]
    fig = figures.zero_variance_heatmap(ps, Gs)
    img = fig.axes[0].images[0].get_array()
    np.testing.assert_allclose(img, theory.zero_variance_probability(ps[:, None],
                                                                     np.array(Gs)[None, :]))
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["2", "4", "16"]


def test_mc_check_figure_plots_both_series():
    est = [simulate.MCEstimate(0.5, 0.01, 100), simulate.MCEstimate(0.25, 0.01, 100)]
    fig = figures.mc_check_figure([1, 2], [0.5, 0.25], est, xlabel="G", ylabel="y", title="t")
    lines = _lines(fig)
    np.testing.assert_allclose(lines["closed form"][1], [0.5, 0.25])
    np.testing.assert_allclose(
        np.asarray(fig.axes[0].containers[0].lines[0].get_ydata(), float), [0.5, 0.25])


def test_baseline_variance_figure_matches_sigma2_over_G():
    Gs = [2, 8, 32]
    fig = figures.baseline_variance_figure(Gs, 0.25, n_groups=20_000, seed=0)
    x, y = _lines(fig)["closed form"]
    np.testing.assert_allclose(y, 0.25 / np.array(Gs))
    mc = np.asarray(fig.axes[0].containers[0].lines[0].get_ydata(), dtype=float)
    np.testing.assert_allclose(mc, y, rtol=0.1)  # 20,000 groups: a few % noise at most
    with pytest.raises(ValueError, match="reward_variance"):
        figures.baseline_variance_figure(Gs, 0.5)


def test_group_std_figure_bars_are_distributions_on_the_possible_values():
    fig = figures.group_std_figure(0.3, [2, 4], n_groups=5000, seed=0)
    for ax, G in zip(fig.axes, [2, 4], strict=True):
        heights = [b.get_height() for b in ax.patches]
        assert sum(heights) == pytest.approx(1.0)
        xs = [b.get_x() + b.get_width() / 2 for b in ax.patches]
        k = np.arange(G + 1) / G
        possible = np.sqrt(G / (G - 1) * k * (1 - k))
        assert all(np.isclose(possible, x).any() for x in xs)
    assert len(fig.axes[0].patches) == 2  # G = 2: s is 0 or 1/√2


def test_beta_prior_figure_lines_equal_theory():
    Gs = [1, 4, 16]
    rates = [0.0, 0.5, 1.0]
    fig = figures.beta_prior_figure(Gs, [(1, 1), (2, 5)], pass_rates=rates, pass_rates_label="L")
    lines = _lines(fig)
    np.testing.assert_allclose(lines["p ~ Beta(1, 1)"][1], 2 / (np.array(Gs) + 1))
    np.testing.assert_allclose(lines["p ~ Beta(2, 5)"][1],
                               theory.beta_zero_variance_probability(np.array(Gs), 2, 5))
    np.testing.assert_allclose(lines["L"][1],
                               theory.empirical_zero_variance_probability(rates, np.array(Gs)))


def test_cost_figure_lines_equal_sampling_cost():
    Gs = np.array([2, 8, 32])
    fig = figures.cost_figure(10, Gs, 100, 300)
    ys = [ln.get_ydata() for ln in fig.axes[0].lines]
    np.testing.assert_allclose(ys[0], 10 * Gs * 300)   # decode
    np.testing.assert_allclose(ys[1], 10 * Gs * 100)   # prefill, unshared
    np.testing.assert_allclose(ys[2], [1000] * 3)      # prefill, shared


def test_reward_granularity_figure_shows_the_amplification():
    widths = np.array([1e-3, 1e-2, 1e-1, 1.0])
    fig = figures.reward_granularity_figure(widths, G=8, n_groups=500, seed=0)
    raw, scaled = (ln.get_ydata() for ln in fig.axes[0].lines)
    np.testing.assert_allclose(raw / widths, raw[-1], rtol=1e-6)  # raw size ∝ w
    # normalized: flat (about E|Z| ≈ 0.8) while the spread is well above eps = 1e-4 ...
    assert scaled[1:].min() > 0.7 and scaled[1:].max() / scaled[1:].min() < 1.1
    # ... and damped once the group's std approaches eps
    assert scaled[0] < 0.9 * scaled[-1]


def test_temperature_figure_lines_equal_theory():
    logits = [1.0, 0.0, -1.0]
    Ts = [0.1, 1.0, 3.0]
    fig = figures.temperature_figure(logits, Ts, [2, 8])
    for (_x, y), G in zip(_lines(fig).values(), [2, 8], strict=True):
        want = [theory.identical_group_probability(figures.softmax_at_temperature(logits, T), G)
                for T in Ts]
        np.testing.assert_allclose(y, want)


@pytest.mark.parametrize("key", sorted(sliders.EXPLORERS))
def test_explorer_figure_draws_the_explorer_curves(key):
    e = sliders.EXPLORERS[key]
    params = e.initial_params()
    fig = figures.explorer_figure(e, params)
    x, series = e.curves(**e.curve_params(params))
    lines = _lines(fig)
    for label, y in series.items():
        np.testing.assert_allclose(lines[label][1], y)
        np.testing.assert_allclose(lines[label][0], x)


def test_html_table_formats_numbers_and_escapes_text():
    html = figures.html_table(["a<b", "x"], [("<i>", 1.234567), (2, np.float64(0.5))]).data
    assert "a&lt;b" in html and "&lt;i&gt;" in html
    assert "<td>1.235</td>" in html and "<td>0.5</td>" in html
