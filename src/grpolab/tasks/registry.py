"""Every task by name: :func:`get_task`.

``arithmetic`` (exact-match 0/1), ``arithmetic_partial`` (partial credit), ``arithmetic_noisy``
(a flipped-reward wrapper), ``word_problems`` (SmolLM2's grade-school problems, built on
first use because it is larger) and ``jsonl`` (your prompts and reward function,
:class:`grpolab.tasks.custom.JsonlTask`). A name of the form ``MODULE:CLASS`` or
``path/to/file.py:CLASS`` is your own Task class, called with the task's keyword arguments
(:mod:`grpolab.tasks.custom`).
"""

from __future__ import annotations

import difflib
import inspect

from grpolab.tasks import custom
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
    "jsonl": custom.JsonlTask,
}
TASK_NAMES = tuple(sorted(TASKS))


def _nearest(name, known) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _parameters(name: str) -> dict[str, inspect.Parameter]:
    if custom.is_import_name(name):
        return custom.parameters(name)
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
    if name == "jsonl" and isinstance(kwargs.get("path"), str):
        try:
            task = custom.JsonlTask(**kwargs)
        except (TypeError, ValueError):
            return 0, 0  # check_task says why, naming it
        return len(task.train_prompts), len(task.eval_prompts)
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
    if custom.is_import_name(name):
        custom.load_callable(name, flag)  # one line when it does not import or is no callable
    elif not isinstance(name, str) or name not in TASKS:
        raise ValueError(f"{flag} must be one of {', '.join(TASK_NAMES)}, got {name!r}"
                         + (_nearest(name, TASKS) if isinstance(name, str) else ""))
    if not isinstance(kwargs, dict):
        raise ValueError(f"{flag}-kwargs must be a JSON object, got {kwargs!r}")
    known = task_arguments(name)
    takes_any = False  # your own task may take **kwargs: then any name is its to check
    if custom.is_import_name(name):
        try:
            sig = inspect.signature(custom.load_callable(name, flag))
            takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
        except (TypeError, ValueError):  # a callable without a signature (a C builtin)
            takes_any = True
    if name == "jsonl":
        for key, what in (("path", "the JSONL file"), ("reward", "MODULE:FUNCTION")):
            if not isinstance(kwargs.get(key), str):
                raise ValueError(f"{flag}-kwargs: task 'jsonl' needs {key!r} ({what}), e.g. "
                                 '\'{"path": "prompts.jsonl", "reward": "my_reward.py:reward"}\'')
        custom.load_callable(kwargs["reward"], f"{flag}-kwargs reward")
        custom.read_prompts(kwargs["path"], f"{flag}-kwargs path")
    for key in kwargs if not takes_any else ():
        if key not in known:
            raise ValueError(f"{flag}-kwargs: task {name!r} takes no argument {key!r}"
                             f"{_nearest(key, known)}; it takes {', '.join(known)}")


def get_task(name: str, **kwargs) -> Task:
    """Build the task registered under ``name`` with keyword arguments ``kwargs``."""
    if custom.is_import_name(name):
        make = custom.load_callable(name, "--task")
        try:
            task = make(**kwargs)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"--task {name}: {' '.join(str(exc).split())[:200]}") from None
        return custom.check_task_object(task, name)
    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASK_NAMES)}; got {name!r}")
    return TASKS[name](**kwargs)
