"""grpolab.drill.exercises: each checker accepts its solution, rejects a wrong one, says why."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import numpy as np
import pytest

from grpolab.drill import exercises
from grpolab.drill.exercises import KINDS, check, get, list_exercises, solution

ALL = list_exercises()
IDS = [e.id for e in ALL]


def test_registry_covers_every_kind_with_unique_ids():
    assert len(IDS) == len(set(IDS))
    assert {e.kind for e in ALL} == set(KINDS)
    for kind in KINDS:
        assert list_exercises(kind) and all(e.kind == kind for e in list_exercises(kind))


@pytest.mark.parametrize("ex", ALL, ids=IDS)
def test_checker_accepts_its_own_answer(ex):
    res = check(ex.id, ex.answer)
    assert res.correct, str(res)
    assert res.message and bool(res) is True


@pytest.mark.parametrize("ex", ALL, ids=IDS)
def test_checker_rejects_the_wrong_answer_and_explains(ex):
    res = check(ex.id, ex.wrong_answer)
    assert not res.correct
    assert bool(res) is False
    assert len(res.message) > 20
    assert ex.solution.strip() and ex.question.strip()


@pytest.mark.parametrize("ex", ALL, ids=IDS)
def test_checker_survives_junk(ex):
    junk = "banana" if ex.kind in ("numeric", "conceptual") else 42
    res = check(ex.id, junk)
    assert not res.correct and res.message


def test_conceptual_choices_hold_the_answer_and_letters_are_lenient():
    for ex in list_exercises("conceptual"):
        assert ex.answer in ex.choices and ex.wrong_answer in ex.choices
        assert check(ex.id, f"({ex.answer.upper()})").correct


# Independent values for the numeric exercises (exact fractions, explicit reward vectors).
NUMERIC_TRUTH = {
    "zero-variance-p03-g4": float(Fraction(3, 10) ** 4 + Fraction(7, 10) ** 4),
    "binary-advantage-g4-k1": 0.75 / (statistics.stdev([1, 0, 0, 0]) + 1e-4),
    "bernoulli-max-variance": max(statistics.pvariance([1] * k + [0] * (100 - k))
                                  for k in range(101)),
    "budget-informative-p01-g4": float((512 // 4) * (1 - Fraction(1, 10) ** 4
                                                     - Fraction(9, 10) ** 4)),
    "dynamic-sampling-p01-g16": float(16 * 512 / (1 - Fraction(1, 10) ** 16
                                                  - Fraction(9, 10) ** 16)),
    # ch. 09-10: 24 informative groups of 64 (equal lengths); 1.28 × 0.02
    "loss-dilution-40-of-64": float(Fraction(24, 64)),
    "clip-higher-p002": float(Fraction(128, 100) * Fraction(2, 100)),
    "pass-at-k-estimate": float(1 - Fraction(math.comb(7, 4), math.comb(10, 4))),
    "kl-k3-sample": math.exp(-0.3) - 1 + 0.3,
    "clip-higher-headroom": 1.28 * 0.01,
}


def test_every_numeric_exercise_has_an_independent_value():
    assert set(NUMERIC_TRUTH) == {e.id for e in list_exercises("numeric")}


@pytest.mark.parametrize("ex_id,truth", sorted(NUMERIC_TRUTH.items()))
def test_numeric_answers_match_independent_values(ex_id, truth):
    assert check(ex_id, truth).correct
    assert check(ex_id, str(truth)).correct
    assert not check(ex_id, truth * 1.05).correct


def test_numeric_accepts_percent_and_names_the_all_fail_mistake():
    assert check("zero-variance-p03-g4", "24.82%").correct
    res = check("zero-variance-p03-g4", 0.7 ** 4)
    assert not res.correct and "all-fail" in res.message


# Independent implementations, as a reader would write them.
def my_advantages(rewards, G):
    out = []
    for i in range(0, len(rewards), G):
        g = [float(x) for x in rewards[i:i + G]]
        m, s = statistics.fmean(g), statistics.stdev(g)
        out += [(x - m) / (s + 1e-4) for x in g]
    return np.array(out)


def my_rloo(rewards, G):
    out = []
    for i in range(0, len(rewards), G):
        g = list(rewards[i:i + G])
        out += [g[j] - (sum(g) - g[j]) / (G - 1) for j in range(G)]
    return np.array(out)


def my_zero_variance(rewards, G):
    return np.array([max(rewards[i:i + G]) - min(rewards[i:i + G]) <= 1e-6
                     for i in range(0, len(rewards), G)])


def test_code_exercises_accept_independent_implementations():
    assert check("implement-group-advantages", my_advantages).correct
    assert check("implement-leave-one-out", my_rloo).correct
    assert check("implement-zero-variance-mask", my_zero_variance).correct
    assert check("implement-zero-variance-probability", lambda p, G: p ** G + (1 - p) ** G)


def test_code_checker_names_common_mistakes():
    def ddof0(rewards, G):
        g = np.asarray(rewards, float).reshape(-1, G)
        return ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-4)).ravel()

    res = check("implement-group-advantages", ddof0)
    assert not res.correct and "ddof" in res.message

    def no_eps(rewards, G):
        g = np.asarray(rewards, float).reshape(-1, G)
        return ((g - g.mean(1, keepdims=True)) / g.std(1, ddof=1, keepdims=True)).ravel()

    res = check("implement-group-advantages", no_eps)
    assert not res.correct and "eps" in res.message

    res = check("implement-zero-variance-mask",
                lambda r, G: np.asarray(r).reshape(-1, G).std(1) == 0)
    assert not res.correct and "tolerance" in res.message.lower()


def test_code_checker_reports_exceptions_and_wrong_shapes():
    res = check("implement-group-advantages", lambda r, G: 1 / 0)
    assert not res.correct and "ZeroDivisionError" in res.message
    res = check("implement-group-advantages", lambda r, G: np.zeros(3))
    assert not res.correct and "shape" in res.message


def test_code_checker_is_not_fooled_by_input_mutation():
    def mutating(rewards, G):
        rewards[:] = 0.0
        return np.zeros_like(rewards)

    assert not check("implement-group-advantages", mutating).correct
    assert check("implement-group-advantages", my_advantages).correct


def test_derivations_accept_independent_closed_forms():
    assert check("derive-baseline-variance", lambda s2, G: s2 * G / G ** 2).correct
    assert check("derive-uniform-zero-variance", lambda G: 1 / (G + 1) + 1 / (G + 1)).correct
    assert check("derive-min-group-any-success",
                 lambda p, t: next(G for G in range(1, 10_000)
                                   if 1 - (1 - p) ** G >= t)).correct
    assert check("derive-ddof-ratio", lambda G: 1 / math.sqrt(1 - 1 / G)).correct


def test_get_and_list_errors_and_solution():
    with pytest.raises(ValueError, match="unknown"):
        get("no-such-exercise")
    with pytest.raises(ValueError, match="kind"):
        list_exercises("essay")
    assert "0.2482" in solution("zero-variance-p03-g4")
    assert "RIGHT" in str(check("bernoulli-max-variance", 0.25))
    assert "Right" in check("bernoulli-max-variance", 0.25)._repr_markdown_()
    assert exercises.list_exercises(topic="zero-variance")


def test_workbook_page_is_generated_from_the_registry():
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / exercises.WORKBOOK_PATH
    assert page.read_text(encoding="utf-8") == exercises.render_workbook(), (
        "book/interview/02-exercises.md is stale: run `python -m grpolab.drill.exercises --write`")
    text = page.read_text(encoding="utf-8")
    for ex in ALL:
        assert f'check("{ex.id}"' in text
    assert text.count(":class: dropdown") == len(ALL)


def test_unfinished_function_is_reported_as_unfinished():
    res = check("implement-group-advantages", lambda rewards, G: None)
    assert not res.correct and "returned None" in res.message


def _run_page_cells(page, cwd, monkeypatch):
    """Execute a MyST notebook page's code cells in ``cwd``; return what they displayed."""
    ipy_display = pytest.importorskip("IPython.display")  # the book extra; CI installs it
    jupytext = pytest.importorskip("jupytext")
    pytest.importorskip("myst_nb")

    shown = []
    monkeypatch.setattr(ipy_display, "display", lambda *objs, **kw: shown.extend(objs))
    monkeypatch.chdir(cwd)
    nb = jupytext.read(page)
    ns: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(page), "exec"), ns)  # noqa: S102 - our own page
    return shown


