"""``grpolab advise --allocation``: what each per-prompt split spends where."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from grpolab import allocation
from grpolab.cli import advise as cli_advise

CENSUS = "labs/results/smollm2-pass-rates/pass_rates.json"


def test_help_lists_every_rule_with_its_objective():
    assert list(cli_advise._RULES) == list(allocation.ALLOCATION_RULES)


def test_allocation_by_bin_spends_the_budget_and_splits_the_schools():
    p = np.concatenate([np.full(10, 0.03), np.full(10, 0.5), np.full(10, 0.97)])
    split = allocation.allocation_by_bin(p, 8, list(allocation.ALLOCATION_RULES), max_G=64)
    for rule in ["uniform", *allocation.ALLOCATION_RULES]:
        assert sum(b[rule] for b in split["bins"]) == pytest.approx(1.0)
    hard = split["bins"][0]
    assert hard["high"] <= 0.05 and hard["prompts"] == 10
    # the refuting contrast of the chapter: the signal school feeds the hard bin more than
    # uniform does, the variance school less
    assert hard["first-success"] > hard["uniform"] > hard["variance-dr-grpo"]
    for rule, o in split["objectives"].items():
        better = o["rule"] >= o["uniform"] - 1e-12 if allocation.ALLOCATION_RULES[rule].sign > 0 \
            else o["rule"] <= o["uniform"] + 1e-12
        assert better, rule


def _advise(*args):
    return subprocess.run([sys.executable, "-m", "grpolab", "advise", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_prints_the_table_and_json():
    out = _advise("--pass-rates", CENSUS, "--budget", "128", "--allocation", "all")
    assert out.returncode == 0, out.stderr
    assert "share of the completions by pass-rate bin" in out.stdout
    for rule in allocation.ALLOCATION_RULES:
        assert f"{rule} (" in out.stdout
    js = _advise("--pass-rates", CENSUS, "--budget", "128", "--allocation", "informative",
                 "variance-rloo", "--json")
    doc = json.loads(js.stdout)
    assert set(doc["allocation"]["objectives"]) == {"informative", "variance-rloo"}


def test_cli_refuses_an_unknown_rule_and_a_log_without_rates(tmp_path):
    out = _advise("--pass-rates", CENSUS, "--allocation", "nope")
    assert out.returncode == 2 and "invalid choice" in out.stderr
    # a TRL log has one mean, no per-prompt rates: the table is replaced by one line
    log = tmp_path / "trainer_state.json"
    log.write_text(json.dumps({"log_history": [
        {"step": s, "reward": 0.4, "frac_reward_zero_std": 0.3} for s in range(1, 6)]}))
    out = _advise("--pass-rates", str(log), "--num-generations", "8", "--allocation", "all")
    assert out.returncode == 0, out.stderr
    assert "--allocation needs per-prompt pass rates" in out.stdout
