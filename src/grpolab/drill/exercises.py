"""Exercises with checkers: ``grpolab.drill.exercises.check("zero-variance-p03-g4", 0.2482)``.

A registry of exercises of four kinds:

- ``derivation``: derive a closed form and hand in a Python function of it; the checker
  evaluates it on test inputs and compares with grpolab.theory;
- ``numeric``: a number, checked with a tolerance (``0.25``, ``"25%"`` and ``"1/4"`` all work);
- ``conceptual``: multiple choice, answered with a letter;
- ``code``: implement a function (e.g. group advantages); the checker calls it on test
  inputs and compares with grpolab's reference implementation.

Every checker says right or wrong and why. It recognizes the common mistakes (ddof = 0,
forgetting the all-pass term, the standard error instead of the variance, ...) and names
them; otherwise it gives a hint without giving the answer away. :func:`solution` shows
the worked solution.

Derived in: book/interview/02-exercises.md, which renders every exercise with its
solution behind a dropdown.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from grpolab import theory
from grpolab.advantages import group_advantages, zero_variance_groups
from grpolab.drill import slips
from grpolab.drill.answers import parse_answer

__all__ = [
    "KINDS",
    "CheckResult",
    "ChoiceChecker",
    "Exercise",
    "NumericChecker",
    "check",
    "checker_data",
    "checker_data_html",
    "get",
    "list_exercises",
    "solution",
]

KINDS = ("derivation", "numeric", "conceptual", "code")


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a checker: ``correct`` and a message that explains it.

    Truthy when correct; displays as Markdown in a notebook and as text in a terminal.
    """

    exercise_id: str
    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return f"{'RIGHT' if self.correct else 'WRONG'} [{self.exercise_id}]: {self.message}"

    def _repr_markdown_(self) -> str:
        mark = "✓ **Right.**" if self.correct else "✗ **Not yet.**"
        return f"{mark} {self.message}"


Checker = Callable[[object], tuple[bool, str]]


@dataclass(frozen=True)
class Exercise:
    """One exercise.

    Attributes:
        id: stable identifier passed to :func:`check`.
        kind: one of :data:`KINDS`.
        title: a short name.
        question: the task (Markdown, may contain $math$).
        solution: the worked solution (Markdown).
        answer: an answer the checker accepts (a number, a letter, or a function).
        wrong_answer: a common wrong answer the checker rejects (and explains).
        checker: ``answer -> (correct, message)``.
        topic: the theory topic it drills (zero-variance, baseline-variance, ...).
        choices: for conceptual exercises, letter -> option text.
        func_name: for derivation and code exercises, the name the question asks for.
    """

    id: str
    kind: str
    title: str
    question: str
    solution: str
    answer: object
    wrong_answer: object
    checker: Checker = field(repr=False)
    topic: str = ""
    choices: dict[str, str] | None = None
    func_name: str = "f"


