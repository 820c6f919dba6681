"""grpolab.labs.lab_results: the one reader of committed results, by folder name."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from grpolab._files import CorruptFileError
from grpolab.labs import lab_results
from grpolab.labs.lab_results import LabResults, census_stem


def test_the_reader_reads_every_committed_results_folder_it_names():
    """Each committed sweep's files through the checked readers (a file it could not read
    would fail every chapter that uses it)."""
    for name in ("cpu-full", "cpu-compute", "design-c"):
        lab = lab_results.load(name)
        assert lab.summary()["runs"], name
        for regime in lab.preset()["regimes"]:
            census = lab.census(regime["name"])
            assert census.ndim == 2 and set(np.unique(census)) <= {0, 1}, (name, regime)
            assert lab.config(regime["name"])["learning_rate"] > 0
        steps = lab.steps()
        assert steps and {"regime", "G", "seed", "step"} <= set(steps[0])
        assert lab.compute_axis()["regimes"]
        assert lab.gradient_noise()
    assert lab_results.remedy("dynamic-sampling")["results"]
    assert set(lab_results.summaries()) >= {"cpu-full", "cpu-compute", "design-c"}
    assert "remedies/dynamic-sampling" in lab_results.remedy_results()
    assert lab_results.benchmarks()["benchmarks"]


def test_census_names_follow_the_sweeps_own_rule():
    """The chapters read a census under the name the sweep writes it
    (grpolab.labs.sweep.sweep.census_path), for every regime of every preset."""
    import os

    from grpolab.labs.sweep.presets import PRESETS, get_preset
    from grpolab.labs.sweep.sweep import census_path

    seen = 0
    for name in PRESETS:
        for regime in get_preset(name).regimes:
            spec = {"train_difficulties": list(regime.train_difficulties),
                    "overrides": regime.overrides}
            assert (os.path.basename(census_path("out", regime))
                    == str(LabResults("out").census_file(spec).name))
            seen += 1
    assert seen > 5
    assert census_stem([2], {"warmstart": {"steps": 1100}}) == "census-d2-warm1100"
    assert census_stem([1, 2, 3], {}) == "census-d1-2-3"
    assert census_stem([1, 2, 3], {"warmstart": {"lr": 1e-3}}) == "census-d1-2-3"


@pytest.fixture
def lab_copy(tmp_path):
    src = lab_results.load("cpu-compute").path
    dst = tmp_path / "cpu-compute"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("plots"))
    return LabResults(dst)


def test_a_damaged_file_is_one_checked_error_not_a_wrong_number(lab_copy):
    """Planted damage: each reader refuses with an error that names the file."""
    (lab_copy.path / "sweep.json").write_text(json.dumps({"no": "preset"}))
    with pytest.raises(CorruptFileError, match="sweep.json"):
        lab_copy.sweep()
    (lab_copy.path / "sweep.json").write_text(json.dumps({"preset": {"config": 3}}))
    with pytest.raises(CorruptFileError, match="preset"):
        lab_copy.preset()
    census = lab_copy.path / "census-d1-2-3.npy"
    census.write_bytes(census.read_bytes()[:-7])
    with pytest.raises(CorruptFileError, match="truncated"):
        lab_copy.census({"train_difficulties": [1, 2, 3], "overrides": {}})
    (lab_copy.path / "steps.csv").write_text("regime,G\nmixed,2,7\n")
    with pytest.raises(CorruptFileError, match="steps.csv"):
        lab_copy.steps()
    (lab_copy.path / "gradient_noise.json").write_text('{"mixed": [{"G": "two"}]}')
    with pytest.raises(CorruptFileError, match="gradient_noise.json"):
        lab_copy.gradient_noise()


def test_regimes_config_and_sidecar(lab_copy):
    hard = lab_copy.regime("hard")
    assert lab_copy.census_file("hard").name == census_stem(
        hard["train_difficulties"], hard["overrides"]) + ".npy"
    assert lab_copy.config("hard") == {**lab_copy.config(), **hard["overrides"]}
    assert lab_copy.census_inputs("hard")["train_difficulties"] == hard["train_difficulties"]
    with pytest.raises(KeyError, match="no regime 'nope'.*hard"):
        lab_copy.regime("nope")
    (lab_copy.census_file("hard").with_suffix(".json")).unlink()
    assert lab_copy.census_inputs("hard") == {}


def test_missing_folder_says_how_to_make_it():
    with pytest.raises(FileNotFoundError, match="labs/README.md"):
        lab_results.load("no-such-lab")
