"""grpolab.book.sliders: the static grid equals grpolab.theory; the live sliders recompute."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

from grpolab import theory
from grpolab.book import figures, sliders
from grpolab.book.sliders import EXPLORERS, Explorer, Slider


def _grid_from_html(html: str) -> dict:
    m = re.search(r'<script type="application/json" class="grpolab-grid">(.*?)</script>', html,
                  re.S)
    assert m, "no embedded grid"
    return json.loads(m.group(1).replace("<\\/", "</"))


def _num(v):
    return np.inf if v == "inf" else np.nan if v is None else v


def _flat_index(indices, sizes):
    i = 0
    for idx, n in zip(indices, sizes, strict=True):
        i = i * n + idx
    return i


def test_zero_variance_grid_equals_theory():
    """Every curve point and readout in the embedded JSON is theory's value (7 digits)."""
    grid = _grid_from_html(sliders.static_slider_html(EXPLORERS["zero-variance"]))
    p_values = grid["sliders"][0]["values"]
    G_values = grid["sliders"][1]["values"]
    assert grid["curve_sliders"] == ["p"]
    assert len(grid["curves"]) == len(p_values) == 99
    assert len(grid["readouts"]) == len(p_values) * len(G_values)
    for i in (0, 9, 49, 98):  # p = 0.01, 0.10, 0.50, 0.99
        p = p_values[i]
        curve = grid["curves"][i]
        G = np.asarray(curve["x"])
        np.testing.assert_allclose(curve["ys"][0], theory.zero_variance_probability(p, G),
                                   rtol=1e-6, atol=1e-300)
        np.testing.assert_allclose(curve["ys"][1], theory.all_fail_probability(p, G), rtol=1e-6)
        np.testing.assert_allclose(curve["ys"][2], theory.all_pass_probability(p, G),
                                   rtol=1e-6, atol=1e-300)
        for j in (0, 3, 15, 63):
            r = grid["readouts"][_flat_index((i, j), (len(p_values), len(G_values)))]
            Gj = G_values[j]
            assert r[0] == pytest.approx(theory.zero_variance_probability(p, Gj), rel=1e-6)
            assert r[3] == pytest.approx(
                theory.expected_informative_prompts(p, Gj, sliders.R1_PROMPTS), rel=1e-6)


def test_cost_grid_readouts_equal_theory():
    e = EXPLORERS["cost-of-g"]
    grid = sliders.explorer_grid(e)
    sizes = [len(s.values) for s in e.sliders]
    for idx in itertools.product(range(sizes[0]), (4, 49), range(sizes[2])):
        budget, p, G = (s.values[i] for s, i in zip(e.sliders, idx, strict=True))
        r = grid["readouts"][_flat_index(idx, sizes)]
        B = theory.fixed_budget_prompts(budget, G)
        assert r[0] == B
        assert r[2] == pytest.approx(theory.expected_informative_prompts(p, G, B), rel=1e-6)


@pytest.mark.parametrize("key", sorted(EXPLORERS))
def test_every_explorer_grid_is_valid_json_with_the_right_shape(key):
    e = EXPLORERS[key]
    html = sliders.static_slider_html(e)
    grid = _grid_from_html(html)  # json.loads rejects NaN, so the page's JSON.parse will too
    assert "Static slider" in html, "the page must say which kind of slider it shows"
    n_curves = int(np.prod([len(e.slider(n).values) for n in e.curve_sliders]))
    n_all = int(np.prod([len(s.values) for s in e.sliders]))
    assert len(grid["curves"]) == n_curves and len(grid["readouts"]) == n_all
    for curve in grid["curves"]:
        assert len(curve["ys"]) == len(grid["series"])
        assert all(len(y) == len(curve["x"]) for y in curve["ys"])
    assert all(len(r) == len(grid["readouts_labels"]) for r in grid["readouts"])
    # the curves do not depend on the marker slider: same curve for every marker value
    if e.marker:
        base = e.initial_params()
        x0, s0 = e.curves(**e.curve_params(base))
        other = dict(base, **{e.marker: e.slider(e.marker).values[-1]})
        x1, s1 = e.curves(**e.curve_params(other))
        np.testing.assert_array_equal(x0, x1)
    # the initial readouts are what the explorer computes at the initial position
    idx = [s.initial_index for s in e.sliders]
    sizes = [len(s.values) for s in e.sliders]
    expected = e.readouts(**e.initial_params())
    got = grid["readouts"][_flat_index(idx, sizes)]
    for v, (label, want) in zip(got, expected.items(), strict=True):
        assert _num(v) == pytest.approx(want, rel=1e-6, nan_ok=True), label


