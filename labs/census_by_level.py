"""The warm starts' pass rates by difficulty level: why the hard regime is 2-digit sums from
the weaker warm start.

For each warm start (the standard one of every lab, and the weaker one of the hard regime)
and each level of the arithmetic task, sample every training prompt of that level
``census_samples`` times (the labs' census, same seed) and summarise its pass rates. Writes
``labs/results/census-by-level/census_by_level.json`` and prints a Markdown table
(labs/README.md quotes it). Resumable per cell: finished cells are kept in the JSON.

    python labs/census_by_level.py --cache runs/census-cache
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np


def main() -> int:
    import torch

    from grpolab.grpo.config import apply_overrides
    from grpolab.grpo.records import provenance, write_json_atomic
    from grpolab.grpo.setup import prepare_run, starting_census
    from grpolab.labs.common import CENSUS_SEED, TASK_KWARGS, TINY_BASE, WEAK_WARMSTART_STEPS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="runs/census-cache", help="warm-start cache folder")
    ap.add_argument("--out", default="labs/results/census-by-level/census_by_level.json",
                    help="where the summary goes")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: the labs' own)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    done = json.load(open(args.out)) if os.path.isfile(args.out) else {"cells": []}
    keys = {(c["warmstart_steps"], c["level"]) for c in done["cells"]}
    for steps in (TINY_BASE.warmstart.steps, WEAK_WARMSTART_STEPS):
        for level in TASK_KWARGS["digits"]:
            if (steps, level) in keys:
                continue
            config = apply_overrides(TINY_BASE, train_difficulties=[level], census_samples=64,
                                     census_seed=CENSUS_SEED, warmstart={"steps": steps})
            setup = prepare_run(config, os.path.join(args.cache, "scratch"), args.cache)
            p = starting_census(config, setup).mean(1)
            done["cells"].append({"warmstart_steps": steps, "level": level, "prompts": int(p.size),
                                  "samples": config.census_samples, "mean": float(p.mean()),
                                  "median": float(np.median(p)),
                                  "below_0.1": float((p < 0.1).mean()),
                                  "zero": float((p == 0).mean())})
            done.update(provenance(setup.device))
            os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
            write_json_atomic(args.out, done)
            print(f"warm start {steps} steps, level {level}: mean p {p.mean():.3f}",
                  flush=True)
    print("| warm-start steps | digits | prompts | mean p | median p | share p < 0.1 "
          "| share p = 0 |")
    print("|---|---|---|---|---|---|---|")
    for c in sorted(done["cells"], key=lambda c: (-c["warmstart_steps"], c["level"])):
        print(f"| {c['warmstart_steps']} | {c['level']} | {c['prompts']} | {c['mean']:.3f} | "
              f"{c['median']:.3f} | {c['below_0.1']:.0%} | {c['zero']:.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
