"""The adaptive-allocation lab's batch source and item (issue 34; book/theory/14): every rule
spends exactly the step's budget, the arms differ only in the split, zero-variance
persistence is counted right on planted visit sequences, and a rerun logs the same bytes."""

from __future__ import annotations

import json
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
import pytest

from grpolab.allocation import zero_variance_persistence
from grpolab.grpo.loop import Batch
from grpolab.labs.remedies import sources
from grpolab.labs.remedies.items import (
    ALLOCATION_ARMS,
    ALLOCATION_MEAN_G,
    ALLOCATION_PROMPTS,
    ITEMS,
    config_key,
)
from grpolab.labs.remedies.remedy import ALLOCATION_RULE_NAMES, Remedy, lab_config
from grpolab.labs.remedies.strategies import zero_variance_transitions

BUDGET = ALLOCATION_PROMPTS * ALLOCATION_MEAN_G


class PoolState:
    """A RunState stand-in over a fixed pool: seeded shuffles of the pool's prompts (as
    RunState.next_prompts) and Bernoulli rewards from each prompt's true pass rate."""

    def __init__(self, rates, B: int = ALLOCATION_PROMPTS, G: int = ALLOCATION_MEAN_G,
                 seed: int = 0, census_samples: int = 64):
        self.rates = np.asarray(rates, float)
        self.config = SimpleNamespace(prompts_per_step=B, num_generations=G,
                                      pass_rate_window_size=census_samples)
        self.rng = np.random.default_rng(seed)
        self.reward_rng = np.random.default_rng(10_000 + seed)
        draws = self.reward_rng.random((self.rates.size, census_samples))
        self.census = draws < self.rates[:, None]
        self.train_prompts = [SimpleNamespace(difficulty=1)] * self.rates.size
        self._order: list[int] = []
        self.drawn: list[list[int]] = []

    def next_prompts(self, k: int, pool=None) -> list[int]:
        while len(self._order) < k:
            self._order += self.rng.permutation(self.rates.size).tolist()
        idx, self._order = self._order[:k], self._order[k:]
        self.drawn.append(idx)
        return idx

    def rollout(self, idx, sizes, info=None) -> Batch:
        rewards = np.concatenate([(self.reward_rng.random(g) < self.rates[i]).astype(float)
                                  for i, g in zip(idx, sizes, strict=True)])
        return Batch(None, rewards, list(idx), list(sizes), int(sum(sizes)), dict(info or {}))


#: Pools where the rules disagree, and the corner cases every estimate 0, every estimate 1.
POOLS = {
    "design-b-like": np.r_[np.linspace(0.2, 0.8, 100), np.full(60, 0.0), np.full(40, 0.02)],
    "all-unsolved": np.zeros(80),
    "all-solved": np.ones(80),
    "spread": np.linspace(0.0, 1.0, 97),
}


@pytest.mark.parametrize("rule", ALLOCATION_RULE_NAMES)
@pytest.mark.parametrize("pool", sorted(POOLS))
def test_every_rule_spends_exactly_the_steps_budget(rule, pool):
    state = PoolState(POOLS[pool])
    src = sources.make_source(Remedy(source="allocation", allocation_rule=rule, G_max=64))
    src.start(state)
    for _ in range(12):
        batch = src.next_batch(state)
        assert batch.completions == BUDGET == sum(batch.group_sizes) == batch.rewards.size
        assert len(batch.group_sizes) == ALLOCATION_PROMPTS
        assert 2 <= min(batch.group_sizes) and max(batch.group_sizes) <= 64
        if rule == "uniform":
            assert set(batch.group_sizes) == {ALLOCATION_MEAN_G}
    visits = src.summary()["allocation_visits"]
    assert len(visits["prompt"]) == 12 * ALLOCATION_PROMPTS
    assert sum(visits["G"]) == 12 * BUDGET


def test_the_rules_split_the_budget_differently_on_a_mixed_pool():
    """Not a tautology of the budget test: on the mixed pool the rules give different splits
    (first-success more to hard prompts than the variance rule)."""
    rates = np.r_[np.full(16, 0.03), np.full(16, 0.5)]
    splits = {}
    for rule in ALLOCATION_RULE_NAMES:
        src = sources.make_source(Remedy(source="allocation", allocation_rule=rule, G_max=64))
        splits[rule] = src.group_sizes(rates, ALLOCATION_MEAN_G)
    assert sum(splits["first-success"][:16]) > sum(splits["variance-dr-grpo"][:16])
    assert len({tuple(s) for s in splits.values()}) >= 4


