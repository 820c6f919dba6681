"""grpolab.toy: the generator, the datasets, one GRPO step, agreement with theory, G*."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from grpolab import theory, toy
from grpolab.advantages import group_advantages
from grpolab.book import playground


@pytest.fixture(scope="module")
def ds():
    return toy.beta_dataset(1, 2, 64)


# ----------------------------------------------------------------------------------------
# The generator and the datasets
# ----------------------------------------------------------------------------------------
def test_mix32_is_mulberry32():
    # mulberry32(seed = 0): state += 0x6D2B79F5 then the mixer; its first outputs, worked by
    # hand-translating the reference C into Python ints.
    def ref(x):
        t = (x + 0x6D2B79F5) & 0xFFFFFFFF
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + ((t ^ (t >> 7)) * (t | 61))) & 0xFFFFFFFF
        return (t ^ (t >> 14)) & 0xFFFFFFFF
    xs = np.array([0, 1, 12345, 0xFFFFFFFF, 0x9E3779B9], dtype=np.uint32)
    assert toy._mix32(xs).tolist() == [ref(int(x)) for x in xs]


def test_uniforms_are_uniform_and_seeded():
    u = toy.uniforms(np.arange(4), np.arange(50_000))
    assert u.shape == (4, 50_000) and (u >= 0).all() and (u < 1).all()
    assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / u.size)
    counts = np.histogram(u.ravel(), bins=20, range=(0, 1))[0]
    expected = u.size / 20
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 43.8, chi2  # 99.9% point of chi2 with 19 degrees of freedom
    assert np.array_equal(toy.uniforms([7], [3, 4]), toy.uniforms([7], [3, 4]))
    # seeds are not shifted copies of one stream: correlation of neighbouring seeds ~ 0
    assert abs(np.corrcoef(u[0, 1:], u[1, :-1])[0, 1]) < 0.02


def test_beta_dataset_is_the_prior_quantiles(ds):
    from scipy import stats

    q = (np.arange(64) + 0.5) / 64
    assert np.allclose(ds.pass_rates, stats.beta.ppf(q, 1, 2), atol=1e-12)
    assert toy.beta_quantile(0.3, 0.5, 0.5) == pytest.approx(stats.beta.ppf(0.3, 0.5, 0.5),
                                                            abs=1e-12)
    assert ds.buckets.tolist() == sorted(ds.buckets.tolist())


def test_empirical_dataset_uses_jeffreys_means():
    d = toy.empirical_dataset([0, 16, 32], 32)
    assert d.pass_rates.tolist() == [0.5 / 33, 16.5 / 33, 32.5 / 33]


def test_smollm2_pass_rates_are_the_committed_ones():
    counts = playground.smollm2_counts()
    assert len(counts["successes"]) == len(counts["samples"]) >= 10
    d = toy.empirical_dataset(counts["successes"], counts["samples"])
    assert (d.pass_rates > 0).all() and (d.pass_rates < 1).all()


# ----------------------------------------------------------------------------------------
# Bad input: one clear error each
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, needle", [
    ({"num_generations": 1}, "num_generations"),
    ({"num_generations": 2.5}, "num_generations"),
    ({"optimizer": "rmsprop"}, "optimizer"),
    ({"loss_type": "bnpo"}, "loss_type"),
    ({"scale_rewards": "std"}, "scale_rewards"),
    ({"learning_rate": float("nan")}, "learning_rate"),
    ({"learning_rate": 0}, "learning_rate"),
    ({"temperature": -1}, "temperature"),
    ({"beta": -0.1}, "beta"),
    ({"transfer": 2}, "transfer"),
    ({"budget": 4, "num_generations": 8}, "budget"),
    ({"filter_low": 0.6, "filter_high": 0.5}, "filter"),
])
def test_bad_config_raises_a_clear_error(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        toy.ToyConfig(**kwargs)


def test_bad_datasets_and_seeds_raise(ds):
    with pytest.raises(ValueError, match="Beta parameter a"):
        toy.beta_dataset(0, 1)
    with pytest.raises(ValueError, match="pass rates"):
        toy.Dataset(np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="successes"):
        toy.empirical_dataset([5], 4)
    with pytest.raises(ValueError, match="seeds"):
        toy.train(ds, toy.ToyConfig(steps=2), [-1])
    with pytest.raises(ValueError, match="seeds"):
        toy.train(ds, toy.ToyConfig(steps=2), [0.5])
    with pytest.raises(ValueError, match="keeps no prompt"):
        toy.train(ds, toy.ToyConfig(steps=2, filter_low=0.999, filter_high=1.0), [0])
    with pytest.raises(ValueError, match="2 seeds"):
        toy.summarize(np.zeros((1, 3)))


# ----------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------
def test_same_seed_same_numbers_and_seeds_are_independent(ds):
    cfg = toy.ToyConfig(steps=30)
    a = toy.train(ds, cfg, [0, 1, 2])
    b = toy.train(ds, cfg, [2, 0])
    assert np.array_equal(a.pass_rate[[2, 0]], b.pass_rate)
    assert np.array_equal(a.theta[[2, 0]], b.theta)
    assert not np.array_equal(a.pass_rate[0], a.pass_rate[1])


def test_run_starts_at_the_dataset_and_learns(ds):
    r = toy.train(ds, toy.ToyConfig(steps=100), range(20))
    assert np.allclose(r.pass_rate[:, 0], ds.pass_rates.mean())
    assert (r.pass_rate[:, -1] > r.pass_rate[:, 0] + 0.1).all()
    assert np.array_equal(r.completions[:, -1], np.full(20, 100 * 64))
    assert r.pass_rate.shape == (20, 101) and r.zero_variance_observed.shape == (20, 100)


def test_advantages_match_group_advantages_per_seed():
    rng = np.random.default_rng(0)
    y = (rng.random((3, 4, 6)) < 0.4).astype(float)
    for scale in ("group", "batch", "none"):
        for baseline in ("mean", "leave_one_out"):
            cfg = toy.ToyConfig(num_generations=6, scale_rewards=scale, baseline=baseline)
            got = toy._advantages(y, cfg)
            for s in range(3):
                ref = group_advantages(y[s].ravel(), 6, scale=scale, baseline=baseline)
                assert np.allclose(got[s].ravel(), ref, atol=1e-12), (scale, baseline)


def test_one_step_gradient_is_the_exact_score_function(ds):
    """The first step, recomputed by hand from the same draws: Σ_i A_i (y_i − p) / (B·G)."""
    cfg = toy.ToyConfig(num_generations=4, mode="prompts", prompts_per_step=3, steps=1,
                        optimizer="sgd", learning_rate=1.0, transfer=0.5)
    r = toy.train(ds, cfg, [5])
    u = toy.uniforms([5], np.arange(3 * 5))[0]
    idx = np.floor(u[:3] * 64).astype(int)
    p = ds.pass_rates[idx]
    y = (u[3:].reshape(3, 4) < p[:, None]).astype(float)
    adv = group_advantages(y.ravel(), 4).reshape(3, 4)
    g = (adv * (y - p[:, None])).sum(axis=1) / 12
    expected = np.zeros(65)
    expected[0] = 0.5 * g.sum()
    np.add.at(expected, idx + 1, g)
    assert np.allclose(r.theta[0], expected, atol=1e-14)


def test_loss_types_coincide_for_equal_lengths_and_differ_otherwise(ds):
    runs = {lt: toy.train(ds, toy.ToyConfig(loss_type=lt, steps=40, optimizer="sgd",
                                            learning_rate=2.0), range(4)).theta
            for lt in toy.LOSS_TYPES}
    assert np.allclose(runs["grpo"], runs["dapo"]) and np.allclose(runs["grpo"], runs["dr_grpo"])
    longer = {lt: toy.train(ds, toy.ToyConfig(loss_type=lt, steps=40, optimizer="sgd",
                                              learning_rate=2.0, wrong_length=3.0),
                            range(4)).theta for lt in toy.LOSS_TYPES}
    assert not np.allclose(longer["grpo"], longer["dapo"])


def test_kl_to_the_start_holds_the_policy_back(ds):
    free = toy.train(ds, toy.ToyConfig(steps=80), range(10))
    held = toy.train(ds, toy.ToyConfig(steps=80, beta=1.0), range(10))
    assert held.pass_rate[:, -1].mean() < free.pass_rate[:, -1].mean() - 0.02


def test_dynamic_sampling_keeps_informative_groups_and_pays_for_them(ds):
    hard = toy.beta_dataset(0.3, 3)
    cfg = toy.ToyConfig(num_generations=4, steps=60, dynamic_sampling=True, max_batches=5)
    r = toy.train(hard, cfg, range(20))
    per_step = np.diff(r.completions, axis=1)
    B = cfg.prompts
    assert ((per_step % (B * 4)) == 0).all() and (per_step >= B * 4).all()
    assert (per_step <= 5 * B * 4).all() and (per_step > B * 4).any()
    plain = toy.train(hard, toy.replace(cfg, dynamic_sampling=False), range(20))
    # per step it learns faster: every group of its batch carries signal
    assert r.pass_rate[:, -1].mean() > plain.pass_rate[:, -1].mean()


def test_difficulty_filter_trains_only_the_kept_prompts(ds):
    cfg = toy.ToyConfig(steps=30, transfer=0.0, filter_low=0.2, filter_high=0.8)
    r = toy.train(ds, cfg, range(3))
    kept = (ds.pass_rates >= 0.2) & (ds.pass_rates <= 0.8)
    assert np.all(r.theta[:, 1:][:, ~kept] == 0) and np.any(r.theta[:, 1:][:, kept] != 0)


def test_low_temperature_polarises_pass_rates_and_kills_groups(ds):
    hot = toy.train(ds, toy.ToyConfig(steps=5), range(50))
    cold = toy.train(ds, toy.ToyConfig(steps=5, temperature=0.3), range(50))
    assert cold.zero_variance_observed[:, 0].mean() > hot.zero_variance_observed[:, 0].mean() + 0.1


# ----------------------------------------------------------------------------------------
# Agreement with grpolab.theory
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("G", [2, 8, 32])
def test_dead_fraction_agrees_with_p_to_the_G(ds, G):
    """Observed minus p^G + (1−p)^G at the running pass rates: mean 0 within 4 SE.

    Given the policy and the drawn prompts, p^G + (1−p)^G is the exact conditional mean of
    the observed fraction, so the differences are martingale increments (uncorrelated).
    """
    r = toy.train(ds, toy.ToyConfig(num_generations=G, steps=100), range(100))
    diff = (r.zero_variance_observed - r.zero_variance_predicted).ravel()
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert abs(diff.mean()) < 4 * se + 1e-12, (diff.mean(), se)
    # and at the start it is the dataset average of the closed form
    start = float(np.mean(theory.empirical_zero_variance_probability(ds.pass_rates, G)))
    obs0 = r.zero_variance_observed[:, 0]
    assert abs(obs0.mean() - start) < 4 * obs0.std() / 10


def test_t_critical_matches_scipy():
    from scipy import stats

    for df in (1, 2, 4, 5, 9, 10, 11, 12, 30, 199):
        assert toy.t_critical_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-4)


# ----------------------------------------------------------------------------------------
# Gradient MSE, the fitted constants and G*
# ----------------------------------------------------------------------------------------
def test_measured_mse_agrees_with_the_exact_sum_over_k(ds):
    for cfg in (toy.ToyConfig(), toy.unbiased_config(toy.ToyConfig())):
        for B, G in ((2, 2), (8, 4), (4, 16)):
            mc = toy.measure_gradient_mse(ds, cfg, B, G, n_draws=6000)
            exact = toy.exact_gradient_mse(ds, cfg, B, G)["mse"]
            assert abs(mc["mse"] - exact) < 4 * mc["se"], (cfg.baseline, B, G, mc, exact)


def test_unbiased_gradient_mean_is_the_gradient_of_the_pass_rate(ds):
    """RLOO with no std scaling: E ĝ = ∇ mean_j σ(α θ_shared + θ_j + b_j) at θ = 0."""
    cfg = toy.unbiased_config(toy.ToyConfig(transfer=0.25))
    mean = toy.exact_gradient_mse(ds, cfg, 4, 8)["mean"]
    p = ds.pass_rates
    grad = np.concatenate([[0.25 * np.mean(p * (1 - p))], p * (1 - p) / 64])
    assert np.allclose(mean, grad, rtol=1e-12)


def test_mse_fit_recovers_known_constants():
    Bs, Gs = np.meshgrid([1, 2, 4, 8], [2, 4, 8, 16, 32])
    mse = theory.minibatch_gradient_mse(Bs.ravel(), Gs.ravel(), 0.3, 0.2, 1.2)
    fit = toy.fit_mse_constants(Bs, Gs, mse, signal=0.5)
    assert fit["c1"] == pytest.approx(0.3) and fit["c3"] == pytest.approx(1.2)
    assert fit["G_star"] == pytest.approx(1 + np.sqrt(1.2 / 0.3))
    assert fit["G_star"] == pytest.approx(theory.optimal_group_size(0.3, 1.2))
    with pytest.raises(ValueError, match="at least 3"):
        toy.fit_mse_constants([1, 2], [2, 2], [1.0, 0.5])
    with pytest.raises(ValueError, match="finite"):
        toy.fit_mse_constants([1, 2, 4], [2, 2, 2], [1.0, float("nan"), 0.5])


def test_exact_mse_is_the_exact_model_not_the_papers(ds):
    """The toy's exact first-step MSE is c₁/B + c₂/(BG) + c₃/(BG(G − 1)) to rounding, with
    c₃ ≥ c₁ + ‖∇J‖²; the paper's c₃/(BG²) form misses it (checked to fail)."""
    cfg = toy.unbiased_config(toy.ToyConfig())
    fit = toy.predicted_optimal_group_size(ds, cfg)
    assert fit["max_rel_residual"] < 1e-9
    assert fit["c3"] > fit["c1"] + fit["signal"] > fit["c1"]
    assert fit["G_star"] > 2
    rel = []
    for B in toy.FIT_B:
        for G in toy.FIT_G:
            exact = toy.exact_gradient_mse(ds, cfg, B, G)["mse"]
            paper = theory.minibatch_gradient_mse(B, G, fit["c1"], fit["c2"], fit["c3"],
                                                  form="paper")
            rel.append(abs(paper / exact - 1))
    assert max(rel) > 0.01


