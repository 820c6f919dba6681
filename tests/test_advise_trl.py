"""grpolab advise on a real TRL run (issue 33 items 1-3): multi-reward logs, W&B exports,
the GRPOConfig block checked against TRL's own GRPOConfig, and --keep."""

from __future__ import annotations

import ast
import json
import math
import re

import numpy as np
import pytest

from grpolab import advise as adv
from grpolab._paths import checkout_root
from grpolab.cli.main import main

CENSUS = checkout_root() / "labs" / "results" / "smollm2-pass-rates" / "pass_rates.json"


def _write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def _trl_history(steps=30, acc=0.46, zero_std=0.58, fmt=None, fmt_std=None, seed=0):
    """log_history as TRL 1.x writes it (keys from GRPOTrainer._generate_and_score_completions):
    an accuracy reward that is 0/1 (std sqrt(m(1-m)) over a batch of 128 completions) and,
    optionally, a format reward, with 'reward' their sum; plus an eval entry and the final
    summary entry, which carry no training frac_reward_zero_std."""
    rng = np.random.default_rng(seed)
    hist = []
    for i in range(1, steps + 1):
        m = float(np.clip(acc + rng.normal(0, 0.01), 0.01, 0.99))
        row = {"step": 10 * i, "epoch": i / steps, "loss": 0.01, "learning_rate": 1e-6,
               "frac_reward_zero_std": zero_std, "completions/mean_length": 210.0,
               "rewards/accuracy_reward/mean": m,
               "rewards/accuracy_reward/std": math.sqrt(128 / 127 * m * (1 - m))}
        total = m
        if fmt is not None:
            row["rewards/format_reward/mean"] = fmt
            row["rewards/format_reward/std"] = fmt_std
            total += fmt
        row["reward"], row["reward_std"] = total, 0.5
        hist.append(row)
    hist.append({"step": 300, "eval_reward": 0.4, "eval_frac_reward_zero_std": 0.9})
    hist.append({"step": 300, "train_runtime": 1000.0, "train_loss": 0.01})
    return hist


def _state(tmp_path, name="trainer_state.json", **kw):
    return _write(tmp_path, name, json.dumps({"global_step": 300,
                                              "log_history": _trl_history(**kw)}))


# ---- 1. real logs ----------------------------------------------------------------------
def test_two_reward_log_uses_the_accuracy_reward_and_warns_about_the_sum(tmp_path):
    """Persona B's two-reward log: 'reward' = accuracy + format = 1.4; the 0/1 accuracy
    reward (0.46) is the pass rate, the continuous format reward is not picked."""
    f = _state(tmp_path, fmt=0.94, fmt_std=0.12)
    d = adv.load_pass_rates(f, num_generations=8)
    assert d.kind == "beta"
    assert d.mean_pass_rate == pytest.approx(0.46, abs=0.01)
    assert d.zero_variance_fraction(8) == pytest.approx(0.58, rel=1e-6)
    assert any("rewards/accuracy_reward/mean, the only 0/1-valued" in s for s in d.assumptions)
    assert any("summed reward" in w and "lower bound" in w for w in d.warnings)
    out = adv.format_advice(adv.advise(d, budget=128))
    assert "WARNING: frac_reward_zero_std is computed on the summed reward" in out


def test_a_constant_second_reward_makes_the_zero_std_fraction_exact(tmp_path):
    f = _state(tmp_path, fmt=1.0, fmt_std=0.0)
    d = adv.load_pass_rates(f, num_generations=8)
    assert not d.warnings
    assert any("had std 0 in every step used" in s for s in d.assumptions)


