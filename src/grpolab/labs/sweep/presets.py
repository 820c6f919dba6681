"""Named configurations of the G sweep (``grpolab lab sweep --preset NAME``).

A sweep trains from one warm start for every (regime, G, seed). A *regime* fixes which
training prompts GRPO sees and how a step's completions are budgeted:

- ``mixed``: difficulties 1–3, a spread of pass rates (the usual case);
- ``hard``: difficulty 3 only (3-digit sums). "Hard" is the task's label, not a measured
  pass rate: the sweep's census measures how often the warm start passes these prompts;
- ``hard-fixed-prompts``: as ``hard`` but with a fixed number of prompts per step, so a
  step with larger G costs more completions; here small G starves learning *per step*
  (most groups all wrong), and the per-completion view shows what that saving costs.

``mode="budget"`` keeps completions per step fixed (prompts per step = budget / G);
``mode="prompts"`` keeps prompts per step fixed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from grpolab.grpo.config import MAX_COMPLETIONS_PER_STEP, GRPOConfig
from grpolab.grpo.warmstart import WarmStartConfig

__all__ = ["Regime", "SweepPreset", "PRESETS", "get_preset", "TASK_KWARGS"]

# The task every preset shares: sums of 1- to 4-digit numbers. The warm start sees all
# four levels; the regimes train and evaluate on levels 1-3 (mixed) or 3 (hard).
TASK_KWARGS = {"digits": [1, 2, 3, 4], "operands": [2], "ops": "+", "n_train": 2000,
               "n_eval": 400, "seed": 0}


@dataclass
class Regime:
    """Which prompts GRPO trains on and how a step is budgeted (a named override)."""

    name: str
    train_difficulties: list[int]
    mode: str = "budget"  # "budget": completions per step fixed; "prompts": prompts fixed
    budget: int = 64  # completions per step (mode="budget")
    prompts_per_step: int = 4  # mode="prompts"
    overrides: dict = field(default_factory=dict)  # further GRPOConfig fields of this regime

    def prompts_for(self, G: int) -> int:
        """Prompts per step at group size G."""
        if self.mode == "budget":
            if self.budget % G:
                raise ValueError(f"--budget {self.budget} is not a multiple of G={G}")
            return self.budget // G
        return self.prompts_per_step


@dataclass
class SweepPreset:
    """A sweep: which G, seeds and regimes, around one base :class:`GRPOConfig`.

    ``config`` is a GRPOConfig (the preset's overrides of its defaults); a run's config is
    ``config`` with the regime's and the run's (G, seed) overrides (:meth:`run_config`).
    """

    name: str
    description: str
    config: GRPOConfig
    group_sizes: list[int] = field(default_factory=lambda: [2, 4, 8, 16, 32])
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    regimes: list[Regime] = field(default_factory=lambda: [Regime("mixed", [1, 2, 3])])
    noise_batches: int = 16  # independent batches per G for the gradient-noise measurement
    torch_threads: int | None = 1  # CPU threads for torch; 1 is kind to a shared machine

    def run_config(self, regime: Regime, G: int, seed: int) -> GRPOConfig:
        """The GRPOConfig of one run."""
        return self.config.with_overrides(
            train_difficulties=list(regime.train_difficulties), num_generations=G,
            prompts_per_step=regime.prompts_for(G), seed=seed, **regime.overrides).validate()

    def validate_prompts(self, task=None) -> SweepPreset:
        """Check every run's config against the task's prompts (no torch, nothing written):
        the levels exist and a step's prompts fit in the training set."""
        if task is None:
            from grpolab.tasks.arithmetic import get_task

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


#: The tiny model's sweep base: 100 steps of AdamW 5e-5, evaluation every 20 steps at 64
#: completions per step.
_TINY = GRPOConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS), max_train_prompts=500,
                   warmstart=WarmStartConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS),
                                             steps=1500),
                   steps=100, learning_rate=5e-5, eval_every=20 * 64, eval_samples=4,
                   device="cpu")

PRESETS: dict[str, SweepPreset] = {
    "cpu-quick": SweepPreset(
        name="cpu-quick",
        description="5 G values x 2 seeds x 100 steps, fixed budget of 64 completions per "
                    "step, one regime; minutes on 2 CPU cores including the warm start.",
        config=_TINY,
    ),
    "cpu-full": SweepPreset(
        name="cpu-full",
        description="The reference sweep: 5 G values x 5 seeds x 100 steps in three regimes "
                    "(mixed and hard at a fixed budget of 64 completions per step; hard at 4 "
                    "prompts per step), sampled pass@1 from 8 samples per held-out prompt; "
                    "about half an hour on 2 CPU cores.",
        config=_TINY.with_overrides(eval_samples=8, eval_every=25 * 64),
        seeds=[0, 1, 2, 3, 4],
        regimes=[Regime("mixed", [1, 2, 3]), Regime("hard", [3]),
                 Regime("hard-fixed-prompts", [3], mode="prompts", prompts_per_step=4)],
    ),
    "gpu": SweepPreset(
        name="gpu",
        description="A 4-layer, d_model 256 tiny model, budget 256 completions per step, "
                    "5 seeds x 600 steps in the three regimes; CUDA when present.",
        config=_TINY.with_overrides(
            steps=600, max_train_prompts=2000, eval_samples=8, eval_every=20 * 256,
            device="auto",
            warmstart=WarmStartConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS),
                                      steps=1500, n_layer=4, n_embd=256, n_head=8)),
        seeds=[0, 1, 2, 3, 4],
        regimes=[Regime("mixed", [1, 2, 3], budget=256), Regime("hard", [3], budget=256),
                 Regime("hard-fixed-prompts", [3], mode="prompts", prompts_per_step=16,
                        overrides={"eval_every": 1280})],
        torch_threads=None,
    ),
}


