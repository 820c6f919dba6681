"""One GRPO run, the whole loop in one place.

    for step in 1..steps:
        prompts   ← the next prompts_per_step training prompts (seeded shuffle)
        rollout   ← G completions per prompt                         (grpolab.grpo.rollout)
        rewards   ← task.reward(prompt, completion)                  (grpolab.tasks.arithmetic)
        A         ← group-relative advantages                        (grpolab.advantages)
        update    ← num_iterations clipped-surrogate steps           (grpolab.grpo.loss)
        log       ← reward, zero-variance groups observed vs predicted, grad norm, KL,
                    entropy, completions, tokens, wall time; held-out accuracy every k steps

The configuration is a plain dataclass with TRL's names. ``backend`` and ``model`` pick
the engine and the policy: ``backend="trl"`` hands the run to ``grpolab.grpo.trl_backend``;
``model="tiny"`` is the warm-started embedded model, ``"smollm2"`` comes from
``grpolab.models.smollm2``, anything else is a hub id or local path for
:func:`grpolab.models.tiny.load_causal_lm`.

Predicted zero-variance fraction: each training prompt keeps a window of its most recent
``pass_rate_window`` binary rewards (seeded by a census of the starting policy). Before a
step, the prediction for a prompt is the unbiased estimate of p^G + (1 − p)^G from that
window (:func:`grpolab.theory.unbiased_zero_gradient_estimate`; the plug-in p̂^G runs
high at large G); the step's own rewards only enter the window afterwards.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import os
import time

import numpy as np
import torch

from grpolab import theory
from grpolab.advantages import zero_variance_groups
from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.loss import compute_advantages, grpo_update
from grpolab.grpo.rollout import sample

__all__ = ["GRPOConfig", "run", "evaluate", "pass_rate_census", "PassRateWindow", "load_policy",
           "training_prompts", "prepare_run"]


# ----------------------------------------------------------------------------- helpers
def load_policy(config: GRPOConfig, cache_dir: str, device, progress: bool = False):
    """The starting policy ``(model, tokenizer, description)`` named by ``config.model``."""
    from grpolab.models.tiny import load_causal_lm

    if config.model == "tiny":
        from grpolab.models.warmstart import warm_start

        path = warm_start(config.warmstart, cache_dir, device=device, progress=progress)
        model, tok = load_causal_lm(path, device=device)
        return model, tok, path
    if config.model == "smollm2":
        model, tok = importlib.import_module("grpolab.models.smollm2").load(device=device)
        return model, tok, "smollm2"
    model, tok = load_causal_lm(config.model, device=device)
    return model, tok, config.model


def training_prompts(config: GRPOConfig, task) -> tuple[list, list]:
    """The run's training and held-out prompts: ``train_difficulties`` filters both splits,
    ``max_train_prompts`` truncates the training split."""
    train, evals = task.train_prompts, task.eval_prompts
    if config.train_difficulties:
        keep = set(config.train_difficulties)
        train = [p for p in train if p.difficulty in keep]
        evals = [p for p in evals if p.difficulty in keep]
        if not train or not evals:
            raise ValueError(f"train_difficulties {sorted(keep)} match no prompts of task "
                             f"{config.task!r} (levels: {task.difficulties})")
    if config.max_train_prompts is not None:
        train = train[:config.max_train_prompts]
    return train, evals


def prepare_run(config: GRPOConfig, out_dir, cache_dir: str | None, progress: bool):
    """What every backend does before its first step (this loop and grpolab.grpo.trl_backend).

    Creates ``out_dir``, resolves the device, builds the task and the run's prompts, and
    loads the starting policy (the warm start is cached under ``cache_dir``, by default
    ``out_dir/cache``). Returns ``(out_dir, device, task, train_prompts, eval_prompts,
    model, tokenizer, source)``.
    """
    from grpolab.models.tiny import resolve_device
    from grpolab.tasks.arithmetic import get_task

    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    cache_dir = cache_dir or os.path.join(out_dir, "cache")
    device = resolve_device(config.device)
    task = get_task(config.task, **config.task_kwargs)
    train_prompts, eval_prompts = training_prompts(config, task)
    model, tokenizer, source = load_policy(config, cache_dir, device, progress)
    return out_dir, device, task, train_prompts, eval_prompts, model, tokenizer, source


def _outcomes(task, prompts, texts, G):
    """Training rewards and exact correctness for B·G prompt-major completions."""
    rewards = np.array([task.reward(prompts[i // G], s) for i, s in enumerate(texts)], float)
    return rewards


@torch.no_grad()
def evaluate(model, tokenizer, task, prompts, *, samples: int, temperature: float,
             top_p: float, max_new_tokens: int, generator=None) -> dict:
    """Held-out accuracy: greedy (one completion each) and sampled (``samples`` each),
    overall and per difficulty. Accuracy uses ``task.correct``, never a noisy reward."""
    texts = [p.text for p in prompts]
    greedy = sample(model, tokenizer, texts, 1, max_new_tokens=max_new_tokens, temperature=0)
    g_ok = np.array([task.correct(p, s) for p, s in zip(prompts, greedy.texts, strict=True)], float)
    sampled = sample(model, tokenizer, texts, samples, max_new_tokens=max_new_tokens,
                     temperature=temperature, top_p=top_p, generator=generator)
    s_ok = np.array([task.correct(prompts[i // samples], s)
                     for i, s in enumerate(sampled.texts)], float).reshape(len(prompts), samples)
    diff = np.array([p.difficulty for p in prompts])
    out = {"eval_greedy_accuracy": float(g_ok.mean()),
           "eval_sampled_accuracy": float(s_ok.mean()),
           "eval_greedy_accuracy_by_difficulty": {}, "eval_sampled_accuracy_by_difficulty": {}}
    for d in sorted(set(diff.tolist())):
        out["eval_greedy_accuracy_by_difficulty"][str(d)] = float(g_ok[diff == d].mean())
        out["eval_sampled_accuracy_by_difficulty"][str(d)] = float(s_ok[diff == d].mean())
    return out


@torch.no_grad()
def pass_rate_census(model, tokenizer, task, prompts, *, samples: int, temperature: float,
                     top_p: float, max_new_tokens: int, seed: int = 0,
                     chunk_completions: int = 4096) -> np.ndarray:
    """(len(prompts), samples) matrix of binary training rewards > 0.5 of the current policy."""
    gen = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    rows = []
    per = max(1, chunk_completions // samples)
    for i in range(0, len(prompts), per):
        chunk = prompts[i:i + per]
        r = sample(model, tokenizer, [p.text for p in chunk], samples,
                   max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                   generator=gen)
        rows.append(_outcomes(task, chunk, r.texts, samples).reshape(len(chunk), samples))
    return np.concatenate(rows) > 0.5


class PassRateWindow:
    """The last ``width`` binary rewards of every training prompt (a ring buffer)."""

    def __init__(self, census: np.ndarray):
        self.hits = census.astype(bool).copy()  # (n_prompts, width)
        self.next = np.zeros(len(census), dtype=int)

    def predict(self, idx, G: int) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased and plug-in estimates of p^G + (1 − p)^G for prompts ``idx``."""
        k = self.hits[idx].sum(1)
        n = self.hits.shape[1]
        unbiased = np.asarray(theory.unbiased_zero_gradient_estimate(k, np.full_like(k, n), G))
        plug_in = np.asarray(theory.zero_gradient_probability(k / n, G))
        return unbiased, plug_in

    def push(self, idx, outcomes: np.ndarray) -> None:
        width = self.hits.shape[1]
        for j, row in zip(idx, outcomes, strict=True):
            for hit in row[-width:]:
                self.hits[j, self.next[j]] = hit
                self.next[j] = (self.next[j] + 1) % width


