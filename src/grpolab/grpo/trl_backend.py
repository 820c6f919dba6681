"""``backend="trl"``: the same GRPO run, through TRL's ``GRPOTrainer``.

grpolab's own loop (:mod:`grpolab.grpo.loop`) is written to be read. For many GPUs, vLLM
generation, DeepSpeed or FSDP, use an engine that already has them: TRL. This module maps
a :class:`grpolab.grpo.config.GRPOConfig` onto TRL's ``GRPOConfig`` name for name
(``num_generations = G``, ``beta``, ``epsilon``, ``epsilon_high``, ``loss_type``,
``scale_rewards``, ``num_iterations``, ``temperature``, ``top_p``,
``max_completion_length``), hands TRL our task's reward function, and adds a
``TrainerCallback`` that writes grpolab's per-step log: the observed fraction of
zero-variance groups next to the predicted p^G + (1 − p)^G, reward, grad norm, KL, entropy,
completions, tokens, wall time, and held-out accuracy. The run writes the same
``log.jsonl`` and ``summary.json`` as :func:`grpolab.grpo.loop.train` (through the same
:class:`grpolab.grpo.records.RunLog` and :class:`grpolab.grpo.measure.ZeroVarianceMonitor`),
so sweeps, plots and the book treat both backends alike.

Fields it does not implement are refused, not ignored: ``completion_budget``, ``eval_at``,
and an advantage other than TRL's (``advantage_baseline``, ``advantage_ddof``,
``advantage_eps``); :data:`grpolab.grpo.config.TRL_REFUSED` lists them with what TRL does
instead, and :meth:`~grpolab.grpo.config.GRPOConfig.validate` stops with one line naming the
field and ``--backend grpolab``.

Batch layout: one optimizer step per generation batch of B prompts × G completions
(``per_device_train_batch_size · processes = B·G``, ``gradient_accumulation_steps = 1``,
``steps_per_generation = 1``), as in grpolab's loop.

What agrees, and what does not (tests/test_trl_backend.py checks the first two):

- On the same generated batch, TRL's advantages equal :func:`grpolab.advantages.group_advantages`
  of the rewards, for every ``scale_rewards``.
- On the same batch and the same old log-probs, TRL's ``compute_loss`` and
  :func:`grpolab.grpo.loss.grpo_loss` give the same loss *and* gradient, for every
  ``loss_type``, with the KL term (``use_bias_correction_kl=False``, see :func:`trl_args`),
  off policy with the clip binding, on left-padded prompts of mixed length and completions
  shorter than ``max_completion_length``. This holds for models with rotary positions: the
  embedded tiny model (Llama-style) and SmolLM2. TRL's log-prob pass gives the model no
  ``position_ids``; with rotary positions attention depends only on token distances, so
  that computes what grpolab's pass (positions from the attention mask) computes. A model
  with learned absolute positions (GPT-2) would see left-padded rows at shifted positions
  under TRL, and the gradients would differ.
- The sampled tokens differ (each engine draws from its own random stream), so two runs
  agree in distribution, not number for number.
- The per-step log uses the loop's names for every shared quantity (:data:`LOGGED_KEYS`);
  TRL-only extras are prefixed ``trl_``.

Many GPUs (one process per GPU; B·G must divide by the number of processes)::

    accelerate launch --num_processes 8 -m grpolab lab train --backend trl \\
        --preset gpu-smollm2 --G 16 --seed 0 --out runs/trl-smollm2-G16

    # generation in vLLM, sharing the training GPUs (needs `pip install vllm`):
    accelerate launch --num_processes 8 -m grpolab lab train --backend trl \\
        --preset gpu-smollm2 --G 16 --seed 0 --use-vllm --out runs/trl-smollm2-G16-vllm

Derived in: book/labs/02-smollm2.md ("Scaling out: the TRL backend").
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import replace

import numpy as np

__all__ = ["RewardRecorder", "callback_class", "trl_args", "build_trainer", "train",
           "completion_text", "LOGGED_KEYS", "TRL_LOG_NAMES"]

#: The per-step log vocabulary both backends share (grpolab.grpo.loop writes these names):
#: a quantity present in both logs has this name in both. TRL-only extras start ``trl_``.
LOGGED_KEYS = (
    "step", "completions", "tokens", "seconds",
    "reward_mean", "reward_std",
    "zero_variance_observed", "zero_variance_predicted", "zero_variance_predicted_plugin",
    "pass_rate_estimate_mean", "solved_prompts", "completion_length_mean",
    "completions_step", "groups", "informative_fraction", "all_correct_fraction",
    # the drift from the starting policy at each evaluation (grpolab's loop measures it on
    # the latest training rollout; the TRL callback sees no rollout and logs null)
    "kl_to_warm_start",
    # what grpolab.grpo.loss.grpo_update returns
    "loss", "grad_norm", "kl", "entropy", "clip_ratio_low", "clip_ratio_high", "clip_ratio",
    # held-out evaluation rows
    "eval_greedy_accuracy", "eval_sampled_accuracy",
    "eval_greedy_accuracy_by_difficulty", "eval_sampled_accuracy_by_difficulty",
    "eval_sampled_successes", "eval_greedy_correct",
)

#: TRL's logged metric → our name. TRL's clip ratios count tokens with ratio < 1 − ε and
#: A < 0 (low) or ratio > 1 + ε_high and A > 0 (high), over completion tokens, as
#: grpolab.grpo.loss does; its region ratio is their sum (the two sets are disjoint).
TRL_LOG_NAMES = {
    "loss": "loss", "grad_norm": "grad_norm", "kl": "kl", "entropy": "entropy",
    "completions/mean_length": "completion_length_mean",
    "clip_ratio/low_mean": "clip_ratio_low", "clip_ratio/high_mean": "clip_ratio_high",
    "clip_ratio/region_mean": "clip_ratio",
    "frac_reward_zero_std": "trl_frac_reward_zero_std", "num_tokens": "trl_num_tokens",
}


def completion_text(completion) -> str:
    """A TRL completion as text: plain strings stay, conversational turns give their content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list | tuple) and completion and isinstance(completion[-1], dict):
        return "".join(str(m.get("content", "")) for m in completion)
    raise ValueError(f"cannot read a completion of type {type(completion).__name__}")


class RewardRecorder:
    """Our task's reward as a TRL reward function, remembering what it scored.

    TRL calls it once per generation batch with the prompts, the completions and every
    extra dataset column as keyword arguments; the column ``prompt_index`` says which
    training prompt each completion belongs to. The rewards of the latest call are kept in
    ``batches`` until the callback consumes them.
    """

    def __init__(self, task, prompts):
        self.task, self.prompts = task, prompts
        self.batches: list[tuple[np.ndarray, np.ndarray]] = []
        self.__name__ = f"{task.name}_reward"  # TRL logs rewards/<name>/mean

    def __call__(self, prompts, completions, prompt_index, **kwargs) -> list[float]:
        idx = np.asarray(prompt_index, dtype=int)
        rewards = np.array([self.task.reward(self.prompts[i], completion_text(c))
                            for i, c in zip(idx, completions, strict=True)], dtype=float)
        self.batches.append((idx, rewards))
        return rewards.tolist()

    def pop(self):
        """All (prompt_index, rewards) scored since the last pop, concatenated."""
        if not self.batches:
            return np.zeros(0, int), np.zeros(0)
        idx = np.concatenate([b[0] for b in self.batches])
        rew = np.concatenate([b[1] for b in self.batches])
        self.batches.clear()
        return idx, rew


