"""Theory speed: closed forms over a 1000 × 1000 grid, and Monte Carlo groups per second.

Targets (issue 8): a closed form over a 1000 × 1000 (p, G) grid in < 0.1 s; Monte Carlo at
≥ 10⁷ groups per second.

Baselines, timed side by side with grpolab in the same process:
- closed forms: the plain Python loop a reader would write first (``math``, one cell at a
  time), and, for p^G + (1 − p)^G, numpy's ``p**G + (1-p)**G`` without log space;
- Monte Carlo: drawing the G rewards of every group explicitly (``rng.random((n, G)) < p``)
  instead of grpolab's sufficient statistic k ~ Binomial(G, p).
Each baseline's values are checked against grpolab's before timing, so both sides compute
the same thing.

The Monte Carlo rows replace the wall-clock assert tests/test_simulate.py used to make
(10⁶ groups in < 5 s): ≥ 10⁷ groups/s, measured side by side here, is the stronger form.

    python benchmarks/bench_theory.py            # full grid, 10⁷ groups
    python benchmarks/bench_theory.py --quick    # 100 × 100, 10⁵ groups (a smoke check)
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Row, finish, interleaved, parser, print_row, set_threads, status  # noqa: E402

from grpolab import simulate, theory  # noqa: E402

BENCH = "theory"


def loop_zero_variance(ps, Gs):
    return [[p**G + (1 - p) ** G for G in Gs] for p in ps]


def loop_informative(ps, Gs):
    return [[1 - p**G - (1 - p) ** G for G in Gs] for p in ps]


def loop_beta_zero_variance(As, Gs, b):
    lg = math.lgamma
    out = []
    for a in As:
        lb = lg(a) + lg(b) - lg(a + b)
        out.append([math.exp(lg(a + G) + lg(b) - lg(a + b + G) - lb)
                    + math.exp(lg(a) + lg(b + G) - lg(a + b + G) - lb) for G in Gs])
    return out


def loop_empirical(ps, Gs):
    n = len(ps)
    return [sum(p**G + (1 - p) ** G for p in ps) / n for G in Gs]


def explicit_zero_variance(p: float, G: int, n: int, seed: int, chunk: int = 100_000) -> float:
    """Draw all G rewards of every group; fraction of groups with all rewards equal."""
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n, chunk):
        r = rng.random((min(chunk, n - start), G)) < p
        k = r.sum(axis=1)
        hits += int(np.count_nonzero((k == 0) | (k == G)))
    return hits / n


def closed_form_rows(n: int, reps: int, quick: bool) -> list[Row]:
    ps = np.linspace(0.0, 1.0, n)
    Gs = np.arange(1, n + 1)
    P, GG = ps[:, None], Gs[None, :]
    As = np.linspace(0.1, 5.0, n)
    pl, Gl, Al = ps.tolist(), Gs.tolist(), As.tolist()
    target = "" if quick else "ours < 0.1 s (CPU time)"
    grid = f"{n}x{n}"

    cases = [
        ("zero_variance_probability", lambda: theory.zero_variance_probability(P, GG),
         "python loop p**G+(1-p)**G", lambda: loop_zero_variance(pl, Gl)),
        ("zero_variance_probability [vs numpy]", lambda: theory.zero_variance_probability(P, GG),
         "numpy p**G+(1-p)**G (no log space)", lambda: P**GG + (1 - P) ** GG),
        ("informative_probability", lambda: theory.informative_probability(P, GG),
         "python loop 1-p**G-(1-p)**G", lambda: loop_informative(pl, Gl)),
        ("beta_zero_variance_probability(b=1)",
         lambda: theory.beta_zero_variance_probability(GG, As[:, None], 1.0),
         "python loop math.lgamma", lambda: loop_beta_zero_variance(Al, Gl, 1.0)),
        ("empirical_zero_variance_probability",
         lambda: theory.empirical_zero_variance_probability(ps, Gs),
         "python loop mean of p**G+(1-p)**G", lambda: loop_empirical(pl, Gl)),
    ]
    rows = []
    for name, ours, base_label, base in cases:
        a, b = np.asarray(ours(), dtype=float), np.asarray(base(), dtype=float)
        if not np.allclose(a, b, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"error: baseline {base_label!r} disagrees with {name}")
        t = interleaved({"ours": ours, "base": base}, reps=reps)
        o, bl = t["ours"].wall_median, t["base"].wall_median
        oc, bc = t["ours"].cpu_median, t["base"].cpu_median
        func = name.split("(")[0].split(" ")[0]
        rows.append(Row(case=f"{name} grid={grid}", ours_label=f"grpolab.theory.{func}",
                        baseline_label=base_label, ours=o, baseline=bl, ratio=bl / o,
                        target=target, status=status(None if quick else oc < 0.1), reps=reps,
                        extra={"ours_cpu": oc, "baseline_cpu": bc,
                               "wall_status": status(None if quick else o < 0.1)}))
    return rows


def monte_carlo_rows(n_ours: int, n_base: int, reps: int, quick: bool) -> list[Row]:
    rows = []
    target = "" if quick else "ours >= 1e7 groups/s (CPU time)"
    for p, G in [(0.5, 4), (0.5, 16), (0.5, 64), (0.1, 64)]:
        # Same process, both sides agree within Monte Carlo error before we time them.
        est = simulate.zero_variance_mc(p, G, n_groups=n_base, seed=1)
        alt = explicit_zero_variance(p, G, n_base, seed=2)
        se = math.sqrt(max(est.mean * (1 - est.mean), 1e-12) / n_base)
        if abs(est.mean - alt) > 6 * se * math.sqrt(2) + 1e-9:
            raise SystemExit(f"error: explicit draws disagree with zero_variance_mc "
                             f"at p={p}, G={G}")
        t = interleaved({"ours": lambda p=p, G=G: simulate.zero_variance_mc(p, G, n_groups=n_ours),
                         "base": lambda p=p, G=G: explicit_zero_variance(p, G, n_base, seed=0)},
                        reps=reps)
        o, bl = n_ours / t["ours"].wall_median, n_base / t["base"].wall_median
        oc, bc = n_ours / t["ours"].cpu_median, n_base / t["base"].cpu_median
        rows.append(Row(case=f"zero_variance_mc p={p} G={G}",
                        ours_label=f"grpolab.simulate.zero_variance_mc ({n_ours:.0e} groups, "
                                   "k ~ Binomial(G, p))",
                        baseline_label=f"explicit G draws per group ({n_base:.0e} groups)",
                        ours=o, baseline=bl, ratio=o / bl, unit="groups/s", target=target,
                        status=status(None if quick else oc >= 1e7), reps=reps,
                        extra={"ours_cpu": oc, "baseline_cpu": bc,
                               "wall_status": status(None if quick else o >= 1e7)}))
    return rows


def main(argv=None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    set_threads(args.threads)
    if args.quick:
        n, n_ours, n_base, reps = 100, 100_000, 20_000, args.reps or 3
    else:
        n, n_ours, n_base, reps = 1000, 10_000_000, 1_000_000, args.reps or 5
    rows = closed_form_rows(n, reps, args.quick)
    rows += monte_carlo_rows(n_ours, n_base, reps, args.quick)
    for r in rows:
        print_row(BENCH, r)
    notes = [
        "Grid: p = linspace(0, 1, n) as a column, G = 1..n as a row (numpy broadcasting); "
        "beta: a = linspace(0.1, 5, n), b = 1.",
        "Monte Carlo: groups/s = groups / median seconds; the baseline uses fewer groups "
        "(it is a rate), in chunks of 10⁵ groups to bound memory.",
    ]
    return finish(BENCH, rows, args, notes,
                  settings={"grid": n, "mc_groups": n_ours, "baseline_mc_groups": n_base,
                            "reps": reps})


if __name__ == "__main__":
    raise SystemExit(main())
