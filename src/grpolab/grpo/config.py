"""The one configuration of a GRPO run: a plain dataclass with TRL's names.

Every field has one default and a docstring (the string right below it); the CLI turns
each field into a ``--flag`` whose help is that docstring (:func:`field_docs`), the way
CleanRL's ``Args`` do. Presets (``grpolab.labs.sweep.presets``) and lab items
(``grpolab.labs.remedies.items``) are named overrides of this class, never copies of it.

Both backends read it: :mod:`grpolab.grpo.loop` (this package's loop) and
:mod:`grpolab.grpo.trl_backend` (TRL's ``GRPOTrainer``).

Derived in: book/theory/01-grpo-in-one-page.md (the objective and its knobs).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
import textwrap
from dataclasses import asdict, dataclass, field

from grpolab.advantages import BASELINES, SCALES
from grpolab.grpo.warmstart import WarmStartConfig

__all__ = ["GRPOConfig", "LOSS_TYPES", "BACKENDS", "field_docs", "training_prompts",
           "MAX_COMPLETIONS_PER_STEP", "MAX_COUNT", "MAX_SEED"]

#: TRL's ``loss_type`` values that this package implements (grpolab.grpo.loss).
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
BACKENDS = ("grpolab", "trl")
#: A step holds all of its B·G completions (tokens, log-probabilities, activations for the
#: backward pass) in memory at once; far above this no machine we target has the memory.
MAX_COMPLETIONS_PER_STEP = 16384
#: The largest count (steps, budgets, samples, ...) a field takes: torch and numpy index
#: with int64, but counts this large would never finish.
MAX_COUNT = 2**31 - 1
#: Seeds go to numpy's and torch's generators (both take 32-bit seeds without folding).
MAX_SEED = 2**32 - 1


@dataclass
class GRPOConfig:
    """Everything that defines one GRPO run (TRL's names where TRL has the concept)."""

    # ---- what is trained, on what
    task: str = "arithmetic"
    """task name in grpolab.tasks: arithmetic, arithmetic_partial, arithmetic_noisy,
    word_problems"""
    task_kwargs: dict = field(default_factory=dict)
    """keyword arguments of the task (digits, n_train, seed, ...)"""
    train_difficulties: list[int] | None = None
    """train and evaluate only on these difficulty levels (None: all)"""
    max_train_prompts: int | None = None
    """GRPO on the first N training prompts only (None: all)"""
    max_eval_prompts: int | None = None
    """evaluate on the first N held-out prompts only (None: all)"""
    model: str = "tiny"
    """policy: 'tiny' (the warm-started embedded model), 'smollm2', a hub id or a local
    path"""
    backend: str = "grpolab"
    """'grpolab' (grpolab.grpo.loop) or 'trl' (TRL's GRPOTrainer, grpolab.grpo.trl_backend)"""
    warmstart: WarmStartConfig = field(default_factory=WarmStartConfig)
    """the supervised warm start of the tiny model (grpolab.grpo.warmstart)"""
    # ---- the group and the step
    num_generations: int = 8
    """G: completions sampled per prompt (TRL's num_generations)"""
    prompts_per_step: int = 8
    """B: prompts per step; completions per step = B·G"""
    steps: int = 200
    """GRPO steps (ignored when completion_budget is set)"""
    completion_budget: int | None = None
    """stop once this many completions have been generated (a fixed budget; None: use
    steps)"""
    # ---- the optimizer and the loss (TRL names)
    learning_rate: float = 1e-5
    """AdamW learning rate (TRL's default is 1e-6)"""
    max_grad_norm: float = 1.0
    """gradient clipping norm"""
    beta: float = 0.0
    """KL coefficient against the starting policy (k3 estimator); 0 loads no reference"""
    epsilon: float = 0.2
    """lower clip range of the importance ratio"""
    epsilon_high: float | None = None
    """upper clip range (DAPO's clip-higher); None: same as epsilon"""
    loss_type: str = "dapo"
    """token aggregation: grpo, bnpo, dr_grpo or dapo (TRL's loss_type)"""
    scale_rewards: str = "group"
    """advantage scaling: 'group' (GRPO), 'batch', or 'none' (Dr. GRPO)"""
    num_iterations: int = 1
    """updates per generation batch (TRL's num_iterations, GRPO's μ)"""
    advantage_baseline: str = "mean"
    """'mean' (GRPO's group mean) or 'leave_one_out' (RLOO)"""
    advantage_ddof: int = 1
    """ddof of the group std (TRL: 1, unbiased)"""
    advantage_eps: float = 1e-4
    """added to the std before dividing (TRL: 1e-4)"""
    # ---- sampling
    temperature: float = 1.0
    """sampling temperature of the rollout and of sampled evaluation"""
    top_p: float = 1.0
    """nucleus sampling threshold in (0, 1]"""
    max_completion_length: int = 6
    """new tokens per completion (also dr_grpo's normalizer, as in TRL)"""
    # ---- measurement
    eval_every: int = 1280
    """completions between held-out evaluations (and one at the end)"""
    eval_samples: int = 4
    """sampled completions per held-out prompt for sampled accuracy (pass@1)"""
    census_samples: int | None = None
    """samples per training prompt in the starting policy's pass-rate census (None:
    max(G, 8))"""
    census_seed: int | None = None
    """seed of the census sampler (None: the run's seed)"""
    seed: int = 0
    """seed of prompt order, sampling and evaluation"""
    device: str = "auto"
    """'auto' (CUDA when present), 'cpu', 'cuda' or 'cuda:N'"""

    # ------------------------------------------------------------------ derived values
    @property
    def pass_rate_window_size(self) -> int:
        """Rewards remembered per prompt for the zero-variance prediction: the census width.

        A short window follows the moving policy, and the unbiased estimate
        C(k, G)/C(n, G) needs n >= G.
        """
        return self.census_samples or max(self.num_generations, 8)

    @property
    def epsilon_upper(self) -> float:
        """The upper clip range actually used."""
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    # ------------------------------------------------------------------ validation
    def validate(self) -> GRPOConfig:
        """Raise a ValueError naming the first bad field (as its CLI flag)."""
        def bad(name: str, why: str):
            return ValueError(f"--{name.replace('_', '-')} {why}")

        def count(v) -> bool:
            return not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= MAX_COUNT

        for name in ("num_generations", "prompts_per_step", "steps", "num_iterations",
                     "max_completion_length", "eval_every", "eval_samples"):
            v = getattr(self, name)
            if not count(v):
                raise bad(name, f"must be an integer in [1, {MAX_COUNT}], got {v!r}")
        for name in ("max_train_prompts", "max_eval_prompts", "completion_budget",
                     "census_samples"):
            v = getattr(self, name)
            if v is not None and not count(v):
                raise bad(name, f"must be an integer in [1, {MAX_COUNT}] or unset, got {v!r}")
        for name in ("seed", "census_seed"):
            v = getattr(self, name)
            if (v is not None or name == "seed") and (
                    isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_SEED):
                raise bad(name, f"must be an integer in [0, {MAX_SEED}], got {v!r}")
        if self.num_generations < 2:
            raise bad("num_generations", "must be >= 2 (a group of one has no baseline), "
                      f"got {self.num_generations}")
        per_step = self.num_generations * self.prompts_per_step
        if per_step > MAX_COMPLETIONS_PER_STEP:
            raise bad("prompts_per_step", f"× G = {self.prompts_per_step} × "
                      f"{self.num_generations} = {per_step} completions per step; a step holds "
                      f"them all in memory, so at most {MAX_COMPLETIONS_PER_STEP} are allowed")
        if self.train_difficulties is not None and (
                not isinstance(self.train_difficulties, list | tuple)
                or not self.train_difficulties
                or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                       for d in self.train_difficulties)):
            raise bad("train_difficulties", "must be a non-empty list of levels >= 1 or unset, "
                      f"got {self.train_difficulties!r}")
        if not isinstance(self.task, str) or not isinstance(self.model, str) or not self.model:
            raise bad("task" if not isinstance(self.task, str) else "model",
                      "must be a non-empty name")
        if not isinstance(self.task_kwargs, dict):
            raise bad("task_kwargs", f"must be a JSON object, got {self.task_kwargs!r}")
        if not isinstance(self.warmstart, WarmStartConfig):
            raise bad("warmstart", f"must be a WarmStartConfig, got {self.warmstart!r}")
        self.warmstart.validate()
        for name, allowed in (("loss_type", LOSS_TYPES), ("scale_rewards", SCALES),
                              ("advantage_baseline", BASELINES), ("backend", BACKENDS)):
            if getattr(self, name) not in allowed:
                raise bad(name, f"must be one of {', '.join(allowed)}, "
                          f"got {getattr(self, name)!r}")
        if self.advantage_ddof not in (0, 1):
            raise bad("advantage_ddof", f"must be 0 or 1, got {self.advantage_ddof!r}")
        for name in ("learning_rate", "temperature", "advantage_eps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, int | float) and math.isfinite(v)
                                           and v > 0):
                raise bad(name, f"must be a positive finite number, got {v!r}")
        if not 1e-3 <= self.temperature <= 100:
            raise bad("temperature", f"must be in [0.001, 100] (logits / T overflows or "
                      f"flattens beyond), got {self.temperature!r}")
        if self.learning_rate > 1.0:
            raise bad("learning_rate", f"must be <= 1 (AdamW diverges far below that), "
                      f"got {self.learning_rate!r}")
        for name in ("beta", "epsilon", "max_grad_norm"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, int | float) and math.isfinite(v)
                                           and v >= 0):
                raise bad(name, f"must be a non-negative finite number, got {v!r}")
        if self.epsilon >= 1:
            raise bad("epsilon", f"must be < 1 (the ratio is clipped to [1 - ε, 1 + ε]), "
                      f"got {self.epsilon!r}")
        if self.epsilon_high is not None and not (
                isinstance(self.epsilon_high, int | float) and math.isfinite(self.epsilon_high)
                and self.epsilon_high >= 0):
            raise bad("epsilon_high", f"must be >= 0 or unset, got {self.epsilon_high!r}")
        if isinstance(self.top_p, bool) or not (isinstance(self.top_p, int | float)
                                                and 0 < self.top_p <= 1):
            raise bad("top_p", f"must be in (0, 1], got {self.top_p!r}")
        if self.pass_rate_window_size < self.num_generations:
            raise bad("census_samples", f"({self.census_samples}) must be >= num_generations "
                      f"({self.num_generations}) for the unbiased zero-variance prediction")
        if self.completion_budget is not None and self.completion_budget < self.num_generations:
            raise bad("completion_budget", f"({self.completion_budget}) is smaller than one "
                      f"group of {self.num_generations}")
        if not isinstance(self.device, str) or not (
                self.device in ("auto", "cpu", "cuda") or (
                    self.device.startswith("cuda:") and self.device[5:].isdigit())):
            raise bad("device", f"must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        return self

    def validate_prompts(self, task=None) -> GRPOConfig:
        """:meth:`validate`, then the checks that need the task's prompts (built from
        ``task``/``task_kwargs`` unless given; no torch): the difficulty levels exist and a
        step's prompts fit in the training set."""
        self.validate()
        if task is None:
            from grpolab.tasks.arithmetic import get_task

            try:
                task = get_task(self.task, **self.task_kwargs)
            except TypeError as exc:
                raise ValueError(f"--task-kwargs do not fit task {self.task!r}: {exc}") from None
        train, _ = training_prompts(self, task)
        if self.prompts_per_step > len(train):
            raise ValueError(f"--prompts-per-step ({self.prompts_per_step}) is larger than the "
                             f"{len(train)} training prompts of this run: a step cannot draw "
                             "more distinct prompts than there are")
        return self

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GRPOConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error that names them."""
        d = dict(d)
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown GRPOConfig fields: {', '.join(sorted(unknown))}")
        if isinstance(d.get("warmstart"), dict):
            d["warmstart"] = WarmStartConfig(**d["warmstart"])
        return cls(**d)

    def with_overrides(self, **overrides) -> GRPOConfig:
        """A copy with ``overrides`` applied (names must be fields)."""
        return GRPOConfig.from_dict({**self.to_dict(), **overrides})


def training_prompts(config: GRPOConfig, task) -> tuple[list, list]:
    """The run's training and held-out prompts: ``train_difficulties`` filters both splits,
    ``max_train_prompts``/``max_eval_prompts`` truncate them."""
    train, evals = task.train_prompts, task.eval_prompts
    if config.train_difficulties:
        keep = set(config.train_difficulties)
        train = [p for p in train if p.difficulty in keep]
        evals = [p for p in evals if p.difficulty in keep]
        if not train or not evals:
            raise ValueError(f"--train-difficulties {sorted(keep)} match no prompts of task "
                             f"{config.task!r} (levels: {task.difficulties})")
    if config.max_train_prompts is not None:
        train = train[:config.max_train_prompts]
    if config.max_eval_prompts is not None:
        evals = evals[:config.max_eval_prompts]
    return train, evals


@functools.cache
def field_docs(cls: type = GRPOConfig) -> dict[str, str]:
    """The docstring written under each field of dataclass ``cls`` (for ``--help``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs
