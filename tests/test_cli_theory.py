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
    assert rec == [{"p": 0.5, "G": 2, "all_fail": 0.25, "all_pass": 0.25, "zero_gradient": 0.5,
                    "any_success": 0.75, "baseline_variance": 0.125}]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["theory", "--G", "0"], "--G must be an integer >= 1"),
        (["theory", "--G", "2.5"], "--G must be an integer >= 1"),
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


def test_help_lists_theory():
    out = run_cli("--help")
    assert out.returncode == 0 and "theory" in out.stdout
