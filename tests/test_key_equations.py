"""The formula registry, the key-equations page and the one-page sheet generated from it."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

from grpolab import theory
from grpolab.drill import formulas
from grpolab.drill.formulas import FORMULAS, RECIPES

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PUBLIC_FUNCTIONS = [n for n in theory.__all__ if inspect.isfunction(getattr(theory, n))]
BY_FUNCTION = {f.function: f for f in FORMULAS if f.function}


def test_registry_covers_every_public_function_of_theory():
    assert sorted(BY_FUNCTION) == sorted(PUBLIC_FUNCTIONS)
    for name in ("gradient_variance_inflation", "minibatch_gradient_mse", "optimal_group_size"):
        assert name in BY_FUNCTION
    # The rest of __all__ (a constant, a result class) is named by the entry that covers it.
    others = set(theory.__all__) - set(PUBLIC_FUNCTIONS) - set(formulas.NOT_FORMULAS)
    assert others == {a for f in FORMULAS for a in f.also}
    assert len([f.function for f in FORMULAS if f.function]) == len(BY_FUNCTION)


def _derived_in(name: str) -> tuple[str, str]:
    doc = inspect.getdoc(getattr(theory, name)) or ""
    m = re.search(r'Derived in: book/([\w/.-]+)\.md, "([^"]+)"', doc.replace("\n", " "))
    assert m, f"{name} has no 'Derived in: book/...md, \"Section\"' line"
    return m.group(1), m.group(2)


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_entry_chapter_matches_the_docstring(name):
    chapter, section = _derived_in(name)
    f = BY_FUNCTION[name]
    assert (f.chapter, f.section) == (chapter, section)
    assert (BOOK / f"{f.chapter}.md").is_file()


def test_relations_without_a_function_link_an_existing_section():
    for f in FORMULAS:
        if f.function is None:
            text = (BOOK / f"{f.chapter}.md").read_text(encoding="utf-8")
            assert f"## {f.section}" in text, (f.title, f.section)


# Each equation, typed independently from its LaTeX, must compute what the function computes.
def _beta(a, b):
    return math.gamma(a) * math.gamma(b) / math.gamma(a + b)


FORMULA_AS_CODE = {
    "baseline_variance": ((0.21, 8), lambda s2, G: s2 / G),
    "baseline_standard_error": ((0.21, 8), lambda s2, G: math.sqrt(s2) / math.sqrt(G)),
    "rloo_scale_factor": ((6,), lambda G: (G - 1) / G),
    "gradient_variance_inflation": ((8,), lambda G: 1 + 1 / (G - 1)),
    "minibatch_gradient_mse": ((32, 8, 0.3, 2.0, 5.0), lambda B, G, c1, c2, c3:
                               c1 / B + c2 / (B * G) + c3 / (B * G * (G - 1))),
    "optimal_group_size": ((0.2, 7.2), lambda c1, c3: 1 + math.sqrt(c3 / c1)),
    "pass_at_k": ((20, 3, 5), lambda n, c, k: 1 - math.comb(n - c, k) / math.comb(n, k)),
    "all_fail_probability": ((0.3, 5), lambda p, G: (1 - p) ** G),
    "all_pass_probability": ((0.3, 5), lambda p, G: p**G),
    "zero_variance_probability": ((0.3, 5), lambda p, G: p**G + (1 - p) ** G),
    "informative_probability": ((0.3, 5), lambda p, G: 1 - p**G - (1 - p) ** G),
    "any_success_probability": ((0.3, 5), lambda p, G: 1 - (1 - p) ** G),
    "expected_informative_prompts": ((0.3, 5, 40), lambda p, G, B: B * (1 - p**G - (1 - p)**G)),
    "bernoulli_variance": ((0.3,), lambda p: p * (1 - p)),
    "beta_all_pass_probability": ((6, 2.0, 3.0), lambda G, a, b: _beta(a + G, b) / _beta(a, b)),
    "beta_all_fail_probability": ((6, 2.0, 3.0), lambda G, a, b: _beta(a, b + G) / _beta(a, b)),
    "beta_zero_variance_probability": (
        (6, 2.0, 3.0), lambda G, a, b: (_beta(a + G, b) + _beta(a, b + G)) / _beta(a, b)),
    "empirical_zero_variance_probability": (
        ([0.1, 0.5, 0.9], 4), lambda ps, G: sum(p**G + (1 - p) ** G for p in ps) / len(ps)),
    "unbiased_zero_variance_estimate": (
        (7, 20, 4),
        lambda k, n, G: (math.comb(k, G) + math.comb(n - k, G)) / math.comb(n, G)),
    "sampling_cost": ((8, 4, 100, 300),
                      lambda B, G, Lp, Lc: float(B * G + 0 * Lp * Lc)),  # completions = BG
    "fixed_budget_prompts": ((1000, 16), lambda N, G: math.floor(N / G)),
    "dynamic_sampling_expected_groups": ((0.1, 16, 512),
                                         lambda p, G, B: B / (1 - p**G - (1 - p) ** G)),
    "dynamic_sampling_expected_completions": (
        (0.1, 16, 512), lambda p, G, B: G * B / (1 - p**G - (1 - p) ** G)),
    "dynamic_sampling_cap_probability": (
        (0.1, 4, 5, 8, 2),
        lambda p, G, B, b, k: sum(math.comb(k * b, j) * q**j * (1 - q) ** (k * b - j)
                                  for q in [1 - p**G - (1 - p) ** G] for j in range(B))),
    "dynamic_sampling_expected_batches": (
        (0.5, 4, 3, 2),
        lambda p, G, B, b: sum(sum(math.comb(k * b, j) * q**j * (1 - q) ** (k * b - j)
                                   for j in range(B))
                               for q in [1 - p**G - (1 - p) ** G] for k in range(200))),
    "binary_advantages": ((1, 4), lambda k, G: (1 - k / G) / (math.sqrt(
        G / (G - 1) * (k / G) * (1 - k / G)) + 1e-4)),
    "identical_group_probability": (([0.7, 0.2, 0.1], 3), lambda qs, G: sum(q**G for q in qs)),
}


def test_every_function_has_an_independent_formula_check():
    assert set(FORMULA_AS_CODE) == set(PUBLIC_FUNCTIONS)


@pytest.mark.parametrize("name", sorted(FORMULA_AS_CODE))
def test_formula_computes_what_the_function_computes(name):
    args, formula = FORMULA_AS_CODE[name]
    got = getattr(theory, name)(*[np.asarray(a) if isinstance(a, list) else a for a in args])
    if name == "sampling_cost":
        got = got.completions
        args = args
    elif name == "binary_advantages":
        got = got[0]
    assert float(np.asarray(got)) == pytest.approx(formula(*args), rel=1e-9, abs=1e-12)


def test_uniform_case_of_the_beta_formula_is_2_over_g_plus_1():
    for G in (1, 4, 16, 64):
        assert theory.beta_zero_variance_probability(G, 1.0, 1.0) == pytest.approx(2 / (G + 1))


def test_ddof_relation_matches_binary_advantages():
    for G in (2, 4, 16):
        a0 = theory.binary_advantages(1, G, ddof=0, eps=0.0)[0]
        a1 = theory.binary_advantages(1, G, ddof=1, eps=0.0)[0]
        assert a0 / a1 == pytest.approx(math.sqrt(G / (G - 1)))


# ------------------------------------------------------------------------------------------
# The generated pages
# ------------------------------------------------------------------------------------------
def test_pages_are_generated_from_the_registry():
    for rel, text in ((formulas.KEY_EQUATIONS_PATH, formulas.render_key_equations()),
                      (formulas.SHEET_PATH, formulas.render_sheet())):
        assert (ROOT / rel).read_text(encoding="utf-8") == text, (
            f"{rel} is stale: run `python -m grpolab.drill.formulas --write`")


def test_key_equations_page_lists_every_formula_with_its_function_and_chapter():
    text = formulas.render_key_equations()
    for f in FORMULAS:
        assert f"$$\n{f.latex}\n$$" in text
        assert f"{{doc}}`../{f.chapter}`" in text
        if f.function:
            assert f"`grpolab.theory.{f.function}`" in text
    assert text.count("$$\n") == 2 * len(FORMULAS)


def test_sheet_holds_the_sheet_formulas_recipes_and_five_wrong_answers():
    text = formulas.render_sheet()
    sheet = [f for f in FORMULAS if f.on_sheet]
    assert len(sheet) >= 12
    for f in sheet:
        assert f"$\\displaystyle {f.latex}$" in text
    for f in FORMULAS:
        if not f.on_sheet:
            assert f.latex not in text
    for r in RECIPES:
        assert f"| {r.name} | {r.G} |" in text
    section = text.split("## Five common wrong answers", 1)[1]
    assert section.count('\n| "') == 5
    assert 'class="grpolab-sheet"' in text
    for f in FORMULAS:
        assert "|" not in f.latex, "a | in LaTeX would split the sheet's table cell"


def test_recipes_agree_with_the_fact_sheet():
    by = {r.name: r for r in RECIPES}
    assert by["DeepSeekMath"].G == "64" and "inferred" in by["DeepSeekMath"].settings
    assert "§4.2" in by["DeepSeekMath"].source
    assert by["DeepSeek-R1-Zero"].G == "16" and "0.7" in by["DeepSeek-R1-Zero"].settings
    assert by["DAPO"].G == "16" and by["Dr. GRPO"].G == "8" and by["TRL GRPOTrainer"].G == "8"
