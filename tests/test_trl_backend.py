"""grpolab.grpo.trl_backend: TRL's GRPOTrainer and grpolab's loop agree on advantages and loss.

A tiny GPT-2 built from a config (no download) stands in for the policy. TRL generates
one batch and scores it with our reward function; then

- TRL's advantages must equal :func:`grpolab.advantages.group_advantages` of the rewards;
- TRL's loss (``GRPOTrainer.compute_loss``) and its gradient must equal
  :func:`grpolab.grpo.loss.grpo_loss` on the same tokens, for every ``loss_type``,
  ``scale_rewards`` and with or without the KL term.

Then a 2-G × 3-step sweep runs end to end through ``train.run(..., backend="trl")``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from grpolab.advantages import group_advantages  # noqa: E402
from grpolab.grpo.trl_backend import _complete_groups, completion_text  # noqa: E402
from grpolab.tasks.arithmetic import ArithmeticTask, Task  # noqa: E402

G, B = 4, 3


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread: on a busy 2-core machine two threads spin-wait for most of a run."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class ParityTask(Task):
    """Arithmetic prompts (all the same length, so no left padding) with a reward that a
    random policy earns about half the time; ``continuous`` gives a 7-level reward."""

    name = "parity"

    def __init__(self, continuous: bool = False):
        base = ArithmeticTask(digits=(2,), n_train=8, n_eval=4, seed=0)
        self.train_prompts, self.eval_prompts = base.train_prompts, base.eval_prompts
        self.continuous = continuous

    def reward(self, prompt, completion):
        code = sum(map(ord, completion))
        return (code % 7) / 6 if self.continuous else float(code % 2)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    """A freshly initialised tiny GPT-2 saved as safetensors (TRL reloads its reference
    model from the policy's path when beta != 0)."""
    from grpolab.models.tiny import build_tiny_model

    model, tok = build_tiny_model(seed=0)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tiny_path):
    from grpolab.models.tiny import load_causal_lm

    return load_causal_lm(str(tiny_path), device="cpu")


def _batch(tiny, tmp_path, *, loss_type="dapo", beta=0.0, scale_rewards="group",
           continuous=False, seed=0):
    """TRL's trainer, the batch it generated and scored, and the rewards our function gave."""
    from grpolab.grpo.config import GRPOConfig
    from grpolab.grpo.trl_backend import build_trainer

    model, tok = tiny
    model = __import__("copy").deepcopy(model)
    task = ParityTask(continuous)
    cfg = GRPOConfig(task="parity", num_generations=G, prompts_per_step=B, steps=1,
                     max_completion_length=5, loss_type=loss_type, beta=beta,
                     scale_rewards=scale_rewards, temperature=1.0, seed=seed)
    trainer, recorder = build_trainer(cfg, model, tok, task, task.train_prompts,
                                      out_dir=str(tmp_path), device=torch.device("cpu"),
                                      progress=False)
    if not hasattr(trainer, "current_gradient_accumulation_steps"):
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop otherwise
    rows = [trainer.train_dataset[i] for i in range(B) for _ in range(G)]  # prompt-major
    trainer.model.train()
    torch.manual_seed(seed)
    out = trainer._generate_and_score_completions(rows)
    idx, rewards = recorder.pop()
    assert idx.tolist() == [i for i in range(B) for _ in range(G)]
    return trainer, out, rewards, cfg