# ------------------------------------------------------------------------------------------
# Checker factories
# ------------------------------------------------------------------------------------------
def _as_number(answer) -> float:
    if isinstance(answer, bool):
        raise ValueError("answer must be a number, got a bool")
    if isinstance(answer, str):
        return parse_answer(answer)
    try:
        value = float(np.asarray(answer, dtype=float).reshape(()))
    except (TypeError, ValueError):
        raise ValueError(f"answer must be a single number, got {answer!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"answer must be a finite number, got {value!r}")
    return value


@dataclass(frozen=True)
class NumericChecker:
    """Checker for a number within max(abs_, rel·|reference|) of ``reference``.

    ``mistakes`` pairs a common wrong value with what went wrong; a wrong answer within
    tolerance of one of them is told exactly that. A plain dataclass (not a closure) so that
    :func:`checker_data` can hand the very same tolerance and texts to the static page's
    JavaScript checker (grpolab-exercises.js).
    """

    reference: float
    rel: float
    abs_: float
    why: str
    hint: str
    mistakes: tuple[tuple[float, str], ...] = ()

    @property
    def tolerance(self) -> float:
        """The accepted distance from the reference."""
        return max(self.abs_, self.rel * abs(self.reference))

    def __call__(self, answer) -> tuple[bool, str]:
        try:
            x = _as_number(answer)
        except ValueError as exc:
            return False, f"{exc}."
        tol = self.tolerance
        if abs(x - self.reference) <= tol + 1e-12:
            return True, self.why
        for value, explanation in self.mistakes:
            if abs(x - value) <= max(self.abs_, self.rel * abs(value)) + 1e-12:
                return False, explanation
        return False, f"{x:g} is not within the tolerance (±{tol:.2g}). Hint: {self.hint}"


def numeric(reference: float, *, rel: float = 0.005, abs_: float = 0.0, why: str,
            hint: str, mistakes: Sequence[tuple[float, str]] = ()) -> NumericChecker:
    """Checker for a number within max(abs_, rel·|reference|) of ``reference``."""
    return NumericChecker(float(reference), float(rel), float(abs_), why, hint,
                          tuple((float(v), e) for v, e in mistakes))


_LETTER = re.compile(r"^\(?([a-z])\)?(?:$|[\s.:)])")


@dataclass(frozen=True)
class ChoiceChecker:
    """Checker for a multiple-choice answer; every option's explanation says why."""

    correct: str
    explanations: dict[str, str]

    def __call__(self, answer) -> tuple[bool, str]:
        m = _LETTER.match(str(answer).strip().lower())
        letter = m.group(1) if m else ""
        if letter not in self.explanations:
            return False, (f"answer with one of the letters "
                           f"{', '.join(sorted(self.explanations))}.")
        return letter == self.correct, self.explanations[letter]


def choice(correct: str, explanations: dict[str, str]) -> ChoiceChecker:
    """Checker for a multiple-choice answer; every option's explanation says why."""
    return ChoiceChecker(correct, dict(explanations))


def _copied(args: tuple) -> tuple:
    """Copies, so a user function that edits its input in place cannot spoil later checks."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _raw_call(fn, args):
    # Warnings (0/0 in a constant group) are reported through the message instead.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*_copied(args))


def _as_array(out) -> np.ndarray:
    return np.asarray(out, dtype=float if not isinstance(out, np.ndarray) or
                      out.dtype != bool else bool)


def _call(fn, args) -> np.ndarray:
    return _as_array(_raw_call(fn, args))


def function(reference: Callable, inputs: Sequence[tuple], *, rtol: float = 1e-6,
             atol: float = 1e-9, why: str, mistakes: Sequence[tuple[Callable, str]] = (),
             what: str = "your function") -> Checker:
    """Checker for a user function: call it on every input, compare with ``reference``.

    The first input where it differs is reported with the expected and the returned
    value; if a known wrong function gives the same output there, its explanation is
    added. Exceptions raised by the user's function are reported, not propagated.
    """

    def check_function(fn) -> tuple[bool, str]:
        if not callable(fn):
            return False, f"hand in a function (a callable), got {type(fn).__name__}."
        for args in inputs:
            expected = _call(reference, args)
            shown = ", ".join(_short(a) for a in args)
            try:
                raw = _raw_call(fn, args)
                if raw is None:
                    return False, f"{what} returned None: it has no result yet."
                got = _as_array(raw)
            except Exception as exc:  # noqa: BLE001 - report any failure of user code
                return False, f"{what} raised {type(exc).__name__}: {exc} on input ({shown})."
            if got.shape != expected.shape:
                return False, (f"on input ({shown}) {what} returned shape {got.shape}, "
                               f"expected {expected.shape}.")
            same = (np.array_equal(got, expected) if expected.dtype == bool else
                    bool(np.all(np.isfinite(got))) and np.allclose(got, expected, rtol=rtol,
                                                                   atol=atol))
            if same:
                continue
            msg = (f"on input ({shown}) {what} returned {_short(got)}, expected "
                   f"{_short(expected)}.")
            for wrong, explanation in mistakes:
                try:
                    w = _call(wrong, args)
                except Exception:  # noqa: BLE001, S112 - a mistake model may not apply
                    continue
                if w.shape == got.shape and (
                    np.array_equal(w, got) if w.dtype == bool else
                    np.allclose(w, got, rtol=1e-6, atol=1e-9, equal_nan=True)
                ):
                    return False, f"{msg} {explanation}"
            if not np.all(np.isfinite(got)) and got.dtype != bool:
                msg += " It contains NaN or inf: guard the division when a group is constant."
            return False, msg
        return True, why

    return check_function


def _short(x) -> str:
    a = np.asarray(x)
    if a.ndim == 0:
        return f"{a.item():.6g}" if a.dtype.kind == "f" else str(a.item())
    flat = a.ravel()
    body = ", ".join(f"{v:.4g}" if a.dtype.kind == "f" else str(v) for v in flat[:8])
    return f"[{body}{', ...' if flat.size > 8 else ''}]"


# ------------------------------------------------------------------------------------------
# Reference functions and test inputs
# ------------------------------------------------------------------------------------------
def _min_g_reference(p: float, target: float) -> int:
    G = 1
    while theory.any_success_probability(p, G) < target:
        G += 1
    return G


_RNG = np.random.default_rng(7)
_ADV_INPUTS: list[tuple] = [
    (np.array([1.0, 0.0, 0.0, 0.0]), 4),
    (np.array([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]), 4),            # a constant group
    (np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]), 8),            # all fail
    (np.array([0.0, 1.0, 1.0, 1.0, 0.5, 0.2]), 2),
    (_RNG.integers(0, 2, 64).astype(float), 8),
    (np.round(_RNG.random(48), 3), 6),
]
_MASK_INPUTS: list[tuple] = [
    (np.array([0.1 + 0.2, 0.3, 0.3, 0.3, 1.0, 0.0, 1.0, 1.0]), 4),      # rounding residue
    (np.array([0.5, 0.501, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0]), 4),          # a real 1e-3 gap
    (_RNG.integers(0, 2, 40).astype(float), 5),
]
_P_G_INPUTS = [(0.1, 4), (0.3, 4), (0.5, 2), (0.0, 5), (1.0, 3), (0.25, 1), (0.9, 16),
               (0.01, 200), (0.5, 64)]


def _ddof0_advantages(r, G):
    g = np.asarray(r, dtype=float).reshape(-1, G)
    return ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-4)).ravel()


def _no_eps_advantages(r, G):
    g = np.asarray(r, dtype=float).reshape(-1, G)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((g - g.mean(1, keepdims=True)) / g.std(1, ddof=1, keepdims=True)).ravel()


def _exact_zero_std_mask(r, G):
    return np.asarray(r, dtype=float).reshape(-1, G).std(1) == 0


# ------------------------------------------------------------------------------------------
# The registry
# ------------------------------------------------------------------------------------------
def _build() -> dict[str, Exercise]:
    ex: list[Exercise] = []

    # -- derivations --------------------------------------------------------------------
    ex.append(Exercise(
        "derive-baseline-variance", "derivation", "Variance of the group-mean baseline",
        "Rewards $r_1,\\dots,r_G$ are i.i.d. with variance $\\sigma^2$. Derive "
        "$\\mathrm{Var}(\\bar r)$ for the group mean $\\bar r = \\frac1G\\sum_i r_i$. Hand in "
        "`f(sigma2, G)`.",
        "$\\mathrm{Var}(\\bar r) = \\frac{1}{G^2}\\sum_i \\mathrm{Var}(r_i) = \\sigma^2/G$: the "
        "covariances vanish by independence. The standard error is $\\sigma/\\sqrt G$, so "
        "halving it costs 4× the completions. `f = lambda sigma2, G: sigma2 / G`.",
        answer=lambda s2, G: s2 / G,
        wrong_answer=lambda s2, G: s2 / math.sqrt(G),
        checker=function(theory.baseline_variance, [(0.25, 1), (0.25, 4), (0.09, 16), (2.0, 7)],
                         why="Var(mean) = σ²/G: independent terms add their variances, and the "
                         "1/G factor is squared.",
                         mistakes=[(lambda s2, G: s2 / math.sqrt(G),
                                    "σ²/√G mixes up the variance with the standard error σ/√G.")]),
        topic="baseline-variance"))
    ex.append(Exercise(
        "derive-uniform-zero-variance", "derivation",
        "Zero-variance groups under a uniform difficulty",
        "Prompt pass rates are spread uniformly, $p\\sim\\mathrm{Uniform}(0,1)$. Derive the "
        "expected zero-variance probability $\\mathbb E_p[p^G + (1-p)^G]$ as a function of "
        "$G$. Hand in `f(G)`.",
        "$\\int_0^1 p^G\\,dp = \\frac{1}{G+1}$ and by symmetry the same for $(1-p)^G$, so the "
        "answer is $\\frac{2}{G+1}$: it falls like $1/G$, much slower than $2\\cdot 0.5^G$ "
        "at the average pass rate. Easy and hard prompts keep groups at zero variance however "
        "large $G$ is (the Beta(1, 1) case of `theory.beta_zero_variance_probability`).",
        answer=lambda G: 2 / (G + 1),
        wrong_answer=lambda G: 2 * 0.5 ** G,
        checker=function(lambda G: theory.beta_zero_variance_probability(G, 1.0, 1.0),
                         [(1,), (2,), (4,), (8,), (64,)],
                         why="E[p^G + (1−p)^G] = 2/(G+1) for a uniform p: zero-variance groups "
                         "fall "
                         "like 1/G, not exponentially.",
                         mistakes=[(lambda G: 2 * 0.5 ** G,
                                    "2·0.5^G plugs in the average pass rate; but E[f(p)] ≠ "
                                    "f(E[p]) for the convex p^G (Jensen), and the easy and hard "
                                    "prompts dominate.")]),
        topic="zero-variance"))
    ex.append(Exercise(
        "derive-rloo-factor", "derivation", "GRPO's centring is scaled RLOO",
        "Show that $r_i - \\bar r = c\\,(r_i - \\bar r_{-i})$ where $\\bar r_{-i}$ is the mean "
        "of the other $G-1$ rewards, and find $c$. Hand in `f(G)`.",
        "$\\bar r_{-i} = \\frac{G\\bar r - r_i}{G-1}$, so $r_i - \\bar r_{-i} = "
        "\\frac{G(r_i-\\bar r)}{G-1}$ and $c = \\frac{G-1}{G}$ (Dr. GRPO, arXiv 2503.20783, "
        "App. A). A constant factor can be folded into the learning rate, unless each group "
        "is then divided by its own std.",
        answer=lambda G: (G - 1) / G,
        wrong_answer=lambda G: G / (G - 1),
        checker=function(theory.rloo_scale_factor, [(2,), (4,), (8,), (64,)],
                         why="c = (G−1)/G: the centred reward is the RLOO advantage shrunk by "
                         "(G−1)/G.",
                         mistakes=[(lambda G: G / (G - 1),
                                    "G/(G−1) is the inverse: RLOO's advantage is the "
                                    "larger one.")]),
        topic="baseline-variance"))
    ex.append(Exercise(
        "derive-ddof-ratio", "derivation", "ddof = 0 vs ddof = 1",
        "Std-normalized advantages, eps ignored. Derive the factor by which an advantage "
        "computed with `np.std` (ddof = 0) exceeds one computed with the unbiased std "
        "(ddof = 1, as in TRL, verl and OpenRLHF). Hand in `f(G)`.",
        "$s_0^2 = \\frac1G\\sum(r_i-\\bar r)^2$ and $s_1^2 = \\frac{1}{G-1}\\sum(r_i-\\bar r)^2$, "
        "so $s_0 = s_1\\sqrt{(G-1)/G}$ and the ddof = 0 advantage is larger by "
        "$\\sqrt{G/(G-1)}$: 1.41 at G = 2, 1.15 at G = 4, 1.03 at G = 16.",
        answer=lambda G: math.sqrt(G / (G - 1)),
        wrong_answer=lambda G: G / (G - 1),
        checker=function(lambda G: math.sqrt(G / (G - 1)), [(2,), (4,), (16,), (100,)],
                         why="The ratio is √(G/(G−1)): the two stds differ by the square root "
                         "of the ratio of their denominators.",
                         mistakes=[(lambda G: G / (G - 1),
                                    "G/(G−1) is the ratio of the variances; the std is its "
                                    "square root.")]),
        topic="normalization"))
    ex.append(Exercise(
        "derive-min-group-any-success", "derivation", "How large must G be to see one success?",
        "A prompt has pass rate $p$. Derive the smallest $G$ for which at least one of the $G$ "
        "completions is correct with probability $\\ge t$. Hand in `f(p, t)` returning an "
        "integer.",
        "$1-(1-p)^G \\ge t \\iff G \\ge \\frac{\\ln(1-t)}{\\ln(1-p)}$, so "
        "$G = \\lceil \\ln(1-t)/\\ln(1-p) \\rceil$. For $p = 0.05$, $t = 0.9$: "
        "$\\lceil 44.9\\rceil = 45$. Rule of thumb: $G \\approx \\ln\\frac{1}{1-t}/p$.",
        answer=lambda p, t: math.ceil(math.log(1 - t) / math.log(1 - p)),
        wrong_answer=lambda p, t: round(t / p),
        checker=function(_min_g_reference, [(0.05, 0.9), (0.1, 0.5), (0.2, 0.99), (0.01, 0.95),
                                            (0.3, 0.8)],
                         why="G = ⌈ln(1−t)/ln(1−p)⌉, from 1 − (1−p)^G ≥ t.",
                         mistakes=[(lambda p, t: round(t / p),
                                    "t/p treats the G tries as if their success chances "
                                    "added up; they compound: P(no success) = (1−p)^G.")]),
        topic="zero-variance"))
    ex.append(Exercise(
        "derive-dynamic-sampling-cost", "derivation", "The cost of dynamic sampling",
        "DAPO's dynamic sampling discards groups whose rewards are all equal and samples more "
        "until $B$ informative groups are collected. Every prompt has pass rate $p$. Derive "
        "the expected number of completions generated. Hand in `f(p, G, B)`.",
        "A group is informative with probability $q = 1 - p^G - (1-p)^G$, independently. "
        "The number of groups until the $B$-th success is negative binomial with mean $B/q$, "
        "so the expected completions are $G\\,B/q$.",
        answer=lambda p, G, B: G * B / (1 - p ** G - (1 - p) ** G),
        wrong_answer=lambda p, G, B: G * B / (1 - (1 - p) ** G),
        checker=function(theory.dynamic_sampling_expected_completions,
                         [(0.1, 16, 512), (0.5, 4, 64), (0.9, 8, 128), (0.3, 2, 10)], rtol=1e-6,
                         why="E[completions] = G·B/q with q = 1 − p^G − (1−p)^G (negative "
                         "binomial mean B/q groups).",
                         mistakes=[(lambda p, G, B: G * B / (1 - (1 - p) ** G),
                                    "That forgets the all-pass groups: q = 1 − p^G − (1−p)^G, "
                                    "not 1 − (1−p)^G."),
                                   (lambda p, G, B: G * B,
                                    "G·B ignores the discarded groups: each group survives "
                                    "only with probability q.")]),
        topic="degenerate-groups"))

    # -- numeric ------------------------------------------------------------------------
    ref = theory.zero_variance_probability(0.3, 4)
    ex.append(Exercise(
        "zero-variance-p03-g4", "numeric", "A zero-variance group at p = 0.3, G = 4",
        "Binary rewards, pass rate $p = 0.3$, $G = 4$. What is the probability that the group "
        "gives no gradient? (4 decimals)",
        "$0.3^4 + 0.7^4 = 0.0081 + 0.2401 = 0.2482$.",
        answer=round(ref, 4), wrong_answer=0.2401,
        checker=numeric(ref, abs_=6e-4,
                        why="p^G + (1−p)^G = 0.0081 + 0.2401 = 0.2482: all fail or all pass.",
                        hint="a group has zero variance if all G rewards are equal: all 0 or all "
                             "1.",
                        mistakes=slips.mistakes(slips.zero_variance(0.3, 4))),
        topic="zero-variance"))
    ref = float(theory.binary_advantages(1, 4, ddof=1, eps=1e-4)[0])
    ex.append(Exercise(
        "binary-advantage-g4-k1", "numeric", "One correct out of four",
        "$G = 4$, one completion correct (reward 1), three wrong (0). With TRL's defaults "
        "(std with ddof = 1, eps = 1e-4), what is the correct completion's advantage?",
        "mean = 0.25; unbiased std = $\\sqrt{\\frac{4}{3}\\cdot 0.25\\cdot 0.75} = 0.5$; "
        "$A = 0.75/(0.5 + 10^{-4}) \\approx 1.4997$. With `np.std` (ddof = 0) it would be "
        "$0.75/0.433 = 1.73$ (references: TRL, verl and OpenRLHF use ddof = 1).",
        answer=round(ref, 4), wrong_answer=1.732,
        checker=numeric(ref, rel=0.003,
                        why="A = (1 − 0.25)/(0.5 + 1e-4) ≈ 1.4997 with the unbiased std 0.5.",
                        hint="compute the mean k/G, then the std with G − 1 in the denominator.",
                        mistakes=slips.mistakes(slips.advantage(1, 4, ddof=1, correct=True))),
        topic="normalization"))
    ex.append(Exercise(
        "bernoulli-max-variance", "numeric", "The largest variance of a 0/1 reward",
        "What is the largest possible variance of a reward that is 0 or 1?",
        "$\\mathrm{Var} = p(1-p)$, maximal at $p = 1/2$: $0.25$. So a rule that fires when the "
        "reward variance exceeds 0.8 never fires on binary rewards.",
        answer=0.25, wrong_answer=0.5,
        checker=numeric(theory.BERNOULLI_VARIANCE_MAX, abs_=1e-3,
                        why="p(1−p) ≤ 1/4, reached at p = 1/2.",
                        hint="write the variance as a function of p and maximize it.",
                        mistakes=[(0.5, "0.5 is the largest standard deviation, not variance."),
                                  (1.0, "1 is the range of the reward; the variance is p(1−p).")]),
        topic="zero-variance"))
    ref = theory.expected_informative_prompts(0.1, 4, theory.fixed_budget_prompts(512, 4))
    ex.append(Exercise(
        "budget-informative-p01-g4", "numeric", "Informative groups at a fixed budget",
        "A budget of 512 completions per step, $G = 4$, every prompt has pass rate "
        "$p = 0.1$. How many groups per step carry signal, on average?",
        "$B = 512/4 = 128$ prompts; each is informative with "
        "$q = 1 - 0.1^4 - 0.9^4 = 0.3438$; $128 \\times 0.3438 = 44.0$. (At $G = 16$: "
        "$32 \\times (1 - 0.9^{16}) \\approx 26.1$ groups, but each with a better baseline "
        "and more chances to find a success.)",
        answer=round(ref, 1), wrong_answer=176.0,
        checker=numeric(ref, rel=0.01,
                        why="B·q = 128 × 0.3438 ≈ 44.0.",
                        hint="first the number of prompts B = budget/G, then "
                        "B·(1 − p^G − (1−p)^G).",
                        mistakes=slips.mistakes(slips.budget_informative(512, 4, 0.1))),
        topic="cost-of-g"))
    ref = theory.dynamic_sampling_expected_completions(0.1, 16, 512)
    ex.append(Exercise(
        "dynamic-sampling-p01-g16", "numeric", "Filling a DAPO batch",
        "DAPO-sized batch: 512 informative groups of $G = 16$. Every prompt has pass rate "
        "$p = 0.1$. How many completions does dynamic sampling generate on average?",
        "$q = 1 - 0.1^{16} - 0.9^{16} = 0.8147$; groups $= 512/q = 628.5$; completions "
        "$= 16 \\times 628.5 \\approx 10{,}055$, about 23% more than the 8,192 that end up "
        "in the batch.",
        answer=round(ref), wrong_answer=8192,
        checker=numeric(ref, rel=0.005,
                        why="G·B/q = 16 × 512 / 0.8147 ≈ 10,055.",
                        hint="each group survives the filter with probability "
                        "q = 1 − p^G − (1−p)^G.",
                        mistakes=slips.mistakes(slips.dynamic_sampling(0.1, 16, 512))),
        topic="degenerate-groups"))

    # -- conceptual ---------------------------------------------------------------------
    ex.append(Exercise(
        "card-vllm-multiple-of-8", "conceptual", "vLLM and multiples of 8",
        "A card says G = 8 or 16 'packs perfectly' because vLLM is fastest at batch sizes that "
        "are multiples of 8. Which batch does vLLM's CUDA-graph padding round up?",
        "(b). vLLM captures CUDA graphs for decode batch sizes 1, 2, 4 and then multiples "
        "of 8, and pads the number of running sequences up to the next captured size. In "
        "GRPO rollout that number is (prompts in flight) × G, not G, so G alone does not "
        "decide the padding (see the claim audit and the sources appendix).",
        answer="b", wrong_answer="a",
        choices={"a": "the group size G", "b": "the number of sequences decoded together "
                 "(prompts × G in flight)", "c": "the prompt length",
                 "d": "the number of GPUs"},
        checker=choice("b", {
            "a": "No: the engine sees sequences, not groups; a group of 16 is just 16 of the "
                 "running sequences.",
            "b": "Right: the decode batch is the number of running sequences, prompts × G.",
            "c": "No: padding to a captured CUDA-graph size concerns the batch dimension.",
            "d": "No: the CUDA-graph sizes are per engine instance and count sequences."}),
        topic="cost-of-g"))
    ex.append(Exercise(
        "card-variance-rule", "conceptual", "'Double G when the reward variance exceeds 0.8'",
        "A card recommends: double G if the recent reward variance is > 0.8, halve it if "
        "< 0.2. What does this rule do with 0/1 rewards?",
        "(c). A 0/1 reward has variance $p(1-p) \\le 0.25$, so the 'double' branch can never "
        "fire, and the 'halve' branch fires whenever $p < 0.28$ or $p > 0.72$, i.e. on the "
        "hard prompts where a larger G would help most. No source for the claimed 20–30% "
        "saving was found (see the claim audit).",
        answer="c", wrong_answer="a",
        choices={"a": "it doubles G on hard prompts", "b": "it keeps G fixed",
                 "c": "it can only halve G: the variance never exceeds 0.25",
                 "d": "it saves 20–30% compute, as shown in DAPO"},
        checker=choice("c", {
            "a": "No: doubling needs variance > 0.8, impossible for p(1−p) ≤ 0.25.",
            "b": "No: the 'halve' branch fires whenever p(1−p) < 0.2, i.e. p < 0.28 or p > 0.72.",
            "c": "Right: p(1−p) ≤ 1/4 < 0.8, so only halving is reachable.",
            "d": "No: no source for that saving was found; DAPO does not use this rule."}),
        topic="zero-variance"))
    ex.append(Exercise(
        "card-length-bias", "conceptual", "Where GRPO's length bias comes from",
        "A card claims a larger G amplifies a reward model's length bias. What does Dr. GRPO "
        "(arXiv 2503.20783) identify as the source of GRPO's length bias?",
        "(b). Dr. GRPO §3.1 blames the per-sequence $1/|o_i|$ normalization of the loss "
        "(and the std division for the difficulty bias), not G. No source for 'larger G "
        "amplifies length bias' was found.",
        answer="b", wrong_answer="a",
        choices={"a": "a large group size G", "b": "the 1/|o_i| per-response length "
                 "normalization in the loss", "c": "the KL penalty", "d": "the clipping range"},
        checker=choice("b", {
            "a": "No source supports this; Dr. GRPO does not name G.",
            "b": "Right: dividing each response's loss by its own length favours long wrong "
                 "answers and short right ones (Dr. GRPO §3.1).",
            "c": "No: Dr. GRPO even sets the KL coefficient to 0.",
            "d": "No: clipping is not what Dr. GRPO identifies."}),
        topic="normalization"))
    ex.append(Exercise(
        "card-deepseekmath-g", "conceptual", "What G did DeepSeekMath use?",
        "A card says 'G ∈ [8, 16] is the standard in DeepSeekMath and DeepSeek-R1'. What did "
        "DeepSeekMath's GRPO actually use?",
        "(d). DeepSeekMath (arXiv 2402.03300, §4.2) sampled 64 outputs per question; "
        "DeepSeek-R1-Zero used 16. The card is half true.",
        answer="d", wrong_answer="b",
        choices={"a": "4", "b": "8", "c": "16", "d": "64"},
        checker=choice("d", {
            "a": "No: 4 is not used in either paper.",
            "b": "No: 8 is TRL's default num_generations and Dr. GRPO's choice.",
            "c": "No: 16 is DeepSeek-R1(-Zero)'s and DAPO's value.",
            "d": "Right: 64 outputs per question (DeepSeekMath §4.2)."}),
        topic="cost-of-g"))
    ex.append(Exercise(
        "std-amplifies-small-differences", "conceptual", "Std normalization and fine rewards",
        "A group's continuous rewards are 0.900, 0.902, 0.905, 0.901 (differences at the "
        "level of reward-model noise). What does GRPO's std normalization do to them?",
        "(a). Dividing by the group std (≈ 0.002) turns differences of a few thousandths into "
        "advantages of order ±1, as large as the signal from a 0-vs-1 group: noise is "
        "amplified. Mean-only scaling (Dr. GRPO) keeps them small.",
        answer="a", wrong_answer="c",
        choices={"a": "it rescales them to advantages of order 1, amplifying tiny "
                 "(possibly noisy) differences", "b": "it leaves them tiny",
                 "c": "it sets them all to 0", "d": "it makes them NaN"},
        checker=choice("a", {
            "a": "Right: (r − mean)/std has unit scale whatever the spread of r.",
            "b": "No: that is what mean-only scaling does, not std normalization.",
            "c": "No: only exactly constant groups (within tolerance) give 0.",
            "d": "No: eps keeps the division finite; the std here is small but not 0."}),
        topic="normalization"))
    ex.append(Exercise(
        "zero-variance-in-trl", "conceptual", "Zero-variance groups in TRL",
        "In TRL's GRPOTrainer with `loss_type=\"dapo\"`, what happens to a group whose "
        "rewards are all equal?",
        "(b). Its advantages are 0, the tokens still count in the loss's denominator (which "
        "dilutes the step), and TRL logs `frac_reward_zero_std`. TRL has no dynamic "
        "sampling (trl#3708 is open); verl's DAPO recipe filters and resamples; OpenRLHF "
        "filters by group mean in (0, 1) (see the claim audit).",
        answer="b", wrong_answer="a",
        choices={"a": "it is dropped and resampled, as in DAPO", "b": "its advantages are 0 "
                 "but its tokens still count in the loss denominator",
                 "c": "training stops with an error", "d": "its advantages become ±1/eps"},
        checker=choice("b", {
            "a": "No: that is verl's DAPO recipe (filter_groups); TRL has no dynamic sampling.",
            "b": "Right: zero advantage, tokens still in the denominator, logged as "
                 "frac_reward_zero_std.",
            "c": "No: a zero-variance group is normal and silently contributes nothing.",
            "d": "No: the numerator r − mean is 0 too, so the advantage is 0, not large "
                 "(unless float residue makes it tiny but non-zero)."}),
        topic="degenerate-groups"))

    # -- code ---------------------------------------------------------------------------
    ex.append(Exercise(
        "implement-group-advantages", "code", "Implement group advantages",
        "Write `advantages(rewards, G)`: `rewards` is a flat numpy array, prompt-major (the G "
        "completions of prompt 0, then prompt 1, ...). Return $(r_i - \\bar r)/(s + 10^{-4})$ "
        "per group with the unbiased std $s$ (ddof = 1), as TRL does.",
        "```python\ndef advantages(rewards, G):\n"
        "    g = np.asarray(rewards, float).reshape(-1, G)\n"
        "    std = g.std(axis=1, ddof=1, keepdims=True)\n"
        "    return ((g - g.mean(axis=1, keepdims=True)) / (std + 1e-4)).ravel()\n```\n"
        "A constant group gives 0/(0 + 1e-4) = 0: eps prevents NaN. The reference is "
        "`grpolab.advantages.group_advantages(rewards, G)`.",
        answer=lambda r, G: group_advantages(r, G),
        wrong_answer=_ddof0_advantages,
        checker=function(lambda r, G: group_advantages(r, G), _ADV_INPUTS, rtol=1e-5, atol=1e-6,
                         why="Matches grpolab.advantages.group_advantages (TRL's defaults) on "
                         "every test input, including constant groups.",
                         mistakes=[(_ddof0_advantages,
                                    "That is np.std with ddof = 0; TRL, verl and OpenRLHF use "
                                    "the unbiased std (ddof = 1). Pass ddof=1."),
                                   (_no_eps_advantages,
                                    "Add eps = 1e-4 to the std, as TRL does: it shifts the "
                                    "values slightly and keeps a constant group from giving "
                                    "0/0 = NaN."),
                                   (lambda r, G: (np.asarray(r, float).reshape(-1, G) -
                                                  np.asarray(r, float).reshape(-1, G).mean(
                                                      1, keepdims=True)).ravel(),
                                    "You centred but did not divide by std + eps (that is "
                                    "Dr. GRPO's choice, not TRL's default)."),
                                   (lambda r, G: (np.asarray(r, float) - np.mean(r)) /
                                    (np.std(r, ddof=1) + 1e-4),
                                    "You used the batch mean and std; GRPO centres each group "
                                    "on its own mean.")],
                         what="advantages"),
        topic="normalization", func_name="advantages"))
    ex.append(Exercise(
        "implement-zero-variance-probability", "code", "Compute P(zero gradient)",
        "Write `p_zero(p, G)`: the probability that G i.i.d. Bernoulli(p) rewards are all "
        "equal. It must handle p = 0, p = 1 and G = 1.",
        "```python\ndef p_zero(p, G):\n    return p**G + (1 - p)**G\n```\nFor G = 1 this is 1: "
        "one sample has nothing to be compared with. `grpolab.theory.zero_variance_probability` "
        "computes the powers in log space so it stays accurate for G up to 10,000.",
        answer=lambda p, G: p ** G + (1 - p) ** G,
        wrong_answer=lambda p, G: (1 - p) ** G,
        checker=function(theory.zero_variance_probability, _P_G_INPUTS, rtol=1e-9, atol=1e-12,
                         why="p^G + (1−p)^G on every test input, including p ∈ {0, 1} and G = 1.",
                         mistakes=[(lambda p, G: (1 - p) ** G,
                                    "Only the all-fail term: all-pass groups have zero variance "
                                    "too."),
                                   (lambda p, G: 1 - (1 - p) ** G,
                                    "That is P(at least one success), not P(all equal).")],
                         what="p_zero"),
        topic="zero-variance", func_name="p_zero"))
    ex.append(Exercise(
        "implement-leave-one-out", "code", "Implement RLOO advantages",
        "Write `rloo(rewards, G)` for flat prompt-major rewards: $r_i - \\bar r_{-i}$ where "
        "$\\bar r_{-i}$ is the mean of the other $G-1$ rewards of the same group (no std "
        "scaling).",
        "```python\ndef rloo(rewards, G):\n    g = np.asarray(rewards, float).reshape(-1, G)\n"
        "    others = (g.sum(axis=1, keepdims=True) - g) / (G - 1)\n"
        "    return (g - others).ravel()\n```\nIt equals $\\frac{G}{G-1}(r_i - \\bar r)$. "
        "Reference: `group_advantages(r, G, baseline=\"leave_one_out\", scale=\"none\")`.",
        answer=lambda r, G: group_advantages(r, G, baseline="leave_one_out", scale="none"),
        wrong_answer=lambda r, G: group_advantages(r, G, scale="none"),
        checker=function(lambda r, G: group_advantages(r, G, baseline="leave_one_out",
                                                       scale="none"),
                         [a for a in _ADV_INPUTS if a[1] >= 2], rtol=1e-9, atol=1e-12,
                         why="r_i minus the mean of the other G − 1 rewards, group by group.",
                         mistakes=[(lambda r, G: group_advantages(r, G, scale="none"),
                                    "That subtracts the full group mean (GRPO's centring); "
                                    "leave r_i out: the result is larger by G/(G−1).")],
                         what="rloo"),
        topic="baseline-variance", func_name="rloo"))
    ex.append(Exercise(
        "implement-zero-variance-mask", "code", "Detect zero-variance groups robustly",
        "Write `zero_variance(rewards, G)` returning one boolean per group: True where all G "
        "rewards are equal. Float rewards leave rounding residue (0.1 + 0.2 ≠ 0.3), so use a "
        "tolerance of 1e-6 on the spread (max − min).",
        "```python\ndef zero_variance(rewards, G):\n"
        "    g = np.asarray(rewards, float).reshape(-1, G)\n"
        "    return g.max(axis=1) - g.min(axis=1) <= 1e-6\n```\nAn exact `std == 0` test "
        "misses residue groups, and dividing the residue by a tiny std inflates advantages "
        "(verl PR #4597, NeMo-RL PR #4161). Reference: "
        "`grpolab.advantages.zero_variance_groups`.",
        answer=lambda r, G: zero_variance_groups(r, G),
        wrong_answer=_exact_zero_std_mask,
        checker=function(lambda r, G: zero_variance_groups(r, G), _MASK_INPUTS,
                         why="Constant within 1e-6 on every test input, including a group with "
                         "0.1 + 0.2 vs 0.3 rounding residue.",
                         mistakes=[(_exact_zero_std_mask,
                                    "An exact std == 0 test misses the group [0.1+0.2, 0.3, "
                                    "0.3, 0.3]: its std is ~3e-17, not 0. Use a tolerance.")],
                         what="zero_variance"),
        topic="degenerate-groups", func_name="zero_variance"))

    # -- ch. 08–10: policy gradients, loss aggregation, DAPO ------------------------------
    ex.append(Exercise(
        "derive-optimal-constant-baseline", "derivation", "The best constant baseline",
        "A softmax policy over two answers puts probability $p$ on the correct one (reward 1) "
        "and $1-p$ on the wrong one (reward 0). Derive the constant baseline $b$ that "
        "minimises the second moment $\\mathbb E\\|(r-b)\\nabla_z\\log\\pi\\|^2$ of "
        "REINFORCE's gradient. Hand in `f(p)`.",
        "With $\\nabla_z\\log\\pi(a) = e_a - \\pi$: $\\|e_1-\\pi\\|^2 = 2(1-p)^2$ and "
        "$\\|e_2-\\pi\\|^2 = 2p^2$, so the second moment is "
        "$2p(1-p)\\,[(1-b)^2(1-p) + b^2 p]$. Setting its derivative in $b$ to zero gives "
        "$b^\\ast = 1 - p$: the mean reward $p$ is not the variance-minimising baseline "
        "when the reward is correlated with the score's size "
        "(`theory.optimal_constant_baseline`; ch. 08).",
        answer=lambda p: 1 - p,
        wrong_answer=lambda p: p,
        checker=function(lambda p: theory.optimal_constant_baseline(
                             [math.log(p), math.log(1 - p)], [1.0, 0.0]),
                         [(0.1,), (0.3,), (0.5,), (0.8,), (0.95,)],
                         why="b* = E[r‖∇log π‖²]/E[‖∇log π‖²] = 1 − p for this policy.",
                         mistakes=[(lambda p: p,
                                    "p is the mean reward μ. It minimises E[(r − b)²], not "
                                    "E‖(r − b)∇log π‖²: here the rarer answer has the larger "
                                    "score, which pulls b* towards its reward.")]),
        topic="reinforce-to-grpo"))
    ex.append(Exercise(
        "card-why-no-critic", "conceptual", "Why does GRPO have no critic?",
        "An interviewer asks why GRPO drops PPO's value model. Which answer is right?",
        "(c). A critic of the policy's size is a second trained model (about twice the "
        "training compute per completion and the trained models' memory), and with one reward "
        "at the last token it is hard to make its value accurate at every token "
        "(DeepSeekMath §4.1). The group mean gives a baseline for free per completion; the "
        "price is G ≥ 2 samples per prompt. It is not unbiased for free: GRPO's mean includes "
        "rᵢ, so it scales the gradient by (G−1)/G, and the std division reweights prompts.",
        answer="c", wrong_answer="a",
        choices={"a": "because the group mean is an exact, unbiased estimate of the value of "
                 "every token", "b": "because a critic would bias the policy gradient",
                 "c": "because a same-size critic roughly doubles the trained models and is "
                 "hard to fit per token from a last-token reward, while the group gives a "
                 "baseline at the price of G ≥ 2 samples per prompt",
                 "d": "because GRPO uses no baseline at all"},
        checker=choice("c", {
            "a": "No: the group mean estimates the prompt's value only (one number per "
                 "completion, not per token), and GRPO's mean includes rᵢ itself.",
            "b": "No: a critic V(s_t) that depends only on the state is an unbiased baseline "
                 "(GAE with λ = 1); GAE's λ < 1 trades some bias for variance.",
            "c": "Right: cost and accuracy of the critic against G samples (DeepSeekMath §4.1; "
                 "ch. 08 prices both at equal compute).",
            "d": "No: the group mean is GRPO's baseline."}),
        topic="reinforce-to-grpo"))
    share = 24 * 4 * 10 * float(theory.loss_token_weights([10] * (64 * 4), "dapo")[0])
    ex.append(Exercise(
        "loss-dilution-40-of-64", "numeric", "Zero-variance groups in the normaliser",
        "A step has 64 groups of $G = 4$ completions, all 10 tokens long; 40 groups are "
        "zero-variance. With `loss_type=\"dapo\"` and $\\beta = 0$, by what factor is the "
        "step smaller than the same step computed over the 24 informative groups alone?",
        "The zero-variance groups add 0 to the numerator but $40 \\cdot 4 \\cdot 10$ tokens "
        "to the denominator: the factor is $24/64 = 0.375$, the informative share "
        "$s$ of ch. 09. That is this step, not the expected one: without std division the "
        "expected step is $(G-1)/G$ times the gradient for any share, since an informative "
        "group's gradient is larger by $1/s$ on average (ch. 09).",
        answer=round(share, 4), wrong_answer=0.625,
        checker=numeric(share, rel=0.005,
                        why="s = informative tokens / all tokens = 960/2560 = 0.375.",
                        hint="the numerator is the same; count the tokens in the denominator.",
                        mistakes=[(0.625, "0.625 is the zero-variance fraction; the step is "
                                   "scaled by the informative share, 1 − 0.625."),
                                  (1.0, "TRL's dapo normaliser counts every completion token "
                                   "of the generation batch, zero-variance groups included; "
                                   "only dropping them (dynamic sampling) gives 1.")]),
        topic="loss-aggregation"))
    ex.append(Exercise(
        "derive-sequence-ratio", "derivation", "GSPO's sequence-level ratio",
        "A completion of $n$ tokens has token log-ratios "
        "$\\log\\rho_t = \\log\\pi_\\theta(o_t) - \\log\\pi_\\text{old}(o_t)$ summing to "
        "$S$. Write GSPO's sequence-level importance ratio as a function of $S$ and $n$. "
        "Hand in `f(S, n)`.",
        "$s = (\\pi_\\theta(o)/\\pi_\\text{old}(o))^{1/n} = \\exp(S/n)$: the geometric mean "
        "of the token ratios (GSPO, arXiv 2507.18071; TRL's "
        "`importance_sampling_level=\"sequence\"`). Without the $1/n$ the ratio of a long "
        "completion would be extreme and clipping would keep almost nothing.",
        answer=lambda S, n: math.exp(S / n),
        wrong_answer=lambda S, n: math.exp(S),
        checker=function(theory.sequence_importance_ratio,
                         [(-0.5, 10), (0.3, 3), (0.0, 7), (1.2, 40), (-2.0, 1)],
                         why="s = exp(S/n), the length-normalised sequence ratio.",
                         mistakes=[(lambda S, n: math.exp(S),
                                    "exp(S) is the raw sequence ratio π_θ(o)/π_old(o); GSPO "
                                    "normalises it by the length: exp(S/n)."),
                                   (lambda S, n: S / n,
                                    "S/n is the log of the ratio; exponentiate it.")]),
        topic="loss-aggregation"))
    ref = float(theory.clipped_probability_bound(0.02, 0.28))
    ex.append(Exercise(
        "clip-higher-p002", "numeric", "How far can a rare token rise?",
        "A token has probability $\\pi_\\text{old} = 0.02$ under the policy that sampled the "
        "rollout and a positive advantage. With DAPO's $\\epsilon_\\text{high} = 0.28$, what "
        "is the largest probability it can reach before the clip zeroes its gradient?",
        "For $A > 0$ the clipped surrogate is flat once $\\rho > 1 + \\epsilon_\\text{high}$, "
        "so $\\pi \\le (1 + 0.28)\\cdot 0.02 = 0.0256$ (0.024 with the symmetric "
        "$\\epsilon = 0.2$). The bound is relative: it holds rare tokens back and lets common "
        "ones reach 1, which is how a tight upper clip feeds entropy collapse (ch. 10).",
        answer=round(ref, 5), wrong_answer=0.024,
        checker=numeric(ref, rel=0.005,
                        why="π_max = min(1, (1 + ε_high) π_old) = 1.28 × 0.02 = 0.0256.",
                        hint="the clip bounds the ratio π/π_old from above by 1 + ε_high.",
                        mistakes=[(0.024, "0.024 uses ε = 0.2, the symmetric clip; DAPO's upper "
                                   "bound is ε_high = 0.28."),
                                  (0.3, "0.02 + 0.28 adds ε to the probability; the clip bounds "
                                   "the ratio, so multiply by 1 + ε_high.")]),
        topic="dapo"))
    ex.append(Exercise(
        "derive-truncated-zero-variance", "derivation", "Zero-variance groups from truncation",
        "Each completion is cut off at the length limit with probability $\\tau$ and then "
        "scores 0; otherwise it is right with probability $p$, independently. Derive the "
        "probability that a group of $G$ has zero variance. Hand in `f(p, G, tau)`.",
        "A completion scores 1 with probability $q = p(1-\\tau)$, so the group is constant "
        "with probability $q^G + (1-q)^G$. At $\\tau \\to 1$ it tends to 1 for every $p$ and "
        "$G$: truncation makes zero-variance groups that no G rescues "
        "(`theory.truncated_zero_variance_probability`; ch. 10).",
        answer=lambda p, G, tau: (p * (1 - tau)) ** G + (1 - p * (1 - tau)) ** G,
        wrong_answer=lambda p, G, tau: p ** G + (1 - p) ** G,
        checker=function(theory.truncated_zero_variance_probability,
                         [(0.5, 4, 0.3), (0.2, 16, 0.0), (0.9, 8, 0.5), (0.6, 2, 0.95),
                          (0.3, 32, 1.0)],
                         why="q^G + (1−q)^G with q = p(1 − τ).",
                         mistakes=[(lambda p, G, tau: p ** G + (1 - p) ** G,
                                    "That ignores truncation: a cut-off completion scores 0, so "
                                    "the success probability is p(1 − τ), not p."),
                                   (lambda p, G, tau: (1 - p * (1 - tau)) ** G,
                                    "That is only the all-fail term; all-pass groups are "
                                    "constant too: add q^G.")]),
        topic="dapo"))
    # -- ch. 11–13: pass@k, KL, entropy ---------------------------------------------------
    ref = float(theory.pass_at_k(10, 3, 4))
    ex.append(Exercise(
        "pass-at-k-estimate", "numeric", "pass@4 from 3 successes in 10 samples",
        "A prompt was solved 3 times in $n = 10$ samples. What is the unbiased estimate of its "
        "pass@4 (Chen et al.'s estimator)?",
        "$1 - \\binom{7}{4}/\\binom{10}{4} = 1 - 35/210 = 5/6 \\approx 0.833$ "
        "(`theory.pass_at_k(10, 3, 4)`). The plug-in $1 - (1 - 0.3)^4 = 0.760$ is biased low.",
        answer=round(ref, 4), wrong_answer=0.7599,
        checker=numeric(ref, rel=0.003,
                        why="1 − C(7, 4)/C(10, 4) = 1 − 35/210 = 5/6: the chance that 4 of the "
                            "10 samples, drawn without replacement, include a success.",
                        hint="count the 4-subsets of the 10 samples that hold no success.",
                        mistakes=[(1 - 0.7 ** 4, "0.760 plugs p̂ = 3/10 into 1 − (1 − p)^4; "
                                   "that is biased low (convexity). Use 1 − C(n−c, k)/C(n, k)."),
                                  (0.3, "0.3 is pass@1, c/n; pass@4 asks for at least one "
                                   "success among 4 samples.")]),
        topic="pass-at-k"))
    ex.append(Exercise(
        "pass-at-k-sharpening", "conceptual", "pass@1 up, pass@256 down",
        "After RL with verifiable rewards, a model beats its base model at pass@1 but falls "
        "below it at pass@256 on the same prompts. Which reading fits best?",
        "(c). An update that reweights what the policy already samples (sharpening) raises the "
        "pass rates of prompts it often solves and lowers those of prompts it rarely solves; "
        "pass@1 weighs the former, pass@k at large k the latter (Yue et al., arXiv 2504.13837; "
        "the sharpening model of the pass@k chapter).",
        answer="c", wrong_answer="b",
        choices={"a": "the unbiased estimator is biased at large k",
                 "b": "the RL model solves no prompt the base model could not, and more "
                      "samples always help the base model more, so this says nothing",
                 "c": "sharpening: rare successes got rarer while common ones got more "
                      "reliable",
                 "d": "pass@k at large k always falls during any training"},
        checker=choice("c", {
            "a": "No: 1 − C(n−c, k)/C(n, k) is unbiased for every k ≤ n.",
            "b": "No: the crossing is a finding in itself: the tuned model is behind where "
                 "coverage matters.",
            "c": "Right: pass@1 rewards reliability on common successes; large-k pass@k "
                 "rewards keeping rare ones.",
            "d": "No: ProRL (arXiv 2505.24864) reports pass@k gains at large k after long "
                 "training."}),
        topic="pass-at-k"))
    ref = float(theory.kl_k3(-0.3))
    ex.append(Exercise(
        "kl-k3-sample", "numeric", "The k3 value of one token",
        "A sampled token has $\\log\\pi(x) = -1.2$ under the policy and "
        "$\\log\\pi_{\\text{ref}}(x) = -1.5$ under the reference. What is its $k_3 = (r - 1) "
        "- \\log r$, with $r = \\pi_{\\text{ref}}(x)/\\pi(x)$?",
        "$\\log r = -0.3$, $r = e^{-0.3} = 0.7408$; $k_3 = 0.7408 - 1 + 0.3 = 0.0408$ "
        "(`theory.kl_k3(-0.3)`). $k_1 = 0.3$ and $k_2 = 0.045$ for the same token.",
        answer=round(ref, 4), wrong_answer=0.3,
        checker=numeric(ref, rel=0.005,
                        why="log r = −0.3, so k3 = e^(−0.3) − 1 + 0.3 ≈ 0.0408.",
                        hint="first log r = log π_ref − log π, then (r − 1) − log r.",
                        mistakes=[(0.3, "0.3 is k1 = −log r; k3 adds the control variate "
                                   "r − 1 = −0.259."),
                                  (0.045, "0.045 is k2 = (log r)²/2."),
                                  (float(theory.kl_k3(0.3)), "that uses log r = +0.3: r is "
                                   "π_ref/π, here e^(−1.5)/e^(−1.2).")]),
        topic="kl"))
    ex.append(Exercise(
        "kl-k3-in-loss", "conceptual", "The gradient of GRPO's KL term",
        "GRPO adds $\\beta k_3$ per token to its loss (no importance ratio). On-policy, the "
        "expected gradient of that term is the gradient of which quantity?",
        "(b). $\\nabla k_3 = (1 - r)\\nabla\\log\\pi$, whose mean under $\\pi$ is "
        "$-\\sum_x \\pi_{\\text{ref}}(x)\\nabla\\log\\pi(x) = "
        "\\nabla\\mathrm{KL}(\\pi_{\\text{ref}}\\Vert\\pi)$. Multiplying $k_3$ by the "
        "differentiable ratio (TRL's `use_bias_correction_kl`, on by default) turns it into "
        "$\\nabla\\mathrm{KL}(\\pi\\Vert\\pi_{\\text{ref}})$ (the KL chapter).",
        answer="b", wrong_answer="a",
        choices={"a": "KL(π ‖ π_ref), the KL its value estimates",
                 "b": "KL(π_ref ‖ π), the other direction",
                 "c": "nothing: its expected gradient is zero",
                 "d": "the squared log ratio (k2)"},
        checker=choice("b", {
            "a": "No: k3's value is unbiased for KL(π‖π_ref), but its gradient with the sample "
                 "held fixed is (1 − r)∇log π, whose mean is ∇KL(π_ref‖π).",
            "b": "Right: −Σ π_ref ∇log π is the gradient of the cross-entropy of π_ref under π.",
            "c": "No: that is k1 in the loss, whose gradient ∇log π has mean 0.",
            "d": "No: k2 in the loss gives ∇KL(π‖π_ref), not k3."}),
        topic="kl"))
    ref = float(theory.clip_ratio_ceiling(0.01, 0.28))
    ex.append(Exercise(
        "clip-higher-headroom", "numeric", "The clip ceiling for a rare token",
        "PPO's clip stops pushing a token with a positive advantage once its ratio exceeds "
        "$1 + \\varepsilon_{\\text{high}}$. With DAPO's $\\varepsilon_{\\text{high}} = 0.28$, "
        "what is the highest probability one rollout's updates can give a token whose old "
        "probability is 0.01?",
        "$\\min(1, 1.28 \\times 0.01) = 0.0128$ (`theory.clip_ratio_ceiling`); with "
        "$\\varepsilon_{\\text{high}} = 0.2$ it is 0.012. The headroom is relative, so rare "
        "tokens gain almost nothing: clip-higher widens it to keep exploration alive.",
        answer=round(ref, 5), wrong_answer=0.012,
        checker=numeric(ref, rel=0.003,
                        why="(1 + 0.28) × 0.01 = 0.0128, below the cap of 1.",
                        hint="the ceiling is the ratio bound times the old probability.",
                        mistakes=[(0.012, "0.012 is the ceiling with the symmetric "
                                   "ε = 0.2; DAPO's clip-higher uses 0.28."),
                                  (1.28, "1.28 is the ratio bound, not a probability: "
                                   "multiply by π_old = 0.01."),
                                  (0.29, "0.29 adds ε to the probability; the bound is on "
                                   "the ratio π_new/π_old.")]),
        topic="entropy"))
    ex.append(Exercise(
        "entropy-larger-g", "conceptual", "Does a larger G slow entropy collapse?",
        "At a fixed learning rate and with GRPO's std-normalised advantages, what does a larger "
        "G do to one update's expected entropy change (entropy chapter)?",
        "(c). The update's noise lowers the entropy of a high-entropy policy at second order, "
        "and its covariance falls like 1/G; but std division multiplies the mean step by "
        "c_G(p), which grows with G, and the mean step toward rewarded likely answers is what "
        "collapses the entropy at first order.",
        answer="c", wrong_answer="b",
        choices={"a": "nothing: the expected update does not depend on G",
                 "b": "it slows the collapse, because the advantage estimate is less noisy",
                 "c": "less noise (slower noise-driven collapse), but a larger mean step "
                      "(faster first-order collapse)",
                 "d": "it raises the entropy, because a larger group explores more"},
        checker=choice("c", {
            "a": "No: that holds for RLOO without std division; GRPO's std division scales the "
                 "mean step by c_G(p), which grows with G.",
            "b": "Only half: the noise term shrinks, but std division enlarges the mean step.",
            "c": "Right: two terms move in opposite directions; measure which wins.",
            "d": "No: sampling more completions does not by itself raise the policy's "
                 "entropy; what the update does with them decides."}),
        topic="entropy"))
    return {e.id: e for e in ex}


_REGISTRY: dict[str, Exercise] = _build()


def list_exercises(kind: str | None = None, topic: str | None = None) -> list[Exercise]:
    """All exercises in registry order, optionally only one ``kind`` or ``topic``."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return [e for e in _REGISTRY.values()
            if (kind is None or e.kind == kind) and (topic is None or e.topic == topic)]


