"""Integer arithmetic: prompts such as ``"37+58="`` with exact-match answers.

``arithmetic`` has the exact-match 0/1 reward; ``arithmetic_partial`` the same prompts with a
partial-credit reward (:func:`partial_credit`). The noisy and length-biased variants are
reward wrappers (:mod:`grpolab.tasks.rewards`).

Derived in: book/labs/01-g-sweep.md ("The setup").
"""

from __future__ import annotations

import random
import re

import numpy as np

from grpolab._validate import as_positive_int
from grpolab.tasks.base import Prompt, Task

__all__ = ["ArithmeticTask", "PartialCreditArithmeticTask", "partial_credit", "MAX_DIGITS",
           "MAX_OPERANDS", "MAX_PROMPTS", "MAX_SEED", "OPS_GRAMMAR"]

#: Largest operand size: numbers below 10**18, so every operand is an int64 and a
#: two-operand prompt with its answer fits the tiny model's 64 positions.
MAX_DIGITS = 18
#: Most numbers per prompt (a chain of 7 operations).
MAX_OPERANDS = 8
#: Most prompts per split: a prompt costs a few hundred bytes and about 40 us to draw, so a
#: million is about 0.4 GB and under a minute; far beyond the labs' 2,000.
MAX_PROMPTS = 10**6
#: Seeds are folded into a string, so any int would do; 32 bits, like every grpolab seed.
MAX_SEED = 2**32 - 1
#: The operators: a string of 1 to 16 of the characters + - * (repeats weight the draw).
#: Only this exact grammar reaches the evaluator in :meth:`ArithmeticTask._make`.
OPS_GRAMMAR = re.compile(r"[+*-]{1,16}")


def _sizes(values, name: str, minimum: int, maximum: int) -> tuple[int, ...]:
    """A non-empty list (or one value) of distinct integers in [minimum, maximum]."""
    if isinstance(values, (str, bytes, dict)):
        raise ValueError(f"{name} must be an integer or a list of integers in [{minimum}, "
                         f"{maximum}], got {values!r}")
    seq = list(values) if isinstance(values, (list, tuple, np.ndarray)) else [values]
    if not seq or len(seq) > maximum - minimum + 1:
        raise ValueError(f"{name} must list 1 to {maximum - minimum + 1} distinct integers in "
                         f"[{minimum}, {maximum}], got {len(seq)} values")
    out = tuple(int(as_positive_int(v, name, minimum=minimum, maximum=maximum)) for v in seq)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must list each value once, got {list(out)}")
    return out


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
        digits = _sizes(digits, "digits", 1, MAX_DIGITS)
        operands = _sizes(operands, "operands", 2, MAX_OPERANDS)
        if not isinstance(ops, str) or not OPS_GRAMMAR.fullmatch(ops):
            raise ValueError(f"ops must be a string of 1 to 16 of the characters '+', '-', '*' "
                             f"(e.g. '+-'), got {ops!r}")
        n_train = as_positive_int(n_train, "n_train", maximum=MAX_PROMPTS)
        n_eval = as_positive_int(n_eval, "n_eval", maximum=MAX_PROMPTS)
        seed = as_positive_int(seed, "seed", minimum=0, maximum=MAX_SEED)
        self.digits, self.operands, self.ops, self.seed = digits, operands, ops, seed
        # Seeded by "arithmetic", not self.name: the partial-credit variant must draw the
        # same prompts, so binary vs partial-credit runs compare rewards, not prompt sets.
        rng = random.Random(f"arithmetic-{digits}-{operands}-{ops}-{seed}")
        # Each (digits, operands) level gets an equal share of both splits, except levels
        # with too few distinct prompts (1-digit sums), which give up to half their space.
        combos = sorted(((d, k) for d in digits for k in operands),
                        key=lambda c: self._capacity(*c))
        total = n_train + n_eval
        self._check_capacity(combos, total)
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

    def _check_capacity(self, combos, total: int) -> None:
        """Refuse, before a prompt is drawn, splits larger than the levels can fill: the
        quotas of the loop in ``__init__``, counted without drawing."""
        made = 0
        for i, (d, k) in enumerate(combos):
            made += min(self._capacity(d, k) // 2, -(-(total - made) // (len(combos) - i)))
        if made < total:
            raise ValueError(f"n_train + n_eval = {total} is more distinct prompts than "
                             f"digits={self.digits}, operands={self.operands}, ops={self.ops!r} "
                             f"allow (at most {made})")

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
        return partial_credit(prompt, completion)


def partial_credit(prompt: Prompt, completion: str) -> float:
    """The fraction of answer characters right, aligned from the right (units digit first),
    over the longer of the two lengths: 1.0 exactly when the answer is exact."""
    got, want = completion.strip(), prompt.answer
    if not got:
        return 0.0
    hits = sum(a == b for a, b in zip(reversed(got), reversed(want), strict=False))
    return hits / max(len(got), len(want))