@pytest.mark.slow
@pytest.mark.parametrize("scale_rewards", ["group", "batch", "none"])
@pytest.mark.parametrize("continuous", [False, True])
def test_advantages_match(tiny, tmp_path, scale_rewards, continuous):
    trainer, out, rewards, _ = _batch(tiny, tmp_path, scale_rewards=scale_rewards,
                                      continuous=continuous)
    assert len(set(rewards.tolist())) > 1, "the test batch must have differing rewards"
    ours = group_advantages(torch.tensor(rewards, dtype=torch.float32), G, scale=scale_rewards)
    torch.testing.assert_close(out["advantages"].float(), ours, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("loss_type,beta", [("dapo", 0.0), ("grpo", 0.0), ("bnpo", 0.0),
                                            ("dr_grpo", 0.0), ("dapo", 0.04), ("grpo", 0.04)])
def test_loss_and_gradient_match(tiny, tmp_path, loss_type, beta):
    from grpolab.grpo.loss import grpo_loss, per_token_logprobs

    trainer, out, rewards, cfg = _batch(tiny, tmp_path, loss_type=loss_type, beta=beta)
    model = trainer.model
    assert out["advantages"].abs().sum() > 0, "the test batch must carry a gradient"
    if beta:
        # make the policy differ from the reference, so the KL term is not zero
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.01 * torch.randn_like(p))
        out = dict(out)
        with torch.no_grad():
            out["ref_per_token_logps"], _ = per_token_logprobs(
                trainer.ref_model, out["prompt_ids"], out["prompt_mask"], out["completion_ids"],
                out["completion_mask"], cfg.temperature)

    model.zero_grad()
    loss_trl = trainer.compute_loss(model, out)
    loss_trl.backward()
    grad_trl = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    model.zero_grad()
    logprobs, _ = per_token_logprobs(model, out["prompt_ids"], out["prompt_mask"],
                                     out["completion_ids"], out["completion_mask"],
                                     cfg.temperature)
    loss_ours, metrics = grpo_loss(
        logprobs, logprobs.detach(), out.get("ref_per_token_logps"), out["advantages"],
        out["completion_mask"], beta=beta, loss_type=loss_type,
        max_completion_length=cfg.max_completion_length,
        num_items_in_batch=out["num_items_in_batch"])
    loss_ours.backward()
    grad_ours = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    torch.testing.assert_close(loss_trl.detach(), loss_ours.detach(), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(grad_trl, grad_ours, rtol=1e-4, atol=1e-7)
    assert grad_ours.norm() > 0
    if beta:
        assert metrics["kl"] > 0


def test_completion_text_and_groups():
    assert completion_text("42") == "42"
    assert completion_text([{"role": "assistant", "content": "The answer is 7"}]) == \
        "The answer is 7"
    with pytest.raises(ValueError, match="completion"):
        completion_text(42)
    idx = np.array([3, 3, 5, 5, 5, 5, 7, 7])
    rew = np.arange(8.0)
    gi, groups = _complete_groups(idx, rew, 2)
    assert gi.tolist() == [3, 5, 5, 7]
    assert groups.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    gi, groups = _complete_groups(np.array([1, 2, 2, 2, 2]), np.zeros(5), 4)  # partial first
    assert gi.tolist() == [2]


def test_batch_must_divide_across_processes():
    from grpolab.grpo.config import GRPOConfig
    from grpolab.grpo.trl_backend import trl_args

    cfg = GRPOConfig(num_generations=3, prompts_per_step=1)
    with pytest.raises(ValueError, match="number of processes"):
        trl_args(cfg, "/tmp/unused", device=torch.device("cpu"), world_size=2)


@pytest.mark.slow
def test_tiny_trl_sweep_runs(tiny_path, tmp_path):
    """Two G values x 3 steps through train.run(backend="trl"): logs, summaries, metrics."""
    from grpolab.grpo.loop import GRPOConfig, run

    path = tiny_path
    summaries = []
    for g in (2, 4):
        cfg = GRPOConfig(task="arithmetic",
                         task_kwargs={"digits": [1], "n_train": 16, "n_eval": 4, "seed": 0},
                         model=str(path), backend="trl", num_generations=g,
                         prompts_per_step=8 // g, steps=3, max_completion_length=3,
                         eval_every=3, eval_samples=2, census_samples=4, device="cpu")
        s = run(cfg, tmp_path / f"G{g}", progress=False)
        summaries.append(s)
        lines = [json.loads(x) for x in open(tmp_path / f"G{g}" / "log.jsonl")]
        assert [r["step"] for r in lines] == [0, 1, 2, 3]
        for r in lines[1:]:
            assert 0.0 <= r["zero_gradient_observed"] <= 1.0
            assert 0.0 <= r["zero_gradient_predicted"] <= 1.0
            assert r["completions"] == r["step"] * 8
            assert 0 < r["tokens"] <= r["completions"] * cfg.max_completion_length
            # our observed fraction and TRL's frac_reward_zero_std count the same groups
            assert r["zero_gradient_observed"] == pytest.approx(r["trl_frac_reward_zero_std"])
            assert np.isfinite(r["loss"]) and np.isfinite(r["grad_norm"])
        assert "eval_greedy_accuracy" in lines[-1]
        assert os.path.isfile(tmp_path / f"G{g}" / "summary.json")
    assert [s["G"] for s in summaries] == [2, 4]
    assert all(s["backend"] == "trl" and s["completions"] == 24 for s in summaries)


@pytest.mark.slow
def test_trl_lora_option_runs(tiny_path, tmp_path):
    """``lora_r > 0`` trains a peft LoRA adapter through TRL (the option the chapter names)."""
    from grpolab.grpo.config import GRPOConfig
    from grpolab.grpo.trl_backend import run

    cfg = GRPOConfig(task="arithmetic",
                     task_kwargs={"digits": [1], "n_train": 16, "n_eval": 4, "seed": 0},
                     model=str(tiny_path), backend="trl", num_generations=2, prompts_per_step=2,
                     steps=2, max_completion_length=3, eval_every=2, eval_samples=1,
                     census_samples=2, device="cpu")
    s = run(cfg, tmp_path / "lora", progress=False, lora_r=4)
    assert s["lora_r"] == 4 and s["completions"] == 8
    assert os.path.isfile(tmp_path / "lora" / "summary.json")
