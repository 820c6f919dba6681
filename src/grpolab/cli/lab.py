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


def register(sub) -> None:
    lab = sub.add_parser("lab", help="GRPO labs: the G sweep on a small model",
                         description="GRPO labs: train at several G from one warm start and put "
                         "the measurements next to the theory.")
    lab_sub = lab.add_subparsers(dest="lab_command", metavar="LAB_COMMAND",
                                 parser_class=type(lab))
    lab_sub.required = True

    sw = lab_sub.add_parser("sweep", help="run (or resume) a G sweep",
                            description="Run every (regime, G, seed) of a preset from one shared "
                            "warm start. Rerun the same command to resume; finished runs are "
                            "skipped. Ctrl-C is safe.")
    sw.add_argument("--preset", required=True, help="cpu-quick, cpu-full or gpu "
                    "(see 'grpolab lab presets')")
    sw.add_argument("--out", required=True, help="output directory")
    sw.add_argument("--G", type=int, nargs="+", metavar="G", help="group sizes (default: preset's)")
    sw.add_argument("--seeds", type=int, nargs="+", metavar="S", help="seeds (default: preset's)")
    sw.add_argument("--steps", type=int, help="GRPO steps per run (default: preset's)")
    sw.add_argument("--mode", choices=["budget", "prompts"],
                    help="budget: completions per step fixed (prompts = budget/G); prompts: "
                    "prompts per step fixed. Applies to every regime.")
    sw.add_argument("--budget", type=int, help="completions per step in budget mode")
    sw.add_argument("--prompts-per-step", type=int, help="prompts per step in prompts mode")
    sw.add_argument("--regimes", nargs="+", metavar="NAME",
                    help="only these regimes of the preset (e.g. mixed hard)")
    sw.add_argument("--device", help="cpu, cuda or auto (default: preset's)")
    sw.add_argument("--learning-rate", type=float, help="default: preset's")
    sw.add_argument("--warmstart-steps", type=int,
                    help="supervised warm-start steps (default: preset's; small values are for "
                    "smoke tests)")
    sw.add_argument("--threads", type=int, help="torch CPU threads (default: preset's)")
    sw.add_argument("--backend", choices=["grpolab", "trl"],
                    help="grpolab: the readable loop in grpolab.grpo.loop; trl: TRL's GRPOTrainer "
                    "(grpolab.grpo.trl_backend). Default: preset's")
    sw.add_argument("--no-plots", action="store_true", help="skip the plots")
    sw.add_argument("--quiet", action="store_true", help="no progress bars")
    sw.set_defaults(func=run_sweep_cmd)

    pl = lab_sub.add_parser("plot", help="redraw the plots of a sweep directory")
    pl.add_argument("--out", required=True, help="a sweep's output directory")
    pl.set_defaults(func=run_plot_cmd)

    pr = lab_sub.add_parser("presets", help="list the sweep presets")
    pr.set_defaults(func=run_presets_cmd)

    _train.register(lab_sub)
    _pass_rates.register(lab_sub)


def _positive(value, name):
    if value is not None and value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


def _refuse_idle_flags(args: argparse.Namespace, regimes) -> None:
    """``--budget`` counts only in budget mode, ``--prompts-per-step`` only in prompts
    mode: a flag that would be ignored by a regime is refused, not silently dropped."""
    for flag, value, mode in (("--budget", args.budget, "budget"),
                              ("--prompts-per-step", args.prompts_per_step, "prompts")):
        idle = [r.name for r in regimes if r.mode != mode]
        if value is not None and idle:
            other = "--prompts-per-step" if mode == "budget" else "--budget"
            raise ValueError(f"{flag} does nothing in {'prompts' if mode == 'budget' else 'budget'}"
                             f" mode (regime {', '.join(idle)}): use {other} there, "
                             f"--mode {mode}, or --regimes without {', '.join(idle)}")


