"""``grpolab advise``: choose G from your pass rates or a TRL log, e.g.
``grpolab advise --pass-rates labs/results/smollm2-pass-rates/pass_rates.json --budget 512``."""

from __future__ import annotations

import argparse
import json

from grpolab.cli._parsers import add_command

#: The allocation rules and their objectives, for --help (grpolab.allocation.ALLOCATION_RULES;
#: written out here so that --help imports no numpy; a test keeps the two equal).
_RULES = {
    "informative": "maximise the expected non-degenerate groups, sum 1 - p^n - (1-p)^n",
    "knapsack": "maximise Knapsack RL's value, sum (1 - p^n - (1-p)^n) p(1-p)^2",
    "first-success": "maximise the prompts with a success, sum 1 - (1-p)^n (HORA-like)",
    "variance-dr-grpo": "minimise Dr. GRPO's gradient variance, sum p(1-p)(n-1)/n^2",
    "variance-rloo": "minimise RLOO's gradient variance, sum p(1-p)/(n-1)",
}


#: ``grpolab advise``: its line in the command list, and its ``--help``.
HELP = "recommend a G from per-prompt pass rates or a TRL log (frac_reward_zero_std)"
DESCRIPTION = """\
Evaluate each G at a fixed budget of completions per step: expected zero-variance fraction
E[p^G + (1-p)^G], informative prompts per step, completions per informative group,
dynamic-sampling cost, and (with --noise) the gradient MSE and G* = 1 + sqrt(c3/c1) (the
paper's sqrt(c3/c1) is its leading order). The G maximises the expected informative prompts
per step at the fixed budget (the largest G within 10% of the best), or the gradient MSE
with --noise; --total-completions raises it as compute grows (IsoCompute). Then filtering /
adaptive G / dynamic sampling, what to monitor, and a TRL GRPOConfig to copy, each with its
reason. See book/capstone/01-choosing-g.md.
"""  # argparse joins the lines into one paragraph


def register(sub) -> None:
    p = add_command(sub, "advise", HELP, DESCRIPTION)
    p.add_argument("--pass-rates", required=True, metavar="FILE",
                   help="CSV (pass_rate, or successes + samples; a prompt_id column for --keep) "
                   "or JSON of per-prompt pass rates (the pass_rates.json census format too), "
                   "or a TRL log with frac_reward_zero_std: trainer_state.json, JSON lines, or "
                   "a W&B CSV export (Step,train/reward,train/frac_reward_zero_std,...)")
    p.add_argument("--budget", type=int, default=None, metavar="N",
                   help="completions per optimizer step, prompts x G (default: 512)")
    p.add_argument("--max-G", type=int, default=None, metavar="M",
                   help="largest G to consider (default: 64)")
    p.add_argument("--num-generations", type=int, default=None, metavar="G",
                   help="the G a TRL log was recorded at (TRL's logs do not store it)")
    p.add_argument("--reward-key", default=None, metavar="NAME",
                   help="a TRL log's 0/1 correctness reward, e.g. accuracy_reward (its "
                   "rewards/NAME/mean); needed when several reward functions are logged and "
                   "not exactly one of them is 0/1-valued")
    p.add_argument("--total-completions", type=int, default=None, metavar="C",
                   help="total compute of the run, in completions (steps x N); G is raised "
                   "as C grows (IsoCompute) to at least one pass over the pool")
    p.add_argument("--pool-size", type=int, default=None, metavar="M",
                   help="number of training prompts (with --total-completions and a TRL log; "
                   "a census counts its own)")
    p.add_argument("--processes", type=int, default=1, metavar="P",
                   help="training processes (GPUs) for the TRL config block (default: 1)")
    p.add_argument("--per-device-batch", type=int, default=None, metavar="K",
                   help="most completions one device fits per forward/backward pass, for the "
                   "TRL config block (default: 8, TRL's per_device_train_batch_size)")
    p.add_argument("--keep", default=None, metavar="FILE",
                   help="write the ids of the prompts to keep (neither always nor never "
                   "solved) from a census's prompt_id column; refuses to overwrite a file it "
                   "did not write")
    p.add_argument("--noise", default=None, metavar="C1,C2,C3|FILE",
                   help="gradient-noise constants of MSE = c1/B + c2/(BG) + c3/(BG(G-1)): three "
                   "numbers, a JSON file with c1/c2/c3, or a sweep's gradient_noise.json (fitted)")
    p.add_argument("--noise-regime", default=None, metavar="NAME",
                   help="which regime of a gradient_noise.json to fit (e.g. mixed)")
    p.add_argument("--allocation", nargs="+", default=None, metavar="RULE",
                   choices=[*_RULES, "all"],
                   help="show what a per-prompt split of the same completions spends where, "
                   "by pass-rate bin; RULE: " + "; ".join(
                       f"{name}: {text}" for name, text in _RULES.items()) + "; all: every "
                   "rule (book/theory/14-adaptive-allocation.md)")
    p.add_argument("--json", action="store_true", help="print the same as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from grpolab import advise as adv
    from grpolab.cli._checks import CLIError

    try:
        if args.keep is not None:  # refuse before any work
            adv.check_keep_target(args.keep)
        difficulty = adv.load_pass_rates(args.pass_rates, num_generations=args.num_generations,
                                         reward_key=args.reward_key)
        noise = adv.load_noise(args.noise, args.noise_regime) if args.noise else None
        advice = adv.advise(
            difficulty,
            budget=adv.DEFAULT_BUDGET if args.budget is None else args.budget,
            max_G=adv.DEFAULT_MAX_G if args.max_G is None else args.max_G,
            noise=noise,
            total_completions=args.total_completions,
            pool_size=args.pool_size,
            processes=args.processes,
            per_device_batch=(adv.TRL_PER_DEVICE_BATCH if args.per_device_batch is None
                              else args.per_device_batch),
            allocation_rules=(None if args.allocation is None else
                              list(_RULES) if "all" in args.allocation else args.allocation),
        )
        kept = adv.write_keep(difficulty, args.keep) if args.keep else None
    except (ValueError, OSError) as exc:  # AdviseError is a ValueError
        raise CLIError(str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__) from None
    if args.json:
        doc = advice.to_dict()
        if kept is not None:
            doc["keep"] = {"file": args.keep, "prompts": kept}
        print(json.dumps(doc, indent=2, allow_nan=False))
    else:
        print(adv.format_advice(advice))
        if kept is not None:
            print(f"\nwrote the ids of {kept} prompts to keep to {args.keep}")
    return 0