def _text(objs) -> str:
    return "\n".join(getattr(o, "data", "") or "" for o in objs)


def test_claim_audit_says_not_yet_measured_without_results(tmp_path, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    fake = tmp_path / "repo"
    (fake / "src" / "grpolab").mkdir(parents=True)
    (fake / "pyproject.toml").write_text("")
    (fake / "book" / "interview").mkdir(parents=True)
    page = root / "book" / "interview" / "03-claim-audit.md"
    (fake / "book" / "interview" / page.name).write_text(page.read_text(encoding="utf-8"))
    shown = _run_page_cells(page, fake / "book" / "interview", monkeypatch)
    assert "Not yet measured" in _text(shown)


def test_claim_audit_reads_lab_results_when_present(tmp_path, monkeypatch):
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    fake = tmp_path / "repo"
    (fake / "src" / "grpolab").mkdir(parents=True)
    (fake / "pyproject.toml").write_text("")
    (fake / "book" / "interview").mkdir(parents=True)
    (fake / "book" / "labs").mkdir(parents=True)
    (fake / "book" / "labs" / "01-g-sweep.md").write_text("# The G sweep\n")
    page = root / "book" / "interview" / "03-claim-audit.md"
    (fake / "book" / "interview" / page.name).write_text(page.read_text(encoding="utf-8"))
    runs = [{"G": G, "seed": s, "regime": "fixed-budget", "initial_accuracy": 0.2,
             "final_accuracy": 0.3 + 0.01 * G + 0.001 * s, "zero_variance_observed": 0.5,
             # sampled pass@1 (the primary metric): per-seed slopes on log2 G of 0.030
             # and 0.036, so the declared trend test reports their mean, 0.033
             "final_sampled_accuracy": 0.25 + (0.01 + 0.002 * s) * G,
             "zero_variance_predicted": 0.45,
             "completions": 1000} for G in (2, 8) for s in (0, 1)]
    (fake / "labs" / "results" / "fake-preset").mkdir(parents=True)
    (fake / "labs" / "results" / "fake-preset" / "summary.json").write_text(
        json.dumps({"runs": runs}))
    item = {"item": "beta-g", "arms": ["b0-G4"], "results": {"b0-G4": {
        "final_accuracy": {"mean": 0.41, "sd": 0.02, "n": 3},
        "accuracy_gain": {"mean": 0.11, "sd": 0.02, "n": 3},
        "completions": {"mean": 4096.0, "sd": 0.0, "n": 3}}}}
    (fake / "labs" / "results" / "remedies" / "beta-g").mkdir(parents=True)
    (fake / "labs" / "results" / "remedies" / "beta-g" / "results.json").write_text(
        json.dumps({**item, "title": "beta x G"}))
    # A per-run summary under runs/ (never committed) must not be counted twice.
    one = fake / "labs" / "results" / "fake-preset" / "runs" / "fixed-budget" / "G2-seed0"
    one.mkdir(parents=True)
    (one / "summary.json").write_text(json.dumps(runs[0]))
    text = _text(_run_page_cells(page, fake / "book" / "interview", monkeypatch))
    assert "Not yet measured" not in text
    assert "labs/results/fake-preset" in text and "regime `fixed-budget`" in text
    assert "(4 runs)" in text
    assert "Remedy lab `remedies/beta-g`**: beta x G" in text and "0.110 ± 0.020" in text
    assert "4,096 ± 0" in text
    assert "`final_sampled_accuracy`: +0.0330 per doubling of G" in text
    assert "over 2 seeds (the test declared in the G chapter)" in text
    assert "Highest mean" not in text  # the best-minus-worst comparison is gone
    assert "../labs/01-g-sweep.html" in text and "The G sweep" in text


# ------------------------------------------------------------------------------------------
# The static page's checker (grpolab-exercises.js) against the Python checkers
# ------------------------------------------------------------------------------------------
def test_checker_data_holds_every_numeric_and_choice_exercise():
    data = exercises.checker_data()
    expected = {e.id for e in ALL if e.kind in ("numeric", "conceptual")}
    assert set(data) == expected
    for ex in list_exercises("numeric"):
        d = data[ex.id]
        assert d["kind"] == "numeric"
        assert check(ex.id, d["reference"]).correct
        assert not check(ex.id, d["reference"] + 2 * d["tolerance"] + 1e-9).correct
        assert check(ex.id, d["reference"]).message == d["why"]
    for ex in list_exercises("conceptual"):
        assert data[ex.id]["correct"] == ex.answer


_TYPED = ["0.2482", "24.82%", "0.2401", "0.0081", "1/4", "1.4997", "1.732", "0.75", "0.25",
          "0.5", "1", "44", "44.0", "176", "84", "10055", "10,055", "8192", "8 192", "1e4",
          "banana", "", "  ", "%", "inf", "-inf", "nan", "1/0", "3/x", "1_000", "1__0", ".5",
          "5.", "+2", "-0", "1e-7", "123456789", "0.00001234", "b", "(B)", "c.", "d: 64",
          "a) it", "z", "it is b", "'quoted'", "0.3e1", "2e+3", "1.5/2"]


def test_browser_checker_agrees_with_python_on_every_exercise(tmp_path):
    """Run grpolab-exercises.js under node on many typed answers; compare every verdict."""
    import json
    import os
    import shutil
    import subprocess

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is not installed, and CI=true: the answer-box checker must be tested")
        pytest.skip("node is not installed (Debian nodejs; .ci/setup installs it)")
    from grpolab._paths import PACKAGE_DIR

    script = PACKAGE_DIR / "book" / "static" / "grpolab-exercises.js"
    data = exercises.checker_data()
    cases = [(ex_id, typed) for ex_id in data for typed in _TYPED]
    (tmp_path / "data.json").write_text(json.dumps({"data": data, "cases": cases}))
    runner = tmp_path / "run.js"
    runner.write_text(
        "const ex = require(process.argv[2]);\n"
        "const {data, cases} = JSON.parse(require('fs').readFileSync(process.argv[3]));\n"
        "console.log(JSON.stringify(cases.map(([id, t]) => ex.check(data[id], t))));\n")
    out = subprocess.run([node, str(runner), str(script), str(tmp_path / "data.json")],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    verdicts = json.loads(out)
    mismatches = []
    for (ex_id, typed), (ok, message) in zip(cases, verdicts, strict=True):
        res = check(ex_id, typed)
        if (res.correct, res.message) != (ok, message):
            mismatches.append((ex_id, typed, (res.correct, res.message), (ok, message)))
    assert mismatches == [], mismatches[:5]
    assert any(ok for ok, _ in verdicts) and not all(ok for ok, _ in verdicts)


def test_page_emits_the_registry_data_at_build_time():
    """The workbook's hidden cell prints checker_data_html(); it parses back to the registry."""
    import json
    import re

    from grpolab.book import build as gbook

    text = exercises.render_workbook()
    assert "HTML(checker_data_html())" in text and ":tags: [remove-input]" in text
    html = exercises.checker_data_html()
    m = re.fullmatch(r'<script type="application/json" id="grpolab-exercise-data">(.*)</script>',
                     html, re.S)
    assert m and "</" not in m.group(1)
    assert json.loads(m.group(1)) == exercises.checker_data()
    assert "grpolab-exercises.js" in gbook.STATIC_FILES
    assert "grpolab-exercises.css" in gbook.STATIC_FILES


def test_workbook_has_an_answer_box_for_every_checkable_exercise():
    text = exercises.render_workbook()
    for ex_id in exercises.checker_data():
        assert f'<form class="grpolab-answer" data-exercise="{ex_id}"' in text
    assert text.count('<form class="grpolab-answer"') == len(exercises.checker_data())


def _names_used(entries: list[dict]) -> tuple[set, set, list]:
    functions, inputs, values = set(), set(), []
    for e in entries:
        if e["kind"] in ("derivation", "code"):
            functions |= {e["answer"], e["wrong_answer"], e["reference"]}
            functions |= {f for f, _ in e["mistakes"]}
            if isinstance(e["inputs"], str):
                inputs.add(e["inputs"])
        elif e["kind"] == "numeric":
            values.append(e["reference"])
    return functions, inputs, values


def test_exercise_data_names_only_what_the_code_defines_and_the_code_holds_nothing_unused():
    """exercises.json names functions, input sets and grpolab.theory calls; each must exist,
    and no function or input set of the module is left unnamed by the data."""
    import json

    from grpolab import theory

    entries = json.loads(exercises.EXERCISES_FILE.read_text(encoding="utf-8"))
    assert [e["id"] for e in entries] == [e.id for e in list_exercises()]
    functions, inputs, values = _names_used(entries)
    theory_names = {f for f in functions if f.startswith("theory.")}
    assert all(hasattr(theory, f.removeprefix("theory.")) for f in theory_names)
    assert functions - theory_names == set(exercises.FUNCTIONS), (
        sorted((functions - theory_names) ^ set(exercises.FUNCTIONS)))
    assert inputs == set(exercises._INPUT_SETS)
    # a reference computed by grpolab.theory is stored as the call, never as its number
    calls = [v for v in values if isinstance(v, dict)]
    assert len(calls) >= 8 and all("theory" in v or "value" in v for v in calls)


def test_exercise_data_reference_is_recomputed_from_theory(monkeypatch):
    """The stored call is evaluated: a different grpolab.theory gives a different reference
    (the refuting case for "computed, not typed")."""
    from grpolab import theory

    entry = next(e for e in json_entries() if e["id"] == "zero-variance-p03-g4")
    assert exercises._exercise(entry).checker.reference == pytest.approx(0.2482)
    monkeypatch.setattr(theory, "zero_variance_probability", lambda p, G: 0.5)
    assert exercises._exercise(entry).checker.reference == 0.5


def json_entries() -> list[dict]:
    import json

    return json.loads(exercises.EXERCISES_FILE.read_text(encoding="utf-8"))
