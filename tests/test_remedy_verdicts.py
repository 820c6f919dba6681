"""grpolab.labs.remedies.verdicts: the remedy chapter's verdicts, each with a planted case
that must turn it."""

from __future__ import annotations

import numpy as np
import pytest

from grpolab.labs.remedies import verdicts as v


def row(difference, low, high, p_holm, differs=None):
    """A contrast as report.compare_family returns it."""
    return {"difference": difference, "low": low, "high": high, "p_holm": p_holm,
            "differs": (p_holm is not None and p_holm < 0.05) if differs is None else differs}


NULL = row(0.004, -0.010, 0.018, 0.60)
UP = row(0.050, 0.020, 0.080, 0.01)
DOWN = row(-0.040, -0.070, -0.010, 0.02)
NO_TEST = row(0.010, 0.010, 0.010, None)


def test_verdict_word_follows_the_computed_test():
    assert v.verdict_word(NULL) == "no detectable difference"
    assert v.verdict_word(UP) == "a detected difference"
    assert v.verdict_word(NO_TEST).startswith("not a test")
    # the word follows `differs`, not the size of the difference
    assert v.verdict_word({**UP, "differs": False}) == "no detectable difference"


def test_ci_text():
    assert v.ci_text(UP) == "[+0.020, +0.080]"
    assert v.ci_text(UP, 1) == "[+0.0, +0.1]"
    assert v.ci_text({**UP, "low": None}) == "no interval"


def test_secondary_words_name_only_the_contrasts_that_differ():
    pairs = [("a", "b"), ("c", "d")]
    assert v.secondary_words([NULL, NULL], pairs) == (
        "On greedy accuracy, the secondary metric, no contrast differs after Holm")
    words = v.secondary_words([NULL, DOWN], pairs)
    assert "1 of 2 contrasts differ" in words and "c − d -0.040 [-0.070, -0.010]" in words
    assert "a − b" not in words


def test_family_glue_names_and_counts():
    glued = v.family_glue([NULL, UP], "ds", ["mixed", "hard"])
    assert glued["ds_n"] == 2 and glued["ds_ndiff"] == 1
    assert glued["ds_hard_v"] == "a detected difference"
    assert glued["ds_mixed_v"] == "no detectable difference"
    assert glued["ds_hard_d"] == 0.05 and glued["ds_hard_ad"] == 0.05
    assert glued["ds_mixed_w"] == "+0.004, interval [-0.010, +0.018] (no detectable difference)"
    assert set(v.family_glue([DOWN], "x")) == {"x_0_d", "x_0_ad", "x_0_ci", "x_0_v", "x_0_w",
                                               "x_ndiff", "x_n"}
    assert v.family_glue([DOWN], "x")["x_0_ad"] == pytest.approx(0.04)


def test_census_q_is_the_unbiased_informative_fraction():
    # n = 4 samples, k = 2 successes, G = 2: P(both equal) = 2 * C(2,2)/C(4,2) = 1/3
    census = (np.array([0.5]), 4, np.array([2]))
    assert v.census_q(census, 2) == pytest.approx(2 / 3)
    never = (np.zeros(3), 8, np.zeros(3, dtype=int))  # prompts never solved: no signal
    assert v.census_q(never, 4) == 0.0
    mixed = (np.array([0.5, 0.0]), 4, np.array([2, 0]))
    assert v.census_q(mixed, 2) == pytest.approx(1 / 3)


def test_in_band():
    assert v.in_band(0.3).startswith("inside the band 0.2–0.4")
    assert v.in_band(0.2).startswith("inside") and v.in_band(0.4).startswith("inside")
    assert v.in_band(0.41).startswith("outside the band 0.2–0.4")
    assert v.in_band(0.19).startswith("outside")


def test_cost_error_is_the_largest_relative_miss():
    exact = {"generation_batches_observed": 2.0,
             "generation_batches_predicted_from_observed_q": 2.0,
             "completions_per_step_observed": 128.0,
             "completions_per_step_predicted_from_observed_q": 128.0}
    assert v.cost_error([exact]) == 0.0
    off = {**exact, "completions_per_step_observed": 140.8}  # 10% more than predicted
    assert v.cost_error([exact, off]) == pytest.approx(0.10)
    assert v.cost_error([off]) <= v.COST_TOLERANCE + 1e-12
    assert v.cost_error([{**exact, "generation_batches_observed": 3.0}]) > v.COST_TOLERANCE


def test_observed_q_from_theory_rows_or_from_groups_used():
    res = {"theory": {"dyn": {"per_seed": [{"informative_fraction_observed": 0.3},
                                           {"informative_fraction_observed": 0.5}]}},
           "arms": {"plain": {"num_generations": 8}},
           "results": {"plain": {"informative_groups_used": {"values": [4, 2]},
                                 "completions": {"values": [64, 64]}}}}
    assert v.observed_q(res, "dyn") == [0.3, 0.5]
    assert v.observed_q(res, "plain") == [0.5, 0.25]  # 4 of 64/8 groups, 2 of 8