def test_two_binary_rewards_stop_with_the_keys_then_reward_key_chooses(tmp_path, capsys):
    f = _state(tmp_path, fmt=0.5, fmt_std=math.sqrt(128 / 127 * 0.25))  # also 0/1-valued
    assert main(["advise", "--pass-rates", str(f), "--num-generations", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reward-key" in err[0]
    assert "rewards/accuracy_reward/mean" in err[0] and "rewards/format_reward/mean" in err[0]
    for key in ("accuracy_reward", "rewards/accuracy_reward/mean",
                "train/rewards/accuracy_reward/mean"):
        d = adv.load_pass_rates(f, num_generations=8, reward_key=key)
        assert d.mean_pass_rate == pytest.approx(0.46, abs=0.01)


@pytest.mark.parametrize("key, needle", [
    ("correctness", "no reward 'correctness' in the log; reward keys found: reward, "
                    "rewards/accuracy_reward/mean"),
    ("reward", "not a pass rate strictly inside (0, 1)"),
])
def test_a_bad_reward_key_is_one_line_naming_the_keys(tmp_path, capsys, key, needle):
    f = _state(tmp_path, fmt=0.94, fmt_std=0.12)
    code = main(["advise", "--pass-rates", str(f), "--num-generations", "8", "--reward-key", key])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], err


def test_a_non_binary_single_reward_is_refused(tmp_path):
    hist = [{"frac_reward_zero_std": 0.3, "rewards/score/mean": 0.5, "rewards/score/std": 0.05,
             "reward": 0.5} for _ in range(3)]
    f = _write(tmp_path, "log.jsonl", "\n".join(map(json.dumps, hist)))
    with pytest.raises(adv.AdviseError, match="none of them look 0/1-valued"):
        adv.load_pass_rates(f, num_generations=8)


WANDB = ("Step,train/reward,train/reward_std,train/frac_reward_zero_std,"
         "train/rewards/accuracy_reward/mean,train/rewards/accuracy_reward/std,eval/reward\n")


def test_wandb_csv_export_is_read(tmp_path):
    rows = []
    for step in range(10, 160, 10):
        rows.append(f"{step},0.46,0.5,0.58,0.46,{math.sqrt(0.46 * 0.54):.6f},")
    rows.insert(3, "35,,,,,,0.41")  # an eval-only row: empty training cells
    d = adv.load_pass_rates(_write(tmp_path, "wandb.csv", WANDB + "\n".join(rows) + "\n"),
                            num_generations=8)
    assert d.kind == "beta" and d.mean_pass_rate == pytest.approx(0.46)
    assert d.zero_variance_fraction(8) == pytest.approx(0.58, rel=1e-6)


def test_wandb_panel_export_with_run_prefix_and_min_max(tmp_path):
    head = ('"Step","run-7 - train/frac_reward_zero_std","run-7 - train/frac_reward_zero_std__MIN",'
            '"run-7 - train/frac_reward_zero_std__MAX","run-7 - train/reward"\n')
    body = "".join(f'"{s}","0.5","0.4","0.6","0.3"\n' for s in (30, 10, 20))
    d = adv.load_pass_rates(_write(tmp_path, "panel.csv", head + body), num_generations=8)
    assert d.zero_variance_fraction(8) == pytest.approx(0.5, rel=1e-6)
    assert d.mean_pass_rate == pytest.approx(0.3)


@pytest.mark.parametrize("name, text, needle", [
    ("nostep.csv", "train/reward,train/frac_reward_zero_std\n0.3,0.5\n", "needs a step column"),
    ("nozero.json", json.dumps({"log_history": [{"reward": 0.3, "loss": 0.1}]}),
     "no logged step has frac_reward_zero_std"),
    ("nozero.jsonl", '{"reward": 0.3}\n{"reward": 0.4}\n', "no logged step has frac_reward"),
    ("nozero.csv", "Step,train/reward\n1,0.3\n", "no logged step has frac_reward_zero_std"),
    ("ragged.csv", "Step,train/frac_reward_zero_std,train/reward\n1,0.5\n", "row 2 has 2 cells"),
    ("text.csv", "Step,train/frac_reward_zero_std,train/reward\n1,half,0.3\n", "must be a number"),
])
def test_bad_logs_are_one_line_exit_2(tmp_path, capsys, name, text, needle):
    f = _write(tmp_path, name, text)
    assert main(["advise", "--pass-rates", str(f), "--num-generations", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err


def test_every_line_names_the_compute_it_holds_fixed():
    d = adv.Difficulty("counts", "c", successes=np.array([0, 2, 5, 8, 1]),
                       trials=np.full(5, 8))
    a = adv.advise(d, budget=96, max_G=32)
    for line in a.recommendation:
        if line["item"].startswith("monitor"):
            continue
        assert "N = 96" in line["reason"] or "same completions per step" in line["reason"], line


def test_installed_trl_logs_the_keys_advise_reads():
    """The key names advise reads are the ones the installed TRL writes."""
    trl = pytest.importorskip("trl")
    from trl.trainer import grpo_trainer

    source = open(grpo_trainer.__file__, encoding="utf-8").read()
    assert '["frac_reward_zero_std"]' in source, trl.__version__
    assert 'f"rewards/{reward_func_name}/mean"' in source
    assert 'f"rewards/{reward_func_name}/std"' in source
    assert "dynamic_sampling" not in source and "filter_groups" not in source  # TRL has none


# ---- 2. the GRPOConfig block -------------------------------------------------------------
def _printed_config(text: str) -> dict:
    """The keyword arguments of the printed ``GRPOConfig(...)`` block, parsed as Python."""
    block = text[text.index("config = GRPOConfig(\n"):]
    block = block[:block.index("\n    )")]
    values = {}
    for line in block.splitlines()[1:]:
        m = re.match(r"\s+(\w+)=(.+?),\s+#", line) or re.match(r"\s+(\w+)=(.+?),$", line)
        assert m, line
        values[m.group(1)] = ast.literal_eval(m.group(2))
    return values


def _trl_config(tmp_path, processes: int, **kwargs):
    """trl.GRPOConfig as TRL builds it on ``processes`` processes (world_size patched: the
    test runs one CPU process; GRPOConfig.__post_init__ reads self.world_size)."""
    trl = pytest.importorskip("trl")

    class Config(trl.GRPOConfig):
        @property
        def world_size(self):
            return processes

    kwargs.update(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[])
    return Config(**kwargs)


@pytest.mark.parametrize("G, budget, processes, per_device", [
    (8, 128, 1, 8), (4, 512, 1, 16), (16, 256, 2, 8), (8, 96, 4, 6), (6, 100, 3, 32),
    (2, 64, 8, 2),
])
def test_printed_config_is_what_trls_own_grpoconfig_derives(tmp_path, G, budget, processes,
                                                            per_device):
    d = adv.Difficulty("rates", "r", rates=np.array([0.1, 0.3, 0.5, 0.8]))
    a = adv.advise(d, budget=budget, processes=processes, per_device_batch=per_device)
    c = adv.trl_config(G, budget, processes=processes, per_device_batch=per_device)
    text = "\n".join(adv._format_config({**c, "for": "G"}))
    printed = _printed_config(text)
    assert set(printed) == {"output_dir", "num_generations", "per_device_train_batch_size",
                            "gradient_accumulation_steps", "steps_per_generation",
                            "num_iterations", "temperature", "scale_rewards", "loss_type",
                            "mask_truncated_completions", "beta", "num_generations_eval"}
    del printed["output_dir"]
    cfg = _trl_config(tmp_path, processes, **printed)
    N = c["completions_per_step"]
    assert cfg.generation_batch_size == N == c["generation_batch_size"]
    assert cfg.steps_per_generation == c["steps_per_generation"]
    assert (cfg.per_device_train_batch_size * processes * cfg.gradient_accumulation_steps == N)
    assert cfg.per_device_train_batch_size <= per_device
    assert N % G == 0 and N // G == c["prompts_per_step"] <= budget // G
    assert cfg.num_generations == G and cfg.scale_rewards == "none"
    # and the block the command prints for its own recommendation parses the same way
    own = _printed_config(adv.format_advice(a))
    del own["output_dir"]
    assert _trl_config(tmp_path, processes, **own).generation_batch_size == \
        a.config["completions_per_step"]


def test_trl_refuses_a_split_that_breaks_groups(tmp_path):
    """The comparison can fail: TRL rejects a generation batch that is not whole groups."""
    with pytest.raises(ValueError, match="divisible by num_generations"):
        _trl_config(tmp_path, 1, num_generations=3, per_device_train_batch_size=8,
                    gradient_accumulation_steps=1)


def test_config_block_says_what_to_do_about_zero_variance_in_trl(capsys):
    assert main(["advise", "--pass-rates", str(CENSUS), "--budget", "128",
                 "--processes", "2", "--per-device-batch", "16"]) == 0
    out = capsys.readouterr().out
    ds = next(line for line in out.splitlines() if line.startswith("  dynamic sampling:"))
    assert "TRL, which has no dynamic sampling: filter the pool with a census (--keep)" in ds
    assert "per_device_train_batch_size=" in out and "# verl equivalents" in out
    assert "actor_rollout_ref.actor.ppo_mini_batch_size=" in out


def test_no_split_over_processes_is_one_line():
    with pytest.raises(adv.AdviseError, match="--processes 16"):
        adv.trl_config(8, 8, processes=16)


# ---- 3. --keep --------------------------------------------------------------------------
CENSUS_CSV = "prompt_id,successes,samples\nq1,0,8\nq2,3,8\nq3,8,8\nq4,1,8\nq5,7,8\n"


def test_keep_writes_the_prompts_filtering_keeps(tmp_path, capsys):
    f = _write(tmp_path, "census.csv", CENSUS_CSV)
    keep = tmp_path / "keep.txt"
    assert main(["advise", "--pass-rates", str(f), "--budget", "64", "--keep", str(keep)]) == 0
    lines = keep.read_text(encoding="utf-8").splitlines()
    assert lines[0] == adv.KEEP_HEADER and lines[1:] == ["q2", "q4", "q5"]
    assert "wrote the ids of 3 prompts" in capsys.readouterr().out
    # its own file may be replaced
    assert main(["advise", "--pass-rates", str(f), "--budget", "64", "--keep", str(keep)]) == 0


def test_keep_reads_the_committed_census_index(tmp_path):
    d = adv.load_pass_rates(CENSUS)
    n = adv.write_keep(d, tmp_path / "keep.txt")
    doc = json.loads(CENSUS.read_text(encoding="utf-8"))
    want = [str(r["index"]) for r in doc["records"] if 0 < r["successes"] < r["samples"]]
    assert n == len(want)
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8").splitlines()[1:] == want


@pytest.mark.parametrize("case", ["foreign file", "no ids", "a log", "folder"])
def test_keep_refuses_without_losing_anything(tmp_path, capsys, case):
    f = _write(tmp_path, "census.csv", CENSUS_CSV)
    target = tmp_path / "keep.txt"
    extra = []
    if case == "foreign file":
        target.write_text("my notes\n", encoding="utf-8")
    elif case == "no ids":
        f = _write(tmp_path, "c.csv", "successes,samples\n1,8\n")
    elif case == "a log":
        f = _state(tmp_path)
        extra = ["--num-generations", "8"]
    else:
        target = tmp_path
    code = main(["advise", "--pass-rates", str(f), "--keep", str(target), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--keep" in err[0], err
    if case == "foreign file":
        assert target.read_text(encoding="utf-8") == "my notes\n"
        assert "refusing to overwrite" in err[0]
    elif case != "folder":
        assert not target.exists()
