"""Choosing G from your own pass rates: the logic behind ``grpolab advise``.

Read per-prompt pass rates (a census, a CSV, a JSON list) or a TRL training log with
``frac_reward_zero_std`` (trainer_state.json, JSON lines, a W&B CSV export; the 0/1
correctness reward among several), turn them into a difficulty model, and evaluate every
candidate G at a fixed budget of completions per step: the expected fraction of
zero-variance groups, the informative prompts per step, the completions paid per
informative group, the remedies (filtering, dynamic sampling, adaptive G) and, when
gradient-noise constants are given, the exact model's fixed-budget optimum
G* = 1 + √(c₃/c₁). The G maximises expected informative prompts per step at the fixed
budget (:func:`_choose_group_size`); a known total compute raises it (IsoCompute). Every
line of the recommendation carries its reason and the compute it holds fixed, and the
advice ends with a TRL ``GRPOConfig`` (:func:`trl_config`); ``--keep`` writes the prompt
ids that filtering keeps (:func:`write_keep`).

numpy/scipy only (never torch), like :mod:`grpolab.theory`, whose closed forms it uses.

Derived in: book/capstone/01-choosing-g.md (the decision procedure); the closed forms in
book/theory/02-baseline-variance.md, 03-zero-variance.md, 04-cost-of-g.md and
05-degenerate-groups.md.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import optimize, special

from grpolab import allocation, theory
from grpolab._files import (
    CorruptFileError,
    JSONSyntaxError,
    parse_csv,
    parse_json,
    read_json,
    read_text,
    write_atomic,
)
from grpolab._validate import (
    MAX_COUNT,
    MAX_GROUP_SIZE,
    as_group_size,
    as_integer_array,
    as_positive_int,
    as_probability,
    as_real_scalar,
)
from grpolab.allocation import adaptive_allocation  # re-exported: advise's remedies table uses it

__all__ = [
    "AdviseError",
    "Advice",
    "Difficulty",
    "NoiseConstants",
    "advise",
    "back_out_beta",
    "back_out_pass_rate",
    "candidate_group_sizes",
    "fit_beta_binomial",
    "fit_noise_constants",
    "leave_one_out_units",
    "format_advice",
    "load_noise",
    "load_pass_rates",
    "check_keep_target",
    "trl_config",
    "write_keep",
]

#: Column / key names accepted for a per-prompt pass rate, and for success counts.
RATE_KEYS = ("pass_rate", "p", "pass_rates", "rate", "accuracy")
SUCCESS_KEYS = ("successes", "k", "correct")
TRIAL_KEYS = ("samples", "n", "trials")
#: TRL's logged metric names (``GRPOTrainer._metrics``), bare or with a ``train/`` prefix.
ZERO_STD_KEYS = ("frac_reward_zero_std", "train/frac_reward_zero_std")
ZERO_STD_KEY = "frac_reward_zero_std"
#: Columns a W&B CSV export may name its step by (panel export, run-history export, TRL).
STEP_KEYS = ("Step", "_step", "step", "global_step", "train/global_step")
#: Keys that mark JSON lines as a training log rather than per-prompt records.
LOG_KEYS = ("loss", "learning_rate", "reward", "train/loss", "train/reward", "epoch")
#: Columns that name a prompt in a census (``--keep`` writes them).
PROMPT_ID_KEYS = ("prompt_id", "id", "index")
#: Defaults of the decision rule; each is printed next to the line it decides.
DEFAULT_BUDGET = 512
DEFAULT_MAX_G = 64
START_G = 8           # TRL's default num_generations and Dr. GRPO's recipe (references.md)
MIN_PROMPTS = 8       # a G above START_G must still leave this many prompts per step
G_TIE = 0.10          # Gs within 10% of the most informative prompts per step count as tied
MAX_PASSES = 1        # with a known total compute: G no smaller than one pass over the pool
TRL_PER_DEVICE_BATCH = 8  # TRL's default per_device_train_batch_size (completions)
MIN_GAIN = 0.10       # a remedy must add >= 10% informative groups per completion to be preferred
DS_ZERO_VARIANCE = 0.25  # dynamic sampling pays for itself when > 25% of groups have zero variance
LOG_WINDOW = 10       # TRL logs: average the last this many logged steps
#: Bounds before work: the largest pass-rate file read, and the most prompts it may hold
#: (each prompt costs ~100 bytes of working memory: 10⁷ prompts is about 1 GB).
MAX_INPUT_BYTES = 2**30
MAX_PROMPTS = 10**7
#: Largest budget of completions per step (B·G) that advise evaluates.
MAX_BUDGET = 10**12
#: Largest total compute (completions over a run) and pool size advise accepts.
MAX_TOTAL = 10**15


class AdviseError(ValueError):
    """Bad input to ``grpolab advise``: printed as one line by the command."""


# --------------------------------------------------------------------------------------
# The difficulty model
# --------------------------------------------------------------------------------------
@dataclass
class Difficulty:
    """What we know about the pass rates of the training prompts.

    ``kind`` is ``"counts"`` (per-prompt successes out of trials, e.g. the SmolLM2 census),
    ``"rates"`` (per-prompt pass rates, taken as the true rates), ``"beta"`` (a Beta(a, b)
    population, e.g. backed out of a TRL log) or ``"point"`` (one pass rate for every prompt).
    The fields a kind needs are checked on construction (a ValueError naming the field).
    """

    kind: str
    source: str
    successes: np.ndarray | None = None
    trials: np.ndarray | None = None
    rates: np.ndarray | None = None
    a: float | None = None
    b: float | None = None
    p: float | None = None
    assumptions: list[str] = field(default_factory=list)
    #: counts only: a Beta prior fitted to a larger pool these prompts were selected from;
    #: then every G uses the posterior (selection on k leaves the posterior valid, while the
    #: unbiased U-statistic on the same samples would be optimistic).
    selected_from: tuple[float, float] | None = None
    #: per-G results and the fitted prior, so advise() computes each once
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    #: what a reader of the advice must know about the input (printed as "warning:")
    warnings: list[str] = field(default_factory=list)
    #: counts and rates: each prompt's id (a census's ``prompt_id`` column), when it has one
    prompt_ids: list[str] | None = None

    def __post_init__(self):
        if self.kind not in ("counts", "rates", "beta", "point"):
            raise ValueError(f"kind must be 'counts', 'rates', 'beta' or 'point', got "
                             f"{self.kind!r}")
        if self.kind == "counts":
            k = as_integer_array(self.successes, "successes", minimum=0, maximum=MAX_COUNT)
            n = as_integer_array(self.trials, "trials", minimum=1, maximum=MAX_COUNT)
            if k.ndim != 1 or k.shape != n.shape or not 1 <= k.size <= MAX_PROMPTS:
                raise ValueError(f"successes and trials must be two 1-D arrays of equal length "
                                 f"(1 to {MAX_PROMPTS} prompts), got shapes {k.shape} and "
                                 f"{n.shape}")
            if (k > n).any():
                raise ValueError("successes must lie in [0, trials] for every prompt")
            self.successes, self.trials = k, n
        elif self.kind == "rates":
            r = as_probability(self.rates, "rates")
            if r.ndim != 1 or not 1 <= r.size <= MAX_PROMPTS:
                raise ValueError(f"rates must be a 1-D array of 1 to {MAX_PROMPTS} pass rates, "
                                 f"got shape {r.shape}")
            self.rates = r
        elif self.kind == "beta":
            lo, hi = theory.BETA_PARAMETER_RANGE
            self.a = as_real_scalar(self.a, "a", minimum=lo, maximum=hi)
            self.b = as_real_scalar(self.b, "b", minimum=lo, maximum=hi)
        else:
            self.p = float(as_probability(self.p, "p"))
        if self.selected_from is not None:
            lo, hi = theory.BETA_PARAMETER_RANGE
            self.selected_from = tuple(as_real_scalar(v, "selected_from", minimum=lo, maximum=hi)
                                       for v in self.selected_from)

    # ---- per-prompt views -------------------------------------------------------------
    @property
    def prompts(self) -> int | None:
        """Number of prompts in the pool, or None for a population model."""
        if self.kind == "counts":
            return int(self.successes.size)
        if self.kind == "rates":
            return int(self.rates.size)
        return None

    @property
    def mean_pass_rate(self) -> float:
        if self.kind == "counts":
            return float(np.mean(self.successes / self.trials))
        if self.kind == "rates":
            return float(np.mean(self.rates))
        if self.kind == "beta":
            return self.a / (self.a + self.b)
        return float(self.p)

    def _pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct (k, n) pairs of a census and how many prompts have each: every
        per-prompt formula here depends on (k, n) only, and a census of 10⁶ prompts at one
        n has at most n + 1 distinct pairs."""
        if "pairs" not in self._cache:
            k, n = self.successes, self.trials
            top = int(n.max()) + 1
            if top < 2**31:  # one int64 key per prompt, no overflow
                keys, counts = np.unique(k * top + n, return_counts=True)
                self._cache["pairs"] = (keys // top, keys % top, counts)
            else:
                both, counts = np.unique(np.stack([k, n], axis=1), axis=0, return_counts=True)
                self._cache["pairs"] = (both[:, 0], both[:, 1], counts)
        return self._cache["pairs"]

    def prior(self) -> tuple[float, float]:
        """Beta prior fitted to the counts by maximum likelihood (beta-binomial)."""
        if self.selected_from is not None:
            return self.selected_from
        if "prior" not in self._cache:
            k, n, counts = self._pairs()
            self._cache["prior"] = _fit_beta_binomial_pairs(k, n, counts)
        return self._cache["prior"]

    def point_rates(self) -> np.ndarray | None:
        """One pass rate per prompt: the rates, or the posterior means (k + a)/(n + a + b)."""
        if self.kind == "rates":
            return self.rates
        if self.kind == "counts":
            a, b = self.prior()
            return (self.successes + a) / (self.trials + a + b)
        return None

    # ---- the expected zero-variance fraction --------------------------------------------
    def method(self, G: int) -> str:
        """How :meth:`zero_variance_fraction` is computed at this G (printed in the table)."""
        G = as_positive_int(G, "G", maximum=MAX_GROUP_SIZE)
        if self.kind == "counts":
            if G <= int(self.trials.min()) and self.selected_from is None:
                return "unbiased"
            return "emp.Bayes"
        return {"rates": "plug-in", "beta": "Beta", "point": "point"}[self.kind]

    def zero_variance_fraction(self, G: int) -> float:
        """Expected fraction of zero-variance groups, E[p^G + (1 − p)^G] over the prompts.

        counts, G ≤ trials: the unbiased U-statistic [C(k,G) + C(n−k,G)]/C(n,G) per prompt
        (plugging k/n into p^G is biased upward). counts, G > trials: the posterior
        expectation under the fitted Beta prior, E[p^G + (1−p)^G | k, n]. rates: the plug-in
        mean. beta: the Beta moment. point: p^G + (1 − p)^G. One vectorised call per G
        (over the distinct (k, n) pairs for counts), computed once and kept.
        """
        G = as_positive_int(G, "G", maximum=MAX_GROUP_SIZE)
        if G in self._cache:
            return self._cache[G]
        if self.kind == "counts":
            k, n, counts = self._pairs()
            if G <= int(n.min()) and self.selected_from is None:
                per_pair = theory.unbiased_zero_variance_estimate(k, n, G)
            else:
                a, b = self.prior()
                per_pair = theory.beta_zero_variance_probability(G, a + k, b + n - k)
            value = float(np.dot(np.asarray(per_pair, dtype=float), counts) / counts.sum())
        elif self.kind == "rates":
            value = float(theory.empirical_zero_variance_probability(self.rates, G))
        elif self.kind == "beta":
            value = float(theory.beta_zero_variance_probability(G, self.a, self.b))
        else:
            value = float(theory.zero_variance_probability(self.p, G))
        self._cache[G] = value
        return value

    def filtered(self) -> Difficulty | None:
        """The pool without prompts that were never or always solved (None if not per-prompt)."""
        if self.kind == "counts":
            keep = (self.successes > 0) & (self.successes < self.trials)
            if not keep.any():
                return None
            return Difficulty("counts", self.source + " (filtered)", self.successes[keep],
                              self.trials[keep], selected_from=self.prior())
        if self.kind == "rates":
            keep = (self.rates > 0) & (self.rates < 1)
            if not keep.any():
                return None
            return Difficulty("rates", self.source + " (filtered)", rates=self.rates[keep])
        return None


def fit_beta_binomial(successes, trials) -> tuple[float, float]:
    """Maximum-likelihood Beta(a, b) prior for per-prompt success counts k out of n.

    Equation: log L = Σ_j [log C(n_j, k_j) + log B(k_j + a, n_j − k_j + b) − log B(a, b)],
    maximised over log a and log b in [−7, 7] (so a prompt pool with no success at all
    still gives a finite, small a). ``successes`` and ``trials`` are integer counts with
    0 ≤ k ≤ n and n ≥ 1 (broadcast against each other); empty, NaN or inconsistent counts
    are refused. The likelihood is summed over distinct (k, n) pairs with their counts.

    Derived in: book/capstone/01-choosing-g.md, "Step 1: from a census to a zero-variance fraction".
    """
    k = as_integer_array(successes, "successes", minimum=0, maximum=MAX_COUNT)
    n = as_integer_array(trials, "trials", minimum=1, maximum=MAX_COUNT)
    try:
        k, n = (v.ravel() for v in np.broadcast_arrays(k, n))
    except ValueError:
        raise ValueError(f"successes and trials must have the same shape, got {k.shape} and "
                         f"{n.shape}") from None
    if k.size == 0:
        raise ValueError("successes must hold at least one count")
    if (k > n).any():
        raise ValueError("successes must lie in [0, trials]: no prompt can pass more often "
                         "than it was tried")
    return Difficulty("counts", "fit", successes=k, trials=n).prior()


def _fit_beta_binomial_pairs(k: np.ndarray, n: np.ndarray, counts: np.ndarray):
    """:func:`fit_beta_binomial` on distinct (k, n) pairs, each weighted by its count."""
    k, n, w = (np.asarray(v, dtype=float) for v in (k, n, counts))

    def nll(x):
        a, b = np.exp(x)
        return -float(np.dot(w, special.betaln(k + a, n - k + b) - special.betaln(a, b)))

    m = float(np.clip(np.dot(w, k / n) / w.sum(), 0.01, 0.99))
    res = optimize.minimize(nll, x0=[math.log(m), math.log(1 - m)], method="L-BFGS-B",
                            bounds=[(-7.0, 7.0), (-7.0, 7.0)])
    a, b = np.exp(res.x)
    return float(a), float(b)


# --------------------------------------------------------------------------------------
# Backing a difficulty model out of a TRL log
# --------------------------------------------------------------------------------------
def back_out_pass_rate(zero_std_fraction: float, G: int) -> float:
    """The pass rate p ≤ 1/2 of a homogeneous pool that gives this zero-variance fraction.

    Solves p^G + (1 − p)^G = z on [0, 1/2], where the left side falls from 1 to 2^(1−G);
    the mirror solution 1 − p gives the same z. G is an integer ≥ 2 (a fractional G is
    refused, not truncated).

    Derived in: book/capstone/01-choosing-g.md, "When all you have is a training log".
    """
    z = as_real_scalar(zero_std_fraction, "zero_std_fraction", minimum=-math.inf)
    G = as_positive_int(G, "G", minimum=2, maximum=MAX_GROUP_SIZE)
    floor = 2.0 ** (1 - G)
    if not floor <= z <= 1.0:
        raise AdviseError(f"a zero-std fraction of {z:.4g} is impossible at G = {G} with one "
                          f"pass rate (it lies in [{floor:.4g}, 1])")
    if z >= 1.0:
        return 0.0
    if z <= floor:
        return 0.5
    return float(optimize.brentq(lambda p: theory.zero_variance_probability(p, G) - z,
                                 0.0, 0.5, xtol=1e-12))


def back_out_beta(zero_std_fraction: float, mean_reward: float, G: int) -> tuple[float, float]:
    """The Beta(a, b) with mean m whose expected zero-variance fraction at G equals z.

    With a = mκ and b = (1 − m)κ, E[p^G + (1 − p)^G] falls from 1 (κ → 0: every prompt
    always or never solved) to m^G + (1 − m)^G (κ → ∞: one pass rate for all); κ is found
    by bisection in log κ. Raises if z is outside that range (then no Beta fits).

    Derived in: book/capstone/01-choosing-g.md, "When all you have is a training log".
    """
    z = as_real_scalar(zero_std_fraction, "zero_std_fraction", minimum=-math.inf)
    m = as_real_scalar(mean_reward, "mean_reward", minimum=-math.inf)
    G = as_positive_int(G, "G", minimum=2, maximum=MAX_GROUP_SIZE)
    if not 0.0 < m < 1.0:
        raise AdviseError(f"mean_reward {m:.4g} must lie strictly inside (0, 1) to fit a Beta")
    low = float(theory.zero_variance_probability(m, G))
    if not low < z < 1.0:
        raise AdviseError(f"no Beta with mean {m:.4g} gives a zero-std fraction of {z:.4g} at "
                          f"G = {G} (possible range ({low:.4g}, 1))")

    def gap(log_kappa):
        kappa = math.exp(log_kappa)
        return theory.beta_zero_variance_probability(G, m * kappa, (1 - m) * kappa) - z

    log_kappa = optimize.brentq(gap, math.log(1e-6), math.log(1e8), xtol=1e-10)
    kappa = math.exp(log_kappa)
    return float(m * kappa), float((1 - m) * kappa)


def _bare(key) -> str | None:
    """A logged metric's name without W&B's run prefix ("run-1 - ") and TRL's "train/"
    prefix; None for evaluation metrics and W&B's __MIN/__MAX companion columns."""
    if not isinstance(key, str):
        return None
    key = key.strip()
    if " - " in key:  # a W&B panel export names columns "<run name> - train/reward"
        key = key.rsplit(" - ", 1)[1].strip()
    if key.endswith(("__MIN", "__MAX")) or key.startswith(("eval_", "eval/", "test/")):
        return None
    return key[len("train/"):] if key.startswith("train/") else key


def _reward_functions(keys) -> dict[str, tuple[str, str | None]]:
    """The reward functions a TRL log names: {name: (mean key, std key or None)}.

    TRL 1.x logs ``rewards/<name>/mean`` and ``rewards/<name>/std`` per reward function
    (``GRPOTrainer._generate_and_score_completions``); TRL before 0.16 logged
    ``rewards/<name>``."""
    keys = set(keys)
    out: dict[str, tuple[str, str | None]] = {}
    for key in sorted(keys):
        if not key.startswith("rewards/"):
            continue
        rest = key[len("rewards/"):]
        if rest.endswith("/mean"):
            name = rest[:-len("/mean")]
            std = f"rewards/{name}/std"
            out[name] = (key, std if std in keys else None)
        elif "/" not in rest:
            out.setdefault(rest, (key, None))
    return out


def _column(rows: list[dict], key: str, source: str) -> np.ndarray:
    return np.array([_number(r.get(key), key, source) for r in rows], dtype=float)


#: How far a logged std may sit from a 0/1 reward's sqrt(m(1 - m)) (the batch's ddof = 1
#: raises it by sqrt(n/(n-1)); averaging over a logging interval lowers it slightly).
BINARY_STD_TOLERANCE = 0.15


def _looks_binary(rows: list[dict], mean_key: str, std_key: str | None, source: str) -> bool:
    """Whether a logged reward can be a 0/1 reward: its means lie in [0, 1] and, when its
    batch std is logged, the std is that of a Bernoulli variable, sqrt(m(1 - m))."""
    if any(r.get(mean_key) is None for r in rows):
        return False
    m = _column(rows, mean_key, source)
    if ((m < 0) | (m > 1)).any():
        return False
    if std_key is None or any(r.get(std_key) is None for r in rows):
        return True
    s = _column(rows, std_key, source)
    bern = float(np.mean(np.sqrt(m * (1 - m))))
    if bern == 0.0:
        return bool(np.all(s == 0))
    return abs(float(np.mean(s)) / bern - 1) <= BINARY_STD_TOLERANCE


def _constant(rows: list[dict], std_key: str | None, source: str) -> bool:
    """Whether a reward function's logged batch std is 0 in every row (then no group varies
    in it, and it cannot be the correctness reward whose groups are read)."""
    return (std_key is not None and all(r.get(std_key) is not None for r in rows)
            and not _column(rows, std_key, source).any())


def _pick_reward(rows: list[dict], reward_key: str | None, source: str,
                 assumptions: list[str], warns: list[str]) -> str:
    """The key of the 0/1 correctness reward in TRL log rows (bare keys), or an AdviseError
    naming the reward keys the log has. Adds what it assumed to ``assumptions`` and what
    the reader must know about the zero-std fraction to ``warns``."""
    keys = set().union(*rows)
    funcs = _reward_functions(keys)
    found = sorted(["reward"] * ("reward" in keys) + [mk for mk, _ in funcs.values()])
    found_text = ", ".join(found) if found else "none"
    chosen = None
    if reward_key is not None:
        want = _bare(reward_key) or reward_key
        for name, (mean_key, _) in funcs.items():
            if want in (name, mean_key, f"rewards/{name}"):
                chosen = name
        if chosen is None and want == "reward" and "reward" in keys:
            chosen = "reward"
        if chosen is None:
            raise AdviseError(f"{source}: no reward {reward_key!r} in the log; reward keys "
                              f"found: {found_text}")
    elif not funcs:
        if "reward" not in keys:
            raise AdviseError(f"{source}: no reward is logged (reward keys found: none), so "
                              "the pass rates cannot be told from frac_reward_zero_std alone; "
                              "log the 0/1 correctness reward or run a census")
        chosen = "reward"
        assumptions.append("one reward is logged, 'reward', with no per-function keys: taken "
                           "to be the 0/1 correctness reward (pass --reward-key if it is not)")
    else:
        binary = [n for n, (mk, sk) in funcs.items() if _looks_binary(rows, mk, sk, source)
                  and not _constant(rows, sk, source)]
        if len(binary) != 1:
            raise AdviseError(
                f"{source}: {len(funcs)} reward function(s) logged and "
                f"{len(binary) or 'none'} of them look 0/1-valued: name the correctness reward "
                f"with --reward-key (reward keys found: {found_text})")
        chosen = binary[0]
        _, std_key = funcs[chosen]
        how = ("its mean lies in [0, 1] and its batch std is sqrt(m(1-m))" if std_key
               else "its mean lies in [0, 1] (no std logged to check more)")
        assumptions.append(f"the correctness reward is rewards/{chosen}/mean, the only "
                           f"0/1-valued reward function of the {len(funcs)} logged ({how}); "
                           "pass --reward-key to choose another")
    if chosen == "reward":
        if len(funcs) > 1:
            warns.append(f"'reward' is the weighted sum of {len(funcs)} reward functions "
                         f"({', '.join(funcs)}), not a pass rate: name the correctness one "
                         "with --reward-key")
        return "reward"
    mean_key, std_key = funcs[chosen]
    if not _looks_binary(rows, mean_key, std_key, source):
        raise AdviseError(f"{source}: the reward {mean_key} is not a 0/1 pass rate (its mean "
                          "leaves [0, 1] or its std is not sqrt(m(1-m))); reward keys found: "
                          f"{found_text}")
    others = [n for n in funcs if n != chosen]
    if others:
        other_std = [funcs[n][1] for n in others]
        constant = all(_constant(rows, k, source) for k in other_std)
        if constant:
            assumptions.append(f"the other reward function(s) ({', '.join(others)}) had std 0 "
                               "in every step used, so the summed reward's zero-std fraction is "
                               f"the all-pass-or-all-fail fraction of {chosen}")
        else:
            warns.append(f"frac_reward_zero_std is computed on the summed reward ({chosen} + "
                         f"{' + '.join(others)}), not on {chosen}: a group that is all-pass or "
                         f"all-fail on {chosen} but varies in another reward is not counted, so "
                         f"the logged fraction is a lower bound on {chosen}'s zero-variance "
                         "fraction, and the numbers below, which use it, understate it")
    return mean_key


def _log_records(records: list, source: str, num_generations: int | None,
                 reward_key: str | None = None) -> Difficulty:
    """Difficulty model from TRL log records (dicts with frac_reward_zero_std): the
    correctness reward's mean and the zero-std fraction of the last :data:`LOG_WINDOW`
    logged steps, turned into a Beta population (:func:`back_out_beta`).

    Derived in: book/capstone/01-choosing-g.md, "When all you have is a training log"."""
    records = [{_bare(k): v for k, v in r.items() if _bare(k)} if isinstance(r, dict) else r
               for r in records]
    rows = [r for r in records if isinstance(r, dict) and r.get(ZERO_STD_KEY) is not None]
    if not rows:
        raise AdviseError(f"{source}: no logged step has frac_reward_zero_std (TRL's "
                          "GRPOTrainer logs it at every logging step; a log without it cannot "
                          "say how many groups had zero variance)")
    G = num_generations
    if G is None:
        values = [r["num_generations"] for r in rows if r.get("num_generations") is not None]
        bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))),
                   None)
        if bad is not None:
            raise AdviseError(f"{source}: num_generations must be an integer, got {bad!r}")
        logged = set(values)
        if len(logged) == 1:
            G = logged.pop()
    if G is None:
        raise AdviseError(f"{source}: a TRL log does not record num_generations; pass "
                          "--num-generations (the G the run used)")
    if (isinstance(G, bool) or not isinstance(G, (int, float)) or not math.isfinite(G)
            or G != int(G) or not 2 <= G <= MAX_GROUP_SIZE):
        raise AdviseError(f"num_generations must be an integer in [2, {MAX_GROUP_SIZE}], got "
                          f"{G!r}")
    G = int(G)
    window = rows[-LOG_WINDOW:]
    z_all = _column(window, ZERO_STD_KEY, source)
    if ((z_all < 0) | (z_all > 1)).any():
        raise AdviseError(f"{source}: frac_reward_zero_std must lie in [0, 1]")
    z = float(z_all.mean())
    assumptions = [f"averaged the last {len(window)} of {len(rows)} logged steps "
                   f"(frac_reward_zero_std = {z:.3f}) at num_generations = {G}"]
    warns: list[str] = []
    key = _pick_reward(window, reward_key, source, assumptions, warns)
    if any(r.get(key) is None for r in window):
        raise AdviseError(f"{source}: {key} is missing from some of the last {len(window)} "
                          "logged steps that have frac_reward_zero_std")
    m = float(_column(window, key, source).mean())
    if not 0.0 < m < 1.0:
        raise AdviseError(f"{source}: the mean of {key} over the last {len(window)} steps is "
                          f"{m:.4g}, not a pass rate strictly inside (0, 1); reward keys found: "
                          + ", ".join(sorted(k for k in set().union(*window)
                                             if k == "reward" or (k.startswith("rewards/")
                                                                  and not k.endswith("/std")))))
    assumptions.append("rewards are 0/1, so a zero-std group is an all-pass or all-fail group")
    if len(window) > 1 and set(np.unique(z_all)) <= {0.0, 1.0}:
        warns.append("every logged frac_reward_zero_std is 0 or 1: with scale_rewards='batch' "
                     "(or multi_objective_aggregation='normalize_then_sum') TRL computes it from "
                     "the batch std; the estimate is unreliable")
    if z >= 1.0:
        raise AdviseError(f"{source}: every group has zero variance (frac_reward_zero_std = 1); "
                          "nothing about the pass rates can be backed out")
    low = float(theory.zero_variance_probability(m, G))
    if low < z:
        a, b = back_out_beta(z, m, G)
        assumptions.append(f"prompt pass rates follow a Beta(a, b) with the logged mean "
                           f"{key} = {m:.3f} as its mean; a = {a:.4g}, b = {b:.4g} reproduce "
                           f"the zero-std fraction at G = {G}")
        return Difficulty("beta", source, a=a, b=b, assumptions=assumptions, warnings=warns)
    assumptions.append(f"the zero-std fraction is at or below {low:.3f}, the value for one "
                       f"common pass rate {m:.3f}; no spread of difficulty fits, so every "
                       "prompt is taken to have the mean pass rate (the best fit, not a default)")
    return Difficulty("point", source, p=m, assumptions=assumptions, warnings=warns)


