"""Design C (labs/results/design-c, book/labs/06-mechanism.md): the optimizer field, the
matched SGD learning rate, and every declared verdict planted both ways."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpolab.grpo.config import GRPOConfig, apply_overrides
from grpolab.grpo.records import config_differences
from grpolab.labs import design_c

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "labs" / "results" / "design-c"


# ----------------------------------------------------------------------------- the field
def test_optimizer_field_default_leaves_every_config_unchanged():
    """AdamW, the default, is left out of to_dict, so earlier stored configs and hashes
    compare equal; SGD is written; a stored config without the field reads as AdamW."""
    cfg = GRPOConfig()
    assert cfg.optimizer == "adamw" and "optimizer" not in cfg.to_dict()
    sgd = apply_overrides(cfg, optimizer="sgd", learning_rate=0.05)
    assert sgd.to_dict()["optimizer"] == "sgd"
    assert GRPOConfig.from_dict(sgd.to_dict()).optimizer == "sgd"
    assert GRPOConfig.from_dict(cfg.to_dict()).optimizer == "adamw"
    assert config_differences(cfg.to_dict(), GRPOConfig().to_dict()) == ""
    assert "optimizer" in config_differences(cfg.to_dict(), sgd.to_dict())


def test_optimizer_field_refuses_unknown_names():
    with pytest.raises(ValueError, match="--optimizer must be one of adamw, sgd"):
        apply_overrides(GRPOConfig(), optimizer="adam")


def test_make_optimizer_builds_the_named_optimizer():
    torch = pytest.importorskip("torch")
    from grpolab.grpo.loop import make_optimizer

    model = torch.nn.Linear(3, 1)
    adam = make_optimizer(model, GRPOConfig(learning_rate=1e-3))
    assert isinstance(adam, torch.optim.AdamW) and adam.defaults["weight_decay"] == 0.0
    sgd = make_optimizer(model, apply_overrides(GRPOConfig(), optimizer="sgd",
                                                learning_rate=0.1))
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["momentum"] == 0
    # SGD moves by lr × gradient
    before = model.weight.detach().clone()
    model.weight.grad = torch.ones_like(model.weight)
    model.bias.grad = torch.zeros_like(model.bias)
    sgd.step()
    assert torch.allclose(before - model.weight.detach(), torch.full_like(before, 0.1))


def test_design_c_preset_varies_optimizer_and_scale_rewards():
    from grpolab.labs.sweep.presets import DESIGN_C_SGD_LR, get_preset

    preset = get_preset("design-c")
    cells = {r.name: preset.run_config(r, 16, 0) for r in preset.regimes}
    assert sorted(cells) == sorted(design_c.CELLS)
    for name, cfg in cells.items():
        opt, scale = name.split("-")
        assert (cfg.optimizer, cfg.scale_rewards, cfg.loss_type) == (opt, scale, "dr_grpo")
        assert cfg.learning_rate == (DESIGN_C_SGD_LR if opt == "sgd" else 5e-5)
        assert cfg.max_grad_norm == (0.0 if opt == "sgd" else 1.0)  # SGD unclipped
        assert cfg.num_generations * cfg.prompts_per_step == 64 and cfg.steps == 100
    assert preset.group_sizes == [2, 16] and preset.seeds == [0, 1, 2]
    assert preset.noise_batches == 64


def test_preset_sgd_lr_is_the_committed_measurement():
    """The preset's SGD lr is a copy of labs/results/design-c/sgd_lr.json (made by
    match_sgd_lr before the sweep ran)."""
    from grpolab.labs.sweep.presets import DESIGN_C_SGD_LR

    rec = json.loads((RESULTS / "sgd_lr.json").read_text())
    assert rec["num_generations"] == design_c.MATCH_G and rec["steps"] == design_c.MATCH_STEPS
    assert rec["sgd_max_grad_norm"] == design_c.SGD_MAX_GRAD_NORM == 0
    assert rec["sgd_step_norm_at_lr_1"] == rec["grad_norm_before_clipping"]  # unclipped
    ratio = np.mean(rec["adamw_update_norm"]) / np.mean(rec["sgd_step_norm_at_lr_1"])
    assert rec["sgd_learning_rate"] == pytest.approx(ratio, rel=1e-12)
    assert DESIGN_C_SGD_LR == pytest.approx(rec["sgd_learning_rate"], rel=1e-3)


# ----------------------------------------------------------------------------- mechanism
def _gram(mean_norm_sq: float, n: int = 64, d: int = 400, noise: float = 0.05,
          seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = np.zeros(d)
    mu[0] = np.sqrt(mean_norm_sq)
    X = mu + noise * rng.standard_normal((n, d))
    return X @ X.T


def test_debiased_signal_removes_the_noise_floor():
    """With noise far above the signal, ‖ḡ‖² is dominated by tr Var/n; the debiased
    estimate recovers ‖E g‖²."""
    K = _gram(1.0, n=400, d=2000, noise=0.5, seed=3)
    st_raw = np.sum(K) / K.shape[0] ** 2
    assert st_raw > 1.4  # tr Var / n = 2000 · 0.25 / 400 = 1.25 on top
    assert design_c.debiased_signal(K) == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("planted, verdict", [(3.5, "supported"), (20.0, "refuted")])
def test_mechanism_verdict_planted_both_ways(planted, verdict):
    r = design_c.signal_ratio(_gram(1.0, seed=1), _gram(planted, seed=2), n_boot=300)
    assert r["ratio"] == pytest.approx(planted, rel=0.05) and r["low"] <= r["ratio"] <= r["high"]
    assert design_c.mechanism_verdict(r) == verdict


def test_mechanism_verdict_straddling_is_inconclusive_and_no_signal_widens():
    """A ratio near the threshold with wide intervals is inconclusive; a small-G signal
    lost in its noise gives +inf draws, not a dropped draw."""
    r = design_c.signal_ratio(_gram(0.05, noise=0.2, seed=4), _gram(0.5, noise=0.2, seed=5),
                              n_boot=300)
    assert r["low"] < 10 <= r["high"]
    assert design_c.mechanism_verdict(r) == "inconclusive"
    r0 = design_c.signal_ratio(_gram(0.0, noise=0.3, seed=6), _gram(1.0, seed=7), n_boot=300)
    assert r0["infinite_draws"] > 0 and r0["high"] == np.inf


# ----------------------------------------------------------------------------- outcome
def _table(gap_sgd, gap_adam, base=0.4):
    """Final pass@1 by cell, G and seed with the given per-seed G16 − G2 gaps."""
    return {"sgd-group": {2: {s: base for s in range(3)},
                          16: {s: base + g for s, g in enumerate(gap_sgd)}},
            "adamw-group": {2: {s: base for s in range(3)},
                            16: {s: base + g for s, g in enumerate(gap_adam)}}}


@pytest.mark.parametrize("gap_sgd, verdict", [
    ([0.10, 0.11, 0.12], "supported"),       # interaction ≈ +0.11
    ([-0.10, -0.11, -0.12], "refuted"),      # interaction ≈ −0.11
    ([0.0005, -0.0004, 0.0001], "equivalent"),  # a tight zero
    ([0.05, -0.06, 0.02], "inconclusive"),   # a noisy zero
])
def test_interaction_planted(gap_sgd, verdict):
    out = design_c.interaction(_table(gap_sgd, [0.0, 0.0, 0.0]), declared_mde=0.0403)
    assert out["verdict"] == verdict
    assert out["mean"] == pytest.approx(np.mean(gap_sgd))
    assert out["declared_mde"] == 0.0403 and out["mde"] > 0
    assert out["seeds"] == [0, 1, 2]


def test_interaction_refuses_missing_arms():
    t = _table([0.1, 0.1, 0.1], [0, 0, 0])
    del t["adamw-group"][16]
    with pytest.raises(ValueError, match="adamw-group G=16"):
        design_c.interaction(t)


def test_committed_verdicts_are_reproduced():
    """The committed verdicts.json is what the module computes from the committed summary
    (skipped until the design has run)."""
    path = RESULTS / "verdicts.json"
    if not path.is_file():
        pytest.skip("design C has not been run yet")
    got = design_c.verdicts(str(RESULTS), n_boot=json.loads(path.read_text())["n_boot"])
    stored = json.loads(path.read_text())
    assert got["interaction"]["verdict"] == stored["interaction"]["verdict"]
    for scale, r in got["mechanism"].items():
        assert r["ratio"] == pytest.approx(stored["mechanism"][scale]["ratio"])
        assert r.get("verdict") == stored["mechanism"][scale].get("verdict")


def test_debiased_signal_is_the_off_diagonal_mean_and_ignores_self_pairs():
    """‖ḡ‖² − tr Var/n equals the mean of K_ij over i ≠ j; a resample that draws a batch
    twice does not pair it with itself (which would add its noise to the signal)."""
    from grpolab.grpo.measure import noise_from_gram

    K = _gram(0.3, n=20, noise=0.4, seed=8)
    st = noise_from_gram(K)
    off = (K.sum() - np.trace(K)) / (20 * 19)
    assert design_c.debiased_signal(K) == pytest.approx(
        st["mean_gradient_norm_sq"] - st["trace_variance"] / 20)
    assert design_c.debiased_signal(K) == pytest.approx(off)
    counts = np.zeros(20)
    counts[[0, 1]] = [3, 1]  # batch 0 drawn three times, batch 1 once: only 0-1 pairs count
    assert design_c.debiased_signal(K, counts) == pytest.approx(K[0, 1])


def _planted_folder(tmp_path, gap_sgd, ratio_none=3.5, gram_none_small=None):
    """A design-c results folder with planted runs and warm-start Gram matrices."""
    runs = []
    for cell in design_c.CELLS:
        for G in (2, 16):
            for s in range(3):
                gain = gap_sgd[s] if (cell == "sgd-group" and G == 16) else 0.0
                runs.append({"regime": cell, "G": G, "seed": s, "zero_variance_observed": 0.5,
                             "zero_variance_predicted": 0.5,
                             "final_sampled_accuracy": 0.4 + gain})
    noise = {}
    for cell, big in (("adamw-none", ratio_none), ("adamw-group", 11.0)):
        small = gram_none_small if (cell == "adamw-none" and gram_none_small is not None) \
            else _gram(1.0, seed=11).tolist()
        noise[cell] = [{"G": 2, "trace_variance": 1.0, "noise_to_signal": None, "gram": small},
                       {"G": 16, "trace_variance": 1.0, "noise_to_signal": None,
                        "gram": _gram(big, seed=12).tolist()}]
    summary = {"preset": "design-c", "runs": runs, "gradient_noise": noise,
               "regimes": {c: {"zero_variance_at_warm_start_theory": {}}
                           for c in design_c.CELLS}, "runs_finished": 24, "runs_planned": 24}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "declared.json").write_text(
        json.dumps({"minimum_detectable_effect": {"interaction": 0.0403}}))
    return str(tmp_path)


@pytest.mark.parametrize("gap_sgd, ratio_none, inter, mech", [
    ([0.10, 0.11, 0.12], 3.5, "supported", "supported"),
    ([-0.10, -0.11, -0.12], 20.0, "refuted", "refuted"),
])
def test_verdicts_read_a_results_folder(tmp_path, gap_sgd, ratio_none, inter, mech):
    out = design_c.verdicts(_planted_folder(tmp_path, gap_sgd, ratio_none), n_boot=200)
    assert out["interaction"]["verdict"] == inter
    assert out["interaction"]["declared_mde"] == 0.0403
    assert out["mechanism"]["none"]["verdict"] == mech
    assert "verdict" not in out["mechanism"]["group"]  # printed, not a declared test
    assert out["final_pass_at_1_mean"]["adamw-group"] == {2: pytest.approx(0.4),
                                                          16: pytest.approx(0.4)}


def test_verdicts_refuse_a_damaged_gram(tmp_path):
    from grpolab.grpo.records import CorruptFileError

    folder = _planted_folder(tmp_path, [0.1, 0.1, 0.1], gram_none_small=[[1.0, "x"]])
    with pytest.raises(CorruptFileError, match="adamw-none"):
        design_c.verdicts(folder, n_boot=10)