def test_the_arms_differ_only_in_the_allocation_rule():
    item = ITEMS["allocation"]
    assert tuple(item.arms) == ALLOCATION_ARMS and item.seeds == [0, 1, 2, 3]
    built = {a: item.config(a, 0) for a in item.arms}
    configs = {a: c.to_dict() for a, (c, _) in built.items()}
    assert all(c == configs["uniform"] for c in configs.values())
    cfg = built["uniform"][0]
    assert cfg.num_generations * cfg.prompts_per_step == BUDGET
    assert (cfg.advantage_baseline, cfg.scale_rewards, cfg.loss_type) == (
        "leave_one_out", "none", "dr_grpo")
    assert cfg.task_kwargs["seed"] != cfg.warmstart.task_kwargs["seed"]  # another split
    remedies = {a: asdict(r) for a, (_, r) in built.items()}
    for a, r in remedies.items():
        diff = {k for k in r if r[k] != remedies["uniform"][k]}
        assert diff == ({"allocation_rule"} if a != "uniform" else set())
        assert r["allocation_rule"] == a and (r["G_min"], r["G_max"]) == (2, 64)
    assert len({config_key(c, r) for c, r in built.values()}) == 4  # never shared in the pool


def test_the_arms_of_a_seed_see_the_same_prompts():
    """Allocation draws no random numbers, so every arm of a seed trains on the same prompt
    sequence: the arms differ in how many completions each prompt gets, not in which."""
    drawn = {}
    for rule in ALLOCATION_ARMS:
        state = PoolState(POOLS["design-b-like"], seed=3)
        src = sources.make_source(Remedy(source="allocation", allocation_rule=rule))
        src.start(state)
        for _ in range(10):
            src.next_batch(state)
        drawn[rule] = state.drawn
    assert all(d == drawn["uniform"] for d in drawn.values())


def test_a_uniform_rule_keeps_config_keys_made_before_it():
    cfg, rem = lab_config()
    assert rem.allocation_rule == "uniform"
    cfg2, rem2 = lab_config(allocation_rule="informative")
    assert config_key(cfg, rem) != config_key(cfg2, rem2)


def test_persistence_on_a_planted_visit_sequence():
    # prompt 0: Z Z N Z   -> pairs (Z,Z) (Z,N) (N,Z)
    # prompt 1: N N       -> pair (N,N)
    # prompt 2: Z         -> no pair
    prompts = [0, 1, 0, 2, 1, 0, 0]
    zero = [1, 0, 1, 1, 0, 0, 1]
    t = zero_variance_transitions(prompts, zero)
    assert (t["visits"], t["pairs"], t["zero_before"], t["zero_both"], t["zero_now"]) == (
        7, 4, 2, 1, 2)
    assert t["persistence"] == pytest.approx(1 / 2) and t["base_rate"] == pytest.approx(2 / 4)
    # a prompt that is always zero-variance and one that never is: persistence 1 > base 1/2
    t = zero_variance_transitions([0, 1] * 5, [1, 0] * 5)
    assert t["persistence"] == 1.0 and t["base_rate"] == 0.5
    # alternating outcomes: persistence 0 although half the visits are zero-variance
    t = zero_variance_transitions([0] * 6, [1, 0] * 3)
    assert t["persistence"] == 0.0 and t["base_rate"] == pytest.approx(2 / 5)
    # no zero-variance previous visit: no persistence, not a number that looks like one
    assert zero_variance_transitions([0, 0], [0, 1])["persistence"] is None


def test_persistence_prediction_is_the_pools_ez2_over_ez_at_one_G():
    rates = np.array([0.0, 0.05, 0.3, 0.5, 0.9])
    visits = list(range(5)) * 4  # every prompt visited equally often
    t = zero_variance_transitions(visits, [0] * 20, [8] * 20, rates)
    assert t["predicted"] == pytest.approx(zero_variance_persistence(rates, 8))
    # with a different G at the next visit: Σ z(p,g1) z(p,g2) / Σ z(p,g1) by hand
    t = zero_variance_transitions([3, 3], [1, 1], [2, 4], rates)
    z2, z4 = 0.5**2 * 2, 0.5**4 * 2
    assert t["predicted"] == pytest.approx(z2 * z4 / z2)


