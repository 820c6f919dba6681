"""The remedy labs' verdicts in words, computed from the declared test: what the chapter glues.

Why here and not in the page: a verdict is code (which contrasts differ after Holm, whether
a cost prediction holds, in which band the informative fraction lies), and code that
decides what a page says is tested. The chapter (book/labs/03-remedies.md) calls these and
glues what they return; the numbers come from :func:`grpolab.labs.remedies.report.compare_family`
on the committed ``results.json`` (:func:`grpolab.labs.lab_results.remedy`).

numpy only beyond the remedy config (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from grpolab import theory
from grpolab.labs.stats import trend_words  # re-exported: the remedies chapter reads it here

__all__ = ["Q_BAND", "COST_TOLERANCE", "arm_config", "ci_text", "verdict_word",
           "secondary_words", "family_glue", "census_q", "in_band", "observed_q",
           "cost_error", "most_groups", "dynamic_sampling_verdict",
           "dynamic_sampling_short", "outcome_words", "trend_words", "slope_difference",
           "prompts_x_g_verdict", "difficulty_verdict", "adaptive_g_verdict",
           "beta_verdict", "curve_agreement", "rewards_verdict", "temperature_pair_name",
           "temperature_verdict", "length_bias_verdict"]

#: Where dynamic sampling has work to do: an informative fraction q in this band (referee E8).
Q_BAND = (0.2, 0.4)
#: The cost side "holds" when the closed forms at the observed q are within this of the runs.
COST_TOLERANCE = 0.10


def arm_config(res: Mapping | None, arm: str):
    """The (GRPOConfig, Remedy) an arm of committed results ran with: the item's recorded
    base and arm overrides (seed 0), so every setting the chapter quotes follows the
    results. Used by: book/labs/03-remedies.md."""
    from grpolab.labs.remedies.remedy import lab_config

    return lab_config(**{**(res or {}).get("base", {}), **(res or {}).get("arms", {}).get(
        arm, {}), "seed": 0})


def ci_text(row: Mapping, digits: int = 3) -> str:
    """A contrast's 95% interval as ``[low, high]``, or "no interval" (one seed)."""
    if row["low"] is None:
        return "no interval"
    return f"[{row['low']:+.{digits}f}, {row['high']:+.{digits}f}]"


def verdict_word(row: Mapping) -> str:
    """The declared test's verdict on one contrast of :func:`compare_family`, in words:
    detected only when ``differs`` (Holm-adjusted p < 0.05); no test when every seed
    differs by the same amount. Used by: book/labs/03-remedies.md."""
    if row["p_holm"] is None:
        return "not a test: every seed differs by the same amount"
    return "a detected difference" if row["differs"] else "no detectable difference"


def secondary_words(rows: Sequence[Mapping], pairs: Sequence[tuple[str, str]],
                    metric: str = "greedy accuracy") -> str:
    """The contrasts of a secondary family that differ after Holm, in words (a secondary
    metric decides no verdict, but what it detects is reported).
    Used by: book/labs/03-remedies.md."""
    hits = [f"{a} − {b} {r['difference']:+.3f} {ci_text(r)}"
            for (a, b), r in zip(pairs, rows, strict=True) if r["differs"]]
    return (f"On {metric}, the secondary metric, no contrast differs after Holm" if not hits
            else f"On {metric}, the secondary metric, {len(hits)} of {len(rows)} contrasts "
            f"differ after Holm: {'; '.join(hits)}")


def family_glue(rows: Sequence[Mapping], key: str, names: Sequence | None = None,
                digits: int = 3) -> dict[str, object]:
    """The glue values of a family of contrasts, by name: for each contrast
    ``{key}_{name}_d`` (difference), ``_ad`` (its size), ``_ci`` (interval), ``_v`` (the
    verdict, from the computed ``differs``) and ``_w`` (all three in words), where ``name``
    is the pair's index or its entry in ``names``; ``{key}_ndiff`` counts the contrasts
    that differ, ``{key}_n`` the family's size. Used by: book/labs/03-remedies.md."""
    out: dict[str, object] = {}
    for i, row in enumerate(rows):
        k = f"{key}_{names[i] if names else i}"
        out[f"{k}_d"] = row["difference"]
        out[f"{k}_ad"] = abs(row["difference"])
        out[f"{k}_ci"] = ci_text(row, digits)
        out[f"{k}_v"] = verdict_word(row)
        out[f"{k}_w"] = (f"{row['difference']:+.{digits}f}, interval {ci_text(row, digits)} "
                         f"({verdict_word(row)})")
    out[f"{key}_ndiff"] = sum(r["differs"] for r in rows)
    out[f"{key}_n"] = len(rows)
    return out


