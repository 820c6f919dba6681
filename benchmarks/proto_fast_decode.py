"""Prototype (not part of the package): a hand-written GPT-2 decoding loop for the tiny model.

Why it exists: the rollout benchmark shows that on the 0.4M-parameter tiny model most of
a ``model(...)`` call is transformers' per-call Python work (cache objects, mask building,
output dataclasses, ``inspect.signature``), not arithmetic. ``grpolab.grpo.rollout.sample`` and
``model.generate`` both pay it once per token, so sharing the prefix alone cannot give a
large ratio. This file shows what a dedicated path buys: it reads the same weights, keeps
a preallocated KV cache (no ``torch.cat`` per token), builds the padding mask once, and
calls the kernels directly. It takes the same arguments as :func:`grpolab.grpo.rollout.sample`
and returns the same :class:`grpolab.grpo.rollout.Rollout`, so ``grpo_update`` consumes it
unchanged. ``check_against_hf`` verifies that its log-probabilities equal a full
transformers forward over the sampled sequences.

It is measured as an extra, clearly labelled side in ``bench_rollout.py`` and
``bench_step.py``; the proposed change to ``src/grpolab/grpo/rollout.py`` is described in
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from grpolab.grpo.rollout import Rollout, encode_prompts, sample_next_token


def _gelu_new(x: torch.Tensor) -> torch.Tensor:
    # transformers' NewGELUActivation, written out so the numbers match it
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


def supports(model) -> bool:
    """Only GPT-2 models with the tanh GELU (the tiny model) take this path."""
    cfg = getattr(model, "config", None)
    return getattr(cfg, "model_type", None) == "gpt2" and cfg.activation_function == "gelu_new"


@torch.no_grad()
def fast_sample(model, tokenizer, prompts: list[str], num_generations: int = 1, *,
                max_new_tokens: int = 8, temperature: float = 1.0, top_p: float = 1.0,
                generator: torch.Generator | None = None) -> Rollout:
    """Same contract as :func:`grpolab.grpo.rollout.sample`, for GPT-2 models only."""
    if not supports(model):
        raise ValueError("fast_sample only supports GPT-2 models with gelu_new")
    tr, G, T = model.transformer, int(num_generations), int(max_new_tokens)
    cfg = model.config
    H, D = cfg.n_head, cfg.n_embd
    hd = D // H
    device = next(model.parameters()).device
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    ids, mask = encode_prompts(tokenizer, prompts, device)
    B, P = ids.shape
    n, L = B * G, P + T
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    K = [torch.empty(n, H, L, hd, device=device) for _ in tr.h]
    V = [torch.empty(n, H, L, hd, device=device) for _ in tr.h]
    keymask = torch.zeros(B, L, device=device)
    keymask[:, :P] = torch.where(mask.bool(), 0.0, float("-inf"))

    # 1. prefill: B prompts once, causal attention within the prompt
    x = tr.wte(ids) + tr.wpe(pos)
    causal = torch.full((P, P), float("-inf"), device=device).triu(1)
    am = causal[None, None] + keymask[:, None, None, :P]
    for li, blk in enumerate(tr.h):
        h = blk.ln_1(x).view(-1, D)
        qkv = torch.addmm(blk.attn.c_attn.bias, h, blk.attn.c_attn.weight).view(B, P, 3, H, hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        # 2. share the prompt's keys/values with its G samples
        K[li][:, :, :P] = k.repeat_interleave(G, 0)
        V[li][:, :, :P] = v.repeat_interleave(G, 0)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=am).transpose(1, 2).reshape(B * P, D)
        x = x + torch.addmm(blk.attn.c_proj.bias, a, blk.attn.c_proj.weight).view(B, P, D)
        m = _gelu_new(torch.addmm(blk.mlp.c_fc.bias, blk.ln_2(x).view(-1, D), blk.mlp.c_fc.weight))
        x = x + torch.addmm(blk.mlp.c_proj.bias, m, blk.mlp.c_proj.weight).view(B, P, D)
    logits = model.lm_head(tr.ln_f(x[:, -1])).repeat_interleave(G, 0)
    keymask = keymask.repeat_interleave(G, 0)[:, None, None, :]
    p = pos[:, -1].repeat_interleave(G) + 1

    # 3. decode one token per step for all B·G rows
    tokens, logprobs, keep = [], [], []
    done = torch.zeros(n, dtype=torch.bool, device=device)
    for t in range(T):
        tok, lp = sample_next_token(logits, temperature, top_p, generator)
        tok = tok.masked_fill(done, pad)
        keep.append(~done)
        tokens.append(tok)
        logprobs.append(lp.masked_fill(done, 0.0))
        done = done | (tok == eos)
        if t == T - 1 or bool(done.all()):
            break
        cur = P + t
        x = tr.wte(tok) + tr.wpe(p)
        for li, blk in enumerate(tr.h):
            qkv = torch.addmm(blk.attn.c_attn.bias, blk.ln_1(x), blk.attn.c_attn.weight)
            q, k, v = qkv.view(n, 3, H, hd).unbind(1)
            K[li][:, :, cur] = k
            V[li][:, :, cur] = v
            a = F.scaled_dot_product_attention(q[:, :, None], K[li][:, :, :cur + 1],
                                               V[li][:, :, :cur + 1],
                                               attn_mask=keymask[..., :cur + 1])
            x = x + torch.addmm(blk.attn.c_proj.bias, a.reshape(n, D), blk.attn.c_proj.weight)
            m = _gelu_new(torch.addmm(blk.mlp.c_fc.bias, blk.ln_2(x), blk.mlp.c_fc.weight))
            x = x + torch.addmm(blk.mlp.c_proj.bias, m, blk.mlp.c_proj.weight)
        logits = model.lm_head(tr.ln_f(x))
        p = p + 1

    completion_ids = torch.stack(tokens, dim=1)
    completion_mask = torch.stack(keep, dim=1).long()
    texts = tokenizer.batch_decode(completion_ids.masked_fill(completion_mask == 0, pad),
                                   skip_special_tokens=True)
    return Rollout(prompt_ids=ids.repeat_interleave(G, 0), prompt_mask=mask.repeat_interleave(G, 0),
                   completion_ids=completion_ids, completion_mask=completion_mask,
                   old_logprobs=torch.stack(logprobs, dim=1), texts=texts, num_generations=G)


@torch.no_grad()
def check_against_hf(model, tokenizer, prompts: list[str], G: int = 4, T: int = 6,
                     seed: int = 0) -> float:
    """Max |log-prob difference| between fast_sample and one transformers forward pass."""
    r = fast_sample(model, tokenizer, prompts, G, max_new_tokens=T,
                    generator=torch.Generator().manual_seed(seed))
    ids = torch.cat([r.prompt_ids, r.completion_ids], 1)
    mask = torch.cat([r.prompt_mask, r.completion_mask], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    Tc = r.completion_ids.shape[1]
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -Tc - 1:-1]
    ref = torch.log_softmax(logits.float(), -1).gather(-1, r.completion_ids[..., None]).squeeze(-1)
    return float(((ref - r.old_logprobs) * r.completion_mask).abs().max())
