"""The run store: what every result file records, how it is written and read back.

- :func:`provenance`: the one dict of version, commit, library versions and device that every
  result file carries.
- :class:`RunLog`: a run's ``log.jsonl`` and ``summary.json``, written the same way by both
  backends.
- :func:`finished_run`: the one check of "is this run finished, with the same config and warm
  start?", naming the difference when it is not.
- :func:`cached_census`: the one cache of pass-rate censuses, which records its inputs.
- atomic writers (JSON, NPY, CSV, text) and checked readers (below).

A result that cannot say which code, which versions and which machine made it cannot be
reproduced, so every ``summary.json`` carries :func:`provenance`. Files are written through
a temporary name and renamed (:func:`write_json_atomic`, :func:`write_npy_atomic`), so a
reader, or a run killed half way, sees the old file or the new one, never a torn one.

Files written by other means (a disk that filled up, an editor, a copy cut short) are read
through :func:`read_json`, :func:`read_jsonl` and :func:`read_npy`, which are the core's one
checked reader (:mod:`grpolab._files`: regular files of bounded size, bounded nesting and
integers, finite numbers): a damaged file is a :class:`CorruptFileError` (a ``ValueError``,
so the CLI prints one line and exits 2) that names the file, says what is wrong with it and
what to do. A write that fails (a full disk) is one ``OSError`` naming the file, and the old
file is left as it was.

One writer per output folder: :func:`output_lock` (the core's :func:`grpolab._locks.
exclusive_lock`: no symlink is followed, nothing is written outside the folder).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import subprocess
import time

from grpolab import _files
from grpolab._files import CorruptFileError
from grpolab._locks import LOCK_NAME, LockError, exclusive_lock, held_above

__all__ = ["git_commit", "device_name", "provenance", "output_lock", "write_json_atomic",
           "write_npy_atomic", "write_csv_atomic", "write_text_atomic", "RunLog",
           "finished_run", "config_differences", "cached_census", "RUN_SUMMARY", "LOG_RECORD",
           "check_log_records",
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
    """grpolab version, git commit, torch/transformers versions, the device and torch's thread
    count: what every result file records about how it was made."""
    import torch
    import transformers

    from grpolab import __version__

    return {"grpolab_version": __version__, "git_commit": git_commit(),
            "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "device": device_name(device), "torch_threads": torch.get_num_threads()}


def _first_missing(path: str) -> str | None:
    """The outermost folder of ``path`` that does not exist yet (None if ``path`` exists)."""
    full, missing = os.path.abspath(path), None
    while not os.path.exists(full):
        missing, parent = full, os.path.dirname(full)
        if parent == full:
            break
        full = parent
    return missing


def _undo_folder(out: str, made: str) -> None:
    """Remove the folders :func:`output_lock` made, if they hold nothing but its lock file
    (a command refused after taking the lock leaves no trace)."""
    try:
        if os.listdir(out) != [LOCK_NAME]:
            return
        os.unlink(os.path.join(out, LOCK_NAME))
        folder = os.path.abspath(out)
        while True:
            os.rmdir(folder)  # an OSError (not empty) stops the walk
            if folder == made:
                return
            folder = os.path.dirname(folder)
    except OSError:
        return


@contextlib.contextmanager
def output_lock(out: str | os.PathLike):
    """Hold ``out`` exclusively while a run writes into it (created if missing).

    Why: two runners on the same folder interleave their writes and tear each other's logs
    (two ``grpolab remedies``, two ``lab train`` on one ``--out``). Every writer takes this
    lock *before any other work*, so the second one stops within a second with a one-line
    error naming the first one's pid, before it writes anything. The lock is an ``flock``
    on ``out/.grpolab.lock`` (:func:`grpolab._locks.exclusive_lock`: opened without
    following a symlink, one-link regular files only, the pid written after locking); the
    OS drops it when the holder exits, however it exits, so a killed run leaves no stale
    lock. Re-entrant within a process. A command that is refused (any exception) after
    taking the lock on a folder it created removes that folder again if it holds nothing
    but the lock file, so a refused command still writes nothing.
    """
    out = os.fspath(out)
    above = held_above(out)
    if above is not None:  # a run folder of a running sweep, say: its writer owns it
        folder, pid = above
        raise LockError(f"{out} lies inside {folder}, which is in use by another grpolab run "
                        f"(pid {pid if pid is not None else 'unknown'}); wait for it to "
                        "finish, or pass another output folder", pid)
    from grpolab._paths import check_path_length

    check_path_length(out, "the output folder")  # a path too long: before any folder is made
    made = _first_missing(out)
    os.makedirs(out, exist_ok=True)
    with exclusive_lock(out, LOCK_NAME, holder="another grpolab run",
                        remedy="wait for it to finish, or pass another output folder"):
        try:
            yield
        except BaseException:
            if made is not None:  # still holding the lock: nobody else is inside
                _undo_folder(out, made)
            raise


def _write(path: str, data: bytes | str) -> None:
    """:func:`grpolab._files.write_atomic`, with a failure (a full disk) as one OSError
    that names the file; the old file is left as it was."""
    try:
        _files.write_atomic(path, data)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OSError(exc.errno, f"could not write {path} ({reason}); the file is unchanged: "
                      "free space and rerun the same command to resume") from None


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    """JSON (indent 1) through a temporary file beside ``path``, fsync, rename: readers, a
    kill or a full disk see the old file or the new one. A NaN or ±Infinity is refused
    (:func:`grpolab._files.json_text`), naming the file and the field."""
    _write(os.fspath(path), _files.json_text(obj, path, indent=1))


def write_npy_atomic(path: str | os.PathLike, array) -> None:
    """``numpy.save``'s bytes, written atomically (as :func:`write_json_atomic`)."""
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    _write(os.fspath(path), buf.getvalue())


