"""Memory: peak resident memory (RSS) of the ``cpu-quick`` G sweep.

The sweep runs as a child process (``grpolab lab sweep --preset cpu-quick --out <tmp>``);
a sampler thread polls the RSS of the child and all its descendants every 50 ms with
psutil and keeps the largest sum (the "tree peak"). The kernel's own high-water mark of
the largest single process (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) is recorded too.

Side by side, in alternation (A, B, A, B, ...):
- ``floor``: a process that imports torch, transformers and grpolab, builds the tiny model
  and samples one batch: the memory any PyTorch GRPO run pays before it trains;
- ``sweep``: the cpu-quick sweep through the CLI (``--quick``: the same preset through
  :func:`grpolab.labs.sweep.sweep.run_sweep` shrunk to 2 steps, G ∈ {2, 4}, one seed, a 10-step warm
  start and 32 training prompts: the same code path in about 20 seconds).

The figure compared is the largest process's ``ru_maxrss``. The tree sum counts pages
shared between processes once per process, and a child between fork and exec (every
``git`` call grpolab makes to record its commit) reports its parent's whole RSS, so a poll
that lands then counts the sweep twice; it is recorded in ``extra`` only.

Ratio = baseline peak ÷ grpolab peak (> 1: grpolab uses less).

    python benchmarks/bench_memory.py            # the full cpu-quick sweep (minutes)
    python benchmarks/bench_memory.py --quick    # a few steps
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Row, finish, median, parser, print_row  # noqa: E402

BENCH = "memory"
MIB = 2**20

FLOOR = """
import torch
torch.set_num_threads({threads})
import transformers
import grpolab.grpo.loop  # noqa: F401  (the lab's modules: rollout, grpo, tasks)
from grpolab.models.tiny_llama import build_tiny_model
from grpolab.grpo.rollout import sample
model, tok = build_tiny_model(seed=0)
sample(model, tok, ["12+34="] * 8, 8, max_new_tokens=6)
"""

QUICK_SWEEP = """
import sys
import torch
torch.set_num_threads({threads})
from dataclasses import replace
from grpolab.labs.sweep.presets import get_preset
from grpolab.grpo.config import apply_overrides
from grpolab.labs.sweep.sweep import run_sweep
p = get_preset({preset!r}, steps=2, group_sizes=[2, 4], seeds=[0])
kw = dict(p.config.task_kwargs, n_train=200, n_eval=40)
cfg = apply_overrides(p.config, task_kwargs=kw, max_train_prompts=32,
                      warmstart=replace(p.config.warmstart, steps=10, task_kwargs=kw))
