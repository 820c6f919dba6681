"""The labs' pre-declared statistics: effect sizes with t intervals, a trend test in log₂ G,
and pairwise contrasts with Holm's correction. numpy and scipy only.

Every lab verdict in the book comes from these functions, named before the runs:

- **Primary test, the trend:** per seed, the least-squares slope of the metric against
  log₂ G (the seed's runs share their prompt order and evaluation samples, so a per-seed
  slope removes the seed's level); then a one-sample t interval of the mean slope over
  seeds (n − 1 degrees of freedom). Units: metric change per doubling of G.
- **Secondary tests, contrasts:** every pair of arms (or every arm against a reference),
  paired by seed when both arms have the same seeds (a paired t interval of the per-seed
  difference), Welch's otherwise; p-values adjusted by Holm's step-down method for the
  family of contrasts; a contrast "differs" only if its Holm-adjusted p < α.

A verdict states the estimate and its interval; "no detectable difference" is stated with
its interval, so a tight null reads as a result.

Derived in: book/labs/01-g-sweep.md, "How we test".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

__all__ = ["t_interval", "trend_in_log2_G", "contrast", "holm", "pairwise_contrasts",
           "g_verdict"]


def _clean(values, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite, got {values!r}")
    return x


def t_interval(values: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean of ``values`` and its two-sided t interval (n − 1 df)."""
    x = _clean(values, "values")
    n = x.size
    mean = float(x.mean())
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "se": None, "n": n, "df": 0}
    se = float(x.std(ddof=1) / math.sqrt(n))
    t = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    return {"mean": mean, "low": mean - t * se, "high": mean + t * se, "se": se, "n": n,
            "df": n - 1, "t_critical": t}


def trend_in_log2_G(by_G_and_seed: Mapping[int, Mapping[int, float]],
                    confidence: float = 0.95) -> dict:
    """The primary test: mean over seeds of the per-seed OLS slope of the metric on log₂ G.

    ``by_G_and_seed[G][seed]`` is one run's metric. Seeds missing any G are dropped (a
    slope needs the same design in every seed). Returns the slope's mean, t interval and
    two-sided p-value against 0.
    """
    Gs = sorted(by_G_and_seed)
    if len(Gs) < 2:
        raise ValueError("a trend in log2 G needs at least two G values")
    seeds = sorted(set.intersection(*(set(by_G_and_seed[G]) for G in Gs)))
    if not seeds:
        raise ValueError("no seed ran every G")
    x = np.log2(np.asarray(Gs, dtype=float))
    xc = x - x.mean()
    slopes = [float(np.dot(xc, [by_G_and_seed[G][s] for G in Gs]) / np.dot(xc, xc))
              for s in seeds]
    ci = t_interval(slopes, confidence)
    p = None
    if ci["se"]:
        p = float(2 * stats.t.sf(abs(ci["mean"]) / ci["se"], ci["df"]))
    elif ci["se"] == 0.0:
        p = 0.0 if ci["mean"] != 0 else 1.0
    return {"test": "per-seed OLS slope on log2 G, one-sample t over seeds",
            "slope_per_doubling": ci["mean"], "low": ci["low"], "high": ci["high"],
            "p_value": p, "seeds": seeds, "G": Gs, "per_seed_slopes": slopes,
            "confidence": confidence}


def contrast(a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95) -> dict:
    """a − b over seeds: paired t when both have the same seeds, else Welch's t."""
    if set(a) == set(b) and len(a) >= 2:
        d = [a[s] - b[s] for s in sorted(a)]
        ci = t_interval(d, confidence)
        p = (float(2 * stats.t.sf(abs(ci["mean"]) / ci["se"], ci["df"])) if ci["se"]
             else (0.0 if ci["mean"] != 0 else 1.0))
        return {"difference": ci["mean"], "low": ci["low"], "high": ci["high"], "p_value": p,
                "test": "paired t", "n": ci["n"]}
    xa, xb = _clean(list(a.values()), "a"), _clean(list(b.values()), "b")
    diff = float(xa.mean() - xb.mean())
    if xa.size < 2 or xb.size < 2:
        return {"difference": diff, "low": None, "high": None, "p_value": None,
                "test": "none (one seed)", "n": min(xa.size, xb.size)}
    va, vb = xa.var(ddof=1) / xa.size, xb.var(ddof=1) / xb.size
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (xa.size - 1) + vb ** 2 / (xb.size - 1)) if se else 1.0
    t = float(stats.t.ppf(0.5 + confidence / 2, df))
    p = float(2 * stats.t.sf(abs(diff) / se, df)) if se else (0.0 if diff else 1.0)
    return {"difference": diff, "low": diff - t * se, "high": diff + t * se, "p_value": p,
            "test": "Welch t", "n": min(xa.size, xb.size)}


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None and is not counted)."""
    idx = [i for i, p in enumerate(p_values) if p is not None]
    order = sorted(idx, key=lambda i: p_values[i])
    m = len(order)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def pairwise_contrasts(by_arm_and_seed: Mapping, pairs: Sequence[tuple] | None = None,
                       alpha: float = 0.05, confidence: float = 0.95) -> list[dict]:
    """Contrasts for ``pairs`` of arms (default: all pairs), Holm-adjusted over the family."""
    arms = list(by_arm_and_seed)
    pairs = list(pairs) if pairs is not None else list(itertools.combinations(arms, 2))
    rows = [{"a": a, "b": b, **contrast(by_arm_and_seed[a], by_arm_and_seed[b], confidence)}
            for a, b in pairs]
    for row, adj in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = adj
        row["differs"] = adj is not None and adj < alpha
    return rows


def g_verdict(by_G_and_seed: Mapping[int, Mapping[int, float]], metric: str,
              alpha: float = 0.05) -> dict:
    """The sweep's pre-declared verdict for one regime: the trend (primary) and all pairwise
    G contrasts (Holm), with a one-sentence statement that quotes the interval."""
    trend = trend_in_log2_G(by_G_and_seed, 1 - alpha)
    pairs = pairwise_contrasts(by_G_and_seed, alpha=alpha, confidence=1 - alpha)
    if trend["low"] is None:
        statement = (f"{metric}: slope {trend['slope_per_doubling']:+.4f} per doubling of G "
                     "(one seed: no interval)")
    else:
        sig = trend["p_value"] is not None and trend["p_value"] < alpha
        statement = (f"{metric}: {trend['slope_per_doubling']:+.4f} per doubling of G, "
                     f"{100 * (1 - alpha):.0f}% CI [{trend['low']:+.4f}, {trend['high']:+.4f}] "
                     f"over {len(trend['seeds'])} seeds: "
                     + ("a trend in G" if sig else "no detectable trend in G"))
        n_diff = sum(r["differs"] for r in pairs)
        statement += f"; {n_diff} of {len(pairs)} pairwise contrasts differ after Holm"
    return {"metric": metric, "alpha": alpha, "trend": trend, "contrasts": pairs,
            "statement": statement}
