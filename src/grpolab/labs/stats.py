"""The labs' pre-declared statistics: effect sizes with t intervals, a trend test in log₂ G,
and pairwise contrasts with Holm's correction. numpy and scipy only.

Every lab verdict in the book comes from these functions, named before the runs:

- **Primary test, the trend:** per seed, the least-squares slope of the metric against
  log₂ G (the seed's runs share their evaluation samples, so a per-seed slope removes
  the seed's evaluation noise; at a fixed budget they do not share a prompt stream, since
  B = budget / G prompts per step consume it at different rates); then a one-sample t
  interval of the mean slope over seeds (n − 1 degrees of freedom). Units: metric change
  per doubling of G.
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
           "g_verdict", "curvature_in_log2_G", "crossing_test", "best_G_with_ties",
           "prompt_bootstrap_trend", "gstar_verdict", "GSTAR_MARGIN", "trend_direction",
           "minimum_detectable_effect", "tost", "EQUIVALENCE_MARGIN", "POWER",
           "plateau_precondition", "PLATEAU_GAIN", "matched_compute_trend", "wilson_interval",
           "trend_words", "direction_verdict"]


def _clean(values, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite, got {values!r}")
    return x


def wilson_interval(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% at the default ``z``) of a binomial proportion k/n:
    unlike p ± z·se it stays inside [0, 1] and does not collapse at k = 0 or k = n.

    Used by: book/labs/01-g-sweep.md (the zero-variance fraction of the first steps)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k = {k}, n = {n}")
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return mid - half, mid + half


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
            "df": n - 1, "t_critical": t, "mde": minimum_detectable_effect(se, n - 1,
                                                                            1 - confidence)}


#: The power at which every null's minimum detectable effect is stated.
POWER = 0.8


def minimum_detectable_effect(se: float | None, df: float, alpha: float = 0.05,
                              power: float = POWER) -> float | None:
    """The smallest true effect a two-sided t test at level ``alpha`` detects with
    probability ``power``: (t₁₋α/₂ + t_power) · se, with t critical values at ``df`` degrees
    of freedom (not the normal's 1.96 + 0.84: with 3 to 5 seeds the t quantiles are much
    larger). ``se`` is the measured standard error, so this is the design's MDE at the
    measured spread. Every null result in the labs is stated with it, so a null reads as
    "no effect larger than this" and not as "no effect".

    Derived in: book/labs/05-compute-axis.md, "Power".
    """
    if se is None or df is None or df < 1 or not math.isfinite(se):
        return None
    return float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se)


#: The declared equivalence margin of a trend in log₂ G (pass@1 per doubling of G): half a
#: percentage point. A slope inside ±0.005 moves pass@1 by at most 2 pp across the labs'
#: whole grid (2 to 32, four doublings), below the seed-to-seed spread of one run.
EQUIVALENCE_MARGIN = 0.005


def tost(values: Sequence[float], margin: float = EQUIVALENCE_MARGIN,
         alpha: float = 0.05) -> dict:
    """Two one-sided t tests (TOST) that the mean of ``values`` (e.g. per-seed slopes) lies
    inside (−margin, +margin). "equivalent" when both one-sided p-values are below
    ``alpha``, i.e. when the (1 − 2α) t interval lies inside the margin; "not equivalent"
    otherwise (which is not evidence of an effect: see the two-sided test for that). The
    margin must be declared before the data are seen.

    Derived in: book/labs/05-compute-axis.md, "Power".
    """
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    x = _clean(values, "values")
    n = x.size
    mean = float(x.mean())
    if n < 2:
        return {"test": "TOST", "margin": margin, "mean": mean, "verdict": "not equivalent",
                "why": "one value: no interval", "p_value": None, "low": None, "high": None}
    se = float(x.std(ddof=1) / math.sqrt(n))
    df = n - 1
    if se <= 1e-12 * max(1.0, abs(mean)):
        p = 0.0 if abs(mean) < margin else 1.0
        low = high = mean
    else:
        p_low = float(stats.t.sf((mean + margin) / se, df))   # H0: mean <= -margin
        p_high = float(stats.t.cdf((mean - margin) / se, df))  # H0: mean >= +margin
        p = max(p_low, p_high)
        t = float(stats.t.ppf(1 - alpha, df))
        low, high = mean - t * se, mean + t * se
    verdict = "equivalent" if p < alpha else "not equivalent"
    return {"test": f"TOST, two one-sided t tests, margin ±{margin:g}", "margin": margin,
            "mean": mean, "low": low, "high": high,
            "interval": f"{100 * (1 - 2 * alpha):.0f}% t interval", "p_value": p,
            "n": n, "df": df, "verdict": verdict}


def direction_verdict(per_seed: Sequence[float], margin: float = EQUIVALENCE_MARGIN,
                      confidence: float = 0.95) -> tuple[str, dict, dict]:
    """The declared verdict on a per-seed difference predicted to be positive (an
    interaction, a gap between arms): "supported" when its t interval lies above 0,
    "refuted" when it lies below, "equivalent" when TOST puts it inside ±``margin``, else
    "inconclusive". Returns (verdict, the t interval, the TOST).

    Used by: book/labs/06-mechanism.md (design C), book/labs/08-coverage-pool.md (design B).
    """
    ci = t_interval(per_seed, confidence)
    eq = tost(per_seed, margin)
    if ci["low"] is not None and ci["low"] > 0:
        verdict = "supported"
    elif ci["high"] is not None and ci["high"] < 0:
        verdict = "refuted"
    elif eq["verdict"] == "equivalent":
        verdict = "equivalent"
    else:
        verdict = "inconclusive"
    return verdict, ci, eq


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
    p = _p_value(ci)
    return {"test": "per-seed OLS slope on log2 G, one-sample t over seeds",
            "slope_per_doubling": ci["mean"], "low": ci["low"], "high": ci["high"],
            "p_value": p, "seeds": seeds, "G": Gs, "per_seed_slopes": slopes,
            "confidence": confidence, "mde": ci.get("mde")}


def trend_direction(trend: dict, alpha: float = 0.05) -> str:
    """The words for a :func:`trend_in_log2_G` result, at level ``alpha``: "rises with G" or
    "falls with G" when the interval excludes 0, else what the interval allows."""
    if trend["low"] is None:
        return "has one seed, so no interval"
    if trend["p_value"] is None:
        return "has no spread over seeds (not a test)"
    if trend["p_value"] >= alpha:
        return "shows no detectable trend in G"
    return "rises with G" if trend["slope_per_doubling"] > 0 else "falls with G"


def trend_words(trend: dict) -> str:
    """A :func:`trend_in_log2_G` result in words: its direction under the declared test
    (:func:`trend_direction`), slope per doubling and 95% interval.
    Used by: book/labs/01-g-sweep.md, book/labs/03-remedies.md."""
    return (f"{trend_direction(trend)} ({trend['slope_per_doubling']:+.4f} per doubling, "
            f"95% CI [{trend['low']:+.4f}, {trend['high']:+.4f}])")


def _p_value(ci: dict) -> float | None:
    """Two-sided p of a t interval's mean against 0. With no spread over seeds there is no
    test: None (a contrast of identical runs has p = 1), so a one-prompt difference shared by
    every seed is never "detected"."""
    if ci["se"] and not _float_residue(ci):
        return float(2 * stats.t.sf(abs(ci["mean"]) / ci["se"], ci["df"]))
    if ci["mean"] == 0:
        return 1.0
    return None


def _float_residue(ci: dict) -> bool:
    """True when a t interval's spread is only rounding (per-seed differences equal up to
    float residue, e.g. 0.005 and 0.005000000000000004): no spread, so no test, rather
    than a t of 10^14."""
    return ci["se"] is not None and ci["se"] <= 1e-9 * abs(ci["mean"])


def contrast(a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95) -> dict:
    """a − b over seeds: paired t when both have the same seeds, else Welch's t."""
    if set(a) == set(b) and len(a) >= 2:
        d = [a[s] - b[s] for s in sorted(a)]
        ci = t_interval(d, confidence)
        test = ("paired t" if (ci["se"] and not _float_residue(ci)) or ci["mean"] == 0 else
                "paired t, no spread (every seed differs by the same amount: not a test)")
        return {"difference": ci["mean"], "low": ci["low"], "high": ci["high"],
                "p_value": _p_value(ci), "test": test, "n": ci["n"], "mde": ci.get("mde")}
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
            "test": "Welch t", "n": min(xa.size, xb.size),
            "mde": minimum_detectable_effect(se, df, 1 - confidence)}


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
              alpha: float = 0.05, *, held_fixed: str = "",
              margin: float | None = EQUIVALENCE_MARGIN) -> dict:
    """The sweep's pre-declared verdict for one regime: the trend (primary) and all pairwise
    G contrasts (Holm), with a one-sentence statement that quotes the interval, names the
    compute held fixed (``held_fixed``, e.g. "at a fixed budget of 64 completions per
    step"), states a null's minimum detectable effect and the TOST equivalence verdict of
    the per-seed slopes at ±``margin`` per doubling (``None``: no equivalence test, for a
    metric whose units the declared margin is not in)."""
    trend = trend_in_log2_G(by_G_and_seed, 1 - alpha)
    pairs = pairwise_contrasts(by_G_and_seed, alpha=alpha, confidence=1 - alpha)
    equivalence = (tost(trend["per_seed_slopes"], margin, alpha) if margin is not None
                   else None)
    if trend["low"] is None:
        statement = (f"{metric}: slope {trend['slope_per_doubling']:+.4f} per doubling of G "
                     "(one seed: no interval)")
    else:
        sig = trend["p_value"] is not None and trend["p_value"] < alpha
        what = ("a trend in G" if sig else "no spread over seeds: not a test"
                if trend["p_value"] is None else "no detectable trend in G")
        statement = (f"{metric}: {trend['slope_per_doubling']:+.4f} per doubling of G"
                     f"{', ' + held_fixed if held_fixed else ''}, "
                     f"{100 * (1 - alpha):.0f}% CI [{trend['low']:+.4f}, {trend['high']:+.4f}] "
                     f"over {len(trend['seeds'])} seeds: {what}")
        if not sig and trend["mde"] is not None:
            statement += f" (80%-power MDE {trend['mde']:.4f})"
        if equivalence is not None:
            statement += f"; TOST at ±{margin:g}: {equivalence['verdict']}"
        n_diff = sum(r["differs"] for r in pairs)
        statement += f"; {n_diff} of {len(pairs)} pairwise contrasts differ after Holm"
    return {"metric": metric, "alpha": alpha, "trend": trend, "contrasts": pairs,
            "equivalence": equivalence, "held_fixed": held_fixed, "statement": statement}


