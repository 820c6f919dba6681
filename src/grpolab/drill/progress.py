"""Spaced review for ``grpolab drill``: a small JSON progress file with Leitner boxes.

Every drill item (a rubric item id, ``exercise:ID`` or ``quiz:KIND``) sits in a box from 1 to
:data:`BOXES`. A missed item goes back to box 1; an item answered well moves up one box. An
item in box b is due again 2^(b−1) sessions after it was last asked, so missed items come
back every session and well-known ones rarely.

The file lives under the user's data directory (``$XDG_DATA_HOME/grpolab/`` or
``~/.local/share/grpolab/``) unless a path is given. It is written atomically after each
answered item (a temporary file in the same folder, fsync, then ``os.replace``), so killing
the drill at any moment leaves either the previous or the new complete file. A file that is
not valid JSON, or is JSON of another kind, raises :class:`ProgressError` (one line) and is
never overwritten.

Derived in: book/interview/04-one-page-sheet.md (what the drill reviews).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["BOXES", "FORMAT", "Progress", "ProgressError", "default_path"]

FORMAT = "grpolab-drill-progress"
VERSION = 1
BOXES = 5
FILE_NAME = "drill-progress.json"


class ProgressError(ValueError):
    """The progress file cannot be used (corrupt, foreign, unreadable); it is left untouched."""


def default_path() -> Path:
    """``$XDG_DATA_HOME/grpolab/drill-progress.json``, else ``~/.local/share/grpolab/...``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return Path(base) / "grpolab" / FILE_NAME


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
        format raises :class:`ProgressError` and the file is not touched.
        """
        if path is None:
            return cls(None)
        p = Path(path)
        if p.is_dir():
            raise ProgressError(f"progress file {p} is a directory; pass a file path with "
                                "--progress")
        try:
            raw = p.read_bytes()
        except FileNotFoundError:
            return cls(p)
        except OSError as exc:
            raise ProgressError(f"cannot read progress file {p}: {exc.strerror}") from None
        hint = "it was left untouched; fix or remove it, or choose another with --progress"
        try:
            doc = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ProgressError(f"progress file {p} is not UTF-8 text; {hint}") from None
        except json.JSONDecodeError as exc:
            raise ProgressError(f"progress file {p} is not valid JSON ({exc.msg} at line "
                                f"{exc.lineno}, column {exc.colno}); {hint}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ProgressError(f"{p} is not a grpolab drill progress file (no \"format\": "
                                f"\"{FORMAT}\"); {hint}")
        if doc.get("version") != VERSION:
            raise ProgressError(f"progress file {p} has version {doc.get('version')!r}; this "
                                f"grpolab reads version {VERSION}; {hint}")
        items, sessions = doc.get("items"), doc.get("sessions")
        if (not isinstance(items, dict) or isinstance(sessions, bool)
                or not isinstance(sessions, int) or sessions < 0):
            raise ProgressError(f"progress file {p} is malformed ('items' or 'sessions'); {hint}")
        for key, rec in items.items():
            box = rec.get("box") if isinstance(rec, dict) else None
            if isinstance(box, bool) or not isinstance(box, int) or not 1 <= box <= BOXES:
                raise ProgressError(f"progress file {p}: item {key!r} has no valid box "
                                    f"(1-{BOXES}); {hint}")
        return cls(p, sessions, items)

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
        """Write atomically: a temporary file beside the target, fsync, then os.replace."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                   dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.to_json(), fh, indent=1, sort_keys=True)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        try:  # make the rename itself durable
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
