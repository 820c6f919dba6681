"""GRPO step time: grpolab's step vs TRL ``GRPOTrainer``'s, same model, batch, G and lengths.

Both sides do the same work per step: sample G completions for each of B prompts, score
them with the same exact-match reward, compute group advantages, one forward + backward
of the loss, clip the gradient norm, one AdamW step. Settings match TRL's names:
``num_generations=G``, ``per_device_train_batch_size=B·G``, ``max_completion_length=T``,
``beta=0`` (no reference model), ``loss_type="dapo"``, ``scale_rewards="group"``,
``num_iterations=1``, temperature 1, top-p 1, top-k off, lr 1e-5, max_grad_norm 1.

Each side trains its own copy of the same randomly initialised tiny model
(``build_tiny_model(seed=0)``). Generation is fixed-length on both sides (EOS is an id
outside the vocabulary for generation), so both generate B·G·T tokens per step.

Interleaving: TRL's ``trainer.train()`` owns its loop, so a callback times each TRL step
(``on_step_begin`` → ``on_step_end``: the step's generation, reward, loss, backward and
optimizer) and then runs and times one grpolab step, outside TRL's timed window. The first
``--warmup`` steps of each side are dropped; the medians of the rest are reported.
Ratio = TRL seconds per step ÷ grpolab seconds per step (target ≥ 2, i.e. grpolab ≤ 0.5×).

TRL's side is configured by :func:`grpolab.grpo.trl_backend.trl_args`, i.e. exactly what
``--backend trl`` runs (float32 on CPU, no gradient checkpointing), plus the fixed-length
generation and quiet logging above. ``--trl-defaults`` instead leaves ``bf16`` and
``gradient_checkpointing`` at TRL's own defaults (both ``True``, even on CPU): that is what
the benchmark measured before, when TRL's step came out ~10× slower on a CPU without native
bf16 (issue 14). The output records the TRL settings that change a step's work, whether
checkpointing was really on, the package versions and the CPU's bf16 support, so such a
jump explains itself.

    python benchmarks/bench_step.py            # B=8, G=8 and B=4, G=16 (64 completions/step)
    python benchmarks/bench_step.py --quick    # B=2, G=4, a few steps
    python benchmarks/bench_step.py --device cuda   # the same cases on a GPU

On CUDA (``--device cuda``) both sides stay float32 (``bf16=False`` overrides trl_args'
bf16-on-CUDA, so both do the same arithmetic; ``--trl-defaults`` keeps TRL's), each timed
window ends with ``torch.cuda.synchronize()``, the prototype (a CPU proposal) is skipped,
and PASS/MISS uses the wall-clock ratio: process CPU time does not measure GPU work.
"""

from __future__ import annotations

import copy
import logging
import os
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Row, Timings, finish, parser, print_row, set_threads, status  # noqa: E402
from bench_rollout import FixedLengthTokenizer, device_settings  # noqa: E402
from matmul_limit import distance_to_limit  # noqa: E402

BENCH = "step"
TARGET = 2.0  # TRL time / grpolab time; "grpolab ≤ 0.5× TRL's time"


def reward_fn(answers):
    """Exact-match 0/1 reward, the same Python function on both sides."""
    def score(completion: str, answer: str) -> float:
        return float(completion.strip() == answer)
    return score


#: TRL settings that change how much work a step does (recorded with every result).
WORK_SETTINGS = ("bf16", "fp16", "gradient_checkpointing", "per_device_train_batch_size",
                 "gradient_accumulation_steps", "steps_per_generation", "num_iterations",
                 "num_generations", "max_completion_length", "beta", "loss_type",
                 "use_bias_correction_kl", "torch_compile", "use_vllm", "use_cpu", "top_k")


