"""grpolab advise: its numbers against independent computation, its file formats, bad files."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from grpolab import advise as adv
from grpolab import theory
from grpolab._paths import checkout_root
from grpolab.cli.main import main

CENSUS = checkout_root() / "labs" / "results" / "smollm2-pass-rates" / "pass_rates.json"


def zero_variance_by_hand(rates, G):
    return sum(p ** G + (1 - p) ** G for p in rates) / len(rates)


def beta_zero_variance_by_hand(a, b, G):
    """E[p^G + (1-p)^G] for p ~ Beta(a, b), from the rising-factorial moment formula."""
    return (math.prod((a + i) / (a + b + i) for i in range(G))
            + math.prod((b + i) / (a + b + i) for i in range(G)))


def unbiased_by_hand(k, n, G):
    return (math.comb(k, G) + math.comb(n - k, G)) / math.comb(n, G)


# ---- numbers -------------------------------------------------------------------------
def test_rates_table_matches_hand_computation(tmp_path):
    rates = [0.0, 0.05, 0.3, 0.5, 0.9, 1.0]
    f = tmp_path / "rates.csv"
    f.write_text("prompt,pass_rate\n" + "".join(f"q{i},{p}\n" for i, p in enumerate(rates)))
    a = adv.advise(adv.load_pass_rates(f), budget=100, max_G=16)
    assert [r["G"] for r in a.rows] == [2, 4, 8, 16]
    for r in a.rows:
        G = r["G"]
        d = zero_variance_by_hand(rates, G)
        assert r["prompts_per_step"] == 100 // G
        assert r["zero_variance_fraction"] == pytest.approx(d, rel=1e-12)
        assert r["informative_prompts_per_step"] == pytest.approx((100 // G) * (1 - d))
        assert r["completions_per_informative_group"] == pytest.approx(G / (1 - d))
        assert r["gradient_variance_inflation"] == pytest.approx(G / (G - 1))
        kept = [p for p in rates if 0 < p < 1]
        assert r["zero_variance_fraction_filtered"] == pytest.approx(zero_variance_by_hand(kept, G))


def test_counts_use_the_unbiased_estimate_then_the_posterior(tmp_path):
    k, n = [0, 1, 3, 8, 8], 8
    f = tmp_path / "counts.json"
    f.write_text(json.dumps([{"successes": s, "samples": n} for s in k]))
    d = adv.load_pass_rates(f)
    assert d.kind == "counts"
    for G in (2, 4, 8):
        assert d.method(G) == "unbiased"
        want = np.mean([unbiased_by_hand(s, n, G) for s in k])
        assert d.zero_variance_fraction(G) == pytest.approx(want, rel=1e-10)
    # G > n: posterior E[p^G + (1-p)^G | k, n] under the fitted Beta prior
    a, b = d.prior()
    G = 16
    post = [beta_zero_variance_by_hand(a + s, b + n - s, G) for s in k]
    assert d.method(G) == "emp.Bayes"
    assert d.zero_variance_fraction(G) == pytest.approx(np.mean(post), rel=1e-10)


def test_committed_census_numbers():
    doc = json.loads(CENSUS.read_text(encoding="utf-8"))
    k = [r["successes"] for r in doc["records"]]
    n = [r["samples"] for r in doc["records"]]
    a = adv.advise(adv.load_pass_rates(CENSUS), budget=512, max_G=32)
    for r in a.rows:
        want = np.mean([unbiased_by_hand(s, m, r["G"]) for s, m in zip(k, n, strict=True)])
        assert r["zero_variance_fraction"] == pytest.approx(want, rel=1e-9)
    # a prompt never solved in 32 samples has zero variance for every G <= 32
    never = sum(s == 0 for s in k) / len(k)
    assert a.rows[-1]["G"] == 32 and a.rows[-1]["zero_variance_fraction"] >= never - 1e-12
    items = {line["item"] for line in a.recommendation}
    assert {"filter", "G", "adaptive G", "dynamic sampling", "monitor"} <= items
    assert all(line["reason"] for line in a.recommendation)


def test_beta_fit_recovers_a_known_prior():
    rng = np.random.default_rng(1)
    p = rng.beta(0.5, 2.0, size=4000)
    k = rng.binomial(32, p)
    a, b = adv.fit_beta_binomial(k, np.full_like(k, 32))
    assert a == pytest.approx(0.5, rel=0.15) and b == pytest.approx(2.0, rel=0.2)


def test_back_out_beta_reproduces_the_log():
    z, m, G = 0.45, 0.3, 8
    a, b = adv.back_out_beta(z, m, G)
    assert beta_zero_variance_by_hand(a, b, G) == pytest.approx(z, rel=1e-8)
    mc = np.random.default_rng(0).beta(a, b, size=400_000)  # and by simulation
    assert np.mean(mc ** G + (1 - mc) ** G) == pytest.approx(z, abs=0.005)
    assert a / (a + b) == pytest.approx(m, rel=1e-12)
    with pytest.raises(adv.AdviseError, match="no Beta"):
        adv.back_out_beta(0.01, 0.3, 8)  # below m^G + (1-m)^G: no spread fits


def test_back_out_pass_rate():
    for z, G in ((0.6, 8), (0.9, 4), (0.2, 16)):
        p = adv.back_out_pass_rate(z, G)
        assert 0 <= p <= 0.5
        assert p ** G + (1 - p) ** G == pytest.approx(z, abs=1e-9)
    with pytest.raises(adv.AdviseError, match="impossible"):
        adv.back_out_pass_rate(0.001, 4)  # below 2^(1-G)


def test_adaptive_allocation_is_optimal_against_brute_force():
    rates = np.array([0.02, 0.3, 0.5, 0.97])
    mean_G, max_G = 4, 9
    got = adv.adaptive_allocation(rates, mean_G, max_G=max_G)
    assert got.sum() == len(rates) * mean_G and got.min() >= 2 and got.max() <= max_G

    def value(Gs):
        return sum(1 - p ** g - (1 - p) ** g for p, g in zip(rates, Gs, strict=True))

    best = max(value(Gs) for Gs in itertools.product(range(2, max_G + 1), repeat=len(rates))
               if sum(Gs) == len(rates) * mean_G)
    assert value(got) == pytest.approx(best, rel=1e-12)


def test_noise_constants_give_the_exact_models_g_star(tmp_path):
    d = adv.load_pass_rates(_write(tmp_path, "r.json", json.dumps([0.2, 0.5, 0.7])))
    noise = adv.load_noise("1,3,64")
    a = adv.advise(d, budget=512, max_G=64, noise=noise)
    assert a.noise["form"] == "exact"
    assert a.noise["G_star"] == pytest.approx(9.0)              # 1 + √64
    assert a.noise["G_star_paper_form"] == pytest.approx(8.0)   # √64, one less
    # the feasible G is the brute-force minimum of the exact MSE at B = ⌊N/G⌋
    mse = {G: theory.minibatch_gradient_mse(512 // G, G, 1, 3, 64) for G in range(2, 65)}
    assert a.noise["G_star_feasible"] == min(mse, key=mse.get)
    g_line = next(line for line in a.recommendation if line["item"] == "G")
    assert g_line["value"] == a.noise["G_star_feasible"]
    assert "1 + sqrt(c3/c1)" in g_line["reason"] and "2603.01162" in g_line["reason"]
    row = next(r for r in a.rows if r["G"] == 16)
    assert row["gradient_mse"] == pytest.approx(1 / 32 + 3 / (32 * 16) + 64 / (32 * 16 * 15))
    assert "exact model" in adv.format_advice(a)


def test_constants_that_contradict_the_model_are_flagged():
    d = adv.Difficulty("point", "p", p=0.3)
    a = adv.advise(d, budget=512, noise=adv.load_noise("1,3,0.5"))  # c3 < c1
    g_line = next(line for line in a.recommendation if line["item"] == "G")
    assert "c3 < c1 contradicts the model" in g_line["reason"]


def _noise_rows(c1, c2, c3, signal, *, batches=64, points=((4, 2), (4, 4), (4, 8), (16, 2),
                                                           (16, 8), (16, 16))):
    """Rows as grpolab.labs.sweep.sweep writes them, from the exact model (noise-free)."""
    rows = []
    for B, G in points:
        tv = float(theory.minibatch_gradient_mse(B, G, c1, c2, c3))
        rows.append({"G": G, "prompts_per_step": B, "batches": batches, "trace_variance": tv,
                     "mean_gradient_norm_sq": signal + tv / batches})  # E‖ḡ‖² = ‖∇J‖² + tr/n
    return rows


def test_noise_fit_recovers_the_exact_models_constants(tmp_path):
    c1, c2, c3, signal = 0.5, 2.0, 30.0, 4.0
    rows = _noise_rows(c1, c2, c3, signal)
    got = adv.fit_noise_constants(rows)
    assert (got.c1, got.c2, got.c3) == pytest.approx((c1, c2, c3), rel=1e-8)
    assert got.signal == pytest.approx(signal) and got.max_rel_residual < 1e-10
    assert got.g_star == pytest.approx(1 + math.sqrt(c3 / c1)) and not got.notes
    f = _write(tmp_path, "gradient_noise.json", json.dumps({"mixed": rows, "hard": rows[:2]}))
    assert adv.load_noise(str(f), "mixed").c3 == pytest.approx(c3)
    with pytest.raises(adv.AdviseError, match="--noise-regime"):
        adv.load_noise(str(f))
    with pytest.raises(adv.AdviseError, match=">= 3 distinct"):
        adv.load_noise(str(f), "hard")


def _mean_baseline_rows(c1, c2, c3, signal, batches=64):
    """Rows a mean-baseline estimator produces: the leave-one-out model's variance and
    signal, each times ((G − 1)/G)² (r_i − r̄ = ((G − 1)/G)(r_i − r̄₋ᵢ), issue 31 / F1)."""
    rows = []
    for B, G in [(32, 2), (16, 4), (8, 8), (4, 16), (2, 32)]:
        f = ((G - 1) / G) ** 2
        tv = f * float(theory.minibatch_gradient_mse(B, G, c1, c2, c3))
        rows.append({"G": G, "prompts_per_step": B, "batches": batches, "trace_variance": tv,
                     "mean_gradient_norm_sq": f * signal + tv / batches})
    return rows


def test_noise_fit_recovers_planted_constants_from_mean_baseline_rows():
    """F1: a mean-baseline dataset from known leave-one-out constants is recovered within
    5% once its rows are converted; fitted raw, as the labs did, it is not."""
    c1, c2, c3, signal = 0.05, 0.02, 0.4, 0.1  # G* = 1 + sqrt(8) = 3.83
    rows = _mean_baseline_rows(c1, c2, c3, signal)
    got = adv.fit_noise_constants(rows, advantage_baseline="mean")
    assert (got.c1, got.c2, got.c3, got.signal) == pytest.approx((c1, c2, c3, signal),
                                                                 rel=0.05)
    assert got.g_star == pytest.approx(1 + math.sqrt(c3 / c1), rel=0.05)
    assert any("leave-one-out units" in n for n in got.notes)
    raw = adv.fit_noise_constants(rows)  # the old fit: leave-one-out model on raw rows
    assert abs(raw.g_star / got.g_star - 1) > 0.05
    assert abs(raw.c3 / c3 - 1) > 0.05 or abs(raw.c1 / c1 - 1) > 0.05
    # a row's own advantage_baseline key overrides the argument
    tagged = [dict(r, advantage_baseline="mean") for r in rows]
    assert adv.fit_noise_constants(tagged).g_star == pytest.approx(got.g_star)
    with pytest.raises(adv.AdviseError, match="advantage_baseline"):
        adv.fit_noise_constants(rows, advantage_baseline="critic")


def test_noise_fit_debiases_the_signal_and_can_fail_without_it():
    """Without debiasing, ‖ḡ‖² carries tr Var/n of noise: a planted misuse is detectable."""
    rows = _noise_rows(0.5, 2.0, 30.0, 0.1, batches=4)
    assert adv.fit_noise_constants(rows).signal == pytest.approx(0.1)
    raw = adv.fit_noise_constants(rows, debias=False)
    assert raw.signal > 0.1 * 1.1  # biased up by tr Var / n
    undebiased = [{k: v for k, v in r.items() if k != "batches"} for r in rows]
    with pytest.raises(adv.AdviseError, match="no batches"):
        adv.fit_noise_constants(undebiased)
    assert adv.fit_noise_constants(undebiased, debias=False).c3 == pytest.approx(raw.c3)


def test_noise_fit_keeps_c3_above_c1_plus_the_signal():
    """Data that would put c3 below c1 + |grad J|^2 meet the constraint, with a note; an
    unresolved signal falls back to c3 >= c1, also with a note."""
    rows = _noise_rows(0.5, 2.0, 1.0, 0.2)
    strong = [dict(r, mean_gradient_norm_sq=5.0 + r["trace_variance"] / 64) for r in rows]
    got = adv.fit_noise_constants(strong)
    assert got.c3 >= got.c1 + 5.0 - 1e-9
    assert any("binds" in n for n in got.notes)
    assert got.g_star > 2
    flat = [dict(r, mean_gradient_norm_sq=0.5 * r["trace_variance"] / 64) for r in rows]
    got = adv.fit_noise_constants(flat)
    assert got.signal < 0 and got.c3 >= got.c1
    assert any("not resolved" in n for n in got.notes)


@pytest.mark.parametrize("edit, message", [
    ({"G": 1}, "G must be a whole number >= 2"),
    ({"trace_variance": 0.0}, "trace_variance must be > 0"),
    ({"prompts_per_step": 2.5}, "prompts_per_step must be a whole number"),
    ({"batches": 1}, "batches must be a whole number >= 2"),
    ({"mean_gradient_norm_sq": "x"}, "mean_gradient_norm_sq must be a number"),
    ({"G": None}, "has no G"),
])
def test_noise_fit_names_the_bad_row(edit, message):
    rows = _noise_rows(0.5, 2.0, 30.0, 4.0)
    rows[2] = {**rows[2], **edit}
    with pytest.raises(adv.AdviseError, match=message) as e:
        adv.fit_noise_constants(rows, "g.json")
    assert "g.json: gradient-noise row 2" in str(e.value)


def test_committed_gradient_noise_is_fitted_under_the_constraint():
    """The committed rows (std-normalised GRPO, dapo loss) are outside the model's scope: the
    fit still keeps c3 >= c1 + signal (so G* > 2) and says that the model misses rows."""
    path = checkout_root() / "labs" / "results" / "cpu-full" / "gradient_noise.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for name, rows in doc.items():
        got = adv.fit_noise_constants(rows, name)
        assert got.c3 >= got.c1 + max(got.signal, 0.0) - 1e-12
        assert got.g_star > 2
        assert got.points == len(rows)


def test_trl_trainer_state_backs_out_a_beta(tmp_path):
    hist = [{"step": i, "loss": 0.0, "reward": 0.3, "frac_reward_zero_std": 0.45}
            for i in range(1, 21)]
    f = _write(tmp_path, "trainer_state.json", json.dumps({"log_history": hist}))
    d = adv.load_pass_rates(f, num_generations=8)
    assert d.kind == "beta"
    assert d.zero_variance_fraction(8) == pytest.approx(0.45, rel=1e-6)
    assert any("Beta" in s for s in d.assumptions)
    a = adv.advise(d)
    assert next(line for line in a.recommendation if line["item"] == "filter")["value"] == \
        "needs per-prompt pass rates"


def test_trl_log_without_a_reward_is_refused_not_given_one_pass_rate(tmp_path):
    """frac_reward_zero_std alone does not tell a spread of pass rates from one common pass
    rate: advise stops, naming the reward keys it found, instead of assuming one p."""
    lines = "\n".join(json.dumps({"train/frac_reward_zero_std": 0.6, "num_generations": 4})
                      for _ in range(3))
    with pytest.raises(adv.AdviseError, match=r"no reward is logged \(reward keys found: none\)"):
        adv.load_pass_rates(_write(tmp_path, "log.jsonl", lines))


# ---- the G rule (issue 32 item 2) ----------------------------------------------------
def informative_by_hand(rates, G, budget):
    return (budget // G) * (1 - zero_variance_by_hand(rates, G))


def g_line(a):
    return next(line for line in a.recommendation if line["item"] == "G")


def unexplained_drop(a, budget) -> bool:
    """The issue's refutation: the G line's G has fewer expected informative prompts per
    step than TRL's default G = 8 at the same budget, and the line does not say why."""
    rows = {r["G"]: r["informative_prompts_per_step"] for r in a.rows}
    line = g_line(a)
    drop = rows.get(line["value"], math.inf) < rows[8] - 1e-9
    named = ("TRL's default G = 8" in line["reason"]
             and any(w in line["reason"] for w in ("coverage-limited", "compute budget",
                                                   "noise constants")))
    return drop and not named