def get(exercise_id: str) -> Exercise:
    """The exercise with this id; ValueError naming the known ids otherwise."""
    try:
        return _REGISTRY[exercise_id]
    except KeyError:
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; known ids: "
                         f"{', '.join(_REGISTRY)}") from None


def check(exercise_id: str, answer) -> CheckResult:
    """Check ``answer`` for an exercise: right or wrong, and why.

    ``answer`` is a number (or a string such as ``"25%"``) for numeric exercises, a letter
    for conceptual ones, and a function for derivation and code exercises.
    """
    ex = get(exercise_id)
    ok, message = ex.checker(answer)
    return CheckResult(exercise_id, bool(ok), message)


def solution(exercise_id: str) -> str:
    """The worked solution (Markdown)."""
    return get(exercise_id).solution


# ------------------------------------------------------------------------------------------
# Checker data for the static page: grpolab-exercises.js checks answers in the browser (no
# kernel, no network) with these very numbers and texts. The workbook page emits it from a
# hidden cell when the book is built, so the page and the registry cannot drift.
# ------------------------------------------------------------------------------------------
CHECKER_DATA_ID = "grpolab-exercise-data"


def checker_data() -> dict[str, dict]:
    """Everything the browser checker needs, for each numeric and multiple-choice exercise.

    Numeric: ``reference``, ``tolerance``, ``rel``, ``abs`` (the mistakes' tolerance is
    max(abs, rel·|value|), as in :class:`NumericChecker`), ``why``, ``hint`` and
    ``mistakes`` as ``[value, explanation]`` pairs. Choice: ``correct`` and
    ``explanations``. Derivation and code exercises need Python and are left out.
    """
    out: dict[str, dict] = {}
    for ex in list_exercises():
        c = ex.checker
        if isinstance(c, NumericChecker):
            out[ex.id] = {"kind": "numeric", "reference": c.reference, "tolerance": c.tolerance,
                          "rel": c.rel, "abs": c.abs_, "why": c.why, "hint": c.hint,
                          "mistakes": [[v, e] for v, e in c.mistakes]}
        elif isinstance(c, ChoiceChecker):
            out[ex.id] = {"kind": "choice", "correct": c.correct,
                          "explanations": dict(c.explanations)}
    return out


