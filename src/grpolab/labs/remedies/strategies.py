"""Remedies for wasted groups, and the card's rules for choosing G, as small testable pieces.

Every function here is pure numpy (no torch): the training-side glue lives in
:mod:`grpolab.labs.remedies.sources` (the batch sources) and :mod:`grpolab.labs.remedies.items`
(the labs). One remedy per section:

- **Dynamic sampling** (DAPO §3.2, Eq. 11): :func:`dynamic_sampling` keeps the groups whose
  rewards differ and draws more generation batches until ``target_groups`` informative
  groups are collected or ``max_batches`` is reached (verl's ``max_num_gen_batches``).
- **Running pass rates**: :class:`DecayedPassRates`, a discounted success/trial count per
  prompt, seeded from a census of the starting policy.
- **Difficulty filtering**: :func:`band_filter` / :func:`select_in_band` keep prompts whose
  running pass-rate estimate lies in a band such as [0.2, 0.8].
- **Curriculum**: :class:`Curriculum` opens harder difficulty levels when the current
  frontier is mostly solved.
- **Adaptive G**: :func:`card_pass_rate_group_size` (the card's "easy → G = 4, hard → 16–32"),
  :func:`min_group_size_for_signal` (the smallest G whose informative probability reaches a
  target), :func:`card_variance_rule` (the card's "double G if reward variance > 0.8, halve
  if < 0.2"), and :func:`allocate_budget` (split a completion budget across prompts to
  maximise the expected number of informative groups).
- **Diversity**: :func:`distinct_per_group`, how many different completions a group holds.
- **Temporal consistency of zero variance** (GRESO's premise, arXiv 2506.02177):
  :func:`zero_variance_transitions`, how often a prompt whose group was zero-variance at one
  visit is zero-variance again at its next visit, next to the base rate and to the
  fixed-pass-rate prediction (book/theory/14-adaptive-allocation.md, "The cheapest
  remedies: PODS and GRESO").

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from grpolab import theory
from grpolab._validate import as_positive_int, as_probability

__all__ = [
    "zero_variance_transitions",
    "informative_groups", "DynamicSamplingResult", "dynamic_sampling",
    "DecayedPassRates", "band_filter", "select_in_band", "Curriculum",
    "card_pass_rate_group_size", "min_group_size_for_signal", "card_variance_rule",
    "MAX_BERNOULLI_VARIANCE", "max_group_variance", "expected_informative_groups",
    "allocate_budget", "uniform_allocation", "distinct_per_group", "pass_rate_for_informative",
]


# ----------------------------------------------------------------------------- dynamic sampling
def informative_groups(rewards, atol: float = 1e-6) -> np.ndarray:
    """Boolean mask over the rows of a (groups, G) reward matrix: True where the rewards
    differ by more than ``atol`` (DAPO Eq. 11's 0 < #correct < G, with a float tolerance)."""
    r = np.asarray(rewards, dtype=float)
    if r.ndim != 2 or r.shape[1] < 1:
        raise ValueError(f"rewards must be a (groups, G) matrix, got shape {r.shape}")
    return (r.max(1) - r.min(1)) > atol


@dataclass
class DynamicSamplingResult:
    """What a dynamic-sampling fill produced and what it cost.

    ``kept`` lists ``(batch_index, group_index)`` of the informative groups used, in draw
    order, at most ``target_groups`` of them (extra informative groups of the last batch
    are dropped, as verl does). ``payloads`` are the draws' payloads, one per batch.
    """

    kept: list[tuple[int, int]]
    payloads: list = field(default_factory=list)
    batches: int = 0
    groups_generated: int = 0
    completions: int = 0
    informative_generated: int = 0
    hit_cap: bool = False

    @property
    def filled(self) -> int:
        """Informative groups delivered (``target_groups`` unless the cap was hit)."""
        return len(self.kept)


def dynamic_sampling(draw: Callable[[], tuple[np.ndarray, object]], target_groups: int,
                     max_batches: int, atol: float = 1e-6) -> DynamicSamplingResult:
    """Fill a batch with ``target_groups`` informative groups, drawing at most ``max_batches``.

    Args:
        draw: called once per generation batch; returns ``(rewards, payload)`` with
            ``rewards`` a (groups, G) matrix and ``payload`` anything the caller needs later
            (the rollout). Groups whose rewards are all equal are dropped.
        target_groups: informative groups wanted (the train batch, DAPO's B).
        max_batches: the cap; verl's ``max_num_gen_batches``. When it is reached the result
            holds fewer groups and ``hit_cap`` is True (verl raises; we report and go on).
        atol: the tolerance of "all equal" (float rewards leave rounding residue).

    The expected cost when every group is informative with probability q is G·B/q
    completions (:func:`grpolab.theory.dynamic_sampling_expected_completions`), and the cap
    is hit with probability BinomCDF(B − 1; k·b, q)
    (:func:`grpolab.theory.dynamic_sampling_cap_probability`).
    """
    target = as_positive_int(target_groups, "target_groups")
    cap = as_positive_int(max_batches, "max_batches")
    res = DynamicSamplingResult(kept=[])
    while len(res.kept) < target and res.batches < cap:
        rewards, payload = draw()
        rewards = np.asarray(rewards, dtype=float)
        mask = informative_groups(rewards, atol)
        b = res.batches
        res.payloads.append(payload)
        res.batches += 1
        res.groups_generated += rewards.shape[0]
        res.completions += rewards.size
        res.informative_generated += int(mask.sum())
        for g in np.flatnonzero(mask):
            if len(res.kept) < target:
                res.kept.append((b, int(g)))
    res.hit_cap = len(res.kept) < target
    return res


# ----------------------------------------------------------------------------- pass rates
class DecayedPassRates:
    """A running pass-rate estimate per prompt: discounted successes / discounted trials.

    After every group the counts decay by ``decay`` and the new outcomes are added, so the
    estimate follows a policy that is learning (``decay = 1`` is the plain running mean).
    ``prior`` (successes, trials) seeds prompts never seen; :meth:`from_census` seeds every
    prompt from a (prompts, samples) pass/fail matrix of the starting policy.
    """

    def __init__(self, n_prompts: int, decay: float = 0.9, prior: tuple[float, float] = (1.0, 2.0)):
        n = as_positive_int(n_prompts, "n_prompts")
        self.decay = float(as_probability(decay, "decay"))
        if self.decay == 0:
            raise ValueError("decay must be in (0, 1], got 0")
        s, t = prior
        if not (0 <= s <= t and t > 0):
            raise ValueError(f"prior must be (successes, trials) with 0 <= successes <= trials "
                             f"and trials > 0, got {prior!r}")
        self.successes = np.full(n, float(s))
        self.trials = np.full(n, float(t))

    @classmethod
    def from_census(cls, census, decay: float = 0.9) -> DecayedPassRates:
        """Seed each prompt with its census row (successes and trials of the start policy)."""
        c = np.asarray(census, dtype=float)
        if c.ndim != 2 or c.shape[1] < 1:
            raise ValueError(f"census must be a (prompts, samples) matrix, got shape {c.shape}")
        est = cls(c.shape[0], decay=decay)
        est.successes = c.sum(1)
        est.trials = np.full(c.shape[0], float(c.shape[1]))
        return est

    @property
    def p(self) -> np.ndarray:
        """The current estimates, one per prompt."""
        return self.successes / self.trials

    def update(self, idx, outcomes) -> None:
        """Add the outcomes (rows of 0/1 or rewards in [0, 1]) of prompts ``idx``."""
        for i, row in zip(np.atleast_1d(idx), outcomes, strict=False):
            row = np.asarray(row, dtype=float)
            self.successes[i] = self.decay * self.successes[i] + row.sum()
            self.trials[i] = self.decay * self.trials[i] + row.size


# ----------------------------------------------------------------------------- difficulty band
def band_filter(p_hat, low: float = 0.2, high: float = 0.8) -> np.ndarray:
    """Indices of the prompts whose pass-rate estimate lies in [low, high]."""
    lo, hi = float(as_probability(low, "low")), float(as_probability(high, "high"))
    if lo > hi:
        raise ValueError(f"low must be <= high, got low={lo}, high={hi}")
    p = np.asarray(p_hat, dtype=float)
    return np.flatnonzero((p >= lo) & (p <= hi))


def select_in_band(rng: np.random.Generator, p_hat, k: int, low: float = 0.2,
                   high: float = 0.8) -> tuple[np.ndarray, int]:
    """Draw ``k`` distinct prompts from the band [low, high]; top up from outside the band.

    When fewer than ``k`` prompts are in the band, the rest are the prompts nearest to the
    band (smallest distance to [low, high], ties broken at random), so a batch is never short.
    Returns ``(indices, number_drawn_from_the_band)``.
    """
    k = as_positive_int(k, "k")
    p = np.asarray(p_hat, dtype=float)
    if k > p.size:
        raise ValueError(f"k ({k}) is more than the {p.size} prompts available")
    inside = band_filter(p, low, high)
    if inside.size >= k:
        return rng.choice(inside, size=k, replace=False), k
    outside = np.setdiff1d(np.arange(p.size), inside)
    dist = np.maximum(low - p[outside], p[outside] - high)
    order = np.lexsort((rng.random(outside.size), dist))
    extra = outside[order[:k - inside.size]]
    return np.concatenate([inside, extra]), int(inside.size)


# ----------------------------------------------------------------------------- curriculum
class Curriculum:
    """Difficulty levels opened one at a time as the model masters the frontier.

    Training draws from the open levels ``levels[:n_open]``. After each step, :meth:`update`
    receives the running pass-rate estimate of the frontier level (the hardest open one);
    when it reaches ``advance_at`` and at least ``min_steps`` steps have passed since the last
    opening, the next level opens. This is the card's "as the model gets stronger, bring in
    harder problems", made operational.
    """

    def __init__(self, levels: Sequence[int], advance_at: float = 0.6, min_steps: int = 10,
                 start_open: int = 1):
        if not levels:
            raise ValueError("levels must name at least one difficulty level")
        self.levels = sorted(int(x) for x in levels)
        self.advance_at = float(as_probability(advance_at, "advance_at"))
        self.min_steps = as_positive_int(min_steps, "min_steps")
        self.n_open = min(as_positive_int(start_open, "start_open"), len(self.levels))
        self._since = 0
        self.history: list[int] = []

    @property
    def open_levels(self) -> list[int]:
        return self.levels[:self.n_open]

    @property
    def frontier(self) -> int:
        return self.levels[self.n_open - 1]

    def update(self, frontier_pass_rate: float) -> bool:
        """Record one step; open the next level when the frontier is mastered. Returns
        True when a level was opened."""
        self._since += 1
        opened = False
        if (self.n_open < len(self.levels) and self._since >= self.min_steps
                and frontier_pass_rate >= self.advance_at):
            self.n_open += 1
            self._since = 0
            opened = True
        self.history.append(self.n_open)
        return opened


# ----------------------------------------------------------------------------- adaptive G
def card_pass_rate_group_size(p_hat, *, easy_at: float = 0.7, hard_at: float = 0.3,
                              easy_G: int = 4, mid_G: int = 8, hard_G: int = 16) -> np.ndarray:
    """The card's per-prompt rule: a high historical pass rate gets a small G (``easy_G``),
    a low one a large G (``hard_G``), the rest ``mid_G``.

    Note the asymmetry: an easy prompt (p near 1) wastes its group by being *all right*
    exactly as a hard one wastes it by being all wrong (P = p^G + (1 − p)^G is symmetric
    in p ↔ 1 − p), so a small G for easy prompts buys fewer informative groups, not more.
    """
    p = np.asarray(p_hat, dtype=float)
    return np.where(p >= easy_at, easy_G, np.where(p <= hard_at, hard_G, mid_G)).astype(int)


def min_group_size_for_signal(p_hat, target: float = 0.5, *, G_min: int = 2,
                              G_max: int = 32) -> np.ndarray:
    """Smallest G in [G_min, G_max] whose informative probability 1 − p^G − (1 − p)^G
    reaches ``target``; ``G_max`` where none does (p = 0 or 1 never gives signal)."""
    target = float(as_probability(target, "target"))
    lo = as_positive_int(G_min, "G_min", minimum=2)
    hi = as_positive_int(G_max, "G_max", minimum=lo)
    p = np.asarray(p_hat, dtype=float)
    Gs = np.arange(lo, hi + 1)
    q = np.asarray(theory.informative_probability(p[..., None], Gs))
    ok = q >= target
    return np.where(ok.any(-1), Gs[np.argmax(ok, -1)], hi).astype(int)


# A reward in [0, 1] has variance at most 1/4 (Popoviciu); 0/1 rewards reach it at p = 1/2.
MAX_BERNOULLI_VARIANCE = 0.25


def max_group_variance(G: int, ddof: int = 1, low: float = 0.0, high: float = 1.0) -> float:
    """The largest sample variance a group of G rewards in [low, high] can have.

    Half the rewards at each end: (high − low)²/4 · G/(G − ddof) for even G (for odd G,
    (G² − 1)/(4G) · (high − low)² / (G − ddof)). With ddof = 1 this is 0.5 at G = 2 and
    falls towards 0.25, so for 0/1 rewards it never exceeds 0.5 < 0.8.
    """
    G = as_positive_int(G, "G", minimum=2)
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
    k = G // 2
    # k rewards at `high`, G − k at `low`: sum of squared deviations = k(G − k)/G · span²
    return float(k * (G - k) / G * (high - low) ** 2 / (G - ddof))


def card_variance_rule(G: int, reward_variance: float, *, high: float = 0.8, low: float = 0.2,
                       G_min: int = 2, G_max: int = 64) -> int:
    """The card's adaptive-G rule: double G when the recent reward variance exceeds
    ``high`` (0.8), halve it when it is below ``low`` (0.2), clamped to [G_min, G_max].

    For rewards in [0, 1] the variance is at most 1/4 (``MAX_BERNOULLI_VARIANCE``; at most
    0.5 for a group of two with ddof = 1, see :func:`max_group_variance`), so with 0/1
    rewards the "double" branch can never fire and the rule only ever halves.
    """
    G = as_positive_int(G, "G", minimum=1)
    v = float(reward_variance)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"reward_variance must be a finite number >= 0, got {reward_variance!r}")
    if v > high:
        G = 2 * G
    elif v < low:
        G = G // 2
    return int(min(max(G, G_min), G_max))


