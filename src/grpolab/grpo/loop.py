"""One GRPO run, the whole loop in one place.

    until steps (or completion_budget) are spent:
        batch     ← batches.next_batch(run)          which prompts, which G, which groups:
                                                     uniform by default; the remedy labs plug
                                                     in dynamic sampling, curricula, adaptive G
        rewards   ← task.reward(prompt, completion)  (grpolab.tasks; wrappers change rewards)
        A         ← group-relative advantages        (grpolab.advantages)
        update    ← num_iterations clipped-surrogate steps        (grpolab.grpo.loss)
        log       ← reward, zero-variance groups observed vs predicted, grad norm, KL,
                    entropy, completions, tokens, wall time; held-out accuracy every
                    eval_every completions and at the end

The configuration is :class:`grpolab.grpo.config.GRPOConfig`. ``backend="trl"`` hands the
run to :mod:`grpolab.grpo.trl_backend`, which logs rows with the same names.

What differs between labs plugs in through one seam, :class:`BatchSource` (as d2l's
``Trainer`` has ``prepare_batch``): the sweep uses the base class's uniform batches; the
remedy labs (:mod:`grpolab.labs.remedies.run`) subclass it.

Predicted zero-variance fraction: each training prompt keeps a window of its most recent
``census_samples`` binary rewards (seeded by a census of the starting policy). Before a
step, the prediction for a prompt is the unbiased estimate of p^G + (1 − p)^G from that
window (:func:`grpolab.theory.unbiased_zero_variance_estimate`; the plug-in p̂^G runs
high at large G); the step's own rewards enter the window afterwards.

Derived in: book/theory/01-grpo-in-one-page.md (the objective); book/labs/01-g-sweep.md.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from grpolab.advantages import group_advantages, zero_variance_groups
from grpolab.grpo.config import GRPOConfig, training_prompts
from grpolab.grpo.loss import grpo_update, per_token_logprobs
from grpolab.grpo.measure import PassRateWindow, evaluate, pass_rate_census, rewards_of
from grpolab.grpo.records import provenance, write_json_atomic
from grpolab.grpo.rollout import Rollout, merge_rollouts, sample

__all__ = ["Batch", "BatchSource", "Run", "run", "load_policy",
           "training_prompts", "prepare_run", "advantages_of"]


# ----------------------------------------------------------------------------- the seam
@dataclass
class Batch:
    """What one step trains on.

    ``rollout`` holds the kept groups (None when a step kept none, e.g. dynamic sampling
    found no informative group before its cap); ``rewards`` their flat prompt-major
    rewards; ``prompt_idx``/``group_sizes`` one entry per kept group. ``completions`` counts
    every completion generated this step, kept or not (what the budget pays for).
    """

    rollout: Rollout | None
    rewards: np.ndarray
    prompt_idx: list[int]
    group_sizes: list[int]
    completions: int
    info: dict = field(default_factory=dict)


class BatchSource:
    """How a step's batch is chosen. This base class is the default, uniform batches:
    ``prompts_per_step`` prompts from seeded shuffles of the training set, G each (the
    sweep). Remedies subclass it and override :meth:`next_batch` (and may use
    :meth:`start`, :meth:`after_step`, :meth:`summary`); the loop does the rest."""

    name = "uniform"

    def start(self, run: Run) -> None:
        """Called once, after the census and before the first step."""

    def next_batch(self, run: Run) -> Batch:
        B, G = run.config.prompts_per_step, run.config.num_generations
        idx = run.next_prompts(B)
        rollout, rewards = run.rollout(idx, [G] * B)
        return Batch(rollout, rewards, idx, [G] * B, len(rewards))

    def after_step(self, run: Run, batch: Batch) -> None:
        """Called after each step's update (and evaluation, if one was due)."""

    def summary(self) -> dict:
        """Extra entries for the run's ``summary.json``."""
        return {}