# ----------------------------------------------------------------------------- issue 24
def _per_seed_poly(by_G_and_seed: Mapping[int, Mapping[int, float]], degree: int):
    """Seeds that ran every G, log₂ G, and per-seed least-squares polynomial coefficients
    (highest power first) of the metric on log₂ G."""
    Gs = sorted(by_G_and_seed)
    if len(Gs) < degree + 1:
        raise ValueError(f"a degree-{degree} fit in log2 G needs at least {degree + 1} G values")
    seeds = sorted(set.intersection(*(set(by_G_and_seed[G]) for G in Gs)))
    if not seeds:
        raise ValueError("no seed ran every G")
    x = np.log2(np.asarray(Gs, dtype=float))
    coefs = [np.polyfit(x, [by_G_and_seed[G][s] for G in Gs], degree) for s in seeds]
    return Gs, seeds, x, np.asarray(coefs)


#: A per-seed x² coefficient whose whole effect over the grid, |a|·span(log₂ G)², is below
#: this share of the seed's largest |metric| is float residue of the least-squares fit (a
#: straight line fits to a ≈ 1e−17, not 0): it is "no curvature", a coefficient of 0.
RESIDUE_CURVATURE = 1e-9


def _no_residue_curvature(coefs: np.ndarray, x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``coefs`` with every residue-level x² coefficient (:data:`RESIDUE_CURVATURE`) set to
    0: a t test of residue (all −4e−17) would call a straight line concave, and its vertex
    2^(−b/2a) would overflow to Infinity."""
    span = float(x.max() - x.min())
    scale = np.maximum(np.abs(values).max(axis=1), np.finfo(float).tiny)
    coefs = coefs.copy()
    coefs[np.abs(coefs[:, 0]) * span ** 2 <= RESIDUE_CURVATURE * scale, 0] = 0.0
    return coefs


def _vertex_G(a: float, b: float) -> float | None:
    """2^(−b/2a), or None where there is no curvature or that G overflows a float."""
    if a == 0:
        return None
    with np.errstate(over="ignore"):
        v = float(np.exp2(-b / (2 * a)))
    return v if math.isfinite(v) and v > 0 else None


def curvature_in_log2_G(by_G_and_seed: Mapping[int, Mapping[int, float]],
                        confidence: float = 0.95) -> dict:
    """Per seed, the quadratic coefficient of the metric on log₂ G; its t interval over seeds.

    An interior optimum (what a G* between the grid's ends predicts) needs a concave curve:
    a coefficient below 0 whose interval excludes 0. ``vertex_G`` is the G at each seed's
    vertex (2^(−b/2a)), reported, not tested; None for a seed with no curvature (its x²
    coefficient 0 or float residue, :data:`RESIDUE_CURVATURE`), so no value is non-finite.
    """
    Gs, seeds, x, coefs = _per_seed_poly(by_G_and_seed, 2)
    values = np.array([[by_G_and_seed[G][s] for G in Gs] for s in seeds], dtype=float)
    coefs = _no_residue_curvature(coefs, x, values)
    ci = t_interval(coefs[:, 0], confidence)
    vertex = [_vertex_G(a, b) for a, b, _ in coefs]
    return {"test": "per-seed quadratic in log2 G, one-sample t of its x² coefficient",
            "coefficient": ci["mean"], "low": ci["low"], "high": ci["high"],
            "p_value": _p_value(ci), "per_seed": coefs[:, 0].tolist(), "vertex_G": vertex,
            "seeds": seeds, "G": Gs, "concave": ci["high"] is not None and ci["high"] < 0,
            "convex": ci["low"] is not None and ci["low"] > 0}


#: The declared plateau threshold of the crossing test's precondition (pass@1): the
#: smallest G's gain over the last doubling of compute must have a 95% interval below half a
#: percentage point. IsoCompute's crossing happens where the small-G runs have levelled off;
#: before that, small G leading is IsoCompute's own low-compute prediction.
PLATEAU_GAIN = 0.005


def plateau_precondition(by_checkpoint: Mapping[float, Mapping[int, Mapping[int, float]]],
                         threshold: float = PLATEAU_GAIN, confidence: float = 0.95) -> dict:
    """Whether the smallest G's arm has plateaued: per seed, its metric at the last
    checkpoint minus that at the checkpoint nearest half that compute (at or below it); a t
    interval over seeds; "holds" when the interval's upper end is below ``threshold``.

    Derived in: book/labs/05-compute-axis.md, "The crossing".
    """
    computes = sorted(by_checkpoint)
    last = computes[-1]
    earlier = [c for c in computes if c <= last / 2]
    G = min(by_checkpoint[last])
    if not earlier:
        return {"holds": False, "G": G, "why": "no checkpoint at half the last compute",
                "threshold": threshold}
    half = earlier[-1]
    a, b = by_checkpoint[last].get(G, {}), by_checkpoint[half].get(G, {})
    seeds = sorted(set(a) & set(b))
    ci = t_interval([a[s] - b[s] for s in seeds], confidence) if seeds else None
    holds = bool(ci and ci["high"] is not None and ci["high"] < threshold)
    return {"holds": holds, "G": G, "from": half, "to": last, "gain": ci,
            "threshold": threshold,
            "why": (f"G = {G}'s gain from {half:g} to {last:g} completions has a "
                    f"{100 * confidence:.0f}% interval "
                    + (f"[{ci['low']:+.4f}, {ci['high']:+.4f}]" if ci and ci["low"] is not None
                       else "(none)")
                    + (" below " if holds else " not below ") + f"{threshold:g}")}


def crossing_test(by_checkpoint: Mapping[float, Mapping[int, Mapping[int, float]]],
                  confidence: float = 0.95, plateau: float = PLATEAU_GAIN) -> dict:
    """The declared test of IsoCompute's crossing (the best G grows with compute).

    ``by_checkpoint[compute][G][seed]``: the primary metric of each run at each checkpoint
    (compute = completions consumed, > 0). Per seed and checkpoint, the OLS slope of the
    metric on log₂ G; then per seed, the OLS slope of those slopes on log(compute) (the
    "slope of slopes": how much more a doubling of G is worth per e-fold of compute); then a
    one-sample t interval over seeds. IsoCompute predicts a positive slope of slopes.

    **Precondition** (declared, :func:`plateau_precondition`): the smallest G's arm has
    plateaued (its gain over the last doubling of compute has a 95% interval below
    ``plateau``). Curves that follow IsoCompute but cross beyond the budget show a negative
    slope of slopes inside the window (small G learns first), so without the precondition
    the test would call them "contradicted". Verdict: ``"not reached"`` when the
    precondition fails; else ``"supported"`` when the interval lies above 0,
    ``"contradicted"`` below 0, ``"inconclusive"`` otherwise. ``window_direction`` keeps
    what the interval alone says, and ``mde`` the slope of slopes detectable at 80% power.
    """
    computes = sorted(c for c in by_checkpoint if c > 0)
    if len(computes) < 3:
        raise ValueError("the crossing test needs at least three checkpoints with compute > 0")
    trends = {c: trend_in_log2_G(by_checkpoint[c], confidence) for c in computes}
    seeds = sorted(set.intersection(*(set(t["seeds"]) for t in trends.values())))
    lc = np.log(np.asarray(computes, dtype=float))
    lc = lc - lc.mean()
    per_seed = []
    for s in seeds:
        y = [trends[c]["per_seed_slopes"][trends[c]["seeds"].index(s)] for c in computes]
        per_seed.append(float(np.dot(lc, y) / np.dot(lc, lc)))
    ci = t_interval(per_seed, confidence)
    direction = ("inconclusive" if ci["low"] is None else "supported" if ci["low"] > 0
                 else "contradicted" if ci["high"] < 0 else "inconclusive")
    pre = plateau_precondition(by_checkpoint, plateau, confidence)
    verdict = direction if pre["holds"] else "not reached"
    return {"test": "per seed: slope on log(compute) of the per-checkpoint slope on log2 G; "
                    "one-sample t over seeds; precondition: the smallest G has plateaued",
            "slope_of_slopes": ci["mean"], "low": ci["low"], "high": ci["high"],
            "p_value": _p_value(ci), "mde": ci.get("mde"), "per_seed": per_seed,
            "seeds": seeds, "computes": computes, "verdict": verdict,
            "window_direction": direction, "precondition": pre,
            "slope_by_checkpoint": {c: trends[c]["slope_per_doubling"] for c in computes},
            "slope_by_checkpoint_low": {c: trends[c]["low"] for c in computes},
            "slope_by_checkpoint_high": {c: trends[c]["high"] for c in computes}}


def matched_compute_trend(curves: Mapping[int, Mapping[int, Sequence[tuple[float, float]]]],
                          completions: float, confidence: float = 0.95) -> dict:
    """The trend in log₂ G at matched compute: every arm read at the evaluation where it had
    consumed exactly ``completions`` completions.

    ``curves[G][seed]`` is a run's ``(completions, metric)`` evaluation rows. At equal steps
    with a fixed number of prompts per step, G = 32 spends 16× the completions of G = 2, so
    the equal-steps slope measures the value of more samples per step (more compute), not
    G. Arms with no evaluation at exactly ``completions`` in every seed are left out (and
    listed); at least two G values must remain.

    Derived in: book/labs/01-g-sweep.md, "Matched compute".
    """
    by_G: dict[int, dict[int, float]] = {}
    left_out = []
    for G in sorted(curves):
        at = {}
        for seed, rows in curves[G].items():
            hit = [m for c, m in rows if c == completions]
            if hit:
                at[seed] = hit[-1]
        if at and len(at) == len(curves[G]):
            by_G[G] = at
        else:
            left_out.append(G)
    if len(by_G) < 2:
        raise ValueError(f"fewer than two G values were evaluated at exactly {completions:g} "
                         "completions")
    trend = trend_in_log2_G(by_G, confidence)
    return {**trend, "completions": completions, "G_compared": sorted(by_G),
            "G_left_out": left_out,
            "held_fixed": f"at matched completions ({completions:,.0f})"}


def best_G_with_ties(by_G_and_seed: Mapping[int, Mapping[int, float]],
                     alpha: float = 0.05) -> dict:
    """The G with the highest mean metric and the Gs tied with it: those whose paired
    contrast with the best is not detected after Holm over the family of contrasts with it."""
    means = {G: float(np.mean(list(v.values()))) for G, v in by_G_and_seed.items()}
    best = max(means, key=means.get)
    others = [G for G in sorted(means) if G != best]
    rows = pairwise_contrasts(by_G_and_seed, [(best, G) for G in others], alpha=alpha,
                              confidence=1 - alpha)
    tied = sorted([best] + [r["b"] for r in rows if not r["differs"]])
    return {"best": best, "tied": tied, "means": means, "contrasts": rows}


def prompt_bootstrap_trend(per_prompt: Mapping[int, Mapping[int, Sequence[float]]],
                           n_boot: int = 2000, confidence: float = 0.95,
                           seed: int = 0) -> dict:
    """A two-way bootstrap of the trend in log₂ G: seeds and held-out prompts resampled.

    ``per_prompt[G][seed]`` is one run's per-prompt metric (e.g. successes / samples), the
    same prompts in the same order in every run. Each draw resamples seeds and prompts with
    replacement (the same prompts for every run, so runs stay paired), recomputes each seed's
    slope of the prompt mean on log₂ G and averages them. The seed t interval is conditional
    on this evaluation set; this one also covers which prompts were drawn for it.
    """
    Gs = sorted(per_prompt)
    seeds = sorted(set.intersection(*(set(per_prompt[G]) for G in Gs)))
    if len(Gs) < 2 or not seeds:
        raise ValueError("the bootstrap needs at least two G values and a seed that ran them")
    Y = np.asarray([[np.asarray(per_prompt[G][s], dtype=float) for G in Gs] for s in seeds])
    if Y.ndim != 3 or not np.isfinite(Y).all():
        raise ValueError("per_prompt must hold equally long finite per-prompt scores")
    S, _, P = Y.shape
    x = np.log2(np.asarray(Gs, dtype=float))
    xc = (x - x.mean()) / np.dot(x - x.mean(), x - x.mean())
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for b in range(n_boot):
        ss = rng.integers(0, S, S)
        pp = rng.integers(0, P, P)
        means = Y[ss][:, :, pp].mean(axis=2)  # (seeds, G)
        draws[b] = float((means @ xc).mean())
    lo, hi = np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2])
    point = float((Y.mean(axis=2) @ xc).mean())
    return {"test": "two-way bootstrap (seeds and prompts) of the mean per-seed slope",
            "slope_per_doubling": point, "low": float(lo), "high": float(hi),
            "n_boot": n_boot, "prompts": P, "seeds": seeds}


#: The declared margin of the G* test (pass@1 units): a predicted G whose measured metric is
#: within this of the best measured G's counts as "as good as the best". One percentage point
#: is about the seed-to-seed spread of the labs' final pass@1 (labs/README.md).
GSTAR_MARGIN = 0.01


def _bootstrap_regret(by_G_and_seed, predicted, per_prompt, n_boot, confidence, seed):
    """Signed regret of ``predicted``: the best *other* G's mean minus the predicted G's,
    re-picked in every draw (negative: the predicted G beats every other G); draws resample
    seeds, and prompts too when ``per_prompt`` is given. Against the best other G rather
    than the best G, so a predicted G that is the best does not get a regret of exactly 0
    in every draw: the interval measures by how much it wins."""
    Gs = sorted(by_G_and_seed)
    seeds = sorted(set.intersection(*(set(by_G_and_seed[G]) for G in Gs)))
    rng = np.random.default_rng(seed)
    if per_prompt is not None:
        Y = np.asarray([[np.asarray(per_prompt[G][s], dtype=float) for G in Gs]
                        for s in seeds])  # (seeds, G, prompts)
    else:
        Y = np.asarray([[[by_G_and_seed[G][s]] for G in Gs] for s in seeds])
    S, _, P = Y.shape
    j = Gs.index(predicted)
    draws = np.empty(n_boot)
    for b in range(n_boot):
        ss = rng.integers(0, S, S)
        pp = rng.integers(0, P, P) if P > 1 else np.zeros(1, dtype=int)
        m = Y[ss][:, :, pp].mean(axis=(0, 2))
        draws[b] = float(np.delete(m, j).max() - m[j])
    lo, hi = np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2])
    point = Y.mean(axis=(0, 2))
    return {"mean": float(np.delete(point, j).max() - point[j]), "low": float(lo),
            "high": float(hi),
            "n_boot": n_boot, "resampled": "seeds and prompts" if per_prompt is not None
            else "seeds only (no per-prompt scores stored)",
            "degenerate": bool(hi - lo <= 1e-12)}


def gstar_verdict(by_G_and_seed: Mapping[int, Mapping[int, float]], g_pred: float,
                  g_range: tuple[float, float] | None, margin: float = GSTAR_MARGIN,
                  confidence: float = 0.95, *,
                  per_prompt: Mapping[int, Mapping[int, Sequence[float]]] | None = None,
                  n_boot: int = 2000, seed: int = 0) -> dict:
    """The declared test of a predicted G*, written before the runs (issue 24, item 4;
    issue 31: a non-degenerate interval).

    The prediction is the grid G nearest to ``g_pred`` in log₂. Regret: the metric of the
    best other G minus that of the predicted G (negative when the predicted G wins). Its
    interval is a bootstrap over seeds (and over held-out prompts when
    ``per_prompt[G][seed]`` holds per-prompt scores) that re-picks the best other G in
    every draw, so a prediction that happens to equal the measured best does not get the
    degenerate [0, 0] of a paired t interval against itself. The paired t interval against
    the measured best is kept as ``regret`` for reference. Verdict:

    - ``"inconclusive"`` when ``g_range`` (the prediction's uncertainty) spans every G of the
      grid: a prediction that allows every outcome cannot agree with one;
    - ``"fails"`` when the bootstrap regret's interval lies above ``margin``;
    - ``"agrees"`` when it lies below ``margin``, is not degenerate, some grid G could
      have failed (``power``), *and* the shape the
      prediction implies is there: for an interior predicted G, a concave curve in log₂ G
      (:func:`curvature_in_log2_G`); for a predicted G at an end of the grid, a trend
      toward that end (:func:`trend_in_log2_G`);
    - ``"inconclusive"`` otherwise.

    ``power`` says what the test could detect: the regret's 80%-power MDE and the largest
    regret any grid G has (if that is below the margin plus the MDE, no prediction could
    fail).
    """
    Gs = sorted(by_G_and_seed)
    if g_pred is None or not math.isfinite(g_pred) or g_pred <= 0:
        raise ValueError(f"g_pred must be a positive number, got {g_pred!r}")
    predicted = min(Gs, key=lambda G: abs(math.log2(G) - math.log2(g_pred)))
    best = best_G_with_ties(by_G_and_seed)
    b = best["best"]
    seeds = sorted(set(by_G_and_seed[b]) & set(by_G_and_seed[predicted]))
    regret = t_interval([by_G_and_seed[b][s] - by_G_and_seed[predicted][s] for s in seeds],
                        confidence)
    boot = _bootstrap_regret(by_G_and_seed, predicted, per_prompt, n_boot, confidence, seed)
    curv = curvature_in_log2_G(by_G_and_seed, confidence) if len(Gs) >= 3 else None
    trend = trend_in_log2_G(by_G_and_seed, confidence)
    spans = g_range is not None and g_range[0] <= Gs[0] and g_range[1] >= Gs[-1]
    if predicted == Gs[0]:
        shape = trend["high"] is not None and trend["high"] < 0
    elif predicted == Gs[-1]:
        shape = trend["low"] is not None and trend["low"] > 0
    else:
        shape = bool(curv and curv["concave"])
    # the power of the regret test: the largest regret any grid G has, and the MDE of a
    # contrast with the best at the measured spread
    worst = max(Gs, key=lambda G: best["means"][b] - best["means"][G])
    worst_regret = best["means"][b] - best["means"][worst]
    mdes = [r["mde"] for r in best["contrasts"] if r.get("mde") is not None]
    mde = float(np.median(mdes)) if mdes else None
    can_fail = mde is not None and worst_regret > margin + mde
    if spans:
        verdict, why = "inconclusive", "the predicted range spans every G of the grid"
    elif boot["low"] > margin:
        verdict, why = "fails", f"the best measured G beats the predicted one by more than {margin}"
    elif boot["degenerate"]:
        verdict, why = "inconclusive", "the regret's interval is degenerate: not evidence"
    elif not can_fail and boot["high"] <= margin:
        verdict, why = "inconclusive", ("no grid G could fail here (the largest regret is "
                                        "below the margin plus the MDE): agreement is not "
                                        "evidence")
    elif boot["high"] <= margin and shape:
        verdict, why = "agrees", "as good as the best measured G, with the predicted shape"
    else:
        verdict, why = "inconclusive", ("regret within the margin but the predicted shape is "
                                        "not detected" if boot["high"] <= margin else
                                        "the regret's interval straddles the margin")
    return {"test": "regret of the predicted G vs the best other G, re-picked in every "
                    "bootstrap draw "
                    f"({boot['resampled']}), and the shape the prediction implies",
            "g_pred": g_pred, "g_range": g_range,
            "predicted_G": predicted, "best": best, "regret": regret,
            "regret_bootstrap": boot, "margin": margin,
            "power": {"mde": mde, "worst_G": worst, "worst_regret": worst_regret,
                      "a_prediction_can_fail": can_fail},
            "curvature": curv, "trend": trend, "shape_detected": shape, "verdict": verdict,
            "why": why}
