"""The closed forms of book/theory/06-normalization.md:
"Normalization and reward granularity".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np

from grpolab._validate import (
    MAX_GROUP_SIZE,
    as_choice,
    as_ddof,
    as_group_size,
    as_integer_array,
    as_real_scalar,
    scalar_or_array,
)


# --------------------------------------------------------------------------------------
# Advantages for binary rewards                Derived in: book/theory/06-normalization.md
# --------------------------------------------------------------------------------------
def binary_advantages(k, G, *, baseline: str = "mean", ddof: int = 1, scale: str = "group",
                      eps: float = 1e-4):
    """Advantages of a correct and an incorrect completion when k of G are correct.

    Mean baseline (GRPO): r̄ = k/G, so A⁺ = (1 − k/G)/(s + ε) and A⁻ = −(k/G)/(s + ε),
    with s² = (G/(G − ddof)) · (k/G)(1 − k/G).
    Leave-one-out (RLOO): A⁺ = (G − k)/(G − 1), A⁻ = −k/(G − 1) before scaling.
    ``scale="none"`` skips the division by s + ε (Dr. GRPO).

    Example: G = 4, k = 1 gives A⁺ = 1.5 with ddof = 1 and 1.73 with ddof = 0 (ε → 0).

    Returns ``(A_correct, A_incorrect)``; both are 0 when k = 0 or k = G.

    Derived in: book/theory/06-normalization.md, "Binary rewards in closed form".
    """
    G = as_group_size(G)
    k = as_integer_array(k, "k", minimum=0, maximum=MAX_GROUP_SIZE)
    if (k > G).any():
        raise ValueError("k must lie in [0, G]: k correct completions out of G")
    ddof = as_ddof(ddof)
    scale = as_choice(scale, "scale", ("group", "none"))
    baseline = as_choice(baseline, "baseline", ("mean", "leave_one_out"))
    eps = as_real_scalar(eps, "eps")
    q = k / G
    if baseline == "mean":
        a_pos, a_neg = 1.0 - q, -q
    else:
        if (G < 2).any():
            raise ValueError("G must be >= 2 for the leave-one-out baseline")
        a_pos, a_neg = (G - k) / (G - 1), -k / (G - 1)
    if scale == "group":
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(G - ddof > 0, G / np.maximum(G - ddof, 1) * q * (1 - q), 0.0)
            s = np.sqrt(var) + eps  # s = 0 only for k = 0 or G, which are set to 0 below
            a_pos, a_neg = a_pos / s, a_neg / s
    degenerate = (k == 0) | (k == G)
    a_pos = np.where(degenerate, 0.0, a_pos)
    a_neg = np.where(degenerate, 0.0, a_neg)
    return scalar_or_array(a_pos), scalar_or_array(a_neg)