def test_measured_mse_fits_the_minibatch_form(ds):
    """Monte Carlo MSE at 2 × 5 (B, G) points fits c₁/B + c₂/(BG) + c₃/(BG(G − 1)) within 5%."""
    cfg = toy.unbiased_config(toy.ToyConfig())
    Bs, Gs, ms = [], [], []
    for B in (2, 8):
        for G in (2, 3, 4, 8, 16):
            Bs.append(B)
            Gs.append(G)
            ms.append(toy.measure_gradient_mse(ds, cfg, B, G, n_draws=4000, seed_offset=B * G)
                      ["mse"])
    exact = toy.predicted_optimal_group_size(ds, cfg)
    fit = toy.fit_mse_constants(Bs, Gs, ms, signal=exact["signal"])
    assert fit["max_rel_residual"] < 0.05, fit
    assert fit["G_star"] == pytest.approx(exact["G_star"], rel=0.15)


@pytest.mark.slow
def test_g_star_predicts_the_g_that_learns_fastest_per_completion(ds):
    """Primary metric: mean pass rate after 100 steps of 96 completions (200 seeds), Adam,
    unbiased gradient. Tolerance: the fastest G lies within a factor 2 of G*
    (|log2(G_fast / G*)| ≤ 1), and it beats G = 32 by more than both 95% half-widths."""
    cfg = toy.unbiased_config(toy.ToyConfig(budget=96, steps=100))
    g_star = toy.predicted_optimal_group_size(ds, cfg)["G_star"]
    sweep = toy.fixed_budget_sweep(ds, cfg, [2, 3, 4, 6, 8, 12, 16, 24, 32], range(200))
    assert abs(np.log2(sweep["fastest_G"] / g_star)) <= 1.0, (sweep, g_star)
    best = int(np.argmax(sweep["mean"]))
    assert (sweep["mean"][best] - sweep["mean"][-1]
            > sweep["half_width"][best] + sweep["half_width"][-1])


