"""The formula registry: every closed form of :mod:`grpolab.theory`, once, as data.

Each :class:`Formula` maps a ``grpolab.theory`` function to its equation (LaTeX), a one-line
meaning, and the chapter that derives it. Two book pages are generated from it, so they
cannot disagree with each other or with the code:

- ``book/appendix/key-equations.md``: every equation on one page, each linked to its
  derivation and named by its function (Spinning Up's "key equations" page);
- ``book/interview/04-one-page-sheet.md``: the formulas a candidate should know cold
  (``on_sheet``), the recipes' G values with sources (:data:`RECIPES`, from the project's
  fact sheet of primary sources), and the five most common wrong answers (the drill's
  rubric file, ``rubrics.json``, items marked ``on_sheet``).

``python -m grpolab.drill.formulas --write`` regenerates both pages; tests/test_key_equations.py
checks that they are current, that every public function of ``grpolab.theory`` has an entry
whose "Derived in" chapter matches its docstring, and that each equation computes what the
function computes.

Derived in: book/appendix/key-equations.md (the page generated from this registry).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FORMULAS", "NOT_FORMULAS", "RECIPES", "Formula", "Recipe", "render_key_equations",
           "render_sheet", "write_pages"]

KEY_EQUATIONS_PATH = "book/appendix/key-equations.md"
SHEET_PATH = "book/interview/04-one-page-sheet.md"


@dataclass(frozen=True)
class Formula:
    """One closed form.

    Attributes:
        function: the ``grpolab.theory`` function that computes it (None for a relation
            that has no function of its own).
        title: a short name.
        latex: the equation, LaTeX without the ``$`` delimiters.
        meaning: one line: what it says and when it applies.
        chapter: the derivation's book page, as a docname (``theory/03-zero-variance``).
        section: the section of that page named in the function's "Derived in" line.
        on_sheet: a formula a candidate should know cold (printed on the one-page sheet).
        also: other public names of ``grpolab.theory`` this entry covers (a constant, the
            class a function returns).
    """

    function: str | None
    title: str
    latex: str
    meaning: str
    chapter: str
    section: str
    on_sheet: bool = False
    also: tuple[str, ...] = ()


F = Formula
_BV, _ZG, _COST, _DEG = ("theory/02-baseline-variance", "theory/03-zero-variance",
                         "theory/04-cost-of-g", "theory/05-degenerate-groups")

#: The registry, in reading order (grouped by chapter).
FORMULAS: tuple[Formula, ...] = (
    # -- the baseline and the gradient's noise --------------------------------------------
    F("baseline_variance", "Variance of the group-mean baseline",
      r"\mathrm{Var}(\bar r) = \frac{\sigma^2}{G}",
      "i.i.d. rewards of variance σ²: the group mean's noise falls like 1/G.",
      _BV, "The derivation", on_sheet=True),
    F("baseline_standard_error", "Standard error of the baseline",
      r"\mathrm{SE}(\bar r) = \frac{\sigma}{\sqrt G}",
      "Halving the baseline's standard error costs 4× the completions.",
      _BV, "The derivation", on_sheet=True),
    F("rloo_scale_factor", "GRPO's centring is scaled RLOO",
      r"r_i - \bar r = \frac{G-1}{G}\,\big(r_i - \bar r_{-i}\big)",
      "r̄ contains rᵢ, so centring on it shrinks the expected gradient by (G−1)/G "
      "(Dr. GRPO, App. A).",
      _BV, "Leave-one-out", on_sheet=True),
    F("gradient_variance_inflation", "Baseline-estimation inflation",
      r"\frac{\mathbb E\lVert g_i\rVert^2}{\mathbb E\lVert g_i^{\mathrm{oracle}}\rVert^2} \approx "
      r"1 + \frac{1}{G-1} = \frac{G}{G-1}",
      "A leave-one-out baseline adds σ²/(G−1)·E‖∇log π‖² to a completion's gradient second "
      "moment: ×2 at G = 2, ×1.14 at G = 8.",
      _BV, "How G enters the gradient's variance", on_sheet=True),
    F("minibatch_gradient_mse", "Minibatch gradient MSE",
      r"\mathrm{MSE}(B, G) = \frac{c_1}{B} + \frac{c_2}{BG} + \frac{c_3}{BG^2}",
      "B prompts × G completions (arXiv 2603.01162, Prop. 3). Per prompt, tr(Σ)/G + O(1/G²) "
      "(Thm 2): the 1/G term is the oracle-baseline variance; estimating the baseline costs "
      "only O(1/G²).",
      _BV, "The minibatch form and G*", on_sheet=True),
    F("optimal_group_size", "The fixed-budget optimum",
      r"G^* = \sqrt{c_3 / c_1}",
      "With N = B·G fixed, MSE = (c₁G + c₂ + c₃/G)/N is smallest at G*, whatever N is "
      "(arXiv 2603.01162, Thm 7).",
      _BV, "The minibatch form and G*", on_sheet=True),
    # -- zero-variance groups ----------------------------------------------------------------------
    F("all_fail_probability", "All fail",
      r"P(\text{all fail}) = (1-p)^G",
      "Every completion wrong: one half of the zero-variance probability.",
      _ZG, "The derivation"),
    F("all_pass_probability", "All pass",
      r"P(\text{all pass}) = p^G",
      "Every completion right: the other half.",
      _ZG, "The derivation"),
    F("zero_variance_probability", "Zero-variance (zero-variance) group",
      r"P(\text{zero var.}) = p^G + (1-p)^G",
      "0/1 rewards: all G equal, so every advantage is 0. p = 0.1: 65.6% at G = 4, 18.5% at "
      "G = 16.",
      _ZG, "The derivation", on_sheet=True),
    F("informative_probability", "Informative group",
      r"q = 1 - p^G - (1-p)^G",
      "At least one right and one wrong answer: the group carries signal.",
      _ZG, "The derivation", on_sheet=True),
    F("any_success_probability", "At least one success",
      r"P(\text{any success}) = 1 - (1-p)^G \approx 1 - e^{-pG}",
      "The exploration view of G: need G ≈ ln(1/(1−t))/p to see a success with "
      "probability t.",
      _ZG, "Hard prompts", on_sheet=True),
    F("expected_informative_prompts", "Informative prompts per batch",
      r"\mathbb E[\#\text{informative}] = B\,\big(1 - p^G - (1-p)^G\big)",
      "B prompts of pass rate p; at a fixed budget B = N/G, so it falls with G for small p.",
      _ZG, "Prompts that carry signal", on_sheet=True),
    F("bernoulli_variance", "Variance of a 0/1 reward",
      r"\sigma^2 = p(1-p) \le \tfrac14",
      "Largest at p = 1/2 (the golden zone); a rule keyed to a reward variance above 0.25 "
      "never fires on 0/1 rewards.",
      _ZG, "The golden zone", on_sheet=True, also=("BERNOULLI_VARIANCE_MAX",)),
    F("beta_all_pass_probability", "All pass, over a Beta prior",
      r"\mathbb E[p^G] = \frac{B(a+G,\,b)}{B(a,\,b)}",
      "p ~ Beta(a, b): a Beta moment.",
      _ZG, "Averaging over difficulty"),
    F("beta_all_fail_probability", "All fail, over a Beta prior",
      r"\mathbb E[(1-p)^G] = \frac{B(a,\,b+G)}{B(a,\,b)}",
      "The mirror image of the all-pass moment.",
      _ZG, "Averaging over difficulty"),
    F("beta_zero_variance_probability", "Zero-variance groups over a spread of difficulty",
      r"\mathbb E[p^G + (1-p)^G] = \frac{B(a+G,b) + B(a,b+G)}{B(a,b)}",
      "p ~ Beta(a, b); 2/(G+1) for a uniform p. Falls only like G^(−min(a, b)): easy and hard "
      "prompts keep zero variance however large G is.",
      _ZG, "Averaging over difficulty", on_sheet=True),
    F("empirical_zero_variance_probability", "Predicted zero-variance fraction of a dataset",
      r"\frac1N \sum_{j=1}^N \big[p_j^G + (1-p_j)^G\big]",
      "Log it next to the observed zero-std fraction (TRL's frac_reward_zero_std).",
      _ZG, "Averaging over difficulty", on_sheet=True),
    F("unbiased_zero_variance_estimate", "Unbiased estimate of the zero-variance probability",
      r"\widehat{P}(\text{zero var.}) = \frac{\binom{k}{G} + \binom{n-k}{G}}{\binom{n}{G}}",
      "From k successes in n ≥ G trials; plugging p̂ = k/n into p^G is biased upward.",
      "labs/01-g-sweep", "Zero-variance groups: theory next to measurement"),
    # -- cost -----------------------------------------------------------------------------
    F("sampling_cost", "Work of one sampling step",
      r"\text{completions} = BG,\quad \text{decode} = BG\,L_c,\quad \text{prefill} = B\,L_p",
      "Compute ∝ G at a fixed number of prompts. The prefill is B·L_p with the prompt's KV "
      "shared across the group (B·G·L_p without): sharing saves prefill, not decode.",
      _COST, "Sharing the prompt's KV cache", on_sheet=True, also=("SamplingCost",)),
    F("fixed_budget_prompts", "Prompts at a fixed budget",
      r"B = \left\lfloor N / G \right\rfloor",
      "A budget of N completions per step: a larger G means fewer prompts.",
      _COST, "A fixed budget", on_sheet=True),
    # -- dynamic sampling -----------------------------------------------------------------
    F("dynamic_sampling_expected_groups", "Groups dynamic sampling generates",
      r"\mathbb E[\text{groups}] = \frac{B}{q}",
      "Negative binomial: groups until B are informative (DAPO's filter, Eq. 11).",
      _DEG, "The cost of dynamic sampling"),
    F("dynamic_sampling_expected_completions", "Completions dynamic sampling generates",
      r"\mathbb E[\text{completions}] = \frac{G\,B}{q}",
      "p = 0.1, G = 16, B = 512: about 23% more than the 8,192 that reach the batch.",
      _DEG, "The cost of dynamic sampling", on_sheet=True),
    F("dynamic_sampling_cap_probability", "Hitting the resampling cap",
      r"P(\text{cap}) = P\big(\mathrm{Bin}(k\,b,\ q) < B\big)",
      "k generation batches of b groups still hold fewer than B informative groups "
      "(verl's max_num_gen_batches).",
      _DEG, "Hitting the cap"),
    F("dynamic_sampling_expected_batches", "Generation batches until full",
      r"\mathbb E[K] = \sum_{k \ge 0} P\big(\mathrm{Bin}(k\,b,\ q) \le B - 1\big)",
      "The expected number of generation batches of an uncapped dynamic sampler.",
      _DEG, "Hitting the cap"),
    # -- normalization --------------------------------------------------------------------
    F("binary_advantages", "Advantages with 0/1 rewards",
      r"A^{+} = \frac{1 - k/G}{s + \varepsilon},\ A^{-} = \frac{-k/G}{s + \varepsilon},\ "
      r"s^2 = \frac{G}{G-d}\,\frac kG\Big(1 - \frac kG\Big)",
      "k of G correct, d = ddof. TRL, verl and OpenRLHF use d = 1: G = 4, k = 1 gives 1.5 "
      "(1.73 with ddof = 0).",
      "theory/06-normalization", "Binary rewards in closed form", on_sheet=True),
    F(None, "ddof = 0 vs ddof = 1",
      r"\frac{A_{\mathrm{ddof}=0}}{A_{\mathrm{ddof}=1}} = \sqrt{\frac{G}{G-1}}",
      "np.std (ddof = 0) gives larger advantages than the frameworks' unbiased std: 1.15× at "
      "G = 4.",
      "theory/06-normalization", "eps and ddof conventions", on_sheet=True),
    # -- temperature ----------------------------------------------------------------------
    F("identical_group_probability", "A collapsed group",
      r"P(\text{all identical}) = \sum_j q_j^G \ \ge\ m^G",
      "m is the top answer's probability; at low temperature m → 1 and the group's rewards "
      "are constant.",
      "theory/07-temperature", "When a group collapses", on_sheet=True),
)


#: Public names of grpolab.theory that are not closed forms (the key-equations page skips them).
NOT_FORMULAS: dict[str, str] = {
    "MAX_GROUP_SIZE": "the largest G the functions accept (an argument check, not a formula)",
}


@dataclass(frozen=True)
class Recipe:
    """A published recipe's G, with the source it was read from."""

    name: str
    G: str
    settings: str
    source: str


