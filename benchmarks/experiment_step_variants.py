"""Side experiment: what would each proposed change save per grpolab GRPO step?

    python benchmarks/experiment_step_variants.py

Variants of one lab-shaped step (B = 8 prompts, G = 8, 6 new tokens, tiny model,
1 thread), timed in CPU time, interleaved, median of 15:

- "as is": rollout.sample + grpo.grpo_update;
- "logits_to_keep+no_grad entropy": per_token_logprobs computing logits only for the
  completion positions and the entropy without autograd (checked equal first);
- "gelu_pytorch_tanh": the tiny model's MLP activation swapped for the fused kernel;
- "all three + prototype sampler": both, plus benchmarks/proto_fast_decode.py sampling.

Not run by run.py; its figures are quoted in RESULTS.md.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proto_fast_decode as proto  # noqa: E402
from bench_rollout import FixedLengthTokenizer, lab_prompts  # noqa: E402

import grpolab.grpo.loss as grpo  # noqa: E402
from grpolab.grpo.rollout import sample  # noqa: E402
from grpolab.models.tiny import build_tiny_model  # noqa: E402

B, G, T = 8, 8, 6
ORIGINAL = grpo.per_token_logprobs


def lean_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask,
                  temperature=1.0):
    """per_token_logprobs with logits only where needed and the entropy outside autograd."""
    ids = torch.cat([prompt_ids, completion_ids], dim=1)
    mask = torch.cat([prompt_mask, completion_mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    n = completion_ids.shape[1]
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                   use_cache=False, logits_to_keep=n + 1).logits[:, :-1, :].float()
    if temperature > 0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logprobs = logp_all.gather(-1, completion_ids[..., None]).squeeze(-1)
    with torch.no_grad():
        entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logprobs, entropy


def make_step(prompts, activation, logprob_fn, sampler):
    model, tok = build_tiny_model(seed=0)
    if activation:
        from transformers.activations import ACT2FN

        for blk in model.transformer.h:
            blk.mlp.act = ACT2FN[activation]
    ftok = FixedLengthTokenizer(tok, model.config.vocab_size + 7)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.0)
    gen = torch.Generator().manual_seed(0)

    def step():
        grpo.per_token_logprobs = logprob_fn
        r = sampler(model, ftok, prompts, G, max_new_tokens=T, generator=gen)
        adv = grpo.compute_advantages([float(i % 3 == 0) for i in range(B * G)], G, "group")
        grpo.grpo_update(model, opt, r, adv, max_completion_length=T)
    return step


def main() -> int:
    torch.set_num_threads(1)
    prompts = lab_prompts()[:B]
    model, tok = build_tiny_model(seed=0)
    ftok = FixedLengthTokenizer(tok, model.config.vocab_size + 7)
    r = sample(model, ftok, prompts, G, max_new_tokens=T)
    args = (r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask)
    a, b = ORIGINAL(model, *args), lean_logprobs(model, *args)
    print(f"lean per_token_logprobs: max |diff| logprobs {(a[0] - b[0]).abs().max():.2e}, "
          f"entropy {(a[1] - b[1]).abs().max():.2e}")
    variants = {
        "as is": make_step(prompts, None, ORIGINAL, sample),
        "logits_to_keep+no_grad entropy": make_step(prompts, None, lean_logprobs, sample),
        "gelu_pytorch_tanh": make_step(prompts, "gelu_pytorch_tanh", ORIGINAL, sample),
        "all three + prototype sampler": make_step(prompts, "gelu_pytorch_tanh", lean_logprobs,
                                                   proto.fast_sample),
    }
    times = {k: [] for k in variants}
    for f in variants.values():
        f()
        f()
    for _ in range(15):
        for k, f in variants.items():
            c0 = time.process_time()
            f()
            times[k].append(time.process_time() - c0)
    grpo.per_token_logprobs = ORIGINAL
    for k, v in times.items():
        print(f"{k:35s} {1e3 * statistics.median(v):6.1f} ms CPU per step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
