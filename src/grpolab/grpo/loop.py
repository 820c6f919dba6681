"""One GRPO run, the whole loop in one place (grpolab's own backend).

    until steps (or completion_budget) are spent:
        batch     ← batches.next_batch(state)        which prompts, which G, which groups:
                                                     uniform by default; the remedy labs plug
                                                     in dynamic sampling, curricula, adaptive G
        rewards   ← task.reward(prompt, completion)  (grpolab.tasks; wrappers change rewards)
        A         ← group-relative advantages        (grpolab.advantages)
        update    ← num_iterations clipped-surrogate steps        (grpolab.grpo.loss)
        log       ← reward, zero-variance groups observed vs predicted, grad norm, KL,
                    entropy, completions, tokens, wall time; held-out accuracy every
                    eval_every completions and at the end

The configuration is :class:`grpolab.grpo.config.GRPOConfig`; setup is
:mod:`grpolab.grpo.setup`; the zero-variance bookkeeping is
:class:`grpolab.grpo.measure.ZeroVarianceMonitor` and the log :class:`grpolab.grpo.records.RunLog`,
the same pieces TRL's backend (:mod:`grpolab.grpo.trl_backend`) uses. Which backend runs a
config is chosen once, in :func:`grpolab.grpo.backends.train`.

What differs between labs plugs in through one seam, :class:`BatchSource` (as d2l's
``Trainer`` has ``prepare_batch``): the sweep uses the base class's uniform batches; each remedy
lab has its own subclass (:mod:`grpolab.labs.remedies.sources`).

Derived in: book/theory/01-grpo-in-one-page.md (the objective); book/labs/01-g-sweep.md.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
from dataclasses import dataclass, field

import numpy as np
import torch

from grpolab.advantages import mixed_group_advantages
from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.loss import grpo_update, per_token_logprobs
from grpolab.grpo.measure import ZeroVarianceMonitor, evaluate, rewards_of
from grpolab.grpo.records import RunLog
from grpolab.grpo.rollout import Rollout, merge_rollouts, sample
from grpolab.grpo.setup import prepare_run, starting_census

__all__ = ["Batch", "BatchSource", "RunState", "train", "merge_batches", "make_optimizer"]


# ----------------------------------------------------------------------------- the seam
@dataclass
class Batch:
    """What one step trains on, rows prompt-major.

    ``rollout`` holds the kept groups (None when a step kept none, e.g. dynamic sampling found
    no informative group before its cap: :meth:`empty`); ``rewards`` their flat rewards;
    ``prompt_idx``/``group_sizes`` one entry per kept group, in the order of the rows.
    ``completions`` counts every completion generated this step, kept or not (what the budget
    pays for).
    """

    rollout: Rollout | None
    rewards: np.ndarray
    prompt_idx: list[int]
    group_sizes: list[int]
    completions: int
    info: dict = field(default_factory=dict)

    @classmethod
    def empty(cls, completions: int, info: dict | None = None) -> Batch:
        """A step that generated ``completions`` but kept no group: no update."""
        return cls(None, np.zeros(0), [], [], completions, info or {})

    @property
    def trainable(self) -> bool:
        return self.rollout is not None and len(self.rewards) > 0


def merge_batches(parts: list[tuple[Batch, list[int]]], pad_id: int, completions: int,
                  info: dict | None = None) -> Batch:
    """One batch of chosen groups (``(batch, group indices)`` pairs, in that order) of several
    batches, e.g. the informative groups that dynamic sampling kept from its draws."""
    rows, rewards, idx, sizes = [], [], [], []
    for b, groups in parts:
        starts = np.cumsum([0] + b.group_sizes)[:-1]
        sel = [r for gi in groups for r in range(starts[gi], starts[gi] + b.group_sizes[gi])]
        rows.append((b.rollout, sel))
        rewards.append(b.rewards[sel])
        idx += [b.prompt_idx[gi] for gi in groups]
        sizes += [b.group_sizes[gi] for gi in groups]
    if not idx:
        return Batch.empty(completions, info)
    return Batch(merge_rollouts(rows, pad_id), np.concatenate(rewards), idx, sizes,
                 completions, info or {})


class BatchSource:
    """How a step's batch is chosen. This base class is the default, uniform batches:
    ``prompts_per_step`` prompts from seeded shuffles of the training set, G each (the
    sweep). Each remedy subclasses it and overrides :meth:`next_batch` (and may use
    :meth:`start`, :meth:`after_step`, :meth:`summary`); the loop does the rest."""

    name = "uniform"

    def start(self, state: RunState) -> None:
        """Called once, after the census and before the first step."""

    def next_batch(self, state: RunState) -> Batch:
        B, G = state.config.prompts_per_step, state.config.num_generations
        return state.rollout(state.next_prompts(B), [G] * B)

    def after_step(self, state: RunState, batch: Batch) -> None:
        """Called after each step's update (and evaluation, if one was due)."""

    def summary(self) -> dict:
        """Extra entries for the run's ``summary.json``."""
        return {}


