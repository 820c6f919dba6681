"""A toy GRPO policy whose dynamics are exact and fast: the playground's engine.

A dataset of N prompts, each with a starting pass rate p₀ⱼ. The policy solves prompt j
with probability

    pⱼ = σ((α·θ_shared + θⱼ + bⱼ) / T),   bⱼ = logit(p₀ⱼ),

with α = ``transfer``: a step on one prompt moves ``θ_shared`` and thereby every other
prompt (the way a language model's shared weights lift prompts it did not train on),
while ``θⱼ`` is what only prompt j learns. T is the sampling temperature. A completion is a 0/1
outcome; its exact score is ∂ log π(y)/∂z = (y − p)/T, so one GRPO step needs no autograd.

One step (:func:`train`), vectorised over seeds:

1. draw B prompts (with replacement) and G completions each; with ``dynamic_sampling``
   draw up to ``max_batches`` rounds and keep the first B groups whose rewards differ
   (DAPO; the completions of every round drawn are paid for);
2. advantages through :func:`grpolab.advantages.group_advantages` (TRL's conventions:
   ``scale_rewards`` "group" | "batch" | "none", std with ddof = 1, eps = 1e-4);
3. weight each completion as TRL's ``loss_type`` does ("grpo": 1/(n·|oᵢ|), "dapo":
   1/Σ|oᵢ|, "dr_grpo": 1/(n·L_max)); completions have length 1 if right and
   ``wrong_length`` if wrong, so the loss types differ only when ``wrong_length`` ≠ 1;
4. an optional exact KL(π_θ ‖ π_start) penalty with weight ``beta``;
5. SGD or Adam on (θ_shared, θ₁ … θ_N). With one update per batch, π_old = π_θ and
   PPO's clip is inactive, so the clipped surrogate's gradient is exactly this one.

Randomness comes from :func:`uniforms`, a counter-based generator built from mulberry32's
32-bit mixer. It is a pure function of (seed, counter), so numpy evaluates a whole step for
all seeds at once, and ``grpolab/book/static/grpolab-toy.js`` computes the same numbers
draw for draw (``tests/test_toy_js.py`` checks it under Node).

Imports numpy and grpolab's numpy/scipy core (theory, advantages); never torch.

Derived in: book/labs/04-playground.md ("The toy policy").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from grpolab import theory
from grpolab._validate import as_positive_int
from grpolab.advantages import group_advantages

__all__ = [
    "BUCKET_EDGES",
    "Dataset",
    "ToyConfig",
    "ToyResult",
    "beta_dataset",
    "beta_quantile",
    "empirical_dataset",
    "exact_gradient_mse",
    "fit_mse_constants",
    "fixed_budget_sweep",
    "measure_gradient_mse",
    "predicted_optimal_group_size",
    "summarize",
    "t_critical_975",
    "train",
    "unbiased_config",
    "uniforms",
]

#: Pass rates are kept inside [P_FLOOR, 1 − P_FLOOR] so that every logit is finite.
P_FLOOR = 1e-4
#: Difficulty buckets by starting pass rate p₀ (at T = 1): [0, .05), [.05, .2), [.2, .5), [.5, 1].
BUCKET_EDGES = (0.0, 0.05, 0.2, 0.5, 1.0)
BUCKET_LABELS = ("p₀ < 0.05", "0.05 ≤ p₀ < 0.2", "0.2 ≤ p₀ < 0.5", "p₀ ≥ 0.5")
OPTIMIZERS = ("sgd", "adam")
LOSS_TYPES = ("grpo", "dapo", "dr_grpo")
MODES = ("budget", "prompts")
SCALES = ("group", "batch", "none")
BASELINES = ("mean", "leave_one_out")
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
ADV_EPS = 1e-4  # TRL's epsilon in (r − mean) / (std + eps)

_M32 = np.uint32(0xFFFFFFFF)


# ----------------------------------------------------------------------------------------
# The random numbers: identical in Python and JavaScript
# ----------------------------------------------------------------------------------------
def _mix32(x: np.ndarray) -> np.ndarray:
    """mulberry32's output function on uint32 (wrapping arithmetic, as Math.imul in JS)."""
    with np.errstate(over="ignore"):
        t = (x + np.uint32(0x6D2B79F5)).astype(np.uint32)
        t = (t ^ (t >> np.uint32(15))) * (t | np.uint32(1))
        t = t ^ (t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61)))
        return t ^ (t >> np.uint32(14))


