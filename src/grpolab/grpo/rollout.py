"""The rollout sampler: G completions per prompt, with the prompt encoded once.

GRPO samples G completions of the same prompt. Encoding that prompt G times wastes
G − 1 forward passes over it, so :func:`sample` runs the prompt batch through the model
once, then repeats its key/value cache G times along the batch axis
(``DynamicCache.batch_repeat_interleave``) and decodes all B·G continuations together,
one token per step, reusing the cache. The per-prompt cost of the prompt is paid once,
whatever G is (book/theory/04-cost-of-g.md; ``grpolab.theory.sampling_cost``).

Sampling: temperature (``0`` = greedy), nucleus ``top_p``, stop at EOS; finished rows
are padded and masked. The log-probability of every sampled token under the
temperature-scaled policy is returned as ``old_logprobs`` (TRL's ``old_per_token_logps``),
the denominator of the PPO/GRPO ratio.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import torch

from grpolab.grpo import fast_llama

__all__ = ["Rollout", "sample", "sample_next_token", "multinomial_one", "exponential_like",
           "encode_prompts", "merge_rollouts"]


@dataclass
class Rollout:
    """B prompts × G completions, rows prompt-major (the G completions of prompt 0 first).

    Shapes: ``prompt_ids``/``prompt_mask`` (B·G, P), left-padded; ``completion_ids``,
    ``completion_mask``, ``old_logprobs`` (B·G, T). ``completion_mask`` is 1 on every
    generated token up to and including EOS and 0 after it.
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    old_logprobs: torch.Tensor
    texts: list[str]
    num_generations: int

    @property
    def tokens_generated(self) -> int:
        """Completion tokens actually generated (EOS included, padding excluded)."""
        return int(self.completion_mask.sum())


def encode_prompts(tokenizer, prompts: list[str], device) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ``(input_ids, attention_mask)`` for a list of prompt strings (through the
    tokenizer's ``encode_left_padded`` when it has one: the tiny model's fast path)."""
    if hasattr(tokenizer, "encode_left_padded"):
        ids, mask = tokenizer.encode_left_padded(list(prompts))
        return ids.to(device), mask.to(device)
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        enc = tokenizer(list(prompts), padding=True, return_tensors="pt")
    finally:
        tokenizer.padding_side = side
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


@functools.cache
def _cache_argument(model_class: type) -> str:
    """transformers ≥ 5 names the cache argument ``cache``; older versions ``past_key_values``.

    Looked up once per model class: ``inspect.signature`` on every decoded token would be a
    visible share of a tiny model's decode step.
    """
    params = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _step(model, input_ids, attention_mask, position_ids, cache):
    """One forward pass that returns the last position's logits and the updated KV cache."""
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                  use_cache=True, logits_to_keep=1)
    if cache is None:
        from transformers import DynamicCache

        cache = DynamicCache()
    kwargs[_cache_argument(type(model))] = cache
    out = model(**kwargs)
    new_cache = out.cache if hasattr(out, "cache") else out.past_key_values
    return out.logits[:, -1, :], new_cache


def sample_next_token(logits: torch.Tensor, temperature: float, top_p: float,
                      generator: torch.Generator | None = None):
    """Draw one token per row; return ``(token, logprob)``.

    The log-probability is under softmax(logits / temperature) over the whole vocabulary
    (as TRL computes it), even when ``top_p`` truncates what can be drawn. Temperature 0 is
    greedy and gives logprob 0 for the argmax token.
    """
    if temperature == 0:
        token = logits.argmax(-1)
        return token, torch.zeros(token.shape, dtype=torch.float32, device=logits.device)
    logits = logits.float()
    if temperature != 1.0:  # x / 1 == x exactly: skip the kernel
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    probs = logp.exp()
    if top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # keep the smallest prefix whose mass reaches top_p (always at least one token)
        drop = sorted_p.cumsum(-1) - sorted_p >= top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    token = multinomial_one(probs, generator)
    return token, logp.gather(-1, token[:, None]).squeeze(-1)


def multinomial_one(probs: torch.Tensor, generator: torch.Generator | None = None):
    """``torch.multinomial(probs, 1).squeeze(-1)`` for rows of a valid distribution, minus
    its input checks.

    ATen draws a single sample as ``argmax(probs / q)`` with ``q ~ Exp(1)`` (the Gumbel-max
    trick; ``multinomial``'s ``n_sample == 1`` path in ``Distributions.cpp``). The same
    variates (drawn by :func:`exponential_like`) and the same division and argmax, so the
    generator is consumed identically and every
    token equals ``torch.multinomial``'s, and hence ``generate``'s
    (``tests/test_rollout.py`` checks both, generator state included). What is skipped are
    the checks for inf, NaN, negative and all-zero rows (about ten small kernels and a
    sync per call), which ``exp(log_softmax(logits))`` passes by construction for finite
    logits; non-finite logits surface as non-finite log-probabilities instead, which
    :func:`sample` reports.
    """
    return probs.div(exponential_like(probs, generator)).argmax(-1)


def exponential_like(x: torch.Tensor, generator: torch.Generator | None = None):
    """``torch.empty_like(x).exponential_(1, generator=generator)``: the same values and the
    same generator state afterwards, about twice as fast on CPU.

    ATen's CPU kernel draws each variate serially as ``−log1p(−u)`` in double precision,
    from ``u`` = 53 random bits of the generator, and rounds it to ``x``'s dtype
    (``exponential_kernel`` in ``ATen/native/cpu/DistributionTemplates.h``). A float64
    ``uniform_`` draws those same ``u`` in the same order, and a vectorised ``log1p`` then
    costs less than the scalar one (it was half the sampler's draw on the tiny model).
    Used only where :func:`_uniform_matches_exponential` has confirmed, once per process,
    that this torch build really behaves so; anywhere else (CUDA, another dtype) the plain
    call runs.
    """
    if x.device.type == "cpu" and x.dtype == torch.float32 and _uniform_matches_exponential():
        u = torch.empty(x.shape, dtype=torch.float64).uniform_(generator=generator)
        return u.neg_().log1p_().neg_().to(torch.float32)
    return torch.empty_like(x).exponential_(1, generator=generator)


