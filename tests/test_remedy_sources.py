"""grpolab.labs.remedies.sources: the remedies' bookkeeping, against a scripted RunState
(no model): which groups dynamic sampling with carry trains on, and which rows update
each prompt's pass-rate estimate."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np

from grpolab.grpo.loop import Batch
from grpolab.labs.remedies import sources
from grpolab.labs.remedies.remedy import Remedy


class ScriptedState:
    """A RunState stand-in: fresh prompt ids for every draw, and each draw's groups
    rewarded by ``pattern`` (one row of G rewards per prompt, cycled)."""

    def __init__(self, B: int, G: int, pattern: list[list[float]], n_prompts: int = 10_000):
        self.config = SimpleNamespace(prompts_per_step=B, num_generations=G)
        self.tokenizer = SimpleNamespace(pad_token_id=0)
        self.census = np.full((n_prompts, 4), 0.5) > np.array([0.2, 0.4, 0.6, 0.8])
        self.train_prompts = [SimpleNamespace(difficulty=1)] * n_prompts
        self._ids = itertools.count()
        self._pattern = itertools.cycle(pattern)

    def next_prompts(self, n: int, pool=None) -> list[int]:
        return [next(self._ids) for _ in range(n)]

    def rollout(self, idx, sizes, info=None) -> Batch:
        rewards = np.concatenate([np.asarray(next(self._pattern), float)[:g] for g in sizes])
        return Batch(None, rewards, list(idx), list(sizes), int(sum(sizes)), dict(info or {}))


def _merge_without_tensors(parts, pad_id, completions, info=None) -> Batch:
    """merge_batches's bookkeeping (which groups, in which order) without the tensors."""
    idx, sizes, rewards = [], [], []
    for b, groups in parts:
        starts = np.cumsum([0] + b.group_sizes)[:-1]
        for gi in groups:
            idx.append(b.prompt_idx[gi])
            sizes.append(b.group_sizes[gi])
            rewards.append(b.rewards[starts[gi]:starts[gi] + b.group_sizes[gi]])
    return Batch(None, np.concatenate(rewards) if rewards else np.zeros(0), idx, sizes,
                 completions, info or {})


def test_carry_never_trains_on_a_group_twice(monkeypatch):
    """Three of every four groups are informative, so each step's last draw keeps some
    groups and carries the rest. A carried group is one that was *not* kept: every
    generated group (a fresh prompt id) is trained on at most once, and the carry is used."""
    monkeypatch.setattr(sources, "merge_batches", _merge_without_tensors)
    state = ScriptedState(B=4, G=2, pattern=[[1, 0], [1, 0], [1, 0], [1, 1]])
    src = sources.make_source(Remedy(source="dynamic_sampling_carry", max_batches=4))
    src.start(state)
    trained = []
    for _ in range(6):
        batch = src.next_batch(state)
        assert len(batch.prompt_idx) == 4  # B informative groups every step
        trained += batch.prompt_idx
    assert len(trained) == len(set(trained)), "a group was trained on twice"
    assert src.summary()["carried_groups_used"] > 0


def test_observe_updates_each_group_from_its_own_rows():
    """Two groups in one batch, one all-correct and one all-wrong: the first prompt's
    estimate rises and the second's falls (each from its own rows)."""
    state = ScriptedState(B=2, G=3, pattern=[[1, 1, 1], [0, 0, 0]], n_prompts=4)
    src = sources.make_source(Remedy(source="none"))
    src.start(state)
    before = src.estimates.p.copy()
    src.observe(Batch(None, np.array([1.0, 1, 1, 0, 0, 0]), [2, 3], [3, 3], 6))
    after = src.estimates.p
    assert after[2] > before[2] and after[3] < before[3]
    assert after[0] == before[0] and after[1] == before[1]
