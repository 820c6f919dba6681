"""The closed forms of book/theory/09-loss-aggregation.md:
"Loss aggregation, and how G enters the normaliser".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np

from grpolab._validate import (
    as_choice,
    as_integer_array,
    as_positive_int,
    as_real_array,
    finite_result,
    scalar_or_array,
)
from grpolab.theory._common import _pass_rates_by_group_size
from grpolab.theory.zero_variance import informative_probability

#: Most tokens or completions in one call.
_MAX_ITEMS = 10**7


LOSS_TYPES = ("grpo", "bnpo", "dapo", "dr_grpo")


def loss_token_weights(lengths, loss_type="dapo", max_completion_length=None):
    """The weight each token of each completion gets in TRL's loss, per ``loss_type``.

    A batch of n completions with |o_i| loss tokens each (one generation batch, one
    optimizer step; TRL 1.16 ``GRPOTrainer._compute_loss``):

    Equation: w_i = 1/(n·|o_i|) (grpo), 1/Σ_j|o_j| (bnpo, dapo), 1/(n·L_max) (dr_grpo,
    L_max = ``max_completion_length``). A completion's share of the step is |o_i|·w_i: equal
    for grpo, proportional to its length for the others.

    Zero-variance groups count in n and in Σ|o_j| although their advantages are 0.

    Derived in: book/theory/09-loss-aggregation.md, "Four ways to average the tokens".
    """
    L = as_integer_array(lengths, "lengths", minimum=0, maximum=10**9)
    if L.ndim != 1 or not 1 <= L.size <= _MAX_ITEMS:
        raise ValueError(f"lengths must be a list of token counts, one per completion, got "
                         f"shape {L.shape}")
    loss_type = as_choice(loss_type, "loss_type", LOSS_TYPES)
    n = float(L.size)
    Lf = L.astype(float)
    if loss_type == "grpo":
        return 1.0 / (n * np.maximum(Lf, 1.0))   # TRL clamps an empty completion's length at 1
    if loss_type in ("bnpo", "dapo"):
        return np.full(L.shape, 1.0 / max(float(Lf.sum()), 1.0))
    if max_completion_length is None:
        raise ValueError("max_completion_length is required for loss_type='dr_grpo' (its "
                         "constant denominator)")
    L_max = as_positive_int(max_completion_length, "max_completion_length", maximum=10**9)
    if (L > L_max).any():
        raise ValueError(f"lengths must be <= max_completion_length = {L_max}: generation "
                         "stops there")
    return np.full(L.shape, 1.0 / (n * L_max))


def informative_share(pass_rates, G):
    """Expected share of a step's loss normaliser that carries an advantage.

    Every TRL ``loss_type`` averages over the whole batch, zero-variance groups included, so
    a realised step is this share times the step over informative groups alone. With
    completion lengths independent of the rewards, for prompts drawn from the listed pass rates,

    Equation: s(G) = (1/J) Σ_j [1 − p_j^G − (1 − p_j)^G], which rises with G. It does not
    scale the expected step: without std division E[ĝ] = ((G − 1)/G) ∇J for any share, since
    an informative group's gradient is larger by 1/η on average; the share sets the noise.

    Derived in: book/theory/09-loss-aggregation.md, "How G enters the normaliser".
    """
    p, G = _pass_rates_by_group_size(pass_rates, G)
    eta = np.asarray(informative_probability(p[:, None], G.reshape(1, -1)))
    return scalar_or_array(eta.mean(axis=0).reshape(G.shape))


def sequence_importance_ratio(log_ratio_sum, length):
    """GSPO's sequence-level importance ratio of one completion.

    Equation: s_i = (π_θ(o_i)/π_old(o_i))^{1/|o_i|} = exp((1/|o_i|) Σ_t log ρ_{i,t}), the
    geometric mean of the token ratios ρ_{i,t}; TRL computes it with
    ``importance_sampling_level="sequence"``. Clipping s_i clips whole completions.

    Derived in: book/theory/09-loss-aggregation.md, "GSPO: one ratio per sequence".
    """
    s = as_real_array(log_ratio_sum, "log_ratio_sum", expected="a finite sum of log-ratios")
    if not np.isfinite(s).all():
        raise ValueError("log_ratio_sum must be a finite sum of log-ratios")
    n = as_integer_array(length, "length", minimum=1, maximum=10**9)
    with np.errstate(over="ignore"):
        ratio = np.exp(s / n)
    return scalar_or_array(finite_result(
        ratio, "log_ratio_sum / length: the ratio overflows float64 (a mean log-ratio > 709)"))
