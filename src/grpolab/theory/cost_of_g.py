"""The closed forms of book/theory/04-cost-of-g.md:
"The cost of G".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpolab._validate import MAX_COUNT, as_flag, as_group_size, as_nonnegative


# --------------------------------------------------------------------------------------
# The cost of G                                Derived in: book/theory/04-cost-of-g.md
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SamplingCost:
    """Work per GRPO step for a batch of prompts, each sampled G times.

    Attributes:
        completions: prompts × G, the effective batch.
        prompt_tokens_encoded: prompt tokens run through the model (prefill).
        generated_tokens: completion tokens decoded.
        kv_cache_tokens: token positions held in the KV cache at the end of sampling.
    """

    completions: np.ndarray
    prompt_tokens_encoded: np.ndarray
    generated_tokens: np.ndarray
    kv_cache_tokens: np.ndarray

    @property
    def total_tokens(self) -> np.ndarray:
        """Prefill plus decode tokens: the forward-pass work of sampling."""
        return self.prompt_tokens_encoded + self.generated_tokens


def sampling_cost(prompts, G, prompt_length, completion_length, *, share_prompt_kv: bool = True):
    """Completions and tokens of one sampling step.

    Equations (B prompts, prompt length L_p, completion length L_c):

    - completions = B · G (the effective batch; cost ∝ G at fixed B);
    - decode tokens = B · G · L_c;
    - prefill tokens = B · L_p with a shared prompt KV cache, B · G · L_p without;
    - KV-cache positions = B · (L_p + G · L_c) shared, B · G · (L_p + L_c) unshared.

    Derived in: book/theory/04-cost-of-g.md, "Sharing the prompt's KV cache".
    """
    B = as_nonnegative(prompts, "prompts", maximum=MAX_COUNT)
    G = as_group_size(G)
    Lp = as_nonnegative(prompt_length, "prompt_length", maximum=MAX_COUNT)
    Lc = as_nonnegative(completion_length, "completion_length", maximum=MAX_COUNT)
    share_prompt_kv = as_flag(share_prompt_kv, "share_prompt_kv")
    completions = B * G
    prefill = B * Lp if share_prompt_kv else B * G * Lp
    kv = B * (Lp + G * Lc) if share_prompt_kv else B * G * (Lp + Lc)
    return SamplingCost(
        completions=completions * np.ones_like(prefill),
        prompt_tokens_encoded=prefill,
        generated_tokens=B * G * Lc,
        kv_cache_tokens=kv,
    )


def fixed_budget_prompts(budget, G):
    """Prompts per step when the completions per step are held at ``budget``.

    Equation: B = budget / G (rounded down); the effective batch B · G stays ≈ budget.

    Derived in: book/theory/04-cost-of-g.md, "A fixed budget".
    """
    budget = as_nonnegative(budget, "budget", maximum=MAX_COUNT)  # so B fits in int64
    G = as_group_size(G)
    prompts = np.floor(budget / G).astype(np.int64)
    return int(prompts) if prompts.ndim == 0 else prompts
