"""Named configurations of the G sweep (``grpolab lab sweep --preset NAME``).

A sweep trains from one warm start for every (regime, G, seed). A *regime* fixes which
training prompts GRPO sees and how a step's completions are budgeted:

- ``mixed``: difficulties 1–3 from the standard warm start, a spread of pass rates;
- ``3-digit``: 3-digit sums only, from the standard warm start. For this model they are
  *easier* than the mix (its census mean pass rate is higher): the name says what the
  prompts are, not how hard they are;
- ``3-digit-fixed-prompts``: as ``3-digit`` but with a fixed number of prompts per step, so
  a step with larger G costs more completions;
- ``hard``: 2-digit sums from the weaker warm start
  (:data:`~grpolab.labs.common.WEAK_WARMSTART_STEPS` supervised steps). Hard by
  measurement: most prompts' census pass rate is below 0.1, few are never solved
  (tests/test_lab_numbers.py checks the committed census).

``mode="budget"`` keeps completions per step fixed (prompts per step = budget / G);
``mode="prompts"`` keeps prompts per step fixed. A preset is a :class:`SweepPreset` around a
base :class:`~grpolab.grpo.config.GRPOConfig`; every run's config is that base with the
regime's and the run's overrides (:meth:`SweepPreset.run_config`), all applied through
:func:`~grpolab.grpo.config.apply_overrides`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from grpolab.grpo.config import (
    MAX_COMPLETIONS_PER_STEP,
    MAX_SEED,
    GRPOConfig,
    Rule,
    apply_overrides,
    check_fields,
)
from grpolab.grpo.warmstart import WarmStartConfig
from grpolab.labs.common import (
    COMPLETIONS_PER_STEP,
    DR_GRPO,
    GROUP_SIZES,
    HARD_LEVELS,
    HARD_OVERRIDES,
    HARD_STEPS,
    TASK_KWARGS,
    TINY_BASE,
)

__all__ = ["Regime", "SweepPreset", "PRESETS", "get_preset", "GPU_SMOLLM2_BUDGET",
           "DESIGN_A_LEARNING_RATE", "DESIGN_C_SGD_LR", "DESIGN_C_REGIMES", "DESIGN_B_LEVELS",
           "DESIGN_B_TASK_KWARGS", "DESIGN_B_BUDGET", "DESIGN_B_REGIME"]


@dataclass
class Regime:
    """Which prompts GRPO trains on and how a step is budgeted (a named override)."""

    name: str
    """the regime's name (a folder under runs/)"""
    train_difficulties: list[int]
    """the difficulty levels it trains and evaluates on"""
    mode: str = "budget"
    """budget: completions per step fixed (prompts = budget / G); prompts: prompts per step
    fixed"""
    budget: int = COMPLETIONS_PER_STEP
    """completions per step in budget mode"""
    prompts_per_step: int = 4
    """prompts per step in prompts mode"""
    overrides: dict = field(default_factory=dict)
    """further GRPOConfig fields of this regime"""

    def validate(self) -> Regime:
        """Raise a ValueError naming the first bad field."""
        check_fields(self, _REGIME_RULES)
        return self

    def prompts_for(self, G: int) -> int:
        """Prompts per step at group size G."""
        if self.mode == "budget":
            if self.budget % G:
                raise ValueError(f"--budget {self.budget} is not a multiple of G={G}")
            return self.budget // G
        return self.prompts_per_step


_IN_MEMORY = "a step holds all its completions in memory"
_REGIME_RULES = {"mode": Rule("choice", choices=("budget", "prompts")),
                 "budget": Rule("int", 1, MAX_COMPLETIONS_PER_STEP, why=_IN_MEMORY),
                 "prompts_per_step": Rule("int", 1, MAX_COMPLETIONS_PER_STEP, why=_IN_MEMORY)}