def _gpu_smollm2() -> SweepPreset:
    """SmolLM2-135M-Instruct on word problems; values from models.smollm2 (no torch import)."""
    from grpolab.models import smollm2

    h = dict(smollm2.GPU_SMOLLM2_HPARAMS)
    difficulties = list(h.pop("train_difficulties"))
    return SweepPreset(
        name="gpu-smollm2",
        description="SmolLM2-135M-Instruct (offline, full fine-tune) on word problems, G in "
                    "2 4 8 16 x 1 seed x 100 steps at 64 completions per step; sized for "
                    "<= 15 minutes on one modern GPU (not yet run on a GPU).",
        config=GRPOConfig(**h, task_kwargs=dict(smollm2.GPU_SMOLLM2_TASK_KWARGS),
                          census_samples=16, device="auto"),
        group_sizes=list(smollm2.GPU_SMOLLM2_GROUP_SIZES), seeds=list(smollm2.GPU_SMOLLM2_SEEDS),
        regimes=[Regime("mixed", difficulties, budget=smollm2.GPU_SMOLLM2_BUDGET)],
        noise_batches=4, torch_threads=None,
    )


PRESETS["gpu-smollm2"] = _gpu_smollm2()

_SWEEP_FIELDS = {f.name for f in fields(SweepPreset)} - {"config"}
_CONFIG_FIELDS = {f.name for f in fields(GRPOConfig)}


def get_preset(name: str, **overrides) -> SweepPreset:
    """A copy of preset ``name`` with ``overrides`` applied: sweep fields (group_sizes,
    seeds, regimes, noise_batches, torch_threads) to the preset, GRPOConfig fields (steps,
    learning_rate, warmstart, backend, device, ...) to its base config. None means "keep"."""
    if name not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}; got {name!r}")
    overrides = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(overrides) - _SWEEP_FIELDS - _CONFIG_FIELDS
    if unknown:
        raise ValueError(f"unknown preset overrides: {', '.join(sorted(unknown))}")
    base = PRESETS[name]
    config = base.config.with_overrides(
        **{k: v for k, v in overrides.items() if k in _CONFIG_FIELDS}).validate()
    preset = replace(base, config=config,
                     **{k: v for k, v in overrides.items() if k in _SWEEP_FIELDS})
    for G in preset.group_sizes:
        if isinstance(G, bool) or not isinstance(G, int) or G < 2:
            raise ValueError(f"--G values must be integers >= 2, got {G!r}")
    if len(set(preset.group_sizes)) != len(preset.group_sizes):
        raise ValueError(f"--G lists a value twice: {preset.group_sizes}")
    if not preset.seeds:
        raise ValueError("--seeds must name at least one seed")
    if len(set(preset.seeds)) != len(preset.seeds):
        raise ValueError(f"--seeds lists a seed twice: {preset.seeds}")
    for s in preset.seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= 2**32 - 1:
            raise ValueError(f"--seeds must be integers in [0, {2**32 - 1}], got {s!r}")
    if not preset.regimes:
        raise ValueError("--regimes must name at least one regime")
    if len({r.name for r in preset.regimes}) != len(preset.regimes):
        raise ValueError("--regimes lists a regime twice")
    if isinstance(preset.noise_batches, bool) or not isinstance(preset.noise_batches, int) or \
            not 0 <= preset.noise_batches <= 4096:
        raise ValueError(f"noise_batches must be an integer in [0, 4096], got "
                         f"{preset.noise_batches!r}")
    for r in preset.regimes:
        if r.mode not in ("budget", "prompts"):
            raise ValueError(f"--mode must be 'budget' or 'prompts', got {r.mode!r}")
        for name in ("budget", "prompts_per_step"):
            v = getattr(r, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be an integer >= 1, "
                                 f"got {v!r}")
        if r.mode == "budget" and r.budget > MAX_COMPLETIONS_PER_STEP:
            raise ValueError(f"--budget {r.budget} completions per step: a step holds them all "
                             f"in memory, so at most {MAX_COMPLETIONS_PER_STEP} are allowed")
        for G in preset.group_sizes:
            preset.run_config(r, G, preset.seeds[0])
    return preset