# ----------------------------------------------------------------------------- setup
def load_policy(config: GRPOConfig, cache_dir: str, device, progress: bool = False):
    """The starting policy ``(model, tokenizer, description)`` named by ``config.model``."""
    from grpolab.models.tiny import load_causal_lm

    if config.model == "tiny":
        from grpolab.grpo.warmstart import warm_start

        path = warm_start(config.warmstart, cache_dir, device=device, progress=progress)
        model, tok = load_causal_lm(path, device=device)
        return model, tok, path
    if config.model == "smollm2":
        model, tok = importlib.import_module("grpolab.models.smollm2").load(device=device)
        return model, tok, "smollm2"
    model, tok = load_causal_lm(config.model, device=device)
    return model, tok, config.model


def prepare_run(config: GRPOConfig, out_dir, cache_dir: str | None, progress: bool, task=None):
    """What every backend does before its first step (this loop and grpolab.grpo.trl_backend).

    Creates ``out_dir``, resolves the device, builds the task (unless given) and the run's
    prompts, and loads the starting policy (the warm start is cached under ``cache_dir``, by
    default ``out_dir/cache``). Returns ``(out_dir, device, task, train_prompts,
    eval_prompts, model, tokenizer, source)``.
    """
    from grpolab.models.tiny import resolve_device
    from grpolab.tasks.arithmetic import get_task

    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    cache_dir = cache_dir or os.path.join(out_dir, "cache")
    device = resolve_device(config.device)
    task = task if task is not None else get_task(config.task, **config.task_kwargs)
    train_prompts, eval_prompts = training_prompts(config, task)
    model, tokenizer, source = load_policy(config, cache_dir, device, progress)
    return out_dir, device, task, train_prompts, eval_prompts, model, tokenizer, source


def advantages_of(rewards: np.ndarray, group_sizes: list[int], config: GRPOConfig):
    """Group-relative advantages of flat prompt-major rewards whose groups may differ in
    size (adaptive G): each size is normalised on its own; ``scale_rewards="batch"`` needs
    one size per step. Computed in float32 torch, as TRL does."""
    r = torch.as_tensor(rewards, dtype=torch.float32)
    kw = dict(scale=config.scale_rewards, baseline=config.advantage_baseline,
              ddof=config.advantage_ddof, eps=config.advantage_eps)
    sizes = sorted(set(group_sizes))
    if len(sizes) == 1:
        return group_advantages(r, sizes[0], **kw)
    if config.scale_rewards == "batch":
        raise ValueError("--scale-rewards batch needs one group size per step")
    starts = np.cumsum([0] + list(group_sizes))[:-1]  # first row of each group
    adv = torch.zeros_like(r)
    for g in sizes:
        rows = np.concatenate([np.arange(s, s + n)
                               for s, n in zip(starts, group_sizes, strict=True) if n == g])
        adv[rows] = group_advantages(r[rows], g, **kw)
    return adv


