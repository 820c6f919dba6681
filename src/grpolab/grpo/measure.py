"""Measurements of a policy that every lab shares: held-out accuracy, the pass-rate census,
the running pass-rate window behind the zero-variance prediction, and gradient noise.

None of these changes the policy. The loop (:mod:`grpolab.grpo.loop`) calls them, the labs
call them directly (the sweep's gradient-noise measurement, the remedies' probes).

Derived in: book/theory/03-zero-variance.md (the prediction p^G + (1 − p)^G) and
book/labs/01-g-sweep.md (the unbiased estimate from a window, the gradient noise).
"""

from __future__ import annotations

import numpy as np
import torch

from grpolab import theory
from grpolab.advantages import group_advantages, zero_variance_groups
from grpolab.grpo.rollout import sample

__all__ = ["rewards_of", "evaluate", "pass_rate_census", "PassRateWindow",
           "ZeroVarianceMonitor", "gradient_noise", "noise_from_gram"]


def rewards_of(task, prompts, texts, G: int) -> np.ndarray:
    """Training rewards of B·G prompt-major completions (G per prompt)."""
    return np.array([task.reward(prompts[i // G], s) for i, s in enumerate(texts)], float)


@torch.no_grad()
def evaluate(model, tokenizer, task, prompts, *, samples: int, temperature: float,
             top_p: float, max_new_tokens: int, generator=None) -> dict:
    """Held-out accuracy: greedy (one completion each) and sampled (``samples`` each, i.e.
    pass@1 estimated from ``samples`` draws), overall and per difficulty. Accuracy uses
    ``task.correct``, never a noisy reward.

    Also per prompt, in the order of ``prompts``: ``eval_sampled_successes`` (how many of the
    ``samples`` were right: the c of the unbiased pass@k estimate,
    :func:`grpolab.theory.pass_at_k`, for every k ≤ samples) and ``eval_greedy_correct``
    (0/1), so that an interval can resample prompts as well as seeds."""
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
           "eval_greedy_accuracy_by_difficulty": {}, "eval_sampled_accuracy_by_difficulty": {},
           "eval_sampled_successes": s_ok.sum(1).astype(int).tolist(),
           "eval_greedy_correct": g_ok.astype(int).tolist()}
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
        rows.append(rewards_of(task, chunk, r.texts, samples).reshape(len(chunk), samples))
    return np.concatenate(rows) > 0.5


class PassRateWindow:
    """The last ``width`` binary rewards of every training prompt (a ring buffer), seeded
    with the first ``width`` columns of the starting policy's census.

    Both backends use this one class, with the same slice of the census, so their
    predicted zero-variance fractions are computed the same way.
    """

    def __init__(self, census: np.ndarray, width: int | None = None):
        width = census.shape[1] if width is None else width
        if census.ndim != 2 or census.shape[1] < width:
            raise ValueError(f"census must have >= {width} columns, got shape {census.shape}")
        self.hits = census[:, :width].astype(bool).copy()  # (n_prompts, width)
        self.next = np.zeros(len(census), dtype=int)

    def predict(self, idx, G: int) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased and plug-in estimates of p^G + (1 − p)^G for prompts ``idx``."""
        k = self.hits[idx].sum(1)
        n = self.hits.shape[1]
        unbiased = np.asarray(theory.unbiased_zero_variance_estimate(k, np.full_like(k, n), G))
        plug_in = np.asarray(theory.zero_variance_probability(k / n, G))
        return unbiased, plug_in

    def push(self, idx, outcomes) -> None:
        """Record each prompt's new binary outcomes (its most recent ``width`` are kept)."""
        width = self.hits.shape[1]
        for j, row in zip(idx, outcomes, strict=True):
            for hit in np.asarray(row)[-width:]:
                self.hits[j, self.next[j]] = hit
                self.next[j] = (self.next[j] + 1) % width


class ZeroVarianceMonitor:
    """Zero-variance groups step by step: observed in the step's rewards, and predicted
    before the step from each prompt's recent rewards (:class:`PassRateWindow`).

    Both backends feed it the same way (:meth:`observe`, once per step), so their logs and
    summaries compute these numbers identically. The prediction for a group of size g is the
    unbiased estimate of p^g + (1 − p)^g from the prompt's window
    (:func:`grpolab.theory.unbiased_zero_variance_estimate`), next to the plug-in p̂^g + (1−p̂)^g.
    Every group is predicted before any is recorded, because a prompt may recur in a batch.
    Non-binary rewards (partial credit, length bonuses) are observed but not predicted.
    """

    def __init__(self, census: np.ndarray, width: int):
        self.window = PassRateWindow(census, width)
        self.width = width
        self.observed: list[float] = []
        self.predicted: list[float] = []
        self.informative_groups = 0
        self.groups = 0

    def observe(self, rewards: np.ndarray, group_sizes, prompt_idx) -> dict:
        """Record one step's groups (flat prompt-major ``rewards``; ``group_sizes[j]`` rewards
        of prompt ``prompt_idx[j]``); return the step's log entries."""
        sizes = list(group_sizes)
        starts = np.cumsum([0] + sizes)[:-1]
        zero_var = np.array([bool(zero_variance_groups(rewards[s:s + g], g)[0])
                             for s, g in zip(starts, sizes, strict=True)])
        observed = float(zero_var.mean())
        rec: dict = {}
        binary = bool(np.all((rewards == 0) | (rewards == 1)))
        if binary and max(sizes) <= self.width:
            pred, plug = [], []
            for g, i in zip(sizes, prompt_idx, strict=True):
                u, p = self.window.predict([i], g)
                pred.append(float(u[0]))
                plug.append(float(p[0]))
            rec.update(zero_variance_predicted=float(np.mean(pred)),
                       zero_variance_predicted_plugin=float(np.mean(plug)))
            self.predicted.append(rec["zero_variance_predicted"])
        if binary:
            for s, g, i in zip(starts, sizes, prompt_idx, strict=True):
                self.window.push([i], [rewards[s:s + g] > 0.5])
            rec["pass_rate_estimate_mean"] = float(self.window.hits[list(prompt_idx)].mean())
            # which training prompts had at least one success this step: the coverage a
            # run reaches (distinct prompts ever solved per completion, design B's
            # mechanism check, grpolab.labs.design_b) is counted from these
            rec["solved_prompts"] = sorted({int(i) for s, g, i in zip(starts, sizes, prompt_idx,
                                                                       strict=True)
                                            if rewards[s:s + g].max() > 0.5})
            # the sharpening mechanism (design A, book/labs/07-crossing.md): groups that
            # were all correct, the zero-variance groups an easy pool piles up
            rec["all_correct_fraction"] = float(np.mean(
                [bool(np.all(rewards[s:s + g] > 0.5)) for s, g in zip(starts, sizes,
                                                                    strict=True)]))
        self.observed.append(observed)
        self.informative_groups += int((~zero_var).sum())
        self.groups += len(sizes)
        rec.update(zero_variance_observed=observed, informative_fraction=1.0 - observed,
                   groups=len(sizes))
        return rec

    def summary(self) -> dict:
        """The run's means: observed and predicted fractions, their gap, groups used."""
        obs = float(np.mean(self.observed)) if self.observed else None
        pred = float(np.mean(self.predicted)) if self.predicted else None
        return {"zero_variance_observed": obs, "zero_variance_predicted": pred,
                "zero_variance_abs_gap": (abs(obs - pred) if obs is not None and pred is not None
                                          else None),
                "informative_groups_used": self.informative_groups, "groups_used": self.groups}


def gradient_noise(model, tokenizer, task, prompts, config, batches: int, seed: int = 0) -> dict:
    """Noise of the GRPO gradient at fixed parameters, from ``batches`` independent batches
    of ``config.prompts_per_step`` prompts × ``config.num_generations`` completions.

    Returns ``trace_variance`` = E‖g − ḡ‖² (the total variance of one batch's gradient),
    ``mean_gradient_norm_sq`` = ‖ḡ‖², their ratio ``noise_to_signal``, and the mean
    fraction of zero-variance groups (within the tolerance of
    :func:`grpolab.advantages.zero_variance_groups`, not ``std == 0``). No optimizer step.
    """
    from grpolab.grpo.loss import grpo_loss, per_token_logprobs

    G, B = config.num_generations, config.prompts_per_step
    gen = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    rng = np.random.default_rng(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    # one float64 row per batch gradient, written in place: collecting the rows in a list
    # and stacking them held every gradient twice (about 53 MB extra on the tiny model)
    stack = torch.empty(batches, sum(p.numel() for p in params), dtype=torch.float64,
                        device=next(model.parameters()).device)
    zero = []
    for b in range(batches):
        batch = [prompts[i] for i in rng.choice(len(prompts), size=B, replace=False)]
        r = sample(model, tokenizer, [p.text for p in batch], G, generator=gen,
                   temperature=config.temperature, top_p=config.top_p,
                   max_new_tokens=config.max_completion_length)
        rewards = rewards_of(task, batch, r.texts, G)
        zero.append(float(zero_variance_groups(rewards, G).mean()))
        adv = group_advantages(torch.as_tensor(rewards, dtype=torch.float32), G,
                               scale=config.scale_rewards, baseline=config.advantage_baseline,
                               ddof=config.advantage_ddof, eps=config.advantage_eps)
        logp, _ = per_token_logprobs(model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                     r.completion_mask, config.temperature)
        loss, _ = grpo_loss(logp, logp.detach(), None, adv, r.completion_mask,
                            loss_type=config.loss_type,
                            max_completion_length=config.max_completion_length)
        g = torch.autograd.grad(loss, params, allow_unused=True)
        stack[b] = torch.cat([(x if x is not None else torch.zeros_like(p)).reshape(-1)
                              for x, p in zip(g, params, strict=True)])
    gram = (stack @ stack.T).tolist()  # g_i · g_j: enough to bootstrap over batches
    stats = noise_from_gram(np.asarray(gram))
    return {"G": G, "prompts_per_step": B, "batches": batches, **stats,
            "zero_variance_fraction": float(np.mean(zero)), "gram": gram}


def noise_from_gram(gram: np.ndarray, counts: np.ndarray | None = None) -> dict:
    """Trace variance, squared mean norm and their ratio from the Gram matrix K_ij = g_i·g_j
    of n batch gradients: E‖g − ḡ‖² = (Σ K_ii − Σ K_ij / n)/(n − 1), ‖ḡ‖² = Σ K_ij / n².

    ``counts[k]``: how often batch k was drawn (a bootstrap resample of n = Σ counts). Then
    ‖∇J‖² is estimated from pairs of two *different* batches only (a batch drawn twice and
    paired with itself is ‖∇J‖² plus its whole noise), the trace variance as the mean ‖g‖²
    minus that, and ‖ḡ‖² is reported as that estimate + trace variance/n, so a fit that
    debiases by trace variance/n (:func:`grpolab.advise.fit_noise_constants`) gets the
    pair estimate back. With every count 1 these are the formulas above."""
    if counts is None:
        n = gram.shape[0]
        total = float(gram.sum())
        trace_var = (float(np.trace(gram)) - total / n) / (n - 1)
        signal = total / n ** 2
    else:
        c = np.asarray(counts, dtype=float)
        diag = np.diag(gram)
        n = float(c.sum())
        pair_signal = float((c @ gram @ c - (c ** 2 * diag).sum()) / (n ** 2 - (c ** 2).sum()))
        trace_var = float((c * diag).sum() / n) - pair_signal
        signal = pair_signal + trace_var / n
    return {"trace_variance": trace_var, "mean_gradient_norm_sq": signal,
            "noise_to_signal": trace_var / signal if signal > 0 else None}
