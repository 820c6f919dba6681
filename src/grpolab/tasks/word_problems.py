"""Arithmetic word problems for an instruct model, with a binary reward.

A :class:`WordProblemTask` implements :class:`grpolab.tasks.base.Task`: seeded prompts in
four difficulty levels, a held-out evaluation split, and a 0/1 reward that is 1 exactly
when the number extracted from the completion equals the answer.

Difficulty levels (larger is harder):

1. one step, one-digit numbers ("Tom has 3 apples and buys 5 more ...");
2. one step, two-digit numbers, or a small product;
3. two steps with two-digit numbers (buy, then give away);
4. three steps, or a result below zero (temperatures), with larger numbers.

An instruct model must see a question through its chat template. ``Prompt.text`` is what
the model sees, so ``WordProblemTask(chat_template="smollm2")`` stores the *rendered*
prompt there (system turn, user turn, ``<|im_start|>assistant``) and every sampler, census
and evaluation in the package works unchanged; ``Prompt.question`` keeps the bare
question. With ``chat_template=None`` (default) ``text`` is the bare question, and
:func:`render_prompt` / :meth:`WordProblemTask.render` apply a tokenizer's template later.

The extraction, :func:`extract_answer`, is deliberately forgiving about *format* ("The
answer is 42", "42.", "**42**", "$42", "= 42", "1,234", "-7", "#### 42", "\\boxed{42}",
trailing words) and strict about *value*: the reward checks the number, not the wording.

Derived in: book/labs/02-smollm2.md ("The task").
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from grpolab._validate import as_positive_int
from grpolab.tasks.arithmetic import MAX_PROMPTS
from grpolab.tasks.base import Prompt, Task

__all__ = [
    "WordPrompt", "WordProblemTask", "load_chat_tokenizer", "get_task", "extract_answer",
    "answer_matches", "chat_messages", "render_prompt", "INSTRUCTION", "LEVELS",
]

INSTRUCTION = "Answer with a single number."
LEVELS = (1, 2, 3, 4)

@dataclass(frozen=True)
class WordPrompt(Prompt):
    """A :class:`grpolab.tasks.arithmetic.Prompt` that also keeps the bare question (``text`` may be
    the chat-rendered prompt)."""

    question: str = ""


_NAMES = ("Tom", "Anna", "Ben", "Maria", "Sam", "Lena", "Omar", "Yuki", "Priya", "Jack",
          "Nora", "Luis", "Ella", "Ravi", "Mia", "Noah")
_ITEMS = ("apples", "marbles", "stickers", "books", "pencils", "cookies", "coins", "cards",
          "stamps", "shells", "balloons", "oranges")


def _one_step(rng: random.Random, lo: int, hi: int) -> tuple[str, int]:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a, b = rng.randint(lo, hi), rng.randint(lo, hi)
    if rng.random() < 0.5:
        return (f"{name} has {a} {item} and gets {b} more. "
                f"How many {item} does {name} have now?", a + b)
    a, b = max(a, b), min(a, b)
    return (f"{name} has {a} {item} and gives away {b}. "
            f"How many {item} does {name} have left?", a - b)


def _product(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    boxes, per = rng.randint(2, 9), rng.randint(2, 12)
    return (f"{name} has {boxes} boxes with {per} {item} in each box. "
            f"How many {item} does {name} have in total?", boxes * per)


def _two_step(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    c = rng.randint(1, a + b)
    return (f"{name} has {a} {item}, buys {b} more, then gives {c} to a friend. "
            f"How many {item} does {name} have now?", a + b - c)


def _three_step(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    boxes, per = rng.randint(3, 12), rng.randint(11, 30)
    extra = rng.randint(10, 99)
    lost = rng.randint(1, boxes * per + extra)
    return (f"{name} buys {boxes} boxes of {per} {item}, finds {extra} more, "
            f"then loses {lost}. How many {item} does {name} have?",
            boxes * per + extra - lost)


def _below_zero(rng: random.Random) -> tuple[str, int]:
    start, drop = rng.randint(1, 15), rng.randint(5, 30)
    if drop <= start:
        drop = start + rng.randint(1, 15)
    return (f"In the morning it was {start} degrees. By night the temperature fell by "
            f"{drop} degrees. What was the temperature at night, in degrees?", start - drop)


def _make(rng: random.Random, level: int) -> tuple[str, int]:
    if level == 1:
        return _one_step(rng, 1, 9)
    if level == 2:
        return _product(rng) if rng.random() < 0.3 else _one_step(rng, 10, 99)
    if level == 3:
        return _two_step(rng)
    return _below_zero(rng) if rng.random() < 0.3 else _three_step(rng)


class WordProblemTask(Task):
    """Seeded arithmetic word problems with an exact-value binary reward.

    Args:
        levels: difficulty levels to draw from (subset of 1, 2, 3, 4); each gets an equal
            share of both splits.
        n_train, n_eval: split sizes; no question appears in both.
        seed: the prompts are a deterministic function of all arguments.
        instruction: appended to every question (the default asks for a single number).
        chat_template: ``None`` keeps ``text`` the bare question; ``"smollm2"`` (or a
            tokenizer directory / hub id) renders it through that tokenizer's chat template.
    """

    name = "word_problems"

    def __init__(self, levels=LEVELS, n_train: int = 400, n_eval: int = 100, seed: int = 0,
                 instruction: str = INSTRUCTION, chat_template: str | None = None):
        levels = tuple(sorted({int(as_positive_int(v, "levels")) for v in
                               (levels if hasattr(levels, "__iter__") else [levels])}))
        bad = [v for v in levels if v not in LEVELS]
        if not levels or bad:
            raise ValueError(f"levels must be a non-empty subset of {LEVELS}, got {bad or levels}")
        n_train = as_positive_int(n_train, "n_train", maximum=MAX_PROMPTS)
        n_eval = as_positive_int(n_eval, "n_eval", maximum=MAX_PROMPTS)
        seed = as_positive_int(seed, "seed", minimum=0, maximum=2**32 - 1)
        if not isinstance(instruction, str) or len(instruction) > 1000:
            raise ValueError(f"instruction must be a string of at most 1000 characters, got "
                             f"{instruction!r:.60}")
        if chat_template is not None and (not isinstance(chat_template, str) or not chat_template):
            raise ValueError(f"chat_template must be 'smollm2', a tokenizer folder or hub id, or "
                             f"null, got {chat_template!r:.60}")
        self.levels, self.seed, self.instruction = levels, seed, instruction
        self.chat_template = chat_template
        tokenizer = load_chat_tokenizer(chat_template) if chat_template else None
        rng = random.Random(f"{self.name}-{levels}-{seed}")
        seen: set[str] = set()
        train: list[Prompt] = []
        evals: list[Prompt] = []
        for i, level in enumerate(levels):
            n_t = n_train // len(levels) + (i < n_train % len(levels))
            n_e = n_eval // len(levels) + (i < n_eval % len(levels))
            made: list[Prompt] = []
            misses = 0  # consecutive duplicates: the level's space of questions is used up
            while len(made) < n_t + n_e:
                question, value = _make(rng, level)
                question = f"{question} {instruction}".strip()
                if question in seen:
                    misses += 1
                    if misses > 20_000:
                        raise ValueError(f"cannot make {n_t + n_e} distinct level-{level} "
                                         "problems; ask for fewer prompts")
                    continue
                misses = 0
                seen.add(question)
                text = (render_prompt(tokenizer, question) if tokenizer is not None
                        else question)
                made.append(WordPrompt(text=text, answer=str(value), difficulty=level,
                                       question=question))
            evals += made[:n_e]
            train += made[n_e:]
        rng.shuffle(train)
        rng.shuffle(evals)
        self.train_prompts, self.eval_prompts = train, evals

    def correct(self, prompt: Prompt, completion: str) -> bool:
        """True when the number extracted from the completion equals the answer."""
        return answer_matches(completion, prompt.answer)

    def reward(self, prompt: Prompt, completion: str) -> float:
        """Binary reward: 1.0 if :meth:`correct`, else 0.0."""
        return float(self.correct(prompt, completion))

    def render(self, tokenizer, prompt: Prompt) -> str:
        """The string the model sees: ``text`` when already rendered, else the question
        through ``tokenizer``'s chat template (:func:`render_prompt`)."""
        if self.chat_template:
            return prompt.text
        return render_prompt(tokenizer, prompt)

    def messages(self, prompt: Prompt) -> list[dict[str, str]]:
        """The prompt as a conversation (:func:`chat_messages`), for TRL."""
        return chat_messages(prompt)


