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

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from grpolab.advantages import BASELINES, SCALES
from grpolab.grpo.fields import (
    MAX_COUNT,
    MAX_SEED,
    TEMPERATURE_RULE,
    Rule,
    bad_field,
    check_field,
    check_fields,
    count_rule,
    field_docs,
    seed_rule,
)
from grpolab.grpo.warmstart import WarmStartConfig
from grpolab.tasks.arithmetic import MAX_PROMPTS  # the most prompts a split can hold

__all__ = ["GRPOConfig", "LOSS_TYPES", "BACKENDS", "OPTIMIZERS", "LATER_FIELDS", "TRL_REFUSED",
           "TRL_READS", "RULES", "Rule", "apply_overrides",
           "check_field", "check_fields", "field_docs", "training_prompts",
           "MAX_COMPLETIONS_PER_STEP", "MAX_COUNT", "MAX_SEED", "MAX_STEPS",
           "MAX_COMPLETION_LENGTH", "MAX_EVAL_SAMPLES", "MAX_CENSUS_SAMPLES", "MAX_ITERATIONS",
           "MAX_PROMPTS"]

#: TRL's ``loss_type`` values that this package implements (grpolab.grpo.loss).
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
BACKENDS = ("grpolab", "trl")
#: The GRPOConfig fields that the TRL backend (grpolab.grpo.trl_backend) cannot honour, each
#: with the only value it runs and what TRL's GRPOTrainer (trl 1.16, grpo_trainer.py's
#: _compute_advantages) does instead. :meth:`GRPOConfig.validate` refuses any other value
#: with ``backend="trl"``, before any work, rather than run something else without a word.
TRL_REFUSED: dict[str, tuple[object, str]] = {
    "completion_budget": (None, "it stops after --steps optimizer steps (TRL's max_steps)"),
    "eval_at": (None, "it evaluates every --eval-every completions"),
    "advantage_baseline": ("mean", "TRL's GRPOTrainer subtracts the group mean"),
    "advantage_ddof": (1, "TRL's group std is the unbiased one (ddof 1)"),
    "advantage_eps": (1e-4, "TRL adds a fixed 1e-4 to the std"),
    "optimizer": ("adamw", "the TRL backend trains with TRL's AdamW (TrainingArguments.optim)"),
}
#: The fields the TRL backend reads (trl_backend.trl_args/train and grpo.setup, which both
#: backends share). Every GRPOConfig field is in exactly one of TRL_READS and TRL_REFUSED
#: (tests/test_trl_backend_fields.py): a new field must say what TRL does with it.
TRL_READS = (
    "task", "task_kwargs", "train_difficulties", "max_train_prompts", "max_eval_prompts",
    "model", "backend", "warmstart", "num_generations", "prompts_per_step", "steps",
    "learning_rate", "max_grad_norm", "beta", "epsilon", "epsilon_high", "loss_type",
    "scale_rewards", "num_iterations", "temperature", "top_p", "max_completion_length",
    "eval_every", "eval_samples", "census_samples", "census_seed", "seed", "device",
)
#: The optimizers of this package's loop (``optimizer``): AdamW (every lab) or plain SGD.
OPTIMIZERS = ("adamw", "sgd")
#: Fields added after results were committed, with the value those results were made with:
#: :meth:`GRPOConfig.to_dict` leaves such a field out while it holds that value, so every
#: earlier run's stored config, its comparison on resume and every config hash (the sweep's
#: gradient-noise rows) stay exactly as they were; a stored config without it reads back as
#: that value.
LATER_FIELDS = {"optimizer": "adamw"}
#: A step holds all of its B·G completions (tokens, log-probabilities, activations for the
#: backward pass) in memory at once; far above this no machine we target has the memory.
MAX_COMPLETIONS_PER_STEP = 16384
#: Most GRPO steps of a run: the run keeps every step's log row (about 1 KB) in memory and
#: writes it to log.jsonl; 100,000 steps is days for the tiny model, weeks for real ones.
MAX_STEPS = 100_000
#: Longest completion, in new tokens (every decode step is a forward pass of the batch).
MAX_COMPLETION_LENGTH = 32768
#: Most sampled completions per held-out prompt (all of them are drawn at once).
MAX_EVAL_SAMPLES = 4096
#: Most samples per training prompt of the pass-rate census (a prompts x samples matrix).
MAX_CENSUS_SAMPLES = 65536
#: Most updates per generation batch (TRL's num_iterations; 1 to 4 in practice).
MAX_ITERATIONS = 1024