def census_q(census: tuple, G: int) -> float:
    """The informative fraction q at G a census predicts: the mean over prompts of the
    unbiased estimate of 1 − p^G − (1 − p)^G from k successes in n samples. ``census`` is
    (pass rates, samples per prompt n, successes k). Derived in: book/theory/03-zero-variance.md."""
    _, n, k = census
    return 1.0 - float(np.mean(theory.unbiased_zero_variance_estimate(k, np.full_like(k, n), G)))


def in_band(q: float, band: tuple[float, float] = Q_BAND) -> str:
    """Whether an informative fraction lies in the band where dynamic sampling has work to
    do, in words. Used by: book/labs/03-remedies.md."""
    if band[0] <= q <= band[1]:
        return f"inside the band {band[0]:g}–{band[1]:g} where the remedy has work to do"
    return f"outside the band {band[0]:g}–{band[1]:g} the remedy was meant to be tested in"


def observed_q(res: Mapping, arm: str) -> list[float]:
    """The informative fraction q an arm saw, per seed: of the groups the dynamic sampler
    generated (its theory rows), else informative groups used per group generated, which
    is q itself for a plain arm (every group is used) and for the carry-over arm up to the
    surplus of its last step. Used by: book/labs/03-remedies.md."""
    th = (res.get("theory") or {}).get(arm)
    if th:
        return [r["informative_fraction_observed"] for r in th["per_seed"]]
    G = arm_config(res, arm)[0].num_generations
    r = res["results"][arm]
    return [i / (c / G) for i, c in zip(r["informative_groups_used"]["values"],
                                        r["completions"]["values"], strict=True)]


def cost_error(theory_rows: Sequence[Mapping]) -> float:
    """The largest relative error of the dynamic sampler's closed forms (generation batches
    and completions per step, at the q each run observed) against what the runs did."""
    return max(abs(r[o] / r[q] - 1) for r in theory_rows for o, q in (
        ("generation_batches_observed", "generation_batches_predicted_from_observed_q"),
        ("completions_per_step_observed", "completions_per_step_predicted_from_observed_q")))


def most_groups(q: float) -> str:
    """What an informative fraction q means for a batch, in words."""
    return "most groups are informative" if q > 0.5 else "most groups have zero variance"


def _ds_moved(final_rows: Sequence[Mapping], q_mixed: float, q_hard: float):
    """Item 1's primary contrasts that differ after Holm, each with its regime in words."""
    label = {"mixed": f"on the mixed regime (q = {q_mixed:.2f})",
             "hard": f"on the hard regime (q = {q_hard:.2f})",
             "carry": f"with carry-over on the hard regime (q = {q_hard:.2f})"}
    return [(label[n], r) for n, r in zip(("mixed", "hard", "carry"), final_rows[:3],
                                          strict=True) if r["differs"]]


def dynamic_sampling_verdict(final_rows: Sequence[Mapping], q_mixed: float,
                             q_hard: float) -> str:
    """Item 1's verdict on final pass@1 at equal completions, in words, from its declared
    family (:func:`compare_family` rows in the order mixed, hard, carry-over, carry-over
    against truncation; the last is not part of the verdict): the contrasts that differ
    after Holm, each with its sign, interval and the q of its regime; else that none did.
    Used by: book/labs/03-remedies.md, "1. Dynamic sampling"."""
    moved = _ds_moved(final_rows, q_mixed, q_hard)
    if not moved:
        return ("At equal completions, dynamic sampling bought no pass@1 that these runs can "
                f"detect: not on the mixed regime, where {most_groups(q_mixed)} "
                f"(q = {q_mixed:.2f}), not on the hard regime, where {most_groups(q_hard)} "
                f"(q = {q_hard:.2f}), and not with the surplus kept")
    return "At equal completions, dynamic sampling " + "; ".join(
        f"{'raised' if r['difference'] > 0 else 'lowered'} final pass@1 {label} by "
        f"{r['difference']:+.3f} {ci_text(r)}" for label, r in moved)


def dynamic_sampling_short(final_rows: Sequence[Mapping], q_mixed: float, q_hard: float,
                           cost_holds: bool) -> str:
    """Item 1's verdict on card 1's claim for the audit table: "Partly true" (the cost side
    is the closed form's), with the pass@1 gains detected at equal completions, if any.
    Used by: book/labs/03-remedies.md, "1. Dynamic sampling"."""
    up = [label for label, r in _ds_moved(final_rows, q_mixed, q_hard) if r["difference"] > 0]
    return ("Partly true: the cost is " + ("as predicted" if cost_holds else
                                           "roughly as predicted") + "; "
            + (f"a pass@1 gain at equal completions {' and '.join(up)}" if up else
               f"no pass@1 gain detected at q = {q_mixed:.2f} or q = {q_hard:.2f}"))


