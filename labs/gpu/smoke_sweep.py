"""``grpolab lab sweep``, shrunk to a CPU smoke size: the check behind ``run.sh --smoke``.

    python labs/gpu/smoke_sweep.py --preset gpu --out DIR --G 2 --seeds 0 --steps 2 ...

Takes exactly the flags of ``grpolab lab sweep`` (they go through the CLI's own parser and
``build_preset``, so a flag that the GPU run uses and the CLI no longer has fails here too),
then shrinks what the sweep command has no flag for: the number of training and evaluation
prompts, the samples per evaluation and census, the gradient-noise batches and the completion
length. Everything else (model architecture, backend, the sweep's code path) is the preset's.
The full GPU run in ``run.sh`` calls ``grpolab lab sweep`` itself with the same flags.
"""

from __future__ import annotations

import sys
from dataclasses import replace

#: GRPOConfig fields the sweep CLI cannot set, at the smallest size that still runs every
#: stage (warm start, census, gradient noise, training steps, evaluation, summary, plots).
SMOKE_CONFIG = {"max_train_prompts": 2, "max_eval_prompts": 2, "eval_samples": 1}
SMOKE_MAX_COMPLETION_LENGTH = 8  # SmolLM2's answers need a few tokens; 48 is the preset's
SMOKE_NOISE_BATCHES = 2  # the fewest that give a variance


def shrink(preset):
    """``preset`` at smoke size (see :data:`SMOKE_CONFIG`)."""
    over = dict(SMOKE_CONFIG)
    if preset.config.max_completion_length > SMOKE_MAX_COMPLETION_LENGTH:
        over["max_completion_length"] = SMOKE_MAX_COMPLETION_LENGTH
    kwargs = dict(preset.config.task_kwargs)
    if "n_train" in kwargs:  # fewer generated problems: the task is built faster
        kwargs.update(n_train=min(kwargs["n_train"], 64), n_eval=min(kwargs["n_eval"], 16))
    over["task_kwargs"] = kwargs
    config = preset.config.with_overrides(**over).validate()
    return replace(preset, config=config, noise_batches=SMOKE_NOISE_BATCHES)


def main(argv: list[str] | None = None) -> int:
    from grpolab.cli.lab import build_preset
    from grpolab.cli.main import build_parser

    args = build_parser().parse_args(["lab", "sweep", *(sys.argv[1:] if argv is None else argv)])
    try:
        preset = shrink(build_preset(args))
        from grpolab.labs.sweep.run import run_sweep

        summary = run_sweep(preset, args.out, progress=not args.quiet, plots=not args.no_plots)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"smoke sweep {preset.name} ({preset.config.backend}): "
          f"{summary['runs_finished']}/{summary['runs_planned']} runs finished in {args.out}")
    return 0 if summary["runs_finished"] == summary["runs_planned"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