# --------------------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------------------
def _first(d: dict, keys):
    for key in keys:
        if key in d:
            return d[key]
    return None


def _number(v, what: str, source: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise AdviseError(f"{source}: {what} must be a number, got {v!r}")
    try:
        x = float(v)
    except (ValueError, OverflowError):
        raise AdviseError(f"{source}: {what} must be a number, got {v!r}") from None
    if not math.isfinite(x):
        raise AdviseError(f"{source}: {what} must be a finite number, got {v!r}")
    return x


def _numbers(values: list, what: str, source: str) -> np.ndarray:
    """Numbers (JSON numbers, or numeric strings from a CSV) as one float array, converted
    by numpy in one call; the first value that is not a finite number is named."""
    if len(values) > MAX_PROMPTS:
        raise AdviseError(f"{source}: {len(values)} prompts; at most {MAX_PROMPTS} fit (about "
                          "1 GB of working memory): pass a sample of the prompts")
    kinds = set(map(type, values))
    arr = None
    if kinds <= {int, float, str}:
        try:
            with np.errstate(over="ignore"):
                arr = np.array(values, dtype=float)
        except (ValueError, OverflowError):
            arr = None
    if arr is None or not np.isfinite(arr).all():
        for v in values:  # the error path only: find the culprit and say what it is
            _number(v, what, source)
        raise AdviseError(f"{source}: {what} must be numbers")  # pragma: no cover
    return arr


def _from_columns(column, keys, source: str) -> Difficulty:
    """Per-prompt records: a pass-rate column, or successes and trials. ``column(key)``
    gives that column's values, one per prompt (None where a record lacks it)."""
    s_key = next((k for k in SUCCESS_KEYS if k in keys), None)
    n_key = next((k for k in TRIAL_KEYS if k in keys), None)
    d = _from_columns_unnamed(column, keys, source, s_key, n_key)
    id_key = next((k for k in PROMPT_ID_KEYS if k in keys), None)
    if id_key is not None:
        ids = column(id_key)
        if all(v is not None and str(v).strip() for v in ids):
            d.prompt_ids = [str(v).strip() for v in ids]
    return d


def _from_columns_unnamed(column, keys, source: str, s_key, n_key) -> Difficulty:
    if s_key and n_key:
        k = _numbers(column(s_key), s_key, source)
        n = _numbers(column(n_key), n_key, source)
        if (k != np.round(k)).any() or (n != np.round(n)).any():
            raise AdviseError(f"{source}: {s_key} and {n_key} must be whole numbers")
        if (n < 1).any():
            raise AdviseError(f"{source}: {n_key} must be >= 1 for every prompt")
        if (n > MAX_COUNT).any():
            raise AdviseError(f"{source}: {n_key} must be at most {MAX_COUNT:.0e} samples per "
                              "prompt")
        if (k < 0).any() or (k > n).any():
            raise AdviseError(f"{source}: {s_key} must lie between 0 and {n_key}")
        return Difficulty("counts", source, successes=k.astype(np.int64),
                          trials=n.astype(np.int64),
                          assumptions=[f"{k.size} prompts, each with its {s_key} out of "
                                       f"{n_key} (n = {int(n.min())}"
                                       + (f" to {int(n.max())})" if n.max() > n.min() else ")")])
    r_key = next((k for k in RATE_KEYS if k in keys), None)
    if r_key is None:
        raise AdviseError(f"{source}: no pass-rate column; expected one of "
                          f"{', '.join(RATE_KEYS)} or {SUCCESS_KEYS[0]} + {TRIAL_KEYS[0]}, "
                          f"got {', '.join(sorted(map(str, keys)))}")
    return _from_rates(column(r_key), source)


def _from_rows(rows: list, source: str) -> Difficulty:
    """Per-prompt records given as JSON objects."""
    if not rows:
        raise AdviseError(f"{source}: no per-prompt records")
    bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict)), None)
    if bad is not None:
        raise AdviseError(f"{source}: record {bad} is not an object, got {rows[bad]!r:.60}")
    keys = set().union(*rows)
    return _from_columns(lambda key: [r.get(key) for r in rows], keys, source)