@functools.cache
def _uniform_matches_exponential() -> bool:
    """True if :func:`exponential_like`'s CPU route reproduces ``exponential_`` here: equal
    values and equal generator states on 20,000 draws (checked once per process)."""
    gen = torch.Generator().manual_seed(20240601)
    start = gen.get_state()
    want = torch.empty(20_000).exponential_(1, generator=gen)
    want_state = gen.get_state()
    gen.set_state(start)
    u = torch.empty(20_000, dtype=torch.float64).uniform_(generator=gen)
    got = u.neg_().log1p_().neg_().to(torch.float32)
    return torch.equal(want, got) and torch.equal(want_state, gen.get_state())


def sample(model, tokenizer, prompts: list[str], num_generations: int = 1, *,
           max_new_tokens: int = 8, temperature: float = 1.0, top_p: float = 1.0,
           generator: torch.Generator | None = None, fast: bool | None = None) -> Rollout:
    """Sample ``num_generations`` completions for each prompt, sharing the prompt's KV cache.

    Args:
        model: a Hugging Face causal LM (any device; inputs follow it).
        tokenizer: its tokenizer (needs ``eos_token_id`` and ``pad_token_id``).
        prompts: B prompt strings.
        num_generations: G, completions per prompt (TRL's name).
        max_new_tokens: cap on completion length (TRL's ``max_completion_length``).
        temperature: softmax temperature; 0 means greedy.
        top_p: nucleus sampling mass in (0, 1].
        generator: a seeded ``torch.Generator`` on the model's device, for reproducible draws.
        fast: use the hand-written Llama decode loop (:mod:`grpolab.grpo.fast_llama`);
            ``None`` (default) takes it whenever :func:`grpolab.grpo.fast_llama.supports` the
            model, ``False`` forces the generic ``model.forward`` loop (for comparisons).

    Returns:
        A :class:`Rollout` with B·G rows, prompt-major.
    """
    if num_generations < 1 or int(num_generations) != num_generations:
        raise ValueError(f"num_generations must be an integer >= 1, got {num_generations!r}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if not prompts:
        raise ValueError("prompts must be a non-empty list of strings")
    G = int(num_generations)
    device = next(model.parameters()).device
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    ids, mask = encode_prompts(tokenizer, prompts, device)
    if fast is None:
        fast = fast_llama.supports(model)
    if fast:
        completion_ids, completion_mask, old_logprobs = fast_llama.sample_llama(
            model, ids, mask, G, max_new_tokens, temperature, top_p, generator, eos, pad,
            sample_next_token)
    else:
        completion_ids, completion_mask, old_logprobs = _decode_generic(
            model, ids, mask, G, max_new_tokens, temperature, top_p, generator, eos, pad)
    if temperature > 0 and not bool(torch.isfinite(old_logprobs).all()):
        raise FloatingPointError("the model's next-token distribution is not finite (NaN or "
                                 "inf logits): the weights have diverged; lower "
                                 "--learning-rate")
    texts = tokenizer.batch_decode(completion_ids.masked_fill(completion_mask == 0, pad),
                                   skip_special_tokens=True)
    return Rollout(
        prompt_ids=ids.repeat_interleave(G, dim=0),
        prompt_mask=mask.repeat_interleave(G, dim=0),
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        old_logprobs=old_logprobs,
        texts=texts,
        num_generations=G,
    )


@torch.no_grad()
def _decode_generic(model, ids, mask, G, max_new_tokens, temperature, top_p, generator, eos,
                    pad):
    """The architecture-agnostic loop: one ``model.forward`` per token with a
    ``DynamicCache``. Returns ``(completion_ids, completion_mask, old_logprobs)``."""
    device = ids.device
    positions = (mask.cumsum(-1) - 1).clamp(min=0)

    # 1. Encode each prompt once ...
    logits, cache = _step(model, ids, mask, positions, None)
    # 2. ... then share its cache with the G samples: rows become prompt-major B·G.
    cache.batch_repeat_interleave(G)
    logits = logits.repeat_interleave(G, dim=0)
    mask = mask.repeat_interleave(G, dim=0)
    next_pos = positions[:, -1:].repeat_interleave(G, dim=0) + 1

    n = logits.shape[0]
    tokens, logprobs, keep = [], [], []
    done = torch.zeros(n, dtype=torch.bool, device=device)
    for t in range(max_new_tokens):
        # 3. Decode one token for every row; rows that already emitted EOS get padding.
        tok, lp = sample_next_token(logits, temperature, top_p, generator)
        tok = tok.masked_fill(done, pad)
        keep.append(~done)
        tokens.append(tok)
        logprobs.append(lp.masked_fill(done, 0.0))
        done = done | (tok == eos)
        if t == max_new_tokens - 1 or bool(done.all()):
            break  # no forward pass for a token that will never be read
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        logits, cache = _step(model, tok[:, None], mask, next_pos, cache)
        next_pos = next_pos + 1

    return (torch.stack(tokens, dim=1), torch.stack(keep, dim=1).long(),
            torch.stack(logprobs, dim=1))


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
