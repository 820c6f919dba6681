"""Your own prompts and verifier (issue #33, item 4; grpolab.tasks.custom).

- ``lab pass-rates --dataset FILE.jsonl --reward file.py:FUNCTION`` runs the census on a
  small JSONL task with a reward function from a file, on the tiny model: the verifier's
  planted prompts (one it always passes, one it never passes) come out at k = n and k = 0,
  so the counts are the user's function's, fed with the line's fields.
- ``lab train --task file.py:CLASS`` trains on a user's Task class, and ``lab sweep`` builds
  its runs from the same name.
- Bad input is one line and exit 2 before any model loads.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import TINY_TASK, TINY_WARM_STEPS, with_warm_start
from grpolab.cli.main import main

VERIFIER = textwrap.dedent("""
    def reward(prompt, completion, answer, **fields):
        if fields.get("always"):          # a field of the line, passed through
            return 1.0
        return float(completion.strip() == answer)

    NOT_A_FUNCTION = 3
""")

LINES = [
    {"prompt": "1+2=", "answer": "3", "prompt_id": "sum-a"},
    {"prompt": "3+4=", "answer": "7", "prompt_id": "sum-b"},
    {"prompt": "5+1=", "answer": "no such answer", "prompt_id": "never"},
    {"prompt": "2+2=", "answer": "no such answer", "prompt_id": "always", "always": True},
]

MY_TASK = textwrap.dedent("""
    from grpolab.tasks.base import Prompt, Task

    class SmallSums(Task):
        '''1-digit sums whose reward is always 1: a run of it has no informative group.'''
        name = "small_sums"

        def __init__(self, n_train=12):
            pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
            self.train_prompts = [Prompt(f"{a}+{b}=", str(a + b), 1) for a, b in pairs[:n_train]]
            self.eval_prompts = [Prompt(f"{a}+{b}=", str(a + b), 1) for a, b in pairs[-4:]]

        def reward(self, prompt, completion):
            return 1.0
""")


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    (tmp_path / "verifier.py").write_text(VERIFIER)
    (tmp_path / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LINES))
    (tmp_path / "my_task.py").write_text(MY_TASK)
    (tmp_path / "bad.jsonl").write_text('{"prompt": "1+2="}\n\n{"prompt": "3+4=", oops}\n')
    (tmp_path / "no-prompt.jsonl").write_text('{"prompt": "1+2="}\n{"answer": "7"}\n')
    return {"reward": f"{tmp_path}/verifier.py:reward", "dataset": str(tmp_path / "prompts.jsonl"),
            "task": f"{tmp_path}/my_task.py:SmallSums", "dir": str(tmp_path)}


def _warm_model(tiny_cache: str) -> str:
    """The session's warm-started tiny model folder (conftest.tiny_cache trained it once)."""
    found = [p for p in Path(tiny_cache).glob("warmstart-*") if p.is_dir()]
    assert len(found) == 1, found
    return str(found[0])