def write_csv_atomic(path: str | os.PathLike, rows: list[dict]) -> None:
    """Rows of dicts as CSV (columns in first-seen order), written atomically."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
    _write(os.fspath(path), buf.getvalue())


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Text written atomically (as :func:`write_json_atomic`)."""
    _write(os.fspath(path), text)


# ----------------------------------------------------------------------------- a run's log
#: Entries of an evaluation row (grpolab.grpo.measure.evaluate), kept as the run's latest.
EVAL_KEYS = ("eval_greedy_accuracy", "eval_sampled_accuracy",
             "eval_greedy_accuracy_by_difficulty", "eval_sampled_accuracy_by_difficulty")


def _open_new_log(path: str):
    """A fresh ``log.jsonl`` opened for writing: the old log (a regular file) is unlinked
    and a new file created with ``O_EXCL | O_NOFOLLOW``, so a ``log.jsonl`` planted as a
    symbolic link or a hard link never truncates the file it points at, and a device or a
    FIFO is refused (:func:`grpolab._files.check_writable_target`), left as it was."""
    _files.check_writable_target(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    return os.fdopen(os.open(path, flags, 0o666), "w")


class RunLog:
    """One run's ``log.jsonl`` (a JSON line per step, written as it happens) and its
    ``summary.json`` (written last and atomically: its presence marks a finished run).

    Both backends write through it, so their files have the same names and the summary the
    same fields. The summary is computed from the logged rows themselves (gradient norms,
    completion lengths, KL, the first and latest evaluation), never from a second copy.
    ``write`` on a non-main process (``is_main=False``, several GPUs) only keeps the rows.
    """

    def __init__(self, out_dir: str | os.PathLike, is_main: bool = True):
        self.out_dir, self.is_main = os.fspath(out_dir), is_main
        self.start = time.time()
        self.rows: list[dict] = []
        # a restarted run starts its log afresh
        self._path = os.path.join(self.out_dir, "log.jsonl")
        self._file = _open_new_log(self._path) if is_main else None

    def elapsed(self) -> float:
        """Seconds since the log was opened (just before the first evaluation)."""
        return time.time() - self.start

    def write(self, rec: dict) -> None:
        self.rows.append(rec)
        if self._file is not None:
            try:
                self._file.write(json.dumps(rec) + "\n")
                self._file.flush()
            except OSError as exc:  # a full disk: one line; the run has no summary, so a
                # rerun trains it again and keeps the finished ones
                raise OSError(exc.errno, f"could not write {self._path} ({exc.strerror or exc})"
                              "; free space and rerun the same command (this run starts "
                              "again, finished runs are kept)") from None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _evals(self) -> tuple[dict, dict]:
        evals = [r for r in self.rows if "eval_greedy_accuracy" in r]
        return evals[0], evals[-1]

    def summary(self, config, *, device, source: str, monitor_summary: dict,
                extra: dict | None = None) -> dict:
        """The run's summary from its rows; written to ``summary.json`` on the main process."""
        self.close()
        import numpy as np

        steps = [r for r in self.rows if r.get("step", 0) > 0]
        updates = [r for r in steps if "grad_norm" in r]
        grad_norms = [r["grad_norm"] for r in updates]
        lengths = [r["completion_length_mean"] for r in steps if "completion_length_mean" in r]
        drift = [r["kl_to_warm_start"] for r in steps if r.get("kl_to_warm_start") is not None]
        tokens = [r["tokens"] for r in steps if "tokens" in r]
        initial, last = self._evals()
        final = updates[-1] if updates else {}
        summary = {
            "G": config.num_generations, "seed": config.seed,
            "prompts_per_step": config.prompts_per_step, "backend": config.backend,
            "steps": steps[-1]["step"] if steps else 0,
            "updates": len(updates), "steps_without_update": len(steps) - len(updates),
            "initial_accuracy": initial["eval_greedy_accuracy"],
            "final_accuracy": last["eval_greedy_accuracy"],
            "initial_sampled_accuracy": initial["eval_sampled_accuracy"],
            "final_sampled_accuracy": last["eval_sampled_accuracy"],
            "initial_accuracy_by_difficulty": initial["eval_greedy_accuracy_by_difficulty"],
            "final_accuracy_by_difficulty": last["eval_greedy_accuracy_by_difficulty"],
            "initial_sampled_accuracy_by_difficulty":
                initial["eval_sampled_accuracy_by_difficulty"],
            "final_sampled_accuracy_by_difficulty": last["eval_sampled_accuracy_by_difficulty"],
            **monitor_summary,
            "grad_norm_mean": float(np.mean(grad_norms)) if grad_norms else None,
            "grad_norm_std": float(np.std(grad_norms)) if grad_norms else None,
            "final_entropy": final.get("entropy"), "final_kl": final.get("kl"),
            "final_kl_to_warm_start": drift[-1] if drift else None,
            "initial_completion_length": float(np.mean(lengths[:5])) if lengths else None,
            "final_completion_length": float(np.mean(lengths[-5:])) if lengths else None,
            "completions": steps[-1]["completions"] if steps else 0,
            "tokens": tokens[-1] if tokens else 0, "seconds": self.elapsed(),
            **warmstart_record(config, source), "policy": source,
            "config": config.to_dict(), **provenance(device), **(extra or {}),
        }
        summary["informative_per_1k_completions"] = (
            1000 * summary["informative_groups_used"] / max(summary["completions"], 1))
        if self.is_main:
            write_json_atomic(os.path.join(self.out_dir, "summary.json"), summary)
        return summary


def warmstart_record(config, source: str) -> dict:
    """The warm start's cache key and weight checksum (tiny model only), so a fresh clone that
    trains the warm start again can check it got the same weights."""
    if config.model != "tiny":
        return {}
    from grpolab.grpo.warmstart import weights_checksum

    return {"warmstart_key": config.warmstart_key, "warmstart_sha256": weights_checksum(source)}


# ----------------------------------------------------------------------------- finished runs
_F = _files.Field


def _opt(kind: str, lo=None, hi=None, **kw) -> _files.Field:
    return _F(kind, lo, hi, required=False, nullable=True, **kw)


_ACCURACY = _F("real", 0, 1, required=False)
_BY_LEVEL = _F("map", required=False, items=_F("real", 0, 1))
#: What a run's ``summary.json`` must hold, type by type, for the readers (sweep aggregates,
#: remedy results, ``lab train``'s report): only ``config`` is required, the others are
#: checked when present, and other keys are allowed (a remedy adds its own).
RUN_SUMMARY = _F("object", extra_keys=True, fields={
    "config": _F("object", extra_keys=True, fields={}),
    "G": _F("int", 1, required=False), "seed": _F("int", 0, required=False),
    "steps": _F("int", 0, required=False), "updates": _F("int", 0, required=False),
    "completions": _F("int", 0, required=False), "seconds": _F("real", 0, required=False),
    "initial_accuracy": _ACCURACY, "final_accuracy": _ACCURACY,
    "initial_sampled_accuracy": _ACCURACY, "final_sampled_accuracy": _ACCURACY,
    "initial_accuracy_by_difficulty": _BY_LEVEL, "final_accuracy_by_difficulty": _BY_LEVEL,
    "zero_variance_observed": _opt("real", 0, 1), "zero_variance_predicted": _opt("real", 0, 1),
    "zero_variance_abs_gap": _opt("real", 0, 1),
    "informative_per_1k_completions": _opt("real", 0),
    "informative_groups_used": _opt("int", 0), "groups_used": _opt("int", 0),
    "grad_norm_mean": _opt("real", 0), "final_completion_length": _opt("real", 0),
    "warmstart_key": _opt("str", max_items=64), "warmstart_sha256": _opt("str", max_items=64),
})
#: One line of a run's ``log.jsonl``, for the same readers (other keys allowed).
LOG_RECORD = _F("object", extra_keys=True, fields={
    "step": _F("int", 0), "completions": _F("int", 0, required=False),
    "eval_greedy_accuracy": _ACCURACY, "eval_sampled_accuracy": _ACCURACY,
    "eval_greedy_accuracy_by_difficulty": _BY_LEVEL,
    "eval_sampled_accuracy_by_difficulty": _BY_LEVEL,
    "zero_variance_predicted_plugin": _opt("real", 0, 1),
})


def check_log_records(path: str, records: list[dict], remedy: str | None = None) -> list[dict]:
    """Every record of a run log checked against :data:`LOG_RECORD` (a CorruptFileError
    naming the line and the field)."""
    for n, rec in enumerate(records, 1):
        try:
            _files.check(rec, LOG_RECORD, path, remedy=remedy)
        except CorruptFileError as exc:
            raise CorruptFileError(path, f"line {n}: {exc.problem}", exc.remedy) from None
    return records


def _normalised(d: dict) -> dict:
    """``d`` as it reads back from JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(d, default=str))


def config_differences(stored: dict, current: dict, limit: int = 3) -> str:
    """``"field old -> new, ..."`` for the fields (up to ``limit``) where two configs differ."""
    stored, current = _normalised(stored), _normalised(current)
    keys = [k for k in dict.fromkeys([*current, *stored]) if stored.get(k) != current.get(k)]
    return ", ".join(f"{k} {stored.get(k)!r} -> {current.get(k)!r}" for k in keys[:limit])


def finished_run(run_dir: str | os.PathLike, config, *, check_log: bool = False,
                 what: str = "a run summary") -> dict | None:
    """The summary of the finished run in ``run_dir`` if it is a run of ``config``; None when
    the run has not finished (no ``summary.json``).

    Refused (a ValueError naming the folder and the difference): a finished run of another
    config, or one trained from another warm start (another warm-start config, torch version,
    thread count or model code). ``check_log`` also requires ``log.jsonl`` to end with the
    final evaluation the summary reports (a log cut short is a :class:`CorruptFileError`).
    ``config`` is a GRPOConfig or the plain dict of a config.
    """
    run_dir = os.fspath(run_dir)
    path = os.path.join(run_dir, "summary.json")
    if not os.path.isfile(path):
        return None
    remedy = f"delete the folder {run_dir} and rerun (only that run is redone)"
    summary = read_json(path, what, keys=("config",), remedy=remedy, schema=RUN_SUMMARY)
    current = config if isinstance(config, dict) else config.to_dict()
    diff = config_differences(summary["config"], current)
    if diff:
        raise ValueError(f"{run_dir} holds a finished run of another config ({diff}); use "
                         "another --out, or delete that folder to train it again")
    warm = None if isinstance(config, dict) else (
        config.warmstart_key if config.model == "tiny" else None)
    if warm and summary.get("warmstart_key") not in (None, warm):
        raise ValueError(f"{run_dir} was trained from warm start {summary['warmstart_key']}, "
                         f"this command's is {warm} (another warm-start config, --threads, "
                         "torch version or model code); rerun with the same settings, or use "
                         "another --out")
    if check_log:
        log_path = os.path.join(run_dir, "log.jsonl")
        if not os.path.isfile(log_path):
            raise CorruptFileError(log_path, "is missing but the run's summary.json is there",
                                   remedy)
        records = check_log_records(log_path, read_jsonl(log_path, "a run log", remedy=remedy),
                                    remedy)
        steps = summary.get("steps")
        if not any(r.get("step") == steps and "eval_greedy_accuracy" in r for r in records):
            raise CorruptFileError(log_path, f"ends at step {records[-1].get('step')} without "
                                   f"the final evaluation of step {steps} that summary.json "
                                   "reports (the log was cut short)", remedy)
        summary["_log"] = records
    return summary


# ----------------------------------------------------------------------------- census cache
def cached_census(stem: str | os.PathLike, inputs: dict, make, *, samples: int,
                  rows: int, frozen: bool = False, log=None):
    """A pass-rate census stored as ``stem.npy`` with its inputs in ``stem.json``.

    The file on disk is used when it was made from the same ``inputs`` and holds ``rows``
    prompts × at least ``samples`` samples; otherwise ``make(samples)`` measures it again and
    both files are rewritten. ``frozen=True`` (finished runs were seeded from the file on
    disk) refuses to replace a census made from other inputs, naming the difference.
    ``log(message)`` is told when a file on disk is replaced.
    """
    stem = os.fspath(stem)
    path, meta_path = stem + ".npy", stem + ".json"
    inputs = _normalised(inputs)
    if os.path.isfile(path):
        census = read_npy(path, "a pass-rate census", ndim=2)
        meta = (read_json(meta_path, "a census record") if os.path.isfile(meta_path) else {})
        same = meta.get("inputs") == inputs
        if same and census.shape[0] == rows and census.shape[1] >= samples:
            return census
        if frozen:
            why = (config_differences(meta.get("inputs", {}), inputs) if not same
                   else f"{census.shape[1]} samples per prompt, {samples} needed")
            raise ValueError(f"{path} was made from other inputs than this command's ({why}), "
                             "and finished runs were seeded from it; use another --out")
        if log is not None:
            log(f"{path}: made from other inputs or too narrow; rebuilding it")
    census = make(samples)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_npy_atomic(path, census)
    write_json_atomic(meta_path, {"inputs": inputs, "shape": list(census.shape)})
    return census


def census_stem(cache_dir: str | os.PathLike, inputs: dict) -> str:
    """A cache file stem named by a hash of ``inputs`` (for caches shared by many configs)."""
    blob = json.dumps(_normalised(inputs), sort_keys=True)
    return os.path.join(os.fspath(cache_dir),
                        f"census-{hashlib.sha256(blob.encode()).hexdigest()[:12]}")


def read_json(path: str | os.PathLike, what: str = "a JSON file", *, expect: type = dict,
              keys: tuple[str, ...] = (), remedy: str | None = None,
              schema: _files.Field | None = None):
    """The JSON value in ``path``, which must be ``expect`` (dict by default) holding ``keys``
    (and matching ``schema``, a :class:`grpolab._files.Field`).

    ``what`` says what the file should be ("a sweep summary"); a missing file is a
    FileNotFoundError, anything unreadable a :class:`CorruptFileError` that names the file
    (:func:`grpolab._files.read_json`: a regular file of at most 256 MiB, nested at most 64
    levels, integers within int64, finite numbers).
    """
    return _files.read_json(path, what, expect=expect, keys=keys, schema=schema,
                            remedy=remedy or None)


def read_jsonl(path: str | os.PathLike, what: str = "a log", *,
               remedy: str | None = None) -> list[dict]:
    """Every record of a JSON-lines file; a torn or foreign line is a CorruptFileError."""
    return _files.read_jsonl(path, what, remedy=remedy or None)


def read_npy(path: str | os.PathLike, what: str = "an array", *, ndim: int | None = None,
             remedy: str | None = None):
    """A ``.npy`` array (never pickled objects) of at most 1 GiB whose header agrees with
    its size; damaged bytes are a CorruptFileError."""
    return _files.read_npy(path, what, ndim=ndim, remedy=remedy or None, max_bytes=2**30)
