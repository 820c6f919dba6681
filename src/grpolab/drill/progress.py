"""Spaced review for ``grpolab drill``: a small JSON progress file with Leitner boxes.

Every drill item (a rubric item id, ``exercise:ID`` or ``quiz:KIND``) sits in a box from 1 to
:data:`BOXES`. A missed item goes back to box 1; an item answered well moves up one box. An
item in box b is due again 2^(b−1) sessions after it was last asked, so missed items come
back every session and well-known ones rarely.

The file lives under the user's data directory (``$XDG_DATA_HOME/grpolab/`` or
``~/.local/share/grpolab/``) unless a path is given. A session holds it exclusively
(:meth:`Progress.session`: an ``flock`` on a lock file beside it, opened without following
symlinks, :mod:`grpolab._locks`), so a second drill on the same file stops at once with a
one-line error naming the first one's pid instead of overwriting its answers. Why refuse
rather than merge: a session plans its items from the file as it was when it started, so
two interleaved sessions would ask the same items, count two sessions as one and decide
boxes from stale state; there is no merge that keeps the Leitner schedule right.

The file is written atomically after each answered item (a temporary file in the same
folder, fsync, then ``os.replace``: :func:`grpolab._files.write_atomic`), so killing the
drill at any moment, or a full disk, leaves either the previous or the new complete file.
It is read through the checked reader (:func:`grpolab._files.read_json`: a regular file of
at most :data:`MAX_BYTES`, bounded depth and integers) and checked against
:data:`SCHEMA`; a file that is not a valid progress file raises :class:`ProgressError`
(one line naming the file and the field) and is never overwritten.

Derived in: book/interview/04-one-page-sheet.md (what the drill reviews).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from grpolab._files import CorruptFileError, Field, check, env_folder, read_json, write_atomic
from grpolab._locks import LOCK_NAME, exclusive_lock

__all__ = ["BOXES", "FORMAT", "MAX_BYTES", "SCHEMA", "Progress", "ProgressError",
           "default_path"]

FORMAT = "grpolab-drill-progress"
VERSION = 1
BOXES = 5
FILE_NAME = "drill-progress.json"
#: Largest progress file read (a file of every item, asked a million times, is ~100 KiB).
MAX_BYTES = 16 * 2**20
#: Most sessions and items a progress file may record.
MAX_SESSIONS = 10**9
MAX_ITEMS = 100_000

#: What a progress file must hold; unknown fields are refused with the nearest known one.
SCHEMA = Field("object", fields={
    "format": Field("str", choices=(FORMAT,)),
    "version": Field("int", choices=(VERSION,)),
    "sessions": Field("int", 0, MAX_SESSIONS),
    "items": Field("map", max_items=MAX_ITEMS, items=Field("object", fields={
        "box": Field("int", 1, BOXES),
        "asked": Field("int", 0, MAX_SESSIONS, required=False),
        "passed": Field("int", 0, MAX_SESSIONS, required=False),
        "last_passed": Field("bool", required=False),
        "last_score": Field("real", 0, 1, required=False),
        "last_session": Field("int", 0, MAX_SESSIONS, required=False),
        "last_seen": Field("str", required=False, max_items=64),
    })),
})
_HINT = "it was left untouched; fix or remove it, or choose another with --progress"


class ProgressError(ValueError):
    """The progress file cannot be used (corrupt, foreign, unreadable); it is left untouched."""


def default_path() -> Path:
    """``$XDG_DATA_HOME/grpolab/drill-progress.json``, else ``~/.local/share/grpolab/...``.

    An ``XDG_DATA_HOME`` that names a file is refused naming the variable; a relative one
    is ignored, as the XDG Base Directory specification says ("If an implementation
    encounters a relative path in any of these variables it should consider the path
    invalid and ignore it"): it would put the file wherever the command happens to run."""
    value = os.environ.get("XDG_DATA_HOME", "")
    base = (env_folder("XDG_DATA_HOME") if os.path.isabs(value) else None) or Path(
        os.path.expanduser("~")) / ".local" / "share"
    return Path(base) / "grpolab" / FILE_NAME


def _check_consistent(path: Path, doc: dict) -> None:
    """Values that each fit the schema but cannot all be true, refused before the file is
    used or rewritten (a rewrite would make the impossible history look real): more
    passes than times asked, an item last asked in a session after the last one counted
    (a session from the future)."""
    sessions = doc["sessions"]
    for key, rec in doc["items"].items():
        asked, passed = rec.get("asked"), rec.get("passed")
        if asked is not None and passed is not None and passed > asked:
            raise ProgressError(f"progress file {path}: item {key!r} was passed {passed} times "
                                f"but asked only {asked}, which cannot be; {_HINT}")
        last = rec.get("last_session")
        if last is not None and last > sessions:
            raise ProgressError(f"progress file {path}: item {key!r} was last asked in session "
                                f"{last}, but the file counts only {sessions} session(s) (a "
                                f"session from the future); {_HINT}")
        if asked == 0 and (passed or last or "last_passed" in rec):
            raise ProgressError(f"progress file {path}: item {key!r} was never asked but has "
                                f"a last answer; {_HINT}")


def _lock_name(path: Path) -> str:
    """The lock file beside a progress file: ``.grpolab.lock.<name>``."""
    return f"{LOCK_NAME}.{path.name}"


@dataclass
class Progress:
    """The review state: how many sessions ran, and each item's box and history."""

    path: Path | None
    sessions: int = 0
    items: dict[str, dict] = field(default_factory=dict)

    # -- reading ----------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike | None) -> Progress:
        """Read ``path`` (None: an in-memory progress that is never saved).

        A missing file is a fresh start. Anything else that is not a progress file of this
        format raises :class:`ProgressError` naming the file and the field, and the file
        is not touched. Reading does not lock: :meth:`session` does.
        """
        if path is None:
            return cls(None)
        p = Path(path)
        try:
            doc = read_json(p, "a grpolab drill progress file", expect=None, remedy=_HINT,
                            max_bytes=MAX_BYTES)
        except FileNotFoundError:
            return cls(p)
        except CorruptFileError as exc:
            raise ProgressError(f"progress file {exc}") from None
        except OSError as exc:
            raise ProgressError(f"cannot read progress file {p}: {exc.strerror}") from None
        # The two checks a user meets most often come first, in plain words.
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ProgressError(f"{p} is not a grpolab drill progress file (no \"format\": "
                                f"\"{FORMAT}\"); {_HINT}")
        if doc.get("version") != VERSION or type(doc.get("version")) is not int:
            raise ProgressError(f"progress file {p} has version {doc.get('version')!r}; this "
                                f"grpolab reads version {VERSION}; {_HINT}")
        items = doc.get("items")
        for key, rec in (items.items() if isinstance(items, dict) else ()):
            box = rec.get("box") if isinstance(rec, dict) else None
            if type(box) is not int or not 1 <= box <= BOXES:
                raise ProgressError(f"progress file {p}: item {key!r} has no valid box "
                                    f"(1-{BOXES}); {_HINT}")
        try:
            check(doc, SCHEMA, p, remedy=_HINT)
        except CorruptFileError as exc:
            raise ProgressError(f"progress file {exc}") from None
        _check_consistent(p, doc)
        return cls(p, doc["sessions"], doc["items"])

    @classmethod
    @contextlib.contextmanager
    def session(cls, path: str | os.PathLike | None):
        """Hold the progress file ``path`` exclusively, load it, and yield the Progress.

        Another process holding it (a drill in another terminal) is a
        :class:`grpolab._locks.LockError` at once, naming its pid; nothing is read or
        written then. The folder is created if missing (the lock file lives beside the
        progress file). ``path=None`` yields an in-memory progress and locks nothing.
        """
        if path is None:
            yield cls(None)
            return
        p = Path(path)
        if p.is_dir():
            raise ProgressError(f"progress file {p} is a directory; pass a file path with "
                                "--progress")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ProgressError(f"cannot create the folder of progress file {p}: "
                                f"{exc.strerror}") from None
        with exclusive_lock(p.parent, _lock_name(p), subject=f"progress file {p}",
                            holder="another grpolab drill",
                            remedy="finish or quit that session first, or pass another "
                            "--progress (or --no-progress)"):
            yield cls.load(p)

    # -- the schedule -----------------------------------------------------------------------
    def box(self, item_id: str) -> int:
        """The item's Leitner box (1 for an item never asked)."""
        return int(self.items.get(item_id, {}).get("box", 1))

    def is_due(self, item_id: str, session: int | None = None) -> bool:
        """Due in session ``session`` (default: the current one): new, or its interval passed."""
        rec = self.items.get(item_id)
        if rec is None:
            return True
        now = self.sessions if session is None else session
        return now - int(rec.get("last_session", 0)) >= 2 ** (int(rec["box"]) - 1)

    def was_missed(self, item_id: str) -> bool:
        """Asked before and missed the last time."""
        rec = self.items.get(item_id)
        return bool(rec) and not rec.get("last_passed", True)

    # -- writing ----------------------------------------------------------------------------
    def start_session(self) -> int:
        """Count a new session and return its number (saved with the first answered item)."""
        self.sessions += 1
        return self.sessions

    def record(self, item_id: str, passed: bool, score: float) -> None:
        """Move the item between boxes: up one if passed, back to box 1 if missed."""
        rec = self.items.get(item_id, {"box": 1, "asked": 0, "passed": 0})
        rec["box"] = min(BOXES, int(rec["box"]) + 1) if passed else 1
        rec["asked"] = int(rec.get("asked", 0)) + 1
        rec["passed"] = int(rec.get("passed", 0)) + int(bool(passed))
        rec["last_passed"] = bool(passed)
        rec["last_score"] = round(float(score), 4)
        rec["last_session"] = self.sessions
        rec["last_seen"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.items[item_id] = rec

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "sessions": self.sessions,
                "items": self.items}

    def save(self) -> None:
        """Write atomically, under the file's lock (re-entrant: a session already holds it).

        An OSError (a full disk, a read-only folder) leaves the previous file as it was and
        no temporary file behind; it is raised for the caller to report in one line.
        """
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n"
        with exclusive_lock(self.path.parent, _lock_name(self.path),
                            subject=f"progress file {self.path}", holder="another grpolab drill",
                            remedy="finish or quit that session first"):
            write_atomic(self.path, text)
