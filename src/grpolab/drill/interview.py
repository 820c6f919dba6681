"""A mock interview: an opening question, follow-ups as the cards chain them, rubric scoring.

:func:`plan` picks the steps of a session from the chains in ``rubrics.json``, favouring
what the progress file says was missed (Leitner boxes, :mod:`grpolab.drill.progress`).
:func:`run_interview` asks them one by one:

- a conceptual item: the candidate types an answer (one line), then sees the rubric and
  types the numbers of the points hit (``1 3``, ``a`` = all, empty = none); then the
  30-second answer and the trap answer with why it is wrong;
- a numeric item (a registry exercise or a randomized quiz question): checked
  automatically with the same tolerance and explanation as ``grpolab quiz``.

Each finished item is recorded and the progress file saved at once, so an interrupted
session keeps what was answered. The result holds a score per topic and the pages to
reread. ``grpolab drill`` (grpolab.cli.drill) is a thin wrapper around it.

Derived in: book/interview/01-model-answers.md (the answers), book/interview/02-exercises.md
(the numeric items).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

from grpolab.drill import exercises, quiz
from grpolab.drill.progress import Progress
from grpolab.drill.rubrics import Item, Rubrics, built_page
from grpolab.drill.terminal import plain

__all__ = ["QUIZ_TOPICS", "InterviewResult", "Step", "parse_ticks", "plan", "run_interview"]

#: The theory topic each quiz question kind drills.
QUIZ_TOPICS = {
    "zero_variance": "zero-variance", "any_success": "zero-variance",
    "min_group_for_success": "zero-variance", "uniform_difficulty": "zero-variance",
    "baseline_variance": "baseline-variance", "rloo_factor": "baseline-variance",
    "binary_advantage": "normalization", "ddof_ratio": "normalization",
    "dynamic_sampling": "degenerate-groups", "budget_prompts": "cost-of-g",
    "budget_informative": "cost-of-g", "concept": "choosing-g",
}
PASS_FRACTION = 0.75  # a conceptual item counts as known at ≥ 75% of its rubric points


@dataclass(frozen=True)
class Step:
    """One step of a session: the chain it belongs to, its id, and whether it opens it."""

    chain: str
    id: str
    opening: bool = False

    @property
    def numeric(self) -> bool:
        return self.id.startswith(("exercise:", "quiz:"))


def plan(rubrics: Rubrics, progress: Progress, *, chain: str | None = None,
         max_items: int | None = None, review_all: bool = False) -> list[Step]:
    """The steps of one session, in interview order.

    Chains with missed items come first, then chains with more due items. Within a chain
    the opening question is always asked, then every due step in the chain's order (all
    steps with ``review_all``). If nothing is due anywhere, the first chain is asked in full.
    ``max_items`` cuts the session short.
    """
    chains = [rubrics.chain(chain)] if chain else list(rubrics.chains)

    def due(step: str) -> bool:
        return review_all or progress.is_due(step, progress.sessions + 1)

    def priority(c) -> tuple:
        return (-sum(progress.was_missed(s) and due(s) for s in c.steps),
                -sum(due(s) for s in c.steps), -min(progress.box(s) for s in c.steps))

    steps: list[Step] = []
    for c in sorted(chains, key=priority):  # stable: ties keep the file's order
        follow = [s for s in c.steps[1:] if due(s)]
        if not follow and not due(c.steps[0]):
            continue
        steps.append(Step(c.id, c.steps[0], opening=True))
        steps += [Step(c.id, s) for s in follow]
    if not steps:
        first = sorted(chains, key=priority)[0]
        steps = [Step(first.id, s, opening=(i == 0)) for i, s in enumerate(first.steps)]
    return steps[:max_items] if max_items else steps


def parse_ticks(text: str, n: int) -> list[int]:
    """The rubric points ticked, 1-based: ``"1 3"``, ``"1,3"``, ``"a"`` (all), ``""`` (none).

    Raises ValueError for anything else, or a number outside 1..n.
    """
    s = text.strip().lower().replace(",", " ")
    if s in ("", "-", "none", "0", "n"):
        return []
    if s in ("a", "all"):
        return list(range(1, n + 1))
    out = []
    for tok in s.split():
        # isascii: "²" is a digit to str.isdigit; the length bound keeps int() cheap
        if not (tok.isascii() and tok.isdigit() and len(tok) <= 6) or not 1 <= int(tok) <= n:
            raise ValueError(f"tick the points by number, 1 to {n} (e.g. '1 3'), 'a' for all "
                             f"or nothing for none; got {tok!r}")
        out.append(int(tok))
    return sorted(set(out))


@dataclass
class InterviewResult:
    """Scores per topic (points hit, points possible), pages to reread, and how it ended."""

    topics: dict[str, list[float]] = field(default_factory=dict)
    reread: dict[str, str] = field(default_factory=dict)  # page -> why
    asked: int = 0
    interrupted: bool = False
    ended_early: bool = False

    def add(self, topic: str, got: float, possible: float) -> None:
        t = self.topics.setdefault(topic, [0.0, 0.0])
        t[0] += got
        t[1] += possible

    def lines(self) -> list[str]:
        """The summary: one line per topic, the overall score, and the pages to reread."""
        if not self.asked:
            return ["no item was answered"]
        out = ["score by topic:"]
        for topic, (got, possible) in sorted(self.topics.items()):
            out.append(f"  {topic:<20} {got:g}/{possible:g} ({100 * got / possible:.0f}%)")
        got = sum(v[0] for v in self.topics.values())
        possible = sum(v[1] for v in self.topics.values())
        out.append(f"overall: {got:g}/{possible:g} ({100 * got / possible:.0f}%) over "
                   f"{self.asked} item(s)")
        if self.reread:
            out.append("pages to reread:")
            out += [f"  {built_page(page)}  ({plain(why)})" for page, why in self.reread.items()]
        else:
            out.append("pages to reread: none; every point was hit")
        return out


class _EndOfInput(Exception):
    pass


def _wrap(text: str, indent: str = "  ") -> str:
    import textwrap

    return textwrap.fill(text, width=92, initial_indent=indent, subsequent_indent=indent)


def run_interview(steps: list[Step], rubrics: Rubrics, answers: Iterator[str], out: TextIO, *,
                  interactive: bool, progress: Progress, seed: int = 0) -> InterviewResult:
    """Ask every step, score it, record it in ``progress`` (saved after each item).

    Interactively ``q`` quits, a bad tick list re-prompts, and end of input stops. From a
    file or pipe every conceptual item reads two lines (the answer, then the ticks) and a
    numeric item one; the end of the lines ends the session. Ctrl-C (KeyboardInterrupt)
    ends it with ``interrupted=True`` and the score so far.
    """
    result = InterviewResult()
    rng = random.Random(seed)
    progress.start_session()

    def read(prompt: str) -> str:
        if interactive:
            out.write(prompt)
            out.flush()
        try:
            raw = next(answers)
        except StopIteration:
            raise _EndOfInput from None
        raw = raw.strip()
        if not interactive:
            print(f"{prompt}{raw}", file=out)
        if interactive and raw.lower() in ("q", "quit", "exit"):
            raise _EndOfInput
        return raw

    try:
        for i, step in enumerate(steps, 1):
            if step.numeric:
                topic, got, possible, page, why = _ask_numeric(step, i, len(steps), rubrics, read,
                                                               out, rng)
                passed = got == possible
                missed_pages = {page: why} if not passed else {}
            else:
                item = rubrics.items[step.id]
                topic = item.topic
                hits = _ask_conceptual(item, step, i, len(steps), read, out, interactive)
                got, possible = float(len(hits)), float(len(item.rubric))
                passed = len(hits) >= math.ceil(PASS_FRACTION * len(item.rubric))
                missed_pages = {p.chapter: f"{item.id}: {p.point}"
                                for k, p in enumerate(item.rubric, 1) if k not in hits}
            result.asked += 1
            result.add(topic, got, possible)
            for page, why in missed_pages.items():
                result.reread.setdefault(page, why)
            progress.record(step.id, passed, got / possible)
            progress.save()
            print(f"  [{topic}] {got:g}/{possible:g}; "
                  f"{'box up' if passed else 'back to box 1'} "
                  f"(box {progress.box(step.id)})", file=out)
    except _EndOfInput:
        result.ended_early = True
        print("\n(end of input)", file=out)
    except KeyboardInterrupt:
        result.interrupted = True
    return result


def _header(step: Step, i: int, n: int, topic: str, out: TextIO) -> None:
    what = ("opening question" if step.opening else
            "numbers" if step.numeric else "follow-up")
    print(f"\n--- {i}/{n} · {what} · {topic} ({step.chain}) ---", file=out)


def _ask_conceptual(item: Item, step: Step, i: int, n: int, read, out: TextIO,
                    interactive: bool) -> list[int]:
    _header(step, i, n, item.topic, out)
    print(f"Interviewer: {plain(item.question)}", file=out)
    read("your answer> ")
    print("\nRubric: which of these points did your answer make?", file=out)
    for k, p in enumerate(item.rubric, 1):
        print(f"  {k}. {plain(p.point)}  [{built_page(p.chapter)}]", file=out)
    while True:
        raw = read("points hit (e.g. 1 3; a = all; enter = none)> ")
        try:
            hits = parse_ticks(raw, len(item.rubric))
            break
        except ValueError as exc:
            if interactive:
                print(f"  {exc}", file=out)
                continue
            print(f"  {exc}; counted as none", file=out)
            hits = []
            break
    print("30-second answer:", file=out)
    print(_wrap(plain(item.answer_30s)), file=out)
    print(f"Trap answer: \"{plain(item.trap)}\"", file=out)
    print(_wrap(f"Why it is wrong: {plain(item.why_wrong)}"), file=out)
    return hits


def _ask_numeric(step: Step, i: int, n: int, rubrics: Rubrics, read, out: TextIO,
                 rng: random.Random):
    if step.id.startswith("exercise:"):
        ex = exercises.get(step.id[len("exercise:"):])
        topic = ex.topic if ex.topic in rubrics.topics else "choosing-g"
        _header(step, i, n, topic, out)
        print(f"Interviewer: {plain(ex.question)}", file=out)
        raw = read("answer> ")
        res = exercises.check(ex.id, raw)
        print(f"  {'RIGHT' if res.correct else 'WRONG'}: {plain(res.message)}", file=out)
        if not res.correct:
            print(_wrap(f"Solution: {plain(ex.solution)}"), file=out)
        page = rubrics.topics[topic]
        return topic, float(res.correct), 1.0, page, f"{step.id}: {ex.title}"
    kind = step.id[len("quiz:"):]
    q = quiz.KINDS[kind](rng)
    topic = q.topic if q.topic in rubrics.topics else QUIZ_TOPICS.get(kind, "choosing-g")
    _header(step, i, n, topic, out)
    print(f"Interviewer: {plain(q.text)}", file=out)
    raw = read("answer> ")
    if q.exercise:  # a conceptual (multiple-choice) question
        verdict, message = quiz.check_choice(q, raw)
        ok = bool(verdict)
        print(f"  {'RIGHT' if ok else 'WRONG'}: {plain(message)}", file=out)
    else:
        value = None
        try:
            value = quiz.parse_answer(raw)
            ok = quiz.is_correct(q, value)
            said = f"you said {raw}"
        except ValueError as exc:
            ok, said = False, str(exc)
        shown = int(round(q.answer)) if q.integer else q.answer
        print(f"  {'RIGHT' if ok else 'WRONG'} ({said}). answer: {shown:g}", file=out)
        slip = quiz.slip_for(q, value) if value is not None and not ok else None
        if slip is not None:
            print(_wrap(f"slip: {plain(slip.message)}"), file=out)
    print(_wrap(f"why: {plain(q.explanation)}"), file=out)
    return (topic, float(ok), 1.0, q.page or rubrics.topics[topic],
            f"{step.id}: {kind} question")