def _seed_keys(seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(seeds, dtype=np.uint32)
    return _mix32(s), _mix32(s ^ np.uint32(0x9E3779B9))


def uniforms(seeds, counters) -> np.ndarray:
    """Uniform [0, 1) floats u(seed, n) = H(H(n ⊕ k₁) ⊕ k₂) / 2³², shape (seeds, counters).

    H is mulberry32's mixer, k₁ = H(seed), k₂ = H(seed ⊕ 0x9E3779B9). A pure function of
    (seed, n): a step's draws for every seed are one vectorised call, and a nonlinear
    two-key hash keeps different seeds from running along shifted copies of one stream.
    """
    k1, k2 = _seed_keys(np.atleast_1d(seeds))
    n = np.asarray(counters, dtype=np.uint32)
    h = _mix32(_mix32(n[None, :] ^ k1[:, None]) ^ k2[:, None])
    return h.astype(np.float64) / 4294967296.0


# ----------------------------------------------------------------------------------------
# Datasets
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dataset:
    """N prompts: their starting pass rates (at T = 1) and a difficulty bucket each."""

    pass_rates: np.ndarray
    name: str = "dataset"

    def __post_init__(self):
        p = np.asarray(self.pass_rates, dtype=float)
        if p.ndim != 1 or p.size == 0:
            raise ValueError("a dataset needs a 1-D list of at least one pass rate")
        if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
            raise ValueError("pass rates must lie in [0, 1]")
        object.__setattr__(self, "pass_rates", np.clip(p, P_FLOOR, 1 - P_FLOOR))

    @property
    def logits(self) -> np.ndarray:
        p = self.pass_rates
        return np.log(p) - np.log1p(-p)

    @property
    def buckets(self) -> np.ndarray:
        """Bucket index per prompt (see :data:`BUCKET_EDGES`)."""
        return np.clip(np.searchsorted(BUCKET_EDGES, self.pass_rates, side="right") - 1,
                       0, len(BUCKET_LABELS) - 1)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (Lentz; Numerical Recipes)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (tiny if abs(d) < tiny else d)
    h = d
    for m in range(1, 301):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (tiny if abs(d) < tiny else d)
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (tiny if abs(d) < tiny else d)
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b), by 100 bisection steps on I_x(a, b) (same code in JS)."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def beta_dataset(a: float, b: float, n_prompts: int = 64) -> Dataset:
    """N prompts whose starting pass rates are the (j + ½)/N quantiles of Beta(a, b).

    Quantiles, not draws: the dataset is the prior itself, the same for every seed.
    """
    for v, name in ((a, "a"), (b, "b")):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and 0.05 <= v <= 100):
            raise ValueError(f"Beta parameter {name} must be a number in [0.05, 100], got {v!r}")
    n = as_positive_int(n_prompts, "n_prompts")
    p = [beta_quantile((j + 0.5) / n, float(a), float(b)) for j in range(n)]
    return Dataset(np.array(p), name=f"Beta({a:g}, {b:g})")


def empirical_dataset(successes, samples, name: str = "measured") -> Dataset:
    """Prompts with measured k of n successes; p₀ = (k + ½)/(n + 1) (Jeffreys posterior mean).

    A prompt never solved in n samples is hard, not impossible: k = 0 gives 1/(2n + 2).
    """
    k = np.asarray(successes, dtype=float)
    n = np.broadcast_to(np.asarray(samples, dtype=float), k.shape)
    if k.ndim != 1 or k.size == 0 or (k < 0).any() or (k > n).any() or (n < 1).any():
        raise ValueError("successes must be a 1-D list with 0 <= k <= samples, samples >= 1")
    return Dataset((k + 0.5) / (n + 1.0), name=name)