# ----------------------------------------------------------------------------- run state
class RunState:
    """A run in progress: what a :class:`BatchSource` may read and use."""

    def __init__(self, config, task, train_prompts, model, tokenizer, device, census):
        self.config, self.task, self.train_prompts = config, task, train_prompts
        self.model, self.tokenizer, self.device, self.census = model, tokenizer, device, census
        self.gen = torch.Generator(device=device).manual_seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.sampling = dict(temperature=config.temperature, top_p=config.top_p,
                             max_new_tokens=config.max_completion_length)
        self.step = self.completions = self.tokens = 0
        self._order: list[int] = []

    def done(self) -> bool:
        """Whether the run's budget (completions) or its steps are spent."""
        budget = self.config.completion_budget
        return self.completions >= budget if budget else self.step >= self.config.steps

    def next_prompts(self, k: int, pool: np.ndarray | None = None) -> list[int]:
        """``k`` training-prompt indices: the next ones of seeded shuffles of the training
        set, or ``k`` distinct draws from ``pool``."""
        if pool is not None:
            return self.rng.choice(pool, size=min(k, pool.size), replace=False).tolist()
        while len(self._order) < k:
            self._order += self.rng.permutation(len(self.train_prompts)).tolist()
        idx, self._order = self._order[:k], self._order[k:]
        return idx

    def rollout(self, idx: list[int], sizes: list[int], info: dict | None = None) -> Batch:
        """Sample group ``sizes[j]`` for prompt ``idx[j]`` (one sampler call per distinct
        size) and score it. The rows come grouped by size (ascending), then in ``idx`` order;
        the returned batch's ``prompt_idx``/``group_sizes`` follow the rows."""
        parts, rewards, order = [], [], []
        for g in sorted(set(sizes)):
            sel = [i for i, s in zip(idx, sizes, strict=True) if s == g]
            prompts = [self.train_prompts[i] for i in sel]
            r = sample(self.model, self.tokenizer, [p.text for p in prompts], g,
                       generator=self.gen, **self.sampling)
            parts.append((r, list(range(len(r.texts)))))
            rewards.append(rewards_of(self.task, prompts, r.texts, g))
            order += [(i, g) for i in sel]
        roll = parts[0][0] if len(parts) == 1 else merge_rollouts(parts,
                                                                  self.tokenizer.pad_token_id)
        rw = rewards[0] if len(rewards) == 1 else np.concatenate(rewards)
        return Batch(roll, rw, [i for i, _ in order], [g for _, g in order], len(rw), info or {})


def eval_schedule(config: GRPOConfig):
    """The completion counts at which held-out evaluations fall due, in order: ``eval_at``,
    else every ``eval_every`` completions (the run also evaluates at its end)."""
    if config.eval_at:
        yield from config.eval_at
        yield from itertools.repeat(math.inf)
    yield from itertools.count(config.eval_every, config.eval_every)


@torch.no_grad()
def kl_to(model, reference, roll: Rollout, temperature: float) -> float:
    """Mean per-token k3 estimate of KL(π_θ ‖ π_ref) on a rollout's completions."""
    args = (roll.prompt_ids, roll.prompt_mask, roll.completion_ids, roll.completion_mask,
            temperature)
    lp, _ = per_token_logprobs(model, *args)
    lr, _ = per_token_logprobs(reference, *args)
    delta = lr - lp
    m = roll.completion_mask.to(lp.dtype)
    return float(((torch.exp(delta) - delta - 1) * m).sum() / m.sum().clamp(min=1))


# ----------------------------------------------------------------------------- the run
def make_optimizer(model, config: GRPOConfig) -> torch.optim.Optimizer:
    """The run's optimizer (``config.optimizer``): AdamW with weight decay 0 (every lab), or
    plain SGD (no momentum), whose step is ``learning_rate`` times the clipped gradient, so
    a G-dependent gradient scale reaches the step (AdamW divides it out; design C,
    book/labs/06-mechanism.md)."""
    if config.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=config.learning_rate)
    return torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)