def test_census_on_your_prompts_with_your_verifier(files, tmp_path, tiny_cache, capsys):
    out = tmp_path / "census"
    n = 4
    code = main(["lab", "pass-rates", "--dataset", files["dataset"], "--reward", files["reward"],
                 "--model", _warm_model(tiny_cache), "--samples", str(n),
                 "--max-new-tokens", "3", "--device", "cpu", "--quiet", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    result = json.loads((out / "pass_rates.json").read_text())
    assert result["finished"] and result["config"]["task"] == "jsonl"
    by_id = {r["prompt_id"]: r for r in result["records"]}
    assert list(by_id) == [r["prompt_id"] for r in LINES]  # every line, in the file's order
    assert all(r["samples"] == n and len(r["rewards"]) == n for r in by_id.values())
    assert by_id["never"]["successes"] == 0  # an answer no completion can equal
    assert by_id["always"]["successes"] == n  # the line's own field reached the verifier
    assert [c["G"] for c in result["summary"]["check"]] == [2]  # G <= n / 2 only
    assert "4 prompts x 4 samples" in capsys.readouterr().out


@pytest.mark.parametrize("argv,fragment", [
    (["--dataset", "DIR/bad.jsonl", "--reward", "REWARD"], "bad.jsonl, line 3: not JSON"),
    (["--dataset", "DIR/no-prompt.jsonl", "--reward", "REWARD"],
     'no-prompt.jsonl, line 2: no "prompt"'),
    (["--dataset", "DATASET", "--reward", "DIR/verifier.py:NOT_A_FUNCTION"],
     "'NOT_A_FUNCTION' is not callable"),
    (["--dataset", "DATASET", "--reward", "DIR/verifier.py:missing"], "has no 'missing'"),
    (["--dataset", "DATASET", "--reward", "no_such_module_xyz:reward"],
     "cannot import 'no_such_module_xyz'"),
    (["--dataset", "DATASET", "--reward", "reward"], "--reward must be MODULE:NAME"),
    (["--dataset", "DATASET"], "--dataset and --reward go together"),
])
def test_bad_files_are_one_line_before_any_model(argv, fragment, files, tmp_path, capsys):
    subst = {"REWARD": files["reward"], "DATASET": files["dataset"]}
    argv = [subst.get(a, a.replace("DIR", files["dir"])) for a in argv]
    out = tmp_path / "out"
    assert main(["lab", "pass-rates", *argv, "--model", "no-such-model", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fragment in err, err
    assert not out.exists()


def _train_argv(files, out, *more) -> list[str]:
    warm = json.dumps({"task_kwargs": TINY_TASK, "steps": TINY_WARM_STEPS})
    return ["lab", "train", "--preset", "cpu-quick", "--warmstart", warm, "--G", "2",
            "--prompts-per-step", "2", "--steps", "2", "--eval-samples", "1",
            "--census-samples", "2", "--max-eval-prompts", "4", "--device", "cpu",
            "--threads", "1", "--quiet", *more, "--out", str(out)]


def test_lab_train_on_your_task_class(files, tmp_path, tiny_cache, capsys):
    out = with_warm_start(tmp_path / "run", tiny_cache)
    assert main(_train_argv(files, out, "--task", files["task"])) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["task"] == files["task"]
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward_mean" in r]
    assert len(steps) == 2
    # the class's reward (always 1), not arithmetic's: every group is zero-variance
    assert all(r["reward_mean"] == 1.0 and r["zero_variance_observed"] == 1.0 for r in steps)


def test_lab_train_on_a_jsonl_task(files, tmp_path, tiny_cache, capsys):
    out = with_warm_start(tmp_path / "run", tiny_cache)
    kwargs = json.dumps({"path": files["dataset"], "reward": files["reward"]})
    argv = _train_argv(files, out, "--task", "jsonl", "--task-kwargs", kwargs)
    assert main(argv) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len([r for r in rows if "reward_mean" in r]) == 2


def test_lab_sweep_builds_every_run_on_your_task(files, tmp_path):
    """The sweep passes the name through: each (regime, G, seed) config names the class and
    validates against its prompts (the sweep's own code is unchanged)."""
    from grpolab.labs.sweep.presets import get_preset

    mixed = [r for r in get_preset("cpu-quick").regimes if r.name == "mixed"]  # levels 1-3
    preset = get_preset("cpu-quick", task=files["task"], task_kwargs={"n_train": 40},
                        regimes=mixed)
    preset.check_prompts()
    for regime in preset.regimes:
        for G in preset.group_sizes:
            config = preset.run_config(regime, G, 0).validate_prompts()
            assert config.task == files["task"]
    # the practitioner page's command, through the CLI's parser: the preset's own task_kwargs
    # (word problems') stay behind, the TRL backend and the four arms come through
    from grpolab.cli.lab import build_preset
    from grpolab.cli.main import build_parser

    args = build_parser().parse_args([
        "lab", "sweep", "--preset", "gpu-smollm2", "--backend", "trl", "--model", "tiny",
        "--task", files["task"], "--regimes", "mixed", "--G", "2", "4", "8", "16",
        "--seeds", "0", "1", "2", "--budget", "16", "--out", str(tmp_path / "sweep")])
    preset = build_preset(args)
    assert (preset.config.task, preset.config.task_kwargs) == (files["task"], {})
    assert preset.config.backend == "trl" and preset.group_sizes == [2, 4, 8, 16]
    assert [preset.run_config(preset.regimes[0], G, 0).prompts_per_step
            for G in preset.group_sizes] == [8, 4, 2, 1]  # a fixed budget of 16 completions


@pytest.mark.parametrize("task,kwargs,fragment", [
    ("DIR/my_task.py:Nope", "{}", "has no 'Nope'"),
    ("DIR/my_task.py:SmallSums", '{"n_trian": 3}', "takes no argument 'n_trian'"),
    ("jsonl", "{}", "task 'jsonl' needs 'path'"),
    ("jsonl", '{"path": "DIR/no-prompt.jsonl", "reward": "REWARD"}', 'line 2: no "prompt"'),
])
def test_bad_task_names_are_one_line(task, kwargs, fragment, files, tmp_path, capsys):
    task = task.replace("DIR", files["dir"])
    kwargs = kwargs.replace("DIR", files["dir"]).replace("REWARD", files["reward"])
    out = tmp_path / "out"
    assert main(_train_argv(files, out, "--task", task, "--task-kwargs", kwargs)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fragment in err, err
    assert not out.exists()


def test_a_reward_out_of_range_or_raising_is_one_line_naming_the_prompt(files, tmp_path):
    from grpolab.tasks.custom import JsonlTask

    (tmp_path / "odd.py").write_text("def two(p, c, **f):\n    return 2.0\n"
                                     "def boom(p, c, **f):\n    raise KeyError('answer')\n")
    prompt = JsonlTask(files["dataset"], files["reward"]).train_prompts[0]
    assert JsonlTask(files["dataset"], files["reward"]).reward(prompt, "3") == 1.0
    for name, fragment in (("two", "returned 2.0 for prompt_id 'sum-a'"),
                           ("boom", "failed on prompt_id 'sum-a' (KeyError: 'answer')")):
        task = JsonlTask(files["dataset"], f"{tmp_path}/odd.py:{name}")
        with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            task.reward(prompt, "3")


@pytest.mark.slow
def test_the_trl_backend_trains_on_your_jsonl_task(files, tmp_path, tiny_cache, capsys):
    """Section 4 of the practitioner page: your prompts and verifier through TRL's trainer."""
    out = with_warm_start(tmp_path / "run", tiny_cache)
    kwargs = json.dumps({"path": files["dataset"], "reward": files["reward"]})
    argv = _train_argv(files, out, "--backend", "trl", "--task", "jsonl", "--task-kwargs", kwargs)
    assert main(argv) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["backend"] == "trl" and summary["config"]["task"] == "jsonl"
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward_mean" in r]
    assert len(steps) == 2 and all(0 <= r["reward_mean"] <= 1 for r in steps)


def test_census_model_tiny_uses_the_warm_start(files, tmp_path, tiny_cache, monkeypatch, capsys):
    """``--model tiny``: the embedded model, warm-started into OUT/cache (here the session's
    warm start stands in for the default one, which would take minutes to train)."""
    import grpolab.grpo.warmstart as warmstart

    calls = []

    def cached(config, cache_dir, **kwargs):
        calls.append(str(cache_dir))
        return _warm_model(tiny_cache)

    monkeypatch.setattr(warmstart, "warm_start", cached)
    out = tmp_path / "census"
    code = main(["lab", "pass-rates", "--dataset", files["dataset"], "--reward", files["reward"],
                 "--model", "tiny", "--samples", "2", "--max-new-tokens", "3", "--device", "cpu",
                 "--quiet", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert calls == [str(out / "cache")]
    result = json.loads((out / "pass_rates.json").read_text())
    assert result["config"]["model"] == "tiny" and len(result["records"]) == len(LINES)
