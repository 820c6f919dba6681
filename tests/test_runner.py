"""The one experiment runner (grpolab.labs.runner): one lock per command, workers that give
the serial results bit for bit, a failed run failing the command with its own error."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

import numpy as np
import pytest
import torch

import grpolab.grpo.records as records
from conftest import TINY_TASK, tiny_warm_start, with_warm_start
from grpolab.labs.runner import CensusSpec, PlannedRun, Runner
from grpolab.labs.sweep.presets import Regime, get_preset
from grpolab.labs.sweep.sweep import plan_sweep, run_sweep


def tiny_preset(**kw):
    return get_preset(
        "cpu-quick", group_sizes=[2, 4], seeds=[0, 1], steps=3, eval_every=2,
        task_kwargs=TINY_TASK, warmstart=tiny_warm_start(),
        regimes=[Regime("mixed", [1, 2], budget=8)], max_train_prompts=40, noise_batches=0,
        eval_samples=2, **kw)


def _logs(out) -> dict[str, list[dict]]:
    """Every run's log.jsonl, its records without the wall-clock field."""
    return {str(p.relative_to(out)): [{k: v for k, v in json.loads(line).items()
                                       if k != "seconds"} for line in p.read_text().splitlines()]
            for p in sorted(out.glob("runs/*/*/log.jsonl"))}


@pytest.fixture(scope="module")
def serial_sweep(tmp_path_factory, tiny_cache):
    """The tiny sweep trained by one worker (the reference every executor must match)."""
    torch.set_num_threads(1)
    out = with_warm_start(tmp_path_factory.mktemp("serial") / "one", tiny_cache)
    run_sweep(tiny_preset(), out, progress=False, plots=False, log=lambda *_: None, workers=1)
    return out


def test_two_workers_give_the_logs_of_one_and_one_lock(serial_sweep, tmp_path, tiny_cache,
                                                       monkeypatch):
    torch.set_num_threads(1)
    locks = []
    real_lock = records.output_lock
    monkeypatch.setattr(records, "output_lock", lambda out: locks.append(out) or real_lock(out))
    two = with_warm_start(tmp_path / "two", tiny_cache)
    run_sweep(tiny_preset(), two, progress=False, plots=False, log=lambda *_: None, workers=2)
    assert locks == [str(two)]  # one lock site per command
    a, b = _logs(serial_sweep), _logs(two)
    assert len(a) == 4 and all(len(v) > 2 for v in a.values())
    assert a == b
    # the census is kept once under its key (the shared test cache may hold other tests'
    # censuses: no two keyed files may have the same inputs), and under the readable name
    # the reports read
    assert (two / "census-d1-2.npy").is_file()
    # measured in a worker (side by side with the workers' start), the same census
    assert np.array_equal(np.load(two / "census-d1-2.npy"),
                          np.load(serial_sweep / "census-d1-2.npy"))
    inputs = [json.loads(p.read_text()) for p in (two / "cache").glob("census-*.json")]
    assert inputs and len({json.dumps(i, sort_keys=True) for i in inputs}) == len(inputs)


