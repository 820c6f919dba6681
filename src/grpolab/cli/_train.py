"""``grpolab lab train``: one GRPO run, from a preset or from GRPOConfig's defaults.

    grpolab lab train --preset cpu-quick --G 8 --seed 0 --out runs/G8
    grpolab lab train --preset gpu-smollm2 --backend trl --G 16 --seed 0 --out runs/trl-G16
    accelerate launch --num_processes 8 -m grpolab lab train \\
        --preset gpu-smollm2 --backend trl --G 16 --seed 0 --out runs/trl-G16

Every :class:`grpolab.grpo.config.GRPOConfig` field is a flag (``--help`` lists them with
their docstrings); a flag given overrides the preset. Either backend runs the same config;
the TRL backend refuses, in one line, the fields it does not implement (``--eval-at``, ...).
A finished run (``OUT/summary.json`` of the same config) is not trained again.
"""

from __future__ import annotations

import argparse

from grpolab.cli._config_args import add_config_arguments, config_overrides
from grpolab.grpo.config import RULES, GRPOConfig, apply_overrides, check_field

__all__ = ["register", "preset_run_config", "run_train"]


def register(lab_sub) -> None:
    """Add ``train`` to the ``grpolab lab`` subcommands."""
    p = lab_sub.add_parser(
        "train", help="one GRPO run (either backend), from a preset",
        description="One GRPO run: the config of one (regime, G, seed) run of a sweep preset, "
        "or GRPOConfig's defaults without --preset, with any field overridden by its flag. "
        "Writes OUT/log.jsonl and OUT/summary.json; a finished run is not trained again. "
        "Works under 'accelerate launch -m grpolab lab train ...' for several GPUs (TRL "
        "backend).")
    p.add_argument("--out", required=True, help="output directory of the run")
    p.add_argument("--preset", default=None,
                   help="start from this sweep preset (see 'grpolab lab presets'); "
                   "default: GRPOConfig's defaults")
    p.add_argument("--regime", default=None,
                   help="which regime of the preset (default: its first)")
    p.add_argument("--config", default=None, metavar="JSON_FILE",
                   help="GRPOConfig fields from a JSON file, over the preset and under the "
                   "flags; a run's summary.json works too (its 'config'), to rerun it")
    p.add_argument("--cache", default=None, help="warm-start cache directory (default: OUT/cache)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: torch's)")
    p.add_argument("--use-vllm", action="store_true",
                   help="TRL backend: generate with vLLM, colocated (needs `pip install vllm`)")
    p.add_argument("--lora-r", type=int, default=0,
                   help="TRL backend: train a LoRA adapter of this rank (0 = full fine-tune)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_config_arguments(
        p, GRPOConfig(), aliases={"num_generations": ["--G"]},
        description="Every field of the one config. Unset flags keep the preset's value; the "
        "defaults shown are GRPOConfig's own, used where no preset sets the field. Without "
        "--prompts-per-step, a preset's regime sets it (budget / G in budget mode).")
    p.set_defaults(func=run_train)


def preset_run_config(name: str | None, overrides: dict | None = None,
                      regime: str | None = None) -> GRPOConfig:
    """The validated :class:`GRPOConfig` of one run: preset ``name`` (or GRPOConfig's
    defaults when None) with ``overrides`` (GRPOConfig fields) applied.

    A preset's run is the one a sweep of it would make for the override's G and seed
    (:meth:`.SweepPreset.run_config`), in ``regime`` (default: the preset's first); the
    other overrides are applied over it.
    """
    overrides = dict(overrides or {})
    if name is None:
        if regime is not None:
            raise ValueError("--regime needs --preset")
        return apply_overrides(GRPOConfig(), overrides)
    from dataclasses import replace

    from grpolab.labs.sweep.presets import get_preset

    preset = get_preset(name)
    regimes = {r.name: r for r in preset.regimes}
    if regime is not None and regime not in regimes:
        raise ValueError(f"--regime: {regime!r} is not a regime of {name} "
                         f"({', '.join(regimes)})")
    chosen = regimes[regime] if regime is not None else preset.regimes[0]
    G = overrides.pop("num_generations", GRPOConfig.num_generations)
    check_field("num_generations", G, RULES["num_generations"])  # before G divides a budget
    seed = overrides.pop("seed", GRPOConfig.seed)
    if "prompts_per_step" in overrides:  # a fixed number of prompts, whatever G is
        chosen = replace(chosen, mode="prompts", prompts_per_step=overrides.pop("prompts_per_step"))
    try:
        base = preset.run_config(chosen, G, seed)
    except ValueError as exc:
        if "not a multiple" not in str(exc):  # a bound of its own, already naming its flag
            raise
        raise ValueError(f"--G {G}: {exc} (regime {chosen.name} of {name}); set "
                         "--prompts-per-step or pick a G that divides it") from None
    return apply_overrides(base, overrides)