@dataclass
class GRPOConfig:
    """Everything that defines one GRPO run (TRL's names where TRL has the concept)."""

    # ---- what is trained, on what
    task: str = "arithmetic"
    """task name in grpolab.tasks: arithmetic, arithmetic_partial, arithmetic_noisy,
    word_problems, jsonl (your prompts and reward: task_kwargs path and reward), or your own
    Task class as MODULE:CLASS or path/to/file.py:CLASS (grpolab.tasks.custom)"""
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
    """the optimizer's learning rate (TRL's default for AdamW is 1e-6)"""
    optimizer: str = "adamw"
    """'adamw' (torch AdamW, weight decay 0: every lab, TRL's default) or 'sgd' (plain
    torch SGD, no momentum: a step of learning_rate × the gradient, clipped at
    max_grad_norm unless 0, so the gradient's scale reaches the step; design C,
    book/labs/06-mechanism.md). The TRL backend runs AdamW only"""
    max_grad_norm: float = 1.0
    """gradient clipping norm (0: no clipping)"""
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
    eval_at: list[int] | None = None
    """evaluate when the completions consumed first reach each of these counts, and at the
    end (a schedule, e.g. evenly spaced in log(compute)); None: every eval_every"""
    eval_samples: int = 4
    """sampled completions per held-out prompt for sampled accuracy (pass@1; also the n of
    the unbiased pass@k estimate, so pass@k is reported for k up to eval_samples)"""
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
    def warmstart_key(self) -> str | None:
        """The warm start's cache key (:meth:`WarmStartConfig.key`) when the policy is the
        warm-started tiny model, else None: which starting weights a run of this config had."""
        return self.warmstart.key() if self.model == "tiny" else None

    @property
    def epsilon_upper(self) -> float:
        """The upper clip range actually used."""
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    # ------------------------------------------------------------------ validation
    def validate(self) -> GRPOConfig:
        """Raise a ValueError naming the first bad field (as its CLI flag): the per-field
        table :data:`RULES`, then the checks that relate two fields."""
        check_fields(self, RULES)
        if not isinstance(self.task, str) or not isinstance(self.model, str) or not self.model:
            raise bad_field("task" if not isinstance(self.task, str) else "model",
                       "must be a non-empty name")
        if not isinstance(self.task_kwargs, dict):
            raise bad_field("task_kwargs", f"must be a JSON object, got {self.task_kwargs!r}")
        from grpolab.tasks.registry import check_task

        check_task(self.task, self.task_kwargs)  # unknown names: the nearest valid one
        if not isinstance(self.warmstart, WarmStartConfig):
            raise bad_field("warmstart", f"must be a WarmStartConfig, got {self.warmstart!r}")
        self.warmstart.validate()
        if self.train_difficulties is not None and (
                not isinstance(self.train_difficulties, list | tuple)
                or not self.train_difficulties
                or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                       for d in self.train_difficulties)):
            raise bad_field("train_difficulties", "must be a non-empty list of levels >= 1 or "
                       f"unset, got {self.train_difficulties!r}")
        per_step = self.num_generations * self.prompts_per_step
        if per_step > MAX_COMPLETIONS_PER_STEP:
            raise bad_field("prompts_per_step", f"× G = {self.prompts_per_step} × "
                       f"{self.num_generations} = {per_step} completions per step; a step "
                       f"holds them all in memory, so at most {MAX_COMPLETIONS_PER_STEP} are "
                       "allowed")
        if self.pass_rate_window_size < self.num_generations:
            raise bad_field("census_samples", f"({self.census_samples}) must be >= num_generations "
                       f"({self.num_generations}) for the unbiased zero-variance prediction")
        if self.completion_budget is not None and self.completion_budget < self.num_generations:
            raise bad_field("completion_budget", f"({self.completion_budget}) is smaller than one "
                       f"group of {self.num_generations}")
        if self.eval_at is not None and (
                not isinstance(self.eval_at, list | tuple) or not self.eval_at
                or any(not _is_count(c) for c in self.eval_at)
                or list(self.eval_at) != sorted(set(self.eval_at))):
            raise bad_field("eval_at", "must be an increasing list of completion counts >= 1 "
                            f"or unset, got {self.eval_at!r}")
        if (self.completion_budget is not None
                and -(-self.completion_budget // per_step) > MAX_STEPS):
            raise bad_field("completion_budget", f"{self.completion_budget} at {per_step} "
                            f"completions per step is more than {MAX_STEPS} steps (every step "
                            f"is logged and kept); at most {MAX_STEPS * per_step} fit")
        if not isinstance(self.device, str) or not (
                self.device in ("auto", "cpu", "cuda") or (
                    self.device.startswith("cuda:") and self.device[5:].isdigit())):
            raise bad_field("device", f"must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if self.backend == "trl":
            self._check_trl()
        self._check_memory()
        return self

    def _check_trl(self) -> None:
        """Refuse a field the TRL backend does not implement (:data:`TRL_REFUSED`): one line
        naming the field and the backend that has it."""
        for name, (supported, instead) in TRL_REFUSED.items():
            value = getattr(self, name)
            if value != supported:
                shown = " ".join(map(str, value)) if isinstance(value, list | tuple) else value
                raise bad_field(name, f"{shown}: the TRL backend does not implement it "
                                f"({instead}); use --backend grpolab")

    def _check_memory(self) -> None:
        """Refuse, before any work, buffers this machine cannot hold
        (:mod:`grpolab.models.memory`): a step's rollout and backward pass over B·G
        completions of max_completion_length tokens at the model's vocabulary, the sampled
        evaluation (held-out prompts × eval_samples, drawn at once) and the census
        (training prompts × its width)."""
        from grpolab.models.memory import (
            check_memory,
            generation_bytes,
            largest_fitting,
            model_shape,
            training_bytes,
        )
        from grpolab.tasks.registry import split_sizes

        shape = model_shape(self.model, self.warmstart)
        L = self.max_completion_length
        per = generation_bytes(1, L, shape) + training_bytes(1, L, shape)
        C = self.num_generations * self.prompts_per_step
        check_memory(C * per, f"--prompts-per-step × G × --max-completion-length = "
                     f"{self.prompts_per_step} × {self.num_generations} × {L} (one step's "
                     f"completions, vocabulary {shape.vocab})",
                     f"at most {largest_fitting(per)} completions of {L} tokens fit per step")
        n_train, n_eval = split_sizes(self.task, self.task_kwargs)
        if self.max_eval_prompts is not None:
            n_eval = min(n_eval, self.max_eval_prompts)
        per = generation_bytes(1, L, shape)
        check_memory(n_eval * self.eval_samples * per,
                     f"--eval-samples {self.eval_samples} × {n_eval} held-out prompts × "
                     f"--max-completion-length {L} (the sampled evaluation, drawn at once)",
                     f"at most {largest_fitting(per * max(n_eval, 1))} samples per prompt fit")
        if self.max_train_prompts is not None:
            n_train = min(n_train, self.max_train_prompts)
        width = self.pass_rate_window_size
        chunk = generation_bytes(max(4096, width), L, shape)  # the census samples in chunks
        check_memory(chunk + 8 * n_train * width, f"--census-samples {width} × {n_train} "
                     "training prompts (the pass-rate census)",
                     f"at most {largest_fitting(8 * max(n_train, 1), chunk)} samples fit")

    def validate_prompts(self, task=None) -> GRPOConfig:
        """:meth:`validate`, then the checks that need the task's prompts (built from
        ``task``/``task_kwargs`` unless given; no torch): the difficulty levels exist and a
        step's prompts fit in the training set."""
        self.validate()
        if task is None:
            from grpolab.tasks.registry import get_task

            try:
                task = get_task(self.task, **self.task_kwargs)
            except TypeError as exc:
                raise ValueError(f"--task-kwargs do not fit task {self.task!r}: {exc}") from None
            except ValueError as exc:  # a value the task refuses (ops, digits, n_train, ...)
                raise ValueError(f"--task-kwargs: {exc}") from None
        train, _ = training_prompts(self, task)
        if self.prompts_per_step > len(train):
            raise ValueError(f"--prompts-per-step ({self.prompts_per_step}) is larger than the "
                             f"{len(train)} training prompts of this run: a step cannot draw "
                             "more distinct prompts than there are")
        return self

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict:
        """The fields as plain data, less any :data:`LATER_FIELDS` at its earlier value."""
        d = asdict(self)
        for name, earlier in LATER_FIELDS.items():
            if d[name] == earlier:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> GRPOConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error that names them."""
        d = dict(d)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown GRPOConfig fields: {', '.join(unknown)}"
                             + _nearest(unknown[0], names))
        if isinstance(d.get("warmstart"), dict):
            known = {f.name for f in dataclasses.fields(WarmStartConfig)}
            bad = sorted(set(d["warmstart"]) - known)
            if bad:
                raise ValueError(f"--warmstart: unknown WarmStartConfig field {bad[0]!r}"
                                 + _nearest(bad[0], known) + f"; the fields are "
                                 f"{', '.join(sorted(known))}")
            d["warmstart"] = WarmStartConfig(**d["warmstart"])
        return cls(**d)


#: The per-field checks of :meth:`GRPOConfig.validate`, one row per field (the checks that
#: relate two fields are written out in ``validate``).
_IN_MEMORY = "a step holds all its completions in memory"
RULES: dict[str, Rule] = {
    "num_generations": count_rule(2, MAX_COMPLETIONS_PER_STEP,
                                  why="a group of one has no baseline", high_why=_IN_MEMORY),
    "prompts_per_step": count_rule(1, MAX_COMPLETIONS_PER_STEP, high_why=_IN_MEMORY),
    "steps": count_rule(1, MAX_STEPS, high_why="every step is logged and kept in memory"),
    "num_iterations": count_rule(1, MAX_ITERATIONS,
                                 high_why="each is a backward pass over the whole step"),
    "max_completion_length": count_rule(1, MAX_COMPLETION_LENGTH,
                                        high_why="new tokens, each a forward pass of the batch"),
    "eval_every": count_rule(),
    "eval_samples": count_rule(1, MAX_EVAL_SAMPLES, high_why="drawn at once for every prompt"),
    "max_train_prompts": count_rule(1, MAX_PROMPTS, optional=True, high_why="a split's most"),
    "max_eval_prompts": count_rule(1, MAX_PROMPTS, optional=True, high_why="a split's most"),
    "completion_budget": count_rule(optional=True),
    "census_samples": count_rule(1, MAX_CENSUS_SAMPLES, optional=True,
                                 high_why="a prompts × samples matrix"),
    "seed": seed_rule(), "census_seed": seed_rule(optional=True),
    "loss_type": Rule("choice", choices=LOSS_TYPES),
    "scale_rewards": Rule("choice", choices=SCALES),
    "advantage_baseline": Rule("choice", choices=BASELINES),
    "backend": Rule("choice", choices=BACKENDS),
    "optimizer": Rule("choice", choices=OPTIMIZERS),
    "advantage_ddof": Rule("choice", choices=(0, 1)),
    "learning_rate": Rule("real", 0, 1, low_open=True,
                          why="AdamW diverges far below that"),
    "temperature": TEMPERATURE_RULE,  # shared with lab pass-rates
    "advantage_eps": Rule("real", 0, None, low_open=True),
    "beta": Rule("real", 0), "max_grad_norm": Rule("real", 0),
    "epsilon": Rule("real", 0, 1, high_open=True, why="the ratio is clipped to [1 - ε, 1 + ε]"),
    "epsilon_high": Rule("real", 0, optional=True),
    "top_p": Rule("real", 0, 1, low_open=True),
}


def _is_count(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= MAX_COUNT


def apply_overrides(config: GRPOConfig, overrides: Mapping | None = None, /,
                    **more) -> GRPOConfig:
    """``config`` with ``overrides`` (and keyword ``more``) applied and validated: the one way
    a preset, a regime, a lab item or the command line changes a config.

    Names must be fields. A dict given for a dict or dataclass field (``task_kwargs``,
    ``warmstart``) is merged key by key into the config's value
    (``--warmstart '{"steps": 50}'`` keeps the preset's model size); any other value replaces
    the field's. A new ``task`` keeps only the base's ``task_kwargs`` that it takes (none for
    your own task). Returns a new object.
    """
    base = asdict(config)  # every field, LATER_FIELDS included (to_dict drops their defaults)
    changes = {**(overrides or {}), **more}
    if changes.get("task", base["task"]) != base["task"]:
        # the base's task_kwargs belong to its task: another built-in task keeps those it
        # takes (arithmetic's digits go on to arithmetic_noisy); your own task (jsonl or
        # MODULE:CLASS) gets only the --task-kwargs you give it
        from grpolab.tasks.registry import TASKS, task_arguments

        task = changes["task"]
        try:
            takes = set(task_arguments(task)) if task in TASKS and task != "jsonl" else set()
        except (ValueError, KeyError, TypeError):
            takes = set(base["task_kwargs"])  # an unknown task: validate() names it
        base["task_kwargs"] = {k: v for k, v in base["task_kwargs"].items() if k in takes}
    merged = dict(base)
    for name, value in changes.items():
        if name not in base:
            raise ValueError(f"not a GRPOConfig field: {name!r}"
                             + _nearest(name, base))
        if isinstance(value, dict) and isinstance(base[name], dict):
            value = {**base[name], **value}
        merged[name] = value
    return GRPOConfig.from_dict(merged).validate()


def _nearest(name: str, known) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
