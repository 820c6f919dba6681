"""The GRPO loss and update, term by term.

For completion i of a group, token t, with ratio ρ_{i,t} = π_θ(o_{i,t}|·) / π_old(o_{i,t}|·)
and group-relative advantage Â_i (:func:`grpolab.advantages.group_advantages`):

    ℓ_{i,t} = − min(ρ_{i,t} Â_i, clip(ρ_{i,t}, 1 − ε, 1 + ε_high) Â_i) + β · KL_{i,t}

    KL_{i,t} = π_ref/π_θ − log(π_ref/π_θ) − 1          (the "k3" estimator, ≥ 0)

and ``loss_type`` decides how the ℓ_{i,t} are averaged (TRL ``GRPOTrainer._compute_loss``):

    grpo     mean over sequences of (mean over that sequence's tokens)   (DeepSeekMath eq. 3)
    bnpo     sum over all tokens / number of tokens in the batch
    dr_grpo  sum over all tokens / (sequences × max_completion_length)   (Dr. GRPO)
    dapo     sum over all tokens / tokens in the whole generation batch   (DAPO eq. 8)

With one optimizer step per generation batch (what grpolab does) ``dapo`` equals ``bnpo``.

Derived in: book/theory/01-grpo-in-one-page.md ("The objective", "Loss aggregation").
"""

from __future__ import annotations

import torch

from grpolab.grpo import fast_llama

__all__ = ["LOSS_TYPES", "per_token_logprobs", "grpo_loss", "grpo_update"]

from grpolab.grpo.config import LOSS_TYPES  # noqa: E402  (one list, shared with the config)


def per_token_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask,
                       temperature: float = 1.0, *, fast: bool | None = None):
    """Log π_θ(o_t | prompt, o_<t) for every completion token, and the policy's entropy there.

    One forward pass over prompt + completion; logits are divided by ``temperature``, as
    in sampling (TRL does the same). Returns ``(logprobs, entropy)``, both (N, T).

    For Llama models (``fast=None`` → :func:`grpolab.grpo.fast_llama.supports`) the pass is
    :func:`grpolab.grpo.fast_llama.completion_logits`: the same numbers, but a prompt shared by
    consecutive rows (a GRPO group) is computed once instead of G times, and only the
    completion positions reach the head. ``fast=False`` forces ``model.forward``.
    """
    T = completion_ids.shape[1]
    if fast is None:
        fast = fast_llama.supports(model)
    if fast:
        logits = fast_llama.completion_logits(model, prompt_ids, prompt_mask, completion_ids,
                                          completion_mask).float()
    else:
        ids = torch.cat([prompt_ids, completion_ids], dim=1)
        mask = torch.cat([prompt_mask, completion_mask], dim=1)
        # Positions count real tokens only, as generate() does. With rotary positions (the
        # tiny model, SmolLM2) attention sees only distances, so TRL's pass without them agrees.
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                       use_cache=False, logits_to_keep=T + 1).logits[:, -T - 1:-1, :].float()
    if temperature > 0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logprobs = logp_all.gather(-1, completion_ids[..., None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logprobs, entropy


def grpo_loss(logprobs, old_logprobs, ref_logprobs, advantages, completion_mask, *,
              epsilon: float = 0.2, epsilon_high: float | None = None, beta: float = 0.0,
              loss_type: str = "dapo", max_completion_length: int | None = None,
              num_items_in_batch: int | float | None = None):
    """The GRPO loss of a batch of completions, and what it is made of.

    Args:
        logprobs: (N, T) log π_θ of the sampled tokens (with grad).
        old_logprobs: (N, T) log π_old (the sampling policy), no grad.
        ref_logprobs: (N, T) log π_ref of the frozen reference, or ``None`` when β = 0.
        advantages: (N,) one advantage per completion, broadcast over its tokens.
        completion_mask: (N, T) 1 on real completion tokens, 0 on padding.
        epsilon: lower clip ε (ratio ≥ 1 − ε); TRL's ``epsilon``.
        epsilon_high: upper clip ε_high (ratio ≤ 1 + ε_high); ``None`` → ``epsilon`` (DAPO's
            "clip-higher" uses 0.28 with ε = 0.2).
        beta: weight of the k3 KL penalty to the reference (TRL ``beta``; 0 skips it).
        loss_type: ``"grpo"``, ``"bnpo"``, ``"dr_grpo"`` or ``"dapo"`` (see module docstring).
        max_completion_length: the constant denominator of ``dr_grpo`` (required there, as
            TRL always divides by its ``max_completion_length``: the batch's own T would make
            the loss scale depend on the longest completion sampled); unused otherwise.
        num_items_in_batch: tokens in the whole generation batch, the denominator of
            ``dapo``; ``None`` → the tokens in this batch.

    Returns:
        ``(loss, metrics)``: a scalar tensor, and floats ``kl`` (mean k3 KL per token;
        0 when β = 0), ``clip_ratio_low``, ``clip_ratio_high``, ``clip_ratio`` (fractions of
        tokens whose ratio was clipped with a nonzero advantage pushing past the bound).

    Derived in: book/theory/01-grpo-in-one-page.md, "The objective".
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    if not epsilon_high >= 0:
        raise ValueError(f"epsilon_high must be >= 0, got {epsilon_high!r}")
    if not beta >= 0:
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    if beta != 0 and ref_logprobs is None:
        raise ValueError("ref_logprobs are required when beta != 0")
    _check_dr_grpo_length(loss_type, max_completion_length)
    mask = completion_mask.to(logprobs.dtype)
    adv = advantages.to(logprobs.dtype)[:, None]

    # Clipped surrogate: the ratio ρ = π_θ/π_old, clipped to [1 − ε, 1 + ε_high].
    ratio = torch.exp(logprobs - old_logprobs)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high)
    per_token = -torch.min(ratio * adv, clipped * adv)

    # k3 KL estimator to the reference: exp(r − l) − (r − l) − 1 ≥ 0, unbiased for KL(π_θ‖π_ref).
    if beta != 0:
        delta = ref_logprobs - logprobs
        per_token_kl = torch.exp(delta) - delta - 1
        per_token = per_token + beta * per_token_kl

    n_tokens = mask.sum().clamp(min=1.0)
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "bnpo":
        loss = (per_token * mask).sum() / n_tokens
    elif loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (logprobs.shape[0] * max_completion_length)
    else:  # dapo
        denom = n_tokens if num_items_in_batch is None else max(float(num_items_in_batch), 1.0)
        loss = (per_token * mask).sum() / denom

    with torch.no_grad():
        low = ((ratio < 1 - epsilon) & (adv < 0)).to(mask.dtype)
        high = ((ratio > 1 + epsilon_high) & (adv > 0)).to(mask.dtype)
        metrics = {
            "kl": float((per_token_kl * mask).sum() / n_tokens) if beta != 0 else 0.0,
            "clip_ratio_low": float((low * mask).sum() / n_tokens),
            "clip_ratio_high": float((high * mask).sum() / n_tokens),
        }
        metrics["clip_ratio"] = metrics["clip_ratio_low"] + metrics["clip_ratio_high"]
    return loss, metrics


def _check_dr_grpo_length(loss_type: str, max_completion_length) -> None:
    """``dr_grpo`` divides by a constant; without it the normalizer would silently be the
    batch's T (the longest completion sampled), which TRL never uses."""
    if loss_type != "dr_grpo":
        return
    if max_completion_length is None:
        raise ValueError("loss_type='dr_grpo' needs max_completion_length (its constant "
                         "denominator, TRL's max_completion_length)")
    if (isinstance(max_completion_length, bool) or not isinstance(max_completion_length, int)
            or max_completion_length < 1):
        raise ValueError(f"max_completion_length must be an integer >= 1, "
                         f"got {max_completion_length!r}")


def grpo_update(model, optimizer, rollout, advantages, *, ref_model=None,
                num_iterations: int = 1, epsilon: float = 0.2, epsilon_high: float | None = None,
                beta: float = 0.0, loss_type: str = "dapo", temperature: float = 1.0,
                max_grad_norm: float | None = 1.0, max_completion_length: int | None = None,
                fast: bool | None = None):
    """Take ``num_iterations`` optimizer steps on one rollout batch (TRL's μ).

    With ``num_iterations == 1`` the policy is still π_old, so ρ ≡ 1 and the clip never
    binds (TRL uses the detached log-probs as π_old). With more iterations, π_old is the
    sampler's log-probability from :func:`grpolab.grpo.rollout.sample` and the clip starts to act.

    No reference pass runs when β = 0, and no separate π_old pass at all: with one iteration
    π_old is the detached current log-probability, with more it is the sampler's
    ``old_logprobs``. ``fast`` is passed to :func:`per_token_logprobs` (``None``: the
    shared-prompt pass for Llama models).

    Returns a dict of floats averaged over iterations: ``loss``, ``grad_norm`` (before
    clipping), ``kl``, ``entropy`` (mean per-token entropy of π_θ), ``clip_ratio*``.
    """
    _check_dr_grpo_length(loss_type, max_completion_length)
    device = next(model.parameters()).device
    p_ids, p_mask = rollout.prompt_ids.to(device), rollout.prompt_mask.to(device)
    c_ids, c_mask = rollout.completion_ids.to(device), rollout.completion_mask.to(device)
    adv = advantages.to(device)
    ref_logprobs = None
    if beta != 0:
        if ref_model is None:
            raise ValueError("ref_model is required when beta != 0")
        with torch.no_grad():
            ref_logprobs, _ = per_token_logprobs(ref_model, p_ids, p_mask, c_ids, c_mask,
                                                 temperature, fast=fast)
    totals: dict[str, float] = {}
    model.train()
    for _ in range(num_iterations):
        logprobs, entropy = per_token_logprobs(model, p_ids, p_mask, c_ids, c_mask, temperature,
                                               fast=fast)
        old = logprobs.detach() if num_iterations == 1 else rollout.old_logprobs.to(device)
        loss, metrics = grpo_loss(logprobs, old, ref_logprobs, adv, c_mask, epsilon=epsilon,
                                  epsilon_high=epsilon_high, beta=beta, loss_type=loss_type,
                                  max_completion_length=max_completion_length)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for p in model.parameters() if p.grad is not None]
        norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm or float("inf"))
        optimizer.step()
        m = c_mask.to(entropy.dtype)
        metrics.update(loss=loss.item(), grad_norm=norm.item(),
                       entropy=float((entropy.detach() * m).sum() / m.sum().clamp(min=1)))
        for k, v in metrics.items():
            totals[k] = totals.get(k, 0.0) + v / num_iterations
    model.eval()
    return totals
