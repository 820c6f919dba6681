"""Shared plumbing for the benchmark scripts: interleaved timing, ratio lines, JSON output.

Every benchmark compares grpolab ("ours") with what a user would otherwise run ("baseline")
side by side in one process: the two are called alternately (A, B, A, B, ...) after a
warm-up, and we report the median of each, so a noisy neighbour on a shared machine slows
both sides rather than one. The ratio is always written so that > 1 means grpolab is
better (baseline time / our time, baseline rate / ... inverted for rates).

Each script prints one ``RATIO`` line per comparison::

    RATIO theory/zero_variance_probability grid=1000x1000: ours=0.0121 s baseline=0.412 s
          ratio=34.0 target="ours < 0.1 s" PASS

(on one line) and, with ``--json PATH``, writes the same rows for ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STARTED = time.time()


@dataclass
class Row:
    """One side-by-side comparison.

    ``ours``/``baseline`` are medians in ``unit`` (seconds unless said otherwise);
    ``ratio`` is oriented so that > 1 favours grpolab. ``status`` is PASS or MISS against
    ``target`` when there is a target, INFO otherwise.
    """

    case: str
    ours_label: str
    baseline_label: str
    ours: float
    baseline: float
    ratio: float
    unit: str = "s"
    target: str = ""
    status: str = "INFO"
    reps: int = 0
    extra: dict = field(default_factory=dict)
    cpu_ratio: float | None = None

    def __post_init__(self):
        # The same ratio from process CPU time (extra["ours_cpu"], extra["baseline_cpu"], in
        # the row's unit). With one torch thread, CPU time is what an idle core would take,
        # so on a shared machine it is the steadier figure; PASS/MISS uses it when present.
        oc, bc = self.extra.get("ours_cpu"), self.extra.get("baseline_cpu")
        if self.cpu_ratio is None and oc and bc:
            self.cpu_ratio = bc / oc if self.unit == "s" else oc / bc


@dataclass
class Timings:
    """Wall-clock and process CPU seconds of each repetition of one side."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def wall_median(self) -> float:
        return median(self.wall)

    @property
    def cpu_median(self) -> float:
        return median(self.cpu)


def interleaved(fns: dict[str, Callable[[], object]], reps: int, warmup: int = 1,
                inner: int = 1) -> dict[str, Timings]:
    """Time each callable ``reps`` times, alternating between them (A, B, A, B, ...).

    ``warmup`` untimed calls of each come first (allocator, caches, lazy imports). The
    order within a round alternates too (A B, B A, ...) so neither side always runs
    right after the other. Returns wall-clock and CPU seconds per callable: on a shared
    machine the CPU time shows what an idle core would take (single-threaded code).
    ``inner`` calls make one timed repetition (its time divided by ``inner``): a call of a
    few milliseconds, timed alone, carries the machine's jitter in every sample.
    """
    names = list(fns)
    for _ in range(warmup):
        for n in names:
            fns[n]()
    times = {n: Timings() for n in names}
    for r in range(reps):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(inner):
                fns[n]()
            times[n].wall.append((time.perf_counter() - t0) / inner)
            times[n].cpu.append((time.process_time() - c0) / inner)
    return times


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def status(ok: bool | None) -> str:
    return "INFO" if ok is None else ("PASS" if ok else "MISS")


def fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return str(x)
    return f"{x:.4g}"


def print_row(bench: str, row: Row) -> None:
    cpu = ""
    if "ours_cpu" in row.extra and "baseline_cpu" in row.extra:
        cpu = (f" (cpu: ours={fmt(row.extra['ours_cpu'])} "
               f"baseline={fmt(row.extra['baseline_cpu'])})")
    cr = f" cpu_ratio={fmt(row.cpu_ratio)}" if row.cpu_ratio is not None else ""
    print(f"RATIO {bench}/{row.case}: ours={fmt(row.ours)} {row.unit} "
          f"baseline={fmt(row.baseline)} {row.unit} ratio={fmt(row.ratio)}{cr} "
          f"target=\"{row.target or '-'}\" {row.status}{cpu}", flush=True)


def machine() -> dict:
    """CPU model, cores, RAM, Python/torch/transformers versions and the git commit."""
    info: dict = {"platform": platform.platform(), "python": platform.python_version(),
                  "cores": os.cpu_count()}
    try:
        info["load_average_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        info["load_average_1m"] = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        info["cpu"] = platform.processor() or "unknown"
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            kb = int(f.readline().split()[1])
        info["ram_gib"] = round(kb / 2**20, 1)
    except (OSError, ValueError, IndexError):
        info["ram_gib"] = None
    for mod in ("numpy", "torch", "transformers", "trl"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a missing optional package is just "absent"
            info[mod] = None
    try:
        import grpolab

        info["grpolab"] = grpolab.__version__
    except ImportError:
        info["grpolab"] = None
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
            check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["git_commit"] = "unknown"
    return info


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes and few repetitions: checks the script, not the speed")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions per side")
    p.add_argument("--threads", type=int, default=1,
                   help="torch/BLAS threads for both sides (default 1: the machine is shared)")
    p.add_argument("--json", default=None, help="also write the rows to this JSON file")
    return p


def set_threads(n: int) -> None:
    """Pin the intra-op thread count for both sides of a comparison."""
    if n < 1:
        raise SystemExit(f"error: --threads must be >= 1, got {n}")
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:
        pass


def finish(bench: str, rows: list[Row], args: argparse.Namespace, notes: list[str] | None = None,
           settings: dict | None = None) -> int:
    """Write ``--json`` and return the exit code (0: it ran; a MISS is not an error)."""
    for r in rows:
        if not (math.isfinite(r.ratio) and r.ratio > 0):
            print(f"warning: {bench}/{r.case} has a non-finite ratio", file=sys.stderr)
    if args.json:
        cmd = "python benchmarks/" + os.path.basename(sys.argv[0]) + (
            " " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
        cmd = cmd.replace(" --json " + args.json, "")
        try:
            load = round(os.getloadavg()[0], 2)
        except OSError:
            load = None
        payload = {"benchmark": bench, "command": cmd, "quick": bool(args.quick),
                   "load_average_1m_at_end": load,
                   "threads": args.threads, "settings": settings or {},
                   "rows": [asdict(r) for r in rows], "notes": notes or [],
                   "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "seconds": round(time.time() - STARTED, 1)}
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1)
        os.replace(tmp, args.json)
    return 0
