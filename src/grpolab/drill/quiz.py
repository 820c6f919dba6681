"""Randomized practice questions generated from :mod:`grpolab.theory`, and a session runner.

Each question *kind* is a small generator: it draws parameters (p, G, k, budget, ...)
from a seeded ``random.Random``, asks one question, and carries the answer computed by
grpolab.theory, a tolerance, and an explanation that shows the formula with the numbers
put in. The same seed always gives the same questions.

:func:`run_session` asks the questions one by one, reads answers from any iterator
(``input()`` interactively, lines of a file or stdin in scripts), keeps the score and
explains every answer. The ``grpolab quiz`` command (grpolab.cli.quiz) is a thin
wrapper around it.

Derived in: book/interview/02-exercises.md (the formulas are derived in the theory chapters).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from grpolab import theory
from grpolab.drill import slips
from grpolab.drill.answers import parse_answer
from grpolab.drill.terminal import plain

__all__ = [
    "KINDS",
    "Question",
    "SessionResult",
    "check_choice",
    "generate_questions",
    "is_correct",
    "parse_answer",
    "run_session",
    "slip_for",
]


@dataclass(frozen=True)
class Question:
    """One practice question.

    Attributes:
        kind: the generator that made it (a key of :data:`KINDS`).
        text: the question as asked.
        answer: the reference answer, computed by grpolab.theory.
        abs_tol, rel_tol: an answer x is right if |x − answer| ≤ max(abs_tol, rel_tol·|answer|).
        explanation: the formula with the numbers put in.
        integer: the answer is a whole number and must match exactly.
        params: the drawn parameters, so tests can recompute the answer independently.
        count: the answer is an expected count (groups, completions): a whole number
            within 0.5 of it (24 for 24.32) is right too, as an interviewer would accept.
        slips: the usual wrong values for these parameters and what each gets wrong
            (:mod:`grpolab.drill.slips`, shared with the exercise checkers).
        exercise: for a conceptual (multiple-choice) question, the id of the registry
            exercise that asks and checks it; ``answer`` is then unused.
        page: the book page and section that derives the answer (``docname#anchor``).
        topic: the drill topic (a key of rubrics.json's topics) when it is not the kind's.
    """

    kind: str
    text: str
    answer: float
    explanation: str
    abs_tol: float = 0.0
    rel_tol: float = 0.01
    integer: bool = False
    params: dict | None = None
    count: bool = False
    slips: tuple[slips.Slip, ...] = ()
    exercise: str = ""
    page: str = ""
    topic: str = ""

    @property
    def tolerance(self) -> float:
        """The accepted distance from the reference answer."""
        if self.integer:
            return 0.0
        return max(self.abs_tol, self.rel_tol * abs(self.answer))


def is_correct(question: Question, value: float) -> bool:
    """True if ``value`` is within the question's tolerance of its answer.

    For an expected count (``question.count``), a whole number within 0.5 of the answer is
    right too: 24 for 24.32 expected groups.
    """
    if question.integer:
        return value == round(question.answer)
    if question.count and value == round(value) and abs(value - question.answer) <= 0.5:
        return True
    return abs(value - question.answer) <= question.tolerance + 1e-12


def slip_for(question: Question, value: float) -> slips.Slip | None:
    """The usual slip a wrong ``value`` matches, if any (same tolerance as the answer)."""
    return slips.match(question.slips, value, rel=question.rel_tol, abs_=question.abs_tol,
                       exclude=question.answer)


def _fmt(x: float) -> str:
    """A compact, readable number: 4 significant digits, no scientific notation for 1e-4 ≤ |x|."""
    if x == 0:
        return "0"
    if abs(x) >= 1e-4:
        return f"{x:.4g}" if abs(x) < 1e6 else f"{x:,.0f}"
    return f"{x:.3e}"


# ------------------------------------------------------------------------------------------
# Question generators. Each takes a random.Random and returns a Question whose answer comes
# from grpolab.theory; the tests recompute every answer a different way.
# ------------------------------------------------------------------------------------------
_PS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
_GS = (2, 4, 8, 16, 32)


def _zero_variance(rng: random.Random) -> Question:
    p, G = rng.choice(_PS), rng.choice((2, 4, 8, 16))
    ans = theory.zero_variance_probability(p, G)
    return Question(
        "zero_variance",
        f"Binary rewards, pass rate p = {p}, group size G = {G}: what is the probability "
        "that a group gives no gradient (all G rewards equal)?",
        ans,
        f"P(zero gradient) = p^G + (1-p)^G = {p}^{G} + {1 - p:.2g}^{G} = "
        f"{_fmt(p ** G)} + {_fmt((1 - p) ** G)} = {_fmt(ans)}. Every advantage in a "
        "constant group is 0.",
        abs_tol=0.002, params={"p": p, "G": G}, slips=slips.zero_variance(p, G),
        page="theory/03-zero-variance#the-derivation",
    )


def _any_success(rng: random.Random) -> Question:
    p, G = rng.choice((0.01, 0.02, 0.05, 0.1, 0.2)), rng.choice((4, 8, 16, 32, 64))
    ans = theory.any_success_probability(p, G)
    return Question(
        "any_success",
        f"A hard prompt has pass rate p = {p}. With G = {G} samples, what is the probability "
        "that at least one completion is correct?",
        ans,
        f"P(any success) = 1 - (1-p)^G = 1 - {1 - p:.2g}^{G} = {_fmt(ans)}.",
        abs_tol=0.002, params={"p": p, "G": G},
        page="theory/03-zero-variance#hard-prompts-1-1-p-g",
    )


def _min_group_for_success(rng: random.Random) -> Question:
    p = rng.choice((0.01, 0.02, 0.05, 0.1, 0.2, 0.3))
    target = rng.choice((0.5, 0.8, 0.9, 0.95, 0.99))
    G = 1
    while theory.any_success_probability(p, G) < target:
        G += 1
    return Question(
        "min_group_for_success",
        f"Pass rate p = {p}. What is the smallest G for which at least one of the G "
        f"completions is correct with probability >= {target}?",
        G,
        f"Need 1 - (1-p)^G >= {target}, i.e. G >= ln(1 - {target}) / ln(1 - {p}) = "
        f"{math.log(1 - target) / math.log(1 - p):.3f}, so G = {G}.",
        integer=True, params={"p": p, "target": target},
        page="theory/03-zero-variance#hard-prompts-1-1-p-g",
    )


def _baseline_variance(rng: random.Random) -> Question:
    p, G = rng.choice(_PS), rng.choice(_GS)
    ans = theory.baseline_variance(theory.bernoulli_variance(p), G)
    return Question(
        "baseline_variance",
        f"0/1 rewards with pass rate p = {p}. What is the variance of the group-mean "
        f"baseline for G = {G}?",
        ans,
        f"Var(mean) = sigma^2 / G with sigma^2 = p(1-p) = {_fmt(p * (1 - p))}, "
        f"so Var = {_fmt(p * (1 - p))} / {G} = {_fmt(ans)}.",
        rel_tol=0.01, params={"p": p, "G": G}, page="theory/02-baseline-variance#the-derivation",
    )


def _binary_advantage(rng: random.Random) -> Question:
    G = rng.choice((3, 4, 5, 6, 8, 10, 16))
    k = rng.randint(1, G - 1)
    ddof = rng.choice((0, 1))
    correct = rng.choice((True, False))
    a_pos, a_neg = theory.binary_advantages(k, G, ddof=ddof, eps=0.0)
    ans = a_pos if correct else a_neg
    which = "a correct" if correct else "an incorrect"
    std = "unbiased std, ddof = 1 (TRL, verl)" if ddof else "biased std, ddof = 0 (np.std)"
    q = k / G
    return Question(
        "binary_advantage",
        f"{k} of G = {G} completions are correct (reward 1, others 0). With A = (r - mean)/std, "
        f"{std}, ignoring eps: what is the advantage of {which} completion?",
        ans,
        f"mean = k/G = {_fmt(q)}; std^2 = G/(G-ddof) * q(1-q) = {G}/{G - ddof} * "
        f"{_fmt(q * (1 - q))}"
        f" -> std = {_fmt(math.sqrt(G / (G - ddof) * q * (1 - q)))}; "
        f"A = ({int(correct)} - {_fmt(q)}) / std = {_fmt(ans)}.",
        rel_tol=0.01, params={"k": k, "G": G, "ddof": ddof, "correct": correct},
        slips=slips.advantage(k, G, ddof, correct),
        page="theory/06-normalization#binary-rewards-in-closed-form",
    )


def _dynamic_sampling(rng: random.Random) -> Question:
    p, G = rng.choice((0.05, 0.1, 0.2, 0.5, 0.8, 0.9)), rng.choice((4, 8, 16))
    B = rng.choice((64, 128, 256, 512))
    ans = theory.dynamic_sampling_expected_completions(p, G, B)
    qv = theory.informative_probability(p, G)
    return Question(
        "dynamic_sampling",
        f"Dynamic sampling (DAPO) keeps only groups with mixed rewards. Pass rate p = {p}, "
        f"G = {G}: how many completions must be generated, on average, to fill {B} "
        "informative groups?",
        ans,
        f"A group is informative with q = 1 - p^G - (1-p)^G = {_fmt(qv)}; groups needed "
        f"= B / q = {B} / {_fmt(qv)} = {_fmt(B / qv)}; completions = G * B / q = {_fmt(ans)}.",
        rel_tol=0.01, params={"p": p, "G": G, "B": B}, count=True,
        slips=slips.dynamic_sampling(p, G, B),
        page="theory/05-degenerate-groups#the-cost-of-dynamic-sampling",
    )


def _budget_prompts(rng: random.Random) -> Question:
    budget, G = rng.choice((256, 512, 1024)), rng.choice((2, 4, 8, 16, 32, 64))
    ans = int(theory.fixed_budget_prompts(budget, G))
    return Question(
        "budget_prompts",
        f"A fixed budget of {budget} completions per step. With G = {G}, how many prompts "
        "fit in one step?",
        ans,
        f"prompts = budget / G = {budget} / {G} = {ans}; the effective batch prompts x G "
        "stays at the budget.",
        integer=True, params={"budget": budget, "G": G},
        page="theory/04-cost-of-g#a-fixed-budget-prompts-g",
    )


def _budget_informative(rng: random.Random) -> Question:
    budget, G = rng.choice((256, 512)), rng.choice((2, 4, 8, 16, 32))
    p = rng.choice((0.05, 0.1, 0.2, 0.5, 0.9))
    B = int(theory.fixed_budget_prompts(budget, G))
    ans = theory.expected_informative_prompts(p, G, B)
    qv = theory.informative_probability(p, G)
    return Question(
        "budget_informative",
        f"A fixed budget of {budget} completions per step, G = {G}, every prompt has pass "
        f"rate p = {p}. How many groups per step carry signal, on average?",
        ans,
        f"prompts B = {budget}/{G} = {B}; each is informative with q = 1 - p^G - (1-p)^G "
        f"= {_fmt(qv)}; E[#informative] = B * q = {_fmt(ans)}.",
        rel_tol=0.01, abs_tol=0.05, params={"budget": budget, "G": G, "p": p}, count=True,
        slips=slips.budget_informative(budget, G, p),
        page="theory/04-cost-of-g#a-fixed-budget-prompts-g",
    )


def _rloo_factor(rng: random.Random) -> Question:
    G = rng.choice((2, 3, 4, 5, 8, 10, 16, 64))
    ans = theory.rloo_scale_factor(G)
    return Question(
        "rloo_factor",
        f"G = {G}. GRPO's centred reward r_i - mean equals c times RLOO's leave-one-out "
        "advantage r_i - mean_(-i). What is c?",
        ans,
        f"r_i - mean = ((G-1)/G) (r_i - mean_(-i)), so c = {G - 1}/{G} = {_fmt(ans)} "
        "(Dr. GRPO, arXiv 2503.20783, App. A).",
        rel_tol=0.005, params={"G": G},
        page="theory/02-baseline-variance#leave-one-out-the-g1-g-relation",
    )


def _ddof_ratio(rng: random.Random) -> Question:
    G = rng.choice((2, 3, 4, 5, 8, 16))
    ans = math.sqrt(G / (G - 1))
    return Question(
        "ddof_ratio",
        f"G = {G}, std-normalized advantages, eps ignored. By what factor is an advantage "
        "computed with np.std (ddof = 0) larger than one computed with the unbiased std "
        "(ddof = 1, as in TRL)?",
        ans,
        f"std_ddof0 = std_ddof1 * sqrt((G-1)/G), so the ratio is sqrt(G/(G-1)) = "
        f"sqrt({G}/{G - 1}) = {_fmt(ans)}.",
        rel_tol=0.005, params={"G": G}, page="theory/06-normalization#eps-and-ddof-conventions",
    )


def _uniform_difficulty(rng: random.Random) -> Question:
    G = rng.choice((2, 4, 8, 16, 32, 64))
    ans = theory.beta_zero_variance_probability(G, 1.0, 1.0)
    return Question(
        "uniform_difficulty",
        f"Prompt pass rates are spread uniformly over [0, 1]. With G = {G}, what fraction of "
        "groups has zero variance (all rewards equal), on average over prompts?",
        ans,
        f"E[p^G + (1-p)^G] with p ~ Uniform(0, 1) = 1/(G+1) + 1/(G+1) = 2/{G + 1} = "
        f"{_fmt(ans)}: it falls like 1/G, not exponentially, because easy and hard prompts "
        "keep zero variance.",
        abs_tol=0.002, params={"G": G}, page="theory/03-zero-variance#averaging-over-difficulty",
    )


def _concept(rng: random.Random) -> Question:
    """A conceptual question: one of the registry's multiple-choice exercises, with the
    explanation of the option chosen (grpolab.drill.exercises checks it)."""
    from grpolab.drill import exercises

    ex = rng.choice(exercises.list_exercises("conceptual"))
    options = "\n".join(f"  ({k}) {v}" for k, v in (ex.choices or {}).items())
    return Question("concept", f"{ex.question}\n{options}\n(answer with a letter)", float("nan"),
                    ex.solution, exercise=ex.id, params={"exercise": ex.id}, topic=ex.topic)


#: Question kinds: name -> generator(random.Random) -> Question.
KINDS: dict[str, Callable[[random.Random], Question]] = {
    "zero_variance": _zero_variance,
    "any_success": _any_success,
    "min_group_for_success": _min_group_for_success,
    "baseline_variance": _baseline_variance,
    "binary_advantage": _binary_advantage,
    "dynamic_sampling": _dynamic_sampling,
    "budget_prompts": _budget_prompts,
    "budget_informative": _budget_informative,
    "rloo_factor": _rloo_factor,
    "ddof_ratio": _ddof_ratio,
    "uniform_difficulty": _uniform_difficulty,
    "concept": _concept,
}


def generate_questions(n: int, seed: int, kinds: list[str] | None = None) -> list[Question]:
    """``n`` questions drawn with ``random.Random(seed)``; same seed, same questions.

    Kinds are dealt from a shuffled deck, so a short quiz covers different kinds.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    names = list(KINDS) if not kinds else list(dict.fromkeys(kinds))
    unknown = [k for k in names if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown question kind {unknown[0]!r}; choose from {', '.join(KINDS)}")
    rng = random.Random(seed)
    out: list[Question] = []
    deck: list[str] = []
    while len(out) < n:
        if not deck:
            deck = names[:]
            rng.shuffle(deck)
        out.append(KINDS[deck.pop()](rng))
    return out


@dataclass
class SessionResult:
    """Score of a (possibly interrupted) session."""

    asked: int = 0
    correct: int = 0
    interrupted: bool = False

    def line(self) -> str:
        """The score as one line, e.g. ``score: 4/5 (80%)``."""
        pct = 100.0 * self.correct / self.asked if self.asked else 0.0
        return f"score: {self.correct}/{self.asked} ({pct:.0f}%)"


def check_choice(question: Question, raw: str) -> tuple[bool | None, str]:
    """A conceptual question's verdict on ``raw``: (right?, the chosen option's explanation);
    (None, what to type) when ``raw`` is not one of the letters."""
    from grpolab.drill import exercises

    ex = exercises.get(question.exercise)
    ok, message = ex.checker(raw)
    if not ok and message.startswith("answer with one of the letters"):
        return None, message.rstrip(".")
    return ok, message


def run_session(questions: list[Question], answers: Iterator[str], out: TextIO, *,
                interactive: bool) -> SessionResult:
    """Ask each question, read an answer from ``answers``, say right or wrong and why.

    Interactively a non-numeric answer (a non-letter, for a conceptual question) re-prompts;
    ``s`` skips (counted wrong) and ``q`` or end of input stops. Non-interactively (answers
    from a file or a pipe) every line is one answer: an unreadable line is counted wrong with
    a message, and missing lines count as unanswered. A wrong answer that matches a usual slip
    (:mod:`grpolab.drill.slips`) is told which. Every text goes through
    :func:`grpolab.drill.terminal.plain`, so no LaTeX reaches the terminal. Ctrl-C
    (KeyboardInterrupt) ends the session: the result then has ``interrupted=True`` and the
    score of the questions answered so far.
    """
    result = SessionResult()
    n = len(questions)
    try:
        for i, q in enumerate(questions, 1):
            print(f"\nQuestion {i}/{n} [{q.kind}]", file=out)
            print(plain(q.text), file=out)
            value: float | None = None
            verdict: bool | None = None
            note = ""
            while True:
                try:
                    raw = next(answers)
                except StopIteration:
                    raw = None
                if raw is None:
                    if interactive:
                        print("\n(end of input)", file=out)
                        return result
                    note = "no answer given"
                    break
                raw = raw.strip()
                if not interactive:
                    print(f"answer> {raw}", file=out)
                if interactive and raw.lower() in ("q", "quit", "exit"):
                    return result
                if raw.lower() in ("s", "skip", ""):
                    note = "skipped"
                    break
                if q.exercise:
                    verdict, why = check_choice(q, raw)
                    if verdict is not None:
                        note = why
                        break
                    exc_text = why
                else:
                    try:
                        value = parse_answer(raw)
                        verdict = is_correct(q, value)
                        break
                    except ValueError as exc:
                        exc_text = str(exc)
                if interactive:
                    print(f"  {exc_text}; try again (s = skip, q = quit)", file=out)
                    continue
                note = f"{exc_text}; counted as wrong"
                break
            result.asked += 1
            if q.exercise:
                if verdict:
                    result.correct += 1
                    print("  RIGHT.", file=out)
                else:
                    said = "" if verdict is False else f" ({note})"
                    print(f"  WRONG{said}.", file=out)
                if verdict is not None:
                    print(_indent(f"this option: {plain(note)}"), file=out)
                print(_indent(f"why: {plain(q.explanation)}"), file=out)
                print(f"  {result.line()}", file=out)
                continue
            shown = q.answer if not q.integer else int(round(q.answer))
            tol = ("exact" if q.integer else f"accepted within +/- {_fmt(q.tolerance)}"
                   + (", or rounded to a whole number" if q.count else ""))
            if verdict:
                result.correct += 1
                print(f"  RIGHT. answer: {_fmt(shown)} ({tol})", file=out)
            else:
                said = note if value is None else f"you said {_fmt(value)}"
                print(f"  WRONG ({said}). answer: {_fmt(shown)} ({tol})", file=out)
                slip = slip_for(q, value) if value is not None else None
                if slip is not None:
                    print(_indent(f"slip: {plain(slip.message)}"), file=out)
            print(_indent(f"why: {plain(q.explanation)}"), file=out)
            print(f"  {result.line()}", file=out)
    except KeyboardInterrupt:
        result.interrupted = True
    return result


def _indent(text: str) -> str:
    """Two spaces in front, as the rest of the transcript (a multi-line text keeps its lines)."""
    return "\n".join("  " + line for line in text.splitlines())
