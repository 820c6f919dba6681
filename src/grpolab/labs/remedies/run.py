"""The remedy lab's training loop: one GRPO run with a pluggable batch builder.

One job: train a policy with GRPO plus one remedy (or reward variant) until a fixed budget
of completions is spent, and log what the remedy changed. The loop is
:func:`grpolab.grpo.loop.run`'s loop with two things made explicit, because the remedies change
exactly those:

    while completions < completion_budget:                 # a FIXED BUDGET of completions
        batch     ← build_batch(...)                       # which prompts, which G, which groups
                    uniform | band | curriculum | adaptive G | allocation | dynamic sampling
        rewards   ← task.reward (optionally length-biased or noisy)
        A         ← group_advantages(scale, baseline, ddof, eps)        (grpolab.advantages)
        update    ← grpo_update                                          (grpolab.grpo.loss)
        log       ← completions spent, informative groups used, accuracy every eval_every

Everything else (warm start, rollout, evaluation, provenance) is imported from
:mod:`grpolab.grpo.loop` and friends, so a remedy run and a sweep run start from the same
weights and measure accuracy the same way. The labs built on this loop are in
:mod:`grpolab.labs.remedies.items`; their results, plots and book helpers in
:mod:`grpolab.labs.remedies.report`.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from grpolab import theory
from grpolab.advantages import BASELINES, SCALES, group_advantages
from grpolab.grpo.loss import LOSS_TYPES, grpo_update
from grpolab.grpo.rollout import Rollout, sample
from grpolab.labs.remedies import strategies as remedies
from grpolab.labs.sweep.presets import TASK_KWARGS
from grpolab.models.warmstart import WarmStartConfig
from grpolab.tasks.arithmetic import Prompt, Task, get_task

__all__ = ["LabConfig", "REMEDIES", "REWARDS", "LengthBiasedReward", "PartialCreditReward",
           "make_task", "merge_rollouts", "run_lab"]

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
    :class:`.PartialCreditArithmeticTask` (``get_task("arithmetic_partial")``
    draws a different prompt set, which would confound a reward comparison)."""

    def __init__(self, base: Task):
        self.base, self.name = base, f"{base.name}_partial"
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts

    def reward(self, prompt: Prompt, completion: str) -> float:
        from grpolab.tasks.arithmetic import PartialCreditArithmeticTask

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
    from grpolab.grpo.loop import pass_rate_census

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
    from grpolab.grpo.loop import (
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
        from grpolab.grpo.loss import per_token_logprobs

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