def test_dynamic_sampling_verdict_turns_with_the_test():
    none = v.dynamic_sampling_verdict([NULL, NULL, NULL, NULL], 0.8, 0.25)
    assert none.startswith("At equal completions, dynamic sampling bought no pass@1")
    assert "most groups are informative (q = 0.80)" in none
    assert "most groups have zero variance (q = 0.25)" in none
    # planted: the hard regime's contrast differs upward
    up = v.dynamic_sampling_verdict([NULL, UP, NULL, NULL], 0.8, 0.25)
    assert up == ("At equal completions, dynamic sampling raised final pass@1 on the hard "
                  "regime (q = 0.25) by +0.050 [+0.020, +0.080]")
    down = v.dynamic_sampling_verdict([DOWN, NULL, NULL, NULL], 0.8, 0.25)
    assert "lowered final pass@1 on the mixed regime (q = 0.80) by -0.040" in down
    # carry-over against truncation is not part of the verdict
    assert v.dynamic_sampling_verdict([NULL, NULL, NULL, UP], 0.8, 0.25) == none


def test_dynamic_sampling_short_names_gains_and_the_cost_side():
    assert v.dynamic_sampling_short([NULL] * 4, 0.8, 0.25, True) == (
        "Partly true: the cost is as predicted; no pass@1 gain detected at q = 0.80 or "
        "q = 0.25")
    short = v.dynamic_sampling_short([NULL, NULL, UP, NULL], 0.8, 0.25, False)
    assert short == ("Partly true: the cost is roughly as predicted; a pass@1 gain at equal "
                     "completions with carry-over on the hard regime (q = 0.25)")
    # a detected loss is no gain
    assert "no pass@1 gain" in v.dynamic_sampling_short([DOWN, NULL, NULL, NULL], 0.8, 0.25,
                                                        True)


def test_arm_config_reads_the_recorded_base_and_arm():
    res = {"base": {"learning_rate": 3e-4}, "arms": {"a": {"num_generations": 4}}}
    config, remedy = v.arm_config(res, "a")
    assert config.learning_rate == 3e-4 and config.num_generations == 4 and config.seed == 0
    assert v.arm_config(None, "a")[0].seed == 0


def test_outcome_words_name_each_measure_that_differs():
    by = {"final_sampled_accuracy": [NULL, UP], "early_accuracy": [NULL, DOWN],
          "accuracy_auc": [NULL, NULL]}
    assert v.outcome_words(by, 0) == ("no detectable difference in pass@1 (final, first "
                                      "evaluation or run mean)")
    assert v.outcome_words(by, 1) == ("a detected higher final pass@1 and lower pass@1 at the "
                                      "first evaluation")


def trend(slope, low, high, seeds=(0.01, 0.02, 0.03), p_value=0.01):
    return {"slope_per_doubling": slope, "low": low, "high": high, "p_value": p_value,
            "per_seed_slopes": list(seeds)}


FALLS = trend(-0.02, -0.03, -0.01, (-0.02, -0.025, -0.015))
RISES = trend(0.02, 0.01, 0.03)
FLAT = trend(0.001, -0.01, 0.012, (0.0, 0.01, -0.007), p_value=0.8)


def test_trend_words():
    assert v.trend_words(FALLS).startswith("falls with G (-0.0200 per doubling, 95% CI "
                                           "[-0.0300, -0.0100])")
    assert v.trend_words(FLAT).startswith("shows no detectable trend in G (+0.0010")


def test_slope_difference_turns_with_the_slopes():
    same = v.slope_difference(RISES, trend(0.02, 0.01, 0.03, (0.011, 0.021, 0.029)))
    assert same["verdict"] == "the slopes are not detectably different"
    apart = v.slope_difference(RISES, FALLS)
    assert apart["verdict"] == "the slopes differ detectably"
    assert apart["text"].startswith("+0.0400, 95% CI [") and apart["text"].endswith("(Welch t)")


def test_prompts_x_g_verdict_turns_with_the_trend_and_the_claimed_contrast():
    falls = v.prompts_x_g_verdict(FALLS, NULL)
    assert falls["short"] == "Contradicted here"
    assert falls["verdict"] == "at this fixed budget pass@1 falls with G instead"
    assert falls["lean"].startswith("The lean towards many prompts")
    flat = v.prompts_x_g_verdict(FLAT, NULL)
    assert flat["short"] == "Not supported"
    assert flat["verdict"] == "at this fixed budget no trend in G is detected"
    # planted: no trend, but G = 8 beats G = 16 detectably: the card is contradicted
    assert v.prompts_x_g_verdict(FLAT, UP)["short"] == "Contradicted here"
    assert v.prompts_x_g_verdict(FLAT, DOWN)["short"] == "Not supported"  # G = 16 better
    rises = v.prompts_x_g_verdict(RISES, NULL)
    assert rises["verdict"] == "at this fixed budget pass@1 rises with G, but not as the card says"
    assert rises["short"] == "Not supported" and rises["lean"].startswith("A lean towards")


