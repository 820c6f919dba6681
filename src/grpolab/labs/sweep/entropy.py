"""Does a larger G slow the entropy collapse? The declared test on a sweep's step logs.

The measurement of book/theory/13-entropy.md, "Measured": each run's entropy change (the
mean of its last five logged entropies minus its first), its per-seed slope in log₂ G, the
mean slope's 95% t interval over seeds, Holm-corrected across a results folder's regimes;
each run's final KL to the warm start gets the same trend beside it (a larger G that
moved the policy less can keep its entropy without protecting it).

Reads through :class:`grpolab.labs.lab_results.LabResults` (``steps.csv``, ``summary.json``).
No torch.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from scipy import stats

__all__ = ["entropy_by_run", "entropy_change", "per_seed_trend", "entropy_test"]

#: Holm-adjusted p below which a trend is called detected.
ALPHA = 0.05


def entropy_by_run(steps: list[dict]) -> dict[tuple[str, int, int], list[tuple[int, float]]]:
    """(regime, G, seed) -> [(step, entropy), ...] from ``steps.csv`` rows (steps without an
    entropy are left out). Derived in: book/theory/13-entropy.md."""
    runs: dict = defaultdict(list)
    for row in steps:
        if row["entropy"] not in ("", "None", "nan"):
            runs[(row["regime"], int(row["G"]), int(row["seed"]))].append(
                (int(row["step"]), float(row["entropy"])))
    return runs


def entropy_change(points: list[tuple[int, float]]) -> float:
    """A run's entropy change: the mean of its last five logged entropies minus its first."""
    points = sorted(points)
    last = [e for _, e in points[-5:]]
    return float(np.mean(last) - points[0][1])


def per_seed_trend(values: dict[tuple[int, int], float]) -> tuple[int, float, float, float, float]:
    """(seeds, mean, low, high, p): the mean over seeds of the per-seed least-squares slope
    of ``values[(G, seed)]`` on log₂ G, its 95% t interval and two-sided p (when every seed
    has the same slope: 0, or 1 when that slope is 0). Derived in: book/theory/13-entropy.md."""
    slopes = []
    for s in sorted({s for _, s in values}):
        pts = sorted((G, v) for (G, s2), v in values.items() if s2 == s)
        slopes.append(np.polyfit(np.log2([G for G, _ in pts]), [v for _, v in pts], 1)[0])
    slopes = np.array(slopes)
    n = slopes.size
    mean, se = slopes.mean(), slopes.std(ddof=1) / np.sqrt(n)
    half = stats.t.ppf(0.975, n - 1) * se
    if se > 0:
        p_value = 2 * stats.t.sf(abs(mean / se), n - 1)
    else:  # every seed the same slope: a certain trend, or none at all when it is 0
        p_value = 0.0 if mean != 0 else 1.0
    return n, mean, mean - half, mean + half, p_value


def entropy_test(lab) -> tuple[dict, list[dict]]:
    """The declared test on one results folder (a :class:`~grpolab.labs.lab_results.LabResults`),
    Holm-corrected across its regimes: (runs, one row per regime with ``slope``, ``low``,
    ``high``, ``p``, ``p_holm``, ``verdict``, ``points`` per run and the KL trend ``kl``).

    Used by: book/theory/13-entropy.md, "Measured".
    """
    runs = entropy_by_run(lab.steps())
    kl = {}
    if lab.has("summary.json"):
        for r in lab.summary()["runs"]:
            if r.get("final_kl_to_warm_start") is not None:
                kl[(r["regime"], int(r["G"]), int(r["seed"]))] = r["final_kl_to_warm_start"]
    results = []
    for regime in sorted({r for r, _, _ in runs}):
        values = {(G, s): entropy_change(pts) for (r, G, s), pts in runs.items() if r == regime}
        n, mean, low, high, p_value = per_seed_trend(values)
        kl_values = {(G, s): kl[(regime, G, s)] for (G, s) in values if (regime, G, s) in kl}
        kl_trend = per_seed_trend(kl_values) if len(kl_values) == len(values) else None
        points = int(np.median([len(pts) for (r, _, _), pts in runs.items() if r == regime]))
        results.append({"folder": lab.name, "regime": regime, "seeds": n, "slope": mean,
                        "low": low, "high": high, "p": p_value, "points": points,
                        "kl": kl_trend})
    order = np.argsort([r["p"] for r in results])
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(results) - rank) * results[i]["p"]))
        results[i]["p_holm"] = running
    for r in results:
        r["verdict"] = ("slower collapse at larger G" if r["p_holm"] < ALPHA and r["slope"] > 0
                        else "faster collapse at larger G" if r["p_holm"] < ALPHA
                        else "no detectable trend")
    return runs, results
