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

The exercises are data: ``exercises.json`` next to this module holds each one's id, texts,
tolerances and slips, and names what it computes (a grpolab.theory call, a function of
:data:`FUNCTIONS`, a set of test inputs); this module holds the checkers and those functions.

Derived in: book/interview/02-exercises.md, which renders every exercise with its
solution behind a dropdown.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
# The registry: the exercises are data (exercises.json, next to this file: ids, texts,
# tolerances, the slips they recognise). What they compute is code, here: the functions the
# derivation and code exercises name, their test inputs, and the numbers grpolab.theory
# computes when the registry loads (exercises.json stores the call, never the number).
# ------------------------------------------------------------------------------------------
EXERCISES_FILE = Path(__file__).with_name("exercises.json")

#: The answers, wrong answers, references and recognised mistakes of the derivation and code
#: exercises, by the names exercises.json gives them ("theory.X" names grpolab.theory.X).
FUNCTIONS: dict[str, Callable] = {
    "derive-baseline-variance: answer": lambda s2, G: s2 / G,
    "derive-baseline-variance: mistake 1": lambda s2, G: s2 / math.sqrt(G),
    "derive-uniform-zero-variance: answer": lambda G: 2 / (G + 1),
    "derive-uniform-zero-variance: reference":
        lambda G: theory.beta_zero_variance_probability(G, 1.0, 1.0),
    "derive-uniform-zero-variance: mistake 1": lambda G: 2 * 0.5 ** G,
    "derive-rloo-factor: answer": lambda G: (G - 1) / G,
    "derive-rloo-factor: mistake 1": lambda G: G / (G - 1),
    "derive-ddof-ratio: answer": lambda G: math.sqrt(G / (G - 1)),
    "derive-min-group-any-success: answer":
        lambda p, t: math.ceil(math.log(1 - t) / math.log(1 - p)),
    "min_g_reference": _min_g_reference,
    "derive-min-group-any-success: mistake 1": lambda p, t: round(t / p),
    "derive-dynamic-sampling-cost: answer": lambda p, G, B: G * B / (1 - p ** G - (1 - p) ** G),
    "derive-dynamic-sampling-cost: mistake 1": lambda p, G, B: G * B / (1 - (1 - p) ** G),
    "derive-dynamic-sampling-cost: mistake 2": lambda p, G, B: G * B,
    "implement-group-advantages: answer": lambda r, G: group_advantages(r, G),
    "ddof0_advantages": _ddof0_advantages,
    "no_eps_advantages": _no_eps_advantages,
    "implement-group-advantages: mistake 3":
        lambda r, G: (np.asarray(r, float).reshape(-1, G) -
                      np.asarray(r, float).reshape(-1, G).mean(1, keepdims=True)).ravel(),
    "implement-group-advantages: mistake 4":
        lambda r, G: (np.asarray(r, float) - np.mean(r)) / (np.std(r, ddof=1) + 1e-4),
    "implement-zero-variance-probability: answer": lambda p, G: p ** G + (1 - p) ** G,
    "implement-zero-variance-probability: mistake 1": lambda p, G: (1 - p) ** G,
    "implement-zero-variance-probability: mistake 2": lambda p, G: 1 - (1 - p) ** G,
    "implement-leave-one-out: answer":
        lambda r, G: group_advantages(r, G, baseline="leave_one_out", scale="none"),
    "implement-leave-one-out: mistake 1": lambda r, G: group_advantages(r, G, scale="none"),
    "implement-zero-variance-mask: answer": lambda r, G: zero_variance_groups(r, G),
    "exact_zero_std_mask": _exact_zero_std_mask,
    "derive-optimal-constant-baseline: answer": lambda p: 1 - p,
    "derive-optimal-constant-baseline: reference":
        lambda p: theory.optimal_constant_baseline([math.log(p), math.log(1 - p)], [1.0, 0.0]),
    "derive-optimal-constant-baseline: mistake 1": lambda p: p,
    "derive-sequence-ratio: answer": lambda S, n: math.exp(S / n),
    "derive-sequence-ratio: mistake 1": lambda S, n: math.exp(S),
    "derive-sequence-ratio: mistake 2": lambda S, n: S / n,
    "derive-truncated-zero-variance: answer":
        lambda p, G, tau: (p * (1 - tau)) ** G + (1 - p * (1 - tau)) ** G,
    "derive-truncated-zero-variance: mistake 1": lambda p, G, tau: p ** G + (1 - p) ** G,
    "derive-truncated-zero-variance: mistake 2": lambda p, G, tau: (1 - p * (1 - tau)) ** G,
}