def test_fixed_budget_sweep_refuses_unequal_budgets(ds):
    with pytest.raises(ValueError, match="multiple"):
        toy.fixed_budget_sweep(ds, toy.ToyConfig(budget=64), [2, 3])


# ----------------------------------------------------------------------------------------
# The playground's states (shared with the page's URL)
# ----------------------------------------------------------------------------------------
def test_scenario_links_round_trip_and_build():
    for s in playground.SCENARIOS:
        state = playground.parse_state(s.hash)
        assert playground.parse_state(playground.encode_state(state)) == state
        assert playground.configs_for(state), s.key
    assert playground.parse_state("#G=5,8&a=nope&unknown=1")["G"] == [8]


def test_toy_imports_no_torch():
    code = "import sys, grpolab.toy; assert 'torch' not in sys.modules, 'torch was imported'"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_static_html_embeds_the_data():
    text = playground.static_playground_html()
    payload = text.split('class="grpolab-toy-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(payload)
    assert data["smollm2"]["successes"] == playground.smollm2_counts()["successes"]
    assert len(data["scenarios"]) == len(playground.SCENARIOS) >= 4
    assert "Static playground" in text


@pytest.mark.slow
def test_live_playground_loads_every_scenario_and_redraws():
    pytest.importorskip("ipywidgets")
    import matplotlib

    matplotlib.use("Agg")
    box = playground.live_playground({"seeds": 2, "steps": 25})
    scenario = box.children[1].children[0].children[0]
    note, controls, inert, readout, out = box.children  # as live_playground lays them out
    assert "grpolab-toy-readout" in readout.value and "No effect" in inert.value
    first = readout.value
    assert "final pass rate" in first
    for s in playground.SCENARIOS:
        scenario.value = s.key
        assert "final pass rate" in readout.value and readout.value != first, s.key
