"""Rollout throughput: grpolab's sampler vs ``model.generate(num_return_sequences=G)``.

Sides, interleaved in one process on the same model object, prompts and settings:

- ``shared``: :func:`grpolab.grpo.rollout.sample` with ``num_generations=G`` (prompt encoded
  once, its KV cache repeated G times);
- ``unshared``: the same sampler given each prompt G times with ``num_generations=1``
  (the prompt is encoded G times: isolates what prefix sharing buys);
- ``generate``: ``model.generate(do_sample=True, num_return_sequences=G)``, what a
  transformers user would write;
- ``generic``: the same sampler on its architecture-agnostic path (``fast=False``: one
  ``model.forward`` per token with a ``DynamicCache``), to show what the hand-written
  Llama decode loop (``grpolab.grpo.fast_llama``, the default for these models) buys.

On SmolLM2 the unshared and generic sides are skipped at G = 64 (to keep the run short).

Fairness: same temperature (1.0) and top-p (1.0; ``top_k=0`` so transformers' default
top-k of 50 is off), same ``max_new_tokens``, and fixed-length generation on every side:
EOS is set to an id outside the vocabulary, so no row stops early and every side
generates exactly B·G·T tokens (checked). Throughput = completions per second; tokens
per second are recorded too. Ratio = grpolab completions/s ÷ baseline completions/s;
PASS/MISS uses the ratio of CPU-time rates (see ``_common.Row``).

    python benchmarks/bench_rollout.py                 # tiny model and SmolLM2-135M
    python benchmarks/bench_rollout.py --models tiny   # just the tiny model
    python benchmarks/bench_rollout.py --quick         # tiny model, G=4, a few tokens
    python benchmarks/bench_rollout.py --device cuda   # the same rows on a GPU

On CUDA (``--device cuda``) every timed call ends with ``torch.cuda.synchronize()``, the
prototype (a CPU proposal) is skipped, and PASS/MISS uses the wall-clock ratio: process CPU
time does not measure GPU work.

Shapes: the tiny model runs the lab's own workload (prompts from its arithmetic task,
64 completions per step so B = 64/G prompts, ``max_completion_length`` 6; these rows carry
the target), plus one decode-heavy case (B=4, G=16, 16 new tokens) for context. SmolLM2
samples 16 tokens for one chat-templated word problem.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Row, finish, interleaved, parser, print_row, set_threads, status  # noqa: E402

BENCH = "rollout"
TARGETS = {"tiny": 3.0, "smollm2": 1.3}

TINY_PROMPTS = ["12+34=", "7+58=", "301+9=", "46+46="]
SMOL_QUESTION = ("Tom has 12 apples. He buys 7 more and gives 5 to his sister. "
                 "How many apples does Tom have now? Answer with a number.")


class FixedLengthTokenizer:
    """A view of a tokenizer whose EOS id can never be sampled, so every row runs the full
    ``max_new_tokens`` and both sides do the same work. Everything else is forwarded."""

    def __init__(self, tokenizer, eos_token_id: int):
        object.__setattr__(self, "_tok", tokenizer)
        object.__setattr__(self, "eos_token_id", eos_token_id)

    def __getattr__(self, name):
        return getattr(self._tok, name)

    def __setattr__(self, name, value):  # e.g. padding_side, set by the sampler
        setattr(self._tok, name, value)

    def __call__(self, *args, **kwargs):
        return self._tok(*args, **kwargs)


def lab_prompts(n: int = 64) -> list[str]:
    """The first training prompts of the lab's task (sums of 1- to 4-digit numbers)."""
    try:
        from grpolab.labs.sweep.presets import TASK_KWARGS
        from grpolab.tasks.registry import get_task

        return [p.text for p in get_task("arithmetic", **TASK_KWARGS).train_prompts[:n]]
    except ImportError:  # the lab's modules are optional here
        return TINY_PROMPTS


def load(name: str, device: str = "cpu"):
    """``(model, tokenizer, prompts)`` for ``tiny`` or ``smollm2``, in eval mode on ``device``."""
    if name == "tiny":
        from grpolab.models.tiny_llama import build_tiny_model

        model, tok = build_tiny_model(seed=0)
        return model.to(device).eval(), tok, lab_prompts()
    if name == "smollm2":
        from grpolab.models.smollm2 import load_smollm2

        model, tok = load_smollm2(device=device)
        text = tok.apply_chat_template([{"role": "user", "content": SMOL_QUESTION}],
                                       tokenize=False, add_generation_prompt=True)
        return model.eval(), tok, [text]
    raise SystemExit(f"error: unknown model {name!r} (choose tiny or smollm2)")


