"""One typed schema for every results file (issue 36, class 5): crafted ``regimes[*]`` and
``gradient_noise`` fields give one line naming the file and the field, never a traceback and
never a silent plot; the committed results pass the same readers."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab import results
from grpolab._files import CorruptFileError
from grpolab._paths import checkout_root

RESULTS = checkout_root() / "labs" / "results"


def _sweep_summary() -> dict:
    """A small valid sweep summary: two G, one seed, one regime, gradient noise."""
    runs = [{"regime": "mixed", "G": G, "seed": 0, "zero_variance_observed": 0.5,
             "zero_variance_predicted": 0.4, "final_sampled_accuracy": 0.3,
             "initial_sampled_accuracy": 0.2, "grad_norm_mean": 1.0} for G in (2, 4)]
    noise = [{"G": G, "trace_variance": 1.0 / G, "noise_to_signal": 2.0 / G,
              "mean_gradient_norm_sq": 0.5} for G in (2, 4)]
    return {"preset": "cpu-quick", "runs": runs, "runs_finished": 2, "runs_planned": 2,
            "regimes": {"mixed": {"mode": "budget", "zero_variance_mean_abs_gap": 0.1,
                                  "zero_variance_at_warm_start_theory": {"2": 0.6, "4": 0.4}}},
            "gradient_noise": {"mixed": noise}}


def _set(doc: dict, dotted: str, value):
    """Set ``a.b[0].c`` in ``doc``; ``value`` DELETE removes the field."""
    keys = [int(k) if k.isdigit() else k for k in dotted.replace("[", ".").replace("]", "")
            .split(".")]
    for k in keys[:-1]:
        doc = doc[k]
    if value is DELETE:
        del doc[keys[-1]]
    else:
        doc[keys[-1]] = copy.deepcopy(value)


DELETE = object()

#: (what is planted, the field set, its value, the field the one line must name)
CRAFTED = [
    ("noise row without trace_variance", "gradient_noise.mixed[0].trace_variance", DELETE,
     "gradient_noise.mixed[0] lacks the field 'trace_variance'"),
    ("noise rows that are numbers", "gradient_noise.mixed", [1, 2],
     "gradient_noise.mixed[0] must be an object"),
    ("a list where the noise object belongs", "gradient_noise", [[1, 2]],
     "field gradient_noise must be an object"),
    ("a string noise_to_signal", "gradient_noise.mixed[1].noise_to_signal", "high",
     "gradient_noise.mixed[1].noise_to_signal must be a finite number"),
    ("G = 2**62 in the noise", "gradient_noise.mixed[1].G", 2**62,
     "gradient_noise.mixed[1].G must be an integer in [1, 16384]"),
    ("a string G in a run", "runs[0].G", "4", "runs[0].G must be an integer"),
    ("G = 2**62 in a run", "runs[1].G", 2**62, "runs[1].G must be an integer in [1, 16384]"),
    ("a string accuracy in a run", "runs[0].final_sampled_accuracy", "0.3",
     "runs[0].final_sampled_accuracy must be a finite number"),
    ("a list where a regime belongs", "regimes.mixed", [0.6, 0.4],
     "field regimes.mixed must be an object"),
    ("a list where the regimes belong", "regimes", [], "field regimes must be an object"),
    ("a regime without its theory", "regimes.mixed.zero_variance_at_warm_start_theory",
     DELETE, "regimes.mixed lacks the field 'zero_variance_at_warm_start_theory'"),
    ("a string in the theory", "regimes.mixed.zero_variance_at_warm_start_theory.4", "0.4",
     "regimes.mixed.zero_variance_at_warm_start_theory['4'] must be a finite number"),
    ("G = 2**62 as a theory key", "regimes.mixed.zero_variance_at_warm_start_theory",
     {str(2**62): 0.1}, "has the key '4611686018427387904'; its keys must be integers"),
    ("a G key that is no number", "regimes.mixed.zero_variance_at_warm_start_theory",
     {"two": 0.5}, "has the key 'two'"),
    ("a string mode", "regimes.mixed.mode", 3, "regimes.mixed.mode must be one of"),
    ("a run of an unknown regime", "runs[0].regime", "hard",
     "runs[0].regime is 'hard', not one of the file's regimes (mixed)"),
    ("runs as an object", "runs", {"0": {}}, "field runs must be a list"),
]


@pytest.mark.parametrize("what, field, value, needle", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_a_crafted_summary_field_is_one_line_naming_file_and_field(tmp_path, what, field,
                                                                   value, needle):
    doc = _sweep_summary()
    results.read_results(_write(tmp_path, "summary.json", doc))  # the unplanted file reads
    _set(doc, field, value)
    path = _write(tmp_path, "summary.json", doc)
    with pytest.raises(CorruptFileError) as info:
        results.read_sweep_summary(tmp_path)
    msg = str(info.value)
    assert msg.startswith(str(path)) and needle in msg and len(msg.splitlines()) == 1, msg


@pytest.mark.parametrize("what, field, value, needle",
                         [c for c in CRAFTED if c[1].startswith("gradient_noise.")],
                         ids=[c[0] for c in CRAFTED if c[1].startswith("gradient_noise.")])
def test_gradient_noise_json_has_the_same_schema(tmp_path, what, field, value, needle):
    doc = {"gradient_noise": _sweep_summary()["gradient_noise"]}
    _set(doc, field, value)
    path = _write(tmp_path, "gradient_noise.json", doc["gradient_noise"])
    with pytest.raises(CorruptFileError) as info:
        results.read_gradient_noise(path)
    msg = str(info.value)  # the same field, now at the top of its own file
    assert msg.startswith(str(path)) and needle.replace("gradient_noise.", "", 1) in msg, msg


def _write(folder: Path, name: str, doc) -> Path:
    path = folder / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("what, field, value, needle", CRAFTED[:6] + CRAFTED[8:9],
                         ids=[c[0] for c in CRAFTED[:6] + CRAFTED[8:9]])
def test_lab_plot_says_one_line_and_draws_nothing(tmp_path, what, field, value, needle):
    """The six tracebacks and the silent plots of the round-4 probe, through the command."""
    doc = _sweep_summary()
    _set(doc, field, value)
    _write(tmp_path, "summary.json", doc)
    proc = subprocess.run([sys.executable, "-m", "grpolab", "lab", "plot", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and "summary.json" in err and needle in err, err
    assert not (tmp_path / "plots").exists()


def test_compute_axis_schema_names_the_field(tmp_path):
    axis = results.read_compute_axis(RESULTS / "cpu-compute")
    bad = copy.deepcopy(axis)
    regime = next(iter(bad["regimes"]))
    bad["regimes"][regime]["curvature_final"]["vertex_G"][0] = "inf"
    path = _write(tmp_path, "compute_axis.json", bad)
    with pytest.raises(CorruptFileError, match=rf"regimes\.{regime}\.curvature_final\.vertex_G"
                                               r"\[0\] must be"):
        results.read_compute_axis(path)
    bad = copy.deepcopy(axis)
    curves = bad["regimes"][regime]["curves"]
    curves[str(2**62)] = curves.pop(next(iter(curves)))
    with pytest.raises(CorruptFileError, match="its keys must be integers in"):
        results.read_compute_axis(_write(tmp_path, "compute_axis.json", bad))


@pytest.mark.parametrize("name", ["summary.json", "gradient_noise.json", "compute_axis.json",
                                  "by_level.json"])
def test_every_committed_results_file_passes_its_schema(name):
    from grpolab.book.build import LOCAL_RESULT_DIRS

    # a sweep's run logs and warm start (runs/, cache/) are git-ignored, not results files
    found = sorted(p for p in RESULTS.rglob(name)
                   if not LOCAL_RESULT_DIRS & set(p.relative_to(RESULTS).parts[:-1]))
    assert found, f"no committed {name}"
    for path in found:
        results.read_results(path)


def test_max_g_is_the_largest_group_the_config_accepts():
    from grpolab.grpo.config import MAX_COMPLETIONS_PER_STEP

    assert results.MAX_G == MAX_COMPLETIONS_PER_STEP
