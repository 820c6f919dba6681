"""What every backend does before its first step: the policy, the task, the prompts, the census.

Both :mod:`grpolab.grpo.loop` (grpolab's loop) and :mod:`grpolab.grpo.trl_backend` (TRL's
``GRPOTrainer``) start here, so a config means the same run on either.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from grpolab.grpo.config import GRPOConfig, training_prompts

__all__ = ["RunSetup", "load_policy", "prepare_run", "starting_census"]


@dataclass
class RunSetup:
    """Everything a run needs before its first step (:func:`prepare_run`)."""

    out_dir: str
    device: object  # torch.device
    task: object
    train_prompts: list
    eval_prompts: list
    model: object
    tokenizer: object
    source: str  # where the starting policy came from: the warm start's path, a hub id...


def load_policy(config: GRPOConfig, cache_dir: str, device, progress: bool = False):
    """The starting policy ``(model, tokenizer, source)`` named by ``config.model``: the
    warm-started tiny Llama (trained once, cached under ``cache_dir``), SmolLM2 (offline),
    or any hub id / local path."""
    from grpolab.models.tiny_llama import load_causal_lm

    if config.model == "tiny":
        from grpolab.grpo.warmstart import warm_start

        path = warm_start(config.warmstart, cache_dir, device=device, progress=progress)
        model, tok = load_causal_lm(path, device=device)
        return model, tok, path
    if config.model == "smollm2":
        from grpolab.models import smollm2

        model, tok = smollm2.load(device=device)
        return model, tok, "smollm2"
    model, tok = load_causal_lm(config.model, device=device)
    return model, tok, config.model


def prepare_run(config: GRPOConfig, out_dir, cache_dir: str | None = None,
                progress: bool = False, task=None) -> RunSetup:
    """Create ``out_dir``, resolve the device, build the task (unless given: the reward
    wrappers of the remedy labs) and the run's prompts, and load the starting policy (the
    warm start is cached under ``cache_dir``, by default ``out_dir/cache``)."""
    from grpolab.models.device import resolve_device
    from grpolab.tasks.registry import get_task

    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    cache_dir = cache_dir or os.path.join(out_dir, "cache")
    device = resolve_device(config.device)
    task = task if task is not None else get_task(config.task, **config.task_kwargs)
    train_prompts, eval_prompts = training_prompts(config, task)
    model, tokenizer, source = load_policy(config, cache_dir, device, progress)
    return RunSetup(out_dir, device, task, train_prompts, eval_prompts, model, tokenizer, source)


def starting_census(config: GRPOConfig, setup: RunSetup, census: np.ndarray | None = None,
                    prompts: list | None = None) -> np.ndarray:
    """The starting policy's pass/fail matrix on the training prompts, at least
    ``config.pass_rate_window_size`` samples wide: ``census`` when given (a sweep measures it
    once for all its runs), else measured now with ``config.census_seed`` (or the run's seed).
    ``prompts`` are the training prompts as the model sees them (default: as they are)."""
    from grpolab.grpo.measure import pass_rate_census

    width = config.pass_rate_window_size
    if census is None:
        census = pass_rate_census(
            setup.model, setup.tokenizer, setup.task, prompts or setup.train_prompts,
            samples=width, seed=config.seed if config.census_seed is None else config.census_seed,
            temperature=config.temperature, top_p=config.top_p,
            max_new_tokens=config.max_completion_length)
    census = np.asarray(census)
    n = len(setup.train_prompts)
    if census.ndim != 2 or census.shape[0] != n or census.shape[1] < width:
        raise ValueError(f"census must have shape ({n}, >= {width}), got {census.shape}")
    return census