def test_g_maximises_informative_prompts_per_step_by_hand(tmp_path):
    rates = [0.05, 0.2, 0.45, 0.6, 0.9]
    budget = 256
    a = adv.advise(adv.load_pass_rates(_write(tmp_path, "r.json", json.dumps(rates))),
                   budget=budget, max_G=64)
    inf = {G: informative_by_hand(rates, G, budget) for G in (2, 4, 8, 16, 32, 64)}
    best = max(inf.values())
    want = max(G for G, v in inf.items() if v >= 0.9 * best)  # the largest within G_TIE
    assert adv.G_TIE == 0.10
    assert g_line(a)["value"] == want
    assert f"at a fixed budget of N = {budget} completions per step" in g_line(a)["reason"]
    assert f"{best:.1f}" in g_line(a)["reason"]


def test_the_old_doubling_rule_is_gone_and_its_case_is_refuted():
    """User test, persona B case 2: a TRL log with frac_reward_zero_std 0.581 at G = 8 and
    mean reward 0.456, budget 128. The old rule doubled to G = 16 (4.1 informative prompts
    per step against 6.7 at G = 8) without a word; the check below flags exactly that."""
    assert not hasattr(adv, "MAX_ZERO_VARIANCE")
    a, b = adv.back_out_beta(0.581, 0.456, 8)
    advice = adv.advise(adv.Difficulty("beta", "log", a=a, b=b), budget=128)
    assert not unexplained_drop(advice, 128)
    assert g_line(advice)["value"] <= 8
    # the planted refutation: the old rule's answer fails the same check
    old = adv.Advice(**{**advice.to_dict(), "recommendation": [
        {"item": "G", "value": 16, "reason": "58% > 50% zero-variance at G = 8: double"}]})
    assert unexplained_drop(old, 128)