def _complete_groups(idx: np.ndarray, rewards: np.ndarray, G: int):
    """Keep whole groups only: runs of G consecutive completions of the same prompt.

    TRL lays a generation batch out prompt-major, G copies of a prompt in a row. On one
    process every group is whole; with several processes a group can straddle two, and
    each process then scores only its part, which we drop rather than misread.
    """
    keep_idx, keep_rew = [], []
    i = 0
    while i + G <= len(idx):
        if np.all(idx[i:i + G] == idx[i]):
            keep_idx.append(idx[i])
            keep_rew.append(rewards[i:i + G])
            i += G
        else:
            i += 1
    if not keep_idx:
        return np.zeros(0, int), np.zeros((0, G))
    return np.array(keep_idx), np.stack(keep_rew)


def _rendered(task, tokenizer, prompts):
    """Prompts whose ``text`` is what the model sees (the chat template for chat tasks).

    grpolab's sampler takes strings; a task with ``render`` (word problems) formats them
    with the tokenizer's chat template. Rewards only read ``answer``, so the copies score
    exactly like the originals.
    """
    render = getattr(task, "render", None)
    if render is None:
        return list(prompts)
    return [replace(p, text=render(tokenizer, p)) for p in prompts]


def _dataset(task, tokenizer, prompts):
    """A ``datasets.Dataset`` with TRL's ``prompt`` column and our ``prompt_index``.

    Chat tasks give conversational prompts (TRL applies the chat template itself, token for
    token what :func:`grpolab.tasks.word_problems.render_prompt` gives); others plain text.
    """
    from datasets import Dataset

    chat = (getattr(task, "messages", None) is not None
            and getattr(tokenizer, "chat_template", None)
            and not getattr(task, "chat_template", None))  # not already rendered into text
    rows = [{"prompt": task.messages(p) if chat else p.text, "prompt_index": i}
            for i, p in enumerate(prompts)]
    return Dataset.from_list(rows)


def trl_args(config, out_dir: str, *, device, progress: bool = True, use_vllm: bool = False,
             world_size: int | None = None, **overrides):
    """TRL's ``GRPOConfig`` for our config: same names, one optimizer step per rollout batch.

    Two TRL ≥ 1.x defaults are set explicitly, because each changes the work of a step and
    grpolab's loop does neither:

    - ``gradient_checkpointing`` (TRL default ``True``): recomputes the forward pass inside
      the backward pass, a large share of a small model's step. grpolab's models fit
      without it, and grpolab's loop does not checkpoint.
    - ``bf16`` (TRL default ``True``, even with ``use_cpu``): autocasts the forward passes
      to bfloat16. On a CPU without native bf16 (no AVX512-BF16/AMX) that is several times
      slower than float32, and checkpointing doubles it (benchmarks/bench_step.py
      records both settings). Here: bf16 only on a CUDA device
      that supports it, float32 on CPU, as in grpolab's loop.

    ``overrides`` are passed on to TRL's ``GRPOConfig`` last (the benchmark uses them for
    its fixed-length generation and quiet logging).
    """
    from trl import GRPOConfig as TRLConfig

    G, B = config.num_generations, config.prompts_per_step
    world = world_size or int(os.environ.get("WORLD_SIZE", "1"))
    if (B * G) % world:
        raise ValueError(f"prompts_per_step x num_generations = {B * G} must divide by the "
                         f"number of processes ({world})")
    on_cpu = getattr(device, "type", str(device)) == "cpu"
    import torch

    bf16 = (not on_cpu) and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    kwargs = dict(
        output_dir=os.path.join(out_dir, "trl"),
        per_device_train_batch_size=B * G // world,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=G,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=0,
        learning_rate=config.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        optim="adamw_torch",
        max_grad_norm=config.max_grad_norm,
        beta=config.beta,
        # TRL ≥ 1.x multiplies the k3 KL by the (differentiable) importance ratio by default
        # (use_bias_correction_kl=True, DeepSeek-V3.2's unbiased KL gradient). grpolab's loss
        # does not; switching it off keeps both backends on the same objective (same loss
        # *and* gradient when beta > 0; with TRL's default even the on-policy gradient
        # differs, tests/test_trl_backend.py shows it).
        use_bias_correction_kl=False,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high if config.epsilon_high is not None else config.epsilon,
        loss_type=config.loss_type,
        scale_rewards=config.scale_rewards,
        num_iterations=config.num_iterations,
        max_steps=config.steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=on_cpu,
        bf16=bf16,
        seed=config.seed,
        data_seed=config.seed,
        disable_tqdm=not progress,
        log_completions=False,
        use_vllm=use_vllm,
        vllm_mode="colocate",
        remove_unused_columns=False,
    )
    # transformers ≥ 5.x renamed gradient_checkpointing to activation_checkpointing (the
    # old name is a deprecated alias that warns); use whichever this version has.
    ckpt = ("activation_checkpointing" if any(f.name == "activation_checkpointing"
                                              for f in dataclasses.fields(TRLConfig))
            else "gradient_checkpointing")
    kwargs[ckpt] = False
    overrides = dict(overrides)
    if "gradient_checkpointing" in overrides:
        overrides[ckpt] = overrides.pop("gradient_checkpointing")
    kwargs.update(overrides)
    return TRLConfig(**kwargs)


