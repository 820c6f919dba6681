"""The task interface every task implements: prompts with known answers, a reward, and a
held-out evaluation split.

- :class:`Prompt` — ``text`` (what the model sees), ``answer`` (the reference string),
  ``difficulty`` (an int: the task's level, e.g. the number of digits; *not* a measured pass
  rate: a regime is hard when its census says so).
- :class:`Task` — ``name``, ``train_prompts``, ``eval_prompts`` (held out: no prompt text
  appears in both), ``reward(prompt, completion) -> float`` (what GRPO optimises) and
  ``correct(prompt, completion) -> bool`` (what accuracy counts; never noisy).

Tasks: :mod:`grpolab.tasks.arithmetic`, :mod:`grpolab.tasks.word_problems`; reward wrappers:
:mod:`grpolab.tasks.rewards`; build one by name with :func:`grpolab.tasks.registry.get_task`.

**The protocol, for your own task.** A task is any object with

- ``train_prompts`` and ``eval_prompts``: non-empty lists of :class:`Prompt` (disjoint: the
  held-out accuracy is measured on ``eval_prompts``);
- ``reward(prompt, completion) -> float``: what GRPO optimises, for one completion (a
  string, the model's new tokens decoded); a group of G rewards that are all equal has no
  gradient;
- ``correct(prompt, completion) -> bool``: what accuracy and the pass-rate census count
  (subclassing :class:`Task` gives ``reward = float(correct)`` and an exact match on
  ``answer``; override either);
- optionally ``name`` (for logs), ``render(tokenizer, prompt) -> str`` (a chat template) and
  ``messages(prompt)`` (conversational prompts for TRL).

``difficulty`` groups prompts into levels: the sweep's regimes train on chosen levels (its
``mixed`` regime takes levels 1 to 3; give your prompts level 1 to use it). Name your class
``MODULE:CLASS`` or ``path/to/file.py:CLASS`` as ``--task`` of ``lab train`` and
``lab sweep`` (``--task-kwargs`` go to its constructor), or skip the class and give a JSONL
file and a reward function (task ``jsonl``, and ``lab pass-rates --dataset --reward``:
:mod:`grpolab.tasks.custom`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Prompt", "Task", "exact_match"]


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