POOLS = {
    "easy-hard mix": [0.0] * 5 + [0.02, 0.1, 0.3, 0.5, 0.7, 0.95] + [1.0] * 3,
    "hard": [0.004, 0.006, 0.005, 0.003, 0.008],
    "easy": [0.9, 0.95, 0.85, 0.99],
    "middle": [0.4, 0.5, 0.6],
}


@pytest.mark.parametrize("name", POOLS)
@pytest.mark.parametrize("budget", [32, 128, 512, 4096])
@pytest.mark.parametrize("extra", [{}, {"noise": "0.5,2,30"}, {"noise": "1,1,1.5"},
                                   {"total_completions": 10**6, "pool_size": 100}])
def test_never_fewer_informative_prompts_than_trl_default_unexplained(name, budget, extra):
    d = adv.Difficulty("rates", name, rates=np.array(POOLS[name]))
    kw = dict(extra)
    if "noise" in kw:
        kw["noise"] = adv.load_noise(kw["noise"])
    a = adv.advise(d, budget=budget, **kw)
    assert not unexplained_drop(a, budget), g_line(a)
    assert f"at a fixed budget of N = {budget} completions per step" in g_line(a)["reason"]


def test_a_coverage_limited_pool_gets_a_larger_g_and_says_why():
    d = adv.Difficulty("rates", "hard", rates=np.array(POOLS["hard"]))
    a = adv.advise(d, budget=512)
    line = g_line(a)
    assert line["value"] > 8
    assert "coverage-limited" in line["reason"] and "TRL's default G = 8" in line["reason"]


