"""Group-relative advantages: the one place where GRPO turns rewards into a learning signal.

Rewards arrive flat and prompt-major, as TRL orders them: the G completions of prompt 0,
then the G completions of prompt 1, and so on. With the defaults,
:func:`group_advantages` reproduces TRL ``GRPOTrainer``'s advantages exactly:

    A_i = (r_i − mean_g) / (std_g + eps),   std with ddof = 1, eps = 1e-4.

Options give the neighbours of GRPO: Dr. GRPO (``scale="none"``), RLOO
(``baseline="leave_one_out"``) and TRL's ``scale_rewards="batch"``.

Inputs may be numpy arrays or torch tensors; the output has the input's type (and,
for torch, its device and dtype). torch is never imported here.

Rewards are real numbers (booleans count as 0/1); strings, None and non-finite values
are refused with an error naming ``rewards``. Rewards of any finite size work: when
their magnitude would overflow (or underflow) the std, each group is rescaled by a
power of two first, which leaves the normalised advantages exact.

Derived in: book/theory/01-grpo-in-one-page.md ("The advantage") and
book/theory/06-normalization.md ("eps and ddof conventions").
"""

from __future__ import annotations

import numpy as np

from grpolab._validate import (
    as_choice,
    as_ddof,
    as_positive_int,
    as_real_array,
    as_real_scalar,
)

__all__ = ["group_advantages", "mixed_group_advantages", "zero_variance_groups", "SCALES",
           "BASELINES"]

