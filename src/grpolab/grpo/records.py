"""What every result file records, and how it is written: provenance and atomic JSON.

A result that cannot say which code, which versions and which machine made it cannot be
reproduced, so every ``summary.json`` carries :func:`provenance`. Files are written through
a temporary name and renamed (:func:`write_json_atomic`), so a reader, or a run killed half
way, sees the old file or the new one, never a torn one.
"""

from __future__ import annotations

import json
import os
import subprocess

__all__ = ["git_commit", "device_name", "provenance", "write_json_atomic"]


def git_commit() -> str:
    """``git rev-parse HEAD`` of the grpolab checkout, with ``-dirty`` if files were changed
    since that commit (so a result made from uncommitted code says so), or ``"unknown"``."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip()
        if not head:
            return "unknown"
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                 "src"], cwd=here, capture_output=True, text=True, timeout=5,
                                check=True).stdout
        return head + ("-dirty" if status.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def device_name(device) -> str:
    """A human-readable device description for result files."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({os.cpu_count()} cores visible, {torch.get_num_threads()} torch threads)"


def provenance(device) -> dict:
    """grpolab version, git commit, torch/transformers versions and the device."""
    import torch
    import transformers

    from grpolab import __version__

    return {"grpolab_version": __version__, "git_commit": git_commit(),
            "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "device": device_name(device)}


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    """Write JSON to ``path.tmp-PID`` then rename: readers see the old file or the new one."""
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)