@dataclass
class SweepPreset:
    """A sweep: which G, seeds and regimes, around one base :class:`GRPOConfig`."""

    name: str
    """the preset's name"""
    description: str
    """one line: what it runs and how long it takes"""
    config: GRPOConfig
    """the base config of every run (the regime and the run set G, seed and prompts)"""
    group_sizes: list[int] = field(default_factory=lambda: list(GROUP_SIZES))
    """group sizes G to compare"""
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    """seeds of every (regime, G)"""
    regimes: list[Regime] = field(default_factory=lambda: [Regime("mixed", [1, 2, 3])])
    """the regimes (prompt sets and budgets)"""
    noise_batches: int = 16
    """independent batches per G for the gradient-noise measurement at the warm start (0:
    skip it; else at least 2, since its variance is taken across batches)"""
    torch_threads: int | None = 1
    """CPU threads for torch (1 is kind to a shared machine; none: torch's default)"""

    def run_config(self, regime: Regime, G: int, seed: int) -> GRPOConfig:
        """The GRPOConfig of one run: the base, the regime's levels and overrides, G, prompts
        per step and the seed."""
        return apply_overrides(self.config, {
            "train_difficulties": list(regime.train_difficulties), "num_generations": G,
            "prompts_per_step": regime.prompts_for(G), "seed": seed, **regime.overrides})

    def validate(self) -> SweepPreset:
        """Raise a ValueError naming the first bad field: the lists, the regimes, and every
        run's config (no torch, nothing written)."""
        for flag, values in (("--G", self.group_sizes), ("--seeds", self.seeds),
                             ("--regimes", [r.name for r in self.regimes])):
            if not values or len(set(values)) != len(values):
                raise ValueError(f"{flag} must name at least one value, each once; got {values}")
        for s in self.seeds:
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED:
                raise ValueError(f"--seeds must be integers in [0, {MAX_SEED}], got {s!r}")
        check_fields(self, _PRESET_RULES)
        if self.noise_batches == 1:  # a variance across batches needs two of them
            raise ValueError("--noise-batches must be 0 (skip the gradient-noise measurement) "
                             "or at least 2 (its variance is taken across batches), got 1")
        for r in self.regimes:
            r.validate()
            for G in self.group_sizes:
                try:
                    self.run_config(r, G, self.seeds[0])
                except ValueError as exc:
                    raise ValueError(f"{exc} (regime {r.name}, G={G})") from None
        return self

    def check_prompts(self, task=None) -> SweepPreset:
        """Check every run's config against the task's prompts (no torch, nothing written):
        the levels exist and a step's prompts fit in the training set."""
        if task is None:
            from grpolab.tasks.registry import get_task

            task = get_task(self.config.task, **self.config.task_kwargs)
        for regime in self.regimes:
            for G in self.group_sizes:
                try:
                    self.run_config(regime, G, self.seeds[0]).validate_prompts(task)
                except ValueError as exc:
                    raise ValueError(f"{exc} (regime {regime.name}, G={G})") from None
        return self

    def to_dict(self) -> dict:
        return asdict(self)


_PRESET_RULES = {"noise_batches": Rule("int", 0, 4096),
                 "torch_threads": Rule("int", 1, 4096, optional=True)}

#: gpu-smollm2: SmolLM2-135M-Instruct on word problems at this many completions per step.
GPU_SMOLLM2_BUDGET = COMPLETIONS_PER_STEP

#: Full fine-tune of all 134.5M parameters, not LoRA: at this size the weights, grads and
#: AdamW state take about 2.2 GB in float32, nothing for one GPU, so LoRA would save nothing
#: that matters while adding a confound (an adapter's rank limits the update) to a lab about
#: G. LoRA remains one flag away on the TRL backend (``--lora-r``). Sampling matches the
#: pass-rate lab (temperature 0.7, 48 new tokens), so that lab measures the p this sweep
#: starts from. Difficulty 4 stays in the held-out set only.
_GPU_SMOLLM2 = GRPOConfig(
    task="word_problems", model="smollm2", max_train_prompts=256,
    task_kwargs={"levels": [1, 2, 3, 4], "n_train": 400, "n_eval": 100, "seed": 0,
                 "chat_template": "smollm2"},
    steps=100, learning_rate=1e-5, max_grad_norm=1.0, beta=0.0, loss_type="dapo",
    scale_rewards="group", temperature=0.7, top_p=1.0, max_completion_length=48,
    eval_every=25 * COMPLETIONS_PER_STEP, eval_samples=4, census_samples=16, device="auto")