#: The recipes' G values (facts from the project's primary-source fact sheet).
RECIPES: tuple[Recipe, ...] = (
    Recipe("DeepSeekMath", "64", "β = 0.04 (k3 KL in the loss), lr 1e-6, batch 1024; "
           "'16 questions × 64' is inferred from 1024/64, not printed; no ablation over G",
           "arXiv 2402.03300, §4.2"),
    Recipe("DeepSeek-R1-Zero", "16", "KL 0.001, temperature 1, 32 questions (512 outputs) per "
           "step; the second RL stage samples at temperature 0.7",
           "arXiv 2501.12948 (updated), Supp. §3.2.1"),
    Recipe("DAPO", "16", "512 prompts, ε_low 0.2 / ε_high 0.28, no KL, token-level loss, "
           "dynamic sampling", "arXiv 2503.14476, §4.1"),
    Recipe("Dr. GRPO", "8", "KL 0, clip 0.2, temperature 1.0", "arXiv 2503.20783, Table 6"),
    Recipe("RLOO (Back to Basics)", "k = 2, 4", "leave-one-out baseline (secondary source)",
           "arXiv 2402.14740"),
    Recipe("TRL GRPOTrainer", "8", "num_generations ≥ 2, divides the generation batch; beta "
           "0.0 since v0.19", "trl/trainer/grpo_config.py"),
    Recipe("verl", "1 (default), 5, 16", "rollout.n: 1 by default, 5 in most examples, 16 in "
           "the DAPO recipe", "verl/trainer/config/rollout/rollout.yaml"),
    Recipe("OpenRLHF", "1 (default)", "n_samples_per_prompt must be > 1 for group estimators",
           "OpenRLHF docs"),
)