def _from_rates(values: list, source: str) -> Difficulty:
    if not values:
        raise AdviseError(f"{source}: no pass rates")
    rates = _numbers(values, "pass rate", source)
    bad = rates[(rates < 0) | (rates > 1)]
    if bad.size:
        raise AdviseError(f"{source}: pass rates must lie in [0, 1], got {bad[0]:g}")
    return Difficulty("rates", source, rates=rates,
                      assumptions=[f"{rates.size} per-prompt pass rates, taken as exact "
                                   "(no sample counts: the plug-in p^G is used)"])


def _from_json(doc, source: str, num_generations: int | None,
               reward_key: str | None = None) -> Difficulty:
    if isinstance(doc, dict) and isinstance(doc.get("log_history"), list):  # trainer_state.json
        return _log_records(doc["log_history"], source, num_generations, reward_key)
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):  # pass_rates.json
        return _from_rows(doc["records"], source)
    if isinstance(doc, dict) and isinstance(doc.get("pass_rates"), list):
        return _from_rates(doc["pass_rates"], source)
    if isinstance(doc, dict) and _first(doc, ZERO_STD_KEYS) is not None:  # one logged step
        return _log_records([doc], source, num_generations, reward_key)
    if isinstance(doc, list) and doc and all(isinstance(r, dict) for r in doc):
        if any(_first(r, ZERO_STD_KEYS) is not None for r in doc):
            return _log_records(doc, source, num_generations, reward_key)
        return _from_rows(doc, source)
    if isinstance(doc, list):
        return _from_rates(doc, source)
    raise AdviseError(f"{source}: unrecognised JSON; expected a list of pass rates, "
                      "{\"pass_rates\": [...]}, {\"records\": [...]} or a TRL trainer_state.json")


