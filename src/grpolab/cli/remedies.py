"""``grpolab remedies``: run one remedy lab, e.g. ``grpolab remedies --item dynamic-sampling``.

Each item trains the tiny model from the shared warm start for every arm × seed at a fixed
budget of completions (grpolab.labs.remedies.items.ITEMS), resumably, and writes small results and a
plot. ``--list`` prints the items and their arms.
"""

from __future__ import annotations

import argparse
import os

from grpolab.cli._config_args import add_config_arguments, config_overrides
from grpolab.cli._parsers import add_command

ITEM_NAMES = ("dynamic-sampling", "difficulty", "adaptive-g", "temperature", "beta", "rewards",
              "length-bias", "prompts-x-g", "allocation")
REMEDY_PREFIX = "remedy."


#: ``grpolab remedies``: its line in the command list, and its ``--help``.
HELP = "run a remedy / interaction lab (dynamic sampling, difficulty, adaptive G, ...)"
DESCRIPTION = """\
Train the tiny model with GRPO plus one remedy or knob for every arm and seed of a lab item,
at a fixed budget of completions. Resumable: finished runs are skipped. Writes
DIR/results.json (per-arm means and seed spreads) and plots. The flags after the first group
are fields of the remedy (Remedy) and of GRPOConfig, applied to every arm; a field the
item's arms vary is refused.
"""  # argparse joins the lines into one paragraph


def register(sub) -> None:
    p = add_command(sub, "remedies", HELP, DESCRIPTION)
    p.add_argument("--item", choices=ITEM_NAMES, help="which lab to run")
    p.add_argument("--out", default=None, help="output directory (default: runs/remedies/ITEM)")
    p.add_argument("--seeds", type=int, nargs="+", default=None, metavar="S",
                   help="seeds (default: the item's, 0 1 2)")
    p.add_argument("--arms", nargs="+", default=None, metavar="ARM",
                   help="run only these arms (default: all)")
    p.add_argument("--cache", default=None, help="warm-start cache directory (default: OUT/cache)")
    p.add_argument("--pool", default=None, metavar="DIR",
                   help="finished runs by config, copied instead of retrained; name one folder "
                   "for several items to share their identical runs (default: OUT/_pool)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    p.add_argument("--no-plots", action="store_true", help="skip the plots")
    p.add_argument("--publish", default=None, metavar="DIR",
                   help="also copy results.json and the plots to DIR "
                        "(e.g. labs/results/remedies/ITEM)")
    p.add_argument("--list", action="store_true", help="list the items and their arms, then exit")
    from grpolab.cli.lab import add_worker_arguments

    add_worker_arguments(p)
    from grpolab.labs.remedies.remedy import REMEDY_BASE, Remedy

    add_config_arguments(p, Remedy(), prefix=REMEDY_PREFIX,
                         title="the remedy (grpolab.labs.remedies.remedy.Remedy)")
    add_config_arguments(p, REMEDY_BASE, exclude=("seed",),
                         aliases={"completion_budget": ["--budget"]},
                         description="Defaults shown are the remedy labs' base config "
                         "(grpolab.labs.remedies.remedy.REMEDY_BASE).")
    p.set_defaults(func=run_remedies_cmd)


def run_remedies_cmd(args: argparse.Namespace) -> int:
    from grpolab.cli._checks import CLIError

    if args.list:
        from grpolab.labs.remedies.items import ITEMS

        for name, item in ITEMS.items():
            print(f"{name}: {item.title}\n  arms: {', '.join(item.arms)}")
        return 0
    if not args.item:
        raise CLIError("--item is required (or --list)")
    from grpolab.cli._checks import check_distinct, check_out_dir, check_threads

    out = args.out or f"runs/remedies/{args.item}"
    check_out_dir(out, kind="remedies")
    check_out_dir(args.cache, "--cache")
    check_out_dir(args.pool, "--pool")
    check_out_dir(args.publish, "--publish", kind="remedies")
    check_threads(args.threads)
    check_distinct(args.seeds, "--seeds")
    check_distinct(args.arms, "--arms")
    from grpolab._paths import check_no_links

    # the pool's runs are copied into OUT: none may be a link out of the pool
    check_no_links(args.pool or os.path.join(out, "_pool"), "--pool")
    from grpolab.cli.lab import check_workers
    from grpolab.labs.runner import Runner

    check_workers(args)
    with Runner(out) as runner:  # first: a second runner on OUT is refused at once
        return _run_locked(args, runner)


def _run_locked(args: argparse.Namespace, runner) -> int:
    import torch

    from grpolab.labs.remedies.items import run_item
    from grpolab.labs.remedies.remedy import Remedy

    out = runner.out
    torch.set_num_threads(args.threads)
    overrides = {**config_overrides(args, Remedy, REMEDY_PREFIX), **config_overrides(args)}
    results = run_item(args.item, runner, seeds=args.seeds, arms=args.arms, overrides=overrides,
                       cache_dir=args.cache, pool_dir=args.pool,
                       workers=args.workers,
                       executor=args.executor, address=args.ray_address,
                       plots=not args.no_plots, publish=args.publish)
    for arm, r in results["results"].items():
        acc = r["final_accuracy"]
        sd = f" ± {acc['sd']:.3f}" if acc.get("sd") is not None else ""
        print(f"{arm:>22}: final accuracy {acc['mean']:.3f}{sd} (n={acc['n']}), "
              f"informative groups per 1k completions "
              f"{r['informative_per_1k_completions']['mean']:.1f}")
    print(f"results: {out}/results.json")
    return 0
