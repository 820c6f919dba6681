"""Your own prompts and verifier: a JSON-lines task, and tasks named ``MODULE:CLASS``.

Two ways to run grpolab's labs (the pass-rate census, ``lab train``, ``lab sweep``) on your
data instead of the built-in tasks:

1. **A JSONL file and a reward function** (task ``jsonl``, :class:`JsonlTask`). One JSON
   object per line::

       {"prompt": "12+7=", "answer": "19", "prompt_id": "add-0001", "level": 1}

   ``prompt`` (a non-empty string) is required; ``prompt_id`` (default: the line number),
   ``answer`` (default: ``""``), ``difficulty`` (an integer ≥ 1, default 1) and
   ``split`` (``"train"`` or ``"eval"``; when no line says ``"eval"``, the last fifth of the
   lines is held out) are optional, and every other key is yours. The reward is a Python
   function named ``MODULE:FUNCTION`` (a module importable from the current folder) or
   ``path/to/file.py:FUNCTION``::

       def reward(prompt: str, completion: str, **fields) -> float:   # in [0, 1]
           return float(completion.strip() == fields["answer"])

   ``fields`` are the line's other keys (``answer``, ``prompt_id``, ``difficulty`` and
   yours; TRL hands its reward functions the dataset's extra columns the same way), so take
   ``**fields`` and read the ones you need. A completion *passes* when its reward is above
   0.5: the census counts passes, held-out accuracy too.

       grpolab lab pass-rates --dataset prompts.jsonl --reward my_reward.py:reward --out runs/p
       grpolab lab train --preset cpu-quick --task jsonl \\
           --task-kwargs '{"path": "prompts.jsonl", "reward": "my_reward.py:reward"}' ...

2. **A Task class** named ``MODULE:CLASS`` (or ``path/to/file.py:CLASS``) as ``--task``; the
   class (or any callable) is called with ``--task-kwargs`` and must return a
   :class:`grpolab.tasks.base.Task`: ``train_prompts`` and ``eval_prompts`` (lists of
   :class:`~grpolab.tasks.base.Prompt`), ``reward(prompt, completion) -> float`` and
   ``correct(prompt, completion) -> bool`` (see :mod:`grpolab.tasks.base`).

Every error in these inputs (a name that does not import or is not callable, a line that is
not JSON, a line without a prompt) is one ``ValueError`` naming it, raised when the config
is validated: before any model is loaded.

Derived in: book/capstone/02-choose-g-for-your-run.md ("3. Your own prompts and verifier").
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grpolab.tasks.base import Prompt, Task

__all__ = ["JsonlTask", "RecordPrompt", "load_callable", "read_prompts", "is_import_name",
           "MAX_LINES"]

#: Most lines of a prompt file (the labs hold every prompt in memory; a million is far
#: beyond a census or a small run).
MAX_LINES = 10**6
#: The keys of a line that grpolab reads itself; the rest go to the reward as they are.
KNOWN_KEYS = ("prompt", "prompt_id", "answer", "difficulty", "split")


def is_import_name(name) -> bool:
    """Whether a task or reward name has the ``MODULE:NAME`` / ``file.py:NAME`` form."""
    return isinstance(name, str) and ":" in name


def load_callable(spec: str, flag: str = "--reward"):
    """The object named by ``MODULE:NAME`` (``MODULE`` importable from the current folder)
    or ``path/to/file.py:NAME``; a ValueError naming ``flag`` when it does not import, has
    no such name or is not callable."""
    if not is_import_name(spec):
        raise ValueError(f"{flag} must be MODULE:NAME or path/to/file.py:NAME, got {spec!r}")
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr.isidentifier():
        raise ValueError(f"{flag} must be MODULE:NAME or path/to/file.py:NAME, got {spec!r}")
    try:
        module = _import(module_name)
    except Exception as exc:  # the user's module may raise anything while it imports
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise ValueError(f"{flag} {spec}: cannot import {module_name!r} ({reason})") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise ValueError(f"{flag} {spec}: {module_name!r} has no {attr!r}")
    if not callable(obj):
        raise ValueError(f"{flag} {spec}: {attr!r} is not callable (it is of type "
                         f"{type(obj).__name__})")
    return obj


def _import(module_name: str):
    """Import a module by dotted name (the current folder first on the path) or by file."""
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no file {module_name}")
        key = f"grpolab_user_{abs(hash(str(path)))}"  # one module per file, loaded once
        if key in sys.modules:
            return sys.modules[key]
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
        return module
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # `python -m` and console scripts may lack it
    return importlib.import_module(module_name)


@dataclass(frozen=True)
class RecordPrompt(Prompt):
    """A prompt read from a JSONL line: its id and the line's other fields (for the reward)."""

    prompt_id: str = ""
    fields: dict = field(default_factory=dict, compare=False, hash=False)


_CACHE: dict[tuple, list[RecordPrompt]] = {}


def read_prompts(path, flag: str = "--dataset") -> list[RecordPrompt]:
    """The prompts of a JSONL file, one JSON object per line (blank lines skipped); a
    ValueError naming the file and line for anything else. Cached by path, size and time."""
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(path, str) or not path:
        raise ValueError(f"{flag} must be a path to a .jsonl file, got {path!r}")
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        _CACHE.clear()  # one file at a time is all a run needs
        _CACHE[key] = _parse(path, flag)
    return _CACHE[key]