def _split_csv(text: str) -> list[list[str]] | None:
    """The columns of a plain CSV (no quotes, every row as wide as the first), first row
    included, split in a few C-level passes; None for anything else (then
    :func:`grpolab._files.parse_csv` reads it, and refuses ragged rows and decimal commas
    with a line that says so). A census of 10⁶ prompts splits in a fraction of a second,
    where ``csv.reader`` plus a dict per row took seconds."""
    if '"' in text or "\0" in text:
        return None
    lines = [ln for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
             if ln.strip(" \t,")]
    if not lines:
        return []
    width = lines[0].count(",") + 1
    cells = ",".join(lines).split(",")
    if len(cells) != width * len(lines):  # ragged rows: parse_csv names the first one
        return None
    return [cells[j::width] for j in range(width)]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _from_csv(text: str, path: Path, source: str) -> Difficulty:
    """A difficulty model from CSV text: one pass rate per line, or a table with a header.

    Every row must be as wide as the first (a ragged row would shift cells across
    columns), and a decimal comma is refused, not split into two cells: ``0,5`` in a
    one-column file would otherwise read as a table with columns "0" and "5", or as a pass
    rate of 0 (every prompt "never solved")."""
    columns = _split_csv(text)
    if columns is None:
        try:
            rows = parse_csv(text, path, "a pass-rate CSV", remedy="")
        except CorruptFileError as exc:
            raise AdviseError(str(exc)) from None
        rows = [r for r in rows if any(c.strip() for c in r)]
        columns = [list(c) for c in zip(*rows, strict=True)]
    if not columns or not columns[0]:
        raise AdviseError(f"{source}: empty file")
    first = [c[0].strip() for c in columns]
    if len(columns) == 1:  # one column: pass rates, with or without a header
        if _is_number(first[0]):
            return _from_rates(list(map(str.strip, columns[0])), source)
    elif all(_is_number(h) for h in first):
        integers = all(h.lstrip("+-").isdigit() for h in first)
        hint = (" (a decimal comma, as in 0,5? write numbers with a decimal point: 0.5)"
                if integers and len(first) == 2 else "")
        raise AdviseError(f"{source}: the first row is numbers ({', '.join(first[:4])}), not "
                          f"a header{hint}; a table needs a header row such as "
                          f"{RATE_KEYS[0]}, or {SUCCESS_KEYS[0]},{TRIAL_KEYS[0]}")
    if len(columns[0]) < 2:
        raise AdviseError(f"{source}: a header but no data rows")
    table = {h: c for h, c in zip(first, columns, strict=True)}
    return _from_columns(lambda key: list(map(str.strip, table[key][1:])), set(first), source)


def _from_wandb_csv(text: str, path: Path, source: str, num_generations: int | None,
                    reward_key: str | None) -> Difficulty:
    """A W&B CSV export of a TRL run (``Step,train/reward,train/frac_reward_zero_std,...``,
    panel exports with ``<run> - `` prefixes and ``__MIN``/``__MAX`` columns too): one log
    record per row, by step; an empty cell is a metric not logged at that step."""
    try:
        rows = parse_csv(text, path, "a W&B CSV export", remedy="")
    except CorruptFileError as exc:
        raise AdviseError(str(exc)) from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    header = [h.strip() for h in rows[0]]
    step = next((i for i, h in enumerate(header)
                 if h in STEP_KEYS or (_bare(h) or "") in STEP_KEYS), None)
    if step is None:
        raise AdviseError(f"{source}: a W&B export needs a step column ({', '.join(STEP_KEYS)});"
                          f" got {', '.join(header)}")
    if len(rows) < 2:
        raise AdviseError(f"{source}: a header but no logged steps")
    records = []
    for line, r in enumerate(rows[1:], 2):
        if len(r) != len(header):
            raise AdviseError(f"{source}: line {line} has {len(r)} cells, the header "
                              f"{len(header)}")
        rec = {"_step": _number(r[step], header[step], f"{source}: line {line}")}
        for h, cell in zip(header, r, strict=True):
            name, cell = _bare(h), cell.strip()
            if name and cell and h != header[step]:
                rec[name] = _number(cell, h, f"{source}: line {line}")
        records.append(rec)
    records.sort(key=lambda rec: rec["_step"])
    return _log_records(records, source, num_generations, reward_key)


def load_pass_rates(path, *, num_generations: int | None = None,
                    reward_key: str | None = None) -> Difficulty:
    """Read a difficulty model from a file.

    Accepted: a CSV (a ``pass_rate`` column, or ``successes`` and ``samples``; or one
    number per line), a JSON list of pass rates, ``{"pass_rates": [...]}``, the
    ``{"records": [...]}`` census of ``labs/results/smollm2-pass-rates/pass_rates.json``,
    or a TRL log with ``frac_reward_zero_std`` (``trainer_state.json`` with ``log_history``,
    JSON lines of logged metrics, or a W&B CSV export with a step column and ``train/...``
    columns); ``reward_key`` names a log's 0/1 correctness reward (see :func:`_pick_reward`).
    A census's ``prompt_id`` column is kept for :func:`write_keep`. Bad files raise
    :class:`AdviseError`; the file is read through :func:`grpolab._files.read_text` (a
    regular file of at most :data:`MAX_INPUT_BYTES`, so ``/dev/zero`` or a FIFO is refused
    before a byte is read) and its JSON is checked for depth, integer size and finite numbers.
    """
    if not isinstance(path, (str, Path)) and not hasattr(path, "__fspath__"):
        raise AdviseError(f"path must be a file path, got {path!r:.60}")
    path = Path(path)
    source = path.name
    try:
        text = read_text(path, "a pass-rate file", max_bytes=MAX_INPUT_BYTES, remedy="")
    except FileNotFoundError:
        raise AdviseError(f"{path}: no such file") from None
    except CorruptFileError as exc:
        raise AdviseError(f"cannot read {path}: it {exc.problem}"
                          + (f"; {exc.remedy}" if exc.remedy else "")) from None
    except OSError as exc:
        raise AdviseError(f"{path}: cannot read ({exc.strerror or exc.__class__.__name__})"
                          ) from None
    if not text.strip():
        raise AdviseError(f"{source}: empty file")
    if text.lstrip()[0] in "[{":
        try:
            doc = parse_json(text, path, "a pass-rate file", remedy="")
        except JSONSyntaxError:
            pass  # perhaps JSON lines
        except CorruptFileError as exc:
            raise AdviseError(f"{source}: {exc.problem}") from None
        else:
            return _from_json(doc, source, num_generations, reward_key)
        records = []
        for i, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                records.append(parse_json(line, path, "a pass-rate file", remedy=""))
            except JSONSyntaxError:
                raise AdviseError(f"{source}: line {i} is not valid JSON") from None
            except CorruptFileError as exc:
                raise AdviseError(f"{source}: line {i}: {exc.problem}") from None
        if all(isinstance(r, dict) for r in records):
            if any(_first(r, ZERO_STD_KEYS) is not None for r in records) or any(
                    k in r for r in records for k in LOG_KEYS):
                return _log_records(records, source, num_generations, reward_key)
            return _from_rows(records, source)
        raise AdviseError(f"{source}: JSON lines must each hold one object")
    header = text.split("\n", 1)[0]
    if "frac_reward_zero_std" in header or "train/" in header or any(
            c.strip().strip('"') in ("Step", "_step") for c in header.split(",")):
        return _from_wandb_csv(text, path, source, num_generations, reward_key)
    return _from_csv(text, path, source)


# --------------------------------------------------------------------------------------
# Gradient-noise constants
# --------------------------------------------------------------------------------------
@dataclass
class NoiseConstants:
    """c₁ (across prompts), c₂ (within group, oracle baseline) and c₃ (estimating the
    baseline) of the exact minibatch model MSE = c₁/B + c₂/(BG) + c₃/(BG(G − 1))
    (:func:`grpolab.theory.minibatch_gradient_mse`, book/theory/02-baseline-variance.md).

    From :func:`fit_noise_constants` they also carry ``signal`` (the debiased ‖∇J‖² the
    constraint c₃ ≥ c₁ + ‖∇J‖² used, in the rows' units), ``points`` (rows fitted),
    ``max_rel_residual`` and ``notes`` (what a reader of G* must know about the fit).
    """

    c1: float
    c2: float
    c3: float
    source: str = "given"
    signal: float | None = None
    points: int | None = None
    max_rel_residual: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def g_star(self) -> float:
        """The exact model's fixed-budget optimum, 1 + √(c₃/c₁)."""
        return float(theory.optimal_group_size(self.c1, self.c3))


#: Keys of one gradient-noise row (what ``grpolab.labs.sweep.sweep`` writes per (B, G)).
NOISE_ROW_KEYS = ("prompts_per_step", "G", "trace_variance", "mean_gradient_norm_sq")


def _noise_row(r, i: int, source: str, debias: bool) -> tuple[float, float, float, float]:
    """(B, G, trace variance, debiased signal) of row ``i``, or an AdviseError naming it."""
    where = f"{source}: gradient-noise row {i}"
    if not isinstance(r, dict):
        raise AdviseError(f"{where} must be an object with {', '.join(NOISE_ROW_KEYS)}")
    missing = [k for k in NOISE_ROW_KEYS + (("batches",) if debias else ()) if r.get(k) is None]
    if missing:
        raise AdviseError(f"{where} has no {', '.join(missing)}"
                          + (" (pass debias=False if its signal is already debiased)"
                             if missing == ["batches"] else ""))
    B, G, tv, m = (_number(r[k], k, where) for k in NOISE_ROW_KEYS)
    if B < 1 or B != round(B):
        raise AdviseError(f"{where}: prompts_per_step must be a whole number >= 1, got {B:g}")
    if G < 2 or G != round(G):
        raise AdviseError(f"{where}: G must be a whole number >= 2 (a group of one has no "
                          f"baseline), got {G:g}")
    if tv <= 0:
        raise AdviseError(f"{where}: trace_variance must be > 0, got {tv:g}")
    if debias:
        n = _number(r["batches"], "batches", where)
        if n < 2 or n != round(n):
            raise AdviseError(f"{where}: batches must be a whole number >= 2, got {n:g}")
        # E‖ḡ‖² = ‖E g‖² + tr Var / n: the mean of n batch gradients carries their noise
        m -= tv / n
    return B, G, tv, m


def leave_one_out_units(G, advantage_baseline: str):
    """The factor that puts one gradient-noise row measured with ``advantage_baseline`` in
    the leave-one-out units the exact model is derived in: 1 for ``"leave_one_out"``,
    (G/(G − 1))² for ``"mean"``. For every batch r_i − r̄ = ((G − 1)/G)(r_i − r̄₋ᵢ), so the
    mean-baseline gradient is exactly (G − 1)/G times the leave-one-out one and its variance
    and squared mean carry ((G − 1)/G)², a factor that runs from 0.25 at G = 2 to 0.94 at
    G = 32: not a constant across a fit's rows.

    Derived in: book/theory/02-baseline-variance.md ("the mean baseline is (G − 1)/G times
    the leave-one-out one"); the F1 finding of the referee report, book/labs/05.
    """
    G = as_group_size(G, "G", minimum=2).astype(float)
    if isinstance(advantage_baseline, str) and advantage_baseline == "leave_one_out":
        return np.ones_like(G)
    if isinstance(advantage_baseline, str) and advantage_baseline == "mean":
        return (G / (G - 1.0)) ** 2
    raise AdviseError(f"advantage_baseline must be 'mean' or 'leave_one_out', got "
                      f"{advantage_baseline!r}: the exact noise model describes no other")