def test_difficulty_verdict_turns_with_signal_and_learning():
    nothing = {"final_sampled_accuracy": [NULL, NULL], "early_accuracy": [NULL, NULL],
               "accuracy_auc": [NULL, NULL]}
    v0 = v.difficulty_verdict(nothing, NULL)
    assert v0["signal"] == "Not shown about signal"
    assert v0["band_does"] == "does not do detectably what the theory says"
    assert v0["band_need"].startswith("A band filter would need")
    assert v0["verdict_short"] == ("Not shown about signal; the band does not learn detectably "
                                   "faster; the curriculum not detectably different")
    assert v0["verdict"] == ("at a fixed budget on this model it did not make GRPO learn "
                             "detectably faster; the pass-rate-driven curriculum could not be "
                             "told apart from uniform sampling")
    # planted: more signal, the band learns faster early, the curriculum ends behind
    planted = {"final_sampled_accuracy": [NULL, DOWN], "early_accuracy": [UP, NULL],
               "accuracy_auc": [NULL, NULL]}
    v1 = v.difficulty_verdict(planted, UP)
    assert v1["signal"] == "True about signal" and v1["band_need"] == ""
    assert v1["band_does"] == "does what the theory says"
    assert v1["verdict_short"] == ("True about signal; the band changes pass@1 detectably; the "
                                   "curriculum ends behind")
    assert v1["verdict"] == ("at a fixed budget it gave a detected higher pass@1 at the first "
                             "evaluation; the pass-rate-driven curriculum gave a detected lower "
                             "final pass@1 than uniform sampling, the price of the levels it "
                             "never opened")
    # less signal detected is not "true about signal"
    assert v.difficulty_verdict(nothing, DOWN)["signal"] == "Not shown about signal"
    mixed = {**planted, "accuracy_auc": [NULL, UP]}  # the curriculum both lower and higher
    assert v.difficulty_verdict(mixed, NULL)["verdict_short"].endswith("the curriculum differs")


def test_adaptive_g_verdict_turns_with_yield_and_learning():
    nothing = {"final_sampled_accuracy": [NULL] * 3, "early_accuracy": [NULL] * 3,
               "accuracy_auc": [NULL] * 3}
    v0 = v.adaptive_g_verdict(nothing, NULL, NULL)
    assert v0 == {"card_yield": "not detectably different numbers of",
                  "symmetry": "does not move detectably the way",
                  "alloc_yield": "does not raise the yield detectably here",
                  "card_short": "Not shown",
                  "alloc_verdict": "but on this model that bought no pass@1 that these runs "
                                   "can detect",
                  "alloc_short": "Raises signal, not pass@1"}
    # planted: the card's rule yields fewer informative groups, the allocation more, and
    # the allocation raises final pass@1
    learned = {**nothing, "final_sampled_accuracy": [NULL, NULL, UP]}
    v1 = v.adaptive_g_verdict(learned, DOWN, UP)
    assert (v1["card_yield"], v1["symmetry"], v1["card_short"]) == (
        "fewer", "moves the way", "Not supported")
    assert v1["alloc_yield"] == "does raise the yield"
    assert v1["alloc_short"] == "Raises signal and pass@1"
    assert v1["alloc_verdict"].endswith("(a detected higher final pass@1)")
    assert v.adaptive_g_verdict(nothing, UP, DOWN)["card_yield"] == "more"
    assert v.adaptive_g_verdict(nothing, UP, DOWN)["alloc_yield"].startswith("does not")


def test_beta_verdict_turns_with_the_learning_and_kl_contrasts():
    v0 = v.beta_verdict([[NULL] * 3, [NULL] * 3], [NULL] * 3)
    assert (v0["short"], v0["flat"], v0["optimum"]) == (
        "No support", "flat", "(so there is no optimum to move)")
    assert v0["kl_words"].endswith("by no amount these runs can detect")
    assert v0["zero_words"].startswith("β = 0, the setting of DAPO and Dr. GRPO, is as good")
    # planted: one β > 0 beats β = 0 at the first evaluation, and the KL moves
    v1 = v.beta_verdict([[NULL] * 3, [NULL, UP, NULL]], [NULL, DOWN, NULL])
    assert (v1["short"], v1["flat"]) == ("Not settled", "not flat")
    assert v1["zero_words"] == "some β > 0 beats β = 0 detectably"
    assert v1["kl_words"].endswith("detectably")
    # a β > 0 that is detectably worse is not flat, but β = 0 stays as good as any
    v2 = v.beta_verdict([[DOWN, NULL, NULL], [NULL] * 3], [NULL] * 3)
    assert v2["flat"] == "not flat" and v2["zero_words"].startswith("β = 0")


