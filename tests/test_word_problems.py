"""grpolab.tasks.word_problems: answer extraction, the binary reward, the seeded prompt sets."""

from __future__ import annotations

from decimal import Decimal

import pytest

from grpolab.tasks.base import Task
from grpolab.tasks.registry import get_task
from grpolab.tasks.word_problems import (
    LEVELS,
    WordProblemTask,
    answer_matches,
    chat_messages,
    extract_answer,
    render_prompt,
)


@pytest.mark.parametrize("text,expected", [
    # the formats the issue names
    ("The answer is 42", 42), ("The answer is 42.", 42), ("42.", 42), ("**42**", 42),
    ("$42", 42), ("= 42", 42), ("42", 42), ("  42  \n", 42),
    # commas, negatives, decimals, trailing text
    ("1,234", 1234), ("The total is 12,345,678 coins.", 12345678), ("-7", -7),
    ("It is -5 degrees at night.", -5), ("The temperature is \u221212 degrees.", -12),
    ("42 apples, that's it!", 42), ("42.0", 42), ("3.5", Decimal("3.5")),
    # markers beat a later number
    ("The answer is 8 because 3 + 5 = 8 and 2 is even", 8),
    ("Answer: 17 (I counted 3 times)", 17), ("answer: $1,200.", 1200),
    ("The final answer is **-3**.", -3), ("#### 72", 72), ("\\boxed{96}", 96),
    ("So the result is 15 stickers", 15), ("The answer would be 9", 9),
    # otherwise the last number: a chain ends in its result
    ("Tom has 3 + 5 = 8 apples.", 8), ("3 * 5 = 15\nTom has 15 apples.", 15),
    ("First 12, then 30, so 42", 42), ("x = 3\n\nIn", 3),
    # a minus between numbers is an operator, not a sign
    ("8-5=3", 3), ("10-4", 4),
    # markdown and LaTeX wrappers
    ("*The answer is* __7__", 7), ("\\(x = 11\\)", 11), ("`13`", 13),
])
def test_extract_answer(text, expected):
    assert extract_answer(text) == Decimal(expected)


@pytest.mark.parametrize("text", ["", "no number here", "The answer is unknown", "...", "-"])
def test_extract_answer_none(text):
    assert extract_answer(text) is None


def test_extract_answer_rejects_non_strings():
    with pytest.raises(ValueError, match="completion"):
        extract_answer(42)


@pytest.mark.parametrize("completion,answer,ok", [
    ("The answer is 42", "42", True), ("42.", "42", True), ("**42**", "42", True),
    ("$1,234", "1234", True), ("-5 degrees", "-5", True), ("5 degrees", "-5", False),
    ("The answer is 41", "42", False), ("42.5", "42", False), ("", "42", False),
    ("4 + 2 = 6, and the answer is 42", 42, True), ("420", "42", False), ("142", "42", False),
])
def test_answer_matches(completion, answer, ok):
    assert answer_matches(completion, answer) is ok


def test_answer_matches_bad_answer():
    with pytest.raises(ValueError, match="answer"):
        answer_matches("42", "forty-two")


def test_task_interface_and_binary_reward():
    task = get_task("word_problems", n_train=40, n_eval=20, seed=1)
    assert isinstance(task, WordProblemTask) and isinstance(task, Task)
    p = task.train_prompts[0]
    assert task.reward(p, f"The answer is {p.answer}.") == 1.0
    assert task.correct(p, f"**{p.answer}**")
    wrong = str(int(p.answer) + 1)
    assert task.reward(p, f"The answer is {wrong}") == 0.0
    for prompt in task.train_prompts[:10]:
        assert task.reward(prompt, "I do not know") == 0.0


def test_answers_are_right():
    """Recompute every answer from the numbers in the question (the generator's arithmetic)."""
    task = WordProblemTask(n_train=200, n_eval=40, seed=3)
    for p in task.train_prompts + task.eval_prompts:
        q = p.text
        nums = [int(x) for x in __import__("re").findall(r"\d+", q)]
        a = int(p.answer)
        if "degrees" in q:
            assert a == nums[0] - nums[1] and a < 0
        elif "boxes of" in q:
            assert a == nums[0] * nums[1] + nums[2] - nums[3]
        elif "boxes with" in q:
            assert a == nums[0] * nums[1]
        elif "then gives" in q:
            assert a == nums[0] + nums[1] - nums[2]
        elif "more" in q:
            assert a == nums[0] + nums[1]
        else:
            assert a == nums[0] - nums[1] >= 0


def test_levels_splits_and_seeding():
    task = WordProblemTask(n_train=80, n_eval=40, seed=0)
    assert {p.difficulty for p in task.train_prompts} == set(LEVELS)
    assert {p.difficulty for p in task.eval_prompts} == set(LEVELS)
    assert len(task.train_prompts) == 80 and len(task.eval_prompts) == 40
    train_texts = {p.text for p in task.train_prompts}
    assert not train_texts & {p.text for p in task.eval_prompts}, "held-out split leaks"
    assert len(train_texts) == 80
    again = WordProblemTask(n_train=80, n_eval=40, seed=0)
    assert again.train_prompts == task.train_prompts
    other = WordProblemTask(n_train=80, n_eval=40, seed=1)
    assert other.train_prompts != task.train_prompts
    easy = WordProblemTask(levels=[1], n_train=10, n_eval=5)
    assert {p.difficulty for p in easy.eval_prompts} == {1}
    assert all(p.text.endswith("Answer with a single number.") for p in easy.train_prompts)


@pytest.mark.parametrize("kwargs,match", [
    ({"levels": [5]}, "levels"), ({"levels": []}, "levels"), ({"n_train": 0}, "n_train"),
    ({"n_eval": -1}, "n_eval"), ({"levels": [1], "n_train": 100_000}, "distinct"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WordProblemTask(**kwargs)


class _ChatML:
    """A stand-in tokenizer with a ChatML chat template (no files needed)."""

    chat_template = "chatml"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        assert tokenize is False and add_generation_prompt is True
        body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return body + "<|im_start|>assistant\n"


def test_chat_rendering():
    task = WordProblemTask(n_train=4, n_eval=4)
    p = task.train_prompts[0]
    assert chat_messages(p) == [{"role": "user", "content": p.text}]
    rendered = render_prompt(_ChatML(), p)
    assert rendered == f"<|im_start|>user\n{p.text}<|im_end|>\n<|im_start|>assistant\n"
    assert task.render(_ChatML(), p) == rendered

    class Plain:
        chat_template = None

    assert render_prompt(Plain(), p) == p.text
