"""One colour per G across the book (grpolab._palette): the matplotlib figures, the lab
reports and the playground's JavaScript agree, and the colours stay readable as lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grpolab._palette import G_COLORS, g_color

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "src" / "grpolab" / "book" / "static"


def _contrast(hex_a: str, hex_b: str = "#ffffff") -> float:
    def lum(h: str) -> float:
        c = [int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    a, b = sorted((lum(hex_a), lum(hex_b)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def _readable_on_white(colors) -> list[str]:
    """Colours a line on white cannot be seen well in (under 1.9:1, e.g. yellow)."""
    return [c for c in colors if _contrast(c) < 1.9]


def test_every_g_has_one_distinct_readable_colour():
    assert len(set(G_COLORS.values())) == len(G_COLORS)
    assert _readable_on_white(G_COLORS.values()) == []
    assert g_color(16) == G_COLORS[16] and g_color(np_int(16)) == G_COLORS[16]
    assert g_color(5) == g_color(5) and g_color(5) not in (None, "")
    # the check can fail: yellow (viridis' end, Okabe-Ito's #F0E442) is caught
    assert _readable_on_white(["#F0E442", "#fde725"]) == ["#F0E442", "#fde725"]


def np_int(v: int):
    import numpy as np

    return np.int64(v)


def test_the_playground_uses_the_same_table():
    js = (STATIC / "grpolab-toy.js").read_text(encoding="utf-8")
    table = json.loads(re.search(r"var G_COLORS = (\{[^}]*\});", js).group(1))
    assert {int(k): v for k, v in table.items()} == G_COLORS
    css = (STATIC / "grpolab-sliders.css").read_text(encoding="utf-8")
    light = css.split("html[data-theme=dark]", 1)[0]
    for G, c in G_COLORS.items():
        m = re.search(rf"--grpolab-g{G}: (#[0-9A-Fa-f]{{6}})", light)
        if m:  # the playground's G choices have a CSS variable each
            assert m.group(1).upper() == c.upper(), G
    assert len(re.findall(r"--grpolab-g\d+:", light)) == 10


def test_figures_and_lab_reports_draw_g_in_its_colour():
    pytest.importorskip("matplotlib")
    import matplotlib
    from matplotlib.colors import to_hex

    matplotlib.use("Agg")
    from grpolab.book import figures
    from grpolab.labs.sweep import report

    fig = figures.temperature_figure([2.0, 1.0, 0.0], [0.5, 1.0], [2, 8, 32])
    got = {ln.get_label(): to_hex(ln.get_color()) for ln in fig.axes[0].get_lines()}
    assert got == {f"G = {G}": G_COLORS[G].lower() for G in (2, 8, 32)}
    assert report._colors([32, 2, 4]) == {2: G_COLORS[2], 4: G_COLORS[4], 32: G_COLORS[32]}
