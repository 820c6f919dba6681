"""The page's JavaScript port of grpolab.toy gives the Python's numbers (run under Node).

Same seed, same config: the discrete outcomes (completions, zero-variance fractions) are
identical and every float agrees to 1e-12 (the two differ only in the last bits of
libm's exp/log and of numpy's pairwise sums). Node is Debian's ``nodejs``; the test is
skipped without it unless CI=true, where ``.ci/setup`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest

from grpolab import toy
from grpolab.book import playground

TOY_JS = str(resources.files("grpolab.book").joinpath("static", "grpolab-toy.js"))

RUNNER = r"""
const toy = require(process.argv[1]);
const spec = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = [];
for (const job of spec.jobs) {
  const d = job.dataset;
  const ds = d.kind === 'beta' ? toy.betaDataset(d.a, d.b, d.n)
    : toy.empiricalDataset(d.successes, d.samples);
  const r = toy.train(ds, toy.config(job.config), job.seeds);
  const o = {pass_rates: ds.passRates, buckets: ds.buckets,
             g_star: toy.fitGStar(ds, toy.config(job.config))};
  for (const k of ['pass_rate', 'completions', 'zero_variance_observed', 'zero_variance_predicted',
                   'bucket_pass_rate', 'theta'])
    o[k] = Array.from(r[k], v => Number.isNaN(v) ? null : v);
  out.push(o);
}
const extra = {
  t975: [1, 3, 10, 11, 50, 199].map(toy.tCritical975),
  quantiles: [[0.3, 0.5, 0.5], [0.01, 2, 7], [0.99, 0.2, 0.3]]
    .map(q => toy.betaQuantile(q[0], q[1], q[2])),
  uniforms: [0, 1, 4294967295]
    .map(s => [0, 1, 2, 1000000].map(n => toy.uniform(toy.seedKeys(s), n))),
  state_defaults: toy.STATE_DEFAULTS, g_choices: toy.G_CHOICES,
  scenarios: spec.scenarios.map(h => toy.decodeState(toy.parseFragment(h))),
  encoded: spec.scenarios.map(h => toy.encodeState(toy.decodeState(toy.parseFragment(h)))),
  sliders: Object.fromEntries(toy.SLIDERS.map(s => [s[0], s[2]])),
  selects: Object.fromEntries(toy.SELECTS.map(s => [s[0], s[2].map(o => o[0])])),
  n_prompts_range: toy.N_PROMPTS_RANGE,
  clamped: spec.fragments.map(f => {
    const raw = toy.parseFragment(f), st = toy.decodeState(raw);
    const notes = toy.clampState(st, raw);
    return {state: st, notes: notes, encoded: toy.encodeState(st),
            inert: Object.fromEntries(Object.keys(toy.STATE_DEFAULTS)
              .map(k => [k, toy.inertReason(k, st)]))};
  }),
};
process.stdout.write(JSON.stringify({jobs: out, extra}));
"""

CONFIGS = [
    {"num_generations": 8},
    {"num_generations": 2, "optimizer": "sgd", "learning_rate": 3.0, "scale_rewards": "none"},
    {"num_generations": 4, "dynamic_sampling": True, "max_batches": 4, "scale_rewards": "batch",
     "loss_type": "dapo", "wrong_length": 2.0, "beta": 0.1, "temperature": 0.5,
     "baseline": "leave_one_out", "filter_low": 0.02, "filter_high": 0.9, "transfer": 0.5},
    {"num_generations": 16, "mode": "prompts", "prompts_per_step": 3, "loss_type": "dr_grpo",
     "wrong_length": 0.5, "transfer": 0.0},
]
#: URLs a reader might open: out of range, off the sliders' grids, garbage, unknown keys, and
#: settings where a control has no effect (the page must say so, in the same words as Python).
FRAGMENTS = ["", "n_prompts=5000", "n_prompts=0", "n_prompts=12.5", "G=64&budget=16",
             "G=5,8,99&learning_rate=0.07&steps=10000", "a=abc&optimizer=rmsprop&foo=1",
             "seeds=-3&temperature=9&b=", "mode=prompts&dataset=smollm2&dynamic_sampling=1",
             "optimizer=sgd&wrong_length=2&beta=0.1", "G=3&budget=97.5&x_axis=steps"]
KEYS = ["pass_rate", "completions", "zero_variance_observed", "zero_variance_predicted",
        "bucket_pass_rate", "theta"]


def _node() -> str:
    path = shutil.which("node") or shutil.which("nodejs")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is not installed, and CI=true: the parity test must run")
        pytest.skip("node not found (install Debian's nodejs); not under CI")
    return path


@pytest.fixture(scope="module")
def js():
    counts = playground.smollm2_counts()
    datasets = [{"kind": "beta", "a": 0.5, "b": 1.5, "n": 64},
                {"kind": "empirical", "successes": counts["successes"],
                 "samples": counts["samples"]}]
    jobs = [{"dataset": d, "config": dict(c, steps=60), "seeds": [0, 1, 2, 17, 4294967295]}
            for d in datasets for c in CONFIGS]
    spec = {"jobs": jobs, "scenarios": [s.hash for s in playground.SCENARIOS],
            "fragments": FRAGMENTS + [s.hash for s in playground.SCENARIOS]}
    proc = subprocess.run([_node(), "-e", RUNNER, TOY_JS], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return jobs, json.loads(proc.stdout)


def _python_dataset(d):
    if d["kind"] == "beta":
        return toy.beta_dataset(d["a"], d["b"], d["n"])
    return toy.empirical_dataset(d["successes"], d["samples"])


def test_training_curves_match_python(js):
    jobs, out = js
    assert len(out["jobs"]) == len(jobs) == 8
    for job, got in zip(jobs, out["jobs"], strict=True):
        ds = _python_dataset(job["dataset"])
        assert np.allclose(got["pass_rates"], ds.pass_rates, rtol=0, atol=1e-13)
        assert got["buckets"] == ds.buckets.tolist()
        ref = toy.train(ds, toy.ToyConfig(**job["config"]), job["seeds"])
        for key in KEYS:
            a = np.asarray(getattr(ref, key), dtype=float).ravel()
            b = np.array([np.nan if v is None else v for v in got[key]], dtype=float)
            assert a.shape == b.shape, key
            assert np.array_equal(np.isnan(a), np.isnan(b)), key
            if key in ("completions", "zero_variance_observed"):  # the discrete outcomes: identical
                assert np.array_equal(a, b), (job["config"], key)
            else:
                assert np.allclose(a, b, rtol=0, atol=1e-12, equal_nan=True), (
                    job["config"], key, np.nanmax(np.abs(a - b)))


def test_g_star_matches_python(js):
    jobs, out = js
    for job, got in zip(jobs, out["jobs"], strict=True):
        ds = _python_dataset(job["dataset"])
        ref = toy.predicted_optimal_group_size(ds, toy.ToyConfig(**job["config"]))
        assert got["g_star"]["G_star"] == pytest.approx(ref["G_star"], rel=1e-9)
        assert np.allclose(got["g_star"]["c"], [ref["c1"], ref["c2"], ref["c3"]], rtol=1e-8,
                           atol=1e-14)


def test_helpers_match_python(js):
    _, out = js
    extra = out["extra"]
    assert np.allclose(extra["t975"], [toy.t_critical_975(d) for d in (1, 3, 10, 11, 50, 199)],
                       rtol=1e-14)
    assert np.allclose(extra["quantiles"], [toy.beta_quantile(0.3, 0.5, 0.5),
                                            toy.beta_quantile(0.01, 2, 7),
                                            toy.beta_quantile(0.99, 0.2, 0.3)], atol=1e-13)
    ref = toy.uniforms([0, 1, 4294967295], [0, 1, 2, 1_000_000])
    assert np.array_equal(np.array(extra["uniforms"]), ref)  # bit for bit


def test_url_states_match_python(js):
    _, out = js
    extra = out["extra"]
    assert extra["state_defaults"] == playground.STATE_DEFAULTS
    assert tuple(extra["g_choices"]) == playground.G_CHOICES
    for scenario, state, encoded in zip(playground.SCENARIOS, extra["scenarios"],
                                        extra["encoded"], strict=True):
        assert state == playground.parse_state(scenario.hash), scenario.key
        assert encoded == playground.encode_state(playground.parse_state(scenario.hash))


def test_url_clamping_and_inert_controls_match_python(js):
    """The page snaps a URL's values onto its controls and names each change, and says why a
    control has no effect, exactly as playground.clamp_state and inert_reason do."""
    _, out = js
    extra = out["extra"]
    assert {k: tuple(v) for k, v in extra["sliders"].items()} == playground.SLIDER_VALUES
    assert {k: tuple(v) for k, v in extra["selects"].items()} == playground.SELECT_OPTIONS
    assert tuple(extra["n_prompts_range"]) == playground.N_PROMPTS_RANGE
    fragments = FRAGMENTS + [s.hash for s in playground.SCENARIOS]
    for fragment, got in zip(fragments, extra["clamped"], strict=True):
        raw = playground.parse_fragment(fragment)
        state = playground.parse_state(fragment)
        notes = playground.clamp_state(state, raw)
        assert got["notes"] == notes, fragment
        assert got["state"] == state, fragment
        assert got["encoded"] == playground.encode_state(state), fragment
        assert got["inert"] == {k: playground.inert_reason(k, state)
                                for k in playground.STATE_DEFAULTS}, fragment


def test_clamping_says_what_it_changed():
    """Out-of-range values are clamped and named; the scenarios sit on the controls' grid."""
    state = playground.parse_state("n_prompts=5000&learning_rate=0.07&G=5,8")
    notes = playground.clamp_state(state, playground.parse_fragment(
        "n_prompts=5000&learning_rate=0.07&G=5,8"))
    assert state["n_prompts"] == playground.N_PROMPTS_RANGE[1]
    assert state["learning_rate"] == 0.05 and state["G"] == [8]
    assert any("n_prompts = 5000 is out of range" in n for n in notes)
    assert any("learning_rate = 0.07 is not one of the slider's values" in n for n in notes)
    assert any(n.startswith("G = 5 is not offered") for n in notes)
    zero = playground.parse_state("n_prompts=0")
    assert "n_prompts = 0 is out of range (4 to 512); using 4." in playground.clamp_state(zero)
    for s in playground.SCENARIOS:  # a scenario link must open exactly as written
        st = playground.parse_state(s.hash)
        assert playground.clamp_state(st, playground.parse_fragment(s.hash)) == [], s.key
        assert playground.encode_state(st) == playground.encode_state(
            playground.parse_state(s.hash)), s.key
    default = playground.parse_state("")
    inert = {k for k in playground.STATE_DEFAULTS if playground.inert_reason(k, default)}
    assert inert == {"baseline", "loss_type", "prompts_per_step", "max_batches", "x_axis"}