def test_total_compute_raises_g_as_it_grows_then_saturates():
    """IsoCompute's shape: small G at low compute, larger as compute grows, capped."""
    d = adv.Difficulty("rates", "mix", rates=np.array(POOLS["easy-hard mix"]))
    Gs = [g_line(adv.advise(d, budget=512, total_completions=C, pool_size=1000))["value"]
          for C in (512, 10**3, 10**4, 10**5, 10**6)]
    assert Gs == sorted(Gs) and Gs[0] < Gs[-1] and Gs[-1] == 64, Gs
    low = g_line(adv.advise(d, budget=512, total_completions=512, pool_size=1000))
    assert "no change" in low["reason"] and "C = 512 completions" in low["reason"]
    high = g_line(adv.advise(d, budget=512, total_completions=10**5, pool_size=1000))
    assert "known compute budget" in high["reason"]
    log = adv.Difficulty("beta", "log", a=0.5, b=0.5)
    with pytest.raises(adv.AdviseError, match="--pool-size"):
        adv.advise(log, budget=512, total_completions=10**5)


def _census(seed=42, prompts=2000, n=16):
    """Persona B's census (user-test.md): 38% never solvable, 14% always, rest Beta(0.6, 0.9)."""
    rng = np.random.default_rng(seed)
    u, p = rng.random(prompts), rng.beta(0.6, 0.9, prompts)
    p[u < 0.38], p[(u >= 0.38) & (u < 0.52)] = 0.0, 1.0
    return rng.binomial(n, p), n