def _is_binary(rewards: np.ndarray) -> bool:
    return bool(np.all((rewards == 0) | (rewards == 1)))


# ----------------------------------------------------------------------------- the run
def run(config: GRPOConfig, out_dir: str | os.PathLike, *, cache_dir: str | None = None,
        census: np.ndarray | None = None, progress: bool = True, extra: dict | None = None,
        save_model: bool = False) -> dict:
    """Train one policy with GRPO and write ``log.jsonl`` and ``summary.json`` to ``out_dir``.

    ``census``: a precomputed (n_train, ≥ G) pass/fail matrix of the starting policy (a sweep
    computes it once for all its runs); computed here when ``None``. Returns the summary.
    ``summary.json`` is written last and atomically: its presence marks a finished run.
    ``save_model=True`` also saves the trained policy to ``out_dir/model`` (safetensors).
    """
    config.validate()
    if config.backend == "trl":
        return importlib.import_module("grpolab.grpo.trl_backend").run(
            config, out_dir, cache_dir=cache_dir, census=census, progress=progress, extra=extra)
    from tqdm.auto import tqdm

    from grpolab import __version__

    out_dir, device, task, train_prompts, eval_prompts, model, tokenizer, source = prepare_run(
        config, out_dir, cache_dir, progress)
    G, B = config.num_generations, config.prompts_per_step
    width = config.pass_rate_window_size
    ref_model = copy.deepcopy(model).eval() if config.beta != 0 else None
    torch.manual_seed(config.seed)
    gen = torch.Generator(device=device).manual_seed(config.seed)
    eval_gen = torch.Generator(device=device).manual_seed(10_000 + config.seed)
    rng = np.random.default_rng(config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    sampling = dict(temperature=config.temperature, top_p=config.top_p,
                    max_new_tokens=config.max_completion_length)

    if census is None:
        census = pass_rate_census(model, tokenizer, task, train_prompts,
                                  samples=width, seed=config.seed, **sampling)
    if census.ndim != 2 or census.shape[0] != len(train_prompts) or census.shape[1] < width:
        raise ValueError(f"census must have shape ({len(train_prompts)}, >= {width}), "
                         f"got {census.shape}")
    window = PassRateWindow(census[:, :width])

    def _eval(step: int) -> dict:
        return {"step": step, **evaluate(model, tokenizer, task, eval_prompts,
                                         samples=config.eval_samples, generator=eval_gen,
                                         **sampling)}

    log_path = os.path.join(out_dir, "log.jsonl")
    log = open(log_path, "w")  # a restarted run starts its log afresh
    start = time.time()
    initial = _eval(0)
    initial.update(seconds=0.0, completions=0, tokens=0)
    log.write(json.dumps(initial) + "\n")
    completions = tokens = 0
    order: list[int] = []
    zero_obs, zero_pred, grad_norms, last = [], [], [], initial
    for step in tqdm(range(1, config.steps + 1), desc=f"G={G} seed={config.seed}",
                     disable=not progress, leave=False):
        # 1. prompts: walk through seeded shuffles of the training set
        while len(order) < B:
            order += rng.permutation(len(train_prompts)).tolist()
        idx, order = order[:B], order[B:]
        prompts = [train_prompts[i] for i in idx]
        # 2. rollout: G completions per prompt, the prompt encoded once
        rollout = sample(model, tokenizer, [p.text for p in prompts], G, generator=gen,
                         **sampling)
        # 3. rewards and group-relative advantages
        rewards = _outcomes(task, prompts, rollout.texts, G)
        advantages = compute_advantages(rewards, G, config.scale_rewards)
        # 4. zero-variance groups: observed now, predicted from the prompts' past rewards
        observed = float(zero_variance_groups(rewards, G).mean())
        rec = {"step": step}
        if _is_binary(rewards):
            unbiased, plug_in = window.predict(idx, G)
            window.push(idx, rewards.reshape(B, G) > 0.5)
            rec.update(zero_gradient_predicted=float(unbiased.mean()),
                       zero_gradient_predicted_plugin=float(plug_in.mean()),
                       pass_rate_estimate_mean=float(window.hits[idx].mean()))
            zero_pred.append(rec["zero_gradient_predicted"])
        zero_obs.append(observed)
        # 5. the GRPO update
        metrics = grpo_update(model, optimizer, rollout, advantages, ref_model=ref_model,
                              num_iterations=config.num_iterations, epsilon=config.epsilon,
                              epsilon_high=config.epsilon_high, beta=config.beta,
                              loss_type=config.loss_type, temperature=config.temperature,
                              max_grad_norm=config.max_grad_norm,
                              max_completion_length=config.max_completion_length)
        completions += B * G
        grad_norms.append(metrics["grad_norm"])
        tokens += rollout.tokens_generated
        rec.update(reward_mean=float(rewards.mean()), reward_std=float(rewards.std()),
                   zero_gradient_observed=observed, completions=completions, tokens=tokens,
                   completion_length_mean=rollout.tokens_generated / (B * G), **metrics)
        if not all(math.isfinite(v) for v in metrics.values()):
            raise FloatingPointError(f"non-finite GRPO metrics at step {step}: {metrics}")
        # 6. held-out accuracy every eval_every steps (and at the end)
        if step % config.eval_every == 0 or step == config.steps:
            last = _eval(step)
            rec.update({k: v for k, v in last.items() if k != "step"})
        rec["seconds"] = time.time() - start
        log.write(json.dumps(rec) + "\n")
        log.flush()
    log.close()
    if save_model:
        model.save_pretrained(os.path.join(out_dir, "model"))
        tokenizer.save_pretrained(os.path.join(out_dir, "model"))

    summary = {
        "G": G, "seed": config.seed, "prompts_per_step": B, "steps": config.steps,
        "initial_accuracy": initial["eval_greedy_accuracy"],
        "final_accuracy": last["eval_greedy_accuracy"],
        "initial_sampled_accuracy": initial["eval_sampled_accuracy"],
        "final_sampled_accuracy": last["eval_sampled_accuracy"],
        "initial_accuracy_by_difficulty": initial["eval_greedy_accuracy_by_difficulty"],
        "final_accuracy_by_difficulty": last["eval_greedy_accuracy_by_difficulty"],
        "zero_gradient_observed": float(np.mean(zero_obs)),
        "zero_gradient_predicted": float(np.mean(zero_pred)) if zero_pred else None,
        "zero_gradient_abs_gap": (abs(float(np.mean(zero_obs)) - float(np.mean(zero_pred)))
                                  if zero_pred else None),
        "grad_norm_mean": float(np.mean(grad_norms)), "grad_norm_std": float(np.std(grad_norms)),
        "final_entropy": metrics["entropy"], "final_kl": metrics["kl"],
        "completions": completions, "tokens": tokens, "seconds": time.time() - start,
        "policy": source, "config": config.to_dict(), "grpolab_version": __version__,
        "git_commit": git_commit(), "device": device_name(device), **(extra or {}),
    }
    write_json_atomic(os.path.join(out_dir, "summary.json"), summary)
    return summary


# ----------------------------------------------------------------------------- provenance
def git_commit() -> str:
    """``git rev-parse HEAD`` of the grpolab checkout, or ``"unknown"``."""
    import subprocess

    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def device_name(device) -> str:
    """A human-readable device description for result files."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({os.cpu_count()} cores visible, {torch.get_num_threads()} torch threads)"


def write_json_atomic(path: str, obj) -> None:
    """Write JSON to ``path.tmp`` then rename: readers see the old file or the new one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)
