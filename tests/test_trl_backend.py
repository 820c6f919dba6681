"""grpolab.grpo.trl_backend: TRL's GRPOTrainer and grpolab's loop agree on advantages, loss,
gradient and the logged schema.

The embedded tiny model (Llama-style, rotary positions) built from a config (no download)
stands in for the policy. TRL generates one batch from prompts of 1-, 2- and 3-digit sums
(so TRL left-pads them to mixed lengths), with the EOS logit raised so that some
completions stop before ``max_completion_length``, and scores it with our reward function.
Then

- TRL's advantages must equal :func:`grpolab.advantages.group_advantages` of the rewards;
- TRL's loss (``GRPOTrainer.compute_loss``) and its gradient must equal
  :func:`grpolab.grpo.loss.grpo_loss` on the same tokens, for every ``loss_type``, with and
  without the KL term, with *off-policy* old log-probs that put token ratios in every
  region of the clip (ε = 0.2, ε_high = 0.28), on a micro-batch of the generation batch
  (so ``num_items_in_batch`` is not this batch's token count).

The parity test is built to fail under each of these mutations of grpolab/grpo/loss.py
(each was applied by hand and seen to fail it):

- ``min`` → ``max`` in the clipped surrogate (ratios outside the clip range on both sides);
- the upper clip at 1 + ε instead of 1 + ε_high (ratios in (1.2, 1.28] with A > 0);
- no clipping at all (ratios < 0.8 with A < 0 and > 1.28 with A > 0);
- ``dapo`` ignoring ``num_items_in_batch`` (the micro-batch has fewer tokens than it).

Then both backends run a few steps end to end and their log rows must use the same names.
"""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from grpolab.advantages import group_advantages  # noqa: E402
from grpolab.grpo.trl_backend import _complete_groups, completion_text  # noqa: E402
from grpolab.tasks.arithmetic import ArithmeticTask  # noqa
from grpolab.tasks.base import Task  # noqa: E402

