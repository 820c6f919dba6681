"""``grpolab lab``: the G sweep on a real (tiny) training run, one run, pass rates.

    grpolab lab sweep --preset cpu-quick --out runs/quick     # minutes on 2 CPU cores
    grpolab lab sweep --preset cpu-full --out labs/results/cpu-full
    grpolab lab plot --out runs/quick                         # redraw the plots
    grpolab lab presets                                       # list the presets
    grpolab lab train --preset cpu-quick --G 8 --seed 0 --out runs/G8   # one run
    grpolab lab pass-rates --out labs/results/smollm2-pass-rates        # measure p

Rerunning a sweep with the same command resumes it: finished runs are skipped.
"""

from __future__ import annotations

import argparse

from grpolab.cli import _pass_rates, _train
from grpolab.cli._config_args import add_config_arguments, config_overrides
from grpolab.cli._parsers import add_command_group
from grpolab.grpo.config import GRPOConfig


def register(sub) -> None:
    lab_sub = add_command_group(sub, "lab", "GRPO labs: the G sweep on a small model",
                                "GRPO labs: train at several G from one warm start and put the "
                                "measurements next to the theory.",
                                dest="lab_command", metavar="LAB_COMMAND")

    sw = lab_sub.add_parser("sweep", help="run (or resume) a G sweep",
                            description="Run every (regime, G, seed) of a preset from one shared "
                            "warm start. Rerun the same command to resume; finished runs are "
                            "skipped. Ctrl-C is safe. Every flag below the first group is a "
                            "field of the sweep, of its regimes or of the runs' GRPOConfig, "
                            "documented by that field; an unset flag keeps the preset's value.")
    from grpolab.labs.sweep.presets import PRESETS, Regime

    # the list comes from PRESETS itself, so a new preset (cpu-compute) is never left out
    sw.add_argument("--preset", required=True, help=f"one of {', '.join(PRESETS)} (see "
                    "'grpolab lab presets')")
    sw.add_argument("--out", required=True, help="output directory")
    sw.add_argument("--regimes", nargs="+", metavar="NAME",
                    help="only these regimes of the preset (e.g. mixed hard)")
    sw.add_argument("--warmstart-steps", type=int,
                    help="supervised warm-start steps, short for --warmstart '{\"steps\": N}' "
                    "(small values are for smoke tests)")
    sw.add_argument("--no-plots", action="store_true", help="skip the plots")
    sw.add_argument("--quiet", action="store_true", help="no progress bars")
    add_worker_arguments(sw)

    add_config_arguments(sw, _sweep_defaults(), aliases={"group_sizes": ["--G"],
                                                         "torch_threads": ["--threads"]},
                         exclude=SWEEP_SET_ELSEWHERE, prefix=SWEEP_PREFIX,
                         title="the sweep (grpolab.labs.sweep.presets.SweepPreset)")
    add_config_arguments(sw, Regime("", [1]), exclude=("name", "train_difficulties", "overrides"),
                         prefix=REGIME_PREFIX, title="every regime (Regime)",
                         description="Applied to every regime run.")
    add_config_arguments(sw, GRPOConfig(), exclude=RUN_SET_BY_SWEEP,
                         description="The base config of every run; the sweep sets G, the "
                         "seed, the prompts per step and the difficulty levels of each run.")
    sw.set_defaults(func=run_sweep_cmd)

    pl = lab_sub.add_parser("plot", help="redraw the plots of a sweep directory")
    pl.add_argument("--out", required=True, help="a sweep's output directory")
    pl.set_defaults(func=run_plot_cmd)

    pr = lab_sub.add_parser("presets", help="list the sweep presets")
    pr.set_defaults(func=run_presets_cmd)

    _train.register(lab_sub)
    _pass_rates.register(lab_sub)


#: Fields the sweep's own flags or the preset set, not a flag each.
SWEEP_SET_ELSEWHERE = ("name", "description", "config", "regimes")
#: GRPOConfig fields every run of a sweep sets from its (regime, G, seed).
RUN_SET_BY_SWEEP = ("num_generations", "prompts_per_step", "seed", "train_difficulties")
SWEEP_PREFIX, REGIME_PREFIX = "sweep.", "regime."


