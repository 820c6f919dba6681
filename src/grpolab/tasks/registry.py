"""Every task by name: :func:`get_task`.

``arithmetic`` (exact-match 0/1), ``arithmetic_partial`` (partial credit), ``arithmetic_noisy``
(a flipped-reward wrapper) and ``word_problems`` (SmolLM2's grade-school problems, built on
first use because it is larger).
"""

from __future__ import annotations

import difflib
import inspect

from grpolab.tasks.arithmetic import MAX_PROMPTS, ArithmeticTask, PartialCreditArithmeticTask
from grpolab.tasks.base import Task
from grpolab.tasks.rewards import NoisyReward

__all__ = ["get_task", "check_task", "task_arguments", "split_sizes", "TASKS", "TASK_NAMES"]


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


def _nearest(name, known) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _parameters(name: str) -> dict[str, inspect.Parameter]:
    if name == "word_problems":  # built lazily (it is larger): read the class, not the factory
        from grpolab.tasks.word_problems import WordProblemTask

        makers = [WordProblemTask]
    elif name == "arithmetic_noisy":
        makers = [_noisy_arithmetic, ArithmeticTask]
    else:
        makers = [TASKS[name]]
    out: dict[str, inspect.Parameter] = {}
    for make in makers:
        for p in inspect.signature(make).parameters.values():
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
                out.setdefault(p.name, p)
    return out


def task_arguments(name: str) -> tuple[str, ...]:
    """The keyword arguments task ``name`` takes (its constructor's, through the wrappers);
    read from the signatures, so a new argument is known without a list to update."""
    return tuple(_parameters(name))


def split_sizes(name: str, kwargs: dict) -> tuple[int, int]:
    """``(n_train, n_eval)`` that task ``name`` would build from ``kwargs`` (its defaults
    where not given), without building it: for memory estimates before any work."""
    params = _parameters(name)
    sizes = []
    for arg in ("n_train", "n_eval"):
        v = kwargs.get(arg, params[arg].default if arg in params else 0)
        # a size the task refuses counts 0 here: its constructor says why, naming it
        ok = isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_PROMPTS
        sizes.append(v if ok else 0)
    return sizes[0], sizes[1]


def check_task(name, kwargs, flag: str = "--task") -> None:
    """Refuse, before any work, a task name that is not registered or a keyword argument
    the task does not take, each with the nearest valid name (a ValueError naming
    ``flag``); the values themselves are checked by the task's constructor."""
    if not isinstance(name, str) or name not in TASKS:
        raise ValueError(f"{flag} must be one of {', '.join(TASK_NAMES)}, got {name!r}"
                         + (_nearest(name, TASKS) if isinstance(name, str) else ""))
    if not isinstance(kwargs, dict):
        raise ValueError(f"{flag}-kwargs must be a JSON object, got {kwargs!r}")
    known = task_arguments(name)
    for key in kwargs:
        if key not in known:
            raise ValueError(f"{flag}-kwargs: task {name!r} takes no argument {key!r}"
                             f"{_nearest(key, known)}; it takes {', '.join(known)}")


def get_task(name: str, **kwargs) -> Task:
    """Build the task registered under ``name`` with keyword arguments ``kwargs``."""
    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASK_NAMES)}; got {name!r}")
    return TASKS[name](**kwargs)