#: The learning measures a contrast is read on, in words (item 2's outcome).
LEARNING_MEASURES = {"final_sampled_accuracy": "final pass@1",
                     "early_accuracy": "pass@1 at the first evaluation",
                     "accuracy_auc": "mean pass@1 over the run"}


def outcome_words(rows_by_metric: Mapping[str, Sequence[Mapping]], i: int) -> str:
    """How contrast ``i`` fared on the learning measures (final, first evaluation, run
    mean), in words: which of them differ after Holm and in which direction.
    Used by: book/labs/03-remedies.md, "2. Difficulty"."""
    hits = [f"{'higher' if rows[i]['difference'] > 0 else 'lower'} {LEARNING_MEASURES[m]}"
            for m, rows in rows_by_metric.items() if rows[i]["differs"]]
    return ("no detectable difference in pass@1 (final, first evaluation or run mean)"
            if not hits else "a detected " + " and ".join(hits))


def slope_difference(item: Mapping, sweep: Mapping) -> dict[str, str]:
    """Two trends' per-seed slopes compared (Welch t: different runs, not paired): the
    difference with its interval, and whether it is detectable, in words.
    Used by: book/labs/03-remedies.md, "8. Prompts × G"."""
    from grpolab.labs.stats import contrast

    w = contrast({("item", i): v for i, v in enumerate(item["per_seed_slopes"])},
                 {("sweep", i): v for i, v in enumerate(sweep["per_seed_slopes"])})
    return {"text": f"{w['difference']:+.4f}, 95% CI [{w['low']:+.4f}, {w['high']:+.4f}] "
                    "(Welch t)",
            "verdict": "the slopes differ detectably" if w["p_value"] < 0.05 else
                       "the slopes are not detectably different"}


def prompts_x_g_verdict(trend: Mapping, claim_row: Mapping) -> dict[str, str]:
    """Item 8's verdict on the card's claim that G = 16 beats G = 8 at a fixed budget:
    ``short`` (the audit table's word: contradicted when pass@1 falls with G or G = 8
    beats G = 16 detectably, else not supported), ``lean`` and ``verdict`` (the prose).
    ``trend``: pass@1's trend in log₂ G; ``claim_row``: the contrast G = 8 − G = 16.
    Used by: book/labs/03-remedies.md, "8. Prompts × G"."""
    from grpolab.labs.stats import trend_direction

    direction = trend_direction(trend)
    falls = direction == "falls with G"
    return {
        "short": "Contradicted here" if (falls or (claim_row["differs"]
                                                    and claim_row["difference"] > 0))
        else "Not supported",
        "lean": "The lean towards many prompts and small groups matches" if falls else
                "A lean towards small groups, which these runs do not show, would match",
        "verdict": "at this fixed budget pass@1 falls with G instead" if falls else
                   "at this fixed budget pass@1 rises with G, but not as the card says"
                   if direction == "rises with G" else
                   "at this fixed budget no trend in G is detected"}


def difficulty_verdict(learn: Mapping[str, Sequence[Mapping]], signal: Mapping) -> dict[str, str]:
    """Item 2's verdicts in words. ``learn``: the learning measures' families (contrast 0:
    band − uniform, 1: curriculum − uniform; see :func:`outcome_words`); ``signal``: the
    band's contrast on informative groups per 1k completions. The claim about signal holds
    only when the band yields detectably more informative groups; a learning effect only
    when some learning measure differs after Holm.
    Used by: book/labs/03-remedies.md, "2. Difficulty"."""
    band_any = any(r[0]["differs"] for r in learn.values())
    curr_any = any(r[1]["differs"] for r in learn.values())
    curr_lower = all(r[1]["difference"] < 0 for r in learn.values() if r[1]["differs"])
    more_signal = bool(signal["differs"] and signal["difference"] > 0)
    signal_word = "True about signal" if more_signal else "Not shown about signal"
    return {
        "band_need": "" if band_any else (
            "A band filter would need a regime where uniform sampling leaves much more to "
            "learn within the budget to show an effect on learning."),
        "band_does": "does what the theory says" if more_signal else
                     "does not do detectably what the theory says",
        "signal": signal_word,
        "verdict_short": signal_word + "; " + (
            "the band does not learn detectably faster" if not band_any else
            "the band changes pass@1 detectably") + "; " + (
            "the curriculum not detectably different" if not curr_any else
            "the curriculum ends behind" if curr_lower else "the curriculum differs"),
        "verdict": ("at a fixed budget on this model it did not make GRPO learn detectably "
                    "faster" if not band_any else
                    f"at a fixed budget it gave {outcome_words(learn, 0)}")
        + "; the pass-rate-driven curriculum " + (
            "could not be told apart from uniform sampling" if not curr_any else
            f"gave {outcome_words(learn, 1)} than uniform sampling, the price of the levels "
            "it never opened" if curr_lower else f"gave {outcome_words(learn, 1)}"),
    }


