"""The grpolab command: the theory table, JSON output, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from grpolab.cli.main import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grpolab", *args], capture_output=True, text=True,
                          timeout=120)


def test_theory_table_shows_card_numbers():
    out = run_cli("theory", "--p", "0.1", "--G", "4", "16")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.strip().startswith("0.1")]
    assert len(rows) == 2
    # columns: p G all_fail all_pass zero_grad any_success var
    assert rows[0][1] == "4" and rows[0][2] == "0.6561" and rows[0][4] == "0.6562"
    assert rows[1][1] == "16" and rows[1][2] == "0.1853" and rows[1][4] == "0.1853"


def test_theory_json(capsys):
    assert main(["theory", "--p", "0.5", "--G", "2", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec == [{"p": 0.5, "G": 2, "all_fail": 0.25, "all_pass": 0.25, "zero_variance": 0.5,
                    "any_success": 0.75, "baseline_variance": 0.125}]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["theory", "--G", "0"], "--G must be an integer in [1, 1000000]"),
        (["theory", "--G", "2.5"], "--G must be an integer in [1, 1000000]"),
        (["theory", "--G", "inf"], "--G must be an integer in [1, 1000000], got inf"),
        (["theory", "--p", "1.5"], "--p must be a probability"),
        (["theory", "--p", "nan"], "--p must be a probability"),
        (["theory", "--p", "abc"], "invalid float value"),
        (["no-such-command"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle):
    out = run_cli(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args", [
    # 1e20 used to exit 0 with P = inf and a negative variance (the int64 cast wrapped);
    # inf gave an OverflowError traceback
    ["--G", "1e20"], ["--G", "inf"], ["--G=-inf"], ["--G", "nan"],
    ["--G", "9223372036854775808"], ["--G", "1000001"], ["--G", "4", "1e300"],
    ["--p", "inf"], ["--p=-inf"], ["--p", "1e308"], ["--p", "-0.5", "--G", "1e20"],
])
def test_huge_and_non_finite_numbers_are_one_error_line(args, capsys):
    assert main(["theory", *args]) == 2
    out = capsys.readouterr()
    assert out.out == ""  # nothing printed before the refusal
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --")
    assert ("--G must be an integer" in lines[0]) or ("--p must be a probability" in lines[0])


def test_negative_inf_without_equals_is_a_usage_error(capsys):
    # argparse reads "-inf" as an option, not a number: still one line and exit 2
    with pytest.raises(SystemExit) as exit_:
        main(["theory", "--G", "-inf"])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: argument --G")


def test_largest_group_size_prints_finite_numbers(capsys):
    assert main(["theory", "--p", "0.5", "--G", "1000000", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)[0]
    assert rec["G"] == 1_000_000 and rec["baseline_variance"] == pytest.approx(0.25e-6)
    assert 0 <= rec["zero_variance"] <= 1 and rec["any_success"] == 1.0


def test_help_lists_theory():
    out = run_cli("--help")
    assert out.returncode == 0 and "theory" in out.stdout