#: The compute axis: 8 evaluations evenly spaced in log(completions consumed), at steps 4,
#: 8, ..., 512 of 64 completions (and the warm start at step 0).
COMPUTE_STEPS = HARD_STEPS
COMPUTE_EVALS = [COMPLETIONS_PER_STEP * 2 ** k for k in range(2, 10)]

#: Design A (issue 31; declared in labs/results/design-a/declared.json before any run): 256
#: completions per step for 768 steps, 8 evaluations log-spaced up to the last step's 196,608
#: completions. The RL prompts come from another split of the task (seed 1) than the warm
#: start's supervised prompts (seed 0); 1-digit sums are too few to be disjoint by seed.
DESIGN_A_BUDGET = 256
DESIGN_A_STEPS = 768
DESIGN_A_EVALS = [DESIGN_A_BUDGET * DESIGN_A_STEPS // 2 ** k for k in range(7, -1, -1)]
#: Design A's AdamW learning rate, declared from the G = 8 pilot seed
#: (labs/results/design-a/deviations.md, item 1; :func:`grpolab.labs.design_a.run_pilot`
#: writes labs/results/design-a/pilot.json, which tests/test_design_a.py checks this copy
#: against): 1e-4, the best of 2.5e-5, 5e-5 and 1e-4 by held-out pass@1 after 192 steps.
DESIGN_A_LEARNING_RATE = 1e-4
#: Design B (issue 31; declared in labs/results/design-b/declared.json before any run): a
#: coverage-limited pool, 3-digit sums (warm-start mean p about 0.48) and 4-digit sums (about
#: 0.009, most never solved; labs/results/census-by-level), half and half. The RL and
#: held-out prompts come from the task's seed-1 split, as design A's; at these two levels it
#: shares no prompt with the warm start's supervised (seed-0) split (counted in
#: labs/results/design-b/deviations.md). Every training prompt of the two levels is used
#: (653 + 652) and every held-out one (130 + 131), each evaluated with 64 samples (pass@1
#: and pass@64 per level: grpolab.labs.design_b). 256 completions per step for 512 steps,
#: held-out evaluations at steps 32, 128 and 512 (and the warm start).
DESIGN_B_LEVELS = [3, 4]
DESIGN_B_TASK_KWARGS = {**TASK_KWARGS, "seed": 1}
DESIGN_B_BUDGET = 256
DESIGN_B_STEPS = 512
DESIGN_B_EVALS = [DESIGN_B_BUDGET * s for s in (32, 128, DESIGN_B_STEPS)]
#: The one training regime of design B: both levels in one pool, evaluated per level.
DESIGN_B_REGIME = Regime("3-and-4-digit", list(DESIGN_B_LEVELS), budget=DESIGN_B_BUDGET)
#: Design C (labs/results/design-c/declared.json, book/labs/06-mechanism.md): SGD's
#: learning rate, matched once to AdamW's mean update norm over a 100-step run at G = 8 in
#: the mixed regime (scale_rewards "group", dr_grpo); SGD does not clip (max_grad_norm 0,
#: labs/results/design-c/deviations.md), so G's gradient scale reaches its step. Measured by
#: :func:`grpolab.labs.design_c.match_sgd_lr`; its inputs and output are in
#: labs/results/design-c/sgd_lr.json (tests/test_design_c.py checks this copy).
DESIGN_C_SGD_LR = 0.00425
#: Design C's four cells of (optimizer, scale_rewards), each a regime of the mixed prompts
#: at a fixed budget of 64 completions per step (the sweep varies G and the seed within).
DESIGN_C_REGIMES = [
    Regime(f"{opt}-{scale}", [1, 2, 3], overrides={
        "optimizer": opt, "scale_rewards": scale,
        **({"learning_rate": DESIGN_C_SGD_LR, "max_grad_norm": 0.0} if opt == "sgd" else {})})
    for opt, scale in (("adamw", "group"), ("sgd", "group"), ("adamw", "none"),
                       ("sgd", "none"))]

PRESETS: dict[str, SweepPreset] = {
    "cpu-quick": SweepPreset(
        name="cpu-quick",
        description="The README's main job: 5 G values x 3 seeds x 100 steps in two regimes "
                    "(mixed at a fixed budget of 64 completions per step; 3-digit sums at 4 "
                    "prompts per step), sampled pass@1 from 8 samples per held-out prompt; "
                    "under 10 minutes on 2 CPU cores including the warm start.",
        config=apply_overrides(TINY_BASE, eval_samples=8, eval_every=25 * COMPLETIONS_PER_STEP,
                               census_samples=64),
        seeds=[0, 1, 2],
        regimes=[Regime("mixed", [1, 2, 3]),
                 Regime("3-digit-fixed-prompts", [3], mode="prompts", prompts_per_step=4)],
    ),
    "cpu-full": SweepPreset(
        name="cpu-full",
        description="The reference sweep: 5 G values x 5 seeds x 100 steps in three regimes "
                    "(mixed and 3-digit sums at a fixed budget of 64 completions per step; "
                    "3-digit sums at 4 prompts per step), sampled pass@1 from 8 samples per "
                    "held-out prompt; about half an hour on 2 CPU cores.",
        config=apply_overrides(TINY_BASE, eval_samples=8, eval_every=25 * COMPLETIONS_PER_STEP,
                               census_samples=64),
        seeds=[0, 1, 2, 3, 4],
        regimes=[Regime("mixed", [1, 2, 3]), Regime("3-digit", [3]),
                 Regime("3-digit-fixed-prompts", [3], mode="prompts", prompts_per_step=4)],
    ),
    "cpu-compute": SweepPreset(
        name="cpu-compute",
        description="The compute axis: 5 G values x 5 seeds x 512 steps at 64 completions per "
                    "step in two regimes (mixed from the standard warm start; hard, 2-digit "
                    "sums from the weaker one), Dr. GRPO's estimator, held-out pass@k (k <= 64) "
                    "at 8 checkpoints evenly spaced in log(compute); about 90 minutes on 2 "
                    "CPU cores.",
        config=apply_overrides(
            TINY_BASE, DR_GRPO, steps=COMPUTE_STEPS, eval_at=COMPUTE_EVALS, eval_samples=64,
            max_eval_prompts=120, census_samples=64),
        seeds=[0, 1, 2, 3, 4],
        regimes=[Regime("mixed", [1, 2, 3]),
                 Regime("hard", list(HARD_LEVELS), overrides=dict(HARD_OVERRIDES))],
        noise_batches=64,
    ),
    "design-a": SweepPreset(
        name="design-a",
        description="Design A, the IsoCompute crossing where it can happen (declared in "
                    "labs/results/design-a/declared.json): G in 2 8 32 x 4 seeds x 768 steps "
                    "at 256 completions per step, RL prompts from another split than the warm "
                    "start's, leave-one-out Dr. GRPO, AdamW lr 1e-4 from a G = 8 pilot seed, "
                    "pass@k from 32 samples on 200 held-out prompts at 8 log-spaced "
                    "checkpoints; measured on 2 shared CPU cores: the pilot 6.4 minutes "
                    "including the warm start, the sweep 36 minutes.",
        config=apply_overrides(
            TINY_BASE, DR_GRPO, advantage_baseline="leave_one_out", steps=DESIGN_A_STEPS,
            learning_rate=DESIGN_A_LEARNING_RATE,
            eval_at=DESIGN_A_EVALS, eval_samples=32, max_eval_prompts=200, census_samples=64,
            task_kwargs={**TASK_KWARGS, "seed": 1}),
        group_sizes=[2, 8, 32], seeds=[0, 1, 2, 3],
        regimes=[Regime("mixed", [1, 2, 3], budget=DESIGN_A_BUDGET)],
        noise_batches=64,
    ),
    "design-b": SweepPreset(
        name="design-b",
        description="Design B, a coverage-limited pool (declared in "
                    "labs/results/design-b/declared.json): 3- and 4-digit sums half and half "
                    "from another split than the warm start's, G in 2 8 32 x 4 seeds x 512 "
                    "steps at 256 completions per step, leave-one-out Dr. GRPO, pass@1 and "
                    "pass@64 per level from 64 samples on every held-out prompt of both "
                    "levels; the per-level gradient noise is measured beforehand by "
                    "python -m grpolab.labs.design_b noise (labs/README.md has the time).",
        config=apply_overrides(
            TINY_BASE, DR_GRPO, advantage_baseline="leave_one_out", steps=DESIGN_B_STEPS,
            eval_at=DESIGN_B_EVALS, eval_samples=64, max_train_prompts=None,
            max_eval_prompts=None, census_samples=64, task_kwargs=DESIGN_B_TASK_KWARGS),
        group_sizes=[2, 8, 32], seeds=[0, 1, 2, 3], regimes=[DESIGN_B_REGIME],
        noise_batches=0,
    ),
    "design-c": SweepPreset(
        name="design-c",
        description="Design C, the mechanism: G in 2 16 x scale_rewards group/none x "
                    "optimizer AdamW 5e-5/SGD (lr matched once to AdamW's update norm at "
                    "G = 8), dr_grpo, mixed regime at a fixed budget of 64 completions per "
                    "step, 100 steps, 3 seeds, and the warm-start gradient noise of every "
                    "cell (64 batches); sampled pass@1 from 8 samples per held-out prompt.",
        config=apply_overrides(TINY_BASE, loss_type="dr_grpo", eval_samples=8,
                               eval_every=25 * COMPLETIONS_PER_STEP, census_samples=64),
        group_sizes=[2, 16], seeds=[0, 1, 2], regimes=DESIGN_C_REGIMES, noise_batches=64,
    ),
    "gpu": SweepPreset(
        name="gpu",
        description="A 4-layer, d_model 256 tiny model, budget 256 completions per step, "
                    "5 seeds x 600 steps in the three regimes; CUDA when present.",
        config=apply_overrides(
            TINY_BASE, steps=600, max_train_prompts=2000, eval_samples=8,
            eval_every=20 * 256, device="auto",
            warmstart=WarmStartConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS),
                                      n_layer=4, n_embd=256, n_head=8)),
        seeds=[0, 1, 2, 3, 4],
        regimes=[Regime("mixed", [1, 2, 3], budget=256), Regime("3-digit", [3], budget=256),
                 Regime("3-digit-fixed-prompts", [3], mode="prompts", prompts_per_step=16,
                        overrides={"eval_every": 1280})],
        torch_threads=None,
    ),
    "gpu-smollm2": SweepPreset(
        name="gpu-smollm2",
        description="SmolLM2-135M-Instruct (offline, full fine-tune) on word problems, G in "
                    "2 4 8 16 x 1 seed x 100 steps at 64 completions per step; sized for "
                    "<= 15 minutes on one modern GPU.",
        config=_GPU_SMOLLM2, group_sizes=[2, 4, 8, 16], seeds=[0],
        regimes=[Regime("mixed", [1, 2, 3], budget=GPU_SMOLLM2_BUDGET)],
        noise_batches=4, torch_threads=None,
    ),
}

_SWEEP_FIELDS = {f.name for f in fields(SweepPreset)} - {"config", "name", "description"}
_CONFIG_FIELDS = {f.name for f in fields(GRPOConfig)}


def get_preset(name: str, overrides: dict | None = None, /, **more) -> SweepPreset:
    """A copy of preset ``name`` with ``overrides`` (and keyword ``more``) applied: sweep
    fields (group_sizes, seeds, regimes, noise_batches, torch_threads) to the preset,
    GRPOConfig fields (steps, learning_rate, warmstart, backend, device, ...) to its base
    config. None means "keep". The result is validated."""
    if name not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}; got {name!r}")
    overrides = {k: v for k, v in {**(overrides or {}), **more}.items() if v is not None}
    unknown = set(overrides) - _SWEEP_FIELDS - _CONFIG_FIELDS
    if unknown:
        raise ValueError(f"unknown preset overrides: {', '.join(sorted(unknown))}")
    base = PRESETS[name]
    config = apply_overrides(base.config,
                             {k: v for k, v in overrides.items() if k in _CONFIG_FIELDS})
    return replace(base, config=config,
                   **{k: v for k, v in overrides.items() if k in _SWEEP_FIELDS}).validate()
