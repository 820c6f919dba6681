"""The distance to the limit: a step's achieved FLOP/s against this machine's single-thread
``torch.matmul`` throughput at the step's own matrix shapes.

How it is measured:

1. One call of the step runs under :class:`MatmulLog`, a ``TorchDispatchMode`` that records
   every matrix product the step dispatches (``mm``, ``addmm``, ``bmm``, ``baddbmm``:
   the linear layers, attention, the head, forward and backward) with its shapes. Their
   FLOPs (2·m·k·n per product) are the step's arithmetic; elementwise work is not counted.
2. Each distinct shape is then timed alone with ``torch.matmul`` on fresh contiguous
   float32 operands (one thread, median of repeated calls, CPU time). The sum over the
   step's products of those times is what the matrix products alone would take at the
   machine's measured speed for exactly those shapes.
3. ``fraction`` = that time ÷ the step's measured CPU time = achieved FLOP/s ÷ matmul FLOP/s.
   1 would mean the step does nothing but its matrix products, at full speed.

    python benchmarks/matmul_limit.py    # the lab's step (B=8, G=8, 6 tokens), printed
"""

from __future__ import annotations

import collections
import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
_PRODUCTS = {_aten.mm.default: "mm", _aten.addmm.default: "mm", _aten.bmm.default: "bmm",
             _aten.baddbmm.default: "bmm"}


class MatmulLog(TorchDispatchMode):
    """Counts the matrix products dispatched inside the ``with`` block, by shape."""

    def __init__(self):
        super().__init__()
        self.counts: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kind = _PRODUCTS.get(func)
        if kind is not None:
            a, b = (args[0], args[1]) if func in (_aten.mm.default, _aten.bmm.default) \
                else (args[1], args[2])
            self.counts[(kind, tuple(a.shape), tuple(b.shape))] += 1
        return func(*args, **(kwargs or {}))


def flops(kind: str, a: tuple, b: tuple) -> int:
    if kind == "mm":
        (m, k), n = a, b[1]
        return 2 * m * k * n
    bsz, m, k = a
    return 2 * bsz * m * k * b[2]


def matmul_seconds(kind: str, a: tuple, b: tuple, min_time: float = 0.02) -> float:
    """Median CPU seconds of one ``torch.matmul`` at these shapes (contiguous float32)."""
    x, y = torch.randn(*a), torch.randn(*b)
    for _ in range(3):
        torch.matmul(x, y)
    reps = 1
    while True:  # enough repetitions per sample that the clock's resolution does not matter
        c0 = time.process_time()
        for _ in range(reps):
            torch.matmul(x, y)
        if time.process_time() - c0 >= min_time / 5 or reps >= 1 << 14:
            break
        reps *= 4
    samples = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(reps):
            torch.matmul(x, y)
        samples.append((time.process_time() - c0) / reps)
    return statistics.median(samples)


def distance_to_limit(step, step_cpu_seconds: float) -> dict:
    """Run ``step()`` once under :class:`MatmulLog` and compare with ``torch.matmul``.

    Returns the step's matmul FLOPs, its achieved FLOP/s (FLOPs ÷ ``step_cpu_seconds``),
    the single-thread matmul FLOP/s at the same shapes, and their ratio ``fraction``.
    """
    log = MatmulLog()
    with log:
        step()
    total = sum(n * flops(*key) for key, n in log.counts.items())
    limit_s = sum(n * matmul_seconds(*key) for key, n in log.counts.items())
    return {"matmul_flops": total, "products": sum(log.counts.values()),
            "distinct_shapes": len(log.counts), "step_cpu_s": step_cpu_seconds,
            "matmul_only_cpu_s": limit_s,
            "achieved_flops_per_s": total / step_cpu_seconds,
            "matmul_flops_per_s": total / limit_s, "fraction": limit_s / step_cpu_seconds,
            "torch_threads": torch.get_num_threads()}


def main() -> int:
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_rollout import TINY_PROMPTS, FixedLengthTokenizer

    from grpolab.grpo.loss import compute_advantages, grpo_update
    from grpolab.grpo.rollout import sample
    from grpolab.models.tiny_llama import build_tiny_model

    torch.set_num_threads(1)
    B, G, T = 8, 8, 6
    model, tok = build_tiny_model(seed=0)
    ftok = FixedLengthTokenizer(tok, model.config.vocab_size + 7)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.0)
    gen = torch.Generator().manual_seed(0)
    prompts = (TINY_PROMPTS * B)[:B]

    def step():
        r = sample(model, ftok, prompts, G, max_new_tokens=T, generator=gen)
        adv = compute_advantages([float(i % 3 == 0) for i in range(B * G)], G, "group")
        grpo_update(model, opt, r, adv, max_completion_length=T)

    times = []
    for i in range(13):
        c0 = time.process_time()
        step()
        if i >= 3:
            times.append(time.process_time() - c0)
    out = distance_to_limit(step, statistics.median(times))
    for k, v in out.items():
        print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
