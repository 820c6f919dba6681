"""Tests of the remedy labs (grpolab.labs.remedies: sources, items, report; the reward
wrappers of grpolab.tasks.rewards): configs, rollout merging, a seconds-long remedy run per
batch source, resume, the shared pool, aggregation and the CLI's errors. They train from the
session's shared 30-step warm start (``tiny_cache`` in conftest.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from conftest import TINY_TASK, tiny_warm_start
from grpolab.cli.main import main
from grpolab.grpo.rollout import merge_rollouts
from grpolab.labs import runner as runner_module
from grpolab.labs.remedies import items as remedy_items
from grpolab.labs.remedies import report as remedy_report
from grpolab.labs.remedies.items import ITEMS
from grpolab.labs.remedies.remedy import SOURCE_NAMES, lab_config
from grpolab.labs.remedies.sources import SOURCES, remedy_task, train_remedy
from grpolab.tasks.arithmetic import ArithmeticTask
from grpolab.tasks.base import Prompt
from grpolab.tasks.rewards import LengthBiasedReward

SMALL_TASK = TINY_TASK
SMALL = dict(task_kwargs=dict(SMALL_TASK), train_difficulties=[1, 2],
             warmstart=tiny_warm_start(),
             num_generations=4, prompts_per_step=4, completion_budget=64, eval_every=32,
             max_eval_prompts=12, eval_samples=1, census_samples=4, max_train_prompts=40,
             learning_rate=1e-4)


def small_config(**kw):
    """(GRPOConfig, Remedy) of a seconds-long remedy run."""
    return lab_config(**{**SMALL, **kw})


@pytest.fixture(scope="module")
def cache(tiny_cache):
    return tiny_cache


def test_every_source_name_is_registered():
    assert set(SOURCES) == set(SOURCE_NAMES) and len(SOURCES) == len(SOURCE_NAMES)


def test_every_item_config_validates():
    for item in ITEMS.values():
        for arm in item.arms:
            cfg, _ = item.config(arm, 0)
            assert cfg.completion_budget >= 64 * 10
            # the allocation lab is declared at 256 completions a step (its declared.json)
            per_step = 256 if item.name == "allocation" else 64
            assert cfg.num_generations * cfg.prompts_per_step == per_step
        assert len(item.seeds) >= 3


@pytest.mark.parametrize("field,value,match", [
    ("source", "magic", "source"), ("num_generations", 1, "num.generations"),
    ("band_low", 1.5, "band.low"), ("advantage_ddof", 2, "advantage.ddof"),
    ("loss_type", "ppo", "loss.type"), ("completion_budget", 0, "completion.budget"),
])
def test_bad_configs_name_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        lab_config(**{field: value})


def test_length_biased_reward_prefers_long_or_short():
    task = ArithmeticTask(**SMALL_TASK)
    p = Prompt("1+1=", "2", 1)
    long = LengthBiasedReward(task, 0.5, "long", max_len=6)
    short = LengthBiasedReward(task, 0.5, "short", max_len=6)
    assert long.reward(p, "2") == pytest.approx(1 + 0.5 / 6)
    assert long.reward(p, "222222") == pytest.approx(0.5)
    assert long.reward(p, "222222") > long.reward(p, "22")
    assert short.reward(p, "2") > short.reward(p, "22")
    assert long.correct(p, "2") and not long.correct(p, "22")


def test_every_reward_variant_keeps_the_same_prompts():
    base = remedy_task(*small_config())
    for reward in ("partial", "noisy", "length_long", "length_short"):
        t = remedy_task(*small_config(reward=reward, noise_q=0.2))
        assert t.train_prompts == base.train_prompts and t.eval_prompts == base.eval_prompts
    partial = remedy_task(*small_config(reward="partial"))
    p = base.train_prompts[0]
    assert partial.reward(p, p.answer) == 1.0 and partial.correct(p, p.answer)
    assert 0 <= partial.reward(p, "9" + p.answer[1:]) < 1


def test_merge_rollouts_repads_and_keeps_rows(cache):
    from grpolab.grpo.rollout import sample
    from grpolab.grpo.setup import load_policy

    cfg, _ = small_config()
    model, tok, _ = load_policy(cfg, cache, "cpu")
    gen = torch.Generator().manual_seed(0)
    a = sample(model, tok, ["1+2=", "34+56="], 2, max_new_tokens=4, generator=gen)
    b = sample(model, tok, ["7+8="], 3, max_new_tokens=6, generator=gen)
    m = merge_rollouts([(a, [2, 3]), (b, [0, 1, 2])], tok.pad_token_id)
    assert m.prompt_ids.shape[0] == 5 and m.num_generations == 0
    assert m.texts == [a.texts[2], a.texts[3], *b.texts]
    # the tokens and masks survive re-padding (prompt left-padded, completion right-padded)
    n_a = int(a.completion_mask[2].sum())
    assert torch.equal(m.completion_ids[0, :n_a], a.completion_ids[2, :n_a])
    assert int(m.completion_mask[0].sum()) == n_a
    assert int(m.prompt_mask[2].sum()) == int(b.prompt_mask[0].sum())
    assert torch.equal(m.prompt_ids[2][m.prompt_mask[2].bool()],
                       b.prompt_ids[0][b.prompt_mask[0].bool()])


@pytest.mark.slow
@pytest.mark.parametrize("remedy", sorted(SOURCES))
def test_remedy_runs_spend_the_budget_and_log(tmp_path, cache, remedy):
    torch.set_num_threads(1)
    cfg, rem = small_config(source=remedy, max_batches=2, curriculum_min_steps=1,
                            completion_budget=48)
    s = train_remedy(cfg, rem, tmp_path, cache_dir=cache, progress=False)
    assert s["completions"] >= cfg.completion_budget
    assert s["grpolab_version"] and s["git_commit"] and s["device"].startswith("cpu")
    assert s["batches"] == remedy and s["remedy_config"]["source"] == remedy
    assert s["config"]["completion_budget"] == 48  # the one GRPOConfig, recorded whole
    assert 0 <= s["final_accuracy"] <= 1
    if s["updates"]:
        assert s["final_kl_to_warm_start"] >= 0  # measured even when beta = 0
    recs = [json.loads(x) for x in open(tmp_path / "log.jsonl")]
    assert recs[-1]["completions"] == s["completions"]
    if remedy == "dynamic_sampling":
        # every used group is informative; cost per step is a multiple of one batch
        for r in recs[1:]:
            if r.get("groups"):
                assert r["informative_fraction"] == 1.0
                assert r["groups"] <= cfg.prompts_per_step
            assert r["completions_step"] % (cfg.num_generations * cfg.prompts_per_step) == 0
            assert r["hit_cap"] == (r.get("groups", 0) < cfg.prompts_per_step)


def test_same_seed_same_numbers(tmp_path, cache):
    torch.set_num_threads(1)
    cfg, rem = small_config(source="band", completion_budget=32)
    a = train_remedy(cfg, rem, tmp_path / "a", cache_dir=cache, progress=False)
    b = train_remedy(cfg, rem, tmp_path / "b", cache_dir=cache, progress=False)
    keys = ("final_accuracy", "informative_groups_used", "tokens", "completions")
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


def test_run_item_resumes_shares_the_pool_and_aggregates(tmp_path, cache, monkeypatch):
    torch.set_num_threads(1)
    item = remedy_items.LabItem("toy", "toy item", arms={"plain": {}, "same-again": {}},
                                base=dict(SMALL, completion_budget=32), seeds=[0, 1, 2])
    monkeypatch.setitem(ITEMS, "toy", item)
    calls = []
    real = runner_module._Job.train
    # every run the one runner trains (serially, in this process) goes through _Job.train
    monkeypatch.setattr(runner_module._Job, "train",
                        lambda job, progress: calls.append(1) or real(job, progress))
    out = tmp_path / "toy"
    res = remedy_items.run_item("toy", out, cache_dir=cache, progress=False, log=lambda m: None)
    assert len(calls) == 3  # "same-again" has the same configs: copied from the pool
    assert res["results"]["plain"]["final_accuracy"]["n"] == 3
    assert (res["results"]["plain"]["final_accuracy"]["values"]
            == res["results"]["same-again"]["final_accuracy"]["values"])
    assert res["grpolab_version"] and res["git_commit"] and res["device"]
    remedy_items.run_item("toy", out, cache_dir=cache, progress=False, log=lambda m: None)
    assert len(calls) == 3  # resumed: nothing retrained
    os.remove(out / "runs" / "plain" / "seed1" / "summary.json")  # a killed run
    remedy_items.run_item("toy", out, cache_dir=cache, progress=False, log=lambda m: None)
    assert len(calls) == 3  # ... is restored from the pool, not retrained
    paths = remedy_report.plot_item(out)
    assert any(p.endswith(".svg") for p in paths) and all(os.path.getsize(p) > 0 for p in paths)
    # the command resumes the same runs (nothing retrained), plots and publishes
    monkeypatch.setitem(ITEMS, "prompts-x-g", item)
    pub = tmp_path / "published"
    assert main(["remedies", "--item", "prompts-x-g", "--out", str(out), "--cache", cache,
                 "--publish", str(pub)]) == 0
    assert len(calls) == 3
    assert sorted(os.listdir(pub)) == ["results.json", "results.png", "results.svg"]
    assert json.loads((pub / "results.json").read_text())["results"]["plain"]["final_accuracy"]


def test_cli_lists_items_and_refuses_an_unknown_one(capsys):
    # (the other refusals are rows of tests/test_reliability.py's BAD_INPUT table)
    with pytest.raises(SystemExit) as e:
        main(["remedies", "--item", "nope"])
    assert e.value.code == 2
    assert main(["remedies", "--list"]) == 0
    assert "dynamic-sampling" in capsys.readouterr().out


def test_dynamic_sampling_theory_reads_the_logs(tmp_path):
    d = tmp_path / "runs" / "dynamic" / "seed0"
    d.mkdir(parents=True)
    cfg, rem = lab_config(source="dynamic_sampling")
    (d / "summary.json").write_text(json.dumps({"config": cfg.to_dict(),
                                                "remedy_config": vars(rem)}))
    recs = [{"q_predicted": 0.5, "generation_batches": 2, "completions_step": 128,
             "groups_generated": 16, "informative_generated": 8, "hit_cap": False}] * 4
    (d / "log.jsonl").write_text("\n".join(json.dumps(r) for r in recs))
    out = remedy_report.dynamic_sampling_theory(str(tmp_path), {})
    row = out["dynamic"]["per_seed"][0]
    assert row["completions_per_step_predicted_uncapped"] == pytest.approx(8 * 8 / 0.5)
    assert row["completions_per_step_predicted_batched"] == pytest.approx(
        64 * row["generation_batches_predicted_uncapped"])
    assert row["informative_fraction_observed"] == 0.5
    assert 0 <= row["cap_hit_probability_predicted"] <= 1
    assert np.isfinite(row["generation_batches_predicted_uncapped"])


def test_probes_measure_what_they_say(cache):
    from grpolab.grpo.setup import load_policy

    torch.set_num_threads(1)
    cfg, _ = small_config()
    model, tok, _ = load_policy(cfg, cache, "cpu")
    task = ArithmeticTask(**SMALL_TASK)
    rows = remedy_items._probe_temperature(model, tok, task, task.train_prompts, cfg,
                                           n_prompts=4, n=8)["rows"]
    assert {r["temperature"] for r in rows} == {0.2, 0.7, 1.0, 1.3}
    for r in rows:
        assert 1 <= r["distinct_mean"] <= r["G"]
        assert 0 <= r["zero_variance_observed"] <= 1 and 0 <= r["zero_variance_predicted"] <= 1
        assert r["groups"] == 4 * 8 // r["G"]
    card = remedy_items._probe_card_rule(model, tok, task, task.train_prompts, cfg, steps=3,
                                         window=2)
    assert card["binary"]["doubled"] == 0  # a 0/1 reward can never trigger "double"
    assert card["binary"]["max_variance"] <= 0.25 + 1e-9
    for d in card.values():
        assert all(2 <= t["G"] <= 64 for t in d["trajectory"])


def test_table_html_and_compare():
    res = {"seeds": [0, 1, 2],
           "results": {"a": {"final_sampled_accuracy": {"mean": 0.5, "sd": 0.01, "n": 3,
                                                "values": [0.49, 0.50, 0.51]},
                             "accuracy_gain": {"mean": 0.1, "sd": None, "n": 1}},
                       "b": {"final_sampled_accuracy": {"mean": 0.45, "sd": 0.01, "n": 3,
                                                "values": [0.445, 0.45, 0.455]}},
                       "c": {"final_sampled_accuracy": {"mean": 0.5, "sd": 0.02, "n": 3,
                                                "values": [0.52, 0.48, 0.50]}}}}
    md = remedy_report.arm_table(res, {"final_sampled_accuracy": "acc", "accuracy_gain": "gain"})
    html = remedy_report.table_html(md)
    assert html.count("<tr>") == 4 and "0.500 ± 0.010" in html and "<th>acc</th>" in html
    c = remedy_report.compare(res, "a", "b")  # primary metric; by seed .045 .05 .055
    d = np.array([0.045, 0.05, 0.055])
    half = 4.3027 * d.std(ddof=1) / np.sqrt(3)  # t(0.975, 2 df), not 2 SE
    assert c["difference"] == pytest.approx(0.05) and c["test"] == "paired t"
    assert c["high"] - c["low"] == pytest.approx(2 * half, rel=1e-4)
    fam = remedy_report.compare_family(res, [("a", "b"), ("a", "c")])
    assert fam[0]["p_holm"] == pytest.approx(min(1.0, 2 * min(r["p_value"] for r in fam)))
    assert fam[0]["differs"] and not fam[1]["differs"]
    assert "Holm p" in fam[1]["text"] and "no detectable difference" in fam[1]["text"]


def test_cli_item_names_match_the_items():
    from grpolab.cli.remedies import ITEM_NAMES

    assert list(ITEM_NAMES) == list(ITEMS)
