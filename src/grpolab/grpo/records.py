"""What every result file records, and how it is written: provenance and atomic JSON.

A result that cannot say which code, which versions and which machine made it cannot be
reproduced, so every ``summary.json`` carries :func:`provenance`. Files are written through
a temporary name and renamed (:func:`write_json_atomic`, :func:`write_npy_atomic`), so a
reader, or a run killed half way, sees the old file or the new one, never a torn one.

Files written by other means (a disk that filled up, an editor, a copy cut short) are read
through :func:`read_json`, :func:`read_jsonl` and :func:`read_npy`: a damaged file is a
:class:`CorruptFileError` (a ``ValueError``, so the CLI prints one line and exits 2) that
names the file, says what is wrong with it and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess

__all__ = ["git_commit", "device_name", "provenance", "output_lock", "write_json_atomic",
           "write_npy_atomic",
           "CorruptFileError", "read_json", "read_jsonl", "read_npy"]


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


_HELD: dict[str, list] = {}  # real path → [open lock file, depth]: re-entrant per process


@contextlib.contextmanager
def output_lock(out: str | os.PathLike):
    """Hold ``out`` exclusively while a run writes into it.

    Why: two runners resuming the same folder interleave their writes and tear each other's
    logs (seen with two ``grpolab remedies`` on one ``--out``). The second one now stops at
    once with a one-line error naming the first one's pid, before it writes anything. The
    lock is an ``flock`` on ``out/.grpolab.lock``: the OS drops it when the holder exits,
    however it exits, so a killed run leaves no stale lock. Re-entrant within a process.
    Where ``fcntl`` is missing (Windows) there is no lock.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX machines have it
        yield
        return
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    key = os.path.realpath(out)
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    path = os.path.join(out, ".grpolab.lock")
    fh = open(path, "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip() or "unknown"
        fh.close()
        raise ValueError(f"{out} is in use by another grpolab run (pid {holder}); wait for "
                         "it to finish, or pass another output folder") from None
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    _HELD[key] = [fh, 1]
    try:
        yield
    finally:
        _HELD.pop(key, None)
        fh.close()  # closing the file releases the flock


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    """Write JSON to ``path.tmp-PID`` then rename: readers see the old file or the new one."""
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def write_npy_atomic(path: str | os.PathLike, array) -> None:
    """``numpy.save`` to a temporary name, then rename (as :func:`write_json_atomic`)."""
    import numpy as np

    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}.npy"
    np.save(tmp, array)
    os.replace(tmp, path)


class CorruptFileError(ValueError):
    """A saved file that cannot be read back; the message names it and says what to do."""

    def __init__(self, path, problem: str, remedy: str | None = None):
        self.path = os.fspath(path)
        remedy = remedy or f"delete {self.path} and rerun the command that wrote it"
        super().__init__(f"{self.path}: {problem}; {remedy}")


def read_json(path: str | os.PathLike, what: str = "a JSON file", *, expect: type = dict,
              keys: tuple[str, ...] = (), remedy: str | None = None):
    """The JSON value in ``path``, which must be ``expect`` (dict by default) holding ``keys``.

    ``what`` says what the file should be ("a sweep summary"); a missing file is a
    FileNotFoundError, anything unreadable a :class:`CorruptFileError` that names the file.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise
    except UnicodeDecodeError:
        raise CorruptFileError(path, f"not text, so not {what}", remedy) from None
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated")
        how = "truncated" if cut else "not valid JSON"
        raise CorruptFileError(path, f"{how} ({exc.msg}: line {exc.lineno}, column "
                               f"{exc.colno}), so not {what}", remedy) from None
    if expect is not None and not isinstance(value, expect):
        raise CorruptFileError(path, f"holds a JSON {type(value).__name__}, not {what}", remedy)
    missing = [k for k in keys if k not in value]
    if missing:
        raise CorruptFileError(path, f"is not {what} (no {', '.join(repr(k) for k in missing)})",
                               remedy)
    return value


def read_jsonl(path: str | os.PathLike, what: str = "a log", *,
               remedy: str | None = None) -> list[dict]:
    """Every record of a JSON-lines file; a torn or foreign line is a CorruptFileError."""
    path = os.fspath(path)
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise CorruptFileError(path, f"line {n} is not JSON (a torn write?), so this is "
                                       f"not {what}", remedy) from None
            if not isinstance(rec, dict):
                raise CorruptFileError(path, f"line {n} is not a JSON object, so this is not "
                                       f"{what}", remedy)
            records.append(rec)
    if not records:
        raise CorruptFileError(path, f"is empty, so not {what}", remedy)
    return records


def read_npy(path: str | os.PathLike, what: str = "an array", *, ndim: int | None = None,
             remedy: str | None = None):
    """A ``.npy`` array (never pickled objects); damaged bytes are a CorruptFileError."""
    import numpy as np

    path = os.fspath(path)
    with open(path, "rb") as f:  # a missing file: FileNotFoundError
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise CorruptFileError(path, f"has no NumPy header (random or foreign bytes), so it is "
                               f"not {what}", remedy)
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        why = ("it holds pickled objects" if "pickle" in str(exc)
               else "truncated or damaged: " + str(exc).split(".")[0][:80])
        raise CorruptFileError(path, f"is not a readable array ({why}), so not {what}",
                               remedy) from None
    if ndim is not None and array.ndim != ndim:
        raise CorruptFileError(path, f"holds a {array.ndim}-d array, not {what}", remedy)
    return array