p = replace(p, config=cfg, noise_batches=2)
run_sweep(p, sys.argv[1], progress=False, plots=False, log=lambda *a, **k: None)
"""


def peak_rss(cmd: list[str], env: dict, poll: float = 0.05, timeout: float | None = None
             ) -> tuple[float, float, float, int, str]:
    """Run ``cmd``; return (tree peak MiB, largest-process peak MiB, seconds, rc, output tail)."""
    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    peak = [0]
    stop = threading.Event()

    def watch():
        try:
            root = psutil.Process(proc.pid)
        except psutil.NoSuchProcess:
            return
        while not stop.is_set():
            total = 0
            try:
                for p in [root, *root.children(recursive=True)]:
                    try:
                        total += p.memory_info().rss
                    except psutil.NoSuchProcess:
                        pass
            except psutil.NoSuchProcess:
                break
            peak[0] = max(peak[0], total)
            stop.wait(poll)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    finally:
        stop.set()
        th.join()
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    log.seek(0)
    tail = log.read()[-3000:]
    log.close()
    # ru_maxrss of children is a running max: it only says something new when it grew.
    largest = after / 1024 if after > before else float("nan")
    return peak[0] / MIB, largest, seconds, rc, tail


def main(argv=None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--preset", default="cpu-quick")
    p.add_argument("--sweep-args", default="", help="extra `grpolab lab sweep` arguments")
    args = p.parse_args(argv)
    reps = args.reps or 1
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               TOKENIZERS_PARALLELISM="false")
    grpolab = [sys.executable, "-m", "grpolab"]
    extra = shlex.split(args.sweep_args)
    tmp = tempfile.mkdtemp(prefix="grpolab-bench-mem-")
    sides = {"floor": lambda out: [sys.executable, "-c", FLOOR.format(threads=args.threads)],
             "sweep": lambda out: [*grpolab, "lab", "sweep", "--preset", args.preset, "--out", out,
                                   "--quiet", *extra]}
    if args.quick:
        sides["sweep"] = lambda out: [sys.executable, "-c", QUICK_SWEEP.format(
            threads=args.threads, preset=args.preset), out]
    peaks: dict[str, list[float]] = {k: [] for k in sides}
    largest: dict[str, list[float]] = {k: [] for k in sides}
    secs: dict[str, list[float]] = {k: [] for k in sides}
    commands: dict[str, str] = {}
    try:
        for r in range(reps):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for name in order:
                out = os.path.join(tmp, f"{name}-{r}")
                cmd = sides[name](out)
                commands[name] = shlex.join(["python" if c == sys.executable else c
                                             for c in cmd]).replace(tmp, "<tmp>")
                if name == "floor":
                    commands[name] = ("python -c <import torch/transformers/grpolab; "
                                      "tiny model; one sample>")
                elif name == "sweep" and args.quick:
                    commands[name] = ("python -c <run_sweep(cpu-quick shrunk: 2 steps, "
                                      "G 2 4, 1 seed)>")
                tree, big, s, rc, tail = peak_rss(cmd, env)
                if rc != 0:
                    raise SystemExit(f"error: {name} exited with {rc}:\n{tail}")
                peaks[name].append(tree)
                largest[name].append(big)
                secs[name].append(s)
                print(f"  {name} round {r + 1}/{reps}: peak {tree:.0f} MiB in {s:.0f} s",
                      flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # The kernel's high-water mark of the largest process is the figure compared: the
    # polled tree sum double-counts. Every `git` call of grpolab.grpo.records runs as a
    # subprocess, and between fork and exec that child reports the parent's whole RSS
    # (measured: a 667 MiB parent's git child read 667 MiB), so a poll that lands then
    # adds the sweep's memory a second time. The tree sum stays in `extra`.
    sweep, floor = median(largest["sweep"]), median(largest["floor"])
    if not (sweep == sweep and floor == floor):  # ru_maxrss unavailable: fall back to polls
        sweep, floor = median(peaks["sweep"]), median(peaks["floor"])
    rows = [Row(case=f"{args.preset} sweep{' (quick)' if args.quick else ''} vs import floor",
                ours_label=commands["sweep"], baseline_label=commands["floor"],
                ours=sweep, baseline=floor, unit="MiB peak RSS (largest process)",
                ratio=floor / sweep, reps=reps,
                extra={"ours_seconds": median(secs["sweep"]),
                       "ours_tree_peak_mib": median(peaks["sweep"]),
                       "baseline_tree_peak_mib": median(peaks["floor"]),
                       "ours_largest_process_mib": median(largest["sweep"]),
                       "baseline_largest_process_mib": median(largest["floor"])})]
    for row in rows:
        print_row(BENCH, row)
    notes = ["Peak RSS of the largest process (the kernel's ru_maxrss). The whole process "
             "tree, polled every 50 ms with psutil, is in `extra`; it double-counts, because "
             "a child between fork and exec (grpolab's `git` calls) reports its parent's RSS.",
             "Ratio = baseline peak / grpolab peak: below 1 against the import floor by "
             "construction; it shows how much of the peak is the fixed cost of the libraries."]
    return finish(BENCH, rows, args, notes,
                  settings={"preset": args.preset, "extra_args": extra, "reps": reps,
                            "commands": commands})


if __name__ == "__main__":
    raise SystemExit(main())
