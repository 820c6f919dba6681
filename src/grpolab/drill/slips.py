"""The usual slips, named once: the wrong values a candidate typically gives, and why.

Each function takes a question's parameters and returns the :class:`Slip` values a hurried
candidate computes instead of the right answer, each with the sentence that names the
mistake. The exercise checkers (:mod:`grpolab.drill.exercises`, the book's answer boxes)
and the randomized quiz (:mod:`grpolab.drill.quiz`, ``grpolab quiz`` and ``grpolab drill``)
both read their slip messages from here, so a slip is named the same way everywhere.

Derived in: book/interview/02-exercises.md (the exercises whose checkers name these slips).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Slip", "advantage", "budget_informative", "dynamic_sampling", "match", "mistakes",
           "zero_variance"]


@dataclass(frozen=True)
class Slip:
    """A common wrong value and the sentence that says what went wrong."""

    value: float
    message: str


def _num(x: float) -> str:
    """A readable number: 8,192; 176; 0.2401 (no trailing zeros)."""
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) >= 10 else f"{x:.4g}"


def zero_variance(p: float, G: int) -> tuple[Slip, ...]:
    """P(zero variance) = p^G + (1−p)^G, given as one of its two terms (ch. 3)."""
    fail, win = (1 - p) ** G, p ** G
    if math.isclose(fail, win, rel_tol=1e-9):  # p = 0.5: both terms are the same number
        return (Slip(fail, f"{_num(fail)} is only the all-fail term (1−p)^G (at p = 0.5 it "
                     f"equals the all-pass term p^G); a group has zero variance if all fail "
                     f"or all pass, so add both: {_num(fail + win)}."),)
    return (Slip(fail, f"{_num(fail)} is only the all-fail term (1−p)^G; all-pass groups "
                 f"(p^G = {_num(win)}) have zero variance too."),
            Slip(win, f"{_num(win)} is only the all-pass term p^G; add the all-fail term "
                 f"(1−p)^G = {_num(fail)}."))


def advantage(k: int, G: int, ddof: int, correct: bool) -> tuple[Slip, ...]:
    """A = (r − mean)/std for k of G correct, with the other std convention, or unscaled (ch. 6)."""
    q = k / G
    centred = (1.0 if correct else 0.0) - q
    biased = math.sqrt(q * (1 - q))  # np.std, ddof = 0
    unbiased = biased * math.sqrt(G / (G - 1))  # TRL, verl, OpenRLHF: ddof = 1
    if ddof == 1:
        other = Slip(centred / biased, f"{_num(centred / biased)} uses np.std (ddof = 0); TRL "
                     f"divides by the unbiased std (ddof = 1), which is larger by "
                     f"√({G}/{G - 1}).")
    else:
        other = Slip(centred / unbiased, f"{_num(centred / unbiased)} uses the unbiased std "
                     f"(ddof = 1, as TRL does); the question asks for np.std (ddof = 0), "
                     f"which is smaller by √({G - 1}/{G}).")
    right = centred / (unbiased if ddof == 1 else biased)
    sign = ("an incorrect completion scores below the group mean, so its advantage is "
            "negative" if not correct else "a correct completion scores above the group mean, "
            "so its advantage is positive")
    return (other, Slip(centred, f"{_num(centred)} is the centred reward r − mean, before "
                        "dividing by the std."),
            Slip(-right, f"{_num(-right)} has the wrong sign: {sign}."))


def budget_informative(budget: int, G: int, p: float) -> tuple[Slip, ...]:
    """E[#informative groups] = (budget/G)·q at a fixed budget, miscounted (ch. 4)."""
    B = budget // G
    q = 1 - p ** G - (1 - p) ** G
    return (Slip(budget * q, f"{_num(budget * q)} multiplies the budget, not the number of "
                 f"prompts (budget/G = {B}), by q."),
            Slip(B * (1 - q), f"{_num(B * (1 - q))} counts the zero-variance groups; "
                 "informative ones are B·(1 − p^G − (1−p)^G)."),
            Slip(B * (1 - (1 - p) ** G), f"{_num(B * (1 - (1 - p) ** G))} counts the groups "
                 "with at least one success; all-pass groups carry no signal either, so "
                 "subtract B·p^G."))


def dynamic_sampling(p: float, G: int, B: int) -> tuple[Slip, ...]:
    """E[completions] = G·B/q for dynamic sampling, without the discarded groups (ch. 5)."""
    zero = p ** G + (1 - p) ** G
    fail_only = G * B / (1 - (1 - p) ** G)
    return (Slip(G * B, f"{_num(G * B)} = {G} × {B} ignores the discarded zero-variance "
                 f"groups ({100 * zero:.3g}% of them at p = {p:g}, G = {G})."),
            Slip(fail_only, f"{_num(fail_only)} forgets the all-pass groups: a group is kept "
                 "with probability q = 1 − p^G − (1−p)^G, not 1 − (1−p)^G."))


def mistakes(slips: tuple[Slip, ...]) -> list[tuple[float, str]]:
    """The slips as (value, message) pairs, the form the exercise checkers take."""
    return [(s.value, s.message) for s in slips]


def match(slips: tuple[Slip, ...], value: float, *, rel: float, abs_: float = 0.0,
          exclude: float | None = None) -> Slip | None:
    """The slip ``value`` is within tolerance of, if any.

    A slip that lies within tolerance of the right answer (``exclude``) is skipped: the
    checker cannot tell it from a right answer, so it must not call it a slip.
    """
    def near(a: float, b: float) -> bool:
        return abs(a - b) <= max(abs_, rel * abs(b)) + 1e-12

    for s in slips:
        if exclude is not None and near(s.value, exclude):
            continue
        if near(value, s.value):
            return s
    return None