def train(config: GRPOConfig, out_dir: str | os.PathLike, *, cache_dir: str | None = None,
          census: np.ndarray | None = None, batches: BatchSource | None = None, task=None,
          progress: bool = True, extra: dict | None = None, save_model: bool = False) -> dict:
    """Train one policy with GRPO; write ``log.jsonl`` and ``summary.json`` to ``out_dir``.

    ``census``: a precomputed (n_train, ≥ census_samples) pass/fail matrix of the starting
    policy (a sweep computes it once for all its runs); measured here when ``None``.
    ``batches``: how each step's batch is chosen (default: :class:`BatchSource`, uniform).
    ``task``: a task object that overrides ``config.task`` (the remedy labs' reward wrappers).
    ``save_model=True`` also saves the trained policy to ``out_dir/model``.
    """
    from tqdm.auto import tqdm

    config.validate()
    setup = prepare_run(config, out_dir, cache_dir, progress, task=task)
    model, tokenizer = setup.model, setup.tokenizer
    census = starting_census(config, setup, census)
    monitor = ZeroVarianceMonitor(census, config.pass_rate_window_size)
    # The frozen starting policy: the KL reference when β > 0, and always the yardstick of
    # the logged "kl_to_warm_start" (so β = 0 runs report their drift too).
    start_policy = copy.deepcopy(model).eval()
    ref_model = start_policy if config.beta != 0 else None
    torch.manual_seed(config.seed)
    state = RunState(config, setup.task, setup.train_prompts, model, tokenizer, setup.device,
                     census)
    eval_gen = torch.Generator(device=setup.device).manual_seed(10_000 + config.seed)
    optimizer = make_optimizer(model, config)
    batches = batches or BatchSource()
    batches.start(state)

    def held_out() -> dict:
        return evaluate(model, tokenizer, setup.task, setup.eval_prompts,
                        samples=config.eval_samples, generator=eval_gen, **state.sampling)

    log = RunLog(setup.out_dir)
    log.write({"step": 0, "completions": 0, "tokens": 0, "seconds": 0.0, **held_out()})
    schedule = eval_schedule(config)
    next_eval, last_roll = next(schedule), None
    budget = config.completion_budget
    bar = tqdm(total=budget or config.steps, disable=not progress, leave=False,
               desc=f"{batches.name} G={config.num_generations} seed={config.seed}")
    while not state.done():
        state.step += 1
        batch = batches.next_batch(state)
        if batch.completions <= 0:  # would loop forever at a fixed completion budget
            raise RuntimeError(f"batch source {batches.name!r} generated nothing at step "
                               f"{state.step}")
        state.completions += batch.completions
        bar.update(batch.completions if budget else 1)
        rec = {"step": state.step, "completions": state.completions,
               "completions_step": batch.completions, **batch.info}
        if batch.trainable:
            rw = batch.rewards
            rec.update(monitor.observe(rw, batch.group_sizes, batch.prompt_idx))
            advantages = mixed_group_advantages(
                torch.as_tensor(rw, dtype=torch.float32), batch.group_sizes,
                scale=config.scale_rewards, baseline=config.advantage_baseline,
                ddof=config.advantage_ddof, eps=config.advantage_eps)  # float32, as TRL
            metrics = grpo_update(model, optimizer, batch.rollout, advantages,
                                  ref_model=ref_model, num_iterations=config.num_iterations,
                                  epsilon=config.epsilon, epsilon_high=config.epsilon_high,
                                  beta=config.beta, loss_type=config.loss_type,
                                  temperature=config.temperature,
                                  max_grad_norm=config.max_grad_norm,
                                  max_completion_length=config.max_completion_length)
            if not all(math.isfinite(v) for v in metrics.values()):
                raise FloatingPointError(f"non-finite GRPO metrics at step {state.step}: "
                                         f"{metrics}; lower --learning-rate")
            state.tokens += batch.rollout.tokens_generated
            last_roll = batch.rollout
            rec.update(reward_mean=float(rw.mean()), reward_std=float(rw.std()),
                       tokens=state.tokens,
                       completion_length_mean=batch.rollout.tokens_generated / len(rw),
                       **metrics)
        if state.completions >= next_eval or state.done():
            if last_roll is not None:  # the latest completions that were trained on
                rec["kl_to_warm_start"] = kl_to(model, start_policy, last_roll,
                                                config.temperature)
            rec.update(held_out())
            while next_eval <= state.completions:
                next_eval = next(schedule)
        batches.after_step(state, batch)
        rec["seconds"] = log.elapsed()
        log.write(rec)
    bar.close()
    if save_model:
        model.save_pretrained(os.path.join(setup.out_dir, "model"))
        tokenizer.save_pretrained(os.path.join(setup.out_dir, "model"))
    return log.summary(config, device=setup.device, source=setup.source,
                       monitor_summary=monitor.summary(),
                       extra={"batches": batches.name, **batches.summary(), **(extra or {})})