def cpu_bf16_support() -> dict:
    """Whether this CPU has native bf16 (AVX512-BF16, AMX) and any oneDNN ISA cap: bf16
    autocast on a CPU without them is several times slower than float32."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        flags = []
    return {"avx512_bf16": "avx512_bf16" in flags, "amx_bf16": "amx_bf16" in flags,
            "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA")}


def versions() -> dict:
    out = {}
    for mod in ("torch", "transformers", "trl", "accelerate"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = None
    return out


def trl_settings(trainer) -> dict:
    """What TRL actually ran with: the work-changing arguments, the accelerator's mixed
    precision and whether the model really had gradient checkpointing on."""
    args = trainer.args
    rec = {k: getattr(args, k, None) for k in WORK_SETTINGS}
    rec["mixed_precision"] = str(trainer.accelerator.mixed_precision)
    model = trainer.model
    rec["model_gradient_checkpointing"] = bool(
        getattr(model, "is_activation_checkpointing", None)
        if hasattr(type(model), "is_activation_checkpointing")
        else getattr(model, "is_gradient_checkpointing", False))
    rec["torch_threads"] = __import__("torch").get_num_threads()
    return rec


def bench_case(B: int, G: int, T: int, steps: int, warmup: int, lr: float,
               trl_defaults: bool = False, device: str = "cpu") -> list[Row]:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from grpolab.advantages import group_advantages
    from grpolab.grpo.config import GRPOConfig as OurConfig
    from grpolab.grpo.loss import grpo_update
    from grpolab.grpo.rollout import sample
    from grpolab.grpo.trl_backend import trl_args
    from grpolab.models.tiny_llama import build_tiny_model
    from grpolab.tasks.registry import get_task

    task = get_task("arithmetic")
    prompts = task.train_prompts
    score = reward_fn(None)
    model, tok = build_tiny_model(seed=0)
    model.to(device)
    ours_model = copy.deepcopy(model)
    on_cpu = device == "cpu"
    sync = (lambda: None) if on_cpu else torch.cuda.synchronize
    vocab = model.get_output_embeddings().weight.shape[0]
    no_eos = vocab + 7
    ftok = FixedLengthTokenizer(tok, no_eos)

    # ---- grpolab: the loop body of grpolab.grpo.loop.train (rollout, reward, advantages, update)
    def make_step(policy, sampler, fast=None):
        optimizer = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.0)
        gen = torch.Generator(device=device).manual_seed(0)
        cursor = [0]

        def step() -> int:
            batch = [prompts[(cursor[0] + i) % len(prompts)] for i in range(B)]
            cursor[0] += B
            rollout = sampler(policy, ftok, [p.text for p in batch], G, max_new_tokens=T,
                              temperature=1.0, top_p=1.0, generator=gen)
            rewards = [score(s, batch[i // G].answer) for i, s in enumerate(rollout.texts)]
            adv = group_advantages(torch.as_tensor(rewards, dtype=torch.float32), G)
            grpo_update(policy, optimizer, rollout, adv, num_iterations=1, epsilon=0.2,
                        beta=0.0, loss_type="dapo", temperature=1.0, max_grad_norm=1.0,
                        max_completion_length=T, fast=fast)
            return rollout.tokens_generated
        return step

    def generic(*args, **kwargs):  # the generic decode loop and a plain model.forward update
        return sample(*args, fast=False, **kwargs)

    ours = {"grpolab": make_step(ours_model, sample),
            "generic": make_step(copy.deepcopy(model), generic, fast=False)}

    # ---- TRL
    def trl_reward(prompts, completions, answer, **kwargs):
        return [score(c, a) for c, a in zip(completions, answer, strict=True)]

    data = Dataset.from_list([{"prompt": p.text, "answer": p.answer} for p in prompts])
    times = {"trl": Timings(), **{k: Timings() for k in ours}}
    tokens = {k: [] for k in ours}

    class Interleave(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            sync()
            self.c0, self.t0 = time.process_time(), time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            sync()
            times["trl"].wall.append(time.perf_counter() - self.t0)
            times["trl"].cpu.append(time.process_time() - self.c0)
            names = list(ours) if state.global_step % 2 else list(ours)[::-1]
            for k in names:
                c0, t0 = time.process_time(), time.perf_counter()
                tokens[k].append(ours[k]())
                sync()
                times[k].wall.append(time.perf_counter() - t0)
                times[k].cpu.append(time.process_time() - c0)

    out = tempfile.mkdtemp(prefix="grpolab-bench-trl-")
    ours_cfg = OurConfig(num_generations=G, prompts_per_step=B, steps=steps,
                         max_completion_length=T, learning_rate=lr, max_grad_norm=1.0, beta=0.0,
                         loss_type="dapo", scale_rewards="group", num_iterations=1,
                         temperature=1.0, top_p=1.0, seed=0)
    overrides = dict(logging_steps=10_000, generation_kwargs={"eos_token_id": no_eos})
    if trl_defaults:  # what this benchmark ran before: TRL's own precision and checkpointing
        overrides.update(bf16=None, gradient_checkpointing=True)
    elif not on_cpu:  # float32 on both sides (trl_args turns bf16 on for CUDA)
        overrides.update(bf16=False)
    cfg = trl_args(ours_cfg, out, device=torch.device(device), progress=False, **overrides)
    trainer = GRPOTrainer(model=model, reward_funcs=[trl_reward], args=cfg, train_dataset=data,
                          processing_class=tok, callbacks=[Interleave()])
    trainer.train()
    settings = trl_settings(trainer)
    print(f"TRL settings B={B} G={G}: " + ", ".join(f"{k}={v}" for k, v in settings.items()),
          flush=True)
    n = len(times["trl"].wall)
    if n <= warmup:
        raise SystemExit(f"error: only {n} steps ran; need more than --warmup {warmup}")
    for t in times.values():
        t.wall, t.cpu = t.wall[warmup:], t.cpu[warmup:]
    b = times["trl"].wall_median
    rows = []
    for k in ours:
        o = times[k].wall_median
        rows.append(Row(
            case=f"tiny B={B} G={G} max_completion_length={T}" + (
                " (generic paths)" if k == "generic" else ""),
            ours_label="grpolab step (rollout.sample + grpo.grpo_update)" if k == "grpolab" else
            "grpolab step on its generic paths: model.forward per token, full-sequence update "
            "(sample(fast=False), per_token_logprobs(fast=False))",
            baseline_label="trl.GRPOTrainer step (generate + loss + backward + AdamW)",
            ours=o, baseline=b, ratio=b / o,
            target=f"{'CPU' if on_cpu else 'wall'}-time ratio >= {TARGET}" if k == "grpolab"
            else "", reps=n - warmup,
            extra={"ours_cpu": times[k].cpu_median, "baseline_cpu": times["trl"].cpu_median,
                   "ours_tokens_per_step": sum(tokens[k]) / len(tokens[k]),
                   "trl_settings": settings}))
    # the distance to the limit: the step's matmul FLOP/s vs torch.matmul at its shapes
    lim = distance_to_limit(ours["grpolab"], times["grpolab"].cpu_median)
    gf = 1e-9
    rows.append(Row(
        case=f"tiny B={B} G={G} max_completion_length={T} step FLOP/s vs matmul at its shapes",
        ours_label="grpolab step: matrix-product FLOPs / step CPU time",
        baseline_label="single-thread torch.matmul at the step's own shapes "
                       "(benchmarks/matmul_limit.py)",
        ours=lim["achieved_flops_per_s"] * gf, baseline=lim["matmul_flops_per_s"] * gf,
        unit="GFLOP/s", ratio=lim["fraction"], reps=n - warmup,
        extra={"ours_cpu": lim["achieved_flops_per_s"] * gf,
               "baseline_cpu": lim["matmul_flops_per_s"] * gf, **lim}))
    return rows



def main(argv=None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--cases", default="8x8,4x16",
                   help="comma-separated BxG (prompts x completions per prompt)")
    p.add_argument("--max-completion-length", type=int, default=6)
    p.add_argument("--warmup", type=int, default=3, help="steps dropped from each side")
    p.add_argument("--trl-defaults", action="store_true",
                   help="leave bf16 and gradient_checkpointing at TRL's defaults (True) instead "
                        "of trl_args' float32 without checkpointing")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="where both sides run (default cpu)")
    args = p.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but torch.cuda.is_available() is False")
    set_threads(args.threads)
    warnings.filterwarnings("ignore")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    if args.quick:
        cases, steps, warmup, T = [(2, 4)], 2 + (args.reps or 3), 2, 4
    else:
        try:
            cases = [tuple(int(x) for x in c.split("x")) for c in args.cases.split(",")]
        except ValueError:
            msg = f"error: --cases must look like 8x8,4x16, got {args.cases!r}"
            raise SystemExit(msg) from None
        warmup, T = args.warmup, args.max_completion_length
        steps = warmup + (args.reps or 15)
    rows = []
    for B, G in cases:
        for row in bench_case(B, G, T, steps, warmup, lr=1e-5, trl_defaults=args.trl_defaults,
                              device=args.device):
            if args.quick:
                row.target = ""
            elif row.target:  # CUDA: CPU time does not measure GPU work
                row.status = status((row.cpu_ratio if args.device == "cpu" else row.ratio)
                                    >= TARGET)
            rows.append(row)
            print_row(BENCH, row)
    notes = ["Steady state: the first warm-up steps of each side are dropped.",
             "Both sides: fixed-length generation, beta=0, loss_type=dapo, scale_rewards=group, "
             "num_iterations=1, AdamW (TRL optim=adamw_torch, constant LR), max_grad_norm=1.",
             "TRL side: grpolab.grpo.trl_backend.trl_args (what --backend trl runs)"
             + (", with TRL's default bf16 and gradient checkpointing" if args.trl_defaults
                else ": float32, no gradient checkpointing") + "."]
    cpu = cpu_bf16_support()
    print(f"versions: {versions()}; cpu bf16: {cpu}", flush=True)
    return finish(BENCH, rows, args, notes,
                  settings={"cases": [f"B={b} G={g}" for b, g in cases], "T": T,
                            "steps": steps, "warmup": warmup,
                            "trl_defaults": bool(args.trl_defaults),
                            "trl_settings": rows[0].extra["trl_settings"] if rows else {},
                            "versions": versions(), "cpu_bf16": cpu,
                            **device_settings(args.device)})


if __name__ == "__main__":
    raise SystemExit(main())
