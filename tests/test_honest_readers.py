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