def checker_data_html() -> str:
    """:func:`checker_data` as ``<script type="application/json" id="grpolab-exercise-data">``."""
    import json

    body = json.dumps(checker_data(), ensure_ascii=False, sort_keys=True)
    body = body.replace("</", "<\\/")  # a "</script>" inside a string must not end the tag
    return f'<script type="application/json" id="{CHECKER_DATA_ID}">{body}</script>'


def _answer_box(ex: Exercise) -> str:
    """The static page's answer box (checked by grpolab-exercises.js)."""
    hint = "a number: 0.25, 25% or 1/4" if ex.kind == "numeric" else "a letter"
    return ("\n```{raw} html\n"
            f'<form class="grpolab-answer" data-exercise="{ex.id}" autocomplete="off">'
            f'<label>Answer ({hint}): <input type="text" name="answer" '
            f'aria-label="answer to {ex.id}"></label> <button type="submit">Check</button>'
            '<div class="grpolab-verdict" role="status" aria-live="polite">'
            "<noscript>Checking in the page needs JavaScript; use the cell below or "
            "<code>grpolab quiz</code>.</noscript></div></form>\n```\n")


# ------------------------------------------------------------------------------------------
# The workbook page: book/interview/02-exercises.md is generated from this registry, so the
# page and the checkers can never disagree (tests/test_exercises.py compares them).
# ------------------------------------------------------------------------------------------
WORKBOOK_PATH = "book/interview/02-exercises.md"

