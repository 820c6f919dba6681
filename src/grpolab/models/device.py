"""Which device a run uses: checked before any work, resolved when it starts.

``check_device`` tells a CPU-only torch build apart without importing torch (seconds saved
on every refused command); ``resolve_device`` turns ``"auto"`` into CUDA when present.
"""

from __future__ import annotations

import os

__all__ = ["check_device", "resolve_device", "is_main_process"]


def _torch_build_has_gpu() -> bool | None:
    """Whether the installed torch was built with CUDA or ROCm, read from ``torch/version.py``
    without importing torch (seconds): True, False, or None when that cannot be told."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError):
        return None
    found = {}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target in ("cuda", "hip") and isinstance(value, ast.Constant):
            found[target] = value.value
    if set(found) != {"cuda", "hip"}:
        return None
    return found["cuda"] is not None or found["hip"] is not None


def check_device(device, flag: str = "--device") -> None:
    """Raise a ValueError naming ``flag`` unless ``device`` (None, auto, cpu, cuda, cuda:N)
    can be used here. A CPU-only torch build is told apart without importing torch."""
    if device is None or device in ("auto", "cpu"):
        return
    text = str(device)
    if not (text == "cuda" or (text.startswith("cuda:") and text[5:].isdigit())):
        raise ValueError(f"{flag} must be auto, cpu, cuda or cuda:N, got {text!r}")
    if _torch_build_has_gpu() is False:
        raise ValueError(f"{flag} {text}: this torch is a CPU-only build (no CUDA); use "
                         f"{flag} cpu or auto")
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"{flag} {text}: no CUDA device is visible here; use {flag} cpu or auto")
    index = int(text[5:]) if ":" in text else 0
    if index >= torch.cuda.device_count():
        raise ValueError(f"{flag} {text}: only {torch.cuda.device_count()} CUDA device(s) here")


def resolve_device(device=None):
    """``None``/``"auto"`` → CUDA when available, else CPU; otherwise ``torch.device(device)``."""
    import torch

    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(device, torch.device):
        return device
    check_device(device)
    return torch.device(device)


def is_main_process() -> bool:
    """True unless this process is a non-main rank of a distributed launch (``accelerate
    launch``, ``torchrun``), which set ``RANK`` with ``WORLD_SIZE``. Only the main process
    locks an output folder and writes to it; the others keep their rows in memory.

    ``RANK`` without a ``WORLD_SIZE`` that holds it (left over in a shell, say) is refused
    with one line: trusting it would make a command write with no lock and print nothing.
    """
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None:
        return True
    try:
        r, w = int(rank), int(world) if world is not None else None
    except ValueError:
        r, w = -1, None
    if w is None or not 0 <= r < w:
        raise ValueError(f"RANK={rank!r} is set but WORLD_SIZE={world!r} does not hold it: "
                         "RANK belongs to a distributed launch (accelerate launch, "
                         "torchrun); unset RANK to run on one process")
    return r == 0