def callback_class():
    """The ``TrainerCallback`` subclass that writes grpolab's log (built on first use, so
    importing this module does not import transformers)."""
    from transformers import TrainerCallback

    class _GRPOLabCallback(TrainerCallback):
        """Writes grpolab's per-step log from inside TRL's training loop.

        ``on_step_end`` (after the optimizer step): the step's whole groups, from the
        :class:`RewardRecorder`, go to the run's
        :class:`~grpolab.grpo.measure.ZeroVarianceMonitor` (observed fraction; prediction from
        the prompts' windows before this step), as in grpolab's loop. ``on_log``: TRL's own
        metrics join the record under the loop's names (:data:`TRL_LOG_NAMES`), and the
        record goes to the :class:`~grpolab.grpo.records.RunLog`.
        """

        def __init__(self, recorder, monitor, G, log, evaluate, eval_every, steps):
            self.recorder, self.monitor, self.G = recorder, monitor, G
            self.log, self.evaluate, self.eval_every, self.steps = log, evaluate, eval_every, steps
            self.pending: dict | None = None
            self.completions = self.tokens = self.step_completions = 0

        def on_step_end(self, args, state, control, model=None, **kwargs):
            idx, rewards = self.recorder.pop()
            groups_idx, groups = _complete_groups(idx, rewards, self.G)
            rec: dict = {"step": int(state.global_step)}
            if len(groups_idx):
                flat = groups.reshape(-1)
                rec.update(reward_mean=float(flat.mean()), reward_std=float(flat.std()),
                           **self.monitor.observe(flat, [self.G] * len(groups_idx),
                                                  groups_idx.tolist()))
            # The whole generation batch (all processes), not just what this process scored.
            before = self.completions
            self.step_completions = (args.per_device_train_batch_size * args.world_size
                                     * args.gradient_accumulation_steps)
            self.completions += self.step_completions
            rec["completions"] = self.completions
            rec["completions_step"] = self.step_completions
            # eval_every counts completions (GRPOConfig.eval_every), as in grpolab's loop
            crossed = self.completions // self.eval_every > before // self.eval_every
            if self.evaluate is not None and (crossed or state.global_step == self.steps):
                was_training = model.training
                model.eval()
                rec.update({k: v for k, v in self.evaluate(model).items() if k != "step"})
                if was_training:
                    model.train()
                rec["kl_to_warm_start"] = None  # not measured by this backend (see LOGGED_KEYS)
            self.pending = rec

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.pending is None or logs is None:
                return
            rec, self.pending = self.pending, None
            for src, dst in TRL_LOG_NAMES.items():
                if src in logs and isinstance(logs[src], int | float):
                    rec[dst] = float(logs[src])
            if "loss" in rec and "kl" not in rec and not args.beta:
                rec["kl"] = 0.0  # TRL logs no KL at beta = 0; grpolab's loop logs 0
            if "completion_length_mean" in rec:  # TRL's mean over this step's completions
                self.tokens += int(round(rec["completion_length_mean"] * self.step_completions))
            rec["tokens"] = self.tokens
            rec["seconds"] = self.log.elapsed()
            self.log.write(rec)

    return _GRPOLabCallback