_SECTIONS = {
    "derivation": ("Derivations",
                   "Derive the closed form on paper, then hand the checker a Python function of "
                   "it; the checker evaluates it on test inputs and compares with "
                   "`grpolab.theory`."),
    "numeric": ("Numbers",
                "Compute a number. `0.25`, `\"25%\"` and `\"1/4\"` are all accepted; the "
                "checker uses a tolerance and recognizes the common slips."),
    "conceptual": ("Concepts",
                   "Multiple choice: answer with a letter. Several of these test claims from "
                   "the interview cards; the {doc}`claim audit <03-claim-audit>` has the "
                   "sources."),
    "code": ("Code",
             "Implement the function. The checker calls it on test inputs (including constant "
             "groups and float residue) and compares with grpolab's reference "
             "implementation."),
}

_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

<!-- Generated by `python -m grpolab.drill.exercises --write` from the registry in
src/grpolab/drill/exercises.py; edit the registry, not this file. -->

# Exercises

A workbook for the interview chapters: derivations, numeric questions, concepts and code.
Each solution is hidden behind a **Solution** toggle. Numeric and multiple-choice
exercises have an answer box that checks your answer right here in the page (no kernel, no
network), with the same tolerance and explanations as the Python checker. In a notebook
(open this page with jupytext, or copy a cell), replace the placeholder in the cell under an
exercise and run it:
`grpolab.drill.exercises.check(exercise_id, answer)` says right or wrong and explains why. The
placeholders below were run when the book was built, so the outputs show what the checker
says to an unanswered exercise. For randomized drill in a terminal, run `grpolab quiz`; for a
mock interview with the cards' follow-up questions and rubrics, run `grpolab drill`.