def with_unshared(name: str, G: int) -> bool:
    """The unshared side costs as much as generate; on SmolLM2 we skip it at G = 64."""
    return name == "tiny" or G <= 16


def bench_model(name: str, cases: list[tuple[int, int, int, bool]], reps: int,
                device: str = "cpu", inner: int = 1) -> list[Row]:
    """Rows for ``cases`` of (B prompts, G, max_new_tokens T, whether the target applies)."""
    import torch

    from grpolab.grpo.fast_llama import supports
    from grpolab.grpo.rollout import encode_prompts, sample

    model, tok, all_prompts = load(name, device)
    on_cpu = device == "cpu"
    sync = (lambda: None) if on_cpu else torch.cuda.synchronize
    if not supports(model):
        raise SystemExit(f"error: {name} does not take grpolab's fast decode path")
    vocab = model.get_output_embeddings().weight.shape[0]
    no_eos = vocab + 7  # never sampled
    ftok = FixedLengthTokenizer(tok, no_eos)
    pad = tok.pad_token_id
    gen = torch.Generator(device=device).manual_seed(0)
    rows = []
    for B, G, T, targeted in cases:
        prompts = (all_prompts * B)[:B]
        ids, mask = encode_prompts(tok, prompts, device)
        P = ids.shape[1]
        n = B * G

        def shared(G=G, T=T, n=n, prompts=prompts):
            r = sample(model, ftok, prompts, G, max_new_tokens=T, temperature=1.0, top_p=1.0,
                       generator=gen)
            sync()
            assert r.tokens_generated == n * T, "grpolab stopped early"

        def unshared(G=G, T=T, n=n, prompts=prompts):
            rep = [p for p in prompts for _ in range(G)]
            r = sample(model, ftok, rep, 1, max_new_tokens=T, temperature=1.0, top_p=1.0,
                       generator=gen)
            sync()
            assert r.tokens_generated == n * T, "grpolab (unshared) stopped early"

        @torch.no_grad()
        def generate(G=G, T=T, n=n, P=P, ids=ids, mask=mask):
            out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True,
                                 num_return_sequences=G, max_new_tokens=T, temperature=1.0,
                                 top_p=1.0, top_k=0, eos_token_id=no_eos, pad_token_id=pad)
            sync()
            assert out.shape == (n, P + T), f"generate returned {tuple(out.shape)}"

        sides = {"shared": shared, "generate": generate}
        if with_unshared(name, G):
            sides["unshared"] = unshared
        if with_unshared(name, G):
            def generic(G=G, T=T, n=n, prompts=prompts):
                r = sample(model, ftok, prompts, G, max_new_tokens=T, temperature=1.0,
                           top_p=1.0, generator=gen, fast=False)
                assert r.tokens_generated == n * T, "grpolab (generic) stopped early"
            sides["generic"] = generic
        t = interleaved(sides, reps=reps, inner=inner)
        rate = {k: n / v.wall_median for k, v in t.items()}
        cpu_rate = {k: n / v.cpu_median for k, v in t.items()}
        tok_rate = {k: n * T / v.wall_median for k, v in t.items()}
        settings = f"B={B} G={G} prompt={P} new={T}"
        target = TARGETS[name] if targeted else None
        gate = cpu_rate if on_cpu else rate  # CUDA: CPU time does not measure GPU work
        rows.append(Row(
            case=f"{name} vs generate {settings}",
            ours_label="grpolab.grpo.rollout.sample (Llama decode loop, prompt encoded once)",
            baseline_label="model.generate(do_sample=True, num_return_sequences=G)",
            ours=rate["shared"], baseline=rate["generate"], unit="completions/s",
            ratio=rate["shared"] / rate["generate"],
            target=f"{'CPU' if on_cpu else 'wall'}-time ratio >= {target}" if target else "",
            status=status(None if target is None
                          else gate["shared"] / gate["generate"] >= target),
            reps=reps,
            extra={"ours_cpu": cpu_rate["shared"], "baseline_cpu": cpu_rate["generate"],
                   "ours_tokens_per_s": tok_rate["shared"],
                   "baseline_tokens_per_s": tok_rate["generate"],
                   "ours_median_s": t["shared"].wall_median,
                   "baseline_median_s": t["generate"].wall_median}))
        # the INFO rows: the shared sampler against each of our own other sides
        comparisons = {
            "unshared": ("shared vs unshared",
                         "grpolab.grpo.rollout.sample, prompt encoded once",
                         "grpolab.grpo.rollout.sample, prompt repeated G times"),
            "generic": ("fast vs generic decode",
                        "grpolab.grpo.rollout.sample (grpolab.grpo.fast_llama loop)",
                        "grpolab.grpo.rollout.sample(fast=False): model.forward per token"),
        }
        for side, (what, ours_label, baseline_label) in comparisons.items():
            if side in t:
                rows.append(Row(
                    case=f"{name} {what} {settings}", ours_label=ours_label,
                    baseline_label=baseline_label, ours=rate["shared"], baseline=rate[side],
                    unit="completions/s", ratio=rate["shared"] / rate[side], reps=reps,
                    extra={"ours_cpu": cpu_rate["shared"], "baseline_cpu": cpu_rate[side],
                           "ours_tokens_per_s": tok_rate["shared"],
                           "baseline_tokens_per_s": tok_rate[side]}))
        for row in rows[-len(t) + 1:]:
            print_row(BENCH, row)
    return rows