def build_trainer(config, model, tokenizer, task, train_prompts, *, out_dir: str, device,
                  callbacks=(), progress: bool = True, use_vllm: bool = False,
                  peft_config=None):
    """A TRL ``GRPOTrainer`` for our config, model, task and prompts; returns
    ``(trainer, recorder)``. Also used by the parity test."""
    from trl import GRPOTrainer

    recorder = RewardRecorder(task, train_prompts)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[recorder],
        args=trl_args(config, out_dir, device=device, progress=progress, use_vllm=use_vllm),
        train_dataset=_dataset(task, tokenizer, train_prompts),
        processing_class=tokenizer,
        callbacks=list(callbacks),
        peft_config=peft_config,
    )
    return trainer, recorder


def train(config, out_dir, *, cache_dir: str | None = None, census=None, progress: bool = True,
          extra: dict | None = None, use_vllm: bool = False, lora_r: int = 0) -> dict:
    """One GRPO run through TRL; writes ``log.jsonl`` and ``summary.json`` like
    :func:`grpolab.grpo.loop.train` and returns the summary.

    ``census``: a (n_train, ≥ census_samples) pass/fail matrix of the starting policy for the
    predicted zero-variance fraction (a sweep measures it once); measured here when ``None``,
    with ``census_seed`` as in grpolab's loop.
    ``lora_r > 0`` trains a LoRA adapter of that rank (via ``peft``) instead of all weights.
    """
    import torch

    from grpolab.grpo.measure import ZeroVarianceMonitor, evaluate
    from grpolab.grpo.records import RunLog
    from grpolab.grpo.setup import prepare_run, starting_census
    from grpolab.models.device import is_main_process

    config.validate()  # refuses the fields TRL does not implement (config.TRL_REFUSED)
    setup = prepare_run(config, out_dir, cache_dir, progress)
    model, tokenizer, task = setup.model, setup.tokenizer, setup.task
    eval_rendered = _rendered(task, tokenizer, setup.eval_prompts)
    sampling = dict(temperature=config.temperature, top_p=config.top_p,
                    max_new_tokens=config.max_completion_length)
    eval_gen = torch.Generator(device=setup.device).manual_seed(10_000 + config.seed)

    def held_out(m) -> dict:
        return evaluate(m, tokenizer, task, eval_rendered, samples=config.eval_samples,
                        generator=eval_gen, **sampling)

    census = starting_census(config, setup, census,
                             prompts=_rendered(task, tokenizer, setup.train_prompts))
    monitor = ZeroVarianceMonitor(census, config.pass_rate_window_size)
    log = RunLog(setup.out_dir, is_main=is_main_process())
    log.write({"step": 0, **held_out(model), "seconds": 0.0, "completions": 0, "tokens": 0})
    peft_config = None
    if lora_r:
        from peft import LoraConfig

        peft_config = LoraConfig(r=lora_r, lora_alpha=2 * lora_r, lora_dropout=0.0,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    torch.manual_seed(config.seed)
    callback = callback_class()(None, monitor, config.num_generations, log, held_out,
                                 config.eval_every, config.steps)
    trainer, recorder = build_trainer(config, model, tokenizer, task, setup.train_prompts,
                                      out_dir=setup.out_dir, device=setup.device,
                                      callbacks=[callback], progress=progress,
                                      use_vllm=use_vllm, peft_config=peft_config)
    callback.recorder = recorder
    if not progress:  # without a bar, Trainer prints every log dict; our log.jsonl has them
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)
    try:
        trainer.train()
    finally:
        log.close()
    return log.summary(config, device=setup.device, source=setup.source,
                       monitor_summary=monitor.summary(),
                       extra={"lora_r": lora_r, "use_vllm": use_vllm,
                              "trl_version": _trl_version(), **(extra or {})})


def _trl_version() -> str:
    import trl

    return trl.__version__
