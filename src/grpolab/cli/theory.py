"""``grpolab theory``: the closed forms as a table, e.g. ``grpolab theory --p 0.1 --G 4 16``."""

from __future__ import annotations

import argparse
import json

import numpy as np

from grpolab._validate import MAX_GROUP_SIZE
from grpolab.cli._parsers import add_command

#: Most (p, G) rows one table prints: a screenful is tens; 10⁵ rows is already 15 MB of text.
MAX_ROWS = 100_000


#: ``grpolab theory``: its line in the command list, and its ``--help``.
HELP = "print zero-variance probabilities and baseline variances for p and G"
DESCRIPTION = """\
Closed forms from the book for every (p, G) pair: P(all fail) = (1-p)^G, P(all pass) = p^G,
P(zero gradient) = p^G + (1-p)^G, P(any success) = 1-(1-p)^G, and Var(baseline) = sigma^2/G
with sigma^2 = p(1-p) for 0/1 rewards.
"""  # argparse joins the lines into one paragraph


def register(sub) -> None:
    p = add_command(sub, "theory", HELP, DESCRIPTION)
    p.add_argument("--p", type=float, nargs="+", default=[0.1, 0.5], metavar="P",
                   help="per-prompt pass rates in [0, 1] (default: 0.1 0.5)")
    p.add_argument("--G", type=float, nargs="+", default=[4, 8, 16], metavar="G",
                   help=f"group sizes, integers in [1, {MAX_GROUP_SIZE}] (default: 4 8 16)")
    p.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    p.set_defaults(func=run)


def rows(ps, Gs) -> list[dict]:
    """One record per (p, G) pair with every closed form of the zero-variance chapter."""
    from grpolab import theory

    p = np.asarray(ps, dtype=float)[:, None]
    G = np.asarray(Gs)[None, :]
    fail = np.broadcast_to(theory.all_fail_probability(p, G), (p.size, G.size))
    pas = np.broadcast_to(theory.all_pass_probability(p, G), (p.size, G.size))
    any_s = np.broadcast_to(theory.any_success_probability(p, G), (p.size, G.size))
    var = np.broadcast_to(theory.baseline_variance(theory.bernoulli_variance(p), G),
                          (p.size, G.size))
    out = []
    for i, pi in enumerate(ps):
        for j, gj in enumerate(Gs):
            out.append({
                "p": float(pi), "G": int(gj),
                "all_fail": float(fail[i, j]), "all_pass": float(pas[i, j]),
                "zero_variance": float(fail[i, j] + pas[i, j]),
                "any_success": float(any_s[i, j]),
                "baseline_variance": float(var[i, j]),
            })
    return out


def run(args: argparse.Namespace) -> int:
    from grpolab._validate import as_group_size, as_probability

    # Checked here, under the flags' names, before anything is computed or printed.
    if len(args.p) * len(args.G) > MAX_ROWS:
        raise ValueError(f"--p × --G: {len(args.p)} × {len(args.G)} = "
                         f"{len(args.p) * len(args.G)} rows; at most {MAX_ROWS} fit in one "
                         "table, so pass fewer values")
    as_probability(args.p, "--p")
    as_group_size(args.G, "--G")
    records = rows(args.p, args.G)
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    header = ("p", "G", "P(all fail)", "P(all pass)", "P(zero grad)", "P(any success)",
              "Var(baseline)")
    print("  ".join(f"{h:>14}" for h in header))
    for r in records:
        print("  ".join([f"{r['p']:>14g}", f"{r['G']:>14d}", f"{r['all_fail']:>14.4f}",
                         f"{r['all_pass']:>14.4f}", f"{r['zero_variance']:>14.4f}",
                         f"{r['any_success']:>14.4f}", f"{r['baseline_variance']:>14.6f}"]))
    print("Var(baseline) = p(1-p)/G for 0/1 rewards. Derivations: book/theory/03-zero-variance.md, "
          "book/theory/02-baseline-variance.md")
    return 0