# ----------------------------------------------------------------------------- run state
class Run:
    """A run in progress: what a :class:`BatchSource` may read and use."""

    def __init__(self, config, task, train_prompts, model, tokenizer, device, census):
        self.config, self.task, self.train_prompts = config, task, train_prompts
        self.model, self.tokenizer, self.device, self.census = model, tokenizer, device, census
        self.gen = torch.Generator(device=device).manual_seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.sampling = dict(temperature=config.temperature, top_p=config.top_p,
                             max_new_tokens=config.max_completion_length)
        self.step = 0
        self.completions = 0
        self._order: list[int] = []

    def next_prompts(self, k: int, pool: np.ndarray | None = None) -> list[int]:
        """``k`` training-prompt indices: the next ones of seeded shuffles of the training
        set, or ``k`` distinct draws from ``pool``."""
        if pool is not None:
            return self.rng.choice(pool, size=min(k, pool.size), replace=False).tolist()
        while len(self._order) < k:
            self._order += self.rng.permutation(len(self.train_prompts)).tolist()
        idx, self._order = self._order[:k], self._order[k:]
        return idx

    def rollout(self, idx: list[int], sizes: list[int]) -> tuple[Rollout, np.ndarray]:
        """Sample group ``sizes[j]`` for prompt ``idx[j]``: one sampler call per distinct
        size; rows come back grouped by size (ascending), then in ``idx`` order."""
        parts, rewards = [], []
        for g in sorted(set(sizes)):
            sel = [i for i, s in zip(idx, sizes, strict=True) if s == g]
            prompts = [self.train_prompts[i] for i in sel]
            r = sample(self.model, self.tokenizer, [p.text for p in prompts], g,
                       generator=self.gen, **self.sampling)
            parts.append((r, list(range(len(r.texts)))))
            rewards.append(rewards_of(self.task, prompts, r.texts, g))
        if len(parts) == 1:
            return parts[0][0], rewards[0]
        return merge_rollouts(parts, self.tokenizer.pad_token_id), np.concatenate(rewards)

    @staticmethod
    def order_by_size(idx: list[int], sizes: list[int]) -> tuple[list[int], list[int]]:
        """``(idx, sizes)`` in the row order :meth:`rollout` returns them."""
        pairs = [(s, i) for g in sorted(set(sizes)) for i, s in zip(idx, sizes, strict=True)
                 if s == g]
        return [i for _, i in pairs], [s for s, _ in pairs]


@torch.no_grad()
def _kl_to(model, reference, roll: Rollout, temperature: float) -> float:
    """Mean per-token k3 estimate of KL(π_θ ‖ π_ref) on a rollout's completions."""
    args = (roll.prompt_ids, roll.prompt_mask, roll.completion_ids, roll.completion_mask,
            temperature)
    lp, _ = per_token_logprobs(model, *args)
    lr, _ = per_token_logprobs(reference, *args)
    delta = lr - lp
    m = roll.completion_mask.to(lp.dtype)
    return float(((torch.exp(delta) - delta - 1) * m).sum() / m.sum().clamp(min=1))


def _start_checksum(config: GRPOConfig, source: str) -> dict:
    """The warm start's weight checksum and its cache key (tiny model only): a fresh clone
    that trains the warm start again can check it got the same weights."""
    if config.model != "tiny":
        return {}
    from grpolab.grpo.warmstart import weights_checksum

    return {"warmstart_key": config.warmstart.key(), "warmstart_sha256": weights_checksum(source)}


def _is_binary(rewards: np.ndarray) -> bool:
    return bool(np.all((rewards == 0) | (rewards == 1)))


