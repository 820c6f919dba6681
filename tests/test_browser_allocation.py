"""The adaptive-allocation explorer (book/theory/14) in headless chromium: after each slider
move, every readout equals an allocation computed here independently of
grpolab.allocation.allocate (a greedy for the rules whose gains fall with n, where greedy is
exact, and a memoised recursion for Dr. GRPO's variance, where it is not)."""

from __future__ import annotations

import functools
import math

import pytest
from scipy import stats

pytestmark = [pytest.mark.slow, pytest.mark.book, pytest.mark.browser]

PROMPTS, MAX_G, MIN_G = 25, 64, 2


def _pool(mean: float) -> list[float]:
    return [min(max(float(stats.beta.ppf((i + 0.5) / PROMPTS, mean, 1 - mean)), 0.001), 0.999)
            for i in range(PROMPTS)]


VALUE = {
    "informative groups": lambda p, n: 1 - p**n - (1 - p) ** n,
    "Knapsack RL's value": lambda p, n: (1 - p**n - (1 - p) ** n) * p * (1 - p) ** 2,
    "first success": lambda p, n: 1 - (1 - p) ** n,
    "RLOO variance": lambda p, n: -p * (1 - p) / (n - 1),
    "Dr. GRPO variance": lambda p, n: -p * (1 - p) * (n - 1) / n**2,
}


def _consistent_with_concave_optimum(pool, mean_G, value, j, G) -> bool:
    """For gains that fall with n (greedy is exact), prompt j's size G belongs to an optimal
    allocation iff its last taken increment gains at least the K-th largest gain of all
    increments and its next one gains at most that."""
    gains = sorted(((value(p, n + 1) - value(p, n)) for p in pool for n in range(MIN_G, MAX_G)),
                   reverse=True)
    lam = gains[len(pool) * (mean_G - MIN_G) - 1]
    tol = 1e-12
    p = pool[j]
    last_ok = G == MIN_G or value(p, G) - value(p, G - 1) >= lam - tol
    next_ok = G == MAX_G or value(p, G + 1) - value(p, G) <= lam + tol
    return last_ok and next_ok


def _best(pool, budget, value) -> float:
    """The optimal objective of ``pool`` at exactly ``budget`` completions (a memoised
    recursion over prompts and budget left: exact whatever the shape of the gains)."""
    pool = tuple(pool)

    @functools.cache
    def best(i, left):
        if i == len(pool):
            return 0.0 if left == 0 else -math.inf
        hi = min(MAX_G, left - MIN_G * (len(pool) - i - 1))
        return max((value(pool[i], n) + best(i + 1, left - n) for n in range(MIN_G, hi + 1)),
                   default=-math.inf)
    return best(0, budget)


def _read(figure) -> dict[str, str]:
    heads = figure.locator("table.grpolab-readouts th").all_inner_texts()
    cells = figure.locator("td[data-role=readout]").all_inner_texts()
    return dict(zip(heads, cells, strict=True))


def _slider_value(figure, name: str) -> float:
    return float(figure.locator(f"input[data-param={name}]").locator("xpath=..")
                 .locator("output").inner_text())


def test_allocation_explorer_readouts_match_an_independent_allocation(offline_page):
    page = offline_page("theory/14-adaptive-allocation").page
    figure = page.locator('.grpolab-static-slider[data-explorer="allocation"]')
    moves = [(None, None, 0), ("mean", "ArrowRight", 1), ("p", "ArrowRight", 3),
             ("mean_G", "ArrowLeft", 2), ("mean", "ArrowLeft", 3)]
    checked = 0
    for name, key, presses in moves:
        if name is not None:
            slider = figure.locator(f"input[data-param={name}]")
            slider.focus()
            for _ in range(presses):
                slider.press(key)
        mean, mean_G, p = (_slider_value(figure, n) for n in ("mean", "mean_G", "p"))
        mean_G = int(mean_G)
        pool = _pool(mean)
        j = min(range(PROMPTS), key=lambda i: abs(pool[i] - p))
        shown = _read(figure)
        assert float(shown["pass rate of the nearest prompt"]) == pytest.approx(pool[j], abs=1e-3)
        for label, value in VALUE.items():
            G = int(float(shown[f"G, {label}"]))
            where = (label, mean, mean_G, p, G)
            if label == "Dr. GRPO variance":  # gains not monotone: compare optimal totals
                total = _best(pool, PROMPTS * mean_G, value)
                with_j = value(pool[j], G) + _best(pool[:j] + pool[j + 1:], PROMPTS * mean_G - G,
                                                   value)
                assert with_j == pytest.approx(total, rel=1e-9, abs=1e-12), where
            else:
                assert _consistent_with_concave_optimum(pool, mean_G, value, j, G), where
            checked += 1
    assert checked == 5 * len(moves)