def build_preset(args: argparse.Namespace):
    """The preset named by ``args.preset`` with the command-line overrides applied."""
    from dataclasses import replace

    from grpolab.cli._checks import check_out_dir, check_threads
    from grpolab.labs.sweep.presets import get_preset

    check_out_dir(args.out)
    check_threads(args.threads)
    _positive(args.steps, "--steps")
    _positive(args.budget, "--budget")
    _positive(args.prompts_per_step, "--prompts-per-step")
    _positive(args.warmstart_steps, "--warmstart-steps")
    _positive(args.threads, "--threads")
    if args.G is not None and any(G < 2 for G in args.G):
        raise ValueError(f"--G values must be >= 2, got {args.G}")
    if args.learning_rate is not None and not args.learning_rate > 0:
        raise ValueError(f"--learning-rate must be > 0, got {args.learning_rate}")
    preset = get_preset(args.preset)
    regimes = preset.regimes
    if args.regimes:
        known = {r.name for r in regimes}
        bad = [n for n in args.regimes if n not in known]
        if bad:
            raise ValueError(f"--regimes: {bad[0]!r} is not a regime of {args.preset} "
                             f"({', '.join(sorted(known))})")
        regimes = [r for r in regimes if r.name in args.regimes]
    regimes = [replace(r, **{k: v for k, v in (("mode", args.mode), ("budget", args.budget),
                                                ("prompts_per_step", args.prompts_per_step))
                             if v is not None}) for r in regimes]
    _refuse_idle_flags(args, regimes)
    warm = preset.config.warmstart
    if args.warmstart_steps is not None:
        warm = replace(warm, steps=args.warmstart_steps)
    preset = get_preset(args.preset, group_sizes=args.G, seeds=args.seeds, steps=args.steps,
                        device=args.device, learning_rate=args.learning_rate, regimes=regimes,
                        warmstart=warm, torch_threads=args.threads, backend=args.backend)
    preset.validate_prompts()
    return preset


def run_sweep_cmd(args: argparse.Namespace) -> int:
    from grpolab.cli._checks import check_device

    preset = build_preset(args)  # the flags (labs/gpu checks GPU flags on a CPU this way)
    check_device(preset.config.device)  # ... and this machine
    from grpolab.labs.sweep.run import run_sweep

    summary = run_sweep(preset, args.out, progress=not args.quiet, plots=not args.no_plots)
    print(f"{summary['runs_finished']}/{summary['runs_planned']} runs finished in {args.out} "
          f"({summary['seconds_this_invocation']:.0f} s this invocation)")
    for name, info in summary["regimes"].items():
        means = ", ".join(f"G={G}: {m:.3f}" for G, m in info["final_accuracy_mean_by_G"].items())
        print(f"[{name}] warm start {info['initial_accuracy']:.3f} -> final {means}")
        print(f"[{name}] {info['verdict']['statement']}")
        if info["zero_variance_mean_abs_gap"] is not None:
            print(f"[{name}] zero-variance groups: mean |observed - predicted| = "
                  f"{info['zero_variance_mean_abs_gap']:.4f}")
    if not args.no_plots:
        print(f"plots: {args.out}/plots/")
    return 0


def run_plot_cmd(args: argparse.Namespace) -> int:
    import os

    from grpolab.cli._checks import check_out_dir

    path = os.path.join(args.out, "summary.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no summary.json in {args.out}: run 'grpolab lab sweep' first")
    check_out_dir(os.path.join(args.out, "plots"))
    from grpolab.labs.sweep.report import plot_sweep, read_sweep_summary

    read_sweep_summary(args.out)  # a foreign or damaged summary.json: one line naming it

    for path in plot_sweep(args.out):
        print(path)
    return 0


def run_presets_cmd(args: argparse.Namespace) -> int:
    from grpolab.labs.sweep.presets import PRESETS

    for name, p in PRESETS.items():
        print(f"{name}: {p.description}")
    return 0