# ----------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToyConfig:
    """One toy GRPO run (TRL's names where TRL has the concept).

    Attributes:
        num_generations: G, completions per prompt.
        mode: "budget" (B = ⌊budget / G⌋ prompts per step) or "prompts" (B fixed).
        budget: completions per step in "budget" mode.
        prompts_per_step: B in "prompts" mode.
        steps: optimizer steps.
        learning_rate, optimizer: "sgd" or "adam" (β = 0.9, 0.999; eps 1e-8).
        scale_rewards: "group", "batch" or "none" (TRL); baseline: "mean" or "leave_one_out".
        loss_type: "grpo", "dapo" or "dr_grpo"; wrong_length: tokens of a wrong completion
            per token of a right one (the loss types differ only when it is not 1).
        beta: weight of the exact KL(π_θ ‖ π_start), averaged over the batch's prompts.
        temperature: T in σ(z / T).
        dynamic_sampling: keep only groups whose rewards differ, drawing up to
            ``max_batches`` rounds of B groups (DAPO; verl's ``max_num_gen_batches``);
            a batch still short after the last round is topped up with zero-variance groups.
        filter_low, filter_high: train only on prompts with filter_low ≤ p₀ ≤ filter_high
            (offline difficulty filtering); the pass rate is still measured on all prompts.
        transfer: α in pⱼ = σ((α·θ_shared + θⱼ + bⱼ)/T): how much of what one prompt
            learns moves every other prompt (0: prompts are independent).
    """

    num_generations: int = 8
    mode: str = "budget"
    budget: int = 64
    prompts_per_step: int = 8
    steps: int = 200
    learning_rate: float = 0.05
    optimizer: str = "adam"
    scale_rewards: str = "group"
    baseline: str = "mean"
    loss_type: str = "grpo"
    wrong_length: float = 1.0
    beta: float = 0.0
    temperature: float = 1.0
    dynamic_sampling: bool = False
    max_batches: int = 3
    filter_low: float = 0.0
    filter_high: float = 1.0
    transfer: float = 0.25

    def __post_init__(self):
        as_positive_int(self.num_generations, "num_generations", minimum=2)
        as_positive_int(self.budget, "budget")
        as_positive_int(self.prompts_per_step, "prompts_per_step")
        as_positive_int(self.steps, "steps")
        as_positive_int(self.max_batches, "max_batches")
        for name, allowed in (("mode", MODES), ("optimizer", OPTIMIZERS),
                              ("scale_rewards", SCALES), ("baseline", BASELINES),
                              ("loss_type", LOSS_TYPES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name, lo in (("learning_rate", 0.0), ("temperature", 0.0), ("wrong_length", 0.0)):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > lo):
                raise ValueError(f"{name} must be a finite number > {lo:g}, got {v!r}")
        if not (isinstance(self.beta, (int, float)) and math.isfinite(self.beta)
                and self.beta >= 0):
            raise ValueError(f"beta must be a finite number >= 0, got {self.beta!r}")
        if not (isinstance(self.transfer, (int, float)) and 0.0 <= self.transfer <= 1.0):
            raise ValueError(f"transfer must be a number in [0, 1], got {self.transfer!r}")
        if not 0.0 <= self.filter_low <= self.filter_high <= 1.0:
            raise ValueError("difficulty filter needs 0 <= filter_low <= filter_high <= 1, "
                             f"got [{self.filter_low!r}, {self.filter_high!r}]")
        if self.mode == "budget" and self.budget < self.num_generations:
            raise ValueError(f"budget {self.budget} is smaller than one group of "
                             f"G = {self.num_generations}")

    @property
    def prompts(self) -> int:
        """B, the prompts per step."""
        if self.mode == "budget":
            return int(theory.fixed_budget_prompts(self.budget, self.num_generations))
        return self.prompts_per_step

    def to_dict(self) -> dict:
        return asdict(self)


# ----------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------
@dataclass
class ToyResult:
    """Per-seed curves of one configuration; index [seed, step].

    pass_rate, completions: shape (S, steps + 1), before step t (t = steps: the end);
    pass_rate is the exact mean of pⱼ over all N prompts, completions the cumulative
    number generated. zero_variance_observed / zero_variance_predicted: shape (S, steps),
    the fraction of the step's first B groups whose rewards are all equal, and the mean of
    p^G + (1 − p)^G over those groups' prompts at the current policy. bucket_pass_rate:
    (S, steps + 1, buckets), NaN for an empty bucket. theta: final (θ_shared, θ₁ … θ_N).
    """

    config: ToyConfig
    seeds: np.ndarray
    pass_rate: np.ndarray
    completions: np.ndarray
    zero_variance_observed: np.ndarray
    zero_variance_predicted: np.ndarray
    bucket_pass_rate: np.ndarray
    theta: np.ndarray


def _check_seeds(seeds) -> np.ndarray:
    s = np.atleast_1d(np.asarray(seeds))
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    if (s < 0).any() or (s > 0xFFFFFFFF).any():
        raise ValueError("seeds must lie in [0, 2**32 - 1]")
    return s.astype(np.int64)


def _advantages(rewards: np.ndarray, cfg: ToyConfig) -> np.ndarray:
    """Advantages of rewards (S, B, G) through grpolab.advantages, per seed's batch."""
    S, B, G = rewards.shape
    flat = rewards.reshape(-1)
    if cfg.scale_rewards != "batch":
        adv = group_advantages(flat, G, scale=cfg.scale_rewards, baseline=cfg.baseline,
                               eps=ADV_EPS)
        return adv.reshape(S, B, G)
    # scale="batch" divides by the std of one batch: one seed's B·G rewards, not all seeds'.
    centred = group_advantages(flat, G, scale="none", baseline=cfg.baseline).reshape(S, B, G)
    per_seed = rewards.reshape(S, B * G)
    std = per_seed.std(axis=1, ddof=1) if B * G > 1 else np.zeros(S)
    return centred / (std[:, None, None] + ADV_EPS)


def _loss_weights(y: np.ndarray, cfg: ToyConfig) -> np.ndarray:
    """Weight of each completion in the loss, as TRL's loss_type normalises it."""
    S, B, G = y.shape
    lengths = np.where(y > 0, 1.0, cfg.wrong_length)
    n = B * G
    if cfg.loss_type == "grpo":  # mean over sequences of the per-token mean
        return 1.0 / (n * lengths)
    if cfg.loss_type == "dapo":  # sum over tokens / tokens in the batch
        total = lengths.reshape(S, -1).sum(axis=1)
        return np.broadcast_to(1.0 / total[:, None, None], y.shape)
    return np.full(y.shape, 1.0 / (n * max(1.0, cfg.wrong_length)))  # dr_grpo: L_max


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def train(dataset: Dataset, config: ToyConfig, seeds=range(50)) -> ToyResult:
    """Train the toy policy with GRPO from θ = 0 for every seed at once.

    Returns the curves of :class:`ToyResult`. The same (dataset, config, seeds) gives the
    same numbers; ``grpolab-toy.js`` gives them too (to float rounding).

    Derived in: book/labs/04-playground.md ("The toy policy").
    """
    cfg = config
    seeds = _check_seeds(list(seeds) if isinstance(seeds, range) else seeds)
    S, N = seeds.size, dataset.pass_rates.size
    G, B, T = cfg.num_generations, cfg.prompts, cfg.temperature
    M = cfg.max_batches if cfg.dynamic_sampling else 1
    bias = dataset.logits
    eligible = np.flatnonzero((dataset.pass_rates >= cfg.filter_low)
                              & (dataset.pass_rates <= cfg.filter_high))
    if eligible.size == 0:
        raise ValueError(f"the difficulty filter [{cfg.filter_low:g}, {cfg.filter_high:g}] "
                         "keeps no prompt")
    buckets = dataset.buckets
    n_buckets = len(BUCKET_LABELS)
    draws_per_step = M * B * (G + 1)  # one prompt index and G outcomes per group
    if cfg.steps * draws_per_step >= 2**32:
        raise ValueError("steps × draws per step exceeds the generator's 2**32 counters")

    theta = np.zeros((S, N + 1))  # column 0 is θ_shared
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    pass_rate = np.empty((S, cfg.steps + 1))
    completions = np.zeros((S, cfg.steps + 1))
    zero_var_obs = np.empty((S, cfg.steps))
    zero_var_pred = np.empty((S, cfg.steps))
    bucket_rate = np.full((S, cfg.steps + 1, n_buckets), np.nan)
    rows = np.arange(S)[:, None]
    b1, b2 = ADAM_BETAS

    def record(t, p):
        pass_rate[:, t] = p.mean(axis=1)
        for k in range(n_buckets):
            sel = buckets == k
            if sel.any():
                bucket_rate[:, t, k] = p[:, sel].mean(axis=1)

    for t in range(cfg.steps):
        z = cfg.transfer * theta[:, :1] + theta[:, 1:] + bias[None, :]
        p = _sigmoid(z / T)
        record(t, p)
        base = t * draws_per_step
        u = uniforms(seeds, base + np.arange(draws_per_step, dtype=np.int64))
        idx = eligible[np.floor(u[:, :M * B] * eligible.size).astype(np.int64)]  # (S, M·B)
        y = (u[:, M * B:].reshape(S, M * B, G) < p[rows, idx][:, :, None]).astype(float)
        k = y.sum(axis=2)
        informative = (k > 0) & (k < G)
        zero_var_obs[:, t] = 1.0 - informative[:, :B].mean(axis=1)
        zero_var_pred[:, t] = np.asarray(theory.zero_variance_probability(p[rows, idx[:, :B]], G)
                                     ).mean(axis=1)
        if M > 1:
            # First B informative groups in drawing order, then zero-variance ones to fill.
            count = np.cumsum(informative, axis=1)
            full = count[:, -1] >= B
            pos = np.argmax(count >= B, axis=1)
            rounds = np.where(full, pos // B + 1, M)
            order = np.argsort(np.where(informative, 0, M * B) + np.arange(M * B),
                               axis=1, kind="stable")[:, :B]
            idx, y = idx[rows, order], y[rows, order]
        else:
            rounds = np.ones(S)
        completions[:, t + 1] = completions[:, t] + rounds * B * G

        adv = _advantages(y, cfg)
        w = _loss_weights(y, cfg)
        p_b = p[rows, idx]  # (S, B)
        score = (y - p_b[:, :, None]) / T
        g_group = (w * adv * score).sum(axis=2)  # ascent direction on z per group
        if cfg.beta > 0:
            z_b = z[rows, idx]
            kl_grad = p_b * (1 - p_b) / T * ((z_b - bias[idx]) / T)  # d KL / d z
            g_group = g_group - cfg.beta * kl_grad / B
        grad = np.zeros_like(theta)
        grad[:, 0] = cfg.transfer * g_group.sum(axis=1)
        flat = (rows * N + idx).ravel()
        grad[:, 1:] = np.bincount(flat, weights=g_group.ravel(), minlength=S * N).reshape(S, N)
        if cfg.optimizer == "sgd":
            theta = theta + cfg.learning_rate * grad
        else:
            m = b1 * m + (1 - b1) * grad
            v = b2 * v + (1 - b2) * grad * grad
            m_hat = m / (1 - b1 ** (t + 1))
            v_hat = v / (1 - b2 ** (t + 1))
            theta = theta + cfg.learning_rate * m_hat / (np.sqrt(v_hat) + ADAM_EPS)
    z = cfg.transfer * theta[:, :1] + theta[:, 1:] + bias[None, :]
    record(cfg.steps, _sigmoid(z / T))
    return ToyResult(cfg, seeds, pass_rate, completions, zero_var_obs, zero_var_pred, bucket_rate,
                     theta)


# ----------------------------------------------------------------------------------------
# Summaries: means with t-intervals over seeds
# ----------------------------------------------------------------------------------------
_T975 = (12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851,
         2.364624252, 2.306004135, 2.262157163, 2.228138852)


def t_critical_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    Exact table for df ≤ 10, then the Cornish–Fisher expansion around z = 1.959964
    (error < 1.2e-4 for df ≥ 11); the page's JS uses the same table and formula.
    """
    df = as_positive_int(df, "df")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963985
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def summarize(values: np.ndarray) -> dict:
    """Mean over seeds (axis 0) and its 95% t-interval half-width; needs ≥ 2 seeds."""
    x = np.asarray(values, dtype=float)
    S = x.shape[0]
    if S < 2:
        raise ValueError("a confidence band needs at least 2 seeds")
    mean = x.mean(axis=0)
    half = t_critical_975(S - 1) * x.std(axis=0, ddof=1) / math.sqrt(S)
    return {"mean": mean, "low": mean - half, "high": mean + half, "half_width": half}


# ----------------------------------------------------------------------------------------
# Gradient noise: MSE(B, G) = c₁/B + c₂/(BG) + c₃/(BG(G − 1)) and G* = 1 + √(c₃/c₁)
# ----------------------------------------------------------------------------------------
def _one_step_gradients(dataset: Dataset, cfg: ToyConfig, seeds: np.ndarray) -> np.ndarray:
    """The first step's gradient (ascent direction, before the optimizer) for every seed."""
    S, N = seeds.size, dataset.pass_rates.size
    G, B, T = cfg.num_generations, cfg.prompts, cfg.temperature
    bias = dataset.logits
    p = np.broadcast_to(_sigmoid(bias / T), (S, N))
    rows = np.arange(S)[:, None]
    u = uniforms(seeds, np.arange(B * (G + 1), dtype=np.int64))
    idx = np.floor(u[:, :B] * N).astype(np.int64)
    y = (u[:, B:].reshape(S, B, G) < p[rows, idx][:, :, None]).astype(float)
    adv = _advantages(y, cfg)
    g_group = (_loss_weights(y, cfg) * adv * (y - p[rows, idx][:, :, None]) / T).sum(axis=2)
    grad = np.zeros((S, N + 1))
    grad[:, 0] = cfg.transfer * g_group.sum(axis=1)
    grad[:, 1:] = np.bincount((rows * N + idx).ravel(), weights=g_group.ravel(),
                              minlength=S * N).reshape(S, N)
    return grad


def _plain(cfg: ToyConfig, B: int, G: int) -> ToyConfig:
    return replace(cfg, mode="prompts", prompts_per_step=B, num_generations=G,
                   dynamic_sampling=False, budget=max(cfg.budget, G))


def measure_gradient_mse(dataset: Dataset, config: ToyConfig, B: int, G: int,
                         n_draws: int = 4000, seed_offset: int = 0) -> dict:
    """Monte Carlo MSE of the first-step gradient at (B, G) about its mean: E‖ĝ − E ĝ‖².

    The mean E ĝ is the exact one (:func:`exact_gradient_mse`); with
    ``baseline="leave_one_out"`` and ``scale_rewards="none"`` it is ∇ of the mean pass rate
    itself, so the MSE is the error of the gradient estimate. Returns the MSE and its SE.
    """
    cfg = _plain(config, B, G)
    seeds = np.arange(seed_offset, seed_offset + n_draws)
    grads = _one_step_gradients(dataset, cfg, seeds)
    mean = exact_gradient_mse(dataset, cfg, B, G)["mean"]
    sq = ((grads - mean[None, :]) ** 2).sum(axis=1)
    return {"mse": float(sq.mean()), "se": float(sq.std(ddof=1) / math.sqrt(n_draws))}


def _binomial_pmf(G: int, p: np.ndarray) -> np.ndarray:
    k = np.arange(G + 1)
    logc = np.array([math.lgamma(G + 1) - math.lgamma(j + 1) - math.lgamma(G - j + 1)
                     for j in k])
    with np.errstate(divide="ignore"):
        lp = np.log(p)[:, None]
        lq = np.log1p(-p)[:, None]
    return np.exp(logc[None, :] + np.where(k > 0, k * lp, 0.0) + np.where(k < G, (G - k) * lq,
                                                                             0.0))


def exact_gradient_mse(dataset: Dataset, config: ToyConfig, B: int, G: int) -> dict:
    """The first-step gradient's mean and MSE about it, exactly, by summing over k ~ Bin(G, p).

    A group's gradient depends only on its number of successes k (scale_rewards "group" or
    "none"; loss_type "grpo" or "dr_grpo" weights are per completion). Prompts are drawn
    uniformly with replacement, so MSE(B, G) = h(G)/B exactly, with
    h = α² Var_j,k(g) [θ_shared] + Σⱼ (E[g²|j]/N − E[g|j]²/N²) [θⱼ].
    """
    cfg = _plain(config, B, G)
    if cfg.scale_rewards == "batch" or cfg.loss_type == "dapo":
        raise ValueError("the exact MSE needs groups that do not interact: scale_rewards "
                         "'group' or 'none' and loss_type 'grpo' or 'dr_grpo'")
    N, T = dataset.pass_rates.size, cfg.temperature
    p = _sigmoid(dataset.logits / T)
    ks = np.arange(G + 1)
    y = (np.arange(G)[None, :] < ks[:, None]).astype(float)  # (G+1, G): k ones, then zeros
    adv = group_advantages(y.reshape(-1), G, scale=cfg.scale_rewards, baseline=cfg.baseline,
                           eps=ADV_EPS).reshape(G + 1, G)
    lengths = np.where(y > 0, 1.0, cfg.wrong_length)
    n = B * G
    w = 1.0 / (n * lengths) if cfg.loss_type == "grpo" else np.full(
        y.shape, 1.0 / (n * max(1.0, cfg.wrong_length)))
    # g(k, p) = Σ_i w_i A_i (y_i − p)/T is affine in p: g = (a_k − p·c_k)/T
    a = (w * adv * y).sum(axis=1)
    c = (w * adv).sum(axis=1)
    g = (a[None, :] - p[:, None] * c[None, :]) / T  # (N, G+1)
    pmf = _binomial_pmf(G, p)
    m1 = (pmf * g).sum(axis=1)  # E[g | j]
    m2 = (pmf * g * g).sum(axis=1)  # E[g² | j]
    alpha = cfg.transfer
    shared_var = alpha**2 * (m2.mean() - m1.mean() ** 2)
    per_prompt = (m2 / N - m1**2 / N**2).sum()
    mean = np.concatenate([[alpha * B * m1.mean()], B * m1 / N])
    return {"mse": float(B * (shared_var + per_prompt)), "mean": mean}


def fit_mse_constants(Bs, Gs, mse, signal: float = 0.0) -> dict:
    """Fit the exact model MSE(B, G) = c₁/B + c₂/(BG) + c₃/(BG(G − 1)) to the toy's MSEs.

    The one constrained fit of the core, :func:`grpolab.advise.fit_noise_constants`
    (relative residuals, c₁, c₂ ≥ 0 and c₃ ≥ c₁ + ``signal``), on rows whose trace variance
    is ``mse`` and whose signal ‖∇J‖² is ``signal`` (exact here, so not debiased). Returns
    c1, c2, c3, ``G_star`` = 1 + √(c₃/c₁) (:func:`grpolab.theory.optimal_group_size`), the
    signal and the largest relative residual; raises when c₁ = 0 (G* unbounded).
    """
    from grpolab.advise import fit_noise_constants

    Bs, Gs, mse = (np.asarray(x, dtype=float).ravel() for x in (Bs, Gs, mse))
    if not (Bs.size == Gs.size == mse.size) or Bs.size < 3:
        raise ValueError("fit_mse_constants needs at least 3 (B, G, mse) points of equal length")
    if not (np.isfinite(mse).all() and (mse > 0).all()):
        raise ValueError("every MSE must be a finite number > 0")
    rows = [{"prompts_per_step": float(B), "G": float(G), "trace_variance": float(m),
             "mean_gradient_norm_sq": float(signal)} for B, G, m in zip(Bs, Gs, mse,
                                                                        strict=True)]
    c = fit_noise_constants(rows, "toy", debias=False)
    return {"c1": c.c1, "c2": c.c2, "c3": c.c3, "G_star": c.g_star, "signal": c.signal,
            "max_rel_residual": c.max_rel_residual}


#: The (B, G) grid over which :func:`predicted_optimal_group_size` fits c₁, c₂, c₃.
FIT_B = (2, 8)
FIT_G = (2, 3, 4, 6, 8, 16, 32)


def unbiased_config(config: ToyConfig) -> ToyConfig:
    """The config whose first-step gradient is unbiased for ∇(mean pass rate): RLOO, unscaled.

    The MSE form c₁/B + c₂/(BG) + c₃/(BG(G − 1)) describes an estimator whose mean does not
    depend on G. GRPO's mean baseline shrinks the mean by (G − 1)/G and its std scaling
    grows it with G, so G* is defined on this estimator (= G/(G − 1) × Dr. GRPO's).
    """
    return replace(config, baseline="leave_one_out", scale_rewards="none", loss_type="grpo",
                   wrong_length=1.0)


def predicted_optimal_group_size(dataset: Dataset, config: ToyConfig) -> dict:
    """G* = 1 + √(c₃/c₁) fitted to the exact MSE of the unbiased gradient at the start.

    Uses :func:`exact_gradient_mse` on :data:`FIT_B` × :data:`FIT_G` and
    :func:`fit_mse_constants`, with the exact ‖∇J‖² as the signal (the mean does not depend
    on B or G for this estimator). The exact model fits these MSEs exactly.
    """
    cfg = unbiased_config(config)
    Bs, Gs, mse = [], [], []
    signal = None
    for B in FIT_B:
        for G in FIT_G:
            exact = exact_gradient_mse(dataset, cfg, B, G)
            Bs.append(B)
            Gs.append(G)
            mse.append(exact["mse"])
            if signal is None:
                signal = float(exact["mean"] @ exact["mean"])
    return fit_mse_constants(Bs, Gs, mse, signal=signal)


def fixed_budget_sweep(dataset: Dataset, config: ToyConfig, Gs, seeds=range(200)) -> dict:
    """Train at each G with the same completions per step; which G learns fastest?

    Every G must divide ``config.budget`` so that all runs generate exactly
    budget × steps completions. The primary metric is the mean pass rate after the last
    step; the 95% t-interval is over seeds.

    Returns G, mean, half_width (lists), ``fastest_G`` (the argmax of the mean) and
    ``completions``.

    Derived in: book/labs/04-playground.md ("Where G* falls").
    """
    if config.mode != "budget":
        raise ValueError("fixed_budget_sweep needs mode='budget'")
    Gs = [as_positive_int(G, "G", minimum=2) for G in Gs]
    bad = [G for G in Gs if config.budget % G]
    if bad:
        raise ValueError(f"budget {config.budget} is not a multiple of G = {bad}: the runs "
                         "would not generate the same number of completions")
    means, halves = [], []
    for G in Gs:
        res = train(dataset, replace(config, num_generations=G), seeds)
        band = summarize(res.pass_rate[:, -1])
        means.append(float(band["mean"]))
        halves.append(float(band["half_width"]))
    return {"G": Gs, "mean": means, "half_width": halves,
            "fastest_G": Gs[int(np.argmax(means))], "completions": config.budget * config.steps}
