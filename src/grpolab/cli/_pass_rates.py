"""``grpolab lab pass-rates``: measure a model's per-prompt pass rates p (resumable).

    grpolab lab pass-rates --out labs/results/smollm2-pass-rates
    grpolab lab pass-rates --dataset prompts.jsonl --reward my_reward.py:reward \
        --model PATH --out runs/my-pass-rates        # your prompts, your verifier

``--dataset``/``--reward`` are the ``jsonl`` task of :mod:`grpolab.tasks.custom` (its
docstring says what a line holds and what the reward function is called with).

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
                   help=f"'smollm2', 'tiny' (the embedded model, warm-started into OUT/cache), "
                   f"a hub id or a local path (default: {d.model})")
    p.add_argument("--dataset", metavar="FILE.jsonl",
                   help="your prompts instead of SmolLM2's word problems: one JSON object per "
                   "line with a \"prompt\" and optional \"prompt_id\", \"answer\", "
                   "\"difficulty\" and fields of yours (needs --reward)")
    p.add_argument("--reward", metavar="MODULE:FUNCTION",
                   help="your verifier for --dataset: MODULE:FUNCTION (importable from here) or "
                   "path/to/file.py:FUNCTION, called as reward(prompt, completion, **fields) "
                   "and returning a number in [0, 1]; above 0.5 counts as a pass")
    p.add_argument("--prompts-per-level", type=int, default=None,
                   help=f"prompts per difficulty level (default: {d.prompts_per_level}; with "
                   "--dataset every prompt)")
    p.add_argument("--samples", type=int, default=d.samples,
                   help=f"n completions per prompt (default: {d.samples})")
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens,
                   help=f"new tokens per completion (default: {d.max_new_tokens})")
    p.add_argument("--temperature", type=float, default=d.temperature,
                   help=f"sampling temperature (default: {d.temperature})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed (default: {d.seed})")
    p.add_argument("--split", default=None, choices=("eval", "train", "all"),
                   help=f"which split's prompts (default: {d.split}; with --dataset all)")
    p.add_argument("--device", default=None, help="cpu, cuda (default: CUDA when available)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
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
    task = _dataset_task(args)  # your files: one line naming what is wrong, before any work
    d = PassRateConfig()
    with output_lock(args.out):  # first: a second measurement on OUT is refused at once
        check_device(args.device)
        config = PassRateConfig(
            model=args.model, samples=args.samples, max_new_tokens=args.max_new_tokens,
            temperature=args.temperature, seed=args.seed, **task,
            prompts_per_level=(args.prompts_per_level if args.prompts_per_level is not None
                               else None if task else d.prompts_per_level),
            split=args.split or ("all" if task else d.split),
            # the held-out-half check needs G <= samples / 2: drop the G that do not fit
            check_Gs=tuple(G for G in d.check_Gs if G <= args.samples // 2)).validate()
        import torch

        torch.set_num_threads(args.threads)
        result = measure_pass_rates(config, args.out, device=args.device,
                                    progress=not args.quiet)
    s = result["summary"]
    print(f"{s['prompts']} prompts x {s['samples']} samples in {s['seconds']:.0f} s: "
          f"mean pass rate {s['pass_rate_mean']:.3f}, never solved {s['fraction_never']:.2f}, "
          f"always solved {s['fraction_always']:.2f}")
    for c in s["check"]:
        print(f"  G={c['G']:>2}: observed zero-variance {c['observed']:.3f} "
              f"(held-out half, {c['groups']} groups), predicted {c['predicted_unbiased']:.3f} "
              f"(unbiased) / {c['predicted_plug_in']:.3f} (plug-in)")
    return 0


def _dataset_task(args: argparse.Namespace) -> dict:
    """``task``/``task_kwargs`` of ``--dataset FILE --reward MODULE:FUNCTION`` (none when
    neither is given); reads the file and imports the function now, so a bad line or a name
    that does not import is one line naming it before the model loads."""
    if args.dataset is None and args.reward is None:
        return {}
    if args.dataset is None or args.reward is None:
        raise ValueError("--dataset and --reward go together: your prompts and the function "
                         "that scores them")
    from grpolab.tasks.custom import load_callable, read_prompts

    load_callable(args.reward, "--reward")
    read_prompts(args.dataset, "--dataset")
    return {"task": "jsonl", "task_kwargs": {"path": args.dataset, "reward": args.reward}}