def _config_file(path: str | None) -> dict:
    """The GRPOConfig fields in a JSON file (a plain object, or a summary.json's 'config'),
    through the checked reader (a regular file of at most 16 MiB, bounded nesting and
    integers); a missing file is a FileNotFoundError, one line from main."""
    if path is None:
        return {}
    from grpolab._files import read_json

    data = read_json(path, "a JSON object of GRPOConfig fields (--config)", expect=None,
                     max_bytes=16 * 2**20, remedy="pass a JSON object of GRPOConfig fields, "
                     "or a run's summary.json")
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: expected a JSON object of GRPOConfig fields")
    return data


def run_train(args: argparse.Namespace) -> int:
    """Lock ``--out`` first (a second writer is refused at once, naming the first), build
    the config, run it on its backend, print one line of results."""
    import contextlib

    from grpolab.cli._checks import CLIError, check_out_dir, check_threads
    from grpolab.grpo.records import output_lock

    check_out_dir(args.out, kind="run")
    check_out_dir(args.cache, "--cache")
    check_threads(args.threads)
    if args.lora_r < 0:
        raise CLIError(f"--lora-r must be >= 0, got {args.lora_r}")
    from grpolab.models.device import is_main_process

    # the command's one lock: under 'accelerate launch' only the main process writes
    is_main = is_main_process()  # a stray RANK: refused in one line, not silently unlocked
    with output_lock(args.out) if is_main else contextlib.nullcontext():
        return _train_locked(args, is_main)


def _train_locked(args: argparse.Namespace, is_main: bool) -> int:
    from grpolab.grpo.records import finished_run
    from grpolab.models.device import check_device

    overrides = {**_config_file(args.config), **config_overrides(args)}
    config = preset_run_config(args.preset, overrides, regime=args.regime)
    from grpolab.cli._checks import check_model_cache

    check_model_cache(config.model)  # an unwritable SmolLM2 cache: before torch
    if config.task != "word_problems":  # word problems load SmolLM2's tokenizer to render
        config.validate_prompts()
    check_device(config.device)
    if args.threads is not None:
        import torch

        # before any key is computed: the warm start's key holds the thread count, so the
        # finished-run check of a rerun must see the threads the run was trained with
        torch.set_num_threads(args.threads)
    summary = finished_run(args.out, config, what="a run summary (grpolab lab train)")
    if summary is not None:
        if is_main:
            print(f"{args.out} holds a finished run of this config; not training again")
    else:
        from grpolab.grpo.backends import train

        summary = train(config, args.out, cache_dir=args.cache, progress=not args.quiet,
                        use_vllm=args.use_vllm, lora_r=args.lora_r)
    if is_main:
        s = summary
        print(f"G={s['G']} seed={s['seed']} ({s.get('backend', config.backend)}): greedy "
              f"accuracy {s['initial_accuracy']:.3f} -> {s['final_accuracy']:.3f}; "
              f"zero-variance groups observed {_fmt(s['zero_variance_observed'])}, "
              f"predicted {_fmt(s['zero_variance_predicted'])}; {s['seconds']:.0f} s; "
              f"{args.out}/summary.json")
    return 0


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"