def _sweep_defaults():
    from grpolab.labs.sweep.presets import PRESETS

    return PRESETS["cpu-quick"]


def _refuse_idle_flags(regime_over: dict, regimes) -> None:
    """``--budget`` counts only in budget mode, ``--prompts-per-step`` only in prompts
    mode: a flag that would be ignored by a regime is refused, not silently dropped."""
    for name, mode in (("budget", "budget"), ("prompts_per_step", "prompts")):
        flag = "--" + name.replace("_", "-")
        idle = [r.name for r in regimes if r.mode != mode]
        if name in regime_over and idle:
            other = "--prompts-per-step" if mode == "budget" else "--budget"
            raise ValueError(f"{flag} does nothing in {'prompts' if mode == 'budget' else 'budget'}"
                             f" mode (regime {', '.join(idle)}): use {other} there, "
                             f"--mode {mode}, or --regimes without {', '.join(idle)}")


def build_preset(args: argparse.Namespace):
    """The preset named by ``args.preset`` with the command-line overrides applied (every
    check in the dataclasses' own ``validate``)."""
    from dataclasses import replace

    from grpolab.cli._checks import check_out_dir, check_threads
    from grpolab.grpo.config import RULES, check_field
    from grpolab.labs.sweep.presets import Regime, SweepPreset, get_preset

    check_out_dir(args.out, kind="sweep")
    sweep_over = config_overrides(args, SweepPreset, SWEEP_PREFIX)
    regime_over = config_overrides(args, Regime, REGIME_PREFIX)
    config_over = config_overrides(args)
    check_threads(sweep_over.get("torch_threads"))
    for G in sweep_over.get("group_sizes") or ():  # before a regime divides its budget by G
        check_field("num_generations", G, RULES["num_generations"])
    if args.warmstart_steps is not None:
        given = config_over.get("warmstart")
        if isinstance(given, dict) and "steps" in given:  # two values for one field
            raise ValueError(f"--warmstart-steps {args.warmstart_steps} and --warmstart's "
                             f"\"steps\": {given['steps']!r} both set the warm-start steps; "
                             "give one of them")
        config_over["warmstart"] = {**config_over.get("warmstart", {}),
                                    "steps": args.warmstart_steps}
    regimes = get_preset(args.preset).regimes
    if args.regimes:
        known = {r.name for r in regimes}
        bad = [n for n in args.regimes if n not in known]
        if bad:
            raise ValueError(f"--regimes: {bad[0]!r} is not a regime of {args.preset} "
                             f"({', '.join(sorted(known))})")
        regimes = [r for r in regimes if r.name in args.regimes]
    regimes = [replace(r, **regime_over) for r in regimes]
    _refuse_idle_flags(regime_over, regimes)
    preset = get_preset(args.preset, {**config_over, **sweep_over, "regimes": regimes})
    preset.check_prompts()
    return preset


def add_worker_arguments(p: argparse.ArgumentParser) -> None:
    """``--workers``, ``--executor``, ``--ray-address``: how a lab's independent runs are
    spread (:class:`grpolab.labs.runner.Runner`); shared by ``lab sweep`` and ``remedies``."""
    g = p.add_argument_group("workers (grpolab.labs.runner)")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="runs trained side by side, each in its own process with --threads "
                   "torch threads (or its own GPU); results are bit for bit those of one "
                   "worker (default: what this machine holds: CPU cores / threads, or GPUs)")
    g.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: processes on this machine; ray: tasks on a Ray cluster "
                   "(pip install 'grpolab[cluster]') (default: local)")
    g.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="the Ray cluster to join with --executor ray, e.g. ray://head:10001 "
                   "or auto (default: start a local Ray instance)")


def check_workers(args: argparse.Namespace) -> None:
    """``--workers``: an integer >= 1; ``--ray-address`` only with ``--executor ray``."""
    w = args.workers
    if w is not None and (isinstance(w, bool) or w < 1):
        raise ValueError(f"--workers must be an integer >= 1, got {w}")
    if args.ray_address is not None and args.executor != "ray":
        raise ValueError("--ray-address needs --executor ray")