def _parse(path: str, flag: str) -> list[RecordPrompt]:
    prompts: list[RecordPrompt] = []
    ids: set[str] = set()
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if len(prompts) >= MAX_LINES:
                    raise ValueError(f"{flag} {path}: more than {MAX_LINES} prompts")
                prompts.append(_record(path, n, line, flag))
                pid = prompts[-1].prompt_id
                if pid in ids:
                    raise ValueError(f"{flag} {path}, line {n}: prompt_id {pid!r} repeats")
                ids.add(pid)
    except UnicodeDecodeError:
        raise ValueError(f"{flag} {path}: not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if not prompts:
        raise ValueError(f"{flag} {path}: no prompts (one JSON object per line, each with a "
                         "\"prompt\")")
    return prompts


def _record(path: str, n: int, line: str, flag: str) -> RecordPrompt:
    where = f"{flag} {path}, line {n}"
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{where}: not JSON ({getattr(exc, 'msg', 'nested too deeply')})") \
            from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: must be a JSON object with a \"prompt\", got "
                         f"{type(row).__name__}")
    text = row.get("prompt")
    if not isinstance(text, str) or not text:
        raise ValueError(f"{where}: no \"prompt\" (a non-empty string)"
                         + (f"; its keys are {', '.join(sorted(row))}" if row else ""))
    answer = row.get("answer", "")
    level = row.get("difficulty", 1)
    if isinstance(level, bool) or not isinstance(level, int) or level < 1:
        raise ValueError(f"{where}: \"difficulty\" must be an integer >= 1, got {level!r}")
    split = row.get("split", "train")
    if split not in ("train", "eval"):
        raise ValueError(f"{where}: \"split\" must be \"train\" or \"eval\", got {split!r}")
    pid = row.get("prompt_id", str(n))
    if not isinstance(pid, str | int) or isinstance(pid, bool):
        raise ValueError(f"{where}: \"prompt_id\" must be a string or an integer, got {pid!r}")
    fields = {k: v for k, v in row.items() if k != "prompt"}
    fields.setdefault("answer", answer)
    fields["prompt_id"] = str(pid)
    return RecordPrompt(text=text, answer=str(answer), difficulty=level, prompt_id=str(pid),
                        fields=fields)


class JsonlTask(Task):
    """Your prompts (a JSONL file) scored by your reward function (see the module docstring).

    Args:
        path: the JSONL file.
        reward: ``MODULE:FUNCTION`` or ``path/to/file.py:FUNCTION``, called as
            ``reward(prompt_text, completion, **fields) -> float`` in [0, 1].
    """

    name = "jsonl"

    def __init__(self, path: str = "", reward: str = ""):
        self._reward = load_callable(reward, "--reward")
        prompts = read_prompts(path)
        held = [p for p in prompts if p.fields.get("split") == "eval"]
        if held:
            self.train_prompts = [p for p in prompts if p.fields.get("split") != "eval"]
            self.eval_prompts = held
        else:  # no split column: hold out the last fifth (at least one line)
            cut = len(prompts) - max(1, len(prompts) // 5)
            self.train_prompts, self.eval_prompts = prompts[:cut], prompts[cut:]
        self.all_prompts = prompts
        self.reward_name = reward

    def reward(self, prompt: RecordPrompt, completion: str) -> float:
        """Your function's reward, checked: a finite number in [0, 1]."""
        try:
            value = self._reward(prompt.text, completion, **prompt.fields)
        except Exception as exc:  # your function's own error: one line naming it and the prompt
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            raise ValueError(f"--reward {self.reward_name} failed on prompt_id "
                             f"{prompt.prompt_id!r} ({reason})") from None
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or not 0 <= value <= 1):
            raise ValueError(f"--reward {self.reward_name} returned {value!r} for prompt_id "
                             f"{prompt.prompt_id!r}; it must return a number in [0, 1]")
        return float(value)

    def correct(self, prompt: RecordPrompt, completion: str) -> bool:
        """A pass: reward above 0.5 (what the census counts)."""
        return self.reward(prompt, completion) > 0.5


def check_task_object(task, spec: str) -> Task:
    """``task`` when it has what a Task needs; else a ValueError naming ``spec``."""
    missing = [a for a in ("train_prompts", "eval_prompts", "reward", "correct")
               if not hasattr(task, a)]
    if missing:
        raise ValueError(f"--task {spec} built a {type(task).__name__} without "
                         f"{', '.join(missing)}: a task is a grpolab.tasks.base.Task")
    for split in ("train_prompts", "eval_prompts"):
        prompts = getattr(task, split)
        if not isinstance(prompts, list) or not prompts or not all(
                isinstance(p, Prompt) for p in prompts):
            raise ValueError(f"--task {spec}: {split} must be a non-empty list of "
                             "grpolab.tasks.base.Prompt")
    return task


def parameters(spec: str) -> dict[str, inspect.Parameter]:
    """The keyword arguments the callable named ``spec`` takes."""
    make = load_callable(spec, "--task")
    try:
        params = inspect.signature(make).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"}