SCALES = ("group", "batch", "none")
BASELINES = ("mean", "leave_one_out")


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _grouped(rewards, group_size: int):
    """Check the shapes and return rewards as (n_groups, G) plus the backend flag."""
    G = as_positive_int(group_size, "group_size")
    torch_input = _is_torch(rewards)
    if torch_input:
        r = rewards
        if r.dtype.is_complex:
            raise TypeError(f"rewards must be real, got a {r.dtype} tensor")
    else:
        r = as_real_array(rewards, "rewards", allow_bool=True)
    if r.ndim != 1:
        raise ValueError(f"rewards must be a flat 1-D array, got shape {tuple(r.shape)}")
    n = r.shape[0]
    if n == 0 or n % G != 0:
        raise ValueError(
            f"rewards length {n} is not a positive multiple of group_size {G} "
            "(rewards must be flat and prompt-major: G completions per prompt)"
        )
    if torch_input:
        if not r.dtype.is_floating_point:
            r = r.float()
        if not bool(r.isfinite().all()):
            raise ValueError("rewards must be finite (found NaN or inf)")
    elif not np.isfinite(r).all():
        raise ValueError("rewards must be finite (found NaN or inf)")
    return r.reshape(n // G, G), G, torch_input


def _std(x, ddof: int, torch_input: bool, axis=None):
    if torch_input:
        return x.std(dim=axis, correction=ddof, keepdim=axis is not None)
    return x.std(axis=axis, ddof=ddof, keepdims=axis is not None)


def _divide(centred, denom, torch_input: bool):
    """centred / denom, and 0 where denom is 0: with eps = 0 a constant group (or G = 1)
    has nothing to normalise, and 0/0 must not leak out as NaN."""
    if torch_input:
        return (centred / denom).masked_fill(~(denom > 0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, centred / np.where(denom > 0, denom, 1.0), 0.0)


def _advantages(r, G: int, scale: str, baseline: str, ddof: int, eps, torch_input: bool):
    """The formulas on grouped rewards r of shape (n_groups, G); eps may be per group."""
    if baseline == "mean":
        centred = r - r.mean(**({"dim": 1} if torch_input else {"axis": 1}), keepdims=True)
    else:
        total = r.sum(**({"dim": 1} if torch_input else {"axis": 1}), keepdims=True)
        centred = r - (total - r) / (G - 1)

    if scale == "group":
        std = _std(r, ddof, torch_input, axis=1) if G > ddof else r[:, :1] * 0
        centred = _divide(centred, std + eps, torch_input)
    elif scale == "batch":
        flat = r.reshape(-1)
        std = _std(flat, ddof, torch_input) if flat.shape[0] > ddof else flat.sum() * 0
        centred = _divide(centred, std + eps, torch_input)
    return centred


def _float_info(r, torch_input: bool) -> tuple[float, float, float]:
    """(max, tiny, eps) of r's float type, for numpy arrays and torch tensors alike
    (torch's dtypes are told apart by name, so torch need not be imported)."""
    if not torch_input:
        info = np.finfo(r.dtype)
    else:
        name = str(r.dtype).removeprefix("torch.")
        if name == "bfloat16":  # float32's exponent range with an 8-bit significand
            return float(np.finfo(np.float32).max), float(np.finfo(np.float32).tiny), 2.0**-7
        info = np.finfo(np.dtype(name))
    return float(info.max), float(info.tiny), float(info.eps)


def _needs_rescaling(r, torch_input: bool) -> bool:
    """True when squaring deviations of rewards this size could overflow or underflow.

    Sums of n squared deviations (each at most (2·max|r|)²) stay finite while
    max|r| ≤ √(max/n)/2; deviations of relative size ε (rounding) keep non-zero squares
    while max|r| ≥ √tiny/ε. Ordinary rewards are far inside, and take the plain path.
    """
    biggest, tiny, eps = _float_info(r, torch_input)
    if torch_input:
        group_max = r.abs().max(dim=1).values
        n = r.numel()
    else:
        group_max = np.abs(r).max(axis=1)
        n = r.size
    high = float(np.sqrt(biggest / n)) / 2
    low = float(np.sqrt(tiny)) / eps
    return bool((group_max > high).any() or ((group_max > 0) & (group_max < low)).any())


def _rescaled_advantages(r, G: int, scale: str, baseline: str, ddof: int, eps: float):
    """The advantages of float64 rewards computed on r · 2^−e, with 2^e each group's
    (or, for ``scale="batch"``, the batch's) largest |r| rounded up to a power of two.

    Scaling by a power of two is exact, and the normalised advantages do not depend on
    the scale once eps is scaled too, so the result is what exact arithmetic would give.
    Without the std (``scale="none"``) the scale is put back, and a spread that does
    not fit in a float64 is refused.
    """
    axis = None if scale == "batch" else 1
    biggest = np.abs(r).max(axis=axis, keepdims=axis is not None)
    e = np.frexp(biggest)[1]
    advantages = _advantages(np.ldexp(r, -e), G, scale, baseline, ddof, np.ldexp(eps, -e),
                             False)
    if scale == "none":
        with np.errstate(over="ignore"):
            advantages = np.ldexp(advantages, e)
        if not np.isfinite(advantages).all():
            raise ValueError("rewards spread too widely: r minus the baseline overflows "
                             "float64 (|r| up to " f"{float(np.abs(r).max()):.3g}); "
                             "rescale the rewards")
    return advantages


def group_advantages(rewards, group_size: int, *, scale: str = "group", baseline: str = "mean",
                     ddof: int = 1, eps: float = 1e-4):
    """Advantages for flat, prompt-major rewards, one group of ``group_size`` per prompt.

    Args:
        rewards: shape (n_prompts · G,), numpy array or torch tensor.
        group_size: G, the completions per prompt (TRL's ``num_generations``).
        scale: divide the centred rewards by the group's std (``"group"``, GRPO and TRL's
            default), by the std of all rewards in the batch (``"batch"``), or not at all
            (``"none"``, Dr. GRPO). Mirrors TRL's ``scale_rewards``.
        baseline: ``"mean"`` subtracts the group mean (GRPO); ``"leave_one_out"``
            subtracts the mean of the other G − 1 rewards (RLOO).
        ddof: delta degrees of freedom of the std. 1 (unbiased) as in TRL, verl and
            OpenRLHF; 0 as in ``np.std``.
        eps: added to the std before dividing (TRL 1e-4, verl 1e-6, OpenRLHF 1e-9).

    Returns:
        Advantages with the shape and type of ``rewards``.

    Equations: A_i = (r_i − r̄)/(s + ε) with the mean baseline;
    A_i = (r_i − r̄₋ᵢ)/(s + ε), r̄₋ᵢ = (Σ_j r_j − r_i)/(G − 1), with leave-one-out.

    G = 1: the mean baseline gives all-zero advantages (a lone completion is its own
    baseline, so it carries no signal) and its std is taken as 0 rather than NaN;
    leave-one-out needs G ≥ 2 and raises.

    Derived in: book/theory/01-grpo-in-one-page.md, "The advantage".
    """
    scale = as_choice(scale, "scale", SCALES)
    baseline = as_choice(baseline, "baseline", BASELINES)
    ddof = as_ddof(ddof)
    eps = as_real_scalar(eps, "eps")
    r, G, torch_input = _grouped(rewards, group_size)
    if baseline == "leave_one_out" and G < 2:
        raise ValueError("group_size must be >= 2 for baseline='leave_one_out'")

    if _needs_rescaling(r, torch_input):
        if not torch_input:
            return _rescaled_advantages(r, G, scale, baseline, ddof, eps).reshape(-1)
        r64 = r.detach().cpu().double().numpy()
        out = _rescaled_advantages(r64, G, scale, baseline, ddof, eps).reshape(-1)
        if (np.abs(out) > _float_info(r, True)[0]).any():
            raise ValueError(f"rewards: the advantages overflow {r.dtype}; rescale the rewards "
                             "or pass float64 rewards")
        return r.new_tensor(out).reshape(-1)  # r's dtype and device
    return _advantages(r, G, scale, baseline, ddof, eps, torch_input).reshape(-1)


def zero_variance_groups(rewards, group_size: int, atol: float = 1e-6):
    """Boolean mask, one entry per group: True where all G rewards are equal within ``atol``.

    Such a group gives every completion an advantage of (almost) 0, so it carries no
    gradient. A tolerance, not ``std == 0``, is the right test: float rewards leave
    rounding residue (e.g. 0.1 + 0.2 vs 0.3), and dividing that residue by a tiny std
    inflates advantages thousands of times (verl PR #4597, NeMo-RL PR #4161).

    Returns a numpy bool array, or a torch bool tensor for torch input.

    Derived in: book/theory/03-zero-variance.md, "The derivation".
    """
    atol = as_real_scalar(atol, "atol")
    r, _, torch_input = _grouped(rewards, group_size)
    if torch_input:
        spread = r.max(dim=1).values - r.min(dim=1).values
    else:
        with np.errstate(over="ignore"):  # a spread past float64's range is inf: not constant
            spread = r.max(axis=1) - r.min(axis=1)
    return spread <= atol


def mixed_group_advantages(rewards, group_sizes, *, scale: str = "group",
                           baseline: str = "mean", ddof: int = 1, eps: float = 1e-4):
    """:func:`group_advantages` of flat prompt-major rewards whose groups differ in size
    (adaptive G): ``group_sizes[j]`` rewards belong to group j, in order. Groups of one size
    are normalised together, exactly as :func:`group_advantages` would normalise them alone;
    ``scale="batch"`` pools the whole batch, so it needs one size.

    Derived in: book/labs/03-remedies.md (adaptive G).
    """
    if isinstance(group_sizes, str) or not hasattr(group_sizes, "__iter__"):
        raise ValueError(f"group_sizes must be a list of group sizes, got {group_sizes!r}")
    sizes = [as_positive_int(g, "group_sizes") for g in group_sizes]
    if not sizes:
        raise ValueError("group_sizes must name at least one group")
    scale = as_choice(scale, "scale", SCALES)
    kw = dict(scale=scale, baseline=baseline, ddof=ddof, eps=eps)
    distinct = sorted(set(sizes))
    if len(distinct) == 1:
        return group_advantages(rewards, distinct[0], **kw)
    if scale == "batch":
        raise ValueError("scale_rewards='batch' needs one group size per step")
    if not _is_torch(rewards):
        rewards = as_real_array(rewards, "rewards", allow_bool=True).astype(float)
    if rewards.ndim != 1 or sum(sizes) != rewards.shape[0]:
        raise ValueError(f"group_sizes sum to {sum(sizes)}, but rewards has shape "
                         f"{tuple(rewards.shape)} (flat, one reward per completion)")
    starts = np.cumsum([0] + sizes)[:-1]  # first row of each group
    out = rewards * 0  # zeros of the input's type (numpy or torch), every row set below
    for g in distinct:
        rows = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, sizes, strict=True)
                               if n == g])
        out[rows] = group_advantages(rewards[rows], g, **kw)
    return out