def get_task(**kwargs) -> WordProblemTask:
    """Factory used by :func:`grpolab.tasks.arithmetic.get_task` for ``"word_problems"``."""
    return WordProblemTask(**kwargs)


# --------------------------------------------------------------------------------------
# Answer extraction
# --------------------------------------------------------------------------------------
# A number: optional sign (only where it cannot be a binary minus: not right after a digit,
# letter or dot), thousands groups "1,234,567" or plain digits, optional decimals.
_NUMBER = r"(?<![\w.,])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])"
_NUMBER_RE = re.compile(_NUMBER)
# Explicit answer markers, strongest evidence first. Each captures the number after it.
_MARKERS = [
    re.compile(r"\\boxed\{\s*\$?\s*(" + _NUMBER + r")"),
    re.compile(r"####\s*\$?\s*(" + _NUMBER + r")"),
    re.compile(r"(?:final\s+answer|answer|result)\s*(?:is|was|would\s+be|will\s+be|=|:)?"
               r"\s*[:=]?\s*(?:equal\s+to\s+)?\$?\s*(" + _NUMBER + r")", re.IGNORECASE),
]


def _normalise(text: str) -> str:
    """Remove formatting that hides a number: markdown bold/italics, LaTeX math
    delimiters, unicode minus signs, non-breaking spaces."""
    text = text.replace("\u2212", "-").replace("\u2013", "-").replace("\u00a0", " ")
    text = re.sub(r"[*_`]+", "", text)
    text = text.replace("\\(", " ").replace("\\)", " ").replace("\\[", " ").replace("\\]", " ")
    return text


