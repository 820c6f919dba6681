"""Named configurations of the G sweep (``grpolab lab sweep --preset NAME``).

A sweep trains from one warm start for every (regime, G, seed). A *regime* fixes which
training prompts GRPO sees and how a step's completions are budgeted:

- ``mixed``: difficulties 1–3, a spread of pass rates (the usual case);
- ``hard``: difficulty 3 only, where the warm start passes about a quarter of the time and
  many prompts almost never, so small groups are mostly all-wrong;
- ``hard-fixed-prompts``: as ``hard`` but with a fixed number of prompts per step, so a
  step with larger G costs more completions; here small G starves learning *per step*
  (most groups all wrong), and the per-completion view shows what that saving costs.

``mode="budget"`` keeps completions per step fixed (prompts per step = budget / G);
``mode="prompts"`` keeps prompts per step fixed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from grpolab.models.warmstart import WarmStartConfig

__all__ = ["Regime", "SweepPreset", "PRESETS", "get_preset"]

# The task every preset shares: sums of 1- to 4-digit numbers. The warm start sees all
# four levels; the regimes train and evaluate on levels 1-3 (mixed) or 3 (hard).
TASK_KWARGS = {"digits": [1, 2, 3, 4], "operands": [2], "ops": "+", "n_train": 2000,
               "n_eval": 400, "seed": 0}


@dataclass
class Regime:
    """Which prompts GRPO trains on and how a step is budgeted."""

    name: str
    train_difficulties: list[int]
    mode: str = "budget"  # "budget": completions per step fixed; "prompts": prompts fixed
    budget: int = 64  # completions per step (mode="budget")
    prompts_per_step: int = 4  # mode="prompts"

    def prompts_for(self, G: int) -> int:
        """Prompts per step at group size G."""
        if self.mode == "budget":
            if self.budget % G:
                raise ValueError(f"budget {self.budget} is not a multiple of G={G}")
            return self.budget // G
        return self.prompts_per_step


@dataclass
class SweepPreset:
    """Everything a sweep needs; the CLI can override steps, seeds, G list, mode, budget."""

    name: str
    description: str
    group_sizes: list[int] = field(default_factory=lambda: [2, 4, 8, 16, 32])
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    steps: int = 100
    regimes: list[Regime] = field(default_factory=lambda: [Regime("mixed", [1, 2, 3])])
    task: str = "arithmetic"
    task_kwargs: dict = field(default_factory=lambda: dict(TASK_KWARGS))
    warmstart: WarmStartConfig = field(default_factory=lambda: WarmStartConfig(
        task="arithmetic", task_kwargs=dict(TASK_KWARGS), steps=700))
    model: str = "tiny"
    learning_rate: float = 5e-5
    max_grad_norm: float = 1.0
    beta: float = 0.0
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    max_train_prompts: int = 500
    eval_every: int = 20
    eval_samples: int = 4
    noise_batches: int = 16  # independent batches per G for the gradient-noise measurement
    device: str = "cpu"
    backend: str = "grpolab"  # "grpolab" (train.py's loop) or "trl" (grpolab.grpo.trl_backend)
    temperature: float = 1.0
    top_p: float = 1.0
    max_completion_length: int = 6
    torch_threads: int | None = 1  # CPU threads for torch; 1 is kind to a shared machine

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, SweepPreset] = {
    "cpu-quick": SweepPreset(
        name="cpu-quick",
        description="5 G values x 2 seeds x 100 steps, fixed budget of 64 completions per "
                    "step, one regime; minutes on 2 CPU cores including the warm start.",
    ),
    "cpu-full": SweepPreset(
        name="cpu-full",
        description="5 G values x 3 seeds x 100 steps in three regimes (mixed and hard at a "
                    "fixed budget of 64 completions per step; hard at 4 prompts per step); "
                    "about half an hour on 2 CPU cores.",
        seeds=[0, 1, 2],
        regimes=[Regime("mixed", [1, 2, 3]), Regime("hard", [3]),
                 Regime("hard-fixed-prompts", [3], mode="prompts", prompts_per_step=4)],
    ),
    "gpu": SweepPreset(
        name="gpu",
        description="A 4-layer, d_model 256 tiny model, budget 256 completions per step, "
                    "5 seeds x 600 steps in the three regimes; CUDA when present.",
        seeds=[0, 1, 2, 3, 4],
        steps=600,
        regimes=[Regime("mixed", [1, 2, 3], budget=256), Regime("hard", [3], budget=256),
                 Regime("hard-fixed-prompts", [3], mode="prompts", prompts_per_step=16)],
        warmstart=WarmStartConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS), steps=1500,
                                  n_layer=4, n_embd=256, n_head=8),
        max_train_prompts=2000,
        eval_samples=8,
        device="auto",
        torch_threads=None,
    ),
}


def _gpu_smollm2() -> SweepPreset:
    """SmolLM2-135M-Instruct on word problems; values from models.smollm2 (no torch import)."""
    from grpolab.models import smollm2

    h = smollm2.GPU_SMOLLM2_HPARAMS
    return SweepPreset(
        name="gpu-smollm2",
        description="SmolLM2-135M-Instruct (offline, full fine-tune) on word problems, G in "
                    "2 4 8 16 x 1 seed x 100 steps at 64 completions per step; sized for "
                    "<= 15 minutes on one modern GPU (not yet run on a GPU).",
        group_sizes=list(smollm2.GPU_SMOLLM2_GROUP_SIZES), seeds=list(smollm2.GPU_SMOLLM2_SEEDS),
        steps=h["steps"], regimes=[Regime("mixed", list(h["train_difficulties"]),
                                          budget=smollm2.GPU_SMOLLM2_BUDGET)],
        task=h["task"], task_kwargs=dict(smollm2.GPU_SMOLLM2_TASK_KWARGS), model=h["model"],
        learning_rate=h["learning_rate"], max_grad_norm=h["max_grad_norm"], beta=h["beta"],
        loss_type=h["loss_type"], scale_rewards=h["scale_rewards"],
        max_train_prompts=h["max_train_prompts"], eval_every=h["eval_every"],
        eval_samples=h["eval_samples"], noise_batches=4, device="auto",
        temperature=h["temperature"], top_p=h["top_p"],
        max_completion_length=h["max_completion_length"],
    )


PRESETS["gpu-smollm2"] = _gpu_smollm2()


def get_preset(name: str, **overrides) -> SweepPreset:
    """A copy of preset ``name`` with ``overrides`` (fields of :class:`SweepPreset`) applied."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}; got {name!r}")
    preset = replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})
    for G in preset.group_sizes:
        if isinstance(G, bool) or not isinstance(G, int) or G < 2:
            raise ValueError(f"group sizes must be integers >= 2, got {G!r}")
    if not preset.seeds:
        raise ValueError("seeds must name at least one seed")
    if isinstance(preset.steps, bool) or not isinstance(preset.steps, int) or preset.steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {preset.steps!r}")
    for r in preset.regimes:
        if r.mode not in ("budget", "prompts"):
            raise ValueError(f"mode must be 'budget' or 'prompts', got {r.mode!r}")
        for G in preset.group_sizes:
            r.prompts_for(G)
    return preset