def run_sweep_cmd(args: argparse.Namespace) -> int:
    from grpolab.cli._checks import check_out_dir
    from grpolab.labs.runner import Runner

    check_out_dir(args.out, kind="sweep")
    check_workers(args)
    with Runner(args.out) as runner:  # first: a second sweep on --out is refused at once
        return _run_sweep_locked(args, runner)


def _run_sweep_locked(args: argparse.Namespace, runner) -> int:
    from grpolab.cli._checks import check_model_cache
    from grpolab.labs.sweep.presets import get_preset
    from grpolab.models.device import check_device

    # an unwritable SmolLM2 cache: before torch (checking a preset's prompts may load it)
    check_model_cache(config_overrides(args).get("model") or get_preset(args.preset).config.model)
    preset = build_preset(args)  # the flags (labs/gpu checks GPU flags on a CPU this way)
    check_device(preset.config.device)  # ... and this machine
    from grpolab.labs.sweep.sweep import run_sweep

    summary = run_sweep(preset, runner, progress=not args.quiet, plots=not args.no_plots,
                        workers=args.workers,
                        executor=args.executor, address=args.ray_address)
    print(f"{summary['runs_finished']}/{summary['runs_planned']} runs finished in {args.out} "
          f"({summary['seconds_this_invocation']:.0f} s this invocation)")
    import os

    from grpolab.labs.sweep.report import g_effects, load_curves
    from grpolab.labs.sweep.sweep import PRIMARY_METRIC

    curves_path = os.path.join(args.out, "curves.csv")
    effects = g_effects(summary, load_curves(args.out) if os.path.isfile(curves_path) else [])
    for name, info in summary["regimes"].items():
        runs = [r for r in summary["runs"] if r["regime"] == name]
        by_G: dict[int, list[float]] = {}
        for r in runs:
            by_G.setdefault(int(r["G"]), []).append(r[PRIMARY_METRIC])
        start = sum(r["initial_sampled_accuracy"] for r in runs) / len(runs)
        means = ", ".join(f"G={G}: {sum(v) / len(v):.3f}" for G, v in sorted(by_G.items()))
        print(f"[{name}] held-out sampled pass@1: warm start {start:.3f} -> final {means}")
        # each G effect names the compute it holds fixed (issue 31: matched compute)
        mine = [line for line in effects if line.startswith(f"[{name}] ")]
        print("\n".join(mine) if mine else
              f"[{name}] one G value: nothing to compare across G (pass --G with two or more "
              "values for the trend test)")
        if info["zero_variance_mean_abs_gap"] is not None:
            print(f"[{name}] zero-variance groups: mean |observed - predicted| = "
                  f"{info['zero_variance_mean_abs_gap']:.4f}")
    if not args.no_plots:
        print(f"plots: {args.out}/plots/")
    return 0


def run_plot_cmd(args: argparse.Namespace) -> int:
    import os

    from grpolab.cli._checks import check_out_dir
    from grpolab.grpo.records import output_lock

    path = os.path.join(args.out, "summary.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no summary.json in {args.out}: run 'grpolab lab sweep' first")
    check_out_dir(args.out, kind="sweep")
    check_out_dir(os.path.join(args.out, "plots"))
    with output_lock(args.out):  # plots are written into --out: not while a sweep writes it
        from grpolab.results import read_sweep_summary

        # typed at the door (runs, regimes, gradient noise): a damaged or crafted field is
        # one line naming the file and the field, before matplotlib is imported
        read_sweep_summary(args.out)
        from grpolab.labs.sweep.report import plot_sweep

        for path in plot_sweep(args.out):
            print(path)
    return 0


def run_presets_cmd(args: argparse.Namespace) -> int:
    from grpolab.labs.sweep.presets import PRESETS

    for name, p in PRESETS.items():
        print(f"{name}: {p.description}")
    return 0
