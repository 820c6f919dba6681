"""Readers that never read a wrong number in silence (issue 36, class 4): a decimal comma or a
ragged row in a CSV is refused in one line that says so, and no statistic is written as a
non-finite number."""

from __future__ import annotations

import pytest

from grpolab import _files
from grpolab import advise as adv
from grpolab.cli.main import main

#: (file name, text, what the one line must say). Each was read as wrong numbers before:
#: a decimal comma split into two cells (every prompt "never solved"), or a ragged row
#: whose cells shifted into the next column.
PLANTED = [
    ("comma-one-column.csv", "pass_rate\n0,5\n0,25\n0,75\n", "decimal comma"),
    ("comma-no-header.csv", "0,5\n0,25\n0,75\n", "decimal comma"),
    ("comma-quoted.csv", 'pass_rate\n"0,5"\n"0,25"\n', "decimal comma"),
    ("comma-semicolons.csv", "pass_rate;samples\n0,5;8\n0,25;8\n", "decimal comma"),
    ("ragged-short.csv", "successes,samples\n3,8\n5\n2,8\n",
     "row 3 has 1 cell where the first row has 2"),
    ("ragged-long.csv", "pass_rate,prompt\n0.5,a\n0.25,b,extra\n", "row 3 has 3 cells"),
    ("ragged-trailing.csv", "pass_rate\n0.5\n0.25,\n", "row 3 has 2 cells"),
]


@pytest.mark.parametrize("name, text, needle", PLANTED, ids=[p[0] for p in PLANTED])
def test_advise_refuses_decimal_commas_and_ragged_rows_in_one_line(tmp_path, capsys, name,
                                                                   text, needle):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    with pytest.raises(adv.AdviseError, match=needle.replace("(", r"\(")):
        adv.load_pass_rates(f)
    assert main(["advise", "--pass-rates", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err


def test_well_formed_csvs_still_read(tmp_path):
    """The refusals above are not a reader that refuses everything."""
    cases = {"a.csv": ("pass_rate\n0.5\n0.25\n", [0.5, 0.25]),
             "b.csv": ("0.5\n0.25\n", [0.5, 0.25]),
             "c.csv": ('pass_rate,prompt\n0.5,"a, b"\n0.25,c\n', [0.5, 0.25]),
             "d.csv": ("pass_rate\n0.5\n\n0.25\n", [0.5, 0.25])}
    for name, (text, rates) in cases.items():
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        assert adv.load_pass_rates(f).rates.tolist() == rates, name
    f = tmp_path / "counts.csv"
    f.write_text("successes,samples\n3,8\n0,8\n", encoding="utf-8")
    got = adv.load_pass_rates(f)
    assert got.successes.tolist() == [3, 0] and got.trials.tolist() == [8, 8]


@pytest.mark.parametrize("text, needle", [
    ("a,b\n1,2\n3\n", "row 3 has 1 cell where the first row has 2"),
    ("a,b\n1,2,3\n", "row 2 has 3 cells"),
    ("a\n0,5\n", "decimal comma"),
    ('a\n"1,25"\n', "row 2, column 1 is '1,25'"),
])
def test_parse_csv_names_the_row(tmp_path, text, needle):
    with pytest.raises(_files.CorruptFileError, match=needle.replace("(", r"\(")) as info:
        _files.parse_csv(text, tmp_path / "x.csv")
    assert len(str(info.value).splitlines()) == 1
    # the caller that wants ragged rows asks for them
    if "cell" in needle:
        assert _files.parse_csv(text, tmp_path / "x.csv", rectangular=False)


# ---- no statistic is written as a non-finite number -----------------------------------
def test_a_straight_line_has_no_curvature_and_no_infinite_vertex():
    """A metric exactly linear in log₂ G fits a quadratic whose x² coefficient is float
    residue (≈ −4e−17 for every seed): its vertex 2^(−b/2a) was Infinity in
    compute_axis.json, and the t test of the residue called the line concave (p < 0.001)."""
    import json

    import numpy as np

    from grpolab.labs import stats

    line = {G: {s: 0.3 + 0.01 * s + 0.05 * np.log2(G) for s in range(3)} for G in (2, 4, 8, 16)}
    got = stats.curvature_in_log2_G(line)
    assert got["per_seed"] == [0.0, 0.0, 0.0] and got["vertex_G"] == [None, None, None]
    assert not got["concave"] and not got["convex"]
    json.dumps(got, allow_nan=False)  # writable as standard JSON
    # a real curvature is still measured: a peak at G = 4 in every seed
    peak = {G: {s: 0.5 - 0.02 * (np.log2(G) - 2) ** 2 + 0.001 * s for s in range(3)}
            for G in (2, 4, 8, 16)}
    got = stats.curvature_in_log2_G(peak)
    assert got["concave"] and all(abs(v - 4) < 1e-9 for v in got["vertex_G"])


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_json_writer_refuses_non_finite_numbers_naming_the_field(tmp_path, bad):
    import numpy as np

    from grpolab.grpo.records import write_json_atomic

    path = tmp_path / "compute_axis.json"
    path.write_text('{"old": 1}\n')
    doc = {"regimes": {"mixed": {"curvature_final": {"vertex_G": [2.0, np.float64(bad)]}}}}
    with pytest.raises(_files.NonFiniteNumberError) as info:
        write_json_atomic(path, doc)
    msg = str(info.value)
    assert len(msg.splitlines()) == 1 and str(path) in msg
    assert "regimes.mixed.curvature_final.vertex_G[1]" in msg
    assert path.read_text() == '{"old": 1}\n'  # the old file is left as it was
    assert [p.name for p in tmp_path.iterdir()] == ["compute_axis.json"]  # no temporary file
    write_json_atomic(path, {"ok": [1.0, None]})  # finite numbers are written
    assert path.read_text() == '{\n "ok": [\n  1.0,\n  null\n ]\n}'
