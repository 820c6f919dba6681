"""Tasks: deterministic splits, disjoint held-out prompts, rewards, noisy flips, registry."""

import collections

import numpy as np
import pytest

from grpolab.tasks.arithmetic import ArithmeticTask, PartialCreditArithmeticTask
from grpolab.tasks.base import Prompt, Task
from grpolab.tasks.registry import get_task
from grpolab.tasks.rewards import NoisyReward


def test_splits_are_deterministic_disjoint_and_sized():
    a = ArithmeticTask(digits=(1, 2, 3), n_train=300, n_eval=60, seed=3)
    b = ArithmeticTask(digits=(1, 2, 3), n_train=300, n_eval=60, seed=3)
    assert a.train_prompts == b.train_prompts and a.eval_prompts == b.eval_prompts
    assert len(a.train_prompts) == 300 and len(a.eval_prompts) == 60
    assert not {p.text for p in a.train_prompts} & {p.text for p in a.eval_prompts}
    c = ArithmeticTask(digits=(1, 2, 3), n_train=300, n_eval=60, seed=4)
    assert c.train_prompts != a.train_prompts


def test_answers_are_correct_and_difficulty_tracks_digits_and_steps():
    t = ArithmeticTask(digits=(1, 3), operands=(2, 3), ops="+-*", n_train=200, n_eval=40)
    for p in t.train_prompts + t.eval_prompts:
        assert p.text.endswith("=")
        assert int(p.answer) == eval(p.text[:-1])
        digits = max(len(tok) for tok in p.text[:-1].replace("-", "+").replace("*", "+")
                     .split("+"))
        steps = sum(p.text.count(o) for o in "+-*")  # operators = operands - 1
        assert p.difficulty == digits + steps - 1
    levels = collections.Counter(p.difficulty for p in t.eval_prompts)
    assert len(levels) >= 3


def test_exact_match_reward_and_partial_credit():
    t = ArithmeticTask(n_train=50, n_eval=10)
    p = Prompt("37+58=", "95", 2)
    assert t.reward(p, "95") == 1.0 and t.reward(p, " 95 ") == 1.0
    assert t.reward(p, "96") == 0.0 and t.reward(p, "") == 0.0
    pc = PartialCreditArithmeticTask(n_train=50, n_eval=10)
    assert pc.reward(p, "95") == 1.0
    assert pc.reward(p, "85") == 0.5  # units digit right
    assert pc.reward(p, "195") == pytest.approx(2 / 3)  # extra digit costs credit
    assert pc.reward(p, "") == 0.0
    assert not pc.correct(p, "85")  # accuracy stays exact


def test_noisy_reward_flips_at_rate_q_but_accuracy_stays_clean():
    base = ArithmeticTask(n_train=50, n_eval=10)
    noisy = NoisyReward(base, q=0.2, seed=0)
    p = base.train_prompts[0]
    r = np.array([noisy.reward(p, p.answer) for _ in range(4000)])
    # flips ~ Binomial(4000, 0.2): sd 0.0063, so ±0.03 is a ~5 sigma band
    assert abs((1 - r.mean()) - 0.2) < 0.03
    assert noisy.correct(p, p.answer)
    again = NoisyReward(base, q=0.2, seed=0)
    assert [again.reward(p, p.answer) for _ in range(50)] == list(r[:50])


def test_registry_and_bad_arguments():
    assert isinstance(get_task("arithmetic", n_train=20, n_eval=5), Task)
    assert isinstance(get_task("arithmetic_partial", n_train=20, n_eval=5),
                      PartialCreditArithmeticTask)
    assert get_task("arithmetic_noisy", q=0.1, n_train=20, n_eval=5).q == 0.1
    with pytest.raises(ValueError, match="task must be one of"):
        get_task("nope")
    with pytest.raises(ValueError, match="q must be a probability"):
        get_task("arithmetic_noisy", q=1.5, n_train=20, n_eval=5)
    with pytest.raises(ValueError, match="ops"):
        ArithmeticTask(ops="/")
    with pytest.raises(ValueError, match="distinct prompts"):
        ArithmeticTask(digits=(1,), n_train=100, n_eval=10)
    with pytest.raises(ValueError, match="n_train"):
        ArithmeticTask(n_train=0)
