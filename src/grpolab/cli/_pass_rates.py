"""``grpolab lab pass-rates``: measure a model's per-prompt pass rates p (resumable).

    grpolab lab pass-rates --out labs/results/smollm2-pass-rates

The measurement itself is :func:`grpolab.labs.pass_rates.measure_pass_rates`; this module is its
command line.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run_pass_rates"]


def register(lab_sub) -> None:
    """Add ``pass-rates`` to the ``grpolab lab`` subcommands."""
    from grpolab.labs.pass_rates import PassRateConfig

    d = PassRateConfig()
    p = lab_sub.add_parser(
        "pass-rates", help="measure per-prompt pass rates p and check p^G + (1-p)^G",
        description="Sample n completions per prompt, estimate each prompt's pass rate from "
        "one half and check the predicted zero-variance fraction p^G + (1-p)^G on the other. "
        "Writes OUT/pass_rates.json and plots; rerun the same command to resume.")
    p.add_argument("--out", required=True, help="output directory (resumable)")
    p.add_argument("--model", default=d.model,
                   help=f"'smollm2', a hub id or a local path (default: {d.model})")
    p.add_argument("--prompts-per-level", type=int, default=d.prompts_per_level,
                   help=f"prompts per difficulty level (default: {d.prompts_per_level})")
    p.add_argument("--samples", type=int, default=d.samples,
                   help=f"n completions per prompt (default: {d.samples})")
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens,
                   help=f"new tokens per completion (default: {d.max_new_tokens})")
    p.add_argument("--temperature", type=float, default=d.temperature,
                   help=f"sampling temperature (default: {d.temperature})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed (default: {d.seed})")
    p.add_argument("--split", default=d.split, choices=("eval", "train"),
                   help=f"which split's prompts (default: {d.split})")
    p.add_argument("--device", default=None, help="cpu, cuda (default: CUDA when available)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    p.set_defaults(func=run_pass_rates)


def run_pass_rates(args: argparse.Namespace) -> int:
    """Measure, save JSON and plots, print a summary."""
    from grpolab.cli._checks import check_out_dir, check_threads
    from grpolab.grpo.records import output_lock
    from grpolab.labs.pass_rates import PassRateConfig, measure_pass_rates
    from grpolab.models.device import check_device

    check_out_dir(args.out, kind="pass-rates")
    from grpolab.grpo.fields import check_temperature

    check_temperature(args.temperature)  # the sweep's bound, before torch and the model
    from grpolab.cli._checks import check_model_cache

    check_model_cache(args.model)  # an unwritable SmolLM2 cache: before torch
    check_threads(args.threads)
    with output_lock(args.out):  # first: a second measurement on OUT is refused at once
        check_device(args.device)
        config = PassRateConfig(model=args.model, prompts_per_level=args.prompts_per_level,
                                samples=args.samples, max_new_tokens=args.max_new_tokens,
                                temperature=args.temperature, seed=args.seed,
                                split=args.split).validate()
        import torch

        torch.set_num_threads(args.threads)
        result = measure_pass_rates(config, args.out, device=args.device)
    s = result["summary"]
    print(f"{s['prompts']} prompts x {s['samples']} samples in {s['seconds']:.0f} s: "
          f"mean pass rate {s['pass_rate_mean']:.3f}, never solved {s['fraction_never']:.2f}, "
          f"always solved {s['fraction_always']:.2f}")
    for c in s["check"]:
        print(f"  G={c['G']:>2}: observed zero-variance {c['observed']:.3f} "
              f"(held-out half, {c['groups']} groups), predicted {c['predicted_unbiased']:.3f} "
              f"(unbiased) / {c['predicted_plug_in']:.3f} (plug-in)")
    return 0