def test_persistence_matches_simulation_with_fixed_pass_rates():
    """Independent visits at fixed pass rates: the measured persistence converges to the
    prediction (a wrong formula, e.g. the base rate, is far outside the tolerance here)."""
    rng = np.random.default_rng(0)
    rates = np.r_[np.zeros(30), np.full(30, 0.1), np.full(40, 0.5)]
    prompts = np.tile(np.arange(100), 400)
    sizes = np.full(prompts.size, 4)
    k = rng.binomial(4, rates[prompts])
    t = zero_variance_transitions(prompts, (k == 0) | (k == 4), sizes, rates)
    assert t["persistence"] == pytest.approx(t["predicted"], abs=0.01)
    assert t["persistence"] - t["base_rate"] > 0.2


@pytest.mark.parametrize("args,match", [
    (([0, 1], [1]), "visits"), (([0, -1], [1, 0]), "non-negative"),
    (([0, 1], [2, 0]), "booleans"), (([0, 0], [1, 1], None, [0.5]), "group_sizes"),
    (([0, 3], [1, 1], [2, 2], [0.5]), "past the"),
])
def test_persistence_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        zero_variance_transitions(*args)


@pytest.mark.slow
def test_an_allocation_run_logs_the_same_bytes_on_rerun(tmp_path, tiny_cache):
    import torch

    from conftest import TINY_TASK, tiny_warm_start
    from grpolab.labs.remedies.sources import train_remedy

    torch.set_num_threads(1)
    cfg, rem = lab_config(task_kwargs=dict(TINY_TASK), train_difficulties=[1, 2],
                          warmstart=tiny_warm_start(), num_generations=4, prompts_per_step=4,
                          completion_budget=48, eval_every=32, max_eval_prompts=8,
                          eval_samples=2, census_samples=16, max_train_prompts=40,
                          learning_rate=1e-4, source="allocation",
                          allocation_rule="first-success", G_max=16)
    runs = [train_remedy(cfg, rem, tmp_path / name, cache_dir=tiny_cache, progress=False)
            for name in ("a", "b")]

    def log(name):
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in open(tmp_path / name / "log.jsonl")]

    assert log("a") == log("b")
    assert runs[0]["allocation_visits"] == runs[1]["allocation_visits"]
    steps = [r for r in log("a") if r["step"] > 0]
    assert all(r["completions_step"] == 16 for r in steps)
    assert all(0 <= r["informative_groups"] <= 4 for r in steps)
    assert sum(runs[0]["allocation_visits"]["G"]) == runs[0]["completions"] == 48
    assert len(runs[0]["census_successes"]) == 40 and runs[0]["census_samples"] == 16


@pytest.mark.slow
def test_the_item_aggregates_one_record_per_run(tmp_path, tiny_cache, monkeypatch):
    """A two-arm, one-seed allocation item on the tiny world: results.json gets one compact
    record per run, with per-level pass@k, completions per level that add up to the budget,
    and persistence counts that recompute from the run's own visits."""
    import torch

    from conftest import TINY_TASK, tiny_warm_start, with_warm_start
    from grpolab.grpo.records import read_json
    from grpolab.labs.remedies import items as remedy_items

    torch.set_num_threads(1)
    base = dict(task_kwargs=dict(TINY_TASK), train_difficulties=[1, 2],
                warmstart=tiny_warm_start(), num_generations=4, prompts_per_step=4,
                completion_budget=64, eval_every=32, max_eval_prompts=8, eval_samples=4,
                census_samples=16, max_train_prompts=12, learning_rate=1e-4,
                source="allocation", G_max=16)
    item = remedy_items.LabItem("allocation", "toy allocation",
                                arms={"uniform": {"allocation_rule": "uniform"},
                                      "first-success": {"allocation_rule": "first-success"}},
                                base=base, seeds=[0])
    monkeypatch.setitem(ITEMS, "allocation", item)
    out = with_warm_start(tmp_path / "alloc", tiny_cache)
    res = remedy_items.run_item("allocation", out, cache_dir=str(out / "cache"),
                                progress=False, log=lambda m: None)
    rows = {r["arm"]: r for r in res["allocation_runs"]}
    assert sorted(rows) == ["first-success", "uniform"]
    for arm, row in rows.items():
        assert sum(row["completions_by_level"].values()) == row["completions"] == 64
        assert set(row["final_pass_at_k"]) == {"1", "2"}
        for by_k in row["final_pass_at_k"].values():
            assert by_k["1"] <= by_k["4"]  # pass@k grows with k
        summ = read_json(str(out / "runs" / arm / "seed0" / "summary.json"), "summary")
        v = summ["allocation_visits"]
        zero = [k in (0, g) for k, g in zip(v["successes"], v["G"], strict=True)]
        again = zero_variance_transitions(v["prompt"], zero)
        assert row["zero_variance"]["pairs"] == again["pairs"] > 0
        assert row["zero_variance"]["zero_both"] == again["zero_both"]
