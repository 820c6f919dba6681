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
    "mean_baseline_gradient_mse": ((0.3, 0.05, 4),
                                   lambda m, s2, G: ((G - 1) / G) ** 2 * m + s2 / G**2),
    "std_scaled_gradient_factor": ((0.3, 4), lambda p, G: sum(
        math.comb(G, k) * p ** (k - 1) * (1 - p) ** (G - k - 1) * k * (G - k)
        / (G * G * (math.sqrt(G / (G - 1) * (k / G) * (1 - k / G)) + 1e-4))
        for k in range(1, G))),
    "expected_pass_at_k": (([0.1, 0.5, 0.0], 3),
                           lambda ps, k: sum(1 - (1 - p) ** k for p in ps) / len(ps)),
    "beta_pass_at_k": ((5, 0.5, 2.0), lambda k, a, b: 1 - _beta(a, b + k) / _beta(a, b)),
    "sharpened_pass_rate": ((0.3, 2.0, 0.5), lambda p, g, d: 1 / (1 + math.exp(
        -(g * math.log(p / (1 - p)) + d)))),
    "pass_at_k_crossing": (([0.5, 0.3, 0.02], [0.6, 0.4, 0.0]), lambda ps, qs: next(
        k for k in range(1, 10**4) if sum((1 - q) ** k for q in qs) >= sum((1 - p) ** k
                                                                           for p in ps))),
    "informative_per_completion": ((0.3, 5), lambda p, G: (1 - p**G - (1 - p) ** G) / G),
    "kl_k1": ((-0.4,), lambda x: -x),
    "kl_k2": ((-0.4,), lambda x: x * x / 2),
    "kl_k3": ((-0.4,), lambda x: (math.exp(x) - 1) - x),
    "categorical_kl": (([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]), lambda p, q: sum(
        a * math.log(a / b) for a, b in zip(p, q, strict=True))),
    "kl_estimator_moments": (([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]), lambda p, q: sum(
        a * 0.5 * math.log(b / a) ** 2 for a, b in zip(p, q, strict=True))),  # k2's mean
    "kl_penalty_gradient": (([0.2, -0.1, 0.4], [0.0, 0.3, 0.0]), lambda z, zr: (
        math.exp(z[0]) / sum(map(math.exp, z)) - math.exp(zr[0]) / sum(map(math.exp, zr)))),
    "entropy": (([0.5, 0.3, 0.2],), lambda p: -sum(a * math.log(a) for a in p)),
    "entropy_gradient": (([0.5, 0.3, 0.2],), lambda p: -p[0] * (math.log(p[0]) - sum(
        a * math.log(a) for a in p))),
    "entropy_change_first_order": (([0.5, 0.3, 0.2], [0.1, 0.0, -0.2]), lambda p, dz: -(
        sum(a * math.log(a) * d for a, d in zip(p, dz, strict=True))
        - sum(a * math.log(a) for a in p) * sum(a * d for a, d in zip(p, dz, strict=True)))),
    "entropy_hessian": (([0.5, 0.3, 0.2],), lambda p: (
        -p[0] * (1 - p[0]) * (math.log(p[0]) - sum(a * math.log(a) for a in p) + 1)
        + p[0] ** 2 * (math.log(p[0]) - sum(a * math.log(a) for a in p)))),
    "loo_gradient_covariance": (([0.5, 0.3, 0.2], [1.0, 0.0, 0.0], 4), None),
    "expected_entropy_change": (([0.5, 0.3, 0.2], [0.1, 0.0, -0.1], np.zeros((3, 3))),
                                None),
    "clip_ratio_ceiling": ((0.01, 0.28), lambda p, e: min(1.0, (1 + e) * p)),
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
    # ---- ch. 08–10 (one number from each: a component, an entry, or a scalar)
    "softmax_policy_gradient": (([0.0, math.log(3)], [1.0, 0.0]),       # π = (¼, ¾)
                                lambda z, r: 0.25 * (1.0 - 0.25)),       # π₀ (r₀ − π·r)
    "reinforce_second_moment": (([0.0, 0.0], [1.0, 0.0], 0.5, 0.1),
                                lambda z, r, b, v: 0.5 * ((1 - b) ** 2 + v) * 0.5
                                + 0.5 * ((0 - b) ** 2 + v) * 0.5),
    "optimal_constant_baseline": (([0.0, math.log(3)], [1.0, 0.0]), lambda z, r: 1 - 0.25),
    "gae_advantages": (([0.0, 1.0], [0.3, 0.6], 0.9, 0.5),
                       lambda r, v, g, l: (0.0 + g * 0.6 - 0.3) + g * l * (1.0 - 0.6)),
    "critic_budget_mse": ((0.1, 1.0, 1.0, 0.5, 64),
                          lambda c1, c2, c, e, N: (1 + c) * (1 + e) * (c1 + c2) / N),
    "group_budget_mse": ((8, 0.1, 1.0, 64),
                         lambda G, c1, c2, N: (c1 * G + c2 + (c2 + 2 * c1) / (G - 1)) / N),
    "loss_token_weights": (([3, 5], "grpo"), lambda L, t: 1 / (2 * 3)),
    "informative_share": (([0.1, 0.5], 4),
                          lambda ps, G: sum(1 - p**G - (1 - p) ** G for p in ps) / len(ps)),
    "sequence_importance_ratio": ((-0.6, 3), lambda s, n: math.exp(s / n)),
    "clipped_probability_bound": ((0.01, 0.28), lambda p, e: min(1.0, (1 + e) * p)),
    "soft_overlong_penalty": ((18000, 20480, 4096),
                              lambda L, Lm, c: (Lm - c - L) / c),
    "truncated_zero_variance_probability": (
        (0.5, 4, 0.2), lambda p, G, t: (p * (1 - t)) ** G + (1 - p * (1 - t)) ** G),
    "updates_per_rollout": ((512, 16, 512, 2), lambda B, G, M, mu: mu * B * G / M),
    "mean_policy_lag": ((16,), lambda U: (U - 1) / 2),
}