def adaptive_g_verdict(learn: Mapping[str, Sequence[Mapping]], card: Mapping,
                       allocate: Mapping) -> dict[str, str]:
    """Item 3's verdicts in words. ``learn``: the learning measures' families (contrast 2:
    allocation − fixed G = 8); ``card`` and ``allocate``: the card's rule and the budget
    allocation against fixed G = 8 on informative groups per 1k completions. The card's
    asymmetric rule is "Not supported" only when it yields detectably fewer informative
    groups; the allocation raises the yield only when detectably higher.
    Used by: book/labs/03-remedies.md, "3. Adaptive G"."""
    card_fewer = bool(card["differs"] and card["difference"] < 0)
    alloc_more = bool(allocate["differs"] and allocate["difference"] > 0)
    alloc_up = any(r[2]["differs"] and r[2]["difference"] > 0 for r in learn.values())
    return {
        "card_yield": "fewer" if card_fewer else "more" if card["differs"] else
                      "not detectably different numbers of",
        "symmetry": "moves the way" if card_fewer else "does not move detectably the way",
        "alloc_yield": "does raise the yield" if alloc_more else
                       "does not raise the yield detectably here",
        "card_short": "Not supported" if card_fewer else "Not shown",
        "alloc_verdict": "and on this model it also raised pass@1 on at least one of the "
                         f"learning measures ({outcome_words(learn, 2)})" if alloc_up else
                         "but on this model that bought no pass@1 that these runs can detect",
        "alloc_short": "Raises signal and pass@1" if alloc_up else "Raises signal, not pass@1",
    }


def beta_verdict(learning: Sequence[Sequence[Mapping]], kl: Sequence[Mapping]) -> dict[str, str]:
    """Item 5's verdicts in words on the rule β ∝ 1/√G. ``learning``: the families of every
    β > 0 against β = 0 on the learning measures (final and first-evaluation pass@1);
    ``kl``: the same family on the final KL to the warm start. Pass@1 is "flat" in β when
    no learning contrast differs after Holm; then the rule has no optimum to move and the
    claim "No support"; β = 0 is as good as any unless some β > 0 beats it detectably.
    Used by: book/labs/03-remedies.md, "5. β × G"."""
    rows = [r for family in learning for r in family]
    flat = not any(r["differs"] for r in rows)
    return {
        "short": "No support" if flat else "Not settled",
        "optimum": "(so there is no optimum to move)" if flat else
                   "(so the best β can be read off the table above)",
        "kl_words": "the KL weight changes the final KL to the warm start by no amount these "
                    "runs can detect" if not any(r["differs"] for r in kl) else
                    "the KL weight changes the final KL to the warm start detectably",
        "flat": "flat" if flat else "not flat",
        "zero_words": "β = 0, the setting of DAPO and Dr. GRPO, is as good as any that these "
                      "runs can tell apart" if not any(r["differs"] and r["difference"] > 0
                                                       for r in rows)
                      else "some β > 0 beats β = 0 detectably",
    }


def curve_agreement(a: Mapping[int, Sequence[float]],
                    b: Mapping[int, Sequence[float]]) -> tuple[int, list[int], int]:
    """Do two arms' runs agree run for run? ``a``, ``b``: each seed's whole pass@1 curve
    (every evaluation, the warm start first), not only its last point, which two different
    runs can share by chance. Returns the seeds whose curves agree at every evaluation, per
    seed the evaluations after the warm start before the first disagreement, and the
    evaluations per run after the warm start. Used by: book/labs/03-remedies.md, "6."."""
    first, last = [], 0
    for k in a:
        same = [x == y for x, y in zip(a[k], b[k], strict=True)]
        first.append((same.index(False) if False in same else len(same)) - 1)
        last = len(a[k]) - 1
    return sum(f == len(a[k]) - 1 for f, k in zip(first, a, strict=True)), first, last