def fit_noise_constants(rows: list[dict], source: str = "fit", *,
                        debias: bool = True,
                        advantage_baseline: str = "leave_one_out") -> NoiseConstants:
    """Fit the exact model MSE = c₁/B + c₂/(BG) + c₃/(BG(G − 1)) to measured gradient noise,
    under the constraint the model itself implies, c₃ ≥ c₁ + ‖∇J‖².

    Input: one row per (B, G) with ``prompts_per_step`` (B), ``G`` (≥ 2),
    ``trace_variance`` (E‖g − ḡ‖², the total variance of one batch's gradient) and
    ``mean_gradient_norm_sq`` (‖ḡ‖², the squared norm of the mean of the ``batches``
    batch gradients), the rows ``grpolab.labs.sweep.sweep`` writes to ``gradient_noise.json``.
    With ``debias=True`` each row also needs ``batches`` (n) and its signal is debiased,
    ‖ḡ‖² − trace_variance/n (E‖ḡ‖² = ‖∇J‖² + tr Var/n); with ``debias=False``
    ``mean_gradient_norm_sq`` is taken as an unbiased estimate of ‖∇J‖² already.

    The fit:

    1. ‖∇J‖² is one number for an estimator whose mean does not depend on (B, G), the
       estimator the model describes (no std division, a G-independent loss normaliser).
       It is the mean of the rows' debiased signals, each weighted by the inverse square
       of its noise floor trace_variance/n, and floored at 0 (then the constraint is c₃ ≥ c₁).
    2. With c₃ = c₁ + ‖∇J‖² + d, the model is linear in (c₁, c₂, d) ≥ 0; non-negative least
       squares on the relative residuals (model − trace_variance)/trace_variance, since a
       variance estimated from n batches has an error proportional to its size.

    The constants are in the rows' units; divide by ``signal`` for noise-to-signal units
    (then c₃ ≥ c₁ + 1). The exact model's optimum, 1 + √(c₃/c₁), exceeds 2 by construction.
    ``notes`` says when the signal is not resolved, when the constraint binds, and when the
    model fits badly (the estimator is then probably not the one it describes).

    **Units.** The model is derived for the leave-one-out baseline. Rows measured with the
    group-mean baseline (``advantage_baseline="mean"``, GRPO's; a row's own
    ``advantage_baseline`` key overrides the argument) are first converted, trace variance
    and signal alike, by (G/(G − 1))² (:func:`leave_one_out_units`); the fitted constants,
    ``signal`` and G* are then in leave-one-out units. Fitting raw mean-baseline rows would
    pool signals that differ by ((G − 1)/G)² (×3.75 from G = 2 to 32) and suppress the
    small-G variance, which makes the constraint bind and G* collapse toward 2.

    Derived in: book/theory/02-baseline-variance.md, "Fitting the constants".
    """
    if not isinstance(rows, list):
        raise AdviseError(f"{source}: gradient-noise rows must be a list, got "
                          f"{type(rows).__name__}")
    data = np.array([_noise_row(r, i, source, debias) for i, r in enumerate(rows)],
                    dtype=float).reshape(-1, 4)
    if len({(b, g) for b, g in data[:, :2]}) < 3:
        raise AdviseError(f"{source}: need gradient noise at >= 3 distinct (B, G) points to "
                          f"fit c1, c2, c3, got {len(data)} rows")
    B, G, tv, s = data.T
    baselines = [r.get("advantage_baseline", advantage_baseline) for r in rows]
    units = np.array([float(leave_one_out_units(g, b)) for g, b in zip(G, baselines,
                                                                        strict=True)])
    tv, s = tv * units, s * units  # leave-one-out units, the model's own
    floor = tv / np.array([float(r["batches"]) for r in rows]) if debias else tv
    w = 1.0 / floor ** 2
    signal = float(np.sum(w * s) / np.sum(w))
    notes = []
    if signal <= 0:
        notes.append(f"the debiased signal |grad J|^2 is not resolved ({signal:.3g} <= 0): "
                     "the constraint uses c3 >= c1 only; measure more batches per point")
    s_plus = max(signal, 0.0)
    last = 1.0 / (B * G * (G - 1))
    features = np.column_stack([1.0 / B + last, 1.0 / (B * G), last])
    (c1, c2, d), _ = optimize.nnls(features / tv[:, None], 1.0 - s_plus * last / tv)
    c1, c2, c3 = float(c1), float(c2), float(c1 + s_plus + d)
    if c1 <= 0:
        raise AdviseError(f"{source}: the fitted c1 is 0 (the noise does not level off as B "
                          "grows), so G* is unbounded; measure more (B, G) points")
    pred = c1 / B + c2 / (B * G) + c3 * last
    resid = float(np.max(np.abs(pred / tv - 1)))
    if d == 0 and s_plus > 0:
        notes.append("the constraint c3 >= c1 + |grad J|^2 binds: the data alone would put "
                     "c3 lower")
    if resid > 0.25:
        notes.append(f"the model misses a row by {resid:.0%}: is the estimator the one it "
                     "describes (no std division, a G-independent loss normaliser)?")
    if any(b == "mean" for b in baselines):
        notes.append("mean-baseline rows converted to leave-one-out units by (G/(G-1))^2")
    return NoiseConstants(c1, c2, c3, source, signal=signal, points=len(data),
                          max_rel_residual=resid, notes=notes)


def load_noise(spec: str, regime: str | None = None) -> NoiseConstants:
    """``c1,c2,c3``; a JSON file ``{"c1": .., "c2": .., "c3": ..}``; or a sweep's
    ``gradient_noise.json`` (fitted with :func:`fit_noise_constants`; pick ``regime``)."""
    if not isinstance(spec, str) or not spec:
        raise AdviseError(f"--noise must be c1,c2,c3 or a file, got {spec!r}")
    parts = spec.split(",")
    if len(parts) == 3 and not Path(spec).exists():
        try:
            c = [float(x) for x in parts]
        except ValueError:
            raise AdviseError(f"--noise {spec!r}: expected three numbers c1,c2,c3") from None
        return _checked_noise(NoiseConstants(*c, source="--noise"))
    path = Path(spec)
    if not path.is_file():
        raise AdviseError(f"--noise {spec}: neither c1,c2,c3 nor an existing file")
    try:
        doc = read_json(path, "a JSON file of noise constants", expect=None, remedy="",
                        max_bytes=64 * 2**20)
    except CorruptFileError as exc:
        raise AdviseError(f"{path.name}: not a JSON file of noise constants ({exc.problem})"
                          ) from None
    except OSError as exc:
        raise AdviseError(f"{path.name}: cannot read ({exc.strerror})") from None
    if isinstance(doc, dict) and {"c1", "c2", "c3"} <= set(doc):
        c = [_number(doc[k], k, path.name) for k in ("c1", "c2", "c3")]
        return _checked_noise(NoiseConstants(*c, source=path.name))
    if isinstance(doc, dict) and all(isinstance(v, list) for v in doc.values()) and doc:
        if regime is None:
            if len(doc) > 1:
                raise AdviseError(f"{path.name} holds regimes {', '.join(doc)}: choose one "
                                  "with --noise-regime")
            regime = next(iter(doc))
        if regime not in doc:
            raise AdviseError(f"{path.name}: no regime {regime!r} (have {', '.join(doc)})")
        return _checked_noise(fit_noise_constants(
            doc[regime], f"{path.name}[{regime}]",
            advantage_baseline=_sweep_baseline(path, regime)))
    if isinstance(doc, list):
        return _checked_noise(fit_noise_constants(doc, path.name))
    raise AdviseError(f"{path.name}: expected c1/c2/c3 or gradient-noise rows")


def _sweep_baseline(path: Path, regime: str) -> str:
    """The advantage baseline a sweep's gradient-noise rows were measured with, from the
    ``sweep.json`` beside them (the preset's config and the regime's overrides): rows
    without their own ``advantage_baseline`` key (sweeps before it was recorded) are then
    fitted in the right units. Without a readable ``sweep.json``: leave-one-out, the units
    the model is derived in."""
    meta_path = path.with_name("sweep.json")
    if not meta_path.is_file():
        return "leave_one_out"
    try:
        preset = read_json(meta_path, "the sweep's record", remedy="").get("preset", {})
        baseline = preset.get("config", {}).get("advantage_baseline", "mean")
        for r in preset.get("regimes", []):
            if isinstance(r, dict) and r.get("name") == regime:
                baseline = (r.get("overrides") or {}).get("advantage_baseline", baseline)
    except (CorruptFileError, OSError, AttributeError):
        return "leave_one_out"
    return baseline if baseline in ("mean", "leave_one_out") else "leave_one_out"


def _checked_noise(c: NoiseConstants) -> NoiseConstants:
    for name in ("c1", "c2", "c3"):
        v = getattr(c, name)
        if not (math.isfinite(v) and v >= 0):
            raise AdviseError(f"noise constant {name} must be a non-negative number, got {v!r}")
    if c.c1 == 0:
        raise AdviseError("noise constant c1 must be > 0 (with no across-prompt variance "
                          "G* is unbounded)")
    return c


# --------------------------------------------------------------------------------------
# Remedies
# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------
# The advice
# --------------------------------------------------------------------------------------
@dataclass
class Advice:
    """Everything ``grpolab advise`` prints; ``to_dict()`` is its ``--json`` output."""

    source: str
    kind: str
    assumptions: list[str]
    budget: int
    max_G: int
    prompts: int | None
    mean_pass_rate: float
    rows: list[dict]
    remedies: list[dict]
    recommendation: list[dict]
    noise: dict | None = None
    warnings: list[str] = field(default_factory=list)
    total_completions: int | None = None
    #: the TRL GRPOConfig for the recommended G (:func:`trl_config`), or {"error": ...}
    config: dict | None = None
    #: --allocation: what each per-prompt split spends where (allocation.allocation_by_bin),
    #: or {"error": ...} when the pool has no per-prompt pass rates
    allocation: dict | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def candidate_group_sizes(max_G: int, budget: int) -> list[int]:
    """Powers of two from 2 up to max_G (and max_G itself), with at least one prompt per step.

    Both are integers ≥ 2 (max_G ≤ :data:`~grpolab._validate.MAX_GROUP_SIZE`, budget ≤
    :data:`MAX_BUDGET`), so the list is never empty."""
    max_G = as_positive_int(max_G, "max_G", minimum=2, maximum=MAX_GROUP_SIZE)
    budget = as_positive_int(budget, "budget", minimum=2, maximum=MAX_BUDGET)
    top = min(max_G, budget)
    Gs = [2 ** i for i in range(1, 32) if 2 ** i <= top]
    if top not in Gs:
        Gs.append(top)
    return Gs


def _row(d: Difficulty, filt: Difficulty | None, G: int, budget: int,
         noise: NoiseConstants | None) -> dict:
    B = int(theory.fixed_budget_prompts(budget, G))
    zero_var = d.zero_variance_fraction(G)
    live = 1.0 - zero_var
    row = {
        "G": G, "prompts_per_step": B, "method": d.method(G),
        "zero_variance_fraction": zero_var, "informative_prompts_per_step": B * live,
        "completions_per_informative_group": G / live if live > 0 else math.inf,
        "dynamic_sampling_completions_per_step": B * G / live if live > 0 else math.inf,
        "gradient_variance_inflation": float(theory.gradient_variance_inflation(G)),
        "zero_variance_fraction_filtered": filt.zero_variance_fraction(G) if filt else None,
        "gradient_mse": None,
    }
    if filt:
        row["informative_prompts_per_step_filtered"] = (
            B * (1 - row["zero_variance_fraction_filtered"]))
    if noise:
        row["gradient_mse"] = float(theory.minibatch_gradient_mse(max(B, 1), G, noise.c1,
                                                                  noise.c2, noise.c3))
    return row


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