def test_every_function_has_an_independent_formula_check():
    assert set(FORMULA_AS_CODE) == set(PUBLIC_FUNCTIONS)


@pytest.mark.parametrize("name", sorted(FORMULA_AS_CODE))
def test_formula_computes_what_the_function_computes(name):
    args, formula = FORMULA_AS_CODE[name]
    got = getattr(theory, name)(*[np.asarray(a) if isinstance(a, list) else a for a in args])
    if formula is None:  # matrix and second-order forms: checked element by element below
        formula = MATRIX_FORMULAS[name]
    if name == "sampling_cost":
        got = got.completions
        args = args
    elif name in ("binary_advantages", "softmax_policy_gradient", "loss_token_weights"):
        got = got[0]
    elif name == "gae_advantages":
        got = got[0]
    elif name == "kl_estimator_moments":  # (mean, variance) of k3; the k2 mean is typed above
        got = theory.kl_estimator_moments(*args, estimator="k2")[0]
    elif name in ("kl_penalty_gradient", "entropy_gradient"):
        got = np.asarray(got)[0]
    elif name in ("entropy_hessian", "loo_gradient_covariance"):
        got = np.asarray(got)[0, 0]
    assert float(np.asarray(got)) == pytest.approx(formula(*args), rel=1e-9, abs=1e-12)


def _loo_covariance_00(p, r, G):
    """Cov(ĝ)[0, 0] by summing over every ordered group of G actions (exact enumeration)."""
    import itertools

    p, r = np.asarray(p, float), np.asarray(r, float)
    first, second = 0.0, 0.0
    for group in itertools.product(range(p.size), repeat=G):
        w = float(np.prod(p[list(group)]))
        rr = r[list(group)]
        adv = rr - (rr.sum() - rr) / (G - 1)
        g0 = sum(a * ((1.0 if x == 0 else 0.0) - p[0]) for a, x in zip(adv, group,
                                                                        strict=True)) / G
        first += w * g0
        second += w * g0 * g0
    return second - first**2


MATRIX_FORMULAS = {
    "loo_gradient_covariance": _loo_covariance_00,
    # zero covariance: the first-order change plus half the mean step's curvature
    "expected_entropy_change": lambda p, m, C: float(
        theory.entropy_change_first_order(p, m)
        + 0.5 * np.asarray(m) @ theory.entropy_hessian(p) @ np.asarray(m)),
}


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