def _log_from_census(tmp_path, k, n, G=8):
    """The TRL log a run on this census would write at num_generations = G: every logged
    step's mean reward is the census's mean pass rate and its frac_reward_zero_std the
    census's expected zero-variance fraction at G."""
    d = adv.Difficulty("counts", "census", successes=np.asarray(k), trials=np.full(len(k), n))
    step = {"reward": float(np.mean(np.asarray(k) / n)),
            "rewards/accuracy_reward/mean": float(np.mean(np.asarray(k) / n)),
            "frac_reward_zero_std": d.zero_variance_fraction(G)}
    m = step["reward"]
    step["rewards/accuracy_reward/std"] = math.sqrt(m * (1 - m))
    f = _write(tmp_path, "trainer_state.json", json.dumps(
        {"log_history": [{"step": 10 * i, **step} for i in range(1, 6)]}))
    return d, adv.load_pass_rates(f, num_generations=G)


@pytest.mark.parametrize("source", ["persona B", "committed census"])
@pytest.mark.parametrize("budget", [64, 128, 512])
def test_census_and_the_log_it_implies_give_the_same_g(tmp_path, source, budget):
    if source == "persona B":
        k, n = _census()
    else:
        doc = json.loads(CENSUS.read_text(encoding="utf-8"))
        k, n = [r["successes"] for r in doc["records"]], 32
    census, log = _log_from_census(tmp_path, k, n)
    assert log.kind == "beta"
    from_census = adv.advise(census, budget=budget)
    from_log = adv.advise(log, budget=budget)
    assert g_line(from_census)["value"] == g_line(from_log)["value"]


