"""Verifiable tasks: prompts with known answers, a reward, and a held-out evaluation split.

The interface is deliberately small, so that other tasks (``grpolab.tasks.word_problems``)
can implement it:

- :class:`Prompt` — ``text`` (what the model sees), ``answer`` (the reference string),
  ``difficulty`` (an int; larger is harder).
- :class:`Task` — ``name``, ``train_prompts``, ``eval_prompts`` (held out: no prompt text
  appears in both), ``reward(prompt, completion) -> float`` (what GRPO optimises) and
  ``correct(prompt, completion) -> bool`` (what accuracy counts; never noisy).
- :func:`get_task` — build a task by name.

Tasks here: integer arithmetic (``arithmetic``, exact-match 0/1 reward), the same prompts
with a partial-credit reward (``arithmetic_partial``), and :class:`NoisyReward`, a wrapper
that flips a binary reward with probability q, a stand-in for an imperfect reward model
(``arithmetic_noisy``).

Derived in: book/labs/01-g-sweep.md ("The setup").
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass

import numpy as np

from grpolab._validate import as_positive_int, as_probability

__all__ = [
    "Prompt", "Task", "ArithmeticTask", "PartialCreditArithmeticTask", "NoisyReward",
    "get_task", "TASKS", "exact_match",
]


@dataclass(frozen=True)
class Prompt:
    """One verifiable prompt: the text the model sees, its reference answer, its difficulty."""

    text: str
    answer: str
    difficulty: int


def exact_match(prompt: Prompt, completion: str) -> bool:
    """True when the completion, stripped of surrounding whitespace, equals the answer."""
    return completion.strip() == prompt.answer


class Task:
    """Base class of every task. Subclasses set the four attributes and may override
    :meth:`reward` and :meth:`correct`.

    Attributes:
        name: registry name.
        train_prompts: prompts GRPO samples from.
        eval_prompts: held-out prompts for accuracy; disjoint from ``train_prompts``.
    """

    name: str = "task"
    train_prompts: list[Prompt]
    eval_prompts: list[Prompt]

    def reward(self, prompt: Prompt, completion: str) -> float:
        """The training reward; by default 1.0 for an exact match, else 0.0."""
        return float(self.correct(prompt, completion))

    def correct(self, prompt: Prompt, completion: str) -> bool:
        """Whether the completion is right; accuracy counts this, never a noisy reward."""
        return exact_match(prompt, completion)

    @property
    def difficulties(self) -> list[int]:
        """The difficulty levels present in the evaluation split, sorted."""
        return sorted({p.difficulty for p in self.eval_prompts})


class ArithmeticTask(Task):
    """Integer arithmetic such as ``"37+58="`` → ``"95"``, exact-match binary reward.

    Args:
        digits: the operand sizes to draw from, e.g. ``(1, 2, 3)``; each prompt uses one
            size for all its operands.
        operands: how many numbers per prompt (2 = one step, 3+ = multi-step), drawn
            from this tuple.
        ops: operator characters to draw from (``"+"``, ``"-"``, ``"*"``).
        n_train, n_eval: split sizes (distinct prompts; eval is disjoint from train).
        seed: the prompts are a deterministic function of all arguments.

    Difficulty = digits + (operands − 2): 1-digit sums are difficulty 1, 3-digit sums
    difficulty 3, a 2-digit three-operand chain difficulty 3.
    """

    name = "arithmetic"

    def __init__(self, digits=(1, 2, 3), operands=(2,), ops: str = "+", n_train: int = 2000,
                 n_eval: int = 300, seed: int = 0):
        digits = tuple(int(as_positive_int(d, "digits")) for d in np.atleast_1d(digits))
        operands = tuple(int(as_positive_int(k, "operands", minimum=2))
                         for k in np.atleast_1d(operands))
        if not ops or any(o not in "+-*" for o in ops):
            raise ValueError(f"ops must be a non-empty string of '+', '-', '*', got {ops!r}")
        n_train = as_positive_int(n_train, "n_train")
        n_eval = as_positive_int(n_eval, "n_eval")
        self.digits, self.operands, self.ops, self.seed = digits, operands, ops, seed
        # Seeded by "arithmetic", not self.name: the partial-credit variant must draw the
        # same prompts, so binary vs partial-credit runs compare rewards, not prompt sets.
        rng = random.Random(f"arithmetic-{digits}-{operands}-{ops}-{seed}")
        # Each (digits, operands) level gets an equal share of both splits, except levels
        # with too few distinct prompts (1-digit sums), which give up to half their space.
        combos = sorted(((d, k) for d in digits for k in operands),
                        key=lambda c: self._capacity(*c))
        total = n_train + n_eval
        train: list[Prompt] = []
        evals: list[Prompt] = []
        seen: set[str] = set()
        for i, (d, k) in enumerate(combos):
            remaining = total - len(train) - len(evals)
            quota = min(self._capacity(d, k) // 2, -(-remaining // (len(combos) - i)))
            made: list[Prompt] = []
            while len(made) < quota:
                p = self._make(rng, d, k)
                if p.text not in seen:
                    seen.add(p.text)
                    made.append(p)
            n_e = round(quota * n_eval / total)
            evals += made[:n_e]
            train += made[n_e:]
        if len(train) + len(evals) < total:
            raise ValueError(f"n_train + n_eval = {total} is more distinct prompts than "
                             f"digits={digits}, operands={operands}, ops={ops!r} allow")
        if len(evals) > n_eval:  # rounding: settle the split sizes exactly
            train += evals[n_eval:]
            evals = evals[:n_eval]
        elif len(evals) < n_eval:
            need = n_eval - len(evals)
            evals, train = evals + train[-need:], train[:-need]
        rng.shuffle(train)
        rng.shuffle(evals)
        self.train_prompts, self.eval_prompts = train[:n_train], evals[:n_eval]

    def _capacity(self, d: int, k: int) -> int:
        numbers = 10 if d == 1 else 9 * 10 ** (d - 1)
        return numbers ** k * len(set(self.ops)) ** (k - 1)

    def _make(self, rng: random.Random, d: int, k: int) -> Prompt:
        lo = 0 if d == 1 else 10 ** (d - 1)
        nums = [rng.randint(lo, 10 ** d - 1) for _ in range(k)]
        ops = [rng.choice(self.ops) for _ in range(k - 1)]
        text = str(nums[0]) + "".join(o + str(n) for o, n in zip(ops, nums[1:], strict=True)) + "="
        value = eval(text[:-1])  # noqa: S307 - digits and + - * only, built just above
        return Prompt(text=text, answer=str(value), difficulty=d + (k - 2))


class PartialCreditArithmeticTask(ArithmeticTask):
    """The arithmetic prompts with a continuous reward in [0, 1]: the fraction of answer
    characters right, aligned from the right (units digit first), divided by the longer of
    the two lengths. 1.0 exactly when the answer is exact; accuracy stays exact-match.

    Continuous rewards make an all-equal group rarer but not impossible; zero-variance
    detection uses a tolerance (:func:`grpolab.advantages.zero_variance_groups`).
    """

    name = "arithmetic_partial"

    def reward(self, prompt: Prompt, completion: str) -> float:
        got, want = completion.strip(), prompt.answer
        if not got:
            return 0.0
        hits = sum(a == b for a, b in zip(reversed(got), reversed(want), strict=False))
        return hits / max(len(got), len(want))


class NoisyReward(Task):
    """Wrap a binary-reward task and flip each reward with probability ``q``.

    A stand-in for an imperfect reward model: the expected reward becomes
    q + (1 − 2q)·p, so the pass rate GRPO sees is squeezed towards 1/2 and all-equal groups
    get rarer, but the extra variance is noise. ``correct`` stays noiseless, so accuracy
    measures the true skill. The flips come from a seeded generator (reproducible runs).
    """

    def __init__(self, base: Task, q: float, seed: int = 0):
        self.q = float(as_probability(q, "q"))
        self.base = base
        self.name = f"{base.name}_noisy"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts
        self._rng = np.random.default_rng(seed)

    def reward(self, prompt: Prompt, completion: str) -> float:
        r = self.base.reward(prompt, completion)
        return 1.0 - r if self._rng.random() < self.q else r

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


def _noisy_arithmetic(q: float = 0.1, noise_seed: int = 0, **kwargs) -> NoisyReward:
    return NoisyReward(ArithmeticTask(**kwargs), q=q, seed=noise_seed)


TASKS = {
    "arithmetic": ArithmeticTask,
    "arithmetic_partial": PartialCreditArithmeticTask,
    "arithmetic_noisy": _noisy_arithmetic,
}
# Tasks that live in their own module, imported only when asked for.
LAZY_TASKS = {"word_problems": "grpolab.tasks.word_problems"}


def get_task(name: str, **kwargs) -> Task:
    """Build the task registered under ``name`` with keyword arguments ``kwargs``.

    ``"word_problems"`` is imported lazily from :mod:`grpolab.tasks.word_problems`, which must
    define ``get_task(**kwargs)`` or a ``WordProblemTask`` class.
    """
    if name in TASKS:
        return TASKS[name](**kwargs)
    if name in LAZY_TASKS:
        module = importlib.import_module(LAZY_TASKS[name])
        factory = getattr(module, "get_task", None) or module.WordProblemTask
        return factory(**kwargs)
    known = ", ".join(sorted([*TASKS, *LAZY_TASKS]))
    raise ValueError(f"task must be one of {known}; got {name!r}")