def test_grid_encodes_nan_and_inf_as_json_safe_values():
    assert sliders._clean([1.0, np.nan, np.inf, 0.123456789]) == [1.0, None, "inf", 0.1234568]


def test_degenerate_grid_marks_infinite_cost():
    """p = 0.01, G = 2: q > 0, finite; the curves never hold NaN strings."""
    grid = sliders.explorer_grid(EXPLORERS["degenerate-groups"])
    for curve in grid["curves"]:
        assert all(v is None or v == "inf" or v > 0 for y in curve["ys"] for v in y)


def test_inline_assets_embed_the_script_and_reference_no_network():
    html = sliders.static_slider_html(EXPLORERS["baseline-variance"], inline_assets=True)
    assert "grpolabSliders" in html and "<style>" in html
    js = sliders._static_asset("grpolab-sliders.js")
    css = sliders._static_asset("grpolab-sliders.css")
    for text in (js, css):
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), "no network URLs"


def test_show_picks_the_kind_from_the_environment(monkeypatch):
    from IPython.display import HTML

    monkeypatch.setenv("GRPOLAB_WIDGETS", "static")
    assert sliders.widget_kind() == "static"
    assert isinstance(sliders.show("temperature"), HTML)
    monkeypatch.setenv("GRPOLAB_WIDGETS", "bogus")
    with pytest.raises(ValueError, match="GRPOLAB_WIDGETS"):
        sliders.widget_kind()
    monkeypatch.delenv("GRPOLAB_WIDGETS")
    assert sliders.widget_kind() == "live"


def test_show_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown explorer"):
        sliders.show("nope", kind="static")
    with pytest.raises(ValueError, match="kind"):
        sliders.show("temperature", kind="neither")


def test_live_sliders_recompute_through_grpolab(monkeypatch):
    """Moving a live slider redraws the figure with the new parameter's curves."""
    ipywidgets = pytest.importorskip("ipywidgets")
    import matplotlib

    matplotlib.use("Agg")
    from grpolab.book import figures

    drawn = []
    real = figures.explorer_figure

    def spy(explorer, params):
        drawn.append(dict(params))
        return real(explorer, params)

    monkeypatch.setattr(figures, "explorer_figure", spy)
    box = sliders.live_slider_figure("zero-variance")
    assert isinstance(box, ipywidgets.VBox)
    controls = [c for c in box.children if isinstance(c, ipywidgets.SelectionSlider)]
    assert [s.description for s in controls] == ["p", "G"]
    assert drawn and drawn[-1] == {"p": 0.1, "G": 4}
    controls[0].value = 0.5
    assert drawn[-1] == {"p": 0.5, "G": 4}
    fig = real(EXPLORERS["zero-variance"], drawn[-1])
    y = fig.axes[0].lines[0].get_ydata()
    np.testing.assert_allclose(y, theory.zero_variance_probability(0.5, np.arange(1, 65)))


def test_slider_validation():
    with pytest.raises(ValueError, match="initial"):
        Slider("p", "p", (0.1, 0.2), 0.3)
    with pytest.raises(ValueError, match="at least one"):
        Slider("p", "p", (), 0.1)
    e = EXPLORERS["zero-variance"]
    with pytest.raises(ValueError, match="no slider"):
        e.slider("T")
    assert isinstance(e, Explorer)


def test_softmax_at_temperature():
    q = figures.softmax_at_temperature([2.0, 1.0, 0.0], 1.0)
    np.testing.assert_allclose(q, np.exp([2, 1, 0]) / np.exp([2, 1, 0]).sum())
    assert figures.softmax_at_temperature([2.0, 1.0], 0.01)[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="temperature"):
        figures.softmax_at_temperature([1.0], 0.0)


@pytest.mark.slow
def test_a_chapter_runs_live_in_a_kernel(tmp_path, monkeypatch):
    """Opened as a notebook (jupytext) without the book build, a chapter shows ipywidgets."""
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    from grpolab.book.build import default_book_dir

    monkeypatch.delenv("GRPOLAB_WIDGETS", raising=False)
    nb = jupytext.read(default_book_dir() / "theory" / "03-zero-variance.md")
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    mimes = [set(o.get("data", {})) for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", [])]
    assert any("application/vnd.jupyter.widget-view+json" in m for m in mimes), \
        "the live chapter should display ipywidgets sliders"
    assert not any('class="grpolab-static-slider"' in str(o.get("data", {}).get("text/html", ""))
                   for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