def expected_informative_groups(p, G) -> float:
    """Σ_i P(group i is informative) for per-prompt pass rates ``p`` and group sizes ``G``
    (prompts with G_i < 2 contribute nothing: a group of one has no baseline)."""
    p = np.asarray(p, dtype=float)
    G = np.asarray(G, dtype=int)
    if p.shape != G.shape:
        raise ValueError(f"p and G must have the same shape, got {p.shape} and {G.shape}")
    q = np.where(G >= 2, 1.0 - p ** G - (1.0 - p) ** G, 0.0)
    return float(q.sum())


def uniform_allocation(n_prompts: int, budget: int) -> np.ndarray:
    """The usual split: the budget in equal groups over all prompts (remainder to the first)."""
    n = as_positive_int(n_prompts, "n_prompts")
    budget = as_positive_int(budget, "budget")
    G = np.full(n, budget // n)
    G[: budget % n] += 1
    return G


def allocate_budget(p_hat, budget: int, *, G_min: int = 2, G_max: int = 64) -> np.ndarray:
    """Split ``budget`` completions across prompts to maximise expected informative groups.

    Maximises Σ_i q_i(G_i), q(G) = 1 − p^G − (1 − p)^G, subject to Σ G_i ≤ budget with each
    G_i = 0 (prompt skipped) or G_min ≤ G_i ≤ G_max. q is concave in G, so after a prompt is
    opened (cost G_min, gain q(G_min)) each extra completion has a decreasing marginal
    gain; a greedy choice by gain per completion is used (exact for the increments; opening
    costs G_min at once, which greedy treats as one item of that cost). Prompts with
    p ∈ {0, 1} gain nothing and get nothing. In the spirit of Knapsack RL (arXiv 2509.25849).
    """
    p = np.asarray(p_hat, dtype=float)
    budget = as_positive_int(budget, "budget")
    lo = as_positive_int(G_min, "G_min", minimum=2)
    hi = as_positive_int(G_max, "G_max", minimum=lo)
    if p.ndim != 1 or p.size == 0:
        raise ValueError("p_hat must be a non-empty 1-D array of pass rates")

    def q(pi, g):
        return 1.0 - pi ** g - (1.0 - pi) ** g

    G = np.zeros(p.size, dtype=int)
    heap: list[tuple[float, int, int]] = []  # (−gain per completion, prompt, cost)
    for i, pi in enumerate(p):
        gain = q(pi, lo)
        if gain > 1e-12:
            heap.append((-gain / lo, i, lo))
    heapq.heapify(heap)
    left = budget
    while heap and left > 0:
        neg, i, cost = heapq.heappop(heap)
        if cost > left:
            continue
        G[i] += cost
        left -= cost
        if G[i] < hi:
            gain = q(p[i], G[i] + 1) - q(p[i], G[i])
            if gain > 1e-12:
                heapq.heappush(heap, (-gain, i, 1))
    return G


# ----------------------------------------------------------------------------- diversity
def distinct_per_group(texts: Sequence[str], G: int) -> np.ndarray:
    """Number of distinct completions (after stripping whitespace) in each group of G."""
    G = as_positive_int(G, "G")
    if len(texts) % G:
        raise ValueError(f"len(texts) = {len(texts)} is not a multiple of G = {G}")
    return np.array([len({t.strip() for t in texts[i:i + G]})
                     for i in range(0, len(texts), G)], dtype=int)


def pass_rate_for_informative(q: float, G: int) -> float:
    """The pass rate p in [0, 1/2] whose informative probability 1 − p^G − (1 − p)^G is q.

    Lets the single-p closed forms of :mod:`grpolab.theory` (dynamic-sampling cost, cap
    probability) be evaluated for a *mixture* of prompts: a uniformly drawn group is
    informative with probability q = mean_i q(p_i), and only q enters those formulas.
    """
    q = float(as_probability(q, "q"))
    G = as_positive_int(G, "G", minimum=2)
    qmax = float(theory.informative_probability(0.5, G))
    if q >= qmax:
        return 0.5
    lo, hi = 0.0, 0.5  # q(p) increases on [0, 1/2]: bisection
    for _ in range(60):
        mid = (lo + hi) / 2
        if float(theory.informative_probability(mid, G)) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ----------------------------------------------------------------------------- persistence
def zero_variance_transitions(prompt_idx, zero_variance, group_sizes=None,
                              rates=None) -> dict:
    """Visit-to-visit persistence of zero variance (GRESO's "temporal consistency").

    ``prompt_idx[t]``, ``zero_variance[t]`` (and ``group_sizes[t]``) describe the t-th group
    generated in a run, in generation order. Each visit of a prompt after its first forms a
    pair (previous visit, this visit). Returned counts over those pairs:

    - ``pairs``; ``zero_before`` (pairs whose previous visit was zero-variance);
      ``zero_both`` (both were); ``zero_now`` (this visit was);
    - ``persistence`` = zero_both / zero_before, P(zero-variance | zero-variance at the
      previous visit), None without a zero-variance previous visit;
    - ``base_rate`` = zero_now / pairs, P(zero-variance) at the same visits;
    - with ``rates`` (a fixed pass rate per prompt, e.g. the census) and ``group_sizes``:
      ``predicted`` = Σ z(p, g_prev) z(p, g_now) / Σ z(p, g_prev) over the pairs, with
      z(p, g) = p^g + (1 − p)^g: the persistence if each prompt kept its pass rate and
      visits were independent. At one G for every visit it is the pool's E[z²]/E[z]
      (:func:`grpolab.allocation.zero_variance_persistence`), weighted by visits.

    Derived in: book/theory/14-adaptive-allocation.md, "The cheapest remedies: PODS and
    GRESO".
    """
    idx = np.asarray(prompt_idx).ravel()
    zero = np.asarray(zero_variance).ravel()
    if idx.size != zero.size:
        raise ValueError(f"prompt_idx has {idx.size} visits, zero_variance {zero.size}")
    if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0):
        raise ValueError("prompt_idx must hold non-negative integers")
    if zero.size and not np.isin(zero, (0, 1)).all():
        raise ValueError("zero_variance must hold booleans (0 or 1)")
    zero = zero.astype(bool)
    sizes = None
    if group_sizes is not None:
        sizes = np.asarray(group_sizes).ravel()
        if sizes.size != idx.size:
            raise ValueError(f"group_sizes has {sizes.size} visits, prompt_idx {idx.size}")
    last: dict[int, int] = {}  # prompt -> position of its latest visit
    prev_pos, now_pos = [], []
    for t, i in enumerate(idx.tolist()):
        if i in last:
            prev_pos.append(last[i])
            now_pos.append(t)
        last[i] = t
    prev = np.asarray(prev_pos, dtype=int)
    now = np.asarray(now_pos, dtype=int)
    before, current = zero[prev], zero[now]
    out = {"visits": int(idx.size), "pairs": int(prev.size),
           "zero_before": int(before.sum()), "zero_both": int((before & current).sum()),
           "zero_now": int(current.sum())}
    out["persistence"] = (out["zero_both"] / out["zero_before"] if out["zero_before"]
                          else None)
    out["base_rate"] = out["zero_now"] / out["pairs"] if out["pairs"] else None
    if rates is not None:
        if sizes is None:
            raise ValueError("a prediction from rates needs group_sizes")
        p = as_probability(rates, "rates").ravel()
        if idx.size and idx.max() >= p.size:
            raise ValueError(f"prompt_idx reaches {idx.max()}, past the {p.size} rates")
        pj = p[idx[prev]]
        z_prev = pj ** sizes[prev] + (1 - pj) ** sizes[prev]
        z_now = pj ** sizes[now] + (1 - pj) ** sizes[now]
        den = float(z_prev.sum())
        out["predicted"] = float((z_prev * z_now).sum() / den) if den > 0 else None
    return out