def device_settings(device: str) -> dict:
    """``{}`` on CPU (the CPU output is as before); the device and GPU name otherwise."""
    if device == "cpu":
        return {}
    import torch

    return {"device": device, "gpu": torch.cuda.get_device_name(0),
            "torch_cuda": torch.version.cuda}


def main(argv=None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--models", default="tiny,smollm2", help="comma-separated: tiny, smollm2")
    p.add_argument("--G", default="4,16,64", help="comma-separated group sizes")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="where both sides run (default cpu)")
    args = p.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but torch.cuda.is_available() is False")
    set_threads(args.threads)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if any(m not in TARGETS for m in models):
        raise SystemExit(f"error: --models must be among {', '.join(TARGETS)}")
    try:
        Gs = [int(g) for g in args.G.split(",")]
    except ValueError:
        raise SystemExit(f"error: --G must be comma-separated integers, got {args.G!r}") from None
    if any(g < 1 for g in Gs):
        raise SystemExit("error: --G values must be >= 1")
    # Tiny model: the lab's shape (64 completions per step, so B = 64 / G prompts, and
    # max_completion_length 6), plus one decode-heavy case (16 new tokens) for context.
    # SmolLM2: one chat-templated word problem, 16 new tokens.
    # (cases, timed repetitions, calls per repetition): a tiny-model call takes a few ms,
    # so each repetition times 10 of them
    plan = {"tiny": ([(max(1, 64 // G), G, 6, True) for G in Gs] + [(4, 16, 16, False)], 15,
                     10),
            "smollm2": ([(1, G, 16, True) for G in Gs], 2, 1)}
    if args.quick:
        models, plan = ["tiny"], {"tiny": ([(2, 4, 4, False)], 2, 1)}
    rows = []
    for m in models:
        cases, reps, inner = plan[m]
        rows += bench_model(m, cases, args.reps or reps, args.device, inner)
    notes = ["Fixed length: EOS is an id outside the vocabulary on every side, so every row "
             "generates exactly max_new_tokens tokens; sampling at temperature 1, top-p 1, "
             "top-k off.",
             "The tiny model is randomly initialised (build_tiny_model(seed=0)): speed does not "
             "depend on the weights. SmolLM2 is the dequantized float32 135M model."]
    return finish(BENCH, rows, args, notes,
                  settings={"models": models, "G": Gs,
                            "cases": {m: [dict(B=b, G=g, new_tokens=t, target=tg)
                                          for b, g, t, tg in plan[m][0]] for m in models},
                            "reps": {m: args.reps or plan[m][1] for m in models},
                            "calls_per_rep": {m: plan[m][2] for m in models},
                            **device_settings(args.device)})


if __name__ == "__main__":
    raise SystemExit(main())
