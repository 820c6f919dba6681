"""Per-prompt group sizes: the two schools of adaptive rollout allocation, side by side.

Given a pool's pass rates p_j and a budget of M · mean_G completions per step, each rule
chooses integer group sizes min_G ≤ n_j ≤ max_G with Σ n_j = M · mean_G that optimise a
separable objective Σ_j v(p_j, n_j). The rules differ only in v:

- **Variance-minimising** (VIP, arXiv 2602.01601 §3; Rollout-GDRO, arXiv 2601.19280):
  minimise the summed per-prompt gradient variance, v ∝ −p(1−p)(n−1)/n² for Dr. GRPO's
  mean baseline and v ∝ −p(1−p)/(n−1) for RLOO. Most rollouts go to p ≈ ½, few to p
  near 0 or 1 (n ∝ √(p(1−p)) for large n).
- **Signal-recovering** (Knapsack RL, arXiv 2509.25849; Reinforce-Ada, 2510.04996; HORA,
  2605.07114): maximise the chance of a non-degenerate group (v = 1 − p^n − (1−p)^n, the
  informative-groups rule of :func:`grpolab.advise.adaptive_allocation`), Knapsack RL's
  value (that chance times an information gain p(1−p)²), or the chance of a first success
  (v = 1 − (1−p)^n). Hard prompts get *more* rollouts.

The allocation is exact: a greedy hand-out of one completion at a time where each rule's
gains fall with n, and a dynamic program over prompts and budget for Dr. GRPO's variance,
whose gains are not monotone in n (a greedy allocation is not optimal there).
tests/test_allocation.py checks every rule against a brute-force enumeration and checks
each objective by simulation.

numpy only, like :mod:`grpolab.theory`. Derived in: book/theory/14-adaptive-allocation.md.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grpolab._validate import (
    MAX_GROUP_SIZE,
    as_ddof,
    as_group_size,
    as_positive_int,
    as_probability,
    as_real_scalar,
)

__all__ = [
    "ALLOCATION_RULES",
    "AllocationRule",
    "DIFFICULTY_BINS",
    "adaptive_allocation",
    "allocate",
    "allocation_by_bin",
    "allocation_objective",
    "dr_grpo_group_variance",
    "first_success_probability",
    "get_rule",
    "knapsack_value",
    "non_degenerate_probability",
    "rloo_group_variance",
    "two_sample_advantage",
    "zero_variance_persistence",
]

#: Most prompts one split may hold.
MAX_PROMPTS = 10**7
#: Most cells (prompts × budget units × group sizes) the exact dynamic program visits.
MAX_DP_CELLS = 400_000_000
#: Most completions the greedy path hands out one at a time (a heap operation each).
MAX_GREEDY_STEPS = 10_000_000


def _pn(p, n, minimum: int = 1) -> tuple[np.ndarray, np.ndarray]:
    p = as_probability(p, "p")
    n = as_group_size(n, "n", minimum=minimum).astype(float)
    try:
        return np.broadcast_arrays(p, n)
    except ValueError:
        raise ValueError(f"p and n must broadcast, got shapes {p.shape} and {n.shape}") from None


def dr_grpo_group_variance(p, n):
    """Per-prompt gradient variance of Dr. GRPO's mean-baseline estimator, p(1−p)(n−1)/n².

    For 0/1 rewards the squared advantages of a group sum to Σ(r_i − r̄)², whose mean is
    (n−1)p(1−p); the estimator divides the group's sum by n, so its variance (for score
    vectors of unit norm, uncorrelated across samples) is E Σ(r_i − r̄)² / n².
    Derived in: book/theory/14-adaptive-allocation.md, "The variance school".
    """
    p, n = _pn(p, n, 1)
    return p * (1 - p) * (n - 1) / n**2


def rloo_group_variance(p, n):
    """Per-prompt gradient variance of the leave-one-out (RLOO) estimator, p(1−p)/(n−1).

    RLOO's advantage is n/(n−1) times the mean-baseline one, so its variance is
    (n/(n−1))² · p(1−p)(n−1)/n² = p(1−p)/(n−1).
    Derived in: book/theory/14-adaptive-allocation.md, "The variance school".
    """
    p, n = _pn(p, n, 2)
    return p * (1 - p) / (n - 1)


def non_degenerate_probability(p, n):
    """P(a group of n has both outcomes) = 1 − p^n − (1−p)^n (book chapter 03).

    Derived in: book/theory/03-zero-variance.md; used as an allocation objective in
    book/theory/14-adaptive-allocation.md, "The signal school".
    """
    p, n = _pn(p, n, 1)
    return 1.0 - p**n - (1.0 - p) ** n


def knapsack_value(p, n):
    """Knapsack RL's value of a prompt: P(non-degenerate group) × p(1−p)² (arXiv 2509.25849).

    Derived in: book/theory/14-adaptive-allocation.md, "The signal school".
    """
    p, n = _pn(p, n)
    return non_degenerate_probability(p, n) * p * (1.0 - p) ** 2


def first_success_probability(p, n):
    """P(at least one of n samples succeeds) = 1 − (1−p)^n (HORA's hit objective, point p).

    Derived in: book/theory/14-adaptive-allocation.md, "The signal school".
    """
    p, n = _pn(p, n, 1)
    return 1.0 - (1.0 - p) ** n


@dataclass(frozen=True)
class AllocationRule:
    """A per-prompt objective v(p, n), maximised (sign +1) or minimised (sign −1) in sum."""

    name: str
    school: str
    objective: str
    value: Callable[[np.ndarray, np.ndarray], np.ndarray]
    sign: float
    #: True when each extra completion gains no more than the one before (for n ≥ 2): then
    #: handing completions out one at a time to the largest gain is exact.
    concave: bool = True


ALLOCATION_RULES: dict[str, AllocationRule] = {r.name: r for r in [
    AllocationRule("informative", "signal",
                   "maximise the expected number of non-degenerate groups, Σ 1 − p^n − (1−p)^n",
                   non_degenerate_probability, +1.0),
    AllocationRule("knapsack", "signal",
                   "maximise Knapsack RL's value, Σ (1 − p^n − (1−p)^n) · p(1−p)²",
                   knapsack_value, +1.0),
    AllocationRule("first-success", "signal",
                   "maximise the expected number of prompts with a success, Σ 1 − (1−p)^n",
                   first_success_probability, +1.0),
    AllocationRule("variance-dr-grpo", "variance",
                   "minimise the summed gradient variance of Dr. GRPO, Σ p(1−p)(n−1)/n²",
                   dr_grpo_group_variance, -1.0, concave=False),
    AllocationRule("variance-rloo", "variance",
                   "minimise the summed gradient variance of RLOO, Σ p(1−p)/(n−1)",
                   rloo_group_variance, -1.0),
]}


def get_rule(rule: str, name: str = "rule") -> AllocationRule:
    """The :class:`AllocationRule` called ``rule``, or a one-line refusal naming the rules."""
    if not isinstance(rule, str) or rule not in ALLOCATION_RULES:
        raise ValueError(f"{name}: unknown allocation rule {rule!r:.60}; choose from "
                         f"{', '.join(ALLOCATION_RULES)}")
    return ALLOCATION_RULES[rule]


def allocation_objective(rates, group_sizes, rule: str) -> float:
    """The rule's objective Σ_j v(p_j, n_j) for given per-prompt group sizes (no sign)."""
    r = get_rule(rule)
    p = as_probability(rates, "rates").ravel()
    n = as_group_size(group_sizes, "group_sizes", minimum=2).astype(float).ravel()
    if n.shape != p.shape:
        raise ValueError(f"group_sizes has {n.size} entries for {p.size} pass rates")
    return float(np.sum(r.value(p, n)))


def allocate(rates, mean_G: int, rule: str = "informative", *, min_G: int = 2,
             max_G: int = 64) -> np.ndarray:
    """Per-prompt group sizes n_j that optimise ``rule`` at M · mean_G completions.

    The informative-groups rule takes the K largest gains at once
    (:func:`adaptive_allocation`). The other rules whose gains fall with n hand out the
    K = M · (mean_G − min_G) extra completions one at a time to the largest gain, which is
    exact for them. Dr. GRPO's variance uses an exact dynamic program: best[b] is the best
    objective of the prompts seen so far with b extra completions spent; each prompt adds
    one of the C + 1 sizes (C = max_G − min_G). It visits M · (K + 1) · (C + 1) cells, and
    pools past :data:`MAX_DP_CELLS` are refused. Ties go to the earlier prompt.

    Derived in: book/theory/14-adaptive-allocation.md.
    """
    r = get_rule(rule)
    p, mean_G, min_G, max_G = _checked_split(rates, mean_G, min_G, max_G, lowest_min_G=2)
    if r.name == "informative":  # the exact threshold, without a loop over completions
        return adaptive_allocation(p, mean_G, min_G=min_G, max_G=max_G)
    M, C = p.size, max_G - min_G
    K = M * (mean_G - min_G)
    if K == 0 or K == M * C:
        return np.full(M, mean_G, dtype=np.int64)
    if r.concave:
        if K > MAX_GREEDY_STEPS:
            raise ValueError(f"{K} extra completions (prompts x (mean_G - min_G)) is more than "
                             f"the {MAX_GREEDY_STEPS} the allocation hands out; lower mean_G")
        return _greedy(p, r, K, min_G, max_G)
    if M * (K + 1) * (C + 1) > MAX_DP_CELLS:
        raise ValueError(f"a pool of {M} prompts at mean G {mean_G} is too large for the exact "
                         f"{rule} allocation; bin prompts with equal pass rates or lower max_G")
    sizes = np.arange(min_G, max_G + 1)
    values = r.sign * r.value(p[:, None], sizes[None, :])  # (M, C+1), maximised
    best = np.full(K + 1, -np.inf)
    best[0] = 0.0
    choice = np.zeros((M, K + 1), dtype=np.int16)
    for j in range(M):
        new = np.full(K + 1, -np.inf)
        pick = np.zeros(K + 1, dtype=np.int16)
        for c in range(min(C, K) + 1):
            cand = np.full(K + 1, -np.inf)
            cand[c:] = best[: K + 1 - c] + values[j, c]
            better = cand > new
            new = np.where(better, cand, new)
            pick = np.where(better, c, pick)
        best, choice[j] = new, pick
    out = np.empty(M, dtype=np.int64)
    b = K
    for j in range(M - 1, -1, -1):
        out[j] = choice[j, b]
        b -= out[j]
    return min_G + out


def _greedy(p: np.ndarray, r: AllocationRule, K: int, min_G: int, max_G: int) -> np.ndarray:
    """Hand out K completions one at a time to the largest gain (exact for concave gains)."""
    G = np.full(p.size, min_G, dtype=np.int64)

    def gain(j: int) -> float:
        n = G[j]
        return float(r.sign * (r.value(p[j], n + 1) - r.value(p[j], n)))

    heap = [(-gain(j), j) for j in range(p.size)]
    heapq.heapify(heap)
    for _ in range(K):
        _, j = heapq.heappop(heap)
        G[j] += 1
        if G[j] < max_G:
            heapq.heappush(heap, (-gain(j), j))
    return G


def _checked_split(rates, mean_G, min_G, max_G, *, lowest_min_G: int):
    """The pass rates and the three sizes of a split, checked once for every rule."""
    p = as_probability(rates, "rates").ravel()
    if not 1 <= p.size <= MAX_PROMPTS:
        raise ValueError(f"rates must hold 1 to {MAX_PROMPTS} pass rates, got {p.size}")
    min_G = as_positive_int(min_G, "min_G", minimum=lowest_min_G, maximum=MAX_GROUP_SIZE)
    max_G = as_positive_int(max_G, "max_G", minimum=min_G, maximum=MAX_GROUP_SIZE)
    mean_G = as_positive_int(mean_G, "mean_G", minimum=min_G, maximum=max_G)
    return p, mean_G, min_G, max_G


def adaptive_allocation(rates, mean_G: int, *, min_G: int = 2, max_G: int = 64):
    """Per-prompt group sizes that maximise the expected informative groups at a budget.

    Maximises Σ_j q(p_j, G_j), q = 1 − p^G − (1 − p)^G, subject to Σ_j G_j = M · mean_G and
    min_G ≤ G_j ≤ max_G (so min_G ≤ mean_G ≤ max_G, all integers). The gain of one more
    sample, Δ_j(g) = p^g(1 − p) + (1 − p)^g p, falls with g (q is concave in G), so handing
    out the K = M·(mean_G − min_G) extra samples one at a time to the largest gain (the
    greedy allocation) is optimal, and it is the same as giving each prompt every increment
    whose gain is among the K largest of all M·(max_G − min_G). That threshold is found
    without a loop over samples (:func:`_top_gains`): the result is exact, Σ_j G_j is
    exactly M · mean_G, and 10⁶ prompts take well under a second. Returns the int64 G_j.

    The "informative" rule of :func:`allocate`, which calls it. Derived in:
    book/theory/14-adaptive-allocation.md, "The signal school", and
    book/capstone/01-choosing-g.md (Knapsack RL, arXiv 2509.25849, in the same spirit).
    """
    p, mean_G, min_G, max_G = _checked_split(rates, mean_G, min_G, max_G, lowest_min_G=1)
    M, C = p.size, max_G - min_G
    K = M * (mean_G - min_G)
    if K == 0 or K == M * C:
        return np.full(M, mean_G, dtype=np.int64)
    return min_G + _top_gains(p, min_G, C, K)


#: Most bracketed increments :func:`_top_gains` sorts at once (memory: 24 bytes each).
_GATHER_LIMIT = 2**22


def _top_gains(p: np.ndarray, min_G: int, C: int, K: int) -> np.ndarray:
    """How many of the C increments g = min_G … min_G + C − 1 each prompt gets when the K
    largest gains Δ_j(g) are taken (ties: lower prompt index first, then lower g).

    Δ_j decreases in g, so the increments a prompt gets are always its first ones, and for a
    threshold λ the number of its gains above λ, n_j(λ), is found by a vectorised binary
    search over g. λ* (the K-th largest gain) is bracketed from a fixed sample of gains,
    the bracket is checked with two exact counts (widened until it holds), and only the
    increments inside it are gathered and sorted.
    """
    M = p.size
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p), np.log1p(-p)

    def gain(rows, g):
        a, b = (lp, lq) if rows is None else (lp[rows], lq[rows])
        with np.errstate(invalid="ignore"):  # p ∈ {0, 1}: -inf + -inf, never a NaN (g ≥ 1)
            return np.exp(g * a + b) + np.exp(g * b + a)

    def above(lam: float) -> np.ndarray:  # n_j(λ): gains above λ, per prompt
        if lam >= 1.0:
            return np.zeros(M, dtype=np.int64)
        if lam < 0.0:
            return np.full(M, C, dtype=np.int64)
        lo, hi = np.zeros(M, dtype=np.int64), np.full(M, C, dtype=np.int64)
        while (lo < hi).any():
            mid = (lo + hi) // 2
            big = gain(None, min_G + mid) > lam
            open_ = lo < hi
            lo = np.where(open_ & big, mid + 1, lo)
            hi = np.where(open_ & ~big, mid, hi)
        return lo

    # A bracket λ_lo < λ* ≤ λ_hi from quantiles of a fixed random sample of all gains.
    rng = np.random.default_rng(0)
    S = int(min(M * C, 2**18))
    sample = np.sort(gain(rng.integers(M, size=S), min_G + rng.integers(C, size=S)))[::-1]
    frac = K / (M * C)
    margin = 4.0 * math.sqrt(S * frac * (1 - frac)) + 4.0
    i_hi, i_lo = int(frac * S - margin), int(frac * S + margin)
    lam_hi = float(sample[i_hi]) if i_hi >= 0 else 1.0  # all gains are <= 1/2 ...
    lam_lo = float(sample[i_lo]) if i_lo < S else -1.0  # ... and >= 0
    if lam_hi == lam_lo:  # a block of equal gains (equal rates, p in {0, 1}): λ* is it
        lam_lo = float(np.nextafter(lam_hi, -np.inf))
    n_hi, n_lo = above(lam_hi), above(lam_lo)
    while n_hi.sum() > K:  # widen only the side that fails
        i_hi = int(i_hi - 4 * margin)
        lam_hi = float(sample[i_hi]) if i_hi >= 0 else 1.0
        n_hi, margin = above(lam_hi), 4 * margin
    while np.maximum(n_lo, n_hi).sum() < K:
        i_lo = int(i_lo + 4 * margin)
        lam_lo = float(sample[i_lo]) if i_lo < S else -1.0
        n_lo, margin = above(lam_lo), 4 * margin
    n_lo = np.maximum(n_lo, n_hi)  # a binary search over rounding noise stays consistent
    need = K - int(n_hi.sum())
    widths = n_lo - n_hi
    if widths.sum() > max(_GATHER_LIMIT, 4 * M):  # all tied at λ*: first prompts first
        before = np.cumsum(widths) - widths
        return n_hi + np.clip(need - before, 0, widths)
    rows = np.repeat(np.arange(M), widths)
    starts = np.cumsum(widths) - widths
    g = min_G + n_hi[rows] + (np.arange(rows.size) - starts[rows])
    values = gain(rows, g)
    if need == 0:
        return n_hi
    # the need-th largest value, then everything above it and the first of its ties
    cut = np.partition(values, values.size - need)[values.size - need]
    take = values > cut
    ties = np.flatnonzero(values == cut)[:need - int(take.sum())]  # in (j, g) order
    take[ties] = True
    return n_hi + np.bincount(rows[take], minlength=M)