def rewards_verdict(primary: Sequence[Mapping]) -> dict[str, str]:
    """Item 6's verdicts in words, from its family on final pass@1 in the order of the
    chapter's ``RW_PAIRS`` (3: partial credit − binary, 4: narrow − partial credit under std
    normalization, 5: narrow mean-only − narrow std). "Supported" for the claim that 0/1
    rewards are more robust only when partial credit is detectably worse.
    Used by: book/labs/03-remedies.md, "6. Reward granularity and normalization"."""
    partial, narrow, narrow_mean = primary[3], primary[4], primary[5]
    moved = narrow["differs"] or narrow_mean["differs"]
    granularity = ("not shown" if not partial["differs"] else
                   "supported here" if partial["difference"] < 0 else "contradicted here")
    return {
        "narrow_reading": "as the ε term derived above predicts" if not narrow["differs"] else
                          "more than the ε term derived above would suggest",
        "std_verdict": "std normalization undoes the squeeze (asserted above), the squeezed "
                       "reward trains like partial credit under it, and dropping the std "
                       "division makes no detectable difference either" if not moved else
                       "; ".join(w for w, r in (
                           ("the squeezed reward trains differently from partial credit "
                            "under std normalization", narrow),
                           ("dropping the std division changes the narrow-reward runs",
                            narrow_mean)) if r["differs"]),
        "std_short": "True as arithmetic, no measurable effect on pass@1 here" if not moved
                     else "True as arithmetic, and measurable here",
        "granularity_short": granularity[0].upper() + granularity[1:],
        "granularity_v": granularity,
    }


def temperature_pair_name(pair: tuple[str, str]) -> str:
    """'T = 0.2 at G = 8' for the temperature item's pair ('T0.2-G8', 'T1.0-G8')."""
    T, G = pair[0].removeprefix("T").split("-G")
    return f"T = {T} at G = {G}"


def temperature_verdict(pairs: Sequence[tuple[str, str]], gain: Sequence[Mapping],
                        greedy: Sequence[Mapping], waste: str) -> dict[str, str]:
    """Item 4's verdicts in words. ``pairs``: every temperature against T = 1 at the same
    G; ``gain``, ``greedy``: their families on the pass@1 gain (primary) and on greedy
    accuracy; ``waste``: the probe's verdict on wasted completions. The outcome is
    "measurable" only when some contrast differs after Holm; the claimed sweet spot
    T ∈ [0.7, 1.0] is supported only where T = 0.7 gains detectably more than T = 1.
    Used by: book/labs/03-remedies.md, "4. Temperature"."""
    hit = [temperature_pair_name(p) for rows in (gain, greedy)
           for p, r in zip(pairs, rows, strict=True) if r["differs"]]
    outcome = "unproven about outcomes" if not hit else "measurable in outcomes"
    sweet = [temperature_pair_name(p) for p, r in zip(pairs, gain, strict=True)
             if p[0].startswith("T0.7") and r["differs"] and r["difference"] > 0]
    return {
        "outcome": outcome, "short": f"{waste}, {outcome}",
        "acc_verdict": "no pass@1 gain or greedy accuracy that these runs can detect" if not hit
                       else f"a detected difference at {', '.join(sorted(set(hit)))}",
        "sweet": "is supported at " + ", ".join(sweet) if sweet else
                 "is not established here: T = 0.7 does not gain detectably more than T = 1 "
                 "at either G",
    }


def length_bias_verdict(by_G: Sequence[Mapping],
                        aggregation: Sequence[Mapping]) -> dict[str, str]:
    """Item 7's verdicts in words. ``by_G``: the final completion length at G = 16 minus
    G = 4 per loss aggregation (Holm over them); ``aggregation``: ``grpo`` and ``dr_grpo``
    against ``dapo`` on the same length. "Supported" (a larger G amplifies the length
    bias) only when some G = 16 − G = 4 contrast is detectably positive.
    Used by: book/labs/03-remedies.md, "7. Length bias"."""
    up = any(r["differs"] and r["difference"] > 0 for r in by_G)
    return {
        "agg_words": "makes no measurable difference" if not any(r["differs"]
                                                                 for r in aggregation)
                     else "makes a measurable difference",
        "verdict_short": "Supported here" if up else "Not supported",
        "verdict": "a larger G lengthened completions detectably here" if up else
                   "a larger G did not amplify the length bias here"
                   + (", and every estimate points the other way"
                      if all(r["difference"] < 0 for r in by_G) else ""),
    }
