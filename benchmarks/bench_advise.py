"""grpolab advise speed: 10⁶ prompts from file to recommendation, and the allocator.

Target (issue 26, item 7): ``grpolab advise`` on 1M prompts in under 5 s. The code before
issue 26 made one validated scalar call per sample (49 s on 100k prompts, minutes on 1M).

Rows, each timed side by side with its baseline in one process (A, B, A, B, ...):

- ``end to end``: :func:`grpolab.advise.load_pass_rates` + :func:`grpolab.advise.advise`
  on a CSV of 10⁶ prompts (a census of successes out of 32 samples, and plain pass
  rates), against the floor any reader of that file pays: ``np.loadtxt`` of the same
  file and the plug-in table mean(p^G + (1 − p)^G) over the same G values, unchecked and
  without remedies. Ratio = floor ÷ grpolab (< 1: grpolab also checks, fits the prior
  and allocates adaptive G). PASS when grpolab's CPU time is under 5 s.
- ``adaptive allocation``: :func:`grpolab.advise.adaptive_allocation` (a vectorised
  top-K threshold) against the greedy heap it replaced, which made one validated
  ``theory.informative_probability`` call per sample handed out. Both must give the same
  allocation before they are timed; ratio = prompts/s, ours ÷ baseline (the heap runs
  on fewer prompts: it is a rate).

    python benchmarks/bench_advise.py            # 10⁶ prompts
    python benchmarks/bench_advise.py --quick    # 2·10⁴ prompts (a smoke check)
"""

from __future__ import annotations

import heapq
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Row, finish, interleaved, parser, print_row, set_threads, status  # noqa: E402

from grpolab import advise, theory  # noqa: E402

BENCH = "advise"
TARGET_S = 5.0


def heap_allocation(rates, mean_G: int, min_G: int = 2, max_G: int = advise.DEFAULT_MAX_G):
    """The allocator before issue 26: a heap, one validated theory call per gain."""
    p = np.asarray(rates, dtype=float)
    G = np.full(p.size, min_G, dtype=np.int64)

    def gain(j):
        g = G[j]
        return float(theory.informative_probability(p[j], g + 1)
                     - theory.informative_probability(p[j], g))

    heap = [(-gain(j), j) for j in range(p.size)]
    heapq.heapify(heap)
    left = p.size * mean_G - int(G.sum())
    while left > 0 and heap:
        _, j = heapq.heappop(heap)
        if G[j] >= max_G:
            continue
        G[j] += 1
        left -= 1
        if G[j] < max_G:
            heapq.heappush(heap, (-gain(j), j))
    return G


def write_files(folder: str, n: int) -> dict[str, str]:
    rng = np.random.default_rng(0)
    p = rng.beta(0.5, 2.0, size=n)
    k = rng.binomial(32, p)
    counts = os.path.join(folder, "counts.csv")
    with open(counts, "w", encoding="utf-8") as f:
        f.write("successes,samples\n")
        f.write("".join(f"{x},32\n" for x in k))
    rates = os.path.join(folder, "rates.csv")
    with open(rates, "w", encoding="utf-8") as f:
        f.write("pass_rate\n")
        f.write("".join(f"{x:.6f}\n" for x in p))
    return {"counts": counts, "rates": rates}


def floor(path: str, kind: str, Gs: list[int]):
    """What any reader of the file pays: parse it, and the plug-in table, nothing else."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    p = data[:, 0] / data[:, 1] if kind == "counts" else data[:, 0]
    return [float(np.mean(p ** G + (1 - p) ** G)) for G in Gs]


def end_to_end_rows(n: int, reps: int, quick: bool) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-advise-") as folder:
        files = write_files(folder, n)
        for kind, path in files.items():
            def ours(path=path):
                return advise.advise(advise.load_pass_rates(path))

            result = ours()
            Gs = [r["G"] for r in result.rows]
            if result.prompts != n or not all(np.isfinite(r["zero_variance_fraction"])
                                              for r in result.rows):
                raise SystemExit(f"error: advise on {kind} gave {result.prompts} prompts")
            t = interleaved({"ours": ours, "base": lambda path=path, kind=kind, Gs=Gs:
                             floor(path, kind, Gs)}, reps=reps)
            o, b = t["ours"].wall_median, t["base"].wall_median
            oc, bc = t["ours"].cpu_median, t["base"].cpu_median
            rows.append(Row(
                case=f"end to end, {n:.0e} prompts ({kind} CSV)",
                ours_label="grpolab.advise.load_pass_rates + advise (checked reader, table, "
                           "prior, remedies, adaptive G)",
                baseline_label="np.loadtxt + plug-in table mean(p^G + (1-p)^G), unchecked",
                ours=o, baseline=b, ratio=b / o,
                target="" if quick else f"ours < {TARGET_S:g} s (CPU time)",
                status=status(None if quick else oc < TARGET_S), reps=reps,
                extra={"ours_cpu": oc, "baseline_cpu": bc, "prompts": n,
                       "wall_status": status(None if quick else o < TARGET_S)}))
    return rows


def allocation_row(n_ours: int, n_base: int, reps: int) -> Row:
    rng = np.random.default_rng(1)
    p_ours = rng.beta(0.5, 2.0, size=n_ours)
    p_base = p_ours[:n_base]
    if not np.array_equal(advise.adaptive_allocation(p_base, 8), heap_allocation(p_base, 8)):
        raise SystemExit("error: the vectorised allocation differs from the greedy heap")
    t = interleaved({"ours": lambda: advise.adaptive_allocation(p_ours, 8),
                     "base": lambda: heap_allocation(p_base, 8)}, reps=reps)
    o, b = n_ours / t["ours"].wall_median, n_base / t["base"].wall_median
    oc, bc = n_ours / t["ours"].cpu_median, n_base / t["base"].cpu_median
    return Row(case="adaptive allocation, mean G = 8, max G = 64",
               ours_label=f"grpolab.advise.adaptive_allocation ({n_ours:.0e} prompts, "
                          "vectorised top-K threshold)",
               baseline_label=f"greedy heap, one theory call per sample ({n_base:.0e} prompts)",
               ours=o, baseline=b, ratio=o / b, unit="prompts/s", reps=reps,
               extra={"ours_cpu": oc, "baseline_cpu": bc})


def main(argv=None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    set_threads(args.threads)
    if args.quick:
        n, n_alloc, n_heap, reps = 20_000, 20_000, 500, args.reps or 2
    else:
        n, n_alloc, n_heap, reps = 1_000_000, 1_000_000, 5_000, args.reps or 3
    rows = end_to_end_rows(n, reps, args.quick)
    rows.append(allocation_row(n_alloc, n_heap, reps))
    for r in rows:
        print_row(BENCH, r)
    notes = [
        "End to end: a fresh seeded CSV of 10^6 prompts per kind (p ~ Beta(0.5, 2); counts: "
        "k ~ Binomial(32, p)), read and advised at the default budget N = 512, max G = 64.",
        "The floor reads the same file with np.loadtxt and computes only the plug-in "
        "zero-variance table over the same G values: no checks, no prior, no remedies.",
        "Allocation: both sides give the same G_j on the baseline's prompts before timing.",
    ]
    return finish(BENCH, rows, args, notes,
                  settings={"prompts": n, "allocation_prompts": n_alloc,
                            "heap_prompts": n_heap, "reps": reps})


if __name__ == "__main__":
    raise SystemExit(main())