G, B = 4, 6
MAX_LEN = 5
EPSILON, EPSILON_HIGH = 0.2, 0.28
#: importance ratios given to the tokens: below 1 − ε, inside the range (two), between
#: 1 + ε and 1 + ε_high, above 1 + ε_high.
RATIOS = (0.7, 0.9, 1.1, 1.24, 1.5)
EOS_BIAS = 3.0  # added to the EOS logit: some completions end early, some run to MAX_LEN


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread: on a busy 2-core machine two threads spin-wait for most of a run."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class ParityTask(Task):
    """1-, 2- and 3-digit sums in turn (prompts of 4, 6 and 8 characters: TRL left-pads the
    shorter ones) with a reward that a random policy earns about half the time;
    ``continuous`` gives a 7-level reward."""

    name = "parity"

    def __init__(self, continuous: bool = False):
        base = ArithmeticTask(digits=(1, 2, 3), n_train=30, n_eval=6, seed=0)
        by_digits = {d: [p for p in base.train_prompts if p.difficulty == d] for d in (1, 2, 3)}
        self.train_prompts = [by_digits[d][i] for i in range(B // 3) for d in (1, 2, 3)]
        self.eval_prompts = base.eval_prompts
        self.continuous = continuous

    def reward(self, prompt, completion):
        code = sum(map(ord, completion))
        return (code % 7) / 6 if self.continuous else float(code % 2)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    """A freshly initialised tiny model saved as safetensors (TRL reloads its reference
    model from the policy's path when beta != 0)."""
    from grpolab.models.tiny_llama import build_tiny_model

    model, tok = build_tiny_model(seed=0)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tiny_path):
    from grpolab.models.tiny_llama import load_causal_lm

    return load_causal_lm(str(tiny_path), device="cpu")


def _raise_eos(trainer, tok):
    """Make TRL's sampler add EOS_BIAS to the EOS logit (``sequence_bias``), so completions
    have mixed lengths. Only the sampling changes; both log-prob passes see the model as is.
    (A forward hook on ``lm_head`` would not do: TRL's log-prob pass uses the model's fused
    head, which skips the module.)"""
    trainer.generation_config.sequence_bias = {(tok.eos_token_id,): EOS_BIAS}


def _batch(tiny, tmp_path, *, loss_type="dapo", beta=0.0, scale_rewards="group",
           continuous=False, seed=0):
    """TRL's trainer, the batch it generated and scored, and the rewards our function gave."""
    from grpolab.grpo.config import GRPOConfig
    from grpolab.grpo.trl_backend import build_trainer

    model, tok = tiny
    model = copy.deepcopy(model)
    task = ParityTask(continuous)
    cfg = GRPOConfig(task="parity", num_generations=G, prompts_per_step=B, steps=1,
                     max_completion_length=MAX_LEN, loss_type=loss_type, beta=beta,
                     epsilon=EPSILON, epsilon_high=EPSILON_HIGH,
                     scale_rewards=scale_rewards, temperature=1.0, seed=seed)
    trainer, recorder = build_trainer(cfg, model, tok, task, task.train_prompts,
                                      out_dir=str(tmp_path), device=torch.device("cpu"),
                                      progress=False)
    _raise_eos(trainer, tok)
    # What we compare against (tests below): TRL's default would multiply the k3 KL by the
    # importance ratio; trl_args switches that off (grpolab's loss has no such factor).
    assert trainer.args.use_bias_correction_kl is False
    assert trainer.args.gradient_checkpointing is False
    if not hasattr(trainer, "current_gradient_accumulation_steps"):
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop otherwise
    rows = [trainer.train_dataset[i] for i in range(B) for _ in range(G)]  # prompt-major
    trainer.model.train()
    torch.manual_seed(seed)
    out = trainer._generate_and_score_completions(rows)
    idx, rewards = recorder.pop()
    assert idx.tolist() == [i for i in range(B) for _ in range(G)]
    return trainer, out, rewards, cfg


def _micro_batch(out: dict, rows: int) -> dict:
    """The first ``rows`` rows of a generation batch, as one gradient-accumulation step of
    it would see them: every per-row tensor sliced, ``num_items_in_batch`` kept whole."""
    n = out["completion_ids"].shape[0]
    return {k: (v[:rows] if isinstance(v, torch.Tensor) and v.ndim and v.shape[0] == n else v)
            for k, v in out.items()}


def _off_policy_old(logprobs: torch.Tensor) -> torch.Tensor:
    """Old log-probs such that the ratio π_θ/π_old of token (i, t) is RATIOS[(2i + t) % 5]."""
    N, T = logprobs.shape
    k = (2 * torch.arange(N)[:, None] + torch.arange(T)[None, :]) % len(RATIOS)
    return logprobs.detach() - torch.log(torch.tensor(RATIOS, dtype=logprobs.dtype)[k])


@pytest.mark.slow
@pytest.mark.parametrize("scale_rewards", ["group", "batch", "none"])
@pytest.mark.parametrize("continuous", [False, True])
def test_advantages_match(tiny, tmp_path, scale_rewards, continuous):
    trainer, out, rewards, _ = _batch(tiny, tmp_path, scale_rewards=scale_rewards,
                                      continuous=continuous)
    assert len(set(rewards.tolist())) > 1, "the test batch must have differing rewards"
    ours = group_advantages(torch.tensor(rewards, dtype=torch.float32), G, scale=scale_rewards)
    torch.testing.assert_close(out["advantages"].float(), ours, rtol=1e-5, atol=1e-6)


def _both_losses(trainer, batch, old, beta, loss_type, cfg):
    """TRL's and grpolab's loss and flat gradient on ``batch`` with old log-probs ``old``."""
    from grpolab.grpo.loss import grpo_loss, per_token_logprobs

    model = trainer.model
    model.zero_grad()
    loss_trl = trainer.compute_loss(model, {**batch, "old_per_token_logps": old})
    loss_trl.backward()
    grad_trl = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    model.zero_grad()
    logprobs, _ = per_token_logprobs(model, batch["prompt_ids"], batch["prompt_mask"],
                                     batch["completion_ids"], batch["completion_mask"],
                                     cfg.temperature)
    loss_ours, metrics = grpo_loss(
        logprobs, old, batch.get("ref_per_token_logps"), batch["advantages"],
        batch["completion_mask"], epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high,
        beta=beta, loss_type=loss_type, max_completion_length=cfg.max_completion_length,
        num_items_in_batch=batch["num_items_in_batch"])
    loss_ours.backward()
    grad_ours = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return loss_trl.detach(), grad_trl, loss_ours.detach(), grad_ours, metrics


def _prepare(tiny, tmp_path, loss_type, beta):
    """TRL's batch, its first half as the micro-batch, and the reference log-probs."""
    from grpolab.grpo.loss import per_token_logprobs

    trainer, out, rewards, cfg = _batch(tiny, tmp_path, loss_type=loss_type, beta=beta)
    model = trainer.model
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
    return trainer, out, _micro_batch(out, B * G // 2), cfg


@pytest.mark.slow
@pytest.mark.parametrize("loss_type,beta", [("dapo", 0.0), ("grpo", 0.0), ("bnpo", 0.0),
                                            ("dr_grpo", 0.0), ("dapo", 0.04), ("grpo", 0.04)])
def test_loss_and_gradient_match_off_policy_on_a_padded_mixed_batch(tiny, tmp_path, loss_type,
                                                                    beta):
    from grpolab.grpo.loss import per_token_logprobs

    trainer, out, batch, cfg = _prepare(tiny, tmp_path, loss_type, beta)
    model = trainer.model

    # --- the batch is what the test claims it is
    prompt_lengths = batch["prompt_mask"].sum(1)
    assert len(set(prompt_lengths.tolist())) == 3, "prompts of three lengths (1-3 digits)"
    assert (batch["prompt_mask"][:, 0] == 0).any(), "some prompts are left-padded"
    lengths = batch["completion_mask"].sum(1)
    assert lengths.min() < MAX_LEN and lengths.max() == MAX_LEN, \
        "some completions end before max_completion_length, some reach it"
    assert float(out["num_items_in_batch"]) > float(batch["completion_mask"].sum()), \
        "the micro-batch holds fewer tokens than the generation batch"
    assert batch["advantages"].abs().sum() > 0, "the test batch must carry a gradient"

    # --- TRL's log-prob pass (no position ids) computes ours (positions from the mask)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    with torch.no_grad():
        logps_trl = trainer._get_per_token_logps_and_entropies(
            model, ids, mask, batch["completion_ids"].shape[1])[0]
        logps_ours, _ = per_token_logprobs(model, batch["prompt_ids"], batch["prompt_mask"],
                                           batch["completion_ids"], batch["completion_mask"],
                                           cfg.temperature)
    real = batch["completion_mask"].bool()
    torch.testing.assert_close(logps_trl[real], logps_ours[real], rtol=1e-5, atol=1e-5)

    # --- off policy: every region of the clip is populated, for both signs of A
    old = _off_policy_old(logps_ours)
    ratio = torch.exp(logps_ours - old)
    adv = batch["advantages"][:, None].expand_as(ratio)
    regions = {
        "A>0, ratio > 1+eps_high (clipped; catches no-clip)": (adv > 0) & (ratio > 1.28),
        "A>0, 1+eps < ratio <= 1+eps_high (catches eps for eps_high)":
            (adv > 0) & (ratio > 1.2) & (ratio <= 1.28),
        "A<0, ratio < 1-eps (clipped; catches no-clip)": (adv < 0) & (ratio < 0.8),
        "A<0, ratio > 1+eps_high (unclipped under min; catches min->max)":
            (adv < 0) & (ratio > 1.28),
    }
    for name, where in regions.items():
        assert (where & real).any(), f"no token in region {name}"

    loss_trl, grad_trl, loss_ours, grad_ours, metrics = _both_losses(
        trainer, batch, old, beta, loss_type, cfg)
    torch.testing.assert_close(loss_trl, loss_ours, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(grad_trl, grad_ours, rtol=1e-4, atol=1e-7)
    assert grad_ours.norm() > 0
    assert metrics["clip_ratio_low"] > 0 and metrics["clip_ratio_high"] > 0
    if beta:
        assert metrics["kl"] > 0


@pytest.mark.slow
def test_trl_default_bias_corrected_kl_is_another_gradient(tiny, tmp_path):
    """Why trl_args sets ``use_bias_correction_kl=False``: TRL's default (True) multiplies the
    k3 KL by the differentiable ratio. On policy the loss is the same, the gradient is not."""
    trainer, _, batch, cfg = _prepare(tiny, tmp_path, "dapo", 0.04)
    from grpolab.grpo.loss import per_token_logprobs

    with torch.no_grad():
        on_policy, _ = per_token_logprobs(trainer.model, batch["prompt_ids"], batch["prompt_mask"],
                                          batch["completion_ids"], batch["completion_mask"])
    trainer.args.use_bias_correction_kl = True  # TRL's default
    loss_trl, grad_trl, loss_ours, grad_ours, _ = _both_losses(trainer, batch, on_policy, 0.04,
                                                               "dapo", cfg)
    torch.testing.assert_close(loss_trl, loss_ours, rtol=1e-5, atol=1e-7)
    assert (grad_trl - grad_ours).norm() > 1e-3 * grad_ours.norm()


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
    """Two G values x 3 steps through backends.train (backend="trl"): logs, summaries,
    metrics."""
    from grpolab.grpo.backends import train as run
    from grpolab.grpo.config import GRPOConfig

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
            assert 0.0 <= r["zero_variance_observed"] <= 1.0
            assert 0.0 <= r["zero_variance_predicted"] <= 1.0
            assert r["completions"] == r["step"] * 8
            assert 0 < r["tokens"] <= r["completions"] * cfg.max_completion_length
            # our observed fraction and TRL's frac_reward_zero_std count the same groups
            assert r["zero_variance_observed"] == pytest.approx(r["trl_frac_reward_zero_std"])
            assert np.isfinite(r["loss"]) and np.isfinite(r["grad_norm"])
        assert "eval_greedy_accuracy" in lines[-1]
        assert os.path.isfile(tmp_path / f"G{g}" / "summary.json")
    assert [s["G"] for s in summaries] == [2, 4]
    assert all(s["backend"] == "trl" and s["completions"] == 24 for s in summaries)


@pytest.mark.slow
def test_trl_lora_option_runs(tiny_path, tmp_path):
    """``lora_r > 0`` trains a peft LoRA adapter through TRL (the option the chapter names)."""
    from grpolab.grpo.config import GRPOConfig
    from grpolab.grpo.trl_backend import train as run

    cfg = GRPOConfig(task="arithmetic",
                     task_kwargs={"digits": [1], "n_train": 16, "n_eval": 4, "seed": 0},
                     model=str(tiny_path), backend="trl", num_generations=2, prompts_per_step=2,
                     steps=2, max_completion_length=3, eval_every=2, eval_samples=1,
                     census_samples=2, device="cpu")
    s = run(cfg, tmp_path / "lora", progress=False, lora_r=4)
    assert s["lora_r"] == 4 and s["completions"] == 8
    assert os.path.isfile(tmp_path / "lora" / "summary.json")


@pytest.mark.slow
def test_both_backends_log_the_same_schema_and_census_window(tiny_path, tmp_path):
    """A row logged by either backend reads the same: TRL's rows use only the loop's names
    (:data:`LOGGED_KEYS`) for shared quantities, TRL-only extras start ``trl_``, and each
    step row carries the same keys under both backends.

    The census is twice the window wide: its first ``width`` columns (the window both
    backends must use) pass half the time, the rest always. A window taken from the last
    columns (TRL's old ``[:, -width:]``) predicts a zero-variance fraction of 1 at step 1,
    the right one 0 (k = 2 of n = 4 with G = 4)."""
    from grpolab.grpo.backends import train as run
    from grpolab.grpo.config import GRPOConfig
    from grpolab.grpo.trl_backend import LOGGED_KEYS, TRL_LOG_NAMES

    assert set(TRL_LOG_NAMES.values()) <= set(LOGGED_KEYS) | {
        v for v in TRL_LOG_NAMES.values() if v.startswith("trl_")}
    n_train, width = 16, 4
    census = np.zeros((n_train, 2 * width), bool)
    census[:, 0:width:2] = True
    census[:, width:] = True
    rows = {}
    for backend in ("grpolab", "trl"):
        cfg = GRPOConfig(task="arithmetic",
                         task_kwargs={"digits": [1], "n_train": n_train, "n_eval": 4, "seed": 0},
                         model=str(tiny_path), backend=backend, num_generations=4,
                         prompts_per_step=2, steps=2, max_completion_length=3,
                         eval_samples=1, census_samples=width, device="cpu")
        run(cfg, tmp_path / backend, census=census, progress=False)
        rows[backend] = [json.loads(x) for x in open(tmp_path / backend / "log.jsonl")]
    for backend, log in rows.items():
        assert [r["step"] for r in log] == [0, 1, 2]
        for r in log:
            unknown = {k for k in r if k not in LOGGED_KEYS and not k.startswith("trl_")}
            assert not unknown, f"{backend} logs names outside the shared vocabulary: {unknown}"
        assert log[1]["zero_variance_predicted"] == 0.0, f"{backend}: census window"
    assert not any(k.startswith("trl_") for r in rows["grpolab"] for k in r)
    for ours, theirs in zip(rows["grpolab"], rows["trl"], strict=True):
        assert set(ours) == {k for k in theirs if not k.startswith("trl_")}, ours["step"]


@pytest.mark.slow
def test_both_backends_measure_the_same_census_with_census_seed(tiny_path, tmp_path,
                                                                monkeypatch):
    """With ``census_seed`` set, both backends measure the starting policy's census with that
    seed (not the run's 0), on the same prompts: the same matrix, element for element. (TRL's
    backend once seeded it with ``config.seed``: the seed check fails on that code.)"""
    import grpolab.grpo.measure as measure
    from grpolab.grpo.backends import train
    from grpolab.grpo.config import GRPOConfig

    real, made = measure.pass_rate_census, {}

    def recording(*args, **kwargs):
        census = real(*args, **kwargs)
        made.setdefault(backend, []).append((kwargs["seed"], census))
        return census

    monkeypatch.setattr(measure, "pass_rate_census", recording)
    for backend in ("grpolab", "trl"):
        cfg = GRPOConfig(task="arithmetic",
                         task_kwargs={"digits": [1], "n_train": 16, "n_eval": 4, "seed": 0},
                         model=str(tiny_path), backend=backend, num_generations=2,
                         prompts_per_step=2, steps=1, max_completion_length=3, eval_samples=1,
                         census_samples=8, census_seed=4321, seed=0, device="cpu")
        train(cfg, tmp_path / backend, progress=False)
    (seed_a, a), = made["grpolab"]
    (seed_b, b), = made["trl"]
    assert seed_a == seed_b == 4321
    assert a.shape == b.shape == (16, 8) and np.array_equal(a, b)