def _to_decimal(token: str) -> Decimal | None:
    try:
        return Decimal(token.replace(",", "").replace(" ", ""))
    except InvalidOperation:
        return None


def extract_answer(completion: str) -> Decimal | None:
    """The number a completion gives as its answer, or None if it gives none.

    Rules, in order: the last number after an explicit marker (``\\boxed{..}``,
    ``#### ..``, "the answer is ..", "answer: .."); otherwise the last number in the text
    (a chain "3 + 5 = 8" ends in its result). Commas between thousands groups, ``$``,
    markdown emphasis and a trailing full stop are ignored; "-7" is negative, but the
    "-" in "8-5" is an operator.
    """
    if not isinstance(completion, str):
        raise ValueError(f"completion must be a string, got {type(completion).__name__}")
    text = _normalise(completion)
    for marker in _MARKERS:
        hits = marker.findall(text)
        if hits:
            return _to_decimal(hits[-1])
    numbers = _NUMBER_RE.findall(text)
    return _to_decimal(numbers[-1]) if numbers else None


def answer_matches(completion: str, answer: str | int) -> bool:
    """True when :func:`extract_answer` finds a number numerically equal to ``answer``."""
    got = extract_answer(completion)
    want = _to_decimal(str(answer))
    if want is None:
        raise ValueError(f"answer must be a number, got {answer!r}")
    return got is not None and got == want


# --------------------------------------------------------------------------------------
# Chat formatting
# --------------------------------------------------------------------------------------
def _question(prompt: Prompt | str) -> str:
    if isinstance(prompt, WordPrompt) and prompt.question:
        return prompt.question
    return prompt.text if isinstance(prompt, Prompt) else str(prompt)


def chat_messages(prompt: Prompt | str) -> list[dict[str, str]]:
    """The prompt as one user turn, the conversational format TRL and chat templates use."""
    return [{"role": "user", "content": _question(prompt)}]


def render_prompt(tokenizer, prompt: Prompt | str) -> str:
    """The prompt string an instruct model sees: its chat template with the generation
    prompt appended (for SmolLM2, a default system turn, the user turn, and
    ``<|im_start|>assistant``). Tokenizers without a chat template get the bare text."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(chat_messages(prompt), tokenize=False,
                                             add_generation_prompt=True)
    return _question(prompt)


def load_chat_tokenizer(name: str):
    """The tokenizer whose chat template renders the prompts: ``"smollm2"`` (offline, from
    :mod:`grpolab.models.smollm2`) or any tokenizer directory / hub id."""
    if name == "smollm2":
        from grpolab.models.smollm2 import load_tokenizer

        return load_tokenizer()
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name, trust_remote_code=False)
    except (OSError, ValueError) as exc:  # ValueError: it needs remote code, never run
        reason = " ".join(str(exc).split())[:200]
        raise ValueError(f"chat_template: no tokenizer grpolab can load at {name!r} ({reason})"
                         ) from exc