#: Pass-rate bins for :func:`allocation_by_bin`: what each rule spends where.
DIFFICULTY_BINS = (0.0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0)


def allocation_by_bin(rates, mean_G: int, rules, *, max_G: int = 64) -> dict:
    """What each rule spends where: per pass-rate bin, the prompts and every rule's share of
    the completions (uniform G = mean_G included), and each rule's objective against the
    uniform split's (the number it maximises or minimises, so the gain is in its own units).

    Returns ``{"bins": [{"low", "high", "prompts", "uniform": share, RULE: share, ...}],
    "objectives": {RULE: {"objective", "rule", "uniform", "school"}}, "mean_G", "max_G"}``.
    Derived in: book/theory/14-adaptive-allocation.md, "Side by side".
    """
    p = as_probability(rates, "rates").ravel()
    if isinstance(rules, str) or not isinstance(rules, (list, tuple)) or not rules:
        raise ValueError(f"rules must be a non-empty list of rule names, got {rules!r:.60}")
    rules = [get_rule(rule, "rules").name for rule in rules]
    sizes = {rule: allocate(p, mean_G, rule, max_G=max_G) for rule in rules}
    total = float(p.size * mean_G)
    edges = DIFFICULTY_BINS
    bins = []
    for i, (low, high) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        inside = (p >= low) & ((p < high) if i < len(edges) - 2 else (p <= high))
        if not inside.any():
            continue
        row = {"low": low, "high": high, "prompts": int(inside.sum()),
               "uniform": float(inside.sum() * mean_G / total)}
        row.update({rule: float(sizes[rule][inside].sum() / total) for rule in rules})
        bins.append(row)
    uniform = np.full(p.size, mean_G)
    objectives = {rule: {"objective": ALLOCATION_RULES[rule].objective,
                         "school": ALLOCATION_RULES[rule].school,
                         "rule": allocation_objective(p, sizes[rule], rule),
                         "uniform": allocation_objective(p, uniform, rule)}
                  for rule in rules}
    return {"mean_G": int(mean_G), "max_G": int(max_G), "bins": bins, "objectives": objectives}