def _count(x, name: str, flag: str, lo: int, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not lo <= x <= hi:
        raise AdviseError(f"{name} ({flag}) must be an integer in [{lo}, {hi:.3g}], got "
                          f"{x!r:.60}")
    return int(x)


def _informative(d: Difficulty, G: int, budget: int) -> float:
    """The objective of :func:`_choose_group_size`: expected informative prompts per step at a
    fixed budget of ``budget`` completions per step, ⌊N/G⌋ · (1 − E[p^G + (1 − p)^G]).

    Derived in: book/theory/04-cost-of-g.md, "A fixed budget: prompts × G"."""
    return float(theory.fixed_budget_prompts(budget, G)) * (1.0 - d.zero_variance_fraction(G))


def _mse_argmin(noise: NoiseConstants, budget: int, max_G: int) -> int:
    """The integer G in [2, min(max_G, N)] minimising the exact fixed-budget gradient MSE
    c₁/B + c₂/(BG) + c₃/(BG(G − 1)) at B = ⌊N/G⌋ (book/theory/02-baseline-variance.md)."""
    mse = {G: float(theory.minibatch_gradient_mse(max(budget // G, 1), G, noise.c1, noise.c2,
                                                  noise.c3))
           for G in range(2, min(max_G, budget) + 1)}
    return min(mse, key=mse.get)


def _choose_group_size(d: Difficulty, budget: int, max_G: int = DEFAULT_MAX_G, *,
                      noise: NoiseConstants | None = None,
                      total_completions: int | None = None,
                      pool_size: int | None = None) -> tuple[int, str]:
    """The G to train with on pool ``d`` at a fixed budget of ``budget`` completions per
    step, and its reason (one line, naming the compute it holds fixed).

    The objective (book/theory/04-cost-of-g.md, 11-pass-at-k.md, capstone):

    1. Without noise constants: the candidate G (powers of two, :func:`candidate_group_sizes`)
       with the most expected informative prompts per step,
       I(G) = ⌊N/G⌋ · (1 − E[p^G + (1 − p)^G]) (:func:`_informative`); of
       the Gs within :data:`G_TIE` of that maximum the largest is taken, since a larger
       group has a better baseline (variance factor G/(G − 1)) and a larger chance
       1 − (1 − p)^G of a success on a hard prompt. When that G lies above TRL's default
       and has fewer informative prompts than it, the pool is *coverage-limited* (most
       zero-variance groups are prompts with pG ≪ 1, where I(G) is nearly flat in G).
       Above :data:`START_G` a step must keep :data:`MIN_PROMPTS` prompts.
    2. With noise constants: the integer G minimising the exact fixed-budget gradient MSE
       c₁/B + c₂/(BG) + c₃/(BG(G − 1)), B = ⌊N/G⌋ (optimum 1 + √(c₃/c₁)).
    3. With the total compute C (completions over the run) and the pool size M: a run at G
       trains on C/G prompt visits, C/(G·M) passes over the pool. IsoCompute
       (arXiv 2603.12151) finds that the compute-optimal G grows with C, then saturates;
       advise applies it as a floor: the smallest G that passes over the pool at most
       :data:`MAX_PASSES` time(s), since past that point a smaller G buys repeat visits,
       not new prompts.

    Whenever the result has fewer expected informative prompts per step than TRL's default
    (G = :data:`START_G`) at the same budget, the reason says why (noise constants, the
    known compute budget, a coverage-limited pool).
    """
    Gs = candidate_group_sizes(max_G, budget)
    ref = max(G for G in Gs if G <= START_G)
    held = f"at a fixed budget of N = {budget} completions per step"
    inf = {G: _informative(d, G, budget) for G in Gs}
    allowed = [G for G in Gs if G <= ref or theory.fixed_budget_prompts(budget, G) >= MIN_PROMPTS]
    best = max(allowed, key=lambda G: (inf[G], -G))
    basis = None
    if noise is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", theory.GroupSizeWarning)
            g_real = noise.g_star
            g_paper = float(theory.optimal_group_size(noise.c1, noise.c3, form="paper"))
        top = min(max_G, budget)
        G0 = _mse_argmin(noise, budget, max_G)
        why = (f"G* = 1 + sqrt(c3/c1) = {g_real:.2f} minimises the exact gradient MSE "
               f"c1/B + c2/(BG) + c3/(BG(G-1)) {held} (N = BG), where "
               f"N*MSE = c1 G + c2 + c3/(G-1) (book ch. 02; the paper's c3/(BG^2) form, "
               f"arXiv 2603.01162 Thm. 7, gives its leading order sqrt(c3/c1) = {g_paper:.2f});"
               f" the best integer in [2, {top}] at B = N // G is {G0} (noise constants: "
               f"{noise.source})")
        if noise.c3 < noise.c1:
            why += ("; WARNING: c3 < c1 contradicts the model, which implies c3 >= c1 + "
                    "|grad J|^2: the constants are misspecified, not a small optimum")
        why += "".join(f"; {n}" for n in noise.notes)
        basis = "the noise constants (the gradient MSE, not the informative count, decides)"
        if G0 not in inf:
            inf[G0] = _informative(d, G0, budget)
    elif inf[best] <= 0:
        G0 = ref
        why = (f"no G gives an informative group on this pool {held} (every prompt always or "
               f"never solved): change the prompts, not G; TRL's default G = {ref} until then")
    else:
        tied = [G for G in allowed if inf[G] >= (1 - G_TIE) * inf[best]]
        G0 = max(tied)
        why = (f"maximises the expected informative prompts per step {held}, "
               f"floor(N/G) * (1 - E[p^G + (1-p)^G]) = {inf[best]:.1f} at G = {best}")
        if G0 != best:
            why += (f"; G = {G0} keeps {inf[G0]:.1f}, within {G_TIE:.0%} of it, and the largest "
                    f"G within {G_TIE:.0%} is taken: a better baseline (gradient-variance "
                    f"factor G/(G-1) = {G0 / (G0 - 1):.2f} against {best / (best - 1):.2f}) and "
                    "a larger chance 1 - (1-p)^G of a success on each hard prompt")
        if inf[G0] < inf[ref]:
            basis = ("a coverage-limited pool (I(G) is nearly flat in G: the zero-variance "
                     "groups are mostly hard prompts with pG << 1, ch. 11)")
    if total_completions is not None:
        M = pool_size if pool_size is not None else d.prompts
        if M is None:
            raise AdviseError("--total-completions with a TRL log needs --pool-size (the "
                              "number of training prompts): a log does not say how many")
        passes = {G: total_completions / (G * M) for G in allowed}
        floor_G = min((G for G in allowed if passes[G] <= MAX_PASSES), default=max(allowed))
        compute = (f"known total compute C = {total_completions} completions over M = {M} "
                   f"prompts: C/(G*M) = {total_completions / (G0 * M):.3g} passes over the pool "
                   f"at G = {G0}; IsoCompute (arXiv 2603.12151: the compute-optimal G grows with "
                   f"C, then saturates) is applied as a floor, the smallest G with at most "
                   f"{MAX_PASSES} pass(es), G = {floor_G}")
        if floor_G > G0:
            why += f"; {compute}: G raised to {floor_G}"
            G0 = floor_G
            basis = "a known compute budget (IsoCompute's floor)"
        else:
            why += f"; {compute}: no change"
    if inf[G0] < inf[ref]:
        if basis is None:  # pragma: no cover - every branch that can get here names one
            raise AssertionError("_choose_group_size lowered the informative count unexplained")
        why += (f"; this G has fewer expected informative prompts per step than TRL's default "
                f"G = {ref} ({inf[G0]:.1f} against {inf[ref]:.1f} {held}) because of {basis}")
    return G0, why


def trl_config(G: int, budget: int, *, processes: int = 1,
               per_device_batch: int = TRL_PER_DEVICE_BATCH) -> dict:
    """A TRL ``GRPOConfig`` (trl 1.x names) for G and a budget of completions per optimizer
    step, on ``processes`` processes with at most ``per_device_batch`` completions per
    device per forward/backward pass, and the verl equivalents.

    TRL counts completions in ``per_device_train_batch_size``: an optimizer step takes
    per_device_train_batch_size × processes × gradient_accumulation_steps completions, and
    one generation batch of ``generation_batch_size`` = per_device_train_batch_size ×
    processes × ``steps_per_generation`` completions must hold whole groups
    (divisible by num_generations, checked in ``GRPOConfig.__post_init__``). Here
    steps_per_generation = gradient_accumulation_steps, so each optimizer step gets one
    fresh generation (on-policy with num_iterations = 1). Returns a dict with the sizes,
    ``fields`` (field, value, reason), ``verl`` (key, value, comment) and ``notes``; or
    raises AdviseError when no split exists.

    Derived in: book/theory/04-cost-of-g.md (the fixed budget); TRL's arithmetic in
    trl/trainer/grpo_config.py (``GRPOConfig.__post_init__``).
    """
    G = _count(G, "G", "--num-generations", 2, MAX_GROUP_SIZE)
    budget = _count(budget, "budget", "--budget", 2, MAX_BUDGET)
    P = _count(processes, "processes", "--processes", 1, 10**6)
    cap = _count(per_device_batch, "per_device_batch", "--per-device-batch", 1, 10**6)
    B = int(theory.fixed_budget_prompts(budget, G))
    notes = []
    B_used = next((b for b in range(B, 0, -1) if (b * G) % P == 0), None)
    if B_used is None or B_used * G < P:
        raise AdviseError(f"no TRL split: {B} prompts x G = {G} cannot be shared by "
                          f"--processes {P}; raise --budget to a multiple of {P * G}")
    if B_used != B:
        notes.append(f"prompts per step lowered from {B} to {B_used} so that the "
                     f"{B_used * G} completions divide over {P} processes")
    N = B_used * G
    per_process = N // P
    divisors = [c for c in range(min(cap, per_process), 0, -1) if per_process % c == 0]
    whole = [c for c in divisors if (c * P) % G == 0]  # micro-batches of whole groups
    pdb = whole[0] if whole and whole[0] * 2 > divisors[0] else divisors[0]
    gas = per_process // pdb
    fields = [
        ("num_generations", G, "G, the recommendation above"),
        ("per_device_train_batch_size", pdb,
         f"COMPLETIONS (not prompts) per device per forward/backward pass, at most "
         f"--per-device-batch {cap} (memory)"),
        ("gradient_accumulation_steps", gas,
         f"{pdb} x {P} process(es) x {gas} = {N} completions = {B_used} prompts x G per "
         "optimizer step (the budget)"),
        ("steps_per_generation", gas,
         f"one generation of {N} completions per optimizer step (TRL derives "
         f"generation_batch_size = {N}, divisible by G); set generation_batch_size instead, "
         "never both"),
        ("num_iterations", 1, "one update per generation: on-policy; more reuse each "
         "completion off-policy and clip more (ch. 10)"),
        ("temperature", 1.0, "TRL's default, R1-Zero's and Dr. GRPO's: a lower T makes groups "
         "more alike and raises the zero-variance fraction (ch. 07)"),
        ("scale_rewards", "none", "Dr. GRPO: dividing by the group std reweights prompts by "
         "difficulty by a factor that moves with G (ch. 06); 'batch' also makes "
         "frac_reward_zero_std read 0 or 1"),
        ("loss_type", "dapo", "TRL's default: tokens averaged over the whole batch, no "
         "per-sequence length bias (ch. 09)"),
        ("mask_truncated_completions", True, "a completion cut at max_completion_length is "
         "not a wrong answer: leave it out of the loss (DAPO's overlong filtering)"),
        ("beta", 0.0, "TRL's default: no reference model (saves its memory); KL is logged "
         "only when beta > 0 (ch. 12)"),
        ("num_generations_eval", 1, "evaluation samples num_generations per prompt unless "
         "told: 1 sample on more held-out prompts estimates pass@1 more cheaply"),
    ]
    if pdb * P % G:
        notes.append(f"a micro-batch of {pdb} x {P} completions splits groups of {G} across "
                     "passes: TRL 1.x checks only generation_batch_size % num_generations; "
                     "older TRL releases wanted per_device_train_batch_size x processes "
                     "divisible by num_generations")
    verl = [
        ("data.train_batch_size", B_used, "prompts per step"),
        ("actor_rollout_ref.rollout.n", G, "G"),
        ("actor_rollout_ref.actor.ppo_mini_batch_size", B_used,
         "counted in PROMPTS (verl multiplies by n); = train_batch_size: one update per "
         "generation"),
        ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", pdb, "completions per GPU "
         "per pass (memory)"),
        ("algorithm.filter_groups.enable", True, "optional: verl's dynamic sampling (DAPO "
         "recipe), capped by algorithm.filter_groups.max_num_gen_batches; TRL has none"),
    ]
    return {"num_generations": G, "prompts_per_step": B_used, "completions_per_step": N,
            "processes": P, "per_device_batch_limit": cap,
            "per_device_train_batch_size": pdb, "gradient_accumulation_steps": gas,
            "steps_per_generation": gas, "generation_batch_size": N,
            "fields": [{"field": f, "value": v, "reason": r} for f, v, r in fields],
            "verl": [{"key": k, "value": v, "comment": c} for k, v, c in verl],
            "notes": notes}


#: First line of a file ``--keep`` writes; ``write_keep`` overwrites only files that start so.
KEEP_HEADER = "# grpolab advise --keep: ids of the prompts to keep (0 < successes < samples)"


def write_keep(d: Difficulty, path) -> int:
    """Write the ids of the prompts that were neither always nor never solved (the prompts
    that filtering keeps, book/capstone/01-choosing-g.md) to ``path``, one per line after
    :data:`KEEP_HEADER`; return how many. Needs a census with a ``prompt_id`` column
    (:data:`PROMPT_ID_KEYS`). An existing file is replaced only if this function wrote it
    (it starts with :data:`KEEP_HEADER`); the write is atomic (a temporary file, renamed).
    """
    if not isinstance(d, Difficulty) or d.kind not in ("counts", "rates") or d.prompt_ids is None:
        raise AdviseError("--keep needs a census with per-prompt pass rates and a prompt id "
                          f"column ({', '.join(PROMPT_ID_KEYS)}); {getattr(d, 'source', d)!s:.60} "
                          "has none")
    path = check_keep_target(path)
    keep = ((d.successes > 0) & (d.successes < d.trials) if d.kind == "counts"
            else (d.rates > 0) & (d.rates < 1))
    ids = [i for i, k in zip(d.prompt_ids, keep.tolist(), strict=True) if k]
    try:
        write_atomic(path, "\n".join([KEEP_HEADER, *ids]) + "\n")
    except OSError as exc:
        raise AdviseError(f"--keep {path}: cannot write ({exc.strerror})") from None
    return len(ids)


def check_keep_target(path) -> Path:
    """Refuse a ``--keep`` path that is a folder, lies in a missing folder, or is an existing
    file this command did not write (one that does not start with :data:`KEEP_HEADER`);
    called before any work, and again by :func:`write_keep`."""
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise AdviseError(f"--keep must name a file, got {path!r:.60}")
    path = Path(path)
    if path.is_dir():
        raise AdviseError(f"--keep {path} is a folder; name a file")
    if path.exists() or path.is_symlink():
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                first = fh.readline().rstrip("\n")
        except OSError as exc:
            raise AdviseError(f"--keep {path}: cannot read the existing file "
                              f"({exc.strerror})") from None
        if first != KEEP_HEADER:
            raise AdviseError(f"--keep {path} exists and was not written by grpolab advise "
                              "--keep: refusing to overwrite it; name a new file")
    if not path.parent.is_dir():
        raise AdviseError(f"--keep {path}: the folder {path.parent} does not exist")
    return path


def advise(d: Difficulty, *, budget: int = DEFAULT_BUDGET, max_G: int = DEFAULT_MAX_G,
           noise: NoiseConstants | None = None, total_completions: int | None = None,
           pool_size: int | None = None, processes: int = 1,
           per_device_batch: int = TRL_PER_DEVICE_BATCH,
           allocation_rules: list[str] | None = None) -> Advice:
    """Evaluate every candidate G at ``budget`` completions per step and recommend one.

    The decision procedure of book/capstone/01-choosing-g.md:
    1. zero-variance fraction and informative prompts per step at each G (the table);
    2. filtering first, when dropping never/always-solved prompts adds >= MIN_GAIN
       informative groups per completion and leaves a full step of prompts;
    3. the G (:func:`_choose_group_size`: the most expected informative prompts per step at
       the fixed budget; the exact gradient MSE with noise constants; IsoCompute's floor
       with a known total compute), on the pool as given (so a census and the TRL log it
       implies give the same G) and, when filtering is advised, on the filtered pool;
    4. adaptive G when it adds >= MIN_GAIN informative groups per completion at that G;
       dynamic sampling when > DS_ZERO_VARIANCE of groups keep zero variance, with its
       overhead, and what to do in TRL, which has none;
    5. what to monitor, and a TRL GRPOConfig (:func:`trl_config`) for the G and budget;
    6. with ``allocation_rules`` (names in :data:`grpolab.allocation.ALLOCATION_RULES`), what
       each per-prompt split of the same completions spends where
       (:func:`grpolab.allocation.allocation_by_bin`; book/theory/14-adaptive-allocation.md).
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 2:
        raise AdviseError(f"budget (--budget) must be an integer >= 2 (completions per step), "
                          f"got {budget!r:.60}")
    if isinstance(max_G, bool) or not isinstance(max_G, (int, np.integer)) or max_G < 2:
        raise AdviseError(f"max_G (--max-G) must be an integer >= 2, got {max_G!r:.60}")
    if max_G > theory.MAX_GROUP_SIZE or budget > MAX_BUDGET:
        raise AdviseError(f"max_G (--max-G) must be <= {theory.MAX_GROUP_SIZE} and budget "
                          f"(--budget) <= 10**12, got --max-G {max_G}, --budget {budget}")
    if not isinstance(d, Difficulty):
        raise AdviseError(f"d must be a Difficulty (from load_pass_rates), got "
                          f"{type(d).__name__}")
    if noise is not None and not isinstance(noise, NoiseConstants):
        raise AdviseError(f"noise must be NoiseConstants (from load_noise) or None, got "
                          f"{type(noise).__name__}")
    if allocation_rules is not None and (
            isinstance(allocation_rules, str) or not isinstance(allocation_rules, (list, tuple))
            or not all(isinstance(r, str) and r in allocation.ALLOCATION_RULES
                       for r in allocation_rules)):
        raise AdviseError(f"allocation_rules (--allocation) must be a list of "
                          f"{', '.join(allocation.ALLOCATION_RULES)}, got "
                          f"{allocation_rules!r:.60}")
    budget, max_G = int(budget), int(max_G)
    if total_completions is not None:
        total_completions = _count(total_completions, "total_completions",
                                   "--total-completions", budget, MAX_TOTAL)
    if pool_size is not None:
        pool_size = _count(pool_size, "pool_size", "--pool-size", 1, MAX_TOTAL)
    processes = _count(processes, "processes", "--processes", 1, 10**6)
    per_device_batch = _count(per_device_batch, "per_device_batch", "--per-device-batch",
                              1, 10**6)
    if total_completions is not None and pool_size is None and d.prompts is None:
        raise AdviseError("--total-completions with a TRL log needs --pool-size (the number "
                          "of training prompts): a log does not say how many")
    held = f"at a fixed budget of N = {budget} completions per step"
    Gs = candidate_group_sizes(max_G, budget)
    filt = d.filtered()
    rows = [_row(d, filt, G, budget, noise) for G in Gs]
    rec: list[dict] = []

    def say(item, value, reason):
        rec.append({"item": item, "value": value, "reason": reason})

    # -- 1. filtering ----------------------------------------------------------------------
    use_filter = False
    ref_G = max(G for G in Gs if G <= START_G)  # START_G, or the largest candidate below it
    if filt is not None and d.prompts:
        kept = filt.prompts
        gain = ((1 - filt.zero_variance_fraction(ref_G))
                / max(1 - d.zero_variance_fraction(ref_G), 1e-12) - 1)
        if gain >= MIN_GAIN:
            use_filter = True
            say("filter", f"keep {kept} of {d.prompts} prompts ({kept / d.prompts:.0%})",
                f"at G = {ref_G}, {held}, dropping the never/always-solved prompts raises the "
                f"share of informative groups from {1 - d.zero_variance_fraction(ref_G):.1%} to "
                f"{1 - filt.zero_variance_fraction(ref_G):.1%} (+{gain:.0%}) at no rollout cost; "
                "--keep FILE writes their ids; check that the training set keeps enough prompts")
        else:
            say("filter", "not needed",
                f"dropping never/always-solved prompts adds only {gain:.0%} informative groups "
                f"at G = {ref_G}, {held} (threshold {MIN_GAIN:.0%})")
    elif filt is None and d.prompts:
        say("filter", "nothing left", "every prompt was always or never solved: the pool "
            "carries no signal at any G; change the prompts (or the model) first")
    else:
        say("filter", "needs per-prompt pass rates",
            "a training log gives the population, not which prompts have zero variance: run a "
            "census (grpolab lab pass-rates) to filter")
    pool = filt if use_filter else d
    pool_name = "the filtered pool" if use_filter else "the pool"

    # -- 2. the G -------------------------------------------------------------------------
    kwargs = dict(noise=noise, total_completions=total_completions, pool_size=pool_size)
    G_given, why = _choose_group_size(d, budget, max_G, **kwargs)
    say("G", G_given, why)
    G0 = G_given
    if use_filter:
        if pool_size is not None:  # the filtered pool is the census's kept prompts
            kwargs["pool_size"] = None
        G0, why_f = _choose_group_size(filt, budget, max_G, **kwargs)
        say("G after filtering", G0, f"the same rule on the {filt.prompts} kept prompts: {why_f}")
    noise_info = None
    if noise is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", theory.GroupSizeWarning)
            noise_info = {**asdict(noise), "form": "exact", "G_star": noise.g_star,
                          "G_star_paper_form": float(theory.optimal_group_size(
                              noise.c1, noise.c3, form="paper")),
                          "G_star_feasible": _mse_argmin(noise, budget, max_G)}
    r0 = _row(pool, None, G0, budget, noise)
    say("prompts per step", r0["prompts_per_step"],
        f"budget N = {budget} completions / G = {G0}; expect "
        f"{r0['informative_prompts_per_step']:.1f} informative prompts per step on {pool_name} "
        f"({r0['completions_per_informative_group']:.1f} completions per informative group)")

    # -- 3. adaptive G and dynamic sampling ---------------------------------------------
    remedies = []
    zero_var0 = pool.zero_variance_fraction(G0)
    zero_var_all = d.zero_variance_fraction(G0)
    remedies.append({"remedy": "none (fixed G)", "G": G0,
                     "informative_per_1000_completions": 1000 * (1 - zero_var_all) / G0,
                     "note": f"{zero_var_all:.1%} of groups at zero variance"})
    if filt is not None:
        fd = filt.zero_variance_fraction(G0)
        remedies.append({"remedy": "filtering", "G": G0,
                         "informative_per_1000_completions": 1000 * (1 - fd) / G0,
                         "note": f"keeps {filt.prompts} of {d.prompts} prompts; "
                                 f"{fd:.1%} zero-variance"})
    base_eff = (1 - zero_var0) / G0
    live0 = 1 - zero_var0
    remedies.append({"remedy": "dynamic sampling", "G": G0,
                     "informative_per_1000_completions": 1000 * base_eff,
                     "note": (f"on {pool_name}: full batches of informative groups for "
                              f"{1 / live0:.2f}x the completions per step" if live0 > 0
                              else "never fills a batch")})
    rates = pool.point_rates()
    adaptive_gain = None
    if rates is not None and G0 >= 2:
        Gj = adaptive_allocation(rates, G0, max_G=max(max_G, G0))
        fixed_q = float(np.sum(theory.informative_probability(rates, G0)))
        adapt_q = float(np.sum(theory.informative_probability(rates, Gj)))
        if fixed_q > 0:
            adaptive_gain = adapt_q / fixed_q - 1
        else:  # nothing informative at fixed G: adaptive G helps only if it finds something
            adaptive_gain = math.inf if adapt_q > 0 else 0.0
        est = "posterior-mean" if pool.kind == "counts" else "given"
        remedies.append({"remedy": "adaptive G", "G": f"{int(Gj.min())}-{int(Gj.max())}",
                         "informative_per_1000_completions":
                             1000 * adapt_q / float(Gj.sum()),
                         "note": f"on {pool_name}, same mean G = {G0}: {adaptive_gain:+.0%} "
                                 f"informative groups vs fixed G ({est} pass rates)"})
    if adaptive_gain is not None and adaptive_gain >= MIN_GAIN:
        say("adaptive G", "yes", f"spreading the same {G0} samples per prompt by pass rate "
            f"(2 to {max_G}), so the same completions per step, adds {adaptive_gain:.0%} "
            "informative groups (greedy allocation, cf. Knapsack RL, arXiv 2509.25849); TRL, "
            "verl and OpenRLHF use a fixed G, so it needs a custom sampler")
    elif adaptive_gain is not None:
        say("adaptive G", "no", f"it adds only {adaptive_gain:.0%} informative groups at mean "
            f"G = {G0} and the same completions per step (threshold {MIN_GAIN:.0%}): not worth "
            "a custom sampler")
    else:
        say("adaptive G", "needs per-prompt pass rates", "it allocates samples prompt by prompt")
    in_trl = ("in TRL, which has no dynamic sampling: filter the pool with a census "
              "(--keep) and rerun the census as the model learns; zero-variance groups get "
              "advantage 0 and only add tokens to the loss normaliser")
    if zero_var0 > DS_ZERO_VARIANCE and live0 > 0:
        say("dynamic sampling", "yes, capped",
            f"{zero_var0:.0%} of groups keep zero variance at G = {G0}; refilling the batch "
            f"costs {1 / live0:.2f}x the completions per step, more than N = {budget} "
            f"(G·B/q, q = {live0:.3f}); verl: algorithm.filter_groups with a cap "
            f"(max_num_gen_batches, verl#953); {in_trl}")
    elif live0 > 0:
        say("dynamic sampling", "optional",
            f"only {zero_var0:.0%} of groups have zero variance at G = {G0} (threshold "
            f"{DS_ZERO_VARIANCE:.0%}); the batch shrinks little; refilling it would cost "
            f"{1 / live0:.2f}x the N = {budget} completions per step; {in_trl}")
    else:
        say("dynamic sampling", "no", "no group is ever informative: it would never fill a batch")

    # -- 4. what to monitor -------------------------------------------------------------
    say("monitor", f"frac_reward_zero_std ≈ {zero_var0:.3f}",
        f"the predicted zero-variance fraction at G = {G0} on {pool_name}; if the observed "
        "value drifts away, pass rates have moved: rerun grpolab advise on the TRL log "
        f"(--num-generations {G0})")
    say("monitor", "held-out accuracy, completions per step (and KL when beta > 0)",
        "the task metric decides; the training loss is not a progress signal in GRPO "
        "(advantages are centred per group); TRL logs kl only when beta != 0")
    try:
        config = trl_config(G0, budget, processes=processes, per_device_batch=per_device_batch)
    except AdviseError as exc:
        config = {"error": str(exc)}
    config["for"] = ("the G after filtering" if use_filter else "the G above")
    split = None
    if allocation_rules:
        if rates is None or G0 < 2:
            split = {"error": "--allocation needs per-prompt pass rates (a census or a CSV), "
                              "not a log's single mean"}
        else:
            try:
                split = allocation.allocation_by_bin(rates, G0, list(allocation_rules),
                                                     max_G=max(max_G, G0))
            except ValueError as exc:  # a pool too large for the exact Dr. GRPO split
                split = {"error": str(exc).splitlines()[0]}
    return Advice(source=d.source, kind=d.kind, assumptions=list(d.assumptions), budget=budget,
                  max_G=max_G, prompts=d.prompts, mean_pass_rate=d.mean_pass_rate,
                  rows=_json_safe(rows), remedies=_json_safe(remedies), recommendation=rec,
                  noise=noise_info, warnings=list(d.warnings),
                  total_completions=total_completions, config=config,
                  allocation=_json_safe(split) if split else None)


def _py(value) -> str:
    """A value as Python source (double-quoted strings, like TRL's docs)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _format_config(c: dict) -> list[str]:
    """The TRL GRPOConfig block and its verl comments, as printed (a test instantiates
    ``trl.GRPOConfig`` from these lines)."""
    if "error" in c:
        return [f"TRL config: none ({c['error']})"]
    out = [f"TRL GRPOConfig for {c['for']}, G = {c['num_generations']}: "
           f"{c['prompts_per_step']} prompts x G = {c['completions_per_step']} completions per "
           f"optimizer step on {c['processes']} process(es), at most "
           f"{c['per_device_batch_limit']} completions per device per pass (--processes, "
           "--per-device-batch; defaults 1 and TRL's 8):",
           "    from trl import GRPOConfig", "    config = GRPOConfig(",
           '        output_dir="grpo-out",']
    cells = [f"{f['field']}={_py(f['value'])}," for f in c["fields"]]
    width = max(map(len, cells))
    for cell, f in zip(cells, c["fields"], strict=True):
        out.append(f"        {cell:<{width}}  # {f['reason']}")
    out.append("    )")
    out += [f"    # note: {n}" for n in c["notes"]]
    out.append("    # zero-variance groups in TRL (it has no dynamic sampling): train on the "
               "prompts --keep writes, rerun the census as pass rates move, and compare "
               "frac_reward_zero_std with the monitor line")
    out.append("    # verl equivalents (ppo_mini_batch_size counts prompts, not completions):")
    out += [f"    #   {v['key']}={v['value']}  ({v['comment']})" for v in c["verl"]]
    return out


def format_advice(a: Advice) -> str:
    """The table and the recommendation as plain text (what ``grpolab advise`` prints)."""
    if not isinstance(a, Advice):
        raise AdviseError(f"a must be an Advice (from advise()), got {type(a).__name__}")
    out = [f"grpolab advise: {a.source} ({a.kind}; "
           + (f"{a.prompts} prompts, " if a.prompts else "")
           + f"mean pass rate {a.mean_pass_rate:.3f}), budget N = {a.budget} completions per step"]
    out += [f"  assumed: {s}" for s in a.assumptions]
    out += [f"  WARNING: {s}" for s in a.warnings]
    filt = any(r.get("zero_variance_fraction_filtered") is not None for r in a.rows)
    head = ["G", "prompts/step", "P(zero var.)", "method", "informative/step", "compl./informative",
            "DS compl./step", "grad. var x"]
    if filt:
        head += ["P(zero var.) filtered", "informative filtered"]
    if a.noise:
        head.append("grad. MSE")
    lines = []
    for r in a.rows:
        cells = [str(r["G"]), str(r["prompts_per_step"]), f"{r['zero_variance_fraction']:.3f}",
                 r["method"], f"{r['informative_prompts_per_step']:.1f}",
                 _fmt(r["completions_per_informative_group"], ".1f"),
                 _fmt(r["dynamic_sampling_completions_per_step"], ".0f"),
                 f"{r['gradient_variance_inflation']:.3f}"]
        if filt:
            cells += [f"{r['zero_variance_fraction_filtered']:.3f}",
                      f"{r['informative_prompts_per_step_filtered']:.1f}"]
        if a.noise:
            cells.append(f"{r['gradient_mse']:.4g}")
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    out.append("")
    out.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    out += ["  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) for cells in lines]
    out.append("")
    out.append("remedies at the recommended G (informative groups per 1,000 completions):")
    for m in a.remedies:
        out.append(f"  {m['remedy']:<18} G = {str(m['G']):<6} "
                   f"{_fmt(m['informative_per_1000_completions'], '.1f'):>7}   {m['note']}")
    out.append("")
    out.append("recommendation:")
    for line in a.recommendation:
        out.append(f"  {line['item']}: {line['value']}  -- {line['reason']}")
    out.append("P(zero var.) = E[p^G + (1-p)^G]; grad. var x = G/(G-1), the leave-one-out "
               "baseline's inflation"
               + ("; grad. MSE = c1/B + c2/(BG) + c3/(BG(G-1)), the exact model" if a.noise
                  else "") + ". Derivations: book/capstone/01-choosing-g.md")
    if a.allocation:
        out.append("")
        out += _format_allocation(a.allocation)
    if a.config:
        out.append("")
        out += _format_config(a.config)
    return "\n".join(out)


def _format_allocation(split: dict) -> list[str]:
    """--allocation: the share of the step's completions each rule gives each pass-rate bin."""
    if "error" in split:
        return [f"per-prompt allocation: {split['error']}"]
    rules = list(split["objectives"])
    out = [f"per-prompt allocation at the same completions per step (mean G = "
           f"{split['mean_G']}, 2 <= G_j <= {split['max_G']}): share of the completions by "
           "pass-rate bin"]
    head = ["pass rate", "prompts", "uniform"] + rules
    lines = [[f"{b['low']:.2f}-{b['high']:.2f}", str(b["prompts"]), f"{b['uniform']:.1%}"]
             + [f"{b[r]:.1%}" for r in rules] for b in split["bins"]]
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    out.append("  " + "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    out += ["  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
            for cells in lines]
    for rule, o in split["objectives"].items():
        out.append(f"  {rule} ({o['school']} school): {o['objective']}: "
                   f"{o['rule']:.4g} against {o['uniform']:.4g} for uniform G")
    out.append("  Derivations: book/theory/14-adaptive-allocation.md")
    return out


def _fmt(x, spec: str) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "inf"
    return format(x, spec)
