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
from grpolab._validate import (
    MAX_DRAWS,
    ArgumentTypeError,
    as_flag,
    as_integer_array,
    as_positive_int,
    as_probability_scalar,
    as_real_array,
    as_real_scalar,
)
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
#: Beta parameters :func:`beta_quantile` accepts: its continued fraction is accurate to
#: 1e-12 there (at a = b = 1e8 it is off by 2e-5).
BETA_QUANTILE_RANGE = (1e-4, 1e5)
#: Most prompts :func:`beta_dataset` builds (each is 100 bisection steps in Python).
MAX_DATASET_PROMPTS = 4096
#: Largest G the exact gradient MSE sums over (it builds (G + 1) × G tables).
MAX_EXACT_G = 2048


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


def _uint32s(x, name: str) -> np.ndarray:
    """Integers in [0, 2³² − 1] as uint32; a float, a bool or an out-of-range value is refused
    (never truncated or wrapped)."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):  # ragged nesting: as_integer_array names it
        arr = np.asarray(None)
    if arr.dtype.kind in "iu" and arr.size:  # the fast path train() takes every step
        if int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF:
            raise ValueError(f"{name} must be integers in [0, 2**32 - 1], got "
                             f"{int(arr.min()) if int(arr.min()) < 0 else int(arr.max())}")
        return arr.astype(np.uint32)
    if arr.dtype.kind == "f":
        raise ArgumentTypeError(f"{name} must be integers in [0, 2**32 - 1], not floats "
                                f"(a float would be truncated), got {x!r:.60}")
    return as_integer_array(x, name, minimum=0, maximum=0xFFFFFFFF).astype(np.uint32)


def uniforms(seeds, counters) -> np.ndarray:
    """Uniform [0, 1) floats u(seed, n) = H(H(n ⊕ k₁) ⊕ k₂) / 2³², shape (seeds, counters).

    H is mulberry32's mixer, k₁ = H(seed), k₂ = H(seed ⊕ 0x9E3779B9). A pure function of
    (seed, n): a step's draws for every seed are one vectorised call, and a nonlinear
    two-key hash keeps different seeds from running along shifted copies of one stream.
    Seeds and counters are integers in [0, 2³² − 1] (scalars or 1-D), at most
    :data:`~grpolab._validate.MAX_DRAWS` numbers in all.
    """
    s = np.atleast_1d(_uint32s(seeds, "seeds"))
    n = np.atleast_1d(_uint32s(counters, "counters"))
    if s.ndim != 1 or n.ndim != 1:
        raise ValueError(f"seeds and counters must be 1-D, got shapes {s.shape} and {n.shape}")
    if s.size * n.size > MAX_DRAWS:
        raise ValueError(f"seeds × counters: {s.size} × {n.size} numbers exceed {MAX_DRAWS:.0e}")
    k1, k2 = _seed_keys(s)
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
        p = as_real_array(self.pass_rates, "pass_rates", expected="a list of pass rates")
        bad = ~((p >= 0) & (p <= 1))  # NaN fails both
        if bad.any():
            raise ValueError(f"pass_rates: pass rates must lie in [0, 1], got "
                             f"{float(p[bad].ravel()[0])!r}")
        if p.ndim != 1 or p.size == 0:
            raise ValueError("pass_rates: a dataset needs a 1-D list of at least one pass rate")
        if not isinstance(self.name, str):
            raise ArgumentTypeError(f"name must be a string, got {self.name!r:.60}")
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
    """The q-quantile of Beta(a, b), by 100 bisection steps on I_x(a, b) (same code in JS).

    q is a probability; a and b lie in :data:`BETA_QUANTILE_RANGE`, where the result is
    accurate to 1e-12."""
    q = as_probability_scalar(q, "q")
    a, b = (as_real_scalar(v, n, *BETA_QUANTILE_RANGE) for v, n in ((a, "a"), (b, "b")))
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
        if (isinstance(v, bool) or not isinstance(v, (int, float))
                or not 0.05 <= v <= 100):  # NaN fails the range; a huge int never converts
            raise ValueError(f"Beta parameter {name} must be a number in [0.05, 100], got {v!r}")
    n = as_positive_int(n_prompts, "n_prompts", maximum=MAX_DATASET_PROMPTS)
    p = [beta_quantile((j + 0.5) / n, float(a), float(b)) for j in range(n)]
    return Dataset(np.array(p), name=f"Beta({a:g}, {b:g})")


def empirical_dataset(successes, samples, name: str = "measured") -> Dataset:
    """Prompts with measured k of n successes; p₀ = (k + ½)/(n + 1) (Jeffreys posterior mean).

    A prompt never solved in n samples is hard, not impossible: k = 0 gives 1/(2n + 2).
    """
    k = as_integer_array(successes, "successes", minimum=0, maximum=10**15).astype(float)
    n = as_integer_array(samples, "samples", minimum=1, maximum=10**15).astype(float)
    try:
        n = np.broadcast_to(n, k.shape)
    except ValueError:
        raise ValueError(f"samples must be one count or one per prompt, got shape {n.shape} "
                         f"for {k.shape} successes") from None
    if k.ndim != 1 or k.size == 0 or (k > n).any():
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
        # Counts are stored as ints (8.0 becomes 8; 8.5 is refused), so nothing downstream
        # truncates a float; each range is what the toy can compute without overflowing.
        ints = (("num_generations", 2, 10**6), ("budget", 1, 10**12),
                ("prompts_per_step", 1, 10**9), ("steps", 1, 10**6), ("max_batches", 1, 10**4))
        for name, lo, hi in ints:
            object.__setattr__(self, name, as_positive_int(getattr(self, name), name,
                                                           minimum=lo, maximum=hi))
        for name, allowed in (("mode", MODES), ("optimizer", OPTIMIZERS),
                              ("scale_rewards", SCALES), ("baseline", BASELINES),
                              ("loss_type", LOSS_TYPES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        reals = (("learning_rate", 0.0, 1e3), ("temperature", 1e-3, 1e3),
                 ("wrong_length", 0.0, 1e6))
        for name, lo, hi in reals:
            v = getattr(self, name)
            if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                    or not lo < v <= hi):
                raise ValueError(f"{name} must be a finite number > {lo:g} and <= {hi:g}, got "
                                 f"{v!r}")
        object.__setattr__(self, "beta", as_real_scalar(self.beta, "beta", maximum=1e6))
        if isinstance(self.transfer, bool):
            raise ValueError(f"transfer must be a number in [0, 1], got {self.transfer!r}")
        object.__setattr__(self, "transfer", as_probability_scalar(self.transfer, "transfer"))
        object.__setattr__(self, "dynamic_sampling",
                           as_flag(self.dynamic_sampling, "dynamic_sampling"))
        for name in ("filter_low", "filter_high"):
            if isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a number in [0, 1], got {getattr(self, name)!r}")
            object.__setattr__(self, name, as_probability_scalar(getattr(self, name), name))
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
    try:
        s = np.atleast_1d(np.asarray(seeds))
    except (ValueError, TypeError):  # ragged nesting and the like
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r:.60}") from None
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r:.60}")
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
    with np.errstate(over="ignore"):  # exp(-z) = inf for z << 0 gives exactly 0, as in JS
        return 1.0 / (1.0 + np.exp(-z))


def _check_types(dataset, config) -> None:
    if not isinstance(dataset, Dataset):
        raise ArgumentTypeError(f"dataset must be a grpolab.toy.Dataset (beta_dataset, "
                                f"empirical_dataset), got {type(dataset).__name__}")
    if not isinstance(config, ToyConfig):
        raise ArgumentTypeError(f"config must be a grpolab.toy.ToyConfig, got "
                                f"{type(config).__name__}")


def train(dataset: Dataset, config: ToyConfig, seeds=range(50)) -> ToyResult:
    """Train the toy policy with GRPO from θ = 0 for every seed at once.

    Returns the curves of :class:`ToyResult`. The same (dataset, config, seeds) gives the
    same numbers; ``grpolab-toy.js`` gives them too (to float rounding).

    Derived in: book/labs/04-playground.md ("The toy policy").
    """
    _check_types(dataset, config)
    cfg = config
    seeds = _check_seeds(list(seeds) if isinstance(seeds, range) else seeds)
    S, N = seeds.size, dataset.pass_rates.size
    G, B, T = cfg.num_generations, cfg.prompts, cfg.temperature
    M = cfg.max_batches if cfg.dynamic_sampling else 1
    if B < 1:
        raise ValueError(f"budget {cfg.budget} leaves no prompt per step at G = {G}")
    per_step = S * M * B * (G + 1)  # random numbers one step draws
    kept = S * (cfg.steps + 1) * (len(BUCKET_LABELS) + 4) + S * (N + 1) * 3
    if per_step > MAX_DRAWS or kept > MAX_DRAWS:
        raise ValueError(f"seeds × batches × prompts × G: {per_step:.3g} draws per step and "
                         f"{kept:.3g} numbers kept exceed {MAX_DRAWS:.0e} (memory); lower the "
                         "seeds, steps, budget or G")
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
    if not (np.isfinite(theta).all() and np.isfinite(pass_rate).all()):
        raise ValueError(f"learning_rate {cfg.learning_rate:g}: the toy run diverged (its "
                         "parameters overflowed); lower learning_rate")
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
    df = as_positive_int(df, "df", maximum=10**15)  # beyond, t is z to 16 digits anyway
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963985
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def summarize(values: np.ndarray) -> dict:
    """Mean over seeds (axis 0) and its 95% t-interval half-width; needs ≥ 2 seeds of
    finite values (a NaN would give NaN bounds, so it is refused)."""
    x = as_real_array(values, "values", expected="an array of finite numbers, seeds first")
    if x.ndim == 0 or x.shape[0] < 2:
        raise ValueError("values: a confidence band needs at least 2 seeds (axis 0)")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite numbers (found NaN or inf)")
    if (np.abs(x) > 1e150).any():  # the std squares them
        raise ValueError("values must be at most 1e150 in size")
    S = x.shape[0]
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
    B = as_positive_int(B, "B", maximum=10**9)
    G = as_positive_int(G, "G", minimum=2, maximum=10**6)
    return replace(cfg, mode="prompts", prompts_per_step=B, num_generations=G,
                   dynamic_sampling=False, budget=max(cfg.budget, G))


def measure_gradient_mse(dataset: Dataset, config: ToyConfig, B: int, G: int,
                         n_draws: int = 4000, seed_offset: int = 0) -> dict:
    """Monte Carlo MSE of the first-step gradient at (B, G) about its mean: E‖ĝ − E ĝ‖².

    The mean E ĝ is the exact one (:func:`exact_gradient_mse`); with
    ``baseline="leave_one_out"`` and ``scale_rewards="none"`` it is ∇ of the mean pass rate
    itself, so the MSE is the error of the gradient estimate. Returns the MSE and its SE.
    """
    _check_types(dataset, config)
    n_draws = as_positive_int(n_draws, "n_draws", minimum=2, maximum=10**7)
    seed_offset = as_positive_int(seed_offset, "seed_offset", minimum=0,
                                  maximum=2**32 - 1 - n_draws)
    cfg = _plain(config, B, G)
    if n_draws * (cfg.prompts_per_step * (G + 1) + dataset.pass_rates.size + 1) > MAX_DRAWS:
        raise ValueError(f"n_draws × (B·(G + 1) + prompts): {n_draws} draws of this size exceed "
                         f"{MAX_DRAWS:.0e} numbers (memory); lower n_draws")
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
    _check_types(dataset, config)
    cfg = _plain(config, B, G)
    G = cfg.num_generations
    if G > MAX_EXACT_G or dataset.pass_rates.size * (G + 1) > MAX_DRAWS // 8:
        raise ValueError(f"G = {G}: the exact MSE builds (G + 1) × G and prompts × (G + 1) "
                         f"tables; G <= {MAX_EXACT_G} and prompts × (G + 1) <= "
                         f"{MAX_DRAWS // 8:.0e} fit")
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
    if not isinstance(config, ToyConfig):
        raise ArgumentTypeError(f"config must be a grpolab.toy.ToyConfig, got "
                                f"{type(config).__name__}")
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
    _check_types(dataset, config)
    if config.mode != "budget":
        raise ValueError("config: fixed_budget_sweep needs mode='budget'")
    if isinstance(Gs, (str, bytes)) or not hasattr(Gs, "__iter__"):
        raise ArgumentTypeError(f"Gs must be a list of group sizes, got {Gs!r:.60}")
    Gs = [as_positive_int(G, "Gs", minimum=2, maximum=config.budget) for G in Gs]
    if not Gs:
        raise ValueError("Gs must list at least one group size")
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