def two_sample_advantage(r1: float, r2: float, *, ddof: int = 1) -> tuple[float, float]:
    """GRPO's standardised advantages of a group of two with rewards r1 ≠ r2.

    The deviations from the mean are ±(r1 − r2)/2 and the std is |r1 − r2|/√2 (ddof 1) or
    |r1 − r2|/2 (ddof 0), so the advantages are ±1/√2 (or ±1) whatever the reward gap:
    at G = 2 GRPO keeps only the sign of the difference (cf. arXiv 2510.00977).
    Derived in: book/theory/14-adaptive-allocation.md, "The two ends of the axis".
    """
    ddof = as_ddof(ddof)
    r1 = as_real_scalar(r1, "r1", minimum=-1e150, maximum=1e150)
    r2 = as_real_scalar(r2, "r2", minimum=-1e150, maximum=1e150)
    if r1 == r2:
        raise ValueError("r1 == r2: a tied group of two has no standardised advantage (std 0)")
    sign = 1.0 if r1 > r2 else -1.0  # (r1 - mean)/std, without forming r1 - r2 (overflow)
    a = sign / (np.sqrt(2.0) if ddof == 1 else 1.0)
    return float(a), float(-a)


def zero_variance_persistence(rates, G: int) -> float:
    """P(a prompt's group is zero-variance at its next visit | it was at this one).

    With a fixed pass rate per prompt and independent visits, the answer is
    E[z(p)²] / E[z(p)] for z = p^G + (1−p)^G over the pool, which is at least the
    unconditional rate E[z(p)] (Cauchy–Schwarz) and equals it only when every prompt has
    the same z: GRESO's "temporal consistency" (arXiv 2506.02177) follows from
    heterogeneity alone. Derived in: book/theory/14-adaptive-allocation.md, "GRESO".
    """
    p = as_probability(rates, "rates").ravel()
    if p.size == 0:
        raise ValueError("rates must hold at least one pass rate")
    G = as_positive_int(G, "G", minimum=1, maximum=MAX_GROUP_SIZE)
    z = p**G + (1 - p) ** G
    mean = float(z.mean())
    if mean == 0.0:
        raise ValueError("rates: no prompt in the pool can give a zero-variance group at this G")
    return float((z**2).mean() / mean)
