"""Remedy labs: one GRPO loop with a pluggable batch builder, the lab configs, a resumable runner.

The loop is :func:`grpolab.train.run`'s loop with two things made explicit, because the
remedies change exactly those:

    while completions < completion_budget:                 # a FIXED BUDGET of completions
        batch     ← build_batch(...)                       # which prompts, which G, which groups
                    uniform | band | curriculum | adaptive G | allocation | dynamic sampling
        rewards   ← task.reward (optionally length-biased or noisy)
        A         ← group_advantages(scale, baseline, ddof, eps)        (grpolab.advantages)
        update    ← grpo_update                                          (grpolab.grpo)
        log       ← completions spent, informative groups used, accuracy every eval_every

Everything else (warm start, rollout, evaluation, provenance) is imported from
:mod:`grpolab.train` and friends, so a remedy run and a sweep run start from the same
weights and measure accuracy the same way.

Results layout of ``grpolab remedies --item NAME --out DIR``::

    DIR/item.json                     the item: arms, seeds, budget, version, commit, device
    DIR/runs/<arm>/seed<s>/           log.jsonl + summary.json (present = finished; skipped)
    DIR/probe.json                    sampling-only measurements (items that have them)
    DIR/results.json                  per-arm means and seed spreads, the verdict inputs
    DIR/*.png, DIR/*.svg              the item's plot

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, is_dataclass, replace

import numpy as np
import torch

from grpolab import remedies, theory
from grpolab.advantages import BASELINES, SCALES, group_advantages
from grpolab.grpo import LOSS_TYPES, grpo_update
from grpolab.presets import TASK_KWARGS
from grpolab.rollout import Rollout, sample
from grpolab.tasks import Prompt, Task, get_task
from grpolab.warmstart import WarmStartConfig

__all__ = ["LabConfig", "REMEDIES", "REWARDS", "LengthBiasedReward", "PartialCreditReward",
           "make_task",
           "merge_rollouts", "run_lab", "Item", "ITEMS", "run_item", "aggregate_item",
           "plot_item", "dynamic_sampling_theory", "config_key", "results_root",
           "load_results", "arm_table", "compare", "publish",
           "reproduce_command", "display_item", "run_probe", "table_html",
           "show_table"]

REMEDIES = ("none", "dynamic_sampling", "band", "curriculum", "adaptive_g_card",
            "adaptive_g_signal", "allocate")
REWARDS = ("task", "partial", "noisy", "length_long", "length_short")


@dataclass
class LabConfig:
    """One remedy run. GRPO fields use TRL's names; remedy fields say what changes."""

    # --- what is trained, from where
    task_kwargs: dict = field(default_factory=lambda: dict(TASK_KWARGS))
    train_difficulties: list[int] = field(default_factory=lambda: [1, 2, 3])
    max_train_prompts: int = 500
    warmstart: WarmStartConfig = field(default_factory=lambda: WarmStartConfig(
        task="arithmetic", task_kwargs=dict(TASK_KWARGS), steps=700))
    # --- GRPO
    num_generations: int = 8
    prompts_per_step: int = 8
    completion_budget: int = 5120  # stop when this many completions have been generated
    learning_rate: float = 3e-5
    max_grad_norm: float = 1.0
    beta: float = 0.0
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    advantage_baseline: str = "mean"  # or "leave_one_out"
    advantage_ddof: int = 1
    advantage_eps: float = 1e-4
    temperature: float = 1.0
    max_completion_length: int = 6
    # --- reward
    reward: str = "task"  # task | partial | noisy | length_long | length_short
    noise_q: float = 0.0
    length_weight: float = 0.5
    # --- remedy
    remedy: str = "none"
    max_batches: int = 4  # dynamic sampling cap (verl's max_num_gen_batches)
    band_low: float = 0.2
    band_high: float = 0.8
    curriculum_advance_at: float = 0.6
    curriculum_min_steps: int = 10
    adaptive_target: float = 0.5  # adaptive_g_signal: wanted informative probability
    G_min: int = 2
    G_max: int = 32
    pass_rate_decay: float = 0.9
    # --- evaluation and reproducibility
    eval_every: int = 1280  # completions between evaluations
    eval_max_prompts: int = 200
    eval_samples: int = 2
    census_samples: int = 16
    seed: int = 0
    device: str = "cpu"

    def validate(self) -> LabConfig:
        """Raise a ValueError naming the first bad field."""
        for name in ("num_generations", "prompts_per_step", "completion_budget", "max_batches",
                     "eval_every", "eval_max_prompts", "eval_samples", "census_samples",
                     "max_completion_length", "curriculum_min_steps", "max_train_prompts"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.num_generations < 2:
            raise ValueError(f"num_generations must be >= 2, got {self.num_generations}")
        checks = [("remedy", REMEDIES), ("reward", REWARDS), ("loss_type", LOSS_TYPES),
                  ("scale_rewards", SCALES), ("advantage_baseline", BASELINES)]
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.advantage_ddof not in (0, 1):
            raise ValueError(f"advantage_ddof must be 0 or 1, got {self.advantage_ddof!r}")
        for name in ("learning_rate", "temperature", "advantage_eps"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        for name in ("beta", "max_grad_norm", "length_weight"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a non-negative number, got {v!r}")
        for name in ("noise_q", "band_low", "band_high", "curriculum_advance_at",
                     "adaptive_target", "pass_rate_decay"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and 0 <= v <= 1):
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")
        if self.band_low > self.band_high:
            raise ValueError(f"band_low must be <= band_high, got {self.band_low} > "
                             f"{self.band_high}")
        if not 2 <= self.G_min <= self.G_max:
            raise ValueError(f"need 2 <= G_min <= G_max, got G_min={self.G_min}, "
                             f"G_max={self.G_max}")
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> LabConfig:
        d = dict(d)
        if isinstance(d.get("warmstart"), dict):
            d["warmstart"] = WarmStartConfig(**d["warmstart"])
        return cls(**d)


# ----------------------------------------------------------------------------- rewards
class LengthBiasedReward(Task):
    """A biased reward model: the task's reward plus ``weight`` × a length score.

    ``prefer="long"`` adds weight · len/max_len, ``"short"`` adds weight · (1 − len/max_len),
    where len counts the completion's characters (EOS excluded). Accuracy (``correct``)
    stays the task's exact match, so the bias shows up as length drift at unchanged or
    falling accuracy. Used to test the card's "larger G amplifies length bias".
    """

    def __init__(self, base: Task, weight: float = 0.5, prefer: str = "long", max_len: int = 6):
        if prefer not in ("long", "short"):
            raise ValueError(f"prefer must be 'long' or 'short', got {prefer!r}")
        if not weight >= 0:
            raise ValueError(f"weight must be >= 0, got {weight!r}")
        self.base, self.weight, self.prefer, self.max_len = base, float(weight), prefer, max_len
        self.name = f"{base.name}_length_{prefer}"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        frac = min(len(completion.strip()), self.max_len) / self.max_len
        bonus = frac if self.prefer == "long" else 1.0 - frac
        return self.base.reward(prompt, completion) + self.weight * bonus

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


class PartialCreditReward(Task):
    """The binary task's prompts with the partial-credit reward of
    :class:`grpolab.tasks.PartialCreditArithmeticTask` (``get_task("arithmetic_partial")``
    draws a different prompt set, which would confound a reward comparison)."""

    def __init__(self, base: Task):
        self.base, self.name = base, f"{base.name}_partial"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        from grpolab.tasks import PartialCreditArithmeticTask

        return PartialCreditArithmeticTask.reward(self, prompt, completion)

    def correct(self, prompt: Prompt, completion: str) -> bool:
        return self.base.correct(prompt, completion)


def make_task(config: LabConfig) -> Task:
    """The task of a lab run, with the reward the config asks for. Every reward variant
    keeps the binary task's prompts, so arms differ only in the reward."""
    kw = dict(config.task_kwargs)
    if config.reward == "partial":
        return PartialCreditReward(get_task("arithmetic", **kw))
    if config.reward == "noisy":
        return get_task("arithmetic_noisy", q=config.noise_q, noise_seed=config.seed, **kw)
    base = get_task("arithmetic", **kw)
    if config.reward in ("length_long", "length_short"):
        return LengthBiasedReward(base, config.length_weight, config.reward.split("_")[1],
                                  config.max_completion_length)
    return base


# ----------------------------------------------------------------------------- rollouts
def merge_rollouts(parts: list[tuple[Rollout, list[int]]], pad_id: int) -> Rollout:
    """Concatenate chosen rows of several rollouts into one, re-padding to common widths
    (prompts stay left-padded, completions right-padded). ``num_generations`` of the result
    is 0 when groups of different sizes were mixed."""
    P = max(r.prompt_ids.shape[1] for r, _ in parts)
    T = max(r.completion_ids.shape[1] for r, _ in parts)
    cols = {k: [] for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask",
                            "old_logprobs")}
    texts: list[str] = []
    for r, rows in parts:
        if not rows:
            continue
        idx = torch.as_tensor(rows, dtype=torch.long)
        dp, dt = P - r.prompt_ids.shape[1], T - r.completion_ids.shape[1]
        pad = torch.nn.functional.pad
        cols["prompt_ids"].append(pad(r.prompt_ids[idx], (dp, 0), value=pad_id))
        cols["prompt_mask"].append(pad(r.prompt_mask[idx], (dp, 0), value=0))
        cols["completion_ids"].append(pad(r.completion_ids[idx], (0, dt), value=pad_id))
        cols["completion_mask"].append(pad(r.completion_mask[idx], (0, dt), value=0))
        cols["old_logprobs"].append(pad(r.old_logprobs[idx], (0, dt), value=0.0))
        texts += [r.texts[i] for i in rows]
    Gs = {r.num_generations for r, _ in parts}
    return Rollout(**{k: torch.cat(v) for k, v in cols.items()}, texts=texts,
                   num_generations=Gs.pop() if len(Gs) == 1 else 0)


# ----------------------------------------------------------------------------- the loop
def _census(config: LabConfig, model, tokenizer, task, prompts, cache_dir: str) -> np.ndarray:
    """Pass/fail of the warm start on the training prompts, cached under ``cache_dir``."""
    from grpolab.train import pass_rate_census

    key = json.dumps([config.warmstart.key(), config.train_difficulties, config.max_train_prompts,
                      config.temperature, config.census_samples, config.max_completion_length,
                      config.task_kwargs], sort_keys=True)
    import hashlib

    path = os.path.join(cache_dir, f"census-{hashlib.sha256(key.encode()).hexdigest()[:12]}.npy")
    if os.path.isfile(path):
        return np.load(path)
    base = get_task("arithmetic", **config.task_kwargs)  # census counts exact matches
    census = pass_rate_census(model, tokenizer, base, prompts, samples=config.census_samples,
                              temperature=config.temperature, top_p=1.0,
                              max_new_tokens=config.max_completion_length, seed=12345)
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}.npy"
    np.save(tmp, census)
    os.replace(tmp, path)
    return census


def run_lab(config: LabConfig, out_dir: str | os.PathLike, *, cache_dir: str,
            progress: bool = True, extra: dict | None = None) -> dict:
    """Train one policy with GRPO plus a remedy until ``completion_budget`` completions are
    spent; write ``log.jsonl`` and (last, atomically) ``summary.json``. Returns the summary."""
    from tqdm.auto import tqdm

    from grpolab import __version__
    from grpolab.train import (
        GRPOConfig,
        device_name,
        evaluate,
        git_commit,
        load_policy,
        write_json_atomic,
    )

    config.validate()
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    device = torch.device(config.device)
    task = make_task(config)
    levels = set(config.train_difficulties)
    train_prompts = [p for p in task.train_prompts if p.difficulty in levels]
    train_prompts = train_prompts[:config.max_train_prompts]
    eval_prompts = [p for p in task.eval_prompts if p.difficulty in levels]
    eval_prompts = eval_prompts[:config.eval_max_prompts]
    if not train_prompts or not eval_prompts:
        raise ValueError(f"train_difficulties {sorted(levels)} match no prompts")
    gcfg = GRPOConfig(warmstart=config.warmstart, model="tiny", device=config.device)
    model, tokenizer, source = load_policy(gcfg, cache_dir, device, False)
    census = _census(config, model, tokenizer, task, train_prompts, cache_dir)
    # The frozen warm start: the KL reference when β > 0, and always the yardstick of the
    # logged "kl_to_warm_start" (so β = 0 runs report their drift too).
    warm = copy.deepcopy(model).eval()
    ref_model = warm if config.beta != 0 else None
    torch.manual_seed(config.seed)
    gen = torch.Generator(device=device).manual_seed(config.seed)
    eval_gen = torch.Generator(device=device).manual_seed(10_000 + config.seed)
    rng = np.random.default_rng(config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    sampling = dict(temperature=config.temperature, top_p=1.0,
                    max_new_tokens=config.max_completion_length)
    estimates = remedies.PassRateEstimates.from_census(census, decay=config.pass_rate_decay)
    difficulty = np.array([p.difficulty for p in train_prompts])
    curriculum = (remedies.Curriculum(sorted(levels), config.curriculum_advance_at,
                                      config.curriculum_min_steps)
                  if config.remedy == "curriculum" else None)
    G, B = config.num_generations, config.prompts_per_step
    order: list[int] = []

    def next_uniform(k: int, pool: np.ndarray | None = None) -> list[int]:
        nonlocal order
        if pool is not None:
            return rng.choice(pool, size=min(k, pool.size), replace=False).tolist()
        while len(order) < k:
            order += rng.permutation(len(train_prompts)).tolist()
        idx, order = order[:k], order[k:]
        return idx

    def rollout_for(idx: list[int], sizes: list[int]) -> tuple[Rollout, np.ndarray, list]:
        """Sample each prompt's group (grouped by size so one call serves each size)."""
        parts, rewards, groups = [], [], []
        for g in sorted(set(sizes)):
            sel = [i for i, s in zip(idx, sizes, strict=False) if s == g]
            r = sample(model, tokenizer, [train_prompts[i].text for i in sel], g,
                       generator=gen, **sampling)
            rw = np.array([task.reward(train_prompts[sel[j // g]], t)
                           for j, t in enumerate(r.texts)], float)
            parts.append((r, list(range(len(r.texts)))))
            rewards.append(rw)
            groups += [(i, g) for i in sel]
        roll = parts[0][0] if len(parts) == 1 else merge_rollouts(parts, tokenizer.pad_token_id)
        return roll, np.concatenate(rewards), groups

    def build_batch() -> tuple[Rollout, np.ndarray, list, dict]:
        """The remedy: which prompts, which group sizes, which groups are kept."""
        info: dict = {}
        if config.remedy == "dynamic_sampling":
            info["q_predicted"] = float(np.mean(theory.informative_probability(
                np.clip(estimates.p, 0.0, 1.0), G)))

            def draw():
                idx = next_uniform(B)
                roll, rw, groups = rollout_for(idx, [G] * B)
                return rw.reshape(B, G), (roll, rw, groups)

            res = remedies.dynamic_sampling(draw, B, config.max_batches)
            parts, rw, groups = [], [], []
            for b, gi in res.kept:
                roll, rwb, grb = res.payloads[b]
                parts.append((roll, list(range(gi * G, (gi + 1) * G))))
                rw.append(rwb[gi * G:(gi + 1) * G])
                groups.append(grb[gi])
            info.update(generation_batches=res.batches, hit_cap=res.hit_cap,
                        completions_step=res.completions,
                        groups_generated=res.groups_generated,
                        informative_generated=res.informative_generated)
            for _roll, rw_, gr_ in res.payloads:  # every generated group updates p̂
                for j, (i, g) in enumerate(gr_):
                    estimates.update([i], [rw_[j * g:(j + 1) * g] > 0.5])
            if not parts:
                return None, np.zeros(0), [], info
            return (merge_rollouts(parts, tokenizer.pad_token_id), np.concatenate(rw),
                    groups, info)
        if config.remedy == "band":
            idx, inside = remedies.select_in_band(rng, estimates.p, B, config.band_low,
                                                  config.band_high)
            info["band_fraction"] = inside / B
            sizes = [G] * B
        elif config.remedy == "curriculum":
            pool = np.flatnonzero(np.isin(difficulty, curriculum.open_levels))
            idx = next_uniform(B, pool)
            info["open_levels"] = len(curriculum.open_levels)
            sizes = [G] * len(idx)
        elif config.remedy in ("adaptive_g_card", "adaptive_g_signal", "allocate"):
            budget = B * G
            if config.remedy == "allocate":
                cand = np.array(next_uniform(4 * B))
                alloc = remedies.allocate_budget(estimates.p[cand], budget, G_min=config.G_min,
                                                 G_max=config.G_max)
                keep = alloc > 0
                idx, sizes = cand[keep].tolist(), alloc[keep].tolist()
                if not idx:  # every estimate is 0 or 1: nothing to gain, sample uniformly
                    idx, sizes = cand[:B].tolist(), [G] * B
                    info["allocation_fallback"] = True
            else:
                idx, sizes, spent = [], [], 0
                while spent < budget:  # prompts until the step's budget is used
                    i = next_uniform(1)[0]
                    p = estimates.p[i]
                    if config.remedy == "adaptive_g_card":
                        g = int(remedies.card_pass_rate_group_size(p))
                    else:
                        g = int(remedies.min_group_size_for_signal(
                            p, config.adaptive_target, G_min=config.G_min, G_max=config.G_max))
                    g = min(g, budget - spent) if budget - spent >= 2 else 0
                    if g < 2:
                        break
                    idx.append(i)
                    sizes.append(g)
                    spent += g
            info["group_size_mean"] = float(np.mean(sizes)) if sizes else 0.0
        else:
            idx, sizes = next_uniform(B), [G] * B
        roll, rw, groups = rollout_for(idx, sizes)
        off = 0
        for i, g in groups:
            estimates.update([i], [rw[off:off + g] > 0.5])
            off += g
        info["completions_step"] = len(rw)
        return roll, rw, groups, info

    def advantages_of(rw: np.ndarray, groups: list) -> torch.Tensor:
        out, off = [], 0
        by_size: dict[int, list[int]] = {}
        for k, (_, g) in enumerate(groups):
            by_size.setdefault(g, []).append(k)
        starts = np.cumsum([0] + [g for _, g in groups])
        adv = np.zeros(len(rw))
        for g, ks in by_size.items():
            rows = np.concatenate([np.arange(starts[k], starts[k] + g) for k in ks])
            if config.scale_rewards == "batch":
                a = group_advantages(rw, G, scale="batch", baseline=config.advantage_baseline,
                                     ddof=config.advantage_ddof, eps=config.advantage_eps) \
                    if len({gg for _, gg in groups}) == 1 else None
                if a is None:
                    raise ValueError("scale_rewards='batch' needs one group size per step")
                return torch.as_tensor(a, dtype=torch.float32)
            adv[rows] = group_advantages(rw[rows], g, scale=config.scale_rewards,
                                         baseline=config.advantage_baseline,
                                         ddof=config.advantage_ddof, eps=config.advantage_eps)
        del out, off
        return torch.as_tensor(adv, dtype=torch.float32)

    @torch.no_grad()
    def kl_to(reference, roll: Rollout) -> float:
        """Mean per-token k3 estimate of KL(π_θ ‖ π_ref) on a rollout's completions."""
        from grpolab.grpo import per_token_logprobs

        args = (roll.prompt_ids, roll.prompt_mask, roll.completion_ids, roll.completion_mask,
                config.temperature)
        lp, _ = per_token_logprobs(model, *args)
        lr, _ = per_token_logprobs(reference, *args)
        delta = lr - lp
        m = roll.completion_mask.to(lp.dtype)
        return float(((torch.exp(delta) - delta - 1) * m).sum() / m.sum().clamp(min=1))

    def _eval(step: int, completions: int) -> dict:
        return {"step": step, "completions": completions,
                **evaluate(model, tokenizer, task, eval_prompts, samples=config.eval_samples,
                           generator=eval_gen, **sampling)}

    log = open(os.path.join(out_dir, "log.jsonl"), "w")
    start = time.time()
    initial = _eval(0, 0)
    log.write(json.dumps(initial) + "\n")
    completions = tokens = step = informative_used = groups_used = caps = 0
    next_eval = config.eval_every
    last, lengths, kls, skipped, drift = initial, [], [], 0, []
    last_roll: Rollout | None = None
    bar = tqdm(total=config.completion_budget, desc=f"{config.remedy} seed={config.seed}",
               disable=not progress, leave=False)
    while completions < config.completion_budget:
        step += 1
        roll, rw, groups, info = build_batch()
        spent = int(info["completions_step"])
        if spent <= 0:  # would loop forever at a fixed completion budget
            raise RuntimeError(f"remedy {config.remedy!r} generated nothing at step {step}")
        completions += spent
        bar.update(spent)
        caps += int(info.get("hit_cap", False))
        rec = {"step": step, "completions": completions, **info}
        if roll is not None and len(rw):
            inf = [bool(remedies.informative_groups(rw[s:s + g][None])[0])
                   for s, g in zip(np.cumsum([0] + [g for _, g in groups])[:-1],
                                   [g for _, g in groups], strict=False)]
            informative_used += sum(inf)
            groups_used += len(groups)
            adv = advantages_of(rw, groups)
            metrics = grpo_update(model, optimizer, roll, adv, ref_model=ref_model,
                                  epsilon=0.2, beta=config.beta, loss_type=config.loss_type,
                                  temperature=config.temperature,
                                  max_grad_norm=config.max_grad_norm,
                                  max_completion_length=config.max_completion_length)
            if not all(math.isfinite(v) for v in metrics.values()):
                raise FloatingPointError(f"non-finite GRPO metrics at step {step}: {metrics}")
            tokens += roll.tokens_generated
            length = roll.tokens_generated / len(rw)
            lengths.append(length)
            kls.append(metrics["kl"])
            rec.update(reward_mean=float(rw.mean()), reward_var=float(rw.var()),
                       informative_fraction=float(np.mean(inf)), groups=len(groups),
                       completion_length_mean=length, **metrics)
        else:
            skipped += 1
        if completions >= next_eval or completions >= config.completion_budget:
            last_roll = roll if roll is not None else last_roll
            if last_roll is not None:  # the latest completions that were trained on
                rec["kl_to_warm_start"] = kl_to(warm, last_roll)
                drift.append(rec["kl_to_warm_start"])
            last = _eval(step, completions)
            rec.update({k: v for k, v in last.items() if k not in ("step", "completions")})
            while next_eval <= completions:
                next_eval += config.eval_every
        if curriculum is not None:
            front = difficulty == curriculum.frontier
            curriculum.update(float(estimates.p[front].mean()))
        rec["seconds"] = time.time() - start
        log.write(json.dumps(rec) + "\n")
        log.flush()
    bar.close()
    log.close()
    summary = {
        "remedy": config.remedy, "seed": config.seed, "G": G, "prompts_per_step": B,
        "steps": step, "updates": step - skipped, "steps_without_update": skipped,
        "initial_accuracy": initial["eval_greedy_accuracy"],
        "final_accuracy": last["eval_greedy_accuracy"],
        "initial_sampled_accuracy": initial["eval_sampled_accuracy"],
        "final_sampled_accuracy": last["eval_sampled_accuracy"],
        "final_accuracy_by_difficulty": last["eval_greedy_accuracy_by_difficulty"],
        "completions": completions, "tokens": tokens,
        "informative_groups_used": informative_used, "groups_used": groups_used,
        "informative_per_1k_completions": 1000 * informative_used / max(completions, 1),
        "cap_hits": caps, "final_completion_length": float(np.mean(lengths[-5:])) if lengths
        else None,
        "initial_completion_length": float(np.mean(lengths[:5])) if lengths else None,
        "final_kl": float(np.mean(kls[-5:])) if kls else None,
        "final_kl_to_warm_start": drift[-1] if drift else None,
        "curriculum_open_levels": curriculum.history[-1] if curriculum else None,
        "seconds": time.time() - start, "policy": source, "config": config.to_dict(),
        "grpolab_version": __version__, "git_commit": git_commit(),
        "device": device_name(device), **(extra or {}),
    }
    write_json_atomic(os.path.join(out_dir, "summary.json"), summary)
    return summary


# ----------------------------------------------------------------------------- items
@dataclass
class Item:
    """A lab: named arms (LabConfig overrides) × seeds, plus an optional sampling probe."""

    name: str
    title: str
    arms: dict[str, dict]
    base: dict = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    probe: Callable | None = None  # probe(model, tokenizer, task, prompts, census) -> dict

    def config(self, arm: str, seed: int, **overrides) -> LabConfig:
        d = {**self.base, **self.arms[arm], **overrides, "seed": seed}
        return LabConfig(**d).validate()


def _probe_temperature(model, tokenizer, task, prompts, census, *, seed: int = 0,
                       n_prompts: int = 32, n: int = 32) -> dict:
    """Sampling only, from the warm start, for every (temperature, G): distinct completions
    per group and the zero-variance fraction, next to its prediction.

    For each temperature, ``n`` completions of the same ``n_prompts`` training prompts are
    drawn twice. The first draw estimates each prompt's pass rate and gives the prediction,
    the unbiased estimate of p^G + (1 − p)^G, C(k, G)/C(n, G) + C(n − k, G)/C(n, G)
    (:func:`grpolab.theory.unbiased_zero_gradient_estimate`). The second, independent draw
    is cut into n/G disjoint groups of G per prompt, which gives the observed fractions.
    """
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    sub = [prompts[i] for i in rng.choice(len(prompts), size=min(n_prompts, len(prompts)),
                                          replace=False)]
    rows = []
    for T in (0.2, 0.7, 1.0, 1.3):
        draws = []
        for _ in range(2):
            r = sample(model, tokenizer, [p.text for p in sub], n, temperature=T,
                       max_new_tokens=6, generator=gen)
            rw = np.array([task.reward(sub[j // n], t) for j, t in enumerate(r.texts)])
            draws.append((rw.reshape(len(sub), n), np.array(r.texts).reshape(len(sub), n)))
        k = draws[0][0].sum(1).astype(int)
        rw2, texts2 = draws[1]
        for G in (2, 4, 8, 16, 32):
            if n % G:
                continue
            groups = rw2.reshape(-1, G)
            tgroups = texts2.reshape(-1, G)
            predicted = np.asarray(theory.unbiased_zero_gradient_estimate(
                k, np.full_like(k, n), G))
            rows.append({
                "temperature": T, "G": G, "prompts": len(sub), "groups": int(groups.shape[0]),
                "distinct_mean": float(np.mean([len({t.strip() for t in g}) for g in tgroups])),
                "zero_variance_observed": float((~remedies.informative_groups(groups)).mean()),
                "zero_variance_predicted": float(predicted.mean()),
                "reward_mean": float(rw2.mean())})
    return {"rows": rows}


def _probe_card_rule(model, tokenizer, task, prompts, census, *, seed: int = 0,
                     steps: int = 30, window: int = 10) -> dict:
    """The card's "double G if reward variance > 0.8, halve if < 0.2", driven by the warm
    start's real rewards (no training): binary, partial-credit, partial-credit × 4 (an
    unbounded-scale reward model stand-in) and the variance of group-normalised advantages."""
    from grpolab.tasks import PartialCreditArithmeticTask

    partial = PartialCreditArithmeticTask(**task_kwargs_of(task))
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    kinds = {
        "binary": lambda p, t: task.reward(p, t),
        "partial": lambda p, t: partial.reward(p, t),
        "partial_x4": lambda p, t: 4.0 * partial.reward(p, t),
        "normalized_advantage": None,  # variance of A = (r − mean)/std from binary rewards
    }
    out = {}
    for kind, fn in kinds.items():
        G, hist, traj = 8, [], []
        for _ in range(steps):
            B = max(1, 64 // G)
            sub = [prompts[i] for i in rng.choice(len(prompts), size=B, replace=False)]
            r = sample(model, tokenizer, [p.text for p in sub], G, max_new_tokens=6,
                       generator=gen)
            if fn is None:
                rw = np.array([task.reward(sub[j // G], t) for j, t in enumerate(r.texts)])
                vals = np.asarray(group_advantages(rw, G))
            else:
                vals = np.array([fn(sub[j // G], t) for j, t in enumerate(r.texts)])
            hist.append(float(vals.var()))
            v = float(np.mean(hist[-window:]))
            new_G = remedies.card_variance_rule(G, v)
            traj.append({"G": G, "variance": v, "completions": B * G})
            G = new_G
        out[kind] = {"trajectory": traj,
                     "doubled": sum(b["G"] > a["G"] for a, b in zip(traj, traj[1:], strict=False)),
                     "halved": sum(b["G"] < a["G"] for a, b in zip(traj, traj[1:], strict=False)),
                     "final_G": traj[-1]["G"], "max_variance": max(t["variance"] for t in traj)}
    return out


def task_kwargs_of(task) -> dict:
    """The constructor arguments of an ArithmeticTask (to rebuild it with another reward)."""
    base = getattr(task, "base", task)
    return dict(digits=base.digits, operands=base.operands, ops=base.ops,
                n_train=len(base.train_prompts), n_eval=len(base.eval_prompts), seed=base.seed)


_BUDGET = 5120  # 80 steps of 64 completions
_HARD = {"train_difficulties": [3]}
ITEMS: dict[str, Item] = {
    "dynamic-sampling": Item(
        "dynamic-sampling", "Dynamic sampling (DAPO) at a fixed completion budget",
        arms={"baseline": {}, "dynamic": {"remedy": "dynamic_sampling"},
              "hard-baseline": dict(_HARD),
              "hard-dynamic": {**_HARD, "remedy": "dynamic_sampling"}}),
    "difficulty": Item(
        "difficulty", "Difficulty band filter and curriculum at a fixed budget",
        arms={"uniform": {}, "band": {"remedy": "band"}, "curriculum": {"remedy": "curriculum"}}),
    "adaptive-g": Item(
        "adaptive-g", "Adaptive G: the card's per-prompt rule, a signal target, a budget split",
        arms={"fixed-G8": {}, "card-rule": {"remedy": "adaptive_g_card"},
              "signal-target": {"remedy": "adaptive_g_signal"},
              "allocate": {"remedy": "allocate"}},
        probe=_probe_card_rule),
    "temperature": Item(
        "temperature", "Temperature × G",
        arms={f"T{T}-G{G}": {"temperature": T, "num_generations": G, "prompts_per_step": 64 // G}
              for G in (8, 32) for T in (0.2, 0.7, 1.0, 1.3)},
        probe=_probe_temperature),
    "beta": Item(
        "beta", "β × G",
        arms={f"beta{b}-G{G}": {"beta": b, "num_generations": G, "prompts_per_step": 64 // G}
              for G in (4, 16) for b in (0.0, 0.01, 0.05, 0.1)}),
    "rewards": Item(
        "rewards", "Reward granularity, normalization conventions, noisy rewards",
        arms={"binary-std": {}, "binary-mean-only": {"scale_rewards": "none"},
              "binary-loo": {"advantage_baseline": "leave_one_out"},
              "binary-ddof0": {"advantage_ddof": 0},
              "partial-std": {"reward": "partial"},
              **{f"noisy-G{G}": {"reward": "noisy", "noise_q": 0.2, "num_generations": G,
                                 "prompts_per_step": 64 // G} for G in (4, 8, 32)}},
        seeds=[0, 1, 2, 3, 4]),
    "length-bias": Item(
        "length-bias", "Length-biased reward: G and loss aggregation",
        arms={f"{lt}-G{G}": {"reward": "length_long", "loss_type": lt, "num_generations": G,
                             "prompts_per_step": 64 // G}
              for lt in ("grpo", "dapo", "dr_grpo") for G in (4, 16)}),
    "prompts-x-g": Item(
        "prompts-x-g", "Prompts × G at a fixed budget of 64 completions per step",
        arms={f"B{64 // G}-G{G}": {"num_generations": G, "prompts_per_step": 64 // G}
              for G in (2, 4, 8, 16, 32)},
        seeds=[0, 1, 2, 3, 4]),
}
for _item in ITEMS.values():
    _item.base.setdefault("completion_budget", _BUDGET)


def config_key(config: LabConfig) -> str:
    """A hash of everything that determines a run: identical configs in different items
    (every item's plain G = 8 arm, say) are trained once and shared through the pool."""
    import hashlib

    blob = json.dumps(config.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _copy_run(src: str, dst: str, extra: dict) -> None:
    """Copy a finished run (log, then summary last) and relabel it for its new item/arm."""
    from grpolab.train import write_json_atomic

    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "log.jsonl")) as f:
        log = f.read()
    tmp = os.path.join(dst, f"log.jsonl.tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(log)
    os.replace(tmp, os.path.join(dst, "log.jsonl"))
    with open(os.path.join(src, "summary.json")) as f:
        summary = json.load(f)
    summary.update(extra)
    write_json_atomic(os.path.join(dst, "summary.json"), summary)


def run_item(name: str, out: str | os.PathLike, *, seeds: list[int] | None = None,
             arms: list[str] | None = None, budget: int | None = None,
             cache_dir: str | None = None, pool_dir: str | None = None,
             progress: bool = True, log=print) -> dict:
    """Run (or resume) every arm × seed of item ``name`` into ``out``; aggregate.

    ``pool_dir`` (default ``out/../_pool``) holds every finished run under its
    :func:`config_key`; a run whose config is already there is copied, not retrained.
    """
    from grpolab import __version__
    from grpolab.train import device_name, git_commit, write_json_atomic

    if name not in ITEMS:
        raise ValueError(f"item must be one of {', '.join(ITEMS)}; got {name!r}")
    item = ITEMS[name]
    seeds = list(item.seeds if seeds is None else seeds)
    arms = list(item.arms if arms is None else arms)
    for a in arms:
        if a not in item.arms:
            raise ValueError(f"arm must be one of {', '.join(item.arms)}; got {a!r}")
    over = {"completion_budget": budget} if budget else {}
    configs = {(a, s): item.config(a, s, **over) for a in arms for s in seeds}  # validates all
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    cache_dir = cache_dir or os.path.join(out, "cache")
    write_json_atomic(os.path.join(out, "item.json"), {
        "item": name, "title": item.title, "arms": {a: item.arms[a] for a in arms},
        "base": {k: asdict(v) if is_dataclass(v) else v for k, v in item.base.items()},
        "seeds": seeds, "budget_override": budget,
        "grpolab_version": __version__, "git_commit": git_commit(),
        "device": device_name(torch.device("cpu")), "torch_threads": torch.get_num_threads()})
    if item.probe is not None and not os.path.isfile(os.path.join(out, "probe.json")):
        run_probe(name, out, cache_dir=cache_dir, log=log)
    pool_dir = pool_dir or os.path.join(os.path.dirname(os.path.abspath(out)), "_pool")
    for (a, s), cfg in configs.items():
        run_dir = os.path.join(out, "runs", a, f"seed{s}")
        if os.path.isfile(os.path.join(run_dir, "summary.json")):
            continue
        pooled = os.path.join(pool_dir, config_key(cfg))
        if os.path.isfile(os.path.join(pooled, "summary.json")):
            _copy_run(pooled, run_dir, {"item": name, "arm": a})
            log(f"{name} {a} seed={s}: same config already trained, copied from {pooled}")
            continue
        summ = run_lab(cfg, run_dir, cache_dir=cache_dir, progress=progress,
                       extra={"item": name, "arm": a})
        _copy_run(run_dir, pooled, {})
        log(f"{name} {a} seed={s}: accuracy {summ['initial_accuracy']:.3f} -> "
            f"{summ['final_accuracy']:.3f}, {summ['completions']} completions, "
            f"{summ['seconds']:.0f} s")
    return aggregate_item(out)


def run_probe(name: str, out: str | os.PathLike, *, cache_dir: str | None = None,
              log=print) -> dict:
    """Run an item's sampling-only probe from the warm start into ``out/probe.json``."""
    from grpolab.train import GRPOConfig, load_policy, write_json_atomic

    item = ITEMS[name]
    if item.probe is None:
        raise ValueError(f"item {name!r} has no probe")
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    cfg = item.config(next(iter(item.arms)), item.seeds[0])
    cache_dir = cache_dir or os.path.join(out, "cache")
    model, tok, _ = load_policy(GRPOConfig(warmstart=cfg.warmstart, device=cfg.device),
                                cache_dir, torch.device(cfg.device), False)
    task = make_task(replace(cfg, reward="task"))
    prompts = [p for p in task.train_prompts if p.difficulty in set(cfg.train_difficulties)]
    prompts = prompts[:cfg.max_train_prompts]
    t0 = time.time()
    probe = item.probe(model, tok, task, prompts, None)
    probe["seconds"] = time.time() - t0
    write_json_atomic(os.path.join(out, "probe.json"), probe)
    log(f"{name}: probe done in {probe['seconds']:.0f} s")
    return probe


def _mean_sd(v: list[float]) -> dict:
    v = [x for x in v if x is not None]
    if not v:
        return {"mean": None, "sd": None, "n": 0}
    return {"mean": float(np.mean(v)), "sd": float(np.std(v, ddof=1)) if len(v) > 1 else None,
            "n": len(v), "values": [float(x) for x in v]}


def aggregate_item(out: str | os.PathLike) -> dict:
    """Per-arm means and seed standard deviations of every summary metric into
    ``results.json`` (small; committed), plus accuracy-vs-completions curves per arm."""
    from grpolab.train import write_json_atomic

    out = os.fspath(out)
    with open(os.path.join(out, "item.json")) as f:
        meta = json.load(f)
    metrics = ("final_accuracy", "initial_accuracy", "final_sampled_accuracy",
               "informative_per_1k_completions", "informative_groups_used", "groups_used",
               "completions", "cap_hits", "final_completion_length",
               "initial_completion_length", "final_kl", "final_kl_to_warm_start", "steps",
               "steps_without_update",
               "seconds", "curriculum_open_levels")
    arms = {}
    for arm in meta["arms"]:
        sums, curves = [], []
        for s in meta["seeds"]:
            d = os.path.join(out, "runs", arm, f"seed{s}")
            if not os.path.isfile(os.path.join(d, "summary.json")):
                continue
            with open(os.path.join(d, "summary.json")) as f:
                sums.append(json.load(f))
            with open(os.path.join(d, "log.jsonl")) as f:
                evals = [r for r in map(json.loads, f) if "eval_greedy_accuracy" in r]
            curve = [(r["completions"], r["eval_greedy_accuracy"]) for r in evals]
            initial_by_difficulty = evals[0]["eval_greedy_accuracy_by_difficulty"]
            curves.append({"seed": s, "completions": [c for c, _ in curve],
                           "accuracy": [a for _, a in curve]})
        if not sums:
            continue
        arms[arm] = {m: _mean_sd([x.get(m) for x in sums]) for m in metrics}
        arms[arm]["curves"] = curves
        # learning speed per completion: accuracy at the first evaluation after the start,
        # and the mean accuracy over the evaluations after the start (area under the curve)
        arms[arm]["early_accuracy"] = _mean_sd([c["accuracy"][1] for c in curves
                                                if len(c["accuracy"]) > 1])
        arms[arm]["accuracy_auc"] = _mean_sd([float(np.mean(c["accuracy"][1:])) for c in curves
                                              if len(c["accuracy"]) > 1])
        gain = [x["final_accuracy"] - x["initial_accuracy"] for x in sums]
        arms[arm]["accuracy_gain"] = _mean_sd(gain)
        bydiff: dict[str, list[float]] = {}
        for x in sums:
            for k, v in x["final_accuracy_by_difficulty"].items():
                bydiff.setdefault(k, []).append(v)
        arms[arm]["final_accuracy_by_difficulty"] = {k: _mean_sd(v) for k, v in bydiff.items()}
        arms[arm]["initial_accuracy_by_difficulty"] = initial_by_difficulty
    results = {**meta, "results": arms}
    probe_path = os.path.join(out, "probe.json")
    if os.path.isfile(probe_path):
        with open(probe_path) as f:
            results["probe"] = json.load(f)
    if meta["item"] == "dynamic-sampling":
        results["theory"] = dynamic_sampling_theory(out, arms)
    write_json_atomic(os.path.join(out, "results.json"), results)
    return results


def dynamic_sampling_theory(out: str, arms: dict) -> dict:
    """Theory next to measurement for the dynamic sampler, step by step.

    Before each step the run logs q = mean over training prompts of 1 − p̂^G − (1 − p̂)^G
    from the running pass-rate estimates. A uniformly drawn group is informative with
    probability q, independently of the others, so the number of informative groups in a
    generation batch of b groups is Binomial(b, q). The theory functions take a single pass
    rate, so q is mapped to the p ≤ 1/2 with the same informative probability
    (:func:`grpolab.remedies.pass_rate_for_informative`) and the predictions are
    E[completions] = G·B/q (group by group, uncapped), E[generation batches] (whole batches
    of B groups, as the sampler draws them; cost B·G·E[batches]) and P(hit the cap).
    """
    found = {}
    for arm in ("dynamic", "hard-dynamic"):
        root = os.path.join(out, "runs", arm)
        if os.path.isdir(root):
            found[arm] = {"per_seed": _dynamic_sampling_theory_rows(root)}
    return found


def _capped_batches(p: float, G: int, B: int, cap: int) -> float:
    """E[min(K, cap)] = Σ_{j=0}^{cap−1} P(K > j), with P(K > j) the probability that j
    generation batches of B groups hold fewer than B informative groups."""
    return 1.0 + sum(float(theory.dynamic_sampling_cap_probability(p, G, B, B, j))
                     for j in range(1, cap))


def _dynamic_sampling_theory_rows(root: str) -> list[dict]:
    rows = []
    for s in sorted(os.listdir(root)):
        path = os.path.join(root, s, "summary.json")
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            cfg = LabConfig.from_dict(json.load(f)["config"])
        G, B = cfg.num_generations, cfg.prompts_per_step
        with open(os.path.join(root, s, "log.jsonl")) as f:
            recs = [r for r in map(json.loads, f) if "generation_batches" in r]
        pred_c, pred_b, pred_cap = [], [], []
        for r in recs:
            p = remedies.pass_rate_for_informative(r["q_predicted"], G)
            pred_c.append(float(theory.dynamic_sampling_expected_completions(p, G, B)))
            pred_b.append(float(theory.dynamic_sampling_expected_batches(p, G, B, B)))
            pred_cap.append(float(theory.dynamic_sampling_cap_probability(
                p, G, B, B, cfg.max_batches)))
        q_obs = (sum(r["informative_generated"] for r in recs)
                 / max(1, sum(r["groups_generated"] for r in recs)))
        p_obs = remedies.pass_rate_for_informative(min(max(q_obs, 1e-9), 1.0), G)
        batches_obs_q = _capped_batches(p_obs, G, B, cfg.max_batches)
        rows.append({
            "seed": s, "steps": len(recs),
            # the same formulas, capped at max_batches, at the informative fraction observed
            "generation_batches_predicted_from_observed_q": batches_obs_q,
            "completions_per_step_predicted_from_observed_q": float(B * G * batches_obs_q),
            "cap_hit_probability_predicted_from_observed_q": float(
                theory.dynamic_sampling_cap_probability(p_obs, G, B, B, cfg.max_batches)),
            "q_predicted_mean": float(np.mean([r["q_predicted"] for r in recs])),
            "informative_fraction_observed": float(
                sum(r["informative_generated"] for r in recs)
                / max(1, sum(r["groups_generated"] for r in recs))),
            "generation_batches_observed": float(np.mean([r["generation_batches"] for r in recs])),
            "generation_batches_predicted_uncapped": float(np.mean(pred_b)),
            "completions_per_step_observed": float(np.mean([r["completions_step"] for r in recs])),
            "completions_per_step_predicted_uncapped": float(np.mean(pred_c)),
            # the sampler draws whole generation batches of B groups: cost = B·G·E[batches]
            "completions_per_step_predicted_batched": float(B * G * np.mean(pred_b)),
            "cap_hit_fraction_observed": float(np.mean([r["hit_cap"] for r in recs])),
            "cap_hit_probability_predicted": float(np.mean(pred_cap)),
        })
    return rows


# ----------------------------------------------------------------------------- plots
# The per-item metric shown next to accuracy (the thing the remedy is supposed to change).
SIDE_METRIC = {
    "dynamic-sampling": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "difficulty": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "adaptive-g": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "temperature": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "beta": ("final_kl_to_warm_start", "KL to the warm start at the end (k3)"),
    "rewards": ("informative_per_1k_completions", "informative groups / 1k completions"),
    "length-bias": ("final_completion_length", "completion length (tokens, incl. EOS)"),
    "prompts-x-g": ("informative_per_1k_completions", "informative groups / 1k completions"),
}


def plot_item(out: str | os.PathLike) -> list[str]:
    """``results.png``/``.svg``: accuracy vs completions per arm (mean, min–max band over
    seeds), final accuracy per arm with every seed as a dot, and the item's side metric.
    Items with a sampling probe get ``probe.png``/``.svg`` too. Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = os.fspath(out)
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    arms = res["results"]
    names = list(arms)
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    for k, a in enumerate(names):
        curves = arms[a]["curves"]
        n = min(len(c["accuracy"]) for c in curves)
        x = np.array(curves[0]["completions"][:n])
        y = np.array([c["accuracy"][:n] for c in curves])
        ax.plot(x, y.mean(0), color=cmap(k), label=a)
        ax.fill_between(x, y.min(0), y.max(0), color=cmap(k), alpha=0.15)
    ax.set_xlabel("completions generated")
    ax.set_ylabel("held-out greedy accuracy")
    ax.set_title("accuracy vs completions (band: min–max over seeds)")
    ax.legend(fontsize=7)
    for j, (metric, label) in enumerate([("final_accuracy", "final held-out accuracy"),
                                         SIDE_METRIC.get(res["item"],
                                                         ("final_kl", "final KL"))]):
        ax = axes[j + 1]
        for k, a in enumerate(names):
            st = arms[a].get(metric) or {}
            if st.get("mean") is None:
                continue
            ax.bar(k, st["mean"], color=cmap(k), alpha=0.6)
            ax.scatter([k] * len(st.get("values", [])), st.get("values", []), color="k", s=10)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel(label)
        if metric == "final_accuracy":  # each arm's own warm-start accuracy, as a tick
            for k, a in enumerate(names):
                init = arms[a]["initial_accuracy"]["mean"]
                if init is not None:
                    ax.hlines(init, k - 0.4, k + 0.4, color="gray", ls="--",
                              label="warm start" if k == 0 else None)
            ax.legend(fontsize=7)
    fig.suptitle(f"{res['title']} (tiny model, {len(res['seeds'])} seeds)")
    fig.tight_layout()
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(out, f"results.{ext}")
        fig.savefig(p, dpi=110)
        paths.append(p)
    plt.close(fig)
    probe = res.get("probe")
    if probe and "rows" in probe:  # temperature × G, sampling only
        rows = probe["rows"]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for T in sorted({r["temperature"] for r in rows}):
            rr = [r for r in rows if r["temperature"] == T]
            axes[0].plot([r["G"] for r in rr], [r["distinct_mean"] / r["G"] for r in rr],
                         marker="o", label=f"T={T}")
            line, = axes[1].plot([r["G"] for r in rr], [r["zero_variance_observed"] for r in rr],
                                 marker="o", label=f"T={T} observed")
            if "zero_variance_predicted" in rr[0]:
                axes[1].plot([r["G"] for r in rr], [r["zero_variance_predicted"] for r in rr],
                             ls="--", color=line.get_color(), label=f"T={T} predicted")
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("G")
            ax.legend(fontsize=7)
        axes[0].set_ylabel("distinct completions / G")
        axes[1].set_ylabel("zero-variance fraction")
        fig.suptitle("warm start, sampling only")
        fig.tight_layout()
        for ext in ("png", "svg"):
            p = os.path.join(out, f"probe.{ext}")
            fig.savefig(p, dpi=110)
            paths.append(p)
        plt.close(fig)
    elif probe and "binary" in probe:  # the card's variance rule
        fig, ax = plt.subplots(figsize=(6, 4))
        for kind, d in probe.items():
            if not isinstance(d, dict) or "trajectory" not in d:
                continue
            ax.plot([t["G"] for t in d["trajectory"]], marker=".", label=kind)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("step")
        ax.set_ylabel("G chosen by the card's rule")
        ax.legend(fontsize=7)
        ax.set_title("'double if variance > 0.8, halve if < 0.2'")
        fig.tight_layout()
        for ext in ("png", "svg"):
            p = os.path.join(out, f"probe.{ext}")
            fig.savefig(p, dpi=110)
            paths.append(p)
        plt.close(fig)
    return paths


# ----------------------------------------------------------------------------- book helpers
def results_root() -> str:
    """Where the committed remedy results live: ``$GRPOLAB_REMEDY_RESULTS``, else the first
    ``labs/results/remedies`` found walking up from the working directory, else the one
    next to the package's source checkout."""
    env = os.environ.get("GRPOLAB_REMEDY_RESULTS")
    if env:
        return env
    here = os.path.abspath(os.getcwd())
    while True:
        cand = os.path.join(here, "labs", "results", "remedies")
        if os.path.isdir(cand):
            return cand
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(src, "labs", "results", "remedies")


def load_results(item: str, root: str | None = None) -> dict | None:
    """The committed ``results.json`` of an item, or None when it has not been measured."""
    path = os.path.join(root or results_root(), item, "results.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def _fmt(st: dict | None, digits: int = 3) -> str:
    if not st or st.get("mean") is None:
        return "–"
    sd = f" ± {st['sd']:.{digits}f}" if st.get("sd") is not None else ""
    return f"{st['mean']:.{digits}f}{sd}"


def arm_table(results: dict, metrics: dict[str, str] | None = None, digits: int = 3) -> str:
    """A Markdown table: one row per arm, mean ± sd over seeds of each metric."""
    metrics = metrics or {"final_accuracy": "final accuracy",
                          "accuracy_gain": "gain over warm start",
                          "informative_per_1k_completions": "informative groups / 1k"}
    head = "| arm | seeds | " + " | ".join(metrics.values()) + " |"
    sep = "|---" * (len(metrics) + 2) + "|"
    rows = [head, sep]
    for arm, r in results["results"].items():
        n = r["final_accuracy"]["n"]
        rows.append(f"| {arm} | {n} | " + " | ".join(_fmt(r.get(m), digits) for m in metrics)
                    + " |")
    return "\n".join(rows)


def compare(results: dict, a: str, b: str, metric: str = "final_accuracy") -> dict:
    """Difference of arm means (a − b) and twice its standard error across seeds
    (√(s_a²/n_a + s_b²/n_b)); ``within_noise`` when |difference| ≤ 2 SE."""
    ra, rb = results["results"][a][metric], results["results"][b][metric]
    diff = ra["mean"] - rb["mean"]
    if ra.get("sd") is None or rb.get("sd") is None:
        return {"difference": diff, "two_se": None, "within_noise": None,
                "text": f"{a} − {b}: {diff:+.3f} (one seed: no noise estimate)"}
    two_se = 2 * math.sqrt(ra["sd"] ** 2 / ra["n"] + rb["sd"] ** 2 / rb["n"])
    within = abs(diff) <= two_se
    return {"difference": diff, "two_se": two_se, "within_noise": within,
            "text": f"{a} − {b} ({metric}): {diff:+.3f}, 2 SE = {two_se:.3f}: "
                    + ("within seed noise" if within else "larger than seed noise")}


def publish(out: str | os.PathLike, dest: str | os.PathLike) -> list[str]:
    """Copy the small, committable part of an item's output (``results.json`` and the plots)
    from ``out`` to ``dest`` (e.g. ``labs/results/remedies/<item>``). Returns the paths."""
    import shutil

    out, dest = os.fspath(out), os.fspath(dest)
    os.makedirs(dest, exist_ok=True)
    copied = []
    for name in ("results.json", "results.png", "results.svg", "probe.png", "probe.svg"):
        src = os.path.join(out, name)
        if os.path.isfile(src):
            tmp = os.path.join(dest, f".{name}.tmp-{os.getpid()}")
            shutil.copyfile(src, tmp)
            os.replace(tmp, os.path.join(dest, name))
            copied.append(os.path.join(dest, name))
    return copied


def reproduce_command(item: str) -> str:
    """The shell command that regenerates an item's committed results."""
    return (f"grpolab remedies --item {item} --out runs/remedies/{item} "
            f"--cache runs/remedies-cache --publish labs/results/remedies/{item}")


def display_item(item: str, metrics: dict[str, str] | None = None, *, plot: str = "results.png",
                 root: str | None = None) -> dict | None:
    """For the book: show an item's table (mean ± sd over seeds) and plot, or say plainly
    that it has not been measured yet and how to measure it. Returns the results or None."""
    from IPython.display import Image, Markdown, display

    res = load_results(item, root)
    if res is None:
        display(Markdown(f"**Not yet measured.** Run `{reproduce_command(item)}`."))
        return None
    show_table(arm_table(res, metrics))
    path = os.path.join(root or results_root(), item, plot)
    if os.path.isfile(path):
        display(Image(filename=path))
    return res


def table_html(md: str) -> str:
    """An HTML table from a pipe table (header, separator, rows): the book's Markdown
    renderer is CommonMark, which has no tables."""
    import html

    lines = [ln.strip() for ln in md.strip().splitlines() if ln.strip()]
    cells = [[html.escape(c.strip()) for c in ln.strip("|").split("|")] for ln in lines]
    head, body = cells[0], [r for r in cells[2:]]
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr></thead>",
           "<tbody>"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body]
    return "\n".join(out + ["</tbody>", "</table>"])


def show_table(md: str) -> None:
    """Display a pipe table as HTML (notebooks and the book)."""
    from IPython.display import HTML, display

    display(HTML(table_html(md)))