```{code-cell} ipython3
:tags: [remove-input]
# The answer boxes' checker data, emitted from the registry when the book is built.
from IPython.display import HTML

from grpolab.drill.exercises import checker_data_html

HTML(checker_data_html())
```

```{code-cell} ipython3
import numpy as np

from grpolab.drill.exercises import check, list_exercises

# How a checker answers: a common slip is named, the right value is confirmed.
display(check("zero-variance-p03-g4", 0.7 ** 4))
check("zero-variance-p03-g4", "24.82%")
```
"""


def _placeholder_cell(ex: Exercise) -> str:
    if ex.kind == "numeric":
        body = f'answer = None  # your number, e.g. 0.25 or "25%"\ncheck("{ex.id}", answer)'
    elif ex.kind == "conceptual":
        body = f'answer = None  # your letter, e.g. "a"\ncheck("{ex.id}", answer)'
    else:
        import inspect

        try:
            params = list(inspect.signature(ex.answer).parameters)
        except (TypeError, ValueError):  # pragma: no cover - every answer is a plain function
            params = ["*args"]
        names = {"r": "rewards", "s2": "sigma2", "t": "t"}
        params = [names.get(p, p) for p in params]
        fname = ex.func_name
        body = (f"def {fname}({', '.join(params)}):\n    return None  # your code here\n\n"
                f'check("{ex.id}", {fname})')
    return f"```{{code-cell}} ipython3\n{body}\n```\n"


def _topic_link(topic: str) -> str:
    """A {doc} link to the theory chapter ``book/theory/NN-<topic>.md`` if it exists, else text."""

    from grpolab._paths import checkout_root

    theory_dir = checkout_root() / "book" / "theory"
    found = sorted(theory_dir.glob(f"[0-9][0-9]-{topic}.md")) if topic else []
    return f"{{doc}}`{topic} <../theory/{found[0].stem}>`" if found else topic


def render_workbook() -> str:
    """The MyST Markdown of book/interview/02-exercises.md, generated from the registry.

    Each exercise's topic links to its theory chapter when that chapter exists.
    """
    parts = [_HEADER]
    number = 0
    for kind in KINDS:
        title, intro = _SECTIONS[kind]
        parts.append(f"\n## {title}\n\n{intro}\n")
        for ex in list_exercises(kind):
            number += 1
            parts.append(f"\n({ex.id})=\n### {number}. {ex.title}\n\n"
                         f"*id:* `{ex.id}` · *topic:* {_topic_link(ex.topic)}\n\n{ex.question}\n")
            if ex.choices:
                parts.append("\n" + "\n".join(f"- ({k}) {v}" for k, v in ex.choices.items())
                             + "\n")
            if ex.kind in ("numeric", "conceptual"):
                parts.append(_answer_box(ex))
            parts.append("\n" + _placeholder_cell(ex))
            # Four backticks: solutions contain ``` code blocks of their own.
            parts.append(f"\n````{{admonition}} Solution\n:class: dropdown\n\n{ex.solution}\n"
                         "````\n")
    parts.append("\n## What to read next\n\n- {doc}`04-one-page-sheet` for the formulas these "
                 "exercises drill.\n- {doc}`01-model-answers` for the interview answers, and "
                 "`grpolab drill` for a mock interview with rubrics.\n- The theory chapter of "
                 "each exercise's topic (linked above) for its derivation.\n")
    return "".join(parts)


def write_workbook(path: str | None = None) -> str:
    """Write :func:`render_workbook` to ``path`` (default: the book page under the repo root)."""
    from pathlib import Path

    from grpolab._files import write_atomic
    from grpolab._paths import checkout_root

    target = Path(path) if path else checkout_root() / WORKBOOK_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, render_workbook())  # only onto a regular file or a new path
    return str(target)


if __name__ == "__main__":  # python -m grpolab.drill.exercises --write
    import sys

    if sys.argv[1:] == ["--write"]:
        print(write_workbook())
    else:
        sys.stdout.write(render_workbook())