@pytest.mark.slow
def test_the_ray_executor_gives_the_logs_of_one_worker(serial_sweep, tmp_path, tiny_cache):
    """The same plan as Ray tasks on a local Ray instance (CPU)."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'grpolab[cluster]')")
    torch.set_num_threads(1)
    out = with_warm_start(tmp_path / "ray", tiny_cache)
    run_sweep(tiny_preset(), out, progress=False, plots=False, log=lambda *_: None, workers=2,
              executor="ray")
    assert _logs(out) == _logs(serial_sweep)


def test_a_failed_worker_fails_the_command_with_its_own_error(tmp_path, tiny_cache):
    """A run whose batch source cannot be built (a planted ValueError in the worker) fails
    the command with that error; the other run, trained beside it, finishes and stays."""
    torch.set_num_threads(1)
    out = with_warm_start(tmp_path / "out", tiny_cache)
    plan = plan_sweep(str(out), replace(tiny_preset(), group_sizes=[2], seeds=[0, 1]))
    plan[1].batches = partial(int, "planted failure")
    with Runner(out, progress=False, log=lambda *_: None) as runner:
        with pytest.raises(ValueError, match="invalid literal for int.*planted failure"):
            runner.run(plan, runner.check(plan), workers=2)
        assert set(runner.check(plan)) == {plan[0].name}  # the good run finished


def test_runs_with_one_pool_key_train_once(tmp_path, tiny_cache, monkeypatch):
    import grpolab.labs.runner as runner_module

    torch.set_num_threads(1)
    out = with_warm_start(tmp_path / "out", tiny_cache)
    base = plan_sweep(str(out), replace(tiny_preset(), group_sizes=[2], seeds=[0]))[0]
    twin = PlannedRun("twin", base.config, str(out / "runs" / "twin"),
                      CensusSpec(base.census.samples, base.census.seed), pool_key="k")
    first = replace(twin, name="first", folder=str(out / "runs" / "first"))
    trained = []
    real = runner_module._Job.train
    monkeypatch.setattr(runner_module._Job, "train",
                        lambda job, progress: trained.append(job.name) or real(job, progress))
    with Runner(out, pool_dir=str(tmp_path / "pool"), progress=False,
                log=lambda *_: None) as runner:
        plan = [first, twin]
        got = runner.run(plan, runner.check(plan), workers=2)
    assert trained == ["first"]  # the twin was copied from the pool, not trained
    assert got["first"]["final_accuracy"] == got["twin"]["final_accuracy"]
    assert (tmp_path / "pool" / "k" / "summary.json").is_file()


def test_workers_must_be_positive(tmp_path):
    with Runner(tmp_path / "out") as runner, pytest.raises(ValueError, match="--workers"):
        runner.run([], {}, workers=0)


def test_a_pooled_run_with_a_link_is_never_copied(tmp_path):
    """A pool folder whose log.jsonl is a link to a private file is refused, not copied
    (issue 36: copies never follow links out of their source)."""
    from grpolab._paths import OutputPathError
    from grpolab.labs import runner

    secret = tmp_path / "secret.txt"
    secret.write_text("private\n")
    pooled = tmp_path / "pool" / "key"
    pooled.mkdir(parents=True)
    (pooled / "log.jsonl").symlink_to(secret)
    (pooled / "summary.json").write_text("{}")
    dst = tmp_path / "out" / "run"
    with pytest.raises(OutputPathError, match="symbolic link"):
        runner._copy_run(str(pooled), str(dst), {})
    assert not (dst / "log.jsonl").exists()


def test_workers_start_the_longest_runs_first(tmp_path, monkeypatch):
    """A plan whose most expensive runs come last (the fixed-prompts regime at G = 32) is
    handed to the workers longest first, so the last run to start is a short one."""
    import grpolab.labs.runner as runner_module
    from grpolab.labs.runner import planned_completions

    preset = get_preset("cpu-quick", group_sizes=[2, 32], seeds=[0], task_kwargs=TINY_TASK)
    plan = plan_sweep(str(tmp_path / "out"), preset)
    costs = {r.name: planned_completions(r.config) for r in plan}
    assert costs[plan[-1].name] == max(costs.values())  # the plan ends with the costliest
    assert planned_completions(replace(plan[0].config, completion_budget=640)) == 640
    started = []
    stub = {"initial_accuracy": 0.0, "final_accuracy": 0.0, "completions": 0, "seconds": 0.0}
    monkeypatch.setattr(runner_module, "_run_in_processes", lambda jobs, done, **kw: [
        started.append(j.name) or done(j, stub) for j in jobs])
    monkeypatch.setattr(Runner, "censuses", lambda self, plan, finished, needed, pool: {
        r.name: None for r in plan})
    with Runner(tmp_path / "out", progress=False, log=lambda *_: None) as runner:
        runner.run(plan, {}, workers=2)
    assert [costs[n] for n in started] == sorted(costs.values(), reverse=True)
    assert started[0] == plan[-1].name