def test_census_and_log_disagree_when_the_log_is_not_from_that_census(tmp_path):
    """The agreement test can fail: a log whose zero-std fraction belongs to a much harder
    pool gives a different G than the census."""
    k, n = _census()
    census = adv.Difficulty("counts", "c", successes=np.asarray(k), trials=np.full(len(k), n))
    f = _write(tmp_path, "trainer_state.json", json.dumps({"log_history": [
        {"reward": 0.01, "frac_reward_zero_std": 0.925}]}))
    log = adv.load_pass_rates(f, num_generations=8)
    assert g_line(adv.advise(census, budget=512))["value"] != \
        g_line(adv.advise(log, budget=512))["value"]


# ---- the command ---------------------------------------------------------------------
def test_cli_on_committed_census(capsys):
    assert main(["advise", "--pass-rates", str(CENSUS), "--budget", "256", "--max-G", "16"]) == 0
    out = capsys.readouterr().out
    assert "recommendation:" in out and "P(zero var.)" in out
    assert main(["advise", "--pass-rates", str(CENSUS), "--budget", "256", "--max-G", "16",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["G"] for r in doc["rows"]] == [2, 4, 8, 16]
    assert doc["budget"] == 256 and doc["prompts"] == 40
    direct = adv.advise(adv.load_pass_rates(CENSUS), budget=256, max_G=16).to_dict()
    assert doc == json.loads(json.dumps(direct))


def _write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


BAD = [
    ("missing", None, [], "no such file"),
    ("empty.csv", "", [], "empty file"),
    ("garbage.json", "{not json at all", [], "not valid JSON"),
    ("garbage.csv", "\x00\x01 hello, world\nfoo,bar\n", [], "no pass-rate column"),
    ("columns.csv", "prompt,score\na,0.5\n", [], "no pass-rate column"),
    ("high.csv", "pass_rate\n0.2\n1.5\n", [], "got 1.5"),
    ("nan.csv", "pass_rate\n0.2\nnan\n", [], "finite"),
    ("nan.json", '{"pass_rates": [0.1, NaN]}', [], "finite"),
    ("header.csv", "pass_rate\n", [], "no data rows"),
    ("counts.json", '[{"successes": 5, "samples": 4}]', [], "between 0 and samples"),
    ("trl.json", '{"log_history": [{"frac_reward_zero_std": 0.5}]}', [], "--num-generations"),
    ("nolog.json", '{"log_history": [{"loss": 0.1}]}', [], "frac_reward_zero_std"),
    ("ok.csv", "pass_rate\n0.2\n", ["--budget", "1"], "--budget"),
    ("ok.csv", "pass_rate\n0.2\n", ["--max-G", "1"], "--max-G"),
    ("ok.csv", "pass_rate\n0.2\n", ["--noise", "1,x,3"], "three numbers"),
    ("ok.csv", "pass_rate\n0.2\n", ["--noise", "0,1,3"], "c1 must be > 0"),
]


@pytest.mark.parametrize("name, text, extra, needle", BAD, ids=[b[0] + str(b[2]) for b in BAD])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, name, text, extra, needle):
    path = tmp_path / name if text is None else _write(tmp_path, name, text)
    assert main(["advise", "--pass-rates", str(path), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err


def test_unsolvable_pool_is_not_answered_with_a_larger_g(tmp_path):
    a = adv.advise(adv.load_pass_rates(_write(tmp_path, "z.csv", "pass_rate\n0\n1\n0\n")))
    lines = {line["item"]: line for line in a.recommendation}
    assert lines["filter"]["value"] == "nothing left"
    assert lines["G"]["value"] == adv.START_G and "change the prompts" in lines["G"]["reason"]
    assert lines["dynamic sampling"]["value"] == "no"
    assert lines["adaptive G"]["value"] == "no"


def test_binary_file_and_bom_csv(tmp_path, capsys):
    f = tmp_path / "image.csv"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    assert main(["advise", "--pass-rates", str(f)]) == 2
    assert "cannot read" in capsys.readouterr().err
    g = tmp_path / "excel.csv"
    g.write_bytes("\ufeffpass_rate\n0.2\n0.5\n".encode())
    assert adv.load_pass_rates(g).rates.tolist() == [0.2, 0.5]


def test_bad_file_from_the_shell_has_no_traceback(tmp_path):
    f = _write(tmp_path, "bad.csv", "pass_rate\n1.5\n")
    out = subprocess.run([sys.executable, "-m", "grpolab", "advise", "--pass-rates", str(f)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().startswith("error: ") and len(out.stderr.strip().splitlines()) == 1


def test_advise_never_imports_torch():
    code = "import sys, grpolab.advise, grpolab.cli.advise; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_max_g_above_the_library_bound_names_the_flag(capsys):
    from grpolab.cli.main import main

    code = main(["advise", "--pass-rates", "labs/results/smollm2-pass-rates/pass_rates.json",
                 "--max-G", "2000000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--max-G" in err


def test_a_sweeps_noise_file_is_fitted_in_the_units_of_its_baseline(tmp_path):
    """advise --noise on a sweep's gradient_noise.json reads the baseline from the sweep.json
    beside it (the committed compute axis used GRPO's mean baseline), so it gives the
    compute axis's own leave-one-out G*; the same rows with no record of their baseline are
    fitted as leave-one-out rows and give another G* (the F1 bug, planted)."""
    import shutil
    from pathlib import Path

    axis = json.loads(Path("labs/results/cpu-compute/compute_axis.json").read_text())
    want = axis["regimes"]["mixed"]["g_star"]["g_star"]
    noise = Path("labs/results/cpu-compute/gradient_noise.json")
    got = adv.load_noise(str(noise), "mixed").g_star
    assert got == pytest.approx(want, rel=1e-6)
    alone = tmp_path / "gradient_noise.json"
    shutil.copyfile(noise, alone)
    assert adv.load_noise(str(alone), "mixed").g_star != pytest.approx(want, rel=0.05)
