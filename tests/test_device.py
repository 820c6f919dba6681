"""grpolab.models.device: which process of a distributed launch writes."""

from __future__ import annotations

import pytest

from grpolab.cli.main import main
from grpolab.models.device import is_main_process


@pytest.mark.parametrize("env, main_process", [
    ({}, True),
    ({"RANK": "0", "WORLD_SIZE": "2"}, True),
    ({"RANK": "1", "WORLD_SIZE": "2"}, False),
])
def test_is_main_process(monkeypatch, env, main_process):
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert is_main_process() is main_process


@pytest.mark.parametrize("env", [{"RANK": "1"}, {"RANK": "3", "WORLD_SIZE": "2"},
                                 {"RANK": "x", "WORLD_SIZE": "2"}])
def test_a_stray_rank_makes_lab_train_refuse_in_one_line(monkeypatch, tmp_path, capsys, env):
    """Before: RANK=1 outside a distributed launch made 'lab train' write with no lock and
    print nothing. Now it is refused in one line and nothing is written."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    out = tmp_path / "run"
    assert main(["lab", "train", "--preset", "cpu-quick", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: RANK=") and err.count("\n") == 1, err
    assert not out.exists()
