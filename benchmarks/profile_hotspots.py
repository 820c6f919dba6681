"""Where the time goes: cProfile (CPU-time clock) of the rollout and the GRPO step.

    python benchmarks/profile_hotspots.py sample      # grpolab.grpo.rollout.sample, lab shape
    python benchmarks/profile_hotspots.py generate    # model.generate, same shape
    python benchmarks/profile_hotspots.py generic     # sample(fast=False): model.forward per token
    python benchmarks/profile_hotspots.py step        # one grpolab GRPO step
    python benchmarks/profile_hotspots.py step-generic  # the step on both generic paths
    python benchmarks/profile_hotspots.py mc          # grpolab.simulate.zero_variance_mc
    python benchmarks/profile_hotspots.py smollm2     # sample on SmolLM2-135M, G=4, 16 tokens

The profiler's clock is ``time.process_time``, so time the process spent waiting for a
core on a shared machine is not counted. Besides the usual top functions by own time, the
output sums own time into buckets: torch kernels (built-in methods), transformers' Python,
torch's Python (nn.Module dispatch, optimizers), grpolab's Python, and the rest.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPE = dict(B=8, G=8, T=6)  # the lab: 64 completions per step, max_completion_length 6


def bucket(filename: str, name: str) -> str:
    if filename == "~" or filename.startswith("<built-in"):
        return "torch/numpy kernels (built-in calls)"
    if "/transformers/" in filename:
        return "transformers Python"
    if "/torch/" in filename:
        return "torch Python (Module dispatch, optim, autograd glue)"
    if "/grpolab/" in filename or "/benchmarks/" in filename:
        return "grpolab Python"
    return "other Python"


def report(prof: cProfile.Profile, calls: int, top: int = 15) -> None:
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())
    sums: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
        b = bucket(filename, name)
        sums[b] = sums.get(b, 0.0) + tt
    print(f"total CPU {total:.3f} s over {calls} calls = {1e3 * total / calls:.1f} ms per call")
    for b, v in sorted(sums.items(), key=lambda kv: -kv[1]):
        print(f"  {100 * v / total:5.1f}%  {b}")
    st.sort_stats("tottime").print_stats(top)


def main() -> int:
    what = sys.argv[1] if len(sys.argv) > 1 else "sample"
    import torch

    torch.set_num_threads(1)
    from bench_rollout import TINY_PROMPTS, FixedLengthTokenizer

    from grpolab.grpo.rollout import encode_prompts, sample
    from grpolab.models.tiny_llama import build_tiny_model

    B, G, T = SHAPE["B"], SHAPE["G"], SHAPE["T"]
    model, tok = build_tiny_model(seed=0)
    model.eval()
    ftok = FixedLengthTokenizer(tok, model.config.vocab_size + 7)
    prompts = (TINY_PROMPTS * B)[:B]
    gen = torch.Generator().manual_seed(0)
    if what == "sample":
        def f():
            sample(model, ftok, prompts, G, max_new_tokens=T, generator=gen)
    elif what == "generic":
        def f():
            sample(model, ftok, prompts, G, max_new_tokens=T, generator=gen, fast=False)
    elif what == "generate":
        ids, mask = encode_prompts(tok, prompts, "cpu")

        def f():
            with torch.no_grad():
                model.generate(input_ids=ids, attention_mask=mask, do_sample=True,
                               num_return_sequences=G, max_new_tokens=T, top_k=0, top_p=1.0,
                               eos_token_id=ftok.eos_token_id, pad_token_id=tok.pad_token_id)
    elif what in ("step", "step-generic"):
        from grpolab.advantages import group_advantages
        from grpolab.grpo.loss import grpo_update

        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.0)
        fast = None if what == "step" else False

        def f():
            r = sample(model, ftok, prompts, G, max_new_tokens=T, generator=gen, fast=fast)
            adv = group_advantages(torch.tensor([float(i % 3 == 0) for i in range(B * G)]), G)
            grpo_update(model, opt, r, adv, max_completion_length=T, fast=fast)
    elif what == "smollm2":
        from bench_rollout import load

        model, tok, smol_prompts = load("smollm2")
        stok = FixedLengthTokenizer(tok, model.config.vocab_size + 7)

        def f():
            sample(model, stok, smol_prompts, 4, max_new_tokens=16, generator=gen)
    elif what == "mc":
        import numpy as np

        from grpolab.simulate import zero_variance_mc

        # cProfile cannot see inside numpy's Generator methods, so split by hand first
        rng = np.random.default_rng(0)
        c0 = time.process_time()
        k = rng.binomial(16, 0.5, size=1_000_000)
        c1 = time.process_time()
        hits = (k == 0) | (k == 16)
        float(hits.mean())
        c2 = time.process_time()
        print(f"mc split: Generator.binomial {1e3 * (c1 - c0):.1f} ms, "
              f"constant-group test and mean {1e3 * (c2 - c1):.1f} ms (10^6 groups, G=16)")

        def f():
            zero_variance_mc(0.5, 16, n_groups=1_000_000)
    else:
        print(f"error: unknown target {what!r}", file=sys.stderr)
        return 2
    n = 3 if what == "smollm2" else 20
    for _ in range(1 if what == "smollm2" else 3):
        f()
    c0 = time.process_time()
    for _ in range(n):
        f()
    ms = 1e3 * (time.process_time() - c0) / n
    print(f"{what}: {ms:.1f} ms CPU per call without the profiler")
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for _ in range(n):
        f()
    prof.disable()
    report(prof, n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
