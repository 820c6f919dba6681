"""Every task by name: :func:`get_task`.

``arithmetic`` (exact-match 0/1), ``arithmetic_partial`` (partial credit), ``arithmetic_noisy``
(a flipped-reward wrapper) and ``word_problems`` (SmolLM2's grade-school problems, built on
first use because it is larger).
"""

from __future__ import annotations

from grpolab.tasks.arithmetic import ArithmeticTask, PartialCreditArithmeticTask
from grpolab.tasks.base import Task
from grpolab.tasks.rewards import NoisyReward

__all__ = ["get_task", "TASKS", "TASK_NAMES"]


def _noisy_arithmetic(q: float = 0.1, noise_seed: int = 0, **kwargs) -> NoisyReward:
    return NoisyReward(ArithmeticTask(**kwargs), q=q, seed=noise_seed)


def _word_problems(**kwargs) -> Task:
    from grpolab.tasks import word_problems

    return word_problems.get_task(**kwargs)


TASKS = {
    "arithmetic": ArithmeticTask,
    "arithmetic_partial": PartialCreditArithmeticTask,
    "arithmetic_noisy": _noisy_arithmetic,
    "word_problems": _word_problems,
}
TASK_NAMES = tuple(sorted(TASKS))


def get_task(name: str, **kwargs) -> Task:
    """Build the task registered under ``name`` with keyword arguments ``kwargs``."""
    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASK_NAMES)}; got {name!r}")
    return TASKS[name](**kwargs)
