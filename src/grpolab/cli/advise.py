"""``grpolab advise``: choose G from your pass rates, e.g.
``grpolab advise --pass-rates labs/results/smollm2-pass-rates/pass_rates.json --budget 512``."""

from __future__ import annotations

import argparse
import json


def register(sub) -> None:
    p = sub.add_parser(
        "advise",
        help="recommend a G from per-prompt pass rates or a TRL log (frac_reward_zero_std)",
        description="Evaluate each G at a fixed budget of completions per step: expected "
        "zero-variance fraction E[p^G + (1-p)^G], informative prompts per step, completions per "
        "informative group, dynamic-sampling cost, and (with --noise) the gradient MSE and "
        "G* = sqrt(c3/c1). Then recommend filtering / adaptive G / dynamic sampling, the G to "
        "start with and what to monitor, each with its reason. "
        "See book/capstone/01-choosing-g.md.",
    )
    p.add_argument("--pass-rates", required=True, metavar="FILE",
                   help="CSV (pass_rate, or successes + samples) or JSON of per-prompt pass "
                   "rates (the pass_rates.json census format too), or a TRL log "
                   "(trainer_state.json or JSON lines) with frac_reward_zero_std")
    p.add_argument("--budget", type=int, default=None, metavar="N",
                   help="completions per step, prompts x G (default: 512)")
    p.add_argument("--max-G", type=int, default=None, metavar="M",
                   help="largest G to consider (default: 64)")
    p.add_argument("--num-generations", type=int, default=None, metavar="G",
                   help="the G a TRL log was recorded at (TRL's logs do not store it)")
    p.add_argument("--noise", default=None, metavar="C1,C2,C3|FILE",
                   help="gradient-noise constants of MSE = c1/B + c2/(BG) + c3/(BG^2): three "
                   "numbers, a JSON file with c1/c2/c3, or a sweep's gradient_noise.json (fitted)")
    p.add_argument("--noise-regime", default=None, metavar="NAME",
                   help="which regime of a gradient_noise.json to fit (e.g. mixed)")
    p.add_argument("--json", action="store_true", help="print the same as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from grpolab import advise as adv
    from grpolab.cli._checks import CLIError

    try:
        difficulty = adv.load_pass_rates(args.pass_rates, num_generations=args.num_generations)
        noise = adv.load_noise(args.noise, args.noise_regime) if args.noise else None
        advice = adv.advise(
            difficulty,
            budget=adv.DEFAULT_BUDGET if args.budget is None else args.budget,
            max_G=adv.DEFAULT_MAX_G if args.max_G is None else args.max_G,
            noise=noise,
        )
    except (ValueError, OSError) as exc:  # AdviseError is a ValueError
        raise CLIError(str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__) from None
    if args.json:
        print(json.dumps(advice.to_dict(), indent=2, allow_nan=False))
    else:
        print(adv.format_advice(advice))
    return 0