# ----------------------------------------------------------------------------- the run
def run(config: GRPOConfig, out_dir: str | os.PathLike, *, cache_dir: str | None = None,
        census: np.ndarray | None = None, batches: BatchSource | None = None, task=None,
        progress: bool = True, extra: dict | None = None, save_model: bool = False) -> dict:
    """Train one policy with GRPO and write ``log.jsonl`` and ``summary.json`` to ``out_dir``.

    ``census``: a precomputed (n_train, ≥ census_samples) pass/fail matrix of the starting
    policy (a sweep computes it once for all its runs); computed here when ``None``.
    ``batches``: how each step's batch is chosen (default: :class:`BatchSource`, uniform).
    ``task``: a task object that overrides ``config.task`` (the reward wrappers of the
    remedy labs). ``summary.json`` is written last and atomically: its presence marks a
    finished run. ``save_model=True`` also saves the trained policy to ``out_dir/model``.
    """
    config.validate()
    if config.backend == "trl":
        if batches is not None or task is not None:
            raise ValueError("--backend trl supports the uniform batches of the sweep only")
        return importlib.import_module("grpolab.grpo.trl_backend").run(
            config, out_dir, cache_dir=cache_dir, census=census, progress=progress, extra=extra)
    from tqdm.auto import tqdm

    out_dir, device, task, train_prompts, eval_prompts, model, tokenizer, source = prepare_run(
        config, out_dir, cache_dir, progress, task=task)
    width = config.pass_rate_window_size
    if census is None:
        census = pass_rate_census(
            model, tokenizer, task, train_prompts, samples=width,
            seed=config.seed if config.census_seed is None else config.census_seed,
            temperature=config.temperature, top_p=config.top_p,
            max_new_tokens=config.max_completion_length)
    if census.ndim != 2 or census.shape[0] != len(train_prompts) or census.shape[1] < width:
        raise ValueError(f"census must have shape ({len(train_prompts)}, >= {width}), "
                         f"got {census.shape}")
    window = PassRateWindow(census, width)
    # The frozen starting policy: the KL reference when β > 0, and always the yardstick of
    # the logged "kl_to_warm_start" (so β = 0 runs report their drift too).
    start_policy = copy.deepcopy(model).eval()
    ref_model = start_policy if config.beta != 0 else None
    torch.manual_seed(config.seed)
    state = Run(config, task, train_prompts, model, tokenizer, device, census)
    eval_gen = torch.Generator(device=device).manual_seed(10_000 + config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    batches = batches or BatchSource()
    batches.start(state)

    def _eval() -> dict:
        return evaluate(model, tokenizer, task, eval_prompts, samples=config.eval_samples,
                        generator=eval_gen, **state.sampling)

    log = open(os.path.join(out_dir, "log.jsonl"), "w")  # a restarted run starts afresh
    start = time.time()
    initial = {"step": 0, "completions": 0, "tokens": 0, "seconds": 0.0, **_eval()}
    log.write(json.dumps(initial) + "\n")
    budget = config.completion_budget
    tokens = skipped = informative_used = groups_used = 0
    zero_obs, zero_pred, grad_norms, lengths, kls, drift = [], [], [], [], [], []
    last, metrics, last_roll = initial, {}, None
    next_eval = config.eval_every
    bar = tqdm(total=budget or config.steps, disable=not progress, leave=False,
               desc=f"{batches.name} G={config.num_generations} seed={config.seed}")
    while (state.completions < budget) if budget else (state.step < config.steps):
        state.step += 1
        batch = batches.next_batch(state)
        if batch.completions <= 0:  # would loop forever at a fixed completion budget
            raise RuntimeError(f"batch source {batches.name!r} generated nothing at step "
                               f"{state.step}")
        state.completions += batch.completions
        bar.update(batch.completions if budget else 1)
        rec = {"step": state.step, "completions": state.completions,
               "completions_step": batch.completions, **batch.info}
        if batch.rollout is not None and len(batch.rewards):
            rw, sizes = batch.rewards, batch.group_sizes
            # zero-variance groups: observed now, predicted from the prompts' past rewards
            starts = np.cumsum([0] + sizes)[:-1]
            zero_var = np.array([bool(zero_variance_groups(rw[s:s + g], g)[0])
                             for s, g in zip(starts, sizes, strict=True)])
            observed = float(zero_var.mean())
            # predict every group before pushing any: a prompt may recur in a batch; the
            # unbiased estimate needs a window at least as wide as the group
            if _is_binary(rw) and max(sizes) <= width:
                pred, plug = [], []
                for g, i in zip(sizes, batch.prompt_idx, strict=True):
                    u, p = window.predict([i], g)
                    pred.append(float(u[0]))
                    plug.append(float(p[0]))
                rec.update(zero_variance_predicted=float(np.mean(pred)),
                           zero_variance_predicted_plugin=float(np.mean(plug)))
                zero_pred.append(rec["zero_variance_predicted"])
            if _is_binary(rw):
                for s, g, i in zip(starts, sizes, batch.prompt_idx, strict=True):
                    window.push([i], [rw[s:s + g] > 0.5])
                rec["pass_rate_estimate_mean"] = float(window.hits[batch.prompt_idx].mean())
            zero_obs.append(observed)
            informative_used += int((~zero_var).sum())
            groups_used += len(sizes)
            advantages = advantages_of(rw, sizes, config)
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
            grad_norms.append(metrics["grad_norm"])
            tokens += batch.rollout.tokens_generated
            length = batch.rollout.tokens_generated / len(rw)
            lengths.append(length)
            kls.append(metrics["kl"])
            last_roll = batch.rollout
            rec.update(reward_mean=float(rw.mean()), reward_std=float(rw.std()),
                       zero_variance_observed=observed, informative_fraction=1.0 - observed,
                       groups=len(sizes), tokens=tokens, completion_length_mean=length,
                       **metrics)
        else:
            skipped += 1
        done = (state.completions >= budget) if budget else (state.step >= config.steps)
        if state.completions >= next_eval or done:
            if last_roll is not None:  # the latest completions that were trained on
                rec["kl_to_warm_start"] = _kl_to(model, start_policy, last_roll, config.temperature)
                drift.append(rec["kl_to_warm_start"])
            last = _eval()
            rec.update(last)
            while next_eval <= state.completions:
                next_eval += config.eval_every
        batches.after_step(state, batch)
        rec["seconds"] = time.time() - start
        log.write(json.dumps(rec) + "\n")
        log.flush()
    bar.close()
    log.close()
    if save_model:
        model.save_pretrained(os.path.join(out_dir, "model"))
        tokenizer.save_pretrained(os.path.join(out_dir, "model"))

    mean_obs = float(np.mean(zero_obs)) if zero_obs else None
    mean_pred = float(np.mean(zero_pred)) if zero_pred else None
    summary = {
        "G": config.num_generations, "seed": config.seed,
        "prompts_per_step": config.prompts_per_step, "steps": state.step,
        "updates": state.step - skipped, "steps_without_update": skipped,
        "initial_accuracy": initial["eval_greedy_accuracy"],
        "final_accuracy": last["eval_greedy_accuracy"],
        "initial_sampled_accuracy": initial["eval_sampled_accuracy"],
        "final_sampled_accuracy": last["eval_sampled_accuracy"],
        "initial_accuracy_by_difficulty": initial["eval_greedy_accuracy_by_difficulty"],
        "final_accuracy_by_difficulty": last["eval_greedy_accuracy_by_difficulty"],
        "initial_sampled_accuracy_by_difficulty": initial["eval_sampled_accuracy_by_difficulty"],
        "final_sampled_accuracy_by_difficulty": last["eval_sampled_accuracy_by_difficulty"],
        "zero_variance_observed": mean_obs, "zero_variance_predicted": mean_pred,
        "zero_variance_abs_gap": (abs(mean_obs - mean_pred)
                                  if mean_obs is not None and mean_pred is not None else None),
        "grad_norm_mean": float(np.mean(grad_norms)) if grad_norms else None,
        "grad_norm_std": float(np.std(grad_norms)) if grad_norms else None,
        "final_entropy": metrics.get("entropy"), "final_kl": metrics.get("kl"),
        "final_kl_to_warm_start": drift[-1] if drift else None,
        "informative_groups_used": informative_used, "groups_used": groups_used,
        "informative_per_1k_completions": 1000 * informative_used / max(state.completions, 1),
        "initial_completion_length": float(np.mean(lengths[:5])) if lengths else None,
        "final_completion_length": float(np.mean(lengths[-5:])) if lengths else None,
        "completions": state.completions, "tokens": tokens, "seconds": time.time() - start,
        "batches": batches.name, **batches.summary(), **_start_checksum(config, source),
        "policy": source, "config": config.to_dict(), **provenance(device), **(extra or {}),
    }
    write_json_atomic(os.path.join(out_dir, "summary.json"), summary)
    return summary
