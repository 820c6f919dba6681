"""``grpolab lab sweep``, shrunk to a CPU smoke size: the check behind ``run.sh --smoke``.

    python labs/gpu/smoke_sweep.py --preset gpu --out DIR --G 2 --seeds 0 --steps 2 ...

Takes exactly the flags of ``grpolab lab sweep`` (they go through the CLI's own parser and
``build_preset``, so a flag that the GPU run uses and the CLI no longer has fails here too),
then shrinks what the sweep command has no flag for: the number of training and evaluation
prompts, the samples per evaluation, the gradient-noise batches and the completion length.
Everything else (model architecture, backend, the sweep's code path) is the preset's.
The full GPU run in ``run.sh`` calls ``grpolab lab sweep`` itself with the same flags.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from grpolab.grpo.config import apply_overrides

#: GRPOConfig fields the sweep CLI cannot set, at the smallest size that still runs every
#: stage (warm start, census, gradient noise, training steps, evaluation, summary, plots).
SMOKE_CONFIG = {"max_train_prompts": 2, "max_eval_prompts": 2, "eval_samples": 1}
SMOKE_MAX_COMPLETION_LENGTH = 8  # SmolLM2's answers need a few tokens; 48 is the preset's
#: Gradient-noise batches: the fewest that give a variance, on the tiny model. On SmolLM2 the
#: measurement is skipped (0): each batch is a full backward pass of 135M parameters, a third
#: of the smoke's time on a shared CPU, and the code is the one the tiny part just ran.
SMOKE_NOISE_BATCHES = {"tiny": 2}


def shrink(preset):
    """``preset`` at smoke size (see :data:`SMOKE_CONFIG`)."""
    over = dict(SMOKE_CONFIG)
    if preset.config.max_completion_length > SMOKE_MAX_COMPLETION_LENGTH:
        over["max_completion_length"] = SMOKE_MAX_COMPLETION_LENGTH
    kwargs = dict(preset.config.task_kwargs)
    if "n_train" in kwargs:  # fewer generated problems: the task is built faster
        kwargs.update(n_train=min(kwargs["n_train"], 64), n_eval=min(kwargs["n_eval"], 16))
    over["task_kwargs"] = kwargs
    config = apply_overrides(preset.config, over)
    return replace(preset, config=config,
                   noise_batches=SMOKE_NOISE_BATCHES.get(preset.config.model, 0))


def main(argv: list[str] | None = None) -> int:
    """``--validate-only`` (first): build the preset from the flags at full size and print its
    size, without running anything (``run.sh`` checks its GPU-mode flags this way)."""
    from grpolab.cli.lab import build_preset
    from grpolab.cli.main import build_parser

    argv = list(sys.argv[1:] if argv is None else argv)
    validate_only = bool(argv) and argv[0] == "--validate-only"
    args = build_parser().parse_args(["lab", "sweep", *argv[validate_only:]])
    try:
        if validate_only:
            p = build_preset(args)
            print(f"ok: grpolab lab sweep {' '.join(argv[1:])}: {len(p.regimes)} regime(s) x "
                  f"{len(p.group_sizes)} G x {len(p.seeds)} seed(s) x {p.config.steps} steps, "
                  f"backend {p.config.backend}, device {p.config.device}")
            return 0
        preset = shrink(build_preset(args))
        from grpolab.labs.sweep.sweep import run_sweep

        summary = run_sweep(preset, args.out, progress=not args.quiet, plots=not args.no_plots)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished runs are saved", file=sys.stderr)
        return 130
    print(f"smoke sweep {preset.name} ({preset.config.backend}): "
          f"{summary['runs_finished']}/{summary['runs_planned']} runs finished in {args.out}")
    return 0 if summary["runs_finished"] == summary["runs_planned"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