def test_curve_agreement_counts_whole_curves_not_last_points():
    a = {0: [0.1, 0.2, 0.3], 1: [0.1, 0.2, 0.3]}
    assert v.curve_agreement(a, a) == (2, [2, 2], 2)
    # planted: seed 1 parts after the first evaluation but ends at the same point
    b = {0: [0.1, 0.2, 0.3], 1: [0.1, 0.25, 0.3]}
    assert v.curve_agreement(a, b) == (1, [2, 0], 2)
    with pytest.raises(ValueError):
        v.curve_agreement(a, {0: [0.1, 0.2], 1: [0.1, 0.2]})  # not the same evaluations


def test_rewards_verdict_turns_with_each_contrast():
    rows = [NULL] * 10
    v0 = v.rewards_verdict(rows)
    assert v0["granularity_short"] == "Not shown" and v0["granularity_v"] == "not shown"
    assert v0["std_short"] == "True as arithmetic, no measurable effect on pass@1 here"
    assert v0["narrow_reading"] == "as the ε term derived above predicts"
    assert v0["std_verdict"].startswith("std normalization undoes the squeeze")
    planted = [NULL, NULL, NULL, DOWN, NULL, UP, NULL, NULL, NULL, NULL]
    v1 = v.rewards_verdict(planted)
    assert v1["granularity_short"] == "Supported here"  # partial credit detectably worse
    assert v1["std_short"] == "True as arithmetic, and measurable here"
    assert v1["std_verdict"] == "dropping the std division changes the narrow-reward runs"
    assert v1["narrow_reading"] == "as the ε term derived above predicts"
    v2 = v.rewards_verdict([NULL, NULL, NULL, UP, DOWN, NULL, NULL, NULL, NULL, NULL])
    assert v2["granularity_v"] == "contradicted here"
    assert v2["narrow_reading"] == "more than the ε term derived above would suggest"
    assert v2["std_verdict"].startswith("the squeezed reward trains differently")


TP_PAIRS = [(f"T{T}-G{G}", f"T1.0-G{G}") for G in (8, 32) for T in (0.2, 0.7, 1.3)]


def test_temperature_verdict_turns_with_the_contrasts():
    assert v.temperature_pair_name(("T0.2-G8", "T1.0-G8")) == "T = 0.2 at G = 8"
    v0 = v.temperature_verdict(TP_PAIRS, [NULL] * 6, [NULL] * 6, "True about waste")
    assert v0["outcome"] == "unproven about outcomes"
    assert v0["short"] == "True about waste, unproven about outcomes"
    assert v0["acc_verdict"] == "no pass@1 gain or greedy accuracy that these runs can detect"
    assert v0["sweet"].startswith("is not established here")
    # planted: T = 0.7 gains detectably at G = 32; T = 0.2 differs on greedy at G = 8
    gain = [NULL, NULL, NULL, NULL, UP, NULL]
    greedy = [DOWN, NULL, NULL, NULL, NULL, NULL]
    v1 = v.temperature_verdict(TP_PAIRS, gain, greedy, "Not shown about waste")
    assert v1["short"] == "Not shown about waste, measurable in outcomes"
    assert v1["acc_verdict"] == "a detected difference at T = 0.2 at G = 8, T = 0.7 at G = 32"
    assert v1["sweet"] == "is supported at T = 0.7 at G = 32"
    # a detected loss at T = 0.7 is no sweet spot
    v2 = v.temperature_verdict(TP_PAIRS, [NULL, DOWN, NULL, NULL, NULL, NULL], [NULL] * 6, "x")
    assert v2["sweet"].startswith("is not established") and v2["outcome"].startswith("measurable")


def test_length_bias_verdict_turns_with_the_G_contrasts():
    v0 = v.length_bias_verdict([NULL, NULL, NULL], [NULL] * 4)
    assert v0 == {"agg_words": "makes no measurable difference",
                  "verdict_short": "Not supported",
                  "verdict": "a larger G did not amplify the length bias here"}
    v1 = v.length_bias_verdict([DOWN, DOWN, {**DOWN, "differs": False}], [NULL, UP, NULL, NULL])
    assert v1["verdict"].endswith(", and every estimate points the other way")
    assert v1["agg_words"] == "makes a measurable difference"
    v2 = v.length_bias_verdict([NULL, UP, NULL], [NULL] * 4)  # planted: longer at G = 16
    assert v2["verdict_short"] == "Supported here"
    assert v2["verdict"] == "a larger G lengthened completions detectably here"