# ------------------------------------------------------------------------------------------
# Page generation
# ------------------------------------------------------------------------------------------
def _chapter_short(chapter: str) -> str:
    """``theory/03-zero-variance`` -> ``ch. 3``; ``labs/01-g-sweep`` -> ``lab 1``."""
    part, _, stem = chapter.partition("/")
    number = stem.split("-", 1)[0]
    if not number.isdigit():
        return stem
    return f"{'ch.' if part == 'theory' else 'lab' if part == 'labs' else part} {int(number)}"


def _function_ref(f: Formula) -> str:
    return f"`grpolab.theory.{f.function}`" if f.function else "(a relation; no function)"


def _chapter_title(chapter: str) -> str:
    """The first ``# `` heading of a book page (for link texts and section headings)."""
    from grpolab._paths import checkout_root

    path = checkout_root() / "book" / f"{chapter}.md"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return chapter


_GENERATED = ("<!-- Generated by `python -m grpolab.drill.formulas --write` from the registry "
              "in\nsrc/grpolab/drill/formulas.py; edit the registry, not this file. -->\n")


def render_key_equations() -> str:
    """The MyST Markdown of book/appendix/key-equations.md."""
    parts = [f"{_GENERATED}\n(key-equations)=\n# Key equations\n\n"
             "Every closed form in this book on one page. Each equation names the "
             "`grpolab.theory` function that computes it and links to the chapter that "
             "derives it, step by step. The {doc}`one-page sheet "
             "<../interview/04-one-page-sheet>` prints the ones to know cold; both pages are "
             "generated from one registry (`grpolab.drill.formulas`).\n"]
    chapters = list(dict.fromkeys(f.chapter for f in FORMULAS))
    for chapter in chapters:
        parts.append(f"\n## {_chapter_title(chapter)}\n")
        for f in (f for f in FORMULAS if f.chapter == chapter):
            label = f"eq-{f.function or 'ddof-ratio'}".replace("_", "-")
            also = (f" Also: {', '.join(f'`grpolab.theory.{a}`' for a in f.also)}."
                    if f.also else "")
            parts.append(f"\n({label})=\n### {f.title}\n\n$$\n{f.latex}\n$$\n\n{f.meaning}\n\n"
                         f"*Function:* {_function_ref(f)}.{also} *Derived in:* "
                         f"{{doc}}`../{f.chapter}`, \"{f.section}\".\n")
    return "".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_sheet() -> str:
    """The MyST Markdown of book/interview/04-one-page-sheet.md.

    Printed (grpolab-exercises.css's print rules) it fits one A4 or Letter page, with the
    formulas in two columns and room for about 35 of them; on screen its tables fit the
    text column and turn into one block per row on a phone."""
    from grpolab.drill.rubrics import sheet_wrong_answers

    parts = [f"{_GENERATED}\n# One-page sheet\n\n"
             "```{raw} html\n<span class=\"grpolab-sheet\"></span>\n```\n\n"
             "The formulas to know cold, the G that published recipes used, and the five most "
             "common wrong answers. Print it: it fits one A4 or Letter page; "
             "derivations are in the chapters linked from the {doc}`key equations "
             "<../appendix/key-equations>`. Drill it with `grpolab drill`.\n",
             "\n## Formulas\n\n| Formula | What it says, and its `grpolab.theory` function |\n"
             "|---|---|\n"]
    for f in FORMULAS:
        if f.on_sheet:
            fn = f"`{f.function}`" if f.function else "a relation, no function"
            parts.append(f"| $\\displaystyle {_cell(f.latex)}$ | {_cell(f.meaning)} "
                         f"<span class=\"grpolab-sheet-fn\">{fn} ({{doc}}`"
                         f"{_chapter_short(f.chapter)} <../{f.chapter}>`)</span> |\n")
    parts.append("\n## The G that recipes used\n\n| Recipe | G | Settings | Source |\n"
                 "|---|---|---|---|\n")
    for r in RECIPES:
        parts.append(f"| {r.name} | {r.G} | {_cell(r.settings)} | {_cell(r.source)} |\n")
    parts.append("\nNone of these papers ablates G; at a fixed budget, studies that vary it "
                 "find small differences (ScaleRL, arXiv 2510.13786; arXiv 2603.01162).\n")
    parts.append("\n## Five common wrong answers\n\n| Wrong answer | Why it is wrong |\n"
                 "|---|---|\n")
    for item in sheet_wrong_answers():
        parts.append(f"| \"{_cell(item['trap'])}\" | {_cell(item['why_wrong'])} |\n")
    return "".join(parts)


def write_pages(root: str | os.PathLike | None = None) -> list[str]:
    """Write both generated pages under ``root`` (default: the checkout); return their paths."""
    from grpolab._paths import checkout_root

    base = Path(root) if root else checkout_root()
    written = []
    for rel, text in ((KEY_EQUATIONS_PATH, render_key_equations()),
                      (SHEET_PATH, render_sheet())):
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".md.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        written.append(str(target))
    return written


if __name__ == "__main__":  # python -m grpolab.drill.formulas --write
    import sys

    if sys.argv[1:] == ["--write"]:
        print("\n".join(write_pages()))
    else:
        sys.stdout.write(render_key_equations())