#: The test inputs exercises.json names (arrays, drawn once with a fixed seed).
_INPUT_SETS: dict[str, list[tuple]] = {
    "advantages": _ADV_INPUTS,
    "advantages, G ≥ 2": [a for a in _ADV_INPUTS if a[1] >= 2],
    "masks": _MASK_INPUTS,
    "p, G": _P_G_INPUTS,
}

#: A reference that is more than one grpolab.theory call: 40 zero-variance groups of 64
#: (G = 4, 10 tokens each) under loss_type="dapo" scale the step by the informative tokens'
#: share of the normaliser.
_VALUES: dict[str, Callable[[], float]] = {
    "loss-dilution-share":
        lambda: 24 * 4 * 10 * float(theory.loss_token_weights([10] * (64 * 4), "dapo")[0]),
}


def _function(name: str) -> Callable:
    return getattr(theory, name.removeprefix("theory.")) if name.startswith("theory.") \
        else FUNCTIONS[name]


def _value(spec):
    """A number of exercises.json: a literal; ``{"theory": name, "args", "kwargs", "index",
    "float"}``, computed by grpolab.theory (an argument may be such a call too); or
    ``{"value": name}`` from :data:`_VALUES`."""
    if not isinstance(spec, dict):
        return spec
    if "value" in spec:
        return _VALUES[spec["value"]]()
    out = getattr(theory, spec["theory"])
    if "args" in spec:
        out = out(*(_value(a) for a in spec["args"]), **spec.get("kwargs", {}))
    if "index" in spec:
        out = out[spec["index"]]
    return float(out) if spec.get("float") else out


def _exercise(e: dict) -> Exercise:
    """One entry of exercises.json as an :class:`Exercise` with its checker."""
    kind = e["kind"]
    if kind in ("derivation", "code"):
        inputs = (_INPUT_SETS[e["inputs"]] if isinstance(e["inputs"], str)
                  else [tuple(args) for args in e["inputs"]])
        options = {k: e[k] for k in ("rtol", "atol", "what") if k in e}
        checker = function(_function(e["reference"]), inputs, why=e["why"],
                           mistakes=[(_function(f), text) for f, text in e["mistakes"]],
                           **options)
        answer, wrong = _function(e["answer"]), _function(e["wrong_answer"])
    elif kind == "numeric":
        reference = _value(e["reference"])
        m = e["mistakes"]
        mistakes = (slips.mistakes(getattr(slips, m["slips"])(*m["args"], **m.get("kwargs", {})))
                    if isinstance(m, dict) else [(_value(v), text) for v, text in m])
        options = {k + "_" if k == "abs" else k: e[k] for k in ("rel", "abs") if k in e}
        checker = numeric(reference, why=e["why"], hint=e["hint"], mistakes=mistakes, **options)
        answer, wrong = e["answer"], e["wrong_answer"]
        if isinstance(answer, dict):  # {"round": digits}: the reference, rounded as a reader would
            answer = round(reference, answer["round"]) if answer["round"] is not None \
                else round(reference)
    else:
        checker = choice(e["answer"], e["explanations"])
        answer, wrong = e["answer"], e["wrong_answer"]
    return Exercise(e["id"], kind, e["title"], e["question"], e["solution"], answer=answer,
                    wrong_answer=wrong, checker=checker, topic=e["topic"],
                    choices=e.get("choices"), func_name=e.get("func_name", "f"))


def _build() -> dict[str, Exercise]:
    import json

    entries = json.loads(EXERCISES_FILE.read_text(encoding="utf-8"))
    return {e["id"]: _exercise(e) for e in entries}


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
