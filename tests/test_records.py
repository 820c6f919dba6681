"""grpolab.grpo.records: a run's summary is derived from its own log."""

from __future__ import annotations

import json

import torch

import grpolab.grpo.records as records
from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.records import RunLog


def _eval(step: int, greedy: float, sampled: float) -> dict:
    return {"step": step, "completions": 8 * step, "tokens": 40 * step, "seconds": 0.0,
            "eval_greedy_accuracy": greedy, "eval_sampled_accuracy": sampled,
            "eval_greedy_accuracy_by_difficulty": {"1": greedy},
            "eval_sampled_accuracy_by_difficulty": {"1": sampled}}


def test_summary_is_derived_from_the_log(tmp_path, monkeypatch):
    """initial = the step-0 evaluation, final = the last one (three distinct evaluations, so
    swapping, or reading the middle one, is seen); counts from the last step's row."""
    monkeypatch.setattr(records, "warmstart_record", lambda config, source: {})  # no weights
    log = RunLog(tmp_path)
    log.write(_eval(0, 0.1, 0.15))
    log.write({"step": 1, "completions": 8, "tokens": 40, "grad_norm": 1.0, "entropy": 0.5,
               "kl": 0.0, "completion_length_mean": 5.0})
    log.write({**_eval(2, 0.3, 0.35), "grad_norm": 2.0, "entropy": 0.4, "kl": 0.1,
               "completion_length_mean": 6.0})
    log.write({**_eval(3, 0.5, 0.55), "grad_norm": 3.0, "entropy": 0.3, "kl": 0.2,
               "completion_length_mean": 7.0})
    s = log.summary(GRPOConfig(), device=torch.device("cpu"), source="test",
                    monitor_summary={"informative_groups_used": 6})
    assert (s["initial_accuracy"], s["final_accuracy"]) == (0.1, 0.5)
    assert (s["initial_sampled_accuracy"], s["final_sampled_accuracy"]) == (0.15, 0.55)
    assert s["initial_accuracy_by_difficulty"] == {"1": 0.1}
    assert s["final_accuracy_by_difficulty"] == {"1": 0.5}
    assert s["steps"] == 3 and s["updates"] == 3 and s["completions"] == 24
    assert s["grad_norm_mean"] == 2.0 and s["final_entropy"] == 0.3
    assert json.loads((tmp_path / "summary.json").read_text())["final_accuracy"] == 0.5
